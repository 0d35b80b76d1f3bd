"""The default CGRA PE with a delay chain of up to four cycles per data input ("D2").

Identical to :mod:`peak.examples.cgra_pe` (the Amber/Garnet-style PE, 16-bit datapath:
same ALU opcodes, flags, condition codes and LUT; the types ``ALU``, ``Cond``, ``Mode``
and ``LUTTable`` are the default PE's own, imported, so identical by construction: hwtypes
would otherwise merge structurally equal enums into whichever module defined them first,
and the spec hash, which covers the modules of the ISA's field types, would depend on
import order) except for the modes of the two 16-bit data inputs: each has a chain of four
16-bit registers that latch every cycle, and its mode field (``DelayMode``, 3 bits) selects
the input itself or the input 1..4 cycles earlier. With it the mapper absorbs a chain of
up to four netlist registers in front of a data input into the PE
(:func:`mapper.pack.input_register`), and branch-delay matching adds up to four cycles of
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

ALU (``alu`` field; ``signed`` selects the signed variant where it matters)::

    Add    res = a + b             C = carry out, V = signed overflow
    Sub    res = a - b             C = 1 iff no borrow (a >=u b), V = signed overflow
    Abs    res = |a|  (signed)
    GTE    res = max(a, b)         C = a >= b   (signed or unsigned)
    LTE    res = min(a, b)         C = a <= b   (signed or unsigned)
    Sel    res = d ? a : b
    SHR    res = a >> b[3:0]       arithmetic if signed else logical
    SHL    res = a << b[3:0]
    MULT0  res = (a*b)[15:0]       MULT1 = (a*b)[23:8], MULT2 = (a*b)[31:16] of the 32-bit
                                   product of the sign- (signed) or zero-extended operands
    And / Or / XOR   bitwise

Flags: ``Z = res == 0``, ``N = res[15]``, ``C``/``V`` as above (0 for other ops). ``res_p`` is
chosen by ``cond`` (``Cond``): Z, N, C, V, EQ (= Z), NE, ULT, ULE, UGT, UGE, SLT, SLE, SGT,
SGE (the usual combinations of the flags after ``Sub``), or LUT = ``lut[{f, e, d}]`` (the
8-bit table in the instruction indexed by the three 1-bit inputs, ``d`` the LSB).

The CoreIR / commonlib / corebit ops covered and the rewrite rules are those of the default
PE (:mod:`peak.examples.cgra_pe`); the rules are synthesised from this spec (``peak/rules``).
"""
from hwtypes import Bit, BitVector, SIntVector
from hwtypes.adt import Enum, Product

from peak.examples.cgra_pe import ALU, Cond, LUTTable, Mode
from peak.spec import Peak, Register, name_outputs

WIDTH = 16
#: cycles of the longest delay of a data input (the chain length)
MAX_DELAY = 4
Data = BitVector[WIDTH]
SData = SIntVector[WIDTH]
Data32 = BitVector[2 * WIDTH]


class DelayMode(Enum):
    """Mode of a 16-bit data input: the default PE's three modes plus 2..4-cycle delays."""

    BYPASS = 0
    DELAY = 1
    CONST = 2
    DELAY2 = 3
    DELAY3 = 4
    DELAY4 = 5


class Inst(Product):
    alu = ALU
    signed = Bit
    cond = Cond
    lut = LUTTable
    data0_mode = DelayMode
    data0_const = Data
    data1_mode = DelayMode
    data1_const = Data
    bit0_mode = Mode
    bit0_const = Bit
    bit1_mode = Mode
    bit1_const = Bit
    bit2_mode = Mode
    bit2_const = Bit


class PE(Peak):
    def __init__(self):
        self.data0_reg = Register(Data, 0)
        self.data0_reg2 = Register(Data, 0)
        self.data0_reg3 = Register(Data, 0)
        self.data0_reg4 = Register(Data, 0)
        self.data1_reg = Register(Data, 0)
        self.data1_reg2 = Register(Data, 0)
        self.data1_reg3 = Register(Data, 0)
        self.data1_reg4 = Register(Data, 0)
        self.bit0_reg = Register(Bit, 0)
        self.bit1_reg = Register(Bit, 0)
        self.bit2_reg = Register(Bit, 0)

    @name_outputs(res=Data, res_p=Bit)
    def __call__(self, inst: Inst, data0: Data, data1: Data, bit0: Bit, bit1: Bit, bit2: Bit):
        # ---- input modes (the delay chains latch every cycle: r0k = data0 k cycles ago)
        r01 = self.data0_reg(data0)
        r02 = self.data0_reg2(r01)
        r03 = self.data0_reg3(r02)
        r04 = self.data0_reg4(r03)
        r11 = self.data1_reg(data1)
        r12 = self.data1_reg2(r11)
        r13 = self.data1_reg3(r12)
        r14 = self.data1_reg4(r13)
        rd = self.bit0_reg(bit0)
        re = self.bit1_reg(bit1)
        rf = self.bit2_reg(bit2)
        if inst.data0_mode == DelayMode.DELAY:
            a = r01
        elif inst.data0_mode == DelayMode.DELAY2:
            a = r02
        elif inst.data0_mode == DelayMode.DELAY3:
            a = r03
        elif inst.data0_mode == DelayMode.DELAY4:
            a = r04
        elif inst.data0_mode == DelayMode.CONST:
            a = inst.data0_const
        else:
            a = data0
        if inst.data1_mode == DelayMode.DELAY:
            b = r11
        elif inst.data1_mode == DelayMode.DELAY2:
            b = r12
        elif inst.data1_mode == DelayMode.DELAY3:
            b = r13
        elif inst.data1_mode == DelayMode.DELAY4:
            b = r14
        elif inst.data1_mode == DelayMode.CONST:
            b = inst.data1_const
        else:
            b = data1
        if inst.bit0_mode == Mode.DELAY:
            d = rd
        elif inst.bit0_mode == Mode.CONST:
            d = inst.bit0_const
        else:
            d = bit0
        if inst.bit1_mode == Mode.DELAY:
            e = re
        elif inst.bit1_mode == Mode.CONST:
            e = inst.bit1_const
        else:
            e = bit1
        if inst.bit2_mode == Mode.DELAY:
            f = rf
        elif inst.bit2_mode == Mode.CONST:
            f = inst.bit2_const
        else:
            f = bit2

        # ---- shared subterms
        is_sub = inst.alu == ALU.Sub
        b_add = ~b if is_sub else b
        sum_, carry = a.adc(b_add, is_sub)
        overflow = (a[WIDTH - 1] == b_add[WIDTH - 1]) & (sum_[WIDTH - 1] != a[WIDTH - 1])
        if inst.signed:
            ge = a.bvsge(b)
            le = a.bvsle(b)
            a32 = a.sext(WIDTH)
            b32 = b.sext(WIDTH)
            shr = a.bvashr(b & 15)
        else:
            ge = a.bvuge(b)
            le = a.bvule(b)
            a32 = a.zext(WIDTH)
            b32 = b.zext(WIDTH)
            shr = a.bvlshr(b & 15)
        prod = a32 * b32
        zero = Bit(0)

        # ---- ALU: one ite chain selected by the opcode
        C = zero
        V = zero
        if inst.alu == ALU.Add:
            res = sum_
            C = carry
            V = overflow
        elif inst.alu == ALU.Sub:
            res = sum_
            C = carry
            V = overflow
        elif inst.alu == ALU.Abs:
            res = (-a) if a[WIDTH - 1] else a
        elif inst.alu == ALU.GTE:
            res = a if ge else b
            C = ge
        elif inst.alu == ALU.LTE:
            res = a if le else b
            C = le
        elif inst.alu == ALU.Sel:
            res = a if d else b
        elif inst.alu == ALU.SHR:
            res = shr
        elif inst.alu == ALU.SHL:
            res = a.bvshl(b & 15)
        elif inst.alu == ALU.MULT0:
            res = a * b
        elif inst.alu == ALU.MULT1:
            res = prod[8:8 + WIDTH]
        elif inst.alu == ALU.MULT2:
            res = prod[WIDTH:2 * WIDTH]
        elif inst.alu == ALU.And:
            res = a & b
        elif inst.alu == ALU.Or:
            res = a | b
        else:
            res = a ^ b

        Z = res == 0
        N = res[WIDTH - 1]

        # ---- 3-input LUT
        lut = inst.lut
        x0 = lut[1] if d else lut[0]
        x1 = lut[3] if d else lut[2]
        x2 = lut[5] if d else lut[4]
        x3 = lut[7] if d else lut[6]
        y0 = x1 if e else x0
        y1 = x3 if e else x2
        lut_out = y1 if f else y0

        # ---- condition code
        if inst.cond == Cond.Z:
            res_p = Z
        elif inst.cond == Cond.N:
            res_p = N
        elif inst.cond == Cond.C:
            res_p = C
        elif inst.cond == Cond.V:
            res_p = V
        elif inst.cond == Cond.EQ:
            res_p = Z
        elif inst.cond == Cond.NE:
            res_p = not Z
        elif inst.cond == Cond.ULT:
            res_p = not C
        elif inst.cond == Cond.ULE:
            res_p = (not C) or Z
        elif inst.cond == Cond.UGT:
            res_p = C and not Z
        elif inst.cond == Cond.UGE:
            res_p = C
        elif inst.cond == Cond.SLT:
            res_p = N != V
        elif inst.cond == Cond.SLE:
            res_p = Z or (N != V)
        elif inst.cond == Cond.SGT:
            res_p = (not Z) and (N == V)
        elif inst.cond == Cond.SGE:
            res_p = N == V
        else:
            res_p = lut_out
        return res, res_p
