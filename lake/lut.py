"""ROM / lookup-table (LUT) mode of a Lake memory: pure helpers (no hardware imports).

A memory whose spec has ``lut=True`` (the dual-port presets ``dualport_2048x16``,
``dualport_1024x32``, any ``dualport_<capacity>x<w>``) has a config field ``lut_mode`` (1 bit, the last field of
:func:`lake.config.config_fields`). With ``lut_mode`` = 1 the tile is a lookup table:

* the storage read address is ``data_in_0[:address_bits]`` (unsigned word index);
* ``data_out_0`` is registered: at cycle t+1 it shows ``storage[data_in_0 at cycle t]``
  (:data:`LUT_LATENCY` = 1 cycle), loaded on every cycle with ``clk_en`` = 1 (a stall
  holds it); ``valid_out_0`` = 1 on every cycle after such a cycle (0 after reset/flush);
* the write controller never writes the storage; chaining is off.

The table is loaded with the bitstream through the tile's config-memory port (see
:mod:`lake.rtl`, :func:`canal.config.config_memory_writes` and ``docs/lake.md``).
"""
from __future__ import annotations

import numbers
from typing import Sequence

from cgra.errors import ConfigError
from lake.config import configure
from lake.spec import MemorySpec, as_spec

#: cycles from ``data_in_0`` to ``data_out_0`` in LUT mode
LUT_LATENCY = 1


def _lut_spec(preset: MemorySpec | str) -> MemorySpec:
    spec = as_spec(preset)
    if not spec.lut:
        raise ConfigError(f"memory {spec.name} has no lookup-table mode (spec lut=False); "
                          f"use a preset with lut=True, e.g. dualport_2048x16")
    return spec


def lut_fields(preset: MemorySpec | str) -> dict[str, int]:
    """Core config field values (name -> int, every field of
    :func:`lake.config.config_fields`) that put the tile in LUT mode: ``lut_mode`` = 1,
    both controllers disabled (so they never fire) and chaining off. Raises
    :class:`ConfigError` for a preset without LUT mode."""
    spec = _lut_spec(preset)
    values = configure(spec, {})
    values["lut_mode"] = 1
    return values


def check_table(preset: MemorySpec | str, values: Sequence[int]) -> None:
    """Check a LUT table (word ``w`` holds ``values[w]``): at most ``storage.words`` entries
    (2048 for ``dualport_2048x16``), each in ``[0, 2**data_width)``. Raises
    :class:`ConfigError` naming the memory, the entry and the limit."""
    spec = _lut_spec(preset)
    words, dw = spec.storage.words, spec.storage.data_width
    if len(values) > words:
        raise ConfigError(f"memory {spec.name}: LUT table has {len(values)} entries but the "
                          f"storage holds {words} words; shorten the table")
    for i, v in enumerate(values):
        if not isinstance(v, numbers.Integral) or not 0 <= v < 1 << dw:
            raise ConfigError(f"memory {spec.name}: LUT entry {i} = {v!r} does not fit "
                              f"{dw} bits (0..{(1 << dw) - 1}); reduce the value")
