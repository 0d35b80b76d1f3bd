"""Deterministic random nested-loop programs, for property tests of the dataflow compiler.

:func:`random_program` builds a small ``i32`` program from a seed: a few DRAMs, SRAMs and
Regs; nested ``foreach`` loops (trip counts 1-5, constant, triangular on an outer index, or
data-dependent: a bound read from memory); ``if``/``else`` branches on loop indices or loaded
values; occasional do-while loops whose condition tests a private counter Reg (so every
generated program terminates); with ``sequential`` > 0, loops and do-whiles made sequential
(Spatial's ``Sequential`` schedule) with that probability; reads and writes with in-bounds affine, modulo and
data-dependent indices, so the same memory is read and written by several blocks (RAW, WAR
and WAW dependencies across blocks for CMMC, SARA §III-A3); accumulations into Regs; and a
final copy of every SRAM and Reg into the output DRAM ``out``.

Every generated program interprets without error (:func:`mapper.dataflow.interp.interpret`
with the returned inputs); the test suite checks seeds 0-299. The same seed and parameters
always give the same program (labels included) and the same inputs; the ``sequential``
choices come from a generator of their own, so a program with ``sequential`` > 0 is the
one of ``sequential=0`` with some loops and do-whiles marked sequential.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from cgra.errors import ProgramError
from mapper.dataflow.program import (
    DRAM,
    SRAM,
    Expr,
    Memory,
    Program,
    Reg,
    maximum,
    minimum,
    select,
)

#: binary operators random values use (all total on i32: division by zero gives 0)
_VALUE_OPS = ("add", "sub", "mul", "min", "max", "xor", "and", "or")


@dataclass
class _Scope:
    """Loop indices visible here: (index expression, max value it can take)."""
    loops: list[tuple[Expr, int]] = field(default_factory=list)


class _Gen:
    def __init__(self, seed: int, max_depth: int, max_loops: int, max_statements: int,
                 sequential: float = 0.0):
        self.rng = random.Random(seed)
        self.seq_rng = random.Random(2 * seed + 1)
        self.sequential = sequential
        self.max_depth = max_depth
        self.loops_left = max_loops
        self.statements_left = max_statements
        self.p = Program(f"random{seed}")
        r = self.rng
        self.drams: list[DRAM] = []
        self.inputs: dict[str, np.ndarray] = {}
        nrng = np.random.default_rng(seed)
        for k in range(r.randint(1, 3)):
            shape = (r.randint(3, 8),) if r.random() < 0.7 else (r.randint(2, 4), r.randint(2, 4))
            d = self.p.dram(f"d{k}", shape)
            self.drams.append(d)
            self.inputs[d.name] = nrng.integers(-8, 9, size=shape).astype(np.int32)
        self.srams: list[SRAM] = [
            self.p.sram(f"s{k}", (r.randint(3, 8),) if r.random() < 0.7
                        else (r.randint(2, 4), r.randint(2, 4)))
            for k in range(r.randint(1, 2))]
        self.regs: list[Reg] = [self.p.reg(f"r{k}", init=r.randint(-3, 3))
                                for k in range(r.randint(1, 3))]
        self.n_counters = 0

    # ---- expressions
    def index_for(self, n: int, scope: _Scope, allow_loads: bool = True) -> Expr | int:
        """An index expression whose value is always in [0, n)."""
        r = self.rng
        choice = r.random()
        if scope.loops and choice < 0.55:
            idx, hi = r.choice(scope.loops)
            if hi < n and r.random() < 0.6:
                return idx + r.randint(0, n - 1 - hi)                  # affine, in bounds
            return (idx * r.randint(1, 3) + r.randint(0, 4)) % n      # modulo
        if allow_loads and choice < 0.75:
            return self.read(scope, allow_loads=False) % n             # data-dependent
        return r.randrange(n)

    def read(self, scope: _Scope, allow_loads: bool = True) -> Expr:
        """A load of a random DRAM, SRAM or Reg at an in-bounds index."""
        r = self.rng
        pool: list[Memory] = [*self.drams, *self.srams, *self.regs]
        m = r.choice(pool)
        if isinstance(m, Reg):
            return m.value
        return m[tuple(self.index_for(n, scope, allow_loads) for n in m.shape)]

    def value(self, scope: _Scope, depth: int = 2) -> Expr:
        r = self.rng
        c = r.random()
        if depth == 0 or c < 0.3:
            leaf = r.random()
            if scope.loops and leaf < 0.3:
                return r.choice(scope.loops)[0] + 0
            return self.read(scope)
        a = self.value(scope, depth - 1)
        if c < 0.4:
            return select(a > r.randint(-4, 4), self.value(scope, depth - 1), r.randint(-5, 5))
        b = self.value(scope, depth - 1) if r.random() < 0.6 else r.randint(-5, 5)
        name = r.choice(_VALUE_OPS)
        if name == "min":
            return minimum(a, b)
        if name == "max":
            return maximum(a, b)
        return {"add": a.__add__, "sub": a.__sub__, "mul": a.__mul__, "xor": a.__xor__,
                "and": a.__and__, "or": a.__or__}[name](b)

    def condition(self, scope: _Scope) -> Expr:
        r = self.rng
        if scope.loops and r.random() < 0.5:
            idx = r.choice(scope.loops)[0]
            return (idx % r.randint(2, 3)).eq(0)
        return self.read(scope) > r.randint(-4, 4)

    # ---- statements and controllers
    def block(self, scope: _Scope) -> None:
        r = self.rng
        for k in range(r.randint(1, 3)):
            if k > 0 and self.statements_left <= 0:
                return                          # (one statement at least: no empty bodies)
            self.statements_left -= 1
            kind = r.random()
            if kind < 0.35:
                reg = r.choice(self.regs)
                reg.value = reg.value + self.value(scope, 1)           # accumulation
            elif kind < 0.5:
                t = self.p.let(self.value(scope, 1))
                m = r.choice(self.srams)
                m[tuple(self.index_for(n, scope) for n in m.shape)] = t * 2 + t
            else:
                m = r.choice([*self.srams, *self.srams, *self.drams, *self.regs])
                v = self.value(scope)
                if isinstance(m, Reg):
                    m.value = v
                else:
                    m[tuple(self.index_for(n, scope) for n in m.shape)] = v

    def body(self, scope: _Scope, depth: int) -> None:
        r = self.rng
        for _ in range(r.randint(1, 3)):
            c = r.random()
            if depth < self.max_depth and self.loops_left > 0 and c < 0.45:
                self.loop(scope, depth)
            elif depth < self.max_depth and c < 0.6:
                self.branch(scope, depth)
            elif depth < self.max_depth and self.loops_left > 0 and c < 0.67:
                self.do_while(scope, depth)
            else:
                self.block(scope)

    def loop(self, scope: _Scope, depth: int) -> None:
        r = self.rng
        self.loops_left -= 1
        par = r.choice((1, 1, 2))
        c = r.random()
        if scope.loops and c < 0.2:
            outer, hi = r.choice(scope.loops)                          # triangular
            bounds, top = (outer + 1,), hi
        elif c < 0.35:
            bounds, top = (self.read(scope) % 4 + 1,), 3               # data-dependent
        elif c < 0.45:
            start = r.randint(0, 2)
            bounds, top = (start, start + r.randint(1, 4)), start + 3
        else:
            t = r.randint(1, 5)
            bounds, top = (t,), t - 1
        with self.p.foreach(*bounds, par=par, sequential=self.is_sequential()) as i:
            inner = _Scope([*scope.loops, (i, top)])
            self.body(inner, depth + 1)

    def is_sequential(self) -> bool:
        return self.sequential > 0 and self.seq_rng.random() < self.sequential

    def branch(self, scope: _Scope, depth: int) -> None:
        with self.p.if_(self.condition(scope)):
            self.body(scope, depth + 1)
        if self.rng.random() < 0.6:
            with self.p.else_():
                self.body(scope, depth + 1)

    def do_while(self, scope: _Scope, depth: int) -> None:
        r = self.rng
        self.loops_left -= 1
        counter = self.p.reg(f"c{self.n_counters}", init=0)
        self.n_counters += 1
        counter.value = 0
        passes = r.randint(1, 3)
        with self.p.do_while(sequential=self.is_sequential()):
            self.body(scope, depth + 1)
            counter.value = counter.value + 1
            self.p.loop_while(counter.value < passes)

    def finish(self) -> None:
        """Copy every SRAM and Reg into ``out`` (RAW dependencies on everything)."""
        words = sum(m.size for m in self.srams) + len(self.regs)
        out = self.p.dram("out", (words,))
        base = 0
        for m in self.srams:
            with self.p.foreach(m.size) as i:
                if len(m.shape) == 1:
                    out[i + base] = m[i]
                else:
                    out[i + base] = m[i // m.shape[1], i % m.shape[1]]
            base += m.size
        for k, reg in enumerate(self.regs):
            out[base + k] = reg.value


def random_program(seed: int, *, max_depth: int = 3, max_loops: int = 4,
                   max_statements: int = 24,
                   sequential: float = 0.0) -> tuple[Program, dict[str, np.ndarray]]:
    """A random ``i32`` program and its inputs (DRAM name -> ``int32`` array, values in
    [-8, 8]), determined by ``seed``.

    ``max_depth`` bounds the nesting of controllers (loops, branches, do-whiles) below the
    root; ``max_loops`` the number of loops plus do-whiles (the final copy loops into the
    output DRAM ``out`` come on top); ``max_statements`` the number of random statements.
    Trip counts are 1-5, do-whiles run 1-3 passes, so a program runs at most a few
    thousand statements. ``sequential``: probability in [0, 1] that a random loop or
    do-while is sequential (the final copy loops never are). Raises
    :class:`cgra.errors.ProgramError` only if the parameters are negative or ``sequential``
    is outside [0, 1].
    """
    if min(max_depth, max_loops, max_statements) < 0:
        raise ProgramError(f"random_program: max_depth={max_depth}, max_loops={max_loops}, "
                           f"max_statements={max_statements} must be >= 0")
    if not 0.0 <= sequential <= 1.0:
        raise ProgramError(f"random_program: sequential={sequential} is not a probability "
                           f"in [0, 1]")
    g = _Gen(seed, max_depth, max_loops, max_statements, sequential)
    g.body(_Scope(), 0)
    g.finish()
    return g.p, g.inputs
