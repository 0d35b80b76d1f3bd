"""Issue 17 item 2: the liberty-free area of the DSE area proxy (dse.area): NAND2-
equivalent weights per yosys cell type, checked on a real yosys run of a small tile (a 4-bit
counter with enable and synchronous reset and a 2:1 output mux, < 1 s of yosys)."""
from __future__ import annotations

import json
import re
import shutil
import threading
from pathlib import Path

import pytest

import garnet.cells as cells
from dse.area import (CELL_WEIGHTS, UnknownCellError, design_area, design_nand2,
                             nand2_area, tile_cells)

COUNTER = """\
module Tile_counter(input clk, input rst, input en, input sel, input [3:0] a,
                    output [3:0] y, output [3:0] q);
  reg [3:0] cnt;
  always @(posedge clk)
    if (rst) cnt <= 4'd0;
    else if (en) cnt <= cnt + 4'd1;
  assign q = cnt;
  assign y = sel ? a : cnt;
endmodule
"""
TOP = """\
module Top(input clk, input rst, input en, input sel, input [3:0] a, output [11:0] y);
  Tile_counter t0 (.clk(clk), .rst(rst), .en(en), .sel(sel), .a(a), .y(y[3:0]), .q());
  Tile_counter t1 (.clk(clk), .rst(rst), .en(en), .sel(sel), .a(a), .y(y[7:4]), .q());
  Tile_counter t2 (.clk(clk), .rst(rst), .en(en), .sel(sel), .a(a), .y(y[11:8]), .q());
endmodule
"""
#: yosys 0.23's `stat` of Tile_counter after dse.area.SCRIPT (synth -noabc; abc -fast)
COUNTER_CELLS = {"$_ANDNOT_": 1, "$_MUX_": 4, "$_NAND_": 1, "$_NOT_": 1, "$_SDFFE_PP0P_": 4,
                 "$_XNOR_": 1, "$_XOR_": 2}


@pytest.fixture
def design(tmp_path: Path) -> Path:
    (tmp_path / "rtl").mkdir()
    (tmp_path / "rtl" / "Tile_counter.v").write_text(COUNTER)
    (tmp_path / "rtl" / "Top.v").write_text(TOP)
    (tmp_path / "design.json").write_text(json.dumps({"top": "Top"}))
    return tmp_path


def test_weights_are_nand2_equivalents_of_nangate45():
    """NAND2 = 1; the NanGate 45 nm X1 ratios (INV 0.532 / 0.798 um^2, ...)."""
    w = CELL_WEIGHTS
    assert w["$_NAND_"] == w["$_NOR_"] == w["$_BUF_"] == 1.0
    assert (w["$_NOT_"], w["$_AND_"], w["$_OR_"]) == (0.667, 1.333, 1.333)
    assert w["$_XOR_"] == w["$_XNOR_"] == 2.0
    assert (w["$_MUX_"], w["$_ANDNOT_"], w["$_ORNOT_"]) == (2.333, 1.667, 1.667)
    assert (w["$_AOI3_"], w["$_AOI4_"]) == (1.333, 1.667)
    assert (w["$_DFF_P_"], w["$_DFF_PN0_"], w["$_DFFE_PP_"]) == (5.667, 6.667, 8.0)
    assert w["$_SDFF_PP0_"] == 7.0 and w["$_SDFFE_PP0P_"] == w["$_SDFFCE_NN1N_"] == 9.333
    assert w["Memory"] == 0.0          # the SRAM black box: its bits are sram_bits


def test_every_simcells_cell_has_a_weight():
    """Every fine-grained cell yosys has (``$_*_`` modules of its simcells.v) has a weight,
    and the table has no name yosys does not know (a typo would never match)."""
    simcells = Path(shutil.which("yosys")).resolve().parents[1] / "share/yosys/simcells.v"
    cells = set(re.findall(r"^module \\(\$_\w+_)", simcells.read_text(), re.M))
    assert len(cells) == 149
    assert cells == set(CELL_WEIGHTS) - {"Memory"}


def test_real_stat_is_covered_and_summed(design: Path, tmp_path: Path):
    r = tile_cells(design, "Tile_counter", tmp_path / "cache")
    assert r["cached"] is False
    assert r["cell_types"] == COUNTER_CELLS and r["cells"] == 14
    assert set(r["cell_types"]) <= set(CELL_WEIGHTS)
    hand = (1 * 1.667 + 4 * 2.333 + 1 * 1.0 + 1 * 0.667 + 4 * 9.333 + 1 * 2.0 + 2 * 2.0)
    assert r["nand2"] == pytest.approx(hand) == pytest.approx(55.998)
    # cached by RTL hash: the cache file stores the counts, the NAND2 figure is derived
    again = tile_cells(design, "Tile_counter", tmp_path / "cache")
    assert again["cached"] is True and again["nand2"] == r["nand2"]
    (entry,) = (tmp_path / "cache").glob("Tile_counter-*.json")
    assert "nand2" not in json.loads(entry.read_text())


def test_design_total_and_old_cache(design: Path, tmp_path: Path):
    cache = tmp_path / "dse"
    area = design_area(design, cache / "area")
    assert area["by_tile"]["Tile_counter"]["count"] == 3
    assert area["cells"] == 3 * 14 and area["nand2"] == pytest.approx(3 * 55.998, abs=0.05)
    # a design record cached before the NAND2 figure existed gets it from the tile counts
    old = {"key": "k", "dir": str(design), "area": {"cells": area["cells"], "sram_bits": 0}}
    (cache / "designs").mkdir(parents=True)
    (cache / "designs" / "k.dse.json").write_text(json.dumps(old))
    assert design_nand2(cache, "k") == area["nand2"]
    assert design_nand2(cache, "missing") is None


def test_unknown_cell_type_is_a_typed_error(design: Path, tmp_path: Path):
    with pytest.raises(UnknownCellError, match=r"tile Tile_x: yosys cell type \$_FOO_ "):
        nand2_area({"$_NAND_": 3, "$_FOO_": 2}, "Tile_x")
    # from a (cached) yosys stat: names the cell and the tile module, on one line
    cache = tmp_path / "cache"
    tile_cells(design, "Tile_counter", cache)
    (entry,) = cache.glob("Tile_counter-*.json")
    doc = json.loads(entry.read_text())
    doc["cell_types"]["$_LUT4_"] = 1
    entry.write_text(json.dumps(doc))
    with pytest.raises(UnknownCellError) as exc:
        tile_cells(design, "Tile_counter", cache)
    msg = str(exc.value)
    assert "$_LUT4_" in msg and "Tile_counter" in msg and "\n" not in msg


def test_a_tile_two_processes_need_is_synthesised_once(design: Path, tmp_path: Path,
                                                        monkeypatch):
    """Two sweeps (or test workers) sharing an area cache ask for one tile at once: the
    second waits on the entry's lock and reads the first's counts instead of running yosys
    again; the entry is whole (no temporary file is left beside it)."""
    calls: list[str] = []
    synth = cells._synth_cells

    def counted(mods, module, *args):
        calls.append(module)
        return synth(mods, module, *args)

    monkeypatch.setattr(cells, "_synth_cells", counted)
    out: list[dict] = []
    threads = [threading.Thread(target=lambda: out.append(
        tile_cells(design, "Tile_counter", tmp_path / "shared"))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == ["Tile_counter"]
    assert sorted(r["cached"] for r in out) == [False, True]
    assert out[0]["cell_types"] == out[1]["cell_types"] == COUNTER_CELLS
    assert [p.name for p in (tmp_path / "shared").iterdir() if not p.name.endswith(".lock")] \
        == [f"Tile_counter-{out[0]['key'][:20]}.json"]
