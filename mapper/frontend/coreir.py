"""Front end B: import CoreIR JSON compute kernels into the IR.

Input: a CoreIR JSON file as emitted by the Halide-to-CGRA flow (``namespaces -> global ->
modules``), one module per Halide stage named ``hcompute_<stage>``.  Only the design's own
namespace is read: the one of field ``top`` (``"<namespace>.<module>"``) when the file has
one, else ``global``.  Library namespaces (``coreir``, ``commonlib``, ``corebit``,
``memory``, ``float_DW`` ...: :data:`LIBRARY_NAMESPACES`), which hold generator and module
definitions when CoreIR saves a design with its libraries, and any other namespace are never
read, so nothing in them is imported or reported.  Each ``hcompute_*`` module of the design
namespace becomes one :class:`mapper.ir.Kernel` (other modules -- a top level wiring the
kernels -- are ignored):

- a module input port of type ``Array n (Array w BitIn)`` (a stencil window) becomes kernel
  input ``<port>`` with ``n`` indexed elements of ``w`` bits; ``Array w BitIn`` is a 1-element
  input; ``BitIn`` a 1-bit input.  An output port is one word ``Array w Bit`` or one bit
  ``Bit`` and becomes a kernel output.  Widths are 1..:data:`MAX_WIDTH` bits;
- each instance (``genref`` / ``modref`` naming a CoreIR, commonlib or corebit primitive of
  :data:`mapper.ir.OPS`) becomes one node of that op, ``genargs.width = ["Int", w]`` bits wide
  (16 when absent; corebit ops are 1 bit).  BFloat16 ops (``float.add sub mul max min lt le
  gt ge eq``) are 16 bits; their genargs ``exp_bits``/``frac_bits`` must be 8/7 when given.
  CoreIR's DesignWare float modules (``float_DW.fp_add`` / ``fp_mul`` / ``fp_sub`` with
  ports ``a``, ``b``, ``rnd``, ``z``, ``status``, and the comparator ``float_DW.fp_cmp``)
  become those ops when they are BFloat16 with ``rnd`` tied to round-to-nearest-even
  (:func:`_designware`, its docstring cites the interfaces).  Constants take ``modargs.value``:
  ``[["BitVector", w], "w'h0018"]`` (also ``'d``, ``'b``, ``'o``, a decimal string or a JSON
  integer; the literal's size and the value must fit ``w``; ``x``/``z`` digits are refused)
  or ``["Bool", true]``;
- two CoreIR ops expand into several nodes (:data:`EXPANDED_OPS`): ``coreir.udiv`` whose
  divisor ``in1`` is driven by a ``coreir.const`` becomes an exact multiply-shift of IR ops
  (:func:`udiv_by_constant`; divisor 0 is an error, CoreIR leaves it undefined), and
  ``commonlib.opn`` (genargs ``width``, ``N``, ``operator = ["String", "coreir.add"]``; ports
  ``in.0`` .. ``in.<N-1>``, ``out``) becomes CoreIR's balanced tree of ``N - 1`` operator
  nodes (:func:`opn_tree`; operators: :data:`OPN_OPERATORS`); BFloat16 ``float.div`` (ports
  ``in0``, ``in1``) and ``float.exp`` (port ``in``) become the documented approximations of
  :mod:`mapper.frontend.float_math` (<= 2 ulp; the FP PE);
- ``connections`` join one driver (an instance's ``out``, a module input ``self.<port>`` or
  element ``self.<port>.<i>``) with one sink (an instance input port named as in CoreIR:
  ``in0``, ``in1``, ``sel``, ``in``; or a module output ``self.<port>``); bit selects are not
  supported.  Operand widths must match the op (data ports ``w`` bits, ``sel`` and corebit
  ports 1 bit);
- nodes are emitted in topological order from the outputs; instances that reach no output
  are dropped (after being checked: op, width and constant value).

Errors: every problem with the input raises :class:`MappingError` with a one-line message
naming the file, the module / instance / field at fault and the fix (never a Python
traceback): a file that cannot be read or is not JSON (with the JSON error's line), a missing
``namespaces`` / design namespace / ``modules``, a malformed ``top``, no ``hcompute_*``
module, an unsupported port type, a malformed or too wide constant, a connection naming an
unknown instance or port, a width mismatch, a sink driven twice or not at all, a
combinational cycle, a division by the constant 0.  Unsupported ops come first and all at
once: one error lists every op of the file's kernels the importer cannot translate (each with
its instance count and first module / instance; ``coreir.udiv`` by a non-constant divisor,
any op outside :data:`mapper.ir.OPS`), never the supported ones.

Lookup tables: ``memory.rom2`` (genargs ``width``, optional ``depth``; modargs ``init`` =
``["Json", [v0, v1, ...]]`` or ``["Json", {"init": [...]}]``, ``depth`` entries that fit
``width`` bits; ports ``raddr`` in, ``rdata`` out, ``ren`` tied to the constant 1 or left
unconnected, ``clk`` ignored) becomes the IR lookup :data:`mapper.ir.LUT_OP` (a MEM tile in
lookup-table mode; its one-cycle read is balanced by pipelining like any core latency).

Shipped examples: the kernels of ten real applications ship as package data in
:data:`EXAMPLES_DIR` (provenance in its ``README.md``); :func:`example_kernels` lists them and
:func:`example_path` finds one by name.
"""
from __future__ import annotations

import json
import re
from importlib.resources import files
from pathlib import Path
from typing import Any

from cgra.errors import MappingError
from mapper import ir
from mapper.frontend import float_math

#: ops whose instance has no ``genargs.width`` (1-bit corebit primitives)
_BIT_OPS = {k for k in ir.OPS if k.startswith("corebit.")}
#: prefix of the module name of a compute kernel (one per Halide stage)
KERNEL_PREFIX = "hcompute_"
#: widest port, op or constant the importer accepts (bits)
MAX_WIDTH = 64
_SUFFIX = "_compute.json"
_LAYOUT = 'a CoreIR JSON file is {"namespaces": {"global": {"modules": {"hcompute_<stage>": ...}}}}'


def _examples_dir() -> Path:
    """``mapper/data/coreir`` of the imported package (source tree or site-packages; a real
    directory: pip installs packages unzipped)."""
    res = files("mapper") / "data" / "coreir"
    return res if isinstance(res, Path) else Path(str(res))


#: directory of the shipped example kernels (``<app>_compute.json``), package data of mapper
EXAMPLES_DIR: Path = _examples_dir()


def example_kernels() -> dict[str, Path]:
    """The shipped example kernel files: application name -> path, sorted by name
    (``"gaussian"`` -> ``EXAMPLES_DIR / "gaussian_compute.json"``)."""
    return {p.name[: -len(_SUFFIX)]: p for p in sorted(EXAMPLES_DIR.glob(f"*{_SUFFIX}"))}


def example_path(name: str) -> Path:
    """Path of the shipped example kernel ``name`` (e.g. ``"harris"``).

    Raises :class:`MappingError` listing the shipped names when ``name`` is not one of them.
    """
    kernels = example_kernels()
    if name not in kernels:
        raise MappingError(f"unknown example CoreIR kernel {name!r}; the shipped examples "
                           f"(in {EXAMPLES_DIR}) are: {', '.join(kernels) or 'none'}")
    return kernels[name]


# ----------------------------------------------------------------------------- helpers
def _jtype(v: Any) -> str:
    """The JSON type name of a parsed value (for messages)."""
    if isinstance(v, dict):
        return "object"
    if isinstance(v, (list, tuple)):
        return "array"
    if isinstance(v, str):
        return "string"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    return "null" if v is None else type(v).__name__


def _show(v: Any, limit: int = 60) -> str:
    """A short JSON rendering of ``v`` for messages."""
    try:
        s = json.dumps(v)
    except (TypeError, ValueError, RecursionError):
        s = f"<a JSON {_jtype(v)}>"
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _name(n: Any) -> str:
    """``n`` as is when it reads unambiguously in a message, else quoted."""
    return n if isinstance(n, str) and n and n.isprintable() and n == n.strip() else repr(n)


def _names(names: Any, limit: int = 6) -> str:
    names = [_name(n) for n in names]
    if not names:
        return "none"
    more = f", ... ({len(names)} in all)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


_WIDTH_FIX = f'write ["Int", w] with 1 <= w <= {MAX_WIDTH}'
_LITERAL = re.compile(r"([0-9]{1,9})'([hHdDbBoO])(.*)")
_BASES = {"h": 16, "d": 10, "b": 2, "o": 8}
_DIGITS = {16: set("0123456789abcdef"), 10: set("0123456789"), 8: set("01234567"), 2: set("01")}
_CONST_FIX = ('write modargs.value as [["BitVector", w], "<w>\'h<hex digits>"] (corebit.const: '
              '["Bool", true] or ["Bool", false])')


def _parse_const(v: Any, width: int, where: str) -> int:
    """The ``width``-bit value of a constant's ``modargs.value`` (unsigned bit pattern)."""
    where = f"{where}: field modargs.value"
    if not (isinstance(v, list) and len(v) == 2):
        raise MappingError(f"{where} is {_show(v)}; {_CONST_FIX}")
    typ, val = v
    if typ == "Bool":
        if not isinstance(val, bool):
            raise MappingError(f"{where}: a Bool value must be true or false, got {_show(val)}")
        if width != 1:
            raise MappingError(f"{where}: a Bool value for a {width}-bit constant; "
                               f"{_CONST_FIX}")
        return int(val)
    if not (isinstance(typ, list) and len(typ) == 2 and typ[0] == "BitVector"
            and _is_int(typ[1])):
        raise MappingError(f"{where}: value type {_show(typ)} is neither [\"BitVector\", w] nor "
                           f"\"Bool\"; {_CONST_FIX}")
    if typ[1] != width:
        raise MappingError(f"{where}: value type BitVector {typ[1]} differs from the instance "
                           f"width {width} bits (genargs.width); make them equal")
    if _is_int(val):
        value = val
    elif isinstance(val, str):
        s = val.strip()
        m = _LITERAL.fullmatch(s)
        if m:
            size, base = int(m.group(1)), _BASES[m.group(2).lower()]
            digits = m.group(3).replace("_", "").lower()
            if digits and set(digits) & set("xz?"):
                fixed = m.group(1) + "'" + m.group(2) + re.sub(r"[xXzZ?]", "0", m.group(3))
                raise MappingError(f"{where}: constant {val!r} has x/z digits (unknown or "
                                   f"high-impedance bits), which are not a value; give every "
                                   f"bit a 0/1 value (e.g. {fixed!r})")
            if not digits or not set(digits) <= _DIGITS[base]:
                raise MappingError(f"{where}: constant {val!r}: {m.group(3)!r} are not base-"
                                   f"{base} digits; {_CONST_FIX}")
            if size != width:
                raise MappingError(f"{where}: constant {val!r} is a {size}-bit literal but the "
                                   f"instance is {width} bits wide (genargs.width); write it "
                                   f"as {width}'{m.group(2)}...")
            stripped = digits.lstrip("0")
            if len(stripped) > width:       # d digits in base >= 2 need at least d bits
                raise MappingError(f"{where}: constant {val!r} does not fit in its declared "
                                   f"width of {width} bits; use a value below 2**{width}")
            value = int(stripped or "0", base)
        elif re.fullmatch(r"-?[0-9]{1,40}", s):
            value = int(s)
        else:
            raise MappingError(f"{where}: cannot parse constant {val!r}; {_CONST_FIX}")
    else:
        raise MappingError(f"{where}: constant {_show(val)} is a JSON {_jtype(val)}; "
                           f"{_CONST_FIX}")
    if not -(1 << (width - 1)) <= value < (1 << width):
        raise MappingError(f"{where}: constant {_show(val)} does not fit in its declared width "
                           f"of {width} bits; use a value below 2**{width}")
    return value & ((1 << width) - 1)


def _word(t: Any) -> tuple[str, int] | None:
    """(direction, width) of ``BitIn`` / ``Bit`` / ``Array w BitIn`` / ``Array w Bit``."""
    if isinstance(t, str) and t in ("BitIn", "Bit"):
        return ("in" if t == "BitIn" else "out", 1)
    if (isinstance(t, list) and len(t) == 3 and t[0] == "Array" and isinstance(t[2], str)
            and t[2] in ("BitIn", "Bit") and _is_int(t[1]) and 1 <= t[1] <= MAX_WIDTH):
        return ("in" if t[2] == "BitIn" else "out", t[1])
    return None


def _port_shape(t: Any) -> tuple[str, int, int] | None:
    """(direction 'in'/'out', element count, element width) of a module port type."""
    w = _word(t)
    if w is not None:
        return (w[0], 1, w[1])
    if isinstance(t, list) and len(t) == 3 and t[0] == "Array" and _is_int(t[1]) and t[1] >= 1:
        w = _word(t[2])
        if w is not None and t[2] not in ("BitIn", "Bit"):
            return (w[0], t[1], w[1])
    return None


#: genargs naming a float format: CoreIR ``float`` (exp_bits, frac_bits) and ``float_DW``
#: (exp_width, sig_width); only BFloat16 (8, 7) is supported
_FLOAT_FORMAT_ARGS = (("exp_bits", "frac_bits"), ("exp_width", "sig_width"))


def _float_width(inst: dict[str, Any], where: str) -> int:
    ga = inst.get("genargs") or {}
    if not isinstance(ga, dict):
        raise MappingError(f"{where}: field genargs is a JSON {_jtype(ga)}, not an object; "
                           f"write {{\"exp_bits\": [\"Int\", 8], \"frac_bits\": [\"Int\", 7]}}")
    for e_name, f_name in _FLOAT_FORMAT_ARGS:
        for name, want in ((e_name, 8), (f_name, 7)):
            v = ga.get(name)
            if v is None:
                continue
            got = v[1] if isinstance(v, list) and len(v) == 2 and v[0] == "Int" else v
            if got != want:
                raise MappingError(f"{where}: field genargs.{name} is {_show(v)}; only "
                                   f"BFloat16 is supported ({e_name} = 8, {f_name} = 7)")
    return ir.FLOAT_WIDTH


def _instance_width(op: str, inst: dict[str, Any], where: str) -> int:
    if op in _BIT_OPS:
        return 1
    if op in ir.FLOAT_OPS or op in ("float.div", "float.exp"):
        return _float_width(inst, where)
    ga = inst.get("genargs")
    if ga is None:
        return 16
    if not isinstance(ga, dict):
        raise MappingError(f"{where}: field genargs is a JSON {_jtype(ga)}, not an object; "
                           f"write {{\"width\": [\"Int\", 16]}}")
    w = ga.get("width")
    if w is None:
        return 16
    if not (isinstance(w, list) and len(w) == 2 and w[0] == "Int" and _is_int(w[1])
            and 1 <= w[1] <= MAX_WIDTH):
        raise MappingError(f"{where}: field genargs.width is {_show(w)}; {_WIDTH_FIX}")
    return w[1]


# ------------------------------------------------------------- expanded CoreIR generators
_UDIV = "coreir.udiv"
_OPN = "commonlib.opn"
#: CoreIR's float division and exponential: multi-PE decompositions (:mod:`mapper.frontend.float_math`)
FLOAT_EXPANDED = {"float.div": ("in0", "in1"), "float.exp": ("in",)}
#: CoreIR ops the importer expands into several IR nodes (not ops of :data:`mapper.ir.OPS`)
EXPANDED_OPS = frozenset({_UDIV, _OPN, *FLOAT_EXPANDED})
#: operators a ``commonlib.opn`` may reduce with: the IR's binary ops on two data words with a
#: data result (a float op is not: CoreIR instantiates the operator with ``width`` only)
OPN_OPERATORS = frozenset(n for n, s in ir.OPS.items()
                          if s.operands == (ir.DATA, ir.DATA) and s.result == ir.DATA
                          and n not in ir.FLOAT_OPS)
#: widest ``commonlib.opn`` (operands); CoreIR sets no bound, this keeps messages and kernels sane
MAX_OPN = 4096
#: CoreIR's library namespaces: never a design, never read (they hold generator and module
#: definitions of primitives when a file is saved with its libraries)
LIBRARY_NAMESPACES = frozenset({"coreir", "corebit", "commonlib", "memory", "mantle", "float",
                                "float_DW", "float_CW", "float_DC", "cgralib", "lakelib",
                                "aetherlinglib", "ice40", "rtlil", "_prims"})
_SUPPORTED = ("the importer supports the ops of mapper.ir.OPS (memory.rom2 among them), "
              "coreir.udiv by a constant and commonlib.opn of a binary op")
#: ports of ``memory.rom2`` besides its operand ``raddr`` and result ``rdata``: ``ren`` (must be
#: the constant 1: the MEM tile reads every cycle) and ``clk``
_ROM_CONTROL = ("ren", "clk")


def _rom_table(inst: dict[str, Any], width: int, where: str) -> tuple[int, ...]:
    """The entries of a ``memory.rom2`` instance (module docstring); :class:`MappingError`
    naming the field when ``init`` is missing, malformed, of the wrong length or too wide."""
    fix = ("write modargs.init = [\"Json\", [v0, v1, ...]] with genargs.depth entries of "
           f"{width} bits")
    margs = inst.get("modargs")
    init = margs.get("init") if isinstance(margs, dict) else None
    if isinstance(init, list) and len(init) == 2 and init[0] == "Json":
        init = init[1]
    if isinstance(init, dict):
        init = init.get("init")
    if not isinstance(init, list) or not init or not all(_is_int(v) for v in init):
        raise MappingError(f"{where}: memory.rom2 field modargs.init is {_show(init)}; {fix}")
    if len(init) > ir.LUT_MAX_ENTRIES:
        raise MappingError(f"{where}: memory.rom2 has {len(init)} entries; at most "
                           f"{ir.LUT_MAX_ENTRIES}")
    ga = inst.get("genargs")
    depth = ga.get("depth") if isinstance(ga, dict) else None
    if depth is not None:
        if not (isinstance(depth, list) and len(depth) == 2 and depth[0] == "Int"
                and _is_int(depth[1])):
            raise MappingError(f"{where}: memory.rom2 field genargs.depth is {_show(depth)}; "
                               f"write [\"Int\", <entries>]")
        if depth[1] != len(init):
            raise MappingError(f"{where}: memory.rom2 genargs.depth is {depth[1]} but "
                               f"modargs.init has {len(init)} entries; make them equal")
    bad = [v for v in init if not 0 <= v < 1 << width]
    if bad:
        raise MappingError(f"{where}: memory.rom2 entry {bad[0]} does not fit {width} bits; "
                           f"{fix}")
    return tuple(int(v) for v in init)


def _ref(inst: Any) -> Any:
    """The op an instance names (``genref`` or ``modref``; CoreIR aliases resolved)."""
    op = inst.get("genref") or inst.get("modref")
    return ir.COREIR_ALIASES.get(op, op) if isinstance(op, str) else op


def _string_genarg(ga: Any, name: str) -> str | None:
    """``genargs.<name>`` when it is ``["String", s]`` (CoreIR's encoding), else None."""
    v = ga.get(name) if isinstance(ga, dict) else None
    if isinstance(v, list) and len(v) == 2 and v[0] == "String" and isinstance(v[1], str):
        return v[1]
    return None


def _unsupported(module: Any) -> list[tuple[str, str]]:
    """``(op label, instance name)`` of every instance of ``module`` the importer cannot
    translate, in instance order. Lenient: malformed parts are skipped here and reported by
    :func:`import_module` with their own message."""
    if not isinstance(module, dict) or not isinstance(module.get("instances"), dict):
        return []
    insts = module["instances"]
    driver: dict[str, str] = {}                 # "<inst>.in1" -> the other endpoint
    conns = module.get("connections")
    for conn in conns if isinstance(conns, list) else []:
        if isinstance(conn, list) and len(conn) == 2 and all(isinstance(e, str) for e in conn):
            driver.setdefault(conn[0], conn[1])
            driver.setdefault(conn[1], conn[0])
    found: list[tuple[str, str]] = []
    for iname, inst in insts.items():
        if not isinstance(inst, dict):
            continue
        op = _ref(inst)
        if not isinstance(op, str) or op in ir.OPS or op in FLOAT_EXPANDED or op == DW_CMP:
            continue
        if op == _UDIV:
            src = driver.get(f"{iname}.in1")
            if src is None:
                continue                        # undriven: import_module says so
            head, _, port = src.partition(".")
            if head != "self" and (head not in insts or port != "out"):
                continue                        # unknown instance / bit select: ditto
            if head != "self" and isinstance(insts[head], dict) \
                    and _ref(insts[head]) == "coreir.const":
                continue
            found.append((f"{_UDIV} with a non-constant divisor", iname))
        elif op == _OPN:
            operator = _string_genarg(inst.get("genargs"), "operator")
            if operator is not None and operator not in OPN_OPERATORS:
                found.append((f"{_OPN} of operator {_name(operator)}", iname))
        else:
            found.append((_name(op), iname))
    return found


def _unsupported_error(source: str, found: list[tuple[str, str, str]]) -> MappingError:
    """One MappingError listing every unsupported op of a file: ``found`` holds ``(op label,
    module, instance)`` in file order; each op appears once with its instance count and its
    first instance."""
    first: dict[str, tuple[str, str]] = {}
    count: dict[str, int] = {}
    for label, mod, iname in found:
        first.setdefault(label, (mod, iname))
        count[label] = count.get(label, 0) + 1
    items = [f"{label} ({count[label]} instance{'s' if count[label] > 1 else ''}; first: "
             f"module {_name(first[label][0])} instance {_name(first[label][1])})"
             for label in first]
    return MappingError(f"{source}: {len(first)} unsupported op{'s' if len(first) > 1 else ''} "
                        f"in the kernels: {', '.join(items)}; {_SUPPORTED}: add each op to "
                        f"mapper.ir.OPS with its semantics and a rewrite rule, or change the "
                        f"source program so its kernels do not use it")


class _Node(int):
    """A kernel node id (as opposed to a constant value) inside :class:`_Emit`."""

    @property
    def id(self) -> int:
        return int(self)


class _Emit:
    """Appends ``width``-bit ops to a kernel with constant folding of the operands that are
    Python ints (constants become ``coreir.const`` nodes only where an op needs them)."""

    def __init__(self, k: ir.Kernel, width: int, name: str) -> None:
        self.k, self.w, self.name, self.n = k, width, name, 0
        self.consts: dict[int, int] = {}

    def node(self, v: int | _Node) -> int:
        if isinstance(v, _Node):
            return v.id
        if v not in self.consts:
            self.consts[v] = self.k.const(v, self.w)
        return self.consts[v]

    def op(self, op: str, a: int | _Node, b: int | _Node, last: bool = False) -> int | _Node:
        ca = None if isinstance(a, _Node) else a
        cb = None if isinstance(b, _Node) else b
        if ca is not None and cb is not None:
            return ir.eval_op(op, [ca, cb], self.w)
        short = op.split(".", 1)[1]
        if (short in ("add", "sub", "lshr") and cb == 0) or (short == "mul" and cb == 1) \
                or (short == "and" and cb == (1 << self.w) - 1):
            return a
        if short == "add" and ca == 0:
            return b
        if (short in ("mul", "and") and 0 in (ca, cb)) or (short == "lshr" and ca == 0):
            return 0
        self.n += 1
        nid = self.k.add(op, self.node(a), self.node(b), width=self.w,
                         name=self.name if last else f"{self.name}_{self.n}")
        return _Node(nid)

    def result(self, v: int | _Node) -> int:
        return self.node(v)


def _mulhu(e: _Emit, x: int | _Node, v: int) -> int | _Node:
    """``floor(x * v / 2**(2h))``, ``h = w // 2``, for a node ``x < 2**(2h)`` and a constant
    ``0 <= v < 2**w`` (``w`` = the word width; for an even ``w`` this is the high word of the
    product), with ``w``-bit low-half products only: both factors split at bit ``h`` and the
    four partial products summed with their carries (Hacker's Delight, 2nd ed., section 8-2,
    ``mulhu``). Every intermediate value is below ``2**w``: ``x0*v0``, ``x1*v0 + carry`` <
    ``2**(2h)``; ``x0*v1 + (t mod 2**h) <= 2**(2h+1) - 2**(h+1)`` (``v1 < 2**(h+1)`` for an odd
    ``w``); the result ``< 2**w``. 14 ops (fewer when a half of ``v`` is 0 or 1)."""
    h = e.w // 2
    mask = (1 << h) - 1
    v0, v1 = v & mask, v >> h
    u0, u1 = e.op("coreir.and", x, mask), e.op("coreir.lshr", x, h)
    t = e.op("coreir.add", e.op("coreir.mul", u1, v0),
             e.op("coreir.lshr", e.op("coreir.mul", u0, v0), h))
    w1 = e.op("coreir.add", e.op("coreir.mul", u0, v1), e.op("coreir.and", t, mask))
    return e.op("coreir.add", e.op("coreir.add", e.op("coreir.mul", u1, v1),
                                   e.op("coreir.lshr", t, h)), e.op("coreir.lshr", w1, h))


def _check_divisor(d: int, w: int, name: str) -> None:
    """Raise :class:`MappingError` unless :func:`udiv_by_constant` can divide ``w``-bit words
    by the constant ``d`` (``name`` = the instance, for the message)."""
    if not 1 <= d < (1 << w):
        raise MappingError(f"instance {_name(name)} ({_UDIV}) divides by the constant {d}; "
                           f"CoreIR leaves division by 0 undefined: use a divisor "
                           f"1..{(1 << w) - 1} or remove the division")


def _opn_genargs(inst: dict[str, Any], where: str) -> tuple[int, str]:
    """``(N, operator)`` of a ``commonlib.opn`` instance: ``genargs.N = ["Int", N]`` (1 <= N
    <= :data:`MAX_OPN`) and ``genargs.operator = ["String", "<op>"]`` (CoreIR's names)."""
    ga = inst.get("genargs")
    fix = (f'write {{"width": ["Int", 16], "N": ["Int", <1..{MAX_OPN}>], "operator": '
           f'["String", "coreir.add"]}}')
    if not isinstance(ga, dict):
        raise MappingError(f"{where}: {_OPN} has no genargs object; {fix}")
    n = ga.get("N")
    if not (isinstance(n, list) and len(n) == 2 and n[0] == "Int" and _is_int(n[1])
            and 1 <= n[1] <= MAX_OPN):
        raise MappingError(f"{where}: field genargs.N of {_OPN} is {_show(n)}; {fix}")
    op = _string_genarg(ga, "operator")
    if op is None:
        raise MappingError(f"{where}: field genargs.operator of {_OPN} is "
                           f"{_show(ga.get('operator'))}; {fix}")
    if op not in OPN_OPERATORS:                 # _unsupported listed it
        raise MappingError(f"{where}: {_OPN} of operator {_name(op)} is not supported; use "
                           f"one of {', '.join(sorted(OPN_OPERATORS))}")
    return n[1], op


def udiv_by_constant(k: ir.Kernel, n: int, d: int, width: int, name: str) -> int:
    """Append ``floor(n / d)`` for kernel node ``n`` (a ``width``-bit unsigned word) and a
    constant divisor ``1 <= d < 2**width``; returns the node id of the quotient (``n`` itself
    when ``d == 1``). Only IR ops: ``coreir.mul`` (low ``width`` bits), ``lshr``, ``and``,
    ``add``, ``sub``, ``uge``, ``mux``. Exact for every dividend ``0 <= n < 2**width``:

    - ``d`` a power of two ``2**s``: one ``lshr`` by ``s``;
    - ``2 * d >= 2**width``: the quotient is 0 or 1: ``mux(0, 1, n >= d)``;
    - otherwise, ``width`` even: multiply by a magic reciprocal (Granlund & Montgomery,
      "Division by invariant integers using multiplication", PLDI 1994, section 4, Theorem
      4.2; Hacker's Delight, 2nd ed., section 10-8). With ``d = d' * 2**z`` (``d'`` odd),
      ``x = n >> z`` has ``N = width - z`` bits and ``floor(n / d) = floor(x / d')``. For the
      smallest ``p >= z`` with ``m = ceil(2**(N+p) / d')``, ``m*d' - 2**(N+p) <= 2**p``
      (Theorem 4.2's condition) and ``m < 2**width``: ``q = floor(x * m / 2**(N+p)) =
      mulhu(x, m) >> (N + p - width)``. When every such ``m`` needs ``width + 1`` bits (some
      odd ``d``), ``p = ceil(log2 d)``, ``m = 2**width + m'`` and ``q = (t + ((n - t) >> 1))
      >> (p - 1)`` with ``t = mulhu(n, m')`` (the paper's correction: ``n + t`` may overflow,
      ``t + (n - t) / 2`` cannot since ``t <= n``). The high product ``mulhu`` is never a
      hardware op: it is built from four ``width/2 x width/2``-bit products that fit a
      ``width``-bit ``mul`` (:func:`_mulhu`, Hacker's Delight section 8-2): 14 ops, at most
      18 in all;
    - otherwise, ``width = 2h + 1`` odd (the half-word products need an even split): the
      dividend is split, ``n = 2a + b`` (``a = n >> 1`` has ``2h`` bits, ``b = n & 1``);
      ``q1 = floor(a / d) = mulhu(a, m) >> l`` with ``l = ceil(log2 d)`` and ``m =
      ceil(2**(2h+l) / d) < 2**width`` (Theorem 4.2 for ``2h``-bit dividends, no correction
      needed); then ``r1 = a - q1*d < d``, ``n = 2*q1*d + (2*r1 + b)`` with ``2*r1 + b < 2d``,
      so ``q = 2*q1 + (2*r1 + b >= d)`` (a remainder correction step): at most 25 ops.

    Raises :class:`MappingError` (naming ``name``) for ``d == 0`` (CoreIR leaves it
    undefined).
    """
    w = width
    _check_divisor(d, w, name)
    e = _Emit(k, w, name)
    x = _Node(n)
    if d == 1:
        return n
    if d & (d - 1) == 0:
        return e.result(e.op("coreir.lshr", x, d.bit_length() - 1, last=True))
    if 2 * d >= 1 << w:
        ge = k.add("coreir.uge", x, e.node(d), name=f"{name}_ge")
        return k.add("coreir.mux", e.node(0), e.node(1), ge, width=w, name=name)
    if w % 2:
        lg = (d - 1).bit_length()
        m = -(-(1 << (w - 1 + lg)) // d)
        a, b = e.op("coreir.lshr", x, 1), e.op("coreir.and", x, 1)
        q1 = e.op("coreir.lshr", _mulhu(e, a, m), lg)
        r1 = e.op("coreir.sub", a, e.op("coreir.mul", q1, d))
        ge = k.add("coreir.uge", e.node(e.op("coreir.add", e.op("coreir.add", r1, r1), b)),
                   e.node(d), name=f"{name}_ge")
        inc = k.add("coreir.mux", e.node(0), e.node(1), ge, width=w, name=f"{name}_inc")
        return e.result(e.op("coreir.add", e.op("coreir.add", q1, q1), _Node(inc), last=True))
    z = (d & -d).bit_length() - 1
    dd, big_n = d >> z, w - z
    lg = (dd - 1).bit_length()                  # ceil(log2 d')
    for p in range(z, max(z, lg) + 1):
        m = -(-(1 << (big_n + p)) // dd)
        if m * dd - (1 << (big_n + p)) <= (1 << p) and m < (1 << w):
            xs = e.op("coreir.lshr", x, z)
            return e.result(e.op("coreir.lshr", _mulhu(e, xs, m), big_n + p - w, last=True))
    # d odd (z = 0) here: an even d' * 2**z with z >= 1 always finds m < 2**(N+1) <= 2**w
    p = (d - 1).bit_length()
    m = -(-(1 << (w + p)) // d) - (1 << w)
    t = _mulhu(e, x, m)
    half = e.op("coreir.add", t, e.op("coreir.lshr", e.op("coreir.sub", x, t), 1))
    return e.result(e.op("coreir.lshr", half, p - 1, last=True))


def opn_tree(k: ir.Kernel, op: str, args: list[int], width: int, name: str) -> int:
    """Append CoreIR's ``commonlib.opn`` of binary op ``op`` over nodes ``args``: the tree
    of CoreIR's generator (src/libs/commonlib.cpp, ``opN``): one operand is itself, else
    ``op(opn(first 2**(b-1)), opn(rest))`` with ``b`` the bit length of ``len(args) - 1``
    (the largest power of two below ``len(args)`` goes left). Depth ``ceil(log2 n)``, ``n -
    1`` ops; the same association as CoreIR, so a non-associative op (``coreir.sub``)
    computes what CoreIR computes. Returns the root's node id (named ``name``)."""
    counter = [0]

    def tree(xs: list[int], top: bool) -> int:
        if len(xs) == 1:
            return xs[0]
        left = 1 << ((len(xs) - 1).bit_length() - 1)
        a, b = tree(xs[:left], False), tree(xs[left:], False)
        counter[0] += 1
        return k.add(op, a, b, width=width, name=name if top else f"{name}_{counter[0]}")

    return tree(list(args), True)


# ------------------------------------------------------- DesignWare float modules (float_DW)
#: ``float_DW`` generators with the DesignWare two-operand interface (inputs ``a``, ``b``
#: (``1 + exp_width + sig_width`` bits), ``rnd`` (3 bits); outputs ``z``, ``status`` (8
#: bits)) -> the IR op of ``z``
DW_BINARY = {"float_DW.fp_add": "float.add", "float_DW.fp_mul": "float.mul",
             "float_DW.fp_sub": "float.sub"}
#: the DesignWare comparator (``DW_fp_cmp``): inputs ``a``, ``b``, ``zctr`` (1 bit); outputs
#: ``altb``, ``agtb``, ``aeqb``, ``unordered`` (1 bit), ``z0``, ``z1`` (words), ``status0``,
#: ``status1`` (8 bits)
DW_CMP = "float_DW.fp_cmp"
#: ``DW_fp_cmp`` output port -> the IR op computing it from (a, b); ``z0``/``z1`` depend on
#: ``zctr`` (:func:`_designware`)
_DW_CMP_FLAGS = {"altb": "float.lt", "agtb": "float.gt", "aeqb": "float.eq"}
#: the rounding mode the FP PE implements: DesignWare ``rnd`` = 3'b000, IEEE 754 round to
#: nearest, ties to even (the value CoreIR's ``float.add`` / ``float.mul`` tie it to)
DW_RND_NEAREST_EVEN = 0
#: float_DW port names -> the CoreIR ``float`` names (the MetaMapper form of float_DW
#: instances, with no ``rnd``, uses the latter directly)
_DW_PORTS = {"a": "in0", "b": "in1", "z": "out", "in0": "in0", "in1": "in1", "out": "out"}


def _dw_format(inst: dict[str, Any], where: str) -> dict[str, Any]:
    """The CoreIR ``float`` genargs of a float_DW instance: ``exp_width`` / ``sig_width``
    must be BFloat16's 8 / 7 and ``ieee_compliance`` false (or absent)."""
    ga = inst.get("genargs")
    if ga is None:
        ga = {}
    if not isinstance(ga, dict):
        raise MappingError(f"{where}: field genargs is a JSON {_jtype(ga)}, not an object; "
                           f"write {{\"exp_width\": [\"Int\", 8], \"sig_width\": [\"Int\", 7], "
                           f"\"ieee_compliance\": [\"Bool\", false]}}")

    def arg(name: str) -> Any:
        v = ga.get(name)
        return v[1] if isinstance(v, list) and len(v) == 2 else v

    e, f = arg("exp_width"), arg("sig_width")
    if (e, f) != (8, 7):
        raise MappingError(f"{where}: genargs exp_width = {_show(e)}, sig_width = {_show(f)}; "
                           f"only BFloat16 (exp_width 8, sig_width 7) maps onto the FP PE: "
                           f"compute in bfloat16 or map onto a PE with that float format")
    if arg("ieee_compliance") not in (None, False, 0):
        raise MappingError(f"{where}: genargs ieee_compliance = "
                           f"{_show(ga.get('ieee_compliance'))}; the FP PE flushes subnormals "
                           f"like DesignWare's non-compliant mode: set ieee_compliance false")
    return {"exp_bits": ["Int", 8], "frac_bits": ["Int", 7]}


def _designware(name: str, module: dict[str, Any], source: str) -> dict[str, Any]:
    """``module`` with its ``float_DW`` instances written as CoreIR ``float`` instances (the
    module itself when it has none); see :func:`import_module`.

    Sources of the interfaces: CoreIR's float_DW library (``src/libs/float_DW.cpp`` of
    rdaly525/coreir) declares ``fp_add`` and ``fp_mul`` with genargs ``exp_width``,
    ``sig_width``, ``ieee_compliance`` and ports ``a``, ``b``, ``rnd`` (3-bit input), ``z``,
    ``status`` (8-bit output), and defines CoreIR's ``float.add`` / ``float.mul`` as such an
    instance with ``rnd`` tied to the constant 0; ``fp_sub`` and ``fp_cmp`` are DesignWare's
    ``DW_fp_sub`` (same interface) and ``DW_fp_cmp`` (Synopsys DesignWare Building Block IP
    datasheets; ports ``a``, ``b``, ``zctr``, ``aeqb``, ``altb``, ``agtb``, ``unordered``,
    ``z0``, ``z1``, ``status0``, ``status1``: ``z0`` = min(a, b) and ``z1`` = max(a, b) when
    ``zctr`` = 0, swapped when 1). DesignWare's ``rnd`` = 0 is IEEE 754 round to nearest,
    ties to even, the FP PE's only mode.

    Mapping (BFloat16 only: ``exp_width`` 8, ``sig_width`` 7, ``ieee_compliance`` false):
    ``fp_add`` / ``fp_mul`` / ``fp_sub`` become ``float.add`` / ``mul`` / ``sub`` (``a``,
    ``b``, ``z`` -> ``in0``, ``in1``, ``out``; an instance written with those names, as
    MetaMapper does, is taken as is); an ``fp_cmp`` becomes one instance per output read:
    ``altb`` / ``agtb`` / ``aeqb`` -> ``float.lt`` / ``gt`` / ``eq`` of (a, b), ``z0`` / ``z1``
    -> ``float.min`` / ``max`` as ``zctr`` says (named ``<instance>$<port>``).

    Raises :class:`MappingError` (one line, naming the instance and the fix) for another
    float format or ``ieee_compliance``, ``rnd`` not driven by a ``coreir.const`` 0 (another
    rounding mode or a computed one; unconnected on an ``a``/``b``/``z`` instance),
    ``status`` / ``status0`` / ``status1`` / ``unordered`` read by logic, ``zctr`` not a
    constant when ``z0`` / ``z1`` is read, or an unknown port of a float_DW instance."""
    insts = module.get("instances")
    conns = module.get("connections")
    if not isinstance(insts, dict) or not isinstance(conns, list):
        return module
    dw = {i: (inst.get("genref") or inst.get("modref")) for i, inst in insts.items()
          if isinstance(inst, dict)
          and (inst.get("genref") or inst.get("modref")) in (*DW_BINARY, DW_CMP)}
    if not dw:
        return module
    where = f"{source}: module {name}"
    pairs = [c for c in conns if isinstance(c, list) and len(c) == 2
             and all(isinstance(e, str) for e in c)]
    # every endpoint of a float_DW instance, with the endpoint at the other end
    ends: dict[tuple[str, str], list[str]] = {}
    for a, b in pairs:
        for x, y in ((a, b), (b, a)):
            head, _, port = x.partition(".")
            if head in dw:
                ends.setdefault((head, port), []).append(y)

    def const_of(ep: str) -> tuple[str, Any] | None:
        """(op, value) of the constant instance ``ep`` names (``<inst>.out``), else None."""
        head, _, port = ep.partition(".")
        inst = insts.get(head)
        if port != "out" or not isinstance(inst, dict):
            return None
        op = _ref(inst)
        if op not in ir.CONST_OPS:
            return None
        margs = inst.get("modargs")
        value = margs.get("value") if isinstance(margs, dict) else None
        if op == "corebit.const":
            v = value[1] if isinstance(value, list) and len(value) == 2 else value
            return op, int(v) if isinstance(v, bool) else None
        w = _instance_width(op, inst, f"{where}: instance {head}")
        return op, _parse_const(value, w, f"{where}: instance {head}")

    new_insts = {i: inst for i, inst in insts.items() if i not in dw}
    renamed: dict[str, list[str]] = {}           # old endpoint -> new endpoints
    dropped: set[str] = set()                    # endpoints of rnd / zctr (constants checked)
    for iname, op in dw.items():
        iwhere = f"{where}: instance {iname} ({op})"
        fmt = _dw_format(insts[iname], iwhere)
        ports = {p for (i, p) in ends if i == iname}
        for p in sorted(ports):
            if p in ("status", "status0", "status1", "unordered"):
                raise MappingError(f"{iwhere}: output {p} is read by {ends[(iname, p)][0]}; "
                                   f"the FP PE has no {p} flag: remove the connection (leave "
                                   f"{p} unconnected)")
        if op in DW_BINARY:
            known = {"a", "b", "z", "rnd", "in0", "in1", "out"}
        else:
            known = {"a", "b", "zctr", *_DW_CMP_FLAGS, "z0", "z1"}
        bad = sorted(ports - known)
        if bad:
            raise MappingError(f"{iwhere}: connection names port {bad[0]!r}; {op} has ports "
                               f"{', '.join(sorted(known))} (and outputs status"
                               f"{'' if op in DW_BINARY else '0, status1, unordered'}, which "
                               f"the FP PE does not have); fix the port name")
        dw_form = bool(ports & {"a", "b", "z", "z0", "z1", *_DW_CMP_FLAGS})
        if op in DW_BINARY and dw_form or "rnd" in ports:
            src = ends.get((iname, "rnd"), [None])[0]
            got = const_of(src) if src is not None else None
            if got is None or got[1] != DW_RND_NEAREST_EVEN:
                how = ("unconnected" if src is None else f"driven by {src}" if got is None
                       else f"the constant {got[1]}")
                raise MappingError(f"{iwhere}: rnd is {how}; the FP PE rounds to nearest, "
                                   f"ties to even only (DesignWare rnd = 0): tie rnd to a "
                                   f"3-bit coreir.const 0")
            dropped.add(f"{iname}.rnd")
        if op in DW_BINARY:
            new_insts[iname] = {"genref": DW_BINARY[op], "genargs": fmt}
            for p in ports - {"rnd"}:
                renamed[f"{iname}.{p}"] = [f"{iname}.{_DW_PORTS[p]}"]
            continue
        zctr = None
        if ports & {"z0", "z1"}:
            src = ends.get((iname, "zctr"), [None])[0]
            got = const_of(src) if src is not None else None
            if got is None or got[1] not in (0, 1):
                how = "unconnected" if src is None else f"driven by {src}"
                raise MappingError(f"{iwhere}: zctr is {how} and z0/z1 are read; the min/max "
                                   f"outputs need a constant zctr: tie it to a corebit.const "
                                   f"(0: z0 = min, z1 = max)")
            zctr = got[1]
        dropped.add(f"{iname}.zctr")
        outs = {p: _DW_CMP_FLAGS.get(p) for p in ports if p not in ("a", "b", "zctr")}
        for p in outs:
            if p in ("z0", "z1"):
                outs[p] = "float.min" if (p == "z0") == (zctr == 0) else "float.max"
        for p, irop in sorted(outs.items()):
            new = f"{iname}${p}"
            if new in insts:
                raise MappingError(f"{iwhere}: the instance {new} that stands for output {p} "
                                   f"already exists; rename it")
            new_insts[new] = {"genref": irop, "genargs": fmt}
            renamed[f"{iname}.{p}"] = [f"{new}.out"]
        for p, q in (("a", "in0"), ("b", "in1")):
            renamed[f"{iname}.{p}"] = [f"{iname}${o}.{q}" for o in sorted(outs)]
    new_conns: list[Any] = []
    for c in conns:
        if not (isinstance(c, list) and len(c) == 2 and all(isinstance(e, str) for e in c)):
            new_conns.append(c)                  # import_module reports it
            continue
        a, b = c
        if a in dropped or b in dropped:
            continue
        for x in renamed.get(a, [a]):
            for y in renamed.get(b, [b]):
                new_conns.append([x, y])
    return {**module, "instances": new_insts, "connections": new_conns}


# ----------------------------------------------------------------------------- import
def import_module(name: str, module: dict[str, Any], source: str = "<json>") -> ir.Kernel:
    """Import one CoreIR module dict as a Kernel (see the module docstring).

    Raises :class:`MappingError` naming ``source``, the module, the instance or field and the
    fix on any problem."""
    where = f"{source}: module {name}"
    if not isinstance(module, dict):
        raise MappingError(f"{where}: the module is a JSON {_jtype(module)}, not an object with "
                           f"'type', 'instances' and 'connections'")
    found = _unsupported(module)
    if found:
        raise _unsupported_error(source, [(label, name, iname) for label, iname in found])
    module = _designware(name, module, source)
    k = ir.Kernel(name)
    typ = module.get("type")
    if not (isinstance(typ, list) and len(typ) == 2 and typ[0] == "Record"
            and isinstance(typ[1], list)):
        raise MappingError(f"{where}: field type is {_show(typ)}; it must be a Record of ports "
                           f"[\"Record\", [[\"<port>\", <type>], ...]]")
    ports: dict[str, tuple[str, int, int]] = {}
    outputs: dict[str, int] = {}
    for entry in typ[1]:
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)):
            raise MappingError(f"{where}: field type: port entry {_show(entry)} is not "
                               f"[\"<port name>\", <type>]")
        pname, ptype = entry
        if not pname or "." in pname or pname in ports:
            why = "is declared twice" if pname in ports else "is empty or contains '.'"
            raise MappingError(f"{where}: port name {pname!r} {why}; give every port a "
                               f"unique name without '.'")
        shape = _port_shape(ptype)
        if shape is None or (shape[0] == "out" and _word(ptype) is None):
            raise MappingError(f"{where}: port {pname} has unsupported type {_show(ptype)}; an "
                               f"input is [\"Array\", n, [\"Array\", w, \"BitIn\"]], "
                               f"[\"Array\", w, \"BitIn\"] or \"BitIn\", an output "
                               f"[\"Array\", w, \"Bit\"] or \"Bit\" (1 <= w <= {MAX_WIDTH})")
        ports[pname] = shape
        d, n, w = shape
        if d == "in":
            k.declare_input(pname, n, w)
        else:
            outputs[pname] = w
    if not outputs:
        raise MappingError(f"{where}: the module has no output port; a compute kernel needs at "
                           f"least one output [\"Array\", w, \"Bit\"] or \"Bit\" in its type")

    insts = module.get("instances")
    if insts is None:
        insts = {}
    if not isinstance(insts, dict):
        raise MappingError(f"{where}: field instances is a JSON {_jtype(insts)}; it must be an "
                           f"object instance name -> {{\"genref\": <op>, ...}}")
    ops: dict[str, str] = {}
    widths: dict[str, int] = {}
    values: dict[str, int] = {}
    ports_of: dict[str, tuple[str, ...]] = {}       # operand ports in operand order
    kinds_of: dict[str, tuple[str, ...]] = {}       # their kinds (ir.DATA / ir.BIT)
    operator: dict[str, str] = {}                   # commonlib.opn instance -> binary op
    tables: dict[str, tuple[int, ...]] = {}         # memory.rom2 instance -> its entries
    for iname, inst in insts.items():
        iwhere = f"{where}: instance {iname}"
        if not isinstance(iname, str) or not iname or "." in iname or iname == "self":
            raise MappingError(f"{where}: instance name {iname!r} is empty, 'self' or contains "
                               f"'.'; rename the instance")
        if not isinstance(inst, dict):
            raise MappingError(f"{iwhere}: the instance is a JSON {_jtype(inst)}; it must be an "
                               f"object {{\"genref\": <op>, \"genargs\": ...}}")
        op = _ref(inst)
        if not isinstance(op, str) or not op:
            raise MappingError(f"{iwhere} names no op: field genref/modref is {_show(op)}; "
                               f"write the op's CoreIR name, e.g. \"genref\": \"coreir.add\"")
        if op not in ir.OPS and op not in EXPANDED_OPS:    # _unsupported listed them all
            raise _unsupported_error(source, [(_name(op), name, iname)])
        ops[iname] = op
        widths[iname] = _instance_width(op, inst, iwhere)
        if op == _UDIV:
            ports_of[iname], kinds_of[iname] = ("in0", "in1"), (ir.DATA, ir.DATA)
        elif op == _OPN:
            count, operator[iname] = _opn_genargs(inst, iwhere)
            ports_of[iname] = tuple(f"in.{i}" for i in range(count))
            kinds_of[iname] = (ir.DATA,) * count
        elif op in FLOAT_EXPANDED:
            ports_of[iname] = FLOAT_EXPANDED[op]
            kinds_of[iname] = (ir.DATA,) * len(FLOAT_EXPANDED[op])
        else:
            ports_of[iname], kinds_of[iname] = ir.OPS[op].ports, ir.OPS[op].operands
        if op in ir.CONST_OPS:
            margs = inst.get("modargs")
            if not isinstance(margs, dict) or "value" not in margs:
                raise MappingError(f"{iwhere}: {op} has no field modargs.value; "
                                   f"{_CONST_FIX}")
            values[iname] = _parse_const(margs["value"], widths[iname], iwhere)
        if op == ir.LUT_OP:
            tables[iname] = _rom_table(inst, widths[iname], iwhere)

    # endpoints: ("self_in", port, index) / ("inst_out", inst) drive;
    #            ("self_out", port) / ("inst_in", inst, port) are sinks
    def endpoint(ep: str, conn: str) -> tuple[bool, tuple]:
        parts = ep.split(".")
        if parts[0] == "self":
            pname = parts[1] if len(parts) > 1 else ""
            if pname not in ports:
                raise MappingError(f"{where}: connection {conn} names module port {ep}, but the "
                                   f"module has no port {pname!r} (ports: {_names(ports)}); fix "
                                   f"the name or declare the port in the module type")
            d, n, _w = ports[pname]
            if d == "out":
                if len(parts) != 2:
                    raise MappingError(f"{where}: connection {conn}: {ep} selects part of "
                                       f"output port {pname}; connect the whole port self.{pname}")
                return False, ("self_out", pname)
            if len(parts) == 2:
                if n != 1:
                    raise MappingError(f"{where}: connection {conn}: input {pname} has {n} "
                                       f"elements; name one, self.{pname}.<0..{n - 1}>")
                return True, ("self_in", pname, 0)
            if len(parts) != 3 or not re.fullmatch(r"[0-9]{1,9}", parts[2]) or int(parts[2]) >= n:
                raise MappingError(f"{where}: connection {conn}: {ep} is not an element of input "
                                   f"{pname}; use self.{pname}.<0..{n - 1}> (bit selects are "
                                   f"not supported)")
            return True, ("self_in", pname, int(parts[2]))
        iname = parts[0]
        if iname not in ops:
            raise MappingError(f"{where}: connection {conn} names unknown instance "
                               f"{iname!r}; declare it under 'instances' or fix the name")
        port = ".".join(parts[1:])
        if port == ("rdata" if ops[iname] == ir.LUT_OP else "out"):
            return True, ("inst_out", iname)
        if ops[iname] == ir.LUT_OP and port in _ROM_CONTROL:
            return False, ("inst_in", iname, port)
        if port not in ports_of[iname]:
            have = ports_of[iname]
            shown = (f"in.0 .. in.{len(have) - 1} (one per operand), out"
                     if ops[iname] == _OPN else
                     ", ".join((*have, *_ROM_CONTROL, "rdata")) if ops[iname] == ir.LUT_OP
                     else ", ".join((*have, "out")))
            raise MappingError(f"{where}: connection {conn} names port {port!r} of instance "
                               f"{iname}, but {ops[iname]} has ports {shown}; fix the port "
                               f"name (bit selects are not supported)")
        return False, ("inst_in", iname, port)

    conns = module.get("connections")
    if conns is None:
        conns = []
    if not isinstance(conns, list):
        raise MappingError(f"{where}: field connections is a JSON {_jtype(conns)}; it must be "
                           f"an array of [\"<inst>.<port>\", \"<inst>.<port>\"] pairs")
    driver_of: dict[tuple, tuple] = {}
    text: dict[tuple, str] = {}
    for conn in conns:
        if not (isinstance(conn, list) and len(conn) == 2
                and all(isinstance(e, str) for e in conn)):
            raise MappingError(f"{where}: field connections: entry {_show(conn)} is not a pair "
                               f"of endpoint strings [\"<inst>.<port>\", \"<inst>.<port>\"]")
        a, b = conn
        ctext = f"{a} <-> {b}"
        (da, ka), (db, kb) = endpoint(a, ctext), endpoint(b, ctext)
        if da == db:
            raise MappingError(f"{where}: connection {ctext} must join exactly one driver "
                               f"(an instance 'out' or a module input) and one sink")
        (src, s_txt), (dst, d_txt) = ((ka, a), (kb, b)) if da else ((kb, b), (ka, a))
        if dst in driver_of:
            raise MappingError(f"{where}: {d_txt} is driven twice ({text[driver_of[dst]]} and "
                               f"{s_txt}); remove one of the connections")
        driver_of[dst] = src
        text[src], text[dst] = s_txt, d_txt

    for iname, op in ops.items():                   # memory.rom2: ren tied to 1
        src = driver_of.get(("inst_in", iname, "ren")) if op == ir.LUT_OP else None
        if src is not None and not (src[0] == "inst_out" and ops[src[1]] == "corebit.const"
                                    and values[src[1]] == 1):
            raise MappingError(f"{where}: instance {iname} (memory.rom2): ren is driven by "
                               f"{text[src]}; the MEM tile's lookup-table mode reads every "
                               f"cycle, tie ren to a corebit.const 1")

    divisor: dict[str, int] = {}                    # coreir.udiv instance -> constant
    for iname, op in ops.items():
        if op != _UDIV:
            continue
        src = driver_of.get(("inst_in", iname, "in1"))
        if src is None:
            continue                                # build() reports an undriven port
        if src[0] != "inst_out" or ops[src[1]] != "coreir.const":   # _unsupported did
            raise _unsupported_error(source, [(f"{_UDIV} with a non-constant divisor",
                                               name, iname)])
        if widths[src[1]] != widths[iname]:
            continue                                # create() reports the width mismatch
        divisor[iname] = values[src[1]]
        try:
            _check_divisor(divisor[iname], widths[iname], iname)
        except MappingError as exc:
            raise MappingError(f"{where}: {exc} (divisor: {text[src]})") from None

    node_of: dict[str, int] = {}

    def source_node(src: tuple) -> int:
        if src[0] == "self_in":
            return k.input(src[1], src[2])
        return node_of[src[1]]

    def create(iname: str, args: list[int]) -> int:
        op, width = ops[iname], widths[iname]
        if op in ir.CONST_OPS:
            return k.const(values[iname], width)
        for port, kind, nid in zip(ports_of[iname], kinds_of[iname], args, strict=True):
            want, got = (1 if kind == ir.BIT else width), k.nodes[nid].width
            if want != got:
                src = text[driver_of[("inst_in", iname, port)]]
                raise MappingError(f"{where}: instance {iname} ({op}) port {port} takes "
                                   f"{want} bit(s) but is driven by {src} with {got}; "
                                   f"connect a {want}-bit value or fix genargs.width")
        try:
            if op == _UDIV:
                return udiv_by_constant(k, args[0], divisor[iname], width, iname)
            if op == _OPN:
                return opn_tree(k, operator[iname], args, width, iname)
            if op == "float.div":
                return float_math.div(k, *args)
            if op == "float.exp":
                return float_math.exp(k, *args)
            spec = ir.OPS[op]
            return k.add(op, *args, width=None if spec.result == ir.BIT else width, name=iname,
                         table=tables.get(iname))
        except MappingError as exc:
            raise MappingError(f"{where}: instance {iname}: {exc}") from None

    def build(root: str) -> int:
        """Create instance ``root`` after everything it depends on, operands in port order
        (a depth-first walk with an explicit stack of [instance, next port, operand ids])."""
        if root in node_of:
            return node_of[root]
        frames: list[list[Any]] = [[root, 0, []]]
        visiting = {root}
        while frames:
            frame = frames[-1]
            iname, i, args = frame
            operands = ports_of[iname]
            if i == len(operands):
                frames.pop()
                visiting.discard(iname)
                node_of[iname] = create(iname, args)
                if frames:
                    frames[-1][2].append(node_of[iname])
                    frames[-1][1] += 1
                continue
            port = operands[i]
            sink = ("inst_in", iname, port)
            if sink not in driver_of:
                raise MappingError(f"{where}: port {iname}.{port} of op {ops[iname]} is not "
                                   f"connected; add a connection driving it")
            src = driver_of[sink]
            if src[0] == "self_in" or src[1] in node_of:
                args.append(source_node(src))
                frame[1] += 1
            elif src[1] in visiting:
                raise MappingError(f"{where}: combinational cycle through instance {src[1]}; "
                                   f"break the loop (a kernel is a DAG)")
            else:
                visiting.add(src[1])
                frames.append([src[1], 0, []])
        return node_of[root]

    for pname, w in outputs.items():
        sink = ("self_out", pname)
        if sink not in driver_of:
            raise MappingError(f"{where}: output port {pname} is not driven; connect "
                               f"self.{pname} to an instance 'out' or a module input")
        src = driver_of[sink]
        nid = build(src[1]) if src[0] == "inst_out" else source_node(src)
        if k.nodes[nid].width != w:
            raise MappingError(f"{where}: output port {pname} is {w} bit(s) wide but driven by "
                               f"{text[src]} with {k.nodes[nid].width}; make the widths equal")
        k.set_output(pname, nid)
    return k


def import_coreir(path: str | Path) -> dict[str, ir.Kernel]:
    """Import every ``hcompute_*`` module of a CoreIR JSON file: module name -> Kernel.

    Raises :class:`MappingError` (one line: the file, the module / instance / field and the
    fix) when the file cannot be read, is not JSON (with the JSON error's line) or is not a
    valid CoreIR kernel file (module docstring).
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise MappingError(f"{path}: cannot read CoreIR JSON ({exc.strerror or exc}); check "
                           f"the path") from None
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise MappingError(f"{path}: not a JSON file (byte {exc.start} is not UTF-8 text); "
                           f"{_LAYOUT}") from None
    except json.JSONDecodeError as exc:
        raise MappingError(f"{path}:{exc.lineno}: not a JSON file ({exc.msg} at line "
                           f"{exc.lineno} column {exc.colno}); fix the JSON there ({_LAYOUT})"
                           ) from None
    except (ValueError, RecursionError) as exc:
        raise MappingError(f"{path}: not a JSON file ({exc}); {_LAYOUT}") from None
    return import_coreir_dict(data, str(path))


def import_coreir_dict(data: dict[str, Any], source: str = "<json>") -> dict[str, ir.Kernel]:
    """Like :func:`import_coreir` on an already-parsed JSON value (``source`` names it in
    messages). Raises :class:`MappingError` as :func:`import_coreir`."""
    try:
        return _import_dict(data, source)
    except MappingError as exc:
        msg = str(exc)
        if len(msg.splitlines()) > 1:       # user-supplied names with line breaks
            raise MappingError(" ".join(msg.splitlines())) from None
        raise


def _import_dict(data: Any, source: str) -> dict[str, ir.Kernel]:
    if not isinstance(data, dict):
        raise MappingError(f"{source}: the top level is a JSON {_jtype(data)}, not an object; "
                           f"{_LAYOUT}")
    nss = data.get("namespaces")
    if nss is None:
        raise MappingError(f"{source}: no field 'namespaces' at the top level (fields: "
                           f"{_names(data)}); not a CoreIR JSON file: {_LAYOUT}")
    if not isinstance(nss, dict):
        raise MappingError(f"{source}: field namespaces is a JSON {_jtype(nss)}, not an object; "
                           f"{_LAYOUT}")
    ns, named_by = _design_namespace(data, source), ""
    if "top" in data:
        named_by = f" (named by field top {_show(data['top'])})"
    glob = nss.get(ns)
    if glob is None:
        libs = sorted(n for n in nss if n in LIBRARY_NAMESPACES)
        only = (f"; {', '.join(libs)} {'is a library' if len(libs) == 1 else 'are libraries'}"
                if libs else "")
        raise MappingError(f"{source}: no namespace {ns!r}{named_by} in field namespaces "
                           f"(found: {_names(nss)}){only}; the kernels must be in "
                           f"namespaces.{ns}.modules")
    if not isinstance(glob, dict):
        raise MappingError(f"{source}: field namespaces.{ns} is a JSON {_jtype(glob)}, not an "
                           f"object; {_LAYOUT}")
    modules = glob.get("modules")
    if modules is None:
        raise MappingError(f"{source}: no field 'modules' in namespaces.{ns}; {_LAYOUT}")
    if not isinstance(modules, dict):
        raise MappingError(f"{source}: field namespaces.{ns}.modules is a JSON "
                           f"{_jtype(modules)}, not an object module name -> module; {_LAYOUT}")
    names = [m for m in modules if isinstance(m, str) and m.startswith(KERNEL_PREFIX)]
    if not names:
        raise MappingError(f"{source}: namespaces.{ns}.modules has no {KERNEL_PREFIX}* module "
                           f"(found: {_names(modules)}); the Halide-to-CGRA flow names each "
                           f"compute kernel {KERNEL_PREFIX}<stage>: pass its <app>_compute.json "
                           f"or rename the kernel modules")
    found = [(label, m, iname) for m in names for label, iname in _unsupported(modules[m])]
    if found:
        raise _unsupported_error(source, found)
    return {m: import_module(m, modules[m], source) for m in names}


def _design_namespace(data: dict[str, Any], source: str) -> str:
    """The namespace holding the design: the one of field ``top`` (``"<namespace>.<module>"``,
    as CoreIR saves it) when given, else ``global``. Every other namespace (the libraries:
    :data:`LIBRARY_NAMESPACES`, and any other) is never read."""
    if "top" not in data:
        return "global"
    top = data["top"]
    if not (isinstance(top, str) and "." in top and top.split(".", 1)[0]):
        raise MappingError(f"{source}: field top is {_show(top)}; write \"<namespace>.<module>\" "
                           f"(e.g. \"global.DesignTop\") or leave the field out")
    ns = top.split(".", 1)[0]
    if ns in LIBRARY_NAMESPACES:
        raise MappingError(f"{source}: field top {_show(top)} names library namespace {ns}; "
                           f"name the design's top module (e.g. \"global.DesignTop\")")
    return ns
