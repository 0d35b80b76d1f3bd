"""The IR op library: CoreIR / commonlib / corebit primitives and multi-op patterns.

Each op is a small PEak program (:mod:`peak.ir.programs`), a plain-Python reference on ints
(:func:`reference`) and, for the mapper, a pattern DAG over primitive ops. Op names are the
CoreIR ``genref``/``modref`` names used in ``mapper/data/coreir/*.json``.

Ports (CoreIR names; ``d`` = a ``width``-bit data word, ``b`` = 1 bit; every op has one
output ``out``)::

    coreir.add sub mul lshr ashr shl and or xor     in0:d in1:d -> out:d
    coreir.not                                      in:d        -> out:d
    coreir.eq neq ult ule ugt uge slt sle sgt sge   in0:d in1:d -> out:b
    coreir.mux                                      in0:d in1:d sel:b -> out:d  (sel ? in1 : in0)
    coreir.const                                    constant value:d -> out:d
    commonlib.smax smin umax umin absd mult_middle  in0:d in1:d -> out:d
    commonlib.abs                                   in:d        -> out:d
    corebit.and or xor                              in0:b in1:b -> out:b
    corebit.not                                     in:b        -> out:b
    corebit.mux                                     in0:b in1:b sel:b -> out:b
    corebit.const                                   constant value:b -> out:b

Semantics (values are unsigned bit patterns; signedness lives in the op): arithmetic modulo
``2**width``; ``lshr``/``shl`` by an amount ``>= width`` give 0 and ``ashr`` the sign fill
(SMT-LIB); ``abs`` of the most negative value is itself; ``absd(a, b) = abs(a - b)`` of the
wrapped difference; ``mult_middle`` = bits ``[width/2, width*3/2)`` of the product of the
sign-extended operands (bits 23..8 at 16 bits); ``smax(a, b) = a if a >=s b else b``,
``smin(a, b) = a if a <=s b else b``.

Multi-op patterns (names chosen here; the DAG in :attr:`IROp.dag` says which primitive ops
one rule covers, ``$`` names a pattern input)::

    pattern.muladd      in0 in1 in2   out = in0 * in1 + in2          mul -> add
    pattern.add3        in0 in1 in2   out = in0 + in1 + in2          add -> add
    pattern.add_lshr    in0 in1 in2   out = (in0 + in1) >>u in2      add -> lshr
    pattern.add_ashr    in0 in1 in2   out = (in0 + in1) >>s in2      add -> ashr
    pattern.select_slt  in0 in1       out = in0 <s in1 ? in0 : in1   slt -> mux(in0=$in1, in1=$in0)
    pattern.select_sgt  in0 in1       out = in0 >s in1 ? in0 : in1   sgt -> mux
    pattern.select_ult  in0 in1       out = in0 <u in1 ? in0 : in1   ult -> mux
    pattern.select_ugt  in0 in1       out = in0 >u in1 ? in0 : in1   ugt -> mux

Constant operands: a :class:`Target` is an op plus the set of its data inputs that are fed by
``coreir.const`` (``coreir.add[in1=const]`` is the add-with-constant pattern). A rule for it
binds those inputs to instruction constant fields of the PE, so the mapper folds the
constant into the PE (for a commutative op only ``[in1=const]`` exists: the mapper swaps
``op(const, x)``). A target may carry *preconditions* on its constants
(:attr:`Target.preconditions`): the constant shift amount of ``lshr``/``ashr``/``shl`` is
assumed ``< width`` (the mapper folds a larger amount itself: ``lshr``/``shl`` give the
constant 0 and ``ashr`` equals ``ashr`` by ``width - 1``).

Multi-op patterns have constant-operand variants too (:data:`PATTERN_CONST_VARIANTS`):
``pattern.muladd[in1=const]`` (``in0 * k + in2``, e.g. a weighted sum with constant
weights), ``pattern.muladd[in2=const]``, ``pattern.muladd[in1=const,in2=const]``
(``x * k1 + k2``), ``pattern.add3[in1=const]`` / ``[in2=const]`` (``a + b + k``), and the
add-then-shift patterns with a constant shift amount, with or without a constant addend
(``(x + k1) >> k2``, a rounding shift; amount precondition ``< width`` as for the
primitives). A PE with a three-input ALU folds the
constant into the instruction instead of spending a PE on it. Variants symmetric under a
commutative op are listed once (``muladd[in0=const]`` = ``muladd[in1=const]`` with the
multiplication's operands swapped: the mapper matches commutative ops both ways);
``add3[in1=const,in2=const]`` is not a target (the mapper folds ``(x + k1) + k2`` to
``x + (k1 + k2)``), nor are the select patterns' (with a constant they are ``smin`` /
``smax`` / ``umin`` / ``umax`` with a constant, which are targets).

Decompositions (multi-PE rules, cost = PE count) are listed in :data:`DECOMPOSITIONS`.
Two-PE shapes (:data:`TWO_PE_SHAPES`, issue 41): for an op the PE cannot compute in one
instruction, candidate DAGs of two ops the PE may compute in one instruction each (a
maximum as a compare feeding a select); the rule table composes a two-PE rule from the
parts' single-PE rules when the op (or its constant-operand variant) has no rule of its own.

BFloat16 ops (:data:`FLOAT_PRIMITIVES`, 16-bit library only; ``d`` = a bf16 encoding)::

    float.add sub mul max min                       in0:d in1:d -> out:d
    float.lt le gt ge eq                            in0:d in1:d -> out:b
    float.from_s16 from_u16                         in:d -> out:d    (integer -> bf16)
    float.to_s16 to_u16                             in:d -> out:d    (bf16 -> integer)

The conversions: ``from_s16`` / ``from_u16`` read ``in`` as a signed / unsigned 16-bit
integer and round it to nearest even (Halide's ``cast(BFloat(16), i)``); ``to_s16`` /
``to_u16`` truncate toward zero (Halide's ``cast(Int(16), f)``), saturate to the 16-bit
range and give 0 for NaN (Halide leaves out-of-range casts undefined; the FP PE's
``F2I``, :class:`peak.bf16.BF16ToInt16`).

Their semantics are the bit-level definitions of :mod:`peak.bf16` (each program calls the
sub-PE of its operation: round to nearest even, subnormals flushed, NaN ``0x7FC0``, IEEE
maximum / minimum, comparisons false on NaN; ``gt(a, b) = lt(b, a)``, ``ge(a, b) = le(b,
a)``); :mod:`peak.ir.floatref` is an independent exact-rational reference. The CoreIR
importer maps ``float_DW.fp_add`` / ``float_DW.fp_mul`` and ``float.*`` onto them
(:data:`mapper.ir.COREIR_ALIASES`). They are rule targets only of a PE that asks for them (a spec
class attribute ``ir_float = True``, :func:`wants_float`): the integer PEs' tables keep
their target list.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

from cgra.errors import RuleError
from peak.ir.programs import FLOAT_WIDTH, programs
from peak.normalize import normal_form
from peak.assembler import assembler
import peak.ir.programs as progs

#: Primitive op names (CoreIR genref / modref), in table order.
PRIMITIVES: tuple[str, ...] = (
    "coreir.add", "coreir.sub", "coreir.mul", "coreir.lshr", "coreir.ashr", "coreir.shl",
    "coreir.and", "coreir.or", "coreir.xor", "coreir.not",
    "coreir.eq", "coreir.neq", "coreir.ult", "coreir.ule", "coreir.ugt", "coreir.uge",
    "coreir.slt", "coreir.sle", "coreir.sgt", "coreir.sge", "coreir.mux", "coreir.const",
    "commonlib.smax", "commonlib.smin", "commonlib.umax", "commonlib.umin",
    "commonlib.abs", "commonlib.absd", "commonlib.mult_middle",
    "corebit.and", "corebit.or", "corebit.xor", "corebit.not", "corebit.const", "corebit.mux",
)

#: BFloat16 op names (16-bit library only; targets of PEs with ``ir_float = True``).
FLOAT_PRIMITIVES: tuple[str, ...] = (
    "float.add", "float.sub", "float.mul", "float.max", "float.min",
    "float.lt", "float.le", "float.gt", "float.ge", "float.eq",
    "float.from_s16", "float.from_u16", "float.to_s16", "float.to_u16",
)

#: The one-operand BFloat16 ops: integer <-> bf16 conversions (module docstring).
FLOAT_CONVERSIONS: frozenset[str] = frozenset({
    "float.from_s16", "float.from_u16", "float.to_s16", "float.to_u16"})

#: Multi-op pattern names.
PATTERNS: tuple[str, ...] = (
    "pattern.muladd", "pattern.add3", "pattern.add_lshr", "pattern.add_ashr",
    "pattern.select_slt", "pattern.select_sgt", "pattern.select_ult", "pattern.select_ugt",
)

#: Multi-PE decompositions: op -> pattern DAG over other ops (each node a PE of its own).
#: ``absd(a, b) = abs(sub(a, b))``.
DECOMPOSITIONS: dict[str, dict[str, Any]] = {
    "commonlib.absd": {
        "nodes": [{"id": "n0", "op": "coreir.sub", "args": {"in0": "$in0", "in1": "$in1"}},
                  {"id": "n1", "op": "commonlib.abs", "args": {"in": "n0"}}],
        "outputs": {"out": "n1"},
    },
}



def _select(cmp: str, swap: bool) -> dict[str, Any]:
    """``cmp(in0, in1) ? in0 : in1`` (``swap``: ``? in1 : in0``) as a compare PE feeding a
    select PE (``coreir.mux(in0, in1, sel) = sel ? in1 : in0``)."""
    first, second = ("$in0", "$in1") if swap else ("$in1", "$in0")
    return {"nodes": [{"id": "n0", "op": cmp, "args": {"in0": "$in0", "in1": "$in1"}},
                      {"id": "n1", "op": "coreir.mux",
                       "args": {"in0": first, "in1": second, "sel": "n0"}}],
            "outputs": {"out": "n1"}}


def _negated(cmp: str) -> dict[str, Any]:
    """``not cmp(in0, in1)``: a compare PE feeding a 1-bit NOT (a LUT PE)."""
    return {"nodes": [{"id": "n0", "op": cmp, "args": {"in0": "$in0", "in1": "$in1"}},
                      {"id": "n1", "op": "corebit.not", "args": {"in": "n0"}}],
            "outputs": {"out": "n1"}}


#: The compare whose negation each compare is.
_COMPLEMENT = {"coreir.eq": "coreir.neq", "coreir.neq": "coreir.eq",
               "coreir.ult": "coreir.uge", "coreir.uge": "coreir.ult",
               "coreir.ule": "coreir.ugt", "coreir.ugt": "coreir.ule",
               "coreir.slt": "coreir.sge", "coreir.sge": "coreir.slt",
               "coreir.sle": "coreir.sgt", "coreir.sgt": "coreir.sle"}

#: Two-PE shapes (issue 41): op -> candidate DAGs of two single-PE ops computing it, tried in
#: order by :func:`peak.rules.table.compose_shape` for an op (or a constant-operand variant
#: of it) without a single-PE rule; each node is one PE (an op of the library whose own rule
#: the table has), node ``n0`` feeds node ``n1``, the op's inputs may feed either. Max / min
#: as a compare plus a select: ``smax(a, b) = a >=s b ? a : b = a <s b ? b : a`` (equal on
#: ties), likewise ``smin`` (``<=s`` / ``>s``), ``umax``, ``umin``; each compare as the 1-bit
#: negation of its complement (``eq = not neq``, ``ult = not uge``, ...).
TWO_PE_SHAPES: dict[str, tuple[dict[str, Any], ...]] = {
    "commonlib.smax": (_select("coreir.sge", False), _select("coreir.slt", True)),
    "commonlib.smin": (_select("coreir.sle", False), _select("coreir.sgt", True)),
    "commonlib.umax": (_select("coreir.uge", False), _select("coreir.ult", True)),
    "commonlib.umin": (_select("coreir.ule", False), _select("coreir.ugt", True)),
    **{cmp: (_negated(neg),) for cmp, neg in _COMPLEMENT.items()},
}

_SHIFTS = ("coreir.lshr", "coreir.ashr", "coreir.shl")

#: Commutative binary ops (the one table: rule targets, the mapper's canonical operand
#: order and its pattern matcher all read it): only their ``[in1=const]`` variant is a
#: target (the mapper swaps the operands of ``op(const, x)``). ``smax(a, b) = a if a >=s b
#: else b`` is commutative as a function (on equality both operands are equal).
COMMUTATIVE: frozenset[str] = frozenset({
    "coreir.add", "coreir.mul", "coreir.and", "coreir.or", "coreir.xor", "coreir.eq",
    "coreir.neq", "commonlib.smax", "commonlib.smin", "commonlib.umax", "commonlib.umin",
    "commonlib.mult_middle", "corebit.and", "corebit.or", "corebit.xor",
    "float.add", "float.mul", "float.max", "float.min", "float.eq"})

#: Constant-operand variants of the multi-op patterns (module docstring): pattern ->
#: tuples of the data inputs fed by constants.
PATTERN_CONST_VARIANTS: dict[str, tuple[tuple[str, ...], ...]] = {
    "pattern.muladd": (("in1",), ("in2",), ("in1", "in2")),
    "pattern.add3": (("in1",), ("in2",)),
    "pattern.add_lshr": (("in2",), ("in1", "in2")),
    "pattern.add_ashr": (("in2",), ("in1", "in2")),
}

#: The input of a pattern that is a shift amount (a constant one gets the ``< width``
#: precondition, as the shift primitives' ``in1``).
_PATTERN_SHIFT_AMOUNT = {"pattern.add_lshr": "in2", "pattern.add_ashr": "in2"}


@dataclass(frozen=True)
class Port:
    """An IR port: CoreIR name and width in bits (1 = a bit)."""

    name: str
    width: int


@dataclass(frozen=True)
class IROp:
    """One IR op at one width.

    ``spec``: the PEak program; ``inputs``/``outputs``: ports in the program's order
    (``arg_names`` are the program's argument names, ``in_`` for CoreIR's ``in``);
    ``consts``: compile-time constants (the program's instruction fields, e.g. ``value``);
    ``dag``: the pattern the op stands for (nodes over primitive ops; ``$x`` = input x,
    ``#x`` = constant x)."""

    name: str
    width: int
    spec: type
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]
    consts: tuple[Port, ...]
    arg_names: tuple[str, ...]
    dag: dict[str, Any]

    @property
    def data_inputs(self) -> tuple[Port, ...]:
        return tuple(p for p in self.inputs if p.width > 1)


@dataclass(frozen=True)
class Precondition:
    """``port <op> value`` on a constant operand; ``op`` is ``"ult"`` (unsigned <)."""

    port: str
    op: str
    value: int

    def holds(self, v: int) -> bool:
        if self.op == "ult":
            return v < self.value
        raise RuleError(f"unknown precondition operator '{self.op}' on port {self.port}")

    def to_json(self) -> dict[str, Any]:
        return {"port": self.port, "op": self.op, "value": self.value}


@dataclass(frozen=True)
class Target:
    """What a rule implements: ``op`` with the data inputs ``const_inputs`` fed by
    constants. ``key`` is ``op`` or ``op[in1=const]`` (several: ``op[in0=const,in1=const]``)."""

    op: str
    const_inputs: tuple[str, ...] = ()
    preconditions: tuple[Precondition, ...] = field(default=())

    @property
    def key(self) -> str:
        if not self.const_inputs:
            return self.op
        return f"{self.op}[{','.join(f'{p}=const' for p in self.const_inputs)}]"


def _port_name(arg: str) -> str:
    return "in" if arg == "in_" else arg


@functools.lru_cache(maxsize=None)
def ir_op(name: str, width: int) -> IROp:
    """The IR op ``name`` at ``width`` bits (cached). Raises :class:`RuleError` for an
    unknown op name."""
    table = programs(width)
    if name not in table:
        raise RuleError(f"unknown IR op '{name}'; known ops: {', '.join(table)}")
    spec = table[name]
    nf = normal_form(spec)
    asm = assembler(nf.isa)
    consts = tuple(Port(f.name, f.width) for f in asm.fields if f.kind in ("bits", "bit"))

    def w(T: Any) -> int:
        return 1 if not hasattr(T, "size") else T.size

    inputs = tuple(Port(_port_name(n), w(T)) for n, T in nf.inputs)
    outputs = tuple(Port(n, w(T)) for n, T in nf.outputs)
    return IROp(name, width, spec, inputs, outputs, consts,
                tuple(n for n, _ in nf.inputs), _dag(name, inputs, consts))


def _dag(name: str, inputs: tuple[Port, ...], consts: tuple[Port, ...]) -> dict[str, Any]:
    args = {p.name: f"${p.name}" for p in inputs}
    if name in PRIMITIVES or name in FLOAT_PRIMITIVES:
        node: dict[str, Any] = {"id": "n0", "op": name, "args": args}
        if consts:
            node["value"] = f"#{consts[0].name}"
        return {"nodes": [node], "outputs": {"out": "n0"}}
    two = {"in0": "$in0", "in1": "$in1"}
    if name == "pattern.muladd":
        nodes = [{"id": "n0", "op": "coreir.mul", "args": two},
                 {"id": "n1", "op": "coreir.add", "args": {"in0": "n0", "in1": "$in2"}}]
    elif name in ("pattern.add3", "pattern.add_lshr", "pattern.add_ashr"):
        second = {"pattern.add3": "coreir.add", "pattern.add_lshr": "coreir.lshr",
                  "pattern.add_ashr": "coreir.ashr"}[name]
        nodes = [{"id": "n0", "op": "coreir.add", "args": two},
                 {"id": "n1", "op": second, "args": {"in0": "n0", "in1": "$in2"}}]
    else:
        cmp = "coreir." + name.split("_")[-1]
        nodes = [{"id": "n0", "op": cmp, "args": two},
                 {"id": "n1", "op": "coreir.mux",
                  "args": {"in0": "$in1", "in1": "$in0", "sel": "n0"}}]
    return {"nodes": nodes, "outputs": {"out": "n1"}}


def target_dag(op: IROp, target: Target) -> dict[str, Any]:
    """The pattern DAG of a target: the op's DAG with each constant input fed by a
    ``coreir.const`` node ``k_<port>`` whose value is the rule constant ``#<port>``."""
    dag = {"nodes": [dict(n, args=dict(n.get("args", {}))) for n in op.dag["nodes"]],
           "outputs": dict(op.dag["outputs"])}
    consts = []
    for p in target.const_inputs:
        consts.append({"id": f"k_{p}", "op": "coreir.const", "value": f"#{p}", "args": {}})
        for n in dag["nodes"]:
            for k, v in n["args"].items():
                if v == f"${p}":
                    n["args"][k] = f"k_{p}"
    dag["nodes"] = consts + dag["nodes"]
    return dag


def wants_float(spec: type) -> bool:
    """Whether the PE spec asks for the BFloat16 targets (class attribute ``ir_float``)."""
    return bool(getattr(spec, "ir_float", False))


def targets(width: int, patterns: bool = True, const_variants: bool = True,
            floats: bool = False) -> list[Target]:
    """Every rule target of the library at ``width`` bits, in table order: each primitive,
    each multi-op pattern (``patterns``), and (``const_variants``) every primitive with a
    strict non-empty subset of its data inputs fed by constants (``coreir.mux`` also with
    both data inputs constant, since ``sel`` stays a variable; a :data:`COMMUTATIVE` op
    only with ``in1`` constant; none for an op with a :data:`DECOMPOSITIONS` entry, whose
    constant operands the mapper folds into the parts), then (``patterns`` and
    ``const_variants``) the pattern variants of :data:`PATTERN_CONST_VARIANTS`; with
    ``floats`` (and ``width`` = 16) the :data:`FLOAT_PRIMITIVES` last, with their
    constant-operand variants (``const_variants``)."""
    out: list[Target] = []
    names = PRIMITIVES + (PATTERNS if patterns else ())
    for name in names:
        op = ir_op(name, width)
        out.append(Target(name))
    if const_variants:
        for name in PRIMITIVES:
            op = ir_op(name, width)
            data = [p.name for p in op.data_inputs]
            nonconst = len(op.inputs) - len(data)
            subsets: list[tuple[str, ...]] = []
            if len(data) >= 2 or (data and nonconst):
                subsets = [(p,) for p in data]
                if nonconst and len(data) == 2:
                    subsets.append(tuple(data))
            if name in COMMUTATIVE:
                subsets = [s for s in subsets if s != ("in0",)]
            if name in DECOMPOSITIONS:      # constants reach the parts' own variants
                subsets = []
            for s in subsets:
                pre: tuple[Precondition, ...] = ()
                if name in _SHIFTS and "in1" in s:
                    pre = (Precondition("in1", "ult", width),)
                out.append(Target(name, s, pre))
    if const_variants and patterns:
        for name, subsets_ in PATTERN_CONST_VARIANTS.items():
            amount = _PATTERN_SHIFT_AMOUNT.get(name)
            for s in subsets_:
                pre = (Precondition(amount, "ult", width),) if amount in s else ()
                out.append(Target(name, s, pre))
    if floats and width == FLOAT_WIDTH:
        for name in FLOAT_PRIMITIVES:
            out.append(Target(name))
        if const_variants:
            for name in FLOAT_PRIMITIVES:
                if name in FLOAT_CONVERSIONS:       # one operand: a constant one is folded
                    continue
                for p in ("in0", "in1"):
                    if not (p == "in0" and name in COMMUTATIVE):
                        out.append(Target(name, (p,)))
    return out


def target_from_key(key: str, width: int) -> Target:
    """Inverse of :attr:`Target.key` (preconditions restored). Raises :class:`RuleError`."""
    for t in targets(width, floats=True):
        if t.key == key:
            return t
    raise RuleError(f"unknown rule target '{key}' at width {width}")


# ---------------------------------------------------------------------------- references
def _s(v: int, w: int) -> int:
    v &= (1 << w) - 1
    return v - (1 << w) if v >> (w - 1) else v


def reference(name: str, width: int) -> Callable[..., int]:
    """Plain-Python semantics of op ``name``: ``f(*inputs, **consts) -> out`` on unsigned
    ints (inputs in port order, constants by name). Independent of the PEak programs; the
    tests compare the two."""
    w = width
    m = (1 << w) - 1

    def sh(a: int, b: int, kind: str) -> int:
        if kind == "lshr":
            return 0 if b >= w else a >> b
        if kind == "shl":
            return 0 if b >= w else (a << b) & m
        return (_s(a, w) >> min(b, w - 1)) & m

    two: dict[str, Callable[[int, int], int]] = {
        "coreir.add": lambda a, b: (a + b) & m,
        "coreir.sub": lambda a, b: (a - b) & m,
        "coreir.mul": lambda a, b: (a * b) & m,
        "coreir.lshr": lambda a, b: sh(a, b, "lshr"),
        "coreir.ashr": lambda a, b: sh(a, b, "ashr"),
        "coreir.shl": lambda a, b: sh(a, b, "shl"),
        "coreir.and": lambda a, b: a & b,
        "coreir.or": lambda a, b: a | b,
        "coreir.xor": lambda a, b: a ^ b,
        "coreir.eq": lambda a, b: int(a == b),
        "coreir.neq": lambda a, b: int(a != b),
        "coreir.ult": lambda a, b: int(a < b),
        "coreir.ule": lambda a, b: int(a <= b),
        "coreir.ugt": lambda a, b: int(a > b),
        "coreir.uge": lambda a, b: int(a >= b),
        "coreir.slt": lambda a, b: int(_s(a, w) < _s(b, w)),
        "coreir.sle": lambda a, b: int(_s(a, w) <= _s(b, w)),
        "coreir.sgt": lambda a, b: int(_s(a, w) > _s(b, w)),
        "coreir.sge": lambda a, b: int(_s(a, w) >= _s(b, w)),
        "commonlib.smax": lambda a, b: a if _s(a, w) >= _s(b, w) else b,
        "commonlib.smin": lambda a, b: a if _s(a, w) <= _s(b, w) else b,
        "commonlib.umax": max,
        "commonlib.umin": min,
        "commonlib.absd": lambda a, b: abs(_s(a - b, w)) & m,
        "commonlib.mult_middle": lambda a, b: ((_s(a, w) * _s(b, w)) >> (w // 2)) & m,
        "corebit.and": lambda a, b: a & b,
        "corebit.or": lambda a, b: a | b,
        "corebit.xor": lambda a, b: a ^ b,
        "pattern.select_slt": lambda a, b: a if _s(a, w) < _s(b, w) else b,
        "pattern.select_sgt": lambda a, b: a if _s(a, w) > _s(b, w) else b,
        "pattern.select_ult": lambda a, b: a if a < b else b,
        "pattern.select_ugt": lambda a, b: a if a > b else b,
    }
    if name in two:
        return two[name]
    one: dict[str, Callable[[int], int]] = {
        "coreir.not": lambda a: ~a & m,
        "commonlib.abs": lambda a: abs(_s(a, w)) & m,
        "corebit.not": lambda a: 1 - a,
    }
    if name in one:
        return one[name]
    three: dict[str, Callable[[int, int, int], int]] = {
        "coreir.mux": lambda a, b, s: b if s else a,
        "corebit.mux": lambda a, b, s: b if s else a,
        "pattern.muladd": lambda a, b, c: (a * b + c) & m,
        "pattern.add3": lambda a, b, c: (a + b + c) & m,
        "pattern.add_lshr": lambda a, b, c: sh((a + b) & m, c, "lshr"),
        "pattern.add_ashr": lambda a, b, c: sh((a + b) & m, c, "ashr"),
    }
    if name in three:
        return three[name]
    if name in FLOAT_PRIMITIVES and w == FLOAT_WIDTH:
        from peak.ir.floatref import REFERENCES  # deferred: loads peak.ir only when called
        return REFERENCES[name]
    if name == "coreir.const":
        return lambda value: value & m
    if name == "corebit.const":
        return lambda value: value & 1
    raise RuleError(f"no reference semantics for IR op '{name}'")


@functools.lru_cache(maxsize=None)
def library_hash() -> str:
    """sha256 hex of the IR library's source (this module and :mod:`peak.ir.programs`):
    part of every cache key, so an edit of an op's semantics invalidates its rules."""
    h = hashlib.sha256()
    for mod in (progs, __import__(__name__, fromlist=["x"])):
        h.update(inspect.getsource(mod).encode())
    return h.hexdigest()


__all__ = ["IROp", "Port", "Target", "Precondition", "PRIMITIVES", "PATTERNS",
           "FLOAT_CONVERSIONS", "FLOAT_PRIMITIVES", "FLOAT_WIDTH", "wants_float",
           "DECOMPOSITIONS", "TWO_PE_SHAPES", "COMMUTATIVE", "PATTERN_CONST_VARIANTS", "ir_op", "targets", "target_from_key", "target_dag",
           "reference", "library_hash"]
