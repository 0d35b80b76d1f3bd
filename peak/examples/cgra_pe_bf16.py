"""The default CGRA PE plus a BFloat16 unit ("BF16"): the integer PE's opcodes unchanged
(same codes), and BFloat16 opcodes using the ``peak.bf16`` sub-PEs.

``peak.examples.cgra_pe_bf16:PE`` (16 bits; ``configs/bf16.toml`` is the default 32x16 array
with this PE). Inputs, outputs, input modes (``Mode``), condition codes (``Cond``), flags and
the LUT are those of :mod:`peak.examples.cgra_pe` (its frame and units, and ``Cond``,
``Mode``, ``LUTTable``: identical by construction). The ALU enum is the default PE's, codes
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

How it is built, and why not as a copy: a spec's behaviour is one ``__call__`` body per class
(the DSL has no helper functions and no inheritance of bodies), and the FP opcodes read the
operands after the input modes. Before issue 38 this PE was therefore a copy of the default
PE's body with the FP branches added (the default PE as a sub-PE would have duplicated its
mode muxes and delay registers). Now the default PE is itself made of stateless sub-PEs
("units", :mod:`peak.examples.cgra_pe`), each handing the opcodes it does not execute
through: this PE is the default PE's frame (inputs, modes, delay registers, LUT, condition
code: :func:`~peak.examples.cgra_pe.make_variant`) around :class:`FPALU`, the default PE's
integer ALU (:func:`~peak.examples.cgra_pe.make_int_alu`) fed XOR and the FP opcodes,
computed from the ``peak.bf16`` sub-PEs. The multiplexer chain, so the Verilog, is the
single-body spec's. The spec hash reads the modules of sub-PEs at any depth
(``cgra_pe.py``, ``peak/bf16.py``), so an edit of the shared units marks a bf16 design stale.
"""
from hwtypes import Bit, BitVector

from peak.bf16 import BF16Add, BF16Cmp, BF16Mul, BF16ToInt16, Int16ToBF16
from peak.examples.cgra_pe import (LUTTable, Cond, Mode, make_inst, make_int_alu, make_ops,
                                   make_variant)
from peak.spec import Peak, name_outputs

__all__ = ["ALU", "Cond", "FPALU", "Inst", "LUTTable", "Mode", "PE"]

WIDTH = 16
Data = BitVector[WIDTH]
ALU = make_ops(__name__, add=("FAdd", "FSub", "FMul", "FMax", "FMin", "FLT", "FLE", "FEQ",
                              "I2F", "F2I"))
"""The opcodes: the default PE's (codes 0..13), then FAdd = 14 ... F2I = 23 (5 bits)."""
Inst = make_inst(WIDTH, ALU)


class FPALU(Peak):
    """The ALU (stateless sub-PE): instruction ``op`` (:data:`ALU`), inputs ``signed`` (1 bit),
    ``a``, ``b`` (16 bits), ``d`` (1 bit); outputs ``res`` (16 bits), ``C``, ``V`` (1 bit), as
    the module docstring's table. One ``peak.bf16`` instance per FP operation."""

    def __init__(self):
        self.int_alu = make_int_alu(WIDTH, ALU)()
        self.fadd = BF16Add()
        self.fmul = BF16Mul()
        self.fcmp = BF16Cmp()
        self.i2f = Int16ToBF16()
        self.f2i = BF16ToInt16()

    @name_outputs(res=Data, C=Bit, V=Bit)
    def __call__(self, op: ALU, signed: Bit, a: Data, b: Data, d: Bit):
        fsum = self.fadd(op == ALU.FSub, a, b)
        fprod = self.fmul(Bit(0), a, b)
        flt, fle, feq, fmax, fmin = self.fcmp(Bit(0), a, b)
        fconv = self.i2f(signed, a)
        fint, finvalid = self.f2i(signed, a)
        # ---- the opcodes after Or: XOR, then the BFloat16 unit's
        C = Bit(0)
        if op == ALU.XOR:
            res = a ^ b
        elif (op == ALU.FAdd) | (op == ALU.FSub):
            res = fsum
        elif op == ALU.FMul:
            res = fprod
        elif op == ALU.FMax:
            res = fmax
        elif op == ALU.FMin:
            res = fmin
        elif op == ALU.FLT:
            res = flt.ite(Data(1), Data(0))
            C = flt
        elif op == ALU.FLE:
            res = fle.ite(Data(1), Data(0))
            C = fle
        elif op == ALU.FEQ:
            res = feq.ite(Data(1), Data(0))
            C = feq
        elif op == ALU.I2F:
            res = fconv
        else:
            res = fint
            C = finvalid
        return self.int_alu(op, signed, a, b, d, res, C)


PE = make_variant(ALU, FPALU, __name__, WIDTH)
PE.ir_float = True          # the BFloat16 IR ops are rule targets of this PE
