"""End to end on the 8x8 design: apps mapped by the compiler run on the generated RTL in
Verilator (configured over the config bus only) and match both golden models bit-exactly."""
from __future__ import annotations

import numpy as np
import pytest

from cgra.errors import CgraError, SimulationError

APPS = ("pointwise", "brighten_blur", "gaussian")
#: output domain of each app on a 64x64 input (stencil footprint minus one per stage)
OUT_SHAPE = {"pointwise": (64, 64), "brighten_blur": (63, 63), "gaussian": (62, 62)}


@pytest.mark.parametrize("app", APPS)
def test_app_matches_both_golden_models(app_run, app):
    from mapper.images import camera_crop

    r = app_run(app)
    assert np.array_equal(r.image, camera_crop(64, 64))
    assert r.output.shape == OUT_SHAPE[app]
    assert r.golden_numpy.shape == OUT_SHAPE[app]
    assert np.array_equal(r.output.astype(np.int64), r.golden_numpy.astype(np.int64))
    assert np.array_equal(r.output.astype(np.int64), r.golden_halide.astype(np.int64))
    # the output is not trivial: it varies over the image like the input does
    assert len(np.unique(r.output)) > 20
    assert r.sim.readback_mismatches == []
    rep = r.report
    assert rep["match"] == {"numpy": True, "halide": True}
    assert rep["output_shape"] == list(OUT_SHAPE[app])
    # one pixel per cycle: a frame takes the ideal stream time plus the pipelining latency
    assert rep["cycles"]["stream"] == rep["cycles"]["ideal_stream"] + rep["latency"][
        "extra_cycles"]
    assert rep["latency"]["extra_cycles"] >= 0
    for f in (f"{app}.png", "pnr.png", "run_report.json", f"{app}.bs", "pnr_report.json"):
        assert (r.out_dir / f).is_file(), f


def test_pointwise_known_answer(app_run):
    """pointwise = in * 2 + 1 (16-bit wrap-around), checked on the raw pixels."""
    r = app_run("pointwise")
    want = (r.image.astype(np.int64) * 2 + 1) & 0xFFFF
    assert np.array_equal(r.output.astype(np.int64), want)


@pytest.mark.parametrize("app", APPS)
def test_pnr_invariants(app_run, small_design, app):
    from mapper.pipeline import check_balanced
    from mapper.place import check_placement
    from mapper.route import find_graphs, check_routing

    r = app_run(app)
    graphs = find_graphs(small_design)
    flow = r.flow
    check_placement(flow.packed, flow.placement, graphs)
    check_routing(flow.routing, graphs)
    check_routing(flow.pipelined.routing, graphs)
    check_balanced(flow.pipelined)
    # independent re-check: tile types and exclusive routing nodes
    rg = graphs[16]
    for inst, xy in flow.placement.sites.items():
        tag = flow.packed.instances[inst].tag
        tile_tag = rg.tiles[tuple(xy)].tag
        assert tile_tag == ("I" if tag in ("I", "i") else tag) or tag == "r", (inst, tag, xy)
    for w in graphs:
        users: dict[str, set[str]] = {}
        for name, net in flow.pipelined.routing.nets.items():
            if net.width != w:
                continue
            for n in net.nodes():
                users.setdefault(n, set()).add(name)
        shared = {n: u for n, u in users.items() if len(u) > 1 and not n.startswith("REG:")}
        assert shared == {}


def test_same_seed_same_bitstream(small_design, tmp_path):
    from mapper.run import RunParams, compile_app

    a = compile_app(RunParams("gaussian", small_design, seed=7), tmp_path / "a")
    b = compile_app(RunParams("gaussian", small_design, seed=7), tmp_path / "b")
    assert a.flow.bitstream.pairs() == b.flow.bitstream.pairs()
    assert (tmp_path / "a" / "gaussian.bs").read_bytes() == (tmp_path / "b" /
                                                              "gaussian.bs").read_bytes()
    assert len(a.flow.bitstream.pairs()) > 20


def test_too_large_app_names_the_resource(small_design, tmp_path):
    from mapper.run import RunParams, compile_app

    with pytest.raises(CgraError) as e:
        compile_app(RunParams("gaussian", small_design, unroll=16), tmp_path)
    msg = str(e.value)
    # 16 lanes: 16 input + 16 output streams on the 8 IO tiles of the top row
    assert "design gaussian needs 32 16-bit IO site(s) (tag 'I') but the array has 8" in msg


def test_mismatch_names_first_pixel(app_run, harness, tmp_path):
    """A corrupted bitstream (the ALU opcode of the PE driving pointwise's output flipped in its
    instruction register) is caught, and the error names the first differing pixel with the
    expected and the simulated value."""
    from mapper.run import check_output
    from mapper.simulate import run_harness

    r = app_run("pointwise")
    packed = r.flow.pipelined.packed
    pe = next(n.source[0] for n in packed.nets
              if any(packed.instances[t].kind == "io_out" for t, _ in n.sinks))
    assert packed.instances[pe].tag == "p"
    x, y = r.flow.placement.sites[pe]
    inst0 = (x << 8) | y                      # register 0, feature 0 (the core) of the PE tile
    pairs = [(a, d ^ 1 if a == inst0 else d) for a, d in r.flow.bitstream.pairs()]
    assert pairs != r.flow.bitstream.pairs()
    plan = r.plan
    sim = run_harness(harness, pairs, plan.inputs, [o[1] for o in plan.outputs], plan.cycles,
                      tmp_path)
    x0, x1, y0, y1 = plan.box
    got = np.zeros((y1 - y0, x1 - x0), np.int64)
    for (_n, port, cyc, ys, xs) in plan.outputs:
        got[ys - y0, xs - x0] = sim.outputs[port][cyc]
    with pytest.raises(SimulationError) as e:
        check_output("pointwise", got, {"numpy interpreter": r.golden_numpy}, plan.box)
    diff = np.argwhere(got != r.golden_numpy.astype(np.int64))
    assert len(diff) > 0
    yy, xx = (int(v) for v in diff[0])
    want, bad = int(r.golden_numpy[yy, xx]), int(got[yy, xx])
    assert f"first at pixel (x={x0 + xx}, y={y0 + yy}): expected {want}, got {bad}" in \
        str(e.value)
    assert f"at {len(diff)} pixel(s)" in str(e.value)


def test_cli_run(small_design, harness, tmp_path):
    import json

    from click.testing import CliRunner

    from cgra.cli import cli

    res = CliRunner().invoke(cli, ["run", "pointwise", "--design", str(small_design), "--out",
                                   str(tmp_path), "--seed", "1", "--size", "32"])
    assert res.exit_code == 0, (res.output, res.exception)
    assert "pointwise on small: 32x32 output matches numpy and Halide bit-exactly" in res.output
    rep = json.loads((tmp_path / "run_report.json").read_text())
    assert rep["size"] == [32, 32] and rep["seed"] == 1
    assert rep["verilator"]["cached"] is True
    for k in ("map", "pnr_place", "pnr_route", "pnr_bitstream", "simulation"):
        assert k in rep["stage_seconds"]
