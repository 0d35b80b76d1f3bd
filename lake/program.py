"""Port programs: the only contract between the compiler and a Lake memory.

One port program per external port (a dict, JSON-friendly)::

    {"dimensionality": d,
     "extents": [e_0, ..., e_{d-1}],                 # e_0 innermost, each >= 1
     "address":  {"strides": [s_0, ...], "offset": a},   # in data words
     "schedule": {"strides": [t_0, ...], "offset": c}}   # in unstalled cycles since reset/flush

An input port writes its k-th value (iteration order) to address ``A(i)`` at cycle ``S(i)``;
an output port reads address ``A(i)`` at cycle ``S(i)`` and the value appears on the port
``read_latency`` cycles later (unified-buffer semantics, Liu et al., ACM TACO 2023, Sec. 3:
writes before reads in the same cycle).

:func:`check_program` applies the rules every preset shares; preset-specific rules
(vectorisation, single-port conflicts) live in :mod:`lake.config`. Every violation raises
:class:`cgra.errors.ConfigError` naming the port and the rule.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from cgra.errors import ConfigError
from lake.affine import affine_range, affine_values, deltas_from_strides


@dataclass(frozen=True)
class AffineMap:
    """``offset + sum_k strides[k] * i_k`` (integers; units of the map's domain)."""

    strides: tuple[int, ...]
    offset: int


@dataclass(frozen=True)
class PortProgram:
    """Iteration domain, access map and schedule of one port (see module docstring)."""

    extents: tuple[int, ...]
    address: AffineMap
    schedule: AffineMap

    @property
    def dimensionality(self) -> int:
        return len(self.extents)

    @property
    def size(self) -> int:
        """Number of accesses."""
        n = 1
        for e in self.extents:
            n *= e
        return n

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | "PortProgram", port: str = "?") -> "PortProgram":
        """Parse the dict form. Raises :class:`ConfigError` (naming ``port``) if malformed."""
        if isinstance(d, PortProgram):
            return d
        try:
            dim = int(d["dimensionality"])
            extents = tuple(int(e) for e in d["extents"])
            a_str = tuple(int(s) for s in d["address"]["strides"])
            a_off = int(d["address"]["offset"])
            s_str = tuple(int(s) for s in d["schedule"]["strides"])
            s_off = int(d["schedule"]["offset"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(
                f"port {port}: malformed port program ({exc!r}); expected keys dimensionality, "
                "extents, address{strides, offset}, schedule{strides, offset}") from None
        if not (dim == len(extents) == len(a_str) == len(s_str)):
            raise ConfigError(
                f"port {port}: rule 'dimensionality' broken: dimensionality={dim} but "
                f"{len(extents)} extents, {len(a_str)} address strides, {len(s_str)} schedule "
                "strides; give one extent and one stride of each map per dimension")
        return cls(extents, AffineMap(a_str, a_off), AffineMap(s_str, s_off))

    def to_dict(self) -> dict[str, Any]:
        return {"dimensionality": self.dimensionality, "extents": list(self.extents),
                "address": {"strides": list(self.address.strides),
                            "offset": self.address.offset},
                "schedule": {"strides": list(self.schedule.strides),
                             "offset": self.schedule.offset}}

    def cycles(self) -> np.ndarray:
        """Schedule over the domain in iteration order (int64, shape (size,))."""
        return affine_values(self.extents, self.schedule.strides, self.schedule.offset)

    def addresses(self) -> np.ndarray:
        """Access map over the domain in iteration order (int64, shape (size,))."""
        return affine_values(self.extents, self.address.strides, self.address.offset)

    def schedule_deltas(self) -> list[int]:
        return deltas_from_strides(self.extents, self.schedule.strides)

    def address_deltas(self) -> list[int]:
        return deltas_from_strides(self.extents, self.address.strides)

    def last_cycle(self) -> int:
        return affine_range(self.extents, self.schedule.strides, self.schedule.offset)[1]


def program(extents, address_strides, address_offset, schedule_strides,
            schedule_offset) -> PortProgram:
    """Shorthand constructor."""
    return PortProgram(tuple(extents), AffineMap(tuple(address_strides), address_offset),
                       AffineMap(tuple(schedule_strides), schedule_offset))


def check_program(port: str, prog: PortProgram, *, max_dims: int, extent_width: int,
                  schedule_width: int, words: int) -> None:
    """Rules shared by every preset; raises :class:`ConfigError` naming port and rule.

    * ``dimensionality``: 1 <= d <= ``max_dims``;
    * ``extent``: 1 <= e_k <= 2**``extent_width`` (the register holds e_k - 1);
    * ``schedule-increasing``: every level that can increment (e_k >= 2) has delta >= 1;
    * ``schedule-range``: offset >= 0 and the last cycle < 2**``schedule_width``;
    * ``address-range``: every address in [0, ``words``).
    """
    if not 1 <= prog.dimensionality <= max_dims:
        raise ConfigError(f"port {port}: rule 'dimensionality' broken: {prog.dimensionality} "
                          f"dimensions, this memory supports 1..{max_dims}")
    for k, e in enumerate(prog.extents):
        if e < 1:
            raise ConfigError(f"port {port}: rule 'extent' broken: extents[{k}] = {e}; every "
                              "extent must be >= 1 (use extent 1 for an unused dimension)")
        if e > 1 << extent_width:
            raise ConfigError(f"port {port}: rule 'extent' broken: extents[{k}] = {e} does not "
                              f"fit the {extent_width}-bit extent register (max "
                              f"{1 << extent_width}); split the dimension")
    for k, (e, d) in enumerate(zip(prog.extents, prog.schedule_deltas(), strict=True)):
        if e >= 2 and d < 1:
            raise ConfigError(
                f"port {port}: rule 'schedule-increasing' broken: level {k} delta is {d} "
                f"(schedule strides {list(prog.schedule.strides)}, extents "
                f"{list(prog.extents)}); the schedule must be strictly increasing in "
                f"iteration order, so stride[{k}] must exceed the span of the inner levels")
    if prog.schedule.offset < 0:
        raise ConfigError(f"port {port}: rule 'schedule-range' broken: schedule offset "
                          f"{prog.schedule.offset} < 0; schedules count cycles from reset")
    last = prog.last_cycle()
    if last >= 1 << schedule_width:
        raise ConfigError(f"port {port}: rule 'schedule-range' broken: last cycle {last} does "
                          f"not fit the {schedule_width}-bit cycle counter")
    lo, hi = affine_range(prog.extents, prog.address.strides, prog.address.offset)
    if lo < 0 or hi >= words:
        raise ConfigError(f"port {port}: rule 'address-range' broken: addresses span "
                          f"[{lo}, {hi}] but the buffer holds words [0, {words - 1}]; change "
                          "the address offset/strides or chain more tiles")


def delay_line(delay: int, length: int, capacity: int, start: int = 0,
               align: int = 1) -> tuple[PortProgram, PortProgram]:
    """Port programs of a delay line over a raster stream: the value written at cycle
    ``start + t`` (t < ``length``) is read at cycle ``start + t + delay`` (appearing on the
    output one read latency later). See :func:`delay_taps` for the buffer shape.
    """
    w, (r,) = delay_taps([delay], length, capacity, start, align)
    return w, r


def delay_taps(delays: Sequence[int], length: int, capacity: int, start: int = 0,
               align: int = 1) -> tuple[PortProgram, list[PortProgram]]:
    """One write program and one read program per delay (taps of one raster stream, e.g.
    the rows of a line buffer): the value written at cycle ``start + t`` (t < ``length``)
    is read by tap ``j`` at cycle ``start + t + delays[j]``.

    The buffer is circular with ``B`` words, ``max(delays) < B <= capacity`` (writes happen
    before reads in a cycle, so ``B`` must exceed the delay) and ``B`` a multiple of
    ``align`` (the fetch width of a wide memory): extents ``[B, ceil(length / B)]``,
    address strides ``[1, 0]``. ``B`` divides ``length`` when such a ``B`` exists;
    otherwise the domain is rounded up and the last ``B*ceil(length/B) - length`` accesses
    carry don't-care data. A stream no longer than the capacity uses a 1-D domain.
    With read latency 1, data that must appear on the output port ``D`` cycles after it
    was written needs read delay ``D - 1``: output delays up to the capacity fit one tile.
    Raises :class:`ConfigError` if a delay is negative or ``>= capacity`` (chain tiles:
    pass the chained capacity).
    """
    if not delays or min(delays) < 0 or length < 1:
        raise ConfigError(f"delay line: delays {list(delays)} must be >= 0 (at least one) and "
                          f"length {length} >= 1")
    delay = max(delays)
    if delay >= capacity:
        raise ConfigError(f"delay line: delay {delay} needs more than {capacity} words "
                          "(writes happen before reads in a cycle); chain more tiles")

    def progs(ext, astr):
        sstr = [1, ext[0]][:len(ext)]
        w = program(ext, astr, 0, sstr, start)
        return w, [program(ext, astr, 0, sstr, start + d) for d in delays]

    if length <= capacity and length % align == 0:
        return progs([length], [1])
    candidates = [b for b in range(delay + 1, capacity + 1) if b % align == 0]
    if not candidates:
        raise ConfigError(f"delay line: no buffer size in ({delay}, {capacity}] is a multiple "
                          f"of the fetch width {align}")
    exact = [b for b in candidates if length % b == 0]
    b = exact[0] if exact else candidates[0]
    rows = -(-length // b)
    return progs([b, rows], [1, 0])
