"""brighten_bf16: a brightness and contrast change computed in BFloat16 on the FP PE, with the
integer <-> bf16 conversions on the array (UInt16 image in, UInt16 image out):

- ``f(x, y) = BFloat16(in(x, y))`` (``float.from_u16``: nearest even; exact for 0..255);
- ``g(x, y) = f(x, y) * 1.5 + 0.5`` (two bf16 ops, each rounded to nearest even: above 256
  the bf16 spacing is 2, so e.g. 255 * 1.5 = 382.5 rounds to 382, + 0.5 stays 382);
- ``brighten_bf16(x, y) = UInt16(g(x, y))`` (``float.to_u16``: toward zero; ``g`` is in
  [0.5, 383], inside the range where Halide's cast is defined).

Output domain: ``W x H``. Needs the FP PE (``configs/bf16.toml``, ``configs/bf16_small.toml``).
"""
from __future__ import annotations

from mapper.frontend.dsl import BFloat16, Func, Input, Pipeline, UInt16, Var, cast

GAIN = 1.5
OFFSET = 0.5


def build(width: int = 64, height: int = 64, unroll: int = 1) -> Pipeline:
    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (width, height))
    out = Func("brighten_bf16")
    out[x, y] = cast(UInt16, cast(BFloat16, inp[x, y]) * GAIN + OFFSET)
    return Pipeline(out, "brighten_bf16", unroll)
