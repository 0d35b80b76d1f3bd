"""Cycle-accurate affine schedules and unified-buffer port extraction for stencil pipelines.

Source: the unified-buffer paper (Liu et al., "Unified Buffer: Compiling Image Processing and
Machine Learning Applications to Push-Memory Accelerators", TACO 2023), sections 4-5: every
stage is scheduled at one (vector of ``U``) output(s) per cycle in raster order, with the same
affine schedule shape as the input stream and the earliest start that respects dependences.

Time model (``U`` = unroll, ``W`` = input width, ``P = ceil(W / U)`` cycles per row):

- the input streams pixel ``(x, y)`` on lane ``x mod U`` at cycle ``y * P + x // U``;
- stage ``s`` runs iteration ``(xo, y)`` (its lanes ``l`` compute pixels ``x = U*xo + l``) at
  cycle ``start_s + y * P + xo`` and its outputs are written ``latency_s`` cycles later
  (``latency_s`` = the compute latency given by the caller, default 0);
- stage ``c`` reading producer ``p`` at merged window offset ``(dx, dy)`` (lane offset included,
  see :func:`mapper.ir.unroll_stage`) needs pixel ``(U*xo + dx, y + dy)`` of producer lane
  ``dx mod U``, written at ``start_p + latency_p + (y+dy) * P + xo + dx // U``; so
  ``start_c = max`` over its reads of ``start_p + latency_p + dy * P + dx // U`` and every
  read port has the constant *distance* ``start_c - start_p - latency_p - dy * P - dx // U``
  (cycles between the write and the read of the same element, >= 0).

These starts and distances are computed by the general polyhedral scheduler
(:func:`mapper.mapping.polyhedral.schedule` on :func:`mapper.mapping.polyhedral.from_pipeline`, ISL maxima
over each read's dependence), of which this raster schedule is the special case with every
stage at coefficients ``[1, P]``; the closed forms above are what ISL returns (checked for
every shipped app and unroll in tests/mapper/test_polyhedral.py).

Each buffer (one per producer and producer lane) has one write port and one read port per
live kernel input element; a port is (iteration domain, access map, schedule):
``extents = [n_xo, n_y]`` (innermost first), access map ``(x, y) = offset + strides * (i0, i1)``
with ``strides = [[U, 0], [0, 1]]``, schedule ``offset + 1 * i0 + P * i1`` cycles.
Iterations run over ``xo in [x0 // U, ceil(x1 / U))`` for the valid domain ``[x0, x1)``;
with ``U > 1`` edge lanes may compute pixels outside the valid domain, which no valid output
reads.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from cgra.errors import MappingError
from mapper import ir
from mapper.mapping import polyhedral


@dataclass(frozen=True)
class StageSchedule:
    """Schedule of one stage (or pipeline input): iteration ``(xo, y)`` runs at
    ``start + y * strides[1] + xo * strides[0]``, ``strides = coef`` or ``(1, row_pitch)``
    (the single-rate raster schedule); outputs are written ``latency`` cycles later."""

    name: str
    start: int
    latency: int
    box: ir.Box
    xo_range: tuple[int, int]
    row_pitch: int
    coef: tuple[int, int] | None = None

    @property
    def strides(self) -> tuple[int, int]:
        """Schedule coefficients ``(cycles per x step, cycles per row)``."""
        return self.coef if self.coef is not None else (1, self.row_pitch)

    @property
    def extents(self) -> list[int]:
        """Iteration domain ``[n_xo, n_y]`` (innermost first)."""
        return [self.xo_range[1] - self.xo_range[0], self.box.height]

    def first_cycle(self) -> int:
        """Cycle of the first iteration."""
        c0, c1 = self.strides
        return self.start + self.box.y0 * c1 + self.xo_range[0] * c0

    def first_write(self) -> int:
        """Cycle the first output is written."""
        return self.first_cycle() + self.latency

    def last_write(self) -> int:
        """Cycle the last output is written."""
        c0, c1 = self.strides
        return (self.first_write() + (self.box.height - 1) * c1
                + (self.xo_range[1] - self.xo_range[0] - 1) * c0)

    def program(self, extra: int = 0) -> dict[str, Any]:
        """Write schedule as ``{extents, schedule: {strides, offset}}`` (+ ``extra`` cycles)."""
        return {"dimensionality": 2, "extents": self.extents,
                "schedule": {"strides": list(self.strides), "offset": self.first_write() + extra}}


@dataclass(frozen=True)
class BufferPort:
    """One unified-buffer port.  ``kind`` is ``write`` (the producer) or ``read`` (a consumer's
    kernel input element ``input[index]``); ``distance`` = cycles from write to read (0 for the
    write port; for an ``addressed`` read, whose distance varies (a repeated access such as
    upsampling), the largest).  ``access`` maps counters to buffer pixel coordinates (see
    module docstring); ``poly`` is the port in :mod:`mapper.mapping.polyhedral` form (ISL domain,
    access map, schedule)."""

    buffer: str
    lane: int
    kind: str
    stage: str
    input: str | None
    index: int | None
    extents: tuple[int, int]
    access: dict[str, Any]
    schedule: dict[str, Any]
    distance: int
    addressed: bool = False
    poly: Any = field(default=None, compare=False, repr=False)


@dataclass
class PipelineSchedule:
    """Schedules of all stages and the ports of all buffers (key ``(producer, lane)``)."""

    pipeline: ir.Pipeline
    unroll: int
    row_pitch: int
    stages: dict[str, StageSchedule]
    kernels: dict[str, ir.Stage]
    buffers: dict[tuple[str, int], list[BufferPort]] = field(default_factory=dict)

    poly: Any = None

    def distances(self, producer: str, lane: int = 0) -> list[int]:
        """Sorted distinct read distances of buffer ``(producer, lane)`` (delay-line reads;
        addressed reads are left out)."""
        return sorted({p.distance for p in self.buffers.get((producer, lane), [])
                       if p.kind == "read" and not p.addressed})

    def completion_cycle(self) -> int:
        """Cycle after the last output of the output stages is written."""
        return max(self.stages[o].last_write() for o in self.pipeline.outputs) + 1


def schedule_pipeline(pipeline: ir.Pipeline, latencies: dict[str, int] | None = None,
                      read_latency: int = 1) -> PipelineSchedule:
    """Earliest-start affine schedules and buffer ports (see the module docstring).

    ``latencies`` gives compute latency in cycles per stage (default 0).  A multi-rate
    pipeline (:attr:`mapper.ir.Pipeline.multi_rate`) gets the rate-matched coefficients of
    :func:`mapper.mapping.polyhedral.schedule`; a read whose distance is not one constant becomes an
    ``addressed`` port and is scheduled at least ``read_latency + 1`` cycles after its word is
    written (the MEM's read latency plus one, so a word is never read in the cycle it is
    written).  Raises :class:`MappingError` for an invalid pipeline.
    """
    latencies = dict(latencies or {})
    dom = pipeline.domains()
    u = pipeline.unroll
    width = next(iter(pipeline.inputs.values())).shape[0]
    pitch = -(-width // u)
    for name in latencies:
        if name not in dom:
            raise MappingError(f"schedule {pipeline.name}: latency given for unknown stage '{name}'")
    stages: dict[str, StageSchedule] = {}
    kernels: dict[str, ir.Stage] = {}
    reads: dict[str, list[tuple[str, int, str, int, int]]] = {}
    for s in pipeline.stages:
        us = ir.unroll_stage(s, u)
        kernels[s.name] = us
        need: list[tuple[str, int, str, int, int]] = []
        for iname, idx in us.kernel.live_inputs():
            dx, dy = us.windows[iname].offsets[idx]
            need.append((iname, idx, us.windows[iname].producer, dx, dy))
        if not need:
            raise MappingError(f"schedule {pipeline.name}: stage {s.name} reads no live input "
                               f"(a constant stage cannot be scheduled as a stream)")
        lat = int(latencies.get(s.name, 0))
        if lat < 0:
            raise MappingError(f"schedule {pipeline.name}: stage {s.name} latency {lat} < 0")
        reads[s.name] = need
    prog, coef = polyhedral.from_pipeline(pipeline, latencies, kernels)
    poly = polyhedral.schedule(prog, coef)
    varying = {(p.stage, p.index) for b in poly.buffers.values() for p in b.reads
               if p.distance[0] != p.distance[1]}
    if varying:
        prog = polyhedral.with_read_delays(prog, {k: read_latency + 1 for k in varying})
        poly = polyhedral.schedule(prog, coef)
    ports: dict[tuple[str, int], polyhedral.Port] = {
        (p.stage, p.index): p for b in poly.buffers.values() for p in b.reads}
    multi = coef is None
    for name in pipeline.inputs:
        stages[name] = StageSchedule(name, 0, 0, dom[name], (0, pitch), pitch,
                                     poly.coefficients[name] if multi else None)
    for s in pipeline.stages:
        b = dom[s.name]
        stages[s.name] = StageSchedule(s.name, poly.offsets[s.name],
                                       int(latencies.get(s.name, 0)), b,
                                       (b.x0 // u, -(-b.x1 // u)), pitch,
                                       poly.coefficients[s.name] if multi else None)
    sched = PipelineSchedule(pipeline, u, pitch, stages, kernels, poly=poly)
    # write ports
    for name, st in stages.items():
        for lane in range(u):
            sched.buffers[(name, lane)] = [BufferPort(
                name, lane, "write", name, None, None, tuple(st.extents),
                {"strides": [[u, 0], [0, 1]],
                 "offset": [u * st.xo_range[0] + lane, st.box.y0]},
                {"strides": list(st.strides), "offset": st.first_write()}, 0)]
    for s in pipeline.stages:
        c = stages[s.name]
        rate = {w.producer: w.rate for w in s.windows.values()}
        for ri, (iname, idx, prod, dx, dy) in enumerate(reads[s.name]):
            pp = ports[(s.name, ri)]
            (ax, bx), (ay, by) = rate[prod]
            port = BufferPort(prod, dx % u, "read", s.name, iname, idx, tuple(c.extents),
                              {"strides": [[u * ax, 0], [0, ay]] if (bx, by) == (1, 1)
                               else [[Fraction(ax, bx), 0], [0, Fraction(ay, by)]],
                               "offset": [u * c.xo_range[0] + dx, c.box.y0 + dy]
                               if (bx, by) == (1, 1) else   # offsets inside the floor
                               [(ax * c.xo_range[0] + dx) // bx, (ay * c.box.y0 + dy) // by]},
                              {"strides": list(c.strides), "offset": c.first_cycle()},
                              pp.distance[1], (s.name, ri) in varying, pp)
            sched.buffers[(prod, dx % u)].append(port)
    return sched
