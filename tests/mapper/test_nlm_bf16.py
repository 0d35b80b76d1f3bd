"""nlm_bf16 (mapper/apps/nlm_bf16.py): structure and PE budget of the lowered pipeline, known
answers of the numpy interpreter, the stated Halide bound (its derivation evaluated, the
measured difference on real images within it), the ulp distance and the tolerance check of
mapper.sim.run.check_output (a wrong output fails with one line)."""
from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from cgra.errors import SimulationError
from mapper.apps import (FLOAT_APPS, HALIDE_TOLERANCE_ULP, app_images, build_app,
                         load_app_image, nlm_bf16)
from mapper.sim.run import NAN_ULP_DISTANCE, bf16_ulp_distance, check_output
from mapper.frontend.dsl import (BFloat16, Func, Input, Pipeline, Var, exp, from_bf16_bits,
                                 to_bf16_bits)
from mapper.sim.halide import run_halide
from mapper.interp import run_pipeline


def _goldens(img: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(numpy interpreter, Halide) outputs of nlm_bf16 on the grey image ``img``."""
    h, w = img.shape
    pipe = build_app("nlm_bf16", w, h)
    images = app_images(pipe, img)
    return run_pipeline(pipe.lower(), images), run_halide(pipe, images)


def _ops(stage) -> Counter:
    return Counter(n.op for n in stage.kernel.nodes if n.op not in ("coreir.const", "input"))


def test_registered_as_float_app_with_a_stated_bound():
    assert "nlm_bf16" in FLOAT_APPS
    assert HALIDE_TOLERANCE_ULP == {"nlm_bf16": 38}
    pipe = build_app("nlm_bf16", 64, 64)
    assert pipe.inputs[0].type is BFloat16 and pipe.output.type is BFloat16


def test_stages_and_pe_budget():
    """Two weight stages (sub, square, scale, 19-PE exp: 22 ops) and the normalised sum (4
    products, 8 additions, the 11-PE division: 23 ops): 67 PEs."""
    ir_p = build_app("nlm_bf16", 64, 64).lower()
    counts = {s.name: _ops(s) for s in ir_p.stages}
    assert sorted(counts) == ["nlm_bf16", "wh", "wv"]
    assert counts["wh"] == counts["wv"] == Counter({
        "float.mul": 9, "float.add": 4, "float.sub": 3, "float.max": 1, "float.min": 1,
        "float.to_s16": 1, "float.from_s16": 1, "coreir.shl": 1, "coreir.add": 1})
    assert counts["nlm_bf16"] == Counter({
        "float.mul": 9, "float.add": 8, "float.sub": 2, "coreir.and": 2, "coreir.sub": 1,
        "coreir.or": 1})
    assert sum(sum(c.values()) for c in counts.values()) == 67
    assert run_pipeline(ir_p, app_images(build_app("nlm_bf16", 64, 64),
                                         np.zeros((64, 64), int))).shape == (62, 62)


def test_known_answers():
    """Flat 100: every weight 1, 500 * recip(5) = 99.5 (1 ulp below Halide's 100: the
    division's approximation). A step 0 | 200: across it the weight is
    exp(-RN(200**2) / 4096) = exp(-39936 / 4096) = exp(-9.75), the pixel beside the step
    (0, three neighbours 0) gives 200 * w / (4 + w) = 2.9e-3. A black image gives exactly 0."""
    flat = np.full((6, 8), 100)
    g, h = _goldens(flat)
    assert g.shape == (4, 6)
    assert (g == 0x42C7).all() and (from_bf16_bits(g) == 99.5).all()
    assert (from_bf16_bits(h) == 100.0).all()

    step = np.where(np.arange(8) >= 4, 200, 0)[None, :] * np.ones((6, 1), int)
    g, h = _goldens(step)
    w = math.exp(-9.75)
    assert from_bf16_bits(g)[:, 2] == pytest.approx(200 * w / (4 + w), rel=2 ** -6)
    assert g[0].tolist() == [0, 0, 0x3B3E, 0x4347, 0x4347, 0x4347]     # 199 = 200 - 1 ulp
    assert bf16_ulp_distance(g, h).max() == 1

    g, h = _goldens(np.zeros((6, 8), int))
    assert (g == 0).all() and (h == 0).all()


@pytest.mark.parametrize("source, max_ulp", [("camera", 3), ("astronaut", 3), ("coffee", 2)])
def test_halide_within_stated_bound_on_real_images(source, max_ulp):
    """64x64 test images: the interpreter's (= the RTL's) output is within a few ulp of
    Halide's, well inside the stated 38; and within the path's own envelope of the exact
    filter (module docstring step 4: [0.9103, 1.0981] times the exact value)."""
    pipe = build_app("nlm_bf16", 64, 64)
    img = load_app_image(pipe, source, (64, 64))
    g, h = _goldens(img)
    d = bf16_ulp_distance(g, h)
    assert int(d.max()) == max_ulp <= HALIDE_TOLERANCE_ULP["nlm_bf16"]
    assert 0 < (d > 0).mean() < 0.8
    # the exact filter in float64 (the square rounded as on the array: shared by all models)
    v = img.astype(np.float64)
    p = v[1:-1, 1:-1]
    num, den = p.copy(), np.ones_like(p)
    for q in (v[1:-1, :-2], v[1:-1, 2:], v[:-2, 1:-1], v[2:, 1:-1]):
        sq = from_bf16_bits(to_bf16_bits((p - q) ** 2)).astype(np.float64)
        w = np.exp(-sq * nlm_bf16.H)
        num, den = num + w * q, den + w
    exact = num / den
    ratio = from_bf16_bits(g)[exact > 0] / exact[exact > 0]
    assert 0.9103 <= ratio.min() and ratio.max() <= 1.0981


def test_bound_derivation():
    """The stated bound is the floor of the derivation evaluated for float_math's 2-ulp exp
    and div; the roundings of the products and sums alone contribute 25 ulp."""
    assert nlm_bf16.halide_bound_ulp() == pytest.approx(38.778, abs=1e-3)
    assert math.floor(nlm_bf16.halide_bound_ulp()) == nlm_bf16.HALIDE_TOLERANCE_ULP == 38
    assert nlm_bf16.halide_bound_ulp(0, 0) == pytest.approx(25.174, abs=1e-3)
    # the argument stays inside exp's unsaturated range for any two pixels 0..255
    sq = from_bf16_bits(to_bf16_bits(np.float64(255 ** 2)))
    assert sq == 65024 and sq * nlm_bf16.H == 15.875 <= 16


def test_halide_exp_is_correctly_rounded_on_the_weight_range():
    """The derivation takes Halide's bf16 exp (float32 exp, rounded) as correctly rounded:
    true on every bf16 argument in [-16, 0] (the app's range); float_math.exp within 2."""
    enc = np.arange(0x8000, 0xC181, dtype=np.uint16)
    enc = enc[from_bf16_bits(enc) >= -16]
    width = 256
    img = np.full(width * -(-len(enc) // width), 0x8000, np.uint16)
    img[:len(enc)] = enc
    img = img.reshape(-1, width)
    x, y = Var("x"), Var("y")
    inp = Input("input", BFloat16, (width, img.shape[0]))
    f = Func("e")
    f[x, y] = exp(inp[x, y])
    pipe = Pipeline(f, "exp_range")
    h = run_halide(pipe, {"input": img}).ravel()[:len(enc)]
    g = run_pipeline(pipe.lower(), {"input": img}).ravel()[:len(enc)]
    rn = to_bf16_bits(np.exp(from_bf16_bits(enc).astype(np.float64)).astype(np.float32))
    assert len(enc) == 0xC180 - 0x8000 + 1 and np.array_equal(h, rn)    # -0 .. -16
    assert bf16_ulp_distance(g, rn).max() == 2


def test_bf16_ulp_distance():
    a = np.array([0x0000, 0x8000, 0x3F80, 0x3F80, 0x0001, 0x3F7F, 0x7FC0, 0x7FC0, 0xFF81])
    b = np.array([0x8000, 0x0000, 0x3F81, 0x3F7F, 0x8001, 0x3F80, 0x3F80, 0xFFC1, 0x0000])
    assert bf16_ulp_distance(a, b).tolist() == [0, 0, 1, 1, 2, 1, NAN_ULP_DISTANCE, 0,
                                                NAN_ULP_DISTANCE]
    # across a binade: 1.0 (0x3F80) and the largest value below 0.5 are 129 steps apart
    assert bf16_ulp_distance(np.array([0x3F80]), np.array([0x3EFF])).tolist() == [129]


def test_check_output_tolerance_and_a_wrong_output():
    """The flow's check: numpy bit for bit, Halide within the stated bound, the measured
    figures returned; one pixel moved 39 ulp from Halide's fails with a one-line error that
    names it; a 1-ulp change fails the numpy golden (no tolerance there)."""
    pipe = build_app("nlm_bf16", 32, 32)
    img = load_app_image(pipe, "camera", (32, 32))
    g, h = _goldens(img)
    box = (1, 31, 1, 31)
    tol = {"Halide": HALIDE_TOLERANCE_ULP["nlm_bf16"]}
    goldens = {"numpy interpreter": g, "Halide": h}
    stats = check_output("nlm_bf16", g.copy(), goldens, box, "", tol)
    d = bf16_ulp_distance(g, h)
    assert stats == {"Halide": {"tolerance_ulp": 38, "max_ulp": int(d.max()),
                                "differing_pixels": int((d > 0).sum()), "pixels": 900}}
    assert 1 <= stats["Halide"]["max_ulp"] <= 3

    wrong = g.copy()
    wrong[4, 7] = (int(h[4, 7]) + 39) & 0xFFFF       # a positive value: 39 encodings up
    with pytest.raises(SimulationError) as e:
        check_output("nlm_bf16", wrong, {"Halide": h}, box, "build/x", tol)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("nlm_bf16: RTL output differs from the Halide golden by up to 39 bf16 "
                          "ulp, beyond its stated tolerance of 38 ulp at 1 pixel(s)")
    assert (f"first at pixel (x=8, y=5): expected 0x{int(h[4, 7]):04X}, got "
            f"0x{int(wrong[4, 7]):04X} (39 ulp) (files in build/x)") in msg

    near = g.copy()
    near[0, 0] = int(g[0, 0]) + 1
    with pytest.raises(SimulationError, match=r"numpy interpreter golden at 1 pixel\(s\); "
                                              r"first at pixel \(x=1, y=1\)"):
        check_output("nlm_bf16", near, goldens, box, "", tol)
    # without a tolerance Halide is bit for bit too
    with pytest.raises(SimulationError, match="differs from the Halide golden at"):
        check_output("nlm_bf16", g, {"Halide": h}, box)
