"""harris corner detector, integer version of ``mapper/data/coreir/harris_compute.json``.

All stages Int16 (the input is reinterpreted as Int16; camera pixels are 0..255):

- ``grad_x(x, y) = (in(x+2, y) + 2 in(x+2, y+1) + in(x+2, y+2))
  - (in(x, y) + 2 in(x, y+1) + in(x, y+2))`` (Sobel), ``grad_y`` the transpose;
- ``lxx = (gx * gx) >> 6``, ``lyy = (gy * gy) >> 6``, ``lxy = (gx * gy) >> 6`` with
  ``gx = clamp(grad_x, -180, 180)``, ``gy = clamp(grad_y, -180, 180)`` (``>>`` arithmetic);
- ``lgxx / lgyy / lgxy(x, y) = sum_{i,j in 0..2} l..(x+i, y+j)`` (3x3 box, RDom update);
- ``cim = a * b - c * c - (((a + b) * (a + b)) >> 4)`` with ``a = lgxx >> 6``,
  ``b = lgyy >> 6``, ``c = lgxy >> 6``  (det - k trace^2 with k = 1/16);
- ``harris(x, y) = 255 if cim(x+1, y+1) > every other cim in its 3x3 window and
  cim(x+1, y+1) >= 1, else 0`` (non-maximum suppression and threshold).

No intermediate overflows 16 bits (180^2 = 32400; the box sum of lxx <= 9 * 506).
Output domain: ``(W-6) x (H-6)``.
"""
from __future__ import annotations

from mapper.frontend.dsl import (Func, Input, Int16, Pipeline, RDom, UInt16, Var, cast, clamp,
                                 select)


def build(width: int = 64, height: int = 64, unroll: int = 1) -> Pipeline:
    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (width, height))

    def p(dx: int, dy: int):
        return cast(Int16, inp[x + dx, y + dy])

    grad_x = Func("grad_x")
    grad_x[x, y] = (p(2, 0) + p(2, 1) * 2 + p(2, 2)) - (p(0, 0) + p(0, 1) * 2 + p(0, 2))
    grad_y = Func("grad_y")
    grad_y[x, y] = (p(0, 2) + p(1, 2) * 2 + p(2, 2)) - (p(0, 0) + p(1, 0) * 2 + p(2, 0))
    gx = clamp(grad_x[x, y], -180, 180)
    gy = clamp(grad_y[x, y], -180, 180)
    lxx, lyy, lxy = Func("lxx"), Func("lyy"), Func("lxy")
    lxx[x, y] = (gx * gx) >> 6
    lyy[x, y] = (gy * gy) >> 6
    lxy[x, y] = (gx * gy) >> 6
    boxes = {}
    for name, src in (("lgxx", lxx), ("lgyy", lyy), ("lgxy", lxy)):
        r = RDom([(0, 3), (0, 3)], f"r_{name}")
        f = Func(name)
        f[x, y] = cast(Int16, 0)
        f[x, y] += src[x + r.x, y + r.y]
        boxes[name] = f
    a = boxes["lgxx"][x, y] >> 6
    b = boxes["lgyy"][x, y] >> 6
    c = boxes["lgxy"][x, y] >> 6
    cim = Func("cim")
    cim[x, y] = a * b - c * c - (((a + b) * (a + b)) >> 4)
    center = cim[x + 1, y + 1]
    is_max = center >= 1
    for j in range(3):
        for i in range(3):
            if (i, j) != (1, 1):
                is_max = is_max & (cim[x + i, y + j] < center)
    out = Func("harris")
    out[x, y] = select(is_max, cast(UInt16, 255), cast(UInt16, 0))
    return Pipeline(out, "harris", unroll)
