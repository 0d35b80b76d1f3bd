"""Decompositions end to end on 8x8 arrays whose PE lacks an op (issue 41): the camera
pipeline on the PE without GTE (configs/small_nomax.toml: every max a compare PE plus a
select PE) and gaussian on the PE without a multiplier (configs/small_nomul.toml: every
multiply by a weight as shifts and adds) run on the generated RTL in Verilator bit-exact
with numpy and Halide, with more PEs than on the stock PE (tests/mapper/test_covering.py,
DEFAULT_PES: camera_pipeline 32, gaussian 18)."""
from __future__ import annotations

import pytest

from mapper.flow import run_app
from mapper.params import AppParams, RunParams
from mapper.stages import read_app


#: `make bench` runs it, `make test` does not (~45 s: its own design and model); CI runs the
#: decomposition end to end with gaussian below, and both PEs' covers in tests/mapper
@pytest.mark.bench
def test_camera_pipeline_without_max(small_nomax_design, tmp_path):
    r = run_app(RunParams(AppParams("camera_pipeline", 64, 64), small_nomax_design, tmp_path))
    assert r.report["match"] == {"numpy": True, "halide": True}
    doc = read_app(tmp_path)
    # 7 maxima (3 smax, 4 umax), each 2 PEs where the stock PE needs 1: 32 + 7
    assert doc["decomposed_pes"] == {"smax -> 2 PEs": 6, "umax -> 2 PEs": 8}
    assert doc["counts"]["pe"] == 39


def test_gaussian_without_multiplier(small_nomul_design, tmp_path):
    r = run_app(RunParams(AppParams("gaussian", 64, 64), small_nomul_design, tmp_path))
    assert r.report["match"] == {"numpy": True, "halide": True}
    doc = read_app(tmp_path)
    # the 9 weighted taps: 4 x 24 and 4 x 30 (3 PEs each), 1 x 37 (4 PEs); 9 PEs of sums and
    # the shift as on the stock PE (18 PEs there)
    assert doc["decomposed_pes"] == {"mul by constant -> shl+add": 28}
    assert doc["counts"]["pe"] == 37
