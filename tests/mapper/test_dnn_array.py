"""The array netlist of DNN layers (mapper/dnn/array.py): its MEMs by role, the load phase
through the IO tiles (shared when MEMs outnumber the free IO tiles: back to back, each MEM
once, compute after the longest stream), the accumulation MEMs' loop budget and nominal
programs, the output programs (the last pass only), the Lake-model equivalence of the
nominal schedule, the IO-load assignment as a property, and the refusals."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgra.errors import MappingError
from mapper.dnn import array as dnn_array, memory as dnn_memory
from mapper.frontend import tensor
from mapper.apps import dnn
from mapper.frontend.dsl import Func, Input, Int16, Pipeline, RDom, Var, cast
from lake.collateral import MemInfo
from mapper.mapping.streams import program_events

#: the default design's MEM facts (mem.json of configs/default.toml)
MEM = MemInfo.of_preset("dualport_2048x16")


def _resnet():
    return dnn.build_layer("resnet_layer", 6, 4, 2)


def _roles(ln):
    out: dict[str, int] = {}
    for i in ln.netlist.instances.values():
        if i.kind == "mem":
            out[i.config["role"]] = out.get(i.config["role"], 0) + 1
    return out


@pytest.mark.parametrize("double", [False, True], ids=["whole", "double"])
def test_resnet_netlist_known_answer(double):
    ln = dnn_array.layer_netlist(_resnet(), MEM, 32, double_buffer=double)
    c = ln.netlist.counts()
    # 2 input + 4 weight streams and the flag, one IO tile each; 2 output lanes
    assert (c["io_in"], c["io_out"], c["mem"], c["kernel"]) == (7, 2, 9, 3)
    assert _roles(ln) == {"operand": 6, "accumulation": 2, "flag": 1}
    # an input stream holds 6 x 6 pixels x 2 channels (rzo), a double buffer one channel
    # per half and only the first is loaded before the compute
    load = 36 if double else 72
    assert ln.load_cycles == load
    (lm,) = ln.lms
    start = load + 1
    assert (lm.start, lm.stall, lm.distance, lm.steps) == (start, 1, 16, 576)
    acc = ln.netlist.instances["acc_conv_o0"].config
    assert acc["accumulator"]["loop_cycles"] == 15    # read again 16 cycles after its read
    # nominal: the sum of step i is written at step i's cycle, its word read a cycle before
    w, r = acc["ports"]["data_in_0"], acc["ports"]["data_out_0"]
    assert w["schedule"]["offset"] == start and r["schedule"]["offset"] == start - 1
    assert w["schedule"]["strides"] == r["schedule"]["strides"] == [1, 4, 16, 48, 144, 288]
    # outputs: the last reduction pass (r.x = r.y = 2, rzo = 1) of every pixel and tile
    prog = ln.netlist.instances["io_out_resnet_layer_o0"].config["program"]
    cyc, _ = program_events(prog)
    assert len(cyc) == 16 * 2
    assert cyc[0] == start + 2 * 16 + 2 * 48 + 144 and cyc[16] == cyc[0] + 288
    inp = ln.netlist.instances["mem_conv_input_s0"].config
    wgt = ln.netlist.instances["mem_conv_weights_s0"].config
    if not double:
        assert "double_buffer" not in inp and inp["read_slack"] == dnn_array.HOLD
        return
    # input: the outermost counter moving it is rzo (144 cycles an iteration); a channel
    # (36 words) per half, re-streamed for the second tile: 4 shares of 36 words, each
    # written in the 36 cycles before its iteration; read at x + r.x, y + r.y, half rzo
    assert inp["double_buffer"] == {"share": 36, "period": 144, "lead": 36}
    assert inp["read_slack"] == 144 + 1 - 36 - 1
    wi, ri = inp["ports"]["data_in_0"], inp["ports"]["data_out_0"]
    assert wi["extents"] == [36, 2, 2] and wi["address"]["strides"] == [1, 36, 0]
    assert wi["schedule"] == {"strides": [1, 144, 288], "offset": 0}
    assert ri["extents"] == [4, 4, 3, 3, 2, 2]
    assert ri["address"]["strides"] == [1, 6, 1, 6, 36, 0]
    # weights: moved by the tile counter (288 cycles); 3 x 3 x 2 words per half, held over
    # the 16 pixels (merged into one dimension), loaded in the 18 cycles before each tile
    assert wgt["double_buffer"] == {"share": 18, "period": 288, "lead": 18}
    ww, rw = wgt["ports"]["data_in_0"], wgt["ports"]["data_out_0"]
    assert ww["extents"] == [18, 2] and ww["schedule"] == {"strides": [1, 288],
                                                           "offset": 37 - 1 - 18}
    assert rw["extents"] == [16, 36] and rw["address"]["strides"] == [0, 1]
    assert rw["schedule"]["strides"] == [1, 16]
    # the host stream of an input lane: channel 0 then 1, then again for the second tile
    cyc_in, _ = program_events(wi)
    assert cyc_in[:2].tolist() == [0, 1] and cyc_in[36] == 144 and cyc_in[108] == 3 * 144
    # the step kernel reads every operand MEM once, the accumulator and the flag
    sinks = {s for n in ln.netlist.nets for s in n.sinks if s[0] == "kernel_hstep_conv"}
    assert sinks == {("kernel_hstep_conv", p) for p in
                     ["input.0", "input.1", "weights.0", "weights.1", "weights.2",
                      "weights.3", "acc.0", "acc.1", "first.0"]}


def test_io_tiles_are_shared_when_mems_outnumber_them():
    """4 IO tiles, 2 taken by the outputs: the 7 loads share 2 streams back to back, both
    ending where the compute starts."""
    ln = dnn_array.layer_netlist(_resnet(), MEM, 4, double_buffer=False)
    assert len(ln.loads) == 2
    loads = [ld for lst in ln.loads.values() for ld in lst]
    assert sorted(ld.mem for ld in loads) == sorted(
        n for n, i in ln.netlist.instances.items() if i.kind == "mem" and
        i.config["role"] in ("operand", "flag"))
    for inst, lst in ln.loads.items():
        end = ln.load_cycles - sum(ld.words for ld in lst)   # every lane ends at one cycle
        for ld in lst:
            assert ld.offset == end                    # back to back, no overlap
            end += ld.words
            prog = ln.netlist.instances[ld.mem].config["ports"]["data_in_0"]
            assert prog["schedule"]["offset"] == ld.offset and prog["extents"] == [ld.words]
        net = next(n for n in ln.netlist.nets if n.source == (inst, "out"))
        assert sorted(s[0] for s in net.sinks) == sorted(ld.mem for ld in lst)
    # 2 x 72 + 4 x 36 + 18 = 306 words over 2 streams: longest first gives 162 / 144, the
    # optimum (every load but the flag's is a multiple of 36 words)
    assert sorted(sum(ld.words for ld in lst) for lst in ln.loads.values()) == [144, 162]
    assert ln.load_cycles == 162
    assert ln.lms[0].start == 163


def _lane_events(ln):
    """IO load lane -> (cycles, MEM) of every write its MEMs take from it."""
    out = {}
    for inst, lst in ln.loads.items():
        ev = []
        for ld in lst:
            cyc, _ = program_events(ln.netlist.instances[ld.mem].config["ports"]["data_in_0"])
            ev += [(int(c), ld.mem) for c in cyc]
        out[inst] = sorted(ev)
    return out


@pytest.mark.parametrize("layer,args", [("resnet_layer", (6, 4, 2)),
                                        ("mobilenet_layer", (6, 4, 2)),
                                        ("resnet_stride2", (7, 4, 2))])
def test_double_buffers_share_io_lanes_without_collisions(layer, args):
    """4 IO tiles (2 load lanes): the whole boxes first on a lane, then the shares; every
    lane ends where the compute starts; over the whole run no two MEMs take a word from one
    lane in the same cycle, and a MEM takes each host word exactly once."""
    pipe = dnn.build_layer(layer, *args)
    ln = dnn_array.layer_netlist(pipe, MEM, 4)
    lms = {lm.func: lm for lm in ln.lms}
    assert len(ln.loads) == 2
    for inst, ev in _lane_events(ln).items():
        cycles = [c for c, _ in ev]
        assert len(cycles) == len(set(cycles)), inst            # one word per cycle
        lst = ln.loads[inst]
        assert max(ld.offset + ld.words for ld in lst) == ln.load_cycles   # aligned ends
        kinds = [("double_buffer" in ln.netlist.instances[ld.mem].config) for ld in lst]
        assert kinds == sorted(kinds)                           # whole boxes first
        for ld in lst:
            cfg = ln.netlist.instances[ld.mem].config
            if "double_buffer" in cfg:
                red = lms[cfg["reduction"]]
                db = cfg["double_buffer"]
                assert db["lead"] == ln.load_cycles - ld.offset <= db["period"]
                assert cfg["read_slack"] == db["period"] + red.stall - db["lead"] - 1
    # the double buffers' MEMs hold half of the whole boxes' words or less
    whole = dnn_array.layer_netlist(pipe, MEM, 4, double_buffer=False)
    assert whole.load_cycles > ln.load_cycles


@pytest.mark.parametrize("double", [False, True], ids=["whole", "double"])
def test_nominal_programs_reproduce_the_layer_on_lake_models(double):
    """The array's nominal schedule (loads through shared IO streams, later start, double
    buffers reloaded behind the compute) is the schedule dnn_memory checks on Lake's
    cycle-accurate models: the same programs run there give the golden output."""
    pipe = dnn.build_layer("gemm", 4, 8, 2)
    ln = dnn_array.layer_netlist(pipe, MEM, 6, 4, double)   # 4 outputs, 2 load lanes
    ins = dnn.layer_inputs(pipe, 5)
    got, lms = dnn_memory.simulate(pipe, ins, **ln.schedule)
    assert [(lm.start, lm.stall) for lm in lms] == [(lm.start, lm.stall) for lm in ln.lms]
    for lm in lms:
        for prod, lst in lm.mems.items():
            for om in lst:
                cfg = ln.netlist.instances[f"mem_{lm.func}_{prod}_s{om.stream.index}"].config
                assert cfg["ports"]["data_out_0"] == om.programs["data_out_0"]
                assert (om.double is not None) == double == ("double_buffer" in cfg)
                if double:
                    assert cfg["ports"]["data_in_0"] == om.programs["data_in_0"]
    # the 2 x 2 tiles run inside the reduction (loop perfection): 4 steps between updates
    assert lms[0].start == ln.load_cycles + 1 and lms[0].stall == 2 and lms[0].tiles_inner
    np.testing.assert_array_equal(got[pipe.output.name],
                                  tensor.evaluate(pipe, ins)[pipe.output.name])


def test_loop_budget_sets_the_stall():
    """gemm 4x4 at a 2 x 2 tile: one output per lane per tile, no pixel loop: with the tiles
    outside the reduction a sum is read again the next step (stall = read latency + budget);
    the 4 tiles move inside it (loop perfection), 4 steps apart, and the stall is
    ceil((1 + budget) / 4); the accumulation MEMs then hold the 4 tiles' sums."""
    pipe = dnn.build_layer("gemm", 4, 8, 2)
    for budget, stall in ((1, 1), (4, 2), (12, 4)):
        ln = dnn_array.layer_netlist(pipe, MEM, 32, budget)
        (lm,) = ln.lms
        assert (lm.stall, lm.distance, lm.tiles_inner) == (stall, 4, True)
        assert [c.name for c in lm.counters] == ["x/outer", "y/outer", "r.x"]
        acc = ln.netlist.instances["acc_gemm_o0"].config
        assert acc["accumulator"]["loop_cycles"] == 4 * stall - 1 >= budget
        assert acc["ports"]["data_out_0"]["address"]["strides"] == [1, 2, 0]
    # without loop perfection (--no-flatten) a sum is read again the next step: the stall
    # is the read latency + the budget, and the programs still run on Lake's models
    ln = dnn_array.layer_netlist(pipe, MEM, 32, 12, flatten=False)
    (lm,) = ln.lms
    assert (lm.stall, lm.distance, lm.tiles_inner) == (13, 1, False)
    assert [c.name for c in lm.counters] == ["r.x", "x/outer", "y/outer"]
    ins = dnn.layer_inputs(pipe, 1)
    got, _ = dnn_memory.simulate(pipe, ins, **ln.schedule)
    np.testing.assert_array_equal(got[pipe.output.name],
                                  tensor.evaluate(pipe, ins)[pipe.output.name])
    # a pixel loop long enough: the tiles stay outside (resnet's 16 pixels per tile)
    (lm,) = dnn_array.layer_netlist(_resnet(), MEM, 32, 12).lms
    assert (lm.stall, lm.distance, lm.tiles_inner) == (1, 16, False)


@pytest.mark.parametrize("double", [False, True], ids=["whole", "double"])
def test_a_stream_over_two_mems_is_merged_in_the_step_kernel(double):
    """resnet 33x33x4 at 2 x 2 lanes: an input stream's 2 channels of 33 x 33 = 1089 words
    exceed a MEM (and so do a double buffer's two halves): two MEMs per stream (banks over
    rzo; with double buffers a ping-pong pair reloaded per tile), each loaded through its own
    IO lane, read on its own rzo iteration (8649 cycles apart), merged by one mux on bank 1's
    1-bit valid_out."""
    ln = dnn_array.layer_netlist(dnn.build_layer("resnet_layer", 33, 4, 2), MEM, 32,
                                 double_buffer=double)
    insts = ln.netlist.instances
    banks = sorted(n for n, i in insts.items() if i.config.get("bank"))
    assert banks == ["mem_conv_input_s0", "mem_conv_input_s0_b1", "mem_conv_input_s1",
                     "mem_conv_input_s1_b1"]
    period = 31 * 31 * 9
    (lm,) = ln.lms
    for n in banks:
        cfg = insts[n].config
        b = cfg["bank"][0]
        assert cfg["bank"] == [b, 2]
        assert cfg["ports"]["data_out_0"]["schedule"]["offset"] == lm.start - 1 + b * period
        if double:
            assert cfg["double_buffer"] == {"share": 1089, "period": period, "lead": 1089}
            assert cfg["ports"]["data_in_0"]["extents"] == [1089, 2]    # once per tile
        else:
            assert "double_buffer" not in cfg and cfg["ports"]["data_in_0"]["extents"] == [1089]
    kcfg = insts["kernel_hstep_conv"].config
    assert kcfg["banked"] == [["input_bank0", "input_valid0"], ["input_bank1", "input_valid1"]]
    plain = dnn_array.layer_netlist(_resnet(), MEM, 32).netlist.instances[
        "kernel_hstep_conv"].config["dag"]          # the same 2 x 2 step kernel, no banks

    def muxes(dag):
        return sum(1 for nd in dag["nodes"] if nd["op"] == "coreir.mux")
    assert muxes(kcfg["dag"]) == muxes(plain) + 2    # one merge per banked stream
    valid = {n.source: (n.sinks, n.width) for n in ln.netlist.nets
             if n.source[1] == "valid_out_0"}
    assert valid == {(f"mem_conv_input_s{i}_b1", "valid_out_0"):
                     ([("kernel_hstep_conv", f"input_valid{i}.1")], 1) for i in range(2)}
    data = {n.source: n.sinks for n in ln.netlist.nets if n.source[0] in banks}
    assert data[("mem_conv_input_s1_b1", "data_out_0")] == [("kernel_hstep_conv",
                                                             "input_bank1.1")]
    lanes = {ld.mem: inst for inst, lst in ln.loads.items() for ld in lst}
    assert len({lanes[n] for n in banks}) == 4


def test_mobilenet_intermediate_buffers_are_written_by_the_requantisation():
    ln = dnn_array.layer_netlist(dnn.build_layer("mobilenet_layer", 6, 4, 2), MEM, 32)
    assert _roles(ln) == {"operand": 8, "accumulation": 4, "flag": 2, "intermediate": 2}
    for o in range(2):
        net = next(n for n in ln.netlist.nets if n.source == (f"kernel_depthwise_o{o}", "out"))
        assert [s for s in net.sinks if s[0].startswith("mem_")] == [
            (f"mem_pw_conv_depthwise_s{o}", "data_in_0")]
    assert ln.lms[1].start > ln.lms[0].cycles


def test_refusals():
    with pytest.raises(MappingError, match="2 output lanes and a load stream need 3 IO tiles, the design has 2"):
        dnn_array.layer_netlist(_resnet(), MEM, 2)
    with pytest.raises(MappingError, match="loop_cycles 0 must be >= 1"):
        dnn_array.layer_netlist(_resnet(), MEM, 32, 0)
    # a pure Func that is not a pointwise requantisation of a reduction
    x, y, k = Var("x"), Var("y"), Var("k")
    inp = Input("input", Int16, (6, 6, 2))
    w = Input("weights", Int16, (2, 2))
    r = RDom([(0, 2)], "r")
    acc = Func("acc")
    acc[x, y, k] = cast(Int16, 0)
    acc[x, y, k] += inp[x, y, r.x] * w[r.x, k]
    out = Func("shifted")
    out[x, y, k] = acc[x + 1, y, k]
    acc.update().split(k, "ko", "ki", 2).unroll("ki")
    with pytest.raises(MappingError, match="Func shifted: the array maps a pure Func only as "
                                           "the pointwise requantisation"):
        dnn_array.layer_netlist(Pipeline(out, "shifted"), MEM, 32)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 200), min_size=1, max_size=20), st.integers(1, 8))
def test_assignment_is_a_packing(sizes, lanes):
    """Every load once, back to back per IO stream, no stream longer than the best lane plus
    the largest load (the greedy bound)."""
    got = dnn_array._assign([(k, n) for k, n in enumerate(sizes)], lanes)
    assert sorted(k for lst in got for k, _, _ in lst) == list(range(len(sizes)))
    for lst in got:
        end = 0
        for k, off, n in lst:
            assert off == end and n == sizes[k]
            end += n
    ends = [sum(n for _, _, n in lst) for lst in got]
    assert max(ends) <= -(-sum(sizes) // lanes) + max(sizes)


#: the PUB design's MEM facts (mem.json of configs/small_pub.toml / default_pub.toml)
PUB_MEM = MemInfo.of_preset("pub_512x64")


@pytest.mark.parametrize("double", [False, True], ids=["whole", "double"])
def test_pub_shift_banks_share_their_owners_io_lane(double):
    """resnet 6x6x4 at 2 x 2 lanes on the PUB: each input stream is 3 shift banks (one per
    r.x, dnn_memory "Wide fetch"); banks 1 and 2 take no IO lane of their own but sample
    bank 0's host stream, a subset of its write cycles; the compute starts the PUB's 7
    cycles later than on the dual-port MEM; the netlist's programs replayed on Lake's PUB
    models give the golden output."""
    pipe = _resnet()
    ln = dnn_array.layer_netlist(pipe, PUB_MEM, 32, double_buffer=double)
    dual = dnn_array.layer_netlist(pipe, MEM, 32, double_buffer=double)
    c = ln.netlist.counts()
    assert (c["io_in"], c["mem"]) == (7, 13)
    assert _roles(ln) == {"operand": 10, "accumulation": 2, "flag": 1}
    assert ln.load_cycles == dual.load_cycles
    assert ln.lms[0].start == dual.lms[0].start + 7
    sinks = {tuple(n.source): [s[0] for s in n.sinks] for n in ln.netlist.nets}
    for i in range(2):
        owner = f"mem_conv_input_s{i}"
        lane = next(src for src, ss in sinks.items() if owner in ss and src[1] == "out")
        assert {f"{owner}_b1", f"{owner}_b2"} <= set(sinks[lane])
        own, _ = program_events(ln.netlist.instances[owner].config["ports"]["data_in_0"])
        for b in (1, 2):
            cfg = ln.netlist.instances[f"{owner}_b{b}"].config
            cyc, _ = program_events(cfg["ports"]["data_in_0"])
            assert cfg["bank"] == [b, 3] and set(cyc.tolist()) < set(own.tolist())
            assert len(own) - len(cyc) == b * len(own) // 6      # b words of every 6-word row
    ins = dnn.layer_inputs(pipe, 4)
    got, lms = dnn_memory.simulate(pipe, ins, "pub_512x64", **ln.schedule)
    for om in lms[0].mems["input"]:
        name = dnn_array._mem_name(("conv", "input", om.stream.index, om.bank))
        assert ln.netlist.instances[name].config["ports"]["data_out_0"] == \
            om.programs["data_out_0"]
    np.testing.assert_array_equal(got[pipe.output.name],
                                  tensor.evaluate(pipe, ins)[pipe.output.name])
