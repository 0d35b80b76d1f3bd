"""The default CGRA PE with a third data input and two three-input ALU ops ("D3").

Identical to :mod:`peak.examples.cgra_pe` (the Amber/Garnet-style PE, 16-bit datapath)
except for a third data input ``data2`` (mode field ``data2_mode``, constant
``data2_const``, delay register) and the opcodes ``Add3`` (``res = a + b + c``) and
``MulAdd`` (``res = (a * b)[15:0] + c``), ``c`` = data2 after its mode; both set ``C`` and
``V`` to 0. With them one PE covers ``pattern.add3`` and ``pattern.muladd`` (and their
constant-operand variants: the constant goes to an input in CONST mode), e.g. the
multiply-accumulate chains of gaussian and harris. ``configs/d3.toml`` is the default
32x16 array with this PE. The condition codes ``Cond`` and input modes ``Mode`` are the
default PE's own types (imported, so identical by construction; hwtypes would otherwise
merge the two structurally equal enums into whichever module defined them first, and the
spec hash, which covers the modules of the ISA's field types, would depend on import
order), and so are its units (:mod:`peak.examples.cgra_pe`): the inputs with their modes
(:func:`~peak.examples.cgra_pe.declare_inputs`), the integer ALU
(:func:`~peak.examples.cgra_pe.make_int_alu`, fed XOR, Add3 and MulAdd by :class:`ALU3`),
the LUT and the condition code.

Inputs: ``data0``, ``data1``, ``data2`` (16 bits), ``bit0``, ``bit1``, ``bit2`` (1 bit), each
with a mode field (``Mode``: ``BYPASS``, ``DELAY`` = registered one cycle earlier, ``CONST``
= the instruction field ``<input>_const``). Outputs: ``res`` (16 bits), ``res_p`` (1 bit).
Below, ``a``/``b``/``c`` are data0/data1/data2 and ``d``/``e``/``f`` bit0/bit1/bit2 after
their modes.

ALU (``alu`` field): the default PE's opcodes (codes 0..13, its module docstring's table at
16 bits) and::

    Add3   res = a + b + c
    MulAdd res = (a*b)[15:0] + c

Flags and ``res_p`` (``cond``: the flag combinations or the LUT): the default PE's. The
CoreIR / commonlib / corebit ops covered are the default PE's plus ``pattern.add3`` (Add3)
and ``pattern.muladd`` (MulAdd), with their constant-operand variants; the rewrite rules
are synthesised from this spec (``peak/rules``).
"""
from hwtypes import Bit, BitVector

from peak.examples.cgra_pe import (BIT_INPUTS, LUT3, Cond, Mode, declare_inputs,
                                   make_cond_code, make_inst, make_int_alu, make_ops)
from peak.spec import Peak, name_outputs

__all__ = ["ALU", "ALU3", "Cond", "Inst", "Mode", "PE"]

WIDTH = 16
Data = BitVector[WIDTH]
ALU = make_ops(__name__, add=("Add3", "MulAdd"))
"""The opcodes: the default PE's (codes 0..13), then Add3 = 14, MulAdd = 15 (4 bits)."""
Inst = make_inst(WIDTH, ALU, data_inputs=3)


class ALU3(Peak):
    """The ALU (stateless sub-PE): instruction ``op`` (:data:`ALU`), inputs ``signed`` (1 bit),
    ``a``, ``b``, ``c`` (16 bits), ``d`` (1 bit); outputs ``res`` (16 bits), ``C``, ``V`` (1
    bit): the default PE's opcodes, then Add3 = ``a + b + c``, MulAdd = ``(a*b)[15:0] + c``
    (C = V = 0)."""

    def __init__(self):
        self.int_alu = make_int_alu(WIDTH, ALU)()

    @name_outputs(res=Data, C=Bit, V=Bit)
    def __call__(self, op: ALU, signed: Bit, a: Data, b: Data, c: Data, d: Bit):
        if op == ALU.XOR:
            res = a ^ b
        elif op == ALU.Add3:
            res = a + b + c
        else:
            res = a * b + c
        return self.int_alu(op, signed, a, b, d, res, Bit(0))


class PE(Peak):
    def __init__(self):
        declare_inputs(self, ("data0", Data), ("data1", Data), ("data2", Data), *BIT_INPUTS)
        self.alu = ALU3()
        self.lut = LUT3()
        self.cond = make_cond_code(WIDTH)()

    @name_outputs(res=Data, res_p=Bit)
    def __call__(self, inst: Inst, data0: Data, data1: Data, data2: Data,
                 bit0: Bit, bit1: Bit, bit2: Bit):
        # ---- input modes (the delay registers latch every cycle)
        a = self.data0_in(inst.data0_mode, data0, self.data0_reg(data0), inst.data0_const)
        b = self.data1_in(inst.data1_mode, data1, self.data1_reg(data1), inst.data1_const)
        c = self.data2_in(inst.data2_mode, data2, self.data2_reg(data2), inst.data2_const)
        d = self.bit0_in(inst.bit0_mode, bit0, self.bit0_reg(bit0), inst.bit0_const)
        e = self.bit1_in(inst.bit1_mode, bit1, self.bit1_reg(bit1), inst.bit1_const)
        f = self.bit2_in(inst.bit2_mode, bit2, self.bit2_reg(bit2), inst.bit2_const)
        # ---- ALU (three operands), LUT, condition code
        res, C, V = self.alu(inst.alu, inst.signed, a, b, c, d)
        res_p = self.cond(inst.cond, res, C, V, self.lut(inst.lut, d, e, f))
        return res, res_p
