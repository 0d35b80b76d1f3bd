"""Config-space conventions shared by every tile (PE, MEM, IO) and the interconnect.

Address of one 32-bit config register (DESIGN.md §3, garnet)::

    addr = reg << 24 | feature << 16 | x << 8 | y        (all fields 8 bits, addr 32 bits)

A *feature* is one configurable block of a tile (feature 0 is the tile's core; the
interconnect blocks take the following numbers, see ``canal``). Inside a feature, named
fields are packed into consecutive 32-bit registers by :func:`pack_fields`.
"""
from __future__ import annotations

from dataclasses import dataclass

from cgra.errors import ConfigError

CONFIG_DATA_WIDTH = 32
"""Width of one config register and of the config data bus, in bits."""


@dataclass(frozen=True)
class ConfigField:
    """A named configuration value of a feature.

    ``width`` is in bits (>= 1); ``reset`` is the value the hardware holds after reset.
    """

    name: str
    width: int
    reset: int = 0


@dataclass(frozen=True)
class FieldSlice:
    """Where (part of) a field lives: bits ``[lo, lo+width)`` of register ``reg`` hold
    bits ``[field_lo, field_lo+width)`` of field ``name``."""

    name: str
    reg: int
    lo: int
    width: int
    field_lo: int


def config_address(reg: int, feature: int, x: int, y: int) -> int:
    """The 32-bit config address of register ``reg`` of ``feature`` in tile (x, y).

    Raises :class:`ConfigError` if any part does not fit its 8-bit field.
    """
    for name, value in (("reg", reg), ("feature", feature), ("x", x), ("y", y)):
        if not 0 <= value < 256:
            raise ConfigError(f"config address field {name}={value} does not fit 8 bits (0..255)")
    return reg << 24 | feature << 16 | x << 8 | y


def split_address(addr: int) -> tuple[int, int, int, int]:
    """Inverse of :func:`config_address`: ``(reg, feature, x, y)``."""
    return (addr >> 24) & 0xFF, (addr >> 16) & 0xFF, (addr >> 8) & 0xFF, addr & 0xFF


def pack_fields(fields: list[ConfigField] | tuple[ConfigField, ...]) -> list[FieldSlice]:
    """Pack fields, in the given order, into 32-bit registers.

    Rule: a field that fits in the space left in the current register goes there (LSB
    first); a field that does not fit starts a new register; a field wider than 32 bits
    starts a new register and spans consecutive registers, least-significant part first.
    Returns one :class:`FieldSlice` per (field, register) piece, in register order.
    Raises :class:`ConfigError` for a duplicate name or a width < 1.
    """
    slices: list[FieldSlice] = []
    seen: set[str] = set()
    reg, used = 0, 0
    for f in fields:
        if f.name in seen:
            raise ConfigError(f"config field '{f.name}' is declared twice")
        seen.add(f.name)
        if f.width < 1:
            raise ConfigError(f"config field '{f.name}' has width {f.width}; it must be >= 1")
        if f.width > CONFIG_DATA_WIDTH - used:
            if used:
                reg, used = reg + 1, 0
        remaining, field_lo = f.width, 0
        while remaining:
            take = min(remaining, CONFIG_DATA_WIDTH - used)
            slices.append(FieldSlice(f.name, reg, used, take, field_lo))
            used += take
            field_lo += take
            remaining -= take
            if used == CONFIG_DATA_WIDTH:
                reg, used = reg + 1, 0
    return slices


def encode_fields(fields: list[ConfigField] | tuple[ConfigField, ...],
                  values: dict[str, int]) -> dict[int, int]:
    """Register index -> 32-bit data for the given field values (missing fields take
    their reset value). Raises :class:`ConfigError` for an unknown field or a value that
    does not fit its width."""
    by_name = {f.name: f for f in fields}
    for name, value in values.items():
        if name not in by_name:
            raise ConfigError(f"unknown config field '{name}'; known: {sorted(by_name)}")
        if not 0 <= value < (1 << by_name[name].width):
            raise ConfigError(
                f"config field '{name}' = {value} does not fit {by_name[name].width} bits")
    regs: dict[int, int] = {}
    for s in pack_fields(fields):
        value = values.get(s.name, by_name[s.name].reset)
        part = (value >> s.field_lo) & ((1 << s.width) - 1)
        regs[s.reg] = regs.get(s.reg, 0) | part << s.lo
    return regs


def decode_fields(fields: list[ConfigField] | tuple[ConfigField, ...],
                  regs: dict[int, int]) -> dict[str, int]:
    """Inverse of :func:`encode_fields`: field name -> value (absent registers read 0)."""
    values = {f.name: 0 for f in fields}
    for s in pack_fields(fields):
        part = (regs.get(s.reg, 0) >> s.lo) & ((1 << s.width) - 1)
        values[s.name] |= part << s.field_lo
    return values
