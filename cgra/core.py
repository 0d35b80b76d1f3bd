"""The interface between a tile core (PE, MEM, IO, test cores) and the tile around it.

A core is described by a :class:`CoreSpec`. Its magma circuit (``build()``) has exactly
these ports:

* ``CLK`` (clock) and ``RESET`` (synchronous, active high) — ``m.ClockIO(has_reset=True)``;
* ``clk_en`` ``In(Bit)``: 1 = run, 0 = stall (every state element holds);
* ``flush`` ``In(Bit)``: restart the core's controllers (memories), ignored by PEs;
* one port per :class:`PortSpec` with the same name, ``Bits[width]`` (``Bit`` if width 1);
* one input ``config_<name>`` of ``Bits[width]`` per :class:`~cgra.config.ConfigField`;
* when ``CoreSpec.config_memory`` is set (a :class:`ConfigMemory` of ``words`` words of
  ``width`` bits, loaded with the bitstream): ``config_mem_addr`` ``In(Bits[ceil(log2
  words)])`` (word index), ``config_mem_data`` ``In(Bits[width])``, ``config_mem_write``
  ``In(Bit)`` (write ``config_mem_data`` to word ``config_mem_addr`` at the clock edge,
  whatever ``clk_en``), ``config_mem_read`` ``In(Bit)`` and ``config_mem_rdata``
  ``Out(Bits[width])`` (word ``config_mem_addr``, combinational, while
  ``config_mem_read`` = 1; 0 otherwise).

The tile (``canal``/``garnet``) owns the 32-bit config registers of feature 0 and drives
the ``config_*`` inputs from them, packed with :func:`cgra.config.pack_fields`; it maps a
config memory to features after its own (:mod:`canal.config`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from cgra.config import ConfigField


@dataclass(frozen=True)
class PortSpec:
    """A data port of a core: ``direction`` is ``"in"`` or ``"out"``; width in bits."""

    name: str
    width: int
    direction: str


@dataclass(frozen=True)
class ConfigMemory:
    """A core memory loaded and read back through the config bus: ``words`` words of
    ``width`` bits (``width`` <= 32). ``feature`` is the first config feature the tile maps
    it to (``None`` on a :class:`CoreSpec`; set by the interconnect on its tile records,
    :class:`canal.graph.TileInfo`): word ``w`` is register ``w % 256`` of feature
    ``feature + w // 256``."""

    words: int
    width: int
    feature: int | None = None

    @property
    def addr_bits(self) -> int:
        """Bits of a word index: ``max(1, ceil(log2 words))``."""
        return max(1, (self.words - 1).bit_length())

    @property
    def features(self) -> int:
        """Config features the memory occupies: ``ceil(words / 256)``."""
        return -(-self.words // 256)


@dataclass
class CoreSpec:
    """A tile core: its ports, its config fields, its PnR tag and its circuit builder.

    ``tag`` is the one-letter PnR tag (``p`` PE, ``m`` MEM, ``I`` 16-bit IO, ``i`` 1-bit IO).
    ``name`` must be unique per distinct core (it becomes the Verilog module name).
    ``build`` returns the magma circuit; callers cache it so it is built once per process.
    ``config_memory``: the core's config-bus-loaded memory (see module docstring), if any.
    """

    name: str
    tag: str
    ports: tuple[PortSpec, ...]
    config_fields: tuple[ConfigField, ...]
    build: Callable[[], Any]
    info: dict[str, Any] = field(default_factory=dict)
    config_memory: ConfigMemory | None = None

    def inputs(self) -> list[PortSpec]:
        return [p for p in self.ports if p.direction == "in"]

    def outputs(self) -> list[PortSpec]:
        return [p for p in self.ports if p.direction == "out"]


#: a core's rate ports: prefix -> the direction of the data port it qualifies
#: (:func:`canal.rv_rtl.rv_array`, "rates")
RATE_PREFIXES = {"emit_": "out", "deq_": "in", "need_": "in"}


def shell_ports(ports) -> dict[str, str]:
    """The rate ports of a core with ``ports`` (:class:`cgra.core.PortSpec`): rate port
    name -> the data port it qualifies: ``emit_<out>`` for an output ``<out>``, ``deq_<in>``
    and ``need_<in>`` for an input ``<in>`` (issue 35; :mod:`peak.examples.dataflow_pe`),
    which the ready-valid tile's handshake wrapper reads (:func:`canal.rv_rtl.rv_array`,
    "rates"). A port whose name has a prefix but no such partner, or that is not a 1-bit
    output, is not a rate port."""
    by = {p.name: p for p in ports}
    out: dict[str, str] = {}
    for p in ports:
        for pre, want in RATE_PREFIXES.items():
            base = p.name[len(pre):]
            if (p.name.startswith(pre) and p.direction == "out" and p.width == 1
                    and base in by and by[base].direction == want):
                out[p.name] = base
    return out
