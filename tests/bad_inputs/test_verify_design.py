"""`cgra verify DESIGN BITSTREAM` with the wrong design (issue 41, item 6): a bitstream made
for another design is refused naming both designs (name, directory, design.json hash) and the
fix, not blamed on a stale pipelined.json."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bad_support import cgra, error_line
from garnet.collateral import design_id
from mapper.flow import run_stages
from mapper.params import AppParams, RunParams


@pytest.fixture(scope="module")
def pointwise_run(small_design, tmp_path_factory) -> Path:
    """pointwise (16x16) mapped, placed, routed, pipelined and its bitstream written on the
    8x8 design (no simulation)."""
    out = tmp_path_factory.mktemp("verify") / "pointwise"
    run_stages(RunParams(AppParams("pointwise", 16, 16), small_design, out), "bitstream")
    return out


def _other_design(small_design: Path, where: Path) -> Path:
    """Another design: the 8x8 design's files under another name (its design.json, and so
    its design_id, differ; every file the manifest lists is intact)."""
    other = where / "other"
    shutil.copytree(small_design, other, ignore=shutil.ignore_patterns("sim", ".lock*"))
    doc = json.loads((other / "design.json").read_text())
    doc["name"] = "other"
    (other / "design.json").write_text(json.dumps(doc, indent=1))
    return other


@pytest.mark.bad_refused
def test_verify_with_another_design_names_both(small_design, pointwise_run, tmp_path):
    """Before: ``pipelined.json was made for another generation of design small ...: stale;
    run `cgra pipeline ...` again`` (re-pipelining cannot fix it)."""
    other = _other_design(small_design, tmp_path)
    bs = pointwise_run / "pointwise.bs"
    r = cgra(["verify", other, bs], tmp_path)
    assert r.returncode == 2, r.stderr
    err = error_line(r)
    assert err == (
        f"error: {bs}: bitstream made for design small ({small_design}, design.json hash "
        f"{design_id(small_design)[:12]}), not other ({other}, design.json hash "
        f"{design_id(other)[:12]}): pass {small_design} as DESIGN, or map the app on {other} "
        f"and run it again (`cgra run pointwise --design {other} --out {pointwise_run}`)")
    assert "stale" not in err and "cgra pipeline" not in err
    assert len([ln for ln in r.stderr.splitlines() if ln.strip()]) == 1


@pytest.mark.good_input
def test_verify_with_its_own_design_proves(small_design, pointwise_run, tmp_path):
    r = cgra(["verify", small_design, pointwise_run / "pointwise.bs"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "proved for" in r.stdout
