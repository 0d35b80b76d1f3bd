"""Type families: the value types a normal form is evaluated with.

A family maps the hwtypes types a spec names (``Bit``, ``BitVector[n]``, ``SIntVector[n]``,
``UIntVector[n]``) to its own value types and provides ``ite``. The same normalised
``__call__`` (see :mod:`peak.normalize`) runs under

* :data:`PY` — concrete hwtypes ``Bit``/``BitVector`` (the Python model, :mod:`peak.model`);
* :data:`SMT` — hwtypes ``SMTBit``/``SMTBitVector`` over pysmt (:mod:`peak.smt`);
* the magma family of :mod:`peak.rtl` (hardware).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import hwtypes as ht

from cgra.errors import SpecError


@dataclass(frozen=True)
class Family:
    """A value family. ``Bit``/``BitVector``/``Signed``/``Unsigned`` are the family's types
    (``BitVector[n]`` indexes a width in bits)."""

    name: str
    Bit: Any
    BitVector: Any
    Signed: Any
    Unsigned: Any

    def map_type(self, T: Any) -> Any:
        """The family type standing for hwtypes type ``T`` (other objects are returned)."""
        if not isinstance(T, type):
            return T
        if issubclass(T, ht.AbstractBit):
            return self.Bit
        if issubclass(T, ht.AbstractBitVector):
            if issubclass(T, (ht.SIntVector, ht.SMTSIntVector)):
                base = self.Signed
            elif issubclass(T, (ht.UIntVector, ht.SMTUIntVector)):
                base = self.Unsigned
            else:
                base = self.BitVector
            return base[T.size] if T.is_sized else base
        return T

    def constant(self, width: int, value: int) -> Any:
        """An unsigned constant of ``width`` bits."""
        return self.BitVector[width](value)

    def value(self, T: Any, v: Any) -> Any:
        """``v`` (int, bool or family value) as a value of hwtypes type ``T`` in this family."""
        FT = self.map_type(T)
        if isinstance(v, (bool, int)):
            return FT(int(v))
        return FT(v)

    def cast_leaf(self, bits: Any, node: Any) -> Any:
        """A slice of a flat instruction as the family value of an assembler leaf node."""
        if node.kind == "bit":
            return bits[0]
        if node.kind == "bits" and node.signed:
            return self.Signed[node.width](bits)
        return bits

    def ite(self, cond: Any, a: Any, b: Any) -> Any:
        return cond.ite(a, b)


PY = Family("python", ht.Bit, ht.BitVector, ht.SIntVector, ht.UIntVector)
"""Concrete hwtypes values (simulation)."""

SMT = Family("smt", ht.SMTBit, ht.SMTBitVector, ht.SMTSIntVector, ht.SMTUIntVector)
"""Symbolic hwtypes values over pysmt (formal model)."""


def _is_bit(x: Any) -> bool:
    return isinstance(x, ht.AbstractBit) or type(x).__name__ == "MBit"


def make_ite(file: str):
    """The ``__ite__`` helper of a normal form; errors name ``file`` and the if-line."""

    def __ite__(cond: Any, a: Any, b: Any, where: int) -> Any:
        if a is b:
            return a
        if isinstance(cond, bool):
            return a if cond else b
        if type(cond) is ht.Bit and not isinstance(a, tuple):
            # concrete fast path (the Python model): pick without building an ite
            r, other = (a, b) if cond else (b, a)
            if isinstance(r, int) and not isinstance(other, int):
                return type(other)(r)
            if r is b and type(a) is not type(b) and not isinstance(a, int):
                return type(a)(b)
            if isinstance(r, int):
                raise SpecError("both branches give plain Python ints; give one of them a "
                                "type, e.g. Data(0)", file, where)
            return r
        if isinstance(a, tuple) or isinstance(b, tuple):
            if not (isinstance(a, tuple) and isinstance(b, tuple)) or len(a) != len(b):
                raise SpecError("the two branches give values of different shapes "
                                f"({_shape(a)} vs {_shape(b)}); return / assign the same "
                                "number of values on every path", file, where)
            return tuple(__ite__(cond, x, y, where) for x, y in zip(a, b, strict=True))
        if not _is_bit(cond):
            raise SpecError(f"condition of type {type(cond).__name__} is not a Bit; compare "
                            "it (== / !=) to get a Bit", file, where)
        if isinstance(a, int) and not isinstance(b, int):
            a = type(b)(a)
        elif isinstance(b, int) and not isinstance(a, int):
            b = type(a)(b)
        elif isinstance(a, int) and isinstance(b, int):
            raise SpecError("both branches give plain Python ints; give one of them a type, "
                            "e.g. Data(0)", file, where)
        elif type(a) is not type(b):
            if _is_bit(a) != _is_bit(b) or getattr(a, "size", 1) != getattr(b, "size", 1):
                raise SpecError(f"the branches give values of different types "
                                f"{type(a).__name__} and {type(b).__name__}; give both the "
                                "same type (zext/sext or a slice; bit.ite(...) for a Bit)",
                                file, where)
            try:
                b = type(a)(b)          # same width, other signedness
            except Exception as e:  # noqa: BLE001 - re-raised as SpecError with the line
                raise SpecError(f"branches have different types {type(a).__name__} and "
                                f"{type(b).__name__}: {e}", file, where) from e
        return cond.ite(a, b)

    return __ite__


def _shape(x: Any) -> str:
    return f"tuple of {len(x)}" if isinstance(x, tuple) else "one value"


def band(*xs: Any) -> Any:
    """Bitwise AND of Bits / Python bools (the normal form of ``and``)."""
    r: Any = True
    for x in xs:
        if isinstance(r, bool) and isinstance(x, bool):
            r = r and x
        elif isinstance(r, bool):
            r = x if r else False
        elif isinstance(x, bool):
            r = r if x else False
        else:
            r = r & x
    return r


def bor(*xs: Any) -> Any:
    """Bitwise OR of Bits / Python bools (the normal form of ``or``)."""
    r: Any = False
    for x in xs:
        if isinstance(r, bool) and isinstance(x, bool):
            r = r or x
        elif isinstance(r, bool):
            r = True if r else x
        elif isinstance(x, bool):
            r = True if x else r
        else:
            r = r | x
    return r


def bnot(x: Any) -> Any:
    """Bitwise NOT of a Bit / Python bool (the normal form of ``not``)."""
    return (not x) if isinstance(x, bool) else ~x
