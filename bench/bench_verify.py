"""Bitstream proof benchmark (issue 19): Canal's SMT model on the default 32x16 design.

For gaussian, unsharp and harris (placement seed 0, compute pipelining and register insertion
to 900 MHz; ``build/default`` generated when missing): the time to build the model from the
collateral, the proof time of the generated bitstream (slicing + formula + z3), the sliced
model's size, and how many random mutations of each kind the proof rejects (``--mutations N``
per kind: a route mux's select changed to another fan-in, a route mux made to select a node
that carries another net, a route's pipeline-register mux toggled). A mutation is either
rejected, or harmless: the changed mux still carries its net's source with the same latency
(its new fan-in, unrouted, happens to carry the same signal through reset-value selects;
checked with ``InterconnectModel.derive``). "missed" counts the rest and must be 0.

Prints one JSON line per figure and appends rows to ``bench/results/verify.csv``.
Run: ``.venv/bin/python bench/bench_verify.py [--mutations 20]`` (state the cores).
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path

import benchlib  # noqa: E402  (bench/benchlib.py: JSON lines and results CSV)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_cascade import design  # noqa: E402  (build/default, generated when missing)

APPS = ("gaussian", "unsharp", "harris")


def emit(rows: list[dict], figure: str, value, unit: str, params: dict) -> None:
    rows.append(benchlib.row("verify", figure, value, unit, params))


def mutations(res, model, bs, rng: random.Random, n: int) -> dict[str, list[dict[str, int]]]:
    """Up to ``n`` single-field mutations of each kind: node -> new select."""
    from canal.graph import NodeKind
    from canal.smt import BitstreamSelects
    from mapper.backend.verify import expected_values

    want, owner, _ = expected_values(model, res)
    sel = BitstreamSelects(bs, model.spots)
    route_muxes = sorted({(name, a, b) for name, r in res.routing.nets.items()
                          for p in r.paths.values() for a, b in pairwise(p)
                          if len(model.fanin[b]) > 1})
    flip, second, reg = [], [], []
    for name, a, b in route_muxes:
        fi = model.fanin[b]
        if model.kind[b] is NodeKind.RMUX:
            reg.append({b: 1 - sel.get(b)})
            continue
        right = fi.index(a)
        flip.append({b: rng.choice([k for k in range(len(fi)) if k != right])})
        others = [k for k, f in enumerate(fi) if f != a and f in want and owner[f] != name
                  and want[f].source != want[b].source]
        if others:
            second.append({b: rng.choice(others)})

    def pick(xs: list) -> list:
        return rng.sample(xs, min(n, len(xs)))
    return {"select flipped": pick(flip), "second driver": pick(second),
            "register toggled": pick(reg)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mutations", type=int, default=20)
    ap.add_argument("--apps", default=",".join(APPS))
    args = ap.parse_args()
    from canal.smt import BitstreamSelects, encode_selects
    from mapper.collateral import load_collateral
    from mapper.params import AppParams, FlowParams, RunParams
    from mapper.flow import run_stages
    from mapper.backend.pipeline import PipelineParams
    from mapper.backend.place import PlaceParams
    from mapper.backend.verify import VerificationError, expected_values, model_of, verify

    d = design()
    rows: list[dict] = []
    t = time.perf_counter()
    coll = load_collateral(d)
    emit(rows, "load collateral", round(time.perf_counter() - t, 3), "s", {"design": "default"})
    t = time.perf_counter()
    model = model_of(coll)
    emit(rows, "build model", round(time.perf_counter() - t, 3), "s",
         {"design": "default", "nodes": len(model.fanin), "select_fields": len(model.spots)})
    for app in args.apps.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            run_stages(RunParams(AppParams(app, 64, 64), d, Path(tmp),
                                 FlowParams(place=PlaceParams(seed=0),
                                            pipeline=PipelineParams(register_pe_inputs=True,
                                                                    target_period_ps=1e6 / 900))),
                       "bitstream")
            from mapper.stages import load_bitstream, load_flow
            flow = load_flow(tmp, coll)
            bs = load_bitstream(tmp, coll).pairs()
        times = []
        for _ in range(5):
            rep = verify(bs, flow.pipelined, coll, model)
            times.append(rep.seconds["total"])
        p = {"app": app, "seed": 0, "nets": rep.nets, "sinks": rep.sinks,
             "routed_nodes": rep.nodes, "cone_nodes": rep.cone_nodes,
             "select_vars": rep.select_vars}
        emit(rows, "proof time (median of 5)", round(statistics.median(times), 4), "s", p)
        emit(rows, "z3 solve time", round(rep.seconds["solve"], 4), "s", p)
        rng = random.Random(0)
        want, _owner, _ = expected_values(model, flow.pipelined)
        for kind, muts in mutations(flow.pipelined, model, bs, rng, args.mutations).items():
            rejected = harmless = missed = 0
            for m in muts:
                bad = encode_selects(m, model.spots, bs)
                try:
                    verify(bad, flow.pipelined, coll, model)
                except VerificationError:
                    rejected += 1
                    continue
                # accepted: the changed mux must still carry its net's source with the same
                # latency (the new fan-in happens to carry it too), else the proof missed it
                (node,) = m
                got = model.derive([node], BitstreamSelects(bad, model.spots))[node]
                if got == want[node]:
                    harmless += 1
                else:
                    missed += 1
            emit(rows, f"mutations: {kind}", f"{rejected} rejected, {harmless} harmless, "
                 f"{missed} missed", "count", {"app": app, "mutations": len(muts)})
    benchlib.save_rows("verify", rows)


if __name__ == "__main__":
    main()
