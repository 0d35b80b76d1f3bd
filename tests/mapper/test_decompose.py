"""Decompositions when the PE lacks an op (issue 41): a multiply by a constant as shifts and
adds over the non-adjacent form of the constant (mapper.mapping.compute.rewrite_for_table),
on the PE without a multiplier (peak/examples/cgra_pe_nomul.py), and the two-PE rules of
max / min (a compare feeding a select, peak.rules.table.compose_shape) used by the covering
on the PE without a maximum (peak/examples/cgra_pe_nomax.py). Every rewrite is checked on
random vectors against the IR reference, every cover on the PE's Python model."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from cgra.errors import MappingError
from mapper import ir
from mapper.collateral import load_collateral
from mapper.frontend.coreir import example_path, import_coreir
from mapper.mapping.compute import (NAF_TAG, check_equivalence, cover_kernel, naf_digits,
                                    prepare_kernel)
from mapper_support import cached_rules, rules_cache_root, write_collateral

pytest_plugins = ["mapper_support"]

NOMUL_PE = "peak.examples.cgra_pe_nomul:PE"
NOMAX_PE = "peak.examples.cgra_pe_nomax:PE"
#: what a shift-and-add multiply needs (plus the multiplier targets, which have no rule)
NOMUL_KEYS = ["coreir.add", "coreir.sub", "coreir.sub[in0=const]", "coreir.shl[in1=const]",
              "coreir.add[in1=const]", "coreir.lshr[in1=const]", "coreir.const",
              "coreir.mul", "coreir.mul[in1=const]"]
#: max / min with and without a constant operand (their parts are synthesised on demand)
NOMAX_KEYS = ["commonlib.smax", "commonlib.smax[in1=const]", "commonlib.umax",
              "commonlib.smin", "commonlib.smin[in1=const]", "coreir.const"]


@pytest.fixture(scope="module")
def nomul_design(tmp_path_factory) -> Path:
    rules = cached_rules(rules_cache_root(tmp_path_factory), NOMUL_PE, NOMUL_KEYS)
    return write_collateral(tmp_path_factory.mktemp("design") / "nomul_ex", NOMUL_PE, rules)


@pytest.fixture(scope="module")
def nomax_design(tmp_path_factory) -> Path:
    rules = cached_rules(rules_cache_root(tmp_path_factory), NOMAX_PE, NOMAX_KEYS)
    return write_collateral(tmp_path_factory.mktemp("design") / "nomax_ex", NOMAX_PE, rules)


def _value(digits: list[tuple[int, int]], width: int) -> int:
    return sum(d << k for k, d in digits) % (1 << width)


def test_naf_known_answers_and_properties():
    """Known answers (gaussian's weights: 24 = 32 - 8, 30 = 32 - 2, 37 = 32 + 4 + 1; 0xFFFF
    = -1 at 16 bits: the digit at 2**16 is dropped), then on random constants: the value is
    the constant, no two nonzero digits are adjacent, and there are never more nonzero digits
    than ones in the binary form (the NAF has the fewest)."""
    assert naf_digits(24, 16) == [(3, -1), (5, 1)]
    assert naf_digits(30, 16) == [(1, -1), (5, 1)]
    assert naf_digits(37, 16) == [(0, 1), (2, 1), (5, 1)]
    assert naf_digits(0xFFFF, 16) == [(0, -1)]
    assert naf_digits(7, 16) == [(0, -1), (3, 1)]
    assert naf_digits(0, 16) == []
    rng = random.Random(3)
    for _ in range(2000):
        w = rng.choice((8, 16, 32))
        c = rng.getrandbits(w)
        ds = naf_digits(c, w)
        assert _value(ds, w) == c
        ks = [k for k, _ in ds]
        assert all(b - a >= 2 for a, b in zip(ks, ks[1:], strict=False))
        assert all(k < w for k in ks)
        assert len(ds) <= bin(c).count("1")


def _mul_kernel(consts: list[int]) -> ir.Kernel:
    k = ir.Kernel("mulc")
    k.declare_input("x", len(consts))
    for i, c in enumerate(consts):
        k.set_output(f"o{i}", k.add("coreir.mul", k.input("x", i), k.const(c)))
    return k


def test_mul_by_constant_as_shifts_and_adds(nomul_design):
    """On the PE without a multiplier every multiply by a constant becomes shifts and
    adds/subtracts (NAF): the prepared kernel has no multiply, the op counts are the NAF's
    (x*37: two shifts, two adds; x*30: two shifts and a subtract; x*0xFFFF: 0 - x), it equals
    the original on random vectors, and the cover simulates equal on the PE model."""
    c = load_collateral(nomul_design)
    assert c.rules.status["coreir.mul"] == "none" and not c.rules.has_op("coreir.mul")
    consts = [24, 30, 37, 3, 0xFFFF, 0x8001, 1000, 8]
    k = _mul_kernel(consts)
    p = prepare_kernel(k, c.rules)
    assert "coreir.mul" not in p.op_counts()
    rng = random.Random(5)
    for _ in range(500):
        ins = {"x": [rng.getrandbits(16) for _ in consts]}
        assert p.evaluate(ins) == k.evaluate(ins)
    assert prepare_kernel(_mul_kernel([37]), c.rules).op_counts() == \
        {"coreir.shl": 2, "coreir.add": 2}
    assert prepare_kernel(_mul_kernel([30]), c.rules).op_counts() == \
        {"coreir.shl": 2, "coreir.sub": 1}
    assert prepare_kernel(_mul_kernel([0xFFFF]), c.rules).op_counts() == {"coreir.sub": 1}
    m = cover_kernel(k, c.rules, c.pe)
    check_equivalence(m, c.pe, vectors=300, seed=2)
    # every PE but x*8's shift (strength reduction, not a decomposition) is the rewrite's
    assert m.decomposed == {"mul by constant -> shl+add": m.pe_count() - 1}
    assert all(n.name and n.name.startswith(NAF_TAG) for n in p.live_nodes()
               if n.op in ("coreir.add", "coreir.sub"))


def test_gaussian_kernel_maps_without_multiplier(nomul_design):
    """The gaussian CoreIR kernel (weights 24, 30, 37) maps on the PE without a multiplier
    and matches on the PE model; a multiply of two variables still has no rule (named)."""
    c = load_collateral(nomul_design)
    k = import_coreir(example_path("gaussian"))["hcompute_blur_unnormalized_stencil_1"]
    m = cover_kernel(k, c.rules, c.pe)
    check_equivalence(m, c.pe, vectors=200, seed=1)
    # 9 products: four x24 = (x << 5) - (x << 3) and four x30 = (x << 5) - (x << 1) (3 PEs
    # each), one x37 = (x << 5) + (x << 2) + x (4 PEs); the 9 adds of the sum (with the
    # running value) stay: 37 PEs where the stock PE needs 18 (9 multiplies, 9 adds)
    assert m.decomposed == {"mul by constant -> shl+add": 4 * 3 + 4 * 3 + 4}
    assert m.pe_count() == 28 + 9
    kv = ir.Kernel("mulv")
    kv.declare_input("a", 2)
    kv.set_output("o", kv.add("coreir.mul", kv.input("a", 0), kv.input("a", 1)))
    with pytest.raises(MappingError, match=r"coreir\.mul.*mulv|mulv.*coreir\.mul"):
        cover_kernel(kv, c.rules, c.pe)


def test_max_min_as_compare_and_select(nomax_design):
    """On the PE without GTE, smax / umax (with a constant operand too) are two-PE rules
    (compare -> select) rooted at the op, used by the covering at cost 2 each; smin keeps
    its one-PE rule (LTE). A clamp and a umax simulate equal on the PE model."""
    c = load_collateral(nomax_design)
    for key in ("commonlib.smax", "commonlib.smax[in1=const]", "commonlib.umax"):
        r = c.rules.by_key[key]
        assert r.cost == 2 and r.root_op == key.split("[")[0]
        assert r.outputs["out"][0] == "n1" and any(
            b.kind == "wire" for b in r.instances[1].inputs.values())
    assert c.rules.by_key["commonlib.smin"].cost == 1
    k = ir.Kernel("clamp")
    k.declare_input("x", 3)
    x0, x1, x2 = (k.input("x", i) for i in range(3))
    clamp = k.add("commonlib.smin", k.add("commonlib.smax", x0, k.const(5)), k.const(200))
    k.set_output("c", clamp)
    k.set_output("u", k.add("commonlib.umax", x1, x2))
    m = cover_kernel(k, c.rules, c.pe)
    assert sorted(p.rule for p in m.pes) == sorted(
        ["commonlib.smax[in1=const]"] * 2 + ["commonlib.umax"] * 2
        + ["commonlib.smin[in1=const]"])
    assert m.decomposed == {"smax -> 2 PEs": 2, "umax -> 2 PEs": 2}
    check_equivalence(m, c.pe, vectors=400, seed=3)
