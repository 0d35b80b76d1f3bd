"""brighten_blur (the unified-buffer paper's running example), UInt16:

- ``brighten(x, y) = in(x, y) * 2``
- ``blur(x, y) = (brighten(x, y) + brighten(x+1, y) + brighten(x, y+1) + brighten(x+1, y+1)) / 4``
  (``/ 4`` is a logical shift right by 2; sums wrap modulo 2**16).

Output domain: ``(W-1) x (H-1)``.
"""
from __future__ import annotations

from mapper.frontend.dsl import Func, Input, Pipeline, UInt16, Var


def build(width: int = 64, height: int = 64, unroll: int = 1) -> Pipeline:
    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (width, height))
    brighten = Func("brighten")
    brighten[x, y] = inp[x, y] * 2
    blur = Func("blur")
    blur[x, y] = (brighten[x, y] + brighten[x + 1, y] + brighten[x, y + 1]
                  + brighten[x + 1, y + 1]) / 4
    return Pipeline(blur, "brighten_blur", unroll)
