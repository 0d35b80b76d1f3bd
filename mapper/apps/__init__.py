"""Shipped applications written in the DSL (:mod:`mapper.frontend.dsl`).

``build_app(name, width=64, height=64, unroll=1)`` returns a :class:`dsl.Pipeline`;
``lower_app`` returns the IR :class:`mapper.ir.Pipeline`.  Each app module documents its exact
integer formulas.  Boundary handling everywhere: outputs only where the whole stencil is inside
the input (the output shrinks by the stencil footprint minus one per stage).
"""
from __future__ import annotations

from collections.abc import Callable

from cgra.errors import MappingError
from mapper import ir
from mapper.apps import brighten_blur, gaussian, harris, pointwise, unsharp
from mapper.frontend import dsl

#: app name -> builder(width, height, unroll) -> dsl.Pipeline
APPS: dict[str, Callable[[int, int, int], dsl.Pipeline]] = {
    "pointwise": pointwise.build,
    "brighten_blur": brighten_blur.build,
    "gaussian": gaussian.build,
    "unsharp": unsharp.build,
    "harris": harris.build,
}


def build_app(name: str, width: int = 64, height: int = 64, unroll: int = 1) -> dsl.Pipeline:
    """The DSL pipeline of app ``name`` on a ``width`` x ``height`` input image.

    Raises :class:`MappingError` for an unknown app name.
    """
    if name not in APPS:
        raise MappingError(f"unknown app '{name}'; shipped apps: {', '.join(sorted(APPS))}")
    return APPS[name](width, height, unroll)


def lower_app(name: str, width: int = 64, height: int = 64, unroll: int = 1) -> ir.Pipeline:
    """The IR pipeline of app ``name`` (see :func:`build_app`)."""
    return build_app(name, width, height, unroll).lower()
