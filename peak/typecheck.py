"""Type check of a normal form: evaluate it once on fresh symbolic (SMT) values, with strict
helpers, and report the first type error as a :class:`~cgra.errors.SpecError` at the spec
line that caused it.

Run by :func:`peak.normal_form` for every spec, so the Python model, ``cgra rules`` (SMT) and
``cgra rtl`` (magma) all refuse a badly typed spec with the same ``file:line: message``
before evaluating it. Types in hwtypes do not depend on values, and the normal form is
straight-line code that evaluates every branch, so one symbolic evaluation sees every
operation of the spec. Checked, beyond what hwtypes itself raises (which is also mapped to
the line):

* an int operand of ``+ - * & | ^ << >> // % ==`` ... or of a type constructor
  (``Data(70000)``), a register input or a branch must fit the width of the typed value it
  meets (``-2**(w-1) <= v < 2**w``; ``0``/``1`` for a Bit): hwtypes would truncate it;
* the two operands of a binary operator have the same width;
* a register (file) is fed a value of its declared type (``Bit`` vs ``BitVector[n]``, the
  width; signedness may differ);
* the two branches of an ``if`` (or ``x if c else y``) that assign one name have the same
  type; a condition is a ``Bit``;
* each ``return`` gives the declared outputs: their number and each output's type.

Not checked: int arguments of value methods (``a.adc(5, c)``), converted by hwtypes.
"""
from __future__ import annotations

import ast
import operator
from typing import TYPE_CHECKING, Any

import hwtypes as ht

from cgra.errors import SpecError
from peak.assembler import assembler
from peak.family import SMT

if TYPE_CHECKING:     # annotations only: peak.normalize calls typecheck() on what it builds
    from peak.normalize import NormalForm

_FILE = "<type check of a PE spec>"

_BINOPS = {ast.Add: ("+", operator.add), ast.Sub: ("-", operator.sub),
           ast.Mult: ("*", operator.mul), ast.FloorDiv: ("//", operator.floordiv),
           ast.Mod: ("%", operator.mod), ast.BitAnd: ("&", operator.and_),
           ast.BitOr: ("|", operator.or_), ast.BitXor: ("^", operator.xor),
           ast.LShift: ("<<", operator.lshift), ast.RShift: (">>", operator.rshift),
           ast.Div: ("/", operator.truediv), ast.Pow: ("**", operator.pow),
           ast.MatMult: ("@", operator.matmul)}
_CMPOPS = {ast.Eq: ("==", operator.eq), ast.NotEq: ("!=", operator.ne),
           ast.Lt: ("<", operator.lt), ast.LtE: ("<=", operator.le),
           ast.Gt: (">", operator.gt), ast.GtE: (">=", operator.ge)}
_OPS = {sym: f for sym, f in list(_BINOPS.values()) + list(_CMPOPS.values())}


class _TypeMismatch(Exception):
    """Raised by the checking helpers; turned into a SpecError at the SSA line's spec line."""


# ----------------------------------------------------------------------------- values
def _is_int(v: Any) -> bool:
    return isinstance(v, (int, bool))


def _is_bit(v: Any) -> bool:
    return isinstance(v, ht.AbstractBit)


def _is_bv(v: Any) -> bool:
    return isinstance(v, ht.AbstractBitVector)


def _width(v: Any) -> int | None:
    """Width in bits of a Bit / bit-vector value or type (None for anything else)."""
    if isinstance(v, type):
        if issubclass(v, ht.AbstractBit):
            return 1
        if issubclass(v, ht.AbstractBitVector) and v.is_sized:
            return v.size
        return None
    if _is_bit(v):
        return 1
    if _is_bv(v):
        return v.size
    return None


def _kind(v: Any) -> str | None:
    t = v if isinstance(v, type) else type(v)
    if issubclass(t, ht.AbstractBit):
        return "bit"
    if issubclass(t, ht.AbstractBitVector):
        return "bv"
    return None


def describe(v: Any) -> str:
    """The hwtypes name of a value's (or type's) type, without the SMT prefix:
    ``BitVector[16]``, ``Bit``, ``SIntVector[8]``, ``int 7``, ``a tuple of 2 values``."""
    if isinstance(v, tuple):
        return f"a tuple of {len(v)} values"
    if _is_int(v) and not isinstance(v, type):
        return f"int {int(v)}"
    t = v if isinstance(v, type) else type(v)
    name = getattr(t, "__name__", repr(t))
    return name[3:] if name.startswith("SMT") else name


def _fits(v: int, w: int) -> bool:
    v = int(v)
    if w == 1:
        return v in (0, 1)
    return -(1 << (w - 1)) <= v < (1 << w)


def _same_type(a: Any, b: Any) -> bool:
    """Same kind (Bit / bit vector) and width; signedness may differ."""
    return _kind(a) == _kind(b) and _width(a) == _width(b)


def _const_text(text: str, v: Any) -> str:
    return f"{text} (= {int(v)})" if text.strip("() ") != str(int(v)) else str(int(v))


def _check_int(v: Any, other: Any, text: str, where: str) -> None:
    w = _width(other)
    if w is not None and not _fits(v, w):
        mod = int(v) % (1 << w)
        raise _TypeMismatch(
            f"int constant {_const_text(text, v)} does not fit the {w}-bit {where} "
            f"({describe(other)}); hwtypes would silently truncate it to {mod}: use a "
            f"constant of at most {w} bits or widen the operand first (e.g. zext)")


# ----------------------------------------------------------------------------- helpers
#: Python operators with no hardware lowering in any interpretation of a spec (RTL, SMT)
_NO_HARDWARE = {"//": "x >> k divides by 2**k (bvlshr/bvashr for signed)",
                "/": "x >> k divides by 2**k (bvlshr/bvashr for signed)",
                "%": "x & (2**k - 1) is x modulo 2**k",
                "**": "x << k multiplies by 2**k; compute constant powers in Python"}


def _binop(sym: str, a: Any, b: Any, ta: str, tb: str) -> Any:
    if sym in _NO_HARDWARE and not (_is_int(a) and _is_int(b)):
        raise _TypeMismatch(f"`{sym}` on hardware values has no RTL lowering in the "
                            f"PE DSL (no divider/modulo/power unit); "
                            f"{_NO_HARDWARE[sym]}")
    if _is_int(a) and not _is_int(b):
        _check_int(a, b, ta, f"operand of `{sym}`")
    elif _is_int(b) and not _is_int(a):
        _check_int(b, a, tb, f"operand of `{sym}`")
    elif _kind(a) == "bv" and _kind(b) == "bv" and a.size != b.size \
            and sym not in ("<<", ">>"):
        raise _TypeMismatch(f"the operands of `{sym}` have different widths: "
                            f"{describe(a)} and {describe(b)}; make them the same width "
                            "(zext/sext or a slice)")
    elif _kind(a) != _kind(b) and _kind(a) is not None and _kind(b) is not None:
        raise _TypeMismatch(f"the operands of `{sym}` are {describe(a)} and {describe(b)}; "
                            "a Bit and a bit vector do not mix (use bits.ite(...) or a "
                            "slice)")
    return _OPS[sym](a, b)


def _ctor(T: Any, *args: Any, text: str = "") -> Any:
    if isinstance(T, type) and _kind(T) is not None and len(args) == 1:
        (v,) = args
        if _is_int(v):
            _check_int(v, T, text, f"value of {describe(T)}(...)")
        elif _kind(v) is not None and not _same_type(T, v):
            raise _TypeMismatch(f"{describe(T)}(...) of a {describe(v)} value changes the "
                                "width; use zext/sext or a slice for bit vectors and "
                                "bit.ite(one, zero) to turn a Bit into a bit vector")
    return T(*args)


def _cast(T: Any, v: Any, what: str) -> Any:
    if _is_int(v):
        _check_int(v, T, str(int(v)), f"input of {what}")
    elif not _same_type(T, v):
        hint = ("feed it a Bit (e.g. x[0] or x != 0)" if _kind(T) == "bit" else
                f"feed it a {describe(T)} (zext/sext or a slice; bit.ite(...) for a Bit)")
        raise _TypeMismatch(f"{what} is declared {describe(T)} but is fed a "
                            f"{describe(v)} value; {hint}, or change its declared type")
    return T(int(v)) if _is_int(v) else (v if type(v) is T else T(v))


def _ite(cond: Any, a: Any, b: Any, where: int) -> Any:
    if isinstance(cond, bool):
        return a if cond else b
    if isinstance(a, tuple) or isinstance(b, tuple):
        if not (isinstance(a, tuple) and isinstance(b, tuple)) or len(a) != len(b):
            raise _TypeMismatch(f"the branches of the `if` on line {where} give "
                                f"{describe(a)} and {describe(b)}; give the same number of "
                                "values on every path")
        return tuple(_ite(cond, x, y, where) for x, y in zip(a, b, strict=True))
    if not _is_bit(cond):
        raise _TypeMismatch(f"condition of type {describe(cond)} is not a Bit; compare it "
                            "(== / !=) to get a Bit")
    if _is_int(a) and _is_int(b):
        raise _TypeMismatch("both branches give plain Python ints; give one of them a type, "
                            "e.g. Data(0)")
    if _is_int(a):
        _check_int(a, b, str(int(a)), "value of the other branch")
        a = type(b)(int(a))
    elif _is_int(b):
        _check_int(b, a, str(int(b)), "value of the other branch")
        b = type(a)(int(b))
    elif not _same_type(a, b):
        raise _TypeMismatch(f"the branches of the `if` on line {where} give values of "
                            f"different types, {describe(a)} and {describe(b)}; give both "
                            "the same type (zext/sext or a slice; bit.ite(...) for a Bit)")
    elif type(a) is not type(b):
        b = type(a)(b)
    return cond.ite(a, b)


def _outputs(nf: NormalForm) -> Any:
    decl = nf.outputs

    def check(value: Any) -> Any:
        vals = value if len(decl) > 1 else (value,)
        if isinstance(value, tuple) != (len(decl) > 1) or len(vals) != len(decl):
            got = len(value) if isinstance(value, tuple) else 1
            raise _TypeMismatch(f"this return gives {got} value{'s' * (got != 1)} but "
                                f"name_outputs declares {len(decl)} "
                                f"({', '.join(n for n, _ in decl)}); return one value per "
                                "output")
        for (name, T), v in zip(decl, vals, strict=True):
            if _is_int(v):
                _check_int(v, T, str(int(v)), f"output '{name}'")
            elif not _same_type(T, v):
                raise _TypeMismatch(f"output '{name}' is declared {describe(T)} but this "
                                    f"return gives a {describe(v)}; return a "
                                    f"{describe(T)} on every path (zext/sext or a slice; "
                                    "bit.ite(...) to turn a Bit into a bit vector)")
        return value
    return check


# ----------------------------------------------------------------------------- rewrite
class _Rewrite(ast.NodeTransformer):
    """Routes operators, type constructors, casts and returns through the checking
    helpers (line numbers are kept: one SSA line stays one line)."""

    def __init__(self, nf: NormalForm):
        self.rets = {name for name, _ in nf.returns}
        self.types = {n for n, v in nf.refs.items() if isinstance(v, type) and _kind(v)}
        self.files = {leaf.name.split("[")[0] for leaf in nf.state if "[" in leaf.name}

    @staticmethod
    def _call(name: str, args: list[ast.expr], node: ast.AST,
              keywords: list[ast.keyword] | None = None) -> ast.Call:
        return ast.copy_location(ast.Call(ast.Name(name, ast.Load()), args, keywords or []),
                                 node)

    def visit_Assign(self, n: ast.Assign) -> Any:
        self.generic_visit(n)
        t = n.targets[0]
        if isinstance(t, ast.Name) and t.id in self.rets:
            n.value = self._call("__tc_out__", [n.value], n)
        return n

    def visit_BinOp(self, n: ast.BinOp) -> Any:
        text_l, text_r = ast.unparse(n.left), ast.unparse(n.right)
        self.generic_visit(n)
        sym = _BINOPS[type(n.op)][0]
        return self._call("__tc_binop__", [ast.Constant(sym), n.left, n.right,
                                           ast.Constant(text_l), ast.Constant(text_r)], n)

    def visit_Compare(self, n: ast.Compare) -> Any:
        if len(n.ops) != 1 or type(n.ops[0]) not in _CMPOPS:
            return self.generic_visit(n)
        text_l, text_r = ast.unparse(n.left), ast.unparse(n.comparators[0])
        self.generic_visit(n)
        sym = _CMPOPS[type(n.ops[0])][0]
        return self._call("__tc_binop__", [ast.Constant(sym), n.left, n.comparators[0],
                                           ast.Constant(text_l), ast.Constant(text_r)], n)

    def visit_Call(self, n: ast.Call) -> Any:
        texts = [ast.unparse(a) for a in n.args]
        self.generic_visit(n)
        f = n.func
        if isinstance(f, ast.Name) and f.id == "__cast__" and len(n.args) == 2:
            reg = n.args[0].id[len("__T_"):] if isinstance(n.args[0], ast.Name) else "?"
            what = f"register file self.{reg}" if reg in self.files else f"register self.{reg}"
            return self._call("__tc_cast__", [*n.args, ast.Constant(what)], n)
        if isinstance(f, ast.Name) and f.id == "__ite__":
            return self._call("__tc_ite__", n.args, n)
        if (isinstance(f, ast.Name) and f.id in self.types) or isinstance(f, ast.Subscript):
            return self._call("__tc_ctor__", [f, *n.args], n,
                              [ast.keyword("text", ast.Constant(", ".join(texts)))])
        return n


# ----------------------------------------------------------------------------- entry
def typecheck(nf: NormalForm) -> None:
    """Evaluate ``nf`` once on fresh SMT values with the checking helpers. Raises
    :class:`SpecError` (``file:line: <Spec>.__call__: message; fix``) for the first type
    error; returns None for a well-typed spec."""
    tree = _Rewrite(nf).visit(ast.parse(nf.source))
    ast.fix_missing_locations(tree)
    ns = nf.namespace(SMT)
    ns.update(__tc_binop__=_binop, __tc_ctor__=_ctor, __tc_cast__=_cast, __tc_ite__=_ite,
              __tc_out__=_outputs(nf))
    exec(compile(tree, _FILE, "exec"), ns)
    fn = ns["__nf__"]
    asm = assembler(nf.isa)
    view = asm.flat_view(ht.SMTBitVector[asm.width](), SMT)
    inputs = [SMT.map_type(T)() for _, T in nf.inputs]
    state = tuple(SMT.map_type(leaf.T)() for leaf in nf.state)
    try:
        fn(state, view, *inputs)
    except SpecError as e:
        if e.file is not None:
            raise
        # raised by the instruction view (unknown field, enum compared with an int):
        # located at the spec line that used it
        raise SpecError(f"{nf.spec.__name__}.__call__: {e}", nf.file, _spec_line(e, nf),
                        "types") from None
    except Exception as e:  # noqa: BLE001 - every failure is the spec's, reported at its line
        line = _spec_line(e, nf)
        if isinstance(e, _TypeMismatch):
            msg = str(e)
        else:
            text = str(e).strip().splitlines()[0] if str(e).strip() else ""
            msg = (f"{type(e).__name__}{': ' + text if text else ''} (evaluating this line "
                   "on symbolic values); check the types of its operands: Bit and "
                   "BitVector[n] of equal widths")
        raise SpecError(f"{nf.spec.__name__}.__call__: {msg}", nf.file, line, "types") \
            from None


def _spec_line(e: BaseException, nf: NormalForm) -> int | None:
    line = None
    tb = e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == _FILE:
            line = tb.tb_lineno
        tb = tb.tb_next
    if line is None or not 1 <= line <= len(nf.spec_lines):
        return None
    return nf.spec_lines[line - 1]
