"""The array netlist of DNN layers (mapper/dnn_array.py): its MEMs by role, the load phase
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
from mapper import dnn_array, dnn_memory, tensor
from mapper.apps import dnn
from mapper.frontend.dsl import Func, Input, Int16, Pipeline, RDom, Var, cast
from mapper.streams import program_events

#: the default design's MEM facts (mem.json of configs/default.toml)
MEM = {"preset": "dualport_2048x16", "name": "dualport_2048x16", "capacity": 2048,
       "max_dimensionality": 6, "read_latency": 1, "word_width": 16}


def _resnet():
    return dnn.build_layer("resnet_layer", 6, 4, 2)


def _roles(ln):
    out: dict[str, int] = {}
    for i in ln.netlist.instances.values():
        if i.kind == "mem":
            out[i.config["role"]] = out.get(i.config["role"], 0) + 1
    return out


def test_resnet_netlist_known_answer():
    ln = dnn_array.layer_netlist(_resnet(), MEM, 32)
    c = ln.netlist.counts()
    # 2 input + 4 weight streams and the flag, one IO tile each; 2 output lanes
    assert (c["io_in"], c["io_out"], c["mem"], c["kernel"]) == (7, 2, 9, 3)
    assert _roles(ln) == {"operand": 6, "accumulation": 2, "flag": 1}
    assert ln.load_cycles == 72                      # 6 x 6 pixels x 2 channels per stream
    (lm,) = ln.lms
    assert (lm.start, lm.stall, lm.distance, lm.steps) == (73, 1, 16, 576)
    acc = ln.netlist.instances["acc_conv_o0"].config
    assert acc["accumulator"]["loop_cycles"] == 15    # read again 16 cycles after its read
    # nominal: the sum of step i is written at step i's cycle, its word read a cycle before
    w, r = acc["ports"]["data_in_0"], acc["ports"]["data_out_0"]
    assert w["schedule"]["offset"] == 73 and r["schedule"]["offset"] == 72
    assert w["schedule"]["strides"] == r["schedule"]["strides"] == [1, 4, 16, 48, 144, 288]
    # outputs: the last reduction pass (r.x = r.y = 2, rzo = 1) of every pixel and tile
    prog = ln.netlist.instances["io_out_resnet_layer_o0"].config["program"]
    cyc, _ = program_events(prog)
    assert len(cyc) == 16 * 2
    assert cyc[0] == 73 + 2 * 16 + 2 * 48 + 144 and cyc[16] == cyc[0] + 288
    # the step kernel reads every operand MEM once, the accumulator and the flag
    sinks = {s for n in ln.netlist.nets for s in n.sinks if s[0] == "kernel_hstep_conv"}
    assert sinks == {("kernel_hstep_conv", p) for p in
                     ["input.0", "input.1", "weights.0", "weights.1", "weights.2",
                      "weights.3", "acc.0", "acc.1", "first.0"]}


def test_io_tiles_are_shared_when_mems_outnumber_them():
    """4 IO tiles, 2 taken by the outputs: the 7 loads share 2 streams back to back."""
    ln = dnn_array.layer_netlist(_resnet(), MEM, 4)
    assert len(ln.loads) == 2
    loads = [ld for lst in ln.loads.values() for ld in lst]
    assert sorted(ld.mem for ld in loads) == sorted(
        n for n, i in ln.netlist.instances.items() if i.kind == "mem" and
        i.config["role"] in ("operand", "flag"))
    for inst, lst in ln.loads.items():
        end = 0
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


def test_nominal_programs_reproduce_the_layer_on_lake_models():
    """The array's nominal schedule (loads through shared IO streams, later start) is still
    the schedule dnn_memory checks on Lake's cycle-accurate models: the same programs run
    there give the golden output."""
    pipe = dnn.build_layer("gemm", 4, 8, 2)
    ln = dnn_array.layer_netlist(pipe, MEM, 6, 4)   # 4 outputs, 2 shared load streams
    ins = dnn.layer_inputs(pipe, 5)
    got, lms = dnn_memory.simulate(pipe, ins, loop_cycles=4, min_start=ln.load_cycles + 1)
    assert [(lm.start, lm.stall) for lm in lms] == [(lm.start, lm.stall) for lm in ln.lms]
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
    # a pixel loop long enough: the tiles stay outside (resnet's 16 pixels per tile)
    (lm,) = dnn_array.layer_netlist(_resnet(), MEM, 32, 12).lms
    assert (lm.stall, lm.distance, lm.tiles_inner) == (1, 16, False)


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
