"""Dataflow programs on the generated array (issue 35, items 2 and 3): a program of the
dataflow DSL (:mod:`mapper.dataflow.program`) compiled onto the dataflow PEs
(:mod:`peak.examples.dataflow_pe`) of a ready-valid array, placed and routed by the
back end, run in Verilator under random IO stalls and compared with the sequential
interpreter.

**What runs on the array.** Each hyperblock (SARA's compute VCU, one per
:class:`~mapper.dataflow.program.Block`; Zhang et al., ISCA 2021, §III-A1) becomes a group
of PEs, one per operator of its statements; every PE of the group holds the unit's counter
chain (one level per enclosing loop, innermost first: ``(start, step, stop)`` of the loop;
SARA §III-A: "a VCU holds one counter per enclosing loop") and fires once per iteration.
Streams between PEs are the values of the program: a value produced once per iteration of
loops ``P`` and read inside the deeper loops ``C`` stays at the head of the reader's input
FIFO and is dequeued at level ``len(C) - len(P)`` (the thesis's dequeue window, §4.0.1),
the ``deq_<in>`` rate of the PE. A **Reg** is not a memory on the array: a read gets the
stream of the last write before it in program order (the token order CMMC would enforce,
SARA §III-A3, is the stream's order), or the Reg's ``init``.

**Reductions.** ``r = r (+|min|max) x`` inside loops deeper than the value ``r`` had
before them (``Program.reduce``, an accumulator SARA promotes into its VCU) is a PE with
the reduction register: ``red`` over the window of those loops, emitting once per window
(``red_level = emit_level``); the value before the loops is combined after it (one more PE
unless it is the constant 0 of an ``add``). With ``par`` lanes on the innermost loop every
lane reduces its share (its counter starts at ``start + lane * step`` with stride ``step *
par``) and a tree of PEs combines the lanes, which is exact for the integer ``add``
(wrapping), ``min`` and ``max`` (associative and commutative).

**Arg-reductions.** ``t = key < best``, ``index = select(t, value, index)``, ``best =
select(t, key, best)`` inside loops deeper than the values ``best`` and ``index`` had before
them (k-means' nearest centroid, SARA's ``kmeans`` app) is a ``MIN`` PE over ``key`` and an
``ARGMIN`` PE recording ``value`` (the loop's index: its counter) where ``key`` first reached
the window's minimum, emitting once per window; after it ``best = min(best0, m)`` and
``index = m < best0 ? arg : index0`` (a compare and a ``Sel`` PE; ``best`` needs no PE when
``best0`` is the largest i32); ``>`` gives ``MAX`` / ``ARGMAX`` (:func:`_arg_groups`). The
condition's ``t`` must be a Let read by those two stores only; not in the lanes of a par
loop.

**Scatter-adds.** An SRAM whose one write site is ``m[idx] = m[idx] + x`` (the same index
on both sides; k-means' centroid sums at the assigned centroid) is a ``MemAcc`` memory PE
per read site and lane: it takes the address and addend streams (``mem[a] += b`` per
update), then emits ``mem[offset + r * stride]`` for its reads, which must be a rising
arithmetic sequence of addresses, each once per iteration of the loops the index uses
(held across the inner loops by the reader's dequeue window); every read comes after the
last update (one epoch; the words start at 0) (:meth:`_Compiler.acc_read`).

**SRAM.** A memory PE (op ``Mem`` of a PE with a scratchpad) per read site and lane:
it takes the SRAM's write stream, one word per firing at its counter's value, then serves
the addresses the read site computes (PEs over the loop indices), one word per address
(SARA's PMU, with the read duplicated per site as SARA's ``dupra``, §III-C), in *epochs*:
an SRAM written again (a buffer refilled per iteration of an outer loop, as SARA Fig. 4's
``mem``) is written whole, then read by each site and lane the same number of times,
then written again; the PE's counter runs ``words + reads`` per epoch. It holds an SRAM
written at one site, every word once in address order per epoch (or a scatter-add, above),
never read while an epoch is being written, of at most the scratchpad's words
(:func:`_check_srams`). The
epochs run one after the other: a double-buffered SRAM (``buffers=2``) is correct on one
memory PE but does not overlap a fill with the reads before it.

**Branches** (SARA Fig. 4). A branch whose condition reads one enclosing loop's index (and
constants) is decided when the array is configured: each clause runs on the iterations
of that loop that select it, which must form a strided range, and the clause's units
count that range in place of the loop's (``i % 2 == 0`` over ``range(8)``: the if clause
counts ``range(0, 7, 2)``, the else clause ``range(1, 8, 2)``); its DRAM streams carry the
words of those iterations only. SARA's branch controller (a control VCU that evaluates the
condition at run time and forwards tokens to one clause) is not built: a condition on
data is refused.

**DRAM.** The host is the DRAM interface: a read site becomes an input IO tile whose stream
is the site's words in program order (per lane for a ``par`` loop), served from the input
arrays at the addresses the program reads (SARA's request VCU computes them on chip; here
the host does, from the interpreter's access trace, :func:`mapper.dataflow.interp.
interpret_trace`); a write site becomes an output IO tile whose tokens the host writes at
the site's addresses in program order. A DRAM both read and written is refused.

**Operators** (i32, all signed): add, sub, mul, and, or, xor, shl, shr, min, max, neg, not,
abs, div and mod (floor, on a PE built with the divider, ``make_dataflow_pe(..., div=True)``),
the comparisons (a PE's ``res_p``, 1 bit), select (``Sel`` on ``p``); constant operands
fold into the PE (``CONST``), loop indices read its counter (``INDEX``); an expression of
constants only is folded on the host.

**Refused, one line each** (:class:`~cgra.errors.MappingError`, naming the construct, its
access or controller label and what maps instead): FIFOs, SRAMs a memory PE cannot hold
(above), branches on data or on iterations that are not a strided range, do-whiles, loop
bounds that are not constants,
``par`` on a loop that is not innermost (a loop that fills an SRAM runs in one lane: its
memory PE takes one write stream), more than the PE's counter levels of nesting, a
float program, an operator the PE lacks (div and mod without the divider), a value read at a rate it is not
produced at (a Reg written inside a loop and read after it without a reduction), and a
program whose PEs or IO tiles outnumber the array's (naming the resource and the
shortfall).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from cgra.errors import MappingError
from mapper.dataflow.interp import interpret_trace
from mapper.dataflow.lower import VUDFG, lower
from mapper.dataflow.program import (
    DRAM,
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
    Op,
    Program,
    Reg,
    SRAM,
    Sequential,
    Store,
    Temp,
    apply_op,
    walk,
    wrap_i32,
)
from mapper.netlist import Netlist
from peak.assembler import assembler

#: program operator -> DataflowPE op (binary, operands in program order)
PE_OPS = {"add": "Add", "sub": "Sub", "mul": "Mul", "and": "And", "or": "Or", "xor": "Xor",
          "shl": "Shl", "shr": "Shr", "min": "Min", "max": "Max"}
#: program operator -> DataflowPE op of a PE built with the divider (``div=True``; floor
#: quotient and modulo, 0 for a zero divisor, as the interpreter)
DIV_OPS = {"div": "Div", "mod": "Mod"}
#: program comparison -> DataflowPE ``cond`` (the result on ``res_p``)
CMP_OPS = {"lt": "LT", "le": "LE", "gt": "GT", "ge": "GE", "eq": "EQ", "ne": "NE"}
#: reduction operator -> DataflowPE ``red``
RED_OPS = {"add": "ADD", "min": "MIN", "max": "MAX"}


@dataclass(frozen=True)
class Val:
    """A value of the compiled program: ``kind`` ``net`` (PE ``inst`` output ``port``,
    ``width`` 32 or 1 bits), ``const`` (``value``) or ``index`` (the counter of ``loop``);
    ``rate``: the loops (outer to inner, by identity) once per iteration of which a ``net``
    carries a token (for a constant or index written to a Reg: the loops of that write)."""
    kind: str
    inst: str = ""
    port: str = ""
    value: int = 0
    loop: Loop | None = None
    rate: tuple = ()
    width: int = 32


@dataclass
class PE:
    """One dataflow PE of the compiled program: its unit (hyperblock label), chain
    ``[(loop, lane or None), ...]`` outer to inner, instruction fields and operands
    (port -> :class:`Val`)."""
    name: str
    unit: str
    chain: list
    op: str = "PassA"
    cond: str = "P"
    red: str = "NONE"
    levels: dict[str, int] = field(default_factory=dict)
    operands: dict[str, Val] = field(default_factory=dict)
    #: the counter levels when they are not the chain's (a memory PE counts an epoch)
    counters: list | None = None
    #: instruction constants not set by an operand (a memory PE's ``b_const``)
    consts: dict[str, int] = field(default_factory=dict)


@dataclass
class ArrayProgram:
    """A program compiled for the array: ``netlist`` (PEs with ``config['inst']``, the
    encoded instruction; ``io_in`` / ``io_out`` IO tiles), ``inputs``: input IO -> its words
    (int64, the 32-bit two's-complement patterns), ``outputs``: output IO -> (DRAM name,
    addresses in order), ``units``: hyperblock -> its PEs, ``pes``: the PE records,
    ``golden``: the interpreter's final memories, ``initial``: the DRAMs before the run."""
    name: str
    netlist: Netlist
    inputs: dict[str, np.ndarray]
    outputs: dict[str, tuple[str, list[tuple[int, ...]]]]
    units: dict[str, list[str]]
    pes: dict[str, PE]
    golden: dict[str, np.ndarray]
    initial: dict[str, np.ndarray]

    def counts(self) -> dict[str, int]:
        """Output IO -> the tokens it must deliver."""
        return {k: len(v[1]) for k, v in self.outputs.items()}

    def scatter(self, tokens: dict[str, Sequence[int]]) -> dict[str, np.ndarray]:
        """The written DRAMs after the run: the initial contents with each output IO's
        ``tokens`` (32-bit patterns) written at its addresses in order."""
        out: dict[str, np.ndarray] = {}
        for inst, (dram, addrs) in sorted(self.outputs.items()):
            arr = out.setdefault(dram, self.initial[dram].copy())
            for a, t in zip(addrs, tokens[inst], strict=True):
                arr[a] = wrap_i32(t)
        return out


def _lane_chain(chain: list) -> list[tuple[int, int, int]]:
    """Counter levels, innermost first, of a chain ``[(loop, lane), ...]``."""
    levels = []
    for lp, lane in reversed(chain):
        start, stop, step = (int(e.value) for e in (lp.start, lp.stop, lp.step))
        if lane is not None:
            start, step = start + lane * step, step * lp.par
        levels.append((start, step, stop))
    return levels


class _Compiler:
    def __init__(self, program: Program, inputs: dict[str, np.ndarray], pe_spec: type,
                 trace: dict[str, list], epochs: dict[int, list[tuple[int, int]]]):
        self.p = program
        self.spec = pe_spec
        self.levels = pe_spec.levels
        #: a counter's bound must stay below this (its ``ctr_width``-bit range)
        self.ctr_limit = 1 << pe_spec.Chain._control_["width"]
        self.inputs = inputs
        self.trace = trace
        self.pes: dict[str, PE] = {}
        self.units: dict[str, list[str]] = {}
        self.io_in: dict[str, np.ndarray] = {}
        self.io_out: dict[str, tuple[str, list]] = {}
        self.regs: dict[int, Any] = {}           # id(Reg) -> Val or a pending reduction
        self.temps: dict[tuple[int, Any], Val] = {}
        self.unit = ""
        self.read_drams: set[str] = set()
        self.written_drams: set[str] = set()
        #: (instance, output port) -> its sinks [(instance, input port), ...]
        self.sinks: dict[tuple[str, str], list[tuple[str, str]]] = {}
        #: id(SRAM) -> the net of the words its write site stores
        self.sram_data: dict[int, Val] = {}
        #: id(SRAM) -> its scatter-add store (:func:`_accumulators`)
        self.accs = _accumulators(program)
        #: id(SRAM) of a scatter-add -> (address net, addend net, updates)
        self.sram_acc: dict[int, tuple[Val, Val, int]] = {}
        #: (read site label, lane) -> its memory PE
        self.pmus: dict[tuple[str, Any], str] = {}
        #: id(Loop) -> the loop whose counter runs a branch clause's iterations of it
        self.alias: dict[int, Loop] = {}
        #: id(SRAM) -> the program steps that start and end each write epoch
        self.epochs = epochs
        #: id(Temp) -> how many expression nodes of the program read it
        self.temp_reads: dict[int, int] = {}
        for c in program.controllers():
            for st in c.statements if isinstance(c, Block) else ():
                exprs = [st.value] + (list(st.index) if isinstance(st, Store) else [])
                for e in exprs:
                    for x in _nodes(e):
                        if isinstance(x, Temp):
                            self.temp_reads[id(x)] = self.temp_reads.get(id(x), 0) + 1
        #: id(Loop) -> the Regs (by id) its body writes
        self.reg_writes: dict[int, set[int]] = {
            id(lp): {id(st.mem) for b in _descendants(lp) if isinstance(b, Block)
                     for st in b.statements if isinstance(st, Store)
                     and isinstance(st.mem, Reg)}
            for lp in program.controllers() if isinstance(lp, Loop)}

    # ---------------------------------------------------------------- helpers
    def refuse(self, what: str) -> MappingError:
        return MappingError(f"dataflow program {self.p.name!r} on the array: {what}")

    def new_pe(self, chain: list, **kw) -> PE:
        name = f"pe_{self.unit}_{len(self.pes)}"
        pe = PE(name, self.unit, list(chain), **kw)
        self.pes[name] = pe
        self.units.setdefault(self.unit, []).append(name)
        return pe

    def operand(self, pe: PE, port: str, v: Val) -> None:
        """Connect ``v`` to ``port`` (a / b / p) of ``pe``: a net (with its dequeue level), a
        constant or a counter index."""
        chain_loops = [lp for lp, _ in pe.chain]
        if v.kind == "net":
            n = len(v.rate)
            if [id(x) for x in chain_loops[:n]] != [id(x) for x in v.rate]:
                if [x.label for x in chain_loops[:n]] == [x.label for x in v.rate]:
                    raise self.refuse(
                        f"unit {pe.unit}: a value produced on every iteration of "
                        f"{[x.label for x in v.rate]} is read in a branch clause that runs "
                        f"on some of them (a control VCU would filter the stream; not "
                        f"mapped yet)")
                raise self.refuse(
                    f"unit {pe.unit}: a value produced once per iteration of "
                    f"{[x.label for x in v.rate] or 'the program'} is read inside "
                    f"{[x.label for x in chain_loops] or 'no loop'} (a Reg written inside a "
                    f"loop and read after it needs a reduction, r = r + x)")
            if port in ("a", "b") and v.width == 1:
                v = self.widen(v, pe.chain)
            pe.operands[port] = v
            pe.levels[f"deq_{port}_level"] = len(chain_loops) - n
        elif v.kind == "const":
            if port == "p":
                raise AssertionError("a constant predicate is folded before")
            pe.operands[port] = v
        else:
            ids = [id(x) for x in chain_loops]
            if id(v.loop) not in ids:
                raise self.refuse(f"unit {pe.unit}: index of loop {v.loop.label} read "
                                  f"outside it")
            pe.operands[port] = v
            pe.levels[f"{port}_level"] = len(ids) - 1 - ids.index(id(v.loop))

    def loop_key(self, lp: Loop) -> int:
        """The id of the program's loop behind ``lp`` (a branch clause's counter stands for
        the loop it filters, :attr:`alias`)."""
        return next((o for o, a in self.alias.items() if a is lp), id(lp))

    def out_of(self, pe: PE, port: str = "res", width: int = 32) -> Val:
        return Val("net", pe.name, port, rate=tuple(lp for lp, _ in pe.chain), width=width)

    def widen(self, v: Val, chain: list) -> Val:
        """A 1-bit predicate as a 32-bit 0 / 1 word (a ``Sel`` PE)."""
        pe = self.new_pe(chain, op="Sel")
        self.operand(pe, "a", Val("const", value=1))
        self.operand(pe, "b", Val("const", value=0))
        self.operand(pe, "p", v)
        return self.out_of(pe)

    def predicate(self, v: Val, chain: list) -> Val:
        """A 32-bit value as a 1-bit predicate (``v != 0``)."""
        if v.kind == "net" and v.width == 1:
            return v
        pe = self.new_pe(chain, cond="NE")
        self.operand(pe, "a", v)
        self.operand(pe, "b", Val("const", value=0))
        return self.out_of(pe, "res_p", 1)

    def materialise(self, v: Val, chain: list) -> Val:
        """``v`` as a net at the rate of ``chain`` (a PassA PE for a constant, an index or a
        net of an outer rate)."""
        loops = tuple(lp for lp, _ in chain)
        if v.kind == "net" and len(v.rate) == len(loops) and v.width == 32:
            return v
        pe = self.new_pe(chain, op="PassA")
        self.operand(pe, "a", v)
        return self.out_of(pe)

    # ---------------------------------------------------------------- expressions
    def expr(self, e: Expr, chain: list, memo: dict[int, Val]) -> Val:
        if id(e) in memo:
            return memo[id(e)]
        v = self._expr(e, chain, memo)
        memo[id(e)] = v
        return v

    def _expr(self, e: Expr, chain: list, memo: dict[int, Val]) -> Val:
        if e.dtype != "i32":
            raise self.refuse(f"unit {self.unit}: {e.dtype} values (the dataflow PE is an "
                              f"integer datapath)")
        if isinstance(e, Const):
            return Val("const", value=int(e.value))
        if isinstance(e, Index):
            return Val("index", loop=self.alias.get(id(e.loop), e.loop))
        if isinstance(e, Temp):
            lane = next((ln for _, ln in chain if ln is not None), None)
            try:
                return self.temps[(id(e), lane)]
            except KeyError:
                raise self.refuse(f"unit {self.unit}: temporary {e.name!r} read before it "
                                  f"is defined") from None
        if isinstance(e, Load):
            return self.load(e, chain)
        if not isinstance(e, Op):
            raise self.refuse(f"unit {self.unit}: expression {type(e).__name__}")
        args = [self.expr(a, chain, memo) for a in e.args]
        if all(a.kind == "const" for a in args):
            return Val("const", value=int(apply_op(e.op, [a.value for a in args], "i32")))
        if e.op in PE_OPS or e.op in DIV_OPS:
            if e.op in DIV_OPS and not getattr(self.spec, "div", False):
                raise self.refuse(f"unit {self.unit}: operator {e.op!r} needs a divider; the "
                                  f"design's PE has none (build it with "
                                  f"make_dataflow_pe(..., div=True))")
            pe = self.new_pe(chain, op={**PE_OPS, **DIV_OPS}[e.op])
            self.operand(pe, "a", args[0])
            self.operand(pe, "b", args[1])
            return self.out_of(pe)
        if e.op in CMP_OPS:
            pe = self.new_pe(chain, cond=CMP_OPS[e.op])
            self.operand(pe, "a", args[0])
            self.operand(pe, "b", args[1])
            return self.out_of(pe, "res_p", 1)
        if e.op == "select":
            c, a, b = args
            if c.kind == "const":
                return a if c.value else b
            pe = self.new_pe(chain, op="Sel")
            self.operand(pe, "a", a)
            self.operand(pe, "b", b)
            self.operand(pe, "p", self.predicate(c, chain))
            return self.out_of(pe)
        if e.op in ("neg", "not"):
            pe = self.new_pe(chain, op="Sub" if e.op == "neg" else "Xor")
            if e.op == "neg":
                self.operand(pe, "a", Val("const", value=0))
                self.operand(pe, "b", args[0])
            else:
                self.operand(pe, "a", args[0])
                self.operand(pe, "b", Val("const", value=-1))
            return self.out_of(pe)
        if e.op == "abs":
            neg = self.new_pe(chain, op="Sub")
            self.operand(neg, "a", Val("const", value=0))
            self.operand(neg, "b", args[0])
            pe = self.new_pe(chain, op="Max")
            self.operand(pe, "a", args[0])
            self.operand(pe, "b", self.out_of(neg))
            return self.out_of(pe)
        raise self.refuse(f"unit {self.unit}: operator {e.op!r} has no dataflow PE op "
                          f"(the PE runs {sorted(PE_OPS)}, comparisons, select, neg, not, abs)")

    def lane_of(self, chain: list) -> tuple[str, int, int] | None:
        """(par loop label, lane, par) of a chain inside the lanes of a par loop, else
        None."""
        for lp, lane in chain:
            if lane is not None:
                return lp.label, lane, lp.par
        return None

    def dram_access(self, label: str, m, mine: set[str], other: set[str]) -> None:
        """Record access ``label`` of DRAM ``m`` in ``mine`` (the read or the written DRAMs);
        refuse a FIFO and a DRAM also in ``other`` (read and written)."""
        if not isinstance(m, DRAM):
            raise self.refuse(f"{label}: {m.kind} {m.name!r} (FIFOs are not mapped yet; the "
                              f"array runs programs over DRAM, SRAM and Regs)")
        if m.name in other:
            raise self.refuse(f"{label}: DRAM {m.name!r} is read and written (the host "
                              f"serves reads from the inputs)")
        mine.add(m.name)

    def load(self, e: Load, chain: list) -> Val:
        m = e.mem
        if isinstance(m, Reg):
            cur = self.regs.get(id(m))
            if isinstance(cur, _Pending):
                cur = self.close_reduction(m, cur, chain)
            elif isinstance(cur, _Deferred):
                unit, self.unit = self.unit, cur.unit
                cur = self.regs[id(m)] = cur.build()
                self.unit = unit
            made = {self.loop_key(x) for x in (cur.rate if cur is not None else ())}
            for lp, _ in chain:
                key = self.loop_key(lp)
                if id(m) in self.reg_writes.get(key, ()) and key not in made:
                    raise self.refuse(
                        f"{e.label}: Reg {m.name!r} is read in loop {lp.label} before its "
                        f"write in the same iteration (a value carried from one iteration "
                        f"to the next; the array forwards a Reg within an iteration, and "
                        f"carries only reductions r = r + x, min, max)")
            if cur is None:
                return Val("const", value=int(m.init))
            return cur
        if isinstance(m, SRAM):
            return self.sram_read(e, chain)
        self.dram_access(e.label, m, self.read_drams, self.written_drams)
        lane = self.lane_of(chain)
        name = f"io_in_{e.label}" + (f"_l{lane[1]}" if lane else "")
        if name not in self.io_in:
            src = self.inputs[m.name]
            words = [int(src[idx]) & 0xFFFFFFFF for idx, where, _ in self.trace.get(e.label, [])
                     if lane is None or dict(where)[lane[0]] % lane[2] == lane[1]]
            self.io_in[name] = np.array(words, dtype=np.int64)
        return Val("net", name, "out", rate=tuple(lp for lp, _ in chain))

    def sram_read(self, e: Load, chain: list) -> Val:
        """A read site of an SRAM: a memory PE (op ``Mem``) per read site and lane, written
        with the SRAM's whole write stream in epochs (every word in address order, checked
        by :func:`_check_srams`), each followed by the reads this site and lane make before
        the next epoch, at the addresses it computes: the PE's counter ``(0, 1, words +
        reads)`` and ``b_const = words`` (:func:`peak.examples.dataflow_pe.make_scratch`).
        The reads per epoch must be the same in every epoch."""
        m = e.mem
        if id(m) not in self.epochs:
            return Val("const", value=0)          # never written (_check_srams)
        if id(m) in self.accs:
            return self.acc_read(e, chain)
        lane = self.lane_of(chain)
        key = (e.label, lane[1] if lane else None)
        if key not in self.pmus:
            data = self.sram_data.get(id(m))
            if data is None:
                raise AssertionError(f"{e.label}: SRAM {m.name} read before its write site "
                                     f"was compiled (_check_srams orders them)")
            epochs = self.epochs[id(m)]
            per = [0] * len(epochs)
            for _, where, step in self.trace.get(e.label, []):
                if lane is None or dict(where)[lane[0]] % lane[2] == lane[1]:
                    per[sum(1 for first, _ in epochs if first < step) - 1] += 1
            if len(set(per)) != 1 or not per[0]:
                raise self.refuse(
                    f"{e.label}: reads SRAM {m.name!r} {per} times after its {len(epochs)} "
                    f"write epochs" + (f" (lane {lane[1]})" if lane else "") + "; a memory "
                    "PE reads the same number of words after every epoch")
            addr = self.materialise(self.expr(_flat(e.index, m), chain, {}), chain)
            unit, self.unit = self.unit, m.name
            pmu = self.new_pe([], op="Mem")
            self.unit = unit
            top = m.size + per[0]
            if top >= self.ctr_limit:
                raise self.refuse(f"{e.label}: {m.size} writes and {per[0]} reads of SRAM "
                                  f"{m.name!r} per epoch; a memory PE's counter holds "
                                  f"{self.ctr_limit - 1}")
            pmu.counters = [(0, 1, top)] + [(0, 1, 1)] * (self.levels - 1)
            pmu.consts["b_const"] = m.size
            pmu.operands["a"] = addr          # the memory PE dequeues by its phase
            pmu.operands["b"] = data
            self.pmus[key] = pmu.name
        return Val("net", self.pmus[key], "res", rate=tuple(lp for lp, _ in chain))

    def acc_read(self, e: Load, chain: list) -> Val:
        """A read site of a scatter-added SRAM (:func:`_accumulation`): a ``MemAcc`` memory
        PE per read site, fed the scatter-add's address and addend streams, its counter
        ``(0, 1, updates + reads)``, ``b_const = updates`` and ``a_const`` the reads' offset
        and stride; after the updates it emits ``mem[offset + r * stride]``. The site (each
        lane of a par loop its own copy) must read so: a rising arithmetic sequence of
        addresses, each once per iteration of the loops its index uses (the value held
        across the loops inside them, the reader's dequeue window)."""
        m = e.mem
        used = {self.loop_key(x.loop) for i in e.index for x in walk(i)
                if isinstance(x, Index)}
        keys = [self.loop_key(lp) for lp, _ in chain]
        laned = next(((lp, ln) for lp, ln in chain if ln is not None), None)
        depth = max((k + 1 for k, key in enumerate(keys) if key in used), default=0)
        repeat = 1
        for lp, ln in chain[depth:]:
            start, stop, step = (int(x.value) for x in (lp.start, lp.stop, lp.step))
            if ln is not None:                      # this lane's iterations of a par loop
                start, step = start + ln * step, step * lp.par
            repeat *= len(range(start, stop, step))
        flat = [int(np.ravel_multi_index(idx, m.shape)) for idx, where, _ in
                self.trace.get(e.label, []) if laned is None
                or dict(where)[laned[0].label] % laned[0].par == laned[1]]
        words = flat[::repeat]
        offset = words[0] if words else 0
        stride = words[1] - words[0] if len(words) > 1 else 1
        half = self.spec.width // 2
        if (flat != [w for w in words for _ in range(repeat)] or not 1 <= stride <= 1 << half
                or offset >= 1 << half
                or words != list(range(offset, offset + stride * len(words), stride))):
            where = f" (lane {laned[1]})" if laned else ""
            raise self.refuse(f"{e.label}: reads scatter-added SRAM {m.name!r}{where} at "
                              f"addresses that are not a rising arithmetic sequence, each "
                              f"once per iteration of the loops the index uses (a scatter-add "
                              f"memory PE emits mem[offset + r * stride] for r = 0, 1, ...)")
        key = (e.label, laned[1] if laned else None)
        if key not in self.pmus:
            addr, add, updates = self.sram_acc[id(m)]
            top = updates + len(words)
            if top >= self.ctr_limit:
                raise self.refuse(f"{e.label}: {updates} updates and {len(words)} reads of "
                                  f"SRAM {m.name!r}; a memory PE's counter holds "
                                  f"{self.ctr_limit - 1}")
            unit, self.unit = self.unit, m.name
            pmu = self.new_pe([], op="MemAcc")
            self.unit = unit
            pmu.counters = [(0, 1, top)] + [(0, 1, 1)] * (self.levels - 1)
            pmu.consts["b_const"] = updates
            pmu.consts["a_const"] = offset | (stride - 1) << half
            pmu.operands["a"] = addr
            pmu.operands["b"] = add
            self.pmus[key] = pmu.name
        return Val("net", self.pmus[key], "res", rate=tuple(lp for lp, _ in chain[:depth]))

    # ---------------------------------------------------------------- statements
    def store(self, s: Store, chain: list, memo: dict[int, Val]) -> None:
        m = s.mem
        if isinstance(m, Reg):
            red = self.reduction(s, chain)
            if red is not None:
                op, x = red
                mark = len(self.pes)
                xv = self.expr(x, chain, memo)
                # the PE computing x reduces in place when this statement made it (no other
                # reader can see its running value)
                fresh = xv.kind == "net" and xv.inst in list(self.pes)[mark:]
                self.reduce(m, op, xv, chain, fresh)
                return
            if self.lane_of(chain) is not None:
                raise self.refuse(f"{s.label}: Reg {m.name!r} written in each lane of a par "
                                  f"loop without a reduction (r = r + x)")
            v = self.expr(s.value, chain, memo)
            if v.kind != "net":      # a constant or an index: written once per iteration here
                v = Val(v.kind, value=v.value, loop=v.loop,
                        rate=tuple(lp for lp, _ in chain))
            self.regs[id(m)] = v
            return
        if isinstance(m, SRAM) and id(m) in self.accs:
            x, _ = _accumulation(s)
            addr = self.materialise(self.expr(_flat(s.index, m), chain, memo), chain)
            add = self.materialise(self.expr(x, chain, memo), chain)
            self.sram_acc[id(m)] = (addr, add, len(self.trace.get(s.label, [])))
            return
        if isinstance(m, SRAM):
            self.sram_data[id(m)] = self.materialise(self.expr(s.value, chain, memo), chain)
            return
        self.dram_access(s.label, m, self.written_drams, self.read_drams)
        v = self.materialise(self.expr(s.value, chain, memo), chain)
        lane = self.lane_of(chain)
        name = f"io_out_{s.label}" + (f"_l{lane[1]}" if lane else "")
        addrs = [idx for idx, where, _ in self.trace.get(s.label, [])
                 if lane is None or dict(where)[lane[0]] % lane[2] == lane[1]]
        self.io_out[name] = (m.name, addrs)
        self.sinks.setdefault((v.inst, v.port), []).append((name, "in"))

    def reduction(self, s: Store, chain: list) -> tuple[str, Expr] | None:
        """``(op, x)`` when ``s`` is ``r = r op x`` (op in :data:`RED_OPS`) inside loops the
        current value of ``r`` is not produced in."""
        m, e = s.mem, s.value
        if not (isinstance(e, Op) and e.op in RED_OPS and len(e.args) == 2):
            return None
        mine = [isinstance(a, Load) and a.mem is m for a in e.args]
        if sum(mine) != 1:
            return None
        x = e.args[mine.index(False)]
        if any(isinstance(y, Load) and y.mem is m for y in walk(x)):
            return None
        cur = self.regs.get(id(m))
        if isinstance(cur, _Deferred):
            raise self.refuse(f"{s.label}: a second reduction into Reg {m.name!r} before "
                              f"its value is read")
        if isinstance(cur, _Pending):
            lane = self.lane_of(chain)
            if not (cur.par_loop is not None and lane is not None and
                    cur.par_loop.label == lane[0] and RED_OPS.get(e.op) == RED_OPS[cur.op]):
                raise self.refuse(f"{s.label}: a second reduction into Reg {m.name!r} before "
                                  f"its value is read")
            cur = cur.init
        rate = cur.rate if isinstance(cur, Val) else ()
        if len(rate) >= len(chain):
            return None
        return e.op, x

    def reduce(self, m: Reg, op: str, x: Val, chain: list, fresh: bool) -> None:
        cur = self.regs.get(id(m))
        pend = cur if isinstance(cur, _Pending) else None    # another lane of a par loop
        if pend is not None:
            cur = pend.init
        init = cur if cur is not None else Val("const", value=int(m.init))
        outer = len(init.rate)
        window = len(chain) - outer
        if fresh and x.port == "res" and len(self.pes[x.inst].chain) == len(chain):
            pe = self.pes[x.inst]                    # the last op of x reduces in place
        else:
            pe = self.new_pe(chain, op="PassA")
            self.operand(pe, "a", x)
        pe.red = RED_OPS[op]
        pe.levels["red_level"] = pe.levels["emit_level"] = window
        if pend is not None:
            pend.parts.append(self.out_of(pe))
            return
        lane = self.lane_of(chain)
        par_loop = next((lp for lp, ln in chain if ln is not None), None) if lane else None
        self.regs[id(m)] = _Pending(op, init, chain[:outer], [self.out_of(pe)], self.unit,
                                    par_loop)

    def close_reduction(self, m: Reg, pend: "_Pending", chain: list) -> Val:
        """The value of accumulator ``m`` after its loops: the lanes' partial results
        combined (a tree of PEs) and then with the value before the loops."""
        unit, self.unit = self.unit, pend.unit
        parts = [Val("net", p.inst, p.port, rate=tuple(lp for lp, _ in pend.chain))
                 for p in pend.parts]
        op = PE_OPS[pend.op]
        while len(parts) > 1:
            nxt = []
            for a, b in zip(parts[::2], parts[1::2], strict=False):
                pe = self.new_pe(pend.chain, op=op)
                self.operand(pe, "a", a)
                self.operand(pe, "b", b)
                nxt.append(self.out_of(pe))
            if len(parts) % 2:
                nxt.append(parts[-1])
            parts = nxt
        res = parts[0]
        if not (pend.init.kind == "const" and pend.init.value == 0 and pend.op == "add"):
            pe = self.new_pe(pend.chain, op=op)
            self.operand(pe, "a", pend.init)
            self.operand(pe, "b", res)
            res = self.out_of(pe)
        self.unit = unit
        self.regs[id(m)] = res
        return res

    # ---------------------------------------------------------------- controllers
    def run(self, c: Controller, chain: list) -> None:
        if isinstance(c, Block):
            self.block(c, chain)
        elif isinstance(c, Loop):
            self.loop(c, chain)
        elif isinstance(c, Branch):
            self.branch(c, chain)
        elif isinstance(c, DoWhile):
            raise self.refuse(f"do-while {c.label} (control VCUs are not mapped yet; the "
                              f"array runs loops of blocks and branches on loop indices)")
        elif isinstance(c, Sequential):
            for ch in c.children():
                self.run(ch, chain)
        else:
            raise self.refuse(f"controller {type(c).__name__} {c.label}")

    def loop(self, lp: Loop, chain: list) -> None:
        if not all(isinstance(e, Const) for e in (lp.start, lp.stop, lp.step)):
            raise self.refuse(f"loop {lp.label}: bounds that are not constants (a control VCU "
                              f"computes them; not mapped yet)")
        if len(chain) + 1 > self.levels:
            raise self.refuse(f"loop {lp.label}: {len(chain) + 1} nested loops; the PE's "
                              f"counter chain has {self.levels} levels")
        start, stop, step = (int(e.value) for e in (lp.start, lp.stop, lp.step))
        if step < 1 or stop <= start or stop >= self.ctr_limit:
            raise self.refuse(f"loop {lp.label}: range({start}, {stop}, {step}) does not fit "
                              f"the PE's counters (1 <= step, start < stop < "
                              f"{self.ctr_limit})")
        writes_sram = any(isinstance(st, Store) and isinstance(st.mem, SRAM)
                          for b in (lp, *_descendants(lp)) if isinstance(b, Block)
                          for st in b.statements)
        if lp.par > 1 and not writes_sram:
            trips = -(-(stop - start) // step)
            if lp.par > trips:
                raise self.refuse(f"loop {lp.label}: par {lp.par} on {trips} iterations (a "
                                  f"lane would run none); use par <= {trips}")
            if any(isinstance(x, Loop) for x in _descendants(lp)):
                raise self.refuse(f"loop {lp.label}: par {lp.par} on a loop that is not "
                                  f"innermost (the array vectorises the innermost loop only)")
            for lane in range(lp.par):
                for ch in lp.body:
                    self.run(ch, chain + [(lp, lane)])
            for v in self.regs.values():        # the lanes' partial results are all there
                if isinstance(v, _Pending) and v.par_loop is lp:
                    v.par_loop = None
            return
        # one lane (the sequential result par never changes): a loop that fills an SRAM
        # feeds a memory PE, which takes one write stream
        for ch in lp.body:
            self.run(ch, chain + [(lp, None)])

    def branch(self, br: Branch, chain: list) -> None:
        """A branch whose condition reads one enclosing loop's index (and constants) only:
        each clause runs on the iterations of that loop that select it, which must be a
        strided range; the clause's units count that range instead of the loop's (the
        condition is decided when the array is configured, not by a control VCU). A
        condition on data, or selecting iterations that are not a strided range, is
        refused."""
        nodes = list(walk(br.cond))
        used = {id(x.loop): x.loop for x in nodes if isinstance(x, Index)}
        pos = {self.loop_key(lp): k for k, (lp, _) in enumerate(chain)}
        if (not all(isinstance(x, Const | Index | Op) for x in nodes) or len(used) > 1
                or any(key not in pos for key in used)):
            raise self.refuse(f"branch {br.label}: its condition reads data or more than one "
                              f"loop index (a control VCU selects the clause at run time; not "
                              f"mapped yet; the array runs branches on one enclosing loop's "
                              f"index)")

        def value(x: Expr, i: int) -> int:
            if isinstance(x, Const):
                return int(x.value)
            if isinstance(x, Index):
                return i
            return int(apply_op(x.op, [value(a, i) for a in x.args], "i32"))

        if not used:
            clause = br.then if value(br.cond, 0) else br.orelse
            for ch in clause.children() if clause is not None else ():
                self.run(ch, chain)
            return
        key = next(iter(used))
        k = pos[key]
        lp, lane = chain[k]
        if lane is not None:
            raise self.refuse(f"branch {br.label}: on the index of par loop {lp.label} (its "
                              f"lanes would run different clauses)")
        start, stop, step = (int(x.value) for x in (lp.start, lp.stop, lp.step))
        its = list(range(start, stop, step))
        sel = [i for i in its if value(br.cond, i)]
        for clause, vals in ((br.then, sel), (br.orelse, [i for i in its if i not in sel])):
            if clause is None or not clause.children() or not vals:
                continue
            d = vals[1] - vals[0] if len(vals) > 1 else 1
            if vals != list(range(vals[0], vals[-1] + 1, d)):
                raise self.refuse(f"branch {br.label}: a clause runs on iterations {vals} of "
                                  f"loop {lp.label}, not a strided range (a counter runs it)")
            alias = Loop(label=lp.label, start=Const(vals[0]), stop=Const(vals[-1] + 1),
                         step=Const(d))
            before = self.alias.get(key)
            self.alias[key] = alias
            sub = chain[:k] + [(alias, None)] + chain[k + 1:]
            for ch in clause.children():
                self.run(ch, sub)
            if before is None:
                del self.alias[key]
            else:
                self.alias[key] = before

    def block(self, b: Block, chain: list) -> None:
        self.unit = b.label
        lane = next((ln for _, ln in chain if ln is not None), None)
        memo: dict[int, Val] = {}
        groups = [g for g in _arg_groups(b, self.temp_reads) if self.carried(g, chain)]
        skip = {id(g.cond) for g in groups}
        claimed = {id(st): g for g in groups for st in g.stores}
        for st in b.statements:
            if isinstance(st, Let):
                if id(st) not in skip:
                    self.temps[(id(st.temp), lane)] = self.expr(st.value, chain, memo)
            elif id(st) in claimed:
                g = claimed[id(st)]
                if st is g.stores[0]:
                    self.arg_reduce(g, chain, memo)
            else:
                self.store(st, chain, memo)

    def carried(self, g: "_ArgGroup", chain: list) -> bool:
        """Whether the values of ``g``'s Regs before this block were produced outside
        some of the enclosing loops (a reduction over them), not in this iteration."""
        rates = []
        for reg in (g.best, g.index):
            cur = self.regs.get(id(reg))
            if isinstance(cur, _Pending | _Deferred):
                return False        # the second reduction is refused by store()
            rates.append(len(cur.rate) if cur is not None else 0)
        return max(rates) < len(chain)

    def arg_reduce(self, g: "_ArgGroup", chain: list, memo: dict[int, Val]) -> None:
        """``best`` and ``index`` of an arg-reduction (:func:`_arg_groups`) over the loops
        inside their values' rate: a ``MIN`` (``MAX``) PE and an ``ARGMIN`` (``ARGMAX``) PE
        over ``key`` with ``B`` = ``value``, each emitting once per window; after the
        window ``best = min(best0, m)`` and ``index = m < best0 ? arg : index0`` with the
        values ``best0`` / ``index0`` before the loops (built when read)."""
        if self.lane_of(chain) is not None:
            raise self.refuse(f"{g.stores[0].label}: an arg-{g.kind} reduction into Regs "
                              f"{g.index.name!r} / {g.best.name!r} in the lanes of a par loop "
                              f"(not mapped; use par on another loop)")
        inits = []
        for reg in (g.best, g.index):
            cur = self.regs.get(id(reg))
            inits.append(cur if cur is not None else Val("const", value=int(reg.init)))
        best0, index0 = inits
        outer = max(len(best0.rate), len(index0.rate))
        window = len(chain) - outer
        key = self.expr(g.key, chain, memo)
        value = self.expr(g.value, chain, memo)
        unit = self.unit
        ext, red = ("Min", "MIN") if g.kind == "min" else ("Max", "MAX")
        rate = tuple(lp for lp, _ in chain[:outer])
        made: dict[str, Val] = {}

        def reducer(kind: str) -> Val:
            if kind not in made:
                pe = self.new_pe(chain, op="PassA")
                self.operand(pe, "a", key)
                if kind == "arg":
                    self.operand(pe, "b", value)
                pe.red = "ARG" + red if kind == "arg" else red
                pe.levels["red_level"] = pe.levels["emit_level"] = window
                made[kind] = Val("net", pe.name, "res", rate=rate)
            return made[kind]

        def best() -> Val:
            m = reducer("ext")
            extreme = -2**31 if g.kind == "max" else 2**31 - 1
            if best0.kind == "const" and best0.value == extreme:
                return m
            pe = self.new_pe(chain[:outer], op=ext)
            self.operand(pe, "a", best0)
            self.operand(pe, "b", m)
            return self.out_of(pe)

        def index() -> Val:
            m, arg = reducer("ext"), reducer("arg")
            cmp = self.new_pe(chain[:outer], cond="LT" if g.kind == "min" else "GT")
            self.operand(cmp, "a", m)
            self.operand(cmp, "b", best0)
            pe = self.new_pe(chain[:outer], op="Sel")
            self.operand(pe, "a", arg)
            self.operand(pe, "b", index0)
            self.operand(pe, "p", self.out_of(cmp, "res_p", 1))
            return self.out_of(pe)

        self.regs[id(g.best)] = _Deferred(best, unit)
        self.regs[id(g.index)] = _Deferred(index, unit)


@dataclass
class _Pending:
    """A reduction whose value is not read yet: ``op``, the value before the loops
    (``init``), the chain outside the window, the partial results (``parts``, one per
    lane), the unit it belongs to and, while the lanes of a par loop are being compiled,
    that loop (``par_loop``)."""
    op: str
    init: Val
    chain: list
    parts: list
    unit: str
    par_loop: Loop | None = None


@dataclass
class _Deferred:
    """A Reg's value after an arg-reduction, built (its PEs made, in ``unit``) when read."""
    build: Any
    unit: str


@dataclass
class _ArgGroup:
    """An arg-reduction of one block (:func:`_arg_groups`): ``kind`` ``min`` / ``max``, the
    Regs ``best`` and ``index``, the ``key`` compared and the ``value`` recorded, the
    condition's Let and the two stores (in program order)."""
    kind: str
    best: Reg
    index: Reg
    key: Expr
    value: Expr
    cond: Let
    stores: tuple


def _same(a: Expr, b: Expr) -> bool:
    """Structural equality of two expressions (the same Reg or memory read at equal
    indices, equal constants, the same loop index, Temp or operator tree)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, Const):
        return a.value == b.value and a.dtype == b.dtype
    if isinstance(a, Index):
        return a.loop is b.loop
    if isinstance(a, Load):
        return a.mem is b.mem and len(a.index) == len(b.index) and all(
            _same(x, y) for x, y in zip(a.index, b.index, strict=True))
    if isinstance(a, Op):
        return a.op == b.op and all(_same(x, y) for x, y in zip(a.args, b.args, strict=True))
    return False


def _nodes(e: Expr):
    """Every node of expression tree ``e``, a shared node once per use (unlike
    :func:`walk`)."""
    yield e
    for c in e.children():
        yield from _nodes(c)


def _reads(e: Expr, reg: Reg) -> bool:
    return any(isinstance(x, Load) and x.mem is reg for x in walk(e))


def _arg_groups(b: Block, temp_reads: dict[int, int]) -> list[_ArgGroup]:
    """The arg-reductions of block ``b`` (SARA's k-means assignment, an accumulator pair
    promoted into its VCU): ``t = key < best`` (or ``best > key``; ``>`` for an arg-max), then
    ``index = select(t, value, index)`` and ``best = select(t, key, best)`` in either order,
    with ``t`` read by these two stores only (``temp_reads``: id(Temp) -> its reads in the
    program), ``key`` and ``value`` reading neither Reg. Strict comparisons only: ties
    keep the earlier ``value``."""
    lets = {id(st.temp): st for st in b.statements if isinstance(st, Let)}
    stores = [st for st in b.statements if isinstance(st, Store) and isinstance(st.mem, Reg)]
    order = {id(st): k for k, st in enumerate(b.statements)}
    groups = []

    def select_of(st: Store):
        e = st.value
        if (isinstance(e, Op) and e.op == "select" and isinstance(e.args[0], Temp)
                and id(e.args[0]) in lets and isinstance(e.args[2], Load)
                and e.args[2].mem is st.mem):
            return e.args[0], e.args[1]
        return None

    for s in stores:
        sel = select_of(s)
        if sel is None:
            continue
        t, value = sel
        cond = lets[id(t)]
        c = cond.value
        if not (isinstance(c, Op) and c.op in ("lt", "gt")):
            continue
        if temp_reads.get(id(t)) != 2:
            continue
        x, y = c.args
        # key < best (arg-min) or best < key (arg-max); gt mirrors them
        for key, side, kind in ((x, y, "min"), (y, x, "max")):
            if c.op == "gt":
                kind = "max" if kind == "min" else "min"
            if not (isinstance(side, Load) and isinstance(side.mem, Reg)) or side.mem is s.mem:
                continue
            best = side.mem
            partner = [o for o in stores if o.mem is best
                       and (sel2 := select_of(o)) is not None and sel2[0] is t
                       and _same(sel2[1], key)]
            if len(partner) != 1 or any(_reads(e, r) for e in (key, value)
                                        for r in (best, s.mem)):
                continue
            if not order[id(cond)] < min(order[id(s)], order[id(partner[0])]):
                continue
            first = s if order[id(s)] < order[id(partner[0])] else partner[0]
            groups.append(_ArgGroup(kind, best, s.mem, key, value, cond,
                                    (first, partner[0] if first is s else s)))
            break
    return groups


def _flat(index: Sequence[Expr], m: SRAM) -> Expr:
    """The row-major word address of ``m[index]``."""
    flat: Expr = index[0]
    for ix, n in zip(index[1:], m.shape[1:], strict=True):
        flat = flat * n + ix
    return flat


def _accumulation(st: Store) -> tuple[Expr, Load] | None:
    """``(x, own read)`` when ``st`` is a scatter-add ``m[idx] = m[idx] + x`` (or ``x +
    m[idx]``) into SRAM ``m``, the same index on both sides and ``x`` not reading ``m``."""
    m, e = st.mem, st.value
    if not (isinstance(m, SRAM) and isinstance(e, Op) and e.op == "add"):
        return None
    for own, x in ((e.args[0], e.args[1]), (e.args[1], e.args[0])):
        if (isinstance(own, Load) and own.mem is m and len(own.index) == len(st.index)
                and all(_same(i, j) for i, j in zip(own.index, st.index, strict=True))
                and not any(isinstance(y, Load) and y.mem is m for y in walk(x))):
            return x, own
    return None


def _accumulators(program: Program) -> dict[int, Store]:
    """id(SRAM) -> its scatter-add store (:func:`_accumulation`), for the SRAMs whose only
    write site is one."""
    stores: dict[int, list[Store]] = {}
    for c in program.controllers():
        for st in c.statements if isinstance(c, Block) else ():
            if isinstance(st, Store) and isinstance(st.mem, SRAM):
                stores.setdefault(id(st.mem), []).append(st)
    return {k: v[0] for k, v in stores.items() if len(v) == 1 and _accumulation(v[0])}


def _check_srams(program: Program, trace: dict[str, list],
                 pe_spec: type) -> dict[int, list[tuple[int, int]]]:
    """The write epochs of every SRAM, id(SRAM) -> ``[(first step, last step), ...]`` of
    the program steps (:func:`~mapper.dataflow.interp.interpret_trace`) that write it;
    :class:`MappingError` unless every SRAM is what a memory PE holds: written at one site,
    in epochs each writing every word once in address order (row-major; SARA's PMU fills a
    buffer, then serves its reads, §III-A2), no read while an epoch is being written or
    before the first, at most the PE's scratchpad words."""
    words = getattr(pe_spec, "words", 0)
    sites: dict[int, tuple[list[str], list[str]]] = {}
    for c in program.controllers():
        if isinstance(c, Block):
            for st in c.statements:
                if isinstance(st, Store) and isinstance(st.mem, SRAM):
                    sites.setdefault(id(st.mem), ([], []))[0].append(st.label)
            for ld in c.loads():
                if isinstance(ld.mem, SRAM):
                    sites.setdefault(id(ld.mem), ([], []))[1].append(ld.label)
    mems = {id(m): m for m in program.memories.values()}
    epochs: dict[int, list[tuple[int, int]]] = {}
    accs = _accumulators(program)
    for key, st in accs.items():          # the scatter-add's own read is its update
        own = _accumulation(st)[1].label
        sites[key][1][:] = [r for r in sites[key][1] if r != own]
    for key, (writes, reads) in sites.items():
        m = mems[key]
        where = f"dataflow program {program.name!r} on the array: SRAM {m.name!r}"
        if not words:
            raise MappingError(f"{where}: the design's PE has no scratchpad (words = 0); use "
                               f"configs/small_df.toml's PE")
        if m.size > words:
            raise MappingError(f"{where}: {m.size} words; the PE's scratchpad holds {words}")
        if not writes:
            continue        # never written: every read is the SRAM's initial 0
        if len(writes) != 1:
            raise MappingError(f"{where}: written at {len(writes)} sites {writes}; a memory PE "
                               f"takes one write stream")
        w = trace.get(writes[0], [])
        if key in accs:
            if not w:
                continue
            last = w[-1][2]
            for r in reads:
                bad = next((step for _, _, step in trace.get(r, []) if step < last), None)
                if bad is not None:
                    raise MappingError(f"{where}: {r} reads it before the scatter-add "
                                       f"{writes[0]} ends (a scatter-add memory PE updates, "
                                       f"then reads, once)")
            epochs[key] = [(w[0][2], last)]
            continue
        flat = [int(np.ravel_multi_index(idx, m.shape)) for idx, _, _ in w]
        n = max(1, len(flat) // m.size)
        if flat != list(range(m.size)) * n:
            raise MappingError(f"{where}: {writes[0]} does not write every word once in "
                               f"address order per epoch (a memory PE's write address is its "
                               f"counter)")
        spans = [(w[e * m.size][2], w[e * m.size + m.size - 1][2]) for e in range(n)]
        for r in reads:
            bad = next((step for _, _, step in trace.get(r, []) if step < spans[0][1] or any(
                first <= step <= last for first, last in spans)), None)
            if bad is not None:
                raise MappingError(f"{where}: {r} reads it while {writes[0]} writes an epoch "
                                   f"(a memory PE writes every word, then reads)")
        epochs[key] = spans
    return epochs


def _descendants(c: Controller):
    for ch in c.children():
        yield ch
        yield from _descendants(ch)


def compile_program(program: Program, inputs: dict[str, np.ndarray], pe_spec: type,
                    width: int = 32, vudfg: VUDFG | None = None) -> ArrayProgram:
    """Compile ``program`` with ``inputs`` (DRAM name -> array) for an array of ``pe_spec``
    PEs (a :func:`peak.examples.dataflow_pe.make_dataflow_pe` class, as a design's pe.json
    names it: its ``instruction`` method builds each PE's instruction) with ``width``-bit
    tracks (module docstring); ``vudfg``: the program's lowering when the caller has it
    (the units take its VCU names). Raises :class:`MappingError` (one line) for what the
    array does not run and :class:`~cgra.errors.ProgramError` from the interpreter."""
    golden, trace = interpret_trace(program, inputs)
    initial = {m.name: np.asarray(inputs.get(m.name, np.zeros(m.shape)), dtype=np.int32)
               .reshape(m.shape).copy()
               for m in program.memories.values() if isinstance(m, DRAM)}
    epochs = _check_srams(program, trace, pe_spec)
    c = _Compiler(program, initial, pe_spec, trace, epochs)
    c.run(program.root, [])
    for key, v in list(c.regs.items()):          # reductions nobody reads: still on chip
        if isinstance(v, _Pending):
            reg = next(m for m in program.memories.values() if id(m) == key)
            c.close_reduction(reg, v, v.chain)
    # the units by their VCU names (the enclosing loop's label for a loop's only block)
    names = {v.leaf: v.name.split(".")[0] for v in (vudfg or lower(program)).compute_vcus()}
    c.units = {names.get(u, u): pes for u, pes in c.units.items()}
    for pe in c.pes.values():
        pe.unit = names.get(pe.unit, pe.unit)
    nl = Netlist(program.name)
    asm = assembler(pe_spec.Inst)
    for name, words in c.io_in.items():
        nl.add_instance(name, "io_in", "I", {"words": len(words)})
    for name, (dram, addrs) in c.io_out.items():
        nl.add_instance(name, "io_out", "I", {"dram": dram, "tokens": len(addrs)})
    for pe in c.pes.values():
        kw: dict[str, Any] = {"signed": True, "cond": pe.cond, "red": pe.red, **pe.consts}
        for port in ("a", "b"):
            v = pe.operands.get(port)
            if v is None or v.kind == "net":
                continue
            if v.kind == "const":
                kw[f"{port}_src"], kw[f"{port}_const"] = "CONST", v.value
            else:
                kw[f"{port}_src"] = "INDEX"
        levels = pe.counters if pe.counters is not None else _lane_chain(pe.chain)
        inst = pe_spec.instruction(levels, pe.op, **kw, **pe.levels)
        nl.add_instance(pe.name, "pe", "p", {"inst": asm.encode(inst), "unit": pe.unit,
                                             "op": pe.op, "red": pe.red})
        for port, v in pe.operands.items():
            if v.kind == "net":
                c.sinks.setdefault((v.inst, v.port), []).append((pe.name, port))
    for k, ((src, port), sinks) in enumerate(sorted(c.sinks.items())):
        w = 1 if port == "res_p" else width
        nl.add_net((src, port), sinks, w, name=f"n{k}_{src}_{port}")
    return ArrayProgram(program.name, nl, c.io_in, c.io_out, c.units, c.pes, golden, initial)
