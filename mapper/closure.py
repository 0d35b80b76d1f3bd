"""Closing a design: place, route and pipeline until it routes, balances and (with a target
clock) meets timing.

A failure (``RoutingError`` from routing or branch-delay matching) or a missed target places
the design again (:func:`attempts`, :func:`mapper.params.attempt_plan`: after the analytical
placement, annealing alone from seeds ``place.seed + 1000 k``); with an
HPWL-exponent sweep (Cascade) the whole search runs once per exponent and the highest Fmax is
kept (:func:`sweep`). :func:`back_end` chains pack, the closure, register absorption and the
bitstream in memory; :func:`mapper.flow.run_stages` runs the same search file to file.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable

from cgra.errors import RoutingError
from mapper.backend.absorb import absorb_chains, check_absorb
from mapper.backend.bitstream import MemEncoder, generate
from mapper.backend.checks import check_placed, check_routed
from mapper.backend.pack import pack
from mapper.backend.pipeline import PipelineResult, pipeline, registers_of
from mapper.backend.place import PlaceParams, Placement, place
from mapper.backend.route import RoutingResult, route_design
from mapper.collateral import Collateral
from mapper.netlist import Netlist
from mapper.params import FlowParams, Step, attempt_name, attempt_plan
from mapper.stages import FlowResult


def sweep(p: FlowParams, close: Callable[[FlowParams], tuple[Any, PipelineResult,
                                                                 list[dict[str, Any]],
                                                                 PlaceParams]],
           say: Step) -> tuple[FlowParams, Any, list[dict[str, Any]], list[dict[str, Any]]]:
    """Run ``close`` (placement attempts through pipelining: result, pipelined design,
    attempts that did not close, placement parameters kept) once per exponent of ``p.alphas`` and pick the
    best by (Fmax, -registers). Returns (the winning parameters with their seed, its
    result, its attempts that did not close, the sweep table [{alpha, seed, fmax_mhz,
    registers, kept}] or [] without a sweep). Raises the last ``RoutingError`` when no
    exponent closes."""
    alphas = tuple(p.alphas) or (p.place.alpha,)
    if len(alphas) == 1:
        q = dataclasses.replace(p, place=dataclasses.replace(p.place, alpha=alphas[0]))
        res, _pr, failed, _seed = close(q)
        return q, res, failed, []
    table: list[dict[str, Any]] = []
    best: tuple[tuple[float, int], FlowParams, Any, list[dict[str, Any]], int] | None = None
    last: RoutingError | None = None
    for i, a in enumerate(alphas):
        say(f"place/route/pipeline with alpha {a:g}")
        q = dataclasses.replace(p, place=dataclasses.replace(p.place, alpha=a))
        try:
            res, pr, failed, kept = close(q)
        except RoutingError as exc:
            last = exc
            table.append({"alpha": a, "error": str(exc), "kept": False})
            continue
        row = {"alpha": a, "seed": kept.seed, "fmax_mhz": round(pr.timing.fmax_mhz, 2),
               "registers": registers_of(pr), "kept": False}
        table.append(row)
        key = (round(pr.timing.fmax_mhz, 6), -row["registers"])
        if best is None or key > best[0]:
            best = (key, dataclasses.replace(q, place=kept, place_attempts=1), res, failed, i)
    if best is None:
        assert last is not None
        raise last
    table[best[4]]["kept"] = True
    return best[1], best[2], best[3], table


def place_to_pipeline(packed, coll: Collateral, p: FlowParams, say: Step | None = None
                      ) -> tuple[Placement, RoutingResult, PipelineResult,
                                 list[dict[str, Any]], list[dict[str, Any]]]:
    """:func:`close_design` once, or once per HPWL exponent of ``p.alphas`` keeping the
    highest Fmax. Returns (placement, routing, pipelined design, failed attempts, the sweep
    table [{alpha, seed, fmax_mhz, registers, kept}], empty without a sweep); errors as
    :func:`close_design`."""
    def close(q: FlowParams):
        return close_design(packed, coll, q, say)

    _q, (pl, rr, pr), failed, table = sweep(p, close, say or (lambda _m: None))
    return pl, rr, pr, failed, table


#: one placement attempt: (placement parameters, stage holder, failed attempts so far) ->
#: (result, pipelined)
Once = Callable[[PlaceParams, list[str], list[dict[str, Any]]], tuple[Any, PipelineResult]]


def attempts(p: FlowParams, once: Once, say: Step
              ) -> tuple[Any, PipelineResult, list[dict[str, Any]], PlaceParams, bool]:
    """Placement attempts (:func:`~mapper.params.attempt_plan`) of ``once`` until one
    closes: routing and branch-delay matching succeed and, with a target clock, the timing
    model meets it. A failure (``RoutingError``) or a missed target is recorded ({seed,
    placer, stage, error}; placer ``"analytical"`` or ``"sa"``; stage ``"timing"`` for a
    missed target) and the next attempt is placed. Returns (result, pipelined design, the
    attempts that did not close, the placement parameters kept, whether ``once`` last ran
    with them, i.e. its files are on disk). When every attempt routes but none meets the
    target, the highest-Fmax attempt is kept (the miss is in the report). Raises the last
    ``RoutingError`` (naming the resource that ran out) when no attempt routes."""
    failed: list[dict[str, Any]] = []
    target = p.pipeline.target_period_ps
    best: tuple[Any, PipelineResult, int] | None = None
    plan = attempt_plan(p)
    tried: list[int] = []               # plan index of each entry of failed

    def record(k: int, stage: str, error: str) -> None:
        pp = plan[k]
        failed.append({"seed": pp.seed, "placer": "analytical" if pp.analytical else "sa",
                       "stage": stage, "error": error})
        tried.append(k)

    for k, pp in enumerate(plan):
        stage = ["place"]
        try:
            res, pr = once(pp, stage, list(failed))
        except RoutingError as exc:
            record(k, stage[0], str(exc))
            say(f"{stage[0]} failed with {attempt_name(pp)}: placing again")
            continue
        if target is None or pr.timing.period_ps <= target + 1e-6:
            return res, pr, failed, pp, True
        record(k, "timing", pr.timing.miss or
               f"reached {pr.timing.fmax_mhz:.1f} MHz, target {1e6 / target:.1f} MHz "
               f"(critical path {pr.timing.period_ps:.1f} ps)")
        if best is None or pr.timing.fmax_mhz > best[1].timing.fmax_mhz:
            best = (res, pr, k)
        if sum(f["stage"] == "timing" for f in failed) >= max(1, p.timing_attempts):
            break
        say(f"timing not met with {attempt_name(pp)} ({pr.timing.fmax_mhz:.0f} MHz): "
            f"placing again")
    if best is not None:
        res, pr, k = best
        kept = [f for f, i in zip(failed, tried, strict=True) if i != k]
        return res, pr, kept, plan[k], k == tried[-1]
    names = "; ".join(attempt_name(plan[i]) for i in tried)
    raise RoutingError(f"{len(failed)} placement attempt(s) ({names}) all failed; the last at "
                       f"{failed[-1]['stage']}: {failed[-1]['error']}")


def close_design(packed, coll: Collateral, p: FlowParams, say: Step | None = None
                       ) -> tuple[tuple[Placement, RoutingResult, PipelineResult],
                                  PipelineResult, list[dict[str, Any]], int]:
    """Place, route and pipeline ``packed`` in memory through :func:`attempts` (every pass
    checked, :mod:`mapper.backend.checks`). Returns ((placement, routing, pipelined), pipelined,
    attempts that did not close, seed kept). Raises ``RoutingError`` when no attempt routes,
    :class:`PlacementError` at once when the design does not fit."""
    def once(pp: PlaceParams, stage: list[str], _failed: list[dict[str, Any]]):
        stage[0] = "place"
        pl = place(packed, coll, pp)
        check_placed("place", packed, pl, coll)
        stage[0] = "route"
        rr = route_design(packed, pl, coll, p.route)
        check_routed("route", packed, rr, coll)
        stage[0] = "pipeline"
        pr = pipeline(packed, pl, rr, coll, p.pipeline_params())
        return (pl, rr, pr), pr

    res, pr, failed, kept, _last = attempts(p, once, say or (lambda _m: None))
    return res, pr, failed, kept


def back_end(netlist: Netlist, coll: Collateral, params: FlowParams | None = None,
             mem_encoder: MemEncoder | None = None) -> FlowResult:
    """pack -> place -> route -> pipeline -> bitstream in memory (no files), timing each
    stage: the same stage functions the ``run_<stage>`` file steps call. ``mem_encoder``
    replaces Lake's MEM config encoder (a fabric with other MEM cores). Errors of each stage
    propagate (``MappingError``, ``PlacementError``, ``RoutingError``, ``ConfigError``,
    ``CollateralError``)."""
    p = params or FlowParams()
    secs: dict[str, float] = {}

    def timed(stage: str, fn: Callable[[], Any]) -> Any:
        t = time.perf_counter()
        out = fn()
        secs[stage] = time.perf_counter() - t
        return out

    if p.absorb_chains:
        check_absorb(p, coll)
    packed = timed("pack", lambda: pack(netlist, coll, p.pack))
    pl, rr, pr, failed, sweep = timed("place_route_pipeline",
                                      lambda: place_to_pipeline(packed, coll, p))
    absorption = None
    if p.absorb_chains:
        packed, pl, rr, pr, absorption = timed(
            "register_absorption", lambda: absorb_chains(packed, pl, rr, pr, coll, p))
    bs = timed("bitstream", lambda: generate(pr.packed, pl, pr.routing, coll, mem_encoder,
                                             p.power_gate, p.quiet_unused))
    return FlowResult(packed, pl, rr, pr, bs, secs, failed, sweep, absorption)


__all__ = ["Once", "attempts", "back_end", "close_design", "place_to_pipeline", "sweep"]
