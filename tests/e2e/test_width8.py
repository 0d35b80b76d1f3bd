"""End to end at data width 8 (issue 41, item 5): `cgra rtl --config configs/width8.toml`
builds the 8x8 array with the 8-bit PE (``make_pe(8)``), the width-parameterised dual port
``dualport_4096x8`` and 8-bit IO, and the 16-bit DSL apps run on it in 8-bit wrap-around
arithmetic (``mapper.ir.narrow_pipeline``), bit-exact with both golden models computing at
8 bits (the numpy interpreter of the narrowed pipeline; Halide with ``UInt(8)`` words).

Cost (2 cores shared with other jobs, load ~15): the design is generated once per session by
the ``width8_design`` fixture of tests/e2e/conftest.py in 16 s with its rule table (91
targets, ~35 s when build/rules lacks it) cached and the delay table configs/delays_8.json
(the published figures, 8-bit hops aliased to the 16-bit ones: the measured model of the
8-bit tiles would cost ~3 min cold); the first run includes the Verilator build of the
design's harness (~100-130 s), the others take 6-8 s each."""
from __future__ import annotations

import json

import numpy as np

from mapper.flow import run_app
from mapper.images import camera_crop
from mapper.params import AppParams, RunParams


def test_width8_design_has_8_bit_pe_mem_io(width8_design):
    d = json.loads((width8_design / "design.json").read_text())
    assert d["params"]["data_width"] == 8 and d["params"]["widths"] == [8, 1]
    ports = {p["name"]: p["width"] for p in d["ports"]}
    assert ports["glb2io_8_X00_Y00"] == ports["io2glb_8_X07_Y00"] == 8
    assert not any("_16_" in n for n in ports)
    pe = json.loads((width8_design / "pe.json").read_text())["peak"]
    assert pe["spec"] == "peak.examples.cgra_pe:make_pe(8)" and pe["name"] == "PE8"
    mem = json.loads((width8_design / "mem.json").read_text())["lake"]
    assert (mem["preset"], mem["data_width"], mem["capacity_words"]) == (
        "dualport_4096x8", 8, 4096)


def test_pointwise_runs_bit_exact_on_width8(width8_design, tmp_path):
    r = run_app(RunParams(AppParams("pointwise", 32, 32), width8_design, tmp_path / "pw"))
    assert r.report["match"] == {"numpy": True, "halide": True}
    want = (camera_crop(32, 32).astype(np.int64) * 2 + 1) % 256    # 8-bit wrap-around
    assert np.array_equal(r.output.astype(np.int64), want)
    assert np.array_equal(r.golden_halide.astype(np.int64), want)
    assert r.golden_halide.dtype == np.uint8                        # Halide computed at 8 bits
    nets = json.loads((tmp_path / "pw" / "netlist.json").read_text())["nets"]
    assert {n["width"] for n in nets} == {8}


def test_gaussian_runs_bit_exact_on_width8(width8_design, tmp_path):
    """The weighted sum (weights 24..37) wraps at 8 bits, then ``>> 8`` leaves nothing: the
    8-bit gaussian of any image is 0, on the RTL and in both golden models."""
    r = run_app(RunParams(AppParams("gaussian", 32, 32), width8_design, tmp_path / "g"))
    assert r.report["match"] == {"numpy": True, "halide": True}
    assert r.output.shape == (30, 30) and not r.output.any()
    assert r.golden_halide.dtype == np.uint8 and not r.golden_halide.any()


def test_brighten_blur_runs_bit_exact_on_width8(width8_design, tmp_path):
    """A non-zero 8-bit result through MEM line buffers: the 2x2 sums wrap at 8 bits."""
    r = run_app(RunParams(AppParams("brighten_blur", 32, 32), width8_design, tmp_path / "bb"))
    assert r.report["match"] == {"numpy": True, "halide": True}
    assert r.report["resources"]["used"]["m"] >= 1 and r.output.any()
    assert r.golden_halide.dtype == np.uint8 and r.output.max() <= 255
