"""PE collateral: ``pe.json`` (what the compiler reads about a PE) and pure readers.

``pe_json(spec) -> dict`` (schema ``"peak.pe/1"``)::

    {"schema": "peak.pe/1",
     "spec": "peak.examples.cgra_pe:PE", "name": "PE", "spec_hash": "<sha256 hex>",
     "instruction_width": 62,                          # bits
     "fields": [{"name", "lo", "width", "kind", "signed", "tags", "variant_of"}, ...],
     "inputs":  [{"name": "data0", "width": 16, "signed": false}, ...],
     "outputs": [{"name": "res", "width": 16, "signed": false}, ...],
     "state":   [{"name": "data0_reg", "width": 16, "init": 0}, ...],
     "control": [{"name": "ctr", "kind": "counter_chain", "levels": 2, "width": 8}, ...],
     "config":  {"field": "inst", "registers": 2}}     # 32-bit config registers, LSB first

``spec`` is a reference :func:`peak.load_spec` resolves (``module:Class``, or
``/abs/path/file.py:Class`` for a spec loaded from a file). ``kind`` is
``bit``/``bits``/``enum``/``sum_tag``; ``tags`` maps Enum member / Sum variant
names to codes; ``lo``/``width`` are bit positions in the flat instruction. ``control``
lists the control components the spec includes as sub-PEs (:mod:`peak.control`: counter
chains, token FIFOs, credit counters, input FIFOs; ``[]`` for none), with their
parameters; a document without the key reads as none.

Readers (no hardware imports; the mapper may use them): :class:`PEInfo` (the document,
typed and frozen: :meth:`PEInfo.from_json`), :func:`load_pe_json` (a file -> PEInfo),
:func:`assemble_fields` (field values -> flat instruction int) and
:func:`disassemble_fields` (flat int -> field values).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Any, Mapping

from cgra.errors import CollateralError, ConfigError
from peak import spec_hash
from peak.assembler import assembler
from peak.assembler import is_signed_type
from peak.load import spec_ref
from peak.normalize import normal_form

SCHEMA = "peak.pe/1"


def _port(name: str, T: Any) -> dict:
    return {"name": name, "width": getattr(T, "size", 1), "signed": is_signed_type(T)}


def control_components(nf: Any, prefix: str = "") -> list[dict]:
    """The control components (:mod:`peak.control`: the sub-PE classes carrying a
    ``_control_`` dict) of normal form ``nf`` (:class:`peak.normalize.NormalForm`), at any
    depth of sub-PEs: ``[{"name": "<dotted sub-PE path>", "kind": ..., <int parameters>},
    ...]`` in sub-PE declaration order."""
    out: list[dict] = []
    for name, sub in nf.subs.items():
        info = getattr(sub.spec, "_control_", None)
        if isinstance(info, dict) and "kind" in info:
            out.append({"name": prefix + name, **info})
        else:
            out.extend(control_components(sub, f"{prefix}{name}."))
    return out


def pe_json(spec: type) -> dict:
    """The ``pe.json`` document of ``spec`` (see the module docstring)."""
    nf = normal_form(spec)
    asm = assembler(nf.isa)
    return {
        "schema": SCHEMA,
        "spec": spec_ref(spec),
        "name": spec.__name__,
        "spec_hash": spec_hash(spec),
        "instruction_width": asm.width,
        "fields": asm.layout(),
        "inputs": [_port(n, T) for n, T in nf.inputs],
        "outputs": [_port(n, T) for n, T in nf.outputs],
        "state": [{"name": s.name, "width": getattr(s.T, "size", 1), "init": s.init}
                  for s in nf.state],
        "control": control_components(nf),
        "config": {"field": "inst", "registers": (asm.width + 31) // 32},
    }


@dataclass(frozen=True)
class InstrField:
    """One field of the flat instruction: ``lo`` / ``width`` in bits, ``kind``
    (``bit``/``bits``/``enum``/``sum_tag``), ``tags``: Enum member / Sum variant name ->
    code (``None`` for plain bit vectors)."""

    name: str
    lo: int
    width: int
    kind: str = "bits"
    signed: bool = False
    tags: Mapping[str, int] | None = None
    variant_of: str | None = None


@dataclass(frozen=True)
class PortInfo:
    """A PE core port: name, width (bits), signedness."""

    name: str
    width: int
    signed: bool = False


@dataclass(frozen=True)
class PEInfo:
    """``pe.json`` (schema ``peak.pe/1``, module docstring), typed: what the compiler knows
    about a PE. The only reader of the document is :meth:`from_json`; the only writer
    :func:`pe_json`."""

    spec: str
    name: str
    spec_hash: str
    instruction_width: int
    fields: tuple[InstrField, ...]
    inputs: tuple[PortInfo, ...]
    outputs: tuple[PortInfo, ...]
    #: (name, width (bits), reset value) of each state register
    state: tuple[tuple[str, int, int], ...] = ()
    #: 32-bit config registers the instruction takes
    config_registers: int = 0
    #: control components (:mod:`peak.control`): kind, dotted sub-PE name and int
    #: parameters of each, e.g. ``{"name": "ctr", "kind": "counter_chain", "levels": 2,
    #: "width": 8}``
    control: tuple[Mapping[str, Any], ...] = ()

    @classmethod
    def from_json(cls, doc: Any, where: str = "pe.json") -> "PEInfo":
        """Parse a ``peak.pe/1`` document. Raises :class:`CollateralError` naming ``where``
        and the missing or malformed key."""
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
            raise CollateralError(f"{where}: schema {got!r} is not {SCHEMA!r}; "
                                  "regenerate the design with `cgra rtl`")
        for key in ("instruction_width", "fields", "inputs", "outputs", "spec_hash"):
            if key not in doc:
                raise CollateralError(f"{where}: missing key '{key}'; regenerate the design")
        try:
            return cls(
                str(doc.get("spec", "")), str(doc.get("name", "")), str(doc["spec_hash"]),
                int(doc["instruction_width"]),
                tuple(InstrField(str(f["name"]), int(f["lo"]), int(f["width"]),
                                 str(f.get("kind", "bits")), bool(f.get("signed", False)),
                                 None if f.get("tags") is None
                                 else MappingProxyType({str(k): int(v)
                                                        for k, v in f["tags"].items()}),
                                 f.get("variant_of"))
                      for f in doc["fields"]),
                tuple(PortInfo(str(q["name"]), int(q["width"]), bool(q.get("signed", False)))
                      for q in doc["inputs"]),
                tuple(PortInfo(str(q["name"]), int(q["width"]), bool(q.get("signed", False)))
                      for q in doc["outputs"]),
                tuple((str(s["name"]), int(s["width"]), int(s.get("init") or 0))
                      for s in doc.get("state", [])),
                int((doc.get("config") or {}).get("registers", 0)),
                tuple(MappingProxyType({str(k): (str(v) if k in ("name", "kind") else int(v))
                                        for k, v in c.items()})
                      for c in doc.get("control", [])))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CollateralError(f"{where}: malformed PE collateral ({exc!r}); regenerate "
                                  f"the design with `cgra rtl`") from None

    @classmethod
    def of_spec(cls, spec: type) -> "PEInfo":
        """The collateral of a PE spec class (:func:`pe_json` parsed)."""
        return cls.from_json(pe_json(spec), spec.__name__)

    def field(self, name: str) -> InstrField | None:
        """The instruction field ``name``, or ``None``."""
        return self._by_name.get(name)

    @cached_property
    def _by_name(self) -> dict[str, InstrField]:
        return {f.name: f for f in self.fields}

    @property
    def data_width(self) -> int:
        """Bits of the widest input (the PE's data word)."""
        return max(p.width for p in self.inputs)

    def input_widths(self) -> dict[str, int]:
        """Input name -> width (bits), in port order."""
        return {p.name: p.width for p in self.inputs}

    def output_widths(self) -> dict[str, int]:
        """Output name -> width (bits), in port order."""
        return {p.name: p.width for p in self.outputs}


def load_pe_json(path: str) -> PEInfo:
    """Read and check a ``pe.json`` (schema ``peak.pe/1``); :class:`CollateralError` names
    the file and problem."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise CollateralError(f"cannot read PE collateral {path}: {e}") from e
    return PEInfo.from_json(doc, str(path))


def assemble_fields(pe: PEInfo, values: Mapping[str, int | str]) -> int:
    """Flat instruction (int of ``instruction_width`` bits) of PE ``pe`` from field values;
    an Enum / Sum-tag field accepts a member name or its code; fields not given are 0. Raises
    :class:`ConfigError` for an unknown field, an unknown tag or a value too wide."""
    by_name = pe._by_name
    flat = 0
    for name, v in values.items():
        f = by_name.get(name)
        if f is None:
            raise ConfigError(f"PE {pe.name} has no instruction field '{name}'; "
                              f"fields: {sorted(by_name)}")
        if isinstance(v, str):
            if not f.tags or v not in f.tags:
                tags = None if f.tags is None else dict(f.tags)
                raise ConfigError(f"field '{name}' has no tag '{v}'; tags: {tags}")
            v = f.tags[v]
        v = int(v)
        if f.signed and v < 0:
            v &= (1 << f.width) - 1
        if not 0 <= v < 1 << f.width:
            raise ConfigError(f"value {v} of field '{name}' does not fit {f.width} bits")
        flat |= v << f.lo
    return flat


def disassemble_fields(pe: PEInfo, flat: int) -> dict[str, int]:
    """Field name -> raw value (int) of a flat instruction of PE ``pe``."""
    return {f.name: (flat >> f.lo) & ((1 << f.width) - 1) for f in pe.fields}
