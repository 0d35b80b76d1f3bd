"""A CGRA PE whose instruction is a ``Sum`` of three formats (issue 39, item 5): ALU, compare
and LUT instructions, each a Product with its own operand fields, as a RISC ISA has R-, I-
and branch formats. Same ports as the default PE (:mod:`peak.examples.cgra_pe`), so the
mapper's targets map onto it: inputs ``data0``, ``data1`` (16 bits), ``bit0``, ``bit1``,
``bit2`` (1 bit); outputs ``res`` (16 bits), ``res_p`` (1 bit). Configuration:
``configs/small_sum.toml`` (the 8x8 array with this PE).

Instruction ``Inst = Sum[AluInst, CmpInst, LutInst]``: 46 bits, LSB first (two 32-bit config
registers). The assembler (:mod:`peak.assembler`) puts the payload (the widest format, 44
bits) at bits [43:0] and the 2-bit tag at bits [45:44]; hwtypes' Sum is unordered, so the tag
codes follow the formats' names sorted: ``AluInst`` = 0, ``CmpInst`` = 1, ``LutInst`` = 2 (3
is invalid). A narrower format leaves the payload bits above it 0 (ignored). Formats (bit
ranges inclusive, as ``pe.json`` gives them, field names ``<format>.<field>``, the tag
``_tag``)::

    AluInst (41 bits)  [3:0] op (AluOp)  [4] signed
                       [6:5] data0_mode (Mode)  [22:7] data0_const
                       [24:23] data1_mode       [40:25] data1_const
    CmpInst (44 bits)  [2:0] op (CmpOp)  [3] signed  [4] sel_bit0
                       [6:5] data0_mode  [22:7] data0_const  [24:23] data1_mode
                       [40:25] data1_const  [42:41] bit0_mode  [43] bit0_const
    LutInst (17 bits)  [7:0] lut  [9:8] bit0_mode  [10] bit0_const  [12:11] bit1_mode
                       [13] bit1_const  [15:14] bit2_mode  [16] bit2_const

Each operand has a mode (``Mode``: ``BYPASS`` = the input, ``DELAY`` = the input one cycle
earlier (a register latching every cycle, whatever the format), ``CONST`` = the format's
``<input>_const``). ``a``/``b`` are data0/data1 and ``d``/``e``/``f`` bit0/bit1/bit2 after
their modes.

``AluInst`` (``res_p`` = carry out for Add/Sub (1 iff no borrow for Sub), else 0)::

    Add 0  a + b          Sub 1  a - b          Mul 2  (a*b)[15:0]
    MulMid 3  (a*b)[23:8] of the 32-bit product of the sign- (signed) or zero-extended
              operands (the default PE's MULT1)
    Shr 4  a >> b[3:0] (arithmetic if signed)   Shl 5  a << b[3:0]
    And 6  a & b   Or 7  a | b   Xor 8  a ^ b   Abs 9  |a| (signed)

``CmpInst``: ``res_p`` = the comparison ``op`` of ``a`` and ``b`` (EQ 0, NE 1, LT 2, LE 3,
GT 4, GE 5; signed or unsigned by ``signed``) and ``res`` = ``a`` if ``s`` else ``b``, ``s`` = ``d``
(bit0 after its mode) when ``sel_bit0`` else the comparison: max = (GE, sel_bit0 = 0), min =
(LE), ``coreir.mux`` = (sel_bit0 = 1).

``LutInst``: ``res_p`` = ``lut[{f, e, d}]`` (``d`` the LSB), ``res`` = 0.

Rewrite rules (``cgra rules --pe peak.examples.cgra_pe_sum:PE``, synthesised from this
spec; 72 of the 91 integer targets found, as on the default PE), the format and opcode of
each CoreIR op::

    AluInst   coreir.add, sub, mul, and, or, xor, not (Xor with all ones), const, shl /
              lshr / ashr by a constant (Shr, signed for ashr), commonlib.abs (Abs),
              mult_middle (MulMid, signed), coreir.uge / ule (Sub: res_p = no borrow)
    CmpInst   coreir.eq, neq, ult ... sge (res_p), commonlib.smax / umax (GT), smin / umin
              (LT), pattern.select_* (compare and select in one PE), coreir.mux (sel_bit0)
    LutInst   corebit.and (0x88), or (0xEE), xor (0x66), not (0x55), mux (0xCA), const
    2 PEs     commonlib.absd (Sub, then Abs)

pointwise (``x * 2 + 1``) maps to ``coreir.mul[in1=const]`` and ``coreir.add[in1=const]``
(2 PEs), gaussian to 9 ``coreir.mul[in1=const]``, 8 ``coreir.add`` and one
``coreir.lshr[in1=const]`` (18 PEs), all ALU-format instructions, the PE counts of the
default PE. No rule (as on the default PE): the shifts by a variable amount (the IR
shifts by all 16 bits of ``b``, the PE by ``b[3:0]``) and by a constant ``in0``, and the
multi-op patterns muladd, add3, add_lshr, add_ashr (one op per instruction here).

The mapper reads an input's mode field as ``<format>.<port>_mode`` of the format an
instance's tag selects (:func:`mapper.backend.pack.mode_field_name`), so pack and
branch-delay matching put registers in front of PE inputs into the DELAY modes as on the
default PE (``data<k>_mode``).

Known answer (the PEak paper's 2 + 3*5 = 17 on two PEs): ``Inst(AluInst(AluOp.Mul, ...))``
on ``data0 = 3``, ``data1 = 5`` gives ``res = 15``; ``AluOp.Add`` on 15 and 2 gives 17;
``CmpInst(CmpOp.GE, signed=1)`` on ``-3``, ``2`` gives ``res = 2``, ``res_p = 0``;
``LutInst(lut=0x88)`` (``d & e``) on ``bit0 = bit1 = 1`` gives ``res_p = 1``.
"""
from hwtypes import Bit, BitVector
from hwtypes.adt import Enum, Product, Sum

from peak.examples.cgra_pe import Mode
from peak.spec import Peak, Register, name_outputs

__all__ = ["AluOp", "CmpOp", "AluInst", "CmpInst", "LutInst", "Inst", "Mode", "PE", "WIDTH"]

WIDTH = 16
SHIFT_MASK = WIDTH - 1
HALF = WIDTH // 2
Data = BitVector[WIDTH]


class AluOp(Enum):
    Add = 0
    Sub = 1
    Mul = 2
    MulMid = 3
    Shr = 4
    Shl = 5
    And = 6
    Or = 7
    Xor = 8
    Abs = 9


class CmpOp(Enum):
    EQ = 0
    NE = 1
    LT = 2
    LE = 3
    GT = 4
    GE = 5


class AluInst(Product):
    op = AluOp
    signed = Bit
    data0_mode = Mode
    data0_const = Data
    data1_mode = Mode
    data1_const = Data


class CmpInst(Product):
    op = CmpOp
    signed = Bit
    sel_bit0 = Bit
    data0_mode = Mode
    data0_const = Data
    data1_mode = Mode
    data1_const = Data
    bit0_mode = Mode
    bit0_const = Bit


class LutInst(Product):
    lut = BitVector[8]
    bit0_mode = Mode
    bit0_const = Bit
    bit1_mode = Mode
    bit1_const = Bit
    bit2_mode = Mode
    bit2_const = Bit


Inst = Sum[AluInst, CmpInst, LutInst]


class PE(Peak):
    """The Sum-instruction PE (module docstring): delay registers ``data0_reg`` ..
    ``bit2_reg`` (latching every cycle), then one of the three formats."""

    def __init__(self):
        self.data0_reg = Register(Data, 0)
        self.data1_reg = Register(Data, 0)
        self.bit0_reg = Register(Bit, 0)
        self.bit1_reg = Register(Bit, 0)
        self.bit2_reg = Register(Bit, 0)

    @name_outputs(res=Data, res_p=Bit)
    def __call__(self, inst: Inst, data0: Data, data1: Data, bit0: Bit, bit1: Bit, bit2: Bit):
        data0_d = self.data0_reg(data0)
        data1_d = self.data1_reg(data1)
        bit0_d = self.bit0_reg(bit0)
        bit1_d = self.bit1_reg(bit1)
        bit2_d = self.bit2_reg(bit2)
        alu = inst[AluInst]
        cmp = inst[CmpInst]
        lut = inst[LutInst]
        if alu.match:
            ai = alu.value
            if ai.data0_mode == Mode.DELAY:
                a = data0_d
            elif ai.data0_mode == Mode.CONST:
                a = ai.data0_const
            else:
                a = data0
            if ai.data1_mode == Mode.DELAY:
                b = data1_d
            elif ai.data1_mode == Mode.CONST:
                b = ai.data1_const
            else:
                b = data1
            is_sub = ai.op == AluOp.Sub
            b_add = ~b if is_sub else b
            sum_, carry = a.adc(b_add, is_sub)
            if ai.signed:
                a32 = a.sext(WIDTH)
                b32 = b.sext(WIDTH)
                shr = a.bvashr(b & SHIFT_MASK)
            else:
                a32 = a.zext(WIDTH)
                b32 = b.zext(WIDTH)
                shr = a.bvlshr(b & SHIFT_MASK)
            res_p = Bit(0)
            if ai.op == AluOp.Add:
                res = sum_
                res_p = carry
            elif ai.op == AluOp.Sub:
                res = sum_
                res_p = carry
            elif ai.op == AluOp.Mul:
                res = a * b
            elif ai.op == AluOp.MulMid:
                res = (a32 * b32)[HALF:HALF + WIDTH]
            elif ai.op == AluOp.Shr:
                res = shr
            elif ai.op == AluOp.Shl:
                res = a.bvshl(b & SHIFT_MASK)
            elif ai.op == AluOp.And:
                res = a & b
            elif ai.op == AluOp.Or:
                res = a | b
            elif ai.op == AluOp.Xor:
                res = a ^ b
            else:
                res = (-a) if a[WIDTH - 1] else a
        elif cmp.match:
            ci = cmp.value
            if ci.data0_mode == Mode.DELAY:
                a = data0_d
            elif ci.data0_mode == Mode.CONST:
                a = ci.data0_const
            else:
                a = data0
            if ci.data1_mode == Mode.DELAY:
                b = data1_d
            elif ci.data1_mode == Mode.CONST:
                b = ci.data1_const
            else:
                b = data1
            if ci.bit0_mode == Mode.DELAY:
                d = bit0_d
            elif ci.bit0_mode == Mode.CONST:
                d = ci.bit0_const
            else:
                d = bit0
            if ci.signed:
                lt = a.bvslt(b)
                gt = a.bvsgt(b)
            else:
                lt = a.bvult(b)
                gt = a.bvugt(b)
            eq = a == b
            if ci.op == CmpOp.EQ:
                res_p = eq
            elif ci.op == CmpOp.NE:
                res_p = not eq
            elif ci.op == CmpOp.LT:
                res_p = lt
            elif ci.op == CmpOp.LE:
                res_p = not gt
            elif ci.op == CmpOp.GT:
                res_p = gt
            else:
                res_p = not lt
            s = d if ci.sel_bit0 else res_p
            res = a if s else b
        else:
            li = lut.value
            if li.bit0_mode == Mode.DELAY:
                d = bit0_d
            elif li.bit0_mode == Mode.CONST:
                d = li.bit0_const
            else:
                d = bit0
            if li.bit1_mode == Mode.DELAY:
                e = bit1_d
            elif li.bit1_mode == Mode.CONST:
                e = li.bit1_const
            else:
                e = bit1
            if li.bit2_mode == Mode.DELAY:
                f = bit2_d
            elif li.bit2_mode == Mode.CONST:
                f = li.bit2_const
            else:
                f = bit2
            t = li.lut
            x0 = t[1] if d else t[0]
            x1 = t[3] if d else t[2]
            x2 = t[5] if d else t[4]
            x3 = t[7] if d else t[6]
            y0 = x1 if e else x0
            y1 = x3 if e else x2
            res_p = y1 if f else y0
            res = Data(0)
        return res, res_p
