"""PathFinder routing on canal routing graphs (dumped to JSON and read back by the mapper)."""
from __future__ import annotations

import json
import random
from itertools import pairwise

import networkx as nx
import pytest

from canal.collateral import dump_json
from canal.config import route_bitstream
from canal.graph import IO as SbIO
from canal.graph import InterconnectGraph, Node, NodeKind, Side, TileInfo
from canal.passes import InterconnectParams, build_uniform, io_on_edges
from cgra.config import ConfigField
from cgra.core import CoreSpec, PortSpec
from cgra.errors import CollateralError, RoutingError
from mapper.collateral import load_fabric
from mapper.netlist import Netlist
from mapper.backend.pack import pack, stencil_netlist
from mapper.backend.place import PlaceParams, place
from canal.routing import RoutingGraph
from mapper.backend.nets import RouteNet
from mapper.backend.power import used_tiles
from mapper.backend.route import (PathFinder, RouterParams, check_routing, route_design,
                                  route_width)


def _no_rtl():
    raise AssertionError("PnR tests never build RTL")


PE = CoreSpec("t_pe", "p", (PortSpec("data0", 16, "in"), PortSpec("data1", 16, "in"),
                            PortSpec("bit0", 1, "in"), PortSpec("res", 16, "out"),
                            PortSpec("res_p", 1, "out")),
              (ConfigField("inst", 20), ConfigField("data0_reg_en", 1),
               ConfigField("data1_reg_en", 1)), _no_rtl, {"timing_class": "pe"})
MEM = CoreSpec("t_mem", "m", (PortSpec("data_in_0", 16, "in"), PortSpec("data_out_0", 16, "out")),
               (ConfigField("depth", 12),), _no_rtl, {"timing_class": "mem"})
IO = CoreSpec("t_io", "I", (PortSpec("f2io_16", 16, "in"), PortSpec("io2f_16", 16, "out"),
                            PortSpec("f2io_1", 1, "in"), PortSpec("io2f_1", 1, "out"),
                            PortSpec("glb2io_16", 16, "in"), PortSpec("io2glb_16", 16, "out")),
              (), _no_rtl, {"external": ("glb2io_16", "io2glb_16"), "timing_class": "io"})


def build(tmp, w, h, tracks=5):
    core = io_on_edges(lambda x, y: MEM if x % 4 == 3 else PE, IO, w, h)
    ic = build_uniform(InterconnectParams(w, h, tracks=tracks), core)
    paths = []
    for width, g in ic.graphs.items():
        dump_json(g, tmp / f"routing_{width}.json")
        paths.append(tmp / f"routing_{width}.json")
    return ic, load_fabric(paths)


@pytest.fixture(scope="module")
def arr8(tmp_path_factory):
    return build(tmp_path_factory.mktemp("r8"), 8, 8)


@pytest.fixture(scope="module")
def routed8(arr8):
    ic, graphs = arr8
    packed = pack(stencil_netlist("g", image_width=64), graphs)
    pl = place(packed, graphs, PlaceParams(seed=3))
    return packed, pl, route_design(packed, pl, graphs)


def test_loaded_graph_equals_canal_graph(arr8, tmp_path):
    ic, coll = arr8
    for w, g in ic.graphs.items():
        rg = coll.graphs[w]
        assert rg.ig == g                       # read back through canal.collateral
        assert len(rg.ids) == len(g.nodes)
        assert sum(len(s) for s in rg.succ) == g.num_edges()
        for dst, srcs in list(g.fanin.items())[::97]:
            for src in srcs:
                assert rg.index[dst] in rg.succ[rg.index[src]]
                assert rg.delay(src, dst) == g.delay[(src, dst)]
        assert rg.size == (8, 8)
        assert rg.tiles[(3, 1)].tag == "m" and rg.tiles[(0, 0)].tag == "I"


def test_bad_routing_graph_is_a_collateral_error(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps({"schema": "canal.routing_graph/0", "nodes": []}))
    with pytest.raises(CollateralError, match="schema"):
        RoutingGraph.load(p)


def test_stencil_routes_legally_and_matches_canal_bitstream(arr8, routed8):
    ic, graphs = arr8
    packed, pl, rr = routed8
    check_routing(rr, graphs)
    assert set(rr.nets) == {n.name for n in packed.nets}
    for net in packed.nets:
        r = rr.nets[net.name]
        assert set(r.paths) == set(net.sinks)
    # every netlist register sits on a REG node of its placed tile
    assert set(rr.reg_sites) == {n for n, i in packed.instances.items() if i.tag == "r"}
    for reg, node in rr.reg_sites.items():
        _, _, x, y, *_ = node.split(":")
        assert (int(x), int(y)) == pl.sites[reg] and node.startswith("REG:16:")
    # canal's own bitstream generator accepts the routes (edges exist, no select conflicts)
    assert route_bitstream(ic.graphs, rr.routes())
    segs = {n for r in rr.nets.values() for n in r.nodes() if n.endswith(":IN")}
    assert rr.wirelength[16] == len(segs) > 0


def test_adjacent_tiles_known_route(arr8):
    _, graphs = arr8
    nl = Netlist("adj")
    nl.add_instance("src", "io_in", "I")
    nl.add_instance("pe", "pe", "p", {"inst": 1})
    nl.add_instance("dst", "io_out", "I")
    nl.add_net(("src", "out"), [("pe", "data0")], 16)
    nl.add_net(("pe", "res"), [("dst", "in")], 16)
    nl.add_net(("pe", "res_p"), [("dst", "valid")], 1)
    packed = pack(nl, graphs)
    pl = place(packed, graphs, PlaceParams(fixed={"src": (1, 0), "pe": (1, 1), "dst": (2, 0)}))
    rr = route_design(packed, pl, graphs)
    check_routing(rr, graphs)
    p = rr.nets["n0"].paths[("pe", "data0")]
    # IO (1,0) -> south switch-box output -> register mux (bypass) -> PE (1,1) north input
    assert p[0] == "PORT:16:1:0:io2f_16" and p[-1] == "PORT:16:1:1:data0"
    assert p[1].startswith("SB:16:1:0:SOUTH:") and p[1].endswith(":OUT")
    assert p[2].startswith("RMUX:16:1:0:SOUTH:") and p[3].startswith("SB:16:1:1:NORTH:")
    assert len(p) == 5
    one = rr.nets["n2"].paths[("dst", "valid")]
    assert one[0] == "PORT:1:1:1:res_p" and one[-1] == "PORT:1:2:0:f2io_1"
    assert rr.wirelength[16] == 3 and rr.wirelength[1] == 2


def _toy_graph(middle_nodes: int):
    """Hand-made routing graph: sources a, b; sinks A, B; a shared middle node M and (for a)
    a detour D1 -> D2. Node (x, y) are chosen so the heuristic is exact. Returns the graph
    and short name -> node id."""
    g = InterconnectGraph(16, {(0, 0): TileInfo(0, 0, "c", "p")})
    ids = {}

    def port(name, x, y, direction):
        ids[name] = g.add_node(Node(NodeKind.PORT, x, y, 16, name=name, direction=direction))

    def sb(name, x, y, track):
        ids[name] = g.add_node(Node(NodeKind.SB, x, y, 16, Side.EAST, track, SbIO.SB_OUT))

    port("a", 0, 0, "out")
    port("b", 0, 1, "out")
    sb("M", 1, 0, 0)
    port("A", 2, 0, "in")
    port("B", 2, 1, "in")
    if middle_nodes:
        sb("D1", 1, 1, 1)
        sb("D2", 1, 2, 2)
    for src, dst in [("a", "M"), ("b", "M"), ("M", "A"), ("M", "B")] + (
            [("D2", "A"), ("a", "D1"), ("D1", "D2")] if middle_nodes else []):
        g.add_edge(ids[src], ids[dst], 10.0)
    return RoutingGraph(g), ids


def test_pathfinder_negotiates_shared_node():
    rg, i = _toy_graph(middle_nodes=2)
    nets = [RouteNet("na", i["a"], [(("A", "in"), [i["A"]])]),
            RouteNet("nb", i["b"], [(("B", "in"), [i["B"]])])]
    paths, _, iters = route_width(rg, nets, {})
    # both first take M; negotiation moves net a (which has an alternative) to the detour
    assert paths["na"][("A", "in")] == [i["a"], i["D1"], i["D2"], i["A"]]
    assert paths["nb"][("B", "in")] == [i["b"], i["M"], i["B"]]
    assert iters >= 2


def test_unroutable_raises_with_overused_nodes_and_nets():
    rg, i = _toy_graph(middle_nodes=0)
    nets = [RouteNet("na", i["a"], [(("A", "in"), [i["A"]])]),
            RouteNet("nb", i["b"], [(("B", "in"), [i["B"]])])]
    with pytest.raises(RoutingError) as exc:
        route_width(rg, nets, {}, RouterParams(max_iterations=5))
    msg = str(exc.value)
    assert "after 5 PathFinder iterations" in msg
    assert f"{i['M']} used by ['na', 'nb']" in msg


def test_congested_small_array_converges(tmp_path):
    ic, graphs = build(tmp_path, 4, 4, tracks=2)
    nl = Netlist("dense")
    pes = [f"p{i}" for i in range(9)]
    for p in pes:
        nl.add_instance(p, "pe", "p", {"inst": 0})
    # every PE drives two others: 18 two-pin connections on 2 tracks per side
    for i, p in enumerate(pes):
        nl.add_net((p, "res"), [(pes[(i + 1) % 9], "data0"), (pes[(i + 4) % 9], "data1")], 16)
    packed = pack(nl, graphs)
    pl = place(packed, graphs, PlaceParams(seed=0))
    rr = route_design(packed, pl, graphs)
    check_routing(rr, graphs)
    assert rr.iterations[16] >= 1


def test_checker_rejects_broken_routes(routed8, arr8):
    _, graphs = arr8
    _, _, rr = routed8
    import copy
    bad = copy.deepcopy(rr)
    name, r = next((n, r) for n, r in bad.nets.items() if max(map(len, r.paths.values())) > 4)
    term, p = next((t, p) for t, p in r.paths.items() if len(p) > 4)
    r.paths[term] = p[:2] + p[3:]
    with pytest.raises(RoutingError, match="not in the 16-bit routing graph"):
        check_routing(bad, graphs)
    bad = copy.deepcopy(rr)
    (n1, r1), (n2, r2) = [(n, r) for n, r in bad.nets.items()
                          if not next(iter(r.paths.values()))[0].startswith("REG")][:2]
    t2 = next(iter(r2.paths))
    r2.paths[t2] = r2.paths[t2] + [next(iter(r1.paths.values()))[1]]
    with pytest.raises(RoutingError):
        check_routing(bad, graphs)


def test_two_netlist_ports_on_one_core_port_is_an_error(arr8):
    _, graphs = arr8
    nl = Netlist("clash")
    nl.add_instance("a", "io_in", "I")
    nl.add_instance("b", "io_in", "I")
    nl.add_instance("o", "io_out", "I")
    nl.add_net(("a", "out"), [("o", "in")], 16)
    nl.add_net(("b", "out"), [("o", "other")], 16)   # the IO core has one 16-bit input
    packed = pack(nl, graphs)
    pl = place(packed, graphs, PlaceParams(seed=0))
    with pytest.raises(RoutingError, match=r"o\.in \(net n0\) and o\.other \(net n1\) both map "
                                           r"to core port PORT:16:\d+:0:f2io_16"):
        route_design(packed, pl, graphs)


def test_power_aware_costs_keep_routes_in_tiles_already_on(arr8, routed8):
    """power_cost 1 is the plain router bit for bit; with power_cost 4 the same placement is
    routed legally through no more tiles (tiles holding a placed instance or a routed node:
    mapper.backend.power.used_tiles) than the plain router uses."""
    _, graphs = arr8
    packed, pl, rr = routed8
    same = route_design(packed, pl, graphs, RouterParams(power_cost=1.0))
    assert same.routes() == rr.routes()
    aware = route_design(packed, pl, graphs, RouterParams(power_cost=4.0))
    check_routing(aware, graphs)
    plain_on, aware_on = used_tiles(pl, rr), used_tiles(pl, aware)
    placed = {tuple(xy) for xy in pl.sites.values()}
    assert placed <= aware_on and placed <= plain_on
    # seed 3 of the gaussian stencil on the 8x8 (21 placed tiles when written): the plain
    # router passed through 4 more tiles, the power-aware one through 1
    assert len(placed) <= len(aware_on) < len(plain_on), (len(placed), len(aware_on),
                                                          len(plain_on))



def test_register_demand_routes_are_simple_paths_with_their_exact_register_count(tmp_path):
    """A branch that must hold more pipeline registers than its shortest route meanders
    through extra switch boxes; the latency-constrained search (PathFinder._search_exact)
    must return a simple path (a wire carries one value) holding exactly the registers asked
    for. On this 2-track 8x8 the search had returned paths through a node twice from 8
    registers up (87 (source, sink, count) cases from the PEs at (1, 2) and (4, 4) to every
    PE, counts 0-15; the first here is (1, 3) with 8), and the route tree rebuilt
    from parents dropped the loop with its registers (laplacian_pyramid seed 0 on the 32x16
    then missed 900 MHz at the same placement)."""
    _, coll = build(tmp_path, 8, 8, tracks=2)
    rg = coll.graphs[16]
    pf = PathFinder(rg, RouterParams(max_exact_states=200_000))
    src = rg.index[rg.port_node(1, 2, "res")]
    found = {}
    for x, y in [(1, 3), (1, 4), (4, 3)]:
        dst = rg.index[rg.port_node(x, y, "data0")]
        shortest = pf._search([src], {dst}, x, y)
        for want in range(0, 13):
            p = pf._search_exact({src: 0}, {dst}, want, x, y)
            if p is None:
                continue
            found[(x, y, want)] = len(p)
            assert len(set(p)) == len(p), (x, y, want)
            assert p[0] == src and p[-1] == dst
            assert sum(1 for v in p[1:-1] if rg.kind[v] == "REG") == want
            assert all(b in rg.succ[a] for a, b in pairwise(p))
            if want == 0:
                assert len(p) == len(shortest)
    # every count up to 12 is routed to each sink, by longer and longer meanders (the
    # registers of a 2-track array come two per detour loop: 53 nodes for 12 registers on
    # the adjacent tile, where the plain route has 5)
    assert len(found) == 3 * 13
    for x, y in [(1, 3), (1, 4), (4, 3)]:
        lengths = [found[(x, y, w)] for w in range(13)]
        assert lengths == sorted(lengths)
    assert found[(1, 3, 0)] == 5 and found[(1, 3, 12)] == 53
    # a register site needs no reservation: each REG node is fed by its switch-box output
    # alone and feeds its register mux alone, so only the net through that output can use it
    regs = [i for i, k in enumerate(rg.kind) if k == "REG"]
    assert len(regs) == 2 * 4 * 64
    for i in regs:
        fanin = rg.ig.fanin[rg.ids[i]]
        assert len(fanin) == 1 and rg.kind[rg.index[fanin[0]]] == "SB"
        assert [rg.kind[j] for j in rg.succ[i]] == ["RMUX"]


def _state_graph_cost(pf: PathFinder, src: int, dst: int, want: int) -> float:
    """The cheapest route from ``src`` to ``dst`` holding ``want`` registers, by networkx's
    Dijkstra over (node, registers so far) states: the reference of the A* below."""
    rg, g = pf.rg, nx.DiGraph()
    for u, succ in enumerate(rg.succ):
        for v in succ:
            if rg.kind[v] == "PORT" and v != dst:
                continue
            step = 1 if rg.kind[v] == "REG" else 0
            for c in range(want + 1 - step):
                g.add_edge((u, c), (v, c + step), weight=pf._cost(v))
    return nx.shortest_path_length(g, (src, 0), (dst, want), weight="weight")


def test_exact_count_search_bounds_and_optimality(tmp_path):
    """The exact-register-count A* (PathFinder._search_states) bounds a state by the graph's
    REG spacing (RoutingGraph.reg_bounds: lead, gap, tail). On canal's uniform switch box
    a register costs 4 nodes (SB_OUT -> REG -> RMUX -> SB_IN of the next tile -> SB_OUT),
    so the bound is tight; it must stay admissible: under uneven node costs (random
    congestion history, three seeds) every route it finds costs exactly what Dijkstra over
    the same states finds."""
    _, coll = build(tmp_path, 8, 8, tracks=2)
    rg = coll.graphs[16]
    lead, gap, tail = rg.reg_bounds
    assert (gap, tail) == (4, 3)
    by_kind = {}
    for i, k in enumerate(rg.kind):
        by_kind.setdefault((k, rg.ids[i].endswith(":IN")), set()).add(lead[i])
    # SB_OUT enters its REG next; an SB_IN passes an SB_OUT first; REG and RMUX go on to the
    # next tile's SB_IN, SB_OUT and REG (an RMUX on the array edge drives nothing: no REG)
    assert by_kind[("SB", False)] == {1} and by_kind[("SB", True)] == {2}
    assert by_kind[("REG", False)] <= {4, len(rg.ids) + 1}
    assert by_kind[("RMUX", False)] <= {3, len(rg.ids) + 1}
    assert by_kind[("PORT", False)] <= {2, len(rg.ids) + 1}
    src = rg.index[rg.port_node(1, 2, "res")]
    for seed in range(3):
        pf = PathFinder(rg, RouterParams(max_exact_states=400_000))
        rnd = random.Random(seed)
        pf.hist = [rnd.choice((0.0, 0.0, 0.5, 2.0)) for _ in rg.ids]
        for (x, y), want in [((1, 3), 0), ((1, 3), 5), ((1, 3), 8), ((4, 4), 3),
                             ((4, 4), 9)]:
            dst = rg.index[rg.port_node(x, y, "data0")]
            p = pf._search_states({src: 0}, {dst}, want, x, y, set(), False)
            assert sum(1 for v in p[1:-1] if rg.kind[v] == "REG") == want
            assert sum(pf._cost(v) for v in p[1:]) == \
                pytest.approx(_state_graph_cost(pf, src, dst, want)), (seed, x, y, want)


def test_a_register_count_out_of_reach_is_named_as_such(tmp_path):
    """A sink the plain router reaches but no route found holds its register count: the
    error says so and names the search bound (it had said "unreachable ... check the core
    port connections", which sent the architect to the wrong place); a sink no route reaches
    at all keeps that message."""
    _, coll = build(tmp_path, 8, 8, tracks=2)
    rg = coll.graphs[16]
    src, dst = rg.port_node(1, 2, "res"), rg.port_node(1, 3, "data0")
    net = RouteNet("n", src, [(("pe", "data0"), [dst])], regs={("pe", "data0"): 12})
    with pytest.raises(RoutingError, match=r"net n: sink pe.data0 \(PORT:16:1:3:data0\) is "
                       r"reachable from PORT:16:1:2:res .* but no route found holds exactly "
                       r"12 pipeline register\(s\) \(searched up to "
                       r"RouterParams.max_exact_states = 50 states; .*another placement or "
                       r"register site may allow it"):
        PathFinder(rg, RouterParams(max_exact_states=50)).route_net(net, [])
    # with room to search, the same request is met (test above: 53 nodes)
    paths, _ = PathFinder(rg, RouterParams()).route_net(net, [])
    assert sum(1 for v in paths[("pe", "data0")][1:-1] if rg.kind[v] == "REG") == 12
