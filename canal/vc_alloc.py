"""Routing of logical flows on the dynamic mesh, VC allocation, a deadlock check and the
routing tables of :mod:`canal.router`.

Source: Y. Zhang, PhD thesis (Stanford 2020), ch. 3.3.2: routes are static source routes
(no adaptive or oblivious routing: packets must arrive in order); broadcasts are trees
"with duplication occurring at the last router possible"; and, because PBs propagate
backpressure and their input buffers are too small for end-to-end credits, "no two logical
paths may be allowed to conflict at *any* point in the network ... VC allocation is
performed to ensure that all logical paths traversing the same physical link are placed into
separate buffers".

* A :class:`Flow` goes from ``src`` to one or more ``dsts`` (x, y) routers. Its route is
  dimension-order XY per destination (x first, then y), or the ``paths`` given (one router
  list per destination, a "table route"). The union of the paths must be a tree rooted at
  ``src`` (:class:`RouteTree`); a packet is then duplicated only at a router where the tree
  branches (the divergence router), which the router's table mask expresses.
* Physical links (:class:`Link`): the injection link into the source's local input, each
  mesh link (output port of a router into its neighbour) and the ejection link of each
  destination. Every link a flow uses gets one VC; flows sharing a link get distinct VCs
  (greedy: on each link the flows, in the order given, take VC 0, 1, ...). More flows on a
  link than ``vcs`` raise :class:`RoutingError` naming the link and the routes.
* Waits-for graph (:func:`waits_for_graph`): nodes are buffers ``(link, vc)``; a flow waits
  from the buffer it occupies on a link to the buffer of each next link of its tree; the
  optional PB dependencies (flow a ejected at a PB whose output is flow b) add
  ``eject buffer of a -> inject buffer of b``. :func:`check_deadlock` raises RoutingError
  naming a cycle when the graph is cyclic (with distinct VCs per link and tree routes the
  network part is a forest, so only shared buffers or program dependencies create cycles).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise
from typing import Mapping, Sequence

import networkx as nx

from cgra.errors import ConfigError, RoutingError

from canal.router import MeshParams, Port, RouterTables, TableEntry, table_config_writes

XY = tuple[int, int]


@dataclass(frozen=True, order=True)
class Link:
    """A physical link: output ``port`` of router (x, y) (``port`` = L: the ejection link of
    (x, y)), or with ``inject`` the injection link into (x, y)'s local input."""

    x: int
    y: int
    port: Port
    inject: bool = False

    def __str__(self) -> str:
        if self.inject:
            return f"inject ({self.x}, {self.y})"
        if self.port is Port.L:
            return f"eject ({self.x}, {self.y})"
        dx, dy = self.port.delta
        return (f"({self.x}, {self.y}).{self.port.name} -> ({self.x + dx}, {self.y + dy})."
                f"{self.port.opposite.name}")


@dataclass(frozen=True)
class Flow:
    """A logical route: flow ``id`` (the packet id, ``0 .. ids-1``) from router ``src`` to
    routers ``dsts`` (more than one: a broadcast). ``paths``: None for XY routing, else one
    router list per destination, each from ``src`` to that destination."""

    id: int
    src: XY
    dsts: tuple[XY, ...]
    paths: tuple[tuple[XY, ...], ...] | None = None

    def __str__(self) -> str:
        d = ", ".join(f"({x}, {y})" for x, y in self.dsts)
        return f"flow {self.id} ({self.src[0]}, {self.src[1]}) -> {d}"


def xy_path(src: XY, dst: XY) -> tuple[XY, ...]:
    """Dimension-order route: along x to ``dst``'s column, then along y; both ends included."""
    (x, y), (tx, ty) = src, dst
    path = [(x, y)]
    while x != tx:
        x += 1 if tx > x else -1
        path.append((x, y))
    while y != ty:
        y += 1 if ty > y else -1
        path.append((x, y))
    return tuple(path)


def _port_to(a: XY, b: XY) -> Port | None:
    d = (b[0] - a[0], b[1] - a[1])
    for port in (Port.N, Port.E, Port.S, Port.W):
        if port.delta == d:
            return port
    return None


@dataclass
class RouteTree:
    """The route of one flow: per router on it, the input port the flow enters by (L at the
    source) and the set of output ports (L where it is ejected)."""

    flow: Flow
    in_port: dict[XY, Port] = field(default_factory=dict)
    out_ports: dict[XY, set[Port]] = field(default_factory=dict)

    def links(self) -> list[Link]:
        """The injection link, then every output link of every router, in router order."""
        out = [Link(*self.flow.src, Port.L, inject=True)]
        for (x, y) in sorted(self.out_ports):
            out += [Link(x, y, o) for o in sorted(self.out_ports[x, y])]
        return out

    def divergence(self) -> list[XY]:
        """Routers where the tree duplicates a packet (more than one output port)."""
        return sorted(xy for xy, os in self.out_ports.items() if len(os) > 1)


def route_tree(mp: MeshParams, flow: Flow) -> RouteTree:
    """The tree of ``flow`` (XY or its ``paths``). Raises RoutingError when a router is off the
    mesh, a path step is not between neighbours, a path does not run src -> its destination,
    a path revisits a router, or two paths enter one router from different sides (not a tree)."""
    if not flow.dsts:
        raise RoutingError(f"{flow}: no destination")
    for xy in (flow.src, *flow.dsts):
        if not (0 <= xy[0] < mp.width and 0 <= xy[1] < mp.height):
            raise RoutingError(f"{flow}: router {xy} is outside the {mp.width}x{mp.height} mesh")
    if flow.paths is None:
        paths = [xy_path(flow.src, d) for d in flow.dsts]
    else:
        if len(flow.paths) != len(flow.dsts):
            raise RoutingError(f"{flow}: {len(flow.paths)} paths for {len(flow.dsts)} "
                               "destinations; give one path per destination")
        paths = [tuple(tuple(n) for n in pth) for pth in flow.paths]
    t = RouteTree(flow, {flow.src: Port.L}, {})
    for dst, path in zip(flow.dsts, paths, strict=True):
        if not path or path[0] != tuple(flow.src) or path[-1] != tuple(dst):
            raise RoutingError(f"{flow}: path {list(path)} must run from {flow.src} to {dst}")
        if len(set(path)) != len(path):
            raise RoutingError(f"{flow}: path {list(path)} visits a router twice")
        for a, b in pairwise(path):
            if not (0 <= b[0] < mp.width and 0 <= b[1] < mp.height):
                raise RoutingError(f"{flow}: router {b} is outside the mesh")
            o = _port_to(a, b)
            if o is None:
                raise RoutingError(f"{flow}: path step {a} -> {b} is not between neighbours")
            entry = o.opposite
            if t.in_port.setdefault(b, entry) != entry:
                raise RoutingError(f"{flow}: router {b} is entered from {t.in_port[b].name} "
                                   f"and from {entry.name}; the paths must form a tree")
            t.out_ports.setdefault(a, set()).add(o)
        t.out_ports.setdefault(tuple(dst), set()).add(Port.L)
    return t


@dataclass
class Allocation:
    """Routes and VCs of a set of flows on a mesh: ``trees`` (flow id -> tree) and ``vcs``
    (flow id -> link -> VC)."""

    mesh: MeshParams
    trees: dict[int, RouteTree]
    vcs: dict[int, dict[Link, int]]

    def inject_vc(self, fid: int) -> int:
        """The VC the source injects flow ``fid`` on."""
        t = self.trees[fid]
        return self.vcs[fid][Link(*t.flow.src, Port.L, inject=True)]

    def vcs_used(self) -> int:
        """Largest VC number used + 1 (the thesis's "VCs required", Fig. 3.12)."""
        return 1 + max((v for m in self.vcs.values() for v in m.values()), default=-1)

    def link_users(self) -> dict[Link, list[int]]:
        """Link -> ids of the flows on it."""
        out: dict[Link, list[int]] = {}
        for fid, t in self.trees.items():
            for ln in t.links():
                out.setdefault(ln, []).append(fid)
        return out

    def tables(self) -> dict[XY, RouterTables]:
        """Routing tables: (x, y) -> input port -> flow id -> entry (ports of the tree at
        that router, and the VC of each output link)."""
        out: dict[XY, dict[Port, dict[int, TableEntry]]] = {}
        for fid, t in self.trees.items():
            for xy, ports in t.out_ports.items():
                nv = {o: self.vcs[fid][Link(*xy, o)] for o in ports}
                out.setdefault(xy, {}).setdefault(t.in_port[xy], {})[fid] = TableEntry(
                    frozenset(ports), nv)
        return out

    def config_writes(self) -> list[tuple[int, int]]:
        """(addr, data) pairs loading :meth:`tables` (:func:`canal.router.table_config_writes`)."""
        return table_config_writes(self.tables(), self.mesh.router)


def allocate(mp: MeshParams, flows: Sequence[Flow]) -> Allocation:
    """Route ``flows`` (XY or their paths) and give every flow its own VC on each link it
    shares (module docstring). Raises ConfigError for a duplicate id or an id outside
    ``0 .. ids-1``, RoutingError for a bad route or, naming the link and the routes on it,
    when a link carries more flows than the router has VCs."""
    p = mp.router
    seen: set[int] = set()
    for f in flows:
        if f.id in seen:
            raise ConfigError(f"flow id {f.id} is used twice; flow ids must be unique")
        if not 0 <= f.id < p.ids:
            raise ConfigError(f"{f}: id {f.id} outside the routing table 0..{p.ids - 1} "
                              "(RouterParams.ids)")
        seen.add(f.id)
    trees = {f.id: route_tree(mp, f) for f in flows}
    alloc = Allocation(mp, trees, {f.id: {} for f in flows})
    for ln, users in sorted(alloc.link_users().items()):
        if len(users) > p.vcs:
            routes = "; ".join(str(trees[u].flow) for u in users)
            raise RoutingError(f"link {ln} carries {len(users)} logical routes but the router "
                               f"has {p.vcs} VC(s) (each route needs its own VC on a shared "
                               f"link): {routes}; add VCs or reroute")
        for vc, u in enumerate(users):
            alloc.vcs[u][ln] = vc
    return alloc


def waits_for_graph(alloc: Allocation,
                    pb_deps: Sequence[tuple[int, int]] = ()) -> nx.DiGraph:
    """Buffers ``(link, vc)`` and the waits-for edges of the module docstring; ``pb_deps``
    pairs (a, b): a PB that receives flow a (at any destination) produces flow b."""
    g = nx.DiGraph()
    for fid, t in alloc.trees.items():
        vc = alloc.vcs[fid]
        into: dict[XY, Link] = {t.flow.src: Link(*t.flow.src, Port.L, inject=True)}
        for (x, y), ports in t.out_ports.items():
            for o in ports:
                if o is not Port.L:
                    dx, dy = o.delta
                    into[x + dx, y + dy] = Link(x, y, o)
        for xy, ports in t.out_ports.items():
            a = (into[xy], vc[into[xy]])
            g.add_node(a)
            for o in ports:
                b = Link(*xy, o)
                g.add_edge(a, (b, vc[b]), flow=fid)
    for a, b in pb_deps:
        if a not in alloc.trees or b not in alloc.trees:
            raise ConfigError(f"PB dependency ({a}, {b}) names an unknown flow")
        ta, tb = alloc.trees[a], alloc.trees[b]
        src_b = Link(*tb.flow.src, Port.L, inject=True)
        for d in ta.flow.dsts:
            if tuple(d) == tuple(tb.flow.src):
                e = Link(*d, Port.L)
                g.add_edge((e, alloc.vcs[a][e]), (src_b, alloc.vcs[b][src_b]), pb=(a, b))
    return g


def check_deadlock(alloc: Allocation, pb_deps: Sequence[tuple[int, int]] = ()) -> None:
    """Raise RoutingError naming a cycle of the waits-for graph (buffers as ``link vc``) when
    there is one; None when the allocation cannot deadlock."""
    g = waits_for_graph(alloc, pb_deps)
    try:
        cyc = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        return None
    names = " => ".join(f"[{ln} vc {vc}]" for (ln, vc), _ in cyc)
    flows = sorted({g.edges[u, v].get("flow", -1) for u, v in cyc} - {-1})
    raise RoutingError(f"waits-for cycle over buffers {names} (flows {flows}): two logical "
                       "routes share a VC buffer; give each its own VC on the shared link")


def with_vcs(alloc: Allocation, vcs: Mapping[int, Mapping[Link, int]]) -> Allocation:
    """A copy of ``alloc`` with VCs overridden (for tests and hand-made assignments; no
    conflict check: use :func:`check_deadlock`)."""
    new = {fid: dict(m) for fid, m in alloc.vcs.items()}
    for fid, m in vcs.items():
        new[fid].update(m)
    return Allocation(alloc.mesh, alloc.trees, new)
