"""Compute mapping: instruction selection by covering kernel DAGs with the rewrite-rule table.

Source: the PEak paper (Daly et al., FMCAD 2022, section 5, "instruction selection with the
synthesised rewrite rules"): each rule is a pattern DAG over IR ops plus an instruction and
bindings of a PE that implements it; the application DAG is *covered* by rule patterns.

Algorithm (:func:`cover_kernel`), on the kernel after :func:`prepare_kernel` (``ir.simplify``,
shifts by a constant ``>= width`` folded: ``lshr``/``shl`` -> the constant 0, ``ashr`` -> ``ashr``
by ``width - 1``, and multi-PE decompositions of ops that have no single-PE rule, e.g.
``absd = abs(sub)``):

1. Rules are tried in this order: patterns covering more IR ops first (multi-op rules such as
   multiply-add before single ops), then rules folding more constants (``coreir.add[in1=const]``
   before ``coreir.add``), then by the table's ``priority`` (larger first), then lower ``cost``.
2. Greedy top-down covering ("maximal munch"): nodes are visited from the outputs in reverse
   topological order; the first rule whose pattern matches at a node that must be computed
   is selected. A pattern's interior nodes must have exactly one use (their value is not
   visible outside the PE); commutative ops (``add mul and or xor eq neq smax smin umax umin``
   and the ``corebit`` logic ops) match with their operands in either order. The IR nodes
   bound to pattern inputs become nodes that must be computed.
3. An IR constant bound to a rule constant (a ``[inK=const]`` input or ``coreir.const``'s
   ``value``) is folded into the PE's instruction field named by the rule's binding, if the
   rule's preconditions hold (e.g. a constant shift amount ``< width``). A constant that
   feeds a PE input (no folding rule) is materialised once per kernel by the
   ``coreir.const`` / ``corebit.const`` rule (one PE per distinct value); so are PE inputs
   the rule *ties* to a constant.
4. A node for which no rule matches raises :class:`cgra.errors.MappingError` naming the op,
   the node, the kernel and the PE.

Output: a :class:`MappedKernel` (PEs with their assembled instruction, PE-to-PE connections,
kernel input elements consumed, output sources), turned into netlist PE instances (kind
``pe``, tag ``p``, config ``inst`` = the flat instruction from ``pe.json`` + field values) and
nets by :func:`kernel_netlist` (stand-alone, with IO instances) or :func:`map_compute`
(replacing every ``kernel_<stage>`` placeholder of :func:`mapper.memory.map_memory`'s netlist).
:func:`check_equivalence` simulates the mapped PEs with the PE's Python model
(:mod:`peak.model`) on random inputs against :meth:`mapper.ir.Kernel.evaluate`.

Rule table: see :mod:`mapper.collateral` for the file format and reader.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

from cgra.errors import CgraError, MappingError
from mapper import ir
from mapper.memory import kernel_instance
from mapper.netlist import Netlist
from mapper.collateral import Rule, RuleTable, load_pe_model

#: Ops whose two data operands may be swapped.
COMMUTATIVE = frozenset({
    "coreir.add", "coreir.mul", "coreir.and", "coreir.or", "coreir.xor", "coreir.eq",
    "coreir.neq", "commonlib.smax", "commonlib.smin", "commonlib.umax", "commonlib.umin",
    "corebit.and", "corebit.or", "corebit.xor",
})

_SHIFTS = ("coreir.lshr", "coreir.shl", "coreir.ashr")

#: A signal source inside a mapped kernel: ``("pe", pe name, PE output port)`` or
#: ``("in", kernel input name, element index)``.
Src = tuple[str, str, Any]


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

    def pe_count(self) -> int:
        return len(self.pes)

    def rule_counts(self) -> dict[str, int]:
        """Rule key -> number of PEs using it."""
        c: dict[str, int] = {}
        for p in self.pes:
            c[p.rule] = c.get(p.rule, 0) + 1
        return c


# ---------------------------------------------------------------------------- preparation
def _fold_shifts(kernel: ir.Kernel) -> ir.Kernel:
    """Rewrite shifts by a constant >= width (module docstring)."""
    new = ir.Kernel(kernel.name)
    for name, size in kernel.inputs.items():
        new.declare_input(name, size, kernel.input_widths[name])
    remap: dict[int, int] = {}
    for n in kernel.nodes:
        if n.op == ir.INPUT:
            remap[n.id] = new.input(*n.input)
        elif n.op in ir.CONST_OPS:
            remap[n.id] = new.const(n.value, n.width)
        else:
            args = [remap[a] for a in n.args]
            amt = kernel.nodes[n.args[1]] if n.op in _SHIFTS else None
            if amt is not None and amt.op == "coreir.const" and amt.value >= n.width:
                if n.op == "coreir.ashr":
                    args[1] = new.const(n.width - 1, amt.width)
                    remap[n.id] = new.add(n.op, *args, width=n.width, name=n.name)
                else:
                    remap[n.id] = new.const(0, n.width)
                continue
            remap[n.id] = new.add(n.op, *args, width=n.width, name=n.name)
    for name, nid in kernel.outputs.items():
        new.set_output(name, remap[nid])
    return new


def _decompose(kernel: ir.Kernel, table: RuleTable) -> ir.Kernel:
    """Expand ops that have no single-PE rule but a decomposition into ops that do."""
    need = {n.op for n in kernel.live_nodes()
            if n.op != ir.INPUT and n.op not in ir.CONST_OPS}
    expand = {op: table.decompositions[op] for op in need
              if op in table.decompositions and not table.has_op(op)}
    if not expand:
        return kernel
    new = ir.Kernel(kernel.name)
    for name, size in kernel.inputs.items():
        new.declare_input(name, size, kernel.input_widths[name])
    remap: dict[int, int] = {}
    for n in kernel.nodes:
        if n.op == ir.INPUT:
            remap[n.id] = new.input(*n.input)
        elif n.op in ir.CONST_OPS:
            remap[n.id] = new.const(n.value, n.width)
        elif n.op in expand:
            dag = expand[n.op]
            ports = dict(zip(ir.OPS[n.op].ports, (remap[a] for a in n.args), strict=True))
            local: dict[str, int] = {}
            for pn in dag["nodes"]:
                args = []
                for port in ir.OPS[pn["op"]].ports:
                    ref = pn["args"][port]
                    args.append(ports[ref[1:]] if ref.startswith("$") else local[ref])
                local[pn["id"]] = new.add(pn["op"], *args, width=n.width)
            remap[n.id] = local[dag["outputs"]["out"]]
        else:
            remap[n.id] = new.add(n.op, *(remap[a] for a in n.args), width=n.width, name=n.name)
    for name, nid in kernel.outputs.items():
        new.set_output(name, remap[nid])
    return new


def prepare_kernel(kernel: ir.Kernel, table: RuleTable) -> ir.Kernel:
    """The kernel the cover is computed on: simplified, large constant shifts folded,
    decompositions expanded (module docstring). Computes the same function."""
    k = ir.simplify(kernel)
    k = ir.simplify(_fold_shifts(k))
    return ir.simplify(_decompose(k, table))


# ---------------------------------------------------------------------------- matching
@dataclass
class _Match:
    rule: Rule
    covered: list[int]             # IR nodes implemented inside the PE (root first)
    inputs: dict[str, int]         # IR port of the rule -> IR node id
    consts: dict[str, int]         # rule constant name -> value


def _data_width(k: ir.Kernel, n: ir.Node) -> int:
    ws = [k.nodes[a].width for a in n.args] + [n.width]
    return max(ws)


def _match(rule: Rule, k: ir.Kernel, root: int, uses: dict[int, int], outputs: set[int],
           covered: set[int]) -> _Match | None:
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
            e = dict(env, consts={**env["consts"], name: n.value})
            yield e
            return
        if not top:
            if nid in covered or nid in outputs or uses.get(nid, 0) != 1:
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
            return _Match(rule, env["nodes"], env["inputs"], env["consts"])
    return None


# ---------------------------------------------------------------------------- covering
def cover_kernel(kernel: ir.Kernel, table: RuleTable, pe_doc: dict[str, Any],
                 pe_name: str | None = None) -> MappedKernel:
    """Cover ``kernel`` with the rules of ``table`` for the PE described by ``pe_doc``
    (``pe.json``). PE names are ``<pe_name>_pe<k>`` (default prefix: the kernel name).

    Raises :class:`MappingError` naming the op, node, kernel and PE when a node has no rule,
    or when the table holds no constant rule to materialise a needed constant.
    """
    from peak.collateral import assemble_fields

    t0 = time.perf_counter()
    prefix = pe_name or kernel.name
    pe_label = pe_doc.get("spec", pe_doc.get("name", "?"))
    k = prepare_kernel(kernel, table)
    live = k.live_nodes()
    uses: dict[int, int] = {}
    for n in live:
        for a in n.args:
            uses[a] = uses.get(a, 0) + 1
    out_nodes = set(k.outputs.values())
    needed: set[int] = set(out_nodes)
    covered: set[int] = set()
    produced: dict[int, Src] = {}
    pes: list[MappedPE] = []
    by_name: dict[str, MappedPE] = {}
    const_pes: dict[tuple[str, int], Src] = {}
    pending: list[tuple[Rule, dict[str, MappedPE], dict[str, int]]] = []
    pe_inputs = {p["name"]: int(p["width"]) for p in pe_doc["inputs"]}

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
                inst = assemble_fields(pe_doc, values)
            except CgraError as exc:  # ConfigError from the assembler: name the rule
                raise MappingError(f"kernel {kernel.name}: rule {rule.target} does not assemble "
                                   f"for PE {pe_label} ({exc}); the rule table is stale, "
                                   f"regenerate it with `cgra rules`") from None
            pe = MappedPE(f"{prefix}_pe{len(pes)}", rule.target, rule.op,
                          list(nodes) if ri is rule.instances[-1] else [], values, inst)
            pes.append(pe)
            by_name[pe.name] = pe
            made[ri.id] = pe
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

    for n in reversed(live):
        if n.id not in needed or n.id in covered:
            continue
        if n.op == ir.INPUT:
            produced[n.id] = ("in", n.input[0], n.input[1])
            continue
        m = None
        for rule in table.rules_for(n.op):
            m = _match(rule, k, n.id, uses, out_nodes, covered)
            if m is not None:
                break
        if m is None:
            if n.op in ir.CONST_OPS:
                produced[n.id] = const_src(n.value, n.width, f"node {n.id} ({n.op})")
                continue
            status = table.status.get(n.op)
            why = f" (rule table: {status})" if status and status != "found" else \
                " (the rule table has no rule for this op)" if not table.has_op(n.op) else ""
            raise MappingError(
                f"kernel {kernel.name}: no rewrite rule of PE {pe_label} implements op "
                f"{n.op} (node {n.id}{', ' + n.name if n.name else ''}){why}; use a PE "
                f"whose ISA has this op and regenerate the rules (`cgra rules --pe ...`)")
        produced[n.id] = place(m.rule, m.covered, m.consts, m.inputs)
        covered.update(m.covered)
        needed.update(m.inputs.values())

    # connect PE inputs now that every needed node has a source
    for rule, made, inputs in pending:
        for ri in rule.instances:
            pe = made[ri.id]
            for pin, b in ri.inputs.items():
                if b.kind == "ir":
                    src = produced[inputs[b.port]]
                elif b.kind == "tie":
                    src = const_src(int(b.value or 0), pe_inputs.get(pin, 16),
                                    f"PE {pe.name} input {pin} (tied by rule {rule.target})")
                elif b.kind == "wire":
                    src = ("pe", made[b.instance].name, b.port)
                else:
                    continue
                pe.inputs[pin] = src
                if src[0] == "pe":
                    by_name[src[1]].outputs.add(src[2])
    outputs = {name: produced[nid] for name, nid in k.outputs.items()}
    return MappedKernel(kernel, k, prefix, _topo(pes), outputs, time.perf_counter() - t0)


def _topo(pes: list[MappedPE]) -> list[MappedPE]:
    by = {p.name: p for p in pes}
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
                if src[0] == "pe" and src[1] not in done:
                    stack.append((by[src[1]], False))

    for p in sorted(pes, key=lambda p: int(p.name.rsplit("_pe", 1)[1])):
        visit(p)
    return out


# ---------------------------------------------------------------------------- simulation
def simulate(mapped: MappedKernel, pe_doc: dict[str, Any], spec: type,
             inputs: dict[str, list[int]], free: random.Random | None = None,
             models: dict[str, Any] | None = None) -> dict[str, int]:
    """Evaluate the mapped PEs once with the PE Python model ``spec`` (one call per PE, in
    topological order). ``inputs[name][i]`` = kernel input element i; don't-care PE inputs
    get random values from ``free`` (0 when ``None``). Returns kernel output -> value."""
    in_names = [p["name"] for p in pe_doc["inputs"]]
    in_widths = [int(p["width"]) for p in pe_doc["inputs"]]
    out_names = [p["name"] for p in pe_doc["outputs"]]
    models = models if models is not None else {}
    vals: dict[tuple[str, str], int] = {}

    def value(src: Src) -> int:
        if src[0] == "in":
            return int(inputs[src[1]][src[2]])
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


def check_equivalence(mapped: MappedKernel, pe_doc: dict[str, Any], spec: type | None = None,
                      vectors: int = 1000, seed: int = 0) -> EquivalenceReport:
    """Check that the mapped PEs compute the original kernel: ``vectors`` random input
    vectors (uniform ``w``-bit words per kernel input element; don't-care PE inputs random
    too), each simulated with the PE Python model and compared with
    :meth:`mapper.ir.Kernel.evaluate` of the *original* kernel. Raises :class:`MappingError`
    with the first counterexample (inputs, expected, got)."""
    t0 = time.perf_counter()
    spec = spec or load_pe_model(pe_doc)
    rng = random.Random(seed)
    k = mapped.kernel
    models: dict[str, Any] = {}
    for v in range(vectors):
        ins = {name: [rng.getrandbits(k.input_widths[name]) for _ in range(size)]
               for name, size in k.inputs.items()}
        want = k.evaluate(ins)
        got = simulate(mapped, pe_doc, spec, ins, rng, models)
        if got != want:
            bad = {o: (want[o], got[o]) for o in want if want[o] != got[o]}
            raise MappingError(f"kernel {k.name}: mapped PEs differ from the kernel on vector "
                               f"{v} (inputs {ins}): output -> (expected, got) {bad}")
    return EquivalenceReport(k.name, vectors, vectors * len(mapped.pes),
                             time.perf_counter() - t0)


# ---------------------------------------------------------------------------- netlists
def _out_widths(pe_doc: dict[str, Any]) -> dict[str, int]:
    return {p["name"]: int(p["width"]) for p in pe_doc["outputs"]}


def pe_config(pe: MappedPE, mapped: MappedKernel, pe_doc: dict[str, Any]) -> dict[str, Any]:
    """Netlist config of a PE instance: ``inst`` (flat instruction, the PE core's config
    field), the rule, the IR ops covered, the instruction field values and the core latency
    (cycles, from ``pe.json`` when given)."""
    cfg: dict[str, Any] = {
        "inst": pe.inst, "rule": pe.rule, "op": pe.op, "kernel": mapped.kernel.name,
        "ops": [mapped.prepared.nodes[i].op for i in pe.nodes],
        "instruction": dict(pe.fields),
    }
    lat = pe_doc.get("latency")
    if isinstance(lat, dict) and "cycles" in lat:
        cfg["latency"] = int(lat["cycles"])
    return cfg


def _add_pes(nl: Netlist, mapped: MappedKernel, pe_doc: dict[str, Any]) -> None:
    for pe in mapped.pes:
        nl.add_instance(pe.name, "pe", "p", pe_config(pe, mapped, pe_doc))


def _internal_sinks(mapped: MappedKernel) -> dict[Src, list[tuple[str, str]]]:
    """Source -> PE input sinks, for every PE input connection."""
    sinks: dict[Src, list[tuple[str, str]]] = {}
    for pe in mapped.pes:
        for pin, src in pe.inputs.items():
            sinks.setdefault(src, []).append((pe.name, pin))
    return sinks


def kernel_netlist(mapped: MappedKernel, pe_doc: dict[str, Any], nl: Netlist | None = None
                   ) -> Netlist:
    """A stand-alone netlist of one mapped kernel (added to ``nl`` when given): its PEs, one
    IO input per used kernel input element (``io_in_<kernel>_<input>_<i>``, kind ``io_in``,
    tag ``I``/``i`` by width) and one IO output per kernel output (``io_out_<kernel>_<out>``)."""
    nl = nl if nl is not None else Netlist(mapped.kernel.name)
    k = mapped.kernel
    _add_pes(nl, mapped, pe_doc)
    ow = _out_widths(pe_doc)
    sinks = _internal_sinks(mapped)
    ends: dict[tuple[str, str], list[tuple[str, str]]] = {}
    widths: dict[tuple[str, str], int] = {}

    def terminal(src: Src) -> tuple[str, str]:
        if src[0] == "pe":
            widths[(src[1], src[2])] = ow[src[2]]
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


def map_compute(netlist: Netlist, table: RuleTable, pe_doc: dict[str, Any]) -> ComputeMapping:
    """Replace each ``kernel`` placeholder instance (``kernel_<stage>``, config ``dag`` =
    the kernel JSON; see :mod:`mapper.memory`) of ``netlist`` by its PEs and rewire the nets:
    a net read by placeholder port ``<input>.<index>`` now drives the PE inputs that read
    that element; a net driven by placeholder port ``out_<lane>`` is driven by the PE output
    that computes it (or, for a pass-through output, merged into the net of the input
    element it copies). Nets from one source are merged. Returns a new netlist; raises
    :class:`MappingError` (no rule for an op, see :func:`cover_kernel`)."""
    t0 = time.perf_counter()
    out = Netlist(netlist.name)
    mapped: dict[str, MappedKernel] = {}
    ow = _out_widths(pe_doc)
    for name, inst in netlist.instances.items():
        if inst.kind != "kernel":
            out.add_instance(name, inst.kind, inst.tag, inst.config)
            continue
        stage = inst.config.get("stage", name)
        if kernel_instance(stage) != name or "dag" not in inst.config:
            raise MappingError(f"netlist {netlist.name}: kernel placeholder {name} has no "
                               f"'dag' / 'stage' config; build it with mapper.memory.map_memory")
        m = cover_kernel(ir.Kernel.from_dict(inst.config["dag"]), table, pe_doc,
                         pe_name=f"pe_{stage}")
        mapped[name] = m
        _add_pes(out, m, pe_doc)

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
            if src[0] == "pe":
                t = (src[1], src[2])
                widths[t] = ow[src[2]]
                names.setdefault(t, f"{src[1]}_{src[2]}")
                ends.setdefault(t, []).extend(ss)
    for t, ss in ends.items():
        if ss:
            out.add_net(t, ss, widths[t], names[t])
    out.validate()
    return ComputeMapping(out, {m.pe_name[len("pe_"):]: m for m in mapped.values()},
                          time.perf_counter() - t0)
