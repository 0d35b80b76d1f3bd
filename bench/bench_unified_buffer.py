"""Unified-buffer benchmark (issue 14): multi-rate apps and gaussian unroll on build/default.

Per app (downsample, upsample, upsample_bilinear, laplacian_pyramid, gaussian, harris, camera_pipeline,
bayer_demosaic (its pattern ROMs count as MEMs; "n/a" on the PUB, which has no config-bus memory); 64x64
camera crop, placement seed 0, no clock target): PE / MEM / register counts, buffer MEMs on
the dual-port and the PUB preset (mapper level; "n/a" when the PUB cannot hold an addressed
buffer; lookup tables counted apart as ``lut_mem_dp``: they need the dual-port MEM's
lookup-table mode and stay on dual-port tiles in a PUB design), the ISL
schedule time, cycles and first-output cycle against the ideal schedule, seconds per stage
and the Verilator simulation time (run_app on the generated RTL, bit-exact against numpy and
Halide or the bench stops). Gaussian at unroll 1/2/4/8/16: MEMs (DP and PUB), registers and
ideal cycles from memory mapping (the unified-buffer paper's Fig. 12 trend), and the RTL run
at every unroll (bit-exact or the bench stops; unroll 1, 2, 4 and 16 -- one lane per IO
tile at 16: 32 IO tiles, registers only, no MEM -- run here only: `make test` keeps 8).

Prints one JSON line per figure and appends rows to ``bench/results/unified_buffer.csv``.
Run: ``.venv/bin/python bench/bench_unified_buffer.py [--apps a,b] [--no-sim]``.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import benchlib  # noqa: E402  (bench/benchlib.py: JSON lines and results CSV)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_cascade import design  # noqa: E402  (build/default, generated when missing)

APPS = ("downsample", "upsample", "upsample_bilinear", "laplacian_pyramid", "gaussian", "harris",
        "camera_pipeline",
        "bayer_demosaic")
#: why lookup tables are counted apart from the buffers (figure ``lut_mem_dp``)
LUT_NOTE = ("lookup tables need the dual-port MEM's lookup-table mode: on a PUB design they "
            "stay on dual-port tiles")
UNROLLS = (1, 2, 4, 8, 16)


def emit(rows: list[dict], figure: str, value, unit: str, params: dict) -> None:
    rows.append(benchlib.row("unified_buffer", figure, value, unit, params))


def mem_counts(app: str, unroll: int = 1) -> dict[str, object]:
    """Mapping-level figures on both MEM presets: ``mem_<dp|pub>`` buffer MEM tiles (line
    buffers, delay lines, addressed buffers; "n/a" when the preset cannot hold them),
    ``reg_*`` registers, ``ideal_cycles_*``, and ``lut_mem_dp``: MEM tiles in lookup-table
    mode (one per live lookup of the unrolled kernels), which only the dual-port MEM has,
    so a PUB design keeps them on dual-port tiles (:data:`LUT_NOTE`)."""
    from cgra.errors import MappingError
    from mapper import ir
    from mapper.apps import lower_app
    from mapper.mapping.memory import DUAL_PORT_SRAM, PHYSICAL_UNIFIED_BUFFER, map_memory

    out: dict[str, object] = {}
    p = lower_app(app, 64, 64, unroll)
    luts = None
    for name, spec in (("dp", DUAL_PORT_SRAM), ("pub", PHYSICAL_UNIFIED_BUFFER)):
        try:
            mm = map_memory(p, spec)
            out[f"mem_{name}"] = mm.counts()["mem"]
            out[f"reg_{name}"] = mm.counts()["reg"]
            out[f"ideal_cycles_{name}"] = mm.schedule.completion_cycle()
            luts = sum(1 for us in mm.schedule.kernels.values()
                       for n in us.kernel.live_nodes() if n.op == ir.LUT_OP)
        except MappingError:
            out[f"mem_{name}"] = "n/a"
    if luts:
        out["lut_mem_dp"] = luts
    return out


def emit_counts(rows: list[dict], counts: dict[str, object], params: dict) -> None:
    for k, v in counts.items():
        unit = "count" if k.startswith(("mem", "reg", "lut")) else "cycles"
        emit(rows, k, v, unit, {**params, "note": LUT_NOTE} if k == "lut_mem_dp" else params)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--no-sim", action="store_true", help="mapping figures only")
    args = ap.parse_args()

    from mapper.apps import lower_app
    from mapper.params import AppParams, RunParams
    from mapper.flow import run_app
    from mapper.mapping.polyhedral import from_pipeline, schedule

    d = design()
    rows: list[dict] = []
    for app in args.apps.split(","):
        params = {"app": app, "size": "64x64", "design": "default"}
        emit_counts(rows, mem_counts(app), params)
        prog, coef = from_pipeline(lower_app(app, 64, 64))
        t = time.perf_counter()
        schedule(prog, coef)
        emit(rows, "isl_schedule_seconds", round(time.perf_counter() - t, 4), "s", params)
        if args.no_sim:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            run = run_app(RunParams(AppParams(app, 64, 64), d, Path(tmp) / app))
        rep = run.report
        used = rep["resources"]["used"]
        emit(rows, "pe", used.get("p", 0), "count", params)
        emit(rows, "mem", used.get("m", 0), "count", params)
        emit(rows, "registers", rep["registers"], "count", params)
        emit(rows, "cycles", rep["cycles"]["stream"], "cycles", params)
        emit(rows, "ideal_cycles", rep["cycles"]["ideal_stream"], "cycles", params)
        emit(rows, "first_output", rep["latency"]["first_output_cycle"], "cycles", params)
        emit(rows, "ideal_first_output", rep["latency"]["ideal_first_output_cycle"], "cycles",
             params)
        for k, v in rep["stage_seconds"].items():
            emit(rows, f"seconds_{k}", v, "s", params)
    for u in UNROLLS:
        params = {"app": "gaussian", "size": "64x64", "unroll": u, "design": "default"}
        emit_counts(rows, mem_counts("gaussian", u), params)
        if args.no_sim:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            run = run_app(RunParams(AppParams("gaussian", 64, 64, unroll=u), d,
                                    Path(tmp) / f"g{u}"))
        if run.report["match"] != {"numpy": True, "halide": True}:
            sys.exit(f"gaussian unroll {u}: not bit-exact ({run.report['match']})")
        used = run.report["resources"]["used"]
        emit(rows, "cycles", run.report["cycles"]["stream"], "cycles", params)
        emit(rows, "ideal_cycles", run.report["cycles"]["ideal_stream"], "cycles", params)
        emit(rows, "mem", used.get("m", 0), "count", params)
        emit(rows, "pe", used.get("p", 0), "count", params)
        emit(rows, "io", used.get("I", 0), "count", params)
        emit(rows, "seconds_simulation", run.report["stage_seconds"]["simulation"], "s", params)

    benchlib.save_rows("unified_buffer", rows)


if __name__ == "__main__":
    main()
