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

A **ready-valid** tile (``RvTile_…`` of :mod:`canal.rv_rtl`) has the same instance names
(``mux_<local name>`` is an :func:`~canal.flow_control.rv_mux`); for each width of
``rv_widths`` the classes above also follow the valid bit beside the data (the start points
add the SB_IN ``_valid`` ports, the throughs the muxes' ``valid_in<k>`` pins: a class is the
worse of data and valid), the ``reg`` class starts at the FIFO site's own registers (its
start points are the FIFO instances ``fifo_<REG>``) and passes its output (``fifo_<REG>/O``
and ``/valid_out``: clock-to-Q plus the FIFO's output mux), and
two classes time the ready wires that run backwards:

* ``ready:<class>:<w>``: from the tile's SB_OUT ``_ready`` ports through the ``ready_out<k>``
  pins of its SB_OUT muxes (the forks at the SB_INs included) to its SB_IN ``_ready`` ports:
  one hop of a ready chain;
* ``ready_core:<class>``: from the SB_OUT ``_ready`` ports through the connection boxes'
  ``ready_in`` (the core wrapper's join and fire logic between them) to the SB_IN ``_ready``
  ports: a ready chain that crosses the core (only a wrapped core with ready-valid inputs
  and outputs has one).
"""
from __future__ import annotations

from dataclasses import dataclass

from canal.graph import IO, NodeKind
from canal.rtl import TileShape


@dataclass(frozen=True)
class PathClass:
    """One path class of one tile: ``key`` (a :mod:`canal.timing` class key, or
    ``core_out:<class>``), ``kind`` (``sb``, ``pass``, ``cb``, ``reg``, ``core_out``,
    ``ready``, ``ready_core``),
    ``starts`` (tile port names; empty: every register clock pin; for a ready-valid ``reg``:
    the FIFO instances whose registers start it; for ``ready`` and
    ``ready_core``: the SB_OUT ``_ready`` ports, the paths ending at the SB_IN ``_ready``
    ports), ``throughs``
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


def tile_path_classes(shape: TileShape, tclass: str,
                      rv_widths: frozenset[int] = frozenset(), wrapped_core: bool = False
                      ) -> list[PathClass]:
    """The path classes of the tile module of ``shape`` whose tile timing class is
    ``tclass`` (module docstring), sorted by key; ``rv_widths``: the ready-valid widths of a
    ready-valid tile (empty: a static tile); ``wrapped_core``: the ready-valid tile holds its
    core in the handshake wrapper (not a socket, as an IO tile's)."""
    nodes = {n.name: n for n in shape.nodes}
    acc: dict[str, tuple[str, set[str], set[str], str | None, int]] = {}

    def add(key: str, kind: str, start: str | None, through: str, exit_: str | None,
            edge: bool = True) -> None:
        k, starts, throughs, ex, n = acc.get(key, (kind, set(), set(), exit_, 0))
        if start is not None:
            starts.add(start)
        throughs.add(through)
        acc[key] = (k, starts, throughs, ex, n + edge)

    for name, srcs in shape.fanin:
        n = nodes[name]
        for k, src in enumerate(srcs):
            s = nodes.get(src)
            if s is None:
                continue
            pin = f"mux_{name}/I{k}"
            rv = n.width in rv_widths
            if n.kind is NodeKind.SB and n.io is IO.SB_OUT:
                if s.kind is NodeKind.SB and s.io is IO.SB_IN:
                    if len(srcs) == 1:      # a long track passing through: a wire
                        key = f"pass:{tclass}:{n.width}:{s.side.name[0]}->{n.side.name[0]}"
                        add(key, "pass", src, name, None)
                        if rv:
                            add(key, "pass", f"{src}_valid", f"{name}_valid", None, False)
                    else:
                        key = f"sb:{tclass}:{n.width}:{s.side.name[0]}->{n.side.name[0]}"
                        add(key, "sb", src, pin, None)
                        if rv:
                            add(key, "sb", f"{src}_valid", f"mux_{name}/valid_in{k}", None,
                                False)
                            add(f"ready:{tclass}:{n.width}", "ready", f"{name}_ready",
                                f"mux_{name}/ready_out{k}", None)
                elif s.kind is NodeKind.PORT:
                    add(f"core_out:{tclass}", "core_out", None, pin, None)
            elif n.kind is NodeKind.PORT and n.direction == "in" \
                    and s.kind is NodeKind.SB and s.io is IO.SB_IN:
                add(f"cb:{tclass}", "cb", src, pin, "mux_PORT_")
                if rv:
                    add(f"cb:{tclass}", "cb", f"{src}_valid", f"mux_{name}/valid_in{k}",
                        "mux_PORT_", False)
            elif n.kind is NodeKind.RMUX and s.kind is NodeKind.REG:
                if rv:      # the FIFO site: from its own registers through its output mux
                    add("reg", "reg", f"fifo_{src}", f"fifo_{src}/O", None)
                    add("reg", "reg", f"fifo_{src}", f"fifo_{src}/valid_out", None, False)
                else:
                    add("reg", "reg", None, pin, None)
    if wrapped_core and rv_widths:
        # a wrapped core joining ready-valid inputs to ready-valid outputs: the ready chain
        # through its fire logic
        fanin = dict(shape.fanin)
        cbs = [n.name for n in shape.nodes if n.kind is NodeKind.PORT and n.direction == "in"
               and n.width in rv_widths and fanin.get(n.name)]
        outs = [name for name, srcs in shape.fanin
                if nodes[name].kind is NodeKind.SB and nodes[name].width in rv_widths
                and any(s in nodes and nodes[s].kind is NodeKind.PORT for s in srcs)]
        if cbs and outs:
            for o in outs:          # (edges: the connection boxes crossed)
                add(f"ready_core:{tclass}", "ready_core", f"{o}_ready", f"mux_{cbs[0]}/ready_in",
                    None, False)
            for c in cbs:
                add(f"ready_core:{tclass}", "ready_core", None, f"mux_{c}/ready_in", None)
    return [PathClass(key, kind, tuple(sorted(starts)), tuple(sorted(throughs)), ex, n)
            for key, (kind, starts, throughs, ex, n) in sorted(acc.items())]


__all__ = ["PathClass", "tile_path_classes"]
