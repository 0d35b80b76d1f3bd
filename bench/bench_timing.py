"""The measured timing model (issue 40): figures for the closing note, measured side by side
in one run.

1. **Measured vs published, per class (ps)**: the 32x16 design of ``configs/default.toml``
   built twice, ``timing = "measured"`` and ``timing = "cascade-table"``
   (Cascade's published 12 nm table); every class of the published model with its measured
   figure and the ratio; each multi-op rule's (``pattern.*``) measured figure against the
   PE's worst path (what the STA gave a PE covering several ops before it used the rule's
   figure).
2. **Model generation time**: ``measure_design`` on the default design with an empty cache
   (cold), again (cached), again with only the cores cached (``<cache>/core/``: what an
   edit of the interconnect alone costs), and a no-change ``cgra rtl`` of the measured
   design.
3. **Fmax of the README apps on both models**: gaussian and unsharp on the 8x8
   (``configs/small.toml``), harris on the 32x16, each with the default pipelining and with
   ``--fmax 900`` (the README's target): the Fmax reached (a target the model cannot reach
   is reported as the shortfall: the critical path the model cannot pipeline).
4. **Error vs SDF simulation** (:mod:`garnet.sta.sdf`): the three paths of PE tile (1, 1) of
   the 8x8, model (with its 1 % late derate, ``garnet.sta.measure.DERATE_LATE``) vs failing
   period.
5. **Fmax vs tracks 3-6** (8x8, gaussian): the measured connection box and the app's Fmax on
   each model (the published model's CB is the same at every track count).

6. **Ready-valid and hybrid arrays**: ``configs/small_rv.toml`` (8x8) and
   ``configs/tiny_hybrid.toml`` (5x4, a router per tile) built on both models: the measured
   ready hop beside the data/valid hops, the ready chain through a core, the FIFO site's
   register class and the router's stage against the published figures; model generation
   time cold; gaussian on small_rv and brighten_blur (unroll 2, 16x16, five nets on the
   dynamic layer) on tiny_hybrid, Fmax on both models; the same routed designs pipelined
   with and without the ready chains in the STA (:func:`ready_chains`).

Run: ``.venv/bin/python bench/bench_timing.py`` (about 20 min on 2 cores, cold;
``--only ready-valid`` runs section 6 alone, about 5 min). Rows go to
``bench/results/timing.csv``.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchlib

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from garnet.array import build_interconnect  # noqa: E402
from garnet.build import generate  # noqa: E402
from garnet.params import load_toml  # noqa: E402
from garnet.sta.measure import measure_design  # noqa: E402
from garnet.sta.sdf import validate  # noqa: E402
from mapper.backend.pipeline import (BROADCAST_ON_MISS, PipelineParams,  # noqa: E402
                                     pipeline, unpipelined_timing)
from mapper.collateral import load_collateral  # noqa: E402
from mapper.stages import load_flow  # noqa: E402

RULES = ROOT / "build" / "rules"
CGRA = str(ROOT / ".venv" / "bin" / "cgra")


def build(root: Path, config: str, timing: str, **kw) -> Path:
    params = load_toml(ROOT / "configs" / f"{config}.toml")
    params.timing = timing
    for k, v in kw.items():
        setattr(params, k, v)
    name = f"{config}-{timing}" + "".join(f"-{k}{v}" for k, v in kw.items())
    out = root / name
    generate(params, out, rules=True, rules_dir=RULES, jobs=2)
    return out


def run_app(design: Path, app: str, out: Path, fmax: float | None,
            extra: tuple[str, ...] = ()) -> dict:
    cmd = [CGRA, "run", app, "--design", str(design), "--out", str(out), *extra]
    if fmax:
        cmd += ["--fmax", str(fmax)]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if res.returncode != 0:
        return {"ok": False, "error": (res.stderr or res.stdout).strip().splitlines()[-1]}
    rep = json.loads((out / "pnr_report.json").read_text())
    return {"ok": True, "fmax_mhz": rep["timing"]["fmax_mhz"],
            "period_ps": rep["timing"]["period_ps"], "model": rep["timing"].get("model")}


def ready_valid(root: Path, rows: list[dict]) -> None:
    """Section 6 (module docstring)."""
    for config, app, extra in (("small_rv", "gaussian", ()),
                               ("tiny_hybrid", "brighten_blur",
                                ("--unroll", "2", "--size", "16"))):
        meas = build(root, config, "measured")
        table = build(root, config, "cascade-table")
        ic = build_interconnect(load_toml(ROOT / "configs" / f"{config}.toml"))
        t0 = time.perf_counter()
        measure_design(ic, meas / "rtl", root / f"cold-cache-{config}", meas / "rules", jobs=2)
        cold = time.perf_counter() - t0
        m = json.loads((meas / "timing.json").read_text())
        t = json.loads((table / "timing.json").read_text())
        tm = m["table"]
        p = {"design": f"configs/{config}.toml", "liberty": tm["_measured"]["liberty"],
             "corner": tm["_measured"]["corner"]["name"]}
        rows.append(benchlib.row("timing", "rv model generation cold", round(cold, 2),
                                 "s", {**p, "tiles": len(tm["_measured"]["tiles"])}))
        rows.append(benchlib.row("timing", "rv register class (FIFO site)", {
            "published_ps": t["classes"]["reg"], "measured_ps": m["classes"]["reg"]}, "ps", p))
        for tc, by_w in sorted(tm["ready_hop"].items()):
            for w, ready in sorted(by_w.items()):
                hops = tm["switch_box_hop"][tc][w]
                rows.append(benchlib.row("timing", f"rv hop {tc} {w}", {
                    "ready_hop_ps": ready, "hop_min_ps": min(hops.values()),
                    "hop_max_ps": max(hops.values()),
                    "published_max_ps": max((v for k, v in t["classes"].items()
                                             if k.startswith(f"sb:{tc}:{w}:")), default=None)},
                    "ps", p))
        for tc, v in sorted(tm.get("ready_through_core", {}).items()):
            rows.append(benchlib.row("timing", f"rv ready through core {tc}", v, "ps", p))
        for tc, v in sorted(tm.get("router", {}).items()):
            rows.append(benchlib.row("timing", f"router stage {tc}", v, "ps", p))
        got = {label: run_app(d, app, root / f"rv-{config}-{label}", None, extra)
               for label, d in (("measured", meas), ("cascade-table", table))}
        rows.append(benchlib.row("timing", f"fmax {app} ready-valid", got, "MHz",
                                 {"design": f"configs/{config}.toml", "seed": 0,
                                  "args": list(extra)}))
        rows.append(benchlib.row("timing", f"ready chains {app}",
                                 ready_chains(meas, root / f"rv-{config}-measured"), "ps",
                                 {"design": f"configs/{config}.toml", "seed": 0,
                                  "args": list(extra)}))


def ready_chains(design: Path, run: Path) -> dict:
    """The measured run's routed design pipelined as `cgra run` does (``--fmax`` unset) on
    the measured model and on the same model without its ready figures (the data paths
    alone, what the STA timed before it timed ready chains): each pass's period and
    registers, and the design's STA with no FIFO site enabled, side by side."""
    coll = load_collateral(design)
    flow = load_flow(run, coll)
    data_only = dataclasses.replace(coll, timing=dataclasses.replace(coll.timing, table={
        k: v for k, v in coll.timing.table.items()
        if k not in ("ready_hop", "ready_through_core")}))
    params = PipelineParams(register_pe_inputs=True, auto_target=True,
                            broadcast_on_miss=BROADCAST_ON_MISS)
    out = {}
    for label, c in (("with_ready", coll), ("data_only", data_only)):
        res = pipeline(flow.packed, flow.placement, flow.routing, c, params)
        out[f"passes_{label}"] = [(p.name, round(p.period_ps, 2), p.registers)
                                  for p in res.passes]
        un = unpipelined_timing(flow.packed, flow.placement, flow.routing, c)
        out[f"unpipelined_{label}_ps"] = round(un.period_ps, 2)
        out[f"unpipelined_{label}_starts"] = un.path[0][0] if un.path else ""
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["ready-valid"], help="run one section")
    args = ap.parse_args()
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench-timing-") as tmp:
        root = Path(tmp)
        if args.only == "ready-valid":
            ready_valid(root, rows)
            benchlib.save_rows("timing", rows)
            return
        # 1. per class
        meas = build(root, "default", "measured")
        table = build(root, "default", "cascade-table")
        m = json.loads((meas / "timing.json").read_text())
        t = json.loads((table / "timing.json").read_text())
        p = {"design": "configs/default.toml (32x16)", "liberty": m["table"]["_measured"]["liberty"],
             "corner": m["table"]["_measured"]["corner"]["name"]}
        for key in sorted(t["classes"]):
            if key in m["classes"] and t["classes"][key] > 0:
                rows.append(benchlib.row("timing", f"class {key}", {
                    "published_ps": t["classes"][key], "measured_ps": m["classes"][key],
                    "ratio": round(m["classes"][key] / t["classes"][key], 3)}, "ps", p))
        for op in ("coreir.add", "coreir.mul", "coreir.and", "coreir.ult"):
            if op in m["pe_ops"] and op in t["pe_ops"]:
                rows.append(benchlib.row("timing", f"pe op {op}", {
                    "published_ps": t["pe_ops"][op], "measured_ps": m["pe_ops"][op],
                    "ratio": round(m["pe_ops"][op] / t["pe_ops"][op], 3)}, "ps", p))
        # multi-op rules: each 2-op select pattern's own figure, where a PE covering
        # several ops used to take the PE's worst path (core:pe)
        for op in sorted(o for o in m["pe_ops"] if o.startswith("pattern.")):
            rows.append(benchlib.row("timing", f"pe rule {op}", {
                "measured_ps": m["pe_ops"][op], "worst_core_ps": m["classes"]["core:pe"],
                "ratio": round(m["pe_ops"][op] / m["classes"]["core:pe"], 3)}, "ps", p))
        # 2. generation time
        ic = build_interconnect(load_toml(ROOT / "configs" / "default.toml"))
        cache = root / "cold-cache"
        t0 = time.perf_counter()
        measure_design(ic, meas / "rtl", cache, meas / "rules", jobs=2)
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        measure_design(ic, meas / "rtl", cache, meas / "rules", jobs=2)
        warm = time.perf_counter() - t0
        # the tiles measured again with their cores cached (build/timing/core/ kept): what
        # an edit of the interconnect alone costs
        for entry in cache.glob("*.json"):
            entry.unlink()
        t0 = time.perf_counter()
        measure_design(ic, meas / "rtl", cache, meas / "rules", jobs=2)
        cores_cached = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = load_toml(ROOT / "configs" / "default.toml")
        again.timing = "measured"          # the same parameters: nothing to rebuild
        generate(again, meas, rules=True, rules_dir=RULES, jobs=2)
        nochange = time.perf_counter() - t0
        assert json.loads((meas / "timing.json").read_text())["source"] == "measured"
        gp = {"design": "configs/default.toml (32x16)", "tiles": 3}
        rows.append(benchlib.row("timing", "model generation cold", round(cold, 2), "s", gp))
        rows.append(benchlib.row("timing", "model generation cached", round(warm, 3), "s", gp))
        rows.append(benchlib.row("timing", "model generation, cores cached", {
            "seconds": round(cores_cached, 2), "cold_seconds": round(cold, 2),
            "ratio": round(cores_cached / cold, 3)}, "s", gp))
        rows.append(benchlib.row("timing", "cgra rtl no change (measured)", round(nochange, 2),
                                 "s", gp))
        # 3. README apps on both models
        small_m = build(root, "small", "measured")
        small_t = build(root, "small", "cascade-table")
        for app, dm, dt, where in (("gaussian", small_m, small_t, "8x8"),
                                   ("unsharp", small_m, small_t, "8x8"),
                                   ("harris", meas, table, "32x16")):
            for fmax in (None, 900.0):
                got = {}
                for label, d in (("measured", dm), ("cascade-table", dt)):
                    got[label] = run_app(d, app, root / f"run-{app}-{label}-{fmax}", fmax)
                rows.append(benchlib.row("timing", f"fmax {app}", got, "MHz",
                                         {"design": where, "fmax_target": fmax, "seed": 0}))
        # 4. SDF
        for r in validate(small_m, root / "sdf", (1, 1)):
            rows.append(benchlib.row("timing", f"sdf {r['path']}", r, "ps",
                                     {"design": "configs/small.toml (8x8)", "tile": [1, 1],
                                      "step_ps": 0.5}))
        # 5. tracks
        for tracks in (3, 4, 5, 6):
            got = {}
            for label in ("measured", "cascade-table"):
                d = build(root, "small", label, tracks=tracks)
                doc = json.loads((d / "timing.json").read_text())
                got[label] = {"cb_pe_ps": doc["classes"]["cb:pe"],
                              **run_app(d, "gaussian", root / f"tr{tracks}-{label}", None)}
            rows.append(benchlib.row("timing", "fmax vs tracks", got, "MHz",
                                     {"design": "configs/small.toml (8x8)", "tracks": tracks,
                                      "app": "gaussian", "seed": 0}))
        # 6. ready-valid and hybrid arrays
        ready_valid(root, rows)
    benchlib.save_rows("timing", rows)


if __name__ == "__main__":
    main()
