"""The BFloat16 PE (peak/examples/cgra_pe_bf16.py): rules for every BFloat16 IR op
(``float.*``, peak/ir) are found and proved on it, each rule re-checked on the PE's Python
model against the IR op's independent exact-rational reference (peak/ir/floatref.py) on
random bf16 vectors, and the integer ops keep their rules (same opcodes as the default PE).
The table is synthesised once per session (--jobs 2) for the float ops, some of their
constant-operand variants and a sample of integer ops."""
from __future__ import annotations

import random

import pytest
from hwtypes import Bit
from hwtypes import BitVector as BV

from peak.assembler import assembler
from peak.examples import cgra_pe_bf16
from peak.ir import FLOAT_CONVERSIONS, FLOAT_PRIMITIVES, ir_op, reference, targets
from peak.rules.synth import ir_dependencies

FLOAT_KEYS = list(FLOAT_PRIMITIVES) + ["float.add[in1=const]", "float.mul[in1=const]",
                                       "float.sub[in0=const]", "float.sub[in1=const]"]
INT_KEYS = ["coreir.add", "coreir.sub", "coreir.mul", "coreir.slt", "commonlib.smax",
            "coreir.const", "coreir.lshr[in1=const]", "corebit.and", "coreir.lshr"]
#: the opcode (ALU) of each float op's rule, and whether its result is res_p (cond C)
OPCODE = {"float.add": ("FAdd", False), "float.sub": ("FSub", False),
          "float.mul": ("FMul", False), "float.max": ("FMax", False),
          "float.min": ("FMin", False), "float.lt": ("FLT", True), "float.le": ("FLE", True),
          "float.gt": ("FLT", True), "float.ge": ("FLE", True), "float.eq": ("FEQ", True),
          "float.from_s16": ("I2F", False), "float.from_u16": ("I2F", False),
          "float.to_s16": ("F2I", False), "float.to_u16": ("F2I", False)}
#: integer conversions: the value of the instruction's ``signed`` bit in their rule
SIGNED = {"float.from_s16": 1, "float.from_u16": 0, "float.to_s16": 1, "float.to_u16": 0}
#: integers whose bf16 rounding is a tie or overflows the 8-bit significand, and the bf16
#: encodings of values next to the 16-bit integer range
INT_CORNERS = [0, 1, 0xFFFF, 0x7FFF, 0x8000, 0x8001, 256, 257, 258, 259, 385, 387, 32703,
               32704, 32705, 0x4380, 0x46FF, 0x4700, 0x4701, 0xC700, 0xC701, 0x477F, 0x4780,
               0x3F00, 0xBF00, 0x3FC0, 0xBFC0]
N_VECTORS = 500

CORNERS = [0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81, 0x7F7F, 0xFF7F, 0x0080,
           0x8080, 0x0001, 0x807F, 0x3F80, 0xBF80, 0x3F81, 0x3F7F, 0x3B80, 0x4000, 0x7F00]


@pytest.fixture(scope="session")
def bf16_table(tmp_path_factory):
    from peak.rules import build_table
    out = tmp_path_factory.mktemp("rules_bf16")
    return build_table(cgra_pe_bf16.PE, out, jobs=2, only=FLOAT_KEYS + INT_KEYS)


def _bf16(rng: random.Random, near: int | None = None) -> int:
    """A random bf16 encoding: a corner (incl. NaN, inf, subnormals: the PE and the
    reference both flush subnormals), a value with an exponent close to ``near``'s (exact
    ties, cancellation, rounding), or any 16-bit pattern."""
    r = rng.random()
    if r < 0.15:
        return rng.choice(CORNERS)
    if r < 0.6 and near is not None:
        e = min(254, max(1, ((near >> 7) & 0xFF) + rng.randint(-8, 8)))
        return (rng.getrandbits(1) << 15) | (e << 7) | rng.getrandbits(7)
    return rng.getrandbits(16)


def _run_rule(rule, ins: dict[str, int], rng: random.Random) -> int:
    """The rule's PE instruction run on the Python model (free inputs random)."""
    (inst,) = rule.instances
    asm = assembler(cgra_pe_bf16.Inst)
    codes = dict(inst.inst)
    for fname, port in inst.const_fields.items():
        codes[fname] = ins[port]
    bits = 0
    for f in asm.fields:
        bits |= (codes[f.name] & ((1 << f.width) - 1)) << f.lo
    args = {}
    for pin, b in inst.inputs.items():
        w = 16 if pin.startswith("data") else 1
        v = ins[b.port] if b.kind == "ir" else b.value if b.kind == "tie" \
            else rng.getrandbits(w)
        args[pin] = BV[16](v) if w == 16 else Bit(v)
    pe = cgra_pe_bf16.PE()
    res, res_p = pe(asm.decode(BV[asm.width](bits)), args["data0"], args["data1"],
                    args["bit0"], args["bit1"], args["bit2"])
    _, port = rule.outputs["out"]
    return int(res) if port == "res" else int(res_p)


def test_every_float_op_has_a_one_pe_rule_on_its_fp_opcode(bf16_table):
    alu = {n: int(v._value_) for n, v in cgra_pe_bf16.ALU.field_dict.items()}
    cond = {n: int(v._value_) for n, v in cgra_pe_bf16.Cond.field_dict.items()}
    for key in FLOAT_KEYS:
        e = bf16_table.entry(key)
        assert e.status == "found" and e.rule.cost == 1, (key, e.status, e.reason)
        op = key.split("[")[0]
        want, is_p = OPCODE[op]
        inst = e.rule.instances[0]
        assert inst.inst["alu"] == alu[want], key
        assert e.rule.outputs["out"][1] == ("res_p" if is_p else "res"), key
        if is_p:
            assert inst.inst["cond"] == cond["C"], key
        if op in SIGNED:
            assert inst.inst["signed"] == SIGNED[op], key
        # constants go to an instruction constant field (no constant PE)
        assert sorted(inst.const_fields.values()) == sorted(e.rule.const_inputs), key
    # gt / ge are lt / le with the operands swapped
    for op in ("float.gt", "float.ge"):
        ins = bf16_table.entry(op).rule.instances[0].inputs
        assert (ins["data0"].port, ins["data1"].port) == ("in1", "in0"), op


@pytest.mark.parametrize("key", FLOAT_KEYS)
def test_float_rule_on_the_python_model_equals_the_reference(bf16_table, key):
    rule = bf16_table.entry(key).rule
    op = ir_op(rule.op, 16)
    ref = reference(rule.op, 16)
    rng = random.Random(f"bf16-{key}")
    if rule.op in FLOAT_CONVERSIONS:
        for a in INT_CORNERS + [rng.getrandbits(16) for _ in range(N_VECTORS)]:
            assert _run_rule(rule, {"in": a}, rng) == ref(a), (key, hex(a))
        return
    for _ in range(N_VECTORS):
        a = _bf16(rng)
        b = _bf16(rng, near=a)
        if rng.random() < 0.5:
            a, b = b, a
        ins = dict(zip((p.name for p in op.inputs), (a, b), strict=True))
        assert _run_rule(rule, ins, rng) == ref(a, b), (key, hex(a), hex(b))


def test_integer_ops_keep_their_rules(bf16_table):
    """The integer targets have the status they have on the default PE, with the same
    opcode (codes 0..13 are the default PE's)."""
    from peak.examples import cgra_pe
    alu_int = {n: int(v._value_) for n, v in cgra_pe.ALU.field_dict.items()}
    alu = {n: int(v._value_) for n, v in cgra_pe_bf16.ALU.field_dict.items()}
    assert all(alu[n] == c for n, c in alu_int.items())
    want_alu = {"coreir.add": "Add", "coreir.sub": "Sub", "coreir.mul": "MULT0",
                "coreir.slt": "Sub", "commonlib.smax": "GTE",
                "coreir.lshr[in1=const]": "SHR"}
    for key in INT_KEYS:
        e = bf16_table.entry(key)
        if key == "coreir.lshr":                 # the PE shifts by b[3:0]: no rule
            assert e.status == "none", key
            continue
        assert e.status == "found" and e.rule.cost == 1, key
        if key in want_alu:
            assert e.rule.instances[0].inst["alu"] == alu[want_alu[key]], key


def test_ir_programs_equal_the_exact_reference():
    """The IR ops' definition (peak.bf16 via peak/ir/programs.py) == the independent
    exact-rational reference, on random and corner vectors (incl. NaN, inf, subnormals)."""
    rng = random.Random(16)
    for name in FLOAT_PRIMITIVES:
        model = ir_op(name, 16).spec()
        ref = reference(name, 16)
        if name in FLOAT_CONVERSIONS:
            for a in INT_CORNERS + CORNERS + [rng.getrandbits(16) for _ in range(500)]:
                assert int(model(0, BV[16](a))) == ref(a), (name, hex(a))
            continue
        vecs = [(a, b) for a in CORNERS for b in CORNERS]
        for _ in range(300):
            a = _bf16(rng)
            vecs.append((a, _bf16(rng, near=a)))
        for a, b in vecs:
            assert int(model(0, BV[16](a), BV[16](b))) == ref(a, b), (name, hex(a), hex(b))


def test_float_targets_only_for_pes_that_ask():
    assert not [t for t in targets(16) if t.op.startswith("float.")]
    keys = [t.key for t in targets(16, floats=True)]
    assert set(FLOAT_PRIMITIVES) <= set(keys)
    assert [t.key for t in targets(16)] == keys[:len(targets(16))]
    assert not [t for t in targets(32, floats=True) if t.op.startswith("float.")]
    assert "float.add[in0=const]" not in keys and "float.sub[in0=const]" in keys
    # a conversion has one operand: no constant variant (a constant is folded by the mapper)
    assert not [k for k in keys if k.startswith(("float.from_", "float.to_")) and "[" in k]


def test_input_dependencies_used_to_prune():
    """The pruning of sub-problems whose PE outputs ignore a bound input relies on these
    (exact for these ops: the output depends on every variable input)."""
    assert ir_dependencies("float.add", 16, "float.add") == {"in0", "in1"}
    assert ir_dependencies("float.lt", 16, "float.lt[in0=const]") == {"in1"}
    assert ir_dependencies("coreir.lshr", 16, "coreir.lshr[in1=const]") == {"in0"}
    assert ir_dependencies("coreir.mux", 16, "coreir.mux") == {"in0", "in1", "sel"}
    assert ir_dependencies("coreir.const", 16, "coreir.const") == frozenset()


def test_a_coreir_float_kernel_maps_and_simulates_on_the_fp_pe(bf16_table):
    """End to end: a CoreIR kernel of float_DW / float ops (tests/mapper/test_coreir_float.py)
    covered with this table, one PE per op, simulated on the PE's Python model == the IR."""
    import importlib.util
    from pathlib import Path

    from mapper.collateral import load_rule_table
    from mapper.mapping.compute import cover_kernel, simulate
    from mapper.frontend.coreir import import_coreir_dict
    from peak.collateral import PEInfo
    path = Path(__file__).resolve().parents[1] / "mapper" / "test_coreir_float.py"
    spec = importlib.util.spec_from_file_location("_coreir_float", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    (k,) = import_coreir_dict(mod._doc(), "f.json").values()
    doc = PEInfo.of_spec(cgra_pe_bf16.PE)
    m = cover_kernel(k, load_rule_table(bf16_table.view), doc)
    assert sorted(p.rule for p in m.pes) == ["float.add", "float.lt", "float.max",
                                            "float.mul", "float.sub"]
    rng = random.Random(3)
    for _ in range(100):
        ins = {"in": [_bf16(rng) for _ in range(3)]}
        assert simulate(m, doc, cgra_pe_bf16.PE, ins, free=rng) == k.evaluate(ins), ins
