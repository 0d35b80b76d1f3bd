"""unsharp mask: gaussian blur, then sharpen by the difference (integer version).

Modelled on the AHA Halide-to-CGRA ``unsharp`` (blur, then ``sharpen = gray + amount *
(gray - blur)``, clamped); the exact integer formulas here:

- ``blur_unnormalized(x, y) = sum_{i,j in 0..2} w[j][i] * in(x+i, y+j)``, ``w`` the gaussian
  weights ``[[24, 30, 24], [30, 37, 30], [24, 30, 24]]`` (UInt16);
- ``blur(x, y) = blur_unnormalized(x, y) >> 8`` (UInt16);
- ``sharpen(x, y) = c + ((c - b) * 3) / 2`` with ``c = Int16(in(x+1, y+1))``,
  ``b = Int16(blur(x, y))`` (Int16; ``/ 2`` is floor division = arithmetic shift);
- ``unsharp(x, y) = UInt16(clamp(sharpen(x, y), 0, 255))`` (signed clamp).

Output domain: ``(W-2) x (H-2)``.
"""
from __future__ import annotations

from mapper.apps.gaussian import blur as gaussian_blur
from mapper.frontend.dsl import Func, Input, Int16, Pipeline, UInt16, Var, cast, clamp


def build(width: int = 64, height: int = 64, unroll: int = 1) -> Pipeline:
    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (width, height))
    blur = gaussian_blur(inp, x, y)
    sharpen = Func("sharpen")
    c = cast(Int16, inp[x + 1, y + 1])
    sharpen[x, y] = c + ((c - cast(Int16, blur[x, y])) * 3) / 2
    out = Func("unsharp")
    out[x, y] = cast(UInt16, clamp(sharpen[x, y], 0, 255))
    return Pipeline(out, "unsharp", unroll)
