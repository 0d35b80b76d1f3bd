"""The DNN layer plan (mapper/dnn/plan.py): known answers at the paper's blocking (81 MEM
tiles for the ResNet layer: 64 weight streams + 8 input + 8 accumulation + the first-pass
flag), the wide-fetch
padding (18-pixel rows padded to 20 on the PUB: 10/9 of the cycles), the Fig. 13 ordering,
the arithmetic of lanes and buffers, and the refusals."""
from __future__ import annotations

import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from cgra.errors import MappingError
from mapper.apps import build_app, dnn
from mapper.dnn.plan import DEFAULT_32X16, Resources, plan_layer, reductions

PUB = DEFAULT_32X16.with_mem("pub_512x64", 2048, 2, 4)
CGRA = str(Path(sys.executable).parent / "cgra")


def _buffers(plan):
    return {b.name: (b.streams, b.words, b.copies, b.mems) for b in plan.buffers}


def test_resnet_layer_at_the_papers_blocking():
    plan = plan_layer(dnn.resnet_layer())          # 18x18x16 -> 16x16x16, 8 x 8 lanes
    (red,) = plan.reductions
    assert (red.lanes_in, red.lanes_out, red.tiles) == (8, 8, 2)
    # 3*3*16*16 weights / 2 tiles / 64 streams = 18 words, double-buffered; the input once:
    # 16*18*18 / 8 = 648 words; partial sums 16*16*8 / 8 lanes = 256 words per tile
    assert _buffers(plan) == {"weights": (64, 18, 2, 64), "input": (8, 648, 2, 8),
                              "acc_conv": (8, 256, 1, 8), "first_conv": (1, 18, 1, 1)}
    assert plan.mem_count == 81
    # 64 multipliers, 64 adders (7 per tree + 1 accumulation, 8 trees), the restart (a mux
    # per lane, one compare), 3 ops (ashr, smax, smin) of the requantisation per output lane
    assert plan.pes == {"conv: coreir.mul": 64, "conv: coreir.add": 64, "conv: coreir.mux": 8,
                        "conv: coreir.neq": 1, "conv: requantisation": 24}
    assert plan.macs == 16 * 16 * 16 * 9 * 16
    assert plan.ideal_cycles == plan.macs // 64 == 9216
    # per tile: 16*16*8 outputs * 144 points / 64 lanes = 4608 steps, the initiation
    # interval of the 2-tile pipeline (loads overlap the other tile's compute)
    assert plan.schedule.ii == 4608
    # the input (648 words a stream: one MEM write port) before the loop, then the 2 tiles
    # back to back (tile 1's weights load during tile 0), then the last step's depth
    assert plan.cycles == 648 + 2 * 4608 + 5 == 9869
    assert plan.occupancy == Fraction(9216, plan.cycles)
    # the memory system on Lake's models takes 649 + 9216 cycles
    assert abs(plan.cycles - (649 + 9216)) <= 5


def test_pub_halves_the_weight_mems_and_pads_rows():
    dual, pub = plan_layer(dnn.resnet_layer()), plan_layer(dnn.resnet_layer(), PUB)
    assert _buffers(pub)["weights"] == (64, 18, 2, 32)        # 2 read ports per MEM
    assert pub.mem_count == 49
    assert (dual.pad_factor, pub.pad_factor) == (1, Fraction(20, 18))
    steps = {s.name: s.work for s in pub.stages}
    assert steps["compute_conv"] == 4608 * 20 // 18 == 5120
    # the PUB's 2 write ports halve the input load: 324 cycles
    assert pub.cycles == 324 + 2 * 5120 + 5


def test_fig13_ablation_order():
    for layer in ("resnet_layer", "resnet_stride2", "gemm"):
        plan = plan_layer(dnn.LAYERS[layer]())
        occ = {k: plan.occupancy_of(s) for k, s in plan.ablation.items()}
        assert occ[(False, False)] <= occ[(True, False)] <= occ[(True, True)]
        assert plan.ablation[(False, False)].ii > plan.ablation[(True, False)].ii


def test_accumulation_distance_and_stalls():
    """A partial sum is updated once per pass over the tile's pixels: 256 steps apart for the
    ResNet layer (no stall); GEMM's 8 x 8 output tile has no pixel loop (distance 1 < the
    2-cycle read-add-write of a 1-input-lane step): every step takes 2 cycles."""
    r = plan_layer(dnn.resnet_layer())
    assert r.accumulation == {"conv": {"distance": 256, "latency": 1 + 3 + 1, "stall": 1}}
    g = plan_layer(dnn.gemm())
    assert g.accumulation == {"gemm": {"distance": 1, "latency": 2, "stall": 2}}
    steps = {s.name: s.work for s in g.stages}
    assert steps["compute_gemm"] == 32 * 2 + 1           # + the last pass's output stretch
    assert g.occupancy < Fraction(1, 2) < r.occupancy


def test_gemm_and_mobilenet_lanes():
    g = plan_layer(dnn.gemm())                     # 8 x 8 output tile, k in time
    (red,) = g.reductions
    assert (red.lanes_out, red.lanes_in, red.tiles) == (64, 1, 4)
    assert _buffers(g)["acc_gemm"] == (64, 1, 1, 64)
    assert _buffers(g)["first_gemm"] == (1, 32, 1, 1)
    assert g.multipliers == 64 and g.macs == 16 * 16 * 32
    m = plan_layer(dnn.mobilenet_layer())
    dw, pw = m.reductions
    assert (dw.func, dw.lanes_out, dw.lanes_in) == ("dw_conv", 8, 1)
    assert (pw.func, pw.lanes_out, pw.lanes_in) == ("pw_conv", 8, 8)
    names = [s.name for s in m.stages]
    assert names.index("compute_dw_conv") < names.index("compute_pw_conv")
    # the depthwise stage (8 MACs per cycle) dominates: the 72 multipliers are busy under a
    # quarter of the time
    assert m.occupancy == Fraction(m.macs, 72 * m.cycles) < Fraction(1, 4)


def test_channels_and_blocks_scale():
    small = plan_layer(dnn.resnet_layer(10, 10, 8, 8, 4, 4))
    assert _buffers(small) == {"weights": (16, 18, 2, 16), "input": (4, 200, 2, 4),
                               "acc_conv": (4, 64, 1, 4), "first_conv": (1, 18, 1, 1)}
    assert small.pe_count == 16 + 16 + 4 + 1 + 12
    big = plan_layer(dnn.resnet_layer(34, 34, 32, 32), DEFAULT_32X16)
    # 32*34*34 / 8 = 4624 words a stream, 2 copies: 5 chained MEMs per input stream
    assert _buffers(big)["input"] == (8, 4624, 2, 40)


def test_refusals():
    with pytest.raises(MappingError, match="needs 577 PEs, design default has 360"):
        plan_layer(dnn.resnet_layer(18, 18, 16, 16, 16, 16))
    tiny = Resources("tiny", 400, 20, 8, 2048)
    with pytest.raises(MappingError, match="needs 81 MEM tiles, design tiny has 20"):
        plan_layer(dnn.resnet_layer(), tiny)
    with pytest.raises(MappingError, match="no reduction"):
        reductions(build_app("pointwise"))
    with pytest.raises(MappingError, match="is a DNN layer"):
        build_app("resnet_layer")


def test_cli_layer_and_bad_input():
    r = subprocess.run([CGRA, "layer", "resnet_stride2"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "numpy and Halide agree bit for bit" in r.stdout
    assert "81 MEM of 120" in r.stdout and "ideal 2304" in r.stdout
    r = subprocess.run([CGRA, "layer", "resnet_layer", "--channels", "12"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "error: resnet_layer: c_in = 12 channels is not a multiple of the block 8; choose a "
        "block that divides it"]
    r = subprocess.run([CGRA, "layer", "alexnet"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "unknown layer 'alexnet'" in r.stderr
    r = subprocess.run([CGRA, "layer", "mobilenet_layer", "--size", "6", "--channels", "4",
                        "--block", "2", "--memories"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    # depthwise: 2 + 2 operand, 2 accumulation, 1 flag MEMs; pointwise: 2 intermediate +
    # 4 weight streams, 2 accumulation, 1 flag: the plan's count too
    assert "16 MEM of 120" in r.stdout
    # operand words: 2 x 72 inputs (6 x 6 x 2 channels), 2 x 18 depthwise weights, 2 x 32
    # intermediate (4 x 4 x 2), 4 x 4 pointwise weights
    assert ("on Lake MEM models (dualport_2048x16): 16 MEMs (260 operand words), 427 cycles"
            in r.stdout)
    assert "output bit-exact" in r.stdout
    # double buffers: the 72-word input streams hold one 36-word channel per half, the
    # weights one tile's per half (as many words: every moving counter has extent 2); only
    # the first 36-word share is loaded before the compute, so it ends 36 cycles earlier
    r = subprocess.run([CGRA, "layer", "mobilenet_layer", "--size", "6", "--channels", "4",
                        "--block", "2", "--memories", "--double-buffer"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert ("on Lake MEM models (dualport_2048x16): 16 MEMs (260 operand words, 8 "
            "double-buffered), 391 cycles" in r.stdout)
    assert "output bit-exact" in r.stdout
