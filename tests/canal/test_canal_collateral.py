"""Routing-graph collateral: JSON and text dumps, delays, round trips."""
from __future__ import annotations

import json

import pytest

from canal.collateral import (dump_json, dump_text, from_text, load_json, load_text, to_json,
                              to_text)
from cgra.errors import CollateralError


@pytest.mark.parametrize("width", [16, 1])
def test_json_and_text_round_trips_are_lossless(ic4, tmp_path, width):
    g = ic4.graphs[width]
    dump_json(g, tmp_path / "g.json")
    dump_text(g, tmp_path / "g.txt")
    gj, gt = load_json(tmp_path / "g.json"), load_text(tmp_path / "g.txt")
    assert gj == g and gt == g
    for h in (gj, gt):
        assert all(h.fanin[n] == g.fanin[n] for n in g.nodes)      # select order kept
    assert to_text(gt) == to_text(g)


def test_json_node_fields_and_delays(ic4):
    doc = json.loads(json.dumps(to_json(ic4.graphs[16])))
    nodes = {n["id"]: n for n in doc["nodes"]}
    sb = nodes["SB:16:1:1:EAST:0:OUT"]
    assert {k: sb[k] for k in ("kind", "x", "y", "width", "side", "track", "io")} == {
        "kind": "SB", "x": 1, "y": 1, "width": 16, "side": "EAST", "track": 0, "io": "SB_OUT"}
    assert sb["fanin"] == ["SB:16:1:1:NORTH:4:IN", "SB:16:1:1:SOUTH:3:IN",
                           "SB:16:1:1:WEST:0:IN", "PORT:16:1:1:data_out"]
    # pe switch-box hops N->E, S->E, W->E of the 16-bit table; core output 0 ps
    assert sb["delay_ps"] == [179.5, 148.5, 149.0, 0.0]
    port = nodes["PORT:16:1:1:data_in"]
    assert port["port"] == "data_in" and port["direction"] == "in"
    assert set(port["delay_ps"]) == {240.0}
    assert nodes["RMUX:16:1:1:EAST:0"]["delay_ps"] == [0.0, 230.0]
    assert nodes["SB:16:2:1:WEST:0:IN"]["fanin"] == ["RMUX:16:1:1:EAST:0"]
    assert doc["layout"] == ["IppI"] * 4
    tiles = {(t["x"], t["y"]): t for t in doc["tiles"]}
    assert tiles[(1, 1)]["core"] == "passthru" and tiles[(1, 1)]["core_delay_ps"] == 700.0
    assert tiles[(0, 0)]["timing_class"] == "io"
    # the IO class is missing from the switch-box and connection-box tables: recorded
    assert "switch_box_hop has no class 'io'; used 'pe'" in doc["timing_notes"]
    assert "connection_box has no class 'io'; used 'pe'" in doc["timing_notes"]


def test_text_format_blocks(ic2):
    text = to_text(ic2.graphs[16])
    lines = text.splitlines()
    assert lines[1] == "SWITCH 16 imran 5"
    assert "TILE 1 0 passthru p pe" in lines
    i = lines.index("  SB (0, 1, 1, 0, 1, 16)")           # SB_OUT NORTH track 0 of (1,1)
    assert lines[i + 1:i + 5] == ["    <- SB (0, 1, 1, 1, 0, 16) @ 151.0",
                                  "    <- SB (1, 1, 1, 2, 0, 16) @ 171.3",
                                  "    <- SB (0, 1, 1, 3, 0, 16) @ 153.3",
                                  "    <- PORT data_out (1, 1, 16) out @ 0.0"]


def test_malformed_dumps_raise_collateral_error(ic2, tmp_path):
    text = to_text(ic2.graphs[1]).replace("SB (0, 1, 1, 0, 1, 1)", "SB (0, 1, 1, 9, 1, 1)", 1)
    with pytest.raises(CollateralError, match=r"<text>:\d+: cannot parse"):
        from_text(text)
    doc = to_json(ic2.graphs[1])
    doc["schema"] = "other/0"
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(CollateralError, match="bad.json: schema 'other/0'"):
        load_json(tmp_path / "bad.json")
