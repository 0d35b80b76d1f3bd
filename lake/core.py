"""Lake presets as tile cores (:class:`cgra.core.CoreSpec`) for the array generator.

The core circuit is :func:`lake.rtl.memory_circuit`: ``CLK``, ``RESET``, ``clk_en``,
``flush``, ``data_in_<i>`` / ``data_out_<q>`` (16 bits), ``valid_out_<q>`` (1 bit),
``chain_data_in_<q>`` (16 bits), ``chain_valid_in_<q>`` (1 bit) and one
``config_<field>`` input per field of :func:`lake.config.config_fields` (each <= 32 bits).
The tile packs the fields with :func:`cgra.config.pack_fields`; the values come from
:func:`lake.config.configure`. A spec with ``lut=True`` also has the config-memory ports
(``config_mem_*``, :mod:`lake.rtl`) and ``CoreSpec.config_memory`` = ``ConfigMemory(words
= storage words, width = data width)``; the tile maps them to the config bus.
The circuit compiles with plain ``m.compile(..., output="mlir-verilog")`` (the tests run
exactly that Verilog under Verilator).
"""
from __future__ import annotations

from cgra.core import ConfigMemory, CoreSpec, PortSpec
from lake.collateral import collateral
from lake.config import config_fields
from lake.rtl import memory_circuit
from lake.spec import as_spec, circuit_name


def core_spec(preset_name: str) -> CoreSpec:
    """The :class:`CoreSpec` of a preset (tag ``"m"``); ``build()`` returns the cached
    magma circuit; ``info`` holds the collateral document. Raises SpecError for an
    unknown preset."""
    spec = as_spec(preset_name)
    dw = spec.storage.data_width
    ports: list[PortSpec] = [PortSpec(p, dw, "in") for p in spec.inputs]
    for i in range(len(spec.outputs)):
        ports.append(PortSpec(f"chain_data_in_{i}", dw, "in"))
        ports.append(PortSpec(f"chain_valid_in_{i}", 1, "in"))
    for i, q in enumerate(spec.outputs):
        ports.append(PortSpec(q, dw, "out"))
        ports.append(PortSpec(f"valid_out_{i}", 1, "out"))
    cm = ConfigMemory(spec.storage.words, dw) if spec.lut else None
    return CoreSpec(name=circuit_name(spec), tag="m", ports=tuple(ports),
                    config_fields=config_fields(spec),
                    build=lambda: memory_circuit(spec), info=collateral(spec),
                    config_memory=cm)
