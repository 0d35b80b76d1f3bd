"""Two-PE rules when the PE lacks an op (issue 41): on the PE without GTE
(peak/examples/cgra_pe_nomax.py) smax / umax have no single-instruction rule; the table
composes one from a shape of peak.ir.TWO_PE_SHAPES (a compare PE feeding a select PE) and
the parts' single-PE rules, proves it with verify_rule before it is stored (action
``decomposed``) and takes it from the cache on the next run without any synthesis."""
from __future__ import annotations

import random

import pytest

from peak.examples.cgra_pe_nomax import PE as NoMaxPE
from peak.ir import TWO_PE_SHAPES, Target, reference
from peak.rules import build_table
from peak.rules.format import read_table
from peak.rules.rule import verify_rule
from peak.rules.table import compose_shape, shape_parts

KEYS = ["commonlib.smax", "commonlib.smax[in1=const]", "commonlib.umax", "commonlib.umin"]


def test_two_pe_shapes_compute_their_op():
    """Every shape equals its op's reference on random 16-bit inputs (ties included)."""
    rng = random.Random(11)
    for op, shapes in TWO_PE_SHAPES.items():
        want = reference(op, 16)
        for shape in shapes:
            for _ in range(400):
                a = rng.getrandbits(16)
                b = a if rng.random() < 0.2 else rng.getrandbits(16)
                env = {"$in0": a, "$in1": b}
                for n in shape["nodes"]:
                    ports = sorted(n["args"]) if "in" not in n["args"] else ["in"]
                    if n["op"] == "coreir.mux":
                        ports = ["in0", "in1", "sel"]
                    env[n["id"]] = reference(n["op"], 16)(*(env[n["args"][p]] for p in ports))
                assert env[shape["outputs"]["out"]] == want(a, b), (op, shape)


@pytest.fixture(scope="module")
def nomax_tables(tmp_path_factory):
    """A cold run of KEYS on the no-max PE and a second (warm) run on the same directory."""
    out = tmp_path_factory.mktemp("rules")
    cold = build_table(NoMaxPE, out, only=KEYS)
    warm = build_table(NoMaxPE, out, only=KEYS)
    return out, cold, warm


def test_max_is_composed_from_compare_and_select(nomax_tables):
    out, cold, _ = nomax_tables
    for key in ("commonlib.smax", "commonlib.smax[in1=const]", "commonlib.umax"):
        e = cold.entry(key)
        assert (e.status, e.action, e.rule.cost) == ("found", "decomposed", 2), key
        cmp = "uge" if "umax" in key else "sge"
        assert e.method == f"shape {cmp} -> mux"
        assert verify_rule(e.rule, NoMaxPE).ok
        n0, n1 = e.rule.instances
        # the compare's flag drives the select's bit input; both read the op's inputs
        assert n1.inputs["bit0"].kind == "wire" and n1.inputs["bit0"].instance == "n0"
        assert n1.inputs["bit0"].port == "res_p"
        assert e.rule.outputs["out"] == ("n1", "res")
        assert e.rule.pattern["nodes"][-1]["op"] == key.split("[")[0]
    # the constant operand reaches both PEs' constant fields
    c = cold.entry("commonlib.smax[in1=const]").rule
    assert [set(i.const_fields.values()) for i in c.instances] == [{"in1"}, {"in1"}]
    # min keeps its one-PE rule (LTE): shapes only where no single-PE rule exists
    assert cold.entry("commonlib.umin").rule.cost == 1
    assert cold.entry("commonlib.umin").action == "synthesised"
    # the parts were synthesised on demand and stored in the cache entry
    table = read_table(cold.path)
    status = table.status()
    for part in ("coreir.sge", "coreir.uge", "coreir.mux", "coreir.sge[in1=const]",
                 "coreir.mux[in0=const]"):
        assert status[part] == "found", part


def test_cached_run_does_not_resynthesise(nomax_tables):
    _, cold, warm = nomax_tables
    for key in KEYS:
        e = warm.entry(key)
        assert e.action == "cached" and e.method == "verify", key
        assert e.rule.instances == cold.entry(key).rule.instances


def test_wrong_composition_fails_its_proof(nomax_tables):
    """The independent check refuses a composition that is not the op: smax's shape with
    smin's compare (sle instead of sge) gives a counterexample."""
    out, cold, _ = nomax_tables
    table = read_table(cold.path)
    rules = {r.target: r for r in table.rules()}
    shape = TWO_PE_SHAPES["commonlib.smax"][0]
    t = Target("commonlib.smax")
    assert [p.key for p in shape_parts(t, shape)] == ["coreir.sge", "coreir.mux"]
    good = compose_shape(NoMaxPE, t, 16, shape, [rules["coreir.sge"], rules["coreir.mux"]])
    assert verify_rule(good, NoMaxPE).ok
    ule = build_table(NoMaxPE, out, only=["coreir.sle"])
    bad = compose_shape(NoMaxPE, t, 16, shape, [ule.entry("coreir.sle").rule,
                                                rules["coreir.mux"]])
    v = verify_rule(bad, NoMaxPE)
    assert not v.ok and v.counterexample is not None
    # a part without a rule: no composition
    assert compose_shape(NoMaxPE, t, 16, shape, [None, rules["coreir.mux"]]) is None
