"""Polyhedral unified buffers and cycle-accurate schedules for multi-rate pipelines (islpy).

Source: Liu et al., "Unified Buffer: Compiling Image Processing and Machine Learning
Applications to Push-Memory Accelerators", ACM TACO 2023: section 3 (a unified buffer is a
set of ports; a port is an iteration domain, an access map and a cycle-accurate schedule),
section 4 (Clockwork-style scheduling of stencil pipelines at one iteration per cycle) and
section 5.2 (address linearisation; address generators in recurrence form).  Every set,
map and maximum below is an ISL computation (islpy); nothing is enumerated.

**Program.**  A :class:`Program` is a DAG of :class:`Stage` s in topological order: the
pipeline inputs (stages without reads, streamed in) and the compute stages.  A stage has a
box iteration domain (``extents`` counters, innermost first, from ``origin``), one output
buffer (``buf_<stage>``) and reads: each :class:`Read` gives one quasi-affine ISL expression
per producer coordinate in the stage's iteration variables ``x, y, z, w, v, u`` (innermost
first): ``("x + 1", "y")`` is a stencil tap, ``("2*x", "2*y")`` a stride-2 (downsample)
read, ``("floor(x/2)", "floor(y/2)")`` a repeat (upsample) read.  ``lanes = U`` vectorises
the innermost counter: iteration ``(xo, y)`` writes elements ``(U*xo + l, y)``,
``l < U``, in one cycle (the unrolled stencil path).

**Schedules.**  Stage ``s`` runs iteration ``i`` at cycle ``T_s(i) = o_s + sum_k c_sk i_k``
and writes its output ``latency_s`` cycles later.  :func:`schedule` picks

1. the coefficients ``c`` by *rate matching*: a read whose producer coordinate ``m`` moves by
   ``g`` producer iterations per step of consumer counter ``k`` forces ``c_ck = g * c_pm``
   (so producer and consumer advance through the buffer at one rate and no buffer grows with
   the image); these ratios are solved per connected group of (stage, counter) pairs, then
   each group is scaled by the smallest integer that keeps every stage at most one iteration
   per cycle in lexicographic order (``c_s0 >= 1``, ``c_sk >= c_s(k-1) * e_s(k-1)``).
   Inputs therefore stall when a consumer emits more than one value per input value
   (upsample by 2: the input is read every 2nd cycle and idles every other row);
2. the offsets ``o`` as early as dependences allow: ``o_c = max over reads, over the
   consumer's domain, of T_p(producer iteration) + latency_p - (T_c(j) - o_c)``, an ISL
   maximum of a piecewise quasi-affine function.  Inputs start at cycle 0.

Explicit ``coefficients`` (per stage) skip step 1; the unrolled stencil schedule of
:mod:`mapper.mapping.schedule` is that special case (every stage ``[1, P]``).

**Buffers.**  :class:`UnifiedBuffer` = one write port plus one read port per read; for each
read port the dependence distance ``T_read - T_write`` (cycles an element waits, ``>= 0``)
has an ISL minimum and maximum (equal for a stencil tap).  ``capacity`` = the most words
written and not yet read at any read, counting the word written in that cycle: the ISL
maximum of ``rank(last iteration written by T_c(j)) - rank(producer iteration read by j) +
1`` times the lanes, where ``rank`` is the position in write order (the buffer retires
words in write order, as a circular buffer does).

Errors: :class:`MappingError` for a malformed program, an expression ISL cannot parse, a
read outside its producer's domain, inconsistent rates (two paths force different
coefficients on one counter) or a coupled/transposed access the rate matcher cannot solve
(give ``coefficients`` explicitly), and explicit coefficients that are not one iteration
per cycle in lexicographic order.
"""
from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import islpy as isl

from cgra.errors import MappingError
from lake.affine import deltas_from_strides
from mapper import ir

#: Iteration variable names, innermost first.
VARS = ("x", "y", "z", "w", "v", "u")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Read:
    """A read of ``producer``: one ISL quasi-affine expression per producer coordinate
    (innermost first), in the reader's iteration variables ``x, y, ...``.  ``clip``: reads
    outside the producer's domain are don't-cares (edge lanes of an unrolled stage that no
    valid output uses) and are dropped from the port's domain instead of rejected.
    ``delay``: the least distance (cycles from write to read) the port may have, e.g. a
    MEM's read latency."""

    producer: str
    access: tuple[str, ...]
    clip: bool = False
    delay: int = 0


@dataclass(frozen=True)
class Stage:
    """A stage (or pipeline input, when ``reads`` is empty) over the box
    ``origin_k <= i_k < origin_k + extents_k`` (counters innermost first); ``latency`` =
    cycles from an iteration to its output word(s); ``lanes`` = words written per iteration
    along the innermost coordinate; ``pad`` (per counter, default 1) rounds the extent rate
    matching leaves room for up to a multiple of it (idle cycles at the end of each pass,
    e.g. a row of 31 iterations read through ``floor((x + 1)/2)`` takes 32 cycles, so an
    address generator can run the split counter to a whole multiple of 2)."""

    name: str
    extents: tuple[int, ...]
    reads: tuple[Read, ...] = ()
    latency: int = 0
    origin: tuple[int, ...] | None = None
    lanes: int = 1
    pad: tuple[int, ...] = ()

    @property
    def lo(self) -> tuple[int, ...]:
        return self.origin if self.origin is not None else (0,) * len(self.extents)

    @property
    def is_input(self) -> bool:
        return not self.reads


@dataclass(frozen=True)
class Program:
    """Stages in topological order (inputs first or anywhere before their readers)."""

    name: str
    stages: tuple[Stage, ...]

    def stage(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        raise MappingError(f"polyhedral {self.name}: no stage '{name}'")


@dataclass
class Port:
    """One unified-buffer port: ``domain`` (ISL set of iterations), ``access`` (ISL map
    iteration -> buffer element), ``schedule`` (ISL map iteration -> ``[cycle]``; for a write
    port the cycle the word is written, i.e. iteration cycle + latency); for a read port its
    ``distance`` range (cycles) and ``capacity`` (words this read alone keeps live)."""

    buffer: str
    kind: str
    stage: str
    index: int | None
    domain: Any
    access: Any
    schedule: Any
    distance: tuple[int, int] = (0, 0)
    capacity: int = 0


@dataclass
class UnifiedBuffer:
    """The buffer of one producer: its write port, read ports and ISL-derived figures."""

    name: str
    producer: str
    lanes: int
    write: Port
    reads: list[Port] = field(default_factory=list)
    capacity: int = 0

    @property
    def latency(self) -> int:
        """Longest time (cycles) a word waits between its write and a read."""
        return max((p.distance[1] for p in self.reads), default=0)

    def distances(self) -> list[int]:
        """Sorted distinct distances of the read ports whose distance is one constant."""
        return sorted({p.distance[0] for p in self.reads if p.distance[0] == p.distance[1]})


@dataclass
class Schedule:
    """Coefficients and offsets per stage, and the buffers (key: producer name)."""

    program: Program
    coefficients: dict[str, tuple[int, ...]]
    offsets: dict[str, int]
    buffers: dict[str, UnifiedBuffer]
    first: dict[str, int]          # cycle of each stage's first iteration

    def cycle(self, stage: str, it: tuple[int, ...]) -> int:
        """Cycle iteration ``it`` of ``stage`` runs."""
        return self.offsets[stage] + sum(c * i for c, i in zip(self.coefficients[stage], it,
                                                                strict=True))

    def report(self) -> list[dict[str, Any]]:
        """Per buffer: ``buffer``, ``capacity`` (words), ``latency`` (cycles), per read port
        ``[stage, min distance, max distance]``."""
        return [{"buffer": b.name, "capacity": b.capacity, "latency": b.latency,
                 "reads": [[p.stage, p.distance[0], p.distance[1]] for p in b.reads]}
                for b in self.buffers.values()]


def _ctx(prog: Program) -> str:
    return f"polyhedral {prog.name}"


def _vars(n: int) -> str:
    return ", ".join(VARS[:n])


def _domain(s: Stage) -> Any:
    cons = " and ".join(f"{lo} <= {v} < {lo + e}" for v, lo, e in zip(VARS, s.lo, s.extents, strict=False))
    return isl.Set(f"{{ {s.name}[{_vars(len(s.extents))}] : {cons} }}")


def _write_access(s: Stage, bounded: bool = True) -> Any:
    n = len(s.extents)
    if s.lanes == 1:
        text = f"{{ {s.name}[{_vars(n)}] -> buf_{s.name}[{_vars(n)}] }}"
    else:
        outs = ", ".join(["e0"] + list(VARS[1:n]))
        text = (f"{{ {s.name}[{_vars(n)}] -> buf_{s.name}[{outs}] : "
                f"{s.lanes}*x <= e0 < {s.lanes}*x + {s.lanes} }}")
    m = isl.Map(text)
    return m.intersect_domain(_domain(s)) if bounded else m


def _time_map(s: Stage, coef: tuple[int, ...], offset: int, bounded: bool = True) -> Any:
    expr = " + ".join([str(offset)] + [f"{c}*{v}" for c, v in zip(coef, VARS, strict=False)])
    m = isl.Map(f"{{ {s.name}[{_vars(len(s.extents))}] -> [{expr}] }}")
    return m.intersect_domain(_domain(s)) if bounded else m


def _pw_aff(m: Any) -> Any:
    """The single-valued map ``m`` (to a 1-D space) as a PwAff."""
    return isl.PwMultiAff.from_map(m).get_pw_aff(0)


def _val(v: Any) -> int:
    return int(str(v))


def _max(pa: Any) -> int:
    """Maximum of a piecewise quasi-affine function over its (bounded) domain."""
    return _val(isl.Map.from_pw_aff(pa).range().dim_max_val(0))


def _min(pa: Any) -> int:
    """Minimum of a piecewise quasi-affine function over its (bounded) domain."""
    return _val(isl.Map.from_pw_aff(pa).range().dim_min_val(0))


def _check(prog: Program) -> dict[str, Stage]:
    byname: dict[str, Stage] = {}
    for s in prog.stages:
        where = f"{_ctx(prog)}: stage '{s.name}'"
        if not _IDENT.match(s.name):
            raise MappingError(f"{where}: the name must be an identifier (letters, digits, _)")
        if s.name in byname:
            raise MappingError(f"{where} is defined twice; give every stage its own name")
        if not 1 <= len(s.extents) <= len(VARS):
            raise MappingError(f"{where}: {len(s.extents)} counters; use 1..{len(VARS)}")
        if any(int(e) < 1 for e in s.extents):
            raise MappingError(f"{where}: extents {list(s.extents)} must all be >= 1")
        if len(s.lo) != len(s.extents):
            raise MappingError(f"{where}: origin {list(s.lo)} has {len(s.lo)} entries but the "
                               f"stage has {len(s.extents)} counters")
        if s.lanes < 1 or s.latency < 0:
            raise MappingError(f"{where}: lanes {s.lanes} must be >= 1 and latency "
                               f"{s.latency} >= 0")
        for r in s.reads:
            if r.producer not in byname:
                raise MappingError(f"{where} reads '{r.producer}', which is not defined before "
                                   f"it; list stages in topological order")
            p = byname[r.producer]
            if len(r.access) != len(p.extents):
                raise MappingError(f"{where}: read of '{p.name}' gives {len(r.access)} "
                                   f"coordinates; '{p.name}' has {len(p.extents)}")
        byname[s.name] = s
    return byname


def _read_access(prog: Program, s: Stage, r: Read) -> Any:
    text = f"{{ {s.name}[{_vars(len(s.extents))}] -> buf_{r.producer}[{', '.join(r.access)}] }}"
    try:
        m = isl.Map(text)
    except isl.Error:
        raise MappingError(f"{_ctx(prog)}: stage '{s.name}': access {list(r.access)} of "
                           f"'{r.producer}' is not a quasi-affine expression in "
                           f"{_vars(len(s.extents))}; write e.g. '2*x + 1' or "
                           f"'floor(x/2)'") from None
    return m.intersect_domain(_domain(s))


def _factors(prog: Program, s: Stage, p: Stage, acc: Any) -> list[tuple[int, int, Fraction]]:
    """``(consumer counter k, producer counter m, g)``: producer counter ``m`` advances ``g``
    iterations per step of ``k`` (from the access's linear and floor-division terms)."""
    pma = isl.PwMultiAff.from_map(acc)
    out = []
    for m in range(len(p.extents)):
        pieces = pma.get_pw_aff(m).get_pieces()
        affs = {str(a) for _, a in pieces}
        if len(affs) != 1:
            raise MappingError(f"{_ctx(prog)}: stage '{s.name}': coordinate {m} of its read of "
                               f"'{p.name}' is piecewise; the rate matcher needs one "
                               f"quasi-affine expression (give coefficients explicitly)")
        aff = pieces[0][1]
        ks = []
        for k in range(len(s.extents)):
            g = Fraction(str(aff.get_coefficient_val(isl.dim_type.in_, k)))
            for q in range(aff.dim(isl.dim_type.div)):
                outer = Fraction(str(aff.get_coefficient_val(isl.dim_type.div, q)))
                inner = Fraction(str(aff.get_div(q).get_coefficient_val(isl.dim_type.in_, k)))
                g += outer * inner
            if g:
                ks.append((k, g))
        if len(ks) > 1:
            raise MappingError(f"{_ctx(prog)}: stage '{s.name}': coordinate {m} of its read of "
                               f"'{p.name}' couples counters {[VARS[k] for k, _ in ks]}; the "
                               f"rate matcher needs one counter per coordinate (give "
                               f"coefficients explicitly)")
        if ks:
            k, g = ks[0]
            if g < 0:
                raise MappingError(f"{_ctx(prog)}: stage '{s.name}' reads '{p.name}' backwards "
                                   f"along {VARS[k]}; streams run forwards only")
            out.append((k, m, g / (p.lanes if m == 0 else 1) * (s.lanes if k == 0 else 1)))
    return out


def _rate_match(prog: Program, stages: dict[str, Stage], accs: dict
                ) -> dict[str, tuple[int, ...]]:
    """Coefficients by rate matching (module docstring, step 1)."""
    edges: dict[tuple[str, int], list[tuple[tuple[str, int], Fraction]]] = {}
    for s in prog.stages:
        for ri, r in enumerate(s.reads):
            for k, m, g in _factors(prog, s, stages[r.producer], accs[(s.name, ri)]):
                a, b = (s.name, k), (r.producer, m)
                edges.setdefault(a, []).append((b, 1 / g))   # c_b = c_a / g
                edges.setdefault(b, []).append((a, g))       # c_a = g * c_b
    rho: dict[tuple[str, int], Fraction] = {}
    groups: list[list[tuple[str, int]]] = []
    for s in prog.stages:
        for k in range(len(s.extents)):
            if (s.name, k) in rho:
                continue
            rho[(s.name, k)] = Fraction(1)
            group, todo = [(s.name, k)], [(s.name, k)]
            while todo:
                a = todo.pop()
                for b, g in edges.get(a, []):
                    want = rho[a] * g
                    if b not in rho:
                        rho[b] = want
                        group.append(b)
                        todo.append(b)
                    elif rho[b] != want:
                        raise MappingError(
                            f"{_ctx(prog)}: inconsistent rates: two reads or paths give "
                            f"counter {VARS[b[1]]} of '{b[0]}' a schedule coefficient of "
                            f"{rho[b] / rho[a]} and {want / rho[a]} times that of "
                            f"{VARS[a[1]]} of '{a[0]}'; read each producer at one rate, or "
                            f"give coefficients explicitly")
            groups.append(group)
    for g in groups:
        dims = {k for _, k in g}
        if len(dims) > 1:
            raise MappingError(f"{_ctx(prog)}: counters {sorted(g)} are rate-linked across "
                               f"different loop levels (a transposed or flattened access); "
                               f"give coefficients explicitly")
    coef: dict[tuple[str, int], int] = {}
    for g in sorted(groups, key=lambda g: g[0][1]):
        den = math.lcm(*(rho[a].denominator for a in g))
        ints = [int(rho[a] * den) for a in g]
        gcd = math.gcd(*ints)
        base = {a: v // gcd for a, v in zip(g, ints, strict=False)}
        lam = 1
        for (name, k), b in base.items():
            st = stages[name]
            q = st.pad[k - 1] if k and len(st.pad) >= k else 1
            need = 1 if k == 0 else coef[(name, k - 1)] * (-(-st.extents[k - 1] // q) * q)
            lam = max(lam, -(-need // b))
        for a, b in base.items():
            coef[a] = lam * b
    return {s.name: tuple(coef[(s.name, k)] for k in range(len(s.extents)))
            for s in prog.stages}


def _check_coefficients(prog: Program, s: Stage, c: tuple[int, ...]) -> None:
    if len(c) != len(s.extents) or c[0] < 1 or any(
            c[k] < c[k - 1] * s.extents[k - 1] for k in range(1, len(c))):
        raise MappingError(f"{_ctx(prog)}: stage '{s.name}': coefficients {list(c)} do not run "
                           f"one iteration per cycle in lexicographic order over extents "
                           f"{list(s.extents)}; need c0 >= 1 and c_k >= c_(k-1) * e_(k-1)")


def schedule(prog: Program, coefficients: dict[str, tuple[int, ...]] | None = None
             ) -> Schedule:
    """Cycle-accurate schedule and unified buffers of ``prog`` (module docstring).

    ``coefficients`` (stage -> one integer per counter, innermost first) replaces rate
    matching for every stage.  Returns a :class:`Schedule`; raises :class:`MappingError`.
    """
    stages = _check(prog)
    accs: dict[tuple[str, int], Any] = {}      # the read's access map on its whole domain
    inside: dict[tuple[str, int], Any] = {}    # ... restricted to elements the producer writes
    for s in prog.stages:
        for ri, r in enumerate(s.reads):
            acc = _read_access(prog, s, r)
            written = _write_access(stages[r.producer]).range()
            outside = acc.range().subtract(written)
            if not r.clip and not outside.is_empty():
                pt = outside.lexmin().sample_point()
                at = [_val(pt.get_coordinate_val(isl.dim_type.set, m))
                      for m in range(len(r.access))]
                raise MappingError(f"{_ctx(prog)}: stage '{s.name}' reads '{r.producer}' at "
                                   f"{at}, outside its domain; shrink '{s.name}' or grow "
                                   f"'{r.producer}'")
            accs[(s.name, ri)] = acc
            inside[(s.name, ri)] = acc.intersect_range(written)
    if coefficients is None:
        coef = _rate_match(prog, stages, accs)
    else:
        missing = [s.name for s in prog.stages if s.name not in coefficients]
        if missing:
            raise MappingError(f"{_ctx(prog)}: coefficients missing for {missing}")
        coef = {n: tuple(int(v) for v in c) for n, c in coefficients.items()}
    for s in prog.stages:
        _check_coefficients(prog, s, coef[s.name])
    offsets: dict[str, int] = {}
    wtime: dict[tuple[str, int], Any] = {}   # cycle the word read by j is written (PwAff)
    for s in prog.stages:
        t0 = _pw_aff(_time_map(s, coef[s.name], 0))
        o = 0
        for ri, r in enumerate(s.reads):
            p = stages[r.producer]
            # a clipped read's don't-care elements follow the producer's schedule extended
            # beyond its domain (the affine function), so every port has a distance
            dep = accs[(s.name, ri)].apply_range(
                _write_access(p, bounded=not r.clip).reverse())
            tw = _pw_aff(dep.apply_range(_time_map(p, coef[p.name], offsets[p.name] + p.latency,
                                                   bounded=not r.clip)))
            wtime[(s.name, ri)] = tw
            o = max(o, _max(tw.sub(t0)) + r.delay)
        offsets[s.name] = o if s.reads else 0
    first = {s.name: offsets[s.name] + sum(c * lo for c, lo in zip(coef[s.name], s.lo, strict=False))
             for s in prog.stages}
    buffers: dict[str, UnifiedBuffer] = {}
    for s in prog.stages:
        tr = _pw_aff(_time_map(s, coef[s.name], offsets[s.name]))
        for ri, r in enumerate(s.reads):
            p = stages[r.producer]
            if p.name not in buffers:
                wport = Port(f"buf_{p.name}", "write", p.name, None, _domain(p), _write_access(p),
                             _time_map(p, coef[p.name], offsets[p.name] + p.latency))
                buffers[p.name] = UnifiedBuffer(f"buf_{p.name}", p.name, p.lanes, wport)
            b = buffers[p.name]
            dist = tr.sub(wtime[(s.name, ri)])
            port = Port(b.name, "read", s.name, ri, _domain(s), accs[(s.name, ri)],
                        _time_map(s, coef[s.name], offsets[s.name]),
                        (_min(dist), _max(dist)))
            b.reads.append(port)
            used = inside[(s.name, ri)]
            if not used.is_empty():
                dep = used.apply_range(_write_access(p).reverse())
                port.capacity = _capacity(p, coef[p.name], offsets[p.name], s, coef[s.name],
                                          offsets[s.name], dep)
                b.capacity = max(b.capacity, port.capacity)
    return Schedule(prog, coef, offsets, buffers, first)


def _rank(p: Stage) -> str:
    """Position of producer iteration ``x, y, ...`` in write (lexicographic) order."""
    terms, scale = [], 1
    for v, lo, e in zip(VARS, p.lo, p.extents, strict=False):
        terms.append(f"{scale}*({v} - {lo})")
        scale *= e
    return " + ".join(terms)


def _capacity(p: Stage, cp: tuple[int, ...], op: int, c: Stage, cc: tuple[int, ...], oc: int,
              dep: Any) -> int:
    """Words of ``p``'s buffer live at a read by ``c`` (module docstring), ISL maximum."""
    n, nc = len(p.extents), len(c.extents)
    pv = [f"p{k}" for k in range(n)]
    tw = " + ".join([str(op + p.latency)] + [f"{a}*{v}" for a, v in zip(cp, pv, strict=False)])
    tr = " + ".join([str(oc)] + [f"{a}*{v}" for a, v in zip(cc, VARS, strict=False)])
    box = " and ".join(f"{lo} <= {v} < {lo + e}" for v, lo, e in zip(pv, p.lo, p.extents, strict=False))
    written = isl.Map(f"{{ {c.name}[{_vars(nc)}] -> {p.name}[{', '.join(pv)}] : "
                      f"{box} and {tw} <= {tr} }}").intersect_domain(dep.domain())
    rank = isl.Map(f"{{ {p.name}[{_vars(n)}] -> [{_rank(p)}] }}")
    # max over (read j, word i written by then) of rank(i) - rank(word read by j): one ILP
    # (a parametric lexmax of the newest word per read grows with the image width)
    span = written.apply_range(rank).sum(dep.apply_range(rank).neg())
    return (_val(span.range().dim_max_val(0)) + 1) * p.lanes


@dataclass(frozen=True)
class AddressProgram:
    """An address generator for one port over a linear buffer layout: counters
    ``extents`` (innermost first), ``address = offset + sum strides_k * i_k`` (words), the
    same in recurrence form (``deltas``, Lake's address generators) and the port's schedule
    ``cycle = schedule_offset + sum schedule_strides_k * i_k``."""

    extents: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    deltas: tuple[int, ...]
    schedule_strides: tuple[int, ...]
    schedule_offset: int


def linearize(port: Port, layout: tuple[int, ...], base: tuple[int, ...] | None = None,
              keep: int | None = None, rows: int | None = None,
              overrun: bool = False) -> AddressProgram:
    """Address generator of ``port`` for a row-major buffer of shape ``layout`` (elements,
    innermost first) whose element ``base`` (default 0) is word 0.  ``keep = K`` drops the
    coordinates ``>= K`` from the address: a circular buffer of ``prod(layout[:K])`` words
    (addresses modulo that size), valid when the buffer's capacity is at most that size.
    ``rows = R`` (a 2-D layout ``(W, H)``, ``keep`` 2) keeps the row coordinate modulo
    ``R``: a circular buffer of ``R`` rows, ``W * R`` words, address ``(x - x0) + W * ((y -
    y0) mod R)``; the counters the modulus divides are split like a floor division's (so the
    split counter's extent must be a multiple of the divisor, e.g. ``R`` for the producer).
    ``overrun`` (reads only) lets a split counter whose extent is not a multiple of its
    divisor ``d`` run to the next multiple: the outermost counter's extra iterations lie
    before its first or after its last real access; an inner counter's take idle cycles of
    the schedule (refused unless the schedule stays strictly increasing); they read words
    nobody samples.

    A counter that appears in a floor division by ``d`` is split into an inner counter of
    extent ``d`` and an outer one (paper section 5.2, strip-mining), so the address becomes
    affine; the result is checked equal to the port's access map with ISL.  Raises
    :class:`MappingError` when the access is not affine after splitting, or a split counter's
    extent is not a multiple of ``d``.
    """
    base = base or (0,) * len(layout)
    dom = port.domain
    if not dom.coalesce().is_box():
        raise MappingError(f"linearize {port.buffer} ({port.stage}): the port's iterations "
                           f"are not a box; one address generator cannot run them")
    ncnt = dom.dim(isl.dim_type.set)
    name = dom.get_tuple_name()
    ext = [_val(dom.dim_max_val(k)) - _val(dom.dim_min_val(k)) + 1 for k in range(ncnt)]
    lo = [_val(dom.dim_min_val(k)) for k in range(ncnt)]
    keep = len(layout) if keep is None else keep
    if not port.access.is_single_valued():
        raise MappingError(f"linearize {port.buffer} ({port.stage}): the port accesses several "
                           f"words per iteration (vector lanes); linearise one lane")
    terms = [f"(e{m} - {base[m]})" for m in range(keep)]
    if rows is not None:
        if len(layout) != 2 or keep != 2 or not 1 <= rows <= layout[1]:
            raise MappingError(f"linearize {port.buffer} ({port.stage}): rows = {rows} needs a "
                               f"2-D layout kept whole and 1 <= rows <= {layout[1]}")
        terms[1] = f"((e1 - {base[1]}) mod {rows})"
    addr = " + ".join(f"{math.prod(layout[:m])}*{t}" for m, t in enumerate(terms))
    evars = ", ".join(f"e{m}" for m in range(len(layout)))
    to_addr = isl.Map(f"{{ {port.access.get_tuple_name(isl.dim_type.out)}[{evars}] -> "
                      f"[{addr}] }}")
    amap = port.access.apply_range(to_addr)
    aff = isl.PwMultiAff.from_map(amap).get_pw_aff(0).get_pieces()
    if len(aff) != 1:
        raise MappingError(f"linearize {port.buffer} ({port.stage}): the address is piecewise; "
                           f"it cannot be one address generator")
    aff = aff[0][1]
    splits: dict[int, set[int]] = {}

    def period(div: Any, k: int) -> int:
        """Iterations of counter ``k`` after which floor(``div``) (``div`` an argument of the
        address's local space, maybe over earlier floors) repeats its fractional pattern:
        the lcm of the denominators of its coefficients, an earlier floor's scaled by that
        floor's own period."""
        p = Fraction(str(div.get_coefficient_val(isl.dim_type.in_, k))).denominator
        for j in range(div.dim(isl.dim_type.div)):
            c = Fraction(str(div.get_coefficient_val(isl.dim_type.div, j)))
            if c and depends(div.get_div(j), k):
                p = math.lcm(p, c.denominator * period(div.get_div(j), k))
        return p

    def depends(div: Any, k: int) -> bool:
        return not div.get_coefficient_val(isl.dim_type.in_, k).is_zero() or any(
            not div.get_coefficient_val(isl.dim_type.div, j).is_zero()
            and depends(div.get_div(j), k) for j in range(div.dim(isl.dim_type.div)))

    for q in range(aff.dim(isl.dim_type.div)):    # the local space lists nested floors too
        for k in range(ncnt):
            if (d := period(aff.get_div(q), k)) > 1:
                splits.setdefault(k, set()).add(d)
    chains: dict[int, list[int]] = {}
    for k, ds in splits.items():
        chain: list[int] = []
        for d in sorted(ds):            # nested splits: cumulative lcm (2, 3 -> 2, 6)
            d = math.lcm(chain[-1], d) if chain else d
            if not chain or d != chain[-1]:
                chain.append(d)
        chains[k] = chain
    # with overrun, each split counter may start up to d - 1 iterations early (a phase):
    # among the phases that give an affine address, keep the one with the most repeated
    # (stride-0) levels, e.g. floor((x + 1)/2) as 0,0,1,1,... from x = -1 rather than
    # 0,1,1,2,2,... from x = 0 (a wide-fetch MEM serves only the first as a run)
    split = sorted(chains)
    spaces = [range(chains[k][-1]) if overrun else (0,) for k in split]
    err: MappingError | None = None
    best: tuple[int, AddressProgram] | None = None
    for combo in itertools.product(*spaces):
        try:
            prog = _split_program(port, amap, aff, name, ncnt, ext, lo, chains, overrun,
                                  dict(zip(split, combo, strict=True)))
        except MappingError as exc:
            err = err or exc
            continue
        rep = sum(1 for e, st in zip(prog.extents, prog.strides, strict=True)
                  if e > 1 and st == 0)
        if best is None or rep > best[0]:
            best = (rep, prog)
    if best is None:
        assert err is not None
        raise err
    return best[1]


def _split_program(port: Port, amap: Any, aff: Any, name: str, ncnt: int, ext: list[int],
                   lo: list[int], chains: dict[int, list[int]], overrun: bool,
                   phases: dict[int, int]) -> AddressProgram:
    """:func:`linearize` after the divisors are known: counter ``k`` divided by ``d_1 | d_2
    | ... | d_m`` (``chains[k]``) becomes ``lo + n_0 + d_1*n_1 + ... + d_m*n_m`` with
    ``n_0 < d_1``, ``n_j < d_{j+1} / d_j``; with ``overrun`` it starts ``phases[k]``
    iterations early (``lo - phases[k] + ...``) and runs to the next multiple of ``d_m``
    (the extra iterations are outside the domain: before the first or after the last access
    of the outermost counter, in idle cycles of the schedule for an inner one)."""
    # new counters, innermost first: for each k, its levels (k, j, extent)
    cnt: list[tuple[int, int, int]] = []
    padded: list[tuple[int, int]] = []      # (counter, divisor) run past the domain
    for k in range(ncnt):
        chain = chains.get(k, [])
        if not chain:
            cnt.append((k, 0, ext[k]))
            continue
        d = chain[-1]
        ph = phases.get(k, 0)
        if (ext[k] + ph) % d and not overrun:
            raise MappingError(f"linearize {port.buffer} ({port.stage}): counter "
                               f"{VARS[k]} (extent {ext[k]}, from {lo[k]}) is divided by "
                               f"{d}; its extent must be a multiple of {d}")
        if (ext[k] + ph) % d or ph:
            padded.append((k, d))
        steps = [1, *chain]
        cnt += [(k, j, steps[j + 1] // steps[j]) for j in range(len(chain))]
        cnt.append((k, len(chain), -(-(ext[k] + ph) // d)))
    nv = [f"n{j}" for j in range(len(cnt))]
    old = []
    for k in range(ncnt):
        steps = [1, *chains.get(k, [])]
        ph = phases.get(k, 0)
        terms = [f"{steps[j]}*{nv[i]}" for i, (kk, j, _) in enumerate(cnt) if kk == k]
        old.append(f"{lo[k] - ph} + " + " + ".join(terms))
    box = " and ".join(f"0 <= {v} < {e}" for v, (_, _, e) in zip(nv, cnt, strict=False))
    sub = isl.Map(f"{{ L[{', '.join(nv)}] -> {name}[{', '.join(old)}] : {box} }}")
    lin = sub.apply_range(amap)
    pieces = isl.PwMultiAff.from_map(lin).get_pw_aff(0).gist(sub.domain()).get_pieces()
    if len(pieces) != 1 or pieces[0][1].dim(isl.dim_type.div):
        raise MappingError(f"linearize {port.buffer} ({port.stage}): the address "
                           f"{aff} is not affine in the counters even after splitting "
                           f"divided counters; this port needs a different buffer layout")
    a = pieces[0][1]
    strides = tuple(_val(a.get_coefficient_val(isl.dim_type.in_, j)) for j in range(len(cnt)))
    offset = _val(a.get_constant_val())
    check = isl.Map(f"{{ L[{', '.join(nv)}] -> [{' + '.join([str(offset)] + [f'{s}*{v}' for s, v in zip(strides, nv, strict=False)])}] : {box} }}")
    if not check.intersect_domain(lin.domain()).is_equal(lin):    # on the real iterations
        raise MappingError(f"linearize {port.buffer} ({port.stage}): internal: the linear "
                           f"address differs from the access map")
    sched = isl.PwMultiAff.from_map(sub.apply_range(port.schedule)).get_pw_aff(0).get_pieces()
    sa = sched[0][1]
    sstr = tuple(_val(sa.get_coefficient_val(isl.dim_type.in_, j)) for j in range(len(cnt)))
    extents = tuple(e for _, _, e in cnt)
    # an inner counter run past its domain must keep the schedule strictly increasing in
    # iteration order: its extra iterations take idle cycles before the next level's
    span = 0
    for e, st in zip(extents, sstr, strict=True):
        if e == 1 or not padded:
            continue
        if st <= span:
            k, d = next(((k, d) for k, d in padded if k != ncnt - 1), padded[0])
            raise MappingError(f"linearize {port.buffer} ({port.stage}): counter {VARS[k]} "
                               f"(extent {ext[k]}, from {lo[k]}) is divided by {d}; its extent "
                               f"must be a multiple of {d}, or its rows need idle cycles for "
                               f"the extra iterations")
        span += st * (e - 1)
    return AddressProgram(extents, strides, offset,
                          tuple(deltas_from_strides(extents, strides)), sstr,
                          _val(sa.get_constant_val()))


def from_pipeline(pipeline: ir.Pipeline, latencies: dict[str, int] | None = None,
                  unrolled: dict[str, ir.Stage] | None = None
                  ) -> tuple[Program, dict[str, tuple[int, ...]] | None]:
    """The stencil pipeline ``pipeline`` (:class:`mapper.ir.Pipeline`) as a :class:`Program`
    and the coefficients of its unrolled raster schedule (:mod:`mapper.mapping.schedule`): every
    stage iterates ``(xo, y)`` with ``lanes = unroll`` at ``[1, P]``, ``P`` = cycles per row.
    Read ``i`` of stage ``s`` is the ``i``-th live element of its unrolled kernel
    (:meth:`mapper.ir.Kernel.live_inputs` order); ``latencies`` as in
    :func:`mapper.mapping.schedule.schedule_pipeline`; ``unrolled``: the stages already unrolled by
    :func:`mapper.ir.unroll_stage` (by name; default: unrolled here).  A multi-rate pipeline
    (windows with a rate, ``floor((a*x + d)/b)``) returns ``None`` for the coefficients: rate
    matching picks them."""
    latencies = latencies or {}
    u = pipeline.unroll
    dom = pipeline.domains()
    width = next(iter(pipeline.inputs.values())).shape[0]
    pitch = -(-width // u)
    stages = []

    def coord(var: str, a: int, b: int, d: int) -> str:
        if (a, b) == (1, 1):
            return f"{u}*{var} + {d}" if var == "x" else f"{var} + {d}"
        return f"floor(({a}*{var} + {d})/{b})"

    for name in pipeline.inputs:
        b = dom[name]
        stages.append(Stage(name, (pitch, b.height), origin=(0, b.y0), lanes=u))
    for s in pipeline.stages:
        us = unrolled[s.name] if unrolled else ir.unroll_stage(s, u)
        reads = []
        for iname, idx in us.kernel.live_inputs():
            w = us.windows[iname]
            dx, dy = w.offsets[idx]
            (ax, bx), (ay, by) = w.rate
            reads.append(Read(w.producer, (coord("x", ax, bx, dx), coord("y", ay, by, dy)),
                              clip=u > 1))
        b = dom[s.name]
        x0, x1 = b.x0 // u, -(-b.x1 // u)
        # a floor division of x by b splits the reader's x counter by b (linearize): leave
        # room for whole multiples of b per row
        px = math.lcm(1, *(w.rate[0][1] for w in us.windows.values()))
        stages.append(Stage(s.name, (x1 - x0, b.height), tuple(reads),
                            int(latencies.get(s.name, 0)), (x0, b.y0), u,
                            (px, 1) if px > 1 else ()))
    prog = Program(pipeline.name, tuple(stages))
    if pipeline.multi_rate:
        return prog, None
    return prog, {s.name: (1, pitch) for s in stages}


def with_read_delays(prog: Program, delays: dict[tuple[str, int], int]) -> Program:
    """``prog`` with ``Read.delay`` set for reads ``(stage, read index)``."""
    stages = []
    for s in prog.stages:
        reads = tuple(replace(r, delay=delays.get((s.name, i), r.delay))
                      for i, r in enumerate(s.reads))
        stages.append(replace(s, reads=reads))
    return Program(prog.name, tuple(stages))
