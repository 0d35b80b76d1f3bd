"""Ready-valid interconnect in the generated array (issue 33, item 1): the TOML choice, FIFO
sites in the routing-graph collateral, the config map and bitstream, and a Verilator run of
a 3x2 ready-valid array (IO row + pass-through row, 2 tracks, 16-bit ready-valid, 1-bit
static) moving words from one IO socket to two sinks (a multicast net) under random source
stalls and sink backpressure."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hwtypes import Bit
from hwtypes import BitVector as BV

from canal.collateral import from_json, from_text, to_json, to_text
from canal.config import tile_configs
from canal.ready_valid import (FlowControl, fifo_sites, flow_of, parse_flow_control,
                               rv_bitstream, rv_field, split_fifo_ends)
from canal.rtl import tile_shapes
from canal.rv_array_sim import run_array_harness
from canal.rv_rtl import rv_array
from canal.rv_smt import prove_rv_net
from canal.timing_paths import tile_path_classes
from cgra.config import config_address
from cgra.errors import ConfigError, RoutingError
from garnet.build import generate
from garnet.params import GarnetParams, from_dict
from peak.assembler import assembler
from peak.examples.cgra_pe import ALU, Cond, Inst, Mode

from rv_array_testutil import (array, core_harness, core_routes, harness, mc_array, mc_sinks,
                               multicast_route, pe_array, pe_array_all_rv, static_graphs,
                               two_output_harness, two_output_routes, with_fifos)

N_WORDS = 3000


def test_parse_flow_control_string_and_table():
    assert parse_flow_control("static", "skid", [16, 1]) == FlowControl(((16, "static"),
                                                                         (1, "static")))
    assert parse_flow_control("ready_valid", "split", [16, 1]).kinds == ((16, "split"),
                                                                         (1, "split"))
    fc = parse_flow_control({"16": "ready_valid"}, {"16": "split"}, [1, 16])
    assert fc.kinds == ((16, "split"), (1, "static")) and fc.ready_valid


@pytest.mark.parametrize("flow, fifo, needle", [
    ("elastic", "skid", "field 'flow_control' = 'elastic'"),
    ("ready_valid", "deep", "field 'fifo_kind' = 'deep'"),
    ({"8": "ready_valid"}, "skid", "field 'flow_control' key '8'"),
    ({"16": "fast"}, "skid", "field 'flow_control' [16] = 'fast'"),
    (3, "skid", "field 'flow_control' = 3"),
])
def test_parse_flow_control_refuses(flow, fifo, needle):
    with pytest.raises(ConfigError) as e:
        parse_flow_control(flow, fifo, [16, 1], "my.toml")
    msg = str(e.value)
    assert msg.startswith("my.toml: ") and needle in msg and "\n" not in msg


def test_garnet_params_field_and_cgra_rtl_refuses_split(tmp_path):
    p = from_dict({"width": 4, "height": 3, "flow_control": {16: "ready_valid"},
                   "fifo_kind": "split", "timing": "cascade-table"}, "rv.toml")
    assert p.flow_control == {"16": "ready_valid"} and p.fifo_kind == "split"
    with pytest.raises(ConfigError, match=r"rv.toml: field 'flow_control' = \['ready_valid'\]"):
        from_dict({"width": 4, "height": 3, "flow_control": ["ready_valid"]}, "rv.toml")
    assert GarnetParams().flow_control == "static"
    with pytest.raises(ConfigError, match="rv.toml: field 'fifo_kind' = 'split': `cgra rtl` "
                       "builds ready-valid arrays with skid FIFOs only"):
        generate(p, tmp_path / "out", rules=False, config_file="rv.toml")
    assert not (tmp_path / "out").exists()


def test_a_ready_valid_array_takes_the_measured_model_by_default():
    """The measured model (the default) times ready-valid arrays, every width ready-valid or
    a per-width table whose static widths are plain mux instances in the RvTiles."""
    for flow in ("ready_valid", {"16": "ready_valid"}):
        p = from_dict({"width": 4, "height": 3, "flow_control": flow}, "rv.toml")
        assert p.timing == "measured" and p.measured_timing


def test_a_static_width_in_a_ready_valid_tile_is_a_mux_instance():
    """canal.rv_rtl gives a static width of a ready-valid tile one plain mux instance per
    node (canal.flow_control.plain_mux, the static tile's ports), so the measured model
    times it like a static tile: the 1-bit classes of the mixed 3x2 PE array's tile (1, 1)
    are the static enumeration's (mux input pins, the RMUX for the register), and each pin
    exists in the generated Verilog."""
    ic = pe_array()
    shape = tile_shapes(ic)[(1, 1)]
    classes = {c.key: c for c in tile_path_classes(shape, "pe", frozenset({16}), True)}
    static = {c.key: c for c in tile_path_classes(shape, "pe")}
    one_bit = [k for k in classes if k.startswith("sb:pe:1:")]
    assert len(one_bit) == 12 and all(classes[k] == static[k] for k in one_bit)
    assert not any(k == "ready:pe:1" for k in classes) and "ready:pe:16" in classes
    arr = rv_array(ic)
    tile = next(mod for mod in arr.modules if mod.name == arr.tile_modules[(1, 1)])
    muxes = {mod.name: mod.text for mod in arr.modules if mod.name.startswith("RvPlainMux_")}
    assert muxes and all("output O" in t for t in muxes.values())
    for k in one_bit:
        for pin in classes[k].throughs:
            inst, port = pin.split("/")
            line = next(ln for ln in tile.text.splitlines() if f" {inst} (" in ln)
            assert line.lstrip().startswith("RvPlainMux_") and f".{port}(" in line
    regs = [t for t in classes["reg"].throughs if "_B1/" in t]
    assert regs and all(t.startswith("mux_RMUX_") for t in regs)


def test_ready_valid_path_classes_follow_valid_ready_and_the_fifo_sites():
    """canal.timing_paths on the wrapped PE tile (1, 1) of a 3x2 all-ready-valid array
    (2 tracks): each switch-box class also starts at the SB_IN's valid and passes the mux's
    valid input; the register class starts at the FIFO instances and passes their outputs;
    one ready class per width through the SB_OUT muxes' ready outputs; the ready chain
    through the wrapped core enters the connection boxes' ready inputs; none of these on the
    static tile of the same shape, and no ready_core class without a wrapped core."""
    ic = pe_array_all_rv()
    shape = tile_shapes(ic)[(1, 1)]
    rv = {c.key: c for c in tile_path_classes(shape, "pe", frozenset({16, 1}), True)}
    en = rv["sb:pe:16:E->N"]
    assert en.starts == ("SB_T0_EAST_SB_IN_B16", "SB_T0_EAST_SB_IN_B16_valid",
                         "SB_T1_EAST_SB_IN_B16", "SB_T1_EAST_SB_IN_B16_valid")
    assert en.throughs == ("mux_SB_T0_NORTH_SB_OUT_B16/I1",
                           "mux_SB_T0_NORTH_SB_OUT_B16/valid_in1",
                           "mux_SB_T1_NORTH_SB_OUT_B16/I1",
                           "mux_SB_T1_NORTH_SB_OUT_B16/valid_in1")
    assert en.edges == 2                      # the Canal edges, not the valid pins
    reg = rv["reg"]
    assert len(reg.starts) == 16 and all(s.startswith("fifo_REG_") for s in reg.starts)
    assert set(reg.throughs) == {f"{s}/{pin}" for s in reg.starts for pin in ("O", "valid_out")}
    assert reg.edges == 16
    for w in (16, 1):
        ready = rv[f"ready:pe:{w}"]
        assert ready.kind == "ready" and len(ready.starts) == 8
        assert all(s.endswith(f"_SB_OUT_B{w}_ready") for s in ready.starts)
        assert len(ready.throughs) == 24 and all("/ready_out" in t for t in ready.throughs)
    core = rv["ready_core:pe"]
    assert all(t.startswith("mux_PORT_") and t.endswith("/ready_in") for t in core.throughs)
    assert core.edges == len(core.throughs) == 5
    static = {c.key for c in tile_path_classes(shape, "pe")}
    assert static == {k for k in rv if not k.startswith("ready")}
    unwrapped = {c.key for c in tile_path_classes(shape, "pe", frozenset({16, 1}))}
    assert unwrapped == set(rv) - {"ready_core:pe"}


def test_fifo_sites_in_collateral_round_trip():
    ic = array("skid")
    g16, g1 = ic.graphs[16], ic.graphs[1]
    sites = fifo_sites(g16)
    # 3x2 tiles x 4 sides x 2 tracks, every site bypassable, 2 words each
    assert len(sites) == 48 and {(s.kind, s.depth, s.bypassable) for s in sites} == {
        ("skid", 2, True)}
    assert sites[0].reg == "REG:16:0:0:NORTH:0" and sites[0].rmux == "RMUX:16:0:0:NORTH:0"
    assert fifo_sites(g1) == [] and "flow_control" not in g1.params
    assert g16.params["flow_control"] == {"mode": "ready_valid", "fifo": "skid",
                                          "site_depth": 2}
    back_json = from_json(json.loads(json.dumps(to_json(g16))))
    back_text = from_text(to_text(g16))
    assert fifo_sites(back_json) == sites == fifo_sites(back_text)
    assert flow_of({16: back_json, 1: g1}).kinds == ((16, "skid"), (1, "static"))


def test_config_map_rv_fields():
    skid, split = array("skid"), array("split")
    f_skid = {f.name: f for f in skid.configs[(1, 1)].features}
    f_split = {f.name: f for f in split.configs[(1, 1)].features}
    # the static map plus one rv16 feature: valid enables of 8 SB_OUTs + 1 connection box
    assert [f.name for f in skid.configs[(1, 1)].features] == [
        "core", "sb16", "cb_data_in", "rv16", "sb1", "cb_bit_in", "pg"]
    assert len(f_skid["rv16"].fields) == 9
    assert f_skid["rv16"].fields[0].name == "SB_T0_NORTH_SB_OUT_B16_en"
    assert f_skid["rv16"].fields[-1].name == "PORT_data_in_en"
    # split adds one start/end bit per site (8 per tile)
    ends = [f.name for f in f_split["rv16"].fields if f.name.endswith("_end")]
    assert len(ends) == 8 and ends[0] == "REG_T0_NORTH_B16_end"
    # the selects are where the static map of the unmarked graphs puts them
    static = tile_configs(static_graphs())
    nf, snf = skid.configs[(1, 1)].node_field, static[(1, 1)].node_field
    assert {k: v[1] for k, v in nf.items()} == {k: v[1] for k, v in snf.items()}
    assert {k: v for k, v in nf.items() if ":16:" in k} == {
        k: v for k, v in snf.items() if ":16:" in k}        # the 1-bit features move by one
    assert split.configs[(1, 1)].node_field == nf
    assert [f.name for f in static[(1, 1)].features] == [
        "core", "sb16", "cb_data_in", "sb1", "cb_bit_in", "pg"]
    assert f_skid["sb16"].slices == f_split["sb16"].slices == static[(1, 1)].features[1].slices


def test_split_ends_alternate_and_odd_refused():
    ic = array("split")
    g = ic.graphs[16]
    paths = multicast_route(g)
    ends = split_fifo_ends(ic.graphs, {"n": paths})
    # shared first site is a start half; each branch's next site is its end half
    assert ends == {"REG:16:0:0:EAST:0": 0, "REG:16:1:0:EAST:0": 1, "REG:16:1:0:SOUTH:1": 1}
    bare = [[n for n in p if not n.startswith("REG:")] for p in paths]
    odd = with_fifos(g, bare[0], lambda k: k == 0)
    with pytest.raises(RoutingError, match="net n: the path to PORT:16:2:0:f2io_16 crosses 1 "
                                           "enabled split FIFO sites"):
        split_fifo_ends(ic.graphs, {"n": [odd]})


def _run(kind: str, p_src: float, p_sink: float, seed: int, tmp_path):
    ic = mc_array(kind)
    paths = multicast_route(ic.graphs[16], mc_sinks(kind))
    bits = rv_bitstream(ic, {"n": paths})
    words = np.random.default_rng(seed).integers(0, 1 << 16, N_WORDS)
    tr = run_array_harness(harness(kind), bits, words, seed, p_src, p_sink, 4 * N_WORDS,
                           tmp_path / f"{kind}_{seed}")
    return words, tr


@pytest.mark.parametrize("kind, latency", [("skid", (2, 1)), ("split", (1, 1))])
def test_rv_array_full_throughput(kind, latency, tmp_path):
    """No stalls: every sink takes one word per cycle. skid (garnet's array, PEs wrapped):
    IO (0, 0) -> IO (2, 0) through 2 mandatory EAST sites and -> IO (1, 0) through 1, 1
    cycle per site; split (pass-through array): IO (0, 0) -> IO (2, 0) and -> PE socket
    (1, 1), one start/end pair each, 1 cycle per pair."""
    words, tr = _run(kind, 0.0, 0.0, 1, tmp_path)
    assert tr.sent.shape == (N_WORDS, 2)
    assert tr.sent[-1, 0] - tr.sent[0, 0] == N_WORDS - 1
    for recv, lat in zip(tr.received[:2], latency, strict=True):
        assert np.array_equal(recv[:, 1], words)
        assert np.array_equal(recv[:, 0], tr.sent[:, 0] + lat)
    if kind == "split":
        assert tr.received[2].shape == (0, 2)      # the idle socket never sees a valid


@pytest.mark.parametrize("kind", ["skid", "split"])
def test_rv_array_random_stalls(kind, tmp_path):
    """Source stalls and independent sink backpressure (p = 0.3 each): every word reaches
    both sinks exactly once and in order; the source moves on only when both took it."""
    words, tr = _run(kind, 0.3, 0.3, 5, tmp_path)
    assert np.array_equal(tr.sent[:, 1], words)
    for recv in tr.received[:2]:
        assert np.array_equal(recv[:, 1], words)
        assert (recv[:, 0] > tr.sent[:, 0]).all()      # taken after it was sent
    last = max(int(r[-1, 0]) for r in tr.received[:2])
    assert N_WORDS / (last + 1) > 0.45          # stalls absorbed by the FIFOs


def test_rv_array_one_module_per_tile_kind():
    arr = rv_array(array("skid"))
    names = [m.name for m in arr.modules]
    assert len(names) == len(set(names))
    assert len(set(arr.tile_modules.values())) == len(
        {v for v in arr.tile_modules.values()})
    assert {n.split("_")[1] for n in names if n.startswith("RvTile_")} == {"io", "passthru"}
    assert sum(1 for s in arr.sockets if s[5]) == 6 * 2   # 16-bit sockets: 2 per tile


@pytest.mark.parametrize("kind", ["skid", "split"])
def test_smt_valid_ready_connectivity(kind):
    ic = array(kind)
    paths = multicast_route(ic.graphs[16])
    res = prove_rv_net(ic.graphs, ic.configs, rv_bitstream(ic, {"n": paths}), "n", paths)
    assert res.ok and res.violations == []
    # cut at the two enabled sites of each path: 4 segments, the first site feeds the fork
    assert res.segments == [
        ("PORT:16:0:0:io2f_16", ("SB:16:0:0:EAST:0:OUT",)),
        ("RMUX:16:0:0:EAST:0", ("SB:16:1:0:EAST:0:OUT", "SB:16:1:0:SOUTH:1:OUT")),
        ("RMUX:16:1:0:EAST:0", ("PORT:16:2:0:f2io_16",)),
        ("RMUX:16:1:0:SOUTH:1", ("PORT:16:1:1:data_in",))]


def test_smt_multicast_ready_is_and_and_missing_enable_caught():
    ic = array("skid")
    paths = [[n for n in p if not n.startswith("REG:")] for p in multicast_route(ic.graphs[16])]
    bits = rv_bitstream(ic, {"n": paths})
    res = prove_rv_net(ic.graphs, ic.configs, bits, "n", paths)
    assert res.ok and res.segments == [("PORT:16:0:0:io2f_16", (
        "PORT:16:2:0:f2io_16", "PORT:16:1:1:data_in"))]
    # clear the valid enable of the PE's connection box: the data still arrives, the valid
    # and the multicast ready do not
    node = ic.graphs[16].nodes["PORT:16:1:1:data_in"]
    tc = ic.configs[(1, 1)]
    fidx, fname = rv_field(tc, node, "PORT_data_in_en")
    spot = next(s for s in tc.features[fidx].slices if s.name == fname)
    addr = config_address(spot.reg, fidx, 1, 1)
    broken = [(a, d & ~(1 << spot.lo) if a == addr else d) for a, d in bits]
    bad = prove_rv_net(ic.graphs, ic.configs, broken, "n", paths)
    assert not bad.ok
    assert bad.violations == [
        "net n: segment PORT:16:0:0:io2f_16: valid at PORT:16:1:1:data_in fails",
        "net n: segment PORT:16:0:0:io2f_16: ready = AND of 2 endpoint(s) fails"]


@pytest.mark.parametrize("mode", [Mode.BYPASS, Mode.DELAY])
def test_wrapped_pe_fires_on_handshake(mode, tmp_path):
    """Item 2 on the PEak PE (generated wrapper, no edit of the spec): IO (0, 0) -> PE (1, 1)
    ``data0`` -> ``res`` -> IO (2, 0), both nets through 2 skid sites, the PE adding the
    constant 7 (``data1`` in CONST mode: not routed, so not a used input). BYPASS: each
    word + 7, in order, one per cycle without stalls, latency 2 + 2 cycles (the wrapper adds
    none: the PE's output is combinational from the words at its inputs). DELAY (``data0`` through the PE's input register, which advances
    only when the PE fires): one token of delay, the sink gets 0 + 7 and then each word
    + 7. With source and sink stalls (0.3) the same streams."""
    ic = pe_array()
    inst = assembler(Inst).encode(Inst(
        alu=ALU.Add, signed=Bit(0), cond=Cond.Z, lut=BV[8](0), data0_mode=mode,
        data0_const=BV[16](0), data1_mode=Mode.CONST, data1_const=BV[16](7),
        bit0_mode=Mode.BYPASS, bit0_const=Bit(0), bit1_mode=Mode.BYPASS, bit1_const=Bit(0),
        bit2_mode=Mode.BYPASS, bit2_const=Bit(0)))
    bits = rv_bitstream(ic, core_routes(ic.graphs[16])) + ic.core_bitstream(1, 1,
                                                                             {"inst": inst})
    words = np.random.default_rng(2).integers(0, 1 << 16, 2000)
    seen = np.concatenate([[0], words[:-1]]) if mode == Mode.DELAY else words
    expect = (seen + 7) & 0xFFFF
    for p_stall in (0.0, 0.3):
        tr = run_array_harness(core_harness(), bits, words, 4, p_stall, p_stall, 8000,
                               tmp_path / f"{p_stall}")
        recv = tr.received[0]
        assert np.array_equal(recv[:, 1], expect)
        assert tr.received[1].shape == (0, 2)      # IO (1, 0): no route, never valid
        if p_stall == 0.0:
            assert recv[-1, 0] - recv[0, 0] == 1999            # one word per cycle
            assert recv[0, 0] - tr.sent[0, 0] == 4


def test_wrapped_pe_with_two_outputs_sends_each_token_once_to_each(tmp_path):
    """The wrapper's eager fork over a core's outputs: the PE of (1, 1) adds 7 to each word
    of ``data0`` and drives ``res`` (16 bits, to IO (2, 0)) and ``res_p`` (condition N: bit
    15 of the sum, on the ready-valid 1-bit tracks, to IO (1, 0)); the two sinks stall
    independently, so one output is often taken cycles before the other. Each sink gets
    every token exactly once and in order, and the PE fires once per input word (its sum
    and flag always belong to the same word); without stalls both move one word per
    cycle."""
    ic = pe_array_all_rv()
    inst = assembler(Inst).encode(Inst(
        alu=ALU.Add, signed=Bit(0), cond=Cond.N, lut=BV[8](0), data0_mode=Mode.BYPASS,
        data0_const=BV[16](0), data1_mode=Mode.CONST, data1_const=BV[16](7),
        bit0_mode=Mode.BYPASS, bit0_const=Bit(0), bit1_mode=Mode.BYPASS, bit1_const=Bit(0),
        bit2_mode=Mode.BYPASS, bit2_const=Bit(0)))
    bits = rv_bitstream(ic, two_output_routes(ic)) + ic.core_bitstream(1, 1, {"inst": inst})
    words = np.random.default_rng(3).integers(0, 1 << 16, 2000)
    total = (words + 7) & 0xFFFF
    for p_stall, seed in ((0.0, 1), (0.3, 4), (0.5, 9)):
        tr = run_array_harness(two_output_harness(), bits, words, seed, p_stall, p_stall,
                               12000, tmp_path / f"{p_stall}")
        res, flag = tr.received
        assert np.array_equal(res[:, 1], total)
        assert np.array_equal(flag[:, 1], total >> 15)
        assert np.array_equal(tr.sent[:, 1], words)
        if p_stall == 0.0:
            assert res[-1, 0] - res[0, 0] == flag[-1, 0] - flag[0, 0] == 1999
        else:
            # the outputs of one fire were taken in different cycles at least once
            assert (res[:, 0] != flag[:, 0]).any()
