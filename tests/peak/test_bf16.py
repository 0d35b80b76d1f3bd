"""BFloat16 in PEak (``peak.bf16`` through ``peak.examples.bf16_alu.BF16ALU``).

One DSL description gives the Python model, the SMT formula and the RTL; they are checked
against each other AND against independent references:

* an exact reference written here with Python ``Fraction`` arithmetic (one rounding of the
  exact result, the policies of ``peak.bf16``), on 2000 biased random vectors per ALU op
  plus every pair of corner values (Python model, SMT formula evaluated by z3, RTL under
  Verilator: ONE build, all vectors streamed);
* z3's floating-point theory (``FPSort(8, 8)``: 8 exponent bits, 8 significand bits with
  the hidden one), in proofs for ALL inputs of add, sub, mul, the comparisons and both
  conversions;
* hwtypes ``FPVector[8, 7, RNE, True]`` (gmpy2/MPFR) and float32 arithmetic (numpy) where
  no subnormal is involved, and Halide's own CPU bfloat16, which must differ only where an
  input or its result is subnormal.
"""
from __future__ import annotations

import random
import time
from collections import Counter
from fractions import Fraction

import hwtypes as ht
import numpy as np
import pytest
import z3

from cgra.errors import ConfigError
from peak.assembler import assembler
from peak.bf16 import (INF, MAX_FINITE, MIN_NORMAL, QNAN, SIGN, BF16Add, bf16_bits,
                       bf16_value)
from peak.examples import cgra_pe_bf16 as fp_pe
from peak.examples.bf16_alu import BF16ALU, FPOp, Inst
from peak.examples.cgra_pe import Cond, LUTTable, Mode
from peak.normalize import normal_form
from peak.sim import run_rtl
from peak.smt import symbolic

ASM = assembler(Inst)
N_RANDOM = 2000                       # random vectors per op (plus the corner cases)
BINARY = [FPOp.Add, FPOp.Sub, FPOp.Mul, FPOp.Max, FPOp.Min, FPOp.Lt, FPOp.Le, FPOp.Eq]
ARITH = {FPOp.Add, FPOp.Sub, FPOp.Mul}


def enc(s: int, e: int, f: int) -> int:
    """bf16 encoding of sign s (1 bit), biased exponent e (8 bits), fraction f (7 bits)."""
    return (s << 15) | (e << 7) | f


CORNERS = [
    0x0000, 0x8000,                   # +-0
    0x7F80, 0xFF80,                   # +-inf
    0x7FC0, 0xFFC1, 0x7F81,           # NaNs (canonical, negative, signalling payload)
    MAX_FINITE, SIGN | MAX_FINITE,    # +-max finite
    MIN_NORMAL, SIGN | MIN_NORMAL, 0x0081,
    0x0001, 0x807F, 0x0040,           # subnormals (read as zero)
    0x3F80, 0xBF80, 0x3F81, 0x3F7F,   # 1, -1, 1 + ulp, 1 - ulp/2
    0x3B80, 0x3C00,                   # 2^-8 (half an ulp of 1), 2^-7
    0x4000, 0x3F00, 0x7F00, 0x0100,   # 2, 0.5, 2^127, 2^-125
    0x4380, 0x4700, 0xC700, 0x477F,   # 256, 32768, -32768, 65280
]
INT_CORNERS = [0, 1, 2, 255, 256, 257, 258, 259, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0xFF00,
               0xFEFF, 0x0101, 0x7F80,
               0x0181, 0x0183,                  # 385, 387: ties at 9 bits (down, up)
               0x7FBF, 0x7FC0, 0x7FC1,          # 32703 (down), 32704 (tie, up), 32705
               0x7F7F, 0x7FFE]                  # 32639, 32766 (both round to 32768)
#: bf16 -> int corners besides CORNERS (every CORNERS value is converted too): +-0.5,
#: +-1.5, +-2.75, the bf16 values next to 2^15 and 2^16 (32640 = 0x46FF is the largest below
#: 2^15; -32768 = 0xC700 the smallest int16; 0xC701 = -33024), huge values (1e6, max finite)
F2I_CORNERS = [0x3F00, 0xBF00, 0x3FC0, 0xBFC0, 0x4030, 0xC030, 0x46FE, 0x46FF, 0xC6FF,
               0x4701, 0xC701, 0x4780, 0xC780, 0x4974, 0xC974, 0x3F7F, 0xBF7F, 0x8001]


# ============================================================== exact reference
def decode(x: int) -> tuple[str, int, Fraction]:
    """('nan' | 'inf' | 'num', sign, value) of a bf16 encoding; subnormals read as 0."""
    s, e, f = x >> 15, (x >> 7) & 0xFF, x & 0x7F
    if e == 0xFF:
        return ("nan" if f else "inf"), s, Fraction(0)
    if e == 0:
        return "num", s, Fraction(0)
    v = Fraction(128 + f) * Fraction(2) ** (e - 134)
    return "num", s, -v if s else v


def round_bf16(v: Fraction, st: Counter) -> int:
    """The nonzero rational ``v`` rounded once to 8 significant bits (nearest, ties to
    even), exponent unbounded; then overflow -> inf, below 2^-126 -> zero of v's sign."""
    sign = SIGN if v < 0 else 0
    v = abs(v)
    e = v.numerator.bit_length() - v.denominator.bit_length()
    if Fraction(2) ** e > v:
        e -= 1
    scaled = v / Fraction(2) ** (e - 7)                     # in [128, 256)
    q = scaled.numerator // scaled.denominator
    rem = scaled - q
    if rem == Fraction(1, 2):
        st["tie_up" if q % 2 else "tie_even"] += 1
        q += q % 2
    elif rem:
        st["inexact"] += 1
        q += rem > Fraction(1, 2)
    if q == 256:
        q, e = 128, e + 1
    if e > 127:
        st["overflow"] += 1
        return sign | INF
    if e < -126:
        st["underflow"] += 1
        return sign
    return sign | ((e + 127) << 7) | (q - 128)


def ref_addsub(a: int, b: int, sub: bool, st: Counter) -> int:
    ka, sa, va = decode(a)
    kb, sb, vb = decode(b)
    if sub:
        sb, vb = 1 - sb, -vb
    if "nan" in (ka, kb) or (ka == kb == "inf" and sa != sb):
        st["nan"] += 1
        return QNAN
    if ka == "inf" or kb == "inf":
        return SIGN | INF if (sa if ka == "inf" else sb) else INF
    if va == 0 and vb == 0:
        return SIGN if sa and sb else 0
    total = va + vb
    if total == 0:
        st["exact_cancellation"] += 1
        return 0
    if va and vb and abs(total) < max(abs(va), abs(vb)) / 4:
        st["massive_cancellation"] += 1
    return round_bf16(total, st)


def ref_mul(a: int, b: int, st: Counter) -> int:
    ka, sa, va = decode(a)
    kb, sb, vb = decode(b)
    sign = SIGN if sa != sb else 0
    if "nan" in (ka, kb) or (ka == "inf" and kb == "num" and vb == 0) or \
            (kb == "inf" and ka == "num" and va == 0):
        st["nan"] += 1
        return QNAN
    if "inf" in (ka, kb):
        return sign | INF
    if va == 0 or vb == 0:
        return sign
    return round_bf16(va * vb, st)


def flushed(x: int) -> int:
    """The encoding x reads as: a subnormal becomes the zero of its sign."""
    return x & SIGN if (x >> 7) & 0xFF == 0 else x


def ref_cmp(a: int, b: int, st: Counter) -> tuple[int, int, int, int, int]:
    """(lt, le, eq, maximum, minimum) with IEEE semantics on the flushed values."""
    ka, sa, va = decode(a)
    kb, sb, vb = decode(b)
    if "nan" in (ka, kb):
        st["nan"] += 1
        return 0, 0, 0, QNAN, QNAN
    inf = Fraction(2) ** 200
    xa = (-inf if sa else inf) if ka == "inf" else va
    xb = (-inf if sb else inf) if kb == "inf" else vb
    fa, fb = flushed(a), flushed(b)
    if xa == xb:
        st["equal"] += 1
        if xa == 0:                                   # -0 < +0 for maximum / minimum
            st["zeros"] += 1
            return 0, 1, 1, fa & fb, fa | fb
        return 0, 1, 1, fa, fa
    lt = int(xa < xb)
    return lt, lt, 0, (fb if lt else fa), (fa if lt else fb)


def ref_i2f(x: int, signed: int, st: Counter) -> int:
    v = x - (1 << 16) if signed and x >= 1 << 15 else x
    return 0 if v == 0 else round_bf16(Fraction(v), st)


def ref_f2i(a: int, signed: int, st: Counter) -> tuple[int, int]:
    """(16-bit result, invalid): truncate toward zero, saturate, NaN -> (0, 1)."""
    k, s, v = decode(a)
    lo, hi = (-32768, 32767) if signed else (0, 65535)
    if k == "nan":
        st["nan"] += 1
        return 0, 1
    t = (lo - 1 if s else hi + 1) if k == "inf" else int(v)      # int() truncates
    if not signed and s and t == 0 and v != 0:
        st["negative_fraction"] += 1
    if t < lo or t > hi:
        st["saturated_neg" if t < lo else "saturated_pos"] += 1
        return (lo if t < lo else hi) & 0xFFFF, 1
    return t & 0xFFFF, 0


def is_nan(x: int) -> bool:
    return (x >> 7) & 0xFF == 0xFF and x & 0x7F != 0


def reference(op: FPOp, signed: int, a: int, b: int, st: Counter) -> tuple[int, int]:
    """(res, res_p) of the ALU (peak/examples/bf16_alu.py docstring), from the reference."""
    if op in (FPOp.Add, FPOp.Sub):
        r = ref_addsub(a, b, op == FPOp.Sub, st)
    elif op == FPOp.Mul:
        r = ref_mul(a, b, st)
    elif op == FPOp.I2F:
        r = ref_i2f(a, signed, st)
    elif op == FPOp.F2I:
        return ref_f2i(a, signed, st)
    else:
        lt, le, eq, mx, mn = ref_cmp(a, b, st)
        if op in (FPOp.Lt, FPOp.Le, FPOp.Eq):
            p = {FPOp.Lt: lt, FPOp.Le: le, FPOp.Eq: eq}[op]
            return p, p
        r = mx if op == FPOp.Max else mn
    return r, int(is_nan(r))


# ============================================================== vectors
def _normal(rng: random.Random, lo: int = 1, hi: int = 254) -> int:
    return enc(rng.getrandbits(1), rng.randint(lo, hi), rng.getrandbits(7))


def gen_binary(op: FPOp, rng: random.Random) -> tuple[int, int]:
    """One (a, b) pair, biased to the cases that break float units: near exponents (ties,
    cancellation), overflow to infinity, underflow to zero, specials."""
    k = rng.random()
    if k < 0.2:                                           # uniform bit patterns
        a, b = rng.getrandbits(16), rng.getrandbits(16)
    elif k < 0.25:                                        # a corner and a normal
        a, b = rng.choice(CORNERS), _normal(rng)
    elif k < 0.45:                                        # exponents close together
        a = _normal(rng)
        eb = min(254, max(1, ((a >> 7) & 0xFF) + rng.randint(-9, 9)))
        b = enc(rng.getrandbits(1), eb, rng.getrandbits(7))
    elif k < 0.65:                                        # exact ties
        if op == FPOp.Mul:
            a = _normal(rng, 64, 190)
            b = enc(rng.getrandbits(1), rng.randint(64, 190),
                    rng.choice([0x40, 0x20, 0x60, 0x10, 0x50, 0x08, 0x48]))
        elif op in (FPOp.Add, FPOp.Sub):
            a = _normal(rng, 12, 244)
            kk = rng.randint(1, 8)                        # b's bits below a's ulp: 10..0
            sig = ((128 | rng.getrandbits(7)) >> kk << kk) | (1 << (kk - 1))
            b = enc(rng.getrandbits(1), ((a >> 7) & 0xFF) - kk, sig & 0x7F)
        else:                                             # comparisons: (nearly) equal
            a = _normal(rng)
            b = a ^ rng.choice([0, 0, 1, SIGN, 0x80, SIGN | 1])
    elif k < 0.8:                                         # overflow to infinity
        if op == FPOp.Mul:
            ea = rng.randint(160, 254)
            a = enc(rng.getrandbits(1), ea, rng.getrandbits(7))
            b = enc(rng.getrandbits(1), min(254, 381 - ea + rng.randint(-2, 1)),
                    rng.getrandbits(7))
        else:
            s = rng.getrandbits(1)
            a = enc(s, rng.randint(250, 254), rng.getrandbits(7))
            b = enc(s ^ (op == FPOp.Sub), rng.randint(250, 254), rng.getrandbits(7))
    elif k < 0.95:                                        # underflow to zero
        if op == FPOp.Mul:
            ea = rng.randint(1, 126)
            a = enc(rng.getrandbits(1), ea, rng.getrandbits(7))
            b = enc(rng.getrandbits(1), min(254, max(1, 127 - ea + rng.randint(-2, 2))),
                    rng.getrandbits(7))
        else:
            s = rng.getrandbits(1)
            a = enc(s, rng.randint(1, 3), rng.getrandbits(7))
            b = enc(s ^ (op != FPOp.Sub), rng.randint(1, 3), rng.getrandbits(7))
    else:                                                 # cancellation: b = -a +- ulps
        a = _normal(rng)
        b = (a ^ (SIGN if op != FPOp.Sub else 0)) + rng.randint(-2, 2)
        b &= 0xFFFF
    return (a, b) if rng.random() < 0.5 else (b, a)


def gen_i2f(rng: random.Random) -> tuple[int, int]:
    """(x, signed) for the int -> bf16 conversion, biased to rounding ties."""
    signed = rng.getrandbits(1)
    k = rng.random()
    if k < 0.3:
        x = rng.getrandbits(16)
    elif k < 0.5:
        x = rng.randint(0, 600)
    else:                                                 # ties: ...1xxxxxxx|100..0
        n = rng.randint(10, 15 if signed else 16)
        x = ((128 | rng.getrandbits(7)) << (n - 8)) | (1 << (n - 9))
        if rng.random() < 0.3:
            x += rng.choice([-1, 1])
    if signed and rng.random() < 0.5:
        x = -x
    return x & 0xFFFF, signed


def gen_f2i(rng: random.Random) -> tuple[int, int]:
    """(a, signed) for bf16 -> int, biased to the integer range edges."""
    signed = rng.getrandbits(1)
    k = rng.random()
    if k < 0.2:
        a = rng.getrandbits(16)
    elif k < 0.6:
        a = enc(rng.getrandbits(1), rng.randint(120, 145), rng.getrandbits(7))
    elif k < 0.85:
        a = enc(rng.getrandbits(1), rng.randint(141, 143), rng.getrandbits(7))
    else:
        a = enc(1, rng.randint(100, 127), rng.getrandbits(7))     # -1 < a or a = -1.x
    return a, signed


def make_vectors(seed: int = 16) -> list[tuple[FPOp, int, int, int, bool]]:
    """(op, signed, a, b, is_random) for every op: N_RANDOM random vectors, then corners."""
    rng = random.Random(seed)
    vecs: list[tuple[FPOp, int, int, int, bool]] = []
    for op in BINARY:
        for _ in range(N_RANDOM):
            a, b = gen_binary(op, rng)
            vecs.append((op, 0, a, b, True))
        vecs += [(op, 0, a, b, False) for a in CORNERS for b in CORNERS]
    for _ in range(N_RANDOM):
        x, s = gen_i2f(rng)
        vecs.append((FPOp.I2F, s, x, rng.getrandbits(16), True))
    vecs += [(FPOp.I2F, s, x, 0, False) for x in INT_CORNERS for s in (0, 1)]
    vecs += [(FPOp.I2F, s, (-x) & 0xFFFF, 0, False) for x in INT_CORNERS for s in (0, 1)]
    for _ in range(N_RANDOM):
        a, s = gen_f2i(rng)
        vecs.append((FPOp.F2I, s, a, rng.getrandbits(16), True))
    vecs += [(FPOp.F2I, s, a, 0, False) for a in CORNERS + F2I_CORNERS for s in (0, 1)]
    return vecs


# ============================================================== the three interpretations
def smt_evaluator():
    """``f(op, signed, a, b) -> (res, res_p)``: the SMT formula of the ALU (pysmt, from the
    SMT family) converted to z3, specialised per instruction, evaluated by z3's
    simplifier on constants."""
    z = symbolic(BF16ALU).z3()
    cache: dict[int, tuple] = {}

    def f(op: FPOp, signed: int, a: int, b: int) -> tuple[int, int]:
        code = ASM.encode(Inst(op, signed))
        if code not in cache:
            inst = (z["inst"], z3.BitVecVal(code, ASM.width))
            res, res_p = (z3.substitute(z[k], inst) for k in ("out.res", "out.res_p"))
            cache[code] = (z3.simplify(res),
                           z3.simplify(z3.If(res_p, z3.BitVecVal(1, 1), z3.BitVecVal(0, 1))))
        sub = [(z["a"], z3.BitVecVal(a, 16)), (z["b"], z3.BitVecVal(b, 16))]
        return tuple(z3.simplify(z3.substitute(e, *sub)).as_long() for e in cache[code])
    return f


@pytest.fixture(scope="module")
def sweep(rtl_dir):
    """Every vector through the reference, the Python model, the SMT formula and the RTL
    (one Verilator build); per-op statistics of the hard cases the reference met."""
    vecs = make_vectors()
    times: dict[str, float] = {}
    t = time.perf_counter()
    stats: dict[FPOp, Counter] = {op: Counter() for op in FPOp.enumerate()}
    ref = [reference(op, s, a, b, stats[op]) for op, s, a, b, _ in vecs]
    times["reference"] = time.perf_counter() - t
    t = time.perf_counter()
    alu = BF16ALU()
    py = [tuple(map(int, alu(Inst(op, s), a, b))) for op, s, a, b, _ in vecs]
    times["python"] = time.perf_counter() - t
    t = time.perf_counter()
    smt_f = smt_evaluator()
    smt = [smt_f(op, s, a, b) for op, s, a, b, _ in vecs]
    times["smt"] = time.perf_counter() - t
    t = time.perf_counter()
    rtl = run_rtl(BF16ALU, [(ASM.encode(Inst(op, s)), (a, b)) for op, s, a, b, _ in vecs],
                  str(rtl_dir / "bf16_alu"))
    times["rtl"] = time.perf_counter() - t
    print(f"\nbf16 sweep: {len(vecs)} vectors, times (s): "
          + ", ".join(f"{k} {v:.1f}" for k, v in times.items()))
    for op, st in stats.items():
        print(f"  {op.name}: {dict(sorted(st.items()))}")
    return vecs, ref, py, smt, rtl, stats


def _describe(v: tuple, want: tuple, got: tuple) -> str:
    op, s, a, b, _ = v
    return f"{op.name} signed={s} a={a:#06x} b={b:#06x}: reference {want}, got {got}"


@pytest.mark.parametrize("op", list(FPOp.enumerate()), ids=lambda o: o.name)
def test_python_smt_rtl_equal_the_reference(sweep, op):
    vecs, ref, py, smt, rtl, _ = sweep
    idx = [i for i, v in enumerate(vecs) if v[0] == op]
    assert sum(vecs[i][4] for i in idx) == N_RANDOM
    assert len(idx) >= N_RANDOM + 28
    for name, got in (("Python model", py), ("SMT formula", smt), ("RTL", rtl)):
        bad = [i for i in idx if got[i] != ref[i]]
        assert not bad, f"{name}: {len(bad)} mismatches, first: " + \
            _describe(vecs[bad[0]], ref[bad[0]], got[bad[0]])


def test_the_vectors_reach_the_hard_cases(sweep):
    """The biased distribution really produces ties (both ways), overflow, underflow,
    cancellation, NaN and saturation (counts from the reference)."""
    stats = sweep[5]
    for op in (FPOp.Add, FPOp.Sub):
        for what in ("tie_even", "tie_up", "inexact", "overflow", "underflow", "nan",
                     "exact_cancellation", "massive_cancellation"):
            assert stats[op][what] > 0, (op, what, stats[op])
    for what in ("tie_even", "tie_up", "inexact", "overflow", "underflow", "nan"):
        assert stats[FPOp.Mul][what] > 0, (what, stats[FPOp.Mul])
    for op in (FPOp.Max, FPOp.Min, FPOp.Lt, FPOp.Le, FPOp.Eq):
        for what in ("nan", "equal", "zeros"):
            assert stats[op][what] > 0, (op, what, stats[op])
    for what in ("tie_even", "tie_up", "inexact"):
        assert stats[FPOp.I2F][what] > 0, (what, stats[FPOp.I2F])
    for what in ("nan", "saturated_pos", "saturated_neg", "negative_fraction"):
        assert stats[FPOp.F2I][what] > 0, (what, stats[FPOp.F2I])
    # ties are not rare: more than 2% of the random add and mul vectors
    for op in (FPOp.Add, FPOp.Mul):
        assert stats[op]["tie_even"] + stats[op]["tie_up"] > N_RANDOM // 50, stats[op]


def test_pysmt_substitution_agrees(sweep):
    """The pysmt formula itself (``SymbolicPE.substitute`` + pysmt simplification, no z3)
    gives the same outputs on a subset of the vectors."""
    vecs, ref, *_ = sweep
    sym = symbolic(BF16ALU)
    for i in range(0, len(vecs), 500):
        op, s, a, b, _ = vecs[i]
        outs, _nxt = sym.substitute({"inst": ASM.encode(Inst(op, s)), "a": a, "b": b})
        assert (outs["res"].constant_value(), int(outs["res_p"].constant_value())) == \
            ref[i], _describe(vecs[i], ref[i], outs)


# ============================================================== known answers
F = bf16_bits
KNOWN = [   # (op, signed, a, b, res, res_p)
    (FPOp.Add, 0, F(1.0), F(2.0), F(3.0), 0),
    (FPOp.Add, 0, 0x3F80, 0x3B80, 0x3F80, 0),         # 1 + 2^-8: tie, stays even
    (FPOp.Add, 0, 0x3F81, 0x3B80, 0x3F82, 0),         # (1 + 2^-7) + 2^-8: tie, up to even
    (FPOp.Sub, 0, 0x3F80, 0x3F7F, 0x3B80, 0),         # 1 - (1 - 2^-8) = 2^-8, exact
    (FPOp.Sub, 0, 0x4049, 0x4049, 0x0000, 0),         # x - x = +0
    (FPOp.Add, 0, 0x8000, 0x8000, 0x8000, 0),         # -0 + -0 = -0
    (FPOp.Add, 0, 0x0000, 0x8000, 0x0000, 0),
    (FPOp.Add, 0, MAX_FINITE, 0x7B00, INF, 0),        # max + ulp/2: tie, up to infinity
    (FPOp.Add, 0, MAX_FINITE, 0x7A80, MAX_FINITE, 0),  # max + ulp/4 rounds down
    (FPOp.Sub, 0, 0x0080, 0x0081, 0x8000, 0),         # -2^-133: flushed, sign kept
    (FPOp.Add, 0, 0x0001, 0x0001, 0x0000, 0),         # subnormal inputs read as zero
    (FPOp.Add, 0, 0x0001, 0x3F80, 0x3F80, 0),
    (FPOp.Sub, 0, INF, INF, QNAN, 1),                 # inf - inf
    (FPOp.Add, 0, 0x7F81, 0x3F80, QNAN, 1),           # NaN payloads become 0x7FC0
    (FPOp.Add, 0, 0xFF80, 0x3F80, 0xFF80, 0),
    (FPOp.Mul, 0, F(1.5), F(-2.25), F(-3.375), 0),
    (FPOp.Mul, 0, 0x3FC0, 0x3F81, 0x3FC2, 0),         # 1.5 * (1 + 2^-7): tie, up
    (FPOp.Mul, 0, 0x3FC0, 0x3F83, 0x3FC4, 0),         # 1.5 * (1 + 3 * 2^-7): tie, even
    (FPOp.Mul, 0, MIN_NORMAL, 0x3F00, 0x0000, 0),     # 2^-127: flushed
    (FPOp.Mul, 0, SIGN | MIN_NORMAL, 0x3F00, SIGN, 0),
    (FPOp.Mul, 0, 0x3F10, 0x00E3, 0x0000, 0),         # tiny after rounding (IEEE: 0x0080)
    (FPOp.Mul, 0, 0x7F00, 0x4000, INF, 0),            # 2^127 * 2
    (FPOp.Mul, 0, 0x0000, INF, QNAN, 1),              # 0 * inf
    (FPOp.Mul, 0, 0x0001, INF, QNAN, 1),              # a subnormal is zero here too
    (FPOp.Mul, 0, INF, 0xBF80, 0xFF80, 0),
    (FPOp.Max, 0, 0x0000, 0x8000, 0x0000, 0),         # maximum(+0, -0) = +0
    (FPOp.Min, 0, 0x0000, 0x8000, 0x8000, 0),
    (FPOp.Max, 0, QNAN, 0x3F80, QNAN, 1),
    (FPOp.Min, 0, 0x8001, 0x3F80, 0x8000, 0),         # a subnormal comes out flushed
    (FPOp.Max, 0, 0xFF80, 0xFF7F, 0xFF7F, 0),
    (FPOp.Lt, 0, 0x8000, 0x0000, 0, 0),               # -0 < +0 is false
    (FPOp.Eq, 0, 0x8000, 0x0000, 1, 1),
    (FPOp.Eq, 0, 0x0001, 0x0000, 1, 1),               # subnormal == 0
    (FPOp.Eq, 0, QNAN, QNAN, 0, 0),
    (FPOp.Le, 0, QNAN, 0x3F80, 0, 0),
    (FPOp.Lt, 0, 0xFF80, SIGN | MAX_FINITE, 1, 1),
    (FPOp.Le, 0, 0x3F80, 0x3F80, 1, 1),
    (FPOp.I2F, 1, 257, 0, 0x4380, 0),                 # tie between 256 and 258: 256
    (FPOp.I2F, 1, 259, 0, 0x4382, 0),                 # tie between 258 and 260: 260
    (FPOp.I2F, 1, 0x8000, 0, 0xC700, 0),              # -32768
    (FPOp.I2F, 0, 0x8000, 0, 0x4700, 0),              # 32768 unsigned
    (FPOp.I2F, 0, 0xFFFF, 0, 0x4780, 0),              # 65535 rounds to 2^16
    (FPOp.I2F, 1, 0xFFFF, 0, 0xBF80, 0),              # -1
    (FPOp.F2I, 1, F(2.75), 0, 2, 0),                  # toward zero
    (FPOp.F2I, 1, F(-2.75), 0, 0xFFFE, 0),
    (FPOp.F2I, 1, 0x4700, 0, 0x7FFF, 1),              # 32768 saturates
    (FPOp.F2I, 1, 0xC700, 0, 0x8000, 0),              # -32768 fits
    (FPOp.F2I, 1, 0xC701, 0, 0x8000, 1),              # -33024 saturates
    (FPOp.F2I, 0, 0x477F, 0, 65280, 0),
    (FPOp.F2I, 0, INF, 0, 0xFFFF, 1),
    (FPOp.F2I, 0, 0xBF00, 0, 0, 0),                   # -0.5 -> 0, not out of range
    (FPOp.F2I, 0, 0xBF80, 0, 0, 1),                   # -1 saturates to 0
    (FPOp.F2I, 1, QNAN, 0, 0, 1),
]


@pytest.mark.parametrize("op,signed,a,b,res,res_p", KNOWN,
                         ids=[f"{k[0].name}-{i}" for i, k in enumerate(KNOWN)])
def test_known_answers(op, signed, a, b, res, res_p):
    got = tuple(map(int, BF16ALU()(Inst(op, signed), a, b)))
    assert got == (res, res_p), f"{op.name}({a:#06x}, {b:#06x}) = {got[0]:#06x}"
    assert reference(op, signed, a, b, Counter()) == (res, res_p)


# ============================================================== z3 proofs (all inputs)
BF = z3.FPSort(8, 8)                 # bfloat16: 8 exponent bits, 8 significand bits
WIDE = z3.FPSort(10, 8)              # same precision, exponent range never exceeded
RNE = z3.RNE()


def _bv(x: int) -> z3.BitVecRef:
    return z3.BitVecVal(x, 16)


def _daz(x: z3.BitVecRef) -> z3.FPRef:
    f = z3.fpBVToFP(x, BF)
    return z3.If(z3.fpIsSubnormal(f), z3.If(z3.fpIsNegative(f), z3.fpMinusZero(BF),
                                              z3.fpPlusZero(BF)), f)


def _bits(r: z3.FPRef) -> z3.BitVecRef:
    """Encoding of a bf16 z3 float: NaN -> 0x7FC0, a subnormal -> zero of its sign."""
    return z3.If(z3.fpIsNaN(r), _bv(QNAN),
                 z3.If(z3.fpIsSubnormal(r), z3.If(z3.fpIsNegative(r), _bv(SIGN), _bv(0)),
                       z3.fpToIEEEBV(r)))


def _round_wide(r: z3.FPRef) -> z3.BitVecRef:
    """A WIDE result (already rounded to 8 bits, exponent unbounded) as bf16 with the
    policies: below 2^-126 -> zero, 2^128 or more -> infinity."""
    mag = z3.fpAbs(r)
    neg = z3.fpIsNegative(r)
    tiny = z3.And(z3.Not(z3.fpIsZero(r)), z3.fpLT(mag, z3.FPVal(2.0 ** -126, WIDE)))
    huge = z3.fpGEQ(mag, z3.fpMul(RNE, z3.FPVal(2.0 ** 64, WIDE), z3.FPVal(2.0 ** 64, WIDE)))
    return z3.If(z3.fpIsNaN(r), _bv(QNAN),
                 z3.If(tiny, z3.If(neg, _bv(SIGN), _bv(0)),
                       z3.If(huge, z3.If(neg, _bv(SIGN | INF), _bv(INF)),
                             z3.fpToIEEEBV(z3.fpFPToFP(RNE, r, BF)))))


def _dsl(op: FPOp, signed: int = 0) -> tuple[z3.BitVecRef, z3.BoolRef, z3.BitVecRef,
                                              z3.BitVecRef]:
    """(res, res_p, a, b) of the ALU's SMT formula for one instruction, in z3."""
    z = symbolic(BF16ALU).z3()
    inst = (z["inst"], z3.BitVecVal(ASM.encode(Inst(op, signed)), ASM.width))
    res, res_p = (z3.substitute(z[k], inst) for k in ("out.res", "out.res_p"))
    return res, res_p, z["a"], z["b"]


def _prove(claim: z3.BoolRef, timeout_s: int) -> float:
    """Prove ``claim`` for all inputs (z3, with its own timeout); returns the seconds."""
    s = z3.Solver()
    s.set("timeout", timeout_s * 1000)
    s.add(z3.Not(claim))
    t = time.perf_counter()
    r = s.check()
    took = time.perf_counter() - t
    assert r == z3.unsat, (f"{r} after {took:.1f} s ({s.reason_unknown()})" if r != z3.sat
                           else f"counterexample: {s.model()}")
    return took


@pytest.mark.parametrize("op", [FPOp.Add, FPOp.Sub], ids=lambda o: o.name)
def test_z3_proves_add_sub_for_all_inputs(op):
    """DSL add/sub == z3's IEEE fp.add / fp.sub in bf16 on flushed inputs, with subnormal
    results flushed. For two normals the exact sum is a multiple of 2^-133, so a sum below
    2^-126 is an exact subnormal: flushing the IEEE result is the policy exactly (z3 does
    not add in formats with more exponent than significand bits, so WIDE is not used)."""
    res, _, a, b = _dsl(op)
    fop = z3.fpAdd if op == FPOp.Add else z3.fpSub
    took = _prove(res == _bits(fop(RNE, _daz(a), _daz(b))), timeout_s=120)
    print(f"\nz3 proof {op.name}: {took:.1f} s")


def test_z3_proves_mul_for_all_inputs():
    """DSL mul == z3's fp.mul rounded once to 8 bits in a wider exponent range, then
    flushed below 2^-126 / overflowed at 2^128 (tininess after rounding)."""
    res, _, a, b = _dsl(FPOp.Mul)
    wa, wb = (z3.fpFPToFP(RNE, _daz(x), WIDE) for x in (a, b))
    took = _prove(res == _round_wide(z3.fpMul(RNE, wa, wb)), timeout_s=300)
    print(f"\nz3 proof Mul: {took:.1f} s")


def test_z3_proves_comparisons_for_all_inputs():
    """lt / le / eq == fp.lt / fp.leq / fp.eq; maximum / minimum as IEEE 754-2019 §9.6."""
    total = 0.0
    for op, fp in ((FPOp.Lt, z3.fpLT), (FPOp.Le, z3.fpLEQ), (FPOp.Eq, z3.fpEQ)):
        res, p, a, b = _dsl(op)
        want = fp(_daz(a), _daz(b))
        total += _prove(z3.And(p == want, res == z3.If(want, _bv(1), _bv(0))), 60)
    for op in (FPOp.Max, FPOp.Min):
        res, p, a, b = _dsl(op)
        x, y = _daz(a), _daz(b)
        first, second = (y, x) if op == FPOp.Max else (x, y)     # when x < y
        zero = _bv(0) if op == FPOp.Max else _bv(SIGN)
        other = _bv(SIGN) if op == FPOp.Max else _bv(0)
        want = z3.If(z3.Or(z3.fpIsNaN(x), z3.fpIsNaN(y)), _bv(QNAN),
                     z3.If(z3.fpLT(x, y), _bits(first),
                           z3.If(z3.fpLT(y, x), _bits(second),
                                 z3.If(z3.fpIsZero(x),          # +-0 and +-0
                                       z3.If(z3.And(z3.fpIsNegative(x),
                                                    z3.fpIsNegative(y)) if op == FPOp.Max
                                             else z3.And(z3.fpIsPositive(x),
                                                         z3.fpIsPositive(y)),
                                             other, zero),
                                       _bits(x)))))
        total += _prove(z3.And(res == want, p == z3.fpIsNaN(z3.fpBVToFP(want, BF))), 60)
    print(f"\nz3 proofs Lt/Le/Eq/Max/Min: {total:.1f} s")


@pytest.mark.parametrize("signed", [0, 1])
def test_z3_proves_conversions_for_all_inputs(signed):
    """int16 / uint16 -> bf16 == fp.to_fp (RNE); bf16 -> int16 / uint16 == fp.to_sbv /
    fp.to_ubv (RTZ) in range, saturated outside, 0 for NaN."""
    res, _, a, _ = _dsl(FPOp.I2F, signed)
    conv = z3.fpSignedToFP if signed else z3.fpUnsignedToFP
    took = _prove(res == z3.fpToIEEEBV(conv(RNE, a, BF)), 60)
    res, p, a, _ = _dsl(FPOp.F2I, signed)
    x = _daz(a)
    t = z3.fpRoundToIntegral(z3.RTZ(), x)
    lo, hi = (-32768, 32767) if signed else (0, 65535)
    below = z3.fpLT(t, z3.FPVal(float(lo), BF))          # -32768 and 0 are exact in bf16
    above = z3.fpGEQ(t, z3.FPVal(float(hi + 1), BF))     # so are 2^15 and 2^16
    inrange = (z3.fpToSBV if signed else z3.fpToUBV)(z3.RTZ(), t, z3.BitVecSort(16))
    want = z3.If(z3.fpIsNaN(x), _bv(0), z3.If(below, _bv(lo & 0xFFFF),
                                            z3.If(above, _bv(hi), inrange)))
    took += _prove(z3.And(res == want, p == z3.Or(z3.fpIsNaN(x), below, above)), 60)
    print(f"\nz3 proofs I2F/F2I signed={signed}: {took:.1f} s")


# ============================================================== other references
@pytest.mark.filterwarnings("ignore:local_context:DeprecationWarning")
def test_reference_matches_hwtypes_fpvector_and_float32(sweep):
    """The exact reference against two independent float implementations where no
    subnormal is involved: hwtypes ``FPVector[8, 7, RNE, True]`` (MPFR), and float32
    arithmetic rounded to bf16 (double rounding is innocuous: 24 >= 2 * 8 + 2)."""
    vecs, ref, *_ = sweep
    FP = ht.FPVector[8, 7, ht.RoundingMode.RNE, True]
    checked = 0
    for (op, _s, a, b, _), (r, _p) in zip(vecs, ref, strict=True):
        if op not in ARITH or is_nan(r) or any((x >> 7) & 0xFF == 0 for x in (a, b, r)):
            continue
        if (r >> 7) & 0xFF == 1:      # results at the bottom binade: the policies may differ
            continue
        fa, fb = (FP.reinterpret_from_bv(ht.BitVector[16](x)) for x in (a, b))
        hw = {FPOp.Add: fa + fb, FPOp.Sub: fa - fb, FPOp.Mul: fa * fb}[op]
        assert int(hw.reinterpret_as_bv()) == r, (op, hex(a), hex(b), hex(r))
        x32, y32 = np.float32(bf16_value(a)), np.float32(bf16_value(b))
        with np.errstate(over="ignore", invalid="ignore"):
            f32 = {FPOp.Add: x32 + y32, FPOp.Sub: x32 - y32, FPOp.Mul: x32 * y32}[op]
        assert bf16_bits(float(f32)) == r, (op, hex(a), hex(b), hex(r))
        checked += 1
    print(f"\nhwtypes FPVector and float32 agree with the reference on {checked} vectors")
    assert checked > 4000, checked


def test_halide_bfloat16_differs_only_on_subnormals(sweep):
    """Halide's CPU bfloat16 (float32 inside, IEEE with subnormals) against the DSL on
    the add / sub / mul / int16 -> bf16 vectors: bit-equal except where an input is
    subnormal or the exact result is below 2^-126 (Halide: a subnormal or +-2^-126, the
    DSL: +-0); NaN compared as NaN (Halide keeps payloads)."""
    import halide as hl
    vecs, _ref, py, *_ = sweep
    idx = [i for i, v in enumerate(vecs) if v[0] in ARITH or (v[0] == FPOp.I2F and v[1])]
    A = hl.ImageParam(hl.UInt(16), 1, "A")
    B = hl.ImageParam(hl.UInt(16), 1, "B")
    x = hl.Var("x")
    fa, fb = (hl.reinterpret(hl.BFloat(16), p[x]) for p in (A, B))
    out = hl.Func("bf16_ops")
    out[x] = hl.Tuple([hl.reinterpret(hl.UInt(16), e) for e in
                       (fa + fb, fa - fb, fa * fb,
                        hl.cast(hl.BFloat(16), hl.reinterpret(hl.Int(16), A[x])))])
    a_in = np.array([vecs[i][2] for i in idx], dtype=np.uint16)   # kept alive: the
    b_in = np.array([vecs[i][3] for i in idx], dtype=np.uint16)   # buffers alias them
    A.set(hl.Buffer(a_in))
    B.set(hl.Buffer(b_in))
    cols = [np.array(c, copy=True) for c in out.realize([len(idx)])]
    which = {FPOp.Add: 0, FPOp.Sub: 1, FPOp.Mul: 2, FPOp.I2F: 3}
    equal = subnormal = 0
    for k, i in enumerate(idx):
        op, _s, a, b, _ = vecs[i]
        h, d = int(cols[which[op]][k]), py[i][0]
        if h == d or (is_nan(h) and is_nan(d)):
            equal += 1
            continue
        # allowed: a subnormal input, a subnormal Halide result, or the IEEE result
        # rounded up to +-2^-126 from a tiny exact value (DSL: +-0, tininess after rounding)
        sub_in = any((v >> 7) & 0xFF == 0 and v & 0x7FFF for v in (a, b, h))
        up_to_min = h & 0x7FFF == MIN_NORMAL and d & 0x7FFF == 0
        assert op != FPOp.I2F and (sub_in or up_to_min), \
            f"{op.name}({a:#06x}, {b:#06x}): Halide {h:#06x}, DSL {d:#06x}"
        subnormal += 1
    print(f"\nHalide bf16: {equal} of {len(idx)} bit-equal, {subnormal} differ (subnormal)")
    assert equal > 0.9 * len(idx) and subnormal > 0, (equal, subnormal, len(idx))


# ============================================================== API
def test_helpers_and_sub_pe_interface():
    assert bf16_bits(1.0) == 0x3F80 and bf16_bits(-2.0) == 0xC000
    assert bf16_bits(1.0 + 2.0 ** -8) == 0x3F80               # float -> bf16 ties to even
    assert bf16_bits(float("nan")) == QNAN and bf16_bits(1e300) == INF
    assert bf16_value(0x3FC0) == 1.5 and bf16_value(0xFF80) == float("-inf")
    with pytest.raises(ConfigError, match="not a 16-bit value"):
        bf16_value(0x10000)
    nf = normal_form(BF16Add)
    assert [(n, T.size) for n, T in nf.inputs] == [("a", 16), ("b", 16)]
    assert nf.state == [] and nf.outputs == [("res", ht.BitVector[16])]
    assert int(BF16Add()(1, F(1.0), F(0.25))) == F(0.75)      # sub = 1
    alu = normal_form(BF16ALU)
    assert sorted(alu.subs) == ["add", "cmp", "f2i", "i2f", "mul"]
    assert ASM.width == 5


# ============================================================== conversions in the FP PE
# The int16 <-> bf16 opcodes of the FP PE (peak/examples/cgra_pe_bf16.py: I2F, F2I), read
# through the PE's input modes and condition code (cond C: res_p = C = NaN or saturated for
# F2I, 0 for I2F). Python model, SMT formula (z3 on constants) and RTL (Verilator, ONE
# build of the whole PE) against the exact reference above.
PE_ASM = assembler(fp_pe.Inst)


def pe_inst(alu: fp_pe.ALU, signed: int, const: int | None = None) -> fp_pe.Inst:
    """An FP PE instruction: ``alu`` on data0 (BYPASS, or CONST ``const``), cond C."""
    mode = Mode.BYPASS if const is None else Mode.CONST
    return fp_pe.Inst(alu, ht.Bit(signed), Cond.C, LUTTable(0), mode, const or 0,
                      Mode.BYPASS, 0, Mode.BYPASS, ht.Bit(0), Mode.BYPASS, ht.Bit(0),
                      Mode.BYPASS, ht.Bit(0))


PE_CONV = {FPOp.I2F: fp_pe.ALU.I2F, FPOp.F2I: fp_pe.ALU.F2I}


def make_pe_conv_vectors(seed: int = 1616) -> list[tuple[FPOp, int, int, bool, int, int]]:
    """(op, signed, a, const_mode, data0, data1) per vector: N_RANDOM random vectors per
    conversion (a fifth of them with ``a`` as the data0 constant and junk on the data0
    port), then the corners (INT_CORNERS and their negations / CORNERS + F2I_CORNERS),
    each signed and unsigned."""
    rng = random.Random(seed)
    vecs = []
    for op, gen in ((FPOp.I2F, gen_i2f), (FPOp.F2I, gen_f2i)):
        for _ in range(N_RANDOM):
            a, s = gen(rng)
            const = rng.random() < 0.2
            vecs.append((op, s, a, const, rng.getrandbits(16) if const else a,
                         rng.getrandbits(16)))
    corners = {FPOp.I2F: INT_CORNERS + [(-x) & 0xFFFF for x in INT_CORNERS],
               FPOp.F2I: CORNERS + F2I_CORNERS}
    for op, xs in corners.items():
        vecs += [(op, s, a, False, a, 0) for a in xs for s in (0, 1)]
    return vecs


def pe_conv_reference(op: FPOp, signed: int, a: int, st: Counter) -> tuple[int, int]:
    if op == FPOp.I2F:
        return ref_i2f(a, signed, st), 0
    return ref_f2i(a, signed, st)


@pytest.fixture(scope="module")
def pe_conv_sweep(rtl_dir):
    """The PE conversion vectors through the reference, the PE's Python model, its SMT
    formula and its RTL."""
    vecs = make_pe_conv_vectors()
    stats: dict[FPOp, Counter] = {FPOp.I2F: Counter(), FPOp.F2I: Counter()}
    ref = [pe_conv_reference(op, s, a, stats[op]) for op, s, a, *_ in vecs]
    insts = [pe_inst(PE_CONV[op], s, a if const else None) for op, s, a, const, *_ in vecs]
    pe = fp_pe.PE()
    b0 = ht.Bit(0)
    py = [tuple(map(int, pe(i, d0, d1, b0, b0, b0)))
          for i, (*_, d0, d1) in zip(insts, vecs, strict=True)]
    z = symbolic(fp_pe.PE).z3()
    outs = [z3.If(z["out.res_p"], z3.BitVecVal(1, 1), z3.BitVecVal(0, 1)), z["out.res"]]
    zero_state = [(z[k], z3.BoolVal(False) if z3.is_bool(z[k]) else z3.BitVecVal(0, 16))
                  for k in z if k.startswith("state.")]
    smt = []
    for i, (*_, d0, d1) in zip(insts, vecs, strict=True):
        sub = [(z["inst"], z3.BitVecVal(PE_ASM.encode(i), PE_ASM.width)),
               (z["data0"], z3.BitVecVal(d0, 16)), (z["data1"], z3.BitVecVal(d1, 16)),
               *[(z[b], z3.BoolVal(False)) for b in ("bit0", "bit1", "bit2")], *zero_state]
        p, r = (z3.simplify(z3.substitute(e, *sub)).as_long() for e in outs)
        smt.append((r, p))
    rtl = run_rtl(fp_pe.PE, [(PE_ASM.encode(i), (d0, d1, 0, 0, 0))
                             for i, (*_, d0, d1) in zip(insts, vecs, strict=True)],
                  str(rtl_dir / "cgra_pe_bf16_conv"))
    return vecs, ref, py, smt, rtl, stats


@pytest.mark.parametrize("op", [FPOp.I2F, FPOp.F2I], ids=lambda o: o.name)
def test_fp_pe_conversions_python_smt_rtl_equal_the_reference(pe_conv_sweep, op):
    vecs, ref, py, smt, rtl, stats = pe_conv_sweep
    idx = [i for i, v in enumerate(vecs) if v[0] == op]
    assert len(idx) >= N_RANDOM + 2 * 34
    assert sum(vecs[i][3] for i in idx) > N_RANDOM // 10          # constant-mode operands
    for name, got in (("Python model", py), ("SMT formula", smt), ("RTL", rtl)):
        bad = [i for i in idx if got[i] != ref[i]]
        assert not bad, (f"FP PE {name}: {len(bad)} mismatches, first: {vecs[bad[0]]}: "
                         f"reference {ref[bad[0]]}, got {got[bad[0]]}")
    hard = ("tie_even", "tie_up", "inexact") if op == FPOp.I2F else \
        ("nan", "saturated_pos", "saturated_neg", "negative_fraction")
    for what in hard:
        assert stats[op][what] > 0, (what, stats[op])


PE_KNOWN = [   # (op, signed, a, res, res_p = cond C)
    (FPOp.I2F, 1, 0, 0x0000, 0),
    (FPOp.I2F, 1, 1, 0x3F80, 0),
    (FPOp.I2F, 1, 0xFFFF, 0xBF80, 0),                 # -1
    (FPOp.I2F, 1, 0x7FFF, 0x4700, 0),                 # 32767 rounds up to 32768
    (FPOp.I2F, 1, 0x8001, 0xC700, 0),                 # -32767 -> -32768
    (FPOp.I2F, 1, 0x8000, 0xC700, 0),                 # -32768, exact
    (FPOp.I2F, 1, 257, 0x4380, 0),                    # tie between 256 and 258: 256
    (FPOp.I2F, 1, (-257) & 0xFFFF, 0xC380, 0),
    (FPOp.I2F, 1, 259, 0x4382, 0),                    # tie between 258 and 260: 260
    (FPOp.I2F, 1, 0x7FC0, 0x4700, 0),                 # 32704: tie, up to 32768
    (FPOp.I2F, 1, 0x7FBF, 0x46FF, 0),                 # 32703: down to 32640
    (FPOp.I2F, 0, 0xFFFF, 0x4780, 0),                 # 65535 unsigned -> 65536
    (FPOp.F2I, 1, 0x3F00, 0, 0),                      # 0.5 -> 0
    (FPOp.F2I, 1, 0xBF00, 0, 0),                      # -0.5 -> 0
    (FPOp.F2I, 1, 0x3FC0, 1, 0),                      # 1.5 -> 1 (toward zero)
    (FPOp.F2I, 1, 0xBFC0, 0xFFFF, 0),                 # -1.5 -> -1
    (FPOp.F2I, 1, 0xBF80, 0xFFFF, 0),                 # -1
    (FPOp.F2I, 1, 0x8000, 0, 0),                      # -0
    (FPOp.F2I, 1, 0x0001, 0, 0),                      # a subnormal reads as 0
    (FPOp.F2I, 1, 0x46FF, 32640, 0),                  # largest bf16 below 2^15
    (FPOp.F2I, 1, 0x4700, 0x7FFF, 1),                 # 32768 saturates to 32767
    (FPOp.F2I, 1, 0xC700, 0x8000, 0),                 # -32768 fits
    (FPOp.F2I, 1, 0xC701, 0x8000, 1),                 # -33024 saturates
    (FPOp.F2I, 1, 0x4974, 0x7FFF, 1),                 # 999424 (1e6 in bf16)
    (FPOp.F2I, 1, 0xC974, 0x8000, 1),
    (FPOp.F2I, 1, MAX_FINITE, 0x7FFF, 1),
    (FPOp.F2I, 1, INF, 0x7FFF, 1),
    (FPOp.F2I, 1, SIGN | INF, 0x8000, 1),
    (FPOp.F2I, 1, QNAN, 0, 1),                        # NaN -> 0, flagged
    (FPOp.F2I, 1, 0xFFC1, 0, 1),
    (FPOp.F2I, 0, 0x477F, 65280, 0),                  # unsigned: 65280 fits
    (FPOp.F2I, 0, 0x4780, 0xFFFF, 1),                 # 65536 saturates to 65535
    (FPOp.F2I, 0, 0xBFC0, 0, 1),                      # -1.5 -> -1: below 0, saturates
    (FPOp.F2I, 0, 0xBF00, 0, 0),                      # -0.5 -> 0 is in range
]


@pytest.mark.parametrize("op,signed,a,res,res_p", PE_KNOWN,
                         ids=[f"{k[0].name}-{i}" for i, k in enumerate(PE_KNOWN)])
def test_fp_pe_conversion_known_answers(op, signed, a, res, res_p):
    """The PE's Python model on the known answers, with ``a`` on data0 and as the data0
    constant (junk on the port); the exact reference agrees."""
    b0 = ht.Bit(0)
    for inst, d0 in ((pe_inst(PE_CONV[op], signed), a),
                     (pe_inst(PE_CONV[op], signed, a), a ^ 0x5A5A)):
        got = tuple(map(int, fp_pe.PE()(inst, d0, 0x1234, b0, b0, b0)))
        assert got == (res, res_p), f"{op.name} signed={signed} {a:#06x}: {got}"
    assert pe_conv_reference(op, signed, a, Counter()) == (res, res_p)


@pytest.mark.parametrize("signed", [0, 1])
def test_z3_proves_fp_pe_conversions_equal_the_alu_for_all_inputs(signed):
    """For every data0 (2^16 values), the FP PE's I2F / F2I (BYPASS, cond C) give the
    bf16 ALU's res and res_p, which test_z3_proves_conversions_for_all_inputs proves
    against z3's floating-point theory: the PE's muxes add nothing to the conversions."""
    z = symbolic(fp_pe.PE).z3()
    x = z3.BitVec("x", 16)
    claims = []
    for op in (FPOp.I2F, FPOp.F2I):
        code = z3.BitVecVal(PE_ASM.encode(pe_inst(PE_CONV[op], signed)), PE_ASM.width)
        res, p = (z3.substitute(z[k], (z["inst"], code), (z["data0"], x))
                  for k in ("out.res", "out.res_p"))
        ares, ap, a, _ = _dsl(op, signed)
        ares, ap = (z3.substitute(e, (a, x)) for e in (ares, ap))
        claims += [res == ares, p == (ap if op == FPOp.F2I else z3.BoolVal(False))]
    took = _prove(z3.And(*claims), 60)
    print(f"\nz3 proof FP PE == ALU conversions signed={signed}: {took:.1f} s")


def test_f2i_agrees_with_halide_saturating_cast(pe_conv_sweep):
    """Halide v21 (CPU): ``cast<int16_t>`` of a bf16 truncates toward zero; out of range it
    is not specified (Halide's documentation states no result; LLVM's ``fptosi`` gives
    poison; on x86 it wraps through int32, 32768 -> -32768) and ``saturating_cast`` clamps.
    The PE's F2I (signed) equals ``cast`` wherever the truncated value fits in int16 and
    ``saturating_cast`` on every non-NaN input; NaN gives 0 (documented choice of
    :class:`peak.bf16.BF16ToInt16`; Halide's saturating_cast gives -32768 there)."""
    import halide as hl
    vecs, _ref, py, *_ = pe_conv_sweep
    idx = [i for i, v in enumerate(vecs) if v[0] == FPOp.F2I and v[1]]
    A = hl.ImageParam(hl.UInt(16), 1, "A")
    x = hl.Var("x")
    fa = hl.reinterpret(hl.BFloat(16), A[x])
    out = hl.Func("bf16_to_int16")
    out[x] = hl.Tuple([hl.reinterpret(hl.UInt(16), e) for e in
                       (hl.cast(hl.Int(16), fa), hl.saturating_cast(hl.Int(16), fa))])
    a_in = np.array([vecs[i][2] for i in idx], dtype=np.uint16)   # kept alive: the buffer
    A.set(hl.Buffer(a_in))                                        # aliases it
    cast, sat = (np.array(c, copy=True) for c in out.realize([len(idx)]))
    in_range = nan = 0
    for k, i in enumerate(idx):
        a, (res, invalid) = vecs[i][2], py[i]
        if is_nan(a):
            assert (res, invalid) == (0, 1)
            nan += 1
            continue
        assert res == int(sat[k]), f"{a:#06x}: PE {res:#06x}, saturating_cast {sat[k]:#06x}"
        if not invalid:
            assert res == int(cast[k]), f"{a:#06x}: PE {res:#06x}, cast {cast[k]:#06x}"
            in_range += 1
    print(f"\nHalide bf16 -> int16: {in_range} in range equal to cast, {len(idx)} equal to "
          f"saturating_cast except {nan} NaN")
    assert in_range > 500 and nan > 0 and len(idx) - in_range - nan > 100
