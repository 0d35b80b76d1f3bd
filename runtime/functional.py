"""The fast functional platform ``cgra-gen/functional/1``: runs a program's app on its
input images with the numpy interpreter of the app's IR (:func:`mapper.interp.run_outputs`,
the golden model every `cgra run` is checked against), at the array's word width. Cycles:
one input pixel per cycle (the array's stream rate at unroll 1, divided by the unroll)."""
from __future__ import annotations

import numpy as np

from mapper import ir
from mapper.apps import lower_app
from mapper.interp import run_outputs
from runtime.api import BUILTIN, Platform, Program


class FunctionalPlatform(Platform):
    """Platform ``cgra-gen/functional/1`` (module docstring)."""

    vendor = "cgra-gen"
    name = "functional"
    version = "1"

    def execute(self, program: Program, images: dict[str, np.ndarray]) -> tuple[np.ndarray, int]:
        pipe = lower_app(program.app, program.width, program.height, program.unroll)
        narrow = ir.narrow_pipeline(pipe, self.glb.data_width)
        outs = run_outputs(narrow, images)
        out = np.asarray(outs[pipe.output]).astype(np.int64) & ((1 << self.glb.data_width) - 1)
        cycles = -(-program.width * program.height // program.unroll)
        return out, cycles


BUILTIN.append(FunctionalPlatform)
