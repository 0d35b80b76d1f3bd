"""Rewrite-rule synthesis: find an instruction and bindings so that a PE implements an IR op.

Problem (PEak paper, Daly et al., FMCAD 2022, §4): for an IR op ``IR`` and a PE ``PE`` find
an instruction ``i`` and a binding ``b`` with ``∀ x: pre(x) → IR(x) == PE(i, b(x))``.

* A *binding* maps each IR data/bit input to a distinct PE input of the same width, each IR
  constant (``coreir.const``'s ``value``, a constant-fed input of a :class:`peak.ir.Target`)
  to a distinct instruction *constant field* of the same width (fields of kind ``bits`` /
  ``bit``; fields named ``*const*`` are tried first), and each IR output to a PE output.
  Bindings are enumerated *outside* the solver (a handful per op), in a fixed order, so the
  first rule found is deterministic.
* PE inputs that no IR input binds are *free* (universally quantified: the rule must hold
  whatever arrives there, the instruction may ignore them), and so is the PE state
  (registers hold arbitrary values: a rule is combinational). If no binding works with
  every unbound input free, a second phase lets unbound inputs be *tied* to constants
  allowed by the :class:`BindingPolicy` (by default 1-bit inputs to 0 or 1, e.g. a carry-in).
* The remaining instruction fields are existential, constrained by the assembler's
  validity predicate.

Per binding, :func:`lexmin` searches the instruction's enum fields in layout order (opcode,
condition, input modes), each in increasing code order: the first code for which a rule
exists is kept, so the search finds the canonical (lexicographically smallest) choice
directly, with no separate search pass. Each step ("is there a rule with these fields
fixed?") is an exact ∃∀ answer from :func:`solve_split`, which case-splits the remaining
enum fields (the field whose split shrinks the estimated bit-blasted size most, a plan
computed from the PE alone and cached per process) and solves each sub-problem, cheapest
first, with one of two solvers: :func:`solve_cegis` (counterexample-guided inductive
synthesis, Solar-Lezama 2008: a candidate instruction from a finite set of examples, a ∀
check of the candidate, the counterexample added; seeded with a pseudo-random example plus
one example per universal variable with only that variable changed, which refutes
instructions that ignore an input at once) or :func:`solve_direct` (one z3 query with a
``ForAll``). Sub-problems still holding a multiplier are tried with a short budget and
split further (modes) on timeout, at once if the multiplier is 32 bits wide
(:data:`NONLINEAR_SPLIT_COST`). A (sub-)problem whose bound PE outputs, with its fixed
fields substituted, do not read a PE input bound to an IR input the op's output depends on
(:func:`ir_dependencies`) is answered "none" without a query (exact: the PE output is
independent of that input, the IR output is not); this prunes the input modes ``CONST`` /
``DELAY`` of an operand, which otherwise cost many CEGIS iterations when the output is one
bit (issue 16: the BFloat16 compares against ``MULT1``/``MULT2``). ``method="auto"`` uses CEGIS and falls back to the direct
query when a leaf times out (the direct query was 3x slower on the default PE in total:
bench/bench_rules.py ``--methods``). Every z3 query gets ``timeout`` (ms) through z3's own
parameter; a timeout makes the result ``"timeout"``, never a silent "no rule".

After :func:`lexmin`, :func:`canonicalise` drops ties where the rule holds with the input
free and lowers each bit-vector field to 0 if the rule holds with 0, else bit by bit (MSB
first) while the rule still holds (don't-care bits become 0). With the fixed binding order
and the PE-only split plan, the rule does not depend on solver history, so rule files are
stable across runs and ``--jobs`` values. (Before issue 12 a cheapest-first search found a
rule and :func:`lexmin` then redid the enum fields; the one-pass search gives the same
rules on the default PE and took the cold table from 50 s to 17 s of CPU.)
Every rule is then re-verified independently by :func:`peak.rules.rule.verify_rule`
before the caller writes it.
"""
from __future__ import annotations

import functools
import hashlib
import itertools
import random
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

import z3

from cgra.errors import RuleError
from peak.assembler import assembler
from peak.ir import IROp, Port, Target, ir_op
from peak.normalize import normal_form
from peak.smt import symbolic
from peak.ir import target_from_key

DEFAULT_TIMEOUT_MS = 30_000
"""Default z3 timeout of one query, in milliseconds."""


@dataclass(frozen=True)
class BindingPolicy:
    """Which constants an unbound PE input may be tied to.

    ``ties`` is ``"auto"`` (default: ``"none"`` when every 1-bit PE input ``x`` has its own
    1-bit instruction constant field ``x*const*`` — the PE then feeds constants through its
    instruction, as the default PE's ``CONST`` input mode does, so ties would only
    duplicate rules — else ``"bits"``), ``"bits"`` (every 1-bit input may be tied to 0 or 1, wider inputs
    never: "strict" binding, data constants go to instruction constant fields),
    ``"none"``, or a dict PE input name -> allowed constants (``{"c_in": (0,)}``)."""

    ties: Any = "auto"

    def resolve(self, pe: "PEContext") -> dict[str, tuple[int, ...]]:
        """PE input -> allowed tie constants (inputs without ties omitted)."""
        mode = self.ties
        if mode == "auto":
            bits = [n for n, w in pe.input_width.items() if w == 1]
            own = all(any(n in f and "const" in f and pe.field_info[f].width == 1
                          for f in pe.field_info) for n in bits)
            mode = "none" if bits and own else "bits"
        if mode == "none":
            return {}
        if mode == "bits":
            return {n: (0, 1) for n, w in pe.input_width.items() if w == 1}
        if isinstance(mode, dict):
            unknown = set(mode) - set(pe.inputs)
            if unknown:
                raise RuleError(f"binding policy ties unknown PE inputs {sorted(unknown)} of "
                                f"{pe.spec.__name__}; inputs: {list(pe.inputs)}")
            return {k: tuple(int(x) for x in v) for k, v in mode.items() if v}
        raise RuleError(f"binding policy ties={mode!r}: use 'auto', 'bits', 'none' or a dict "
                        "PE input -> constants")

    def to_json(self) -> Any:
        if isinstance(self.ties, dict):
            return {"ties": {k: list(v) for k, v in sorted(self.ties.items())}}
        return {"ties": self.ties}

    @staticmethod
    def from_json(d: dict[str, Any]) -> "BindingPolicy":
        t = d.get("ties", "auto")
        return BindingPolicy({k: tuple(v) for k, v in t.items()} if isinstance(t, dict) else t)


# ------------------------------------------------------------------------------ PE model
@dataclass
class PEContext:
    """A PE spec elaborated once (per process) into z3 terms over per-field variables."""

    spec: type
    fields: dict[str, Any]              # field name -> z3 var
    field_info: dict[str, Any]          # field name -> FieldInfo
    inputs: dict[str, Any]              # input name -> z3 var
    input_width: dict[str, int]
    state: list[Any]
    outputs: dict[str, Any]             # output name -> z3 term
    output_width: dict[str, int]
    valid: Any
    plans: dict = field(default_factory=dict)   # case-split plans (see solve_split)

    @property
    def const_fields(self) -> list[str]:
        """Instruction fields an IR constant may bind to, in try order."""
        names = [n for n, f in self.field_info.items() if f.kind in ("bits", "bit")]
        return sorted(names, key=lambda n: ("const" not in n.lower(), names.index(n)))

    @property
    def data_width(self) -> int:
        """The widest PE input, in bits (the width of the IR ops synthesised for it)."""
        return max(self.input_width.values())


def _width(T: Any) -> int:
    return T.size if hasattr(T, "size") else 1


_SPEC_IDS = itertools.count()


@functools.lru_cache(maxsize=None)
def pe_context(spec: type) -> PEContext:
    """The (cached, once per process) z3 elaboration of ``spec``. Raises
    :class:`cgra.errors.SpecError` for a malformed spec."""
    nf = normal_form(spec)
    asm = assembler(nf.isa)
    # a per-class prefix: two spec classes may share a name (an edited copy of a spec)
    sym = symbolic(spec, fields=True, prefix=f"{spec.__module__}.{spec.__qualname__}"
                   f"#{next(_SPEC_IDS)}.")
    z = sym.z3()
    return PEContext(
        spec=spec,
        fields={f.name: z[f"inst.{f.name}"] for f in asm.fields},
        field_info={f.name: f for f in asm.fields},
        inputs={n: z[n] for n, _ in nf.inputs},
        input_width={n: _width(T) for n, T in nf.inputs},
        state=[z[f"state.{leaf.name}"] for leaf in nf.state],
        outputs={n: z[f"out.{n}"] for n, _ in nf.outputs},
        output_width={n: _width(T) for n, T in nf.outputs},
        valid=z["valid"],
    )


@dataclass
class IRContext:
    """An IR op elaborated into z3: input/const variables and output terms."""

    op: IROp
    inputs: dict[str, Any]        # port -> z3 var
    consts: dict[str, Any]        # const name -> z3 var
    fixed: list[tuple[Any, Any]]  # enum instruction fields fixed to their only code
    outputs: dict[str, Any]       # port -> z3 term


@functools.lru_cache(maxsize=None)
def ir_context(name: str, width: int) -> IRContext:
    op = ir_op(name, width)
    nf = normal_form(op.spec)
    asm = assembler(nf.isa)
    z = symbolic(op.spec, fields=True).z3()
    consts, fixed = {}, []
    for f in asm.fields:
        var = z[f"inst.{f.name}"]
        if f.kind in ("bits", "bit"):
            consts[f.name] = var
        else:
            code = min(f.tags.values()) if f.tags else 0
            fixed.append((var, z3.BitVecVal(code, f.width)))
    inputs = {p.name: z[a] for p, a in zip(op.inputs, op.arg_names, strict=True)}
    outputs = {p.name: z[f"out.{p.name}"] for p in op.outputs}
    return IRContext(op, inputs, consts, fixed, outputs)


def value_of(width: int, v: int, like: Any) -> Any:
    """A z3 constant of the sort of ``like`` (Bool for 1-bit Bool terms)."""
    if z3.is_bool(like):
        return z3.BoolVal(bool(v))
    return z3.BitVecVal(v, like.size())


def as_int(v: Any) -> int:
    """An int from a z3 model value (Bool or bit vector)."""
    if z3.is_true(v):
        return 1
    if z3.is_false(v):
        return 0
    return v.as_long()



def subst(e: Any, pairs: list[tuple[Any, Any]] | tuple) -> Any:
    """``z3.substitute`` through the C API (pairs are well-sorted by construction; the
    Python wrapper's per-pair sort checks dominate synthesis time otherwise)."""
    if not pairs:
        return e
    n = len(pairs)
    src = (z3.Ast * n)()
    dst = (z3.Ast * n)()
    for i, (a, b) in enumerate(pairs):
        src[i] = a.as_ast()
        dst[i] = b.as_ast()
    ctx = e.ctx
    return z3.z3._to_expr_ref(z3.Z3_substitute(ctx.ref(), e.as_ast(), n, src, dst), ctx)


# ------------------------------------------------------------------------------ bindings
@dataclass(frozen=True)
class Binding:
    """IR port -> PE input, IR constant -> PE field, IR output -> PE output."""

    inputs: tuple[tuple[str, str], ...]
    consts: tuple[tuple[str, str], ...]
    outputs: tuple[tuple[str, str], ...]


def enumerate_bindings(pe: PEContext, irc: IRContext, target: Target) -> Iterator[Binding]:
    """Every width-compatible injective binding, in a fixed order (IR ports in order, PE
    inputs / fields / outputs in declaration order)."""
    op = irc.op
    var_ports = [p for p in op.inputs if p.name not in target.const_inputs]
    const_ports = [p for p in op.inputs if p.name in target.const_inputs] + list(op.consts)
    pe_in = list(pe.inputs)
    cf = pe.const_fields

    def assign(ports: list[Port], cands: list[str], width_of: Any) -> Iterator[tuple]:
        opts = [[c for c in cands if width_of(c) == p.width] for p in ports]
        for combo in itertools.product(*opts):
            if len(set(combo)) == len(combo):
                yield tuple(zip((p.name for p in ports), combo, strict=True))

    out: list[tuple[int, int, Binding]] = []
    for ins in assign(var_ports, pe_in, lambda c: pe.input_width[c]):
        bound = {x for _, x in ins}
        for cs in assign(const_ports, cf, lambda c: pe.field_info[c].width):
            # try first the constant fields named after a PE input this binding leaves
            # unbound (``data1_const`` when ``data1`` is free): order only, not the result
            miss = sum(not any(f.startswith(x) for x in pe_in if x not in bound)
                       for _, f in cs)
            for outs in assign(list(op.outputs), list(pe.outputs),
                               lambda c: pe.output_width[c]):
                out.append((miss, len(out), Binding(ins, cs, outs)))
    for _, _, b in sorted(out, key=lambda x: (x[0], x[1])):
        yield b


# ------------------------------------------------------------------------------ problem
@dataclass
class Problem:
    """The ∃∀ query of one (target, binding, phase)."""

    exists: list[Any]            # instruction field vars (+ tie selectors/values)
    forall: list[Any]            # IR inputs/consts, free PE inputs, PE state
    valid: Any                   # constraint on `exists`
    pre: Any                     # constraint on `forall`
    phi: Any                     # IR == PE
    ties: dict[str, tuple[Any, Any]]   # PE input -> (select var, value var)
    free_fields: list[str]
    fixed: list[tuple[Any, Any]] = field(default_factory=list)   # case-split fields
    bank: list[Any] | None = None     # root phi at every example (shared by sub-problems)
    root_phi: Any = None              # phi before case splits
    needed: frozenset = frozenset()   # PE input var names the bound outputs must read

    def __post_init__(self) -> None:
        if self.root_phi is None:
            self.root_phi = self.phi


def build_problem(pe: PEContext, irc: IRContext, target: Target, b: Binding,
                  ties_allowed: dict[str, tuple[int, ...]]) -> Problem:
    """The formula of one binding; ``ties_allowed`` (PE input -> constants) enables ties."""
    sub: list[tuple[Any, Any]] = []
    bound_in = {pin for _, pin in b.inputs}
    for port, pin in b.inputs:
        sub.append((pe.inputs[pin], irc.inputs[port]))
    ir_consts = dict(irc.consts)
    for port in target.const_inputs:
        ir_consts[port] = irc.inputs[port]
    bound_fields = set()
    for port, fname in b.consts:
        fvar = pe.fields[fname]
        cvar = ir_consts[port]
        if z3.is_bool(fvar) != z3.is_bool(cvar):
            cvar = z3.If(cvar == z3.BitVecVal(1, 1), z3.BoolVal(True), z3.BoolVal(False)) \
                if z3.is_bool(fvar) else z3.If(cvar, z3.BitVecVal(1, 1), z3.BitVecVal(0, 1))
        sub.append((fvar, cvar))
        bound_fields.add(fname)
    ties: dict[str, tuple[Any, Any]] = {}
    free_inputs = []
    tie_cons = []
    for pin, var in pe.inputs.items():
        if pin in bound_in:
            continue
        free_inputs.append(var)
        allowed = ties_allowed.get(pin, ())
        if allowed:
            sel = z3.Bool(f"__tie_sel.{pin}")
            val = z3.Const(f"__tie_val.{pin}", var.sort())
            tie_cons.append(z3.Or(*[val == value_of(pe.input_width[pin], a, var)
                                    for a in allowed]))
            ties[pin] = (sel, val)
            sub.append((var, z3.If(sel, val, var)))
    ir_sub = list(irc.fixed)
    eqs = []
    for port, pout in b.outputs:
        lhs = subst(irc.outputs[port], ir_sub)
        rhs = subst(pe.outputs[pout], sub)
        eqs.append(lhs == rhs)
    phi = z3.And(*eqs)
    pre = []
    for pc in target.preconditions:
        var = irc.inputs[pc.port]
        if pc.op != "ult":
            raise RuleError(f"unknown precondition operator '{pc.op}' of {target.key}")
        pre.append(z3.ULT(var, z3.BitVecVal(pc.value, var.size())))
    free_fields = [f for f in pe.fields if f not in bound_fields]
    deps = ir_dependencies(target.op, irc.op.width, target.key)
    needed = frozenset(str(pe.inputs[pin]) for port, pin in b.inputs if port in deps)
    exists = [pe.fields[f] for f in free_fields]
    for sel, val in ties.values():
        exists += [sel, val]
    forall = list(irc.inputs.values()) + list(irc.consts.values()) + free_inputs + \
        list(pe.state)
    return Problem(exists, forall, z3.And(pe.valid, *tie_cons),
                   z3.And(*pre) if pre else z3.BoolVal(True), phi, ties,
                   free_fields, needed=needed)


DEPENDENCY_TIMEOUT_MS = 5_000
"""z3 timeout of one input-dependence query (:func:`ir_dependencies`)."""


@functools.lru_cache(maxsize=None)
def ir_dependencies(name: str, width: int, key: str) -> frozenset:
    """The variable (not constant-fed) input ports of target ``key`` (op ``name``) that its
    output depends on: ``∃ x, x', rest: pre ∧ out(x) != out(x')`` is SAT (one z3 query per
    port, under the target's preconditions). A port whose query times out is left out, so
    the set is an under-approximation: :func:`solve_split` prunes a sub-problem whose PE
    outputs (fixed fields substituted, simplified) do not read the PE input bound to a port
    of this set, which is then exact (the PE output is independent of that input, the IR
    output is not: no instruction works)."""
    target = target_from_key(key, width)
    irc = ir_context(name, width)
    outs = [subst(irc.outputs[p.name], list(irc.fixed)) for p in irc.op.outputs]
    pre = []
    for pc in target.preconditions:
        var = irc.inputs[pc.port]
        pre.append(z3.ULT(var, z3.BitVecVal(pc.value, var.size())))
    deps = set()
    for port in irc.op.inputs:
        if port.name in target.const_inputs:
            continue
        x = irc.inputs[port.name]
        x2 = z3.FreshConst(x.sort(), "dep")
        s = _solver(DEPENDENCY_TIMEOUT_MS)
        s.add(*pre, *[subst(c, [(x, x2)]) for c in pre])
        s.add(z3.Or(*[o != subst(o, [(x, x2)]) for o in outs]))
        if s.check() == z3.sat:
            deps.add(port.name)
    return frozenset(deps)


# ------------------------------------------------------------------------------ solvers
@dataclass
class SolveStats:
    """Counters of one solve: z3 queries, CEGIS iterations, seconds."""

    queries: int = 0
    iterations: int = 0
    seconds: float = 0.0


def _solver(timeout_ms: int, rlimit: int | None = None) -> z3.Solver:
    s = z3.SolverFor("QF_BV")
    s.set("timeout", int(timeout_ms))
    if rlimit is not None:
        s.set("rlimit", int(rlimit))
    return s


def _check(s: Any, stats: SolveStats) -> Any:
    stats.queries += 1
    return s.check()


def _model_values(m: Any, xs: list[Any]) -> list[tuple[Any, Any]]:
    return [(x, m.eval(x, model_completion=True)) for x in xs]


def find_counterexample(p: Problem, assignment: list[tuple[Any, Any]], timeout_ms: int,
                        stats: SolveStats) -> tuple[str, list[tuple[Any, Any]] | None]:
    """∀ check of a concrete ``assignment`` of the existential variables: ``("ok", None)``,
    ``("cex", values of the universal variables)`` or ``("timeout", None)``."""
    s = _solver(timeout_ms)
    s.add(p.pre, z3.Not(subst(p.phi, assignment)))
    r = _check(s, stats)
    if r == z3.unsat:
        return "ok", None
    if r == z3.unknown:
        return "timeout", None
    return "cex", _model_values(s.model(), p.forall)


def _seed_examples(p: Problem, seed: str) -> list[list[tuple[Any, Any]]]:
    """A pseudo-random base example (seeded by ``seed``) plus, for every universal
    variable, the base example with that one variable changed. A PE term that ignores a
    variable the IR op depends on (or depends on one the op ignores: a free input, the
    state) then conflicts inside the first candidate query, so UNSAT leaves close without
    enumerating constants (which is as hard as factoring when the constant feeds a
    multiplier)."""
    rng = random.Random(int(hashlib.sha256(seed.encode()).hexdigest()[:16], 16))

    def draw(v: Any, avoid: Any = None) -> Any:
        if z3.is_bool(v):
            return z3.BoolVal(not z3.is_true(avoid)) if avoid is not None else \
                z3.BoolVal(bool(rng.getrandbits(1)))
        w = v.size()
        while True:
            x = z3.BitVecVal(rng.getrandbits(w), w)
            if avoid is None or x.as_long() != avoid.as_long():
                return x

    base = [(v, draw(v)) for v in p.forall]
    out = [base]
    for i, (v, x) in enumerate(base):
        ex = list(base)
        ex[i] = (v, draw(v, x))
        out.append(ex)
    return out


def _satisfies_pre(p: Problem, ex: list[tuple[Any, Any]]) -> list[tuple[Any, Any]] | None:
    if z3.is_true(p.pre):
        return ex
    pre = z3.simplify(subst(p.pre, ex))
    if z3.is_true(pre):
        return ex
    s = _solver(5_000)
    s.add(p.pre)
    if s.check() != z3.sat:
        return None
    return _model_values(s.model(), p.forall)


def solve_cegis(p: Problem, timeout_ms: int, seed: str, stats: SolveStats,
                max_iterations: int = 500, rlimit: int | None = None
                ) -> tuple[str, list[tuple[Any, Any]] | None]:
    """CEGIS on one problem: ``("found", assignment)``, ``("none", None)`` (UNSAT: no
    instruction for this binding) or ``("timeout", None)`` (also when ``max_iterations``
    candidates were refuted without convergence). ``rlimit`` bounds the candidate solver's
    z3 resource count (deterministic, unlike a wall-clock budget)."""
    cand = _solver(timeout_ms, rlimit)
    cand.add(p.valid)
    if p.bank is None:
        p.bank = []
    if not p.bank:
        for ex in _seed_examples(p, seed):
            ex2 = _satisfies_pre(p, ex)
            if ex2 is not None:
                p.bank.append(z3.simplify(subst(p.root_phi, ex2)))
    for f in p.bank:
        cand.add(z3.simplify(subst(f, p.fixed)) if p.fixed else f)
    for _ in range(max_iterations):
        stats.iterations += 1
        r = _check(cand, stats)
        if r == z3.unsat:
            return "none", None
        if r == z3.unknown:
            return "timeout", None
        assignment = _model_values(cand.model(), p.exists)
        status, cex = find_counterexample(p, assignment, timeout_ms, stats)
        if status == "ok":
            return "found", assignment
        if status == "timeout":
            return "timeout", None
        assert cex is not None
        p.bank.append(z3.simplify(subst(p.root_phi, cex)))
        cand.add(subst(p.phi, cex))
    return "timeout", None


def solve_direct(p: Problem, timeout_ms: int, stats: SolveStats, rlimit: int | None = None
                 ) -> tuple[str, list[tuple[Any, Any]] | None]:
    """One quantified z3 query ``∃ exists: valid ∧ ∀ forall: pre → phi``."""
    s = z3.Solver()
    s.set("timeout", int(timeout_ms))
    if rlimit is not None:
        s.set("rlimit", int(rlimit))
    s.add(p.valid, z3.ForAll(p.forall, z3.Implies(p.pre, p.phi)))
    r = _check(s, stats)
    if r == z3.unsat:
        return "none", None
    if r == z3.unknown:
        return "timeout", None
    return "found", _model_values(s.model(), p.exists)


# ------------------------------------------------------------------------------ case splits
_NONLINEAR = {z3.Z3_OP_BMUL, z3.Z3_OP_BUDIV, z3.Z3_OP_BSDIV, z3.Z3_OP_BUREM, z3.Z3_OP_BSREM,
              z3.Z3_OP_BSMOD, z3.Z3_OP_BUDIV_I, z3.Z3_OP_BSDIV_I, z3.Z3_OP_BUREM_I,
              z3.Z3_OP_BSREM_I, z3.Z3_OP_BSMOD_I}


def _apps(e: Any) -> Iterator[tuple[Any, Any]]:
    """Every distinct application node of a z3 term once, as ``(context, app)`` handles of
    the C API (shared nodes visited once); walks the C API directly (the Python wrappers
    are ~10x slower on PE-sized terms)."""
    C = z3.z3core
    ctx = e.ctx_ref()
    seen: set[int] = set()
    stack = [e.as_ast()]
    while stack:
        a = stack.pop()
        i = C.Z3_get_ast_id(ctx, a)
        if i in seen:
            continue
        seen.add(i)
        if C.Z3_get_ast_kind(ctx, a) != z3.Z3_APP_AST:
            continue
        app = C.Z3_to_app(ctx, a)
        yield ctx, app
        for j in range(C.Z3_get_app_num_args(ctx, app)):
            stack.append(C.Z3_get_app_arg(ctx, app, j))


def _walk(e: Any) -> Iterator[tuple[int, int]]:
    """Every distinct node of a z3 term once, as ``(decl kind, bv width or 0)``."""
    C = z3.z3core
    for ctx, app in _apps(e):
        kind = C.Z3_get_decl_kind(ctx, C.Z3_get_app_decl(ctx, app))
        sort = C.Z3_get_sort(ctx, C.Z3_app_to_ast(ctx, app))
        w = C.Z3_get_bv_sort_size(ctx, sort) if \
            C.Z3_get_sort_kind(ctx, sort) == z3.Z3_BV_SORT else 0
        yield kind, w


def blast_cost(e: Any) -> int:
    """Estimated bit-blasted size of a z3 term (shared nodes counted once): a
    ``w``-bit multiplier/divider costs ``w*w``, any other bit-vector node ``w``, a Boolean
    node 1. Used to choose the enum field whose case split simplifies the query most."""
    cost = 0
    for kind, w in _walk(e):
        cost += (w * w if kind in _NONLINEAR else w) if w else 1
    return cost


def has_nonlinear(e: Any) -> bool:
    """True if a multiplier/divider node occurs in the z3 term."""
    return any(kind in _NONLINEAR for kind, _ in _walk(e))


def nonlinear_cost(e: Any) -> int:
    """Estimated bit-blasted size of the multipliers/dividers of a z3 term (``w*w`` each,
    shared nodes once); 0 if it has none."""
    return sum(w * w for kind, w in _walk(e) if kind in _NONLINEAR)


def free_var_names(e: Any) -> set[str]:
    """Names of the uninterpreted constants occurring in a z3 term."""
    C = z3.z3core
    out: set[str] = set()
    for ctx, app in _apps(e):
        decl = C.Z3_get_app_decl(ctx, app)
        if C.Z3_get_app_num_args(ctx, app) == 0 and \
                C.Z3_get_decl_kind(ctx, decl) == z3.Z3_OP_UNINTERPRETED:
            out.add(C.Z3_get_symbol_string(ctx, C.Z3_get_decl_name(ctx, decl)))
    return out


@dataclass
class _Split:
    var: Any
    codes: list[int]
    width: int


def _enum_fields(pe: PEContext) -> dict[str, _Split]:
    return {str(pe.fields[n]): _Split(pe.fields[n], sorted(set(f.tags.values())), f.width)
            for n, f in pe.field_info.items() if f.tags is not None}


def fix(p: Problem, var: Any, code: int) -> Problem:
    """The problem with the existential ``var`` fixed to ``code`` (simplified)."""
    val = z3.BitVecVal(code, var.size())
    if p.bank is None:
        p.bank = []
    return Problem([v for v in p.exists if not v.eq(var)], p.forall,
                   z3.simplify(subst(p.valid, [(var, val)])), p.pre,
                   z3.simplify(subst(p.phi, [(var, val)])), p.ties, p.free_fields,
                   p.fixed + [(var, val)], p.bank, p.root_phi, p.needed)


def choose_split(terms: list[Any], enums: dict[str, _Split], fixed_names: set[str]
                 ) -> _Split | None:
    """The enum field (occurring in the PE output ``terms``, not yet fixed) whose case split
    gives the smallest total :func:`blast_cost`; ``None`` if no enum field is left."""
    present: set[str] = set()
    for t in terms:
        present |= free_var_names(t)
    best, best_cost = None, None
    for name, sp in enums.items():
        if name not in present or name in fixed_names:
            continue
        cost = sum(blast_cost(z3.simplify(subst(t, [(sp.var, z3.BitVecVal(c, sp.width))])))
                   for c in sp.codes for t in terms)
        if best_cost is None or cost < best_cost:
            best, best_cost = sp, cost
    return best


def split_plan(pe: PEContext, outputs: tuple[str, ...], fixed: tuple, enums: dict[str, _Split]
               ) -> tuple[_Split | None, list[int], int, frozenset]:
    """Case-split plan of the PE alone (so rules do not depend on which targets a process
    solved before): the field to split after ``fixed``, its codes cheapest first (invalid
    codes dropped), the :func:`nonlinear_cost` of the bound outputs (0: no multiplier
    left) and the names of the variables they read. Cached per (fixed fields, bound
    outputs) in ``pe.plans``."""
    key = (tuple((str(v), c) for v, c in fixed), outputs)
    plan = pe.plans.get(key)
    if plan is None:
        pairs = [(v, z3.BitVecVal(c, v.size())) for v, c in fixed]
        terms = [z3.simplify(subst(pe.outputs[o], pairs)) for o in outputs]
        valid = z3.simplify(subst(pe.valid, pairs))
        split = choose_split(terms, enums, {str(v) for v, _ in fixed}) if enums else None
        order: list[int] = []
        if split is not None:
            costs = []
            for code in split.codes:
                val = z3.BitVecVal(code, split.width)
                if z3.is_false(z3.simplify(subst(valid, [(split.var, val)]))):
                    continue
                costs.append((sum(blast_cost(z3.simplify(subst(t, [(split.var, val)])))
                                  for t in terms), code))
            order = [c for _, c in sorted(costs)]
        present: set[str] = set()
        for t in terms:
            present |= free_var_names(t)
        plan = (split, order, sum(nonlinear_cost(t) for t in terms), frozenset(present))
        pe.plans[key] = plan
    return plan


NONLINEAR_TRY_RLIMIT = 250_000
"""Budget (z3 resource units, ~0.015 s unloaded) of the first attempt at a sub-problem that
still holds a multiplier (most such attempts run out and are split on the input modes, so
the budget is kept small: 1M units cost 35% more time on the default PE). Budgets are z3
``rlimit`` counts, not wall time, so which sub-problems get split does not depend on machine
load (and the rule found does not depend on the split at all: :func:`lexmin`)."""
NONLINEAR_SPLIT_COST = 1024
"""A sub-problem whose multipliers cost at least this (:func:`nonlinear_cost`: one 32-bit
multiplier, e.g. the default PE's ``MULT1``/``MULT2``) is split at once, without a first
attempt: such attempts run out of their budget on the instruction's constant fields."""
SPLIT_TRY_RLIMIT = 4_000_000
"""Budget (z3 resource units, ~0.2 s unloaded) of the first attempt at any other sub-problem
that could still be split further."""


def solve_split(p: Problem, method: str, timeout_ms: int, seed: str, stats: SolveStats,
                enums: dict[str, _Split], pe: PEContext, outputs: tuple[str, ...],
                leaves: list[Problem], fixed: tuple = (), depth: int = 0
                ) -> tuple[str, list[tuple[Any, Any]] | None, str]:
    """Solve by case splits on instruction enum fields (the opcode first, chosen by
    :func:`choose_split`): the root is always split; a sub-problem is first tried with a
    short deterministic budget (:data:`NONLINEAR_TRY_RLIMIT` if it holds a multiplier, else
    :data:`SPLIT_TRY_RLIMIT`) and split further when it runs out (at once when its
    multipliers cost :data:`NONLINEAR_SPLIT_COST` or more). Sub-problems are tried cheapest
    first (:func:`blast_cost`, then code order) and the first rule found wins; ``none``
    only if every leaf is UNSAT. The split field and code order come from
    :func:`split_plan` (the PE alone). Returns ``(status, assignment incl. the fixed
    fields, leaf method)``; every sub-problem solved is appended to ``leaves`` (the last
    one is where a rule was found)."""
    split, order, nonlinear, present = split_plan(pe, outputs, fixed, enums)
    leaf_method = "cegis" if method in ("cegis", "auto") else "direct"
    if not p.needed <= present:         # the PE ignores an input the IR op depends on
        return "none", None, leaf_method
    if split is None or (depth > 0 and nonlinear < NONLINEAR_SPLIT_COST):
        budget = (NONLINEAR_TRY_RLIMIT if nonlinear else SPLIT_TRY_RLIMIT) \
            if split is not None else None
        if leaf_method == "cegis":
            status, asg = solve_cegis(p, timeout_ms, seed, stats, rlimit=budget)
            if status == "timeout" and method == "auto" and split is None:
                leaf_method = "direct"
                status, asg = solve_direct(p, timeout_ms, stats)
        else:
            status, asg = solve_direct(p, timeout_ms, stats, rlimit=budget)
        if status != "timeout" or split is None:
            if asg is not None:
                asg = asg + [(v, z3.BitVecVal(c, v.size())) for v, c in fixed]
            leaves.append(p)
            return status, asg, leaf_method
    any_timeout = False
    for code in order:
        sub = fix(p, split.var, code)
        if z3.is_false(sub.valid):
            continue
        status, asg, lm = solve_split(sub, method, timeout_ms, seed, stats, enums, pe,
                                      outputs, leaves, fixed + ((split.var, code),),
                                      depth + 1)
        if lm == "direct":
            leaf_method = "direct"
        if status == "found":
            return status, asg, leaf_method
        if status == "timeout":
            any_timeout = True
    return ("timeout" if any_timeout else "none"), None, leaf_method


def lexmin(pe: PEContext, p: Problem, method: str, timeout_ms: int, seed: str,
           stats: SolveStats, enums: dict[str, _Split], outputs: tuple[str, ...]
           ) -> tuple[str, list[tuple[Any, Any]] | None, str, bool]:
    """Search and canonicalise the enum fields in one pass: the lexicographically smallest
    choice of the enum fields (opcode, modes; layout order) of ``p`` for which a rule
    exists. For each enum field in turn, the codes are tried in increasing order, each
    sub-problem solved by :func:`solve_split` (which splits further instead of giving up on
    a short budget; an exact ∃∀ answer per step, sharing the example bank); the first code
    with a rule is kept. Codes at or above the code of the rule found so far need no query
    (that rule already answers them). The result depends only on the problem, not on the
    solver's history (``--jobs``, target order).

    Returns ``(status, assignment incl. the fixed fields, leaf method, minimal)``: ``none``
    when no code of the first enum field has a rule (every leaf UNSAT), ``timeout`` when
    none was found and a step timed out. A timeout after a rule was found stops the
    refinement (the rule found so far is kept: valid, not necessarily the smallest;
    ``minimal`` False)."""
    cur = p
    found: list[tuple[Any, Any]] | None = None
    names = {str(v) for v in p.exists}
    leaf_method = "cegis" if method in ("cegis", "auto") else "direct"
    fields = [(pe.field_info[f], pe.fields[f]) for f in p.free_fields
              if pe.field_info[f].tags is not None and str(pe.fields[f]) in names]
    if not fields:
        return (*solve_split(p, method, timeout_ms, seed, stats, enums, pe, outputs, []),
                True)
    any_timeout = False
    for info, var in fields:
        have = None
        if found is not None:
            have = next(as_int(v) for k, v in found if k.eq(var))
        for code in sorted(set(info.tags.values())):
            sub = fix(cur, var, code)
            if z3.is_false(sub.valid):
                continue
            if have is not None and code >= have:
                cur = sub                   # the rule found so far has this code
                break
            fixed = tuple((v, as_int(c)) for v, c in sub.fixed)
            status, asg, lm = solve_split(sub, method, timeout_ms, seed, stats, enums, pe,
                                          outputs, [], fixed, depth=1)
            if lm == "direct":
                leaf_method = "direct"
            if status == "timeout":
                any_timeout = True
                if found is not None:       # keep the rule found so far
                    return "found", found, leaf_method, False
                continue
            if status == "found":
                cur, found = sub, asg
                break
        if found is None:
            return ("timeout" if any_timeout else "none"), None, leaf_method, False
    return "found", found, leaf_method, not any_timeout


def canonicalise(pe: PEContext, p: Problem, assignment: list[tuple[Any, Any]],
                 timeout_ms: int, stats: SolveStats, enums_minimal: bool = False
                 ) -> list[tuple[Any, Any]]:
    """Lower don't-care choices: drop ties first, then each free field (layout order): an
    enum to its smallest code (skipped when ``enums_minimal``: :func:`lexmin` already chose
    the smallest codes), a bit-vector field to 0 if the rule holds with 0, else bit by bit
    (MSB first) to the smallest value for which the rule still holds."""
    cur = {str(k): (k, v) for k, v in assignment}

    def holds(trial: dict[str, tuple[Any, Any]]) -> bool:
        return find_counterexample(p, list(trial.values()), timeout_ms, stats)[0] == "ok"

    for sel, _val in p.ties.values():
        if z3.is_true(cur[str(sel)][1]):
            trial = dict(cur)
            trial[str(sel)] = (sel, z3.BoolVal(False))
            if holds(trial):
                cur = trial
    for sel, val in p.ties.values():
        if z3.is_false(cur[str(sel)][1]):
            cur[str(val)] = (val, value_of(1, 0, val))
    for fname in p.free_fields:
        var = pe.fields[fname]
        info = pe.field_info[fname]
        now = as_int(cur[str(var)][1])
        if info.tags is not None:
            if enums_minimal:
                continue
            for c in sorted(c for c in set(info.tags.values()) if c < now):
                trial = dict(cur)
                trial[str(var)] = (var, value_of(info.width, c, var))
                if holds(trial):
                    cur = trial
                    break
            continue
        if now:
            trial = dict(cur)
            trial[str(var)] = (var, value_of(info.width, 0, var))
            if holds(trial):                        # a don't-care field: 0 at once
                cur = trial
                continue
        for bit in reversed(range(info.width)):      # clear don't-care bits, MSB first
            if not now >> bit & 1:
                continue
            trial = dict(cur)
            trial[str(var)] = (var, value_of(info.width, now & ~(1 << bit), var))
            if holds(trial):
                cur = trial
                now &= ~(1 << bit)
    return list(cur.values())


# ------------------------------------------------------------------------------ driver
@dataclass
class Found:
    """A synthesised single-PE rule before serialisation."""

    binding: Binding
    fields: dict[str, int]              # every unbound field
    ties: dict[str, int]                # tied PE inputs
    free: list[str]                     # free (don't-care) PE inputs


@dataclass
class SynthResult:
    """Outcome of :func:`synthesize`: ``status`` ``found`` / ``none`` / ``timeout``."""

    target: str
    status: str
    found: Found | None
    method: str
    seconds: float
    stats: SolveStats = field(default_factory=SolveStats)
    bindings_tried: int = 0


def synthesize(spec: type, target: Target, width: int, policy: BindingPolicy | None = None,
               method: str = "auto", timeout_ms: int = DEFAULT_TIMEOUT_MS) -> SynthResult:
    """Synthesise a single-PE rule for ``target`` at ``width`` bits on ``spec``.

    ``method``: ``"cegis"``, ``"direct"`` or ``"auto"`` (CEGIS, direct query if CEGIS times
    out). Phase 1 leaves unbound PE inputs free; phase 2 (only if phase 1 finds nothing)
    allows ties from ``policy``. Returns a :class:`SynthResult`; never raises for UNSAT."""
    if method not in ("cegis", "direct", "auto"):
        raise RuleError(f"unknown synthesis method '{method}'; use cegis, direct or auto")
    policy = policy or BindingPolicy()
    t0 = time.perf_counter()
    pe = pe_context(spec)
    irc = ir_context(target.op, width)
    stats = SolveStats()
    bindings = list(enumerate_bindings(pe, irc, target))
    enums = _enum_fields(pe)
    tie_sets = policy.resolve(pe)
    phases: list[dict[str, tuple[int, ...]]] = [{}]
    if tie_sets:
        phases.append(tie_sets)
    timed_out = False
    tried = 0
    used = method
    for ties in phases:
        for b in bindings:
            if ties and not any(pin not in {x for _, x in b.inputs} for pin in ties):
                continue
            tried += 1
            p = build_problem(pe, irc, target, b, ties)
            seed = f"{target.key}|{b}"
            status, asg, leaf_method, minimal = lexmin(pe, p, method, timeout_ms, seed, stats, enums,
                                              tuple(sorted(x for _, x in b.outputs)))
            if leaf_method == "direct" and method == "auto":
                used = "direct"
            if status == "timeout":
                timed_out = True
                continue
            if status == "found":
                assert asg is not None
                asg = canonicalise(pe, p, asg, timeout_ms, stats, minimal)
                vals = {str(k): as_int(v) for k, v in asg}
                fields = {f: vals[str(pe.fields[f])] for f in p.free_fields}
                tied = {pin: vals[str(val)] for pin, (sel, val) in p.ties.items()
                        if vals[str(sel)]}
                bound = {x for _, x in b.inputs}
                free = [pin for pin in pe.inputs if pin not in bound and pin not in tied]
                stats.seconds = time.perf_counter() - t0
                return SynthResult(target.key, "found", Found(b, fields, tied, free), used,
                                   stats.seconds, stats, tried)
    stats.seconds = time.perf_counter() - t0
    return SynthResult(target.key, "timeout" if timed_out else "none", None, used,
                       stats.seconds, stats, tried)
