"""Invariants every back-end pass must keep, checked after each one.

A violation is a bug in the pass, never bad input: it is raised as
:class:`cgra.errors.InternalError` naming the pass, so it is caught where it happens instead
of surfacing later as a bitstream conflict or a wrong simulation.

* placement (:func:`mapper.backend.place.check_placement`): every instance on a site of its tag, no
  site over capacity;
* routing (:func:`mapper.backend.route.check_routing` plus the sinks of the packed nets): every net a
  tree rooted at its source reaching every sink along graph edges (so each routing mux has
  one select per net), no routing node used by two nets;
* pipelining (:func:`check_balanced`): every PE sees its operands with the
  same extra latency.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from cgra.errors import CgraError, InternalError, RoutingError
from mapper.backend.place import check_placement
from mapper.backend.route import check_routing

if TYPE_CHECKING:     # annotations only: mapper.backend.pipeline calls check_pipelined after every pass
    from mapper.collateral import Collateral
    from mapper.backend.pack import PackedDesign
    from mapper.backend.pipeline import PipelineResult
    from mapper.backend.place import Placement
    from mapper.backend.route import RoutingResult


def _internal(pass_name: str, exc: CgraError) -> InternalError:
    return InternalError(f"pass '{pass_name}' broke an invariant (a compiler bug): {exc}")


def check_placed(pass_name: str, packed: PackedDesign, placement: Placement,
                 coll: Collateral) -> None:
    """Placement invariants; :class:`InternalError` naming ``pass_name``."""
    try:
        check_placement(packed, placement, coll)
    except CgraError as exc:
        raise _internal(pass_name, exc) from None


def check_routed(pass_name: str, packed: PackedDesign, routing: RoutingResult,
                 coll: Collateral) -> None:
    """Routing invariants (module docstring); :class:`InternalError` naming ``pass_name``."""
    try:
        check_routing(routing, coll)
        for net in packed.nets:
            r = routing.nets.get(net.name)
            got = set(routing.dynamic[net.name].sinks) if net.name in routing.dynamic else \
                set(r.paths) if r is not None else set()
            missing = sorted(set(net.sinks) - got)
            if missing:
                raise CgraError(f"net {net.name} does not reach sink(s) "
                                f"{[f'{i}.{p}' for i, p in missing][:4]}")
    except CgraError as exc:
        raise _internal(pass_name, exc) from None


def check_pipelined(pass_name: str, res: PipelineResult, coll: Collateral) -> None:
    """Routing and latency invariants of a pipelining pass's result; :class:`InternalError`
    naming ``pass_name``."""
    check_routed(pass_name, res.packed, res.routing, coll)
    try:
        check_balanced(res)
    except CgraError as exc:
        raise _internal(pass_name, exc) from None


def check_balanced(result: PipelineResult) -> None:
    """Raise :class:`RoutingError` unless every PE's operands have equal extra latency."""
    by_inst: dict[str, set[int]] = {}
    for (inst, _port), s in result.sigma_in.items():
        if result.packed.instances[inst].tag == "p":
            by_inst.setdefault(inst, set()).add(s)
    for inst, vals in by_inst.items():
        if len(vals) > 1:
            raise RoutingError(f"PE {inst}: operands arrive with extra latencies {sorted(vals)}")
