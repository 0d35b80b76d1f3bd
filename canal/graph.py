"""The interconnect as a directed graph (one :class:`InterconnectGraph` per bit width).

Nodes (``NodeKind``):

* ``PORT``  — a core port of tile (x, y): name, width, direction (``in`` = the core reads it,
  fed through a connection box; ``out`` = the core drives it);
* ``SB``    — a switch-box node: (x, y, side, track, io) with ``io`` ``SB_IN`` (the wire entering
  the tile from ``side``) or ``SB_OUT`` (the switch-box mux driving the wire leaving by ``side``);
* ``REG``   — a pipeline register on the SB_OUT of (side, track);
* ``RMUX``  — the register mux after it: fan-in ``[SB_OUT (bypass), REG]``.

Every node has an *ordered* fan-in list. A node with more than one fan-in is a multiplexer and
**its select value is the index of the source in the fan-in list** (Canal, Melchert et al.,
"Canal: A Flexible Interconnect Generator for Coarse-Grained Reconfigurable Arrays", §3).
Each edge carries a delay in picoseconds (see :mod:`canal.timing`).

Node ids are stable strings (used by the routing graph, the router and the bitstream)::

    SB:<width>:<x>:<y>:<SIDE>:<track>:<IN|OUT>     e.g. SB:16:1:2:EAST:3:OUT
    PORT:<width>:<x>:<y>:<port name>               e.g. PORT:16:0:1:io2f_16
    REG:<width>:<x>:<y>:<SIDE>:<track>
    RMUX:<width>:<x>:<y>:<SIDE>:<track>

The builders :func:`sb_id`, :func:`port_id`, :func:`reg_id`, :func:`rmux_id` write them and
:func:`parse_id` (a :class:`NodeId`) is their one reader: no other module splits an id.

Coordinates: x is the column (0 = west), y the row (0 = north). Side NORTH of (x, y) faces
(x, y - 1).
"""
from __future__ import annotations

import contextlib
import dataclasses
import enum
import functools
import gc
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import networkx as nx

from cgra.config import ConfigField
from cgra.core import ConfigMemory, CoreSpec, PortSpec
from cgra.errors import CollateralError, SpecError


class Side(enum.IntEnum):
    """Switch-box side; the integer codes are those of the text routing-graph format."""

    NORTH = 0
    SOUTH = 1
    EAST = 2
    WEST = 3

    @property
    def opposite(self) -> "Side":
        return {Side.NORTH: Side.SOUTH, Side.SOUTH: Side.NORTH,
                Side.EAST: Side.WEST, Side.WEST: Side.EAST}[self]

    @property
    def letter(self) -> str:
        return self.name[0]

    def step(self) -> tuple[int, int]:
        """(dx, dy) of the neighbour on this side (y grows southwards)."""
        return {Side.NORTH: (0, -1), Side.SOUTH: (0, 1),
                Side.EAST: (1, 0), Side.WEST: (-1, 0)}[self]


class IO(enum.IntEnum):
    """Switch-box node direction (text-format codes 0 / 1)."""

    SB_IN = 0
    SB_OUT = 1


class NodeKind(str, enum.Enum):
    PORT = "PORT"
    SB = "SB"
    REG = "REG"
    RMUX = "RMUX"


# Enum ``.name`` / ``.value`` go through a Python-level descriptor (slow in 3.11); node ids are
# formatted millions of times for a 64x32 array, so they read these tables instead.
_SIDE_NAME = {s: s.name for s in Side}
_IO_NAME = {IO.SB_IN: "IN", IO.SB_OUT: "OUT"}
_KIND_NAME = {k: k.value for k in NodeKind}


@dataclass(frozen=True)
class Node:
    """One routing resource. ``width`` in bits. ``side``/``track`` are set for SB, REG, RMUX;
    ``io`` for SB only; ``name`` and ``direction`` (``in``/``out``) for PORT only."""

    kind: NodeKind
    x: int
    y: int
    width: int
    side: Side | None = None
    track: int | None = None
    io: IO | None = None
    name: str | None = None
    direction: str | None = None

    @functools.cached_property
    def id(self) -> str:
        # cached: ids are read millions of times by the collateral writers at 64x32
        k = self.kind
        if k is NodeKind.SB:
            return (f"SB:{self.width}:{self.x}:{self.y}:{_SIDE_NAME[self.side]}:{self.track}:"
                    f"{_IO_NAME[self.io]}")
        if k is NodeKind.PORT:
            return f"PORT:{self.width}:{self.x}:{self.y}:{self.name}"
        return (f"{_KIND_NAME[k]}:{self.width}:{self.x}:{self.y}:{_SIDE_NAME[self.side]}:"
                f"{self.track}")

    @functools.cached_property
    def local_name(self) -> str:
        """Name of the node inside its tile's RTL (unique per tile across widths)."""
        if self.kind is NodeKind.SB:
            return f"SB_T{self.track}_{self.side.name}_{self.io.name}_B{self.width}"
        if self.kind is NodeKind.PORT:
            return f"PORT_{self.name}"
        return f"{self.kind.value}_T{self.track}_{self.side.name}_B{self.width}"


_new_object = object.__new__
_set_attr = object.__setattr__


def node_template(kind: NodeKind, width: int, side: Side | None = None,
                  track: int | None = None, io: IO | None = None, name: str | None = None,
                  direction: str | None = None) -> dict:
    """The instance ``__dict__`` of a :class:`Node` of these fields placed at (0, 0), keys in
    field order, plus an empty ``id`` slot: the template :func:`stamp_nodes` copies."""
    d = {f.name: f.default for f in dataclasses.fields(Node)}
    d.update(kind=kind, x=0, y=0, width=width, side=side, track=track, io=io, name=name,
             direction=direction)
    d["id"] = ""
    return d


def stamp_nodes(templates: Iterable[dict], x: int, y: int, ids: Iterable[str]) -> list[Node]:
    """``Node(**fields, x=x, y=y)`` for each template of :func:`node_template`, with its
    cached :attr:`Node.id` preset to the matching entry of ``ids`` (which must be the id the
    node would format). The graph builders create hundreds of thousands of nodes: this skips
    the frozen-dataclass ``__init__`` (one ``object.__setattr__`` per field) and the id
    formatting. The result is indistinguishable from a constructed node whose ``id`` has been
    read (as :meth:`InterconnectGraph.add_node` does): same fields, same ``__dict__`` (keys in
    the same order, ``id`` cached last), so equality, hashing, copying and pickling agree."""
    out = []
    for tmpl, nid in zip(templates, ids, strict=True):
        d = tmpl.copy()
        d["x"] = x
        d["y"] = y
        d["id"] = nid
        n = _new_object(Node)
        _set_attr(n, "__dict__", d)
        out.append(n)
    return out


def node_from_fields(fields: dict) -> Node:
    """``Node(**fields)`` with its cached :attr:`Node.id` read, made as :func:`stamp_nodes`
    makes nodes: ``fields`` (the nine fields in field order; the dict is taken over) becomes
    the instance dict and the id, formatted by :attr:`Node.id`'s own function, is cached in
    it. For readers of large graphs (:func:`canal.collateral.from_json`)."""
    n = _new_object(Node)
    _set_attr(n, "__dict__", fields)
    fields["id"] = _NODE_ID(n)
    return n


_NODE_ID = Node.id.func             # the function behind the cached property


def sb_id(width: int, x: int, y: int, side: Side, track: int, io: IO) -> str:
    return f"SB:{width}:{x}:{y}:{_SIDE_NAME[side]}:{track}:{_IO_NAME[io]}"


def port_id(width: int, x: int, y: int, name: str) -> str:
    return f"PORT:{width}:{x}:{y}:{name}"


def reg_id(width: int, x: int, y: int, side: Side, track: int) -> str:
    return f"REG:{width}:{x}:{y}:{_SIDE_NAME[side]}:{track}"


def rmux_id(width: int, x: int, y: int, side: Side, track: int) -> str:
    return f"RMUX:{width}:{x}:{y}:{_SIDE_NAME[side]}:{track}"


_SIDE_OF = {v: k for k, v in _SIDE_NAME.items()}
_IO_OF = {v: k for k, v in _IO_NAME.items()}
_KIND_OF = {v: k for k, v in _KIND_NAME.items()}
#: the id format of each kind, as the error of :func:`parse_id` states it
_ID_FORMATS = {
    "SB": "SB:<width>:<x>:<y>:<SIDE>:<track>:<IN|OUT>",
    "PORT": "PORT:<width>:<x>:<y>:<port name>",
    "REG": "REG:<width>:<x>:<y>:<SIDE>:<track>",
    "RMUX": "RMUX:<width>:<x>:<y>:<SIDE>:<track>",
}


@dataclass(frozen=True)
class NodeId:
    """The fields of a routing node id (:func:`parse_id`), named as :class:`Node`'s.

    ``kind``; ``width`` in bits; ``x`` (column, 0 = west), ``y`` (row, 0 = north); ``side``
    and ``track`` for SB, REG and RMUX; ``io`` (``SB_IN``/``SB_OUT``) for SB only; ``name``
    (the core port) for PORT only. The fields not of the kind are ``None``."""

    kind: NodeKind
    width: int
    x: int
    y: int
    side: Side | None = None
    track: int | None = None
    io: IO | None = None
    name: str | None = None

    @functools.cached_property
    def id(self) -> str:
        """The id string, formatted by the builder of the kind (:func:`sb_id`, ...)."""
        k = self.kind
        if k is NodeKind.SB:
            return sb_id(self.width, self.x, self.y, self.side, self.track, self.io)
        if k is NodeKind.PORT:
            return port_id(self.width, self.x, self.y, self.name)
        if k is NodeKind.REG:
            return reg_id(self.width, self.x, self.y, self.side, self.track)
        return rmux_id(self.width, self.x, self.y, self.side, self.track)

    @property
    def xy(self) -> tuple[int, int]:
        """(x, y) of the node's tile."""
        return self.x, self.y


@functools.lru_cache(maxsize=1 << 14)
def parse_id(nid: str) -> NodeId:
    """The fields of routing node id ``nid``: the exact inverse of :func:`sb_id`,
    :func:`port_id`, :func:`reg_id` and :func:`rmux_id` (``parse_id(nid).id == nid``).

    Raises :class:`CollateralError` naming the id and the expected format when ``nid`` is not
    an id those builders make (unknown kind, wrong field count, a width, coordinate or track
    that is not a decimal integer as the builders write it, an unknown side or direction, an
    empty port name). Cached (the last 16384 ids), as the pipelining and bitstream passes
    parse the same ids repeatedly: a hit costs about 0.1 us (half of ``nid.split(":")`` and
    two ``int``), a miss about 1.5 us."""
    p = nid.split(":")
    n = len(p)
    k = p[0]
    try:
        if k == "SB" and n == 7:
            w, x, y, side, t, io = (int(p[1]), int(p[2]), int(p[3]), _SIDE_OF[p[4]], int(p[5]),
                                    _IO_OF[p[6]])
            if sb_id(w, x, y, side, t, io) == nid:
                return _node_id({"kind": NodeKind.SB, "width": w, "x": x, "y": y, "side": side,
                                 "track": t, "io": io, "name": None, "id": nid})
        elif k == "PORT" and n >= 5 and (p[4] or n > 5):
            w, x, y = int(p[1]), int(p[2]), int(p[3])
            name = p[4] if n == 5 else ":".join(p[4:])     # a port name may hold ':'
            if port_id(w, x, y, name) == nid:
                return _node_id({"kind": NodeKind.PORT, "width": w, "x": x, "y": y, "side": None,
                                 "track": None, "io": None, "name": name, "id": nid})
        elif (k == "REG" or k == "RMUX") and n == 6:
            w, x, y, side, t = int(p[1]), int(p[2]), int(p[3]), _SIDE_OF[p[4]], int(p[5])
            if (reg_id if k == "REG" else rmux_id)(w, x, y, side, t) == nid:
                return _node_id({"kind": _KIND_OF[k], "width": w, "x": x, "y": y, "side": side,
                                 "track": t, "io": None, "name": None, "id": nid})
    except (KeyError, ValueError):      # a side / direction / integer that does not parse
        pass
    want = _ID_FORMATS.get(k) or " or ".join(_ID_FORMATS.values())
    raise CollateralError(
        f"routing node id {nid!r} is malformed: expected {want} (width, x, y and track "
        f"decimal integers, SIDE one of NORTH/SOUTH/EAST/WEST, a non-empty port name); use an "
        f"id of the routing graph (canal.graph.sb_id / port_id / reg_id / rmux_id)")


def _node_id(fields: dict) -> NodeId:
    """A :class:`NodeId` of ``fields`` (its eight fields, then its ``id``, cached), made as
    :func:`stamp_nodes` makes nodes: no frozen-dataclass ``__init__``, so a parse costs less."""
    r = _new_object(NodeId)
    _set_attr(r, "__dict__", fields)
    return r


@dataclass(frozen=True)
class TileInfo:
    """What the interconnect knows about the tile at (x, y): its core's name, PnR tag, ports,
    config fields, the ports wired straight to the array edge (``external``, IO cores) and the
    timing class used for delays (``pe``, ``mem``, ``io``). ``core`` is ``None`` for an empty
    tile (switch boxes only). ``config_memory``: the core's config-bus-loaded memory
    (:class:`~cgra.core.ConfigMemory`: ``words``, ``width`` in bits and ``feature``, the
    first of its ``ceil(words / 256)`` config features, numbered after every other feature
    of the tile; ``feature`` is filled in by :class:`canal.interconnect.Interconnect`), or
    ``None``."""

    x: int
    y: int
    core: str | None
    tag: str
    ports: tuple[PortSpec, ...] = ()
    config_fields: tuple[ConfigField, ...] = ()
    external: tuple[str, ...] = ()
    timing_class: str = "pe"
    config_memory: ConfigMemory | None = None

    def routable_ports(self) -> list[PortSpec]:
        """Core ports that connect to the interconnect (not wired to the array edge)."""
        return [p for p in self.ports if p.name not in self.external]

    def routable(self, width: int | None = None, direction: str | None = None
                 ) -> list[PortSpec]:
        """Routable core ports, optionally filtered by width (bits) and direction
        (``in``/``out``), in core port order."""
        return [p for p in self.routable_ports()
                if (width is None or p.width == width)
                and (direction is None or p.direction == direction)]


TAG_TIMING_CLASS = {"p": "pe", "m": "mem", "I": "io", "i": "io"}


def tile_info_from_core(x: int, y: int, core: CoreSpec | None) -> TileInfo:
    """:class:`TileInfo` for ``core`` placed at (x, y). ``core.info["external"]`` lists the
    ports that go to the array edge; ``core.info["timing_class"]`` overrides the class derived
    from the tag (p->pe, m->mem, I/i->io)."""
    if core is None:
        return TileInfo(x, y, None, "", (), (), (), "pe")
    external = tuple(core.info.get("external", ()))
    names = {p.name for p in core.ports}
    for e in external:
        if e not in names:
            raise SpecError(f"core '{core.name}' at tile ({x}, {y}) lists external port '{e}' "
                            f"that it does not have; ports: {sorted(names)}")
    tclass = core.info.get("timing_class", TAG_TIMING_CLASS.get(core.tag, "pe"))
    return TileInfo(x, y, core.name, core.tag, tuple(core.ports), tuple(core.config_fields),
                    external, tclass, core.config_memory)


@dataclass
class InterconnectGraph:
    """The routing resources of one bit width.

    ``nodes``: id -> :class:`Node` (insertion order is the canonical order);
    ``fanin``: id -> ordered list of source ids (the select value of a mux is the index);
    ``delay``: (src id, dst id) -> picoseconds; ``tiles``: (x, y) -> :class:`TileInfo`;
    ``params``: the builder parameters (topology, tracks, track length, ...), informative.
    """

    width: int
    tiles: dict[tuple[int, int], TileInfo] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    fanin: dict[str, list[str]] = field(default_factory=dict)
    delay: dict[tuple[str, str], float] = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    timing_notes: list[str] = field(default_factory=list)

    # -- construction -----------------------------------------------------------------
    def add_node(self, node: Node) -> str:
        """Add ``node`` (width must match the graph); returns its id. Re-adding is a no-op."""
        if node.width != self.width:
            raise SpecError(f"node {node.id} has width {node.width} but graph is {self.width}-bit")
        nid = node.id
        if nid not in self.nodes:
            self.nodes[nid] = node
            self.fanin[nid] = []
        return nid

    def add_edge(self, src: str, dst: str, delay_ps: float = 0.0) -> None:
        """Append ``src`` to the fan-in of ``dst`` (its select value is the new index)."""
        for n in (src, dst):
            if n not in self.nodes:
                raise SpecError(f"edge {src} -> {dst}: node {n} is not in the {self.width}-bit "
                                f"graph; add the node first")
        if src in self.fanin[dst]:
            raise SpecError(f"edge {src} -> {dst} added twice")
        self.fanin[dst].append(src)
        self.delay[(src, dst)] = float(delay_ps)

    def copy(self) -> "InterconnectGraph":
        return InterconnectGraph(self.width, dict(self.tiles), dict(self.nodes),
                                 {k: list(v) for k, v in self.fanin.items()}, dict(self.delay),
                                 dict(self.params), list(self.timing_notes))

    # -- queries ----------------------------------------------------------------------
    def node(self, nid: str) -> Node:
        try:
            return self.nodes[nid]
        except KeyError:
            raise SpecError(f"node '{nid}' is not in the {self.width}-bit interconnect graph") \
                from None

    def has_edge(self, src: str, dst: str) -> bool:
        return dst in self.fanin and src in self.fanin[dst]

    def edges(self) -> Iterator[tuple[str, str]]:
        for dst, srcs in self.fanin.items():
            for src in srcs:
                yield src, dst

    def num_edges(self) -> int:
        return sum(len(v) for v in self.fanin.values())

    def fanout(self) -> dict[str, list[str]]:
        """id -> list of sink ids (derived; in canonical order of the sinks)."""
        out: dict[str, list[str]] = {n: [] for n in self.nodes}
        for dst, srcs in self.fanin.items():
            for src in srcs:
                out[src].append(dst)
        return out

    def nodes_at(self, x: int, y: int) -> list[Node]:
        return [n for n in self.nodes.values() if n.x == x and n.y == y]

    def by_tile(self) -> dict[tuple[int, int], list[Node]]:
        out: dict[tuple[int, int], list[Node]] = {xy: [] for xy in self.tiles}
        for n in self.nodes.values():
            out.setdefault((n.x, n.y), []).append(n)
        return out

    def to_networkx(self) -> nx.DiGraph:
        """A networkx view: node attrs ``kind``, ``x``, ``y``, ``width``; edge attrs ``sel``
        (index in the sink's fan-in) and ``delay`` (ps)."""
        g = nx.DiGraph()
        for nid, n in self.nodes.items():
            g.add_node(nid, kind=n.kind.value, x=n.x, y=n.y, width=n.width)
        for dst, srcs in self.fanin.items():
            for i, src in enumerate(srcs):
                g.add_edge(src, dst, sel=i, delay=self.delay[(src, dst)])
        return g

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InterconnectGraph):
            return NotImplemented
        return (self.width == other.width and self.tiles == other.tiles
                and self.nodes == other.nodes
                and self.fanin == other.fanin and self.delay == other.delay
                and self.params == other.params and self.timing_notes == other.timing_notes)

    def __repr__(self) -> str:
        return (f"InterconnectGraph(width={self.width}, tiles={len(self.tiles)}, "
                f"nodes={len(self.nodes)}, edges={self.num_edges()})")


def iter_sides() -> Iterable[Side]:
    return (Side.NORTH, Side.SOUTH, Side.EAST, Side.WEST)


@contextlib.contextmanager
def no_gc():
    """Pause Python's cyclic garbage collector while building large object graphs (magma
    circuits): its full collections rescan every live object and made generation quadratic
    in the array size. Collection resumes on exit."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
