"""Parameters of the global buffer (GLB): one dataclass, the ``[glb]`` table of a design's
TOML (AHA paper §4.4, Fig. 11; Table 1: 64-bit GLB words, 16-bit array words).

TOML (every key optional; defaults below)::

    [glb]
    tiles = 4               # GLB tiles (1..64); tile t serves array columns
                            # [t * columns_per_tile, (t + 1) * columns_per_tile)
    banks = 2               # SRAM banks per tile (the AHA GLB tile has two; only 2 is built)
    bank_words = 1024       # words per bank (a power of two, 16..65536), word_width bits each
    columns_per_tile = 2    # array columns one tile serves (AHA: 2)
    word_width = 64         # bits of a GLB word (AHA Table 1: 64)
    data_width = 16         # bits of an array word streamed by the DMAs (16)
    dma_dims = 4            # dimensions of a DMA's iteration domain (Lake's controllers)
    extent_width = 16       # bits of one extent register (extent - 1 is stored)
    schedule_width = 32     # bits of the cycle counter and of the schedule generator
    config_pipeline_rows = 4  # array rows per pipeline register of a column's config path

Derived: ``lanes = word_width // data_width`` array words per GLB word; a tile holds
``tile_elements = banks * bank_words * lanes`` array words (element addresses, unit: one
``data_width``-bit word). :func:`from_dict` raises :class:`~cgra.errors.ConfigError` naming the
field and the fix.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cgra.errors import ConfigError
from cgra.tomlfile import read_toml


@dataclass(frozen=True)
class GlbParams:
    """The GLB's parameters (module docstring gives units and ranges)."""

    tiles: int = 4
    banks: int = 2
    bank_words: int = 1024
    columns_per_tile: int = 2
    word_width: int = 64
    data_width: int = 16
    dma_dims: int = 4
    extent_width: int = 16
    schedule_width: int = 32
    config_pipeline_rows: int = 4

    @property
    def lanes(self) -> int:
        """Array words per GLB word."""
        return self.word_width // self.data_width

    @property
    def tile_elements(self) -> int:
        """Array words (``data_width`` bits) one tile holds."""
        return self.banks * self.bank_words * self.lanes

    @property
    def tile_words(self) -> int:
        """GLB words (``word_width`` bits) one tile holds."""
        return self.banks * self.bank_words

    @property
    def address_width(self) -> int:
        """Bits of a global element address (all tiles, chained)."""
        return max(1, (self.tiles * self.tile_elements - 1).bit_length())

    @property
    def word_address_width(self) -> int:
        """Bits of a global GLB-word address (the host port)."""
        return max(1, (self.tiles * self.tile_words - 1).bit_length())

    @property
    def columns(self) -> int:
        """Array columns the GLB serves."""
        return self.tiles * self.columns_per_tile

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_FIELDS = {f.name for f in dataclasses.fields(GlbParams)}


def _pow2(v: int) -> bool:
    return v >= 1 and not v & (v - 1)


def from_dict(doc: dict[str, Any], source: str | None = None) -> GlbParams:
    """Build and validate GLB parameters from the ``[glb]`` table. Raises
    :class:`ConfigError` (one line, ``<source>: [glb] field '<key>' = <value>: <fix>``)."""
    where = f"{source}: " if source else ""
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}[glb] must be a TOML table (got {doc!r}); write "
                          f"'[glb]' followed by 'tiles = 4' etc.")
    for key, value in doc.items():
        if key not in _FIELDS:
            raise ConfigError(f"{where}[glb] field '{key}': unknown; known fields: "
                              f"{sorted(_FIELDS)}")
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigError(f"{where}[glb] field '{key}' = {value!r}: expected an integer")
    p = GlbParams(**doc)
    validate(p, source)
    return p


def validate(p: GlbParams, source: str | None = None) -> None:
    """Check every field; raises :class:`ConfigError` naming the field and a fix."""
    where = f"{source}: " if source else ""

    def err(key: str, msg: str) -> ConfigError:
        return ConfigError(f"{where}[glb] field '{key}' = {getattr(p, key)!r}: {msg}")

    if not 1 <= p.tiles <= 64:
        raise err("tiles", "use 1..64 GLB tiles")
    if p.banks != 2:
        raise err("banks", "a GLB tile has two SRAM banks (AHA §4.4); use banks = 2")
    if not _pow2(p.bank_words) or not 16 <= p.bank_words <= 65536:
        raise err("bank_words", "use a power of two in 16..65536 (address bits are sliced)")
    if not 1 <= p.columns_per_tile <= 8:
        raise err("columns_per_tile", "use 1..8 columns per tile (AHA: 2)")
    if p.data_width not in (8, 16, 32):
        raise err("data_width", "use 8, 16 or 32 (the array's word)")
    if p.word_width not in (32, 64, 128) or p.word_width < p.data_width \
            or not _pow2(p.word_width // p.data_width):
        raise err("word_width", f"use 32, 64 or 128, a power-of-two multiple of data_width "
                                f"({p.data_width})")
    if p.word_width < 64:
        raise err("word_width", "a config bundle (32-bit address, 32-bit data) is one GLB "
                                "word: use 64 or 128")
    if not 1 <= p.dma_dims <= 6:
        raise err("dma_dims", "use 1..6 dimensions")
    if not 2 <= p.extent_width <= 24:
        raise err("extent_width", "use 2..24 bits")
    if not 8 <= p.schedule_width <= 32:
        raise err("schedule_width", "use 8..32 bits")
    if p.config_pipeline_rows < 1:
        raise err("config_pipeline_rows", "use >= 1 rows per pipeline register")


def load_toml(path: str | Path) -> GlbParams:
    """The ``[glb]`` table of a TOML file (a design's configuration or a file of its own;
    defaults when the file has no ``[glb]`` table). Raises :class:`ConfigError` for a
    missing file, a TOML syntax error (with its line) or a bad field."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file {p} does not exist; pass a TOML file with a [glb] "
                          f"table (e.g. configs/small_glb.toml)")
    return from_dict(read_toml(p).get("glb", {}), str(p))


def load_table(path: str | Path) -> GlbParams | None:
    """The ``[glb]`` table of a design's TOML, ``None`` when it has none (the design has no
    GLB: `cgra rtl` writes no ``glb/`` and `cgra run` streams through the IO ports
    directly). Raises :class:`ConfigError` like :func:`load_toml`."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file {p} does not exist; pass a design TOML")
    doc = read_toml(p)
    return from_dict(doc["glb"], str(p)) if "glb" in doc else None
