"""The default CGRA PE (:mod:`peak.examples.cgra_pe`) without its maximum: no ``GTE`` opcode,
so ``commonlib.smax`` / ``commonlib.umax`` (and ``pattern.select_sgt`` / ``select_ugt``) have
no single-instruction rewrite rule on it. The PE still computes a maximum in two
instructions, a compare (``Sub`` with condition ``SGE`` / ``UGE`` on ``res_p``) feeding a
select (``Sel`` on ``bit0``): the two-PE rules of issue 41 (:mod:`peak.rules.table`,
``decomposed``). ``configs/small_nomax.toml`` is the 8x8 array with it.

Built from the default PE's units: its frame (:func:`~peak.examples.cgra_pe.make_variant`:
inputs, modes, delay registers, LUT, flags, condition codes) around :class:`NoMaxALU`, the
default PE's ALU with the ``GTE`` branch removed. Opcodes (``alu``, 4 bits): Add 0, Sub 1,
Abs 2, LTE 3, Sel 4, SHR 5, SHL 6, MULT0 7, MULT1 8, MULT2 9, And 10, Or 11, XOR 12, each as
the default PE's (module docstring of :mod:`peak.examples.cgra_pe`); 16-bit data, everything
else as the default PE."""
from hwtypes import Bit, BitVector

from peak.examples.cgra_pe import make_inst, make_logic, make_multiplier, make_ops, make_variant
from peak.spec import Peak, name_outputs

__all__ = ["ALU", "Inst", "NoMaxArith", "NoMaxALU", "PE"]

WIDTH = 16
SHIFT_MASK = WIDTH - 1
Data = BitVector[WIDTH]
ALU = make_ops(__name__, drop=("GTE",))
Inst = make_inst(WIDTH, ALU)


class NoMaxArith(Peak):
    """The default PE's arithmetic unit (:func:`peak.examples.cgra_pe.make_arith`) without
    ``GTE`` (stateless sub-PE): instruction ``op`` (``ALU``); inputs ``signed`` (1 bit),
    ``a``, ``b`` (16 bits), ``d`` (1 bit), ``other`` (16 bits), ``other_C`` (1 bit); outputs
    ``res`` (16 bits), ``C``, ``V`` (1 bit): Add, Sub (C = carry / no borrow, V = signed
    overflow), Abs, LTE (C = a <= b), Sel, SHR (arithmetic if ``signed``), SHL (shift by
    ``b[3:0]``); any other opcode gives ``other``, ``other_C``."""

    @name_outputs(res=Data, C=Bit, V=Bit)
    def __call__(self, op: ALU, signed: Bit, a: Data, b: Data, d: Bit, other: Data,
                 other_C: Bit):
        is_sub = op == ALU.Sub
        b_add = ~b if is_sub else b
        sum_, carry = a.adc(b_add, is_sub)
        overflow = (a[WIDTH - 1] == b_add[WIDTH - 1]) & (sum_[WIDTH - 1] != a[WIDTH - 1])
        if signed:
            le = a.bvsle(b)
            shr = a.bvashr(b & SHIFT_MASK)
        else:
            le = a.bvule(b)
            shr = a.bvlshr(b & SHIFT_MASK)
        zero = Bit(0)
        C = zero
        V = zero
        if op == ALU.Add:
            res = sum_
            C = carry
            V = overflow
        elif op == ALU.Sub:
            res = sum_
            C = carry
            V = overflow
        elif op == ALU.Abs:
            res = (-a) if a[WIDTH - 1] else a
        elif op == ALU.LTE:
            res = a if le else b
            C = le
        elif op == ALU.Sel:
            res = a if d else b
        elif op == ALU.SHR:
            res = shr
        elif op == ALU.SHL:
            res = a.bvshl(b & SHIFT_MASK)
        else:
            res = other
            C = other_C
        return res, C, V


class NoMaxALU(Peak):
    """The default PE's ALU without ``GTE`` (stateless sub-PE): instruction ``op`` (``ALU``),
    inputs ``signed`` (1 bit), ``a``, ``b`` (16 bits), ``d`` (1 bit); outputs ``res`` (16
    bits), ``C``, ``V`` (1 bit). The units in opcode order: :class:`NoMaxArith`, the default
    multiplier and logic units, XOR last."""

    def __init__(self):
        self.arith = NoMaxArith()
        self.mul = make_multiplier(WIDTH, ALU)()
        self.logic = make_logic(WIDTH, ALU)()

    @name_outputs(res=Data, C=Bit, V=Bit)
    def __call__(self, op: ALU, signed: Bit, a: Data, b: Data, d: Bit):
        res, C = self.logic(op, a, b, a ^ b, Bit(0))           # And, Or, else XOR
        res, C = self.mul(op, signed, a, b, res, C)            # MULT0 .. MULT2
        return self.arith(op, signed, a, b, d, res, C)         # Add .. SHL


PE = make_variant(ALU, NoMaxALU, __name__, WIDTH)
"""The 16-bit PE without a maximum (``peak.examples.cgra_pe_nomax:PE``)."""
