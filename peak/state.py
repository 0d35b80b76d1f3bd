"""The state a PE spec declares in ``__init__``: :class:`Register`, :class:`RegisterFile`,
and :class:`PeakBase`, the base every spec (and so every sub-PE) derives from.

These are what the normal form (:mod:`peak.normalize`) and the Python model
(:mod:`peak.model`) recognise in a spec instance; they carry no behaviour of either, so both
import this module and neither imports :mod:`peak.spec`, which sits above them (its
:class:`~peak.spec.Peak` runs the Python model when called). Re-exported by
:mod:`peak.spec` and :mod:`peak`.
"""
from __future__ import annotations

from typing import Any

from cgra.errors import SpecError
from peak.assembler import is_bit_type, is_bv_type


class PeakBase:
    """What every PE spec is (:class:`peak.spec.Peak` derives from it): the normal form
    recognises a spec class, and a sub-PE attribute of a spec instance, by this base."""


class Register:
    """A state element of hwtypes type ``T`` (``Bit`` or ``BitVector[n]``) with reset value
    ``init`` (int). One cycle of latency."""

    def __init__(self, T: Any, init: int = 0):
        if not (is_bit_type(T) or is_bv_type(T)):
            raise SpecError(f"Register type {T!r} must be Bit or a sized BitVector/SInt/UInt")
        self.T = T
        self.init = int(init)
        self.value: Any = T(self.init)

    def __call__(self, *args: Any) -> Any:
        raise SpecError("a Register is only called inside a Peak spec's __call__ "
                        "(it is interpreted by the normal form)")


class RegisterFile:
    """``depth`` entries of hwtypes type ``T``, reset to ``init``. ``read(addr)`` is
    combinational; ``write(addr, data, en=1)`` takes effect at the next cycle. ``addr`` is a
    bit vector of ``max(1, (depth-1).bit_length())`` bits; out-of-range addresses read
    entry 0 and write nothing."""

    def __init__(self, depth: int, T: Any, init: int = 0):
        if depth < 1:
            raise SpecError(f"RegisterFile depth {depth} must be >= 1")
        if not (is_bit_type(T) or is_bv_type(T)):
            raise SpecError(f"RegisterFile type {T!r} must be Bit or a sized BitVector")
        self.depth = depth
        self.T = T
        self.init = int(init)
        self.values: list[Any] = [T(self.init) for _ in range(depth)]
