"""bayer_demosaic: bilinear demosaic of an RGGB Bayer mosaic at full resolution (input
convention ``bayer_rggb``), three outputs ``red``, ``green``, ``blue`` (UInt16). It selects
by the pixel's colour phase, the coordinate parity ``x % 2``, ``y % 2`` (Halide's ``select``
on ``x % 2``), which the array reads from two pattern ROMs (MEM tiles holding ``0, 1, 0, 1,
...``, loaded with the bitstream: :func:`mapper.mapping.memory.pattern_rom`).

Output pixel ``(x, y)`` is mosaic pixel ``c = (x + 1, y + 1)`` (a 3x3 neighbourhood), with
``px = (x + 1) % 2``, ``py = (y + 1) % 2`` (RGGB: R at (0, 0), G at (1, 0) and (0, 1), B at
(1, 1)), ``cross`` = the mean of the 4 edge neighbours, ``diag`` = the mean of the 4
corners, ``horiz`` / ``vert`` = the mean of the left + right / up + down neighbours (sums
then ``>> 2`` or ``>> 1``, exact for 8-bit pixels):

- R site: ``R = c``, ``G = cross``, ``B = diag``;
- G site on an R row (``px = 1, py = 0``): ``R = horiz``, ``G = c``, ``B = vert``;
- G site on a B row (``px = 0, py = 1``): ``R = vert``, ``G = c``, ``B = horiz``;
- B site: ``R = diag``, ``G = cross``, ``B = c``.

Output domains: ``(W - 2) x (H - 2)`` each. Single rate, unroll 1.
"""
from __future__ import annotations

from mapper.frontend.dsl import Func, Input, Pipeline, UInt16, Var, select


def build(width: int = 64, height: int = 64, unroll: int = 1) -> Pipeline:
    x, y = Var("x"), Var("y")
    m = Input("mosaic", UInt16, (width, height))
    c = m[x + 1, y + 1]
    horiz = (m[x, y + 1] + m[x + 2, y + 1]) >> 1
    vert = (m[x + 1, y] + m[x + 1, y + 2]) >> 1
    cross = (m[x, y + 1] + m[x + 2, y + 1] + m[x + 1, y] + m[x + 1, y + 2]) >> 2
    diag = (m[x, y] + m[x + 2, y] + m[x, y + 2] + m[x + 2, y + 2]) >> 2
    px, py = (x + 1) % 2, (y + 1) % 2
    r_row = py == 0                         # an R/G row (else a G/B row)
    on_diag = px == py                      # an R or B site (else a G site)
    red, green, blue = Func("red"), Func("green"), Func("blue")
    red[x, y] = select(on_diag, select(r_row, c, diag), select(r_row, horiz, vert))
    green[x, y] = select(on_diag, cross, c)
    blue[x, y] = select(on_diag, select(r_row, diag, c), select(r_row, vert, horiz))
    return Pipeline([red, green, blue], "bayer_demosaic", unroll, image="bayer_rggb")
