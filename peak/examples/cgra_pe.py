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

The PE is built from stateless sub-PEs ("units") defined here and shared by the PE family
(``cgra_pe_bf16``, ``cgra_pe_d2``, ``cgra_pe_d3``, ``tests/mapper/mapper_pe_nomul.py``)::

    make_input_mode(T)        one input's mode mux: the input, its delay register or its const
    make_arith(w, ops)        Add Sub Abs GTE LTE Sel SHR SHL (C, V); else passes ``other``
    make_multiplier(w, ops)   MULT0 MULT1 MULT2; else passes ``other``
    make_logic(w, ops)        And Or; else passes ``other``
    make_int_alu(w, ops)      the three in opcode order, ``other`` = XOR and what follows it
    make_alu(w, ops)          make_int_alu with XOR last: this PE's ALU
    LUT3                      the 3-input LUT
    make_cond_code(w)         the flags Z, N and the condition code select (res_p)
    make_core(w, Inst, alu)   ALU unit + LUT3 + condition code: all after the input modes

and the frame: :func:`declare_inputs` (the delay registers and mode muxes of an ``__init__``),
:func:`make_inst`, and :func:`make_variant`, this PE with another opcode enum and ALU unit.
A unit executes its opcodes and hands every other opcode's result (``other``, ``other_C``)
through, so a chain of units is the multiplexer chain of one ``if``/``elif`` over all
opcodes, in the same order: the same behaviour, rules and Verilog as the PE written as one
``__call__`` body (as it was before issue 38). A variant is a file of its differences: its
opcodes (:func:`make_ops`), an ALU unit for the new ones, its own inputs. The units' module
is part of every variant's spec hash (``peak.spec_hash`` reads the modules of sub-PEs at
any depth). To change the PE, edit the unit that executes the opcode (a new opcode: the
``other`` of :func:`make_alu`, or a branch of a unit); ``peak/examples/cgra_pe_edits.py``
and ``docs/tutorial.md`` show such edits.

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

from hwtypes import Bit, BitVector
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


def make_ops(module: str, drop: tuple[str, ...] = (), add: tuple[str, ...] = ()) -> type:
    """A variant's opcode enum ``ALU`` (defined in ``module``, the variant's ``__name__``): the
    members of :class:`ALU` without ``drop``, then ``add``, coded 0, 1, 2, ... in that order
    (``drop=()`` keeps the codes 0..13). Raises :class:`SpecError` for a name in ``drop`` that
    :class:`ALU` lacks or a name in ``add`` it has."""
    names = [m.name for m in ALU.enumerate()]
    bad = [n for n in drop if n not in names] + [n for n in add if n in names]
    if bad:
        raise SpecError(f"make_ops(drop={drop!r}, add={add!r}): {bad} not droppable / not new; "
                        f"the default opcodes are {names}")
    kept = [n for n in names if n not in drop] + list(add)
    ns = {"__module__": module, "__qualname__": "ALU"}
    ns.update((n, code) for code, n in enumerate(kept))
    return type(ALU)("ALU", (Enum,), ns)


@functools.lru_cache(maxsize=None)
def make_inst(width: int = 16, ops: type = ALU, data_inputs: int = 2,
              data_mode: type = Mode) -> type:
    """The instruction type (``Inst``, a Product) of a ``width``-bit PE of the family, fields in
    this order (LSB first): ``alu`` (``ops``: the bits of its largest code, 4 for
    :class:`ALU`), ``signed`` (1), ``cond`` (:class:`Cond`, 4), ``lut`` (8), per data input
    ``data<k>_mode`` (``data_mode``: 2 bits for :class:`Mode`) and ``data<k>_const``
    (``width`` bits), per bit input
    ``bit<k>_mode`` (:class:`Mode`) and ``bit<k>_const`` (1); 62 bits for the 16-bit default.
    Cached: one type per argument tuple."""
    Data = BitVector[width]
    fields: dict[str, type] = {"alu": ops, "signed": Bit, "cond": Cond, "lut": LUTTable}
    for k in range(data_inputs):
        fields[f"data{k}_mode"] = data_mode
        fields[f"data{k}_const"] = Data
    for k in range(3):
        fields[f"bit{k}_mode"] = Mode
        fields[f"bit{k}_const"] = Bit
    return type(Product)("Inst", (Product,), {"__module__": __name__, "__qualname__": "Inst",
                                              **fields})


@functools.lru_cache(maxsize=None)
def make_input_mode(T: type) -> type:
    """The mode mux of one input of type ``T`` (``Bit`` or ``BitVector[w]``), a stateless
    sub-PE: instruction ``mode`` (:class:`Mode`, 2 bits), inputs ``x`` (the input), ``delayed``
    (its delay register's output) and ``const`` (the instruction's constant), output ``out``
    (``T``) = ``delayed`` for ``DELAY``, ``const`` for ``CONST``, else ``x``. Cached per type."""

    class InputMode(Peak):
        @name_outputs(out=T)
        def __call__(self, mode: Mode, x: T, delayed: T, const: T):
            if mode == Mode.DELAY:
                out = delayed
            elif mode == Mode.CONST:
                out = const
            else:
                out = x
            return out
    return InputMode


@functools.lru_cache(maxsize=None)
def make_arith(width: int, ops: type) -> type:
    """The arithmetic, compare, select and shift unit of a ``width``-bit ALU (stateless
    sub-PE; ``ops`` is the PE's opcode enum and must have the members below). Instruction
    ``op`` (``ops``); inputs ``signed`` (1 bit), ``a``, ``b`` (``width`` bits), ``d`` (1 bit,
    the select of ``Sel``), ``other`` (``width`` bits) and ``other_C`` (1 bit): the result and
    carry of every other opcode, passed through. Outputs ``res`` (``width`` bits), ``C`` and
    ``V`` (1 bit): Add, Sub (C = carry / no borrow, V = signed overflow), Abs, GTE, LTE
    (C = the comparison), Sel, SHR (arithmetic if ``signed``), SHL (shift by the low
    ``log2(width)`` bits of ``b``); V = 0 and, for Abs, Sel, SHR, SHL, C = 0. Cached."""
    WIDTH = width
    SHIFT_MASK = width - 1
    Data = BitVector[width]

    class Arith(Peak):
        @name_outputs(res=Data, C=Bit, V=Bit)
        def __call__(self, op: ops, signed: Bit, a: Data, b: Data, d: Bit, other: Data,
                     other_C: Bit):
            is_sub = op == ops.Sub
            b_add = ~b if is_sub else b
            sum_, carry = a.adc(b_add, is_sub)
            overflow = (a[WIDTH - 1] == b_add[WIDTH - 1]) & (sum_[WIDTH - 1] != a[WIDTH - 1])
            if signed:
                ge = a.bvsge(b)
                le = a.bvsle(b)
                shr = a.bvashr(b & SHIFT_MASK)
            else:
                ge = a.bvuge(b)
                le = a.bvule(b)
                shr = a.bvlshr(b & SHIFT_MASK)
            zero = Bit(0)
            C = zero
            V = zero
            if op == ops.Add:
                res = sum_
                C = carry
                V = overflow
            elif op == ops.Sub:
                res = sum_
                C = carry
                V = overflow
            elif op == ops.Abs:
                res = (-a) if a[WIDTH - 1] else a
            elif op == ops.GTE:
                res = a if ge else b
                C = ge
            elif op == ops.LTE:
                res = a if le else b
                C = le
            elif op == ops.Sel:
                res = a if d else b
            elif op == ops.SHR:
                res = shr
            elif op == ops.SHL:
                res = a.bvshl(b & SHIFT_MASK)
            else:
                res = other
                C = other_C
            return res, C, V
    return Arith


@functools.lru_cache(maxsize=None)
def make_multiplier(width: int, ops: type) -> type:
    """The multiplier of a ``width``-bit ALU (stateless sub-PE): instruction ``op`` (``ops``,
    with members MULT0, MULT1, MULT2), inputs ``signed`` (1 bit), ``a``, ``b``, ``other``
    (``width`` bits), ``other_C`` (1 bit); outputs ``res`` (``width`` bits) and ``C`` (1 bit).
    MULT0 = ``(a*b)[width-1:0]``, MULT1 = ``(a*b)[3*width/2-1:width/2]``, MULT2 =
    ``(a*b)[2*width-1:width]`` of the ``2*width``-bit product of the sign- (``signed``) or
    zero-extended operands, with C = 0; any other opcode gives ``other``, ``other_C``. Cached."""
    WIDTH = width
    HALF = width // 2
    Data = BitVector[width]

    class Multiplier(Peak):
        @name_outputs(res=Data, C=Bit)
        def __call__(self, op: ops, signed: Bit, a: Data, b: Data, other: Data, other_C: Bit):
            if signed:
                a32 = a.sext(WIDTH)
                b32 = b.sext(WIDTH)
            else:
                a32 = a.zext(WIDTH)
                b32 = b.zext(WIDTH)
            prod = a32 * b32
            C = Bit(0)
            if op == ops.MULT0:
                res = a * b
            elif op == ops.MULT1:
                res = prod[HALF:HALF + WIDTH]
            elif op == ops.MULT2:
                res = prod[WIDTH:2 * WIDTH]
            else:
                res = other
                C = other_C
            return res, C
    return Multiplier


@functools.lru_cache(maxsize=None)
def make_logic(width: int, ops: type) -> type:
    """The bitwise unit of a ``width``-bit ALU (stateless sub-PE): instruction ``op``
    (``ops``, with members And, Or), inputs ``a``, ``b``, ``other`` (``width`` bits),
    ``other_C`` (1 bit); outputs ``res`` (``width`` bits) = ``a & b`` / ``a | b`` with ``C``
    (1 bit) = 0, for any other opcode ``other`` and ``other_C``. (XOR is the last opcode of
    the default PE: its caller computes it, with what follows it, as ``other``.) Cached."""
    Data = BitVector[width]

    class Logic(Peak):
        @name_outputs(res=Data, C=Bit)
        def __call__(self, op: ops, a: Data, b: Data, other: Data, other_C: Bit):
            C = Bit(0)
            if op == ops.And:
                res = a & b
            elif op == ops.Or:
                res = a | b
            else:
                res = other
                C = other_C
            return res, C
    return Logic


@functools.lru_cache(maxsize=None)
def make_int_alu(width: int, ops: type) -> type:
    """The default PE's integer ALU without its last opcode (stateless sub-PE): the units of
    :func:`make_arith`, :func:`make_multiplier` and :func:`make_logic` in opcode order.
    Instruction ``op`` (``ops``); inputs ``signed`` (1 bit), ``a``, ``b`` (``width`` bits),
    ``d`` (1 bit), ``other`` (``width`` bits) and ``other_C`` (1 bit), the result and carry
    of the opcodes after Or (XOR and a variant's own opcodes); outputs ``res`` (``width``
    bits), ``C``, ``V`` (1 bit). Cached."""
    Data = BitVector[width]
    Arith = make_arith(width, ops)
    Multiplier = make_multiplier(width, ops)
    Logic = make_logic(width, ops)

    class IntALU(Peak):
        def __init__(self):
            self.arith = Arith()
            self.mul = Multiplier()
            self.logic = Logic()

        @name_outputs(res=Data, C=Bit, V=Bit)
        def __call__(self, op: ops, signed: Bit, a: Data, b: Data, d: Bit, other: Data,
                     other_C: Bit):
            # the opcode chain from its end (Add .. SHL take precedence over MULT0 ..)
            res, C = self.logic(op, a, b, other, other_C)            # And, Or
            res, C = self.mul(op, signed, a, b, res, C)               # MULT0 .. MULT2
            return self.arith(op, signed, a, b, d, res, C)            # Add .. SHL
    return IntALU


@functools.lru_cache(maxsize=None)
def make_alu(width: int, ops: type = ALU) -> type:
    """The ALU of the default PE (stateless sub-PE, the module docstring's table):
    :func:`make_int_alu` with XOR (``a ^ b``, C = 0) as the last opcode. Instruction ``op``
    (``ops``); inputs ``signed`` (1 bit), ``a``, ``b`` (``width`` bits), ``d`` (1 bit);
    outputs ``res`` (``width`` bits), ``C``, ``V`` (1 bit). Cached."""
    Data = BitVector[width]
    IntALU = make_int_alu(width, ops)

    class ALUUnit(Peak):
        def __init__(self):
            self.int_alu = IntALU()

        @name_outputs(res=Data, C=Bit, V=Bit)
        def __call__(self, op: ops, signed: Bit, a: Data, b: Data, d: Bit):
            return self.int_alu(op, signed, a, b, d, a ^ b, Bit(0))
    return ALUUnit


class LUT3(Peak):
    """The 3-input LUT (stateless sub-PE): instruction ``lut`` (the 8-bit table), inputs
    ``d``, ``e``, ``f`` (1 bit each), output ``out`` = ``lut[{f, e, d}]`` (``d`` the LSB)."""

    @name_outputs(out=Bit)
    def __call__(self, lut: LUTTable, d: Bit, e: Bit, f: Bit):
        x0 = lut[1] if d else lut[0]
        x1 = lut[3] if d else lut[2]
        x2 = lut[5] if d else lut[4]
        x3 = lut[7] if d else lut[6]
        y0 = x1 if e else x0
        y1 = x3 if e else x2
        return y1 if f else y0


@functools.lru_cache(maxsize=None)
def make_cond_code(width: int) -> type:
    """The flags and condition code of a ``width``-bit PE (stateless sub-PE): instruction
    ``cond`` (:class:`Cond`, 4 bits); inputs ``res`` (``width`` bits, the ALU result), ``C``,
    ``V`` (1 bit, the ALU's carry and overflow) and ``lut_out`` (1 bit, :class:`LUT3`'s);
    output ``res_p`` (1 bit): the flag or combination ``cond`` names, from ``Z = res == 0``,
    ``N = res[width-1]``, ``C`` and ``V`` (module docstring), or ``lut_out`` for LUT. Cached."""
    WIDTH = width
    Data = BitVector[width]

    class CondCode(Peak):
        @name_outputs(res_p=Bit)
        def __call__(self, cond: Cond, res: Data, C: Bit, V: Bit, lut_out: Bit):
            Z = res == 0
            N = res[WIDTH - 1]
            if cond == Cond.Z:
                res_p = Z
            elif cond == Cond.N:
                res_p = N
            elif cond == Cond.C:
                res_p = C
            elif cond == Cond.V:
                res_p = V
            elif cond == Cond.EQ:
                res_p = Z
            elif cond == Cond.NE:
                res_p = not Z
            elif cond == Cond.ULT:
                res_p = not C
            elif cond == Cond.ULE:
                res_p = (not C) or Z
            elif cond == Cond.UGT:
                res_p = C and not Z
            elif cond == Cond.UGE:
                res_p = C
            elif cond == Cond.SLT:
                res_p = N != V
            elif cond == Cond.SLE:
                res_p = Z or (N != V)
            elif cond == Cond.SGT:
                res_p = (not Z) and (N == V)
            elif cond == Cond.SGE:
                res_p = N == V
            else:
                res_p = lut_out
            return res_p
    return CondCode


BIT_INPUTS = (("bit0", Bit), ("bit1", Bit), ("bit2", Bit))
"""The 1-bit inputs of every PE of the family, as :func:`declare_inputs` takes them."""


def declare_inputs(pe: Peak, *inputs: tuple[str, type]) -> None:
    """Declare, in ``pe.__init__``, the inputs ``(name, T)`` (``T`` = ``Bit`` or a sized
    ``BitVector``) with the default PE's modes: for each, in order, the delay register
    ``pe.<name>_reg`` (``Register(T, 0)``: the state, named as in ``pe.json``), then for each
    its mode mux ``pe.<name>_in`` (:func:`make_input_mode`). Plain Python, run once per
    instance (``__init__`` is not normalised)."""
    for name, T in inputs:
        setattr(pe, f"{name}_reg", Register(T, 0))
    for name, T in inputs:
        setattr(pe, f"{name}_in", make_input_mode(T)())


@functools.lru_cache(maxsize=None)
def make_core(width: int, Inst: type, alu: type) -> type:
    """What follows the input modes in a ``width``-bit PE of the family (stateless sub-PE):
    the ALU unit ``alu`` (``(op, signed, a, b, d) -> (res, C, V)``, e.g. :func:`make_alu`'s),
    :class:`LUT3` and :func:`make_cond_code`. Instruction ``inst`` (``Inst``: the fields
    ``alu``, ``signed``, ``cond``, ``lut`` are read); inputs ``a``, ``b`` (``width`` bits),
    ``d``, ``e``, ``f`` (1 bit) after their modes; outputs ``res`` (``width`` bits) and
    ``res_p`` (1 bit). Cached."""
    Data = BitVector[width]
    CondCode = make_cond_code(width)

    class Core(Peak):
        def __init__(self):
            self.alu = alu()
            self.lut = LUT3()
            self.cond = CondCode()

        @name_outputs(res=Data, res_p=Bit)
        def __call__(self, inst: Inst, a: Data, b: Data, d: Bit, e: Bit, f: Bit):
            res, C, V = self.alu(inst.alu, inst.signed, a, b, d)
            res_p = self.cond(inst.cond, res, C, V, self.lut(inst.lut, d, e, f))
            return res, res_p
    return Core


@functools.lru_cache(maxsize=None)
def make_variant(ops: type, alu: type, module: str, width: int = 16) -> type:
    """A PE with the default PE's frame and another ALU: ports, input modes and delay
    registers of :data:`PE` (``width``-bit data), instruction ``make_inst(width, ops)``, and
    :func:`make_core` with the ALU unit ``alu`` (a sub-PE class taking ``(op: ops, signed, a,
    b, d)`` and giving ``(res, C, V)``, as :func:`make_alu`'s). The class is named ``PE`` and
    belongs to ``module`` (the caller's ``__name__``: its reference is ``<module>:PE``; its
    spec hash covers that module and this one). Cached."""
    Data = BitVector[width]
    Inst = make_inst(width, ops)
    Core = make_core(width, Inst, alu)

    class PE(Peak):
        def __init__(self):
            declare_inputs(self, ("data0", Data), ("data1", Data), *BIT_INPUTS)
            self.core = Core()

        @name_outputs(res=Data, res_p=Bit)
        def __call__(self, inst: Inst, data0: Data, data1: Data, bit0: Bit, bit1: Bit, bit2: Bit):
            # ---- input modes (the delay registers latch every cycle)
            a = self.data0_in(inst.data0_mode, data0, self.data0_reg(data0), inst.data0_const)
            b = self.data1_in(inst.data1_mode, data1, self.data1_reg(data1), inst.data1_const)
            d = self.bit0_in(inst.bit0_mode, bit0, self.bit0_reg(bit0), inst.bit0_const)
            e = self.bit1_in(inst.bit1_mode, bit1, self.bit1_reg(bit1), inst.bit1_const)
            f = self.bit2_in(inst.bit2_mode, bit2, self.bit2_reg(bit2), inst.bit2_const)
            # ---- ALU, LUT, condition code
            return self.core(inst, a, b, d, e, f)

    PE.__module__ = module
    PE.__qualname__ = "PE"
    PE.width = width
    return PE


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
    PE = make_variant(ALU, make_alu(width), __name__, width)
    if width != 16:
        PE.__name__ = PE.__qualname__ = f"PE{width}"
        PE.peak_ref = f"{__name__}:make_pe({width})"
    return PE


WIDTH = 16
Data = BitVector[WIDTH]
Inst = make_inst(WIDTH)
PE = make_pe(WIDTH)
"""The 16-bit PE (``peak.examples.cgra_pe:PE``)."""
