"""Path enumeration for the measured timing model (Cascade §V-A, step 1).

For each distinct tile module (a :class:`canal.rtl.TileShape`) this lists the path classes
of :mod:`canal.timing` that the tile's Verilog contains, with their start and end points in
the generated Verilog, so that a static timing tool can measure each class on the tile's
netlist (:mod:`garnet.sta.measure`). Names follow :mod:`canal.rtl`: tile ports
``SB_T<t>_<SIDE>_SB_IN_B<w>``, one ``CanalMux`` instance ``mux_<local name>`` per SB_OUT,
RMUX and connection box, its data inputs ``I0 .. I<n-1>`` in fan-in order, and the core
instance ``core``.

Classes (every one actually wired in the tile, none else -- the enumeration is the tile's
fan-in, not a template):

* ``sb:<class>:<w>:<a>-><b>``: from the SB_IN ports of side ``a`` through the mux inputs of
  the SB_OUT muxes of side ``b`` that they feed (the Canal edges), to wherever the path ends
  in the tile (the tile's SB_OUT port through the register-bypass mux, or the pipeline
  register's D pin where that side's register is mandatory);
* ``pass:<class>:<w>:<a>-><b>``: from the SB_IN ports of side ``a`` to the tile's SB_OUT
  ports of side ``b`` whose only fan-in they are: a long track passing through the tile
  (:func:`canal.passes.segment_tracks`); the 1-input "mux" is a wire with no cell, so the
  class's ``throughs`` are those SB_OUT *ports* (the path's endpoints), not mux pins;
* ``cb:<class>``: from the SB_IN ports through the connection-box mux inputs to the exit of
  the connection-box mux (``exit``: the prefix ``mux_PORT_`` of the connection-box
  instances; the class is the worst over the tile's connection boxes);
* ``reg``: from register clock pins through the RMUX inputs fed by a pipeline register, to
  the tile's SB_OUT port (clock-to-Q plus the register mux);
* ``core_out:<class>``: from the core instance's outputs through the SB_OUT mux inputs they
  feed, to the tile's SB_OUT ports (added to the core's own delay by the measurement, since
  :mod:`canal.timing` has no separate class for it);
* ``core:<class>``: the core module itself (timed on its own, inputs to outputs).

Clock skew: the generated array has no clock tree or spine in its RTL (the clock is an ideal
net), so no skew path exists to enumerate.
"""
from __future__ import annotations

from dataclasses import dataclass

from canal.graph import IO, NodeKind
from canal.rtl import TileShape


@dataclass(frozen=True)
class PathClass:
    """One path class of one tile: ``key`` (a :mod:`canal.timing` class key, or
    ``core_out:<class>``), ``kind`` (``sb``, ``pass``, ``cb``, ``reg``, ``core_out``),
    ``starts`` (tile port names; empty: every register clock pin), ``throughs``
    (hierarchical pins ``<instance>/<pin>``, the Canal edges of the class; for ``pass``: the
    tile's SB_OUT ports, the path's endpoints), ``exit`` (an instance whose last
    point on the path is where the class ends; ``None``: the path's endpoint) and ``edges``
    (how many Canal edges the class covers in this tile)."""

    key: str
    kind: str
    starts: tuple[str, ...]
    throughs: tuple[str, ...]
    exit: str | None
    edges: int


def tile_path_classes(shape: TileShape, tclass: str) -> list[PathClass]:
    """The path classes of the tile module of ``shape`` whose tile timing class is
    ``tclass`` (module docstring), sorted by key."""
    nodes = {n.name: n for n in shape.nodes}
    acc: dict[str, tuple[str, set[str], set[str], str | None, int]] = {}

    def add(key: str, kind: str, start: str | None, through: str, exit_: str | None) -> None:
        k, starts, throughs, ex, n = acc.get(key, (kind, set(), set(), exit_, 0))
        if start is not None:
            starts.add(start)
        throughs.add(through)
        acc[key] = (k, starts, throughs, ex, n + 1)

    for name, srcs in shape.fanin:
        n = nodes[name]
        for k, src in enumerate(srcs):
            s = nodes.get(src)
            if s is None:
                continue
            pin = f"mux_{name}/I{k}"
            if n.kind is NodeKind.SB and n.io is IO.SB_OUT:
                if s.kind is NodeKind.SB and s.io is IO.SB_IN:
                    if len(srcs) == 1:      # a long track passing through: a wire
                        add(f"pass:{tclass}:{n.width}:{s.side.name[0]}->{n.side.name[0]}",
                            "pass", src, name, None)
                    else:
                        add(f"sb:{tclass}:{n.width}:{s.side.name[0]}->{n.side.name[0]}", "sb",
                            src, pin, None)
                elif s.kind is NodeKind.PORT:
                    add(f"core_out:{tclass}", "core_out", None, pin, None)
            elif n.kind is NodeKind.PORT and n.direction == "in" \
                    and s.kind is NodeKind.SB and s.io is IO.SB_IN:
                add(f"cb:{tclass}", "cb", src, pin, "mux_PORT_")
            elif n.kind is NodeKind.RMUX and s.kind is NodeKind.REG:
                add("reg", "reg", None, pin, None)
    return [PathClass(key, kind, tuple(sorted(starts)), tuple(sorted(throughs)), ex, n)
            for key, (kind, starts, throughs, ex, n) in sorted(acc.items())]


__all__ = ["PathClass", "tile_path_classes"]
