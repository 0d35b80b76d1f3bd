"""Bitstream generation, the JSON report and the picture of the placed and routed design."""
from __future__ import annotations

import json
import pathlib
import re
import sys

# pytest puts tests/ on sys.path (root conftest), where tests/peak and tests/lake would shadow
# the real packages as namespace packages; the project root goes first (as in
# tests/peak/conftest.py; the shared fix is pythonpath = ["."] in the pytest options)
_ROOT = str(pathlib.Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import pytest  # noqa: E402

from canal.collateral import dump_json  # noqa: E402
from canal.config import route_bitstream  # noqa: E402
from canal.passes import InterconnectParams, build_uniform, io_on_edges  # noqa: E402
from cgra.config import ConfigField, decode_fields, pack_fields, split_address  # noqa: E402
from cgra.core import CoreSpec, PortSpec  # noqa: E402
from cgra.errors import CollateralError, ConfigError  # noqa: E402
from garnet.collateral import ConfigMap  # noqa: E402
from mapper.backend.bitstream import generate, parse_text  # noqa: E402
from mapper.collateral import load_fabric  # noqa: E402
from mapper.params import FlowParams  # noqa: E402
from mapper.closure import back_end  # noqa: E402
from mapper.netlist import Netlist  # noqa: E402
from mapper.backend.pack import stencil_netlist  # noqa: E402
from mapper.backend.pipeline import PipelineParams  # noqa: E402
from mapper.backend.place import PlaceParams  # noqa: E402
from mapper.backend.report import draw, report, save_report  # noqa: E402


def _no_rtl():
    raise AssertionError("PnR tests never build RTL")


PE_FIELDS = (ConfigField("inst", 20, 0), ConfigField("data0_reg_en", 1),
             ConfigField("data1_reg_en", 1), ConfigField("flag", 3, 5))
PE = CoreSpec("t_pe", "p", (PortSpec("data0", 16, "in"), PortSpec("data1", 16, "in"),
                            PortSpec("bit0", 1, "in"), PortSpec("res", 16, "out"),
                            PortSpec("res_p", 1, "out")), PE_FIELDS, _no_rtl,
              {"timing_class": "pe"})
MEM_FIELDS = (ConfigField("write_offset", 16), ConfigField("read_offset", 16),
              ConfigField("enable", 1))
MEM = CoreSpec("t_mem", "m", (PortSpec("data_in_0", 16, "in"), PortSpec("data_out_0", 16, "out")),
               MEM_FIELDS, _no_rtl, {"timing_class": "mem"})
IO = CoreSpec("t_io", "I", (PortSpec("f2io_16", 16, "in"), PortSpec("io2f_16", 16, "out"),
                            PortSpec("f2io_1", 1, "in"), PortSpec("io2f_1", 1, "out")),
              (), _no_rtl, {"timing_class": "io"})


def mem_encoder(inst, config, ports):
    return {"write_offset": ports["in0"]["schedule"]["offset"],
            "read_offset": ports["out0"]["schedule"]["offset"], "enable": 1}


@pytest.fixture(scope="module")
def collateral(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("b8")
    core = io_on_edges(lambda x, y: MEM if x % 4 == 3 else PE, IO, 8, 8)
    ic = build_uniform(InterconnectParams(8, 8, tracks=5), core)
    paths = []
    for w, g in ic.graphs.items():
        dump_json(g, tmp / f"routing_{w}.json")
        paths.append(tmp / f"routing_{w}.json")
    coll = load_fabric(paths)
    return ic, coll, coll.config_map


def _flow(collateral, seed=0, nl=None):
    _, coll, _ = collateral
    fp = FlowParams(place=PlaceParams(seed=seed),
                    pipeline=PipelineParams(latency={"p": 1}, target_period_ps=1600.0))
    return back_end(nl or stencil_netlist("gauss"), coll, fp, mem_encoder)


@pytest.fixture(scope="module")
def flow(collateral):
    return _flow(collateral)


def test_routes_match_canal_route_bitstream(collateral, flow):
    ic, _, _ = collateral
    ref = dict(route_bitstream(ic.graphs, flow.pipelined.routing.routes()))
    mine = {a: d for a, d in flow.bitstream.pairs() if split_address(a)[1] != 0}
    assert mine == ref


def test_core_words_decode_to_instance_config(collateral, flow):
    _, graphs, _ = collateral
    words = dict(flow.bitstream.pairs())
    for inst, pi in flow.pipelined.packed.instances.items():
        if pi.tag == "r":
            continue
        x, y = flow.placement.sites[inst]
        fields = graphs.tiles[(x, y)].config_fields
        regs = {r: words.get((r << 24) | (x << 8) | y, 0) for r in range(2)}
        vals = decode_fields(fields, regs)
        if pi.tag == "p":
            assert vals["inst"] == pi.config["inst"]
            assert vals["flag"] == 5                      # reset value of an unset field
            for port in ("data0", "data1"):
                assert vals[f"{port}_reg_en"] == int(port in pi.input_regs or
                                                     (inst, port) in flow.pipelined.pe_input_regs)
        elif pi.tag == "m":
            ports = pi.config["ports"]
            assert vals == {"write_offset": ports["in0"]["schedule"]["offset"],
                            "read_offset": ports["out0"]["schedule"]["offset"], "enable": 1}


def test_enabled_registers_select_their_reg(collateral, flow):
    _, _, cm = collateral
    words = dict(flow.bitstream.pairs())
    regs = flow.pipelined.enabled_regs + flow.pipelined.forced_regs
    assert regs
    for reg in regs:
        rmux = "RMUX" + reg[3:]
        x, y, locs = cm.nodes[rmux]
        (loc,) = locs
        addr = (loc.reg << 24) | (loc.feature << 16) | (x << 8) | y
        assert (words[addr] >> loc.lo) & ((1 << loc.width) - 1) == 1


def test_unused_tiles_have_no_entries(flow):
    used = {tuple(xy) for xy in flow.placement.sites.values()}
    for r in flow.pipelined.routing.nets.values():
        for n in r.nodes():
            _, _, x, y, *_ = n.split(":")
            used.add((int(x), int(y)))
    for a, _ in flow.bitstream.pairs():
        _, _, x, y = split_address(a)
        assert (x, y) in used


def test_text_and_json_files(flow, tmp_path):
    txt, js = flow.bitstream.save(tmp_path)
    lines = txt.read_text().splitlines()
    assert all(re.fullmatch(r"[0-9A-F]{8} [0-9A-F]{8}", ln) for ln in lines)
    assert parse_text(txt.read_text()) == flow.bitstream.pairs()
    assert [a for a, _ in flow.bitstream.pairs()] == sorted(a for a, _ in flow.bitstream.pairs())
    doc = json.loads(js.read_text())
    assert doc["schema"] == "mapper.bitstream/1" and doc["count"] == len(lines)
    pe_entry = next(e for e in doc["entries"] if "pe mul0 (core)" in e["configures"])
    assert pe_entry["fields"]["inst"] == 0x100 and pe_entry["feature"] == 0
    route_entry = next(e for e in doc["entries"] if e["configures"].startswith("net "))
    assert route_entry["feature"] > 0 and all(k.endswith("_sel") for k in route_entry["fields"])
    with pytest.raises(ConfigError, match="line 1"):
        parse_text("123 456\n")


def test_same_seed_same_bitstream(collateral, flow):
    again = _flow(collateral, seed=0)
    assert again.bitstream.to_text() == flow.bitstream.to_text()


def test_value_too_wide_names_the_instance(collateral):
    nl = Netlist("wide")
    nl.add_instance("a", "io_in", "I")
    nl.add_instance("pe", "pe", "p", {"inst": 1 << 20})
    nl.add_instance("b", "io_out", "I")
    nl.add_net(("a", "out"), [("pe", "data0")])
    nl.add_net(("pe", "res"), [("b", "in")])
    with pytest.raises(ConfigError, match=r"pe pe at tile \(\d+, \d+\) core config: .*inst"):
        _flow(collateral, nl=nl)


def test_config_map_file_errors(tmp_path):
    from garnet.collateral import read_config_map
    bad = tmp_path / "cm.json"
    bad.write_text(json.dumps({"schema": "garnet.config_map/1"}))
    with pytest.raises(CollateralError, match="no 'fields' list"):
        read_config_map(bad)
    bad.write_text(json.dumps({"schema": "garnet.config_map/1",
                               "fields": [{"node": "SB:16:0:0:NORTH:0:OUT", "x": 0}]}))
    with pytest.raises(CollateralError, match="malformed config-map row"):
        read_config_map(bad)


def test_missing_select_in_config_map_is_reported(collateral, flow):
    import dataclasses
    _, coll, cm = collateral
    partial = dataclasses.replace(coll, config_map=ConfigMap(
        {k: v for k, v in cm.nodes.items() if not k.startswith("RMUX")}))
    with pytest.raises(CollateralError, match="RMUX:16:.* no select field"):
        generate(flow.pipelined.packed, flow.placement, flow.pipelined.routing, partial,
                 mem_encoder)


def test_report_and_picture(collateral, flow, tmp_path):
    _, graphs, _ = collateral
    rep = save_report(flow, graphs, tmp_path / "report.json")
    assert json.loads((tmp_path / "report.json").read_text()) == rep
    assert rep["resources"]["used"] == {"I": 2, "r": 3, "m": 2, "p": 17}
    assert rep["resources"]["available"]["p"] == 42 and rep["resources"]["available"]["m"] == 14
    assert rep["wirelength_total"] == flow.routing.total_wirelength()
    assert rep["timing"]["period_ps"] <= 1600.0
    assert set(rep["stage_seconds"]) == {"pack", "place_route_pipeline", "bitstream"}
    assert [p["pass"] for p in rep["passes"]] == ["balance", "register insertion"]
    assert rep["passes"][-1]["period_ps"] == rep["timing"]["period_ps"]
    assert rep["placement_attempts"] == []
    assert rep["registers"]["compute_pipelining"] == len(flow.pipelined.forced_regs)
    assert rep == report(flow, graphs)
    lat = flow.pipelined.output_latency["io_out"]
    assert rep["outputs"] == {"io_out": {"extra_latency_cycles": lat,
                                         "first_valid_cycle": 2 * 64 + 2 + lat}}
    png = draw(flow, graphs, tmp_path / "pnr.png")
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_lake_encoder_maps_memory_mapping_port_names():
    from lake.config import configure

    from mapper.backend.bitstream import lake_mem_encoder

    prog = {"dimensionality": 2, "extents": [64, 64], "address": {"strides": [1, 0], "offset": 0},
            "schedule": {"strides": [1, 64], "offset": 3}}
    rd = {**prog, "schedule": {"strides": [1, 64], "offset": 66}}
    got = lake_mem_encoder("mem0", {"preset": "dualport_2048x16"}, {"in0": prog, "out0": rd})
    assert got == configure("dualport_2048x16", {"data_in_0": prog, "data_out_0": rd})
    assert got["in0_enable"] == 1
    with pytest.raises(ConfigError, match="MEM mem0: .*preset 'nope'"):
        lake_mem_encoder("mem0", {"preset": "nope"}, {"in0": prog})
    with pytest.raises(ConfigError, match="MEM mem0: .*port out3"):
        lake_mem_encoder("mem0", {"preset": "dualport_2048x16"}, {"out3": rd})
    with pytest.raises(ConfigError, match="MEM mem0: .*no 'preset'"):
        lake_mem_encoder("mem0", {}, {"in0": prog})


def test_flow_on_the_small_garnet_collateral(tmp_path):
    """The back end on the collateral of configs/small.toml (graphs and config map written as
    `cgra rtl` writes them, without RTL): real PE, Lake MEM and IO cores."""
    from canal.collateral import to_json
    from garnet.array import build_interconnect
    from garnet.params import load_toml

    from mapper.backend.route import check_routing

    params = load_toml("configs/small.toml")
    ic = build_interconnect(params)
    (tmp_path / "routing").mkdir()
    for w, g in ic.graphs.items():
        (tmp_path / "routing" / f"graph_{w}.json").write_text(json.dumps(to_json(g)))
    graphs = load_fabric(sorted((tmp_path / "routing").glob("graph_*.json")))
    nl = stencil_netlist("gauss", mem_preset=params.mem_preset)
    fr = back_end(nl, graphs, FlowParams(pipeline=PipelineParams(target_period_ps=1600.0)))
    check_routing(fr.pipelined.routing, graphs)
    assert fr.pipelined.timing.period_ps <= 1600.0
    words = dict(fr.bitstream.pairs())
    # every MEM tile is configured with the Lake encoding of its shifted port programs
    from lake.config import configure
    for inst, pi in fr.pipelined.packed.instances.items():
        if pi.tag != "m":
            continue
        x, y = fr.placement.sites[inst]
        fields = graphs.tiles[(x, y)].config_fields
        nregs = max(s.reg for s in pack_fields(fields)) + 1
        vals = decode_fields(fields, {r: words.get((r << 24) | (x << 8) | y, 0)
                                      for r in range(nregs)})
        ports = pi.config["ports"]
        assert vals == configure(params.mem_preset, {"data_in_0": ports["in0"],
                                                     "data_out_0": ports["out0"]})
