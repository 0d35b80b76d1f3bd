"""End to end: nlm_bf16 (a non-local-means style filter: exp of pixel distances, normalised by a
division; mapper/apps/nlm_bf16.py) on the 32x16 array with the FP PE (configs/bf16.toml) in
Verilator: bit for bit equal to the numpy interpreter, within the stated 38 bf16 ulp of
Halide (measured: a few), with the measured figures in run_report.json.

The app needs 67 PEs, more than the 8x8 bf16_small design of test_e2e_bf16.py has (42), so
this module generates configs/bf16.toml at 16x10 once per session (shared by the xdist
workers, the pattern of conftest.py ``_design``) with the rules of the integer targets and of
the float ops the app uses (cold, the float rules are synthesised first: at most the full
table's ~250 s, conftest.py). `make app APP=nlm_bf16` runs it on the 32x16 array."""
from __future__ import annotations

import dataclasses
import fcntl
import json
import pathlib

import numpy as np
import pytest

from garnet.build import generate
from garnet.params import load_toml, validate
from mapper.apps import build_app, HALIDE_TOLERANCE_ULP, load_app_image
from mapper.flow import run_app
from mapper.frontend.dsl import from_bf16_bits
from mapper.params import AppParams, FlowParams, RunParams
from mapper.sim.run import bf16_ulp_distance
from peak.ir import targets
from peak.rules import build_table

ROOT = pathlib.Path(__file__).resolve().parents[2]

#: a 16x10 Verilator run (its design and rules ~110 s cold): `make bench` runs it, `make test`
#: does not (CONVENTIONS: large runs go in bench/); CI runs BFloat16 end to end on the 8x8
#: (tests/e2e/test_e2e_bf16.py) and nlm_bf16's kernels on the Python models
#: (tests/mapper/test_nlm_bf16.py)
pytestmark = pytest.mark.bench

#: the float rule targets nlm_bf16 maps to (products, sums, exp's clamp, conversions and
#: constants; the division's Newton steps' 2 - b r)
FLOAT_TARGETS = ["float.add", "float.sub", "float.mul", "float.add[in1=const]",
                 "float.mul[in1=const]", "float.sub[in0=const]", "float.sub[in1=const]",
                 "float.max[in1=const]", "float.min[in1=const]", "float.from_s16",
                 "float.to_s16"]


@pytest.fixture(scope="session")
def bf16_design(tmp_path_factory) -> pathlib.Path:
    """Collateral directory of configs/bf16.toml at 16x10 (the BFloat16 PE; 108 PE and 36
    MEM tiles, enough for the app's 67 PEs: a Verilator model a third the size of the 32x16
    one) with the rules of every integer target and of :data:`FLOAT_TARGETS`, generated
    once per session."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if base.name.startswith("popen-gw") else base) / "e2e"
    root.mkdir(exist_ok=True)
    out = root / "bf16"
    only = [t.key for t in targets(16)] + FLOAT_TARGETS

    def build(spec, shared, jobs):
        table = build_table(spec, shared, jobs=jobs, only=only)
        return table.path, {e.target: e.action for e in table.entries}

    with open(root / "bf16.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (out / "design.json").is_file():

                # on the published table: the test is the arithmetic's, and the FP PE
                # tile's cold measurement would add ~30 s
                params = dataclasses.replace(load_toml(ROOT / "configs" / "bf16.toml"),
                                             name="bf16_16x10", width=16, height=10,
                                             timing="cascade-table")
                validate(params)
                generate(params, out, rules=True,
                         rules_dir=ROOT / "build" / "rules", jobs=2,
                         config_file="configs/bf16.toml", builder=build)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return out


@pytest.fixture(scope="session")
def nlm_run(bf16_design, tmp_path_factory):
    out = tmp_path_factory.mktemp("nlm_bf16") / "nlm_bf16"
    return run_app(RunParams(AppParams("nlm_bf16", 32, 32), bf16_design, out,
                             FlowParams(power_gate=True)))    # every unused tile gated


def test_nlm_bf16_on_verilator_matches_numpy_and_halide_within_bound(nlm_run, assert_gated):
    r = nlm_run
    assert_gated(r, 20)                     # of the 16x10 array's 160 tiles
    pipe = build_app("nlm_bf16", 32, 32)
    assert np.array_equal(r.image, load_app_image(pipe, "camera", (32, 32)))
    assert r.output.shape == r.golden_numpy.shape == r.golden_halide.shape == (30, 30)
    assert np.array_equal(r.output.astype(np.int64), r.golden_numpy.astype(np.int64))
    d = bf16_ulp_distance(r.output, r.golden_halide)
    assert int(d.max()) == 3 < HALIDE_TOLERANCE_ULP["nlm_bf16"] == 38
    rep = r.report
    assert rep["match"] == {"numpy": True, "halide": True}
    assert rep["halide_ulp"] == {"nlm_bf16": {"tolerance_ulp": 38, "max_ulp": 3,
                                              "differing_pixels": int((d > 0).sum()),
                                              "pixels": 900}}
    on_disk = json.loads((r.out_dir / "run_report.json").read_text())
    assert on_disk["halide_ulp"] == rep["halide_ulp"]
    assert r.sim.readback_mismatches == []
    # a smoothing filter: the output stays within the neighbourhood's range of pixels
    v, img = from_bf16_bits(r.output), r.image.astype(np.float64)
    nb = np.stack([img[1:-1, 1:-1], img[1:-1, :-2], img[1:-1, 2:], img[:-2, 1:-1],
                   img[2:, 1:-1]])
    assert (v >= nb.min(0) * 0.98).all() and (v <= nb.max(0) * 1.02).all()


def test_nlm_bf16_resources_and_cycles(nlm_run):
    """67 FP PEs (22 per weight stage, 23 for the normalised sum), 4 MEM tiles of line
    buffers, one pixel per cycle."""
    rep = nlm_run.report
    assert rep["pes_per_stage"] == {"wh": 22, "wv": 22, "nlm_bf16": 23}
    assert rep["resources"]["used"]["p"] == 67
    assert rep["resources"]["used"]["m"] == 4
    assert rep["cycles"]["stream"] == rep["cycles"]["ideal_stream"] + rep["latency"][
        "extra_cycles"]
    print(f"\nnlm_bf16 on bf16: {rep['resources']['used']}, cycles {rep['cycles']}, "
          f"latency {rep['latency']}, halide {rep['halide_ulp']}, "
          f"seconds {rep['stage_seconds']}")
