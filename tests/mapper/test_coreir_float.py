"""CoreIR BFloat16 ops: ``float_DW.fp_add`` / ``fp_mul`` and CoreIR ``float.*`` import as the
IR's ``float.*`` ops (peak/ir, mapper/ir), evaluate with the bf16 semantics of peak.bf16,
and format genargs other than BFloat16 are refused."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from cgra.errors import MappingError
from mapper import ir
from mapper.frontend.coreir import import_coreir_dict
from mapper.interp import eval_kernel
from peak.bf16 import bf16_bits, bf16_value

BF = {"exp_bits": ["Int", 8], "frac_bits": ["Int", 7]}
DW = {"exp_width": ["Int", 8], "sig_width": ["Int", 7], "ieee_compliance": ["Bool", False]}
W16 = ["Array", 16, "Bit"]


def _doc() -> dict:
    """out = max(a*b + c, c) - a ; lt = a < b ; all bf16 (a, b, c a 3-element window)."""
    return {"namespaces": {"global": {"modules": {"hcompute_f": {
        "type": ["Record", [["in", ["Array", 3, ["Array", 16, "BitIn"]]],
                            ["out", W16], ["lt", "Bit"]]],
        "instances": {
            "mul": {"genref": "float_DW.fp_mul", "genargs": DW},
            "add": {"genref": "float_DW.fp_add", "genargs": DW},
            "mx": {"genref": "float.max", "genargs": BF},
            "sub": {"genref": "float.sub", "genargs": BF},
            "less": {"genref": "float.lt", "genargs": BF},
            "mn": {"genref": "float.min", "genargs": BF},
        },
        "connections": [
            ["self.in.0", "mul.in0"], ["self.in.1", "mul.in1"],
            ["mul.out", "add.in0"], ["self.in.2", "add.in1"],
            ["add.out", "mx.in0"], ["self.in.2", "mx.in1"],
            ["mx.out", "sub.in0"], ["self.in.0", "sub.in1"],
            ["self.in.0", "less.in0"], ["self.in.1", "less.in1"],
            ["self.in.0", "mn.in0"], ["self.in.1", "mn.in1"],
            ["sub.out", "self.out"], ["less.out", "self.lt"],
        ]}}}}}


def test_float_ops_import_as_ir_float_ops():
    (k,) = import_coreir_dict(_doc(), "f.json").values()
    assert sorted(k.op_counts()) == ["float.add", "float.lt", "float.max", "float.mul",
                                     "float.sub"]                      # min reaches no output
    assert all(n.width == 16 for n in k.live_nodes() if n.op.startswith("float.") and
               ir.OPS[n.op].result == ir.DATA)
    a, b, c = 1.5, 2.0, 0.25
    got = k.evaluate({"in": [bf16_bits(a), bf16_bits(b), bf16_bits(c)]})
    assert bf16_value(got["out"]) == max(a * b + c, c) - a
    assert got["lt"] == 1
    got = k.evaluate({"in": [bf16_bits(-3.0), bf16_bits(0.5), bf16_bits(8.0)]})
    assert bf16_value(got["out"]) == 8.0 + 3.0 and got["lt"] == 1
    # the numpy interpreter agrees, element-wise
    xs = [np.array([bf16_bits(v) for v in (1.5, -3.0, 1e30, 0.0)], np.int64),
          np.array([bf16_bits(v) for v in (2.0, 0.5, 1e30, -0.0)], np.int64),
          np.array([bf16_bits(v) for v in (0.25, 8.0, 1.0, 0.0)], np.int64)]
    out = eval_kernel(k, {"in": xs})
    for i in range(4):
        want = k.evaluate({"in": [int(x[i]) for x in xs]})
        assert int(out["out"][i]) == want["out"] and int(out["lt"][i]) == want["lt"]
    assert int(out["out"][2]) == 0x7F80                    # 1e30 * 1e30 overflows to inf


def test_float_semantics_are_the_rule_library_reference():
    from peak.ir import FLOAT_PRIMITIVES, reference
    assert ir.FLOAT_OPS == set(FLOAT_PRIMITIVES)
    for op in FLOAT_PRIMITIVES:
        ref = reference(op, 16)
        for a, b in [(0x3F80, 0x4000), (0x7FC0, 0), (0x8000, 0), (0x0001, 0x8000)]:
            args = [a] if ir.OPS[op].operands == (ir.DATA,) else [a, b]
            assert ir.eval_op(op, args, 16) == ref(*args), op


def test_float_ops_are_not_folded_with_identities():
    k = ir.Kernel("s")
    k.declare_input("a", 1)
    x = k.input("a")
    k.set_output("o", k.add("float.sub", k.add("float.mul", x, k.const(bf16_bits(1.0))),
                            k.const(0)))
    s = ir.simplify(k)
    assert s.num_ops() == 2                    # x * 1 - 0 is not x: 0x0001 -> 0, NaN -> 0x7FC0
    assert s.evaluate({"a": [0x0001]})["o"] == 0 and s.evaluate({"a": [0x7F81]})["o"] == 0x7FC0


def test_non_bfloat16_formats_are_refused():
    doc = copy.deepcopy(_doc())
    doc["namespaces"]["global"]["modules"]["hcompute_f"]["instances"]["mx"]["genargs"] = \
        {"exp_bits": ["Int", 8], "frac_bits": ["Int", 23]}
    with pytest.raises(MappingError, match="instance mx: field genargs.frac_bits.*only "
                                           "BFloat16"):
        import_coreir_dict(doc, "f.json")


def test_float_div_and_exp_import_as_their_decompositions():
    """CoreIR ``float.div`` and ``float.exp`` (BFloat16 genargs) become the multi-PE
    approximations of mapper/frontend/float_math.py: out = exp(a / b) within a few ulp."""
    doc = {"namespaces": {"global": {"modules": {"hcompute_g": {
        "type": ["Record", [["in", ["Array", 2, ["Array", 16, "BitIn"]]], ["out", W16]]],
        "instances": {"q": {"genref": "float.div", "genargs": BF},
                      "e": {"genref": "float.exp", "genargs": BF}},
        "connections": [["self.in.0", "q.in0"], ["self.in.1", "q.in1"], ["q.out", "e.in"],
                        ["e.out", "self.out"]]}}}}}
    (k,) = import_coreir_dict(doc, "g.json").values()
    assert k.op_counts().total() == 11 + 19
    assert "float.div" not in k.op_counts() and k.op_counts()["float.to_s16"] == 1
    for a, b in [(3.0, 2.0), (-1.0, 4.0), (10.0, 7.0), (0.5, -0.125)]:
        got = bf16_value(k.evaluate({"in": [bf16_bits(a), bf16_bits(b)]})["out"])
        q = a / b
        # 2 ulp (relative 2**-6 at most) in q becomes |q| times that in exp(q); exp adds 2 ulp
        tol = np.exp(q) * (2.0 ** -6 * abs(q) + 2.0 ** -6 + 2.0 ** -8)
        assert abs(got - np.exp(q)) <= tol, (a, b)
    bad = copy.deepcopy(doc)
    bad["namespaces"]["global"]["modules"]["hcompute_g"]["instances"]["e"]["genargs"] = {
        "exp_bits": ["Int", 8], "frac_bits": ["Int", 23]}
    with pytest.raises(MappingError, match="frac_bits"):
        import_coreir_dict(bad, "g.json")
