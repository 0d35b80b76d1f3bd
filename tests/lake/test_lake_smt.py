"""SMT model of the controllers: recurrence == affine proof, configuration synthesis."""
from __future__ import annotations

import pytest

from cgra.errors import ConfigError
from lake.config import configure
from lake.golden import simulate
from lake.program import program
from lake.smt import prove_recurrence_equals_affine, synthesize


def test_recurrence_equals_affine_six_levels_over_integers():
    res = prove_recurrence_equals_affine(dims=6, extent_width=16, value_width=24)
    assert res.proved and res.status == "unsat"


def test_recurrence_equals_affine_bitvectors_as_hardware():
    res = prove_recurrence_equals_affine(dims=3, extent_width=4, value_width=8, sort="bv")
    assert res.proved


def test_wrong_deltas_give_a_counterexample():
    # using the strides themselves as deltas (forgetting the wrap term) is wrong
    res = prove_recurrence_equals_affine(dims=2, deltas_override=None)
    assert res.proved
    bad = prove_recurrence_equals_affine(dims=2, deltas_override=[1, 1])
    assert not bad.proved and bad.status.startswith("sat")
    assert {"r0", "s0", "s1"} <= set(bad.counterexample)


DOWNSAMPLE = [(c, a) for c, a in zip([0, 1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13],
                                     [0, 2, 4, 6, 16, 18, 20, 22, 32, 34, 36, 38], strict=True)]


def test_synthesize_downsample_two_levels():
    res = synthesize(DOWNSAMPLE, dimensionality=2)
    assert res.status == "sat"
    p = res.program
    assert list(zip(p.cycles().tolist(), p.addresses().tolist(), strict=True)) == DOWNSAMPLE
    assert p.extents == (4, 3) and p.address.strides == (2, 16)
    # the solved program is a legal port program: the dual-port tile realises it
    w = program([64], [1], 0, [1], 0)
    shifted = program(p.extents, p.address.strides, p.address.offset, p.schedule.strides,
                      p.schedule.offset + 64)
    configure("dualport_2048x16", {"data_in_0": w, "data_out_0": shifted})
    out = simulate({"in": w, "out": shifted}, {"in": list(range(64))})["out"]
    assert out == [(c + 65, a) for c, a in DOWNSAMPLE]


def test_synthesize_proves_one_level_impossible():
    assert synthesize(DOWNSAMPLE, dimensionality=1).status == "unsat"
    assert synthesize([(0, 5), (2, 6), (4, 7)], dimensionality=1).status == "sat"


def test_synthesize_rejects_bad_sequences():
    with pytest.raises(ConfigError, match="strictly increasing"):
        synthesize([(3, 0), (3, 1)], 1)
    with pytest.raises(ConfigError, match="empty"):
        synthesize([], 1)
