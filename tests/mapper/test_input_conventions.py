"""Input conventions (issue 14 item 8): grey, RGB planes and an RGGB Bayer mosaic made from a
colour test image; any shipped scikit-image sample; apps with several inputs (rgb_luma) and a
mosaic input (demosaic) against their formulas, numpy and real Halide."""
from __future__ import annotations

import numpy as np
import pytest

from cgra.errors import MappingError
from mapper.apps import app_images, build_app, load_app_image
from mapper.frontend.dsl import Func, Input, Pipeline, UInt16, Var
from mapper.sim.halide import run_halide
from mapper.images import bayer_rggb, load_image, load_rgb, shipped_samples
from mapper.interp import run_pipeline
from mapper.mapping.memory import DUAL_PORT_SRAM, map_memory
from mapper.mapping.streams import run_streams


def test_shipped_samples_and_colour_loading():
    names = shipped_samples()
    assert {"camera", "astronaut", "coffee", "chelsea", "coins", "moon"} <= set(names)
    assert load_image("chelsea", (20, 30)).shape == (20, 30)
    rgb = load_rgb("astronaut", (16, 24))
    assert rgb.shape == (16, 24, 3) and rgb.dtype == np.uint16 and rgb.max() <= 255
    assert len({int(rgb[..., c].sum()) for c in range(3)}) == 3       # real colour planes
    grey = load_rgb("camera", 8)
    assert np.array_equal(grey[..., 0], grey[..., 2])                  # grey: equal planes
    with pytest.raises(MappingError, match="not a shipped scikit-image sample"):
        load_rgb("no_such_image", 8)


def test_bayer_rggb_known_answer():
    rgb = np.zeros((2, 4, 3), np.uint16)
    rgb[..., 0], rgb[..., 1], rgb[..., 2] = 10, 20, 30
    rgb[0, 2] = (11, 21, 31)
    assert bayer_rggb(rgb).tolist() == [[10, 20, 11, 20], [20, 30, 20, 30]]
    with pytest.raises(MappingError, match=r"expected an \(h, w, 3\) RGB image"):
        bayer_rggb(np.zeros((4, 4)))


def test_rgb_planes_app_matches_formula_numpy_and_halide():
    """Three distinct input planes: the Halide golden once read freed memory for all but
    the last input (hl.Buffer wraps the numpy array); now every input is kept alive."""
    p = build_app("rgb_luma", 32, 24)
    src = load_app_image(p, "coffee", (24, 32))
    ims = app_images(p, src)
    assert set(ims) == {"r", "g", "b"} and np.array_equal(ims["g"], src[..., 1])
    want = ((77 * src[..., 0].astype(np.int64) + 150 * src[..., 1] + 29 * src[..., 2]) >> 8)
    got = run_pipeline(p.lower(), ims)
    assert np.array_equal(got, want) and np.array_equal(run_halide(p, ims), want)
    mm = map_memory(p.lower(), DUAL_PORT_SRAM)
    assert mm.counts()["io"] == 4 and np.array_equal(run_streams(mm, ims), want)


def test_bayer_app_matches_formula_numpy_and_halide():
    p = build_app("demosaic", 32, 24)
    src = load_app_image(p, "astronaut", (24, 32))
    ims = app_images(p, src)
    m = bayer_rggb(src).astype(np.int64)
    assert np.array_equal(ims["mosaic"], m)
    r, b = m[0::2, 0::2], m[1::2, 1::2]
    g = ((m[0::2, 1::2] + m[1::2, 0::2]) & 0xFFFF) >> 1
    want = ((77 * r + 150 * g + 29 * b) & 0xFFFF) >> 8
    assert np.array_equal(run_pipeline(p.lower(), ims), want)
    assert np.array_equal(run_halide(p, ims), want)
    mm = map_memory(p.lower(), DUAL_PORT_SRAM)
    assert np.array_equal(run_streams(mm, ims), want)


def test_convention_errors():
    x, y = Var("x"), Var("y")
    a = Input("a", UInt16, (8, 8))
    f = Func("f")
    f[x, y] = a[x, y] + 1
    with pytest.raises(MappingError, match=r"image convention 'cmyk' is not one of grey, rgb, "
                                           r"bayer_rggb"):
        Pipeline(f, "f", image="cmyk")
    with pytest.raises(MappingError, match=r"feeds inputs named r, g, b .* rename \['a'\]"):
        Pipeline(f, "f", image="rgb")
    p = build_app("rgb_luma", 8, 8)
    with pytest.raises(MappingError, match=r"input convention 'rgb' takes a colour \[y, x, c\] "
                                           r"image, got shape \(8, 8\)"):
        app_images(p, np.zeros((8, 8), np.uint16))
    with pytest.raises(MappingError, match=r"'grey' takes a grey \[y, x\] image"):
        app_images(build_app("gaussian", 8, 8), np.zeros((8, 8, 3), np.uint16))
