"""Normal form of a PE spec's ``__call__`` (computed once per spec class).

Transformation (PEak paper, "control flow normalisation"; DESIGN.md §3 peak):

1. ``for v in range(<constant>)`` loops are unrolled (the bound must evaluate to an int
   from literals, module/closure constants or int attributes set in ``__init__``).
2. Returns are closed: the statements after an ``if`` that contains a ``return`` are moved
   into both of its branches, so every path ends in exactly one ``return``. A path that
   falls off the end is a :class:`~cgra.errors.SpecError` naming the ``if`` / last line.
3. SSA: every assignment makes a new name; an ``if`` without returns merges the names its
   branches assign with ``__ite__(cond, then, else)``; an ``if`` whose branches return
   gives ``__ite__(cond, ret_then, ret_else)`` (element-wise on tuples); ``x if c else y``
   becomes ``__ite__``; ``and``/``or``/``not`` become bitwise ``&``/``|``/``~``.
4. State: ``self.reg(v[, en])`` reads the register's current value; the next value is an
   ``__ite__`` chain over the call sites' path conditions (holding when no call site's path
   is taken). Two calls of one register (or sub-PE, or register-file write) on the same
   path are rejected. Register-file reads are muxes over the entries. A sub-PE is
   evaluated once per call site (at most one per path; call sites on exclusive paths,
   e.g. after step 2 copies code into both branches, are evaluated separately) and its
   next state is selected by the call sites' path conditions (it holds when not called).

Rejected with ``SpecError(file, line)``: ``while``; ``for`` over anything but a constant
``range``; ``try``/``with``/``raise``/``del``/``global``/``lambda``/comprehensions/nested
``def``; ``break``/``continue``; assignment to ``self.x`` (state is declared in
``__init__``); assignment to a subscript or attribute; a call of a function that is not a
hwtypes type, an ISA type, a method of a value or a declared component; an unknown name;
a name not assigned on every path; a path that does not return.

Also rejected, with the line: an input / output annotated with anything but ``Bit`` or a
sized bit vector (``BitVector`` without a width, ``int``), and every type error
:func:`peak.typecheck.typecheck` finds by evaluating the normal form once on symbolic values
(mismatched widths, a register fed a value of another type, branches of different types, a
return that is not the declared outputs, an int constant wider than its operand).

The result, :class:`NormalForm`, holds the generated straight-line Python source (see
``NormalForm.source``; ``NormalForm.spec_lines`` maps each of its lines to the spec line) and
compiles it once per family into
``fn(state: tuple, inst_view, *inputs) -> (outputs, next_state: tuple)``.
"""
from __future__ import annotations

import ast
import builtins
import copy
import functools
import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any

import hwtypes as ht
from hwtypes.adt_meta import BoundMeta

from cgra.errors import SpecError
from peak.family import Family, band, bnot, bor, make_ite
from peak.coerce import accept_int_fields
from peak.state import PeakBase, Register, RegisterFile
from peak.typecheck import typecheck
from peak.assembler import assembler
from peak.assembler import is_bit_type, is_bv_type


@dataclass
class StateLeaf:
    """One state element: ``name`` (``"o_reg"``, ``"rf[3]"``, ``"sub.o_reg"``), hwtypes
    type ``T``, reset value ``init``."""

    name: str
    T: Any
    init: int


@dataclass
class NormalForm:
    """The normalised ``__call__`` of a spec class.

    ``inputs``/``outputs``: ``(name, hwtypes type)`` in order; ``isa``: the instruction
    type; ``state``: the state leaves in the order of the state tuples; ``source``: the
    generated SSA function; ``file``: the spec's source file; ``spec_lines[k]``: the spec line
    that produced line ``k + 1`` of ``source``; ``returns``: ``(SSA name, spec line)`` of each
    ``return`` statement."""

    spec: type
    isa: Any
    inputs: list[tuple[str, Any]]
    outputs: list[tuple[str, Any]]
    state: list[StateLeaf]
    source: str
    file: str
    refs: dict[str, Any]
    subs: dict[str, "NormalForm"]
    spec_lines: list[int] = field(default_factory=list)
    returns: list[tuple[str, int]] = field(default_factory=list)
    _code: Any = None
    _fns: dict[str, Any] = field(default_factory=dict)
    _plan: Any = None
    _specialized: dict = field(default_factory=dict)
    _seen: dict = field(default_factory=dict)

    def function(self, family: Family) -> Any:
        """The normal form compiled for ``family`` (cached):
        ``fn(state_tuple, inst_view, *inputs) -> (raw_return, next_state_tuple)``."""
        fn = self._fns.get(family.name)
        if fn is None:
            ns = self.namespace(family)
            if self._code is None:
                self._code = compile(self.source, f"<normal form of {self.spec.__name__}>",
                                     "exec")
            exec(self._code, ns)
            fn = ns["__nf__"]
            self._fns[family.name] = fn
        return fn

    def namespace(self, family: Family) -> dict[str, Any]:
        """The globals the normal form runs with under ``family`` (its type references
        mapped to the family's types, the ``__ite__``/``__cast__``/... helpers, sub-PEs)."""
        ns: dict[str, Any] = {"__builtins__": builtins}
        for name, value in self.refs.items():
            ns[name] = family.map_type(value)
        ns["__ite__"] = make_ite(self.file)
        ns["__band__"], ns["__bor__"], ns["__bnot__"] = band, bor, bnot
        ns["__cast__"] = _cast
        ns["__rfread__"] = _rfread
        ns["__rfsel__"] = _rfsel
        for name, sub in self.subs.items():
            ns[f"__subfn_{name}"] = sub.function(family)
        return ns

    def specialized(self, family: Family, key: Any, view: Any) -> Any:
        """The normal form partially evaluated for one instruction (``view``; ``key`` a
        hashable id of it, e.g. the flat encoding): lines that depend only on the
        instruction are computed once, ``__ite__`` with such a condition keeps only the
        chosen operand, dead lines are dropped, and a sub-PE call whose instruction follows
        from ``view`` runs the sub-PE's own specialisation. Returns ``fn(state_tuple,
        *inputs) -> (raw_return, next_state_tuple)``; cached (up to 4096 instructions per
        family)."""
        ck = (family.name, key)
        fn = self._specialized.get(ck)
        if fn is not None:
            return fn
        if self._plan is None:
            self._plan = _SpecializePlan(self)
        fn = self._plan.build(family, self.function(family), view, key)
        if len(self._specialized) >= 4096:
            self._specialized.clear()
        self._specialized[ck] = fn
        return fn

    def runner(self, family: Family, key: Any, view: Any) -> Any:
        """``fn(state_tuple, *inputs)`` for one instruction: the generic normal form on the
        first use of ``key``, the :meth:`specialized` one from the second use on (a
        specialisation costs about as much as a few generic calls)."""
        ck = (family.name, key)
        fn = self._specialized.get(ck)
        if fn is not None:
            return fn
        n = self._seen.get(ck, 0)
        if n >= 1:
            self._seen.pop(ck, None)
            return self.specialized(family, key, view)
        if len(self._seen) >= 65536:
            self._seen.clear()
        self._seen[ck] = n + 1
        full = self.function(family)
        return lambda state, *inputs: full(state, view, *inputs)

    def outputs_tuple(self, raw: Any) -> tuple:
        """The raw return value as a tuple of ``len(outputs)`` values (SpecError if the
        arity is wrong)."""
        n = len(self.outputs)
        if n == 1:
            return (raw,)
        if not isinstance(raw, tuple) or len(raw) != n:
            got = len(raw) if isinstance(raw, tuple) else 1
            raise SpecError(f"{self.spec.__name__}.__call__ returns {got} values but "
                            f"name_outputs declares {n} ({[o for o, _ in self.outputs]})",
                            self.file)
        return raw


class _SpecializePlan:
    """Static analysis of the SSA source shared by every specialisation."""

    def __init__(self, nf: NormalForm):
        tree = ast.parse(nf.source).body[0]
        assert isinstance(tree, ast.FunctionDef)
        self.nf = nf
        self.params = [a.arg for a in tree.args.args]        # __state, inst, inputs...
        self.inst = self.params[1]
        body = tree.body
        self.ret = body[-1]
        assert isinstance(self.ret, ast.Return)
        self.lines: list[tuple[list[str], ast.expr, ast.stmt]] = []
        dynamic = set(self.params) - {self.inst}
        self.static: set[str] = set()
        for st in body[:-1]:
            assert isinstance(st, ast.Assign)
            t = st.targets[0]
            names = [t.id] if isinstance(t, ast.Name) else [e.id for e in t.elts]  # type: ignore[attr-defined]
            used = {n.id for n in ast.walk(st.value) if isinstance(n, ast.Name)}
            if used & dynamic:
                dynamic.update(names)
            else:
                self.static.update(names)
            self.lines.append((names, st.value, st))
        # the static prefix: computes every static name from the instruction
        src = [f"def __static__({self.inst}):"]
        for names, _value, st in self.lines:
            if set(names) <= self.static:
                src.append("    " + ast.unparse(st))
        src.append("    return {" + ", ".join(f"{n!r}: {n}" for n in sorted(self.static))
                   + "}")
        self.static_src = "\n".join(src) + "\n"
        # the full function returning its locals: gives the type of every SSA value
        full = nf.source.rstrip("\n").split("\n")
        full[-1] = "    return locals()"
        self.locals_src = "\n".join(full).replace("def __nf__(", "def __locals__(") + "\n"

    @staticmethod
    def _same_kind(a: Any, b: Any) -> bool:
        if isinstance(a, tuple) or isinstance(b, tuple):
            return (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)
                    and all(_SpecializePlan._same_kind(x, y) for x, y in zip(a, b, strict=True)))
        return type(a) is type(b) and not isinstance(a, int)

    def _sub_call(self, value: ast.expr) -> tuple[str, str] | None:
        """``(sub-PE attribute, SSA name of its instruction argument)`` when ``value`` calls
        a sub-PE whose instruction depends only on this spec's instruction, else None."""
        if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                and value.func.id.startswith("__subfn_") and len(value.args) >= 2
                and isinstance(value.args[1], ast.Name) and value.args[1].id in self.static):
            return value.func.id[len("__subfn_"):], value.args[1].id
        return None

    def build(self, family: Family, full_fn: Any, view: Any, key: Any) -> Any:
        """The specialisation for the instruction ``view`` (``key`` its hashable id); a
        sub-PE call whose instruction is known runs the sub-PE's own specialisation, cached
        under ``(spec, key, call site)``, and gets ``None`` for the inputs that one ignores
        (so what only feeds them is dropped). The function's ``_peak_used_inputs_`` names
        the inputs it reads."""
        ns = dict(full_fn.__globals__)
        exec(compile(self.static_src, "<static part>", "exec"), ns)
        values = ns["__static__"](view)
        exec(compile(self.locals_src, "<types>", "exec"), ns)
        state0 = tuple(family.value(leaf.T, leaf.init) for leaf in self.nf.state)
        inputs0 = [family.value(T, 0) for _, T in self.nf.inputs]
        types = ns["__locals__"](state0, view, *inputs0)

        def val(e: ast.expr) -> Any:
            if isinstance(e, ast.Name):
                return types.get(e.id, values.get(e.id))
            return None
        live: set[str] = {n.id for n in ast.walk(self.ret) if isinstance(n, ast.Name)}
        out: list[str] = []
        for names, value, st in reversed(self.lines):
            if not (set(names) & live) or set(names) <= self.static:
                continue
            if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                    and value.func.id == "__ite__" and isinstance(value.args[0], ast.Name)
                    and value.args[0].id in self.static):
                cond = values[value.args[0].id]
                same = self._same_kind(val(value.args[1]), val(value.args[2]))
                if same and (isinstance(cond, bool) or type(cond) is ht.Bit):
                    chosen = value.args[1] if bool(cond) else value.args[2]
                    out.append(f"    {names[0]} = {ast.unparse(chosen)}")
                    live.update(n.id for n in ast.walk(chosen) if isinstance(n, ast.Name))
                    continue
            sub = self._sub_call(value)
            if sub is not None:     # the sub-PE specialised too; inputs it ignores are not computed
                assert isinstance(value, ast.Call)
                fn = f"__subspec_{names[0]}"
                sub_nf = self.nf.subs[sub[0]]
                ns[fn] = sub_nf.specialized(family, (self.nf.spec, key, names[0]), values[sub[1]])
                used = ns[fn]._peak_used_inputs_
                args = [value.args[0]] + [a if n in used else ast.Constant(None) for (n, _), a
                                          in zip(sub_nf.inputs, value.args[2:], strict=True)]
                out.append(f"    {names[0]} = {fn}({', '.join(ast.unparse(a) for a in args)})")
                live.update(n.id for a in args for n in ast.walk(a) if isinstance(n, ast.Name))
                continue
            out.append("    " + ast.unparse(st))
            live.update(n.id for n in ast.walk(value) if isinstance(n, ast.Name))
        inputs = self.params[2:]
        src = [f"def __spec__({', '.join([self.params[0]] + inputs)}):"]
        if self.nf.state:
            src.append("    (" + "".join(f"__st_{i}, " for i in range(len(self.nf.state)))
                       + f") = {self.params[0]}")
        src.extend(reversed(out))
        src.append("    " + ast.unparse(self.ret))
        ns.update(values)
        ns[self.inst] = view                 # dynamic lines may still read inst fields
        exec(compile("\n".join(src) + "\n", f"<{self.nf.spec.__name__} specialised>",
                     "exec"), ns)
        fn = ns["__spec__"]
        fn._peak_used_inputs_ = frozenset(p for p in inputs if p in live)
        return fn


def _cast(T: Any, v: Any) -> Any:
    if isinstance(v, (bool, int)):
        return T(int(v))
    if type(v) is T:
        return v
    return T(v)


def _rfread(addr: Any, entries: tuple) -> Any:
    r = entries[0]
    for i in range(1, len(entries)):
        r = (addr == type(addr)(i)).ite(entries[i], r)
    return r


def _rfsel(addr: Any, i: int) -> Any:
    return addr == type(addr)(i)


# ---------------------------------------------------------------------------------------
_CONSTRUCT = {
    ast.While: "while loop", ast.Try: "try statement", ast.With: "with statement",
    ast.Raise: "raise statement", ast.Delete: "del statement", ast.Global: "global statement",
    ast.Nonlocal: "nonlocal statement", ast.FunctionDef: "nested def",
    ast.AsyncFunctionDef: "nested def", ast.ClassDef: "nested class",
    ast.Import: "import", ast.ImportFrom: "import", ast.Break: "break",
    ast.Continue: "continue", ast.Assert: "assert", ast.AsyncFor: "async for",
    ast.AsyncWith: "async with",
}
if hasattr(ast, "TryStar"):
    _CONSTRUCT[ast.TryStar] = "try statement"
if hasattr(ast, "Match"):
    _CONSTRUCT[ast.Match] = "match statement"

_EXPR_CONSTRUCT = {
    ast.Lambda: "lambda", ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension", ast.DictComp: "dict comprehension",
    ast.GeneratorExp: "generator expression", ast.Await: "await", ast.Yield: "yield",
    ast.YieldFrom: "yield from", ast.NamedExpr: "assignment expression (:=)",
    ast.Starred: "starred expression",
}


def _contains_return(s: ast.AST) -> bool:
    return any(isinstance(n, ast.Return) for n in ast.walk(s))


def _is_type_like(v: Any) -> bool:
    """Objects a spec may call: hwtypes bit types and ISA (ADT) types."""
    return isinstance(v, type) and (issubclass(v, (ht.AbstractBit, ht.AbstractBitVector))
                                    or isinstance(v, BoundMeta))


@dataclass
class _Comp:
    name: str
    obj: Any
    leaves: list[int]            # indices into the state tuple
    writes: list = field(default_factory=list)


class _Builder:
    """Builds the SSA statement stream of one ``__call__``."""

    def __init__(self, spec: type, fn: Any, tree: ast.FunctionDef, file: str,
                 instance: PeakBase, scope: dict[str, Any]):
        self.spec, self.fn, self.tree, self.file = spec, fn, tree, file
        self.instance, self.scope = instance, scope
        self.lines: list[str] = []
        self.line_of: list[int] = []        # spec line of each entry of self.lines
        self.cur_line: int = tree.lineno
        self.returns: list[tuple[str, int]] = []
        self.refs: dict[str, Any] = {}
        self.counter = 0
        self.if_counter = 0
        self.path_vars: dict[tuple, str] = {}
        self.self_name = tree.args.args[0].arg
        self.comps: dict[str, _Comp] = {}
        self.params: dict[str, Any] = {}
        self.state: list[StateLeaf] = []
        self.subs: dict[str, NormalForm] = {}
        self._discover()

    # ------------------------------------------------------------------ helpers
    def err(self, msg: str, node: ast.AST | None, construct: str | None = None) -> SpecError:
        line = getattr(node, "lineno", None) if node is not None else self.tree.lineno
        return SpecError(f"{self.spec.__name__}.__call__: {msg}", self.file, line, construct)

    def fresh(self, base: str) -> str:
        self.counter += 1
        base = base.replace(".", "_").replace("[", "_").replace("]", "")
        return f"{base}_{self.counter}"

    def emit(self, target: str, expr: ast.AST | str, line: int | None = None) -> str:
        src = expr if isinstance(expr, str) else ast.unparse(expr)
        self.lines.append(f"    {target} = {src}")
        self.line_of.append(line if line is not None else self.cur_line)
        return target

    def _discover(self) -> None:
        for attr, obj in vars(self.instance).items():
            if isinstance(obj, Register):
                self.comps[attr] = _Comp(attr, obj, [len(self.state)])
                self.state.append(StateLeaf(attr, obj.T, obj.init))
            elif isinstance(obj, RegisterFile):
                idx = []
                for i in range(obj.depth):
                    idx.append(len(self.state))
                    self.state.append(StateLeaf(f"{attr}[{i}]", obj.T, obj.init))
                self.comps[attr] = _Comp(attr, obj, idx)
            elif isinstance(obj, PeakBase):
                sub = normal_form(type(obj))
                idx = []
                for leaf in sub.state:
                    idx.append(len(self.state))
                    self.state.append(StateLeaf(f"{attr}.{leaf.name}", leaf.T, leaf.init))
                self.comps[attr] = _Comp(attr, obj, idx)
                self.subs[attr] = sub
            else:
                self.params[attr] = obj

    def resolve(self, name: str, node: ast.AST) -> Any:
        if name in self.scope:
            return self.scope[name]
        raise self.err(f"unknown name '{name}'; define it at module level or in __init__",
                       node, "name")

    def ref(self, name: str, node: ast.AST) -> str:
        self.refs[name] = self.resolve(name, node)
        return name

    def path_var(self, path: tuple) -> str | None:
        if not path:
            return None
        if path in self.path_vars:
            return self.path_vars[path]
        parent = self.path_var(path[:-1])
        cond, pol = path[-1]
        term = cond if pol else f"__bnot__({cond})"
        v = self.emit(self.fresh("__p"), f"__band__({parent}, {term})" if parent else term)
        self.path_vars[path] = v
        return v

    # ------------------------------------------------------------------ pre-passes
    def const_eval(self, node: ast.expr) -> Any:
        class SelfParams(ast.NodeTransformer):
            def __init__(s) -> None:
                s.ns: dict[str, Any] = {}

            def visit_Attribute(s, n: ast.Attribute) -> Any:
                if isinstance(n.value, ast.Name) and n.value.id == self.self_name:
                    if n.attr not in self.params:
                        raise self.err(f"self.{n.attr} is not a constant parameter", n, "for")
                    key = f"__self_{n.attr}"
                    s.ns[key] = self.params[n.attr]
                    return ast.copy_location(ast.Name(key, ast.Load()), n)
                return s.generic_visit(n)

        t = SelfParams()
        expr = t.visit(copy.deepcopy(node))
        ns = dict(self.scope)
        ns.update(t.ns)
        try:
            return eval(compile(ast.fix_missing_locations(ast.Expression(expr)),
                                self.file, "eval"), {"__builtins__": builtins}, ns)
        except SpecError:
            raise
        except Exception as e:  # noqa: BLE001 - reported as a SpecError with the line
            raise self.err(f"for loop over a symbolic value: bound '{ast.unparse(node)}' is "
                           f"not a compile-time constant ({e}); loops must run over "
                           "range(<int constant>)",
                           node, "for") from e

    def unroll(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            for kind, what in _CONSTRUCT.items():
                if isinstance(s, kind):
                    extra = ("; a while loop depends on values known only at run time — "
                             "use for v in range(<constant>)" if kind is ast.While else
                             "; it is not supported in a PE spec")
                    raise self.err(f"unsupported construct: {what}{extra}", s, what)
            if isinstance(s, ast.For):
                it = s.iter
                ok = (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                      and it.func.id == "range" and not it.keywords)
                if not ok or not isinstance(s.target, ast.Name) or s.orelse:
                    raise self.err("for loop over a symbolic value or a non-range iterable; "
                                   "only `for v in range(<int constant>)` is unrolled",
                                   s, "for")
                bounds = [self.const_eval(a) for a in it.args]
                if not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds):
                    raise self.err(f"for loop over a symbolic value: range bounds "
                                   f"{ast.unparse(it)} are not ints; loop bounds must be "
                                   "compile-time constants", s, "for")
                for v in range(*bounds):
                    assign = ast.copy_location(
                        ast.Assign([ast.Name(s.target.id, ast.Store())], ast.Constant(v)), s)
                    out.append(assign)
                    out.extend(self.unroll(copy.deepcopy(s.body)))
            elif isinstance(s, ast.If):
                s.body = self.unroll(s.body)
                s.orelse = self.unroll(s.orelse)
                out.append(s)
            else:
                out.append(s)
        return out

    def close(self, stmts: list[ast.stmt], why: str, node: ast.AST) -> list[ast.stmt]:
        for i, s in enumerate(stmts):
            if isinstance(s, ast.Return):
                return stmts[:i + 1]
            if isinstance(s, ast.If) and _contains_return(s):
                rest = stmts[i + 1:]
                body = self.close(s.body + copy.deepcopy(rest),
                                  f"the path where the `if` on line {s.lineno} is true", s)
                orelse = self.close(s.orelse + copy.deepcopy(rest),
                                    f"the path where the `if` on line {s.lineno} is false", s)
                new_if = ast.copy_location(ast.If(s.test, body, orelse), s)
                return stmts[:i] + [new_if]
        last = stmts[-1] if stmts else node
        raise self.err(f"{why} does not return (it ends at line {last.lineno}); every path "
                       "must end in `return`", last, "missing return")

    # ------------------------------------------------------------------ expressions
    def expr(self, node: ast.expr, env: dict, ctx: dict) -> str:
        b = self

        class T(ast.NodeTransformer):
            def generic_visit(s, n: ast.AST) -> Any:
                for kind, what in _EXPR_CONSTRUCT.items():
                    if isinstance(n, kind):
                        raise b.err(f"unsupported construct: {what}", n, what)
                return super().generic_visit(n)

            def visit_Name(s, n: ast.Name) -> Any:
                if n.id == b.self_name:
                    raise b.err("`self` may only be used as self.<component>(...) or "
                                "self.<parameter>", n, "self")
                if n.id in env:
                    v = env[n.id]
                    if v is None:
                        raise b.err(f"'{n.id}' is not assigned on every path before this "
                                    "use; assign it in both branches of the if", n, "name")
                    return ast.copy_location(ast.Name(v, ast.Load()), n)
                b.ref(n.id, n)
                return n

            def visit_Attribute(s, n: ast.Attribute) -> Any:
                if isinstance(n.value, ast.Name) and n.value.id == b.self_name:
                    if n.attr in b.comps:
                        raise b.err(f"component self.{n.attr} must be called "
                                    f"(self.{n.attr}(...))", n, "component")
                    if n.attr not in b.params:
                        raise b.err(f"self.{n.attr} is not declared in __init__", n, "self")
                    key = f"__self_{n.attr}"
                    b.refs[key] = b.params[n.attr]
                    return ast.copy_location(ast.Name(key, ast.Load()), n)
                if isinstance(n.value, ast.Name) and n.value.id not in env \
                        and inspect.ismodule(b.scope.get(n.value.id)):
                    raise b.err(f"module attribute '{ast.unparse(n)}': import the name "
                                f"(from {b.scope[n.value.id].__name__} import {n.attr}) so "
                                "each family can substitute its own type", n, "module attribute")
                return s.generic_visit(n)

            def visit_BoolOp(s, n: ast.BoolOp) -> Any:
                vals = [s.visit(v) for v in n.values]
                f = "__band__" if isinstance(n.op, ast.And) else "__bor__"
                return ast.copy_location(ast.Call(ast.Name(f, ast.Load()), vals, []), n)

            def visit_UnaryOp(s, n: ast.UnaryOp) -> Any:
                if isinstance(n.op, ast.Not):
                    return ast.copy_location(
                        ast.Call(ast.Name("__bnot__", ast.Load()), [s.visit(n.operand)], []), n)
                return s.generic_visit(n)

            def visit_IfExp(s, n: ast.IfExp) -> Any:
                for part in (n.body, n.orelse):
                    for sub in ast.walk(part):
                        if b.is_comp_call(sub):
                            raise b.err("a component call inside `x if c else y`; use an "
                                        "if statement", sub, "component")
                args = [s.visit(n.test), s.visit(n.body), s.visit(n.orelse),
                        ast.Constant(n.lineno)]
                return ast.copy_location(ast.Call(ast.Name("__ite__", ast.Load()), args, []), n)

            def visit_Compare(s, n: ast.Compare) -> Any:
                for op in n.ops:
                    if isinstance(op, (ast.In, ast.NotIn, ast.Is, ast.IsNot)):
                        what = {ast.In: "in", ast.NotIn: "not in", ast.Is: "is",
                                ast.IsNot: "is not"}[type(op)]
                        raise b.err(f"unsupported comparison `{what}`: it needs a Python "
                                    "truth value; compare with == / != and combine with "
                                    "or / and", n, f"comparison {what}")
                if len(n.ops) == 1:
                    return s.generic_visit(n)
                left = s.visit(n.left)
                rights = [s.visit(c) for c in n.comparators]
                parts = []
                for op, r in zip(n.ops, rights, strict=True):
                    parts.append(ast.Compare(left, [op], [r]))
                    left = r
                return ast.copy_location(ast.Call(ast.Name("__band__", ast.Load()), parts, []), n)

            def visit_Call(s, n: ast.Call) -> Any:
                if b.is_comp_call(n):
                    return b.comp_call(n, s, env, ctx)
                f = n.func
                if isinstance(f, ast.Name):
                    if f.id in env:
                        raise b.err(f"call of local value '{f.id}'; only hwtypes/ISA types, "
                                    "value methods and components can be called", n, "call")
                    if f.id not in b.scope:
                        raise b.err(f"call to unknown function '{f.id}'; only hwtypes/ISA "
                                    "types, methods of values and declared components can be "
                                    "called", n, "call")
                    if not _is_type_like(b.scope[f.id]):
                        raise b.err(f"call to unknown function '{f.id}' "
                                    f"({type(b.scope[f.id]).__name__}); a spec may call only "
                                    "hwtypes/ISA types, methods of values and declared "
                                    "components", n, "call")
                elif isinstance(f, ast.Subscript):
                    base = f.value
                    if isinstance(base, ast.Name) and not (
                            base.id in b.scope and _is_type_like(b.scope[base.id])):
                        raise b.err(f"call to unknown function '{ast.unparse(f)}'", n, "call")
                elif isinstance(f, ast.Attribute):
                    if isinstance(f.value, ast.Name) and f.value.id not in env:
                        obj = b.scope.get(f.value.id)
                        if obj is not None and inspect.ismodule(obj):
                            target = getattr(obj, f.attr, None)
                            if not _is_type_like(target):
                                raise b.err(f"call to unknown function '{ast.unparse(f)}'",
                                            n, "call")
                else:
                    raise b.err(f"call of '{ast.unparse(f)}' is not supported", n, "call")
                return s.generic_visit(n)

        new = T().visit(copy.deepcopy(node))
        ast.fix_missing_locations(new)
        return ast.unparse(new)

    def is_comp_call(self, n: ast.AST) -> bool:
        if not isinstance(n, ast.Call):
            return False
        f = n.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
                and f.value.id == self.self_name:
            return True
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute) \
                and isinstance(f.value.value, ast.Name) and f.value.value.id == self.self_name:
            return True
        return False

    def comp_call(self, n: ast.Call, tr: ast.NodeTransformer, env: dict, ctx: dict) -> ast.AST:
        f = n.func
        assert isinstance(f, ast.Attribute)
        if n.keywords:
            raise self.err("component calls take positional arguments only", n, "component")
        args = [self.emit(self.fresh("__arg"), ast.unparse(ast.fix_missing_locations(
            tr.visit(a))), n.lineno) for a in n.args]
        path, sig = ctx["path"], ctx["sig"]
        if isinstance(f.value, ast.Name):           # self.comp(...)
            name = f.attr
            comp = self.comps.get(name)
            if comp is None:
                if name in self.params or hasattr(self.instance, name):
                    raise self.err(f"call to unknown function 'self.{name}': it is not a "
                                   "Register, RegisterFile or sub-PE declared in __init__",
                                   n, "call")
                raise self.err(f"call to unknown function 'self.{name}'; declare it in "
                               "__init__", n, "call")
            obj = comp.obj
            if isinstance(obj, Register):
                if len(args) not in (1, 2):
                    raise self.err(f"register self.{name} takes (value) or (value, en)",
                                   n, "register")
                self.check_once(comp, sig, n, f"register self.{name}")
                tkey = f"__T_{name}"
                self.refs[tkey] = obj.T
                v = self.emit(self.fresh(f"__in_{name}"), f"__cast__({tkey}, {args[0]})",
                              n.lineno)
                comp.writes.append((self.path_var(path), args[1] if len(args) == 2 else None,
                                    v, sig, n.lineno))
                return ast.Name(f"__st_{comp.leaves[0]}", ast.Load())
            if isinstance(obj, RegisterFile):
                raise self.err(f"register file self.{name} is used with "
                               f"self.{name}.read(addr) / self.{name}.write(addr, data[, en])",
                               n, "register file")
            # sub-PE
            self.check_once(comp, sig, n, f"sub-PE self.{name}")
            st = "(" + "".join(f"__st_{i}, " for i in comp.leaves) + ")"
            r = self.emit(self.fresh(f"__sub_{name}"),
                          f"__subfn_{name}({st}, {', '.join(args)})", n.lineno)
            comp.writes.append((self.path_var(path), None, r, sig, n.lineno))
            return ast.parse(f"{r}[0]", mode="eval").body
        # self.rf.read / self.rf.write
        assert isinstance(f.value, ast.Attribute)
        name = f.value.attr
        comp = self.comps.get(name)
        if comp is None or not isinstance(comp.obj, RegisterFile):
            raise self.err(f"call to unknown function 'self.{name}.{f.attr}'; self.{name} is "
                           "not a RegisterFile declared in __init__", n, "call")
        entries = "(" + "".join(f"__st_{i}, " for i in comp.leaves) + ")"
        if f.attr == "read" and len(args) == 1:
            return ast.parse(f"__rfread__({args[0]}, {entries})", mode="eval").body
        if f.attr == "write" and len(args) in (2, 3):
            self.check_once(comp, sig, n, f"register file self.{name} write")
            tkey = f"__T_{name}"
            self.refs[tkey] = comp.obj.T
            d = self.emit(self.fresh(f"__wd_{name}"), f"__cast__({tkey}, {args[1]})", n.lineno)
            comp.writes.append((self.path_var(path), args[2] if len(args) == 3 else None,
                                (args[0], d), sig, n.lineno))
            return ast.Constant(None)
        raise self.err(f"self.{name}.{f.attr}: use read(addr) or write(addr, data[, en])",
                       n, "register file")

    def check_once(self, comp: _Comp, sig: tuple, n: ast.AST, what: str) -> None:
        for (_, _, _, other, line) in comp.writes:
            exclusive = any(a[0] == b[0] and a[1] != b[1] for a in sig for b in other)
            if not exclusive:
                raise self.err(f"{what} is called twice on one path (lines {line} and "
                               f"{n.lineno}); call each component once per path and select its "
                               "inputs with if/else", n, "component")

    # ------------------------------------------------------------------ statements
    def assign_target(self, t: ast.expr, value: str, env: dict) -> None:
        if isinstance(t, ast.Name):
            env[t.id] = self.emit(self.fresh(t.id), value)
        elif isinstance(t, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in t.elts):
            tmp = self.emit(self.fresh("__tup"), value)
            for i, e in enumerate(t.elts):
                assert isinstance(e, ast.Name)
                env[e.id] = self.emit(self.fresh(e.id), f"{tmp}[{i}]")
        elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) \
                and t.value.id == self.self_name:
            raise self.err(f"assignment to self.{t.attr} outside __init__; declare state in "
                           "__init__ and update it by calling a Register", t, "self assignment")
        else:
            raise self.err(f"unsupported assignment target '{ast.unparse(t)}'; assign to "
                           "names only", t, "assignment")

    def walk(self, stmts: list[ast.stmt], env: dict, ctx: dict) -> str | None:
        """Emit ``stmts``; returns the name holding the return value, or None."""
        for s in stmts:
            self.cur_line = s.lineno
            if isinstance(s, ast.Return):
                if s.value is None:
                    raise self.err("`return` without a value; return the outputs", s, "return")
                ret = self.emit(self.fresh("__ret"), self.expr(s.value, env, ctx), s.lineno)
                self.returns.append((ret, s.lineno))
                return ret
            if isinstance(s, ast.Assign):
                for t in s.targets:
                    if isinstance(t, ast.Attribute):
                        self.assign_target(t, "", env)
                v = self.expr(s.value, env, ctx)
                if len(s.targets) > 1:
                    v = self.emit(self.fresh("__multi"), v)
                for t in s.targets:
                    self.assign_target(t, v, env)
            elif isinstance(s, ast.AnnAssign):
                if s.value is None:
                    continue
                self.assign_target(s.target, self.expr(s.value, env, ctx), env)
            elif isinstance(s, ast.AugAssign):
                if not isinstance(s.target, ast.Name):
                    self.assign_target(s.target, "", env)
                load = ast.copy_location(ast.Name(s.target.id, ast.Load()), s)
                binop = ast.copy_location(ast.BinOp(load, s.op, s.value), s)
                self.assign_target(s.target, self.expr(binop, env, ctx), env)
            elif isinstance(s, ast.Expr):
                if isinstance(s.value, ast.Constant):
                    continue
                self.emit(self.fresh("__discard"), self.expr(s.value, env, ctx))
            elif isinstance(s, ast.Pass):
                continue
            elif isinstance(s, ast.If):
                cond = self.emit(self.fresh("__c"), self.expr(s.test, env, ctx))
                self.if_counter += 1
                iid = self.if_counter
                ctx_t = {"path": ctx["path"] + ((cond, True),), "sig": ctx["sig"] + ((iid, 1),)}
                ctx_f = {"path": ctx["path"] + ((cond, False),), "sig": ctx["sig"] + ((iid, 0),)}
                env_t, env_f = dict(env), dict(env)
                r_t = self.walk(s.body, env_t, ctx_t)
                r_f = self.walk(s.orelse, env_f, ctx_f)
                if (r_t is None) != (r_f is None):
                    raise self.err("internal: unbalanced return after closing", s)
                if r_t is not None:
                    return self.emit(self.fresh("__ret"),
                                     f"__ite__({cond}, {r_t}, {r_f}, {s.lineno})", s.lineno)
                for name in sorted(set(env_t) | set(env_f)):
                    a, b = env_t.get(name), env_f.get(name)
                    if a == b:
                        env[name] = a
                    elif a is None or b is None:
                        env[name] = None
                    else:
                        env[name] = self.emit(self.fresh(name),
                                              f"__ite__({cond}, {a}, {b}, {s.lineno})", s.lineno)
            else:
                what = type(s).__name__
                raise self.err(f"unsupported construct: {what}", s, what)
        return None

    def finish_state(self) -> list[str]:
        nxt = [f"__st_{i}" for i in range(len(self.state))]
        for comp in self.comps.values():
            obj = comp.obj
            for (p, en, v, _sig, line) in comp.writes:
                self.cur_line = line
                cond = None
                if p and en:
                    cond = self.emit(self.fresh("__we"), f"__band__({p}, {en})")
                else:
                    cond = p or en
                if isinstance(obj, Register):
                    i = comp.leaves[0]
                    nxt[i] = v if cond is None else self.emit(
                        self.fresh(f"__nx_{comp.name}"), f"__ite__({cond}, {v}, {nxt[i]}, {line})")
                elif isinstance(obj, RegisterFile):
                    addr, data = v
                    for j, i in enumerate(comp.leaves):
                        sel = self.emit(self.fresh("__sel"), f"__rfsel__({addr}, {j})")
                        c = sel if cond is None else self.emit(self.fresh("__we"),
                                                               f"__band__({cond}, {sel})")
                        nxt[i] = self.emit(self.fresh(f"__nx_{comp.name}"),
                                           f"__ite__({c}, {data}, {nxt[i]}, {line})")
                else:
                    for j, i in enumerate(comp.leaves):
                        val = f"{v}[1][{j}]"
                        nxt[i] = self.emit(self.fresh(f"__nx_{comp.name}"), val) \
                            if cond is None else self.emit(
                            self.fresh(f"__nx_{comp.name}"),
                            f"__ite__({cond}, {val}, {nxt[i]}, {line})")
        return nxt

    def build(self) -> str:
        args = self.tree.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.defaults:
            raise self.err("__call__ must take (self, inst, input, ...) without defaults, "
                           "*args or **kwargs", self.tree, "signature")
        params = [a.arg for a in args.args[1:]]
        body = self.unroll(self.tree.body)
        body = self.close(body, "the end of __call__", self.tree)
        env = {p: p for p in params}
        header = [f"def __nf__(__state, {', '.join(params)}):"]
        if self.state:
            header.append("    (" + "".join(f"__st_{i}, " for i in range(len(self.state)))
                          + ") = __state")
        ret = self.walk(body, env, {"path": (), "sig": ()})
        nxt = self.finish_state()
        self.lines.append(f"    return {ret}, ({''.join(n + ', ' for n in nxt)})")
        self.line_of.append(self.tree.lineno)
        self.spec_lines = [self.tree.lineno] * len(header) + self.line_of
        return "\n".join(header + self.lines) + "\n"


def _parse(fn: Any) -> tuple[ast.FunctionDef, str]:
    file = inspect.getsourcefile(fn) or "<unknown>"
    try:
        src, first = inspect.getsourcelines(fn)
    except OSError as e:
        raise SpecError(f"cannot read the source of {fn.__qualname__}: {e}", file) from e
    tree = ast.parse(textwrap.dedent("".join(src)))
    ast.increment_lineno(tree, first - 1)
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef):
        raise SpecError(f"{fn.__qualname__} is not a plain function", file, first)
    return node, file


def _scope(fn: Any) -> dict[str, Any]:
    scope: dict[str, Any] = dict(vars(builtins))
    scope.update(fn.__globals__)
    closure = getattr(fn, "__closure__", None) or ()
    for name, cell in zip(fn.__code__.co_freevars, closure, strict=True):
        try:
            scope[name] = cell.cell_contents
        except ValueError:      # an empty cell: the name is not bound yet, nothing to add
            continue
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__, strict=True):
            try:
                scope[name] = cell.cell_contents
            except ValueError:
                continue
    return scope


@functools.lru_cache(maxsize=None)
def normal_form(spec: type) -> NormalForm:
    """The normal form of ``spec`` (a :class:`~peak.spec.Peak` subclass), computed once.

    Raises :class:`SpecError` (with the spec file and line, message ``file:line: ...``) for
    unsupported code, a path that does not return, a missing or non-hwtypes annotation, a
    missing ``name_outputs``, a failing ``__init__`` and the type errors of
    :func:`peak.typecheck.typecheck`. Lets the ISA's Bit / BitVector fields take ints
    (:func:`peak.coerce.accept_int_fields`)."""
    if not (isinstance(spec, type) and issubclass(spec, PeakBase)):
        raise SpecError(f"{spec!r} is not a Peak spec class (subclass peak.Peak)")
    fn = getattr(spec, "_spec_call_", None)
    if fn is None:
        raise SpecError(f"{spec.__name__} defines no __call__", inspect.getsourcefile(spec))
    tree, file = _parse(fn)
    outs = getattr(fn, "_peak_outputs_", None)
    if not outs:
        raise SpecError(f"{spec.__name__}.__call__ has no @name_outputs(...) decorator naming "
                        "its outputs and their types", file, tree.lineno)
    scope = _scope(fn)
    ann = {}
    for k, v in fn.__annotations__.items():
        if isinstance(v, str):
            try:
                v = eval(v, {"__builtins__": builtins}, scope)
            except Exception as e:  # noqa: BLE001 - reported as SpecError
                raise SpecError(f"{spec.__name__}.__call__: annotation of '{k}' ({v}) does not "
                                f"evaluate: {e} (a spec whose types are closure variables must not use "
                                "`from __future__ import annotations`)", file, tree.lineno) from e
        ann[k] = v
    names = [a.arg for a in tree.args.args]
    if len(names) < 2:
        raise SpecError(f"{spec.__name__}.__call__ must take (self, inst, *inputs)",
                        file, tree.lineno)
    for n in names[1:]:
        if n not in ann:
            raise SpecError(f"{spec.__name__}.__call__ argument '{n}' has no type annotation",
                            file, tree.lineno)
    isa = ann[names[1]]
    try:
        assembler(isa)
    except SpecError as e:
        if e.file is not None:
            raise
        raise SpecError(f"{spec.__name__}.__call__: instruction argument '{names[1]}': {e}",
                        file, _annotation(tree, names[1])[0]) from None
    accept_int_fields(isa)
    for n in names[2:]:
        _check_port_type(spec, f"input '{n}'", ann[n], file, *_annotation(tree, n))
    for n, T in outs.items():
        _check_port_type(spec, f"output '{n}' (name_outputs)", T, file, *_output(tree, n))
    try:
        instance = spec()
    except SpecError as e:
        if e.file is not None:
            raise
        sfile, line = _frame_in(e, spec)
        raise SpecError(f"{spec.__name__}.__init__: {e}", sfile, line) from None
    except Exception as e:  # noqa: BLE001 - a broken __init__ is the author's error
        sfile, line = _frame_in(e, spec)
        raise SpecError(f"{spec.__name__}() failed: {type(e).__name__}: {e}",
                        sfile, line) from e
    b = _Builder(spec, fn, tree, file, instance, scope)
    source = b.build()
    nf = NormalForm(spec=spec, isa=isa, inputs=[(n, ann[n]) for n in names[2:]],
                    outputs=list(outs.items()), state=b.state, source=source, file=file,
                    refs=b.refs, subs=b.subs, spec_lines=b.spec_lines, returns=b.returns)
    typecheck(nf)
    return nf


def _annotation(tree: ast.FunctionDef, arg: str) -> tuple[int, str]:
    """(line, source text) of the annotation of argument ``arg``."""
    for a in tree.args.args:
        if a.arg == arg:
            return (a.annotation or a).lineno, ast.unparse(a.annotation) if a.annotation else ""
    return tree.lineno, ""


def _output(tree: ast.FunctionDef, name: str) -> tuple[int, str]:
    """(line, source text) of output ``name``'s type in ``@name_outputs(...)``."""
    for d in tree.decorator_list:
        if isinstance(d, ast.Call):
            for kw in d.keywords:
                if kw.arg == name:
                    return kw.value.lineno, ast.unparse(kw.value)
    return (tree.decorator_list[0].lineno if tree.decorator_list else tree.lineno), ""


def _type_name(T: Any) -> str:
    return getattr(T, "__name__", None) or repr(T)


def _check_port_type(spec: type, what: str, T: Any, file: str, line: int,
                     text: str = "") -> None:
    """A port is annotated with ``Bit`` or a sized hwtypes bit vector; SpecError otherwise.
    ``text`` is the annotation's source (named in the message when it is an alias)."""
    if is_bit_type(T) or is_bv_type(T):
        return
    name = _type_name(T)
    typ = f"{text} = {name}" if text and text != name else name
    prefix = f"{spec.__name__}.__call__: {what}"
    if isinstance(T, type) and issubclass(T, ht.AbstractBitVector):
        raise SpecError(f"{prefix} has type {typ}, a bit vector without a width; give the "
                        f"width in bits, e.g. {name}[16]", file, line, "annotation")
    if T in (int, bool):
        raise SpecError(f"{prefix} is annotated {typ}, which has no bit width; annotate it "
                        "with a hwtypes type, e.g. BitVector[16] or Bit",
                        file, line, "annotation")
    raise SpecError(f"{prefix} has type {typ}, which is not a hwtypes Bit or sized "
                    "BitVector; annotate it with e.g. BitVector[16] or Bit",
                    file, line, "annotation")


def _frame_in(e: BaseException, spec: type) -> tuple[str | None, int | None]:
    """(file, line) of the innermost traceback frame of ``e`` in the spec's source file."""
    try:
        sfile = inspect.getsourcefile(spec)
    except TypeError:
        return None, None
    line = None
    tb = e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == sfile:
            line = tb.tb_lineno
        tb = tb.tb_next
    return sfile, line
