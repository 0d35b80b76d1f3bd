"""Issue 37 acceptance 1 and 4 on the 32x16 with AHA's GLB (configs/default_glb.toml; its
array RTL is configs/default.toml's, so the session's 32x16 Verilator model serves): harris
through `cgra run` (the GLB's config network, load and store DMAs, the array RTL in
Verilator) bit-exact with numpy and Halide, configured through the GLB in >= 10x fewer
cycles than through the single config port (AHA Fig. 12: 20.7x), then through the host API's
Verilator platform on a second image."""
from __future__ import annotations

import numpy as np

from garnet.glb.confignet import simulate
from mapper import ir
from mapper.apps import build_app, lower_app
from mapper.flow import run_app
from mapper.interp import run_outputs
from mapper.params import AppParams, RunParams
from runtime import CommandQueue, Context, get_device


def test_harris_through_the_glb_and_the_host_api(default_glb_design, default_harness,
                                                  tmp_path):
    run = run_app(RunParams(AppParams("harris", 64, 64), default_glb_design, tmp_path / "h"))
    rep = run.report
    assert rep["match"] == {"numpy": True, "halide": True}
    g = rep["glb"]
    assert g["params"]["tiles"] == 16
    pairs = run.flow.bitstream.pairs()
    # every word of the bitstream written by the column paths, in >= 10x fewer cycles than
    # one word per cycle through the single port
    assert g["config"]["writes"] == len(pairs) == g["config"]["single_port_cycles"]
    assert sorted(run.glb.config.writes) == sorted(pairs)
    assert g["config"]["cycles"] == simulate(run.glb.params, pairs, 16, "unicast",
                                             row_multicast=True).cycles
    assert 10 * g["config"]["cycles"] <= len(pairs)
    # the host API on the same program (a `cgra run` directory), another image
    dev = get_device("cgra-gen", "verilator", "1")
    ctx = Context(dev)
    prog = ctx.program(run.out_dir)
    img = np.random.default_rng(37).integers(0, 256, size=(64, 64))
    name = build_app("harris", 64, 64).inputs[0].name
    pipe = lower_app("harris", 64, 64, 1)
    want = np.asarray(run_outputs(ir.narrow_pipeline(pipe, 16), {name: img})[pipe.output])
    q = CommandQueue(ctx)
    bi, bo = ctx.buffer((64, 64)), ctx.buffer(want.shape)
    q.write(bi, img)
    q.run(prog, {name: bi}, bo)
    out = q.read(bo).wait().result
    assert np.array_equal(out, want & 0xFFFF)
    assert dev.platform.last_glb is not None
    assert dev.platform.last_glb.config.cycles == g["config"]["cycles"]
