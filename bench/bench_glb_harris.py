"""harris through the GLB on the 32x16 (issue 37, acceptance 1 and 4; AHA paper §4.4,
Fig. 12): configs/default_glb.toml, run on its system top (the array, with a config path
per column, and its GLB in one Verilator model). `cgra run harris` drives only the GLB's host
and control ports: the config streamers write the array's registers over the column paths,
a load DMA streams the image in and a store DMA the output back, which the host reads;
bit-exact with numpy and Halide; then the host API's Verilator platform runs the same
program on a second image.

Figures (``bench/results/glb_harris.csv``): config cycles through the GLB (unicast + row
multicast) and through a single port (one word per cycle), their ratio (AHA: 20.7x; the
acceptance asks >= 10x), the cycles from the first bundle on a column path to the last register
written (RTL), ``bit_exact`` of `cgra run` and of the host API's image, the 32x16
model's build seconds (cold on its first run) and the run's seconds. The bench stops with a
message when an output is not bit-exact or the ratio is under 10.

Run: ``.venv/bin/python bench/bench_glb_harris.py`` (~4 min on 2 cores on a cold model).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_glb_concurrent import glb_design  # noqa: E402
from benchlib import row, save_rows  # noqa: E402
from mapper import ir  # noqa: E402
from mapper.apps import build_app, lower_app  # noqa: E402
from mapper.flow import run_app  # noqa: E402
from mapper.interp import run_outputs  # noqa: E402
from mapper.params import AppParams, RunParams  # noqa: E402
from runtime import CommandQueue, Context, get_device  # noqa: E402

NAME = "glb_harris"
SIDE = 64


def main() -> None:
    d = glb_design()
    params = {"design": "default_glb", "app": "harris", "size": f"{SIDE}x{SIDE}"}
    rows: list[dict] = []
    t = time.perf_counter()
    run = run_app(RunParams(AppParams("harris", SIDE, SIDE), d,
                            ROOT / "build" / "apps" / "glb_harris"))
    rows.append(row(NAME, "cgra_run_seconds", round(time.perf_counter() - t, 1), "s", params))
    rep = run.report
    c = rep["glb"]["config"]
    rows.append(row(NAME, "verilator_build_seconds",
                    rep["stage_seconds"].get("verilator_build", 0.0), "s", params))
    rows.append(row(NAME, "config_cycles_glb", c["cycles"], "cycles", params))
    rows.append(row(NAME, "config_cycles_single_port", c["single_port_cycles"], "cycles",
                    params))
    ratio = c["single_port_cycles"] / c["cycles"]
    rows.append(row(NAME, "config_speedup", round(ratio, 2), "x", params))
    rows.append(row(NAME, "config_array_cycles", c["array_cycles"], "cycles",
                    {**params, "through": c["through"]}))
    exact = rep["match"] == {"numpy": True, "halide": True}
    rows.append(row(NAME, "bit_exact_cgra_run", exact, "bool", params))
    # the host API on the same program, another image
    dev = get_device("cgra-gen", "verilator", "1")
    ctx = Context(dev)
    prog = ctx.program(run.out_dir)
    img = np.random.default_rng(37).integers(0, 256, size=(SIDE, SIDE))
    name = build_app("harris", SIDE, SIDE).inputs[0].name
    pipe = lower_app("harris", SIDE, SIDE, 1)
    want = np.asarray(run_outputs(ir.narrow_pipeline(pipe, 16), {name: img})[pipe.output])
    q = CommandQueue(ctx)
    bi, bo = ctx.buffer((SIDE, SIDE)), ctx.buffer(want.shape)
    q.write(bi, img)
    q.run(prog, {name: bi}, bo)
    out = q.read(bo).wait().result
    api = bool(np.array_equal(out, want & 0xFFFF))
    rows.append(row(NAME, "bit_exact_host_api", api, "bool", {**params, "seed": 37}))
    save_rows(NAME, rows)
    if not (exact and api and ratio >= 10):
        sys.exit(f"harris through the GLB: bit-exact {exact} (cgra run), {api} (host API); "
                 f"config {ratio:.1f}x faster than one port (>= 10 wanted)")


if __name__ == "__main__":
    main()
