"""The PE of the PEak paper (Daly et al., "Synthesizing Instruction Selection Rewrite Rules
from RTL using SMT", FMCAD 2022, Fig. 2), width-parameterised.

ISA (``Inst``, 4 bits): ``op`` (Opcode: ``Add`` = 0, ``And`` = 1, 1 bit), ``invert_A``,
``scale_B``, ``reg_out`` (1 bit each), LSB first in that order.

Behaviour, inputs ``A``, ``B``, ``C`` (``width`` bits) and ``c_in`` (1 bit):
``A' = ~A if invert_A``; ``B' = B * C if scale_B``; ``Add``: ``res, flag = A' + B' + c_in``
with the carry out as flag; ``And``: ``res = A' & B'``, ``flag = (res == 0)``. Registers
``o_reg``/``f_reg`` latch ``res``/``flag`` every cycle; with ``reg_out`` the outputs are the
registered values (one cycle of latency).

Known answer (paper): ``Inst(Add, invert_A=0, scale_B=1, reg_out=0)`` with A=2, B=3, C=5,
c_in=0 gives (17, 0).
"""


import functools

from hwtypes import Bit, BitVector
from hwtypes.adt import Enum, Product

from peak.spec import Peak, Register, name_outputs


class Opcode(Enum):
    Add = 0
    And = 1


class Inst(Product):
    op = Opcode
    invert_A = Bit
    scale_B = Bit
    reg_out = Bit


@functools.lru_cache(maxsize=None)
def make_toy_pe(width: int = 16) -> type:
    """The toy PE spec class with a ``width``-bit datapath (cached: one class per width)."""
    Data = BitVector[width]

    class ToyPE(Peak):
        def __init__(self):
            self.o_reg = Register(Data, 0)
            self.f_reg = Register(Bit, 0)

        @name_outputs(res=Data, flag=Bit)
        def __call__(self, inst: Inst, A: Data, B: Data, C: Data, c_in: Bit):
            if inst.invert_A:
                A = ~A
            if inst.scale_B:
                B = B * C
            if inst.op == Opcode.Add:
                res, flag = A.adc(B, c_in)
            else:
                res = A & B
                flag = res == 0
            o = self.o_reg(res)
            f = self.f_reg(flag)
            if inst.reg_out:
                return o, f
            return res, flag

    ToyPE.__name__ = ToyPE.__qualname__ = f"ToyPE{width}"
    ToyPE.width = width
    return ToyPE


ToyPE = make_toy_pe(16)
"""The 16-bit toy PE of the paper."""
