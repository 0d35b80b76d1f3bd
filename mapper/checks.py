"""Invariants every back-end pass must keep, checked after each one.

A violation is a bug in the pass, never bad input: it is raised as
:class:`cgra.errors.InternalError` naming the pass, so it is caught where it happens instead
of surfacing later as a bitstream conflict or a wrong simulation.

* placement (:func:`mapper.place.check_placement`): every instance on a site of its tag, no
  site over capacity;
* routing (:func:`mapper.route.check_routing` plus the sinks of the packed nets): every net a
  tree rooted at its source reaching every sink along graph edges (so each routing mux has
  one select per net), no routing node used by two nets;
* pipelining (:func:`mapper.pipeline.check_balanced`): every PE sees its operands with the
  same extra latency.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from cgra.errors import CgraError, InternalError

if TYPE_CHECKING:
    from mapper.collateral import Collateral
    from mapper.pack import PackedDesign
    from mapper.pipeline import PipelineResult
    from mapper.place import Placement
    from mapper.route import RoutingResult


def _internal(pass_name: str, exc: CgraError) -> InternalError:
    return InternalError(f"pass '{pass_name}' broke an invariant (a compiler bug): {exc}")


def check_placed(pass_name: str, packed: PackedDesign, placement: Placement,
                 coll: Collateral) -> None:
    """Placement invariants; :class:`InternalError` naming ``pass_name``."""
    from mapper.place import check_placement
    try:
        check_placement(packed, placement, coll)
    except CgraError as exc:
        raise _internal(pass_name, exc) from None


def check_routed(pass_name: str, packed: PackedDesign, routing: RoutingResult,
                 coll: Collateral) -> None:
    """Routing invariants (module docstring); :class:`InternalError` naming ``pass_name``."""
    from mapper.route import check_routing
    try:
        check_routing(routing, coll)
        for net in packed.nets:
            r = routing.nets.get(net.name)
            missing = sorted(set(net.sinks) - set(r.paths)) if r is not None else net.sinks
            if missing:
                raise CgraError(f"net {net.name} does not reach sink(s) "
                                f"{[f'{i}.{p}' for i, p in missing][:4]}")
    except CgraError as exc:
        raise _internal(pass_name, exc) from None


def check_pipelined(pass_name: str, res: PipelineResult, coll: Collateral) -> None:
    """Routing and latency invariants of a pipelining pass's result; :class:`InternalError`
    naming ``pass_name``."""
    from mapper.pipeline import check_balanced
    check_routed(pass_name, res.packed, res.routing, coll)
    try:
        check_balanced(res)
    except CgraError as exc:
        raise _internal(pass_name, exc) from None
