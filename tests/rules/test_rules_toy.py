"""Acceptance on the PEak paper's toy PE at 8 bits (FMCAD 2022, Fig. 2)."""
from __future__ import annotations

import pytest

from peak.examples.toy_pe import make_toy_pe
from peak.ir import Target
from peak.rules import BindingPolicy, synthesize, verify_rule
from peak.rules.table import rule_from_synth

TOY = make_toy_pe(8)


def _rule(key, policy=None, method="auto"):
    t = Target(key)
    res = synthesize(TOY, t, 8, policy, method=method)
    return res, (rule_from_synth(TOY, t, 8, res) if res.status == "found" else None)


def test_add():
    res, rule = _rule("coreir.add")
    assert res.status == "found"
    assert res.found.fields == {"op": 0, "invert_A": 0, "scale_B": 0, "reg_out": 0}
    ins = rule.instances[0].inputs
    assert ins["c_in"].kind == "tie" and ins["c_in"].value == 0
    assert {ins["A"].port, ins["B"].port} == {"in0", "in1"}
    assert rule.outputs == {"out": ("pe0", "res")}
    assert verify_rule(rule, TOY).ok


def test_and():
    res, rule = _rule("coreir.and")
    assert res.status == "found"
    assert res.found.fields == {"op": 1, "invert_A": 0, "scale_B": 0, "reg_out": 0}
    assert rule.instances[0].inputs["c_in"].kind == "free"
    assert verify_rule(rule, TOY).ok


def test_multiply_add_uses_scale_b():
    res, rule = _rule("pattern.muladd")          # in0 * in1 + in2
    assert res.status == "found"
    assert res.found.fields["scale_B"] == 1 and res.found.fields["op"] == 0
    ins = rule.instances[0].inputs
    assert ins["A"].port == "in2" and {ins["B"].port, ins["C"].port} == {"in0", "in1"}
    assert verify_rule(rule, TOY).ok


def test_sub_needs_carry_in_one():
    res, rule = _rule("coreir.sub", BindingPolicy({"c_in": (0, 1)}))
    assert res.status == "found"
    assert res.found.fields["invert_A"] == 1
    ins = rule.instances[0].inputs
    assert ins["A"].port == "in1" and ins["B"].port == "in0"       # ~y + x + 1 = x - y
    assert ins["c_in"].kind == "tie" and ins["c_in"].value == 1
    assert verify_rule(rule, TOY).ok
    for policy in (BindingPolicy({"c_in": (0,)}), BindingPolicy("none")):
        assert synthesize(TOY, Target("coreir.sub"), 8, policy).status == "none"


@pytest.mark.parametrize("method", ["cegis", "direct"])
def test_plain_mul_has_no_rule_under_strict_binding(method):
    res = synthesize(TOY, Target("coreir.mul"), 8, BindingPolicy("bits"), method=method)
    assert res.status == "none"
    assert res.bindings_tried > 0


def test_direct_and_cegis_agree_on_add():
    a = synthesize(TOY, Target("coreir.add"), 8, method="direct")
    c = synthesize(TOY, Target("coreir.add"), 8, method="cegis")
    assert a.status == c.status == "found"
    assert a.found.fields == c.found.fields and a.found.ties == c.found.ties


def test_wrong_rule_gives_counterexample():
    res, rule = _rule("coreir.add")
    rule.instances[0].inst["op"] = 1                 # And instead of Add
    v = verify_rule(rule, TOY)
    assert not v.ok and v.counterexample is not None
    cex = v.counterexample
    a, b = cex.inputs["in0"], cex.inputs["in1"]
    assert cex.expected["out"] == (a + b) & 0xFF
    assert cex.got["out"] == a & b
    assert cex.got["out"] != cex.expected["out"]
