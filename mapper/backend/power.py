"""Power domains of a placed and routed design: which tiles are on, which can be gated.

Every tile of the array is one power domain (AHA paper §4.3, Fig. 10: tile-level power
gating, 512 domains on the chip), switched by its ``pg`` feature (:mod:`canal.config`,
field ``gate``: reset 0 = on, 1 = gated; what a gated tile does is in :mod:`canal.rtl`).

A tile is **used** when it holds a placed instance (PE, MEM, IO or a netlist register) or a
node of a routed net: a switch box, register or connection box that a net only passes
through keeps its tile on, as the tile's muxes must carry the net (AHA §5.5 step 5: "find
unused tiles and emit power-gating configuration to disable them"). Every other tile is
**unused** and can be gated; with ``power_gate`` on, :func:`mapper.backend.bitstream.generate`
writes its ``gate`` field (:func:`gate_words`).

The boundary between an on and a gated tile needs no isolation cell: a gated tile's
outputs are clamped to 0 (:mod:`canal.rtl`), so the switch- and connection-box muxes of an on
neighbour see 0 on those inputs, and the router never selects them (an unused tile drives no
routed net).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from canal.graph import parse_id
from cgra.config import config_address
from cgra.errors import ConfigError

if TYPE_CHECKING:
    from mapper.backend.place import Placement
    from mapper.backend.route import RoutingResult
    from mapper.collateral import Collateral


def used_tiles(placement: Placement, routing: RoutingResult) -> set[tuple[int, int]]:
    """Tiles holding a placed instance (``placement.sites``) or a node of a routed net
    (every node of every path of ``routing``; register sites included)."""
    used = {tuple(xy) for xy in placement.sites.values()}
    seen: set[str] = set()
    for net in routing.nets.values():
        for path in net.paths.values():
            for nid in path:
                if nid not in seen:
                    seen.add(nid)
                    used.add(parse_id(nid).xy)
    for nid in routing.reg_sites.values():
        used.add(parse_id(nid).xy)
    return used


def power_domains(coll: Collateral) -> list[tuple[int, int]]:
    """Every tile of the array (one power domain each), sorted by (x, y)."""
    return sorted(coll.tiles)


def gated_tiles(coll: Collateral, placement: Placement, routing: RoutingResult
                ) -> list[tuple[int, int]]:
    """The unused tiles (module docstring), sorted by (x, y)."""
    used = used_tiles(placement, routing)
    return [xy for xy in power_domains(coll) if xy not in used]


def gate_words(coll: Collateral, tiles: Iterable[tuple[int, int]]
               ) -> list[tuple[int, int, str, int]]:
    """``[(addr, data, field name, value)]``, sorted by address: the power-gate word of each
    tile of ``tiles`` with its ``gate`` field = 1 (register 0 of the ``pg`` feature; the
    field's location from the config map, :attr:`garnet.collateral.ConfigMap.power_gates`).
    Raises :class:`ConfigError` naming the tile when the config map has no power-gate field
    for it (a design generated before power domains: regenerate it with ``cgra rtl``)."""
    out = []
    gates = coll.config_map.power_gates
    for xy in tiles:
        loc = gates.get(tuple(xy))
        if loc is None:
            raise ConfigError(f"power gating: tile {tuple(xy)} of design {coll.name} has no "
                              f"power-gate field in the config map; regenerate the design "
                              f"with `cgra rtl` (or run without --power-gate)")
        out.append((config_address(loc.reg, loc.feature, xy[0], xy[1]), 1 << loc.lo,
                    loc.name, 1))
    return sorted(out)


def gated_by_bitstream(coll: Collateral, pairs: Iterable[tuple[int, int]]
                       ) -> set[tuple[int, int]]:
    """The tiles a bitstream (``[(addr, data)]``) gates: those whose power-gate word it
    writes with the ``gate`` bit set (the last write of an address wins)."""
    addr_of = {config_address(loc.reg, loc.feature, x, y): ((x, y), loc)
               for (x, y), loc in coll.config_map.power_gates.items()}
    last: dict[int, int] = {}
    for a, d in pairs:
        if a in addr_of:
            last[a] = d
    return {addr_of[a][0] for a, d in last.items() if d >> addr_of[a][1].lo & 1}


def power_summary(coll: Collateral, placement: Placement, routing: RoutingResult,
                  gated: bool | Iterable[tuple[int, int]]) -> dict[str, Any]:
    """The ``power`` section of ``pnr_report.json`` and ``run_report.json``: ``domains``
    (tiles of the array, one power domain each), ``tiles_used`` / ``tiles_unused`` (module
    docstring), ``tiles_on`` and ``tiles_gated`` in the bitstream's power state, ``gated``
    (``True``: every unused tile gated, ``--power-gate``; or the gated tiles themselves, e.g.
    :func:`gated_by_bitstream`), ``power_gate`` (some tile is gated), ``gated_used``: used
    tiles that are gated (always 0 for a bitstream of the flow; a run with one fails),
    ``unused``: the unused tiles as [x, y] (sorted)."""
    domains = power_domains(coll)
    unused = gated_tiles(coll, placement, routing)
    if isinstance(gated, bool):
        off = set(unused) if gated else set()
    else:
        off = {tuple(xy) for xy in gated}
    return {"domains": len(domains), "tiles_used": len(domains) - len(unused),
            "tiles_unused": len(unused), "tiles_on": len(domains) - len(off),
            "tiles_gated": len(off), "power_gate": bool(off),
            "gated_used": len(off - set(unused)),
            "unused": [list(xy) for xy in unused]}


__all__ = ["gate_words", "gated_by_bitstream", "gated_tiles", "power_domains", "power_summary", "used_tiles"]
