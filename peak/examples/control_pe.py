"""A PE that includes the four control components of :mod:`peak.control`: the controller
of one SARA virtual compute unit (Zhang et al., ISCA 2021, §III-A; thesis §4.2.1).

The unit **fires** in a cycle when ``run`` is 1, its input FIFO holds a word, its token
FIFO holds a token and its credit counter holds a credit ("the innermost counter
increments every cycle when the VCU is enabled, when all of its input streams and tokens
are valid and output streams are ready", SARA §III-A). A firing advances the counter
chain; the input FIFO dequeues at the configured level; when the outermost counter
saturates the unit consumes one token ("consumes one token when its counter G
saturates"), spends one credit and sends one token downstream (``token_out``).

Sub-PEs: ``ctr`` (:func:`~peak.control.make_counter_chain`, ``levels`` x ``ctr_width``
bits), ``fifo`` (:func:`~peak.control.make_input_fifo`, ``fifo_depth`` words of
``width`` bits), ``tok`` (:func:`~peak.control.make_token_fifo`, ``token_depth`` tokens),
``cr`` (:func:`~peak.control.make_credit_counter`, ``max_credits``). A PEak call computes
outputs and next state in one function, so the statuses that gate this cycle's pops
cannot come from this cycle's calls: the PE registers each component's ``*_next``
status in ``flags`` (4 bits: FIFO valid, token valid, credit available, started) and,
in the first cycle after reset, derives them from the configuration (empty FIFO,
``tok.init`` tokens, ``cr.credits`` credits). The flags always equal the components'
statuses (``tests/peak/test_control_hw.py`` checks it).

Instruction (``Inst``): ``ctr``, ``fifo``, ``tok``, ``cr``: the components' instructions
(for the defaults 48 + 2 + 2 + 2 = 54 bits). Inputs: ``data`` (``width`` bits) with
``data_valid`` (1 bit) into the input FIFO, ``token_in`` and ``credit_in`` (1 bit: a token
from upstream, a credit returned from downstream), ``run`` (1 bit). Outputs: ``out``
(``width`` bits, the FIFO head, the operand of this firing), ``index`` and ``done`` (the
counter chain's ``levels * ctr_width`` and ``levels`` bits, zero-extended to ``width``
bits, so every port is a word or a bit and the PE fits an array of ``width``-bit words),
``fire``, ``token_out``, ``in_ready`` (1 bit each: the FIFO takes ``data``).

Known answer (defaults; chain 3 x 2, dequeue level 1, no initial token, 1 credit; words
7 and 9 and a token arrive in cycles 0 and 1): the unit fires in cycles 1..6, ``out`` is
7 in cycles 1-3 and 9 in cycles 4-6, ``token_out`` pulses in cycle 6, and the unit then
waits for a credit and a token.
"""
import functools

from hwtypes import Bit, BitVector
from hwtypes.adt import Product

from cgra.errors import SpecError
from peak.control import (make_counter_chain, make_credit_counter, make_input_fifo,
                          make_token_fifo)
from peak.spec import Peak, RegisterFile, name_outputs


@functools.lru_cache(maxsize=None)
def make_control_pe(width: int = 16, levels: int = 2, ctr_width: int = 8,
                    fifo_depth: int = 4, token_depth: int = 2, max_credits: int = 2) -> type:
    """The control PE class for these parameters (cached; module docstring). Raises
    :class:`~cgra.errors.SpecError` for parameters the components refuse and unless
    ``levels * ctr_width <= width`` (``index`` and ``done`` are ``width``-bit ports, so
    the PE fits an array whose data path is ``width`` bits)."""
    if levels * ctr_width > width:
        raise SpecError(f"make_control_pe: levels * ctr_width = {levels * ctr_width} bits "
                        f"do not fit the {width}-bit index port; lower ctr_width or levels")
    Chain = make_counter_chain(levels, ctr_width)
    Fifo = make_input_fifo(fifo_depth, width, levels)
    Tok = make_token_fifo(token_depth)
    Cr = make_credit_counter(max_credits)
    Data = BitVector[width]
    Flags = BitVector[4]
    One = BitVector[1]
    L = levels
    PAD_I = width - levels * ctr_width
    PAD_D = width - levels

    class Inst(Product):
        ctr = Chain.Inst
        fifo = Fifo.Inst
        tok = Tok.Inst
        cr = Cr.Inst

    class ControlPE(Peak):
        def __init__(self):
            self.ctr = Chain()
            self.fifo = Fifo()
            self.tok = Tok()
            self.cr = Cr()
            self.flags = RegisterFile(1, Flags, 0)

        @name_outputs(out=Data, index=Data, done=Data, fire=Bit, token_out=Bit,
                      in_ready=Bit)
        def __call__(self, inst: Inst, data: Data, data_valid: Bit, token_in: Bit,
                     credit_in: Bit, run: Bit):
            flags = self.flags.read(One(0))
            started = flags[3]
            fifo_ok = started & flags[0]
            tok_ok = started.ite(flags[1], inst.tok.init != 0)
            cr_ok = started.ite(flags[2], inst.cr.credits != 0)
            fire = run & fifo_ok & tok_ok & cr_ok
            index, done = self.ctr(inst.ctr, fire)
            last = done[L - 1]
            head, _, ready, _, fifo_next = self.fifo(inst.fifo, data_valid, data, fire, done)
            _, _, _, _, tok_next = self.tok(inst.tok, token_in, last)
            _, _, _, _, cr_next = self.cr(inst.cr, last, credit_in)
            nxt = fifo_next.ite(One(1), One(0)).concat(tok_next.ite(One(1), One(0)))
            nxt = nxt.concat(cr_next.ite(One(1), One(0))).concat(One(1))
            self.flags.write(One(0), nxt)
            return head, index.zext(PAD_I), done.zext(PAD_D), fire, last, ready

    ControlPE.__name__ = ControlPE.__qualname__ = (
        f"ControlPE{width}_{levels}x{ctr_width}_f{fifo_depth}_t{token_depth}_c{max_credits}")
    ControlPE.Inst = Inst
    ControlPE.parts = (Chain, Fifo, Tok, Cr)
    return ControlPE


ControlPE = make_control_pe()
"""The control PE with the default parameters (16-bit data, a 2-level 8-bit counter chain,
a 4-word input FIFO, a 2-token FIFO, up to 2 credits)."""
