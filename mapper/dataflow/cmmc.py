"""Compiler-managed memory consistency (CMMC): tokens and credits between access sites.

Source: Zhang et al., "SARA: Scaling a Reconfigurable Dataflow Accelerator", ISCA 2021,
§III-A1 (tokens, credits, the LCA rule), §III-A2 (branches) and §III-A3 (control-reduction
analysis, Fig. 5); the project's SARA notes §2.4 and §2.6.

Per memory (a VMU or a DRAM interface; FIFOs order themselves by their full/empty handshake
and local registers live inside one VCU, so neither gets tokens), :func:`cmmc` builds the
**access dependency graph** over the access sites (the program's ``R<n>``/``W<n>`` labels;
all dynamic executions of a site are one node):

* **forward** edges X -> Y for X before Y in program order: RAW, WAR, WAW, and RAR on
  on-chip memories (a PMU serves one read stream at a time; DRAM interfaces serve reads
  concurrently). None when the least common ancestor (LCA) of X and Y in the control tree
  is a branch (the clauses exclude each other). SARA also drops them when the LCA is an
  unrolled loop (lanes are independent units); the token-level simulator here runs the
  lanes of a unit in program order, so the per-lane edge is kept (one edge stands for
  every lane's copy);
* an accumulator access (``VUDFG.promoted``: made once per run of its loop) sits at its
  loop's place in the control tree, not inside it;
* **backward** (loop-carried) edges Y ⇢ X when X and Y share an enclosing loop or
  do-while (the innermost, the edge's ``loop``), carrying ``credit`` initial tokens; when
  the LCA is a branch both directions are loop-carried (Fig. 5b: R0 and W1).

**Reduction** (§III-A3 b): forward edges that :func:`networkx.transitive_reduction` removes
are removed one at a time (longest first) if the current forward graph still has another
path between their ends; then each backward edge A ⇢ B (in program order of A, then B) is
removed if the current graph has another path A ⇝ B made of forward edges and exactly one
backward edge of the same loop and the same credit; one edge at a time, so two edges cannot
justify each other's removal. A path only counts if each of its forward edges has its
tokens flow in every execution of the removed edge's region (its LCA, or its loop for a
backward edge): no branch clause and no loop that may run zero times (interval analysis of
the bounds) between the two. Otherwise a skipped clause would forward its tokens at once
and break the chain; SARA's Fig. 5 reductions are all of the sure kind, where the result
equals the plain transitive reduction.

**Tokens** (§III-A1): a kept edge X -> Y is pushed at the done of the LCA's child containing
X (``push_level``) by X's port (its request VCU for a read, response VCU for a write, which
counts the memory's acknowledgements) and popped at the done of the LCA's child containing
Y (``pop_level``) by Y's port; for a backward edge the levels are the children of its loop.

**Initial credit** 1, or the SRAM's multi-buffer depth B (``SRAM.buffers``) on the
backward edges of the innermost loop L enclosing every access of the memory (its
``buffer_loop``), except the read-after-write ones (a write ⇢ a read keeps 1: the reader of
iteration i must still wait for the writer of iteration i - 1), when one of two access
patterns is proved (``MemoryDeps.reason`` says which, or why neither):

* **pipelined** (§III-A1): every write comes before every read in program order, no write
  is under a branch or do-while inside L, and z3 proves that in every iteration of L the
  addresses read are among the addresses written (A(R) ⊆ A(W));
* **alternating clauses** (SARA Fig. 4, notes §2.5): the accesses' LCA is a branch ``b``
  directly inside L, every write sits in one clause and every read in the other, no write is
  under a branch or do-while inside its clause, and z3 proves, over the iterations of L (and
  its enclosing loops) in execution order, that ``b``'s condition selects the writer's clause
  first and differs between consecutive iterations (the clauses alternate W, R, W, R, ...)
  and that the addresses read in each reader iteration are among those written in the
  iteration before it.

A **phase** of an access is one execution of its phase level (``MemoryDeps.phases``): the
child of L on its path (pipelined) or its clause (alternating). Each side counts its own
phases: the k-th write phase fills buffer k mod B and the k-th read phase reads buffer
k mod B (Spatial's N-buffer with separate writer and reader pointers), so the proof above
makes read phase k see exactly write phase k. The bindings of L and its enclosing loops are
enumerated outside the solver (at most :data:`MAX_BINDINGS`), each query is bounded by z3's
own timeout (:data:`Z3_TIMEOUT_MS`).

**Control tokens** (:func:`control_deps`; Spatial's ``Sequential`` schedule, Koeplinger et
al., PLDI'18 §3, implemented with SARA's token mechanism, §III-A1): a loop or do-while built
with ``sequential=True`` chains its *stages*, the children of its control-tree node that hold
units (extra ``.bound`` / ``.cond`` leaves included), in program order. A forward token goes
from the done of stage k to the start of stage k + 1 (initial count 0), a credit from the
done of the last stage to the start of the first (initial credit 1: the next iteration's first
stage starts only after this iteration's last is done). This is the LCA rule applied to
control: the LCA of the two stages is the controller itself, so the token is pushed at the
done of its child holding the source and popped at its child holding the destination. Every
unit of the source stage pushes one token to every unit of the destination stage (an AND of
the dones, so a stage is done when all its units are, a port only after the memory
acknowledged its requests), and every unit of the destination stage pops them before it
starts the stage. Control tokens are not reduced (they are not memory dependencies) and are
counted with the memory ones (:meth:`Tokens.count`). Partitioning and merging
(:mod:`mapper.dataflow.partition`, :mod:`mapper.dataflow.merge`) work on each VCU's datapath
and never see tokens, memory or control.

Errors: none for a well-formed program; an index or bound the affine analysis cannot
express simply keeps credit 1.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import networkx as nx
import z3

from mapper.dataflow.lower import (
    VUDFG,
    Stream,
    leaf_accesses,
    lower,
    program_order_key,
    tree_path,
)
from mapper.dataflow.program import (
    SRAM,
    Const,
    Expr,
    Index,
    Loop,
    Op,
    Program,
    Store,
)

#: most (loop L and enclosing) bindings enumerated for the credit proof
MAX_BINDINGS = 256
#: z3 timeout per containment query, milliseconds
Z3_TIMEOUT_MS = 2000


@dataclass(frozen=True)
class Dep:
    """One dependency edge ``src`` -> ``dst`` between access labels of ``memory``.

    ``kind``: ``RAW``/``WAR``/``WAW``/``RAR`` (``dst`` after ``src``); ``backward``: a
    loop-carried edge on loop ``loop`` with ``credit`` initial tokens (0 for a forward
    edge); ``lca``: the control-tree LCA of the two sites; ``push_level`` / ``pop_level``:
    the controller whose done pushes / pops the token; ``push_unit`` / ``pop_unit``: the
    VCU names (the ports of the two sites, :mod:`mapper.dataflow.lower`)."""
    memory: str
    src: str
    dst: str
    kind: str
    backward: bool
    loop: str | None
    credit: int
    lca: str
    push_level: str
    pop_level: str
    push_unit: str
    pop_unit: str


@dataclass(frozen=True)
class MemoryDeps:
    """The CMMC analysis of one memory: ``before`` (every dependency) and ``after`` (kept)
    as :class:`networkx.DiGraph` over access labels (edge attribute ``dep``: the
    :class:`Dep`), ``pruned_forward`` (removed by transitive reduction) and
    ``pruned_backward`` (removed by backward pruning) as ``(src, dst)`` pairs,
    ``buffer_loop`` / ``credit``: the loop given multi-buffer credits and that credit
    (``None`` / 1 when not proved); ``reason``: why (``"pipelined: ..."``,
    ``"alternating clauses: ..."`` or what refused it); ``phases``: ``(access label, phase
    level)`` pairs of a multi-buffered memory, the control-tree node whose executions count
    that access's buffer phases (module docstring; empty when ``credit`` is 1)."""
    memory: str
    before: nx.DiGraph = field(compare=False)
    after: nx.DiGraph = field(compare=False)
    pruned_forward: tuple[tuple[str, str], ...] = ()
    pruned_backward: tuple[tuple[str, str], ...] = ()
    buffer_loop: str | None = None
    credit: int = 1
    reason: str = ""
    phases: tuple[tuple[str, str], ...] = ()

    @property
    def kept(self) -> list[Dep]:
        return [d for _, _, d in self.after.edges(data="dep")]

    def edge_set(self, graph: str = "after") -> set[tuple[str, str, bool]]:
        """``{(src, dst, backward)}`` of ``before`` or ``after``."""
        g = self.before if graph == "before" else self.after
        return {(u, v, d.backward) for u, v, d in g.edges(data="dep")}


@dataclass(frozen=True)
class ControlDep:
    """One control token of a sequential controller (module docstring, "Control tokens"):
    from the done of stage ``src`` to the start of stage ``dst`` of ``controller`` (child
    labels of its control-tree node, also the push and pop levels). ``backward``: the
    loop-carried one, last stage -> first stage of the next iteration, with ``credit`` 1
    initial credit (0 for a forward token). ``push_units`` / ``pop_units``: the VCU names
    inside ``src`` / ``dst``; one token stream per (push unit, pop unit) pair."""
    controller: str
    src: str
    dst: str
    backward: bool
    credit: int
    push_units: tuple[str, ...]
    pop_units: tuple[str, ...]

    @property
    def key(self) -> str:
        """``"<controller>:<src>-><dst>"``: the stream site and the ``credits`` key of
        :func:`mapper.dataflow.sim.simulate`."""
        return f"{self.controller}:{self.src}->{self.dst}"


@dataclass(frozen=True)
class Tokens:
    """The CMMC result: ``vudfg`` (the lowered program), ``memories``: memory name ->
    :class:`MemoryDeps`; ``control``: the control tokens of the sequential controllers
    (:func:`control_deps`), controllers in pre-order."""
    vudfg: VUDFG = field(compare=False, repr=False)
    memories: dict[str, MemoryDeps] = field(default_factory=dict)
    control: tuple[ControlDep, ...] = ()

    def deps(self) -> list[Dep]:
        """Every kept memory dependency, memories in declaration order."""
        return [d for m in self.memories.values() for d in m.kept]

    def streams(self) -> list[Stream]:
        """The token (forward) and credit (backward) streams: one per kept memory edge
        (``site`` ``"<src>-><dst>"``), then one per (push unit, pop unit) of each control
        token (``site`` :attr:`ControlDep.key`)."""
        out = [Stream(d.push_unit, d.pop_unit, "credit" if d.backward else "token",
                      "scalar", f"{d.src}->{d.dst}")
               for d in self.deps()]
        out += [Stream(a, b, "credit" if c.backward else "token", "scalar", c.key)
                for c in self.control for a in c.push_units for b in c.pop_units]
        return out

    def count(self, reduced: bool = True) -> int:
        """Number of token/credit edges with (``reduced``) or without control reduction:
        memory dependency edges plus the control tokens (:class:`ControlDep`, never
        reduced)."""
        return sum((m.after if reduced else m.before).number_of_edges()
                   for m in self.memories.values()) + len(self.control)

    def graph(self) -> nx.MultiDiGraph:
        """The token graph over units: a node per VCU with a token, an edge per stream of
        :meth:`streams` (attributes ``kind`` ``token``/``credit``, ``site``, ``credit``:
        its initial count, ``control``: a control token?)."""
        g = nx.MultiDiGraph()
        for d in self.deps():
            g.add_edge(d.push_unit, d.pop_unit, kind="credit" if d.backward else "token",
                       site=f"{d.src}->{d.dst}", credit=d.credit, control=False)
        for c in self.control:
            for a in c.push_units:
                for b in c.pop_units:
                    g.add_edge(a, b, kind="credit" if c.backward else "token", site=c.key,
                               credit=c.credit, control=True)
        return g


def control_deps(v: VUDFG) -> tuple[ControlDep, ...]:
    """The control tokens of every sequential loop and do-while of ``v`` (module docstring,
    "Control tokens"): per controller with stages s_1 .. s_n (children holding units, in
    program order), forward tokens s_k -> s_k+1 (credit 0) and the credit s_n -> s_1
    (credit 1; s_1 -> s_1 for one stage). Source: Spatial's ``Sequential`` (PLDI'18 §3) on
    SARA's tokens (§III-A1). Raises nothing."""
    tree = v.tree
    members: dict[str, list[str]] = {}
    for n, u in v.vcus.items():
        for k, p in enumerate(u.path[:-1]):
            if tree.nodes[p]["sequential"]:
                members.setdefault(u.path[k + 1], []).append(n)
    out: list[ControlDep] = []
    for label, a in tree.nodes(data=True):          # insertion order: pre-order
        if not a["sequential"]:
            continue
        kids = sorted(tree.successors(label), key=lambda c: tree.nodes[c]["order"])
        stages = [c for c in kids if members.get(c)]
        if not stages:
            continue
        for x, y in zip(stages, stages[1:], strict=False):
            out.append(ControlDep(label, x, y, False, 0, tuple(members[x]), tuple(members[y])))
        out.append(ControlDep(label, stages[-1], stages[0], True, 1,
                              tuple(members[stages[-1]]), tuple(members[stages[0]])))
    return tuple(out)


# ---------------------------------------------------------------------------- analysis
@dataclass
class _Site:
    label: str
    rw: str
    leaf: str
    path: tuple[str, ...]
    key: tuple[int, ...]
    obj: object


def _kind(src: _Site, dst: _Site) -> str:
    return f"{dst.rw}A{src.rw}"


def _lca(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    """Length of the common prefix of two control paths."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _child(path: tuple[str, ...], depth: int) -> str:
    """The child of ``path[depth-1]`` on ``path`` (the leaf itself if the path ends)."""
    return path[depth] if depth < len(path) else path[-1]


def cmmc(program: Program | VUDFG) -> Tokens:
    """Tokens and credits of ``program`` (or of an already lowered :class:`VUDFG`): the
    dependency graph of each memory before and after control reduction, and the control
    tokens of the sequential controllers (:func:`control_deps`; module docstring).
    """
    v = program if isinstance(program, VUDFG) else lower(program)
    tree = v.tree
    sites_by_mem: dict[str, list[_Site]] = {}
    leaves = [n for n, a in tree.nodes(data=True) if a["kind"] in ("block", "leaf")]
    for leaf in leaves:
        obj = tree.nodes[leaf]["obj"]
        for pos, (_, acc) in enumerate(leaf_accesses(obj)):
            m = acc.mem.name
            if m not in v.vmus or v.vmus[m].kind == "fifo":
                continue
            rw = "W" if isinstance(acc, Store) else "R"
            at = v.promoted.get(acc.label, leaf)      # an accumulator: once per loop run
            sites_by_mem.setdefault(m, []).append(
                _Site(acc.label, rw, at, tree_path(tree, at), program_order_key(tree, at, pos),
                      acc))
    out: dict[str, MemoryDeps] = {}
    for name in v.vmus:
        if name not in sites_by_mem:
            continue
        out[name] = _memory_deps(v, name, sorted(sites_by_mem[name], key=lambda s: s.key))
    return Tokens(v, out, control_deps(v))


def _ports(v: VUDFG) -> dict[str, str]:
    """Access label -> its request (read) or response (write) VCU: where its tokens live."""
    return {u.site: n for n, u in v.vcus.items() if u.site is not None}


def _memory_deps(v: VUDFG, name: str, sites: list[_Site]) -> MemoryDeps:
    tree = v.tree
    kind = v.vmus[name].kind
    buffering = _multibuffer_credit(v, name, sites)
    buffer_loop, credit = buffering.loop, buffering.credit
    before = nx.DiGraph()
    before.add_nodes_from(s.label for s in sites)
    ports = _ports(v)

    def dep(src: _Site, dst: _Site, backward: bool, loop: str | None, lca: str,
            levels: tuple[str, str]) -> Dep:
        push_unit = ports[src.label]
        pop_unit = ports[dst.label]
        c = 0
        if backward:        # a write => read edge keeps 1 (the reader waits a whole phase)
            c = credit if loop == buffer_loop and (src.rw, dst.rw) != ("W", "R") else 1
        return Dep(name, src.label, dst.label, _kind(src, dst), backward, loop, c, lca,
                   levels[0], levels[1], push_unit, pop_unit)

    for x, y in itertools.combinations(sites, 2):      # x before y
        if x.rw == "R" and y.rw == "R" and kind == "dram":
            continue
        n = _lca(x.path, y.path)
        lca = x.path[n - 1]
        lca_kind = tree.nodes[lca]["kind"]
        same_leaf = x.leaf == y.leaf
        if same_leaf:
            lca = x.leaf
        if lca_kind != "branch":
            levels = (_child(x.path, n), _child(y.path, n))
            before.add_edge(x.label, y.label, dep=dep(x, y, False, None, lca, levels))
        enclosing = x.path[:n - 1] if same_leaf else x.path[:n]
        loops = [k for k, p in enumerate(enclosing)
                 if tree.nodes[p]["kind"] in ("loop", "do_while")]
        if loops:
            k = loops[-1]
            loop = x.path[k]
            levels_yx = (_child(y.path, k + 1), _child(x.path, k + 1))
            before.add_edge(y.label, x.label,
                            dep=dep(y, x, True, loop, lca, levels_yx))
            if lca_kind == "branch":
                before.add_edge(x.label, y.label,
                                dep=dep(x, y, True, loop, lca, levels_yx[::-1]))

    sure = _sure_controllers(v)
    regions: dict[str, frozenset[str]] = {}       # LCA -> regions where its windows surely run

    def sure_in(lca: str) -> frozenset[str]:
        if lca not in regions:
            out, node = {lca}, lca
            while node in sure and tree.nodes[node]["parent"] is not None:
                node = tree.nodes[node]["parent"]
                out.add(node)
            regions[lca] = frozenset(out)
        return regions[lca]

    def reach(adj: dict[str, dict[str, Dep]], src: str, region: str, skip=None) -> set[str]:
        """Sites reachable from ``src`` over forward edges usable in ``region``."""
        seen, todo = {src}, [src]
        while todo:
            u = todo.pop()
            for w, d in adj[u].items():
                if w not in seen and (u, w) != skip and region in sure_in(d.lca):
                    seen.add(w)
                    todo.append(w)
        return seen

    fwd = nx.DiGraph()
    fwd.add_nodes_from(before.nodes)
    fwd.add_edges_from((u, w, {"dep": d}) for u, w, d in before.edges(data="dep")
                       if not d.backward)
    tr = nx.transitive_reduction(fwd)
    order = {s.label: k for k, s in enumerate(sites)}
    candidates = sorted(set(fwd.edges) - set(tr.edges),
                        key=lambda e: (order[e[0]] - order[e[1]], order[e[0]]))
    adj: dict[str, dict[str, Dep]] = {n: {} for n in fwd.nodes}
    for u, w, d in fwd.edges(data="dep"):
        adj[u][w] = d
    pruned_f = []
    for u, w in candidates:
        d = adj[u][w]
        if w in reach(adj, u, d.lca, skip=(u, w)):
            del adj[u][w]
            pruned_f.append((u, w))
    after = nx.DiGraph()
    after.add_nodes_from(before.nodes)
    after.add_edges_from((u, w, {"dep": d}) for u in adj for w, d in adj[u].items())
    back = sorted(((u, w) for u, w, d in before.edges(data="dep") if d.backward),
                  key=lambda e: (order[e[0]], order[e[1]]))
    for u, w in back:
        after.add_edge(u, w, dep=before.edges[u, w]["dep"])
    radj: dict[str, dict[str, Dep]] = {n: {} for n in fwd.nodes}
    for u in adj:
        for w, d in adj[u].items():
            radj[w][u] = d
    cache: dict[tuple, set[str]] = {}
    groups: dict[tuple, set[tuple[str, str]]] = {}   # (loop, credit) -> current backward edges
    for u, w in back:
        e = after.edges[u, w]["dep"]
        groups.setdefault((e.loop, e.credit), set()).add((u, w))
    pruned_b = []
    for a, b in back:
        d = after.edges[a, b]["dep"]
        if (d.loop, a, "f") not in cache:
            cache[(d.loop, a, "f")] = reach(adj, a, d.loop)
        if (d.loop, b, "b") not in cache:
            cache[(d.loop, b, "b")] = reach(radj, b, d.loop)
        group = groups[(d.loop, d.credit)]
        from_a, to_b = cache[(d.loop, a, "f")], cache[(d.loop, b, "b")]
        if any(u in from_a and w in to_b for u, w in group if (u, w) != (a, b)):
            after.remove_edge(a, b)
            group.discard((a, b))
            pruned_b.append((a, b))
    pruned_f.sort(key=lambda e: (order[e[0]], order[e[1]]))
    return MemoryDeps(name, before, after, tuple(pruned_f), tuple(pruned_b), buffer_loop,
                      credit, buffering.reason, buffering.phases)


# ---------------------------------------------------------------------------- sure regions
def _sure_controllers(v: VUDFG) -> set[str]:
    """Control-tree nodes that run whenever their parent runs: everything but branch
    clauses and loops whose trip count interval analysis cannot bound below by 1.

    Token forwarding through an access is only guaranteed in windows that execute: the
    reduction (transitive and backward) uses an edge to justify removing another only when
    the edge's windows run in every execution of the removed edge's region."""
    tree = v.tree
    ranges: dict[int, tuple[float, float]] = {}
    out: set[str] = set()
    for label in nx.topological_sort(tree):
        a = tree.nodes[label]
        obj = a["obj"]
        if a["kind"] == "clause":
            continue
        if a["kind"] == "loop":
            lo_s, hi_s = _interval(obj.start, ranges)
            lo_e, hi_e = _interval(obj.stop, ranges)
            ranges[id(obj)] = (lo_s, hi_e - 1)
            if lo_e <= hi_s:
                continue
        out.add(label)
    return out


def _interval(e: Expr, ranges: dict[int, tuple[float, float]]) -> tuple[float, float]:
    inf = float("inf")
    if isinstance(e, Const) and e.dtype == "i32":
        return (e.value, e.value)
    if isinstance(e, Index):
        return ranges.get(id(e.loop), (-inf, inf))
    if isinstance(e, Op) and e.dtype == "i32":
        if e.op == "mod" and isinstance(e.args[1], Const) and e.args[1].value > 0:
            return (0, e.args[1].value - 1)
        if e.op in ("add", "sub", "min", "max", "mul"):
            (a, b), (c, d) = (_interval(x, ranges) for x in e.args)
            if e.op == "add":
                return (a + c, b + d)
            if e.op == "sub":
                return (a - d, b - c)
            if e.op == "min":
                return (min(a, c), min(b, d))
            if e.op == "max":
                return (max(a, c), max(b, d))
            if all(abs(x) < inf for x in (a, b, c, d)):
                ps = (a * c, a * d, b * c, b * d)
                return (min(ps), max(ps))
    return (-inf, inf)


# ---------------------------------------------------------------------------- credits (z3)
@dataclass(frozen=True)
class _Buffering:
    """The outcome of the multi-buffer proof: ``loop`` / ``credit`` (``None`` / 1 when
    refused), ``reason`` and ``phases`` as :class:`MemoryDeps`."""
    loop: str | None
    credit: int
    reason: str
    phases: tuple[tuple[str, str], ...] = ()


def _multibuffer_credit(v: VUDFG, name: str, sites: list[_Site]) -> _Buffering:
    """The multi-buffer credit of memory ``name``: its SRAM's depth when the pipelined or the
    alternating-clauses pattern is proved (module docstring), else credit 1 with the reason.
    """
    mem = v.program.memories[name]
    if not isinstance(mem, SRAM) or mem.buffers <= 1:
        return _Buffering(None, 1, f"{name} is single-buffered")
    tree = v.tree
    reads = [s for s in sites if s.rw == "R"]
    writes = [s for s in sites if s.rw == "W"]
    if not reads or not writes:
        return _Buffering(None, 1, f"{name} is not both written and read")
    if any(s.label in v.promoted for s in sites):
        return _Buffering(None, 1, f"{name} has an accumulator access")
    common = sites[0].path
    for s in sites[1:]:
        common = common[:_lca(common, s.path)]
    loops = [k for k, p in enumerate(common) if tree.nodes[p]["kind"] == "loop"]
    if not loops:
        return _Buffering(None, 1, f"no loop encloses every access of {name}")
    k = loops[-1]
    loop_label = common[k]
    if any(tree.nodes[p]["kind"] == "do_while" for p in common[:k + 1]):
        return _Buffering(None, 1, f"a do-while encloses the accesses of {name}")
    outer = [tree.nodes[p]["obj"] for p in common[:k + 1] if tree.nodes[p]["kind"] == "loop"]
    try:
        bindings = _enumerate(outer)
    except _NotAffine:
        return _Buffering(None, 1, f"the bounds of loop {loop_label} or an enclosing loop "
                                   f"are not affine in constants")
    if bindings is None:
        return _Buffering(None, 1, f"loop {loop_label} and its enclosing loops run more "
                                   f"than {MAX_BINDINGS} iterations")
    if len(common) == k + 2 and tree.nodes[common[k + 1]]["kind"] == "branch":
        return _alternating(tree, name, mem.buffers, reads, writes, k, common[k + 1],
                            loop_label, bindings)
    if max(s.key for s in writes) > min(s.key for s in reads):
        return _Buffering(None, 1, f"a write of {name} follows a read in loop {loop_label}")
    for w in writes:
        if any(tree.nodes[p]["kind"] in ("branch", "do_while") for p in w.path[k + 1:]):
            return _Buffering(None, 1, f"write {w.label} is under a branch or do-while "
                                       f"inside loop {loop_label}")
    for b in bindings:
        for r in reads:
            if not _contained(tree, r, writes, k, b):
                return _Buffering(None, 1, f"z3 does not prove that read {r.label} is "
                                           f"contained in the writes of each iteration of "
                                           f"loop {loop_label}")
    phases = tuple((s.label, _child(s.path, k + 1)) for s in sites)
    return _Buffering(loop_label, mem.buffers,
                      f"pipelined: A(R) ⊆ A(W) in every iteration of loop {loop_label}",
                      phases)


def _alternating(tree: nx.DiGraph, name: str, buffers: int, reads: list[_Site],
                 writes: list[_Site], k: int, branch: str, loop_label: str,
                 bindings: list[dict[int, int]]) -> _Buffering:
    """The alternating-clauses pattern (SARA Fig. 4): writes in one clause of ``branch``
    (directly inside loop ``loop_label``, at path depth ``k``), reads in the other; z3 proves
    the alternation per consecutive pair of ``bindings`` (execution order) and the
    containment of each read phase in the write phase before it."""
    wclauses = {s.path[k + 2] for s in writes}
    rclauses = {s.path[k + 2] for s in reads}
    if len(wclauses) != 1 or len(rclauses) != 1 or wclauses == rclauses:
        return _Buffering(None, 1, f"the accesses of {name} under branch {branch} are not "
                                   f"writes in one clause and reads in the other")
    for w in writes:
        if any(tree.nodes[p]["kind"] in ("branch", "do_while") for p in w.path[k + 3:]):
            return _Buffering(None, 1, f"write {w.label} is under a branch or do-while "
                                       f"inside its clause")
    if not bindings:
        return _Buffering(None, 1, f"loop {loop_label} never runs")
    obj = tree.nodes[branch]["obj"]
    writer_then = wclauses == {obj.then.label}
    try:
        conds = [_z3_cond(obj.cond, {key: z3.IntVal(val) for key, val in b.items()})
                 for b in bindings]
    except _NotAffine:
        return _Buffering(None, 1, f"the condition of branch {branch} is not affine in the "
                                   f"loop indices")
    lp = id(tree.nodes[loop_label]["obj"])
    if not _proved(conds[0] != z3.BoolVal(writer_then)):
        return _Buffering(None, 1, f"branch {branch} does not take the writer's clause on the "
                                   f"first iteration of loop {loop_label}")
    for j in range(len(bindings) - 1):
        if not _proved(conds[j] == conds[j + 1]):
            return _Buffering(None, 1, f"the clauses of branch {branch} do not alternate: "
                                       f"{loop_label}={bindings[j][lp]} and "
                                       f"{loop_label}={bindings[j + 1][lp]} take the same one")
    for j in range(0, len(bindings) - 1, 2):
        for r in reads:
            if not _contained(tree, r, writes, k, bindings[j + 1], bindings[j]):
                return _Buffering(None, 1, f"z3 does not prove that read {r.label} at "
                                           f"{loop_label}={bindings[j + 1][lp]} is contained "
                                           f"in the writes at {loop_label}={bindings[j][lp]}")
    phases = tuple((s.label, s.path[k + 2]) for s in (*writes, *reads))
    return _Buffering(loop_label, buffers,
                      f"alternating clauses: branch {branch} alternates writer "
                      f"{sorted(wclauses)[0]} and reader {sorted(rclauses)[0]} along loop "
                      f"{loop_label}, A(R) ⊆ A(W) of the write phase before", phases)


def _proved(bad) -> bool:
    """Does z3 show ``bad`` unsatisfiable within :data:`Z3_TIMEOUT_MS`?"""
    s = z3.Solver()
    s.set("timeout", Z3_TIMEOUT_MS)
    s.add(bad)
    return s.check() == z3.unsat


class _NotAffine(Exception):
    """An expression outside the affine subset the credit proof handles."""


def _const_eval(e: Expr, env: dict[int, int]) -> int:
    if isinstance(e, Const) and e.dtype == "i32":
        return int(e.value)
    if isinstance(e, Index) and id(e.loop) in env:
        return env[id(e.loop)]
    if isinstance(e, Op) and e.op in ("add", "sub", "mul"):
        a, b = (_const_eval(x, env) for x in e.args)
        return {"add": a + b, "sub": a - b, "mul": a * b}[e.op]
    raise _NotAffine(repr(e))


def _enumerate(loops: list[Loop]) -> list[dict[int, int]] | None:
    """Every binding of ``loops`` (outer to inner, bounds affine in outer indices), or
    ``None`` beyond :data:`MAX_BINDINGS`."""
    out: list[dict[int, int]] = [{}]
    for lp in loops:
        nxt = []
        for env in out:
            s, e, st = (_const_eval(x, env) for x in (lp.start, lp.stop, lp.step))
            if st <= 0:
                raise _NotAffine(lp.label)
            for i in range(s, e, st):
                nxt.append({**env, id(lp): i})
                if len(nxt) > MAX_BINDINGS:
                    return None
        out = nxt
    return out


def _z3(e: Expr, env: dict[int, object]):
    if isinstance(e, Const) and e.dtype == "i32":
        return z3.IntVal(int(e.value))
    if isinstance(e, Index):
        if id(e.loop) not in env:
            raise _NotAffine(e.loop.label)
        return env[id(e.loop)]
    if isinstance(e, Op):
        if e.op in ("add", "sub", "mul"):
            a, b = (_z3(x, env) for x in e.args)
            return {"add": a + b, "sub": a - b, "mul": a * b}[e.op]
        if e.op in ("div", "mod") and isinstance(e.args[1], Const) and e.args[1].value > 0:
            a = _z3(e.args[0], env)
            c = int(e.args[1].value)
            return a / c if e.op == "div" else a % c   # Euclidean = floor for c > 0
    raise _NotAffine(repr(e))


def _z3_cond(e: Expr, env: dict[int, object]):
    """A branch condition as a z3 Bool: an i32 comparison of affine terms, or an affine
    term (true when non-zero)."""
    if isinstance(e, Op) and e.op in ("lt", "le", "gt", "ge", "eq", "ne"):
        if any(x.dtype != "i32" for x in e.args):
            raise _NotAffine(repr(e))
        a, b = (_z3(x, env) for x in e.args)
        return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b, "eq": a == b,
                "ne": a != b}[e.op]
    if e.dtype != "i32":
        raise _NotAffine(repr(e))
    return _z3(e, env) != 0


def _domain(tree: nx.DiGraph, s: _Site, k: int, binding: dict[int, int], tag: str):
    """z3 variables and constraints of the loops of site ``s`` below path depth ``k``."""
    env: dict[int, object] = dict(binding)
    env = {key: z3.IntVal(val) for key, val in env.items()}
    variables, cons = [], []
    for p in s.path[k + 1:]:
        o = tree.nodes[p]["obj"]
        if not isinstance(o, Loop):
            continue
        i = z3.Int(f"{tag}_{p}")
        t = z3.Int(f"{tag}_{p}_trip")
        start, stop, step = (_z3(x, env) for x in (o.start, o.stop, o.step))
        variables += [i, t]
        cons += [t >= 0, i == start + step * t, i < stop]
        if not isinstance(o.step, Const) or o.step.value <= 0:
            raise _NotAffine(p)
        env[id(o)] = i
    return env, variables, cons


def _contained(tree: nx.DiGraph, r: _Site, writes: list[_Site], k: int,
               binding: dict[int, int], wbinding: dict[int, int] | None = None) -> bool:
    """Does z3 prove that, for ``binding`` of the loops down to depth ``k``, every address
    read by ``r`` is written by one of ``writes`` in the same iteration (or in the iteration
    ``wbinding``, when given)?"""
    try:
        renv, rvars, rcons = _domain(tree, r, k, binding, "r")
        raddr = [_z3(x, renv) for x in r.obj.index]
        clauses = []
        for n, w in enumerate(writes):
            wenv, wvars, wcons = _domain(tree, w, k, binding if wbinding is None else wbinding,
                                         f"w{n}")
            waddr = [_z3(x, wenv) for x in w.obj.index]
            differ = z3.Or([a != b for a, b in zip(raddr, waddr, strict=True)])
            body = z3.Implies(z3.And(wcons), differ) if wcons else differ
            clauses.append(z3.ForAll(wvars, body) if wvars else body)
    except _NotAffine:
        return False
    s = z3.Solver()
    s.set("timeout", Z3_TIMEOUT_MS)
    s.add(*rcons, *clauses)          # a read address no write produces?
    return s.check() == z3.unsat


__all__ = ["Dep", "ControlDep", "MemoryDeps", "Tokens", "cmmc", "control_deps", "MAX_BINDINGS", "Z3_TIMEOUT_MS"]
