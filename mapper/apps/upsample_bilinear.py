"""upsample_bilinear: x2 upsampling by bilinear interpolation at half-pixel phase, UInt16
(the interpolating upsample of image pyramids; Halide's ``(x + 1) / 2`` index form):

- ``up(x, y) = (in(x/2, y/2) + in((x+1)/2, y/2) + in(x/2, (y+1)/2) + in((x+1)/2, (y+1)/2)) >> 2``
  (``/`` floors: an even output pixel copies its input pixel, an odd one averages its two
  or four neighbours, rounding down; sums wrap modulo 2**16 like Halide's UInt16).

Output domain: ``(2W - 1) x (2H - 1)`` (the last pixel of each row / column would read
past the input).  Each output row reads input rows ``y/2`` and ``(y+1)/2``, so its buffer
is an addressed circular buffer of 2 input rows (:func:`mapper.mapping.memory.circular_rows`),
read four times: 4 dual-port MEMs or 2 PUB tiles (two read ports each).  The output row
takes 2W cycles for its 2W - 1 pixels: in the idle cycle the ``(x+1)/2`` read programs run
one iteration early (x = -1), so they read each word twice in a row (0,0,1,1,...), the
transpose buffer's run form.  Multi-rate: unroll 1.
"""
from __future__ import annotations

from mapper.frontend.dsl import Func, Input, Pipeline, UInt16, Var


def build(width: int = 64, height: int = 64, unroll: int = 1) -> Pipeline:
    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (width, height))
    up = Func("up")
    up[x, y] = (inp[x / 2, y / 2] + inp[(x + 1) / 2, y / 2] + inp[x / 2, (y + 1) / 2]
                + inp[(x + 1) / 2, (y + 1) / 2]) >> 2
    return Pipeline(up, "upsample_bilinear", unroll)
