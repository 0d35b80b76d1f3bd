"""color_correct: demosaic and colour correction of an RGGB Bayer mosaic (input convention
``bayer_rggb``), three outputs ``red``, ``green``, ``blue`` (UInt16, 0..255) at half resolution
(the camera pipeline's demosaic + colour-correction steps; several output Funcs). Per 2x2 quad
``(x, y)``, in Int16:

- ``R = m(2x, 2y)``, ``G = (m(2x+1, 2y) + m(2x, 2y+1)) >> 1``, ``B = m(2x+1, 2y+1)`` (as
  :mod:`mapper.apps.demosaic`);
- ``c(x, y) = UInt16(clamp((M[c][0] R + M[c][1] G + M[c][2] B) >> 5, 0, 255))`` for ``c`` in
  red, green, blue (arithmetic shift), with the colour-correction matrix ``M / 32``:
  ``[[1.75, -0.5, -0.25], [-0.375, 1.625, -0.25], [0, -0.5, 1.5]]``. An illustrative
  camera-RGB -> display-RGB matrix, not a sensor calibration: each row sums to 1, so greys
  stay grey; with 8-bit inputs no Int16 sum overflows (|row| * 255 <= 20400).

Output domains: ``floor(W/2) x floor(H/2)`` each. Multi-rate (stride-2 reads), unroll 1.
"""
from __future__ import annotations

from mapper.frontend.dsl import Expr, Func, Input, Int16, Pipeline, UInt16, Var, cast, clamp

#: the colour-correction matrix in 1/32 units (rows: red, green, blue output)
MATRIX = ((56, -16, -8), (-12, 52, -8), (0, -16, 48))
SHIFT = 5
OUTPUTS = ("red", "green", "blue")


def corrected(rgb: tuple[Func, Func, Func], x: Var, y: Var) -> list[Expr]:
    """The colour-corrected red, green and blue values (UInt16, 0..255) at ``(x, y)`` of the
    Int16 planes ``rgb``: ``clamp((M[c] . rgb) >> SHIFT, 0, 255)`` per output row ``c``
    (module docstring; shared with :mod:`mapper.apps.camera_pipeline`)."""
    out = []
    for row in MATRIX:
        acc = None
        for plane, k in zip(rgb, row, strict=True):
            if k:
                t = plane[x, y] * k
                acc = t if acc is None else acc + t
        out.append(cast(UInt16, clamp(acc >> SHIFT, 0, 255)))
    return out


def build(width: int = 64, height: int = 64, unroll: int = 1) -> Pipeline:
    x, y = Var("x"), Var("y")
    m = Input("mosaic", UInt16, (width, height))
    rgb = Func("rgb_r"), Func("rgb_g"), Func("rgb_b")
    rgb[0][x, y] = cast(Int16, m[2 * x, 2 * y])
    rgb[1][x, y] = cast(Int16, (m[2 * x + 1, 2 * y] + m[2 * x, 2 * y + 1]) >> 1)
    rgb[2][x, y] = cast(Int16, m[2 * x + 1, 2 * y + 1])
    outs = []
    for name, value in zip(OUTPUTS, corrected(rgb, x, y), strict=True):
        f = Func(name)
        f[x, y] = value
        outs.append(f)
    return Pipeline(outs, "color_correct", unroll, image="bayer_rggb")
