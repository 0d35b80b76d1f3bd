"""Exact router vs PathFinder: wirelength and time on small random netlists, the solver
comparison (HiGHS vs z3 on the same 0-1 programs) and the size where the exact router stops
being practical.

Arrays: canal ``build_uniform`` with PEs (``data0``, ``data1`` in, ``res`` out) and IO tiles on
the north edge, 16-bit graph, pipeline registers on every track; 4x4 and 8x8 with 5 and 2
tracks per side. Netlists: ``n`` nets with distinct random source ports and 1-3 distinct sink
ports (anywhere on 4x4, within 3 tiles of the source on 8x8), seeds fixed. Wirelength: SB_IN
nodes used (``RoutingResult.wirelength``); gap = (PathFinder - exact) / exact. The exact router
runs with margin 2 (optimal within the margin; never longer than PathFinder on these cases).

Size sweep: arrays N x N (5 tracks) with N*N/8 local nets, and the 8x8 with more and more
nets spread over the array, each until a solve exceeds ``LIMIT_S`` seconds (status timeout).

Prints one JSON line per figure and a summary table; appends rows to
``bench/results/exact_route.csv``. Run: ``.venv/bin/python bench/bench_exact_route.py``.
"""
from __future__ import annotations

import copy
import os
import statistics
import time

import benchlib  # noqa: E402  (bench/benchlib.py: JSON lines and results CSV)

from canal.passes import InterconnectParams, build_uniform, io_on_edges
from cgra.config import ConfigField
from cgra.core import CoreSpec, PortSpec
from cgra.errors import RoutingError
from mapper.backend.exact_route import build_program, exact_route, random_nets, wirelength
from canal.routing import RoutingGraph
from mapper.backend.nets import RouteNet
from mapper.backend.route import RouterParams, route_width

LIMIT_S = 60.0
Z3_LIMIT_S = 60.0


def _no_rtl():
    raise RuntimeError("the exact-routing benchmark builds no RTL")


PE = CoreSpec("bench_pe", "p", (PortSpec("data0", 16, "in"), PortSpec("data1", 16, "in"),
                                PortSpec("res", 16, "out")),
              (ConfigField("inst", 20),), _no_rtl, {"timing_class": "pe"})
IO = CoreSpec("bench_io", "I", (PortSpec("f2io_16", 16, "in"), PortSpec("io2f_16", 16, "out")),
              (), _no_rtl, {"timing_class": "io"})


def array(w: int, h: int, tracks: int) -> RoutingGraph:
    ic = build_uniform(InterconnectParams(w, h, tracks=tracks, widths=(16,)),
                       io_on_edges(lambda x, y: PE, IO, w, h))
    return RoutingGraph(ic.graphs[16])


def pathfinder(g: RoutingGraph, nets: list[RouteNet]) -> tuple[int | None, float]:
    t = time.perf_counter()
    try:
        paths, _, _ = route_width(g, copy.deepcopy(nets), {}, RouterParams())
    except RoutingError:
        return None, time.perf_counter() - t
    return wirelength(g, paths), time.perf_counter() - t


def emit(rows: list[dict], figure: str, value, unit: str, params: dict) -> None:
    rows.append(benchlib.row("exact_route", figure, value, unit, params))


def main() -> None:
    rows: list[dict] = []
    cores = os.cpu_count()
    graphs = {(s, t): array(s, s, t) for s in (4, 8) for t in (5, 2)}
    # ---- exact vs PathFinder
    table = []
    for (size, tracks), g in graphs.items():
        counts = (3, 5, 8, 10) if size == 4 else (4, 6, 8, 10)
        reach = None if size == 4 else 3
        for n in counts:
            for seed in range(5):
                nets = random_nets(g, n, seed, reach=reach)
                pf_wl, pf_s = pathfinder(g, nets)
                res = exact_route(g, nets, timeout_s=LIMIT_S, margin=2)
                params = {"array": f"{size}x{size}", "tracks": tracks, "nets": n,
                          "sinks": sum(len(x.sinks) for x in nets), "seed": seed,
                          "cores": cores}
                gap = None
                if res.status == "optimal" and pf_wl is not None:
                    gap = (pf_wl - res.wirelength) / res.wirelength
                table.append({**params, "pf_wl": pf_wl, "pf_s": pf_s, "ex_wl": res.wirelength,
                              "ex_s": res.seconds, "status": res.status, "gap": gap})
                emit(rows, "pathfinder_wirelength", pf_wl, "segments", params)
                emit(rows, "pathfinder_s", round(pf_s, 4), "s", params)
                emit(rows, "exact_wirelength", res.wirelength, "segments",
                     {**params, "status": res.status})
                emit(rows, "exact_s", round(res.seconds, 3), "s", params)
                if gap is not None:
                    emit(rows, "gap", round(gap, 4), "fraction", params)
    # ---- solver comparison (same programs; z3 is slow, so small ones)
    solver_rows = []
    g4 = graphs[(4, 5)]
    for n, seed, margin, reach in ((2, 0, 0, 2), (2, 1, 1, 2), (3, 0, 0, 2), (3, 1, None, 2),
                                   (4, 2, 0, 2), (3, 0, None, None), (6, 1, None, None)):
        nets = random_nets(g4, n, seed, max_sinks=3 if reach is None else 2, reach=reach)
        prog = build_program(g4, nets, margin)
        out = {}
        for solver in ("highs", "z3"):
            res = exact_route(g4, nets, timeout_s=Z3_LIMIT_S, margin=margin, solver=solver)
            out[solver] = res
            params = {"array": "4x4", "tracks": 5, "nets": n, "seed": seed, "margin": margin,
                      "reach": reach, "variables": prog.n_vars, "solver": solver,
                      "cores": cores}
            emit(rows, "solver_s", round(res.seconds, 3), "s", {**params, "status": res.status})
            emit(rows, "solver_wirelength", res.wirelength, "segments", params)
        solver_rows.append((n, seed, margin, reach, prog.n_vars, out["highs"], out["z3"]))
    # ---- size sweep: N x N arrays, N*N/8 local nets; then 8x8 with more spread nets
    sweep = []
    for size in (4, 8, 12, 16, 24, 32, 40, 48):
        g = array(size, size, 5)
        n = size * size // 8
        nets = random_nets(g, n, 0, reach=3)
        prog = build_program(g, nets, 2)
        res = exact_route(g, nets, timeout_s=LIMIT_S, margin=2)
        pf_wl, pf_s = pathfinder(g, nets)
        params = {"array": f"{size}x{size}", "tracks": 5, "nets": n, "variables": prog.n_vars,
                  "sweep": "array", "cores": cores}
        emit(rows, "sweep_exact_s", round(res.seconds, 3), "s", {**params, "status": res.status})
        emit(rows, "sweep_pathfinder_s", round(pf_s, 4), "s", params)
        sweep.append(("array", size, n, prog.n_vars, res, pf_wl, pf_s))
        if res.status == "timeout":
            break
    g8 = graphs[(8, 5)]
    for n in (10, 15, 20, 25, 30, 40):
        nets = random_nets(g8, n, 0, max_sinks=2)
        prog = build_program(g8, nets, 2)
        res = exact_route(g8, nets, timeout_s=LIMIT_S, margin=2)
        pf_wl, pf_s = pathfinder(g8, nets)
        params = {"array": "8x8", "tracks": 5, "nets": n, "variables": prog.n_vars,
                  "sweep": "nets", "cores": cores}
        emit(rows, "sweep_exact_s", round(res.seconds, 3), "s", {**params, "status": res.status})
        emit(rows, "sweep_pathfinder_s", round(pf_s, 4), "s", params)
        sweep.append(("nets", 8, n, prog.n_vars, res, pf_wl, pf_s))
        if res.status == "timeout":
            break
    # ---- summary
    print(f"\nexact router vs PathFinder ({cores} cores); gap = (PathFinder - exact) / exact")
    print(f"{'array':>5} {'tr':>2} {'nets':>4} {'cases':>5} {'optimal':>7} {'unrout':>6} "
          f"{'pf fail':>7} {'mean gap':>8} {'worst':>6} {'pf ms':>6} {'exact s':>8} "
          f"{'max s':>6}")
    for (size, tracks) in graphs:
        for n in sorted({r["nets"] for r in table if r["array"] == f"{size}x{size}"}):
            rs = [r for r in table if r["array"] == f"{size}x{size}" and r["tracks"] == tracks
                  and r["nets"] == n]
            gaps = [r["gap"] for r in rs if r["gap"] is not None]
            print(f"{size}x{size:<3} {tracks:>2} {n:>4} {len(rs):>5} "
                  f"{sum(r['status'] == 'optimal' for r in rs):>7} "
                  f"{sum(r['status'] == 'unroutable' for r in rs):>6} "
                  f"{sum(r['pf_wl'] is None for r in rs):>7} "
                  f"{statistics.mean(gaps) * 100 if gaps else 0:>7.1f}% "
                  f"{max(gaps) * 100 if gaps else 0:>5.1f}% "
                  f"{statistics.mean(r['pf_s'] for r in rs) * 1000:>6.1f} "
                  f"{statistics.mean(r['ex_s'] for r in rs):>8.2f} "
                  f"{max(r['ex_s'] for r in rs):>6.2f}")
    gaps = [r["gap"] for r in table if r["gap"] is not None]
    worse = [r for r in table if r["gap"] is not None and r["gap"] < 0]
    pf_only = [r for r in table if r["pf_wl"] is not None and r["status"] != "optimal"]
    ex_only = [r for r in table if r["pf_wl"] is None and r["status"] == "optimal"]
    emit(rows, "mean_gap", round(statistics.mean(gaps), 4), "fraction", {"cases": len(gaps)})
    emit(rows, "worst_gap", round(max(gaps), 4), "fraction", {"cases": len(gaps)})
    emit(rows, "cases_exact_longer", len(worse), "cases", {"cases": len(gaps)})
    print(f"all {len(gaps)} cases both routed: mean gap {statistics.mean(gaps) * 100:.1f}%, "
          f"worst {max(gaps) * 100:.1f}%, exact longer than PathFinder in {len(worse)}; "
          f"routed by PathFinder only: {len(pf_only)}, proved/routed by exact only: "
          f"{len(ex_only)}")
    print("\nsolver comparison (same program, 4x4, 5 tracks)")
    print(f"{'nets':>4} {'seed':>4} {'reach':>5} {'margin':>6} {'vars':>6} {'highs s':>8} "
          f"{'z3 s':>8} {'wl highs':>8} {'wl z3':>6} {'z3 status':>9}")
    for n, seed, margin, reach, nv, h, z in solver_rows:
        print(f"{n:>4} {seed:>4} {reach!s:>5} {margin!s:>6} {nv:>6} {h.seconds:>8.3f} "
              f"{z.seconds:>8.2f} "
              f"{h.wirelength!s:>8} {z.wirelength!s:>6} {z.status:>9}")
    speed = [z.seconds / h.seconds for *_, h, z in solver_rows]
    emit(rows, "z3_over_highs_time", round(statistics.median(speed), 1), "ratio",
         {"cases": len(speed), "statistic": "median"})
    print(f"z3 / HiGHS time: median {statistics.median(speed):.1f}x, min {min(speed):.1f}x, "
          f"max {max(speed):.1f}x (z3 capped at {Z3_LIMIT_S:.0f} s)")
    print(f"\nsize sweep (exact margin 2, limit {LIMIT_S:.0f} s)")
    print(f"{'sweep':>5} {'array':>5} {'nets':>4} {'vars':>7} {'status':>9} {'exact s':>8} "
          f"{'wl':>5} {'pf wl':>5} {'pf s':>6}")
    for kind, size, n, nv, res, pf_wl, pf_s in sweep:
        print(f"{kind:>5} {size:>2}x{size:<2} {n:>4} {nv:>7} {res.status:>9} "
              f"{res.seconds:>8.2f} {res.wirelength!s:>5} {pf_wl!s:>5} {pf_s:>6.3f}")
    benchlib.save_rows("exact_route", rows)


if __name__ == "__main__":
    main()
