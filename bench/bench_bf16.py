"""Figures of the BFloat16 PE (peak/examples/cgra_pe_bf16.py; design configs/bf16.toml,
32x16, generated in build/bf16) for the closing note (issue 16). One JSON line per figure,
rows appended to bench/results/bf16.csv (bench/benchlib.py; every row carries the core count):

1. ``synth:<target>`` (s): COLD rule synthesis of every BFloat16 IR target of
   :func:`peak.ir.targets` (``float.add sub mul max min lt le gt ge eq from_s16 from_u16
   to_s16 to_u16`` and their constant-operand variants) on the bf16 PE, one
   ``peak.rules.build_table(PE, <fresh temporary directory>, jobs, only=<float keys>)``
   call (nothing cached, no base table to reuse); the value is the table entry's own
   seconds (its worker's time). ``params``: status (found / none / timeout), method, the
   rule's cost and ``proved`` (the found rule proved again here by
   :func:`peak.rules.rule.verify_rule`, independently of the synthesiser). Then
   ``synth_total`` (wall seconds of the call) and ``synth_found`` (targets with a rule).
2. ``rules_warm`` (s): ``cgra rules --pe peak.examples.cgra_pe_bf16:PE --out <rules dir>
   --jobs N`` run twice in fresh processes on the shared cache (default build/rules: the
   first run makes it warm); the value is the second run's wall time (issue 16 acceptance:
   under 5 s); ``params`` the first run's time and what the second run did per target
   (``cached`` = re-verified on load, nothing synthesised).
3. ``cells_tile_bf16`` / ``cells_tile_int`` / ``cells_tile_ratio`` and the same for the PE
   core alone (``cells_core_*``): yosys cells (:func:`dse.area.tile_cells`, the DSE
   area proxy: ``synth -flatten -noabc; abc -fast; stat``) of the PE tile
   (``Tile_PECore_PE_<hash>_*``: core + connection/switch boxes) and of the PE core
   (``PE_<hash>``) of build/bf16 and of the integer PE's build/default (the same 32x16
   array with peak/examples/cgra_pe.py), both measured in this run into a fresh temporary
   area cache; ``params`` the NAND2-equivalent areas and whether each design's RTL is of
   the current spec (its module hash = the spec hash).
4. ``<app>:pes``, ``:mems``, ``:cycles_stream``, ``:cycles_ideal``, ``:first_output_cycle``
   for gaussian_bf16, brighten_bf16 and nlm_bf16 on build/bf16: ``cgra run <app> --design
   build/bf16 --out <temporary dir>`` (64x64 camera image, seed 0; RTL simulation and both
   golden models) and its run_report.json; ``<app>:halide_max_ulp`` the measured largest
   distance in bf16 ulps from Halide's output (``halide_ulp``; params: tolerance, differing
   pixels), for every app whose report has it (nlm_bf16).

Run: ``.venv/bin/python bench/bench_bf16.py [--jobs 2] [--rules-dir build/rules]
[--skip synth,warm,cells,apps]`` (about 5-10 minutes on 2 cores; the cold synthesis is most
of it).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchlib  # noqa: E402  (bench/benchlib.py: JSON lines and results CSV)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CGRA = str(Path(sys.executable).parent / "cgra")
BF16_PE = "peak.examples.cgra_pe_bf16:PE"
APPS = ("gaussian_bf16", "brighten_bf16", "nlm_bf16")


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p)


def emit(figure: str, value, unit: str, **params) -> None:
    """One figure, printed and appended to bench/results/bf16.csv at once."""
    benchlib.save_rows("bf16", [benchlib.row("bf16", figure, value, unit, params)])


def cold_synthesis(jobs: int) -> None:
    """Figure 1: every BFloat16 target synthesised into an empty rules directory."""
    from peak.examples.cgra_pe_bf16 import PE
    from peak.ir import FLOAT_WIDTH, targets
    from peak.rules.rule import verify_rule
    from peak.rules.table import build_table

    keys = [t.key for t in targets(FLOAT_WIDTH, floats=True) if t.op.startswith("float.")]
    with tempfile.TemporaryDirectory(prefix="bench_bf16_rules_") as tmp:
        t0 = time.perf_counter()
        table = build_table(PE, tmp, jobs=jobs, only=keys)
        wall = time.perf_counter() - t0
    found = 0
    for e in table.entries:
        proved = None
        if e.rule is not None:
            proved = verify_rule(e.rule, PE).ok
            found += 1
        emit(f"synth:{e.target}", round(e.seconds, 3), "s", status=e.status,
             method=e.method, action=e.action, cost=getattr(e.rule, "cost", None),
             proved=proved, jobs=jobs, pe=BF16_PE)
    emit("synth_total", round(wall, 2), "s", targets=len(keys), found=found, jobs=jobs,
         pe=BF16_PE, note="one build_table call, fresh temporary directory")
    emit("synth_found", found, "targets", targets=len(keys), pe=BF16_PE)


def rules_warm(rules_dir: Path, jobs: int) -> None:
    """Figure 2: `cgra rules` on the bf16 PE, twice on the shared cache; the second run."""
    cmd = [CGRA, "rules", "--pe", BF16_PE, "--out", str(rules_dir), "--jobs", str(jobs)]
    walls = []
    for _ in range(2):
        t = time.perf_counter()
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        walls.append(time.perf_counter() - t)
        if r.returncode != 0:
            sys.exit(f"cgra rules failed:\n{r.stderr[-3000:]}")
    timing = json.loads((rules_dir / "PE.timing.json").read_text())
    actions: dict[str, int] = {}
    for e in timing["entries"]:
        actions[e["action"]] = actions.get(e["action"], 0) + 1
    emit("rules_warm", round(walls[1], 2), "s", first_run_s=round(walls[0], 2),
         actions=actions, targets=len(timing["entries"]), jobs=jobs, under_5s=walls[1] < 5,
         command=" ".join([".venv/bin/cgra"] + cmd[1:]).replace(f"{ROOT}/", ""))


def _pe_modules(design: Path, spec) -> dict:
    """The PE core and PE tile modules of ``design``'s rtl/ and whether they are of ``spec``."""
    from peak import spec_hash
    doc = json.loads((design / "design.json").read_text())
    mods = doc["rtl"]["modules"]
    core = next(m for m in mods if m.startswith("PE_"))
    tile = next(m for m in mods if m.startswith("Tile_PECore_PE_"))
    return {"core": core, "tile": tile, "current": core == f"PE_{spec_hash(spec)[:8]}",
            "pe": doc["params"]["pe"]}


def cells(bf16: Path, integer: Path) -> None:
    """Figure 3: yosys cells of the bf16 and the integer PE (tile and core), same run."""
    from dse.area import tile_cells
    from peak.examples.cgra_pe import PE as IntPE
    from peak.examples.cgra_pe_bf16 import PE as FloatPE

    mb, mi = _pe_modules(bf16, FloatPE), _pe_modules(integer, IntPE)
    with tempfile.TemporaryDirectory(prefix="bench_bf16_area_") as tmp:
        for part in ("tile", "core"):
            rb = tile_cells(bf16, mb[part], Path(tmp))
            ri = tile_cells(integer, mi[part], Path(tmp))
            emit(f"cells_{part}_bf16", rb["cells"], "cells", module=mb[part],
                 nand2=rb["nand2"], yosys_s=rb["seconds"], design=_rel(bf16),
                 current=mb["current"], pe=mb["pe"])
            emit(f"cells_{part}_int", ri["cells"], "cells", module=mi[part],
                 nand2=ri["nand2"], yosys_s=ri["seconds"], design=_rel(integer),
                 current=mi["current"], pe=mi["pe"])
            emit(f"cells_{part}_ratio", round(rb["cells"] / ri["cells"], 3), "x",
                 nand2_ratio=round(rb["nand2"] / ri["nand2"], 3), bf16=rb["cells"],
                 int=ri["cells"])


def apps(design: Path, names: list[str]) -> None:
    """Figure 4: each bf16 app mapped, simulated and checked on ``design``."""
    with tempfile.TemporaryDirectory(prefix="bench_bf16_apps_") as tmp:
        for app in names:
            out = Path(tmp) / app
            t = time.perf_counter()
            r = subprocess.run([CGRA, "run", app, "--design", str(design), "--out", str(out)],
                               cwd=ROOT, capture_output=True, text=True)
            wall = time.perf_counter() - t
            if r.returncode != 0:
                sys.exit(f"cgra run {app} failed:\n{r.stderr[-3000:]}")
            rep = json.loads((out / "run_report.json").read_text())
            used = rep["resources"]["used"]
            common = {"design": _rel(design), "image": rep["image"], "size": rep["size"],
                      "seed": rep["seed"], "match": rep["match"]}
            emit(f"{app}:pes", used.get("p", 0), "PEs", run_s=round(wall, 1), **common)
            emit(f"{app}:mems", used.get("m", 0), "MEMs", **common)
            emit(f"{app}:cycles_stream", rep["cycles"]["stream"], "cycles", **common)
            emit(f"{app}:cycles_ideal", rep["cycles"]["ideal_stream"], "cycles", **common)
            emit(f"{app}:first_output_cycle", rep["latency"]["first_output_cycle"], "cycles",
                 ideal=rep["latency"]["ideal_first_output_cycle"], **common)
            for out_name, u in (rep.get("halide_ulp") or {}).items():
                emit(f"{app}:halide_max_ulp", u["max_ulp"], "ulp", output=out_name,
                     tolerance_ulp=u["tolerance_ulp"], differing_pixels=u["differing_pixels"],
                     pixels=u["pixels"], **common)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2, help="rule synthesis workers (default 2)")
    ap.add_argument("--rules-dir", default="build/rules",
                    help="shared rules directory of the warm `cgra rules` figure")
    ap.add_argument("--design", default="build/bf16", help="the bf16 design")
    ap.add_argument("--int-design", default="build/default",
                    help="a design of the integer PE (peak.examples.cgra_pe:PE)")
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--skip", default="", help="comma list of: synth, warm, cells, apps")
    a = ap.parse_args()
    skip = set(filter(None, a.skip.split(",")))
    design, int_design = ROOT / a.design, ROOT / a.int_design
    if "synth" not in skip:
        cold_synthesis(a.jobs)
    if "warm" not in skip:
        rules_warm(ROOT / a.rules_dir, a.jobs)
    if "cells" not in skip:
        cells(design, int_design)
    if "apps" not in skip:
        apps(design, a.apps.split(","))


if __name__ == "__main__":
    main()
