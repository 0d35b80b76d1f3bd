"""Design variants of the architect's specs (issue 39): per variant the cold `cgra rtl` time,
the yosys cell count of the array, and for gaussian, unsharp (8x8) and harris (the same
variant at 32x16: harris needs 80 PEs) the PE / MEM / register counts, the Fmax of the
design's timing model (pipelined as `cgra run` does by default: toward the model's floor)
and whether the run is bit-exact.

Variants (``--variants``, configs/<name>.toml): ``small`` (the stock 8x8), ``small_dp4096``
and ``small_wide8`` (the architect's MEM specs configs/mem_dp4096.py, mem_wide8.py),
``small_diagonal`` (the interconnect build function configs/ic_diagonal.py), ``small_sum``
(the Sum-type PE peak/examples/cgra_pe_sum.py), ``small_L2`` / ``small_L4`` (long wires).
The 32x16 form is the same TOML with ``width = 32, height = 16``. Designs are generated into
``build/spec_variants/<variant>_<array>`` (rules from ``build/rules``; rule synthesis is
timed by bench_rules).
``rtl_seconds`` runs `cgra rtl --no-rules` in a process of its own on a copy of the TOML
(in configs/, so its relative paths hold) with the array size set. Cells:
:func:`dse.area.design_area` (yosys ``synth`` per distinct tile, times its count).

Run: ``.venv/bin/python bench/bench_spec_variants.py [--variants small,small_wide8]
[--apps gaussian,unsharp,harris] [--seed 0] [--no-cells] [--rtl-only]`` (state the cores). Appends to
``bench/results/spec_variants.csv``.
"""
from __future__ import annotations

import argparse
import dataclasses
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchlib

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cgra.errors import CgraError  # noqa: E402  (the project root on sys.path first)
from dse.area import design_area  # noqa: E402
from garnet.build import generate  # noqa: E402
from garnet.params import load_toml, validate  # noqa: E402
from mapper.backend.pipeline import PipelineParams  # noqa: E402
from mapper.backend.place import PlaceParams  # noqa: E402
from mapper.flow import run_app  # noqa: E402
from mapper.params import AppParams, FlowParams, RunParams  # noqa: E402
from mapper.stages import read_app  # noqa: E402

VARIANTS = ("small", "small_dp4096", "small_wide8", "small_diagonal", "small_sum",
            "small_L2", "small_L4")
APPS = ("gaussian", "unsharp", "harris")
#: the array of each app (harris: 80 PEs)
ARRAY = {"gaussian": (8, 8), "unsharp": (8, 8), "harris": (32, 16)}


def params_of(variant: str, array: tuple[int, int]):
    p = load_toml(ROOT / "configs" / f"{variant}.toml")
    if (p.width, p.height) != array:
        p = dataclasses.replace(p, width=array[0], height=array[1],
                                name=f"{variant}_{array[0]}x{array[1]}")
        validate(p)
    return p


def design(variant: str, array: tuple[int, int]) -> Path:
    """``build/spec_variants/<variant>_<w>x<h>`` with rules, generated when missing."""
    out = ROOT / "build" / "spec_variants" / f"{variant}_{array[0]}x{array[1]}"
    if not (out / "design.json").is_file():
        generate(params_of(variant, array), out, rules=True, rules_dir=ROOT / "build" / "rules",
                 jobs=2, config_file=f"configs/{variant}.toml")
    return out


def rtl_seconds(variant: str, array: tuple[int, int], tmp: Path) -> float:
    """Seconds of a cold `cgra rtl --no-rules` in a process of its own (fresh output
    directory and build cache, no module cached in memory), the process start included."""
    src = (ROOT / "configs" / f"{variant}.toml").read_text()
    cfg = ROOT / "configs" / f".bench_{variant}_{array[0]}x{array[1]}.toml"
    cfg.write_text(re.sub(r"(?m)^height = .*$", f"height = {array[1]}",
                          re.sub(r"(?m)^width = .*$", f"width = {array[0]}", src)))
    out = tmp / f"{variant}_{array[0]}x{array[1]}_cold"
    try:
        t = time.perf_counter()
        subprocess.run([str(Path(sys.executable).with_name("cgra")), "rtl", "--config",
                        str(cfg), "--out", str(out), "--no-rules"], check=True,
                       capture_output=True, text=True)
        dt = time.perf_counter() - t
    finally:
        cfg.unlink()
        shutil.rmtree(out, ignore_errors=True)
    return round(dt, 2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-cells", action="store_true", help="skip the yosys cell counts")
    ap.add_argument("--rtl-only", action="store_true",
                    help="only the cold `cgra rtl` seconds of each variant at 8x8 and 32x16")
    args = ap.parse_args()

    rows: list[dict] = []
    apps = args.apps.split(",")
    with tempfile.TemporaryDirectory(prefix="bench-spec-variants-") as tmp:
        for variant in args.variants.split(","):
            for array in sorted({ARRAY[a] for a in apps}):
                p = {"variant": variant, "array": f"{array[0]}x{array[1]}"}
                rows.append(benchlib.row("spec_variants", "rtl_seconds",
                                         rtl_seconds(variant, array, Path(tmp)), "s",
                                         {**p, "process": "own", "rules": False}))
                if args.rtl_only:
                    continue
                d = design(variant, array)
                if not args.no_cells:
                    area = design_area(d, ROOT / "build" / "spec_variants" / ".area")
                    rows.append(benchlib.row("spec_variants", "cells", area["cells"], "cells", p))
                for app in (a for a in apps if ARRAY[a] == array):
                    q = {**p, "app": app, "seed": args.seed, "image": "64x64"}
                    out = Path(tmp) / f"{variant}_{app}"
                    try:
                        r = run_app(RunParams(AppParams(app, 64, 64), d, out, flow=FlowParams(
                            place=PlaceParams(seed=args.seed), pipeline=PipelineParams(
                                register_pe_inputs=True, auto_target=True))))
                    except CgraError as exc:
                        rows.append(benchlib.row("spec_variants", "closed", 0, "bool",
                                                 {**q, "error": str(exc)[:200]}))
                        continue
                    rep = r.report
                    counts = read_app(out)["counts"]
                    for fig in ("pe", "mem", "reg"):
                        rows.append(benchlib.row("spec_variants", f"{fig}_count",
                                                     counts[fig], "tiles" if fig != "reg"
                                                     else "registers", q))
                    rows.append(benchlib.row("spec_variants", "fmax",
                                             rep["timing"]["fmax_mhz"], "MHz", q))
                    rows.append(benchlib.row("spec_variants", "match",
                                             int(rep["match"] == {"numpy": True,
                                                                  "halide": True}), "bool", q))
    benchlib.save_rows("spec_variants", rows)


if __name__ == "__main__":
    main()
