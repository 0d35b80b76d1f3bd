"""Imperative-to-dataflow lowering: a :class:`~mapper.dataflow.program.Program` as a virtual-unit
dataflow graph (VUDFG).

Source: Zhang et al., "SARA: Scaling a Reconfigurable Dataflow Accelerator", ISCA 2021,
§III-A1 (one VCU per hyperblock, one VMU per data structure, request/response split of every
access, the write-then-read split of a hyperblock) and §III-A2 (data-dependent bounds, branch
and do-while conditions computed by a separate VCU and streamed as data); the project's SARA
notes §2.3.

The **control tree** (:func:`control_tree`) is the program's controller tree with one extra
leaf per controller whose bound or condition is computed by a control VCU: ``L3.bound``
just before a loop whose bounds read memory, ``I2.cond`` just before every branch, and
``D1.cond`` as the last child of every do-while (the condition is evaluated after each
pass). Every leaf (a :class:`~mapper.dataflow.program.Block` or one of those) runs in its own
virtual compute unit(s).

Units (:func:`lower`):

* a **compute** VCU per hyperblock; it is split into segments ``<name>.0``, ``<name>.1``, ...
  before a statement that reads a memory the same block wrote earlier (SARA §III-A1, last
  paragraph), the temporaries flowing to the next segment as a data stream. The name is the
  enclosing loop's label when the block is that loop's only child (``C`` .. ``G`` in SARA's
  Fig. 2a), else the block label;
* a **request** VCU ``<vcu>'<R>`` per read site R of a VMU or DRAM (generates the addresses
  from its counters, or forwards those the compute VCU computes from loaded data; the data
  goes back to the compute VCU), a **response** VCU ``<vcu>'<W>``
  per write site W (no datapath: forwards the address+data stream to the memory). Both
  count the memory's acknowledgements of their site and hold the site's CMMC tokens: they
  are the site's *port*, where its tokens are popped and pushed. (SARA streams a write
  straight from the VCU to the VMU and lets the data-receiving VCU stand for a read's
  response; routing both through one port per site keeps token forwarding sound when a
  site is skipped by a not-taken clause: the port pushes only after it holds its own
  incoming tokens, so transitive reduction stays valid.)
* a **control** VCU per extra leaf, broadcasting its values (kind ``bound`` / ``cond``) to
  every unit inside the controller;
* an **accumulator** (a Reg read and written by a loop body and by nothing else inside the
  loop, e.g. :meth:`~mapper.dataflow.program.Program.reduce`) is read once when the loop
  starts and written once when it ends; in between it is a register of the compute VCU
  (as Spatial's ``Reduce``): see ``VUDFG.promoted``;
* a **VMU** per on-chip memory (SRAM, FIFO, a Reg accessed by more than one VCU) and a DRAM
  interface (:class:`VMU` with ``kind="dram"``) per DRAM. A Reg accessed by one VCU only is
  a register inside it (a loop-carried ``lcd`` edge of its DFG), not a VMU.

Every VCU carries its counter chain (the labels of its enclosing loops and do-whiles, outer
to inner) and its datapath as a :class:`networkx.DiGraph` in the partitioner's format
(:mod:`mapper.dataflow.partition`): node ``kind`` in ``op``/``input``/``output``/``const``/
``mem_read``, ``op`` and ``width`` (``vector`` when the innermost loop has ``par`` > 1); edge
``lcd`` marks a loop-carried dependency through a local register.

Errors: :class:`cgra.errors.ProgramError` for a program the lowering cannot handle (a load
node shared by two blocks is refused by the builder already).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from cgra.errors import ProgramError
from mapper.dataflow.program import (
    DRAM,
    FIFO,
    SRAM,
    Block,
    Branch,
    Const,
    Controller,
    DoWhile,
    Expr,
    Index,
    Let,
    Load,
    Loop,
    Memory,
    Op,
    Program,
    Reg,
    Store,
    Temp,
    walk,
)

STREAM_KINDS = ("data", "addr", "ack", "token", "credit", "bound", "cond")
ROLES = ("compute", "request", "response", "control")


# ---------------------------------------------------------------------------- control tree
@dataclass(frozen=True)
class Leaf:
    """A leaf of the control tree that is not a program block: the bound computation of a
    loop (``what="bound"``), a branch condition or a do-while condition (``"cond"``)."""
    label: str
    controller: Controller = field(compare=False, repr=False)
    what: str = "bound"

    def exprs(self) -> tuple[Expr, ...]:
        c = self.controller
        if isinstance(c, Loop):
            return (c.start, c.stop, c.step)
        return (c.cond,)


def _bound_reads_memory(lp: Loop) -> bool:
    return any(isinstance(x, Load) for e in (lp.start, lp.stop, lp.step) for x in walk(e))


def control_tree(program: Program) -> nx.DiGraph:
    """The control tree of ``program``: nodes are labels with attributes ``obj`` (the
    :class:`Controller` or :class:`Leaf`), ``kind`` (``sequential``, ``loop``, ``do_while``,
    ``branch``, ``clause``, ``block``, ``leaf``), ``parent`` (label or ``None``), ``order``
    (position among the parent's children) and ``sequential`` (a loop or do-while with
    Spatial's ``Sequential`` schedule: its children, extra leaves included, are the stages
    the control tokens of :func:`mapper.dataflow.cmmc.control_deps` chain); edges parent ->
    child. Extra leaves as in the module docstring."""
    t = nx.DiGraph()

    def add(obj, label: str, parent: str | None, order: int) -> None:
        if isinstance(obj, Leaf):
            kind = "leaf"
        elif isinstance(obj, Block):
            kind = "block"
        elif isinstance(obj, Loop):
            kind = "loop"
        elif isinstance(obj, DoWhile):
            kind = "do_while"
        elif isinstance(obj, Branch):
            kind = "branch"
        elif parent is not None and t.nodes[parent]["kind"] == "branch":
            kind = "clause"
        else:
            kind = "sequential"
        seq = kind in ("loop", "do_while") and obj.sequential
        t.add_node(label, obj=obj, kind=kind, parent=parent, order=order, sequential=seq)
        if parent is not None:
            t.add_edge(parent, label)
        if isinstance(obj, Leaf) or isinstance(obj, Block):
            return
        kids: list = []
        if isinstance(obj, Branch):
            kids = [obj.then, obj.orelse]
        else:
            for ch in obj.body:
                if isinstance(ch, Loop) and _bound_reads_memory(ch):
                    kids.append(Leaf(f"{ch.label}.bound", ch, "bound"))
                if isinstance(ch, Branch):
                    kids.append(Leaf(f"{ch.label}.cond", ch, "cond"))
                kids.append(ch)
            if isinstance(obj, DoWhile):
                kids.append(Leaf(f"{obj.label}.cond", obj, "cond"))
        for k, ch in enumerate(kids):
            add(ch, ch.label, label, k)

    add(program.root, program.root.label, None, 0)
    return t


def tree_path(tree: nx.DiGraph, label: str) -> tuple[str, ...]:
    """Labels from the root down to ``label`` (inclusive)."""
    out = [label]
    p = tree.nodes[label]["parent"]
    while p is not None:
        out.append(p)
        p = tree.nodes[p]["parent"]
    return tuple(reversed(out))


# ---------------------------------------------------------------------------- data model
@dataclass(frozen=True)
class VCU:
    """A virtual compute unit.

    ``role``: ``compute`` (a hyperblock segment: ``statements`` are indices into the block's
    statement list), ``request`` / ``response`` (the address / acknowledgement side of
    access ``site`` on memory ``memory``), ``control`` (evaluates the bound or condition of
    controller ``leaf``). ``leaf``: the control-tree leaf it runs in; ``path``: control-tree
    labels root -> leaf; ``chain``: the counter chain, labels of the enclosing loops and
    do-whiles, outer to inner; ``par``: lanes (product of the ``par`` of the chain's loops,
    the unit's SIMD width x spatial copies); ``dfg``: its datapath (module docstring).
    """
    name: str
    role: str
    leaf: str
    path: tuple[str, ...]
    chain: tuple[str, ...]
    par: int = 1
    site: str | None = None
    memory: str | None = None
    statements: tuple[int, ...] = ()
    segment: int = 0
    dfg: nx.DiGraph = field(default_factory=nx.DiGraph, compare=False, hash=False, repr=False)


@dataclass(frozen=True)
class VMU:
    """A virtual memory unit (``kind`` ``sram``, ``fifo``, ``reg``) or a DRAM interface
    (``kind="dram"``) holding memory ``name`` (``shape`` in words, ``buffers`` the SRAM's
    multi-buffer depth)."""
    name: str
    kind: str
    shape: tuple[int, ...]
    dtype: str
    buffers: int = 1


@dataclass(frozen=True)
class Stream:
    """A link of the VUDFG from unit ``src`` to unit ``dst`` (VCU or VMU names).

    ``kind``: ``data`` (read data VMU -> VCU, a write's address+data VCU -> response VCU -> VMU,
    temporaries between the segments of a split block), ``addr`` (read addresses compute
    VCU -> request VCU -> VMU), ``ack`` (acknowledgements VMU -> the site's request or
    response VCU), ``token`` / ``credit`` (CMMC, added by :mod:`mapper.dataflow.cmmc`),
    ``bound`` / ``cond`` (control VCU -> the units inside the controller). ``width``:
    ``scalar`` or ``vector`` (the source's lanes > 1). ``site``: the access label or the
    controller label it serves."""
    src: str
    dst: str
    kind: str
    width: str = "scalar"
    site: str = ""


@dataclass(frozen=True)
class VUDFG:
    """The lowered program: units, memories and streams (SARA §III-A).

    ``vcus`` / ``vmus``: name -> unit; ``streams``: every link; ``tree``: the control tree
    (:func:`control_tree`); ``sites``: access label -> (leaf label, memory name, ``"R"`` or
    ``"W"``); ``local_regs``: Regs kept inside one VCU; ``compute_of``: access label ->
    compute VCU that evaluates it; ``promoted``: accumulator accesses (a Reg read and
    written by the body of a loop and by nothing else inside it) made once per run of that
    loop, access label -> loop label: the compute VCU keeps the value for the whole loop, its
    request / response VCUs run at the loop's level (path ending at the loop)."""
    program: Program = field(compare=False, repr=False)
    tree: nx.DiGraph = field(compare=False, repr=False)
    vcus: dict[str, VCU] = field(default_factory=dict, compare=False)
    vmus: dict[str, VMU] = field(default_factory=dict, compare=False)
    streams: tuple[Stream, ...] = ()
    sites: dict[str, tuple[str, str, str]] = field(default_factory=dict, compare=False)
    local_regs: frozenset[str] = frozenset()
    compute_of: dict[str, str] = field(default_factory=dict, compare=False)
    promoted: dict[str, str] = field(default_factory=dict, compare=False)

    def compute_vcus(self) -> list[VCU]:
        return [v for v in self.vcus.values() if v.role == "compute"]

    def graph(self) -> nx.MultiDiGraph:
        """A networkx view: a node per unit (attribute ``unit``: the VCU/VMU, ``type``
        ``vcu``/``vmu``), an edge per stream (attribute ``stream``, key = stream index)."""
        g = nx.MultiDiGraph()
        for n, v in self.vcus.items():
            g.add_node(n, unit=v, type="vcu")
        for n, m in self.vmus.items():
            g.add_node(n, unit=m, type="vmu")
        for k, s in enumerate(self.streams):
            g.add_edge(s.src, s.dst, key=k, stream=s, kind=s.kind)
        return g


# ---------------------------------------------------------------------------- helpers
def block_accesses(block: Block) -> list[tuple[int, object]]:
    """The access sites of ``block`` in program order: ``(statement index, Load or Store)``;
    a statement's loads (children first, as :func:`~mapper.dataflow.program.walk`: the
    store's indices, then its value) come before its store. A load node used by several
    statements is listed at its first."""
    out: list[tuple[int, object]] = []
    seen: set[int] = set()
    for k, s in enumerate(block.statements):
        exprs = (*s.index, s.value) if isinstance(s, Store) else (s.value,)
        for e in exprs:
            for x in walk(e):
                if isinstance(x, Load) and id(x) not in seen:
                    seen.add(id(x))
                    out.append((k, x))
        if isinstance(s, Store):
            out.append((k, s))
    return out


def leaf_accesses(obj) -> list[tuple[int, object]]:
    """Access sites of a control-tree leaf (a Block or a :class:`Leaf`), as
    :func:`block_accesses`."""
    if isinstance(obj, Block):
        return block_accesses(obj)
    out, seen = [], set()
    for e in obj.exprs():
        for x in walk(e):
            if isinstance(x, Load) and id(x) not in seen:
                seen.add(id(x))
                out.append((0, x))
    return out


def segments(block: Block) -> list[tuple[int, ...]]:
    """The statement indices of each segment of ``block``: a new segment starts at a
    statement that reads a (non-FIFO) memory written by an earlier statement of the current
    segment (SARA §III-A1: a hyperblock that writes then reads a VMU is split in two)."""
    segs: list[list[int]] = [[]]
    written: set[int] = set()
    for k, s in enumerate(block.statements):
        exprs = (*s.index, s.value) if isinstance(s, Store) else (s.value,)
        reads = {id(x.mem) for e in exprs for x in walk(e)
                 if isinstance(x, Load) and not isinstance(x.mem, FIFO)}
        if reads & written and segs[-1]:
            segs.append([])
            written = set()
        segs[-1].append(k)
        if isinstance(s, Store):
            written.add(id(s.mem))
    return [tuple(s) for s in segs]


def static_address(load: Load) -> bool:
    """Does the address of ``load`` depend on counters and constants only? Then its request
    VCU generates the addresses from its own counter chain (SARA §III-A1); otherwise (an
    address computed from loaded data or temporaries) the compute VCU sends them."""
    return not any(isinstance(x, (Load, Temp)) for e in load.index for x in walk(e))


def _memory_kind(m: Memory) -> str:
    if isinstance(m, DRAM):
        return "dram"
    if isinstance(m, FIFO):
        return "fifo"
    if isinstance(m, Reg):
        return "reg"
    if isinstance(m, SRAM):
        return "sram"
    raise ProgramError(f"memory {m.name!r}: unknown memory class {type(m).__name__}")


def _vcu_base_name(tree: nx.DiGraph, leaf: str) -> str:
    a = tree.nodes[leaf]
    parent = a["parent"]
    if a["kind"] == "block" and parent is not None:
        pk = tree.nodes[parent]["kind"]
        if pk in ("loop", "do_while") and tree.out_degree(parent) == 1:
            return parent
    return leaf


#: program operator on f32 operands -> the unit op name (SARA/pir's PCU names: a float op is
#: a different functional unit from the integer one of the same name)
FLOAT_OPS = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv", "min": "fmin",
             "max": "fmax", "lt": "flt", "le": "fle", "gt": "fgt", "ge": "fge", "eq": "feq",
             "ne": "fne", "neg": "fneg", "abs": "fabs"}


#: program operators whose result is a one-bit predicate
PREDICATES = frozenset({"lt", "le", "gt", "ge", "eq", "ne"})


def dfg_op(e: Op) -> str:
    """The op name of a datapath node for program operator ``e``: the operator's own name on
    i32 operands, its float unit's (``fadd``, ``flt``, ...) on f32 ones, ``to_float`` /
    ``to_int`` for the conversions (:data:`FLOAT_OPS`), ``shl_const`` / ``shr_const`` for a
    shift by a constant amount (a PE may shift only by a constant)."""
    if e.op == "to_f32":
        return "to_float"
    if e.op == "to_i32":
        return "to_int"
    if e.op in ("shl", "shr") and isinstance(e.args[1], Const):
        return f"{e.op}_const"
    operands = e.args[1:] if e.op == "select" else e.args
    if operands and operands[0].dtype == "f32":
        return FLOAT_OPS.get(e.op, e.op)
    return e.op


def _dfg(exprs_and_stores, width: str, local: set[int]) -> nx.DiGraph:
    """The datapath of a unit: ``exprs_and_stores`` is a list of (Expr or Store or Let)."""
    g = nx.DiGraph()
    ids: dict[int, str] = {}
    temp_src: dict[int, str] = {}
    reg_read: dict[int, list[str]] = {}
    counter = [0]

    def name(prefix: str) -> str:
        counter[0] += 1
        return f"{prefix}{counter[0]}"

    def node(e: Expr) -> str:
        if id(e) in ids:
            return ids[id(e)]
        if isinstance(e, Op):
            o = dfg_op(e)
            n = name(o)
            # a comparison's result is a predicate: the bit class in a scalar unit
            w = "bit" if width == "scalar" and e.op in PREDICATES else width
            g.add_node(n, kind="op", op=o, width=w)
            for a in e.args:
                g.add_edge(node(a), n, lcd=False)
        elif isinstance(e, Const):
            n = name("const")
            g.add_node(n, kind="const", op="const", width="scalar")
        elif isinstance(e, Index):
            n = f"ctr_{e.loop.label}"
            g.add_node(n, kind="input", op="counter", width=width)
        elif isinstance(e, Temp):
            n = temp_src.get(id(e))
            if n is None:
                n = f"temp_{e.name}"
                g.add_node(n, kind="input", op="temp", width=width)
        elif isinstance(e, Load):
            if id(e.mem) in local:
                n = f"reg_{e.label}"
                g.add_node(n, kind="mem_read", op="reg", width=width)
                reg_read.setdefault(id(e.mem), []).append(n)
            else:
                n = f"in_{e.label}"
                g.add_node(n, kind="input", op="read", width=width)
        else:
            raise ProgramError(f"cannot lower expression {e!r}")
        ids[id(e)] = n
        return n

    for item in exprs_and_stores:
        if isinstance(item, Let):
            temp_src[id(item.temp)] = node(item.value)
        elif isinstance(item, Store):
            n = f"out_{item.label}"
            g.add_node(n, kind="output", op="write", width=width)
            for e in (*item.index, item.value):
                g.add_edge(node(e), n, lcd=False)
            if id(item.mem) in local:
                v = node(item.value)
                for r in reg_read.get(id(item.mem), []):
                    if r != v:
                        g.add_edge(v, r, lcd=True)
        else:
            n = name("result")
            g.add_node(n, kind="output", op="result", width=width)
            g.add_edge(node(item), n, lcd=False)
    return g


# ---------------------------------------------------------------------------- lowering
def lower(program: Program) -> VUDFG:
    """Lower ``program`` to its VUDFG (SARA §III-A1/A2; module docstring). Returns the
    :class:`VUDFG` without CMMC tokens (:func:`mapper.dataflow.cmmc.cmmc` computes them).
    Raises :class:`ProgramError` for an expression the lowering does not know."""
    tree = control_tree(program)
    leaves = [n for n, a in tree.nodes(data=True) if a["kind"] in ("block", "leaf")]
    leaves.sort(key=lambda n: _order_key(tree, n))

    # which leaves touch each memory (a Reg touched by one block segment stays local)
    touch: dict[int, set[tuple[str, int]]] = {}
    seg_of: dict[tuple[str, int], int] = {}
    for leaf in leaves:
        obj = tree.nodes[leaf]["obj"]
        if isinstance(obj, Block):
            for si, seg in enumerate(segments(obj)):
                for k in seg:
                    seg_of[(leaf, k)] = si
        for k, acc in leaf_accesses(obj):
            key = (leaf, seg_of.get((leaf, k), 0))
            touch.setdefault(id(acc.mem), set()).add(key)
    local: set[int] = set()
    for m in program.memories.values():
        if isinstance(m, Reg) and len(touch.get(id(m), ())) <= 1:
            local.add(id(m))

    promoted = _promotions(program, tree, leaves, seg_of, local)

    vcus: dict[str, VCU] = {}
    vmus: dict[str, VMU] = {}
    streams: list[Stream] = []
    sites: dict[str, tuple[str, str, str]] = {}
    compute_of: dict[str, str] = {}
    for m in program.memories.values():
        if id(m) in local:
            continue
        vmus[m.name] = VMU(m.name, _memory_kind(m), m.shape, m.dtype,
                           getattr(m, "buffers", 1))

    inside: dict[str, list[str]] = {}   # controller label -> units whose path contains it
    for leaf in leaves:
        a = tree.nodes[leaf]
        obj = a["obj"]
        path = tree_path(tree, leaf)
        chain = tuple(p for p in path if tree.nodes[p]["kind"] in ("loop", "do_while"))
        par = 1
        for c in chain:
            o = tree.nodes[c]["obj"]
            if isinstance(o, Loop):
                par *= o.par
        width = "vector" if par > 1 else "scalar"
        units: list[str] = []
        if isinstance(obj, Block):
            base = _vcu_base_name(tree, leaf)
            segs = segments(obj)
            names = [base] if len(segs) == 1 else [f"{base}.{k}" for k in range(len(segs))]
            kept = local | {id(acc.mem) for _, acc in leaf_accesses(obj)
                            if acc.label in promoted}
            for si, (seg, nm) in enumerate(zip(segs, names, strict=True)):
                items = [obj.statements[k] for k in seg]
                vcus[nm] = VCU(nm, "compute", leaf, path, chain, par, statements=seg,
                               segment=si, dfg=_dfg(items, width, kept))
                units.append(nm)
                if si > 0:
                    streams.append(Stream(names[si - 1], nm, "data", width, leaf))
            accesses = leaf_accesses(obj)
            acc_unit = {id(acc): names[seg_of[(leaf, k)]] for k, acc in accesses}
        else:
            base = leaf
            vcus[base] = VCU(base, "control", leaf, path, chain, par,
                             dfg=_dfg(list(obj.exprs()), width, local))
            units.append(base)
            accesses = leaf_accesses(obj)
            acc_unit = {id(acc): base for _, acc in accesses}
        for _, acc in accesses:
            m = acc.mem
            rw = "W" if isinstance(acc, Store) else "R"
            sites[acc.label] = (leaf, m.name, rw)
            cu = acc_unit[id(acc)]
            compute_of[acc.label] = cu
            if id(m) in local:
                continue
            side = f"{_vcu_base_name(tree, leaf) if isinstance(obj, Block) else base}'{acc.label}"
            spath, schain, spar = path, chain, par
            if acc.label in promoted:        # once per run of the loop, outside it
                spath = tree_path(tree, promoted[acc.label])
                schain = chain[:-1]
                spar = par // tree.nodes[promoted[acc.label]]["obj"].par
            if rw == "R":
                vcus[side] = VCU(side, "request", leaf, spath, schain, spar, site=acc.label,
                                 memory=m.name)
                if not static_address(acc):
                    streams.append(Stream(cu, side, "addr", width, acc.label))
                streams.append(Stream(side, m.name, "addr", width, acc.label))
                streams.append(Stream(m.name, cu, "data", width, acc.label))
            else:
                vcus[side] = VCU(side, "response", leaf, spath, schain, spar, site=acc.label,
                                 memory=m.name)
                streams.append(Stream(cu, side, "data", width, acc.label))
                streams.append(Stream(side, m.name, "data", width, acc.label))
            streams.append(Stream(m.name, side, "ack", "scalar", acc.label))
            units.append(side)
        for u in units:
            for c in vcus[u].path[:-1]:
                inside.setdefault(c, []).append(u)

    # bound / condition broadcasts
    for leaf in leaves:
        a = tree.nodes[leaf]
        obj = a["obj"]
        if not isinstance(obj, Leaf):
            continue
        ctl = obj.controller.label
        kind = "bound" if obj.what == "bound" else "cond"
        for u in inside.get(ctl, []):
            if u != leaf:
                streams.append(Stream(leaf, u, kind, "scalar", ctl))
    return VUDFG(program, tree, vcus, vmus, tuple(streams), sites,
                 frozenset(m.name for m in program.memories.values() if id(m) in local),
                 compute_of, promoted)


def _promotions(program: Program, tree: nx.DiGraph, leaves: list[str],
                seg_of: dict[tuple[str, int], int], local: set[int]) -> dict[str, str]:
    """Accumulators kept in their compute VCU for a whole run of a loop: access label -> loop
    label. A Reg (with a VMU) qualifies in block ``b`` when ``b`` is the body of loop L (its
    parent), reads and writes the Reg in one segment, and no other access of the Reg is
    inside L: the VCU then reads the Reg once when L starts and writes it once when L ends
    (a Spatial ``Reduce`` accumulator; sequentially equivalent)."""
    sites: dict[int, list[tuple[str, int, object]]] = {}
    for leaf in leaves:
        for k, acc in leaf_accesses(tree.nodes[leaf]["obj"]):
            sites.setdefault(id(acc.mem), []).append((leaf, seg_of.get((leaf, k), 0), acc))
    out: dict[str, str] = {}
    for m in program.memories.values():
        if not isinstance(m, Reg) or id(m) in local:
            continue
        for leaf in dict.fromkeys(lf for lf, _, _ in sites[id(m)]):
            parent = tree.nodes[leaf]["parent"]
            if tree.nodes[leaf]["kind"] != "block" or tree.nodes[parent]["kind"] != "loop":
                continue
            mine = [(sg, a) for lf, sg, a in sites[id(m)] if lf == leaf]
            if (len({sg for sg, _ in mine}) != 1
                    or not any(isinstance(a, Store) for _, a in mine)
                    or not any(isinstance(a, Load) for _, a in mine)):
                continue
            if any(lf != leaf and parent in tree_path(tree, lf) for lf, _, _ in sites[id(m)]):
                continue
            out.update({a.label: parent for _, a in mine})
    return out


def _order_key(tree: nx.DiGraph, label: str) -> tuple[int, ...]:
    return tuple(tree.nodes[p]["order"] for p in tree_path(tree, label))


def program_order_key(tree: nx.DiGraph, leaf: str, position: int) -> tuple[int, ...]:
    """A sortable key of an access at ``position`` (index in :func:`leaf_accesses`) of
    control-tree ``leaf``: the child orders along the path, then the position."""
    return (*_order_key(tree, leaf), position)


__all__ = ["VCU", "VMU", "Stream", "VUDFG", "Leaf", "control_tree", "lower", "tree_path",
           "block_accesses", "leaf_accesses", "segments", "program_order_key", "static_address",
           "STREAM_KINDS", "ROLES"]
