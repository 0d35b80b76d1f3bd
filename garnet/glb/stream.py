"""A whole app run through the GLB on its cycle-level model (AHA paper §4.4, Figs. 11-12; §6):
configure the array through the config network, host-write the input images into GLB banks,
stream them into the array's IO tiles through the load DMAs, stream the array's outputs back
into GLB banks through the store DMAs, host-read them.

:class:`GlbSession` drives one :class:`garnet.glb.model.GlbModel` (register for register the
RTL of :mod:`garnet.glb.rtl`) and records every input :class:`~garnet.glb.model.Cycle` it
drove (:attr:`GlbSession.cycles`) with the outputs it saw (:attr:`GlbSession.outputs`), so
the same cycles can be replayed on the GLB RTL (:func:`garnet.glb.sim.run_rtl`) and compared
output for output. Phases, in this order on one model:

1. :meth:`GlbSession.configure`: the bitstream's GLB image (unicast + row multicast,
   :func:`garnet.glb.confignet.glb_image`) is host-written into the banks (one GLB word per
   cycle), the config streamers of each tile serving a column of the image get
   ``cs_base_<b>`` / ``cs_count_<b>`` and ``cfg_go`` starts them (only them: the columns of
   other tiles keep their registers, a partial reconfiguration), and the bundles leaving ``cfg_word_<t>_<b>`` are decoded the way the column
   path ``glb_cfg_column`` performs them (a row-mask word, then ``y = 0xFF`` bundles for every
   row of the mask): the array's config writes, each with the cycle it happens in.
2. :meth:`GlbSession.begin`: each input stream's image is host-written into a buffer of the
   GLB tile serving its IO column (``column // columns_per_tile``), its load DMA is programmed
   with the IO tile's stream program as a Lake port program (schedule: the IO program's,
   access map: the pixel's element address in the buffer), each output's store DMA with the
   IO output program (schedule + 1) into a buffer, and one ``start`` goes to those tiles
   only (the others' DMAs keep running, so apps in other columns go on);
3. :meth:`GlbSession.idle`: the run; the words on ``io_out_<t>`` are the IO tiles' inputs,
   one per array cycle, the array's outputs reach ``io_in_<t>`` (from :attr:`io_source`,
   e.g. a system run's sampled outputs);
4. :meth:`GlbSession.finish`: the host reads each output buffer back.

:meth:`GlbSession.stream` is 2-4 for one app. Cycle alignment (load and store programs share
the tile's cycle counter): array stream cycle ``c`` (cycle 0 = the first cycle the array
runs) is model cycle ``start + 2 + c``: the load DMA's word for array cycle ``c`` is on
``io_out`` then (local load latency 1), and the array's output of cycle ``c`` is on
``io_in`` in the same cycle, when its store fires (bank read and write ports are separate;
the model refuses any two requests for one port).

Limits (each a :class:`~cgra.errors.SimulationError` naming the tile and the fix): one load
and one store DMA per GLB tile, so at most one input and one output IO tile per
``columns_per_tile`` columns; a tile's buffers must fit its ``tile_elements``; the config
streamers need ``columns_per_tile == banks``.
"""
from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from cgra.errors import SimulationError
from garnet.glb.confignet import ALL_ROWS, MASK_FEATURE, glb_image
from garnet.glb.dma import DmaProgram, config_words, encode, register_index
from garnet.glb.model import Cycle, GlbModel, Outputs
from garnet.glb.params import GlbParams
from lake.program import AffineMap, PortProgram


@dataclass(frozen=True)
class LoadStream:
    """An input IO tile's stream: ``port`` (top port it drives), ``column`` (array column of
    the IO tile), ``image`` (``[rows, columns]`` words the host writes, zeros where the
    program reads outside the picture), ``program`` (the IO tile's schedule in array cycles,
    addresses = element index into ``image`` in raster order)."""

    port: str
    column: int
    image: np.ndarray
    program: PortProgram


@dataclass(frozen=True)
class StoreStream:
    """An output IO tile's stream: ``port`` (top port sampled), ``column``, ``shape``
    (``[rows, columns]`` of the buffer the store DMA writes), ``program`` (the IO tile's
    sample cycles in array cycles, addresses = element index into the buffer)."""

    port: str
    column: int
    shape: tuple[int, int]
    program: PortProgram


@dataclass
class ConfigResult:
    """Phase 1: ``writes`` ((address, data) pairs in the order the column paths perform
    them), ``cycles`` (from the first streamer read to the last register write, inclusive;
    the unit of :func:`garnet.glb.confignet.simulate`), ``words`` (GLB words the image holds,
    after row multicast), ``host_cycles`` (cycles writing the image through the host port)."""

    writes: list[tuple[int, int]]
    cycles: int
    words: int
    host_cycles: int
    #: column -> the bundles on its path's input (``cfg_valid`` / ``cfg_word`` of
    #: ``glb_cfg_column``) as (cycle, ``addr << 32 | data``), cycle 0 = the first bundle
    #: of any column: what the array top's column ports take (canal.config.column_ports)
    streams: dict[int, list[tuple[int, int]]] = field(default_factory=dict)


@dataclass
class GlbSession:
    """One GLB model driven through the phases of the module docstring; ``cycles`` /
    ``outputs``: every cycle driven and the outputs before its edge; ``phases``: phase name
    -> (first cycle index, cycle count)."""

    p: GlbParams
    height: int
    model: GlbModel = field(init=False)
    cycles: list[Cycle] = field(default_factory=list)
    outputs: list[Outputs] = field(default_factory=list)
    phases: dict[str, tuple[int, int]] = field(default_factory=dict)
    _tile_top: dict[int, int] = field(default_factory=dict)
    _buffers: dict[str, tuple[int, int, tuple[int, int]]] = field(default_factory=dict)
    #: ``io_in`` of a cycle driven without one: cycle index -> per tile (None: zeros), e.g.
    #: the array's outputs of a system run replayed on the model
    io_source: Callable[[int], list[int]] | None = None

    def __post_init__(self) -> None:
        self.model = GlbModel(self.p)
        self.step(Cycle(RESET=1))

    # ---- driving ---------------------------------------------------------------------
    def step(self, c: Cycle) -> Outputs:
        if c.io_in is None and self.io_source is not None:
            c = dataclasses.replace(c, io_in=self.io_source(len(self.cycles)))
        out = self.model.step(c)
        self.cycles.append(c)
        self.outputs.append(out)
        return out

    def _phase(self, name: str, first: int) -> None:
        self.phases[name] = (first, len(self.cycles) - first)

    def _cfg(self, words: Sequence[tuple[int, int]]) -> None:
        for addr, data in words:
            self.step(Cycle(cfg_wr=1, cfg_addr=addr, cfg_data=data))

    def _tile(self, column: int, what: str) -> int:
        t = column // self.p.columns_per_tile
        if not 0 <= t < self.p.tiles:
            raise SimulationError(f"GLB: {what} on array column {column}, which no GLB tile "
                                  f"serves ({self.p.tiles} tiles x {self.p.columns_per_tile} "
                                  f"columns); raise [glb] tiles to {t + 1}")
        return t

    def _alloc(self, tile: int, elements: int, what: str) -> int:
        """Local element address of a new buffer in ``tile`` (GLB-word aligned)."""
        lanes = self.p.lanes
        base = self._tile_top.get(tile, 0)
        size = -(-elements // lanes) * lanes
        if base + size > self.p.tile_elements:
            raise SimulationError(f"GLB tile {tile}: {what} needs {elements} words from "
                                  f"element {base}, beyond the tile's {self.p.tile_elements}; "
                                  f"raise [glb] bank_words or map a smaller image")
        self._tile_top[tile] = base + size
        return base

    def _host_write(self, tile: int, base: int, values: np.ndarray) -> None:
        """Write ``values`` (element words) from local element ``base`` of ``tile`` through
        the host port, one GLB word (``lanes`` elements) per cycle."""
        p = self.p
        lanes, dw = p.lanes, p.data_width
        v = np.zeros(-(-len(values) // lanes) * lanes, dtype=np.int64)
        v[:len(values)] = np.asarray(values, dtype=np.int64) & ((1 << dw) - 1)
        first = tile * p.tile_words + base // lanes
        for k in range(len(v) // lanes):
            word = sum(int(v[k * lanes + ln]) << (ln * dw) for ln in range(lanes))
            self.step(Cycle(host_wr=1, host_waddr=first + k, host_wdata=word))

    def _host_read(self, tile: int, base: int, n: int) -> np.ndarray:
        """Read ``n`` element words from local element ``base`` of ``tile`` through the host
        port (one GLB word per cycle, its data one cycle after the request)."""
        p = self.p
        lanes, dw = p.lanes, p.data_width
        first = tile * p.tile_words + base // lanes
        words = -(-n // lanes)
        got: list[int] = []
        for k in range(words + 1):
            c = Cycle(host_rd=1, host_raddr=first + k) if k < words else Cycle()
            out = self.step(c)
            if k:
                if not out.host_rd_valid:
                    raise SimulationError(f"GLB tile {tile}: host read of word {first + k - 1}"
                                          f" returned no data")
                got += [(out.host_rdata >> (ln * dw)) & ((1 << dw) - 1) for ln in range(lanes)]
        return np.asarray(got[:n], dtype=np.int64)

    # ---- phase 1: configuration ------------------------------------------------------
    def configure(self, bitstream: Sequence[tuple[int, int]]) -> ConfigResult:
        """Phase 1 (module docstring) for ``bitstream`` ((address, data) pairs). Raises
        :class:`~cgra.errors.ConfigError` for a column the GLB does not serve or a bank too
        small for the image, :class:`SimulationError` when ``columns_per_tile != banks``."""
        p = self.p
        if p.columns_per_tile != p.banks:
            raise SimulationError(f"GLB config streamers: bank b of a tile streams column "
                                  f"t * columns_per_tile + b, so columns_per_tile "
                                  f"({p.columns_per_tile}) must equal banks ({p.banks})")
        first = len(self.cycles)
        img = glb_image(p, bitstream, self.height, row_multicast=True)
        for x, words in sorted(img.columns.items()):
            tile, bank, w0 = img.placement[x]
            for k, w in enumerate(words):
                self.step(Cycle(host_wr=1, host_waddr=tile * p.tile_words + bank * p.bank_words
                                + w0 + k, host_wdata=w))
        host = len(self.cycles) - first
        # only the tiles serving the image's columns start their streamers (a bank of theirs
        # with no column in the image streams 0 words): every other column keeps its registers
        idx = register_index(p)
        streams_of: dict[int, dict[int, tuple[int, int]]] = defaultdict(dict)
        for x, words in sorted(img.columns.items()):
            tile, bank, w0 = img.placement[x]
            streams_of[tile][bank] = (w0, len(words))
        regs: list[tuple[int, int]] = []
        for tile, banks in sorted(streams_of.items()):
            for b in range(p.banks):
                w0, n = banks.get(b, (0, 0))
                regs += [(tile << 8 | idx[f"cs_base_{b}"], w0),
                         (tile << 8 | idx[f"cs_count_{b}"], n)]
        self._cfg(regs)
        go = len(self.cycles)
        longest = max((len(w) for w in img.columns.values()), default=0)
        self.step(Cycle(cfg_go=[int(t in streams_of) for t in range(p.tiles)]))
        streams: dict[int, list[tuple[int, int]]] = defaultdict(list)   # column -> (cycle, word)
        for _k in range(longest + 2):
            out = self.step(Cycle())
            g = len(self.cycles) - 1 - go       # cycles since the cfg_go cycle
            for t in range(p.tiles):
                for b in range(p.banks):
                    if out.cfg_valid[t][b]:
                        streams[t * p.columns_per_tile + b].append((g, out.cfg_word[t][b]))
        if {x: [w for _g, w in s] for x, s in streams.items()} != img.columns:
            raise SimulationError("GLB config streamers: the bundles streamed differ from the "
                                  "image written (a bank or streamer register is wrong)")
        writes: list[tuple[int, int, int]] = []     # (cycle, column, address, data) order
        rows = p.config_pipeline_rows
        for x, s in sorted(streams.items()):
            mask = [0] * ((self.height + 31) // 32)
            for g, w in s:
                addr, data = w >> 32, w & 0xFFFFFFFF
                reg, feat, y = addr >> 24 & 0xFF, addr >> 16 & 0xFF, addr & 0xFF
                if feat == MASK_FEATURE:
                    mask[reg] = data
                    continue
                ys = [r for r in range(self.height) if mask[r // 32] >> (r % 32) & 1] \
                    if y == ALL_ROWS else [y]
                # on cfg_word during cycle g = in stage 0; row r is written in stage r // rows
                writes += [(g + r // rows, x, (addr & ~0xFF) | r, data) for r in ys]
        writes.sort(key=lambda w: (w[0], w[1]))
        # cycle 1 after cfg_go is the streamers' first read (confignet's cycle 0): a write
        # in cycle g here is confignet's cycle g - 1, and its count is the last one + 1
        cycles = writes[-1][0] if writes else 0
        self._phase("configure", first)
        g0 = min((s[0][0] for s in streams.values() if s), default=0)
        return ConfigResult([(a, d) for _g, _x, a, d in writes], cycles, img.words, host,
                            {x: [(g - g0, w) for g, w in s] for x, s in sorted(streams.items())})

    def _claim(self, by_tile: dict, s: "LoadStream | StoreStream", what: str, dma: str) -> int:
        """The GLB tile serving stream ``s`` (a :class:`LoadStream` or :class:`StoreStream`,
        ``what`` = "input" / "output"), recorded in ``by_tile``. Raises
        :class:`SimulationError` when another stream already has that tile's one ``dma``
        ("load" / "store") DMA."""
        t = self._tile(s.column, f"{what} stream {s.port}")
        if t in by_tile:
            raise SimulationError(f"GLB tile {t}: {what} streams {by_tile[t].port} and "
                                  f"{s.port} both need its one {dma} DMA (columns "
                                  f"{by_tile[t].column} and {s.column}); place the {what} IO "
                                  f"tiles {self.p.columns_per_tile} columns apart")
        by_tile[t] = s
        return t

    # ---- loads and stores at once (the array and the GLB in one RTL run) ---------------
    def begin(self, loads: Sequence[LoadStream], stores: Sequence[StoreStream]) -> StreamRun:
        """Phases 2 and 3 with one ``start``, as the system top runs them (the array's
        outputs reach ``io_in`` in the cycle they appear), up to the ``start``: every input
        image host-written, the load and store DMAs of the tiles these streams use
        programmed (the other tiles' DMAs keep running), ``start`` for those tiles only.
        Array cycle ``c`` is then cycle ``start + 2 + c`` of :attr:`cycles`; run the cycles
        (:meth:`idle`) and read the outputs back (:meth:`finish`). Buffers are allocated
        afresh in the tiles used. Raises :class:`SimulationError` for two input (or output)
        streams on one GLB tile or a buffer that does not fit."""
        p = self.p
        by_ld: dict[int, LoadStream] = {}
        by_st: dict[int, StoreStream] = {}
        for s in loads:
            self._claim(by_ld, s, "input", "load")
        for s in stores:
            self._claim(by_st, s, "output", "store")
        used = sorted(set(by_ld) | set(by_st))
        for t in used:
            self._tile_top.pop(t, None)
        progs: dict[tuple[int, str], DmaProgram] = {}
        bases: dict[int, int] = {}
        for t, s in sorted(by_ld.items()):
            base = self._alloc(t, s.image.size, f"input stream {s.port}")
            self._host_write(t, base, s.image.ravel())
            pp = s.program
            progs[(t, "ld")] = DmaProgram(PortProgram(pp.extents, AffineMap(
                pp.address.strides, pp.address.offset + base), pp.schedule))
        for t, s in sorted(by_st.items()):
            bases[t] = self._alloc(t, s.shape[0] * s.shape[1], f"output stream {s.port}")
            pp = s.program
            progs[(t, "st")] = DmaProgram(PortProgram(pp.extents, AffineMap(
                pp.address.strides, pp.address.offset + bases[t]), AffineMap(
                pp.schedule.strides, pp.schedule.offset + 1)))
        for t in used:
            for d in ("ld", "st"):
                self._cfg(config_words(p, t, encode(p, t, d, progs.get((t, d)))))
        start = len(self.cycles)
        self.step(Cycle(start=[int(t in used) for t in range(p.tiles)]))
        return StreamRun(start, {s.port: np.zeros(0, np.int64) for s in loads}, {}, {},
                         {s.port: t for t, s in by_st.items()},
                         {s.port: t for t, s in by_ld.items()},
                         {s.port: (t, bases[t], s.shape) for t, s in by_st.items()})

    def idle(self, n: int) -> list[Outputs]:
        """``n`` cycles with no host or config access (``io_in`` from :attr:`io_source`);
        their outputs."""
        return [self.step(Cycle()) for _ in range(n)]

    def finish(self, run: StreamRun) -> None:
        """Read every output buffer of ``run`` (:meth:`begin`) back through the host port
        into ``run.buffers``, recording in ``run.reads`` the cycle of each read's request
        (:meth:`read_back`)."""
        for port, (t, base, shape) in sorted(run.store_bufs.items()):
            n = shape[0] * shape[1]
            run.reads[port] = (len(self.cycles), n, shape)
            run.buffers[port] = self._host_read(t, base, n).reshape(shape)

    def stream(self, loads: Sequence[LoadStream], stores: Sequence[StoreStream], cycles: int,
               samples: dict[str, np.ndarray] | None = None) -> StreamRun:
        """:meth:`begin`, ``cycles + 2`` cycles with ``io_in`` from ``samples`` (top port ->
        the array's output per array cycle; None: :attr:`io_source` or zeros), then
        :meth:`finish`; ``inputs`` gets each load DMA's word per array cycle."""
        first = len(self.cycles)
        run = self.begin(loads, stores)
        mask = (1 << self.p.data_width) - 1
        got = {port: np.zeros(cycles, dtype=np.int64) for port in run.load_tiles}
        for g in range(cycles + 2):
            io = None
            if samples is not None:
                io = [0] * self.p.tiles
                for port, t in run.store_tiles.items():
                    v = samples.get(port)
                    if g >= 1 and v is not None and g - 1 < len(v):
                        io[t] = int(v[g - 1]) & mask
            out = self.step(Cycle(io_in=io))
            if 1 <= g <= cycles:
                for port, t in run.load_tiles.items():
                    if out.io_out_valid[t]:
                        got[port][g - 1] = out.io_out[t]
        run.inputs = got
        self.finish(run)
        self._phase("stream", first)
        return run

    def read_back(self, reads: dict[str, tuple[int, int, tuple[int, int]]],
                  rdata: Sequence[int]) -> dict[str, np.ndarray]:
        """The output buffers from ``host_rdata`` per cycle of :attr:`cycles` (``rdata``,
        e.g. the system RTL's), at the cycles :meth:`stream`'s host reads (``reads``) show
        them: top port -> buffer."""
        lanes, dw = self.p.lanes, self.p.data_width
        out = {}
        for port, (r0, n, shape) in reads.items():
            vals: list[int] = []
            for k in range(1, -(-n // lanes) + 1):
                w = int(rdata[r0 + k])
                vals += [(w >> (ln * dw)) & ((1 << dw) - 1) for ln in range(lanes)]
            out[port] = np.asarray(vals[:n], dtype=np.int64).reshape(shape)
        return out


@dataclass
class StreamRun:
    """A run of :meth:`GlbSession.begin` / :meth:`GlbSession.stream`: ``start`` (index in
    :attr:`GlbSession.cycles` of the ``start`` cycle; array cycle ``c`` is index ``start +
    2 + c``), ``inputs`` (top port -> the load DMA's word per array cycle; :meth:`stream`),
    ``buffers`` (top port -> the output buffer the host read), ``reads`` (top port -> (index
    of its first host-read cycle, words, shape), for :meth:`GlbSession.read_back`),
    ``store_tiles`` / ``load_tiles`` (top port -> GLB tile), ``store_bufs`` (top port ->
    (tile, element base, shape) of its buffer)."""

    start: int
    inputs: dict[str, np.ndarray]
    buffers: dict[str, np.ndarray]
    reads: dict[str, tuple[int, int, tuple[int, int]]]
    store_tiles: dict[str, int]
    load_tiles: dict[str, int] = field(default_factory=dict)
    store_bufs: dict[str, tuple[int, int, tuple[int, int]]] = field(default_factory=dict)


__all__ = ["ConfigResult", "GlbSession", "LoadStream", "StoreStream", "StreamRun"]
