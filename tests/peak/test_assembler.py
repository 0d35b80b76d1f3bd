"""Assembler: layout, round trips, validity (concrete, SMT, z3) and invalid encodings."""
from __future__ import annotations

import random

import hwtypes as ht
import pytest
import z3
from hwtypes import Bit, BitVector
from hwtypes.adt import Enum, Product, Sum
from hypothesis import given, settings
from hypothesis import strategies as st

from cgra.errors import ConfigError
from peak.assembler import assembler
from peak.examples import cgra_pe, toy_pe
from peak.smt import to_z3


def _strategy(node):
    if node.kind == "bit":
        return st.integers(0, 1).map(lambda v: Bit(v))
    if node.kind == "bits":
        return st.integers(0, (1 << node.width) - 1).map(node.T)
    if node.kind == "enum":
        return st.sampled_from([node.T.field_dict[n] for n in node.codes])
    if node.kind == "product":
        return st.fixed_dictionaries({n: _strategy(c) for n, c in node.children}).map(
            lambda d, T=node.T: T(**d))
    return st.one_of(*[_strategy(c).map(lambda v, T=node.T: T(v)) for _, c in node.children])


PE_ASM = assembler(cgra_pe.Inst)


def test_default_pe_layout():
    assert PE_ASM.width == 62
    f = PE_ASM.field("alu")
    assert (f.lo, f.width, f.kind) == (0, 4, "enum")
    assert f.tags["MULT2"] == 10
    assert PE_ASM.field("data0_const").width == 16
    assert sum(x.width for x in PE_ASM.fields) == 62
    assert assembler(toy_pe.Inst).width == 4
    assert [x.name for x in assembler(toy_pe.Inst).fields] == ["op", "invert_A", "scale_B",
                                                               "reg_out"]


def test_every_enum_value_round_trips():
    base = PE_ASM.decode(0)
    for f in PE_ASM.fields:
        if f.kind != "enum":
            continue
        T = type(getattr(base, f.name))
        for name, code in f.tags.items():
            value = type(base)(**{**dict(base.value_dict), f.name: T.field_dict[name]})
            enc = PE_ASM.encode(value)
            assert (enc >> f.lo) & ((1 << f.width) - 1) == code
            assert PE_ASM.decode(enc) == value


@settings(max_examples=1000, deadline=None, derandomize=True)
@given(_strategy(PE_ASM.root))
def test_random_instructions_round_trip(value):
    enc = PE_ASM.encode(value)
    assert 0 <= enc < 1 << PE_ASM.width
    assert PE_ASM.decode(enc) == value
    assert PE_ASM.decode(PE_ASM.encode_bv(value)) == value
    assert bool(PE_ASM.is_valid(enc))


def test_invalid_encoding_is_rejected_with_field_name():
    f = PE_ASM.field("cond")
    bad = 15 << f.lo                      # Cond has codes 0..14
    assert not bool(PE_ASM.is_valid(bad))
    with pytest.raises(ConfigError, match=r"field 'cond'.*code 15"):
        PE_ASM.decode(bad)
    with pytest.raises(ConfigError, match="does not fit 62 bits"):
        PE_ASM.decode(1 << 62)
    with pytest.raises(ConfigError, match="expected an instance"):
        PE_ASM.encode(3)


def test_is_valid_on_smt_and_z3():
    flat = ht.SMTBitVector[PE_ASM.width](name="asm_test_flat")
    valid = to_z3(PE_ASM.is_valid(flat))
    x = to_z3(flat)
    s = z3.Solver()
    s.set("timeout", 20000)
    s.add(valid, z3.Extract(3, 0, x) == 14)         # alu code 14 is not an opcode
    assert s.check() == z3.unsat
    s2 = z3.Solver()
    s2.set("timeout", 20000)
    s2.add(valid, z3.Extract(3, 0, x) == 13)
    assert s2.check() == z3.sat
    xz = z3.BitVec("asm_test_z3", PE_ASM.width)
    s3 = z3.Solver()
    s3.set("timeout", 20000)
    s3.add(PE_ASM.is_valid(xz), z3.Extract(8, 5, xz) == 15)   # cond = 15 invalid
    assert s3.check() == z3.unsat


class Small(Enum):
    A = 0
    B = 1
    C = 2


class Pair(Product):
    e = Small
    x = BitVector[3]


SumT = Sum[Pair, BitVector[5]]


def test_sum_layout_round_trip_and_tags():
    asm = assembler(SumT)
    assert asm.width == 6                          # payload 5 bits + 1-bit tag
    assert asm.enumerate_tags()["_tag"] == ["BitVector[5]", "Pair"]
    rng = random.Random(3)
    for _ in range(200):
        enc = asm.random_encoding(rng)
        v = asm.decode(enc)
        assert asm.decode(asm.encode(v)) == v
    v = SumT(Pair(Small.C, BitVector[3](5)))
    enc = asm.encode(v)
    assert enc >> 5 == 1 and enc & 3 == 2 and (enc >> 2) & 7 == 5
    with pytest.raises(ConfigError, match=r"field 'Pair.e'.*code 3"):
        asm.decode((1 << 5) | 3)
