"""The dataflow compiler's front end: nested-loop programs in the spirit of Spatial.

A :class:`Program` is a control tree (SARA §II-A, Fig. 2d): controllers (:class:`Loop`,
:class:`Branch`, :class:`DoWhile`) whose bodies hold further controllers and *hyperblocks*
(:class:`Block`: straight-line statements, the leaves). Memories are declared on the program:
:class:`Reg` (one word), :class:`FIFO` (a queue), :class:`SRAM` (on-chip, optionally
multi-buffered) and :class:`DRAM` (host arrays, the program's inputs and outputs).
Loops and do-whiles are pipelined by default (iterations overlap as far as the memory
tokens allow, Spatial's ``Pipe``); ``sequential=True`` makes one Spatial's ``Sequential``
(Koeplinger et al., PLDI'18, §3): children one after the other, iterations never overlap.

Programs are written with the builder methods of :class:`Program`, in Python::

    p = Program("dot_product")
    a = p.dram("a", (64,)); b = p.dram("b", (64,)); out = p.dram("out", (1,))
    acc = p.reg("acc", init=0)
    with p.foreach(64, par=4) as i:
        acc.value = acc.value + a[i] * b[i]
    out[0] = acc.value

Every memory access is a *site* (SARA: a declared access; all its dynamic executions are
one node of the access dependency graph): each :class:`Load` expression and each
:class:`Store` statement has a label (``R0``, ``W1``, ... unless given), as every controller
has (``L0``, ``B1``, ...).

Values are 32-bit: ``i32`` (two's complement, wrapping) or ``f32`` (IEEE binary32, numpy's
``float32`` arithmetic). :func:`apply_op` is the one definition of every operator; the
sequential interpreter and the token-level simulator both call it, so they agree bit for bit.

Errors: :class:`cgra.errors.ProgramError` for a malformed program (an index of the wrong
rank, a temporary read outside its block, an ``else_`` without an ``if_``, a do-while without
its condition).
"""
from __future__ import annotations

import contextlib
import itertools
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import numpy as np

from cgra.errors import ProgramError

DTYPES = ("i32", "f32")

#: operator name -> number of operands
OPS: dict[str, int] = {
    "add": 2, "sub": 2, "mul": 2, "div": 2, "mod": 2,
    "and": 2, "or": 2, "xor": 2, "shl": 2, "shr": 2,
    "lt": 2, "le": 2, "gt": 2, "ge": 2, "eq": 2, "ne": 2,
    "min": 2, "max": 2, "select": 3,
    "neg": 1, "abs": 1, "not": 1, "exp": 1, "log": 1, "sqrt": 1,
    "to_f32": 1, "to_i32": 1,
}
_CMP = {"lt", "le", "gt", "ge", "eq", "ne"}
_FLOAT_ONLY = {"exp", "log", "sqrt"}
_INT_ONLY = {"and", "or", "xor", "shl", "shr", "not", "mod"}


def wrap_i32(x: int) -> int:
    """``x`` as a signed 32-bit two's-complement value."""
    return ((int(x) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def apply_op(op: str, args: Sequence, dtype: str):
    """Evaluate operator ``op`` on already evaluated ``args`` (Python ints for ``i32``,
    ``numpy.float32`` for ``f32``); ``dtype`` is the type of the operands (of the 2nd and
    3rd for ``select``). Comparisons return an ``i32`` 0 or 1. Integer ``div``/``mod``
    floor like numpy's ``//`` and ``%``; a division by zero gives 0 (hardware has no trap).
    """
    if op == "select":
        c, a, b = args
        return a if c else b
    if dtype == "f32":
        f = np.float32
        with np.errstate(all="ignore"):
            if op in _CMP:
                a, b = args
                return int({"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b,
                            "eq": a == b, "ne": a != b}[op])
            if op == "to_i32":
                v = args[0]
                return 0 if not np.isfinite(v) else wrap_i32(int(v))
            if op == "to_f32":
                return f(args[0])
            unary = {"neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log,
                     "sqrt": np.sqrt}
            if op in unary:
                return f(unary[op](f(args[0])))
            a, b = f(args[0]), f(args[1])
            if op == "add":
                return f(a + b)
            if op == "sub":
                return f(a - b)
            if op == "mul":
                return f(a * b)
            if op == "div":
                return f(a / b) if b != 0 else f(0)
            if op == "min":
                return f(min(a, b))
            if op == "max":
                return f(max(a, b))
        raise ProgramError(f"operator {op!r} is not defined on f32")
    # i32
    if op in _CMP:
        a, b = args
        return int({"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b,
                    "eq": a == b, "ne": a != b}[op])
    if op == "to_f32":
        return np.float32(args[0])
    if op == "to_i32":
        return wrap_i32(args[0])
    if op == "neg":
        return wrap_i32(-args[0])
    if op == "abs":
        return wrap_i32(abs(args[0]))
    if op == "not":
        return wrap_i32(~args[0])
    a, b = args
    if op == "add":
        return wrap_i32(a + b)
    if op == "sub":
        return wrap_i32(a - b)
    if op == "mul":
        return wrap_i32(a * b)
    if op == "div":
        return 0 if b == 0 else wrap_i32(a // b)
    if op == "mod":
        return 0 if b == 0 else wrap_i32(a % b)
    if op == "and":
        return wrap_i32(a & b)
    if op == "or":
        return wrap_i32(a | b)
    if op == "xor":
        return wrap_i32(a ^ b)
    if op == "shl":
        return wrap_i32(a << (b & 31))
    if op == "shr":
        return wrap_i32(a >> (b & 31))
    if op == "min":
        return min(a, b)
    if op == "max":
        return max(a, b)
    raise ProgramError(f"operator {op!r} is not defined on i32")


def cast(value, dtype: str):
    """A Python number as a value of ``dtype`` (host data entering a program)."""
    return np.float32(value) if dtype == "f32" else wrap_i32(value)


# ---------------------------------------------------------------------------- expressions
class Expr:
    """An expression: a tree of :class:`Op` over :class:`Const`, :class:`Index` (a loop's
    iterator), :class:`Load` (a memory read) and :class:`Temp` (a block-local value).
    Python operators build :class:`Op` nodes; comparisons use ``lt``/``eq``/... methods or
    ``<``, ``<=``, ``>``, ``>=`` (``==`` keeps Python identity semantics)."""

    dtype: str = "i32"

    def _bin(self, op: str, other, swap: bool = False) -> "Op":
        o = as_expr(other, self.dtype)
        return Op(op, (o, self) if swap else (self, o))

    def __add__(self, o): return self._bin("add", o)
    def __radd__(self, o): return self._bin("add", o, True)
    def __sub__(self, o): return self._bin("sub", o)
    def __rsub__(self, o): return self._bin("sub", o, True)
    def __mul__(self, o): return self._bin("mul", o)
    def __rmul__(self, o): return self._bin("mul", o, True)
    def __floordiv__(self, o): return self._bin("div", o)
    def __truediv__(self, o): return self._bin("div", o)
    def __rfloordiv__(self, o): return self._bin("div", o, True)
    def __rtruediv__(self, o): return self._bin("div", o, True)
    def __mod__(self, o): return self._bin("mod", o)
    def __rmod__(self, o): return self._bin("mod", o, True)
    def __and__(self, o): return self._bin("and", o)
    def __or__(self, o): return self._bin("or", o)
    def __xor__(self, o): return self._bin("xor", o)
    def __lshift__(self, o): return self._bin("shl", o)
    def __rshift__(self, o): return self._bin("shr", o)
    def __lt__(self, o): return self._bin("lt", o)
    def __le__(self, o): return self._bin("le", o)
    def __gt__(self, o): return self._bin("gt", o)
    def __ge__(self, o): return self._bin("ge", o)
    def __neg__(self): return Op("neg", (self,))
    def eq(self, o) -> "Op": return self._bin("eq", o)
    def ne(self, o) -> "Op": return self._bin("ne", o)
    __hash__ = object.__hash__

    def children(self) -> tuple["Expr", ...]:
        return ()


def as_expr(x, dtype: str = "i32") -> Expr:
    """``x`` as an expression: an :class:`Expr` as is, a Python/numpy number as a
    :class:`Const` (``f32`` for a float, else ``dtype``)."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, (bool, int, np.integer)):
        return Const(int(x), dtype)
    if isinstance(x, (float, np.floating)):
        return Const(float(x), "f32")
    raise ProgramError(f"{x!r} is not an expression or a number")


@dataclass(eq=False)
class Const(Expr):
    value: int | float
    dtype: str = "i32"


@dataclass(eq=False)
class Index(Expr):
    """The iterator of ``loop`` (an ``i32``)."""
    loop: "Loop" = field(repr=False)
    dtype: str = "i32"


@dataclass(eq=False)
class Temp(Expr):
    """A value named inside one block (:meth:`Program.let`); readable by later statements of
    the same block only."""
    name: str
    dtype: str
    block: "Block | None" = field(default=None, repr=False)


@dataclass(eq=False)
class Load(Expr):
    """A read of ``mem`` at ``index`` (``()`` for a Reg; a FIFO read dequeues). One access
    site: ``label`` names it (``R<n>``)."""
    mem: "Memory"
    index: tuple[Expr, ...]
    label: str
    dtype: str = "i32"
    block: "Block | None" = field(default=None, repr=False)

    def children(self) -> tuple[Expr, ...]:
        return self.index


@dataclass(eq=False)
class Op(Expr):
    op: str
    args: tuple[Expr, ...]
    dtype: str = ""

    def __post_init__(self):
        if self.op not in OPS:
            raise ProgramError(f"unknown operator {self.op!r}; known: {', '.join(sorted(OPS))}")
        if len(self.args) != OPS[self.op]:
            raise ProgramError(f"operator {self.op!r} takes {OPS[self.op]} operands, "
                               f"got {len(self.args)}")
        operands = self.args[1:] if self.op == "select" else self.args
        types = {a.dtype for a in operands}
        if len(types) > 1:
            # an integer constant next to an f32 operand is promoted (1.0 * x and 2 * x)
            args = list(self.args)
            for k, a in enumerate(args):
                if (isinstance(a, Const) and a.dtype == "i32"
                        and (self.op != "select" or k > 0)):
                    args[k] = Const(float(a.value), "f32")
            self.args = tuple(args)
            operands = self.args[1:] if self.op == "select" else self.args
            types = {a.dtype for a in operands}
            if len(types) > 1:
                raise ProgramError(f"operator {self.op!r} mixes i32 and f32 operands; convert "
                                   f"with to_f32()/to_i32()")
        t = types.pop()
        if self.op in _FLOAT_ONLY and t != "f32":
            raise ProgramError(f"operator {self.op!r} needs f32 operands; use to_f32()")
        if self.op in _INT_ONLY and t != "i32":
            raise ProgramError(f"operator {self.op!r} needs i32 operands")
        if self.op in _CMP or self.op == "to_i32":
            self.dtype = "i32"
        elif self.op == "to_f32":
            self.dtype = "f32"
        else:
            self.dtype = t

    def children(self) -> tuple[Expr, ...]:
        return self.args


def op(name: str, *args) -> Op:
    """Operator ``name`` (one of :data:`OPS`) on ``args`` (expressions or numbers)."""
    dtype = next((a.dtype for a in args if isinstance(a, Expr)), "i32")
    return Op(name, tuple(as_expr(a, dtype) for a in args))


def select(c, a, b) -> Op:
    """``a`` if ``c`` is non-zero else ``b`` (predication inside a hyperblock)."""
    return op("select", c, a, b)


def minimum(a, b) -> Op: return op("min", a, b)
def maximum(a, b) -> Op: return op("max", a, b)
def exp(a) -> Op: return op("exp", a)
def log(a) -> Op: return op("log", a)
def sqrt(a) -> Op: return op("sqrt", a)
def to_f32(a) -> Op: return op("to_f32", a)
def to_i32(a) -> Op: return op("to_i32", a)


def walk(e: Expr) -> Iterator[Expr]:
    """``e`` and every sub-expression, each node once, children before parents."""
    seen: set[int] = set()

    def go(x: Expr):
        if id(x) in seen:
            return
        seen.add(id(x))
        for c in x.children():
            yield from go(c)
        yield x
    yield from go(e)


# ---------------------------------------------------------------------------- memories
@dataclass(eq=False)
class Memory:
    """A program memory. ``shape`` is ``()`` for a Reg, ``(depth,)`` for a FIFO; ``scope``
    is the controller it is declared in (``None``: the program)."""
    name: str
    dtype: str
    shape: tuple[int, ...]
    kind: str = "sram"
    scope: "Controller | None" = None
    program: "Program | None" = field(default=None, repr=False)
    __hash__ = object.__hash__

    @property
    def size(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 1

    def _index(self, idx) -> tuple[Expr, ...]:
        if not isinstance(idx, tuple):
            idx = (idx,)
        rank = 0 if self.kind in ("reg", "fifo") else len(self.shape)
        if len(idx) != rank:
            raise ProgramError(f"{self.kind} {self.name!r} takes {rank} indices, got "
                               f"{len(idx)}")
        return tuple(as_expr(i) for i in idx)

    def __getitem__(self, idx) -> Load:
        return self.program._load(self, self._index(idx))

    def __setitem__(self, idx, value) -> None:
        self.program._store(self, self._index(idx), value)


@dataclass(eq=False)
class Reg(Memory):
    init: int | float = 0

    @property
    def value(self) -> Load:
        return self[()]

    @value.setter
    def value(self, v) -> None:
        self[()] = v


@dataclass(eq=False)
class FIFO(Memory):
    def enq(self, v) -> None:
        self[()] = v

    def deq(self) -> Load:
        return self[()]


@dataclass(eq=False)
class SRAM(Memory):
    buffers: int = 1


@dataclass(eq=False)
class DRAM(Memory):
    pass


# ---------------------------------------------------------------------------- statements
@dataclass(eq=False)
class Store:
    """A write of ``value`` to ``mem`` at ``index`` (a FIFO write enqueues). One access
    site, labelled ``W<n>``."""
    mem: Memory
    index: tuple[Expr, ...]
    value: Expr
    label: str


@dataclass(eq=False)
class Let:
    """``temp = value`` inside a block."""
    temp: Temp
    value: Expr


Statement = Store | Let


# ---------------------------------------------------------------------------- controllers
@dataclass(eq=False)
class Controller:
    label: str
    parent: "Controller | None" = field(default=None, repr=False)
    __hash__ = object.__hash__

    def ancestors(self) -> list["Controller"]:
        """Parents from this node's parent up to the root."""
        out, c = [], self.parent
        while c is not None:
            out.append(c)
            c = c.parent
        return out

    def children(self) -> list["Controller"]:
        return []


@dataclass(eq=False)
class Block(Controller):
    """A hyperblock: straight-line statements, a leaf of the control tree."""
    statements: list[Statement] = field(default_factory=list)

    def loads(self) -> list[Load]:
        out: list[Load] = []
        seen: set[int] = set()
        for s in self.statements:
            exprs = (*s.index, s.value) if isinstance(s, Store) else (s.value,)
            for e in exprs:
                for x in walk(e):
                    if isinstance(x, Load) and id(x) not in seen:
                        seen.add(id(x))
                        out.append(x)
        return out

    def stores(self) -> list[Store]:
        return [s for s in self.statements if isinstance(s, Store)]


@dataclass(eq=False)
class Sequential(Controller):
    """Children run in order (the program's root; a body with several children)."""
    body: list[Controller] = field(default_factory=list)

    def children(self) -> list[Controller]:
        return list(self.body)


@dataclass(eq=False)
class Loop(Sequential):
    """``for index in range(start, stop, step)`` over ``body``; ``par`` lanes (outer loops
    unroll spatially, the innermost vectorises). Bounds may read memories (data-dependent
    bounds), evaluated once each time the loop starts.

    ``sequential``: Spatial's ``Sequential.Foreach`` (Koeplinger et al., PLDI'18, §3: the
    ``Sequential`` schedule) instead of the default pipelined one: the children of the body
    run one after the other and iteration i + 1's first child starts only after iteration
    i's last child is done, so iterations never overlap (lanes of a ``par`` loop included).
    The sequential result is the same; the dataflow implementation is the control tokens
    of :func:`mapper.dataflow.cmmc.control_deps`."""
    start: Expr = None
    stop: Expr = None
    step: Expr = None
    par: int = 1
    index: Index = field(default=None, repr=False)
    sequential: bool = False


@dataclass(eq=False)
class Branch(Controller):
    """``if cond: then else: orelse`` enclosing controllers (SARA §III-A, Fig. 4)."""
    cond: Expr = None
    then: Sequential = None
    orelse: Sequential = None

    def children(self) -> list[Controller]:
        return [self.then, self.orelse]


@dataclass(eq=False)
class DoWhile(Sequential):
    """Run ``body``, then repeat while ``cond`` (evaluated after each pass) is non-zero.
    ``sequential``: passes never overlap, as :attr:`Loop.sequential` (the condition is the
    pass's last child)."""
    cond: Expr = None
    sequential: bool = False


def _check_sequential(what: str, sequential) -> None:
    if not isinstance(sequential, bool):
        raise ProgramError(f"{what}: sequential must be True or False, got {sequential!r}")


# ---------------------------------------------------------------------------- program
class Program:
    """A nested-loop program and its builder (see the module docstring)."""

    def __init__(self, name: str):
        self.name = name
        self.memories: dict[str, Memory] = {}
        self.root = Sequential("P")
        self._stack: list[Sequential] = [self.root]
        self._labels = itertools.count()
        self._rw = itertools.count()
        self._used_labels: set[str] = {"P"}
        self._pending_if: Branch | None = None

    # ---- declarations
    def _declare(self, cls, name: str, dtype: str, shape: tuple[int, ...], kind: str, **kw):
        if name in self.memories:
            raise ProgramError(f"program {self.name!r}: memory {name!r} declared twice")
        if dtype not in DTYPES:
            raise ProgramError(f"memory {name!r}: dtype {dtype!r} is not one of {DTYPES}")
        if any(int(s) <= 0 for s in shape):
            raise ProgramError(f"memory {name!r}: shape {shape} has a non-positive extent")
        scope = self._stack[-1] if len(self._stack) > 1 else None
        m = cls(name, dtype, tuple(int(s) for s in shape), kind, scope, self, **kw)
        self.memories[name] = m
        return m

    def reg(self, name: str, dtype: str = "i32", init: int | float = 0) -> Reg:
        return self._declare(Reg, name, dtype, (), "reg", init=init)

    def fifo(self, name: str, depth: int = 16, dtype: str = "i32") -> FIFO:
        return self._declare(FIFO, name, dtype, (depth,), "fifo")

    def sram(self, name: str, shape, dtype: str = "i32", buffers: int = 1) -> SRAM:
        if buffers < 1:
            raise ProgramError(f"sram {name!r}: buffers must be >= 1, got {buffers}")
        return self._declare(SRAM, name, dtype, tuple(np.atleast_1d(shape)), "sram",
                             buffers=buffers)

    def dram(self, name: str, shape, dtype: str = "i32") -> DRAM:
        return self._declare(DRAM, name, dtype, tuple(np.atleast_1d(shape)), "dram")

    # ---- labels
    def _label(self, prefix: str, label: str | None) -> str:
        if label is not None:
            if label in self._used_labels:
                raise ProgramError(f"program {self.name!r}: label {label!r} used twice")
            self._used_labels.add(label)
            return label
        while True:
            lab = f"{prefix}{next(self._labels)}"
            if lab not in self._used_labels:
                self._used_labels.add(lab)
                return lab

    def _access_label(self, prefix: str, label: str | None) -> str:
        if label is not None:
            return self._label(prefix, label)
        while True:
            lab = f"{prefix}{next(self._rw)}"
            if lab not in self._used_labels:
                self._used_labels.add(lab)
                return lab

    # ---- statements
    def _block(self) -> Block:
        body = self._stack[-1].body
        self._pending_if = None
        if body and isinstance(body[-1], Block):
            return body[-1]
        b = Block(self._label("B", None), self._stack[-1])
        body.append(b)
        return b

    def _check_temps(self, e: Expr, block: Block) -> None:
        for x in walk(e):
            if isinstance(x, Temp) and x.block is not block:
                raise ProgramError(f"temporary {x.name!r} is read outside the block that "
                                   f"defines it; store it in a Reg to pass it on")

    def _load(self, mem: Memory, index: tuple[Expr, ...], label: str | None = None) -> Load:
        return Load(mem, index, self._access_label("R", label), mem.dtype)

    def _store(self, mem: Memory, index: tuple[Expr, ...], value, label: str | None = None):
        v = as_expr(value, mem.dtype)
        if v.dtype != mem.dtype:
            raise ProgramError(f"store to {mem.name!r} ({mem.dtype}) of an {v.dtype} value; "
                               f"convert with to_{mem.dtype}()")
        b = self._block()
        for e in (*index, v):
            self._check_temps(e, b)
            self._claim_loads(e, b)
        b.statements.append(Store(mem, index, v, self._access_label("W", label)))

    def _claim_loads(self, e: Expr, b: Block) -> None:
        for x in walk(e):
            if isinstance(x, Load):
                if x.block is None:
                    x.block = b
                elif x.block is not b:
                    raise ProgramError(f"load {x.label} of {x.mem.name!r} is used in two "
                                       f"blocks; read the memory again in the second")

    def store(self, mem: Memory, index, value, label: str | None = None) -> None:
        """``mem[index] = value`` with an explicit access label (fixtures name W31 etc.)."""
        self._store(mem, mem._index(index), value, label)

    def load(self, mem: Memory, index, label: str | None = None) -> Load:
        """``mem[index]`` with an explicit access label."""
        return self._load(mem, mem._index(index), label)

    def let(self, value, name: str | None = None) -> Temp:
        """A block-local temporary holding ``value`` (evaluated once, here)."""
        v = as_expr(value)
        b = self._block()
        self._check_temps(v, b)
        self._claim_loads(v, b)
        t = Temp(name or f"t{len(b.statements)}", v.dtype, b)
        b.statements.append(Let(t, v))
        return t

    # ---- controllers
    @contextlib.contextmanager
    def _open(self, node: Sequential):
        self._stack[-1].body.append(node)
        self._pending_if = None
        self._stack.append(node)
        try:
            yield node
        finally:
            self._stack.pop()

    @contextlib.contextmanager
    def foreach(self, *bounds, par: int = 1, label: str | None = None,
                sequential: bool = False) -> Iterator[Index]:
        """``with p.foreach(stop)`` / ``(start, stop)`` / ``(start, stop, step)`` as i: a loop
        (SARA: a controller with a counter). ``par`` >= 1 lanes. ``sequential=True``:
        Spatial's ``Sequential.Foreach`` (:class:`Loop`; PLDI'18 §3), its iterations and
        children never overlap. Raises :class:`ProgramError` for a bad bound count, ``par``,
        step or a non-bool ``sequential``."""
        if not 1 <= len(bounds) <= 3:
            raise ProgramError("foreach takes (stop), (start, stop) or (start, stop, step)")
        start, stop, step = ((0, bounds[0], 1) if len(bounds) == 1 else
                             (bounds[0], bounds[1], 1) if len(bounds) == 2 else bounds)
        if int(par) < 1:
            raise ProgramError(f"foreach: par must be >= 1, got {par}")
        st = step.value if isinstance(step, Const) else step
        if isinstance(st, (int, np.integer)) and st <= 0:
            raise ProgramError(f"foreach: step must be positive, got {st}")
        lab = self._label("L", label)
        _check_sequential(f"loop {lab}", sequential)
        loop = Loop(lab, self._stack[-1], start=as_expr(start), stop=as_expr(stop),
                    step=as_expr(step), par=int(par), sequential=sequential)
        loop.index = Index(loop)
        for e in (loop.start, loop.stop, loop.step):
            for x in walk(e):
                if isinstance(x, Temp):
                    raise ProgramError(f"loop {lab}: a bound reads temporary {x.name!r}; "
                                       f"store it in a Reg")
        with self._open(loop):
            yield loop.index

    @contextlib.contextmanager
    def reduce(self, reg: Reg, *bounds, combine: str = "add", par: int = 1,
               label: str | None = None, sequential: bool = False):
        """``reg = combine-fold of the values given to the yielded function``: SARA/Spatial
        ``Reduce``. Lowered as ``reg = identity`` then a loop accumulating into ``reg`` (a
        loop-carried dependency on ``reg``). ``combine`` is ``add``, ``mul``, ``min`` or
        ``max``; ``sequential=True`` is Spatial's ``Sequential.Reduce`` (the loop as
        :meth:`foreach` with ``sequential=True``). Raises :class:`ProgramError` as
        :meth:`foreach` and for an unknown ``combine``."""
        identity = {"add": 0, "mul": 1, "min": 2**31 - 1 if reg.dtype == "i32" else np.inf,
                    "max": -(2**31) if reg.dtype == "i32" else -np.inf}
        if combine not in identity:
            raise ProgramError(f"reduce: combine {combine!r} is not add, mul, min or max")
        ident = identity[combine]
        reg.value = Const(float(ident) if reg.dtype == "f32" else int(ident), reg.dtype)
        with self.foreach(*bounds, par=par, label=label, sequential=sequential) as i:
            def accumulate(v):
                reg.value = op(combine, reg.value, v)
            yield i, accumulate

    @contextlib.contextmanager
    def if_(self, cond, label: str | None = None):
        """``with p.if_(cond):`` a branch enclosing controllers; ``p.else_()`` may follow."""
        c = as_expr(cond)
        lab = self._label("I", label)
        for x in walk(c):
            if isinstance(x, Temp):
                raise ProgramError(f"branch {lab}: the condition reads temporary {x.name!r}; "
                                   f"store it in a Reg")
        br = Branch(lab, self._stack[-1], cond=c)
        br.then = Sequential(lab + ".then", br)
        br.orelse = Sequential(lab + ".else", br)
        self._stack[-1].body.append(br)
        self._stack.append(br.then)
        try:
            yield br
        finally:
            self._stack.pop()
        self._pending_if = br

    @contextlib.contextmanager
    def else_(self):
        br = self._pending_if
        if br is None:
            raise ProgramError("else_ must follow an if_ block directly")
        self._pending_if = None
        self._stack.append(br.orelse)
        try:
            yield br
        finally:
            self._stack.pop()

    @contextlib.contextmanager
    def do_while(self, label: str | None = None, sequential: bool = False):
        """``with p.do_while() as w:`` body ``w.until_not(cond)``... run the body, then repeat
        while the condition given to :meth:`loop_while` is non-zero. ``sequential=True``:
        passes never overlap (:class:`DoWhile`). Raises :class:`ProgramError` for a missing
        condition or a non-bool ``sequential``."""
        lab = self._label("W", label) if label else self._label("D", None)
        _check_sequential(f"do_while {lab}", sequential)
        dw = DoWhile(lab, self._stack[-1], sequential=sequential)
        with self._open(dw):
            yield dw
        if dw.cond is None:
            raise ProgramError(f"do_while {lab}: no condition; call p.loop_while(cond) at "
                               f"the end of its body")

    def loop_while(self, cond) -> None:
        """The condition of the innermost open do-while (evaluated after each pass; it may
        read memories written by the body)."""
        dw = next((s for s in reversed(self._stack) if isinstance(s, DoWhile)), None)
        if dw is None:
            raise ProgramError("loop_while outside a do_while block")
        c = as_expr(cond)
        for x in walk(c):
            if isinstance(x, Temp):
                raise ProgramError(f"do_while {dw.label}: the condition reads temporary "
                                   f"{x.name!r}; store it in a Reg")
        dw.cond = c

    # ---- queries
    def controllers(self) -> list[Controller]:
        """Every controller, pre-order from the root."""
        out: list[Controller] = []

        def go(c: Controller):
            out.append(c)
            for ch in c.children():
                go(ch)
        go(self.root)
        return out

    def blocks(self) -> list[Block]:
        return [c for c in self.controllers() if isinstance(c, Block)]

    def bound_loads(self) -> list[tuple[Controller, Load]]:
        """Loads in loop bounds, branch and do-while conditions (read by the controller)."""
        out = []
        for c in self.controllers():
            exprs = []
            if isinstance(c, Loop):
                exprs = [c.start, c.stop, c.step]
            elif isinstance(c, Branch):
                exprs = [c.cond]
            elif isinstance(c, DoWhile):
                exprs = [c.cond]
            for e in exprs:
                for x in walk(e):
                    if isinstance(x, Load):
                        out.append((c, x))
        return out

    def inputs(self) -> list[DRAM]:
        return [m for m in self.memories.values() if isinstance(m, DRAM)]
