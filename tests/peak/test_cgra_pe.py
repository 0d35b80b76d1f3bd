"""Default CGRA PE: known answers, and 2000 random vectors through Python, SMT and RTL."""
from __future__ import annotations

import random
import re

import hwtypes as ht
import pytest
from hwtypes import Bit
from hwtypes import BitVector as BV

from peak import spec_hash
from peak.assembler import assembler
from peak.examples.cgra_pe import ALU, PE, Cond, Inst, Mode
from peak.examples.toy_pe import ToyPE, make_toy_pe
from peak.model import evaluate, evaluate_specialized
from peak.normalize import normal_form
from peak.rtl import pe_circuit
from peak.sim import run_rtl
from peak.smt import evaluate_smt, symbolic

ASM = assembler(Inst)


def I(alu,  # noqa: E743 - short name for the instruction builder
      cond=Cond.Z, signed=0, lut=0, m0=Mode.BYPASS, c0=0, m1=Mode.BYPASS, c1=0,
      mb=Mode.BYPASS, cb=0):
    return Inst(alu=alu, signed=Bit(signed), cond=cond, lut=BV[8](lut), data0_mode=m0,
                data0_const=BV[16](c0), data1_mode=m1, data1_const=BV[16](c1),
                bit0_mode=mb, bit0_const=Bit(cb), bit1_mode=Mode.BYPASS, bit1_const=Bit(0),
                bit2_mode=Mode.BYPASS, bit2_const=Bit(0))


KNOWN = [
    (I(ALU.Add), (3, 4), (7, 0)),
    (I(ALU.Add, Cond.C), (0xFFFF, 2), (1, 1)),
    (I(ALU.Sub, Cond.SLT), (3, 4), (0xFFFF, 1)),
    (I(ALU.Sub, Cond.SLT), (0xFFFF, 4), (0xFFFB, 1)),      # -1 < 4 signed
    (I(ALU.Sub, Cond.ULT), (0xFFFF, 4), (0xFFFB, 0)),      # 65535 > 4 unsigned
    (I(ALU.Sub, Cond.SLE), (5, 5), (0, 1)),
    (I(ALU.Sub, Cond.EQ), (5, 6), (0xFFFF, 0)),
    (I(ALU.Abs), (0xFFFD, 0), (3, 0)),
    (I(ALU.GTE, signed=1), (0xFFFF, 2), (2, 0)),
    (I(ALU.GTE), (0xFFFF, 2), (0xFFFF, 0)),
    (I(ALU.LTE, Cond.C, signed=1), (0xFFFF, 2), (0xFFFF, 1)),
    (I(ALU.SHR, signed=1), (0x8000, 4), (0xF800, 0)),
    (I(ALU.SHR), (0x8000, 4), (0x0800, 0)),
    (I(ALU.SHL), (3, 4), (48, 0)),
    (I(ALU.MULT0), (300, 300), (90000 & 0xFFFF, 0)),
    (I(ALU.MULT1), (300, 300), ((90000 >> 8) & 0xFFFF, 0)),
    (I(ALU.MULT2), (300, 300), (90000 >> 16, 0)),
    (I(ALU.MULT2, signed=1), (0xFFFF, 2), (0xFFFF, 0)),    # -2 >> 16 == -1
    (I(ALU.And), (0xF0F0, 0xFF00), (0xF000, 0)),
    (I(ALU.Or), (0xF0F0, 0xFF00), (0xFFF0, 0)),
    (I(ALU.XOR), (0xF0F0, 0xFF00), (0x0FF0, 0)),
    (I(ALU.Add, m1=Mode.CONST, c1=7), (3, 1000), (10, 0)),
    (I(ALU.Sel, mb=Mode.CONST, cb=1), (11, 22), (11, 0)),
    (I(ALU.Sel, mb=Mode.CONST, cb=0), (11, 22), (22, 0)),
]


@pytest.mark.parametrize("inst,ab,want", KNOWN, ids=[f"{k[0].alu.name}-{k[0].cond.name}-{i}"
                                                     for i, k in enumerate(KNOWN)])
def test_known_answers(inst, ab, want):
    res, res_p = PE()(inst, ab[0], ab[1], 0, 0, 0)
    assert (int(res), int(res_p)) == want


def test_lut_and_delay_modes():
    pe = PE()
    lut_and = I(ALU.Or, Cond.LUT, lut=0x88)                 # d & e
    assert int(pe(lut_and, 0, 0, 1, 1, 0)[1]) == 1
    assert int(pe(lut_and, 0, 0, 1, 0, 1)[1]) == 0
    delay = I(ALU.Add, m0=Mode.DELAY)
    pe.reset()
    assert int(pe(delay, 5, 1, 0, 0, 0)[0]) == 1            # register still 0
    assert int(pe(delay, 9, 1, 0, 0, 0)[0]) == 6            # previous data0 (5) + 1


def test_spec_hash_is_stable_and_distinct():
    h = spec_hash(PE)
    assert re.fullmatch(r"[0-9a-f]{64}", h)
    assert spec_hash(PE) == h
    assert spec_hash(ToyPE) != h
    assert spec_hash(make_toy_pe(8)) != spec_hash(ToyPE)


def test_circuit_ports():
    circ = pe_circuit(PE)
    assert pe_circuit(PE) is circ
    names = set(circ.interface.ports)
    assert {"CLK", "RESET", "clk_en", "inst", "data0", "data1", "bit0", "bit1", "bit2",
            "res", "res_p"} <= names
    assert len(circ.inst) == ASM.width == 62


def test_per_field_smt_evaluation_matches_flat():
    inst = I(ALU.Sub, Cond.SGE, m1=Mode.CONST, c1=9)
    value = ASM.encode(inst)
    fields = {f.name: (value >> f.lo) & ((1 << f.width) - 1) for f in ASM.fields}
    a = ht.SMTBitVector[16](name="per_field_a")
    outs_f, _ = evaluate_smt(PE, fields, [a, 0, 0, 0, 0])
    outs_b, _ = evaluate_smt(PE, ht.SMTBitVector[62](value), [a, 0, 0, 0, 0])
    from pysmt.shortcuts import BV as sBV
    for x, y in zip(outs_f, outs_b, strict=True):
        assert x.value.substitute({a.value: sBV(20, 16)}).simplify() == \
            y.value.substitute({a.value: sBV(20, 16)}).simplify()
    res, flag = outs_f
    assert int(res.value.substitute({a.value: sBV(20, 16)}).simplify().constant_value()) == 11


def _random_vectors(n: int, seed: int):
    rng = random.Random(seed)
    vecs = []
    for _ in range(n):
        inputs = (rng.getrandbits(16), rng.getrandbits(16), rng.getrandbits(1),
                  rng.getrandbits(1), rng.getrandbits(1))
        vecs.append((ASM.random_encoding(rng), inputs, int(rng.random() > 0.1)))
    return vecs


def _smt_outputs(sym, inst, inputs, state):
    names = [n for n, _ in normal_form(PE).inputs]
    values = {"inst": inst, **dict(zip(names, inputs, strict=True))}
    values.update({f"state.{leaf.name}": int(v)
                   for leaf, v in zip(normal_form(PE).state, state, strict=True)})
    outs, nxt = sym.substitute(values)
    return (tuple(int(o.constant_value()) for o in outs.values()),
            tuple(int(v.constant_value()) for v in nxt.values()))


def test_2000_random_vectors_python_smt_rtl(rtl_dir):
    vectors = _random_vectors(2000, seed=2024)
    sym = symbolic(PE)
    # Python model, sequential (state comes from earlier vectors) and the SMT model with
    # constants substituted for instruction, inputs and that state
    model = PE()
    expected = []
    for inst, inputs, en in vectors:
        state = model.state()
        py_outs, py_next = evaluate(PE, inst, inputs, state)
        smt_outs, smt_next = _smt_outputs(sym, inst, inputs, state)
        assert tuple(map(int, py_outs)) == smt_outs, (ASM.decode(inst), inputs, state)
        assert tuple(map(int, py_next)) == smt_next, (ASM.decode(inst), inputs, state)
        outs = model(inst, *inputs)
        if not en:
            model.set_state(state)
        expected.append(tuple(map(int, outs)))
    # RTL: one Verilator build for all vectors (clk_en = 0 on ~10% of them)
    got = run_rtl(PE, vectors, str(rtl_dir / "pe"))
    for i, (e, g) in enumerate(zip(expected, got, strict=True)):
        assert e == g, f"vector {i}: {ASM.decode(vectors[i][0])} {vectors[i][1:]} want {e} got {g}"


def test_random_states_python_vs_smt():
    rng = random.Random(7)
    sym = symbolic(PE)
    for _ in range(200):
        inst = ASM.random_encoding(rng)
        inputs = (rng.getrandbits(16), rng.getrandbits(16), rng.getrandbits(1),
                  rng.getrandbits(1), rng.getrandbits(1))
        state = (rng.getrandbits(16), rng.getrandbits(16), rng.getrandbits(1),
                 rng.getrandbits(1), rng.getrandbits(1))
        py_outs, py_next = evaluate(PE, inst, inputs, state)
        assert (tuple(map(int, py_outs)), tuple(map(int, py_next))) == \
            _smt_outputs(sym, inst, inputs, state)
        # the per-instruction specialised normal form gives the same values and types
        sp_outs, sp_next = evaluate_specialized(PE, inst, inputs, state)
        assert [(type(x), int(x)) for x in sp_outs + sp_next] == \
            [(type(x), int(x)) for x in py_outs + py_next]


def test_specialised_model_is_used_and_fast():
    import time
    inst = I(ALU.MULT0)
    pe = PE()
    pe(inst, 3, 5, 0, 0, 0)
    start = time.process_time()
    for k in range(200):
        assert int(pe(inst, k, 5, 0, 0, 0)[0]) == 5 * k
    per_call = (time.process_time() - start) / 200
    assert per_call < 0.0005, per_call           # generic path is ~0.6 ms per call
    nf = normal_form(PE)
    assert "inst.data0_mode" in nf._plan.static_src     # the frame decodes the input modes,
    assert "inst.alu" in nf.subs["core"]._plan.static_src   # its core sub-PE the opcode
