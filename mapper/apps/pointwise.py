"""pointwise: ``out(x, y) = in(x, y) * 2 + 1`` (UInt16, wrap-around); 1 stage, 2 ops."""
from __future__ import annotations

from mapper.frontend.dsl import Func, Input, Pipeline, UInt16, Var


def build(width: int = 64, height: int = 64, unroll: int = 1) -> Pipeline:
    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (width, height))
    out = Func("pointwise")
    out[x, y] = inp[x, y] * 2 + 1
    return Pipeline(out, "pointwise", unroll)
