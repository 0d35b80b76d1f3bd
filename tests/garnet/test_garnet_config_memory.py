"""The MEM tiles' config memory (lookup-table contents) in the collateral of the 8x8 design:
config_map.json ``tiles``, the routing graphs' tile records, and the MEM tile Verilog."""
from __future__ import annotations

import json

from canal.collateral import load_json, load_text
from canal.config import config_memory_writes
from cgra.config import config_address
from cgra.core import ConfigMemory
from garnet.collateral import read_config_map


def test_config_map_and_routing_graphs_record_the_config_memory(small_design):
    _, d = small_design
    doc = json.loads((d / "config_map.json").read_text())
    graphs = {w: load_json(d / "routing" / f"graph_{w}.json") for w in (16, 1)}
    tiles = graphs[16].tiles
    mem_xy = sorted(xy for xy, t in tiles.items() if t.tag == "m")
    assert mem_xy and all(x % 4 == 3 for x, _ in mem_xy)           # every 4th column
    by_xy = {(t["x"], t["y"]): t for t in doc["tiles"]}
    for xy in mem_xy:
        entry = by_xy[xy]
        names = [f["name"] for f in entry["features"]]
        base = names.index("mem0")
        assert base == 6 and names[:6] == ["core", "sb16", "cb_data_in_0",
                                           "cb_chain_data_in_0", "sb1", "cb_chain_valid_in_0"]
        # the memory words, then the power-gate feature last (one register)
        assert names[base:] == [f"mem{i}" for i in range(8)] + ["pg"]
        assert [f["registers"] for f in entry["features"][base:]] == [256] * 8 + [1]
        assert entry["config_memory"] == {"feature": 6, "words": 2048, "width": 16}
        for g in graphs.values():
            assert g.tiles[xy].config_memory == ConfigMemory(2048, 16, 6)
    # PE and IO tiles have none
    assert all("config_memory" not in t for xy, t in by_xy.items() if xy not in mem_xy)
    assert all(t.config_memory is None for xy, t in tiles.items() if xy not in mem_xy)
    # the text dump and garnet's config-map reader agree
    assert load_text(d / "routing" / "graph_16.txt").tiles[mem_xy[0]].config_memory == \
        ConfigMemory(2048, 16, 6)
    cmap = read_config_map(d / "config_map.json")
    assert cmap.config_memories == {xy: ConfigMemory(2048, 16, 6) for xy in mem_xy}
    # word 1000 of the first MEM tile: register 1000 % 256 = 232 of feature 6 + 3
    x, y = mem_xy[0]
    assert config_memory_writes(x, y, tiles[(x, y)].config_memory, [(1000, 0xBEEF)]) == [
        (config_address(232, 9, x, y), 0xBEEF)]


def test_mem_tile_verilog_has_the_config_memory_port(small_design):
    _, d = small_design
    text = "\n".join(p.read_text() for p in (d / "rtl").glob("lake_dualport_2048x16*.v"))
    for port in ("config_mem_addr", "config_mem_data", "config_mem_write",
                 "config_mem_read", "config_mem_rdata", "config_lut_mode"):
        assert port in text, port
    assert "[10:0]" in text and "config_mem_addr" in text
