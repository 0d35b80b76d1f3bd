"""The router's view of a routing graph: :class:`RoutingGraph`, owned here beside the one
reader of the routing-graph file format (:mod:`canal.collateral`, schema
``canal.routing_graph/1``) and read once per design by ``mapper.collateral.load_collateral``.

:class:`RoutingGraph` wraps one
:class:`canal.graph.InterconnectGraph` as read by :mod:`canal.collateral` (the one reader of
the routing-graph file format, schema ``canal.routing_graph/1``) and adds what the router
needs: integer-indexed node arrays (``ids``, ``index``, ``succ``, ``xy``, ``kind``), the
pipeline-register sites per tile and the mandatory registers. Tiles are canal's
:class:`~canal.graph.TileInfo` records (PnR tag, core, ports, config fields).
"""
from __future__ import annotations

import functools
from dataclasses import FrozenInstanceError
from pathlib import Path
from typing import Iterable

import numpy as np

from canal.collateral import layout as canal_layout
from canal.collateral import load_json as load_interconnect_graph
from canal.graph import IO, InterconnectGraph, TileInfo, port_id
from cgra.errors import CollateralError, RoutingError


class RoutingGraph:
    """One bit width of the routing graph (see the module docstring).

    Attributes: ``ig`` (the :class:`~canal.graph.InterconnectGraph`), ``width`` (bits),
    ``tiles`` ((x, y) -> :class:`~canal.graph.TileInfo`), ``layout`` (one tag string per row),
    ``params`` (builder parameters), ``source`` (file name). Integer view for the router:
    ``ids`` (index -> node id), ``index`` (node id -> index), ``succ`` (index -> successor
    indices), ``xy``, ``kind`` (``SB``/``PORT``/``REG``/``RMUX``).

    Frozen once built: assigning or deleting an attribute raises
    :class:`dataclasses.FrozenInstanceError` (the collateral is read once and shared).
    """

    def __init__(self, ig: InterconnectGraph, source: str = "<graph>"):
        self.ig = ig
        self.source = source
        self.width = ig.width
        self.params = ig.params
        self.tiles: dict[tuple[int, int], TileInfo] = ig.tiles
        self.timing_notes = list(ig.timing_notes)
        self.layout = canal_layout(ig) if ig.tiles else []
        self.ids: list[str] = list(ig.nodes)
        self.index: dict[str, int] = {n: i for i, n in enumerate(self.ids)}
        self.succ: list[list[int]] = [[] for _ in self.ids]
        for dst, srcs in ig.fanin.items():
            j = self.index[dst]
            for src in srcs:
                self.succ[self.index[src]].append(j)
        nodes = ig.nodes
        self.xy: list[tuple[int, int]] = [(nodes[n].x, nodes[n].y) for n in self.ids]
        self.kind: list[str] = [nodes[n].kind.value for n in self.ids]
        self.regs_by_tile: dict[tuple[int, int], list[str]] = {}
        for i, n in enumerate(self.ids):
            # a register site must lead somewhere: REG -> RMUX -> at least one node (the
            # RMUXes of SB_OUTs on the array edge drive nothing)
            if self.kind[i] == "REG" and any(self.succ[j] for j in self.succ[i]):
                self.regs_by_tile.setdefault(self.xy[i], []).append(n)
        #: REG nodes whose register mux has no bypass (fan-in = [REG] only, garnet's
        #: mandatory registers): a route leaving by that SB_OUT must pass the register
        self.mandatory_regs: set[int] = {
            i for i, n in enumerate(self.ids) if self.kind[i] == "REG"
            and all(len(ig.fanin[self.ids[j]]) == 1 for j in self.succ[i])}
        self._frozen = True

    @functools.cached_property
    def reg_bounds(self) -> tuple[list[int], int, int]:
        """Bounds of the exact-register-count route search (:mod:`mapper.backend.route`,
        ``PathFinder._search_states``), computed on first use: ``(reg_lead, reg_gap,
        reg_tail)``. ``reg_lead[i]``: the fewest nodes a path from node index ``i`` enters up
        to and including a ``REG``; ``reg_gap``: the fewest from one ``REG`` to the next;
        ``reg_tail``: the fewest from a ``REG`` to a ``PORT`` or another ``REG`` (a sink).
        Unreachable is ``len(ids) + 1``. On Canal's switch box (SB_OUT -> REG -> RMUX -> SB_IN
        -> SB_OUT) an SB_OUT has lead 1, an SB_IN 2; gap 4, tail 3."""
        from scipy.sparse import csr_array  # deferred: loads scipy only when a search needs it
        from scipy.sparse.csgraph import dijkstra  # deferred, as above

        n, far = len(self.ids), len(self.ids) + 1
        src = np.repeat(np.arange(n), [len(s) for s in self.succ])
        dst = np.fromiter((j for s in self.succ for j in s), dtype=np.int64, count=len(src))
        # edges reversed: distances *to* the nearest node of the kinds, from all at once
        back = csr_array((np.ones(len(src)), (dst, src)), shape=(n, n))

        def hops_to(kinds: tuple[str, ...]) -> list[int]:
            d = dijkstra(back, unweighted=True, min_only=True,
                         indices=[i for i, k in enumerate(self.kind) if k in kinds])
            return np.where(np.isinf(d), far, d).astype(np.int64).tolist()

        d_reg, d_end = hops_to(("REG",)), hops_to(("REG", "PORT"))
        lead = [min(far, min((1 + d_reg[j] for j in s), default=far)) for s in self.succ]
        regs = [i for i, k in enumerate(self.kind) if k == "REG"]
        gap = min((lead[i] for i in regs), default=far)
        tail = min(far, min((1 + d_end[j] for i in regs for j in self.succ[i]), default=far))
        return lead, gap, tail

    def __setattr__(self, name: str, value) -> None:
        if getattr(self, "_frozen", False):
            raise FrozenInstanceError(f"cannot assign to field '{name}' of a RoutingGraph")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field '{name}' of a RoutingGraph")

    @classmethod
    def load(cls, path: str | Path) -> RoutingGraph:
        """Read a routing-graph JSON file through :func:`canal.collateral.load_json`; raises
        :class:`CollateralError` when it is unreadable or malformed."""
        return cls(load_interconnect_graph(path), str(path))

    @property
    def size(self) -> tuple[int, int]:
        """(columns, rows) of the array."""
        return (max(x for x, _ in self.tiles) + 1, max(y for _, y in self.tiles) + 1)

    def port_node(self, x: int, y: int, port: str) -> str:
        """Node id of core port ``port`` of tile (x, y); :class:`RoutingError` if absent."""
        nid = port_id(self.width, x, y, port)
        if nid not in self.index:
            raise RoutingError(f"tile ({x}, {y}) has no routable {self.width}-bit port '{port}' "
                               f"in {self.source}; ports: "
                               f"{[p.name for p in self.tiles[(x, y)].routable(self.width)]}")
        return nid

    def delay(self, src: str, dst: str) -> float:
        """Delay of edge src -> dst in ps."""
        return self.ig.delay[(src, dst)]

    def has_edge(self, src: str, dst: str) -> bool:
        return self.ig.has_edge(src, dst)

    def is_sb_in(self, nid: str) -> bool:
        """True for a switch-box input node (one tile-to-tile track segment)."""
        return self.ig.nodes[nid].io is IO.SB_IN and self.kind[self.index[nid]] == "SB"


def as_graphs(graphs: Iterable[InterconnectGraph | RoutingGraph]) -> dict[int, RoutingGraph]:
    """Width -> :class:`RoutingGraph` (widest first) from canal graphs or routing graphs.
    Raises :class:`CollateralError` when two have the same width or different tile sets."""
    out: dict[int, RoutingGraph] = {}
    for g in graphs:
        rg = g if isinstance(g, RoutingGraph) else RoutingGraph(g)
        if rg.width in out:
            raise CollateralError(f"{rg.source}: a second {rg.width}-bit routing graph (first: "
                                  f"{out[rg.width].source}); give one graph per bit width")
        out[rg.width] = rg
    if not out:
        raise CollateralError("no routing graph given; pass the routing graphs of the "
                              "design's collateral")
    first = next(iter(out.values()))
    for rg in out.values():
        if set(rg.tiles) != set(first.tiles):
            raise CollateralError(f"{rg.source} and {first.source} describe different tile sets")
    return {w: out[w] for w in sorted(out, reverse=True)}


__all__ = ["RoutingGraph", "as_graphs"]
