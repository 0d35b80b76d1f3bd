"""gaussian_bf16: the 3x3 gaussian in BFloat16 (Halide ``BFloat(16)``), on the FP PE
(``peak/examples/cgra_pe_bf16.py``; designs ``configs/bf16.toml``, ``configs/bf16_small.toml``).

- Input ``input``: ``BFloat16`` encodings of the pixel values, converted on the host
  (:func:`mapper.frontend.dsl.to_bf16_bits`, nearest even; the camera's 0..255 pixels are exact
  in bf16: 8 significant bits), as the array has no int -> bf16 conversion op in the IR yet;
  :func:`mapper.apps.app_images` does it for the flow.
- ``blur(x, y) = sum_{j, i in 0..2} w[j][i] * in(x+i, y+j)`` with ``w = [[1, 2, 1], [2, 4, 2],
  [1, 2, 1]] / 16`` (bf16 constants 0.0625, 0.125, 0.25: exact), summed left to right in
  raster order ``(i, j) = (0,0), (1,0), (2,0), (0,1), ...``, every product and partial sum
  rounded to bf16 (nearest even): 9 ``float.mul`` by a constant, 8 ``float.add``.
- Output: the ``BFloat16`` encodings of ``blur`` (uint16 images; the PNG shows their values).

Every product is exact (a power-of-two scaling of an 8-bit integer); the sums round. Inputs
0..255 give no subnormal, NaN or infinity, so the FP PE, the numpy interpreter and Halide's
BFloat(16) (float32 then nearest even: innocuous double rounding for + and *) agree bit for bit.

Output domain: ``(W-2) x (H-2)``.
"""
from __future__ import annotations

from mapper.frontend.dsl import BFloat16, Func, Input, Pipeline, Var

WEIGHTS = [[1, 2, 1], [2, 4, 2], [1, 2, 1]]
NORM = 16


def blur(inp: Input, x: Var, y: Var) -> Func:
    """``blur[x, y]``: the weighted sum of ``inp`` at ``(x..x+2, y..y+2)`` (module docstring)."""
    out = Func("blur")
    e = None
    for j in range(3):
        for i in range(3):
            term = inp[x + i, y + j] * (WEIGHTS[j][i] / NORM)
            e = term if e is None else e + term
    out[x, y] = e
    return out


def build(width: int = 64, height: int = 64, unroll: int = 1) -> Pipeline:
    x, y = Var("x"), Var("y")
    inp = Input("input", BFloat16, (width, height))
    return Pipeline(blur(inp, x, y), "gaussian_bf16", unroll)
