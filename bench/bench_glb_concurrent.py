"""Two apps at once on the 32x16 through the GLB, one half reconfigured while the other runs
(issue 37, acceptance 2; AHA paper §4.4), in one run of the system top (the array and its GLB
in one Verilator model, driven only through the GLB's host and control ports): gaussian
placed on columns 0-15 and unsharp on 16-31 (``FlowParams.columns``) of
configs/default_glb.toml, configured together by the GLB's config streamers over the
array's column config paths, their images streamed by the load DMAs; when gaussian has
streamed its image, columns 0-15 are stalled, their output read back, reconfigured to
brighten_blur through the GLB, flushed and restarted, while unsharp (a taller image) keeps
streaming on 16-31 (:meth:`mapper.sim.glb.GlbArray.run_live`).

Figures (``bench/results/glb_concurrent.csv``): configuration cycles through the GLB (both
apps; the reconfiguration) against the words written (one per cycle through a single
port); the cycles the reconfiguration holds columns 0-15 (stall to restart: read-back,
configuration, the next image written); ``bit_exact`` of every output against the numpy
interpreter (unsharp's across the reconfiguration); compile, model build and run seconds.
The bench stops with a message when an output is not bit-exact.

Run: ``.venv/bin/python bench/bench_glb_concurrent.py`` (brings build/default_glb up to date
from build/default's modules; its first run builds the 32x16 system model, ~2 min on 2 cores).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from benchlib import default_design, row, save_rows  # noqa: E402
from garnet.build import generate  # noqa: E402
from garnet.glb.confignet import simulate  # noqa: E402
from garnet.glb.params import load_table  # noqa: E402
from garnet.params import load_toml  # noqa: E402
from mapper import ir  # noqa: E402
from mapper.apps import build_app, lower_app  # noqa: E402
from mapper.flow import run_stages  # noqa: E402
from mapper.interp import run_outputs  # noqa: E402
from mapper.params import AppParams, FlowParams, RunParams  # noqa: E402
from mapper.sim.glb import GlbArray, design_glb, reconfiguration  # noqa: E402
from mapper.sim.run import glb_app  # noqa: E402
from mapper.sim.verilator import SimParams, build_harness, run_harness  # noqa: E402

NAME = "glb_concurrent"
#: app -> (column range on the 32x16, image width x height): unsharp's taller image keeps it
#: streaming across the reconfiguration of columns 0-15
RANGES = {"gaussian": (0, 16, 64, 64), "unsharp": (16, 32, 64, 176),
          "brighten_blur": (0, 16, 64, 64)}


def glb_design() -> Path:
    """build/default_glb with its [glb] table, from build/default's build cache, brought up
    to date (incremental: well under a second when nothing changed)."""
    base = default_design()
    out = ROOT / "build" / "default_glb"
    cfg = ROOT / "configs" / "default_glb.toml"
    generate(load_toml(cfg), out, rules=True, rules_dir=ROOT / "build" / "rules", jobs=2,
             config_file="configs/default_glb.toml", cache_dir=base / ".cache",
             glb=load_table(cfg))
    return out


def golden(app: str, images: dict[str, np.ndarray]) -> np.ndarray:
    _lo, _hi, w, h = RANGES[app]
    pipe = lower_app(app, w, h, 1)
    return np.asarray(run_outputs(ir.narrow_pipeline(pipe, 16), images)[pipe.output])


def main() -> None:
    d = glb_design()
    p = design_glb(d)
    rows: list[dict] = []
    params = {"design": "default_glb", "ranges": RANGES, "glb_tiles": p.tiles}
    apps = {}
    t = time.perf_counter()
    for k, (app, (lo, hi, w, h)) in enumerate(RANGES.items()):
        run = ROOT / "build" / "apps" / f"glb_{app}_{lo}_{hi}_{w}x{h}"
        run_stages(RunParams(AppParams(app, w, h), d, run, FlowParams(columns=(lo, hi))),
                   "bitstream")
        img = np.random.default_rng(k).integers(0, 256, size=(h, w))
        apps[app] = glb_app(run, app, w, h, {build_app(app, w, h).inputs[0].name: img})
    rows.append(row(NAME, "compile_seconds", round(time.perf_counter() - t, 1), "s", params))
    t = time.perf_counter()
    sim = SimParams(system=True)
    harness = build_harness(d, sim)
    rows.append(row(NAME, "verilator_build_seconds", round(time.perf_counter() - t, 1), "s",
                    {**params, "cached": harness.cached}))
    work = ROOT / "build" / "apps" / "glb_concurrent"
    work.mkdir(parents=True, exist_ok=True)

    def run_system(inputs, ports, cycles):
        return run_harness(harness, [], inputs, ports, cycles, work, sim).outputs

    def out_of(outs, a):
        return outs[a.name][a.plan.stage_of[a.plan.outputs[0][0]]]

    g, u, b = apps["gaussian"], apps["unsharp"], apps["brighten_blur"]
    first = g.flow.bitstream.pairs() + u.flow.bitstream.pairs()
    words = reconfiguration(g.flow.bitstream.pairs(), b.flow.bitstream.pairs())
    multi = simulate(p, words, 16, "multicast", source=0, columns=(0, 15))
    arr = GlbArray(p, 16)
    t = time.perf_counter()
    live = arr.run_live([g, u], g, b, run_system, 32, harness.flush_wait, harness.outputs)
    rows.append(row(NAME, "run_seconds", round(time.perf_counter() - t, 1), "s",
                    {**params, "cycles": live.cycles}))
    both = simulate(p, first, 16, "unicast", row_multicast=True)
    rows.append(row(NAME, "config_cycles_both", both.cycles, "cycles", params))
    rows.append(row(NAME, "config_words_both", len(first), "words", params))
    rows.append(row(NAME, "reconfig_cycles", simulate(p, words, 16, "unicast",
                                                      row_multicast=True).cycles, "cycles",
                    params))
    rows.append(row(NAME, "reconfig_multicast_cycles", multi.cycles, "cycles", params))
    rows.append(row(NAME, "reconfig_words", len(words), "words", params))
    rows.append(row(NAME, "reconfig_stall_cycles", live.start[b.name] - live.reconfigure,
                    "cycles", {**params, "columns": live.columns}))
    spans = live.start[u.name] < live.reconfigure and \
        live.start[b.name] + b.plan.cycles <= live.start[u.name] + u.plan.cycles
    rows.append(row(NAME, "other_half_streams_across", spans, "bool", params))
    ok = spans
    for a in (g, u, b):
        exact = bool(np.array_equal(out_of(live.outputs, a), golden(a.name, a.images)))
        rows.append(row(NAME, "bit_exact", exact, "bool", {**params, "app": a.name,
                                                            "start": live.start[a.name]}))
        ok = ok and exact
    save_rows(NAME, rows)
    if not ok:
        sys.exit("an app is not bit-exact, or unsharp did not stream across the "
                 "reconfiguration of columns 0-15")


if __name__ == "__main__":
    main()
