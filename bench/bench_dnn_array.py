"""DNN layers on the array (issue 15): the four layers at the paper's channel blocking, compiled
by mapper.dnn.array onto the default 32x16 design (``build/default``, generated when missing),
placed, routed, pipelined, run on the generated RTL in Verilator and checked bit for bit
against numpy and real Halide (the bench stops otherwise).

Per layer and operand MEM layout (``--buffers``: double buffers, the default, against whole
boxes, side by side): PEs, MEMs (by role), IO tiles, registers, the load phase, the double
buffers and the words the operand MEMs store, cycles (last output + 1)
against the ideal (MACs / multipliers), occupancy (MACs / (multipliers x cycles)) over the
run and over the compute phase, the longest accumulation loop against its budget, the timing
model's Fmax, each stage's seconds and the Verilator simulation's seconds.

Sizes: resnet_layer 18x18x16 -> 16x16x16 and resnet_stride2 17x17x16 -> 8x8x16 at 8 x 8
lanes (the paper's), mobilenet_layer 18x18x16 at 8 x 8, gemm 16x16 (k = 32) at a 4 x 4 output
tile: the paper's 8 x 8 tile needs 64 output IO tiles, the default array has 32;
``resnet_layer_c32``: 34x34x32 -> 32x32x32 at 8 x 8 (its input streams go over several MEMs).
``--fmax F`` pipelines to F MHz (compute pipelining + register insertion); default: no
target (the balance pass only).

A case that does not fit the design (the refusal's one line) gets a ``refused`` row and
the bench goes on. Prints one JSON line per figure and appends rows to
``bench/results/dnn_array.csv``.
``--mem dualport,pub`` runs each case on the dual-port MEM (``build/default``) and on the
wide-fetch PUB (``build/default_pub``, configs/default_pub.toml) side by side.

Run: ``.venv/bin/python bench/bench_dnn_array.py [--layers resnet_layer,gemm] [--fmax 600]
[--buffers double,whole] [--flatten on,off] [--mem dualport,pub]``.
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

#: case -> (layer, side, channels, block); ``resnet_layer_c32``: C_in = C_out = 32 on a
#: 34x34 input, whose input streams (4 channel planes of 1156 words) exceed one MEM: banks
CASES = {"resnet_layer": ("resnet_layer", 18, 16, 8),
         "resnet_stride2": ("resnet_stride2", 17, 16, 8),
         "mobilenet_layer": ("mobilenet_layer", 18, 16, 8), "gemm": ("gemm", 16, 32, 4),
         "resnet_layer_c32": ("resnet_layer", 34, 32, 8)}


#: ``--mem`` -> design: the default array with its dual-port MEM or with the PUB
DESIGNS = {"dualport": "default", "pub": "default_pub"}


def design(mem: str = "dualport") -> Path:
    return benchlib.default_design(DESIGNS[mem])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", default=",".join(CASES))
    ap.add_argument("--fmax", type=float, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--buffers", default="double,whole",
                    help="operand MEM layouts, side by side: double (double buffers, the "
                         "default) and/or whole (each MEM holds its whole box)")
    ap.add_argument("--flatten", default="on",
                    help="loop perfection on and/or off (on,off: the Fig. 13 ablation with "
                         "--buffers double,whole)")
    ap.add_argument("--mem", default="dualport",
                    help="MEM tiles, side by side: dualport (configs/default.toml) and/or pub "
                         "(the wide-fetch PUB, configs/default_pub.toml)")
    args = ap.parse_args()

    from cgra.errors import MappingError
    from mapper.params import AppParams, FlowParams, RunParams, SimOptions
    from mapper.flow import run_app
    from mapper.backend.pipeline import PipelineParams
    from mapper.backend.place import PlaceParams

    rows: list[dict] = []
    for case, mem, buffers, flat in [(la, m, b, fl) for la in args.layers.split(",")
                                     for m in args.mem.split(",")
                                     for b in args.buffers.split(",")
                                     for fl in args.flatten.split(",")]:
        d = design(mem)
        layer, side, channels, block = CASES[case]
        p = {"layer": layer, "size": side, "channels": channels, "block": block,
             "array": "32x16", "fmax_target": args.fmax, "seed": args.seed,
             "buffers": buffers, "flatten": flat, "mem": mem}
        pipe = PipelineParams() if args.fmax is None else PipelineParams(
            register_pe_inputs=True, target_period_ps=1e6 / args.fmax)
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            try:
                run = run_app(RunParams(AppParams(layer, side, side, channels=channels,
                                                  block=block,
                                                  double_buffer=buffers == "double",
                                                  flatten=flat == "on"), d, tmp,
                                        FlowParams(place=PlaceParams(seed=args.seed),
                                                   pipeline=pipe), SimOptions("camera")))
            except MappingError as e:     # a case that does not fit: its one line, next
                rows.append(benchlib.row("dnn_array", "refused", str(e), "message", p))
                continue
            wall = time.perf_counter() - t
        rep = run.report                       # run_app raised unless bit-exact
        lay = rep["layer"]
        used = rep["resources"]["used"]

        def emit(figure: str, value, unit: str, p=p) -> None:
            rows.append(benchlib.row("dnn_array", figure, value, unit, p))

        emit("pe", used.get("p", 0), "PEs")
        emit("mem", used.get("m", 0), "MEMs")
        for role, n in sorted(lay["mems"].items()):
            emit(f"mem_{role}", n, "MEMs")
        emit("io", used.get("I", 0), "IO tiles")
        regs = rep["registers"]        # pipeline registers in use, as each pass counts them
        emit("registers", regs["balancing"] + regs["compute_pipelining"] +
             regs["pe_input_balancing"], "registers")
        emit("load_cycles", lay["load_cycles"], "cycles")
        emit("double_buffers", lay["double_buffers"], "MEMs")
        emit("operand_words", lay["operand_words"], "words")
        emit("cycles", lay["cycles"], "cycles")
        emit("ideal_cycles", lay["ideal_cycles"], "cycles")
        emit("cycles_over_ideal", round(lay["cycles"] / lay["ideal_cycles"], 3), "ratio")
        emit("occupancy", lay["occupancy"], "fraction")
        emit("compute_occupancy", lay["compute_occupancy"], "fraction")
        emit("stall", max(lay["stall"]), "cycles/step")
        emit("loop_latency", lay["loop_latency"], "cycles")
        emit("loop_budget", lay["loop_budget"], "cycles")
        emit("fmax", rep["timing"]["fmax_mhz"], "MHz")
        for stage, s in rep["stage_seconds"].items():
            emit(f"{stage}_s", s, "s")
        emit("wall_s", round(wall, 2), "s")
    benchlib.save_rows("dnn_array", rows)


if __name__ == "__main__":
    main()
