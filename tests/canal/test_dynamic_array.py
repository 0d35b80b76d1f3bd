"""The dynamic layer inside a ready-valid array (canal.dynamic, issue 33 item 3): a router per
tile, injection from a core output, credit-controlled ejection buffers with initial tokens,
checked in Verilator on the 3x2 pass-through array of rv_array_testutil (IO row on top)."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from canal.config import tile_configs
from canal.dynamic import (DynamicLayer, DynamicNet, allocate_nets, dynamic_bitstream,
                           dynamic_of, mark_dynamic, parse_dynamic)
from canal.interconnect import Interconnect
from canal.passes import InterconnectParams, io_on_edges, uniform_graphs
from canal.ready_valid import mark_graphs, parse_flow_control
from canal.router import RouterParams, TableEntry, router_verilog
from canal.rv_array_sim import ArrayHarness, build_array_harness, run_array_harness
from canal.rv_rtl import rv_array, socket_name
from cgra.config import config_address, split_address
from cgra.errors import ConfigError, RoutingError
from garnet.params import from_dict

from rv_array_testutil import CACHE, IO, PT

LAYER = DynamicLayer(vcs=2, buffers=3, ids=16)
SOURCE = ("io2f_16", 0, 0)
SINKS = (("f2io_16", 2, 0), ("data_in", 1, 1))
N = 2000


@functools.lru_cache(maxsize=None)
def hybrid(layer: DynamicLayer = LAYER) -> Interconnect:
    """The 3x2 pass-through array, 2 tracks, 16-bit tracks ready-valid (skid), a router per
    tile."""
    graphs, *rest = uniform_graphs(InterconnectParams(3, 2, tracks=2, widths=(16, 1)),
                                   io_on_edges(lambda x, y: PT, IO, 3, 2))
    mark_graphs(graphs, parse_flow_control({"16": "ready_valid"}, "skid", [16, 1]))
    mark_dynamic(graphs, layer)
    return Interconnect(graphs, *rest)


@functools.lru_cache(maxsize=None)
def harness(layer: DynamicLayer = LAYER) -> ArrayHarness:
    return build_array_harness(rv_array(hybrid(layer)), socket_name(*SOURCE),
                               tuple(socket_name(*s) for s in SINKS), CACHE)


def bits(nets, layer: DynamicLayer = LAYER) -> list[tuple[int, int]]:
    ic = hybrid(layer)
    return dynamic_bitstream(ic.configs, ic.tiles, ic.size, layer, nets)


def test_config_map_of_a_hybrid_tile():
    """Routing tables at features 1..5 (16 registers each, held by the router), then the
    injection / ejection feature ``dyn``; the routers' table feature base is 1 in every tile."""
    cfg = hybrid().configs
    io, pe = cfg[(0, 0)], cfg[(1, 1)]
    for tc in (io, pe):
        assert [(f.index, f.name, f.words) for f in tc.features[1:7]] == [
            (1, "rt0", 16), (2, "rt1", 16), (3, "rt2", 16), (4, "rt3", 16), (5, "rt4", 16),
            (6, "dyn", 0)]
    assert [f.name for f in io.feature("dyn").fields] == [
        "inj_en", "inj_sel", "inj_vc", "inj_id", "f2io_16_dyn", "f2io_16_dvc", "ej0_tok",
        "ej1_tok"]
    assert [(f.name, f.width) for f in pe.feature("dyn").fields] == [
        ("inj_en", 1), ("inj_sel", 1), ("inj_vc", 1), ("inj_id", 4), ("data_in_dyn", 1),
        ("data_in_dvc", 1), ("ej0_tok", 6), ("ej1_tok", 6)]
    assert LAYER.router.feature_base == 1 and LAYER.router.eject_credits
    assert dynamic_of(hybrid().graphs) == LAYER


def test_static_arrays_have_no_router_features():
    graphs, *_ = uniform_graphs(InterconnectParams(3, 2, tracks=2, widths=(16, 1)),
                                io_on_edges(lambda x, y: PT, IO, 3, 2))
    mark_graphs(graphs, parse_flow_control({"16": "ready_valid"}, "skid", [16, 1]))
    assert dynamic_of(graphs) is None
    assert [f.name for f in tile_configs(graphs)[(1, 1)].features][:2] == ["core", "sb16"]


def test_bitstream_of_a_broadcast_net():
    """Flow 3 from IO (0, 0) to IO (2, 0) (2 tokens) and PE (1, 1): XY routes (0,0) -> (1,0),
    which duplicates to E and S, then eject at (2, 0) and (1, 1); the words are the tables of
    the three routers on the tree plus the dyn fields of the three tiles."""
    words = dict(bits([DynamicNet(3, (0, 0, "io2f_16"), ((2, 0, "f2io_16", 2),
                                                         (1, 1, "data_in", 0)))]))
    p = LAYER.router
    tables = {split_address(a)[2:] + (split_address(a)[1] - 1,): TableEntry.decode(d, p)
              for a, d in words.items() if 1 <= split_address(a)[1] <= 5}
    assert {k: sorted(o.name for o in e.ports) for k, e in tables.items()} == {
        (0, 0, 4): ["E"], (1, 0, 3): ["E", "S"], (2, 0, 3): ["L"], (1, 1, 0): ["L"]}
    assert all(split_address(a)[0] == 3 for a in words if 1 <= split_address(a)[1] <= 5)
    io = hybrid().configs[(0, 0)].feature("dyn")
    assert words[config_address(0, 6, 0, 0)] == 1 | 0 << 1 | 0 << 2 | 3 << 3   # inj
    # tile (2, 0): f2io_16_dyn = 1, its VC 0, ej0_tok = 2
    f = {s.name: s for s in hybrid().configs[(2, 0)].feature("dyn").slices}
    got = words[config_address(0, 6, 2, 0)]
    assert (got >> f["f2io_16_dyn"].lo) & 1 == 1
    assert (got >> f["ej0_tok"].lo) & 63 == 2
    assert io.index == 6


@pytest.mark.parametrize("p", [0.0, 0.3])
def test_broadcast_through_the_routers_delivers_every_word_once_in_order(p, tmp_path):
    """2000 random words from the IO socket of (0, 0) through the routers to the IO socket of
    (2, 0) (after its 2 initial tokens, 0) and the PE socket of (1, 1), with and without
    random source stalls and sink backpressure: no loss, duplication or reordering. The
    divergence router (1, 0) sends a copy per output per cycle (thesis ch. 3.3.2), so
    without stalls the broadcast moves 1 word per 2 cycles."""
    words = np.random.default_rng(7).integers(0, 1 << 16, N)
    bs = bits([DynamicNet(3, (0, 0, "io2f_16"), ((2, 0, "f2io_16", 2), (1, 1, "data_in", 0)))])
    tr = run_array_harness(harness(), bs, words, 5, p, p, 20 * N, tmp_path)
    assert np.array_equal(tr.sent[:, 1], words)
    first, second = tr.received
    assert np.array_equal(first[:, 1], np.concatenate([[0, 0], words]))
    assert np.array_equal(second[:, 1], words)
    assert (second[:, 0] > tr.sent[:, 0]).all()
    if p == 0.0:
        # 1 + 2 cycles per hop at zero load (canal.router): inject at 0, eject at (1, 1)
        # 2 hops later, then the ejection buffer: the first word at cycle 7 or 8
        assert second[0, 0] in (7, 8) and first[2, 0] in (7, 8)
        assert (second[-1, 0] - second[0, 0]) == pytest.approx(2 * (N - 1), abs=2)


def test_unicast_through_the_routers_moves_one_word_per_cycle(tmp_path):
    """A unicast flow (no divergence) sustains one word per cycle: 3 buffers per VC cover the
    3-cycle credit round trip (thesis: "3 entries to avoid credit stalls"), the ejection
    buffer's too; the other sink sees nothing."""
    words = np.random.default_rng(3).integers(0, 1 << 16, N)
    bs = bits([DynamicNet(0, (0, 0, "io2f_16"), ((1, 1, "data_in", 0),))])
    tr = run_array_harness(harness(), bs, words, 1, 0.0, 0.0, 4 * N, tmp_path)
    first, second = tr.received
    assert first.shape == (0, 2)
    assert np.array_equal(second[:, 1], words)
    assert second[-1, 0] - second[0, 0] == N - 1


def test_words_wider_than_a_flit_cross_as_several_flits(tmp_path):
    """flit_width 6: a 16-bit word is 3 flits (the last padded), LSB part first, reassembled at
    each ejection: the broadcast of the test above delivers every word once, in order, after
    the token, under stalls; a unicast moves one flit per cycle, so 1 word per 3 cycles
    without stalls. (8-bit flits run end to end in tests/e2e/test_hybrid.py.)"""
    layer = DynamicLayer(vcs=2, buffers=3, ids=16, flit_width=6)
    assert layer.flits == 3 and layer.router.flit_width == 6
    words = np.random.default_rng(11).integers(0, 1 << 16, 600)
    net = DynamicNet(3, (0, 0, "io2f_16"), ((2, 0, "f2io_16", 1), (1, 1, "data_in", 0)))
    tr = run_array_harness(harness(layer), bits([net], layer), words, 2, 0.3, 0.3, 40 * 600,
                           tmp_path / "bc")
    first, second = tr.received
    assert np.array_equal(first[:, 1], np.concatenate([[0], words]))
    assert np.array_equal(second[:, 1], words)
    uni = DynamicNet(0, (0, 0, "io2f_16"), ((1, 1, "data_in", 0),))
    tr = run_array_harness(harness(layer), bits([uni], layer), words, 1, 0.0, 0.0, 10 * 600,
                           tmp_path / "uni")
    got = tr.received[1]
    assert np.array_equal(got[:, 1], words)
    assert got[-1, 0] - got[0, 0] == 3 * (len(words) - 1)


def test_allocation_refusals_name_the_tile_the_link_and_the_tokens():
    ic = hybrid()
    a = DynamicNet(0, (0, 0, "io2f_16"), ((2, 0, "f2io_16", 0),))
    with pytest.raises(RoutingError, match=r"tile \(0, 0\) injects dynamic nets 0 and 1"):
        allocate_nets(ic.size, LAYER, [a, DynamicNet(1, (0, 0, "io2f_16"),
                                                     ((1, 1, "data_in", 0),))])
    # three flows ejected at (2, 0) with 2 VCs
    three = [DynamicNet(k, (x, 0, "io2f_16") if x < 2 else (1, 1, "data_out"),
                        ((2, 0, "f2io_16", 0),)) for k, x in enumerate((0, 1, 2))]
    with pytest.raises(RoutingError, match=r"link eject \(2, 0\) carries 3 logical routes "
                                           r"but the router has 2 VC"):
        allocate_nets(ic.size, LAYER, three)
    with pytest.raises(ConfigError, match="64 initial tokens .* at most 63"):
        bits([DynamicNet(0, (0, 0, "io2f_16"), ((2, 0, "f2io_16", 64),))])
    with pytest.raises(ConfigError, match="'data_out' of tile \\(1, 1\\) is not a 16-bit core "
                                          "input"):
        bits([DynamicNet(0, (0, 0, "io2f_16"), ((1, 1, "data_out", 0),))])


@pytest.mark.parametrize("doc, needle", [
    ({"dynamic": {"vcs": 2}}, "tracks are static; set flow_control"),
    ({"dynamic": {"vcs": 2, "depth": 3}, "flow_control": "ready_valid"},
     "field 'dynamic.depth' is unknown"),
    ({"dynamic": {"vcs": 0}, "flow_control": "ready_valid"}, "RouterParams.vcs=0 must be >= 1"),
    ({"dynamic": {"width": 8}, "flow_control": "ready_valid"}, "not a track class"),
    ({"dynamic": 3, "flow_control": "ready_valid"}, "expected a table"),
    ({"dynamic": {"flit_width": 17}, "flow_control": "ready_valid"},
     "flit_width=17 must be in 1..16"),
])
def test_toml_field_refusals(doc, needle):
    with pytest.raises(ConfigError, match=needle):
        from_dict({"width": 4, "height": 3, **doc}, "x.toml")


def test_parse_dynamic_defaults_and_absence():
    assert parse_dynamic(None, [16, 1]) is None
    assert parse_dynamic({}, [16, 1]) == DynamicLayer()
    assert parse_dynamic({"vcs": 4}, [16, 1]).router.vcs == 4


def test_router_eject_credits_port_only_with_the_option():
    """The mesh router (eject_credits off) is unchanged in interface; the hybrid tile's
    router has the per-VC ejection credit input."""
    assert "ej_credit" not in router_verilog(RouterParams())
    assert "input [1:0] ej_credit" in router_verilog(LAYER.router)
