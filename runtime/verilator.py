"""The Verilator platform ``cgra-gen/verilator/1``: runs a program on the generated array RTL.

The design's stream harness (:func:`mapper.sim.verilator.build_harness`, built once per RTL
content and cached) is configured with the program's bitstream, driven with the input images
in the order of the app's IO stream programs (:func:`mapper.sim.run.stream_plan`) and sampled
at the output streams. Cycles: the stream's cycles on the array (first input to last output).

On a design with a GLB (``<design>/glb/glb.json``: `cgra rtl` of a TOML with a ``[glb]``
table) the run goes through the GLB's cycle-level model (:func:`mapper.sim.glb.run_through_glb`,
AHA paper §4.4): the bitstream is configured through the config network (GLB banks, config
streamers, and the column config paths of the array RTL), the input image is written into the bank of the GLB
tile serving the input IO tile and streamed by its load DMA, the sampled outputs go through a
store DMA into a GLB buffer and are read back; :attr:`VerilatorPlatform.last_glb` keeps the
last such run (its configuration cycles, model cycles per phase). Without GLB collateral the
image words go straight to the IO ports and the bitstream through the harness's single
config port.

Raises :class:`cgra.errors.SimulationError` (harness build or run failure, a stream the GLB
cannot serve), :class:`cgra.errors.CollateralError` (the run's design is missing or was
regenerated).
"""
from __future__ import annotations

import tempfile

import numpy as np

from garnet.glb.params import GlbParams
from mapper.apps import build_app
from mapper.sim.glb import GlbRun, column_paths, design_glb, run_through_glb
from mapper.sim.run import io_ports, stream_plan
from mapper.sim.verilator import SimParams, build_harness, run_harness
from mapper.stages import load_bitstream, load_flow, open_design
from runtime.api import BUILTIN, Platform, Program


class VerilatorPlatform(Platform):
    """Platform ``cgra-gen/verilator/1`` (module docstring)."""

    vendor = "cgra-gen"
    name = "verilator"
    version = "1"

    def __init__(self, glb: GlbParams | None = None):
        super().__init__(glb)
        #: the last run through a design's GLB (``None`` before one, or without GLB)
        self.last_glb: GlbRun | None = None

    def execute(self, program: Program, images: dict[str, np.ndarray]) -> tuple[np.ndarray, int]:
        coll = open_design(program.run_dir)
        flow = load_flow(program.run_dir, coll)
        dsl_p = build_app(program.app, program.width, program.height, program.unroll)
        plan = stream_plan(flow, images, dsl_p.output.name)
        harness = build_harness(coll.root, SimParams())
        ports = [o[1] for o in plan.outputs]
        glb = design_glb(coll.root)
        with tempfile.TemporaryDirectory(prefix="cgra-rt-") as wd:
            def run_array(pairs, inputs, cycles):
                return run_harness(harness, list(pairs), inputs, ports, cycles, wd,
                                   SimParams()).outputs
            if glb is None:
                self.last_glb = None
                out = plan.assemble(run_array(program.bitstream, plan.inputs, plan.cycles),
                                    program.app)[dsl_p.output.name]
            else:
                flow.bitstream = load_bitstream(program.run_dir, coll)
                cols = (coll.size[0], harness.flush_wait) if column_paths(harness.inputs) \
                    else None
                self.last_glb = run_through_glb(glb, coll.size[1], flow, plan, images,
                                                io_ports(flow), run_array, program.app, cols)
                out = self.last_glb.outputs[dsl_p.output.name]
        return out & ((1 << self.glb.data_width) - 1), int(plan.cycles)


BUILTIN.append(VerilatorPlatform)
