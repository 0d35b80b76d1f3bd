"""SARA compute partitioning (issue 34 item 5): the four traversal partitioners against the
MILP partitioner (HiGHS, :func:`mapper.dataflow.partition.solver_partition`) on seeded
random dataflow graphs of 10, 20, 40 and 80 op nodes, the SARA paper's Fig. 11a/11b
comparison (PU count and compile time) at toy scale.

Random DFG (``random_dfg``): 2 scalar and 2 vector live-ins, 2 constants; op ``k`` takes
1..3 sources drawn from the live-ins, the constants and the previous ``window`` ops
(locality, as in unrolled loop bodies); one op in 8 carries an accumulation (LCD self
edge); ops without consumers feed live-outs. PU: :data:`mapper.dataflow.units.SARA_PCU`
(6 stages, 6 scalar / 4 vector inputs, 4 / 4 outputs, 16 registers) or, with ``--tight``,
a 4-stage unit with 3 / 3 inputs, 2 / 2 outputs and 8 registers. Figures per (ops, seed, method):
``units`` (partitions), ``cross_edges``, ``seconds`` and, for the MILP, ``optimal``
(parts then cross edges proved minimal within ``--time-limit``), the stage lower bound
``ceil(ops / stages)`` (a unit count equal to it is optimal even when unproved); plus the
retiming partitions of the best traversal and the MILP result (buffer depth
``--buffer-depth`` levels).

Run: ``.venv/bin/python bench/bench_partition.py [--sizes 10,20,40,80] [--seeds 0,1]
[--time-limit 20] [--tight]`` (state the cores). Appends to ``bench/results/partition.csv``.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import benchlib
import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mapper.dataflow.partition import (  # noqa: E402  (the project root on sys.path first)
    VARIANTS,
    check,
    retime,
    solver_partition,
    traversal_partition,
)
from mapper.dataflow.units import SARA_PCU, PUConstraints  # noqa: E402

TIGHT = PUConstraints("pcu-tight", 4, {"scalar": 3, "vector": 3}, {"scalar": 2, "vector": 2},
                      8, SARA_PCU.ops, 16)
OPS = ("add", "mul", "sub", "max", "lt", "select", "exp")


def random_dfg(n: int, seed: int, window: int = 6) -> nx.DiGraph:
    """The seeded random DFG of the module docstring (``n`` op nodes)."""
    r = random.Random(seed)
    g = nx.DiGraph()
    live_ins = []
    for k, w in enumerate(("scalar", "scalar", "vector", "vector")):
        g.add_node(f"in{k}", kind="input", width=w)
        live_ins.append(f"in{k}")
    for k in range(2):
        g.add_node(f"c{k}", kind="const", op="const", width="scalar")
        live_ins.append(f"c{k}")
    for k in range(n):
        g.add_node(k, kind="op", op=r.choice(OPS), width=r.choice(("scalar", "vector")))
        pool = live_ins + list(range(max(0, k - window), k))
        for s in r.sample(pool, min(len(pool), r.randint(1, 3))):
            g.add_edge(s, k)
        if r.random() < 0.125:
            g.add_edge(k, k, lcd=True)
    for k in range(n):
        if not any(v != k for v in g.successors(k)):
            g.add_node(f"out{k}", kind="output")
            g.add_edge(k, f"out{k}")
    return g


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10,20,40,80")
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--time-limit", type=float, default=20.0, help="MILP seconds per graph")
    ap.add_argument("--buffer-depth", type=int, default=2, help="retiming depth in levels")
    ap.add_argument("--tight", action="store_true", help="the 4-stage unit instead of a PCU")
    args = ap.parse_args()
    pu = TIGHT if args.tight else SARA_PCU

    rows: list[dict] = []
    table: list[tuple] = []
    for n in (int(s) for s in args.sizes.split(",")):
        for seed in (int(s) for s in args.seeds.split(",")):
            g = random_dfg(n, seed)
            p = {"ops": n, "seed": seed, "pu": pu.kind, "window": 6,
                 "time_limit_s": args.time_limit, "solver": "highs"}
            results = {}
            for order, direction in VARIANTS:
                t = time.perf_counter()
                res = traversal_partition(g, pu, order, direction)
                results[res.method] = (res, time.perf_counter() - t)
            t = time.perf_counter()
            res = solver_partition(g, pu, time_limit_s=args.time_limit)
            results["milp"] = (res, time.perf_counter() - t)
            for method, (res, dt) in results.items():
                if check(g, res.parts, pu):
                    raise SystemExit(f"{method} returned an illegal partitioning on n={n}, "
                                     f"seed={seed}: {check(g, res.parts, pu)[0]}")
                q = {**p, "method": method}
                rows.append(benchlib.row("partition", "units", len(res), "partitions", q))
                rows.append(benchlib.row("partition", "cross_edges", res.cross_edges(g),
                                         "edges", q))
                rows.append(benchlib.row("partition", "seconds", round(dt, 4), "s", q))
            best = min((results[f"{o}-{d}"][0] for o, d in VARIANTS),
                       key=lambda r: (len(r), r.cross_edges(g)))
            milp = results["milp"][0]
            bound = -(-n // pu.stages)  # ceil(ops / stages): no partitioning uses fewer
            rows.append(benchlib.row("partition", "stage_lower_bound", bound, "partitions", p))
            rows.append(benchlib.row("partition", "optimal", int(bool(milp.optimal)), "bool",
                                     {**p, "method": "milp"}))
            for method, res in (("best-traversal", best), ("milp", milp)):
                rt = retime(g, res, args.buffer_depth)
                rows.append(benchlib.row("partition", "retiming_partitions", len(rt.retiming),
                                         "partitions", {**p, "method": method,
                                                        "buffer_depth": args.buffer_depth}))
            table.append((n, seed, *(len(results[f"{o}-{d}"][0]) for o, d in VARIANTS),
                          len(milp), bound, "yes" if milp.optimal else "no",
                          max(results[f"{o}-{d}"][1] for o, d in VARIANTS),
                          results["milp"][1]))
    benchlib.save_rows("partition", rows)
    head = ("ops", "seed", "bfs-fwd", "bfs-bwd", "dfs-fwd", "dfs-bwd", "milp", "ceil(n/st)", "proved",
            "trav s (max)", "milp s")
    print(" | ".join(f"{h:>12}" for h in head))
    for r in table:
        print(" | ".join(f"{v:>12.3f}" if isinstance(v, float) else f"{v!s:>12}" for v in r))
    print(f"{len(table)} graphs on {pu.kind}; rows appended to bench/results/partition.csv")


if __name__ == "__main__":
    main()
