"""laplacian_pyramid: a three-level Laplacian pyramid, built and collapsed with its detail
levels amplified (local contrast enhancement; the unified-buffer paper's Laplacian pyramid
application class), Int16 levels on a UInt16 image:

- ``g0 = Int16(in)``; ``blur_k(x, y) = (sum_{i,j in 0..2} w[j][i] * g_k(x+i, y+j)) >> 4``
  with ``w = [[1, 2, 1], [2, 4, 2], [1, 2, 1]]`` (arithmetic shift);
- ``g1(x, y) = blur0(2x, 2y)``, ``g2(x, y) = blur1(2x, 2y)`` (blur + downsample);
- ``l1(x, y) = g1(x, y) - g2(x/2, y/2)``, ``l0(x, y) = g0(x, y) - g1(x/2, y/2)`` (upsample +
  difference; ``/`` floors);
- ``r1(x, y) = g2(x/2, y/2) + 2 * l1(x, y)`` and
  ``laplacian_pyramid(x, y) = UInt16(clamp(r1(x/2, y/2) + 2 * l0(x, y), 0, 255))`` (collapse,
  each detail level times 2).

Sums wrap modulo 2**16 as Int16.  Output domain on a W x H image (W, H >= 12):
``2 * (floor((floor((W - 2) / 2) - 2 - 1) / 2) + 1) * 2``-ish: 60 x 60 for 64 x 64 (the
intersection of the levels' domains; :meth:`mapper.ir.Pipeline.domains`).  Multi-rate:
stages at full, half and quarter rate (:mod:`mapper.mapping.polyhedral`), unroll 1.
"""
from __future__ import annotations

from mapper.frontend.dsl import Func, Input, Int16, Pipeline, UInt16, Var, cast, clamp

WEIGHTS = [[1, 2, 1], [2, 4, 2], [1, 2, 1]]
SHIFT = 4
GAIN = 2


def _blur(name: str, g, x: Var, y: Var) -> Func:
    f = Func(name)
    terms = [g[x + i, y + j] * WEIGHTS[j][i] if WEIGHTS[j][i] != 1 else g[x + i, y + j]
             for j in range(3) for i in range(3)]
    acc = terms[0]
    for t in terms[1:]:
        acc = acc + t
    f[x, y] = acc >> SHIFT
    return f


def build(width: int = 64, height: int = 64, unroll: int = 1) -> Pipeline:
    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (width, height))
    g0 = Func("g0")
    g0[x, y] = cast(Int16, inp[x, y])
    blur0 = _blur("blur0", g0, x, y)
    g1 = Func("g1")
    g1[x, y] = blur0[2 * x, 2 * y]
    blur1 = _blur("blur1", g1, x, y)
    g2 = Func("g2")
    g2[x, y] = blur1[2 * x, 2 * y]
    l1 = Func("l1")
    l1[x, y] = g1[x, y] - g2[x / 2, y / 2]
    r1 = Func("r1")
    r1[x, y] = g2[x / 2, y / 2] + l1[x, y] * GAIN
    l0 = Func("l0")
    l0[x, y] = g0[x, y] - g1[x / 2, y / 2]
    out = Func("laplacian_pyramid")
    out[x, y] = cast(UInt16, clamp(r1[x / 2, y / 2] + l0[x, y] * GAIN, 0, 255))
    return Pipeline(out, "laplacian_pyramid", unroll)
