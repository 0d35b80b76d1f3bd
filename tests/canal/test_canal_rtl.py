"""RTL generation and the structural (isomorphism) check, on the magma circuit."""
from __future__ import annotations

import pytest

from canal.check import RTLMismatchError, check_rtl, extract_tile
from canal.rtl import array_circuit, mux_circuit
from cgra.errors import SpecError


def test_array_rtl_is_isomorphic_to_graph(ic4):
    arr = array_circuit(ic4)
    report = check_rtl(ic4, arr)
    assert report.nodes == sum(len(g.nodes) for g in ic4.graphs.values()) == 2 * 1312
    assert report.edges == sum(g.num_edges() for g in ic4.graphs.values()) == 2 * 2800
    tiles = [i for i in arr.instances if i.name.startswith("Tile_X")]
    assert len(tiles) == 16
    # each distinct tile generated once: one IO tile module, one pass-through tile module
    assert sorted({type(i).name.rsplit("_", 1)[0] for i in tiles}) == ["Tile_io_core",
                                                                      "Tile_passthru"]
    assert len({type(i).name for i in tiles}) == 2
    assert array_circuit(ic4) is arr                       # cached per process


def test_tile_interface(ic4):
    arr = array_circuit(ic4)
    tile = type(next(i for i in arr.instances if i.name == "Tile_X01_Y01"))
    ports = tile.interface.ports
    widths = {n: len(ports[n]) for n in ("config_addr", "config_data", "tile_id", "read_data")}
    assert widths == {"config_addr": 32, "config_data": 32, "tile_id": 16, "read_data": 32}
    assert {"CLK", "RESET", "clk_en", "flush", "config_write", "config_read"} <= set(ports)
    assert len(ports["SB_T3_WEST_SB_IN_B16"]) == 16
    fanin, outs = extract_tile(tile)
    assert outs["SB_T2_EAST_SB_OUT_B16"] == "RMUX_T2_EAST_B16"
    assert fanin["RMUX_T2_EAST_B16"] == ["SB_T2_EAST_SB_OUT_B16", "REG_T2_EAST_B16"]
    assert fanin["PORT_data_in"][:2] == ["SB_T0_NORTH_SB_IN_B16", "SB_T1_NORTH_SB_IN_B16"]
    assert {"glb2io_16_X00_Y02", "io2glb_1_X03_Y01"} <= set(arr.interface.ports)


@pytest.mark.parametrize("edge", [
    ("SB:16:2:1:SOUTH:1:IN", "SB:16:2:1:NORTH:1:OUT"),     # switch-box wire
    ("RMUX:1:1:1:EAST:2", "SB:1:2:1:WEST:2:IN"),           # inter-tile track
    ("SB:16:1:2:WEST:0:IN", "PORT:16:1:2:data_in"),        # connection box
    ("REG:1:2:2:SOUTH:4", "RMUX:1:2:2:SOUTH:4"),           # pipeline register
])
def test_dropped_edge_is_found_and_named(ic4, edge):
    arr = array_circuit(ic4, drop_edge=edge)
    with pytest.raises(RTLMismatchError) as exc:
        check_rtl(ic4, arr)
    assert exc.value.node == edge[1]
    assert str(exc.value).startswith(f"node {edge[1]}: RTL fan-in")
    assert f"missing ['{edge[0]}']" in str(exc.value)


def test_drop_edge_must_exist(ic4):
    with pytest.raises(SpecError, match="drop_edge .* is not an edge"):
        array_circuit(ic4, drop_edge=("SB:16:1:1:WEST:0:IN", "SB:16:1:1:NORTH:1:OUT"))


def test_mux_module_names_encode_parameters():
    assert mux_circuit(20, 16).name == "CanalMux_h20_w16"
    assert len(mux_circuit(3, 1).S) == 2 and len(mux_circuit(3, 16).O) == 16


def test_verilog_one_file_per_module(ic2, tmp_path):
    from canal.rtl import compile_array, split_verilog
    arr = array_circuit(ic2, name="Small")
    vfile = compile_array(arr, tmp_path / "v")
    paths = split_verilog(vfile, tmp_path / "split")
    names = [p.stem for p in paths]
    assert names[-1] == arr.name and arr.name.startswith("Small_2x2_")
    assert len(names) == len(set(names))
    assert sum(1 for n in names if n.startswith("Tile_passthru_")) == 1
    assert {"passthru", "CanalMux_h4_w16", "CanalMux_h20_w1"} <= set(names)
    for p in paths:
        text = p.read_text()
        assert text.count("\nendmodule") == 1 and text.startswith(f"module {p.stem}(")
    assert sum(p.stat().st_size for p in paths) >= vfile.stat().st_size - len(paths)


def test_flush_spine_registers_every_two_rows(ic4):
    arr = array_circuit(ic4, flush_interval=2)
    insts = {i.name: i for i in arr.instances}
    spine = sorted(n for n in insts if n.startswith("flush_X"))
    assert spine == [f"flush_X{x:02X}_S1" for x in range(4)]
    for x in range(4):
        for y in range(4):
            driver = insts[f"Tile_X{x:02X}_Y{y:02X}"].flush.value()
            if y < 2:
                assert driver is arr.flush
            else:
                assert driver.name.inst.name == f"flush_X{x:02X}_S1"
    with pytest.raises(SpecError, match="flush_interval=-1"):
        array_circuit(ic4, flush_interval=-1)


def test_core_with_bits1_ports_and_wide_config_field():
    """1-bit ports declared Bits[1], a Bit config input and a 40-bit field spanning two
    registers still compose; the check passes."""
    import functools

    from cgra.hdl import m

    from canal.passes import InterconnectParams, build_uniform
    from cgra.config import ConfigField
    from cgra.core import CoreSpec, PortSpec

    @functools.lru_cache(None)
    def build():
        class OddCore(m.Circuit):
            name = "canal_test_oddcore"
            io = m.IO(clk_en=m.In(m.Bit), flush=m.In(m.Bit), b=m.In(m.Bits[1]),
                      q=m.Out(m.Bits[1]), config_f=m.In(m.Bit),
                      config_k=m.In(m.Bits[40])) + m.ClockIO(has_reset=True)
            io.q @= io.b ^ m.bits(io.config_f, 1) ^ io.config_k[39:40]
        return OddCore

    core = CoreSpec("canal_test_oddcore", "p", (PortSpec("b", 1, "in"), PortSpec("q", 1, "out")),
                    (ConfigField("f", 1, 1), ConfigField("k", 40, 5)), build)
    ic = build_uniform(InterconnectParams(2, 2, widths=(1,)), lambda x, y: core)
    assert [(s.reg, s.lo, s.width) for s in ic.configs[(0, 0)].features[0].slices] == [
        (0, 0, 1), (1, 0, 32), (2, 0, 8)]
    arr = array_circuit(ic, name="Odd")
    assert check_rtl(ic, arr).nodes == len(ic.graphs[1].nodes)
    tile = type(next(i for i in arr.instances if i.name == "Tile_X00_Y00"))
    core_inst = next(i for i in tile.instances if i.name == "core")
    assert core_inst.config_k.value() is not None


def test_empty_tiles_and_track_length_give_distinct_arrays():
    from canal.passes import InterconnectParams, build_uniform
    a = build_uniform(InterconnectParams(3, 1, tracks=2, track_length=1), lambda x, y: None)
    b = build_uniform(InterconnectParams(3, 1, tracks=2, track_length=2), lambda x, y: None)
    ca, cb = array_circuit(a, name="Empty"), array_circuit(b, name="Empty")
    assert ca is not cb and ca.name != cb.name
    assert check_rtl(a, ca).edges == a.graphs[16].num_edges() + a.graphs[1].num_edges()
    check_rtl(b, cb)
    # the length-1 RTL is not the length-2 graph: track 0 passes through tile (1, 0)
    # (canal.passes.segment_tracks), a wire with no pipeline register
    with pytest.raises(RTLMismatchError, match=r"node SB:16:0:0:EAST:0:IN: RTL fan-in "
                       r"\[.<rtl RMUX_T0_WEST_B16 at \(1, 0\)>.\] differs from the graph "
                       r"fan-in \[.SB:16:1:0:WEST:0:OUT.\]"):
        check_rtl(b, ca)
