"""End-to-end benchmark: ``cgra run`` stages on the generated RTL.

For gaussian and unsharp on the 8x8 (configs/small.toml) and 32x16 (configs/default.toml)
designs, unroll 1, 64x64 camera crop: seconds per stage (map, place, route, pipeline,
bitstream, Verilator build, simulation), total wirelength, routing iterations, cycles per
frame and first-output latency versus the ideal (one pixel per cycle, first output after the
stencil's fill time = the zero-latency schedule of mapper.mapping.schedule); then the full 512x512
camera() image through gaussian on 8x8 (simulation time). Every run is checked bit-exactly
against both golden models (a mismatch aborts the benchmark).

Designs are taken from ``build/<design>`` when present (``make rtl``), else generated there.
Prints one JSON line per figure and appends rows to ``bench/results/e2e.csv``.
Run: ``.venv/bin/python bench/bench_e2e.py`` (machine: state the cores with each figure).
"""
from __future__ import annotations

import csv
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mapper.params import AppParams, RunParams  # noqa: E402
from mapper.flow import run_app  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "e2e.csv"
DESIGNS = {"small": "8x8", "default": "32x16"}


def design_dir(name: str) -> Path:
    d = ROOT / "build" / name
    if not (d / "design.json").is_file() or not (d / "rules").is_dir():
        from garnet.build import generate
        from garnet.params import load_toml

        t = time.perf_counter()
        generate(load_toml(ROOT / "configs" / f"{name}.toml"), d, rules=True,
                 rules_dir=ROOT / "build" / "rules", jobs=2,
                 config_file=f"configs/{name}.toml")
        emit("rtl_generation_seconds", time.perf_counter() - t, "s", {"design": name})
    return d


def emit(figure: str, value, unit: str, params: dict) -> None:
    row = {"bench": "e2e", "figure": figure, "value": value, "unit": unit,
           "params": {**params, "cores": os.cpu_count()}}
    print(json.dumps(row), flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    new = not RESULTS.exists()
    with open(RESULTS, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["time", "bench", "figure", "value", "unit", "params"])
        w.writerow([time.strftime("%Y-%m-%dT%H:%M:%S"), "e2e", figure, value, unit,
                    json.dumps(row["params"], sort_keys=True)])


def run(app: str, design: str, size: int) -> dict:
    d = design_dir(design)
    out = ROOT / "build" / "bench_e2e" / f"{app}_{design}_{size}"
    t = time.perf_counter()
    r = run_app(RunParams(AppParams(app, size, size), d, out))
    total = time.perf_counter() - t
    rep = r.report
    st = rep["stage_seconds"]
    p = {"app": app, "design": design, "array": DESIGNS[design], "size": size, "unroll": 1}
    for stage, key in (("map", "map"), ("place", "place"), ("route", "route"),
                       ("pipeline", "pipeline"), ("bitstream", "bitstream"),
                       ("verilator_build", "verilator_build"), ("simulation", "simulation")):
        emit(f"seconds_{stage}", round(st.get(key, 0.0), 4), "s", p)
    emit("seconds_total", round(total, 3), "s", p)
    emit("wirelength_total", rep["wirelength_total"], "segments", p)
    emit("routing_iterations", rep["routing_iterations"], "iterations", p)
    emit("cycles_per_frame", rep["cycles"]["stream"], "cycles", p)
    emit("ideal_cycles_per_frame", rep["cycles"]["ideal_stream"], "cycles", p)
    emit("first_output_latency", rep["latency"]["first_output_cycle"], "cycles", p)
    emit("ideal_first_output_latency", rep["latency"]["ideal_first_output_cycle"], "cycles", p)
    emit("resources_used", rep["resources"]["used"], "instances", p)
    return rep


def main() -> None:
    for design in ("small", "default"):
        for app in ("gaussian", "unsharp"):
            run(app, design, 64)
    run("gaussian", "small", 512)


if __name__ == "__main__":
    main()
