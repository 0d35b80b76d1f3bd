"""`cgra run` through the global buffer: a design directory with GLB collateral
(``<design>/glb/glb.json``, written by `cgra rtl` for a TOML with a ``[glb]`` table, or
:func:`garnet.glb.collateral.write`) runs its simulation through the GLB's cycle-level model
(:class:`garnet.glb.stream.GlbSession`; AHA paper §4.4, Figs. 11-12).

What goes through the GLB (the array is the generated RTL in Verilator; the GLB is its
Python cycle model, register for register its RTL, the two compared on the same cycles in
tests/runtime/test_glb_run.py):

* configuration: the bitstream is host-written into GLB banks as its unicast + row-multicast
  image and streamed out by the config streamers; the bundles each streamer sends are the
  per-cycle stimulus of its column's config path in the array top (``cfg_valid_X<xx>`` /
  ``cfg_word_X<xx>``, :class:`canal.rtl.ConfigColumns`), so the array's registers are written
  by the column paths of its RTL, every column in parallel, while its tiles are stalled
  (``stall_X<xx>``); each column is then flushed (``flush_X<xx>``) and restarted, and the
  app's streams begin (:class:`ColumnTimeline`). The same timeline reconfigures a column
  range while the other columns run (:meth:`GlbArray.run_live`);
* input: each input IO tile's image is host-written into a buffer of the GLB tile serving
  its column and streamed by that tile's load DMA (the IO tile's stream program as a Lake port
  program); the words on ``io_out`` are the harness's stimulus of that top port;
* output: the harness's sampled outputs drive ``io_in``; each store DMA writes them into a
  buffer; the host reads the buffers back; the output image is assembled from them.

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
from garnet.glb.stream import ConfigResult, GlbSession, LoadStream, StoreStream
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
    """The per-cycle values of the column ports of an array with column config paths
    (:func:`canal.config.column_ports`) over a run of ``cycles`` cycles on ``columns``
    array columns: ``inputs`` (top port -> ``cycles`` words). Everything is 0 (no bundle,
    no flush, running) until :meth:`configure` schedules a configuration.

    ``stages``: pipeline stages of a column path (``ceil(rows / config_pipeline_rows)``:
    the bundle of cycle ``c`` writes row ``y`` at the edge ending cycle ``c + y //
    config_pipeline_rows``); ``flush_wait``: cycles the flush spine needs after the flush
    (the harness's, :func:`mapper.sim.verilator.flush_wait_of`)."""

    def __init__(self, columns: int, cycles: int, stages: int, flush_wait: int):
        self.cycles, self.stages, self.flush_wait = cycles, stages, flush_wait
        self.inputs: dict[str, np.ndarray] = {}
        for x in range(columns):
            for port in column_ports(x):
                self.inputs[port] = np.zeros(cycles, dtype=np.int64)

    def writing(self, streams: dict[int, list[tuple[int, int]]]) -> int:
        """Cycles from the first bundle of ``streams`` to the last register write (a bundle
        of the last cycle reaches the last stage ``stages - 1`` cycles later)."""
        last = max((c for s in streams.values() for c, _w in s), default=-1)
        return last + self.stages

    def length(self, streams: dict[int, list[tuple[int, int]]]) -> int:
        """Cycles :meth:`configure` takes for ``streams``: the bundles, the path's stages,
        the flush and the spine's drain; the columns run again at ``start + length``."""
        return self.writing(streams) + 1 + self.flush_wait

    def configure(self, start: int, columns: Sequence[int],
                  streams: dict[int, list[tuple[int, int]]]) -> int:
        """From cycle ``start``: stall ``columns``, feed each column its bundles
        (``streams``: column -> (cycle from ``start``, bundle), :attr:`ConfigResult.streams`),
        flush the columns once every write is done (one cycle, as the harness's flush) and
        restart them after the drain. Returns the restart cycle: stream cycle 0 of the app
        configured there. Raises :class:`SimulationError` for a bundle outside
        ``columns`` or a timeline too short."""
        outside = sorted(set(streams) - set(columns))
        if outside:
            raise SimulationError(f"column config paths: bundles for column(s) {outside} "
                                  f"outside the columns reconfigured {list(columns)}")
        restart = start + self.length(streams)
        if restart > self.cycles:
            raise SimulationError(f"column config paths: a configuration from cycle {start} "
                                  f"ends at cycle {restart}, after the run's {self.cycles}")
        flush = restart - 1 - self.flush_wait
        for x in columns:
            valid, word, fl, stall = column_ports(x)
            self.inputs[stall][start:restart] = 1
            self.inputs[fl][flush] = 1
            for c, w in streams.get(x, ()):
                self.inputs[valid][start + c] = 1
                self.inputs[word][start + c] = w - (1 << 64) if w >> 63 else w  # int64 bits
        return restart


@dataclass
class GlbRun:
    """A run through the GLB: ``session`` (the model and every cycle driven), ``config``
    (phase 1), ``serial_cycles`` (the same bitstream through the single config port),
    ``inputs`` (top port -> stimulus the load DMAs produced), ``buffers`` (top port -> output
    buffer read back), ``outputs`` (output stage -> image)."""

    params: GlbParams
    session: GlbSession
    config: ConfigResult
    serial_cycles: int
    inputs: dict[str, np.ndarray]
    buffers: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray]
    loads: list[LoadStream]
    stores: list[StoreStream]
    #: array cycles before the app's stream cycle 0: the column paths configuring, the
    #: flush and its drain (0 without column paths: the harness's config port did it)
    prologue: int = 0
    #: array cycles from the first bundle on a column path to the last register written
    #: by one, in the RTL (0 without column paths)
    array_config_cycles: int = 0


#: ``run_array(config writes through the shared port, {top port: words per cycle}, cycles)
#: -> {top port: samples per cycle}``
ArrayRunner = Callable[[list[tuple[int, int]], dict[str, np.ndarray], int],
                       dict[str, np.ndarray]]


def column_paths(ports: Sequence[str]) -> bool:
    """Whether an array top with these port names has per-column config paths (a design
    generated with a ``[glb]`` table, :class:`canal.rtl.ConfigColumns`)."""
    return column_ports(0)[1] in set(ports)


def run_through_glb(glb: GlbParams, height: int, flow: FlowResult, plan: StreamPlan,
                    images: dict[str, np.ndarray], ports: dict[str, str],
                    run_array: ArrayRunner, app: str = "",
                    columns: tuple[int, int] | None = None) -> GlbRun:
    """Configure, load, run the array (``run_array``), store and read back (module
    docstring). ``height``: the array's rows; ``ports``: IO instance -> top port
    (:func:`mapper.sim.run.io_ports`); ``columns``: (array columns, the harness's
    flush wait) of an array with column config paths (:func:`column_paths`): the
    configuration goes through them (:class:`ColumnTimeline`) and ``run_array`` gets no
    shared-port writes; None: ``run_array`` gets the writes the column paths would perform,
    for the shared port. Raises :class:`SimulationError` when the config writes the
    column paths perform are not the bitstream's, or a stream the GLB cannot serve;
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
    inputs = session.load(loads, plan.cycles)
    missing = sorted(set(plan.inputs) - set(inputs))
    if missing:
        raise SimulationError(f"{app}: top ports {missing} have no GLB load stream")
    if columns is None:
        samples = run_array(cfg.writes, inputs, plan.cycles)
        prologue = writing = 0
    else:
        width, flush_wait = columns
        stages = -(-height // glb.config_pipeline_rows)
        tl = ColumnTimeline(width, 0, stages, flush_wait)
        prologue, writing = tl.length(cfg.streams), tl.writing(cfg.streams)
        tl = ColumnTimeline(width, prologue + plan.cycles, stages, flush_wait)
        tl.configure(0, range(width), cfg.streams)
        shifted = {n: np.concatenate([np.zeros(prologue, np.int64), np.asarray(v, np.int64)])
                   for n, v in inputs.items()}
        got = run_array([], {**tl.inputs, **shifted}, prologue + plan.cycles)
        samples = {n: v[prologue:] for n, v in got.items()}
    buffers = session.store(stores, samples, plan.cycles)
    outs = assemble(plan, buffers, meta, app)
    serial = config_cycles(glb, pairs, height, "serial").cycles
    return GlbRun(glb, session, cfg, serial, inputs, buffers, outs, loads, stores, prologue,
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


#: ``run(config writes through the shared port, {port: words}, sampled ports, cycles) ->
#: {port: samples}``
StateRunner = Callable[[list[tuple[int, int]], dict[str, np.ndarray], list[str], int],
                       dict[str, np.ndarray]]


class GlbArray:
    """Apps in disjoint column ranges sharing one array and one GLB (AHA paper §4.4: "disjoint
    column ranges run different apps and are reconfigured independently"), on one
    :class:`GlbSession` that lives across configurations.

    :meth:`configure` streams config words through the GLB (each GLB tile streams its own
    columns' words, all in parallel) and updates :attr:`state`, the array's config registers
    (address -> data; absent = the reset value 0). :meth:`run_live` runs apps at once on an
    array with column config paths and reconfigures one app's columns while the others
    stream."""

    def __init__(self, glb: GlbParams, height: int):
        self.session = GlbSession(glb, height)
        self.state: dict[int, int] = {}

    def configure(self, pairs: list[tuple[int, int]]) -> ConfigResult:
        """Stream ``pairs`` through the GLB's config network (phase 1 of
        :mod:`garnet.glb.stream`); the array's registers take the writes. Raises
        :class:`SimulationError` when the writes performed are not ``pairs``."""
        cfg = self.session.configure(pairs)
        if set(cfg.writes) != set(pairs):
            raise SimulationError(f"config network: {len(cfg.writes)} writes performed for "
                                  f"{len(pairs)} words streamed (they differ)")
        for a, d in cfg.writes:
            self.state[a] = d
        return cfg

    def run_live(self, apps: list[GlbApp], old: GlbApp, new: GlbApp, run_array: StateRunner,
                 width: int, flush_wait: int) -> LiveRun:
        """Partial reconfiguration while the rest of the array runs, on an array with column
        config paths (:func:`column_paths`; AHA paper §4.4), in one simulation:

        1. every app of ``apps`` is configured through the GLB and the column paths (all
           columns stalled meanwhile, then flushed) and they start together;
        2. when ``old`` (one of ``apps``) has streamed its last cycle, only its columns
           (those ``old`` or ``new`` configures) are stalled, configured with
           :func:`reconfiguration` (``new``'s words and the reset value of every register
           only ``old`` wrote) through their column paths, flushed and restarted, and
           ``new`` streams there; the other apps keep streaming throughout;
        3. every app's output is stored through its GLB tile's store DMA and read back.

        ``width``: the array's columns; ``flush_wait``: the harness's
        (:func:`mapper.sim.verilator.flush_wait_of`). The GLB model runs the phases one after
        the other (GLB tiles are independent, so the array sees the same streams); the array
        is one run of ``run_array`` (no shared-port writes). Raises :class:`SimulationError`
        when ``old`` is not among ``apps`` or ``new``'s columns meet another app's, and as
        :meth:`run` does."""
        if old not in apps:
            raise SimulationError(f"run_live: the replaced app {old.name} is not running")
        cols = sorted(_columns_of(old.flow.bitstream.pairs()) |
                      _columns_of(new.flow.bitstream.pairs()))
        for a in apps:
            if a is not old and _columns_of(a.flow.bitstream.pairs()) & set(cols):
                raise SimulationError(f"run_live: {new.name} on columns {cols} meets "
                                      f"{a.name}'s columns")
        stages = -(-self.session.height // self.session.p.config_pipeline_rows)
        first = self.configure([w for a in apps for w in a.flow.bitstream.pairs()])
        words = reconfiguration(old.flow.bitstream.pairs(), new.flow.bitstream.pairs())
        second = self.configure(words)
        probe = ColumnTimeline(0, 0, stages, flush_wait)
        t0 = probe.length(first.streams)
        start = {a.name: t0 for a in apps}
        recon = t0 + old.plan.cycles
        start[new.name] = recon + probe.length(second.streams)
        everyone = [*apps, new]
        cycles = max(start[a.name] + a.plan.cycles for a in everyone)
        tl = ColumnTimeline(width, cycles, stages, flush_wait)
        tl.configure(0, range(width), first.streams)
        tl.configure(recon, cols, second.streams)
        inputs = dict(tl.inputs)
        metas, stores_of = {}, {}
        for a in everyone:
            loads, stores_of[a.name], metas[a.name] = glb_streams(a.flow, a.images, a.ports)
            for port, v in self.session.load(loads, a.plan.cycles).items():
                s0 = start[a.name]
                if port not in inputs:
                    inputs[port] = np.zeros(cycles, np.int64)
                inputs[port][s0:s0 + a.plan.cycles] = v
        sampled = sorted({o[1] for a in everyone for o in a.plan.outputs})
        samples = run_array([], inputs, sampled, cycles)
        outs = {}
        for a in everyone:
            s0 = start[a.name]
            mine = {p: v[s0:s0 + a.plan.cycles] for p, v in samples.items()}
            buffers = self.session.store(stores_of[a.name], mine, a.plan.cycles)
            outs[a.name] = assemble(a.plan, buffers, metas[a.name], a.name)
        return LiveRun(outs, start, recon, cols, cycles)


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
        "model": "garnet.glb.model (cycle-level, register for register glb.v)",
        "config": {"mode": "unicast + row multicast", "cycles": run.config.cycles,
                   "single_port_cycles": run.serial_cycles, "image_words": run.config.words,
                   "host_write_cycles": run.config.host_cycles,
                   "writes": len(run.config.writes),
                   # the array's registers written by its column paths (RTL) or through
                   # the harness's shared port (an array without them)
                   "through": "column paths (RTL)" if run.prologue else "shared port",
                   "array_cycles": run.array_config_cycles,
                   "restart_cycle": run.prologue},
        "loads": {s.port: s.column // p.columns_per_tile for s in run.loads},
        "stores": {s.port: s.column // p.columns_per_tile for s in run.stores},
        "phases": {k: v[1] for k, v in run.session.phases.items()},
        "glb_cycles": len(run.session.cycles),
    }


def glb_note(section: dict[str, Any]) -> str:
    """The `cgra run` summary's clause: ``through the GLB (4 tiles, cycle model): config 45
    cycles (unicast + row multicast, written by the array's column paths in RTL; single
    port 172), input via GLB tile 1, output via GLB tile 3``."""
    c = section["config"]
    ld = sorted(set(section["loads"].values()))
    st_ = sorted(set(section["stores"].values()))
    where = ", written by the array's column paths in RTL" if c.get("array_cycles") else ""
    return (f"through the GLB ({section['params']['tiles']} tiles, cycle model): config "
            f"{c['cycles']} cycles ({c['mode']}{where}; single port "
            f"{c['single_port_cycles']}), "
            f"input via GLB tile {', '.join(map(str, ld))}, output via GLB tile "
            f"{', '.join(map(str, st_))}")


__all__ = ["ArrayRunner", "ColumnTimeline", "GlbApp", "GlbArray", "GlbRun", "LiveRun", "StateRunner", "assemble",
           "column_paths", "design_glb", "glb_note", "glb_section", "glb_streams", "reconfiguration",
           "run_through_glb"]
