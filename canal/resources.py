"""The resource vector of the interconnect: what one tile's switch box offers, per width.

``interconnect_resources(graphs, data_width) -> dict`` (schema ``"canal.resources/1"``),
computed from the interconnect graphs (one :class:`canal.graph.InterconnectGraph` per bit
width, the same graphs the routing collateral is written from), so an edited track count,
topology or custom interconnect changes it with no hand edit::

    {"schema": "canal.resources/1",
     "classes": {"word": {"width": 16, "topology": "imran", "track_length": 1,
                          "tracks": {"NORTH": 5, "SOUTH": 5, "EAST": 5, "WEST": 5},
                          "registers": {"NORTH": 5, "SOUTH": 5, "EAST": 5, "WEST": 5}},
                 "bit":  {"width": 1, ...}}}

**Width classes** are named after the data width as in :mod:`peak.resources`: ``word`` is
the ``data_width``-bit graph, ``bit`` the 1-bit graph, any other width ``w`` ``"<w>b"``.
Per side, ``tracks`` is the most tracks leaving one tile by that side (distinct tracks of
its switch-box outputs, ``SB_OUT``) and ``registers`` the most pipeline-register sites
(``REG`` nodes) on that side of one tile, over all tiles of the array (an irregular custom
interconnect may offer fewer on some tiles); ``topology`` and ``track_length`` (tiles a
track spans) are the builder parameters recorded in the graph (``None`` when not recorded).
The one reader is :func:`read_interconnect_resources` (width class -> :class:`TrackClass`).
Pure (no hardware imports); :func:`interconnect_resources` has no errors of its own, the
reader raises :class:`~cgra.errors.CollateralError`.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from cgra.resources import check_schema, width_class
from cgra.errors import CollateralError
from canal.graph import IO, InterconnectGraph, NodeKind, iter_sides

SCHEMA = "canal.resources/1"


def _per_side(graph: InterconnectGraph) -> tuple[dict[str, int], dict[str, int]]:
    """(tracks, registers) per side name: the most of one tile (module docstring)."""
    tracks: dict[tuple[int, int, str], set[int]] = {}
    regs: dict[tuple[int, int, str], int] = {}
    for n in graph.nodes.values():
        if n.kind is NodeKind.SB and n.io is IO.SB_OUT:
            tracks.setdefault((n.x, n.y, n.side.name), set()).add(n.track)
        elif n.kind is NodeKind.REG:
            key = (n.x, n.y, n.side.name)
            regs[key] = regs.get(key, 0) + 1
    t_out = {s.name: 0 for s in iter_sides()}
    r_out = {s.name: 0 for s in iter_sides()}
    for (_, _, side), ts in tracks.items():
        t_out[side] = max(t_out[side], len(ts))
    for (_, _, side), k in regs.items():
        r_out[side] = max(r_out[side], k)
    return t_out, r_out


def interconnect_resources(graphs: Mapping[int, InterconnectGraph] | Iterable[InterconnectGraph],
                           data_width: int) -> dict[str, Any]:
    """The resource vector of the interconnect ``graphs`` (width in bits -> graph, or the
    graphs themselves) of an array whose data word is ``data_width`` bits (module
    docstring). Classes widest first. Deterministic."""
    gs = list(graphs.values()) if isinstance(graphs, Mapping) else list(graphs)
    classes: dict[str, Any] = {}
    for g in sorted(gs, key=lambda g: -g.width):
        tracks, regs = _per_side(g)
        classes[width_class(g.width, data_width)] = {
            "width": g.width, "topology": g.params.get("topology"),
            "track_length": g.params.get("track_length"),
            "tracks": tracks, "registers": regs}
    return {"schema": SCHEMA, "classes": classes}


def _sides(doc: Any, key: str) -> Mapping[str, int]:
    value = doc[key]
    if not isinstance(value, dict):
        raise TypeError(f"'{key}' is not an object")
    return MappingProxyType({str(k): int(v) for k, v in value.items()})


@dataclass(frozen=True)
class TrackClass:
    """The tracks of one width class (module docstring): ``width`` in bits, per side name
    the most ``tracks`` and pipeline ``registers`` of one tile, ``track_length`` in tiles."""

    width: int
    topology: str | None
    track_length: int | None
    tracks: Mapping[str, int]
    registers: Mapping[str, int]


def read_interconnect_resources(doc: Any, where: str = "interconnect resources"
                                ) -> Mapping[str, TrackClass]:
    """Width class -> :class:`TrackClass` of a ``canal.resources/1`` document. Raises
    :class:`CollateralError` naming ``where`` and the missing or malformed key."""
    check_schema(doc, SCHEMA, where)
    try:
        return MappingProxyType({
            str(name): TrackClass(
                int(c["width"]), None if c.get("topology") is None else str(c["topology"]),
                None if c.get("track_length") is None else int(c["track_length"]),
                _sides(c, "tracks"), _sides(c, "registers"))
            for name, c in doc["classes"].items()})
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CollateralError(f"{where}: malformed interconnect resources ({exc!r}); "
                              f"regenerate the design with `cgra rtl`") from None
