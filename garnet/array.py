"""Array composition: cores on the grid, both interconnect widths, global signals.

:func:`build_interconnect` places a core on every tile (IO edge, MEM columns, PEs; or any
core-per-position function) and builds the Canal interconnect (one routing graph per width
in ``params.widths``: switch boxes of ``params.topology`` with ``params.tracks`` tracks,
connection boxes from every track of ``params.cb_sides``, a pipeline register on every
SB_OUT of ``params.pipeline_register_sides`` x ``pipeline_register_tracks``).

:func:`array_circuit` is the top-level magma circuit ``Garnet_<W>x<H>_<hash>`` (Canal's array
generator, each distinct tile generated once). Top-level ports:

* ``CLK``; ``RESET`` (synchronous, active high: config registers return to their reset
  values, pipeline registers and PE registers to 0);
* ``clk_en`` (1 = run; 0 = stall: pipeline registers, PE and MEM state hold; config writes
  still work);
* ``flush`` (to every core; column spine with a register every ``flush_interval`` rows, so
  row y sees it ``y // flush_interval`` cycles later; spine registers are not stalled);
* config bus: ``config_addr`` (32), ``config_data`` (32), ``config_write`` (1),
  ``config_read`` (1), ``read_data`` (32; combinational: the addressed register while
  ``config_read`` is 1, else 0). A write takes effect at the rising edge where
  ``config_write`` is 1 (address ``reg << 24 | feature << 16 | x << 8 | y``);
* IO tiles: ``glb2io_16_X<xx>_Y<yy>`` (in, 16), ``io2glb_16_X<xx>_Y<yy>`` (out, 16),
  ``glb2io_1_X<xx>_Y<yy>`` (in, 1), ``io2glb_1_X<xx>_Y<yy>`` (out, 1), xx/yy two hex digits.
"""
from __future__ import annotations

from typing import Callable

from cgra.core import CoreSpec

from garnet.cores import io_core, load_pe_spec, mem_core, pe_core
from garnet.params import GarnetParams

CoreFn = Callable[[int, int], "CoreSpec | None"]


def default_core_fn(params: GarnetParams) -> CoreFn:
    """The default core-per-position function (see :meth:`GarnetParams.tile_kind`)."""
    pe = pe_core(load_pe_spec(params.pe))
    io = io_core()
    mem = mem_core(params.mem_preset) if params.mem_ratio else None

    def fn(x: int, y: int) -> CoreSpec | None:
        kind = params.tile_kind(x, y)
        return io if kind == "io" else mem if kind == "mem" else pe
    return fn


def interconnect_params(params: GarnetParams):
    """The :class:`canal.passes.InterconnectParams` of ``params``."""
    from canal.graph import Side
    from canal.passes import CorePortConnections, InterconnectParams

    tracks = params.pipeline_register_tracks or list(range(params.tracks))
    regs = [(t, Side[s]) for s in params.pipeline_register_sides for t in tracks]
    conn = CorePortConnections(cb_sides=tuple(Side[s] for s in params.cb_sides))
    return InterconnectParams(params.width, params.height, params.tracks, params.topology,
                              params.track_length, tuple(params.widths), regs, conn)


def build_interconnect(params: GarnetParams, core_fn: CoreFn | None = None, timing=None):
    """The :class:`canal.Interconnect` of the array (graphs for every width, core specs).
    ``core_fn(x, y)`` overrides the default layout; ``timing`` (a
    :class:`canal.timing.TimingModel`) gives the edge delays (default: the project's table).
    Pipeline registers on sides not in
    ``params.register_bypass_sides`` are made mandatory (:func:`fix_registers`). Raises
    ``SpecError`` from Canal for a core whose ports the interconnect cannot carry."""
    from canal.interconnect import Interconnect
    from canal.passes import build_uniform

    ic = build_uniform(interconnect_params(params), core_fn or default_core_fn(params),
                       timing)
    fixed = [s for s in params.pipeline_register_sides if s not in params.register_bypass_sides]
    graphs = {w: fix_registers(g, fixed) for w, g in ic.graphs.items()}
    return Interconnect(graphs, ic.cores, ic.timing)


def fix_registers(graph, sides: list[str]):
    """Graph pass: the pipeline registers of SB_OUTs on ``sides`` can no longer be bypassed:
    the bypass edge SB_OUT -> RMUX is removed, so the RMUX has the single fan-in [REG]
    (no select field; every route leaving by such a side passes the register: 1 cycle).

    Why: with a bypassable register on every side, the switch boxes of neighbouring tiles
    form structural combinational cycles (A.EAST -> B.WEST -> A); Verilator 5 schedules such
    cycles with one trigger per cut signal, which makes an 8x8 model tens of MB of C++ that
    takes tens of minutes to compile. A mandatory register on one horizontal and one
    vertical side breaks every cycle (a closed walk on the grid steps both ways)."""
    from canal.graph import NodeKind

    g = graph.copy()
    for nid, n in g.nodes.items():
        if n.kind is NodeKind.RMUX and n.side.name in sides:
            srcs = g.fanin[nid]
            byp = [s for s in srcs if g.nodes[s].kind is not NodeKind.REG]
            for s in byp:
                srcs.remove(s)
                del g.delay[(s, nid)]
    g.params = {**g.params, "mandatory_register_sides": sorted(sides)}
    return g


def combinational_cycle(ic) -> list[str] | None:
    """A structural combinational cycle of the array (node ids), or None when every cycle
    passes a pipeline register. Cores are assumed combinational from every input port to
    every output port (conservative)."""
    import networkx as nx

    from canal.graph import NodeKind

    dg = nx.DiGraph()
    ports: dict[tuple[int, int], dict[str, list[str]]] = {}
    for g in ic.graphs.values():           # one graph over all widths: a core may turn a
        for dst, srcs in g.fanin.items():  # 16-bit input into a 1-bit output
            for src in srcs:
                if g.nodes[src].kind is not NodeKind.REG:
                    dg.add_edge(src, dst)
        for nid, n in g.nodes.items():
            if n.kind is NodeKind.PORT:
                ports.setdefault((n.x, n.y), {}).setdefault(n.direction, []).append(nid)
    for d in ports.values():
        for i in d.get("in", []):
            for o in d.get("out", []):
                dg.add_edge(i, o)
    if nx.is_directed_acyclic_graph(dg):          # linear time
        return None
    scc = next(c for c in nx.strongly_connected_components(dg) if len(c) > 1)
    return [e[0] for e in nx.find_cycle(dg.subgraph(scc))]


def array_circuit(ic, params: GarnetParams):
    """The top-level magma circuit of the array (cached per process by content)."""
    from canal.rtl import array_circuit as canal_array

    return canal_array(ic, name="Garnet", flush_interval=params.flush_interval)
