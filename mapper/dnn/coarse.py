"""Coarse-grained (double-buffered) scheduling of DNN layers: a tile pipeline over a loop nest.

Source: the unified-buffer paper (Liu et al., "Unified Buffer: Compiling Image Processing and
Machine Learning Applications to Push-Memory Accelerators", ACM TACO 2023), section 4.4
(coarse-grained pipelining with double buffers, loop perfection and flattening; Fig. 7 is the
three-stage example, Fig. 13 the ablation). Fine-grained (per-pixel) schedules of stencil
pipelines are :mod:`mapper.mapping.schedule`; this module schedules whole tiles.

Model (all times in cycles):

- A layer is a nest of *tile loops* ``iterations = (e_0, ..., e_{D-1})``, outermost first.
  Tile iteration ``i`` is the lexicographic (flattened) index over all ``D`` loops,
  ``0 <= i < prod(e)``.
- The nest's body is a list of :class:`Stage` in program order (load weights, load input
  tile, compute, drain, ...). A stage at ``level`` ``l`` sits in the body of loop ``l``: a
  stage at a level above the innermost is *code between loops* (an imperfect nest) and runs
  once per iteration of loops ``0..l``, before the inner loop (if listed before every deeper
  stage) or after it.
- A stage runs for ``latency = work + depth`` cycles per activation: it reads its inputs
  during ``[start, start + work)`` and writes its outputs during
  ``[start + depth, start + depth + work)``. A plain stage has ``work = latency``,
  ``depth = 0``; a stage with its own pipelined inner loop has ``work = extent * ii`` and
  ``depth`` = the pipeline fill/drain.
- Stages communicate through buffers (``reads`` / ``writes``; if no stage names a buffer,
  consecutive stages are chained by buffers ``"a->b"``). A consumer starts only after its
  producer has written the whole tile (coarse grain).

Schedules:

- *Sequential* (``double_buffer=False``): the program runs in order, one stage at a time;
  every buffer has one copy; the innermost tile loop's ``ii`` is the sum of its stages'
  latencies.
- *Coarse-grained pipelined* (``double_buffer=True``): the innermost loop (and every perfectly
  nested loop around it) becomes one software pipeline (a modulo schedule): stage ``s`` of
  tile ``j`` starts at ``offset_s + j * ii``, with ``ii = max_s ceil(busy_s / S_s)``
  (``busy_s`` = cycles before the stage can start its next activation, ``S_s`` = tiles per
  activation: 1 for innermost stages) and ASAP offsets that respect each buffer's
  dependence. Stages of consecutive tiles overlap; each buffer gets the copies its lifetime
  needs, ``ceil(lifetime / (S_g * ii))`` (modulo variable expansion; 2 for a producer and its
  next-stage consumer: double buffering). Loops that are not merged into the pipeline run
  sequentially around it and their buffers keep one copy.
- *Loop perfection and flattening*: code between loops at level ``l`` is moved into the
  inner loop under a guard (active on the first or last inner iteration), which makes loops
  ``l..D-1`` perfect so they flatten into the one pipeline; the pipeline then no longer
  drains at each outer iteration, and the guarded stage's work is double-buffered behind
  ``S_s`` tiles. A stage's own short inner loop is flattened with the tile loop so its
  fill/drain (``depth``) overlaps the next tile: its ``busy`` drops from ``work + depth`` to
  ``work``. ``flatten=None`` applies each only where it lowers the total cycles.

Occupancy = busy cycles of the compute stage (``work`` per activation, fill/drain excluded)
/ total cycles; :func:`ablation` gives it with and without double buffering and flattening
(the paper's Fig. 13).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Sequence

from cgra.errors import MappingError


@dataclass(frozen=True)
class Stage:
    """One stage of a tile iteration.

    Give either ``latency`` (a plain stage, cycles per activation, >= 1) or an inner loop
    ``extent`` x ``ii`` (cycles it issues, >= 1) plus ``depth`` (pipeline fill/drain cycles,
    >= 0). ``level`` is the tile loop whose body holds the stage (0 = outermost; default the
    innermost). ``reads`` / ``writes`` name buffers; ``compute`` marks the stage whose busy
    cycles define occupancy.
    """

    name: str
    latency: int | None = None
    extent: int = 1
    ii: int = 1
    depth: int = 0
    level: int | None = None
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    compute: bool = False

    @property
    def work(self) -> int:
        """Cycles the stage issues per activation (reads its inputs), excluding fill/drain."""
        return self.latency if self.latency is not None else self.extent * self.ii

    @property
    def total_latency(self) -> int:
        """Cycles from an activation's start to its last output written: ``work + depth``."""
        return self.work + self.depth


@dataclass(frozen=True)
class Buffer:
    """A buffer between one producer stage and its consumer stages; a copy holds the data of
    one iteration of loops ``0..grain`` (the coarsest level of its producer and consumers)."""

    name: str
    producer: str
    consumers: tuple[str, ...]
    grain: int


@dataclass(frozen=True)
class CoarseSchedule:
    """A coarse-grained schedule.

    ``starts[stage][i]`` is the start cycle of ``stage`` in tile iteration ``i`` (flattened
    index), present only for the iterations where the stage is active. ``ii`` is the
    initiation interval of the innermost tile loop (cycles), ``total_cycles`` the cycle the
    last activation ends, ``copies[buffer]`` the copies of each buffer, ``busy[stage]`` the
    cycles before the stage can start again, ``pipelined_loops`` the tile loops merged into
    the pipeline, ``flattened_loops`` those of them merged by loop perfection (they had code
    between loops), ``flattened_stages`` the stages whose inner loop was flattened with the
    tile loop. ``compute_busy`` is the compute stage's busy cycles over the whole layer.
    """

    starts: dict[str, dict[int, int]]
    ii: int
    total_cycles: int
    copies: dict[str, int]
    busy: dict[str, int]
    double_buffer: bool
    pipelined_loops: tuple[int, ...]
    flattened_loops: tuple[int, ...]
    flattened_stages: tuple[str, ...]
    compute: str
    compute_busy: int
    buffers: dict[str, Buffer] = field(repr=False)

    @property
    def occupancy(self) -> Fraction:
        """Busy cycles of the compute stage / total cycles (exact)."""
        return Fraction(self.compute_busy, self.total_cycles)


# --------------------------------------------------------------------------- validation

def _levels(stages: Sequence[Stage], depth: int) -> list[int]:
    return [depth - 1 if s.level is None else s.level for s in stages]


def _validate(stages: Sequence[Stage], loops: tuple[int, ...]) -> list[int]:
    if not stages:
        raise MappingError("coarse schedule: zero stages; give at least one Stage "
                           "(e.g. Stage('compute', latency=4))")
    if not loops:
        raise MappingError("coarse schedule: no tile loops; give iterations >= 1 "
                           "(an int or a tuple of loop extents)")
    for d, e in enumerate(loops):
        if not isinstance(e, int) or e < 1:
            raise MappingError(f"coarse schedule: tile loop {d} has extent {e!r}; "
                               "extents must be integers >= 1")
    names = [s.name for s in stages]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise MappingError(f"coarse schedule: stage name {dup!r} is used twice; "
                           "give every stage a unique name")
    for s in stages:
        if s.latency is not None:
            if s.latency < 1:
                raise MappingError(f"coarse schedule: stage {s.name!r} has latency "
                                   f"{s.latency}; latencies must be >= 1 cycle")
            if s.extent != 1 or s.ii != 1:
                raise MappingError(f"coarse schedule: stage {s.name!r} gives both a latency "
                                   "and an inner loop; give latency or extent/ii, not both")
        elif s.extent < 1 or s.ii < 1:
            raise MappingError(f"coarse schedule: stage {s.name!r} has inner loop extent "
                               f"{s.extent} and ii {s.ii}; both must be >= 1")
        if s.depth < 0:
            raise MappingError(f"coarse schedule: stage {s.name!r} has depth {s.depth}; "
                               "the fill/drain depth must be >= 0 cycles")
        if s.level is not None and not 0 <= s.level < len(loops):
            raise MappingError(f"coarse schedule: stage {s.name!r} is at level {s.level} "
                               f"but the nest has {len(loops)} tile loops; "
                               f"use a level in 0..{len(loops) - 1}")
    levels = _levels(stages, len(loops))
    if max(levels) != len(loops) - 1:
        raise MappingError(f"coarse schedule: tile loop {len(loops) - 1} (innermost) holds "
                           "no stage; drop the loop or put a stage at its level")
    for k, lv in enumerate(levels):
        if any(x > lv for x in levels[:k]) and any(x > lv for x in levels[k + 1:]):
            raise MappingError(f"coarse schedule: stage {stages[k].name!r} (level {lv}) "
                               f"sits between two inner loops of loop {lv}; one inner loop "
                               "per level is supported, merge the loops or the stages")
    return levels


def buffers_of(stages: Sequence[Stage], iterations: int | Sequence[int] = 1) -> dict[str, Buffer]:
    """The buffers between ``stages``: each has one producer and >= 1 consumers listed after
    it (names only read or only written are external memories and are not buffers). If no
    stage names a buffer, consecutive stages are chained by buffers ``"<a>-><b>"``.

    Raises :class:`MappingError` on two producers or a consumer listed before its producer.
    """
    loops = _loops(iterations)
    levels = _levels(stages, len(loops))
    index = {s.name: k for k, s in enumerate(stages)}
    if not any(s.reads or s.writes for s in stages):
        return {f"{a.name}->{b.name}": Buffer(f"{a.name}->{b.name}", a.name, (b.name,),
                                              min(levels[k], levels[k + 1]))
                for k, (a, b) in enumerate(itertools.pairwise(stages))}
    producer: dict[str, str] = {}
    for s in stages:
        for b in s.writes:
            if b in producer:
                raise MappingError(f"coarse schedule: buffer {b!r} is written by stages "
                                   f"{producer[b]!r} and {s.name!r}; give each its own buffer")
            if b in s.reads:
                raise MappingError(f"coarse schedule: stage {s.name!r} reads and writes "
                                   f"buffer {b!r}; split it into an input and an output buffer")
            producer[b] = s.name
    out: dict[str, Buffer] = {}
    for b, p in producer.items():
        cons = tuple(s.name for s in stages if b in s.reads)
        if not cons:
            continue
        for c in cons:
            if index[c] < index[p]:
                raise MappingError(f"coarse schedule: stage {c!r} reads buffer {b!r} before "
                                   f"its producer {p!r} runs; list {p!r} first")
        grain = min(levels[index[n]] for n in (p, *cons))
        out[b] = Buffer(b, p, cons, grain)
    return out


def _loops(iterations: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(iterations, int):
        return (iterations,)
    return tuple(iterations)


# --------------------------------------------------------------------------- scheduling

@dataclass
class _Plan:
    split: int                       # loops split..D-1 form the pipeline (D: none)
    flat_stages: frozenset[str]


class _Nest:
    """Index arithmetic of the nest and the activation pattern of each stage."""

    def __init__(self, stages: Sequence[Stage], loops: tuple[int, ...], levels: list[int]):
        self.stages = list(stages)
        self.loops = loops
        self.levels = levels
        self.after = [any(x > lv for x in levels[:k]) for k, lv in enumerate(levels)]

    def inner(self, lv: int) -> int:
        """Tiles per iteration of loop ``lv``: the product of the extents of the loops
        deeper than ``lv`` (down to the innermost)."""
        return math.prod(self.loops[lv + 1:])

    def active(self, k: int, idx: tuple[int, ...]) -> bool:
        lv = self.levels[k]
        deeper = zip(idx[lv + 1:], self.loops[lv + 1:], strict=True)
        if self.after[k]:
            return all(i == e - 1 for i, e in deeper)
        return all(i == 0 for i, _ in deeper)

    def rel_first(self, k: int) -> int:
        """First activation of stage ``k`` within one iteration of its own loop (tiles)."""
        return self.inner(self.levels[k]) - 1 if self.after[k] else 0

    def rel_last(self, k: int, grain: int) -> int:
        """Last activation of stage ``k`` within one iteration of loop ``grain`` (tiles)."""
        per = self.inner(self.levels[k])
        return self.inner(grain) - per + self.rel_first(k)


def _busy(s: Stage, flat: bool) -> int:
    return s.work if flat else s.total_latency


def _pipeline(nest: _Nest, plan: _Plan, bufs: dict[str, Buffer]
              ) -> tuple[int, dict[str, int], int, dict[str, int]]:
    """Modulo schedule of the stages at levels >= split over the flattened loops
    split..D-1: ``(ii, offsets, span, copies)``."""
    seg = [k for k, lv in enumerate(nest.levels) if lv >= plan.split]
    stages = nest.stages
    ii = max(-(-_busy(stages[k], stages[k].name in plan.flat_stages)
               // nest.inner(nest.levels[k])) for k in seg)
    index = {s.name: k for k, s in enumerate(stages)}
    offset: dict[str, int] = {}
    for k in seg:
        o = 0
        for b in bufs.values():
            if stages[k].name in b.consumers and nest.levels[index[b.producer]] >= plan.split:
                p = index[b.producer]
                pair = min(nest.levels[p], nest.levels[k])  # the copy's part c reads
                o = max(o, offset[b.producer] + stages[p].total_latency
                        + (nest.rel_last(p, pair) - nest.rel_first(k)) * ii)
        offset[stages[k].name] = o
    # producers as late as their consumers allow (ALAP): shorter buffer lifetimes, fewer copies
    for k in reversed(seg):
        late = [offset[c] - stages[k].total_latency
                - (nest.rel_last(k, min(nest.levels[k], nest.levels[index[c]]))
                   - nest.rel_first(index[c])) * ii
                for b in bufs.values() if b.producer == stages[k].name for c in b.consumers
                if nest.levels[index[c]] >= plan.split]
        if late:
            offset[stages[k].name] = max(offset[stages[k].name], min(late))
    m = math.prod(nest.loops[plan.split:])
    span = 0
    for k in seg:
        per = nest.inner(nest.levels[k])
        last = m - per + nest.rel_first(k)
        span = max(span, offset[stages[k].name] + last * ii + stages[k].total_latency)
    copies: dict[str, int] = {}
    for b in bufs.values():
        ends = [index[b.producer], *(index[c] for c in b.consumers)]
        if min(nest.levels[k] for k in ends) < plan.split:
            copies[b.name] = 1
            continue
        p = index[b.producer]
        first_write = offset[b.producer] + nest.rel_first(p) * ii + stages[p].depth
        last_read = max(offset[c] + nest.rel_last(index[c], b.grain) * ii + stages[index[c]].work
                        for c in b.consumers)
        copies[b.name] = max(1, -(-(last_read - first_write) // (nest.inner(b.grain) * ii)))
    return ii, offset, span, copies


def _run(stages: Sequence[Stage], loops: tuple[int, ...], levels: list[int],
         bufs: dict[str, Buffer], plan: _Plan, double_buffer: bool, compute: str
         ) -> CoarseSchedule:
    nest = _Nest(stages, loops, levels)
    d = len(loops)
    seg = [k for k, lv in enumerate(levels) if lv >= plan.split]
    if seg:
        ii, offset, span, copies = _pipeline(nest, plan, bufs)
    else:
        ii = sum(s.total_latency for s, lv in zip(stages, levels, strict=True) if lv == d - 1)
        offset, span, copies = {}, 0, {b: 1 for b in bufs}
    starts: dict[str, dict[int, int]] = {s.name: {} for s in stages}
    inner_tiles = math.prod(loops[plan.split:])
    ranges = [range(e) for e in loops]
    t = 0
    for outer in itertools.product(*ranges[:plan.split]):
        base = sum(i * math.prod(loops[lv + 1:]) for lv, i in enumerate(outer))
        first_seg = seg[0] if seg else len(stages)
        for k, s in enumerate(stages):
            if k == first_seg:
                for j, inner in enumerate(itertools.product(*ranges[plan.split:])):
                    for q in seg:
                        if nest.active(q, outer + inner):
                            starts[stages[q].name][base + j] = t + offset[stages[q].name] + j * ii
                t += span
            if levels[k] >= plan.split:
                continue
            last = tuple(e - 1 for e in loops[plan.split:])
            if nest.active(k, outer + (last if nest.after[k] else (0,) * len(last))):
                tile = base + (inner_tiles - 1 if nest.after[k] else 0)
                starts[s.name][tile] = t
                t += s.total_latency
    by_name = {s.name: s for s in stages}
    total = max(c + by_name[n].total_latency for n, st in starts.items() for c in st.values())
    busy = {s.name: _busy(s, s.name in plan.flat_stages) for s in stages}
    pipelined = tuple(range(plan.split, d)) if seg else ()
    flattened = tuple(lv for lv in pipelined if lv < d - 1 and lv in levels)
    return CoarseSchedule(
        starts=starts, ii=ii, total_cycles=total, copies=copies, busy=busy,
        double_buffer=double_buffer, pipelined_loops=pipelined, flattened_loops=flattened,
        flattened_stages=tuple(s.name for s in stages if s.name in plan.flat_stages),
        compute=compute,
        compute_busy=len(starts[compute]) * by_name[compute].work, buffers=bufs)


def schedule_coarse(stages: Sequence[Stage], iterations: int | Sequence[int],
                    double_buffer: bool = True, flatten: bool | None = None) -> CoarseSchedule:
    """Schedule a layer's tile pipeline (unified-buffer paper, TACO 2023, section 4.4).

    ``stages``: the tile body in program order (see :class:`Stage`). ``iterations``: the
    number of tiles, or the tile loop extents outermost first. ``double_buffer``: pipeline
    the tile loop with multi-copy buffers (else run sequentially, one copy per buffer).
    ``flatten``: ``None`` applies loop perfection + flattening and stage-loop flattening only
    where they lower the total cycles, ``True`` applies all of them, ``False`` none (perfectly
    nested tile loops are always merged: they need no guard). Without double buffering the
    stages never overlap, so flattening changes nothing.

    Returns a :class:`CoarseSchedule` (start cycles, ``ii``, total cycles, copies per buffer,
    occupancy). For a perfect nest of ``N`` tiles: sequential ``ii = sum(latency)``, total
    ``N * ii``; double-buffered ``ii = max(busy)``, total ``(N - 1) * ii + span`` (``span`` =
    one tile's makespan). Raises :class:`MappingError` on zero stages, a latency < 1, a
    negative depth, an extent < 1, a malformed nest or malformed buffers.
    """
    loops = _loops(iterations)
    levels = _validate(stages, loops)
    bufs = buffers_of(stages, loops)
    marked = [s.name for s in stages if s.compute]
    if len(marked) > 1:
        raise MappingError(f"coarse schedule: stages {marked} are all marked compute; "
                           "mark one (occupancy is measured on it)")
    d = len(loops)
    if marked:
        compute = marked[0]
    else:
        inner = [s for s, lv in zip(stages, levels, strict=True) if lv == d - 1]
        compute = max(inner, key=lambda s: s.work).name
    if not double_buffer:
        return _run(stages, loops, levels, bufs, _Plan(d, frozenset()), False, compute)
    # candidate pipeline starts: merging loop l into the pipeline needs perfection iff a
    # stage sits at level l - 1 (code between loops l - 1 and l)
    cands = sorted({0} | {lv + 1 for lv in levels if lv < d - 1}, reverse=True)
    innermost = [s for s, lv in zip(stages, levels, strict=True) if lv == d - 1 and s.depth > 0]
    plans: list[_Plan] = []
    if flatten is False:
        plans = [_Plan(cands[0], frozenset())]
    elif flatten is True:
        plans = [_Plan(0, frozenset(s.name for s in innermost))]
    else:
        for split in cands:
            plans.append(_Plan(split, frozenset()))
            nest = _Nest(stages, loops, levels)
            best = max(-(-_busy(s, s in innermost) // nest.inner(lv))
                       for s, lv in zip(stages, levels, strict=True) if lv >= split)
            need = frozenset(s.name for s in innermost if s.total_latency > best)
            if need:
                plans.append(_Plan(split, need))
    best_sched: CoarseSchedule | None = None
    for plan in plans:  # least flattening first: ties keep the simpler schedule
        sched = _run(stages, loops, levels, bufs, plan, True, compute)
        if best_sched is None or sched.total_cycles < best_sched.total_cycles:
            best_sched = sched
    assert best_sched is not None
    return best_sched


def ablation(stages: Sequence[Stage], iterations: int | Sequence[int]
             ) -> dict[tuple[bool, bool], CoarseSchedule]:
    """Occupancy ablation (the paper's Fig. 13): the schedule for every
    ``(double_buffer, flatten)`` in ``{False, True}^2``; compare ``.occupancy`` and
    ``.total_cycles``."""
    return {(db, fl): schedule_coarse(stages, iterations, double_buffer=db, flatten=fl)
            for db in (False, True) for fl in (False, True)}
