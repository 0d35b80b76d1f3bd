"""Quiet unused muxes (issue 36 item 3, AHA paper §5.5): every mux no routed net uses, in a
tile that is on, selects an input that does not switch; the selects form no loop, routed
selects are unchanged and the bitstream is still proved."""
from __future__ import annotations

from itertools import pairwise

import pytest

from canal.passes import InterconnectParams, build_uniform, io_on_edges
from canal.smt import decode_selects
from cgra.config import ConfigField
from cgra.core import CoreSpec, PortSpec
from mapper.backend.bitstream import QUIET_WHAT, generate
from mapper.backend.pack import pack, stencil_netlist
from mapper.backend.pipeline import PipelineParams, pipeline
from mapper.backend.place import PlaceParams, place
from mapper.backend.power import gated_tiles
from mapper.backend.quiet import (CONSTANT, ROUTED, origins, quiet_selects, quiet_words,
                                  select_loop, used_nodes)
from mapper.backend.route import NetRoute, RoutingResult, route_design
from mapper.backend.verify import model_of, verify
from mapper.collateral import Collateral


def _no_rtl():
    raise AssertionError("quiet-mux tests never build RTL")


PE = CoreSpec("q_pe", "p", (PortSpec("data0", 16, "in"), PortSpec("res", 16, "out")),
              (ConfigField("inst", 4),), _no_rtl, {"timing_class": "pe"})

#: a net from the core of (0, 0) south to the core input of (0, 1): SB_OUT, RMUX (bypass),
#: SB_IN, connection box
NET = ["PORT:16:0:0:res", "SB:16:0:0:SOUTH:0:OUT", "RMUX:16:0:0:SOUTH:0",
       "SB:16:0:1:NORTH:0:IN", "PORT:16:0:1:data0"]


def _routing(paths: dict[str, list[str]]) -> RoutingResult:
    return RoutingResult({n: NetRoute(n, 16, (f"{n}_src", "res"), {(f"{n}_dst", "data0"): p})
                          for n, p in paths.items()}, {}, {}, 0.0, {})


@pytest.fixture(scope="module")
def grid2x2():
    """A 2x2 array of one-track 16-bit switch boxes, every register bypassable."""
    return Collateral.from_graphs(build_uniform(InterconnectParams(2, 2, tracks=1,
                                                                   widths=(16,)),
                                                lambda x, y: PE))


def test_mux_whose_input_0_carries_a_routed_net_gets_another_select(grid2x2):
    coll = grid2x2
    g = coll.graphs[16].ig
    rr = _routing({"n": NET})
    south = "SB:16:0:1:SOUTH:0:OUT"
    # its fan-in 0 is the routed SB_IN: at reset (select 0) it forwards net n
    assert g.fanin[south] == ["SB:16:0:1:NORTH:0:IN", "SB:16:0:1:EAST:0:IN",
                              "SB:16:0:1:WEST:0:IN", "PORT:16:0:1:res"]
    q = quiet_selects(coll, rr)
    # quieted: the WEST input on the array edge (no source: constant 0)
    assert q.selects[south] == 2
    assert q.selects["SB:16:0:1:EAST:0:OUT"] == 1 and q.selects["SB:16:0:1:WEST:0:OUT"] == 1
    # a routed node never gets a quiet select, nor is selected by one
    used = used_nodes(rr)
    assert not used & set(q.selects)
    for nid, sel in q.selects.items():
        fi = g.fanin[nid]
        assert sel >= len(fi) or fi[sel] not in used
    # 33 muxes of the 4 tiles (4 SB_OUT + 4 RMUX + 1 connection box each) less the 3 on
    # the route; all quieted; 6 forwarded net n before, none after
    assert q.summary() == {
        "unused_muxes": 33, "quieted": 33, "select_changed": 9, "constant": 0,
        "unquietable": 0, "forwarding_before": 6, "forwarding_after": 0,
        "carries_before": {"constant": 27, "core": 0, "loop": 0, "routed": 6},
        "carries_after": {"constant": 33, "core": 0, "loop": 0, "routed": 0}}
    assert select_loop(coll, q.selects, q.selects, used) is None
    # the words write exactly the changed selects through the config map
    words = {}
    for addr, part, _f, _v in quiet_words(coll, q.selects):
        words[addr] = words.get(addr, 0) | part
    dec = decode_selects(sorted(words.items()), model_of(coll).spots)
    assert {n: s for n, s in dec.items() if s} == q.changed
    assert len(q.changed) == 9


def test_gated_neighbour_is_a_quiet_source():
    """A 3x1 row whose switch boxes have no sourceless fan-in (the array-edge inputs
    removed): only core outputs and neighbours feed them. With every tile on, the WEST
    output of (1, 0) (fan-in: the EAST input from (2, 0), its core) cannot be quieted; with
    (2, 0) gated its input from there is a clamped 0 and it selects it."""
    ic = build_uniform(InterconnectParams(3, 1, tracks=1, widths=(16,)), lambda x, y: PE)
    g = ic.graphs[16]
    for nid, fi in g.fanin.items():
        if nid.startswith("SB:") and nid.endswith(":OUT"):
            fi[:] = [f for f in fi if g.fanin[f] or f.startswith("PORT")]
    coll = Collateral.from_graphs(ic)
    west = "SB:16:1:0:WEST:0:OUT"
    assert coll.graphs[16].ig.fanin[west] == ["SB:16:1:0:EAST:0:IN", "PORT:16:1:0:res"]
    rr = _routing({})
    on = quiet_selects(coll, rr)
    assert west in on.unquietable and west not in on.selects
    assert (on.summary()["quieted"], on.summary()["unquietable"]) == (7, 18)
    # the 3-input SB_OUTs of the middle tile: select 3 is out of range (constant 0)
    assert on.selects["SB:16:1:0:NORTH:0:OUT"] == on.selects["SB:16:1:0:SOUTH:0:OUT"] == 3
    assert on.constant == 2
    off = quiet_selects(coll, rr, [(2, 0)])
    assert off.selects[west] == 0                 # the EAST input, from the gated tile
    assert off.unquietable == ["RMUX:16:0:0:EAST:0", "RMUX:16:1:0:EAST:0",
                               "SB:16:1:0:EAST:0:OUT"]
    assert not [n for n in off.selects if ":2:0:" in n]     # the gated tile is not configured
    assert off.after == {CONSTANT: 14, "core": 3, "loop": 0, ROUTED: 0}
    assert select_loop(coll, off.selects, off.selects, gated=[(2, 0)]) is None


def test_select_loop_finds_a_loop_of_unused_muxes(grid2x2):
    """The four tiles' switch boxes set around the 2x2 ring (registers bypassed): the loop
    check finds it, and the quiet selects of the same array have none."""
    coll = grid2x2
    g = coll.graphs[16].ig
    ring = ["SB:16:0:0:EAST:0:OUT", "RMUX:16:0:0:EAST:0", "SB:16:1:0:WEST:0:IN",
            "SB:16:1:0:SOUTH:0:OUT", "RMUX:16:1:0:SOUTH:0", "SB:16:1:1:NORTH:0:IN",
            "SB:16:1:1:WEST:0:OUT", "RMUX:16:1:1:WEST:0", "SB:16:0:1:EAST:0:IN",
            "SB:16:0:1:NORTH:0:OUT", "RMUX:16:0:1:NORTH:0", "SB:16:0:0:SOUTH:0:IN"]
    sel = {b: g.fanin[b].index(a) for a, b in pairwise(ring + ring[:1])
           if len(g.fanin[b]) > 1}
    loop = select_loop(coll, sel, ["SB:16:0:0:EAST:0:OUT"])
    assert loop is not None and set(loop) == set(ring) and len(loop) == 12
    # the ring's 8 muxes, and 7 whose select-0 chain runs into it (e.g. the connection box
    # of (1, 1) reads its NORTH input, on the ring)
    assert origins(coll, _routing({}), (), sel)["loop"] == 8 + 7
    q = quiet_selects(coll, _routing({}))
    assert select_loop(coll, q.selects, q.selects) is None
    assert origins(coll, _routing({}), (), q.selects) == {CONSTANT: 36, "core": 0, "loop": 0,
                                                          ROUTED: 0}


@pytest.fixture(scope="module")
def stencil():
    """A 3x3 stencil placed, routed and pipelined on an 8x8 fabric (IO row on top, every 4th
    column MEM), as in tests/mapper/test_verify.py."""
    mem = CoreSpec("q_mem", "m", (PortSpec("data_in_0", 16, "in"),
                                  PortSpec("data_out_0", 16, "out")),
                   (ConfigField("depth", 12),), _no_rtl, {"timing_class": "mem"})
    io = CoreSpec("q_io", "I", (PortSpec("f2io_16", 16, "in"), PortSpec("io2f_16", 16, "out")),
                  (), _no_rtl, {"timing_class": "io"})
    pe = CoreSpec("q_pe2", "p", (PortSpec("data0", 16, "in"), PortSpec("data1", 16, "in"),
                                 PortSpec("res", 16, "out")),
                  (ConfigField("inst", 20), ConfigField("data0_reg_en", 1),
                   ConfigField("data1_reg_en", 1)), _no_rtl, {"timing_class": "pe"})
    core = io_on_edges(lambda x, y: mem if x % 4 == 3 else pe, io, 8, 8)
    coll = Collateral.from_graphs(build_uniform(InterconnectParams(8, 8, tracks=5,
                                                                   widths=(16,)), core))
    packed = pack(stencil_netlist("s", image_width=16), coll)
    pl = place(packed, coll, PlaceParams(seed=1))
    rr = route_design(packed, pl, coll)
    res = pipeline(packed, pl, rr, coll, PipelineParams(register_pe_inputs=True,
                                                        target_period_ps=1e6 / 900))
    return coll, pl, res


@pytest.mark.parametrize("gate", [False, True])
def test_quiet_bitstream_keeps_routed_selects_and_is_proved(stencil, gate):
    coll, pl, res = stencil
    enc = {"mem_encoder": lambda i, c, p: {}, "power_gate": gate}
    plain = generate(res.packed, pl, res.routing, coll, **enc)
    quiet = generate(res.packed, pl, res.routing, coll, quiet_unused=True, **enc)
    assert plain.quiet is None and quiet.quiet is not None
    q = quiet.quiet
    off = set(gated_tiles(coll, pl, res.routing)) if gate else set()
    s = q.summary()
    assert s["quieted"] > 0 and s["forwarding_before"] > 0 and s["forwarding_after"] == 0
    assert s["unused_muxes"] == s["quieted"] + s["unquietable"]
    assert select_loop(coll, q.selects, q.selects, used_nodes(res.routing), off) is None
    # every routed select as in the plain bitstream; the unused muxes as quieted
    spots = model_of(coll).spots
    a, b = decode_selects(plain.pairs(), spots), decode_selects(quiet.pairs(), spots)
    used = used_nodes(res.routing)
    assert all(a[n] == b[n] for n in a if n in used)
    assert {n: v for n, v in b.items() if n not in used and a[n] != v} == q.changed
    # the words of the plain bitstream are kept (quiet bits OR-ed into shared words)
    pq = dict(quiet.pairs())
    assert all(pq[addr] & d == d for addr, d in plain.pairs())
    assert any(QUIET_WHAT in e.what for e in quiet.entries)
    # a gated tile gets no quiet select
    assert not [n for n in q.selects if tuple(map(int, n.split(":")[2:4])) in off]
    assert verify(quiet.pairs(), res, coll).nets == len(res.routing.nets)
