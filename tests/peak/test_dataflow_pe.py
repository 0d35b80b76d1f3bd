"""The dataflow PE (peak.examples.dataflow_pe, issue 35 item 2): known answers (a dot
product, a dequeue window, a predicated emission, min/max windows, index operands),
Python = SMT = RTL on seeded random stimulus of a small variant, the instruction helper's
refusals."""
import random

import pytest

from cgra.errors import ConfigError, SpecError
from peak.assembler import assembler
from peak.examples.dataflow_pe import (DataflowPE, DfOp, PCond, Red, Src, dataflow_inst,
                                       make_dataflow_pe)
from peak.normalize import normal_form
from peak.sim import RTLSim, model_outputs
from peak.smt import symbolic

SMALL = make_dataflow_pe(4, 2, 2)       # 52 instruction bits: fits RTLSim's 64
SMALL_MEM = make_dataflow_pe(4, 2, 2, 4)      # with a 4-word scratchpad
SMALL_DIV = make_dataflow_pe(4, 2, 2, div=True)   # with the divider


def _run(spec, inst, feed):
    pe = spec()
    return [tuple(int(v) for v in pe(inst, *f)) for f in feed]


def test_ports_and_instruction_width():
    nf = normal_form(DataflowPE)
    assert [n for n, _ in nf.inputs] == ["a", "b", "p"]
    assert [n for n, _ in nf.outputs] == ["res", "res_p", "emit_res", "emit_res_p", "deq_a",
                                          "deq_b", "deq_p", "need_a", "need_b", "need_p"]
    assert assembler(DataflowPE.Inst).width == 240
    assert assembler(SMALL.Inst).width == 52


def test_dot_product_window_emits_the_sum_on_its_last_firing():
    inst = dataflow_inst(DataflowPE, [(0, 1, 4)], "Mul", red="ADD", red_level=1,
                         emit_level=1, signed=True)
    pairs = [(1, 2), (3, 4), (5, 6), (7, 8), (-1, 1), (2, -2), (3, 3), (4, 4)]
    rows = _run(DataflowPE, inst, [(a % 2**32, b % 2**32, 0) for a, b in pairs])
    assert [r[0] for r in rows] == [2, 14, 44, 100, 2**32 - 1, 2**32 - 5, 4, 20]
    assert [r[2] for r in rows] == [0, 0, 0, 1, 0, 0, 0, 1]           # emit_res
    assert all(r[4] == r[5] == 1 for r in rows)                       # deq every firing


def test_dequeue_window_and_index_operand():
    """``a`` held for the 3 firings of the inner level, ``res = a + i``; the outer index
    as ``b`` of a second PE."""
    inst = dataflow_inst(DataflowPE, [(0, 1, 3), (0, 1, 2)], "Add", b_src="INDEX",
                         deq_a_level=1)
    rows = _run(DataflowPE, inst, [(10, 0, 0)] * 6)
    assert [r[0] for r in rows] == [10, 11, 12, 10, 11, 12]
    assert [r[4] for r in rows] == [0, 0, 1, 0, 0, 1]
    outer = dataflow_inst(DataflowPE, [(0, 1, 3), (5, 2, 9)], "PassA", a_src="INDEX",
                          a_level=1)
    assert [r[0] for r in _run(DataflowPE, outer, [(0, 0, 0)] * 6)] == [5, 5, 5, 7, 7, 7]


def test_min_max_windows_compare_and_predicated_emit():
    mx = dataflow_inst(DataflowPE, [(0, 1, 3)], "PassA", red="MAX", red_level=1,
                       emit_level=1, signed=True)
    vals = [5, 2**32 - 3, 9, 2**32 - 7, 1, 2**32 - 2]
    rows = _run(DataflowPE, mx, [(v, 0, 0) for v in vals])
    assert [r[0] for r in rows if r[2]] == [9, 1]
    mn = dataflow_inst(DataflowPE, [(0, 1, 3)], "PassA", red="MIN", red_level=1,
                       emit_level=1, signed=True)
    assert [r[0] for r in _run(DataflowPE, mn, [(v, 0, 0) for v in vals]) if r[2]] == \
        [2**32 - 3, 2**32 - 7]
    lt = dataflow_inst(DataflowPE, [(0, 1, 1)], cond="LT", signed=True)
    assert [r[1] for r in _run(DataflowPE, lt, [(2**32 - 1, 0, 0), (3, 2, 0)])] == [1, 0]
    keep = dataflow_inst(DataflowPE, [(0, 1, 1)], "PassA", emit_on_p=1)
    assert [r[2] for r in _run(DataflowPE, keep, [(1, 0, 1), (2, 0, 0), (3, 0, 1)])] == \
        [1, 0, 1]


def test_argmin_argmax_windows_keep_the_first_extreme_index():
    """ARGMIN over windows of 4 firings (``B`` = the window loop's index): ``res`` on the
    last firing is the index of the first strict minimum (ties keep the earlier index,
    signed compare); ARGMAX likewise; the running ``res`` is the index so far."""
    vals = [7, 3, 9, 3,   -2, 5, -2, -9,   4, 4, 4, 4]
    feed = [(v % 2**32, 0, 0) for v in vals]
    amin = dataflow_inst(DataflowPE, [(0, 1, 4), (0, 1, 3)], "PassA", b_src="INDEX",
                         red="ARGMIN", red_level=1, emit_level=1, signed=True)
    rows = _run(DataflowPE, amin, feed)
    assert [r[0] for r in rows] == [0, 1, 1, 1,   0, 0, 0, 3,   0, 0, 0, 0]
    assert [r[2] for r in rows] == [0, 0, 0, 1] * 3
    amax = dataflow_inst(DataflowPE, [(0, 1, 4), (0, 1, 3)], "PassA", b_src="INDEX",
                         red="ARGMAX", red_level=1, emit_level=1, signed=True)
    assert [r[0] for r in _run(DataflowPE, amax, feed) if r[2]] == [2, 1, 0]
    # unsigned: -9 is the largest word, so ARGMIN of the second window is 1 (5)
    umin = dataflow_inst(DataflowPE, [(0, 1, 4), (0, 1, 3)], "PassA", b_src="INDEX",
                         red="ARGMIN", red_level=1, emit_level=1)
    assert [r[0] for r in _run(DataflowPE, umin, feed) if r[2]] == [1, 1, 0]


def test_scratchpad_writes_in_counter_order_then_reads():
    """op Mem, 16 words, epochs of 4 writes (b_const) and 3 reads (counter (0, 1, 7)): b
    written at the inner counter's value while writing (a not needed, nothing emitted), then
    mem[a] emitted per firing (b not needed); the second epoch overwrites the words."""
    P = make_dataflow_pe(32, 3, 16, 16)
    inst = dataflow_inst(P, [(0, 1, 7)], "Mem", b_const=4)
    epoch1 = [(0, 10, 0), (0, 11, 0), (0, 12, 0), (0, 13, 0), (2, 0, 0), (0, 0, 0), (3, 0, 0)]
    epoch2 = [(0, 20, 0), (0, 21, 0), (0, 22, 0), (0, 23, 0), (1, 0, 0), (3, 0, 0), (1, 0, 0)]
    rows = _run(P, inst, epoch1 + epoch2)
    assert [r[2] for r in rows] == [0, 0, 0, 0, 1, 1, 1] * 2          # emit_res
    assert [r[0] for r in rows[4:7]] == [12, 10, 13]
    assert [r[0] for r in rows[11:]] == [21, 23, 21]
    assert [(r[7], r[8]) for r in rows] == ([(0, 1)] * 4 + [(1, 0)] * 3) * 2  # need_a, need_b
    assert [(r[4], r[5]) for r in rows] == ([(0, 1)] * 4 + [(1, 0)] * 3) * 2  # deq_a, deq_b
    with pytest.raises(SpecError, match="words = 48 must be 0"):
        make_dataflow_pe(32, 3, 16, 48)


def test_scratchpad_accumulates_at_data_addresses_then_reads_in_order():
    """op MemAcc (a scatter-add), 8 words, epochs of 5 updates (b_const) and 8 reads
    (counter (0, 1, 13)): ``mem[a] += b`` per update (both dequeued, nothing emitted), then
    every word in address order with no input needed; the words are not cleared, so the
    second epoch adds to the first; with ``a_const`` the reads start at an offset and
    stride."""
    P = make_dataflow_pe(32, 3, 16, 8)
    inst = dataflow_inst(P, [(0, 1, 13)], "MemAcc", b_const=5)
    ups = [(3, 10, 0), (1, 4, 0), (3, 2**32 - 15, 0), (7, 1, 0), (3, 1, 0)]
    rows = _run(P, inst, (ups + [(0, 0, 0)] * 8) * 2)
    assert [r[2] for r in rows] == ([0] * 5 + [1] * 8) * 2                     # emit_res
    assert [r[0] for r in rows[5:13]] == [0, 4, 0, 2**32 - 4, 0, 0, 0, 1]
    assert [r[0] for r in rows[18:]] == [0, 8, 0, 2**32 - 8, 0, 0, 0, 2]
    assert [(r[7], r[8]) for r in rows] == ([(1, 1)] * 5 + [(0, 0)] * 8) * 2  # need_a, need_b
    assert [(r[4], r[5]) for r in rows] == ([(1, 1)] * 5 + [(0, 0)] * 8) * 2  # deq_a, deq_b
    # a_const: offset 1 (low half), stride 2 (high half + 1): words 1, 3, 5
    lane = dataflow_inst(P, [(0, 1, 8)], "MemAcc", b_const=5, a_const=1 | (1 << 16))
    assert [r[0] for r in _run(P, lane, ups + [(0, 0, 0)] * 3)][5:] == [4, 2**32 - 4, 0]


def _random_inst(rng: random.Random, spec=None):
    levels = [(lo := rng.randrange(0, 2), rng.randrange(1, 3), rng.randrange(lo + 1, 4))
              for _ in range(2)]
    return dataflow_inst(
        spec or SMALL, levels, rng.choice([m.name for m in DfOp.enumerate()
                                           if (spec or SMALL).div or m.name not in ("Div", "Mod")]),
        signed=rng.random() < 0.5, cond=rng.choice([m.name for m in PCond.enumerate()]),
        a_src=rng.choice([m.name for m in Src.enumerate()]), a_const=rng.randrange(16),
        b_src=rng.choice([m.name for m in Src.enumerate()]), b_const=rng.randrange(16),
        red=rng.choice([m.name for m in Red.enumerate()]), a_level=rng.randrange(2),
        b_level=rng.randrange(2), emit_on_p=rng.randrange(2),
        **{f: rng.randrange(3) for f in ("red_level", "emit_level", "emit_p_level",
                                          "deq_a_level", "deq_b_level", "deq_p_level")})


@pytest.mark.parametrize("spec", [SMALL, SMALL_MEM, SMALL_DIV],
                         ids=["no_scratchpad", "scratchpad", "divider"])
def test_python_smt_rtl_agree_on_random_stimulus(spec, tmp_path):
    rng = random.Random(35)
    asm = assembler(spec.Inst)
    vectors, inst = [], None
    for t in range(400):
        if t % 40 == 0:
            inst = asm.encode(_random_inst(rng, spec))
        vectors.append((inst, [rng.randrange(16), rng.randrange(16), rng.randrange(2)],
                        int(rng.random() > 0.2)))
    nf = normal_form(spec)
    sym = symbolic(spec)
    model = spec()
    names = [n for n, _ in nf.inputs]
    for inst, ins, en in vectors[:80]:
        state = model.state()
        values = {"inst": inst, **dict(zip(names, ins, strict=True))}
        values.update({f"state.{leaf.name}": int(v)
                       for leaf, v in zip(nf.state, state, strict=True)})
        outs, nxt = sym.substitute(values)
        py = tuple(int(x) for x in model(inst, *ins))
        assert tuple(int(o.constant_value()) for o in outs.values()) == py
        assert tuple(int(v.constant_value()) for v in nxt.values()) == \
            tuple(map(int, model.state()))
        if not en:
            model.set_state(state)
    expected = model_outputs(spec, vectors)
    assert sum(r[2] for r in expected) > 100 and sum(1 - r[4] for r in expected) > 30
    got = RTLSim(spec, str(tmp_path / "dfpe")).run(vectors)
    bad = [i for i, (e, g) in enumerate(zip(expected, got, strict=True)) if e != g]
    assert bad == [], f"RTL differs from the Python model first at cycle {bad[0]}"


def _floor(signed: int, a: int, b: int, bits: int) -> tuple[int, int]:
    """Python's floor ``//`` and ``%`` on ``bits``-bit words (0, 0 for b = 0), wrapped."""
    if signed:
        a, b = (v - (1 << bits) if v >> (bits - 1) else v for v in (a, b))
    if b == 0:
        return 0, 0
    return (a // b) % (1 << bits), (a % b) % (1 << bits)


def test_divider_is_floor_division_on_every_4_bit_pair_python_smt_rtl(tmp_path):
    """Ops Div and Mod of a PE with the divider, signed and unsigned, on all 256 operand
    pairs: the Python model gives Python's floor ``//`` / ``%`` (``-8 // -1`` wraps to -8,
    ``x // 0`` and ``x % 0`` are 0); the SMT interpretation on a seeded sample and the RTL on
    every vector give the same words."""
    asm = assembler(SMALL_DIV.Inst)
    vectors, want = [], []
    for op, signed in [("Div", 1), ("Mod", 1), ("Div", 0), ("Mod", 0)]:
        inst = asm.encode(dataflow_inst(SMALL_DIV, [(0, 1, 1)], op, signed=bool(signed)))
        for a in range(16):
            for b in range(16):
                vectors.append((inst, [a, b, 0], 1))
                want.append(_floor(signed, a, b, 4)[op == "Mod"])
    py = model_outputs(SMALL_DIV, vectors)
    assert [r[0] for r in py] == want
    assert want[3 * 16] == 0 and _floor(1, 8, 15, 4) == (8, 0)     # 3 // 0; -8 // -1
    assert _floor(1, 9, 2, 4) == (12, 1) and _floor(1, 7, 14, 4) == (12, 15)  # -7 // 2; 7 // -2
    nf = normal_form(SMALL_DIV)
    sym = symbolic(SMALL_DIV)
    model = SMALL_DIV()
    names = [n for n, _ in nf.inputs]
    for inst, ins, _ in random.Random(13).sample(vectors, 96):
        values = {"inst": inst, **dict(zip(names, ins, strict=True))}
        values.update({f"state.{leaf.name}": int(v)
                       for leaf, v in zip(nf.state, model.state(), strict=True)})
        outs, _ = sym.substitute(values)
        assert tuple(int(o.constant_value()) for o in outs.values()) == \
            tuple(int(x) for x in model(inst, *ins))
    assert RTLSim(SMALL_DIV, str(tmp_path / "div")).run(vectors) == py


def test_divider_known_answers_at_32_bits_and_a_pe_without_one():
    """-7 // 2 = -4, -7 % 2 = 1, 7 % -2 = -1, INT_MIN // -1 = INT_MIN, 5 // 0 = 0 on the
    32-bit PE with ``div=True``; the default PE has no divider (an instruction using it is
    refused) and the spec reference names the option."""
    P = make_dataflow_pe(32, 3, 16, 64, div=True)
    assert P.peak_ref == "peak.examples.dataflow_pe:make_dataflow_pe(32, 3, 16, 64, div=True)"
    assert P.div and not DataflowPE.div and assembler(P.Inst).width == 240
    cases = [("Div", -7, 2, -4), ("Mod", -7, 2, 1), ("Mod", 7, -2, -1),
             ("Div", -2**31, -1, -2**31), ("Div", 5, 0, 0), ("Mod", 5, 0, 0),
             ("Div", 2**31 - 1, 3, 715827882)]
    for op, a, b, q in cases:
        inst = dataflow_inst(P, [(0, 1, 1)], op, signed=True)
        assert _run(P, inst, [(a % 2**32, b % 2**32, 0)])[0][0] == q % 2**32, (op, a, b)
    with pytest.raises(ConfigError, match="DataflowPE32_3x16: op = 'Mod' needs a divider"):
        dataflow_inst(DataflowPE, [(0, 1, 1)], "Mod", signed=True)
    with pytest.raises(SpecError, match="div = 1 must be True or False"):
        make_dataflow_pe(32, div=1)


def test_refusals():
    with pytest.raises(SpecError, match="width = 12 must be 4, 8, 16 or 32"):
        make_dataflow_pe(12)
    with pytest.raises(SpecError, match="ctr_width = 9 must be in 1..8"):
        make_dataflow_pe(8, 2, 9)
    with pytest.raises(ConfigError, match="a_level = 3 must be in 0..2"):
        dataflow_inst(DataflowPE, [(0, 1, 2)], a_level=3)
    with pytest.raises(ConfigError, match="b_const = 4294967296 does not fit 32 bits"):
        dataflow_inst(DataflowPE, [(0, 1, 2)], b_const=2**32)
    with pytest.raises(ConfigError, match="unknown field"):
        dataflow_inst(DataflowPE, [(0, 1, 2)], emit=1)
