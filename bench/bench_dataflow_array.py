"""Dataflow programs on the generated array (issue 35, "figures"): dot_product (n = 256) at
par 1, 2 and 4 on the 32x16 ready-valid array of dataflow PEs (configs/default_df.toml)
and at par 1 and 2 on the 8x8 (configs/small_df.toml; par 4 needs 9 IO tiles, the 8x8
has 8), gemm_tile (8x8x8, its two SRAM tiles in memory PEs) at par 1, 2 and 4 on both,
SARA's Fig. 4 branch program (n = 16, length 8: its SRAM refilled in 8 epochs) at par 1
and 2 on the 8x8 and 1, 2 and 4 on the 32x16, and kmeans_step at its defaults (32 points
of 4 dimensions, 3 centroids: its points fill a 128-word scratchpad; par 4 needs 77 PEs,
the 8x8 has 56) at par 1 and 2 on the 8x8 and 1, 2 and 4 on the 32x16; both designs' PEs
have 128-word scratchpads and the divider; each run without stalls and under random stalls
(0.3 / 0.3, seed 1), every run bit-exact with numpy (the bench stops otherwise).

Figures per run (``bench/results/dataflow_array.csv``, params: program, n, par, design,
stall probabilities and seed): PEs, IO tiles, routes (static / dynamic), RTL cycles, the
token-level simulator's cycles (SARA's units, link latency 1: a different machine's model,
reported beside, not a bound) and their ratio, the cycles the model of the mapped program
predicts (:mod:`mapper.dataflow.array_model`: the placed PEs' rates on their routes under
the harness's stall draws) and the RTL / model ratio, input stall and backpressure cycles,
throughput (input tokens per RTL cycle: SARA Fig. 9 expects it to grow with par until the
IO runs out) and the seconds of each stage (compile, place and route, Verilator build,
simulation, token-level simulator) and of the design's cold generation.

Run: ``.venv/bin/python bench/bench_dataflow_array.py`` (the 32x16 model's cold Verilator
build is most of it); ``--design small_df`` runs one design's rows.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from benchlib import default_design, row, save_rows  # noqa: E402
from mapper.collateral import load_collateral  # noqa: E402
from mapper.dataflow.apps import ARRAY_PROGRAMS  # noqa: E402
from mapper.dataflow.array_run import dataflow_pe, run_program  # noqa: E402

NAME = "dataflow_array"
N = 256
#: (program, its builder's sizes, the pars run) per design
BRANCH = {"n": 16, "length": 8}
RUNS = {"small_df": [("dot_product", {"n": N}, (1, 2)), ("gemm_tile", {}, (1, 2, 4)),
                     ("branch", BRANCH, (1, 2)), ("kmeans_step", {"n": 32}, (1, 2))],
        "default_df": [("dot_product", {"n": N}, (1, 2, 4)), ("gemm_tile", {}, (1, 2, 4)),
                       ("branch", BRANCH, (1, 2, 4)), ("kmeans_step", {"n": 32}, (1, 2, 4))]}
STALLS = ((0.0, 0.0), (0.3, 0.3))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--design", choices=sorted(RUNS), action="append",
                    help="run this design's rows only (repeatable; default: both)")
    designs = ap.parse_args().design or list(RUNS)
    rows = []
    for design in designs:
        runs = RUNS[design]
        t = time.perf_counter()
        d = default_design(design, only=["coreir.add"])   # the dataflow compiler uses no rule
        rows.append(row(NAME, "design_generation_seconds", round(time.perf_counter() - t, 1),
                        "s", {"design": design}))
        coll = load_collateral(d)
        for name, sizes, pars in runs:
            for par in pars:
                program, inputs, reference = ARRAY_PROGRAMS[name](par=par, **sizes)
                for p_in, p_out in STALLS:
                    params = {"program": name, **sizes, "par": par, "design": design,
                              "pe": dataflow_pe(coll).__name__, "p_in": p_in,
                              "p_out": p_out, "stall_seed": 1}
                    rows += _run(program, inputs, reference, coll, params)
    save_rows(NAME, rows)


def _run(program, inputs, reference, coll, params) -> list[dict]:
    rows = []
    design, par, p_in, p_out = (params[k] for k in ("design", "par", "p_in", "p_out"))
    out = ROOT / "build" / "dataflow_array" / f"{design}_{program.name}_p{par}_{p_in}"
    r = run_program(program, inputs, coll, out, stall_in=p_in, stall_out=p_out, stall_seed=1)
    for dram, want in reference(inputs).items():
        if not (r.memories[dram] == want).all():
            sys.exit(f"{program.name} par {par} on {design}: not bit-exact")
    rep = r.report
    rows.append(row(NAME, "pes", rep["pes"], "PEs", params))
    rows.append(row(NAME, "io_tiles", rep["io"]["in"] + rep["io"]["out"], "tiles",
                    params))
    rows.append(row(NAME, "routes_static", rep["routes"]["static"], "nets", params))
    rows.append(row(NAME, "routes_dynamic", rep["routes"]["dynamic"], "nets",
                    params))
    rows.append(row(NAME, "cycles_rtl", r.cycles, "cycles", params))
    rows.append(row(NAME, "cycles_token_simulator", r.sim_cycles, "cycles", params))
    rows.append(row(NAME, "cycles_ratio", rep["cycles"]["ratio"], "rtl/sim", params))
    rows.append(row(NAME, "cycles_array_model", r.model_cycles, "cycles", params))
    rows.append(row(NAME, "cycles_array_model_ratio", rep["cycles"]["array_model_ratio"],
                    "rtl/model", params))
    rows.append(row(NAME, "input_stall_cycles", r.stalls[0], "cycles", params))
    rows.append(row(NAME, "backpressure_cycles", r.stalls[1], "cycles", params))
    rows.append(row(NAME, "throughput", round(rep["tokens"]["in"] / r.cycles, 3),
                    "input tokens/cycle", params))
    rows.append(row(NAME, "bit_exact", True, "bool", params))
    for stage, secs in rep["seconds"].items():
        rows.append(row(NAME, f"seconds_{stage}", secs, "s", params))
    return rows


if __name__ == "__main__":
    main()
