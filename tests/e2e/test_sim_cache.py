"""The Verilator model cache (:mod:`mapper.sim.verilator`, keyed by the content of the RTL,
harness, toolchain and flags; shared by the design directories beside each other): a design
directory regenerated A -> B -> A finds A's model again (the third `cgra run` skips the
Verilator build, its report and summary line say so, and its outputs are bit-identical to the
first run's), and two design directories with byte-identical RTL share one model.

The designs are made beside the session's 8x8 designs (tests/e2e/conftest.py), so they use
the session's model cache: A is configs/small.toml (the session's ``harness``), B
configs/small_pub.toml (wide-fetch PUB MEM tiles: different RTL, a different model)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mapper.flow import run_app
from mapper.params import AppParams, RunParams
from mapper.sim.verilator import build_harness

CGRA = Path(sys.executable).with_name("cgra")


def _install(src: Path, dst: Path) -> None:
    """Replace the design directory ``dst`` with design ``src``, as `cgra rtl --out dst`
    regenerating it does (the old directory goes as a whole)."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("sim"))


@pytest.fixture
def sibling(small_design, request):
    """A design directory beside the session's designs (same model cache), removed after."""
    d = small_design.parent / f"cache-{request.node.name[:24]}-{os.getpid()}"
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_regenerated_design_reuses_its_model(small_design, pub_small_design, harness, sibling,
                                             tmp_path):
    """(acceptance, issue 41) A -> B -> A in one design directory: the third run reuses A's
    model (cached, 0 s of build, named in the summary line) and is bit-exact with the first."""
    a1, b, a2 = tmp_path / "a1", tmp_path / "b", tmp_path / "a2"

    def cgra_run(out: Path) -> str:
        res = subprocess.run([str(CGRA), "run", "gaussian", "--design", str(sibling), "--out",
                              str(out), "--size", "32"], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        return res.stdout

    _install(small_design, sibling)
    cgra_run(a1)
    assert json.loads((a1 / "run_report.json").read_text())["verilator"]["key"] == harness.key
    _install(pub_small_design, sibling)
    r2 = run_app(RunParams(AppParams("gaussian", 32, 32), sibling, b))
    assert r2.harness.key != harness.key
    _install(small_design, sibling)
    out = cgra_run(a2)
    rep = json.loads((a2 / "run_report.json").read_text())
    assert rep["verilator"] == {"key": harness.key, "cached": True, "build_seconds": 0.0,
                                "hier_columns": 0, "hier_tiles": []}  # an 8x8: the flat top
    assert rep["stage_seconds"]["verilator_build"] == 0.0
    assert f"Verilator model {harness.key} reused" in out
    for f in ("gaussian.bs", "sim.stim", "sim.out", "gaussian.png"):
        assert (a2 / f).read_bytes() == (a1 / f).read_bytes(), f


def test_design_dirs_with_identical_rtl_share_one_model(small_design, harness, sibling):
    sibling.mkdir()
    shutil.copy(small_design / "design.json", sibling / "design.json")
    shutil.copytree(small_design / "rtl", sibling / "rtl")
    h = build_harness(sibling)
    assert h.cached and h.build_seconds == 0.0
    assert (h.key, h.exe) == (harness.key, harness.exe) and h.design_dir == sibling.resolve()
    assert h.exe.parent.parent == small_design.parent.resolve() / ".sim-cache"
    assert not (sibling / "sim").exists()
