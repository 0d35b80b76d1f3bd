"""Long wires (issue 39 item 3): staggered segments of ``track_length`` tiles
(:func:`canal.passes.segment_tracks`) on a 6x6 array of IO columns and pass-through cores,
5 Imran tracks: where the tracks pass through, what drives them, what taps them, their delay,
and that every core output still reaches every core input."""
from __future__ import annotations

import json

import networkx as nx
import pytest
from canal_testutil import PT_CORE, io_west_east
from hypothesis import given, settings
from hypothesis import strategies as st

from canal.collateral import class_representatives, from_json, from_text, to_json, to_text
from canal.graph import IO, NodeKind, Side
from canal.passes import (InterconnectParams, add_switch_boxes, build_graph, build_tiles,
                          build_uniform, connect_core_ports, empty_graph,
                          insert_pipeline_registers, is_pass_through, segment_tracks,
                          track_breaks, wire_tracks)
from canal.rtl import tile_shapes
from canal.timing import TimingModel, default_table_text
from canal.timing_paths import tile_path_classes
from cgra.errors import ConfigError, SpecError
from garnet.array import build_interconnect
from garnet.params import GarnetParams, validate

N, S, E, W = Side.NORTH, Side.SOUTH, Side.EAST, Side.WEST


@pytest.fixture(scope="module")
def ic_l2():
    return build_uniform(InterconnectParams(6, 6, tracks=5, track_length=2),
                         io_west_east(6, 6))


@pytest.fixture(scope="module")
def ic_l4():
    return build_uniform(InterconnectParams(6, 6, tracks=5, track_length=4),
                         io_west_east(6, 6))


def _pass_outs(g) -> set[str]:
    return {nid for nid, n in g.nodes.items() if n.kind is NodeKind.SB
            and n.io is IO.SB_OUT and len(g.fanin[nid]) == 1}


def test_break_rule_known_answers():
    b = (0, 0, 5, 5)
    # horizontal track t breaks where (x + t) % L == 0, vertical where (y + t) % L == 0
    assert track_breaks(2, 3, E, 0, 2, b) and not track_breaks(2, 3, E, 1, 2, b)
    assert track_breaks(2, 3, N, 1, 2, b) and not track_breaks(2, 3, S, 0, 2, b)
    assert track_breaks(1, 1, W, 3, 4, b) and not track_breaks(1, 1, W, 1, 4, b)
    # the array's first and last column (row) break every horizontal (vertical) track
    assert track_breaks(0, 3, E, 1, 2, b) and track_breaks(5, 3, W, 2, 4, b)
    assert track_breaks(2, 0, S, 1, 2, b) and not track_breaks(0, 3, S, 0, 2, b)
    assert all(track_breaks(3, 3, s, t, 1, b) for s in Side for t in range(5))


def test_pass_through_sb_outs(ic_l2, ic_l4):
    """Exactly the non-breaking SB_OUTs are pass-throughs: fan-in 1 (the SB_IN of the
    opposite side, same track), no core output, no pipeline register, no select field."""
    for ic, L in ((ic_l2, 2), (ic_l4, 4)):
        for g in ic.graphs.values():
            w = g.width
            expected = {f"SB:{w}:{x}:{y}:{s.name}:{t}:OUT" for (x, y) in g.tiles for s in Side
                        for t in range(5) if not track_breaks(x, y, s, t, L, (0, 0, 5, 5))}
            assert _pass_outs(g) == expected
            for nid in expected:
                n = g.nodes[nid]
                assert g.fanin[nid] == [f"SB:{w}:{n.x}:{n.y}:{n.side.opposite.name}:"
                                        f"{n.track}:IN"]
                assert is_pass_through(g, n.x, n.y, n.side, n.track)
                assert f"REG:{w}:{n.x}:{n.y}:{n.side.name}:{n.track}" not in g.nodes
    # 6x6, L = 2: interior columns 1, 3 pass 3 tracks, 2, 4 pass 2 -> 10 per row and side;
    # x 2 horizontal sides x 6 rows, the same vertically
    assert len(_pass_outs(ic_l2.graphs[16])) == 2 * (2 * 6 * 10)
    # L = 4: column 1 passes 4 tracks (only 3 breaks), 2: 4, 3: 4, 4: 3 (0 and 4 break)
    assert len(_pass_outs(ic_l4.graphs[16])) == 2 * (2 * 6 * 15)
    g = ic_l2.graphs[16]
    assert g.fanin["SB:16:2:3:EAST:1:OUT"] == ["SB:16:2:3:WEST:1:IN"]
    # a breaking SB_OUT is a mux driven by turns and the core (and registered)
    brk = g.fanin["SB:16:2:3:EAST:0:OUT"]
    assert len(brk) > 1 and brk[-1] == "PORT:16:2:3:data_out"
    assert "REG:16:2:3:EAST:0" in g.nodes
    # no config field for a pass-through (a 1-input mux is a wire)
    cfg = ic_l2.configs[(2, 3)]
    assert "SB:16:2:3:EAST:1:OUT" not in cfg.node_field
    assert "SB:16:2:3:EAST:0:OUT" in cfg.node_field


def test_segment_spans_l_tiles_and_is_tapped(ic_l4):
    """Track 3 eastbound in row 2 starts at x = 1 ((1 + 3) % 4 == 0) and passes x = 2, 3, 4:
    every tile it spans reads it through its connection box; it turns at every tile into
    breaking tracks only."""
    g = ic_l4.graphs[16]
    assert len(g.fanin["SB:16:1:2:EAST:3:OUT"]) > 1                   # the driver
    assert g.fanin["SB:16:2:2:WEST:3:IN"] == ["RMUX:16:1:2:EAST:3"]
    for x in (2, 3, 4):
        assert g.fanin[f"SB:16:{x}:2:EAST:3:OUT"] == [f"SB:16:{x}:2:WEST:3:IN"]
        assert f"SB:16:{x}:2:WEST:3:IN" in g.fanin[f"PORT:16:{x}:2:data_in"]   # the tap
    assert g.fanin["SB:16:3:2:WEST:3:IN"] == ["SB:16:2:2:EAST:3:OUT"]  # wire, no register
    fan = g.fanout()
    for x in (2, 3, 4):
        for sink in fan[f"SB:16:{x}:2:WEST:3:IN"]:
            n = g.nodes[sink]
            if n.kind is NodeKind.SB:
                assert sink == f"SB:16:{x}:2:EAST:3:OUT" or (
                    n.side in (N, S) and track_breaks(x, 2, n.side, n.track, 4, (0, 0, 5, 5)))
    turns = [s for s in fan["SB:16:3:2:WEST:3:IN"] if g.nodes[s].kind is NodeKind.SB
             and g.nodes[s].side in (N, S)]
    assert turns == ["SB:16:3:2:NORTH:2:OUT", "SB:16:3:2:SOUTH:2:OUT"]  # (2 + 2) % 4 == 0


def test_pass_through_delay_is_one_tile_of_wire(ic_l2):
    """The pass-through edge carries the table-derived wire delay (a model): the straight
    hop minus the switch-box traversal pe_op_ns['switch_box'] = 140 ps."""
    tm = TimingModel.load()
    assert tm.pass_through("pe", 16, "WEST", "EAST") == 9.0             # 149.0 - 140
    assert tm.pass_through("pe", 16, "NORTH", "SOUTH") == 44.89         # 184.89 - 140
    assert tm.pass_through("mem", 16, "WEST", "EAST") == 115.8          # 255.8 - 140
    assert tm.pass_through("pe", 1, "EAST", "WEST") == 68.2             # 208.2 - 140
    g = ic_l2.graphs[16]
    assert g.delay[("SB:16:2:3:WEST:1:IN", "SB:16:2:3:EAST:1:OUT")] == 9.0
    assert g.delay[("SB:16:3:3:NORTH:0:IN", "SB:16:3:3:SOUTH:0:OUT")] == 44.89
    assert g.delay[("SB:16:2:3:WEST:0:IN", "SB:16:2:3:EAST:0:OUT")] == 149.0   # a hop
    cls = ic_l2.timing.classes
    assert cls["pass:pe:16:W->E"] == 9.0 and cls["sb:pe:16:W->E"] == 149.0
    assert tm.edge_class(g, "SB:16:2:3:WEST:1:IN", "SB:16:2:3:EAST:1:OUT") == "pass:pe:16:W->E"
    # a table that gives the figure directly wins; one with neither is refused
    table = json.loads(default_table_text())
    table["track_wire"] = {"pe": {"16": {"W->E": 21.5}}}
    assert TimingModel.from_table(table, "t").pass_through("pe", 16, "WEST", "EAST") == 21.5
    del table["pe_op_ns"]
    with pytest.raises(ConfigError, match="no wire delay for a long track passing through "
                                          "a pe tile \\(16 bits, N->S\\)"):
        TimingModel.from_table(table, "t").pass_through("pe", 16, "NORTH", "SOUTH")


def test_resolve_from_representatives_sees_the_pass_class(ic_l4):
    graphs = {w: g.copy() for w, g in ic_l4.graphs.items()}
    reps = {w: class_representatives(g) for w, g in graphs.items()}
    fast = TimingModel.load().resolve(graphs, edges=reps)
    slow = TimingModel.load().resolve(graphs)
    assert fast.classes == slow.classes
    assert {k for k in slow.classes if k.startswith("pass:")} == {
        f"pass:{c}:{w}:{a}" for c in ("pe", "io") for w in (16, 1)
        for a in ("N->S", "S->N", "E->W", "W->E")} - {
        f"pass:io:{w}:{a}" for w in (16, 1) for a in ("E->W", "W->E")}


def test_every_core_output_reaches_every_core_input(ic_l2, ic_l4):
    for ic in (ic_l2, ic_l4):
        for g in ic.graphs.values():
            G = g.to_networkx()
            ports = [(nid, n) for nid, n in g.nodes.items() if n.kind is NodeKind.PORT]
            ins = {nid for nid, n in ports if n.direction == "in"}
            outs = [nid for nid, n in ports if n.direction == "out"]
            assert ins and outs
            for o in outs:
                assert ins <= nx.descendants(G, o), o


def test_literal_long_wires_split_the_array():
    """Canal's literal wiring (wire_tracks with L = 2: no taps) leaves core (1, 1) unable
    to reach core (2, 2): the reason segment_tracks exists."""
    params = InterconnectParams(6, 6, tracks=5, track_length=2)
    tiles, _ = build_tiles(params, io_west_east(6, 6))
    g = connect_core_ports(wire_tracks(add_switch_boxes(empty_graph(16, tiles), "imran", 5),
                                       2))
    assert "PORT:16:2:2:data_in" not in nx.descendants(g.to_networkx(), "PORT:16:1:1:data_out")


def test_build_graph_is_the_composition_of_the_passes():
    """build_graph (no fused builder for L > 1) == the passes by hand, and segment_tracks
    with L = 1 changes nothing but records the length."""
    params = InterconnectParams(6, 6, tracks=5, track_length=2)
    tiles, _ = build_tiles(params, io_west_east(6, 6))
    tm = TimingModel.load()
    g = add_switch_boxes(empty_graph(16, tiles), "imran", 5, tm)
    g = wire_tracks(g, 1)
    g = connect_core_ports(g, params.connections, tm)
    assert segment_tracks(g, 1, tm) == g
    g = segment_tracks(g, 2, tm)
    g = insert_pipeline_registers(g, [(t, s) for s in Side for t in range(5)], tm)
    g.params["array"] = [6, 6]
    assert g == build_graph(params, tiles, 16, tm)


def test_collateral_round_trip(ic_l2):
    g = ic_l2.graphs[16]
    assert from_text(to_text(g)) == g
    assert from_json(json.loads(json.dumps(to_json(g)))) == g
    assert g.params["segments"] == "staggered" and g.params["track_length"] == 2


def test_more_tracks_than_length_required():
    params = InterconnectParams(4, 4, tracks=3, track_length=4)
    with pytest.raises(SpecError, match="tracks=3 < track_length=4.*use tracks >= 4"):
        build_uniform(params, io_west_east(4, 4))


def test_garnet_refuses_track_length_over_tracks():
    with pytest.raises(ConfigError) as got:
        validate(GarnetParams(width=8, height=8, tracks=3, track_length=4))
    msg = str(got.value)
    assert msg.startswith("field 'track_length' = 4: ")
    assert "with tracks = 3 < L = 4" in msg and "use tracks >= 4 or track_length <= 3" in msg
    validate(GarnetParams(width=8, height=8, tracks=4, track_length=4))      # accepted


@settings(max_examples=20, deadline=None)
@given(w=st.integers(1, 6), h=st.integers(1, 6), tracks=st.integers(2, 6),
       length=st.integers(2, 6), topo=st.sampled_from(["imran", "wilton", "disjoint"]))
def test_segmentation_properties(w, h, tracks, length, topo):
    """On any array, track count >= length and topology: exactly the non-breaking SB_OUTs
    have the single fan-in of their own track from the opposite side, every breaking one is
    driven by its tile's core output, and every core output reaches every core input."""
    if length > tracks:
        with pytest.raises(SpecError, match=f"tracks={tracks} < track_length={length}"):
            build_uniform(InterconnectParams(w, h, tracks=tracks, topology=topo,
                                             track_length=length),
                          lambda x, y: PT_CORE)
        return
    ic = build_uniform(InterconnectParams(w, h, tracks=tracks, topology=topo,
                                          track_length=length),
                       lambda x, y: PT_CORE)
    g = ic.graphs[16]
    b = (0, 0, w - 1, h - 1)
    for nid, n in g.nodes.items():
        if n.kind is NodeKind.SB and n.io is IO.SB_OUT:
            if track_breaks(n.x, n.y, n.side, n.track, length, b):
                assert f"PORT:16:{n.x}:{n.y}:data_out" in g.fanin[nid]
            else:
                assert g.fanin[nid] == [f"SB:16:{n.x}:{n.y}:{n.side.opposite.name}:"
                                        f"{n.track}:IN"]
    G = g.to_networkx()
    ins = {f"PORT:16:{x}:{y}:data_in" for x, y in g.tiles}
    for x, y in g.tiles:
        assert ins <= nx.descendants(G, f"PORT:16:{x}:{y}:data_out") | {
            f"PORT:16:{x}:{y}:data_in"}


def test_measured_path_enumeration_has_the_pass_classes():
    """The measured model's path enumeration (canal.timing_paths) lists exactly the graph's
    classes, the pass-throughs among them (as tile port-to-port wires: a 1-input mux has no
    cell to pass through)."""
    ic = build_interconnect(GarnetParams(width=6, height=4, tracks=4, track_length=2,
                                         mem_ratio=3))
    tm = TimingModel.load()
    from_graphs = {tm.edge_class(g, s, d) for g in ic.graphs.values() for (s, d) in g.delay}
    from_graphs = {k for k in from_graphs if k.startswith(("sb:", "cb:", "pass:")) or k == "reg"}
    enumerated, ends = set(), set()
    for xy, shape in tile_shapes(ic).items():
        if shape.core is not None:
            for pc in tile_path_classes(shape, ic.tiles[xy].timing_class):
                if not pc.key.startswith("core_out"):
                    enumerated.add(pc.key)
                if pc.kind == "pass":
                    ends |= set(pc.throughs)
    assert enumerated == from_graphs
    assert {k for k in enumerated if k.startswith("pass:mem:16:")} == {
        "pass:mem:16:N->S", "pass:mem:16:S->N", "pass:mem:16:E->W", "pass:mem:16:W->E"}
    assert "SB_T1_EAST_SB_OUT_B16" in ends and all("_SB_OUT_B" in e for e in ends)
