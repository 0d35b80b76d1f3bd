"""DNN layer benchmark (issue 15): the four layers of mapper/apps/dnn.py as tensor programs.

Per layer and size: the mapping plan (:func:`mapper.dnn.plan.plan_layer` on the default 32x16
counts, dual-port MEM and PUB): PEs, MEM tiles, cycles against the ideal (MACs /
multipliers), occupancy with and without double buffering and flattening (the unified-buffer
paper's Fig. 13 ablation), PUB / dual-port cycles and MEMs; and the golden models' seconds
(numpy :func:`mapper.frontend.tensor.evaluate`, real Halide JIT compile + run), after checking they
agree bit for bit (the bench stops otherwise); at CI sizes, the memory system on Lake's
cycle-accurate models (:func:`mapper.dnn.memory.simulate`: seconds,
MEMs, cycles; bit-exact or the bench stops). The array does not run tensor programs yet, so
there is no Verilator time.

Prints one JSON line per figure and appends rows to ``bench/results/dnn.csv``.
Run: ``.venv/bin/python bench/bench_dnn.py``.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import benchlib  # noqa: E402  (bench/benchlib.py: JSON lines and results CSV)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from cgra.errors import MappingError  # noqa: E402
from mapper.dnn import memory as dnn_memory  # noqa: E402
from mapper.frontend import tensor  # noqa: E402
from mapper.apps import dnn  # noqa: E402
from mapper.dnn.plan import DEFAULT_32X16, plan_layer  # noqa: E402
from mapper.sim.halide import HalidePipeline  # noqa: E402

#: (layer, builder keyword sizes): the CI sizes, then larger ones
CASES = (
    ("resnet_layer", {}),
    ("resnet_layer", {"width": 34, "height": 34, "c_in": 32, "c_out": 32}),
    ("resnet_stride2", {}),
    ("resnet_stride2", {"width": 33, "height": 33, "c_in": 32, "c_out": 32}),
    ("mobilenet_layer", {}),
    ("mobilenet_layer", {"width": 34, "height": 34, "c_in": 32, "c_out": 32}),
    ("gemm", {}),
    ("gemm", {"m": 64, "n": 64, "k": 128}),
)
PUB = DEFAULT_32X16.with_mem("pub_512x64", 2048, 2, 4)


def main() -> None:
    rows: list[dict] = []
    for layer, kw in CASES:
        pipe = dnn.LAYERS[layer](**kw)
        params = {"layer": layer, **kw}

        def emit(figure: str, value, unit: str, params=params) -> None:
            rows.append(benchlib.row("dnn", figure, value, unit, params))

        ins = dnn.layer_inputs(pipe, 0)
        t = time.perf_counter()
        ours = tensor.evaluate(pipe, ins)[pipe.output.name]
        emit("numpy_eval_s", round(time.perf_counter() - t, 3), "s")
        t = time.perf_counter()
        hp = HalidePipeline(pipe)
        emit("halide_compile_s", round(time.perf_counter() - t, 3), "s")
        t = time.perf_counter()
        gold = hp.run_outputs(ins)[pipe.output.name]
        emit("halide_run_s", round(time.perf_counter() - t, 3), "s")
        if not np.array_equal(ours, gold):
            raise SystemExit(f"{layer} {kw}: numpy and Halide differ")
        emit("macs", sum(tensor.macs(pipe).values()), "MACs")
        if not kw:                                  # CI sizes: on Lake's MEM models
            t = time.perf_counter()
            got, lms = dnn_memory.simulate(pipe, ins)
            emit("lake_memory_sim_s", round(time.perf_counter() - t, 2), "s")
            if not np.array_equal(got[pipe.output.name], ours):
                raise SystemExit(f"{layer}: the Lake memory simulation differs from numpy")
            emit("lake_memory_mems", sum(lm.mem_count for lm in lms), "MEMs")
            emit("lake_memory_cycles", lms[-1].cycles, "cycles")
        for res, tag in ((DEFAULT_32X16, "dp"), (PUB, "pub")):
            try:
                plan = plan_layer(pipe, res)
            except MappingError as exc:
                emit(f"plan_{tag}_refused", str(exc), "")
                continue
            emit(f"pe_{tag}", plan.pe_count, "PEs")
            emit(f"mem_{tag}", plan.mem_count, "MEMs")
            emit(f"cycles_{tag}", plan.cycles, "cycles")
            emit(f"ideal_cycles_{tag}", plan.ideal_cycles, "cycles")
            emit(f"cycles_over_ideal_{tag}", round(plan.cycles / plan.ideal_cycles, 4), "x")
            for (db, fl), s in plan.ablation.items():
                emit(f"occupancy_{tag}_db{int(db)}_flat{int(fl)}",
                     round(float(plan.occupancy_of(s)), 4), "fraction")
            emit(f"accumulation_stall_{tag}",
                 max(a["stall"] for a in plan.accumulation.values()), "cycles/step")
    benchlib.save_rows("dnn", rows)


if __name__ == "__main__":
    main()
