"""DNN layers on the wide-fetch PUB (configs/small_pub.toml: 8x8, pub_512x64 MEM tiles with
4-word SRAM accesses), compiled by mapper.dnn.array with dnn_memory's wide-fetch layouts
(rows padded to whole wide words, one shift bank per r.x for the activations read at
x + r.x), run on the generated RTL in Verilator and matching numpy and real Halide bit for
bit. Sizes fit the 8x8 array's 14 MEMs; a pass updates at least a wide word of partial sums
(4 x 4 output pixels). MobileNet needs 20 MEMs here: tests/mapper/test_dnn_memory.py runs it
on Lake's PUB models, bench/bench_dnn_array.py --mem pub on the 32x16 PUB array."""
from __future__ import annotations

import pytest

#: layer -> (side, channels, block, MEMs by role, double-buffered operand MEMs)
CASES = {"resnet_layer": (6, 4, 2, {"operand": 10, "accumulation": 2, "flag": 1}, 10),
         # stride-2 reads leave the PUB's SRAM no slot for refills: whole input boxes
         "resnet_stride2": (9, 4, 2, {"operand": 10, "accumulation": 2, "flag": 1}, 4),
         "gemm": (8, 6, 2, {"operand": 4, "accumulation": 4, "flag": 1}, 4)}


@pytest.fixture(scope="module")
def pub_harness(pub_small_design):
    from mapper.sim.verilator import build_harness

    return build_harness(pub_small_design)


def _run(design, out, layer, **kw):
    from mapper.params import AppParams, RunParams, SimOptions
    from mapper.flow import run_app

    side, channels, block = CASES[layer][:3]
    return run_app(RunParams(AppParams(layer, side, side, channels=channels, block=block, **kw),
                             design, out, sim=SimOptions("camera", tensor_seed=3)))


@pytest.mark.parametrize("layer", sorted(CASES))
def test_layer_runs_bit_exact_on_the_pub(pub_small_design, pub_harness, tmp_path, layer):
    from mapper.frontend import tensor
    from mapper.apps.dnn import build_layer

    run = _run(pub_small_design, tmp_path, layer)
    rep = run.report                 # run_app raised unless bit-exact against both goldens
    assert rep["match"] == {"numpy": True, "halide": True}
    side, channels, block, mems, doubles = CASES[layer]
    pipe = build_layer(layer, side, channels, block)
    assert (run.output == tensor.evaluate(pipe, run.inputs)[pipe.output.name]).all()
    assert run.output.any()
    lay = rep["layer"]
    assert lay["mems"] == mems and lay["double_buffers"] == doubles
    # the first step waits for the last host word + read latency + the PUB's 7 cycles
    assert lay["compute_start"] == lay["load_cycles"] + 1 + 7
    assert lay["cycles"] > lay["compute_cycles"] >= lay["ideal_cycles"]


def test_resnet_whole_boxes_on_the_pub(pub_small_design, pub_harness, tmp_path):
    """Whole boxes: the 3 shift banks of an input stream load with bank 0 from one IO lane
    (72 host words), so the load phase is the dual-port MEM's. The PUB commits a partial sum
    with the last of its wide word, so the 2 output-channel tiles run inside the reduction
    (loop perfection: 32 sums per pass, one step per cycle); a weight stream's rows are then
    its 2 tiles at a pitch of 4: 72 words for 36."""
    run = _run(pub_small_design, tmp_path, "resnet_layer", double_buffer=False)
    lay = run.report["layer"]
    assert run.report["match"] == {"numpy": True, "halide": True}
    assert (lay["load_cycles"], lay["compute_start"], lay["double_buffers"]) == (72, 80, 0)
    assert lay["operand_words"] == 6 * 96 + 4 * 72    # rows of 6 at a pitch of 8


def test_cgra_layer_memories_on_the_design_mem(pub_small_design):
    """``cgra layer --memories --design`` runs the memory system on the design's MEM model:
    on the PUB resnet 6x6x4 takes 13 MEMs (9 on the dual-port: 2 x 3 shift banks for 2
    input streams) and 7 cycles more (656 against 649); GEMM without loop perfection
    updates one sum per pass, not a whole wide word: one line, exit 2."""
    import subprocess
    import sys
    from pathlib import Path

    cgra = str(Path(sys.executable).parent / "cgra")
    args = ["--size", "6", "--channels", "4", "--block", "2", "--memories"]
    r = subprocess.run([cgra, "layer", "resnet_layer", *args, "--design",
                        str(pub_small_design)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert ("on Lake MEM models (pub_512x64): 13 MEMs (720 operand words), 656 cycles, "
            "output bit-exact") in r.stdout
    r = subprocess.run([cgra, "layer", "resnet_layer", *args], capture_output=True,
                       text=True, timeout=300)
    assert "on Lake MEM models (dualport_2048x16): 9 MEMs (288 operand words), 649 cycles" \
        in r.stdout
    r = subprocess.run([cgra, "layer", "gemm", "--size", "8", "--channels", "6", "--block",
                        "2", "--memories", "--design", str(pub_small_design)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "error: Func gemm: a pass updates 1 partial sums per lane, not a multiple of the PUB's "
        "4-word wide word; use an output tile of a multiple of 4 pixels or a MEM with fetch "
        "width 1 (dual-port)"]
