"""Back-end passes that are options (issue 41, items 4 and 9): the default pipelining target,
broadcast register trees, and the closing sweep of laplacian_pyramid.

For the five README apps on the designs the Makefile gives them (gaussian, unsharp and
camera_pipeline on ``build/small``, harris and laplacian_pyramid on ``build/default``;
generated when missing), one placement and routing per app (``--seed``) is pipelined with:

* ``off``: ``--fmax 0`` (branch-delay matching only);
* ``default``: the CLI default, compute pipelining and register insertion toward the timing
  model's floor (:func:`mapper.backend.pipeline.period_floor`);
* ``broadcast``: the default plus broadcast register trees (``PipelineParams.broadcast_fanout``
  = ``--fanout``, ``broadcast_leaves`` = ``--leaves``).

Figures per (app, variant): Fmax (MHz), the target (MHz), pipeline registers, seconds of the
pipelining stage. ``--lap-seeds N`` also places, routes and pipelines laplacian_pyramid on the
default array at ``--fmax 900`` for seeds 0..N-1 (no re-placement) and reports the Fmax
reached per seed and why a missed one stopped (``TimingReport.miss``).

Prints one JSON line per figure and appends rows to ``bench/results/backend_passes.csv``.
Run: ``.venv/bin/python bench/bench_backend_passes.py [--apps gaussian,harris] [--seed 0]
[--fanout 6] [--leaves 4] [--lap-seeds 10]`` (state the cores).
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import benchlib  # noqa: E402  (bench/benchlib.py: rows, the designs)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cgra.errors import CgraError  # noqa: E402
from mapper.backend.pack import pack  # noqa: E402
from mapper.backend.pipeline import PipelineParams, pipeline, registers_of  # noqa: E402
from mapper.backend.place import PlaceParams, place  # noqa: E402
from mapper.backend.route import route_design  # noqa: E402
from mapper.collateral import load_collateral  # noqa: E402
from mapper.flow import map_app  # noqa: E402
from mapper.params import AppParams  # noqa: E402

#: the README apps and the design the Makefile runs each on
APPS = {"gaussian": "small", "unsharp": "small", "camera_pipeline": "small",
        "harris": "default", "laplacian_pyramid": "default"}


def placed(app: str, coll, seed: int):
    """(packed, placement, routing) of ``app`` (64x64) with placement seed ``seed``."""
    nl = map_app(AppParams(app, 64, 64), coll).netlist
    packed = pack(nl, coll)
    pl = place(packed, coll, PlaceParams(seed=seed))
    return packed, pl, route_design(packed, pl, coll)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fanout", type=int, default=6)
    ap.add_argument("--leaves", type=int, default=4)
    ap.add_argument("--lap-seeds", type=int, default=0)
    args = ap.parse_args(argv)
    rows: list[dict] = []
    auto = PipelineParams(register_pe_inputs=True, auto_target=True)
    variants = {"off": PipelineParams(), "default": auto,
                "broadcast": dataclasses.replace(auto, broadcast_fanout=args.fanout,
                                                 broadcast_leaves=args.leaves)}
    colls: dict[str, object] = {}
    for app in [a for a in args.apps.split(",") if a]:
        design = APPS[app]
        coll = colls.setdefault(design, load_collateral(benchlib.default_design(design)))
        packed, pl, rr = placed(app, coll, args.seed)
        for name, pp in variants.items():
            p = {"app": app, "design": design, "seed": args.seed, "variant": name,
                 "broadcast_fanout": pp.broadcast_fanout, "broadcast_leaves":
                 pp.broadcast_leaves}
            t = time.perf_counter()
            try:
                pr = pipeline(packed, pl, rr, coll, pp)
            except CgraError as exc:
                rows.append(benchlib.row("backend_passes", "closed", 0, "bool",
                                         {**p, "error": str(exc)[:200]}))
                continue
            secs = round(time.perf_counter() - t, 2)
            tgt = pr.timing.target_ps
            rows.append(benchlib.row("backend_passes", "fmax", round(pr.timing.fmax_mhz, 1),
                                     "MHz", {**p, "target_mhz": None if tgt is None else
                                             round(1e6 / tgt, 1)}))
            rows.append(benchlib.row("backend_passes", "registers", registers_of(pr),
                                     "registers", p))
            rows.append(benchlib.row("backend_passes", "pipeline_seconds", secs, "s", p))
    if args.lap_seeds:
        coll = colls.setdefault("default", load_collateral(benchlib.default_design("default")))
        pp = PipelineParams(register_pe_inputs=True, target_period_ps=1e6 / 900)
        for seed in range(args.lap_seeds):
            p = {"app": "laplacian_pyramid", "design": "default", "seed": seed,
                 "fmax_target": 900}
            t = time.perf_counter()
            try:
                packed, pl, rr = placed("laplacian_pyramid", coll, seed)
                pr = pipeline(packed, pl, rr, coll, pp)
            except CgraError as exc:
                rows.append(benchlib.row("backend_passes", "lap_closed", 0, "bool",
                                         {**p, "error": str(exc)[:300]}))
                continue
            rows.append(benchlib.row("backend_passes", "lap_fmax",
                                     round(pr.timing.fmax_mhz, 1), "MHz",
                                     {**p, "miss": pr.timing.miss[:300],
                                      "seconds": round(time.perf_counter() - t, 2)}))
    benchlib.save_rows("backend_passes", rows)


if __name__ == "__main__":
    main()
