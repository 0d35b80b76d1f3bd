"""Plain Python values as hwtypes values: the conversions the Python model, the RTL test
bench and the instruction types share (``Inst(Opcode.Add, 0, 1, 0)``, model inputs given as
ints).

Below :mod:`peak.spec`, :mod:`peak.normalize` and :mod:`peak.model`, which all use it, so that
none of them imports another only for these.
"""
from __future__ import annotations

import functools
from typing import Any

import hwtypes as ht

from cgra.errors import ConfigError
from hwtypes.adt_meta import ProductMeta, SumMeta


def int_value(T: Any, v: int, what: str) -> Any:
    """The plain int (or bool) ``v`` as a value of hwtypes type ``T``: a Bit takes 0 or 1, a
    ``w``-bit vector ``-2**(w-1) <= v < 2**w``; ConfigError naming ``what`` otherwise."""
    v = int(v)
    if issubclass(T, ht.AbstractBit):
        if v not in (0, 1):
            raise ConfigError(f"{what} = {v} is not a Bit (0 or 1)")
        return T(v)
    w = T.size
    if not -(1 << (w - 1)) <= v < (1 << w):
        raise ConfigError(f"{what} = {v} does not fit {T.__name__} ({w} bits); give "
                          f"{-(1 << (w - 1))} .. {(1 << w) - 1}")
    return T(v)


def coerce(T: Any, v: Any, what: str) -> Any:
    """``v`` (a value of ``T``, a plain int or bool, or another hwtypes bit / bit vector) as a
    value of hwtypes type ``T``; ConfigError naming ``what`` when it is none of these or does
    not fit (:func:`int_value`)."""
    if isinstance(v, T):
        return v
    if isinstance(v, (bool, int)):
        return int_value(T, v, what)
    if isinstance(v, (ht.AbstractBit, ht.AbstractBitVector)):
        return T(v)
    raise ConfigError(f"{what} = {v!r} is not a value of {T}")


def accept_int_fields(isa: Any) -> None:
    """Let the Product types of an ISA take plain ints for their ``Bit`` / ``BitVector[n]``
    fields, as hwtypes' own ``Bit(0)`` / ``BitVector[16](5)`` do: ``Inst(Opcode.Add, 0, 1, 0)``
    instead of ``Inst(Opcode.Add, Bit(0), Bit(1), Bit(0))``. Ranges as for model inputs
    (ConfigError naming the field otherwise); other values are passed on to hwtypes'
    type check unchanged. Sets an ``__init__`` on each Product type of ``isa`` itself (nested
    Products and Sum variants included; hwtypes' shared anonymous base classes are not
    touched) once; idempotent. Called for the instruction type
    of every :class:`~peak.spec.Peak` subclass when the class is defined."""

    seen: set[int] = set()

    def visit(T: Any) -> None:
        if not isinstance(T, type) or id(T) in seen:
            return
        seen.add(id(T))
        if isinstance(T, SumMeta):
            for variant in T.fields:
                visit(variant)
            return
        if not isinstance(T, ProductMeta) or not T.is_bound:
            return
        fields = list(T.field_dict.items())
        for _, FT in fields:
            visit(FT)
        if getattr(T.__dict__.get("__init__"), "_peak_accepts_ints_", False):
            return
        orig = T.__init__          # hwtypes' generated __init__, on a shared anonymous base

        def conv(name: str, FT: Any, v: Any) -> Any:
            if isinstance(v, (bool, int)) and isinstance(FT, type) and \
                    (issubclass(FT, ht.AbstractBit) or
                     (issubclass(FT, ht.AbstractBitVector) and FT.is_sized)):
                return int_value(FT, v, f"{T.__name__}.{name}")
            return v

        @functools.wraps(orig)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            args = tuple(conv(n, FT, v) for (n, FT), v in zip(fields, args, strict=False)) \
                + args[len(fields):]
            kwargs = {k: conv(k, T.field_dict[k], v) if k in T.field_dict else v
                      for k, v in kwargs.items()}
            orig(self, *args, **kwargs)

        __init__._peak_accepts_ints_ = True  # type: ignore[attr-defined]
        T.__init__ = __init__
    visit(isa)
