"""Hand routing helpers (for tests and bring-up; the mapper has its own router).

:func:`walk_path` builds the node path of a route given as a list of switch-box hops, and
:func:`shortest_path` finds a minimum-hop path with networkx. Both return lists of node ids
ready for :meth:`canal.interconnect.Interconnect.route_bitstream`.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import networkx as nx

from cgra.errors import RoutingError

from canal.graph import IO, InterconnectGraph, NodeKind, Side, reg_id, rmux_id


def walk_path(graph: InterconnectGraph, source: str, moves: Sequence[Side], sink: str,
              registers: Iterable[int] = (), track: int | None = None) -> list[str]:
    """Path from ``source`` (a core output PORT, or an SB_IN) leaving each successive tile by
    ``moves[i]`` and ending at ``sink`` (a core input PORT reached through the connection box
    of the last tile). ``registers``: hop indices (0-based, into ``moves``) whose pipeline
    register is used (REG -> RMUX); other hops take the RMUX bypass. ``track`` picks the
    first hop's track (default: the lowest available). Raises :class:`RoutingError` when a
    hop is impossible in ``graph``."""
    fanout = graph.fanout()
    regs = set(registers)
    path = [source]
    cur = source
    for i, side in enumerate(moves):
        outs = [n for n in fanout[cur] if graph.nodes[n].kind is NodeKind.SB
                and graph.nodes[n].io is IO.SB_OUT and graph.nodes[n].side is side]
        if i == 0 and track is not None:
            outs = [n for n in outs if graph.nodes[n].track == track]
        if not outs:
            raise RoutingError(f"walk_path: from {cur} there is no SB_OUT on side {side.name}"
                               f"{'' if track is None or i else f' track {track}'}")
        out = sorted(outs, key=lambda n: graph.nodes[n].track)[0]
        path.append(out)
        o = graph.nodes[out]
        rm = rmux_id(graph.width, o.x, o.y, o.side, o.track)
        last = out
        if rm in graph.nodes:
            if i in regs:
                path.append(reg_id(graph.width, o.x, o.y, o.side, o.track))
            path.append(rm)
            last = rm
        elif i in regs:
            raise RoutingError(f"walk_path: hop {i} ({out}) has no pipeline register")
        ins = [n for n in fanout[last] if graph.nodes[n].kind is NodeKind.SB
               and graph.nodes[n].io is IO.SB_IN]
        if not ins:
            raise RoutingError(f"walk_path: {last} leaves the array (no neighbour on side "
                               f"{side.name})")
        path.append(ins[0])
        cur = ins[0]
    if sink not in fanout[cur]:
        raise RoutingError(f"walk_path: {sink} is not reachable from {cur} (no such "
                           f"connection-box input)")
    path.append(sink)
    return path


def shortest_path(graph: InterconnectGraph, source: str, sink: str,
                  avoid: Iterable[str] = ()) -> list[str]:
    """A minimum-hop path ``source`` -> ``sink`` avoiding the nodes in ``avoid`` and every
    pipeline register (bypass only). Raises :class:`RoutingError` when none exists."""
    g = graph.to_networkx()
    blocked = set(avoid) | {n for n, d in g.nodes(data=True) if d["kind"] == "REG"}
    blocked -= {source, sink}
    view = nx.subgraph_view(g, filter_node=lambda n: n not in blocked)
    try:
        return nx.shortest_path(view, source, sink)
    except (nx.NetworkXNoPath, nx.NodeNotFound):
        raise RoutingError(f"no path from {source} to {sink} in the {graph.width}-bit graph "
                           f"avoiding {len(blocked)} nodes") from None


__all__ = ["walk_path", "shortest_path", "Side"]
