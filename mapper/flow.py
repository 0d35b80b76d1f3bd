"""The compiler flow, stage by stage, file to file: map -> pack -> place -> route -> pipeline ->
bitstream -> sim.

Each ``run_<stage>(run_dir, coll, ...)`` reads the previous stage's file from the run
directory (formats and staleness checks in :mod:`mapper.stages`), runs the stage on the
design's :class:`~mapper.collateral.Collateral` and writes its own file; :func:`run_app`
chains them (optionally resuming at a later stage from the files already there). The
``cgra`` commands of :mod:`mapper.cli` are thin wrappers of these functions, so a chain of
``cgra map / pack / place / route / pipeline / bitstream / sim`` run by hand writes the same
files as ``cgra run``.

Streams of the simulation (the static schedule of :mod:`mapper.schedule`, shifted by
pipelining):

* input: IO instance ``io_in_<input>_l<q>`` placed on IO tile ``(x, 0)`` drives top port
  ``glb2io_16_X<xx>_Y<yy>``; the ``k``-th event of its program (``extents [P, H]``,
  dimension 0 innermost) carries pixel ``(U*(k mod P) + q, k div P)`` (0 beyond the image);
  cycle 0 is the first cycle with ``clk_en = 1`` after the flush;
* output: ``io_out_<stage>_l<q>`` is sampled at top port ``io2glb_16_X<xx>_Y<yy>`` at the cycles
  of its (pipelining-shifted) program; event ``k`` is pixel ``x = U*(x0 div U + k mod n) + q``,
  ``y = y0 + k div n`` of the output stage's domain box ``[x0, x1) x [y0, y1)`` (events with
  ``x`` outside the box are edge lanes and ignored).

The input stream carries the app's input image (:func:`mapper.apps.app_images`: the pixels,
or their bf16 encodings for a ``BFloat16`` input); outputs are compared as 16-bit words (bf16
encodings for a ``BFloat16`` output).

Files of the sim stage: ``<app>.png`` (output, 8-bit when it fits, see
:func:`mapper.images.save_png`; a ``BFloat16`` output shows its values), ``input.png``, ``compare.png`` (input, output and difference
to the golden side by side), ``run_report.json`` (schema :data:`RUN_SCHEMA`: resources,
wirelength, routing iterations, seconds per stage, cycles, latency vs the ideal, golden
agreement, ``bitstream_proof``) and the simulation files ``sim.*``. Before the Verilator
build, the bitstream is proved to realise the pipelined routing (:func:`mapper.verify.verify`,
Canal's SMT model): a wrong select, a second driver or a misplaced register stops the run with
the net, node and config field named.
"""
from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from cgra.errors import (CollateralError, MappingError, PlacementError, RoutingError,
                         SimulationError)
from garnet.collateral import file_sha256
from mapper import ir
from mapper import stages as st
from mapper.bitstream import Bitstream, MemEncoder, generate
from mapper.collateral import Collateral, load_collateral, load_pe_model
from mapper.compute import (ComputeMapping, MappedKernel, check_equivalence, check_luts,
                            cover_kernel, kernel_netlist, map_compute)
from mapper.memory import DEFAULT_SR_THRESHOLD, MemoryMapping, map_memory
from mapper.netlist import Netlist
from mapper.pack import PackParams, pack
from mapper.pipeline import PipelineParams, PipelineResult, pipeline
from mapper.place import PlaceParams, Placement, place, site_capacity
from mapper.streams import stream_events
from mapper.route import RouterParams, RoutingResult, route_design
from mapper.verify import verify

RUN_SCHEMA = "mapper.run_report/1"
Step = Callable[[str], None]


def default_run_dir(app: str) -> Path:
    """``build/apps/<app>`` (``<app>`` = the file stem for a CoreIR file)."""
    return Path("build/apps") / (Path(app).stem if app.endswith(".json") else app)


# ---------------------------------------------------------------------------- map
@dataclass
class AppParams:
    """What to compile: ``app`` (a shipped DSL app, :data:`mapper.apps.APPS`, or a CoreIR
    JSON path), image ``width`` x ``height`` (pixels, DSL apps), ``unroll`` (lanes),
    ``threshold`` (shift-register threshold of memory mapping, cycles), ``vectors`` (random
    vectors per kernel for the compute-mapping equivalence check; 0 = none) and their
    ``seed``."""

    app: str
    width: int = 64
    height: int = 64
    unroll: int = 1
    threshold: int = DEFAULT_SR_THRESHOLD
    vectors: int = 0
    seed: int = 0
    #: DNN layers (:data:`mapper.apps.dnn.LAYERS`; ``width`` is the input side): channels
    #: (c_in = c_out; gemm: k) and block (channels in parallel; gemm: the tile side),
    #: ``None`` = the layer's default; the accumulation loop's cycle budget
    #: (:mod:`mapper.dnn_array`), whether host-loaded operand MEMs double-buffer their
    #: shares (:mod:`mapper.dnn_memory`, "Double buffers"; else each holds its whole box) and
    #: whether a stalling reduction runs its tiles inside (loop perfection)
    channels: int | None = None
    block: int | None = None
    loop_cycles: int = 12
    double_buffer: bool = True
    flatten: bool = True


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

    def counts(self) -> dict[str, int]:
        """``pe``, ``mem``, ``reg``, ``io`` instance counts of the netlist."""
        c = self.netlist.counts()
        return {"pe": c.get("pe", 0), "mem": c.get("mem", 0), "reg": c.get("reg", 0),
                "io": c.get("io_in", 0) + c.get("io_out", 0)}


def is_coreir(app: str) -> bool:
    return app.endswith(".json") or Path(app).is_file()


def is_layer(app: str) -> bool:
    """A DNN layer (:data:`mapper.apps.dnn.LAYERS`), compiled by :mod:`mapper.dnn_array`."""
    from mapper.apps.dnn import LAYERS
    return app in LAYERS


def layer_pipeline(p: AppParams):
    """The tensor program of DNN layer ``p.app`` at ``p``'s sizes."""
    from mapper.apps.dnn import build_layer
    return build_layer(p.app, p.width, p.channels, p.block)


def layer_mapping(p: AppParams, coll: Collateral):
    """``(tensor program, LayerNetlist)`` of DNN layer ``p.app`` on ``coll``
    (:func:`mapper.dnn_array.layer_netlist` with the design's MEM and IO tiles)."""
    from mapper.dnn_array import layer_netlist

    pipe = layer_pipeline(p)
    io_tiles = sum(site_capacity(coll).get(("I",), {}).values())
    return pipe, layer_netlist(pipe, coll.require("mem"), io_tiles, p.loop_cycles,
                               p.double_buffer, p.flatten)


def _map_layer(p: AppParams, coll: Collateral, times: dict[str, float]):
    """A DNN layer's netlist (:func:`layer_mapping`) with its kernels compute-mapped:
    ``(ComputeMapping, LayerNetlist)``."""
    t = time.perf_counter()
    _pipe, ln = layer_mapping(p, coll)
    times["memory mapping"] = time.perf_counter() - t
    t = time.perf_counter()
    compute = map_compute(ln.netlist, coll.require("rules"), coll.require("pe"), mem=coll.mem)
    times["compute mapping"] = time.perf_counter() - t
    return compute, ln


def map_app(p: AppParams, coll: Collateral) -> AppMapping:
    """Front end, memory mapping (DSL apps, with ``mem.json``) and compute mapping (the rule
    table) of ``p.app`` onto ``coll``; a CoreIR file maps each kernel stand-alone with IO
    instances. Every mapped kernel is checked against the original on ``p.vectors`` random
    vectors. Raises :class:`~cgra.errors.CollateralError` for a collateral without rules or
    MEM, :class:`MappingError` for an unknown app, an op without a rule, a failed
    equivalence check, or a netlist that needs more tiles of a kind than the design has."""
    times: dict[str, float] = {}
    rules, pe_doc = coll.require("rules"), coll.require("pe")
    memory = compute = None
    if is_layer(p.app):
        compute, _ln = _map_layer(p, coll, times)
        nl, kernels, name = compute.netlist, compute.kernels, p.app
    elif is_coreir(p.app):
        from mapper.frontend.coreir import import_coreir
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
            kernels[kname] = cover_kernel(k, rules, pe_doc)
            check_luts(kernels[kname], coll.mem)
            kernel_netlist(kernels[kname], pe_doc, nl, coll.mem.get("preset") if coll.mem else None)
        times["compute mapping"] = time.perf_counter() - t
    else:
        from mapper.apps import lower_app
        name = p.app
        t = time.perf_counter()
        pipeline_ir: ir.Pipeline = lower_app(p.app, p.width, p.height, p.unroll)
        times["front end"] = time.perf_counter() - t
        t = time.perf_counter()
        memory = map_memory(pipeline_ir, coll.require("mem"), p.threshold)
        times["memory mapping"] = time.perf_counter() - t
        t = time.perf_counter()
        compute = map_compute(memory.netlist, rules, pe_doc, mem=coll.mem)
        nl, kernels = compute.netlist, compute.kernels
        times["compute mapping"] = time.perf_counter() - t
    if p.vectors > 0:
        t = time.perf_counter()
        spec = load_pe_model(pe_doc)
        for m in kernels.values():
            check_equivalence(m, pe_doc, spec, p.vectors, p.seed)
        times["equivalence check"] = time.perf_counter() - t
    check_capacity(nl, coll)
    return AppMapping(name, nl, kernels, memory, compute, times, p.vectors)


def check_capacity(nl: Netlist, coll: Collateral, tags: tuple[str, ...] = ("p", "m")) -> None:
    """Raise :class:`MappingError` when the netlist needs more tiles of a kind in ``tags``
    (default PE and MEM: what the app computes with; the IO count of stand-alone CoreIR
    kernels, one IO per kernel port, is placement's concern) than the design has, naming
    the kind, both counts and the fix."""
    caps = site_capacity(coll)
    need: dict[str, int] = {}
    for inst in nl.instances.values():
        if inst.tag in tags:
            need[inst.tag] = need.get(inst.tag, 0) + 1
    names = {"p": "PE", "m": "MEM", "I": "16-bit IO", "i": "1-bit IO"}
    for tag, k in need.items():
        have = sum(caps.get((tag,), {}).values())
        if k > have:
            raise MappingError(f"{nl.name} needs {k} {names[tag]} tiles but design "
                               f"{coll.name} ({coll.size[0]}x{coll.size[1]}) has {have}; use a "
                               f"larger design (e.g. configs/default.toml), a smaller unroll, "
                               f"or fewer ops")


def run_map(run_dir: str | Path, coll: Collateral, p: AppParams) -> AppMapping:
    """:func:`map_app`, writing ``netlist.json``, ``<name>.packed`` and ``app.json``."""
    run_dir = Path(run_dir)
    res = map_app(p, coll)              # nothing is written unless mapping succeeds
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
        "netlist_sha256": file_sha256(net_path)}
    if res.memory is not None:
        sched = res.memory.schedule
        doc["ideal"] = {"first_output_cycle": sched.stages[res.memory.pipeline.output]
                        .first_write(), "cycles": sched.completion_cycle()}
        # per unified buffer: ISL capacity (words), latency and read distances (cycles)
        doc["buffers"] = sched.poly.report()
    st.write_doc(run_dir / "app.json", doc)
    return res


def read_app(run_dir: str | Path) -> dict[str, Any]:
    """``app.json`` of a run directory; :class:`CollateralError` when missing/malformed."""
    p = Path(run_dir) / "app.json"
    if not p.is_file():
        raise CollateralError(f"{p} is missing: {run_dir} is not a run directory; run `cgra "
                              f"map <app> --design <dir> --out {run_dir}` first")
    try:
        doc = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CollateralError(f"{p}: cannot read JSON ({exc}); run `cgra map` again") from None
    if not isinstance(doc, dict) or doc.get("schema") != st.APP_SCHEMA:
        raise CollateralError(f"{p}: not a {st.APP_SCHEMA} file; run `cgra map` again")
    net = st.stage_file(run_dir, "map")
    if not net.is_file() or file_sha256(net) != doc.get("netlist_sha256"):
        raise CollateralError(f"{net} changed (or is gone) after `cgra map` wrote it; run "
                              f"`cgra map` again")
    return doc


def open_design(run_dir: str | Path, design: str | Path | None = None,
                check_spec: bool = True) -> Collateral:
    """The collateral of a run: ``design`` when given, else the design ``app.json`` names;
    it must be the generation the run was mapped on."""
    app = read_app(run_dir)
    coll = load_collateral(design if design is not None else app["design"], check_spec)
    if app.get("design_id") != coll.design_id:
        raise CollateralError(f"{Path(run_dir) / 'app.json'}: the run was mapped on another "
                              f"generation of design {app.get('design_name')} than "
                              f"{coll.root}; run `cgra map` again")
    return coll


# ---------------------------------------------------------------------------- back end
@dataclass
class FlowParams:
    """Parameters of every back-end stage; ``place_attempts``: placements tried when routing
    or pipelining fails on one (attempt ``k`` uses seed ``place.seed + 1000 k``; each
    failure is reported, see :func:`_attempts`); ``timing_attempts``: of those, how many may
    miss the target clock (``pipeline.target_period_ps``) before the best one is kept."""

    pack: PackParams = field(default_factory=PackParams)
    place: PlaceParams = field(default_factory=PlaceParams)
    route: RouterParams = field(default_factory=RouterParams)
    pipeline: PipelineParams = field(default_factory=PipelineParams)
    place_attempts: int = 8
    timing_attempts: int = 3
    #: placement exponent sweep (Cascade): place, route and pipeline once per HPWL exponent
    #: and keep the result with the highest Fmax (ties: fewer registers, then the earlier
    #: exponent); ``()`` = only ``place.alpha``
    alphas: tuple[float, ...] = ()
    #: register-chain absorption (:func:`absorb_chains`, :mod:`mapper.absorb`): a net whose
    #: PE sinks carry this many balancing registers or more gets a MEM delay line, placed
    #: around the kept placement, and the design is routed and pipelined again (kept only
    #: when it needs fewer registers); 0 = off. Runs with the place, route and pipeline
    #: stages (not on a resume from a later stage)
    absorb_chains: int = 0


def attempt_seeds(p: FlowParams) -> list[int]:
    """Placement seeds of the attempts (:attr:`FlowParams.place_attempts`)."""
    return [p.place.seed + 1000 * k for k in range(max(1, p.place_attempts))]


def _registers(pr: PipelineResult) -> int:
    return pr.passes[-1].registers if pr.passes else len(pr.enabled_regs) + len(pr.forced_regs)


def _sweep(p: FlowParams, close: Callable[[FlowParams], tuple[Any, PipelineResult,
                                                                 list[dict[str, Any]], int]],
           say: Step) -> tuple[FlowParams, Any, list[dict[str, Any]], list[dict[str, Any]]]:
    """Run ``close`` (placement attempts through pipelining: result, pipelined design,
    attempts that did not close, seed kept) once per exponent of ``p.alphas`` and pick the
    best by (Fmax, -registers). Returns (the winning parameters with their seed, its
    result, its attempts that did not close, the sweep table [{alpha, seed, fmax_mhz,
    registers, kept}] or [] without a sweep). Raises the last ``RoutingError`` when no
    exponent closes."""
    alphas = tuple(p.alphas) or (p.place.alpha,)
    if len(alphas) == 1:
        q = dataclasses.replace(p, place=dataclasses.replace(p.place, alpha=alphas[0]))
        res, _pr, failed, _seed = close(q)
        return q, res, failed, []
    table: list[dict[str, Any]] = []
    best: tuple[tuple[float, int], FlowParams, Any, list[dict[str, Any]], int] | None = None
    last: RoutingError | None = None
    for i, a in enumerate(alphas):
        say(f"place/route/pipeline with alpha {a:g}")
        q = dataclasses.replace(p, place=dataclasses.replace(p.place, alpha=a))
        try:
            res, pr, failed, seed = close(q)
        except RoutingError as exc:
            last = exc
            table.append({"alpha": a, "error": str(exc), "kept": False})
            continue
        row = {"alpha": a, "seed": seed, "fmax_mhz": round(pr.timing.fmax_mhz, 2),
               "registers": _registers(pr), "kept": False}
        table.append(row)
        key = (round(pr.timing.fmax_mhz, 6), -row["registers"])
        if best is None or key > best[0]:
            best = (key, dataclasses.replace(q, place=dataclasses.replace(q.place, seed=seed),
                                             place_attempts=1), res, failed, i)
    if best is None:
        assert last is not None
        raise last
    table[best[4]]["kept"] = True
    return best[1], best[2], best[3], table


def place_to_pipeline(packed, coll: Collateral, p: FlowParams, say: Step | None = None
                      ) -> tuple[Placement, RoutingResult, PipelineResult,
                                 list[dict[str, Any]], list[dict[str, Any]]]:
    """:func:`_place_to_pipeline` once, or once per HPWL exponent of ``p.alphas`` keeping the
    highest Fmax. Returns (placement, routing, pipelined design, failed attempts, the sweep
    table [{alpha, seed, fmax_mhz, registers, kept}], empty without a sweep); errors as
    :func:`_place_to_pipeline`."""
    def close(q: FlowParams):
        return _place_to_pipeline(packed, coll, q, say)

    _q, (pl, rr, pr), failed, table = _sweep(p, close, say or (lambda _m: None))
    return pl, rr, pr, failed, table


def absorb_chains(packed, placement: Placement, routing: RoutingResult, pr: PipelineResult,
                  coll: Collateral, p: FlowParams, say: Step | None = None
                  ) -> tuple[Any, Placement, RoutingResult, PipelineResult, dict[str, Any]]:
    """Register-chain absorption (:mod:`mapper.absorb`) of the closed design ``packed`` /
    ``placement`` / ``routing`` / ``pr``, in rounds (at most :data:`ABSORB_ROUNDS`): plan the
    delay lines (chains of ``p.absorb_chains`` balancing registers or more), insert them,
    place only them (every other instance keeps its site), then route and pipeline. A round
    is kept when it closes, meets the clock target when the design before it did (else
    reaches at least its Fmax) and uses fewer registers; the next round plans on it. The
    rounds stop at the first round that is not kept or plans nothing. When a round is kept
    the passes end with one ``register absorption`` :class:`~mapper.pipeline.PassReport`.

    Returns (packed, placement, routing, pipelined design) kept and a report ``{min_chain,
    rounds: [{delay_lines, registers, fmax_mhz, kept, reason}], delay_lines, kept,
    registers_before, registers_after, seconds}``. Raises :class:`MappingError` for a
    ``min_chain`` the design's MEM cannot serve."""
    from mapper.absorb import insert_delay_lines, plan_delay_lines
    from mapper.checks import check_placed, check_routed
    from mapper.memory import MemSpec
    from mapper.pipeline import PassReport

    t0 = time.perf_counter()
    say = say or (lambda _m: None)
    _check_absorb(p, coll)
    spec = MemSpec.from_dict(coll.mem)
    preset = str(coll.mem.get("preset", spec.name))
    target = p.pipeline.target_period_ps
    best = (packed, placement, routing, pr)
    rounds: list[dict[str, Any]] = []
    for _k in range(ABSORB_ROUNDS):
        pk0, pl0, rr0, pr0 = best
        lines = plan_delay_lines(pr0, p.absorb_chains, coll.data_width, spec)
        row: dict[str, Any] = {"delay_lines": len(lines), "kept": False}
        rounds.append(row)
        if not lines:
            row["reason"] = f"no net carries {p.absorb_chains} or more balancing registers"
            break
        say(f"register absorption: {len(lines)} delay line(s); route and pipeline again")
        moved = {s for line in lines for s in line.sinks}
        # every other route is kept (the first PathFinder iteration starts from it)
        keep = {name: {s: path for s, path in r.paths.items() if s not in moved}
                for name, r in rr0.nets.items()}
        try:
            new = insert_delay_lines(pk0, lines, spec, preset)
            check_capacity(new, coll, ("m",))
            pl2 = place(new, coll, dataclasses.replace(p.place, seed=pl0.seed,
                                                       alpha=pl0.alpha, fixed=dict(pl0.sites)))
            check_placed("absorption: place", new, pl2, coll)
            rr2 = route_design(new, pl2, coll, p.route, keep=keep)
            check_routed("absorption: route", new, rr2, coll)
            pr2 = pipeline(new, pl2, rr2, coll, p.pipeline)
        except (MappingError, PlacementError, RoutingError) as exc:
            row["reason"] = f"the design with delay lines did not close: {exc}"
            break
        regs, before = _registers(pr2), _registers(pr0)
        row.update(registers=regs, fmax_mhz=round(pr2.timing.fmax_mhz, 2))
        met = target is not None and pr0.timing.period_ps <= target + 1e-6
        if met and pr2.timing.period_ps > target + 1e-6:
            row["reason"] = (f"the design with delay lines misses the target "
                             f"({pr2.timing.fmax_mhz:.1f} MHz)")
        elif not met and pr2.timing.fmax_mhz < pr0.timing.fmax_mhz - 1e-6:
            row["reason"] = (f"the design with delay lines is slower "
                             f"({pr2.timing.fmax_mhz:.1f} < {pr0.timing.fmax_mhz:.1f} MHz)")
        elif regs >= before:
            row["reason"] = f"not fewer registers ({regs} >= {before})"
        else:
            row["kept"], row["reason"] = True, "fewer registers"
            best = (new, pl2, rr2, pr2)
            continue
        break
    packed2, pl2, rr2, pr2 = best
    kept = pr2 is not pr
    info: dict[str, Any] = {
        "min_chain": p.absorb_chains, "rounds": rounds, "kept": kept,
        "delay_lines": sum(r["delay_lines"] for r in rounds if r["kept"]),
        "registers_before": _registers(pr), "registers_after": _registers(pr2),
        "seconds": round(time.perf_counter() - t0, 3)}
    if kept:
        pr2.unpipelined = pr.unpipelined        # the baseline stays the design before absorption
        last = pr2.passes[-1] if pr2.passes else None
        pr2.passes = list(pr.passes) + [PassReport(
            "register absorption", pr2.timing.period_ps, pr2.timing.fmax_mhz, _registers(pr2),
            max(pr2.output_latency.values(), default=0), last.reroutes if last else 0,
            time.perf_counter() - t0)]
    return packed2, pl2, rr2, pr2, info


#: rounds of :func:`absorb_chains` (each routes and pipelines the design once more)
ABSORB_ROUNDS = 3


def _check_absorb(p: FlowParams, coll: Collateral) -> None:
    """Refuse a ``p.absorb_chains`` the design's MEM cannot serve, before any placement."""
    from mapper.absorb import check_min_chain
    from mapper.memory import MemSpec

    if coll.mem is None:
        raise MappingError(f"--absorb {p.absorb_chains}: the design has no MEM tiles to hold "
                           f"delay lines; drop --absorb")
    check_min_chain(p.absorb_chains, MemSpec.from_dict(coll.mem))


#: one placement attempt: (seed, stage holder, failed attempts so far) -> (result, pipelined)
Once = Callable[[int, list[str], list[dict[str, Any]]], tuple[Any, PipelineResult]]


def _attempts(p: FlowParams, once: Once, say: Step
              ) -> tuple[Any, PipelineResult, list[dict[str, Any]], int, bool]:
    """Placement attempts (:func:`attempt_seeds`) of ``once`` until one closes: routing and
    branch-delay matching succeed and, with a target clock, the timing model meets it. A
    failure (``RoutingError``) or a missed target is recorded ({seed, stage, error}; stage
    ``"timing"`` for a missed target) and the next seed is placed. Returns (result,
    pipelined design, the attempts that did not close, the seed kept, whether ``once`` last
    ran with that seed, i.e. its files are on disk). When every attempt routes but none meets
    the target, the highest-Fmax attempt is kept (the miss is in the report). Raises the last
    ``RoutingError`` (naming the resource that ran out) when no attempt routes."""
    failed: list[dict[str, Any]] = []
    target = p.pipeline.target_period_ps
    best: tuple[Any, PipelineResult, int] | None = None
    last_seed = None
    for seed in attempt_seeds(p):
        stage = ["place"]
        last_seed = seed
        try:
            res, pr = once(seed, stage, list(failed))
        except RoutingError as exc:
            failed.append({"seed": seed, "stage": stage[0], "error": str(exc)})
            say(f"{stage[0]} failed with seed {seed}: placing again")
            continue
        if target is None or pr.timing.period_ps <= target + 1e-6:
            return res, pr, failed, seed, True
        failed.append({"seed": seed, "stage": "timing",
                       "error": f"reached {pr.timing.fmax_mhz:.1f} MHz, target "
                                f"{1e6 / target:.1f} MHz (critical path "
                                f"{pr.timing.period_ps:.1f} ps, no register site left on it "
                                "that balancing accepts)"})
        if best is None or pr.timing.fmax_mhz > best[1].timing.fmax_mhz:
            best = (res, pr, seed)
        if sum(f["stage"] == "timing" for f in failed) >= max(1, p.timing_attempts):
            break
        say(f"timing not met with seed {seed} ({pr.timing.fmax_mhz:.0f} MHz): placing again")
    if best is not None:
        res, pr, seed = best
        return res, pr, [f for f in failed if f["seed"] != seed], seed, seed == last_seed
    raise RoutingError(f"{len(failed)} placement attempt(s) (seeds {[f['seed'] for f in failed]}) "
                       f"all failed; the last at {failed[-1]['stage']}: {failed[-1]['error']}")


def _place_to_pipeline(packed, coll: Collateral, p: FlowParams, say: Step | None = None
                       ) -> tuple[tuple[Placement, RoutingResult, PipelineResult],
                                  PipelineResult, list[dict[str, Any]], int]:
    """Place, route and pipeline ``packed`` in memory through :func:`_attempts` (every pass
    checked, :mod:`mapper.checks`). Returns ((placement, routing, pipelined), pipelined,
    attempts that did not close, seed kept). Raises ``RoutingError`` when no attempt routes,
    :class:`PlacementError` at once when the design does not fit."""
    from mapper.checks import check_placed, check_routed

    def once(seed: int, stage: list[str], _failed: list[dict[str, Any]]):
        stage[0] = "place"
        pl = place(packed, coll, dataclasses.replace(p.place, seed=seed))
        check_placed("place", packed, pl, coll)
        stage[0] = "route"
        rr = route_design(packed, pl, coll, p.route)
        check_routed("route", packed, rr, coll)
        stage[0] = "pipeline"
        pr = pipeline(packed, pl, rr, coll, p.pipeline)
        return (pl, rr, pr), pr

    res, pr, failed, seed, _last = _attempts(p, once, say or (lambda _m: None))
    return res, pr, failed, seed


def _name(run_dir: Path) -> str:
    return str(read_app(run_dir)["name"])


def run_pack(run_dir: str | Path, coll: Collateral, params: PackParams | None = None):
    """netlist.json -> packed.json."""
    run_dir = Path(run_dir)
    read_app(run_dir)
    nl = Netlist.load(st.stage_file(run_dir, "map"))
    packed = pack(nl, coll, params)
    _save_packed(run_dir, coll, packed)
    return packed


def _save_packed(run_dir: Path, coll: Collateral, packed) -> None:
    st.write_doc(st.stage_file(run_dir, "pack"), {
        **st.header(st.PACKED_SCHEMA, coll, run_dir, "pack"), **st.packed_to_json(packed)})


def load_packed(run_dir: str | Path, coll: Collateral):
    d = st.read_stage(run_dir, "pack", st.PACKED_SCHEMA, coll)
    return st.packed_from_json(d, str(st.stage_file(run_dir, "pack")))


def run_place(run_dir: str | Path, coll: Collateral, params: PlaceParams | None = None
              ) -> Placement:
    """packed.json -> placement.json (+ ``<app>.place``)."""
    run_dir = Path(run_dir)
    packed = load_packed(run_dir, coll)
    pl = place(packed, coll, params)
    from mapper.checks import check_placed
    check_placed("place", packed, pl, coll)
    _save_placement(run_dir, coll, pl)
    return pl


def _save_placement(run_dir: Path, coll: Collateral, pl: Placement) -> None:
    """placement.json and ``<app>.place`` (block ids of the netlist; an instance the
    netlist lacks, e.g. a delay line, keeps its name)."""
    st.write_doc(st.stage_file(run_dir, "place"), {
        **st.header(st.PLACEMENT_SCHEMA, coll, run_dir, "place"), **st.placement_to_json(pl)})
    nl = Netlist.load(st.stage_file(run_dir, "map"))
    ids = {n: b for n, b in nl.block_ids().items() if n in pl.sites}
    (run_dir / f"{_name(run_dir)}.place").write_text(st.place_text(pl, ids))


def load_placement(run_dir: str | Path, coll: Collateral) -> Placement:
    d = st.read_stage(run_dir, "place", st.PLACEMENT_SCHEMA, coll)
    return st.placement_from_json(d, str(st.stage_file(run_dir, "place")))


def run_route(run_dir: str | Path, coll: Collateral, params: RouterParams | None = None
              ) -> RoutingResult:
    """packed.json + placement.json -> routing.json (+ ``<app>.route``)."""
    run_dir = Path(run_dir)
    packed, pl = load_packed(run_dir, coll), load_placement(run_dir, coll)
    rr = route_design(packed, pl, coll, params)
    from mapper.checks import check_routed
    check_routed("route", packed, rr, coll)
    _save_routing(run_dir, coll, rr)
    return rr


def _save_routing(run_dir: Path, coll: Collateral, rr: RoutingResult) -> None:
    st.write_doc(st.stage_file(run_dir, "route"), {
        **st.header(st.ROUTING_SCHEMA, coll, run_dir, "route"), **st.routing_to_json(rr)})
    (run_dir / f"{_name(run_dir)}.route").write_text(st.route_text(rr, coll))


def load_routing(run_dir: str | Path, coll: Collateral) -> RoutingResult:
    d = st.read_stage(run_dir, "route", st.ROUTING_SCHEMA, coll)
    return st.routing_from_json(d, str(st.stage_file(run_dir, "route")))


@dataclass
class FlowResult:
    """The back end's results for one app: packed design, placement, routing, pipelined
    design, bitstream (``None`` until that stage ran), seconds per stage and the placement
    attempts that failed first."""

    packed: Any
    placement: Placement
    routing: RoutingResult
    pipelined: PipelineResult
    bitstream: Bitstream | None
    seconds: dict[str, float] = field(default_factory=dict)
    #: placements that failed before this one (``{seed, stage, error}``)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    #: the placement exponent sweep (``{alpha, seed, fmax_mhz, registers, kept}``; empty
    #: without :attr:`FlowParams.alphas`)
    alpha_sweep: list[dict[str, Any]] = field(default_factory=list)
    #: register-chain absorption (:func:`absorb_chains`'s report; ``None`` when it was off)
    absorption: dict[str, Any] | None = None


def back_end(netlist: Netlist, coll: Collateral, params: FlowParams | None = None,
             mem_encoder: MemEncoder | None = None) -> FlowResult:
    """pack -> place -> route -> pipeline -> bitstream in memory (no files), timing each
    stage: the same stage functions the ``run_<stage>`` file steps call. ``mem_encoder``
    replaces Lake's MEM config encoder (a fabric with other MEM cores). Errors of each stage
    propagate (``MappingError``, ``PlacementError``, ``RoutingError``, ``ConfigError``,
    ``CollateralError``)."""
    p = params or FlowParams()
    secs: dict[str, float] = {}

    def timed(stage: str, fn: Callable[[], Any]) -> Any:
        t = time.perf_counter()
        out = fn()
        secs[stage] = time.perf_counter() - t
        return out

    if p.absorb_chains:
        _check_absorb(p, coll)
    packed = timed("pack", lambda: pack(netlist, coll, p.pack))
    pl, rr, pr, failed, sweep = timed("place_route_pipeline",
                                      lambda: place_to_pipeline(packed, coll, p))
    absorption = None
    if p.absorb_chains:
        packed, pl, rr, pr, absorption = timed(
            "register_absorption", lambda: absorb_chains(packed, pl, rr, pr, coll, p))
    bs = timed("bitstream", lambda: generate(pr.packed, pl, pr.routing, coll, mem_encoder))
    return FlowResult(packed, pl, rr, pr, bs, secs, failed, sweep, absorption)


def run_pipeline(run_dir: str | Path, coll: Collateral, params: PipelineParams | None = None,
                 attempts: list[dict[str, Any]] | None = None,
                 alpha_sweep: list[dict[str, Any]] | None = None) -> PipelineResult:
    """packed + placement + routing -> pipelined.json, with ``pnr_report.json`` and the
    picture ``pnr.png`` (:mod:`mapper.report`)."""
    run_dir = Path(run_dir)
    packed, pl = load_packed(run_dir, coll), load_placement(run_dir, coll)
    rr = load_routing(run_dir, coll)
    pr = pipeline(packed, pl, rr, coll, params)
    save_pipelined(run_dir, coll, FlowResult(packed, pl, rr, pr, None,
                                             attempts=list(attempts or []),
                                             alpha_sweep=list(alpha_sweep or [])))
    return pr


def save_pipelined(run_dir: str | Path, coll: Collateral, flow: FlowResult) -> None:
    """Write ``flow.pipelined`` (the pipelined design of the run directory's packed design,
    placement and routing, which ``flow`` holds) as pipelined.json, with
    ``pnr_report.json``, ``pnr.png`` and ``timing.png``."""
    from mapper.report import draw, save_report

    run_dir = Path(run_dir)
    st.write_doc(st.stage_file(run_dir, "pipeline"), {
        **st.header(st.PIPELINED_SCHEMA, coll, run_dir, "pipeline"),
        **st.pipelined_to_json(flow.pipelined)})
    save_report(flow, coll, run_dir / "pnr_report.json")
    draw(flow, coll, run_dir / "pnr.png")
    draw(flow, coll, run_dir / "timing.png", critical=True)


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
        _save_packed(run_dir, coll, packed)
        _save_placement(run_dir, coll, pl)
        _save_routing(run_dir, coll, rr)
    save_pipelined(run_dir, coll, FlowResult(packed, pl, rr, pr, None, attempts=list(attempts),
                                             alpha_sweep=list(alpha_sweep), absorption=info))
    return pr


def load_flow(run_dir: str | Path, coll: Collateral) -> FlowResult:
    """The saved back-end results of a run directory (through the pipelining stage)."""
    d = st.read_stage(run_dir, "pipeline", st.PIPELINED_SCHEMA, coll)
    pr = st.pipelined_from_json(d, str(st.stage_file(run_dir, "pipeline")))
    return FlowResult(load_packed(run_dir, coll), load_placement(run_dir, coll),
                      load_routing(run_dir, coll), pr, None)


def run_bitstream(run_dir: str | Path, coll: Collateral) -> Bitstream:
    """pipelined.json -> ``bitstream.json`` and ``<app>.bs`` (``AAAAAAAA DDDDDDDD`` lines)."""
    run_dir = Path(run_dir)
    flow = load_flow(run_dir, coll)
    pr = flow.pipelined
    bs = generate(pr.packed, flow.placement, pr.routing, coll)
    bs.name = _name(run_dir)
    (run_dir / f"{bs.name}.bs").write_text(bs.to_text())
    st.write_doc(st.stage_file(run_dir, "bitstream"),
                 {**bs.to_json(), **st.header("mapper.bitstream/1", coll, run_dir, "bitstream")})
    return bs


def load_bitstream(run_dir: str | Path, coll: Collateral) -> Bitstream:
    d = st.read_stage(run_dir, "bitstream", "mapper.bitstream/1", coll)
    return Bitstream.from_json(d, str(st.stage_file(run_dir, "bitstream")))


# ---------------------------------------------------------------------------- sim
@dataclass
class SimOptions:
    """Options of the sim stage: ``image`` (a shipped scikit-image sample,
    :func:`mapper.images.shipped_samples`, or an image file path; read grey or colour by the
    app's input convention, :func:`mapper.apps.load_app_image`) and the Verilator build/run
    options. A DNN layer takes ``image`` as its first input's channels (``"random"``: a seeded
    random tensor, as every other input) and ``tensor_seed`` for its random tensors
    (:func:`mapper.apps.dnn.layer_inputs`)."""

    image: str = "camera"
    sim: Any = None
    tensor_seed: int = 0


@dataclass
class StreamPlan:
    """Top-port stimulus and sampling for one run: ``inputs`` port -> values ``[T]``,
    ``outputs``: [(io_out instance, port, cycles ``[n]``, y ``[n]``, x ``[n]``)] (only events
    inside the output box), ``cycles``: ``T`` (last sampled cycle + 1), ``first_output``:
    the first sampled cycle, ``box``: the (first) output's domain ``(x0, x1, y0, y1)``;
    ``stage_of``: io_out instance -> the output stage it streams, ``boxes``: output stage ->
    its domain (several outputs)."""

    inputs: dict[str, np.ndarray]
    outputs: list[tuple[str, str, np.ndarray, np.ndarray, np.ndarray]]
    cycles: int
    first_output: int
    box: tuple[int, int, int, int]
    stage_of: dict[str, str] = field(default_factory=dict)
    boxes: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)

    def assemble(self, samples: dict[str, np.ndarray], app: str = "") -> dict[str, np.ndarray]:
        """Output stage -> its image (int64 ``[y, x]`` over its box) from ``samples`` (top
        port -> values per cycle). Raises :class:`SimulationError` when a pixel is never
        sampled."""
        res, seen = {}, {}
        for o, (x0, x1, y0, y1) in self.boxes.items():
            res[o] = np.zeros((y1 - y0, x1 - x0), np.int64)
            seen[o] = np.zeros(res[o].shape, bool)
        for (name, port, cyc, ys, xs) in self.outputs:
            o = self.stage_of[name]
            x0, _, y0, _ = self.boxes[o]
            res[o][ys - y0, xs - x0] = samples[port][cyc]
            seen[o][ys - y0, xs - x0] = True
        for o, ok in seen.items():
            if not ok.all():
                raise SimulationError(f"{app}: {int((~ok).sum())} pixels of output {o} were "
                                      f"never sampled (the output programs do not cover the "
                                      f"domain {self.boxes[o]})")
        return res


@dataclass
class AppRun:
    """Everything one run produced (see :func:`run_app`)."""

    app: str
    image: np.ndarray
    output: np.ndarray
    golden_numpy: np.ndarray
    golden_halide: np.ndarray
    flow: FlowResult
    harness: Any
    sim: Any
    plan: StreamPlan
    report: dict[str, Any]
    out_dir: Path
    coll: Collateral
    #: every output by stage name (``output`` is the first), as simulated
    outputs: dict[str, np.ndarray] = field(default_factory=dict)


def io_port(tag: str, direction: str, xy: tuple[int, int], *, width: int = 16) -> str:
    """Top-level port of an IO instance with PnR ``tag`` (``I`` data IO of ``width`` bits,
    the design's data width; ``i`` 1-bit) placed on IO tile ``xy``; ``direction`` ``in``
    (``glb2io``) or ``out`` (``io2glb``): ``glb2io_<width>_X<xx>_Y<yy>`` (the IO core's
    external ports, :func:`canal.cores.io_core`)."""
    w = width if tag == "I" else 1
    pre = "glb2io" if direction == "in" else "io2glb"
    return f"{pre}_{w}_X{xy[0]:02X}_Y{xy[1]:02X}"


def stream_plan(flow: FlowResult, images: dict[str, np.ndarray],
                primary: str | None = None) -> StreamPlan:
    """Stimulus and sampling of the top ports for a placed and pipelined design (module
    docstring). ``primary``: the output stage whose box is :attr:`StreamPlan.box` (default:
    the first io_out's). The width of each IO instance's top port (and the mask of its stimulus) is
    the width of the net it drives or reads in the packed design, i.e. of the routing graph
    it was routed on: the design's data width for a data IO. Raises
    :class:`SimulationError` when an IO instance lacks its program or an input image is
    missing."""
    packed = flow.pipelined.packed
    sites = flow.placement.sites
    io_width: dict[str, int] = {}
    for net in packed.nets:
        for inst_name, _port in (net.source, *net.sinks):
            io_width.setdefault(inst_name, int(net.width))
    inputs: dict[str, np.ndarray] = {}
    outs: list[tuple[str, str, np.ndarray, np.ndarray, np.ndarray]] = []
    stage_of: dict[str, str] = {}
    boxes: dict[str, tuple[int, int, int, int]] = {}
    for name, inst in packed.instances.items():
        if inst.kind not in ("io_in", "io_out"):
            continue
        c = inst.config
        if "program" not in c:
            raise SimulationError(f"IO instance {name} has no stream 'program' in its config; "
                                  f"only DSL apps (memory-mapped by mapper.memory) can be "
                                  f"simulated")
        cyc, (i0, i1) = stream_events(c["program"])
        u, lane = int(c.get("unroll", 1)), int(c.get("lane", 0))
        bits = io_width.get(name, 16 if inst.tag == "I" else 1)
        port = io_port(inst.tag, "in" if inst.kind == "io_in" else "out", sites[name],
                       width=bits)
        if inst.kind == "io_in":
            img = images.get(c["input"])
            if img is None:
                raise SimulationError(f"IO {name}: no image for input '{c['input']}'")
            img = ir.pad_image(np.asarray(img), tuple(c.get("pad", ir.NO_PAD)))  # repeat-edge
            h, w = img.shape
            x, y = u * i0 + lane, i1
            ok = (x < w) & (y < h)
            vals = np.zeros(int(cyc.max()) + 1, np.int64)
            vals[cyc[ok]] = img[y[ok], x[ok]].astype(np.int64) & ((1 << bits) - 1)
            inputs[port] = vals
        else:
            x0, x1, y0, y1 = (int(v) for v in c["box"])
            stage = str(c.get("stage", name))
            stage_of[name], boxes[stage] = stage, (x0, x1, y0, y1)
            x, y = u * (x0 // u + i0) + lane, y0 + i1
            keep = (x >= x0) & (x < x1) & (y < y1)
            outs.append((name, port, cyc[keep], y[keep], x[keep]))
    if not outs:
        raise SimulationError(f"design {packed.name}: no output stream (io_out instance)")
    if primary is not None and primary not in boxes:
        raise SimulationError(f"design {packed.name}: no output stream of stage {primary}; "
                              f"streamed: {sorted(boxes)}")
    box = boxes[primary if primary is not None else stage_of[outs[0][0]]]
    cycles = max(int(o[2].max()) for o in outs if len(o[2])) + 1
    first = min(int(o[2].min()) for o in outs if len(o[2]))
    for p, v in inputs.items():
        if len(v) < cycles:
            inputs[p] = np.concatenate([v, np.zeros(cycles - len(v), np.int64)])
    return StreamPlan(inputs, outs, cycles, first, box, stage_of, boxes)


def first_mismatch(got: np.ndarray, want: np.ndarray, box: tuple[int, int, int, int]
                   ) -> tuple[int, int, int, int] | None:
    """``(x, y, expected, got)`` of the first differing pixel in raster order (image
    coordinates of the output domain ``box``), or ``None`` when equal."""
    diff = np.argwhere(got.astype(np.int64) != want.astype(np.int64))
    if not len(diff):
        return None
    r, c = (int(v) for v in diff[0])
    return (box[0] + c, box[2] + r, int(want[r, c]), int(got[r, c]))


#: the ulp distance :func:`bf16_ulp_distance` gives a NaN next to a number (more than any two
#: finite bf16 values are apart)
NAN_ULP_DISTANCE = 1 << 16


def bf16_ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise distance in bf16 ulps of two arrays of bf16 encodings (the low 16 bits of
    each element): the difference of their ordered integers (an encoding with the sign bit
    set maps to ``-(e & 0x7FFF)``, so ``+0`` and ``-0`` are 0 apart, adjacent values 1, and
    the count crosses binades and zero). Two NaNs are 0 apart, a NaN and a number
    :data:`NAN_ULP_DISTANCE`. Shapes broadcast; returns int64."""
    def ordered(e: np.ndarray) -> np.ndarray:
        e = np.asarray(e).astype(np.int64) & 0xFFFF
        return np.where(e & 0x8000, -(e & 0x7FFF), e)

    def nan(e: np.ndarray) -> np.ndarray:
        e = np.asarray(e).astype(np.int64) & 0x7FFF
        return e > 0x7F80

    d = np.abs(ordered(a) - ordered(b))
    na, nb = nan(a), nan(b)
    return np.where(na & nb, 0, np.where(na | nb, NAN_ULP_DISTANCE, d))


def check_output(app: str, got: np.ndarray, goldens: dict[str, np.ndarray],
                 box: tuple[int, int, int, int], where: str | Path = "",
                 tolerance_ulp: dict[str, int] | None = None) -> dict[str, dict[str, int]]:
    """Comparison of the simulated output image with every golden model: bit for bit, or,
    for a golden named in ``tolerance_ulp`` (golden name -> ulps; only for an output of bf16
    encodings), within that many bf16 ulps (:func:`bf16_ulp_distance`) at every pixel: the
    stated bound of an app whose decompositions differ from the golden's correctly rounded
    operations (:data:`mapper.apps.HALIDE_TOLERANCE_ULP`).

    ``box`` = output domain ``(x0, x1, y0, y1)`` (image coordinates of ``got[0, 0]`` are
    ``(x0, y0)``). Returns, per golden with a tolerance, ``{"tolerance_ulp", "max_ulp",
    "differing_pixels", "pixels"}`` (the measured agreement). Raises :class:`SimulationError`
    (one line) naming the golden model, the number of differing pixels and the first one
    ``(x, y, expected, got)`` in raster order; with a tolerance, the maximum ulp difference,
    the number of pixels beyond it and the first of those; or a shape mismatch."""
    tolerance_ulp = tolerance_ulp or {}
    stats: dict[str, dict[str, int]] = {}
    suffix = f" (files in {where})" if where else ""
    for gname, g in goldens.items():
        if g.shape != got.shape:
            raise SimulationError(f"{app}: simulated output is {got.shape[1]}x{got.shape[0]}, "
                                  f"the {gname} golden is {g.shape[1]}x{g.shape[0]}")
        if gname in tolerance_ulp:
            tol = int(tolerance_ulp[gname])
            d = bf16_ulp_distance(got, g)
            mx, n = int(d.max(initial=0)), int((d > 0).sum())
            stats[gname] = {"tolerance_ulp": tol, "max_ulp": mx, "differing_pixels": n,
                            "pixels": int(d.size)}
            if mx > tol:
                r, c = (int(v) for v in np.argwhere(d > tol)[0])
                raise SimulationError(
                    f"{app}: RTL output differs from the {gname} golden by up to {mx} bf16 "
                    f"ulp, beyond its stated tolerance of {tol} ulp at {int((d > tol).sum())} "
                    f"pixel(s) ({n} differ); first at pixel (x={box[0] + c}, y={box[2] + r}): "
                    f"expected 0x{int(g[r, c]) & 0xFFFF:04X}, got "
                    f"0x{int(got[r, c]) & 0xFFFF:04X} ({int(d[r, c])} ulp){suffix}")
            continue
        mm = first_mismatch(got, g, box)
        if mm is not None:
            n = int((got.astype(np.int64) != g.astype(np.int64)).sum())
            x, y, e, v = mm
            raise SimulationError(f"{app}: RTL output differs from the {gname} golden at {n} "
                                  f"pixel(s); first at pixel (x={x}, y={y}): expected {e}, "
                                  f"got {v}" + suffix)
    return stats


def proved_flow(run_dir: Path, coll: Collateral, say: Step, secs: dict[str, float]):
    """``(FlowResult with its bitstream, proof)``: the run's pipelined design and bitstream,
    the bitstream proved to realise the routing with pipelining's latencies
    (:func:`mapper.verify.verify`; ``secs['proof']``)."""
    flow = load_flow(run_dir, coll)
    flow.bitstream = load_bitstream(run_dir, coll)
    say("prove bitstream")
    t = time.perf_counter()
    proof = verify(flow.bitstream.pairs(), flow.pipelined, coll)
    secs["proof"] = time.perf_counter() - t
    return flow, proof


def simulate_on_rtl(run_dir: Path, coll: Collateral, flow: FlowResult,
                    inputs: dict[str, np.ndarray], ports: list[str], cycles: int,
                    opts: SimOptions, say: Step, secs: dict[str, float], name: str):
    """Build (or reuse) the design's Verilator harness and run ``flow``'s bitstream on it for
    ``cycles`` cycles with ``inputs`` (top port -> words per cycle), sampling ``ports``;
    ``secs`` gets ``verilator_build`` and ``simulation``. Returns ``(harness, SimRun)``.
    Raises :class:`SimulationError` when a config register does not read back its bits."""
    from mapper.simulate import SimParams, build_harness, run_harness

    sim_params = opts.sim or SimParams()
    say("verilator build")
    harness = build_harness(coll.root, sim_params, progress=say)
    secs["verilator_build"] = harness.build_seconds
    say("simulate")
    sim = run_harness(harness, flow.bitstream.pairs(), inputs, ports, cycles, run_dir,
                      sim_params)
    secs["simulation"] = sim.seconds
    if sim.readback_mismatches:
        a, e, g = sim.readback_mismatches[0]
        raise SimulationError(f"{name}: config read-back differs at "
                              f"{len(sim.readback_mismatches)} address(es); first: address "
                              f"{a:08X} wrote {e:08X}, read {g:08X} (a config register that "
                              f"does not hold its bits)")
    return harness, sim


def run_sim(run_dir: str | Path, coll: Collateral, opts: SimOptions | None = None,
            step: Step | None = None, seconds: dict[str, float] | None = None) -> AppRun:
    """bitstream + pipelined design -> Verilator simulation of the design's RTL on the image,
    bit-exact comparison with both golden models (the numpy interpreter of the IR and the
    same algorithm in real Halide; for an app with a stated bound,
    :data:`mapper.apps.HALIDE_TOLERANCE_ULP`, its BFloat16 outputs match Halide within that
    many bf16 ulps and ``run_report.json`` gets ``halide_ulp``: output -> tolerance, maximum
    measured, differing pixels), output pictures and ``run_report.json``. Raises
    :class:`SimulationError` naming the first mismatching pixel and the golden model."""
    from mapper.apps import (HALIDE_TOLERANCE_ULP, app_images, build_app, display_image,
                             load_app_image, lower_app)
    from mapper.halide_export import run_halide_outputs
    from mapper.images import save_comparison, save_png
    from mapper.interp import run_outputs
    say = step or (lambda _m: None)
    opts = opts or SimOptions()
    run_dir = Path(run_dir)
    app = read_app(run_dir)
    if app.get("kind") == "dnn":
        from mapper.dnn_array import run_layer_sim
        return run_layer_sim(run_dir, coll, app, opts, say, seconds)
    if app.get("kind") != "dsl":
        raise SimulationError(f"{app['name']}: only DSL apps can be simulated (a CoreIR file "
                              f"has no stream schedule and no golden); use `cgra run <app>` "
                              f"with one of the shipped apps")
    ap = AppParams(**app["params"])
    secs = dict(seconds or {})
    flow, proof = proved_flow(run_dir, coll, say, secs)
    dsl_p = build_app(ap.app, ap.width, ap.height, ap.unroll)
    source = load_app_image(dsl_p, opts.image, (ap.height, ap.width))
    images = app_images(dsl_p, source)  # planes / mosaic / bf16 encodings by convention
    img = images[dsl_p.inputs[0].name] if dsl_p.image != "grey" else source
    plan = stream_plan(flow, images, dsl_p.output.name)
    harness, sim = simulate_on_rtl(run_dir, coll, flow, plan.inputs,
                                   [o[1] for o in plan.outputs], plan.cycles, opts, say, secs,
                                   app["name"])
    res = plan.assemble(sim.outputs, app["name"])
    say("golden models")
    t = time.perf_counter()
    ir_p = lower_app(ap.app, ap.width, ap.height, ap.unroll)
    g_np_all = run_outputs(ir_p, images)
    secs["golden_numpy"] = time.perf_counter() - t
    t = time.perf_counter()
    g_hl_all = run_halide_outputs(dsl_p, images)
    secs["golden_halide"] = time.perf_counter() - t
    outs: dict[str, np.ndarray] = {}
    for o in ir_p.outputs:
        outs[o] = res[o].astype(np.uint16)
        if g_np_all[o].dtype == np.int16:
            outs[o] = outs[o].view(np.int16)
    primary = ir_p.output
    out_img, g_np, g_hl = outs[primary], g_np_all[primary], g_hl_all[primary]
    save_png(display_image(dsl_p, out_img), run_dir / f"{app['name']}.png")
    for o in ir_p.outputs if ir_p.more_outputs else ():     # several outputs: one PNG each
        save_png(display_image(dsl_p, outs[o], o), run_dir / f"{app['name']}_{o}.png")
    save_png(img, run_dir / "input.png")
    save_comparison(img, display_image(dsl_p, out_img), display_image(dsl_p, g_np),
                    run_dir / "compare.png",
                    title=f"{app['name']} on {coll.name} ({opts.image})")
    # the numpy interpreter is the IR's semantics: bit for bit; Halide within the app's
    # stated bound on its BFloat16 outputs, if it states one (mapper.apps.HALIDE_TOLERANCE_ULP)
    tol = HALIDE_TOLERANCE_ULP.get(ap.app)
    float_out = {f.name for f in dsl_p.outputs if f.type.is_float}
    halide_ulp: dict[str, dict[str, int]] = {}
    for o in ir_p.outputs:
        label = app["name"] if not ir_p.more_outputs else f"{app['name']} output {o}"
        stats = check_output(label, outs[o], {"numpy interpreter": g_np_all[o],
                                              "Halide": g_hl_all[o]},
                             plan.boxes.get(o, plan.box), run_dir,
                             {"Halide": tol} if tol is not None and o in float_out else None)
        if "Halide" in stats:
            halide_ulp[o] = stats["Halide"]
    rep = run_report(app, opts, coll, flow, harness, sim, plan, secs, out_img)
    if halide_ulp:        # match.halide = within the tolerance; the measured agreement:
        rep["halide_ulp"] = halide_ulp
    if ir_p.more_outputs:
        rep["outputs"] = {o: list(a.shape) for o, a in outs.items()}
    rep["bitstream_proof"] = proof.to_dict()
    st.write_doc(st.stage_file(run_dir, "sim"),
                 {**rep, **st.header(RUN_SCHEMA, coll, run_dir, "sim")})
    return AppRun(app["name"], img, out_img, g_np, g_hl, flow, harness, sim, plan, rep, run_dir,
                  coll, outs)


def run_report(app: dict[str, Any], opts: SimOptions, coll: Collateral, flow: FlowResult,
               harness, sim, plan: StreamPlan, secs: dict[str, float],
               out_img: np.ndarray) -> dict[str, Any]:
    """The ``run_report.json`` document (schema :data:`RUN_SCHEMA`)."""
    from mapper.report import report as pnr_report

    pr = pnr_report(flow, coll)
    ideal = app.get("ideal") or {}
    ideal_first = int(ideal.get("first_output_cycle", 0))
    ap = app["params"]
    return {
        "schema": RUN_SCHEMA,
        "app": app["name"], "design": str(coll.root), "seed": flow.placement.seed,
        "image": opts.image, "size": [ap["width"], ap["height"]], "unroll": ap["unroll"],
        "output_shape": list(out_img.shape),
        "match": {"numpy": True, "halide": True},
        "resources": pr["resources"],
        "pes_per_stage": app.get("pes_per_stage", {}),
        "wirelength_total": pr["wirelength_total"],
        "wirelength_segments": pr["wirelength_segments"],
        "routing_iterations": pr["routing_iterations"],
        "registers": pr["registers"],
        "timing": {k: v for k, v in pr["timing"].items() if k != "critical_path"},
        "cycles": {"stream": plan.cycles, "ideal_stream": ideal.get("cycles"),
                   "total_clock_edges": sim.total_cycles,
                   "config_writes": len(flow.bitstream.pairs())},
        "latency": {"first_output_cycle": plan.first_output, "ideal_first_output_cycle":
                    ideal_first, "extra_cycles": plan.first_output - ideal_first,
                    "per_output": pr["extra_output_latency_cycles"]},
        "buffers": app.get("buffers", []),
        "verilator": {"key": harness.key, "cached": harness.cached,
                      "build_seconds": round(harness.build_seconds, 3)},
        "stage_seconds": {k: round(v, 4) for k, v in secs.items()},
    }


# ---------------------------------------------------------------------------- chain
@dataclass
class RunParams:
    """One end-to-end run: the app and its mapping options (:class:`AppParams`), the design
    directory, the run directory ``out`` (``None`` = ``build/apps/<app>``), the back-end
    parameters (placement ``seed`` is ``flow.place.seed``), the sim options, and
    ``resume_from``: the first stage to run (earlier stages' files are reused, checked)."""

    app: AppParams
    design: str | Path
    out: str | Path | None = None
    flow: FlowParams = field(default_factory=FlowParams)
    sim: SimOptions = field(default_factory=SimOptions)
    resume_from: str = "map"


def run_stages(p: RunParams, until: str = "sim", step: Step | None = None) -> Any:
    """Run the stages from ``p.resume_from`` through ``until`` (module docstring), each
    reading the previous stage's file; returns the last stage's result (an :class:`AppRun`
    for ``sim``). Raises the error of the failing stage (``MappingError``,
    ``PlacementError``, ``RoutingError``, ``CollateralError``, ``ConfigError``,
    ``SimulationError``)."""
    say = step or (lambda _m: None)
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
    secs: dict[str, float] = {"load_collateral": time.perf_counter() - t0}
    if p.flow.absorb_chains:
        _check_absorb(p.flow, coll)
    stages: dict[str, Callable[[], Any]] = {
        "map": lambda: run_map(run_dir, coll, p.app),
        "pack": lambda: run_pack(run_dir, coll, p.flow.pack),
        "place": lambda: run_place(run_dir, coll, p.flow.place),
        "route": lambda: run_route(run_dir, coll, p.flow.route),
        "pipeline": lambda: run_pipeline(run_dir, coll, p.flow.pipeline),
        "bitstream": lambda: run_bitstream(run_dir, coll),
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
            # an exponent sweep, once per exponent, the best re-run last so its files stay
            def once_files(q: FlowParams, sweep: list[dict[str, Any]] | None = None) -> Once:
                def once(seed: int, stage: list[str], tried: list[dict[str, Any]]):
                    pp = dataclasses.replace(q.place, seed=seed)
                    stage[0], t = "place", time.perf_counter()
                    say("place" if not tried else f"place (seed {seed})")
                    run_place(run_dir, coll, pp)
                    secs["place"] = time.perf_counter() - t
                    stage[0], t = "route", time.perf_counter()
                    say("route")
                    run_route(run_dir, coll, q.route)
                    secs["route"] = time.perf_counter() - t
                    stage[0], t = "pipeline", time.perf_counter()
                    say("pipeline")
                    pr = run_pipeline(run_dir, coll, q.pipeline, tried, sweep)
                    secs["pipeline"] = time.perf_counter() - t
                    return pr, pr
                return once

            def close(q: FlowParams):
                res, pr, failed, seed, on_disk = _attempts(q, once_files(q), say)
                if not on_disk:        # the kept attempt is not the last run: run it again
                    res, pr = once_files(q)(seed, ["place"], failed)
                return res, pr, failed, seed

            q, out, failed, table = _sweep(p.flow, close, say)
            if table:
                say(f"keeping alpha {q.place.alpha:g}")
                if table[-1]["kept"]:       # the files on disk are the kept result's
                    out = run_pipeline(run_dir, coll, q.pipeline, failed, table)
                else:
                    out, _pr = once_files(q, table)(q.place.seed, ["place"], failed)
            if p.flow.absorb_chains:
                t = time.perf_counter()
                out = absorb_files(run_dir, coll, p.flow, failed, table, say)
                secs["register_absorption"] = time.perf_counter() - t
            k = names.index("pipeline") + 1
            continue
        if name != "sim":
            say(name)
        t = time.perf_counter()
        out = stages[name]()
        secs[name] = time.perf_counter() - t
        k += 1
    return out


def run_app(p: RunParams, step: Step | None = None) -> AppRun:
    """Every stage from ``p.resume_from`` to the simulation (:func:`run_stages`)."""
    return run_stages(p, "sim", step)


__all__ = ["AppMapping", "AppParams", "AppRun", "FlowParams", "back_end", "FlowResult", "RunParams", "SimOptions", "StreamPlan", "bf16_ulp_distance", "check_capacity", "check_output",
           "first_mismatch", "io_port", "load_flow", "map_app", "run_app", "run_stages", "run_bitstream",
           "run_map", "run_pack", "run_pipeline", "run_place", "run_route", "run_sim",
           "stream_plan"]
