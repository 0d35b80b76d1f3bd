"""Compute partitioning of a virtual unit's dataflow graph (SARA §III-B1, Tables I-III).

SARA (Zhang et al., "SARA: Scaling a Reconfigurable Dataflow Accelerator", ISCA 2021,
§III-B "Abstract resource mapping") splits the dataflow graph (DFG) of a virtual unit (VU)
that is too big for one physical unit (PU) into partitions that each fit a PU
(:class:`~mapper.dataflow.units.PUConstraints`), minimizing the number of partitions and
then the connectivity between them.

Input graph (a :class:`networkx.DiGraph`). Node attributes:

* ``kind``: ``"op"`` (partitioned; one pipeline stage each), ``"input"`` (a live-in from
  outside the VU: one external source), ``"output"`` (a live-out: an op feeding it leaves
  its partition), ``"const"`` (duplicated into every partition that uses it: free),
  ``"mem_read"`` (a memory read stream, duplicated into every partition that uses it as
  SARA's pir does with LocalOutAccess; each partition receives the stream through an input
  port, so it counts as one external source of the partition);
* ``op``: the op name (``"add"``, ``"mul"``, ``"select"``, ...), required for ``"op"``;
* ``width``: the width class of the value the node produces, ``"scalar"`` or ``"vector"``
  (default ``"scalar"``).

Edge attribute ``lcd`` (bool, default False): a loop-carried dependency (an accumulation
back edge). LCD edges carry a value (they count as inputs/outputs across partitions) but
are initialized with dummy data, so they are left out of the acyclicity rule (SARA Fig. 7).

Cost of a partition (SARA Table I; the cost functions of pir as summarised in the
project's SARA notes §2.7.2), :class:`PartCost`:

* ``ops``: number of op nodes (one stage each), against ``stages``;
* ``inputs[c]``: unique external sources of width class ``c`` (op nodes of other
  partitions, ``input`` and ``mem_read`` nodes) with a consumer in the partition; a
  broadcast to several consumers counts once;
* ``outputs[c]``: op nodes of width class ``c`` with any consumer outside the partition
  (an op of another partition or an ``output`` node); counted once however many consumers;
* ``registers``: the largest number of values live across a stage boundary when the ops
  run in the partition's topological order (non-LCD edges, ties broken by the graph's node
  order). A value is an external source (defined before stage 1) or an op; it is live
  across the boundary after stage ``k`` when defined at or before ``k`` and used after
  ``k``; a value leaving the partition stays live to the last stage. 0 for one op.
* ``op_set``: the union of op names, a subset of ``ops`` of the PU.

Legality also requires every op node in exactly one partition and an acyclic quotient
graph over the non-LCD edges (Fig. 6 solution 3, Fig. 7 solution 2 are illegal).

Partitioners: :func:`traversal_partition` / :func:`best_traversal` (§III-B1 "traversal-based
partitioning"), :func:`solver_partition` (the MIP of Tables II/III, solved with HiGHS through
:func:`scipy.optimize.milp`), :func:`brute_force_partition` (reference for <= 10 ops).
:func:`retime` inserts retiming partitions (§III-B1 a, "Retiming").

Errors: :class:`~cgra.errors.MappingError` for a malformed graph (a missing or unknown
attribute, a cycle of non-LCD edges), an op the PU does not support, or an op node that
does not fit a PU on its own.
"""
from __future__ import annotations

import time
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import networkx as nx
import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_array

from cgra.errors import MappingError
from cgra.procs import call_in_worker
from mapper.dataflow.units import WIDTH_CLASSES, PUConstraints

#: node kinds of a VU dataflow graph
NODE_KINDS = ("op", "input", "output", "const", "mem_read")
#: node kinds that occupy an input port of each partition consuming them
SOURCE_KINDS = ("op", "input", "mem_read")
#: the four traversal variants, in the order :func:`best_traversal` breaks ties
VARIANTS: tuple[tuple[str, str], ...] = (("bfs", "fwd"), ("bfs", "bwd"),
                                         ("dfs", "fwd"), ("dfs", "bwd"))
#: largest op count :func:`brute_force_partition` accepts (Bell(10) = 115975 set partitions)
BRUTE_FORCE_MAX_OPS = 10


@dataclass(frozen=True)
class PartCost:
    """The cost vector of one partition (module docstring; SARA Table I).

    ``inputs`` / ``outputs`` map every width class of :data:`WIDTH_CLASSES` to a count.
    """

    ops: int
    inputs: Mapping[str, int]
    outputs: Mapping[str, int]
    registers: int
    op_set: frozenset[str]


@dataclass(frozen=True)
class RetimingBuffer:
    """One retiming partition: the value of op ``source`` (level ``source_level`` of the
    quotient DAG) reaches partition ``consumer_part`` (level ``consumer_level``) more than
    the buffer depth later, so a delay partition sits between them (SARA §III-B1 a)."""

    source: Hashable
    consumer_part: int
    source_level: int
    consumer_level: int

    @property
    def gap(self) -> int:
        """Level difference between consumer and producer (partitions, >= 1)."""
        return self.consumer_level - self.source_level


@dataclass(frozen=True)
class Partition:
    """A partitioning of a DFG's op nodes: ``parts`` (a tuple of frozensets of node ids,
    part ``k`` is partition ``k``), the ``method`` that produced it (``"bfs-fwd"``,
    ``"dfs-bwd"``, ``"milp"``, ``"brute-force"``, ...), ``optimal`` (True when the method
    proved the part count and cross-edge count minimal, None for heuristics), ``retiming``
    (the retiming partitions added by :func:`retime`) and ``levels`` (the quotient-DAG level
    of each part, filled by :func:`retime`)."""

    parts: tuple[frozenset, ...]
    method: str
    optimal: bool | None = None
    retiming: tuple[RetimingBuffer, ...] = ()
    levels: tuple[int, ...] = field(default=())

    def __len__(self) -> int:
        return len(self.parts)

    @property
    def units(self) -> int:
        """Partitions plus retiming partitions: the PUs this VU needs."""
        return len(self.parts) + len(self.retiming)

    def part_of(self, node: Hashable) -> int:
        """Index of the part holding op ``node``; MappingError if none holds it."""
        for k, p in enumerate(self.parts):
            if node in p:
                return k
        raise MappingError(f"node {node!r} is in no partition of this {self.method} "
                           f"partitioning; partition every op node")

    def cross_edges(self, graph: nx.DiGraph) -> int:
        """Number of op->op edges (LCD edges included) whose ends lie in different parts."""
        return _cross_edges(graph, self.parts)

    def costs(self, graph: nx.DiGraph) -> list[PartCost]:
        """The cost vector of every part, in part order."""
        index = _validate(graph)
        return [part_cost(graph, p, index) for p in self.parts]


# ---------------------------------------------------------------------------------------------
# graph checks and costs
# ---------------------------------------------------------------------------------------------

def _validate(graph: nx.DiGraph) -> dict[Hashable, int]:
    """Check node/edge attributes and that the non-LCD edges form a DAG; the node order
    (node id -> position in ``graph.nodes``) used to break ties deterministically."""
    for n, a in graph.nodes(data=True):
        kind = a.get("kind")
        if kind not in NODE_KINDS:
            raise MappingError(f"DFG node {n!r}: kind {kind!r} is not one of {NODE_KINDS}; "
                               f"set the node's 'kind' attribute")
        if kind == "op" and not isinstance(a.get("op"), str):
            raise MappingError(f"DFG op node {n!r} has no 'op' name; set e.g. op='add'")
        if a.get("width", "scalar") not in WIDTH_CLASSES:
            raise MappingError(f"DFG node {n!r}: width {a.get('width')!r} is not one of "
                               f"{WIDTH_CLASSES}")
    dag = _forward_graph(graph)
    if not nx.is_directed_acyclic_graph(dag):
        cyc = nx.find_cycle(dag)
        raise MappingError(f"DFG has a cycle of non-LCD edges {[e[:2] for e in cyc]}; mark "
                           f"the loop-carried back edge with lcd=True")
    return {n: k for k, n in enumerate(graph.nodes)}


def _forward_graph(graph: nx.DiGraph) -> nx.DiGraph:
    """The graph without its LCD edges."""
    g = nx.DiGraph()
    g.add_nodes_from(graph.nodes)
    g.add_edges_from((u, v) for u, v, lcd in graph.edges(data="lcd", default=False) if not lcd)
    return g


def _kind(graph: nx.DiGraph, n: Hashable) -> str:
    return graph.nodes[n]["kind"]


def _width(graph: nx.DiGraph, n: Hashable) -> str:
    return graph.nodes[n].get("width", "scalar")


def _op_nodes(graph: nx.DiGraph) -> list:
    return [n for n in graph.nodes if _kind(graph, n) == "op"]


def part_cost(graph: nx.DiGraph, part: Iterable[Hashable],
              index: Mapping[Hashable, int] | None = None) -> PartCost:
    """The :class:`PartCost` of the op nodes ``part`` of ``graph`` (module docstring).

    ``index`` is the node order used to break ties in the register count (default the
    order of ``graph.nodes``). Raises MappingError for a node that is not an op node.
    """
    members = frozenset(part)
    if index is None:
        index = {n: k for k, n in enumerate(graph.nodes)}
    for n in members:
        if n not in graph or _kind(graph, n) != "op":
            raise MappingError(f"partition member {n!r} is not an op node of the DFG; only "
                               f"kind='op' nodes are partitioned")
    inputs = dict.fromkeys(WIDTH_CLASSES, 0)
    outputs = dict.fromkeys(WIDTH_CLASSES, 0)
    sources = set()
    for n in members:
        for s in graph.predecessors(n):
            if s not in members and _kind(graph, s) in SOURCE_KINDS:
                sources.add(s)
    for s in sources:
        inputs[_width(graph, s)] += 1
    leaving = set()
    for n in members:
        if any(c not in members and _kind(graph, c) in ("op", "output")
               for c in graph.successors(n)):
            leaving.add(n)
            outputs[_width(graph, n)] += 1
    # registers: live values across the stage boundaries of the topological order
    sub = nx.DiGraph()
    sub.add_nodes_from(members)
    sub.add_edges_from((u, v) for u in members for v in graph.successors(u)
                       if v in members and not graph.edges[u, v].get("lcd", False))
    order = list(nx.lexicographical_topological_sort(sub, key=lambda n: index[n]))
    pos = {n: k + 1 for k, n in enumerate(order)}
    m = len(order)
    spans = []  # (defined at, last used)
    for s in sources:
        spans.append((0, max(pos[c] for c in graph.successors(s) if c in members)))
    for n in order:
        uses = [pos[c] for c in sub.successors(n)]
        last = m + 1 if n in leaving else max(uses, default=pos[n])
        spans.append((pos[n], last))
    registers = max((sum(1 for d, u in spans if d <= k < u) for k in range(1, m)), default=0)
    return PartCost(ops=len(members), inputs=inputs, outputs=outputs, registers=registers,
                    op_set=frozenset(graph.nodes[n]["op"] for n in members))


def cost_violations(cost: PartCost, pu: PUConstraints, name: str = "part") -> list[str]:
    """Violations of ``pu``'s per-partition limits by ``cost`` (SARA Table I), each a
    sentence naming ``name``, the resource, the amount and the limit; empty when it fits."""
    out = []
    if cost.ops > pu.stages:
        out.append(f"{name}: {cost.ops} ops exceed the {pu.stages} stages of a {pu.kind}")
    for c in WIDTH_CLASSES:
        if cost.inputs.get(c, 0) > pu.inputs.get(c, 0):
            out.append(f"{name}: {cost.inputs[c]} unique {c} input sources exceed the "
                       f"{pu.inputs.get(c, 0)} {c} inputs of a {pu.kind}")
        if cost.outputs.get(c, 0) > pu.outputs.get(c, 0):
            out.append(f"{name}: {cost.outputs[c]} {c} outputs exceed the "
                       f"{pu.outputs.get(c, 0)} {c} outputs of a {pu.kind}")
    if cost.registers > pu.registers:
        out.append(f"{name}: {cost.registers} live values exceed the {pu.registers} "
                   f"pipeline registers of a {pu.kind}")
    missing = cost.op_set - pu.ops
    if missing:
        out.append(f"{name}: ops {sorted(missing)} are not supported by a {pu.kind}")
    return out


def _quotient(graph: nx.DiGraph, parts: Sequence[frozenset]) -> nx.DiGraph:
    """Part-index graph of the non-LCD op->op edges between different parts."""
    where = {n: k for k, p in enumerate(parts) for n in p}
    q = nx.DiGraph()
    q.add_nodes_from(range(len(parts)))
    for u, v, lcd in graph.edges(data="lcd", default=False):
        if not lcd and u in where and v in where and where[u] != where[v]:
            q.add_edge(where[u], where[v])
    return q


def _cross_edges(graph: nx.DiGraph, parts: Sequence[frozenset]) -> int:
    where = {n: k for k, p in enumerate(parts) for n in p}
    return sum(1 for u, v in graph.edges if u in where and v in where and where[u] != where[v])


def _name(k: int, part: frozenset, index: Mapping[Hashable, int]) -> str:
    members = ", ".join(str(n) for n in sorted(part, key=lambda n: index.get(n, -1)))
    return f"part {k} {{{members}}}"


def check(graph: nx.DiGraph, parts: Partition | Sequence[Iterable[Hashable]],
          pu: PUConstraints) -> list[str]:
    """Legality of ``parts`` (a :class:`Partition` or a sequence of node-id collections) for ``graph`` on ``pu``
    (SARA §III-B1, Table I; Fig. 6/7): per part ops <= stages, unique external sources and
    outputs per width class <= ports, live values <= registers, op set within ``pu.ops``;
    every op node in exactly one non-empty part; the quotient graph of the non-LCD edges
    acyclic (a cycle between partitions that remains without the LCD edges deadlocks).

    Returns the violations as sentences naming the part (``part 1 {b, c}``) and the
    resource; an empty list when legal. Raises MappingError for a malformed graph.
    """
    index = _validate(graph)
    if isinstance(parts, Partition):
        parts = parts.parts
    fparts = [frozenset(p) for p in parts]
    out: list[str] = []
    seen: dict[Hashable, int] = {}
    for k, p in enumerate(fparts):
        if not p:
            out.append(f"part {k} is empty; drop it")
        for n in sorted(p, key=lambda n: index.get(n, -1)):
            if n not in graph or _kind(graph, n) != "op":
                out.append(f"part {k}: {n!r} is not an op node of the DFG")
            elif n in seen:
                out.append(f"op {n!r} is in part {seen[n]} and part {k}; put it in one part")
            else:
                seen[n] = k
    for n in _op_nodes(graph):
        if n not in seen:
            out.append(f"op {n!r} is in no part; every op node needs a partition")
    if out:
        return out
    for k, p in enumerate(fparts):
        out += cost_violations(part_cost(graph, p, index), pu, _name(k, p, index))
    q = _quotient(graph, fparts)
    if not nx.is_directed_acyclic_graph(q):
        cyc = [e[0] for e in nx.find_cycle(q)]
        loop = " -> ".join(f"part {k}" for k in [*cyc, cyc[0]])
        out.append(f"{loop} form a cycle that remains without the LCD edges (SARA Fig. 7): "
                   f"each VU waits for all its inputs, so the partitions deadlock")
    return out


def require_legal(graph: nx.DiGraph, parts: Partition | Sequence[Iterable[Hashable]],
                  pu: PUConstraints) -> None:
    """:func:`check`, raising MappingError with the first violation (and how many more)."""
    bad = check(graph, parts, pu)
    if bad:
        more = f" (and {len(bad) - 1} more violations)" if len(bad) > 1 else ""
        raise MappingError(f"illegal partitioning on {pu.kind}: {bad[0]}{more}")


def _prepare(graph: nx.DiGraph, pu: PUConstraints) -> dict[Hashable, int]:
    """Validate the graph and that every op node fits a PU on its own."""
    index = _validate(graph)
    for n in _op_nodes(graph):
        bad = cost_violations(part_cost(graph, [n], index), pu, f"op {n!r} alone")
        if bad:
            raise MappingError(f"{bad[0]}; no partitioning can place it (split the op or "
                               f"choose a larger PU)")
    return index


# ---------------------------------------------------------------------------------------------
# traversal partitioner
# ---------------------------------------------------------------------------------------------

def _order(g: nx.DiGraph, nodes: set, index: Mapping[Hashable, int], order: str,
           recent: Sequence[Hashable] = ()) -> list:
    """Topological order of ``nodes`` in ``g`` (whose other nodes are already placed):
    BFS (Kahn with a FIFO queue) or DFS (Kahn with a LIFO stack, the ready successors of
    the most recently placed nodes ``recent`` on top)."""
    indeg = {n: sum(1 for p in g.predecessors(n) if p in nodes) for n in nodes}
    ready = sorted((n for n in nodes if indeg[n] == 0), key=lambda n: index[n])
    if order == "dfs" and recent:
        rank = {n: k for k, n in enumerate(recent)}  # later = more recent
        near = {s: max(rank[p] for p in g.predecessors(s) if p in rank)
                for s in ready if any(p in rank for p in g.predecessors(s))}
        ready.sort(key=lambda n: (near.get(n, -1), -index[n]))  # stack: top = last
        ready.reverse()
    out = []
    while ready:
        n = ready.pop(0)
        out.append(n)
        fresh = []
        for s in sorted(g.successors(n), key=lambda s: index[s]):
            if s in indeg:
                indeg[s] -= 1
                if indeg[s] == 0:
                    fresh.append(s)
        ready = fresh + ready if order == "dfs" else ready + fresh
    return out


def traversal_partition(graph: nx.DiGraph, pu: PUConstraints, order: str = "bfs",
                        direction: str = "fwd") -> Partition:
    """SARA's traversal-based partitioner (§III-B1): sort the op nodes topologically
    ignoring LCD edges (``order`` ``"bfs"`` or ``"dfs"``; ``direction`` ``"fwd"`` follows the
    dataflow, ``"bwd"`` the reversed graph), walk the list adding each node to the current
    partition until the next one breaks a constraint of ``pu``, then close it and start a
    new one. DFS re-sorts the remaining nodes each time a partition starts, its stack seeded
    with the successors of the last placed nodes. Every part is a contiguous run of a
    topological order, so the quotient graph is acyclic.

    Returns a :class:`Partition` (method ``"<order>-<direction>"``). Raises MappingError for a
    malformed graph, an unknown variant, or an op that fits no PU alone.
    """
    if order not in ("bfs", "dfs") or direction not in ("fwd", "bwd"):
        raise MappingError(f"traversal variant {order!r}/{direction!r} unknown; use order "
                           f"'bfs' or 'dfs' and direction 'fwd' or 'bwd'")
    index = _prepare(graph, pu)
    ops = set(_op_nodes(graph))
    g = _forward_graph(graph).subgraph(ops)
    if direction == "bwd":
        g = g.reverse(copy=True)
    remaining = set(ops)
    seq = _order(g, remaining, index, order)
    parts: list[frozenset] = []
    current: list = []
    placed: list = []
    while remaining:
        n = seq.pop(0)
        trial = frozenset([*current, n])
        if current and cost_violations(part_cost(graph, trial, index), pu):
            parts.append(frozenset(current))
            current = []
            if order == "dfs":
                seq = _order(g, remaining, index, order, placed)
                n = seq.pop(0)
        current.append(n)
        placed.append(n)
        remaining.discard(n)
    if current:
        parts.append(frozenset(current))
    return Partition(tuple(parts), f"{order}-{direction}")


def best_traversal(graph: nx.DiGraph, pu: PUConstraints) -> Partition:
    """All four traversal variants (BFS/DFS x fwd/bwd); the one with the fewest parts, then
    the fewest cross-partition edges, then the first of :data:`VARIANTS`. Its ``method``
    names the winning variant. Errors as :func:`traversal_partition`."""
    results = [traversal_partition(graph, pu, o, d) for o, d in VARIANTS]
    return min(results, key=lambda r: (len(r), r.cross_edges(graph)))


# ---------------------------------------------------------------------------------------------
# solver partitioner
# ---------------------------------------------------------------------------------------------

class MilpBuilder:
    """A small builder of a mixed-integer linear program for :func:`scipy.optimize.milp`
    (shared by the partitioner and :mod:`mapper.dataflow.merge`): ``var`` adds a variable
    (bounds, integrality, objective coefficient) and returns its column, ``row`` a
    constraint ``lo <= sum coefs[j] * x[j] <= hi``, ``solve`` runs HiGHS."""

    def __init__(self) -> None:
        self.lb: list[float] = []
        self.ub: list[float] = []
        self.integer: list[int] = []
        self.cost: list[float] = []
        self.rows: list[tuple[dict[int, float], float, float]] = []

    def var(self, lb: float = 0, ub: float = 1, integer: bool = True, cost: float = 0) -> int:
        self.lb.append(lb)
        self.ub.append(ub)
        self.integer.append(int(integer))
        self.cost.append(cost)
        return len(self.lb) - 1

    def row(self, coefs: Mapping[int, float], lo: float = -np.inf, hi: float = np.inf) -> None:
        self.rows.append((dict(coefs), lo, hi))

    def solve(self, time_limit: float) -> MilpResult:
        """Solve with HiGHS in a forked worker process, killed :data:`HARD_GRACE_S` seconds
        after ``time_limit`` (HiGHS does not check its limit inside every heuristic: an
        80-op partitioning program ran 42 s against a 20 s limit). Programs of at most
        :data:`IN_PROCESS_MAX_VARS` variables are solved in this process (a fork and its
        scheduling cost more than such a solve). Deterministic: HiGHS runs single-threaded
        with a fixed seed."""
        r, c, v = [], [], []
        for k, (coefs, _, _) in enumerate(self.rows):
            for j, a in coefs.items():
                r.append(k)
                c.append(j)
                v.append(a)
        a = coo_array((v, (r, c)), shape=(len(self.rows), len(self.lb))).tocsr()
        limit = max(time_limit, 0.01)
        payload = (np.array(self.cost, dtype=float), a, np.array([lo for _, lo, _ in self.rows]),
                   np.array([hi for _, _, hi in self.rows]), np.array(self.integer),
                   np.array(self.lb, dtype=float), np.array(self.ub, dtype=float), limit)
        if len(self.lb) <= IN_PROCESS_MAX_VARS:
            return MilpResult(*_highs(payload))
        got, answer = call_in_worker(_highs, payload, limit + HARD_GRACE_S,
                                     "dataflow partitioner (HiGHS)")
        return MilpResult(*answer) if got else MilpResult(1, None)


@dataclass(frozen=True)
class MilpResult:
    """What :meth:`MilpBuilder.solve` returns: ``status`` as :func:`scipy.optimize.milp`
    (0 optimal, 1 time limit, 2 infeasible) and ``x`` the best solution found (None if
    none)."""

    status: int
    x: np.ndarray | None


#: seconds a HiGHS worker may run past its ``time_limit`` before it is killed
HARD_GRACE_S = 1.0


#: largest program (variables) :meth:`MilpBuilder.solve` runs without a worker process
IN_PROCESS_MAX_VARS = 1000


def _highs(payload) -> tuple[int, np.ndarray | None]:
    """Solve ``payload`` (see :meth:`MilpBuilder.solve`) with :func:`scipy.optimize.milp`;
    ``(status, x)``."""
    cost, a, lo, hi, integer, lb, ub, limit = payload
    cons = [LinearConstraint(a, lo, hi)] if a.shape[0] else []
    res = milp(cost, constraints=cons, integrality=integer, bounds=Bounds(lb, ub),
               options={"time_limit": limit, "mip_rel_gap": 0.0, "disp": False})
    return int(res.status), res.x


def solver_partition(graph: nx.DiGraph, pu: PUConstraints, max_parts: int | None = None,
                     time_limit_s: float = 10.0) -> Partition:
    """SARA's solver-based partitioner (§III-B1, Tables II/III) as a MILP solved by HiGHS
    (:func:`scipy.optimize.milp`; OR-Tools is not installed in this project's venv).

    With ``P`` candidate partitions (``max_parts``, default the part count of
    :func:`best_traversal`, as pir does) and op nodes ``i``:

    * ``B[i,p]`` binary assignment, ``sum_p B[i,p] = 1``; ``u[p]`` partition used,
      ``B[i,p] <= u[p]``, ``u[p] >= u[p+1]``; symmetry: the ``k``-th op (graph order) only in
      parts ``0..k``;
    * stages: ``sum_i B[i,p] <= stages``;
    * inputs (unique broadcast sources, Table III "input arity" with dest_p): ``x[s,p] >=
      B[j,p] - B[s,p]`` for an op source ``s`` and each consumer ``j`` (``x[s,p] >= B[j,p]``
      for an ``input``/``mem_read`` source), ``sum_{s of class c} x[s,p] <= inputs[c]``;
    * outputs (pir's form of the misprinted output arity): ``y[i,p] >= B[i,p] - B[j,p]`` for
      each op consumer ``j``, ``y[i,p] >= B[i,p]`` when ``i`` feeds an ``output`` node,
      ``sum_{i of class c} y[i,p] <= outputs[c]``;
    * acyclic (partition delays): ``dn[i] = dp[p]`` when ``B[i,p] = 1`` (big-M ``K = P``) and
      ``dn[i] + apart(i,j) <= dn[j]`` on non-LCD op edges, ``apart(i,j) >= B[i,p] - B[j,p]``;
    * feasibility by ops: an op outside ``pu.ops`` is refused before solving (one PU type);
    * registers: the live-value count depends on the order inside a partition and is not
      linear in ``B``; it is enforced exactly by lazy cuts: a solution part that breaks a
      per-part limit is forbidden (``sum_{i in S} B[i,p] - sum_{i not in S} B[i,p] <= |S|-1``
      for every ``p``) and the MILP re-solved.

    Objective: ``(E+1) * sum_p u[p] + sum_{op edges} apart(i,j)`` (parts, then cross edges;
    the retiming term of Table II is left to :func:`retime`). HiGHS runs single-threaded and
    deterministically; there is no warm-start API in scipy, so the traversal result bounds
    ``P`` and is returned (``optimal=False``; it may then use more than ``max_parts`` parts)
    when the time limit ends without a better legal solution. Returns a :class:`Partition` (method ``"milp"``, ``optimal`` True iff HiGHS
    proved optimality of the final, legal solution within ``time_limit_s`` seconds).
    Raises MappingError as :func:`traversal_partition`, or when ``max_parts`` parts cannot
    hold the graph.
    """
    start = time.monotonic()
    if max_parts is not None and max_parts < 1:
        raise MappingError(f"max_parts={max_parts} must be >= 1 partition")
    index = _prepare(graph, pu)
    ops = sorted(_op_nodes(graph), key=lambda n: index[n])
    warm = best_traversal(graph, pu)
    npart = len(warm) if max_parts is None else max_parts
    if not ops:
        return Partition((), "milp", optimal=True)
    op_edges = [(u, v, bool(lcd)) for u, v, lcd in graph.edges(data="lcd", default=False)
                if u != v and _kind(graph, u) == "op" and _kind(graph, v) == "op"]
    weight = len(op_edges) + 1
    m = MilpBuilder()
    pos = {n: k for k, n in enumerate(ops)}
    parts_of = {n: range(min(pos[n], npart - 1) + 1) for n in ops}
    b = {(n, p): m.var() for n in ops for p in parts_of[n]}
    u = [m.var(cost=weight) for _ in range(npart)]
    for n in ops:
        m.row({b[n, p]: 1 for p in parts_of[n]}, 1, 1)
        for p in parts_of[n]:
            m.row({b[n, p]: 1, u[p]: -1}, hi=0)
    for p in range(npart - 1):
        m.row({u[p]: 1, u[p + 1]: -1}, lo=0)

    def bv(n, p) -> int | None:
        return b.get((n, p))

    for p in range(npart):
        m.row({b[n, p]: 1 for n in ops if (n, p) in b}, hi=pu.stages)
        ins: dict[str, dict[int, float]] = {c: {} for c in WIDTH_CLASSES}
        for s in graph.nodes:
            if _kind(graph, s) not in SOURCE_KINDS:
                continue
            cons = [j for j in graph.successors(s) if _kind(graph, j) == "op" and j != s
                    and bv(j, p) is not None]
            if not cons:
                continue
            x = m.var()
            ins[_width(graph, s)][x] = 1
            for j in cons:
                row = {x: 1, bv(j, p): -1}
                if _kind(graph, s) == "op" and bv(s, p) is not None:
                    row[bv(s, p)] = 1
                m.row(row, lo=0)
        outs: dict[str, dict[int, float]] = {c: {} for c in WIDTH_CLASSES}
        for n in ops:
            if bv(n, p) is None:
                continue
            y = m.var()
            outs[_width(graph, n)][y] = 1
            for j in graph.successors(n):
                if _kind(graph, j) == "output":
                    m.row({y: 1, bv(n, p): -1}, lo=0)
                elif _kind(graph, j) == "op" and j != n:
                    row = {y: 1, bv(n, p): -1}
                    if bv(j, p) is not None:
                        row[bv(j, p)] = 1
                    m.row(row, lo=0)
        for c in WIDTH_CLASSES:
            if ins[c]:
                m.row(ins[c], hi=pu.inputs.get(c, 0))
            if outs[c]:
                m.row(outs[c], hi=pu.outputs.get(c, 0))
    big = npart
    dp = [m.var(0, npart - 1) for _ in range(npart)]
    dn = {n: m.var(0, npart - 1) for n in ops}
    for (n, p), x in b.items():
        m.row({dn[n]: 1, dp[p]: -1, x: big}, hi=big)
        m.row({dp[p]: 1, dn[n]: -1, x: big}, hi=big)
    for i, j, lcd in op_edges:
        a = m.var(cost=1)
        for p in range(npart):
            row = {a: 1}
            if bv(i, p) is not None:
                row[bv(i, p)] = -1
            if bv(j, p) is not None:
                row[bv(j, p)] = row.get(bv(j, p), 0) + 1
            if len(row) > 1:
                m.row(row, lo=0)
        if not lcd:
            m.row({dn[i]: 1, a: 1, dn[j]: -1}, hi=0)
    best = warm
    optimal = False
    while True:
        left = time_limit_s - (time.monotonic() - start)
        if left <= 0:
            break
        res = m.solve(left)
        if res.x is None:
            if res.status == 2 and max_parts is not None:
                raise MappingError(f"the DFG's {len(ops)} ops need more than max_parts="
                                   f"{max_parts} {pu.kind} partitions; raise max_parts")
            break
        parts = []
        for p in range(npart):
            members = frozenset(n for n in ops if (n, p) in b and res.x[b[n, p]] > 0.5)
            if members:
                parts.append(members)
        bad = [p for p in parts if cost_violations(part_cost(graph, p, index), pu)]
        if not bad:
            cand = Partition(tuple(parts), "milp", optimal=res.status == 0)
            key = (len(cand), cand.cross_edges(graph))
            if res.status == 0 or key < (len(best), best.cross_edges(graph)):
                best = cand
            optimal = res.status == 0
            break
        for s in bad:  # lazy cut: forbid this exact set as a part
            for p in range(npart):
                row = {b[n, p]: (1 if n in s else -1) for n in ops if (n, p) in b}
                if all(n in parts_of and p in parts_of[n] for n in s):
                    m.row(row, hi=len(s) - 1)
    if best is warm:
        return Partition(warm.parts, "milp", optimal=False)
    return Partition(best.parts, "milp", optimal=optimal)


# ---------------------------------------------------------------------------------------------
# brute force reference
# ---------------------------------------------------------------------------------------------

def _set_partitions(n: int, max_block: int):
    """Restricted growth strings of length ``n`` (every set partition of ``range(n)`` once),
    blocks no larger than ``max_block``."""
    rgs = [0] * n
    sizes = [0] * n

    def rec(k: int, blocks: int):
        if k == n:
            yield rgs, blocks
            return
        for b in range(blocks + 1):
            if sizes[b] < max_block:
                rgs[k] = b
                sizes[b] += 1
                yield from rec(k + 1, max(blocks, b + 1))
                sizes[b] -= 1

    yield from rec(0, 0)


def brute_force_partition(graph: nx.DiGraph, pu: PUConstraints) -> Partition:
    """The reference optimum for small graphs: enumerate every set partition of the op nodes
    (restricted growth strings, blocks of at most ``pu.stages`` ops), keep the legal ones
    (:func:`check`), return the one with the fewest parts, then fewest cross edges (then the
    first in enumeration order). ``optimal`` is True.

    Raises MappingError for more than :data:`BRUTE_FORCE_MAX_OPS` op nodes, or as
    :func:`traversal_partition`.
    """
    index = _prepare(graph, pu)
    ops = sorted(_op_nodes(graph), key=lambda n: index[n])
    if len(ops) > BRUTE_FORCE_MAX_OPS:
        raise MappingError(f"brute force enumerates set partitions of at most "
                           f"{BRUTE_FORCE_MAX_OPS} ops, the DFG has {len(ops)}; use "
                           f"solver_partition")
    fits: dict[frozenset, bool] = {}
    best: tuple | None = None
    for rgs, blocks in _set_partitions(len(ops), max(pu.stages, 1)):
        if best is not None and blocks > best[0]:
            continue
        parts = [frozenset(ops[k] for k in range(len(ops)) if rgs[k] == blk)
                 for blk in range(blocks)]
        ok = True
        for p in parts:
            if p not in fits:
                fits[p] = not cost_violations(part_cost(graph, p, index), pu)
            if not fits[p]:
                ok = False
                break
        if not ok or not nx.is_directed_acyclic_graph(_quotient(graph, parts)):
            continue
        key = (blocks, _cross_edges(graph, parts))
        if best is None or key < best[:2]:
            best = (*key, tuple(parts))
    if best is None:
        return Partition((), "brute-force", optimal=True)
    return Partition(best[2], "brute-force", optimal=True)


# ---------------------------------------------------------------------------------------------
# retiming
# ---------------------------------------------------------------------------------------------

def retime(graph: nx.DiGraph, partition: Partition | Sequence[Iterable[Hashable]],
           buffer_depth: int) -> Partition:
    """Retiming partitions (SARA §III-B1 a): the level of each part is its longest-path depth
    in the quotient DAG of the non-LCD edges (sources at level 0, one level per partition);
    a value of op ``i`` (part at level ``l_i``) consumed in part ``q`` (level ``l_q``) whose
    gap ``l_q - l_i`` exceeds ``buffer_depth`` (levels of skew the consumer's input buffer
    absorbs) gets one retiming partition; a broadcast of ``i`` to several ops of ``q``
    counts once (the Table II retiming term, one per (value, consumer part)).

    Returns a :class:`Partition` with the same parts, ``levels`` and ``retiming`` filled
    (``units`` counts both). Raises MappingError for ``buffer_depth < 1`` or an illegal
    partitioning (the quotient must be acyclic).
    """
    if buffer_depth < 1:
        raise MappingError(f"retiming buffer depth {buffer_depth} must be >= 1 partition "
                           f"level")
    if isinstance(partition, Partition):
        base = partition
    else:
        base = Partition(tuple(frozenset(p) for p in partition), "given")
    index = _validate(graph)
    q = _quotient(graph, base.parts)
    if not nx.is_directed_acyclic_graph(q):
        raise MappingError("cannot retime: the partitions form a cycle without the LCD "
                           "edges; check() names it")
    level = dict.fromkeys(q.nodes, 0)
    for k in nx.topological_sort(q):
        for s in q.successors(k):
            level[s] = max(level[s], level[k] + 1)
    where = {n: k for k, p in enumerate(base.parts) for n in p}
    buffers = set()
    for u, v, lcd in graph.edges(data="lcd", default=False):
        if lcd or u not in where or v not in where or where[u] == where[v]:
            continue
        if level[where[v]] - level[where[u]] > buffer_depth:
            buffers.add(RetimingBuffer(u, where[v], level[where[u]], level[where[v]]))
    ordered = tuple(sorted(buffers, key=lambda r: (index[r.source], r.consumer_part)))
    return Partition(base.parts, base.method, base.optimal, ordered,
                     tuple(level[k] for k in range(len(base.parts))))


__all__ = ["NODE_KINDS", "VARIANTS", "BRUTE_FORCE_MAX_OPS", "PartCost", "Partition",
           "RetimingBuffer", "part_cost", "cost_violations", "check", "require_legal",
           "traversal_partition", "best_traversal", "solver_partition",
           "brute_force_partition", "retime"]
