"""Buffer mapping with the pond, the PE tiles' register file (issue 39 item 4; AHA paper
Sec. 4.2, unified-buffer paper Sec. 5): which reuse distances go to registers, a pond or a
MEM tile, read from the pond's collateral (Lake's pond_32x16: 32 words, 1 in + 1 out, read
latency 1; an architect's 8-word pond), and the pond as a second site of the PE tile."""
from __future__ import annotations

import dataclasses

import pytest

from cgra.errors import ConfigError, MappingError, SpecError
from garnet.array import build_interconnect
from garnet.collateral import PondInfo
from garnet.cores import POND_PREFIX, pe_pond_core
from garnet.params import GarnetParams, load_toml, pond_spec, validate
from lake.collateral import MemInfo, collateral
from lake.spec import register, simple
from mapper.apps import lower_app
from mapper.backend.bitstream import core_values
from mapper.backend.pack import PackedDesign, PackedInstance
from mapper.backend.place import site_capacity
from mapper.collateral import Collateral
from mapper.mapping.memory import (MemSpec, choose_buffer, map_memory, plan_buffer,
                                   plan_shift_registers, segment_taps)
from peak.examples.cgra_pe import PE

POND = MemInfo.from_json(collateral("pond_32x16"))
MEM = MemInfo.from_json(collateral("dualport_2048x16"))
#: an architect's pond of 8 words (registered under its own name, no preset)
SMALL_POND = MemInfo.from_json(collateral(register(simple("my_pond_8x16", 8, 16,
                                                          "registers"))))
#: gaussian 3x3 on a 32-wide image: the read distances of its input buffer (cycles)
GAUSS32 = [0, 1, 2, 32, 33, 34, 64, 65, 66]


def test_choose_buffer_by_reuse_distance():
    pond = MemSpec.of(POND)
    assert [choose_buffer(g, 4, pond) for g in (0, 1, 2, 4, 30, 32, 33, 2000)] == \
        ["wire", "registers", "pond", "pond", "pond", "pond", "mem", "mem"]
    assert [choose_buffer(g, 4) for g in (0, 1, 2, 4, 5, 30)] == \
        ["wire", "registers", "registers", "registers", "mem", "mem"]
    small = MemSpec.of(SMALL_POND)
    assert (small.name, small.capacity) == ("my_pond_8x16", 8)
    assert [choose_buffer(g, 4, small) for g in (2, 8, 9)] == ["pond", "pond", "mem"]
    with pytest.raises(MappingError, match="negative reuse distance gap -1"):
        choose_buffer(-1, 4, pond)


def test_plan_buffer_puts_gaussian_row_delays_in_ponds():
    spec = MemSpec.of(MEM)
    regs, taps, segs = plan_buffer(("input", 0), GAUSS32, 4, spec, MemSpec.of(POND))
    assert regs == [1, 2, 33, 34, 65, 66]
    assert taps == [32, 64]
    # each row delay line is chained from the previous memory tap (0, 32), as a MEM's: 32
    # cycles, 32 words (the whole pond); the registers at 1, 2 keep one sink each
    assert [(s.base, s.taps, s.words, s.pond) for s in segs] == \
        [(0, [32], 32, True), (32, [64], 32, True)]
    # gaussian at width 33: 33 cycles from tap to tap do not fit, 31 from distance 2 do
    g33 = [0, 1, 2, 33, 34, 35, 66, 67, 68]
    _, _, segs = plan_buffer(("input", 0), g33, 4, spec, MemSpec.of(POND))
    assert [(s.base, s.taps, s.words, s.pond) for s in segs] == \
        [(2, [33], 31, True), (35, [66], 31, True)]
    # rows of 64 do not fit the 32-word pond: the stock plan, MEM taps chained from 0
    g64 = [0, 1, 2, 64, 65, 66, 128, 129, 130]
    regs, taps, segs = plan_buffer(("input", 0), g64, 4, spec, MemSpec.of(POND))
    want_regs, want_taps = plan_shift_registers(g64, 4)
    assert (regs, taps) == (want_regs, want_taps) == ([1, 2, 65, 66, 129, 130], [64, 128])
    assert [(s.base, s.taps, s.words, s.pond) for s in segs] == \
        [(s.base, s.taps, s.words, False) for s in segment_taps(("input", 0), [64, 128], spec)] \
        == [(0, [64], 64, False), (64, [128], 64, False)]


def test_plan_buffer_pond_replaces_a_register_chain():
    # a gap of 3 whose middle distances nobody reads: one pond instead of 3 registers, fed
    # by the producer (distance 0)
    regs, taps, segs = plan_buffer(("b", 0), [0, 1, 4], 4, MemSpec.of(MEM), MemSpec.of(POND))
    assert (regs, taps) == ([1], [4])
    assert [(s.base, s.taps, s.words, s.pond) for s in segs] == [(0, [4], 4, True)]


@pytest.mark.parametrize("app,size,without,with_pond", [
    ("gaussian", 32, {"mem": 2, "pond": 0, "reg": 6}, {"mem": 0, "pond": 2, "reg": 6}),
    ("unsharp", 32, {"mem": 2, "pond": 0, "reg": 6}, {"mem": 0, "pond": 2, "reg": 6}),
    ("harris", 64, {"mem": 10, "pond": 0, "reg": 30}, {"mem": 10, "pond": 1, "reg": 28}),
])
def test_map_memory_counts_with_and_without_pond(app, size, without, with_pond):
    pl = lower_app(app, size, size, 1)
    keys = ("mem", "pond", "reg")
    a = map_memory(pl, MEM).counts()
    b = map_memory(pl, MEM, pond=POND).counts()
    assert {k: a[k] for k in keys} == without
    assert {k: b[k] for k in keys} == with_pond


def test_pond_instances_carry_lake_programs():
    m = map_memory(lower_app("gaussian", 32, 32, 1), MEM, pond=POND)
    inst = m.netlist.instances["pond_0"]
    assert (inst.kind, inst.tag, inst.config["preset"]) == ("pond", "o", "pond_32x16")
    w, r = inst.config["ports"]["data_in_0"], inst.config["ports"]["data_out_0"]
    assert w["extents"] == r["extents"]
    assert w["extents"] == [32, 32]                 # 32 words, 32 wraps of the stream
    # the read runs 32 cycles (the row) minus the read latency after the write
    assert r["schedule"]["offset"] - w["schedule"]["offset"] == 31
    # the 8-word pond holds no 30-cycle row: MEM tiles, as without a pond
    small = map_memory(lower_app("gaussian", 32, 32, 1), MEM, pond=SMALL_POND).counts()
    assert (small["mem"], small["pond"]) == (2, 0)


def test_pond_word_width_must_match():
    wide = dataclasses.replace(POND, data_width=32)
    with pytest.raises(MappingError, match="pond pond_32x16 holds 32-bit words"):
        map_memory(lower_app("gaussian", 32, 32, 1), MEM, pond=wide)


def test_pe_pond_core_ports_and_fields():
    core = pe_pond_core(PE, "pond_32x16")
    assert core.tag == "p" and core.name.startswith("PEPond_PE_")
    assert [q.name for q in core.ports][-2:] == ["pond_data_in_0", "pond_data_out_0"]
    names = [f.name for f in core.config_fields]
    assert names[0] == "inst" and len(names) == 1 + len(POND.config_fields)
    assert f"{POND_PREFIX}in0_sched_offset" in names


def test_pond_parameter_errors():
    assert pond_spec(GarnetParams(pond="")) is None
    assert pond_spec(GarnetParams(pond="pond_32x16")).storage.capacity == 32
    with pytest.raises(ConfigError, match=r"field 'pond' = 'pond_99': unknown Lake preset"):
        pond_spec(GarnetParams(pond="pond_99"))
    with pytest.raises(ConfigError, match=r"field 'pond' = 'dualport_2048x16': .*lookup-table"):
        pond_spec(GarnetParams(pond="dualport_2048x16"))
    with pytest.raises(ConfigError, match=r"field 'pond'.* data ports are 16 bits but "
                                          r"data_width = 32"):
        validate(GarnetParams(width=4, height=4, data_width=32, widths=[32, 1],
                              pe="peak.examples.cgra_pe:make_pe(32)",
                              mem_preset="dualport_1024x32", pond="pond_32x16"))


def test_a_pe_tile_with_a_pond_is_two_sites():
    ic = build_interconnect(GarnetParams(width=4, height=3, pond="pond_32x16"))
    coll = dataclasses.replace(Collateral.from_graphs(ic), pond=PondInfo(POND, POND_PREFIX))
    caps = site_capacity(coll)
    pe_sites = set(caps[("p",)])
    assert pe_sites == {(x, y) for x in (0, 1, 2) for y in (1, 2)}
    assert caps[("o",)] == {xy: 1 for xy in sorted(pe_sites, key=lambda t: (t[1], t[0]))}
    # without the pond's collateral the PE tiles hold one instance each
    assert ("o",) not in site_capacity(Collateral.from_graphs(ic))


def test_an_architects_pond_by_path(tmp_path):
    (tmp_path / "my_pond.py").write_text(
        "from lake.spec import simple\n\nPOND = simple('my_pond_16x16', 16, 16, 'registers')\n"
        "BROKEN = 3\n")
    toml = tmp_path / "d.toml"
    toml.write_text('width = 4\nheight = 3\npond = "my_pond.py:POND"\n')
    spec = pond_spec(load_toml(toml))
    assert (spec.name, spec.storage.capacity, spec.storage.kind) == \
        ("my_pond_16x16", 16, "registers")
    toml.write_text('width = 4\nheight = 3\npond = "my_pond.py:BROKEN"\n')
    with pytest.raises(SpecError) as exc:
        load_toml(toml)
    assert str(exc.value).startswith(f"{tmp_path / 'my_pond.py'}:4: ")
    assert "field 'pond'" in str(exc.value) and "not a lake.spec.MemorySpec" in str(exc.value)


def test_pond_fields_in_the_bitstream():
    m = map_memory(lower_app("gaussian", 32, 32, 1), MEM, pond=POND)
    cfg = m.netlist.instances["pond_0"].config
    packed = PackedDesign("g", {"pond_0": PackedInstance("pond_0", "pond", "o", cfg)}, [], {})
    vals = core_values(packed, "pond_0", set(), None, PondInfo(POND, POND_PREFIX))
    assert (vals["pond_in0_enable"], vals["pond_out0_enable"], vals["pond_in0_range_0"]) == \
        (1, 1, 31)
    assert all(k.startswith(POND_PREFIX) for k in vals)
    with pytest.raises(ConfigError, match="pond pond_0: the design's PE tiles have no pond"):
        core_values(packed, "pond_0", set(), None, None)
