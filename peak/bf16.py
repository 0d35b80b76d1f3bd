"""BFloat16 arithmetic written in the PEak DSL: one description, three interpretations.

Each operation is a small :class:`~peak.Peak` spec (a *sub-PE*) whose ``__call__`` is plain
bit-level code over ``BitVector[16]`` in the DSL subset of ``docs/peak_dsl.md`` (unpack,
align with a bounded shift, add, normalise with a leading-zero count written as an unrolled
priority chain, round to nearest even with guard/round/sticky bits, pack; the special cases
selected by ``if``). The normaliser turns that into straight-line code, so the same spec is

* the Python model (concrete hwtypes values, ``peak.model``),
* an SMT formula with real bit-vector semantics (``peak.smt``; z3 can prove it against its
  floating-point theory, ``tests/peak/test_bf16.py``),
* a magma circuit (``peak.rtl``, Verilog through ``cgra rtl``),

and the three agree by construction. A floating-point PE calls them as sub-PEs (declare
``self.add = BF16Add()`` in ``__init__``, call ``s = self.add(is_sub, a, b)`` once per
path); ``peak.examples.bf16_alu`` is a complete example.

Why bit-level DSL code and not hwtypes ``FPVector``: the AHA lassen PE (the reference
hardware, ``lassen/float/fpu.py``) gets its float ops from ``FPVector[8, 7, RNE, False]``
in Python, from ``SMTFPVector`` in SMT -- which hwtypes implements as *uninterpreted
functions*, so a rewrite-rule synthesiser cannot reason about them -- and from DesignWare
instances in RTL (whose multiplier computes 3 extra fraction bits and drops them, so it
is not round-to-nearest-even in every case). Three unrelated implementations cannot be
shown to agree; one DSL description can, and its SMT form is interpreted.

Format (IEEE 754-2019 §3.3 binary interchange layout with 8 exponent and 7 fraction bits,
"BFloat16", 1-8-7), a ``BitVector[16]``::

    bit 15      sign
    bits 14..7  biased exponent e (bias 127)
    bits 6..0   fraction f;  value = (-1)^sign * 1.f * 2^(e - 127) for 1 <= e <= 254

Policies (the same in all three interpretations):

* **Rounding**: round to nearest, ties to even (IEEE 754-2019 §4.3.1 roundTiesToEven) with
  the classic guard / round / sticky scheme (D. Goldberg, "What every computer scientist
  should know about floating-point arithmetic", ACM Computing Surveys 1991, §1.5 and the
  appendix; J.-M. Muller et al., *Handbook of Floating-Point Arithmetic*, §7.3): the exact
  result is rounded once to 8 significant bits.
* **Subnormals: flushed**, as the reference hardware does: lassen's RTL float ops are
  DesignWare ``CW_fp_add`` / ``CW_fp_mult`` instances with ``ieee_compliance = 0``
  (StanfordAHA/coreir ``src/libs/float.cpp``), and lassen's Python model
  ``FPVector[8, 7, RNE, False]`` reads a subnormal as zero (``reinterpret_from_bv``).
  An input with exponent field 0 is read as zero of its sign ("denormals are zero"), and a
  result whose magnitude after rounding (to 8 bits, exponent unbounded) is below the
  smallest normal 2^-126 becomes zero of the result's sign ("flush to zero", tininess
  detected after rounding, IEEE 754-2019 §7.5). No operation outputs a subnormal
  encoding.
* **Overflow**: a rounded magnitude of 2^128 or more gives infinity of the result's sign
  (what roundTiesToEven does, §7.4).
* **NaN**: IEEE semantics with one canonical quiet NaN ``0x7FC0`` (:data:`QNAN`): any NaN
  input, ``inf - inf``, ``0 * inf`` give ``0x7FC0``; comparisons with a NaN are false. The
  reference hardware in ``ieee_compliance = 0`` mode has no NaN (hwtypes' model of it turns
  NaN into infinity); we keep NaN because the software reference (Halide on the CPU)
  produces NaN, and a NaN that silently becomes infinity would hide errors.
* **Zeros**: ``x + (-x) = +0``, ``(-0) + (-0) = -0``; the sign of a flushed result is the
  sign of the exact result; ``-0 == +0`` in comparisons.

Consequence for bit-exactness against Halide (item 4 of issue 16): Halide evaluates bf16
arithmetic on the CPU through float32 and rounds back to bf16 (IEEE, with subnormals).
Double rounding through float32 is harmless for ``+ - *`` because 24 >= 2 * 8 + 2 (S. A.
Figueroa, "When is double rounding innocuous?", SIGNUM Newsletter 1995), so our results
equal Halide's except where an input is subnormal or the exact result is below 2^-126 in
magnitude (we give a zero of the result's sign; Halide a subnormal, or +-2^-126 when it
rounds up to it), and in NaN payloads (we always give ``0x7FC0``). Kernels whose values
stay normal are bit-exact (``tests/peak/test_bf16.py`` runs Halide's own bf16 on the test
vectors). Float -> int conversions: see :class:`BF16ToInt16`.

Operations (each a Peak class; ``inst`` is its 1-bit instruction, inputs and outputs are
``BitVector[16]`` bf16 encodings unless stated):

=====================  ============  ====================================================
class                  inst (Bit)    outputs
=====================  ============  ====================================================
:class:`BF16Add`       ``sub``       ``res`` = a + b, or a - b when ``sub`` = 1
:class:`BF16Mul`       unused (0)    ``res`` = a * b
:class:`BF16Cmp`       unused (0)    ``lt``, ``le``, ``eq`` (Bit; IEEE: false on NaN, -0 ==
                                     +0), ``max``, ``min`` (IEEE 754-2019 §9.6
                                     maximum/minimum: NaN if either is NaN, -0 < +0)
:class:`Int16ToBF16`   ``signed``    ``res`` = the 16-bit integer ``x`` (two's complement
                                     when ``signed``, else unsigned) rounded to nearest even
:class:`BF16ToInt16`   ``signed``    ``res`` = a rounded toward zero (C / Halide cast),
                                     saturated to int16 (uint16 when not ``signed``); NaN
                                     gives 0. ``invalid`` (Bit) = NaN or out of range
=====================  ============  ====================================================

Costs: the Python model of one add is ~0.4 ms, of a mul ~0.2 ms (concrete hwtypes
values); the SMT formula of an add has ~200 shared nodes, a mul ~100 (z3 proves each
equal to its floating-point theory for all 2^32 input pairs in a few seconds).
:func:`bf16_bits` / :func:`bf16_value` convert between Python floats and encodings for
tests and documentation (module-level Python, not DSL).
"""
import math
import struct

from hwtypes import Bit, BitVector

from cgra.errors import ConfigError
from peak.spec import Peak, name_outputs

# Types used by the DSL bodies (module-level names: each family substitutes its own).
Data = BitVector[16]     # a bf16 encoding, or an int16 / uint16
Exp = BitVector[8]       # biased exponent field
Sig = BitVector[8]       # significand 1.fffffff (hidden bit at bit 7)
Sig9 = BitVector[9]      # significand + rounding carry
Ext = BitVector[11]      # significand, guard, round, sticky (bits 10..3, 2, 1, 0)
Ext12 = BitVector[12]    # Ext + carry of the addition
ExpW = BitVector[10]     # exponent with headroom, two's complement (-512 .. 511)
Cnt4 = BitVector[4]      # leading-zero count of 11 bits
Cnt5 = BitVector[5]      # leading-zero count of 16 bits
Prod = BitVector[16]     # 8 x 8-bit significand product
Wide = BitVector[24]     # significand shifted for the float -> int conversion
One = BitVector[1]

QNAN = 0x7FC0            # the canonical quiet NaN every NaN result is
INF = 0x7F80             # +infinity; -infinity is 0xFF80
SIGN = 0x8000
MAX_FINITE = 0x7F7F      # (2 - 2^-7) * 2^127
MIN_NORMAL = 0x0080      # 2^-126


class BF16Add(Peak):
    """``res = a + b`` (``sub`` = 0) or ``a - b`` (``sub`` = 1): 16-bit bf16 encodings, one
    rounding (nearest even) of the exact sum, subnormal inputs read as zero, tiny results
    flushed to zero, NaN results ``0x7FC0`` (module docstring).

    Datapath: the operand of larger magnitude is ``big``; the other's 8-bit significand is
    extended by 3 bits (guard, round, sticky), shifted right by the exponent difference
    (clamped to 15; the bits shifted out are ORed into the sticky bit), added to or
    subtracted from ``big``'s in 12 bits, normalised (one right shift on a carry, else a
    left shift by the leading-zero count of the 11-bit sum) and rounded."""

    @name_outputs(res=Data)
    def __call__(self, sub: Bit, a: Data, b: Data):
        sa = a[15]
        sb = b[15] ^ sub                         # the sign of the second operand, negated
        ea = a[7:15]
        eb = b[7:15]
        fa = a[0:7]
        fb = b[0:7]
        a_zero = ea == 0                         # zero or subnormal: read as zero
        b_zero = eb == 0
        a_inf = (ea == 255) & (fa == 0)
        b_inf = (eb == 255) & (fb == 0)
        a_nan = (ea == 255) & (fa != 0)
        b_nan = (eb == 255) & (fb != 0)

        # ---- order by magnitude: |big| >= |small|
        if a[0:15] >= b[0:15]:
            e_big = ea
            e_small = eb
            f_big = fa
            f_small = fb
            s = sa
        else:
            e_big = eb
            e_small = ea
            f_big = fb
            f_small = fa
            s = sb
        m_big = f_big.concat(One(1))             # 8-bit significands 1.f
        m_small = f_small.concat(One(1))

        # ---- align the smaller operand (guard, round, sticky below its LSB)
        d = e_big - e_small                      # 0 .. 253
        if d.bvugt(15):
            d = Exp(15)
        d16 = d.zext(8)
        small16 = m_small.zext(8) << 3           # significand at bits 10..3
        aligned = small16.bvlshr(d16)
        lost = small16 & ((Data(1) << d16) - 1)  # the bits shifted out
        sticky = lost != 0
        small11 = aligned[0:11] | sticky.ite(Ext(1), Ext(0))
        big11 = BitVector[3](0).concat(m_big)

        # ---- add or subtract the magnitudes (12 bits: no overflow, no borrow)
        if sa != sb:
            r12 = big11.zext(1) - small11.zext(1)
        else:
            r12 = big11.zext(1) + small11.zext(1)

        # ---- normalise: the leading one to bit 10
        r11 = r12[0:11]
        lz = Cnt4(11)
        for i in range(11):                      # a priority chain: the highest one wins
            if r11[i]:
                lz = Cnt4(10 - i)
        if r12[11]:
            n11 = r12[1:12] | r12[0].ite(Ext(1), Ext(0))
            e = e_big.zext(2) + 1
        else:
            n11 = r11 << lz.zext(7)
            e = e_big.zext(2) - lz.zext(6)

        # ---- round to nearest, ties to even
        m8 = n11[3:11]
        up = n11[2] & (n11[1] | n11[0] | m8[0])
        m9 = m8.zext(1) + up.ite(Sig9(1), Sig9(0))
        if m9[8]:
            e = e + 1
        # x.concat(y) puts y above x: fraction, exponent, sign from bit 0 up
        packed = m9[0:7].concat(e[0:8]).concat(s.ite(One(1), One(0)))
        sign16 = s.ite(Data(SIGN), Data(0))

        # ---- special cases
        if a_nan | b_nan | (a_inf & b_inf & (sa != sb)):
            return Data(QNAN)
        if a_inf:
            return sa.ite(Data(SIGN | INF), Data(INF))
        if b_inf:
            return sb.ite(Data(SIGN | INF), Data(INF))
        if a_zero & b_zero:
            return (sa & sb).ite(Data(SIGN), Data(0))
        if a_zero:
            return b[0:15].concat(sb.ite(One(1), One(0)))
        if b_zero:
            return a
        if r12 == 0:
            return Data(0)                       # exact cancellation: +0
        if e.bvsge(255):
            return sign16 | INF
        if e.bvsle(0):
            return sign16                        # flush to zero
        return packed


class BF16Mul(Peak):
    """``res = a * b``: 16-bit bf16 encodings, one rounding (nearest even) of the exact
    16-bit significand product, subnormal inputs read as zero, tiny results flushed to
    zero, ``0 * inf`` and NaN inputs give ``0x7FC0``. ``inst`` is unused (pass ``Bit(0)``)."""

    @name_outputs(res=Data)
    def __call__(self, inst: Bit, a: Data, b: Data):
        sa = a[15]
        sb = b[15]
        s = sa ^ sb
        ea = a[7:15]
        eb = b[7:15]
        fa = a[0:7]
        fb = b[0:7]
        a_zero = ea == 0
        b_zero = eb == 0
        a_inf = (ea == 255) & (fa == 0)
        b_inf = (eb == 255) & (fb == 0)
        a_nan = (ea == 255) & (fa != 0)
        b_nan = (eb == 255) & (fb != 0)

        p = fa.concat(One(1)).zext(8) * fb.concat(One(1)).zext(8)   # in [2^14, 2^16)
        e = ea.zext(2) + eb.zext(2) - 127        # -125 .. 381 before normalising
        if p[15]:
            m8 = p[8:16]
            g = p[7]
            st = p[0:7] != 0
            e = e + 1
        else:
            m8 = p[7:15]
            g = p[6]
            st = p[0:6] != 0
        up = g & (st | m8[0])
        m9 = m8.zext(1) + up.ite(Sig9(1), Sig9(0))
        if m9[8]:
            e = e + 1
        packed = m9[0:7].concat(e[0:8]).concat(s.ite(One(1), One(0)))
        sign16 = s.ite(Data(SIGN), Data(0))

        if a_nan | b_nan | (a_inf & b_zero) | (a_zero & b_inf):
            return Data(QNAN)
        if a_inf | b_inf:
            return sign16 | INF
        if a_zero | b_zero:
            return sign16
        if e.bvsge(255):
            return sign16 | INF
        if e.bvsle(0):
            return sign16                        # flush to zero
        return packed


class BF16Cmp(Peak):
    """Comparisons of two bf16 encodings (16 bits each; subnormals read as zero of their
    sign): ``lt``, ``le``, ``eq`` (1 bit each, IEEE 754-2019 §5.11: false when either
    is NaN, ``-0 == +0``) and ``max``, ``min`` (16 bits, IEEE 754-2019 §9.6 maximum /
    minimum: ``0x7FC0`` when either is NaN, ``-0 < +0``; a subnormal input comes out as
    the zero it reads as). ``inst`` is unused (pass ``Bit(0)``).

    Each operand is mapped to a 16-bit key whose unsigned order is the numeric order
    (negative: ``~x``; positive: ``x | 0x8000``), so one comparator serves all outputs."""

    @name_outputs(lt=Bit, le=Bit, eq=Bit, max=Data, min=Data)
    def __call__(self, inst: Bit, a: Data, b: Data):
        ea = a[7:15]
        eb = b[7:15]
        a_zero = ea == 0
        b_zero = eb == 0
        nan = ((ea == 255) & (a[0:7] != 0)) | ((eb == 255) & (b[0:7] != 0))
        xa = a_zero.ite(a & SIGN, a)             # flushed operands
        xb = b_zero.ite(b & SIGN, b)
        ka = xa[15].ite(~xa, xa | SIGN)          # order-preserving keys (-0 < +0)
        kb = xb[15].ite(~xb, xb | SIGN)
        both_zero = a_zero & b_zero
        less = ka < kb
        lt = ~nan & ~both_zero & less
        eq = ~nan & (both_zero | (ka == kb))
        le = lt | eq
        if nan:
            mx = Data(QNAN)
            mn = Data(QNAN)
        elif less:
            mx = xb
            mn = xa
        else:
            mx = xa
            mn = xb
        return lt, le, eq, mx, mn


class Int16ToBF16(Peak):
    """``res`` = the 16-bit integer ``x`` (two's complement when ``signed`` = 1, else
    unsigned) as a bf16 encoding, rounded to nearest even (every 16-bit integer is within
    range; integers above 256 in magnitude may round). Note: lassen's ``FCnvInt2F``
    truncates instead."""

    @name_outputs(res=Data)
    def __call__(self, signed: Bit, x: Data):
        neg = signed & x[15]
        mag = neg.ite(-x, x)                     # |x| as unsigned (-32768 -> 0x8000)
        lz = Cnt5(16)
        for i in range(16):
            if mag[i]:
                lz = Cnt5(15 - i)
        n = mag << lz.zext(11)                   # leading one at bit 15
        m8 = n[8:16]
        up = n[7] & ((n[0:7] != 0) | m8[0])
        m9 = m8.zext(1) + up.ite(Sig9(1), Sig9(0))
        e = Exp(142) - lz.zext(3)                # 127 + 15 - lz
        if m9[8]:
            e = e + 1
        if mag == 0:
            return Data(0)
        return m9[0:7].concat(e).concat(neg.ite(One(1), One(0)))


class BF16ToInt16(Peak):
    """``res`` = the bf16 encoding ``a`` rounded toward zero (the C and Halide cast),
    saturated to [-32768, 32767] when ``signed`` = 1, else to [0, 65535]; NaN gives 0.
    ``invalid`` = 1 when ``a`` is NaN or saturated (the truncated value is out of range;
    infinities included). Subnormals read as zero. 16-bit result, two's complement when
    signed. Note: lassen's ``FGetFInt`` truncates without saturating (it wraps)."""

    @name_outputs(res=Data, invalid=Bit)
    def __call__(self, signed: Bit, a: Data):
        s = a[15]
        ea = a[7:15]
        nan = (ea == 255) & (a[0:7] != 0)
        below_one = ea.bvult(127)                # |a| < 1 (zero and subnormals too)
        huge = ea.bvuge(143)                     # |a| >= 2^16 (infinity too)
        sh = (ea - 127)[0:4]                     # 0 .. 15 when neither
        w = a[0:7].concat(One(1)).zext(16) << sh.zext(20)
        mag = w[7:23]                            # the integer part of |a|
        if below_one:
            mag = Data(0)
        if signed:
            if s:
                over = huge | mag.bvugt(SIGN)
                val = over.ite(Data(SIGN), -mag)
            else:
                over = huge | mag.bvugt(0x7FFF)
                val = over.ite(Data(0x7FFF), mag)
        else:
            if s:
                over = huge | (mag != 0)
                val = Data(0)
            else:
                over = huge
                val = over.ite(Data(0xFFFF), mag)
        if nan:
            return Data(0), Bit(1)
        return val, over


# ------------------------------------------------------------------ plain-Python helpers
def bf16_bits(x: float) -> int:
    """The 16-bit bf16 encoding of the Python float ``x``, rounded to nearest even from its
    float32 value (NaN gives ``0x7FC0``). Python-side helper for tests and documents; it
    keeps float32 subnormals as bf16 subnormals (the DSL reads those as zero)."""
    if math.isnan(x):
        return QNAN
    try:
        u = struct.unpack("<I", struct.pack("<f", x))[0]
    except OverflowError:
        u = 0xFF800000 if x < 0 else 0x7F800000
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


def bf16_value(bits: int) -> float:
    """The value of the 16-bit bf16 encoding ``bits`` as a Python float (exact); raises
    :class:`~cgra.errors.ConfigError` unless ``0 <= bits < 2**16``."""
    if not 0 <= int(bits) < 1 << 16:
        raise ConfigError(f"bf16 encoding {bits!r} is not a 16-bit value (0 .. 0xFFFF)")
    return struct.unpack("<f", struct.pack("<I", int(bits) << 16))[0]


__all__ = ["BF16Add", "BF16Mul", "BF16Cmp", "Int16ToBF16", "BF16ToInt16", "QNAN", "INF",
           "SIGN", "MAX_FINITE", "MIN_NORMAL", "bf16_bits", "bf16_value"]
