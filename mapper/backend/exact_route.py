"""Exact routing of small problems: minimum wirelength, or a proof of unroutability with a cut.

The quality reference for PathFinder (:mod:`mapper.backend.route`) on small arrays, and the
explanation :func:`mapper.backend.route.route_width` gives when PathFinder does not converge.

**Problem.** Nets with a fixed source node and fixed sink nodes (one candidate each: core
port to core port) on one :class:`~mapper.backend.route.RoutingGraph`. Find, for every net, a tree
from its source to all its sinks along graph edges such that every routing node carries at
most one net, with minimum total wirelength -- the number of switch-box input nodes
(``SB_IN``, one tile-to-tile track segment each) used, the metric of
:attr:`mapper.backend.route.RoutingResult.wirelength` -- or prove that no such routing exists.
The nodes a route may use are PathFinder's: switch-box nodes, register muxes (the register
bypass), mandatory pipeline registers, and the net's own source and sink ports; a
bypassable ``REG`` node is never used as a wire (enabling one is the pipelining pass's
decision). Registers, register counts (``RouteNet.regs``) and register sinks or sources
are not modelled: such nets raise :class:`~cgra.errors.RoutingError`.

**Formulation** (:func:`build_program`): the multi-commodity flow formulation of the
directed Steiner tree problem (Wong, "A dual ascent approach for Steiner tree problems on a
directed graph", Math. Programming 28, 1984; Goemans & Myung, "A catalog of Steiner tree
formulations", Networks 23, 1993, the directed multicommodity model), one commodity per
(net, sink), with the nets coupled by node capacities as in exact FPGA detailed routing
(Nam, Sakallah & Rutenbar, "A new FPGA detailed routing approach via search-based Boolean
satisfiability", IEEE TCAD 21(6), 2002: node-disjoint routes per net, and a proof of
unroutability when none exist). Variables, for net ``k`` and edge ``e = (u, v)`` of its
region:

* ``y[k, e]`` in {0, 1}: ``u`` drives ``v`` in net ``k``'s tree;
* ``f[k, j, e]`` in [0, 1]: flow of commodity (k, j), one unit from the source of ``k`` to
  its ``j``-th sink.

Constraints: flow conservation for every commodity (out - in = 1 at the source, -1 at the
sink, 0 elsewhere); ``f[k, j, e] <= y[k, e]``; and for every node ``v``
``sum_k sum_{e into v} y[k, e] <= 1`` -- one net per node (capacity 1) and one driver per
node inside a net, so the union of a net's paths is a tree and every multiplexer gets one
select. Objective: ``min sum_k sum_{e into an SB_IN} y[k, e]``. With integral ``y`` each
node has at most one parent per net, so a sink's path is found by walking parents back to
the source; the flows are then integral too. A net with one sink needs no separate flow
(its ``y`` are its flow). Chains of nodes with one usable successor whose successor has one
usable predecessor (``SB_OUT -> RMUX -> SB_IN`` of the next tile) are one program node
(:class:`Wires`): on an 8x8, 10-net program this halves the variables (115 k -> 58 k) and
cuts the solve from 9.7 s to 3.0 s.

**Region (``margin``).** Net ``k``'s variables are restricted to the nodes in the bounding
box of its terminals' tiles grown by ``margin`` tiles (``None``: the whole graph), then to the
nodes on some source-to-sink path inside it. A result with status ``optimal`` is therefore
*optimal within the margin*: no routing whose every net stays inside its box is shorter; a
larger margin can only shorten it (the regions nest). When the program is infeasible
within the margin, the whole graph is tried before anything is declared unroutable.

**Solvers** (measured by ``bench/bench_exact_route.py`` on 2 cores, the same programs):
``highs`` -- :func:`scipy.optimize.milp` (HiGHS branch-and-cut; ``y`` binary, ``f``
continuous, ``mip_rel_gap`` 0, ``time_limit``) -- and ``z3`` -- ``z3.Optimize`` with
Boolean ``y`` and ``f``, pseudo-Boolean constraints and the wirelength as soft constraints
(MaxSAT), bounded by z3's ``timeout``. HiGHS is the default: on seven 4x4 programs
(260-9405 variables) it takes 0.04-0.44 s; z3 takes 0.16-1.6 s on the five small ones
(4-10x slower) and stops at its 60 s cap on the two with spread nets (4450 and 9405
variables: best wirelength 32 and 70 against the optimum 11 and 26 that HiGHS proves in
0.21 and 0.44 s). The LP relaxation of this formulation is tight on such programs (on
the 8x8, 10-net program above the root LP bound is the optimum and HiGHS branches on no
node); z3's search does not use it. HiGHS runs in a forked worker process: it
does not check its ``time_limit`` inside every heuristic (a root "central rounding" on an
8x8, 25-net program ran 128 s past a 20 s limit), so the worker is killed
:data:`HARD_GRACE_S` after the limit. Every solver call is bounded by what is left of
``timeout_s``; a call that runs out returns status ``timeout`` with the best routing found,
if any (then not proven minimal).

**Quality and size** (same benchmark): on 80 random netlists (4x4 and 8x8, 5 and 2 tracks,
3-10 nets of 1-3 sinks, margin 2) every case is solved to optimality and the exact
wirelength is never above PathFinder's; PathFinder's gap is 4.0 % on average and 13.6 % at
worst, in 1-14 ms against 0.06-4.5 s on average (19.7 s at worst) for the exact router.
Practical limit (a solve within 60 s): with local nets (N*N/8 nets, sinks within 3 tiles)
up to 32x32 (128 nets, 0.7 M variables, 41 s), not 40x40 (200 nets, 1.1 M variables); with
nets spread over an 8x8 array up to 20 nets (78 k variables, 4.3 s), not 25 (106 k
variables: a congested program whose LP bound is far from its integer optimum).

**Unroutability certificate** (:class:`Cut`, :func:`find_cut`). When the program is
infeasible on the whole graph, a cut is derived by Menger's theorem: for a set ``N`` of nets
and, for each, a set of its sinks, a minimum vertex cut ``C`` between a super-source joined to
their sources and a super-sink joined to those sinks is computed by max-flow
(:func:`networkx.minimum_cut` on the node-split graph, terminal ports uncuttable). If
``|C| < |N|`` it proves unroutability: removing ``C`` disconnects every net of ``N`` from its
listed sinks, so each of the ``|N|`` node-disjoint trees contains a node of ``C``, which needs
``|N|`` nodes. The candidate sets ``N`` are the nets crossing each straight boundary between
two columns or rows (in one direction), then all nets; failing those, a minimal infeasible
subset of the nets (deletion filter, one feasibility program per net) with all its sinks.
Every reported cut is checked again by graph search before it is returned
(:func:`verify_cut`). The certificate is this counting form (each net needs >= 1 node of the
cut); a conflict with no such cut (e.g. nets that fit a cut in number but not in track
assignment) is reported as the minimal conflicting net set without a cut.

"""
from __future__ import annotations

import random
import time
from collections import deque
from dataclasses import dataclass, field
from itertools import pairwise

import networkx as nx
import numpy as np

from canal.routing import RoutingGraph
from cgra.errors import InternalError, RoutingError
from cgra.procs import call_in_worker
from mapper.backend.nets import RouteNet, Terminal

STATUSES = ("optimal", "unroutable", "timeout")
SOLVERS = ("highs", "z3")

#: route_width explains a non-converged PathFinder run with the exact router on graphs of
#: at most this many tiles (8x8) ...
EXPLAIN_MAX_TILES = 64
#: ... within this many seconds (solve and cut search together)
EXPLAIN_TIMEOUT_S = 5.0

Routes = dict[str, dict[Terminal, list[str]]]


# --------------------------------------------------------------------------- records

@dataclass
class Cut:
    """An unroutability certificate: removing ``nodes`` (routing node ids) from the graph
    disconnects every net of ``nets`` from its sinks ``sinks[net]``; every node carries one
    net, so routing them needs ``len(nets)`` nodes of the cut: ``len(nodes) < len(nets)``
    proves the nets unroutable."""

    nodes: list[str]
    nets: list[str]
    sinks: dict[str, list[Terminal]] = field(default_factory=dict)

    def message(self) -> str:
        k, m = len(self.nets), len(self.nodes)
        names = ", ".join(self.nets)
        if m == 0:
            return (f"unroutable: {k} net(s) ({names}) have a sink that no path reaches from "
                    f"their source; capacity 0 < {k}. Fix: check the core port connections")
        return (f"unroutable: {k} nets ({names}) must cross these {m} routing nodes "
                f"[{', '.join(self.nodes)}]; capacity {m} < {k}. Fix: more tracks, or spread "
                f"the placement")


@dataclass
class ExactResult:
    """Result of :func:`exact_route`.

    ``status``: ``optimal`` (``routes`` has minimum ``wirelength`` within ``margin``),
    ``unroutable`` (proved on the whole graph; ``cut`` the certificate when one was found,
    ``conflict`` the nets that cannot be routed together) or ``timeout`` (not proven;
    ``routes`` the best routing found, possibly empty). ``routes``: net -> sink terminal ->
    node ids from the source to the sink (the shape of :func:`mapper.backend.route.route_width`);
    ``wirelength``: SB_IN nodes used (``None`` without routes); ``lower_bound``: the
    solver's bound on the minimum wirelength (HiGHS only); ``seconds``: wall time;
    ``margin``: the margin of the last program solved (``None`` = whole graph)."""

    status: str
    routes: Routes
    wirelength: int | None
    seconds: float
    solver: str
    margin: int | None
    cut: Cut | None = None
    conflict: list[str] = field(default_factory=list)
    lower_bound: float | None = None

    @property
    def proven(self) -> bool:
        """True when the status is a proof (optimal or unroutable), not a timeout."""
        return self.status != "timeout"

    def message(self) -> str:
        """One sentence for the user: the answer and its certificate."""
        if self.status == "optimal":
            where = "" if self.margin is None else f" (optimal within a margin of {self.margin}"\
                                                   f" tiles)"
            return (f"an exact routing exists: total wirelength {self.wirelength}{where}, "
                    f"found in {self.seconds:.2f} s")
        if self.status == "unroutable":
            if self.cut is not None:
                return self.cut.message()
            return (f"unroutable: nets ({', '.join(self.conflict)}) cannot be routed together "
                    f"(proved by the {self.solver} solver; no cut with fewer nodes than nets "
                    f"separates them). Fix: more tracks, or spread the placement")
        if self.routes:
            return (f"a legal routing exists (wirelength {self.wirelength}, not proven minimal "
                    f"within {self.seconds:.1f} s)")
        return f"the exact router found no answer within {self.seconds:.1f} s"


# --------------------------------------------------------------------------- program

@dataclass
class Wires:
    """The usable part of a routing graph with its chains contracted: a chain is a maximal
    run of nodes where each has one usable successor and the next one usable predecessor
    (``SB_OUT -> RMUX -> SB_IN`` of the neighbour tile once bypassable registers are left
    out); a route uses a chain whole or not at all, so the program has one variable per chain
    edge instead of one per node edge. ``members[c]``: node indices of chain ``c`` in path
    order; ``of``: node index -> chain; ``succ`` / ``pred``: chain adjacency; ``cost``: SB_IN
    nodes in the chain; ``box``: (x0, x1, y0, y1) of its tiles; ``port``: the chain is a
    core port (never merged: ports are terminals)."""

    members: list[list[int]]
    of: dict[int, int]
    succ: list[list[int]]
    pred: list[list[int]]
    cost: list[int]
    box: list[tuple[int, int, int, int]]
    port: list[bool]


def contract(graph: RoutingGraph) -> Wires:
    """:class:`Wires` of ``graph``: usable nodes are switch-box nodes, register muxes,
    mandatory registers and core ports (PathFinder's wires; module docstring)."""
    kind, n = graph.kind, len(graph.ids)
    usable = [k in ("SB", "RMUX", "PORT") for k in kind]
    for i in graph.mandatory_regs:
        usable[i] = True
    asucc = [[v for v in graph.succ[u] if usable[v]] if usable[u] else [] for u in range(n)]
    apred: list[list[int]] = [[] for _ in range(n)]
    for u in range(n):
        for v in asucc[u]:
            apred[v].append(u)

    def link(u: int) -> int | None:
        """The node ``u`` merges with (its only successor, whose only predecessor is u)."""
        if kind[u] == "PORT" or len(asucc[u]) != 1:
            return None
        v = asucc[u][0]
        return v if kind[v] != "PORT" and len(apred[v]) == 1 else None

    members: list[list[int]] = []
    of: dict[int, int] = {}
    heads = [u for u in range(n) if usable[u]
             and not (len(apred[u]) == 1 and link(apred[u][0]) == u)]
    rest = [u for u in range(n) if usable[u]]      # nodes of fully mergeable cycles, if any
    for h in heads + rest:
        if h in of:
            continue
        chain = [h]
        of[h] = len(members)
        while (v := link(chain[-1])) is not None and v not in of:
            of[v] = len(members)
            chain.append(v)
        members.append(chain)
    succ = [sorted({of[v] for v in asucc[c[-1]]}) for c in members]
    pred: list[list[int]] = [[] for _ in members]
    for c, vs in enumerate(succ):
        for v in vs:
            pred[v].append(c)
    cost = [sum(1 for i in c if graph.is_sb_in(graph.ids[i])) for c in members]
    box = [(min(graph.xy[i][0] for i in c), max(graph.xy[i][0] for i in c),
            min(graph.xy[i][1] for i in c), max(graph.xy[i][1] for i in c)) for c in members]
    port = [kind[c[0]] == "PORT" for c in members]
    return Wires(members, of, succ, pred, cost, box, port)


@dataclass
class Program:
    """The 0-1 program of one routing problem over :class:`Wires` chains (module
    docstring). Variables ``0..n_y-1`` are the ``y`` (``y_edge[i] = (net index, chain u,
    chain v)``), ``n_y..n_y+n_f-1`` the ``f`` (``f_y[i]`` the ``y`` it is bounded by). A net
    with one sink needs no separate flow: its ``y`` are the flow of its one commodity.
    ``cons``: conservation rows ``(vars, coefficients, rhs)``; ``caps``: chain rows
    ``sum <= 1``; ``cost``: the SB_IN nodes of the chain a ``y`` enters. ``disconnected``:
    nets with a sink no path reaches inside the region (the program is then infeasible
    without solving). ``whole``: every region is the whole graph."""

    n_y: int
    y_edge: list[tuple[int, int, int]]
    f_y: list[int]
    cons: list[tuple[list[int], list[int], int]]
    caps: list[list[int]]
    cost: np.ndarray
    disconnected: list[int]
    whole: bool

    @property
    def n_f(self) -> int:
        return len(self.f_y)

    @property
    def n_vars(self) -> int:
        return self.n_y + len(self.f_y)


def _check_nets(graph: RoutingGraph, nets: list[RouteNet]) -> None:
    """Core-to-core nets only, each source used once; raises :class:`RoutingError`."""
    seen: dict[str, str] = {}
    for n in nets:
        if n.reg_source is not None or n.reg_sinks or n.regs:
            what = ("is driven by register " + n.reg_source if n.reg_source is not None
                    else "has a register sink" if n.reg_sinks else "has pinned register counts")
            raise RoutingError(f"net {n.name} {what}: the exact router handles core-to-core nets "
                               f"only (fixed source and sink ports); route it with PathFinder")
        if n.source not in graph.index:
            raise RoutingError(f"net {n.name}: source {n.source} is not in the {graph.width}-bit "
                               f"routing graph {graph.source}")
        for term, cands in n.sinks:
            if len(cands) != 1:
                raise RoutingError(f"net {n.name}: sink {term[0]}.{term[1]} has {len(cands)} "
                                   f"candidate nodes; the exact router handles core-to-core "
                                   f"nets only (one fixed sink node each)")
            if cands[0] not in graph.index:
                raise RoutingError(f"net {n.name}: sink node {cands[0]} is not in the "
                                   f"{graph.width}-bit routing graph {graph.source}")
        if graph.kind[graph.index[n.source]] != "PORT":
            raise RoutingError(f"net {n.name}: source {n.source} is not a core port; the exact "
                               f"router handles core-to-core nets only")
        if n.source in seen:
            raise RoutingError(f"nets {seen[n.source]} and {n.name} both start at {n.source}; a "
                               f"routing node carries one net")
        seen[n.source] = n.name


def _reach(starts: list[int], nbrs: list[list[int]], ok: set[int], stop: set[int]) -> set[int]:
    """Nodes of ``ok`` reachable from ``starts`` along ``nbrs``, not expanding ``stop``."""
    seen = set(starts)
    todo = deque(starts)
    while todo:
        u = todo.popleft()
        if u in stop and u not in starts:
            continue
        for v in nbrs[u]:
            if v in ok and v not in seen:
                seen.add(v)
                todo.append(v)
    return seen


def build_program(graph: RoutingGraph, nets: list[RouteNet], margin: int | None,
                  wires: Wires | None = None) -> Program:
    """The program of the module docstring for ``nets`` (checked core-to-core nets) with each
    net's region the chains inside its terminals' bounding box grown by ``margin`` tiles
    (``None``: whole graph)."""
    w = wires if wires is not None else contract(graph)
    idx, xy = graph.index, graph.xy
    gx0 = min(b[0] for b in w.box)
    gx1 = max(b[1] for b in w.box)
    gy0 = min(b[2] for b in w.box)
    gy1 = max(b[3] for b in w.box)
    wire_chains = [c for c in range(len(w.members)) if not w.port[c]]
    y_edge: list[tuple[int, int, int]] = []
    y_rows: list[tuple[list[int], list[int], int]] = []
    f_rows: list[tuple[list[int], list[int], int]] = []
    f_y: list[int] = []
    into: dict[int, list[int]] = {}
    disconnected: list[int] = []
    whole = True
    for k, net in enumerate(nets):
        s = w.of[idx[net.source]]
        sinks = list(dict.fromkeys(w.of[idx[c[0]]] for _, c in net.sinks))
        if margin is None:
            x0, x1, y0, y1 = gx0, gx1, gy0, gy1
        else:
            tx = [xy[idx[net.source]][0]] + [xy[w.members[t][0]][0] for t in sinks]
            ty = [xy[idx[net.source]][1]] + [xy[w.members[t][0]][1] for t in sinks]
            x0, x1 = min(tx) - margin, max(tx) + margin
            y0, y1 = min(ty) - margin, max(ty) + margin
            whole = whole and x0 <= gx0 and y0 <= gy0 and x1 >= gx1 and y1 >= gy1
        ok = {c for c in wire_chains if x0 <= w.box[c][0] and w.box[c][1] <= x1
              and y0 <= w.box[c][2] and w.box[c][3] <= y1}
        ok.update(sinks)
        sinkset = set(sinks)
        fwd = _reach([s], w.succ, ok, sinkset)
        if not sinkset <= fwd:
            disconnected.append(k)
            continue
        bwd = _reach(sinks, w.pred, ok | {s}, {s})
        nodes = fwd & bwd
        yvar: dict[tuple[int, int], int] = {}
        for u in nodes:
            if u in sinkset:
                continue
            for v in w.succ[u]:
                if v in nodes and v != s:
                    yvar[(u, v)] = len(y_edge)
                    y_edge.append((k, u, v))
                    into.setdefault(v, []).append(yvar[(u, v)])
        for t in sinks:
            com = _reach([t], w.pred, nodes, {s}) if len(sinks) > 1 else nodes
            out_of: dict[int, list[int]] = {}
            in_to: dict[int, list[int]] = {}
            for (u, v), i in yvar.items():
                if u in com and v in com:
                    if len(sinks) > 1:
                        i = len(f_y)
                        f_y.append(yvar[(u, v)])
                    out_of.setdefault(u, []).append(i)
                    in_to.setdefault(v, []).append(i)
            rows = f_rows if len(sinks) > 1 else y_rows
            for v in com:
                rhs = 1 if v == s else -1 if v == t else 0
                outs, ins = out_of.get(v, []), in_to.get(v, [])
                rows.append((outs + ins, [1] * len(outs) + [-1] * len(ins), rhs))
    n_y = len(y_edge)
    cons = y_rows + [([n_y + i for i in vs], cs, rhs) for vs, cs, rhs in f_rows]
    caps = [vs for vs in into.values() if len(vs) > 1]
    cost = np.zeros(n_y + len(f_y))
    for i, (_, _, v) in enumerate(y_edge):
        cost[i] = w.cost[v]
    return Program(n_y, y_edge, f_y, cons, caps, cost, disconnected, whole)


# --------------------------------------------------------------------------- solvers

@dataclass
class _Solution:
    status: str                  # optimal | infeasible | timeout
    y: np.ndarray | None         # 0/1 values of the y variables (None: no solution)
    bound: float | None = None


def _solve_highs(prog: Program, time_limit: float, feasibility: bool = False) -> _Solution:
    import scipy.optimize  # noqa: F401  (imported once here, inherited by the forked workers)
    from scipy.sparse import coo_array  # deferred: loads scipy, numpy, cython_runtime only when called

    rows, cols, vals, lo, hi = [], [], [], [], []
    r = 0
    for vars_, coefs, rhs in prog.cons:
        rows += [r] * len(vars_)
        cols += vars_
        vals += coefs
        lo.append(rhs)
        hi.append(rhs)
        r += 1
    for fi, yi in enumerate(prog.f_y):
        rows += [r, r]
        cols += [prog.n_y + fi, yi]
        vals += [1, -1]
        lo.append(-np.inf)
        hi.append(0)
        r += 1
    for vs in prog.caps:
        rows += [r] * len(vs)
        cols += vs
        vals += [1] * len(vs)
        lo.append(-np.inf)
        hi.append(1)
        r += 1
    n = prog.n_vars
    a = coo_array((np.array(vals, dtype=float), (np.array(rows), np.array(cols))),
                  shape=(r, n)).tocsr()
    integrality = np.zeros(n)
    integrality[:prog.n_y] = 1
    cost = np.zeros(n) if feasibility else prog.cost
    limit = max(0.01, time_limit)
    payload = (cost, a.data, a.indices, a.indptr, a.shape, np.array(lo), np.array(hi),
               integrality, limit)
    got, answer = call_in_worker(_highs, payload, limit + HARD_GRACE_S,
                                 "exact router (HiGHS)")
    if not got:
        return _Solution("timeout", None)
    status, message, x, bound = answer
    if status == 0:
        return _Solution("optimal", np.round(x[:prog.n_y]), bound)
    if status == 2:
        return _Solution("infeasible", None)
    if status == 1:
        y = None if x is None else np.round(x[:prog.n_y])
        return _Solution("timeout", y, bound)
    raise InternalError(f"exact router: HiGHS returned status {status} ({message}) on a "
                        f"bounded 0-1 program")


#: seconds a HiGHS worker may run past its ``time_limit`` before it is killed (HiGHS does
#: not check the limit inside every heuristic: a root "central rounding" on an 8x8, 25-net
#: program ran 128 s past a 20 s limit)
HARD_GRACE_S = 1.0


def _highs(payload) -> tuple:
    """Solve the program with :func:`scipy.optimize.milp`: ``(status, message, x,
    mip_dual_bound)`` (run in a :func:`cgra.procs.call_in_worker` process)."""
    from scipy.optimize import Bounds, LinearConstraint, milp  # deferred: loads scipy, numpy, cython_runtime only when called
    from scipy.sparse import csr_array  # deferred: loads scipy, numpy, cython_runtime only when called

    cost, data, indices, indptr, shape, lo, hi, integrality, limit = payload
    a = csr_array((data, indices, indptr), shape=shape)
    res = milp(cost, constraints=LinearConstraint(a, lo, hi), integrality=integrality,
               bounds=Bounds(0, 1),
               options={"time_limit": limit, "mip_rel_gap": 0.0, "disp": False})
    return int(res.status), str(res.message), res.x, getattr(res, "mip_dual_bound", None)


def _solve_z3(prog: Program, time_limit: float, feasibility: bool = False) -> _Solution:
    import z3  # deferred: loads z3 only when called

    ctx = z3.Context()
    opt = z3.Optimize(ctx=ctx) if not feasibility else z3.Solver(ctx=ctx)
    opt.set("timeout", max(1, int(time_limit * 1000)))
    v = [z3.Bool(f"y{i}", ctx) for i in range(prog.n_y)]
    v += [z3.Bool(f"f{i}", ctx) for i in range(prog.n_f)]
    for vars_, coefs, rhs in prog.cons:
        opt.add(z3.PbEq([(v[i], c) for i, c in zip(vars_, coefs, strict=True)], rhs))
    for fi, yi in enumerate(prog.f_y):
        opt.add(z3.Implies(v[prog.n_y + fi], v[yi]))
    for vs in prog.caps:
        opt.add(z3.AtMost(*[v[i] for i in vs], 1))
    if not feasibility:
        for i in np.flatnonzero(prog.cost):
            opt.add_soft(z3.Not(v[int(i)]), 1, id="wl")
    res = opt.check()
    if res == z3.unsat:
        return _Solution("infeasible", None)
    model = None
    try:
        model = opt.model()
    except z3.Z3Exception:
        model = None
    y = None
    if model is not None and len(model) > 0:
        y = np.array([1.0 if z3.is_true(model.eval(v[i], model_completion=True)) else 0.0
                      for i in range(prog.n_y)])
    if res == z3.sat:
        return _Solution("optimal", y)
    return _Solution("timeout", y)


_SOLVE = {"highs": _solve_highs, "z3": _solve_z3}


def _extract(graph: RoutingGraph, nets: list[RouteNet], prog: Program, wires: Wires,
             y: np.ndarray) -> Routes | None:
    """Routes from the chosen ``y`` edges (walk the chain parents back from each sink, then
    expand the chains into nodes); ``None`` when they do not connect every sink (an
    incomplete solution of a timed-out solve)."""
    parent: list[dict[int, int]] = [{} for _ in nets]
    for i in np.flatnonzero(y > 0.5):
        k, u, v = prog.y_edge[int(i)]
        if v in parent[k]:
            return None
        parent[k][v] = u
    routes: Routes = {}
    for k, net in enumerate(nets):
        s = wires.of[graph.index[net.source]]
        paths: dict[Terminal, list[str]] = {}
        for term, cands in net.sinks:
            p = [wires.of[graph.index[cands[0]]]]
            while p[-1] != s:
                u = parent[k].get(p[-1])
                if u is None or len(p) > len(wires.members):
                    return None
                p.append(u)
            paths[term] = [graph.ids[i] for c in reversed(p) for i in wires.members[c]]
        routes[net.name] = paths
    return routes


def wirelength(graph: RoutingGraph, routes: Routes) -> int:
    """SB_IN nodes used by ``routes`` (net -> sink -> path), counted once: the metric of
    :attr:`mapper.backend.route.RoutingResult.wirelength` (tile-to-tile track segments)."""
    return len({n for paths in routes.values() for p in paths.values() for n in p
                if graph.is_sb_in(n)})


def check_routes(graph: RoutingGraph, nets: list[RouteNet], routes: Routes) -> None:
    """Raise :class:`InternalError` unless every net's paths run from its source to each of
    its sinks along graph edges, form a tree, and no node is used by two nets."""
    owner: dict[str, str] = {}
    for net in nets:
        parent: dict[str, str] = {}
        for term, cands in net.sinks:
            p = routes[net.name][term]
            if p[0] != net.source or p[-1] != cands[0]:
                raise InternalError(f"exact router: net {net.name} path to {term} runs "
                                    f"{p[0]} .. {p[-1]}, not {net.source} .. {cands[0]}")
            for a, b in pairwise(p):
                if not graph.has_edge(a, b):
                    raise InternalError(f"exact router: net {net.name} uses {a} -> {b}, not "
                                        f"an edge of the routing graph")
                if parent.setdefault(b, a) != a:
                    raise InternalError(f"exact router: net {net.name}: node {b} has two "
                                        f"drivers")
        for n in {*parent, net.source}:
            if owner.setdefault(n, net.name) != net.name:
                raise InternalError(f"exact router: node {n} is used by nets {owner[n]} and "
                                    f"{net.name}")


# --------------------------------------------------------------------------- cuts

def _split_graph(graph: RoutingGraph, nets: list[RouteNet]) -> nx.DiGraph:
    """Node-split graph for vertex cuts: ``(v, 0) -> (v, 1)`` with capacity 1 for every
    routing node, without capacity (infinite) for the nets' terminal ports; edges
    ``(u, 1) -> (v, 0)`` infinite. Ports that are no terminal of ``nets`` are left out."""
    terms = {graph.index[n.source] for n in nets}
    terms |= {graph.index[c[0]] for n in nets for _, c in n.sinks}
    g = nx.DiGraph()
    for v, k in enumerate(graph.kind):
        if k == "PORT" and v not in terms:
            continue
        if v in terms:
            g.add_edge((v, 0), (v, 1))
        else:
            g.add_edge((v, 0), (v, 1), capacity=1)
    for u, vs in enumerate(graph.succ):
        if (u, 1) not in g:
            continue
        for v in vs:
            if (v, 0) in g:
                g.add_edge((u, 1), (v, 0))
    return g


def _min_cut(split: nx.DiGraph, graph: RoutingGraph, nets: list[RouteNet],
             sinks: dict[str, list[Terminal]]) -> list[int] | None:
    """Minimum vertex cut between the sources of ``nets`` and their ``sinks`` (indices), or
    ``None`` when it is not finite (a source is a sink's direct predecessor)."""
    g = split
    added = []
    for n in nets:
        s = graph.index[n.source]
        g.add_edge("S", (s, 0))
        added.append(("S", (s, 0)))
        cand = dict(n.sinks)
        for term in sinks[n.name]:
            t = graph.index[cand[term][0]]
            g.add_edge((t, 1), "T")
            added.append(((t, 1), "T"))
    try:
        value, (reach, _) = nx.minimum_cut(g, "S", "T",
                                           flow_func=nx.algorithms.flow.shortest_augmenting_path)
    except nx.NetworkXUnbounded:
        return None
    finally:
        g.remove_edges_from(added)
        g.remove_nodes_from(["S", "T"])
    cut = sorted(node[0] for node in reach
                 if isinstance(node, tuple) and node[1] == 0 and (node[0], 1) not in reach)
    if len(cut) != value:
        raise InternalError(f"exact router: min-cut value {value} but {len(cut)} cut nodes")
    return cut


def verify_cut(graph: RoutingGraph, nets: list[RouteNet], cut: Cut) -> None:
    """Check the certificate: fewer cut nodes than nets, no cut node is a terminal, and with
    the cut nodes removed no listed sink is reachable from its net's source. Raises
    :class:`InternalError` when it does not hold (a bug of the cut search)."""
    by_name = {n.name: n for n in nets}
    removed = {graph.index[n] for n in cut.nodes}
    if len(removed) >= len(cut.nets):
        raise InternalError(f"exact router: cut of {len(removed)} nodes for {len(cut.nets)} "
                            f"nets is no certificate")
    allowed = set(range(len(graph.ids))) - removed
    for name in cut.nets:
        net = by_name[name]
        cand = dict(net.sinks)
        terms = {graph.index[net.source]} | {graph.index[c[0]] for c in cand.values()}
        if terms & removed:
            raise InternalError(f"exact router: cut contains a terminal of net {name}")
        s = graph.index[net.source]
        reach = _reach([s], graph.succ, allowed, set())
        for term in cut.sinks[name]:
            if graph.index[cand[term][0]] in reach:
                raise InternalError(f"exact router: net {name} reaches sink {term} around the "
                                    f"cut {cut.nodes}")


def _candidates(graph: RoutingGraph, nets: list[RouteNet]
                ) -> list[tuple[list[RouteNet], dict[str, list[Terminal]]]]:
    """Net sets that may need a cut: for every straight boundary between two columns (rows)
    and each direction, the nets with a sink on the other side of it (with those sinks);
    largest first; then all nets with all sinks."""
    xy, idx = graph.xy, graph.index
    xs = sorted({p[0] for p in xy})
    ys = sorted({p[1] for p in xy})
    out: list[tuple[list[RouteNet], dict[str, list[Terminal]]]] = []
    for axis, coords in ((0, xs), (1, ys)):
        for b in coords[:-1]:
            for sign in (1, -1):
                chosen, sinks = [], {}
                for n in nets:
                    sc = xy[idx[n.source]][axis]
                    if (sc <= b) != (sign == 1):
                        continue
                    across = [t for t, c in n.sinks if (xy[idx[c[0]]][axis] <= b) != (sign == 1)]
                    if across:
                        chosen.append(n)
                        sinks[n.name] = across
                if chosen:
                    out.append((chosen, sinks))
    out.sort(key=lambda c: -len(c[0]))
    out.append((list(nets), {n.name: [t for t, _ in n.sinks] for n in nets}))
    return out


def find_cut(graph: RoutingGraph, nets: list[RouteNet], deadline: float | None = None,
             split: nx.DiGraph | None = None) -> Cut | None:
    """A verified :class:`Cut` over the candidate net sets of the module docstring, or
    ``None`` (no candidate has fewer cut nodes than nets, or ``deadline``, a
    :func:`time.perf_counter` value, passed)."""
    split = split if split is not None else _split_graph(graph, nets)
    seen: set[tuple] = set()
    for chosen, sinks in _candidates(graph, nets):
        key = tuple(sorted((k, tuple(v)) for k, v in sinks.items()))
        if key in seen:
            continue
        seen.add(key)
        if deadline is not None and time.perf_counter() > deadline:
            return None
        cut = _min_cut(split, graph, chosen, sinks)
        if cut is not None and len(cut) < len(chosen):
            c = Cut([graph.ids[i] for i in cut], [n.name for n in chosen],
                    {n.name: sinks[n.name] for n in chosen})
            verify_cut(graph, nets, c)
            return c
    return None


def _conflict(graph: RoutingGraph, nets: list[RouteNet], deadline: float,
              wires: Wires) -> list[RouteNet] | None:
    """A minimal set of nets that cannot be routed together (deletion filter: drop a net when
    the rest is still infeasible on the whole graph), or ``None`` when the deadline passes."""
    keep = list(nets)
    for net in list(nets):
        left = deadline - time.perf_counter()
        if left <= 0:
            return None
        rest = [n for n in keep if n is not net]
        if not rest:
            continue
        prog = build_program(graph, rest, None, wires)
        if prog.disconnected:
            keep = rest
            continue
        sol = _solve_highs(prog, left, feasibility=True)
        if sol.status == "timeout":
            return None
        if sol.status == "infeasible":
            keep = rest
    return keep


# --------------------------------------------------------------------------- driver

def exact_route(graph: RoutingGraph, nets: list[RouteNet], *, timeout_s: float = 60.0,
                margin: int | None = 2, solver: str = "highs",
                certify: bool = True) -> ExactResult:
    """Route ``nets`` with minimum total wirelength, or prove them unroutable.

    ``nets``: core-to-core :class:`~mapper.backend.route.RouteNet` records (fixed source node, one
    candidate node per sink). ``margin``: tiles added around each net's terminal bounding box
    (``None``: whole graph; the result is optimal within the margin, module docstring);
    ``solver``: ``highs`` (default, faster) or ``z3``; ``timeout_s``: wall-clock bound in
    seconds on everything (solves, and the cut search when ``certify``). Returns an
    :class:`ExactResult`: routes in the shape of :func:`mapper.backend.route.route_width`, checked
    legal; wirelength in SB_IN nodes. Raises :class:`RoutingError` for a net with a register
    source, register sink, pinned register count or several sink candidates, an unknown
    node, or two nets with one source; :class:`InternalError` if a solution or a cut fails
    its check.

    Algorithm: multi-commodity flow directed Steiner ILP (Wong 1984; Goemans & Myung 1993)
    with node capacities (Nam, Sakallah & Rutenbar 2002); unroutability certificate by
    Menger's theorem (max-flow min vertex cut).
    """
    if solver not in _SOLVE:
        raise RoutingError(f"exact router: unknown solver '{solver}'; choose one of {SOLVERS}")
    t0 = time.perf_counter()
    deadline = t0 + timeout_s
    _check_nets(graph, nets)
    nets = [n for n in nets if n.sinks]
    if not nets:
        return ExactResult("optimal", {}, 0, time.perf_counter() - t0, solver, margin)
    wires = contract(graph)
    margins: list[int | None] = [margin] if margin is None else [margin, None]
    used: int | None = margin
    bound = None
    for m in margins:
        used = m
        prog = build_program(graph, nets, m, wires)
        if prog.disconnected:
            sol = _Solution("infeasible", None)
        else:
            sol = _SOLVE[solver](prog, deadline - time.perf_counter())
        bound = sol.bound
        if sol.status in ("optimal", "timeout"):
            routes = _extract(graph, nets, prog, wires, sol.y) if sol.y is not None else None
            if sol.status == "optimal" and routes is None:
                raise InternalError(f"exact router: the {solver} solution does not connect "
                                    f"every sink")
            if routes is not None:
                check_routes(graph, nets, routes)
            return ExactResult(sol.status, routes or {},
                               wirelength(graph, routes) if routes is not None else None,
                               time.perf_counter() - t0, solver, m, lower_bound=bound)
        if prog.whole:
            break
    # infeasible on the whole graph: a proof; look for its certificate
    cut, conflict = None, []
    if certify:
        split = _split_graph(graph, nets)
        cut = find_cut(graph, nets, deadline, split)
        if cut is None and time.perf_counter() < deadline:
            mus = _conflict(graph, nets, deadline, wires)
            if mus is not None:
                conflict = [n.name for n in mus]
                sinks = {n.name: [t for t, _ in n.sinks] for n in mus}
                c = _min_cut(split, graph, mus, sinks)
                if c is not None and len(c) < len(mus):
                    cut = Cut([graph.ids[i] for i in c], conflict, sinks)
                    verify_cut(graph, nets, cut)
        if cut is not None:
            conflict = list(cut.nets)
    return ExactResult("unroutable", {}, None, time.perf_counter() - t0, solver, used, cut,
                       conflict or [n.name for n in nets])


def random_nets(g: RoutingGraph, n: int, seed: int, max_sinks: int = 3,
                reach: int | None = None) -> list[RouteNet]:
    """``n`` core-to-core nets of the 16-bit (or any one-width) graph ``g`` for benchmarks and
    tests of the exact router: distinct random source ports, 1..``max_sinks`` distinct sink
    ports (within ``reach`` tiles, Manhattan, of the source when given); seeded by ``seed``.
    Sink terminals are named ``(s<k>_<j>, "in")``."""
    rng = random.Random(seed)
    outs, free = [], {}
    for nid in g.ids:
        nd = g.ig.nodes[nid]
        if nd.kind == "PORT":
            if nd.direction == "out":
                outs.append(nid)
            else:
                free.setdefault((nd.x, nd.y), []).append(nid)
    outs.sort()
    nets = []
    for k, src in enumerate(rng.sample(outs, n)):
        sx, sy = g.xy[g.index[src]]
        near = [p for (x, y), ps in sorted(free.items()) for p in ps
                if reach is None or abs(x - sx) + abs(y - sy) <= reach]
        sinks = rng.sample(near, min(len(near), rng.randint(1, max_sinks)))
        for p in sinks:
            free[g.xy[g.index[p]]].remove(p)
        nets.append(RouteNet(f"n{k}", src, [((f"s{k}_{j}", "in"), [p])
                                            for j, p in enumerate(sinks)]))
    return nets


def explain_unrouted(graph: RoutingGraph, nets: list[RouteNet],
                     timeout_s: float = EXPLAIN_TIMEOUT_S) -> str:
    """A sentence to append to PathFinder's non-convergence error: what the exact router says
    about the same nets (an exact routing exists, or the cut that makes them unroutable).
    Empty when the graph has more than :data:`EXPLAIN_MAX_TILES` tiles or no net is
    core-to-core.

    Nets through netlist registers (a register source or sink, pinned register counts) are
    not modelled; they are left out, which is a *relaxation*: fewer nets use fewer routing
    nodes, so when the core-to-core nets alone are unroutable the whole design is (the cut
    is a certificate for it), and when they route the sentence says that the register nets
    were not checked."""
    if len(graph.tiles) > EXPLAIN_MAX_TILES:
        return ""
    plain = [n for n in nets if n.reg_source is None and not n.reg_sinks and not n.regs
             and all(len(c) == 1 for _, c in n.sinks)]
    left_out = len(nets) - len(plain)
    if not plain:
        return ""
    try:
        res = exact_route(graph, plain, timeout_s=timeout_s)
    except RoutingError:
        return ""
    scope = (f" for the {len(plain)} core-to-core nets ({left_out} nets through registers "
             f"left out)" if left_out else "")
    if res.status == "optimal" or res.routes:
        tail = ("; the nets through registers are not modelled, so the congestion may be "
                "theirs: try another seed or more tracks" if left_out else
                "; PathFinder did not find it, raise RouterParams.max_iterations (or "
                "pres_mult)")
        return f" Exact router{scope}: {res.message()}{tail}."
    return f" Exact router{scope}: {res.message()}."


__all__ = ["Cut", "ExactResult", "Program", "build_program", "check_routes", "exact_route",
           "explain_unrouted", "find_cut", "random_nets", "verify_cut", "wirelength", "EXPLAIN_MAX_TILES",
           "EXPLAIN_TIMEOUT_S"]
