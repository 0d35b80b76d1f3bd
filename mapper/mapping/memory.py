"""Memory mapping for stencil pipelines: shift registers, line buffers on MEM tiles, Lake port
programs, chaining, and the memory-side netlist.

Source: the unified-buffer paper (Liu et al., TACO 2023), section 5 (shift-register
optimisation, mapping buffers onto physical memories, chaining) on top of the schedules and
ports of :mod:`mapper.mapping.schedule`.

1. **Shift-register optimisation.**  For each buffer (producer, lane) take the distinct read
   distances ``0 <= d_1 < d_2 < ...`` (cycles between write and read, see
   :mod:`mapper.mapping.schedule`).  Walking them in order from the write (distance 0), a distance
   whose gap to the previous one is ``<= threshold`` is reached by a chain of ``gap``
   one-cycle registers from the previous tap; a larger gap becomes a *memory tap* (a delay
   line read port).  Distance 0 is a plain wire.  The threshold is at least the memory's read
   latency.  Gaussian 3x3 on a W-wide image: distances ``{0,1,2, W,W+1,W+2, 2W,2W+1,2W+2}``
   -> 6 registers and memory taps ``{W, 2W}``.
2. **Delay-line segments.**  Memory taps are cut into segments, each fed by one stream (the
   write stream or an earlier tap) and serving up to ``out_ports`` taps whose delay relative to
   the segment input ``r`` satisfies ``r - read_latency + 1 <= capacity`` (words needed by a
   circular delay line; rounded up to a multiple of the fetch width, which only changes the
   modulus of the circular addressing, not the delay).  A tap farther than one tile can hold gets pass-through segments
   chained in front (chaining).
3. **Tiles.**  Segments are packed first-fit into MEM tiles by input ports, output ports and
   capacity (each segment gets its own address range).
4. **Lake port programs** (``{dimensionality, extents[], address: {strides[], offset},
   schedule: {strides[], offset}}``), for a segment of ``M`` words at address base ``a`` whose
   input stream starts at cycle ``F`` and spans ``N`` cycles: the write port is
   ``extents [M, ceil(N/M)]``, ``address strides [1, 0] offset a``,
   ``schedule strides [1, M] offset F`` (one word per cycle into a circular buffer); the read
   port of a tap at relative delay ``r`` is the same with schedule offset
   ``F + r - read_latency``, so its data appears exactly ``r`` cycles after it was written.
   Gap cycles of a stream (row pitch > valid width) are written too; no valid output reads them.
5. **The pond** (the PE tiles' register file, AHA paper Sec. 4.2; the unified-buffer
   paper's mapping of short-reuse buffers to the smallest memory that holds them, Sec. 5).
   With a pond (``map_memory(..., pond=)``, capabilities from pe.json's ``pond``: capacity,
   ports, read latency, register widths; no preset name here), each read distance ``d``
   whose gap ``g = d - prev`` to the previous distance is a *short reuse*
   (:func:`choose_buffer`: ``g >= POND_MIN_GAP`` and the delay line fits one pond,
   ``g - read_latency + 1 <= capacity``) becomes a one-tap delay line in a pond fed by the
   previous memory tap (or the producer, distance 0) when that longer delay still fits one
   pond -- as a MEM delay line is, so the registers in between keep one sink each and
   packing can fold them into PE inputs -- else by the signal at ``prev``: instead of ``g``
   netlist registers (``g <= threshold``) or a MEM tap (``g > threshold``). A gap of 1
   stays a register (one register is cheaper than a pond and its two routes); a longer gap
   goes to MEM tiles as before. Pond delay lines are
   packed into ponds (``pond_<k>``, kind ``pond``, PnR tag ``o``: placed on a PE tile beside
   its PE) like MEM segments and take the same Lake port programs (step 4).
6. **Coordinate patterns** (``x % m``, :attr:`mapper.ir.PipelineInput.pattern`) are not
   streamed in: per lane and read distance, a MEM tile holds one row (column) of the pattern,
   loaded with the bitstream, and its read port runs at the reader's time
   (:func:`pattern_rom`), so no delay line follows it.

MEM collateral: a design's :class:`lake.collateral.MemInfo` (:meth:`MemSpec.from_info`), or
a preset dict (``MemSpec.from_dict``): ``name``, ``capacity`` (words), ``in_ports``,
``out_ports``, ``max_dimensionality``, ``read_latency`` (cycles), ``extent_width`` (bits of
each extent register), ``schedule_width`` (bits of the cycle counter), optional
``word_width`` (bits of a MEM word: the width of every net of the memory-side netlist, i.e.
the design's data width; the kernels keep their own word width until compute mapping widens
them to the PE's, :func:`mapper.mapping.compute.widen_kernel`), ``fetch_width`` (``max_dims`` is
accepted for ``max_dimensionality``).
Presets (named as Lake's presets): :data:`DUAL_PORT_SRAM` (``dualport_2048x16``, 1 in + 1 out)
and :data:`PHYSICAL_UNIFIED_BUFFER` (``pub_512x64``: 512 x 64-bit, fetch width 4 = 2048 words,
2 in + 2 out).  MEM ports are named like Lake's external ports (``data_in_<i>``,
``data_out_<i>``), so ``tile.programs`` can be passed to ``lake.config.configure`` as is.
Chaining here cascades tiles (a tile's output feeds the next tile's input), so every tile
is configured on its own (Lake ``chain_length`` 1).
"""
from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import islpy as isl
import networkx as nx

from cgra.errors import ConfigError, MappingError
from lake.collateral import MemInfo
from lake.config import configure as lake_configure
from lake.config import output_run_length
from lake.spec import is_known
from mapper import ir
from mapper.mapping import polyhedral
from mapper.netlist import Netlist
from mapper.mapping.schedule import BufferPort, PipelineSchedule, schedule_pipeline

DUAL_PORT_SRAM: dict[str, Any] = {
    "name": "dualport_2048x16", "capacity": 2048, "word_width": 16, "fetch_width": 1,
    "in_ports": 1, "out_ports": 1, "max_dimensionality": 6, "read_latency": 1,
    "extent_width": 16, "schedule_width": 24,
}
PHYSICAL_UNIFIED_BUFFER: dict[str, Any] = {
    "name": "pub_512x64", "capacity": 2048, "word_width": 16, "fetch_width": 4,
    "sram_depth": 512, "in_ports": 2, "out_ports": 2, "max_dimensionality": 6,
    "read_latency": 1, "extent_width": 16, "schedule_width": 24, "min_delay_full_rate": 7,
}
PRESETS = {"dualport_2048x16": DUAL_PORT_SRAM, "pub_512x64": PHYSICAL_UNIFIED_BUFFER}
#: The default shift-register threshold (cycles). 4, not a row: a chain of k netlist registers
#: is placed as k instances whose connecting routes add pipeline registers of their own (the
#: default interconnect's NORTH/EAST registers cannot be bypassed), and that latency must be
#: matched on every other operand of the consuming PEs, while a delay-line tap on a MEM absorbs
#: it in its read schedule. At 8, gaussian unrolled 8 times on build/default (row gaps of 6-8
#: cycles become register chains, 136 registers) fails branch-delay matching on every
#: placement attempt, 43 cycles short; at 4 it maps to 16 MEMs and 9 registers and runs
#: bit-exact (536 cycles for 513 ideal). Unroll 16 (gaps <= 4) keeps its register-only form.
DEFAULT_SR_THRESHOLD = 4
#: the smallest gap (cycles) between two read distances that a pond serves instead of
#: registers (module docstring, step 5): a single register is cheaper than a pond
POND_MIN_GAP = 2


@dataclass(frozen=True)
class MemSpec:
    """What memory mapping needs to know about a MEM tile (from the MEM collateral)."""

    name: str
    capacity: int
    in_ports: int
    out_ports: int
    max_dimensionality: int
    read_latency: int = 1
    extent_width: int = 16
    schedule_width: int = 24
    word_width: int = 16
    fetch_width: int = 1
    #: smallest write-to-read schedule distance (cycles) of a full-rate delay line
    #: (``min_delay_full_rate`` of the collateral; 7 on the PUB: aggregator + transpose buffer)
    min_delay: int = 0

    @classmethod
    def from_info(cls, info: MemInfo) -> MemSpec:
        """What memory mapping needs of a design's MEM (:class:`lake.collateral.MemInfo`,
        Lake's part of ``mem.json``): ``capacity`` = ``capacity_words``, ``word_width`` =
        the word's ``data_width`` (not Lake's wide-word ``word_width``), ``min_delay`` =
        ``min_delay_full_rate``."""
        return cls(info.preset, info.capacity_words, len(info.in_ports), len(info.out_ports),
                   info.max_dimensionality, info.read_latency, info.extent_width,
                   info.schedule_width, info.data_width, info.fetch_width,
                   info.min_delay_full_rate)

    @classmethod
    def of(cls, mem: MemSpec | MemInfo | dict[str, Any]) -> MemSpec:
        """``mem`` as a :class:`MemSpec`: itself, :meth:`from_info` of a design's
        :class:`~lake.collateral.MemInfo`, or :meth:`from_dict` of a preset dict
        (:data:`PRESETS`)."""
        if isinstance(mem, MemSpec):
            return mem
        if isinstance(mem, MemInfo):
            return cls.from_info(mem)
        return cls.from_dict(mem)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MemSpec:
        """Build from a collateral dict; raises MappingError naming a missing/bad field."""
        d = dict(d)
        if "max_dims" in d and "max_dimensionality" not in d:
            d["max_dimensionality"] = d["max_dims"]
        need = ("name", "capacity", "in_ports", "out_ports", "max_dimensionality")
        for k in need:
            if k not in d:
                raise MappingError(f"MEM collateral {d.get('name', '?')}: missing field '{k}'")
        spec = cls(str(d["name"]), int(d["capacity"]), int(d["in_ports"]), int(d["out_ports"]),
                   int(d["max_dimensionality"]), int(d.get("read_latency", 1)),
                   int(d.get("extent_width", 16)), int(d.get("schedule_width", 24)),
                   int(d.get("word_width", 16)), int(d.get("fetch_width", 1)),
                   int(d.get("min_delay_full_rate", 0)))
        for k in ("capacity", "in_ports", "out_ports", "extent_width", "schedule_width",
                  "fetch_width"):
            if getattr(spec, k) < 1:
                raise MappingError(f"MEM collateral {spec.name}: field '{k}' must be >= 1")
        if spec.max_dimensionality < 2:
            raise MappingError(f"MEM collateral {spec.name}: max_dimensionality must be >= 2 "
                               f"for line buffers")
        if spec.read_latency < 0:
            raise MappingError(f"MEM collateral {spec.name}: read_latency must be >= 0")
        return spec


def plan_shift_registers(distances: list[int], threshold: int) -> tuple[list[int], list[int]]:
    """Split sorted distinct read distances into register steps and memory taps.

    Returns ``(registers, mem_taps)``: ``registers`` lists the *target* distance of each
    one-cycle register (its input is the signal one cycle earlier); ``mem_taps`` lists the
    distances served by memory.  See the module docstring, step 1.
    """
    regs: list[int] = []
    taps: list[int] = []
    prev = 0
    for d in sorted(set(distances)):
        if d < 0:
            raise MappingError(f"shift-register planning: negative distance {d}")
        if d == 0:
            continue
        if d - prev <= threshold:
            regs.extend(range(prev + 1, d + 1))
        else:
            taps.append(d)
        prev = d
    return regs, taps


def choose_buffer(gap: int, threshold: int, pond: MemSpec | None = None) -> str:
    """Where a delay of ``gap`` cycles after the previous read distance lives (module
    docstring, steps 1 and 5): ``"wire"`` (0), ``"pond"`` (a pond is given, ``gap >=
    POND_MIN_GAP`` and ``gap - read_latency + 1`` words fit its ``capacity``, at least its
    ``min_delay + read_latency``), ``"registers"`` (``gap <= threshold``: ``gap`` one-cycle
    registers) or ``"mem"`` (a MEM delay-line tap). Raises :class:`MappingError` for a
    negative gap."""
    if gap < 0:
        raise MappingError(f"buffer mapping: negative reuse distance gap {gap}")
    if gap == 0:
        return "wire"
    if pond is not None and gap >= POND_MIN_GAP \
            and gap >= pond.min_delay + pond.read_latency \
            and 1 <= gap - pond.read_latency + 1 <= pond.capacity:
        return "pond"
    return "registers" if gap <= threshold else "mem"


def plan_buffer(buffer: tuple[str, int], distances: list[int], threshold: int, spec: MemSpec,
                pond: MemSpec | None = None) -> tuple[list[int], list[int], list[Segment]]:
    """Registers, memory taps and delay-line segments of one buffer (module docstring,
    steps 1, 2 and 5): ``(registers, taps, segments)`` with ``registers`` the target
    distance of each one-cycle register, ``taps`` the distances served by a MEM or a pond,
    ``segments`` the MEM segments (:func:`segment_taps`, chained from the previous memory
    tap as without a pond) and the pond segments (``pond=True``, one tap each, fed by the
    previous distance). Without ``pond`` this is :func:`plan_shift_registers` then
    :func:`segment_taps`."""
    if pond is None:
        regs, taps = plan_shift_registers(distances, threshold)
        return regs, taps, segment_taps(buffer, taps, spec)
    regs: list[int] = []
    taps: list[int] = []
    segs: list[Segment] = []
    run: list[int] = []
    base = prev = 0

    def flush_run() -> None:
        nonlocal base
        for seg in segment_taps(buffer, [t - base for t in run], spec):
            seg.base += base
            seg.taps = [t + base for t in seg.taps]
            segs.append(seg)
        if run:
            base = run[-1]
        run.clear()

    for d in sorted(set(distances)):
        where = choose_buffer(d - prev, threshold, pond)
        if where == "registers":
            regs.extend(range(prev + 1, d + 1))
        elif where == "pond":
            flush_run()
            # fed like a MEM delay line from the previous memory tap (or the producer) when
            # that delay fits: the registers in between keep one sink each, so packing can
            # still fold them into PE inputs; else from the previous distance
            src = base if choose_buffer(d - base, threshold, pond) == "pond" else prev
            words = d - src - pond.read_latency + 1
            segs.append(Segment(buffer, src, [d], words, pond=True))
            taps.append(d)
            base = d
        elif where == "mem":
            run.append(d)
            taps.append(d)
        prev = d
    flush_run()
    return regs, taps, segs


@dataclass
class Segment:
    """One circular delay line: input at distance ``base``, read taps at absolute distances
    ``taps``; ``passthrough`` segments exist only to chain a long delay."""

    buffer: tuple[str, int]
    base: int
    taps: list[int]
    words: int
    passthrough: bool = False
    addressed: bool = False
    #: a delay line in a pond (module docstring, step 5), not on a MEM tile
    pond: bool = False
    tile: int = -1
    address: int = 0
    in_port: int = -1
    out_ports: list[int] = field(default_factory=list)


@dataclass
class DelayChain:
    """The result of shift-register optimisation and segmentation for one buffer."""

    buffer: tuple[str, int]
    distances: list[int]
    registers: list[int]
    mem_taps: list[int]
    segments: list[Segment]


@dataclass
class MemTile:
    """One MEM tile instance: segments placed in it and its port programs by port name."""

    name: str
    spec: MemSpec
    segments: list[Segment] = field(default_factory=list)
    programs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def used(self) -> tuple[int, int, int]:
        """(input ports, output ports, words) in use."""
        return (sum(1 for _ in self.segments), sum(len(s.taps) for s in self.segments),
                sum(s.words for s in self.segments))


def segment_taps(buffer: tuple[str, int], taps: list[int], spec: MemSpec) -> list[Segment]:
    """Cut sorted memory taps into delay-line segments (module docstring, step 2)."""
    max_rel = spec.capacity + spec.read_latency - 1
    segs: list[Segment] = []
    base, i = 0, 0
    while i < len(taps):
        if taps[i] - base > max_rel:
            segs.append(Segment(buffer, base, [base + max_rel], spec.capacity, passthrough=True))
            base += max_rel
            continue
        group = [taps[i]]
        i += 1
        while i < len(taps) and len(group) < spec.out_ports and taps[i] - base <= max_rel:
            group.append(taps[i])
            i += 1
        need = group[-1] - base - spec.read_latency + 1
        words = min(spec.capacity, -(-need // spec.fetch_width) * spec.fetch_width)
        segs.append(Segment(buffer, base, group, words))
        base = group[-1]
    return segs


def pack_segments(segments: list[Segment], spec: MemSpec,
                  downstream: Callable[[Segment], set[str]] | None = None) -> list[MemTile]:
    """First-fit packing of segments into MEM tiles (module docstring, step 3).  Two
    segments share a tile only when neither's input depends on the other's output
    (``downstream(seg)``: the stages its taps feed, directly or through later stages; two
    segments of one buffer never share): otherwise the tile would sit on a loop of the
    netlist (a MEM output feeding, through PEs, an input of the same MEM), which
    pipelining cannot balance."""
    tiles: list[MemTile] = []
    below = downstream or (lambda seg: set())

    def related(a: Segment, b: Segment) -> bool:
        pa, pb = a.buffer[0], b.buffer[0]
        return pa == pb or pb in below(a) or pa in below(b)

    def fits(t: MemTile, seg: Segment) -> bool:
        ins, outs, words = t.used()
        return (ins < spec.in_ports and outs + len(seg.taps) <= spec.out_ports
                and words + seg.words <= spec.capacity
                and not any(related(o, seg) for o in t.segments))

    for seg in segments:
        k = next((i for i, t in enumerate(tiles) if fits(t, seg)), len(tiles))
        if k == len(tiles):
            tiles.append(MemTile(f"mem_{k}", spec))
        t = tiles[k]
        ins, outs, words = t.used()
        seg.tile, seg.address, seg.in_port = k, words, ins
        seg.out_ports = list(range(outs, outs + len(seg.taps)))
        t.segments.append(seg)
    return tiles


def check_program(prog: dict[str, Any], spec: MemSpec, where: str) -> None:
    """Dimensionality, extent register width, schedule range (cycle counter width) and
    address range of one port program (the rules of Lake's program checker)."""
    if prog["dimensionality"] > spec.max_dimensionality:
        raise MappingError(f"{where}: needs {prog['dimensionality']} dimensions, MEM {spec.name} "
                           f"supports {spec.max_dimensionality}")
    for e in prog["extents"]:
        if not 1 <= e <= 1 << spec.extent_width:
            raise MappingError(f"{where}: extent {e} does not fit the {spec.extent_width}-bit "
                               f"extent registers of MEM {spec.name} (use a smaller image or a "
                               f"MEM with wider registers)")
    sched, addr = prog["schedule"], prog["address"]
    last = sched["offset"] + sum((e - 1) * s for e, s in zip(prog["extents"], sched["strides"],
                                                             strict=True))
    if sched["offset"] < 0 or last >= 1 << spec.schedule_width:
        raise MappingError(f"{where}: schedule cycles [{sched['offset']}, {last}] do not fit the "
                           f"{spec.schedule_width}-bit cycle counter of MEM {spec.name}")
    hi = addr["offset"] + sum((e - 1) * s for e, s in zip(prog["extents"], addr["strides"],
                                                          strict=True))
    if addr["offset"] < 0 or hi >= spec.capacity:
        raise MappingError(f"{where}: addresses [{addr['offset']}, {hi}] exceed the "
                           f"{spec.capacity} words of MEM {spec.name}")


def delay_line_programs(seg: Segment, first_write: int, span: int, spec: MemSpec
                        ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Write program and one read program per tap for a segment (module docstring, step 4).

    ``first_write`` = cycle of the first word of the *producer* stream (distance 0),
    ``span`` = cycles from its first to its last word + 1.
    """
    m = seg.words
    wraps = -(-span // m)
    start = first_write + seg.base

    def prog(offset: int) -> dict[str, Any]:
        return {"dimensionality": 2, "extents": [m, wraps],
                "address": {"strides": [1, 0], "offset": seg.address},
                "schedule": {"strides": [1, m], "offset": offset}}

    reads = [prog(start + (t - seg.base) - spec.read_latency) for t in seg.taps]
    return prog(start), reads


def row_programs(write: polyhedral.Port, reads: list[polyhedral.Port], layout: tuple[int, int],
                 base: tuple[int, int], rows: int) -> list[polyhedral.AddressProgram]:
    """Address programs ``[write, read_0, ...]`` of a circular buffer of ``rows`` rows of
    ``layout[0]`` words whose element ``base`` is word 0 (:func:`mapper.mapping.polyhedral.linearize`;
    a read may overrun its domain). Raises :class:`MappingError` from ``linearize``."""
    height = layout[1]
    keep, mod = (1, None) if rows == 1 else (2, None) if rows == height else (2, rows)
    return [polyhedral.linearize(p, layout, base, keep, mod, overrun=p is not write)
            for p in [write, *reads]]


def restrict_columns(port: polyhedral.Port, lo: int, hi: int) -> polyhedral.Port | None:
    """``port`` restricted to the iterations that access buffer columns ``lo <= x < hi``
    (``None`` when there are none). Raises :class:`MappingError` when those iterations are
    not a box (one address program cannot run them)."""
    elem = port.access.get_tuple_name(isl.dim_type.out)
    cols = isl.Set(f"{{ {elem}[e0, e1] : {lo} <= e0 < {hi} }}")
    dom = port.access.intersect_range(cols).domain()
    if dom.is_empty():
        return None
    if not dom.coalesce().is_box():
        raise MappingError(f"buffer {port.buffer} ({port.stage}): the iterations reading "
                           f"columns [{lo}, {hi}) are not a box; this port cannot be banked "
                           f"by columns")
    return dataclasses.replace(port, domain=dom, access=port.access.intersect_domain(dom),
                               schedule=port.schedule.intersect_domain(dom))


def circular_rows(write: polyhedral.Port, reads: list[polyhedral.Port], layout: tuple[int, int],
                  base: tuple[int, int], need: int, capacity: int, where: str, mem: str,
                  pitch: int | None = None) -> tuple[int, list[polyhedral.AddressProgram]]:
    """The fewest rows ``R`` of a circular buffer of ``W``-word rows (``layout = (W, H)``)
    that hold ``need`` live words (``R * W >= need``) and whose addresses ``(x - x0) + P * ((y
    - y0) mod R)`` every port's address generator expresses (:func:`mapper.mapping.polyhedral.
    linearize`: a counter the modulus divides must have an extent that is a multiple of the
    divisor, i.e. ``H`` a multiple of ``R`` for the write; a read's outer counter may run
    past its domain, ``overrun``), with the programs ``[write, read_0, ...]``. ``P`` =
    ``pitch`` (words per stored row, default ``W``; a wide-fetch MEM pads rows to a
    multiple of its fetch width, words ``W..P-1`` of a row are never written or read).
    ``R = 1`` and ``R = H`` need no modulus. Raises :class:`MappingError` when no ``R``
    with ``R * P <= capacity`` (words of MEM ``mem``) works, naming the smallest ``R``
    tried, its size and the reason."""
    width, height = layout
    pitch = pitch or width
    first = max(1, -(-need // width))
    why = ""                            # the first refusal, named in the error
    for rows in range(first, height + 1):
        if rows * pitch > capacity:
            break
        try:
            return rows, row_programs(write, reads, (pitch, height), base, rows)
        except MappingError as exc:
            why = why or f" ({rows} rows: {str(exc).split(': ', 1)[-1]})"
    raise MappingError(f"{where}: needs a circular buffer of {first * pitch} words or more "
                       f"({first} row(s) of {pitch}, {need} words live) that its address "
                       f"generators can express, MEM {mem} holds {capacity}{why}; use a "
                       f"narrower image")


def addressed_tiles(key: tuple[str, int], reads: list[BufferPort], sched: PipelineSchedule,
                    spec: MemSpec, first_tile: int
                    ) -> tuple[list[MemTile], list[tuple[BufferPort, list[tuple[str, int]]]]]:
    """MEM tiles for the addressed reads of buffer ``key`` (reads whose distance varies, e.g.
    upsampling): a circular buffer of ``C = R * W`` words (``W`` words per producer row),
    ``R`` the fewest rows that hold the ISL capacity of these reads
    (:attr:`mapper.mapping.polyhedral.Port.capacity`) and whose ``y mod R`` every port's address
    generator can express (:func:`circular_rows`; ``R = 1``: one row, ``R = H``: the whole
    image), with the write program and one read program per port (addresses modulo ``C``;
    a read issues ``read_latency`` cycles before its data is due).  A tile serves up to
    ``out_ports`` reads; more reads get further tiles fed by the same write stream.

    **Banking.** When ``C`` exceeds one MEM (``capacity`` words) on a narrow MEM
    (``fetch_width`` 1), the columns are split into banks of ``B = capacity // R`` columns
    (the last one narrower): bank ``j`` holds columns ``[j*B, (j+1)*B)`` of the same ``R``
    rows on its own tiles; its write program writes only those columns and each read
    program runs only the iterations that read them (:func:`restrict_columns`). A read
    served by several banks is merged in its consumer kernel by :func:`merge_banks` (a mux
    chain selected by each bank's ``valid_out``).

    Returns ``(tiles, [(port, [(tile name, out port), ...]), ...])``: per read, its
    sources in bank order.  On a wide-fetch MEM (``fetch_width`` > 1, the PUB) rows are
    stored at a pitch of whole wide words (``W`` rounded up to a multiple of the fetch
    width, Lake's pitch rule) and every read must be a run pattern the transpose buffer
    serves (:func:`lake.config.output_run_length`); a tile of a Lake preset is also checked
    by Lake's encoder (commit / fetch timing against the golden model; the schedule leaves
    room for it, :func:`wide_read_latency`).  Raises :class:`MappingError` when ``C``
    exceeds the MEM's capacity on a wide-fetch MEM (no banking there) or ``R`` rows of one
    column do not fit, a program does not fit its registers or the wide-fetch MEM refuses
    it (Lake's rule named in the message)."""
    prod, lane = key
    st = sched.stages[prod]
    buf = sched.poly.buffers[prod]
    width, height = st.box.width, st.box.height
    x0, y0 = st.box.x0, st.box.y0
    need = max(p.poly.capacity for p in reads)
    where = f"memory mapping: buffer {prod} (addressed reads by " \
            f"{sorted({r.stage for r in reads})})"
    polys = [p.poly for p in reads]
    fw = spec.fetch_width
    pitch = -(-width // fw) * fw       # a wide-fetch MEM stores rows at whole wide words

    def program(ap: polyhedral.AddressProgram, shift: int) -> dict[str, Any]:
        return {"dimensionality": len(ap.extents), "extents": list(ap.extents),
                "address": {"strides": list(ap.strides), "offset": ap.offset},
                "schedule": {"strides": list(ap.schedule_strides),
                             "offset": ap.schedule_offset + shift}}

    # banks: (first column, columns, [write program, read program or None per read])
    banks: list[tuple[int, int, list[polyhedral.AddressProgram | None]]]
    # a narrow MEM banks what does not fit one tile: its row count is the smallest the
    # address generators express, whatever its size
    bound = spec.capacity if fw > 1 else pitch * height
    try:
        rows, programs = circular_rows(buf.write, polys, (width, height), (x0, y0), need,
                                       bound, where, spec.name, pitch)
    except MappingError:
        if fw > 1:
            raise
        # no row count at all: the refusal that names this MEM's size
        circular_rows(buf.write, polys, (width, height), (x0, y0), need, spec.capacity,
                      where, spec.name, pitch)
        raise
    if rows * pitch <= spec.capacity:
        banks = [(0, pitch, list(programs))]
    else:
        cols = spec.capacity // rows
        if cols == 0:
            raise MappingError(f"{where}: needs a circular buffer of {rows} rows; MEM "
                               f"{spec.name} holds {spec.capacity} words, fewer than one "
                               f"column of it") from None
        banks = []
        for a in range(0, width, cols):
            b = min(width, a + cols)
            w = restrict_columns(buf.write, x0 + a, x0 + b)
            rs = [restrict_columns(p, x0 + a, x0 + b) for p in polys]
            used = [r for r in rs if r is not None]
            progs = iter(row_programs(w, used, (b - a, height), (x0 + a, y0), rows))
            wp = next(progs)
            banks.append((a, b - a, [wp] + [next(progs) if r is not None else None
                                            for r in rs]))

    def vectorizable(prog: dict[str, Any], port: str) -> None:
        """The wide-fetch MEM's aggregator commits ``fetch_width`` consecutive words (write:
        innermost address stride 1; a row of ``W`` words is stored at a pitch of whole wide
        words, its last wide word partial, Lake's pitch rule); its transpose
        buffer serves each fetched wide word to one run of consecutive reads, in any order
        an affine slot function expresses (reads: :func:`lake.config.output_run_length`,
        e.g. upsample's repeated reads 0,0,1,1,...)."""
        if spec.fetch_width == 1:
            return
        fw = spec.fetch_width
        s0, e0 = prog["address"]["strides"][0], prog["extents"][0]
        if port.startswith("data_in"):
            if s0 != 1:
                raise MappingError(f"{where}: port {port} has innermost address stride {s0} "
                                   f"and extent {e0}, but MEM {spec.name} aggregates {fw} "
                                   f"consecutive words (stride 1); use a dual-port MEM "
                                   f"(mem_preset = \"dualport_2048x16\")")
            return
        try:
            output_run_length(fw, port, prog)
        except ConfigError as exc:
            raise MappingError(f"{where}: MEM {spec.name}: {exc}; reads the transpose buffer "
                               f"cannot serve need a dual-port MEM (mem_preset = "
                               f"\"dualport_2048x16\")") from None

    tiles: list[MemTile] = []
    sources: list[list[tuple[str, int]]] = [[] for _ in reads]
    for a, ncols, progs in banks:
        wprog = program(progs[0], 0)       # type: ignore[arg-type]
        vectorizable(wprog, "data_in_0")
        mine = [k for k in range(len(reads)) if progs[1 + k] is not None]
        for g in range(0, len(mine), spec.out_ports):
            group = mine[g:g + spec.out_ports]
            tile = MemTile(f"mem_{first_tile + len(tiles)}", spec)
            seg = Segment(key, 0, [reads[k].distance for k in group], rows * ncols,
                          addressed=True, tile=first_tile + len(tiles), in_port=0,
                          out_ports=list(range(len(group))))
            tile.segments.append(seg)
            bank = f", bank of columns [{a}, {a + ncols})" if len(banks) > 1 else ""
            tw = f"MEM {tile.name} ({where}{bank})"
            check_program(wprog, spec, tw)
            tile.programs["data_in_0"] = wprog
            for q, k in enumerate(group):
                rp = program(progs[1 + k], -spec.read_latency)    # type: ignore[arg-type]
                vectorizable(rp, f"data_out_{q}")
                check_program(rp, spec, tw)
                tile.programs[f"data_out_{q}"] = rp
                sources[k].append((tile.name, q))
            if spec.fetch_width > 1 and is_known(spec.name):
                # the wide-fetch schedule (aggregator commits, SRAM port sharing, prefetch,
                # dependence) is checked by Lake's own encoder against the golden model
                try:
                    lake_configure(spec.name, tile.programs)
                except ConfigError as exc:
                    raise MappingError(f"{tw}: {exc}") from None
            tiles.append(tile)
    return tiles, list(zip(reads, sources, strict=True))


def merge_banks(kernel: ir.Kernel, name: str, index: int, banks: int
                ) -> tuple[ir.Kernel, str, str]:
    """``kernel`` with input element ``name[index]`` read from ``banks`` memory banks: new
    inputs ``<name>_bank<index>`` (``banks`` data words, the banks' ``data_out``) and
    ``<name>_valid<index>`` (``banks`` bits, their ``valid_out``) replace it, merged by a
    mux chain ``m_0 = d_0``, ``m_j = valid_j ? d_j : m_(j-1)`` (``banks - 1`` ``coreir.mux``
    ops; exactly one bank's read fires per iteration; :func:`mapper.ir.rewrite` rebuilds
    the kernel). Returns ``(kernel, data input, valid input)``; the element
    ``name[index]`` is no longer read (the input stays declared)."""
    data, valid = f"{name}_bank{index}", f"{name}_valid{index}"
    if data in kernel.inputs or valid in kernel.inputs:
        raise MappingError(f"kernel {kernel.name}: inputs {data} / {valid} exist already")

    def merged(new: ir.Kernel, node: ir.Node) -> int | None:
        if node.input != (name, index):
            return None
        new.declare_input(data, banks, kernel.input_widths[name])
        new.declare_input(valid, banks, 1)
        m = new.input(data, 0)
        for j in range(1, banks):
            m = new.add("coreir.mux", m, new.input(data, j), new.input(valid, j))
        return m

    return ir.rewrite(kernel, inputs=merged), data, valid


def wide_read_latency(sched: PipelineSchedule, spec: MemSpec) -> int:
    """Read latency (cycles) to schedule the addressed reads of ``sched`` with on a
    wide-fetch MEM (``fetch_width`` > 1, e.g. the PUB): a read may only start a
    transpose-buffer run once the aggregator has committed the whole wide word, i.e. the
    last of its ``fetch_width`` writes (``(fetch_width - 1) * t`` cycles after the first
    for a producer writing every ``t`` cycles) plus the commit, the SRAM fetch and the
    transpose-buffer write (3 cycles) and up to ``fetch_width - 1`` cycles of SRAM-side
    phase for port sharing (:mod:`lake.config`). Equals ``spec.read_latency`` for a
    narrow MEM or a schedule without addressed reads."""
    prods = {k[0] for k, ports in sched.buffers.items()
             if any(p.kind == "read" and p.addressed for p in ports)}
    if spec.fetch_width == 1 or not prods:
        return spec.read_latency
    fw = spec.fetch_width
    t = max(sched.stages[p].strides[0] for p in prods)
    return spec.read_latency + (fw - 1) * t + 3 + (fw - 1)


@dataclass
class MemoryMapping:
    """Everything memory mapping produced for one pipeline.

    ``netlist`` holds IO, register and MEM instances plus one ``kernel`` placeholder instance
    per stage (``kernel_<stage>``, ports ``<input>.<index>`` and ``out_<lane>`` of the unrolled
    kernel in ``schedule.kernels[stage]``) that compute mapping replaces with PEs.
    """

    pipeline: ir.Pipeline
    spec: MemSpec
    threshold: int
    schedule: PipelineSchedule
    chains: dict[tuple[str, int], DelayChain]
    tiles: list[MemTile]
    netlist: Netlist
    seconds: float
    #: the ponds (PE register files) holding short-reuse delay lines (module docstring, 5)
    ponds: list[MemTile] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """``mem`` tiles, ``pond`` ponds, ``reg`` registers, ``io`` IO instances,
        ``pe_ops`` compute ops (one PE per op before rule covering, bank merges included),
        ``stages``."""
        c = self.netlist.counts()
        return {"mem": c.get("mem", 0), "pond": c.get("pond", 0), "reg": c.get("reg", 0),
                "io": c.get("io_in", 0) + c.get("io_out", 0),
                "pe_ops": sum(ir.Kernel.from_dict(i.config["dag"]).num_ops()
                              for i in self.netlist.instances.values() if i.kind == "kernel"),
                "stages": len(self.pipeline.stages)}


def pattern_rom(pin: ir.PipelineInput, lane: int, unroll: int, stream: dict[str, Any],
                spec: MemSpec, distance: int = 0) -> tuple[list[int], dict[str, Any]]:
    """Contents and read program of the MEM tile that plays coordinate-pattern input ``pin``
    (:attr:`mapper.ir.PipelineInput.pattern`) for ``lane`` of ``unroll``: the tile holds one
    row ``(x + offset) % m`` for ``x`` in ``0 .. unroll * extents[0] - 1`` (or one column for
    ``y``), loaded with the bitstream through its config memory, and its read port follows
    the input's stream program ``stream`` (``{extents, schedule}``, as an IO tile would stream
    it) ``distance`` cycles later (the reader's time: no delay line), with address ``unroll *
    xo + lane`` (``y``). The word appears ``read_latency`` cycles after the read fires:
    pipelining balances that like a core latency (instance config ``latency``). Raises
    :class:`MappingError` when the MEM cannot be loaded with the bitstream (a wide-fetch
    preset) or the row does not fit it."""
    dim, m, off = pin.pattern
    ext = list(stream["extents"])
    if spec.fetch_width > 1:
        raise MappingError(f"coordinate pattern {dim} % {m}: MEM {spec.name} fetches "
                           f"{spec.fetch_width}-word wide words and has no config-bus memory; "
                           f"use a dual-port preset (mem_preset = \"dualport_2048x16\")")
    if dim == "x":
        n, strides, start = unroll * ext[0], [unroll, 0], lane
    else:
        n, strides, start = ext[1], [0, 1], 0
    if n > spec.capacity:
        what = "row" if dim == "x" else "column"
        raise MappingError(f"coordinate pattern {dim} % {m}: a {n}-word {what} "
                           f"does not fit the {spec.capacity} words of MEM {spec.name}; use a "
                           f"smaller image")
    contents = [(i + off) % m for i in range(n)]
    sched = stream["schedule"]
    prog = {"dimensionality": 2, "extents": ext,
            "address": {"strides": strides, "offset": start},
            "schedule": {"strides": list(sched["strides"]),
                         "offset": int(sched["offset"]) + distance}}
    return contents, prog


def kernel_instance(stage: str) -> str:
    """Netlist name of a stage's kernel placeholder."""
    return f"kernel_{stage}"


def map_memory(pipeline: ir.Pipeline, mem: MemSpec | MemInfo | dict[str, Any],
               threshold: int = DEFAULT_SR_THRESHOLD,
               latencies: dict[str, int] | None = None,
               pond: MemSpec | MemInfo | dict[str, Any] | None = None) -> MemoryMapping:
    """Schedule ``pipeline``, extract buffers, run shift-register optimisation, map the
    remaining delays onto MEM tiles of ``mem`` and build the memory-side netlist (nets of
    ``mem``'s ``word_width`` bits; a pipeline of wider words than the MEM holds is refused).

    ``threshold`` (cycles) is the largest gap a register chain covers; ``latencies`` gives
    compute latency per stage (cycles); ``pond``: the PE tiles' register file (pe.json's
    ``pond``, :class:`~lake.collateral.MemInfo`), whose short-reuse delay lines replace
    registers and MEM taps (module docstring, step 5; ``None``: registers and MEMs only).
    Raises :class:`MappingError` when a program does not fit the MEM's (or the pond's)
    config registers or dimensionality.
    """
    t0 = time.perf_counter()
    spec = MemSpec.of(mem)
    pond_spec = MemSpec.of(pond) if pond is not None else None
    if pond_spec is not None and pond_spec.word_width != spec.word_width:
        raise MappingError(f"memory mapping {pipeline.name}: pond {pond_spec.name} holds "
                           f"{pond_spec.word_width}-bit words but MEM {spec.name} "
                           f"{spec.word_width}-bit ones; regenerate the design with a pond of "
                           f"the data width")
    if threshold < 0:
        raise MappingError(f"memory mapping {pipeline.name}: threshold must be >= 0")
    # a MEM delay line needs its first tap >= min_delay + read_latency cycles after its base
    # (a read issues read_latency early); shorter gaps become registers
    thr = max(threshold, spec.read_latency, spec.min_delay + spec.read_latency - 1)
    wide = {i.name: i.width_bits for i in pipeline.inputs.values()
            if i.width_bits > spec.word_width}
    if wide:
        name, bits = next(iter(wide.items()))
        raise MappingError(f"memory mapping {pipeline.name}: input {name} has {bits}-bit words "
                           f"but MEM {spec.name} holds {spec.word_width}-bit words; use a "
                           f"design whose data_width is at least {bits}")
    sched = schedule_pipeline(pipeline, latencies, spec.read_latency)
    if wide_read_latency(sched, spec) != spec.read_latency:
        sched = schedule_pipeline(pipeline, latencies, wide_read_latency(sched, spec))
    u = pipeline.unroll
    nl = Netlist(pipeline.name)
    sig: dict[tuple[str, int, int], tuple[str, str]] = {}
    sinks: dict[tuple[str, int, int], list[tuple[str, str]]] = {}

    for name, pin in pipeline.inputs.items():
        st = sched.stages[name]
        if pin.pattern is not None:          # a coordinate pattern: ROMs (below), no stream
            continue
        for lane in range(u):
            inst = f"io_in_{name}_l{lane}"
            nl.add_instance(inst, "io_in", "I", {
                "input": name, "lane": lane, "unroll": u, "width": pin.shape[0],
                "height": pin.shape[1], "program": st.program(),
                **({"pad": list(pin.pad)} if any(pin.pad) else {})})
            sig[(name, lane, 0)] = (inst, "out")
    for s in pipeline.stages:
        st = sched.stages[s.name]
        us = sched.kernels[s.name]
        inst = kernel_instance(s.name)
        nl.add_instance(inst, "kernel", None, {
            "stage": s.name, "kernel": us.kernel.name, "start": st.start, "latency": st.latency,
            "first_cycle": st.first_cycle(), "extents": st.extents,
            "schedule": {"strides": list(st.strides), "offset": st.first_cycle()},
            "signed": s.signed, "dag": us.kernel.to_dict()})
        for lane in range(u):
            sig[(s.name, lane, 0)] = (inst, f"out_{lane}")
    for oname in pipeline.outputs:
        out = sched.stages[oname]
        for lane in range(u):
            inst = f"io_out_{oname}_l{lane}"
            xs = [x for x in range(u * out.xo_range[0] + lane, u * out.xo_range[1], u)
                  if out.box.x0 <= x < out.box.x1]
            nl.add_instance(inst, "io_out", "I", {
                "stage": oname, "lane": lane, "unroll": u, "program": out.program(),
                "x_valid": [xs[0], xs[-1]] if xs else None, "box": [out.box.x0, out.box.x1,
                                                                    out.box.y0, out.box.y1]})
            sinks.setdefault((oname, lane, 0), []).append((inst, "in"))

    chains: dict[tuple[str, int], DelayChain] = {}
    all_segments: list[Segment] = []
    addressed: list[tuple[tuple[str, int], list[BufferPort]]] = []
    net_names: dict[tuple[str, int, int], str] = {}
    for key, ports in sched.buffers.items():
        dists = sorted({p.distance for p in ports if p.kind == "read" and not p.addressed})
        for p in ports:
            if p.kind == "read" and not p.addressed:
                sinks.setdefault((key[0], key[1], p.distance), []).append(
                    (kernel_instance(p.stage), f"{p.input}.{p.index}"))
        reads = [p for p in ports if p.kind == "read" and p.addressed]
        pin = pipeline.inputs.get(key[0])
        if pin is not None and pin.pattern is not None:
            # a coordinate pattern is read straight from a ROM at each reader's time: one ROM
            # per distance, no delay line
            stream = sched.stages[key[0]].program()
            for d in dists:
                inst = f"rom_{key[0][len('__'):]}_l{key[1]}_d{d}"
                contents, prog = pattern_rom(pin, key[1], u, stream, spec, d)
                check_program(prog, spec, f"MEM {inst} (coordinate pattern {pin.name})")
                nl.add_instance(inst, "mem", "m", {
                    "preset": spec.name, "ports": {"data_out_0": prog}, "rom": contents,
                    "latency": spec.read_latency, "pattern": list(pin.pattern)})
                sig[(key[0], key[1], d)] = (inst, "data_out_0")
            continue
        if reads:
            addressed.append((key, reads))
        regs, taps, segs = plan_buffer(key, dists, thr, spec, pond_spec)
        chains[key] = DelayChain(key, dists, regs, taps, segs)
        all_segments.extend(segs)
    flow = nx.DiGraph((w.producer, s.name) for s in pipeline.stages for w in s.windows.values())

    @functools.cache
    def fed(buffer: tuple[str, int], base: int) -> frozenset[str]:
        readers = {p.stage for p in sched.buffers[buffer]
                   if p.kind == "read" and not p.addressed and p.distance >= base}
        return frozenset(readers.union(*(nx.descendants(flow, r) for r in readers)))

    def downstream(seg: Segment) -> set[str]:
        """Stages fed by ``seg``'s taps: readers of its buffer at its distances or later
        (through registers and later segments), and every stage below them."""
        return set(fed(seg.buffer, seg.base))

    tiles = pack_segments([g for g in all_segments if not g.pond], spec, downstream)
    ponds = pack_segments([g for g in all_segments if g.pond], pond_spec, downstream) \
        if pond_spec is not None else []
    for k, t in enumerate(ponds):
        t.name = f"pond_{k}"
    bank_nets: list[tuple[tuple[str, str], tuple[str, str], int, str]] = []
    for key, reads in addressed:
        new_tiles, served = addressed_tiles(key, reads, sched, spec, len(tiles))
        for tile in new_tiles:
            tiles.append(tile)
            sinks.setdefault((key[0], key[1], 0), []).append((tile.name, "data_in_0"))
        for k, (port, srcs) in enumerate(served):
            name = f"{key[0]}_l{key[1]}_a{port.stage}_{port.input}_{port.index}"
            kinst = kernel_instance(port.stage)
            if len(srcs) == 1:
                tkey = (key[0], key[1], -1 - k)
                sig[tkey] = (srcs[0][0], f"data_out_{srcs[0][1]}")
                net_names[tkey] = name
                sinks.setdefault(tkey, []).append((kinst, f"{port.input}.{port.index}"))
                continue
            cfg = nl.instances[kinst].config
            merged, din, vin = merge_banks(ir.Kernel.from_dict(cfg["dag"]), port.input,
                                           port.index, len(srcs))
            cfg["dag"] = merged.to_dict()
            cfg.setdefault("banked", []).append([din, vin])
            for j, (tname, q) in enumerate(srcs):
                bank_nets.append(((tname, f"data_out_{q}"), (kinst, f"{din}.{j}"),
                                  spec.word_width, f"{name}_b{j}"))
                if j:                       # the mux chain never reads bank 0's valid
                    bank_nets.append(((tname, f"valid_out_{q}"), (kinst, f"{vin}.{j}"), 1,
                                      f"{name}_v{j}"))

    # build registers and memories in order of target distance
    for key, ch in chains.items():
        prod, lane = key
        st = sched.stages[prod]
        first, span = st.first_write(), st.last_write() - st.first_write() + 1
        events: list[tuple[int, str, Any]] = [(d, "reg", None) for d in ch.registers]
        for seg in ch.segments:
            events.append((seg.taps[0], "seg", seg))
        for target, kind, seg in sorted(events, key=lambda e: e[0]):
            if kind == "reg":
                inst = f"reg_{prod}_l{lane}_d{target}"
                nl.add_instance(inst, "reg", "r", {"buffer": prod, "lane": lane,
                                                   "distance": target, "delay": 1})
                src = (prod, lane, target - 1)
                if src not in sig:
                    raise MappingError(f"memory mapping {pipeline.name}: register {inst} has no "
                                       f"driver at distance {target - 1}")
                sinks.setdefault(src, []).append((inst, "in"))
                sig[(prod, lane, target)] = (inst, "out")
            else:
                tile = (ponds if seg.pond else tiles)[seg.tile]
                tspec = tile.spec
                wprog, rprogs = delay_line_programs(seg, first, span, tspec)
                where = (f"{'pond' if seg.pond else 'MEM'} {tile.name} (buffer {prod} lane "
                         f"{lane}, delay line at distance {seg.base})")
                check_program(wprog, tspec, where)
                tile.programs[f"data_in_{seg.in_port}"] = wprog
                sinks.setdefault((prod, lane, seg.base), []).append(
                    (tile.name, f"data_in_{seg.in_port}"))
                for t, op, rp in zip(seg.taps, seg.out_ports, rprogs, strict=True):
                    check_program(rp, tspec, where)
                    tile.programs[f"data_out_{op}"] = rp
                    sig[(prod, lane, t)] = (tile.name, f"data_out_{op}")
    for tile in ponds:
        nl.add_instance(tile.name, "pond", "o", {
            "preset": tile.spec.name, "ports": dict(sorted(tile.programs.items())),
            "segments": [{"buffer": s.buffer[0], "lane": s.buffer[1], "base": s.base,
                          "taps": s.taps, "words": s.words, "address": s.address,
                          "in_port": s.in_port, "out_ports": list(s.out_ports)}
                         for s in tile.segments]})
    for tile in tiles:
        nl.add_instance(tile.name, "mem", "m", {
            "preset": spec.name, "ports": dict(sorted(tile.programs.items())),
            "segments": [{"buffer": s.buffer[0], "lane": s.buffer[1], "base": s.base,
                          "taps": s.taps, "words": s.words, "address": s.address,
                          "passthrough": s.passthrough, "in_port": s.in_port,
                          "out_ports": list(s.out_ports),
                          **({"kind": "addressed"} if s.addressed else {})}
                         for s in tile.segments]})
    for key in sorted(sinks, key=lambda k: (k[0], k[1], k[2])):
        if key not in sig:
            raise MappingError(f"memory mapping {pipeline.name}: no signal for buffer {key[0]} "
                               f"lane {key[1]} at distance {key[2]}")
        nl.add_net(sig[key], sinks[key], spec.word_width,
                   net_names.get(key, f"{key[0]}_l{key[1]}_d{key[2]}"))
    for src, sink, bits, name in bank_nets:
        nl.add_net(src, [sink], bits, name)
    nl.validate()
    return MemoryMapping(pipeline, spec, thr, sched, chains, tiles, nl,
                         time.perf_counter() - t0, ponds)
