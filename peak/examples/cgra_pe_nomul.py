"""The default CGRA PE (:mod:`peak.examples.cgra_pe`) without its multiplier: no ``MULT0`` /
``MULT1`` / ``MULT2`` opcodes, so ``coreir.mul``, ``commonlib.mult_middle`` and
``pattern.muladd`` have no rewrite rule on it (issue 41: the mapper then computes a multiply
by a constant as shifts and adds, :func:`mapper.mapping.compute.rewrite_for_table`).
``configs/small_nomul.toml`` is the 8x8 array with it.

Built from the default PE's units: its frame (:func:`~peak.examples.cgra_pe.make_variant`:
inputs, modes, delay registers, LUT, flags, condition codes) around an ALU of the arithmetic
and logic units without the multiplier. Opcodes (``alu``, 4 bits): Add 0, Sub 1, Abs 2,
GTE 3, LTE 4, Sel 5, SHR 6, SHL 7, And 8, Or 9, XOR 10, each as the default PE's; 16-bit
data, everything else as the default PE."""
from hwtypes import Bit, BitVector

from peak.examples.cgra_pe import make_arith, make_inst, make_logic, make_ops, make_variant
from peak.spec import Peak, name_outputs

__all__ = ["ALU", "Inst", "NoMulALU", "PE"]

WIDTH = 16
Data = BitVector[WIDTH]
ALU = make_ops(__name__, drop=("MULT0", "MULT1", "MULT2"))
Inst = make_inst(WIDTH, ALU)


class NoMulALU(Peak):
    """The default PE's ALU without MULT0..2 (stateless sub-PE): instruction ``op`` (``ALU``),
    inputs ``signed`` (1 bit), ``a``, ``b`` (16 bits), ``d`` (1 bit); outputs ``res`` (16 bits),
    ``C``, ``V`` (1 bit)."""

    def __init__(self):
        self.arith = make_arith(WIDTH, ALU)()
        self.logic = make_logic(WIDTH, ALU)()

    @name_outputs(res=Data, C=Bit, V=Bit)
    def __call__(self, op: ALU, signed: Bit, a: Data, b: Data, d: Bit):
        res, C = self.logic(op, a, b, a ^ b, Bit(0))       # And, Or, else XOR
        return self.arith(op, signed, a, b, d, res, C)     # Add .. SHL, else the above


PE = make_variant(ALU, NoMulALU, __name__, WIDTH)
"""The 16-bit PE without a multiplier (``peak.examples.cgra_pe_nomul:PE``)."""
