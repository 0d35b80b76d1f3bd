"""Several output Funcs (issue 14 item 5): DSL, IR, both golden models, the memory-mapped
stream model, and the shipped ``color_correct`` app (three outputs)."""
from __future__ import annotations

import numpy as np
import pytest

from cgra.errors import MappingError
from mapper import ir
from mapper.apps import app_images, build_app
from mapper.apps.color_correct import MATRIX
from mapper.frontend.dsl import Func, Input, Pipeline, UInt16, Var, repeat_edge
from mapper.sim.halide import run_halide_outputs
from mapper.interp import run_outputs, run_pipeline
from mapper.mapping.memory import DUAL_PORT_SRAM, PHYSICAL_UNIFIED_BUFFER, map_memory
from mapper.mapping.streams import run_streams, run_streams_outputs


def _two_outputs() -> Pipeline:
    """``a`` (a 2-tap stencil) is an output and also feeds ``b`` (its 2-tap stencil)."""
    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (12, 9))
    a, b = Func("a"), Func("b")
    a[x, y] = inp[x, y] + inp[x + 1, y]
    b[x, y] = a[x, y + 1] * 3 - a[x, y]
    return Pipeline([b, a], "two")


def test_outputs_with_their_own_domains():
    p = _two_outputs()
    lo = p.lower()
    assert lo.outputs == ("b", "a") and lo.output == "b" and lo.more_outputs == ("a",)
    dom = lo.domains()
    assert dom["a"] == ir.Box(0, 11, 0, 9) and dom["b"] == ir.Box(0, 11, 0, 8)
    img = np.random.default_rng(1).integers(0, 1 << 16, (9, 12)).astype(np.uint16)
    got = run_outputs(lo, {"input": img})
    want_a = (img[:, :-1].astype(np.int64) + img[:, 1:]) & 0xFFFF
    want_b = (want_a[1:] * 3 - want_a[:-1]) & 0xFFFF
    assert np.array_equal(got["a"], want_a) and np.array_equal(got["b"], want_b)
    hl = run_halide_outputs(p, {"input": img})
    assert set(hl) == {"a", "b"}
    assert all(np.array_equal(hl[k], got[k]) for k in got)
    assert np.array_equal(run_pipeline(lo, {"input": img}), want_b)    # the first output
    again = ir.Pipeline.from_dict(lo.to_dict())
    assert again.outputs == ("b", "a")
    # the memory-mapped stream model streams both outputs, each on its own IO instance
    mm = map_memory(lo, DUAL_PORT_SRAM)
    outs = sorted(i.config["stage"] for i in mm.netlist.instances.values()
                  if i.kind == "io_out")
    assert outs == ["a", "b"]
    streamed = run_streams_outputs(mm, {"input": img})
    assert all(np.array_equal(streamed[k], got[k]) for k in got)


def test_color_correct_three_outputs_are_exact_and_keep_grey():
    p = build_app("color_correct", 64, 48)
    lo = p.lower()
    assert lo.outputs == ("red", "green", "blue")
    assert all(sum(row) == 32 for row in MATRIX)
    # a grey mosaic (every pixel v) is grey on every output: rows sum to one
    grey = {"mosaic": np.full((48, 64), 137, np.uint16)}
    for name, img in run_outputs(lo, grey).items():
        assert img.shape == (24, 32) and (img == 137).all(), name
    # a pure red quad: red = clamp(56 * 200 >> 5) = 255 (clamped), green = 0 (clamped from
    # -12 * 200 >> 5 = -75), blue = 0
    m = np.zeros((48, 64), np.uint16)
    m[0::2, 0::2] = 200
    got = run_outputs(lo, {"mosaic": m})
    assert (got["red"] == 255).all() and (got["green"] == 0).all() and (got["blue"] == 0).all()
    from skimage import data
    imgs = app_images(p, data.astronaut()[100:148, 200:264])
    got = run_outputs(lo, imgs)
    hl = run_halide_outputs(p, imgs)
    for k in got:
        assert np.array_equal(got[k], hl[k]), k
        assert len(np.unique(got[k])) > 20, k
    mm = map_memory(lo, DUAL_PORT_SRAM)
    streamed = run_streams_outputs(mm, imgs)
    assert all(np.array_equal(streamed[k], got[k]) for k in got)
    assert np.array_equal(run_streams(mm, imgs), got["red"])
    # the wide-fetch PUB maps it too (strided reads of the mosaic only)
    pub = run_streams_outputs(map_memory(lo, PHYSICAL_UNIFIED_BUFFER), imgs)
    assert all(np.array_equal(pub[k], got[k]) for k in got)


def test_several_output_errors():
    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (8, 8))
    f = Func("f")
    f[x, y] = inp[x, y] + 1
    with pytest.raises(MappingError, match="outputs \\['f', 'f'\\] list a Func twice"):
        Pipeline([f, f], "dup")
    with pytest.raises(MappingError, match="the output must be a Func or a non-empty list"):
        Pipeline([], "none")
    with pytest.raises(MappingError, match="'g' is not an output; outputs: \\['f'\\]"):
        Pipeline(f, "one").output_domain("g")
    lo = Pipeline(f, "one").lower()
    bad = ir.Pipeline(lo.name, lo.inputs, lo.stages, "f", more_outputs=("nope",))
    with pytest.raises(MappingError, match="output 'nope' is not a stage"):
        bad.validate()
    # with repeat_edge an output is cropped, so it cannot also feed another Func
    e = repeat_edge(inp)
    a, b = Func("a"), Func("b")
    a[x, y] = e[x - 1, y] + e[x + 1, y]
    b[x, y] = a[x, y] + 1
    with pytest.raises(MappingError, match="output a is also read by Func b"):
        Pipeline([b, a], "fed").lower()


def test_upsampled_several_outputs_on_the_streams():
    """A multi-rate pipeline with outputs at two rates (full and double)."""
    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (10, 8))
    half = Func("half")
    half[x, y] = (inp[2 * x, 2 * y] + inp[2 * x + 1, 2 * y + 1]) >> 1
    up = Func("up")
    up[x, y] = half[x / 2, y / 2]
    p = Pipeline([half, up], "levels")
    lo = p.lower()
    img = np.random.default_rng(3).integers(0, 256, (8, 10)).astype(np.uint16)
    got = run_outputs(lo, {"input": img})
    assert got["half"].shape == (4, 5) and got["up"].shape == (8, 10)
    assert np.array_equal(got["up"], np.repeat(np.repeat(got["half"], 2, 0), 2, 1))
    hl = run_halide_outputs(p, {"input": img})
    assert all(np.array_equal(hl[k], got[k]) for k in got)
    streamed = run_streams_outputs(map_memory(lo, DUAL_PORT_SRAM), {"input": img})
    assert all(np.array_equal(streamed[k], got[k]) for k in got)
