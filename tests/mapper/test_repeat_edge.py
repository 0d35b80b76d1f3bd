"""Clamp-to-edge boundary (issue 14 item 5): ``repeat_edge`` in the DSL, padded IR inputs and
the cropped output, checked against hand-computed values and real Halide's own
``BoundaryConditions.repeat_edge`` on random single- and multi-rate pipelines."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgra.errors import MappingError
from mapper import ir
from mapper.frontend.dsl import Func, Input, Pipeline, UInt16, Var, repeat_edge
from mapper.sim.halide import run_halide
from mapper.interp import run_pipeline


def _pair(w: int, h: int) -> Pipeline:
    x, y = Var("x"), Var("y")
    e = repeat_edge(Input("input", UInt16, (w, h)))
    f = Func("pair")
    f[x, y] = e[x - 1, y] + e[x + 1, y]
    return Pipeline(f, "pair")


def test_known_answer_and_geometry():
    img = np.arange(12, dtype=np.uint16).reshape(3, 4)       # rows [0 1 2 3] [4 5 6 7] ...
    p = _pair(4, 3)
    lo = p.lower()
    pin = lo.inputs["input"]
    assert pin.pad == (1, 1, 0, 0) and pin.shape == (6, 3) and pin.source_shape == (4, 3)
    assert lo.crop == {"pair": ir.Box(1, 5, 0, 3)}
    assert lo.domains()["pair"] == ir.Box(1, 5, 0, 3)
    assert p.output_domain() == ir.Box(0, 4, 0, 3)
    # x = 0 reads (clamp(-1) = 0) + 1; x = 3 reads 2 + (clamp(4) = 3)
    want = np.array([[1, 2, 4, 5], [9, 10, 12, 13], [17, 18, 20, 21]])
    assert np.array_equal(run_pipeline(lo, {"input": img}), want)
    assert np.array_equal(run_halide(p, {"input": img}), want)
    assert np.array_equal(pin.prepare(img)[0], [0, 0, 1, 2, 3, 3])


def test_gaussian_edge_keeps_the_input_size():
    from mapper.apps import build_app, lower_app
    from mapper.images import camera_crop

    lo = lower_app("gaussian_edge", 64, 48)
    assert lo.inputs["input"].pad == (1, 1, 1, 1) and lo.inputs["input"].shape == (66, 50)
    img = camera_crop(64, 48)
    out = run_pipeline(lo, {"input": img})
    assert out.shape == (48, 64)
    assert np.array_equal(out, run_halide(build_app("gaussian_edge", 64, 48), {"input": img}))
    # inside, the centred gaussian equals the uncropped app shifted by one pixel
    inner = run_pipeline(lower_app("gaussian", 64, 48), {"input": img})
    assert np.array_equal(out[1:-1, 1:-1], inner)
    # the round trip through app.json keeps pad and crop
    again = ir.Pipeline.from_dict(lo.to_dict())
    assert again.inputs["input"].pad == (1, 1, 1, 1) and again.crop == lo.crop


@st.composite
def _programs(draw):
    """A two-stage pipeline: a 1-3 tap stencil on the clamped input, then a consumer reading it
    at rate 1, stride 2 or half rate with 1-3 random offsets."""
    w, h = draw(st.integers(3, 11)), draw(st.integers(3, 9))
    taps1 = draw(st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3)), min_size=1,
                          max_size=3, unique=True))
    rate = draw(st.sampled_from(["unit", "down", "up"]))
    taps2 = draw(st.lists(st.tuples(st.integers(-2, 2), st.integers(-2, 2)), min_size=1,
                          max_size=3, unique=True))
    return w, h, taps1, rate, taps2


def _build(w, h, taps1, rate, taps2) -> Pipeline:
    x, y = Var("x"), Var("y")
    e = repeat_edge(Input("input", UInt16, (w, h)))
    a = Func("a")
    acc = None
    for k, (dx, dy) in enumerate(taps1):
        t = e[x + dx, y + dy] * (k + 1)
        acc = t if acc is None else acc + t
    a[x, y] = acc
    b = Func("b")
    acc = None
    for dx, dy in taps2:
        if rate == "unit":
            t = a[x + dx, y + dy]
        elif rate == "down":
            t = a[2 * x + dx, 2 * y + dy]
        else:
            t = a[x / 2 + dx, y / 2 + dy]
        acc = t if acc is None else acc ^ t
    b[x, y] = acc
    return Pipeline(b, "random_edge")


@settings(max_examples=12, deadline=None)
@given(_programs(), st.integers(0, 2**31))
def test_random_pipelines_match_halide_repeat_edge(prog, seed):
    w, h, taps1, rate, taps2 = prog
    p = _build(w, h, taps1, rate, taps2)
    img = np.random.default_rng(seed).integers(0, 1 << 16, (h, w)).astype(np.uint16)
    # the output keeps the input size at the output's rate
    ow, oh = {"unit": (w, h), "down": (-(-w // 2), -(-h // 2)), "up": (2 * w, 2 * h)}[rate]
    assert p.output_domain() == ir.Box(0, ow, 0, oh)
    got = run_pipeline(p.lower(), {"input": img})
    assert got.shape == (oh, ow)
    assert np.array_equal(got, run_halide(p, {"input": img}))
    # the padding is no larger than the reach of the stencils (plus the rounding that keeps
    # the shifted coordinates integral at stride 2)
    pad = p.lower().inputs["input"].pad
    reach = max(abs(v) for t in taps1 + taps2 for v in t)
    assert max(pad) <= 2 * reach + 2 * 2 + 1


def test_errors_are_one_line_and_name_the_input():
    x, y = Var("x"), Var("y")
    a, b = Input("a", UInt16, (8, 8)), Input("b", UInt16, (8, 8))
    f = Func("f")
    f[x, y] = repeat_edge(a)[x - 1, y] + b[x, y]
    with pytest.raises(MappingError, match=r"inputs \['a'\] are read through repeat_edge, "
                                           r"\['b'\] are not") as e:
        Pipeline(f, "mixed")
    assert "\n" not in str(e.value)
    g = Func("g")
    g[x, y] = repeat_edge(a)[x - 1, y] + a[x, y]
    with pytest.raises(MappingError, match="input a is read both through repeat_edge and "
                                           "directly"):
        Pipeline(g, "both")
    with pytest.raises(MappingError, match="repeat_edge: takes a pipeline Input, got Func"):
        repeat_edge(g)
    with pytest.raises(MappingError, match=r"input 'input' must have shape \(height, width\) "
                                           r"= \(3, 4\), got \(4, 4\)"):
        run_pipeline(_pair(4, 3).lower(), {"input": np.zeros((4, 4), np.uint16)})


def test_inconsistent_rates_are_refused():
    x, y = Var("x"), Var("y")
    e = repeat_edge(Input("input", UInt16, (8, 8)))
    a, c = Func("a"), Func("c")
    a[x, y] = e[x, y] + 1
    c[x, y] = e[2 * x, 2 * y] + 1
    d = Func("d")
    d[x, y] = a[x, y] + c[x, y]
    with pytest.raises(MappingError, match="Func d reads its producers at inconsistent rates"):
        Pipeline(d, "mixed_rates").lower()


def test_reductions_over_rdoms_that_are_not_3x3():
    """5x5 (bounds -2..2) and 7x1 RDom reductions with clamp to edge: both golden models and
    the memory-mapped stream model agree, and the outputs keep the input size."""
    from mapper.frontend.dsl import RDom, cast
    from mapper.mapping.memory import DUAL_PORT_SRAM, map_memory
    from mapper.mapping.streams import run_streams

    x, y = Var("x"), Var("y")
    e = repeat_edge(Input("input", UInt16, (20, 14)))
    box = Func("box5")
    r = RDom([(-2, 5), (-2, 5)], "r")
    box[x, y] = cast(UInt16, 0)
    box[x, y] += e[x + r.x, y + r.y]
    line = Func("line7")
    s = RDom([(-3, 7), (0, 1)], "s")
    line[x, y] = cast(UInt16, 0)
    line[x, y] += box[x + s.x, y + s.y] >> 3
    p = Pipeline(line, "big_rdoms")
    lo = p.lower()
    assert lo.inputs["input"].pad == (5, 5, 2, 2)
    img = np.random.default_rng(9).integers(0, 256, (14, 20)).astype(np.uint16)
    got = run_pipeline(lo, {"input": img})
    assert got.shape == (14, 20)
    assert np.array_equal(got, run_halide(p, {"input": img}))
    pad = np.pad(img.astype(np.int64), 5, mode="edge")
    # box5 at x = -3 .. 22 (column c = x + 3), y = 0 .. 13; pad[y + 5, x + 5] = e(x, y)
    b5 = sum(pad[3 + j:3 + j + 14, i:i + 26] for j in range(5) for i in range(5))
    want = sum(b5[:, k:k + 20] >> 3 for k in range(7)) & 0xFFFF
    assert np.array_equal(got, want)
    assert np.array_equal(run_streams(map_memory(lo, DUAL_PORT_SRAM), {"input": img}), got)
