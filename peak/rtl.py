"""Hardware: the normal form evaluated with a magma family, giving a sequential circuit.

:func:`pe_circuit(spec)` (cached: one magma module per spec class, named
``<Spec>_<spec-hash[:8]>``) has the ports of ``cgra.core``:

* ``CLK``, ``RESET`` (synchronous, active high; registers return to their init value);
* ``clk_en`` ``In(Bit)``: 1 = run, 0 = every register holds;
* ``inst`` ``In(Bits[width])``: the flat instruction (layout of :mod:`peak.assembler`);
* one ``In`` per spec input and one ``Out`` per named output (``Bits[n]``, ``Bit`` for 1-bit).

The output is combinational in the inputs and the current state (as in the Python model:
one model call == one enabled clock cycle, outputs sampled before the edge).

The magma family wraps magma values in :class:`MBits` / :class:`MBit`, which implement the
subset of the hwtypes bit-vector interface specs use (arithmetic, bitwise, shifts,
comparisons, ``bv*`` methods, ``adc``, ``zext``/``sext``, slicing, ``concat``, ``ite``),
translating signedness to ``m.SInt`` where it matters.
"""
from __future__ import annotations

import functools
import os
from typing import Any

from cgra.hdl import m

from cgra.errors import SpecError
from peak.assembler import assembler
from peak.family import Family
from peak.normalize import normal_form
from peak import spec_hash
from peak.assembler import is_bit_type
from peak.assembler import is_signed_type
from cgra.config import ConfigField
from cgra.core import CoreSpec, PortSpec
from peak.collateral import pe_json


def _u(x: Any) -> Any:
    return x.v if isinstance(x, (MBits, MBit)) else x


class MBit:
    """A magma ``Bit`` in the hwtypes ``Bit`` interface."""

    __slots__ = ("v",)

    def __init__(self, x: Any):
        if isinstance(x, MBit):
            self.v = x.v
        elif isinstance(x, bool) or isinstance(x, int):
            self.v = m.Bit(bool(x))
        elif isinstance(x, MBits):
            if x.n != 1:
                raise SpecError(f"cannot make a Bit of a {x.n}-bit value")
            self.v = x.v[0]
        else:
            self.v = x

    def _o(self, y: Any) -> Any:
        return MBit(y).v

    def __and__(self, y: Any) -> "MBit":
        return MBit(self.v & self._o(y))

    __rand__ = __and__

    def __or__(self, y: Any) -> "MBit":
        return MBit(self.v | self._o(y))

    __ror__ = __or__

    def __xor__(self, y: Any) -> "MBit":
        return MBit(self.v ^ self._o(y))

    __rxor__ = __xor__

    def __invert__(self) -> "MBit":
        return MBit(~self.v)

    def __eq__(self, y: Any) -> "MBit":  # type: ignore[override]
        return MBit(~(self.v ^ self._o(y)))

    def __ne__(self, y: Any) -> "MBit":  # type: ignore[override]
        return MBit(self.v ^ self._o(y))

    __hash__ = None  # type: ignore[assignment]

    def ite(self, a: Any, b: Any) -> Any:
        if isinstance(a, MBits) or isinstance(b, MBits):
            T = type(a) if isinstance(a, MBits) else type(b)
            a, b = T(a), T(b)
            return T(self.v.ite(a.v, b.v))
        return MBit(self.v.ite(MBit(a).v, MBit(b).v))

    def __bool__(self) -> bool:
        raise SpecError("a hardware Bit has no Python truth value; the normal form should "
                        "have turned this `if`/`and`/`or` into an ite")


class MBits:
    """A magma bit vector (kept as ``m.UInt[n]``) in the hwtypes ``BitVector`` interface.
    Subclasses per width/signedness: ``MBits.of(n, signed)``."""

    n = 0
    signed = False
    __slots__ = ("v",)

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def of(n: int, signed: bool = False) -> type:
        return type(f"M{'S' if signed else ''}Bits{n}", (MBits,),
                    {"n": n, "signed": signed, "__slots__": ()})

    def __init__(self, x: Any):
        n = type(self).n
        if isinstance(x, MBits):
            if x.n != n:
                raise SpecError(f"cannot convert a {x.n}-bit value to {n} bits; use zext/sext "
                                "or a slice")
            self.v = x.v
        elif isinstance(x, MBit):
            if n != 1:
                raise SpecError(f"cannot convert a Bit to {n} bits; use ite")
            self.v = m.uint(m.bits([x.v]))
        elif isinstance(x, bool) or isinstance(x, int):
            self.v = m.uint(int(x) % (1 << n), n)
        else:
            self.v = m.uint(x)

    @property
    def size(self) -> int:
        return type(self).n

    # ---------------------------------------------------------------- helpers
    def _o(self, y: Any) -> Any:
        return type(self)(y).v

    def _s(self, x: Any) -> Any:
        return m.sint(x)

    def _new(self, v: Any) -> "MBits":
        return type(self)(m.uint(v))

    # ---------------------------------------------------------------- arithmetic
    def __add__(self, y: Any) -> "MBits":
        return self._new(self.v + self._o(y))

    __radd__ = __add__
    bvadd = __add__

    def __sub__(self, y: Any) -> "MBits":
        return self._new(self.v - self._o(y))

    def __rsub__(self, y: Any) -> "MBits":
        return self._new(self._o(y) - self.v)

    bvsub = __sub__

    def __mul__(self, y: Any) -> "MBits":
        return self._new(self.v * self._o(y))

    __rmul__ = __mul__
    bvmul = __mul__

    def bvudiv(self, y: Any) -> "MBits":
        """Unsigned quotient; all ones for ``y = 0`` (SMT-LIB's ``bvudiv`` and hwtypes'; a
        Verilog ``/`` by 0 is X, so the RTL selects the value explicitly)."""
        d = self._o(y)
        return self._new(m.mux([self.v / d, m.uint((1 << self.n) - 1, self.n)],
                               d == m.uint(0, self.n)))

    def bvurem(self, y: Any) -> "MBits":
        """Unsigned remainder; ``self`` for ``y = 0`` (SMT-LIB's ``bvurem``), as
        ``self - (self / y) * y`` (CIRCT 1.58 has no ``comb.urem`` lowering from magma)."""
        d = self._o(y)
        return self._new(m.mux([self.v - (self.v / d) * d, self.v], d == m.uint(0, self.n)))

    def __neg__(self) -> "MBits":
        return self._new(m.uint(0, self.n) - self.v)

    bvneg = __neg__

    def __and__(self, y: Any) -> "MBits":
        return self._new(self.v & self._o(y))

    __rand__ = __and__
    bvand = __and__

    def __or__(self, y: Any) -> "MBits":
        return self._new(self.v | self._o(y))

    __ror__ = __or__
    bvor = __or__

    def __xor__(self, y: Any) -> "MBits":
        return self._new(self.v ^ self._o(y))

    __rxor__ = __xor__
    bvxor = __xor__

    def __invert__(self) -> "MBits":
        return self._new(~self.v)

    bvnot = __invert__

    def bvshl(self, y: Any) -> "MBits":
        return self._new(self.v << self._o(y))

    __lshift__ = bvshl

    def bvlshr(self, y: Any) -> "MBits":
        return self._new(self.v >> self._o(y))

    def bvashr(self, y: Any) -> "MBits":
        return self._new(m.uint(self._s(self.v) >> self._s(self._o(y))))

    def __rshift__(self, y: Any) -> "MBits":
        return self.bvashr(y) if self.signed else self.bvlshr(y)

    def adc(self, y: Any, c: Any) -> tuple["MBits", MBit]:
        r, co = self.v.adc(self._o(y), MBit(c).v)
        return self._new(r), MBit(co)

    # ---------------------------------------------------------------- comparisons
    def __eq__(self, y: Any) -> MBit:  # type: ignore[override]
        return MBit(self.v == self._o(y))

    bveq = __eq__

    def __ne__(self, y: Any) -> MBit:  # type: ignore[override]
        return MBit(self.v != self._o(y))

    bvne = __ne__
    __hash__ = None  # type: ignore[assignment]

    def bvult(self, y: Any) -> MBit:
        return MBit(self.v < self._o(y))

    def bvule(self, y: Any) -> MBit:
        return MBit(self.v <= self._o(y))

    def bvugt(self, y: Any) -> MBit:
        return MBit(self.v > self._o(y))

    def bvuge(self, y: Any) -> MBit:
        return MBit(self.v >= self._o(y))

    def bvslt(self, y: Any) -> MBit:
        return MBit(self._s(self.v) < self._s(self._o(y)))

    def bvsle(self, y: Any) -> MBit:
        return MBit(self._s(self.v) <= self._s(self._o(y)))

    def bvsgt(self, y: Any) -> MBit:
        return MBit(self._s(self.v) > self._s(self._o(y)))

    def bvsge(self, y: Any) -> MBit:
        return MBit(self._s(self.v) >= self._s(self._o(y)))

    def __lt__(self, y: Any) -> MBit:
        return self.bvslt(y) if self.signed else self.bvult(y)

    def __le__(self, y: Any) -> MBit:
        return self.bvsle(y) if self.signed else self.bvule(y)

    def __gt__(self, y: Any) -> MBit:
        return self.bvsgt(y) if self.signed else self.bvugt(y)

    def __ge__(self, y: Any) -> MBit:
        return self.bvsge(y) if self.signed else self.bvuge(y)

    # ---------------------------------------------------------------- structure
    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            start, stop, step = i.indices(self.n)
            if step != 1:
                raise SpecError("bit-vector slices must have step 1")
            return MBits.of(stop - start)(m.uint(self.v[start:stop]))
        return MBit(self.v[i])

    def zext(self, k: int) -> "MBits":
        return MBits.of(self.n + k, self.signed)(m.uint(m.zext(m.uint(self.v), k)))

    def sext(self, k: int) -> "MBits":
        return MBits.of(self.n + k, self.signed)(m.uint(m.sext(self._s(self.v), k)))

    def concat(self, y: "MBits") -> "MBits":
        return MBits.of(self.n + y.n)(m.uint(m.concat(m.bits(self.v), m.bits(y.v))))


class _Indexed:
    def __init__(self, signed: bool):
        self.signed = signed

    def __getitem__(self, n: int) -> type:
        return MBits.of(n, self.signed)


class MagmaFamily(Family):
    """The hardware family: ``BitVector[n]`` / ``Signed[n]`` give :class:`MBits` classes."""

    def cast_leaf(self, bits: Any, node: Any) -> Any:
        if node.kind == "bit":
            return bits[0]
        if node.kind == "bits" and node.signed:
            return MBits.of(node.width, True)(bits)
        return bits


MAGMA = MagmaFamily("magma", MBit, _Indexed(False), _Indexed(True), _Indexed(False))


def _mtype(T: Any) -> Any:
    return m.Bit if is_bit_type(T) else m.Bits[T.size]


def _to_port(T: Any, v: Any) -> Any:
    if isinstance(v, (bool, int)):
        return m.Bit(bool(v)) if is_bit_type(T) else m.bits(int(v) % (1 << T.size), T.size)
    if is_bit_type(T):
        return MBit(v).v
    return m.bits(MBits.of(T.size)(v).v)


@functools.lru_cache(maxsize=None)
def pe_circuit(spec: type) -> Any:
    """The magma circuit of ``spec`` (generated once per process). Raises
    :class:`SpecError` if the spec uses an operation the hardware family lacks."""
    nf = normal_form(spec)
    asm = assembler(nf.isa)
    ports: dict[str, Any] = {"clk_en": m.In(m.Bit), "inst": m.In(m.Bits[asm.width])}
    for n, T in nf.inputs:
        ports[n] = m.In(_mtype(T))
    for n, T in nf.outputs:
        if n in ports:
            raise SpecError(f"output name '{n}' of {spec.__name__} clashes with an input or "
                            "the ports clk_en / inst; rename it", nf.file)
        ports[n] = m.Out(_mtype(T))
    circuit_name = f"{spec.__name__}_{spec_hash(spec)[:8]}"

    class _PE(m.Circuit):
        name = circuit_name
        io = m.IO(**ports) + m.ClockIO(has_reset=True)
        _elaborate(io, nf, asm)

    return _PE


def _elaborate(io: Any, nf: Any, asm: Any) -> None:
    regs = []
    for leaf in nf.state:
        reg = m.Register(_mtype(leaf.T), init=_mtype(leaf.T)(leaf.init), has_enable=True,
                         reset_type=m.Reset)(name=f"reg_{_sanitize(leaf.name)}")
        regs.append(reg)
    state = tuple(MBit(r.O) if _mtype(leaf.T) is m.Bit else MBits.of(leaf.T.size)(r.O)
                  for r, leaf in zip(regs, nf.state, strict=True))
    view = asm.flat_view(MBits.of(asm.width)(io.inst), MAGMA)
    args = [MBit(getattr(io, n)) if _mtype(T) is m.Bit else
            MBits.of(T.size, _signed(T))(getattr(io, n)) for n, T in nf.inputs]
    raw, nxt = nf.function(MAGMA)(state, view, *args)
    outs = nf.outputs_tuple(raw)
    for (n, T), v in zip(nf.outputs, outs, strict=True):
        getattr(io, n).wire(_to_port(T, v))
    for r, leaf, v in zip(regs, nf.state, nxt, strict=True):
        r.I @= _to_port(leaf.T, v)
        r.CE @= io.clk_en


def _signed(T: Any) -> bool:
    return is_signed_type(T)


def _sanitize(s: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in s)


def write_verilog(spec: type, out_dir: str) -> str:
    """Compile :func:`pe_circuit` to ``<out_dir>/<module name>.v`` (mlir-verilog) and return
    the file path. ``out_dir`` is created if missing."""
    circ = pe_circuit(spec)
    os.makedirs(out_dir, exist_ok=True)
    base = os.path.join(out_dir, circ.name)
    m.compile(base, circ, output="mlir-verilog")
    return base + ".v"


@functools.lru_cache(maxsize=None)
def pe_core_circuit(spec: type) -> Any:
    """The PE as a tile core (``cgra.core`` interface): ports ``CLK``, ``RESET``,
    ``clk_en``, ``flush`` (unused by PEs), the data ports, and ``config_inst``
    (``Bits[width]``, the flat instruction). Module name ``<pe module>_core``."""
    pe = pe_circuit(spec)
    nf = normal_form(spec)
    asm = assembler(nf.isa)
    ports: dict[str, Any] = {"clk_en": m.In(m.Bit), "flush": m.In(m.Bit),
                             "config_inst": m.In(m.Bits[asm.width])}
    for n, T in nf.inputs:
        ports[n] = m.In(_mtype(T))
    for n, T in nf.outputs:
        ports[n] = m.Out(_mtype(T))
    core_name = f"{pe.name}_core"

    class _Core(m.Circuit):
        name = core_name
        io = m.IO(**ports) + m.ClockIO(has_reset=True)
        _wire_core(io, pe, nf)

    return _Core


def _wire_core(io: Any, pe: Any, nf: Any) -> None:
    inst = pe(name="pe")
    inst.inst @= io.config_inst
    inst.clk_en @= io.clk_en
    inst.CLK @= io.CLK
    inst.RESET @= io.RESET
    for n, _ in nf.inputs:
        getattr(inst, n).wire(getattr(io, n))
    for n, _ in nf.outputs:
        getattr(io, n).wire(getattr(inst, n))


def pe_core_spec(spec: type) -> Any:
    """A :class:`cgra.core.CoreSpec` for ``spec``: tag ``p``, one config field ``inst``
    (the flat instruction, packed LSB first into 32-bit registers), ``build`` =
    :func:`pe_core_circuit`, ``info`` = :func:`peak.collateral.pe_json`."""
    nf = normal_form(spec)
    asm = assembler(nf.isa)
    ports = tuple([PortSpec(n, getattr(T, "size", 1), "in") for n, T in nf.inputs] +
                  [PortSpec(n, getattr(T, "size", 1), "out") for n, T in nf.outputs])
    return CoreSpec(name=f"{pe_circuit(spec).name}_core", tag="p", ports=ports,
                    config_fields=(ConfigField("inst", asm.width, 0),),
                    build=lambda: pe_core_circuit(spec), info=pe_json(spec))
