"""A BFloat16 ALU: the ``peak.bf16`` operations as sub-PEs behind one opcode.

``peak.examples.bf16_alu:BF16ALU``. Instruction ``Inst`` (5 bits, LSB first): ``op``
(``FPOp``, 4 bits), ``signed`` (1 bit, used by the conversions). Inputs ``a``, ``b``
(``BitVector[16]``: bf16 encodings, or an int16 / uint16 for ``I2F``); outputs ``res``
(``BitVector[16]``) and ``res_p`` (``Bit``). Combinational (no state)::

    Add   res = a + b            Max  res = maximum(a, b)    Lt  res_p = a < b
    Sub   res = a - b            Min  res = minimum(a, b)    Le  res_p = a <= b
    Mul   res = a * b                                        Eq  res_p = a == b
    I2F   res = bf16(a) (a an int16 if signed, else a uint16; nearest even)
    F2I   res = a truncated toward zero, saturated to int16 (uint16 if not signed);
          res_p = NaN or saturated (res = 0 for NaN)

For ``Lt``/``Le``/``Eq`` ``res`` is ``res_p`` as 0 / 1; for the arithmetic ops ``res_p`` is
1 iff ``res`` is NaN. Rounding, subnormal (flushed) and NaN (``0x7FC0``) policies: the
module docstring of ``peak.bf16``.
"""
from hwtypes import Bit, BitVector
from hwtypes.adt import Enum, Product

from peak.bf16 import BF16Add, BF16Cmp, BF16Mul, BF16ToInt16, Int16ToBF16
from peak.spec import Peak, name_outputs

Data = BitVector[16]


class FPOp(Enum):
    Add = 0
    Sub = 1
    Mul = 2
    Max = 3
    Min = 4
    Lt = 5
    Le = 6
    Eq = 7
    I2F = 8
    F2I = 9


class Inst(Product):
    op = FPOp
    signed = Bit


class BF16ALU(Peak):
    def __init__(self):
        self.add = BF16Add()
        self.mul = BF16Mul()
        self.cmp = BF16Cmp()
        self.i2f = Int16ToBF16()
        self.f2i = BF16ToInt16()

    @name_outputs(res=Data, res_p=Bit)
    def __call__(self, inst: Inst, a: Data, b: Data):
        s = self.add(inst.op == FPOp.Sub, a, b)
        p = self.mul(Bit(0), a, b)
        lt, le, eq, mx, mn = self.cmp(Bit(0), a, b)
        c = self.i2f(inst.signed, a)
        n, invalid = self.f2i(inst.signed, a)
        if (inst.op == FPOp.Add) | (inst.op == FPOp.Sub):
            res = s
        elif inst.op == FPOp.Mul:
            res = p
        elif inst.op == FPOp.Max:
            res = mx
        elif inst.op == FPOp.Min:
            res = mn
        elif inst.op == FPOp.I2F:
            res = c
        else:
            res = n
        res_p = (res[7:15] == 255) & (res[0:7] != 0)          # NaN
        if inst.op == FPOp.Lt:
            res_p = lt
        elif inst.op == FPOp.Le:
            res_p = le
        elif inst.op == FPOp.Eq:
            res_p = eq
        elif inst.op == FPOp.F2I:
            res_p = invalid
        if (inst.op == FPOp.Lt) | (inst.op == FPOp.Le) | (inst.op == FPOp.Eq):
            res = res_p.ite(Data(1), Data(0))
        return res, res_p
