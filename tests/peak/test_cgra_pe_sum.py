"""The Sum-instruction PE (peak/examples/cgra_pe_sum.py, issue 39 item 5): its ISA layout (tag
and payload), known answers of each format (ALU, compare, LUT) on the PEak simulator, the
assembler's encoding of each format with its tag (round trips, invalid tags), Python == SMT
== RTL on random instructions, the mapper's view of its per-format input modes, and the rules
of the ops pointwise and gaussian need (configs/small_sum.toml; tests/e2e/test_e2e_sum.py
runs both apps on the array)."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgra.errors import ConfigError
from mapper.backend.pack import input_delay, input_register, mode_field_name
from peak import spec_hash
from peak.assembler import assembler
from peak.collateral import PEInfo
from peak.examples import cgra_pe
from peak.examples.cgra_pe_sum import (PE, AluInst, AluOp, CmpInst, CmpOp, Inst, LutInst,
                                       Mode)
from peak.model import evaluate
from peak.normalize import normal_form
from peak.rules import build_table
from peak.sim import run_rtl
from peak.smt import symbolic

ASM = assembler(Inst)
M16 = 0xFFFF
B, D, C = Mode.BYPASS, Mode.DELAY, Mode.CONST


def alu(op, signed=0, m0=B, c0=0, m1=B, c1=0):
    return Inst(AluInst(op, signed, m0, c0, m1, c1))


def cmp_(op, signed=0, sel_bit0=0, m0=B, c0=0, m1=B, c1=0, mb=B, cb=0):
    return Inst(CmpInst(op, signed, sel_bit0, m0, c0, m1, c1, mb, cb))


def lut(table, m=(B, B, B), c=(0, 0, 0)):
    return Inst(LutInst(table, m[0], c[0], m[1], c[1], m[2], c[2]))


def run(inst, data0=0, data1=0, bit0=0, bit1=0, bit2=0):
    res, res_p = PE()(inst, data0, data1, bit0, bit1, bit2)
    return int(res), int(res_p)


def s16(v):
    v &= M16
    return v - (1 << 16) if v >> 15 else v


# ------------------------------------------------------------------------------- layout
def test_isa_layout_tag_and_payload():
    """46 bits: a 44-bit payload (CmpInst, the widest format) and a 2-bit tag at [45:44],
    tags in name order; the field offsets of the module docstring."""
    f = {x.name: (x.lo, x.width) for x in ASM.fields}
    assert ASM.width == 46
    tag = ASM.field("_tag")
    assert (tag.lo, tag.width, tag.kind) == (44, 2, "sum_tag")
    assert dict(tag.tags) == {"AluInst": 0, "CmpInst": 1, "LutInst": 2}
    assert f["AluInst.op"] == (0, 4) and f["AluInst.signed"] == (4, 1)
    assert f["AluInst.data0_mode"] == (5, 2) and f["AluInst.data0_const"] == (7, 16)
    assert f["AluInst.data1_mode"] == (23, 2) and f["AluInst.data1_const"] == (25, 16)
    assert f["CmpInst.op"] == (0, 3) and f["CmpInst.sel_bit0"] == (4, 1)
    assert f["CmpInst.bit0_mode"] == (41, 2) and f["CmpInst.bit0_const"] == (43, 1)
    assert f["LutInst.lut"] == (0, 8) and f["LutInst.bit2_const"] == (16, 1)
    assert all(x.variant_of == "_tag" for x in ASM.fields if x.name != "_tag")
    doc = PEInfo.of_spec(PE)
    assert doc.instruction_width == 46 and doc.config_registers == 2
    assert [p.name for p in doc.inputs] == ["data0", "data1", "bit0", "bit1", "bit2"]
    assert [p.name for p in doc.outputs] == ["res", "res_p"]
    assert len(normal_form(PE).state) == 5
    assert spec_hash(PE) != spec_hash(cgra_pe.PE)


def test_each_format_encodes_with_its_tag_and_round_trips():
    """Each format's tag at [45:44] and its fields in the payload; decode(encode(v)) == v for
    one value per format and 300 random valid encodings."""
    a = alu(AluOp.Mul, 1, B, 0, C, 0x1234)
    enc = ASM.encode(a)
    assert enc >> 44 == 0 and enc & 0xF == 2 and (enc >> 4) & 1 == 1
    assert (enc >> 23) & 3 == 2 and (enc >> 25) & M16 == 0x1234
    c = cmp_(CmpOp.GE, signed=1, sel_bit0=1, mb=C, cb=1)
    enc = ASM.encode(c)
    assert enc >> 44 == 1 and enc & 7 == 5 and (enc >> 3) & 3 == 3
    assert (enc >> 41) & 7 == 2 | 4                       # bit0_mode CONST, bit0_const 1
    t = lut(0xE8, m=(B, D, C), c=(0, 0, 1))
    enc = ASM.encode(t)
    assert enc == (2 << 44) | 0xE8 | (1 << 11) | (2 << 14) | (1 << 16)
    for v in (a, c, t):
        assert ASM.decode(ASM.encode(v)) == v
    rng = random.Random(39)
    tags = set()
    for _ in range(300):
        e = ASM.random_encoding(rng)
        assert ASM.encode(ASM.decode(e)) == e
        tags.add(e >> 44)
    assert tags == {0, 1, 2}


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 2**44 - 1))
def test_live_fields_carry_the_whole_encoding(seed, junk):
    """Property: for any valid encoding, the live fields (the tag and the selected format's,
    :meth:`Assembler.live_fields`) re-assemble to an encoding that decodes to the same
    value, and payload bits above the selected format (here random ``junk``) change
    nothing."""
    e = ASM.random_encoding(random.Random(seed))
    values = {f.name: (e >> f.lo) & ((1 << f.width) - 1) for f in ASM.fields}
    live = ASM.live_fields(values)
    fmt = next(n for n, c in ASM.field("_tag").tags.items() if c == e >> 44)
    assert {f.name.split(".")[0] for f in live} == {"_tag", fmt}
    flat = 0
    for f in live:
        flat |= values[f.name] << f.lo
    assert ASM.decode(flat) == ASM.decode(e)
    width = max(f.lo + f.width for f in live if f.name != "_tag")
    padded = (e >> 44 << 44) | (e & ((1 << width) - 1)) | (junk >> width << width)
    assert ASM.decode(padded) == ASM.decode(e)


def test_invalid_encodings_name_the_field():
    """Tag 3 names no format; an ALU opcode 12 is invalid, while the same payload bits are a
    valid LUT table under the LUT tag (payload fields are read per format)."""
    with pytest.raises(ConfigError, match=r"field '_tag'.*tag 3"):
        ASM.decode(3 << 44)
    with pytest.raises(ConfigError, match=r"field 'AluInst.op'.*code 12"):
        ASM.decode(12)
    v = ASM.decode((2 << 44) | 12)
    assert v[LutInst].match and int(v[LutInst].value.lut) == 12
    assert int(ASM.is_valid(12)) == 0 and int(ASM.is_valid((2 << 44) | 12)) == 1


# ------------------------------------------------------------------------- known answers
def test_alu_format_known_answers():
    """The PEak paper's 2 + 3*5 = 17 on two instructions, and each ALU opcode on
    a = 0xF00D (negative), b = 0x0013 against Python integer arithmetic."""
    assert run(alu(AluOp.Mul), 3, 5) == (15, 0)
    assert run(alu(AluOp.Add), 15, 2) == (17, 0)
    a, b = 0xF00D, 0x0013
    want = {
        AluOp.Add: ((a + b) & M16, (a + b) >> 16),
        AluOp.Sub: ((a - b) & M16, 1),                     # no borrow: a >= b unsigned
        AluOp.Mul: ((a * b) & M16, 0),
        AluOp.MulMid: (((a * b) >> 8) & M16, 0),
        AluOp.Shr: (a >> 3, 0),                            # b[3:0] = 3
        AluOp.Shl: ((a << 3) & M16, 0),
        AluOp.And: (a & b, 0), AluOp.Or: (a | b, 0), AluOp.Xor: (a ^ b, 0),
        AluOp.Abs: (-s16(a) & M16, 0),
    }
    for op, w in want.items():
        assert run(alu(op), a, b) == w, op
    assert run(alu(AluOp.Shr, signed=1), a, b)[0] == (s16(a) >> 3) & M16
    assert run(alu(AluOp.MulMid, signed=1), a, b)[0] == ((s16(a) * b) >> 8) & M16
    assert run(alu(AluOp.Sub), 2, 3) == (M16, 0)          # borrow
    # CONST and DELAY modes: data1 from the instruction, data0 one cycle late
    pe = PE()
    inst = alu(AluOp.Add, m0=D, m1=C, c1=1000)
    got = [int(pe(inst, x, 7, 0, 0, 0)[0]) for x in (5, 6, 9)]
    assert got == [1000, 1005, 1006]


def test_compare_format_known_answers():
    """Each comparison, signed and unsigned, on (-3, 2) and (2, 2): ``res_p`` the flag and
    ``res`` the selected operand (max with GE / GT, min with LE / LT), and ``coreir.mux``
    (sel_bit0) selecting on bit0, also on a constant bit0."""
    a, b = (-3) & M16, 2
    flags = {CmpOp.EQ: (0, 0), CmpOp.NE: (1, 1), CmpOp.LT: (1, 0), CmpOp.LE: (1, 0),
             CmpOp.GT: (0, 1), CmpOp.GE: (0, 1)}        # (signed, unsigned) on (-3, 2)
    for op, (fs, fu) in flags.items():
        assert run(cmp_(op, signed=1), a, b) == ((a if fs else b), fs), op
        assert run(cmp_(op, signed=0), a, b) == ((a if fu else b), fu), op
    assert run(cmp_(CmpOp.EQ), 2, 2)[1] == 1 and run(cmp_(CmpOp.LT), 2, 2)[1] == 0
    assert run(cmp_(CmpOp.GE, signed=1), a, b) == (2, 0)          # the docstring's answer
    assert run(cmp_(CmpOp.GE, signed=0), a, b) == (a, 1)          # unsigned max
    assert run(cmp_(CmpOp.LE, signed=1), a, b) == (a, 1)          # signed min
    assert run(cmp_(CmpOp.EQ, sel_bit0=1), 11, 22, bit0=1) == (11, 0)
    assert run(cmp_(CmpOp.EQ, sel_bit0=1), 11, 22, bit0=0) == (22, 0)
    assert run(cmp_(CmpOp.EQ, sel_bit0=1, mb=C, cb=1), 11, 22, bit0=0) == (11, 0)
    assert run(cmp_(CmpOp.LT, m1=C, c1=100), 99, 0)[1] == 1


def test_lut_format_known_answers():
    """``res_p = lut[{bit2, bit1, bit0}]`` for every input combination of three tables
    (d & e = 0x88, majority = 0xE8, parity = 0x96); ``res`` = 0; a constant bit2."""
    for table in (0x88, 0xE8, 0x96):
        for k in range(8):
            d, e, f = k & 1, (k >> 1) & 1, k >> 2
            assert run(lut(table), 0x1234, 0x5678, d, e, f) == (0, (table >> k) & 1)
    assert run(lut(0x80, m=(B, B, C), c=(0, 0, 1)), 0, 0, 1, 1, 0) == (0, 1)


# ---------------------------------------------------------------- Python == SMT == RTL
def _vectors(n: int, run_len: int, seed: int):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        inst = ASM.random_encoding(rng)
        for _ in range(run_len):
            out.append((inst, (rng.getrandbits(16), rng.getrandbits(16), rng.getrandbits(1),
                               rng.getrandbits(1), rng.getrandbits(1)), 1))
    return out


def test_random_vectors_python_smt_rtl(rtl_dir):
    """120 random valid instructions (all three formats) x 3 cycles: the Python model equals
    the SMT model (outputs and next state) and the RTL (Verilator) cycle by cycle."""
    vectors = _vectors(120, 3, seed=5)
    assert {v >> 44 for v, _, _ in vectors} == {0, 1, 2}
    nf = normal_form(PE)
    sym = symbolic(PE)
    model = PE()
    expected = []
    for inst, inputs, _ in vectors:
        state = model.state()
        py_outs, py_next = evaluate(PE, inst, inputs, state)
        values = {"inst": inst, **dict(zip([n for n, _ in nf.inputs], inputs, strict=True))}
        values.update({f"state.{leaf.name}": int(v)
                       for leaf, v in zip(nf.state, state, strict=True)})
        outs, nxt = sym.substitute(values)
        assert tuple(int(o.constant_value()) for o in outs.values()) == \
            tuple(map(int, py_outs)), ASM.decode(inst)
        assert tuple(int(v.constant_value()) for v in nxt.values()) == tuple(map(int, py_next))
        expected.append(tuple(map(int, model(inst, *inputs))))
    got = run_rtl(PE, vectors, str(rtl_dir / "pe_sum"))
    for i, (e, g) in enumerate(zip(expected, got, strict=True)):
        assert e == g, f"vector {i}: {ASM.decode(vectors[i][0])} {vectors[i][1]} want {e} got {g}"


# ------------------------------------------------------------- the mapper's input modes
def test_mapper_finds_the_selected_formats_input_modes():
    """pack / pipeline delay a PE input through ``<format>.<port>_mode`` of the format the
    instance's tag selects: ALU data inputs and the LUT's bit inputs can be registered; a
    constant operand or an input the format has no mode for cannot."""
    pe = PEInfo.of_spec(PE)
    instr = {f.name: 0 for f in pe.fields}
    alu_cfg = {"instruction": {**instr, "AluInst.data1_mode": 2}}
    assert mode_field_name(pe, alu_cfg, "data0") == "AluInst.data0_mode"
    assert input_delay(pe, alu_cfg, "data0") == 0
    assert input_register(pe, alu_cfg, "data0") == ("AluInst.data0_mode", 1)
    assert input_register(pe, alu_cfg, "data1") is None          # CONST
    lut_cfg = {"instruction": {**instr, "_tag": 2}}
    assert input_register(pe, lut_cfg, "bit2") == ("LutInst.bit2_mode", 1)
    assert input_delay(pe, lut_cfg, "data0") is None             # no data modes in LutInst
    cmp_cfg = {"instruction": {**instr, "_tag": 1}}
    assert input_register(pe, cmp_cfg, "bit0") == ("CmpInst.bit0_mode", 1)
    assert input_delay(pe, cmp_cfg, "bit1") is None
    # the default PE's plain field names are unchanged
    stock = PEInfo.of_spec(cgra_pe.PE)
    assert mode_field_name(stock, {"instruction": {}}, "data0") == "data0_mode"


# --------------------------------------------------------------------------------- rules
#: the rule targets pointwise (mul, add by constants) and gaussian (add, mul by a weight,
#: the final shift) map to, and the ones that exercise the compare and LUT formats
NEEDED = {
    "coreir.add": ("AluInst", {"AluInst.op": "Add"}),
    "coreir.add[in1=const]": ("AluInst", {"AluInst.op": "Add", "AluInst.data1_mode": "CONST"}),
    "coreir.mul[in1=const]": ("AluInst", {"AluInst.op": "Mul", "AluInst.data1_mode": "CONST"}),
    "coreir.lshr[in1=const]": ("AluInst", {"AluInst.op": "Shr", "AluInst.data1_mode": "CONST"}),
    "commonlib.smax": ("CmpInst", {"CmpInst.op": "GT"}),
    "coreir.mux": ("CmpInst", {}),
    "coreir.slt": ("CmpInst", {"CmpInst.op": "LT"}),
    "corebit.and": ("LutInst", {}),
}


def test_rules_of_the_ops_pointwise_and_gaussian_need(tmp_path):
    """A cold partial rule table (these targets only): each found, one PE, in the format
    and opcode that implement it (signed compares and max, LUT table 0x88 for ``d & e``,
    the select on bit0 for ``coreir.mux``)."""
    table = build_table(PE, tmp_path, only=list(NEEDED))
    by = {e.target: e for e in table.entries}
    assert set(by) == set(NEEDED)
    for key, (fmt, tags) in NEEDED.items():
        e = by[key]
        assert e.status == "found", (key, e.status)
        assert len(e.rule.instances) == 1, key
        doc = e.rule.to_json(PE)["instances"][0]
        # the tag and the selected format's enum fields only (the others are not live)
        assert doc["inst_tags"]["_tag"] == fmt, (key, doc["inst_tags"])
        assert {k.split(".")[0] for k in doc["inst_tags"]} == {"_tag", fmt}
        for k, v in tags.items():
            assert doc["inst_tags"][k] == v, (key, k, doc["inst_tags"])
        assert int(doc["inst_bits"], 16) >> 44 == ASM.field("_tag").tags[fmt]
    inst = {k: by[k].rule.instances[0].inst for k in NEEDED}
    assert inst["commonlib.smax"]["CmpInst.signed"] == 1
    assert inst["coreir.slt"]["CmpInst.signed"] == 1
    assert inst["coreir.lshr[in1=const]"]["AluInst.signed"] == 0
    assert inst["coreir.mux"]["CmpInst.sel_bit0"] == 1
    assert inst["corebit.and"]["LutInst.lut"] == 0x88
    assert ASM.live_fields(inst["corebit.and"])[0].name == "_tag"
    assert [f.name for f in ASM.live_fields(inst["corebit.and"])][1:3] == \
        ["LutInst.lut", "LutInst.bit0_mode"]
