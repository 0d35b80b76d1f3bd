"""Control hardware as PEak components: counter chains, token FIFOs, credit counters and
input FIFOs whose dequeue level is configurable (SARA, Zhang et al., ISCA 2021, §III-A;
Y. Zhang, "Scaling a Reconfigurable Dataflow Accelerator", PhD thesis, Stanford 2020,
§4.0.1 and §4.2.1).

Each factory returns a :class:`peak.spec.Peak` class (cached: one class per parameter
set), so a PE spec includes a control component as a sub-PE (``self.ctr =
make_counter_chain(2, 8)()`` in ``__init__``, ``self.ctr(inst.ctr, en)`` in ``__call__``)
and the component gets the Python, SMT and Verilog interpretations of every PEak spec from
the one normal form. Each class carries ``_control_``, a dict ``{"kind": ..., <parameter>:
int, ...}`` that :func:`peak.collateral.control_components` collects into ``pe.json`` and
:func:`peak.resources.pe_resources` counts.

Conventions shared by the four components:

* A component's **configuration** is its instruction (a ``Product``); the ``*_inst``
  helpers build it from plain ints and raise :class:`~cgra.errors.ConfigError` for values
  the hardware cannot hold.
* **Status outputs** (``valid``, ``ready``, ``avail``, ``full``) are functions of the state
  only, never of the same cycle's inputs, so a parent may gate a pop with them without a
  combinational loop. Because one PEak call computes outputs and next state at once, a
  parent whose pop depends on the status of the same call registers the ``*_next`` status
  (the status the component has in the next cycle) and gates with the registered copy
  (``peak.examples.control_pe``).
* A push into a full queue is refused (the queue is unchanged and ``overflow`` pulses); a
  pop of an empty queue is ignored.

Errors: the factories raise :class:`~cgra.errors.SpecError` for bad parameters (one line,
naming the parameter and its legal range); the ``*_inst`` helpers raise
:class:`~cgra.errors.ConfigError`.

This module does not use ``from __future__ import annotations``: the spec classes' types
are closure variables of their factories (docs/peak_dsl.md).
"""
import functools
from typing import Sequence

from hwtypes import Bit, BitVector
from hwtypes.adt import Product

from cgra.errors import ConfigError, SpecError
from peak.spec import Peak, RegisterFile, name_outputs

#: the ``kind`` (in ``_control_`` and ``pe.json``) of each control component
KINDS = ("counter_chain", "token_fifo", "credit_counter", "input_fifo")

_MAX_LEVELS = 8
_MAX_WIDTH = 32
_MAX_DEPTH = 256


def _check(what: str, name: str, value: int, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise SpecError(f"{what}: {name} = {value!r} must be an int in {lo}..{hi}")
    return value


def _info(spec: type, kind: str) -> dict:
    """The ``_control_`` parameters of ``spec``; :class:`ConfigError` unless it is a
    control component of ``kind``."""
    info = getattr(spec, "_control_", None)
    if not isinstance(info, dict) or info.get("kind") != kind:
        raise ConfigError(f"{getattr(spec, '__name__', spec)!r} is not a {kind} "
                          f"(a class made by peak.control.make_{kind})")
    return info


def _bits(n: int) -> int:
    """Bits of an index 0..n-1 (at least 1)."""
    return max(1, (n - 1).bit_length())


@functools.lru_cache(maxsize=None)
def make_counter_chain(levels: int, width: int = 16) -> type:
    """A chain of ``levels`` counters of ``width`` bits (1..8 levels, 1..32 bits), level 0
    innermost, each counting ``min, min + stride, ...`` while the value is below ``max``
    (the thesis's configurable counters with bounds min, stride, max, §4.0.1; SARA §III-A:
    a VCU holds one counter per enclosing loop, and the innermost counter increments every
    cycle the unit is enabled).

    Instruction (``.Inst``): ``min``, ``stride``, ``max``, each ``levels * width`` bits,
    level ``k`` at bits ``[k*width, (k+1)*width)`` (:func:`counter_chain_inst` packs them).
    Input ``en`` (1 bit): advance the innermost counter. Outputs: ``index``
    (``levels * width`` bits, the current value of every level, packed the same way) and
    ``done`` (``levels`` bits): bit ``k`` is 1 in the cycle level ``k`` saturates with
    every inner level, i.e. ``en`` and, for every level ``j <= k``, ``value_j + stride_j >=
    max_j`` (unsigned, no wrap-around). In that cycle the levels ``0..k`` restart at their
    ``min`` and level ``k+1`` steps; after the outermost level saturates the chain starts
    over. Latency: ``done`` and ``index`` describe the current cycle (combinational from
    the state and ``en``); the state moves at the clock edge. State: one register of
    ``levels * width`` bits (each level's offset from its ``min``; reset 0).

    Known answer: levels 3 (inner) x 2 (outer), ``en`` every cycle: ``done`` bit 0 in
    cycles 2 and 5, bit 1 in cycle 5, then the pattern repeats from cycle 6."""
    what = f"make_counter_chain({levels}, {width})"
    _check(what, "levels", levels, 1, _MAX_LEVELS)
    _check(what, "width", width, 1, _MAX_WIDTH)
    W = width
    L = levels
    Vec = BitVector[L * W]
    Word = BitVector[W]
    One = BitVector[1]

    class Inst(Product):
        min = Vec
        stride = Vec
        max = Vec

    class CounterChain(Peak):
        def __init__(self):
            self.offs = RegisterFile(1, Vec, 0)

        @name_outputs(index=Vec, done=BitVector[L])
        def __call__(self, inst: Inst, en: Bit):
            cur = self.offs.read(One(0))
            o = cur[0:W]
            st = inst.stride[0:W]
            v = inst.min[0:W] + o
            sat = (v.zext(1) + st.zext(1)) >= inst.max[0:W].zext(1)
            d = en & sat
            nxt = en.ite(sat.ite(Word(0), o + st), o)
            index = v
            done = d.ite(One(1), One(0))
            carry = d
            for k in range(1, L):
                o = cur[k * W:(k + 1) * W]
                st = inst.stride[k * W:(k + 1) * W]
                v = inst.min[k * W:(k + 1) * W] + o
                sat = (v.zext(1) + st.zext(1)) >= inst.max[k * W:(k + 1) * W].zext(1)
                d = carry & sat
                nxt = nxt.concat(carry.ite(sat.ite(Word(0), o + st), o))
                index = index.concat(v)
                done = done.concat(d.ite(One(1), One(0)))
                carry = d
            self.offs.write(One(0), nxt)
            return index, done

    CounterChain.__name__ = CounterChain.__qualname__ = f"CounterChain{L}x{W}"
    CounterChain.Inst = Inst
    CounterChain._control_ = {"kind": "counter_chain", "levels": L, "width": W}
    return CounterChain


def counter_chain_inst(spec: type, levels: Sequence[tuple[int, int, int]]) -> Product:
    """The instruction of counter chain ``spec`` (a :func:`make_counter_chain` class) for
    ``levels``: one ``(min, stride, max)`` per level, innermost first. Raises
    :class:`ConfigError` unless there is one triple per level, ``0 <= min < max <
    2**width`` and ``1 <= stride < 2**width`` (a level then runs ``ceil((max - min) /
    stride)`` iterations, at least one)."""
    info = _info(spec, "counter_chain")
    L, W = info["levels"], info["width"]
    if len(levels) != L:
        raise ConfigError(f"{spec.__name__}: {len(levels)} (min, stride, max) triples given "
                          f"for {L} levels")
    mins = strides = maxes = 0
    for k, (lo, st, hi) in enumerate(levels):
        if not (0 <= lo < hi < 1 << W and 1 <= st < 1 << W):
            raise ConfigError(f"{spec.__name__}: level {k} (min={lo}, stride={st}, max={hi}) "
                              f"needs 0 <= min < max < {1 << W} and 1 <= stride < {1 << W}")
        mins |= lo << (k * W)
        strides |= st << (k * W)
        maxes |= hi << (k * W)
    Vec = BitVector[L * W]
    return spec.Inst(Vec(mins), Vec(strides), Vec(maxes))


def counter_chain_trips(levels: Sequence[tuple[int, int, int]]) -> list[int]:
    """Iterations of each level of a chain configured with ``levels`` (innermost first):
    ``ceil((max - min) / stride)``."""
    return [-(-(hi - lo) // st) for lo, st, hi in levels]


@functools.lru_cache(maxsize=None)
def make_token_fifo(depth: int) -> type:
    """A token FIFO holding up to ``depth`` single-bit tokens (1..256): SARA's token, "a
    single-bit pulse treated as a data dependency of the receiver" (§III-A), queued at the
    receiver. It is a counter of ``depth.bit_length()`` bits; a backward token (a credit)
    is initialised at the destination with ``init`` tokens (SARA §III-A: at least one).

    Instruction (``.Inst``): ``init`` (``depth.bit_length()`` bits, tokens after reset,
    0..depth; :func:`token_fifo_inst`). Inputs ``push``, ``pop`` (1 bit each). Outputs:
    ``valid`` (a token is present), ``full`` (``depth`` tokens), ``count`` (tokens now),
    ``overflow`` (``push`` while full: the token is refused), ``valid_next`` (``valid`` of
    the next cycle). A pop while empty is ignored; a push and a pop in one cycle leave the
    count unchanged unless the FIFO is full (then only the pop is taken) or empty (only the
    push). State: one ``depth.bit_length()``-bit register, tokens minus ``init`` (reset
    0).

    Known answer: depth 2, ``init`` 0: push, push, push gives ``overflow`` in the third
    cycle and count 2."""
    _check(f"make_token_fifo({depth})", "depth", depth, 1, _MAX_DEPTH)
    CW = depth.bit_length()
    Count = BitVector[CW]
    One = BitVector[1]
    D = depth

    class Inst(Product):
        init = Count

    class TokenFifo(Peak):
        def __init__(self):
            self.delta = RegisterFile(1, Count, 0)

        @name_outputs(valid=Bit, full=Bit, count=Count, overflow=Bit, valid_next=Bit)
        def __call__(self, inst: Inst, push: Bit, pop: Bit):
            delta = self.delta.read(One(0))
            n = inst.init + delta
            valid = n != 0
            full = n == D
            take = pop & valid
            put = push & ~full
            inc = put.ite(Count(1), Count(0))
            dec = take.ite(Count(1), Count(0))
            self.delta.write(One(0), delta + inc - dec)
            return valid, full, n, push & full, (n + inc - dec) != 0

    TokenFifo.__name__ = TokenFifo.__qualname__ = f"TokenFifo{D}"
    TokenFifo.Inst = Inst
    TokenFifo._control_ = {"kind": "token_fifo", "depth": D}
    return TokenFifo


def token_fifo_inst(spec: type, init: int = 0) -> Product:
    """The instruction of token FIFO ``spec``: ``init`` tokens after reset. Raises
    :class:`ConfigError` unless ``0 <= init <= depth``."""
    D = _info(spec, "token_fifo")["depth"]
    if not 0 <= init <= D:
        raise ConfigError(f"{spec.__name__}: init = {init} tokens must be in 0..{D}")
    return spec.Inst(BitVector[D.bit_length()](init))


@functools.lru_cache(maxsize=None)
def make_credit_counter(max_credits: int) -> type:
    """A credit counter of up to ``max_credits`` credits (1..256), the sender's side of a
    backward token (SARA §III-A: "the credit, initialized to at least one token at the
    destination"; an initial credit above one is the multibuffer depth of the memory): the
    token count of a :func:`make_token_fifo` seen from the sender, where a send takes a
    credit and a returned credit gives one back.

    Instruction (``.Inst``): ``credits`` (``max_credits.bit_length()`` bits, credits after
    reset, 0..max_credits; :func:`credit_counter_inst`). Inputs ``take`` (the sender asks
    to send) and ``give`` (a credit comes back), 1 bit each. Outputs: ``grant`` (``take``
    and a credit is available: the send may happen this cycle), ``avail`` (a credit is
    available; state only), ``count`` (credits now), ``overflow`` (``give`` while already
    holding ``max_credits``: refused), ``avail_next``. State: one
    ``max_credits.bit_length()``-bit register, the credits spent (reset 0).

    Known answer: ``credits`` 2, ``take`` every cycle: ``grant`` 1, 1, 0 (the third send
    blocks) until a ``give``; the cycle after the give, ``grant`` is 1 again."""
    _check(f"make_credit_counter({max_credits})", "max_credits", max_credits, 1, _MAX_DEPTH)
    M = max_credits
    Count = BitVector[M.bit_length()]
    One = BitVector[1]

    class Inst(Product):
        credits = Count

    class CreditCounter(Peak):
        def __init__(self):
            self.spent = RegisterFile(1, Count, 0)

        @name_outputs(grant=Bit, avail=Bit, count=Count, overflow=Bit, avail_next=Bit)
        def __call__(self, inst: Inst, take: Bit, give: Bit):
            spent = self.spent.read(One(0))
            n = inst.credits - spent
            avail = n != 0
            full = n == M
            grant = take & avail
            back = give & ~full
            dec = grant.ite(Count(1), Count(0))
            inc = back.ite(Count(1), Count(0))
            self.spent.write(One(0), spent + dec - inc)
            return grant, avail, n, give & full, (n - dec + inc) != 0

    CreditCounter.__name__ = CreditCounter.__qualname__ = f"CreditCounter{max_credits}"
    CreditCounter.Inst = Inst
    CreditCounter._control_ = {"kind": "credit_counter", "max_credits": max_credits}
    return CreditCounter


def credit_counter_inst(spec: type, credits: int = 1) -> Product:
    """The instruction of credit counter ``spec``: ``credits`` after reset. Raises
    :class:`ConfigError` unless ``0 <= credits <= max_credits`` (0 blocks the sender until
    a credit is given)."""
    M = _info(spec, "credit_counter")["max_credits"]
    if not 0 <= credits <= M:
        raise ConfigError(f"{spec.__name__}: credits = {credits} must be in 0..{M}")
    return spec.Inst(BitVector[M.bit_length()](credits))


@functools.lru_cache(maxsize=None)
def make_input_fifo(depth: int, width: int = 16, levels: int = 1) -> type:
    """An input FIFO of ``depth`` words (1..256) of ``width`` bits (1..32) whose dequeue
    level is configurable (1..8 counter levels): the head is held while the consumer's
    counter chain runs and is dequeued once per iteration of the chosen loop level (the
    thesis's "dynamic dequeue window", §4.0.1: counter done signals dequeue inputs; SARA
    §III-A: a data-dependent loop bound is "consumed each time the loop completes"; the
    thesis §4.2.1, memory localization: "the receiver dequeues one element from the input
    buffer when the token is supposed to be consumed").

    Instruction (``.Inst``): ``level`` (``levels.bit_length()`` bits): 0 dequeues every
    cycle ``step`` is 1 (a stream: one element per firing), ``k`` in 1..levels dequeues
    when bit ``k - 1`` of ``done`` is 1 (one element per iteration of counter level ``k``,
    i.e. after levels ``0..k-1`` complete; :func:`input_fifo_inst`). Inputs: ``enq`` (1 bit)
    with ``data`` (``width`` bits), ``step`` (1 bit, the consumer fires), ``done``
    (``levels`` bits, the consumer's :func:`make_counter_chain` ``done``). Outputs:
    ``head`` (``width`` bits, the oldest word; stale when empty),
    ``valid`` (not empty), ``ready`` (not full: ``enq`` is taken), ``count`` (words,
    ``depth.bit_length()`` bits), ``valid_next``. ``enq`` while full is refused; a dequeue
    while empty is ignored. State: ``depth`` words, read and write pointers
    (``max(1, bits(depth - 1))`` bits each) and the count.

    Known answer: ``level`` 1 with a 3 x 2 chain stepping every cycle: words w0, w1 are
    the head in cycles 0-2 and 3-5."""
    what = f"make_input_fifo({depth}, {width}, {levels})"
    _check(what, "depth", depth, 1, _MAX_DEPTH)
    _check(what, "width", width, 1, _MAX_WIDTH)
    _check(what, "levels", levels, 1, _MAX_LEVELS)
    D = depth
    L = levels
    PW = _bits(depth)
    Ptr = BitVector[PW]
    Count = BitVector[depth.bit_length()]
    Data = BitVector[width]
    Level = BitVector[levels.bit_length()]
    One = BitVector[1]

    class Inst(Product):
        level = Level

    class InputFifo(Peak):
        def __init__(self):
            self.mem = RegisterFile(D, Data, 0)
            self.rd = RegisterFile(1, Ptr, 0)
            self.wr = RegisterFile(1, Ptr, 0)
            self.n = RegisterFile(1, Count, 0)

        @name_outputs(head=Data, valid=Bit, ready=Bit, count=Count, valid_next=Bit)
        def __call__(self, inst: Inst, enq: Bit, data: Data, step: Bit, done: BitVector[L]):
            rd = self.rd.read(One(0))
            wr = self.wr.read(One(0))
            n = self.n.read(One(0))
            valid = n != 0
            ready = n != D
            deq = (inst.level == 0) & step
            for k in range(L):
                deq = deq | ((inst.level == k + 1) & done[k])
            take = deq & valid
            put = enq & ready
            self.mem.write(wr, data, put)
            if put:
                wr = (wr == D - 1).ite(Ptr(0), wr + 1)
            if take:
                rd_next = (rd == D - 1).ite(Ptr(0), rd + 1)
            else:
                rd_next = rd
            n_next = n + put.ite(Count(1), Count(0)) - take.ite(Count(1), Count(0))
            self.wr.write(One(0), wr)
            self.n.write(One(0), n_next)
            self.rd.write(One(0), rd_next)
            return self.mem.read(rd), valid, ready, n, n_next != 0

    InputFifo.__name__ = InputFifo.__qualname__ = f"InputFifo{D}x{width}L{L}"
    InputFifo.Inst = Inst
    InputFifo._control_ = {"kind": "input_fifo", "depth": D, "width": width, "levels": L}
    return InputFifo


def input_fifo_inst(spec: type, level: int = 0) -> Product:
    """The instruction of input FIFO ``spec``: dequeue ``level`` (0 = every ``step``,
    ``k`` = on ``done`` bit ``k - 1``). Raises :class:`ConfigError` unless ``0 <= level <=
    levels``."""
    L = _info(spec, "input_fifo")["levels"]
    if not 0 <= level <= L:
        raise ConfigError(f"{spec.__name__}: dequeue level {level} must be in 0..{L} "
                          f"(0 = every step, k = done of counter level k - 1)")
    return spec.Inst(BitVector[L.bit_length()](level))


__all__ = ["KINDS", "make_counter_chain", "counter_chain_inst", "counter_chain_trips",
           "make_token_fifo", "token_fifo_inst", "make_credit_counter", "credit_counter_inst",
           "make_input_fifo", "input_fifo_inst"]
