"""camera_pipeline: a raw RGGB Bayer mosaic (input convention ``bayer_rggb``) to gamma-corrected
display RGB at half resolution, three outputs ``red``, ``green``, ``blue`` (UInt16, 0..255).
The steps of Halide's ``camera_pipe`` app, in 16-bit integers:

1. **hot-pixel suppression** on the mosaic (Halide ``hot_pixel_suppression``): each pixel is
   clamped to the range of its four same-colour neighbours (distance 2),
   ``d(x, y) = clamp(m(x+2, y+2), lo, hi)`` with ``lo`` / ``hi`` the min / max of
   ``m(x, y+2), m(x+4, y+2), m(x+2, y), m(x+2, y+4)`` (an even shift, so ``d`` keeps the
   mosaic's RGGB phase);
2. **demosaic** per 2x2 quad ``(x, y)`` of ``d`` (as :mod:`mapper.apps.color_correct`):
   ``R = d(2x, 2y)``, ``G = (d(2x+1, 2y) + d(2x, 2y+1)) >> 1``, ``B = d(2x+1, 2y+1)``;
3. **colour correction** with :data:`mapper.apps.color_correct.MATRIX` (1/32 units, Int16,
   arithmetic shift by 5), clamped to 0..255;
4. **gamma curve** as a lookup table (:class:`mapper.frontend.dsl.LUT`, a MEM tile in
   lookup-table mode on the array): :data:`GAMMA` ``[v] = round(255 * (v / 255) ** (1 /
   2.2))``, 256 entries.

Output domains: ``floor((W - 4) / 2) x floor((H - 4) / 2)`` each. Multi-rate (stride-2 reads),
unroll 1.
"""
from __future__ import annotations

from mapper.apps.color_correct import OUTPUTS, corrected
from mapper.frontend.dsl import LUT, Func, Input, Int16, Pipeline, UInt16, Var, cast, clamp, max, min

#: display gamma of the curve (sRGB-like 1 / 2.2)
GAMMA_EXPONENT = 1 / 2.2
#: the gamma curve: 8-bit linear value -> 8-bit display value
GAMMA = tuple(int(round(255 * (v / 255) ** GAMMA_EXPONENT)) for v in range(256))


def build(width: int = 64, height: int = 64, unroll: int = 1) -> Pipeline:
    x, y = Var("x"), Var("y")
    m = Input("mosaic", UInt16, (width, height))
    denoised = Func("denoised")
    nbrs = (m[x, y + 2], m[x + 4, y + 2], m[x + 2, y], m[x + 2, y + 4])
    lo = min(min(nbrs[0], nbrs[1]), min(nbrs[2], nbrs[3]))
    hi = max(max(nbrs[0], nbrs[1]), max(nbrs[2], nbrs[3]))
    denoised[x, y] = clamp(m[x + 2, y + 2], lo, hi)
    rgb = Func("cam_r"), Func("cam_g"), Func("cam_b")
    rgb[0][x, y] = cast(Int16, denoised[2 * x, 2 * y])
    rgb[1][x, y] = cast(Int16, (denoised[2 * x + 1, 2 * y] + denoised[2 * x, 2 * y + 1]) >> 1)
    rgb[2][x, y] = cast(Int16, denoised[2 * x + 1, 2 * y + 1])
    gamma = LUT("gamma", GAMMA)
    outs = []
    for name, value in zip(OUTPUTS, corrected(rgb, x, y), strict=True):
        f = Func(name)
        f[x, y] = gamma[value]
        outs.append(f)
    return Pipeline(outs, "camera_pipeline", unroll, image="bayer_rggb")
