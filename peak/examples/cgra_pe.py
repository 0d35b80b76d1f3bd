"""The default CGRA PE, modelled on the Amber/Garnet PE; width-parameterised.

``PE`` is the 16-bit PE (``make_pe(16)``, referenced as ``peak.examples.cgra_pe:PE``);
``make_pe(w)`` builds the same PE with a ``w``-bit datapath (``w`` a power of two >= 4),
class ``PE<w>``, referenced as ``peak.examples.cgra_pe:make_pe(<w>)`` (e.g. ``pe =
"peak.examples.cgra_pe:make_pe(32)"`` in a configuration with ``data_width = 32``). Below
``W`` is the width (16 for ``PE``).

Inputs: ``data0``, ``data1`` (W bits), ``bit0``, ``bit1``, ``bit2`` (1 bit). Each input has
a mode field (``Mode``: ``BYPASS`` = the input itself, ``DELAY`` = the input registered one
cycle earlier (a pipeline register that latches every cycle), ``CONST`` = the constant in
the instruction field ``<input>_const``). Outputs: ``res`` (W bits), ``res_p`` (1 bit).
Below, ``a``/``b`` are data0/data1 and ``d``/``e``/``f`` are bit0/bit1/bit2 after their modes.

ALU (``alu`` field; ``signed`` selects the signed variant where it matters)::

    Add    res = a + b             C = carry out, V = signed overflow
    Sub    res = a - b             C = 1 iff no borrow (a >=u b), V = signed overflow
    Abs    res = |a|  (signed)
    GTE    res = max(a, b)         C = a >= b   (signed or unsigned)
    LTE    res = min(a, b)         C = a <= b   (signed or unsigned)
    Sel    res = d ? a : b
    SHR    res = a >> b[log2(W)-1:0]   arithmetic if signed else logical (b[3:0] at 16 bits)
    SHL    res = a << b[log2(W)-1:0]
    MULT0  res = (a*b)[W-1:0]      MULT1 = (a*b)[3W/2-1:W/2], MULT2 = (a*b)[2W-1:W] of the
                                   2W-bit product of the sign- (signed) or zero-extended
                                   operands (16 bits: [15:0], [23:8], [31:16])
    And / Or / XOR   bitwise

Flags: ``Z = res == 0``, ``N = res[W-1]``, ``C``/``V`` as above (0 for other ops). ``res_p`` is
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
abs (Abs), mult_middle (MULT1), corebit.or/xor/not/mux/const (LUT, CONST mode).
"""
import functools

from hwtypes import Bit, BitVector, SIntVector
from hwtypes.adt import Enum, Product

from cgra.errors import SpecError
from peak.spec import Peak, Register, name_outputs

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


class Cond(Enum):
    Z = 0
    N = 1
    C = 2
    V = 3
    EQ = 4
    NE = 5
    ULT = 6
    ULE = 7
    UGT = 8
    UGE = 9
    SLT = 10
    SLE = 11
    SGT = 12
    SGE = 13
    LUT = 14


class Mode(Enum):
    BYPASS = 0
    DELAY = 1
    CONST = 2


@functools.lru_cache(maxsize=None)
def make_inst(width: int = 16) -> type:
    """The instruction type (``Inst``, a Product) of the ``width``-bit PE: its constant fields
    ``data0_const`` / ``data1_const`` are ``width`` bits (cached: one type per width)."""
    Data = BitVector[width]

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
    return Inst


@functools.lru_cache(maxsize=None)
def make_pe(width: int = 16) -> type:
    """The PE spec class with a ``width``-bit datapath (module docstring); ``make_pe(16)`` is
    :data:`PE`. Cached: one class per width (``PE`` at 16 bits, ``PE<width>`` otherwise,
    referenced as ``peak.examples.cgra_pe:make_pe(<width>)``). Raises :class:`SpecError`
    unless ``width`` is a power of two >= 4 (the shift amount is the low ``log2(width)``
    bits of ``b``; ``MULT1`` takes the middle ``width`` bits of the product)."""
    if not isinstance(width, int) or isinstance(width, bool) or width < 4 \
            or width & (width - 1):
        raise SpecError(f"make_pe({width!r}): the CGRA PE's data width must be a power of two "
                        f">= 4 (e.g. 16 or 32)")
    WIDTH = width
    HALF = width // 2
    SHIFT_MASK = width - 1
    Data = BitVector[width]
    Inst = make_inst(width)

    class PE(Peak):
        def __init__(self):
            self.data0_reg = Register(Data, 0)
            self.data1_reg = Register(Data, 0)
            self.bit0_reg = Register(Bit, 0)
            self.bit1_reg = Register(Bit, 0)
            self.bit2_reg = Register(Bit, 0)

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
            overflow = (a[WIDTH - 1] == b_add[WIDTH - 1]) & (sum_[WIDTH - 1] != a[WIDTH - 1])
            if inst.signed:
                ge = a.bvsge(b)
                le = a.bvsle(b)
                a32 = a.sext(WIDTH)
                b32 = b.sext(WIDTH)
                shr = a.bvashr(b & SHIFT_MASK)
            else:
                ge = a.bvuge(b)
                le = a.bvule(b)
                a32 = a.zext(WIDTH)
                b32 = b.zext(WIDTH)
                shr = a.bvlshr(b & SHIFT_MASK)
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
                res = a.bvshl(b & SHIFT_MASK)
            elif inst.alu == ALU.MULT0:
                res = a * b
            elif inst.alu == ALU.MULT1:
                res = prod[HALF:HALF + WIDTH]
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

    if width != 16:
        PE.__name__ = PE.__qualname__ = f"PE{width}"
        PE.peak_ref = f"{__name__}:make_pe({width})"
    else:
        PE.__qualname__ = "PE"
    PE.width = width
    return PE


WIDTH = 16
Data = BitVector[WIDTH]
SData = SIntVector[WIDTH]
Data32 = BitVector[2 * WIDTH]
Inst = make_inst(WIDTH)
PE = make_pe(WIDTH)
"""The 16-bit PE (``peak.examples.cgra_pe:PE``)."""
