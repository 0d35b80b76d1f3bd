"""The three-input PE (peak/examples/cgra_pe_d3.py): known answers of Add3 / MulAdd, the
same behaviour as the default PE on every other instruction, and rules for the multi-op
patterns' constant-operand variants (the constant goes to ``data1_const`` /
``data2_const``)."""
from __future__ import annotations

import random

from hwtypes import Bit
from hwtypes import BitVector as BV

from peak.examples import cgra_pe, cgra_pe_d3
from peak.rules import build_table


def _inst(mod, alu: str, cond: str = "Z", signed: int = 0, lut: int = 0,
          modes: tuple[str, ...] = ("BYPASS",) * 6, consts: tuple[int, ...] = (0,) * 6):
    """An instruction of ``mod``'s PE; ``modes``/``consts`` for data0, data1, data2, bit0,
    bit1, bit2 (the default PE has no data2: its entries are ignored)."""
    f = {"alu": getattr(mod.ALU, alu), "signed": Bit(signed), "cond": getattr(mod.Cond, cond),
         "lut": BV[8](lut)}
    names = ["data0", "data1", "data2", "bit0", "bit1", "bit2"]
    for name, m, c in zip(names, modes, consts, strict=True):
        if name == "data2" and mod is cgra_pe:
            continue
        f[f"{name}_mode"] = getattr(mod.Mode, m)
        f[f"{name}_const"] = BV[16](c) if name.startswith("data") else Bit(c & 1)
    return mod.Inst(**f)


def _run(pe, inst, d0, d1, d2, b0=0, b1=0, b2=0):
    res, res_p = pe(inst, BV[16](d0), BV[16](d1), BV[16](d2), Bit(b0), Bit(b1), Bit(b2))
    return int(res), int(res_p)


def test_known_answers():
    pe = cgra_pe_d3.PE()
    # the PEak paper's example: 2 + 3 * 5 = 17, as one MulAdd
    assert _run(pe, _inst(cgra_pe_d3, "MulAdd"), 3, 5, 2) == (17, 0)
    assert _run(pe, _inst(cgra_pe_d3, "MulAdd"), 300, 300, 1) == ((90000 + 1) & 0xFFFF, 0)
    assert _run(pe, _inst(cgra_pe_d3, "Add3"), 0xFFFF, 2, 3) == (4, 0)
    assert _run(pe, _inst(cgra_pe_d3, "Add3", "Z"), 0xFFFF, 1, 0) == (0, 1)
    # pointwise x * 2 + 1 in one PE: both constants in the instruction
    inst = _inst(cgra_pe_d3, "MulAdd", modes=("BYPASS", "CONST", "CONST") + ("BYPASS",) * 3,
                 consts=(0, 2, 1, 0, 0, 0))
    assert _run(pe, inst, 21, 999, 999) == (43, 0)


def test_same_as_default_pe_on_every_other_instruction():
    """1000 random instructions of the default PE's opcodes (modes, constants, conditions,
    LUT) over random input sequences: the D3 PE (data2 random) gives the same outputs (2000
    until stop 57, halved to keep `make test` under 30 minutes; every ALU op and condition
    is drawn about 70 times)."""
    rng = random.Random(5)
    alus = [a for a in cgra_pe.ALU.field_dict]
    conds = list(cgra_pe.Cond.field_dict)
    modes = list(cgra_pe.Mode.field_dict)
    for _ in range(1000):
        ms = tuple(rng.choice(modes) for _ in range(6))
        cs = tuple(rng.getrandbits(16) for _ in range(6))
        kw = dict(alu=rng.choice(alus), cond=rng.choice(conds), signed=rng.getrandbits(1),
                  lut=rng.getrandbits(8), modes=ms, consts=cs)
        a, b = cgra_pe.PE(), cgra_pe_d3.PE()
        ia, ib = _inst(cgra_pe, **kw), _inst(cgra_pe_d3, **kw)
        for _ in range(3):        # DELAY modes read the previous cycle's inputs
            d0, d1, d2 = (rng.getrandbits(16) for _ in range(3))
            bits = [rng.getrandbits(1) for _ in range(3)]
            ra = a(ia, BV[16](d0), BV[16](d1), *(Bit(x) for x in bits))
            assert (int(ra[0]), int(ra[1])) == _run(b, ib, d0, d1, d2, *bits), kw


def test_pattern_constant_variants_have_one_pe_rules(tmp_path):
    keys = ["pattern.muladd[in1=const]", "pattern.muladd[in1=const,in2=const]",
            "pattern.add3[in2=const]", "pattern.muladd", "pattern.add3"]
    table = build_table(cgra_pe_d3.PE, tmp_path, only=keys)
    alu = {n: int(v._value_) for n, v in cgra_pe_d3.ALU.field_dict.items()}
    for key in keys:
        e = table.entry(key)
        assert e.status == "found" and e.rule.cost == 1, key
        inst = e.rule.instances[0]
        want = "MulAdd" if "muladd" in key else "Add3"
        assert inst.inst["alu"] == alu[want], key
        # every constant input is an instruction constant field, no constant PE needed
        assert sorted(inst.const_fields.values()) == sorted(e.rule.const_inputs), key
        assert all(f.endswith("_const") for f in inst.const_fields), key
        assert not any(b.kind == "tie" for b in inst.inputs.values()), key
