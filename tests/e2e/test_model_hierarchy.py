"""The Verilator model built from the top in column blocks (``rtl/hier/``, Verilator's
``--hierarchical``; issue 41, item 8): the blocks of the session's 8x8 design
(configs/small.toml: blocks of 4 columns, one block module for both halves), and the
refusals of ``cgra run --model-hierarchy blocks``. A run on the blocks model is bit-exact with
numpy and Halide in every test that uses the 32x16's ``default_harness`` ("auto" builds it from
blocks); bench/bench_verilator.py compares the flat and blocks models' outputs bit for bit."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from garnet.collateral import read_design_info

CGRA = Path(sys.executable).with_name("cgra")


def _run(design: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(CGRA), "run", "gaussian", "--design", str(design), "--out",
                           str(out), "--size", "32", *extra], capture_output=True, text=True)


def test_the_8x8_top_in_column_blocks_shares_one_block_module(small_design):
    info = read_design_info(small_design)
    assert (info.hier_columns, info.hier_filelist) == (4, "rtl/hier/filelist.f")
    hier = small_design / "rtl" / "hier"
    top = info.top
    assert sorted(p.name for p in hier.iterdir()) == sorted(
        ["filelist.f", f"{top}.v", f"{top}_col0.v"])       # both halves share one block
    assert (hier / "filelist.f").read_text().splitlines()[-2:] == [
        f"hier/{top}_col0.v", f"hier/{top}.v"]
    assert (hier / f"{top}.v").read_text().count(f"  {top}_col0 Col_") == 2


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
