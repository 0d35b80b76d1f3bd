"""Affine math of the unified-buffer controllers.

A port's iteration domain is a box of nested counters ``i_0 .. i_{d-1}`` (``i_0`` innermost,
``0 <= i_k < e_k``). An affine function of the counters is ``f(i) = offset + sum_k s_k i_k``.

The hardware computes ``f`` in *recurrence form* (strength-reduced, as in the unified-buffer
paper, Liu et al., "Unified Buffer", ACM TACO 2023, Sec. 5): a running value that, when
counter level ``k`` increments (all lower levels wrap to 0), adds the level delta

    delta_0 = s_0,    delta_k = s_k - sum_{j<k} (e_j - 1) s_j.

The *multiplier form* ``offset + sum_k s_k i_k`` is kept for checking. Both are here for
Python; :mod:`lake.smt` proves them equal symbolically.
"""
from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np


def deltas_from_strides(extents: Sequence[int], strides: Sequence[int]) -> list[int]:
    """Per-level recurrence deltas (same length as ``extents``; unbounded integers)."""
    out: list[int] = []
    wrap = 0  # sum_{j<k} (e_j - 1) s_j
    for e, s in zip(extents, strides, strict=True):
        out.append(s - wrap)
        wrap += (e - 1) * s
    return out


def strides_from_deltas(extents: Sequence[int], deltas: Sequence[int]) -> list[int]:
    """Inverse of :func:`deltas_from_strides`."""
    out: list[int] = []
    wrap = 0
    for e, d in zip(extents, deltas, strict=True):
        s = d + wrap
        out.append(s)
        wrap += (e - 1) * s
    return out


def domain_size(extents: Sequence[int]) -> int:
    """Number of points of the iteration domain."""
    n = 1
    for e in extents:
        n *= e
    return n


def counters(extents: Sequence[int]) -> np.ndarray:
    """All iteration points in iteration order, shape ``(N, d)`` (int64); column k = i_k."""
    n = domain_size(extents)
    flat = np.arange(n, dtype=np.int64)
    cols = []
    div = 1
    for e in extents:
        cols.append((flat // div) % e)
        div *= e
    return np.stack(cols, axis=1) if cols else np.zeros((n, 0), dtype=np.int64)


def affine_values(extents: Sequence[int], strides: Sequence[int], offset: int) -> np.ndarray:
    """Multiplier form over the whole domain in iteration order, shape ``(N,)`` int64."""
    pts = counters(extents)
    return offset + pts @ np.asarray(list(strides), dtype=np.int64)


def incrementing_level(counter: Sequence[int], extents: Sequence[int]) -> int | None:
    """Level that increments after ``counter`` (lowest level not at its maximum), or None
    when ``counter`` is the last point. Unit extents are always at their maximum."""
    for k, (i, e) in enumerate(zip(counter, extents, strict=True)):
        if i != e - 1:
            return k
    return None


def recurrence_values(extents: Sequence[int], deltas: Sequence[int], offset: int,
                      modulus: int | None = None) -> Iterator[int]:
    """Recurrence form, one value per iteration point in iteration order.

    ``modulus`` (a power of two, e.g. ``2**width``) models a register of that width.
    """
    value = offset % modulus if modulus else offset
    cnt = [0] * len(extents)
    while True:
        yield value
        level = incrementing_level(cnt, extents)
        if level is None:
            return
        for j in range(level):
            cnt[j] = 0
        cnt[level] += 1
        value += deltas[level]
        if modulus:
            value %= modulus


def affine_range(extents: Sequence[int], strides: Sequence[int], offset: int) -> tuple[int, int]:
    """(min, max) of the affine function over the domain (exact for a box)."""
    lo = hi = offset
    for e, s in zip(extents, strides, strict=True):
        span = s * (e - 1)
        lo += min(0, span)
        hi += max(0, span)
    return lo, hi


def to_signed(value: int, width: int) -> int:
    """Two's-complement reading of ``value`` as a ``width``-bit word."""
    value %= 1 << width
    return value - (1 << width) if value >> (width - 1) else value
