"""Low-unroll duplication (Cascade, Melchert et al., TCAD 2024, §V-C4): instead of compiling an
app at unroll ``U`` and placing and routing the ``U``-lane design on the whole array, compile
it with no unrolling for a horizontal strip of the image, place and route it on a sub-array
(the columns ``[0, w)``, every row), and duplicate the tile and interconnect configuration
``U`` times at the column offsets ``k * w``. Each copy streams its own strip of the image
through its own IO tiles; together they produce ``U`` output pixels per cycle, as the unrolled
design does, with a placement and routing problem ``U`` times smaller and shorter wires.

Each copy may also be compiled at a smaller unroll ``K`` than ``U`` (``--copy-unroll K``: ``U /
K`` copies of the unroll-``K`` app), the "smaller unroll" variant of the same idea.

The steps (:func:`mapper.flow.run_stages` drives them when :attr:`mapper.params.RunParams.duplicate`
is set, ``cgra run APP --unroll U --duplicate``):

1. :func:`plan_duplication`: the strip the unroll-1 app is compiled for. For an app whose
   output rows are ``[y0, y1)`` on a ``W x H`` image, each copy computes
   ``n = ceil((y1 - y0) / U)`` output rows; its app is the same app on a ``W x Hs`` image
   (``Hs = n + H - (y1 - y0)``: the stencil's halo rows), checked to have the same output
   columns and first row. Copy ``k`` reads rows ``[k n, k n + Hs)`` of the (padded) input
   image and writes output rows ``[y0 + k n, y0 + (k + 1) n)`` (rows past the image are
   zero and their outputs are not sampled). Only a single-rate pipeline without a ``y``
   coordinate pattern computes the same thing on every strip (a stencil is
   translation-invariant); a multi-rate one is refused.
2. :func:`check_translation`: the sub-array must repeat across the array: every tile of the
   sub-array has the same core, tag, ports and config fields at ``x + k w``, and every
   routing node of the sub-array exists at the shifted position with the same fan-in
   (restricted to the copy's columns) and the same delays, in every routing graph. A
   sub-array width that breaks the tile pattern (e.g. 6 columns of a MEM-every-4th-column
   array) is refused naming the first differing tile.
3. :func:`sub_collateral`: the design restricted to the sub-array (its routing graphs keep
   the nodes and edges inside the columns ``[0, w)``); pack, place, route and pipeline run on
   it unchanged, so every route of copy 0 stays inside its columns.
4. :func:`replicate`: copy ``k`` of every instance (named ``<name>_dup<k>``, copy 0 keeps the
   names), net, route node, pipeline register and schedule, shifted by ``k w`` columns; the IO
   instances of copy ``k`` record ``row_shift = k n`` (the strip they stream,
   :func:`mapper.sim.run.stream_plan`) and the whole output's box. The bitstream, its proof and
   the simulation then run on the whole design as for any other run.

Errors are :class:`~cgra.errors.MappingError` (one line, naming the app or tile and the fix).
"""
from __future__ import annotations

import copy as copy_mod
import dataclasses
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from canal.graph import InterconnectGraph
from canal.routing import RoutingGraph
from cgra.errors import ConfigError, MappingError
from mapper import stages as st
from mapper.apps import lower_app
from mapper.apps.dnn import LAYERS
from mapper.backend.pack import PackedDesign, PackedInstance, PackedNet
from mapper.backend.pipeline import PipelineResult
from mapper.backend.place import Placement
from mapper.backend.route import NetRoute, RoutingResult
from mapper.collateral import Collateral
from mapper.netlist import Netlist
from mapper.params import AppParams, DuplicateParams
from mapper.stages import FlowResult

#: suffix of copy ``k``'s instances, nets and registers (copy 0 keeps the original names)
COPY_SUFFIX = "_dup"


@dataclass(frozen=True)
class DuplicationPlan:
    """How an app at unroll ``unroll`` is duplicated (Cascade §V-C4; module docstring).

    ``app``, ``width`` x ``height``: the app and its image (pixels); ``copies`` (= the unroll
    factor reproduced); ``columns``: the sub-array width (tiles; its rows are the array's
    ``rows``); ``strip_height``: the image rows one copy's app is compiled for (pixels);
    ``strip_rows``: output rows per copy (the row shift between copies, pixels); ``boxes``:
    output stage -> its ``(x0, x1, y0, y1)`` box on the whole image; ``array_columns``: the
    whole array's columns; ``copy_unroll``: the unroll one copy is compiled at (``copies *
    copy_unroll`` is the unroll reproduced)."""

    app: str
    width: int
    height: int
    copies: int
    columns: int
    rows: int
    strip_height: int
    strip_rows: int
    boxes: dict[str, tuple[int, int, int, int]]
    array_columns: int
    copy_unroll: int = 1

    @property
    def offsets(self) -> list[int]:
        """Column offset of each copy (tiles): ``k * columns``."""
        return [k * self.columns for k in range(self.copies)]

    def strip_params(self, app: AppParams) -> AppParams:
        """The :class:`AppParams` one copy is compiled with: ``copy_unroll`` on the strip
        image."""
        return dataclasses.replace(app, height=self.strip_height, unroll=self.copy_unroll)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``app.json``'s ``duplicate``; ``app``: the whole app's image and unroll)."""
        return {"copies": self.copies, "columns": self.columns, "rows": self.rows,
                "sub_array": [0, self.columns, 0, self.rows], "offsets": self.offsets,
                "strip_height": self.strip_height, "strip_rows": self.strip_rows,
                "copy_unroll": self.copy_unroll,
                "app": {"width": self.width, "height": self.height,
                        "unroll": self.copies * self.copy_unroll},
                "boxes": {k: list(v) for k, v in self.boxes.items()}}


def tag_period(coll: Collateral) -> int:
    """Cascade §V-C4's tile pattern: the smallest column period ``p`` of the array's tile tags (tiles ``(x, y)`` and
    ``(x + p, y)`` have the same tag wherever both exist); the array width when none."""
    cols, rows = coll.size
    tiles = coll.tiles
    for p in range(1, cols + 1):
        if all(tiles[(x, y)].tag == tiles[(x + p, y)].tag
               for x in range(cols - p) for y in range(rows)
               if (x, y) in tiles and (x + p, y) in tiles):
            return p
    return cols


def plan_duplication(app: AppParams, coll: Collateral, params: DuplicateParams
                     ) -> DuplicationPlan:
    """The duplication (Cascade §V-C4) of ``app`` on ``coll`` (module docstring, step 1): ``app.unroll /
    params.unroll`` copies, each compiled at ``params.unroll`` (default 1).
    ``params.columns``: the sub-array width (tiles; ``None``: the array's columns divided by
    the copies, rounded down to a multiple of the tile pattern's period). Raises
    :class:`MappingError` for fewer than 2 copies or an unroll the copies' unroll does not
    divide, a DNN layer or CoreIR file, a multi-rate app or one with a ``y`` coordinate
    pattern, copies that do not fit side by side, or an image with fewer output rows than
    copies."""
    name = app.app
    if name in LAYERS or name.endswith(".json") or Path(name).is_file():
        raise MappingError(f"--duplicate: {name} is not a stencil app (a DNN layer or CoreIR "
                           f"file has no image strips to share); drop --duplicate")
    cu = params.unroll
    if app.unroll % cu:
        raise MappingError(f"--copy-unroll {cu} does not divide --unroll {app.unroll}; give a "
                           f"divisor (the copies are --unroll / --copy-unroll)")
    u = app.unroll // cu            # the copies
    if u < 2:
        raise MappingError(f"--duplicate: {name} at unroll {app.unroll} with copies at unroll "
                           f"{cu} has nothing to duplicate; give --unroll {2 * cu} or more "
                           f"(the copies are --unroll / --copy-unroll)")
    cols, rows = coll.size
    period = tag_period(coll)
    w = params.columns
    if w is None:
        w = (cols // u) // period * period
        if w < 1:
            raise MappingError(f"--duplicate: {u} copies of a sub-array of at least {period} "
                               f"column(s) (the tile pattern's period) need {u * period} "
                               f"columns, design {coll.name} has {cols}; use a smaller "
                               f"--unroll or a wider design")
    if u * w > cols:
        raise MappingError(f"--sub-array {w}: {u} copies of {w} columns need {u * w} columns, "
                           f"design {coll.name} has {cols}; use --sub-array <= {cols // u} or "
                           f"a smaller --unroll")
    full = lower_app(name, app.width, app.height, 1)
    if full.multi_rate:
        raise MappingError(f"--duplicate: {name} reads at several rates (strided or repeated "
                           f"access), so its strips are not translates of each other; run it "
                           f"unrolled without --duplicate")
    for pin in full.inputs.values():
        if pin.pattern is not None and pin.pattern[0] == "y":
            raise MappingError(f"--duplicate: {name} reads coordinate pattern y % "
                               f"{pin.pattern[1]}, which differs between strips; run it "
                               f"unrolled without --duplicate")
    dom = full.domains()
    boxes = {o: (dom[o].x0, dom[o].x1, dom[o].y0, dom[o].y1) for o in full.outputs}
    spans = {b[3] - b[2] for b in boxes.values()}
    if len(spans) != 1:
        raise MappingError(f"--duplicate: the outputs of {name} cover different rows "
                           f"{sorted(spans)}; run it unrolled without --duplicate")
    out_rows = spans.pop()
    if out_rows < u:
        raise MappingError(f"--duplicate: {name} on a {app.width}x{app.height} image has "
                           f"{out_rows} output rows, fewer than the {u} copies; use a taller "
                           f"image or a smaller --unroll")
    n = math.ceil(out_rows / u)
    hs = n + app.height - out_rows
    strip = lower_app(name, app.width, hs, cu).domains()
    for o, (x0, x1, y0, _y1) in boxes.items():
        b = strip[o]
        if (b.x0, b.x1, b.y0, b.y1 - b.y0) != (x0, x1, y0, n):
            raise MappingError(f"--duplicate: {name} on a {app.width}x{hs} strip gives output "
                               f"{o} the box {b}, not columns [{x0}, {x1}) and {n} rows from "
                               f"row {y0}; run it unrolled without --duplicate")
    return DuplicationPlan(name, app.width, app.height, u, w, rows, hs, n, boxes, cols, cu)


def shift_node(nid: str, dx: int) -> str:
    """Routing node id ``nid`` (``KIND:width:x:y:...``, :mod:`canal.graph`) moved ``dx``
    columns east (a copy's node, Cascade §V-C4)."""
    if dx == 0:
        return nid
    p = nid.split(":", 3)
    return f"{p[0]}:{p[1]}:{int(p[2]) + dx}:{p[3]}"


def _node_x(nid: str) -> int:
    return int(nid.split(":", 3)[2])


def _tile_sig(t) -> tuple:
    return (t.core, t.tag, t.ports, t.config_fields, t.external, t.timing_class,
            t.config_memory)


def check_translation(coll: Collateral, columns: int, copies: int) -> dict[str, int]:
    """Cascade §V-C4's precondition (module docstring, step 2): the sub-array of ``columns``
    columns repeats ``copies`` times at offsets ``k * columns`` in tiles and in every routing
    graph. Returns ``{"tiles", "nodes", "edges"}``: how many of each were compared. Raises
    :class:`MappingError` naming the first tile, node or edge that differs and the fix (a
    sub-array width that is a multiple of the tile pattern's period)."""
    cols, rows = coll.size
    tiles = coll.tiles
    fix = (f"use a --sub-array width that is a multiple of the tile pattern's period "
           f"({tag_period(coll)} columns) and at most {cols // copies}")
    n_tiles = n_nodes = n_edges = 0
    for k in range(1, copies):
        dx = k * columns
        for (x, y), t in tiles.items():
            if x >= columns:
                continue
            o = tiles.get((x + dx, y))
            if o is None or _tile_sig(o) != _tile_sig(t):
                what = "no tile" if o is None else f"tile {o.tag or '-'} ({o.core})"
                raise MappingError(f"sub-array of {columns} columns does not tile design "
                                   f"{coll.name}: tile ({x}, {y}) is {t.tag or '-'} "
                                   f"({t.core}) but copy {k} has {what} at ({x + dx}, {y}); "
                                   f"{fix}")
            n_tiles += 1
    for width, rg in coll.graphs.items():
        ig = rg.ig
        inside = [nid for nid, nd in ig.nodes.items() if nd.x < columns]
        for k in range(1, copies):
            dx = k * columns
            lo, hi = dx, dx + columns
            for nid in inside:
                tid = shift_node(nid, dx)
                if tid not in ig.nodes:
                    raise MappingError(f"sub-array of {columns} columns does not tile design "
                                       f"{coll.name}: {width}-bit node {nid} has no copy "
                                       f"{tid}; {fix}")
                want = [s for s in ig.fanin[nid] if _node_x(s) < columns]
                got = [s for s in ig.fanin[tid] if lo <= _node_x(s) < hi]
                if [shift_node(s, dx) for s in want] != got or any(
                        ig.delay[(s, nid)] != ig.delay[(shift_node(s, dx), tid)]
                        for s in want):
                    raise MappingError(f"sub-array of {columns} columns does not tile design "
                                       f"{coll.name}: the {width}-bit fan-in of {nid} and of "
                                       f"its copy {tid} differ (sources or delays); {fix}")
                n_nodes += 1
                n_edges += len(want)
    return {"tiles": n_tiles, "nodes": n_nodes, "edges": n_edges}


def sub_graph(rg: RoutingGraph, columns: int) -> RoutingGraph:
    """``rg`` restricted to the columns ``[0, columns)``: their tiles, nodes and the edges
    between them (fan-in order kept): the sub-array of Cascade §V-C4."""
    return column_graph(rg, 0, columns)


def column_graph(rg: RoutingGraph, lo: int, hi: int) -> RoutingGraph:
    """``rg`` restricted to the columns ``[lo, hi)`` (every row): their tiles, nodes and the
    edges between them (fan-in order kept); node ids stay the whole array's."""
    ig = rg.ig
    nodes = {nid: nd for nid, nd in ig.nodes.items() if lo <= nd.x < hi}
    fanin = {nid: [s for s in ig.fanin[nid] if s in nodes] for nid in nodes}
    delay = {(s, d): ig.delay[(s, d)] for d, srcs in fanin.items() for s in srcs}
    sub = InterconnectGraph(ig.width, {xy: t for xy, t in ig.tiles.items() if lo <= xy[0] < hi},
                            nodes, fanin, delay, dict(ig.params), list(ig.timing_notes))
    return RoutingGraph(sub, f"{rg.source} (columns {lo}..{hi - 1})")


def column_collateral(coll: Collateral, lo: int, hi: int) -> Collateral:
    """The design ``coll`` restricted to the array columns ``[lo, hi)`` (every row): an app
    mapped, placed, routed and pipelined on it uses only those columns' tiles and tracks, so
    its bitstream configures only those columns (AHA paper §4.4: disjoint column ranges run
    different apps and are reconfigured independently). Raises :class:`ConfigError` for a
    range outside the array."""
    cols = coll.size[0]
    if not 0 <= lo < hi <= cols:
        raise ConfigError(f"column range [{lo}, {hi}): use 0 <= lo < hi <= {cols} (the "
                          f"columns of design {coll.name})")
    return dataclasses.replace(coll, graphs={w: column_graph(rg, lo, hi)
                                             for w, rg in coll.graphs.items()})


def sub_collateral(coll: Collateral, columns: int) -> Collateral:
    """The design ``coll`` restricted to the sub-array of its first ``columns`` columns (every
    row): what copy 0 is packed, placed, routed and pipelined on (Cascade §V-C4; module
    docstring, step 3)."""
    return dataclasses.replace(coll, graphs={w: sub_graph(rg, columns)
                                             for w, rg in coll.graphs.items()})


def check_copy_fits(nl: Netlist, sub: Collateral, plan: DuplicationPlan) -> None:
    """Every tile kind one copy's netlist ``nl`` needs (PE, MEM, IO) is in the sub-array
    ``sub`` (Cascade §V-C4). Raises :class:`MappingError` naming the kind, both counts and the fix."""
    have: dict[str, int] = {}
    for t in sub.tiles.values():
        have[t.tag] = have.get(t.tag, 0) + 1
    need: dict[str, int] = {}
    for inst in nl.instances.values():
        if inst.tag:
            need[inst.tag] = need.get(inst.tag, 0) + 1
    names = {"p": "PE", "m": "MEM", "I": "IO", "i": "1-bit IO", "r": "register"}
    for tag, k in sorted(need.items()):
        if tag == "r":
            continue                    # registers sit on routing-track register sites
        if k > have.get(tag, 0):
            raise MappingError(f"--duplicate: one copy of {plan.app} (unroll {plan.copy_unroll}, "
                               f"{plan.width}x{plan.strip_height} strip) needs {k} "
                               f"{names.get(tag, tag)} tiles, the {plan.columns}-column "
                               f"sub-array has {have.get(tag, 0)}; use a wider --sub-array "
                               f"(up to {plan.array_columns // plan.copies} columns fit "
                               f"{plan.copies} copies) or a smaller --unroll")


# ---------------------------------------------------------------------------- replication
def copy_name(name: str, k: int) -> str:
    """The name of copy ``k`` of instance / net / register ``name`` (copy 0 keeps it;
    Cascade §V-C4's duplication)."""
    return name if k == 0 else f"{name}{COPY_SUFFIX}{k}"


def _term(t: tuple[str, str], k: int) -> tuple[str, str]:
    return (copy_name(t[0], k), t[1])


def _packed(pk: PackedDesign, plan: DuplicationPlan) -> PackedDesign:
    insts: dict[str, PackedInstance] = {}
    nets: list[PackedNet] = []
    absorbed: dict[str, tuple[str, str]] = {}
    folded: dict[str, list[tuple[str, str]]] = {}
    for k in range(plan.copies):
        for name, pi in pk.instances.items():
            cfg = copy_mod.deepcopy(pi.config)
            if pi.kind in ("io_in", "io_out"):
                cfg["row_shift"] = k * plan.strip_rows
                if pi.kind == "io_out" and cfg.get("stage") in plan.boxes:
                    cfg["box"] = list(plan.boxes[cfg["stage"]])
            n = copy_name(name, k)
            if n in insts:
                raise MappingError(f"--duplicate: instance name {n} of copy {k} is taken; "
                                   f"rename the app's instance (no '{COPY_SUFFIX}<k>' suffix)")
            insts[n] = PackedInstance(n, pi.kind, pi.tag, cfg, dict(pi.fields),
                                      {p: [copy_name(r, k) for r in regs]
                                       for p, regs in pi.input_regs.items()},
                                      dict(pi.consts))
        nets += [PackedNet(copy_name(n.name, k), n.width, _term(n.source, k),
                           [_term(s, k) for s in n.sinks]) for n in pk.nets]
        absorbed.update({copy_name(r, k): _term(t, k) for r, t in pk.absorbed_regs.items()})
        folded.update({copy_name(c, k): [_term(t, k) for t in ts]
                       for c, ts in pk.folded_consts.items()})
    return PackedDesign(pk.name, insts, nets, copy_mod.deepcopy(pk.port_map), absorbed, folded)


def _routing(rr: RoutingResult, plan: DuplicationPlan) -> RoutingResult:
    nets: dict[str, NetRoute] = {}
    regs: dict[str, str] = {}
    for k, dx in enumerate(plan.offsets):
        for name, r in rr.nets.items():
            n = copy_name(name, k)
            nets[n] = NetRoute(n, r.width, _term(r.source, k),
                               {_term(t, k): [shift_node(v, dx) for v in path]
                                for t, path in r.paths.items()})
        regs.update({copy_name(r, k): shift_node(v, dx) for r, v in rr.reg_sites.items()})
    return RoutingResult(nets, regs, dict(rr.iterations), rr.seconds,
                         {w: v * plan.copies for w, v in rr.wirelength.items()})


def _placement(pl: Placement, plan: DuplicationPlan) -> Placement:
    sites = {copy_name(n, k): (x + dx, y) for k, dx in enumerate(plan.offsets)
             for n, (x, y) in pl.sites.items()}
    return dataclasses.replace(pl, sites=sites, cost=pl.cost * plan.copies,
                               hpwl=pl.hpwl * plan.copies, overlap=pl.overlap * plan.copies)


def _pipelined(pr: PipelineResult, plan: DuplicationPlan) -> PipelineResult:
    ks = list(enumerate(plan.offsets))
    return dataclasses.replace(
        pr, routing=_routing(pr.routing, plan), packed=_packed(pr.packed, plan),
        sigma_in={_term(t, k): v for k, _ in ks for t, v in pr.sigma_in.items()},
        enabled_regs=[shift_node(r, dx) for _, dx in ks for r in pr.enabled_regs],
        forced_regs=[shift_node(r, dx) for _, dx in ks for r in pr.forced_regs],
        mem_absorbed={_term(t, k): v for k, _ in ks for t, v in pr.mem_absorbed.items()},
        pe_input_regs=sorted(_term(t, k) for k, _ in ks for t in pr.pe_input_regs),
        output_latency={copy_name(n, k): v for k, _ in ks for n, v in pr.output_latency.items()},
        passes=[dataclasses.replace(r, registers=r.registers * plan.copies)
                for r in pr.passes],
        pe_input_delay={_term(t, k): v for k, _ in ks for t, v in pr.pe_input_delay.items()})


def replicate(flow: FlowResult, plan: DuplicationPlan) -> FlowResult:
    """Cascade §V-C4's duplication: copy ``k`` of the sub-array's packed design, placement, routing and pipelined design at
    column offset ``k * plan.columns`` for every copy (module docstring, step 4): names of
    copy ``k >= 1`` get :data:`COPY_SUFFIX` ``k``, routing nodes and register sites move
    ``k * columns`` columns, every IO instance records its ``row_shift`` and an output its
    whole box. Counts that add up over copies (HPWL, wirelength, pipeline registers per pass)
    are multiplied; the timing (the same in every copy by translation invariance) is copy 0's.
    Raises :class:`MappingError` when a copy's name is taken."""
    return FlowResult(_packed(flow.packed, plan), _placement(flow.placement, plan),
                      _routing(flow.routing, plan), _pipelined(flow.pipelined, plan),
                      None, dict(flow.seconds), list(flow.attempts), list(flow.alpha_sweep),
                      flow.absorption)


def duplicate_files(run_dir: str | Path, sub: Collateral, coll: Collateral,
                    plan: DuplicationPlan, pnr_seconds: float,
                    compared: dict[str, int] | None = None) -> dict[str, Any]:
    """Cascade §V-C4 on a run directory: replace its packed, placement, routing and pipelined
    files (made on the sub-array ``sub``) by their :func:`replicate` on the whole design
    ``coll``, after
    :func:`check_translation` (``compared``: its result when the caller ran it already);
    ``pnr_report.json`` keeps its placement attempts, exponent sweep and absorption report
    and gets the ``duplication`` section (returned): :meth:`DuplicationPlan.to_dict`,
    ``pnr_seconds`` (place, route and pipeline on the sub-array, seconds),
    ``replicate_seconds`` (loading the sub-array's files and replicating them),
    ``write_seconds`` (the whole design's files, its ``pnr.png`` and ``timing.png``) and
    ``compared`` (tiles, nodes, edges checked)."""
    run_dir = Path(run_dir)
    t = time.perf_counter()
    if compared is None:
        compared = check_translation(coll, plan.columns, plan.copies)
    flow = st.load_flow(run_dir, sub)
    old = _read_pnr_report(run_dir)
    flow.attempts = list(old.get("placement_attempts") or [])
    flow.alpha_sweep = list(old.get("alpha_sweep") or [])
    flow.absorption = old.get("absorption")
    rep = replicate(flow, plan)
    t_files = time.perf_counter()
    st.save_packed(run_dir, coll, rep.packed)
    st.save_placement(run_dir, coll, rep.placement)
    st.save_routing(run_dir, coll, rep.routing)
    st.save_pipelined(run_dir, coll, rep)
    section = {**plan.to_dict(), "pnr_seconds": round(pnr_seconds, 4),
               "replicate_seconds": round(t_files - t, 4),
               "write_seconds": round(time.perf_counter() - t_files, 4), "compared": compared}
    st.update_pnr_report(run_dir, {"duplication": section})
    return section


def _read_pnr_report(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "pnr_report.json"
    if not path.is_file():
        return {}
    try:
        doc = json.loads(path.read_text())
    except ValueError as exc:
        raise ConfigError(f"{path}: not JSON ({exc}); run `cgra run` again") from None
    return doc if isinstance(doc, dict) else {}


def duplication_report(run_dir: str | Path) -> dict[str, Any] | None:
    """The ``duplication`` section (Cascade §V-C4) of a run directory's ``pnr_report.json``
    (``None`` when the run was not duplicated)."""
    return _read_pnr_report(Path(run_dir)).get("duplication")


__all__ = ["COPY_SUFFIX", "DuplicationPlan", "check_copy_fits", "check_translation",
           "column_collateral", "column_graph", "copy_name", "duplicate_files",
           "duplication_report", "plan_duplication",
           "replicate", "shift_node", "sub_collateral", "sub_graph", "tag_period"]
