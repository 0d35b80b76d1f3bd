"""Running a compiled app on the generated RTL: the stream plan of the top ports, the bitstream
proof, the Verilator run, the comparison with both golden models and ``run_report.json``.

Streams of the simulation (the static schedule of :mod:`mapper.mapping.schedule`, shifted by
pipelining):

* input: IO instance ``io_in_<input>_l<q>`` placed on IO tile ``(x, 0)`` drives top port
  ``glb2io_16_X<xx>_Y<yy>``; the ``k``-th event of its program (``extents [P, H]``,
  dimension 0 innermost) carries pixel ``(U*(k mod P) + q, k div P)`` (0 beyond the image);
  cycle 0 is the first cycle with ``clk_en = 1`` after the flush;
* output: ``io_out_<stage>_l<q>`` is sampled at top port ``io2glb_16_X<xx>_Y<yy>`` at the cycles
  of its (pipelining-shifted) program; event ``k`` is pixel ``x = U*(x0 div U + k mod n) + q``,
  ``y = y0 + k div n`` of the output stage's domain box ``[x0, x1) x [y0, y1)`` (events with
  ``x`` outside the box are edge lanes and ignored);
* a copy of a duplicated design (:mod:`mapper.duplicate`, Cascade §V-C4) streams its strip:
  its IO instances' ``row_shift`` is added to ``y`` of every input and output event.

The input stream carries the app's input image (:func:`mapper.apps.app_images`: the pixels,
or their bf16 encodings for a ``BFloat16`` input); outputs are compared as 16-bit words (bf16
encodings for a ``BFloat16`` output).

Files of the sim stage: ``<app>.png`` (output, 8-bit when it fits, see
:func:`mapper.images.save_png`; a ``BFloat16`` output shows its values; an app whose outputs
are ``red``, ``green`` and ``blue`` gets one RGB picture of the three,
:func:`mapper.images.save_rgb_png`, and a colour ``compare.png``), ``input.png``, ``compare.png`` (input, output and difference
to the golden side by side), ``run_report.json`` (schema :data:`RUN_SCHEMA`: resources,
wirelength, routing iterations, seconds per stage, cycles, latency vs the ideal, golden
agreement, ``bitstream_proof``) and the simulation files ``sim.*``. Before the Verilator
build, the bitstream is proved to realise the pipelined routing (:func:`mapper.backend.verify.verify`,
Canal's SMT model): a wrong select, a second driver or a misplaced register stops the run with
the net, node and config field named.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from cgra.errors import SimulationError
from mapper import ir
from mapper import stages as st
from mapper.collateral import Collateral
from mapper.params import AppParams, SimOptions, Step
from mapper.stages import (RUN_SCHEMA, FlowResult, load_bitstream, load_flow, open_design,
                           read_app)
from mapper.mapping.streams import stream_events
from mapper.backend.bitstream import BitstreamWords
from mapper.backend.verify import verify
from mapper.backend.power import gated_by_bitstream, power_summary, used_tiles
from mapper.sim.energy import estimate, tile_activity
from mapper.backend.report import report as pnr_report
from mapper.interp import run_outputs
from mapper.apps import (HALIDE_TOLERANCE_ULP, app_images, build_app, colour_outputs,
                         display_image, load_app_image, lower_app)
from mapper.images import save_comparison, save_png, save_rgb_png
from mapper.sim.halide import run_halide_outputs
from mapper.duplicate import duplication_report
from mapper.sim.glb import GlbApp, design_glb, glb_section, run_through_glb
from mapper.sim.plan import StreamPlan
from mapper.sim.rv_predict import predict

@dataclass
class AppRun:
    """Everything one run produced (see :func:`mapper.flow.run_app`)."""

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
    #: the run through the GLB (:class:`mapper.sim.glb.GlbRun`) on a design with one
    glb: Any = None


def io_port(tag: str, direction: str, xy: tuple[int, int], *, width: int = 16) -> str:
    """Top-level port of an IO instance with PnR ``tag`` (``I`` data IO of ``width`` bits,
    the design's data width; ``i`` 1-bit) placed on IO tile ``xy``; ``direction`` ``in``
    (``glb2io``) or ``out`` (``io2glb``): ``glb2io_<width>_X<xx>_Y<yy>`` (the IO core's
    external ports, :func:`canal.cores.io_core`)."""
    w = width if tag == "I" else 1
    pre = "glb2io" if direction == "in" else "io2glb"
    return f"{pre}_{w}_X{xy[0]:02X}_Y{xy[1]:02X}"


def io_ports(flow: FlowResult) -> dict[str, str]:
    """IO instance -> its top port (:func:`io_port`, the width of the net it drives or reads
    in the packed design), as :func:`stream_plan` names them."""
    packed = flow.pipelined.packed
    width: dict[str, int] = {}
    for net in packed.nets:
        for inst_name, _port in (net.source, *net.sinks):
            width.setdefault(inst_name, int(net.width))
    return {name: io_port(inst.tag, "in" if inst.kind == "io_in" else "out",
                          flow.placement.sites[name],
                          width=width.get(name, 16 if inst.tag == "I" else 1))
            for name, inst in packed.instances.items() if inst.kind in ("io_in", "io_out")}


def glb_app(run_dir: str | Path, app: str, width: int, height: int,
            images: dict[str, np.ndarray]) -> GlbApp:
    """The app of a run directory (stages up to ``bitstream`` done: `cgra run` / `cgra
    bitstream` of ``app`` at ``width`` x ``height``) as one app of a concurrent GLB run
    (:class:`mapper.sim.glb.GlbArray`), with the input ``images`` (input name -> image).
    Raises :class:`~cgra.errors.CollateralError` for a missing or stale run directory."""
    coll = open_design(run_dir)
    flow = load_flow(run_dir, coll)
    flow.bitstream = load_bitstream(run_dir, coll)
    dsl = build_app(app, width, height)
    return GlbApp(app, flow, stream_plan(flow, images, dsl.output.name), images, io_ports(flow))


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
                                  f"only DSL apps (memory-mapped by mapper.mapping.memory) can be "
                                  f"simulated")
        cyc, (i0, i1) = stream_events(c["program"])
        u, lane = int(c.get("unroll", 1)), int(c.get("lane", 0))
        shift = int(c.get("row_shift", 0))     # a duplicated copy's strip (mapper.duplicate)
        bits = io_width.get(name, 16 if inst.tag == "I" else 1)
        port = io_port(inst.tag, "in" if inst.kind == "io_in" else "out", sites[name],
                       width=bits)
        if inst.kind == "io_in":
            img = images.get(c["input"])
            if img is None:
                raise SimulationError(f"IO {name}: no image for input '{c['input']}'")
            img = ir.pad_image(np.asarray(img), tuple(c.get("pad", ir.NO_PAD)))  # repeat-edge
            h, w = img.shape
            x, y = u * i0 + lane, i1 + shift
            ok = (x < w) & (y < h)
            vals = np.zeros(int(cyc.max()) + 1, np.int64)
            vals[cyc[ok]] = img[y[ok], x[ok]].astype(np.int64) & ((1 << bits) - 1)
            inputs[port] = vals
        else:
            x0, x1, y0, y1 = (int(v) for v in c["box"])
            stage = str(c.get("stage", name))
            stage_of[name], boxes[stage] = stage, (x0, x1, y0, y1)
            x, y = u * (x0 // u + i0) + lane, y0 + i1 + shift
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
    """``(FlowResult with its bitstream, proof)``: the run's pipelined design and bitstream
    (:func:`mapper.stages.load_flow`: packed design, placement and routing checked against
    each other and the design; :func:`mapper.stages.load_bitstream`: ``<app>.bs``, the file
    a user deploys, must hold exactly bitstream.json's words), the ``.bs`` words proved to
    realise the routing with pipelining's latencies (:func:`mapper.backend.verify.verify`,
    its messages naming the ``.bs`` file and line; ``secs['proof']``). What is simulated is
    these words."""
    flow = load_flow(run_dir, coll)
    flow.bitstream = load_bitstream(run_dir, coll)
    words = BitstreamWords(flow.bitstream.pairs(), str(st.bitstream_file(run_dir)))
    say("prove bitstream")
    t = time.perf_counter()
    proof = verify(words, flow.pipelined, coll)
    secs["proof"] = time.perf_counter() - t
    return flow, proof


#: files a simulation writes into the run directory whatever the app: the harness's
#: (``sim.bs``, ``sim.stim``, ``sim.out``), the report and the pictures of every app
SIM_FILES = ("sim.bs", "sim.stim", "sim.out", "run_report.json", "input.png", "input.npy",
             "compare.png")


def clear_sim_outputs(run_dir: Path, name: str) -> list[Path]:
    """Remove what an earlier simulation of app ``name`` left in ``run_dir`` (:data:`SIM_FILES`,
    ``<name>.png`` / ``.npy`` and ``<name>_*.png`` / ``.npy``: outputs, a DNN layer's
    ``<name>_output.npy``), so that a harness or a step that writes nothing cannot leave a
    stale result that seems to match. Returns the files removed."""
    d = Path(run_dir)
    found = [d / f for f in SIM_FILES]
    found += [d / f"{name}{ext}" for ext in (".png", ".npy")]
    found += sorted(p for ext in ("png", "npy") for p in d.glob(f"{name}_*.{ext}"))
    gone = []
    for p in found:
        if p.is_file():
            p.unlink()
            gone.append(p)
    return gone


def simulate_on_rtl(run_dir: Path, coll: Collateral, flow: FlowResult,
                    inputs: dict[str, np.ndarray], ports: list[str], cycles: int,
                    opts: SimOptions, say: Step, secs: dict[str, float], name: str,
                    pairs: list[tuple[int, int]] | None = None, system: bool = False):
    """Remove the outputs of an earlier simulation (:func:`clear_sim_outputs`), build (or
    reuse) the design's Verilator harness and run ``flow``'s bitstream (the ``.bs`` words,
    :func:`proved_flow`; ``pairs``: the same writes in another order, the order the GLB's
    config network performs them) on it for ``cycles`` cycles with ``inputs`` (top port ->
    words per cycle), sampling ``ports`` (``system``: on the design's system top, the array
    and its GLB, ``SimParams.system``); ``secs`` gets ``verilator_build`` and ``simulation``. Returns
    ``(harness, SimRun)``. Raises :class:`SimulationError` when the harness writes no output
    file or a config register does not read back its bits."""
    from mapper.sim.verilator import SimParams, build_harness, run_harness  # deferred: loads psutil only when called

    clear_sim_outputs(run_dir, name)
    sim_params = opts.sim or SimParams()
    if opts.energy and not sim_params.toggles:     # the estimate needs per-tile toggles
        sim_params = replace(sim_params, toggles=True)
    stalls = {k: v for k in ("stall_in", "stall_out", "stall_seed")
              if (v := getattr(opts, k)) is not None}
    if stalls:                          # a ready-valid design's random stalls (cgra run)
        sim_params = replace(sim_params, **stalls)
    if opts.hierarchy is not None:
        sim_params = replace(sim_params, hierarchy=opts.hierarchy)
    if system:                          # the array and its GLB (design.json "system")
        sim_params = replace(sim_params, system=True)
    say("verilator build")
    harness = build_harness(coll.root, sim_params, progress=say)
    secs["verilator_build"] = harness.build_seconds
    say("simulate")
    out = Path(run_dir) / "sim.out"
    try:
        sim = run_harness(harness, flow.bitstream.pairs() if pairs is None else pairs,
                          inputs, ports, cycles, run_dir, sim_params)
    except FileNotFoundError as exc:
        if exc.filename is None or Path(exc.filename) != out:
            raise
        raise SimulationError(f"{name}: the simulation harness {harness.exe} exited without "
                              f"writing {out}; rebuild it (remove {Path(harness.exe).parent})"
                              f" and run `cgra sim` again") from None
    secs["simulation"] = sim.seconds
    if sim.readback_mismatches:
        a, e, g = sim.readback_mismatches[0]
        raise SimulationError(f"{name}: config read-back differs at "
                              f"{len(sim.readback_mismatches)} address(es); first: address "
                              f"{a:08X} wrote {e:08X}, read {g:08X} (a config register that "
                              f"does not hold its bits)")
    return harness, sim


def simulate_app(run_dir: str | Path, coll: Collateral, opts: SimOptions | None = None,
                 step: Step | None = None, seconds: dict[str, float] | None = None) -> AppRun:
    """bitstream + pipelined design -> Verilator simulation of the design's RTL on the image,
    bit-exact comparison with both golden models (the numpy interpreter of the IR and the
    same algorithm in real Halide; for an app with a stated bound,
    :data:`mapper.apps.HALIDE_TOLERANCE_ULP`, its BFloat16 outputs match Halide within that
    many bf16 ulps and ``run_report.json`` gets ``halide_ulp``: output -> tolerance, maximum
    measured, differing pixels), output pictures and ``run_report.json``. Raises
    :class:`SimulationError` naming the first mismatching pixel and the golden model."""
    say = step or (lambda _m: None)
    opts = opts or SimOptions()
    run_dir = Path(run_dir)
    app = read_app(run_dir)
    if app.get("kind") != "dsl":
        raise SimulationError(f"{app['name']}: only DSL apps can be simulated (a CoreIR file "
                              f"has no stream schedule and no golden); use `cgra run <app>` "
                              f"with one of the shipped apps")
    dup = app.get("duplicate")          # one copy's strip app; the golden is the whole app's
    ap = AppParams(**{**app["params"], **(dup["app"] if dup else {})})
    secs = dict(seconds or {})
    flow, proof = proved_flow(run_dir, coll, say, secs)
    dsl_p = build_app(ap.app, ap.width, ap.height, ap.unroll)
    source = load_app_image(dsl_p, opts.image, (ap.height, ap.width))
    images = app_images(dsl_p, source)  # planes / mosaic / bf16 encodings by convention
    img = images[dsl_p.inputs[0].name] if dsl_p.image != "grey" else source
    plan = stream_plan(flow, images, dsl_p.output.name)
    sampled = [o[1] for o in plan.outputs]
    glb = design_glb(coll.root)
    glb_run = None
    if glb is None:
        harness, sim = simulate_on_rtl(run_dir, coll, flow, plan.inputs, sampled, plan.cycles,
                                       opts, say, secs, app["name"])
        res = plan.assemble(sim.outputs, app["name"])
    else:       # through the GLB's model: config network, load DMAs, store DMAs (docs/glb.md)
        ran: dict[str, Any] = {}

        def run_system(inputs, ports, cycles):
            ran["harness"], ran["sim"] = simulate_on_rtl(run_dir, coll, flow, inputs, ports,
                                                         cycles, opts, say, secs,
                                                         app["name"], [], system=True)
            return ran["sim"].outputs
        say("GLB: configure, load")
        t = time.perf_counter()
        from mapper.sim.verilator import SimParams, flush_wait_of, load_design_doc  # deferred: loads psutil only when called
        doc = load_design_doc(coll.root)
        outputs = [q.name for q in doc.system_ports if q.direction.startswith("out")]
        glb_run = run_through_glb(glb, coll.size[1], coll.size[0], flow, plan, images,
                                  io_ports(flow), run_system, outputs,
                                  flush_wait_of(doc, opts.sim or SimParams()), app["name"])
        harness, sim = ran["harness"], ran["sim"]
        secs["glb_model"] = time.perf_counter() - t - secs.get("simulation", 0.0) \
            - secs.get("verilator_build", 0.0)
        res = glb_run.outputs
    say("golden models")
    t = time.perf_counter()
    ir_p = lower_app(ap.app, ap.width, ap.height, ap.unroll)
    # a design of narrower words than the app's runs it in its own word width (as map_app)
    narrow = ir.narrow_pipeline(ir_p, coll.data_width)
    g_np_all = run_outputs(narrow, images)
    secs["golden_numpy"] = time.perf_counter() - t
    t = time.perf_counter()
    g_hl_all = run_halide_outputs(dsl_p, images,
                                  coll.data_width if narrow is not ir_p else None)
    secs["golden_halide"] = time.perf_counter() - t
    outs: dict[str, np.ndarray] = {}
    for o in ir_p.outputs:
        outs[o] = res[o].astype(np.uint16)
        if g_np_all[o].dtype == np.int16:
            outs[o] = outs[o].view(np.int16)
    primary = ir_p.output
    out_img, g_np, g_hl = outs[primary], g_np_all[primary], g_hl_all[primary]
    rgb = colour_outputs(dsl_p)     # red, green, blue outputs: one colour picture
    if rgb is not None:
        save_rgb_png(np.stack([display_image(dsl_p, outs[o], o) for o in rgb], axis=-1),
                     run_dir / f"{app['name']}.png")
    else:
        save_png(display_image(dsl_p, out_img), run_dir / f"{app['name']}.png")
    for o in ir_p.outputs if ir_p.more_outputs else ():     # several outputs: one PNG each
        save_png(display_image(dsl_p, outs[o], o), run_dir / f"{app['name']}_{o}.png")
    save_png(img, run_dir / "input.png")
    # a colour app's input panel is the colour image (not the plane or mosaic streamed in)
    shown_in = source if dsl_p.image != "grey" else img
    if rgb is not None:             # the colour output, its three planes as one picture
        shown = [shown_in] + [np.stack([display_image(dsl_p, a[o], o) for o in rgb], axis=-1)
                              for a in (outs, g_np_all)]
    else:
        shown = [shown_in, display_image(dsl_p, out_img), display_image(dsl_p, g_np)]
    save_comparison(*shown, run_dir / "compare.png",
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
    dyn = flow.pipelined.routing.dynamic
    if dyn:
        # a hybrid array: the nets that overflowed to the dynamic layer (canal.dynamic)
        rep["dynamic"] = {"nets": len(dyn), "flows": {n: {"id": r.id, "sinks": len(r.sinks),
                                                           "tokens": sorted(set(
                                                               r.tokens.values()))}
                                                       for n, r in dyn.items()}}
    if "handshake" in rep:
        # the cycle-level model of the ready-valid network predicts the run (issue 33, item
        # 5; the routes in memory, the stimulus header the harness read): the same cycles as
        # the RTL, or our model has a bug
        say("cycle model")
        t = time.perf_counter()
        model = predict(coll, flow.pipelined.routing.routes(), harness.inputs,
                        harness.outputs, run_dir, dyn)
        secs["cycle_model"] = time.perf_counter() - t
        rep["stage_seconds"]["cycle_model"] = round(secs["cycle_model"], 4)
        rep["handshake"]["model_cycles"] = model.cycles
    if dup:
        rep["size"], rep["unroll"] = [ap.width, ap.height], ap.unroll
        rep["duplication"] = duplication_report(run_dir)
    if halide_ulp:        # match.halide = within the tolerance; the measured agreement:
        rep["halide_ulp"] = halide_ulp
    if ir_p.more_outputs:
        rep["outputs"] = {o: list(a.shape) for o, a in outs.items()}
    rep["bitstream_proof"] = proof.to_dict()
    if glb_run is not None:
        rep["glb"] = glb_section(glb_run)
    # power domains in the bitstream's power state, and the energy estimate (a model)
    pairs = flow.bitstream.pairs()
    off = gated_by_bitstream(coll, pairs)
    routing = flow.pipelined.routing
    rep["power"] = power_summary(coll, flow.placement, routing, off)
    rep["toggles"] = toggle_section(sim, plan, harness)
    sections = {"power": rep["power"]}
    if opts.energy:
        say("energy estimate")
        t = time.perf_counter()
        rep["energy"] = sections["energy"] = run_energy(coll, flow, plan, sim, harness, off,
                                                        int(out_img.size),
                                                        rep["timing"]["fmax_mhz"], opts)
        secs["energy"] = time.perf_counter() - t
        rep["stage_seconds"]["energy"] = round(secs["energy"], 4)
    st.update_pnr_report(run_dir, sections)
    st.save_run_report(run_dir, coll, rep)
    return AppRun(app["name"], img, out_img, g_np, g_hl, flow, harness, sim, plan, rep, run_dir,
                  coll, outs, glb_run)


def run_energy(coll: Collateral, flow: FlowResult, plan: StreamPlan, sim, harness,
               gated: set[tuple[int, int]], pixels: int, fmax_mhz: float,
               opts: SimOptions) -> dict[str, Any]:
    """The ``energy`` section (:func:`mapper.sim.energy.estimate`) of a simulated run: the
    used tiles of its placement and pipelined routing, the tiles its bitstream gates, the
    streams of the Verilator run (every driven input and sampled output), the yosys cell
    counts cached in the design's model cache (``cells/``)."""
    from mapper.sim.verilator import SimParams, model_cache_dir  # deferred: loads psutil only when called

    streams = _io_streams(plan, sim, harness)
    tags = {xy: t.tag for xy, t in coll.tiles.items()}
    cache = model_cache_dir(coll.root, opts.sim or SimParams()) / "cells"
    return estimate(coll.root, cache, tags, used_tiles(flow.placement, flow.pipelined.routing),
                    gated, streams, _activity(sim, streams, harness), plan.cycles, pixels,
                    fmax_mhz, coll.data_width)


def _io_streams(plan: StreamPlan, sim, harness) -> dict[str, tuple[np.ndarray, int]]:
    """Top port -> (words per stream cycle, port bits) of every input the run streamed and
    every output it sampled."""
    streams = {p: (np.asarray(v), harness.widths[p]) for p, v in plan.inputs.items()}
    # (a system top's GLB ports, glb_*, are not the array's)
    streams.update({p: (np.asarray(v), harness.widths[p]) for p, v in sim.outputs.items()
                    if not p.startswith("glb_")})
    return streams


def _activity(sim, streams: dict[str, tuple[np.ndarray, int]], harness
              ) -> dict[tuple[int, int], tuple[int, int]]:
    """Per-tile (toggles, switching bits) of a Verilator run (:func:`tile_activity`). Raises
    :class:`SimulationError` when the harness counted no toggles (one built before toggle
    probes: rebuild it)."""
    if not sim.toggles:
        raise SimulationError(f"the Verilator harness {harness.exe} counts no tile toggles "
                              f"(no probe wires); remove it from the model cache and run again")
    return tile_activity(sim.toggles, streams)


def toggle_section(sim, plan: StreamPlan, harness) -> dict[str, Any]:
    """The ``toggles`` section of ``run_report.json``: the bit toggles over the stream cycles
    of each tile's outputs (its switch-box output wires, counted by the Verilator harness,
    and the IO ports it streams), ``per_tile`` as ``[x, y, toggles, switching bits]`` for
    every tile that switched (sorted), and the total; empty ``per_tile`` and ``source``
    saying so for a harness without toggle probes."""
    if not sim.toggles:
        return {"source": "none: the harness has no toggle probes", "per_tile": [],
                "total": 0}
    act = tile_activity(sim.toggles, _io_streams(plan, sim, harness))
    return {"source": "Verilator run: bit toggles of each tile's output wires and IO ports "
                      "over the stream cycles", "cycles": plan.cycles,
            "per_tile": [[x, y, t, b] for (x, y), (t, b) in sorted(act.items())],
            "total": sum(t for t, _b in act.values())}


def run_report(app: dict[str, Any], opts: SimOptions, coll: Collateral, flow: FlowResult,
               harness, sim, plan: StreamPlan, secs: dict[str, float],
               out_img: np.ndarray) -> dict[str, Any]:
    """The ``run_report.json`` document (schema :data:`RUN_SCHEMA`)."""

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
                      "build_seconds": round(harness.build_seconds, 3),
                      "hier_columns": harness.hier_columns,
                      "hier_tiles": list(harness.hier_tiles)},
        "stage_seconds": {k: round(v, 4) for k, v in secs.items()},
    } | ({"handshake": _handshake_section(sim.handshake, plan.cycles)}
         if getattr(sim, "handshake", None) else {})


def _handshake_section(hs: dict[str, float], tokens: int) -> dict[str, Any]:
    """The ``handshake`` section of a ready-valid run (:mod:`mapper.sim.rv_harness`): the
    stall draws (``seed``, ``p_in``, ``p_out``), ``tokens`` per output stream (the static
    schedule's cycles), the ``cycles`` the stalled run took, the stall and backpressure
    cycles (summed over the sockets) and tokens per cycle."""
    return {"seed": int(hs["seed"]), "p_in": hs["p_in"], "p_out": hs["p_out"],
            "tokens": tokens, "cycles": int(hs["cycles"]),
            "input_stall_cycles": int(hs["input_stall_cycles"]),
            "output_backpressure_cycles": int(hs["output_backpressure_cycles"]),
            "tokens_per_cycle": round(tokens / max(1, hs["cycles"]), 4)}


__all__ = ["NAN_ULP_DISTANCE", "SIM_FILES", "AppRun", "StreamPlan", "bf16_ulp_distance",
           "check_output", "clear_sim_outputs", "first_mismatch", "glb_app", "io_port", "io_ports",
           "proved_flow",
           "run_report", "simulate_app", "simulate_on_rtl", "stream_plan"]
