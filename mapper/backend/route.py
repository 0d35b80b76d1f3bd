"""Routing: the routing-graph view the mapper works on, and negotiated-congestion routing.

**Routing-graph view.** :class:`canal.routing.RoutingGraph` (canal owns it, beside the
file format's reader); the nets are :mod:`mapper.backend.nets`.

**Router.** PathFinder (McMurchie & Ebeling, "PathFinder: A Negotiation-Based Performance-Driven
Router for FPGAs", FPGA 1995): every routing node has capacity 1; the cost of entering node
``n`` is ``(b(n) + h(n)) * p(n)`` with base cost ``b`` (1 per node), history cost ``h``
(increased by ``hist_fac`` times the overuse of ``n`` after every iteration in which it is
overused) and present-congestion factor ``p(n) = 1 + pres_fac * max(0, occ(n) + 1 - cap)``
(``pres_fac`` multiplied by ``pres_mult`` each iteration). Each sink is found with A* whose
heuristic is the Manhattan distance in tiles times the minimum cost of one tile hop (an SB_OUT
plus an SB_IN, 2 base units, divided by the track length in tiles), which is admissible
because every multiplier is >= 1. A
multi-sink net is routed as a tree: sinks in order of distance, each search starting from every
node already in the net's tree. After the first iteration, only nets that use an overused node
are ripped up and re-routed; routing stops when no node is overused, or raises
:class:`~cgra.errors.RoutingError` after ``max_iterations`` naming the overused nodes and the
nets using them. The 16-bit and 1-bit graphs are routed separately.

**Exact register counts.** A sink whose path must hold exactly ``k`` pipeline registers
(Cascade's branch-delay matching) is searched over (node, registers so far) states
(:meth:`PathFinder._search_exact`). The A* bound of a state with ``m`` registers still missing
at node ``v`` is the larger of the tile-hop bound above and ``reg_lead[v] + (m - 1) * reg_gap
+ reg_tail`` base units: the fewest nodes up to the next ``REG``, between two ``REG`` nodes and
from the last one to a sink, read off the routing graph (:attr:`canal.routing.
RoutingGraph.reg_bounds`; 1, 4 and 3 on canal's uniform switch box). Ties between equal
estimates go to the deeper state, so a meander collecting registers is followed to its end
instead of every shallower equal-cost state being expanded first. Both keep the search
optimal (the route's cost equals Dijkstra's over the same states, tests/mapper/test_route.py);
on harris seed 0 of the 32x16 they cut the time of all its searches from 34.9 s to 15.6 s
(docs/pnr.md).

**Power-aware costs** (AHA paper §5.5: routing "with costs that favour tiles already
powered"; every tile is a power domain, :mod:`canal.config` ``pg``): with
``RouterParams.power_cost`` = ``k`` > 1, entering a node of a tile that is not yet *on* costs
``k`` times its PathFinder cost. A tile is on when it holds a placed instance or a node
claimed by a routed net (of either width: the 1-bit graph is routed after the 16-bit one and
sees its tiles on); the set grows and shrinks with rip-up and re-route. ``k`` = 1 (the
default) is the plain router, bit for bit. Every multiplier stays >= 1, so the A* heuristic
stays admissible.

**Registers.** A netlist register (tag ``r``) placed in tile (x, y) occupies one pipeline-register
node (``REG``) of that tile: the net driving the register is routed to any free ``REG`` node of
the tile (a multi-target search) and the register's output net starts at that ``REG`` node (its
only successor is the register mux, which then selects the register). ``REG`` nodes are never
used as plain wires by the router; enabling one on a route is the pipelining pass's decision.

**Hybrid arrays** (:mod:`canal.dynamic`: a router per tile beside the static tracks):
:func:`route_design` routes statically first and moves the lowest-ranked congested net to
the dynamic layer while PathFinder does not converge (:mod:`mapper.backend.dynamic`); such a
net has no paths and a :class:`~mapper.backend.nets.DynamicRoute` in
:attr:`RoutingResult.dynamic`.

Route record: for every net, ``paths[sink] = [node ids from the source node to the sink node]``
(a sink is ``(instance, port)``); the union of a net's paths is a tree rooted at its source.
Its file form is :mod:`mapper.stages` (``routing.json``, plus the cyclone ``.route`` text).
"""
from __future__ import annotations

import dataclasses
import heapq
import time
from collections import defaultdict
from itertools import pairwise
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

import networkx as nx

from canal.graph import TileInfo
from canal.routing import RoutingGraph
from cgra.errors import InternalError, PlacementError, RoutingError
from mapper.backend.dynamic import dynamic_routes, layer_of, overflow_pick
from mapper.backend.exact_route import explain_unrouted
from mapper.backend.nets import DynamicRoute, RouteNet, Terminal

if TYPE_CHECKING:
    from mapper.backend.pack import PackedDesign
    from mapper.backend.place import Placement
    from mapper.collateral import Collateral

TileSite = TileInfo
"""A tile as the back end sees it: canal's :class:`~canal.graph.TileInfo`."""


# --------------------------------------------------------------------------- router

#: search states of one feasibility screen of a movable register's site (route_design)
SCREEN_STATES = 20_000


#: the power-aware routing cost of ``cgra run --power-aware`` without a value
#: (:attr:`RouterParams.power_cost`): a tile not yet on costs 4 tiles already on
POWER_AWARE_COST = 4.0


@dataclass
class RouterParams:
    """PathFinder parameters: ``max_iterations`` (rip-up-and-re-route rounds),
    ``max_exact_states`` (search states a latency-constrained branch may expand), ``pres_fac``
    (initial present-congestion factor), ``pres_mult`` (its growth per iteration),
    ``hist_fac`` (history increment per unit of overuse), ``base_cost`` (per node),
    ``power_cost`` (multiplier of a node in a tile not yet on; module docstring)."""

    max_iterations: int = 40
    max_exact_states: int = 600_000
    pres_fac: float = 0.5
    pres_mult: float = 1.6
    hist_fac: float = 1.0
    base_cost: float = 1.0
    #: power-aware routing (module docstring): cost multiplier of a node in a tile that is
    #: not yet on; 1.0 = off (the default), the AHA-style flow uses e.g. 4.0
    #: (``cgra run --power-aware``)
    power_cost: float = 1.0


@dataclass
class NetRoute:
    """The routed tree of one net: ``paths`` sink terminal -> node ids source..sink."""

    name: str
    width: int
    source: Terminal
    paths: dict[Terminal, list[str]] = field(default_factory=dict)

    def nodes(self) -> list[str]:
        """Distinct nodes of the tree, in first-use order."""
        seen: dict[str, None] = {}
        for p in self.paths.values():
            for n in p:
                seen.setdefault(n, None)
        return list(seen)

    def edges(self) -> list[tuple[str, str]]:
        """Distinct tree edges (src, dst)."""
        seen: dict[tuple[str, str], None] = {}
        for p in self.paths.values():
            for e in pairwise(p):
                seen.setdefault(e, None)
        return list(seen)


class CongestionError(RoutingError):
    """PathFinder did not converge on the ``width``-bit graph; ``nets``: the nets using an
    overused node, then (``near``) the other nets using a node in a tile that holds an
    overused node (each sorted). The hybrid policy (:mod:`mapper.backend.dynamic`) moves
    one of them to the dynamic layer."""

    def __init__(self, message: str, width: int, nets: list[str], near: list[str] = ()):
        super().__init__(message)
        self.width, self.nets, self.near = width, nets, list(near)


@dataclass
class RoutingResult:
    """The routing of a design: ``nets`` name -> :class:`NetRoute`; ``reg_sites``: register
    instance -> REG node id; ``iterations`` per width; ``seconds``; ``wirelength`` = number of
    tile-to-tile track segments used (SB_IN nodes), per width; ``dynamic``: net -> its
    :class:`~mapper.backend.nets.DynamicRoute` for the nets on the dynamic layer of a hybrid
    array (their :class:`NetRoute` has no paths)."""

    nets: dict[str, NetRoute]
    reg_sites: dict[str, str]
    iterations: dict[int, int]
    seconds: float
    wirelength: dict[int, int]
    dynamic: dict[str, DynamicRoute] = field(default_factory=dict)

    def routes(self) -> dict[str, list[list[str]]]:
        """net -> list of paths (the ``route_bitstream`` input format of canal)."""
        return {n: list(r.paths.values()) for n, r in self.nets.items()}

    def total_wirelength(self) -> int:
        return sum(self.wirelength.values())


class PathFinder:
    """Negotiated-congestion router on one :class:`RoutingGraph` (see the module docstring)."""

    def __init__(self, graph: RoutingGraph, params: RouterParams | None = None,
                 on_tiles: Iterable[tuple[int, int]] = ()):
        self.rg = graph
        self.p = params or RouterParams()
        n = len(graph.ids)
        #: power-aware routing: tiles on whatever this graph's routes do (placed instances,
        #: tiles of routes of other widths), and claimed nodes per tile of this graph
        self.power = self.p.power_cost != 1.0
        self.on_fixed = set(on_tiles)
        self.tile_use: dict[tuple[int, int], int] = {}
        self.hist = [0.0] * n
        self.occ = [0] * n
        #: node index -> the nets using it (a node no net has used has no entry)
        self.users: defaultdict[int, set[str]] = defaultdict(set)
        self.pres_fac = self.p.pres_fac
        # one tile of Manhattan distance costs at least an SB_OUT and an SB_IN per wire of
        # ``track_length`` tiles: the A* heuristic stays admissible for long tracks. Staggered
        # segments (canal.passes.segment_tracks) keep an SB_IN and a (pass-through) SB_OUT
        # node in every tile they span, so there every tile costs both. A diagonal wire
        # (canal.custom.add_diagonal_links) covers two tiles of Manhattan distance per hop
        seg = graph.params.get("segments") == "staggered"
        self.hop = 2.0 * self.p.base_cost / (
            1 if seg else max(1, int(graph.params.get("track_length", 1)))) / (
            2 if graph.params.get("diagonal_tracks") else 1)
        self._g = [0.0] * n
        self._stamp = [0] * n
        self._prev = [-1] * n
        self._epoch = 0

    def _cost(self, i: int) -> float:
        over = self.occ[i]  # occupancy by other nets (this net's nodes are ripped up)
        c = (self.p.base_cost + self.hist[i]) * (1.0 + self.pres_fac * over)
        if self.power:
            t = self.rg.xy[i]
            if t not in self.on_fixed and not self.tile_use.get(t):
                c *= self.p.power_cost
        return c

    def _search(self, starts: list[int], targets: set[int], tx: int, ty: int,
                blocked_kinds: tuple[str, ...] = ("REG", "PORT")) -> list[int] | None:
        """A* from ``starts`` (cost 0) to any of ``targets``; returns the node path from a
        start to the reached target, or ``None`` when no target is reachable."""
        self._epoch += 1
        ep = self._epoch
        gcost, stamp, prev = self._g, self._stamp, self._prev
        xy, succ, kind = self.rg.xy, self.rg.succ, self.rg.kind
        hop = self.hop
        through = self.rg.mandatory_regs
        heap: list[tuple[float, float, int]] = []
        for s in starts:
            stamp[s] = ep
            gcost[s] = 0.0
            prev[s] = -1
            x, y = xy[s]
            heapq.heappush(heap, (hop * (abs(x - tx) + abs(y - ty)), 0.0, s))
        while heap:
            f, gc, u = heapq.heappop(heap)
            if gc > gcost[u]:
                continue
            if u in targets:
                path = [u]
                while prev[path[-1]] != -1:
                    path.append(prev[path[-1]])
                path.reverse()
                return path
            for v in succ[u]:
                if kind[v] in blocked_kinds and v not in targets and v not in through:
                    continue
                ng = gc + self._cost(v)
                if stamp[v] != ep or ng < gcost[v]:
                    stamp[v] = ep
                    gcost[v] = ng
                    prev[v] = u
                    x, y = xy[v]
                    heapq.heappush(heap, (ng + hop * (abs(x - tx) + abs(y - ty)), ng, v))
        return None

    def _search_exact(self, starts: dict[int, int], targets: set[int], want: int, tx: int,
                      ty: int, blocked: set[int] = frozenset()) -> list[int] | None:
        """A* over (node, registers so far) states from ``starts`` (node -> registers on
        its path from the root) to a target reached with exactly ``want`` registers; a
        ``REG`` node counts one when the path passes through it (a bypassable register is
        enabled by routing through it); ``blocked`` nodes (the net's own tree) are not
        entered. Returns a simple node path from a start to the target holding ``want``
        registers, or ``None`` when none is found within ``max_exact_states`` expansions.

        The state search may reach a node twice with different register counts: a route
        that meanders to collect registers can cross itself. Such a path is not a route (a
        wire carries one value), and the tree rebuilt from parents drops its loop with the
        loop's registers. So: when the search's path is not simple, the path with its loops
        erased (as the tree keeps it) is taken if it still holds ``want`` registers, else
        the search runs again with every state's path kept simple (a state never extends a
        path that already holds its node; slower, and a bounded heuristic: a simple path
        pruned at a state reached first by a cheaper one is not tried). A simple path from
        the first search is returned as found."""
        p = self._search_states(starts, targets, want, tx, ty, blocked, False)
        if p is None or len(set(p)) == len(p):
            return p
        parent: dict[int, int] = {p[0]: -1}
        for a, b in pairwise(p):
            parent.setdefault(b, a)
        erased = [p[-1]]
        while parent[erased[-1]] != -1:
            erased.append(parent[erased[-1]])
        erased.reverse()
        if sum(1 for v in erased[1:-1] if self.rg.kind[v] == "REG") + starts[p[0]] == want:
            return erased
        return self._search_states(starts, targets, want, tx, ty, blocked, True)

    def _search_states(self, starts: dict[int, int], targets: set[int], want: int, tx: int,
                       ty: int, blocked: set[int], simple: bool) -> list[int] | None:
        """The A* of :meth:`_search_exact`; ``simple``: keep every state's path simple."""
        xy, succ, kind = self.rg.xy, self.rg.succ, self.rg.kind
        hop = self.hop
        # k registers still missing at node v cost at least the nodes up to the first REG
        # (reg_lead[v]), reg_gap per further REG, and reg_tail from the last REG to a sink
        # (a PORT or a register site; else just the sink), each node >= base cost: an
        # admissible bound (RoutingGraph.reg_bounds)
        lead, gap, tail = self.rg.reg_bounds
        base = self.p.base_cost
        if not all(kind[t] in ("PORT", "REG") for t in targets):
            tail = 1
        far = len(kind) + 1
        # a state (node, registers so far) is the int node * span + registers (registers <=
        # want < span): cheaper to hash than a tuple. Heap entries are (estimate, -cost so
        # far, state): equal estimates pop the deeper state first (module docstring). The
        # cost of entering a node is _cost's, inlined (the same float operations in the same
        # order)
        span = want + 1
        hist, occ, pres = self.hist, self.occ, self.pres_fac
        power, tile_xy = self.power, self.rg.xy
        best: dict[int, float] = {}
        prev: dict[int, int] = {}
        heap: list[tuple[float, float, int]] = []
        push, pop = heapq.heappush, heapq.heappop
        inf = float("inf")
        for s_node, c in starts.items():
            if c > want:
                continue
            st = s_node * span + c
            best[st] = 0.0
            prev[st] = -1
            x, y = xy[s_node]
            k = want - c
            push(heap, (max(hop * (abs(x - tx) + abs(y - ty)),
                            base * (lead[s_node] + (k - 1) * gap + tail) if k else 0.0),
                        -0.0, st))
        expanded = 0
        limit = self.p.max_exact_states
        #: nodes reached in some state: only these can already be on a state's path
        reached = set(starts)

        def on_path(s: int, v: int) -> bool:
            while s != -1:
                if s // span == v:
                    return True
                s = prev[s]
            return False

        while heap:
            _f, gc, st = pop(heap)
            gc = -gc
            if gc > best.get(st, inf):
                continue
            expanded += 1
            if expanded > limit:
                return None         # bounded: an exhaustive search of a big graph is slow
            u, c = divmod(st, span)
            if u in targets:
                if c != want:
                    continue
                path = []
                s = st
                while s != -1:
                    path.append(s // span)
                    s = prev[s]
                if not simple or len(set(path)) == len(path):
                    return path[::-1]
                continue            # its path changed to one through itself after it was pushed
            for v in succ[u]:
                kv = kind[v]
                if (kv == "PORT" and v not in targets) or v in blocked:
                    continue
                if simple and v in reached and on_path(st, v):
                    continue        # a simple path only (docstring)
                nc = c + 1 if kv == "REG" and v not in targets else c
                if nc > want or (nc < want and lead[v] >= far):
                    continue        # too many registers, or a missing one out of reach
                cost = (base + hist[v]) * (1.0 + pres * occ[v])
                if power:
                    t = tile_xy[v]
                    if t not in self.on_fixed and not self.tile_use.get(t):
                        cost *= self.p.power_cost
                ng = gc + cost
                sv = v * span + nc
                if ng < best.get(sv, inf):
                    best[sv] = ng
                    prev[sv] = st
                    if simple:
                        reached.add(v)
                    x, y = xy[v]
                    k = want - nc
                    push(heap, (ng + max(hop * (abs(x - tx) + abs(y - ty)),
                                         base * (lead[v] + (k - 1) * gap + tail) if k
                                         else 0.0), -ng, sv))
        return None

    def _ripup(self, net: str, nodes: Iterable[int]) -> None:
        for i in nodes:
            if net in self.users.get(i, ()):
                self.users[i].discard(net)
                self.occ[i] -= 1
                if self.occ[i] == 0:
                    t = self.rg.xy[i]
                    self.tile_use[t] -= 1

    def _claim(self, net: str, nodes: Iterable[int]) -> None:
        for i in nodes:
            if net not in self.users[i]:
                self.users[i].add(net)
                self.occ[i] += 1
                if self.occ[i] == 1:
                    t = self.rg.xy[i]
                    self.tile_use[t] = self.tile_use.get(t, 0) + 1

    def route_net(self, net: RouteNet, old: list[int], use_keep: bool = False
                  ) -> tuple[dict[Terminal, list[int]], list[int]]:
        """Rip up ``old`` (node indices) and route ``net``; returns (sink -> path indices,
        tree node indices). A sink with a register requirement (``net.regs``) is reached by a
        branch that makes its whole path hold exactly that many registers. Raises
        :class:`RoutingError` when a sink is unreachable (or not with its register count)."""
        self._ripup(net.name, old)
        idx, kind = self.rg.index, self.rg.kind
        src = idx[net.source]
        tree: list[int] = [src]
        in_tree = {src}
        branchable = [src]
        parent: dict[int, int] = {src: -1}
        regs: dict[int, int] = {src: 0}       # registers on the path root -> node
        paths: dict[Terminal, list[int]] = {}
        sx, sy = self.rg.xy[src]
        kept = {t: [idx[n] for n in pth] for t, pth in net.keep.items()
                if use_keep and pth and pth[0] == net.source and all(n in idx for n in pth)}
        if any(parent.setdefault(b, a) != a for p in kept.values() for a, b in pairwise(p)):
            kept, parent = {}, {src: -1}    # not a tree: route every sink afresh
        for term, p in kept.items():
            for v in p[1:]:
                if v not in in_tree:
                    in_tree.add(v)
                    tree.append(v)
                    regs[v] = regs[parent[v]] + (1 if kind[v] == "REG" else 0)
                    if kind[v] not in ("REG", "PORT"):
                        branchable.append(v)
            paths[term] = p
        self._claim(net.name, tree)
        # sinks with a register requirement after the free ones, fewest registers first:
        # a shared prefix carries the smallest count of the sinks below it, and a sink that
        # needs more adds registers on its own branch
        order = sorted(net.sinks, key=lambda s: (s[0] in net.regs, net.regs.get(s[0], 0),
                                                  abs(self.rg.xy[idx[s[1][0]]][0] - sx)
                                                  + abs(self.rg.xy[idx[s[1][0]]][1] - sy)))
        for term, cands in order:
            if term in kept:
                continue
            targets = {idx[c] for c in cands} - in_tree
            tx, ty = self.rg.xy[idx[cands[0]]]
            want = net.regs.get(term)
            if not targets:
                p = None
            elif want is None:
                p = self._search(branchable, targets, tx, ty)
            else:
                p = self._search_exact({v: regs[v] for v in branchable}, targets, want, tx, ty,
                                       in_tree)
            if p is None:
                what = cands[0] if len(cands) == 1 else \
                    f"{len(cands)} register sites in tile ({tx}, {ty})"
                if want is not None and targets and \
                        self._search(branchable, targets, tx, ty) is not None:
                    # the sink is reachable: the register count is what fails
                    raise RoutingError(
                        f"net {net.name}: sink {term[0]}.{term[1]} ({what}) is reachable from "
                        f"{net.source} in the {self.rg.width}-bit routing graph "
                        f"{self.rg.source}, but no route found holds exactly {want} pipeline "
                        f"register(s) (searched up to RouterParams.max_exact_states = "
                        f"{self.p.max_exact_states} states; a detour that leaves a tile and "
                        f"comes back passes at least two switch-box outputs, so a count may be "
                        f"out of reach from this start); another placement or register site "
                        f"may allow it")
                how = "" if want is None else f" with exactly {want} pipeline register(s)"
                raise RoutingError(
                    f"net {net.name}: sink {term[0]}.{term[1]} ({what}) is unreachable from "
                    f"{net.source}{how} in the {self.rg.width}-bit routing graph "
                    f"{self.rg.source}; check the core port connections of tile ({tx}, {ty})")
            for a, b in pairwise(p):
                parent.setdefault(b, a)
            for v in p:
                if v not in in_tree:
                    in_tree.add(v)
                    tree.append(v)
                    regs[v] = regs[parent[v]] + (1 if kind[v] == "REG" else 0)
                    if kind[v] not in ("REG", "PORT"):
                        branchable.append(v)
            self._claim(net.name, p)  # claim as we go so later sinks of this net see it free
            # full path from the source through parents
            full = [p[-1]]
            while parent.get(full[-1], -1) != -1:
                full.append(parent[full[-1]])
            full.reverse()
            if want is not None:
                held = sum(1 for v in full[1:-1] if kind[v] == "REG")
                if held != want:
                    raise InternalError(f"net {net.name}: the route to {term[0]}.{term[1]} "
                                        f"holds {held} pipeline registers, {want} were asked "
                                        f"for")
            paths[term] = full
        self._claim(net.name, tree)
        return paths, tree


def _overused(pf: PathFinder) -> list[int]:
    return [i for i, o in enumerate(pf.occ) if o > 1]


def route_width(graph: RoutingGraph, nets: list[RouteNet], reg_feeds: dict[str, str],
                params: RouterParams | None = None,
                on_tiles: Iterable[tuple[int, int]] = ()
                ) -> tuple[dict[str, dict[Terminal, list[str]]], dict[str, str], int]:
    """Route ``nets`` on one graph with PathFinder. ``on_tiles``: tiles on before this
    graph is routed (power-aware costs, module docstring; unused with ``power_cost`` 1).

    ``reg_feeds``: register instance -> name of the net whose register sink decides the
    register's REG node; a net with ``reg_source`` set starts at that REG node. Returns
    (net -> sink -> node ids, register instance -> REG node id, iterations used). Raises
    :class:`RoutingError` naming overused nodes and their nets when congestion remains.
    """
    p = params or RouterParams()
    pf = PathFinder(graph, p, on_tiles)
    by_name = {n.name: n for n in nets}
    # order: a register's output net after the net feeding the register
    deps = nx.DiGraph()
    for n in nets:
        deps.add_node(n.name)
        if n.reg_source is not None:
            deps.add_edge(reg_feeds[n.reg_source], n.name)
    try:
        order = list(nx.lexicographical_topological_sort(deps))
    except nx.NetworkXUnfeasible:
        cyc = nx.find_cycle(deps)
        raise RoutingError(f"register loop through nets {[a for a, _ in cyc]} without any "
                           f"core in between; a register chain must end at a core") from None
    trees: dict[str, list[int]] = {n.name: [] for n in nets}
    paths: dict[str, dict[Terminal, list[int]]] = {}
    reg_site: dict[str, str] = {}
    idx = graph.index
    it = 0
    for it in range(1, p.max_iterations + 1):
        over = set(_overused(pf)) if it > 1 else set()
        redo: set[str] = set()
        for name in order:
            net = by_name[name]
            if net.reg_source is not None:
                site = reg_site[net.reg_source]
                if net.source != site:
                    net.source = site
                    redo.add(name)
            if it == 1 or name in redo or any(i in over for i in trees[name]):
                if it > 1 and net.regs and name not in redo:
                    # latency-constrained nets keep the branches that are not congested:
                    # re-routing a whole net from scratch may not find its register counts
                    net.keep = {t: [graph.ids[i] for i in pth] for t, pth in paths[name].items()
                                if not any(i in over for i in pth)}
                res, tree = pf.route_net(net, trees[name],
                                         use_keep=(it == 1 or bool(net.regs)) and name not in redo)
                # the REG that roots a register output net belongs to the feeding net
                if net.reg_source is not None:
                    root = idx[net.source]
                    pf._ripup(name, [root])
                    tree = [i for i in tree if i != root]
                trees[name] = tree
                paths[name] = res
                for term, reg in net.reg_sinks.items():
                    new = graph.ids[res[term][-1]]
                    reg_site[reg] = new
        overused = _overused(pf)
        if not overused:
            break
        for i in overused:
            pf.hist[i] += p.hist_fac * (pf.occ[i] - 1)
        pf.pres_fac *= p.pres_mult
    else:
        overused = _overused(pf)
        lines = [f"{graph.ids[i]} used by {sorted(pf.users.get(i, ()))}" for i in overused[:20]]
        users = sorted({u for i in overused for u in pf.users.get(i, ())})
        hot = {graph.xy[i] for i in overused}
        near = sorted({u for i, us in pf.users.items() if graph.xy[i] in hot
                       for u in us} - set(users))
        # small array, core-to-core nets: the exact router says whether a routing exists
        # (bounded to a few seconds; mapper.backend.exact_route.EXPLAIN_TIMEOUT_S)
        raise CongestionError(
            f"{graph.width}-bit routing did not converge after {p.max_iterations} PathFinder "
            f"iterations: {len(overused)} overused node(s): " + "; ".join(lines)
            + ("; ..." if len(overused) > 20 else "")
            + ". Fix: use a larger array or more tracks, or spread the placement "
              "(another seed / lower utilisation)." + explain_unrouted(graph, nets),
            graph.width, users, near)
    out = {name: {t: [graph.ids[i] for i in pth] for t, pth in res.items()}
           for name, res in paths.items()}
    return out, reg_site, it


# --------------------------------------------------------------------------- design level

def route_design(packed, placement, coll: Collateral,
                 params: RouterParams | None = None,
                 pinned: dict[str, dict[Terminal, int]] | None = None,
                 pinned_sites: dict[str, str] | None = None,
                 movable: set[str] | frozenset[str] = frozenset(),
                 keep: dict[str, dict[Terminal, list[str]]] | None = None,
                 dynamic: Iterable[str] | None = None) -> RoutingResult:
    """Route every net of a packed, placed design (:func:`route_static`), on a hybrid array
    with the overflow policy of :mod:`mapper.backend.dynamic`.

    ``dynamic``: the nets to carry on the dynamic layer (in flow-id order); ``None`` on a
    hybrid array (a design whose routing graphs carry a dynamic layer, :mod:`canal.dynamic`)
    = static tracks first: when PathFinder does not converge, the net using an overused
    node with the lowest activity x fanout (:func:`mapper.backend.dynamic.overflow_rank`)
    that the layer can carry moves to it, and routing starts again; the congestion error
    is raised, with the reason each of its nets stayed static, when none can move. On a
    static array ``None`` = no dynamic nets, and naming any is a :class:`RoutingError`.
    Other arguments and errors: :func:`route_static`."""
    def static(dyn: list[str]) -> RoutingResult:
        return route_static(packed, placement, coll, params, pinned, pinned_sites, movable,
                            keep, dyn)

    layer = layer_of(coll)
    if dynamic is not None or layer is None:
        return static(list(dynamic or ()))
    moved: list[str] = []
    while True:
        try:
            return static(moved)
        except CongestionError as exc:
            if exc.width != layer.width:
                raise
            pick, why = overflow_pick(packed, placement, coll, layer, exc.nets, moved)
            if pick is None:
                pick, _ = overflow_pick(packed, placement, coll, layer, exc.near, moved)
            if pick is None:
                raise CongestionError(f"{exc} The dynamic layer takes none of these nets "
                                      f"nor any other net in their tiles: {why}", exc.width,
                                      exc.nets, exc.near) from None
            moved.append(pick)


def route_static(packed, placement, coll: Collateral,
                 params: RouterParams | None = None,
                 pinned: dict[str, dict[Terminal, int]] | None = None,
                 pinned_sites: dict[str, str] | None = None,
                 movable: set[str] | frozenset[str] = frozenset(),
                 keep: dict[str, dict[Terminal, list[str]]] | None = None,
                 dynamic: list[str] | tuple[str, ...] = ()) -> RoutingResult:
    """Route every net of a packed, placed design, the nets of ``dynamic`` on the dynamic
    layer (:func:`mapper.backend.dynamic.dynamic_routes`; no paths) and the others on the
    static tracks.

    ``packed``: :class:`mapper.backend.pack.PackedDesign`; ``placement``:
    :class:`mapper.backend.place.Placement`; ``coll``: the design's collateral. Each net is
    routed on the graph of its width. ``pinned`` (latency-constrained routing): net -> sink ->
    the exact number of pipeline registers its path must hold (the pipelining pass pins
    every sink's latency this way and asks for more where a branch must be delayed);
    ``pinned_sites``: netlist register -> the REG node it must keep; a register of
    ``movable`` may only take a register site of its tile from which every pinned sink of its
    output net is reachable with its register count (checked without congestion); ``keep``:
    net -> sink -> a previous path the first PathFinder iteration keeps (re-routing only
    what must change).
    Raises :class:`RoutingError` (congestion (:class:`CongestionError`), unreachable sink or
    register count, missing graph, a dynamic net the layer cannot carry) and
    :class:`PlacementError` (an instance without a site).
    """
    t0 = time.perf_counter()
    dyn_routes = dynamic_routes(packed, placement, coll, dynamic) if dynamic else {}
    graphs = coll.graphs
    per_width: dict[int, list[RouteNet]] = {}
    reg_feeds_w: dict[int, dict[str, str]] = {}
    meta: dict[str, tuple[int, Terminal]] = {}
    port_user: dict[str, tuple[str, Terminal]] = {}

    def claim_port(node: str, term: Terminal, net: str) -> None:
        prev = port_user.setdefault(node, (net, term))
        if prev[1] != term:
            raise RoutingError(f"netlist ports {prev[1][0]}.{prev[1][1]} (net {prev[0]}) and "
                               f"{term[0]}.{term[1]} (net {net}) both map to core port {node}; "
                               f"name the ports like the core's or give PackParams.port_map")

    out_net = {n.source[0]: n for n in packed.nets if n.source[0] in movable}

    def feasible_sites(reg: str, sites: list[str], rg: RoutingGraph) -> list[str]:
        """The sites of ``reg`` from which its output net's pinned sinks are reachable with
        their register counts (all of them when none is)."""
        want = (pinned or {}).get(out_net[reg].name) if reg in out_net else None
        if not want:
            return sites
        # a screen, not a proof: each check is bounded to a small search (an infeasible
        # register count would otherwise explore max_exact_states per site and sink)
        pf = PathFinder(rg, dataclasses.replace(params or RouterParams(),
                                                max_exact_states=SCREEN_STATES))
        checks = []
        for (inst, port), w in want.items():
            x, y = _site(placement, inst)
            if packed.instances[inst].tag == "r":
                node = (pinned_sites or {}).get(inst)
                if node is None:
                    continue
            else:
                node = rg.port_node(x, y, packed.core_port(inst, port, x, y, rg, "in"))
            checks.append((rg.index[node], w, x, y))
        ok = [s for s in sites if all(pf._search_exact({rg.index[s]: 0}, {t}, w, x, y)
                                      is not None for t, w, x, y in checks)]
        return ok or sites

    for net in packed.nets:
        if net.width not in graphs:
            raise RoutingError(f"net {net.name} is {net.width} bits but the design has routing "
                               f"graphs for widths {sorted(graphs)}")
        if net.name in dyn_routes:
            continue
        rg = graphs[net.width]
        src_inst, src_port = net.source
        rs = None
        if packed.instances[src_inst].tag == "r":
            rs = src_inst
            source = ""  # decided by the net feeding the register
        else:
            x, y = _site(placement, src_inst)
            source = rg.port_node(x, y, packed.core_port(src_inst, src_port, x, y, rg, "out"))
            claim_port(source, net.source, net.name)
        sinks = []
        reg_sinks: dict[Terminal, str] = {}
        for inst, port in net.sinks:
            x, y = _site(placement, inst)
            if packed.instances[inst].tag == "r":
                regs = rg.regs_by_tile.get((x, y), [])
                if pinned_sites and inst in pinned_sites:
                    regs = [pinned_sites[inst]]
                elif inst in movable:
                    regs = feasible_sites(inst, regs, rg)
                if not regs:
                    raise RoutingError(f"register {inst} is placed in tile ({x}, {y}) which has "
                                       f"no {rg.width}-bit pipeline-register sites")
                sinks.append(((inst, port), list(regs)))
                reg_sinks[(inst, port)] = inst
                reg_feeds_w.setdefault(net.width, {})[inst] = net.name
            else:
                pn = rg.port_node(x, y, packed.core_port(inst, port, x, y, rg, "in"))
                claim_port(pn, (inst, port), net.name)
                sinks.append(((inst, port), [pn]))
        per_width.setdefault(net.width, []).append(
            RouteNet(net.name, source, sinks, rs, reg_sinks,
                     dict((pinned or {}).get(net.name, {})),
                     dict((keep or {}).get(net.name, {}))))
        meta[net.name] = (net.width, net.source)
    result_nets: dict[str, NetRoute] = {}
    reg_sites: dict[str, str] = {}
    iters: dict[int, int] = {}
    wl: dict[int, int] = {}
    # power-aware routing: the tiles of placed instances are on from the start; each width
    # sees the tiles of the widths routed before it on
    on_tiles = {_site(placement, i) for i in packed.instances} \
        if params is not None and params.power_cost != 1.0 else set()
    for w in sorted(per_width, reverse=True):
        rg = graphs[w]
        feeds = reg_feeds_w.get(w, {})
        for n in per_width[w]:
            if n.reg_source is not None and n.reg_source not in feeds:
                raise RoutingError(f"register {n.reg_source} drives net {n.name} but no "
                                   f"{w}-bit net feeds it")
            if n.reg_source is not None:
                n.source = rg.regs_by_tile[_site(placement, n.reg_source)][0]
        paths, sites, it = route_width(rg, per_width[w], feeds, params, on_tiles)
        if on_tiles:
            on_tiles |= {rg.xy[rg.index[n]] for pth in paths.values() for q in pth.values()
                         for n in q}
        iters[w] = it
        reg_sites.update(sites)
        used: set[str] = set()
        for name, pth in paths.items():
            width, src = meta[name]
            result_nets[name] = NetRoute(name, width, src, pth)
            for p in pth.values():
                used.update(n for n in p if rg.is_sb_in(n))
        wl[w] = len(used)
    for name in dyn_routes:
        net = next(n for n in packed.nets if n.name == name)
        result_nets[name] = NetRoute(name, net.width, net.source, {})
    ordered = {n.name: result_nets[n.name] for n in packed.nets}
    return RoutingResult(ordered, reg_sites, iters, time.perf_counter() - t0, wl, dyn_routes)


def _site(placement, inst: str) -> tuple[int, int]:
    try:
        return placement.sites[inst]
    except KeyError:
        raise PlacementError(f"instance {inst} has no placement site; run placement on the "
                             f"packed design first") from None


# --------------------------------------------------------------------------- checkers

def check_routes(packed: PackedDesign, placement: Placement, result: RoutingResult,
                 coll: Collateral, where: str = "", fix: str = "") -> None:
    """Raise :class:`RoutingError` unless ``result`` routes exactly the nets of ``packed``
    as placed by ``placement`` (checked by :func:`mapper.backend.place.check_placement`
    first) on the graphs of ``coll``:

    * every net of ``packed`` is routed, with its width and source, and no other net;
    * every net has a path to each of its sinks and to nothing else;
    * every node of a path is a node of the routing graph of the net's width, and
      consecutive nodes are joined by an edge of that graph;
    * every path starts at the node of the net's source (the core port of the source's
      tile, or the ``REG`` node of a register, ``reg_sites``) and ends at the node of its
      sink (a core port, or the ``REG`` node of a register sink, in the register's tile);
    * and the invariants of :func:`check_routing` (trees, no node used by two nets).

    The message names the net, the sink, the node (and its step on the path); ``where`` (the
    file read, e.g. ``routing.json``) prefixes it and ``fix`` ends it. Linear in the routed
    nodes."""
    pre = f"{where}: " if where else ""
    tail = f"; {fix}" if fix else ""
    nets = {n.name: n for n in packed.nets}
    for name in result.nets:
        if name not in nets:
            raise RoutingError(f"{pre}net {name} is not a net of the packed design "
                               f"{packed.name}{tail}")

    def node_of(term: Terminal, direction: str, rg: RoutingGraph, net: str) -> str:
        inst, port = term
        x, y = placement.sites[inst]
        if packed.instances[inst].tag == "r":
            reg = result.reg_sites.get(inst)
            if reg is None:
                raise RoutingError(f"{pre}net {net}: register {inst} (placed in tile "
                                   f"({x}, {y})) has no REG node in reg_sites{tail}")
            i = rg.index.get(reg)
            if i is None or rg.kind[i] != "REG" or rg.xy[i] != (x, y):
                raise RoutingError(f"{pre}net {net}: register {inst}'s REG node {reg} "
                                   f"(reg_sites) is not a {rg.width}-bit pipeline-register "
                                   f"node of its tile ({x}, {y}){tail}")
            return reg
        try:
            return rg.port_node(x, y, packed.core_port(inst, port, x, y, rg, direction))
        except RoutingError as exc:
            raise RoutingError(f"{pre}net {net}: terminal {inst}.{port}: {exc}{tail}") from None

    for name, net in nets.items():
        r = result.nets.get(name)
        if r is None:
            raise RoutingError(f"{pre}net {name} of the packed design ({net.width}-bit, "
                               f"source {net.source[0]}.{net.source[1]}) is not routed{tail}")
        if r.width != net.width or tuple(r.source) != tuple(net.source):
            raise RoutingError(f"{pre}net {name} is routed as a {r.width}-bit net from "
                               f"{r.source[0]}.{r.source[1]}; the packed design's is "
                               f"{net.width}-bit from {net.source[0]}.{net.source[1]}{tail}")
        rg = coll.graphs.get(net.width)
        if rg is None:
            raise RoutingError(f"{pre}net {name} is {net.width}-bit but design {coll.name} has "
                               f"routing graphs of {sorted(coll.graphs)} bits{tail}")
        dyn = result.dynamic.get(name)
        if dyn is not None:
            if r.paths or set(dyn.sinks) != set(net.sinks):
                raise RoutingError(f"{pre}net {name} is on the dynamic layer but has static "
                                   f"paths, or its sinks are not the net's{tail}")
            continue
        sinks = set(net.sinks)
        for term in net.sinks:
            if term not in r.paths:
                raise RoutingError(f"{pre}net {name} has no path to its sink "
                                   f"{term[0]}.{term[1]}{tail}")
        src = node_of(net.source, "out", rg, name)
        for term, path in r.paths.items():
            sink = f"{term[0]}.{term[1]}"
            if term not in sinks:
                raise RoutingError(f"{pre}net {name} has a path to {sink}, which is not one of "
                                   f"its sinks{tail}")
            if not path:
                raise RoutingError(f"{pre}net {name}: the path to sink {sink} is empty{tail}")
            for k, n in enumerate(path):
                if n not in rg.index:
                    raise RoutingError(f"{pre}net {name}: node {n} (step {k} of the path to "
                                       f"sink {sink}) is not a node of the {rg.width}-bit "
                                       f"routing graph{tail}")
            for k, (a, b) in enumerate(pairwise(path)):
                if not rg.has_edge(a, b):
                    raise RoutingError(f"{pre}net {name}: the path to sink {sink} is not "
                                       f"connected: no edge {a} -> {b} (steps {k} and {k + 1}) "
                                       f"in the {rg.width}-bit routing graph{tail}")
            if path[0] != src:
                raise RoutingError(f"{pre}net {name}: the path to sink {sink} starts at "
                                   f"{path[0]}, not at the net's source "
                                   f"{net.source[0]}.{net.source[1]} ({src}){tail}")
            end = node_of(term, "in", rg, name)
            if path[-1] != end:
                raise RoutingError(f"{pre}net {name}: the path to sink {sink} ends at "
                                   f"{path[-1]}, not at the sink's node {end}{tail}")
    for name in result.dynamic:
        if name not in nets:
            raise RoutingError(f"{pre}dynamic net {name} is not a net of the packed design "
                               f"{packed.name}{tail}")
    if result.dynamic:
        dynamic_routes(packed, placement, coll, sorted(result.dynamic,
                                                       key=lambda n: result.dynamic[n].id))
    try:
        check_routing(result, coll)
    except RoutingError as exc:
        raise RoutingError(f"{pre}{exc}{tail}") from None


def check_routing(result: RoutingResult, coll: Collateral) -> None:
    """Check the routing invariants; raises :class:`RoutingError` naming the first violation.

    * every path edge is an edge of the routing graph of the net's width;
    * every net is a tree: each node except the root has exactly one predecessor in the net,
      all paths start at the same root, and the tree is connected and acyclic;
    * no node is overused: each node belongs to one net, except the REG node of a netlist
      register, shared by the net ending there and the net starting there (as its root);
    * a net on the dynamic layer (``result.dynamic``) has no static path.
    """
    owner: dict[tuple[int, str], str] = {}
    roots: dict[tuple[int, str], str] = {}
    for name, r in result.nets.items():
        rg = coll.graphs[r.width]
        if name in result.dynamic:
            if r.paths:
                raise RoutingError(f"net {name} is on the dynamic layer and has static paths")
            continue
        if not r.paths:
            raise RoutingError(f"net {name} has no routed sink")
        root = next(iter(r.paths.values()))[0]
        t = nx.DiGraph()
        t.add_node(root)
        for term, p in r.paths.items():
            if p[0] != root:
                raise RoutingError(f"net {name}: path to {term} starts at {p[0]}, not at the "
                                   f"net's root {root}")
            for a, b in pairwise(p):
                if not rg.has_edge(a, b):
                    raise RoutingError(f"net {name}: edge {a} -> {b} is not in the "
                                       f"{r.width}-bit routing graph")
                t.add_edge(a, b)
        for n in t.nodes:
            if n != root and t.in_degree(n) != 1:
                raise RoutingError(f"net {name}: node {n} has {t.in_degree(n)} drivers in the "
                                   f"net; a net must be a tree")
        if t.in_degree(root) != 0 or not nx.is_arborescence(t):
            raise RoutingError(f"net {name}: the routed nodes do not form a tree rooted at "
                               f"{root}")
        for n in t.nodes:
            key = (r.width, n)
            if n == root and rg.kind[rg.index[n]] == "REG":
                roots[key] = name
                continue
            if key in owner:
                raise RoutingError(f"node {n} is overused: nets {owner[key]} and {name}")
            owner[key] = name
    for key, name in roots.items():
        if key not in owner:
            raise RoutingError(f"net {name} starts at register node {key[1]} that no net feeds")
