"""Quiet unused muxes: at bitstream time, point every switch-box, register and connection-box
mux that no routed net uses, in a tile that is on, at a source that does not switch.

AHA paper §5.5 (the power-aware bitstream, after power gating): "re-route unused switch
boxes to forward a non-switching net". Without it an unused mux keeps select 0, its reset
value, and forwards whatever passes by on its fan-in 0 -- often a routed net, whose toggles
then drive wires and downstream muxes that nobody reads (dynamic power).

**Rule** (:func:`quiet_selects`). A node is *used* when it lies on a path of a routed net
(:class:`mapper.backend.route.RoutingResult`); a tile is *on* unless the bitstream gates it
(``gated``: the unused tiles with ``--power-gate``, else none). A node is **quiet** (drives a
constant) when it is not used and

* it is in a gated tile (as seen from an on tile: a gated tile's outputs are clamped to 0,
  :mod:`canal.rtl`), or it has no fan-in and is not a core output (it drives 0);
* it is a mux whose select is out of range (``select >= fan-in``: the mux drives 0,
  :func:`canal.rtl.mux_circuit`, :mod:`canal.smt`) -- a connection box of 20 inputs has a
  5-bit select and 12 such values; a mux with a power-of-two fan-in has none;
* it has one fan-in (a switch-box input, a pipeline ``REG``) and that fan-in is quiet;
* it is a mux whose chosen select is a quiet fan-in.

Core outputs of on tiles are never quiet (a core in its reset configuration may still
compute on its inputs), and a used node never is. The quiet set is a least fixed point over
the routing graphs, computed by a breadth-first worklist from the constant sources (nodes of
gated tiles, sourceless nodes, then every unused mux with an out-of-range select, which is
given the first out-of-range value ``fan-in``): when a node becomes quiet, each unused mux of
an on tile it feeds is quieted with select 0 if its fan-in 0 is already quiet (its reset
value: no config word changes), else with the index of that node; a one-fan-in node it
feeds becomes quiet. An unused mux of an on tile that never becomes quiet (each fan-in a
routed net, a core output or a node that switches) is **unquietable** and keeps select 0.

**No combinational cycle.** Every quieted mux selects a node that was quiet before it, so
following the chosen selects from a quieted mux strictly descends in insertion order and
ends at a constant source (a clamped output, a sourceless node or an out-of-range select);
a register on the way has a quiet input. :func:`select_loop` checks this on the configured
selects (a walk over the selected drivers, linear), and :func:`quiet_selects` raises
:class:`~cgra.errors.InternalError` if a loop were ever found.

**Routed nets are untouched**: only unused muxes get a select, a quiet node is never used,
so the SMT proof of the bitstream (:mod:`mapper.backend.verify`) proves the same routed
trees, and the run stays bit-exact.

**Measure** (a structural proxy; the energy estimate :mod:`mapper.sim.energy` sees only the
toggles on the array's top ports): :func:`origins` follows each unused mux of an on tile
through the selected drivers to what it carries -- a routed net (``routed``), a core output
no net routes (``core``), a constant (``constant``) or a loop of unused nodes (``loop``);
``forwarding_before`` / ``forwarding_after`` in the report are the unused muxes carrying a
routed net with every unused mux at select 0 and with the quiet selects.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from canal.config import select_width
from canal.graph import InterconnectGraph, NodeKind, parse_id
from cgra.config import config_address
from cgra.errors import InternalError

if TYPE_CHECKING:
    from mapper.backend.route import RoutingResult
    from mapper.collateral import Collateral

#: what an unused mux carries (:func:`origins`)
ROUTED, CORE, CONSTANT, LOOP = "routed", "core", "constant", "loop"


@dataclass
class QuietResult:
    """The quiet configuration of the unused muxes (module docstring).

    ``selects``: unused mux node id -> the select it is given (every quieted mux, select 0
    included); ``constant``: how many of them drive 0 through an out-of-range select;
    ``unquietable``: the unused muxes of on tiles with no quiet input (left at select 0),
    sorted; ``before`` / ``after``: per class of :func:`origins` (``routed``, ``core``,
    ``constant``, ``loop``) the number of unused muxes of on tiles carrying it with every
    unused mux at select 0 / with ``selects``."""

    selects: dict[str, int] = field(default_factory=dict)
    constant: int = 0
    unquietable: list[str] = field(default_factory=list)
    before: dict[str, int] = field(default_factory=dict)
    after: dict[str, int] = field(default_factory=dict)

    @property
    def changed(self) -> dict[str, int]:
        """The quieted muxes whose select is not 0 (the bitstream writes only these)."""
        return {n: s for n, s in self.selects.items() if s}

    def summary(self) -> dict[str, Any]:
        """The ``quiet_unused`` section of ``pnr_report.json``: ``unused_muxes`` (unused muxes
        of on tiles), ``quieted``, ``select_changed`` (of those, select != 0), ``constant``
        (out-of-range select), ``unquietable``, ``forwarding_before`` / ``forwarding_after``
        (unused muxes carrying a routed net at select 0 / quieted), ``carries_before`` /
        ``carries_after`` (every class of :func:`origins`)."""
        return {"unused_muxes": len(self.selects) + len(self.unquietable),
                "quieted": len(self.selects), "select_changed": len(self.changed),
                "constant": self.constant, "unquietable": len(self.unquietable),
                "forwarding_before": self.before.get(ROUTED, 0),
                "forwarding_after": self.after.get(ROUTED, 0),
                "carries_before": dict(sorted(self.before.items())),
                "carries_after": dict(sorted(self.after.items()))}


def used_nodes(routing: RoutingResult) -> set[str]:
    """Every node of every path of every routed net of ``routing`` (register sites
    included)."""
    used = {nid for net in routing.nets.values() for p in net.paths.values() for nid in p}
    used.update(routing.reg_sites.values())
    return used


def _graphs(coll: Collateral) -> dict[int, InterconnectGraph]:
    return {w: rg.ig for w, rg in coll.graphs.items()}


def _tile(g: InterconnectGraph, nid: str) -> tuple[int, int]:
    n = g.nodes[nid]
    return n.x, n.y


def _is_source(g: InterconnectGraph, nid: str) -> bool:
    n = g.nodes[nid]
    return n.kind is NodeKind.PORT and n.direction == "out"


def _candidate(g: InterconnectGraph, nid: str, used: set[str], fields: Mapping[str, Any],
               off: set[tuple[int, int]]) -> bool:
    """``nid`` is an unused mux with a select field in an on tile."""
    return (len(g.fanin[nid]) > 1 and nid not in used and nid in fields
            and _tile(g, nid) not in off)


def quiet_selects(coll: Collateral, routing: RoutingResult,
                  gated: Iterable[tuple[int, int]] = ()) -> QuietResult:
    """The quiet selects of the unused muxes of ``coll``'s graphs under ``routing``, with the
    tiles ``gated`` off (module docstring: rule, order, no loop). Only muxes with a select
    field in the config map are configured (every mux of a generated design has one).
    Linear in the graphs' nodes and edges. Raises :class:`~cgra.errors.InternalError` if the
    chosen selects formed a loop (a bug)."""
    graphs = _graphs(coll)
    used = used_nodes(routing)
    off = {tuple(xy) for xy in gated}
    fields = coll.config_map.nodes
    res = QuietResult()
    for w in sorted(graphs, reverse=True):
        g = graphs[w]
        fanin = g.fanin
        fanout = g.fanout()
        quiet: set[str] = set()
        queue: deque[str] = deque()
        for nid, fi in fanin.items():
            if nid in used:
                continue
            if _tile(g, nid) in off or (not fi and not _is_source(g, nid)):
                quiet.add(nid)
                queue.append(nid)
            elif _candidate(g, nid, used, fields, off) and len(fi) < 1 << select_width(len(fi)):
                quiet.add(nid)
                queue.append(nid)
                res.selects[nid] = len(fi)          # out of range: the mux drives 0
                res.constant += 1
        while queue:
            q = queue.popleft()
            for s in fanout[q]:
                if s in quiet or s in used or _tile(g, s) in off:
                    continue
                fi = fanin[s]
                if len(fi) == 1:
                    quiet.add(s)
                    queue.append(s)
                elif _candidate(g, s, used, fields, off):
                    quiet.add(s)
                    queue.append(s)
                    res.selects[s] = 0 if fi[0] in quiet else fi.index(q)
        res.unquietable += sorted(nid for nid in fanin
                                  if nid not in quiet and _candidate(g, nid, used, fields, off))
    loop = select_loop(coll, res.selects, res.selects, used, off)
    if loop:
        raise InternalError(f"quiet selects: the unused muxes {' -> '.join(loop)} select each "
                            f"other in a loop (a compiler bug in mapper.backend.quiet)")
    res.before = origins(coll, routing, off, {})
    res.after = origins(coll, routing, off, res.selects)
    return res


def _driver(g: InterconnectGraph, nid: str, selects: Mapping[str, int]) -> str | None:
    """The node ``nid`` forwards under ``selects`` (a missing mux select = 0), ``None`` for
    a constant (no fan-in or an out-of-range select)."""
    fi = g.fanin[nid]
    if not fi:
        return None
    sel = selects.get(nid, 0) if len(fi) > 1 else 0
    return fi[sel] if sel < len(fi) else None


def select_loop(coll: Collateral, selects: Mapping[str, int], start: Iterable[str],
                used: set[str] | frozenset[str] = frozenset(),
                gated: Iterable[tuple[int, int]] = ()) -> list[str] | None:
    """A loop of the selected drivers through a node of ``start`` (node ids, the driven node
    first, each fed by the next, the last by the first), or ``None``. A mux forwards its
    fan-in ``selects.get(node, 0)`` (out of range: constant), a one-fan-in node its fan-in;
    a walk ends at a constant, a core output, a node of ``used`` (a routed tree, acyclic
    by the routing checks) or a node of a ``gated`` tile (its outputs are clamped to 0).
    Linear in the nodes walked (each is finished once)."""
    graphs = _graphs(coll)
    off = {tuple(xy) for xy in gated}
    done: set[str] = set()
    for s in start:
        g = graphs.get(parse_id(s).width)
        if g is None or s in done:
            continue
        walk: list[str] = []
        on_walk: dict[str, int] = {}
        n: str | None = s
        while n is not None and n not in done and n not in used and _tile(g, n) not in off:
            if n in on_walk:
                return walk[on_walk[n]:]
            on_walk[n] = len(walk)
            walk.append(n)
            n = _driver(g, n, selects)
        done.update(walk)
    return None


def origins(coll: Collateral, routing: RoutingResult, gated: Iterable[tuple[int, int]],
            selects: Mapping[str, int]) -> dict[str, int]:
    """What the unused muxes of the on tiles carry with the unused muxes at ``selects``
    (missing: select 0): class -> count, over ``routed`` (a routed net: the walk through the
    selected drivers reaches a used node), ``core`` (a core output no net routes),
    ``constant`` (a gated tile's clamped output, a sourceless node or an out-of-range
    select) and ``loop`` (the walk runs into a loop of unused nodes: the loop's muxes and
    those whose chain ends in it). Linear (memoised walks)."""
    graphs = _graphs(coll)
    used = used_nodes(routing)
    off = {tuple(xy) for xy in gated}
    counts = {ROUTED: 0, CORE: 0, CONSTANT: 0, LOOP: 0}
    for g in graphs.values():
        memo: dict[str, str] = {}
        for nid, fi in g.fanin.items():
            if len(fi) < 2 or nid in used or _tile(g, nid) in off:
                continue
            walk: list[str] = []
            on_walk: set[str] = set()
            n: str | None = nid
            while True:
                if n is None:
                    what = CONSTANT
                elif n in memo:
                    what = memo[n]
                elif n in used:
                    what = ROUTED
                elif _tile(g, n) in off:
                    what = CONSTANT
                elif not g.fanin[n]:
                    what = CORE if _is_source(g, n) else CONSTANT
                elif n in on_walk:
                    what = LOOP
                else:
                    on_walk.add(n)
                    walk.append(n)
                    n = _driver(g, n, selects)
                    continue
                break
            for v in walk:
                memo[v] = what
            counts[what] += 1
    return counts


def quiet_words(coll: Collateral, selects: Mapping[str, int]
                ) -> list[tuple[int, int, str, int]]:
    """``[(addr, part, field name, field value)]``: for every mux of ``selects`` with a
    select other than 0 (0 is the reset value), each piece of its select field from the
    config map (:attr:`garnet.collateral.ConfigMap.nodes`), ``part`` shifted to its bits of
    the 32-bit word at ``addr`` (fields sharing a word are OR-merged by the caller). Sorted by
    address, then field."""
    out = []
    for nid, sel in selects.items():
        if not sel:
            continue
        x, y, locs = coll.config_map.nodes[nid]
        for loc in locs:
            part = (sel >> loc.field_lo) & ((1 << loc.width) - 1)
            addr = config_address(loc.reg, loc.feature, x, y)
            out.append((addr, part << loc.lo, loc.name, part))
    return sorted(out)


__all__ = ["CONSTANT", "CORE", "LOOP", "QuietResult", "ROUTED", "origins", "quiet_selects",
           "quiet_words", "select_loop", "used_nodes"]
