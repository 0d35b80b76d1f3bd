"""A 4x4 array of pass-through cores configured only through the config bus, in an RTL
simulator: fault's testbenches in Icarus (about 1 s each to compile and run, where each
Verilator test driver took 5-8 s to compile), on the array's Verilog compiled once (the
``sim4`` fixture). The tiles' Verilator runs are tests/canal/test_canal_smt_rtl.py's.
"""
from __future__ import annotations

import random

import fault
import magma as m
import pytest

from canal.config import power_gate_bitstream, power_gate_feature
from canal.graph import Side
from canal.paths import walk_path
from canal.rtl import array_circuit, top_port_name
from cgra.config import config_address
from garnet.sta.verilog import flatten_packed, hoist_automatic, modules_of

N, S, E, W = Side.NORTH, Side.SOUTH, Side.EAST, Side.WEST

# West IO (0,1) -> 6 switch boxes ((0,1) (1,1) (1,2) (2,2) (2,1) (2,0)) -> east IO (3,0)
DATA_MOVES = [E, S, E, N, N, E]


@pytest.fixture(scope="module")
def sim4(ic4, tmp_path_factory):
    """The array's Verilog, compiled once, as yosys reads it (2-D packed arrays flattened,
    ``automatic`` locals hoisted: the same logic, bit for bit), which Icarus reads too."""
    arr = array_circuit(ic4)
    directory = tmp_path_factory.mktemp("canal_sim4")
    m.compile(str(directory / "raw"), arr, output="mlir-verilog")
    mods = modules_of((directory / "raw.v").read_text())
    (directory / f"{arr.name}.v").write_text("".join(
        flatten_packed(hoist_automatic(text)) for text in mods.values()))
    t = fault.Tester(arr, arr.CLK)
    _reset(t, arr)
    t.expect(arr.read_data, 0)
    _run(t, directory)
    return arr, directory


def _run(t, directory):
    t.compile_and_run("system-verilog", simulator="iverilog", directory=str(directory),
                      skip_compile=True, disp_type="on_error")


def _reset(t, arr):
    for p in ("config_write", "config_read", "flush"):
        t.poke(getattr(arr, p), 0)
    t.poke(arr.clk_en, 1)
    t.poke(arr.RESET, 1)
    t.step(2)
    t.poke(arr.RESET, 0)


def _write(t, arr, bitstream):
    for addr, data in bitstream:
        t.poke(arr.config_addr, addr)
        t.poke(arr.config_data, data)
        t.poke(arr.config_write, 1)
        t.step(2)
    t.poke(arr.config_write, 0)


def _stream(t, src, dst, values, latency):
    """Poke ``values`` one per cycle at ``src``; expect each at ``dst`` ``latency`` cycles
    later (checked before the clock edge)."""
    for i, v in enumerate(values):
        t.poke(src, v)
        t.eval()
        if i >= latency:
            t.expect(dst, values[i - latency])
        t.step(2)


def test_route_west_to_east_with_one_register(ic4, sim4):
    arr, directory = sim4
    g = ic4.graphs[16]
    reg_path = walk_path(g, "PORT:16:0:1:io2f_16", DATA_MOVES, "PORT:16:3:0:f2io_16",
                         registers=[2])
    assert sum(1 for n in reg_path if n.startswith("SB:") and n.endswith(":OUT")) == 6
    assert "REG:16:1:2:EAST:0" in reg_path
    bypass = [n for n in reg_path if not n.startswith("REG:")]
    src = getattr(arr, top_port_name("glb2io_16", 0, 1))
    dst = getattr(arr, top_port_name("io2glb_16", 3, 0))
    rng = random.Random(4)
    values = [rng.randrange(1 << 16) for _ in range(24)]

    t = fault.Tester(arr, arr.CLK)
    _reset(t, arr)
    _write(t, arr, ic4.route_bitstream({"data": [reg_path]}))
    _stream(t, src, dst, values, latency=1)
    # stall: the pipeline register holds while clk_en = 0
    t.poke(src, 0x1234)
    t.step(2)
    t.poke(arr.clk_en, 0)
    t.poke(src, 0x4321)
    t.step(2)
    t.step(2)
    t.expect(dst, 0x1234)
    t.poke(arr.clk_en, 1)
    t.step(2)
    t.expect(dst, 0x4321)
    # the same route with the register bypassed (RMUX select 0): latency 0
    _write(t, arr, ic4.route_bitstream({"data": [bypass]}))
    _stream(t, src, dst, values, latency=0)
    _run(t, directory)


def test_routes_through_cores(ic4, sim4):
    arr, directory = sim4
    g1, g16 = ic4.graphs[1], ic4.graphs[16]
    # 1-bit: IO (0,2) -> core (1,2) bit_in ; bit_out -> register at hop 0 -> IO (3,2)
    bit_routes = {
        "bit_a": [walk_path(g1, "PORT:1:0:2:io2f_1", [E], "PORT:1:1:2:bit_in")],
        "bit_b": [walk_path(g1, "PORT:1:1:2:bit_out", [E, E], "PORT:1:3:2:f2io_1",
                            registers=[0])]}
    # 16-bit: IO (0,3) -> core (2,3) data_in (combinational core) -> IO (3,3)
    data_routes = {
        "d_a": [walk_path(g16, "PORT:16:0:3:io2f_16", [E, E], "PORT:16:2:3:data_in")],
        "d_b": [walk_path(g16, "PORT:16:2:3:data_out", [E], "PORT:16:3:3:f2io_16")]}
    bitstream = ic4.route_bitstream({**bit_routes, **data_routes})
    bitstream += ic4.core_bitstream(1, 2, {"bit_reg": 1})
    t = fault.Tester(arr, arr.CLK)
    _reset(t, arr)
    _write(t, arr, bitstream)
    rng = random.Random(11)
    bits = [rng.randrange(2) for _ in range(24)]
    words = [rng.randrange(1 << 16) for _ in range(24)]
    bsrc, bdst = (getattr(arr, top_port_name("glb2io_1", 0, 2)),
                  getattr(arr, top_port_name("io2glb_1", 3, 2)))
    dsrc, ddst = (getattr(arr, top_port_name("glb2io_16", 0, 3)),
                  getattr(arr, top_port_name("io2glb_16", 3, 3)))
    for i in range(len(bits)):
        t.poke(bsrc, bits[i])
        t.poke(dsrc, words[i])
        t.eval()
        t.expect(ddst, words[i])                  # combinational core, no register
        if i >= 2:
            t.expect(bdst, bits[i - 2])           # core register + pipeline register
        t.step(2)
    _run(t, directory)


def test_config_registers_read_back(ic4, sim4):
    arr, directory = sim4
    rng = random.Random(7)
    written = []
    for (x, y) in [(0, 0), (1, 1), (2, 3), (3, 2)]:
        for feature, reg in ic4.configs[(x, y)].registers():
            written.append((config_address(reg, feature, x, y), rng.randrange(1 << 32)))
    assert len(written) > 20
    t = fault.Tester(arr, arr.CLK)
    _reset(t, arr)
    _write(t, arr, written)
    t.poke(arr.config_read, 1)
    for addr, data in written:
        t.poke(arr.config_addr, addr)
        t.eval()
        t.expect(arr.read_data, data)
    # an address no tile decodes (feature 200) and a read strobe of 0 both read 0
    t.poke(arr.config_addr, config_address(0, 200, 1, 1))
    t.eval()
    t.expect(arr.read_data, 0)
    t.poke(arr.config_addr, written[0][0])
    t.poke(arr.config_read, 0)
    t.eval()
    t.expect(arr.read_data, 0)
    # reset returns every config register to its reset value (0 for these fields)
    t.poke(arr.RESET, 1)
    t.step(2)
    t.poke(arr.RESET, 0)
    t.poke(arr.config_read, 1)
    t.poke(arr.config_addr, written[-1][0])
    t.eval()
    t.expect(arr.read_data, 0)
    _run(t, directory)


def test_power_gate_clamps_outputs_and_loses_state(ic4, sim4):
    """A gated tile (its ``pg`` field = 1, canal.rtl module docstring) outputs 0 and its
    pipeline register is held in reset; gating a tile the route does not pass changes
    nothing; switching the tile on again brings the stream back."""
    arr, directory = sim4
    g = ic4.graphs[16]
    path = walk_path(g, "PORT:16:0:1:io2f_16", DATA_MOVES, "PORT:16:3:0:f2io_16",
                     registers=[2])
    assert "REG:16:1:2:EAST:0" in path                    # the register of tile (1, 2)
    on_path = {(int(n.split(":")[2]), int(n.split(":")[3])) for n in path}
    assert (1, 2) in on_path and (0, 3) not in on_path and (3, 3) not in on_path
    src = getattr(arr, top_port_name("glb2io_16", 0, 1))
    dst = getattr(arr, top_port_name("io2glb_16", 3, 0))
    rng = random.Random(36)
    values = [rng.randrange(1, 1 << 16) for _ in range(12)]
    t = fault.Tester(arr, arr.CLK)
    _reset(t, arr)
    _write(t, arr, ic4.route_bitstream({"data": [path]}))
    # two unused tiles gated: the stream is unchanged
    _write(t, arr, power_gate_bitstream(ic4.configs, [(0, 3), (3, 3)]))
    _stream(t, src, dst, values, latency=1)
    # stall with 0x1234 in the register of (1, 2), then gate (1, 2): the output is clamped
    t.poke(src, 0x1234)
    t.step(2)
    t.poke(arr.clk_en, 0)
    t.eval()
    t.expect(dst, 0x1234)
    _write(t, arr, power_gate_bitstream(ic4.configs, [(1, 2)]))
    t.eval()
    t.expect(dst, 0)
    # on again (still stalled): the register's value was lost (reset to 0 while gated)
    pg = power_gate_feature(ic4.configs[(1, 2)])
    _write(t, arr, [(config_address(0, pg.index, 1, 2), 0)])
    t.eval()
    t.expect(dst, 0)
    t.poke(arr.clk_en, 1)
    _stream(t, src, dst, values, latency=1)
    # a gated tile still answers config reads (the config registers are always on)
    _write(t, arr, power_gate_bitstream(ic4.configs, [(2, 2)]))
    t.poke(arr.config_read, 1)
    t.poke(arr.config_addr, config_address(0, pg.index, 2, 2))
    t.eval()
    t.expect(arr.read_data, 1)
    t.poke(arr.config_read, 0)
    t.poke(src, 0x0F0F)
    t.eval()
    t.expect(dst, 0)
    _run(t, directory)
