"""``cgra run``: an application end to end on the generated RTL.

map (memory mapping, then compute mapping with the rule table) -> pack -> place -> route ->
pipeline -> bitstream (:func:`mapper.report.run_pnr`) -> Verilator simulation of the array
configured over its config bus (:mod:`mapper.simulate`) -> bit-exact comparison with both
golden models (:func:`mapper.interp.run_pipeline`, the numpy interpreter of the IR, and
:func:`mapper.halide_export.run_halide`, the same algorithm in real Halide).

Streams (the static schedule of :mod:`mapper.schedule`, shifted by pipelining):

* input: IO instance ``io_in_<input>_l<q>`` placed on IO tile ``(x, 0)`` drives top port
  ``glb2io_16_X<xx>_Y<yy>``; the ``k``-th event of its program (``extents [P, H]``,
  dimension 0 innermost) carries pixel ``(U*(k mod P) + q, k div P)`` (0 beyond the image);
  cycle 0 is the first cycle with ``clk_en = 1`` after the flush;
* output: ``io_out_<stage>_l<q>`` is sampled at top port ``io2glb_16_X<xx>_Y<yy>`` at the cycles
  of its (pipelining-shifted) program; event ``k`` is pixel ``x = U*(x0 div U + k mod n) + q``,
  ``y = y0 + k div n`` of the output stage's domain box ``[x0, x1) x [y0, y1)`` (events with
  ``x`` outside the box are edge lanes and ignored).

Files in ``--out`` (default ``build/apps/<app>``): ``<app>.bs``/``<app>.bs.json``
(bitstream), ``pnr_report.json``, ``pnr.png`` (placed and routed design), ``netlist.json``
(mapped netlist), ``<app>.png`` (16-bit grey output image), ``input.png``, ``run_report.json``
(schema ``mapper.run_report/1``: resources, wirelength, routing iterations, seconds per stage,
cycles, latency vs the ideal, golden agreement), and the simulation files ``sim.*``.
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import click
import numpy as np

from cgra.errors import MappingError, SimulationError
from mapper.place import PlaceParams
from mapper.report import FlowParams, FlowResult, run_pnr
from mapper.simulate import Harness, SimParams, SimRun, build_harness, run_harness

RUN_SCHEMA = "mapper.run_report/1"
IMAGES = ("camera",)

Step = Callable[[str], None]


@dataclass
class RunParams:
    """Options of one end-to-end run: ``app`` (a shipped app, :data:`mapper.apps.APPS`),
    ``design`` (collateral directory ``build/<design>``), ``out`` (output directory; ``None`` =
    ``build/apps/<app>``), ``seed`` (placement), ``image`` (``camera``: a crop of
    ``skimage.data.camera()``), ``size`` (square image side, pixels), ``unroll`` (lanes),
    ``threshold`` (shift-register threshold of memory mapping, cycles), ``vectors`` (random
    vectors per kernel for the compute-mapping equivalence check; 0 = none)."""

    app: str
    design: str | Path
    out: str | Path | None = None
    seed: int = 0
    image: str = "camera"
    size: int = 64
    unroll: int = 1
    threshold: int = 8
    vectors: int = 0
    sim: SimParams = field(default_factory=SimParams)
    flow: FlowParams | None = None


@dataclass
class StreamPlan:
    """Top-port stimulus and sampling for one run: ``inputs`` port -> values ``[T]``,
    ``outputs``: [(io_out instance, port, cycles ``[n]``, y ``[n]``, x ``[n]``)] (only events
    inside the output box), ``cycles``: ``T`` (last sampled cycle + 1), ``first_output``:
    the first sampled cycle, ``box``: output domain ``(x0, x1, y0, y1)``."""

    inputs: dict[str, np.ndarray]
    outputs: list[tuple[str, str, np.ndarray, np.ndarray, np.ndarray]]
    cycles: int
    first_output: int
    box: tuple[int, int, int, int]


@dataclass
class AppRun:
    """Everything one run produced (see :func:`run_app`)."""

    app: str
    image: np.ndarray
    output: np.ndarray
    golden_numpy: np.ndarray
    golden_halide: np.ndarray
    flow: FlowResult
    harness: Harness
    sim: SimRun
    plan: StreamPlan
    report: dict[str, Any]
    out_dir: Path


def load_image(kind: str, size: int) -> np.ndarray:
    """A ``size x size`` uint16 test image ``[y, x]``: ``camera`` = crop of
    ``skimage.data.camera()`` at :data:`mapper.images.DEFAULT_CROP_ORIGIN` (moved inwards so the
    crop fits; 512 gives the whole image). Raises :class:`MappingError` for an unknown kind
    or a size outside 1..512."""
    from mapper.images import DEFAULT_CROP_ORIGIN, camera_crop

    if kind not in IMAGES:
        raise MappingError(f"--image {kind!r}: unknown image; use one of {IMAGES}")
    if not 1 <= size <= 512:
        raise MappingError(f"--size {size}: the camera image is 512x512; use 1..512")
    y0, x0 = DEFAULT_CROP_ORIGIN
    return camera_crop(size, size, (min(y0, 512 - size), min(x0, 512 - size)))


def _program_events(prog: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(cycles, index along dimension 0, index along dimension 1) of a 2-D stream program."""
    from mapper.streams import program_events

    cyc, _ = program_events({k: v for k, v in prog.items() if k != "address"})
    ext0 = int(prog["extents"][0])
    k = np.arange(len(cyc))
    return cyc, np.stack([k % ext0, k // ext0])


def io_port(tag: str, direction: str, xy: tuple[int, int]) -> str:
    """Top-level port of an IO instance with PnR ``tag`` (``I`` 16-bit, ``i`` 1-bit) placed on
    IO tile ``xy``; ``direction`` ``in`` (``glb2io``) or ``out`` (``io2glb``)."""
    w = 16 if tag == "I" else 1
    pre = "glb2io" if direction == "in" else "io2glb"
    return f"{pre}_{w}_X{xy[0]:02X}_Y{xy[1]:02X}"


def stream_plan(flow: FlowResult, images: dict[str, np.ndarray]) -> StreamPlan:
    """Stimulus and sampling of the top ports for a placed and pipelined design (module
    docstring). Raises :class:`SimulationError` when an IO instance lacks its program or an
    input image is missing."""
    packed = flow.pipelined.packed
    sites = flow.placement.sites
    inputs: dict[str, np.ndarray] = {}
    outs: list[tuple[str, str, np.ndarray, np.ndarray, np.ndarray]] = []
    box: tuple[int, int, int, int] | None = None
    for name, inst in packed.instances.items():
        if inst.kind not in ("io_in", "io_out"):
            continue
        c = inst.config
        if "program" not in c:
            raise SimulationError(f"IO instance {name} has no stream 'program' in its config; "
                                  f"build the netlist with mapper.memory.map_memory")
        cyc, (i0, i1) = _program_events(c["program"])
        u, lane = int(c.get("unroll", 1)), int(c.get("lane", 0))
        port = io_port(inst.tag, "in" if inst.kind == "io_in" else "out", sites[name])
        if inst.kind == "io_in":
            img = images.get(c["input"])
            if img is None:
                raise SimulationError(f"IO {name}: no image for input '{c['input']}'")
            h, w = img.shape
            x, y = u * i0 + lane, i1
            ok = (x < w) & (y < h)
            vals = np.zeros(int(cyc.max()) + 1, np.int64)
            vals[cyc[ok]] = img[y[ok], x[ok]].astype(np.int64) & (0xFFFF if inst.tag == "I"
                                                                    else 1)
            inputs[port] = vals
        else:
            x0, x1, y0, y1 = (int(v) for v in c["box"])
            box = (x0, x1, y0, y1)
            x, y = u * (x0 // u + i0) + lane, y0 + i1
            keep = (x >= x0) & (x < x1) & (y < y1)
            outs.append((name, port, cyc[keep], y[keep], x[keep]))
    if not outs or box is None:
        raise SimulationError(f"design {packed.name}: no output stream (io_out instance)")
    cycles = max(int(o[2].max()) for o in outs if len(o[2])) + 1
    first = min(int(o[2].min()) for o in outs if len(o[2]))
    for p, v in inputs.items():
        if len(v) < cycles:
            inputs[p] = np.concatenate([v, np.zeros(cycles - len(v), np.int64)])
    return StreamPlan(inputs, outs, cycles, first, box)


def first_mismatch(got: np.ndarray, want: np.ndarray, box: tuple[int, int, int, int]
                   ) -> tuple[int, int, int, int] | None:
    """``(x, y, expected, got)`` of the first differing pixel in raster order (image
    coordinates of the output domain ``box``), or ``None`` when equal."""
    diff = np.argwhere(got.astype(np.int64) != want.astype(np.int64))
    if not len(diff):
        return None
    r, c = (int(v) for v in diff[0])
    return (box[0] + c, box[2] + r, int(want[r, c]), int(got[r, c]))


def check_output(app: str, got: np.ndarray, goldens: dict[str, np.ndarray],
                 box: tuple[int, int, int, int], where: str | Path = "") -> None:
    """Bit-exact comparison of the simulated output image with every golden model.

    ``box`` = output domain ``(x0, x1, y0, y1)`` (image coordinates of ``got[0, 0]`` are
    ``(x0, y0)``). Raises :class:`SimulationError` naming the golden model, the number of
    differing pixels and the first one ``(x, y, expected, got)`` in raster order, or a shape
    mismatch."""
    for gname, g in goldens.items():
        if g.shape != got.shape:
            raise SimulationError(f"{app}: simulated output is {got.shape[1]}x{got.shape[0]}, "
                                  f"the {gname} golden is {g.shape[1]}x{g.shape[0]}")
        mm = first_mismatch(got, g, box)
        if mm is not None:
            n = int((got.astype(np.int64) != g.astype(np.int64)).sum())
            x, y, e, v = mm
            raise SimulationError(f"{app}: RTL output differs from the {gname} golden at {n} "
                                  f"pixel(s); first at pixel (x={x}, y={y}): expected {e}, "
                                  f"got {v}" + (f" (files in {where})" if where else ""))


def _save_png(img: np.ndarray, path: Path) -> None:
    from PIL import Image

    arr = np.ascontiguousarray(img.astype(np.int64) & 0xFFFF).astype(np.uint16)
    Image.fromarray(arr).save(path)


def map_app(app: str, design: str | Path, size: int, unroll: int, threshold: int = 8,
            vectors: int = 0):
    """Front end + memory mapping + compute mapping of ``app`` on a ``size x size`` input for
    the collateral in ``design``, through :func:`mapper.cli.map_app` (``vectors`` random
    vectors per kernel for its equivalence check against the PE model; 0 = none, the RTL
    simulation checks the whole design). Returns ``(dsl pipeline, IR pipeline, memory
    mapping, compute mapping, seconds per stage)``. Raises :class:`CollateralError`
    (missing or stale collateral) or :class:`MappingError`."""
    from mapper.apps import build_app
    from mapper.cli import map_app as map_netlist

    res = map_netlist(app, design, width=size, height=size, unroll=unroll,
                      threshold=threshold, vectors=vectors)
    t = time.perf_counter()
    dsl_p = build_app(app, size, size, unroll)
    secs = {f"map_{k.replace(' ', '_')}": v for k, v in res.times.items()}
    secs["map_dsl_for_halide"] = time.perf_counter() - t
    return dsl_p, res.memory.pipeline, res.memory, res.compute, secs


@dataclass
class Compiled:
    """The compiler's result for one app: DSL and IR pipelines, memory mapping
    (:class:`mapper.memory.MemoryMapping`), compute mapping
    (:class:`mapper.compute.ComputeMapping`), the back-end :class:`FlowResult` and seconds
    per stage."""

    dsl: Any
    ir: Any
    memory: Any
    compute: Any
    flow: FlowResult
    seconds: dict[str, float]


def compile_app(p: RunParams, out: str | Path, step: Step | None = None) -> Compiled:
    """Map ``p.app`` and run the back end (:func:`mapper.report.run_pnr`, placement seed
    ``p.seed``), writing the netlist, bitstream, PnR report and picture into ``out``.
    Raises the error of the failing stage (``MappingError``, ``PlacementError``,
    ``RoutingError``, ``CollateralError``, ``ConfigError``)."""
    say = step or (lambda _m: None)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    say("map")
    dsl_p, ir_p, mm, cm, secs = map_app(p.app, p.design, p.size, p.unroll, p.threshold,
                                               p.vectors)
    secs["map"] = sum(secs.values())
    cm.netlist.save(out / "netlist.json")
    say("place, route, pipeline, bitstream")
    flow_params = p.flow or FlowParams(place=PlaceParams(seed=p.seed))
    flow = run_pnr(cm.netlist, p.design, out, flow_params)
    for k, v in flow.seconds.items():
        secs[f"pnr_{k}"] = v
    return Compiled(dsl_p, ir_p, mm, cm, flow, secs)


def run_app(params: RunParams, step: Step | None = None) -> AppRun:
    """Map, place, route, pipeline, generate the bitstream, simulate on the design's RTL and
    compare with both golden models; write the files listed in the module docstring.

    ``step(msg)`` is called at the start of every stage. Raises :class:`SimulationError`
    naming the first mismatching pixel ``(x, y, expected, got)`` and the golden model, or the
    error of the failing stage (:class:`MappingError`, ``PlacementError``, ``RoutingError``,
    ``CollateralError``, ...)."""
    say = step or (lambda _m: None)
    p = params
    out = Path(p.out) if p.out is not None else Path("build/apps") / p.app
    out.mkdir(parents=True, exist_ok=True)
    secs: dict[str, float] = {}
    t0 = time.perf_counter()

    comp = compile_app(p, out, say)
    dsl_p, ir_p, mm, cm, flow = comp.dsl, comp.ir, comp.memory, comp.compute, comp.flow
    secs.update(comp.seconds)

    say("verilator build")
    harness = build_harness(p.design, p.sim)
    secs["verilator_build"] = harness.build_seconds

    say("simulate")
    img = load_image(p.image, p.size)
    plan = stream_plan(flow, {"input": img})
    ports = [o[1] for o in plan.outputs]
    sim = run_harness(harness, flow.bitstream.pairs(), plan.inputs, ports, plan.cycles, out,
                      p.sim)
    secs["simulation"] = sim.seconds
    if sim.readback_mismatches:
        a, e, g = sim.readback_mismatches[0]
        raise SimulationError(f"{p.app}: config read-back differs at {len(sim.readback_mismatches)}"
                              f" address(es); first: address {a:08X} wrote {e:08X}, read "
                              f"{g:08X} (a config register that does not hold its bits)")
    x0, x1, y0, y1 = plan.box
    res = np.zeros((y1 - y0, x1 - x0), np.int64)
    seen = np.zeros(res.shape, bool)
    for (_name, port, cyc, ys, xs) in plan.outputs:
        res[ys - y0, xs - x0] = sim.outputs[port][cyc]
        seen[ys - y0, xs - x0] = True
    if not seen.all():
        raise SimulationError(f"{p.app}: {int((~seen).sum())} output pixels were never sampled "
                              f"(the output programs do not cover the domain {plan.box})")

    say("golden models")
    from mapper.halide_export import run_halide
    from mapper.interp import run_pipeline

    t = time.perf_counter()
    g_np = np.asarray(run_pipeline(ir_p, {"input": img}))
    secs["golden_numpy"] = time.perf_counter() - t
    t = time.perf_counter()
    g_hl = np.asarray(run_halide(dsl_p, {"input": img}))
    secs["golden_halide"] = time.perf_counter() - t
    out_img = res.astype(np.uint16)
    if g_np.dtype == np.int16:
        out_img = out_img.view(np.int16)
    _save_png(out_img, out / f"{p.app}.png")
    _save_png(img, out / "input.png")
    check_output(p.app, out_img, {"numpy interpreter": g_np, "Halide": g_hl}, plan.box, out)
    secs["total"] = time.perf_counter() - t0
    rep = run_report(p, flow, mm, cm, harness, sim, plan, secs, out_img)
    (out / "run_report.json").write_text(json.dumps(rep, indent=1) + "\n")
    return AppRun(p.app, img, out_img, g_np, g_hl, flow, harness, sim, plan, rep, out)


def run_report(p: RunParams, flow: FlowResult, mm, cm, harness: Harness, sim: SimRun,
               plan: StreamPlan, secs: dict[str, float], out_img: np.ndarray) -> dict[str, Any]:
    """The ``run_report.json`` document (schema :data:`RUN_SCHEMA`)."""
    from mapper.report import report as pnr_report
    from mapper.route import find_graphs

    pr = pnr_report(flow, find_graphs(p.design))
    sched = mm.schedule
    ideal_first = sched.stages[mm.pipeline.output].first_write()
    ideal_cycles = sched.completion_cycle()
    return {
        "schema": RUN_SCHEMA,
        "app": p.app, "design": str(p.design), "seed": p.seed, "image": p.image,
        "size": [p.size, p.size], "unroll": p.unroll,
        "output_shape": list(out_img.shape),
        "match": {"numpy": True, "halide": True},
        "resources": pr["resources"],
        "pes_per_stage": cm.pe_counts(),
        "wirelength_total": pr["wirelength_total"],
        "wirelength_segments": pr["wirelength_segments"],
        "routing_iterations": pr["routing_iterations"],
        "registers": pr["registers"],
        "timing": {k: v for k, v in pr["timing"].items() if k != "critical_path"},
        "cycles": {"stream": plan.cycles, "ideal_stream": ideal_cycles,
                   "total_clock_edges": sim.total_cycles,
                   "config_writes": len(flow.bitstream.pairs())},
        "latency": {"first_output_cycle": plan.first_output, "ideal_first_output_cycle":
                    ideal_first, "extra_cycles": plan.first_output - ideal_first,
                    "per_output": pr["extra_output_latency_cycles"]},
        "verilator": {"key": harness.key, "cached": harness.cached,
                      "build_seconds": round(harness.build_seconds, 3)},
        "stage_seconds": {k: round(v, 4) for k, v in secs.items()},
    }


@click.command("run")
@click.argument("app")
@click.option("--design", required=True, type=click.Path(file_okay=False),
              help="collateral directory written by `cgra rtl` (e.g. build/small)")
@click.option("--out", default=None, type=click.Path(file_okay=False),
              help="output directory (default build/apps/<app>)")
@click.option("--seed", default=0, show_default=True, help="placement seed")
@click.option("--image", default="camera", show_default=True, type=click.Choice(IMAGES))
@click.option("--size", default=64, show_default=True, help="square input image side (pixels)")
@click.option("--unroll", default=1, show_default=True, help="pixels per cycle (lanes)")
def run_cmd(app: str, design: str, out: str | None, seed: int, image: str, size: int,
            unroll: int) -> None:
    """Map APP onto the design, simulate it on the RTL and compare with both golden models."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 100_000))
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    params = RunParams(app, design, out, seed, image, size, unroll)
    t0 = time.perf_counter()
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        task = progress.add_task(f"{app}: start", total=None)
        last = [t0, None]

        def step(msg: str) -> None:
            now = time.perf_counter()
            if last[1] is not None:
                console.log(f"{app}: {last[1]} done in {now - last[0]:.2f} s")
            last[0], last[1] = now, msg
            progress.update(task, description=f"{app}: {msg}")

        run = run_app(params, step)
        step("finished")
    r = run.report
    res = r["resources"]["used"]
    click.echo(f"{app} on {Path(design).name}: {run.output.shape[1]}x{run.output.shape[0]} "
               f"output matches numpy and Halide bit-exactly; "
               f"{', '.join(f'{n} {k}' for k, n in sorted(res.items()))}; "
               f"wirelength {r['wirelength_total']}; {r['cycles']['stream']} cycles, first "
               f"output at {r['latency']['first_output_cycle']} (ideal "
               f"{r['latency']['ideal_first_output_cycle']}); "
               f"{time.perf_counter() - t0:.1f} s -> {run.out_dir}")
