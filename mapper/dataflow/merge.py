"""Global merging of virtual units (VUs) into physical units (PUs) (SARA §III-B1, last
paragraph: "the same problem applied to the VUDFG"; project SARA notes §2.7.4).

After partitioning every VU fits some PU type; merging packs several VUs into one PU to
reduce fragmentation. Merged VUs keep running as independent contexts, so (unlike
partitioning) the merged groups need not be acyclic: the paper does not state the rule and
a context does not wait for its neighbours' contexts.

Input: a :class:`networkx.DiGraph` of VUs (the VUDFG). Node attribute ``cost``: a
:class:`VUCost`. Edge attribute ``width`` (``"scalar"``/``"vector"``, default
``"scalar"``): the width class of the stream from the source VU to the consumer VU. The
VU's ``cost.inputs[c]`` counts all its unique sources of class ``c``, its source VUs in the
graph included.

Cost of a group of VUs on one PU (SARA Table I reductions):

* ops: sum, against ``stages``;
* inputs per class: sum of each VU's sources from outside the VUDFG
  (``cost.inputs[c]`` minus its distinct source VUs of class ``c``) plus the distinct source
  VUs of class ``c`` feeding any member: a broadcast to several members counts once;
* outputs per class: sum;
* registers and lanes: max; op set: union (so these reduce to "each member fits alone");
* units of each kind: at most ``PUConstraints.count``.

Mergers: :func:`traversal_merge` (the traversal partitioner extended with a feasibility
matrix per PU type) and :func:`solver_merge` (a MILP solved by HiGHS through
:func:`scipy.optimize.milp`). Errors: :class:`~cgra.errors.MappingError` for a malformed
VUDFG, a VU no PU type can host, or when the units of a kind run out (``"needs 9 pmu units,
the array has 8"``).
"""
from __future__ import annotations

import time
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np

from cgra.errors import MappingError
from mapper.dataflow.partition import MilpBuilder, PartCost, cost_violations
from mapper.dataflow.units import WIDTH_CLASSES, PUConstraints


@dataclass(frozen=True)
class VUCost:
    """The cost vector of one virtual unit: ``ops`` (stages), ``inputs`` / ``outputs``
    (unique sources / values leaving, per width class), ``registers`` (max live values),
    ``op_set`` (op names) and ``lanes`` (SIMD width in words)."""

    ops: int
    inputs: Mapping[str, int]
    outputs: Mapping[str, int]
    registers: int
    op_set: frozenset[str]
    lanes: int = 1

    @classmethod
    def of(cls, cost: PartCost, lanes: int = 1) -> VUCost:
        """The VU cost of one partition of :mod:`mapper.dataflow.partition`."""
        return cls(cost.ops, dict(cost.inputs), dict(cost.outputs), cost.registers,
                   cost.op_set, lanes)


@dataclass(frozen=True)
class Merge:
    """A merging: ``assignment`` maps each VU to ``(pu kind, unit index)``; ``units`` the
    number of units used per kind (every kind of the PU list, 0 when unused); ``method``
    (``"bfs-fwd"``, ``"milp"``, ...); ``optimal`` True when the solver proved the unit
    count minimal (None for heuristics)."""

    assignment: Mapping[Hashable, tuple[str, int]]
    units: Mapping[str, int]
    method: str
    optimal: bool | None = None

    @property
    def total(self) -> int:
        """Units used over all kinds."""
        return sum(self.units.values())

    def groups(self) -> dict[tuple[str, int], frozenset]:
        """``(kind, index)`` -> the VUs merged into that unit."""
        out: dict[tuple[str, int], set] = {}
        for v, slot in self.assignment.items():
            out.setdefault(slot, set()).add(v)
        return {k: frozenset(s) for k, s in sorted(out.items())}


# ---------------------------------------------------------------------------------------------
# costs
# ---------------------------------------------------------------------------------------------

def _edge_width(graph: nx.DiGraph, u: Hashable, v: Hashable) -> str:
    return graph.edges[u, v].get("width", "scalar")


def _sources(graph: nx.DiGraph, v: Hashable) -> dict[str, set]:
    """Distinct source VUs of ``v`` per width class."""
    out: dict[str, set] = {c: set() for c in WIDTH_CLASSES}
    for s in graph.predecessors(v):
        if s != v:
            out[_edge_width(graph, s, v)].add(s)
    return out


def _validate(graph: nx.DiGraph, pus: Sequence[PUConstraints]) -> dict[Hashable, dict[str, int]]:
    """Check the VUDFG and PU list; each VU's inputs from outside the graph per class."""
    if not pus:
        raise MappingError("merging needs at least one PU type; pass a PUConstraints list")
    kinds = [p.kind for p in pus]
    if len(set(kinds)) != len(kinds):
        raise MappingError(f"PU kinds {kinds} repeat; give each PU type a distinct kind")
    ext = {}
    for v, cost in graph.nodes(data="cost"):
        if not isinstance(cost, VUCost):
            raise MappingError(f"VU {v!r} has no 'cost' attribute of type VUCost")
        for u, w in graph.in_edges(v):
            if _edge_width(graph, u, w) not in WIDTH_CLASSES:
                raise MappingError(f"VUDFG edge {u!r} -> {w!r}: width "
                                   f"{graph.edges[u, w]['width']!r} is not one of "
                                   f"{WIDTH_CLASSES}")
        src = _sources(graph, v)
        ext[v] = {}
        for c in WIDTH_CLASSES:
            e = cost.inputs.get(c, 0) - len(src[c])
            if e < 0:
                raise MappingError(f"VU {v!r}: its cost counts {cost.inputs.get(c, 0)} {c} "
                                   f"inputs but it has {len(src[c])} {c} source VUs in the "
                                   f"VUDFG; count every unique source in cost.inputs")
            ext[v][c] = e
    return ext


def group_cost(graph: nx.DiGraph, members: Sequence[Hashable],
               ext: Mapping[Hashable, Mapping[str, int]] | None = None) -> VUCost:
    """The reduced cost of VUs ``members`` sharing one PU (module docstring)."""
    if ext is None:
        ext = {v: {c: graph.nodes[v]["cost"].inputs.get(c, 0) - len(_sources(graph, v)[c])
                   for c in WIDTH_CLASSES} for v in members}
    costs = [graph.nodes[v]["cost"] for v in members]
    inputs = {}
    for c in WIDTH_CLASSES:
        srcs = set()
        for v in members:
            srcs |= _sources(graph, v)[c]
        inputs[c] = sum(ext[v][c] for v in members) + len(srcs)
    return VUCost(
        ops=sum(k.ops for k in costs),
        inputs=inputs,
        outputs={c: sum(k.outputs.get(c, 0) for k in costs) for c in WIDTH_CLASSES},
        registers=max((k.registers for k in costs), default=0),
        op_set=frozenset().union(*(k.op_set for k in costs)),
        lanes=max((k.lanes for k in costs), default=1),
    )


def fit_violations(cost: VUCost, pu: PUConstraints, name: str = "unit") -> list[str]:
    """Violations of ``pu``'s limits by a (group) cost, each naming ``name``, the resource,
    the amount and the limit (:func:`~mapper.dataflow.partition.cost_violations`, plus the
    lanes); empty when it fits."""
    out = cost_violations(cost, pu, name)
    if cost.lanes > pu.lanes:
        out.append(f"{name}: {cost.lanes} lanes exceed the {pu.lanes} of a {pu.kind}")
    return out


def _feasible(graph: nx.DiGraph, pus: Sequence[PUConstraints],
              ext: Mapping[Hashable, Mapping[str, int]]) -> dict[Hashable, list[str]]:
    """The feasibility matrix: VU -> the kinds that can host it alone (PU list order)."""
    out = {}
    for v in graph.nodes:
        alone = group_cost(graph, [v], ext)
        out[v] = [p.kind for p in pus if not fit_violations(alone, p)]
        if not out[v]:
            why = "; ".join(fit_violations(alone, p, f"VU {v!r}")[0] for p in pus)
            raise MappingError(f"VU {v!r} fits no PU type ({why}); partition it first")
    return out


def _shortage(used: Mapping[str, int], pus: Sequence[PUConstraints]) -> None:
    for p in pus:
        if p.count is not None and used.get(p.kind, 0) > p.count:
            raise MappingError(f"merging needs {used[p.kind]} {p.kind} units, the array has "
                               f"{p.count} (short by {used[p.kind] - p.count}); use a larger "
                               f"array or fewer unrolled VUs")


def check_merge(graph: nx.DiGraph, merge: Merge | Mapping[Hashable, tuple[str, int]],
                pus: Sequence[PUConstraints]) -> list[str]:
    """Legality of a merging: every VU assigned to an existing kind, every unit's group cost
    fits its kind, no kind uses more units (distinct indices) than its count. Returns the
    violations as sentences; empty when legal."""
    ext = _validate(graph, pus)
    assignment = merge.assignment if isinstance(merge, Merge) else merge
    by_kind = {p.kind: p for p in pus}
    out = [f"VU {v!r} is assigned to no unit" for v in graph.nodes if v not in assignment]
    groups: dict[tuple[str, int], list] = {}
    for v, (kind, k) in assignment.items():
        if kind not in by_kind:
            out.append(f"VU {v!r} is assigned to unknown PU kind {kind!r}")
        else:
            groups.setdefault((kind, k), []).append(v)
    for (kind, k), members in sorted(groups.items(), key=lambda t: (t[0][0], t[0][1])):
        out += fit_violations(group_cost(graph, members, ext), by_kind[kind], f"{kind} {k}")
    for p in pus:
        n = len({k for kind, k in groups if kind == p.kind})
        if p.count is not None and n > p.count:
            out.append(f"{n} {p.kind} units used, the array has {p.count}")
    return out


# ---------------------------------------------------------------------------------------------
# traversal merger
# ---------------------------------------------------------------------------------------------

def _vu_order(graph: nx.DiGraph, order: str, direction: str) -> list:
    """A BFS or DFS topological order of the VUDFG's strongly connected components (cycles,
    e.g. CMMC token back edges, kept together in node order), reversed graph for ``bwd``."""
    index = {v: k for k, v in enumerate(graph.nodes)}
    g = graph.reverse(copy=False) if direction == "bwd" else graph
    cond = nx.condensation(g)
    members = {c: sorted(cond.nodes[c]["members"], key=index.__getitem__) for c in cond.nodes}
    key = {c: index[members[c][0]] for c in cond.nodes}
    indeg = dict(cond.in_degree())
    ready = sorted((c for c in cond.nodes if indeg[c] == 0), key=key.__getitem__)
    out: list = []
    while ready:
        c = ready.pop(0)
        out += members[c]
        fresh = []
        for s in sorted(cond.successors(c), key=key.__getitem__):
            indeg[s] -= 1
            if indeg[s] == 0:
                fresh.append(s)
        ready = fresh + ready if order == "dfs" else ready + fresh
    return out


def traversal_merge(graph: nx.DiGraph, pus: Sequence[PUConstraints], order: str = "bfs",
                    direction: str = "fwd") -> Merge:
    """SARA's traversal algorithm extended to merging (§III-B1): walk the VUs in a BFS/DFS
    topological order (``direction`` ``"bwd"``: of the reversed VUDFG); keep one open unit
    per PU kind; add each VU to the first open unit (PU list order) whose kind can host it
    and whose group still fits; otherwise open a unit of the first kind that hosts the VU
    alone and has units left (closing that kind's open unit).

    Returns a :class:`Merge` (method ``"<order>-<direction>"``). Raises MappingError for a
    malformed VUDFG, a VU no kind can host, or when a kind's units run out (``"merging needs
    9 pmu units, the array has 8"``).
    """
    if order not in ("bfs", "dfs") or direction not in ("fwd", "bwd"):
        raise MappingError(f"merge traversal {order!r}/{direction!r} unknown; use order "
                           f"'bfs' or 'dfs' and direction 'fwd' or 'bwd'")
    merged, used = _traverse(graph, pus, order, direction)
    _shortage(used, pus)
    return merged


def _traverse(graph: nx.DiGraph, pus: Sequence[PUConstraints], order: str,
              direction: str) -> tuple[Merge, dict[str, int]]:
    ext = _validate(graph, pus)
    feas = _feasible(graph, pus, ext)
    by_kind = {p.kind: p for p in pus}
    used = {p.kind: 0 for p in pus}
    open_: dict[str, list] = {}
    assignment: dict[Hashable, tuple[str, int]] = {}
    for v in _vu_order(graph, order, direction):
        target = None
        for p in pus:
            grp = open_.get(p.kind)
            if grp and p.kind in feas[v] and not fit_violations(
                    group_cost(graph, [*grp, v], ext), p):
                target = p.kind
                break
        if target is None:
            free = [k for k in feas[v] if by_kind[k].count is None
                    or used[k] < by_kind[k].count]
            target = free[0] if free else feas[v][0]
            open_[target] = []
            used[target] += 1
        open_[target].append(v)
        assignment[v] = (target, used[target] - 1)
    return Merge(assignment, used, f"{order}-{direction}"), used


def best_traversal_merge(graph: nx.DiGraph, pus: Sequence[PUConstraints]) -> Merge:
    """The four traversal variants; the fewest units in total (then the first variant).
    Errors as :func:`traversal_merge` (the shortage of the best variant)."""
    runs = [_traverse(graph, pus, o, d) for o in ("bfs", "dfs") for d in ("fwd", "bwd")]
    merged, used = min(runs, key=lambda r: r[0].total)
    _shortage(used, pus)
    return merged


# ---------------------------------------------------------------------------------------------
# solver merger
# ---------------------------------------------------------------------------------------------

def solver_merge(graph: nx.DiGraph, pus: Sequence[PUConstraints],
                 time_limit_s: float = 10.0) -> Merge:
    """Merging as a MILP (the Tables II/III formulation applied to the VUDFG, with the
    feasibility matrix F of PU types and sum/max/union reductions), solved by HiGHS
    (:func:`scipy.optimize.milp`, single-threaded, deterministic).

    Slots: per kind ``k``, ``min(#VUs k can host, T)`` candidate units, ``T`` the unit total
    of :func:`best_traversal_merge` without unit limits. ``A[v,g]`` binary for each VU and
    slot whose kind hosts it alone (max/union reductions are thereby satisfied); ``u[g]``
    unit used; ``sum_g A[v,g] = 1``, ``A[v,g] <= u[g]``, slots of a kind used in order and
    the ``r``-th VU a kind can host only in its slots ``0..r`` (symmetry); ops
    ``sum ops_v A[v,g] <= stages``; inputs per class ``sum ext_v A[v,g] + sum_s z[s,g] <=
    inputs`` with ``z[s,g] >= A[v,g]`` for each consumer ``v`` of source VU ``s`` (a broadcast
    counts once); outputs ``sum outputs_v A[v,g] <= outputs``; overflow ``o_k >= sum_{g of
    k} u[g] - count_k``. Objective ``(n+1) * sum_k o_k + sum_g u[g]``: any shortage first,
    then the unit total.

    Returns a :class:`Merge` (method ``"milp"``, ``optimal`` True when proved within
    ``time_limit_s`` seconds; the traversal merging, ``optimal=False``, when the time runs
    out with nothing better). Raises MappingError as :func:`traversal_merge`; the shortage
    it names is then the least any merging needs when optimality was proved.
    """
    start = time.monotonic()
    ext = _validate(graph, pus)
    feas = _feasible(graph, pus, ext)
    warm, warm_used = min((_traverse(graph, pus, o, d) for o in ("bfs", "dfs")
                           for d in ("fwd", "bwd")), key=lambda r: r[0].total)
    vus = list(graph.nodes)
    n = len(vus)
    if n == 0:
        return Merge({}, {p.kind: 0 for p in pus}, "milp", optimal=True)
    m = MilpBuilder()
    slots: list[tuple[PUConstraints, int]] = []
    a: dict[tuple[Hashable, int], int] = {}
    u: list[int] = []
    for p in pus:
        hosted = [v for v in vus if p.kind in feas[v]]
        first = len(slots)
        for k in range(min(len(hosted), warm.total)):
            slots.append((p, k))
            u.append(m.var(cost=1))
            if k > 0:
                m.row({u[-2]: 1, u[-1]: -1}, lo=0)
        for r, v in enumerate(hosted):
            for k in range(min(r + 1, len(slots) - first)):
                a[v, first + k] = m.var()
                m.row({a[v, first + k]: 1, u[first + k]: -1}, hi=0)
        if p.count is not None:
            o = m.var(0, n, cost=n + 1)
            m.row({**{u[g]: 1 for g in range(first, len(slots))}, o: -1}, hi=p.count)
    for v in vus:
        m.row({x: 1 for (w, _), x in a.items() if w == v}, 1, 1)
    srcs = {c: {s: [v for v in graph.successors(s) if v != s
                    and _edge_width(graph, s, v) == c] for s in vus} for c in WIDTH_CLASSES}
    for g, (p, _) in enumerate(slots):
        here = [v for v in vus if (v, g) in a]
        m.row({a[v, g]: graph.nodes[v]["cost"].ops for v in here}, hi=p.stages)
        for c in WIDTH_CLASSES:
            row = {a[v, g]: ext[v][c] for v in here if ext[v][c]}
            for cons in srcs[c].values():
                cons = [v for v in cons if (v, g) in a]
                if not cons:
                    continue
                z = m.var()
                row[z] = 1
                for v in cons:
                    m.row({z: 1, a[v, g]: -1}, lo=0)
            if row:
                m.row(row, hi=p.inputs.get(c, 0))
            outs = {a[v, g]: graph.nodes[v]["cost"].outputs.get(c, 0) for v in here
                    if graph.nodes[v]["cost"].outputs.get(c, 0)}
            if outs:
                m.row(outs, hi=p.outputs.get(c, 0))
    res = m.solve(time_limit_s - (time.monotonic() - start))
    if res.x is None:
        _shortage(warm_used, pus)
        return Merge(warm.assignment, warm.units, "milp", optimal=False)
    x = np.round(res.x)
    assignment = {}
    for (v, g), var in a.items():
        if x[var] > 0.5:
            p, k = slots[g]
            assignment[v] = (p.kind, k)
    used = {p.kind: len({k for kind, k in assignment.values() if kind == p.kind}) for p in pus}
    merged = Merge(assignment, used, "milp", optimal=res.status == 0)
    if merged.total > warm.total and res.status != 0:
        _shortage(warm_used, pus)
        return Merge(warm.assignment, warm.units, "milp", optimal=False)
    _shortage(used, pus)
    return merged


__all__ = ["VUCost", "Merge", "group_cost", "fit_violations", "check_merge",
           "traversal_merge", "best_traversal_merge", "solver_merge"]
