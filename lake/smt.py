"""SMT model of the Lake controllers (z3).

A controller (iteration domain + schedule/address generators in recurrence form, see
:mod:`lake.affine` and :mod:`lake.rtl`) is a transition system over bit-vectors:

* config: ranges ``r_k = e_k - 1`` (``extent_width`` bits), per generator an offset and
  per-level deltas (``value_width`` bits, arithmetic modulo ``2**value_width``);
* state: counters ``cnt_k``, running values (schedule and addresses), ``done``;
* init: counters 0, running values = offsets;
* transition (one firing): the lowest level ``k`` with ``cnt_k != r_k`` increments, the
  levels below clear, every running value adds its level-``k`` delta; if no such level
  exists the controller is done.

:func:`prove_recurrence_equals_affine` proves, for symbolic extents and strides, that
every reachable state satisfies ``value == offset + sum_k stride_k * cnt_k`` when the
deltas are ``delta_k = s_k - sum_{j<k} r_j s_j`` (induction: the invariant holds
initially and is preserved by every transition). :func:`synthesize` solves for config
values that make a port produce a required (cycle, address) sequence, or proves that none
exists for a given dimensionality. Every query carries a z3 ``timeout``.
Source: the recurrence form follows the unified-buffer paper (Liu et al., ACM TACO 2023,
Sec. 5.2, "address generator strength reduction").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import z3

from cgra.errors import ConfigError
from lake.affine import strides_from_deltas, to_signed
from lake.program import PortProgram, program
import time


@dataclass
class ControllerTS:
    """Symbolic controller: ``dims`` levels, ``n_values`` running values (value 0 is the
    schedule, the others addresses), widths in bits."""

    dims: int
    n_values: int = 2
    extent_width: int = 8
    value_width: int = 16
    prefix: str = "c"
    ranges: list = field(init=False)
    offsets: list = field(init=False)
    deltas: list = field(init=False)

    def __post_init__(self) -> None:
        ew, vw, p = self.extent_width, self.value_width, self.prefix
        self.ranges = [z3.BitVec(f"{p}_r{k}", ew) for k in range(self.dims)]
        self.offsets = [z3.BitVec(f"{p}_off{v}", vw) for v in range(self.n_values)]
        self.deltas = [[z3.BitVec(f"{p}_d{v}_{k}", vw) for k in range(self.dims)]
                       for v in range(self.n_values)]

    def init(self) -> tuple[list, list]:
        """(counters, values) after reset."""
        return ([z3.BitVecVal(0, self.extent_width) for _ in range(self.dims)],
                list(self.offsets))

    def at_max(self, cnt) -> list:
        return [cnt[k] == self.ranges[k] for k in range(self.dims)]

    def step(self, cnt, vals) -> tuple[list, list, z3.BoolRef]:
        """One firing: (next counters, next values, done) — done means no level could
        increment (the counters/values then stay)."""
        am = self.at_max(cnt)
        inc = []
        below = z3.BoolVal(True)
        for k in range(self.dims):
            inc.append(z3.And(below, z3.Not(am[k])))
            below = z3.And(below, am[k])
        done = below
        nxt = []
        for k in range(self.dims):
            clear = z3.Or([inc[j] for j in range(k + 1, self.dims)] or [z3.BoolVal(False)])
            nxt.append(z3.If(inc[k], cnt[k] + 1, z3.If(clear, z3.BitVecVal(0, self.extent_width),
                                                      cnt[k])))
        nvals = []
        for v in range(self.n_values):
            d = z3.BitVecVal(0, self.value_width)
            for k in reversed(range(self.dims)):
                d = z3.If(inc[k], self.deltas[v][k], d)
            nvals.append(vals[v] + d)
        return nxt, nvals, done


@dataclass
class ProofResult:
    """``proved`` True if the property holds for every config; else a counterexample
    (variable name -> int) or ``status`` "unknown" on timeout."""

    proved: bool
    status: str
    counterexample: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def _ext(x, w):
    return z3.ZeroExt(w - x.size(), x) if x.size() < w else x


def prove_recurrence_equals_affine(dims: int = 6, extent_width: int = 16,
                                   value_width: int = 24, sort: str = "int",
                                   timeout_ms: int = 60_000,
                                   deltas_override: Sequence[int] | None = None
                                   ) -> ProofResult:
    """Inductive proof that the recurrence form equals the multiplier (affine) form.

    Symbolic: ranges ``r_k`` (0 <= r_k < 2**extent_width, i.e. extents 1..2**extent_width),
    strides ``s_k`` and offset (|s_k| < 2**value_width). Invariant
    ``I: 0 <= cnt_k <= r_k  and  val == off + sum_k s_k cnt_k``. Checked:
    (1) I holds after reset; (2) for every level L, a transition in which level L
    increments maps a state satisfying I to one satisfying I (one query per level — the
    case split keeps every query a polynomial identity z3 settles at once).

    ``sort="int"`` proves it over the integers, which implies it modulo ``2**w`` for
    every register width ``w`` (reduction mod 2**w is a ring homomorphism);
    ``sort="bv"`` runs the same queries on ``value_width``-bit bit-vectors exactly as the
    hardware computes (practical for small widths). ``deltas_override`` replaces the delta
    formula by constants, to show that a wrong encoding yields a counterexample.
    """

    t0 = time.perf_counter()
    if sort == "int":
        mk = z3.Int
        ranges = [mk(f"r{k}") for k in range(dims)]
        strides = [mk(f"s{k}") for k in range(dims)]
        off, val = mk("off"), mk("val")
        cnt = [mk(f"cnt{k}") for k in range(dims)]
        zero, one = z3.IntVal(0), z3.IntVal(1)
        def lift(x):
            return x

        def le(a, b):
            return a <= b

        bounds = [z3.And(r >= 0, r < 2 ** extent_width) for r in ranges] + [
            z3.And(sv > -(2 ** value_width), sv < 2 ** value_width) for sv in strides]
        const = z3.IntVal
    elif sort == "bv":
        ranges = [z3.BitVec(f"r{k}", extent_width) for k in range(dims)]
        strides = [z3.BitVec(f"s{k}", value_width) for k in range(dims)]
        off, val = z3.BitVec("off", value_width), z3.BitVec("val", value_width)
        cnt = [z3.BitVec(f"cnt{k}", extent_width) for k in range(dims)]
        zero, one = z3.BitVecVal(0, extent_width), z3.BitVecVal(1, extent_width)
        def lift(x):
            return _ext(x, value_width)

        def const(v):
            return z3.BitVecVal(v, value_width)

        le = z3.ULE
        bounds = []
    else:
        raise ConfigError(f"prove_recurrence_equals_affine: unknown sort '{sort}' (int, bv)")

    def affine(c):
        acc = off
        for k in range(dims):
            acc = acc + lift(c[k]) * strides[k]
        return acc

    deltas = []
    for k in range(dims):
        if deltas_override is not None:
            deltas.append(const(deltas_override[k]))
        else:
            wrap = const(0)
            for j in range(k):
                wrap = wrap + lift(ranges[j]) * strides[j]
            deltas.append(strides[k] - wrap)
    at_max = [cnt[k] == ranges[k] for k in range(dims)]
    inc = []
    below = z3.BoolVal(True)
    for k in range(dims):
        inc.append(z3.And(below, z3.Not(at_max[k])))
        below = z3.And(below, at_max[k])
    nxt = []
    for k in range(dims):
        clear = z3.Or([inc[j] for j in range(k + 1, dims)] or [z3.BoolVal(False)])
        nxt.append(z3.If(inc[k], cnt[k] + one, z3.If(clear, zero, cnt[k])))
    d = const(0)
    for k in reversed(range(dims)):
        d = z3.If(inc[k], deltas[k], d)

    def inv(c, v):
        return z3.And([le(zero, c[k]) for k in range(dims)]
                      + [le(c[k], ranges[k]) for k in range(dims)] + [v == affine(c)])

    queries = [("init", z3.And(bounds + [z3.Not(inv([zero] * dims, off))]))]
    for lvl in range(dims):
        queries.append((f"level {lvl}", z3.And(bounds + [inv(cnt, val), inc[lvl],
                                                          z3.Not(inv(nxt, val + d))])))
    for name, q in queries:
        s = z3.Solver()
        s.set("timeout", timeout_ms)
        s.add(q)
        res = s.check()
        if res == z3.unknown:
            return ProofResult(False, f"unknown ({name})", {}, time.perf_counter() - t0)
        if res == z3.sat:
            mdl = s.model()
            cex = {}
            for dcl in mdl.decls():
                v = mdl[dcl]
                if z3.is_int_value(v) or z3.is_bv_value(v):
                    cex[str(dcl)] = v.as_long()
            return ProofResult(False, f"sat ({name})", cex, time.perf_counter() - t0)
    return ProofResult(True, "unsat", {}, time.perf_counter() - t0)


@dataclass
class SynthesisResult:
    """``program`` is a port program producing the sequence, or None when none exists
    for the dimensionality (``status`` "unsat") or the solver timed out ("unknown")."""

    status: str
    program: PortProgram | None


def synthesize(sequence: Sequence[tuple[int, int]], dimensionality: int,
               extent_width: int = 8, value_width: int = 16, timeout_ms: int = 30_000
               ) -> SynthesisResult:
    """Solve for extents, schedule and address strides/offsets of a ``dimensionality``-level
    controller whose firings are exactly ``sequence`` = [(cycle, address), ...] (in order)
    by unrolling the transition system ``len(sequence)`` steps: step ``i`` has schedule
    value = cycle_i and address = address_i, the controller is not done before the last
    step and done after it, and every level that can increment has schedule delta >= 1.
    Returns the program (strides from deltas) or "unsat" (proof that none exists).
    Raises :class:`ConfigError` for an empty or non-increasing sequence.
    """
    if not sequence:
        raise ConfigError("synthesize: the required (cycle, address) sequence is empty")
    cycles = [c for c, _ in sequence]
    if any(b <= a for a, b in zip(cycles, cycles[1:], strict=False)) or cycles[0] < 0:
        raise ConfigError("synthesize: cycles must be non-negative and strictly increasing "
                          f"(got {cycles[:8]}...)")
    vw = value_width
    ts = ControllerTS(dimensionality, 2, extent_width, vw, prefix="q")
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    cnt, vals = ts.init()
    n = len(sequence)
    for i, (c, a) in enumerate(sequence):
        s.add(vals[0] == z3.BitVecVal(c, vw), vals[1] == z3.BitVecVal(a % (1 << vw), vw))
        cnt, vals, done = ts.step(cnt, vals)
        s.add(done if i == n - 1 else z3.Not(done))
    for k in range(dimensionality):
        d = ts.deltas[0][k]
        s.add(z3.Implies(ts.ranges[k] != 0, d > 0))  # signed: strictly increasing schedule
    res = s.check()
    if res == z3.unsat:
        return SynthesisResult("unsat", None)
    if res == z3.unknown:
        return SynthesisResult("unknown", None)
    mdl = s.model()

    def val(x):
        v = mdl.eval(x, model_completion=True)
        return v.as_long()

    ext = [val(r) + 1 for r in ts.ranges]
    sdel = [to_signed(val(d), vw) for d in ts.deltas[0]]
    adel = [to_signed(val(d), vw) for d in ts.deltas[1]]
    prog = program(ext, strides_from_deltas(ext, adel), to_signed(val(ts.offsets[1]), vw),
                   strides_from_deltas(ext, sdel), val(ts.offsets[0]))
    return SynthesisResult("sat", prog)
