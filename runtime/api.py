"""The host API, in the shape of OpenCL / RDAI (AHA paper §6: RDAI is "a subset of the
OpenCL runtime API v3"; a host runtime dispatches to platform runtimes, each identified by a
vendor-name-version triple).

Objects::

    Runtime(extra=()) .platforms() / .get_device(vendor, name, version)
    platforms() -> [Platform]                       # built-ins + entry-point plug-ins
    get_device(vendor, name, version) -> Device     # discovery by the triple
    Context(device)                                 # owns buffers and programs
      .buffer(shape) -> Buffer                      # array words in the device's GLB
      .program(run_dir) -> Program                  # a `cgra run` / `cgra bitstream` directory
    CommandQueue(context)                           # in order
      .write(buffer, array) -> Event                # host -> GLB
      .run(program, inputs={name: Buffer}, output=Buffer) -> Event
      .read(buffer) -> Event                        # GLB -> host; event.result is the array
      .finish()                                     # executes every queued command
    Event: .status ("queued" | "complete" | "error"), .wait(), .cycles, .result, .error

Buffers live in the device's GLB (:class:`garnet.glb.params.GlbParams`): a bump allocator
over element addresses (one ``data_width``-bit word per pixel); a buffer the GLB cannot hold
is refused (the tiled executor, :mod:`runtime.tiled`, streams larger images). Data moves
between the GLB and the array through the DMAs' Lake port programs
(:func:`garnet.glb.model.run_functional`). Cycle counts of an event come from the platform's
model: a host transfer moves one GLB word (``lanes`` pixels) per cycle; a run streams one
pixel per cycle (the array's rate at unroll 1).

Errors: :class:`runtime.errors.DeviceError` (bad call), :class:`cgra.errors.CollateralError`
(a run directory that is missing or stale), :class:`cgra.errors.ConfigError` (a malformed
``.bs`` line).
"""
from __future__ import annotations

import importlib.metadata
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from cgra.errors import CgraError
from garnet.glb.dma import DmaProgram
from garnet.glb.model import run_functional
from garnet.glb.params import GlbParams
from lake.program import program as port_program
from mapper.apps import build_app
from mapper.backend.bitstream import read_text_file
from mapper.stages import bitstream_file, read_app
from runtime.errors import DeviceError

#: entry-point group of third-party platform plug-ins (a class with the Platform interface)
ENTRY_POINT_GROUP = "cgra_runtime.platforms"


@dataclass(frozen=True)
class Program:
    """A compiled app loaded from a run directory (it is not compiled here): ``app`` (the
    shipped app name), ``width`` x ``height`` of the input image it was mapped for (pixels),
    ``bitstream`` ((address, data) pairs of ``<app>.bs``), ``doc`` (app.json)."""

    run_dir: Path
    app: str
    width: int
    height: int
    unroll: int
    bitstream: tuple[tuple[int, int], ...]
    doc: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def load(cls, run_dir: str | Path) -> "Program":
        """Read app.json and ``<app>.bs`` of ``run_dir``. Raises :class:`CollateralError`
        for a missing or stale run, :class:`DeviceError` for a CoreIR-file run (no stream
        schedule), :class:`ConfigError` for a malformed ``.bs`` line."""
        run_dir = Path(run_dir)
        doc = read_app(run_dir)
        if doc.get("kind") != "dsl":
            raise DeviceError(f"program {run_dir}: app '{doc.get('name')}' is a {doc.get('kind')}"
                              f" run; the runtime runs shipped DSL apps (`cgra run <app>`)")
        bs = bitstream_file(run_dir)
        words = read_text_file(bs, f"run `cgra bitstream {run_dir}`")
        prm = doc["params"]
        return cls(run_dir, prm["app"], int(prm["width"]), int(prm["height"]),
                   int(prm.get("unroll", 1)), tuple((int(a), int(d)) for a, d in words), doc)


class Platform(ABC):
    """A platform runtime (plug-in): identified by ``vendor``, ``name``, ``version``."""

    vendor: str = ""
    name: str = ""
    version: str = ""

    def __init__(self, glb: GlbParams | None = None):
        self.glb = glb or GlbParams()

    @property
    def triple(self) -> tuple[str, str, str]:
        return (self.vendor, self.name, self.version)

    def devices(self) -> list["Device"]:
        """The devices of this platform (one: the GLB + array it models)."""
        return [Device(self, 0)]

    @abstractmethod
    def execute(self, program: Program, images: dict[str, np.ndarray]) -> tuple[np.ndarray, int]:
        """Run ``program`` on input images (name -> ``[y, x]`` array of the program's size);
        return the output image and the run's cycles."""

    def input_names(self, program: Program) -> list[str]:
        """The app's input names (the keys ``execute`` expects)."""
        return [i.name for i in build_app(program.app, program.width, program.height,
                                          program.unroll).inputs]


#: the platforms built into this package (:mod:`runtime.functional` adds its own)
BUILTIN: list[type[Platform]] = []


class Runtime:
    """The host runtime (RDAI's shim): the platforms it dispatches to -- the built-ins,
    the plug-ins of the entry-point group :data:`ENTRY_POINT_GROUP`, and ``extra``
    (Platform classes given by the caller) -- each instantiated once. Raises
    :class:`DeviceError` when two platforms share a vendor-name-version triple."""

    def __init__(self, extra: tuple[type[Platform], ...] = ()):
        classes = list(BUILTIN)
        classes += [ep.load() for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)]
        classes += list(extra)
        self._platforms: list[Platform] = []
        for cls in classes:
            inst = cls()
            if any(q.triple == inst.triple for q in self._platforms):
                raise DeviceError(f"platform {'/'.join(inst.triple)} is registered twice; "
                                  f"give each plug-in its own vendor/name/version")
            self._platforms.append(inst)

    def platforms(self) -> list[Platform]:
        """The platforms, built-ins first."""
        return list(self._platforms)

    def get_device(self, vendor: str, name: str, version: str, index: int = 0) -> "Device":
        """The device ``index`` of platform ``vendor/name/version``. Raises
        :class:`DeviceError` listing the known triples."""
        for p in self._platforms:
            if p.triple == (vendor, name, version):
                devs = p.devices()
                if not 0 <= index < len(devs):
                    raise DeviceError(f"platform {vendor}/{name}/{version} has {len(devs)} "
                                      f"device(s); index {index} does not exist")
                return devs[index]
        known = ", ".join("/".join(p.triple) for p in self._platforms)
        raise DeviceError(f"no platform {vendor}/{name}/{version}; known: {known}")


def platforms() -> list[Platform]:
    """The platforms of a default :class:`Runtime`."""
    return Runtime().platforms()


def get_device(vendor: str, name: str, version: str, index: int = 0) -> "Device":
    """:meth:`Runtime.get_device` of a default :class:`Runtime`."""
    return Runtime().get_device(vendor, name, version, index)


@dataclass
class Device:
    """One accelerator (GLB + array) of a platform."""

    platform: Platform
    index: int

    @property
    def glb(self) -> GlbParams:
        return self.platform.glb

    @property
    def capacity(self) -> int:
        """Array words the GLB holds."""
        return self.glb.tiles * self.glb.tile_elements


@dataclass
class Buffer:
    """``shape`` (rows, columns) of array words at GLB element address ``base``."""

    context: "Context"
    base: int
    shape: tuple[int, int]
    written: bool = False

    @property
    def size(self) -> int:
        return self.shape[0] * self.shape[1]

    def dma(self) -> DmaProgram:
        """The Lake port program streaming the buffer in raster order (x innermost)
        over the chained GLB address space, one word per cycle."""
        h, w = self.shape
        return DmaProgram(port_program([w, h], [1, w], self.base, [1, w], 0), chain=True)


class Context:
    """Buffers (bump-allocated in the GLB) and programs of one device."""

    def __init__(self, device: Device):
        self.device = device
        self.memory = np.zeros(device.capacity, dtype=np.int64)
        self._top = 0

    def buffer(self, shape: tuple[int, int]) -> Buffer:
        """A buffer of ``shape`` = (rows, columns) words. Raises :class:`DeviceError` when
        the GLB has no room for it (name the sizes; stream it with the tiled executor)."""
        h, w = (int(shape[0]), int(shape[1]))
        if h < 1 or w < 1:
            raise DeviceError(f"buffer shape {shape}: use positive (rows, columns)")
        if self._top + h * w > self.device.capacity:
            raise DeviceError(f"buffer of {h}x{w} = {h * w} words does not fit the GLB: "
                              f"{self.device.capacity - self._top} of {self.device.capacity} "
                              f"words free; stream the image in tiles "
                              f"(runtime.tiled.TiledExecutor) or raise [glb] tiles/bank_words")
        buf = Buffer(self, self._top, (h, w))
        self._top += h * w
        return buf

    def program(self, run_dir: str | Path) -> Program:
        return Program.load(run_dir)


@dataclass
class Event:
    """A command's completion record: ``status``, ``cycles`` (platform model), ``result``
    (the array of a read), ``error`` (the exception of a failed command)."""

    command: str
    queue: "CommandQueue"
    status: str = "queued"
    cycles: int = 0
    result: np.ndarray | None = None
    error: Exception | None = None

    def wait(self) -> "Event":
        """Execute the queue up to this event; re-raises the command's error."""
        self.queue.finish()
        if self.error is not None:
            raise self.error
        return self


class CommandQueue:
    """An in-order command queue of a context (OpenCL ``clEnqueue*`` in order)."""

    def __init__(self, context: Context):
        self.context = context
        self._pending: list[tuple[Event, Callable[[], None]]] = []

    def _enqueue(self, name: str, fn: Callable[[Event], None]) -> Event:
        ev = Event(name, self)
        self._pending.append((ev, lambda: fn(ev)))
        return ev

    def write(self, buffer: Buffer, array: np.ndarray) -> Event:
        """Copy ``array`` (the buffer's shape, values < 2**data_width) into the buffer."""
        a = np.asarray(array)
        if a.shape != buffer.shape:
            raise DeviceError(f"write of a {a.shape} array into a buffer of shape "
                              f"{buffer.shape}; give an array of the buffer's shape")
        dw = self.context.device.glb.data_width
        if a.size and (a.min() < 0 or a.max() >= 1 << dw):
            raise DeviceError(f"write: values span [{a.min()}, {a.max()}], outside the "
                              f"{dw}-bit unsigned words of the GLB")
        data = a.astype(np.int64).ravel()

        def run(ev: Event) -> None:
            self.context.memory[buffer.base:buffer.base + buffer.size] = data
            buffer.written = True
            ev.cycles = -(-buffer.size // self.context.device.glb.lanes)
        return self._enqueue("write", run)

    def read(self, buffer: Buffer) -> Event:
        """Copy the buffer to the host (``event.result``, uint16 ``[rows, columns]``)."""
        def run(ev: Event) -> None:
            if not buffer.written:
                raise DeviceError(f"read of a buffer at GLB word {buffer.base} that no "
                                  f"write or run has filled")
            ev.result = self.context.memory[buffer.base:buffer.base + buffer.size] \
                .reshape(buffer.shape).astype(np.uint16)
            ev.cycles = -(-buffer.size // self.context.device.glb.lanes)
        return self._enqueue("read", run)

    def run(self, program: Program, inputs: dict[str, Buffer], output: Buffer) -> Event:
        """Run ``program``: each input buffer streams to the array through a load DMA, the
        output streams back through a store DMA into ``output``."""
        plat = self.context.device.platform
        names = plat.input_names(program)
        if sorted(inputs) != sorted(names):
            raise DeviceError(f"run of {program.app}: inputs {sorted(inputs)} given, the app "
                              f"has {sorted(names)}")
        for n, b in inputs.items():
            if b.shape != (program.height, program.width):
                raise DeviceError(f"run of {program.app}: input '{n}' is {b.shape[1]}x"
                                  f"{b.shape[0]}, the program was mapped for "
                                  f"{program.width}x{program.height}")

        def run(ev: Event) -> None:
            glb = self.context.device.glb
            images = {}
            for n, b in inputs.items():
                if not b.written:
                    raise DeviceError(f"run of {program.app}: input '{n}' was never written")
                loaded, _mem = run_functional(glb, self.context.memory, {0: b.dma()}, {})
                images[n] = loaded[0].reshape(b.shape)
            out, cycles = plat.execute(program, images)
            if out.shape != output.shape:
                raise DeviceError(f"run of {program.app}: the output is {out.shape[1]}x"
                                  f"{out.shape[0]}, the output buffer {output.shape[1]}x"
                                  f"{output.shape[0]}")
            _l, mem = run_functional(glb, self.context.memory, {},
                                     {0: (output.dma(), out.astype(np.int64).ravel())})
            self.context.memory[:] = mem
            output.written = True
            ev.cycles = cycles
        return self._enqueue("run", run)

    def finish(self) -> None:
        """Execute every queued command in order; a command failing with a project error
        (:class:`~cgra.errors.CgraError`) marks its event ``error`` and every later one
        ``error`` too (in-order semantics); :meth:`Event.wait` re-raises it."""
        pending, self._pending = self._pending, []
        failed: Exception | None = None
        for ev, fn in pending:
            if failed is not None:
                ev.status, ev.error = "error", failed
                continue
            try:
                fn()
                ev.status = "complete"
            except CgraError as exc:        # bad input or a failed simulation: typed
                ev.status, ev.error, failed = "error", exc, exc
