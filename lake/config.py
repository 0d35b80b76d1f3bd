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
    :func:`lake.program.check_program`; for the PUB also 'vectorization', 'prefetch',
    'conflict' and 'dependence').
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
    ``tb<q>`` domain starts with is the split level (stride 1) when its extent is
    ``fetch_width`` times the ``tb<q>`` extent and its slot stride is 1, and the levels of
    the ``tb<q>`` domain step by ``fetch_width`` times the wide strides."""
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
    if tb[0] == e[outer]:                                  # run form
        strides += [fw * x for x in w.strides]
    elif tb[0] * fw == e[outer] and signed[outer] == 1:    # split form
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
    base: np.ndarray          # per chunk: cycle of its last word + 1 (in) / first word - 2 (out)
    max_phase: int
    word: np.ndarray | None = None   # output: word index inside its wide word, per read
    pattern: "_OutPattern | None" = None   # output: its transpose-buffer runs


@dataclass(frozen=True)
class _OutPattern:
    """How an output port's word stream is served by the transpose buffer: *runs* of
    ``run_len`` consecutive reads (iteration order) that all read one wide word, fetched
    once per run into half ``run mod 2``. Levels ``< outer`` of the port's domain are inside
    a run; ``split`` is the level cut into ``fetch_width``-word chunks (address stride 1),
    or None. ``tb_*`` describe the ``tb<q>`` controller (one iteration per run; schedule
    relative to the port's first read), ``slot`` the ``out<q>`` slot generator."""

    split: int | None
    outer: int
    run_len: int
    tb_extents: tuple[int, ...]
    tb_sched_strides: tuple[int, ...]
    tb_addr: AffineMap
    half: AffineMap
    slot: AffineMap


def _check_vectorizable(spec: MemorySpec, port: str, p: PortProgram) -> None:
    """Input ports: the aggregator collects ``fetch_width`` consecutive aligned words."""
    fw = spec.storage.fetch_width
    rule = f"port {port}: rule 'vectorization' broken:"
    hint = (f"the PUB fetches {fw} consecutive aligned words; reshape the stream so the "
            f"innermost dimension has address stride 1 and an extent that is a multiple of {fw}")
    if p.address.strides[0] != 1:
        raise ConfigError(f"{rule} innermost address stride is {p.address.strides[0]}; {hint}")
    if p.extents[0] % fw:
        raise ConfigError(f"{rule} innermost extent {p.extents[0]} is not a multiple of {fw}; "
                          f"{hint}")
    if p.address.offset % fw or any(s % fw for s in p.address.strides[1:]):
        raise ConfigError(f"{rule} address offset {p.address.offset} / outer strides "
                          f"{list(p.address.strides[1:])} are not multiples of {fw}; {hint}")


def output_run_length(fetch_width: int, port: str, program: PortProgram | Mapping) -> int:
    """Reads per transpose-buffer run of a physical-unified-buffer output port program
    (dict or :class:`PortProgram`) with ``fetch_width``-word wide words: the SRAM fetches
    one wide word per run of that many consecutive reads (e.g. ``4`` for a plain raster
    read, ``8`` for upsample's repeated reads 0,0,1,1,2,2,...). Raises
    :class:`ConfigError` (rule 'vectorization', naming ``port``) when the transpose buffer
    cannot serve the stream (see :func:`_output_pattern` for the rule)."""
    return _output_pattern(fetch_width, port, PortProgram.from_dict(program, port)).run_len


def _output_pattern(fw: int, port: str, p: PortProgram) -> _OutPattern:
    """Transpose-buffer runs of an output port (see :class:`_OutPattern`).

    Rule ('vectorization'): the reads must visit every fetched wide word in one run of
    consecutive reads whose word index inside the wide word is affine in the counters:
    either (split form) the first level that moves the address has stride 1 and an extent
    that is a multiple of ``fw``, the levels inside it repeat (stride 0), and the address
    offset and the outer strides are multiples of ``fw`` (e.g. upsample's 0,0,1,1,2,2,...:
    extents [2, W, H], strides [0, 1, W]); or (run form) the levels below some level ``m``
    stay inside one aligned wide word (``offset mod fw + inner addresses`` in ``[0, fw)``)
    and every level from ``m`` on has a stride that is a multiple of ``fw``. The slot of a
    read is ``fw * (run mod 2) + word``, affine in the counters modulo ``2 * fw``, which the
    ``slot_bits``-wide slot generator wraps exactly. Raises :class:`ConfigError`."""
    e, s, o = p.extents, p.address.strides, p.address.offset
    t = p.schedule.strides
    d = len(e)
    flat = [int(np.prod(e[:k], dtype=np.int64)) for k in range(d)]
    moving = [k for k in range(d) if e[k] > 1 and s[k] != 0]
    j = moving[0] if moving else None
    if (j is not None and s[j] == 1 and e[j] % fw == 0 and o % fw == 0
            and all(s[k] % fw == 0 for k in range(j + 1, d))):
        run_len = flat[j] * fw
        tb_ext = (e[j] // fw,) + tuple(e[j + 1:])
        tb_t = (fw * t[j],) + tuple(t[j + 1:])
        tb_s = (1,) + tuple(s[k] // fw for k in range(j + 1, d))
        split, outer = j, j
    else:
        m = d
        while m > 0 and (e[m - 1] == 1 or s[m - 1] % fw == 0):
            m -= 1
        lo = o % fw + sum(min(0, s[k] * (e[k] - 1)) for k in range(m))
        hi = o % fw + sum(max(0, s[k] * (e[k] - 1)) for k in range(m))
        if lo < 0 or hi >= fw:
            raise ConfigError(
                f"port {port}: rule 'vectorization' broken: the reads of levels 0..{m - 1} "
                f"(extents {list(e[:m])}, address strides {list(s[:m])}, offset {o}) span "
                f"words {lo}..{hi} of a {fw}-word wide word, so a wide word fetched into the "
                "transpose buffer is not read in one run of consecutive reads; make the "
                f"first moving level stride 1 with an extent that is a multiple of {fw} "
                f"(inner levels may repeat with stride 0) and the offset and outer strides "
                f"multiples of {fw}, or keep the inner levels inside one aligned {fw}-word "
                f"wide word")
        run_len = flat[m] if m < d else int(np.prod(e, dtype=np.int64))
        if m < d:
            tb_ext, tb_t = tuple(e[m:]), tuple(t[m:])
            tb_s = tuple(s[k] // fw for k in range(m, d))
        else:  # the whole stream reads one wide word: one run
            tb_ext, tb_t, tb_s = (1,), (1,), (0,)
        split, outer = None, m
    two = 2 * fw
    slot = []
    for k in range(d):
        if k < outer:
            slot.append(s[k] % two)
        elif k == split:
            slot.append(1)
        else:  # outer level: fw * (run-index stride) mod 2*fw
            slot.append((fw * (flat[k] // run_len)) % two)
    tb_flat = [int(np.prod(tb_ext[:k], dtype=np.int64)) for k in range(len(tb_ext))]
    return _OutPattern(split, outer, run_len, tb_ext, tb_t, AffineMap(tb_s, o // fw),
                       AffineMap(tuple(f % 2 for f in tb_flat), 0),
                       AffineMap(tuple(slot), o % fw))


def _wide_program(spec: MemorySpec, p: PortProgram, sched_offset: int, slot_bits: int
                  ) -> tuple[ControllerProgram, ControllerProgram]:
    """(port-side controller program, SRAM-side controller program) for a vectorisable
    input word program; the SRAM-side schedule offset is ``sched_offset``."""
    fw = spec.storage.fetch_width
    e0 = p.extents[0] // fw
    ext_w = (e0,) + p.extents[1:]
    t = p.schedule.strides
    sched_w = AffineMap((fw * t[0],) + t[1:], sched_offset)
    addr_w = AffineMap((1,) + tuple(s // fw for s in p.address.strides[1:]),
                       p.address.offset // fw)
    # flat chunk index parity -> buffer half; flat word index mod 2*fw -> buffer slot
    flat_w, flat = [], []
    acc_w = acc = 1
    for e in ext_w:
        flat_w.append(acc_w)
        acc_w *= e
    for e in p.extents:
        flat.append(acc)
        acc *= e
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
            chunks = cyc.reshape(-1, fw)
            addr = p.addresses().reshape(-1, fw)[:, 0] // fw
            base = chunks[:, -1] + 1
            # aggregator half reuse: chunk k+2 overwrites the half chunk k is read from
            gaps = chunks[2:, 0] - base[:-2]
            word, pat = None, None
        else:
            pat = _output_pattern(fw, port, p)
            run_len = pat.run_len
            words = p.addresses()
            runs = cyc.reshape(-1, run_len)
            addr = words[::run_len] // fw
            word = words % fw
            base = runs[:, 0] - 2
            if base[0] < 0:
                raise ConfigError(
                    f"port {port}: rule 'prefetch' broken: first read at cycle {int(cyc[0])}, "
                    "but the PUB needs the SRAM fetch 2 cycles before the first word; "
                    "start the output schedule at cycle >= 2")
            # transpose-buffer half reuse: run k's wide word lands in its half (visible
            # from fetch + 2) after run k-2, which used the same half, has been read
            gaps = base[2:] + 1 - runs[:-2, -1]
        max_phase = fw - 1 if len(gaps) == 0 else int(min(fw - 1, gaps.min()))
        streams[port] = _WideStream(port, p, cyc, addr, base, max_phase, word, pat)

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
    for q in outs:
        st = streams[q]
        fetch = times(q, assign[q]).tolist()
        gold = src_golden[q]
        n = st.pattern.run_len
        word = st.word.tolist()
        for k, (r, a) in enumerate(zip(fetch, st.chunk_addr.tolist(), strict=True)):
            lst = commits.get(a, [])
            j = bisect.bisect_left(lst, (r, "", -1)) - 1
            for w in range(n * k, n * (k + 1)):
                g = gold[w]
                if g is None:
                    continue
                i = word[w]
                got = None if j < 0 else (lst[j][1], fw * lst[j][2] + i)
                if got != g:
                    cyc = int(st.cycles[w])
                    return (f"port {q}: rule 'dependence' broken: the read of address "
                            f"{fw * a + i} at cycle {cyc} must return write #{g[1]} of {g[0]}, "
                            f"but the PUB fetches its {fw}-word chunk at cycle {r} when the "
                            f"SRAM holds {'nothing' if got is None else f'write #{got[1]} of {got[0]}'}; "
                            "increase the distance between the write and the read schedule "
                            f"(the aggregator and transpose buffer add about {2 * fw} cycles)")
    return None
