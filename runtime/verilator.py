"""The Verilator platform ``cgra-gen/verilator/1``: runs a program on the generated array RTL.

The design's stream harness (:func:`mapper.sim.verilator.build_harness`, built once per RTL
content and cached) is configured with the program's bitstream, driven with the input images
in the order of the app's IO stream programs (:func:`mapper.sim.run.stream_plan`) and sampled
at the output streams. Cycles: the stream's cycles on the array (first input to last output).

On a design with a GLB (``<design>/glb/glb.json``: `cgra rtl` of a TOML with a ``[glb]``
table) the run goes through the GLB's cycle-level model (:func:`mapper.sim.glb.run_through_glb`,
AHA paper §4.4): the model is the design's system top -- the array and its GLB in one
Verilator model -- driven through the GLB's host and control ports: the bitstream is
configured through the config network (GLB banks, config streamers, the array's column
config paths), the input image is written into the bank of the GLB
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
from mapper.sim.glb import GlbRun, design_glb, run_through_glb
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
        ports = [o[1] for o in plan.outputs]
        glb = design_glb(coll.root)
        params = SimParams(system=glb is not None)
        harness = build_harness(coll.root, params)
        with tempfile.TemporaryDirectory(prefix="cgra-rt-") as wd:
            if glb is None:
                self.last_glb = None
                sim = run_harness(harness, list(program.bitstream), plan.inputs, ports,
                                  plan.cycles, wd, params)
                out = plan.assemble(sim.outputs, program.app)[dsl_p.output.name]
            else:
                def run_system(inputs, sampled, cycles):
                    return run_harness(harness, [], inputs, sampled, cycles, wd,
                                       params).outputs
                flow.bitstream = load_bitstream(program.run_dir, coll)
                self.last_glb = run_through_glb(
                    glb, coll.size[1], coll.size[0], flow, plan, images, io_ports(flow),
                    run_system, harness.outputs, harness.flush_wait, program.app)
                out = self.last_glb.outputs[dsl_p.output.name]
        return out & ((1 << self.glb.data_width) - 1), int(plan.cycles)


BUILTIN.append(VerilatorPlatform)
