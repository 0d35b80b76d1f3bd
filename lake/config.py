"""Config encoder / decoder: port programs <-> config field values of a preset.

Config map of a memory (one :class:`~cgra.config.ConfigField` per register field, all
<= 32 bits; packed by the tile with :func:`cgra.config.pack_fields`). For every controller
``c`` with address generators ``g``:

==========================  ======================  ==========================================
field                       width (bits)            meaning
==========================  ======================  ==========================================
``c_enable``                1                       controller active
``c_dim``                   3                       dimensionality d (1..6)
``c_range_k`` (k<6)         extent_width (16)       extent_k - 1 (0 for unused levels)
``c_sched_offset``          schedule_width (24)     first cycle
``c_sched_delta_k``         schedule_width          recurrence delta of level k (two's compl.)
``c_g_offset``              width of g              first address
``c_g_delta_k``             width of g              address delta of level k (mod 2**width)
``chain_enable``            1                       tile is part of a chain
``chain_id``                chain_bits (4)          index of this tile in its chain
``lut_mode``                1                       lookup-table mode (only when ``spec.lut``;
                                                    last field; see :mod:`lake.lut`)
==========================  ======================  ==========================================

Deltas follow the recurrence form (``lake.affine``). For the physical unified buffer,
:func:`configure` performs the AGG -> SRAM -> TB vectorisation of the unified-buffer paper
(Liu et al., ACM TACO 2023, Sec. 6.2): every input word stream is grouped into aligned
``fetch_width``-word chunks collected by the aggregator; the shared AGG-read/SRAM-write
controller commits chunk ``k`` one cycle after its last word plus a phase ``a``; the shared
SRAM-read/TB-write controller fetches the wide word of output run ``k`` 2 + ``b`` cycles
before the run's first read, into transpose-buffer half ``k mod 2``. An output run is the
reads of one wide word: ``fetch_width`` consecutive words of a raster read, or more when
words repeat or are reordered (upsample's 0,0,1,1,2,2,3,3: one fetch per 8 reads; see
:func:`output_run_length`); the ``out<q>`` slot generator gives ``fetch_width * (k mod 2) +
word``, affine in the counters modulo ``2 * fetch_width``. Phases are chosen so that the
single SRAM port never sees two accesses in one cycle and every output word equals the
unified-buffer semantics; otherwise ConfigError.

Partial chunks and the pitch rule. An input port needs innermost address stride 1 (rule
'vectorization') and an address offset and outer address strides that are multiples of
``fetch_width`` (rule 'pitch'); its innermost extent ``W`` (a row) may be any value >= 1.
When ``W mod fetch_width = p != 0``, each row is cut into ``C = ceil(W / fetch_width)``
aligned chunks and the last one is *partial* (``p`` words): the compiler lays rows out at
a padded pitch ``P`` (outer address stride), a multiple of ``fetch_width`` and normally
``P = C * fetch_width`` (e.g. 31-word rows at pitch 32; any multiple of ``fetch_width``
>= that works too, e.g. 40), and never reads the padding words ``W..P-1`` of a row. A
partial chunk is committed as if it were full, at the cycle its ``fetch_width``-th word
would arrive (``t_0 * (fetch_width - p)`` cycles after its last real word; ``t_0`` the
innermost schedule stride), so the ``agg<i>`` controller keeps the affine schedule
``fetch_width * t_0 * k + outer strides`` over extents ``[C, ...]``; the ``in<i>`` slot
is the padded flat index ``i + fetch_width * C * row`` modulo ``2 * fetch_width`` and the
padding slots of the committed wide word hold stale aggregator data (don't-care; a read
of such a word that must return another port's write is refused by rule 'dependence').
If the virtual commit would come after the next use of the same aggregator half (rows of
``W < fetch_width`` words written back to back), rule 'partial-chunk' refuses it. Output
ports are served the same way (split form of :func:`_output_pattern`): the reads of a row
of ``W`` words at stride 1 form ``C`` transpose-buffer runs, the last one of ``p`` words;
each aligned run is fetched before its first (real) read.

Unaligned output runs. An output port's address offset ``o`` need not be a multiple of
``fetch_width`` (fw): with ``shift = o mod fw`` != 0 and a stride-1 split level ``j``
(levels below it stride 0, levels above it strides multiples of fw: the pitch rule), every
pass of level ``j`` (``e_j`` reads, a row) reads words ``shift .. shift + e_j - 1`` of the
aligned wide words it touches, ``C = ceil((shift + e_j) / fw)`` of them, the first holding
``fw - shift`` read words and the last ``(shift + e_j) mod fw`` (or fw). Each wide word is
still fetched once per pass into half ``k mod 2`` (run ``k``), so the slot of read ``i_j``
is ``shift + i_j + fw * C * outer_flat`` modulo ``2 * fw`` (e.g. words 1..31 of 32-word
rows: slots 1..7, 0..7, 0..7, 0..7 per row; the hardware is unchanged). The first
wide word of every pass is fetched as if the pass had started ``shift`` words earlier
(a *virtual* full run, the read-side counterpart of the virtual commit of a partial input
chunk): ``t_j * shift`` cycles before the aligned fetch time ``first read - 2`` (``t_j``
the schedule stride of level ``j``), which keeps the ``tb<q>`` schedule affine
(``fw * t_j`` per run). Consequences, all checked by :func:`configure`:

* rule 'prefetch': the first read must come at cycle >= ``2 + t_j * shift``;
* rule 'dependence' (minimal latency): the fetch must follow the commit of the wide word,
  so the first read of a pass comes at least ``t_w * (fw - 1) + 4 + t_j * shift`` cycles
  after the write of the wide word's word 0 (``t_w`` the writer's innermost schedule
  stride; plus any SRAM-side phases), i.e. ``t_w * (fw - 1) + 4 + (t_j - t_w) * shift``
  cycles after the write of the word it reads first: the same distance as an aligned read
  when reads and writes run at the same word rate. Example: 32-word rows written one word
  every 2 cycles from cycle 0 (schedule strides [2, 128]) read from word 1 at the same
  rate (raster, or upsample's 0,0,1,1,... with ``t_j`` = 2): first read at cycle >= 12
  (aligned: 10); at full rate (strides [1, 32] both): >= 8 (aligned: 7);
* rule 'unaligned-run': the early fetch must come after the previous run's fetch and must
  not overwrite the half of run ``k - 2`` before its last read (fetch + 1 >= last read).
  It can only fail when the last run of a pass is partial (``(shift + e_j) mod fw`` != 0)
  and the next pass follows closely (e.g. upsample's 0,0,1,1,... of 31 words from word 2
  of every 32-word row, one pass every 64 cycles: the first fetch of a pass, 4 cycles
  early, would coincide with the fetch of the previous pass's last wide word, which holds
  only word 32). Serving them would need a ``tb<q>`` schedule that is not affine (the
  first fetch of a pass off the ``fw * t_j`` grid) or a third transpose-buffer half;
  fetching both wide words of every run into the two halves is no better (a run's two
  fetches could only land between two consecutive reads). Such programs are refused; the
  fix is to delay every pass by the cycles the message names, or to align the offset.

Strided output runs. The split level ``j`` of an output port may have any address stride
``s`` that divides fw (1, 2, 4 for fw 4; rule 'vectorization' refuses others, e.g. 3 or
6, unless the run form applies, which also serves every multiple of fw): its reads are
words ``shift + s * i_j``, so every aligned wide word holds ``fw / s`` reads of a pass
(times the repeats of the stride-0 levels inside ``j``) at the same words, a pass touches
``C = ceil((shift + s * (e_j - 1) + 1) / fw)`` wide words, the ``tb<q>`` schedule steps
``(fw / s) * t_j`` per run and the slot of read ``i_j`` is ``shift + s * i_j + fw * C *
outer_flat`` modulo ``2 * fw`` (slot stride ``s``; e.g. the 2x downsample ``f(x, y) =
in(2x, y/2)`` of a 32x16 image, extents [16, 2, 16], strides [2, 0, 32] or [2, 0, 0] over
a one-row buffer: slots 0, 2, 4, 6, 0, 2, ..., one fetch per 2 reads, 8 per pass). With
``shift >= s`` the first wide word of a pass is fetched ``t_j * (shift // s)`` cycles
early (the reads of words ``shift - s``, ``shift - 2s``, ... >= 0 of a virtual full run;
rules 'prefetch' and 'unaligned-run' as above with ``shift // s`` reads in place of
``shift``). Minimal latency: wide word ``c`` of a pass (first read ``(c * fw - shift) /
s`` rounded up) is committed ``t_w * (fw * c + fw - 1) + 1`` cycles after the row's word
0 is written and fetched 2 cycles before its first read, so with ``t_w`` the write rate
the first read comes at least ``t_w * (fw - 1) + 4 + t_j * (shift // s) + max(0, (C - 1)
* (t_w * fw - t_j * fw / s))`` cycles after the write of word 0 (plus SRAM-side phases):
when the reads walk a row faster than the writes (``t_j * fw / s < t_w * fw``) the last
wide word binds. Example: the downsample above with the input written at full rate
(schedule strides [1, 32]) and read one word per cycle (strides [1, 16, 32]): first read
at cycle >= 3 + 4 + 7 * 2 = 21 (chunk 7, words 28..31, committed at cycle 32 and first
read by ``x`` = 14); at the compiler's rate (input rows every 64 cycles, a read every 2nd
cycle: [1, 64] and [2, 32, 64]) >= 7, as a full-rate delay line. (A one-row buffer
written at full rate cannot be read in two passes at all: its second pass would need the
row after the next row overwrote it.) The hardware is unchanged: the slot generator is
affine and ``decode`` inverts the strided form (slot stride ``s`` < fw at the level the
``tb<q>`` domain starts with).
"""
from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping

import numpy as np

from cgra.config import ConfigField
from cgra.errors import ConfigError
from lake.affine import deltas_from_strides, strides_from_deltas, to_signed
from lake.golden import sources
from lake.program import AffineMap, PortProgram, check_program
from lake.spec import Controller, MemorySpec, as_spec

DIM_FIELD_WIDTH = 3


@dataclass(frozen=True)
class ControllerProgram:
    """What one controller runs: its domain, schedule and one affine map per address
    generator (name -> map). Units: cycles for the schedule, the generator's own units
    (words, wide words, buffer slots) for addresses."""

    extents: tuple[int, ...]
    schedule: AffineMap
    addresses: dict[str, AffineMap]


@lru_cache(maxsize=None)
def _fields_cached(spec: MemorySpec) -> tuple[ConfigField, ...]:
    out: list[ConfigField] = []
    for c in spec.controllers:
        out.append(ConfigField(f"{c.name}_enable", 1))
        out.append(ConfigField(f"{c.name}_dim", DIM_FIELD_WIDTH))
        out += [ConfigField(f"{c.name}_range_{k}", spec.extent_width) for k in range(c.dims)]
        out.append(ConfigField(f"{c.name}_sched_offset", spec.schedule_width))
        out += [ConfigField(f"{c.name}_sched_delta_{k}", spec.schedule_width)
                for k in range(c.dims)]
        for g in c.address_generators:
            out.append(ConfigField(f"{c.name}_{g.name}_offset", g.width))
            out += [ConfigField(f"{c.name}_{g.name}_delta_{k}", g.width) for k in range(c.dims)]
    out.append(ConfigField("chain_enable", 1))
    out.append(ConfigField("chain_id", spec.chain_bits))
    if spec.lut:
        out.append(ConfigField("lut_mode", 1))
    return tuple(out)


def config_fields(preset: MemorySpec | str) -> tuple[ConfigField, ...]:
    """All config fields of a memory, in packing order (each <= 32 bits)."""
    return _fields_cached(as_spec(preset))


def encode_controller(spec: MemorySpec, ctrl: Controller, cp: ControllerProgram | None
                      ) -> dict[str, int]:
    """Field values of one controller (all zero = disabled when ``cp`` is None)."""
    vals: dict[str, int] = {}
    n = ctrl.dims
    c = ctrl.name
    if cp is None:
        vals[f"{c}_enable"] = 0
        vals[f"{c}_dim"] = 0
        for k in range(n):
            vals[f"{c}_range_{k}"] = 0
            vals[f"{c}_sched_delta_{k}"] = 0
        vals[f"{c}_sched_offset"] = 0
        for g in ctrl.address_generators:
            vals[f"{c}_{g.name}_offset"] = 0
            for k in range(n):
                vals[f"{c}_{g.name}_delta_{k}"] = 0
        return vals
    d = len(cp.extents)
    ext = list(cp.extents) + [1] * (n - d)
    vals[f"{c}_enable"] = 1
    vals[f"{c}_dim"] = d
    sw = spec.schedule_width
    for k in range(n):
        vals[f"{c}_range_{k}"] = ext[k] - 1
    sdel = deltas_from_strides(cp.extents, cp.schedule.strides) + [0] * (n - d)
    vals[f"{c}_sched_offset"] = cp.schedule.offset
    for k in range(n):
        vals[f"{c}_sched_delta_{k}"] = sdel[k] % (1 << sw)
    for g in ctrl.address_generators:
        amap = cp.addresses[g.name]
        adel = deltas_from_strides(cp.extents, amap.strides) + [0] * (n - d)
        vals[f"{c}_{g.name}_offset"] = amap.offset % (1 << g.width)
        for k in range(n):
            vals[f"{c}_{g.name}_delta_{k}"] = adel[k] % (1 << g.width)
    return vals


def decode_controller(spec: MemorySpec, ctrl: Controller, config: Mapping[str, int]
                      ) -> ControllerProgram | None:
    """Inverse of :func:`encode_controller` (deltas read as two's complement)."""
    c = ctrl.name
    if not config.get(f"{c}_enable", 0):
        return None
    d = config[f"{c}_dim"]
    if not 1 <= d <= ctrl.dims:
        raise ConfigError(f"controller {c}: field {c}_dim = {d} must be 1..{ctrl.dims}")
    ext = [config[f"{c}_range_{k}"] + 1 for k in range(d)]
    sdel = [to_signed(config[f"{c}_sched_delta_{k}"], spec.schedule_width) for k in range(d)]
    sched = AffineMap(tuple(strides_from_deltas(ext, sdel)), config[f"{c}_sched_offset"])
    addrs = {}
    for g in ctrl.address_generators:
        adel = [to_signed(config[f"{c}_{g.name}_delta_{k}"], g.width) for k in range(d)]
        addrs[g.name] = AffineMap(tuple(strides_from_deltas(ext, adel)),
                                  config[f"{c}_{g.name}_offset"])
    return ControllerProgram(tuple(ext), sched, addrs)


def _parse(spec: MemorySpec, port_programs: Mapping[str, object]) -> dict[str, PortProgram]:
    known = spec.inputs + spec.outputs
    progs: dict[str, PortProgram] = {}
    for port, p in port_programs.items():
        if port not in known:
            raise ConfigError(f"memory {spec.name}: unknown port '{port}' in port programs; "
                              f"ports are {list(known)}")
        progs[port] = PortProgram.from_dict(p, port)
    return progs


def configure(preset: MemorySpec | str, port_programs: Mapping[str, object],
              chain_index: int = 0, chain_length: int = 1) -> dict[str, int]:
    """Config field values (name -> int, exactly the fields of :func:`config_fields`) that
    make ``preset`` realise the port programs (port name -> program dict; absent ports are
    disabled).

    Chaining: a buffer of ``chain_length`` tiles has addresses ``[0, chain_length *
    words)``; tile ``chain_index`` stores the addresses whose high bits equal its index and
    the tiles' outputs are combined through the ``chain_*`` inputs (see :mod:`lake.rtl`).
    Every tile of a chain gets the same port programs and its own ``chain_index``.

    Raises :class:`ConfigError` naming the port and the rule broken (see
    :func:`lake.program.check_program`; for the PUB also 'vectorization', 'pitch',
    'partial-chunk', 'prefetch', 'unaligned-run', 'conflict' and 'dependence').
    """
    spec = as_spec(preset)
    if not 1 <= chain_length <= 1 << spec.chain_bits:
        raise ConfigError(f"memory {spec.name}: chain_length {chain_length} must be 1.."
                          f"{1 << spec.chain_bits} ({spec.chain_bits} chain bits)")
    if not 0 <= chain_index < chain_length:
        raise ConfigError(f"memory {spec.name}: chain_index {chain_index} must be in "
                          f"[0, {chain_length})")
    progs = _parse(spec, port_programs)
    words = spec.storage.words * chain_length
    for port, p in progs.items():
        check_program(port, p, max_dims=spec.max_dims, extent_width=spec.extent_width,
                      schedule_width=spec.schedule_width, words=words)
    if spec.wide:
        cps = _vectorize(spec, progs)
    else:
        cps = {}
        for c in spec.controllers:
            p = progs.get(c.port)
            if p is not None:
                cps[c.name] = ControllerProgram(p.extents, p.schedule, {"addr": p.address})
    values: dict[str, int] = {}
    for c in spec.controllers:
        values.update(encode_controller(spec, c, cps.get(c.name)))
    values["chain_enable"] = int(chain_length > 1)
    values["chain_id"] = chain_index
    if spec.lut:
        values["lut_mode"] = 0
    for f in config_fields(spec):
        v = values[f.name]
        if not 0 <= v < 1 << f.width:
            raise ConfigError(f"memory {spec.name}: rule 'register-width' broken: field "
                              f"{f.name} = {v} does not fit {f.width} bits")
    return values


def controller_programs(preset: MemorySpec | str, port_programs: Mapping[str, object]
                        ) -> dict[str, ControllerProgram]:
    """The per-controller programs :func:`configure` encodes (for models and reports)."""
    spec = as_spec(preset)
    values = configure(spec, port_programs)
    out = {}
    for c in spec.controllers:
        cp = decode_controller(spec, c, values)
        if cp is not None:
            out[c.name] = cp
    return out


def decode(preset: MemorySpec | str, config: Mapping[str, int]) -> dict[str, dict]:
    """Port programs (dict form) of the enabled external ports from config values; the
    inverse of :func:`configure` (address strides are read as two's complement of the
    generator width). Raises :class:`ConfigError` on a missing or inconsistent field."""
    spec = as_spec(preset)
    missing = [f.name for f in config_fields(spec) if f.name not in config]
    if missing:
        raise ConfigError(f"memory {spec.name}: config lacks fields {missing[:5]}...")
    out: dict[str, dict] = {}
    for c in spec.controllers:
        if c.role not in ("write", "read", "agg_in", "tb_out"):
            continue
        cp = decode_controller(spec, c, config)
        if cp is None:
            continue
        if spec.wide:
            side = f"agg{c.name[-1]}" if c.role == "agg_in" else f"tb{c.name[-1]}"
            wide = decode_controller(spec, spec.controller(side), config)
            if wide is None:
                raise ConfigError(f"memory {spec.name}: port controller {c.name} is enabled "
                                  f"but its SRAM-side controller {side} is not")
            fw = spec.storage.fetch_width
            w = wide.addresses["addr"]
            if c.role == "agg_in":
                strides = (1,) + tuple(fw * s for s in w.strides[1:])
                addr = AffineMap(strides, fw * w.offset)
            else:
                addr = _decode_out_address(spec, c, cp, wide)
        else:
            addr = cp.addresses["addr"]
        out[c.port] = PortProgram(cp.extents, addr, cp.schedule).to_dict()
    return out


def _decode_out_address(spec: MemorySpec, ctrl: Controller, side: ControllerProgram,
                        wide: ControllerProgram) -> AffineMap:
    """Word address map of a PUB output port from its ``out<q>`` (slot) and ``tb<q>``
    (wide address) programs, inverting :func:`_output_pattern`: the levels below the
    ``tb<q>`` domain read inside a wide word (slot strides, signed), the level the
    ``tb<q>`` domain starts with is the split level (address stride ``s``) when its slot
    stride ``s`` is a divisor of ``fetch_width`` below it (1, 2 for fw 4) and the ``tb<q>``
    extent is ``ceil((shift + s * (extent - 1) + 1) / fetch_width)`` with ``shift`` the
    slot offset mod ``fetch_width`` (the first chunk may be unaligned, the last partial;
    stride 2 is tried before the run form, stride 1 after it, as the encoder's order
    makes every decoding unique), else a run level (slot stride +-``fetch_width``) when
    the extents are equal, and the levels of the ``tb<q>`` domain step by
    ``fetch_width`` times the wide strides. Raises :class:`ConfigError` when the
    ``tb<q>`` domain has more levels than the port's."""
    fw = spec.storage.fetch_width
    sw = ctrl.address_generators[0].width
    slot, w = side.addresses["addr"], wide.addresses["addr"]
    e, tb = side.extents, wide.extents
    outer = len(e) - len(tb)
    signed = [to_signed(x % (1 << sw), sw) for x in slot.strides]
    if outer < 0:
        raise ConfigError(f"controller {ctrl.name}: {len(tb)} SRAM-side levels but only "
                          f"{len(e)} port levels")
    strides = signed[:outer]
    shift = slot.offset % fw
    s_j = signed[outer]
    if (1 < s_j < fw and fw % s_j == 0 and e[outer] > 1
            and tb[0] == _split_chunks(e[outer], fw, shift, s_j)):   # strided split form
        strides += [s_j] + [fw * x for x in w.strides[1:]]
    elif tb[0] == e[outer] and s_j != 1:                   # run form (slot stride +-fw)
        strides += [fw * x for x in w.strides]
    elif tb[0] == -(-(shift + e[outer]) // fw) and signed[outer] == 1:   # split form
        strides += [1] + [fw * x for x in w.strides[1:]]
    else:                                                  # one run: all levels inside
        strides = signed
    return AffineMap(tuple(strides), fw * w.offset + slot.offset % fw)


# ---------------------------------------------------------------------------------------
# Physical unified buffer: AGG -> SRAM -> TB vectorisation
# ---------------------------------------------------------------------------------------
@dataclass
class _WideStream:
    port: str
    prog: PortProgram
    cycles: np.ndarray        # word cycles, iteration order
    chunk_addr: np.ndarray    # wide address per chunk (input) / per run (output)
    base: np.ndarray          # per chunk: cycle of its (virtual) last word + 1 (in) /
    #                           per run: cycle of its first read - 2 (out)
    max_phase: int
    starts: np.ndarray        # per chunk / run: index (iteration order) of its first access
    ends: np.ndarray          # per chunk / run: index of its last access + 1
    word: np.ndarray | None = None   # output: word index inside its wide word, per read
    slots: np.ndarray | None = None  # input: (chunks, fw) write index per word, -1 = padding
    pattern: "_OutPattern | None" = None   # output: its transpose-buffer runs


@dataclass(frozen=True)
class _OutPattern:
    """How an output port's word stream is served by the transpose buffer: *runs* of
    consecutive reads (iteration order) that all read one wide word, fetched once per run
    into half ``run mod 2``. Levels ``< outer`` of the port's domain are inside a run;
    ``split`` is the level cut at the aligned ``fetch_width``-word boundaries (address
    stride ``stride``, a divisor of ``fetch_width``: 1, 2 or 4 for fw 4), or None.
    ``run_len`` is the number of reads of a full run (``fetch_width / stride`` reads of the
    split level times the repeats inside it); ``partial`` (0 = none) is ``(shift + stride *
    (e_j - 1) + 1) mod fetch_width``, the words of the last wide word of every pass up to
    and including the last one read (for stride 1: the split level's extent is not a
    multiple of ``fetch_width`` and the last run has ``run_len // fetch_width * partial``
    reads). With ``shift`` > 0 (unaligned split form) every pass of the split level starts
    ``shift`` words into its first wide word: the chunks are the aligned wide words the
    pass touches (``ceil((shift + stride * (e_j - 1) + 1) / fetch_width)``), the first run
    has ``ceil((fetch_width - shift) / stride)`` reads of the split level (fewer if the
    pass is shorter) and is fetched ``shift // stride`` reads early (a virtual full run).
    ``tb_*`` describe the ``tb<q>`` controller (one iteration per run; schedule relative
    to the port's first read), ``slot`` the ``out<q>`` slot generator."""

    split: int | None
    outer: int
    run_len: int
    tb_extents: tuple[int, ...]
    tb_sched_strides: tuple[int, ...]
    tb_addr: AffineMap
    half: AffineMap
    slot: AffineMap
    partial: int = 0
    shift: int = 0
    stride: int = 1


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _split_chunks(e_j: int, fw: int, shift: int = 0, stride: int = 1) -> int:
    """Aligned ``fw``-word wide words one pass of a split level touches: its ``e_j`` reads
    are words ``shift + stride * i`` (``i < e_j``) of the pass's first wide word on, so
    ``ceil((shift + stride * (e_j - 1) + 1) / fw)`` (``ceil((shift + e_j) / fw)`` for
    stride 1)."""
    return _ceil_div(shift + stride * (e_j - 1) + 1, fw)


def _split_ids(extents: tuple[int, ...], j: int, fw: int, shift: int = 0,
               stride: int = 1) -> np.ndarray:
    """Per access (iteration order): the index of its ``fw``-word chunk when level ``j``
    (address stride ``stride``, a divisor of ``fw``) is cut at the aligned wide-word
    boundaries into ``C = ceil((shift + stride * (extents[j] - 1) + 1) / fw)`` chunks
    (every pass of level ``j`` starts ``shift`` words into its first chunk; the first and
    last chunks may be partial) and every level below ``j`` stays inside the chunk:
    ``outer_flat * C + (shift + stride * i_j) // fw``. Input ports use ``j = 0``,
    ``shift = 0``, ``stride = 1``."""
    n = np.arange(int(np.prod(extents, dtype=np.int64)), dtype=np.int64)
    below = int(np.prod(extents[:j], dtype=np.int64))
    ej = extents[j]
    i_j = (n // below) % ej
    return (n // (below * ej)) * _split_chunks(ej, fw, shift, stride) + \
        (shift + stride * i_j) // fw


def _bounds(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first index, last index + 1) of every run of equal consecutive ``ids``."""
    starts = np.flatnonzero(np.diff(ids, prepend=ids[0] - 1))
    ends = np.append(starts[1:], len(ids))
    return starts, ends


def _check_vectorizable(spec: MemorySpec, port: str, p: PortProgram) -> None:
    """Input ports (PUB): the aggregator collects words into aligned ``fetch_width``-word
    chunks, so the innermost address stride must be 1 (rule 'vectorization') and the
    address offset and every outer address stride (the row pitch ``P``) multiples of
    ``fetch_width`` (rule 'pitch'). The innermost extent ``W`` may be any value >= 1:
    when ``W mod fetch_width`` != 0 the last chunk of every row is partial (see the module
    docstring). Raises :class:`ConfigError` naming ``port``, the rule and the fix."""
    fw = spec.storage.fetch_width
    s, o, e0 = p.address.strides, p.address.offset, p.extents[0]
    if s[0] != 1:
        raise ConfigError(
            f"port {port}: rule 'vectorization' broken: innermost address stride is {s[0]}; "
            f"the PUB aggregates {fw} consecutive aligned words; reshape the stream so the "
            "innermost dimension has address stride 1")
    bad = [k for k in range(1, len(s)) if s[k] % fw]
    if o % fw or bad:
        pitch = _ceil_div(e0, fw) * fw
        raise ConfigError(
            f"port {port}: rule 'pitch' broken: address offset {o} / outer strides "
            f"{list(s[1:])} are not all multiples of the fetch width {fw}; the pitch rule "
            f"of the PUB: offset and every outer address stride multiples of {fw}; pad each "
            f"row of {e0} words to a pitch of {pitch} words ({e0} rounded up to a multiple "
            f"of {fw}) and align the offset")


def output_run_length(fetch_width: int, port: str, program: PortProgram | Mapping) -> int:
    """Reads per transpose-buffer run of a physical-unified-buffer output port program
    (dict or :class:`PortProgram`) with ``fetch_width``-word wide words: the SRAM fetches
    one wide word per run of that many consecutive reads (e.g. ``4`` for a plain raster
    read, ``8`` for upsample's repeated reads 0,0,1,1,2,2,..., ``2`` for the 2x
    downsample's stride-2 reads 0,2,4,..., ``4`` for stride 2 with every read twice,
    ``1`` for stride ``fetch_width``: ``fetch_width / s`` reads of the first moving level,
    address stride ``s``, times the repeats inside it). When the strided level of the
    reads has an extent ``W`` that does not end on a wide-word boundary (rows of a padded
    layout, e.g. 31 words of a 32-word pitch), the value is the length of a *full* run and
    the last run of every row is shorter: for stride 1 ``W mod fetch_width`` words, i.e.
    ``run_length // fetch_width * (W mod fetch_width)`` reads (e.g. 3 of a 31-word raster
    row, 6 of its upsampled row). When the address offset is not a multiple of
    ``fetch_width`` (``shift = offset mod fetch_width``, e.g. words 1..31 of every 32-word
    row) and the reads are not inside one wide word, the runs follow the *aligned* wide
    words: the first run of every row is shorter too, at most ``run_length //
    fetch_width * (fetch_width - shift)`` reads for stride 1 (e.g. 3 of the raster row, 6
    of the upsampled row; for stride ``s``: ``ceil((fetch_width - shift) / s)`` reads of
    the strided level), and the last one ends with the row; the value returned is still
    the full run length (e.g. 4 and 8; units: reads, i.e. output cycles with a read
    scheduled). The fetch times this implies (the first wide word of a row ``t_j * (shift
    // s)`` cycles early) are checked by :func:`configure` (rules 'prefetch',
    'unaligned-run', 'dependence'), not here. Raises :class:`ConfigError` (rule
    'vectorization', naming ``port``) when the transpose buffer cannot serve the stream
    (see :func:`_output_pattern` for the rule; e.g. stride 3)."""
    return _output_pattern(fetch_width, port, PortProgram.from_dict(program, port)).run_len


def _output_pattern(fw: int, port: str, p: PortProgram) -> _OutPattern:
    """Transpose-buffer runs of an output port (see :class:`_OutPattern`).

    Rule ('vectorization'): the reads must visit every fetched wide word in one run of
    consecutive reads whose word index inside the wide word is affine in the counters:
    either (split form) the first level ``j`` that moves the address has a stride ``s``
    that is a positive divisor of ``fw`` (1, 2 or 4 for fw 4), the levels inside it repeat
    (stride 0), and the outer strides are multiples of ``fw`` (pitch rule; e.g. upsample's
    0,0,1,1,2,2,...: extents [2, W, H], strides [0, 1, P]; the 2x downsample
    0,2,4,...: extents [W/2, 2, H], strides [2, 0, P]); or (run form) the levels below
    some level ``m`` stay inside one aligned wide word (``offset mod fw + inner
    addresses`` in ``[0, fw)``) and every level from ``m`` on has a stride that is a
    multiple of ``fw`` (this covers stride ``fw`` itself: one read per wide word). In the
    split form the extent ``e_j`` and the offset ``o`` may be any values: with ``shift = o
    mod fw``, the reads of a pass of level ``j`` are words ``shift + s * i_j`` of its
    first aligned wide word on, cut at the aligned wide-word boundaries into ``C =
    ceil((shift + s * (e_j - 1) + 1) / fw)`` chunks of ``fw / s`` reads each (as ``s``
    divides ``fw``, every aligned wide word holds reads at the same words), the first one
    fewer when ``shift`` > 0 (unaligned split) and the last one fewer when the pass ends
    inside a wide word (partial split; words not read are fetched but never used). The
    forms are tried in the order full split (``s`` = 1, ``shift`` = 0 and ``e_j`` a
    multiple of ``fw``), run, partial / unaligned / strided split, so every program the
    run form serves keeps it (and every program accepted before strides 2..fw were
    served keeps its configuration). The slot of a read is ``fw * (run mod 2) + word``,
    affine in the counters modulo ``2 * fw`` (split forms: ``shift + s * i_j + fw * C *
    outer_flat``), which the ``slot_bits``-wide slot generator wraps exactly; the
    ``tb<q>`` controller fetches one wide word every ``fw / s * t_j`` cycles. Raises
    :class:`ConfigError` (rule 'vectorization', naming ``port``) when neither form
    applies: a first moving level whose stride is not a positive divisor of ``fw`` (e.g.
    3, 6, -1) and whose reads leave one aligned wide word, or an outer stride that is not
    a multiple of ``fw``."""
    e, s, o = p.extents, p.address.strides, p.address.offset
    t = p.schedule.strides
    d = len(e)
    flat = [int(np.prod(e[:k], dtype=np.int64)) for k in range(d)]
    moving = [k for k in range(d) if e[k] > 1 and s[k] != 0]
    j = moving[0] if moving else None
    shift = o % fw
    sj = s[j] if j is not None else 0
    outer_ok = j is not None and all(s[k] % fw == 0 for k in range(j + 1, d))
    split_ok = outer_ok and sj >= 1 and fw % sj == 0
    m = d
    while m > 0 and (e[m - 1] == 1 or s[m - 1] % fw == 0):
        m -= 1
    lo = o % fw + sum(min(0, s[k] * (e[k] - 1)) for k in range(m))
    hi = o % fw + sum(max(0, s[k] * (e[k] - 1)) for k in range(m))
    run_ok = lo >= 0 and hi < fw
    partial = 0
    # stride 1, aligned (shift 0): full split, run, partial split; stride 1 unaligned and
    # strides 2..fw: run, then (shifted / strided) split, so the run form keeps every
    # program it serves
    if split_ok and (not run_ok or (sj == 1 and shift == 0 and e[j] % fw == 0)):
        chunks = _split_chunks(e[j], fw, shift, sj)
        partial = (shift + sj * (e[j] - 1) + 1) % fw
        run_len = flat[j] * (fw // sj)
        tb_ext = (chunks,) + tuple(e[j + 1:])
        tb_t = ((fw // sj) * t[j],) + tuple(t[j + 1:])
        tb_s = (1,) + tuple(s[k] // fw for k in range(j + 1, d))
        split, outer = j, j
        runs_per = [chunks * flat[k] // (flat[j] * e[j]) if k > j else 0 for k in range(d)]
    else:
        if not run_ok:
            why = ""
            if outer_ok and not split_ok:
                why = (f"level {j}, the first that moves the address, has address stride "
                       f"{sj}, which is not a positive divisor of {fw} (so not every wide word holds "
                       f"the same number of reads at the same words); ")
            raise ConfigError(
                f"port {port}: rule 'vectorization' broken: {why}the reads of levels "
                f"0..{m - 1} (extents {list(e[:m])}, address strides {list(s[:m])}, offset "
                f"{o}) span words {lo}..{hi} of a {fw}-word wide word, so a wide word "
                "fetched into the transpose buffer is not read in one run of consecutive "
                f"reads; make the first moving level's stride a positive divisor of {fw} "
                f"({', '.join(str(x) for x in range(1, fw + 1) if fw % x == 0)}; inner "
                f"levels may repeat with stride 0) and the outer strides multiples of {fw} "
                f"(pitch rule; the offset may be unaligned), or keep the inner levels "
                f"inside one aligned {fw}-word wide word")
        run_len = flat[m] if m < d else int(np.prod(e, dtype=np.int64))
        if m < d:
            tb_ext, tb_t = tuple(e[m:]), tuple(t[m:])
            tb_s = tuple(s[k] // fw for k in range(m, d))
        else:  # the whole stream reads one wide word: one run
            tb_ext, tb_t, tb_s = (1,), (1,), (0,)
        split, outer, shift = None, m, 0
        runs_per = [flat[k] // run_len if k >= m else 0 for k in range(d)]
    two = 2 * fw
    slot = []
    for k in range(d):
        if k < outer:
            slot.append(s[k] % two)
        elif k == split:
            slot.append(sj % two)
        else:  # outer level: fw * (run-index stride) mod 2*fw
            slot.append((fw * runs_per[k]) % two)
    tb_flat = [int(np.prod(tb_ext[:k], dtype=np.int64)) for k in range(len(tb_ext))]
    return _OutPattern(split, outer, run_len, tb_ext, tb_t, AffineMap(tb_s, o // fw),
                       AffineMap(tuple(f % 2 for f in tb_flat), 0),
                       AffineMap(tuple(slot), o % fw), partial, shift,
                       sj if split is not None else 1)


def _run_ids(p: PortProgram, pat: _OutPattern, fw: int) -> np.ndarray:
    """Per read (iteration order): the index of its transpose-buffer run."""
    if pat.split is not None:
        return _split_ids(p.extents, pat.split, fw, pat.shift, pat.stride)
    return np.arange(p.size, dtype=np.int64) // pat.run_len


def _check_unaligned_runs(port: str, fw: int, pat: _OutPattern, p: PortProgram,
                          base: np.ndarray, gaps: np.ndarray, cyc: np.ndarray,
                          ends: np.ndarray) -> None:
    """Rule 'unaligned-run' of an output port in the unaligned split form (address offset
    ``o`` with ``shift = o mod fw`` >= the split level's address stride ``s``): the first
    wide word of every pass of the split level ``j`` is fetched ``t_j * (shift // s)``
    cycles before the pass's first read (``t_j`` its schedule stride), so that fetch must still come after the fetch of the previous
    run (the ``tb<q>`` controller fires once per iteration at increasing cycles) and must
    not overwrite the transpose-buffer half of run ``k - 2`` before that run's last read
    (fetch + 1 >= last read); the module docstring says when back-to-back passes break
    this. ``base``: per run, the fetch cycle at phase 0 (cycles); ``gaps``: per run ``k >= 2``, the slack of its half reuse
    (cycles). Raises :class:`ConfigError` naming ``port``, the rule and the delay that
    fixes it."""
    order = np.diff(base)
    short_order = int(max(0, 1 - int(order.min()))) if len(order) else 0
    short_half = int(max(0, -int(gaps.min()))) if len(gaps) else 0
    if not short_order and not short_half:
        return
    lead = p.schedule.strides[pat.split] * (pat.shift // pat.stride)
    if short_order >= short_half:
        k = int(np.argmin(order)) + 1
        what = (f"the fetch of run {k} at cycle {int(base[k])} does not come after the fetch "
                f"of run {k - 1} at cycle {int(base[k - 1])}")
    else:
        k = int(np.argmin(gaps)) + 2
        what = (f"the fetch of run {k} at cycle {int(base[k])} overwrites the transpose-buffer "
                f"half that run {k - 2} reads until cycle {int(cyc[ends[k - 2] - 1])}")
    raise ConfigError(
        f"port {port}: rule 'unaligned-run' broken: the reads start {pat.shift} words into a "
        f"{fw}-word wide word, so the first wide word of every pass of level {pat.split} is "
        f"fetched {lead} cycles earlier than an aligned run, and {what}; delay each pass of "
        f"level {pat.split} by at least {max(short_order, short_half)} cycles (larger outer "
        f"schedule stride) or align the address offset to a multiple of {fw}")


def _wide_program(spec: MemorySpec, p: PortProgram, sched_offset: int, slot_bits: int
                  ) -> tuple[ControllerProgram, ControllerProgram]:
    """(port-side controller program, SRAM-side controller program) for a vectorisable
    input word program; the SRAM-side schedule offset is ``sched_offset``. The innermost
    extent ``W`` is cut into ``ceil(W / fw)`` chunks; the slot of word ``i`` of a row is
    ``i + fw * ceil(W / fw) * row`` modulo ``2 * fw`` (padded flat index), so a partial
    last chunk leaves its padding slots unwritten and the next row starts a new chunk."""
    fw = spec.storage.fetch_width
    e0 = _ceil_div(p.extents[0], fw)
    ext_w = (e0,) + p.extents[1:]
    t = p.schedule.strides
    sched_w = AffineMap((fw * t[0],) + t[1:], sched_offset)
    addr_w = AffineMap((1,) + tuple(s // fw for s in p.address.strides[1:]),
                       p.address.offset // fw)
    # flat chunk index parity -> buffer half; padded flat word index mod 2*fw -> buffer slot
    flat_w, flat = [], []
    acc_w = 1
    for e in ext_w:
        flat_w.append(acc_w)
        acc_w *= e
    flat = [1] + [fw * f for f in flat_w[1:]]
    half = AffineMap(tuple(s % 2 for s in flat_w), 0)
    slot = AffineMap(tuple(s % (1 << slot_bits) for s in flat), 0)
    side = ControllerProgram(p.extents, p.schedule, {"addr": slot})
    wide = ControllerProgram(ext_w, sched_w, {"addr": addr_w, "half": half})
    return side, wide


def _out_programs(p: PortProgram, pat: _OutPattern, sched_offset: int
                  ) -> tuple[ControllerProgram, ControllerProgram]:
    """(``out<q>`` program, ``tb<q>`` program) of output port program ``p`` served by the
    transpose-buffer runs ``pat`` (:func:`_output_pattern`); the ``tb<q>`` schedule offset
    (first fetch) is ``sched_offset``."""
    side = ControllerProgram(p.extents, p.schedule, {"addr": pat.slot})
    wide = ControllerProgram(pat.tb_extents, AffineMap(pat.tb_sched_strides, sched_offset),
                             {"addr": pat.tb_addr, "half": pat.half})
    return side, wide


def _vectorize(spec: MemorySpec, progs: dict[str, PortProgram]) -> dict[str, ControllerProgram]:
    fw = spec.storage.fetch_width
    slot_bits = spec.controller("in0").address_generators[0].width
    streams: dict[str, _WideStream] = {}
    for port, p in progs.items():
        cyc = p.cycles()
        if port in spec.inputs:
            _check_vectorizable(spec, port, p)
            starts, ends = _bounds(_split_ids(p.extents, 0, fw))
            addr = p.addresses()[starts] // fw
            # commit one cycle after the chunk's fw-th word; a partial chunk (last of a row
            # of W words, W mod fw != 0) is committed at the cycle its fw-th word would
            # arrive ("virtual" full chunk), which keeps the agg<i> schedule affine
            t0 = p.schedule.strides[0] if p.extents[0] > 1 else 0
            base = cyc[starts] + t0 * (fw - 1) + 1
            slots = np.full((len(starts), fw), -1, dtype=np.int64)
            for k, (a, b) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
                slots[k, :b - a] = np.arange(a, b)
            # aggregator half reuse: chunk k+2 overwrites the half chunk k is read from
            gaps = cyc[starts[2:]] - base[:-2]
            if len(gaps) and gaps.min() < 0:
                k = int(np.argmin(gaps))
                raise ConfigError(
                    f"port {port}: rule 'partial-chunk' broken: chunk {k} (a partial last "
                    f"chunk of {int(ends[k] - starts[k])} of {fw} words, innermost extent "
                    f"{p.extents[0]}) is committed as a full chunk at cycle {int(base[k])}, but "
                    f"chunk {k + 2} starts refilling the same aggregator half at cycle "
                    f"{int(cyc[starts[k + 2]])}; delay the following rows by at least "
                    f"{int(-gaps[k])} cycles (larger outer schedule stride) or write whole "
                    f"{fw}-word rows")
            word, pat = None, None
        else:
            pat = _output_pattern(fw, port, p)
            starts, ends = _bounds(_run_ids(p, pat, fw))
            words = p.addresses()
            addr = words[starts] // fw
            word = words % fw
            slots = None
            base = cyc[starts] - 2
            lead = 0
            if pat.shift >= pat.stride:
                # unaligned split form: the first run of every pass of the split level is
                # fetched as if its words before the offset were read (virtual full run),
                # t_j * (shift // stride) cycles early (the reads of words shift - stride,
                # shift - 2 stride, ... >= 0), which keeps the tb<q> schedule affine
                j = pat.split
                lead = p.schedule.strides[j] * (pat.shift // pat.stride)
                below = int(np.prod(p.extents[:j], dtype=np.int64))
                first = (starts // below) % p.extents[j] == 0
                base = base - lead * first
            if base[0] < 0:
                if lead:
                    raise ConfigError(
                        f"port {port}: rule 'prefetch' broken: first read at cycle "
                        f"{int(cyc[0])}, but the reads start {pat.shift} words into a "
                        f"{fw}-word wide word, so the PUB fetches it {lead} + 2 cycles before "
                        f"the first word; start the output schedule at cycle >= {lead + 2}")
                raise ConfigError(
                    f"port {port}: rule 'prefetch' broken: first read at cycle {int(cyc[0])}, "
                    "but the PUB needs the SRAM fetch 2 cycles before the first word; "
                    "start the output schedule at cycle >= 2")
            # transpose-buffer half reuse: run k's wide word lands in its half (visible
            # from fetch + 2) after run k-2, which used the same half, has been read
            gaps = base[2:] + 1 - cyc[ends[:-2] - 1]
            if lead:
                _check_unaligned_runs(port, fw, pat, p, base, gaps, cyc, ends)
        max_phase = fw - 1 if len(gaps) == 0 else int(min(fw - 1, gaps.min()))
        streams[port] = _WideStream(port, p, cyc, addr, base, max_phase, starts, ends, word,
                                    slots, pat)

    ins = [p for p in spec.inputs if p in streams]
    outs = [p for p in spec.outputs if p in streams]
    order = ins + outs
    sign = {p: (1 if p in spec.inputs else -1) for p in order}

    def times(port: str, phase: int) -> np.ndarray:
        return streams[port].base + sign[port] * phase

    def collisions(assign: dict[str, int]) -> tuple[str, str, int] | None:
        names = list(assign)
        for a, b in itertools.combinations(names, 2):
            common = np.intersect1d(times(a, assign[a]), times(b, assign[b]))
            if len(common):
                return a, b, int(common[0])
        return None

    src_golden = sources(progs, ins) if outs and ins else {}
    first_conflict: tuple[str, str, int] | None = None
    first_dep: str | None = None
    ranges = [range(streams[p].max_phase + 1) for p in order]
    for combo in sorted(itertools.product(*ranges), key=lambda c: (sum(c), c)):
        assign = dict(zip(order, combo, strict=True))
        clash = collisions(assign)
        if clash is not None:
            first_conflict = first_conflict or clash
            continue
        dep = _dependence_error(spec, streams, assign, ins, outs, src_golden, times)
        if dep is not None:
            first_dep = first_dep or dep
            continue
        break
    else:
        if first_dep is not None:
            raise ConfigError(first_dep)
        a, b, cyc = first_conflict  # type: ignore[misc]
        raise ConfigError(
            f"ports {a} and {b}: rule 'conflict' broken: both need the single SRAM port of "
            f"{spec.name} at cycle {cyc} for every choice of SRAM-side phase; change one "
            "schedule so their wide accesses interleave (each port uses the SRAM once per "
            f"{fw} words)")

    last = max(int(times(p, assign[p]).max()) for p in order) if order else 0
    if last >= 1 << spec.schedule_width:
        raise ConfigError(f"memory {spec.name}: rule 'schedule-range' broken: SRAM-side "
                          f"schedule reaches cycle {last}")
    out: dict[str, ControllerProgram] = {}
    for port in order:
        i = port[-1]
        st = streams[port]
        off = int(times(port, assign[port])[0])
        if port in spec.inputs:
            out[f"in{i}"], out[f"agg{i}"] = _wide_program(spec, st.prog, off, slot_bits)
        else:
            out[f"out{i}"], out[f"tb{i}"] = _out_programs(st.prog, st.pattern, off)
    return out


def _dependence_error(spec, streams, assign, ins, outs, src_golden, times) -> str | None:
    """None if every output word fetched through the SRAM equals the unified-buffer
    semantics, else an error message naming the output port, address and cycle."""
    if not outs or not ins:
        return None
    fw = spec.storage.fetch_width
    commits: dict[int, list[tuple[int, str, int]]] = {}
    for p in ins:
        t = times(p, assign[p]).tolist()
        for k, (c, a) in enumerate(zip(t, streams[p].chunk_addr.tolist(), strict=True)):
            commits.setdefault(a, []).append((c, p, k))
    for lst in commits.values():
        lst.sort()
    held_by = {p: streams[p].slots.tolist() for p in ins}   # chunk -> write index per slot
    for q in outs:
        st = streams[q]
        fetch = times(q, assign[q]).tolist()
        gold = src_golden[q]
        word = st.word.tolist()
        runs = zip(fetch, st.chunk_addr.tolist(), st.starts.tolist(), st.ends.tolist(),
                   strict=True)
        for r, a, w0, w1 in runs:
            lst = commits.get(a, [])
            j = bisect.bisect_left(lst, (r, "", -1)) - 1
            for w in range(w0, w1):
                g = gold[w]
                if g is None:
                    continue
                i = word[w]
                got = None
                if j >= 0:
                    src_k = held_by[lst[j][1]][lst[j][2]][i]
                    got = None if src_k < 0 else (lst[j][1], src_k)
                if got != g:
                    cyc = int(st.cycles[w])
                    held = ("nothing" if j < 0 else "a padding word of a partial chunk"
                            if got is None else f"write #{got[1]} of {got[0]}")
                    return (f"port {q}: rule 'dependence' broken: the read of address "
                            f"{fw * a + i} at cycle {cyc} must return write #{g[1]} of {g[0]}, "
                            f"but the PUB fetches its {fw}-word chunk at cycle {r} when the "
                            f"SRAM holds {held}; "
                            "increase the distance between the write and the read schedule "
                            f"(the aggregator and transpose buffer add about {2 * fw} cycles)")
    return None
