"""Cell leakage from the NanGate 45 nm Open Cell Library (a model, issue 36) and the yosys
count of boundary-isolation cells (AHA paper §4.3: isolation cells at every input of a power
domain against isolation through the existing muxes) on a small tile."""
from __future__ import annotations

import pytest

from garnet.cells import (CELL_LEAKAGE_NW, CELL_WEIGHTS, LEAKAGE_SOURCE,
                          NANGATE45_X1_LEAKAGE_NW, UnknownCellError, data_inputs,
                          explicit_isolation, isolation_overhead, leakage_nw, mux_isolation)

#: a tile of two 4-bit data inputs, one 2:1 switch-box mux and its output clamp, in the
#: CIRCT style of the generated RTL (one port per line, continuation lines)
TOY_TILE = """module Tile_toy(
  input         clk_en,
  input  [3:0]  SB_A,
                SB_B,
  input  [31:0] config_data,
  output [3:0]  SB_OUT
);
  wire [3:0] _mux_SB_OUT_O;
  CanalMux_h2_w4 mux_SB_OUT (
    .I0  (SB_A),
    .I1  (SB_B),
    .S   (config_data[0:0]),
    .O   (_mux_SB_OUT_O)
  );
  CanalClamp_w4 pg_clamp_SB_OUT (
    .I    (_mux_SB_OUT_O),
    .gate (config_data[1]),
    .O    (SB_OUT)
  );
endmodule
"""
TOY_MUX = """module CanalMux_h2_w4(
  input  [3:0] I0,
               I1,
  input        S,
  output [3:0] O
);
  assign O = S ? I1 : I0;
endmodule
"""
TOY_CLAMP = """module CanalClamp_w4(
  input  [3:0] I,
  input        gate,
  output [3:0] O
);
  assign O = gate ? 4'h0 : I;
endmodule
"""
TOY = {"Tile_toy": TOY_TILE, "CanalMux_h2_w4": TOY_MUX, "CanalClamp_w4": TOY_CLAMP}


def test_cell_leakage_is_the_nangate_composition():
    """Quoted cell_leakage_power (nW) of NangateOpenCellLibrary_typical.lib's X1 cells, and
    a yosys cell's leakage = the sum over its NanGate composition."""
    assert NANGATE45_X1_LEAKAGE_NW["NAND2"] == 17.39336
    assert NANGATE45_X1_LEAKAGE_NW["DFF"] == 79.112308
    assert "NangateOpenCellLibrary_typical.lib" in LEAKAGE_SOURCE and "1.10 V" in LEAKAGE_SOURCE
    leak = CELL_LEAKAGE_NW
    assert set(leak) == set(CELL_WEIGHTS)
    assert (leak["$_NAND_"], leak["$_NOT_"], leak["$_MUX_"]) == (17.393, 14.353, 35.928)
    assert leak["$_DFFE_PP_"] == 115.041                 # DFF + MUX2 (an enable)
    assert leak["$_MUX4_"] == 107.785                    # three MUX2
    assert leak["$_ANDNOT_"] == 35.553                   # INV + NOR2
    assert leak["Memory"] == 0.0
    assert leakage_nw({"$_NAND_": 2, "$_DFF_P_": 1}) == 113.898     # 2 x 17.393 + 79.112
    with pytest.raises(UnknownCellError, match=r"tile T: yosys cell type \$_FOO_ \(3x\) has "
                                               r"no leakage figure"):
        leakage_nw({"$_FOO_": 3}, "T")


def test_isolation_variants_of_a_small_tile(tmp_path):
    """The data inputs exclude the always-on nets; explicit isolation ANDs every input bit
    with ~iso_in; mux isolation forces the boundary mux's select instead; yosys counts the
    four variants (no isolation, the project's output clamp, explicit, mux)."""
    assert data_inputs(TOY_TILE) == {"SB_A": 4, "SB_B": 4}
    exp = explicit_isolation(TOY_TILE, "Tile_toy", "Tile_toy_x")
    assert exp.startswith("module Tile_toy_x(\n  input iso_in,")
    assert "wire [3:0] SB_A = SB_A__raw & {4{~iso_in}};" in exp
    assert "SB_B__raw," in exp
    mux, forced, rest = mux_isolation(TOY_TILE, "Tile_toy", "Tile_toy_m")
    assert (forced, rest) == (1, 0)
    assert ".S   ((config_data[0:0]) | {1{iso_in}})," in mux and "__raw" not in mux
    r = isolation_overhead(TOY, "Tile_toy", tmp_path / "cells", "toy")
    assert (r["data_input_bits"], r["muxes_forced"], r["inputs_explicit"]) == (8, 1, 0)
    cells = {v: c["cells"] for v, c in r["variants"].items()}
    # 4 mux cells alone; the clamp adds one gate per output bit; explicit isolation one
    # per input bit (ABC may share them); forcing the 1-bit select costs one gate
    assert cells == {"none": 4, "clamp": 8, "explicit": 8, "mux": 5}
    assert r["overhead_pct"]["mux"]["cells"] == 25.0
    assert r["overhead_pct"]["explicit"]["cells"] == 100.0
    # a second call reads the yosys counts from the cache
    assert isolation_overhead(TOY, "Tile_toy", tmp_path / "cells", "toy") == r
