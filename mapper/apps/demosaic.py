"""demosaic: the luma of an RGGB Bayer mosaic at half resolution (input convention
``bayer_rggb``: one input, the mosaic of a colour image), UInt16; per 2x2 quad ``(x, y)``:

- ``R = m(2x, 2y)``, ``G = (m(2x+1, 2y) + m(2x, 2y+1)) >> 1``, ``B = m(2x+1, 2y+1)``;
- ``demosaic(x, y) = (77 R + 150 G + 29 B) >> 8`` (BT.601 weights, 8-bit fixed point; sums
  wrap modulo 2**16).

Output domain: ``floor(W/2) x floor(H/2)``. Multi-rate (stride-2 reads), unroll 1.
"""
from __future__ import annotations

from mapper.apps.rgb_luma import WEIGHTS
from mapper.frontend.dsl import Func, Input, Pipeline, UInt16, Var


def build(width: int = 64, height: int = 64, unroll: int = 1) -> Pipeline:
    x, y = Var("x"), Var("y")
    m = Input("mosaic", UInt16, (width, height))
    red = m[2 * x, 2 * y]
    green = (m[2 * x + 1, 2 * y] + m[2 * x, 2 * y + 1]) >> 1
    blue = m[2 * x + 1, 2 * y + 1]
    out = Func("demosaic")
    out[x, y] = (red * WEIGHTS[0] + green * WEIGHTS[1] + blue * WEIGHTS[2]) >> 8
    return Pipeline(out, "demosaic", unroll, image="bayer_rggb")
