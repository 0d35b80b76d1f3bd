"""Memory partitioning for bandwidth: cyclic banking of an SRAM read and written by unrolled
lanes, with z3 proofs of conflict-freedom (SARA §III-B2, Fig. 8; §III-C d, xbar-elm).

SARA (Zhang et al., "SARA: Scaling a Reconfigurable Dataflow Accelerator", ISCA 2021)
scales the on-chip bandwidth of a logical memory with the parallelisation of the loops that
access it: when loop C of Fig. 8 is unrolled 2x, the request unit of read R (VCU_D') and its
receiver (VCU_D) are duplicated per *lane*, the memory VMU_m is split into two partitions
(*banks*), each request lane emits a bank-address (BA) stream and a bank-offset (BO) stream,
a *merging unit per partition* filters the requests of all lanes to that partition, the BA
stream is forwarded to the receiver to filter the responses, and at high parallelism the
merging units form a *hierarchy* (Fig. 8c, 4x). The lanes x partitions crossbar costs
quadratic resources in the worst case; when the BA of every lane is statically known it
reduces to partial crossbars or point-to-point links (xbar-elm, §III-C d).

Model (this module, on :mod:`mapper.dataflow.program`):

* An *access* is a site of the SRAM: a :class:`Load` in a block or in a loop bound /
  condition, or a :class:`Store`. Its *enclosing loops* are the :class:`Loop` ancestors of
  its block (of the controller, for a bound load), outermost first.
* *Lanes*: lane ``l`` of a loop with ``par = P``, ``start = s``, ``step = t`` takes the index
  values ``i = s + (P*k + l)*t`` for ``k = 0, 1, ...``. An access's lanes are the tuples of
  lanes of its enclosing ``par > 1`` loops. A loop whose index the address does not depend
  on is a *broadcast* loop of a read (its lanes read the same word: one request stream,
  the response is broadcast); a write that does not depend on a parallel loop is refused
  (its lanes race on one word). The remaining *request lanes* issue distinct requests.
* The address must be affine in the loop indices (``+``, ``-``, ``*`` and ``<<`` by a
  constant; block temporaries are substituted by their definition); the linearised address
  is row-major: ``a = sum_d index[d] * prod(shape[d+1:])``. Loop ``start`` may be any
  expression (treated as an unknown integer: the proofs hold for every value), ``step``
  of a loop the address uses must be a constant. An access outside every parallel loop
  may be data dependent or use a variable step (one lane, which may reach any bank).
  Loop bounds are ignored (``k`` ranges over all naturals): sound, possibly conservative.
* *Cyclic banking* with ``B`` banks: ``bank(a) = a mod B``, ``offset(a) = a div B`` (a bank
  holds ``ceil(size / B)`` words). ``B`` is the smallest power of two >= the largest
  number of request lanes of one access such that every access is conflict-free: for all
  iterations ``k`` (and starts), two different request lanes of the same access in the
  same iteration map to different banks. Each candidate is *proved* with z3 (the negation
  is unsatisfiable; every query has a 2000 ms timeout and an ``unknown`` counts as not
  proven); ``B`` doubles up to ``max_banks``. Different accesses are ordered by the
  memory's tokens (CMMC) and use separate request streams, so only lanes of one access
  must not collide.
* *xbar-elm*: a lane's bank is *static* when ``a mod B`` is the same for every iteration
  (proved with z3). The lanes x banks crossbar of an access then shrinks to the sum over
  lanes of the banks each lane can reach: ``B / gcd(B, coefficients of the free
  variables)`` banks (a partial crossbar), 1 for a static lane (a point-to-point link).
* *Merging* (our reading of Fig. 8; the figure itself is not in the text we have): each
  partition has one merging unit fed by every request lane that can reach it; a merging
  unit takes at most ``max_merge_fanin`` inputs (the input-port budget of a unit), so ``n``
  lanes need a tree of merging units, of minimum depth and, at that depth, the fewest
  units (:func:`merge_tree`). With the default fan-in 2, Fig. 8b (2x) has one 2-input
  unit per partition (2 units) and Fig. 8c (4x) a depth-2 tree per partition (2 leaves +
  1 root, 12 units for 4 partitions). Fig. 8c may share the leaf units between
  partitions; the text does not say, so the trees here are per partition. A partition
  reached by a single lane needs no merging unit (a direct link).

Errors: :class:`~cgra.errors.MappingError` when banking is impossible or not proven (a
parallel access with a non-affine address or a non-constant step, lanes of one access that
hit the same word, no conflict-free ``B <= max_banks``, bad parameters);
:class:`~cgra.errors.ProgramError` for a memory that is not an SRAM of the program.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product

import z3

from cgra.errors import MappingError, ProgramError
from mapper.dataflow.program import (
    SRAM,
    Block,
    Const,
    Expr,
    Index,
    Let,
    Load,
    Loop,
    Op,
    Program,
    Temp,
)

#: every z3 query is bounded by this many milliseconds; ``unknown`` counts as not proven
Z3_TIMEOUT_MS = 2000


# ---------------------------------------------------------------------------- affine forms
@dataclass(frozen=True)
class AffineAddress:
    """A linearised address ``const + sum(coeff * index(loop))`` (words).

    ``terms``: ``(loop label, coefficient)`` pairs, outermost loop first, zero coefficients
    left out."""

    terms: tuple[tuple[str, int], ...]
    const: int

    def describe(self) -> str:
        """E.g. ``"2*L0 + 1"``."""
        parts = [(f"{c}*{lab}" if c != 1 else lab) for lab, c in self.terms]
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts)


class _NotAffine(Exception):
    """Internal: an index expression outside the affine fragment (the reason in args[0])."""


def _affine(e: Expr, lets: dict[int, Expr]) -> tuple[dict[Loop, int], int]:
    """``e`` as ``({loop: coeff}, const)``; raises :class:`_NotAffine`."""
    if isinstance(e, Const):
        if e.dtype != "i32":
            raise _NotAffine(f"a non-integer constant {e.value!r}")
        return {}, int(e.value)
    if isinstance(e, Index):
        return {e.loop: 1}, 0
    if isinstance(e, Temp):
        if id(e) not in lets:
            raise _NotAffine(f"temporary {e.name!r} defined outside the block")
        return _affine(lets[id(e)], lets)
    if isinstance(e, Load):
        raise _NotAffine(f"it reads memory {e.mem.name!r} ({e.label})")
    if isinstance(e, Op):
        if e.op in ("add", "sub"):
            (ca, ka), (cb, kb) = (_affine(a, lets) for a in e.args)
            sign = 1 if e.op == "add" else -1
            out = dict(ca)
            for lp, c in cb.items():
                out[lp] = out.get(lp, 0) + sign * c
            return {lp: c for lp, c in out.items() if c}, ka + sign * kb
        if e.op == "neg":
            ca, ka = _affine(e.args[0], lets)
            return {lp: -c for lp, c in ca.items()}, -ka
        if e.op in ("mul", "shl"):
            (ca, ka), (cb, kb) = (_affine(a, lets) for a in e.args)
            if e.op == "shl":
                if cb:
                    raise _NotAffine("a shift by a loop index")
                cb, kb = {}, 1 << (kb & 31)
                ca, ka, cb, kb = cb, kb, ca, ka
            if ca and cb:
                raise _NotAffine("a product of two loop indices")
            if ca:
                ca, ka, cb, kb = cb, kb, ca, ka
            return {lp: ka * c for lp, c in cb.items() if ka * c}, ka * kb
        raise _NotAffine(f"operator {e.op!r}")
    raise _NotAffine(f"expression {type(e).__name__}")


# ---------------------------------------------------------------------------- records
@dataclass(frozen=True)
class MergeTree:
    """The merging units of one partition for one access (SARA Fig. 8).

    ``inputs``: request lanes that can reach the partition; ``levels``: merging units per
    level, leaves first (``()`` when ``inputs <= 1``: a direct link)."""

    partition: int
    inputs: int
    fanin: int
    levels: tuple[int, ...]

    @property
    def units(self) -> int:
        return sum(self.levels)

    @property
    def depth(self) -> int:
        return len(self.levels)


def merge_tree(partition: int, inputs: int, fanin: int) -> MergeTree:
    """The merging tree of ``inputs`` request streams with units of at most ``fanin``
    inputs: the minimum depth ``d = ceil(log_fanin(inputs))`` and, at that depth, the
    minimum number of units ``ceil((inputs - 1) / (fanin - 1))``. Each level merges just
    enough streams that the rest fits a tree of one level less (``fanin ** (d - 1)``
    streams); only the leaf level may hold a unit with fewer inputs. ``inputs = 4, fanin =
    2`` gives levels ``(2, 1)`` (Fig. 8c); ``3, 2`` gives ``(1, 1)``.
    Raises :class:`MappingError` for ``fanin < 2``."""
    if fanin < 2:
        raise MappingError(f"max_merge_fanin must be >= 2 (a merging unit merges streams), "
                           f"got {fanin}")
    depth, cap = 0, 1
    while cap < inputs:
        depth, cap = depth + 1, cap * fanin
    levels, n = [], inputs
    for d in range(depth, 0, -1):
        target = fanin ** (d - 1)
        levels.append(-(-(n - target) // (fanin - 1)))
        n = target
    return MergeTree(partition, inputs, fanin, tuple(levels))


@dataclass(frozen=True)
class LaneBanking:
    """One request lane of an access: ``lane`` gives its lane per dependent parallel loop
    (outermost first); ``static_bank`` the bank every request of the lane goes to when z3
    proved it constant (xbar-elm), else ``None``; ``banks`` the banks it can reach."""

    lane: tuple[int, ...]
    static_bank: int | None
    banks: tuple[int, ...]


@dataclass(frozen=True)
class BankProof:
    """One z3 query of conflict-freedom: access ``access`` with ``banks`` banks is
    ``"proven"`` conflict-free, has a ``"conflict"`` (``counterexample``: loop label ->
    ``(k, lane, lane')`` and ``"bank"``), or is ``"unknown"`` (timeout)."""

    access: str
    banks: int
    result: str
    counterexample: dict | None = None


@dataclass(frozen=True)
class AccessBanking:
    """How one access of a banked memory is served.

    ``kind``: ``"read"`` or ``"write"``; ``address``: the linearised affine address (``None``
    outside every parallel loop when the address is data dependent or a loop it uses has
    a non-constant step: such a lane may reach any bank); ``par_loops``: ``(loop
    label, par)`` of the parallel loops the address depends on; ``broadcast_loops``: those
    it does not depend on (reads only); ``lanes``: consumer lanes (product of all pars);
    ``request_lanes``: one :class:`LaneBanking` per distinct request stream;
    ``crossbar_before`` = request lanes x banks links; ``crossbar_after`` = links after
    xbar-elm; ``merge`` / ``merge_after``: one :class:`MergeTree` per partition before and
    after xbar-elm; ``ba_ops``: operators computing the BA of one lane (address ops + the
    mod), what dupra duplicates into each receiver."""

    label: str
    kind: str
    address: AffineAddress | None
    par_loops: tuple[tuple[str, int], ...]
    broadcast_loops: tuple[tuple[str, int], ...]
    lanes: int
    request_lanes: tuple[LaneBanking, ...]
    crossbar_before: int
    crossbar_after: int
    merge: tuple[MergeTree, ...]
    merge_after: tuple[MergeTree, ...]
    ba_ops: int

    @property
    def point_to_point(self) -> bool:
        """Every request lane has a static bank (xbar-elm leaves point-to-point links)."""
        return all(lane.static_bank is not None for lane in self.request_lanes)


@dataclass(frozen=True)
class BankingPlan:
    """The cyclic banking of one SRAM (SARA §III-B2).

    ``banks``: number of partitions B (a power of two); bank function ``a mod B``, offset
    function ``a div B`` of the linearised word address ``a`` (:attr:`bank_function`,
    :attr:`offset_function`); ``bank_depth``: words per bank; ``accesses``: one
    :class:`AccessBanking` per site; ``proofs``: every z3 conflict query made, in order."""

    memory: str
    size: int
    banks: int
    bank_depth: int
    accesses: tuple[AccessBanking, ...]
    proofs: tuple[BankProof, ...]
    max_merge_fanin: int

    @property
    def bank_function(self) -> str:
        return f"a mod {self.banks}"

    @property
    def offset_function(self) -> str:
        return f"a div {self.banks}"

    def bank(self, address: int) -> int:
        """The partition holding word ``address``."""
        return address % self.banks

    def offset(self, address: int) -> int:
        """The word of ``address`` inside its partition."""
        return address // self.banks

    def access(self, label: str) -> AccessBanking:
        for a in self.accesses:
            if a.label == label:
                return a
        raise ProgramError(f"memory {self.memory!r} has no access {label!r}; accesses: "
                           f"{', '.join(a.label for a in self.accesses)}")

    @property
    def crossbar_before(self) -> int:
        """Lane-to-partition links of all accesses without xbar-elm."""
        return sum(a.crossbar_before for a in self.accesses)

    @property
    def crossbar_after(self) -> int:
        """Lane-to-partition links of all accesses after xbar-elm."""
        return sum(a.crossbar_after for a in self.accesses)

    @property
    def merge_units(self) -> int:
        """Merging units of all accesses and partitions (general crossbar, Fig. 8)."""
        return sum(t.units for a in self.accesses for t in a.merge)

    @property
    def merge_units_after(self) -> int:
        """Merging units left after xbar-elm."""
        return sum(t.units for a in self.accesses for t in a.merge_after)

    @property
    def merge_depth(self) -> int:
        return max((t.depth for a in self.accesses for t in a.merge), default=0)


# ---------------------------------------------------------------------------- sites
@dataclass
class _Site:
    label: str
    kind: str
    index: tuple[Expr, ...]
    loops: list[Loop]              # enclosing loops, outermost first
    lets: dict[int, Expr]


def _lets(block: Block) -> dict[int, Expr]:
    return {id(s.temp): s.value for s in block.statements if isinstance(s, Let)}


def _sites(program: Program, mem) -> list[_Site]:
    out: list[_Site] = []
    for c in program.controllers():
        if isinstance(c, Block):
            lets = _lets(c)
            loops = [a for a in reversed(c.ancestors()) if isinstance(a, Loop)]
            for ld in c.loads():
                if ld.mem is mem:
                    out.append(_Site(ld.label, "read", ld.index, loops, lets))
            for st in c.stores():
                if st.mem is mem:
                    out.append(_Site(st.label, "write", st.index, loops, lets))
    for ctrl, ld in program.bound_loads():
        if ld.mem is mem:
            loops = [a for a in reversed(ctrl.ancestors()) if isinstance(a, Loop)]
            out.append(_Site(ld.label, "read", ld.index, loops, {}))
    return out


def _where(site: _Site, mem) -> str:
    loops = ", ".join(f"{lp.label} (par {lp.par})" for lp in site.loops) or "no loop"
    return f"{site.kind} {site.label} of sram {mem.name!r} in {loops}"


# ---------------------------------------------------------------------------- z3 model
class _Model:
    """The z3 terms of one access: per enclosing loop an iteration ``k >= 0``, a start
    (constant or a free integer) and a lane; the address as a z3 integer term."""

    def __init__(self, site: _Site, coeffs: dict[Loop, int], const: int):
        self.site, self.coeffs, self.const = site, coeffs, const
        self.steps = {lp: int(lp.step.value) for lp in site.loops if lp in coeffs}

    def address(self, tag: str, lanes: dict[Loop, z3.ArithRef | int]):
        """The address with fresh iteration/start variables suffixed ``tag``; returns
        ``(term, constraints)``."""
        cons, term = [], z3.IntVal(self.const)
        for lp in self.site.loops:
            c = self.coeffs.get(lp, 0)
            if c == 0:
                continue
            k = z3.Int(f"k_{lp.label}_{tag}")
            cons.append(k >= 0)
            start = (z3.IntVal(int(lp.start.value)) if isinstance(lp.start, Const)
                     else z3.Int(f"s_{lp.label}_{tag}"))
            lane = lanes.get(lp, 0)
            term = term + c * (start + (lp.par * k + lane) * self.steps[lp])
        return term, cons


def _solve(s: z3.Solver) -> z3.CheckSatResult:
    s.set("timeout", Z3_TIMEOUT_MS)
    return s.check()


def _lane_vars(par_loops: list[Loop], tag: str) -> dict[Loop, z3.ArithRef]:
    return {lp: z3.Int(f"l_{lp.label}_{tag}") for lp in par_loops}


def _lane_range(lanes: dict[Loop, z3.ArithRef]) -> list:
    return [z3.And(v >= 0, v < lp.par) for lp, v in lanes.items()]


def _shared_iteration_query(model: _Model, par_loops: list[Loop]):
    """Two lanes ``l != l'`` of ``par_loops`` in the same iteration: returns ``(solver,
    addr_l, addr_l', lanes, lanes')`` with the shared iteration variables."""
    la, lb = _lane_vars(par_loops, "a"), _lane_vars(par_loops, "b")
    s = z3.Solver()
    a, ca = model.address("it", la)
    b, cb = model.address("it", lb)     # same tag: same k and start
    s.add(*ca, *cb, *_lane_range(la), *_lane_range(lb))
    s.add(z3.Or(*[la[lp] != lb[lp] for lp in par_loops]))
    return s, a, b, la, lb


def _counterexample(s: z3.Solver, model: _Model, la, lb, a, banks: int) -> dict:
    m = s.model()
    out: dict = {}
    for lp in model.site.loops:
        k = m.eval(z3.Int(f"k_{lp.label}_it"), model_completion=True).as_long()
        lane = (m.eval(la[lp], model_completion=True).as_long(),
                m.eval(lb[lp], model_completion=True).as_long()) if lp in la else (0, 0)
        out[lp.label] = (k, *lane)
    out["bank"] = m.eval(a % banks, model_completion=True).as_long()
    return out


def _op_count(e: Expr, lets: dict[int, Expr]) -> int:
    if isinstance(e, Temp) and id(e) in lets:
        return _op_count(lets[id(e)], lets)
    if isinstance(e, Op):
        return 1 + sum(_op_count(a, lets) for a in e.args)
    return sum(_op_count(a, lets) for a in e.children())


# ---------------------------------------------------------------------------- planner
@dataclass
class _Analysed:
    site: _Site
    model: _Model | None
    address: AffineAddress | None
    dep: list[Loop]            # parallel loops the address depends on
    bcast: list[Loop]          # parallel loops it does not depend on
    lanes: int


def _analyse(site: _Site, mem) -> _Analysed:
    par = [lp for lp in site.loops if lp.par > 1]
    lanes = math.prod(lp.par for lp in par)
    strides = [math.prod(mem.shape[d + 1:]) for d in range(len(mem.shape))]
    try:
        coeffs: dict[Loop, int] = {}
        const = 0
        for e, stride in zip(site.index, strides, strict=True):
            ce, ke = _affine(e, site.lets)
            for lp, c in ce.items():
                coeffs[lp] = coeffs.get(lp, 0) + c * stride
            const += ke * stride
    except _NotAffine as err:
        if par:
            raise MappingError(f"{_where(site, mem)}: the address is not affine in the loop "
                               f"indices ({err.args[0]}); banking for parallel lanes needs "
                               f"an affine address: use par=1 or an affine index") from None
        return _Analysed(site, None, None, [], [], 1)
    coeffs = {lp: c for lp, c in coeffs.items() if c}
    foreign = [lp.label for lp in coeffs if lp not in site.loops]
    if foreign:
        raise ProgramError(f"{_where(site, mem)}: the index uses the iterator of "
                           f"{', '.join(foreign)}, which does not enclose the access")
    variable = [lp.label for lp in coeffs
                if not (isinstance(lp.step, Const) and lp.step.dtype == "i32")]
    if variable:
        if par:
            raise MappingError(f"{_where(site, mem)}: loop(s) {', '.join(variable)} of the "
                               f"address have a non-constant step; banking for parallel "
                               f"lanes needs constant steps")
        return _Analysed(site, None, None, [], [], 1)
    model = _Model(site, coeffs, const)
    address = AffineAddress(tuple((lp.label, coeffs[lp]) for lp in site.loops
                                  if lp in coeffs), const)
    dep = [lp for lp in par if lp in coeffs]
    bcast = [lp for lp in par if lp not in coeffs]
    if bcast and site.kind == "write":
        raise MappingError(f"{_where(site, mem)}: the address {address.describe()} does not "
                           f"depend on parallel loop(s) "
                           f"{', '.join(lp.label for lp in bcast)}, so their lanes write "
                           f"the same word; use par=1 there or index with the loop")
    return _Analysed(site, model, address, dep, bcast, lanes)


def _check_distinct(an: _Analysed, mem) -> None:
    """Two request lanes of one access never address the same word (else no banking can
    separate them)."""
    if len(an.dep) == 0:
        return
    s, a, b, la, lb = _shared_iteration_query(an.model, an.dep)
    s.add(a == b)
    r = _solve(s)
    if r == z3.sat:
        cex = _counterexample(s, an.model, la, lb, a, 1)
        lanes = ", ".join(f"{lab}: k={v[0]} lanes {v[1]}/{v[2]}" for lab, v in cex.items()
                          if lab != "bank")
        raise MappingError(f"{_where(an.site, mem)}: two lanes address the same word "
                           f"(address {an.address.describe()}; {lanes}); no banking "
                           f"separates them: change the par factors or the index")
    if r != z3.unsat:
        raise MappingError(f"{_where(an.site, mem)}: z3 could not prove within "
                           f"{Z3_TIMEOUT_MS} ms that the lanes address different words")


def _conflict_free(an: _Analysed, banks: int) -> BankProof:
    s, a, b, la, lb = _shared_iteration_query(an.model, an.dep)
    s.add(a % banks == b % banks)
    r = _solve(s)
    if r == z3.unsat:
        return BankProof(an.site.label, banks, "proven")
    if r == z3.sat:
        return BankProof(an.site.label, banks, "conflict",
                         _counterexample(s, an.model, la, lb, a, banks))
    return BankProof(an.site.label, banks, "unknown")


def _static_bank(an: _Analysed, lane: dict[Loop, int], banks: int) -> int | None:
    """The bank of ``lane`` when z3 proves it the same for every iteration, else None."""
    s = z3.Solver()
    a, ca = an.model.address("x", lane)
    b, cb = an.model.address("y", lane)
    s.add(*ca, *cb, a % banks != b % banks)
    if _solve(s) != z3.unsat:
        return None
    s0 = z3.Solver()
    s0.add(*ca)
    if _solve(s0) != z3.sat:
        return None
    return s0.model().eval(a % banks, model_completion=True).as_long()


def _reachable(an: _Analysed, lane: dict[Loop, int], banks: int) -> tuple[int, ...]:
    """Banks lane ``lane`` can reach: the coset ``base + gcd(B, free coefficients) * Z``."""
    g, base = banks, an.model.const
    for lp in an.site.loops:
        c = an.model.coeffs.get(lp, 0)
        if c == 0:
            continue
        step = an.model.steps[lp]
        g = math.gcd(g, c * lp.par * step)
        if isinstance(lp.start, Const):
            base += c * (int(lp.start.value) + lane.get(lp, 0) * step)
        else:
            g = math.gcd(g, c)
    return tuple(sorted({(base + g * t) % banks for t in range(banks // g)}))


def bank_memory(program: Program, name: str, *, max_merge_fanin: int = 2,
                max_banks: int = 64) -> BankingPlan:
    """The cyclic banking of SRAM ``name`` of ``program`` (module docstring; SARA §III-B2,
    Fig. 8, and xbar-elm of §III-C d).

    ``max_merge_fanin`` (>= 2): inputs per merging unit; ``max_banks``: the largest number
    of partitions tried. Returns a :class:`BankingPlan` (1 bank when no access has more
    than one request lane).

    Raises :class:`ProgramError` when ``name`` is not an SRAM of ``program``;
    :class:`MappingError` when no conflict-free ``B <= max_banks`` is proven, when lanes of
    one access hit the same word, or for a parallel access whose address is not affine.
    """
    mem = program.memories.get(name)
    if not isinstance(mem, SRAM):
        raise ProgramError(f"program {program.name!r}: {name!r} is not an SRAM "
                           f"(SRAMs: {', '.join(m.name for m in program.memories.values() if isinstance(m, SRAM))})")
    if max_merge_fanin < 2:
        raise MappingError(f"max_merge_fanin must be >= 2 (a merging unit merges streams), "
                           f"got {max_merge_fanin}")
    analysed = [_analyse(site, mem) for site in _sites(program, mem)]
    for an in analysed:
        _check_distinct(an, mem)
    need = max((math.prod(lp.par for lp in an.dep) for an in analysed), default=1)
    banks = 1 << (need - 1).bit_length()
    proofs: list[BankProof] = []
    while True:
        if banks > max_banks:
            last = [p for p in proofs if p.result != "proven"]
            why = "; ".join(f"{p.access} with {p.banks} banks: {p.result}"
                            + (f" {p.counterexample}" if p.counterexample else "")
                            for p in last[-3:])
            raise MappingError(f"sram {name!r}: no cyclic banking with at most {max_banks} "
                               f"banks is proven conflict-free ({why}); raise max_banks, "
                               f"lower the par factors or change the index stride")
        ok = True
        for an in analysed:
            if banks == 1 or not an.dep:
                continue
            proof = _conflict_free(an, banks)
            proofs.append(proof)
            if proof.result != "proven":
                ok = False
                break
        if ok:
            break
        banks *= 2
    accesses = tuple(_access_plan(an, banks, max_merge_fanin) for an in analysed)
    return BankingPlan(name, mem.size, banks, math.ceil(mem.size / banks), accesses,
                       tuple(proofs), max_merge_fanin)


def _access_plan(an: _Analysed, banks: int, fanin: int) -> AccessBanking:
    lanes: list[LaneBanking] = []
    for values in product(*[range(lp.par) for lp in an.dep]):
        lane = dict(zip(an.dep, values, strict=True))
        if an.model is None:
            reach, static = tuple(range(banks)), (0 if banks == 1 else None)
        else:
            reach = _reachable(an, lane, banks)
            static = 0 if banks == 1 else _static_bank(an, lane, banks)
            if static is None and len(reach) == 1:
                reach = tuple(range(banks))   # not proven: keep the full crossbar
        lanes.append(LaneBanking(tuple(values), static,
                                 (static,) if static is not None else reach))
    n = len(lanes)
    merge = tuple(merge_tree(p, n, fanin) for p in range(banks))
    merge_after = tuple(merge_tree(p, sum(p in ln.banks for ln in lanes), fanin)
                        for p in range(banks))
    ba_ops = 0 if an.model is None else (sum(_op_count(e, an.site.lets)
                                             for e in an.site.index) + 1)
    return AccessBanking(
        label=an.site.label, kind=an.site.kind, address=an.address,
        par_loops=tuple((lp.label, lp.par) for lp in an.dep),
        broadcast_loops=tuple((lp.label, lp.par) for lp in an.bcast),
        lanes=an.lanes, request_lanes=tuple(lanes),
        crossbar_before=n * banks, crossbar_after=sum(len(ln.banks) for ln in lanes),
        merge=merge, merge_after=merge_after, ba_ops=ba_ops)


def plan_banking(program: Program, *, max_merge_fanin: int = 2,
                 max_banks: int = 64) -> dict[str, BankingPlan]:
    """:func:`bank_memory` for every SRAM of ``program`` with an access inside a loop of
    ``par > 1``; SRAM name -> plan, in declaration order. Raises as :func:`bank_memory`."""
    out: dict[str, BankingPlan] = {}
    for m in program.memories.values():
        if not isinstance(m, SRAM):
            continue
        if any(lp.par > 1 for site in _sites(program, m) for lp in site.loops):
            out[m.name] = bank_memory(program, m.name, max_merge_fanin=max_merge_fanin,
                                      max_banks=max_banks)
    return out


def index_constants(index: tuple[Expr, ...], lets: dict[int, Expr]) -> tuple[int, ...] | None:
    """The value of every component of ``index`` when each is a constant affine expression
    (block temporaries ``lets``, ``id(Temp) -> value``, substituted; ``0*i + 3`` counts),
    else ``None``. Used by msr (:mod:`mapper.dataflow.optimize`)."""
    out = []
    for e in index:
        try:
            coeffs, const = _affine(e, lets)
        except _NotAffine:
            return None
        if coeffs:
            return None
        out.append(const)
    return tuple(out)
