"""Graph passes that build an :class:`~canal.graph.InterconnectGraph` (each graph -> graph).

Composition used by :func:`build_uniform` (and by garnet)::

    g = empty_graph(width, tiles)                      # tiles: (x, y) -> TileInfo
    g = add_switch_boxes(g, topology="imran", tracks=5, timing=tm)
    g = wire_tracks(g, track_length=1)                 # SB_OUT -> neighbour SB_IN
    g = connect_core_ports(g, CorePortConnections(), timing=tm)
    g = segment_tracks(g, track_length=L, timing=tm)   # only for long tracks, L > 1
    g = insert_pipeline_registers(g, [(t, side) ...], timing=tm)

(:func:`build_graph` computes this composition in a single pass that yields the same graph,
orders included, and falls back to the passes themselves for unusual parameters and for
long tracks.)

Switch-box topologies (pairs are bidirectional: ``A t <-> B f(t)`` adds
SB_IN(A, t) -> SB_OUT(B, f(t)) and SB_IN(B, f(t)) -> SB_OUT(A, t)), W = number of tracks:

* ``disjoint`` (the "subset" box): every side pair t <-> t;
* ``wilton`` (S. Wilton, PhD thesis 1997, §4; the cyclic turn box):
  W t<->N (W-t) mod W, N t<->E (t+1) mod W, E t<->S (2W-2-t) mod W, S t<->W (t-1) mod W,
  W t<->E t, N t<->S t;
* ``imran`` (Masud & Wilton, "A new switch block for segmented FPGAs", FPL 1999, as used by
  Canal): W t<->N (W-t) mod W, N t<->E (t+1) mod W, S t<->E (W-t-2) mod W,
  W t<->S (t-1) mod W, W t<->E t, S t<->N t.

Each SB_IN therefore reaches exactly one track on each of the three other sides, and every
SB_OUT has fan-in 3 from SB_INs (plus the core outputs that drive it); with long tracks
:func:`segment_tracks` then makes the SB_OUTs where a track passes through 1-input wires and
re-targets the turns to the tracks that break in the tile (its docstring).
Fan-in order of an SB_OUT: SB_INs by side (NORTH, SOUTH, EAST, WEST, own side skipped), then
core output ports in core port order.
Fan-in order of a connection box (core input PORT): for each side in the order given, for each
track in the order given, the SB_IN of (side, track).
"""
from __future__ import annotations

import itertools
import operator
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from cgra.core import CoreSpec
from cgra.errors import SpecError

from canal.graph import (_SIDE_NAME, IO, InterconnectGraph, Node, NodeKind, Side, TileInfo,
                         iter_sides, no_gc, node_template, port_id, reg_id, rmux_id, sb_id,
                         stamp_nodes, tile_info_from_core)
from canal.timing import TimingModel
from canal.interconnect import Interconnect

TOPOLOGIES = ("disjoint", "wilton", "imran")

SbPair = tuple[Side, int, Side, int]


def topology_pairs(topology: str, tracks: int) -> list[SbPair]:
    """Bidirectional pairs ``(side_a, track_a, side_b, track_b)`` of a switch box with
    ``tracks`` tracks per side. Raises :class:`SpecError` on an unknown topology or
    ``tracks < 1``."""
    if tracks < 1:
        raise SpecError(f"switch box: tracks={tracks}; use at least 1 track")
    w = tracks
    N, S, E, W = Side.NORTH, Side.SOUTH, Side.EAST, Side.WEST
    topo = topology.lower()
    pairs: list[SbPair] = []
    for t in range(w):
        if topo == "disjoint":
            for a, b in ((W, N), (N, E), (S, E), (W, S), (W, E), (S, N)):
                pairs.append((a, t, b, t))
        elif topo == "wilton":
            pairs += [(W, t, N, (w - t) % w), (N, t, E, (t + 1) % w),
                      (E, t, S, (2 * w - 2 - t) % w), (S, t, W, (t - 1) % w),
                      (W, t, E, t), (N, t, S, t)]
        elif topo == "imran":
            pairs += [(W, t, N, (w - t) % w), (N, t, E, (t + 1) % w),
                      (S, t, E, (w - t - 2) % w), (W, t, S, (t - 1) % w),
                      (W, t, E, t), (S, t, N, t)]
        else:
            raise SpecError(f"switch box: unknown topology '{topology}'; "
                            f"choose one of {TOPOLOGIES}")
    return pairs


def topology_wires(topology: str, tracks: int) -> list[SbPair]:
    """Directed internal wires ``(side_in, track_in, side_out, track_out)`` meaning
    SB_IN(side_in, track_in) -> SB_OUT(side_out, track_out), sorted."""
    wires = set()
    for a, ta, b, tb in topology_pairs(topology, tracks):
        wires.add((a, ta, b, tb))
        wires.add((b, tb, a, ta))
    return sorted(wires)


def empty_graph(width: int, tiles: dict[tuple[int, int], TileInfo]) -> InterconnectGraph:
    """A graph of ``width`` bits over the given tiles, without nodes."""
    if width < 1:
        raise SpecError(f"interconnect width {width}; use a positive bit width")
    return InterconnectGraph(width, dict(sorted(tiles.items(), key=lambda kv: (kv[0][1],
                                                                               kv[0][0]))))


def add_switch_boxes(graph: InterconnectGraph, topology: str = "imran", tracks: int = 5,
                     timing: TimingModel | None = None,
                     tiles: Iterable[tuple[int, int]] | None = None) -> InterconnectGraph:
    """Add a switch box (4 sides x ``tracks`` x {SB_IN, SB_OUT}) to every tile (or the given
    ones) with the internal wiring of ``topology``. Edge delay: the switch-box hop of the
    tile's timing class, width and side pair (ps)."""
    tm = timing or TimingModel.load()
    g = graph.copy()
    wires = topology_wires(topology, tracks)
    by_out: dict[tuple[Side, int], list[tuple[Side, int]]] = {}
    for si, ti, so, to in wires:
        by_out.setdefault((so, to), []).append((si, ti))
    w = g.width
    for (x, y) in (tiles if tiles is not None else list(g.tiles)):
        info = g.tiles[(x, y)]
        for io in (IO.SB_IN, IO.SB_OUT):
            for side in iter_sides():
                for t in range(tracks):
                    g.add_node(Node(NodeKind.SB, x, y, w, side, t, io))
        for side in iter_sides():
            for t in range(tracks):
                dst = sb_id(w, x, y, side, t, IO.SB_OUT)
                for si, ti in sorted(by_out[(side, t)], key=lambda st: (int(st[0]), st[1])):
                    g.add_edge(sb_id(w, x, y, si, ti, IO.SB_IN), dst,
                               tm.sb_hop(info.timing_class, w, si.name, side.name))
    g.params = {**g.params, "topology": topology.lower(), "tracks": tracks}
    g.timing_notes = sorted(set(g.timing_notes) | set(tm.notes))
    return g


def wire_tracks(graph: InterconnectGraph, track_length: int = 1) -> InterconnectGraph:
    """Connect every SB_OUT(x, y, side, t) to SB_IN(x', y', opposite side, t) of the tile
    ``track_length`` tiles away on ``side`` (when that tile exists). Wire delay 0 ps.

    This is Canal's literal wiring: with ``track_length = L > 1`` a wire skips the L - 1
    tiles between its ends (no switch box or connection box taps it there), which splits the
    array into L x L sub-grids that cannot reach each other. :func:`build_graph` makes long
    tracks as ``wire_tracks(g, 1)`` followed by :func:`segment_tracks` instead."""
    if track_length < 1:
        raise SpecError(f"track_length={track_length}; use a length >= 1 (tiles per wire)")
    g = graph.copy()
    w = g.width
    for n in list(g.nodes.values()):
        if n.kind is NodeKind.SB and n.io is IO.SB_OUT:
            dx, dy = n.side.step()
            nx_, ny_ = n.x + dx * track_length, n.y + dy * track_length
            dst = sb_id(w, nx_, ny_, n.side.opposite, n.track, IO.SB_IN)
            if dst in g.nodes:
                g.add_edge(n.id, dst, 0.0)
    g.params = {**g.params, "track_length": track_length}
    return g


def track_breaks(x: int, y: int, side: Side, track: int, track_length: int,
                 bounds: tuple[int, int, int, int] | None = None) -> bool:
    """Whether ``track`` on ``side`` has a real switch box in tile (x, y) under staggered
    segmentation with segments of ``track_length`` tiles (:func:`segment_tracks`): a
    horizontal track (EAST/WEST) breaks where ``(x + track) % track_length == 0``, a vertical
    one (NORTH/SOUTH) where ``(y + track) % track_length == 0``; ``bounds`` =
    ``(x_min, y_min, x_max, y_max)`` of the array, whose first and last column (row) break
    every horizontal (vertical) track. Always ``True`` for ``track_length <= 1``."""
    if track_length <= 1:
        return True
    horizontal = side in (Side.EAST, Side.WEST)
    c = x if horizontal else y
    if bounds is not None and c in ((bounds[0], bounds[2]) if horizontal
                                    else (bounds[1], bounds[3])):
        return True
    return (c + track) % track_length == 0


def _bounds(graph: InterconnectGraph) -> tuple[int, int, int, int]:
    xs = [x for x, _ in graph.tiles] or [0]
    ys = [y for _, y in graph.tiles] or [0]
    return min(xs), min(ys), max(xs), max(ys)


def is_pass_through(graph: InterconnectGraph, x: int, y: int, side: Side, track: int) -> bool:
    """Whether SB_OUT(x, y, side, track) of ``graph`` is a pass-through of a segmented
    track (:func:`segment_tracks` recorded ``params["segments"] == "staggered"``)."""
    if graph.params.get("segments") != "staggered":
        return False
    return not track_breaks(x, y, side, track, int(graph.params.get("track_length", 1)),
                            _bounds(graph))


def segment_tracks(graph: InterconnectGraph, track_length: int,
                   timing: TimingModel | None = None) -> InterconnectGraph:
    """Turn the tile-to-tile tracks of ``graph`` (:func:`wire_tracks` with length 1) into
    single-driver segments of ``track_length`` tiles with staggered start points (Betz &
    Rose, "FPGA routing architecture: segmentation and buffering to optimize speed and
    density", FPGA 1999, and VPR's staggered segment start points; single-driver wires as
    in Lemieux et al., "Directional and single-driver wires in FPGA interconnect", FPT 2004).

    Where track ``t`` of a side *breaks* (:func:`track_breaks`: horizontal tracks where
    ``(x + t) % L == 0``, vertical ones where ``(y + t) % L == 0``, and every horizontal
    (vertical) track in the array's first and last column (row), as VPR clips the segments
    cut by the array edge) its SB_OUT is a switch-box mux: the only place the wire can be
    driven (turns, core outputs, its pipeline register). Elsewhere the track passes
    through: SB_OUT(EAST, t) has the single fan-in SB_IN(WEST, t) (SB_OUT(WEST, t):
    SB_IN(EAST, t); likewise NORTH/SOUTH), a 1-input mux, which :mod:`canal.rtl` emits as
    a wire and which has no select field (:mod:`canal.config`); it loses its core outputs
    and :func:`insert_pipeline_registers` (run after this pass) puts no register on it.
    The connection boxes still read every SB_IN, so the passing wire is tapped by the
    cores of every tile it spans.

    Turns. The mux of a breaking SB_OUT(b, t) takes the topology's turn wires
    (:func:`topology_wires`) from *every* SB_IN of the two other-axis sides, ending or
    passing (the wire drives a turn at each tile it spans: VPR's switch-block pattern with a
    switch point at every tile of the wire), re-targeted to the breaking tracks: a turn
    SB_IN(a, ta) -> SB_OUT(b, tb) of the topology goes to track ``tb`` when it breaks here,
    else to ``B[tb % len(B)]``, ``B`` the sorted breaking tracks of side b here. The
    straight wire SB_IN(opposite of b, t) -> SB_OUT(b, t) stays for a breaking t (the wire
    ending here continues). Why not turn only at segment ends: every segment then spans
    exactly L tiles between switch points, so a route's switch points all stay in one
    residue class (x mod L, y mod L) of the tile where it started (only the clipped
    segments at the array edge change it), and Imran's turns map each odd track to an even
    one for 5 tracks, which traps odd tracks in odd rows even with taps: at 8x8 with L = 2,
    9 of the 64 core outputs (the PE at (1, 1) among them) reached no IO tile. With taps
    and re-targeted turns a route can turn at every tile, and every segment is still driven
    only at its start. Fan-in order of a breaking SB_OUT: SB_INs by (side, track), then its
    core outputs in their former order; hop delays as in :func:`add_switch_boxes`.

    The pass-through edge carries one tile of wire, :meth:`TimingModel.pass_through`
    (class ``pass:<class>:<width>:<a>-><b>``, :mod:`canal.timing`). The SB nodes of every
    tile stay, so the graph format, the tile RTL and the array netlist need no special case.
    Requires ``tracks >= track_length`` (then each tile has a breaking track on each side).
    Records ``params["track_length"]`` and ``params["segments"] = "staggered"``; returns a
    new graph. Raises :class:`SpecError` for ``track_length < 1``, a graph without switch
    boxes or ``tracks < track_length``."""
    if track_length < 1:
        raise SpecError(f"track_length={track_length}; use a length >= 1 (tiles per wire)")
    tracks, topo = graph.params.get("tracks"), graph.params.get("topology")
    if tracks is None or topo is None:
        raise SpecError("segment_tracks: the graph has no switch boxes; run "
                        "add_switch_boxes first")
    g = graph.copy()
    g.params = {**g.params, "track_length": track_length}
    if track_length == 1:
        return g
    if tracks < track_length:
        raise SpecError(f"segment_tracks: tracks={tracks} < track_length={track_length}: "
                        f"a tile where no track of a side breaks cannot drive that side; "
                        f"use tracks >= {track_length} or a shorter track_length")
    tm = timing or TimingModel.load()
    w = g.width
    bounds = _bounds(g)
    # topology turn target: (side_in, track_in, side_out) -> track_out
    target = {(si, ti, so): to for si, ti, so, to in topology_wires(topo, tracks)}
    sides = list(iter_sides())
    fanin, delay, nodes = g.fanin, g.delay, g.nodes
    for (x, y), info in g.tiles.items():
        brk = {s: [t for t in range(tracks) if track_breaks(x, y, s, t, track_length, bounds)]
               for s in sides}
        if all(len(b) == tracks for b in brk.values()):
            continue
        tclass = info.timing_class
        new_fanin: dict[str, list[str]] = {}
        for b in sides:
            bset = set(brk[b])
            for t in range(tracks):
                out = sb_id(w, x, y, b, t, IO.SB_OUT)
                if out in fanin:
                    new_fanin[out] = []
            for a in sides:                 # SB_INs in (side, track) order
                if a is b:
                    continue
                for ta in range(tracks):
                    src = sb_id(w, x, y, a, ta, IO.SB_IN)
                    if src not in nodes:
                        continue
                    if a is b.opposite:
                        if ta in bset:      # the wire ending here continues straight
                            tb = ta
                        else:
                            continue        # the pass-through, below
                    else:
                        tb = target[(a, ta, b)]
                        if tb not in bset:
                            tb = brk[b][tb % len(brk[b])]
                    out = sb_id(w, x, y, b, tb, IO.SB_OUT)
                    if out in new_fanin:
                        new_fanin[out].append(src)
        for out, srcs in new_fanin.items():
            n = nodes[out]
            old = fanin[out]
            for s in old:
                del delay[(s, out)]
            if n.track in brk[n.side]:
                ports = [s for s in old if nodes[s].kind is NodeKind.PORT]
                for s in srcs:
                    delay[(s, out)] = tm.sb_hop(tclass, w, nodes[s].side.name, n.side.name)
                for s in ports:
                    delay[(s, out)] = 0.0
                fanin[out] = srcs + ports
            else:
                src = sb_id(w, x, y, n.side.opposite, n.track, IO.SB_IN)
                delay[(src, out)] = tm.pass_through(tclass, w, n.side.opposite.name,
                                                    n.side.name)
                fanin[out] = [src]
    g.params["segments"] = "staggered"
    g.timing_notes = sorted(set(g.timing_notes) | set(tm.notes))
    return g


@dataclass
class CorePortConnections:
    """Which routing resources connect to core ports.

    ``cb_sides`` / ``cb_tracks``: SB_IN nodes feeding each core input through its connection
    box (default: all four sides, all tracks). ``out_sides`` / ``out_tracks``: SB_OUT nodes each
    core output drives (default: all). ``per_port`` overrides ``(sides, tracks)`` for a port
    name (``tracks`` ``None`` = all tracks).
    """

    cb_sides: tuple[Side, ...] = (Side.NORTH, Side.SOUTH, Side.EAST, Side.WEST)
    cb_tracks: tuple[int, ...] | None = None
    out_sides: tuple[Side, ...] = (Side.NORTH, Side.SOUTH, Side.EAST, Side.WEST)
    out_tracks: tuple[int, ...] | None = None
    per_port: dict[str, tuple[tuple[Side, ...], tuple[int, ...] | None]] = field(
        default_factory=dict)


def connect_core_ports(graph: InterconnectGraph, conn: CorePortConnections | None = None,
                       timing: TimingModel | None = None) -> InterconnectGraph:
    """Add PORT nodes for every routable core port of this graph's width and connect them:
    SB_IN(side, t) -> core input (connection box, delay ``connection_box[class]``), and
    core output -> SB_OUT(side, t) (delay 0). Raises :class:`SpecError` for a track that the
    tile's switch box does not have."""
    conn = conn or CorePortConnections()
    tm = timing or TimingModel.load()
    g = graph.copy()
    w = g.width
    tracks = g.params.get("tracks")
    if tracks is None:
        raise SpecError("connect_core_ports: the graph has no switch boxes; run "
                        "add_switch_boxes first")
    for (x, y), info in g.tiles.items():
        for p in info.routable_ports():
            if p.width != w:
                continue
            sides, trks = conn.per_port.get(
                p.name, (conn.cb_sides, conn.cb_tracks) if p.direction == "in"
                else (conn.out_sides, conn.out_tracks))
            trks = tuple(range(tracks)) if trks is None else tuple(trks)
            for t in trks:
                if not 0 <= t < tracks:
                    raise SpecError(f"core port '{p.name}' of tile ({x}, {y}): track {t} does "
                                    f"not exist (tracks 0..{tracks - 1})")
            pid = g.add_node(Node(NodeKind.PORT, x, y, w, name=p.name, direction=p.direction))
            if p.direction == "in":
                cb = tm.connection_box(info.timing_class)
                for side in sides:
                    for t in trks:
                        g.add_edge(sb_id(w, x, y, side, t, IO.SB_IN), pid, cb)
            elif p.direction == "out":
                for side in sides:
                    for t in trks:
                        g.add_edge(pid, sb_id(w, x, y, side, t, IO.SB_OUT), 0.0)
            else:
                raise SpecError(f"core port '{p.name}' of tile ({x}, {y}) has direction "
                                f"'{p.direction}'; use 'in' or 'out'")
    g.timing_notes = sorted(set(g.timing_notes) | set(tm.notes))
    return g


def insert_pipeline_registers(graph: InterconnectGraph, track_sides: Iterable[tuple[int, Side]],
                              timing: TimingModel | None = None,
                              tiles: Iterable[tuple[int, int]] | None = None
                              ) -> InterconnectGraph:
    """Insert a pipeline register on SB_OUT(side, track) for each ``(track, side)`` in every
    tile (or the given ones): SB_OUT -> REG -> RMUX and SB_OUT -> RMUX, RMUX fan-in
    ``[SB_OUT (bypass, select 0), REG (select 1)]``; every former sink of the SB_OUT now reads
    the RMUX (same position in its fan-in list, same delay). Delays: SB_OUT->REG 0,
    REG->RMUX ``register_mux`` (ps), SB_OUT->RMUX 0. In a graph of long tracks
    (:func:`segment_tracks`) the pass-through SB_OUTs get no register: a segment has at most
    one, at its start."""
    tm = timing or TimingModel.load()
    g = graph.copy()
    w = g.width
    wanted = [(int(t), Side(s) if not isinstance(s, Side) else s) for t, s in track_sides]
    fanout = g.fanout()
    seg_len = int(g.params.get("track_length", 1)) \
        if g.params.get("segments") == "staggered" else 1
    bounds = _bounds(g)
    for (x, y) in (tiles if tiles is not None else list(g.tiles)):
        for t, side in wanted:
            if not track_breaks(x, y, side, t, seg_len, bounds):
                continue                # a pass-through of a long track (segment_tracks)
            out = sb_id(w, x, y, side, t, IO.SB_OUT)
            if out not in g.nodes:
                raise SpecError(f"pipeline register on track {t} side {side.name} of tile "
                                f"({x}, {y}): no such SB_OUT in the {w}-bit graph")
            r = g.add_node(Node(NodeKind.REG, x, y, w, side, t))
            rm = g.add_node(Node(NodeKind.RMUX, x, y, w, side, t))
            if g.fanin[r]:
                raise SpecError(f"tile ({x}, {y}) track {t} side {side.name}: pipeline register "
                                f"inserted twice")
            for sink in fanout[out]:
                i = g.fanin[sink].index(out)
                g.fanin[sink][i] = rm
                g.delay[(rm, sink)] = g.delay.pop((out, sink))
            g.add_edge(out, r, 0.0)
            g.add_edge(out, rm, 0.0)
            g.add_edge(r, rm, tm.register_mux())
    g.params = {**g.params, "pipeline_registers": sorted(
        set(tuple(p) for p in g.params.get("pipeline_registers", []))
        | {(t, s.name) for t, s in wanted})}
    g.params["pipeline_registers"] = [list(p) for p in g.params["pipeline_registers"]]
    return g


# --- cores on the grid ------------------------------------------------------------------

CoreFn = Callable[[int, int], "CoreSpec | None"]


def per_column(fn: Callable[[int], CoreSpec | None]) -> CoreFn:
    """A core-per-position function from a core-per-column function."""
    return lambda x, y: fn(x)


def io_on_edges(core_fn: CoreFn, io_core: CoreSpec, width: int, height: int,
                sides: Sequence[Side] = (Side.NORTH,)) -> CoreFn:
    """Put ``io_core`` on the tiles of the array edges ``sides`` (NORTH = row 0, SOUTH = last
    row, WEST = column 0, EAST = last column); elsewhere use ``core_fn``."""
    def fn(x: int, y: int) -> CoreSpec | None:
        on_edge = ((Side.NORTH in sides and y == 0) or (Side.SOUTH in sides and y == height - 1)
                   or (Side.WEST in sides and x == 0) or (Side.EAST in sides and x == width - 1))
        return io_core if on_edge else core_fn(x, y)
    return fn


@dataclass
class InterconnectParams:
    """Parameters of a uniform interconnect (:func:`build_uniform`).

    ``width`` x ``height`` tiles; ``tracks`` per side per bit width; ``topology`` one of
    ``disjoint``/``wilton``/``imran``; ``track_length`` in tiles; ``widths`` the bit widths
    (one graph each); ``pipeline_registers``: ``(track, side)`` list, ``None`` = every track
    on every side; ``connections``: core port connections; ``timing_file``: delay table JSON
    (``None`` = the project's default, :mod:`canal.timing`)."""

    width: int
    height: int
    tracks: int = 5
    topology: str = "imran"
    track_length: int = 1
    widths: tuple[int, ...] = (16, 1)
    pipeline_registers: list[tuple[int, Side]] | None = None
    connections: CorePortConnections = field(default_factory=CorePortConnections)
    timing_file: str | None = None


def build_tiles(params: InterconnectParams, core_fn: CoreFn
                ) -> tuple[dict[tuple[int, int], TileInfo], dict[str, CoreSpec]]:
    """Tile records and the distinct cores (by name) of a ``width`` x ``height`` array.
    Raises :class:`SpecError` when two different cores share a name."""
    if params.width < 1 or params.height < 1:
        raise SpecError(f"array size {params.width}x{params.height}; width and height must "
                        f"be >= 1")
    tiles: dict[tuple[int, int], TileInfo] = {}
    cores: dict[str, CoreSpec] = {}
    for y in range(params.height):
        for x in range(params.width):
            core = core_fn(x, y)
            if core is not None:
                prev = cores.setdefault(core.name, core)
                if prev is not core and (prev.ports != core.ports
                                         or prev.config_fields != core.config_fields):
                    raise SpecError(f"two different cores are named '{core.name}' (tile "
                                    f"({x}, {y})); give each distinct core a unique name")
            tiles[(x, y)] = tile_info_from_core(x, y, core)
    return tiles, cores


def build_graph(params: InterconnectParams, tiles: dict[tuple[int, int], TileInfo],
                width: int, timing: TimingModel | None = None) -> InterconnectGraph:
    """The uniform ``width``-bit graph: switch boxes, tracks, core ports, pipeline registers.

    The result is, by definition, the composition of the passes (module docstring; see
    :func:`build_graph_by_passes`). It is computed by :func:`_build_graph_fused`, a single
    pass that produces the same graph (same nodes, fan-in lists and delays, in the same
    order) several times faster on large arrays; parameters outside the plain cases it
    handles (or that must raise an error) go through the passes themselves."""
    tm = timing or TimingModel.load(params.timing_file)
    g = _build_graph_fused(params, tiles, width, tm)
    if g is None:
        g = build_graph_by_passes(params, tiles, width, tm)
    g.params["array"] = [params.width, params.height]
    return g


def build_graph_by_passes(params: InterconnectParams, tiles: dict[tuple[int, int], TileInfo],
                          width: int, timing: TimingModel | None = None) -> InterconnectGraph:
    """:func:`build_graph` as the literal composition of the passes (the reference the fused
    builder is tested against; also its fallback)."""
    tm = timing or TimingModel.load(params.timing_file)
    g = empty_graph(width, tiles)
    g = add_switch_boxes(g, params.topology, params.tracks, tm)
    if params.track_length > 1:
        # long tracks: tile-to-tile wires, then segments of track_length tiles
        g = wire_tracks(g, 1)
        g = connect_core_ports(g, params.connections, tm)
        g = segment_tracks(g, params.track_length, tm)
    else:
        g = wire_tracks(g, params.track_length)
        g = connect_core_ports(g, params.connections, tm)
    regs = params.pipeline_registers
    if regs is None:
        regs = [(t, s) for s in iter_sides() for t in range(params.tracks)]
    if regs:
        g = insert_pipeline_registers(g, regs, tm)
    g.params["array"] = [params.width, params.height]
    return g


def _picker(idx: Sequence[int]) -> Callable[[Sequence], tuple]:
    """``operator.itemgetter(*idx)`` that always returns a tuple (also for 0 or 1 index)."""
    idx = tuple(idx)
    if len(idx) >= 2:
        return operator.itemgetter(*idx)
    if idx:
        i = idx[0]
        return lambda seq: (seq[i],)
    return lambda seq: ()


#: switch-box node index of a side: ``k = _SIDE_INDEX[side] * tracks + track`` enumerates the
#: SB nodes of one io in the order add_switch_boxes creates them (NORTH, SOUTH, EAST, WEST)
_SIDE_INDEX = {s: i for i, s in enumerate(iter_sides())}


class _TileIds:
    """The node ids of one tile (fused builder): SB_IN / SB_OUT ids by switch-box index k,
    REG / RMUX ids interleaved in register order, the node each SB_OUT's wire is driven by
    (its RMUX when registered), the neighbour record on each side and the SB_OUT fan-in
    lists (core outputs are appended to them)."""

    __slots__ = ("x", "y", "info", "ins", "outs", "regs", "drive", "nbrs", "out_fanin")


def _build_graph_fused(params: InterconnectParams, tiles: dict[tuple[int, int], TileInfo],
                       width: int, tm: TimingModel) -> InterconnectGraph | None:
    """:func:`build_graph_by_passes` (without ``params["array"]``) in one pass, or ``None``
    when the parameters are outside the cases handled here (an error to raise, odd types,
    duplicate ports / sides / tracks / registers, long tracks ``track_length > 1``, which
    :func:`segment_tracks` builds); the caller then runs the passes.

    Why it is exact. Every tile's switch box has the same nodes and internal wires, so the
    ids are stamped from per-graph suffix tables and the hop delays are looked up once per
    timing class; the passes' per-edge checks (node present, edge not yet added) hold by
    construction once the pre-checks below pass. The passes' *order* is reproduced:
    ``nodes``/``fanin``: every tile's SB_INs then SB_OUTs (tile order (y, x)), then every
    tile's core ports, then every tile's REG, RMUX pairs; ``delay``: the switch-box hops of
    all tiles, then the wires (SB_OUT node order), then the core-port edges, then per register
    (RMUX -> wire sink), (SB_OUT -> REG), (SB_OUT -> RMUX), (REG -> RMUX) - the position at
    which :func:`insert_pipeline_registers` re-inserts the wire delay it pops; the wire of a
    registered SB_OUT is therefore never entered at its wire position, and its sink's fan-in
    reads the RMUX from the start. Timing-model calls happen in the passes' order of first
    use (class by class in tile order, hops before connection boxes), so its notes and
    errors are the same."""
    w, T, L, topo = width, params.tracks, params.track_length, params.topology
    if not (type(w) is int and w >= 1 and type(T) is int and T >= 1 and type(L) is int
            and L == 1 and isinstance(topo, str) and topo.lower() in TOPOLOGIES
            and all(type(x) is int and type(y) is int for x, y in tiles)):
        return None
    regs = params.pipeline_registers
    if regs is None:
        regs = [(t, s) for s in iter_sides() for t in range(T)]
    try:
        wanted = [(int(t), Side(s) if not isinstance(s, Side) else s) for t, s in regs]
    except (TypeError, ValueError):
        return None
    reg_k = [_SIDE_INDEX[s] * T + t for t, s in wanted]
    if any(not 0 <= t < T for t, _ in wanted) or len(set(reg_k)) != len(reg_k):
        return None

    # core ports of each distinct (ports, external) signature: (name, is input, SB indices,
    # node template); None when a port needs the general path
    conn = params.connections or CorePortConnections()
    sigs: dict = {}

    def port_entries(info: TileInfo) -> list | None:
        entries, names = [], set()
        for p in info.ports:
            if p.name in info.external or p.width != w:
                continue
            if p.name in names or p.direction not in ("in", "out"):
                return None
            names.add(p.name)
            sides, trks = conn.per_port.get(
                p.name, (conn.cb_sides, conn.cb_tracks) if p.direction == "in"
                else (conn.out_sides, conn.out_tracks))
            trks = tuple(range(T)) if trks is None else tuple(trks)
            try:
                si = [_SIDE_INDEX[s] for s in sides]
            except (KeyError, TypeError):
                return None
            if (any(type(t) is not int or not 0 <= t < T for t in trks)
                    or len(set(trks)) != len(trks) or len(set(si)) != len(si)):
                return None
            ks = [i * T + t for i in si for t in trks]
            entries.append((p.name, p.direction == "in", ks, _picker(ks),
                            node_template(NodeKind.PORT, w, name=p.name,
                                          direction=p.direction)))
        return entries

    tl = sorted(tiles.items(), key=lambda kv: (kv[0][1], kv[0][0]))
    tile_ports = []
    for _, info in tl:
        key = (info.ports, info.external)
        if key not in sigs:
            sigs[key] = port_entries(info)
        if sigs[key] is None:
            return None
        tile_ports.append(sigs[key])

    sides = list(iter_sides())
    steps = [s.step() for s in sides]
    opp = [_SIDE_INDEX[s.opposite] for s in sides]
    in_suf = [f"{_SIDE_NAME[s]}:{t}:IN" for s in sides for t in range(T)]
    out_suf = [f"{_SIDE_NAME[s]}:{t}:OUT" for s in sides for t in range(T)]
    reg_suf = [f"{_SIDE_NAME[s]}:{t}" for t, s in wanted]
    in_tmpl = [node_template(NodeKind.SB, w, s, t, IO.SB_IN) for s in sides for t in range(T)]
    out_tmpl = [node_template(NodeKind.SB, w, s, t, IO.SB_OUT) for s in sides for t in range(T)]
    rr_tmpl = [node_template(kind, w, s, t) for t, s in wanted
               for kind in (NodeKind.REG, NodeKind.RMUX)]

    # switch box: fan-in of SB_OUT k = SB_IN indices, as add_switch_boxes orders them
    by_out: dict[tuple[Side, int], list[tuple[Side, int]]] = {}
    for si, ti, so, to in topology_wires(topo, T):
        by_out.setdefault((so, to), []).append((si, ti))
    hop_src, hop_in_k, hop_out_k, hop_pairs = [], [], [], []
    for k, (s, t) in enumerate((s, t) for s in sides for t in range(T)):
        srcs = sorted(by_out[(s, t)], key=lambda st: (int(st[0]), st[1]))
        ks = [_SIDE_INDEX[a] * T + b for a, b in srcs]
        hop_src.append(_picker(ks))
        hop_in_k += ks
        hop_out_k += [k] * len(ks)
        hop_pairs += [(a.name, s.name) for a, _ in srcs]
    hop_in, hop_out = _picker(hop_in_k), _picker(hop_out_k)
    hop_delays: dict[str, list[float]] = {}
    registered = set(reg_k)
    # per side: the SB_IN indices (of the neighbour, facing back) of all tracks, and of the
    # tracks whose SB_OUT is not registered with the matching SB_OUT indices (wire pass)
    facing = [_picker([opp[i] * T + t for t in range(T)]) for i in range(4)]
    wire_out = [_picker([i * T + t for t in range(T) if i * T + t not in registered])
                for i in range(4)]
    wire_in = [_picker([opp[i] * T + t for t in range(T) if i * T + t not in registered])
               for i in range(4)]

    g = InterconnectGraph(w, dict(tl))
    nodes, fanin, delay = g.nodes, g.fanin, g.delay

    # ids of every tile
    recs: dict[tuple[int, int], _TileIds] = {}
    for (x, y), info in tl:
        r = _TileIds()
        r.x, r.y, r.info = x, y, info
        pre = f"SB:{w}:{x}:{y}:"
        r.ins = [pre + s for s in in_suf]
        r.outs = [pre + s for s in out_suf]
        rp, mp = f"REG:{w}:{x}:{y}:", f"RMUX:{w}:{x}:{y}:"
        r.regs = [p + s for s in reg_suf for p in (rp, mp)]
        drive = list(r.outs)
        for m, k in enumerate(reg_k):
            drive[k] = r.regs[2 * m + 1]
        r.drive = drive
        recs[(x, y)] = r
    for r in recs.values():
        x, y = r.x, r.y
        r.nbrs = [recs.get((x + dx * L, y + dy * L)) for dx, dy in steps]

    # switch boxes and the wires' fan-ins (add_switch_boxes, wire_tracks)
    for r in recs.values():
        x, y, ins, outs = r.x, r.y, r.ins, r.outs
        nodes.update(zip(ins, stamp_nodes(in_tmpl, x, y, ins), strict=True))
        nodes.update(zip(outs, stamp_nodes(out_tmpl, x, y, outs), strict=True))
        in_fan: list[list[str]] = []
        for i, nb in enumerate(r.nbrs):
            if nb is None:
                in_fan += [[] for _ in range(T)]
            else:
                in_fan += [[d] for d in facing[i](nb.drive)]
        r.out_fanin = [list(src(ins)) for src in hop_src]
        fanin.update(zip(ins, in_fan, strict=True))
        fanin.update(zip(outs, r.out_fanin, strict=True))
        tclass = r.info.timing_class
        hd = hop_delays.get(tclass)
        if hd is None:
            hd = hop_delays[tclass] = [tm.sb_hop(tclass, w, a, b) for a, b in hop_pairs]
        delay.update(zip(zip(hop_in(ins), hop_out(outs), strict=True), hd, strict=True))
    g.params = {"topology": topo.lower(), "tracks": T}

    # wire delays, in SB_OUT node order (unregistered SB_OUTs only, see the docstring)
    for r in recs.values():
        outs = r.outs
        for i, nb in enumerate(r.nbrs):
            if nb is not None:
                delay.update(zip(zip(wire_out[i](outs), wire_in[i](nb.ins), strict=True),
                                 itertools.repeat(0.0)))
    g.params["track_length"] = L

    # core ports (connect_core_ports)
    cb_delays: dict[str, float] = {}
    for r, entries in zip(recs.values(), tile_ports, strict=True):
        if not entries:
            continue
        pre = f"PORT:{w}:{r.x}:{r.y}:"
        for name, is_in, ks, pick, tmpl in entries:
            pid = pre + name
            nodes[pid] = stamp_nodes((tmpl,), r.x, r.y, (pid,))[0]
            if is_in:
                tclass = r.info.timing_class
                cb = cb_delays.get(tclass)
                if cb is None:
                    cb = cb_delays[tclass] = tm.connection_box(tclass)
                srcs = pick(r.ins)
                fanin[pid] = list(srcs)
                delay.update(zip(zip(srcs, itertools.repeat(pid)), itertools.repeat(cb)))
            else:
                fanin[pid] = []
                out_fanin = r.out_fanin
                for k in ks:
                    out_fanin[k].append(pid)
                delay.update(zip(zip(itertools.repeat(pid), pick(r.outs)), itertools.repeat(0.0)))
    g.timing_notes = sorted(set(tm.notes))

    # pipeline registers (insert_pipeline_registers)
    if regs:
        reg_mux = tm.register_mux() if recs else 0.0
        reg_side = [_SIDE_INDEX[s] for _, s in wanted]
        reg_sink = [opp[_SIDE_INDEX[s]] * T + t for t, s in wanted]
        for r in recs.values():
            x, y, rr, outs, nbrs = r.x, r.y, r.regs, r.outs, r.nbrs
            nodes.update(zip(rr, stamp_nodes(rr_tmpl, x, y, rr), strict=True))
            for m, k in enumerate(reg_k):
                reg, rm, out = rr[2 * m], rr[2 * m + 1], outs[k]
                fanin[reg] = [out]
                fanin[rm] = [out, reg]
                nb = nbrs[reg_side[m]]
                if nb is not None:
                    delay[(rm, nb.ins[reg_sink[m]])] = 0.0
                delay[(out, reg)] = 0.0
                delay[(out, rm)] = 0.0
                delay[(reg, rm)] = reg_mux
        g.params["pipeline_registers"] = [list(p) for p in sorted(
            {(t, s.name) for t, s in wanted})]
    return g


def build_uniform(params: InterconnectParams, core_fn: CoreFn,
                  timing: TimingModel | None = None):
    """Build the :class:`~canal.interconnect.Interconnect` (one graph per width in
    ``params.widths``) of a uniform ``width`` x ``height`` array with ``core_fn(x, y)``
    giving each tile's core (``None`` = switch boxes only). Edge delays come from ``timing``
    (default: ``params.timing_file``, else the project's default table); the model, with the
    substitutions it made, is kept as ``Interconnect.timing``."""

    return Interconnect(*uniform_graphs(params, core_fn, timing))


def uniform_graphs(params: InterconnectParams, core_fn: CoreFn,
                   timing: TimingModel | None = None
                   ) -> tuple[dict[int, InterconnectGraph], dict[str, CoreSpec], TimingModel]:
    """What :func:`build_uniform` makes its :class:`~canal.interconnect.Interconnect` of:
    ``(graphs, cores, timing model)``, for a caller that transforms the graphs before
    (one Interconnect, one config map)."""
    tiles, cores = build_tiles(params, core_fn)
    tm = timing or TimingModel.load(params.timing_file)
    with no_gc():
        graphs = {w: build_graph(params, tiles, w, tm) for w in params.widths}
    for (x, y), info in tiles.items():
        for p in info.routable_ports():
            if p.width not in graphs:
                raise SpecError(f"core '{info.core}' port '{p.name}' at tile ({x}, {y}) is "
                                f"{p.width} bits but the interconnect has widths "
                                f"{sorted(graphs)}; add width {p.width} or mark the port "
                                f"external")
    return graphs, cores, tm


__all__ = ["topology_pairs", "topology_wires", "empty_graph", "add_switch_boxes",
           "wire_tracks", "track_breaks", "is_pass_through", "segment_tracks",
           "CorePortConnections", "connect_core_ports",
           "insert_pipeline_registers", "per_column", "io_on_edges", "InterconnectParams",
           "build_tiles", "build_graph", "build_graph_by_passes", "build_uniform",
           "uniform_graphs", "port_id", "reg_id", "rmux_id"]
