"""The GLB's configuration network (AHA paper §4.4, Figs. 11-12): a bitstream of (32-bit
address, 32-bit data) bundles becomes a GLB image, and a cycle-level model counts the cycles
to configure the array through it, against today's single config port in the same model.

Hardware modelled:

* **GLB side.** A bundle is one 64-bit GLB word (``addr << 32 | data``). Column ``x`` is
  served by GLB tile ``x // columns_per_tile``; its bundles lie contiguously in bank
  ``(x % columns_per_tile) % banks`` of that tile. Each bank reads one word per cycle
  (synchronous read: the word enters the column path one cycle after its read), so a tile
  with two banks feeds its two columns at one bundle per cycle each.
* **Column path.** Per column, a chain of pipeline registers, one per
  ``config_pipeline_rows`` rows; a bundle in stage ``s`` during a cycle is written into the
  tile of its row if that row is in the stage's rows. One bundle enters a column per cycle.
* **Modes.** ``unicast``: every GLB tile streams its own columns' bundles, all in parallel.
  ``multicast``: one GLB tile (``source``) streams the bundles of a column range, one per
  cycle, and each column path of the range takes those of its column. ``broadcast``: one
  tile streams every bundle to every column (each column keeps its own). ``serial``: today's
  single config port, one (address, data) word per cycle, written the cycle after it is
  driven (the Verilator harness of :mod:`mapper.sim.verilator`).
* **Row multicast** (``row_multicast=True``, unicast): bundles of one column with the same
  register, feature and data in several rows are sent once with ``y = 0xFF`` after a row-mask
  word (feature ``0xFF``, register = mask chunk ``k``, data = bits of rows ``32k..32k+31``);
  the column path writes such a bundle into every row of the current mask. Feature ``0xFF``
  and ``y = 0xFF`` are reserved (a bitstream using them is refused).

:func:`expand` decodes an image back into the (address, data) writes it performs, the check
that an image is the bitstream.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from cgra.errors import ConfigError
from garnet.glb.params import GlbParams

MODES = ("unicast", "multicast", "broadcast", "serial")
MASK_FEATURE = 0xFF
ALL_ROWS = 0xFF


@dataclass
class GlbImage:
    """Per column, the 64-bit bundle words it receives in order (``addr << 32 | data``),
    and the GLB placement of each column's words: column -> (tile, bank, first word)."""

    columns: dict[int, list[int]]
    placement: dict[int, tuple[int, int, int]] = field(default_factory=dict)

    @property
    def words(self) -> int:
        return sum(len(v) for v in self.columns.values())


def _split(addr: int) -> tuple[int, int, int, int]:
    return (addr >> 24) & 0xFF, (addr >> 16) & 0xFF, (addr >> 8) & 0xFF, addr & 0xFF


def glb_image(p: GlbParams, bitstream: Sequence[tuple[int, int]], height: int,
              row_multicast: bool = False) -> GlbImage:
    """The GLB image of ``bitstream`` ((address, data) pairs) for an array of ``height``
    rows. Raises :class:`ConfigError` for a column the GLB does not serve, or a word using a
    reserved feature / row."""
    if not 1 <= height < ALL_ROWS:
        raise ConfigError(f"config network: array height {height} must be 1..254 "
                          f"(row 0xFF means 'the rows of the mask')")
    per_col: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for addr, data in bitstream:
        reg, feat, x, y = _split(addr)
        if feat == MASK_FEATURE or y == ALL_ROWS:
            raise ConfigError(f"config word {addr:08X} {data:08X}: feature 0xFF and row 0xFF "
                              f"are reserved for the GLB config network's row multicast")
        if x >= p.columns:
            raise ConfigError(f"config word {addr:08X}: column {x} is not served by the GLB "
                              f"({p.tiles} tiles x {p.columns_per_tile} columns = {p.columns});"
                              f" raise [glb] tiles to {x // p.columns_per_tile + 1}")
        if y >= height:
            raise ConfigError(f"config word {addr:08X}: row {y} is outside the {height}-row "
                              f"array")
        per_col[x].append((addr, data))
    cols: dict[int, list[int]] = {}
    for x, words in sorted(per_col.items()):
        if not row_multicast:
            cols[x] = [a << 32 | d for a, d in words]
            continue
        groups: dict[tuple[int, int, int], list[int]] = defaultdict(list)
        for a, d in words:
            reg, feat, _x, y = _split(a)
            groups[(reg, feat, d)].append(y)
        single = [(k, ys[0]) for k, ys in groups.items() if len(ys) == 1]
        multi = sorted(((tuple(sorted(set(ys))), k) for k, ys in groups.items() if len(ys) > 1),
                       key=lambda t: (t[0], t[1]))
        out = [((reg << 24 | feat << 16 | x << 8 | y) << 32) | d for (reg, feat, d), y in single]
        mask_now: tuple[int, ...] | None = None
        for rows, (reg, feat, d) in multi:
            if rows != mask_now:
                for chunk in range((height + 31) // 32):
                    bits = sum(1 << (r - 32 * chunk) for r in rows if 32 * chunk <= r < 32 * chunk + 32)
                    old = sum(1 << (r - 32 * chunk) for r in (mask_now or ())
                              if 32 * chunk <= r < 32 * chunk + 32)
                    if mask_now is None or bits != old:
                        out.append(((chunk << 24 | MASK_FEATURE << 16 | x << 8) << 32) | bits)
                mask_now = rows
            out.append(((reg << 24 | feat << 16 | x << 8 | ALL_ROWS) << 32) | d)
        cols[x] = out
    img = GlbImage(cols)
    used: dict[tuple[int, int], int] = defaultdict(int)
    for x, words in sorted(cols.items()):
        tile, bank = x // p.columns_per_tile, (x % p.columns_per_tile) % p.banks
        img.placement[x] = (tile, bank, used[(tile, bank)])
        used[(tile, bank)] += len(words)
        if used[(tile, bank)] > p.bank_words:
            raise ConfigError(f"GLB image: bank {bank} of tile {tile} needs "
                              f"{used[(tile, bank)]} words for columns up to {x}, more than "
                              f"its {p.bank_words}; raise [glb] bank_words")
    return img


def expand(image: GlbImage, height: int) -> list[tuple[int, int]]:
    """The (address, data) writes the column paths perform for ``image``, sorted."""
    out: list[tuple[int, int]] = []
    for words in image.columns.values():
        mask = [0] * ((height + 31) // 32)
        for w in words:
            addr, data = w >> 32, w & 0xFFFFFFFF
            reg, feat, _x, y = _split(addr)
            if feat == MASK_FEATURE:
                mask[reg] = data
            elif y == ALL_ROWS:
                for r in range(height):
                    if mask[r // 32] >> (r % 32) & 1:
                        out.append((addr & ~0xFF | r, data))
            else:
                out.append((addr, data))
    return sorted(out)


@dataclass(frozen=True)
class ConfigRun:
    """Result of :func:`simulate`: ``cycles`` until the last register is written (cycle 0 =
    the first read / drive), ``writes`` register writes done, ``streams`` parallel streams."""

    mode: str
    cycles: int
    writes: int
    streams: int


def simulate(p: GlbParams, bitstream: Sequence[tuple[int, int]], height: int,
             mode: str = "unicast", row_multicast: bool = False, source: int = 0,
             columns: tuple[int, int] | None = None) -> ConfigRun:
    """Cycle-level run of configuring ``bitstream`` (module docstring gives the hardware).
    ``columns`` (multicast): the inclusive column range the source tile serves (default:
    every column of the bitstream). Raises :class:`ConfigError` for an unknown mode, or a
    word outside the multicast range."""
    if mode not in MODES:
        raise ConfigError(f"config network mode '{mode}': use one of {list(MODES)}")
    if mode == "serial":
        # one word driven per cycle; written at the clock edge ending that cycle
        return ConfigRun(mode, len(bitstream), len(bitstream), 1)
    img = glb_image(p, bitstream, height, row_multicast and mode == "unicast")
    # streams: each is a list of (column or None for all, word) read one per cycle
    streams: list[list[tuple[int, int]]] = []
    if mode == "unicast":
        by_bank: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
        for x, words in sorted(img.columns.items()):
            tile, bank, _first = img.placement[x]
            by_bank[(tile, bank)] += [(x, w) for w in words]
        streams = list(by_bank.values())
    else:
        lo, hi = columns if columns is not None else (min(img.columns, default=0),
                                                      max(img.columns, default=0))
        for x in img.columns:
            if mode == "multicast" and not lo <= x <= hi:
                raise ConfigError(f"multicast from GLB tile {source} to columns {lo}..{hi}: "
                                  f"the bitstream configures column {x}; widen the range")
        if not 0 <= source < p.tiles:
            raise ConfigError(f"config source GLB tile {source} out of range 0..{p.tiles - 1}")
        streams = [[(x, w) for x, words in sorted(img.columns.items()) for w in words]]
    rows_per = p.config_pipeline_rows
    last = -1
    writes = 0
    for s in streams:
        mask: dict[int, list[int]] = defaultdict(lambda: [0] * ((height + 31) // 32))
        for k, (x, w) in enumerate(s):
            addr, data = w >> 32, w & 0xFFFFFFFF
            reg, feat, _x, y = _split(addr)
            # read at cycle k, enters the column path (stage 0) at k + 1; stage s at k + 1 + s
            if feat == MASK_FEATURE:
                mask[x][reg] = data
                continue
            rows = [r for r in range(height) if mask[x][r // 32] >> (r % 32) & 1] \
                if y == ALL_ROWS else [y]
            for r in rows:
                written = k + 1 + r // rows_per
                writes += 1
                last = max(last, written)
    return ConfigRun(mode, last + 1, writes, len(streams))


def read_bitstream(path: str | Path) -> list[tuple[int, int]]:
    """The (address, data) words of a ``.bs`` file (one ``AAAAAAAA DDDDDDDD`` hex line per
    word, the format of :mod:`mapper.backend.bitstream`). Raises :class:`ConfigError` naming
    the file and the first malformed line."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read the bitstream ({exc.strerror}); give the .bs "
                          f"file of a `cgra run` directory") from None
    out: list[tuple[int, int]] = []
    for k, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        try:
            if len(parts) != 2 or any(len(x) > 8 for x in parts):
                raise ValueError
            out.append((int(parts[0], 16), int(parts[1], 16)))
        except ValueError:
            raise ConfigError(f"{p}:{k}: '{line.strip()[:40]}' is not an 'AAAAAAAA DDDDDDDD' "
                              f"bitstream word; regenerate it with `cgra bitstream`") from None
    return out


def image_json(image: GlbImage) -> dict:
    """JSON form of an image: per column its GLB placement and words (16 hex digits)."""
    return {"schema": "garnet.glb_image/1",
            "columns": {str(x): {"tile": image.placement[x][0], "bank": image.placement[x][1],
                                 "first_word": image.placement[x][2],
                                 "words": [f"{w:016X}" for w in ws]}
                        for x, ws in sorted(image.columns.items())}}
