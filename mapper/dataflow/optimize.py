"""SARA's program-level optimisations (Zhang et al., ISCA 2021, §III-C): msr, rtelm, dupra and
xbar-elm, each a pure function of a :class:`~mapper.dataflow.program.Program`.

* :func:`msr` (memory strength reduction, §III-C a): an SRAM whose every access has a
  constant address becomes one :class:`Reg` per word accessed. SARA uses a PU input FIFO;
  a FIFO is only equivalent when every word is read exactly once in write order, which
  needs an ordering analysis, so this pass emits registers (a Reg keeps random-access
  semantics and costs a pipeline register, not a memory unit).
* :func:`rtelm` (route-through elimination, §III-C b): a non-indexable memory ``M1`` (FIFO
  or Reg) written once (``W1``) and read once (``R1``), whose read is stored straight into
  another memory (``M2[idx] = R1``, store ``W2``) by a reader running in lock-step with the
  writer, is removed: ``W1`` becomes ``M2[idx'] = value`` (``idx'``: ``idx`` with the
  reader's loop indices replaced by the writer's).
* :func:`dupra` (read-address duplication, §III-C e): the BA stream of every banked read
  lane whose bank is not static is recomputed in the receiver instead of being forwarded
  from the request unit (Fig. 8b's BA path to VCU_D); a plan with the streams saved.
* :func:`xbar_elm` (crossbar elimination, §III-C d): the banking plans of
  :mod:`mapper.dataflow.banking` with the crossbar before and after eliminating the links
  of statically known banks.

The program transforms work on a deep copy (the input is never changed) and keep the
sequential semantics of :func:`mapper.dataflow.interp.interpret` on every DRAM.

Lock-step (our reading of §III-C b for a sequential program): the writer's block and the
reader's block run the same number of times in the same order with the writer first: (1)
both in the same block, ``W1`` before ``W2``; or (2) below their lowest common ancestor
``A`` (a loop or the program, not a branch) both paths are chains of loops with equal
constant ``start``/``stop``/``step`` and ``par``, level by level, the writer's child of
``A`` coming before the reader's; for a Reg only with no loop between ``A`` and the blocks
(a Reg keeps its last value, a FIFO queues). ``idx`` may use loop indices, constants and
block temporaries defined from them (no memory read: moving a read changes when it
happens), and ``M2`` has no other access in the children of ``A`` from the writer's to the
reader's (between ``W1`` and ``W2`` in one block), so moving its write earlier is not
observable.

Errors: none on a well-formed program (a candidate that does not qualify is reported as
kept, with the reason); :func:`dupra` and :func:`xbar_elm` raise as
:func:`~mapper.dataflow.banking.plan_banking` (:class:`~cgra.errors.MappingError`).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

from mapper.dataflow.banking import BankingPlan, index_constants, plan_banking
from mapper.dataflow.program import (
    FIFO,
    SRAM,
    Block,
    Const,
    Controller,
    Expr,
    Index,
    Let,
    Load,
    Loop,
    Memory,
    Op,
    Program,
    Reg,
    Sequential,
    Store,
    Temp,
    walk,
)


# ---------------------------------------------------------------------------- sites
@dataclass
class _Site:
    node: Load | Store
    where: Controller            # the block (or the controller reading a bound)
    lets: dict[int, Expr]


def _lets(block: Block) -> dict[int, Expr]:
    return {id(s.temp): s.value for s in block.statements if isinstance(s, Let)}


def _sites(program: Program) -> dict[str, list[_Site]]:
    """Memory name -> every access site (block loads, stores, bound loads)."""
    out: dict[str, list[_Site]] = {name: [] for name in program.memories}
    for b in program.blocks():
        lets = _lets(b)
        for ld in b.loads():
            out[ld.mem.name].append(_Site(ld, b, lets))
        for st in b.stores():
            out[st.mem.name].append(_Site(st, b, lets))
    for c, ld in program.bound_loads():
        out[ld.mem.name].append(_Site(ld, c, {}))
    return out


def _replace_memories(program: Program, old: Memory, new: list[Memory]) -> None:
    mems = {}
    for name, m in program.memories.items():
        if m is old:
            for n in new:
                mems[n.name] = n
        else:
            mems[name] = m
    program.memories = mems


# ---------------------------------------------------------------------------- msr
@dataclass(frozen=True)
class MsrReport:
    """What :func:`msr` changed: ``converted``: SRAM name -> ``(linear address, Reg name)``
    per word accessed, in address order; ``kept``: SRAM name -> why it stays an SRAM."""

    converted: dict[str, tuple[tuple[int, str], ...]]
    kept: dict[str, str]


def msr(program: Program) -> tuple[Program, MsrReport]:
    """Memory strength reduction (SARA §III-C a; module docstring): every SRAM whose accesses
    all have constant, in-bounds addresses becomes one Reg per word accessed, named
    ``<sram>_<linear address>`` (initial value 0, as an SRAM's), declared in the SRAM's
    scope. Returns ``(new program, report)``; ``program`` is not changed."""
    p = copy.deepcopy(program)
    sites = _sites(p)
    converted: dict[str, tuple[tuple[int, str], ...]] = {}
    kept: dict[str, str] = {}
    for m in list(p.memories.values()):
        if not isinstance(m, SRAM):
            continue
        ss = sites[m.name]
        if not ss:
            kept[m.name] = "no access"
            continue
        addrs: list[int] = []
        why = ""
        for s in ss:
            idx = index_constants(s.node.index, s.lets)
            if idx is None:
                why = f"access {s.node.label} has a non-constant address"
                break
            if any(not 0 <= v < n for v, n in zip(idx, m.shape, strict=True)):
                why = f"access {s.node.label} is out of bounds at {idx}"
                break
            a = 0
            for v, n in zip(idx, m.shape, strict=True):
                a = a * n + v
            addrs.append(a)
        if why:
            kept[m.name] = why
            continue
        regs: dict[int, Reg] = {}
        for a in sorted(set(addrs)):
            name = f"{m.name}_{a}"
            while name in p.memories or any(r.name == name for r in regs.values()):
                name += "_"
            init = 0.0 if m.dtype == "f32" else 0
            regs[a] = Reg(name=name, dtype=m.dtype, shape=(), kind="reg", scope=m.scope,
                          program=p, init=init)
        for s, a in zip(ss, addrs, strict=True):
            s.node.mem = regs[a]
            s.node.index = ()
        _replace_memories(p, m, list(regs.values()))
        converted[m.name] = tuple((a, r.name) for a, r in regs.items())
    return p, MsrReport(converted, kept)


# ---------------------------------------------------------------------------- rtelm
@dataclass(frozen=True)
class RouteThrough:
    """One eliminated route-through: ``memory`` (M1) written by ``writer`` and read by
    ``reader``, whose value ``store`` wrote into ``target`` (M2); ``store`` now sits in
    block ``block`` in place of ``writer``."""

    memory: str
    target: str
    writer: str
    reader: str
    store: str
    block: str


@dataclass(frozen=True)
class RtelmReport:
    """What :func:`rtelm` changed: ``eliminated`` route-throughs in order, ``removed_blocks``
    and ``removed_loops`` (labels of controllers left empty once the moved store and the
    temporaries only it read are gone), ``kept``: FIFO/Reg name -> why
    it is not a route-through (only memories with one write and one read site)."""

    eliminated: tuple[RouteThrough, ...]
    removed_blocks: tuple[str, ...] = ()
    removed_loops: tuple[str, ...] = ()
    kept: dict[str, str] = field(default_factory=dict)


class _Refuse(Exception):
    """Internal: a candidate does not qualify (the reason in args[0])."""


def _path(block: Controller, top: Controller) -> list[Controller]:
    out, c = [], block
    while c is not top:
        out.append(c)
        c = c.parent
    return out[::-1]


def _same_loop(a: Controller, b: Controller) -> bool:
    if type(a) is not Loop or type(b) is not Loop:
        return False
    for x, y in ((a.start, b.start), (a.stop, b.stop), (a.step, b.step)):
        if not (isinstance(x, Const) and isinstance(y, Const) and x.value == y.value
                and x.dtype == y.dtype):
            return False
    return a.par == b.par


def _subst(e: Expr, loops: dict[int, Index], lets: dict[int, Expr]) -> Expr:
    if isinstance(e, Const):
        return Const(e.value, e.dtype)
    if isinstance(e, Index):
        return loops.get(id(e.loop), e)
    if isinstance(e, Temp):
        if id(e) not in lets:
            raise _Refuse(f"the index reads temporary {e.name!r}")
        return _subst(lets[id(e)], loops, lets)
    if isinstance(e, Op):
        return Op(e.op, tuple(_subst(a, loops, lets) for a in e.args))
    if isinstance(e, Load):
        raise _Refuse(f"the index reads memory {e.mem.name!r} ({e.label})")
    raise _Refuse(f"the index holds a {type(e).__name__}")


def _contains(st, node) -> bool:
    if st is node:
        return True
    exprs = (*st.index, st.value) if isinstance(st, Store) else (st.value,)
    return any(x is node for e in exprs for x in walk(e))


def _route_through(p: Program, m: Memory, sites: dict[str, list[_Site]]):
    """``(W1 site, W2 store, R1 site, new index)`` of a route-through via ``m``; raises
    :class:`_Refuse`."""
    ss = sites[m.name]
    writes = [s for s in ss if isinstance(s.node, Store)]
    reads = [s for s in ss if isinstance(s.node, Load)]
    if len(writes) != 1 or len(reads) != 1:
        raise _Refuse(f"{len(writes)} write and {len(reads)} read sites (needs 1 and 1)")
    w, r = writes[0], reads[0]
    bw, br = w.where, r.where
    if not isinstance(br, Block):
        raise _Refuse(f"read {r.node.label} is a loop bound or condition")
    w2 = next((st for st in br.stores() if st.value is r.node), None)
    if w2 is None or w2.mem is m:
        raise _Refuse(f"read {r.node.label} is not stored straight into another memory")
    uses = 0
    for st in br.statements:
        exprs = (*st.index, st.value) if isinstance(st, Store) else (st.value,)
        for e in exprs:
            uses += sum(1 for x in walk(e) if x is r.node)
    if uses != 1:
        raise _Refuse(f"read {r.node.label} is used {uses} times (a route-through uses it "
                      f"once)")
    # lowest common ancestor and lock-step
    up_r = [br, *br.ancestors()]
    lca = next(c for c in [bw, *bw.ancestors()] if any(c is x for x in up_r))
    if lca is bw:
        stmts = bw.statements
        if not stmts.index(w.node) < stmts.index(w2):
            raise _Refuse(f"write {w.node.label} does not precede {w2.label} in block "
                          f"{bw.label}")
        pw, pr = [], []
    else:
        if not isinstance(lca, Sequential):
            raise _Refuse(f"writer and reader are in different clauses of {lca.label}")
        pw, pr = _path(bw, lca), _path(br, lca)
        if len(pw) != len(pr) or not all(_same_loop(a, b) for a, b in zip(pw[:-1], pr[:-1],
                                                                            strict=True)):
            raise _Refuse(f"blocks {bw.label} and {br.label} are not in lock-step (their "
                          f"loop nests below {lca.label} differ)")
        if isinstance(m, Reg) and len(pw) > 1:
            raise _Refuse(f"a Reg read in loop {pr[0].label} after the writer's loop "
                          f"{pw[0].label} sees the last value only")
        kids = lca.children()
        if kids.index(pw[0]) > kids.index(pr[0]):
            raise _Refuse(f"the reader {br.label} runs before the writer {bw.label}")
    target = w2.mem
    for s in sites[target.name]:
        if s.node is w2 or s.where is lca or not any(c is lca for c in s.where.ancestors()
                                                      + [s.where]):
            continue
        if lca is bw:
            stmts = bw.statements
            lo, hi = stmts.index(w.node), stmts.index(w2)
            between = any(lo < k < hi and _contains(st, s.node) for k, st in enumerate(stmts))
        else:
            kids = lca.children()
            child = _path(s.where, lca)[0]
            between = kids.index(pw[0]) <= kids.index(child) <= kids.index(pr[0])
        if between:
            raise _Refuse(f"{target.name!r} is also accessed by {s.node.label} between the "
                          f"writer {w.node.label} and the reader {r.node.label}")
    loops = {id(b.index.loop): a.index for a, b in zip(pw[:-1], pr[:-1], strict=True)}
    index = tuple(_subst(e, loops, r.lets) for e in w2.index)
    return w, w2, r, index


def _drop_dead_lets(stmts: list) -> list:
    """``stmts`` without the Lets whose temporary nothing reads and whose value reads no
    memory (a FIFO read would dequeue), repeatedly."""
    while True:
        used = {id(x) for st in stmts
                for e in ((*st.index, st.value) if isinstance(st, Store) else (st.value,))
                for x in walk(e) if isinstance(x, Temp)}
        dead = [st for st in stmts if isinstance(st, Let) and id(st.temp) not in used
                and not any(isinstance(x, Load) for x in walk(st.value))]
        if not dead:
            return stmts
        stmts = [st for st in stmts if not any(st is d for d in dead)]


def _prune(p: Program, block: Block) -> tuple[list[str], list[str]]:
    """Remove ``block`` if it is empty, then every enclosing loop left with an empty body
    whose bounds read no memory; returns the removed blocks' and loops' labels."""
    blocks: list[str] = []
    loops: list[str] = []
    c: Controller = block
    while c is not p.root:
        if isinstance(c, Block):
            empty = not c.statements
        else:
            empty = type(c) is Loop and not c.body and not any(
                isinstance(x, Load) for e in (c.start, c.stop, c.step) for x in walk(e))
        if not empty:
            break
        parent = c.parent
        parent.body = [x for x in parent.body if x is not c]
        (blocks if isinstance(c, Block) else loops).append(c.label)
        c = parent
    return blocks, loops


def rtelm(program: Program) -> tuple[Program, RtelmReport]:
    """Route-through elimination (SARA §III-C b; the lock-step rule in the module
    docstring), repeated until no route-through is left (a chain of FIFOs collapses).
    Returns ``(new program, report)``; ``program`` is not changed."""
    p = copy.deepcopy(program)
    done: list[RouteThrough] = []
    rm_blocks: list[str] = []
    rm_loops: list[str] = []
    kept: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        sites = _sites(p)
        kept = {}
        for m in list(p.memories.values()):
            if not isinstance(m, (FIFO, Reg)):
                continue
            try:
                w, w2, r, index = _route_through(p, m, sites)
            except _Refuse as err:
                kept[m.name] = err.args[0]
                continue
            bw, br = w.where, r.where
            new = Store(w2.mem, index, w.node.value, w2.label)
            bw.statements[bw.statements.index(w.node)] = new
            br.statements = _drop_dead_lets([s for s in br.statements if s is not w2])
            del p.memories[m.name]
            done.append(RouteThrough(m.name, w2.mem.name, w.node.label, r.node.label,
                                     w2.label, bw.label))
            b, lp = _prune(p, br)
            rm_blocks += b
            rm_loops += lp
            changed = True
            break
    return p, RtelmReport(tuple(done), tuple(rm_blocks), tuple(rm_loops), kept)


# ---------------------------------------------------------------------------- dupra / xbar-elm
@dataclass(frozen=True)
class DupraAccess:
    """One banked read: ``lanes`` receivers; ``forwarded``: BA streams forwarded from the
    request units to the receivers without dupra (receivers of lanes whose bank is not
    static; a static lane needs no BA after xbar-elm); ``recomputed``: streams each
    receiver computes itself with dupra; ``ops``: operators duplicated in all receivers
    (``ba_ops`` per receiver)."""

    memory: str
    access: str
    lanes: int
    forwarded: int
    recomputed: int
    ops: int


@dataclass(frozen=True)
class DupraReport:
    """:func:`dupra`'s plan: per banked read, and ``saved``: broadcast BA streams removed."""

    accesses: tuple[DupraAccess, ...]

    @property
    def saved(self) -> int:
        return sum(a.recomputed for a in self.accesses)


def dupra(program: Program, *, max_merge_fanin: int = 2,
          max_banks: int = 64) -> tuple[dict[str, BankingPlan], DupraReport]:
    """Read-address duplication (SARA §III-C e) on the banking of every parallel SRAM
    (:func:`~mapper.dataflow.banking.plan_banking`): each receiver lane of a read whose bank
    is not static recomputes the BA from its own counters (the address is affine in the loop
    indices) instead of receiving a forwarded, retimed BA stream. A data-dependent read
    (outside parallel loops) keeps its forwarded stream. Returns ``(plans, report)``.
    Raises :class:`~cgra.errors.MappingError` as ``plan_banking``."""
    plans = plan_banking(program, max_merge_fanin=max_merge_fanin, max_banks=max_banks)
    out = []
    for name, plan in plans.items():
        if plan.banks == 1:
            continue
        for a in plan.accesses:
            if a.kind != "read":
                continue
            per = a.lanes // len(a.request_lanes)
            dynamic = sum(per for ln in a.request_lanes if ln.static_bank is None)
            recompute = dynamic if a.address is not None else 0
            out.append(DupraAccess(name, a.label, a.lanes, dynamic, recompute,
                                   recompute * a.ba_ops))
    return plans, DupraReport(tuple(out))


@dataclass(frozen=True)
class XbarElmReport:
    """:func:`xbar_elm`'s result: SRAM name -> ``(links before, links after)`` of its
    lanes x partitions crossbars; ``point_to_point``: accesses (``memory/label``) left with
    point-to-point links only; ``merge_units``: SRAM -> merging units before and after."""

    crossbar: dict[str, tuple[int, int]]
    point_to_point: tuple[str, ...]
    merge_units: dict[str, tuple[int, int]]


def xbar_elm(program: Program, *, max_merge_fanin: int = 2,
             max_banks: int = 64) -> tuple[dict[str, BankingPlan], XbarElmReport]:
    """Crossbar datapath elimination (SARA §III-C d) on the banking plans of ``program``
    (static banks proved with z3 in :mod:`mapper.dataflow.banking`). Returns ``(plans,
    report)``. Raises :class:`~cgra.errors.MappingError` as ``plan_banking``."""
    plans = plan_banking(program, max_merge_fanin=max_merge_fanin, max_banks=max_banks)
    xbar = {n: (p.crossbar_before, p.crossbar_after) for n, p in plans.items()}
    p2p = tuple(f"{n}/{a.label}" for n, p in plans.items() for a in p.accesses
                if p.banks > 1 and a.par_loops and a.point_to_point)
    merges = {n: (p.merge_units, p.merge_units_after) for n, p in plans.items()}
    return plans, XbarElmReport(xbar, p2p, merges)
