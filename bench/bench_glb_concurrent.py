"""Two apps at once on the 32x16 through the GLB (issue 37, acceptance 2; AHA paper §4.4):
gaussian placed on columns 0-15 and unsharp on 16-31 (``FlowParams.columns``) of
configs/default_glb.toml, configured together through the GLB's config network and run at
once on the array RTL (Verilator); then columns 0-15 are reconfigured to brighten_blur
through the GLB (multicast to those columns only) and both halves run again.

Figures (``bench/results/glb_concurrent.csv``): configuration cycles through the GLB (both
apps; the reconfiguration) against the words written (one per cycle through today's single
port); ``bit_exact`` of every output against the numpy interpreter; ``unchanged_registers``
(the second half's config registers after the reconfiguration equal those before) and
``unchanged_output`` (unsharp's output in the second run equals the first's); compile and
simulation seconds. The bench stops with a message when an output is not bit-exact.

Run: ``.venv/bin/python bench/bench_glb_concurrent.py`` (generates build/default_glb from
build/default's modules when missing; ~5 min on 2 cores with build/default's model cached).
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
SIDE = 64
#: app -> its column range on the 32x16
RANGES = {"gaussian": (0, 16), "unsharp": (16, 32), "brighten_blur": (0, 16)}


def glb_design() -> Path:
    """build/default_glb with its [glb] table, from build/default's build cache."""
    base = default_design()
    out = ROOT / "build" / "default_glb"
    if not (out / "design.json").is_file():
        cfg = ROOT / "configs" / "default_glb.toml"
        generate(load_toml(cfg), out, rules=True, rules_dir=ROOT / "build" / "rules", jobs=2,
                 config_file="configs/default_glb.toml", cache_dir=base / ".cache",
                 glb=load_table(cfg))
    return out


def golden(app: str, images: dict[str, np.ndarray]) -> np.ndarray:
    pipe = lower_app(app, SIDE, SIDE, 1)
    return np.asarray(run_outputs(ir.narrow_pipeline(pipe, 16), images)[pipe.output])


def main() -> None:
    d = glb_design()
    p = design_glb(d)
    rows: list[dict] = []
    params = {"design": "default_glb", "size": f"{SIDE}x{SIDE}", "ranges": RANGES,
              "glb_tiles": p.tiles}
    apps = {}
    t = time.perf_counter()
    for k, (app, cols) in enumerate(RANGES.items()):
        run = ROOT / "build" / "apps" / f"glb_{app}_{cols[0]}_{cols[1]}"
        run_stages(RunParams(AppParams(app, SIDE, SIDE), d, run, FlowParams(columns=cols)),
                   "bitstream")
        img = np.random.default_rng(k).integers(0, 256, size=(SIDE, SIDE))
        apps[app] = glb_app(run, app, SIDE, SIDE, {build_app(app, SIDE, SIDE).inputs[0].name: img})
    rows.append(row(NAME, "compile_seconds", round(time.perf_counter() - t, 1), "s", params))
    harness = build_harness(d)
    work = ROOT / "build" / "apps" / "glb_concurrent"
    work.mkdir(parents=True, exist_ok=True)

    def run_array(pairs, inputs, ports, cycles):
        return run_harness(harness, pairs, inputs, ports, cycles, work, SimParams()).outputs

    def out_of(outs, a):
        return outs[a.name][a.plan.stage_of[a.plan.outputs[0][0]]]

    g, u, b = apps["gaussian"], apps["unsharp"], apps["brighten_blur"]
    arr = GlbArray(p, 16)
    first = g.flow.bitstream.pairs() + u.flow.bitstream.pairs()
    cfg = arr.configure(first)
    rows.append(row(NAME, "config_cycles_both", cfg.cycles, "cycles", params))
    rows.append(row(NAME, "config_words_both", len(first), "words", params))
    t = time.perf_counter()
    out1 = arr.run([g, u], run_array)
    rows.append(row(NAME, "run_seconds_both", round(time.perf_counter() - t, 1), "s", params))
    for a in (g, u):
        ok = bool(np.array_equal(out_of(out1, a), golden(a.name, a.images)))
        rows.append(row(NAME, "bit_exact", ok, "bool", {**params, "app": a.name, "run": 1}))
        if not ok:
            sys.exit(f"{a.name}: not bit-exact on columns {RANGES[a.name]}")
    words = reconfiguration(g.flow.bitstream.pairs(), b.flow.bitstream.pairs())
    multi = simulate(p, words, 16, "multicast", source=0, columns=(0, 15))
    before = {a: v for a, v in arr.state.items() if (a >> 8) & 0xFF >= 16}
    rc = arr.configure(words)
    rows.append(row(NAME, "reconfig_cycles", rc.cycles, "cycles", params))
    rows.append(row(NAME, "reconfig_multicast_cycles", multi.cycles, "cycles", params))
    rows.append(row(NAME, "reconfig_words", len(words), "words", params))
    after = {a: v for a, v in arr.state.items() if (a >> 8) & 0xFF >= 16}
    rows.append(row(NAME, "unchanged_registers", after == before, "bool", params))
    out2 = arr.run([b, u], run_array)
    ok = bool(np.array_equal(out_of(out2, b), golden(b.name, b.images)))
    rows.append(row(NAME, "bit_exact", ok, "bool", {**params, "app": b.name, "run": 2}))
    same = bool(np.array_equal(out_of(out2, u), out_of(out1, u)))
    rows.append(row(NAME, "unchanged_output", same, "bool", {**params, "app": u.name}))
    save_rows(NAME, rows)
    if not (ok and same and after == before):
        sys.exit("the reconfiguration of columns 0-15 disturbed columns 16-31 or brighten_blur "
                 "is not bit-exact")


if __name__ == "__main__":
    main()
