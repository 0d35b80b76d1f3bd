"""BFloat16 division and exponential as documented multi-PE decompositions over IR ops the FP
PE already has (``float.*``, the int <-> bf16 conversions, and integer ops on the 16-bit
encodings), for the DSL (``a / b``, ``exp(x)`` on BFloat16) and the CoreIR importer
(``float.div``, ``float.exp``).

Both are approximations, not correctly rounded; their error bounds below are measured
exhaustively or on every tested vector by ``tests/mapper/test_float_math.py`` against the exact
value rounded to nearest even (an *ulp* is the distance between adjacent bf16 encodings of the
same sign, i.e. the difference of the 16-bit encodings):

- :func:`recip` ``(b)`` (10 PEs): the initial estimate ``r0 = (RECIP_MAGIC - |b|) | sign(b)``
  on the encodings (subtracting the encoding from a constant negates the exponent: the
  classic bit-level reciprocal seed, Lomont "Fast inverse square root" 2003 for the idea; the
  constant 0x7EFF chosen here by search over bf16), then two Newton-Raphson steps
  ``r = r (2 - b r)`` in bf16 arithmetic. Error <= 1 ulp for every ``|b|`` in
  ``[2**-126, 2**126)`` (biased exponent 1..252), checked on all 32 256 positive ones (the sign is
  copied, and the Newton steps are odd in ``b``).
  Outside (zero, infinities, NaN, ``|b| >= 2**126``): unspecified.
- :func:`div` ``(a, b) = a * recip(b)`` (11 PEs): error <= 2 ulp where ``recip`` is within
  its range and the quotient is a normal number (checked on 20 000 random pairs with
  exponents in ``2**-63 .. 2**62``; 200 000 when the bound was chosen).
- :func:`exp` ``(x)`` (19 PEs): ``x`` clamped to ``[-EXP_LIMIT, EXP_LIMIT]`` (16), then
  ``n = trunc(x * log2(e))`` (``float.to_s16``), the Cody-Waite reduction
  ``r = (x - n * C1) - n * C2`` with ``C1 = 0.625`` (3 significant bits, so ``n * C1`` and,
  by Sterbenz's lemma, ``x - n * C1`` are exact) and ``C2 = bf16(ln 2 - 0.625)``; ``exp(r)``
  by its degree-4 Taylor polynomial in Horner form (``|r| < ln 2``); the result's exponent
  field plus ``n`` (``(n << 7) + p`` on the encodings). Error <= 2 ulp for every ``|x| <= 16``
  (all 33 538 such encodings, subnormal inputs read as 0); ``exp(+-16)`` beyond (a saturated
  argument: for weights ``exp(-d)`` the tail is ~1e-7 instead of smaller); NaN: unspecified.

Source of the reduction and polynomial: W. J. Cody and W. Waite, *Software Manual for the
Elementary Functions* (1980), chapter 6.
"""
from __future__ import annotations

import math

from mapper import ir

#: the encoding the reciprocal seed subtracts |b| from (search over 0x7EE0..0x7F07: the only
#: constants whose seed converges to <= 1 ulp in two steps on every exponent 1..252 are
#: 0x7EFF and 0x7F00)
RECIP_MAGIC = 0x7EFF
#: |x| beyond which :func:`exp` saturates its argument
EXP_LIMIT = 16.0
#: degree of the Taylor polynomial of exp(r), |r| < ln 2
EXP_DEGREE = 4


def _bits(v: float) -> int:
    from peak.bf16 import bf16_bits  # deferred: loads z3, pysmt, hwtypes, 1 more only when called
    return bf16_bits(v)


def _c(k: ir.Kernel, v: int) -> int:
    return k.const(v, ir.FLOAT_WIDTH)


def recip(k: ir.Kernel, b: int) -> int:
    """Append ``1 / b`` (bf16 encodings, 16-bit node ids; error bound in the module
    docstring) to kernel ``k``; returns the result's node id."""
    mag = k.add("coreir.and", b, _c(k, 0x7FFF))
    sign = k.add("coreir.and", b, _c(k, 0x8000))
    r = k.add("coreir.or", k.add("coreir.sub", _c(k, RECIP_MAGIC), mag), sign)
    two = _c(k, _bits(2.0))
    for _ in range(2):
        r = k.add("float.mul", r, k.add("float.sub", two, k.add("float.mul", b, r)))
    return r


def div(k: ir.Kernel, a: int, b: int) -> int:
    """Append ``a / b`` = ``a * recip(b)`` to kernel ``k``; returns the node id."""
    return k.add("float.mul", a, recip(k, b))


def exp(k: ir.Kernel, x: int) -> int:
    """Append ``exp(x)`` (module docstring: clamp, Cody-Waite reduction, Taylor polynomial,
    exponent scaling) to kernel ``k``; returns the node id."""
    x = k.add("float.min", k.add("float.max", x, _c(k, _bits(-EXP_LIMIT))),
              _c(k, _bits(EXP_LIMIT)))
    n = k.add("float.to_s16", k.add("float.mul", x, _c(k, _bits(1 / math.log(2)))))
    nf = k.add("float.from_s16", n)
    r = k.add("float.sub", x, k.add("float.mul", nf, _c(k, _bits(0.625))))
    r = k.add("float.sub", r, k.add("float.mul", nf, _c(k, _bits(math.log(2) - 0.625))))
    p = _c(k, _bits(1 / math.factorial(EXP_DEGREE)))
    for j in range(EXP_DEGREE - 1, -1, -1):
        p = k.add("float.add", k.add("float.mul", p, r), _c(k, _bits(1 / math.factorial(j))))
    return k.add("coreir.add", p, k.add("coreir.shl", n, _c(k, 7)))
