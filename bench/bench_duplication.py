"""Low-unroll duplication (Cascade §V-C4, issue 41 item 9) against the unrolled design on the
32x16 array.

For each app (``--apps``, default gaussian and unsharp) and unroll (``--unrolls``, default 4
and 8) on ``build/default`` (generated when missing), a 64x64 camera crop runs through the
whole flow twice from the same placement seed (``--seed``):

* ``unrolled``: the app compiled at that unroll, placed and routed on the whole array;
* ``duplicated``: ``--duplicate``: the app at unroll 1 on a strip of the image, placed and
  routed on a sub-array of ``32 / unroll`` columns and copied ``unroll`` times
  (:mod:`mapper.duplicate`);

each with the pipelining off (``--fmax 0``: branch-delay matching only, the routed critical
path) and with the CLI default (compute pipelining and register insertion toward the timing
model's floor). Figures per (app, unroll, variant, pipelining): Fmax (MHz), pipeline registers
(route registers plus PE input registers, the whole array), PnR seconds (wall clock from the
first placement to the bitstream stage: place, route and pipeline, every attempt, and the
replication for ``duplicated``, with every file and picture written), PnR compute seconds
(the placement, routing and pipelining seconds each records, plus the in-memory replication),
and whether the output matched both golden
models bit for bit (``--no-sim``: stop after the bitstream). A row records every parameter.

Prints one JSON line per figure and appends rows to ``bench/results/duplication.csv``.
Run: ``.venv/bin/python bench/bench_duplication.py [--apps gaussian,unsharp] [--unrolls 4,8]
[--seed 0] [--no-sim]`` (state the cores).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import benchlib  # noqa: E402  (bench/benchlib.py: rows, the designs)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cgra.errors import CgraError  # noqa: E402
from mapper.backend.pipeline import PipelineParams  # noqa: E402
from mapper.backend.place import PlaceParams  # noqa: E402
from mapper.flow import run_stages  # noqa: E402
from mapper.params import AppParams, DuplicateParams, FlowParams, RunParams  # noqa: E402

BENCH = "duplication"
#: pipelining variants: ``off`` = --fmax 0, ``default`` = the CLI default (auto target)
PIPELINING = {"off": PipelineParams(),
              "default": PipelineParams(register_pe_inputs=True, auto_target=True)}


def one(app: str, unroll: int, dup: bool, piping: str, seed: int, sim: bool, design: Path,
        out: Path) -> dict:
    """One run; its figures from pnr_report.json (and run_report.json with ``sim``)."""
    p = RunParams(AppParams(app, 64, 64, unroll), design, out,
                  FlowParams(place=PlaceParams(seed=seed), pipeline=PIPELINING[piping]),
                  duplicate=DuplicateParams() if dup else None)
    marks: dict[str, float] = {}

    def step(msg: str) -> None:         # the flow announces each stage as it starts
        marks.setdefault(msg.split(" ")[0], time.perf_counter())

    run_stages(p, "sim" if sim else "bitstream", step)
    pnr = json.loads((out / "pnr_report.json").read_text())
    run = json.loads((out / "run_report.json").read_text()) if sim else None
    # wall clock from the first placement to the bitstream: place, route, pipeline (every
    # attempt) and, duplicated, the replication
    pnr_s = marks["bitstream"] - marks["place"]
    d = pnr.get("duplication") or {}
    # the algorithms alone (the kept attempt; no file, no picture): placement, routing and
    # pipelining seconds as each records them, duplicated + the in-memory replication
    algo = sum(float(json.loads((out / f).read_text())["seconds"])
               for f in ("placement.json", "routing.json", "pipelined.json"))
    algo += float(d.get("replicate_seconds", 0.0))
    return {"fmax_mhz": pnr["timing"]["fmax_mhz"],
            "registers": pnr["passes"][-1]["registers"] if pnr["passes"] else 0,
            "pnr_seconds": round(pnr_s, 3), "pnr_compute_seconds": round(algo, 3),
            "match": run["match"] if run else None,
            "used": pnr["resources"]["used"], "wirelength": pnr["wirelength_total"],
            "cycles": run["cycles"]["stream"] if run else None,
            "sub_array": d.get("sub_array"), "copies": d.get("copies"),
            "sub_array_pnr_seconds": d.get("pnr_seconds")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default="gaussian,unsharp")
    ap.add_argument("--unrolls", default="4,8")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pipelining", default="off,default")
    ap.add_argument("--no-sim", dest="sim", action="store_false")
    a = ap.parse_args()
    design = benchlib.default_design("default")
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench_dup_") as tmp:
        for app in a.apps.split(","):
            for u in (int(v) for v in a.unrolls.split(",")):
                for piping in a.pipelining.split(","):
                    for dup in (False, True):
                        variant = "duplicated" if dup else "unrolled"
                        params = {"app": app, "unroll": u, "variant": variant,
                                  "pipelining": piping, "seed": a.seed, "image": "camera 64x64",
                                  "design": "build/default (32x16)"}
                        try:
                            r = one(app, u, dup, piping, a.seed, a.sim, design,
                                    Path(tmp) / f"{app}_{u}_{piping}_{variant}")
                        except CgraError as exc:
                            new = [benchlib.row(BENCH, "error", str(exc), "", params)]
                        else:
                            params.update({k: r[k] for k in ("match", "used", "wirelength",
                                                             "cycles", "sub_array", "copies",
                                                             "sub_array_pnr_seconds")})
                            new = [benchlib.row(BENCH, "fmax", r["fmax_mhz"], "MHz", params),
                                   benchlib.row(BENCH, "registers", r["registers"], "count",
                                                params),
                                   benchlib.row(BENCH, "pnr_time", r["pnr_seconds"], "s",
                                                params),
                                   benchlib.row(BENCH, "pnr_compute_time",
                                                r["pnr_compute_seconds"], "s", params)]
                        benchlib.save_rows(BENCH, new)      # each run's rows as it ends
                        rows += new
    print(f"{len(rows)} rows -> {benchlib.RESULTS / f'{BENCH}.csv'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
