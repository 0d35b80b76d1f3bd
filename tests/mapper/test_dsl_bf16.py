"""BFloat16 in the DSL (mapper/frontend/dsl.py): lowering to the float IR ops, the numpy
interpreter and real Halide's BFloat(16) agree bit for bit (inputs without subnormals, NaN or
infinities: docs/peak_dsl.md "BFloat16"), and the gaussian_bf16 app on the camera image."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from cgra.errors import MappingError
from mapper.apps import FLOAT_APPS, app_images, build_app, display_image
from mapper.frontend import dsl
from mapper.frontend.dsl import (BFloat16, Func, Input, Int16, Pipeline, RDom, Table, UInt16,
                                 Var, cast, from_bf16_bits, max, min, select, to_bf16_bits)
from mapper.sim.halide import run_halide
from mapper.images import camera_crop
from mapper.interp import run_pipeline
from peak.collateral import PEInfo, PortInfo


def _rne_bf16(v: np.ndarray) -> np.ndarray:
    """float64 values (exact float32 results) -> float32 of their bf16 rounding (numpy)."""
    return from_bf16_bits(to_bf16_bits(v.astype(np.float32)))


def _normal_bf16(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """Random bf16 encodings of normal numbers, |v| in [2^-20, 2^20), either sign."""
    exp = rng.integers(127 - 20, 127 + 20, shape)
    frac = rng.integers(0, 128, shape)
    sign = rng.integers(0, 2, shape)
    return ((sign << 15) | (exp << 7) | frac).astype(np.uint16)


def test_conversions():
    vals = np.array([[0, 1, 2, 255], [256, 257, 1000, 65535]], np.uint16)
    bits = to_bf16_bits(vals)
    assert bits.dtype == np.uint16
    # 0..256 exact; 257 ties to even (256); 1000 = 0b1111101000 rounds to 1000 (8 bits: 125*8)
    assert from_bf16_bits(bits).tolist() == [[0, 1, 2, 255], [256, 256, 1000, 65536]]
    from peak.bf16 import bf16_bits
    for v in (0.1, -3.7, 1e30, 6.5e-39, 255.0):
        assert int(to_bf16_bits(np.array([v]))[0]) == bf16_bits(v) == dsl.bf16_bits(v)
    with pytest.raises(MappingError, match="NaN or infinite"):
        to_bf16_bits(np.array([np.inf]))


def test_gaussian_bf16_matches_halide_and_a_float_model():
    pipe = build_app("gaussian_bf16", 64, 64)
    assert "gaussian_bf16" in FLOAT_APPS
    img = camera_crop(64, 64)
    images = app_images(pipe, img)
    assert np.array_equal(from_bf16_bits(images["input"]), img)   # 0..255 exact
    ir_p = pipe.lower()
    ops = [n.op for n in ir_p.stages[0].kernel.nodes]
    assert ops.count("float.mul") == 9 and ops.count("float.add") == 8
    got = run_pipeline(ir_p, images)
    hl = run_halide(pipe, images)
    assert got.dtype == hl.dtype == np.uint16 and got.shape == hl.shape == (62, 62)
    assert np.array_equal(got, hl)
    # independent model: float64 ops (exact here) each rounded to bf16, raster order
    x = img.astype(np.float64)
    w = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]]) / 16
    acc = None
    for j in range(3):
        for i in range(3):
            t = _rne_bf16(x[j:j + 62, i:i + 62] * w[j, i]).astype(np.float64)
            acc = t if acc is None else _rne_bf16(acc + t).astype(np.float64)
    assert np.array_equal(from_bf16_bits(got), acc.astype(np.float32))
    exact = sum(x[j:j + 62, i:i + 62] * w[j, i] for j in range(3) for i in range(3))
    assert np.abs(from_bf16_bits(got) - exact).max() <= 2.0   # a few bf16 ulps at <= 255
    assert len(np.unique(got)) > 100
    shown = display_image(pipe, got)
    assert shown.dtype == np.float32 and shown.max() <= 255


def test_bf16_constructs_agree_with_halide():
    """- * + with constants and tables, unary -, / by 4, min/max, comparisons, select,
    != and a BFloat16 RDom reduction, on random normal bf16 inputs."""
    x, y = Var("x"), Var("y")
    a = Input("a", BFloat16, (20, 9))
    t = Table("t", [[0.5, -1.25, 3.0]], BFloat16)
    r = RDom([(0, 3), (0, 1)])
    f = Func("f")
    f[x, y] = cast(BFloat16, 0.75)
    f[x, y] += t[r.x, r.y] * a[x + r.x, y]
    g = Func("g")
    d = f[x, y] - a[x, y + 1] * 1.5
    m = max(min(d, a[x + 1, y]), -a[x, y] / 4)
    c = (f[x, y] < a[x, y + 1]) | (d >= 2) | (a[x, y] != a[x + 1, y + 1])
    g[x, y] = select(c, m, 3 - d) + select(a[x, y] == f[x, y], 1.0, 0.0)
    pipe = Pipeline(g, "bf16_constructs")
    p = pipe.lower()
    used = {n.op for s in p.stages for n in s.kernel.nodes}
    assert {"float.add", "float.sub", "float.mul", "float.max", "float.min", "float.lt",
            "float.ge", "float.eq"} <= used
    assert not any(op.startswith("coreir.") and op not in ("coreir.const", "coreir.mux")
                   for op in used)
    rng = np.random.default_rng(3)
    for _ in range(3):
        img = _normal_bf16(rng, (9, 20))
        want = run_halide(pipe, {"a": img})
        got = run_pipeline(p, {"a": img})
        assert want.shape == got.shape == (8, 18)
        assert np.array_equal(got, want)


def test_bf16_constant_encodings_and_folding():
    x, y = Var("x"), Var("y")
    a = Input("a", BFloat16, (4, 4))
    f = Func("f")
    f[x, y] = a[x, y] * 0.1 + (cast(BFloat16, 1.0) + 2)   # a constant sum is folded exactly
    k = Pipeline(f, "c").lower().stages[0].kernel
    ops = [n for n in k.nodes if n.op.startswith("float.")]
    assert [n.op for n in ops] == ["float.mul", "float.add"]
    value = {n.id: n.value for n in k.nodes if n.op == "coreir.const"}
    # 0.1 -> 0x3DCD (nearest even from float32), 1 + 2 folded to 3.0 = 0x4040
    assert value[ops[0].args[1]] == (struct.unpack("<I", struct.pack("<f", 0.1))[0] + 0x7FFF) >> 16
    assert value[ops[0].args[1]] == 0x3DCD and value[ops[1].args[1]] == 0x4040
    img = _normal_bf16(np.random.default_rng(0), (4, 4))
    assert np.array_equal(run_pipeline(Pipeline(f, "c").lower(), {"a": img}),
                          run_halide(Pipeline(f, "c"), {"a": img}))


def test_bf16_casts_lower_to_the_conversion_ops():
    """int <-> bf16 conversions lower to float.from_* / float.to_* and agree with Halide's
    casts where Halide defines them (in range); out of range the IR saturates."""
    x, y = Var("x"), Var("y")
    a, s = Input("a", UInt16, (16, 16)), Input("s", Int16, (16, 16))
    f = Func("f")
    f[x, y] = cast(Int16, cast(BFloat16, a[x, y]) * 0.5 - cast(BFloat16, s[x, y]) * 0.25)
    p = Pipeline(f, "casts")
    lo = p.lower()
    assert lo.stages[0].kernel.op_counts() == {"float.from_u16": 1, "float.from_s16": 1,
                                              "float.mul": 2, "float.sub": 1,
                                              "float.to_s16": 1}
    rng = np.random.default_rng(5)
    # |a/2 - s/4| < 2**15: in the range where Halide's cast is defined
    imgs = {"a": rng.integers(0, 40000, (16, 16)).astype(np.uint16),
            "s": rng.integers(-(1 << 15), 1 << 15, (16, 16)).astype(np.int16)}
    got = run_pipeline(lo, imgs)
    assert got.dtype == np.int16
    assert np.array_equal(got, run_halide(p, imgs))
    # known answers of the four ops (bf16 encodings in hex)
    from mapper.ir import eval_op
    assert eval_op("float.from_u16", [257], 16) == 0x4380          # tie -> even (256)
    assert eval_op("float.from_u16", [259], 16) == 0x4382          # tie -> even (260)
    assert eval_op("float.from_s16", [0xFFFF], 16) == 0xBF80       # -1
    assert eval_op("float.to_s16", [0xBFC0], 16) == 0xFFFF         # -1.5 -> -1
    assert eval_op("float.to_u16", [0xBFC0], 16) == 0              # saturates at 0
    assert eval_op("float.to_s16", [0x4780], 16) == 0x7FFF         # 65536 -> 32767
    assert eval_op("float.to_s16", [0x7FC0], 16) == 0              # NaN -> 0


@pytest.mark.parametrize("make, match", [
    (lambda a: a & a, "not defined on BFloat16"),
    (lambda a: a >> 1, "not defined on BFloat16"),
    (lambda a: ~a, "not defined on BFloat16"),
    (lambda a: dsl.abs(a), "abs"),
    (lambda a: a / cast(UInt16, 3), "operand types differ"),
    (lambda a: dsl.exp(cast(UInt16, a)), "exp: needs a BFloat16"),
    (lambda a: a + cast(UInt16, 1), "types differ"),
    (lambda a: cast(UInt16, a) + 0.5, "float constants need a BFloat16"),
    (lambda a: cast(BFloat16, a < a), "Bool to BFloat16"),
])
def test_bf16_errors(make, match):
    a = Input("a", BFloat16, (4, 4))
    with pytest.raises(MappingError, match=match):
        make(a[Var("x"), Var("y")])


def test_float_op_without_rule_names_the_fp_pe():
    from mapper.collateral import RuleTable
    from mapper.mapping.compute import cover_kernel

    k = build_app("gaussian_bf16", 8, 8).lower().stages[0].kernel
    with pytest.raises(MappingError, match="no rewrite rule.*float.*configs/bf16.toml"):
        cover_kernel(k, RuleTable([]), PEInfo("x:PE", "PE", "0" * 64, 8, (),
                                               (PortInfo("data0", 16),), (PortInfo("res", 16),)))


def test_float_literal_definition_needs_a_type():
    f = Func("f")
    with pytest.raises(MappingError, match=r"cast\(BFloat16, c\)"):
        f[Var("x"), Var("y")] = 0.5


def test_gaussian_bf16_unrolled_in_halide_keeps_results():
    pipe = build_app("gaussian_bf16", 64, 64, unroll=2)
    images = app_images(pipe, camera_crop(64, 64))
    assert np.array_equal(run_halide(pipe, images), run_pipeline(pipe.lower(), images))


def test_division_and_exp_in_the_dsl_stay_within_their_bounds_of_halide():
    """``a / b`` and ``exp`` on BFloat16 lower to mapper/frontend/float_math.py; the numpy interpreter
    (the array's arithmetic) is within 2 ulp of each op of Halide's correctly rounded result;
    end to end here within 8 ulp (exp multiplies its argument's relative error by the
    argument, up to 7.5 here), and a / 4 stays exact."""
    x, y = Var("x"), Var("y")
    a = Input("a", BFloat16, (32, 8))
    f, g = Func("q"), Func("e")
    f[x, y] = a[x, y] / (a[x + 1, y] + 1.0)
    g[x, y] = dsl.exp(f[x, y] - 0.5) + a[x, y] / 4
    p = Pipeline(g, "div_exp")
    lo = p.lower()
    ops = lo.stages[0].kernel.op_counts() + lo.stages[1].kernel.op_counts()
    assert ops["float.to_s16"] == 1 and ops["float.from_s16"] == 1
    img = dsl.to_bf16_bits(np.random.default_rng(4).uniform(0, 8, (8, 32)))
    got = run_pipeline(lo, {"a": img}).astype(np.int64)
    want = run_halide(p, {"a": img}).astype(np.int64)
    assert got.shape == want.shape == (8, 31)
    assert np.abs(got - want).max() <= 8 and (got == want).mean() > 0.3
