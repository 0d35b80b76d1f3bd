"""Front end B: import CoreIR JSON compute kernels into the IR.

Input: a CoreIR JSON file as emitted by the Halide-to-CGRA flow (``namespaces -> global ->
modules``), one module per Halide stage named ``hcompute_<stage>``.  Each module becomes one
:class:`mapper.ir.Kernel`:

- a module input port of type ``Array n (Array w BitIn)`` (a stencil window) becomes kernel
  input ``<port>`` with ``n`` indexed elements of ``w`` bits; ``Array w BitIn`` is a 1-element
  input; ``BitIn`` a 1-bit input.  Output ports (``Bit`` direction) become kernel outputs;
- each instance (``genref`` / ``modref`` naming a CoreIR, commonlib or corebit primitive) becomes
  one node of that op (constants from ``modargs.value``: ``[["BitVector", 16], "16'h0018"]``
  or ``["Bool", true]``); ``connections`` give the operand order by port name (``in0``,
  ``in1``, ``sel``, ``in``);
- nodes are emitted in topological order from the outputs; instances that reach no output
  are dropped (after being checked).

Errors (:class:`MappingError`) name the file, the module, the instance and the op: an unknown
primitive, a sink driven twice or not at all, a combinational cycle.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from cgra.errors import MappingError
from mapper import ir

#: ops whose instance has no ``genargs.width`` (1-bit corebit primitives)
_BIT_OPS = {k for k in ir.OPS if k.startswith("corebit.")}


def _parse_value(v: Any, where: str) -> int:
    if isinstance(v, list) and len(v) == 2:
        typ, val = v
        if typ == "Bool" or (isinstance(typ, str) and typ == "Bool"):
            return int(bool(val))
        if isinstance(val, bool):
            return int(val)
        if isinstance(val, int):
            return val
        if isinstance(val, str):
            m = re.fullmatch(r"(\d+)'([hHdDbBoO])([0-9a-fA-F_xXzZ]+)", val.strip())
            if m:
                base = {"h": 16, "d": 10, "b": 2, "o": 8}[m.group(2).lower()]
                return int(m.group(3).replace("_", ""), base)
            if re.fullmatch(r"-?\d+", val.strip()):
                return int(val)
    raise MappingError(f"{where}: cannot parse constant value {v!r} "
                       f"(expected [[\"BitVector\", w], \"w'hXXXX\"] or [\"Bool\", b])")


def _port_shape(t: Any) -> tuple[str, int, int] | None:
    """(direction 'in'/'out', element count, element width) of a module port type."""
    if t == "BitIn":
        return ("in", 1, 1)
    if t == "Bit":
        return ("out", 1, 1)
    if isinstance(t, list) and t and t[0] == "Array":
        n, inner = t[1], t[2]
        if inner in ("BitIn", "Bit"):
            return ("in" if inner == "BitIn" else "out", 1, n)
        sub = _port_shape(inner)
        if sub and sub[1] == 1:
            return (sub[0], n, sub[2])
    return None


def import_module(name: str, module: dict[str, Any], source: str = "<json>") -> ir.Kernel:
    """Import one CoreIR module dict as a Kernel (see the module docstring)."""
    where = f"{source}: module {name}"
    k = ir.Kernel(name)
    typ = module.get("type")
    if not (isinstance(typ, list) and len(typ) == 2 and typ[0] == "Record"):
        raise MappingError(f"{where}: module type must be a Record of ports")
    outputs: dict[str, int] = {}
    for pname, ptype in typ[1]:
        shape = _port_shape(ptype)
        if shape is None:
            raise MappingError(f"{where}: port {pname} has unsupported type {ptype!r}")
        d, n, w = shape
        if d == "in":
            k.declare_input(pname, n, w)
        else:
            outputs[pname] = w
    insts: dict[str, dict[str, Any]] = module.get("instances", {}) or {}
    ops: dict[str, str] = {}
    for iname, inst in insts.items():
        op = inst.get("genref") or inst.get("modref")
        if op not in ir.OPS:
            raise MappingError(f"{where}: instance {iname} uses unknown op '{op}'; supported ops: "
                               f"{', '.join(sorted(ir.OPS))} (add it to mapper.ir.OPS with its "
                               f"semantics, or remove it from the kernel)")
        ops[iname] = op

    def is_driver(ep: str) -> bool:
        parts = ep.split(".")
        if parts[0] == "self":
            return parts[1] in k.inputs
        return parts[0] in ops and parts[1] == "out"

    driver_of: dict[str, str] = {}
    for conn in module.get("connections", []) or []:
        a, b = conn
        da, db = is_driver(a), is_driver(b)
        if da == db:
            raise MappingError(f"{where}: connection {a} <-> {b} must join exactly one driver "
                               f"(an instance 'out' or a module input) and one sink")
        src, dst = (a, b) if da else (b, a)
        if dst in driver_of:
            raise MappingError(f"{where}: {dst} is driven twice ({driver_of[dst]} and {src})")
        driver_of[dst] = src

    node_of: dict[str, int] = {}
    visiting: set[str] = set()

    def resolve(ep: str) -> int:
        parts = ep.split(".")
        if parts[0] == "self":
            pname = parts[1]
            if pname not in k.inputs:
                raise MappingError(f"{where}: {ep} is not a module input")
            if len(parts) == 2:
                return k.input(pname, 0)
            return k.input(pname, int(parts[2]))
        return build(parts[0])

    def build(iname: str) -> int:
        if iname in node_of:
            return node_of[iname]
        if iname not in ops:
            raise MappingError(f"{where}: connection refers to unknown instance {iname}")
        if iname in visiting:
            raise MappingError(f"{where}: combinational cycle through instance {iname}")
        visiting.add(iname)
        op = ops[iname]
        inst = insts[iname]
        width = 1 if op in _BIT_OPS else int(inst.get("genargs", {}).get("width", ["Int", 16])[1])
        if op in ir.CONST_OPS:
            val = _parse_value(inst.get("modargs", {}).get("value"), f"{where}: instance {iname}")
            nid = k.const(val, width)
        else:
            spec = ir.OPS[op]
            args = []
            for port in spec.ports:
                sink = f"{iname}.{port}"
                if sink not in driver_of:
                    raise MappingError(f"{where}: port {sink} of op {op} is not connected")
                args.append(resolve(driver_of[sink]))
            nid = k.add(op, *args, width=None if spec.result == ir.BIT else width, name=iname)
        visiting.discard(iname)
        node_of[iname] = nid
        return nid

    for pname in outputs:
        sink = f"self.{pname}"
        if sink not in driver_of:
            raise MappingError(f"{where}: output port {pname} is not driven")
        k.set_output(pname, resolve(driver_of[sink]))
    return k


def import_coreir(path: str | Path) -> dict[str, ir.Kernel]:
    """Import every module of a CoreIR JSON file: module name -> Kernel.

    Raises :class:`MappingError` naming the file, module, instance and op on any problem.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise MappingError(f"{path}: cannot read CoreIR JSON ({exc})") from None
    return import_coreir_dict(data, str(path))


def import_coreir_dict(data: dict[str, Any], source: str = "<json>") -> dict[str, ir.Kernel]:
    """Like :func:`import_coreir` on an already-parsed JSON dict."""
    kernels: dict[str, ir.Kernel] = {}
    nss = data.get("namespaces")
    if not isinstance(nss, dict):
        raise MappingError(f"{source}: not a CoreIR JSON file (no 'namespaces')")
    for ns in nss.values():
        for mname, module in (ns.get("modules") or {}).items():
            if mname in kernels:
                raise MappingError(f"{source}: module {mname} defined in two namespaces")
            kernels[mname] = import_module(mname, module, source)
    if not kernels:
        raise MappingError(f"{source}: no modules found")
    return kernels
