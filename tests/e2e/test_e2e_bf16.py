"""End to end in BFloat16: gaussian_bf16 mapped onto the 8x8 array with the FP PE
(configs/bf16_small.toml, peak/examples/cgra_pe_bf16.py) runs on its RTL in Verilator and
matches the numpy interpreter and real Halide (``BFloat(16)``) bit for bit. The input stream
holds the camera pixels' bf16 encodings (exact), the output stream bf16 encodings."""
from __future__ import annotations

import numpy as np
import pytest

from mapper.flow import run_app
from mapper.frontend.dsl import from_bf16_bits
from mapper.images import camera_crop
from mapper.params import AppParams, FlowParams, RunParams


@pytest.fixture(scope="session")
def gaussian_bf16_run(bf16_small_design, tmp_path_factory):
    out = tmp_path_factory.mktemp("bf16_apps") / "gaussian_bf16"
    return run_app(RunParams(AppParams("gaussian_bf16", 64, 64), bf16_small_design, out,
                             FlowParams(power_gate=True)))    # every unused tile gated


def test_gaussian_bf16_on_verilator_matches_numpy_and_halide(gaussian_bf16_run, assert_gated):
    r = gaussian_bf16_run
    assert_gated(r, 24)
    assert np.array_equal(r.image, camera_crop(64, 64))
    assert r.output.shape == r.golden_numpy.shape == r.golden_halide.shape == (62, 62)
    assert np.array_equal(r.output.astype(np.int64), r.golden_numpy.astype(np.int64))
    assert np.array_equal(r.output.astype(np.int64), r.golden_halide.astype(np.int64))
    assert r.report["match"] == {"numpy": True, "halide": True}
    assert r.sim.readback_mismatches == []
    # the output is a blurred image: bf16 values in the pixel range, close to the exact blur
    vals = from_bf16_bits(r.output)
    img = r.image.astype(np.float64)
    w = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]]) / 16
    exact = sum(img[j:j + 62, i:i + 62] * w[j, i] for j in range(3) for i in range(3))
    assert np.abs(vals - exact).max() <= 2.0
    assert len(np.unique(r.output)) > 100


def test_gaussian_bf16_resources_and_cycles(gaussian_bf16_run):
    """17 FP PEs (9 float.mul by a constant, 8 float.add), one pixel per cycle."""
    rep = gaussian_bf16_run.report
    assert rep["pes_per_stage"] == {"blur": 17}
    assert rep["cycles"]["stream"] == rep["cycles"]["ideal_stream"] + rep["latency"][
        "extra_cycles"]
    print(f"\ngaussian_bf16 on bf16_small: {rep['resources']}, cycles {rep['cycles']}, "
          f"latency {rep['latency']['extra_cycles']}, verilator {rep['verilator']}")


def test_brighten_bf16_converts_on_the_array(bf16_small_design, tmp_path, assert_gated):
    """brighten_bf16: UInt16 pixels in, converted to bf16 on the FP PE (I2F), scaled and
    offset in bf16, converted back (F2I): 4 PEs, bit-exact against numpy and Halide, and
    equal to the bf16 arithmetic done by hand."""
    r = run_app(RunParams(AppParams("brighten_bf16", 64, 64), bf16_small_design,
                          tmp_path / "brighten_bf16", FlowParams(power_gate=True)))
    assert r.report["match"] == {"numpy": True, "halide": True}
    assert_gated(r, 48)                     # 4 PEs, 2 IOs: almost the whole 8x8 gated
    assert r.report["pes_per_stage"] == {"brighten_bf16": 4}
    img = camera_crop(64, 64).astype(np.int64)
    assert np.array_equal(r.image, img)
    # by hand: x * 1.5 is exact in float64; bf16 keeps 8 significant bits (nearest even)
    # and every value here is > 1, so + 0.5 and the truncation follow; 382.5 -> 382
    def bf16(v):                         # np.round rounds half to even
        e = np.floor(np.log2(np.maximum(v, 1))) - 7
        return np.round(v / 2.0 ** e) * 2.0 ** e
    want = np.floor(bf16(bf16(img * 1.5) + 0.5)).astype(np.int64)
    assert np.array_equal(r.output.astype(np.int64), want)
    assert r.output.max() > 255          # the bright pixels grow past 8 bits
