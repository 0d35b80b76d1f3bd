"""End to end on the 8x8 design: apps mapped by the compiler run on the generated RTL in
Verilator (configured over the config bus only) and match both golden models bit-exactly."""
from __future__ import annotations

import numpy as np
import pytest

from cgra.errors import CgraError, SimulationError

APPS = ("pointwise", "brighten_blur", "gaussian", "gaussian_edge")
#: output domain of each app on a 64x64 input (stencil footprint minus one per stage; the
#: clamp-to-edge gaussian keeps the input size)
OUT_SHAPE = {"pointwise": (64, 64), "brighten_blur": (63, 63), "gaussian": (62, 62),
             "gaussian_edge": (64, 64)}


#: tiles of the 8x8 (64) each app leaves gated at least: gaussian's 18 PEs, 2 MEMs, 2 IOs and
#: their routes keep about 25-35 tiles on
GATED_AT_LEAST = {"pointwise": 50, "brighten_blur": 30, "gaussian": 24, "gaussian_edge": 16,
                  "color_correct": 16}


@pytest.mark.parametrize("app", APPS)
def test_app_matches_both_golden_models(app_run, assert_gated, app):
    from mapper.images import camera_crop

    r = app_run(app)
    assert_gated(r, GATED_AT_LEAST[app])     # bit-exact with every unused tile gated
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
    for f in (f"{app}.png", "input.png", "compare.png", "pnr.png", "run_report.json",
              f"{app}.bs", "pnr_report.json", "netlist.json", "packed.json", "placement.json",
              f"{app}.place", "routing.json", f"{app}.route", "pipelined.json",
              "bitstream.json"):
        assert (r.out_dir / f).is_file(), f
    # the output PNG is 8-bit greyscale when the values fit (a viewer shows it correctly)
    from PIL import Image
    with Image.open(r.out_dir / f"{app}.png") as im:
        assert im.mode == "L" and im.size == (OUT_SHAPE[app][1], OUT_SHAPE[app][0])


def test_pointwise_known_answer(app_run):
    """pointwise = in * 2 + 1 (16-bit wrap-around), checked on the raw pixels."""
    r = app_run("pointwise")
    want = (r.image.astype(np.int64) * 2 + 1) & 0xFFFF
    assert np.array_equal(r.output.astype(np.int64), want)


def test_several_outputs_stream_out_on_their_own_io_tiles(app_run, assert_gated):
    """color_correct: three output Funcs (red, green, blue), each streamed on its own IO tile
    and compared with both golden models (run_sim raises on any mismatch), every unused tile
    gated."""
    r = app_run("color_correct")
    assert_gated(r, GATED_AT_LEAST["color_correct"])
    assert list(r.outputs) == ["red", "green", "blue"]
    assert all(a.shape == (32, 32) for a in r.outputs.values())
    assert np.array_equal(r.output, r.outputs["red"])
    assert r.report["outputs"] == {"red": [32, 32], "green": [32, 32], "blue": [32, 32]}
    sites = r.flow.placement.sites
    outs = [n for n, i in r.flow.pipelined.packed.instances.items() if i.kind == "io_out"]
    assert len(outs) == 3 and len({sites[n] for n in outs}) == 3
    for name in ("red", "green", "blue"):
        assert (r.out_dir / f"color_correct_{name}.png").is_file()
    # the planes differ (a colour image), and each follows the camera image
    assert not np.array_equal(r.outputs["red"], r.outputs["blue"])
    assert all(len(np.unique(a)) > 20 for a in r.outputs.values())


@pytest.mark.parametrize("app", APPS)
def test_pnr_invariants(app_run, small_design, app):
    from mapper.collateral import load_collateral
    from mapper.backend.checks import check_balanced
    from mapper.backend.place import check_placement
    from mapper.backend.route import check_routing

    r = app_run(app)
    coll = load_collateral(small_design)
    graphs = coll.graphs
    flow = r.flow
    check_placement(flow.packed, flow.placement, coll)
    check_routing(flow.routing, coll)
    check_routing(flow.pipelined.routing, coll)
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


def _compile(design, out, app="gaussian", seed=0, **kw):
    from mapper.params import AppParams, FlowParams, RunParams
    from mapper.flow import run_stages
    from mapper.backend.place import PlaceParams

    return run_stages(RunParams(AppParams(app, 64, 64, **kw), design, out,
                                FlowParams(place=PlaceParams(seed=seed))), "bitstream")


def test_same_seed_same_bitstream(small_design, tmp_path):
    a = _compile(small_design, tmp_path / "a", seed=7)
    b = _compile(small_design, tmp_path / "b", seed=7)
    assert a.pairs() == b.pairs() and len(a.pairs()) > 20
    assert (tmp_path / "a" / "gaussian.bs").read_bytes() == (tmp_path / "b" /
                                                              "gaussian.bs").read_bytes()


def test_too_large_app_names_the_resource(small_design, tmp_path):
    with pytest.raises(CgraError) as e:
        _compile(small_design, tmp_path, unroll=16)
    # 16 lanes: 16 copies of the 18-PE kernel (246 PEs with the lanes' shared adds) do not
    # fit; the lower bound (ops over the largest rule) refuses it before memory mapping
    assert str(e.value).startswith("gaussian at unroll 16 needs at least 115 PE tiles (its "
                                   "kernels' ops over the largest rule) but design small "
                                   "(8x8) has 42; use a smaller unroll")
    assert not (tmp_path / "netlist.json").exists()
    with pytest.raises(CgraError) as e:          # 8 lanes fit the PEs but not the IO row
        _compile(small_design, tmp_path / "p", unroll=8, app="pointwise")
    assert "design pointwise needs 16 16-bit IO site(s) (tag 'I') but the array has 8" in \
        str(e.value)


def test_mismatch_names_first_pixel(app_run, harness, tmp_path):
    """A corrupted bitstream (the ALU opcode of the PE driving pointwise's output flipped in its
    instruction register) is caught, and the error names the first differing pixel with the
    expected and the simulated value."""
    from mapper.sim.run import check_output
    from mapper.sim.verilator import run_harness

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


def _cgra(*args, cwd=None):
    import subprocess
    import sys
    from pathlib import Path

    return subprocess.run([str(Path(sys.executable).with_name("cgra")), *map(str, args)],
                          capture_output=True, text=True, cwd=cwd)


def test_cli_run(small_design, harness, tmp_path):
    import json

    res = _cgra("run", "pointwise", "--design", small_design, "--out", tmp_path, "--seed", 1,
                "--size", 32)
    assert res.returncode == 0, res.stderr
    assert (f"pointwise on design small ({small_design}, 8x8): 32x32 output matches numpy and "
            f"Halide bit-exactly") in res.stdout
    rep = json.loads((tmp_path / "run_report.json").read_text())
    assert rep["size"] == [32, 32] and rep["seed"] == 1
    assert rep["verilator"]["cached"] is True
    for k in ("map", "place", "route", "pipeline", "bitstream", "simulation"):
        assert k in rep["stage_seconds"]


def test_alpha_sweep_run_keeps_the_best_and_runs_bit_exact(small_design, harness, tmp_path):
    """`cgra run --alpha-sweep` leaves the kept exponent's files in the run directory (the
    placement was placed with it, the report names it) and that design runs bit-exact."""
    import json

    res = _cgra("run", "gaussian", "--design", small_design, "--out", tmp_path, "--seed", 2,
                "--fmax", 900, "--alpha-sweep", "2,1")
    assert res.returncode == 0, res.stderr
    assert "matches numpy and Halide bit-exactly" in res.stdout
    rep = json.loads((tmp_path / "pnr_report.json").read_text())
    table = rep["alpha_sweep"]
    assert [r["alpha"] for r in table] == [2.0, 1.0] and sum(r["kept"] for r in table) == 1
    kept = next(r for r in table if r["kept"])
    assert kept["fmax_mhz"] == max(r["fmax_mhz"] for r in table)
    assert rep["timing"]["fmax_mhz"] == kept["fmax_mhz"]
    placed = json.loads((tmp_path / "placement.json").read_text())
    assert (placed["alpha"], placed["seed"]) == (kept["alpha"], kept["seed"])


def test_missed_clock_target_keeps_the_best_placement_on_disk(small_design, tmp_path,
                                                              monkeypatch):
    """A target no placement meets: every attempt is tried (timing_attempts), the files on
    disk are the highest-Fmax attempt's, and the misses are reported. The kept attempt's
    files are written from memory: each seed is placed, routed and pipelined exactly once,
    whichever attempt is kept (issue 38, item 2), and the files it leaves load back as the
    kept design."""
    import json

    from mapper import flow as F
    from mapper.params import AppParams, FlowParams, RunParams
    from mapper.backend.pipeline import PipelineParams
    from mapper.backend.place import PlaceParams
    from mapper.stages import load_flow, open_design

    seeds: list[tuple[int, str]] = []
    real = F.pipeline

    def spy(packed, pl, rr, coll, params=None):
        seeds.append((pl.seed, pl.method))
        return real(packed, pl, rr, coll, params)

    monkeypatch.setattr(F, "pipeline", spy)
    out = F.run_stages(RunParams(AppParams("gaussian", 64, 64), small_design, tmp_path,
                                 FlowParams(place=PlaceParams(seed=5), timing_attempts=2,
                                            pipeline=PipelineParams(register_pe_inputs=True,
                                                                    target_period_ps=20.0))),
                       "pipeline")
    # the analytical placement, then annealing alone from the same seed; none run twice
    assert seeds == [(5, "cg+sa"), (5, "sa")]
    rep = json.loads((tmp_path / "pnr_report.json").read_text())
    (miss,) = rep["placement_attempts"]
    assert miss["stage"] == "timing" and "< 50000 MHz" in miss["error"]
    assert "no register site on it" in miss["error"]            # what it lacks (issue 41)
    placed = json.loads((tmp_path / "placement.json").read_text())
    kept_attempt = (placed["seed"], "analytical" if placed["method"] == "cg+sa" else "sa")
    assert placed["seed"] == 5 and kept_attempt != (miss["seed"], miss["placer"])
    missed_mhz = float(miss["error"].split()[1])
    assert out.timing.fmax_mhz >= missed_mhz
    assert rep["timing"]["fmax_mhz"] == pytest.approx(out.timing.fmax_mhz, abs=0.01)
    # the files on disk chain (each stage's header names its input's bytes) and hold the
    # kept design
    kept = load_flow(tmp_path, open_design(tmp_path))
    assert kept.placement.seed == placed["seed"]
    assert kept.pipelined.timing.fmax_mhz == pytest.approx(out.timing.fmax_mhz, abs=1e-6)
    assert kept.pipelined.enabled_regs == out.enabled_regs


def test_stages_by_hand_equal_cgra_run_and_resume(small_design, harness, tmp_path):
    """`cgra map/pack/place/route/pipeline/bitstream/sim` chained by hand give the bitstream
    of `cgra run` with the same seed; `cgra run --from route` resumes from the saved placement
    and gives it again; a stage whose input changed is refused as stale."""
    import json

    auto, hand = tmp_path / "auto", tmp_path / "hand"
    r = _cgra("run", "gaussian", "--design", small_design, "--out", auto, "--seed", 3)
    assert r.returncode == 0, r.stderr
    steps = [("map", "gaussian", "--design", small_design, "--out", hand, "--vectors", 0),
             ("pack", hand), ("place", hand, "--seed", 3), ("route", hand), ("pipeline", hand),
             ("bitstream", hand), ("sim", hand)]
    for s in steps:
        r = _cgra(*s)
        assert r.returncode == 0, (s, r.stderr)
    bs = (auto / "gaussian.bs").read_bytes()
    assert (hand / "gaussian.bs").read_bytes() == bs
    assert json.loads((hand / "placement.json").read_text())["sites"] == \
        json.loads((auto / "placement.json").read_text())["sites"]
    (auto / "gaussian.bs").unlink()
    r = _cgra("run", "gaussian", "--design", small_design, "--out", auto, "--from", "route")
    assert r.returncode == 0, r.stderr
    assert (auto / "gaussian.bs").read_bytes() == bs
    # a placement edited after routing: the next stage refuses the stale routing
    p = hand / "placement.json"
    p.write_text(p.read_text().replace('"seed": 3', '"seed": 4'))
    r = _cgra("pipeline", hand)
    assert r.returncode == 2
    assert "routing.json is stale: its input placement.json changed" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_tampered_collateral_is_refused_by_cgra_run(small_design, tmp_path):
    """(acceptance) a collateral file changed after `cgra rtl`: `cgra run` exits 2 with a
    one-line stale-collateral error and writes nothing."""
    import shutil

    d = tmp_path / "small"
    shutil.copytree(small_design, d, ignore=shutil.ignore_patterns("sim"))
    g = d / "routing" / "graph_16.json"
    g.write_bytes(g.read_bytes().replace(b'"delay_ps":[', b'"delay_ps":[1.0,', 1))
    out = tmp_path / "out"
    r = _cgra("run", "pointwise", "--design", d, "--out", out)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith(
        f"error: {g} was modified after `cgra rtl` wrote it")
    assert not out.exists()


@pytest.mark.parametrize("image", ["astronaut", "file"])
def test_run_on_other_images(small_design, harness, tmp_path, image):
    """`--image astronaut` (a scikit-image sample) and `--image <file.png>` run bit-exact."""
    import json

    from PIL import Image

    src = image
    if image == "file":
        rng = np.random.default_rng(5)
        src = tmp_path / "noise.png"
        Image.fromarray(rng.integers(0, 256, (40, 40), dtype=np.uint8)).save(src)
    r = _cgra("run", "brighten_blur", "--design", small_design, "--out", tmp_path / "o",
              "--image", src, "--size", 32)
    assert r.returncode == 0, r.stderr
    assert "matches numpy and Halide bit-exactly" in r.stdout
    assert json.loads((tmp_path / "o" / "run_report.json").read_text())["image"] == str(src)


def test_cgra_verify_proves_the_run_and_rejects_a_tampered_bitstream(app_run, small_design,
                                                                     tmp_path):
    """`cgra verify DESIGN BITSTREAM` proves a run's bitstream (exit 0); the same bitstream
    with one connection-box select changed exits 2 with one line naming the net, the node and
    the field, and `cgra sim` refuses it before building anything."""
    import shutil

    from canal.smt import encode_selects
    from mapper.backend.bitstream import parse_text
    from mapper.collateral import load_collateral
    from mapper.backend.verify import model_of

    run = app_run("gaussian")
    assert run.report["bitstream_proof"]["proved"] is True
    assert run.report["bitstream_proof"]["nets"] == len(run.flow.pipelined.routing.nets)
    r = _cgra("verify", small_design, run.out_dir / "gaussian.bs")
    assert r.returncode == 0, r.stderr
    assert f"proved for {len(run.flow.pipelined.routing.nets)} nets" in r.stdout

    d = tmp_path / "run"
    shutil.copytree(run.out_dir, d)
    model = model_of(load_collateral(small_design))
    net, path = next((n, p) for n, rt in run.flow.pipelined.routing.nets.items()
                     for p in rt.paths.values() if len(model.fanin[p[-1]]) > 1)
    sink, pred = path[-1], path[-2]
    right = model.fanin[sink].index(pred)
    wrong = (right + 1) % len(model.fanin[sink])
    words = parse_text((d / "gaussian.bs").read_text())
    (d / "gaussian.bs").write_text("".join(f"{a:08X} {v:08X}\n" for a, v in
                                           encode_selects({sink: wrong}, model.spots, words)))
    r = _cgra("verify", small_design, d / "gaussian.bs")
    assert r.returncode == 2
    [line] = r.stderr.strip().splitlines()
    assert line.startswith(f"error: bitstream does not realise net {net}: node {sink} has "
                           f"select field {model.field_name(sink)} = {wrong}")
    assert f"the route needs {right} (fan-in {pred})" in line
    # bitstream.json is what `cgra sim` loads: tamper it the same way
    import json
    doc = json.loads((d / "bitstream.json").read_text())
    spot = model.spots[sink][0]
    for e in doc["entries"]:
        if int(e["addr"], 16) == spot.addr:
            e["data"] = f"{dict(encode_selects({sink: wrong}, model.spots, words))[spot.addr]:08X}"
    (d / "bitstream.json").write_text(json.dumps(doc))
    (d / "run_report.json").unlink()
    r = _cgra("sim", d)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith(
        f"error: bitstream does not realise net {net}: node {sink}")
    assert not (d / "run_report.json").exists()
