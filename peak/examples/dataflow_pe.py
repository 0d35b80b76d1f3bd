"""A dataflow PE: one stage of a SARA virtual compute unit with its own counter chain, a
reduction register and per-port rates (Zhang et al., "SARA", ISCA 2021, §III-A; the
thesis, Zhang 2020, §4.0.1 "dynamic enqueue and dequeue window"; issue 35, item 2).

A PE of :mod:`peak.examples.cgra_pe` consumes one word on every input and produces one on
every output per firing. A unit of a dataflow program does not: a dot product's
multiply-accumulate takes ``n`` pairs and produces one sum, a GEMM tile's row operand stays
at the head of its FIFO for a whole inner loop, a branch forwards a value only when its
predicate holds. This PE says, per firing, which inputs it **dequeues** and which outputs
it **emits**, through 1-bit *shell ports* that the ready-valid tile's handshake wrapper
reads (:func:`canal.rv_rtl.rv_array`, "rates"): ``deq_a``, ``deq_b``, ``deq_p`` and
``emit_res``, ``emit_res_p``. They are functions of the PE's state and of the firing's
operands, never of a ready, so they add no combinational path through the handshake.
:func:`garnet.cores.pe_core` lists every ``deq_<input>`` / ``emit_<output>`` port of a PE
as external (not routed). The PE's state advances only on a firing (its ``clk_en``).

Ports: inputs ``a``, ``b`` (``width`` bits), ``p`` (1 bit: a predicate or a token);
outputs ``res`` (``width`` bits), ``res_p`` (1 bit) and the five shell ports.

Per firing, with ``done`` the counter chain's done bits for this firing (the chain steps
once per firing; :func:`peak.control.make_counter_chain`) and *level* ``k`` meaning "every
firing" for ``k = 0`` and "the firings where ``done`` bit ``k - 1`` is 1" otherwise:

* operands: ``A`` = ``a``, the constant ``a_const`` or the chain's index at level
  ``a_level`` (zero-extended; ``a_src``: :class:`Src`), ``B`` likewise;
* ``x = op(A, B)`` (:class:`DfOp`; ``signed`` selects signed Min/Max/Shr/Div/Mod and compares;
  ``Mul`` keeps the low ``width`` bits; ``Sel`` = ``p ? A : B``; ``PassA`` = ``A``;
  ``Div`` / ``Mod`` the floor quotient and modulo of a PE built with ``div=True``, 0 for
  ``B = 0`` (:func:`make_divider`));
* reduction (:class:`Red`): with ``red = NONE`` ``y = x``; else ``y = x`` on the first
  firing of a window and ``red(acc, x)`` after it, a window ending at the firings of level
  ``red_level``; ``acc`` holds ``y`` (reset: an empty window). ``res = y``, except for
  ``ARGMIN`` / ``ARGMAX``: ``acc`` keeps the window's minimum / maximum of ``x`` and ``arg``
  the ``B`` of the firing where ``x`` first reached it (updated on the first firing and
  when ``x`` is strictly below / above ``acc``: ties keep the earlier ``B``, as a program's
  ``best = select(x < best, x, best)``), and ``res = arg``: with ``B`` the index of the
  window's loop, the index of the first minimum (SARA's k-means assignment);
* ``res_p`` = the comparison ``cond`` (:class:`PCond`) of ``A`` and ``B``, or ``p``;
* ``emit_res`` at level ``emit_level`` and, if ``emit_on_p``, only when ``p`` is 1;
  ``emit_res_p`` at level ``emit_p_level``; ``deq_<in>`` at level ``deq_<in>_level``.

A dot product of ``n`` pairs is one such PE: ``op = Mul``, ``red = ADD``, a one-level chain
``(0, 1, n)`` with ``red_level = emit_level = 1``: it fires ``n`` times and emits the sum
on the last. State: the chain (``levels * ctr_width`` bits), ``acc`` and ``arg``
(``width`` bits each) and the window flag (1 bit).

``make_dataflow_pe(width, levels, ctr_width)`` (cached) builds the class; ``DataflowPE``
is the 32-bit PE with a 3-level chain of 16-bit counters (``pe =
"peak.examples.dataflow_pe:DataflowPE"``), 240 instruction bits. Level fields are
``(levels).bit_length()`` bits. :func:`dataflow_inst` builds an instruction from plain
values and raises :class:`~cgra.errors.ConfigError` for values the PE cannot hold; it is
also the class method ``instruction`` of every dataflow PE class.
"""
import functools
from typing import Sequence

from hwtypes import Bit, BitVector
from hwtypes.adt import Enum, Product

from cgra.errors import ConfigError, SpecError
from peak.control import counter_chain_inst, make_counter_chain
from peak.spec import Peak, RegisterFile, name_outputs


class DfOp(Enum):
    Add = 0
    Sub = 1
    Mul = 2
    And = 3
    Or = 4
    Xor = 5
    Shl = 6
    Shr = 7
    Min = 8
    Max = 9
    Sel = 10
    PassA = 11
    Mem = 12
    Div = 13
    Mod = 14
    MemAcc = 15


class Red(Enum):
    NONE = 0
    ADD = 1
    MIN = 2
    MAX = 3
    ARGMIN = 4
    ARGMAX = 5


class Src(Enum):
    PORT = 0
    CONST = 1
    INDEX = 2


class PCond(Enum):
    LT = 0
    LE = 1
    EQ = 2
    NE = 3
    GT = 4
    GE = 5
    P = 6


@functools.lru_cache(maxsize=None)
def make_operand(width: int) -> type:
    """An operand's source select (a stateless sub-PE): instruction ``src``
    (:class:`Src`), inputs ``port``, ``const``, ``index`` (``width`` bits); output ``out``
    = the constant for ``CONST``, the counter index for ``INDEX``, else the port."""
    Data = BitVector[width]

    class Operand(Peak):
        @name_outputs(out=Data)
        def __call__(self, src: Src, port: Data, const: Data, index: Data):
            if src == Src.CONST:
                out = const
            elif src == Src.INDEX:
                out = index
            else:
                out = port
            return out
    Operand.__name__ = Operand.__qualname__ = f"Operand{width}"
    return Operand


@functools.lru_cache(maxsize=None)
def make_divider(width: int, enabled: bool) -> type:
    """The integer divider of a dataflow PE (a stateless sub-PE): inputs ``signed`` (1 bit),
    ``a``, ``b`` (``width`` bits); outputs ``quo`` and ``mod`` (``width`` bits): the
    *floor* quotient and the floor modulo (Python's ``//`` and ``%``, the dataflow
    DSL's ``div`` / ``mod``: the remainder takes the divisor's sign) of ``a`` by ``b``, as
    two's complement when ``signed`` else unsigned, the quotient wrapped to ``width`` bits
    (``-2**(width-1) // -1`` is ``-2**(width-1)``); both 0 when ``b`` is 0 (the
    interpreter's ``x // 0``). Built from one unsigned divider of the magnitudes
    (``bvudiv``), the quotient negated and lowered by one when the signs differ and the
    division is inexact. With ``enabled`` false there is no divider: both outputs are
    ``a`` (``Div`` and ``Mod`` act as ``PassA``; :func:`dataflow_inst` refuses them)."""
    Data = BitVector[width]
    TOP = width - 1
    if not enabled:
        class NoDivider(Peak):
            @name_outputs(quo=Data, mod=Data)
            def __call__(self, signed: Bit, a: Data, b: Data):
                return a, a
        NoDivider.__name__ = NoDivider.__qualname__ = f"NoDivider{width}"
        return NoDivider

    class Divider(Peak):
        @name_outputs(quo=Data, mod=Data)
        def __call__(self, signed: Bit, a: Data, b: Data):
            neg_a = signed & a[TOP]
            neg_b = signed & b[TOP]
            ua = neg_a.ite(-a, a)
            ub = neg_b.ite(-b, b)
            q = ua.bvudiv(ub)
            inexact = (ua - q * ub) != Data(0)
            down = (neg_a ^ neg_b).ite(-q - inexact.ite(Data(1), Data(0)), q)
            zero = b == Data(0)
            return zero.ite(Data(0), down), zero.ite(Data(0), a - b * down)
    Divider.__name__ = Divider.__qualname__ = f"Divider{width}"
    return Divider


@functools.lru_cache(maxsize=None)
def make_scratch(width: int, words: int) -> type:
    """The scratchpad of a dataflow PE (a sub-PE): with ``words`` > 0, the memory of ops
    ``Mem`` and ``MemAcc``, ``words`` ``width``-bit words used in *epochs* of ``wn`` update
    firings then reads (SARA §III-A1: a VMU "written ... C times, before being read ...,
    repeating A×B times"). The inner counter ``ix`` (``width`` bits, zero-extended) counts
    the firings of an epoch; the update phase is ``ix < wn`` (unsigned; ``wn`` is the
    instruction's ``b_const``); the next epoch starts when the counter wraps, so a counter
    ``(0, 1, wn + reads)`` gives epochs of ``wn`` updates and ``reads`` reads.

    * ``Mem``: an update writes ``b`` at ``ix`` (``a`` not needed, nothing emitted); a read
      emits ``mem[a]`` on ``res`` (``a`` dequeued, ``b`` not needed).
    * ``MemAcc`` (a scatter-add, SARA's PMU read-modify-write for ``m[f(x)] += v``): an
      update adds ``b`` to the word at ``a`` (``mem[a] += b``, both dequeued, nothing
      emitted); the ``r``-th read (``r = ix - wn``) emits ``mem[offset + r * stride]`` with
      no input needed: ``offset`` is the low half of the instruction's ``a_const``
      (``ac``), ``stride`` its high half plus one (``a_const = 0``: every word in address
      order; a lane of a ``par`` loop reads every ``par``-th word). The words start at 0
      (reset) and are not cleared between epochs.

    Inputs: ``is_mem`` / ``is_acc`` (the op is ``Mem`` / ``MemAcc``), ``a``, ``b``, ``ix``,
    ``wn``, ``ac`` and the PE's ``y``, ``emit``, ``deq_a``, ``deq_b`` otherwise; outputs ``y``,
    ``emit``, ``deq_a``, ``deq_b``, ``need_a``, ``need_b``. With ``words`` = 0 it passes the
    PE's values through and needs every input. State: the words."""
    Data = BitVector[width]
    if words == 0:
        class NoScratch(Peak):
            @name_outputs(y=Data, emit=Bit, deq_a=Bit, deq_b=Bit, need_a=Bit, need_b=Bit)
            def __call__(self, is_mem: Bit, is_acc: Bit, a: Data, b: Data, ix: Data, wn: Data,
                         ac: Data, y: Data, emit: Bit, deq_a: Bit, deq_b: Bit):
                return y, emit, deq_a, deq_b, Bit(1), Bit(1)
        return NoScratch
    AB = max(1, (words - 1).bit_length())
    WORDS = words
    H = width // 2

    class Scratch(Peak):
        def __init__(self):
            self.mem = RegisterFile(WORDS, Data, 0)

        @name_outputs(y=Data, emit=Bit, deq_a=Bit, deq_b=Bit, need_a=Bit, need_b=Bit)
        def __call__(self, is_mem: Bit, is_acc: Bit, a: Data, b: Data, ix: Data, wn: Data,
                     ac: Data, y: Data, emit: Bit, deq_a: Bit, deq_b: Bit):
            reading = ~ix.bvult(wn)
            used = is_mem | is_acc
            waddr = is_acc.ite(a, ix)
            old = self.mem.read(waddr[0:AB])
            self.mem.write(waddr[0:AB], is_acc.ite(old + b, b), used & ~reading)
            stride = ac[H:width].zext(width - H) + Data(1)
            raddr = (ix - wn) * stride + ac[0:H].zext(width - H)
            got = self.mem.read(is_acc.ite(raddr, a)[0:AB])
            a_on = is_mem.ite(reading, ~reading)       # Mem reads at a; MemAcc updates at a
            return (used.ite(got, y), used.ite(reading, emit),
                    used.ite(a_on, deq_a), used.ite(~reading, deq_b),
                    used.ite(a_on, Bit(1)), used.ite(~reading, Bit(1)))
    Scratch.__name__ = Scratch.__qualname__ = f"Scratch{width}_m{words}"
    return Scratch


def make_dataflow_pe(width: int = 32, levels: int = 3, ctr_width: int = 16,
                     words: int = 0, div: bool = False) -> type:
    """The dataflow PE class for a ``width``-bit datapath (a power of two, 4..32), a
    ``levels`` x ``ctr_width``-bit counter chain, a scratchpad of ``words`` words (0:
    none; a power of two up to 1024), the memory of ops ``Mem`` and ``MemAcc``
    (:func:`make_scratch`), and with ``div`` an integer divider for ops ``Div`` / ``Mod`` (:func:`make_divider`; without
    it they act as ``PassA``). Raises
    :class:`~cgra.errors.SpecError` for a width that is not a power of two in 4..32,
    ``ctr_width > width`` (the index is an operand), a bad ``words`` or a ``div`` that is
    not a bool; the chain's own limits as :func:`~peak.control.make_counter_chain`."""
    if not isinstance(div, bool):
        raise SpecError(f"make_dataflow_pe: div = {div!r} must be True or False")
    return _make_dataflow_pe(width, levels, ctr_width, words, div)


@functools.lru_cache(maxsize=None)
def _make_dataflow_pe(width: int, levels: int, ctr_width: int, words: int, div: bool) -> type:
    """:func:`make_dataflow_pe` cached by its positional arguments (one class however the
    arguments are spelled)."""
    if width not in (4, 8, 16, 32):
        raise SpecError(f"make_dataflow_pe: width = {width!r} must be 4, 8, 16 or 32")
    if words not in (0, *(1 << k for k in range(1, 11))) or words > 1 << ctr_width:
        raise SpecError(f"make_dataflow_pe: words = {words!r} must be 0 (no scratchpad) or a "
                        f"power of two in 2..1024, at most 2**ctr_width (the write address "
                        f"is the inner counter)")
    if not isinstance(ctr_width, int) or not 1 <= ctr_width <= width:
        raise SpecError(f"make_dataflow_pe: ctr_width = {ctr_width!r} must be in 1..{width} "
                        f"(a counter's index is a {width}-bit operand)")
    Chain = make_counter_chain(levels, ctr_width)
    W, L, CW = width, levels, ctr_width
    LB = L.bit_length()
    Data = BitVector[W]
    Lvl = BitVector[LB]
    One = BitVector[1]
    SHIFT_MASK = W - 1

    class Inst(Product):
        op = DfOp
        signed = Bit
        cond = PCond
        a_src = Src
        a_level = Lvl
        a_const = Data
        b_src = Src
        b_level = Lvl
        b_const = Data
        red = Red
        red_level = Lvl
        emit_level = Lvl
        emit_p_level = Lvl
        emit_on_p = Bit
        deq_a_level = Lvl
        deq_b_level = Lvl
        deq_p_level = Lvl
        ctr = Chain.Inst

    WORDS = words
    DIV = div
    Scratch = make_scratch(W, words)
    Divider = make_divider(W, div)
    Operand = make_operand(W)

    class DataflowPE(Peak):
        def __init__(self):
            self.ctr = Chain()
            self.acc = RegisterFile(1, Data, 0)
            self.arg = RegisterFile(1, Data, 0)
            self.fresh = RegisterFile(1, One, 1)
            self.scratch = Scratch()
            self.a_src = Operand()
            self.b_src = Operand()
            self.divider = Divider()

        @name_outputs(res=Data, res_p=Bit, emit_res=Bit, emit_res_p=Bit, deq_a=Bit,
                      deq_b=Bit, deq_p=Bit, need_a=Bit, need_b=Bit, need_p=Bit)
        def __call__(self, inst: Inst, a: Data, b: Data, p: Bit):
            index, done = self.ctr(inst.ctr, Bit(1))
            # level k: 1 on every firing for k = 0, else done bit k-1
            at_red = Bit(1)
            at_emit = Bit(1)
            at_emit_p = Bit(1)
            at_da = Bit(1)
            at_db = Bit(1)
            at_dp = Bit(1)
            ix_a = index[0:CW].zext(W - CW)
            ix_b = index[0:CW].zext(W - CW)
            for k in range(L):
                dk = done[k]
                code = Lvl(k + 1)
                at_red = (inst.red_level == code).ite(dk, at_red)
                at_emit = (inst.emit_level == code).ite(dk, at_emit)
                at_emit_p = (inst.emit_p_level == code).ite(dk, at_emit_p)
                at_da = (inst.deq_a_level == code).ite(dk, at_da)
                at_db = (inst.deq_b_level == code).ite(dk, at_db)
                at_dp = (inst.deq_p_level == code).ite(dk, at_dp)
                lv = index[k * CW:(k + 1) * CW].zext(W - CW)
                ix_a = (inst.a_level == Lvl(k)).ite(lv, ix_a)
                ix_b = (inst.b_level == Lvl(k)).ite(lv, ix_b)
            av = self.a_src(inst.a_src, a, inst.a_const, ix_a)
            bv = self.b_src(inst.b_src, b, inst.b_const, ix_b)
            if inst.signed:
                lt = av.bvslt(bv)
                le = av.bvsle(bv)
                shr = av.bvashr(bv & SHIFT_MASK)
            else:
                lt = av.bvult(bv)
                le = av.bvule(bv)
                shr = av.bvlshr(bv & SHIFT_MASK)
            quo, mod = self.divider(inst.signed, av, bv)
            if inst.op == DfOp.Add:
                x = av + bv
            elif inst.op == DfOp.Sub:
                x = av - bv
            elif inst.op == DfOp.Mul:
                x = av * bv
            elif inst.op == DfOp.And:
                x = av & bv
            elif inst.op == DfOp.Or:
                x = av | bv
            elif inst.op == DfOp.Xor:
                x = av ^ bv
            elif inst.op == DfOp.Shl:
                x = av.bvshl(bv & SHIFT_MASK)
            elif inst.op == DfOp.Shr:
                x = shr
            elif inst.op == DfOp.Min:
                x = av if le else bv
            elif inst.op == DfOp.Max:
                x = bv if le else av
            elif inst.op == DfOp.Sel:
                x = av if p else bv
            elif inst.op == DfOp.Div:
                x = quo
            elif inst.op == DfOp.Mod:
                x = mod
            else:
                x = av
            acc = self.acc.read(One(0))
            fresh = self.fresh.read(One(0))[0]
            if inst.signed:
                acc_le = acc.bvsle(x)
                acc_lt = acc.bvslt(x)
            else:
                acc_le = acc.bvule(x)
                acc_lt = acc.bvult(x)
            arg_min = inst.red == Red.ARGMIN
            arg_max = inst.red == Red.ARGMAX
            if inst.red == Red.ADD:
                r = acc + x
            elif (inst.red == Red.MIN) | arg_min:
                r = acc if acc_le else x
            else:
                r = x if acc_le else acc
            keep = (inst.red == Red.NONE) | fresh
            y = keep.ite(x, r)
            self.acc.write(One(0), y)
            # ARGMIN / ARGMAX: B where x first became the window's strict minimum / maximum
            better = fresh | (arg_min & ~acc_le) | (arg_max & acc_lt)
            arg = better.ite(bv, self.arg.read(One(0)))
            self.arg.write(One(0), arg)
            y = (arg_min | arg_max).ite(arg, y)
            self.fresh.write(One(0), ((inst.red == Red.NONE) | at_red).ite(One(1), One(0)))
            if inst.cond == PCond.LT:
                res_p = lt
            elif inst.cond == PCond.LE:
                res_p = le
            elif inst.cond == PCond.EQ:
                res_p = av == bv
            elif inst.cond == PCond.NE:
                res_p = av != bv
            elif inst.cond == PCond.GT:
                res_p = ~le
            elif inst.cond == PCond.GE:
                res_p = ~lt
            else:
                res_p = p
            emit = at_emit & (~inst.emit_on_p | p)
            y, emit, at_da, at_db, need_a, need_b = self.scratch(
                inst.op == DfOp.Mem, inst.op == DfOp.MemAcc, a, b, index[0:CW].zext(W - CW),
                inst.b_const, inst.a_const, y, emit, at_da, at_db)
            return y, res_p, emit, at_emit_p, at_da, at_db, at_dp, need_a, need_b, Bit(1)

    suffix = (f"_m{WORDS}" if WORDS else "") + ("_div" if DIV else "")
    DataflowPE.__name__ = DataflowPE.__qualname__ = f"DataflowPE{W}_{L}x{CW}{suffix}"
    DataflowPE.peak_ref = (f"{__name__}:make_dataflow_pe({W}, {L}, {CW}"
                           + (f", {WORDS}" if WORDS or DIV else "")
                           + (", div=True)" if DIV else ")"))
    DataflowPE.words = WORDS
    DataflowPE.div = DIV
    DataflowPE.Inst = Inst
    DataflowPE.Chain = Chain
    DataflowPE.width = W
    DataflowPE.levels = L
    # the instruction builder as a method of the spec, for callers that hold the class
    # (the mapper reads it from a design's pe.json, not from this module)
    DataflowPE.instruction = classmethod(dataflow_inst)
    return DataflowPE



_LEVEL_FIELDS = ("a_level", "b_level", "red_level", "emit_level", "emit_p_level",
                 "deq_a_level", "deq_b_level", "deq_p_level")


def dataflow_inst(spec: type, chain: Sequence[tuple[int, int, int]], op: str = "PassA",
                  *, signed: bool = False, cond: str = "P", a_src: str = "PORT",
                  a_const: int = 0, b_src: str = "PORT", b_const: int = 0,
                  red: str = "NONE", **levels: int) -> Product:
    """The instruction of dataflow PE ``spec`` (a :func:`make_dataflow_pe` class): ``chain``
    one ``(min, stride, max)`` per counter level, innermost first (missing outer levels run
    once); ``op`` / ``cond`` / ``a_src`` / ``b_src`` / ``red`` by member name; constants as
    ints (two's complement); ``levels``: any of ``a_level``, ``b_level`` (0 .. levels-1, the
    counter an INDEX operand reads) and ``red_level``, ``emit_level``, ``emit_p_level``,
    ``deq_a_level``, ``deq_b_level``, ``deq_p_level`` (0 = every firing, k = done bit k-1),
    plus ``emit_on_p`` (0/1). Raises :class:`ConfigError` (one line) for an unknown name, a
    value out of range or ``Div`` / ``Mod`` on a PE without the divider."""
    W, L = spec.width, spec.levels
    chain = list(chain)
    if len(chain) > L:
        raise ConfigError(f"{spec.__name__}: {len(chain)} counter levels given; the chain has {L}")
    chain += [(0, 1, 1)] * (L - len(chain))
    enums = {"op": (DfOp, op), "cond": (PCond, cond), "a_src": (Src, a_src),
             "b_src": (Src, b_src), "red": (Red, red)}
    vals = {}
    for field, (E, name) in enums.items():
        members = {m.name: m for m in E.enumerate()}
        if name not in members:
            raise ConfigError(f"{spec.__name__}: {field} = {name!r}; choose one of "
                              f"{sorted(members)}")
        vals[field] = members[name]
    if op in ("Div", "Mod") and not getattr(spec, "div", False):
        raise ConfigError(f"{spec.__name__}: op = {op!r} needs a divider; build the PE with "
                          f"make_dataflow_pe(..., div=True)")
    emit_on_p = levels.pop("emit_on_p", 0)
    bad = sorted(set(levels) - set(_LEVEL_FIELDS))
    if bad:
        raise ConfigError(f"{spec.__name__}: unknown field(s) {bad}; level fields are "
                          f"{list(_LEVEL_FIELDS)} and emit_on_p")
    LB = L.bit_length()
    lv = {}
    for f in _LEVEL_FIELDS:
        v = int(levels.get(f, 0))
        hi = L - 1 if f in ("a_level", "b_level") else L
        if not 0 <= v <= hi:
            raise ConfigError(f"{spec.__name__}: {f} = {v} must be in 0..{hi}")
        lv[f] = BitVector[LB](v)
    for name, c in (("a_const", a_const), ("b_const", b_const)):
        if not -(1 << (W - 1)) <= c < (1 << W):
            raise ConfigError(f"{spec.__name__}: {name} = {c} does not fit {W} bits")
    D = BitVector[W]
    return spec.Inst(vals["op"], Bit(bool(signed)), vals["cond"], vals["a_src"], lv["a_level"],
                     D(a_const % (1 << W)), vals["b_src"], lv["b_level"],
                     D(b_const % (1 << W)), vals["red"], lv["red_level"], lv["emit_level"],
                     lv["emit_p_level"], Bit(bool(emit_on_p)), lv["deq_a_level"],
                     lv["deq_b_level"], lv["deq_p_level"],
                     counter_chain_inst(spec.Chain, chain))


DataflowPE = make_dataflow_pe()
"""The dataflow PE with the defaults: 32-bit data, a 3-level chain of 16-bit counters."""
