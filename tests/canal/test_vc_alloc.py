"""Routes, VC allocation and the deadlock check of the dynamic layer (:mod:`canal.vc_alloc`;
thesis rule: no two logical paths share a VC buffer on any link)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgra.errors import ConfigError, RoutingError

from canal.router import MeshParams, Port, RouterParams
from canal.vc_alloc import (Flow, Link, allocate, check_deadlock, route_tree, waits_for_graph,
                            with_vcs, xy_path)

MESH = MeshParams(4, 4, RouterParams(vcs=2))


def test_xy_path_goes_x_first():
    assert xy_path((0, 3), (2, 1)) == ((0, 3), (1, 3), (2, 3), (2, 2), (2, 1))
    assert xy_path((1, 1), (1, 1)) == ((1, 1),)


def test_vc_conflict_names_the_link_and_routes():
    mp = MeshParams(4, 4, RouterParams(vcs=1))
    flows = [Flow(0, (0, 0), ((2, 0),)), Flow(1, (1, 0), ((3, 0),))]
    with pytest.raises(RoutingError) as e:
        allocate(mp, flows)
    msg = str(e.value)
    assert "link (1, 0).E -> (2, 0).W carries 2 logical routes" in msg
    assert "flow 0 (0, 0) -> (2, 0)" in msg and "flow 1 (1, 0) -> (3, 0)" in msg
    # with 2 VCs the shared link gets one VC per route, the others VC 0
    a = allocate(MESH, flows)
    shared = Link(1, 0, Port.E)
    assert (a.vcs[0][shared], a.vcs[1][shared]) == (0, 1)
    assert a.vcs[1][Link(2, 0, Port.E)] == 0
    assert a.vcs_used() == 2
    # the table of (2, 0) input W: flow 0 ejects (VC 0), flow 1 goes E on VC 0
    t = a.tables()[2, 0][Port.W]
    assert (t[0].ports, t[1].ports) == (frozenset({Port.L}), frozenset({Port.E}))


def test_broadcast_tree_duplicates_where_paths_diverge():
    t = route_tree(MESH, Flow(4, (0, 0), ((3, 0), (3, 2), (1, 1))))
    assert t.divergence() == [(1, 0), (3, 0)]
    assert t.out_ports[1, 0] == {Port.E, Port.S}
    assert t.out_ports[3, 0] == {Port.L, Port.S}
    assert t.in_port[3, 2] == Port.N
    assert len(t.links()) == 1 + 6 + 3        # inject, 6 mesh links, 3 ejections


def test_table_route_must_be_a_tree():
    bad = Flow(0, (0, 0), ((1, 1), (2, 1)), paths=(((0, 0), (1, 0), (1, 1)),
                                                    ((0, 0), (0, 1), (1, 1), (2, 1))))
    with pytest.raises(RoutingError, match=r"router \(1, 1\) is entered from N and from W"):
        route_tree(MESH, bad)
    with pytest.raises(RoutingError, match="not between neighbours"):
        route_tree(MESH, Flow(0, (0, 0), ((2, 0),), paths=(((0, 0), (2, 0)),)))
    with pytest.raises(ConfigError, match="id 16 outside"):
        allocate(MESH, [Flow(16, (0, 0), ((1, 0),))])


def _ring_flows():
    """Four flows turning clockwise around the 2x2 square (table routes)."""
    sq = [(0, 0), (1, 0), (1, 1), (0, 1)]
    return [Flow(i, sq[i], (sq[(i + 2) % 4],), paths=((sq[i], sq[(i + 1) % 4],
                                                        sq[(i + 2) % 4]),)) for i in range(4)]


def test_shared_vc_buffer_cycle_is_detected():
    """The classic ring deadlock: all four turns on VC 0 make the waits-for graph cyclic; the
    allocator's VCs (a distinct VC per route on each shared link) break the cycle."""
    mp = MeshParams(2, 2, RouterParams(vcs=2))
    alloc = allocate(mp, _ring_flows())
    check_deadlock(alloc)
    assert alloc.vcs_used() == 2
    shared = with_vcs(alloc, {f: {ln: 0 for ln in alloc.vcs[f]} for f in alloc.vcs})
    with pytest.raises(RoutingError, match="waits-for cycle") as e:
        check_deadlock(shared)
    assert "(0, 0).E -> (1, 0).W vc 0" in str(e.value)
    assert len(waits_for_graph(shared)) == 4 + 4 + 4   # mesh, inject, eject buffers


def test_program_dependency_cycle_is_reported():
    """A PB at (1, 0) that consumes flow 0 and produces flow 1, which feeds the PB at (0, 0)
    producing flow 0: the dependency cycle through both PBs is reported."""
    alloc = allocate(MESH, [Flow(0, (0, 0), ((1, 0),)), Flow(1, (1, 0), ((0, 0),))])
    check_deadlock(alloc, pb_deps=[(0, 1)])
    with pytest.raises(RoutingError, match="waits-for cycle"):
        check_deadlock(alloc, pb_deps=[(0, 1), (1, 0)])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 15), st.lists(st.integers(0, 15), min_size=1,
                                                       max_size=3, unique=True)),
                min_size=1, max_size=8), st.integers(1, 4))
def test_allocation_invariants(specs, vcs):
    """Any accepted allocation gives distinct VCs per link, within 0..vcs-1, and is
    deadlock-free; a refusal names a link carrying more than ``vcs`` routes."""
    mp = MeshParams(4, 4, RouterParams(vcs=vcs))
    flows = [Flow(i, (s % 4, s // 4), tuple((d % 4, d // 4) for d in ds))
             for i, (s, ds) in enumerate(specs)]
    try:
        a = allocate(mp, flows)
    except RoutingError as e:
        assert f"has {vcs} VC(s)" in str(e)
        return
    for ln, users in a.link_users().items():
        got = [a.vcs[u][ln] for u in users]
        assert len(set(got)) == len(got) and all(0 <= v < vcs for v in got)
    check_deadlock(a)
