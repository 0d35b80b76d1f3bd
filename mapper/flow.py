"""The compiler flow, stage by stage, file to file: map -> pack -> place -> route -> pipeline ->
bitstream -> sim.

Each ``run_<stage>(run_dir, coll, ...)`` reads the previous stage's file from the run
directory (formats and staleness checks in :mod:`mapper.stages`), runs the stage on the
design's :class:`~mapper.collateral.Collateral` and writes its own file; :func:`run_app`
chains them (optionally resuming at a later stage from the files already there). The
``cgra`` commands of :mod:`mapper.cli` are thin wrappers of these functions, so a chain of
``cgra map / pack / place / route / pipeline / bitstream / sim`` run by hand writes the same
files as ``cgra run``.

The flow only drives: parameters are :mod:`mapper.params`, every stage file's reader and
writer :mod:`mapper.stages`, the map stage's steps :mod:`mapper.mapping` (DNN layers
:mod:`mapper.dnn.array`), closing timing :mod:`mapper.closure`, register absorption
:mod:`mapper.backend.absorb` and running on the RTL :mod:`mapper.sim.run` (its files and
``run_report.json``, schema :data:`mapper.stages.RUN_SCHEMA`).
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from cgra.errors import ConfigError, MappingError, SimulationError
from garnet.collateral import file_sha256
from mapper import ir
from mapper import stages as st
from mapper.backend.bitstream import Bitstream, generate
from mapper.closure import Once, attempts, sweep
from mapper.backend.pack import PackParams, pack
from mapper.backend.pipeline import PipelineParams, PipelineResult, pipeline
from mapper.backend.place import PlaceParams, Placement, check_capacity, place, site_capacity
from mapper.backend.dynamic import layer_of
from mapper.backend.route import RouterParams, RoutingResult, route_design
from mapper.collateral import Collateral, load_collateral, load_pe_model
from mapper.backend.absorb import absorb_chains, check_absorb
from mapper.backend.checks import check_placed, check_routed
from mapper.backend.power import power_summary
from mapper.dnn.array import is_layer, map_layer, run_layer_sim
from mapper.duplicate import (check_copy_fits, check_translation, duplicate_files,
                              column_collateral, plan_duplication, sub_collateral)
from mapper.mapping.compute import (ComputeMapping, MappedKernel, check_equivalence, check_luts,
                                    decomposition_summary,
                                    cover_kernel, kernel_netlist, map_compute, min_pe_count)
from mapper.mapping.memory import MemoryMapping, map_memory
from mapper.netlist import Netlist
from mapper.params import (AppParams, FlowParams, RunParams, SimOptions, Step, attempt_name,
                           default_run_dir)
from mapper.sim.run import AppRun, simulate_app
from mapper.stages import (FlowResult, app_name, load_flow, load_packed, load_placement,
                           load_routing, open_design, save_packed, save_pipelined,
                           save_placement, save_routing)


# ---------------------------------------------------------------------------- map
@dataclass
class AppMapping:
    """Result of :func:`map_app`: the mapped ``netlist`` (PEs, MEMs, registers, IOs), the
    cover of every kernel, the memory and compute mappings (DSL apps; ``None`` for CoreIR
    files), ``times`` = step -> seconds and ``vectors`` checked per kernel."""

    name: str
    netlist: Netlist
    kernels: dict[str, MappedKernel]
    memory: MemoryMapping | None
    compute: ComputeMapping | None
    times: dict[str, float] = field(default_factory=dict)
    vectors: int = 0
    #: DNN layers: the channel blocking mapped (:class:`mapper.dnn.array.Blocking`)
    blocking: dict[str, Any] | None = None

    def counts(self) -> dict[str, int]:
        """``pe``, ``mem``, ``reg``, ``io`` instance counts of the netlist, and ``pond``
        (ponds, the PE register files) when the netlist has any."""
        c = self.netlist.counts()
        return {"pe": c.get("pe", 0), "mem": c.get("mem", 0), "reg": c.get("reg", 0),
                "io": c.get("io_in", 0) + c.get("io_out", 0),
                **({"pond": c["pond"]} if c.get("pond") else {})}


def is_coreir(app: str) -> bool:
    """``app`` names a CoreIR JSON file (a ``.json`` name or an existing file)."""
    return app.endswith(".json") or Path(app).is_file()


def check_pe_bound(pipeline_ir: ir.Pipeline, rules: Any, coll: Collateral) -> None:
    """Refuse, before memory and compute mapping, a pipeline whose unrolled kernels need
    more PEs than the design has even by :func:`~mapper.mapping.compute.min_pe_count`'s
    lower bound (an unroll far beyond the array would otherwise spend minutes mapping).
    Raises :class:`MappingError` naming both counts and the fix."""
    have = sum(site_capacity(coll).get(("p",), {}).values())
    need = 0
    for s in pipeline_ir.stages:
        k = s.kernel if pipeline_ir.unroll == 1 else ir.unroll_stage(s, pipeline_ir.unroll).kernel
        need += min_pe_count(k, rules)
        if need > have:
            raise MappingError(f"{pipeline_ir.name} at unroll {pipeline_ir.unroll} needs at "
                               f"least {need} PE tiles (its kernels' ops over the largest "
                               f"rule) but design {coll.name} ({coll.size[0]}x{coll.size[1]}) "
                               f"has {have}; use a smaller unroll or a larger design (e.g. "
                               f"configs/default.toml)")


def map_app(p: AppParams, coll: Collateral) -> AppMapping:
    """Front end, memory mapping (DSL apps, with ``mem.json``) and compute mapping (the rule
    table) of ``p.app`` onto ``coll``; a CoreIR file maps each kernel stand-alone with IO
    instances. Every mapped kernel is checked against the original on ``p.vectors`` random
    vectors. Raises :class:`~cgra.errors.CollateralError` for a collateral without rules or
    MEM, :class:`MappingError` for an unknown app, an op without a rule, a failed
    equivalence check, or a netlist that needs more tiles of a kind than the design has."""
    p.validate()
    times: dict[str, float] = {}
    rules, pe = coll.require("rules"), coll.require("pe")
    memory = compute = blocking = None
    if is_layer(p.app):
        compute, ln = map_layer(p, coll, times)
        blocking = ln.blocking.to_dict() if ln.blocking is not None else None
        nl, kernels, name = compute.netlist, compute.kernels, p.app
    elif is_coreir(p.app):
        from mapper.frontend.coreir import import_coreir  # deferred: loads mapper.frontend only when called
        path = Path(p.app)
        if not path.is_file():
            raise MappingError(f"CoreIR file {path} does not exist; pass a shipped app name "
                               f"or an existing CoreIR JSON path")
        name = path.stem
        t = time.perf_counter()
        kernels_ir = import_coreir(path)
        times["front end"] = time.perf_counter() - t
        t = time.perf_counter()
        nl = Netlist(name)
        kernels: dict[str, MappedKernel] = {}
        for kname, k in kernels_ir.items():
            kernels[kname] = cover_kernel(k, rules, pe)
            check_luts(kernels[kname], coll.mem)
            kernel_netlist(kernels[kname], pe, nl, coll.mem_preset, coll.pe_latency)
        times["compute mapping"] = time.perf_counter() - t
    else:
        from mapper.apps import lower_app  # deferred: loads  only when called
        name = p.app
        t = time.perf_counter()
        pipeline_ir: ir.Pipeline = lower_app(p.app, p.width, p.height, p.unroll)
        # a design of narrower words runs the app in its word width (ir.narrow_pipeline)
        pipeline_ir = ir.narrow_pipeline(pipeline_ir, coll.data_width)
        times["front end"] = time.perf_counter() - t
        check_pe_bound(pipeline_ir, rules, coll)
        t = time.perf_counter()
        memory = map_memory(pipeline_ir, coll.require("mem"), p.threshold,
                            pond=coll.pond.mem if coll.pond is not None and p.pond else None)
        times["memory mapping"] = time.perf_counter() - t
        t = time.perf_counter()
        compute = map_compute(memory.netlist, rules, pe, mem=coll.mem, latency=coll.pe_latency)
        nl, kernels = compute.netlist, compute.kernels
        times["compute mapping"] = time.perf_counter() - t
    check_capacity(nl, coll)        # before the equivalence check: a refusal costs no vectors
    if p.vectors > 0:
        t = time.perf_counter()
        spec = load_pe_model(pe)
        for m in kernels.values():
            check_equivalence(m, pe, spec, p.vectors, p.seed)
        times["equivalence check"] = time.perf_counter() - t
    return AppMapping(name, nl, kernels, memory, compute, times, p.vectors, blocking)


def run_map(run_dir: str | Path, coll: Collateral, p: AppParams) -> AppMapping:
    """:func:`map_app`, writing ``netlist.json``, ``<name>.packed`` and ``app.json``."""
    run_dir = Path(run_dir)
    res = map_app(p, coll)              # nothing is written unless mapping succeeds
    st.clear_run_dir(run_dir)           # no file of an earlier run (another app) stays
    run_dir.mkdir(parents=True, exist_ok=True)
    net_path = st.stage_file(run_dir, "map")
    res.netlist.save(net_path)
    (run_dir / f"{res.name}.packed").write_text(res.netlist.to_packed())
    doc: dict[str, Any] = {
        "schema": st.APP_SCHEMA, "name": res.name, "params": asdict(p),
        "design": str(coll.root) if coll.root else coll.name, "design_name": coll.name,
        "design_id": coll.design_id,
        "kind": "dnn" if is_layer(p.app) else "coreir" if res.memory is None else "dsl",
        "counts": res.counts(), "seconds": {k: round(v, 4) for k, v in res.times.items()},
        "pes_per_stage": res.compute.pe_counts() if res.compute else {},
        "decomposed_pes": decomposition_summary(res.kernels.values()),
        "netlist_sha256": file_sha256(net_path)}
    if res.blocking is not None:
        doc["blocking"] = res.blocking
    if res.memory is not None:
        sched = res.memory.schedule
        doc["ideal"] = {"first_output_cycle": sched.stages[res.memory.pipeline.output]
                        .first_write(), "cycles": sched.completion_cycle()}
        # per unified buffer: ISL capacity (words), latency and read distances (cycles)
        doc["buffers"] = sched.poly.report()
    st.write_doc(run_dir / "app.json", doc)
    return res


# ---------------------------------------------------------------------------- back end


def run_pack(run_dir: str | Path, coll: Collateral, params: PackParams | None = None):
    """netlist.json -> packed.json."""
    run_dir = Path(run_dir)
    st.read_app(run_dir)
    nl = Netlist.load(st.stage_file(run_dir, "map"))
    packed = pack(nl, coll, params)
    save_packed(run_dir, coll, packed)
    return packed


def run_place(run_dir: str | Path, coll: Collateral, params: PlaceParams | None = None
              ) -> Placement:
    """packed.json -> placement.json (+ ``<app>.place``)."""
    run_dir = Path(run_dir)
    packed = load_packed(run_dir, coll)
    pl = place(packed, coll, params)
    check_placed("place", packed, pl, coll)
    save_placement(run_dir, coll, pl)
    return pl


def run_route(run_dir: str | Path, coll: Collateral, params: RouterParams | None = None
              ) -> RoutingResult:
    """packed.json + placement.json -> routing.json (+ ``<app>.route``)."""
    run_dir = Path(run_dir)
    packed, pl = load_packed(run_dir, coll), load_placement(run_dir, coll)
    rr = route_design(packed, pl, coll, params)
    check_routed("route", packed, rr, coll)
    save_routing(run_dir, coll, rr)
    return rr


def run_pipeline(run_dir: str | Path, coll: Collateral, params: PipelineParams | None = None,
                 attempts: list[dict[str, Any]] | None = None,
                 alpha_sweep: list[dict[str, Any]] | None = None) -> PipelineResult:
    """packed + placement + routing -> pipelined.json, with ``pnr_report.json`` and the
    picture ``pnr.png`` (:mod:`mapper.backend.report`)."""
    run_dir = Path(run_dir)
    packed, pl = load_packed(run_dir, coll), load_placement(run_dir, coll)
    rr = load_routing(run_dir, coll)
    pr = pipeline(packed, pl, rr, coll, params)
    save_pipelined(run_dir, coll, FlowResult(packed, pl, rr, pr, None,
                                             attempts=list(attempts or []),
                                             alpha_sweep=list(alpha_sweep or [])))
    return pr


def absorb_files(run_dir: str | Path, coll: Collateral, p: FlowParams,
                 attempts: list[dict[str, Any]], alpha_sweep: list[dict[str, Any]],
                 say: Step | None = None) -> PipelineResult:
    """:func:`absorb_chains` on a run directory that closed (its pack, place, route and
    pipeline files); the design kept is written back to those files (``.place`` /
    ``.route`` texts included) and pnr_report.json gets the ``absorption`` report either way.
    Returns the pipelined design kept."""
    run_dir = Path(run_dir)
    flow = load_flow(run_dir, coll)
    packed, pl, rr, pr, info = absorb_chains(flow.packed, flow.placement, flow.routing,
                                             flow.pipelined, coll, p, say)
    if info["kept"]:
        save_packed(run_dir, coll, packed)
        save_placement(run_dir, coll, pl)
        save_routing(run_dir, coll, rr)
    save_pipelined(run_dir, coll, FlowResult(packed, pl, rr, pr, None, attempts=list(attempts),
                                             alpha_sweep=list(alpha_sweep), absorption=info))
    return pr


def run_bitstream(run_dir: str | Path, coll: Collateral, power_gate: bool = False,
                  quiet_unused: bool = False) -> Bitstream:
    """pipelined.json -> ``bitstream.json`` and ``<app>.bs`` (``AAAAAAAA DDDDDDDD`` lines);
    ``power_gate``: gate every unused tile, ``quiet_unused``: give every unused mux of an on
    tile a quiet select (:func:`mapper.backend.bitstream.generate`). ``pnr_report.json``
    gets the ``power`` section of the bitstream's power state
    (:func:`mapper.backend.power.power_summary`) and ``quiet_unused``: the counts of
    :meth:`mapper.backend.quiet.QuietResult.summary`, ``null`` when off."""
    run_dir = Path(run_dir)
    flow = load_flow(run_dir, coll)
    pr = flow.pipelined
    bs = generate(pr.packed, flow.placement, pr.routing, coll, power_gate=power_gate,
                  quiet_unused=quiet_unused)
    bs.name = app_name(run_dir)
    st.save_bitstream(run_dir, coll, bs)
    st.update_pnr_report(run_dir, {"power": power_summary(coll, flow.placement, pr.routing,
                                                          power_gate),
                                   "quiet_unused": bs.quiet.summary() if bs.quiet else None})
    return bs


# ---------------------------------------------------------------------------- sim
def run_sim(run_dir: str | Path, coll: Collateral, opts: SimOptions | None = None,
            step: Step | None = None, seconds: dict[str, float] | None = None) -> Any:
    """The sim stage of a run directory: a DNN layer by :func:`mapper.dnn.array.run_layer_sim`
    (a :class:`~mapper.dnn.array.LayerRun`), an app by :func:`mapper.sim.run.simulate_app`
    (an :class:`~mapper.sim.run.AppRun`). Raises :class:`SimulationError` for a CoreIR file
    (no stream schedule, no golden) and as those functions do."""
    app = st.read_app(run_dir)
    if app.get("kind") == "dnn":
        return run_layer_sim(Path(run_dir), coll, app, opts or SimOptions(),
                             step or (lambda _m: None), seconds)
    if app.get("kind") != "dsl":
        raise SimulationError(f"{app['name']}: only DSL apps can be simulated (a CoreIR file "
                              f"has no stream schedule and no golden); use `cgra run <app>` "
                              f"with one of the shipped apps")
    return simulate_app(run_dir, coll, opts, step, seconds)


# ---------------------------------------------------------------------------- chain
#: the AppParams fields that decide what ``cgra map`` produced (``vectors`` and ``seed`` only
#: check it)
MAPPING_FIELDS = ("app", "width", "height", "unroll", "threshold", "channels", "block",
                  "loop_cycles", "double_buffer", "flatten", "pond")


def check_resume(run_dir: Path, app: AppParams, resume_from: str) -> None:
    """``--from <stage>`` reuses the earlier stages' files of ``run_dir``: they must have been
    made for this app and these mapping options (``app.json`` records them), else
    :class:`MappingError` naming the run directory, what differs and the fix (today's
    run would otherwise silently finish the old app)."""
    doc = st.read_app(run_dir)
    was = doc.get("params") or {}
    now = asdict(app)
    diff = [f for f in MAPPING_FIELDS if f in was and was[f] != now.get(f)]
    if diff:
        what = ", ".join(f"{f} {was[f]!r} (now {now.get(f)!r})" for f in diff)
        raise MappingError(f"--from {resume_from}: run directory {run_dir} was mapped with "
                           f"{what}; rerun from map (drop --from) or use another --out")


def run_stages(p: RunParams, until: str = "sim", step: Step | None = None) -> Any:
    """Run the stages from ``p.resume_from`` through ``until`` (module docstring), each
    reading the previous stage's file; returns the last stage's result (an :class:`AppRun`
    for ``sim``). With ``p.duplicate`` (low-unroll duplication, Cascade §V-C4,
    :mod:`mapper.duplicate`) map to pipeline run for one copy on the sub-array and the result
    is replicated across the array before the bitstream. Raises the error of the failing
    stage (``MappingError``,
    ``PlacementError``, ``RoutingError``, ``CollateralError``, ``ConfigError``,
    ``SimulationError``)."""
    say = step or (lambda _m: None)
    p.validate()
    for name, what in (("--from", p.resume_from), ("until", until)):
        if what not in st.ORDER:
            raise MappingError(f"{name} {what!r}: not a stage; stages: {st.ORDER}")
    run_dir = Path(p.out) if p.out is not None else default_run_dir(p.app.app)
    start, stop = st.ORDER.index(p.resume_from), st.ORDER.index(until)
    t0 = time.perf_counter()
    if start == 0:
        say("collateral")
        coll = load_collateral(p.design)
    else:
        coll = open_design(run_dir, p.design)
    # low-unroll duplication (Cascade §V-C4): map, pack, place, route and pipeline one copy
    # at unroll 1 on a sub-array (pnr_coll), then replicate it across the array (coll)
    dup = pnr_coll = compared = None
    app_p = p.app
    if p.duplicate is not None:
        if 0 < start < st.ORDER.index("bitstream"):
            raise ConfigError(f"--from {p.resume_from} with --duplicate: the run directory "
                              f"holds the replicated design; rerun from map (drop --from) or "
                              f"use --from bitstream")
        dup = plan_duplication(p.app, coll, p.duplicate)
        app_p = dup.strip_params(p.app)
        if start == 0:
            compared = check_translation(coll, dup.columns, dup.copies)
            pnr_coll = sub_collateral(coll, dup.columns)
    if start > 0:
        if dup is None and "duplicate" in st.read_app(run_dir):
            raise ConfigError(f"--from {p.resume_from}: run directory {run_dir} holds a "
                              f"duplicated design (Cascade §V-C4); add --duplicate or rerun "
                              f"from map (drop --from)")
        check_resume(run_dir, app_p, p.resume_from)
    if layer_of(coll) is not None and (dup is not None or p.flow.columns is not None):
        raise ConfigError(f"design {coll.name} has a dynamic layer (routers, canal.dynamic): "
                          f"{'--duplicate' if dup is not None else 'a column range'} is not "
                          "supported on a hybrid array (its flows are routed on the whole "
                          "mesh); run without it")
    if p.flow.columns is not None:      # an app confined to a column range (AHA §4.4)
        if dup is not None:
            raise ConfigError("a column range (FlowParams.columns) with --duplicate: the "
                              "copies span the array; give one of them")
        pnr_coll = column_collateral(coll, *p.flow.columns)
    pnr_coll = pnr_coll or coll
    secs: dict[str, float] = {"load_collateral": time.perf_counter() - t0}

    def duplicate_step() -> None:
        if dup is None or pnr_coll is coll:
            return
        say(f"duplicate x{dup.copies}")
        t = time.perf_counter()
        duplicate_files(run_dir, pnr_coll, coll, dup,
                        sum(secs.get(s, 0.0) for s in ("place", "route", "pipeline",
                                                       "register_absorption")), compared)
        secs["duplicate"] = time.perf_counter() - t

    def map_step() -> AppMapping:
        try:
            res = run_map(run_dir, pnr_coll, app_p)
        except MappingError as exc:
            if dup is None:
                raise
            raise MappingError(f"--duplicate: one copy of {dup.app} (unroll {dup.copy_unroll}, "
                               f"{dup.width}x{dup.strip_height} strip) on the {dup.columns}-"
                               f"column sub-array: {exc}"
                               + (f"; or use a wider --sub-array (up to "
                                  f"{dup.array_columns // dup.copies})"
                                  if dup.columns < dup.array_columns // dup.copies else
                                  "; or run it unrolled without --duplicate")) from None
        if dup is not None:
            check_copy_fits(res.netlist, pnr_coll, dup)
            st.write_doc(run_dir / "app.json", {**st.read_app(run_dir),
                                                "duplicate": dup.to_dict()})
        return res
    if p.flow.absorb_chains:
        check_absorb(p.flow, coll)
    # the re-routes of branch-delay matching stay power-aware (FlowParams.pipeline_params)
    p = dataclasses.replace(p, flow=dataclasses.replace(p.flow,
                                                        pipeline=p.flow.pipeline_params()))
    stages: dict[str, Callable[[], Any]] = {
        "map": map_step,
        "pack": lambda: run_pack(run_dir, pnr_coll, p.flow.pack),
        "place": lambda: run_place(run_dir, pnr_coll, p.flow.place),
        "route": lambda: run_route(run_dir, pnr_coll, p.flow.route),
        "pipeline": lambda: run_pipeline(run_dir, pnr_coll, p.flow.pipeline),
        "bitstream": lambda: run_bitstream(run_dir, coll, p.flow.power_gate,
                                           p.flow.quiet_unused),
        "sim": lambda: run_sim(run_dir, coll, p.sim, say, secs),
    }
    out = None
    names = st.ORDER[start:stop + 1]
    retry = {"place", "route", "pipeline"} <= set(names)
    k = 0
    while k < len(names):
        name = names[k]
        if retry and name == "place":
            # place, route and pipeline again with the next seed when routing or branch-delay
            # matching fails on a placement (each failure reported in pnr_report.json); with
            # an exponent sweep, once per exponent; the kept result's files are on disk last
            def once_files(q: FlowParams) -> Once:
                def once(pp: PlaceParams, stage: list[str], tried: list[dict[str, Any]]):
                    stage[0], t = "place", time.perf_counter()
                    say("place" if not tried else f"place ({attempt_name(pp)})")
                    pl = run_place(run_dir, pnr_coll, pp)
                    secs["place"] = time.perf_counter() - t
                    stage[0], t = "route", time.perf_counter()
                    say("route")
                    rr = run_route(run_dir, pnr_coll, q.route)
                    secs["route"] = time.perf_counter() - t
                    stage[0], t = "pipeline", time.perf_counter()
                    say("pipeline")
                    pr = run_pipeline(run_dir, pnr_coll, q.pipeline, tried)
                    secs["pipeline"] = time.perf_counter() - t
                    return (pl, rr, pr), pr
                return once

            def close(q: FlowParams):
                res, pr, failed, kept, on_disk = attempts(q, once_files(q), say)
                return (res, on_disk), pr, failed, kept

            q, ((pl, rr, pr), on_disk), failed, table = sweep(p.flow, close, say)
            if table:
                say(f"keeping alpha {q.place.alpha:g}")
            if table or not on_disk:
                # the kept attempt is not the last one run (its files were overwritten) or
                # its report gains the sweep table: its files are written from memory, the
                # bytes its own run wrote, never placed, routed or pipelined again
                save_placement(run_dir, pnr_coll, pl)
                save_routing(run_dir, pnr_coll, rr)
                save_pipelined(run_dir, pnr_coll, FlowResult(load_packed(run_dir, pnr_coll), pl,
                                                             rr, pr, None, attempts=list(failed),
                                                             alpha_sweep=list(table)))
            out = pr
            if p.flow.absorb_chains:
                t = time.perf_counter()
                out = absorb_files(run_dir, pnr_coll, p.flow, failed, table, say)
                secs["register_absorption"] = time.perf_counter() - t
            duplicate_step()
            k = names.index("pipeline") + 1
            continue
        if name != "sim":
            say(name)
        t = time.perf_counter()
        out = stages[name]()
        secs[name] = time.perf_counter() - t
        if name == "pipeline":
            duplicate_step()
        k += 1
    return out


def run_app(p: RunParams, step: Step | None = None) -> AppRun:
    """Every stage from ``p.resume_from`` to the simulation (:func:`run_stages`)."""
    return run_stages(p, "sim", step)


__all__ = ["AppMapping", "absorb_files", "is_coreir", "map_app", "run_app",
           "run_bitstream", "run_map", "run_pack", "run_pipeline", "run_place", "run_route",
           "run_sim", "run_stages"]
