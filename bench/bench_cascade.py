"""Cascade benchmark (issue 11): the back end closing on every seed, and the pipelining passes.

For pointwise, brighten_blur, gaussian, unsharp and harris on the default 32x16 design (``build/default``, generated
when missing), placement seeds 0..19 (``--seeds N``), with compute pipelining and register
insertion to ``--fmax`` (default 900 MHz): whether the back end closed, how many placements
it took (re-place attempts) and latency-constrained re-routes, and per pass (balance =
unpipelined, compute pipelining, register insertion, ALAP, and register absorption with
``--absorb N``, default 6: chains of N or more balancing registers become MEM delay lines,
:mod:`mapper.backend.absorb`) the Fmax of the timing model, the registers in use, the extra output
latency (cycles) and its seconds. Summary figures per app: success rate, runs that needed a
re-place, mean Fmax and mean registers after each pass, ratio post/balance and ratio final /
unpipelined (the same routes with no pipeline register, :func:`mapper.backend.pipeline.unpipelined_timing`:
on the default array the balance pass already has its mandatory NORTH/EAST registers), runs whose
absorption was kept and the delay lines it added. Seeds 0..2 (``--alap-seeds``) also run
balance-only: the registers an ALAP move would save on the default PE before compute
pipelining registers its inputs (:func:`alap_gain`; with it, the ALAP pass seldom applies).

Prints one JSON line per figure and appends rows to ``bench/results/cascade.csv``.
Placement exponent sweep: seeds 0..2 (``--sweep-seeds``) of gaussian, unsharp and harris also
run with alphas 1, 1.5, 2; the Fmax kept vs the alpha-1 Fmax of the same table.
Run: ``.venv/bin/python bench/bench_cascade.py [--seeds 20] [--fmax 900] [--absorb 6]``
(state the cores; ``--absorb 0`` = no absorption).
"""
from __future__ import annotations

import argparse
import csv
import itertools
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import benchlib  # noqa: E402  (bench/benchlib.py: the default design)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "bench" / "results" / "cascade.csv"
APPS = ("pointwise", "brighten_blur", "gaussian", "unsharp", "harris")


def emit(rows: list[dict], figure: str, value, unit: str, params: dict) -> None:
    row = {"bench": "cascade", "figure": figure, "value": value, "unit": unit,
           "params": {**params, "cores": os.cpu_count()}}
    print(json.dumps(row), flush=True)
    rows.append(row)


def design() -> Path:
    return benchlib.default_design()


def alap_gain(pr) -> tuple[int, int]:
    """(PEs an ALAP move could delay with a register gain, registers gained in all) of a
    balance-only pipelined design on a PE with one input register per operand: delaying PE
    ``v`` by a cycle registers each of its free inputs (one register per operand) and removes
    one balancing register from every root-to-sink path of its output nets (the fewest:
    a cut of each route tree through enabled balancing registers). Counted only where every
    sink of ``v`` is a PE and no input of ``v`` is delayed already."""
    from mapper.backend.pipeline import tree_cut

    pk, en = pr.packed, set(pr.enabled_regs)
    nets_from: dict[str, list] = {}
    inputs: dict[str, int] = {}
    for n in pk.nets:
        nets_from.setdefault(n.source[0], []).append(n)
        for s in n.sinks:
            inputs[s[0]] = inputs.get(s[0], 0) + 1
    delayed = {k[0] for k in pr.pe_input_delay}
    moves = gain = 0
    for v, inst in pk.instances.items():
        nets = nets_from.get(v, [])
        if (inst.tag != "p" or not nets or v in delayed or inst.input_regs
                or any(pk.instances[s[0]].tag != "p" for n in nets for s in n.sinks)):
            continue
        cut = 0.0
        for n in nets:
            kids: dict[str, set] = {}
            for path in pr.routing.nets[n.name].paths.values():
                for a, b in itertools.pairwise(path):
                    kids.setdefault(a, set()).add(b)
            root = next(iter(pr.routing.nets[n.name].paths.values()))[0]
            got = tree_cut(root, kids, en)
            cut += math.inf if got is None else len(got)
        if cut != math.inf and cut > inputs.get(v, 0):
            moves += 1
            gain += int(cut) - inputs.get(v, 0)
    return moves, gain


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--fmax", type=float, default=900.0)
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--alap-seeds", type=int, default=3,
                    help="seeds 0..N-1 of each app also run balance-only: how many registers "
                         "an ALAP move (a PE delayed, its inputs registered) would save")
    ap.add_argument("--absorb", type=int, default=6,
                    help="register-chain absorption: chains of N or more balancing registers "
                         "become MEM delay lines (0 = off)")
    ap.add_argument("--sweep-seeds", type=int, default=3,
                    help="seeds 0..N-1 of gaussian, unsharp and harris also run with the "
                         "placement exponent sweep 1,1.5,2 (Fmax kept vs alpha 1)")
    args = ap.parse_args()

    from cgra.errors import CgraError
    from mapper.collateral import load_collateral
    from mapper.params import AppParams, FlowParams
    from mapper.closure import back_end
    from mapper.flow import map_app
    from mapper.backend.pipeline import PipelineParams
    from mapper.backend.place import PlaceParams

    coll = load_collateral(design())
    rows: list[dict] = []
    for app in args.apps.split(","):
        nl = map_app(AppParams(app, 64, 64), coll).netlist
        closed, replaced, fmax, regs, kept, lines = 0, 0, {}, {}, 0, 0
        ratios_unp: list[float] = []
        for seed in range(args.seeds):
            p = {"app": app, "array": "32x16", "seed": seed, "fmax_target": args.fmax}
            t = time.perf_counter()
            try:
                fr = back_end(nl, coll, FlowParams(
                    place=PlaceParams(seed=seed), absorb_chains=args.absorb,
                    pipeline=PipelineParams(register_pe_inputs=True,
                                            target_period_ps=1e6 / args.fmax)))
            except CgraError as exc:
                emit(rows, "closed", 0, "bool", {**p, "error": str(exc)[:200]})
                continue
            closed += 1
            replaced += bool(fr.attempts)
            emit(rows, "closed", 1, "bool", p)
            emit(rows, "placements", len(fr.attempts) + 1, "attempts", p)
            emit(rows, "backend_seconds", round(time.perf_counter() - t, 3), "s", p)
            for r in fr.pipelined.passes:
                q = {**p, "pass": r.name}
                emit(rows, "fmax", round(r.fmax_mhz, 1), "MHz", q)
                emit(rows, "registers", r.registers, "registers", q)
                emit(rows, "latency", r.latency, "cycles", q)
                emit(rows, "reroutes", r.reroutes, "re-routes", q)
                emit(rows, "pass_seconds", round(r.seconds, 3), "s", q)
                fmax.setdefault(r.name, []).append(r.fmax_mhz)
                regs.setdefault(r.name, []).append(r.registers)
            regs.setdefault("final (after absorption when kept)", []).append(
                fr.pipelined.passes[-1].registers)
            unp = fr.pipelined.unpipelined
            emit(rows, "fmax_unpipelined", round(unp.fmax_mhz, 1), "MHz", p)
            ratios_unp.append(fr.pipelined.timing.fmax_mhz / unp.fmax_mhz)
            if fr.absorption is not None:
                kept += fr.absorption["kept"]
                lines += fr.absorption["delay_lines"]
                emit(rows, "absorption_kept", int(fr.absorption["kept"]), "bool",
                     {**p, "min_chain": args.absorb,
                      "delay_lines": fr.absorption["delay_lines"],
                      "registers_before": fr.absorption["registers_before"],
                      "registers_after": fr.absorption["registers_after"],
                      "seconds": fr.absorption["seconds"]})
        for seed in range(args.alap_seeds):
            p = {"app": app, "array": "32x16", "seed": seed, "fmax_target": None}
            try:
                fr = back_end(nl, coll, FlowParams(place=PlaceParams(seed=seed)))
            except CgraError:
                continue
            moves, gain = alap_gain(fr.pipelined)
            emit(rows, "alap_gain", gain, "registers",
                 {**p, "moves": moves, "registers": fr.pipelined.passes[-1].registers})
        for seed in range(args.sweep_seeds if app in ("gaussian", "unsharp", "harris") else 0):
            p = {"app": app, "array": "32x16", "seed": seed, "fmax_target": args.fmax,
                 "alphas": [1.0, 1.5, 2.0]}
            t = time.perf_counter()
            try:
                fr = back_end(nl, coll, FlowParams(
                    place=PlaceParams(seed=seed), alphas=(1.0, 1.5, 2.0),
                    pipeline=PipelineParams(register_pe_inputs=True,
                                            target_period_ps=1e6 / args.fmax)))
            except CgraError as exc:
                emit(rows, "sweep_closed", 0, "bool", {**p, "error": str(exc)[:200]})
                continue
            table = {r["alpha"]: r for r in fr.alpha_sweep}
            kept = next(r for r in fr.alpha_sweep if r["kept"])
            emit(rows, "sweep_fmax_alpha1", table[1.0].get("fmax_mhz"), "MHz", p)
            emit(rows, "sweep_fmax_kept", kept["fmax_mhz"], "MHz", {**p, "kept": kept["alpha"]})
            emit(rows, "sweep_seconds", round(time.perf_counter() - t, 3), "s", p)
        p = {"app": app, "array": "32x16", "seeds": args.seeds, "fmax_target": args.fmax}
        emit(rows, "success_rate", f"{closed}/{args.seeds}", "runs", p)
        emit(rows, "needed_replace", f"{replaced}/{max(closed, 1)}", "runs", p)
        for name, vals in fmax.items():
            emit(rows, "mean_fmax", round(statistics.mean(vals), 1), "MHz", {**p, "pass": name})
        for name, vals in regs.items():
            emit(rows, "mean_registers", round(statistics.mean(vals), 1), "registers",
                 {**p, "pass": name})
        if args.absorb:
            emit(rows, "absorption_kept_runs", f"{kept}/{max(closed, 1)}", "runs",
                 {**p, "min_chain": args.absorb, "delay_lines": lines})
        if "balance" in fmax and "register insertion" in fmax:
            ratios = [b / a for a, b in zip(fmax["balance"], fmax["register insertion"],
                                            strict=True)]
            emit(rows, "fmax_ratio_min", round(min(ratios), 2), "x", p)
            emit(rows, "fmax_ratio_mean", round(statistics.mean(ratios), 2), "x", p)
        if ratios_unp:
            # final Fmax over the same routes with no pipeline register (Cascade's baseline)
            emit(rows, "fmax_ratio_unpipelined_min", round(min(ratios_unp), 2), "x", p)
            emit(rows, "fmax_ratio_unpipelined_mean", round(statistics.mean(ratios_unp), 2), "x",
                 p)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    new = not RESULTS.exists()
    with RESULTS.open("a", newline="") as f:
        wr = csv.writer(f)
        if new:
            wr.writerow(["time", "bench", "figure", "value", "unit", "params"])
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        for r in rows:
            wr.writerow([stamp, r["bench"], r["figure"], r["value"], r["unit"],
                         json.dumps(r["params"], sort_keys=True)])


if __name__ == "__main__":
    main()
