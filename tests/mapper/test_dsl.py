"""Front end A: the embedded DSL, lowering and its error messages."""
from __future__ import annotations

import numpy as np
import pytest

from cgra.errors import MappingError
from mapper.apps import build_app, lower_app
from mapper.frontend import dsl
from mapper.frontend.dsl import (Func, Input, Int16, Pipeline, RDom, Table, UInt16, Var, cast,
                                 clamp, select)
from mapper.interp import run_pipeline


def test_brighten_blur_lowering():
    p = lower_app("brighten_blur", 64, 64)
    assert [s.name for s in p.stages] == ["brighten", "blur"]
    blur = p.stage("blur")
    assert blur.windows["brighten"].offsets == ((0, 0), (1, 0), (0, 1), (1, 1))
    assert blur.kernel.op_counts() == {"coreir.add": 3, "coreir.lshr": 1}
    assert p.stage("brighten").kernel.op_counts() == {"coreir.mul": 1}
    assert p.domains()["blur"].width == 63


def test_gaussian_reduction_is_unrolled_with_json_weights():
    p = lower_app("gaussian", 16, 16)
    k = p.stage("blur_unnormalized").kernel
    assert k.op_counts() == {"coreir.mul": 9, "coreir.add": 8}
    consts = sorted(n.value for n in k.live_nodes() if n.op == "coreir.const")
    assert consts == [24, 30, 37]
    # known answer: window 1..9 (raster) -> (24*(1+3+7+9) + 30*(2+4+6+8) + 37*5) >> 8
    out = p.stage("blur_unnormalized").kernel.evaluate({"input": list(range(1, 10))})["out"]
    assert out == 24 * 20 + 30 * 20 + 37 * 5 == 1265
    assert p.stage("blur").kernel.op_counts() == {"coreir.lshr": 1}


def test_small_pipeline_semantics_against_numpy():
    x, y = Var("x"), Var("y")
    inp = Input("a", UInt16, (8, 5))
    f = Func("f")
    s = cast(Int16, inp[x, y]) - cast(Int16, inp[x + 1, y])
    f[x, y] = cast(UInt16, select(s < 0, -s, s) >> 1) + 3
    img = np.random.default_rng(3).integers(0, 1 << 16, (5, 8)).astype(np.uint16)
    got = run_pipeline(Pipeline(f).lower(), {"a": img})
    d = (img[:, :-1].astype(np.int64) - img[:, 1:]).astype(np.int16).astype(np.int64)
    want = ((np.where(d < 0, -d, d).astype(np.int16) >> 1).astype(np.uint16) + 3).astype(np.uint16)
    assert np.array_equal(got, want)


def test_unroll_factor_is_kept():
    p = lower_app("gaussian", 64, 64, unroll=4)
    assert p.unroll == 4
    assert build_app("pointwise", unroll=2).unroll == 2


@pytest.mark.parametrize("make, msg", [
    (lambda x, y, a: a[x, y] + cast(Int16, a[x, y]), "operand types differ"),
    (lambda x, y, a: a[x, y] / 3, "powers of two"),
    (lambda x, y, a: a[x, y] >> a[x, y], "integer literal"),
    (lambda x, y, a: a[x, y] >> 16, r"\[0, 15\]"),
    (lambda x, y, a: a[x, y] + x, "loop variables"),
    (lambda x, y, a: a[y, x], "dimension 0"),
    (lambda x, y, a: a[x, y] + 70000, "does not fit UInt16"),
    (lambda x, y, a: select(a[x, y], 1, 2), "Bool"),
])
def test_dsl_errors(make, msg):
    x, y = Var("x"), Var("y")
    a = Input("a", UInt16, (8, 8))
    with pytest.raises(MappingError, match=msg):
        f = Func("f")
        f[x, y] = make(x, y, a)
        Pipeline(f).lower()


def test_update_errors():
    x, y = Var("x"), Var("y")
    a = Input("a", UInt16, (8, 8))
    f = Func("f")
    f[x, y] = cast(UInt16, 0)
    with pytest.raises(MappingError, match="exactly one RDom"):
        f[x, y] = f[x, y] + a[x, y]
    r = RDom([(0, 2), (0, 2)])
    f[x, y] += a[x + r.x, y + r.y]
    with pytest.raises(MappingError, match="only one update"):
        f[x, y] += a[x + r.x, y + r.y]
    g = Func("g")
    with pytest.raises(MappingError, match="before it is defined"):
        g[x, y] = f[x, y] + Func("h")[x, y]
    with pytest.raises(MappingError, match="truth value"):
        bool(a[x, y] < 3)
    with pytest.raises(MappingError, match="unknown app 'nope'"):
        build_app("nope")


def test_table_and_clamp_lowering():
    x, y = Var("x"), Var("y")
    a = Input("a", Int16, (6, 6))
    t = Table("w", [[1, -2], [3, 4]], Int16)
    r = RDom([(0, 2), (0, 2)])
    f = Func("f")
    f[x, y] = cast(Int16, 0)
    f[x, y] += t[r.x, r.y] * a[x + r.x, y + r.y]
    g = Func("g")
    g[x, y] = clamp(f[x, y], -10, 10)
    p = Pipeline(g).lower()
    assert p.stage("g").kernel.op_counts() == {"commonlib.smax": 1, "commonlib.smin": 1}
    img = np.arange(36, dtype=np.int64).reshape(6, 6).astype(np.int16)
    out = run_pipeline(p, {"a": img})
    raw = img[:-1, :-1] - 2 * img[:-1, 1:] + 3 * img[1:, :-1] + 4 * img[1:, 1:]
    assert out.dtype == np.int16
    assert np.array_equal(out, np.clip(raw, -10, 10))
    assert isinstance(dsl.abs(a[x, y]), dsl.Unary)
