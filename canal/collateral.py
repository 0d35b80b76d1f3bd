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

Loading either dump gives a graph equal (``==``) to the dumped one.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from cgra.config import ConfigField
from cgra.core import ConfigMemory, PortSpec
from cgra.errors import CollateralError

from canal.graph import IO, InterconnectGraph, Node, NodeKind, Side, TileInfo
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


def to_json(graph: InterconnectGraph, timing: TimingModel | None = None) -> dict:
    """The JSON document of ``graph`` (see module docstring)."""
    tm = timing or TimingModel.load()
    nodes = []
    delay, fanin = graph.delay, graph.fanin
    for nid, n in graph.nodes.items():
        # enum ``_value_``/``_name_``: plain attributes (``.value``/``.name`` are slow
        # descriptors in Python 3.11; this loop runs once per node, 1.4 M at 64x32)
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
    return {"schema": SCHEMA, "width": graph.width, "params": graph.params,
            "timing_notes": list(graph.timing_notes), "layout": layout(graph),
            "tiles": [_tile_json(t, tm) for t in graph.tiles.values()], "nodes": nodes}


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
        for d in doc["nodes"]:
            kind = NodeKind(d["kind"])
            node = Node(kind, d["x"], d["y"], d["width"],
                        Side[d["side"]] if "side" in d else None, d.get("track"),
                        IO[d["io"]] if "io" in d else None, d.get("port"), d.get("direction"))
            if node.id != d["id"]:
                raise CollateralError(f"{source}: node id {d['id']} does not match its fields "
                                      f"({node.id})")
            g.add_node(node)
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
    Path(path).write_text(json.dumps(to_json(graph, timing), separators=(",", ":")))


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


def to_text(graph: InterconnectGraph) -> str:
    """The text dump of ``graph`` (see module docstring)."""
    lines = [f"GRAPH {graph.width} {json.dumps(graph.params, separators=(',', ':'))}"]
    lines += [f"NOTE {n}" for n in graph.timing_notes]
    topo, tracks = graph.params.get("topology"), graph.params.get("tracks")
    if topo and tracks:
        lines.append(f"SWITCH {graph.width} {topo} {tracks}")
        lines += [f"  {int(a)} {ta} {int(b)} {tb}" for a, ta, b, tb in
                  topology_wires(topo, tracks)]
        lines.append("END")
    per_tile = graph.by_tile()
    delay = graph.delay
    refs: dict[str, str] = {}              # node id -> node_line, each computed once

    def ref(nid: str) -> str:
        r = refs.get(nid)
        if r is None:
            r = refs[nid] = node_line(graph.nodes[nid])
        return r

    for (x, y), t in graph.tiles.items():
        lines.append(f"TILE {x} {y} {t.core or '-'} {t.tag or '-'} {t.timing_class}")
        for p in t.ports:
            ext = " external" if p.name in t.external else ""
            lines.append(f"  CORE_PORT {p.name} {p.width} {p.direction}{ext}")
        for f in t.config_fields:
            lines.append(f"  CORE_FIELD {f.name} {f.width} {f.reset}")
        cm = t.config_memory
        if cm is not None:
            lines.append(f"  CONFIG_MEMORY {'-' if cm.feature is None else cm.feature} "
                         f"{cm.words} {cm.width}")
        for n in per_tile.get((x, y), []):
            nid = n.id
            lines.append("  " + ref(nid))
            for src in graph.fanin[nid]:
                lines.append(f"    <- {ref(src)} @ {delay[(src, nid)]!r}")
        lines.append("END")
    return "\n".join(lines) + "\n"


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
    Path(path).write_text(to_text(graph))


def load_text(path: str | Path) -> InterconnectGraph:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise CollateralError(f"{path}: cannot read routing graph ({exc})") from None
    return from_text(text, str(path))
