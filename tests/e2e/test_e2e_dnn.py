"""Issue 15's acceptance on the default 32x16 array: the four DNN layers (resnet_layer,
resnet_stride2, mobilenet_layer, gemm), compiled by mapper.dnn.array (operand MEMs loaded
through the IO tiles, accumulation MEMs in a read-add-write loop the pipelining pass keeps
inside its budget, a first-pass flag MEM, the requantisation on PEs), run on the generated
RTL in Verilator and match numpy (mapper.frontend.tensor) and real Halide bit for bit; the figures the
run reports (cycles, ideal cycles, occupancy, MEMs by role) are checked against their
definitions; double-buffered operand MEMs (the default) against whole boxes. Sizes are CI's (2 x 2 channel blocks); the paper's 8 x 8 blocking is in
bench/bench_dnn.py. With no option (issue 41) each layer takes the largest block that fits
the design: checked for all four at the map stage, and by one full `cgra run gemm` (its 8 x 8
tile does not fit the 32 IO tiles; 4 x 4 is chosen).

The Verilator runs on the 32x16 are marked ``bench``: `make bench` runs them, `make test`
does not (CONVENTIONS: large runs go in bench/; the 32x16 model build alone is ~100 s of CI's
30 minutes). CI keeps the mapping of all four layers at the default blocking, the blocking
on the 8x8, the refusals, and a DNN layer bit-exact in Verilator on the 8x8 PUB design
(tests/e2e/test_e2e_dnn_pub.py)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

#: layer -> (side, channels, block): the CI sizes
SMALL = {"resnet_layer": (6, 4, 2), "resnet_stride2": (7, 4, 2), "mobilenet_layer": (6, 4, 2),
         "gemm": (4, 8, 2)}
#: MEMs by role at those sizes: operand streams (2 input + 4 weight for the 2 x 2 blocked
#: convolution), one accumulation MEM per output lane, one flag MEM per reduction, the
#: depthwise -> pointwise intermediate buffers (one per pointwise input lane)
MEMS = {"resnet_layer": {"operand": 6, "accumulation": 2, "flag": 1},
        "resnet_stride2": {"operand": 6, "accumulation": 2, "flag": 1},
        "mobilenet_layer": {"operand": 8, "accumulation": 4, "flag": 2, "intermediate": 2},
        "gemm": {"operand": 4, "accumulation": 4, "flag": 1}}


def _run(design, out, layer, seed=0, image="camera", tensor_seed=0, fmax=None, gate=False,
         **kw):
    from mapper.params import AppParams, FlowParams, RunParams, SimOptions
    from mapper.flow import run_app
    from mapper.backend.pipeline import PipelineParams
    from mapper.backend.place import PlaceParams

    side, channels, block = SMALL[layer]
    pipe = PipelineParams() if fmax is None else PipelineParams(
        register_pe_inputs=True, target_period_ps=1e6 / fmax)
    return run_app(RunParams(AppParams(layer, side, side, channels=channels, block=block, **kw),
                             design, out, FlowParams(place=PlaceParams(seed=seed),
                                                     pipeline=pipe, power_gate=gate),
                             SimOptions(image, tensor_seed=tensor_seed)))


@pytest.mark.bench
@pytest.mark.parametrize("layer", sorted(SMALL))
def test_layer_runs_bit_exact_on_verilator(default_design, default_harness, tmp_path,
                                           assert_gated, layer):
    from mapper.frontend import tensor
    from mapper.apps.dnn import build_layer

    run = _run(default_design, tmp_path, layer, fmax=900, gate=True)
    rep = run.report                 # run_app raised unless bit-exact against both goldens
    assert rep["match"] == {"numpy": True, "halide": True}
    assert_gated(run, 250)           # of 512: bit-exact with every unused tile gated
    side, channels, block = SMALL[layer]
    pipe = build_layer(layer, side, channels, block)
    want = tensor.evaluate(pipe, run.inputs)[pipe.output.name]
    np.testing.assert_array_equal(run.output, want)
    assert run.output.any()           # not a trivially zero layer
    lay = rep["layer"]
    assert lay["mems"] == MEMS[layer]
    assert rep["resources"]["used"]["m"] == sum(MEMS[layer].values())
    assert lay["macs"] == sum(tensor.macs(pipe).values())
    assert lay["ideal_cycles"] == -(-lay["macs"] // lay["multipliers"])
    assert lay["cycles"] > lay["compute_cycles"] >= lay["ideal_cycles"]
    assert lay["occupancy"] == round(lay["macs"] / (lay["multipliers"] * lay["cycles"]), 4)
    # the loads come first: every reduction starts after the longest IO stream + read latency
    assert lay["compute_start"] == lay["load_cycles"] + 1
    assert 0 < lay["loop_latency"] <= lay["loop_budget"]
    assert rep["timing"]["fmax_mhz"] > 300
    on_disk = json.loads((tmp_path / "run_report.json").read_text())
    assert on_disk["layer"] == lay and on_disk["kind"] == "dnn"
    assert rep["bitstream_proof"]["proved"] is True


@pytest.mark.bench
@pytest.mark.parametrize("double", [True, False], ids=["double", "whole"])
def test_resnet_known_answer_figures(default_design, default_harness, tmp_path, double):
    """resnet_layer 6x6x4 -> 4x4x4 at 2 x 2 lanes: 2304 MACs on 4 multipliers (ideal 576
    cycles); the 16 pixels of a tile are a pass, so the schedule runs one step a cycle (stall
    1) and a partial sum is read again 16 cycles after its read: a 15-cycle loop budget.
    Loads: whole boxes (``--no-double-buffer``): the 72-word input streams (6 x 6 x 2
    channels) are the longest, so compute starts at cycle 73; double buffers (the default):
    only the first channel's 36 words come before the compute (start 37), the 6 operand MEMs
    reload behind it. The 576 steps follow; the last output leaves the array after the
    pipelining latency."""
    run = _run(default_design, tmp_path, "resnet_layer", image="random",
               double_buffer=double)
    lay = run.report["layer"]
    assert (lay["macs"], lay["multipliers"], lay["ideal_cycles"]) == (2304, 4, 576)
    assert (lay["stall"], lay["loop_budget"]) == ([1], 15)
    load = 36 if double else 72
    assert (lay["load_cycles"], lay["compute_start"]) == (load, load + 1)
    assert lay["double_buffers"] == (6 if double else 0)
    assert lay["cycles"] - (load + 1 + 576) == max(run.flow.pipelined.output_latency.values())
    assert run.report["match"] == {"numpy": True, "halide": True}


@pytest.mark.bench
def test_input_streams_over_two_mems_each(default_design, default_harness, tmp_path):
    """resnet_layer 33x33x4 at 2 x 2 lanes: an input stream's two 1089-word channel planes
    exceed one MEM, so each stream is a ping-pong pair of MEMs (one plane each, reloaded per
    tile) merged in the step kernel by a mux on the second MEM's valid_out: bit-exact on the
    RTL, 4 + 4 operand MEMs double-buffered, one step a cycle (34596 ideal cycles)."""
    from mapper.params import AppParams, RunParams, SimOptions
    from mapper.flow import run_app

    run = run_app(RunParams(AppParams("resnet_layer", 33, 33, channels=4, block=2),
                            default_design, tmp_path, sim=SimOptions("random")))
    lay = run.report["layer"]
    assert run.report["match"] == {"numpy": True, "halide": True}
    assert lay["mems"] == {"operand": 8, "accumulation": 2, "flag": 1}
    assert lay["double_buffers"] == 8 and lay["stall"] == [1]
    assert (lay["ideal_cycles"], lay["load_cycles"]) == (34596, 1089)
    assert lay["compute_cycles"] - lay["ideal_cycles"] == max(
        run.flow.pipelined.output_latency.values())
    assert lay["operand_words"] == 4 * 1089 + 4 * 2 * 18


@pytest.mark.bench
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_resnet_seed_sweep(default_design, default_harness, tmp_path, seed):
    """Other placements and other tensors (weights and activations from the seed, the first
    input random too) stay bit-exact."""
    run = _run(default_design, tmp_path, "resnet_layer", seed=seed, image="random",
               tensor_seed=seed)
    assert run.report["match"] == {"numpy": True, "halide": True}
    assert run.report["seed"] >= seed


@pytest.mark.bench
def test_gemm_loop_budget_trades_stall_for_frequency(default_design, default_harness,
                                                     tmp_path):
    """gemm's 2 x 2 output tile has no pixel loop: its 4 tiles run inside the reduction, a
    partial sum is read again 4 steps after its read, so the stall is ceil((1 + loop_cycles)
    / 4); a smaller budget runs in fewer cycles, and every loop stays within its budget,
    bit-exact."""
    fast = _run(default_design, tmp_path / "fast", "gemm", loop_cycles=4)
    slow = _run(default_design, tmp_path / "slow", "gemm", loop_cycles=12)
    assert fast.report["layer"]["stall"] == [2] and slow.report["layer"]["stall"] == [4]
    assert fast.report["layer"]["cycles"] < slow.report["layer"]["cycles"]
    for r in (fast, slow):
        assert r.report["layer"]["loop_latency"] <= r.report["layer"]["loop_budget"]


def test_a_loop_over_its_budget_is_refused(default_design, tmp_path):
    """The pipelining pass measures every accumulation loop (read word to the write of its
    sum) against its MEM's budget: the same placed and routed design with a budget one cycle
    short of what compute pipelining needs is refused with a one-line BalanceError naming the
    MEM (the flow then places again), and the budget it had is met exactly or better."""
    from mapper.collateral import load_collateral
    from mapper.dnn.array import loop_latencies
    from mapper.params import AppParams, RunParams
    from mapper.stages import load_packed, load_placement, load_routing
    from mapper.flow import run_stages
    from mapper.backend.pipeline import BalanceError, PipelineParams, pipeline

    side, channels, block = SMALL["resnet_layer"]
    run_stages(RunParams(AppParams("resnet_layer", side, side, channels=channels,
                                   block=block), default_design, tmp_path), until="route")
    coll = load_collateral(default_design)
    packed, placement = load_packed(tmp_path, coll), load_placement(tmp_path, coll)
    routing = load_routing(tmp_path, coll)
    params = PipelineParams(register_pe_inputs=True)
    loops = loop_latencies(pipeline(packed, placement, routing, coll, params).packed)
    assert all(0 < lat <= budget == 15 for lat, budget in loops.values())
    acc, (lat, _budget) = max(loops.items(), key=lambda kv: kv[1][0])
    for name in loops:
        packed.instances[name].config["accumulator"]["loop_cycles"] = lat - 1
    with pytest.raises(BalanceError) as err:
        pipeline(packed, placement, routing, coll, params)
    msg = str(err.value)
    assert "\n" not in msg and "read-add-write loop of accumulation MEM acc_conv_o" in msg
    assert f"its schedule allows {lat - 1}" in msg and "--loop-cycles" in msg


#: layer -> (block, output lanes, input lanes, PEs, MEMs) chosen with no option on the default
#: 32x16 array (32 IO tiles, 360 PEs, 120 MEMs): the paper's 8 x 8 blocking for the
#: convolutions; GEMM's 8 x 8 tile needs 64 output IO tiles + 1 load, so its 4 x 4 tile
DEFAULT_BLOCKING = {"resnet_layer": (8, 8, 8, 161, 81), "resnet_stride2": (8, 8, 8, 161, 81),
                    "mobilenet_layer": (8, 8, 8, 210, 106), "gemm": (4, 16, 1, 49, 25)}


@pytest.fixture(scope="module")
def default_coll(default_design):
    from mapper.collateral import load_collateral

    return load_collateral(default_design)


@pytest.mark.parametrize("layer", sorted(DEFAULT_BLOCKING))
def test_default_blocking_fits_the_default_design(default_coll, layer):
    """``make app APP=<layer>`` (no option): the map stage picks the largest block that fits
    the design's IO, PE and MEM tiles and records it (app.json ``blocking``); planning only,
    the full run of gemm is test_cgra_run_default_gemm."""
    from mapper.apps.dnn import DEFAULT_SIZE
    from mapper.backend.place import site_capacity
    from mapper.flow import map_app
    from mapper.params import AppParams

    coll = default_coll
    side = DEFAULT_SIZE[layer]
    res = map_app(AppParams(layer, side, side), coll)
    block, out_lanes, in_lanes, pes, mems = DEFAULT_BLOCKING[layer]
    b = res.blocking
    assert (b["block"], b["out_lanes"], b["in_lanes"], b["chosen"]) == (block, out_lanes,
                                                                       in_lanes, True)
    c = res.counts()
    assert (c["pe"], c["mem"]) == (pes, mems)
    caps = {tag: sum(site_capacity(coll).get((tag,), {}).values()) for tag in "pmI"}
    assert c["pe"] <= caps["p"] and c["mem"] <= caps["m"] and c["io"] <= caps["I"] == 32
    if layer == "gemm":
        assert list(b["refused"]) == ["8"]
        assert "64 output lanes and a load stream need 65 IO tiles, the design has 32" in \
            b["refused"]["8"]
        assert b["summary"].startswith("block 4 (16 output x 1 input lanes), chosen: block 8 "
                                       "refused (gemm: 64 output lanes")
    else:
        assert b["refused"] == {} and b["summary"] == \
            "block 8 (8 output x 8 input lanes), chosen"


def test_blocking_on_the_small_design(small_design):
    """On the 8x8 array (8 IO tiles, 42 PEs, 14 MEMs) the ResNet layer's 8 x 8 blocking needs
    9 IO tiles and its 4 x 4 one 49 PEs: 2 x 2 is chosen; the MobileNet block fits at no
    block (one line naming every block's reason); a given block that cannot fit names the one
    that does."""
    from cgra.errors import MappingError
    from mapper.collateral import load_collateral
    from mapper.flow import map_app
    from mapper.params import AppParams

    coll = load_collateral(small_design)
    b = map_app(AppParams("resnet_layer", 18, 18), coll).blocking
    assert (b["block"], list(b["refused"])) == (2, ["8", "4"])
    assert "need 9 IO tiles, the design has 8" in b["refused"]["8"]
    assert "needs 49 PE tiles but design small (8x8) has 42" in b["refused"]["4"]
    with pytest.raises(MappingError) as err:
        map_app(AppParams("mobilenet_layer", 18, 18), coll)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("mobilenet_layer: no block fits design small")
    assert all(f"block {k}: " in msg for k in (8, 4, 2, 1))
    with pytest.raises(MappingError, match="need 17 IO tiles, the design has 8; .*; block 2 "
                                           "fits design small \\(--block 2;"):
        map_app(AppParams("gemm", 16, 16, block=4), coll)


CGRA = str(Path(sys.executable).parent / "cgra")


@pytest.mark.bench
def test_cgra_run_default_gemm(default_design, default_harness, tmp_path):
    """`cgra run gemm` with no option on the default array (issue 41: its 8 x 8 tile needed
    65 IO tiles): 16x16 (k 32) at the 4 x 4 tile, bit-exact, the blocking printed."""
    r = subprocess.run([CGRA, "run", "gemm", "--design", str(default_design), "--out",
                        str(tmp_path / "g")], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    assert "b 16x32, a 32x16 -> 16x16 matches numpy and Halide bit-exactly" in r.stdout
    assert "blocking: block 4 (16 output x 1 input lanes), chosen: block 8 refused (gemm: " \
           "64 output lanes and a load stream need 65 IO tiles, the design has 32)" in r.stdout
    assert "ideal 512 (8192 MACs / 16 multipliers); occupancy 0." in r.stdout
    rep = json.loads((tmp_path / "g" / "run_report.json").read_text())
    assert rep["layer"]["blocking"]["block"] == 4 and rep["match"] == {"numpy": True,
                                                                       "halide": True}


def test_cgra_refuses_bad_blocks(default_design, tmp_path):
    """A given block that cannot fit the default array is one line naming the block that
    does, and a block that does not divide the channels one line too; nothing written (no
    model is built: both are refused before mapping ends)."""
    r = subprocess.run([CGRA, "map", "gemm", "--design", str(default_design), "--block", "8",
                        "--out", str(tmp_path / "g8")], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 2
    assert [ln for ln in r.stderr.splitlines() if ln.startswith("error:")] == [
        "error: gemm: 64 output lanes and a load stream need 65 IO tiles, the design has 32; "
        "use fewer output lanes (a smaller block) or a design with more IO tiles; block 4 "
        "fits design default (--block 4; without --block the largest block that fits is "
        "chosen)"]
    assert not (tmp_path / "g8").exists()
    r = subprocess.run([CGRA, "run", "resnet_layer", "--design", str(default_design),
                        "--size", "6", "--channels", "4", "--block", "3", "--out",
                        str(tmp_path / "bad")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 2
    assert [ln for ln in r.stderr.splitlines() if ln.startswith("error:")] == [
        "error: resnet_layer: c_in = 4 channels is not a multiple of the block 3; choose a "
        "block that divides it"]
    assert not (tmp_path / "bad").exists()          # nothing written
