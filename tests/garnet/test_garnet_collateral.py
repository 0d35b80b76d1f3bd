"""The collateral directory of the 8x8 design: files, formats, consistency with the graphs."""
from __future__ import annotations

import json
import re

import pytest

from canal.collateral import load_json, load_text
from canal.timing import TimingModel
from cgra.config import config_address
from garnet.params import from_dict
from garnet.collateral import read_mem, read_pe
from lake.collateral import MemInfo, collateral
from mapper.mapping.memory import MemSpec
from peak.collateral import pe_json
from peak.examples.cgra_pe import PE


def test_design_json(small_design):
    result, d = small_design
    doc = json.loads((d / "design.json").read_text())
    assert doc["schema"] == "garnet.design/2"
    # the manifest lists every file below design.json with the sha256 of its bytes
    from garnet.collateral import file_sha256, managed_files, verify_files
    assert sorted(doc["files"]) == managed_files(d)
    assert {"timing.json", "pe.json", "mem.json", "config_map.json", "routing/graph_16.json",
            "routing/graph_1.json", f"rtl/{result.top}.v"} <= set(doc["files"])
    assert doc["files"]["timing.json"] == file_sha256(d / "timing.json")
    verify_files(d, doc)
    params = from_dict(doc["params"])
    assert (params.width, params.height, params.tracks, params.name) == (8, 8, 5, "small")
    from peak import spec_hash
    from peak.examples.cgra_pe import PE
    assert doc["spec_hashes"]["pe"] == spec_hash(PE)
    from lake.collateral import collateral as lake_collateral
    assert doc["spec_hashes"]["mem"] == lake_collateral("dualport_2048x16")["spec_hash"]
    mem = json.loads((d / "mem.json").read_text())
    assert mem["lake"]["spec_hash"] == doc["spec_hashes"]["mem"]      # one Lake spec hash
    assert doc["array"]["tiles"] == {"IO": 8, "MEM": 14, "PE": 42}
    assert doc["top"] == result.top and doc["top"].startswith("Garnet_8x8_")
    assert doc["rules"]["source"] == "skipped"
    ports = {p["name"]: (p["direction"], p["width"]) for p in doc["ports"]}
    assert ports["config_addr"] == ("input", 32)
    assert ports["read_data"] == ("output", 32)
    assert ports["glb2io_16_X03_Y00"] == ("input", 16)
    assert ports["io2glb_1_X07_Y00"] == ("output", 1)
    assert len(ports) == 9 + 8 * 4


def test_rtl_one_file_per_module(small_design):
    result, d = small_design
    rtl = d / "rtl"
    files = (rtl / "filelist.f").read_text().split()
    assert files[-1] == f"{result.top}.v"
    assert sorted(files) == sorted(p.name for p in rtl.glob("*.v"))
    for f in files:
        text = (rtl / f).read_text()
        names = re.findall(r"^module\s+(\w+)", text, re.M)
        assert names == [f[:-2]]
        assert text.rstrip().endswith("endmodule")
    tiles = [f for f in files if f.startswith("Tile_")]
    # each distinct tile (PE, MEM, IO) generated once
    assert len(tiles) == 3
    assert sum(t.startswith("Tile_PECore_PE_") for t in tiles) == 1
    top = (rtl / f"{result.top}.v").read_text()
    assert len(re.findall(r"^\s*Tile_\w+ Tile_X[0-9A-F]{2}_Y[0-9A-F]{2} \(", top, re.M)) == 64


def test_flush_spine_registers(small_design):
    result, d = small_design
    top = (d / "rtl" / f"{result.top}.v").read_text()
    # flush_interval 4 on 8 rows: one spine register per column (rows 4..7 see flush 1 late)
    regs = sorted(set(re.findall(r"\bflush_X([0-9A-F]{2})_S(\d+)\b", top)))
    assert regs == [(f"{x:02X}", "1") for x in range(8)]


def test_routing_graphs_round_trip(small_design):
    result, d = small_design
    ic = result.interconnect
    for w in (16, 1):
        assert load_json(d / "routing" / f"graph_{w}.json") == ic.graphs[w]
        assert load_text(d / "routing" / f"graph_{w}.txt") == ic.graphs[w]
        assert ic.graphs[w].params["tracks"] == 5
    rows = (d / "routing" / "layout.txt").read_text().split()
    assert rows == ["IIIIIIII"] + ["pppmpppm"] * 7
    lay = json.loads((d / "routing" / "layout.json").read_text())
    assert lay["rows"] == rows and set(lay["tags"]) == {"p", "m", "I", "i"}
    assert lay["schema"] == "garnet.layout/1"


def test_timing_json_is_measured_by_default(small_design):
    """timing.json of configs/small.toml as shipped (no ``timing`` field) is measured from
    the generated tiles (issue 40 item 3): it names OpenSTA, the liberty and its corner, the
    late derate and every distinct tile, and the routing graphs' delays are its figures."""
    result, d = small_design
    tm = TimingModel.read(d / "timing.json")
    assert tm.source == "measured" and tm.describe().startswith("measured (OpenSTA ")
    meas = tm.table["_measured"]
    assert (meas["liberty"], meas["corner"]["name"], meas["derate_late"]) == \
        ("cgra_le65", "typical", 1.01)
    assert meas["tool"].startswith("OpenSTA ") and meas["synthesis"].startswith("Yosys ")
    assert sorted(t.split("_")[1] for t in meas["tiles"]) == ["PECore", "io", "lake"]
    # a bypassable side (SOUTH) passes the register mux: slower than a hop into a side
    # whose register every route takes (NORTH), both measured, neither the table's 184.89
    hops = tm.table["switch_box_hop"]["pe"]["16"]
    assert hops["N->S"] > hops["S->N"] > 0 and 184.89 not in hops.values()
    g = load_json(d / "routing" / "graph_16.json")
    assert g.delay[("SB:16:1:1:NORTH:0:IN", "SB:16:1:1:SOUTH:0:OUT")] == \
        tm.sb_hop("pe", 16, "NORTH", "SOUTH") == hops["N->S"]


def test_config_map_covers_every_field(small_design):
    result, d = small_design
    cmap = json.loads((d / "config_map.json").read_text())
    rows = cmap["fields"]
    expected = sum(len(f.slices) for tc in result.interconnect.configs.values()
                   for f in tc.features)
    assert len(rows) == expected
    inst = [r for r in rows if (r["x"], r["y"], r["field"]) == (0, 1, "inst")]
    assert [(r["reg"], r["lo"], r["width"], r["field_lo"]) for r in inst] == \
        [(0, 0, 32, 0), (1, 0, 30, 32)]
    assert inst[1]["addr"] == config_address(1, 0, 0, 1)
    assert inst[0]["tag"] == "p"
    # no two slices overlap inside one register
    seen: dict[int, int] = {}
    for r in rows:
        mask = ((1 << r["width"]) - 1) << r["lo"]
        assert seen.get(r["addr"], 0) & mask == 0
        seen[r["addr"]] = seen.get(r["addr"], 0) | mask
    mem_rows = [r for r in rows if (r["x"], r["y"]) == (3, 1) and r["feature"] == 0]
    assert {r["field"] for r in mem_rows} == {f["name"] for f in json.loads(
        (d / "mem.json").read_text())["lake"]["config_fields"]}


def test_pe_and_mem_json(small_design):
    _, d = small_design
    doc = json.loads((d / "pe.json").read_text())
    assert sorted(doc) == ["peak", "schema", "tile"]       # PEak's document, then the tile's
    assert doc["peak"] == json.loads(json.dumps(pe_json(PE)))   # as PEak wrote it
    pe, tile = read_pe(d / "pe.json", "regenerate")
    assert pe.spec == "peak.examples.cgra_pe:PE" and pe.instruction_width == 62
    assert [f.name for f in pe.fields][:3] == ["alu", "signed", "cond"]
    assert (tile.tag, tile.config_registers, tile.latency_cycles) == ("p", 2, 0)
    assert {c.field for c in tile.config_slices} == {"inst"}
    doc = json.loads((d / "mem.json").read_text())
    assert doc["lake"] == collateral("dualport_2048x16")     # Lake's document, unchanged
    mem, mtile = read_mem(d / "mem.json", "regenerate")
    assert mem == MemInfo.of_preset("dualport_2048x16")
    assert (mem.preset, mem.capacity_words, len(mem.in_ports), len(mem.out_ports)) == \
        ("dualport_2048x16", 2048, 1, 1)
    assert (mtile.tag, mtile.module) == ("m", mem.module)
    assert {n for n, _d, _w in mtile.ports} >= {"data_in_0", "data_out_0"}
    spec = MemSpec.from_info(mem)
    assert (spec.capacity, spec.read_latency, spec.max_dimensionality, spec.word_width) == \
        (2048, 1, 6, 16)
    pub = MemSpec.from_info(MemInfo.of_preset("pub_512x64"))
    # the word is the port's 16 bits, not Lake's 64-bit wide word
    assert (pub.capacity, pub.word_width, pub.fetch_width, pub.min_delay) == (2048, 16, 4, 7)


@pytest.mark.parametrize("stage", ["Verilog (CIRCT)", "collateral"])
def test_interrupted_run_leaves_previous_design(tmp_path, stage):
    from garnet.build import generate
    from garnet.params import GarnetParams

    out = tmp_path / "tiny"

    def interrupt(msg: str) -> None:
        if msg == stage:
            raise KeyboardInterrupt

    p = GarnetParams(name="tiny", width=4, height=3, tracks=2)
    with pytest.raises(KeyboardInterrupt):
        generate(p, out, rules=False, step=interrupt)
    assert list(tmp_path.iterdir()) == []
    generate(p, out, rules=False)
    before = (out / "design.json").read_text()
    p3 = GarnetParams(name="tiny", width=4, height=3, tracks=3)
    with pytest.raises(KeyboardInterrupt):
        generate(p3, out, rules=False, step=interrupt)
    assert [x.name for x in tmp_path.iterdir()] == ["tiny"]
    assert (out / "design.json").read_text() == before


def test_mandatory_registers_break_every_cycle(small_design):
    result, d = small_design
    doc = json.loads((d / "design.json").read_text())
    assert doc["combinational_cycle"] is None
    g = result.interconnect.graphs[16]
    assert g.fanin["RMUX:16:2:3:NORTH:1"] == ["REG:16:2:3:NORTH:1"]
    assert g.fanin["RMUX:16:2:3:EAST:0"] == ["REG:16:2:3:EAST:0"]
    assert g.fanin["RMUX:16:2:3:SOUTH:4"] == ["SB:16:2:3:SOUTH:4:OUT", "REG:16:2:3:SOUTH:4"]
    # a mandatory register has no select field; a bypassable one has a 1-bit field
    fields = {r["node"] for r in json.loads((d / "config_map.json").read_text())["fields"]
              if r["node"]}
    assert "RMUX:16:2:3:SOUTH:4" in fields and "RMUX:16:2:3:NORTH:1" not in fields


def test_all_bypassable_registers_make_a_cycle():
    from garnet.array import build_interconnect, combinational_cycle
    from garnet.params import GarnetParams

    sides = ["NORTH", "SOUTH", "EAST", "WEST"]
    loops = build_interconnect(GarnetParams(width=3, height=3, tracks=2,
                                            register_bypass_sides=sides))
    cyc = combinational_cycle(loops)
    assert cyc is not None and len(cyc) >= 2
    ok = build_interconnect(GarnetParams(width=3, height=3, tracks=2,
                                         register_bypass_sides=["NORTH", "WEST"]))
    assert combinational_cycle(ok) is None
    one = build_interconnect(GarnetParams(width=3, height=3, tracks=2,
                                          register_bypass_sides=["NORTH", "SOUTH", "WEST"]))
    assert combinational_cycle(one) is not None       # vertical cycles remain


def test_config_map_json_equals_the_document(tmp_path, odd_interconnect, extra_sb_edge):
    """The templated config_map.json text is the compact dump of the document built row by
    row: on a 6x5 array with the odd settings (wilton, 4 tracks, IO north and south, MEM
    tiles with a config memory, bypass on two sides) and with one irregular tile (an extra
    switch-box edge: a different template)."""
    from dataclasses import replace

    from canal.config import _general_tile_configs, config_map_rows, tile_configs
    from garnet.collateral import (config_map_json, config_map_tiles_doc, write_config_map,
                                   write_json)

    ic = odd_interconnect
    graphs = {w: g.copy() for w, g in ic.graphs.items()}
    extra_sb_edge(graphs[16], "SB:16:2:2:NORTH:1:OUT")
    cases = [ic.configs, tile_configs(graphs), _general_tile_configs(graphs)]
    assert any(tc.config_memory is not None for tc in ic.configs.values())
    twin = next(xy for xy, t in ic.tiles.items()
                if xy != (2, 2) and t == replace(ic.tiles[(2, 2)], x=xy[0], y=xy[1]))
    assert ic.configs[twin].feature("sb16").fields == ic.configs[(2, 2)].feature("sb16").fields
    assert cases[1][twin].feature("sb16").fields != cases[1][(2, 2)].feature("sb16").fields
    for configs in cases:
        doc = config_map_tiles_doc(ic.tiles, configs, config_map_rows(configs))
        text = config_map_json(ic.tiles, configs)
        assert text == json.dumps(doc, separators=(",", ":"))
        assert json.loads(text) == doc
    want = write_json(tmp_path / "a.json", doc, compact=True).read_bytes()
    assert write_config_map(tmp_path / "b" / "c.json", ic.tiles, configs).read_bytes() == want
