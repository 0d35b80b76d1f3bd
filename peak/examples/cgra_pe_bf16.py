"""The default CGRA PE plus a BFloat16 unit ("BF16"): the integer PE's opcodes unchanged
(same codes), and BFloat16 opcodes using the ``peak.bf16`` sub-PEs.

``peak.examples.cgra_pe_bf16:PE`` (16 bits; ``configs/bf16.toml`` is the default 32x16 array
with this PE). Inputs, outputs, input modes (``Mode``), condition codes (``Cond``), flags and
the LUT are those of :mod:`peak.examples.cgra_pe` (``Cond``, ``Mode`` and ``LUTTable`` are
imported from it, so identical by construction). The ALU enum is the default PE's, codes
0..13 unchanged, plus (``a``/``b`` = data0/data1 after their modes, bf16 encodings)::

    FAdd   res = a + b                 FMax  res = maximum(a, b)   (IEEE 754-2019 §9.6)
    FSub   res = a - b                 FMin  res = minimum(a, b)
    FMul   res = a * b
    FLT    res = C = a < b             (res 0 / 1; read it as res_p with cond C)
    FLE    res = C = a <= b
    FEQ    res = C = a == b
    I2F    res = bf16(a)               a an int16 if ``signed``, else a uint16 (nearest even)
    F2I    res = a truncated toward zero, saturated to int16 (uint16 unless ``signed``);
           C = NaN or saturated

The FP arithmetic opcodes set ``C`` = ``V`` = 0. Rounding (nearest even), subnormals
(flushed), NaN (``0x7FC0``): :mod:`peak.bf16`. The class attribute ``ir_float = True``
makes the BFloat16 IR ops (``float.*``, :data:`peak.ir.FLOAT_PRIMITIVES`) rule targets of
this PE; their rules are the FP opcodes above (``float.gt`` / ``float.ge`` are FLT / FLE
with the operands swapped; ``float.lt`` / ``le`` / ``eq`` etc. drive ``res_p`` through
cond ``C``).

Why a copy of the default PE's ``__call__`` and not an extension: a spec's behaviour is the
body of one ``__call__`` (the DSL has no helper functions and no inheritance of bodies), and
the FP opcodes must read the operands *after* the input modes, which are computed inside
that body. Using the default PE as a sub-PE would duplicate its input-mode muxes and delay
registers in this PE. So the body is the default PE's at 16 bits with the FP branches
added; the types are imported.
"""
from hwtypes import Bit, BitVector
from hwtypes.adt import Enum, Product

from peak.bf16 import BF16Add, BF16Cmp, BF16Mul, BF16ToInt16, Int16ToBF16
from peak.examples.cgra_pe import LUTTable, Cond, Mode
from peak.spec import Peak, Register, name_outputs

WIDTH = 16
Data = BitVector[WIDTH]


class ALU(Enum):
    Add = 0
    Sub = 1
    Abs = 2
    GTE = 3
    LTE = 4
    Sel = 5
    SHR = 6
    SHL = 7
    MULT0 = 8
    MULT1 = 9
    MULT2 = 10
    And = 11
    Or = 12
    XOR = 13
    FAdd = 14
    FSub = 15
    FMul = 16
    FMax = 17
    FMin = 18
    FLT = 19
    FLE = 20
    FEQ = 21
    I2F = 22
    F2I = 23


class Inst(Product):
    alu = ALU
    signed = Bit
    cond = Cond
    lut = LUTTable
    data0_mode = Mode
    data0_const = Data
    data1_mode = Mode
    data1_const = Data
    bit0_mode = Mode
    bit0_const = Bit
    bit1_mode = Mode
    bit1_const = Bit
    bit2_mode = Mode
    bit2_const = Bit


class PE(Peak):
    ir_float = True
    width = WIDTH

    def __init__(self):
        self.data0_reg = Register(Data, 0)
        self.data1_reg = Register(Data, 0)
        self.bit0_reg = Register(Bit, 0)
        self.bit1_reg = Register(Bit, 0)
        self.bit2_reg = Register(Bit, 0)
        self.fadd = BF16Add()
        self.fmul = BF16Mul()
        self.fcmp = BF16Cmp()
        self.i2f = Int16ToBF16()
        self.f2i = BF16ToInt16()

    @name_outputs(res=Data, res_p=Bit)
    def __call__(self, inst: Inst, data0: Data, data1: Data, bit0: Bit, bit1: Bit, bit2: Bit):
        # ---- input modes (the delay registers latch every cycle)
        r0 = self.data0_reg(data0)
        r1 = self.data1_reg(data1)
        rd = self.bit0_reg(bit0)
        re = self.bit1_reg(bit1)
        rf = self.bit2_reg(bit2)
        if inst.data0_mode == Mode.DELAY:
            a = r0
        elif inst.data0_mode == Mode.CONST:
            a = inst.data0_const
        else:
            a = data0
        if inst.data1_mode == Mode.DELAY:
            b = r1
        elif inst.data1_mode == Mode.CONST:
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
        overflow = (a[15] == b_add[15]) & (sum_[15] != a[15])
        if inst.signed:
            ge = a.bvsge(b)
            le = a.bvsle(b)
            a32 = a.sext(16)
            b32 = b.sext(16)
            shr = a.bvashr(b & 15)
        else:
            ge = a.bvuge(b)
            le = a.bvule(b)
            a32 = a.zext(16)
            b32 = b.zext(16)
            shr = a.bvlshr(b & 15)
        prod = a32 * b32
        zero = Bit(0)

        # ---- BFloat16 unit (peak.bf16 sub-PEs, one instance per operation)
        fsum = self.fadd(inst.alu == ALU.FSub, a, b)
        fprod = self.fmul(Bit(0), a, b)
        flt, fle, feq, fmax, fmin = self.fcmp(Bit(0), a, b)
        fconv = self.i2f(inst.signed, a)
        fint, finvalid = self.f2i(inst.signed, a)

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
            res = (-a) if a[15] else a
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
            res = prod[8:24]
        elif inst.alu == ALU.MULT2:
            res = prod[16:32]
        elif inst.alu == ALU.And:
            res = a & b
        elif inst.alu == ALU.Or:
            res = a | b
        elif inst.alu == ALU.XOR:
            res = a ^ b
        elif (inst.alu == ALU.FAdd) | (inst.alu == ALU.FSub):
            res = fsum
        elif inst.alu == ALU.FMul:
            res = fprod
        elif inst.alu == ALU.FMax:
            res = fmax
        elif inst.alu == ALU.FMin:
            res = fmin
        elif inst.alu == ALU.FLT:
            res = flt.ite(Data(1), Data(0))
            C = flt
        elif inst.alu == ALU.FLE:
            res = fle.ite(Data(1), Data(0))
            C = fle
        elif inst.alu == ALU.FEQ:
            res = feq.ite(Data(1), Data(0))
            C = feq
        elif inst.alu == ALU.I2F:
            res = fconv
        else:
            res = fint
            C = finvalid

        Z = res == 0
        N = res[15]

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
