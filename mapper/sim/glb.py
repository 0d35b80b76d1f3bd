"""`cgra run` through the global buffer: a design directory with GLB collateral
(``<design>/glb/glb.json`` and the system top, written by `cgra rtl` for a TOML with a
``[glb]`` table) runs the array and its GLB in one Verilator model (the system top,
:func:`garnet.glb.rtl.system_verilog`; AHA paper §4.4, Figs. 11-12), driven only through the
GLB's host and control ports and the columns' stall and flush (:func:`run_through_glb`):

* configuration: the bitstream is host-written into GLB banks as its unicast + row-multicast
  image and streamed by the config streamers into the array's per-column config paths
  (:class:`canal.rtl.ConfigColumns`), every column in parallel, while the columns are
  stalled (``stall_X<xx>``);
* input: each input IO tile's image is host-written into a buffer of the GLB tile serving its
  column; its load DMA (the IO tile's stream program as a Lake port program) and the store
  DMA of each output get one ``start``; the columns are flushed (``flush_X<xx>``) just before
  and run from the cycle the first word reaches the array (:class:`ColumnTimeline`);
* output: each store DMA writes the array's output into a buffer; the host reads the buffers
  back (``glb_host_rdata``); the output image is assembled from them.

The GLB's input sequence is built on its cycle model (:class:`garnet.glb.stream.GlbSession`),
which, given the array's sampled outputs, must read the same buffers as the RTL. Partial
reconfiguration while other columns run (:meth:`GlbArray.run_live`) runs on the same system
top.

Report: ``run_report.json`` ``glb`` (:func:`glb_section`) and the `cgra run` summary line
("through the GLB ..."). Errors: :class:`~cgra.errors.CollateralError` for an unreadable
``glb.json``; :class:`~cgra.errors.SimulationError` for a stream the GLB cannot serve
(two inputs on one GLB tile, a buffer too large; :mod:`garnet.glb.stream`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from canal.config import column_ports
from cgra.errors import SimulationError
from garnet.glb.collateral import DESIGN_DIR, read as read_glb
from garnet.glb.confignet import simulate as config_cycles
from garnet.glb.params import GlbParams
from garnet.glb.collateral import SYSTEM_INPUTS, store_candidates
from garnet.glb.model import Cycle
from garnet.glb.stream import ConfigResult, GlbSession, LoadStream, StoreStream, StreamRun
from lake.program import program as port_program
from mapper import ir
from mapper.sim.plan import StreamPlan
from mapper.stages import FlowResult



def design_glb(design_dir: str | Path | None) -> GlbParams | None:
    """The GLB parameters of a design directory (``<design>/glb/glb.json``), ``None`` when it
    has none. Raises :class:`~cgra.errors.CollateralError` for a malformed file."""
    if design_dir is None:
        return None
    path = Path(design_dir) / DESIGN_DIR / "glb.json"
    return read_glb(path) if path.is_file() else None


@dataclass(frozen=True)
class _OutMeta:
    unroll: int
    x0: int
    y0: int
    shift: int


def glb_streams(flow: FlowResult, images: dict[str, np.ndarray], ports: dict[str, str]
                ) -> tuple[list[LoadStream], list[StoreStream], dict[str, _OutMeta]]:
    """The load and store streams of a placed, pipelined design (``ports``: IO instance ->
    its top port, :func:`mapper.sim.run.io_ports`; the IO instances' programs
    of :func:`mapper.sim.run.stream_plan`, as Lake port programs with element addresses in
    GLB buffers). Input buffer: the window of the (edge-padded) image the program reads,
    ``H`` rows (the duplicated copy's strip from ``row_shift``) x ``U*P`` columns, zeros
    outside the picture; output buffer: ``H`` x ``U*P``. Raises :class:`SimulationError` for
    an IO program that is not 2-D or a missing input image."""
    packed = flow.pipelined.packed
    sites = flow.placement.sites
    loads: list[LoadStream] = []
    stores: list[StoreStream] = []
    meta: dict[str, _OutMeta] = {}
    for name, inst in sorted(packed.instances.items()):
        if inst.kind not in ("io_in", "io_out"):
            continue
        c = inst.config
        prog = c.get("program") or {}
        ext = [int(e) for e in prog.get("extents", [])]
        if len(ext) != 2:
            raise SimulationError(f"IO instance {name}: stream program of {len(ext)} "
                                  f"dimensions; the GLB streams 2-D IO programs")
        u, lane = int(c.get("unroll", 1)), int(c.get("lane", 0))
        shift = int(c.get("row_shift", 0))
        sched = prog["schedule"]
        pw, ph = ext
        cols = u * pw
        port = ports[name]
        bits = int(port.split("_")[1])
        pp = port_program(ext, [u, cols], lane, sched["strides"], int(sched["offset"]))
        if inst.kind == "io_in":
            img = images.get(c["input"])
            if img is None:
                raise SimulationError(f"IO {name}: no image for input '{c['input']}'")
            img = ir.pad_image(np.asarray(img), tuple(c.get("pad", ir.NO_PAD)))
            h, w = img.shape
            buf = np.zeros((ph, cols), dtype=np.int64)
            rows = max(0, min(ph, h - shift))
            buf[:rows, :min(cols, w)] = img[shift:shift + rows, :min(cols, w)]
            loads.append(LoadStream(port, sites[name][0], buf & ((1 << bits) - 1), pp))
        else:
            x0, _x1, y0, _y1 = (int(v) for v in c["box"])
            stores.append(StoreStream(port, sites[name][0], (ph, cols), pp))
            meta[name] = _OutMeta(u, x0, y0, shift)
    return loads, stores, meta


def assemble(plan: StreamPlan, buffers: dict[str, np.ndarray], meta: dict[str, _OutMeta],
             app: str = "") -> dict[str, np.ndarray]:
    """Output stage -> its image (int64 ``[y, x]`` over its box) from the buffers the host
    read back (top port -> ``[rows, U*P]``): pixel ``(x, y)`` of an output instance is
    ``buffer[y - y0 - row_shift, x - U*(x0 div U)]``. Raises :class:`SimulationError` when a
    pixel of a box is not covered."""
    def value(name, port, _cyc, ys, xs):
        m = meta[name]
        return buffers[port][ys - m.y0 - m.shift, xs - m.unroll * (m.x0 // m.unroll)]
    return plan.gather(value, app, "are in no GLB output buffer")


class ColumnTimeline:
    """The per-cycle stall and flush of each column of a system top (``stall_X<xx>``,
    ``flush_X<xx>`` of :func:`canal.config.column_ports`) over a run of ``cycles`` cycles on
    ``columns`` array columns: ``inputs`` (top port -> ``cycles`` words), all 0 (running)
    until :meth:`hold` stalls columns. ``flush_wait``: cycles the flush spine needs after
    the flush (the harness's, :func:`mapper.sim.verilator.flush_wait_of`)."""

    def __init__(self, columns: int, cycles: int, flush_wait: int):
        self.cycles, self.flush_wait = cycles, flush_wait
        self.inputs: dict[str, np.ndarray] = {}
        for x in range(columns):
            _v, _w, fl, stall = column_ports(x)
            self.inputs[fl] = np.zeros(cycles, dtype=np.int64)
            self.inputs[stall] = np.zeros(cycles, dtype=np.int64)

    def hold(self, columns: Sequence[int], start: int, restart: int) -> int:
        """Stall ``columns`` from cycle ``start`` to ``restart`` (exclusive; config writes go
        on) and flush them ``flush_wait + 1`` cycles before ``restart`` (one cycle, as the
        harness's flush), so that they run again at ``restart`` as after the harness's
        configuration. Returns the flush cycle. Raises :class:`SimulationError` when the
        flush and its drain do not fit between ``start`` and ``restart`` or ``restart`` is
        after the run."""
        flush = restart - 1 - self.flush_wait
        if flush < start or restart > self.cycles:
            raise SimulationError(f"column stall: cycles {start}..{restart} of {self.cycles} "
                                  f"cannot hold a flush and its {self.flush_wait}-cycle drain")
        for x in columns:
            _v, _w, fl, stall = column_ports(x)
            self.inputs[stall][start:restart] = 1
            self.inputs[fl][flush] = 1
        return flush


def _bundle_cycles(session: GlbSession) -> list[int]:
    """The system run's cycles (the model's cycle - 1) in which a config streamer of
    ``session`` sends a bundle to a column path."""
    return [k - 1 for k, o in enumerate(session.outputs) if any(map(any, o.cfg_valid))]


def _hold(tl: ColumnTimeline, columns: Sequence[int], start: int, restart: int,
          bundles: list[int], stages: int, who: str) -> None:
    """:meth:`ColumnTimeline.hold`, checking that the flush comes after the last register
    write of the bundles sent before ``restart`` (each lands ``stages - 1`` cycles after its
    bundle). Raises :class:`SimulationError` otherwise (a bug of the GLB's input sequence)."""
    flush = tl.hold(columns, start, restart)
    late = [b for b in bundles if b < restart]
    if late and flush < late[-1] + stages:
        raise SimulationError(f"{who}: the columns are flushed before their last config "
                              f"write (a bug of the GLB's input sequence)")


@dataclass
class GlbRun:
    """A run through the GLB (:func:`run_through_glb`): ``session`` (the GLB model of the
    run, given the array's outputs: every cycle driven, its outputs; the system run's cycle
    ``i`` is its cycle ``i + 1``), ``config`` (phase 1), ``serial_cycles`` (the same
    bitstream through the single config port), ``inputs`` (top port -> the words the load
    DMAs stream, per array cycle), ``buffers`` (top port -> output buffer the RTL's host
    reads returned), ``outputs`` (output stage -> image)."""

    params: GlbParams
    session: GlbSession
    config: ConfigResult
    serial_cycles: int
    inputs: dict[str, np.ndarray]
    buffers: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray]
    loads: list[LoadStream]
    stores: list[StoreStream]
    #: the system run's cycle where the array's stream cycle 0 is (the columns unstalled)
    prologue: int = 0
    #: cycles from the first bundle on a column path to the last register written by one
    array_config_cycles: int = 0


#: ``run_system({system top input: words per cycle}, sampled ports, cycles) -> {port: samples
#: per cycle}``: one run of the system top's Verilator model (the array and its GLB,
#: ``SimParams.system``), nothing written through the shared config port
SystemRunner = Callable[[dict[str, np.ndarray], list[str], int], dict[str, np.ndarray]]


def system_inputs(p: GlbParams, cycles: Sequence[Cycle]) -> dict[str, np.ndarray]:
    """The system top's GLB inputs (``glb_<name>`` of :data:`SYSTEM_INPUTS`) per cycle of
    ``cycles`` (:class:`garnet.glb.model.Cycle`; per-tile lists as bit vectors, bit t =
    tile t; a 64-bit word as its int64 bit pattern)."""
    out = {f"glb_{k}": np.zeros(len(cycles), dtype=np.int64) for k in SYSTEM_INPUTS}
    for i, c in enumerate(cycles):
        for k in SYSTEM_INPUTS:
            v = getattr(c, k)
            if isinstance(v, list):
                v = sum(int(b) << t for t, b in enumerate(v))
            v = int(v or 0)
            if v:
                out[f"glb_{k}"][i] = v - (1 << 64) if v >> 63 else v
    return out


def run_through_glb(glb: GlbParams, height: int, width: int, flow: FlowResult,
                    plan: StreamPlan, images: dict[str, np.ndarray], ports: dict[str, str],
                    run_system: SystemRunner, outputs: Sequence[str], flush_wait: int,
                    app: str = "") -> GlbRun:
    """The app on the array and its GLB in one RTL run (module docstring; AHA paper §4.4):
    the GLB's input sequence -- the bitstream's config image host-written and streamed by
    the config streamers (into the columns' config paths, in the RTL), each input image
    host-written and each load and store DMA programmed, one ``start``, the run, the host
    reads of every output buffer -- is built on the GLB's cycle model
    (:meth:`GlbSession.configure`, :meth:`GlbSession.stream`) and driven into the system
    top, whose columns are stalled until the array's stream cycle 0 (flushed just before,
    :class:`ColumnTimeline`); the outputs are the host reads of ``glb_host_rdata``. The GLB
    model run again with the array's outputs as ``io_in`` must read the same buffers.

    ``height`` x ``width``: the array; ``ports``: IO instance -> top port
    (:func:`mapper.sim.run.io_ports`); ``outputs``: the system top's outputs; ``flush_wait``:
    the harness's (:func:`mapper.sim.verilator.flush_wait_of`). Raises
    :class:`SimulationError` when the config writes are not the bitstream's, a stream the
    GLB cannot serve, or the GLB RTL's reads differ from its model's;
    :class:`~cgra.errors.ConfigError` for a bitstream column the GLB does not serve."""
    pairs = flow.bitstream.pairs()
    last: dict[int, int] = {}
    for a, d in pairs:
        if last.setdefault(a, d) != d:
            raise SimulationError(f"{app}: the bitstream writes address {a:08X} twice with "
                                  f"different data; the GLB's column paths do not keep the "
                                  f"bitstream's order across rows")
    session = GlbSession(glb, height)
    cfg = session.configure(pairs)
    if set(cfg.writes) != set(pairs):
        raise SimulationError(f"{app}: the config network performs {len(cfg.writes)} writes, "
                              f"the bitstream has {len(pairs)} (they differ)")
    loads, stores, meta = glb_streams(flow, images, ports)
    st = session.stream(loads, stores, plan.cycles)
    missing = sorted(set(plan.inputs) - set(st.inputs))
    if missing:
        raise SimulationError(f"{app}: top ports {missing} have no GLB load stream")
    # the system run's cycle i is the model's cycle i + 1 (the model's first is the reset,
    # the harness's); array cycle 0 is the model's start + 2
    n = len(session.cycles) - 1
    stim = system_inputs(glb, session.cycles[1:])
    bundles = _bundle_cycles(session)
    stages = -(-height // glb.config_pipeline_rows)
    restart = st.start + 1
    tl = ColumnTimeline(width, n, flush_wait)
    _hold(tl, range(width), 0, restart, bundles, stages, app)
    cand = store_candidates(glb, list(outputs))
    for t in range(glb.tiles):
        stim[f"glb_io_sel_{t}"] = np.zeros(n, dtype=np.int64)
    for port, t in st.store_tiles.items():
        stim[f"glb_io_sel_{t}"][:] = cand[t].index(port)
    store_ports = sorted(st.store_tiles)
    got = run_system({**stim, **tl.inputs}, ["glb_host_rdata", *store_ports], n)
    buffers = session.read_back(st.reads, np.concatenate([[0], got["glb_host_rdata"]]))
    # the GLB model with the array's outputs on io_in reads the same buffers
    model = GlbSession(glb, height)
    model.configure(pairs)
    samples = {q: got[q][restart:restart + plan.cycles] for q in store_ports}
    again = model.stream(loads, stores, plan.cycles, samples)
    for q in buffers:
        if not np.array_equal(again.buffers[q], buffers[q]):
            k = int(np.flatnonzero(again.buffers[q].ravel() != buffers[q].ravel())[0])
            raise SimulationError(f"{app}: the GLB RTL and its model read different output "
                                  f"buffers for {q} (first at element {k}: RTL "
                                  f"{int(buffers[q].ravel()[k])}, model "
                                  f"{int(again.buffers[q].ravel()[k])})")
    outs = assemble(plan, buffers, meta, app)
    serial = config_cycles(glb, pairs, height, "serial").cycles
    writing = bundles[-1] - bundles[0] + stages if bundles else 0
    return GlbRun(glb, model, cfg, serial, st.inputs, buffers, outs, loads, stores, restart,
                  writing)


@dataclass
class GlbApp:
    """One app of a concurrent run (:class:`GlbArray`): ``name``, its placed, pipelined
    ``flow`` with its bitstream, its ``plan`` (:func:`mapper.sim.run.stream_plan`), input
    ``images`` and ``ports`` (IO instance -> top port, :func:`mapper.sim.run.io_ports`)."""

    name: str
    flow: FlowResult
    plan: StreamPlan
    images: dict[str, np.ndarray]
    ports: dict[str, str]


class GlbArray:
    """Apps in disjoint column ranges sharing one array and one GLB (AHA paper §4.4: "disjoint
    column ranges run different apps and are reconfigured independently"), on one
    :class:`GlbSession` that lives across configurations.

    :meth:`run_live` runs apps at once on the system top and reconfigures one app's columns
    while the others stream; :attr:`state` holds the array's config registers the GLB wrote
    (address -> data; absent = the reset value 0)."""

    def __init__(self, glb: GlbParams, height: int):
        self.session = GlbSession(glb, height)
        self.state: dict[int, int] = {}

    def run_live(self, apps: list[GlbApp], old: GlbApp, new: GlbApp, run_system: SystemRunner,
                 width: int, flush_wait: int, outputs: Sequence[str]) -> LiveRun:
        """Partial reconfiguration while the rest of the array runs (AHA paper §4.4), in one
        run of the system top (the array and its GLB in RTL; ``run_system``, ``outputs``: the
        system top's outputs), driven only through the GLB's host and control ports and the
        columns' stall and flush:

        1. every app of ``apps`` is configured through the GLB's config streamers and the
           column paths (every column stalled, then flushed), their images are host-written
           and their DMAs start together;
        2. when ``old`` (one of ``apps``) has streamed its last cycle, only its columns
           (those ``old`` or ``new`` configures) are stalled; its output is read back; the
           GLB streams :func:`reconfiguration` (``new``'s words and the reset value of every
           register only ``old`` wrote) into those columns' paths from the GLB tiles serving
           them; ``new``'s image is written and those tiles' DMAs start; the columns are
           flushed and run again; the other apps stream throughout, their GLB tiles
           untouched;
        3. every other output is read back when its app is done.

        The sequence is built on the GLB model, which, run again with the array's outputs,
        must read the same buffers as the RTL. ``width``: the array's columns;
        ``flush_wait``: the harness's (:func:`mapper.sim.verilator.flush_wait_of`). Raises
        :class:`SimulationError` when ``old`` is not among ``apps``, ``new``'s columns meet
        another app's, or the RTL's reads differ from the model's, and as
        :func:`run_through_glb` does."""
        if old not in apps:
            raise SimulationError(f"run_live: the replaced app {old.name} is not running")
        cols = sorted(_columns_of(old.flow.bitstream.pairs()) |
                      _columns_of(new.flow.bitstream.pairs()))
        for a in apps:
            if a is not old and _columns_of(a.flow.bitstream.pairs()) & set(cols):
                raise SimulationError(f"run_live: {new.name} on columns {cols} meets "
                                      f"{a.name}'s columns")
        p, height = self.session.p, self.session.height
        stages = -(-height // p.config_pipeline_rows)
        everyone = [*apps, new]
        streams = {a.name: glb_streams(a.flow, a.images, a.ports) for a in everyone}
        first = [w for a in apps for w in a.flow.bitstream.pairs()]
        words = reconfiguration(old.flow.bitstream.pairs(), new.flow.bitstream.pairs())

        def build(session: GlbSession) -> dict[str, Any]:
            """The GLB's input sequence on ``session``; the marks of the timeline."""
            marks: dict[str, Any] = {"cfg": [session.configure(first)]}
            run1 = session.begin([ld for a in apps for ld in streams[a.name][0]],
                                 [st for a in apps for st in streams[a.name][1]])
            ends = {a.name: run1.start + 2 + a.plan.cycles + 1 for a in apps}
            session.idle(ends[old.name] - len(session.cycles))
            runs = {a.name: _part(run1, streams[a.name][1]) for a in apps}
            session.finish(runs[old.name])
            marks["cfg"].append(session.configure(words))
            marks["recfg"] = len(session.cycles)
            run2 = session.begin(streams[new.name][0], streams[new.name][1])
            runs[new.name] = run2
            ends[new.name] = run2.start + 2 + new.plan.cycles + 1
            for a in sorted(everyone, key=lambda a: ends[a.name]):
                if a is not old:
                    session.idle(max(0, ends[a.name] - len(session.cycles)))
                    session.finish(runs[a.name])
            marks.update(run1=run1, run2=run2, runs=runs)
            return marks

        session = self.session
        marks = build(session)
        for cfg, want in zip(marks["cfg"], (first, words), strict=True):
            if set(cfg.writes) != set(want):
                raise SimulationError(f"config network: {len(cfg.writes)} writes performed "
                                      f"for {len(want)} words streamed (they differ)")
            for a, d in cfg.writes:
                self.state[a] = d
        n = len(session.cycles) - 1
        # system cycle i = model cycle i + 1; a start at model cycle s: array cycle 0 at
        # system cycle s + 1
        start = {a.name: marks["run1"].start + 1 for a in apps}
        start[new.name] = marks["run2"].start + 1
        recon = start[old.name] + old.plan.cycles
        tl = ColumnTimeline(width, n, flush_wait)
        bundles = _bundle_cycles(session)
        _hold(tl, range(width), 0, start[old.name], bundles, stages, "run_live")
        _hold(tl, cols, recon, start[new.name], bundles, stages, "run_live")
        stim = system_inputs(p, session.cycles[1:])
        cand = store_candidates(p, list(outputs))
        sel_port: dict[int, list[tuple[int, str]]] = {}     # tile -> (from cycle, port)
        for a in everyone:
            for port, t in marks["runs"][a.name].store_tiles.items():
                sel_port.setdefault(t, []).append((0 if a in apps else recon, port))
        for t in range(p.tiles):
            stim[f"glb_io_sel_{t}"] = np.zeros(n, dtype=np.int64)
            for c0, port in sorted(sel_port.get(t, [])):
                stim[f"glb_io_sel_{t}"][c0:] = cand[t].index(port)
        ports = sorted({q for a in everyone for q in marks["runs"][a.name].store_tiles})
        got = run_system({**stim, **tl.inputs}, ["glb_host_rdata", *ports], n)
        rdata = np.concatenate([[0], got["glb_host_rdata"]])
        # the GLB model, with the array's outputs on io_in, reads the same buffers (the
        # output each store tile takes from the cycle its app starts)
        segments = {t: sorted(v) for t, v in sel_port.items()}

        def io_of(k: int) -> list[int]:
            io = [0] * p.tiles
            for t, seg in segments.items():
                port = next((q for c0, q in reversed(seg) if c0 <= k - 1), None)
                if k >= 1 and port is not None:
                    io[t] = int(got[port][k - 1]) & ((1 << p.data_width) - 1)
            return io
        check = GlbSession(p, height, io_source=io_of)
        again = build(check)
        outs = {}
        for a in everyone:
            run = marks["runs"][a.name]
            rtl = session.read_back(run.reads, rdata)
            model = again["runs"][a.name].buffers
            for q in rtl:
                if not np.array_equal(model[q], rtl[q]):
                    raise SimulationError(f"run_live: the GLB RTL and its model read "
                                          f"different buffers for {a.name}'s {q}")
            outs[a.name] = assemble(a.plan, rtl, streams[a.name][2], a.name)
        return LiveRun(outs, start, recon, cols, n)


@dataclass
class LiveRun:
    """A run of :meth:`GlbArray.run_live`: ``outputs`` (app name -> output stage -> image),
    ``start`` (app name -> the array cycle its stream cycle 0 is), ``reconfigure`` (the
    cycle the replaced app's columns were stalled for their new configuration),
    ``columns`` (those columns), ``cycles`` (the whole run)."""

    outputs: dict[str, dict[str, np.ndarray]]
    start: dict[str, int]
    reconfigure: int
    columns: list[int]
    cycles: int


def _columns_of(pairs: Sequence[tuple[int, int]]) -> set[int]:
    return {(a >> 8) & 0xFF for a, _d in pairs}


def _part(run: StreamRun, stores: Sequence[StoreStream]) -> StreamRun:
    """The part of ``run`` (:meth:`GlbSession.begin`) of one app's ``stores``."""
    ports = {s.port for s in stores}
    return StreamRun(run.start, {}, {}, {},
                     {q: t for q, t in run.store_tiles.items() if q in ports}, {},
                     {q: b for q, b in run.store_bufs.items() if q in ports})


def reconfiguration(old: list[tuple[int, int]], new: list[tuple[int, int]]
                    ) -> list[tuple[int, int]]:
    """The words that turn the registers ``old`` wrote into those ``new`` writes from reset:
    ``new``, then 0 (the reset value) for every address ``old`` wrote that ``new`` does not.
    Streamed to the columns of ``old`` and ``new`` only, they leave every other column's
    registers as they are."""
    have = {a for a, _d in new}
    return list(new) + [(a, 0) for a in sorted({a for a, _d in old}) if a not in have]


def glb_section(run: GlbRun) -> dict[str, Any]:
    """``run_report.json`` ``glb``: parameters, configuration (cycles through the GLB with
    unicast + row multicast, through the single port, words of the image), the GLB tiles
    streaming each top port, and the model cycles per phase."""
    p = run.params
    return {
        "params": p.to_dict(),
        "model": "RTL: the array and the GLB in one Verilator model (the design's system "
                 "top); garnet.glb.model, given the array's outputs, reads the same buffers",
        "config": {"mode": "unicast + row multicast", "cycles": run.config.cycles,
                   "single_port_cycles": run.serial_cycles, "image_words": run.config.words,
                   "host_write_cycles": run.config.host_cycles,
                   "writes": len(run.config.writes),
                   "through": "GLB config streamers and column paths (RTL)",
                   "array_cycles": run.array_config_cycles,
                   "restart_cycle": run.prologue},
        "loads": {s.port: s.column // p.columns_per_tile for s in run.loads},
        "stores": {s.port: s.column // p.columns_per_tile for s in run.stores},
        "phases": {k: v[1] for k, v in run.session.phases.items()},
        "glb_cycles": len(run.session.cycles),
    }


def glb_note(section: dict[str, Any]) -> str:
    """The `cgra run` summary's clause: ``through the GLB (4 tiles, in RTL with the array):
    config 45 cycles (unicast + row multicast; single port 172), input via GLB tile 1,
    output via GLB tile 3``."""
    c = section["config"]
    ld = sorted(set(section["loads"].values()))
    st_ = sorted(set(section["stores"].values()))
    return (f"through the GLB ({section['params']['tiles']} tiles, in RTL with the array): "
            f"config {c['cycles']} cycles ({c['mode']}; single port "
            f"{c['single_port_cycles']}), "
            f"input via GLB tile {', '.join(map(str, ld))}, output via GLB tile "
            f"{', '.join(map(str, st_))}")


__all__ = ["ColumnTimeline", "GlbApp", "GlbArray", "GlbRun", "LiveRun", "SystemRunner", "assemble",
           "design_glb", "glb_note", "glb_section", "glb_streams", "reconfiguration",
           "run_through_glb"]
