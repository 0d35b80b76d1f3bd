"""The mapper's commands: ``cgra map``, the back-end stages and ``cgra run``.

Each command is a thin wrapper of a :mod:`mapper.flow` function; every stage reads the
previous stage's file from the run directory (``build/apps/<app>`` by default) and writes
its own (formats: :mod:`mapper.stages`)::

    cgra map <app> --design build/small [--out DIR]    netlist.json, app.json, <app>.packed
    cgra pack DIR                                      packed.json
    cgra place DIR [--seed N] [--alpha A] [--placer P]  placement.json, <app>.place
    cgra route DIR                                     routing.json, <app>.route
    cgra pipeline DIR [--fmax MHZ]                     pipelined.json, pnr_report.json, pnr.png,
                                                       timing.png
    cgra bitstream DIR                                 bitstream.json, <app>.bs
    cgra verify DESIGN BITSTREAM [--netlist PIPELINED] prove the bitstream (Canal SMT model)
    cgra sim DIR [--image camera|astronaut|coffee|PATH] output PNGs, run_report.json
    cgra run <app> --design build/small [--from STAGE] [--fmax MHZ] [--alpha-sweep 1,1.5,2]
             [--image PATH] [--width W --height H | --size N]
                                                       all of the above
    cgra run --list                                    the apps and the design each fits

``--design`` of a stage command defaults to the design ``app.json`` names. ``<app>`` is a
shipped DSL app (:data:`mapper.apps.APPS`) or the path of a CoreIR JSON file (map .. bitstream
only: a CoreIR file has no stream schedule to simulate).
"""
from __future__ import annotations

import inspect
import math
import time
from pathlib import Path
from typing import Any, Callable

import click

from cgra.errors import CollateralError, ConfigError
from cgra.outputs import check_output_dir, claim_output_dir
from mapper.mapping.memory import DEFAULT_SR_THRESHOLD
from mapper.mapping.compute import decomposition_note
from mapper.stages import ORDER
from cgra.errors import SimulationError
from mapper import stages as st
from mapper.sim.glb import glb_note
from mapper.sim.verilator import SimParams, check_hierarchy
from mapper.backend.pipeline import BROADCAST_ON_MISS, PipelineParams
from mapper.backend.place import PlaceParams
from mapper.backend.bitstream import GATE_WHAT
from mapper.backend.route import POWER_AWARE_COST, RouterParams
from mapper.collateral import load_collateral
from mapper.dataflow.apps import ARRAY_PROGRAMS, TOLERANCES
from mapper.dataflow.array_run import run_program
from mapper.stages import open_design
import json
import numpy as np


def _progress(label: str):
    """A rich progress display (on stderr) and a ``step(msg)`` callback that logs the time
    each step took."""
    from rich.console import Console  # deferred: loads rich only when called
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn  # deferred: loads rich only when called

    from cgra.interrupt import raise_if_terminated  # deferred: loads cgra.interrupt only when called

    console = Console(stderr=True)
    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                        console=console, transient=True)
    task = progress.add_task(f"{label}: start", total=None)
    last: list[Any] = [time.perf_counter(), None]

    def step(msg: str) -> None:
        raise_if_terminated()
        now = time.perf_counter()
        stage = msg.split(" (")[0].split(":")[0]      # "compiling C++ (3/30 objects)"
        if last[1] is not None and stage != last[1]:
            console.log(f"{label}: {last[1]} done in {now - last[0]:.2f} s")
            last[0] = now
        if stage != last[1]:
            last[1] = stage
        progress.update(task, description=f"{label}: {msg}")
    return progress, step


def _design_opt(required: bool = False) -> Callable:
    # no `default` when required: click >= 8.3 takes an explicit default=None as a given
    # value, and `cgra run gaussian` reached the command with design None (a traceback)
    extra: dict[str, Any] = {} if required else {"default": None}
    return click.option("--design", required=required, **extra,
                        type=click.Path(file_okay=False, path_type=Path),
                        help="design directory written by `cgra rtl` (e.g. build/small)"
                        + ("" if required else "; default: the one the run was mapped on"))


_RUN_DIR = click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))


def _layer_opts(fn: Callable) -> Callable:
    """``--channels``, ``--block``, ``--loop-cycles``, ``--double-buffer``, ``--flatten``: a
    DNN layer's sizes and schedule."""
    fn = click.option("--flatten/--no-flatten", "flatten", default=True, show_default=True,
                      help="DNN layers: when a reduction stalls (a pass shorter than the "
                           "loop), run its tiles inside the reduction counters if that "
                           "shortens the stall (loop perfection)")(fn)
    fn = click.option("--double-buffer/--no-double-buffer", "double_buffer", default=True,
                      show_default=True,
                      help="DNN layers: operand MEMs hold two halves of one iteration's "
                           "share, reloaded behind the compute (else each holds its whole "
                           "box, loaded before the compute)")(fn)
    fn = click.option("--loop-cycles", "loop_cycles", default=12, show_default=True,
                      type=click.IntRange(1, 4096),
                      help="DNN layers: cycles an accumulation MEM's read-add-write loop may "
                           "take on the array (read word to the write of its sum); a pass "
                           "over fewer pixel steps stalls to fit")(fn)
    fn = click.option("--block", default=None, type=click.IntRange(1, 64),
                      help="DNN layers: channels in parallel, in and out (gemm: the output "
                           "tile side); default the layer's (8, the paper's)")(fn)
    return click.option("--channels", default=None, type=click.IntRange(1, 4096),
                        help="DNN layers: input = output channels (gemm: the reduction k); "
                             "default the layer's")(fn)


def _side(app: str, size: int | None, default: int = 64) -> int:
    """The input side: ``size``, else a DNN layer's default (mapper.apps.dnn.DEFAULT_SIZE),
    else ``default``."""
    from mapper.apps.dnn import DEFAULT_SIZE  # deferred: loads mapper.apps, mapper.frontend, mapper.images only when called
    return size if size is not None else DEFAULT_SIZE.get(app, default)


#: the largest --width / --height (mapper.params.RANGES)
_MAX_SIDE = 4096


def check_square(size: int, width: int | None, height: int | None) -> None:
    """``--size N`` is the square shorthand for ``--width N --height N``: a ``--width`` or
    ``--height`` given with it must equal ``N``, else :class:`ConfigError` naming both."""
    bad = [f"--{n} {v}" for n, v in (("width", width), ("height", height))
           if v is not None and v != size]
    if bad:
        raise ConfigError(f"--size {size} and {' '.join(bad)} disagree: --size N is the "
                          f"square shorthand for --width N --height N; give --size alone "
                          f"or --width and --height")


def run_image_size(app: str, image: str, size: int | None, width: int | None,
                   height: int | None, unroll: int = 1,
                   max_cycles: int | None = None) -> tuple[int, int, str | None]:
    """The input ``(width, height)`` in pixels of ``cgra run`` and a note to report (or
    ``None``).

    ``--size N`` is the square shorthand: with ``--width``/``--height`` too they must equal
    ``N``. A DNN layer takes a square input (``--size``, default its own,
    :data:`mapper.apps.dnn.DEFAULT_SIZE`; ``--width`` = ``--height`` are accepted). For an app,
    a side not given is the image file's own (``--image path``: its shape, cropped to at most
    4096 per side and to the simulated-cycle budget ``max_cycles``, default
    :data:`mapper.params.DEFAULT_MAX_SIM_CYCLES`, at ``unroll`` pixels per cycle; the note
    says so), else 64 (a scikit-image sample is cropped).

    Raises :class:`ConfigError` for an inconsistent combination and
    :class:`~cgra.errors.MappingError` for an ``--image`` that is neither a sample nor a
    readable image file, or smaller than the sides given (before any work: the sim stage
    would refuse it after place and route)."""
    from mapper.dnn.array import is_layer  # deferred: loads canal.smt, lake.model, mapper.apps, 8 more only when called
    from mapper.images import check_fits, image_shape, is_sample  # deferred: loads mapper.images only when called
    from mapper.params import DEFAULT_MAX_SIM_CYCLES  # deferred: loads mapper.params only when called

    if size is not None:
        check_square(size, width, height)
        return size, size, None
    if is_layer(app):
        if width is not None and height is not None and width != height:
            raise ConfigError(f"--width {width} --height {height}: DNN layer {app} takes a "
                              f"square input; give --size N (or equal --width and --height)")
        side = _side(app, width if width is not None else height)
        return side, side, None
    ih, iw = image_shape(image)
    if is_sample(image) or (width is not None and height is not None):
        w = width if width is not None else 64
        h = height if height is not None else 64
        check_fits(image, (ih, iw), w, h)
        return w, h, None
    check_fits(image, (ih, iw), width or 1, height or 1)
    why: list[str] = []
    w = width if width is not None else min(iw, _MAX_SIDE)
    h = height if height is not None else min(ih, _MAX_SIDE)
    if (width is None and iw > _MAX_SIDE) or (height is None and ih > _MAX_SIDE):
        why.append(f"at most {_MAX_SIDE} per side")
    cycles = max_cycles if max_cycles is not None else DEFAULT_MAX_SIM_CYCLES
    budget = cycles * max(1, unroll)                  # pixels within the cycle budget
    if w * h > budget:
        if width is None and height is None:          # both sides shrink, the image's aspect
            f = math.sqrt(budget / (iw * ih))
            w, h = min(w, max(1, int(iw * f))), min(h, max(1, int(ih * f)))
            while w * h > budget:
                h -= 1
        elif height is None:
            h = max(1, budget // w)
        elif width is None:
            w = max(1, budget // h)
        why.append(f"width x height within the simulation budget of {cycles} cycles at "
                   f"{max(1, unroll)} pixels per cycle (--max-cycles)")
    if width is not None or height is not None:
        why.append(f"the {'width' if width is not None else 'height'} given")
    if (w, h) == (iw, ih):
        return w, h, f"image {image}: {iw}x{ih} (width x height), its own size"
    return w, h, (f"image {image}: {iw}x{ih} (width x height), cropped to {w}x{h} "
                  f"({'; '.join(why)})")


# ---------------------------------------------------------------------------- map
@click.command("map")
@click.argument("app")
@_design_opt(required=True)
@click.option("--out", "out", type=click.Path(path_type=Path), default=None,
              help="run directory (default build/apps/<app>)")
@click.option("--size", default=None, type=click.IntRange(1, 4096),
              help="square image side (pixels): --width N --height N")
@click.option("--width", default=None, type=click.IntRange(1, 4096),
              help="image width (pixels, DSL apps)  [default: 64]")
@click.option("--height", default=None, type=click.IntRange(1, 4096),
              help="image height (pixels, DSL apps)  [default: 64]")
@click.option("--unroll", default=1, show_default=True, help="output pixels per cycle")
@click.option("--threshold", default=DEFAULT_SR_THRESHOLD, show_default=True,
              help="shift-register threshold (cycles)")
@click.option("--vectors", default=1000, show_default=True,
              help="random vectors per kernel for the equivalence check (0 = skip)")
@click.option("--seed", default=0, show_default=True, help="seed of the random vectors")
@_layer_opts
def map_cmd(app: str, design: Path, out: Path | None, size: int | None, width: int | None,
            height: int | None, unroll: int, threshold: int, vectors: int, seed: int,
            channels: int | None, block: int | None, loop_cycles: int,
            double_buffer: bool, flatten: bool) -> None:
    """Map APP (a shipped app name, a DNN layer or a CoreIR JSON file) onto a generated
    design."""
    from rich.console import Console  # deferred: loads rich only when called
    from rich.table import Table  # deferred: loads rich only when called

    from mapper.params import AppParams, default_run_dir  # deferred: loads mapper.params only when called
    from mapper.flow import run_map  # deferred: loads canal.smt, lake.model, mapper.apps, 10 more only when called

    from mapper.dnn.array import is_layer  # deferred: loads canal.smt, lake.model, mapper.apps, 8 more only when called

    if size is not None:
        check_square(size, width, height)
    if size is not None or is_layer(app):
        width = height = _side(app, size)
    width, height = (width if width is not None else 64), (height if height is not None else 64)
    out = out if out is not None else default_run_dir(app)
    params = AppParams(app, width, height, unroll, threshold, vectors, seed, channels, block,
                       loop_cycles, double_buffer, flatten)
    params.validate()                   # before the run directory is touched
    with claim_output_dir(out, "--out"):
        coll = load_collateral(design)
        res = run_map(out, coll, params)
    console = Console()
    c = res.counts()
    table = Table(title=f"cgra map {res.name} onto {design}")
    table.add_column("stage")
    table.add_column("time (ms)", justify="right")
    table.add_column("result")
    for step, sec in res.times.items():
        what = ""
        if step == "memory mapping" and res.memory is not None:
            mc = res.memory.counts()
            what = f"{mc['mem']} MEM, {mc['reg']} registers, {mc['io']} IO"
        elif step == "compute mapping":
            ops = sum(m.prepared.num_ops() for m in res.kernels.values())
            what = f"{c['pe']} PE for {ops} IR ops in {len(res.kernels)} kernels"
        elif step == "equivalence check":
            what = f"{len(res.kernels)} kernels x {res.vectors} vectors match"
        elif step == "front end":
            what = f"{len(res.kernels)} kernels"
        table.add_row(step, f"{sec * 1e3:.1f}", what)
    console.print(table)
    if res.blocking is not None:
        console.print(f"blocking: {res.blocking['summary']}")
    console.print(f"{res.name}: {c['pe']} PEs{decomposition_note(res.kernels.values())}, "
                  f"{c['mem']} MEMs, {c['reg']} registers, "
                  f"{c['io']} IOs, {len(res.netlist.nets)} nets -> {out}/netlist.json")


# ---------------------------------------------------------------------------- stages
def _open(run_dir: Path, design: Path | None):
    return open_design(run_dir, design)


def _claim(run_dir: Path):
    """The run directory of a stage command, checked and locked for the command
    (:func:`cgra.outputs.claim_output_dir`)."""
    return claim_output_dir(run_dir, "RUN_DIR")


@click.command("pack")
@_RUN_DIR
@_design_opt()
def pack_cmd(run_dir: Path, design: Path | None) -> None:
    """Pack the mapped netlist of RUN_DIR (registers into PE inputs, constants into PEs)."""
    from mapper.flow import run_pack  # deferred: loads canal.smt, lake.model, mapper.apps, 10 more only when called
    with _claim(run_dir):
        packed = run_pack(run_dir, _open(run_dir, design))
    counts = ", ".join(f"{n} {t}" for t, n in sorted(packed.counts().items()))
    click.echo(f"{packed.name}: packed {counts}; {len(packed.absorbed_regs)} registers "
               f"absorbed, {len(packed.folded_consts)} constants folded -> "
               f"{run_dir}/packed.json")


def _placer_opt() -> Callable:
    return click.option("--placer", default="analytical", show_default=True,
                        type=click.Choice(["analytical", "sa"]),
                        help="analytical: conjugate-gradient global placement on the L2 "
                             "wirelength with a MEM-column potential, then a cold annealer "
                             "(AHA §5.3); sa: simulated annealing alone from a random "
                             "placement")


def _gamma_opt() -> Callable:
    return click.option("--gamma", default=0.0, show_default=True,
                        type=click.FloatRange(min=0.0),
                        help="power-aware placement (AHA §5.3 Eq. 2): reward per tile of a "
                             "net's box that other nets' boxes also cover; 0 = off")


def _quiet_opt() -> Callable:
    return click.option("--quiet-unused", "quiet_unused", is_flag=True, default=False,
                        help="quiet unused muxes (AHA §5.5): every switch-box and "
                             "connection-box mux no routed net uses, in a tile that is on, "
                             "selects an input that does not switch (a gated neighbour, a "
                             "constant); counts in pnr_report.json (off by default)")


@click.command("place")
@_RUN_DIR
@_design_opt()
@click.option("--seed", default=0, show_default=True, help="placement seed")
@click.option("--alpha", default=1.0, show_default=True, help="HPWL exponent of the cost")
@_placer_opt()
@_gamma_opt()
def place_cmd(run_dir: Path, design: Path | None, seed: int, alpha: float,
              placer: str, gamma: float) -> None:
    """Place the packed design of RUN_DIR (simulated annealing, optionally after an
    analytical global placement)."""
    from mapper.flow import run_place  # deferred: loads canal.smt, lake.model, mapper.apps, 10 more only when called
    with _claim(run_dir):
        pl = run_place(run_dir, _open(run_dir, design),
                       PlaceParams(seed, alpha, placer == "analytical", gamma=gamma))
    ov = f", net-box overlap {pl.overlap} tiles" if gamma else ""
    click.echo(f"placed {len(pl.sites)} instances ({pl.method}): HPWL {pl.hpwl} tiles, "
               f"cost {pl.cost:.1f}{ov}, seed {pl.seed}, {pl.seconds:.2f} s -> "
               f"{run_dir}/placement.json")


@click.command("route")
@_RUN_DIR
@_design_opt()
@click.option("--max-iterations", default=40, show_default=True,
              help="PathFinder rip-up-and-re-route rounds")
def route_cmd(run_dir: Path, design: Path | None, max_iterations: int) -> None:
    """Route the placed design of RUN_DIR (PathFinder)."""
    from mapper.flow import run_route  # deferred: loads canal.smt, lake.model, mapper.apps, 10 more only when called
    with _claim(run_dir):
        rr = run_route(run_dir, _open(run_dir, design), RouterParams(max_iterations))
    its = ", ".join(f"{w}-bit {n}" for w, n in rr.iterations.items())
    click.echo(f"routed {len(rr.nets)} nets: wirelength {rr.total_wirelength()} segments, "
               f"iterations {its}, {rr.seconds:.2f} s -> {run_dir}/routing.json")


def _fmax_opt() -> Callable:
    return click.option("--fmax", "fmax", default=None, type=click.FloatRange(min=0.0),
                        help="target clock (MHz): compute pipelining (PE inputs registered) and "
                             "register insertion until the timing model meets it; default: "
                             "the best the timing model allows (its slowest stage that no "
                             "register can split: on the measured default model a PE core, "
                             "608 MHz on build/small; a MEM core, 1000 MHz, on the published "
                             "table), reported with the Fmax reached; a missed target whose "
                             "critical path is on a net of 6+ sinks also tries broadcast "
                             "register trees and keeps the better; 0: no pipelining, "
                             "only branch-delay matching")


def _alphas(text: str | None) -> tuple[float, ...]:
    """``--alpha-sweep`` "1,1.5,2" -> (1.0, 1.5, 2.0); raises ConfigError naming the bad item."""
    if text is None:
        return ()
    out: list[float] = []
    for item in text.split(","):
        try:
            a = float(item)
        except ValueError:
            a = float("nan")
        if not 0.5 <= a <= 4.0:
            raise ConfigError(f"--alpha-sweep {text!r}: {item.strip()!r} is not an HPWL exponent "
                              "in [0.5, 4]; give comma-separated numbers, e.g. 1,1.5,2")
        out.append(a)
    if len(set(out)) != len(out):
        raise ConfigError(f"--alpha-sweep {text!r}: an exponent is repeated; give each once")
    return tuple(out)


def _pipeline_params(fmax: float | None) -> PipelineParams:
    """``--fmax``: ``None`` -> compute pipelining toward the timing model's floor
    (``auto_target``, :func:`mapper.backend.pipeline.period_floor`); 0 -> only branch-delay
    matching; X MHz -> compute pipelining and register insertion to a 1e6 / X ps period.
    With a target, a miss whose critical path is on a broadcast net tries broadcast register
    trees and keeps the better result (``broadcast_on_miss``,
    :data:`mapper.backend.pipeline.BROADCAST_ON_MISS`)."""
    if fmax is None:
        return PipelineParams(register_pe_inputs=True, auto_target=True,
                              broadcast_on_miss=BROADCAST_ON_MISS)
    if fmax == 0:
        return PipelineParams()
    return PipelineParams(register_pe_inputs=True, target_period_ps=1e6 / fmax,
                          broadcast_on_miss=BROADCAST_ON_MISS)


@click.command("pipeline")
@_RUN_DIR
@_design_opt()
@_fmax_opt()
def pipeline_cmd(run_dir: Path, design: Path | None, fmax: float | None) -> None:
    """Branch-delay matching, pipelining and timing analysis of the routed design."""
    from mapper.flow import run_pipeline  # deferred: loads canal.smt, lake.model, mapper.apps, 10 more only when called
    with _claim(run_dir):
        pr = run_pipeline(run_dir, _open(run_dir, design), _pipeline_params(fmax))
    click.echo(f"pipelined: {len(pr.enabled_regs)} balancing + {len(pr.forced_regs)} "
               f"pipelining registers, critical path {pr.timing.period_ps:.0f} ps "
               f"({pr.timing.fmax_mhz:.0f} MHz, {pr.timing.model}"
               + ("" if pr.timing.target_ps is None else
                  f"; target {1e6 / pr.timing.target_ps:.0f} MHz: {pr.timing.target}")
               + f") -> {run_dir}/pipelined.json")


@click.command("bitstream")
@_RUN_DIR
@_design_opt()
@click.option("--power-gate", "power_gate", is_flag=True, default=False,
              help="also gate every tile that holds no placed instance and no routed net")
@_quiet_opt()
def bitstream_cmd(run_dir: Path, design: Path | None, power_gate: bool,
                  quiet_unused: bool) -> None:
    """Write the bitstream of the pipelined design of RUN_DIR."""
    from mapper.flow import run_bitstream  # deferred: loads canal.smt, lake.model, mapper.apps, 10 more only when called
    with _claim(run_dir):
        bs = run_bitstream(run_dir, _open(run_dir, design), power_gate, quiet_unused)
    gated = sum(1 for e in bs.entries if e.what == GATE_WHAT)
    q = bs.quiet.summary() if bs.quiet else None
    click.echo(f"{bs.name}: {len(bs.entries)} config words"
               + (f" ({gated} unused tiles gated)" if power_gate else "")
               + (f" ({q['quieted']} unused muxes quieted, {q['unquietable']} not; "
                  f"{q['forwarding_before']} -> {q['forwarding_after']} forwarding a routed "
                  f"net)" if q else "")
               + f" -> {run_dir}/{bs.name}.bs")


def check_made_for(run_dir: Path, coll, bitstream: Path) -> None:
    """Refuse a bitstream whose run directory was mapped on another design than ``coll``
    (``app.json`` records the design's directory, name and ``design_id``, the sha256 of its
    design.json: :mod:`garnet.collateral`). Raises :class:`CollateralError` naming both
    designs and the fix: the recorded design as DESIGN, or the app run again on this one. A
    run directory without ``app.json`` is left to the stage reader (:func:`st.read_stage`);
    the same design regenerated since is a stale run, which that reader reports."""
    if not (Path(run_dir) / "app.json").is_file():
        return
    app = st.read_app(run_dir)
    was_id = str(app.get("design_id") or "")
    if coll.design_id is None or was_id == coll.design_id:
        return
    was_dir = app.get("design")
    was = Path(str(was_dir)) if was_dir else None
    if was is not None and coll.root is not None and was.resolve() == coll.root.resolve():
        return                          # the same directory, regenerated: stale (read_stage)
    rerun = f"`cgra run {app.get('name')} --design {coll.root} --out {run_dir}`"
    raise CollateralError(
        f"{bitstream}: bitstream made for design {app.get('design_name')} ({was_dir}, "
        f"design.json hash {was_id[:12]}), not {coll.name} ({coll.root}, design.json hash "
        f"{coll.design_id[:12]}): pass {was_dir} as DESIGN, or map the app on {coll.root} "
        f"and run it again ({rerun})")


@click.command("verify")
@click.argument("design", type=click.Path(file_okay=False, path_type=Path))
@click.argument("bitstream", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--netlist", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="the pipelined routing (pipelined.json) the bitstream must realise; "
                   "default: pipelined.json beside BITSTREAM")
def verify_cmd(design: Path, bitstream: Path, netlist: Path | None) -> None:
    """Prove with Canal's SMT model (z3) that BITSTREAM (AAAAAAAA DDDDDDDD lines) configures
    the interconnect of DESIGN as the routed, pipelined netlist says: every sink connected to
    its source through configured muxes, no node driven by another net, the latency of every
    path equal to the pipelining's; on a ready-valid design also every net's valid beside
    its data and its ready as the AND of its sinks' (per segment between FIFOs). Exit status
    2 with the net, node and field otherwise."""
    from mapper.backend.verify import read_bitstream_file, verify  # deferred: loads canal.smt, mapper.backend only when called

    netlist = netlist if netlist is not None else bitstream.parent / "pipelined.json"
    if netlist.name != st.STAGES["pipeline"][0]:
        raise ConfigError(f"--netlist {netlist}: give the pipelining stage's file "
                          f"({st.STAGES['pipeline'][0]}) of the run directory")
    coll = load_collateral(design)
    check_made_for(netlist.parent, coll, bitstream)
    words = read_bitstream_file(bitstream)
    doc = st.read_stage(netlist.parent, "pipeline", st.PIPELINED_SCHEMA, coll)
    res = st.pipelined_from_json(doc, str(netlist))
    rep = verify(words, res, coll)
    rv = (f"; valid/ready proved with the data on {rep.rv_nets} ready-valid nets "
          f"({rep.rv_segments} segments between FIFOs)") if rep.rv_nets else ""
    if rep.dynamic_nets:
        rv += (f"; {rep.dynamic_nets} dynamic nets: router tables walked from injection to "
               f"every sink, ejection VCs and tokens checked")
    click.echo(f"{bitstream}: proved for {rep.nets} nets ({rep.sinks} sinks, {rep.nodes} "
               f"routed nodes; {rep.select_vars} select fields in the cone{rv}) in "
               f"{rep.seconds['total']:.2f} s")


@click.command("sim")
@_RUN_DIR
@_design_opt()
@click.option("--image", default="camera", show_default=True,
              help="a scikit-image sample shipped with it (camera, astronaut, coffee, chelsea, "
                   "coins, ...) or an image file path; colour apps take its RGB planes or "
                   "RGGB mosaic (the app's input convention)")
@click.option("--tensor-seed", "tensor_seed", default=0, show_default=True,
              help="DNN layers: seed of the random tensors (`--image random`: the first "
                   "input too)")
def sim_cmd(run_dir: Path, design: Path | None, image: str, tensor_seed: int) -> None:
    """Simulate the bitstream of RUN_DIR on the design's RTL (Verilator) and compare with
    both golden models."""
    from mapper.dnn.array import LayerRun  # deferred: loads canal.smt, lake.model, mapper.apps, 8 more only when called
    from mapper.params import SimOptions  # deferred: loads mapper.params only when called
    from mapper.flow import run_sim  # deferred: loads canal.smt, lake.model, mapper.apps, 10 more only when called
    t0 = time.perf_counter()
    with _claim(run_dir):
        coll = _open(run_dir, design)
        if coll.root is not None:
            check_output_dir(_model_cache(coll.root), "--design")     # the Verilator cache
        progress, step = _progress(run_dir.name)
        with progress:
            run = run_sim(run_dir, coll, SimOptions(image, tensor_seed=tensor_seed), step)
    if isinstance(run, LayerRun):
        _layer_summary(run, t0)
    else:
        _summary(run, t0)


def _model_cache(design: Path) -> Path:
    """The Verilator model cache the design's simulation uses (default SimParams)."""
    from mapper.sim.verilator import model_cache_dir  # deferred: loads psutil only when called

    return model_cache_dir(design)


def _verilator_note(report: dict[str, Any]) -> str:
    """``Verilator model <key> reused`` or ``... built in <s> s``, with ``(column blocks of
    <k>)`` for a model of the top in column blocks and ``(tile blocks: <modules>)`` for one
    of tile blocks (run_report ``verilator``)."""
    v = report.get("verilator") or {}
    blocks = f" (column blocks of {v['hier_columns']})" if v.get("hier_columns") else \
        f" (tile blocks: {', '.join(v['hier_tiles'])})" if v.get("hier_tiles") else ""
    if v.get("cached"):
        return f"Verilator model {v.get('key')}{blocks} reused"
    return (f"Verilator model {v.get('key')}{blocks} built in "
            f"{float(v.get('build_seconds', 0)):.1f} s")


def _target_note(timing: dict) -> str:
    """``"; target 1000 MHz: MEM core (mem): 1000 ps"`` when pipelining had a target (the
    default's model floor or ``--fmax``), else ``""`` (``--fmax 0``)."""
    if not timing.get("target_mhz"):
        return ""
    return f"; target {timing['target_mhz']:.0f} MHz: {timing.get('target') or '--fmax'}"


def _summary(run, t0: float) -> None:
    coll = run.coll
    r = run.report
    res = r["resources"]["used"]
    w, h = coll.size
    what = f"{run.output.shape[1]}x{run.output.shape[0]} output matches"
    if len(run.outputs) > 1:
        each = ", ".join(f"{o} {a.shape[1]}x{a.shape[0]}" for o, a in run.outputs.items())
        what = f"{len(run.outputs)} outputs ({each}) match"
    golden = "numpy and Halide bit-exactly"
    if r.get("halide_ulp"):         # an app with a stated Halide bound (mapper.apps)
        ulp = r["halide_ulp"].values()
        golden = (f"numpy bit-exactly and Halide within {max(u['max_ulp'] for u in ulp)} "
                  f"bf16 ulp (stated bound {max(u['tolerance_ulp'] for u in ulp)})")
    click.echo(f"{run.app} on design {coll.name} ({coll.root}, {w}x{h}): "
               f"{what} {golden}; {', '.join(f'{n} {k}' for k, n in sorted(res.items()))}; "
               f"wirelength {r['wirelength_total']}; {r['timing']['fmax_mhz']:.0f} MHz "
               f"(critical path {r['timing']['period_ps']:.0f} ps, "
               f"{r['timing'].get('model') or 'timing model'}{_target_note(r['timing'])}); "
               f"{r['cycles']['stream']} cycles, first "
               f"output at {r['latency']['first_output_cycle']} (ideal "
               f"{r['latency']['ideal_first_output_cycle']}); {_verilator_note(r)}; "
               f"{time.perf_counter() - t0:.1f} s -> {run.out_dir}")
    hs = r.get("handshake")
    if hs:                          # a ready-valid design (mapper.sim.rv_harness)
        click.echo(f"ready-valid: random stalls (seed {hs['seed']}, input p = {hs['p_in']}, "
                   f"output p = {hs['p_out']}): {hs['input_stall_cycles']} input stall and "
                   f"{hs['output_backpressure_cycles']} output backpressure cycles; "
                   f"{hs['tokens']} tokens per stream in {hs['cycles']} cycles "
                   f"({hs['tokens_per_cycle']:.3f} per cycle; the cycle model of the network "
                   f"predicts {hs['model_cycles']})")
    if r.get("dynamic"):            # a hybrid array (mapper.backend.dynamic)
        dn = r["dynamic"]
        click.echo(f"hybrid: {dn['nets']} net(s) overflowed to the dynamic layer (static tracks "
                   f"full): " + ", ".join(sorted(dn["flows"])))
    if r.get("glb"):                # a design with GLB collateral (mapper.sim.glb)
        click.echo(glb_note(r["glb"]))
    d = r.get("duplication")
    if d:                           # low-unroll duplication (Cascade §V-C4, mapper.duplicate)
        click.echo(f"duplicated: {d['copies']} copies of a {d['columns']}x{d['rows']} sub-array "
                   f"(columns {', '.join(str(o) for o in d['offsets'])}), each the unroll-"
                   f"{d.get('copy_unroll', 1)} app "
                   f"on a {r['size'][0]}x{d['strip_height']} strip; PnR on the sub-array "
                   f"{d['pnr_seconds']:.1f} s, replication {d['replicate_seconds']:.1f} s")


# ---------------------------------------------------------------------------- run
def app_listing() -> list[tuple[str, str, str]]:
    """``(app, design, why)`` of every shipped app and DNN layer, by name: the design it runs
    on by default (:data:`mapper.apps.DESIGNS`; ``make app`` uses the same)."""
    from mapper.apps import DESIGNS  # deferred: loads mapper.apps, mapper.frontend, mapper.images only when called
    return [(a, f.design, f.why) for a, f in sorted(DESIGNS.items())]


def _listing_text() -> str:
    rows = app_listing()
    wa = max(len(a) for a, _, _ in rows)
    wd = max(len(d) for _, d, _ in rows)
    return "\n".join(f"{a:<{wa}}  {d:<{wd}}  {why}".rstrip() for a, d, why in rows)


def _print_list(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    click.echo(f"{'app':<{max(len(a) for a, _, _ in app_listing())}}  design (configs/<design>"
               f".toml, build/<design>; `make app APP=<app>` uses it)")
    click.echo(_listing_text())
    ctx.exit(0)


class _RunCommand(click.Command):
    """``cgra run``: its help ends with the apps and the design each fits (built when the
    help is shown, not when the CLI loads)."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_paragraph()
        formatter.write_text("Apps and DNN layers, and the design each fits (`cgra run "
                             "--list`; `make app APP=<app>` runs it there):")
        with formatter.indentation():
            for line in _listing_text().splitlines():
                formatter.write(f"{formatter.current_indent * ' '}{line}\n")


@click.command("run", cls=_RunCommand)
@click.argument("app")
@_design_opt(required=True)
@click.option("--list", "list_apps", is_flag=True, is_eager=True, expose_value=False,
              callback=_print_list,
              help="list the shipped apps and DNN layers with the design each fits, and exit")
@click.option("--out", default=None, type=click.Path(file_okay=False),
              help="run directory (default build/apps/<app>)")
@click.option("--seed", default=0, show_default=True, help="placement seed")
@_placer_opt()
@_gamma_opt()
@click.option("--image", default="camera", show_default=True,
              help="a scikit-image sample shipped with it (camera, astronaut, coffee, chelsea, "
                   "coins, ...) or an image file path; colour apps take its RGB planes or "
                   "RGGB mosaic (the app's input convention)")
@click.option("--size", default=None, type=click.IntRange(1, 4096),
              help="square input image side (pixels; default 64, a DNN layer's own: "
                   "resnet_layer 18, gemm m = n = 16): --width N --height N")
@click.option("--width", default=None, type=click.IntRange(1, 4096),
              help="input image width (pixels); default: an --image file's own width "
                   "(cropped to what the run supports, reported), else 64")
@click.option("--height", default=None, type=click.IntRange(1, 4096),
              help="input image height (pixels); default: an --image file's own height, "
                   "else 64")
@click.option("--unroll", default=1, show_default=True, help="pixels per cycle (lanes)")
@_layer_opts
@click.option("--tensor-seed", "tensor_seed", default=0, show_default=True,
              help="DNN layers: seed of the random tensors (`--image random`: the first "
                   "input too)")
@click.option("--max-cycles", "max_cycles", default=None, type=int,
              help="simulated-cycle budget; a larger image is refused before anything runs "
                   "(default 4194304: a 2048x2048 image at one pixel per cycle)")
@click.option("--from", "resume_from", default="map", show_default=True,
              type=click.Choice(ORDER[:-1]),
              help="first stage to run; the files of earlier stages in the run directory "
                   "are reused (checked against the design and each other)")
@_fmax_opt()
@click.option("--alpha-sweep", "alphas", default=None, metavar="A,B,...",
              help="placement exponent sweep (Cascade): place, route and pipeline once per "
                   "HPWL exponent and keep the highest Fmax, e.g. 1,1.5,2 (each reported in "
                   "pnr_report.json); default: only alpha 1")
@click.option("--absorb", "absorb", default=0, show_default=True,
              type=click.IntRange(min=0), metavar="N",
              help="register-chain absorption (Cascade): nets whose PE sinks carry N or more "
                   "balancing registers get a MEM delay line placed around the kept "
                   "placement, and the design is routed and pipelined again (kept when it "
                   "uses fewer registers; reported in pnr_report.json); 0 = off")
@click.option("--power-gate", "power_gate", is_flag=True, default=False,
              help="power gating (AHA §4.3, §5.5): the bitstream gates every tile that holds "
                   "no placed instance and no routed net (off by default: every tile on)")
@_quiet_opt()
@click.option("--power-aware", "power_aware", default=None, type=float, is_flag=False,
              flag_value=POWER_AWARE_COST, metavar="[K]",
              help=f"power-aware routing: a node in a tile not yet on costs K times more "
                   f"(K >= 1; the flag alone: {POWER_AWARE_COST:g}; default off = 1)")
@click.option("--energy", "energy", is_flag=True, default=False,
              help="energy estimate (a model: yosys cell counts x a cited per-cell table, "
                   "activity from the Verilator run) in run_report.json and pnr_report.json; "
                   "~30 s of yosys once per design")
@click.option("--stall-in", "stall_in", type=float, default=None,
              help="ready-valid designs: probability per cycle that an input stream stalls "
                   "(presents no word) [default: 0.3]")
@click.option("--stall-out", "stall_out", type=float, default=None,
              help="ready-valid designs: probability per cycle of backpressure at an output "
                   "(ready = 0) [default: 0.3]")
@click.option("--stall-seed", "stall_seed", type=int, default=None,
              help="ready-valid designs: seed of the stall draws [default: 1]")
@click.option("--model-hierarchy", "model_hierarchy", default="auto", show_default=True,
              type=click.Choice(["auto", "flat", "blocks", "tiles"]),
              help="the Verilator model: 'blocks' builds it from the top in column blocks "
                   "(rtl/hier/; each distinct block verilated once: a cold 32x16 build in "
                   "less than half the time, ~0.9x the simulation speed), 'tiles' with each "
                   "distinct tile module verilated once (ready-valid arrays: the small_df "
                   "8x8 in 0.4x the time), 'flat' from the flat top; 'auto' takes blocks "
                   "from 256 tiles, tiles for smaller ready-valid arrays of 2 MB of tile "
                   "Verilog")
@click.option("--duplicate", "duplicate", is_flag=True, default=False,
              help="low-unroll duplication (Cascade §V-C4): compile the app at unroll 1 for "
                   "a strip of the image, place and route it on a sub-array and copy its "
                   "configuration --unroll times across the array (reported in "
                   "run_report.json); off by default")
@click.option("--sub-array", "sub_array", default=None, type=click.IntRange(1, 4096),
              metavar="COLUMNS",
              help="with --duplicate: the sub-array's width in columns (default: the array's "
                   "columns / the copies, a multiple of the tile pattern's period)")
@click.option("--copy-unroll", "copy_unroll", default=1, show_default=True,
              type=click.IntRange(1, 4096),
              help="with --duplicate: the unroll each copy is compiled at (the copies are "
                   "--unroll / --copy-unroll)")
@click.option("--par", "par", default=None, type=click.IntRange(1, 64),
              help="dataflow programs (dot_product, gemm_tile, ...; `cgra dataflow --list`): "
                   "the par of the program's parallel loops [default: 1]")
@click.option("--arg", "program_args", multiple=True, metavar="NAME=INT",
              help="dataflow programs: a size argument of the program's builder (repeat; "
                   "e.g. `cgra run kmeans_step --arg n=16`); its defaults otherwise")
def run_cmd(app: str, design: Path, out: str | None, seed: int, image: str,
            size: int | None, width: int | None, height: int | None, unroll: int,
            channels: int | None, block: int | None,
            loop_cycles: int, double_buffer: bool, flatten: bool, tensor_seed: int,
            max_cycles: int | None, resume_from: str, fmax: float | None, alphas: str | None,
            absorb: int, placer: str, gamma: float, power_gate: bool,
            quiet_unused: bool, power_aware: float | None, energy: bool,
            stall_in: float | None, stall_out: float | None, stall_seed: int | None,
            model_hierarchy: str, duplicate: bool,
            sub_array: int | None, copy_unroll: int, par: int | None,
            program_args: tuple[str, ...]) -> None:
    """Map APP (a shipped app or a DNN layer: resnet_layer, resnet_stride2, mobilenet_layer,
    gemm) onto the design, simulate it on the RTL and compare with both golden models. A
    dataflow program (dot_product, gemm_tile, ...) runs on a ready-valid array of dataflow
    PEs (configs/small_df.toml) and is compared with the sequential interpreter."""
    if app in ARRAY_PROGRAMS:
        given = {"--unroll": unroll != 1, "--energy": energy, "--power-gate": power_gate,
                 "--duplicate": duplicate, "--fmax": fmax is not None,
                 "--absorb": absorb != 0, "--alpha-sweep": alphas is not None,
                 "--size/--width/--height": any(v is not None for v in (size, width, height)),
                 "--from": resume_from != "map"}
        bad = [k for k, v in given.items() if v]
        if bad:
            raise ConfigError(f"{', '.join(bad)}: not an option of a dataflow program "
                              f"({app}); it takes --par, --arg (its sizes), --tensor-seed "
                              f"(its inputs), --seed (placement) and the --stall-* options")
        sizes = _program_args(app, program_args)
        if model_hierarchy in ("blocks", "tiles"):  # no blocks: refused before compiling
            check_hierarchy(design, SimParams(hierarchy=model_hierarchy))
        _dataflow_run(app, design, out, par or 1, tensor_seed, seed, stall_in, stall_out,
                      stall_seed, sizes, model_hierarchy)
        return
    if program_args:
        raise ConfigError(f"--arg: {app} is not a dataflow program (`cgra dataflow --list`); "
                          f"--arg sets a dataflow program's sizes")
    if par is not None:
        raise ConfigError(f"--par: {app} is not a dataflow program (`cgra dataflow --list`); "
                          f"unroll an image app with --unroll")
    from mapper.params import AppParams, DuplicateParams, FlowParams, RunParams, SimOptions, default_run_dir  # deferred: loads mapper.params only when called
    from mapper.dnn.array import is_layer  # deferred: loads canal.smt, lake.model, mapper.apps, 8 more only when called
    from mapper.flow import run_app  # deferred: loads canal.smt, lake.model, mapper.apps, 10 more only when called

    t0 = time.perf_counter()
    w, h, note = run_image_size(app, image, size, width, height, unroll, max_cycles)
    if note:
        click.echo(note, err=True)
    params = RunParams(AppParams(app, w, h, unroll, channels=channels, block=block,
                                 loop_cycles=loop_cycles, double_buffer=double_buffer,
                                 flatten=flatten),
                       design, out,
                       FlowParams(place=PlaceParams(seed=seed, analytical=placer == "analytical",
                                                    gamma=gamma),
                                  pipeline=_pipeline_params(fmax),
                                  route=RouterParams(power_cost=power_aware or 1.0),
                                  alphas=_alphas(alphas), absorb_chains=absorb,
                                  power_gate=power_gate, quiet_unused=quiet_unused),
                       SimOptions(image, tensor_seed=tensor_seed, energy=energy,
                                  stall_in=stall_in, stall_out=stall_out,
                                  stall_seed=stall_seed, hierarchy=model_hierarchy,
                                  **({} if max_cycles is None else {"max_cycles": max_cycles})),
                       resume_from,
                       DuplicateParams(sub_array, copy_unroll) if duplicate else None)
    if (sub_array is not None or copy_unroll != 1) and not duplicate:
        raise ConfigError("--sub-array and --copy-unroll shape --duplicate's copies; add "
                          "--duplicate or drop them")
    run_dir = Path(out) if out is not None else default_run_dir(app)
    params.validate()                   # before the run directory is touched
    if model_hierarchy in ("blocks", "tiles"):  # no blocks, or toggles: refused before mapping
        check_hierarchy(design, SimParams(hierarchy=model_hierarchy, toggles=energy))
    with claim_output_dir(run_dir, "--out"):
        if Path(design).is_dir():
            check_output_dir(_model_cache(Path(design)), "--design")  # the Verilator cache
        progress, step = _progress(app)
        with progress:
            run = run_app(params, step)
    if is_layer(app):
        _layer_summary(run, t0)
    else:
        _summary(run, t0)


def _program_args(app: str, given: tuple[str, ...]) -> dict[str, int]:
    """``--arg NAME=INT`` of dataflow program ``app``: its builder's integer arguments
    other than ``par`` and ``seed`` (their own options). Raises :class:`ConfigError` naming
    the builder's arguments for a malformed, unknown or repeated one."""
    params = inspect.signature(ARRAY_PROGRAMS[app]).parameters
    names = [n for n, p in params.items() if n not in ("par", "seed")
             and isinstance(p.default, int) and not isinstance(p.default, bool)]
    out: dict[str, int] = {}
    for g in given:
        name, eq, value = g.partition("=")
        name = name.strip()
        if not eq or name not in names or name in out:
            why = ("repeated" if name in out else "not NAME=INT" if not eq else
                   f"{app} has no size argument {name!r}")
            raise ConfigError(f"--arg {g!r}: {why}; {app} takes {', '.join(names)} "
                              f"(--par and --tensor-seed set par and seed)")
        try:
            out[name] = int(value)
        except ValueError:
            raise ConfigError(f"--arg {g!r}: {value.strip()!r} is not an integer") from None
    return out


def _dataflow_run(app: str, design: Path, out: str | None, par: int, tensor_seed: int,
                  seed: int, stall_in: float | None, stall_out: float | None,
                  stall_seed: int | None, sizes: dict[str, int] | None = None,
                  hierarchy: str = "auto") -> None:
    """``cgra run`` of a dataflow program (:func:`mapper.dataflow.array_run.run_program`)
    built with ``sizes`` (``--arg``) on the Verilator model of ``hierarchy``
    (``--model-hierarchy``): the array's result against the interpreter, the interpreter's
    against numpy; a one-line summary."""
    t0 = time.perf_counter()
    program, inputs, reference = ARRAY_PROGRAMS[app](par=par, seed=tensor_seed,
                                                     **(sizes or {}))
    coll = load_collateral(design)
    run_dir = Path(out) if out is not None else Path("build") / "apps" / app
    p_in = 0.3 if stall_in is None else stall_in
    p_out = 0.3 if stall_out is None else stall_out
    s_seed = 1 if stall_seed is None else stall_seed
    for name, v in (("--stall-in", p_in), ("--stall-out", p_out)):
        if not 0.0 <= v < 1.0:
            raise ConfigError(f"{name} {v}: a probability per cycle in [0, 1)")
    with claim_output_dir(run_dir, "--out"):
        r = run_program(program, inputs, coll, run_dir, stall_in=p_in, stall_out=p_out,
                        stall_seed=s_seed, place_seed=seed, hierarchy=hierarchy)
    # the array equals the interpreter (run_program); the interpreter must equal numpy
    tol = TOLERANCES.get("gemm" if app == "gemm_tile" else app, (0.0, 0.0))
    for name, want in reference(inputs).items():
        if not np.allclose(r.program.golden[name], want, rtol=tol[0], atol=tol[1]):
            raise SimulationError(f"{app}: the interpreter's {name!r} differs from numpy")
    rep = r.report
    units = ", ".join(f"{u}: {n}" for u, n in rep["units"].items())
    click.echo(f"{app} (par {par}) on design {coll.name}: bit-exact with the sequential "
               f"interpreter and numpy; {rep['pes']} PEs ({units}), {rep['io']['in']} input "
               f"and {rep['io']['out']} output IO tiles, {rep['routes']['static']} routes; "
               f"{r.cycles} cycles in RTL under random stalls (seed {s_seed}, p_in {p_in}, "
               f"p_out {p_out}: {r.stalls[0]} input stall, {r.stalls[1]} backpressure "
               f"cycles); predicted {r.model_cycles} by the model of the mapped program, "
               f"{r.sim_cycles} by the token-level simulator of SARA's units; "
               f"{rep['timing']['fmax_mhz']:.0f} "
               f"MHz (critical path {rep['timing']['period_ps']:.0f} ps, "
               f"{rep['timing']['model'] or 'timing model'}); "
               f"{time.perf_counter() - t0:.1f} s -> {run_dir}/dataflow_run.json")


def _layer_summary(run, t0: float) -> None:
    r = run.report
    lay = r["layer"]
    res = r["resources"]["used"]
    w, h = run.coll.size
    shapes = ", ".join(f"{n} {'x'.join(map(str, s))}" for n, s in r["shapes"].items())
    click.echo(f"{run.app} on design {run.coll.name} ({run.coll.root}, {w}x{h}): {shapes} -> "
               f"{'x'.join(map(str, r['output_shape']))} matches numpy and Halide "
               f"bit-exactly; {', '.join(f'{n} {k}' for k, n in sorted(res.items()))} "
               f"(MEMs: {', '.join(f'{n} {k}' for k, n in sorted(lay['mems'].items()))}); "
               f"{r['timing']['fmax_mhz']:.0f} MHz ({r['timing'].get('model') or 'timing model'})")
    if "blocking" in lay:
        click.echo(f"blocking: {lay['blocking']['summary']}")
    db = lay.get("double_buffers", 0)
    click.echo(f"cycles {lay['cycles']} (load {lay['load_cycles']}"
               f"{f', {db} double-buffered operand MEMs' if db else ''}, compute "
               f"{lay['compute_cycles']}), ideal {lay['ideal_cycles']} ({lay['macs']} MACs / "
               f"{lay['multipliers']} multipliers); occupancy {lay['occupancy']:.2f} "
               f"({lay['compute_occupancy']:.2f} in the compute phase); "
               f"{_verilator_note(r)}; {time.perf_counter() - t0:.1f} s -> {run.out_dir}")


# ---------------------------------------------------------------------------- layer
@click.command("layer")
@click.argument("layer")
@click.option("--design", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="design directory written by `cgra rtl` whose tiles the plan uses "
                   "(default: the default 32x16 array's counts)")
@click.option("--size", default=None, type=click.IntRange(4, 4096),
              help="input width = height (pixels; gemm: m = n); default: the layer's")
@click.option("--channels", default=None, type=click.IntRange(1, 4096),
              help="input = output channels (gemm: the reduction k); default: the layer's")
@click.option("--block", default=None, type=click.IntRange(1, 64),
              help="channels in parallel, in and out (gemm: the output tile side); "
                   "default 8, the paper's")
@click.option("--seed", default=0, show_default=True, help="seed of the random tensors")
@click.option("--image", default=None,
              help="a real image (scikit-image sample or file) as the first input's channels")
@click.option("--memories", is_flag=True,
              help="also run the layer's memory system (operand, accumulation and flag MEMs) "
                   "on Lake's cycle-accurate models of the design's MEM (default the dual-port) "
                   "and check its output (mapper.dnn.memory)")
@click.option("--double-buffer", "double_buffer", is_flag=True,
              help="with --memories: double-buffered operand MEMs (the array's layout: one "
                   "iteration's share per half, reloaded behind the compute)")
@click.option("--json", "as_json", is_flag=True, help="print the plan as JSON")
def layer_cmd(layer: str, design: Path | None, size: int | None, channels: int | None,
              block: int | None, seed: int, image: str | None, memories: bool,
              double_buffer: bool, as_json: bool) -> None:
    """Evaluate DNN LAYER (resnet_layer, resnet_stride2, mobilenet_layer, gemm) in numpy and
    in real Halide on random tensors, check they agree bit for bit, and print its mapping
    plan (PEs, MEM tiles, cycles vs ideal, occupancy: mapper.dnn.plan)."""


    from mapper.dnn import plan as dnn_plan  # deferred: loads mapper.dnn, mapper.frontend, mapper.interp only when called
    from mapper.frontend import tensor  # deferred: loads mapper.frontend, mapper.interp only when called
    from mapper.apps import dnn  # deferred: loads mapper.apps, mapper.frontend, mapper.images only when called
    from mapper.sim.halide import run_halide_outputs  # deferred: loads mapper.frontend, mapper.sim only when called

    pipe = dnn.build_layer(layer, size, channels, block)
    res = dnn_plan.Resources.from_design(design) if design else dnn_plan.DEFAULT_32X16
    plan = dnn_plan.plan_layer(pipe, res)
    ins = dnn.layer_inputs(pipe, seed, image, strict=True)
    ours = tensor.evaluate(pipe, ins)
    gold = run_halide_outputs(pipe, ins)
    for name, a in ours.items():
        if not np.array_equal(a, gold[name]):
            bad = int(np.count_nonzero(a != gold[name]))
            raise SimulationError(f"{layer}: output {name}: numpy and Halide differ in {bad} "
                                  f"of {a.size} values")
    lake_line = None
    if memories:
        from mapper.dnn import memory as dnn_memory  # deferred: loads lake.model, mapper.dnn, mapper.frontend, 1 more only when called

        got, lms = dnn_memory.simulate(pipe, ins, res.preset, double_buffer=double_buffer)
        name = pipe.output.name
        if not np.array_equal(got[name], ours[name]):
            bad = int(np.count_nonzero(got[name] != ours[name]))
            raise SimulationError(f"{layer}: the Lake memory simulation differs from numpy in "
                                  f"{bad} of {got[name].size} values")
        mems = sum(lm.mem_count for lm in lms)
        oms = [om for lm in lms for lst in lm.mems.values() for om in lst]
        db = sum(1 for om in oms if om.double)
        words = sum(om.words for om in oms)
        lake_line = (f"on Lake MEM models ({res.preset}): {mems} MEMs ({words} operand "
                     f"words{f', {db} double-buffered' if db else ''}), {lms[-1].cycles} "
                     f"cycles, output bit-exact")
    if as_json:
        doc = plan.summary()
        if lake_line:
            doc["lake_memories"] = lake_line
        click.echo(json.dumps(doc, indent=1))
        return
    out = ours[pipe.output.name]
    shapes = ", ".join(f"{i.name} {'x'.join(map(str, reversed(ins[i.name].shape)))}"
                       for i in pipe.inputs)
    click.echo(f"{layer}: {shapes} -> {'x'.join(map(str, reversed(out.shape)))}; numpy and "
               f"Halide agree bit for bit (seed {seed}); {plan.macs} MACs")
    click.echo(f"plan on {res.name}: {plan.pe_count} PE of {res.pes}, {plan.mem_count} MEM of "
               f"{res.mems} ({', '.join(f'{b.name} {b.mems}' for b in plan.buffers)}); "
               f"{plan.cycles} cycles, ideal {plan.ideal_cycles} (MACs / {plan.multipliers} "
               f"multipliers); occupancy {float(plan.occupancy):.2f}; tile ii {plan.schedule.ii}")
    abl = ", ".join(f"{'double-buffered' if db else 'sequential'}"
                    f"{' + flattened' if fl else ''} {s.total_cycles} "
                    f"({float(plan.occupancy_of(s)):.2f})"
                    for (db, fl), s in plan.ablation.items())
    click.echo(f"cycles (occupancy): {abl}")
    if lake_line:
        click.echo(lake_line)


__all__ = ["bitstream_cmd", "layer_cmd", "map_cmd", "pack_cmd", "pipeline_cmd", "place_cmd", "route_cmd",
           "run_cmd", "sim_cmd", "verify_cmd"]
