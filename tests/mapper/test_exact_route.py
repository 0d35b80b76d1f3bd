"""The exact router (mapper.backend.exact_route): minimum wirelength against PathFinder, legality,
known answers, unroutability with a cut certificate, and route_width's explanation."""
from __future__ import annotations

import copy

import pytest

from canal.config import route_selects
from canal.graph import IO as SbIO
from canal.graph import InterconnectGraph, Node, NodeKind, Side, TileInfo
from canal.passes import InterconnectParams, build_uniform, io_on_edges
from cgra.config import ConfigField
from cgra.core import CoreSpec, PortSpec
from cgra.errors import InternalError, RoutingError
from mapper.backend.exact_route import (Cut, build_program, check_routes, exact_route, find_cut,
                                random_nets, verify_cut, wirelength)
from canal.routing import RoutingGraph
from mapper.backend.nets import RouteNet
from mapper.backend.route import RouterParams, route_width


def _no_rtl():
    raise AssertionError("routing tests never build RTL")


PE = CoreSpec("x_pe", "p", (PortSpec("data0", 16, "in"), PortSpec("data1", 16, "in"),
                            PortSpec("res", 16, "out")),
              (ConfigField("inst", 20),), _no_rtl, {"timing_class": "pe"})
IO = CoreSpec("x_io", "I", (PortSpec("f2io_16", 16, "in"), PortSpec("io2f_16", 16, "out")),
              (), _no_rtl, {"timing_class": "io"})


def array(w: int, h: int, tracks: int):
    ic = build_uniform(InterconnectParams(w, h, tracks=tracks, widths=(16,)),
                       io_on_edges(lambda x, y: PE, IO, w, h))
    return ic, RoutingGraph(ic.graphs[16])


@pytest.fixture(scope="module")
def a4():
    return array(4, 4, 5)


@pytest.fixture(scope="module")
def a8():
    return array(8, 8, 5)


@pytest.fixture(scope="module")
def a4t1():
    return array(4, 4, 1)


def ports(g: RoutingGraph, direction: str) -> dict[tuple[int, int], list[str]]:
    out: dict[tuple[int, int], list[str]] = {}
    for nid in g.ids:
        n = g.ig.nodes[nid]
        if n.kind is NodeKind.PORT and n.direction == direction:
            out.setdefault((n.x, n.y), []).append(nid)
    return out


def assert_legal(ic, g: RoutingGraph, nets: list[RouteNet], routes) -> None:
    check_routes(g, nets, routes)
    owner: dict[str, str] = {}
    for name, paths in routes.items():
        for p in paths.values():
            for a, b in zip(p, p[1:], strict=False):
                assert g.has_edge(a, b)
            for nid in p:
                assert owner.setdefault(nid, name) == name, f"{nid} used by two nets"
    # canal's select computation accepts them: every edge exists, no mux with two selects
    sel = route_selects(ic.graphs, {n: list(p.values()) for n, p in routes.items()})
    assert sel


def pathfinder(g: RoutingGraph, nets: list[RouteNet], iters: int = 40):
    paths, _, _ = route_width(g, copy.deepcopy(nets), {}, RouterParams(max_iterations=iters))
    return paths


#: (array size, nets, seed, sink reach in tiles or None = anywhere, exact wirelength)
CASES = [(4, 3, 0, None, 11), (4, 6, 1, None, 26), (4, 10, 2, None, 29),
         (8, 4, 3, 3, 14), (8, 8, 4, 3, 33), (8, 10, 5, 2, 29)]


@pytest.mark.parametrize("size,n,seed,reach,want", CASES)
def test_exact_never_longer_than_pathfinder(a4, a8, size, n, seed, reach, want):
    ic, g = a4 if size == 4 else a8
    nets = random_nets(g, n, seed, reach=reach)
    pf = pathfinder(g, nets)
    res = exact_route(g, nets, timeout_s=60, margin=2)
    assert res.status == "optimal" and res.proven
    assert res.wirelength == wirelength(g, res.routes) == want
    assert res.wirelength <= wirelength(g, pf)
    assert set(res.routes) == {n.name for n in nets}
    for net in nets:
        assert set(res.routes[net.name]) == {t for t, _ in net.sinks}
    assert_legal(ic, g, nets, res.routes)


def test_known_answer_three_tiles_east(a4):
    ic, g = a4
    # PE (0, 2) to the PE 3 tiles east in the same row, (3, 2): 3 track segments
    net = RouteNet("e3", "PORT:16:0:2:res", [(("pe", "data0"), ["PORT:16:3:2:data0"])])
    res = exact_route(g, [net], timeout_s=30)
    assert res.status == "optimal" and res.wirelength == 3
    p = res.routes["e3"][("pe", "data0")]
    assert p[0] == "PORT:16:0:2:res" and p[-1] == "PORT:16:3:2:data0"
    # three hops east: SB_OUT -> RMUX -> SB_IN of the next tile, three times
    assert [n for n in p if n.endswith(":IN")] == [
        n for n in p if n.startswith("SB:16:") and ":WEST:" in n and n.endswith(":IN")]
    assert [int(n.split(":")[2]) for n in p if n.endswith(":IN")] == [1, 2, 3]
    assert_legal(ic, g, [net], res.routes)
    # a two-sink net to both ends of that row: the shared trunk counts once
    two = RouteNet("t", "PORT:16:0:2:res", [(("a", "data0"), ["PORT:16:3:2:data0"]),
                                            (("b", "data1"), ["PORT:16:2:2:data1"])])
    res2 = exact_route(g, [two], timeout_s=30)
    assert res2.wirelength == 3
    assert_legal(ic, g, [two], res2.routes)


def test_larger_margin_never_longer(a4t1, a8):
    _, g = a4t1
    nets = random_nets(g, 5, 18, max_sinks=2, reach=3)
    wl = []
    for m in (0, 1, 2, None):
        res = exact_route(g, nets, timeout_s=60, margin=m)
        assert res.status == "optimal" and res.margin == m
        wl.append(res.wirelength)
    # one track per side: inside its bounding box a net detours, one tile more avoids it
    assert wl == [16, 15, 15, 15]
    _, g8 = a8
    nets = random_nets(g8, 6, 6, reach=3)
    wl = [exact_route(g8, nets, timeout_s=60, margin=m).wirelength for m in (0, 2, None)]
    assert wl == sorted(wl, reverse=True) and wl[-1] == 24
    # margin 0 confines a net to its bounding box: fewer variables than the whole graph
    assert build_program(g8, nets, 0).n_y < build_program(g8, nets, None).n_y


def crossing_nets(g: RoutingGraph, k: int) -> list[RouteNet]:
    """``k`` nets from the tiles of columns 0-1 to ports of columns 2-3 (4x4 array)."""
    outs = [p for (x, y), ps in sorted(ports(g, "out").items()) if x <= 1 for p in ps]
    ins = [p for (x, y), ps in sorted(ports(g, "in").items()) if x >= 2 for p in ps]
    return [RouteNet(f"w{i}", outs[i], [((f"d{i}", "in"), [ins[i]])]) for i in range(k)]


def test_over_constrained_cut_is_proved(a4t1):
    _, g = a4t1
    # one track per side: 4 eastward tracks cross the boundary between columns 1 and 2
    nets = crossing_nets(g, 5)
    res = exact_route(g, nets, timeout_s=30)
    assert res.status == "unroutable" and res.proven and not res.routes
    cut = res.cut
    assert cut is not None
    assert sorted(cut.nets) == sorted(n.name for n in nets)
    assert sorted(cut.nodes) == [f"SB:16:2:{y}:WEST:0:IN" for y in range(4)]
    verify_cut(g, nets, cut)
    msg = res.message()
    assert msg.startswith("unroutable: 5 nets (w0, w1, w2, w3, w4) must cross these 4 routing "
                          "nodes [SB:16:2:0:WEST:0:IN")
    assert "capacity 4 < 5. Fix: more tracks, or spread the placement" in msg
    # four nets fit through the four tracks
    ok = exact_route(g, nets[:4], timeout_s=30)
    assert ok.status == "optimal" and ok.wirelength is not None


def test_random_over_constrained_netlist_has_a_cut(a4t1):
    _, g = a4t1
    nets = random_nets(g, 5, 21, max_sinks=2, reach=3)
    res = exact_route(g, nets, timeout_s=30)
    assert res.status == "unroutable"
    # four sinks in the corner tiles (0, 2) and (0, 3), entered by three track segments
    assert res.cut is not None and sorted(res.cut.nets) == ["n0", "n1", "n2", "n4"]
    assert sorted(res.cut.nodes) == ["SB:16:0:2:EAST:0:IN", "SB:16:0:2:NORTH:0:IN",
                                     "SB:16:0:3:EAST:0:IN"]
    verify_cut(g, nets, res.cut)
    assert "capacity 3 < 4" in res.message()


def test_bogus_cut_is_rejected(a4t1):
    _, g = a4t1
    nets = crossing_nets(g, 5)
    with pytest.raises(InternalError, match="reaches sink"):
        verify_cut(g, nets, Cut(["SB:16:2:0:WEST:0:IN"], ["w0", "w1"],
                                {"w0": [("d0", "in")], "w1": [("d1", "in")]}))
    assert find_cut(g, nets[:4]) is None


def _toy(with_second_path: bool = True):
    """Hand-made graph: n1 a -> M -> A (eastward), n2 b -> M -> B (westward), and n3
    c -> P1 | P2 -> C with two disjoint paths. No straight boundary and not the whole net set
    has a cut smaller than its nets; {n1, n2} does: M."""
    g = InterconnectGraph(16, {(x, y): TileInfo(x, y, "c", "p") for x in range(3)
                               for y in range(3)})
    ids = {}

    def port(name, x, y, d):
        ids[name] = g.add_node(Node(NodeKind.PORT, x, y, 16, name=name, direction=d))

    def sb(name, x, y, track):
        ids[name] = g.add_node(Node(NodeKind.SB, x, y, 16, Side.EAST, track, SbIO.SB_IN))

    port("a", 0, 0, "out")
    port("A", 2, 0, "in")
    port("b", 2, 1, "out")
    port("B", 0, 1, "in")
    port("c", 0, 2, "out")
    port("C", 2, 2, "in")
    sb("M", 1, 1, 0)
    sb("P1", 1, 2, 1)
    sb("P2", 1, 2, 2)
    edges = [("a", "M"), ("M", "A"), ("b", "M"), ("M", "B"), ("c", "P1"), ("P1", "C")]
    if with_second_path:
        edges += [("c", "P2"), ("P2", "C")]
    for s, d in edges:
        g.add_edge(ids[s], ids[d], 1.0)
    rg = RoutingGraph(g)
    nets = [RouteNet("n1", ids["a"], [(("A", "in"), [ids["A"]])]),
            RouteNet("n2", ids["b"], [(("B", "in"), [ids["B"]])]),
            RouteNet("n3", ids["c"], [(("C", "in"), [ids["C"]])])]
    return rg, ids, nets


def test_cut_of_a_minimal_conflicting_subset():
    rg, ids, nets = _toy()
    assert find_cut(rg, nets) is None       # boundaries and the whole set give no cut
    res = exact_route(rg, nets, timeout_s=30)
    assert res.status == "unroutable"
    assert res.cut is not None and res.cut.nodes == [ids["M"]]
    assert sorted(res.cut.nets) == ["n1", "n2"] and res.conflict == ["n1", "n2"]
    assert res.message().startswith("unroutable: 2 nets (n1, n2) must cross these 1 routing "
                                    f"nodes [{ids['M']}]; capacity 1 < 2")
    # without n2 the rest routes, n1 through M (wirelength: M is an SB_IN)
    ok = exact_route(rg, [nets[0], nets[2]], timeout_s=30)
    assert ok.status == "optimal" and ok.wirelength == 2
    assert ok.routes["n1"][("A", "in")] == [ids["a"], ids["M"], ids["A"]]


def test_pathfinder_failure_message_says_exact_routing_exists(a4t1):
    _, g = a4t1
    nets = random_nets(g, 5, 1, max_sinks=2)
    with pytest.raises(RoutingError) as exc:
        pathfinder(g, nets, iters=1)
    msg = str(exc.value)
    assert "did not converge after 1 PathFinder iterations" in msg
    assert "Exact router: an exact routing exists: total wirelength 24" in msg
    assert "raise RouterParams.max_iterations" in msg
    # PathFinder with its default iterations routes it, no shorter than the exact router
    assert wirelength(g, pathfinder(g, nets)) >= 24


def test_pathfinder_failure_message_names_the_cut(a4t1):
    _, g = a4t1
    nets = crossing_nets(g, 5)
    with pytest.raises(RoutingError) as exc:
        pathfinder(g, nets, iters=3)
    msg = str(exc.value)
    assert "did not converge after 3 PathFinder iterations" in msg
    assert ("Exact router: unroutable: 5 nets (w0, w1, w2, w3, w4) must cross these 4 "
            "routing nodes [SB:16:2:0:WEST:0:IN, SB:16:2:1:WEST:0:IN, SB:16:2:2:WEST:0:IN, "
            "SB:16:2:3:WEST:0:IN]; capacity 4 < 5") in msg


def test_register_nets_are_rejected(a4):
    _, g = a4
    reg = RouteNet("r", "PORT:16:1:1:res", [(("r0", "in"), ["REG:16:2:1:EAST:0",
                                                            "REG:16:2:1:WEST:0"])],
                   reg_sinks={("r0", "in"): "r0"})
    with pytest.raises(RoutingError, match="core-to-core nets only"):
        exact_route(g, [reg])
    src = RouteNet("q", "REG:16:2:1:EAST:0", [(("p", "data0"), ["PORT:16:3:1:data0"])],
                   reg_source="r0")
    with pytest.raises(RoutingError, match="core-to-core nets only"):
        exact_route(g, [src])
    with pytest.raises(RoutingError, match="unknown solver"):
        exact_route(g, [], solver="cplex")


def test_z3_and_highs_agree(a4):
    _, g = a4
    nets = random_nets(g, 2, 11, max_sinks=2, reach=2)
    h = exact_route(g, nets, timeout_s=30, margin=0)
    z = exact_route(g, nets, timeout_s=30, margin=0, solver="z3")
    assert h.status == z.status == "optimal"
    assert h.wirelength == z.wirelength


def test_timeout_is_reported_not_hung(a8):
    _, g = a8
    nets = random_nets(g, 12, 9)
    res = exact_route(g, nets, timeout_s=0.05, margin=None)
    assert res.status == "timeout" and not res.proven
    assert res.seconds < 10
    if res.routes:
        check_routes(g, nets, res.routes)


def test_no_nets_is_trivially_optimal(a4):
    _, g = a4
    res = exact_route(g, [RouteNet("empty", "PORT:16:1:1:res", [])])
    assert res.status == "optimal" and res.wirelength == 0 and res.routes == {}


def test_explanation_leaves_register_nets_out_soundly(a4t1):
    """Register nets are not modelled: the explanation routes the core-to-core nets alone (a
    relaxation), so their cut still proves the whole design unroutable, and a routable
    subset is reported as such, naming how many register nets were left out."""
    from mapper.backend.exact_route import explain_unrouted

    _, g = a4t1
    reg = RouteNet("r", "PORT:16:1:1:res", [(("r0", "in"), ["REG:16:2:1:EAST:0",
                                                            "REG:16:2:1:WEST:0"])],
                   reg_sinks={("r0", "in"): "r0"})
    msg = explain_unrouted(g, crossing_nets(g, 5) + [reg])
    assert msg.startswith(" Exact router for the 5 core-to-core nets (1 nets through "
                          "registers left out): unroutable: 5 nets (w0, w1, w2, w3, w4) must "
                          "cross these 4 routing nodes")
    ok = explain_unrouted(g, random_nets(g, 5, 1, max_sinks=2) + [reg])
    assert "an exact routing exists: total wirelength 24" in ok
    assert "the nets through registers are not modelled" in ok
    assert explain_unrouted(g, [reg]) == ""
