"""Power domains end to end on the 8x8 design (issue 36 items 2-4; AHA paper §4.3, §5.5):
gaussian runs bit-exact with every unused tile gated by its bitstream, gating one used
tile breaks the run, power-aware routing keeps no more tiles on than the plain router, and
the energy estimate (a model) is positive and lower with the unused tiles gated; with the
unused muxes of the on tiles quieted too (``--quiet-unused``) it still runs bit-exact."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from mapper.backend.bitstream import generate
from mapper.backend.place import PlaceParams
from mapper.backend.power import gate_words, gated_by_bitstream, used_tiles
from mapper.backend.quiet import select_loop, used_nodes
from mapper.backend.route import POWER_AWARE_COST, RouterParams
from mapper.backend.verify import VerificationError, verify
from mapper.flow import run_app, run_stages
from mapper.params import AppParams, FlowParams, RunParams, SimOptions
from mapper.sim.energy import stream_toggles
from mapper.sim.verilator import SimParams, run_harness


@pytest.fixture(scope="module")
def gated_run(small_design, harness, tmp_path_factory):
    """gaussian on the 64x64 camera crop, seed 0, power-aware routing, every unused tile
    gated, with the energy estimate."""
    out = tmp_path_factory.mktemp("power") / "gaussian"
    return run_app(RunParams(AppParams("gaussian", 64, 64), small_design, out,
                             FlowParams(route=RouterParams(power_cost=POWER_AWARE_COST),
                                        power_gate=True),
                             SimOptions(energy=True)))


def test_gaussian_bit_exact_with_unused_tiles_gated(gated_run):
    r = gated_run
    assert np.array_equal(r.output.astype(np.int64), r.golden_numpy.astype(np.int64))
    assert np.array_equal(r.output.astype(np.int64), r.golden_halide.astype(np.int64))
    pw = r.report["power"]
    assert pw["domains"] == 64                           # one power domain per tile, 8x8
    assert pw["power_gate"] is True and pw["gated_used"] == 0
    assert pw["tiles_gated"] == pw["tiles_unused"] == len(pw["unused"])
    assert pw["tiles_on"] + pw["tiles_gated"] == 64
    # gaussian (18 PEs, 2 MEMs, 2 IOs, 3 registers) keeps well under half the array on
    assert 22 <= pw["tiles_on"] <= 32
    # the bitstream is the plain one plus one power-gate word per unused tile
    flow = r.flow
    pr = flow.pipelined
    plain = generate(pr.packed, flow.placement, pr.routing, r.coll)
    gated = {(a, d) for a, d, _f, _v in gate_words(r.coll, [tuple(xy) for xy in pw["unused"]])}
    assert set(flow.bitstream.pairs()) == set(plain.pairs()) | gated
    assert len(flow.bitstream.pairs()) == len(plain.pairs()) + pw["tiles_gated"]
    assert gated_by_bitstream(r.coll, flow.bitstream.pairs()) == {
        tuple(xy) for xy in pw["unused"]}
    assert gated_by_bitstream(r.coll, plain.pairs()) == set()
    # the back end's report gives the same power state
    pnr = json.loads((r.out_dir / "pnr_report.json").read_text())
    assert pnr["power"] == pw


def test_gating_one_used_tile_breaks_the_run(gated_run, harness, tmp_path):
    """The gaussian bitstream plus the power-gate word of one used PE tile: the Verilator
    run no longer matches the golden (the PE's outputs are clamped to 0, its state lost)."""
    r = gated_run
    flow = r.flow
    pe = sorted(xy for i, xy in flow.placement.sites.items()
                if flow.pipelined.packed.instances[i].tag == "p")[0]
    assert pe in used_tiles(flow.placement, flow.pipelined.routing)
    words = flow.bitstream.pairs() + [(a, d) for a, d, _f, _v in gate_words(r.coll, [pe])]
    # the bitstream proof refuses it (cgra run stops before simulating) ...
    assert verify(flow.bitstream.pairs(), flow.pipelined, r.coll).nets > 0
    with pytest.raises(VerificationError, match=rf"tile \({pe[0]}, {pe[1]}\) is power-gated "
                                                r"but net \S+ .* is routed through it"):
        verify(words, flow.pipelined, r.coll)
    # ... and the Verilator run of it, forced, does not match
    plan = r.plan
    sim = run_harness(harness, words, plan.inputs, [o[1] for o in plan.outputs],
                      plan.cycles, tmp_path)
    assert sim.readback_mismatches == []                 # config is always on
    (got,) = plan.assemble(sim.outputs, "gaussian").values()
    got = got.astype(np.int64) & 0xFFFF
    want = r.golden_numpy.astype(np.int64) & 0xFFFF
    assert got.shape == want.shape
    bad = int((got != want).sum())
    # every pixel of the 62x62 output passes through each PE of the stencil sum
    assert bad > want.size // 2, bad
    # the ungated run of the same bitstream matches (the gate is what breaks it)
    ok = run_harness(harness, flow.bitstream.pairs(), plan.inputs,
                     [o[1] for o in plan.outputs], plan.cycles, tmp_path)
    (same,) = plan.assemble(ok.outputs, "gaussian").values()
    assert np.array_equal(same.astype(np.int64) & 0xFFFF, want)


def test_energy_estimate_positive_and_lower_when_gated(gated_run):
    e = gated_run.report["energy"]
    assert e["schema"] == "mapper.energy/1" and "model" in e["model"]
    assert e["tiles_on"] == gated_run.report["power"]["tiles_on"]
    assert e["pixels"] == 62 * 62
    assert 0.0 < e["toggle_rate"] < 1.0
    assert e["dynamic_pj_per_pixel"] > 0 and e["leakage_pj_per_pixel"] > 0
    ungated = e["ungated"]
    assert e["total_pj_per_pixel"] < ungated["total_pj_per_pixel"]
    assert e["leakage_pj_per_pixel"] < ungated["leakage_pj_per_pixel"]
    assert e["dynamic_pj_per_pixel"] < ungated["dynamic_pj_per_pixel"]
    # a gated tile costs nothing and its outputs never switch; every used tile is on and
    # its outputs switch (per-tile toggles counted in Verilator)
    for t in e["per_tile"]:
        if not t["on"]:
            assert t["dynamic_pj"] == 0 and t["leakage_pj"] == 0 and not t["used"]
            assert t["toggles"] == t["switching_bits"] == 0
        if t["used"]:
            assert t["on"] and t["toggles"] > 0 and t["dynamic_pj"] > 0
            assert 0 < t["toggle_rate"] <= 1 and t["switching_bits"] > 0
    # run_report.json's toggles section holds the same per-tile counts
    tog = gated_run.report["toggles"]
    assert tog["total"] == e["toggles_total"] == sum(t["toggles"] for t in e["per_tile"])
    assert {(x, y): (n, b) for x, y, n, b in tog["per_tile"]} == {
        (t["x"], t["y"]): (t["toggles"], t["switching_bits"]) for t in e["per_tile"]
        if t["toggles"]}
    # the output IO tile counts at least the toggles of the stream it sent out
    (port, words), = gated_run.sim.outputs.items()
    xy = (int(port[-6:-4], 16), int(port[-2:], 16))
    out_tile = next(t for t in e["per_tile"] if (t["x"], t["y"]) == xy)
    assert out_tile["toggles"] >= stream_toggles(words, 16) > 0
    # every figure of the table says it is a model and names its source; leakage is the
    # NanGate 45 nm Open Cell Library's (cited), the cells' from garnet.cells
    assert all(v["model"] and v["source"] for v in e["table"].values())
    assert "NangateOpenCellLibrary_typical.lib" in e["table"]["cell_leakage_nw"]["source"]
    assert e["table"]["nand2_x1_leakage_nw"]["value"] == 17.39336
    assert all(t["leakage_nw"] > 0 for t in e["per_tile"])
    pnr = json.loads((gated_run.out_dir / "pnr_report.json").read_text())
    assert pnr["energy"]["total_pj_per_pixel"] == e["total_pj_per_pixel"]


@pytest.mark.parametrize("seed", [0, 1])
def test_power_aware_routing_keeps_no_more_tiles_on(small_design, tmp_path, seed):
    """Through the bitstream (no simulation): tiles on with power-aware routing (and the
    unused tiles gated) <= the plain router's used tiles, same placement seed."""
    on = {}
    for k in (1.0, POWER_AWARE_COST):
        out = tmp_path / f"k{k}"
        run_stages(RunParams(AppParams("gaussian", 64, 64), small_design, out,
                             FlowParams(place=PlaceParams(seed=seed),
                                        route=RouterParams(power_cost=k), power_gate=True)),
                   until="bitstream")
        on[k] = json.loads((out / "pnr_report.json").read_text())["power"]["tiles_on"]
    assert on[POWER_AWARE_COST] <= on[1.0], on
    assert on[1.0] <= 32


def test_quiet_unused_muxes_run_bit_exact(gated_run, tmp_path):
    """The gated run's design again from the bitstream stage, with --power-gate and
    --quiet-unused: every unused mux of an on tile selects a quiet input (none forwards a
    routed net any more), the bitstream is proved and the Verilator run is bit-exact."""
    r = gated_run
    out = tmp_path / "gaussian"
    shutil.copytree(r.out_dir, out)
    q = run_stages(RunParams(AppParams("gaussian", 64, 64), r.coll.root, out,
                             FlowParams(power_gate=True, quiet_unused=True),
                             SimOptions(sim=SimParams(toggles=True)),
                             resume_from="bitstream"))
    assert np.array_equal(q.output.astype(np.int64), q.golden_numpy.astype(np.int64))
    assert np.array_equal(q.output.astype(np.int64), q.golden_halide.astype(np.int64))
    assert q.report["bitstream_proof"]["proved"] is True
    assert q.report["power"] == r.report["power"]          # the same tiles gated
    rep = json.loads((out / "pnr_report.json").read_text())["quiet_unused"]
    flow = q.flow
    quiet = generate(flow.pipelined.packed, flow.placement, flow.pipelined.routing, r.coll,
                     power_gate=True, quiet_unused=True).quiet
    assert rep == quiet.summary()
    assert rep["forwarding_before"] > 0 and rep["forwarding_after"] == 0
    assert rep["unused_muxes"] == rep["quieted"] + rep["unquietable"]
    assert rep["quieted"] > 1000 and rep["select_changed"] > 0 and rep["constant"] > 0
    # the unused muxes no longer forward routed nets: the tiles' outputs toggle less
    # (Verilator's per-tile counts; the gated tiles toggle in neither run)
    assert 0 < q.report["toggles"]["total"] < r.report["toggles"]["total"]
    assert select_loop(r.coll, quiet.selects, quiet.selects, used_nodes(flow.pipelined.routing),
                       [tuple(xy) for xy in q.report["power"]["unused"]]) is None
    # the routed selects and the gate words are the gated run's: its words are all kept
    words = dict(flow.bitstream.pairs())
    assert all(words[a] & d == d for a, d in r.flow.bitstream.pairs())
    assert len(words) > len(r.flow.bitstream.pairs())
