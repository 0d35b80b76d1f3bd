"""Config memory of a tile core (a Lake memory with lut=True): feature numbering, the
address layout, collateral round trips, errors, and Verilator write / read-back of words
through the 32-bit config bus of a 2x1 array."""
from __future__ import annotations

import dataclasses
import random

import fault
import pytest
from canal_testutil import PT_CORE

from canal import collateral as cc
from canal.config import config_memory_writes, tile_configs
from canal.passes import InterconnectParams, build_uniform
from canal.rtl import array_circuit
from cgra.config import config_address
from cgra.core import ConfigMemory
from cgra.errors import ConfigError

MEM_XY = (1, 0)


@pytest.fixture(scope="module")
def mem_core():
    import lake

    return lake.core_spec("dualport_2048x16")


@pytest.fixture(scope="module")
def ic_mem(mem_core):
    """2x1 array: pass-through core at (0, 0), the dual-port MEM (2048 x 16) at (1, 0)."""
    return build_uniform(InterconnectParams(2, 1, pipeline_registers=[]),
                         lambda x, y: mem_core if x == 1 else PT_CORE)


def test_mem_features_numbered_after_the_others(ic_mem, mem_core):
    assert mem_core.config_memory == ConfigMemory(2048, 16)
    tc = ic_mem.configs[MEM_XY]
    names = [f.name for f in tc.features]
    assert names == ["core", "sb16", "cb_data_in_0", "cb_chain_data_in_0", "sb1",
                     "cb_chain_valid_in_0"] + [f"mem{i}" for i in range(8)] + ["pg"]
    assert [f.index for f in tc.features] == list(range(15))
    assert [f.words for f in tc.features[6:14]] == [256] * 8
    assert tc.config_memory == ConfigMemory(2048, 16, 6)
    # the tile record carries the base feature, in every graph
    for g in ic_mem.graphs.values():
        assert g.tiles[MEM_XY].config_memory == ConfigMemory(2048, 16, 6)
    assert ic_mem.tiles[(0, 0)].config_memory is None
    # existing features keep their numbers: same tile without a config memory
    plain = dataclasses.replace(mem_core, config_memory=None)
    ic2 = build_uniform(InterconnectParams(2, 1, pipeline_registers=[]),
                        lambda x, y: plain if x == 1 else PT_CORE)
    before = [(f.index, f.name, f.fields) for f in ic2.configs[MEM_XY].features]
    assert [(f.index, f.name, f.fields) for f in tc.features[:6]] == before[:6]
    # no config-map rows for memory words (they are not fields)
    rows = [r for r in ic_mem.config_map_rows() if (r["x"], r["y"]) == MEM_XY]
    assert max(r["feature"] for r in rows if r["feature_name"] != "pg") == 5
    assert [(r["feature"], r["field"]) for r in rows if r["feature_name"] == "pg"] == [(14, "gate")]


def test_config_memory_writes_addresses_and_errors():
    cm = ConfigMemory(2048, 16, 6)
    assert config_memory_writes(1, 0, cm, [(0, 5), (300, 7), (2047, 65535)]) == [
        (config_address(0, 6, 1, 0), 5), (config_address(44, 7, 1, 0), 7),
        (config_address(255, 13, 1, 0), 65535)]
    assert config_address(44, 7, 1, 0) == 0x2C070100
    with pytest.raises(ConfigError, match=r"tile \(1, 0\): config memory word index 2048 "
                                          r"is outside 0..2047"):
        config_memory_writes(1, 0, cm, [(2048, 1)])
    with pytest.raises(ConfigError, match=r"tile \(1, 0\): config memory word 3 = 65536 "
                                          r"does not fit 16 bits"):
        config_memory_writes(1, 0, cm, [(3, 65536)])
    with pytest.raises(ConfigError, match="word index -1"):
        config_memory_writes(1, 0, cm, [(-1, 0)])
    with pytest.raises(ConfigError, match="has no feature number"):
        config_memory_writes(1, 0, ConfigMemory(2048, 16), [(0, 0)])


def test_feature_limit_counts_the_memory_features():
    params = InterconnectParams(1, 1, pipeline_registers=[])
    n0 = len(build_uniform(params, lambda x, y: PT_CORE).configs[(0, 0)].features)
    assert n0 == 6                      # core, sb16, cb_data_in, sb1, cb_bit_in, pg
    # 250 memory features (and pg) fill the 8-bit feature field exactly; 251 is one too many
    ok = dataclasses.replace(PT_CORE, name="pt_mem", config_memory=ConfigMemory(256 * 250, 16))
    ic = build_uniform(params, lambda x, y: ok)
    assert len(ic.configs[(0, 0)].features) == 256
    assert ic.tiles[(0, 0)].config_memory.feature == 5
    big = dataclasses.replace(PT_CORE, name="pt_bigmem",
                              config_memory=ConfigMemory(256 * 250 + 1, 16))
    with pytest.raises(ConfigError, match=r"tile \(0, 0\) needs 257 features \(251 of them "
                                          r"for the 64001-word config memory\).*\(256\)"):
        build_uniform(params, lambda x, y: big)


def test_collateral_round_trip_keeps_config_memory(ic_mem, tmp_path):
    for w, g in ic_mem.graphs.items():
        doc = cc.to_json(g)
        tiles = {(t["x"], t["y"]): t for t in doc["tiles"]}
        assert tiles[MEM_XY]["config_memory"] == {"feature": 6, "words": 2048, "width": 16}
        assert tiles[(0, 0)]["config_memory"] is None
        back = cc.from_json(doc)
        assert back == g and back.tiles[MEM_XY].config_memory == ConfigMemory(2048, 16, 6)
        text = cc.to_text(g)
        assert "  CONFIG_MEMORY 6 2048 16\n" in text
        assert cc.from_text(text) == g
        cc.dump_json(g, tmp_path / f"graph_{w}.json")
    # the mapper's view of the collateral (mapper.collateral.Collateral.tiles)
    from mapper.collateral import load_fabric

    coll = load_fabric([tmp_path / "graph_16.json", tmp_path / "graph_1.json"])
    cm = coll.tiles[MEM_XY].config_memory
    assert (cm.feature, cm.words, cm.width) == (6, 2048, 16)
    # the config map computed from the loaded graphs agrees
    assert tile_configs({w: rg.ig for w, rg in coll.graphs.items()})[
        MEM_XY].config_memory == cm


def test_stale_feature_in_tile_record_is_refused(ic_mem):
    graphs = {w: g.copy() for w, g in ic_mem.graphs.items()}
    for g in graphs.values():
        g.tiles[MEM_XY] = dataclasses.replace(g.tiles[MEM_XY],
                                              config_memory=ConfigMemory(2048, 16, 9))
    with pytest.raises(ConfigError, match=r"tile \(1, 0\).*feature 9 but the graphs give 6"):
        tile_configs(graphs)


def _reset(t, arr):
    for p in ("config_write", "config_read", "flush"):
        t.poke(getattr(arr, p), 0)
    t.poke(arr.clk_en, 1)
    t.poke(arr.RESET, 1)
    t.step(2)
    t.poke(arr.RESET, 0)


def test_words_written_through_config_bus_read_back(ic_mem, tmp_path):
    """Verilator: table words at their documented addresses (every mem feature, first and
    last register), core register 0 and a mux select register, all read back through
    read_data; clk_en = 0 while configuring (config writes ignore it)."""
    arr = array_circuit(ic_mem)
    cm = ic_mem.tiles[MEM_XY].config_memory
    rng = random.Random(2)
    idx = sorted({0, 1, 255, 256, 1000, 2047} | {256 * k + rng.randrange(256)
                                                  for k in range(8)})
    words = [(w, rng.randrange(1 << 16)) for w in idx]
    mem_writes = config_memory_writes(*MEM_XY, cm, words)
    regs = [(config_address(0, 0, *MEM_XY), 0x1234_5678),
            (config_address(0, 1, *MEM_XY), rng.randrange(1 << 8))]
    t = fault.Tester(arr, arr.CLK)
    _reset(t, arr)
    t.poke(arr.clk_en, 0)
    for addr, data in regs + mem_writes:
        t.poke(arr.config_addr, addr)
        t.poke(arr.config_data, data | (0xABCD << 16 if (addr, data) in mem_writes else 0))
        t.poke(arr.config_write, 1)
        t.step(2)
    t.poke(arr.config_write, 0)
    t.poke(arr.config_read, 1)
    for addr, data in mem_writes:
        t.poke(arr.config_addr, addr)
        t.eval()
        t.expect(arr.read_data, data)               # low 16 bits stored, zero-extended
    t.poke(arr.config_addr, config_address(2, 6, *MEM_XY))   # word 2: never written
    t.eval()
    t.expect(arr.read_data, 0)
    t.poke(arr.config_addr, config_address(0, 14, *MEM_XY))  # past the last mem feature
    t.eval()
    t.expect(arr.read_data, 0)
    t.poke(arr.config_addr, config_address(0, 6, 0, 0))      # same feature, other tile
    t.eval()
    t.expect(arr.read_data, 0)
    # the core and switch-box config registers (32 bits) still read back
    for addr, data in regs:
        t.poke(arr.config_addr, addr)
        t.eval()
        t.expect(arr.read_data, data)
    t.poke(arr.config_read, 0)
    t.poke(arr.config_addr, mem_writes[0][0])
    t.eval()
    t.expect(arr.read_data, 0)
    # the words survive a reset (storage is not reset)
    t.poke(arr.RESET, 1)
    t.step(2)
    t.poke(arr.RESET, 0)
    t.poke(arr.config_read, 1)
    t.poke(arr.config_addr, mem_writes[-1][0])
    t.eval()
    t.expect(arr.read_data, mem_writes[-1][1])
    t.compile_and_run("verilator", directory=str(tmp_path), flags=["-Wno-fatal"],
                      magma_output="mlir-verilog", disp_type="on_error")
