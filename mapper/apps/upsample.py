"""upsample: x2 by repeating pixels (the unified-buffer paper's ``upsample``), UInt16:

- ``up(x, y) = in(x / 2, y / 2)`` (Halide's floor division: every input pixel becomes a 2x2
  block).

Output domain: ``2W x 2H``.  The read distance varies (0..2W+1 cycles), so the buffer is an
addressed circular buffer of one input row on one MEM tile (:func:`mapper.mapping.memory.
addressed_tiles`); the output runs one pixel per cycle and the input streams every 2nd cycle
of every 2nd output row.
"""
from __future__ import annotations

from mapper.frontend.dsl import Func, Input, Pipeline, UInt16, Var


def build(width: int = 64, height: int = 64, unroll: int = 1) -> Pipeline:
    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (width, height))
    up = Func("up")
    up[x, y] = inp[x / 2, y / 2]
    return Pipeline(up, "upsample", unroll)
