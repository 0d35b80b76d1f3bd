"""The sequential interpreter of dataflow programs: the golden model.

:func:`interpret` runs a :class:`~mapper.dataflow.program.Program` in program order, one
statement at a time, and returns the final contents of every memory. Every later stage
(lowering to virtual units, CMMC token insertion, the token-level simulator) must reproduce
these values bit for bit: all arithmetic goes through :func:`~mapper.dataflow.program.apply_op`.

Semantics (SARA §II-A, the Spatial program model; notes §2.1):

* :class:`Sequential` bodies run their children in order.
* :class:`Loop`: ``start``, ``stop`` and ``step`` are evaluated once when the loop starts
  (data-dependent bounds read memories then) and the body runs for
  ``index in range(start, stop, step)``. ``par`` does not change the sequential result.
  A step that evaluates to ``<= 0`` is an error. ``sequential`` (Spatial's ``Sequential``
  schedule, PLDI'18 §3) does not change it either: the interpreter runs every controller
  sequentially.
* :class:`Branch`: ``cond`` is evaluated once per execution; non-zero runs ``then``, zero
  runs ``orelse``.
* :class:`DoWhile`: the body runs, then ``cond`` is evaluated; the body repeats while it is
  non-zero (at least one pass).
* :class:`Block`: statements in order. Within one statement execution every :class:`Load`
  node is evaluated once (memoised by node identity), children before parents, left to
  right: the order of :func:`~mapper.dataflow.program.walk` over the store's indices and then
  its value. Two distinct Load nodes of the same FIFO in one statement therefore dequeue in
  that order. All operands of a ``select`` are evaluated (predication). A :class:`Let` binds
  its :class:`Temp` for the rest of the block execution. A loop's bounds (all three
  together), a branch condition and a do-while condition each form one evaluation with
  its own Load memo.
* Memories: a Reg starts at its ``init``, an SRAM at zero, a DRAM at its input (zero when
  not given), a FIFO empty. Memories declared inside a controller are *not* re-initialised
  when the controller starts again (the hardware does not clear a VMU either). A FIFO holds
  at most ``depth`` values (``shape[0]``); a store to a full FIFO is an error, as is a load
  from an empty one.
* Values: ``i32`` as Python ints (wrapping two's complement), ``f32`` as ``numpy.float32``.

Errors (:class:`cgra.errors.ProgramError`, one line, naming the access label, the memory,
the index values, the statement and the iterations of the enclosing loops and do-whiles,
outermost first, as ``at L0=2, D1=0`` (a do-while's value is its 0-based pass)): an index
outside a memory, a non-integer index, a FIFO read when empty or write when full, a
non-positive loop step, a loop index or temporary read outside its scope, more than
``max_steps`` statement executions (a non-terminating do-while), an input that names no
DRAM of the program or has the wrong shape or non-integer values for an ``i32`` DRAM.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from cgra.errors import ProgramError
from mapper.dataflow.program import (
    DRAM,
    FIFO,
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
    Sequential,
    Store,
    Temp,
    apply_op,
    cast,
)

_NP_DTYPE = {"i32": np.int32, "f32": np.float32}


@dataclass
class InterpStats:
    """Dynamic counts of one interpretation (the simulator cross-checks against them).

    ``block_runs``: block label -> number of executions (every block of the program appears,
    0 if it never ran). ``controller_runs``: controller label -> number of times it started
    (a loop, a branch, a do-while, a clause ``I3.then``/``I3.else``, the root ``P``).
    ``loop_iterations``: loop label -> total iterations over all its runs.
    ``branch_taken``: branch label -> ``(then count, else count)``.
    ``do_while_passes``: do-while label -> total body passes.
    ``accesses``: access label (``R<n>``/``W<n>``) -> dynamic executions.
    ``steps``: statement executions plus do-while condition evaluations (the quantity
    limited by ``max_steps``).
    """

    block_runs: dict[str, int] = field(default_factory=dict)
    controller_runs: dict[str, int] = field(default_factory=dict)
    loop_iterations: dict[str, int] = field(default_factory=dict)
    branch_taken: dict[str, tuple[int, int]] = field(default_factory=dict)
    do_while_passes: dict[str, int] = field(default_factory=dict)
    accesses: dict[str, int] = field(default_factory=dict)
    steps: int = 0


def initial_state(program: Program, inputs: Mapping[str, np.ndarray]) -> dict[str, object]:
    """The memories of ``program`` before it runs: name -> numpy array (``int32`` /
    ``float32``; a Reg as a 0-d array) or, for a FIFO, an empty :class:`collections.deque`.

    ``inputs`` maps DRAM names to arrays of the DRAM's exact shape (copied; DRAMs not given
    start at zero). Raises :class:`ProgramError` for an input naming no DRAM of the program,
    a wrong shape, or non-integer / out-of-range values for an ``i32`` DRAM.
    """
    state: dict[str, object] = {}
    for name in inputs:
        m = program.memories.get(name)
        if not isinstance(m, DRAM):
            drams = ", ".join(d.name for d in program.inputs()) or "none"
            what = "no memory" if m is None else f"a {m.kind}, not a DRAM"
            raise ProgramError(f"program {program.name!r}: input {name!r} names {what}; "
                               f"its DRAMs are: {drams}")
    for m in program.memories.values():
        nd = _NP_DTYPE[m.dtype]
        if isinstance(m, FIFO):
            state[m.name] = deque()
        elif isinstance(m, Reg):
            state[m.name] = np.array(cast(m.init, m.dtype), dtype=nd)
        elif isinstance(m, DRAM) and m.name in inputs:
            state[m.name] = _input_array(program, m, inputs[m.name])
        else:
            state[m.name] = np.zeros(m.shape, dtype=nd)
    return state


def _input_array(program: Program, m: DRAM, value) -> np.ndarray:
    a = np.asarray(value)
    if a.shape != m.shape:
        raise ProgramError(f"program {program.name!r}: input {m.name!r} has shape {a.shape}, "
                           f"DRAM {m.name!r} is declared {m.shape}")
    if m.dtype == "f32":
        if not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
            raise ProgramError(f"input {m.name!r}: dtype {a.dtype} is not numeric")
        return a.astype(np.float32, copy=True)
    if a.dtype == bool or np.issubdtype(a.dtype, np.integer):
        b = a.astype(np.int64)
    elif np.issubdtype(a.dtype, np.floating) and np.all(np.isfinite(a)) and np.all(a == np.round(a)):
        b = a.astype(np.int64)
    else:
        raise ProgramError(f"program {program.name!r}: input {m.name!r} for i32 DRAM has "
                           f"non-integer values (dtype {a.dtype}); round it first")
    if b.size and (b.min() < -(2**31) or b.max() >= 2**31):
        raise ProgramError(f"program {program.name!r}: input {m.name!r} has values outside "
                           f"the i32 range")
    return b.astype(np.int32)


def final_state(program: Program, state: Mapping[str, object]) -> dict[str, np.ndarray]:
    """``state`` as returned by :func:`interpret`: every memory's contents as a numpy array
    (a FIFO's remaining values, oldest first, as a 1-d array)."""
    out: dict[str, np.ndarray] = {}
    for m in program.memories.values():
        v = state[m.name]
        if isinstance(m, FIFO):
            out[m.name] = np.array(list(v), dtype=_NP_DTYPE[m.dtype])
        else:
            out[m.name] = np.array(v, dtype=_NP_DTYPE[m.dtype])
    return out


class _Interpreter:
    def __init__(self, program: Program, state: dict[str, object], max_steps: int):
        self.p = program
        self.state = state
        self.max_steps = int(max_steps)
        self.stats = InterpStats()
        for c in program.controllers():
            self.stats.controller_runs[c.label] = 0
            if isinstance(c, Block):
                self.stats.block_runs[c.label] = 0
                for s in c.statements:
                    if isinstance(s, Store):
                        self.stats.accesses[s.label] = 0
                for ld in c.loads():
                    self.stats.accesses[ld.label] = 0
            elif isinstance(c, Loop):
                self.stats.loop_iterations[c.label] = 0
            elif isinstance(c, Branch):
                self.stats.branch_taken[c.label] = (0, 0)
            elif isinstance(c, DoWhile):
                self.stats.do_while_passes[c.label] = 0
        for _, ld in program.bound_loads():
            self.stats.accesses[ld.label] = 0
        self.indices: dict[int, int] = {}        # id(Loop) -> current index value
        self.where: list[list] = []              # [label, iteration] of enclosing loops/do-whiles
        self.temps: dict[int, object] = {}       # id(Temp) -> value (current block execution)
        self.block: Block | None = None
        self.stmt_label = ""
        #: access label -> [(index, ((loop or do-while label, iteration), ...)), ...] in
        #: program order, when tracing (:func:`interpret_trace`)
        self.trace: dict[str, list] | None = None

    # ---- context for messages
    def _at(self) -> str:
        it = ", ".join(f"{lab}={i}" for lab, i in self.where)
        ctx = f" in {self.stmt_label}" if self.stmt_label else ""
        return f"{ctx} at {it}" if it else ctx

    # ---- expressions
    def eval(self, e: Expr, memo: dict[int, object]):
        if isinstance(e, Op):
            args = [self.eval(a, memo) for a in e.args]
            dt = e.args[1].dtype if e.op == "select" else e.args[0].dtype
            return apply_op(e.op, args, dt)
        if isinstance(e, Load):
            k = id(e)
            if k in memo:
                return memo[k]
            v = self.load(e, memo)
            memo[k] = v
            return v
        if isinstance(e, Index):
            try:
                return self.indices[id(e.loop)]
            except KeyError:
                raise ProgramError(f"program {self.p.name!r}: the index of loop {e.loop.label} "
                                   f"is read outside that loop{self._at()}") from None
        if isinstance(e, Const):
            return cast(e.value, e.dtype)
        if isinstance(e, Temp):
            try:
                return self.temps[id(e)]
            except KeyError:
                raise ProgramError(f"program {self.p.name!r}: temporary {e.name!r} is read "
                                   f"before it is defined in its block or outside it"
                                   f"{self._at()}; store it in a Reg") from None
        raise ProgramError(f"program {self.p.name!r}: {type(e).__name__} is not an expression")

    def _index(self, label: str, mem: Memory, index: tuple[Expr, ...], memo) -> tuple[int, ...]:
        vals = []
        for x in index:
            if x.dtype != "i32":
                raise ProgramError(f"{label}: index of {mem.kind} {mem.name!r} is {x.dtype}, "
                                   f"not i32{self._at()}; convert with to_i32()")
            vals.append(self.eval(x, memo))
        for v, n in zip(vals, mem.shape, strict=True):
            if not 0 <= v < n:
                raise ProgramError(f"{label}: {mem.kind} {mem.name!r} index {vals} is outside "
                                   f"its shape {mem.shape}{self._at()}")
        return tuple(vals)

    def load(self, e: Load, memo):
        m = e.mem
        self.stats.accesses[e.label] = self.stats.accesses.get(e.label, 0) + 1
        arr = self.state[m.name]
        if isinstance(m, FIFO):
            if not arr:
                raise ProgramError(f"{e.label}: fifo {m.name!r} is read when empty"
                                   f"{self._at()}")
            return arr.popleft()
        if isinstance(m, Reg):
            idx: tuple[int, ...] = ()
        else:
            idx = self._index(e.label, m, e.index, memo)
        if self.trace is not None:
            self.trace.setdefault(e.label, []).append((idx, tuple(map(tuple, self.where)),
                                                        self.stats.steps))
        v = arr[idx]
        return int(v) if m.dtype == "i32" else np.float32(v)

    def store(self, s: Store, memo) -> None:
        m = s.mem
        idx = () if isinstance(m, (Reg, FIFO)) else self._index(s.label, m, s.index, memo)
        v = cast(self.eval(s.value, memo), m.dtype)
        self.stats.accesses[s.label] = self.stats.accesses.get(s.label, 0) + 1
        if self.trace is not None:
            self.trace.setdefault(s.label, []).append((idx, tuple(map(tuple, self.where)),
                                                        self.stats.steps))
        arr = self.state[m.name]
        if isinstance(m, FIFO):
            if len(arr) >= m.shape[0]:
                raise ProgramError(f"{s.label}: fifo {m.name!r} is written when full (depth "
                                   f"{m.shape[0]}){self._at()}; deepen it or read it sooner")
            arr.append(v)
        else:
            arr[idx] = v

    # ---- control
    def step(self) -> None:
        self.stats.steps += 1
        if self.stats.steps > self.max_steps:
            dws = [lab for lab, _ in self.where if lab in self.stats.do_while_passes]
            culprit = (f"do_while {dws[-1]} does not terminate" if dws
                       else "the program does not finish")
            raise ProgramError(f"program {self.p.name!r}: {culprit} within max_steps="
                               f"{self.max_steps} statement executions (stopped{self._at()}); "
                               f"raise max_steps or fix its condition")

    def run(self, c: Controller) -> None:
        st = self.stats
        st.controller_runs[c.label] += 1
        if isinstance(c, Block):
            self.run_block(c)
        elif isinstance(c, Loop):
            self.run_loop(c)
        elif isinstance(c, DoWhile):
            self.run_do_while(c)
        elif isinstance(c, Branch):
            self.stmt_label = f"branch {c.label} condition"
            cond = self.eval(c.cond, {})
            self.stmt_label = ""
            t, f = st.branch_taken[c.label]
            if cond:
                st.branch_taken[c.label] = (t + 1, f)
                self.run(c.then)
            else:
                st.branch_taken[c.label] = (t, f + 1)
                self.run(c.orelse)
        elif isinstance(c, Sequential):
            for ch in c.body:
                self.run(ch)
        else:
            raise ProgramError(f"program {self.p.name!r}: unknown controller {c!r}")

    def run_block(self, b: Block) -> None:
        self.stats.block_runs[b.label] += 1
        self.temps = {}
        self.block = b
        for s in b.statements:
            lab = s.label if isinstance(s, Store) else f"let {s.temp.name}"
            self.stmt_label = f"block {b.label} ({lab})"
            self.step()
            memo: dict[int, object] = {}
            if isinstance(s, Let):
                self.temps[id(s.temp)] = self.eval(s.value, memo)
            else:
                self.store(s, memo)
        self.temps = {}
        self.block = None
        self.stmt_label = ""

    def run_loop(self, lp: Loop) -> None:
        self.stmt_label = f"loop {lp.label} bounds"
        memo: dict[int, object] = {}
        bounds = []
        for e in (lp.start, lp.stop, lp.step):
            if e.dtype != "i32":
                raise ProgramError(f"loop {lp.label}: bound is {e.dtype}, not i32{self._at()}")
            bounds.append(self.eval(e, memo))
        start, stop, step = bounds
        self.stmt_label = ""
        if step <= 0:
            raise ProgramError(f"loop {lp.label}: step evaluates to {step}, must be positive"
                               f"{self._at()}")
        key = id(lp)
        frame = [lp.label, start]
        self.where.append(frame)
        try:
            for i in range(start, stop, step):
                self.indices[key] = i
                frame[1] = i
                self.stats.loop_iterations[lp.label] += 1
                for ch in lp.body:
                    self.run(ch)
        finally:
            self.where.pop()
            self.indices.pop(key, None)

    def run_do_while(self, dw: DoWhile) -> None:
        frame = [dw.label, 0]
        self.where.append(frame)
        try:
            while True:
                self.stats.do_while_passes[dw.label] += 1
                for ch in dw.body:
                    self.run(ch)
                self.stmt_label = f"do_while {dw.label} condition"
                self.step()
                cond = self.eval(dw.cond, {})
                self.stmt_label = ""
                if not cond:
                    break
                frame[1] += 1
        finally:
            self.where.pop()


def interpret_stats(program: Program, inputs: Mapping[str, np.ndarray] | None = None, *,
                    max_steps: int = 10_000_000) -> tuple[dict[str, np.ndarray], InterpStats]:
    """Run ``program`` sequentially; return ``(memories, stats)``: the result of
    :func:`interpret` and the dynamic counts of :class:`InterpStats`. Raises
    :class:`ProgramError` as :func:`interpret` does."""
    state = initial_state(program, inputs or {})
    it = _Interpreter(program, state, max_steps)
    it.run(program.root)
    return final_state(program, state), it.stats


def interpret_trace(program: Program, inputs: Mapping[str, np.ndarray] | None = None, *,
                    max_steps: int = 10_000_000) -> tuple[dict[str, np.ndarray],
                                                          dict[str, list]]:
    """:func:`interpret` that also returns every access in program order: access label ->
    ``[(index, iterations, step), ...]``, ``index`` the tuple of index values (``()`` for a
    Reg or a FIFO), ``iterations`` the ``(label, 0-based iteration)`` of each enclosing loop
    and do-while, outermost first, and ``step`` the statement execution it belongs to
    (1-based, in program order; the address streams of :mod:`mapper.dataflow.array`).
    Raises :class:`ProgramError` as :func:`interpret` does."""
    state = initial_state(program, inputs or {})
    it = _Interpreter(program, state, max_steps)
    it.trace = {}
    it.run(program.root)
    return final_state(program, state), it.trace


def interpret(program: Program, inputs: Mapping[str, np.ndarray] | None = None, *,
              max_steps: int = 10_000_000) -> dict[str, np.ndarray]:
    """Run ``program`` sequentially (the golden model; semantics in the module docstring).

    ``inputs``: DRAM name -> array of the DRAM's shape (converted to ``int32``/``float32``;
    a DRAM not given starts at zero). Returns memory name -> final contents for every
    memory: DRAM and SRAM arrays of their declared shape, a Reg as a 0-d array, a FIFO's
    remaining values (oldest first) as a 1-d array; ``int32`` for ``i32``, ``float32`` for
    ``f32``. ``max_steps`` bounds statement executions plus do-while condition evaluations.

    Raises :class:`ProgramError` (one line naming the access label, memory, index values
    and enclosing loop iterations) on an out-of-bounds index, a FIFO read when empty or
    write when full, a non-positive loop step, exceeding ``max_steps``, or a bad input.
    """
    return interpret_stats(program, inputs, max_steps=max_steps)[0]
