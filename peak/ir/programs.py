"""The IR op library as small PEak programs (one spec class per op, per data width).

Every op is a :class:`peak.Peak` spec whose inputs are the op's CoreIR ports and whose
*instruction* holds the op's compile-time constants (``coreir.const``'s ``value``); ops
without constants take the one-member instruction :class:`NoParams`. Build the classes of
one width with :func:`programs` (cached per width); :mod:`peak.ir` wraps them with port
lists, plain-Python references and pattern DAGs.

Conventions (CoreIR): data ports are ``width`` bits, bit ports 1 bit; binary ops read
``in0``, ``in1``; unary ops ``in``; muxes ``in0``, ``in1``, ``sel`` (``out = sel ? in1 :
in0``); every op has one output ``out``. Semantics are SMT-LIB's (``lshr``/``shl`` by an
amount ``>= width`` give 0, ``ashr`` gives the sign fill).

This module must not use ``from __future__ import annotations``: the port types are
closure variables of :func:`programs` (see :mod:`peak`).
"""
import functools

from hwtypes import Bit, BitVector
from hwtypes.adt import Enum, Product

from peak.bf16 import BF16Add, BF16Cmp, BF16Mul, BF16ToInt16, Int16ToBF16
from peak.spec import Peak, name_outputs

#: Width of the BFloat16 ops (``float.*``): they exist in the 16-bit library only.
FLOAT_WIDTH = 16


class NoParams(Enum):
    """The instruction of an op without compile-time constants (one code, 1 bit)."""

    apply = 0


class BitConst(Product):
    """The instruction of ``corebit.const``: its 1-bit ``value``."""

    value = Bit


@functools.lru_cache(maxsize=None)
def programs(width: int) -> dict[str, type]:
    """Op name -> PEak spec class for a ``width``-bit datapath (``width`` >= 2, even for
    ``commonlib.mult_middle``). Cached: one set of classes per width per process."""
    W = width
    H = width // 2
    Data = BitVector[W]

    class DataConst(Product):
        value = Data

    class Add(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            return in0 + in1

    class Sub(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            return in0 - in1

    class Mul(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            return in0 * in1

    class Lshr(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            return in0.bvlshr(in1)

    class Ashr(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            return in0.bvashr(in1)

    class Shl(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            return in0.bvshl(in1)

    class And(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            return in0 & in1

    class Or(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            return in0 | in1

    class Xor(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            return in0 ^ in1

    class Not(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in_: Data):
            return ~in_

    class Eq(Peak):
        @name_outputs(out=Bit)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            return in0 == in1

    class Neq(Peak):
        @name_outputs(out=Bit)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            return in0 != in1

    class Ult(Peak):
        @name_outputs(out=Bit)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            return in0.bvult(in1)

    class Ule(Peak):
        @name_outputs(out=Bit)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            return in0.bvule(in1)

    class Ugt(Peak):
        @name_outputs(out=Bit)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            return in0.bvugt(in1)

    class Uge(Peak):
        @name_outputs(out=Bit)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            return in0.bvuge(in1)

    class Slt(Peak):
        @name_outputs(out=Bit)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            return in0.bvslt(in1)

    class Sle(Peak):
        @name_outputs(out=Bit)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            return in0.bvsle(in1)

    class Sgt(Peak):
        @name_outputs(out=Bit)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            return in0.bvsgt(in1)

    class Sge(Peak):
        @name_outputs(out=Bit)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            return in0.bvsge(in1)

    class Mux(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data, sel: Bit):
            if sel:
                return in1
            return in0

    class Const(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: DataConst):
            return inst.value

    class Smax(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            if in0.bvsge(in1):
                return in0
            return in1

    class Smin(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            if in0.bvsle(in1):
                return in0
            return in1

    class Umax(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            if in0.bvuge(in1):
                return in0
            return in1

    class Umin(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            if in0.bvule(in1):
                return in0
            return in1

    class Abs(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in_: Data):
            if in_[W - 1]:
                return -in_
            return in_

    class Absd(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            d = in0 - in1
            if d[W - 1]:
                return -d
            return d

    class MultMiddle(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            p = in0.sext(W) * in1.sext(W)
            return p[H:H + W]

    class BitAnd(Peak):
        @name_outputs(out=Bit)
        def __call__(self, inst: NoParams, in0: Bit, in1: Bit):
            return in0 & in1

    class BitOr(Peak):
        @name_outputs(out=Bit)
        def __call__(self, inst: NoParams, in0: Bit, in1: Bit):
            return in0 | in1

    class BitXor(Peak):
        @name_outputs(out=Bit)
        def __call__(self, inst: NoParams, in0: Bit, in1: Bit):
            return in0 ^ in1

    class BitNot(Peak):
        @name_outputs(out=Bit)
        def __call__(self, inst: NoParams, in_: Bit):
            return ~in_

    class BitConstOp(Peak):
        @name_outputs(out=Bit)
        def __call__(self, inst: BitConst):
            return inst.value

    class BitMux(Peak):
        @name_outputs(out=Bit)
        def __call__(self, inst: NoParams, in0: Bit, in1: Bit, sel: Bit):
            if sel:
                return in1
            return in0

    # ---- multi-op patterns (one PE instruction may cover several IR ops)
    class MulAdd(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data, in2: Data):
            return in0 * in1 + in2

    class Add3(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data, in2: Data):
            return in0 + in1 + in2

    class AddLshr(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data, in2: Data):
            return (in0 + in1).bvlshr(in2)

    class AddAshr(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data, in2: Data):
            return (in0 + in1).bvashr(in2)

    class SelectSlt(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            if in0.bvslt(in1):
                return in0
            return in1

    class SelectSgt(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            if in0.bvsgt(in1):
                return in0
            return in1

    class SelectUlt(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            if in0.bvult(in1):
                return in0
            return in1

    class SelectUgt(Peak):
        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            if in0.bvugt(in1):
                return in0
            return in1

    table = {
        "coreir.add": Add, "coreir.sub": Sub, "coreir.mul": Mul,
        "coreir.lshr": Lshr, "coreir.ashr": Ashr, "coreir.shl": Shl,
        "coreir.and": And, "coreir.or": Or, "coreir.xor": Xor, "coreir.not": Not,
        "coreir.eq": Eq, "coreir.neq": Neq,
        "coreir.ult": Ult, "coreir.ule": Ule, "coreir.ugt": Ugt, "coreir.uge": Uge,
        "coreir.slt": Slt, "coreir.sle": Sle, "coreir.sgt": Sgt, "coreir.sge": Sge,
        "coreir.mux": Mux, "coreir.const": Const,
        "commonlib.smax": Smax, "commonlib.smin": Smin,
        "commonlib.umax": Umax, "commonlib.umin": Umin,
        "commonlib.abs": Abs, "commonlib.absd": Absd, "commonlib.mult_middle": MultMiddle,
        "corebit.and": BitAnd, "corebit.or": BitOr, "corebit.xor": BitXor,
        "corebit.not": BitNot, "corebit.const": BitConstOp, "corebit.mux": BitMux,
        "pattern.muladd": MulAdd, "pattern.add3": Add3,
        "pattern.add_lshr": AddLshr, "pattern.add_ashr": AddAshr,
        "pattern.select_slt": SelectSlt, "pattern.select_sgt": SelectSgt,
        "pattern.select_ult": SelectUlt, "pattern.select_ugt": SelectUgt,
    }
    if W == FLOAT_WIDTH:
        table.update(_float_programs(Data))
    for name, cls in table.items():
        short = name.replace(".", "_")
        cls.__name__ = cls.__qualname__ = f"IR_{short}_w{W}"
    return table


def _float_programs(Data: type) -> dict[str, type]:
    """The BFloat16 ops (``float.*``, 16-bit bf16 encodings): each program calls the
    :mod:`peak.bf16` sub-PE of its operation, so the IR op's semantics *is* that bit-level
    definition (round to nearest even, subnormals flushed, NaN ``0x7FC0``; the module
    docstring of :mod:`peak.bf16`). ``gt``/``ge`` are ``lt``/``le`` with the operands
    swapped."""

    class FAdd(Peak):
        def __init__(self):
            self.add = BF16Add()

        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            return self.add(Bit(0), in0, in1)

    class FSub(Peak):
        def __init__(self):
            self.add = BF16Add()

        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            return self.add(Bit(1), in0, in1)

    class FMul(Peak):
        def __init__(self):
            self.mul = BF16Mul()

        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            return self.mul(Bit(0), in0, in1)

    class FMax(Peak):
        def __init__(self):
            self.cmp = BF16Cmp()

        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            lt, le, eq, mx, mn = self.cmp(Bit(0), in0, in1)
            return mx

    class FMin(Peak):
        def __init__(self):
            self.cmp = BF16Cmp()

        @name_outputs(out=Data)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            lt, le, eq, mx, mn = self.cmp(Bit(0), in0, in1)
            return mn

    class FLt(Peak):
        def __init__(self):
            self.cmp = BF16Cmp()

        @name_outputs(out=Bit)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            lt, le, eq, mx, mn = self.cmp(Bit(0), in0, in1)
            return lt

    class FLe(Peak):
        def __init__(self):
            self.cmp = BF16Cmp()

        @name_outputs(out=Bit)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            lt, le, eq, mx, mn = self.cmp(Bit(0), in0, in1)
            return le

    class FGt(Peak):
        def __init__(self):
            self.cmp = BF16Cmp()

        @name_outputs(out=Bit)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            lt, le, eq, mx, mn = self.cmp(Bit(0), in1, in0)
            return lt

    class FGe(Peak):
        def __init__(self):
            self.cmp = BF16Cmp()

        @name_outputs(out=Bit)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            lt, le, eq, mx, mn = self.cmp(Bit(0), in1, in0)
            return le

    class FEq(Peak):
        def __init__(self):
            self.cmp = BF16Cmp()

        @name_outputs(out=Bit)
        def __call__(self, inst: NoParams, in0: Data, in1: Data):
            lt, le, eq, mx, mn = self.cmp(Bit(0), in0, in1)
            return eq

    def from_int(signed: int) -> type:
        class FFromInt(Peak):
            def __init__(self):
                self.cvt = Int16ToBF16()

            @name_outputs(out=Data)
            def __call__(self, inst: NoParams, in_: Data):
                return self.cvt(Bit(signed), in_)
        return FFromInt

    def to_int(signed: int) -> type:
        class FToInt(Peak):
            def __init__(self):
                self.cvt = BF16ToInt16()

            @name_outputs(out=Data)
            def __call__(self, inst: NoParams, in_: Data):
                res, invalid = self.cvt(Bit(signed), in_)
                return res
        return FToInt

    return {"float.add": FAdd, "float.sub": FSub, "float.mul": FMul, "float.max": FMax,
            "float.min": FMin, "float.lt": FLt, "float.le": FLe, "float.gt": FGt,
            "float.ge": FGe, "float.eq": FEq, "float.from_s16": from_int(1),
            "float.from_u16": from_int(0), "float.to_s16": to_int(1), "float.to_u16": to_int(0)}
