"""downsample: 2x2 average with stride 2 (the unified-buffer paper's ``downsample``), UInt16:

- ``down(x, y) = (in(2x, 2y) + in(2x+1, 2y) + in(2x, 2y+1) + in(2x+1, 2y+1)) >> 2`` (the sum
  wraps modulo 2**16, then a logical shift right by 2).

Output domain: ``floor(W/2) x floor(H/2)``; one output every 2nd cycle of every 2nd input row
(rate-matched schedule, :mod:`mapper.mapping.polyhedral`).
"""
from __future__ import annotations

from mapper.frontend.dsl import Func, Input, Pipeline, UInt16, Var


def build(width: int = 64, height: int = 64, unroll: int = 1) -> Pipeline:
    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (width, height))
    down = Func("down")
    down[x, y] = (inp[2 * x, 2 * y] + inp[2 * x + 1, 2 * y] + inp[2 * x, 2 * y + 1]
                  + inp[2 * x + 1, 2 * y + 1]) >> 2
    return Pipeline(down, "downsample", unroll)
