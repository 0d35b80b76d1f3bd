"""The SARA-style dataflow compiler (issue 34) on SARA's apps: a par sweep per app.

For every app of :data:`mapper.dataflow.apps.APPS` and ``par`` in (1, 2, 4, 8), the program is
lowered to its VUDFG (:func:`mapper.dataflow.lower.lower`), given CMMC tokens
(:func:`mapper.dataflow.cmmc.cmmc`) and run on the token-level simulator
(:func:`mapper.dataflow.sim.simulate`) with random link latencies; figures per row:

* ``cycles``: simulated cycles (the run's result is checked against the sequential
  interpreter; ``match`` is 1 when bit-identical);
* ``vcus`` / ``vmus``: virtual compute units (compute, request, response and control) and
  memory units incl. DRAM interfaces; ``vcus_unrolled``: VCUs counted once per spatial lane
  (outer-loop ``par``; the innermost ``par`` vectorises);
* ``tokens`` / ``tokens_unreduced``: token + credit edges with and without SARA's control
  reduction (§III-A3);
* ``speedup``: cycles at par 1 / cycles at this par (same run, same machine).

Apps whose sizes do not admit a ``par`` are skipped (their builder refuses it).

Run: ``.venv/bin/python bench/bench_dataflow.py [--apps dot_product,gemm] [--pars 1,2,4,8]
[--seed 0] [--latency 1,3]`` (state the cores). Appends to ``bench/results/dataflow.csv``.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import benchlib
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cgra.errors import ProgramError  # noqa: E402  (the project root on sys.path first)
from mapper.dataflow.apps import APPS  # noqa: E402
from mapper.dataflow.cmmc import cmmc  # noqa: E402
from mapper.dataflow.interp import interpret  # noqa: E402
from mapper.dataflow.lower import lower  # noqa: E402
from mapper.dataflow.program import Loop  # noqa: E402
from mapper.dataflow.sim import simulate  # noqa: E402

PARS = (1, 2, 4, 8)


def unrolled(v) -> int:
    """VCUs counted once per spatial copy: the product of the ``par`` of every loop of the
    unit's chain except the innermost (which vectorises)."""
    total = 0
    for u in v.vcus.values():
        pars = [v.tree.nodes[c]["obj"].par for c in u.chain
                if isinstance(v.tree.nodes[c]["obj"], Loop)]
        total += math.prod(pars[:-1]) if pars else 1
    return total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--pars", default=",".join(map(str, PARS)))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--latency", default="1,3", help="link latency low,high (cycles)")
    args = ap.parse_args()
    lat = tuple(int(x) for x in args.latency.split(","))
    rows: list[dict] = []
    t0 = time.perf_counter()
    n_runs = 0
    for app in args.apps.split(","):
        base = None
        for par in (int(x) for x in args.pars.split(",")):
            try:
                p, inputs, _ = APPS[app](par=par)
            except ProgramError as exc:
                print(f"# {app} par={par}: skipped ({exc})", file=sys.stderr)
                continue
            v = lower(p)
            t = cmmc(v)
            r = simulate(v, t, inputs, seed=args.seed, latency=lat)
            ref = interpret(p, inputs)
            match = int(all(np.array_equal(ref[k], r.memories[k]) for k in ref))
            n_runs += 1
            base = base or r.cycles
            q = {"app": app, "par": par, "seed": args.seed, "latency": list(lat)}
            for fig, val, unit in (
                    ("cycles", r.cycles, "cycles"),
                    ("speedup", round(base / r.cycles, 3), "x"),
                    ("match", match, "bool"),
                    ("vcus", len(v.vcus), "units"),
                    ("vcus_unrolled", unrolled(v), "units"),
                    ("vmus", len(v.vmus), "units"),
                    ("tokens", t.count(reduced=True), "edges"),
                    ("tokens_unreduced", t.count(reduced=False), "edges")):
                rows.append(benchlib.row("dataflow", fig, val, unit, q))
    path = benchlib.save_rows("dataflow", rows)
    print(f"# bench_dataflow: {n_runs} runs in {time.perf_counter() - t0:.1f} s -> {path}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
