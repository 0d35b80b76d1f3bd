"""rgb_luma: luma of an RGB image given as three colour planes (input convention ``rgb``:
inputs ``r``, ``g``, ``b`` stream one plane each), UInt16:

- ``rgb_luma(x, y) = (77 * r(x, y) + 150 * g(x, y) + 29 * b(x, y)) >> 8`` (ITU-R BT.601
  weights in 8-bit fixed point; the sum wraps modulo 2**16, then a logical shift).

Output domain: ``W x H``.
"""
from __future__ import annotations

from mapper.frontend.dsl import Func, Input, Pipeline, UInt16, Var

WEIGHTS = (77, 150, 29)


def build(width: int = 64, height: int = 64, unroll: int = 1) -> Pipeline:
    x, y = Var("x"), Var("y")
    r, g, b = (Input(n, UInt16, (width, height)) for n in ("r", "g", "b"))
    out = Func("rgb_luma")
    out[x, y] = (r[x, y] * WEIGHTS[0] + g[x, y] * WEIGHTS[1] + b[x, y] * WEIGHTS[2]) >> 8
    return Pipeline(out, "rgb_luma", unroll, image="rgb")
