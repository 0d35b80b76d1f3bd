"""The default CGRA PE with a delay chain of up to four cycles per data input ("D2").

Identical to :mod:`peak.examples.cgra_pe` (the Amber/Garnet-style PE, 16-bit datapath:
the same ALU, flags, condition codes and LUT, which are the default PE's units
(:func:`~peak.examples.cgra_pe.make_core` with :func:`~peak.examples.cgra_pe.make_alu`),
and its bit inputs (:func:`~peak.examples.cgra_pe.declare_inputs`); the types ``ALU``,
``Cond``, ``Mode`` and ``LUTTable`` are the default PE's own, imported, so identical by
construction: hwtypes would otherwise merge structurally equal enums into whichever module
defined them first, and the spec hash, which covers the modules of the ISA's field types,
would depend on import order) except for the modes of the two 16-bit data inputs: each has a chain of four
16-bit registers that latch every cycle, and its mode field (``DelayMode``, 3 bits) selects
the input itself or the input 1..4 cycles earlier. With it the mapper absorbs a chain of
up to four netlist registers in front of a data input into the PE
(:func:`mapper.backend.pack.input_register`), and branch-delay matching adds up to four cycles of
balancing latency at a data input before it uses switch-box registers. The collateral is
self-describing: ``pe.json`` gives the tags of ``data0_mode`` / ``data1_mode``, and a tag
``DELAY`` / ``DELAY<k>`` means 1 / ``k`` cycles. ``configs/d2.toml`` is the default 32x16
array with this PE.

Inputs: ``data0``, ``data1`` (16 bits), ``bit0``, ``bit1``, ``bit2`` (1 bit). Modes:

* data inputs (``DelayMode``, 3 bits): ``BYPASS`` (0) = the input itself, ``DELAY`` (1) =
  the input one cycle earlier, ``CONST`` (2) = the constant ``<input>_const`` (16 bits),
  ``DELAY2`` / ``DELAY3`` / ``DELAY4`` (3 / 4 / 5) = the input 2 / 3 / 4 cycles earlier
  (the outputs of the 2nd / 3rd / 4th register of the chain; registers reset to 0).
* bit inputs (``Mode``, 2 bits, as the default PE): ``BYPASS``, ``DELAY`` (one cycle),
  ``CONST`` (the 1-bit ``<input>_const``).

Outputs: ``res`` (16 bits), ``res_p`` (1 bit). State: 4 x 16 bits per data input (the
chains) + 3 x 1 bit (the bit-input delay registers) = 131 bits. Below, ``a``/``b`` are
data0/data1 and ``d``/``e``/``f`` are bit0/bit1/bit2 after their modes.

ALU (``alu`` field, ``ALU``), flags (``Z``, ``N``, ``C``, ``V``) and ``res_p`` (``cond``,
``Cond``, or the LUT ``lut[{f, e, d}]``): the default PE's at 16 bits, as its module
docstring's tables (shifts by ``b[3:0]``; MULT1 / MULT2 = bits [23:8] / [31:16] of the
32-bit product).

The CoreIR / commonlib / corebit ops covered and the rewrite rules are those of the default
PE (:mod:`peak.examples.cgra_pe`); the rules are synthesised from this spec (``peak/rules``).
"""
from hwtypes import Bit, BitVector
from hwtypes.adt import Enum

from peak.examples.cgra_pe import (ALU, BIT_INPUTS, Cond, LUTTable, Mode, declare_inputs,
                                   make_alu, make_core, make_inst)
from peak.spec import Peak, Register, name_outputs

__all__ = ["ALU", "Cond", "DelayInput", "DelayMode", "Inst", "LUTTable", "MAX_DELAY", "Mode",
           "PE"]

WIDTH = 16
#: cycles of the longest delay of a data input (the chain length)
MAX_DELAY = 4
Data = BitVector[WIDTH]


class DelayMode(Enum):
    """Mode of a 16-bit data input: the default PE's three modes plus 2..4-cycle delays."""

    BYPASS = 0
    DELAY = 1
    CONST = 2
    DELAY2 = 3
    DELAY3 = 4
    DELAY4 = 5


Inst = make_inst(WIDTH, ALU, data_mode=DelayMode)


class DelayInput(Peak):
    """The mode mux of a data input (stateless sub-PE): instruction ``mode``
    (:class:`DelayMode`, 3 bits); inputs ``x`` (the input), ``r1`` .. ``r4`` (the outputs of
    its chain's registers: the input 1..4 cycles earlier) and ``const`` (16 bits each);
    output ``out`` (16 bits) as the mode names."""

    @name_outputs(out=Data)
    def __call__(self, mode: DelayMode, x: Data, r1: Data, r2: Data, r3: Data, r4: Data,
                 const: Data):
        if mode == DelayMode.DELAY:
            out = r1
        elif mode == DelayMode.DELAY2:
            out = r2
        elif mode == DelayMode.DELAY3:
            out = r3
        elif mode == DelayMode.DELAY4:
            out = r4
        elif mode == DelayMode.CONST:
            out = const
        else:
            out = x
        return out


class PE(Peak):
    def __init__(self):
        self.data0_reg = Register(Data, 0)        # the chains: data0 1, 2, 3, 4 cycles ago
        self.data0_reg2 = Register(Data, 0)
        self.data0_reg3 = Register(Data, 0)
        self.data0_reg4 = Register(Data, 0)
        self.data1_reg = Register(Data, 0)
        self.data1_reg2 = Register(Data, 0)
        self.data1_reg3 = Register(Data, 0)
        self.data1_reg4 = Register(Data, 0)
        declare_inputs(self, *BIT_INPUTS)         # bit<k>_reg, bit<k>_in: the default PE's
        self.data0_in = DelayInput()
        self.data1_in = DelayInput()
        self.core = make_core(WIDTH, Inst, make_alu(WIDTH))()

    @name_outputs(res=Data, res_p=Bit)
    def __call__(self, inst: Inst, data0: Data, data1: Data, bit0: Bit, bit1: Bit, bit2: Bit):
        # ---- input modes (the delay chains latch every cycle: r0k = data0 k cycles ago)
        d = self.bit0_in(inst.bit0_mode, bit0, self.bit0_reg(bit0), inst.bit0_const)
        e = self.bit1_in(inst.bit1_mode, bit1, self.bit1_reg(bit1), inst.bit1_const)
        f = self.bit2_in(inst.bit2_mode, bit2, self.bit2_reg(bit2), inst.bit2_const)
        r01 = self.data0_reg(data0)
        r02 = self.data0_reg2(r01)
        r03 = self.data0_reg3(r02)
        r04 = self.data0_reg4(r03)
        r11 = self.data1_reg(data1)
        r12 = self.data1_reg2(r11)
        r13 = self.data1_reg3(r12)
        r14 = self.data1_reg4(r13)
        a = self.data0_in(inst.data0_mode, data0, r01, r02, r03, r04, inst.data0_const)
        b = self.data1_in(inst.data1_mode, data1, r11, r12, r13, r14, inst.data1_const)
        # ---- the default PE's ALU, LUT and condition code
        return self.core(inst, a, b, d, e, f)
