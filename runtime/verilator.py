"""The Verilator platform ``cgra-gen/verilator/1``: runs a program on the generated array RTL.

The words a run's load DMAs read from the GLB (the runtime's GLB, :mod:`runtime.api`) stream
into the array's IO tiles in Verilator: the design's stream harness
(:func:`mapper.sim.verilator.build_harness`, built once per design and cached in it) is
configured with the program's bitstream, driven with the input images in the order of the
app's IO stream programs (:func:`mapper.sim.run.stream_plan`) and sampled at the output
streams; the output image goes back to the GLB through a store DMA. Cycles: the stream's
cycles on the array (first input to last output). The GLB itself is the runtime's functional
model here (its RTL is checked against the same model in tests/glb); the configuration
goes through the harness's single config port.

Raises :class:`cgra.errors.SimulationError` (harness build or run failure),
:class:`cgra.errors.CollateralError` (the run's design is missing or was regenerated).
"""
from __future__ import annotations

import tempfile

import numpy as np

from mapper.apps import build_app
from mapper.sim.run import stream_plan
from mapper.sim.verilator import SimParams, build_harness, run_harness
from mapper.stages import load_flow, open_design
from runtime.api import BUILTIN, Platform, Program


class VerilatorPlatform(Platform):
    """Platform ``cgra-gen/verilator/1`` (module docstring)."""

    vendor = "cgra-gen"
    name = "verilator"
    version = "1"

    def execute(self, program: Program, images: dict[str, np.ndarray]) -> tuple[np.ndarray, int]:
        coll = open_design(program.run_dir)
        flow = load_flow(program.run_dir, coll)
        dsl_p = build_app(program.app, program.width, program.height, program.unroll)
        plan = stream_plan(flow, images, dsl_p.output.name)
        harness = build_harness(coll.root, SimParams())
        with tempfile.TemporaryDirectory(prefix="cgra-rt-") as wd:
            sim = run_harness(harness, list(program.bitstream), plan.inputs,
                              [o[1] for o in plan.outputs], plan.cycles, wd, SimParams())
        out = plan.assemble(sim.outputs, program.app)[dsl_p.output.name]
        return out & ((1 << self.glb.data_width) - 1), int(plan.cycles)


BUILTIN.append(VerilatorPlatform)
