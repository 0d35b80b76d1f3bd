"""CoreIR kernels of DesignWare float modules (``float_DW.fp_add`` / ``fp_mul`` / ``fp_cmp``
with ports ``a``, ``b``, ``rnd``, ``z``, ``status`` / ``zctr``, ``altb``, ``z0``, ``z1`` ...)
import as the IR's BFloat16 ops (mapper/frontend/coreir.py, ``_designware``), map onto the
BFloat16 PE (peak/examples/cgra_pe_bf16.py) and agree with an independent bf16 reference
(float64 arithmetic rounded to 8 significand bits, ties to even; not peak.bf16, not the PE);
other formats, rounding modes and status reads are refused with one-line errors."""
from __future__ import annotations

import copy
import json
import math
import random

import pathlib

import numpy as np
import pytest

from cgra.errors import MappingError
from mapper.frontend.coreir import EXAMPLES_DIR, import_coreir, import_coreir_dict
from mapper.collateral import load_rule_table
from mapper.mapping.compute import cover_kernel, simulate
from peak.collateral import PEInfo
from peak.examples import cgra_pe_bf16
from peak.rules import build_table

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = EXAMPLES_DIR / "bf16" / "bf16_muladd_select_dw.json"
KERNEL = "hcompute_muladd_select"


def bf16_round(x: float) -> int:
    """The bf16 encoding of the real ``x`` rounded to nearest, ties to even (8 significand
    bits), for normal results only (the test vectors keep every value normal)."""
    if x == 0:
        return 0x8000 if math.copysign(1.0, x) < 0 else 0
    m, e = math.frexp(x)                          # x = m * 2**e, 0.5 <= |m| < 1
    r = round(m * 256)                            # Python rounds half to even
    enc = np.float32(r * 2.0 ** (e - 8)).view(np.uint32)   # exact: 8 significant bits
    assert enc & 0xFFFF == 0
    return int(enc) >> 16


def bf16_real(bits: int) -> float:
    return float(np.uint32(bits << 16).view(np.float32))


def reference(a: int, b: int, c: int, d: int) -> dict[str, int]:
    """``s = (a * b) + c`` (each op rounded), ``lt = s < d``, ``hi = max(s, d)``,
    ``out = lt ? s : d`` on bf16 encodings."""
    p = bf16_round(bf16_real(a) * bf16_real(b))       # exact in float64, then rounded
    s = bf16_round(bf16_real(p) + bf16_real(c))       # exact in float64 for these exponents
    lt = bf16_real(s) < bf16_real(d)
    return {"out": s if lt else d, "hi": d if lt or bf16_real(s) == bf16_real(d) else s,
            "lt": int(lt)}


def _vectors(n: int, seed: int) -> list[list[int]]:
    """Random normal bf16 operands with exponents in [-12, 12] (every sum and product exact
    in float64 before the one rounding, no overflow or subnormal)."""
    rng = random.Random(seed)
    return [[(rng.getrandbits(1) << 15) | ((127 + rng.randint(-12, 12)) << 7)
             | rng.getrandbits(7) for _ in range(4)] for _ in range(n)]


def _doc() -> dict:
    return json.loads(EXAMPLE.read_text())


def _module(doc: dict) -> dict:
    return doc["namespaces"]["global"]["modules"][KERNEL]


def test_example_imports_as_bf16_ir_ops_and_matches_the_reference():
    (k,) = import_coreir(EXAMPLE).values()
    assert dict(k.op_counts()) == {"float.mul": 1, "float.add": 1, "float.lt": 1,
                                   "float.max": 1, "coreir.mux": 1}
    for v in _vectors(300, 1):
        assert k.evaluate({"in": v}) == reference(*v), v
    # a known answer: 1.5 * 2 + 0.25 = 3.25 < 4
    got = k.evaluate({"in": [0x3FC0, 0x4000, 0x3E80, 0x4080]})
    assert got == {"out": 0x4050, "hi": 0x4080, "lt": 1}


@pytest.fixture(scope="module")
def bf16_rules():
    """The BFloat16 PE's rules for the example's ops only, cached in the shared rules
    directory build/rules like the e2e designs' (~100 s cold on 2 loaded cores, then
    read from the cache)."""

    table = build_table(cgra_pe_bf16.PE, ROOT / "build" / "rules", jobs=2,
                        only=["float.add", "float.mul", "float.lt", "float.max",
                              "coreir.mux"])
    return load_rule_table(table.view)


def test_example_maps_on_the_bf16_pe_and_its_pes_match_the_reference(bf16_rules):

    (k,) = import_coreir(EXAMPLE).values()
    pe = PEInfo.of_spec(cgra_pe_bf16.PE)
    m = cover_kernel(k, bf16_rules, pe)
    assert len(m.pes) == 5
    assert sorted(p.rule for p in m.pes) == ["coreir.mux", "float.add", "float.lt",
                                            "float.max", "float.mul"]
    rng = random.Random(7)
    for v in _vectors(100, 2):
        assert simulate(m, pe, cgra_pe_bf16.PE, {"in": v}, free=rng) == reference(*v), v


def _refused(doc: dict) -> str:
    with pytest.raises(MappingError) as exc:
        import_coreir_dict(doc, "dw.json")
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"dw.json: module {KERNEL}: instance ")
    return msg


def test_other_float_formats_are_refused():
    doc = _doc()
    _module(doc)["instances"]["mul"]["genargs"]["sig_width"] = ["Int", 23]
    msg = _refused(doc)
    assert "instance mul (float_DW.fp_mul): genargs exp_width = 8, sig_width = 23" in msg
    assert "only BFloat16 (exp_width 8, sig_width 7)" in msg
    doc = _doc()
    _module(doc)["instances"]["cmp"]["genargs"]["ieee_compliance"] = ["Bool", True]
    assert "instance cmp (float_DW.fp_cmp): genargs ieee_compliance" in _refused(doc)


@pytest.mark.parametrize("value, how", [("3'h1", "the constant 1"),
                                        ("3'h4", "the constant 4")])
def test_other_rounding_modes_are_refused(value, how):
    doc = _doc()
    _module(doc)["instances"]["rnd_add"]["modargs"]["value"] = [["BitVector", 3], value]
    msg = _refused(doc)
    assert f"instance add (float_DW.fp_add): rnd is {how}" in msg
    assert "tie rnd to a 3-bit coreir.const 0" in msg


def test_a_computed_or_missing_rounding_mode_is_refused():
    doc = _doc()
    mod = _module(doc)
    mod["connections"] = [c for c in mod["connections"] if c[1] != "mul.rnd"]
    assert "instance mul (float_DW.fp_mul): rnd is unconnected" in _refused(doc)
    doc = _doc()
    mod = _module(doc)
    mod["type"][1].append(["mode", ["Array", 3, "BitIn"]])
    mod["connections"] = [["self.mode", "mul.rnd"] if c[1] == "mul.rnd" else c
                          for c in mod["connections"]]
    assert "instance mul (float_DW.fp_mul): rnd is driven by self.mode" in _refused(doc)


@pytest.mark.parametrize("inst, port", [("add", "status"), ("cmp", "status1"),
                                        ("cmp", "unordered")])
def test_status_read_by_logic_is_refused(inst, port):
    doc = _doc()
    mod = _module(doc)
    mod["type"][1].append(["flags", ["Array", 8, "Bit"] if "status" in port else "Bit"])
    mod["connections"].append([f"{inst}.{port}", "self.flags"])
    msg = _refused(doc)
    assert f"instance {inst} (float_DW.fp_" in msg
    assert f"output {port} is read by self.flags; the FP PE has no {port} flag" in msg


def test_fp_cmp_min_max_follow_zctr_and_need_a_constant():
    doc = _doc()
    mod = _module(doc)
    mod["instances"]["zctr"]["modargs"]["value"] = ["Bool", True]    # z1 = min(s, d)
    (k,) = import_coreir_dict(doc, "dw.json").values()
    assert "float.min" in k.op_counts() and "float.max" not in k.op_counts()
    for v in _vectors(50, 3):
        r = reference(*v)
        lo = r["out"] if r["lt"] else v[3]
        assert k.evaluate({"in": v})["hi"] == lo, v
    mod["connections"] = [c for c in mod["connections"] if c[1] != "cmp.zctr"]
    assert "instance cmp (float_DW.fp_cmp): zctr is unconnected and z0/z1 are read" in \
        _refused(doc)


def test_unknown_port_of_a_designware_module_is_refused():
    doc = copy.deepcopy(_doc())
    _module(doc)["connections"].append(["self.in.0", "cmp.c"])
    msg = _refused(doc)
    assert "instance cmp (float_DW.fp_cmp): connection names port 'c'" in msg
    assert "a, aeqb, agtb, altb, b, z0, z1, zctr" in msg
