"""The IR op library: PEak programs == plain-Python references == the mapper's semantics."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from peak.ir import (PATTERNS, PRIMITIVES, ir_op, reference, target_dag, target_from_key,
                     targets)

APPS = Path(__file__).resolve().parents[2] / "mapper" / "data" / "coreir"


def _vectors(op, rng, n):
    corners = [0, 1, 15, 16, 0x7FFF, 0x8000, 0xFFFF]
    for _ in range(n):
        ins = []
        for p in op.inputs:
            m = (1 << p.width) - 1
            ins.append(rng.choice(corners) & m if rng.random() < 0.3 else rng.getrandbits(p.width))
        cs = {c.name: rng.getrandbits(c.width) for c in op.consts}
        yield ins, cs


@pytest.mark.parametrize("name", PRIMITIVES + PATTERNS)
def test_program_matches_reference(name):
    op = ir_op(name, 16)
    model = op.spec()
    ref = reference(name, 16)
    rng = random.Random(7)
    for ins, cs in _vectors(op, rng, 60):
        inst = cs.get("value", 0)
        assert int(model(inst, *ins)) == ref(*ins, **cs), (name, ins, cs)


def test_known_answers():
    assert reference("commonlib.mult_middle", 16)(0x0100, 0x0300) == 0x0300
    assert reference("commonlib.abs", 16)(0x8000) == 0x8000
    assert reference("coreir.ashr", 16)(0x8000, 20) == 0xFFFF
    assert reference("coreir.lshr", 16)(0x8000, 16) == 0
    assert reference("commonlib.absd", 16)(3, 10) == 7
    assert reference("coreir.mux", 16)(5, 9, 1) == 9
    assert reference("pattern.muladd", 16)(3, 5, 2) == 17


@pytest.mark.parametrize("name", PRIMITIVES)
def test_reference_matches_mapper_semantics(name):
    """The mapper's eval_op (mapper/ir.py) is the compiler's reference; rules must agree."""
    from mapper.ir import eval_op
    op = ir_op(name, 16)
    ref = reference(name, 16)
    rng = random.Random(11)
    for ins, cs in _vectors(op, rng, 60):
        value = cs.get("value")
        assert eval_op(name, ins, 16, value) == ref(*ins, **cs), (name, ins, cs)


def test_every_app_op_is_in_the_library():
    used = set()
    for f in sorted(APPS.glob("*.json")):
        text = f.read_text()
        for key in ("genref", "modref"):
            for part in text.split(f'"{key}":"')[1:]:
                used.add(part.split('"')[0])
    assert used, "no CoreIR apps found"
    assert used <= set(PRIMITIVES), used - set(PRIMITIVES)


def test_targets_and_dags():
    keys = [t.key for t in targets(16)]
    assert len(keys) == len(set(keys))
    assert "coreir.add[in1=const]" in keys and "coreir.mux[in0=const,in1=const]" in keys
    t = target_from_key("coreir.lshr[in1=const]", 16)
    assert [p.to_json() for p in t.preconditions] == [{"port": "in1", "op": "ult", "value": 16}]
    dag = target_dag(ir_op("coreir.add", 16), t.__class__("coreir.add", ("in1",)))
    assert dag["nodes"][0] == {"id": "k_in1", "op": "coreir.const", "value": "#in1", "args": {}}
    assert dag["nodes"][1]["args"] == {"in0": "$in0", "in1": "k_in1"}
    mm = ir_op("pattern.muladd", 16).dag
    assert [n["op"] for n in mm["nodes"]] == ["coreir.mul", "coreir.add"]
    json.dumps(mm)


def test_pattern_constant_variants():
    """Multi-op patterns with constant operands are targets (a three-input PE folds the
    constant), listed once per commutative symmetry, with the shift-amount precondition."""
    from peak.ir import PATTERN_CONST_VARIANTS
    keys = [t.key for t in targets(16)]
    for k in ("pattern.muladd[in1=const]", "pattern.muladd[in2=const]",
              "pattern.muladd[in1=const,in2=const]", "pattern.add3[in1=const]",
              "pattern.add3[in2=const]", "pattern.add_lshr[in2=const]",
              "pattern.add_ashr[in1=const,in2=const]"):
        assert k in keys, k
        assert target_from_key(k, 16).key == k
    # mul is commutative: [in0=const] is [in1=const]; (x + k1) + k2 is folded by the mapper
    assert "pattern.muladd[in0=const]" not in keys
    assert "pattern.add3[in1=const,in2=const]" not in keys
    assert set(PATTERN_CONST_VARIANTS) <= set(PATTERNS)
    assert [p.to_json() for p in target_from_key("pattern.add_lshr[in2=const]", 16)
            .preconditions] == [{"port": "in2", "op": "ult", "value": 16}]
    assert target_from_key("pattern.muladd[in1=const]", 16).preconditions == ()
    t = target_from_key("pattern.muladd[in1=const]", 16)
    dag = target_dag(ir_op(t.op, 16), t)
    by_id = {n["id"]: n for n in dag["nodes"]}
    assert by_id["n0"] == {"id": "n0", "op": "coreir.mul", "args": {"in0": "$in0", "in1": "k_in1"}}
    assert by_id["n1"]["args"] == {"in0": "n0", "in1": "$in2"}
    # without patterns or constant variants, none of these
    assert not [t for t in targets(16, patterns=False) if t.op in PATTERNS]


@pytest.mark.parametrize("key", [t.key for t in targets(16) if t.op in PATTERNS])
def test_pattern_dag_matches_reference(key):
    """The pattern DAG of every pattern target (constants substituted), evaluated with the
    mapper's eval_op, equals the op's plain-Python reference (preconditions respected)."""
    from mapper.ir import eval_op
    t = target_from_key(key, 16)
    op = ir_op(t.op, 16)
    dag = target_dag(op, t)
    ref = reference(t.op, 16)
    rng = random.Random(3)
    for ins, _ in _vectors(op, rng, 200):
        env = dict(zip((p.name for p in op.inputs), ins, strict=True))
        if not all(pc.holds(env[pc.port]) for pc in t.preconditions):
            continue
        vals: dict[str, int] = {}
        for n in dag["nodes"]:
            if n["op"] == "coreir.const":
                vals[n["id"]] = env[n["value"].lstrip("#")]
                continue
            args = [env[a[1:]] if a.startswith("$") else vals[a]
                    for a in (n["args"][p] for p in ("in0", "in1", "sel") if p in n["args"])]
            vals[n["id"]] = eval_op(n["op"], args, 16)
        assert vals[dag["outputs"]["out"]] == ref(*ins), (key, ins)
