"""Structural check: the connectivity of the generated RTL is the interconnect graph.

The connectivity is extracted from the magma circuit of :func:`canal.rtl.array_circuit`
(instances and the drivers of their ports, not the graph):

* inside each distinct tile module (once per module): every ``CanalMux`` instance
  ``mux_<node>`` and register ``REG_*`` is a node; input ``I<k>`` of a mux (``I`` of a register)
  is driven by a tile input port (an SB_IN node), another mux's / register's ``O`` or a core
  output (a PORT node) — that driver is fan-in ``k`` of the node; constants are no edge;
  tile output ports map to the node that drives them (through the power-domain clamp
  ``pg_clamp_<port>`` of :func:`canal.rtl.clamp_circuit`, which is no graph node);
* in the array: each tile instance ``Tile_X<xx>_Y<yy>`` places its module's nodes at (x, y);
  an SB_IN input port driven by another tile's output port gets that output's node as its
  fan-in.

The extracted graph is compared node by node with the interconnect graph under the
name correspondence (ordered fan-in lists, so select values are checked too), which names the
first differing node; then the correspondence is verified to be an isomorphism of the two
networkx digraphs (nodes labelled kind+width, edges labelled by select value) — a witness
check, linear in the graph size. (A search for an unknown isomorphism with VF2/VF2++ does
not finish on these highly symmetric graphs even at 4x4, so the witness is used.) Source: the Canal paper's "hardware is a function of the graph" check
(Melchert et al., Canal, §4).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from cgra.hdl import m
import networkx as nx

from cgra.errors import CgraError

from canal.graph import NodeKind
from canal.interconnect import Interconnect
from canal.graph import no_gc

_TILE_RE = re.compile(r"^Tile_X([0-9A-F]{2})_Y([0-9A-F]{2})$")
_SB_IN_RE = re.compile(r"^SB_T\d+_(NORTH|SOUTH|EAST|WEST)_SB_IN_B\d+$")


class RTLMismatchError(CgraError):
    """The RTL connectivity differs from the interconnect graph (``node`` = first differing
    node id)."""

    def __init__(self, message: str, node: str | None = None):
        self.node = node
        super().__init__(message)


@dataclass
class CheckReport:
    """Result of :func:`check_rtl`: number of nodes and edges proven to correspond."""

    nodes: int
    edges: int


def _local_of(value, core_inst_name: str = "core") -> str | None:
    """The tile-local node name driving ``value`` (None for a constant / unknown driver)."""
    if value is None:
        return None
    ref = value.name
    if isinstance(ref, m.ref.ArrayRef) and len(ref.array) == 1:
        ref = ref.array.name             # bit 0 of a Bits[1] core port
    if isinstance(ref, m.ref.InstRef):
        inst = ref.inst.name
        if inst.startswith("pg_clamp_"):     # the power-domain clamp: no graph node
            return _local_of(ref.inst.I.value(), core_inst_name)
        if inst.startswith("mux_"):
            return inst[4:]
        if inst.startswith("REG_"):
            return inst
        if inst == core_inst_name:
            return f"PORT_{ref.name}"
        return None
    if isinstance(ref, (m.ref.DefnRef, m.ref.LazyDefnRef)):
        return ref.name if _SB_IN_RE.match(ref.name) else None
    return None


def extract_tile(tile) -> tuple[dict[str, list[str | None]], dict[str, str | None]]:
    """Connectivity of one tile module: (local node -> ordered drivers, output port -> local
    node). Drivers are local node names or None (constant / unconnected)."""
    fanin: dict[str, list[str | None]] = {}
    for inst in tile.instances:
        cname = type(inst).name
        if inst.name.startswith("mux_") and cname.startswith("CanalMux_"):
            h = int(cname.split("_")[1][1:])
            fanin[inst.name[4:]] = [_local_of(getattr(inst, f"I{k}").value()) for k in range(h)]
        elif inst.name.startswith("REG_"):
            fanin[inst.name] = [_local_of(inst.I.value())]
    for srcs in list(fanin.values()):
        for s in srcs:
            if s is not None and s.startswith("PORT_"):
                fanin.setdefault(s, [])      # a core output feeding the interconnect
    outs: dict[str, str | None] = {}
    for name, port in tile.interface.ports.items():
        if port.is_input() and name.startswith("SB_") and "_SB_OUT_" in name:
            # seen from inside the definition, a module output is an input (sink)
            outs[name] = _local_of(port.value())
        elif port.is_output() and _SB_IN_RE.match(name):
            fanin.setdefault(name, [])
    return fanin, outs


def extract_array(array) -> dict[tuple[int, int, str], list[tuple[int, int, str]]]:
    """Connectivity of the array: (x, y, local node) -> ordered fan-in (x, y, local node);
    constants dropped."""
    cache: dict[str, tuple[dict, dict]] = {}
    graph: dict[tuple[int, int, str], list[tuple[int, int, str]]] = {}
    tiles = {}
    for inst in array.instances:
        mt = _TILE_RE.match(inst.name)
        if not mt:
            continue
        x, y = int(mt[1], 16), int(mt[2], 16)
        tiles[inst.name] = (x, y, type(inst).name)
        if type(inst).name not in cache:
            cache[type(inst).name] = extract_tile(type(inst))
    for inst in array.instances:
        if inst.name not in tiles:
            continue
        x, y, mod = tiles[inst.name]
        fanin, _ = cache[mod]
        for local, srcs in fanin.items():
            graph[(x, y, local)] = [(x, y, s) for s in srcs if s is not None]
        for name, port in inst.interface.ports.items():
            if not (port.is_input() and _SB_IN_RE.match(name)):
                continue
            v = port.value()
            srcs = []
            if v is not None and isinstance(v.name, m.ref.InstRef) and v.name.inst.name in tiles:
                sx, sy, smod = tiles[v.name.inst.name]
                local = cache[smod][1].get(v.name.name)
                if local is not None:
                    srcs.append((sx, sy, local))
            graph[(x, y, name)] = srcs
    return graph


def check_rtl(ic: Interconnect, array) -> CheckReport:
    """Check that the RTL ``array`` (a magma circuit from :func:`canal.rtl.array_circuit`)
    has exactly the connectivity of ``ic``'s graphs. Raises :class:`RTLMismatchError` naming
    the first differing node (graph order, widths descending) with its expected and found
    fan-in, or an RTL node with no graph counterpart; then proves the name correspondence
    is a graph isomorphism (networkx ``graphs_equal`` after relabelling: same nodes, labels,
    edges and select values)."""
    with no_gc():
        return _check_rtl(ic, array)


def _check_rtl(ic: Interconnect, array) -> CheckReport:
    rtl = extract_array(array)
    ids: dict[tuple[int, int, str], str] = {}
    expected = nx.DiGraph()
    for w in sorted(ic.graphs, reverse=True):
        g = ic.graphs[w]
        for nid, n in g.nodes.items():
            ids[(n.x, n.y, n.local_name)] = nid
    found = nx.DiGraph()
    nedges = 0
    for w in sorted(ic.graphs, reverse=True):
        g = ic.graphs[w]
        for nid, n in g.nodes.items():
            key = (n.x, n.y, n.local_name)
            if key not in rtl and n.kind is NodeKind.PORT and n.direction == "out":
                rtl[key] = []      # a core output that drives nothing in the RTL
            if key not in rtl:
                raise RTLMismatchError(f"node {nid}: no RTL counterpart ({n.local_name} in tile "
                                       f"({n.x}, {n.y})); the RTL generator lost it", nid)
            got = [ids.get(s, f"<rtl {s[2]} at ({s[0]}, {s[1]})>") for s in rtl[key]]
            if got != g.fanin[nid]:
                missing = [s for s in g.fanin[nid] if s not in got]
                extra = [s for s in got if s not in g.fanin[nid]]
                raise RTLMismatchError(
                    f"node {nid}: RTL fan-in {got} differs from the graph fan-in "
                    f"{g.fanin[nid]} (missing {missing}, extra {extra})", nid)
            label = f"{n.kind.value}{w}"
            expected.add_node(nid, label=label)
            found.add_node(key, label=label)
            for k, s in enumerate(g.fanin[nid]):
                expected.add_edge(s, nid, sel=k)
                nedges += 1
            for k, s in enumerate(rtl[key]):
                found.add_edge(s, key, sel=k)
    extra_nodes = [k for k in rtl if k not in ids]
    if extra_nodes:
        x, y, local = extra_nodes[0]
        raise RTLMismatchError(f"RTL node {local} in tile ({x}, {y}) has no graph node", local)
    # the name correspondence is a bijection; check it preserves every edge, its select
    # value and every node label, i.e. it is an isomorphism witness
    relabelled = nx.relabel_nodes(found, ids, copy=True)
    if not nx.utils.graphs_equal(relabelled, expected):
        diff = sorted(set(expected.edges) ^ set(relabelled.edges))
        node = diff[0][1] if diff else None
        raise RTLMismatchError(f"the RTL connectivity is not isomorphic to the graph under the "
                               f"name correspondence (first differing edge: {diff[:1]})", node)
    return CheckReport(expected.number_of_nodes(), nedges)
