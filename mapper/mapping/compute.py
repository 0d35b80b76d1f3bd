"""Compute mapping: instruction selection by covering kernel DAGs with the rewrite-rule table.

Source: the PEak paper (Daly et al., FMCAD 2022, section 5, "instruction selection with the
synthesised rewrite rules"): each rule is a pattern DAG over IR ops plus an instruction and
bindings of a PE that implements it; the application DAG is *covered* by rule patterns.

Rewrites (:func:`prepare_kernel`), each checked for equivalence on random vectors with the
reference :func:`mapper.ir.eval_op` by the tests:

* target-independent (:func:`mapper.ir.canonicalize`): ``ir.simplify`` (constant folding,
  ``x + 0``, ``x * 1``, ``x * 0``, ... , common subexpressions), canonical operand order of
  commutative ops (:data:`peak.ir.COMMUTATIVE`, the one table: constant second), constant
  reassociation ``(x + 3) + 4 -> x + 7`` over associative ops, ``op(x, x)`` identities;
* shifts by a constant ``>= width`` folded: ``lshr``/``shl`` -> the constant 0, ``ashr`` ->
  ``ashr`` by ``width - 1``;
* PE-dependent (:func:`rewrite_for_table`), only where the rule costs make the new form no
  costlier: strength reduction ``mul(x, 2**k) -> shl(x, k)`` (a shift-by-constant rule
  cheaper than any rule containing a multiply) and ``abs(sub(a, b)) -> absd(a, b)`` (a
  one-PE ``absd``); a multiply by a constant as shifts and adds when the PE has no rule
  rooted at ``coreir.mul`` (:func:`naf_digits`: the non-adjacent form of the constant,
  fewest add/sub);
* multi-PE decompositions of ops that have no rule rooted at them, e.g. ``absd = abs(sub)``.
  (Two-PE rules, e.g. ``smax`` as a compare plus a select on a PE without a maximum, are
  ordinary rules of cost 2 rooted at the op: :func:`peak.rules.table.compose_shape`.)
  :attr:`MappedKernel.decomposed` counts the PEs both kinds of decomposition cost.

Candidate matches (:func:`_candidates`): at every node, every binding of every rule whose
pattern is rooted at the node's op (commutative ops matched in both operand orders, rule
preconditions on folded constants checked, e.g. a constant shift amount ``< width``). An
IR constant bound to a rule constant (a ``[inK=const]`` input, ``coreir.const``'s
``value``) is folded into the PE's instruction field named by the rule's binding; a
constant that feeds a PE input (no folding rule) or a PE input the rule *ties* to a
constant is a constant PE (``coreir.const`` / ``corebit.const`` rule, one per distinct
value per kernel). Multi-op patterns (``pattern.muladd``, ``pattern.add3``, ... and their
constant-operand variants) cover several IR ops in one PE.

Covering (:func:`cover_kernel`, ``method``) minimises the total PE cost (rule costs from the
table plus the constant PEs):

1. ``optimal`` (default): the DP below gives a cover and an upper bound; then, when the
   kernel has at most :data:`EXACT_MAX_MATCHES` candidate matches, the exact minimum-cost
   cover is computed as a 0-1 integer program (:func:`_select_exact`, z3's optimiser with
   the deterministic resource limit :data:`EXACT_RLIMIT`; covering ILP as in Wilson et al.
   1994 / Gebotys 1997). A shared node may be recomputed inside several patterns when that
   saves PEs (two multiply-adds reading one product). When the solver finishes, the cover
   is optimal over every cover by the table's rules, so adding a capability (rule) to the
   PE never raises the kernel's PE count; otherwise the DP result is kept.
2. ``dp``: tree covering by dynamic programming (Aho, Ganapathi, Tjiang, TOPLAS 1989:
   optimal on trees) extended to DAGs as in NOLTIS (Koes, Goldstein, CGO 2008): a DP pass
   for a set of *fixed* shared nodes (computed once, free for their readers; other shared
   nodes recomputed), then hill climbing over that set from the classic split at fan-out
   points (:func:`_select_dp`). Deterministic, linear per pass.
3. ``greedy``: the earlier top-down maximal munch (first rule in :meth:`Rule.order`: most
   IR ops, most folded constants, priority, fewest PEs; interior pattern nodes must have
   one use), kept for comparison: it can be worse (tests/mapper/test_covering.py).

A node no rule covers raises :class:`cgra.errors.MappingError` naming the op, the node, the
kernel and the PE. PEs are emitted for the selected matches from the outputs down.

Output: a :class:`MappedKernel` (PEs with their assembled instruction, PE-to-PE connections,
kernel input elements consumed, output sources), turned into netlist PE instances (kind
``pe``, tag ``p``, config ``inst`` = the flat instruction from ``pe.json`` + field values) and
nets by :func:`kernel_netlist` (stand-alone, with IO instances) or :func:`map_compute`
(replacing every ``kernel_<stage>`` placeholder of :func:`mapper.mapping.memory.map_memory`'s netlist).
:func:`check_equivalence` simulates the mapped PEs with the PE's Python model
(:mod:`peak.model`) on random inputs against :meth:`mapper.ir.Kernel.evaluate`.

Rule table: see :mod:`mapper.collateral` for the file format and reader.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from cgra.errors import CgraError, MappingError
from mapper import ir
from mapper.mapping.memory import kernel_instance
from mapper.netlist import Netlist
from mapper.collateral import Rule, RuleTable, load_pe_model
from peak.ir import COMMUTATIVE
import z3
from lake.collateral import MemInfo
from peak.collateral import PEInfo, assemble_fields

_SHIFTS = ("coreir.lshr", "coreir.shl", "coreir.ashr")

#: A signal source inside a mapped kernel: ``("pe", pe name, PE output port)``,
#: ``("in", kernel input name, element index)`` or ``("lut", lookup name, "out0")`` (a MEM
#: tile in lookup-table mode, :class:`MappedLUT`).
Src = tuple[str, str, Any]

#: Core latency of a MEM tile in lookup-table mode (cycles from index to entry): the SRAM
#: read register of :mod:`lake.lut` (``LUT_LATENCY``), recorded in the instance config.
LUT_LATENCY = 1
#: Kernel input name prefix of a lookup's result while the rest of the kernel is covered.
_LUT_INPUT = "__lut"


@dataclass
class MappedLUT:
    """A lookup (:data:`mapper.ir.LUT_OP`) mapped to a MEM tile in lookup-table mode: its
    ``table`` (entries of ``width`` bits) and the source of its index ``raddr`` (a PE output,
    a kernel input element or another lookup). ``clamped``: the mapper inserted
    ``umin(raddr, len(table) - 1)`` on a PE because it could not bound the index (the tile
    reads its SRAM at the index modulo the capacity; the IR reads the last entry)."""

    name: str
    table: tuple[int, ...]
    width: int
    raddr: Src
    clamped: bool


@dataclass
class MappedPE:
    """One configured PE: ``rule`` (target key) covering IR ``nodes`` (ids in the prepared
    kernel), instruction field values ``fields`` and the flat instruction ``inst``
    (``instruction_width`` bits); ``inputs`` maps PE input ports to their sources (ports not
    listed are don't-care, left unconnected); ``outputs`` the PE output ports in use."""

    name: str
    rule: str
    op: str
    nodes: list[int]
    fields: dict[str, int]
    inst: int
    inputs: dict[str, Src] = field(default_factory=dict)
    outputs: set[str] = field(default_factory=set)
    multi_pe: int = 0      # PEs of the rule when it has several (a decomposition), else 0


@dataclass
class MappedKernel:
    """The cover of one kernel: PEs in topological order (producers first) and the source of
    each kernel output (a PE output, or a kernel input element for a pass-through)."""

    kernel: ir.Kernel
    prepared: ir.Kernel
    pe_name: str
    pes: list[MappedPE]
    outputs: dict[str, Src]
    seconds: float = 0.0
    method: str = "greedy"     # covering actually used: exact, dp or greedy
    luts: list[MappedLUT] = field(default_factory=list)

    def pe_count(self) -> int:
        return len(self.pes)

    @property
    def decomposed(self) -> dict[str, int]:
        """PEs spent on decompositions of ops the PE lacks, by kind: ``"<op> -> N PEs"``
        (a multi-PE rule, e.g. ``"smax -> 2 PEs"``: every PE of each application) and
        ``"mul by constant -> shl+add"`` (the PEs covering the nodes of the shift-and-add
        rewrite of :func:`rewrite_for_table`)."""
        out: dict[str, int] = {}
        nodes = self.prepared.nodes
        for p in self.pes:
            if p.multi_pe:
                key = f"{p.op.split('.')[-1]} -> {p.multi_pe} PEs"
            elif any((nodes[n].name or "").startswith(NAF_TAG) for n in p.nodes):
                key = "mul by constant -> shl+add"
            else:
                continue
            out[key] = out.get(key, 0) + 1
        return out

    def rule_counts(self) -> dict[str, int]:
        """Rule key -> number of PEs using it."""
        c: dict[str, int] = {}
        for p in self.pes:
            c[p.rule] = c.get(p.rule, 0) + 1
        return c


# ---------------------------------------------------------------------------- preparation
def _fold_shifts(kernel: ir.Kernel) -> ir.Kernel:
    """Rewrite shifts by a constant >= width (module docstring)."""
    def fold(new: ir.Kernel, n: ir.Node, args: list[int]) -> int | None:
        amt = ir.const_value(new, args[1]) if n.op in _SHIFTS else None
        if amt is None or amt < n.width:
            return None
        if n.op == "coreir.ashr":
            return new.add(n.op, args[0], new.const(n.width - 1, new.nodes[args[1]].width),
                           width=n.width, name=n.name)
        return new.const(0, n.width)
    return ir.rewrite(kernel, fold)


def _decompose(kernel: ir.Kernel, table: RuleTable) -> ir.Kernel:
    """Expand ops that have no single-PE rule but a decomposition into ops that do."""
    need = {n.op for n in kernel.live_nodes()
            if n.op != ir.INPUT and n.op not in ir.CONST_OPS}
    expand = {op: table.decompositions[op] for op in need
              if op in table.decompositions and not table.has_op(op)}
    if not expand:
        return kernel

    def dec(new: ir.Kernel, n: ir.Node, args: list[int]) -> int | None:
        if n.op not in expand:
            return None
        dag = expand[n.op]
        ports = dict(zip(ir.OPS[n.op].ports, args, strict=True))
        local: dict[str, int] = {}
        for pn in dag["nodes"]:
            pargs = []
            for port in ir.OPS[pn["op"]].ports:
                ref = pn["args"][port]
                pargs.append(ports[ref[1:]] if ref.startswith("$") else local[ref])
            local[pn["id"]] = new.add(pn["op"], *pargs, width=n.width)
        return local[dag["outputs"]["out"]]
    return ir.rewrite(kernel, dec)


#: Name prefix of the nodes of a multiply-by-constant rewrite (``naf:mul*<c>``): what
#: :attr:`MappedKernel.decomposed` attributes PEs by.
NAF_TAG = "naf:"


def naf_digits(c: int, width: int) -> list[tuple[int, int]]:
    """The non-adjacent form (NAF) of ``c`` modulo ``2**width``: ``[(k, d)]`` with digits
    ``d`` in {+1, -1}, ``k`` increasing, no two adjacent, ``c = sum(d * 2**k) mod 2**width``
    (a digit at ``k >= width`` is dropped: it is 0 modulo ``2**width``). The NAF has the
    fewest nonzero digits of any signed-binary form (the canonical signed digit recoding:
    Reitwiesner, "Binary arithmetic", Advances in Computers 1, 1960; the recoding loop is
    Hankerson, Menezes, Vanstone, "Guide to Elliptic Curve Cryptography", 2004, Algorithm
    3.30), so ``x * c`` costs the fewest shifts and adds/subtracts."""
    c &= (1 << width) - 1
    out: list[tuple[int, int]] = []
    k = 0
    while c:
        if c & 1:
            d = 2 - (c & 3)             # +1 if c = 1 (mod 4), -1 if c = 3 (mod 4)
            c -= d
            if k < width:
                out.append((k, d))
        c >>= 1
        k += 1
    return out


def _mul_by_shifts(new: ir.Kernel, x: int, c: int, width: int, name: str) -> int:
    """``x * c`` (mod ``2**width``) as ``sum(d * (x << k))`` over the NAF digits of ``c``
    (:func:`naf_digits`): positive terms added, negative ones subtracted (``0 - t`` first
    when there is no positive one); every node named ``name``."""
    digits = naf_digits(c, width)

    def term(k: int) -> int:
        if k == 0:
            return x
        return new.add("coreir.shl", x, new.const(k, width), width=width, name=name)
    pos = [term(k) for k, d in digits if d > 0]
    neg = [term(k) for k, d in digits if d < 0]
    acc = pos[0] if pos else new.add("coreir.sub", new.const(0, width), neg.pop(0),
                                     width=width, name=name)
    for t in pos[1:]:
        acc = new.add("coreir.add", acc, t, width=width, name=name)
    for t in neg:
        acc = new.add("coreir.sub", acc, t, width=width, name=name)
    return acc


def _cheapest(table: RuleTable, op: str, root_only: bool = False) -> float:
    """PE cost of the cheapest rule whose pattern contains ``op`` (rooted at ``op`` with
    ``root_only``); infinity when there is none."""
    costs = [r.cost for r in table.rules
             if (r.root_op == op if root_only else
                 any(pn["op"] == op for pn in r.pattern["nodes"]))]
    return min(costs, default=float("inf"))


def rewrite_for_table(kernel: ir.Kernel, table: RuleTable) -> ir.Kernel:
    """The rewrites that depend on the PE (module docstring, "Rewrites"); each fires only
    when the rule table makes the rewritten form no costlier than any cover of the
    original, so it never adds a PE:

    * strength reduction ``mul(x, 2**k) -> shl(x, k)`` (``1 <= k < width``) when the table
      has a ``coreir.shl[in1=const]`` rule cheaper than every rule whose pattern contains a
      ``coreir.mul`` (e.g. a PE without a multiplier, or with a multi-PE multiply);
    * ``abs(sub(a, b)) -> absd(a, b)`` when the subtraction has no other use and the table
      has a rule rooted at ``commonlib.absd`` no costlier than every rule rooted at
      ``commonlib.abs`` (the reverse, ``absd -> abs(sub)`` when only the decomposition
      exists, is :func:`_decompose`);
    * a multiply by a constant ``c`` that is not a power of two as shifts and adds (issue 41):
      ``mul(x, c) -> sum(d * shl(x, k))`` over the non-adjacent form of ``c``
      (:func:`naf_digits`; ``2 * nonzero digits - 1`` PEs at most, e.g. ``x * 37 =
      (x << 5) + (x << 2) + x``) when the table has no rule rooted at ``coreir.mul`` (neither
      ``coreir.mul`` nor ``coreir.mul[in1=const]``: the only way to compute it) and has
      ``coreir.shl[in1=const]``, ``coreir.add`` and ``coreir.sub`` rules (the shift amounts
      meeting the shift rule's preconditions). Without a multiplier rule the mapper would
      otherwise stop with "no rule for coreir.mul"; a multiply of two variables still does.

    ``kernel`` should be canonical (:func:`mapper.ir.canonicalize`: constants second)."""
    shl = table.by_key.get("coreir.shl[in1=const]")
    reduce_mul = shl is not None and shl.cost < _cheapest(table, "coreir.mul")
    naf = (shl is not None and not table.has_op("coreir.mul")
           and table.has_op("coreir.add") and table.has_op("coreir.sub"))
    fuse_absd = _cheapest(table, "commonlib.absd", True) <= _cheapest(table, "commonlib.abs",
                                                                        True)
    uses: dict[int, int] = {}
    for n in kernel.live_nodes():
        for a in n.args:
            uses[a] = uses.get(a, 0) + 1
    outs = set(kernel.outputs.values())

    def strength(new: ir.Kernel, n: ir.Node, args: list[int]) -> int | None:
        if not (reduce_mul or naf) or n.op != "coreir.mul":
            return None
        c = ir.const_value(new, args[1])
        if c is None or not 2 <= c < (1 << n.width):
            return None
        if c & (c - 1):
            if not naf or not all(pc.holds(k) for k, _ in naf_digits(c, n.width)
                                  for pc in shl.preconditions):
                return None
            return _mul_by_shifts(new, args[0], c, n.width, f"{NAF_TAG}mul*{c}")
        k = c.bit_length() - 1
        if not all(pc.holds(k) for pc in shl.preconditions):
            return None
        return new.add("coreir.shl", args[0], new.const(k, n.width), width=n.width,
                       name=n.name)

    def absd(new: ir.Kernel, n: ir.Node, args: list[int]) -> int | None:
        if not fuse_absd or n.op != "commonlib.abs":
            return None
        inner = new.nodes[args[0]]
        if inner.op != "coreir.sub" or uses.get(n.args[0], 0) != 1 or n.args[0] in outs:
            return None
        return new.add("commonlib.absd", *inner.args, width=n.width, name=n.name)

    return ir.rewrite(kernel, strength, absd)


def prepare_kernel(kernel: ir.Kernel, table: RuleTable, balance: bool = False) -> ir.Kernel:
    """The kernel the cover is computed on (module docstring, "Rewrites"):
    :func:`mapper.ir.canonicalize` (constant folding, identities, canonical operand order,
    constant reassociation), with ``balance`` reduction chains balanced
    (:func:`mapper.ir.balance_trees`), large constant shifts folded, :func:`rewrite_for_table`
    (strength reduction, ``absd`` fusion), decompositions expanded; canonicalised after
    each step. Computes the same function."""
    k = ir.canonicalize(kernel)
    if balance:
        k = ir.canonicalize(ir.balance_trees(k))
    k = ir.canonicalize(_fold_shifts(k))
    k = ir.canonicalize(rewrite_for_table(k, table))
    return ir.canonicalize(_decompose(k, table))


def min_pe_count(kernel: ir.Kernel, table: RuleTable) -> int:
    """A lower bound on the PEs :func:`cover_kernel` needs for ``kernel``, in the time of
    :func:`prepare_kernel` (no covering): every compute op of the prepared kernel (not an
    input, a constant or a lookup) is computed by some PE, and one PE computes at most the
    ops of the largest rule pattern. For refusing a kernel that cannot fit before mapping it
    (an unroll far beyond the array)."""
    k = prepare_kernel(kernel, table)
    ops = sum(1 for n in k.live_nodes()
              if n.op != ir.INPUT and n.op not in ir.CONST_OPS and n.op != ir.LUT_OP)
    per_pe = max((r.n_ops for r in table.rules), default=1)
    return -(-ops // max(1, per_pe))


# ---------------------------------------------------------------------------- matching
#: A constant PE: ``(op, value)`` with op ``coreir.const`` / ``corebit.const``.
ConstKey = tuple[str, int]


@dataclass
class _Match:
    rule: Rule
    covered: list[int]             # IR nodes implemented inside the PE(s) (root first)
    inputs: dict[str, int]         # IR port of the rule -> IR node id
    consts: dict[str, int]         # rule constant name -> value
    needs: tuple[int, ...] = ()    # compute nodes that must be produced by other PEs
    const_needs: tuple[ConstKey, ...] = ()   # constant PEs it reads (inputs and ties)

    @property
    def cost(self) -> int:
        return self.rule.cost


def _data_width(k: ir.Kernel, n: ir.Node) -> int:
    ws = [k.nodes[a].width for a in n.args] + [n.width]
    return max(ws)


def _envs(rule: Rule, k: ir.Kernel, root: int, uses: dict[int, int], outputs: set[int],
          exclusive: bool) -> Iterator[dict[str, Any]]:
    """Every binding of ``rule``'s pattern rooted at node ``root`` (commutative ops both
    ways) whose constants satisfy the preconditions. ``exclusive``: interior pattern nodes
    must have one use and not be kernel outputs (no node computed twice)."""
    dag = rule.pattern
    pnodes = {pn["id"]: pn for pn in dag["nodes"]}
    proot = dag["outputs"][rule.root_output]

    def go(pid: str, nid: int, env: dict[str, Any], top: bool) -> Iterator[dict[str, Any]]:
        pn = pnodes[pid]
        n = k.nodes[nid]
        if n.op != pn["op"]:
            return
        if pn["op"] in ir.CONST_OPS:
            name = str(pn["value"]).lstrip("#")
            if name in env["consts"] and env["consts"][name] != n.value:
                return
            yield dict(env, consts={**env["consts"], name: n.value})
            return
        if not top and exclusive and (nid in outputs or uses.get(nid, 0) != 1):
            return
        if not pn["op"].startswith("corebit.") and _data_width(k, n) != rule.width:
            return
        ports = ir.OPS[n.op].ports
        orders = [list(n.args)]
        if n.op in COMMUTATIVE and len(n.args) == 2 and n.args[0] != n.args[1]:
            orders.append([n.args[1], n.args[0]])
        for args in orders:
            envs = [dict(env, nodes=env["nodes"] + [nid])]
            for port, a in zip(ports, args, strict=True):
                ref = pn["args"][port]
                nxt: list[dict[str, Any]] = []
                for e in envs:
                    if ref.startswith("$"):
                        name = ref[1:]
                        if name in e["inputs"] and e["inputs"][name] != a:
                            continue
                        nxt.append(dict(e, inputs={**e["inputs"], name: a}))
                    else:
                        nxt.extend(go(ref, a, e, False))
                envs = nxt
            yield from envs

    for env in go(proot, root, {"nodes": [], "inputs": {}, "consts": {}}, True):
        if all(pc.holds(env["consts"].get(pc.port)) for pc in rule.preconditions):
            yield env


def _const_key(width: int, value: int) -> ConstKey:
    return ("corebit.const" if width == 1 else "coreir.const", value)


def _candidates(k: ir.Kernel, table: RuleTable, pe_inputs: dict[str, int], exclusive: bool
                ) -> dict[int, list[_Match]]:
    """Node id -> the distinct matches rooted there (same covered nodes, inputs and
    constant PEs: only the first in covering order kept), in covering order."""
    live = k.live_nodes()
    uses: dict[int, int] = {}
    for n in live:
        for a in n.args:
            uses[a] = uses.get(a, 0) + 1
    outputs = set(k.outputs.values())
    out: dict[int, list[_Match]] = {}
    for n in live:
        if n.op == ir.INPUT or n.op in ir.CONST_OPS:
            continue
        seen: set[tuple] = set()
        ms: list[_Match] = []
        for rule in table.rules_for(n.op):
            ties = tuple(_const_key(pe_inputs.get(pin, 16), int(b.value or 0))
                         for ri in rule.instances for pin, b in ri.inputs.items()
                         if b.kind == "tie")
            for env in _envs(rule, k, n.id, uses, outputs, exclusive):
                needs = tuple(sorted({a for a in env["inputs"].values()
                                      if k.nodes[a].op != ir.INPUT
                                      and k.nodes[a].op not in ir.CONST_OPS}))
                cneeds = tuple(sorted(set(ties) | {
                    (k.nodes[a].op, int(k.nodes[a].value)) for a in env["inputs"].values()
                    if k.nodes[a].op in ir.CONST_OPS}))
                key = (frozenset(env["nodes"]), needs, cneeds, rule.cost)
                if key in seen:
                    continue
                seen.add(key)
                ms.append(_Match(rule, env["nodes"], env["inputs"], env["consts"], needs,
                                 cneeds))
        out[n.id] = ms
    return out


# ---------------------------------------------------------------------------- covering
#: Covering methods of :func:`cover_kernel`.
COVER_METHODS = ("optimal", "dp", "greedy")
#: The exact covering is tried when a kernel has at most this many candidate matches ...
EXACT_MAX_MATCHES = 3000
#: ... within this z3 resource limit (deterministic, unlike a time limit); otherwise the
#: tree-covering DP result is kept.
EXACT_RLIMIT = 1_000_000

Selection = dict[int, _Match]


def _no_rule_error(k: ir.Kernel, kernel: ir.Kernel, table: RuleTable, nid: int,
                   pe_label: str) -> MappingError:
    n = k.nodes[nid]
    status = table.status.get(n.op)
    why = f" (rule table: {status})" if status and status != "found" else \
        " (the rule table has no rule for this op)" if not table.has_op(n.op) else ""
    return MappingError(
        f"kernel {kernel.name}: no rewrite rule of PE {pe_label} implements op "
        f"{n.op} (node {n.id}{', ' + n.name if n.name else ''}){why}; use a PE "
        f"whose ISA has this op and regenerate the rules (`cgra rules --pe ...`)"
        + ("; BFloat16 ops need the FP PE (peak.examples.cgra_pe_bf16:PE, design "
           "configs/bf16.toml or configs/bf16_small.toml)" if n.op in ir.FLOAT_OPS else ""))


def _select_greedy(k: ir.Kernel, cands: dict[int, list[_Match]]) -> Selection | int:
    """Greedy top-down maximal munch: at each node that must be computed (outputs first,
    reverse topological order) the first match in covering order (:meth:`Rule.order`:
    most IR ops, most folded constants, priority, fewest PEs). Returns the selection, or
    the id of a node with no match."""
    needed = set(k.outputs.values())
    sel: Selection = {}
    for n in reversed(k.live_nodes()):
        if n.id not in needed or n.id not in cands:
            continue
        if not cands[n.id]:
            return n.id
        m = cands[n.id][0]
        sel[n.id] = m
        needed.update(m.needs)
    return sel


def _cover_cost(sel: Selection, k: ir.Kernel, const_cost: dict[ConstKey, float]) -> float:
    """PEs of a selection: its rules' costs plus one constant PE per distinct constant
    read (by a selected match or as a kernel output)."""
    consts: set[ConstKey] = {q for m in sel.values() for q in m.const_needs}
    for v in k.outputs.values():
        if k.nodes[v].op in ir.CONST_OPS:
            consts.add((k.nodes[v].op, int(k.nodes[v].value)))
    return sum(m.cost for m in sel.values()) + sum(const_cost.get(q, float("inf"))
                                                   for q in consts)


def _dp_fixed(k: ir.Kernel, cands: dict[int, list[_Match]],
              const_cost: dict[ConstKey, float], fixed: set[int], fixed_consts: set[ConstKey]
              ) -> Selection | None:
    """One DP pass for a set of *fixed* nodes and constants (computed once anyway: free
    for their readers); every other input is charged its own best cost at each use, as if
    recomputed (patterns may cover shared nodes: duplication). Bottom-up best match per
    node (ties: fewer nodes needed from other PEs, then covering order), then top-down
    extraction from the outputs. ``None`` if an output cannot be covered."""
    inf = float("inf")
    best: dict[int, float] = {}
    choice: dict[int, _Match] = {}
    for n in k.live_nodes():
        if n.id not in cands:
            continue
        bc: tuple = (inf,)
        for m in cands[n.id]:
            c = m.cost + sum(best[u] for u in m.needs if u not in fixed) + \
                sum(const_cost.get(q, inf) for q in m.const_needs if q not in fixed_consts)
            key = (c, len(m.needs))
            if key < bc:
                bc, choice[n.id] = key, m
        best[n.id] = bc[0]
    sel: Selection = {}
    stack = list(k.outputs.values())
    while stack:
        v = stack.pop()
        if v in sel or v not in cands:
            continue
        if best[v] == inf:
            return None
        sel[v] = choice[v]
        stack.extend(choice[v].needs)
    return sel


#: At most this many DP passes in the local search of :func:`_select_dp`.
DP_MAX_PASSES = 2000


def _select_dp(k: ir.Kernel, cands: dict[int, list[_Match]], const_cost: dict[ConstKey, float]
               ) -> tuple[Selection, float]:
    """DAG covering by dynamic programming with a local search over shared nodes.

    Tree covering by DP (Aho, Ganapathi, Tjiang, "Code generation using tree matching and
    dynamic programming", ACM TOPLAS 11(4), 1989) is optimal on trees; on a DAG a shared
    node is either *fixed* (computed once by its own PE, free for its readers) or
    recomputed inside each reader's pattern. Following NOLTIS (Koes, Goldstein, "Near-
    optimal instruction selection on DAGs", CGO 2008), :func:`_dp_fixed` covers the DAG
    for a given fixed set, and the fixed set is improved by first-improvement hill
    climbing: starting from the better of "every shared node and constant fixed" (the
    classic split at fan-out points) and "nothing fixed but the outputs", toggle one
    shared node or constant at a time (in node order) and keep the toggle when the real
    cost of the extracted cover (:func:`_cover_cost`) drops, until no toggle helps (at
    most :data:`DP_MAX_PASSES` DP passes). Deterministic. Returns the selection and its
    cost (infinity if some output cannot be covered)."""
    inf = float("inf")
    live = k.live_nodes()
    uses: dict[int, int] = {}
    for n in live:
        for a in n.args:
            uses[a] = uses.get(a, 0) + 1
    outs = set(k.outputs.values())
    shared = [n.id for n in live if n.id in cands and uses.get(n.id, 0) > 1
              and n.id not in outs]
    consts = sorted({q for ms in cands.values() for m in ms for q in m.const_needs})

    def run(fixed: set[int], fc: set[ConstKey]) -> tuple[float, Selection | None]:
        sel = _dp_fixed(k, cands, const_cost, fixed, fc)
        return (inf, None) if sel is None else (_cover_cost(sel, k, const_cost), sel)

    seeds = [(outs | set(shared), set(consts)), (set(outs), set())]
    best_c, best_sel, best_f = inf, None, seeds[0]
    for f, fc in seeds:
        c, sel = run(f, fc)
        if c < best_c:
            best_c, best_sel, best_f = c, sel, (f, fc)
    if best_sel is None:
        return {}, inf
    fixed, fc = set(best_f[0]), set(best_f[1])
    passes, improved = len(seeds), True
    moves: list[tuple[str, Any]] = [("n", v) for v in shared] + [("c", q) for q in consts]
    while improved and passes < DP_MAX_PASSES:
        improved = False
        for kind, x in moves:
            if passes >= DP_MAX_PASSES:
                break
            f2, fc2 = set(fixed), set(fc)
            s = f2 if kind == "n" else fc2
            s.symmetric_difference_update({x})
            c, sel = run(f2, fc2)
            passes += 1
            if sel is not None and c < best_c:
                best_c, best_sel, fixed, fc, improved = c, sel, f2, fc2, True
    return best_sel, best_c


def _select_exact(k: ir.Kernel, cands: dict[int, list[_Match]],
                  const_cost: dict[ConstKey, float], bound: float
                  ) -> tuple[Selection, float] | None:
    """Minimum-cost DAG covering as a 0-1 integer program solved by z3's optimiser.

    One Boolean per candidate match (matches may overlap: a shared node can be recomputed
    inside several patterns) and one per constant PE. Constraints: at most one match per
    node; every compute output is the root of a selected match; a selected match needs a
    selected match at each compute node it reads and the constant PEs it reads (inputs
    bound to constants and tied PE inputs); constant outputs need their constant PE.
    Objectives (lexicographic): total PE cost (rule costs plus one constant rule per
    distinct constant), then IR op instances inside PEs (no gratuitous recomputation).
    ``bound``: a known cover's cost (the DP's), added as an upper bound. This is the
    covering formulation of e.g. Wilson, Grewal, Henshall, Gómez, "An ILP-based approach
    to code generation" (Code Generation for Embedded Processors, 1994) and Gebotys, "An
    efficient model for DSP code generation" (ISSS 1997). Returns ``None`` when z3 does
    not finish within :data:`EXACT_RLIMIT` or the program is infeasible."""

    ctx = z3.Context()
    opt = z3.Optimize(ctx=ctx)
    opt.set("rlimit", EXACT_RLIMIT)
    xs: dict[int, list[tuple[Any, _Match]]] = {}
    cvar: dict[ConstKey, Any] = {}
    ids = 0

    def const_var(q: ConstKey) -> Any:
        if q not in cvar:
            cvar[q] = z3.Bool(f"c_{q[0]}_{q[1]}", ctx)
            if const_cost.get(q) is None:
                opt.add(z3.Not(cvar[q]))
        return cvar[q]

    for v, ms in cands.items():
        lst = []
        for m in ms:
            lst.append((z3.Bool(f"m{ids}", ctx), m))
            ids += 1
        xs[v] = lst
        if len(lst) > 1:
            opt.add(z3.AtMost(*[x for x, _ in lst], 1))

    def computed(v: int) -> Any:
        return z3.Or(*[x for x, _ in xs[v]]) if xs.get(v) else z3.BoolVal(False, ctx)

    for v in k.outputs.values():
        n = k.nodes[v]
        if n.op in ir.CONST_OPS:
            opt.add(const_var((n.op, int(n.value))))
        elif n.op != ir.INPUT:
            opt.add(computed(v))
    cost_terms = []
    ops_terms = []
    for lst in xs.values():
        for x, m in lst:
            for u in m.needs:
                opt.add(z3.Implies(x, computed(u)))
            for q in m.const_needs:
                opt.add(z3.Implies(x, const_var(q)))
            cost_terms.append((x, m.cost))
            ops_terms.append((x, len(m.covered)))
    for q, y in cvar.items():
        c = const_cost.get(q)
        if c is not None:
            cost_terms.append((y, int(c)))
    # 0-1 objectives as weighted soft constraints (MaxSAT, lexicographic by group)
    for x, c in cost_terms:
        opt.add_soft(z3.Not(x), c, id="pes")
    for x, c in ops_terms:
        opt.add_soft(z3.Not(x), c, id="ops")
    if bound != float("inf") and cost_terms:
        opt.add(z3.PbLe([(x, c) for x, c in cost_terms], int(bound)))
    if opt.check() != z3.sat:
        return None
    model = opt.model()
    sel: Selection = {}
    stack = list(k.outputs.values())
    while stack:
        v = stack.pop()
        if v in sel or v not in xs:
            continue
        chosen = [m for x, m in xs[v] if z3.is_true(model.eval(x, model_completion=True))]
        if not chosen:
            return None
        sel[v] = chosen[0]
        stack.extend(chosen[0].needs)
    return sel, _cover_cost(sel, k, const_cost)


def pe_data_width(pe: PEInfo) -> int:
    """Bits of the PE's data words: its widest input in ``pe.json`` (the design's
    ``data_width``)."""
    return pe.data_width


#: ops whose ``w``-bit result is not the low ``w`` bits of the ``W``-bit result for any
#: inputs (:func:`widen_kernel` refuses them)
NOT_WIDENABLE = frozenset({"commonlib.mult_middle"})


#: operand positions a ``w``-bit op reads as signed (two's complement) or unsigned values: a
#: constant there is sign- or zero-extended when the kernel is widened (:func:`widen_kernel`)
_SIGNED_OPERANDS = {"commonlib.smax": (0, 1), "commonlib.smin": (0, 1), "coreir.slt": (0, 1),
                    "coreir.sle": (0, 1), "coreir.sgt": (0, 1), "coreir.sge": (0, 1),
                    "coreir.ashr": (0,), "commonlib.abs": (0,), "commonlib.absd": (0, 1)}
_UNSIGNED_OPERANDS = {"commonlib.umax": (0, 1), "commonlib.umin": (0, 1), "coreir.ult": (0, 1),
                      "coreir.ule": (0, 1), "coreir.ugt": (0, 1), "coreir.uge": (0, 1),
                      "coreir.lshr": (0, 1), "coreir.ashr": (1,), "coreir.shl": (1,),
                      ir.LUT_OP: (0,)}
#: operand positions whose low ``w`` bits alone make the result's low ``w`` bits: they read a
#: value the way its consumer does
_TRANSPARENT = {"coreir.add": (0, 1), "coreir.sub": (0, 1), "coreir.mul": (0, 1),
                "coreir.and": (0, 1), "coreir.or": (0, 1), "coreir.xor": (0, 1),
                "coreir.not": (0,), "coreir.mux": (0, 1), "coreir.shl": (0,)}


def _operand_reading(kernel: ir.Kernel, default: str) -> dict[tuple[int, int], str]:
    """``(node, operand position) -> "s" | "u"``: how each data operand is read, from the
    op (:data:`_SIGNED_OPERANDS`, :data:`_UNSIGNED_OPERANDS`) or, through ops that only
    pass low bits on (:data:`_TRANSPARENT`), from how their results are read (backwards
    from the outputs, which are read ``default``); a value read both ways, or only by
    comparisons for equality, is read ``default``."""
    reads: dict[int, set[str]] = {nid: {default} for nid in kernel.outputs.values()}
    how: dict[tuple[int, int], str] = {}
    for n in reversed(kernel.live_nodes()):
        mine = reads.get(n.id, set())
        own = default if len(mine) != 1 else next(iter(mine))
        for pos, a in enumerate(n.args):
            if pos in _SIGNED_OPERANDS.get(n.op, ()):
                r = "s"
            elif pos in _UNSIGNED_OPERANDS.get(n.op, ()):
                r = "u"
            elif pos in _TRANSPARENT.get(n.op, ()):
                r = own
            else:
                r = default
            how[(n.id, pos)] = r
            reads.setdefault(a, set()).add(r)
    return how


def widen_kernel(kernel: ir.Kernel, width: int, signed: bool = False) -> ir.Kernel:
    """``kernel`` with every data word (input or node wider than 1 bit) ``width`` bits wide:
    a kernel of ``w``-bit words (the DSL apps: 16) mapped onto a PE of ``width > w`` bits
    (a ``data_width = 32`` design); bits stay bits. A constant is sign-extended where it is
    read as a signed value and zero-extended where it is read as unsigned
    (:func:`_operand_reading`: by a signed / unsigned op, or through adds, multiplies, logic
    and muxes by how their results are read; outputs are read signed in a ``signed`` stage,
    :attr:`mapper.ir.Stage.signed`), so ``max(x, -180)`` keeps ``-180`` and ``(a * -16 +
    b) >> 5`` (arithmetic) keeps the negative product even in a stage whose output is
    ``UInt16``; a constant read both ways becomes two constants. Returns ``kernel`` itself
    when its words are already ``width`` bits, or wider (covering then reports the missing
    rule).

    Semantics: the widened kernel computes the same low ``w`` bits as the original for
    every input when it has only ``add sub mul shl and or xor not mux const`` (a carry or
    product bit never moves down); ``lshr``/``ashr``/compares/``min``/``max``/``abs``/
    ``absd`` read the high bits too, so they agree only while every intermediate value fits
    ``w`` bits: non-negative for unsigned ops, in the signed ``w``-bit range for signed ops
    (true for the camera images, 0..255, in the width-safe apps listed in docs/mapper.md).
    Raises :class:`MappingError` for :data:`NOT_WIDENABLE` ops (``mult_middle`` takes bits
    ``[width/2, 3 width/2)`` of the product: a different function at every width)."""
    data = {n.width for n in kernel.nodes if n.width > 1} | \
        {w for w in kernel.input_widths.values() if w > 1}
    if not data or max(data) >= width:
        return kernel
    bad = [n for n in kernel.live_nodes() if n.op in NOT_WIDENABLE]
    if bad:
        raise MappingError(f"kernel {kernel.name}: node {bad[0].id} ({bad[0].op}) of "
                           f"{bad[0].width}-bit words cannot run on a {width}-bit PE (its "
                           f"result is not the low bits of the {width}-bit op); use a design "
                           f"with data_width = {bad[0].width}")
    default = "s" if signed else "u"
    how = _operand_reading(kernel, default)
    new = ir.Kernel(kernel.name)
    for name, size in kernel.inputs.items():
        w = kernel.input_widths[name]
        new.declare_input(name, size, width if w > 1 else w)
    remap: dict[int, int] = {}
    consts: dict[tuple[int, str], int] = {}

    def const(n: ir.Node, r: str) -> int:
        """The widened constant ``n`` as read ``r`` (sign- or zero-extended)."""
        if n.width == 1:
            r = "u"
        if (n.id, r) not in consts:
            v = int(n.value)
            if r == "s" and v >> (n.width - 1) & 1:
                v += (1 << width) - (1 << n.width)
            consts[(n.id, r)] = new.const(v, width if n.width > 1 else 1)
        return consts[(n.id, r)]

    for n in kernel.live_nodes():
        if n.op == ir.INPUT:
            remap[n.id] = new.input(*n.input)
        elif n.op not in ir.CONST_OPS:
            args = [const(kernel.nodes[a], how[(n.id, pos)])
                    if kernel.nodes[a].op in ir.CONST_OPS else remap[a]
                    for pos, a in enumerate(n.args)]
            remap[n.id] = new.add(n.op, *args, width=width if n.width > 1 else None,
                                  name=n.name, table=n.table)
    for name, nid in kernel.outputs.items():
        n = kernel.nodes[nid]
        new.set_output(name, const(n, default) if n.op in ir.CONST_OPS else remap[nid])
    return new


def index_bound(k: ir.Kernel, nid: int) -> int:
    """An upper bound of the unsigned value of node ``nid`` (interval reasoning over the
    ops that bound a value: constants, ``and`` / ``umin`` with a constant, ``lshr`` by a
    constant, ``smin(smax(x, 0), c)`` / ``smax(smin(x, c), 0)`` clamps, muxes, lookups);
    ``2**width - 1`` when nothing bounds it."""
    n = k.nodes[nid]
    top = (1 << n.width) - 1
    c = [ir.const_value(k, a) for a in n.args]
    if n.op in ir.CONST_OPS:
        return int(n.value)
    if n.op == ir.LUT_OP:
        return max(n.table)
    if n.op in ("coreir.and", "commonlib.umin"):
        got = [v if v is not None else index_bound(k, a) for v, a in zip(c, n.args,
                                                                           strict=True)]
        return min(got)
    if n.op == "coreir.lshr" and c[1] is not None:
        return top >> min(c[1], n.width)
    if n.op == "coreir.mux":
        return max(index_bound(k, n.args[0]), index_bound(k, n.args[1]))
    if n.op in ("commonlib.smin", "commonlib.smax") and c[1] is not None:
        inner = k.nodes[n.args[0]]
        ci = ir.const_value(k, inner.args[1]) if len(inner.args) == 2 else None
        lo_hi = {("commonlib.smin", "commonlib.smax"): (ci, c[1]),
                 ("commonlib.smax", "commonlib.smin"): (c[1], ci)}.get((n.op, inner.op))
        if lo_hi is not None and None not in lo_hi:
            lo, hi = (ir.to_signed(v, n.width) for v in lo_hi)
            if 0 <= lo <= hi:
                return hi
    return top


def split_luts(kernel: ir.Kernel) -> tuple[ir.Kernel, list[tuple[str, tuple[int, ...], int,
                                                                   bool]]]:
    """``kernel`` with every live lookup cut out: lookup ``i`` becomes the kernel input
    ``__lut<i>`` (its entry) and the kernel output ``__lut<i>_raddr`` (its index, clamped
    with ``umin(raddr, len - 1)`` unless :func:`index_bound` proves it in range). Returns the
    cut kernel and ``(input name, table, width, clamped)`` per lookup. A kernel without
    lookups is returned as is."""
    live = kernel.live_nodes()
    if not any(n.op == ir.LUT_OP for n in live):
        return kernel, []
    new = ir.Kernel(kernel.name)
    for name, size in kernel.inputs.items():
        new.declare_input(name, size, kernel.input_widths[name])
    remap: dict[int, int] = {}
    cuts: list[tuple[str, tuple[int, ...], int, bool]] = []
    for n in live:
        if n.op == ir.INPUT:
            remap[n.id] = new.input(*n.input)
        elif n.op in ir.CONST_OPS:
            remap[n.id] = new.const(n.value, n.width)
        elif n.op == ir.LUT_OP:
            name = f"{_LUT_INPUT}{len(cuts)}"
            raddr = remap[n.args[0]]
            clamped = index_bound(new, raddr) > len(n.table) - 1
            if clamped:
                w = new.nodes[raddr].width
                raddr = new.add("commonlib.umin", raddr, new.const(len(n.table) - 1, w))
            new.set_output(f"{name}_raddr", raddr)
            new.declare_input(name, 1, n.width)
            remap[n.id] = new.input(name, 0)
            cuts.append((name, n.table, n.width, clamped))
        else:
            remap[n.id] = new.copy_op(n, [remap[a] for a in n.args])
    for name, nid in kernel.outputs.items():
        new.set_output(name, remap[nid])
    return new, cuts


def _with_luts(mk: MappedKernel, cuts: list[tuple[str, tuple[int, ...], int, bool]]
               ) -> MappedKernel:
    """Turn the cut kernel's lookup inputs / index outputs back into :class:`MappedLUT` s."""
    names = {c[0]: f"{mk.pe_name}_lut{i}" for i, c in enumerate(cuts)}

    def fix(src: Src) -> Src:
        if src[0] == "in" and src[1] in names:
            return ("lut", names[src[1]], "out0")
        return src

    luts = [MappedLUT(names[c[0]], c[1], c[2], fix(mk.outputs.pop(f"{c[0]}_raddr")), c[3])
            for c in cuts]
    for pe in mk.pes:
        pe.inputs = {p: fix(s) for p, s in pe.inputs.items()}
    mk.outputs = {o: fix(s) for o, s in mk.outputs.items()}
    mk.luts = luts
    mk.pes = _topo(mk.pes, {lt.name: lt.raddr for lt in luts})
    return mk


def cover_kernel(kernel: ir.Kernel, table: RuleTable, pe: PEInfo,
                 pe_name: str | None = None, method: str = "optimal",
                 balance: bool | None = None) -> MappedKernel:
    """Cover ``kernel`` with the rules of ``table`` for the PE described by ``pe``
    (``pe.json``). PE names are ``<pe_name>_pe<k>`` (default prefix: the kernel name).

    ``method`` (module docstring): ``optimal`` (default; minimum total PE cost, exact by
    0-1 programming when the kernel is small enough, else the DP), ``dp`` (tree covering
    with the DAG split at fan-out points) or ``greedy`` (maximal munch, the earlier
    algorithm, kept for comparison).

    ``balance``: cover the kernel with its reduction chains balanced into trees
    (:func:`mapper.ir.balance_trees`); ``None`` (default) covers it both ways and keeps the
    balanced cover unless it needs more PEs: fewer levels of PEs means the operands of a PE
    arrive closer together on the array (less branch-delay matching), and adding a
    capability to the PE still never raises the PE count.

    A kernel of narrower words than the PE's (``pe.json``) is widened first
    (:func:`widen_kernel`); the result's ``kernel`` is the widened one.

    Lookups (:data:`mapper.ir.LUT_OP`) are not covered by PEs: each becomes a
    :class:`MappedLUT` (a MEM tile in lookup-table mode, :func:`split_luts`) between the PEs
    computing its index and the PEs reading its entry.

    Raises :class:`MappingError` naming the op, node, kernel and PE when a node has no rule,
    or when the table holds no constant rule to materialise a needed constant.
    """
    kernel = widen_kernel(kernel, pe.data_width)
    cut, cuts = split_luts(kernel)
    if cuts:
        mk = cover_kernel(cut, table, pe, pe_name or kernel.name, method, balance)
        mk.kernel = kernel
        return _with_luts(mk, cuts)

    if balance is None:
        plain = cover_kernel(kernel, table, pe, pe_name, method, False)
        tree = cover_kernel(kernel, table, pe, pe_name, method, True)
        return tree if tree.pe_count() <= plain.pe_count() else plain

    if method not in COVER_METHODS:
        raise MappingError(f"kernel {kernel.name}: unknown covering method '{method}'; "
                           f"use one of {', '.join(COVER_METHODS)}")
    t0 = time.perf_counter()
    prefix = pe_name or kernel.name
    pe_label = pe.spec or pe.name or "?"
    pe_inputs = pe.input_widths()
    k = prepare_kernel(kernel, table, balance)
    const_cost: dict[ConstKey, float] = {}
    for n in k.live_nodes():
        if n.op in ir.CONST_OPS:
            const_cost[(n.op, int(n.value))] = 0
    cands = _candidates(k, table, pe_inputs, exclusive=method == "greedy")
    for ms in cands.values():
        for m in ms:
            for q in m.const_needs:
                const_cost[q] = 0
    for q in list(const_cost):
        r = table.by_key.get(q[0])
        if r is None:
            del const_cost[q]
        else:
            const_cost[q] = r.cost

    used = method
    if method == "greedy":
        got = _select_greedy(k, cands)
        if isinstance(got, int):
            raise _no_rule_error(k, kernel, table, got, pe_label)
        sel = got
    else:
        sel, cost = _select_dp(k, cands, const_cost)
        used = "dp"
        if cost == float("inf"):
            # no cover: greedy munch names the node without a rule, or emitting its cover
            # names the constant the PE cannot materialise
            got = _select_greedy(k, _candidates(k, table, pe_inputs, exclusive=True))
            if isinstance(got, int):
                raise _no_rule_error(k, kernel, table, got, pe_label)
            sel, used = got, "greedy"
        elif method == "optimal" and \
                sum(len(ms) for ms in cands.values()) <= EXACT_MAX_MATCHES:
            ex = _select_exact(k, cands, const_cost, cost)
            if ex is not None and ex[1] <= cost:
                sel, used = ex[0], "exact"

    # ------------------------------------------------------------------ emit the PEs
    produced: dict[int, Src] = {}
    pes: list[MappedPE] = []
    by_name: dict[str, MappedPE] = {}
    const_pes: dict[ConstKey, Src] = {}
    pending: list[tuple[Rule, dict[str, MappedPE], dict[str, int]]] = []

    def place(rule: Rule, nodes: list[int], consts: dict[str, int],
              inputs: dict[str, int]) -> Src:
        """Create the PEs of one rule application; returns the source of its output."""
        made: dict[str, MappedPE] = {}
        for ri in rule.instances:
            values: dict[str, int] = dict(ri.inst)
            for fname, cname in ri.const_fields.items():
                if cname not in consts:
                    raise MappingError(f"kernel {kernel.name}: rule {rule.target} binds constant "
                                       f"'{cname}' but the match gave none (the rule table is "
                                       f"inconsistent; regenerate it with `cgra rules`)")
                values[fname] = consts[cname]
            try:
                inst = assemble_fields(pe, values)
            except CgraError as exc:  # ConfigError from the assembler: name the rule
                raise MappingError(f"kernel {kernel.name}: rule {rule.target} does not assemble "
                                   f"for PE {pe_label} ({exc}); the rule table is stale, "
                                   f"regenerate it with `cgra rules`") from None
            mpe = MappedPE(f"{prefix}_pe{len(pes)}", rule.target, rule.op,
                           list(nodes) if ri is rule.instances[-1] else [], values, inst,
                           multi_pe=rule.cost if rule.cost > 1 else 0)
            pes.append(mpe)
            by_name[mpe.name] = mpe
            made[ri.id] = mpe
        pending.append((rule, made, inputs))
        iid, port = rule.outputs[rule.root_output]
        made[iid].outputs.add(port)
        return ("pe", made[iid].name, port)

    def const_src(value: int, width: int, what: str) -> Src:
        op = "corebit.const" if width == 1 else "coreir.const"
        key = (op, value)
        if key not in const_pes:
            rule = table.const_rule(op, width)
            if rule is None:
                raise MappingError(f"kernel {kernel.name}: {what} needs the constant {value} "
                                   f"({width} bits) on a PE input, and PE {pe_label} has no "
                                   f"{op} rule; add constant inputs to the PE or regenerate "
                                   f"the rules with `cgra rules`")
            names = {c for ri in rule.instances for c in ri.const_fields.values()}
            const_pes[key] = place(rule, [], {c: value for c in names}, {})
        return const_pes[key]

    def source(nid: int) -> Src:
        n = k.nodes[nid]
        if n.op == ir.INPUT:
            return ("in", n.input[0], n.input[1])
        if n.op in ir.CONST_OPS:
            return const_src(int(n.value), n.width, f"node {n.id} ({n.op})")
        return produced[nid]

    for n in reversed(k.live_nodes()):
        m = sel.get(n.id)
        if m is not None:
            produced[n.id] = place(m.rule, m.covered, m.consts, m.inputs)

    # connect PE inputs now that every needed node has a source
    for rule, made, inputs in pending:
        for ri in rule.instances:
            mpe = made[ri.id]
            for pin, b in ri.inputs.items():
                if b.kind == "ir":
                    src = source(inputs[b.port])
                elif b.kind == "tie":
                    src = const_src(int(b.value or 0), pe_inputs.get(pin, 16),
                                    f"PE {mpe.name} input {pin} (tied by rule {rule.target})")
                elif b.kind == "wire":
                    src = ("pe", made[b.instance].name, b.port)
                else:
                    continue
                mpe.inputs[pin] = src
                if src[0] == "pe":
                    by_name[src[1]].outputs.add(src[2])
    outputs = {name: source(nid) for name, nid in k.outputs.items()}
    return MappedKernel(kernel, k, prefix, _topo(pes), outputs, time.perf_counter() - t0,
                        used)


def _topo(pes: list[MappedPE], luts: dict[str, Src] | None = None) -> list[MappedPE]:
    """PEs in topological order (producers first); ``luts`` (lookup name -> index source)
    lets a PE reading a lookup come after the PEs computing the lookup's index."""
    by = {p.name: p for p in pes}
    luts = luts or {}

    def through(src: Src) -> Src:
        while src[0] == "lut":
            src = luts[src[1]]
        return src

    done: set[str] = set()
    out: list[MappedPE] = []

    def visit(p: MappedPE) -> None:
        stack = [(p, False)]
        while stack:
            q, expanded = stack.pop()
            if q.name in done:
                continue
            if expanded:
                done.add(q.name)
                out.append(q)
                continue
            stack.append((q, True))
            for src in q.inputs.values():
                src = through(src)
                if src[0] == "pe" and src[1] not in done:
                    stack.append((by[src[1]], False))

    for p in sorted(pes, key=lambda p: int(p.name.rsplit("_pe", 1)[1])):
        visit(p)
    return out


# ---------------------------------------------------------------------------- simulation
def simulate(mapped: MappedKernel, pe: PEInfo, spec: type,
             inputs: dict[str, list[int]], free: random.Random | None = None,
             models: dict[str, Any] | None = None) -> dict[str, int]:
    """Evaluate the mapped PEs once with the PE Python model ``spec`` (one call per PE, in
    topological order). ``inputs[name][i]`` = kernel input element i; don't-care PE inputs
    get random values from ``free`` (0 when ``None``). Returns kernel output -> value."""
    in_names = [q.name for q in pe.inputs]
    in_widths = [q.width for q in pe.inputs]
    out_names = [q.name for q in pe.outputs]
    models = models if models is not None else {}
    vals: dict[tuple[str, str], int] = {}

    luts = {lt.name: lt for lt in mapped.luts}

    def value(src: Src) -> int:
        if src[0] == "in":
            return int(inputs[src[1]][src[2]])
        if src[0] == "lut":
            lt = luts[src[1]]
            idx = value(lt.raddr) & ((1 << lt.width) - 1)
            # the MEM tile reads its SRAM at the index (the mapper bounded it)
            if idx >= len(lt.table):
                raise MappingError(f"lookup {lt.name}: index {idx} past its {len(lt.table)} "
                                   f"entries reached the MEM tile (the index clamp is missing)")
            return lt.table[idx]
        return vals[(src[1], src[2])]

    for pe in mapped.pes:
        args = []
        for pin, w in zip(in_names, in_widths, strict=True):
            if pin in pe.inputs:
                args.append(value(pe.inputs[pin]) & ((1 << w) - 1))
            else:
                args.append(free.getrandbits(w) if free is not None else 0)
        model = models.get(pe.name)
        if model is None:
            model = models[pe.name] = spec()
        res = model(pe.inst, *args)
        res = res if isinstance(res, tuple) else (res,)
        for pout, v in zip(out_names, res, strict=True):
            vals[(pe.name, pout)] = int(v)
    return {name: value(src) for name, src in mapped.outputs.items()}


@dataclass
class EquivalenceReport:
    """Result of :func:`check_equivalence`: vectors simulated, PE model calls, seconds."""

    kernel: str
    vectors: int
    pe_calls: int
    seconds: float


def check_equivalence(mapped: MappedKernel, pe: PEInfo, spec: type | None = None,
                      vectors: int = 1000, seed: int = 0) -> EquivalenceReport:
    """Check that the mapped PEs compute the original kernel: ``vectors`` random input
    vectors (uniform ``w``-bit words per kernel input element; don't-care PE inputs random
    too), each simulated with the PE Python model and compared with
    :meth:`mapper.ir.Kernel.evaluate` of the *original* kernel. Raises :class:`MappingError`
    with the first counterexample (inputs, expected, got)."""
    t0 = time.perf_counter()
    spec = spec or load_pe_model(pe)
    rng = random.Random(seed)
    k = mapped.kernel
    models: dict[str, Any] = {}
    for v in range(vectors):
        ins = {name: [rng.getrandbits(k.input_widths[name]) for _ in range(size)]
               for name, size in k.inputs.items()}
        want = k.evaluate(ins)
        got = simulate(mapped, pe, spec, ins, rng, models)
        if got != want:
            bad = {o: (want[o], got[o]) for o in want if want[o] != got[o]}
            raise MappingError(f"kernel {k.name}: mapped PEs differ from the kernel on vector "
                               f"{v} (inputs {ins}): output -> (expected, got) {bad}")
    return EquivalenceReport(k.name, vectors, vectors * len(mapped.pes),
                             time.perf_counter() - t0)


# ---------------------------------------------------------------------------- netlists



def pe_config(pe: MappedPE, mapped: MappedKernel, latency: int | None = None
              ) -> dict[str, Any]:
    """Netlist config of a PE instance: ``inst`` (flat instruction, the PE core's config
    field), the rule, the IR ops covered, the instruction field values and the core
    ``latency`` (cycles, :attr:`mapper.collateral.Collateral.pe_latency`; omitted when
    ``None``)."""
    cfg: dict[str, Any] = {
        "inst": pe.inst, "rule": pe.rule, "op": pe.op, "kernel": mapped.kernel.name,
        "ops": [mapped.prepared.nodes[i].op for i in pe.nodes],
        "instruction": dict(pe.fields),
    }
    if latency is not None:
        cfg["latency"] = int(latency)
    return cfg


def lut_config(lt: MappedLUT, mapped: MappedKernel, preset: str | None = None
               ) -> dict[str, Any]:
    """Netlist config of a lookup's MEM instance (kind ``mem``, tag ``m``): ``lut`` (the
    entries, word ``i`` of the SRAM), the core ``latency`` (:data:`LUT_LATENCY` cycles), the
    kernel, whether the index was clamped, and the Lake ``preset`` when known (the
    bitstream generator takes the design's otherwise)."""
    cfg: dict[str, Any] = {"lut": list(lt.table), "latency": LUT_LATENCY,
                           "kernel": mapped.kernel.name, "clamped": lt.clamped}
    if preset is not None:
        cfg["preset"] = preset
    return cfg


def _add_pes(nl: Netlist, mapped: MappedKernel, preset: str | None = None,
             latency: int | None = None) -> None:
    for pe in mapped.pes:
        nl.add_instance(pe.name, "pe", "p", pe_config(pe, mapped, latency))
    for lt in mapped.luts:
        nl.add_instance(lt.name, "mem", "m", lut_config(lt, mapped, preset))


def _internal_sinks(mapped: MappedKernel) -> dict[Src, list[tuple[str, str]]]:
    """Source -> PE and lookup input sinks, for every PE input and lookup index."""
    sinks: dict[Src, list[tuple[str, str]]] = {}
    for pe in mapped.pes:
        for pin, src in pe.inputs.items():
            sinks.setdefault(src, []).append((pe.name, pin))
    for lt in mapped.luts:
        sinks.setdefault(lt.raddr, []).append((lt.name, "in0"))
    return sinks


def _lut_width(mapped: MappedKernel, name: str) -> int:
    return next(lt.width for lt in mapped.luts if lt.name == name)


def kernel_netlist(mapped: MappedKernel, pe: PEInfo, nl: Netlist | None = None,
                   preset: str | None = None, latency: int | None = None) -> Netlist:
    """A stand-alone netlist of one mapped kernel (added to ``nl`` when given): its PEs, one
    IO input per used kernel input element (``io_in_<kernel>_<input>_<i>``, kind ``io_in``,
    tag ``I``/``i`` by width) and one IO output per kernel output (``io_out_<kernel>_<out>``).
    ``preset``: the MEM preset of lookups; ``latency``: the PE core latency
    (:func:`pe_config`)."""
    nl = nl if nl is not None else Netlist(mapped.kernel.name)
    k = mapped.kernel
    _add_pes(nl, mapped, preset, latency)
    ow = pe.output_widths()
    sinks = _internal_sinks(mapped)
    ends: dict[tuple[str, str], list[tuple[str, str]]] = {}
    widths: dict[tuple[str, str], int] = {}

    def terminal(src: Src) -> tuple[str, str]:
        if src[0] == "pe":
            widths[(src[1], src[2])] = ow[src[2]]
            return (src[1], src[2])
        if src[0] == "lut":
            widths[(src[1], src[2])] = _lut_width(mapped, src[1])
            return (src[1], src[2])
        name, idx = src[1], src[2]
        inst = f"io_in_{k.name}_{name}_{idx}"
        w = k.input_widths[name]
        if inst not in nl.instances:
            nl.add_instance(inst, "io_in", "I" if w > 1 else "i",
                            {"kernel": k.name, "input": name, "index": idx, "width": w})
        widths[(inst, "out")] = w
        return (inst, "out")

    for src, ss in sinks.items():
        ends.setdefault(terminal(src), []).extend(ss)
    for oname, src in mapped.outputs.items():
        t = terminal(src)
        w = widths[t]
        inst = f"io_out_{k.name}_{oname}"
        nl.add_instance(inst, "io_out", "I" if w > 1 else "i",
                        {"kernel": k.name, "output": oname, "width": w})
        ends.setdefault(t, []).append((inst, "in"))
    for t, ss in ends.items():
        nl.add_net(t, ss, widths[t], f"{t[0]}_{t[1]}")
    nl.validate()
    return nl


def check_luts(m: MappedKernel, mem: MemInfo | None) -> None:
    """A lookup needs a MEM tile with lookup-table mode that holds its table (``mem``: Lake's
    part of the design's ``mem.json``; ``None``: a design without MEM tiles). Raises
    :class:`MappingError` naming the lookup and the fix."""
    if not m.luts:
        return
    if mem is None:
        raise MappingError(f"kernel {m.kernel.name}: lookup {m.luts[0].name} needs a MEM tile "
                           f"in lookup-table mode; the design has no MEM tiles (mem_ratio > 0)")
    if not mem.supports("lookup_table"):
        raise MappingError(f"kernel {m.kernel.name}: lookup {m.luts[0].name} needs a MEM tile "
                           f"with lookup-table mode; preset {mem.preset!r} has none "
                           f"(use a dual-port preset, e.g. mem_preset = \"dualport_2048x16\")")
    cap = mem.capacity_words
    for lt in m.luts:
        if len(lt.table) > cap:
            raise MappingError(f"kernel {m.kernel.name}: lookup {lt.name} has "
                               f"{len(lt.table)} entries; the MEM tile holds {cap} words "
                               f"(shorten the table or split the lookup)")


def decomposition_summary(kernels: Iterable[MappedKernel]) -> dict[str, int]:
    """PEs spent on decompositions over ``kernels``, by kind (:attr:`MappedKernel.decomposed`,
    summed; kinds sorted)."""
    out: dict[str, int] = {}
    for m in kernels:
        for kind, n in m.decomposed.items():
            out[kind] = out.get(kind, 0) + n
    return dict(sorted(out.items()))


def decomposition_note(kernels: Iterable[MappedKernel]) -> str:
    """The map report's note on decomposition PEs, e.g. ``" (28 from decompositions: mul by
    constant -> shl+add)"``, ``" (14 from decompositions: 6 for smax -> 2 PEs, 8 for umax ->
    2 PEs)"``; empty when no PE is spent on one."""
    d = decomposition_summary(kernels)
    if not d:
        return ""
    kinds = ", ".join(f"{n} for {k}" for k, n in d.items()) if len(d) > 1 else next(iter(d))
    return f" ({sum(d.values())} from decompositions: {kinds})"


@dataclass
class ComputeMapping:
    """Result of :func:`map_compute`: the netlist with PEs instead of kernel placeholders,
    the cover of every stage, and seconds spent."""

    netlist: Netlist
    kernels: dict[str, MappedKernel]
    seconds: float

    def pe_counts(self) -> dict[str, int]:
        """Stage -> PEs."""
        return {s: m.pe_count() for s, m in self.kernels.items()}


def map_compute(netlist: Netlist, table: RuleTable, pe: PEInfo,
                method: str = "optimal", mem: MemInfo | None = None,
                latency: int | None = None) -> ComputeMapping:
    """Replace each ``kernel`` placeholder instance (``kernel_<stage>``, config ``dag`` =
    the kernel JSON; see :mod:`mapper.mapping.memory`) of ``netlist`` by its PEs and rewire the nets:
    a net read by placeholder port ``<input>.<index>`` now drives the PE inputs that read
    that element (``method``: the covering method of :func:`cover_kernel`); a net driven by placeholder port ``out_<lane>`` is driven by the PE output
    that computes it (or, for a pass-through output, merged into the net of the input
    element it copies). Nets from one source are merged. Kernels of narrower words than the
    PE's are widened first (:func:`widen_kernel`; config ``signed`` = a signed stage, whose
    constants are sign-extended); net widths are the memory netlist's (the MEM word) and
    the PE's output widths. A lookup becomes a MEM instance (:func:`lut_config`; ``mem``,
    Lake's part of the design's ``mem.json``, gives its preset and capacity, checked by
    :func:`check_luts`; ``None``: not checked here). ``latency``: the PE core latency
    (:func:`pe_config`). Returns a new netlist;
    raises :class:`MappingError` (no rule for an op, see :func:`cover_kernel`; a lookup
    table longer than the MEM tile holds, or a MEM without lookup-table mode)."""
    t0 = time.perf_counter()
    out = Netlist(netlist.name)
    mapped: dict[str, MappedKernel] = {}
    ow = pe.output_widths()
    for name, inst in netlist.instances.items():
        if inst.kind != "kernel":
            out.add_instance(name, inst.kind, inst.tag, inst.config)
            continue
        stage = inst.config.get("stage", name)
        if kernel_instance(stage) != name or "dag" not in inst.config:
            raise MappingError(f"netlist {netlist.name}: kernel placeholder {name} has no "
                               f"'dag' / 'stage' config; build it with mapper.mapping.memory.map_memory")
        k = widen_kernel(ir.Kernel.from_dict(inst.config["dag"]), pe.data_width,
                         bool(inst.config.get("signed", False)))
        m = cover_kernel(k, table, pe, pe_name=f"pe_{stage}", method=method)
        mapped[name] = m
        if mem is not None:
            check_luts(m, mem)
        _add_pes(out, m, mem.preset if mem else None, latency)

    driver: dict[tuple[str, str], tuple[str, str]] = {}
    widths: dict[tuple[str, str], int] = {}
    for n in netlist.nets:
        widths[n.source] = n.width
        for s in n.sinks:
            driver[s] = n.source

    def resolve(t: tuple[str, str], depth: int = 0) -> tuple[str, str]:
        """A terminal in the new netlist for old source ``t``."""
        if t[0] not in mapped:
            return t
        src = mapped[t[0]].outputs.get(t[1])
        if src is None:
            raise MappingError(f"netlist {netlist.name}: net source {t[0]}.{t[1]} is not an "
                               f"output of the kernel {mapped[t[0]].kernel.name}")
        if src[0] == "pe":
            widths[(src[1], src[2])] = ow[src[2]]
            return (src[1], src[2])
        if src[0] == "lut":
            widths[(src[1], src[2])] = _lut_width(mapped[t[0]], src[1])
            return (src[1], src[2])
        port = f"{src[1]}.{src[2]}"
        if (t[0], port) not in driver or depth > len(mapped):
            raise MappingError(f"netlist {netlist.name}: kernel output {t[0]}.{t[1]} copies "
                               f"input {port}, which no net drives")
        r = resolve(driver[(t[0], port)], depth + 1)
        return r

    ends: dict[tuple[str, str], list[tuple[str, str]]] = {}
    names: dict[tuple[str, str], str] = {}
    for n in netlist.nets:
        src = resolve(n.source)
        widths.setdefault(src, n.width)
        names.setdefault(src, n.name)
        lst = ends.setdefault(src, [])
        for s in n.sinks:
            if s[0] in mapped:
                m = mapped[s[0]]
                iname, _, idx = s[1].rpartition(".")
                lst.extend(t for t in _internal_sinks(m).get(("in", iname, int(idx)), []))
            else:
                lst.append(s)
    for m in mapped.values():
        for src, ss in _internal_sinks(m).items():
            if src[0] in ("pe", "lut"):
                t = (src[1], src[2])
                widths[t] = ow[src[2]] if src[0] == "pe" else _lut_width(m, src[1])
                names.setdefault(t, f"{src[1]}_{src[2]}")
                ends.setdefault(t, []).extend(ss)
    for t, ss in ends.items():
        if ss:
            out.add_net(t, ss, widths[t], names[t])
    out.validate()
    return ComputeMapping(out, {m.pe_name[len("pe_"):]: m for m in mapped.values()},
                          time.perf_counter() - t0)
