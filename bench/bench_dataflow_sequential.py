"""Spatial's ``Sequential`` schedule in the SARA-style dataflow compiler (issue 34): cycles
with and without it.

A loop built with ``sequential=True`` (Koeplinger et al., PLDI'18 §3) gets control tokens
(:func:`mapper.dataflow.cmmc.control_deps`): its children run one after the other and
iteration i + 1 starts only after iteration i is done. Programs measured, each pipelined
(the default) and sequential, on the token-level simulator
(:func:`mapper.dataflow.sim.simulate`), result checked against the interpreter:

* ``two_stage``: ``foreach(n)`` over two independent inner loops (write ``s[i]`` 4 times,
  then read it 4 times) — the pipelined loop overlaps iteration i + 1's writer with
  iteration i's reader, the sequential one cannot;
* ``logreg`` and ``pagerank`` (:mod:`mapper.dataflow.apps`) with the epoch / iteration
  loop sequential (as Spatial's LogReg and PageRank write it): their phases are already
  ordered by memory tokens, so the cost is small.

Figures per row: ``cycles``, ``cycles_sequential``, ``ratio`` (sequential / pipelined, same
run), ``control_tokens`` (control token edges), ``match`` (both runs bit-identical with the
interpreter).

Run: ``.venv/bin/python bench/bench_dataflow_sequential.py [--pars 1,4] [--latency 1,3]
[--seed 0]`` (state the cores). Appends to ``bench/results/dataflow_sequential.csv``.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import benchlib
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mapper.dataflow.apps import logreg, pagerank  # noqa: E402  (project root first)
from mapper.dataflow.cmmc import cmmc  # noqa: E402
from mapper.dataflow.interp import interpret  # noqa: E402
from mapper.dataflow.lower import lower  # noqa: E402
from mapper.dataflow.program import Program  # noqa: E402
from mapper.dataflow.sim import simulate  # noqa: E402


def two_stage(n: int = 8, par: int = 1, seed: int = 0, sequential: bool = False):
    """``s[i] = a[i] * 2 + j`` for j < 4, then ``out[i] = s[i] + j`` for j < 4, per i < n
    (``a``, ``out`` i32 (n,)); the outer loop ``L`` pipelined or sequential."""
    p = Program("two_stage")
    a, out, s = p.dram("a", (n,)), p.dram("out", (n,)), p.sram("s", (n,))
    with p.foreach(n, par=par, label="L", sequential=sequential) as i:
        with p.foreach(4) as j:
            s[i] = a[i] * 2 + j
        with p.foreach(4) as j:
            out[i] = s[i] + j
    inputs = {"a": np.random.default_rng(seed).integers(-9, 10, n).astype(np.int32)}
    return p, inputs, None


PROGRAMS = {"two_stage": two_stage, "logreg": logreg, "pagerank": pagerank}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pars", default="1,4")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--latency", default="1,3", help="link latency low,high (cycles)")
    args = ap.parse_args()
    lat = tuple(int(x) for x in args.latency.split(","))
    rows: list[dict] = []
    t0 = time.perf_counter()
    for name, build in PROGRAMS.items():
        for par in (int(x) for x in args.pars.split(",")):
            cycles, match, control = {}, 1, 0
            for seq in (False, True):
                p, inputs, _ = build(par=par, sequential=seq)
                v = lower(p)
                t = cmmc(v)
                r = simulate(v, t, inputs, seed=args.seed, latency=lat)
                ref = interpret(p, inputs)
                match &= int(all(np.array_equal(ref[k], r.memories[k]) for k in ref))
                cycles[seq] = r.cycles
                if seq:
                    control = len(t.control)
            q = {"program": name, "par": par, "seed": args.seed, "latency": list(lat)}
            for fig, val, unit in (
                    ("cycles", cycles[False], "cycles"),
                    ("cycles_sequential", cycles[True], "cycles"),
                    ("ratio", round(cycles[True] / cycles[False], 4), "x"),
                    ("control_tokens", control, "edges"),
                    ("match", match, "bool")):
                rows.append(benchlib.row("dataflow_sequential", fig, val, unit, q))
    path = benchlib.save_rows("dataflow_sequential", rows)
    print(f"# bench_dataflow_sequential: {len(rows)} figures in "
          f"{time.perf_counter() - t0:.1f} s -> {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
