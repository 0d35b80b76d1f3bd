"""Toy PE of the PEak paper: known answers on the Python model, the RTL and in z3."""
from __future__ import annotations

import z3
from hwtypes import Bit, BitVector

from peak.assembler import assembler
from peak.examples.toy_pe import Inst, Opcode, ToyPE, make_toy_pe
from peak.sim import model_outputs, run_rtl
from peak.smt import symbolic


def inst(op, invert_A=0, scale_B=0, reg_out=0):
    return Inst(op, Bit(invert_A), Bit(scale_B), Bit(reg_out))


# (instruction, (A, B, C, c_in)) -> expected (res, flag), in sequence (state carries over)
VECTORS = [
    ((inst(Opcode.Add, scale_B=1), (2, 3, 5, 0)), (17, 0)),
    ((inst(Opcode.Add), (0xFFFF, 1, 0, 0)), (0, 1)),
    ((inst(Opcode.Add, reg_out=1), (40, 2, 0, 0)), (0, 1)),      # previous cycle's (0, 1)
    ((inst(Opcode.Add, reg_out=1), (1, 1, 0, 0)), (42, 0)),      # delayed 40 + 2
    ((inst(Opcode.And), (0xF0F0, 0x0F0F, 0, 0)), (0, 1)),
    ((inst(Opcode.And, invert_A=1), (0xF0F0, 0x0F0F, 0, 0)), (0x0F0F, 0)),
    ((inst(Opcode.Add, invert_A=1), (5, 9, 0, 1)), (4, 1)),      # 9 - 5 = ~5 + 9 + 1
]


def test_paper_known_answers_python():
    pe = ToyPE()
    for (i, ins), want in VECTORS:
        res, flag = pe(i, *ins)
        assert (int(res), int(flag)) == want, (i, ins)


def test_reg_out_delays_by_one_call():
    pe = ToyPE()
    r = inst(Opcode.Add, reg_out=1)
    assert tuple(map(int, pe(r, 3, 4, 0, 0))) == (0, 0)
    assert tuple(map(int, pe(r, 10, 20, 0, 0))) == (7, 0)
    assert tuple(map(int, pe(r, 0, 0, 0, 0))) == (30, 0)


def test_toy_pe_width_parameter():
    pe8 = make_toy_pe(8)()
    assert make_toy_pe(8) is make_toy_pe(8)
    res, flag = pe8(inst(Opcode.Add), 0xFF, 2, 0, 0)
    assert (int(res), int(flag)) == (1, 1)
    assert isinstance(res, BitVector[8])


def test_same_vectors_on_rtl(rtl_dir):
    vectors = [v for v, _ in VECTORS]
    want = [w for _, w in VECTORS]
    assert model_outputs(ToyPE, vectors) == want
    assert run_rtl(ToyPE, vectors + [(inst(Opcode.Add, reg_out=1), (0, 0, 0, 0))],
                   str(rtl_dir / "toy"))[:len(want)] == want


def test_z3_proves_add_is_a_plus_b():
    s = symbolic(ToyPE)
    z = s.z3()
    code = assembler(Inst).encode(inst(Opcode.Add))
    res = z3.substitute(z["out.res"], (z["inst"], z3.BitVecVal(code, 4)),
                        (z["c_in"], z3.BoolVal(False)))
    solver = z3.Solver()
    solver.set("timeout", 20000)
    solver.add(res != z["A"] + z["B"])
    assert solver.check() == z3.unsat
    # and the proof is not vacuous: with c_in free it fails
    solver2 = z3.Solver()
    solver2.set("timeout", 20000)
    solver2.add(z3.substitute(z["out.res"], (z["inst"], z3.BitVecVal(code, 4)))
                != z["A"] + z["B"])
    assert solver2.check() == z3.sat


def test_plain_ints_for_instruction_fields_and_inputs():
    """The README's example, literally: Bit fields take 0/1, BitVector inputs take ints."""
    import pytest

    from cgra.errors import ConfigError
    i = Inst(Opcode.Add, 0, 1, 0)
    assert i == inst(Opcode.Add, scale_B=1)
    assert ToyPE()(i, 2, 3, 5, 0) == (17, 0)
    assert Inst(op=Opcode.And, invert_A=1, scale_B=0, reg_out=True).invert_A == Bit(1)
    assert ToyPE()(i, -1, 1, 1, 0) == (0, 1)                 # -1 is 0xFFFF
    with pytest.raises(ConfigError, match=r"Inst.invert_A = 2 is not a Bit \(0 or 1\)"):
        Inst(Opcode.Add, 2, 0, 0)
    with pytest.raises(ConfigError, match=r"input A = 65536 does not fit BitVector\[16\]"):
        ToyPE()(i, 1 << 16, 0, 0, 0)
    with pytest.raises(TypeError, match="is not of type"):   # non-ints: hwtypes' own check
        Inst(Opcode.Add, "x", 0, 0)
