"""SARA Fig. 11 on the shipped dataflow programs: units after partitioning and merging with
the traversal heuristics vs the MILP reference (HiGHS), and their compile times, on two unit
kinds — SARA's Plasticine PCU and the stock PE of this project (2 ops per instruction,
2 word and 3 bit inputs, the ops with rewrite rules; as `resources.json` of
`configs/small.toml` gives it). Each program at par 1 and 4.

Prints one JSON line per figure and appends rows to ``bench/results/dataflow_units.csv``.
Run: ``.venv/bin/python bench/bench_dataflow_units.py [--time-limit 10]``.
"""
from __future__ import annotations

import argparse
import time

from benchlib import row, save_rows
from cgra.errors import MappingError
from mapper.dataflow.apps import APPS
from mapper.dataflow.lower import lower
from mapper.dataflow.resource_map import map_units
from mapper.dataflow.units import SARA_PCU, PUConstraints

#: the stock PE's resource vector (mapper.dataflow.resources.pe_units of configs/small.toml)
STOCK_PE = PUConstraints(
    "pe", stages=2, inputs={"scalar": 2, "vector": 0, "bit": 3},
    outputs={"scalar": 1, "vector": 0, "bit": 1}, registers=2,
    ops=frozenset({"add", "sub", "mul", "and", "or", "xor", "not", "lt", "le", "gt", "ge",
                   "eq", "ne", "min", "max", "select", "neg", "abs", "shl_const",
                   "shr_const"}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=10.0, help="MILP seconds per graph")
    ap.add_argument("--pars", default="1,4")
    args = ap.parse_args()
    rows = []
    print(f"{'app':14s} {'unit':4s} par  traversal (s)   solver (s)")
    for name, builder in APPS.items():
        for par in (int(p) for p in args.pars.split(",")):
            program, _, _ = builder(par=par)
            v = lower(program)
            for unit in (SARA_PCU, STOCK_PE):
                out = {}
                for method in ("traversal", "solver"):
                    t = time.perf_counter()
                    try:
                        m = map_units(v, {unit.kind: unit}, partitioner=method,
                                      time_limit_s=args.time_limit)
                        out[method] = (m.vus, m.units[unit.kind], time.perf_counter() - t)
                    except MappingError as exc:
                        out[method] = None
                        reason = str(exc)[:80]
                params = {"app": name, "par": par, "unit": unit.kind,
                          "time_limit_s": args.time_limit}
                if out["traversal"] is None:
                    print(f"{name:14s} {unit.kind:4s} {par:3d}  refused: {reason}")
                    continue
                for method, (vus, units, secs) in out.items():
                    rows.append(row("dataflow_units", f"{method}_units", units, "units",
                                    {**params, "vus": vus}))
                    rows.append(row("dataflow_units", f"{method}_seconds", round(secs, 3), "s",
                                    params))
                tr, so = out["traversal"], out["solver"]
                print(f"{name:14s} {unit.kind:4s} {par:3d}  {tr[1]:4d} ({tr[2]:5.2f})   "
                      f"{so[1]:4d} ({so[2]:5.2f})")
    print(f"-> {save_rows('dataflow_units', rows)}")


if __name__ == "__main__":
    main()
