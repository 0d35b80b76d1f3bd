"""`cgra run` through the global buffer: a design directory with GLB collateral
(``<design>/glb/glb.json``, written by `cgra rtl` for a TOML with a ``[glb]`` table, or
:func:`garnet.glb.collateral.write`) runs its simulation through the GLB's cycle-level model
(:class:`garnet.glb.stream.GlbSession`; AHA paper §4.4, Figs. 11-12).

What goes through the GLB (the array is the generated RTL in Verilator; the GLB is its
Python cycle model, register for register its RTL, the two compared on the same cycles in
tests/runtime/test_glb_run.py):

* configuration: the bitstream is host-written into GLB banks as its unicast + row-multicast
  image and streamed out by the config streamers; the writes the column paths perform
  (decoded from the streamed bundles) are what the array harness applies, through its single
  config port (the array top has no column config path yet);
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
from typing import Any, Callable

import numpy as np

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


#: ``run_array(config writes, {top port: words per cycle}) -> {top port: samples per cycle}``
ArrayRunner = Callable[[list[tuple[int, int]], dict[str, np.ndarray]], dict[str, np.ndarray]]


def run_through_glb(glb: GlbParams, height: int, flow: FlowResult, plan: StreamPlan,
                    images: dict[str, np.ndarray], ports: dict[str, str],
                    run_array: ArrayRunner, app: str = "") -> GlbRun:
    """Configure, load, run the array (``run_array``), store and read back (module
    docstring). ``height``: the array's rows; ``ports``: IO instance -> top port
    (:func:`mapper.sim.run.io_ports`). Raises :class:`SimulationError` when the
    config writes the column paths perform are not the bitstream's, or a stream the GLB
    cannot serve; :class:`~cgra.errors.ConfigError` for a bitstream column the GLB does not
    serve."""
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
    samples = run_array(cfg.writes, inputs)
    buffers = session.store(stores, samples, plan.cycles)
    outs = assemble(plan, buffers, meta, app)
    serial = config_cycles(glb, pairs, height, "serial").cycles
    return GlbRun(glb, session, cfg, serial, inputs, buffers, outs, loads, stores)


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


#: ``run(config state pairs, {port: words}, sampled ports, cycles) -> {port: samples}``
StateRunner = Callable[[list[tuple[int, int]], dict[str, np.ndarray], list[str], int],
                       dict[str, np.ndarray]]


class GlbArray:
    """Apps in disjoint column ranges sharing one array and one GLB (AHA paper §4.4: "disjoint
    column ranges run different apps and are reconfigured independently"), on one
    :class:`GlbSession` that lives across runs and reconfigurations.

    :meth:`configure` streams config words through the GLB (each GLB tile streams its own
    columns' words, all in parallel) and updates :attr:`state`, the array's config registers
    (address -> data; absent = the reset value 0). :meth:`run` streams every app's input
    through its GLB tile's load DMA, runs the array (``run_array`` with the whole
    :attr:`state`: the Verilator harness restarts from reset, so it gets every register
    the array holds at that point) and stores every app's output through its store DMA."""

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

    def run(self, apps: list[GlbApp], run_array: StateRunner) -> dict[str, dict[str, np.ndarray]]:
        """Every app at once: app name -> output stage -> image (read back from the GLB).
        Raises :class:`SimulationError` for two apps' streams on one GLB tile."""
        cycles = max(a.plan.cycles for a in apps)
        loads, stores, metas = [], [], []
        for a in apps:
            ld, st_, meta = glb_streams(a.flow, a.images, a.ports)
            loads += ld
            stores += st_
            metas.append(meta)
        inputs = self.session.load(loads, cycles)
        sampled = sorted({o[1] for a in apps for o in a.plan.outputs})
        samples = run_array(sorted(self.state.items()), inputs, sampled, cycles)
        buffers = self.session.store(stores, samples, cycles)
        return {a.name: assemble(a.plan, buffers, m, a.name) for a, m in zip(apps, metas,
                                                                               strict=True)}


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
                   "writes": len(run.config.writes)},
        "loads": {s.port: s.column // p.columns_per_tile for s in run.loads},
        "stores": {s.port: s.column // p.columns_per_tile for s in run.stores},
        "phases": {k: v[1] for k, v in run.session.phases.items()},
        "glb_cycles": len(run.session.cycles),
    }


def glb_note(section: dict[str, Any]) -> str:
    """The `cgra run` summary's clause: ``through the GLB (4 tiles): config 92 cycles
    (unicast + row multicast; single port 301), input via GLB tile(s) 1, output via 1``."""
    c = section["config"]
    ld = sorted(set(section["loads"].values()))
    st_ = sorted(set(section["stores"].values()))
    return (f"through the GLB ({section['params']['tiles']} tiles, cycle model): config "
            f"{c['cycles']} cycles ({c['mode']}; single port {c['single_port_cycles']}), "
            f"input via GLB tile {', '.join(map(str, ld))}, output via GLB tile "
            f"{', '.join(map(str, st_))}")


__all__ = ["ArrayRunner", "GlbApp", "GlbArray", "GlbRun", "StateRunner", "assemble",
           "design_glb", "glb_note", "glb_section", "glb_streams", "reconfiguration",
           "run_through_glb"]
