"""The Verilator model built from the top in column blocks (``rtl/hier/``, Verilator's
``--hierarchical``; issue 41, item 8): the blocks of the session's 8x8 design
(configs/small.toml: blocks of 4 columns, one block module for both halves), and the
refusals of ``cgra run --model-hierarchy blocks``. A run on the blocks model is bit-exact with
numpy and Halide in every test that uses the 32x16's ``default_harness`` ("auto" builds it from
blocks); bench/bench_verilator.py compares the flat and blocks models' outputs bit for bit.
Tile blocks (``--model-hierarchy tiles``): which designs "auto" builds from them; the replay of
tests/e2e/test_ready_valid.py compares a tile-block run with the flat one byte for byte, and
every dataflow run on configs/small_df.toml (tests/dataflow) uses them."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cgra.errors import ConfigError
from garnet.collateral import read_design_info
from mapper.sim.verilator import TILE_BLOCK_MIN_BYTES, SimParams, check_hierarchy, tile_modules

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
    for mode in ("blocks", "tiles"):
        res = _run(small_design, tmp_path / "energy", "--model-hierarchy", mode, "--energy")
        assert res.returncode == 2
        assert res.stderr.strip().splitlines() == [
            f"error: hierarchy '{mode}' cannot count toggles (the probes are wires of the "
            f"flat top); use hierarchy 'auto' or 'flat' with toggles"]
        assert not (tmp_path / "energy").exists()


def test_auto_takes_tile_blocks_for_ready_valid_arrays_of_big_tiles(design_dir, small_design):
    """"auto" verilates a ready-valid array in tile blocks when its tile instances hold
    TILE_BLOCK_MIN_BYTES of Verilog: the 8x8 of dataflow PEs (128-word scratchpads and a
    divider in each of 56 PE tiles), not the 4x3 tiny_rv, never a static 8x8 (column blocks
    from 256 tiles). "tiles" asks for them on any design; toggles always take the flat top."""
    df = design_dir("small_df", only=["coreir.add"])
    rv = design_dir("tiny_rv")
    info = read_design_info(df)
    names, size = tile_modules(df / "rtl", info.top)
    assert names == sorted(p.stem for p in (df / "rtl").glob("RvTile_*.v")) and len(names) == 2
    assert size >= 8 * TILE_BLOCK_MIN_BYTES        # 64 instances of big tiles
    names, size = tile_modules(rv / "rtl", read_design_info(rv).top)
    assert len(names) == 3 and 0 < size < TILE_BLOCK_MIN_BYTES
    assert check_hierarchy(df, SimParams()) == "tiles"
    assert check_hierarchy(rv, SimParams()) == "flat"
    assert check_hierarchy(rv, SimParams(hierarchy="tiles")) == "tiles"
    assert check_hierarchy(small_design, SimParams()) == "flat"     # static, 64 tiles
    assert check_hierarchy(small_design, SimParams(hierarchy="blocks")) == "columns"
    assert check_hierarchy(df, SimParams(toggles=True)) == "flat"
    with pytest.raises(ConfigError, match="use 'auto', 'flat', 'blocks' or 'tiles'"):
        check_hierarchy(rv, SimParams(hierarchy="tile"))
