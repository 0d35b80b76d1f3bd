"""Plain-Python reference semantics of the BFloat16 IR ops (``float.*``), on 16-bit
encodings: exact rational arithmetic (:class:`fractions.Fraction`) rounded once, with the
policies of :mod:`peak.bf16` (round to nearest even; subnormal inputs read as zero of their
sign, results below 2^-126 after rounding flushed to zero of their sign; overflow to
infinity; every NaN result ``0x7FC0``; comparisons false on NaN, ``-0 == +0``; ``max`` /
``min`` are IEEE 754-2019 maximum / minimum: NaN if either is NaN, ``-0 < +0``).

Independent of the DSL (:mod:`peak.bf16`), which is the IR ops' definition
(:mod:`peak.ir.programs`); ``tests/rules/test_rules_ir.py`` compares the two."""
from __future__ import annotations

from fractions import Fraction

QNAN = 0x7FC0
INF = 0x7F80
SIGN = 0x8000


def _decode(x: int) -> tuple[str, int, Fraction]:
    """('nan' | 'inf' | 'num', sign, value); subnormals read as 0."""
    s, e, f = x >> 15, (x >> 7) & 0xFF, x & 0x7F
    if e == 0xFF:
        return ("nan" if f else "inf"), s, Fraction(0)
    if e == 0:
        return "num", s, Fraction(0)
    v = Fraction(128 + f) * Fraction(2) ** (e - 134)
    return "num", s, -v if s else v


def _round(v: Fraction) -> int:
    """Nonzero ``v`` rounded to 8 significant bits (nearest even), then overflow -> inf,
    below 2^-126 -> zero of v's sign."""
    sign = SIGN if v < 0 else 0
    v = abs(v)
    e = v.numerator.bit_length() - v.denominator.bit_length()
    if Fraction(2) ** e > v:
        e -= 1
    scaled = v / Fraction(2) ** (e - 7)
    q = scaled.numerator // scaled.denominator
    rem = scaled - q
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and q % 2):
        q += 1
    if q == 256:
        q, e = 128, e + 1
    if e > 127:
        return sign | INF
    if e < -126:
        return sign
    return sign | ((e + 127) << 7) | (q - 128)


def add(a: int, b: int, sub: bool = False) -> int:
    ka, sa, va = _decode(a)
    kb, sb, vb = _decode(b)
    if sub:
        sb, vb = 1 - sb, -vb
    if "nan" in (ka, kb) or (ka == kb == "inf" and sa != sb):
        return QNAN
    if ka == "inf" or kb == "inf":
        return SIGN | INF if (sa if ka == "inf" else sb) else INF
    if va == 0 and vb == 0:
        return SIGN if sa and sb else 0
    total = va + vb
    return 0 if total == 0 else _round(total)


def mul(a: int, b: int) -> int:
    ka, sa, va = _decode(a)
    kb, sb, vb = _decode(b)
    sign = SIGN if sa != sb else 0
    if "nan" in (ka, kb) or (ka == "inf" and kb == "num" and vb == 0) or \
            (kb == "inf" and ka == "num" and va == 0):
        return QNAN
    if "inf" in (ka, kb):
        return sign | INF
    if va == 0 or vb == 0:
        return sign
    return _round(va * vb)


def compare(a: int, b: int) -> tuple[int, int, int, int, int]:
    """(lt, le, eq, maximum, minimum) on the flushed values."""
    ka, sa, va = _decode(a)
    kb, sb, vb = _decode(b)
    if "nan" in (ka, kb):
        return 0, 0, 0, QNAN, QNAN
    big = Fraction(2) ** 200
    xa = (-big if sa else big) if ka == "inf" else va
    xb = (-big if sb else big) if kb == "inf" else vb
    fa = a & SIGN if (a >> 7) & 0xFF == 0 else a
    fb = b & SIGN if (b >> 7) & 0xFF == 0 else b
    if xa == xb:
        if xa == 0:
            return 0, 1, 1, fa & fb, fa | fb
        return 0, 1, 1, fa, fa
    lt = int(xa < xb)
    return lt, lt, 0, (fb if lt else fa), (fa if lt else fb)


def from_int(a: int, signed: bool) -> int:
    """The 16-bit integer ``a`` (two's complement when ``signed``) rounded to bf16, nearest
    even; 0 is ``+0``."""
    v = a - 0x10000 if signed and a & 0x8000 else a
    return 0 if v == 0 else _round(Fraction(v))


def to_int(a: int, signed: bool) -> int:
    """The bf16 ``a`` truncated toward zero, saturated to the signed (or unsigned) 16-bit
    range, NaN -> 0; as a 16-bit pattern."""
    kind, s, v = _decode(a)
    lo, hi = (-0x8000, 0x7FFF) if signed else (0, 0xFFFF)
    if kind == "nan":
        return 0
    if kind == "inf":
        return (lo if s else hi) & 0xFFFF
    t = v.numerator // v.denominator if v >= 0 else -((-v).numerator // (-v).denominator)
    return min(max(t, lo), hi) & 0xFFFF


#: IR op name -> reference on one or two 16-bit encodings
REFERENCES = {
    "float.add": lambda a, b: add(a, b),
    "float.sub": lambda a, b: add(a, b, True),
    "float.mul": mul,
    "float.max": lambda a, b: compare(a, b)[3],
    "float.min": lambda a, b: compare(a, b)[4],
    "float.lt": lambda a, b: compare(a, b)[0],
    "float.le": lambda a, b: compare(a, b)[1],
    "float.gt": lambda a, b: compare(b, a)[0],
    "float.ge": lambda a, b: compare(b, a)[1],
    "float.eq": lambda a, b: compare(a, b)[2],
    "float.from_s16": lambda a: from_int(a, True),
    "float.from_u16": lambda a: from_int(a, False),
    "float.to_s16": lambda a: to_int(a, True),
    "float.to_u16": lambda a: to_int(a, False),
}
