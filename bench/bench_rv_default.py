"""Ready-valid 32x16 (issue 33 acceptance 1 at full size; configs/default_rv.toml): harris
and gaussian through `cgra run` on the ready-valid array in Verilator under seeded random
input stalls and output backpressure (p = 0.3 each), bit-exact against numpy and Halide or
the bench stops; and the same apps with no stalls (one token per cycle since stop 51).
Each run also runs the cycle-level model of the network (:mod:`mapper.sim.rv_predict`,
:func:`canal.rv_netsim.simulate_streams`; the run report's ``handshake.model_cycles`` and
stage ``cycle_model``): its cycles (``model_cycles``; the bench stops unless they are the
RTL's) and its seconds of Python (``model_seconds``), against the Verilator model's build
and simulation.

Figures per app and stall setting (``bench/results/rv_default.csv``): tokens per stream,
stream cycles, stall and backpressure cycles, tokens per cycle, the Verilator model's build
seconds (the first run builds it: a long build, verilation single-threaded), the seconds of
the bitstream proof (data, valid and ready per net).

Run: ``.venv/bin/python bench/bench_rv_default.py`` (generates build/default_rv when missing).
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from benchlib import default_design, row, save_rows  # noqa: E402
from mapper.flow import run_app  # noqa: E402
from mapper.params import AppParams, RunParams, SimOptions  # noqa: E402

NAME = "rv_default"
APPS = ("harris", "gaussian")
#: (input stall probability, output backpressure probability, seed)
STALLS = ((0.3, 0.3, 1), (0.0, 0.0, 1))


def main() -> None:
    d = default_design("default_rv")
    rows: list[dict] = []
    for app in APPS:
        for p_in, p_out, seed in STALLS:
            params = {"design": "default_rv", "app": app, "size": "64x64", "p_in": p_in,
                      "p_out": p_out, "seed": seed}
            with tempfile.TemporaryDirectory() as tmp:
                run = run_app(RunParams(AppParams(app, 64, 64), d, Path(tmp) / app,
                                        sim=SimOptions(stall_in=p_in, stall_out=p_out,
                                                       stall_seed=seed)))
            rep = run.report
            if rep["match"] != {"numpy": True, "halide": True}:
                sys.exit(f"{app} on default_rv ({p_in}, {p_out}): not bit-exact")
            hs = rep["handshake"]
            for fig, unit in (("tokens", "tokens"), ("cycles", "cycles"),
                              ("input_stall_cycles", "cycles"),
                              ("output_backpressure_cycles", "cycles"),
                              ("tokens_per_cycle", "tokens/cycle")):
                rows.append(row(NAME, fig, hs[fig], unit, params))
            rows.append(row(NAME, "verilator_build_seconds",
                            round(rep["verilator"]["build_seconds"], 1), "s",
                            {**params, "cached": rep["verilator"]["cached"]}))
            if hs["model_cycles"] != hs["cycles"]:
                sys.exit(f"{app} on default_rv ({p_in}, {p_out}): the cycle model predicts "
                         f"{hs['model_cycles']} cycles, the RTL ran {hs['cycles']}")
            rows.append(row(NAME, "model_cycles", hs["model_cycles"], "cycles", params))
            rows.append(row(NAME, "model_seconds",
                            round(rep["stage_seconds"]["cycle_model"], 1), "s", params))
            rows.append(row(NAME, "simulation_seconds",
                            round(rep["stage_seconds"]["simulation"], 1), "s", params))
            rows.append(row(NAME, "proof_seconds",
                            rep["bitstream_proof"]["seconds"]["total"], "s", params))
    save_rows(NAME, rows)


if __name__ == "__main__":
    main()
