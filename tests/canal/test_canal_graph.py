"""Graph passes: switch-box topologies, fan-in counts, core ports, pipeline registers."""
from __future__ import annotations

import pytest
from canal_testutil import IO_CORE, PT_CORE, io_west_east
from hypothesis import given, settings
from hypothesis import strategies as st

from canal.graph import (IO, Node, NodeId, NodeKind, Side, node_template, parse_id, port_id,
                         reg_id, rmux_id, sb_id, stamp_nodes)
from canal.passes import (CorePortConnections, InterconnectParams, _build_graph_fused,
                          add_switch_boxes, build_graph, build_graph_by_passes, build_tiles,
                          build_uniform, connect_core_ports, empty_graph,
                          insert_pipeline_registers, topology_wires, wire_tracks)
from canal.timing import TimingModel
from cgra.errors import CollateralError, SpecError

N, S, E, W = Side.NORTH, Side.SOUTH, Side.EAST, Side.WEST


def test_imran_w5_matches_formulas():
    w = 5
    expected = set()
    for t in range(w):
        for a, ta, b, tb in [(W, t, N, (w - t) % w), (N, t, E, (t + 1) % w),
                             (S, t, E, (w - t - 2) % w), (W, t, S, (t - 1) % w),
                             (W, t, E, t), (S, t, N, t)]:
            expected.add((a, ta, b, tb))
            expected.add((b, tb, a, ta))
    wires = set(topology_wires("imran", w))
    assert wires == expected
    assert len(wires) == 4 * 3 * w          # each SB_IN reaches 3 sides
    # known answers for W = 5
    assert (W, 1, N, 4) in wires and (N, 4, W, 1) in wires
    assert (S, 0, E, 3) in wires and (E, 3, S, 0) in wires
    assert (S, 4, E, 3) not in wires and (S, 4, E, 4) in wires   # (5-4-2) mod 5 = 4
    assert (W, 0, S, 4) in wires                                   # (0-1) mod 5 = 4
    assert (N, 4, E, 0) in wires                                   # (4+1) mod 5 = 0


def test_imran_graph_fanin_order_known_answer(ic4):
    g = ic4.graphs[16]
    # SB_OUT NORTH track 0 of (1,1): SB_INs by side (S, E, W) then the core output
    assert g.fanin["SB:16:1:1:NORTH:0:OUT"] == [
        "SB:16:1:1:SOUTH:0:IN", "SB:16:1:1:EAST:1:IN", "SB:16:1:1:WEST:0:IN",
        "PORT:16:1:1:data_out"]
    assert g.fanin["SB:16:1:1:EAST:3:OUT"] == [
        "SB:16:1:1:NORTH:2:IN", "SB:16:1:1:SOUTH:0:IN", "SB:16:1:1:WEST:3:IN",
        "PORT:16:1:1:data_out"]


def test_wilton_and_disjoint_differ_from_imran():
    assert set(topology_wires("disjoint", 4)) == {
        (a, t, b, t) for t in range(4) for a in Side for b in Side if a != b}
    wil, imr = set(topology_wires("wilton", 5)), set(topology_wires("imran", 5))
    assert (S, 2, W, 1) in wil and (W, 2, S, 1) in imr
    assert wil != imr


@settings(max_examples=30, deadline=None)
@given(topo=st.sampled_from(["disjoint", "wilton", "imran"]), w=st.integers(1, 9))
def test_topology_is_a_bijection_per_side_pair(topo, w):
    wires = topology_wires(topo, w)
    for si in Side:
        for so in Side:
            pairs = [(ti, to) for a, ti, b, to in wires if a is si and b is so]
            if si is so:
                assert pairs == []
            else:
                assert sorted(ti for ti, _ in pairs) == list(range(w))
                assert sorted(to for _, to in pairs) == list(range(w))


@pytest.mark.parametrize("size", [2, 4])
def test_fanin_counts(size, ic2, ic4):
    ic = ic2 if size == 2 else ic4
    for w, g in ic.graphs.items():
        per_tile = g.by_tile()
        assert len(g.tiles) == size * size
        for (x, y), nodes in per_tile.items():
            info = g.tiles[(x, y)]
            n_out = sum(1 for p in info.routable_ports() if p.width == w and p.direction == "out")
            sb_out = [n for n in nodes if n.kind is NodeKind.SB and n.io is IO.SB_OUT]
            sb_in = [n for n in nodes if n.kind is NodeKind.SB and n.io is IO.SB_IN]
            assert len(sb_out) == len(sb_in) == 4 * 5
            for n in sb_out:
                assert len(g.fanin[n.id]) == 3 + n_out
                assert {g.nodes[s].side for s in g.fanin[n.id][:3]} == set(Side) - {n.side}
            for n in sb_in:
                dx, dy = n.side.step()
                inside = (x + dx, y + dy) in g.tiles
                assert len(g.fanin[n.id]) == (1 if inside else 0)
            cbs = [n for n in nodes if n.kind is NodeKind.PORT and n.direction == "in"]
            assert len(cbs) == sum(1 for p in info.routable_ports()
                                   if p.width == w and p.direction == "in") == 1
            for n in cbs:
                assert len(g.fanin[n.id]) == 4 * 5
                assert set(g.fanin[n.id]) == {s.id for s in sb_in}


def test_node_and_edge_counts_4x4(ic4):
    g = ic4.graphs[16]
    # per tile: 40 SB + 20 REG + 20 RMUX + 2 core ports
    assert len(g.nodes) == 16 * 82
    # SB_OUT fan-in 4 (x320), CB 20 (x16), REG 1 (x320), RMUX 2 (x320), SB_IN 1 (interior)
    interior_sb_in = 24 * 2 * 5             # 24 neighbour pairs x 2 directions x 5 tracks
    assert g.num_edges() == 320 * 4 + 16 * 20 + 320 + 320 * 2 + interior_sb_in


def test_connection_box_sides_restricted():
    conn = CorePortConnections(cb_sides=(N, W), out_sides=(E,), out_tracks=(0, 1))
    ic = build_uniform(InterconnectParams(2, 2, pipeline_registers=[], connections=conn),
                       lambda x, y: PT_CORE)
    g = ic.graphs[16]
    assert len(g.fanin["PORT:16:1:1:data_in"]) == 10
    assert g.fanin["PORT:16:1:1:data_in"][:2] == ["SB:16:1:1:NORTH:0:IN",
                                                  "SB:16:1:1:NORTH:1:IN"]
    assert "PORT:16:1:1:data_out" in g.fanin["SB:16:1:1:EAST:1:OUT"]
    assert "PORT:16:1:1:data_out" not in g.fanin["SB:16:1:1:EAST:2:OUT"]
    assert "PORT:16:1:1:data_out" not in g.fanin["SB:16:1:1:NORTH:0:OUT"]


def test_pipeline_register_pass(ic2):
    g = ic2.graphs[16]
    listed = [(0, N), (2, E), (4, W)]
    before = g.fanout()
    g2 = insert_pipeline_registers(g, listed)
    fanout = g2.fanout()
    for (x, y) in g2.tiles:
        for t, side in listed:
            out = f"SB:16:{x}:{y}:{side.name}:{t}:OUT"
            reg, rmux = f"REG:16:{x}:{y}:{side.name}:{t}", f"RMUX:16:{x}:{y}:{side.name}:{t}"
            assert set(fanout[out]) == {reg, rmux}
            assert g2.nodes[reg].kind is NodeKind.REG and g2.nodes[rmux].kind is NodeKind.RMUX
            assert g2.fanin[rmux] == [out, reg]
            assert g2.fanin[reg] == [out]
            assert fanout[rmux] == before[out]           # the old fan-out moved to the RMUX
            for sink in before[out]:
                assert g2.fanin[sink] == [rmux if s == out else s for s in g.fanin[sink]]
        assert f"REG:16:{x}:{y}:NORTH:1" not in g2.nodes
    assert sum(1 for n in g2.nodes.values() if n.kind is NodeKind.REG) == 4 * len(listed)
    assert g2.delay[("REG:16:0:0:NORTH:0", "RMUX:16:0:0:NORTH:0")] == 230.0
    with pytest.raises(SpecError, match="track 7 side NORTH of tile"):
        insert_pipeline_registers(g, [(7, N)])
    with pytest.raises(SpecError, match="inserted twice"):
        insert_pipeline_registers(g2, [(0, N)])


def test_track_length_two():
    from canal.graph import tile_info_from_core
    tiles = {(x, 0): tile_info_from_core(x, 0, None) for x in range(4)}
    g = wire_tracks(add_switch_boxes(empty_graph(16, tiles), "disjoint", 2), track_length=2)
    assert g.fanin["SB:16:2:0:WEST:1:IN"] == ["SB:16:0:0:EAST:1:OUT"]
    assert g.fanin["SB:16:1:0:WEST:1:IN"] == []
    assert g.fanin["SB:16:1:0:EAST:0:IN"] == ["SB:16:3:0:WEST:0:OUT"]


def test_io_on_edges_layout(ic4):
    from canal.collateral import layout
    assert layout(ic4.graphs[1]) == ["IppI"] * 4


def test_bad_parameters_name_the_field():
    with pytest.raises(SpecError, match="unknown topology 'banyan'"):
        build_uniform(InterconnectParams(2, 2, topology="banyan"), lambda x, y: PT_CORE)
    with pytest.raises(SpecError, match="tracks=0"):
        build_uniform(InterconnectParams(2, 2, tracks=0), lambda x, y: PT_CORE)
    with pytest.raises(SpecError, match="track_length=0"):
        build_uniform(InterconnectParams(2, 2, track_length=0), lambda x, y: PT_CORE)
    with pytest.raises(SpecError, match="array size 0x2"):
        build_uniform(InterconnectParams(0, 2), lambda x, y: PT_CORE)
    with pytest.raises(SpecError, match="port 'data_in' at tile \\(0, 0\\) is 16 bits"):
        build_uniform(InterconnectParams(1, 1, widths=(1,)), lambda x, y: PT_CORE)


def test_deterministic_build():
    a = build_uniform(InterconnectParams(3, 2), io_west_east(3, 2))
    b = build_uniform(InterconnectParams(3, 2), io_west_east(3, 2))
    assert a.graphs[16] == b.graphs[16] and a.graphs[1] == b.graphs[1]
    assert list(a.graphs[16].nodes) == list(b.graphs[16].nodes)


def _graph_state(g):
    """Everything of a graph, orders included (dict insertion orders, each node's __dict__)."""
    return (g.width, list(g.tiles.items()),
            [(k, n, list(n.__dict__.items())) for k, n in g.nodes.items()],
            list(g.fanin.items()), list(g.delay.items()), list(g.params.items()),
            g.timing_notes)


FUSED_CASES = {
    "default": dict(),
    "wilton_partial_regs": dict(topology="wilton", tracks=3,
                                pipeline_registers=[(2, E), (0, N), (1, W)]),
    "disjoint_holes": dict(topology="disjoint", tracks=4,
                                pipeline_registers=[(t, s) for s in (N, E) for t in range(4)]),
    "per_port_no_regs": dict(tracks=3, pipeline_registers=[],
                             connections=CorePortConnections(
                                 cb_sides=(W, S), cb_tracks=(2, 0), out_sides=(E, N),
                                 out_tracks=(1,),
                                 per_port={"bit_in": ((E,), (0,)), "data_out": ((S, W), None),
                                           "io2f_16": ((N,), (2, 1)), "f2io_1": ((), None)})),
    "one_track_int_sides": dict(topology="Wilton", tracks=1,
                                pipeline_registers=[(0, 3), (0, S)]),
}


@pytest.mark.parametrize("case", sorted(FUSED_CASES))
def test_fused_build_graph_equals_the_passes(case):
    """build_graph's single-pass builder == the composition of the passes, orders included,
    on 6x5 arrays with IO, pass-through and empty tiles (and holes in the grid)."""
    params = InterconnectParams(6, 5, **FUSED_CASES[case])

    def core_fn(x, y):
        if (x, y) in ((2, 1), (3, 3), (4, 4)):
            return None
        return IO_CORE if x in (0, 5) else PT_CORE
    tiles, _ = build_tiles(params, core_fn)
    if "holes" in case:
        del tiles[(3, 2)], tiles[(5, 0)]
        tiles = dict(reversed(tiles.items()))          # the builders sort the tiles
    for w in params.widths:
        assert _build_graph_fused(params, tiles, w, TimingModel.load()) is not None
        tm_fused, tm_passes = TimingModel.load(), TimingModel.load()
        fused = build_graph(params, tiles, w, tm_fused)
        passes = build_graph_by_passes(params, tiles, w, tm_passes)
        assert fused == passes
        assert _graph_state(fused) == _graph_state(passes)
        assert tm_fused.notes == tm_passes.notes and tm_fused.notes
    # and the passes by hand (as build_graph documents), registers included
    if params.pipeline_registers:
        tm = TimingModel.load()
        g = add_switch_boxes(empty_graph(16, tiles), params.topology, params.tracks, tm)
        g = wire_tracks(g, params.track_length)
        g = connect_core_ports(g, params.connections, tm)
        g = insert_pipeline_registers(g, params.pipeline_registers, tm)
        g.params["array"] = [6, 5]
        assert _graph_state(g) == _graph_state(build_graph(params, tiles, 16, tm))


def test_build_graph_odd_parameters_take_the_passes():
    tiles, _ = build_tiles(InterconnectParams(3, 2), io_west_east(3, 2))
    dup_reg = InterconnectParams(3, 2, pipeline_registers=[(0, N), (0, N)])
    assert _build_graph_fused(dup_reg, tiles, 16, TimingModel.load()) is None
    with pytest.raises(SpecError, match="inserted twice"):
        build_graph(dup_reg, tiles, 16)
    with pytest.raises(SpecError, match="no such SB_OUT"):
        build_graph(InterconnectParams(3, 2, pipeline_registers=[(5, N)]), tiles, 16)
    with pytest.raises(SpecError, match="added twice"):
        build_graph(InterconnectParams(3, 2, connections=CorePortConnections(
            cb_sides=(N, N))), tiles, 16)
    with pytest.raises(SpecError, match="track 5 does not exist"):
        build_graph(InterconnectParams(3, 2, connections=CorePortConnections(
            out_tracks=(5,))), tiles, 16)


def test_stamped_nodes_equal_constructed_nodes():
    made = [Node(NodeKind.SB, 3, 4, 16, E, 2, IO.SB_OUT), Node(NodeKind.REG, 3, 4, 16, W, 0),
            Node(NodeKind.PORT, 3, 4, 16, name="data_in", direction="in")]
    tmpls = [node_template(NodeKind.SB, 16, E, 2, IO.SB_OUT), node_template(NodeKind.REG, 16, W, 0),
             node_template(NodeKind.PORT, 16, name="data_in", direction="in")]
    stamped = stamp_nodes(tmpls, 3, 4, [n.id for n in made])    # reading .id caches it
    for a, b in zip(made, stamped, strict=True):
        assert type(b) is Node and a == b and hash(a) == hash(b)
        assert list(a.__dict__.items()) == list(b.__dict__.items())
        assert a.local_name == b.local_name
    assert tmpls[0]["x"] == 0 and tmpls[0]["id"] == ""                  # templates untouched


# ---------------------------------------------------------------------- node ids (parse_id)

def test_node_id_known_answers():
    """The builders' formats (docs/canal.md "Node ids") and parse_id's fields for them."""
    assert sb_id(16, 1, 2, E, 3, IO.SB_OUT) == "SB:16:1:2:EAST:3:OUT"
    assert parse_id("SB:16:1:2:EAST:3:OUT") == NodeId(NodeKind.SB, 16, 1, 2, E, 3, IO.SB_OUT)
    assert port_id(16, 0, 1, "io2f_16") == "PORT:16:0:1:io2f_16"
    assert parse_id("PORT:16:0:1:io2f_16") == NodeId(NodeKind.PORT, 16, 0, 1, name="io2f_16")
    assert reg_id(1, 31, 15, N, 0) == "REG:1:31:15:NORTH:0"
    assert parse_id("REG:1:31:15:NORTH:0") == NodeId(NodeKind.REG, 1, 31, 15, N, 0)
    assert rmux_id(32, 7, 0, W, 4) == "RMUX:32:7:0:WEST:4"
    n = parse_id("RMUX:32:7:0:WEST:4")
    assert (n.kind, n.width, n.xy, n.side, n.track, n.io, n.name) == \
        (NodeKind.RMUX, 32, (7, 0), W, 4, None, None)
    assert parse_id("SB:16:3:0:SOUTH:0:IN").io is IO.SB_IN
    assert parse_id("SB:16:3:0:SOUTH:0:IN").id == "SB:16:3:0:SOUTH:0:IN"
    assert NodeId(NodeKind.SB, 16, 3, 0, S, 0, IO.SB_IN).id == "SB:16:3:0:SOUTH:0:IN"


def test_parse_id_agrees_with_every_node_of_a_graph(ic4):
    """Every id of the 4x4 graphs (both widths, all four kinds) parses to its node's fields."""
    kinds = set()
    for g in ic4.graphs.values():
        for nid, n in g.nodes.items():
            p = parse_id(nid)
            assert (p.kind, p.width, p.x, p.y, p.side, p.track, p.io) == \
                (n.kind, n.width, n.x, n.y, n.side, n.track, n.io)
            assert p.name == (n.name if n.kind is NodeKind.PORT else None)
            assert p.id == nid == n.id
            kinds.add(p.kind)
    assert kinds == set(NodeKind)


_num = st.integers(0, 10**6)
_side = st.sampled_from(list(Side))


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(list(NodeKind)), width=st.integers(1, 64), x=_num, y=_num,
       side=_side, track=_num, io=st.sampled_from(list(IO)), name=st.text(min_size=1))
def test_parse_id_inverts_the_builders(kind, width, x, y, side, track, io, name):
    if kind is NodeKind.SB:
        nid = sb_id(width, x, y, side, track, io)
        want = NodeId(kind, width, x, y, side, track, io)
    elif kind is NodeKind.PORT:
        nid = port_id(width, x, y, name)
        want = NodeId(kind, width, x, y, name=name)
    else:
        nid = (reg_id if kind is NodeKind.REG else rmux_id)(width, x, y, side, track)
        want = NodeId(kind, width, x, y, side, track)
    got = parse_id(nid)
    assert got == want and type(got) is NodeId
    assert got.id == nid                                # rebuilt from the parsed fields
    assert NodeId(got.kind, got.width, got.x, got.y, got.side, got.track, got.io,
                  got.name).id == nid


@pytest.mark.parametrize("nid, fmt", [
    ("SB:16:1:2:EAST:3", "SB:<width>:<x>:<y>:<SIDE>:<track>:<IN|OUT>"),       # no io
    ("SB:16:1:2:EAST:3:OUT:0", "SB:<width>"),                                 # one field more
    ("SB:16:1:2:east:3:OUT", "SB:<width>"),                                   # side in lower case
    ("SB:16:1:2:EAST:3:SB_OUT", "SB:<width>"),                                # enum name, not IN/OUT
    ("SB:016:1:2:EAST:3:OUT", "SB:<width>"),                                  # not as written
    ("SB:16: 1:2:EAST:3:OUT", "SB:<width>"),
    ("REG:16:1:x:NORTH:0", "REG:<width>:<x>:<y>:<SIDE>:<track>"),
    ("RMUX:16:1:2:NORTH", "RMUX:<width>"),
    ("PORT:16:0:1:", "PORT:<width>:<x>:<y>:<port name>"),                     # empty port name
    ("PORT:16:0:1", "PORT:<width>"),
    ("CORE:pe_0", "SB:<width>:<x>:<y>:<SIDE>:<track>:<IN|OUT> or PORT:"),     # not a kind
    ("", "SB:<width>:<x>:<y>:<SIDE>:<track>:<IN|OUT> or PORT:"),
])
def test_parse_id_rejects_a_malformed_id(nid, fmt):
    with pytest.raises(CollateralError) as e:
        parse_id(nid)
    assert f"routing node id {nid!r} is malformed" in str(e.value)
    assert f"expected {fmt}" in str(e.value)


def test_parse_id_port_names_holding_colons():
    """A port name may hold ':' (the builders allow it), even as its first character."""
    from canal.graph import parse_id, port_id
    for name in (":", "a:b", ":x", "x:"):
        nid = port_id(16, 2, 3, name)
        got = parse_id(nid)
        assert (got.name, got.xy, got.width, got.id) == (name, (2, 3), 16, nid)
