"""Acceptance on the 8x8 design in an RTL simulator (fault's testbench in Icarus: about 4 s
where fault's Verilator build took 44 s; every app run of tests/e2e runs this design in
Verilator), through the config bus only.

One PE (tile (0, 1), just below IO tile (0, 0)) gets the instruction "add constant 7"
(encoded from pe.json's assembler layout, packed with config_map.json); two routes
IO (0,0) -> PE data0 and PE res -> IO (0,0) come from ``route_bitstream`` on the routing
graph collateral, each through the pipeline register of the switch-box output it leaves by
(optional on SOUTH: the route selects it; mandatory on NORTH), so the expected latency
IO input -> IO output is 2 cycles. 100 random values stream through;
every written config register reads back; a stall (clk_en = 0) holds the pipeline.
"""
from __future__ import annotations

import json
import random

import fault
import pytest

from canal.collateral import load_json
from canal.config import route_bitstream
from cgra.config import config_address
from garnet.sta.verilog import flatten_packed, hoist_automatic, modules

LATENCY = 2
ADD_CONST = 7


def _encode_inst(pe_doc: dict, values: dict[str, object]) -> int:
    """Flat instruction from pe.json's assembler layout; enum values by tag name."""
    inst = 0
    for f in pe_doc["peak"]["fields"]:
        if f["name"] not in values:
            continue
        v = values[f["name"]]
        if isinstance(v, str):
            v = f["tags"][v]
        assert 0 <= v < (1 << f["width"])
        inst |= v << f["lo"]
    return inst


def _core_writes(cmap: dict, x: int, y: int, field: str, value: int) -> list[tuple[int, int]]:
    regs: dict[int, int] = {}
    for row in cmap["fields"]:
        if (row["x"], row["y"], row["feature"], row["field"]) == (x, y, 0, field):
            part = (value >> row["field_lo"]) & ((1 << row["width"]) - 1)
            regs[row["addr"]] = regs.get(row["addr"], 0) | part << row["lo"]
    return sorted(regs.items())


ROUTES = {
    "in": [["PORT:16:0:0:io2f_16", "SB:16:0:0:SOUTH:2:OUT", "REG:16:0:0:SOUTH:2",
            "RMUX:16:0:0:SOUTH:2", "SB:16:0:1:NORTH:2:IN", "PORT:16:0:1:data0"]],
    "out": [["PORT:16:0:1:res", "SB:16:0:1:NORTH:3:OUT", "REG:16:0:1:NORTH:3",
             "RMUX:16:0:1:NORTH:3", "SB:16:0:0:SOUTH:3:IN", "PORT:16:0:0:f2io_16"]],
}


@pytest.fixture(scope="module")
def bitstream(small_design):
    _, d = small_design
    pe_doc = json.loads((d / "pe.json").read_text())
    cmap = json.loads((d / "config_map.json").read_text())
    graphs = {w: load_json(d / "routing" / f"graph_{w}.json") for w in (16, 1)}
    inst = _encode_inst(pe_doc, {"alu": "Add", "data0_mode": "BYPASS", "data1_mode": "CONST",
                                 "data1_const": ADD_CONST})
    core = _core_writes(cmap, 0, 1, "inst", inst)
    route = route_bitstream(graphs, ROUTES)
    return inst, core, route


def test_inst_encoding_matches_pe_model(bitstream):
    from peak.examples.cgra_pe import PE

    inst, core, _ = bitstream
    model = PE()
    for x in (0, 1, 0x7FFF, 0xFFF9, 0xFFFF):
        res, _ = model(inst, x, 0x1234, 0, 0, 0)
        assert int(res) == (x + ADD_CONST) & 0xFFFF
    # the 62-bit instruction spans registers 0 and 1 of feature 0 at tile (0, 1)
    assert [a for a, _ in core] == [config_address(0, 0, 0, 1), config_address(1, 0, 0, 1)]
    assert core[0][1] | core[1][1] << 32 == inst


def test_route_bitstream_selects(bitstream):
    _, _, route = bitstream
    # 4 registers: SB_OUT select + RMUX enable in each of the two sb16 features (the RMUX
    # fields share a register with SB_OUT fields or sit in the next one) plus two CBs
    addrs = {a for a, _ in route}
    tiles = {(a >> 8 & 0xFF, a & 0xFF) for a in addrs}
    assert tiles == {(0, 0), (0, 1)}
    assert all(d != 0 for _, d in route)


def test_add7_stream_in_icarus(small_design, bitstream, tmp_path_factory):
    result, d = small_design
    circ = result.circuit
    inst, core, route = bitstream
    writes = core + route
    build = tmp_path_factory.mktemp("garnet_sim")
    # every module of the design, as yosys reads it (the same rewrites, bit for bit: 2-D
    # packed arrays flattened, `automatic` locals hoisted), which Icarus reads too
    (build / f"{circ.name}.v").write_text("".join(
        flatten_packed(hoist_automatic(text)) for text in modules(d / "rtl").values()))

    t = fault.Tester(circ, circ.CLK)
    c = t.circuit
    c.CLK = 0
    c.RESET = 1
    c.clk_en = 0
    c.flush = 0
    c.config_addr = 0
    c.config_data = 0
    c.config_write = 0
    c.config_read = 0
    for x in range(8):
        setattr(c, f"glb2io_16_X{x:02X}_Y00", 0)
        setattr(c, f"glb2io_1_X{x:02X}_Y00", 0)
    t.step(2)
    c.RESET = 0
    t.step(2)
    # configuration through the bus only
    for addr, data in writes:
        c.config_addr = addr
        c.config_data = data
        c.config_write = 1
        t.step(2)
    c.config_write = 0
    # read-back of every written register (read_data is combinational)
    c.config_read = 1
    for addr, data in writes:
        c.config_addr = addr
        t.eval()
        c.read_data.expect(data)
    # an untouched register reads its reset value 0 (PE at (1, 1))
    c.config_addr = config_address(0, 0, 1, 1)
    t.eval()
    c.read_data.expect(0)
    c.config_read = 0
    t.eval()
    c.read_data.expect(0)
    # stream 100 values: output(cycle j) = input(cycle j - LATENCY) + 7
    rng = random.Random(6)
    vals = [rng.randrange(1 << 16) for _ in range(100)] + [0] * LATENCY
    c.clk_en = 1
    for j, v in enumerate(vals):
        c.glb2io_16_X00_Y00 = v
        t.eval()
        if j >= LATENCY:
            c.io2glb_16_X00_Y00.expect((vals[j - LATENCY] + ADD_CONST) & 0xFFFF)
        t.step(2)
    # stall: with clk_en = 0 the pipeline registers hold their values
    c.glb2io_16_X00_Y00 = 0x1111
    c.clk_en = 0
    t.step(2)
    t.step(2)
    t.eval()
    c.io2glb_16_X00_Y00.expect((vals[len(vals) - LATENCY] + ADD_CONST) & 0xFFFF)
    c.clk_en = 1
    t.step(2)
    t.step(2)
    t.eval()
    c.io2glb_16_X00_Y00.expect((0x1111 + ADD_CONST) & 0xFFFF)
    t.compile_and_run("system-verilog", simulator="iverilog", directory=str(build),
                      skip_compile=True, disp_type="on_error")
