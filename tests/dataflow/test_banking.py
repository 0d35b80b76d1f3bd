"""Memory partitioning for bandwidth (mapper.dataflow.banking; SARA §III-B2, Fig. 8): the
Fig. 8 known answers (2x: 2 banks, 2 merging units; 4x: 4 banks and depth-2 merge trees), a
stride where cyclic banking by the lane count conflicts, static banks (xbar-elm), the
refusals, and a property test checking the z3 proofs against enumeration."""
from __future__ import annotations

import math

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from cgra.errors import MappingError, ProgramError
from mapper.dataflow import banking
from mapper.dataflow.banking import (
    Z3_TIMEOUT_MS,
    bank_memory,
    index_constants,
    merge_tree,
    plan_banking,
)
from mapper.dataflow.program import Program


def fig8(par: int, stride: int = 1, size: int = 64) -> Program:
    """SARA Fig. 8: m filled by loop B, then loop C (par ``par``) reads m (access R)."""
    p = Program("fig8")
    d = p.dram("d", (size,))
    out = p.dram("out", (size,))
    m = p.sram("m", (size,))
    with p.foreach(size, label="B") as i:
        p.store(m, i, d[i], label="W")
    with p.foreach(size // stride, par=par, label="C") as i:
        out[i] = p.load(m, stride * i, label="R")
    return p


def test_fig8_2x_two_banks_two_merging_units():
    plan = bank_memory(fig8(2), "m")
    assert plan.banks == 2
    assert (plan.bank_function, plan.offset_function) == ("a mod 2", "a div 2")
    assert plan.bank_depth == 32
    r = plan.access("R")
    assert r.kind == "read"
    assert r.address.describe() == "C"
    assert r.par_loops == (("C", 2),)
    assert [t.levels for t in r.merge] == [(1,), (1,)]     # one 2-input unit per partition
    assert plan.merge_units == 2                           # W (one lane) needs none
    assert plan.merge_depth == 1
    # lane l reads i = 2k + l: bank l, statically (xbar-elm: point-to-point)
    assert [(ln.lane, ln.static_bank) for ln in r.request_lanes] == [((0,), 0), ((1,), 1)]
    assert (r.crossbar_before, r.crossbar_after) == (4, 2)
    assert r.point_to_point
    assert plan.merge_units_after == 0
    assert [(p.access, p.banks, p.result) for p in plan.proofs] == [("R", 2, "proven")]
    # the sequential writer W is one lane reaching both banks
    w = plan.access("W")
    assert (w.kind, w.request_lanes[0].static_bank, w.request_lanes[0].banks) == (
        "write", None, (0, 1))


def test_fig8_4x_four_banks_and_a_merge_tree_of_depth_2():
    plan = bank_memory(fig8(4), "m")
    assert plan.banks == 4
    r = plan.access("R")
    assert [(t.inputs, t.levels) for t in r.merge] == [(4, (2, 1))] * 4
    assert plan.merge_units == 12 and plan.merge_depth == 2
    assert [ln.static_bank for ln in r.request_lanes] == [0, 1, 2, 3]
    assert (r.crossbar_before, r.crossbar_after) == (16, 4)
    # a wider fan-in flattens the tree back to one unit per partition
    flat = bank_memory(fig8(4), "m", max_merge_fanin=4)
    assert [t.levels for t in flat.access("R").merge] == [(1,)] * 4


def test_stride_2_with_par_2_needs_4_banks():
    plan = bank_memory(fig8(2, stride=2), "m")
    # lanes read 4k and 4k + 2: both in bank 0 of 2 (z3 counterexample), apart with 4
    assert [(p.banks, p.result) for p in plan.proofs] == [(2, "conflict"), (4, "proven")]
    cex = plan.proofs[0].counterexample
    assert cex["bank"] == 0 and sorted(cex["C"][1:]) == [0, 1]
    assert plan.banks == 4
    r = plan.access("R")
    assert [ln.static_bank for ln in r.request_lanes] == [0, 2]
    assert (r.crossbar_before, r.crossbar_after) == (8, 2)
    with pytest.raises(MappingError, match=r"sram 'm': no cyclic banking with at most 2 "
                                           r"banks.*R with 2 banks: conflict"):
        bank_memory(fig8(2, stride=2), "m", max_banks=2)


def test_column_access_of_a_2d_memory_needs_32_banks():
    p = Program("columns")
    out = p.dram("out", (32,))
    m = p.sram("m", (32, 8))
    with p.foreach(8, label="J") as j:
        with p.foreach(32, par=4, label="I") as i:
            out[i] = p.load(m, (i, j), label="R")        # a = 8*i + j, i = 4k + l
    plan = bank_memory(p, "m")
    assert plan.access("R").address.describe() == "J + 8*I"
    assert [(q.banks, q.result) for q in plan.proofs] == [
        (4, "conflict"), (8, "conflict"), (16, "conflict"), (32, "proven")]
    assert plan.banks == 32
    # J moves every lane through the banks: 32 / gcd(32, 1) = 32 reachable banks each
    r = plan.access("R")
    assert [ln.static_bank for ln in r.request_lanes] == [None] * 4
    assert r.crossbar_after == r.crossbar_before == 128
    with pytest.raises(MappingError, match="at most 16 banks"):
        bank_memory(p, "m", max_banks=16)


def test_row_access_is_static_per_lane():
    p = Program("rows")
    out = p.dram("out", (64,))
    m = p.sram("m", (8, 8))
    with p.foreach(8, label="J") as j:
        with p.foreach(8, par=4, label="I") as i:
            out[j * 8 + i] = p.load(m, (j, i), label="R")   # a = 8*j + i
    r = bank_memory(p, "m").access("R")
    assert [ln.static_bank for ln in r.request_lanes] == [0, 1, 2, 3]
    assert r.point_to_point and (r.crossbar_before, r.crossbar_after) == (16, 4)


def test_bank_moving_with_a_serial_loop_keeps_the_crossbar():
    p = Program("skew")
    out = p.dram("out", (64,))
    m = p.sram("m", (16,))
    with p.foreach(4, label="J") as j:
        with p.foreach(8, par=2, label="I") as i:
            out[j * 8 + i] = p.load(m, i + j, label="R")   # bank (l + j) mod 2
    plan = bank_memory(p, "m")
    assert plan.banks == 2
    r = plan.access("R")
    assert [(ln.static_bank, ln.banks) for ln in r.request_lanes] == [
        (None, (0, 1)), (None, (0, 1))]
    assert (r.crossbar_before, r.crossbar_after) == (4, 4)
    assert not r.point_to_point
    assert plan.merge_units_after == 2
    assert r.ba_ops == 2                                    # the add and the mod


def test_data_dependent_start_is_proved_for_every_start():
    p = Program("dyn_start")
    s = p.reg("s", init=3)
    out = p.dram("out", (64,))
    m = p.sram("m", (64,))
    with p.foreach(s.value, s.value + 16, par=2, label="C") as i:
        out[i] = p.load(m, i, label="R")
    plan = bank_memory(p, "m")
    assert plan.banks == 2
    # conflict-free for every start, but which bank a lane hits depends on the start
    assert [ln.static_bank for ln in plan.access("R").request_lanes] == [None, None]


def test_broadcast_read_is_one_request_stream():
    p = Program("bcast")
    out = p.dram("out", (32,))
    w = p.sram("w", (8,))
    with p.foreach(4, par=4, label="I") as i:
        with p.foreach(8, label="J") as j:
            out[i * 8 + j] = p.load(w, j, label="R")
    plan = plan_banking(p)["w"]
    r = plan.access("R")
    assert (r.broadcast_loops, r.par_loops, r.lanes, len(r.request_lanes)) == (
        (("I", 4),), (), 4, 1)
    assert plan.banks == 1 and plan.proofs == ()


def test_refusals():
    p = Program("race")
    m = p.sram("m", (8,))
    with p.foreach(8, par=2, label="I") as i:
        p.store(m, 0, i, label="W")
    with pytest.raises(MappingError, match=r"write W of sram 'm' in I \(par 2\).*do"
                                           r"es not depend on parallel loop\(s\) I"):
        bank_memory(p, "m")

    p = Program("same_word")
    out = p.dram("out", (16,))
    m = p.sram("m", (16,))
    with p.foreach(4, par=2, label="I") as i:
        with p.foreach(4, par=2, label="J") as j:
            out[i * 4 + j] = p.load(m, i + j, label="R")   # lanes (0,1) and (1,0) collide
    with pytest.raises(MappingError, match="read R of sram 'm'.*two lanes address the same"):
        bank_memory(p, "m")

    p = Program("gather")
    idx = p.dram("idx", (8,))
    out = p.dram("out", (8,))
    m = p.sram("m", (8,))
    with p.foreach(8, par=2, label="I") as i:
        out[i] = p.load(m, idx[i], label="R")
    with pytest.raises(MappingError, match=r"R of sram 'm'.*not affine.*reads memory 'idx'"):
        bank_memory(p, "m")
    with pytest.raises(ProgramError, match="'out' is not an SRAM"):
        bank_memory(p, "out")
    with pytest.raises(MappingError, match="max_merge_fanin must be >= 2"):
        bank_memory(fig8(2), "m", max_merge_fanin=1)


def test_non_constant_step_is_refused_for_lanes_only():
    p = Program("dyn_step")
    s = p.reg("s", init=2)
    out = p.dram("out", (64,))
    m = p.sram("m", (64,))
    with p.foreach(0, 32, s.value, par=2, label="I") as i:
        out[i] = p.load(m, i, label="R")
    with pytest.raises(MappingError, match=r"read R of sram 'm' in I \(par 2\): loop\(s\) I "
                                           r"of the address have a non-constant step"):
        bank_memory(p, "m")

    p = Program("dyn_step_one_lane")
    s = p.reg("s", init=2)
    out = p.dram("out", (64,))
    m = p.sram("m", (64,))
    with p.foreach(0, 32, s.value, label="K") as k:      # one lane: any bank, no proof
        p.store(m, k, 1, label="Wk")
    with p.foreach(32, par=2, label="I") as i:
        out[i] = p.load(m, i, label="R")
    plan = bank_memory(p, "m")
    assert plan.banks == 2
    wk = plan.access("Wk")
    assert (wk.address, wk.request_lanes[0].banks, wk.crossbar_after) == (None, (0, 1), 2)


def test_a_loop_bound_read_is_an_access_of_the_enclosing_lanes():
    p = Program("bound_read")
    n = p.sram("n", (8,))
    out = p.dram("out", (64,))
    with p.foreach(8, par=2, label="I") as i:
        with p.foreach(p.load(n, i, label="Rn"), label="J") as j:
            out[i * 8 + j] = j
    plan = plan_banking(p)["n"]
    assert plan.banks == 2
    assert [ln.static_bank for ln in plan.access("Rn").request_lanes] == [0, 1]


def test_unknown_solver_result_is_not_a_proof(monkeypatch):
    monkeypatch.setattr(banking, "_solve", lambda s: z3.unknown)
    with pytest.raises(MappingError, match=f"could not prove within {Z3_TIMEOUT_MS} ms"):
        bank_memory(fig8(2), "m")


def test_bank_and_offset_are_a_bijection():
    plan = bank_memory(fig8(4, size=30), "m")
    cells = {(plan.bank(a), plan.offset(a)) for a in range(30)}
    assert len(cells) == 30
    assert max(o for _, o in cells) == plan.bank_depth - 1 == 7


@pytest.mark.parametrize("n, fanin, levels", [
    (1, 2, ()), (2, 2, (1,)), (3, 2, (1, 1)), (4, 2, (2, 1)), (5, 2, (1, 2, 1)), (5, 3, (1, 1)),
    (8, 2, (4, 2, 1)), (8, 4, (2, 1)), (16, 4, (4, 1)), (6, 8, (1,))])
def test_merge_tree_levels(n, fanin, levels):
    assert merge_tree(0, n, fanin).levels == levels


@given(st.integers(1, 300), st.integers(2, 9))
def test_merge_tree_is_a_minimal_tree(n, fanin):
    t = merge_tree(0, n, fanin)
    assert t.units == math.ceil((n - 1) / (fanin - 1))
    k, cap = 0, 1
    while cap < n:
        k, cap = k + 1, cap * fanin
    assert t.depth == k


def test_index_constants():
    p = Program("consts")
    m = p.sram("m", (4, 4))
    with p.foreach(4) as i:
        t = p.let(i * 0 + 3)
        p.store(m, (t, 1 << 1), 5)
    b = p.blocks()[0]
    lets = {id(s.temp): s.value for s in b.statements if hasattr(s, "temp")}
    assert index_constants(b.stores()[0].index, lets) == (3, 2)
    assert index_constants((i,), lets) is None


@settings(max_examples=40, deadline=None)
@given(coeff=st.integers(-3, 4).filter(bool), outer=st.integers(0, 3),
       par=st.sampled_from([2, 4]), step=st.integers(1, 3), start=st.integers(0, 5))
def test_proofs_agree_with_enumeration(coeff, outer, par, step, start):
    """Whatever z3 proves (conflict-free lanes, static banks) holds on every enumerated
    iteration; a refusal is a real collision."""
    p = Program("prop")
    out = p.dram("out", (1,))
    m = p.sram("m", (4096,))
    with p.foreach(3, label="J") as j:
        with p.foreach(start, start + 40 * step, step, par=par, label="I") as i:
            out[0] = p.load(m, coeff * i + outer * j + 100, label="R")
    plan = bank_memory(p, "m")
    r = plan.access("R")
    for jv in range(3):
        for k in range(8):
            addr = [coeff * (start + (par * k + lane) * step) + outer * jv + 100
                    for lane in range(par)]
            banks = [plan.bank(a) for a in addr]
            assert len(set(banks)) == par
            for ln, b in zip(r.request_lanes, banks, strict=True):
                assert b in ln.banks
                if ln.static_bank is not None:
                    assert b == ln.static_bank
    # the smallest conflict-free power of two: every smaller one has a colliding pair
    need = 1 << (par - 1).bit_length()
    for smaller in [b for b in (1, 2, 4, 8, 16, 32, 64) if need <= b < plan.banks]:
        assert len({(coeff * lane * step) % smaller for lane in range(par)}) < par
