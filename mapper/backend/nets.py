"""The nets both routers take (:mod:`mapper.backend.route`'s PathFinder and :mod:`mapper.backend.exact_route`'s
exact router): :data:`Terminal` and :class:`RouteNet`. A module of its own so that the
PathFinder can call the exact router (to explain a routing that does not converge) while the
exact router reads the same nets.
"""
from __future__ import annotations

from dataclasses import dataclass, field

Terminal = tuple[str, str]
"""``(instance name, netlist port name)``."""


@dataclass
class RouteNet:
    """A net to route on one graph: ``source`` node id (a PORT out or a REG), and its sinks:
    ``(terminal, candidate node ids)`` (one candidate for a core port, the tile's REG nodes for
    a register). ``reg_source``: the register instance driving the net (its REG node, chosen
    when the feeding net is routed, becomes ``source``), ``None`` otherwise; ``reg_sinks``:
    sink terminal -> register instance for register sinks."""

    name: str
    source: str
    sinks: list[tuple[Terminal, list[str]]]
    reg_source: str | None = None
    reg_sinks: dict[Terminal, str] = field(default_factory=dict)
    #: sink -> exact number of pipeline registers (REG nodes strictly inside) its path must
    #: hold (latency-constrained routing; absent = any)
    regs: dict[Terminal, int] = field(default_factory=dict)
    #: sink -> a previous path (node ids) to keep when the net is first routed (it must
    #: start at ``source``; the tree grows from the kept paths)
    keep: dict[Terminal, list[str]] = field(default_factory=dict)


@dataclass
class DynamicRoute:
    """A net carried by the dynamic layer of a hybrid array (:mod:`canal.dynamic`) instead of
    the static tracks: flow ``id`` (its packet id and routing-table index), ``source`` = (x,
    y, core output port), ``sinks``: terminal -> (x, y, core input port), ``tokens``:
    terminal -> initial tokens of its ejection buffer (the pipeline registers a static route
    would hold; set by branch-delay matching, sinks of one tile share one count)."""

    name: str
    id: int
    source: tuple[int, int, str]
    sinks: dict[Terminal, tuple[int, int, str]]
    tokens: dict[Terminal, int] = field(default_factory=dict)


__all__ = ["DynamicRoute", "RouteNet", "Terminal"]
