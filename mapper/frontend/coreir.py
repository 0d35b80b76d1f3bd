"""Front end B: import CoreIR JSON compute kernels into the IR.

Input: a CoreIR JSON file as emitted by the Halide-to-CGRA flow (``namespaces -> global ->
modules``), one module per Halide stage named ``hcompute_<stage>``.  Each ``hcompute_*``
module of namespace ``global`` becomes one :class:`mapper.ir.Kernel` (other namespaces and
other modules -- a top level wiring the kernels, generator definitions -- are ignored):

- a module input port of type ``Array n (Array w BitIn)`` (a stencil window) becomes kernel
  input ``<port>`` with ``n`` indexed elements of ``w`` bits; ``Array w BitIn`` is a 1-element
  input; ``BitIn`` a 1-bit input.  An output port is one word ``Array w Bit`` or one bit
  ``Bit`` and becomes a kernel output.  Widths are 1..:data:`MAX_WIDTH` bits;
- each instance (``genref`` / ``modref`` naming a CoreIR, commonlib or corebit primitive of
  :data:`mapper.ir.OPS`) becomes one node of that op, ``genargs.width = ["Int", w]`` bits wide
  (16 when absent; corebit ops are 1 bit).  BFloat16 ops (``float.add sub mul max min lt le
  gt ge eq``, and CoreIR's DesignWare ``float_DW.fp_add`` / ``fp_mul``, imported as
  ``float.add`` / ``float.mul``: :data:`mapper.ir.COREIR_ALIASES`) are 16 bits; their
  genargs ``exp_bits``/``frac_bits`` (or ``exp_width``/``sig_width``) must be 8/7 when given.  Constants take ``modargs.value``:
  ``[["BitVector", w], "w'h0018"]`` (also ``'d``, ``'b``, ``'o``, a decimal string or a JSON
  integer; the literal's size and the value must fit ``w``; ``x``/``z`` digits are refused)
  or ``["Bool", true]``;
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
``namespaces`` / ``global`` / ``modules``, no ``hcompute_*`` module, an unsupported port type,
an unknown op, a malformed or too wide constant, a connection naming an unknown instance or
port, a width mismatch, a sink driven twice or not at all, a combinational cycle.

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
    if op in ir.FLOAT_OPS:
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


# ----------------------------------------------------------------------------- import
def import_module(name: str, module: dict[str, Any], source: str = "<json>") -> ir.Kernel:
    """Import one CoreIR module dict as a Kernel (see the module docstring).

    Raises :class:`MappingError` naming ``source``, the module, the instance or field and the
    fix on any problem."""
    where = f"{source}: module {name}"
    if not isinstance(module, dict):
        raise MappingError(f"{where}: the module is a JSON {_jtype(module)}, not an object with "
                           f"'type', 'instances' and 'connections'")
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
    for iname, inst in insts.items():
        iwhere = f"{where}: instance {iname}"
        if not isinstance(iname, str) or not iname or "." in iname or iname == "self":
            raise MappingError(f"{where}: instance name {iname!r} is empty, 'self' or contains "
                               f"'.'; rename the instance")
        if not isinstance(inst, dict):
            raise MappingError(f"{iwhere}: the instance is a JSON {_jtype(inst)}; it must be an "
                               f"object {{\"genref\": <op>, \"genargs\": ...}}")
        op = inst.get("genref") or inst.get("modref")
        op = ir.COREIR_ALIASES.get(op, op) if isinstance(op, str) else op
        if not isinstance(op, str) or op not in ir.OPS:
            raise MappingError(f"{iwhere} uses unknown op {_show(op)} (field genref/modref); "
                               f"supported ops: {', '.join(sorted(ir.OPS))} (add it to "
                               f"mapper.ir.OPS with its semantics, or remove it from the kernel)")
        ops[iname] = op
        widths[iname] = _instance_width(op, inst, iwhere)
        if op in ir.CONST_OPS:
            margs = inst.get("modargs")
            if not isinstance(margs, dict) or "value" not in margs:
                raise MappingError(f"{iwhere}: {op} has no field modargs.value; "
                                   f"{_CONST_FIX}")
            values[iname] = _parse_const(margs["value"], widths[iname], iwhere)

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
        spec = ir.OPS[ops[iname]]
        port = ".".join(parts[1:])
        if port == "out":
            return True, ("inst_out", iname)
        if port not in spec.ports:
            raise MappingError(f"{where}: connection {conn} names port {port!r} of instance "
                               f"{iname}, but {ops[iname]} has ports "
                               f"{', '.join((*spec.ports, 'out'))}; fix the port name (bit "
                               f"selects are not supported)")
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

    node_of: dict[str, int] = {}

    def source_node(src: tuple) -> int:
        if src[0] == "self_in":
            return k.input(src[1], src[2])
        return node_of[src[1]]

    def create(iname: str, args: list[int]) -> int:
        op, width = ops[iname], widths[iname]
        if op in ir.CONST_OPS:
            return k.const(values[iname], width)
        spec = ir.OPS[op]
        for port, kind, nid in zip(spec.ports, spec.operands, args, strict=True):
            want, got = (1 if kind == ir.BIT else width), k.nodes[nid].width
            if want != got:
                src = text[driver_of[("inst_in", iname, port)]]
                raise MappingError(f"{where}: instance {iname} ({op}) port {port} takes "
                                   f"{want} bit(s) but is driven by {src} with {got}; "
                                   f"connect a {want}-bit value or fix genargs.width")
        try:
            return k.add(op, *args, width=None if spec.result == ir.BIT else width, name=iname)
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
            ports_of = ir.OPS[ops[iname]].ports
            if i == len(ports_of):
                frames.pop()
                visiting.discard(iname)
                node_of[iname] = create(iname, args)
                if frames:
                    frames[-1][2].append(node_of[iname])
                    frames[-1][1] += 1
                continue
            port = ports_of[i]
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
    glob = nss.get("global")
    if glob is None:
        raise MappingError(f"{source}: no namespace 'global' in field namespaces (found: "
                           f"{_names(nss)}); the kernels must be in namespaces.global.modules")
    if not isinstance(glob, dict):
        raise MappingError(f"{source}: field namespaces.global is a JSON {_jtype(glob)}, not an "
                           f"object; {_LAYOUT}")
    modules = glob.get("modules")
    if modules is None:
        raise MappingError(f"{source}: no field 'modules' in namespaces.global; {_LAYOUT}")
    if not isinstance(modules, dict):
        raise MappingError(f"{source}: field namespaces.global.modules is a JSON "
                           f"{_jtype(modules)}, not an object module name -> module; {_LAYOUT}")
    names = [m for m in modules if isinstance(m, str) and m.startswith(KERNEL_PREFIX)]
    if not names:
        raise MappingError(f"{source}: namespaces.global.modules has no {KERNEL_PREFIX}* module "
                           f"(found: {_names(modules)}); the Halide-to-CGRA flow names each "
                           f"compute kernel {KERNEL_PREFIX}<stage>: pass its <app>_compute.json "
                           f"or rename the kernel modules")
    return {m: import_module(m, modules[m], source) for m in names}
