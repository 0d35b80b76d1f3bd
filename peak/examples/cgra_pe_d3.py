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
order).

Inputs: ``data0``, ``data1``, ``data2`` (16 bits), ``bit0``, ``bit1``, ``bit2`` (1 bit). Each input has
a mode field (``Mode``: ``BYPASS`` = the input itself, ``DELAY`` = the input registered one
cycle earlier (a pipeline register that latches every cycle), ``CONST`` = the constant in
the instruction field ``<input>_const``). Outputs: ``res`` (16 bits), ``res_p`` (1 bit).
Below, ``a``/``b``/``c`` are data0/data1/data2 and ``d``/``e``/``f`` are bit0/bit1/bit2 after their modes.

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
    Add3   res = a + b + c
    MulAdd res = (a*b)[15:0] + c

Flags: ``Z = res == 0``, ``N = res[15]``, ``C``/``V`` as above (0 for other ops). ``res_p`` is
chosen by ``cond`` (``Cond``): Z, N, C, V, EQ (= Z), NE, ULT, ULE, UGT, UGE, SLT, SLE, SGT,
SGE (the usual combinations of the flags after ``Sub``), or LUT = ``lut[{f, e, d}]`` (the
8-bit table in the instruction indexed by the three 1-bit inputs, ``d`` the LSB).

CoreIR / commonlib / corebit ops of ``mapper/data/coreir/*.json`` and the PE op that
covers each (the rewrite rules are synthesised from this spec, ``peak/rules``)::

    coreir.add            Add                         (all kernels but pointwise)
    coreir.sub            Sub                         (harris)
    coreir.mul            MULT0                       (cascade, conv_3_3, conv_layer,
                                                       gaussian, harris, mobilenet,
                                                       pointwise, resnet_layer_gen)
    coreir.ashr           SHR, signed                 (harris)
    coreir.lshr           SHR, unsigned               (down_sample, gaussian)
    coreir.slt / sle      Sub + cond SLT / SLE -> res_p   (harris)
    coreir.mux            Sel (select on bit0)        (harris)
    coreir.const          an input in CONST mode      (every kernel)
    commonlib.smax        GTE, signed                 (conv_layer, harris)
    commonlib.smin        LTE, signed                 (harris)
    corebit.and           LUT with table 0x88 (d & e) -> res_p   (harris)

Also covered (used by the rule library): coreir.shl (SHL), and/or/xor (And/Or/XOR),
eq/neq/ult/ule/ugt/uge/sgt/sge (Sub + cond), commonlib.umax/umin (GTE/LTE unsigned),
abs (Abs), mult_middle (MULT1), corebit.or/xor/not/mux/const (LUT, CONST mode);
pattern.add3 (Add3) and pattern.muladd (MulAdd), with their constant-operand variants.
"""
from hwtypes import Bit, BitVector, SIntVector
from hwtypes.adt import Enum, Product

from peak.examples.cgra_pe import Cond, Mode
from peak.spec import Peak, Register, name_outputs

WIDTH = 16
Data = BitVector[WIDTH]
SData = SIntVector[WIDTH]
Data32 = BitVector[2 * WIDTH]
LUTTable = BitVector[8]


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
    Add3 = 14
    MulAdd = 15


class Inst(Product):
    alu = ALU
    signed = Bit
    cond = Cond
    lut = LUTTable
    data0_mode = Mode
    data0_const = Data
    data1_mode = Mode
    data1_const = Data
    data2_mode = Mode
    data2_const = Data
    bit0_mode = Mode
    bit0_const = Bit
    bit1_mode = Mode
    bit1_const = Bit
    bit2_mode = Mode
    bit2_const = Bit


class PE(Peak):
    def __init__(self):
        self.data0_reg = Register(Data, 0)
        self.data1_reg = Register(Data, 0)
        self.data2_reg = Register(Data, 0)
        self.bit0_reg = Register(Bit, 0)
        self.bit1_reg = Register(Bit, 0)
        self.bit2_reg = Register(Bit, 0)

    @name_outputs(res=Data, res_p=Bit)
    def __call__(self, inst: Inst, data0: Data, data1: Data, data2: Data,
                 bit0: Bit, bit1: Bit, bit2: Bit):
        # ---- input modes (the delay registers latch every cycle)
        r0 = self.data0_reg(data0)
        r1 = self.data1_reg(data1)
        r2 = self.data2_reg(data2)
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
        if inst.data2_mode == Mode.DELAY:
            c = r2
        elif inst.data2_mode == Mode.CONST:
            c = inst.data2_const
        else:
            c = data2
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
        elif inst.alu == ALU.XOR:
            res = a ^ b
        elif inst.alu == ALU.Add3:
            res = a + b + c
        else:
            res = a * b + c

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
