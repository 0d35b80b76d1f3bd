"""The interface between a tile core (PE, MEM, IO, test cores) and the tile around it.

A core is described by a :class:`CoreSpec`. Its magma circuit (``build()``) has exactly
these ports:

* ``CLK`` (clock) and ``RESET`` (synchronous, active high) — ``m.ClockIO(has_reset=True)``;
* ``clk_en`` ``In(Bit)``: 1 = run, 0 = stall (every state element holds);
* ``flush`` ``In(Bit)``: restart the core's controllers (memories), ignored by PEs;
* one port per :class:`PortSpec` with the same name, ``Bits[width]`` (``Bit`` if width 1);
* one input ``config_<name>`` of ``Bits[width]`` per :class:`~cgra.config.ConfigField`.

The tile (``canal``/``garnet``) owns the 32-bit config registers of feature 0 and drives
the ``config_*`` inputs from them, packed with :func:`cgra.config.pack_fields`.
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


@dataclass
class CoreSpec:
    """A tile core: its ports, its config fields, its PnR tag and its circuit builder.

    ``tag`` is the one-letter PnR tag (``p`` PE, ``m`` MEM, ``I`` 16-bit IO, ``i`` 1-bit IO).
    ``name`` must be unique per distinct core (it becomes the Verilog module name).
    ``build`` returns the magma circuit; callers cache it so it is built once per process.
    """

    name: str
    tag: str
    ports: tuple[PortSpec, ...]
    config_fields: tuple[ConfigField, ...]
    build: Callable[[], Any]
    info: dict[str, Any] = field(default_factory=dict)

    def inputs(self) -> list[PortSpec]:
        return [p for p in self.ports if p.direction == "in"]

    def outputs(self) -> list[PortSpec]:
        return [p for p in self.ports if p.direction == "out"]
