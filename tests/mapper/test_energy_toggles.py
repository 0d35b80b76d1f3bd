"""Per-tile toggle counting (issue 36): the tile-output wires the Verilator harness probes,
its C++ for them, and how toggles of wires and IO streams add up per tile."""
from __future__ import annotations

import numpy as np
import pytest

from cgra.errors import CollateralError
from garnet.collateral import TopPort
from mapper.sim.energy import stream_mask, stream_toggles, tile_activity
from mapper.sim.verilator import CONTROL_PORTS, harness_source, probe_tile, tile_probes

TOP = """module Other(input a);
  wire [15:0] _Tile_X09_Y09_SB_T0_EAST_SB_OUT_B16;
endmodule
module Top(
  input CLK
);
  wire [31:0] _Tile_X00_Y00_read_data;
  wire [15:0] _Tile_X00_Y00_SB_T0_SOUTH_SB_OUT_B16;
  wire        _Tile_X01_Y0A_SB_T4_WEST_SB_OUT_B1;
  wire [79:0] _Tile_X01_Y00_WIDE;
  wire [15:0] not_a_tile;
endmodule
"""


def test_probes_are_the_tile_output_wires_of_the_top_module():
    assert tile_probes(TOP, "Top") == [("_Tile_X00_Y00_SB_T0_SOUTH_SB_OUT_B16", 16),
                                       ("_Tile_X01_Y0A_SB_T4_WEST_SB_OUT_B1", 1)]
    assert tile_probes(TOP, "Missing") == []
    assert probe_tile("_Tile_X01_Y0A_SB_T4_WEST_SB_OUT_B1") == (1, 10)


def test_harness_reads_and_counts_each_probe():
    ports = [TopPort(n, "in", 32 if n.startswith("config_") and n != "config_write"
                     and n != "config_read" else 1) for n in CONTROL_PORTS]
    ports += [TopPort("read_data", "out", 32), TopPort("glb2io_16_X00_Y00", "in", 16)]
    probes = tile_probes(TOP, "Top")
    src, ins, outs = harness_source("Top", ports, probes)
    assert ins == ["glb2io_16_X00_Y00"] and outs == ["read_data"]
    assert '#include "VTop___024root.h"' in src
    assert "static const int NPROBE = 2;" in src
    assert "pv[1] = (uint64_t)t->rootp->Top__DOT___Tile_X01_Y0A_SB_T4_WEST_SB_OUT_B1;" in src
    assert 'fprintf(fo, "toggles %d\\n", NPROBE);' in src
    plain, _i, _o = harness_source("Top", ports)            # no probes: no root header
    assert "___024root.h" not in plain and "static const int NPROBE = 0;" in plain


def test_tile_activity_adds_wires_and_io_streams_per_tile():
    words = np.array([0, 3, 3, 1], dtype=np.int64)   # 0->3: 2 toggles, 3->1: 1 (bits 0, 1)
    assert (stream_toggles(words, 16), stream_mask(words, 16)) == (3, 0b11)
    act = tile_activity({"_Tile_X00_Y01_SB_T0_EAST_SB_OUT_B16": (10, 0b1011),
                         "_Tile_X00_Y01_SB_T1_EAST_SB_OUT_B16": (5, 0b1),
                         "_Tile_X02_Y03_SB_T0_EAST_SB_OUT_B1": (0, 0)},
                        {"glb2io_16_X00_Y01": (words, 16), "io2glb_16_X05_Y00": (words, 16)})
    # tile (0, 1): 10 + 5 + 3 toggles over 3 + 1 + 2 switching bits; (2, 3) never switched
    assert act == {(0, 1): (18, 6), (5, 0): (3, 2)}
    with pytest.raises(CollateralError, match=r"toggle count of data_out: the name gives no "
                                              r"tile"):
        tile_activity({}, {"data_out": (words, 16)})
