"""The delay-chain PE (peak/examples/cgra_pe_d2.py, "D2"): known answers of the 1..4-cycle
data-input delays, the default PE's behaviour on every other mode, and random vectors
(instructions held for several cycles so the delay chains fill) through Python, SMT and RTL."""
from __future__ import annotations

import random

from hwtypes import Bit
from hwtypes import BitVector as BV

from peak import spec_hash
from peak.assembler import assembler
from peak.examples import cgra_pe, cgra_pe_d2
from peak.examples.cgra_pe_d2 import ALU, PE, Cond, DelayMode, Inst, Mode
from peak.model import evaluate
from peak.normalize import normal_form
from peak.rtl import pe_circuit
from peak.sim import run_rtl
from peak.smt import symbolic

ASM = assembler(Inst)


def I(alu, m0=DelayMode.BYPASS, m1=DelayMode.BYPASS, c0=0, c1=0, cond=Cond.Z,  # noqa: E743
      signed=0, mb=Mode.BYPASS):
    return Inst(alu=alu, signed=Bit(signed), cond=cond, lut=BV[8](0), data0_mode=m0,
                data0_const=BV[16](c0), data1_mode=m1, data1_const=BV[16](c1),
                bit0_mode=mb, bit0_const=Bit(0), bit1_mode=Mode.BYPASS, bit1_const=Bit(0),
                bit2_mode=Mode.BYPASS, bit2_const=Bit(0))


def test_isa_layout_and_mode_tags():
    """64-bit instruction: the data modes are 3-bit DelayMode fields (codes 0..5), the bit
    modes the default PE's 2-bit Mode; 11 state registers (4 + 4 x 16 bits, 3 x 1 bit)."""
    widths = {f.name: f.width for f in ASM.fields}
    assert ASM.width == 64
    assert widths["data0_mode"] == widths["data1_mode"] == 3
    assert widths["bit0_mode"] == widths["bit2_mode"] == 2
    assert {n: int(v._value_) for n, v in DelayMode.field_dict.items()} == {
        "BYPASS": 0, "DELAY": 1, "CONST": 2, "DELAY2": 3, "DELAY3": 4, "DELAY4": 5}
    assert cgra_pe_d2.MAX_DELAY == 4
    assert Mode is cgra_pe.Mode and ALU is cgra_pe.ALU and Cond is cgra_pe.Cond
    assert len(normal_form(PE).state) == 11
    assert spec_hash(PE) != spec_hash(cgra_pe.PE)
    names = set(pe_circuit(PE).interface.ports)
    assert {"inst", "data0", "data1", "bit0", "bit1", "bit2", "res", "res_p"} <= names


def test_four_cycle_delay_known_answer():
    """DELAY4 on data0: res = data0 four cycles earlier + data1 (the chain resets to 0)."""
    pe = PE()
    inst = I(ALU.Add, m0=DelayMode.DELAY4)
    got = [int(pe(inst, 10 * (k + 1), 1, 0, 0, 0)[0]) for k in range(7)]
    assert got == [1, 1, 1, 1, 11, 21, 31]


def test_each_depth_on_both_inputs():
    """data0 delayed by k, data1 by 4 - k (k = 0..4): Sub sees the inputs of those cycles."""
    depth = {0: DelayMode.BYPASS, 1: DelayMode.DELAY, 2: DelayMode.DELAY2,
             3: DelayMode.DELAY3, 4: DelayMode.DELAY4}
    for k in range(5):
        pe = PE()
        inst = I(ALU.Sub, m0=depth[k], m1=depth[4 - k])
        a_in = [100 * (t + 1) for t in range(8)]
        b_in = [t + 1 for t in range(8)]
        got = [int(pe(inst, a, b, 0, 0, 0)[0]) for a, b in zip(a_in, b_in, strict=True)]
        for t in range(4, 8):
            assert got[t] == (a_in[t - k] - b_in[t - 4 + k]) & 0xFFFF, (k, t, got)


def test_const_mode_and_default_pe_behaviour():
    """CONST and BYPASS on the data inputs and every bit mode behave as the default PE:
    2 + 3*5 = 17 (the PEak paper's answer) with a constant operand, and 300 random
    instructions of the shared modes give the default PE's outputs cycle by cycle."""
    pe = PE()
    assert int(pe(I(ALU.MULT0, m1=DelayMode.CONST, c1=5), 3, 999, 0, 0, 0)[0]) == 15
    rng = random.Random(11)
    shared = {"BYPASS": (DelayMode.BYPASS, Mode.BYPASS), "DELAY": (DelayMode.DELAY, Mode.DELAY),
              "CONST": (DelayMode.CONST, Mode.CONST)}
    a, b = cgra_pe.PE(), cgra_pe_d2.PE()
    for _ in range(300):
        alu = rng.choice(list(ALU.enumerate()))
        cond = rng.choice(list(Cond.enumerate()))
        m0, m1, mb = (rng.choice(list(shared)) for _ in range(3))
        kw = dict(signed=Bit(rng.getrandbits(1)), cond=cond, lut=BV[8](rng.getrandbits(8)),
                  data0_const=BV[16](rng.getrandbits(16)),
                  data1_const=BV[16](rng.getrandbits(16)), bit0_const=Bit(rng.getrandbits(1)),
                  bit1_mode=Mode.BYPASS, bit1_const=Bit(0), bit2_mode=Mode.BYPASS,
                  bit2_const=Bit(0), bit0_mode=shared[mb][1])
        ia = cgra_pe.Inst(alu=alu, data0_mode=shared[m0][1], data1_mode=shared[m1][1], **kw)
        ib = Inst(alu=alu, data0_mode=shared[m0][0], data1_mode=shared[m1][0], **kw)
        ins = (rng.getrandbits(16), rng.getrandbits(16), rng.getrandbits(1), 0, 0)
        assert tuple(map(int, a(ia, *ins))) == tuple(map(int, b(ib, *ins)))


def _held_vectors(n_runs: int, run: int, seed: int):
    """``n_runs`` random valid instructions, each held for ``run`` cycles with random inputs
    (so DELAY2..DELAY4 read filled chains); clock enable low on ~10% of cycles."""
    rng = random.Random(seed)
    vecs = []
    for _ in range(n_runs):
        inst = ASM.random_encoding(rng)
        for _ in range(run):
            inputs = (rng.getrandbits(16), rng.getrandbits(16), rng.getrandbits(1),
                      rng.getrandbits(1), rng.getrandbits(1))
            vecs.append((inst, inputs, int(rng.random() > 0.1)))
    return vecs


def _smt_outputs(sym, inst, inputs, state):
    nf = normal_form(PE)
    values = {"inst": inst, **dict(zip([n for n, _ in nf.inputs], inputs, strict=True))}
    values.update({f"state.{leaf.name}": int(v) for leaf, v in zip(nf.state, state,
                                                                   strict=True)})
    outs, nxt = sym.substitute(values)
    return (tuple(int(o.constant_value()) for o in outs.values()),
            tuple(int(v.constant_value()) for v in nxt.values()))


def test_random_vectors_python_smt_rtl(rtl_dir):
    """200 instructions x 6 cycles: Python == SMT (outputs and next state) on every cycle,
    Python == RTL (Verilator) on every output; at least a fifth of the cycles use a 2..4
    cycle delay on a data input."""
    vectors = _held_vectors(200, 6, seed=2026)
    deep = {int(DelayMode.DELAY2._value_), int(DelayMode.DELAY3._value_),
            int(DelayMode.DELAY4._value_)}
    f0 = next(f for f in ASM.fields if f.name == "data0_mode")
    f1 = next(f for f in ASM.fields if f.name == "data1_mode")
    n_deep = sum(((v >> f0.lo) & 7) in deep or ((v >> f1.lo) & 7) in deep
                 for v, _, _ in vectors)
    assert n_deep >= len(vectors) // 5
    sym = symbolic(PE)
    model = PE()
    expected = []
    for inst, inputs, en in vectors:
        state = model.state()
        py_outs, py_next = evaluate(PE, inst, inputs, state)
        assert (tuple(map(int, py_outs)), tuple(map(int, py_next))) == \
            _smt_outputs(sym, inst, inputs, state), (ASM.decode(inst), inputs, state)
        outs = model(inst, *inputs)
        if not en:
            model.set_state(state)
        expected.append(tuple(map(int, outs)))
    got = run_rtl(PE, vectors, str(rtl_dir / "pe_d2"))
    for i, (e, g) in enumerate(zip(expected, got, strict=True)):
        assert e == g, f"vector {i}: {ASM.decode(vectors[i][0])} {vectors[i][1:]} want {e} got {g}"
