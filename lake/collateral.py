"""Compiler collateral of a Lake memory: one JSON document per preset.

Schema ``lake.collateral/1`` (all widths in bits, latencies in cycles)::

    {"schema": "lake.collateral/1", "preset": str, "module": str, "spec_hash": hex,
     "capacity_words": int, "capacity_wide_words": int, "data_width": int,
     "fetch_width": int, "word_width": int, "storage": {"kind": "sram"|"registers", ...},
     "read_latency": int,              # scheduled read cycle -> data on the output port
     "ports": {"in": [{"name", "width"}], "out": [...], "valid": [...], "chain_in": [...]},
     "operations_per_cycle": {"storage_accesses": int, "words_per_port": 1},
     "max_dimensionality": int, "max_schedule_cycle": int,
     "register_widths": {"dim", "extent", "schedule", "address", "chain_id"},
     "chaining": {"max_tiles": int, "tile_words": int},
     "supported_modes": [str],         # + "lookup_table" when the spec has lut=True
     "constraints": [str], "min_delay_full_rate": int,
     "lookup_table": null | {"field": "lut_mode", "latency": 1, "words": int,
                             "width": int, "index_bits": int, "index_port": "data_in_0",
                             "output_port": "data_out_0"},
     "controllers": [{"name", "role", "port", "address_generators": [{"name","width"}]}],
     "components": {...}, "config_fields": [{"name", "width", "reset"}],
     "spec": {...}}                    # the whole MemorySpec (lake.spec.spec_to_dict)

The mapper reads only this (plus the pure encoder :func:`lake.config.configure`), typed as a
:class:`MemInfo` (:meth:`MemInfo.from_json`, the one reader). ``spec`` carries the memory
itself, so a memory of the architect's (``mem = "path/to/mem.py:MEM"`` in a design's TOML)
needs no preset name anywhere in the compiler: reading the collateral registers it
(:func:`lake.spec.register`) under its name for the config encoder. Word vocabulary: a *word* is
``data_width`` bits (what one port moves per cycle); a *wide word* is ``fetch_width`` words
(``word_width`` bits, what one SRAM access moves); ``capacity_words`` = ``fetch_width *
capacity_wide_words``.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from cgra.errors import CollateralError, ConfigError, SpecError
from lake.config import config_fields, configure
from lake.lut import LUT_LATENCY
from lake.program import delay_line
from lake.spec import (PRESETS, MemorySpec, as_spec, circuit_name, register, spec_from_dict,
                       spec_to_dict)

SCHEMA = "lake.collateral/1"


#: modules whose source defines a memory's hardware and its configuration encoding
HARDWARE_MODULES = ("lake.spec", "lake.config", "lake.rtl")


def spec_hash(spec: MemorySpec) -> str:
    """Content hash of a memory: sha256 over the spec's canonical repr and the source text of
    the modules that turn it into hardware and config bits (:data:`HARDWARE_MODULES`, read as
    files, not imported: no magma). The one Lake spec hash; ``mem.json`` records it."""
    h = hashlib.sha256(repr(spec).encode())
    for name in HARDWARE_MODULES:
        origin = importlib.util.find_spec(name).origin
        h.update(Path(origin).read_bytes())
    return h.hexdigest()


def _min_delay(spec: MemorySpec) -> int:
    """Smallest write-to-read schedule distance of a full-rate (1 word/cycle) delay line
    that the preset realises (found by trying the encoder)."""
    fw = spec.storage.fetch_width
    for d in range(0, 64):
        try:
            w, r = delay_line(d, 8 * fw * 4, spec.storage.words, start=0, align=fw)
            configure(spec, {spec.inputs[0]: w, spec.outputs[0]: r})
            return d
        except ConfigError:
            continue
    raise ConfigError(f"memory {spec.name}: no full-rate delay line below 64 cycles")


@lru_cache(maxsize=None)
def _collateral(spec: MemorySpec) -> str:
    st = spec.storage
    modes = ["affine", "delay_line", "line_buffer", "chaining"]
    constraints = ["schedule strictly increasing in iteration order (every level delta >= 1)",
                   "addresses within [0, capacity_words * chain_tiles)"]
    if spec.wide:
        modes = ["vectorized_affine", "delay_line", "line_buffer", "chaining"]
        constraints += [
            f"inputs: innermost address stride 1 and any innermost extent W (a row); "
            f"pitch rule: address offset and outer strides (the row pitch, normally W "
            f"rounded up to a multiple of {st.fetch_width}) multiples of {st.fetch_width}; "
            f"the last wide word of a row may be partial (committed as if full)",
            f"outputs: each fetched {st.fetch_width}-word wide word is read in one run of "
            f"consecutive reads, either (a) the first level that moves the address has "
            f"a stride s dividing {st.fetch_width} "
            f"({', '.join(str(x) for x in range(1, st.fetch_width + 1) if st.fetch_width % x == 0)}"
            f"; {st.fetch_width} / s reads per wide word) and any extent, the levels inside "
            f"it repeat (stride 0) and the outer "
            f"strides are multiples of {st.fetch_width} (pitch rule; e.g. upsample's "
            f"repeated reads: extents [2, W, 2, H], strides [0, 1, 0, pitch]; a 2x "
            f"downsample: extents [W/2, 2, H], strides [2, 0, pitch]); the address "
            f"offset may be unaligned (runs follow the aligned wide words, the first and "
            f"last of a row partial), or (b) the levels below some level stay inside one "
            f"aligned wide word (offset mod {st.fetch_width} plus their addresses in "
            f"[0, {st.fetch_width})) and the strides from that level on are multiples of "
            f"{st.fetch_width}",
            "output schedule offset >= 2 (SRAM prefetch), >= 2 + t * ((offset mod "
            f"{st.fetch_width}) // s) for an unaligned form-(a) read (t, s: schedule and "
            "address stride of its first moving level; its first wide word is fetched that "
            "much earlier)",
            "at most one SRAM access per cycle across the 4 SRAM-side controllers",
            "reads must follow the write by enough cycles for aggregation "
            "(see min_delay_full_rate)"]
    else:
        modes.append("downsample")
    if spec.lut:
        modes.append("lookup_table")
    doc = {
        "schema": SCHEMA,
        "preset": spec.name,
        "module": circuit_name(spec),
        "spec_hash": spec_hash(spec),
        "capacity_words": st.words,
        "capacity_wide_words": st.capacity,
        "data_width": st.data_width,
        "fetch_width": st.fetch_width,
        "word_width": st.word_width,
        "storage": {"kind": st.kind, "storage_read_latency": st.read_latency,
                    "ports": [{"name": p.name, "kind": p.kind, "latency": p.latency}
                              for p in spec.mem_ports]},
        "read_latency": 1,
        "ports": {
            "in": [{"name": p, "width": st.data_width} for p in spec.inputs],
            "out": [{"name": q, "width": st.data_width} for q in spec.outputs],
            "valid": [{"name": f"valid_out_{i}", "width": 1} for i in range(len(spec.outputs))],
            "chain_in": [{"name": f"chain_data_in_{i}", "width": st.data_width}
                         for i in range(len(spec.outputs))]
            + [{"name": f"chain_valid_in_{i}", "width": 1} for i in range(len(spec.outputs))],
        },
        "operations_per_cycle": {
            "storage_accesses": len(spec.mem_ports) if not spec.wide else 1,
            "words_per_access": st.fetch_width,
            "words_per_port": 1},
        "max_dimensionality": spec.max_dims,
        "max_schedule_cycle": (1 << spec.schedule_width) - 1,
        "register_widths": {"dim": 3, "extent": spec.extent_width,
                            "schedule": spec.schedule_width,
                            "address": spec.global_address_bits,
                            "chain_id": spec.chain_bits},
        "chaining": {"max_tiles": 1 << spec.chain_bits, "tile_words": st.words},
        "supported_modes": modes,
        "constraints": constraints,
        "min_delay_full_rate": _min_delay(spec),
        "lookup_table": {"field": "lut_mode", "latency": LUT_LATENCY, "words": st.words,
                         "width": st.data_width, "index_bits": spec.address_bits,
                         "index_port": spec.inputs[0], "output_port": spec.outputs[0]}
        if spec.lut else None,
        "controllers": [{"name": c.name, "role": c.role, "port": c.port,
                         "address_generators": [{"name": g.name, "width": g.width}
                                                for g in c.address_generators]}
                        for c in spec.controllers],
        "components": {
            "storage": {"name": st.name, "capacity": st.capacity, "fetch_width": st.fetch_width},
            "aggregators": [a.name for a in spec.aggregators],
            "transpose_buffers": [t.name for t in spec.transpose_buffers],
            "port_selects": [{"mem_port": p.mem_port, "controllers": list(p.controllers)}
                             for p in spec.port_selects],
            "edges": [list(e) for e in spec.edges]},
        "config_fields": [{"name": f.name, "width": f.width, "reset": f.reset}
                          for f in config_fields(spec)],
        "spec": spec_to_dict(spec),
    }
    return json.dumps(doc, sort_keys=True)


def collateral(preset: MemorySpec | str) -> dict:
    """The collateral document of a preset (a fresh dict each call)."""
    return json.loads(_collateral(as_spec(preset)))


def write_collateral(preset: MemorySpec | str, path: str | Path) -> Path:
    """Write the collateral JSON of a preset to ``path``; returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(collateral(preset), indent=2, sort_keys=True) + "\n")
    return p


def all_collateral() -> dict[str, dict]:
    """Preset name -> collateral, for every preset (the ``mem.json`` garnet writes)."""
    return {name: collateral(name) for name in PRESETS}


@dataclass(frozen=True)
class LookupTableInfo:
    """The lookup-table mode of a memory (``lookup_table`` of the collateral): the config
    field that enables it, its latency (cycles), entries (words of ``width`` bits), index
    bits and the ports of index and value."""

    field: str
    latency: int
    words: int
    width: int
    index_bits: int
    index_port: str
    output_port: str


@dataclass(frozen=True)
class MemInfo:
    """A Lake memory's collateral (schema ``lake.collateral/1``, module docstring), typed.
    Widths in bits, latencies in cycles, capacities in words unless named ``wide``."""

    preset: str
    module: str
    spec_hash: str
    #: words (``data_width`` bits each) the memory holds
    capacity_words: int
    #: SRAM rows (wide words of ``fetch_width`` words)
    capacity_wide_words: int
    #: bits of a word (a port's width)
    data_width: int
    #: words per SRAM access
    fetch_width: int
    #: bits of a wide word (``fetch_width * data_width``)
    wide_word_width: int
    #: scheduled read cycle -> data on the output port
    read_latency: int
    in_ports: tuple[str, ...]
    out_ports: tuple[str, ...]
    max_dimensionality: int
    max_schedule_cycle: int
    #: bits of each extent register / of the schedule cycle counter / of the chain id
    extent_width: int
    schedule_width: int
    chain_id_width: int
    supported_modes: tuple[str, ...]
    constraints: tuple[str, ...]
    #: smallest write-to-read distance (cycles) of a full-rate delay line
    min_delay_full_rate: int
    lookup_table: LookupTableInfo | None
    #: (name, width (bits), reset) of each config field, in packing order
    config_fields: tuple[tuple[str, int, int], ...]
    #: the memory itself (``spec`` of the document; None in documents written before it)
    spec: MemorySpec | None = None

    @classmethod
    def from_json(cls, doc: Any, where: str = "lake collateral") -> "MemInfo":
        """Parse a ``lake.collateral/1`` document. Raises :class:`CollateralError` naming
        ``where`` and the missing or malformed key."""
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
            raise CollateralError(f"{where}: Lake collateral schema {got!r} is not "
                                  f"{SCHEMA!r}; regenerate the design with `cgra rtl`")
        try:
            regs, lut = doc["register_widths"], doc.get("lookup_table")
            return cls(
                str(doc["preset"]), str(doc["module"]), str(doc["spec_hash"]),
                int(doc["capacity_words"]), int(doc["capacity_wide_words"]),
                int(doc["data_width"]), int(doc["fetch_width"]), int(doc["word_width"]),
                int(doc["read_latency"]),
                tuple(str(q["name"]) for q in doc["ports"]["in"]),
                tuple(str(q["name"]) for q in doc["ports"]["out"]),
                int(doc["max_dimensionality"]), int(doc["max_schedule_cycle"]),
                int(regs["extent"]), int(regs["schedule"]), int(regs["chain_id"]),
                tuple(str(m) for m in doc["supported_modes"]),
                tuple(str(c) for c in doc.get("constraints", ())),
                int(doc["min_delay_full_rate"]),
                None if lut is None else LookupTableInfo(
                    str(lut["field"]), int(lut["latency"]), int(lut["words"]),
                    int(lut["width"]), int(lut["index_bits"]), str(lut["index_port"]),
                    str(lut["output_port"])),
                tuple((str(f["name"]), int(f["width"]), int(f["reset"]))
                      for f in doc["config_fields"]),
                None if doc.get("spec") is None else register(spec_from_dict(doc["spec"])))
        except SpecError as exc:
            raise CollateralError(f"{where}: {exc}") from None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CollateralError(f"{where}: malformed Lake collateral ({exc!r}); regenerate "
                                  f"the design with `cgra rtl`") from None

    @classmethod
    def of_preset(cls, preset: MemorySpec | str) -> "MemInfo":
        """The collateral of a preset (:func:`collateral`), typed."""
        spec = as_spec(preset)
        return cls.from_json(collateral(spec), f"Lake preset {spec.name}")

    def supports(self, mode: str) -> bool:
        """True when ``mode`` (e.g. ``lookup_table``) is one of :attr:`supported_modes`."""
        return mode in self.supported_modes
