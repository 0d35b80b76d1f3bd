"""The resource vector of one memory: what a single MEM tile offers a partitioner.

``mem_resources(spec) -> dict`` (schema ``"lake.resources/1"``), computed from the memory
spec (:class:`lake.spec.MemorySpec`) and its collateral (:func:`lake.collateral.collateral`:
the supported modes and the spec hash), so an edited memory spec changes it with no hand
edit::

    {"schema": "lake.resources/1", "preset": "dualport_2048x16", "spec_hash": "<sha256 hex>",
     "data_width": 16,                          # bits of a word
     "capacity_words": 2048,                    # words of data_width bits
     "capacity_wide_words": 2048,               # SRAM rows (fetch_width words each)
     "fetch_width": 1,                          # words per SRAM access
     "banks": 1,                                # storage units of one tile
     "storage": "sram",                         # "sram" | "registers"
     "ports": {"read": 1, "write": 1},          # storage ports (an RW port counts in both)
     "storage_accesses_per_cycle": 2,
     "inputs":  {"word": 1},                    # external data inputs per width class
     "outputs": {"word": 1},                    # external data outputs per width class
     "counters": {"controllers": 2, "dims": 6,  # access streams, levels of each domain
                  "address_generators": 2},
     "chain_tiles": 16,                         # tiles one chained memory may span
     "modes": ["affine", "delay_line", ...]}    # supported_modes of the collateral

**Width classes** are named after the data width as in :mod:`peak.resources`: ``word`` is a
port of ``data_width`` bits, ``bit`` a 1-bit port, any other width ``w`` ``"<w>b"``.
``banks``: a Lake memory has one storage unit (:attr:`MemorySpec.storage`); capacity beyond
one tile comes from chaining (``chain_tiles``). ``counters.dims`` is the deepest iteration
domain a controller supports (:attr:`MemorySpec.max_dims`, the address-generator
dimensions). The one reader is :meth:`MemResources.from_json` (typed, frozen).

Pure (no hardware imports). :func:`mem_resources` raises what :func:`lake.spec.as_spec`
raises (:class:`~cgra.errors.SpecError` for an unknown preset name);
:meth:`MemResources.from_json` raises :class:`~cgra.errors.CollateralError`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from cgra.resources import check_schema, counts, width_class
from cgra.errors import CollateralError
from lake.collateral import collateral
from lake.spec import MemorySpec, as_spec

SCHEMA = "lake.resources/1"


def mem_resources(spec: MemorySpec | str) -> dict[str, Any]:
    """The resource vector of memory ``spec`` (a :class:`MemorySpec` or a preset name;
    module docstring). Capacities in words, widths in bits. Deterministic."""
    spec = as_spec(spec)
    doc = collateral(spec)
    st = spec.storage
    dw = st.data_width

    def count(direction: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in spec.external_ports:
            if p.direction == direction:
                c = width_class(p.width, dw)
                out[c] = out.get(c, 0) + 1
        return dict(sorted(out.items()))

    return {
        "schema": SCHEMA, "preset": spec.name, "spec_hash": doc["spec_hash"],
        "data_width": dw,
        "capacity_words": st.words,
        "capacity_wide_words": st.capacity,
        "fetch_width": st.fetch_width,
        "banks": 1,
        "storage": st.kind,
        "ports": {"read": sum(p.kind in ("R", "RW") for p in spec.mem_ports),
                  "write": sum(p.kind in ("W", "RW") for p in spec.mem_ports)},
        "storage_accesses_per_cycle": int(doc["operations_per_cycle"]["storage_accesses"]),
        "inputs": count("in"),
        "outputs": count("out"),
        "counters": {"controllers": len(spec.controllers), "dims": spec.max_dims,
                     "address_generators": sum(len(c.address_generators)
                                               for c in spec.controllers)},
        "chain_tiles": int(doc["chaining"]["max_tiles"]),
        "modes": list(doc["supported_modes"]),
    }


@dataclass(frozen=True)
class MemResources:
    """A ``lake.resources/1`` document (module docstring), typed: capacities in words,
    widths in bits, port counts per width class (``word``, ``bit``, ``<w>b``)."""

    preset: str
    spec_hash: str
    data_width: int
    capacity_words: int
    capacity_wide_words: int
    fetch_width: int
    banks: int
    storage: str
    read_ports: int
    write_ports: int
    storage_accesses_per_cycle: int
    inputs: Mapping[str, int]
    outputs: Mapping[str, int]
    controllers: int
    dims: int
    address_generators: int
    chain_tiles: int
    modes: tuple[str, ...]

    @classmethod
    def from_json(cls, doc: Any, where: str = "MEM resources") -> "MemResources":
        """Parse a ``lake.resources/1`` document. Raises :class:`CollateralError` naming
        ``where`` and the missing or malformed key."""
        check_schema(doc, SCHEMA, where)
        try:
            ports, ctr = doc["ports"], doc["counters"]
            return cls(
                str(doc["preset"]), str(doc["spec_hash"]), int(doc["data_width"]),
                int(doc["capacity_words"]), int(doc["capacity_wide_words"]),
                int(doc["fetch_width"]), int(doc["banks"]), str(doc["storage"]),
                int(ports["read"]), int(ports["write"]),
                int(doc["storage_accesses_per_cycle"]),
                counts(doc, "inputs"), counts(doc, "outputs"),
                int(ctr["controllers"]), int(ctr["dims"]), int(ctr["address_generators"]),
                int(doc["chain_tiles"]), tuple(str(m) for m in doc["modes"]))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CollateralError(f"{where}: malformed MEM resources ({exc!r}); regenerate "
                                  f"the design with `cgra rtl`") from None
