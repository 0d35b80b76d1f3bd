"""The routing graph for place and route: JSON and the plain-text router format.

JSON (``schema`` ``canal.routing_graph/1``), one file per bit width::

    {"schema": "canal.routing_graph/1", "width": 16, "params": {...},
     "timing_notes": [...],                       # delay-table substitutions (never silent)
     "layout": ["IppI", ...],                     # one string per row y, tag per column x ('.' empty)
     "tiles": [{"x", "y", "core", "tag", "timing_class", "core_delay_ps",
                "ports": [{"name", "width", "direction"}], "config_fields": [{"name",
                "width", "reset"}], "external": [port names],
                "config_memory": null | {"feature", "words", "width"}}],
     "nodes": [{"id", "kind": "SB"|"PORT"|"REG"|"RMUX", "x", "y", "width",
                "side": "NORTH"|... (SB/REG/RMUX), "track", "io": "SB_IN"|"SB_OUT" (SB),
                "port": name, "direction": "in"|"out" (PORT),
                "fanin": [ids in select order], "delay_ps": [ps per fan-in edge]}]}

Text (in the spirit of the Canal/Cyclone router dump; ``side`` 0..3 = N,S,E,W, ``io`` 0/1 =
SB_IN/SB_OUT)::

    GRAPH <width> <params as one-line JSON>
    NOTE <timing note>
    SWITCH <width> <topology> <tracks>          # the switch-box wiring, informative
      <side_in> <track_in> <side_out> <track_out>
    END
    TILE <x> <y> <core|-> <tag|-> <timing_class>
      CORE_PORT <name> <width> <in|out> [external]
      CORE_FIELD <name> <width> <reset>
      CONFIG_MEMORY <feature> <words> <width>  # the core's config memory (canal.config)
      SB (<track>, <x>, <y>, <side>, <io>, <width>)
        <- <node> @ <delay ps>                   # fan-in, in select order
      PORT <name> (<x>, <y>, <width>) <in|out>
      REG (<track>, <x>, <y>, <side>, <width>)
      RMUX (<track>, <x>, <y>, <side>, <width>)
    END

Loading either dump gives a graph equal (``==``) to the dumped one. The writers stamp the
text of tiles with the same nodes, fan-in and delays from one template (see "stamping"
below): the same text as writing node by node, which they fall back to for a graph holding
values the templates do not reproduce.
"""
from __future__ import annotations

import json
import re
from dataclasses import replace
from itertools import chain, count, repeat
from operator import attrgetter, eq, itemgetter
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from cgra.config import ConfigField
from cgra.core import ConfigMemory, PortSpec
from cgra.errors import CollateralError

from canal.graph import IO, InterconnectGraph, Node, NodeKind, Side, TileInfo, node_from_fields
from canal.passes import topology_wires
from canal.timing import TimingModel

SCHEMA = "canal.routing_graph/1"


def layout(graph: InterconnectGraph) -> list[str]:
    """One string per row: the PnR tag of each tile ('.' for a tile without core)."""
    xs = max(x for x, _ in graph.tiles) + 1
    ys = max(y for _, y in graph.tiles) + 1
    rows = []
    for y in range(ys):
        rows.append("".join((graph.tiles[(x, y)].tag or ".") if (x, y) in graph.tiles else "."
                            for x in range(xs)))
    return rows


def _tile_json(t: TileInfo, tm: TimingModel | None) -> dict:
    return {"x": t.x, "y": t.y, "core": t.core, "tag": t.tag, "timing_class": t.timing_class,
            "core_delay_ps": tm.core(t.timing_class) if tm and t.core else None,
            "ports": [{"name": p.name, "width": p.width, "direction": p.direction}
                      for p in t.ports],
            "config_fields": [{"name": f.name, "width": f.width, "reset": f.reset}
                              for f in t.config_fields],
            "external": list(t.external),
            "config_memory": None if t.config_memory is None else {
                "feature": t.config_memory.feature, "words": t.config_memory.words,
                "width": t.config_memory.width}}


def _config_memory(d: dict | None) -> ConfigMemory | None:
    if d is None:
        return None
    feat = d["feature"]
    return ConfigMemory(int(d["words"]), int(d["width"]), None if feat is None else int(feat))


def _nodes_json(graph: InterconnectGraph) -> list[dict]:
    """The ``nodes`` entries of :func:`to_json`, as dicts (the reference form)."""
    nodes = []
    delay, fanin = graph.delay, graph.fanin
    for nid, n in graph.nodes.items():
        # enum ``_value_``/``_name_``: plain attributes (``.value``/``.name`` are slow
        # descriptors in Python 3.11)
        kind = n.kind
        d = {"id": nid, "kind": kind._value_, "x": n.x, "y": n.y, "width": n.width}
        if kind is NodeKind.PORT:
            d["port"] = n.name
            d["direction"] = n.direction
        else:
            d["side"] = n.side._name_
            d["track"] = n.track
            if kind is NodeKind.SB:
                d["io"] = n.io._name_
        srcs = fanin[nid]
        d["fanin"] = list(srcs)
        d["delay_ps"] = [delay[(s, nid)] for s in srcs]
        nodes.append(d)
    return nodes


def _head_json(graph: InterconnectGraph, tm: TimingModel | None) -> dict:
    """The document of :func:`to_json` without its ``nodes`` (which come last)."""
    tm = tm or TimingModel.load()
    return {"schema": SCHEMA, "width": graph.width, "params": graph.params,
            "timing_notes": list(graph.timing_notes), "layout": layout(graph),
            "tiles": [_tile_json(t, tm) for t in graph.tiles.values()]}


def to_json(graph: InterconnectGraph, timing: TimingModel | None = None) -> dict:
    """The JSON document of ``graph`` (see module docstring)."""
    doc = _head_json(graph, timing)
    doc["nodes"] = _nodes_json(graph)
    return doc


def _json_safe(text: str) -> bool:
    """True when ``json.dumps`` writes the string ``text`` verbatim between quotes (printable
    ASCII without ``"`` or ``\\``: nothing to escape)."""
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text


def _json_node_template(kind: NodeKind, side: Side | None, io: IO | None,
                        xy: str = "%d") -> str:
    """The %-template of the JSON entry of a node of ``kind`` (``side``/``io`` written in),
    with the keys in :func:`_nodes_json` order. Its arguments are the same for every kind:
    ``(id, x, y, width, track, name, direction, fanin text, delay text)``; ``%.0s`` takes
    an argument the kind does not write; ``xy``: the conversion of x and y."""
    head = ('{"id":"%s","kind":"' + kind._value_ + f'","x":{xy},"y":{xy},"width":%d,')
    if kind is NodeKind.PORT:
        head += '%.0s"port":"%s","direction":"%s",'
    else:
        head += '"side":"' + side._name_ + '","track":%d,%.0s%.0s'
        if kind is NodeKind.SB:
            head += '"io":"' + io._name_ + '",'
    return head + '"fanin":[%s],"delay_ps":[%s]}'


# --- stamping: both dumps repeat per tile ----------------------------------------------
#
# Tiles of the same design (and the same place on the edge of the array) have the same
# nodes and the same fan-in at the same relative positions, so their part of a dump differs
# only in the coordinates. The writers cut the dump into *segments* (the nodes of one tile,
# consecutive in the dump), give each segment a signature that holds everything its text
# depends on except its base coordinates, render the first segment of each signature once
# with the coordinates as slots, and fill the slots for every other segment.

_OPEN, _CLOSE = "\x01", "\x02"          # brackets of a coordinate slot in a rendered segment
_SLOT = re.compile("\x01([0-9]+)\x02")
_FIELDS = ("kind", "width", "side", "track", "io", "name", "direction")
_FIELD_TYPES = {"kind": {NodeKind}, "width": {int}, "side": {Side, type(None)},
                "track": {int, type(None)}, "io": {IO, type(None)},
                "name": {str, type(None)}, "direction": {str, type(None)}}


class _Segments:
    """Integer columns of the nodes of a graph (all but the coordinates coded into one
    ``code``: equal codes, equal fields) and of the fan-in edges of the nodes in a dump
    order (``pos``: node positions; the order of ``graph.nodes``, or with ``by_tile`` that
    of the text dump), to cut the dump into segments with signatures.

    Built only for graphs whose values the stamped writers reproduce exactly; the
    constructor raises :class:`_NotStampable` otherwise (ids that are not the ids of
    their nodes, coordinates or fields of unexpected types, delays that are not floats;
    a fan-in source that is not a node raises KeyError), and so does :meth:`stamp` for a
    port name holding a slot bracket.

    ``base``: the node-order segments of the same graph (``by_tile=False``), whose checked
    node and edge columns a ``by_tile`` instance permutes instead of reading every node and
    edge of the graph again (the JSON and the text dump of one graph: :func:`dump_graph`)."""

    def __init__(self, graph: InterconnectGraph, by_tile: bool = False,
                 base: "_Segments | None" = None):
        if base is not None and by_tile:
            self._from_base(graph, base)
            return
        nodes, fanin, delay = graph.nodes, graph.fanin, graph.delay
        keys, vals = list(nodes), list(nodes.values())
        n = len(keys)
        if not all(map(eq, keys, map(attrgetter("id"), vals))):
            raise _NotStampable("a node is stored under another id")
        rows = list(map(attrgetter("x", "y", *_FIELDS), vals))
        columns = list(zip(*rows, strict=True)) if rows else [()] * (2 + len(_FIELDS))
        if not set(map(type, chain(columns[0], columns[1]))) <= {int}:
            raise _NotStampable("a coordinate that is not an int")
        for f, column in zip(_FIELDS, columns[2:], strict=True):
            if not set(map(type, column)) <= _FIELD_TYPES[f]:
                raise _NotStampable(f"a node {f} of an unexpected type")
        self.vals, self.nodes = vals, nodes
        self.index = dict(zip(keys, range(n), strict=True))
        codes: dict[tuple, int] = {}
        fields = map(itemgetter(slice(2, None)), rows)
        self.code = np.fromiter(map(codes.setdefault, fields, count()), np.int64, n)
        self.x, self.y = np.array(columns[0], np.int64), np.array(columns[1], np.int64)
        # the dump order: the nodes' own, or grouped by tile (``by_tile``)
        if by_tile:
            self.pos, self.tile_counts = self._by_tile(graph)
            order = list(map(keys.__getitem__, self.pos.tolist()))
        else:
            order = keys
            self.pos = np.arange(n, dtype=np.int64)
        # the edges: fan-in of the nodes in dump order
        self.fanin = fl = list(map(fanin.__getitem__, order))
        counts = list(map(len, fl))
        self.counts = np.array(counts, np.int64)
        e = int(self.counts.sum())
        self.src = np.fromiter(map(self.index.__getitem__, chain.from_iterable(fl)),
                               np.int64, e)
        if not set(map(type, delay.values())) <= {float}:
            raise _NotStampable("a delay that is not a float")
        dsts = chain.from_iterable(map(repeat, order, counts))
        edges = zip(chain.from_iterable(fl), dsts, strict=True)
        self.delays = d = np.fromiter(map(delay.__getitem__, edges), np.float64, e)
        self.finite = bool(np.isfinite(d).all())
        self._edge_columns()

    def _edge_columns(self) -> None:
        """``edges`` (per edge: the source's code, its offset from the sink, the delay's
        bits) and ``eoff`` (each node's first edge) from ``src``, ``delays``, ``pos`` and
        ``counts``."""
        src, d = self.src, self.delays
        dpos = np.repeat(self.pos, self.counts)
        self.edges = np.column_stack([self.code[src], self.x[src] - self.x[dpos],
                                      self.y[src] - self.y[dpos], d.view(np.int64)])
        self.eoff = np.concatenate([[0], np.cumsum(self.counts)]).tolist()

    def _from_base(self, graph: InterconnectGraph, base: "_Segments") -> None:
        """The ``by_tile`` segments from the node-order ``base`` of the same graph: the
        node columns are shared; the edges of each node, a contiguous block in ``base``,
        are gathered in the new node order (the checks ``base`` passed hold for the graph
        whatever the order)."""
        if base.nodes is not graph.nodes or len(base.pos) != len(graph.nodes):
            raise _NotStampable("segments of another graph")
        self.vals, self.nodes, self.index = base.vals, base.nodes, base.index
        self.code, self.x, self.y, self.finite = base.code, base.x, base.y, base.finite
        self.pos, self.tile_counts = self._by_tile(graph)
        fl = base.fanin
        self.fanin = list(map(fl.__getitem__, self.pos.tolist()))
        self.counts = counts = base.counts[self.pos]
        starts = np.asarray(base.eoff[:-1], np.int64)[self.pos]
        off = np.concatenate([[0], np.cumsum(counts)])
        e = int(off[-1])
        idx = np.repeat(starts - off[:-1], counts) + np.arange(e, dtype=np.int64)
        self.src, self.delays = base.src[idx], base.delays[idx]
        self._edge_columns()

    def _by_tile(self, graph: InterconnectGraph) -> tuple[np.ndarray, np.ndarray]:
        """The node positions in the order of ``graph.by_tile()`` over ``graph.tiles`` (the
        nodes of each tile in node order; nodes off the tiles left out) and the number of
        nodes of each tile: a stable sort on the rank of each node's tile."""
        tkeys = list(graph.tiles)
        if not set(map(type, chain.from_iterable(tkeys))) <= {int}:
            raise _NotStampable("a tile coordinate that is not an int")
        tx = np.array([x for x, _ in tkeys], np.int64).reshape(-1)
        ty = np.array([y for _, y in tkeys], np.int64).reshape(-1)
        if len(tkeys) == 0 or tx.min() < 0 or ty.min() < 0:
            raise _NotStampable("no tiles, or a tile at a negative coordinate")
        w, h = int(tx.max()) + 1, int(ty.max()) + 1
        if w * h > 16 * len(tkeys) + 4096:
            raise _NotStampable("tiles too sparse for a grid")
        grid = np.full((w, h), -1, np.int64)
        grid[tx, ty] = np.arange(len(tkeys))
        x, y = self.x, self.y
        rank = np.full(len(x), -1, np.int64)
        inside = (x >= 0) & (x < w) & (y >= 0) & (y < h)
        rank[inside] = grid[x[inside], y[inside]]
        sel = np.flatnonzero(rank >= 0)
        pos = sel[np.argsort(rank[sel], kind="stable")]
        return pos, np.bincount(rank[sel], minlength=len(tkeys))

    def signature(self, a: int, b: int) -> tuple[bytes, bytes, bytes]:
        """Everything the text of the nodes ``pos[a:b]`` (one tile) depends on but their
        base coordinates: node codes, fan-in counts, and per edge the source's code and
        offset and the delay's bits (equal bits: equal ``repr``)."""
        return (self.code[self.pos[a:b]].tobytes(), self.counts[a:b].tobytes(),
                self.edges[self.eoff[a]:self.eoff[b]].tobytes())

    def stamp(self, segments: list[tuple[int, int, int, int]],
              render: Callable[[int, int, Callable[[Node], Node]], str]) -> Iterator[str]:
        """The text of each segment ``(a, b, x, y)`` (nodes ``pos[a:b]``, all at (x, y)):
        ``render(a, b, sym)`` for the first segment of a signature, where ``sym(node)`` is
        the node with its coordinates replaced by slots (offsets from (x, y)); filled in with
        the segment's coordinates for the others (and for the first)."""
        templates: dict[tuple, tuple[str, list[tuple[int, int]], Callable]] = {}
        for a, b, x, y in segments:
            sig = self.signature(a, b)
            tpl = templates.get(sig)
            if tpl is None:
                tpl = templates[sig] = self._template(a, b, x, y, render)
            text, slots, pick = tpl
            yield text % pick([str(x + off if axis == 0 else y + off) for axis, off in slots])

    def _template(self, a: int, b: int, x: int, y: int,
                  render: Callable[[int, int, Callable[[Node], Node]], str]
                  ) -> tuple[str, list[tuple[int, int]], Callable]:
        """The %-template of segment ``(a, b)`` at (x, y) (``%s`` per coordinate, the rest
        of its text with ``%`` doubled), its slots (axis 0/1 = x/y, offset) and the
        function picking the slot values in the order of the ``%s``."""
        slots: dict[tuple[int, int], int] = {}

        def slot(axis: int, off: int) -> str:
            return f"{_OPEN}{slots.setdefault((axis, off), len(slots))}{_CLOSE}"

        def sym(n: Node) -> Node:
            return replace(n, x=slot(0, n.x - x), y=slot(1, n.y - y))

        raw = render(a, b, sym).replace("%", "%%")
        occ = [int(k) for k in _SLOT.findall(raw)]
        if raw.count(_OPEN) != len(occ) or raw.count(_CLOSE) != len(occ):
            raise _NotStampable("a slot bracket in a port name")
        text = _SLOT.sub("%s", raw)
        if len(occ) == 1:
            pick = itemgetter(*occ)
            return text, list(slots), lambda v: (pick(v),)
        return text, list(slots), itemgetter(*occ) if occ else (lambda v: ())


class _NotStampable(Exception):
    """The graph holds a value the stamped writers do not reproduce exactly."""


def _segment_runs(seg: _Segments, n: int) -> list[tuple[int, int, int, int]]:
    """The maximal runs of consecutive nodes (dump order) at the same coordinates."""
    xs, ys = seg.x[seg.pos], seg.y[seg.pos]
    cut = (np.flatnonzero((xs[1:] != xs[:-1]) | (ys[1:] != ys[:-1])) + 1).tolist()
    starts, ends = [0] + cut, cut + [n]
    return [(a, b, int(xs[a]), int(ys[a])) for a, b in zip(starts, ends, strict=True)
            if b > a]


def _nodes_json_stamped(graph: InterconnectGraph, seg: "_Segments | None" = None
                        ) -> str | None:
    """``json.dumps(_nodes_json(graph), separators=(",", ":"))`` without its brackets,
    stamped per run of nodes of one tile (:class:`_Segments`; the node entries are written
    by :func:`_json_node_template`), or ``None`` when the graph holds a value this writer
    does not reproduce exactly. Exact because the checks rule out every value ``json`` would
    write differently: node ids (and so fan-in sources, which must be node ids) and port
    names and directions are strings with nothing to escape; coordinates and widths are
    ``int`` (not ``bool``), tracks ``int`` (``%d`` refuses a ``None`` one); delays are
    finite floats, written with ``float.__repr__`` as ``json`` does."""
    nodes = graph.nodes
    try:
        seg = seg if seg is not None else _Segments(graph)
    except (_NotStampable, KeyError, TypeError, ValueError, OverflowError):
        return None
    if not seg.finite:
        return None
    vals, fanin, delays, eoff = seg.vals, seg.fanin, seg.delays, seg.eoff

    def render(a: int, b: int, sym: Callable[[Node], Node]) -> str:
        entries = []
        for p in range(a, b):
            n = vals[seg.pos[p]]
            s = sym(n)
            srcs = [nodes[src] for src in fanin[p]]
            for m in (n, *srcs):
                if m.kind is NodeKind.PORT and not _json_safe(m.name + m.direction):
                    raise _NotStampable("a port name or direction to escape")
            fi = ",".join(f'"{sym(m).id}"' for m in srcs)
            ds = ",".join(map(float.__repr__, delays[eoff[p]:eoff[p + 1]].tolist()))
            entries.append(_json_node_template(n.kind, n.side, n.io, "%s") % (
                s.id, s.x, s.y, n.width, n.track, n.name, n.direction, fi, ds))
        return ",".join(entries)

    try:
        runs = _segment_runs(seg, len(nodes))
        return ",".join(seg.stamp(runs, render))
    except (_NotStampable, AttributeError, KeyError, TypeError, ValueError):
        return None         # the reference writer raises the error (or handles the value)


def _tiles_text_stamped(graph: InterconnectGraph, base: "_Segments | None" = None
                        ) -> list[str] | None:
    """:func:`_tiles_text` (joined by newlines to the same text), each tile's nodes
    stamped (:class:`_Segments`), or ``None`` when the graph holds a value this writer does
    not reproduce exactly. A node's reference is :func:`node_line` of it, a fan-in line
    ``repr`` of a float delay: equal fields, offsets and delay bits give equal text."""
    try:
        seg = _Segments(graph, by_tile=True, base=base)
    except (_NotStampable, KeyError, TypeError, ValueError, OverflowError):
        return None
    vals, nodes, fanin, delays, eoff = seg.vals, seg.nodes, seg.fanin, seg.delays, seg.eoff

    def render(a: int, b: int, sym: Callable[[Node], Node]) -> str:
        lines = []
        for p in range(a, b):
            lines.append("  " + node_line(sym(vals[seg.pos[p]])))
            for src, d in zip(fanin[p], delays[eoff[p]:eoff[p + 1]].tolist(), strict=True):
                lines.append(f"    <- {node_line(sym(nodes[src]))} @ {d!r}")
        return "\n".join(lines)

    counts = seg.tile_counts.tolist()
    segments, a = [], 0
    for (x, y), k in zip(graph.tiles, counts, strict=True):
        if k:
            segments.append((a, a + k, x, y))
            a += k
    try:
        blocks = iter(seg.stamp(segments, render))
        lines: list[str] = []
        for ((x, y), t), k in zip(graph.tiles.items(), counts, strict=True):
            lines += _tile_lines(x, y, t)
            if k:
                lines.append(next(blocks))
            lines.append("END")
        return lines
    except (_NotStampable, AttributeError, KeyError, TypeError, ValueError):
        return None


def _json_pieces(graph: InterconnectGraph, timing: TimingModel | None,
                 seg: "_Segments | None" = None) -> list[str]:
    """:func:`json_text` in pieces (written one after the other, not concatenated). The
    nodes (nearly all of the text) are stamped by :func:`_nodes_json_stamped`, or written by
    ``json.dumps`` of :func:`_nodes_json` when it declines; the rest by ``json.dumps`` (the
    encoder writes a nested value the same on its own as inside the document, so the
    pieces concatenate to the text of the whole)."""
    sep = (",", ":")
    head = json.dumps(_head_json(graph, timing), separators=sep)
    body = _nodes_json_stamped(graph, seg)
    if body is None:
        return [head[:-1], ',"nodes":', json.dumps(_nodes_json(graph), separators=sep), "}"]
    return [head[:-1], ',"nodes":[', body, "]}"]


def json_text(graph: InterconnectGraph, timing: TimingModel | None = None) -> str:
    """The text :func:`dump_json` writes: ``json.dumps(to_json(graph, timing),
    separators=(",", ":"))``, character for character, made without a dict per node
    (:func:`_json_pieces`)."""
    return "".join(_json_pieces(graph, timing))


def from_json(doc: dict, source: str = "<json>") -> InterconnectGraph:
    """Inverse of :func:`to_json`. Raises :class:`CollateralError` naming ``source`` and the
    offending entry when the document is malformed."""
    if doc.get("schema") != SCHEMA:
        raise CollateralError(f"{source}: schema {doc.get('schema')!r}, expected {SCHEMA!r}; "
                              f"regenerate the routing graph")
    try:
        tiles = {}
        for t in doc["tiles"]:
            tiles[(t["x"], t["y"])] = TileInfo(
                t["x"], t["y"], t["core"], t["tag"],
                tuple(PortSpec(p["name"], p["width"], p["direction"]) for p in t["ports"]),
                tuple(ConfigField(f["name"], f["width"], f["reset"])
                      for f in t["config_fields"]),
                tuple(t["external"]), t["timing_class"],
                _config_memory(t.get("config_memory")))
        g = InterconnectGraph(doc["width"], tiles, params=doc["params"],
                              timing_notes=list(doc["timing_notes"]))
        # the nodes as InterconnectGraph.add_node would add Node(...) with its id read (a
        # 64x32 width has 700 000 of them: canal.graph.node_from_fields), duplicates
        # ignored, a wrong width refused
        nodes, fanin, gw = g.nodes, g.fanin, g.width
        kinds = {k.value: k for k in NodeKind}
        sides, ios = Side.__members__, IO.__members__
        for d in doc["nodes"]:
            kind = kinds.get(d["kind"]) or NodeKind(d["kind"])
            fields = {"kind": kind, "x": d["x"], "y": d["y"], "width": d["width"],
                      "side": sides[d["side"]] if "side" in d else None,
                      "track": d.get("track"), "io": ios[d["io"]] if "io" in d else None,
                      "name": d.get("port"), "direction": d.get("direction")}
            node = node_from_fields(fields)
            nid = node.id
            if nid != d["id"]:
                raise CollateralError(f"{source}: node id {d['id']} does not match its fields "
                                      f"({nid})")
            if fields["width"] != gw:
                g.add_node(node)            # raises its SpecError
            if nid not in nodes:
                nodes[nid] = node
                fanin[nid] = []
        for d in doc["nodes"]:
            for src, delay in zip(d["fanin"], d["delay_ps"], strict=True):
                g.fanin[d["id"]].append(src)
                g.delay[(src, d["id"])] = float(delay)
                if src not in g.nodes:
                    raise CollateralError(f"{source}: node {d['id']} has fan-in {src} that is "
                                          f"not a node of the graph")
    except (KeyError, ValueError, TypeError) as exc:
        raise CollateralError(f"{source}: malformed routing graph ({type(exc).__name__}: "
                              f"{exc}); regenerate it with canal") from None
    return g


def dump_json(graph: InterconnectGraph, path: str | Path,
              timing: TimingModel | None = None) -> None:
    """Write the JSON routing graph (:func:`json_text`) to ``path``."""
    pieces = _json_pieces(graph, timing)
    with open(path, "w") as f:          # as Path.write_text: the default encoding
        f.writelines(pieces)


def load_json(path: str | Path) -> InterconnectGraph:
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CollateralError(f"{path}: cannot read routing graph ({exc})") from None
    return from_json(doc, str(path))


# --- text format -----------------------------------------------------------------------

def node_line(n: Node) -> str:
    """The text-format reference of a node."""
    if n.kind is NodeKind.SB:
        return f"SB ({n.track}, {n.x}, {n.y}, {int(n.side)}, {int(n.io)}, {n.width})"
    if n.kind is NodeKind.PORT:
        return f"PORT {n.name} ({n.x}, {n.y}, {n.width}) {n.direction}"
    return f"{n.kind.value} ({n.track}, {n.x}, {n.y}, {int(n.side)}, {n.width})"


_RE_SB = re.compile(r"^SB \((\d+), (\d+), (\d+), (\d), (\d), (\d+)\)$")
_RE_PORT = re.compile(r"^PORT (\S+) \((\d+), (\d+), (\d+)\) (in|out)$")
_RE_REG = re.compile(r"^(REG|RMUX) \((\d+), (\d+), (\d+), (\d), (\d+)\)$")


def parse_node_line(text: str) -> Node:
    """Inverse of :func:`node_line`; raises ValueError on a malformed line."""
    m = _RE_SB.match(text)
    if m:
        t, x, y, s, io, w = map(int, m.groups())
        return Node(NodeKind.SB, x, y, w, Side(s), t, IO(io))
    m = _RE_PORT.match(text)
    if m:
        return Node(NodeKind.PORT, int(m[2]), int(m[3]), int(m[4]), name=m[1], direction=m[5])
    m = _RE_REG.match(text)
    if m:
        t, x, y, s, w = map(int, m.groups()[1:])
        return Node(NodeKind(m[1]), x, y, w, Side(s), t)
    raise ValueError(f"not a node reference: {text!r}")


def _tile_lines(x: int, y: int, t: TileInfo) -> list[str]:
    """The TILE line of ``t`` (at (x, y): its key in the graph's tiles) and its CORE_PORT,
    CORE_FIELD and CONFIG_MEMORY lines."""
    lines = [f"TILE {x} {y} {t.core or '-'} {t.tag or '-'} {t.timing_class}"]
    for p in t.ports:
        ext = " external" if p.name in t.external else ""
        lines.append(f"  CORE_PORT {p.name} {p.width} {p.direction}{ext}")
    for f in t.config_fields:
        lines.append(f"  CORE_FIELD {f.name} {f.width} {f.reset}")
    cm = t.config_memory
    if cm is not None:
        lines.append(f"  CONFIG_MEMORY {'-' if cm.feature is None else cm.feature} "
                     f"{cm.words} {cm.width}")
    return lines


def _tiles_text(graph: InterconnectGraph, per_tile: dict[tuple[int, int], list[Node]]
                ) -> list[str]:
    """The TILE blocks of :func:`to_text`, one node and its fan-in at a time (the general
    path: node references made on first use)."""
    refs: dict[str, str] = {}              # node id -> node_line, each computed once

    def ref(nid: str) -> str:
        r = refs.get(nid)
        if r is None:
            r = refs[nid] = node_line(graph.nodes[nid])
        return r

    lines: list[str] = []
    delay = graph.delay
    for (x, y), t in graph.tiles.items():
        lines += _tile_lines(x, y, t)
        for n in per_tile.get((x, y), []):
            nid = n.id
            lines.append("  " + ref(nid))
            for src in graph.fanin[nid]:
                lines.append(f"    <- {ref(src)} @ {delay[(src, nid)]!r}")
        lines.append("END")
    return lines


def _text_lines(graph: InterconnectGraph, base: "_Segments | None" = None) -> list[str]:
    """The lines of :func:`to_text` (a tile's nodes may come as one multi-line string)."""
    lines = [f"GRAPH {graph.width} {json.dumps(graph.params, separators=(',', ':'))}"]
    lines += [f"NOTE {n}" for n in graph.timing_notes]
    topo, tracks = graph.params.get("topology"), graph.params.get("tracks")
    if topo and tracks:
        lines.append(f"SWITCH {graph.width} {topo} {tracks}")
        lines += [f"  {int(a)} {ta} {int(b)} {tb}" for a, ta, b, tb in
                  topology_wires(topo, tracks)]
        lines.append("END")
    tiles = _tiles_text_stamped(graph, base)
    lines += tiles if tiles is not None else _tiles_text(graph, graph.by_tile())
    return lines


def to_text(graph: InterconnectGraph) -> str:
    """The text dump of ``graph`` (see module docstring). The tiles are stamped
    (:func:`_tiles_text_stamped`), or written node by node (:func:`_tiles_text`) when the
    stamped writer declines: the same text either way."""
    return "\n".join(_text_lines(graph)) + "\n"


def from_text(text: str, source: str = "<text>") -> InterconnectGraph:
    """Inverse of :func:`to_text`. Raises :class:`CollateralError` naming the line."""
    g: InterconnectGraph | None = None
    notes: list[str] = []
    tile: dict | None = None
    tiles: dict[tuple[int, int], TileInfo] = {}
    nodes: list[Node] = []
    fanins: list[tuple[str, str, float, int]] = []
    current: Node | None = None
    in_switch = False
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        try:
            if not line:
                continue
            if line.startswith("GRAPH "):
                _, w, params = line.split(" ", 2)
                g = InterconnectGraph(int(w), params=json.loads(params))
            elif line.startswith("NOTE "):
                notes.append(line[5:])
            elif line.startswith("SWITCH "):
                in_switch = True
            elif line == "END":
                if tile is not None:
                    tiles[(tile["x"], tile["y"])] = TileInfo(
                        tile["x"], tile["y"], tile["core"], tile["tag"], tuple(tile["ports"]),
                        tuple(tile["fields"]), tuple(tile["external"]), tile["tclass"],
                        tile["config_memory"])
                tile, in_switch, current = None, False, None
            elif in_switch:
                continue
            elif line.startswith("TILE "):
                _, x, y, core, tag, tclass = line.split()
                tile = {"x": int(x), "y": int(y), "core": None if core == "-" else core,
                        "tag": "" if tag == "-" else tag, "tclass": tclass, "ports": [],
                        "fields": [], "external": [], "config_memory": None}
            elif line.startswith("CORE_PORT "):
                parts = line.split()
                tile["ports"].append(PortSpec(parts[1], int(parts[2]), parts[3]))
                if len(parts) > 4 and parts[4] == "external":
                    tile["external"].append(parts[1])
            elif line.startswith("CORE_FIELD "):
                _, name, w, reset = line.split()
                tile["fields"].append(ConfigField(name, int(w), int(reset)))
            elif line.startswith("CONFIG_MEMORY "):
                _, feat, words, w = line.split()
                tile["config_memory"] = ConfigMemory(int(words), int(w),
                                                     None if feat == "-" else int(feat))
            elif line.startswith("<- "):
                ref, delay = line[3:].rsplit(" @ ", 1)
                if current is None:
                    raise ValueError("fan-in line outside a node")
                fanins.append((parse_node_line(ref).id, current.id, float(delay), lineno))
            else:
                current = parse_node_line(line)
                nodes.append(current)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CollateralError(f"{source}:{lineno}: cannot parse {line!r} ({exc})") from None
    if g is None:
        raise CollateralError(f"{source}: no GRAPH line; not a canal routing graph")
    g.tiles = tiles
    g.timing_notes = notes
    for n in nodes:
        g.add_node(n)
    for src, dst, delay, lineno in fanins:
        if src not in g.nodes:
            raise CollateralError(f"{source}:{lineno}: fan-in {src} of {dst} is not a node")
        g.fanin[dst].append(src)
        g.delay[(src, dst)] = delay
    return g


def dump_text(graph: InterconnectGraph, path: str | Path) -> None:
    """Write the text routing graph (:func:`to_text`) to ``path``."""
    text = "\n".join(_text_lines(graph))
    with open(path, "w") as f:          # as Path.write_text: the default encoding
        f.write(text)
        f.write("\n")


def dump_graph(graph: InterconnectGraph, json_path: str | Path, text_path: str | Path,
               timing: TimingModel | None = None) -> list[tuple[str, str]] | None:
    """:func:`dump_json` to ``json_path`` and :func:`dump_text` to ``text_path`` (the same
    bytes), reading the graph's nodes and edges once for both: the text writer permutes the
    JSON writer's checked columns (:class:`_Segments`) into its tile order. Returns
    :func:`class_representatives` of the graph from the same columns (``None`` when they
    could not be built), for :meth:`TimingModel.resolve <canal.timing.TimingModel.resolve>`
    (``edges``)."""
    try:
        seg = _Segments(graph)
    except (_NotStampable, KeyError, TypeError, ValueError, OverflowError):
        seg = None                      # each writer decides on its own (and declines)
    with open(json_path, "w") as f:     # as Path.write_text: the default encoding
        f.writelines(_json_pieces(graph, timing, seg))
    text = "\n".join(_text_lines(graph, seg))
    with open(text_path, "w") as f:
        f.write(text)
        f.write("\n")
    return None if seg is None else _representatives(graph, seg)


def class_representatives(graph: InterconnectGraph) -> list[tuple[str, str]] | None:
    """The first edge ``(src, dst)``, in fan-in order (``graph.fanin`` in order, each list
    in order), of every distinct combination of the source's fields, the sink's fields and
    the timing class of the sink's tile (``None`` off the tiles), in order of first
    occurrence (the sink's fields including whether it has a single fan-in: a pass-through
    of a long track is its own class); ``None`` when the graph's columns cannot be built
    (:class:`_Segments`) or
    its fan-in dict is not in node order. A path class (:meth:`TimingModel.edge_class
    <canal.timing.TimingModel.edge_class>`) is a function of those fields only (node kinds,
    sides, the sink's io, the tile class, the graph's width), so the classes of these
    edges, in this order, are those of all edges in their order of first occurrence; at
    64x32 a few hundred edges stand for ~700 000 per width."""
    try:
        seg = _Segments(graph)
    except (_NotStampable, KeyError, TypeError, ValueError, OverflowError):
        return None
    return _representatives(graph, seg)


def _representatives(graph: InterconnectGraph, seg: _Segments) -> list[tuple[str, str]] | None:
    """:func:`class_representatives` from the node-order columns ``seg``."""
    if len(graph.fanin) != len(graph.nodes) or not all(map(eq, graph.fanin, graph.nodes)):
        return None
    tcodes: dict[str | None, int] = {None: 0}
    tiles = graph.tiles
    n = len(seg.vals)
    if n == 0 or not len(seg.src):
        return []
    # the timing class of each node's tile (0: off the tiles), through a grid of the tiles
    tx = np.array([x for x, _ in tiles] or [0], np.int64)
    ty = np.array([y for _, y in tiles] or [0], np.int64)
    x0, y0 = min(int(tx.min()), int(seg.x.min())), min(int(ty.min()), int(seg.y.min()))
    w = max(int(tx.max()), int(seg.x.max())) - x0 + 1
    h = max(int(ty.max()), int(seg.y.max())) - y0 + 1
    if w * h > 16 * (len(tiles) + n) + 4096:
        return None                     # too sparse for a grid: take every edge
    grid = np.zeros((w, h), np.int64)
    for (x, y), t in tiles.items():
        grid[x - x0, y - y0] = tcodes.setdefault(t.timing_class, len(tcodes))
    tclass = grid[seg.x - x0, seg.y - y0]
    # one int64 per edge: (sink code, sink tile class, sink has a single fan-in, source
    # code), mixed radix (a single fan-in SB_OUT is a pass-through: its own path class)
    dst = np.repeat(np.arange(n, dtype=np.int64), seg.counts)
    nc, nt = int(seg.code.max()) + 1, len(tcodes)
    if nc * nc * nt * 2 >= 1 << 62:
        return None
    single = (np.asarray(seg.counts, dtype=np.int64) == 1).astype(np.int64)
    key = ((seg.code[dst] * nt + tclass[dst]) * 2 + single[dst]) * nc + seg.code[seg.src]
    _, first = np.unique(key, return_index=True)
    first.sort()
    ids = list(graph.nodes)
    return [(ids[s], ids[d]) for s, d in zip(seg.src[first].tolist(), dst[first].tolist(),
                                              strict=True)]


def load_text(path: str | Path) -> InterconnectGraph:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise CollateralError(f"{path}: cannot read routing graph ({exc})") from None
    return from_text(text, str(path))
