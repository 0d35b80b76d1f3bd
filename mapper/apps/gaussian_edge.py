"""gaussian_edge: the 3x3 gaussian of :mod:`mapper.apps.gaussian` centred on each pixel, with
clamp-to-edge boundary (Halide ``BoundaryConditions.repeat_edge``), so the output keeps the
input size:

- ``e(x, y) = in(clamp(x, 0, W-1), clamp(y, 0, H-1))``;
- ``blur_unnormalized(x, y) = sum_{i,j in 0..2} w[j][i] * e(x+i-1, y+j-1)`` (the weights of
  ``gaussian``, UInt16 wrap-around); ``gaussian_edge(x, y) = blur_unnormalized(x, y) >> 8``.

Output domain: ``W x H``. On the array the host streams the input padded by one pixel on
every side with edge values (:attr:`mapper.ir.PipelineInput.pad`).
"""
from __future__ import annotations

from mapper.apps.gaussian import blur
from mapper.frontend.dsl import Input, Pipeline, UInt16, Var, repeat_edge


def build(width: int = 64, height: int = 64, unroll: int = 1) -> Pipeline:
    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (width, height))
    return Pipeline(blur(repeat_edge(inp), x, y, centre=1), "gaussian_edge", unroll)
