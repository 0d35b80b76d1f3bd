"""PE collateral: ``pe.json`` (what the compiler reads about a PE) and pure readers.

``pe_json(spec) -> dict`` (schema ``"peak.pe/1"``)::

    {"schema": "peak.pe/1",
     "spec": "peak.examples.cgra_pe:PE", "name": "PE", "spec_hash": "<sha256 hex>",
     "instruction_width": 62,                          # bits
     "fields": [{"name", "lo", "width", "kind", "signed", "tags", "variant_of"}, ...],
     "inputs":  [{"name": "data0", "width": 16, "signed": false}, ...],
     "outputs": [{"name": "res", "width": 16, "signed": false}, ...],
     "state":   [{"name": "data0_reg", "width": 16, "init": 0}, ...],
     "config":  {"field": "inst", "registers": 2}}     # 32-bit config registers, LSB first

``spec`` is a reference :func:`peak.load_spec` resolves (``module:Class``, or
``/abs/path/file.py:Class`` for a spec loaded from a file). ``kind`` is
``bit``/``bits``/``enum``/``sum_tag``; ``tags`` maps Enum member / Sum variant
names to codes; ``lo``/``width`` are bit positions in the flat instruction.

Readers (no hardware imports; the mapper may use them): :func:`load_pe_json`,
:func:`assemble_fields` (field values -> flat instruction int) and
:func:`disassemble_fields` (flat int -> field values).
"""
from __future__ import annotations

import json
from typing import Any

from cgra.errors import CollateralError, ConfigError
from peak import spec_hash
from peak.assembler import assembler
from peak.assembler import is_signed_type
from peak.load import spec_ref
from peak.normalize import normal_form

SCHEMA = "peak.pe/1"


def _port(name: str, T: Any) -> dict:
    return {"name": name, "width": getattr(T, "size", 1), "signed": is_signed_type(T)}


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
        "config": {"field": "inst", "registers": (asm.width + 31) // 32},
    }


def load_pe_json(path: str) -> dict:
    """Read and check a ``pe.json``; :class:`CollateralError` names the file and problem."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise CollateralError(f"cannot read PE collateral {path}: {e}") from e
    if doc.get("schema") != SCHEMA:
        raise CollateralError(f"{path}: schema {doc.get('schema')!r} is not {SCHEMA!r}; "
                              "regenerate the design with `cgra rtl`")
    for key in ("instruction_width", "fields", "inputs", "outputs", "spec_hash"):
        if key not in doc:
            raise CollateralError(f"{path}: missing key '{key}'; regenerate the design")
    return doc


def assemble_fields(doc: dict, values: dict[str, int | str]) -> int:
    """Flat instruction (int of ``instruction_width`` bits) from field values; an Enum /
    Sum-tag field accepts a member name or its code; fields not given are 0. Raises
    :class:`ConfigError` for an unknown field, an unknown tag or a value too wide."""
    by_name = {f["name"]: f for f in doc["fields"]}
    flat = 0
    for name, v in values.items():
        f = by_name.get(name)
        if f is None:
            raise ConfigError(f"PE {doc.get('name')} has no instruction field '{name}'; "
                              f"fields: {sorted(by_name)}")
        if isinstance(v, str):
            if not f.get("tags") or v not in f["tags"]:
                raise ConfigError(f"field '{name}' has no tag '{v}'; tags: {f.get('tags')}")
            v = f["tags"][v]
        v = int(v)
        if f.get("signed") and v < 0:
            v &= (1 << f["width"]) - 1
        if not 0 <= v < 1 << f["width"]:
            raise ConfigError(f"value {v} of field '{name}' does not fit {f['width']} bits")
        flat |= v << f["lo"]
    return flat


def disassemble_fields(doc: dict, flat: int) -> dict[str, int]:
    """Field name -> raw value (int) of a flat instruction."""
    return {f["name"]: (flat >> f["lo"]) & ((1 << f["width"]) - 1) for f in doc["fields"]}
