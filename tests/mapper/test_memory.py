"""Memory mapping: schedules, buffer ports, shift registers, line buffers, Lake port programs,
chaining — checked against the unified-buffer paper's numbers and by streaming images through
the memory-mapped netlist (stream model) against the numpy golden."""
from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgra.errors import MappingError, SimulationError
from mapper.apps import APPS, FLOAT_APPS, lower_app
from mapper.interp import run_pipeline
from mapper.mapping.memory import (DUAL_PORT_SRAM, PHYSICAL_UNIFIED_BUFFER, MemSpec, map_memory,
                           plan_shift_registers, segment_taps)
from mapper.mapping.schedule import schedule_pipeline
from mapper.mapping.streams import program_events, run_streams

APP_NAMES = sorted(set(APPS) - FLOAT_APPS)  # integer apps (bf16: test_dsl_bf16.py)


def test_brighten_blur_paper_example():
    p = lower_app("brighten_blur", 64, 64)
    s = schedule_pipeline(p)
    assert s.distances("brighten") == [0, 1, 64, 65]
    assert s.stages["blur"].start == 65  # first blur window complete at cycle 65
    write = s.buffers[("brighten", 0)][0]
    assert write.kind == "write" and write.extents == (64, 64)
    assert write.schedule == {"strides": [1, 64], "offset": 0}
    reads = {(r.access["offset"][0], r.access["offset"][1]): r for r in s.buffers[("brighten", 0)][1:]}
    assert reads[(1, 1)].distance == 0 and reads[(0, 0)].distance == 65
    assert reads[(0, 0)].extents == (63, 63)
    assert reads[(0, 0)].schedule == {"strides": [1, 64], "offset": 65}
    for mem in (DUAL_PORT_SRAM, PHYSICAL_UNIFIED_BUFFER):
        c = map_memory(p, mem).counts()
        assert (c["reg"], c["mem"]) == (2, 1)


def test_gaussian_line_buffer_counts():
    p = lower_app("gaussian", 64, 64)
    dp = map_memory(p, DUAL_PORT_SRAM)
    pub = map_memory(p, PHYSICAL_UNIFIED_BUFFER)
    assert dp.chains[("input", 0)].distances == [0, 1, 2, 64, 65, 66, 128, 129, 130]
    assert dp.chains[("input", 0)].mem_taps == [64, 128]
    assert dp.counts()["reg"] == pub.counts()["reg"] == 6  # unified-buffer paper, Table 7
    assert dp.counts()["mem"] == 2
    assert pub.counts()["mem"] == 1
    # the single PUB holds one delay line: 1 input, taps at 64 and 128 (128 words)
    prog = pub.netlist.instances["mem_0"].config["ports"]
    assert set(prog) == {"data_in_0", "data_out_0", "data_out_1"}
    assert prog["data_in_0"] == {"dimensionality": 2, "extents": [128, 32],
                           "address": {"strides": [1, 0], "offset": 0},
                           "schedule": {"strides": [1, 128], "offset": 0}}
    assert prog["data_out_0"]["schedule"]["offset"] == 64 - 1  # read latency 1
    assert prog["data_out_1"]["schedule"]["offset"] == 128 - 1


def test_port_program_form_and_linear_delay_semantics():
    pub = map_memory(lower_app("gaussian", 64, 64), DUAL_PORT_SRAM)
    for inst in pub.netlist.instances.values():
        if inst.kind != "mem":
            continue
        for prog in inst.config["ports"].values():
            assert set(prog) == {"dimensionality", "extents", "address", "schedule"}
            assert set(prog["address"]) == set(prog["schedule"]) == {"strides", "offset"}
            assert prog["dimensionality"] == len(prog["extents"]) == 2
            c, _ = program_events(prog)
            assert np.all(np.diff(c) >= 1)  # strictly increasing schedule
    # a written word is read back exactly `delay` cycles later
    prog = pub.netlist.instances["mem_1"].config["ports"]
    wc, wa = program_events(prog["data_in_0"])
    rc, ra = program_events(prog["data_out_0"])
    assert np.array_equal(wa, ra)
    assert np.all(rc + 1 - wc == 64)


def test_shift_register_plan():
    assert plan_shift_registers([0, 1, 64, 65], 8) == ([1, 65], [64])
    assert plan_shift_registers([0, 3, 5], 8) == ([1, 2, 3, 4, 5], [])
    assert plan_shift_registers([20, 21], 8) == ([21], [20])
    assert plan_shift_registers([0, 1, 2, 6, 7, 8, 12, 13, 14], 4)[1] == []
    assert plan_shift_registers([0, 1, 2, 6, 7, 8, 12, 13, 14], 3) == (
        [1, 2, 7, 8, 13, 14], [6, 12])


def test_chaining_when_a_buffer_exceeds_one_tile():
    tiny = MemSpec.from_dict(dict(DUAL_PORT_SRAM, name="tiny", capacity=16))
    segs = segment_taps(("input", 0), [40], tiny)
    assert [(s.base, s.taps, s.passthrough) for s in segs] == [
        (0, [16], True), (16, [32], True), (32, [40], False)]
    assert [s.words for s in segs] == [16, 16, 8]
    p = lower_app("gaussian", 40, 8)
    mm = map_memory(p, tiny)
    assert mm.counts()["mem"] == 6  # two 40-cycle line delays, 3 chained tiles each
    img = np.random.default_rng(1).integers(0, 1 << 16, (8, 40)).astype(np.uint16)
    assert np.array_equal(run_streams(mm, {"input": img}), run_pipeline(p, {"input": img}))


@pytest.mark.parametrize("name", APP_NAMES)
@pytest.mark.parametrize("unroll", [1, 2, 3])
def test_stream_model_matches_golden(name, unroll):
    """The memory-mapped netlist computes the app (both presets, with/without latencies)."""
    rng = np.random.default_rng(unroll)
    if lower_app(name, 64, 64).multi_rate and unroll > 1:
        with pytest.raises(MappingError, match="multi-rate pipelines run with unroll 1"):
            lower_app(name, 64, 64, unroll)
        return
    for w, h in ((64, 64), (23, 11)):
        p = lower_app(name, w, h, unroll)
        img = rng.integers(0, 1 << 16, (h, w)).astype(np.uint16)
        ims = {n: img for n, i in p.inputs.items() if i.pattern is None}
        want = run_pipeline(p, ims)
        patterns = any(i.pattern for i in p.inputs.values())
        for mem in (DUAL_PORT_SRAM, PHYSICAL_UNIFIED_BUFFER):
            for lat in (None, {s.name: 1 + i % 3 for i, s in enumerate(p.stages)}):
                if patterns and mem["fetch_width"] > 1:
                    # coordinate patterns are ROMs loaded over the config bus: dual-port only
                    with pytest.raises(MappingError, match="has no config-bus memory"):
                        map_memory(p, mem, latencies=lat)
                    continue
                mm = map_memory(p, mem, latencies=lat)
                assert np.array_equal(run_streams(mm, ims), want)


def test_stream_model_catches_a_wrong_program():
    p = lower_app("brighten_blur", 16, 8)
    mm = map_memory(p, DUAL_PORT_SRAM)
    img = np.random.default_rng(2).integers(0, 256, (8, 16)).astype(np.uint16)
    bad = copy.deepcopy(mm)
    bad.netlist.instances["mem_0"].config["ports"]["data_out_0"]["schedule"]["offset"] += 1
    with pytest.raises(SimulationError, match="not valid"):
        run_streams(bad, {"input": img})


@settings(max_examples=25, deadline=None)
@given(w=st.integers(4, 40), h=st.integers(4, 12), u=st.integers(1, 4),
       cap=st.integers(2, 64), thr=st.integers(0, 6))
def test_random_sizes_and_memories(w, h, u, cap, thr):
    p = lower_app("gaussian", w, h, u)
    spec = dict(DUAL_PORT_SRAM, name="m", capacity=cap)
    mm = map_memory(p, spec, threshold=thr)
    img = np.random.default_rng(w * h).integers(0, 1 << 16, (h, w)).astype(np.uint16)
    assert np.array_equal(run_streams(mm, {"input": img}), run_pipeline(p, {"input": img}))
    for inst in mm.netlist.instances.values():
        if inst.kind == "mem":
            assert sum(s["words"] for s in inst.config["segments"]) <= cap


def test_mem_spec_errors_and_register_widths():
    with pytest.raises(MappingError, match="missing field 'capacity'"):
        MemSpec.from_dict({"name": "x", "in_ports": 1, "out_ports": 1, "max_dimensionality": 6})
    with pytest.raises(MappingError, match="max_dimensionality"):
        MemSpec.from_dict(dict(DUAL_PORT_SRAM, max_dimensionality=1))
    narrow = dict(DUAL_PORT_SRAM, name="narrow", extent_width=5)
    with pytest.raises(MappingError, match="extent 64 does not fit the 5-bit extent registers"):
        map_memory(lower_app("gaussian", 64, 64), narrow)
    short = dict(DUAL_PORT_SRAM, name="short", schedule_width=12)
    with pytest.raises(MappingError, match="12-bit cycle counter"):
        map_memory(lower_app("gaussian", 64, 64), short)
    assert MemSpec.from_dict(dict(DUAL_PORT_SRAM, max_dims=4)).max_dimensionality == 6


def test_netlist_shape():
    mm = map_memory(lower_app("brighten_blur", 64, 64), DUAL_PORT_SRAM)
    nl = mm.netlist
    kinds = nl.counts()
    assert kinds == {"io_in": 1, "kernel": 2, "io_out": 1, "reg": 2, "mem": 1}
    srcs = {n.name: (n.source, sorted(n.sinks)) for n in nl.nets}
    assert srcs["brighten_l0_d0"] == (("kernel_brighten", "out_0"),
                                      sorted([("kernel_blur", "brighten.3"), ("mem_0", "data_in_0"),
                                              ("reg_brighten_l0_d1", "in")]))
    assert srcs["brighten_l0_d64"][0] == ("mem_0", "data_out_0")
    assert srcs["blur_l0_d0"] == (("kernel_blur", "out_0"), [("io_out_blur_l0", "in")])


def test_pub_words_rounded_to_fetch_width():
    p = lower_app("gaussian", 23, 9)
    mm = map_memory(p, PHYSICAL_UNIFIED_BUFFER)
    seg = mm.chains[("input", 0)].segments[0]
    assert seg.taps == [23, 46] and seg.words == 48  # 46 needed, rounded to fetch width 4
    img = np.random.default_rng(4).integers(0, 1 << 16, (9, 23)).astype(np.uint16)
    assert np.array_equal(run_streams(mm, {"input": img}), run_pipeline(p, {"input": img}))


def test_negative_offsets_and_shared_pub_tiles():
    """Stencils reaching left/up; two buffers' delay lines share a PUB tile only when
    neither feeds the other (g reads f, which reads a: a tile holding both a's and f's
    delay lines would sit on a loop a-tile -> f -> the same tile)."""
    from mapper.frontend.dsl import Func, Input, Int16, Pipeline, Var

    x, y = Var("x"), Var("y")
    a = Input("a", Int16, (24, 10))
    f = Func("f")
    f[x, y] = a[x - 1, y - 2] + a[x + 1, y]
    g = Func("g")
    g[x, y] = f[x, y] - f[x - 3, y + 1]
    img = np.random.default_rng(9).integers(-(1 << 15), 1 << 15, (10, 24)).astype(np.int16)
    for u in (1, 2, 3):
        p = Pipeline(g, "neg", u).lower()
        want = run_pipeline(p, {"a": img})
        assert want.dtype == np.int16 and want.shape == (7, 19)
        for mem in (DUAL_PORT_SRAM, PHYSICAL_UNIFIED_BUFFER):
            mm = map_memory(p, mem, threshold=2)
            assert np.array_equal(run_streams(mm, {"a": img}), want)
        if u == 1:
            assert [[s.buffer[0] for s in t.segments] for t in mm.tiles] == [["a"], ["f"]]
    # independent buffers (both read only the input) share one PUB's two write ports
    b = Func("b")
    b[x, y] = a[x, y] * 3
    c = Func("c")
    c[x, y] = a[x, y] + 7
    h = Func("h")
    h[x, y] = b[x, y] + b[x, y + 2] + c[x, y] + c[x, y + 2]
    p = Pipeline(h, "two", 1).lower()
    mm = map_memory(p, PHYSICAL_UNIFIED_BUFFER)
    assert [sorted(s.buffer[0] for s in t.segments) for t in mm.tiles] == [["b", "c"]]
    assert sorted(s.in_port for s in mm.tiles[0].segments) == [0, 1]
    assert np.array_equal(run_streams(mm, {"a": img}), run_pipeline(p, {"a": img}))


def test_programs_accepted_by_lake_configure():
    """The port programs configure Lake's presets as they are (Lake's config encoder)."""
    from lake.config import configure

    for mem in (DUAL_PORT_SRAM, PHYSICAL_UNIFIED_BUFFER):
        mm = map_memory(lower_app("harris", 64, 64), mem)
        for tile in mm.tiles:
            values = configure(mem["name"], tile.programs)
            assert values and all(isinstance(v, int) for v in values.values())
