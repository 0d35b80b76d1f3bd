"""Power domains, power-aware routing and the energy estimate (issue 36 items 2-4; AHA paper
§4.3, §5.5), per app and placement seed on one array:

* **plain**: the default flow (every tile on, plain PathFinder costs);
* **power**: power-aware routing (``RouterParams.power_cost`` = ``--power-cost``, default
  :data:`mapper.backend.route.POWER_AWARE_COST`), every unused tile gated by the
  bitstream (``FlowParams.power_gate``) and the unused muxes of the on tiles quieted
  (``FlowParams.quiet_unused``, :mod:`mapper.backend.quiet`).

Both run through Verilator (bit-exact against both golden models, or the run fails) with
the energy estimate (:mod:`mapper.sim.energy`, a model: yosys cell counts x the cited
per-cell table of ``mapper/data/energy.json``, activity from the Verilator run). Figures
per run: tiles used (plain) / on (power), tiles gated, wirelength (track segments), Fmax
(MHz), energy per output pixel (pJ; dynamic, leakage, total) as run and, from the same
activity, with the other power state (``ungated`` of the power run = every tile on); for
the power run the unused muxes quieted and unquietable and those forwarding a routed net
before / after quieting; the bit toggles of all tile outputs over the run (Verilator's
per-tile counts, ``toggles_total``) and the tiles whose outputs switched.

**Boundary isolation** (AHA §4.3: isolation cells at every input of a power domain cost 9 %
of the tile, isolation through the existing switch- and connection-box muxes 1 %), from
yosys cell counts of each distinct tile module of the design
(:func:`garnet.cells.isolation_overhead`): the overhead of the project's output clamps, of an
AND cell on every data input bit, and of forcing the select of every boundary mux, per tile
module and over the array (weighted by tile instances), in % of cells and of NAND2 area.
``--isolation-only`` gives these rows alone (no app run).

The designs are generated into ``build/power/<config>`` (this bench's own directory, so a
design another job uses in ``build/`` is never regenerated underneath it).

    .venv/bin/python bench/bench_power.py [--config default] [--apps a,b] [--seeds 0,1]
                                          [--fmax 900] [--power-cost 4] [--isolation-only]
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from benchlib import row, save_rows
from cgra.errors import CgraError
from garnet.build import generate
from garnet.cells import isolation_overhead, tile_modules
from garnet.params import load_toml
from garnet.sta.verilog import modules
from mapper.backend.pipeline import PipelineParams
from mapper.backend.place import PlaceParams
from mapper.backend.route import POWER_AWARE_COST, RouterParams
from mapper.flow import run_app
from mapper.params import AppParams, FlowParams, RunParams, SimOptions

ROOT = Path(__file__).resolve().parents[1]
APPS = ("gaussian", "unsharp", "harris", "camera_pipeline")


def design(config: str) -> Path:
    """``build/power/<config>`` from ``configs/<config>.toml`` with its rules (generated
    when missing)."""
    d = ROOT / "build" / "power" / config
    if not (d / "design.json").is_file():
        generate(load_toml(ROOT / "configs" / f"{config}.toml"), d, rules=True,
                 rules_dir=ROOT / "build" / "rules", jobs=2,
                 config_file=f"configs/{config}.toml")
    return d


def run(d: Path, app: str, seed: int, power: bool, cost: float, fmax: float | None,
        tmp: Path) -> dict:
    """One run's figures (``ok`` False with the error when the flow failed)."""
    pipe = (PipelineParams(register_pe_inputs=True, auto_target=True) if fmax is None
            else PipelineParams(register_pe_inputs=True, target_period_ps=1e6 / fmax))
    flow = FlowParams(place=PlaceParams(seed=seed), pipeline=pipe,
                      route=RouterParams(power_cost=cost if power else 1.0), power_gate=power,
                      quiet_unused=power)
    out = tmp / f"{app}_s{seed}_{'power' if power else 'plain'}"
    t = time.perf_counter()
    try:
        r = run_app(RunParams(AppParams(app, 64, 64), d, out, flow, SimOptions(energy=True)))
    except CgraError as exc:
        return {"ok": False, "error": str(exc)[:200]}
    rep = r.report
    pw, e = rep["power"], rep["energy"]
    quiet = json.loads((out / "pnr_report.json").read_text()).get("quiet_unused") or {}
    return {"ok": rep["match"] == {"numpy": True, "halide": True},
            "tiles_used": pw["tiles_used"], "tiles_on": pw["tiles_on"],
            "tiles_gated": pw["tiles_gated"], "domains": pw["domains"],
            "wirelength": rep["wirelength_total"], "fmax": rep["timing"]["fmax_mhz"],
            "dynamic": e["dynamic_pj_per_pixel"], "leakage": e["leakage_pj_per_pixel"],
            "total": e["total_pj_per_pixel"], "total_ungated": e["ungated"]["total_pj_per_pixel"],
            "total_all_unused_gated": e["all_unused_gated"]["total_pj_per_pixel"],
            "toggle_rate": e["toggle_rate"], "seconds": round(time.perf_counter() - t, 1),
            "toggles_total": e["toggles_total"],
            "tiles_switching": sum(1 for p in e["per_tile"] if p["toggles"]),
            "quiet": quiet}


def isolation_rows(d: Path, config: str) -> list[dict]:
    """The boundary-isolation rows (module docstring) of design ``d``; yosys counts cached
    under ``build/power/cells``."""
    mods = modules(d / "rtl")
    counts = tile_modules(d)
    rows, tot = [], {v: [0.0, 0.0] for v in ("none", "clamp", "explicit", "mux")}
    for mod in sorted(counts):
        r = isolation_overhead(mods, mod, ROOT / "build" / "power" / "cells", str(d))
        p = {"config": config, "tile": mod, "instances": counts[mod],
             "data_input_bits": r["data_input_bits"], "muxes_forced": r["muxes_forced"],
             "inputs_explicit": r["inputs_explicit"],
             "cells_none": r["variants"]["none"]["cells"],
             "model": "yosys generic cells x NanGate 45 nm X1 areas (garnet.cells)"}
        for v, pct in r["overhead_pct"].items():
            rows.append(row("power", f"isolation_{v}_pct_area", pct["nand2"], "% NAND2 area",
                            p))
            rows.append(row("power", f"isolation_{v}_pct_cells", pct["cells"], "% cells", p))
        for v in tot:
            tot[v][0] += counts[mod] * r["variants"][v]["cells"]
            tot[v][1] += counts[mod] * r["variants"][v]["nand2"]
    p = {"config": config, "tile": "array", "instances": sum(counts.values()),
         "model": "yosys generic cells x NanGate 45 nm X1 areas (garnet.cells)"}
    for v in ("clamp", "explicit", "mux"):
        rows.append(row("power", f"isolation_{v}_pct_area",
                        round(100 * (tot[v][1] - tot["none"][1]) / tot["none"][1], 3),
                        "% NAND2 area", p))
        rows.append(row("power", f"isolation_{v}_pct_cells",
                        round(100 * (tot[v][0] - tot["none"][0]) / tot["none"][0], 3),
                        "% cells", p))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="default", help="configs/<name>.toml (default 32x16)")
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--fmax", type=float, default=900.0,
                    help="pipelining target (MHz), as `cgra run --fmax`")
    ap.add_argument("--power-cost", type=float, default=POWER_AWARE_COST)
    ap.add_argument("--isolation-only", action="store_true",
                    help="only the boundary-isolation rows (yosys), no app run")
    a = ap.parse_args()
    d = design(a.config)
    rows = isolation_rows(d, a.config)
    if a.isolation_only:
        print(f"saved {save_rows('power', rows)}")
        return
    with tempfile.TemporaryDirectory(prefix="bench-power-") as tmp:
        for app in a.apps.split(","):
            for seed in (int(s) for s in a.seeds.split(",")):
                res = {k: run(d, app, seed, k == "power", a.power_cost, a.fmax, Path(tmp))
                       for k in ("plain", "power")}
                params = {"app": app, "seed": seed, "config": a.config, "fmax_target": a.fmax,
                          "power_cost": a.power_cost, "size": 64}
                for k, r in res.items():
                    if not r["ok"]:
                        rows.append(row("power", f"{k}_failed", 1, "run",
                                        {**params, "error": r.get("error", "mismatch")}))
                        continue
                    p = {**params, "flow": k}
                    rows += [row("power", "tiles_on", r["tiles_on"], "tiles", p),
                             row("power", "tiles_used", r["tiles_used"], "tiles", p),
                             row("power", "tiles_gated", r["tiles_gated"], "tiles", p),
                             row("power", "wirelength", r["wirelength"], "segments", p),
                             row("power", "fmax", r["fmax"], "MHz", p),
                             row("power", "energy_dynamic", r["dynamic"], "pJ/pixel", p),
                             row("power", "energy_leakage", r["leakage"], "pJ/pixel", p),
                             row("power", "energy_total", r["total"], "pJ/pixel", p),
                             row("power", "energy_total_ungated", r["total_ungated"],
                                 "pJ/pixel", p),
                             row("power", "energy_total_unused_gated",
                                 r["total_all_unused_gated"], "pJ/pixel", p),
                             row("power", "toggle_rate", r["toggle_rate"], "toggles/bit/cycle",
                                 p),
                             row("power", "toggles_total", r["toggles_total"], "bit toggles",
                                 p),
                             row("power", "tiles_switching", r["tiles_switching"], "tiles", p),
                             row("power", "seconds", r["seconds"], "s", p)]
                    rows += [row("power", f"muxes_{f}", r["quiet"][f], "muxes", p)
                             for f in ("quieted", "unquietable", "forwarding_before",
                                       "forwarding_after") if f in r["quiet"]]
    print(f"saved {save_rows('power', rows)}")


if __name__ == "__main__":
    main()
