"""The memories of DNN layers (mapper/dnn/memory.py): weights and activations streamed from
the host into Lake MEM models (one per operand stream), read back by affine address generators
as the step kernel's operands, partial sums kept in accumulation MEMs restarted by a flag MEM:
mapper.frontend.tensor bit for bit; the port programs of a small ResNet layer worked by hand; the MEM
count equals the plan's; a program that misses its cycles is caught; the refusals."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgra.errors import MappingError, SimulationError
from mapper.dnn import memory as dnn_memory, plan as dnn_plan, step as dnn_step
from mapper.frontend import tensor
from mapper.apps import dnn

SMALL = {"resnet_layer": {"width": 6, "height": 5, "c_in": 4, "c_out": 4, "block_in": 2,
                          "block_out": 2},
         "resnet_stride2": {"width": 7, "height": 7, "c_in": 4, "c_out": 4, "block_in": 2,
                            "block_out": 2},
         "gemm": {"m": 4, "n": 4, "k": 6, "tile": 2},
         "mobilenet_layer": {"width": 6, "height": 5, "c_in": 4, "c_out": 4, "block_in": 2,
                             "block_out": 2}}


@pytest.mark.parametrize("layer", sorted(SMALL))
@pytest.mark.parametrize("seed", [0, 3])
def test_lake_operand_streams_reproduce_the_golden_model(layer, seed):
    pipe = dnn.LAYERS[layer](**SMALL[layer])
    ins = dnn.layer_inputs(pipe, seed)
    got, lms = dnn_memory.simulate(pipe, ins)
    ref = tensor.evaluate(pipe, ins, all_funcs=True)
    for name in ref:
        np.testing.assert_array_equal(got[name], ref[name])
    for a, b in itertools.pairwise(lms):
        assert b.start > a.cycles                  # one reduction after the other
    assert all(lm.cycles == lm.start + lm.stall * lm.steps for lm in lms)


def test_resnet_port_programs_by_hand():
    """6x5x4 input, 2 x 2 lanes: the loop nest x(4) y(3) r.x r.y rzo(2) ko(2); an input
    stream stores its 2 channels (rzo) of the 6x5 image = 60 words, read at x + r.x,
    y + r.y; a weight stream stores r.x, r.y, rzo, ko = 36 words, held over the pixels."""
    lm = dnn_memory.map_operands(dnn.resnet_layer(**SMALL["resnet_layer"]))
    assert [(c.name, c.extent) for c in lm.counters] == [
        ("x", 4), ("y", 3), ("r.x", 3), ("r.y", 3), ("r.z/outer", 2), ("k/outer", 2)]
    assert (len(lm.mems["input"]), len(lm.mems["weights"])) == (2, 4)
    inp = lm.mems["input"][0]
    assert (inp.words, inp.gcd, inp.extents) == (60, (1, 1, 2), (6, 5, 2))
    rd = inp.programs["data_out_0"]
    assert rd["address"]["strides"] == [1, 6, 1, 6, 30, 0]
    assert rd["schedule"] == {"strides": [1, 4, 12, 36, 108, 216], "offset": 60}
    assert inp.programs["data_in_0"]["extents"] == [60]
    w = lm.mems["weights"][3]
    assert (w.words, w.extents) == (36, (3, 3, 2, 2))
    assert w.programs["data_out_0"]["address"]["strides"] == [0, 0, 1, 3, 9, 18]
    assert lm.start == 61 and lm.steps == 432 and lm.stall == 1
    f = next(g for g in dnn.resnet_layer(**SMALL["resnet_layer"]).funcs if g.name == "conv")
    acc, flag, words = dnn_memory.accumulator_programs(lm, f)
    # a partial sum per pixel (4 x 3), the same address every pass and tile; read a cycle
    # before each step, written back a cycle after it
    assert acc["data_out_0"]["address"]["strides"] == [1, 4, 0, 0, 0, 0]
    assert (acc["data_out_0"]["schedule"]["offset"], acc["data_in_0"]["schedule"]["offset"]) \
        == (60, 62)
    # the flag: 1 on the first of the 3 x 3 x 2 reduction passes
    assert flag["data_out_0"]["address"]["strides"] == [0, 0, 1, 3, 9, 0]
    assert words == [1] + [0] * 17


def test_mem_count_is_the_plans():
    for layer, kw in SMALL.items():
        pipe = dnn.LAYERS[layer](**kw)
        mems = sum(sum(len(v) for v in lm.mems.values()) + len(lm.step.out_lanes) + 1
                   for lm in dnn_memory.map_layer(pipe))
        assert mems == dnn_plan.plan_layer(pipe).mem_count


def test_intermediate_buffer_of_mobilenet():
    """The pointwise stage reads the requantised depthwise output through 2 streams (its 2
    input lanes: channels i and i + 2 of the 4x3 depthwise output); stream i is written by
    depthwise output lane i on its last pass (r.x = r.y = 2), a cycle after each step."""
    dw, pw = dnn_memory.map_layer(dnn.mobilenet_layer(**SMALL["mobilenet_layer"]))
    assert [(c.name, c.extent) for c in dw.counters] == [
        ("x", 4), ("y", 3), ("rd.x", 3), ("rd.y", 3), ("c/outer", 2)]
    om = pw.mems["depthwise"][1]
    assert (om.words, om.extents) == (24, (4, 3, 2))
    wr = om.programs["data_in_0"]
    assert wr["extents"] == [4, 3, 2]                     # x, y, c/outer of the last pass
    assert wr["address"] == {"strides": [1, 4, 12], "offset": 0}
    last_pass = dw.start + 12 * (2 + 3 * 2)               # pixels x passes before it
    assert wr["schedule"] == {"strides": [1, 4, 108], "offset": last_pass + 1}
    assert om.write_coords[:2].tolist() == [[0, 0, 1], [1, 0, 1]]   # lane 1: channel 1
    assert pw.start > dw.cycles


def test_a_stream_off_its_cycles_is_caught(monkeypatch):
    real = dnn_memory.map_layer

    def late(pipe, preset=None, *args):
        lms = real(pipe, preset, *args)
        lms[0].mems["input"][0].programs["data_out_0"]["schedule"]["offset"] += 1
        return lms
    monkeypatch.setattr(dnn_memory, "map_layer", late)
    pipe = dnn.resnet_layer(**SMALL["resnet_layer"])
    with pytest.raises(SimulationError, match="operand MEM of input stream 0"):
        dnn_memory.simulate(pipe, dnn.layer_inputs(pipe, 0))


def test_gemm_steps_stall_for_the_accumulation():
    lm = dnn_memory.map_operands(dnn.gemm(**SMALL["gemm"]))
    assert lm.stall == 2                       # distance 1 < the 2-cycle read-add-write
    assert lm.mems["a"][0].programs["data_out_0"]["schedule"]["strides"] == [2, 12, 24]


def test_refusals():
    with pytest.raises(MappingError, match="2 reductions; use map_layer"):
        dnn_memory.map_operands(dnn.mobilenet_layer())
    with pytest.raises(MappingError, match=r"a stream of input needs 4608 words \(2304 per "
                                           r"iteration of r.z/outer\), more than one MEM "
                                           r"\(2048\) holds, and no split"):
        dnn_memory.map_operands(dnn.resnet_layer(48, 48, 16, 16))
    with pytest.raises(MappingError, match=r"6 loop counters \(x, y, r.x, r.y, r.z/outer, "
                                           r"k/outer\) but the MEM's address generators "
                                           r"have 5 dimensions"):
        dnn_memory.map_operands(dnn.resnet_layer(8, 8, 8, 8, 2, 2), {"max_dimensionality": 5})


@settings(max_examples=15, deadline=None, derandomize=True)
@given(w=st.integers(4, 7), h=st.integers(4, 6), c_in=st.sampled_from([2, 4]),
       c_out=st.sampled_from([2, 4]), bi=st.sampled_from([1, 2]), bo=st.sampled_from([1, 2]),
       stride=st.sampled_from([1, 2]), seed=st.integers(0, 99))
def test_random_convolutions_on_lake_models(w, h, c_in, c_out, bi, bo, stride, seed):
    """Any small convolution (size, channels, lanes, stride): the memory system on Lake's
    models, the step-by-step kernel and the golden model agree."""
    build = dnn.resnet_layer if stride == 1 else dnn.resnet_stride2
    pipe = build(w, h, c_in, c_out, bi, bo)
    ins = dnn.layer_inputs(pipe, seed)
    ref = tensor.evaluate(pipe, ins, all_funcs=True)
    got, _ = dnn_memory.simulate(pipe, ins)
    steps = dnn_step.run_steps(pipe, ins)
    for name in ref:
        np.testing.assert_array_equal(got[name], ref[name])
        np.testing.assert_array_equal(steps[name], ref[name])


def test_streams_over_several_mems_by_hand():
    """ResNet 34x34x32 at 8 x 8 lanes: an input stream's 4 channels (rzo) of 34 x 34 = 4624
    words exceed a MEM; one channel (1156) fits, so 4 banks (bank b holds rzo = b, read only
    on its 2304-step iterations); double-buffered, both halves (2312) do not fit either: a
    ping-pong pair of 1156 words, MEM rzo mod 2 reloaded during the iteration before."""
    pipe = dnn.resnet_layer(34, 34, 32, 32)
    (lm,) = dnn_memory.map_layer(pipe)
    ins = lm.mems["input"]
    assert len(ins) == 8 * 4 and {(om.bank, om.banks, om.words) for om in ins} == {
        (b, 4, 1156) for b in range(4)}
    assert all(om.words == 36 * 4 for om in lm.mems["weights"])   # 3x3x4 per tile, 4 tiles
    period = 32 * 32 * 9
    b2 = next(om for om in ins if om.stream.index == 0 and om.bank == 2)
    r = b2.programs["data_out_0"]
    assert r["extents"] == [32, 32, 3, 3, 4]           # rzo taken by the bank; 4 tiles
    assert r["address"]["strides"] == [1, 34, 1, 34, 0]
    assert r["schedule"]["strides"] == [1, 32, 1024, 3072, 4 * period]
    assert r["schedule"]["offset"] == lm.start - 1 + 2 * period
    (lm,) = dnn_memory.map_layer(pipe, double_buffer=True)
    ins = lm.mems["input"]
    assert {(om.bank, om.banks, om.words, om.double.share) for om in ins} == {
        (b, 2, 1156, 1156) for b in range(2)}
    w = next(om for om in ins if om.bank == 1).programs["data_in_0"]
    # every other iteration of rzo (2 of 4 per tile) over the 4 tiles: 8 shares, one per
    # 2 periods (the rzo and tile dimensions merged)
    assert w["extents"] == [1156, 8] and w["address"]["strides"] == [1, 0]
    assert w["schedule"]["strides"] == [1, 2 * period]
    assert w["schedule"]["offset"] == lm.start - 1 - 1156 + period


@pytest.mark.parametrize("layer", ["resnet_layer", "mobilenet_layer"])
@pytest.mark.parametrize("double", [False, True], ids=["whole", "double"])
def test_banked_streams_reproduce_the_golden_model(layer, double):
    """MEMs of 40 words: the 60-word input streams (6 x 5 x 2 channels) go over two banks
    (a ping-pong pair with double buffers), merged per step; bit-exact on Lake's models."""
    pipe = dnn.LAYERS[layer](**SMALL[layer])
    ins = dnn.layer_inputs(pipe, 2)
    got, lms = dnn_memory.simulate(pipe, ins, double_buffer=double, capacity=40)
    banked = [om for om in lms[0].mems["input"]]
    assert sorted((om.stream.index, om.bank, om.banks, om.words) for om in banked) == [
        (i, b, 2, 30) for i in range(2) for b in range(2)]
    assert all((om.double is not None) == double for om in banked)
    assert all(om.words <= 40 for lm in lms for lst in lm.mems.values() for om in lst)
    ref = tensor.evaluate(pipe, ins, all_funcs=True)
    for name in ref:
        np.testing.assert_array_equal(got[name], ref[name])


@settings(max_examples=25, deadline=None, derandomize=True)
@given(w=st.integers(4, 7), h=st.integers(4, 6), c_in=st.sampled_from([2, 4, 6]),
       c_out=st.sampled_from([2, 4]), bi=st.sampled_from([1, 2]), bo=st.sampled_from([1, 2]),
       stride=st.sampled_from([1, 2]), double=st.booleans(), loop=st.sampled_from([None, 6]),
       capacity=st.integers(8, 200), seed=st.integers(0, 99))
def test_random_layouts_on_lake_models(w, h, c_in, c_out, bi, bo, stride, double, loop,
                                       capacity, seed):
    """Any small convolution with any MEM capacity, double buffers or not, the Lake-model
    or the array's loop budget: every MEM within the capacity, a stream's banks partition
    its reads, bit-exact on Lake's models, or one typed refusal naming the stream when no
    split fits."""
    build = dnn.resnet_layer if stride == 1 else dnn.resnet_stride2
    pipe = build(w, h, c_in, c_out, bi, bo)
    ins = dnn.layer_inputs(pipe, seed)
    try:
        got, lms = dnn_memory.simulate(pipe, ins, loop_cycles=loop, double_buffer=double,
                                       capacity=capacity)
    except MappingError as e:
        msg = str(e)
        assert "\n" not in msg and "more than one MEM" in msg and f"({capacity})" in msg
        return
    oms = [om for lm in lms for lst in lm.mems.values() for om in lst]
    assert all(om.words <= capacity for om in oms)
    assert all(0 <= om.bank < om.banks for om in oms)
    assert double or all(om.double is None for om in oms)
    for lm in lms:                      # a stream's banks: one of each, as many as it says
        for lst in lm.mems.values():
            for idx in {om.stream.index for om in lst}:
                banks = sorted(om.bank for om in lst if om.stream.index == idx)
                assert banks == list(range(len(banks)))
    ref = tensor.evaluate(pipe, ins, all_funcs=True)
    for name in ref:
        np.testing.assert_array_equal(got[name], ref[name])


# ------------------------------------------------------------------ wide fetch (the PUB)
#: sizes whose every pass updates at least a wide word of sums (4 x 4 output pixels)
PUB = {layer: dict(args, **grow) for layer, args, grow in [
    ("resnet_layer", SMALL["resnet_layer"], {"height": 6}),
    ("resnet_stride2", SMALL["resnet_stride2"], {"width": 9, "height": 9}),
    ("gemm", SMALL["gemm"], {"m": 8, "n": 8}),
    ("mobilenet_layer", SMALL["mobilenet_layer"], {"height": 6})]}
PUB_FACTS = {"capacity": 2048, "max_dimensionality": 6, "read_latency": 1, "fetch_width": 4}


@pytest.mark.parametrize("layer", sorted(PUB))
@pytest.mark.parametrize("double", [False, True], ids=["whole", "double"])
def test_pub_layouts_reproduce_the_golden_model(layer, double):
    """Every layer on Lake's PUB model (4-word wide fetch, pub_512x64), bit-exact: rows
    padded to whole wide words, a shift bank per r.x for the activations read at x + r.x,
    reads 7 cycles (fetch_slack) later than on the dual-port MEM, which runs the same
    schedule otherwise."""
    pipe = dnn.LAYERS[layer](**PUB[layer])
    ins = dnn.layer_inputs(pipe, 1)
    got, lms = dnn_memory.simulate(pipe, ins, "pub_512x64", loop_cycles=6,
                                   double_buffer=double)
    ref = tensor.evaluate(pipe, ins, all_funcs=True)
    for name in ref:
        np.testing.assert_array_equal(got[name], ref[name])
    _, dual = dnn_memory.simulate(pipe, ins, loop_cycles=6, double_buffer=double)
    assert dnn_memory.fetch_slack(4) == 7
    for lm, dp in zip(lms, dual, strict=True):
        assert lm.stall == dp.stall and lm.counters == dp.counters
        assert lm.start >= dp.start + 7
        for om in (om for lst in lm.mems.values() for om in lst):
            # rows and every half or bank copy start on a wide word
            assert om.pitch % 4 == 0 and om.words <= 2048
            assert om.copies == 1 or (om.stored or om.words) % 4 == 0
    if layer.startswith("resnet"):
        lm = lms[0]
        if layer == "resnet_layer" or not double:
            assert lm.start == dual[0].start + 7
        else:      # stride-2 reads fetch a wide word every 2 reads: no SRAM slot for refills
            assert all(om.double is None for om in lm.mems["input"])
            assert lm.start == 9 * 9 * 2 + 1 + 7
        for idx in range(2):                     # r.x = 0, 1, 2: one shift bank each
            banks = [om for om in lm.mems["input"] if om.stream.index == idx]
            assert [(om.bank, om.skip, om.load_bank) for om in banks] == [
                (0, 0, None), (1, 1, 0), (2, 2, 0)]
        assert lm.mem_count == dual[0].mem_count + 4


def test_pub_port_programs_by_hand():
    """resnet 6x6x4, 2 x 2 lanes, whole boxes on a 4-word PUB. An input stream's box is
    6 x 6 x 2 channels; its 6-word rows are stored at a pitch of 8 (96 words for 72). Shift
    bank a (r.x = a) writes words a..5 of every host row (12 rows, one word per cycle,
    from cycle a) and reads x, y, r.y, rzo, ko with r.x dropped: strides 1, 8 (the pitch),
    8, 48 (8 x 6), 0, on r.x = a's steps (offset + 16 a). The first step waits for the
    last of the 72 host words + read latency + the PUB's 7 cycles: 80. Weights: 36 words
    read as one run per pixel pass (16 repeats, then stride 1)."""
    pipe = dnn.LAYERS["resnet_layer"](**PUB["resnet_layer"])
    lm = dnn_memory.map_layer(pipe, PUB_FACTS)[0]
    assert [(c.name, c.extent) for c in lm.counters] == [
        ("x", 4), ("y", 4), ("r.x", 3), ("r.y", 3), ("r.z/outer", 2), ("k/outer", 2)]
    assert lm.start == 72 + 1 + 7
    for a in range(3):
        om = lm.mems["input"][a]
        assert (om.pitch, om.skip, om.words, om.host_words) == (8, a, 96, 72)
        w, r = om.programs["data_in_0"], om.programs["data_out_0"]
        assert (w["extents"], w["address"]["strides"], w["schedule"]["strides"],
                w["schedule"]["offset"]) == ([6 - a, 12], [1, 8], [1, 6], a)
        assert (r["extents"], r["address"]["strides"], r["schedule"]["strides"],
                r["schedule"]["offset"]) == ([4, 4, 3, 2, 2], [1, 8, 8, 48, 0],
                                             [1, 4, 48, 144, 288], 79 + 16 * a)
        # the stored words: the box less a's first words per row, at the padded pitch
        addr = om.addresses()
        coords = om.box_coords()
        assert len(addr) == 72 - 12 * a and addr.max() < 96
        assert np.array_equal(addr, (coords[:, 0] - a) + 8 * coords[:, 1] +
                              48 * ((coords[:, 2] - om.base[2]) // om.gcd[2]))
    wt = lm.mems["weights"][0].programs["data_out_0"]
    assert (wt["extents"], wt["address"]["strides"]) == ([16, 36], [0, 1])


def test_pub_double_buffer_pads_each_share():
    """With double buffers the weight share of 18 words (3 x 3 x 2 channels) is padded to
    20, a whole number of wide words, so each half starts on a wide word."""
    pipe = dnn.LAYERS["resnet_layer"](**PUB["resnet_layer"])
    lm = dnn_memory.map_layer(pipe, PUB_FACTS, double_buffer=True)[0]
    om = lm.mems["weights"][0]
    assert (om.double.share, om.words) == (18, 40)
    w = om.programs["data_in_0"]
    assert (w["extents"], w["address"]["strides"]) == ([18, 2], [1, 20])


def test_pub_refusals():
    """GEMM's output tile without loop perfection updates one sum per pass, less than a
    wide word; a stride-3 convolution's reads cannot be whole wide words: one line each,
    while the dual-port MEM maps both."""
    gemm = dnn.LAYERS["gemm"](**PUB["gemm"])
    with pytest.raises(MappingError, match=r"^Func gemm: a pass updates 1 partial sums per "
                                           r"lane, not a multiple of the PUB's 4-word wide word"):
        dnn_memory.map_layer(gemm, PUB_FACTS)
    dnn_memory.map_layer(gemm, dict(PUB_FACTS, fetch_width=1))
    conv3 = dnn._conv("conv3", 13, 13, 2, 2, 3, 1, 1, 6)     # 4 x 4 output pixels
    with pytest.raises(MappingError, match=r"^Func conv: a stream of input: its reads are "
                                           r"not whole or aligned 4-word wide words"):
        dnn_memory.map_layer(conv3, PUB_FACTS)
    ins = dnn.layer_inputs(conv3, 0)
    got, _ = dnn_memory.simulate(conv3, ins)
    want = tensor.evaluate(conv3, ins, all_funcs=True)["conv3"]
    np.testing.assert_array_equal(got["conv3"], want)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(w=st.integers(5, 10), h=st.integers(5, 8), c_in=st.sampled_from([2, 4]),
       c_out=st.sampled_from([2, 4]), bi=st.sampled_from([1, 2]), bo=st.sampled_from([1, 2]),
       stride=st.sampled_from([1, 2]), double=st.booleans(), loop=st.sampled_from([None, 6]),
       seed=st.integers(0, 99))
def test_random_convolutions_on_pub_models(w, h, c_in, c_out, bi, bo, stride, double, loop,
                                           seed):
    """Any small convolution on Lake's PUB model: bit-exact with every row pitch and copy
    on whole wide words and one shift bank per r.x for each input stream, or one typed
    line when a pass (the output pixels) is not a whole number of wide words."""
    from cgra.errors import ConfigError

    build = dnn.resnet_layer if stride == 1 else dnn.resnet_stride2
    pipe = build(w, h, c_in, c_out, bi, bo)
    ins = dnn.layer_inputs(pipe, seed)
    try:
        got, lms = dnn_memory.simulate(pipe, ins, "pub_512x64", loop_cycles=loop,
                                       double_buffer=double)
    except (MappingError, ConfigError) as e:
        msg = str(e)
        assert "\n" not in msg and "not a multiple of the PUB's 4-word wide word" in msg, msg
        assert ((w - 3) // stride + 1) * ((h - 3) // stride + 1) % 4   # the output pixels
        return
    (lm,) = lms
    for idx in range(bi):
        assert sorted(om.skip for om in lm.mems["input"] if om.stream.index == idx) == [
            0, 1, 2]
    for om in (om for lst in lm.mems.values() for om in lst):
        assert om.pitch % 4 == 0 and (om.copies == 1 or om.stored % 4 == 0)
    ref = tensor.evaluate(pipe, ins, all_funcs=True)
    for name in ref:
        np.testing.assert_array_equal(got[name], ref[name])
