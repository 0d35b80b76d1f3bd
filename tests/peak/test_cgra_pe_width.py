"""The width-parameterised default PE (``peak.examples.cgra_pe.make_pe``): the 16-bit ``PE``
is ``make_pe(16)``, a 32-bit PE has 32-bit data ports and instruction constants, resolves
from its reference in another process, and computes the 32-bit known answers."""
from __future__ import annotations

import random

import pytest
from hwtypes import Bit
from hwtypes import BitVector as BV

from cgra.errors import SpecError
from peak import load_spec, normal_form, spec_ref
from peak.assembler import assembler
from peak.examples.cgra_pe import ALU, PE, Cond, Mode, make_inst, make_pe
from peak.model import evaluate
from peak.smt import symbolic

PE32 = make_pe(32)
INST32 = make_inst(32)
M = 0xFFFFFFFF


def I(alu, cond=Cond.Z, signed=0, m1=Mode.BYPASS, c1=0):  # noqa: E743 - instruction builder
    return INST32(alu=alu, signed=Bit(signed), cond=cond, lut=BV[8](0),
                  data0_mode=Mode.BYPASS, data0_const=BV[32](0), data1_mode=m1,
                  data1_const=BV[32](c1), bit0_mode=Mode.BYPASS, bit0_const=Bit(0),
                  bit1_mode=Mode.BYPASS, bit1_const=Bit(0), bit2_mode=Mode.BYPASS,
                  bit2_const=Bit(0))


def test_factory_names_ports_and_reference():
    assert make_pe(16) is PE and PE.__name__ == "PE" and spec_ref(PE) == \
        "peak.examples.cgra_pe:PE"
    assert make_pe(32) is PE32 and PE32.__name__ == "PE32" and PE32.width == 32
    nf = normal_form(PE32)
    widths = {n: int(getattr(T, "size", 1)) for n, T in (*nf.inputs, *nf.outputs)}
    assert widths == {"data0": 32, "data1": 32, "bit0": 1, "bit1": 1, "bit2": 1, "res": 32,
                      "res_p": 1}
    assert spec_ref(PE32) == "peak.examples.cgra_pe:make_pe(32)"
    assert load_spec(spec_ref(PE32)) is PE32
    fields = {f.name: f.width for f in assembler(nf.isa).fields}
    assert fields["data0_const"] == fields["data1_const"] == 32
    assert assembler(nf.isa).width == 62 + 2 * 16          # the 16-bit PE's 62 bits + 2x16


@pytest.mark.parametrize("bad", [24, 2, 0])
def test_width_must_be_a_power_of_two(bad):
    with pytest.raises(SpecError, match=rf"make_pe\({bad}\).*power of two"):
        load_spec(f"peak.examples.cgra_pe:make_pe({bad})")


KNOWN32 = [
    (I(ALU.Add, Cond.C), (M, 2), (1, 1)),                           # carry out of bit 31
    (I(ALU.Add), (0x10000, 0xFFFF), (0x1FFFF, 0)),                  # no 16-bit wrap
    (I(ALU.Sub, Cond.SLT), (M, 4), (M - 4, 1)),                     # -1 < 4 signed
    (I(ALU.Sub, Cond.ULT), (M, 4), (M - 4, 0)),
    (I(ALU.SHR, signed=1), (0x80000000, 31), (M, 0)),               # shift amount b[4:0]
    (I(ALU.SHR), (0x80000000, 31), (1, 0)),
    (I(ALU.SHL), (3, 33), (6, 0)),                                  # 33 & 31 = 1
    (I(ALU.MULT0), (0x10001, 0x10001), ((0x10001 * 0x10001) & M, 0)),
    (I(ALU.MULT1), (0x10000, 0x10000), (0x10000, 0)),               # bits 47..16 of 2^32
    (I(ALU.MULT2), (0x10000, 0x10000), (1, 0)),                     # bits 63..32
    (I(ALU.MULT1, signed=1), (M, 3), (M, 0)),                       # (-3) >> 16 = -1
    (I(ALU.Abs), (M - 2, 0), (3, 0)),
    (I(ALU.GTE, signed=1), (M, 2), (2, 0)),
    (I(ALU.Add, m1=Mode.CONST, c1=100000), (1, 0), (100001, 0)),    # 32-bit constant field
]


@pytest.mark.parametrize("inst,ab,want", KNOWN32,
                         ids=[f"{k[0].alu.name}-{i}" for i, k in enumerate(KNOWN32)])
def test_known_answers_32(inst, ab, want):
    res, res_p = PE32()(inst, ab[0], ab[1], 0, 0, 0)
    assert (int(res), int(res_p)) == want


def test_python_model_equals_smt_on_random_vectors():
    """200 random (instruction, inputs, state) of the 32-bit PE: the Python model and the
    SMT model with constants substituted agree on outputs and next state."""
    nf = normal_form(PE32)
    asm = assembler(nf.isa)
    sym = symbolic(PE32)
    names = [n for n, _ in nf.inputs]
    rng = random.Random(32)
    for _ in range(200):
        inst = asm.random_encoding(rng)
        inputs = (rng.getrandbits(32), rng.getrandbits(32), rng.getrandbits(1),
                  rng.getrandbits(1), rng.getrandbits(1))
        state = (rng.getrandbits(32), rng.getrandbits(32), rng.getrandbits(1),
                 rng.getrandbits(1), rng.getrandbits(1))
        py_outs, py_next = evaluate(PE32, inst, inputs, state)
        values = {"inst": inst, **dict(zip(names, inputs, strict=True))}
        values.update({f"state.{leaf.name}": int(v)
                       for leaf, v in zip(nf.state, state, strict=True)})
        outs, nxt = sym.substitute(values)
        assert tuple(map(int, py_outs)) == tuple(int(o.constant_value()) for o in outs.values())
        assert tuple(map(int, py_next)) == tuple(int(v.constant_value()) for v in nxt.values())
