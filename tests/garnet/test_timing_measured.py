"""Issue 40: the timing model measured from the generated tiles (yosys + OpenSTA on the
project's liberty), not copied from a table.

The measured model must follow the architecture: more tracks -> slower connection boxes,
a wider datapath -> a slower PE core, a MEM tile crossing slower than a PE tile crossing
(Cascade's table shows it); the path enumeration must be exactly the classes of the routing
graphs; a no-change rebuild measures nothing; the published table stays an option.

The measured model is the default (``timing = "measured"``, named here anyway; the
published table is ``timing = "cascade-table"``). Designs are 4x4 (one IO row, MEM every
3rd column) and RTL-only; the measurements land in the shared cache ``build/timing``
(keyed by tile RTL), so a warm run re-times nothing, and two processes that need one tile
measure it once."""
from __future__ import annotations

import json
import pathlib
import re
import shutil
import threading
import time

import pytest

from canal.rtl import tile_shapes
from canal.timing import TimingModel
from canal.timing_paths import tile_path_classes
from cgra.errors import CollateralError
from garnet.array import build_interconnect
from garnet.build import generate
from garnet.params import GarnetParams
from garnet.sta import liberty, measure
from garnet.sta.verilog import flatten_packed, hoist_automatic

ROOT = pathlib.Path(__file__).resolve().parents[2]
RULES = ROOT / "build" / "rules"
BASE = dict(width=4, height=4, mem_ratio=3)


def _build(tmp_path_factory, name: str, **kw) -> dict:
    out = tmp_path_factory.mktemp("timing") / name
    generate(GarnetParams(**{**BASE, "timing": "measured", **kw}), out, rules=False,
             rules_dir=RULES)
    return json.loads((out / "timing.json").read_text())


@pytest.fixture(scope="module")
def t5(tmp_path_factory):
    return _build(tmp_path_factory, "t5", tracks=5)


@pytest.fixture(scope="module")
def t3(tmp_path_factory):
    return _build(tmp_path_factory, "t3", tracks=3)


@pytest.fixture(scope="module")
def t8(tmp_path_factory):
    return _build(tmp_path_factory, "t8", tracks=8)


def test_timing_json_records_tool_liberty_and_corner(t5):
    meas = t5["table"]["_measured"]
    assert t5["source"] == "measured"
    assert meas["tool"].startswith("OpenSTA ")
    assert meas["synthesis"].startswith("Yosys ")
    assert meas["liberty"] == liberty.NAME == "cgra_le65"
    assert meas["corner"] == {"name": "typical", "process": 1.0, "voltage_v": 1.0,
                              "temperature_c": 25.0}
    assert "Weste & Harris" in meas["liberty_source"]
    assert set(t["tclass"] for t in meas["tiles"].values()) == {"pe", "mem", "io"}
    # every class the graphs use has a measured delay; no published figure is in the table
    assert "pe_op_ns" not in t5["table"]
    assert t5["classes"]["core:mem"] == t5["table"]["core"]["mem"]
    assert t5["aliases"] == {}


def test_more_tracks_make_the_connection_box_slower(t3, t5, t8):
    cb = [t["classes"]["cb:pe"] for t in (t3, t5, t8)]
    assert cb[0] < cb[1] < cb[2], cb
    cbm = [t["classes"]["cb:mem"] for t in (t3, t5, t8)]
    assert cbm[0] < cbm[1] < cbm[2], cbm


def test_a_mem_tile_crossing_is_slower_than_a_pe_tile_crossing(t5):
    hops = t5["table"]["switch_box_hop"]
    for w in ("16", "1"):
        for pair in ("N->S", "S->N", "E->W", "W->E"):
            assert hops["mem"][w][pair] > hops["pe"][w][pair], (w, pair)
    tiles = t5["table"]["_measured"]["tiles"]
    side = {t["tclass"]: t["side_um"] for t in tiles.values()}
    assert side["mem"] > side["pe"]           # the reason: a larger footprint, a longer wire


#: a 32-bit design's tiles measured (~55 s): `make bench` runs it, `make test` does not; the
#: measurement follows an edit in `make test` through the tracks (below) and the interconnect
@pytest.mark.bench
def test_a_wider_datapath_makes_the_pe_core_slower(tmp_path_factory, t5):
    t32 = _build(tmp_path_factory, "w32", tracks=5, data_width=32, widths=[32, 1],
                 pe="peak.examples.cgra_pe:make_pe(32)", mem_preset="dualport_1024x32")
    assert t32["classes"]["core:pe"] > t5["classes"]["core:pe"]
    assert "32" in t32["table"]["switch_box_hop"]["pe"]     # 32-bit hops measured, no alias
    assert not any("width_aliases" in n for n in t32["notes"])


def test_path_enumeration_is_exactly_the_graph_classes():
    """Cascade F3: the enumerated classes equal the distinct (tile class, width, in side, out
    side) transitions, connection boxes and registers of the routing graphs; none missing,
    none extra."""
    ic = build_interconnect(GarnetParams(**BASE, tracks=4, topology="wilton"))
    tm = TimingModel.load()
    from_graphs = set()
    for g in ic.graphs.values():
        for (s, d) in g.delay:
            k = tm.edge_class(g, s, d)
            if k.startswith(("sb:", "cb:")) or k == "reg":
                from_graphs.add(k)
    enumerated = set()
    for xy, shape in tile_shapes(ic).items():
        if shape.core is not None:
            enumerated |= {pc.key for pc in tile_path_classes(shape, ic.tiles[xy].timing_class)
                           if not pc.key.startswith("core_out")}
    assert enumerated == from_graphs
    assert len([k for k in enumerated if k.startswith("sb:pe:16:")]) == 12


def test_the_graphs_carry_the_measured_delays(tmp_path_factory, t5):
    """The routing graphs are re-timed from the measurement: every connection-box edge of a
    PE tile, every switch-box hop and every register edge carries the measured class delay,
    and the tile records carry the measured core delay."""
    out = tmp_path_factory.mktemp("timing") / "t5b"
    generate(GarnetParams(**BASE, tracks=5, timing="measured"), out, rules=False,
             rules_dir=RULES)
    doc = json.loads((out / "routing" / "graph_16.json").read_text())
    tm = TimingModel.read(out / "timing.json")
    assert tm.classes == t5["classes"]
    tclass = {(t["x"], t["y"]): t["timing_class"] for t in doc["tiles"]}
    seen = set()
    for n in doc["nodes"]:
        if n["kind"] == "PORT" and n["direction"] == "in" and tclass[(n["x"], n["y"])] == "pe":
            assert set(n["delay_ps"]) == {tm.classes["cb:pe"]}
            seen.add("cb")
        if n["kind"] == "RMUX":
            k = next(i for i, f in enumerate(n["fanin"]) if f.startswith("REG:"))
            assert n["delay_ps"][k] == tm.classes["reg"]
            seen.add("reg")
    assert seen == {"cb", "reg"}
    assert {t["core_delay_ps"] for t in doc["tiles"] if t["timing_class"] == "mem"} \
        == {tm.classes["core:mem"]}


def test_a_rebuild_in_another_directory_measures_nothing(tmp_path_factory, t5, monkeypatch):
    """The measurement is cached by tile RTL: another design with the same tiles runs no
    yosys (a synthesis would raise here) and writes the same timing.json."""
    def no_synthesis(*a, **k):
        raise AssertionError("a tile was synthesised again")
    monkeypatch.setattr(measure, "_synthesise", no_synthesis)
    t5b = _build(tmp_path_factory, "again", tracks=5)
    assert t5b == t5


def test_the_published_table_stays_an_option(tmp_path_factory):
    doc = _build(tmp_path_factory, "table", tracks=5, timing="cascade-table")
    assert doc["source"] == "default"
    assert doc["classes"]["cb:pe"] == 240.0 and doc["classes"]["core:mem"] == 1000.0
    assert "_measured" not in doc["table"]


def test_missing_opensta_is_a_typed_error(monkeypatch):
    monkeypatch.setattr(measure.shutil, "which", lambda exe: None if exe == "sta" else exe)
    with pytest.raises(CollateralError, match=r"needs `sta` \(Debian package opensta\)"):
        measure.tool_versions()


def test_the_liberty_follows_the_logical_effort_model():
    """NAND2_X1 into 4 NAND2_X1 inputs (h = 4 * (4/3) / (4/3) = 4): d = tau (p + g h) =
    3 ps * (2 + 4/3 * 4) = 22 ps, from the formula the liberty's tables are sampled from."""
    load = 4 * (4 / 3) * liberty.C_UNIT_FF
    assert liberty.gate_delay_ps(4 / 3, 2.0, 1, load, 0.0) == pytest.approx(3 * (2 + 16 / 3))
    text = liberty.liberty_text(((2048, 16),))
    assert re.search(r"cell \(NAND2_X4\)", text) and "SRAM2048x16" in text
    assert liberty.sram_access_ps(2048) == pytest.approx(15 * (6 + 1.5 * 11))


def test_a_tile_two_processes_need_is_measured_once(tmp_path, monkeypatch):
    """Two measurements of one tile at once (two `cgra rtl` runs or test workers sharing
    build/timing): the second waits on the entry's lock and reads the first's result
    instead of synthesising the tile again; a third finds it cached without the lock."""
    calls = []

    def slow_measure(job, mods, key, lib_text, macros, cache=None):
        calls.append(job.module)
        time.sleep(0.5)
        return {"schema": measure.SCHEMA, "module": job.module, "tclass": job.tclass,
                "key": key, "area_um2": 1.0, "side_um": 1.0, "classes": {}, "core_ps": 7.0,
                "core_out_ps": 0.0, "pe_op_ps": {}, "seconds": 0.5}

    monkeypatch.setattr(measure, "_measure_tile", slow_measure)
    job = measure.TileJob("Tile_T", "pe", (), (), (), 1, 1)
    mods = {"Tile_T": "module Tile_T (input CLK);\nendmodule\n"}
    out: list[dict] = []
    threads = [threading.Thread(target=lambda: out.append(measure.measure_tile(
        job, mods, tmp_path))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == ["Tile_T"]
    assert sorted(r["cached"] for r in out) == [False, True]
    assert out[0]["core_ps"] == out[1]["core_ps"] == 7.0
    assert measure.measure_tile(job, mods, tmp_path)["cached"] is True and calls == ["Tile_T"]
    assert [p.name.startswith("Tile_T-") for p in tmp_path.glob("*.json")] == [True]


def test_a_tile_without_rules_reuses_its_measurement_with_rules(tmp_path, monkeypatch):
    """The same tile in a design without rules (no per-op figures to take) is the entry
    measured with rules, minus its per-op figures, under its own key: nothing synthesised
    again; a tile with other rules is measured."""
    calls = []

    def fake(job, mods, key, lib_text, macros, cache=None):
        calls.append(job.ops)
        return {"schema": measure.SCHEMA, "module": job.module, "tclass": job.tclass,
                "key": key, "area_um2": 2.0, "side_um": 1.4, "classes": {"reg": 9.0},
                "core_ps": 7.0, "core_out_ps": 1.0,
                "pe_op_ps": {op: 5.0 for op, _, _ in job.ops}, "seconds": 0.1}

    monkeypatch.setattr(measure, "_measure_tile", fake)
    mods = {"Tile_T": "module Tile_T (input CLK);\nendmodule\n"}
    ops = (("coreir.add", 0x12, 0), ("coreir.mul", 0x34, 0))
    with_rules = measure.TileJob("Tile_T", "pe", (), (), (), 1, 1, ops)
    first = measure.measure_tile(with_rules, mods, tmp_path)
    assert first["cached"] is False and first["pe_op_ps"] == {"coreir.add": 5.0,
                                                              "coreir.mul": 5.0}
    bare = measure.measure_tile(measure.TileJob("Tile_T", "pe", (), (), (), 1, 1), mods,
                                tmp_path)
    assert bare["cached"] is True and bare["pe_op_ps"] == {} and len(calls) == 1
    assert (bare["classes"], bare["core_ps"], bare["area_um2"]) == ({"reg": 9.0}, 7.0, 2.0)
    assert bare["key"] != first["key"] and bare["base"] == first["base"]
    other = measure.TileJob("Tile_T", "pe", (), (), (), 1, 1, ops[:1])
    assert measure.measure_tile(other, mods, tmp_path)["cached"] is False and len(calls) == 2


def test_a_2d_packed_automatic_local_is_hoisted_for_yosys():
    """CIRCT writes the dataflow PE's muxes of vectors as 2-D packed ``automatic`` locals;
    yosys 0.23 parses neither: they become module-level regs, flattened to one vector, the
    initialisation left in place (configs/small_df.toml's PE is synthesised this way)."""
    text = ("module M (input clk, input [1:0] s);\n  always @(posedge clk) begin\n"
            "    automatic logic [1:0][15:0] g;\n"
            "    automatic logic [1:0]       h = {1'h1, 1'h0};\n"
            "    g = {16'h1, 16'h2};\n  end\nendmodule\n")
    out = flatten_packed(hoist_automatic(text))
    assert "automatic" not in out
    assert "  reg [31:0] g;" in out and "  reg [1:0] h;" in out
    assert "    h ={1'h1, 1'h0};" in out and "    g = {16'h1, 16'h2};" in out


def test_an_interconnect_edit_synthesises_no_core_again(tmp_path_factory, t5, monkeypatch):
    """Each core is synthesised alone, once, under <timing cache>/core/: with the cores of
    t5 cached (copied into a scratch cache, so the tiles are cold), another track count
    synthesises only its three new tiles, each with its core as a black box (the cores'
    own STA runs again only where the load on their outputs changed)."""
    scratch = tmp_path_factory.mktemp("cores")
    shutil.copytree(ROOT / "build" / "timing" / measure.CORE_DIR,
                    scratch / "timing" / measure.CORE_DIR)
    cores = scratch / "timing" / measure.CORE_DIR
    netlists = {p.name for p in cores.glob("*.json") if "-sta-" not in p.name}
    calls = []
    real = measure._synthesise

    def spy(mods, job, lib, work, macros, top=None, black=()):
        calls.append((top or job.module, black))
        return real(mods, job, lib, work, macros, top=top, black=black)

    monkeypatch.setattr(measure, "_synthesise", spy)
    out = scratch / "t4"
    generate(GarnetParams(**{**BASE, "timing": "measured", "tracks": 4}), out, rules=False,
             rules_dir=scratch / "rules")
    t4 = json.loads((out / "timing.json").read_text())
    tiles4, tiles5 = (t["table"]["_measured"]["tiles"] for t in (t4, t5))
    assert set(tiles4).isdisjoint(tiles5)
    assert sorted(calls) == sorted((m, (_core_of(m),)) for m in tiles4)
    assert {p.name for p in cores.glob("*.json") if "-sta-" not in p.name} == netlists


def _core_of(tile: str) -> str:
    """The core module a 4x4 tile instantiates (``Tile_<core>_<hash>``)."""
    return tile[len("Tile_"):].rsplit("_", 1)[0]
