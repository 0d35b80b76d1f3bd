"""The Verilator model built from the top in column blocks (``rtl/hier/``, Verilator's
``--hierarchical``; issue 41, item 8): a run on it is bit-identical to a run on the flat top,
``cgra run --model-hierarchy`` chooses, and "auto" takes the flat top below 256 tiles.

On the session's 8x8 design (configs/small.toml: blocks of 4 columns, one block module for
both halves); the 32x16 default design's model is built from blocks by every test that
uses ``default_harness``."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from garnet.collateral import read_design_info

CGRA = Path(sys.executable).with_name("cgra")


def _run(design: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(CGRA), "run", "gaussian", "--design", str(design), "--out",
                           str(out), "--size", "32", *extra], capture_output=True, text=True)


def test_blocks_model_is_bit_identical_to_the_flat_one(small_design, harness, tmp_path):
    info = read_design_info(small_design)
    assert (info.hier_columns, info.hier_filelist) == (4, "rtl/hier/filelist.f")
    hier = small_design / "rtl" / "hier"
    top = info.top
    assert sorted(p.name for p in hier.iterdir()) == sorted(
        ["filelist.f", f"{top}.v", f"{top}_col0.v"])       # both halves share one block
    assert (hier / "filelist.f").read_text().splitlines()[-2:] == [
        f"hier/{top}_col0.v", f"hier/{top}.v"]
    assert (hier / f"{top}.v").read_text().count(f"  {top}_col0 Col_") == 2

    flat, blocks = tmp_path / "flat", tmp_path / "blocks"
    r1 = _run(small_design, flat)                     # auto: 64 tiles -> the flat top
    assert r1.returncode == 0, r1.stderr
    r2 = _run(small_design, blocks, "--model-hierarchy", "blocks")
    assert r2.returncode == 0, r2.stderr
    v1 = json.loads((flat / "run_report.json").read_text())["verilator"]
    v2 = json.loads((blocks / "run_report.json").read_text())["verilator"]
    assert (v1["key"], v1["hier_columns"]) == (harness.key, 0)
    assert v2["hier_columns"] == 4 and v2["key"] != harness.key
    assert "(column blocks of 4)" in r2.stdout and "bit-exactly" in r2.stdout
    assert "column blocks" not in r1.stdout
    for f in ("gaussian.bs", "sim.stim", "sim.out", "gaussian.png"):
        assert (blocks / f).read_bytes() == (flat / f).read_bytes(), f


def test_blocks_need_a_design_with_blocks(design_dir, small_design, tmp_path):
    """A ready-valid design has no column blocks, and toggle counts (--energy) need the flat
    top: "blocks" is refused in one line, exit 2, before anything is mapped."""
    res = _run(design_dir("tiny_rv"), tmp_path / "rv", "--model-hierarchy", "blocks")
    assert res.returncode == 2
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and "has no column blocks" in err[0] and "'flat' or 'auto'" in err[0]
    assert "Traceback" not in res.stderr and not (tmp_path / "rv").exists()
    res = _run(small_design, tmp_path / "energy", "--model-hierarchy", "blocks", "--energy")
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        "error: hierarchy 'blocks' cannot count toggles (the probes are wires of the flat "
        "top); use hierarchy 'auto' or 'flat' with toggles"]
    assert not (tmp_path / "energy").exists()
