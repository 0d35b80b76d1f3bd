"""Front end A: a Halide-like embedded DSL for stencil pipelines, lowered to the IR.

Example (the unified-buffer paper's brighten + blur)::

    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (64, 64))          # shape = (width, height)
    brighten = Func("brighten"); brighten[x, y] = inp[x, y] * 2
    blur = Func("blur")
    blur[x, y] = (brighten[x, y] + brighten[x + 1, y]
                  + brighten[x, y + 1] + brighten[x + 1, y + 1]) / 4
    pipe = Pipeline(blur, "brighten_blur").lower()  # -> mapper.ir.Pipeline

Language (a subset of Halide with its semantics):

- Types ``UInt16``, ``Int16`` (16-bit words, wrap-around arithmetic), ``Bool`` (comparison
  results) and ``BFloat16`` (below).  A Python int adopts the type of the other operand; mixing
  ``UInt16`` and ``Int16`` needs ``cast(type, e)`` (a bit-preserving reinterpretation, as in
  Halide for same-width integers).
- ``BFloat16`` (Halide ``BFloat(16)``; 16-bit storage, the encoding is what streams through
  the array): ``+ - *``, unary ``-`` (``0 - a``, as Halide), ``min``/``max``, comparisons and
  ``select`` between BFloat16 values, lowered to the ``float.*`` IR ops (the FP PE,
  ``peak/examples/cgra_pe_bf16.py``; round to nearest even, subnormals flushed: docs/peak_dsl.md
  "BFloat16"). A Python int or float next to a BFloat16 operand is a BFloat16 constant
  (:func:`bf16_bits`: nearest even from its float32 value); ``/`` by a power-of-two literal is
  the multiplication by its exact reciprocal; any other ``a / b`` and ``exp(a)`` are the
  approximations of :mod:`mapper.frontend.float_math` (<= 2 ulp, not correctly rounded: Halide's
  golden rounds exactly, so results may differ from it by that bound). ``cast(BFloat16, e)`` of a UInt16 / Int16 value
  rounds it to nearest even (IR ``float.from_u16`` / ``from_s16``, the FP PE's ``I2F``);
  ``cast(Int16, f)`` / ``cast(UInt16, f)`` truncates toward zero (``float.to_s16`` /
  ``to_u16``, ``F2I``), saturating where Halide leaves an out-of-range cast undefined. An
  app may also convert on the host (:func:`to_bf16_bits` on the input image,
  :func:`from_bf16_bits` on the output).
- ``+ - *``, ``/`` and ``//`` by a power-of-two literal (floor division: ``lshr`` / ``ashr``),
  ``>> <<`` by a literal amount in ``[0, 15]``, ``& | ^ ~`` (words or Bools), unary ``-``,
  comparisons ``< <= > >= == !=`` (signed or unsigned by type), ``select(c, a, b)``,
  ``min``/``max``/``clamp``, ``abs`` (``Int16 -> UInt16`` as in Halide).
- ``Func`` with a pure definition ``f[x, y] = e`` and at most one update
  ``f[x, y] += e(r)`` (or ``f[x, y] = f[x, y] op e(r)``) over one ``RDom``; the reduction is
  fully unrolled at lowering (``r.x`` innermost), as the Halide-to-CGRA flow does.
- Accesses ``g[x + c + r.x, y + d + r.y]``: dimension 0 must use the pure var ``x`` and
  dimension 1 ``y``; the var may carry an integer rate, ``g[2*x + 1, 2*y]`` (stride 2,
  downsample) or ``g[x / 2, y / 2]`` (Halide's floor division: each pixel twice, upsample);
  a constant may sit inside the floor, ``g[(x + 1) / 2, y / 2]`` (bilinear upsampling), and
  a floor division is never scaled afterwards (``(x / 2) * 2`` is refused: Halide floors
  first).  One Func reads each producer at one rate.  Multi-rate pipelines are scheduled by
  :mod:`mapper.mapping.polyhedral` and run with ``unroll = 1``.
- ``repeat_edge(inp)``: the input with clamp-to-edge boundary (Halide's
  ``BoundaryConditions.repeat_edge``); stencils may read past the image and the output keeps
  the input's size (:meth:`Pipeline.output_domain`, :meth:`Pipeline.edge_geometry`).
- ``Table(name, rows)``: a compile-time constant 2-D table indexed ``t[i, j]`` = ``rows[j][i]``
  by RDom variables or literals (filter weights).
- ``x % m`` / ``(x + c) % m`` (and ``y``): the computed pixel's own coordinate modulo a
  literal, a ``UInt16`` value (Halide's ``x % 2``, e.g. ``select(x % 2 == 0, a, b)`` on a
  Bayer mosaic's phase). It needs a single-rate pipeline without ``repeat_edge``; on the array
  the pattern comes from a MEM tile holding one row (column) of it, loaded with the bitstream
  (:func:`mapper.mapping.memory.pattern_rom`), not from the host.
- ``LUT(name, values)``: a lookup table indexed by a data expression, ``lut[e]`` =
  ``values[clamp(e, 0, len(values) - 1)]`` (Halide: a ``Buffer`` read at a clamped index; an
  ``Int16`` index below 0 reads entry 0). On the array it is a MEM tile in lookup-table mode
  (IR ``memory.rom2``, :data:`mapper.ir.LUT_OP`): contents loaded with the bitstream, one
  cycle from index to entry. A gamma curve or any function of one 16-bit value.
- ``Pipeline(output, name, unroll=1)``: one output Func or a list of them (several outputs,
  each realised over its own domain); ``unroll`` = output pixels per cycle on the innermost
  (x) dimension.

- Tensor programs (DNN layers): Funcs and Inputs over up to :data:`MAX_DIMS` coordinates
  ``(x, y, channel, batch)`` (``Input("w", Int16, (3, 3, c_in, c_out))`` for weights), RDoms
  of up to 4 dimensions (``r.x r.y r.z r.w``), reads such as ``w[r.x, r.y, r.z, k] *
  in[x + r.x, y + r.y, r.z]`` (a reduction over channels) or ``a[r.x, y] * b[x, r.x]``; and
  Halide's scheduling directives ``f.split(v, outer, inner, factor)``, ``f.unroll(v)``,
  ``f.update().split(r.z, "rzo", "rzi", 8).unroll("rzi")`` (:attr:`Func.directives`; results
  never depend on them; :mod:`mapper.dnn.plan` reads the unrolled lanes). Such a program is
  evaluated by :mod:`mapper.frontend.tensor` and real Halide; :meth:`Pipeline.lower` refuses it
  (:meth:`Pipeline.check_stencil`): the array runs 2-D stencil pipelines only.

Every Func becomes one pipeline stage (one kernel); errors are :class:`MappingError` naming
the Func and the construct.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from cgra.errors import MappingError
from mapper import ir
from mapper.frontend import float_math
import builtins
from fractions import Fraction


# ------------------------------------------------------------------------------ types
@dataclass(frozen=True)
class Type:
    """A DSL scalar type: ``bits`` wide, ``signed`` or not; ``Bool`` has 1 bit; ``is_float``
    for ``BFloat16`` (a 16-bit bf16 encoding, unsigned storage)."""

    name: str
    bits: int
    signed: bool
    is_float: bool = False

    def __repr__(self) -> str:
        return self.name


UInt16 = Type("UInt16", 16, False)
Int16 = Type("Int16", 16, True)
Bool = Type("Bool", 1, False)
BFloat16 = Type("BFloat16", 16, False, True)


def bf16_bits(v: float) -> int:
    """The bf16 encoding of the Python number ``v``: its float32 value rounded to nearest
    even (NaN ``0x7FC0``), as :func:`peak.bf16.bf16_bits`."""
    from peak.bf16 import bf16_bits as _bits  # deferred: loads z3, pysmt, hwtypes, 1 more only when called
    return _bits(float(v))


def to_bf16_bits(img: Any) -> np.ndarray:
    """Element-wise bf16 encodings (uint16) of a numeric array: each value rounded to float32,
    then to bf16 with round to nearest even (Halide's ``cast(BFloat(16), e)``); integers
    ``-256..256`` are exact. The host-side conversion of a BFloat16 input image."""
    a = np.asarray(img)
    if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
        raise MappingError("to_bf16_bits: the array holds NaN or infinite values")
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    return (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF).astype(np.uint16)


def from_bf16_bits(bits: Any) -> np.ndarray:
    """The float32 values (exact) of an array of bf16 encodings (the low 16 bits of each
    element)."""
    b = np.asarray(bits).astype(np.int64) & 0xFFFF
    return (b.astype(np.uint32) << 16).view(np.float32)


# ------------------------------------------------------------------------------ index terms
class _IndexVar:
    """A named index variable: ``v + c`` and ``v - c`` build :class:`Affine` indices."""

    name: str

    def __add__(self, other: Any) -> Affine:
        return Affine.of(self) + other

    __radd__ = __add__

    def __sub__(self, other: Any) -> Affine:
        return Affine.of(self) - other

    def __mul__(self, other: Any) -> Affine:
        return Affine.of(self) * other

    __rmul__ = __mul__

    def __floordiv__(self, other: Any) -> Affine:
        return Affine.of(self) // other

    __truediv__ = __floordiv__

    def __mod__(self, other: Any) -> Coord:
        return Affine.of(self) % other

    def __repr__(self) -> str:
        return self.name


class Var(_IndexVar):
    """A pure variable of a Func definition (``x``, ``y``)."""

    def __init__(self, name: str):
        self.name = name


class RVar(_IndexVar):
    """One dimension of an :class:`RDom`."""

    def __init__(self, rdom: RDom, dim: int, lo: int, extent: int):
        self.rdom, self.dim, self.lo, self.extent = rdom, dim, lo, extent
        self.name = f"{rdom.name}.{'xyzw'[dim] if dim < 4 else dim}"


class RDom:
    """A reduction domain: ``RDom([(min0, extent0), (min1, extent1)], name)``."""

    _count = itertools.count()

    def __init__(self, ranges: list[tuple[int, int]], name: str | None = None):
        if not ranges or any(e < 1 for _, e in ranges):
            raise MappingError(f"RDom {name}: needs >= 1 dimension with extents >= 1, got {ranges}")
        self.name = name or f"r{next(RDom._count)}"
        self.ranges = [(int(lo), int(e)) for lo, e in ranges]
        self.vars = [RVar(self, i, lo, e) for i, (lo, e) in enumerate(self.ranges)]

    def __getitem__(self, i: int) -> RVar:
        if not -len(self.vars) <= i < len(self.vars):
            raise MappingError(f"RDom {self.name}: dimension {i} of a {len(self.vars)}-D "
                               f"RDom")
        return self.vars[i]

    @property
    def x(self) -> RVar:
        return self[0]

    @property
    def y(self) -> RVar:
        return self[1]

    @property
    def z(self) -> RVar:
        return self[2]

    @property
    def w(self) -> RVar:
        return self[3]

    def points(self) -> list[dict[RVar, int]]:
        """All points in Halide order (dimension 0 innermost)."""
        pts = []
        for combo in itertools.product(*[range(lo, lo + e) for lo, e in reversed(self.ranges)]):
            pts.append({v: c for v, c in zip(reversed(self.vars), combo, strict=True)})
        return pts


class Affine:
    """``floor((scale * v + pre) / div) + sum(RVar terms) + const`` (an index expression): at
    most one pure Var ``v`` with an integer rate ``scale / div`` and an offset ``pre`` inside
    the floor (Halide's ``2*x``, ``x / 2``, ``(x + 1) / 2``; ``/`` of integers floors), RDom
    variables and the constant outside it with unit coefficients."""

    def __init__(self, terms: tuple[Var | RVar, ...], const: int, scale: int = 1, div: int = 1,
                 pre: int = 0):
        self.terms, self.const, self.scale, self.div, self.pre = terms, const, scale, div, pre

    def _rate_op(self, k: Any, op: str) -> Affine:
        pure = [t for t in self.terms if isinstance(t, Var)]
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise MappingError(f"index expression {self!r} {op} {k!r}: only a positive integer "
                               f"literal may scale or divide an index")
        if len(self.terms) != 1 or len(pure) != 1:
            raise MappingError(f"index expression ({self!r}) {op} {k}: only the pure variable "
                               f"plus a constant may be scaled or divided; write e.g. 2*x + 1, "
                               f"x/2 + 1 or (x + 1)/2")
        if op == "*":
            if self.div != 1:
                raise MappingError(f"index expression ({self!r}) * {k}: a floor division "
                                   f"cannot be scaled (Halide floors first); write 2*x or "
                                   f"x/2 without scaling the quotient")
            scale, div, pre = self.scale * k, 1, (self.pre + self.const) * k
        else:       # floor(floor(a / b) / k) = floor(a / (b k)); the constant moves inside
            scale, div, pre = self.scale, self.div * k, self.pre + self.div * self.const
        g = math.gcd(scale, div)
        # floor((g a v + p) / (g b)) = floor((a v + floor(p / g)) / b) for integer a v
        return Affine(self.terms, 0, scale // g, div // g, pre // g)
    def __mul__(self, k: Any) -> Affine:
        return self._rate_op(k, "*")

    __rmul__ = __mul__

    def __floordiv__(self, k: Any) -> Affine:
        return self._rate_op(k, "/")

    __truediv__ = __floordiv__

    def __mod__(self, m: Any) -> Coord:
        """``(x + c) % m``: the pixel's coordinate modulo a literal, a :class:`Coord` value."""
        if not isinstance(m, int) or isinstance(m, bool) or m < 1:
            raise MappingError(f"({self!r}) % {m!r}: the modulus must be a positive integer "
                               f"literal")
        if len(self.terms) != 1 or not isinstance(self.terms[0], Var) or \
                (self.scale, self.div) != (1, 1):
            raise MappingError(f"({self!r}) % {m}: only a pure variable plus a constant has a "
                               f"coordinate pattern; write e.g. x % 2 or (x + 1) % 2")
        return Coord(self.terms[0], m, self.const % m)

    @staticmethod
    def of(v: Any) -> Affine:
        if isinstance(v, Affine):
            return v
        if isinstance(v, (Var, RVar)):
            return Affine((v,), 0)
        if isinstance(v, int):
            return Affine((), v)
        raise MappingError(f"index expression: cannot use {v!r} (only Var/RVar + integer)")

    def __add__(self, other: Any) -> Affine:
        o = Affine.of(other)
        if (self.scale, self.div) != (1, 1) and (o.scale, o.div) != (1, 1):
            raise MappingError(f"index expression {self!r} + {o!r}: two scaled terms")
        scaled = self if (self.scale, self.div) != (1, 1) else o
        return Affine(self.terms + o.terms, self.const + o.const, scaled.scale, scaled.div,
                      self.pre + o.pre)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Affine:
        if isinstance(other, int):
            return Affine(self.terms, self.const - other, self.scale, self.div, self.pre)
        raise MappingError(f"index expression: cannot subtract {other!r} (only integers)")

    def __repr__(self) -> str:
        def name(t: Var | RVar) -> str:
            if isinstance(t, RVar) or (self.scale, self.div, self.pre) == (1, 1, 0):
                return t.name
            v = f"{self.scale}*{t.name}" if self.scale != 1 else t.name
            if self.pre:
                v = f"({v} + {self.pre})" if self.div != 1 else f"{v} + {self.pre}"
            return f"{v}/{self.div}" if self.div != 1 else v
        return " + ".join([name(t) for t in self.terms] + [str(self.const)])


# ------------------------------------------------------------------------------ expressions
class Expr:
    """A typed DSL expression (operator overloads build the tree)."""

    type: Type

    def _bin(self, op: str, other: Any, rev: bool = False) -> Expr:
        a, b = (other, self) if rev else (self, other)
        return BinOp.make(op, a, b)

    def __add__(self, o): return self._bin("+", o)
    def __radd__(self, o): return self._bin("+", o, True)
    def __sub__(self, o): return self._bin("-", o)
    def __rsub__(self, o): return self._bin("-", o, True)
    def __mul__(self, o): return self._bin("*", o)
    def __rmul__(self, o): return self._bin("*", o, True)
    def __truediv__(self, o): return self._bin("/", o)
    def __rtruediv__(self, o): return self._bin("/", o, True)
    def __floordiv__(self, o): return self._bin("/", o)
    def __rshift__(self, o): return self._bin(">>", o)
    def __lshift__(self, o): return self._bin("<<", o)
    def __and__(self, o): return self._bin("&", o)
    def __rand__(self, o): return self._bin("&", o, True)
    def __or__(self, o): return self._bin("|", o)
    def __ror__(self, o): return self._bin("|", o, True)
    def __xor__(self, o): return self._bin("^", o)
    def __rxor__(self, o): return self._bin("^", o, True)
    def __lt__(self, o): return self._bin("<", o)
    def __le__(self, o): return self._bin("<=", o)
    def __gt__(self, o): return self._bin(">", o)
    def __ge__(self, o): return self._bin(">=", o)
    def __eq__(self, o): return self._bin("==", o)  # type: ignore[override]
    def __ne__(self, o): return self._bin("!=", o)  # type: ignore[override]
    def __neg__(self): return BinOp.make("-", Const(0, self.type), self)
    def __invert__(self):
        if self.type.is_float:
            raise MappingError(f"operator ~ is not defined on {self.type}")
        return Unary("~", self, self.type)
    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        raise MappingError("a DSL expression has no Python truth value; use select(c, a, b) "
                           "and &, | instead of 'and', 'or', 'if'")


class Const(Expr):
    """A constant; ``value`` is the integer value, or the bf16 encoding for ``BFloat16``."""

    def __init__(self, value: int, type: Type):
        lo = -(1 << (type.bits - 1)) if type.signed else 0
        hi = (1 << (type.bits - 1)) - 1 if type.signed else (1 << type.bits) - 1
        if type is Bool:
            lo, hi = 0, 1
        if not lo <= int(value) <= hi:
            raise MappingError(f"constant {value} does not fit {type} (range {lo}..{hi}); "
                               f"cast the other operand or change the constant")
        self.value, self.type = int(value), type


def _lift(v: Any, like: Type) -> Expr:
    if isinstance(v, Expr):
        return v
    if isinstance(v, bool):
        return Const(int(v), Bool)
    if like.is_float and isinstance(v, (int, float)):
        return Const(bf16_bits(v), like)
    if isinstance(v, int):
        return Const(v, like)
    if isinstance(v, float):
        raise MappingError(f"float literal {v!r} next to a {like} operand: float constants need "
                           f"a BFloat16 operand (or cast(BFloat16, {v!r}))")
    if isinstance(v, (Var, RVar, Affine)):
        raise MappingError(f"{v!r}: loop variables cannot be used as values (only as indices)")
    raise MappingError(f"cannot use {v!r} of Python type {type(v).__name__} in a DSL expression")


class BinOp(Expr):
    ARITH = {"+", "-", "*", "/", ">>", "<<", "&", "|", "^", "min", "max"}
    CMP = {"<", "<=", ">", ">=", "==", "!="}

    def __init__(self, op: str, a: Expr, b: Expr, type: Type):
        self.op, self.a, self.b, self.type = op, a, b, type

    @staticmethod
    def make(op: str, a: Any, b: Any) -> Expr:
        if not isinstance(a, Expr) and not isinstance(b, Expr):
            raise MappingError(f"operator {op}: at least one operand must be a DSL expression")
        if op == "/" and any(isinstance(v, Expr) and v.type.is_float for v in (a, b)):
            if isinstance(a, Expr) and isinstance(b, int) and not isinstance(b, bool) \
                    and b > 0 and not b & (b - 1):
                return BinOp.make("*", a, 1.0 / b)       # exact: times the reciprocal
            like = a.type if isinstance(a, Expr) and a.type.is_float else b.type
            a, b = _lift(a, like), _lift(b, like)
            if a.type != b.type:
                raise MappingError(f"operator /: operand types differ ({a.type} vs {b.type}); "
                                   f"use cast(type, e)")
            return BinOp("/", a, b, a.type)            # mapper.frontend.float_math.div (<= 2 ulp)
        if op in (">>", "<<", "/"):
            a = _lift(a, b.type if isinstance(b, Expr) else UInt16)
            if not isinstance(b, int) or isinstance(b, bool):
                raise MappingError(f"operator {op}: the right operand must be an integer literal "
                                   f"(got {b!r})")
            if a.type is Bool or a.type.is_float:
                raise MappingError(f"operator {op} is not defined on {a.type}")
            if op == "/":
                if b <= 0 or b & (b - 1):
                    raise MappingError(f"division by {b}: only positive powers of two are supported "
                                       f"(they lower to shifts)")
                return BinOp(">>", a, Const(b.bit_length() - 1, UInt16), a.type) if b > 1 else a
            if not 0 <= b < a.type.bits:
                raise MappingError(f"shift by {b}: amount must be in [0, {a.type.bits - 1}]")
            return BinOp(op, a, Const(b, UInt16), a.type)
        like = a.type if isinstance(a, Expr) else b.type
        a, b = _lift(a, like), _lift(b, like)
        if a.type != b.type:
            raise MappingError(f"operator {op}: operand types differ ({a.type} vs {b.type}); "
                               f"use cast(type, e)")
        if op in BinOp.CMP:
            if a.type is Bool and op not in ("==", "!="):
                raise MappingError(f"operator {op} is not defined on Bool")
            return BinOp(op, a, b, Bool)
        if a.type is Bool and op not in ("&", "|", "^"):
            raise MappingError(f"operator {op} is not defined on Bool (use &, |, ^, ~)")
        if a.type.is_float and op not in ("+", "-", "*", "min", "max"):
            raise MappingError(f"operator {op} is not defined on {a.type} (+ - * min max, "
                               f"comparisons, / by a power of two)")
        return BinOp(op, a, b, a.type)


class Unary(Expr):
    def __init__(self, op: str, a: Expr, type: Type):
        self.op, self.a, self.type = op, a, type


class Select(Expr):
    def __init__(self, c: Expr, a: Expr, b: Expr):
        self.c, self.a, self.b, self.type = c, a, b, a.type


class Cast(Expr):
    def __init__(self, type: Type, a: Expr):
        self.a, self.type = a, type


class Access(Expr):
    """``producer[i0, i1]`` — a Func, Input or Table read."""

    def __init__(self, target: Any, idx: tuple[Affine, ...]):
        self.target, self.idx = target, idx
        self.type = target.type


class Coord(Expr):
    """``(v + offset) % modulus`` of a Func's pure variable ``v`` (Halide ``x % 2``): the
    coordinate of the pixel being computed, as a ``UInt16`` value (module docstring). Made by
    ``x % m`` / ``(x + c) % m``."""

    def __init__(self, var: Var, modulus: int, offset: int):
        self.var, self.modulus, self.offset, self.type = var, modulus, offset, UInt16

    def __repr__(self) -> str:
        return f"({self.var.name} + {self.offset}) % {self.modulus}"


def select(c: Any, a: Any, b: Any) -> Expr:
    """``a if c else b`` element-wise (Halide ``select``); ``c`` must be Bool; two literal
    branches are UInt16, or BFloat16 when one is a Python float."""
    like = a.type if isinstance(a, Expr) else (b.type if isinstance(b, Expr) else (
        BFloat16 if isinstance(a, float) or isinstance(b, float) else UInt16))
    a, b = _lift(a, like), _lift(b, like)
    if not isinstance(c, Expr) or c.type is not Bool:
        raise MappingError("select: the condition must be a Bool expression (a comparison)")
    if a.type != b.type:
        raise MappingError(f"select: branch types differ ({a.type} vs {b.type}); use cast")
    return Select(c, a, b)


def exp(a: Any) -> Expr:
    """``e ** a`` of a BFloat16 expression (Halide ``exp``): on the array the decomposition of
    :func:`mapper.frontend.float_math.exp` (<= 2 ulp for ``|a| <= 16``, argument saturated beyond);
    Halide's golden is its float32 ``exp`` rounded to bf16. Raises :class:`MappingError` for a
    non-BFloat16 operand."""
    if not isinstance(a, Expr) or not a.type.is_float:
        raise MappingError("exp: needs a BFloat16 expression (cast(BFloat16, e) first)")
    return Unary("exp", a, a.type)


def min(a: Any, b: Any) -> Expr:  # noqa: A001 - Halide name
    """Element-wise minimum (signed or unsigned by type)."""
    return BinOp.make("min", a, b)


def max(a: Any, b: Any) -> Expr:  # noqa: A001 - Halide name
    """Element-wise maximum (signed or unsigned by type)."""
    return BinOp.make("max", a, b)


def clamp(a: Any, lo: Any, hi: Any) -> Expr:
    """``min(max(a, lo), hi)``."""
    return min(max(a, lo), hi)


def abs(a: Expr) -> Expr:  # noqa: A001 - Halide name
    """Absolute value; ``Int16 -> UInt16`` (Halide's rule), identity type for UInt16."""
    if not isinstance(a, Expr) or a.type is Bool or a.type.is_float:
        raise MappingError("abs: needs a UInt16 or Int16 expression")
    return Unary("abs", a, UInt16)


def cast(t: Type, a: Any) -> Expr:
    """Reinterpret between UInt16 and Int16, or turn a Bool into 0/1; a literal becomes a
    constant of type ``t``. To or from ``BFloat16``: a value conversion (Halide's: an integer
    rounded to nearest even; a float truncated toward zero, saturated to the 16-bit range,
    NaN -> 0; module docstring)."""
    if t is Bool:
        raise MappingError("cast to Bool is not supported; use a comparison")
    if not isinstance(a, Expr):
        a = _lift(a, t)
        if a.type == t:
            return a
    if a.type is Bool and t.is_float:
        raise MappingError("cast of a Bool to BFloat16: use select(c, 1.0, 0.0)")
    return Cast(t, a)


# ------------------------------------------------------------------------------ funcs
class Input:
    """A pipeline input: ``Input(name, type, shape)``, ``shape = (width, height)`` for an
    image, ``(width, height, channels)`` or ``(width, height, channels, batch)`` for a tensor
    (Halide's dimension order: dimension 0 innermost; the numpy array is indexed in reverse,
    ``[c, y, x]``). Weights of a layer are Inputs too (e.g. ``(kx, ky, c_in, c_out)``).
    Raises :class:`MappingError` for a Bool type or a shape that is not 2 to 4 sizes >= 1."""

    def __init__(self, name: str, type: Type, shape: tuple[int, ...]):
        if type is Bool:
            raise MappingError(f"Input {name}: type must be UInt16, Int16 or BFloat16")
        if not 2 <= len(shape) <= MAX_DIMS or any(int(n) < 1 for n in shape):
            raise MappingError(f"Input {name}: shape must be (width, height[, channels"
                               f"[, batch]]) with sizes >= 1, got {tuple(shape)}")
        self.name, self.type, self.shape = name, type, tuple(int(n) for n in shape)

    def __getitem__(self, idx: Any) -> Access:
        return Access(self, _index(idx, self.name, len(self.shape)))


class RepeatEdge:
    """An input seen through Halide's ``BoundaryConditions.repeat_edge``: a read outside the
    image returns the nearest edge pixel, ``e[x, y] = input[clamp(x, 0, W-1), clamp(y, 0,
    H-1)]``. Made by :func:`repeat_edge`; indexed like the input."""

    def __init__(self, inp: Input):
        self.input, self.name, self.type = inp, inp.name, inp.type

    def __getitem__(self, idx: Any) -> Access:
        return Access(self, _index(idx, self.name, len(self.input.shape)))


def repeat_edge(inp: Input) -> RepeatEdge:
    """``inp`` with clamp-to-edge boundary (Halide ``BoundaryConditions.repeat_edge``): stencils
    may read past the image, so a pipeline reading its inputs this way keeps the input size
    (its output is realised over the input's domain at the output's rate). On the array, the
    host streams the image padded with repeat-edge values (:attr:`mapper.ir.PipelineInput.pad`,
    computed by bounds inference in :meth:`Pipeline.lower`). Every input of a pipeline is read
    through ``repeat_edge`` or none is. Raises :class:`MappingError` for a non-Input."""
    if not isinstance(inp, Input):
        raise MappingError(f"repeat_edge: takes a pipeline Input, got {type(inp).__name__} "
                           f"(a Func has no fixed bounds to clamp to)")
    return RepeatEdge(inp)


class Table:
    """A constant table ``t[i, j] = rows[j][i]`` (values fit ``type``; for ``BFloat16``,
    numbers stored as their bf16 encodings, :func:`bf16_bits`)."""

    def __init__(self, name: str, rows: list[list[Any]], type: Type = UInt16):
        self.name, self.type = name, type
        if type.is_float:
            self.rows = [[bf16_bits(v) for v in r] for r in rows]
        else:
            self.rows = [list(map(int, r)) for r in rows]
        for r in self.rows:
            for v in r:
                Const(v, type)

    def __getitem__(self, idx: Any) -> Access:
        return Access(self, _index(idx, self.name, 2))


class LUT:
    """A lookup table ``LUT(name, values, type=UInt16)`` read at a data-dependent index:
    ``lut[e]`` = ``values[clamp(e, 0, len(values) - 1)]`` (module docstring). ``values``: 1 to
    65536 entries that fit ``type`` (BFloat16 entries are numbers, stored as their bf16
    encodings, :func:`bf16_bits`). Raises :class:`MappingError` naming the table for an empty
    table, an entry out of range, or an index that is not a UInt16 / Int16 expression."""

    def __init__(self, name: str, values: Any, type: Type = UInt16):
        vals = list(values)
        if not 1 <= len(vals) <= ir.LUT_MAX_ENTRIES:
            raise MappingError(f"LUT {name}: needs 1..{ir.LUT_MAX_ENTRIES} entries, got "
                               f"{len(vals)}")
        if type is Bool:
            raise MappingError(f"LUT {name}: type must be UInt16, Int16 or BFloat16")
        self.name, self.type = name, type
        if type.is_float:
            self.values = tuple(bf16_bits(float(v)) for v in vals)
        else:
            try:
                self.values = tuple(Const(int(v), type).value for v in vals)
            except MappingError as exc:
                raise MappingError(f"LUT {name}: {exc}") from None

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, e: Any) -> Expr:
        if isinstance(e, tuple):
            raise MappingError(f"LUT {self.name}: takes one index expression, got {len(e)}")
        if not isinstance(e, Expr):          # a literal index: the clamped entry
            return Const(self.values[sorted((0, int(e), len(self.values) - 1))[1]],
                         self.type)
        if e.type is Bool or e.type.is_float:
            raise MappingError(f"LUT {self.name}: the index must be a UInt16 or Int16 "
                               f"expression, got {e.type} (cast it first)")
        return Lookup(self, e)


class Lookup(Expr):
    """``lut[index]`` (:class:`LUT`)."""

    def __init__(self, lut: LUT, index: Expr):
        self.lut, self.index, self.type = lut, index, lut.type


#: most coordinates of a Func or Input (x, y, channel, batch)
MAX_DIMS = 4


def _index(idx: Any, who: str, dims: int | None) -> tuple[Affine, ...]:
    """The index expressions of an access to ``who`` (``dims`` coordinates; ``None``: a Func
    not defined yet, 2 to :data:`MAX_DIMS`)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    if dims is None and not 2 <= len(idx) <= MAX_DIMS:
        raise MappingError(f"{who}: accesses must have 2 to {MAX_DIMS} indices, got "
                           f"{len(idx)}")
    if dims is not None and len(idx) != dims:
        raise MappingError(f"{who}: accesses must have {dims} indices (one per coordinate), "
                           f"got {len(idx)}")
    return tuple(Affine.of(i) for i in idx)


@dataclass(frozen=True)
class Directive:
    """One scheduling directive of a Func (Halide's): ``kind`` ``"split"`` (``var`` =
    ``outer * factor + inner``) or ``"unroll"`` (``var``), on its ``"pure"`` or ``"update"``
    definition. Variables by name."""

    definition: str
    kind: str
    var: str
    outer: str | None = None
    inner: str | None = None
    factor: int = 0


def _var_name(v: Any, who: str) -> str:
    if isinstance(v, (Var, RVar)):
        return v.name
    if isinstance(v, str) and v:
        return v
    raise MappingError(f"Func {who}: a schedule names a Var, an RDom var or a string, got "
                       f"{v!r}")


class UpdateStage:
    """The schedule of a Func's update definition (:meth:`Func.update`)."""

    def __init__(self, func: Func):
        self.func = func

    def split(self, v: Var | RVar | str, outer: Var | str, inner: Var | str,
              factor: int) -> UpdateStage:
        """Halide's ``f.update().split(r.z, rzo, rzi, factor)``; the factor must divide an RDom
        var's extent. Raises :class:`MappingError`."""
        self.func._directive("update", "split", v, outer, inner, factor)
        return self

    def unroll(self, v: Var | RVar | str) -> UpdateStage:
        """Halide's ``f.update().unroll(v)``."""
        self.func._directive("update", "unroll", v)
        return self


class Func:
    """A pipeline stage: one pure definition and at most one RDom update, over 2 to
    :data:`MAX_DIMS` pure Vars; scheduled by :meth:`split` / :meth:`unroll` /
    :meth:`update` (:attr:`directives`)."""

    def __init__(self, name: str):
        self.name = name
        self.vars: tuple[Var, ...] | None = None
        self.pure: Expr | None = None
        self.update_expr: Expr | None = None
        self.rdom: RDom | None = None
        self.directives: list[Directive] = []

    def split(self, v: Var | str, outer: Var | str, inner: Var | str, factor: int) -> Func:
        """Halide's ``f.split(v, outer, inner, factor)`` on the pure definition (``v`` a pure
        Var or an earlier split's result): ``v = outer * factor + inner``; a schedule, so
        results are unchanged. Raises :class:`MappingError` (unknown var, factor < 1)."""
        self._directive("pure", "split", v, outer, inner, factor)
        return self

    def unroll(self, v: Var | str) -> Func:
        """Halide's ``f.unroll(v)`` on the pure definition (``v``: a split's inner var with a
        constant extent); the lanes a layer computes in parallel (channel blocking)."""
        self._directive("pure", "unroll", v)
        return self

    def update(self) -> UpdateStage:
        """The update definition's schedule (Halide's ``f.update()``): ``split`` / ``unroll``
        of its RDom vars (``r.z``: input-channel blocking). Raises :class:`MappingError`
        when the Func has no update."""
        if self.update_expr is None:
            raise MappingError(f"Func {self.name}: update() needs an update definition "
                               f"(f[x, y] += ...) first")
        return UpdateStage(self)

    def _directive(self, definition: str, kind: str, v: Any, outer: Any = None,
                   inner: Any = None, factor: int = 0) -> None:
        if self.pure is None:
            raise MappingError(f"Func {self.name}: define it before scheduling it")
        known = [a.name for a in self.vars]
        if definition == "update":
            known += [r.name for r in self.rdom.vars]
        extent = {r.name: r.extent for r in self.rdom.vars} if self.rdom else {}
        for d in self.directives:
            if d.definition == definition and d.kind == "split":
                known += [d.outer, d.inner]
        name = _var_name(v, self.name)
        if name not in known:
            raise MappingError(f"Func {self.name}: {kind}({name}) names no variable of its "
                               f"{definition} definition; known: {', '.join(known)}")
        if kind == "split":
            outer, inner = _var_name(outer, self.name), _var_name(inner, self.name)
            if not isinstance(factor, int) or isinstance(factor, bool) or factor < 1:
                raise MappingError(f"Func {self.name}: split({name}) factor must be an integer "
                                   f">= 1, got {factor!r}")
            if name in extent and extent[name] % factor:
                raise MappingError(f"Func {self.name}: split({name}, factor {factor}): the RDom "
                                   f"extent {extent[name]} is not a multiple of {factor}")
            if outer == inner or {outer, inner} & set(known):
                raise MappingError(f"Func {self.name}: split({name}) needs two new names, got "
                                   f"{outer!r}, {inner!r}")
        self.directives.append(Directive(definition, kind, name, outer, inner, factor))

    @property
    def type(self) -> Type:
        if self.pure is None:
            raise MappingError(f"Func {self.name} is used before it is defined")
        return self.pure.type

    def __getitem__(self, idx: Any) -> Access:
        return Access(self, _index(idx, self.name,
                                   None if self.vars is None else len(self.vars)))

    def __setitem__(self, idx: Any, value: Any) -> None:
        args = idx if isinstance(idx, tuple) else (idx,)
        if not 2 <= len(args) <= MAX_DIMS or not all(isinstance(a, Var) for a in args) \
                or len({id(a) for a in args}) != len(args):
            raise MappingError(f"Func {self.name}: definitions must be f[x, y] = ... (or "
                               f"f[x, y, c], f[x, y, c, n]) with 2 to {MAX_DIMS} distinct pure "
                               f"Vars")
        if self.pure is None:
            if isinstance(value, (int, float)):
                raise MappingError(f"Func {self.name}: a pure definition needs a typed expression "
                                   f"(write constants as cast(UInt16, c) or cast(BFloat16, c))")
            e = _lift(value, UInt16)
            if e.type is Bool:
                raise MappingError(f"Func {self.name}: a stage must produce UInt16, Int16 or "
                                   f"BFloat16, not Bool")
            self.vars, self.pure = tuple(args), e
            return
        if self.update_expr is not None:
            raise MappingError(f"Func {self.name}: only one update definition is supported")
        if tuple(args) != self.vars:
            raise MappingError(f"Func {self.name}: the update must use the pure vars {self.vars}")
        e = _lift(value, self.type)
        if e.type != self.type:
            raise MappingError(f"Func {self.name}: update type {e.type} differs from {self.type}")
        rdoms = {id(v.rdom): v.rdom for v in _rvars(e)}
        if len(rdoms) != 1:
            raise MappingError(f"Func {self.name}: an update must use exactly one RDom, "
                               f"found {len(rdoms)}")
        self.update_expr, self.rdom = e, next(iter(rdoms.values()))


def _children(e: Expr) -> list[Expr]:
    if isinstance(e, BinOp):
        return [e.a, e.b]
    if isinstance(e, Unary):
        return [e.a]
    if isinstance(e, Select):
        return [e.c, e.a, e.b]
    if isinstance(e, Cast):
        return [e.a]
    if isinstance(e, Lookup):
        return [e.index]
    return []


def _walk(e: Expr) -> list[Expr]:
    seen: dict[int, Expr] = {}
    stack = [e]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen[id(n)] = n
        stack.extend(_children(n))
    return list(seen.values())


def _rvars(e: Expr) -> list[RVar]:
    out = []
    for n in _walk(e):
        if isinstance(n, Access):
            for a in n.idx:
                out.extend(t for t in a.terms if isinstance(t, RVar))
    return out


# ------------------------------------------------------------------------------ lowering
_IROP = {"+": "add", "-": "sub", "*": "mul", "<<": "shl", "&": "and", "|": "or", "^": "xor"}


#: how an app's inputs are made from a test image (:func:`mapper.apps.app_images`): ``grey``
#: every input the grey image; ``rgb`` inputs ``r``, ``g``, ``b`` the colour planes; ``bayer_rggb``
#: the one input the RGGB Bayer mosaic of the colour image (:func:`mapper.images.bayer_rggb`)
IMAGE_CONVENTIONS = ("grey", "rgb", "bayer_rggb")
RGB_PLANES = ("r", "g", "b")


class Pipeline:
    """A DSL pipeline: the Funcs reachable from ``output`` (a Func, or a list of Funcs for
    several outputs as in Halide's ``Pipeline([f, g])``: each is realised over its own domain
    and streams out on its own IO tiles; :attr:`outputs`, :attr:`output` = the first);
    ``unroll`` output pixels per cycle; ``image``: the input convention
    (:data:`IMAGE_CONVENTIONS`)."""

    def __init__(self, output: Func | list[Func] | tuple[Func, ...], name: str | None = None,
                 unroll: int = 1, image: str = "grey"):
        outs = list(output) if isinstance(output, (list, tuple)) else [output]
        if not outs or not all(isinstance(o, Func) for o in outs):
            raise MappingError(f"Pipeline {name}: the output must be a Func or a non-empty list "
                               f"of Funcs, got {output!r}")
        if len({id(o) for o in outs}) != len(outs):
            raise MappingError(f"Pipeline {name}: outputs {[o.name for o in outs]} list a Func "
                               f"twice")
        if unroll < 1:
            raise MappingError(f"Pipeline {name}: unroll must be >= 1, got {unroll}")
        self.outputs = outs
        self.output, self.name, self.unroll = outs[0], name or outs[0].name, unroll
        self.funcs, self.inputs = self._collect()
        if image not in IMAGE_CONVENTIONS:
            raise MappingError(f"Pipeline {self.name}: image convention {image!r} is not one "
                               f"of {', '.join(IMAGE_CONVENTIONS)}")
        names = [i.name for i in self.inputs]
        if image == "rgb" and not set(names) <= set(RGB_PLANES):
            raise MappingError(f"Pipeline {self.name}: image convention 'rgb' feeds inputs "
                               f"named {', '.join(RGB_PLANES)} (one colour plane each); rename "
                               f"{sorted(set(names) - set(RGB_PLANES))}")
        if image == "bayer_rggb" and len(names) != 1:
            raise MappingError(f"Pipeline {self.name}: image convention 'bayer_rggb' feeds "
                               f"one input (the mosaic), the pipeline has {names}")
        self.image = image

    def _collect(self) -> tuple[list[Func], list[Input]]:
        order: list[Func] = []
        inputs: dict[str, Input] = {}
        clamped: dict[str, bool] = {}
        state: dict[int, int] = {}

        def visit(f: Func) -> None:
            if state.get(id(f)) == 2:
                return
            if state.get(id(f)) == 1:
                raise MappingError(f"Pipeline {self.name}: Func {f.name} depends on itself")
            if f.pure is None:
                raise MappingError(f"Pipeline {self.name}: Func {f.name} has no definition")
            state[id(f)] = 1
            for e in (f.pure, f.update_expr):
                if e is None:
                    continue
                for n in _walk(e):
                    if isinstance(n, Access):
                        if isinstance(n.target, Func) and n.target.vars is not None and \
                                len(n.idx) != len(n.target.vars):
                            raise MappingError(f"Func {f.name}: reads {n.target.name} with "
                                               f"{len(n.idx)} indices; it has "
                                               f"{len(n.target.vars)} coordinates")
                        if isinstance(n.target, Func) and n.target is not f:
                            visit(n.target)
                        elif isinstance(n.target, (Input, RepeatEdge)):
                            inp = n.target if isinstance(n.target, Input) else n.target.input
                            old = inputs.setdefault(inp.name, inp)
                            if old is not inp:
                                raise MappingError(f"Pipeline {self.name}: two Inputs named "
                                                   f"{inp.name}")
                            kind = isinstance(n.target, RepeatEdge)
                            if clamped.setdefault(inp.name, kind) != kind:
                                raise MappingError(f"Pipeline {self.name}: input {inp.name} is "
                                                   f"read both through repeat_edge and "
                                                   f"directly (Func {f.name}); read it one way")
                        elif n.target is f and e is f.pure:
                            raise MappingError(f"Func {f.name}: the pure definition reads itself")
            state[id(f)] = 2
            order.append(f)

        for o in self.outputs:
            visit(o)
        names = [f.name for f in order] + list(inputs)
        if len(set(names)) != len(names):
            raise MappingError(f"Pipeline {self.name}: Func/Input names must be unique: {names}")
        if len(set(clamped.values())) > 1:
            raise MappingError(f"Pipeline {self.name}: inputs "
                               f"{sorted(n for n, c in clamped.items() if c)} are read through "
                               f"repeat_edge, {sorted(n for n, c in clamped.items() if not c)} "
                               f"are not; clamp every input or none (they stream as one shape)")
        self.clamped = any(clamped.values())
        return order, list(inputs.values())

    def lower(self) -> ir.Pipeline:
        """Lower to :class:`mapper.ir.Pipeline` (one stage per Func, reductions unrolled).

        With ``repeat_edge`` inputs (:func:`repeat_edge`) the IR inputs are padded and the
        output cropped (:meth:`edge_geometry`), so the IR output is the Halide output over
        :meth:`output_domain`, shifted by the returned origin."""
        self.check_stencil()
        stages = [_lower_func(f) for f in self.funcs]
        patterns = sorted({w.producer for s in stages for w in s.windows.values()
                           if w.producer.startswith(PATTERN_PREFIX)})
        if patterns and (not self.inputs or self.clamped):
            raise MappingError(f"Pipeline {self.name}: a coordinate pattern (x % m) needs an "
                               f"Input to take its size from and no repeat_edge")
        pad, crop = ir.NO_PAD, {}
        if self.clamped:
            pad, crop, _ = self.edge_geometry(stages)
        inputs = {i.name: ir.PipelineInput(i.name, (i.shape[0] + pad[0] + pad[1],
                                                    i.shape[1] + pad[2] + pad[3]),
                                           i.type.signed, i.type.bits, pad)
                  for i in self.inputs}
        if patterns:
            shape = next(iter(inputs.values())).shape
            for name in patterns:
                inputs[name] = ir.PipelineInput(name, shape, pattern=_pattern_of(name))
        p = ir.Pipeline(self.name, inputs, stages, self.output.name, self.unroll, crop,
                        tuple(o.name for o in self.outputs[1:]))
        p.validate()
        p.domains()
        return p

    def is_stencil(self) -> bool:
        """Whether the stencil flow (:meth:`lower`, ``cgra map``) takes this pipeline: every
        Input and Func 2-D and every producer read at ``[x + c, y + d]``-style indices
        (a reduction over channels, a transposed read or a weight tensor is a tensor
        program: :mod:`mapper.frontend.tensor`)."""
        try:
            self.check_stencil()
            for f in self.funcs:
                _lower_func(f)
        except MappingError:
            return False
        return True

    def check_stencil(self) -> None:
        """Raise :class:`MappingError` naming the first Input or Func with other than 2
        coordinates (a tensor program, evaluated by :mod:`mapper.frontend.tensor`; the array runs 2-D
        stencil pipelines)."""
        for i in self.inputs:
            if len(i.shape) != 2:
                raise MappingError(f"Pipeline {self.name}: Input {i.name} has {len(i.shape)} "
                                   f"coordinates {i.shape}; the stencil flow (cgra map) lowers "
                                   f"2-D images only. A tensor program (DNN layer) is "
                                   f"evaluated by mapper.frontend.tensor; it has no array mapping yet")
        for f in self.funcs:
            if len(f.vars) != 2:
                raise MappingError(f"Pipeline {self.name}: Func {f.name} is defined over "
                                   f"{len(f.vars)} coordinates; the stencil flow (cgra map) "
                                   f"lowers 2-D Funcs only. A tensor program (DNN layer) is "
                                   f"evaluated by mapper.frontend.tensor; it has no array mapping yet")

    def output_domain(self, name: str | None = None) -> ir.Box:
        """The domain of output ``name`` (default: the first) in the DSL's (Halide's)
        coordinates: the valid domain (:meth:`mapper.ir.Pipeline.domains`), or for a
        ``repeat_edge`` pipeline the input's domain at the output's rate
        (:meth:`edge_geometry`). Raises :class:`MappingError` for a name that is not an
        output."""
        name = name or self.output.name
        doms = self.output_domains()
        if name not in doms:
            raise MappingError(f"Pipeline {self.name}: {name!r} is not an output; outputs: "
                               f"{[o.name for o in self.outputs]}")
        return doms[name]

    def output_domains(self) -> dict[str, ir.Box]:
        """:meth:`output_domain` of every output, by name (one lowering for all)."""
        if self.clamped:
            self.check_stencil()
            return self.edge_geometry([_lower_func(f) for f in self.funcs])[2]
        dom = self.lower().domains()
        return {o.name: dom[o.name] for o in self.outputs}

    def edge_geometry(self, stages: list[ir.Stage]
                      ) -> tuple[tuple[int, int, int, int], dict[str, ir.Box],
                                 dict[str, ir.Box]]:
        """``(pad, crop, nominal)`` of a ``repeat_edge`` pipeline whose lowered stages are
        ``stages`` (pixels; boxes half-open; ``crop`` and ``nominal`` per output name):

        - ``nominal``: each output's box in DSL coordinates, the inputs' ``[0, W) x [0, H)``
          seen at the output's rate (windows' rates, offsets ignored: ``W x H`` for a stencil,
          ``ceil(W/2)`` wide after a stride-2 read, ``2W`` after ``x / 2``);
        - bounds inference (Halide's, on the boxes): the input pixels the nominal outputs read
          through every window offset, hence the padding ``(left, right, top, bottom)``;
        - the IR works in coordinates shifted so the padded input starts at 0: stage ``s``
          moves by ``sigma_s = left / R_s`` with ``R_s`` input pixels per pixel of ``s`` (the
          product of the rates on any path; consistent paths are required), ``left`` rounded
          up so every ``sigma_s`` is an integer; window offsets are unchanged by such a shift;
          ``crop`` = ``nominal`` moved by each output's ``sigma``.

        Raises :class:`MappingError` when two paths give a stage different rates."""

        lo, hi = builtins.min, builtins.max        # this module's min / max build Exprs
        w, h = self.inputs[0].shape
        rate: dict[str, tuple[Fraction, Fraction]] = {i.name: (Fraction(1), Fraction(1))
                                                      for i in self.inputs}
        nom: dict[str, list[int]] = {i.name: [0, w, 0, h] for i in self.inputs}
        for s in stages:
            r, b = None, [-(1 << 30), 1 << 30, -(1 << 30), 1 << 30]
            for win in s.windows.values():
                (ax, bx), (ay, by) = win.rate
                pr = rate[win.producer]
                cand = (pr[0] * ax / bx, pr[1] * ay / by)
                if r is not None and cand != r:
                    raise MappingError(f"Pipeline {self.name}: Func {s.name} reads its "
                                       f"producers at inconsistent rates (input pixels per "
                                       f"pixel {r} and {cand}); repeat_edge needs one rate "
                                       f"per Func")
                r = cand
                p = nom[win.producer]
                b = [hi(b[0], -(-p[0] * bx // ax)), lo(b[1], (p[1] * bx - 1) // ax + 1),
                     hi(b[2], -(-p[2] * by // ay)), lo(b[3], (p[3] * by - 1) // ay + 1)]
            rate[s.name], nom[s.name] = r, b
        outs = [o.name for o in self.outputs]
        for s in stages:
            fed = sorted(o for o in outs for win in s.windows.values() if win.producer == o)
            if fed:
                raise MappingError(f"Pipeline {self.name}: output {fed[0]} is also read by "
                                   f"Func {s.name}; with repeat_edge an output is cropped to "
                                   f"the input size, so it cannot feed another Func (read a "
                                   f"copy: a Func defined as {fed[0]}[x, y])")
        req: dict[str, list[int]] = {o: list(nom[o]) for o in outs}
        for s in reversed(stages):
            if s.name not in req:
                continue
            x0, x1, y0, y1 = req[s.name]
            for win in s.windows.values():
                for dx, dy in win.offsets:
                    box = [win.coord(x0, 0, dx), win.coord(x1 - 1, 0, dx) + 1,
                           win.coord(y0, 1, dy), win.coord(y1 - 1, 1, dy) + 1]
                    old = req.setdefault(win.producer, box)
                    req[win.producer] = [lo(old[0], box[0]), hi(old[1], box[1]),
                                         lo(old[2], box[2]), hi(old[3], box[3])]
        need = [req[i.name] for i in self.inputs if i.name in req]
        left = hi([0] + [-b[0] for b in need])
        right = hi([0] + [b[1] - w for b in need])
        top = hi([0] + [-b[2] for b in need])
        bottom = hi([0] + [b[3] - h for b in need])
        lx = math.lcm(*(r[0].numerator for r in rate.values()))
        ly = math.lcm(*(r[1].numerator for r in rate.values()))
        left, top = -(-left // lx) * lx, -(-top // ly) * ly
        crop, nominal = {}, {}
        for o in outs:
            sx, sy = int(left / rate[o][0]), int(top / rate[o][1])
            n = nom[o]
            crop[o] = ir.Box(n[0] + sx, n[1] + sx, n[2] + sy, n[3] + sy)
            nominal[o] = ir.Box(*n)
        return (left, right, top, bottom), crop, nominal


#: kernel input / pipeline input name prefix of a coordinate pattern
PATTERN_PREFIX = "__coord_"


def pattern_name(dim: str, modulus: int, offset: int) -> str:
    """The pipeline input name of coordinate pattern ``(dim + offset) % modulus``."""
    return f"{PATTERN_PREFIX}{dim}_mod{modulus}_plus{offset}"


def _pattern_of(name: str) -> tuple[str, int, int]:
    """``(dim, modulus, offset)`` of a :func:`pattern_name`."""
    dim, m, off = name[len(PATTERN_PREFIX):].split("_")
    return dim, int(m[len("mod"):]), int(off[len("plus"):])


def _lower_func(f: Func) -> ir.Stage:
    """One stencil stage: the kernel of ``f`` (:func:`func_kernel`) with one window per
    producer (offsets per dimension ``x + c``, ``y + d``; rates ``2*x``, ``x/2``)."""
    offsets: dict[str, list[tuple[int, int]]] = {}
    rates: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {}
    if len(f.vars) != 2:
        raise MappingError(f"Func {f.name}: the stencil flow lowers 2-D Funcs only, "
                           f"{f.name} has {len(f.vars)} coordinates")
    xv, yv = f.vars

    def offset(idx: tuple[Affine, ...], env: dict[RVar, int], who: str
               ) -> tuple[tuple[int, int], tuple[tuple[int, int], tuple[int, int]]]:
        out, rate = [], []
        if len(idx) != 2:
            raise MappingError(f"Func {f.name}: reads {who} with {len(idx)} indices; the "
                               f"stencil flow reads 2-D producers only")
        for dim, (a, pv) in enumerate(zip(idx, (xv, yv), strict=True)):
            pure = [t for t in a.terms if isinstance(t, Var)]
            if len(pure) != 1 or pure[0] is not pv:
                raise MappingError(f"Func {f.name}: access to {who} dimension {dim} must be "
                                   f"{pv.name} + constant (+ RDom vars), got {a!r}")
            c = a.const
            for t in a.terms:
                if isinstance(t, RVar):
                    if t not in env:
                        raise MappingError(f"Func {f.name}: RDom var {t.name} used outside the update")
                    c += env[t]
            out.append(a.pre + a.div * c)      # inside the floor: ir.Window.coord
            rate.append((a.scale, a.div))
        return (out[0], out[1]), (rate[0], rate[1])

    def read(k: ir.Kernel, e: Access, env: dict[RVar, int]) -> int:
        t = e.target
        off, rate = offset(e.idx, env, t.name)
        if rates.setdefault(t.name, rate) != rate:
            raise MappingError(f"Func {f.name}: reads {t.name} at two rates "
                               f"{rates[t.name]} and {rate} (scale, divisor per "
                               f"dimension); read each producer at one rate (split the "
                               f"Func)")
        lst = offsets.setdefault(t.name, [])
        if off not in lst:
            lst.append(off)
            k.declare_input(t.name, len(lst), 16)
        return k.input(t.name, lst.index(off))

    def coord(k: ir.Kernel, e: Coord) -> int:
        if e.var is xv:
            dim = "x"
        elif e.var is yv:
            dim = "y"
        else:
            raise MappingError(f"Func {f.name}: {e!r} uses Var {e.var.name}, which is not "
                               f"one of its pure variables ({xv.name}, {yv.name})")
        pname = pattern_name(dim, e.modulus, e.offset)
        rates.setdefault(pname, ((1, 1), (1, 1)))
        if pname not in offsets:
            offsets[pname] = [(0, 0)]
            k.declare_input(pname, 1, 16)
        return k.input(pname, 0)

    k = func_kernel(f, read, coord)
    windows = {name: ir.Window(name, tuple(offs), rates[name]) for name, offs in offsets.items()}
    return ir.Stage(f.name, k, windows, f.type.signed)


def func_kernel(f: Func, read, coord=None, update: bool = True) -> ir.Kernel:
    """The op DAG of ``f`` (:class:`mapper.ir.Kernel` ``hcompute_<name>``, output ``out``): its
    pure definition, then (``update``) its update once per RDom point (fully unrolled, ``r.x``
    innermost); Table reads become constants. ``read(k, access, env)`` returns the kernel
    node of a Func/Input read (``env``: the RDom point), ``coord(k, c)`` that of a coordinate
    pattern (``None``: refused). Raises :class:`MappingError` naming the Func."""
    k = ir.Kernel(f"hcompute_{f.name}")
    lower = expr_lowerer(f, k, read, coord)
    val = lower(f.pure, {}, None, {})
    if update and f.update_expr is not None:
        for point in f.rdom.points():
            val = lower(f.update_expr, point, val, {})
    k.set_output("out", val)
    return ir.simplify(k)


def expr_lowerer(f: Func, k: ir.Kernel, read, coord=None):
    """``lower(e, env, acc, memo) -> node``: adds DSL expression ``e`` of Func ``f`` to kernel
    ``k`` (``env``: RDom var values; ``acc``: the node ``f``'s own read stands for in its
    update; ``memo``: shared sub-expressions); ``read`` / ``coord`` as in
    :func:`func_kernel`."""
    consts: dict[tuple[int, int], int] = {}

    def const(v: int, bits: int) -> int:
        key = (v & ((1 << bits) - 1), bits)
        if key not in consts:
            consts[key] = k.const(v, bits)
        return consts[key]

    def table_value(acc: Access, env: dict[RVar, int]) -> int:
        vals = []
        for a in acc.idx:
            if any(isinstance(t, Var) for t in a.terms):
                raise MappingError(f"Func {f.name}: Table {acc.target.name} may only be indexed by "
                                   f"RDom vars and literals")
            vals.append(a.const + sum(env[t] for t in a.terms))
        i, j = vals
        rows = acc.target.rows
        if not (0 <= j < len(rows) and 0 <= i < len(rows[j])):
            raise MappingError(f"Func {f.name}: Table {acc.target.name}[{i}, {j}] is out of range")
        return rows[j][i]

    def lower(e: Expr, env: dict[RVar, int], acc: int | None, memo: dict[int, int]) -> int:
        if id(e) in memo:
            return memo[id(e)]
        if isinstance(e, Const):
            r = const(e.value, e.type.bits)
        elif isinstance(e, Access):
            t = e.target
            if t is f:
                if acc is None:
                    raise MappingError(f"Func {f.name}: reads itself outside its update")
                if len(e.idx) != len(f.vars) or any(
                        a.terms != (v,) or a.const or (a.scale, a.div, a.pre) != (1, 1, 0)
                        for a, v in zip(e.idx, f.vars, strict=True)):
                    raise MappingError(f"Func {f.name}: the update may read {f.name} only at the "
                                       f"pure point [{', '.join(v.name for v in f.vars)}]")
                r = acc
            elif isinstance(t, Table):
                r = const(table_value(e, env), t.type.bits)
            else:
                r = read(k, e, env)
        elif isinstance(e, Cast):
            a = lower(e.a, env, acc, memo)
            if e.type.is_float and not e.a.type.is_float:
                r = k.add("float.from_s16" if e.a.type.signed else "float.from_u16", a)
            elif e.a.type.is_float and not e.type.is_float:
                r = k.add("float.to_s16" if e.type.signed else "float.to_u16", a)
            elif e.a.type is Bool:
                r = k.add("coreir.mux", const(0, 16), const(1, 16), a)
            else:
                r = a
        elif isinstance(e, Coord):
            if coord is None:
                raise MappingError(f"Func {f.name}: {e!r} (a coordinate pattern) is a stencil "
                                   f"construct; a tensor program cannot use it")
            r = coord(k, e)
        elif isinstance(e, Lookup):
            i = lower(e.index, env, acc, memo)
            if e.index.type.signed:       # a negative index reads entry 0
                i = k.add("commonlib.smax", i, const(0, 16))
            mask = (1 << e.type.bits) - 1
            r = k.add(ir.LUT_OP, i, width=e.type.bits, name=e.lut.name,
                      table=tuple(v & mask for v in e.lut.values))
        elif isinstance(e, Select):
            c, a, b = (lower(x, env, acc, memo) for x in (e.c, e.a, e.b))
            r = k.add("corebit.mux" if e.type is Bool else "coreir.mux", b, a, c)
        elif isinstance(e, Unary):
            a = lower(e.a, env, acc, memo)
            if e.op == "~":
                r = k.add("corebit.not" if e.a.type is Bool else "coreir.not", a)
            elif e.op == "exp":
                r = float_math.exp(k, a)
            elif e.op == "abs":
                r = k.add("commonlib.abs", a) if e.a.type.signed else a
            else:
                raise MappingError(f"Func {f.name}: unknown unary op {e.op}")
        elif isinstance(e, BinOp):
            a, b = lower(e.a, env, acc, memo), lower(e.b, env, acc, memo)
            s = e.a.type.signed
            if e.a.type.is_float and e.op == "/":
                r = float_math.div(k, a, b)
            elif e.a.type.is_float:
                fop = {"+": "add", "-": "sub", "*": "mul", "min": "min", "max": "max",
                       "<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "eq"}
                r = k.add(f"float.{fop[e.op]}", a, b)
                if e.op == "!=":
                    r = k.add("corebit.not", r)
            elif e.a.type is Bool:
                r = k.add({"&": "corebit.and", "|": "corebit.or", "^": "corebit.xor",
                           "!=": "corebit.xor"}.get(e.op, "corebit.xor"), a, b)
                if e.op == "==":
                    r = k.add("corebit.not", r)
            elif e.op in _IROP:
                r = k.add(f"coreir.{_IROP[e.op]}", a, b)
            elif e.op == ">>":
                r = k.add("coreir.ashr" if s else "coreir.lshr", a, b)
            elif e.op in ("min", "max"):
                r = k.add(f"commonlib.{'s' if s else 'u'}{e.op}", a, b)
            elif e.op in ("==", "!="):
                r = k.add("coreir.eq" if e.op == "==" else "coreir.neq", a, b)
            else:
                cmp = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge"}[e.op]
                r = k.add(f"coreir.{'s' if s else 'u'}{cmp}", a, b)
        else:
            raise MappingError(f"Func {f.name}: cannot lower {type(e).__name__}")
        memo[id(e)] = r
        return r

    return lower
