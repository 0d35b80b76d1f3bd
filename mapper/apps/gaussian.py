"""gaussian 3x3, the integer kernel of ``mapper/data/coreir/gaussian_compute.json``:

- ``blur_unnormalized(x, y) = sum_{i,j in 0..2} w[j][i] * in(x+i, y+j)`` with
  ``w = [[24, 30, 24], [30, 37, 30], [24, 30, 24]]`` (sum 253; UInt16 wrap-around), written as
  a pure definition 0 plus one RDom update, as in the Halide source;
- ``blur(x, y) = blur_unnormalized(x, y) >> 8`` (logical shift, the JSON's ``lshr 8``).

Output domain: ``(W-2) x (H-2)``.
"""
from __future__ import annotations

from mapper.frontend.dsl import (Func, Input, Pipeline, RDom, RepeatEdge, Table, UInt16, Var,
                                 cast)

WEIGHTS = [[24, 30, 24], [30, 37, 30], [24, 30, 24]]
SHIFT = 8


def blur(inp: Input | RepeatEdge, x: Var, y: Var, centre: int = 0) -> Func:
    """The 3x3 gaussian of ``inp`` as two stages: ``blur_unnormalized`` (weighted sum over
    an RDom, UInt16) and ``blur`` (``>> SHIFT``); output ``(x, y)`` reads ``inp`` at
    ``(x-c..x-c+2, y-c..y-c+2)``, ``c = centre`` (0: the window starts at the pixel; 1: it is
    centred on it). Also the first stages of ``unsharp``."""
    w = Table("weights", WEIGHTS)
    r = RDom([(0, 3), (0, 3)], "r")
    blur_un = Func("blur_unnormalized")
    blur_un[x, y] = cast(UInt16, 0)
    blur_un[x, y] += w[r.x, r.y] * inp[x + r.x - centre, y + r.y - centre]
    out = Func("blur")
    out[x, y] = blur_un[x, y] >> SHIFT
    return out


def build(width: int = 64, height: int = 64, unroll: int = 1) -> Pipeline:
    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (width, height))
    return Pipeline(blur(inp, x, y), "gaussian", unroll)
