"""Golden models: the numpy interpreter of the IR and real Halide agree bit-exactly."""
from __future__ import annotations

import numpy as np
import pytest

from mapper.sim.halide import run_halide
from mapper.interp import run_pipeline

from mapper.apps import APPS, FLOAT_APPS

# integer apps on raw pixels (the bf16 apps: tests/mapper/test_dsl_bf16.py)
APP_NAMES = sorted(set(APPS) - FLOAT_APPS)

# output domain sizes on a 64x64 input (outputs only where the whole stencil is inside)
OUT_SIZE = {"pointwise": 64, "brighten_blur": 63, "gaussian": 62, "unsharp": 62, "harris": 58,
            "downsample": 32, "upsample": 128, "laplacian_pyramid": 60, "rgb_luma": 64,
            "demosaic": 32, "gaussian_edge": 64, "color_correct": 32, "camera_pipeline": 30,
            "bayer_demosaic": 62, "upsample_bilinear": 127}


@pytest.mark.parametrize("name", APP_NAMES)
def test_interpreter_matches_halide_on_camera(name, dsl_apps, camera64):
    pipe = dsl_apps[name]
    ims = {i.name: camera64 for i in pipe.inputs}       # every input the camera crop
    a = run_pipeline(pipe.lower(), ims)
    b = run_halide(pipe, ims)
    assert a.shape == b.shape == (OUT_SIZE[name], OUT_SIZE[name])
    assert a.dtype == b.dtype == np.uint16
    assert np.array_equal(a, b)
    assert len(np.unique(a)) > 1  # a non-trivial image (harris finds corners in this crop)


@pytest.mark.parametrize("name", APP_NAMES)
def test_interpreter_matches_halide_on_random_16bit(name, dsl_apps):
    """Full-range 16-bit inputs exercise wrap-around and signed/unsigned semantics."""
    img = np.random.default_rng(7).integers(0, 1 << 16, (64, 64)).astype(np.uint16)
    pipe = dsl_apps[name]
    ims = {i.name: img for i in pipe.inputs}
    assert np.array_equal(run_pipeline(pipe.lower(), ims), run_halide(pipe, ims))


def test_known_values(dsl_apps, camera64):
    img = camera64.astype(np.int64)
    pw = run_pipeline(dsl_apps["pointwise"].lower(), {"input": camera64})
    assert np.array_equal(pw, (img * 2 + 1).astype(np.uint16))
    bb = run_pipeline(dsl_apps["brighten_blur"].lower(), {"input": camera64})
    b2 = img * 2
    want = (b2[:-1, :-1] + b2[:-1, 1:] + b2[1:, :-1] + b2[1:, 1:]) >> 2
    assert np.array_equal(bb, want.astype(np.uint16))
    g = run_pipeline(dsl_apps["gaussian"].lower(), {"input": camera64})
    w = np.array([[24, 30, 24], [30, 37, 30], [24, 30, 24]])
    acc = sum(w[j, i] * img[j:j + 62, i:i + 62] for j in range(3) for i in range(3))
    assert np.array_equal(g, ((acc & 0xFFFF) >> 8).astype(np.uint16))
    h = run_pipeline(dsl_apps["harris"].lower(), {"input": camera64})
    assert set(np.unique(h)) == {0, 255}


def test_unrolled_schedule_in_halide_keeps_results(camera64):
    from mapper.apps import build_app

    pipe = build_app("gaussian", 64, 64, unroll=3)
    assert np.array_equal(run_halide(pipe, {"input": camera64}),
                          run_pipeline(pipe.lower(), {"input": camera64}))


def test_all_dsl_constructs_agree_with_halide():
    """Int16 input, abs, min/max, <<, Bool &,|,^,~,==, select, Table, negative offsets."""
    from mapper.frontend.dsl import (Func, Input, Int16, Pipeline, RDom, Table, UInt16, Var,
                                     abs, cast, max, min, select)

    x, y = Var("x"), Var("y")
    a = Input("a", Int16, (24, 10))
    t = Table("t", [[3, -1, 2]], Int16)
    r = RDom([(0, 3), (0, 1)])
    f = Func("f")
    f[x, y] = cast(Int16, 7)
    f[x, y] += t[r.x, r.y] * a[x + r.x - 1, y]
    g = Func("g")
    c1, c2 = f[x, y] < a[x, y + 1], a[x, y] >= 0
    cond = (c1 & c2) | ((c1 ^ c2) == ~c2)
    g[x, y] = select(cond, cast(UInt16, abs(f[x, y])) << 3,
                     cast(UInt16, max(min(f[x, y], a[x, y]), -5) >> 1) - 1)
    pipe = Pipeline(g, "constructs")
    img = np.random.default_rng(9).integers(-(1 << 15), 1 << 15, (10, 24)).astype(np.int16)
    want = run_halide(pipe, {"a": img})
    got = run_pipeline(pipe.lower(), {"a": img})
    assert got.shape == want.shape == (9, 22)
    assert np.array_equal(got, want)
