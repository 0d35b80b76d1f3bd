"""GLB DMA programs: Lake's port programs (iteration domain, access map, schedule) reused as
the load / store DMA address generators of a GLB tile (AHA paper §4.4; the affine
controllers of Lake, Liu et al., "Unified Buffer", ACM TACO 2023, Sec. 5).

One description: a DMA is a :class:`lake.program.PortProgram` (element addresses, unit one
``data_width``-bit array word; schedule in cycles since the tile's ``start``) plus ``chain``.
Its hardware form is Lake's recurrence form (:func:`lake.affine.deltas_from_strides`): the
same registers as a Lake controller -- ``enable``, ``dim``, ``range_k`` (= extent - 1),
``addr_offset``, ``addr_delta_k``, ``sched_offset``, ``sched_delta_k`` -- and the GLB's own
``chain`` bit.

* ``chain = False``: addresses are local to the tile, ``[0, tile_elements)``; a load's word
  appears on the tile's ``io_out`` 1 cycle after it fires.
* ``chain = True``: addresses are global (``tile * tile_elements + local``) and travel on the
  ring through every tile (one register per tile); a load's word appears
  ``tiles + 1`` cycles after it fires (constant, whichever tile owns it).

Config registers of a tile (one 32-bit register per field, LSB-aligned; register index =
position in :func:`register_fields`; GLB config address ``tile << 8 | index``): the two DMAs'
registers, then per bank ``b`` the config streamer's ``cs_base_<b>`` (first word) and
``cs_count_<b>`` (words to stream).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from cgra.errors import ConfigError
from garnet.glb.params import GlbParams
from lake.program import PortProgram, check_program

DMAS = ("ld", "st")


@dataclass(frozen=True)
class DmaProgram:
    """A DMA's Lake port program and whether it addresses the chained (global) space."""

    program: PortProgram
    chain: bool = False

    def latency(self, p: GlbParams) -> int:
        """Cycles from a load's fire to its word on ``io_out``: 1 local, ``tiles + 1``
        chained."""
        return p.tiles + 1 if self.chain else 1


def register_fields(p: GlbParams) -> list[tuple[str, int]]:
    """``(name, width in bits)`` of every config register of one GLB tile, in index order."""
    d, ew, aw, sw = p.dma_dims, p.extent_width, p.address_width, p.schedule_width
    out: list[tuple[str, int]] = []
    for dma in DMAS:
        out += [(f"{dma}_enable", 1), (f"{dma}_dim", 3), (f"{dma}_chain", 1)]
        out += [(f"{dma}_range_{k}", ew) for k in range(d)]
        out += [(f"{dma}_addr_offset", aw)]
        out += [(f"{dma}_addr_delta_{k}", aw) for k in range(d)]
        out += [(f"{dma}_sched_offset", sw)]
        out += [(f"{dma}_sched_delta_{k}", sw) for k in range(d)]
    # the config streamer of each bank (garnet.glb.model): first word, word count
    wb = max(1, (p.bank_words - 1).bit_length())
    for b in range(p.banks):
        out += [(f"cs_base_{b}", wb), (f"cs_count_{b}", wb + 1)]
    return out


def register_index(p: GlbParams) -> dict[str, int]:
    """Field name -> register index (GLB config address = ``tile << 8 | index``)."""
    return {name: i for i, (name, _w) in enumerate(register_fields(p))}


def check_dma(p: GlbParams, tile: int, dma: str, prog: DmaProgram) -> None:
    """Lake's port-program rules (:func:`lake.program.check_program`) with the GLB's
    widths; the address range is the tile (local) or the whole chained GLB. Raises
    :class:`ConfigError` naming the tile and DMA."""
    if dma not in DMAS:
        raise ConfigError(f"GLB tile {tile}: unknown DMA '{dma}'; use one of {list(DMAS)}")
    if not 0 <= tile < p.tiles:
        raise ConfigError(f"GLB DMA {dma}: tile {tile} out of range 0..{p.tiles - 1}")
    words = p.tiles * p.tile_elements if prog.chain else p.tile_elements
    check_program(f"glb tile {tile} {dma}", prog.program, max_dims=p.dma_dims,
                  extent_width=p.extent_width, schedule_width=p.schedule_width, words=words)


def encode(p: GlbParams, tile: int, dma: str, prog: DmaProgram | None) -> dict[str, int]:
    """Register values (unsigned, each within its width) of DMA ``dma`` of ``tile``; ``None``
    disables it. Raises :class:`ConfigError` for a program breaking a rule of
    :func:`check_dma`."""
    d = p.dma_dims
    aw, sw = p.address_width, p.schedule_width
    if prog is None:
        return {name: 0 for name, _w in register_fields(p) if name.startswith(dma + "_")}
    check_dma(p, tile, dma, prog)
    pp = prog.program
    n = pp.dimensionality
    ext = list(pp.extents) + [1] * (d - n)
    ad = pp.address_deltas() + [0] * (d - n)
    sd = pp.schedule_deltas() + [0] * (d - n)
    out = {f"{dma}_enable": 1, f"{dma}_dim": n, f"{dma}_chain": int(prog.chain),
           f"{dma}_addr_offset": pp.address.offset % (1 << aw),
           f"{dma}_sched_offset": pp.schedule.offset % (1 << sw)}
    for k in range(d):
        out[f"{dma}_range_{k}"] = ext[k] - 1
        out[f"{dma}_addr_delta_{k}"] = ad[k] % (1 << aw)
        out[f"{dma}_sched_delta_{k}"] = sd[k] % (1 << sw)
    return out


def config_words(p: GlbParams, tile: int, regs: Mapping[str, int]) -> list[tuple[int, int]]:
    """(GLB config address, 32-bit data) pairs writing ``regs`` (field -> value) of
    ``tile``, in register order."""
    idx = register_index(p)
    return [(tile << 8 | idx[name], int(value)) for name, value in
            sorted(regs.items(), key=lambda kv: idx[kv[0]])]
