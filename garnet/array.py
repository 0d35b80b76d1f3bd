"""Array composition: cores on the grid, both interconnect widths, global signals.

:func:`build_interconnect` places a core on every tile (IO edge, MEM columns, PEs; or any
core-per-position function) and builds the Canal interconnect (one routing graph per width
in ``params.widths``: switch boxes of ``params.topology`` with ``params.tracks`` tracks,
connection boxes from every track of ``params.cb_sides``, a pipeline register on every
SB_OUT of ``params.pipeline_register_sides`` x ``pipeline_register_tracks``).

The top module ``Garnet_<W>x<H>_<hash>`` (:func:`top_name`) is written as Verilog text by
:func:`array_top` (tiles compiled one by one by magma -> CIRCT, :mod:`garnet.build`);
:func:`array_circuit` is the same array as one magma circuit (Canal's array generator, each
distinct tile generated once); both come from :func:`canal.rtl.array_netlist`. Top-level
ports:

* ``CLK``; ``RESET`` (synchronous, active high: config registers return to their reset
  values, pipeline registers and PE registers to 0);
* ``clk_en`` (1 = run; 0 = stall: pipeline registers, PE and MEM state hold; config writes
  still work);
* ``flush`` (to every core; column spine with a register every ``flush_interval`` rows, so
  row y sees it ``y // flush_interval`` cycles later; spine registers are not stalled);
* config bus: ``config_addr`` (32), ``config_data`` (32), ``config_write`` (1),
  ``config_read`` (1), ``read_data`` (32; combinational: the addressed register while
  ``config_read`` is 1, else 0). A write takes effect at the rising edge where
  ``config_write`` is 1 (address ``reg << 24 | feature << 16 | x << 8 | y``);
* with a ``[glb]`` table (``garnet.build``: :class:`canal.rtl.ConfigColumns`), per column
  ``cfg_valid_X<xx>`` (1), ``cfg_word_X<xx>`` (64), ``flush_X<xx>`` (1), ``stall_X<xx>`` (1):
  the column's own pipelined config path, flush and stall;
* IO tiles: ``glb2io_<W>_X<xx>_Y<yy>`` (in, W), ``io2glb_<W>_X<xx>_Y<yy>`` (out, W) with W =
  ``params.data_width`` (``glb2io_16_X03_Y00`` at 16 bits), ``glb2io_1_X<xx>_Y<yy>`` (in, 1),
  ``io2glb_1_X<xx>_Y<yy>`` (out, 1), xx/yy two hex digits.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import chain, compress, repeat
from operator import attrgetter, is_
from typing import Callable

from cgra.core import CoreSpec

from garnet.cores import io_core, load_pe_spec, mem_core, pe_core, pe_pond_core
from garnet.params import GarnetParams, mem_spec, pond_spec
from cgra.errors import CollateralError
from garnet.collateral import MIN_BLOCK_COLUMNS
from cgra.errors import ConfigError
from cgra.hdl import m
import hashlib
import networkx as nx
import numpy as np
from canal.graph import IO, parse_id
from canal.graph import NodeKind
from canal.graph import Side
from canal.graph import no_gc
from canal.custom import apply_build, load_build
from canal.interconnect import Interconnect
from canal.passes import CorePortConnections, InterconnectParams
from canal.passes import uniform_graphs
from canal.dynamic import mark_dynamic, parse_dynamic
from canal.ready_valid import mark_graphs, parse_flow_control
from canal.rtl import array_circuit as canal_array
from canal.rtl import ArrayNetlist, array_netlist, array_verilog, column_verilog
from canal.rtl import tile_shapes as canal_tile_shapes
from canal.timing import retime

CoreFn = Callable[[int, int], "CoreSpec | None"]
#: PnR tags of IO tiles
IO_TAGS = ("I", "i")


def default_core_fn(params: GarnetParams) -> CoreFn:
    """The default core-per-position function (see :meth:`GarnetParams.tile_kind`)."""
    pe = pe_core(load_pe_spec(params.pe))
    if params.pond:                     # the PE tiles' register file (garnet.cores)
        pe = pe_pond_core(load_pe_spec(params.pe), pond_spec(params))
    io = io_core(params.data_width)
    mem = mem_core(mem_spec(params)) if params.mem_ratio else None

    def fn(x: int, y: int) -> CoreSpec | None:
        kind = params.tile_kind(x, y)
        return io if kind == "io" else mem if kind == "mem" else pe
    return fn


def interconnect_params(params: GarnetParams):
    """The :class:`canal.passes.InterconnectParams` of ``params``."""

    tracks = params.pipeline_register_tracks or list(range(params.tracks))
    regs = [(t, Side[s]) for s in params.pipeline_register_sides for t in tracks]
    conn = CorePortConnections(cb_sides=tuple(Side[s] for s in params.cb_sides))
    return InterconnectParams(params.width, params.height, params.tracks, params.topology,
                              params.track_length, tuple(params.widths), regs, conn)


def build_interconnect(params: GarnetParams, core_fn: CoreFn | None = None, timing=None,
                       resolve_timing: bool = True):
    """The :class:`canal.Interconnect` of the array (graphs for every width, core specs).
    ``core_fn(x, y)`` overrides the default layout; ``timing`` (a
    :class:`canal.timing.TimingModel`) gives the edge delays (default: the project's table);
    ``resolve_timing=False`` leaves its path classes to the caller
    (``ic.timing = ic.timing.resolve(ic.graphs)``: the same classes; the bypasses the registers lose
    are of the class ``bypass`` every model has).
    Pipeline registers on sides not in
    ``params.register_bypass_sides`` are made mandatory (:func:`fix_registers`). Raises
    ``SpecError`` from Canal for a core whose ports the interconnect cannot carry.

    ``params.interconnect`` (a build function, :mod:`canal.custom`) then transforms the
    graphs (:func:`canal.custom.apply_build`: ``SpecError`` with the file and line of the
    function when it raises, returns the wrong type or wires what the RTL cannot express)
    and every edge is re-timed from the delay model (:func:`canal.timing.retime`).
    Ready-valid track classes (``params.flow_control``) are marked in their graphs' params
    (:func:`canal.ready_valid.mark_graphs`: FIFO sites and depths); a static design's graphs
    are untouched."""

    graphs, cores, tm = uniform_graphs(interconnect_params(params),
                                       core_fn or default_core_fn(params), timing)
    fixed = [s for s in params.pipeline_register_sides if s not in params.register_bypass_sides]
    # the graphs are this call's own: fix_registers without the copy
    graphs = {w: _fix_registers(g, fixed) for w, g in graphs.items()}
    if params.interconnect:
        fn = load_build(params.interconnect, "field 'interconnect'")
        graphs = apply_build(fn, graphs, params, params.interconnect)
        retime(graphs, tm)
    flow = parse_flow_control(params.flow_control, params.fifo_kind, params.widths)
    if flow.ready_valid:                 # FIFO sites in the routing-graph collateral
        mark_graphs(graphs, flow)
    layer = parse_dynamic(params.dynamic or None, params.widths)
    if layer is not None:                # a router per tile (canal.dynamic)
        mark_dynamic(graphs, layer)
    return Interconnect(graphs, cores, tm, resolve_timing)


def fix_registers(graph, sides: list[str]):
    """Graph pass: the pipeline registers of SB_OUTs on ``sides`` can no longer be bypassed:
    the bypass edge SB_OUT -> RMUX is removed, so the RMUX has the single fan-in [REG]
    (no select field; every route leaving by such a side passes the register: 1 cycle).
    Returns a new graph (``graph`` is left as it was).

    Why: with a bypassable register on every side, the switch boxes of neighbouring tiles
    form structural combinational cycles (A.EAST -> B.WEST -> A); Verilator 5 schedules such
    cycles with one trigger per cut signal, which makes an 8x8 model tens of MB of C++ that
    takes tens of minutes to compile. A mandatory register on one horizontal and one
    vertical side breaks every cycle (a closed walk on the grid steps both ways).

    The copy (170 k fan-in lists per width at 64x32) is made with the cyclic garbage
    collector paused (:func:`canal.graph.no_gc`): the new lists would trigger collections
    that rescan every live node of the build."""

    with no_gc():
        return _fix_registers(graph.copy(), sides)


def _fix_registers(g, sides: list[str]):
    """:func:`fix_registers` applied to ``g`` itself (returned): only RMUX nodes are
    visited; a fan-in list that loses an edge is replaced by a new list, never edited, so
    a list ``g`` shares with another graph is left intact; ``g.delay`` loses the edges."""
    from canal.graph import NodeKind, Side  # deferred: loads  only when called

    rmux, reg = NodeKind.RMUX, NodeKind.REG
    want = {side for side in Side if side.name in sides}
    nodes, fanin, delay = g.nodes, g.fanin, g.delay
    rmuxes = compress(nodes.items(), map(is_, map(attrgetter("kind"), nodes.values()),
                                         repeat(rmux)))
    for nid, n in list(rmuxes):
        side = n.side
        if side in want if side is not None else side.name in sides:
            srcs = fanin[nid]
            byp = [s for s in srcs if nodes[s].kind is not reg]
            if byp:
                for s in byp:
                    del delay[(s, nid)]
                fanin[nid] = [s for s in srcs if s not in byp]
    g.params = {**g.params, "mandatory_register_sides": sorted(sides)}
    return g


class FaninGraph:
    """Every node and fan-in edge of ``graphs`` (bit width -> InterconnectGraph; the widths
    stay disjoint: no edge through a core) as integer arrays for scipy's sparse graph
    routines: ``ids`` (node id per index, graph after graph in node order), ``index`` (node
    id -> index), ``src``/``dst`` (edge endpoints, int32, fan-in order: destinations in
    ``fanin`` order, sources in select order). Built with C-level maps over the fan-in lists
    (no Python loop per node or edge); networkx's dict-of-dicts graph took 3 s and its
    condensation 5 s at 64x32 (1.4 M nodes)."""

    def __init__(self, graphs: dict):

        self.ids: list[str] = list(chain.from_iterable(g.nodes for g in graphs.values()))
        self.index = dict(zip(self.ids, range(len(self.ids)), strict=True))
        idx = self.index
        #: (graph, first index, node count) per graph: its nodes are one index range (when
        #: no id repeats across the graphs: index then maps each id to its position)
        self.spans: list[tuple[object, int, int]] = []
        unique = len(idx) == len(self.ids)
        self._classes: dict[int, tuple] = {}           # node_classes() per graph
        src: list = []
        dst: list = []
        start = 0
        for g in graphs.values():
            if unique:
                self.spans.append((g, start, len(g.nodes)))
            start += len(g.nodes)
            fan = g.fanin
            lens = np.fromiter(map(len, fan.values()), dtype=np.int64, count=len(fan))
            if unique and list(fan) == list(g.nodes):    # fan-in keys = nodes, in order
                heads = np.arange(start - len(g.nodes), start, dtype=np.int64)
            else:
                heads = np.fromiter(map(idx.get, fan, repeat(-1)), dtype=np.int64,
                                    count=len(fan))
            bad = np.flatnonzero((heads < 0) & (lens > 0))
            if len(bad):                      # a fan-in list of an unknown node
                raise KeyError(list(fan)[int(bad[0])])
            total = int(lens.sum())
            src.append(np.fromiter(map(idx.__getitem__, chain.from_iterable(fan.values())),
                                   dtype=np.int32, count=total))
            dst.append(np.repeat(heads, lens).astype(np.int32))
        self.src = np.concatenate(src) if src else np.zeros(0, dtype=np.int32)
        self.dst = np.concatenate(dst) if dst else np.zeros(0, dtype=np.int32)

    def node_classes(self, graph):
        """(ports, registers) of ``graph`` (one of the graphs this FaninGraph holds):
        ``ports`` = [(index, id, Node)] of its PORT nodes and ``registers`` = the indices
        of its REG nodes (int64 array), both in node order. One pass over the nodes per
        graph, kept for :func:`connectivity` and :func:`combinational_cycle`."""


        hit = self._classes.get(id(graph))
        if hit is not None and hit[0] is graph and hit[1] == len(graph.nodes):
            return hit[2], hit[3]
        rng = self.node_range(graph)
        ids = list(graph.nodes)
        nodes = list(graph.nodes.values())
        reg, port = NodeKind.REG, NodeKind.PORT
        kinds = list(map(attrgetter("kind"), nodes))
        ports = [(int(rng[i]), ids[i], nodes[i]) for i, k in enumerate(kinds) if k is port]
        regs = rng[np.asarray([i for i, k in enumerate(kinds) if k is reg], dtype=np.int64)]
        self._classes[id(graph)] = (graph, len(graph.nodes), ports, regs)
        return ports, regs

    def node_range(self, graph):
        """The indices of ``graph``'s nodes (an int64 array, node order): the graph's span
        when this FaninGraph was built from it (same object, same node count), else looked
        up one by one."""

        for g, start, count in self.spans:
            if g is graph and count == len(graph.nodes):
                return np.arange(start, start + count, dtype=np.int64)
        return np.fromiter((self.index[n] for n in graph.nodes), dtype=np.int64,
                           count=len(graph.nodes))

    def matrix(self, keep=None, extra: tuple = ((), ())):
        """CSR adjacency (``keep``: boolean mask over the edges; ``extra``: (src, dst)
        index lists of additional edges)."""
        from scipy.sparse import csr_matrix  # deferred: loads scipy, numpy, cython_runtime only when called

        s, d = (self.src, self.dst) if keep is None else (self.src[keep], self.dst[keep])
        if len(extra[0]):
            s = np.concatenate([s, np.asarray(extra[0], dtype=np.int32)])
            d = np.concatenate([d, np.asarray(extra[1], dtype=np.int32)])
        n = len(self.ids)
        return csr_matrix((np.ones(len(s), dtype=np.int8), (s, d)), shape=(n, n))


def fanin_digraph(graphs: dict) -> FaninGraph:
    """The :class:`FaninGraph` of ``graphs``."""
    return FaninGraph(graphs)


def _strong_components(mat):
    """(number of components, label per node) of a CSR digraph (scipy, Tarjan/Pearce)."""
    from scipy.sparse.csgraph import connected_components  # deferred: loads scipy, numpy, cython_runtime only when called

    return connected_components(mat, directed=True, connection="strong")


def combinational_cycle(ic, dg: FaninGraph | None = None) -> list[str] | None:
    """A structural combinational cycle of the array (node ids, a shortest cycle through
    one of its nodes; the last node feeds the first), or None when every cycle passes a
    pipeline register. Cores are assumed combinational from every routed input port to
    every routed output port (conservative), except IO cores (tag ``I``/``i``), whose
    fabric input goes to the array edge and whose fabric output comes from it.
    Acyclicity: no strongly connected component of more than one node (scipy); the cycle
    shown is a BFS shortest cycle (networkx) inside the first such component.
    ``dg``: the :func:`fanin_digraph` of ``ic.graphs`` (saves building it twice)."""


    if dg is None:
        dg = fanin_digraph(ic.graphs)
    is_reg = np.zeros(len(dg.ids), dtype=bool)
    ports: dict[tuple[int, int], dict[str, list[int]]] = {}
    for g in ic.graphs.values():           # one graph over all widths: a core may turn a
        g_ports, g_regs = dg.node_classes(g)    # 16-bit input into a 1-bit output
        is_reg[g_regs] = True
        for i, _, n in g_ports:
            ports.setdefault((n.x, n.y), {}).setdefault(n.direction, []).append(i)
    ex_s: list[int] = []
    ex_d: list[int] = []
    for xy, d in ports.items():
        if ic.tiles[xy].tag in IO_TAGS:
            continue
        for i in d.get("in", []):
            for o in d.get("out", []):
                ex_s.append(i)
                ex_d.append(o)
    keep = ~is_reg[dg.src]                 # a register's output edges break every cycle
    mat = dg.matrix(keep, (ex_s, ex_d))
    ncomp, labels = _strong_components(mat)
    if ncomp == len(dg.ids) and not (mat.diagonal() != 0).any():
        return None
    sizes = np.bincount(labels)
    comp = int(np.flatnonzero(sizes > 1)[0])
    members = {dg.ids[i] for i in np.flatnonzero(labels == comp)}
    sub = nx.DiGraph()
    s_all = np.concatenate([dg.src[keep], np.asarray(ex_s, dtype=np.int32)])
    d_all = np.concatenate([dg.dst[keep], np.asarray(ex_d, dtype=np.int32)])
    inside = labels[s_all] == comp
    inside &= labels[d_all] == comp
    sub.add_edges_from((dg.ids[a], dg.ids[b]) for a, b in zip(s_all[inside], d_all[inside],
                                                                strict=True))
    # a shortest cycle through one switch-box output of the component (BFS back to it)
    start = min((n for n in members if parse_id(n).io is IO.SB_OUT),
                default=min(members))
    best: list[str] | None = None
    for succ in sub.successors(start):
        path = nx.shortest_path(sub, succ, start)
        if best is None or len(path) < len(best):
            best = path
    assert best is not None                       # start lies on a cycle of its component
    return [start] + best[:-1]


# ---------------------------------------------------------------------- validation


@dataclass
class Connectivity:
    """Reachability in the ``width``-bit routing graph (:func:`connectivity`): core outputs
    that cannot reach every core input (``stuck``: [(output, an input it cannot reach)]),
    core inputs no IO output reaches (``unfed``), and the totals."""

    width: int
    outputs: int
    inputs: int
    stuck: list[tuple[str, str]]
    unfed: list[str]

    @property
    def ok(self) -> bool:
        return not self.stuck and not self.unfed


def connectivity(graph, dg: FaninGraph | None = None, comps=None) -> Connectivity:
    """Check that every core output PORT of ``graph`` (one bit width) reaches every core
    input PORT (IO tile inputs included) and that every core input is reachable from an IO
    tile output. Reachability on the strongly-connected-component condensation of the
    fan-in graph (components: scipy), one bitset of reachable inputs per component, in
    reverse topological order of the condensation: linear in the graph size times
    inputs / 64. ``dg`` / ``comps``: a :func:`fanin_digraph` holding ``graph`` and its
    ``(ncomp, labels)`` from :func:`_strong_components` (computed when not given)."""

    if dg is None:
        dg = fanin_digraph({graph.width: graph})
    if comps is None:
        comps = _strong_components(dg.matrix())
    ncomp, labels = comps
    ports = dg.node_classes(graph)[0]
    outs = [nid for _, nid, n in ports if n.direction == "out"]
    ins = [nid for _, nid, n in ports if n.direction == "in"]
    out_comp = labels[np.asarray([i for i, _, n in ports if n.direction == "out"],
                                 dtype=np.int64)].tolist()
    in_comp = labels[np.asarray([i for i, _, n in ports if n.direction == "in"],
                                dtype=np.int64)].tolist()
    io_outs = [o for o in outs if graph.tiles[_xy(graph, o)].tag in IO_TAGS]
    # condensation edges (component -> component), restricted to this graph's nodes
    mine = dg.node_range(graph)
    in_graph = np.zeros(len(dg.ids), dtype=bool)
    in_graph[mine] = True
    e = in_graph[dg.src]
    cs, cd = labels[dg.src[e]].astype(np.int64), labels[dg.dst[e]].astype(np.int64)
    cross = cs != cd
    # unique (a, b) pairs in lexicographic order, as the codes a * ncomp + b (one 1-D sort)
    codes = np.unique(cs[cross] * ncomp + cd[cross])
    pairs = np.stack([codes // ncomp, codes % ncomp], axis=1)
    succ: dict[int, list[int]] = {}
    indeg: dict[int, int] = {}
    for a, b in pairs.tolist():
        succ.setdefault(a, []).append(b)
        indeg[b] = indeg.get(b, 0) + 1
    comps_here = np.unique(labels[mine]).tolist()
    order = [c for c in comps_here if indeg.get(c, 0) == 0]   # Kahn: a topological order
    k = 0
    while k < len(order):
        for b in succ.get(order[k], ()):
            indeg[b] -= 1
            if indeg[b] == 0:
                order.append(b)
        k += 1
    bits: dict[int, int] = {}
    for i, c in enumerate(in_comp):
        bits[c] = bits.get(c, 0) | 1 << i
    reach: dict[int, int] = {}
    for c in reversed(order):
        b = bits.get(c, 0)
        for s in succ.get(c, ()):
            b |= reach[s]
        reach[c] = b
    full = (1 << len(ins)) - 1
    stuck = []
    for o, c in zip(outs, out_comp, strict=True):
        missing = full & ~reach[c]
        if missing:
            stuck.append((o, ins[(missing & -missing).bit_length() - 1]))
    comp_of = dict(zip(outs, out_comp, strict=True))
    fed = 0
    for o in io_outs:
        fed |= reach[comp_of[o]]
    unfed = [nid for i, nid in enumerate(ins) if not fed >> i & 1]
    return Connectivity(graph.width, len(outs), len(ins), stuck, unfed)


def _xy(graph, nid: str) -> tuple[int, int]:
    n = graph.nodes[nid]
    return n.x, n.y


def _where(graph, nid: str) -> str:
    n = graph.nodes[nid]
    info = graph.tiles[(n.x, n.y)]
    kind = {"p": "PE", "m": "MEM", "I": "IO", "i": "IO"}.get(info.tag, info.core or "empty")
    return f"{nid} ({kind} tile ({n.x}, {n.y}))"


def check_interconnect(ic, params: GarnetParams, source: str | None = None) -> None:
    """Refuse an interconnect no application could use, before any RTL is generated:
    a routing graph where a core output cannot reach some core input or a core input cannot
    be fed from an IO tile (:func:`connectivity`, per width), or a structural combinational
    cycle through bypassable pipeline registers (:func:`combinational_cycle`; Verilator
    compiles such a model for many minutes). Raises :class:`ConfigError`: one line naming
    the TOML field, the problem (counts and an example node) and the fix. Runs with the
    cyclic garbage collector paused (:func:`canal.graph.no_gc`: the index arrays of a 64x32
    array are built from 1.4 M strings and ints, which would trigger full collections)."""

    with no_gc():
        _check_interconnect(ic, params, source)


def _check_interconnect(ic, params: GarnetParams, source: str | None) -> None:

    def where(key: str) -> str:
        val = getattr(params, key)
        return (f"{source}: field '{key}' = {val!r}" if source else f"field '{key}' = {val!r}")

    dg = fanin_digraph(ic.graphs)
    comps = _strong_components(dg.matrix())
    for w in sorted(ic.graphs, reverse=True):
        g = ic.graphs[w]
        rep = connectivity(g, dg, comps)
        if rep.ok:
            continue
        key, fix = (_blame_custom(params, "every core output reaches every core input "
                                         "(do not cut or rewire the last path to a port)")
                    if params.interconnect else _blame_disconnect(g, rep, params))
        parts = []
        if rep.stuck:
            o, i = rep.stuck[0]
            parts.append(f"{len(rep.stuck)} of {rep.outputs} core outputs cannot reach every "
                         f"core input (e.g. {_where(g, o)} never reaches {_where(g, i)})")
        if rep.unfed:
            parts.append(f"{len(rep.unfed)} of {rep.inputs} core inputs cannot be fed from "
                         f"any IO tile (e.g. {_where(g, rep.unfed[0])})")
        raise ConfigError(f"{where(key)}: the {w}-bit interconnect is disconnected: "
                          f"{'; '.join(parts)}; {fix}")
    del comps
    cycle = combinational_cycle(ic, dg)
    if cycle is not None:
        key, fix = (_blame_custom(params, "every cycle of the graph passes a mandatory "
                                         "pipeline register (a wire stepping back against a "
                                         "bypassable side closes a loop)")
                    if params.interconnect else _blame_cycle(ic, cycle, params))
        shown = cycle if len(cycle) <= 12 else cycle[:12] + ["..."]
        raise ConfigError(f"{where(key)}: the interconnect has a combinational cycle through "
                          f"bypassable pipeline registers ({len(cycle)} nodes: "
                          f"{' -> '.join(shown)} -> {cycle[0]}); a Verilator model of it "
                          f"takes many minutes to compile; {fix}")


def _blame_disconnect(graph, rep: Connectivity, params: GarnetParams) -> tuple[str, str]:
    """(TOML field, fix) for a disconnected routing graph."""
    example = rep.stuck[0][1] if rep.stuck else rep.unfed[0]
    srcs = graph.fanin[example]
    if srcs and all(not graph.fanin[s] for s in srcs):
        n = graph.nodes[example]
        return ("cb_sides", f"the connection box of {example} reads only sides where no track "
                            f"arrives at tile ({n.x}, {n.y}) (the array edge); list a side "
                            f"facing the array, e.g. cb_sides = {list(SIDE_NAMES)}")
    if params.track_length > 1:
        # long tracks are driven only where they break (canal.passes.segment_tracks): a tile
        # has about tracks / track_length breaking tracks per side to turn into
        return "track_length", (f"long tracks break in 1 of every {params.track_length} "
                                f"tiles per track; use more tracks (tracks = "
                                f"{params.tracks}) or a shorter track_length")
    return ("topology", "the switch boxes do not connect every track; use topology = "
                        "\"imran\" or \"wilton\" and connection boxes on every side")


SIDE_NAMES = ("NORTH", "SOUTH", "EAST", "WEST")


def _blame_custom(params: GarnetParams, rule: str) -> tuple[str, str]:
    """(TOML field, fix) when a build function (field ``interconnect``) made the graphs."""
    file = params.interconnect.rpartition(":")[0]
    return ("interconnect", f"change the build function in {file} so that {rule}, or remove "
                            f"the field interconnect (the built-in graphs)")


def _blame_cycle(ic, cycle: list[str], params: GarnetParams) -> tuple[str, str]:
    """(TOML field, fix) for a combinational cycle."""
    from canal.graph import NodeKind, parse_id, rmux_id  # deferred: loads  only when called

    outs = []
    for nid in cycle:
        g = ic.graphs[parse_id(nid).width]
        n = g.nodes[nid]
        if n.kind is NodeKind.SB and n.io.name == "SB_OUT":
            has_reg = rmux_id(n.width, n.x, n.y, n.side, n.track) in g.nodes
            outs.append((n, has_reg))
    unregistered = [n for n, has_reg in outs if not has_reg]
    if unregistered and params.pipeline_register_tracks and any(
            n.track not in params.pipeline_register_tracks for n in unregistered):
        n = next(n for n in unregistered if n.track not in params.pipeline_register_tracks)
        return ("pipeline_register_tracks",
                f"track {n.track} has no pipeline register, so no register breaks the cycle; "
                f"use pipeline_register_tracks = [] (every track)")
    if unregistered:
        n = unregistered[0]
        return ("pipeline_register_sides",
                f"side {n.side.name} has no pipeline register; list every side in "
                f"pipeline_register_sides")
    return ("register_bypass_sides",
            "make the registers of one horizontal and one vertical side mandatory, e.g. "
            "register_bypass_sides = [\"SOUTH\", \"WEST\"]")


def array_circuit(ic, params: GarnetParams):
    """The top-level magma circuit of the array (cached per process by content)."""

    return canal_array(ic, name="Garnet", flush_interval=params.flush_interval)


# ---------------------------------------------------------------------- incremental pieces
def core_interface(core: CoreSpec | None) -> tuple:
    """What the routing graphs depend on of a core: tag, timing class, external ports and
    the routable ports (name, width, direction). Not its name or config fields: a PE edit
    that keeps the ports keeps the graphs (only the tile records change)."""
    if core is None:
        return ()
    external = tuple(core.info.get("external", ()))
    return (core.tag, core.info.get("timing_class"), external,
            tuple((p.name, p.width, p.direction) for p in core.ports if p.name not in external))


def core_identity(core: CoreSpec | None) -> tuple:
    """Everything a tile record (:class:`canal.graph.TileInfo`) takes from a core."""
    if core is None:
        return ()
    return (core.name, core.tag, core.info.get("timing_class"),
            tuple(core.info.get("external", ())),
            tuple((p.name, p.width, p.direction) for p in core.ports),
            tuple((f.name, f.width, f.reset) for f in core.config_fields),
            core.config_memory)


def tile_shapes(ic) -> dict:
    """(x, y) -> :class:`canal.rtl.TileShape` of every tile (:func:`canal.rtl.tile_shapes`:
    tiles of equal shape share one object)."""

    return canal_tile_shapes(ic)


def top_name(ic, shapes: dict, params: GarnetParams, name: str = "Garnet",
             config_columns: int = 0) -> str:
    """The top module name :func:`canal.rtl.array_circuit` gives this array
    (``<name>_<W>x<H>_<hash>``: tile modules by position, inter-tile wiring, flush
    interval, and the rows per stage of the per-column config paths when it has them,
    ``config_columns`` > 0, which the magma circuit does not; tests/garnet check the two
    agree)."""

    from canal.graph import IO, NodeKind  # deferred: loads  only when called

    cols, rows = ic.size
    wiring = [(nid, tuple(g.fanin[nid])) for w, g in sorted(ic.graphs.items())
              for nid, n in g.nodes.items() if n.kind is NodeKind.SB and n.io is IO.SB_IN]
    key = repr((sorted((xy, s.module_name) for xy, s in shapes.items()),
                params.flush_interval, None, sorted(ic.graphs), wiring,
                *((config_columns,) if config_columns else ())))
    return f"{name}_{cols}x{rows}_{hashlib.sha1(key.encode()).hexdigest()[:10]}"


def array_top(ic, params: GarnetParams, shapes: dict, tile_ports: dict[str, list[dict]],
              name: str, net: ArrayNetlist | None = None) -> tuple[str, list[dict]]:
    """The top module ``name`` (:func:`top_name`) of the array alone, as Verilog text, and its
    ports (:func:`port_list` format): the tile instances ``Tile_X<xx>_Y<yy>`` of the modules
    ``shapes[(x, y)].module_name`` (ports ``tile_ports[module]``, compiled and cached one by
    one by :mod:`garnet.build`), the inter-tile wiring, config bus and ``read_data`` OR
    (32 bits), flush spine and tile ids of :func:`canal.rtl.array_netlist` -- the description
    :func:`canal.rtl.array_circuit` builds its magma body from -- written by
    :func:`canal.rtl.array_verilog` without magma or CIRCT (linear in the tile count).
    ``net``: that netlist when the caller has it already (:func:`array_blocks` takes it too).
    Raises :class:`~cgra.errors.SpecError` when a tile port is missing or of another width."""

    with no_gc():
        net = net or array_netlist(ic, params.flush_interval)
        modules = {xy: s.module_name for xy, s in shapes.items()}
        text = array_verilog(net, name, modules, tile_ports)
    ports = [{"name": n, "direction": d, "type": "bit" if w == 1 else "bits", "width": w}
             for n, d, w in net.ports]
    ports += [{"name": "CLK", "direction": "in", "type": "clock", "width": 1},
              {"name": "RESET", "direction": "in", "type": "reset", "width": 1}]
    return text, ports


def block_columns(shapes: dict, width: int) -> int:
    """Columns per block of the hierarchical top (:func:`array_blocks`): the smallest
    multiple of the period of the array's column pattern (the tile modules top to bottom;
    the MEM-column ratio on the default layout) that is at least
    :data:`MIN_BLOCK_COLUMNS`, so that the blocks repeat; 0 when that gives fewer than two
    blocks (no hierarchy to gain)."""
    cols: dict[int, list[tuple[int, str]]] = {}
    for (x, y), s in shapes.items():
        cols.setdefault(x, []).append((y, s.module_name))
    pattern = [tuple(sorted(cols.get(x, ()))) for x in range(width)]
    period = next((p for p in range(1, width + 1)
                   if all(pattern[x] == pattern[x + p] for x in range(1, width - p - 1))),
                  width)
    k = period * -(-MIN_BLOCK_COLUMNS // period)
    return k if width // k >= 2 else 0


def array_blocks(ic, params: GarnetParams, shapes: dict, tile_ports: dict[str, list[dict]],
                 name: str, columns: int, net: ArrayNetlist | None = None
                 ) -> list[tuple[str, str]]:
    """The top ``name`` again with its tiles in blocks of ``columns`` columns
    (:func:`block_columns`; :func:`canal.rtl.column_verilog`): [(module, Verilog text)],
    the top last. The same netlist as :func:`array_top` (same ports, tiles, wiring, flush
    spine and ``read_data``; ``net`` as there), for a simulator that compiles each distinct
    block once (``rtl/hier/``; Verilator's ``--hierarchical``). Raises
    :class:`~cgra.errors.SpecError` as :func:`array_top`."""
    with no_gc():
        net = net or array_netlist(ic, params.flush_interval)
        texts, _ = column_verilog(net, name, {xy: s.module_name for xy, s in shapes.items()},
                                  tile_ports, columns)
    return list(texts.items())


def port_list(circuit) -> list[dict]:
    """The ports of a magma circuit as JSON: [{name, direction (in/out), type (bits, bit,
    clock, reset), width}], in declaration order (:func:`tile_declaration` inverts it)."""

    out = []
    for pname, T in circuit.IO.items():
        base = T.qualify(m.Direction.Undirected)
        d = "in" if T.is_input() else "out"
        if base is m.Clock:
            kind, width = "clock", 1
        elif base is m.Reset:
            kind, width = "reset", 1
        elif issubclass(base, m.Bits):
            kind, width = "bits", len(base)
        elif base is m.Bit:
            kind, width = "bit", 1
        else:
            raise CollateralError(f"module {circuit.name}: port {pname} has type {T}, which "
                                  f"the RTL cache cannot record (Bits, Bit, Clock, Reset)")
        out.append({"name": pname, "direction": d, "type": kind, "width": width})
    return out


def tile_declaration(name: str, ports: list[dict]):
    """A magma declaration (no body: CIRCT emits no module for it) named ``name`` with the
    ports of :func:`port_list` (also the top's ports, e.g. for a fault testbench)."""

    types = {"clock": lambda w: m.Clock, "reset": lambda w: m.Reset,
             "bits": lambda w: m.Bits[w], "bit": lambda w: m.Bit}
    io_ports = {p["name"]: (m.In if p["direction"] == "in" else m.Out)(
        types[p["type"]](p["width"])) for p in ports}
    module = name

    class Declaration(m.Circuit):
        name = module
        io = m.IO(**io_ports)
    return Declaration
