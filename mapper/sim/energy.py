"""Energy estimate of a simulated run: switching activity from the Verilator run, per-cell
energy from yosys cell counts and a cited table, leakage of the tiles that are on.

**This is a model, not a measurement** (the figures and their sources are in
``mapper/data/energy.json``, :func:`energy_table`; each says it is a model). What goes in:

* **Cells**: each distinct tile module of the design's ``rtl/`` synthesised with yosys
  (:func:`garnet.cells.tile_cells`: generic gates, ``abc -fast``), cell counts per yosys cell
  type, cached by the module's Verilog hash under ``<model cache>/cells/`` (the Verilator
  model cache beside the design, :func:`mapper.sim.verilator.model_cache_dir`), so a design
  is synthesised once (~30 s for the three tile modules of the 8x8 on one core).
* **Activity**: per-tile toggle counts of the Verilator run (:func:`tile_activity`). The
  harness counts, over the stream cycles, the bit toggles ``sum_t popcount(v[t] ^ v[t-1])``
  of every wire of the top module that carries a tile's output (its switch-box outputs,
  :func:`mapper.sim.verilator.tile_probes`) and the bits that switched at least once; the
  streams on an IO tile's top ports (the words the harness drove and sampled) count for that
  tile the same way. A tile's toggle rate ``alpha_t`` is its output toggles over its
  switching output bits and the cycles; inside the tile the same ``alpha_t`` is applied to
  every cell (a first-order model: the tile's internal nodes switch as often as its
  switching outputs). A tile whose outputs never switch (gated, or on with quiet muxes) has
  ``alpha_t = 0``; an on tile whose unused muxes forward a switching net toggles, so
  ``--quiet-unused`` shows in the estimate.
* **Dynamic energy** per run: every tile ``alpha_t x cycles x sum_cells(weight x
  nand2_toggle_fj)`` = ``toggles_t / switching_bits_t x NAND2 eq. x nand2_toggle_fj`` (a
  cell's toggle energy scales with its NAND2-equivalent area,
  :data:`garnet.cells.CELL_WEIGHTS`); every *on* tile's flip-flops ``cycles x ff_clock_fj``
  (no clock gating in the RTL); a used MEM tile's SRAM ``sram_accesses_per_cycle x cycles x
  bytes x sram_access_pj_per_byte`` (AHA paper §4.2's 16-bit SRAM figure).
* **Leakage** per run: every on tile's cells x their NanGate 45 nm cell leakage
  (:data:`garnet.cells.CELL_LEAKAGE_NW`, from the NanGate Open Cell Library's typical-corner
  liberty, ``cell_leakage_nw`` in the table) plus its SRAM bits x
  ``sram_leakage_nw_per_kbit``, x the run time (stream cycles / the design's Fmax from static
  timing). A gated tile leaks nothing (AHA §4.3: gating "eliminat[es] leakage power
  consumption") and its flip-flops are not clocked.

Both figures are given per output pixel, for the run's power state (``gated``: the unused
tiles gated by the bitstream, or not) and, for comparison, for the other state
(``ungated`` / ``all_unused_gated`` counterparts computed from the same measured toggles:
a tile gated in the run did not switch, and is taken as not switching when on).
"""
from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from cgra.errors import CollateralError
from garnet.cells import CELL_WEIGHTS, leakage_nw, nand2_area, tile_cells, tile_sites

ENERGY_SCHEMA = "mapper.energy/1"


def energy_table() -> dict[str, Any]:
    """The per-cell energy table (``mapper/data/energy.json``, schema
    ``mapper.energy_table/1``): name -> ``{value, unit, source, model}``. Raises
    :class:`CollateralError` when the package data is missing or malformed."""
    try:
        doc = json.loads(resources.files("mapper").joinpath("data", "energy.json").read_text())
        for k in ("nand2_toggle_fj", "ff_clock_fj", "nand2_x1_leakage_nw",
                  "sram_access_pj_per_byte", "sram_accesses_per_cycle",
                  "sram_leakage_nw_per_kbit"):
            float(doc[k]["value"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CollateralError(f"mapper/data/energy.json: unreadable energy table ({exc}); "
                              f"reinstall the project") from None
    return doc


def stream_toggles(words: np.ndarray, width: int) -> int:
    """Bit toggles of a word stream: ``sum_t popcount((v[t] ^ v[t-1]) & mask)`` over
    ``width``-bit words ``v`` (0 for fewer than two words)."""
    v = np.asarray(words, dtype=np.int64) & ((1 << width) - 1)
    if v.size < 2:
        return 0
    x = (v[1:] ^ v[:-1]).astype(np.uint64)
    return int(np.unpackbits(x.view(np.uint8)).sum())


def stream_mask(words: np.ndarray, width: int) -> int:
    """The bits of a ``width``-bit word stream that switched at least once: the OR of
    ``v[t] ^ v[t-1]`` (0 for fewer than two words)."""
    v = np.asarray(words, dtype=np.int64) & ((1 << width) - 1)
    return int(np.bitwise_or.reduce(v[1:] ^ v[:-1])) if v.size >= 2 else 0


#: the tile of a top IO port: ``<name>_X<xx>_Y<yy>`` (garnet's port naming, hex)
_PORT_XY = re.compile(r"_X([0-9A-F]{2})_Y([0-9A-F]{2})$")


def tile_activity(probe_toggles: Mapping[str, tuple[int, int]],
                  io_streams: Mapping[str, tuple[np.ndarray, int]]
                  ) -> dict[tuple[int, int], tuple[int, int]]:
    """(x, y) -> ``(toggles, switching bits)`` of every tile with a switching output:
    ``probe_toggles``: tile-output wire -> (bit toggles, mask of the bits that switched), as
    the Verilator harness counts them (:attr:`mapper.sim.verilator.SimRun.toggles`, wires
    ``_Tile_X<xx>_Y<yy>_<port>``); ``io_streams``: top port ``<name>_X<xx>_Y<yy>`` -> (words
    per stream cycle, port bits), counted for its IO tile (:func:`stream_toggles`,
    :func:`stream_mask`). Raises :class:`CollateralError` for a wire or port that names no
    tile."""
    acc: dict[tuple[int, int], list[int]] = {}

    def add(name: str, xy: tuple[int, int] | None, tog: int, mask: int) -> None:
        if xy is None:
            raise CollateralError(f"toggle count of {name}: the name gives no tile "
                                  f"(_X<xx>_Y<yy>); regenerate the design with `cgra rtl`")
        if tog:
            a = acc.setdefault(xy, [0, 0])
            a[0] += tog
            a[1] += bin(mask).count("1")

    for wire, (tog, mask) in probe_toggles.items():
        m = re.match(r"_Tile_X([0-9A-F]{2})_Y([0-9A-F]{2})_", wire)
        add(wire, (int(m[1], 16), int(m[2], 16)) if m else None, tog, mask)
    for port, (words, bits) in io_streams.items():
        m = _PORT_XY.search(port)
        add(port, (int(m[1], 16), int(m[2], 16)) if m else None, stream_toggles(words, bits),
            stream_mask(words, bits))
    return {xy: (a[0], a[1]) for xy, a in acc.items()}


def _is_ff(cell: str) -> bool:
    """A yosys flip-flop cell type (``$_DFF*``, ``$_SDFF*``, ``$_ALDFF*``, ``$_FF_``)."""
    return cell.startswith(("$_DFF", "$_SDFF", "$_ALDFF", "$_FF_"))


def tile_cell_counts(design: Path, cache: Path) -> dict[tuple[int, int], dict[str, Any]]:
    """(x, y) -> ``{module, cell_types, nand2, leakage_nw, ffs}`` of every tile of
    ``design``: the yosys counts of its module (:func:`garnet.cells.tile_cells`, cached under
    ``cache``), its area in NAND2 equivalents, its cells' leakage (nW, a model:
    :func:`garnet.cells.leakage_nw`) and its flip-flop count. Raises
    :class:`CollateralError` when yosys fails or a cell type has no weight."""
    sites = tile_sites(design)
    per_mod: dict[str, dict[str, Any]] = {}
    for mod in sorted(set(sites.values())):
        r = tile_cells(design, mod, cache)
        types = r["cell_types"]
        per_mod[mod] = {"module": mod, "cell_types": types, "nand2": nand2_area(types, mod),
                        "leakage_nw": leakage_nw(types, mod),
                        "ffs": sum(n for c, n in types.items() if _is_ff(c))}
    return {xy: per_mod[mod] for xy, mod in sites.items()}


def _sram_bits(design: Path, data_width: int) -> int:
    """Bits of a MEM tile's SRAM: ``mem.json``'s ``lake.capacity_words`` words of
    ``data_width`` bits (0 without a MEM)."""
    p = Path(design) / "mem.json"
    if not p.is_file():
        return 0
    doc = json.loads(p.read_text())
    return int((doc.get("lake") or {}).get("capacity_words") or 0) * data_width


def estimate(design: Path, cache: Path, tags: Mapping[tuple[int, int], str],
             used: set[tuple[int, int]], gated: set[tuple[int, int]],
             io_streams: Mapping[str, tuple[np.ndarray, int]],
             activity: Mapping[tuple[int, int], tuple[int, int]], cycles: int, pixels: int,
             fmax_mhz: float, data_width: int = 16) -> dict[str, Any]:
    """The energy report (module docstring) of a run: ``design`` (its ``rtl/``), ``cache``
    (yosys cell counts), ``tags``: (x, y) -> PnR tag (``m`` = MEM), ``used`` tiles,
    ``gated`` tiles (gated by the run's bitstream), ``io_streams``: top port -> (words per
    stream cycle, port bits) of every streamed input and sampled output (the IO toggle rate
    reported as ``toggle_rate``), ``activity``: (x, y) -> (output bit toggles, switching
    output bits) of the run (:func:`tile_activity`), ``cycles`` stream cycles, ``pixels``
    output pixels, ``fmax_mhz`` the clock (run time = cycles / Fmax). Energies in pJ. Raises
    :class:`CollateralError` for an unreadable table or a yosys failure."""
    tab = energy_table()

    def val(k: str) -> float:
        return float(tab[k]["value"])

    cells = tile_cell_counts(design, cache)
    io_tog = sum(stream_toggles(w, b) for w, b in io_streams.values())
    io_bits = sum(b * max(0, len(w) - 1) for w, b in io_streams.values())
    alpha = io_tog / io_bits if io_bits else 0.0
    seconds = cycles / (fmax_mhz * 1e6) if fmax_mhz > 0 else 0.0
    sram_bits = _sram_bits(design, data_width)
    sram_pj = val("sram_accesses_per_cycle") * cycles * (data_width / 8) * \
        val("sram_access_pj_per_byte")
    per_tile = []
    sums = {"on": [0.0, 0.0], "all_on": [0.0, 0.0], "min": [0.0, 0.0]}
    for xy in sorted(cells):
        c = cells[xy]
        is_used = xy in used
        mem = tags.get(xy) == "m"
        tog, bits = activity.get(xy, (0, 0))
        rate = tog / (bits * cycles) if bits and cycles else 0.0
        data_pj = rate * cycles * c["nand2"] * val("nand2_toggle_fj") / 1000
        sram_dyn = sram_pj if (is_used and mem) else 0.0
        clock_pj = cycles * c["ffs"] * val("ff_clock_fj") / 1000
        leak_nw = c["leakage_nw"] + \
            (sram_bits / 1024 * val("sram_leakage_nw_per_kbit") if mem else 0.0)
        leak_pj = leak_nw * 1e-9 * seconds * 1e12
        dyn_on = data_pj + sram_dyn + clock_pj
        on = xy not in gated
        sums["on"][0] += dyn_on if on else 0.0
        sums["on"][1] += leak_pj if on else 0.0
        sums["all_on"][0] += dyn_on
        sums["all_on"][1] += leak_pj
        sums["min"][0] += dyn_on if is_used else 0.0
        sums["min"][1] += leak_pj if is_used else 0.0
        per_tile.append({"x": xy[0], "y": xy[1], "module": c["module"], "used": is_used,
                         "on": on, "nand2": c["nand2"], "ffs": c["ffs"],
                         "leakage_nw": c["leakage_nw"], "toggles": tog,
                         "switching_bits": bits, "toggle_rate": round(rate, 6),
                         "dynamic_pj": round(dyn_on if on else 0.0, 3),
                         "leakage_pj": round(leak_pj if on else 0.0, 3)})

    def per_px(pair: list[float]) -> dict[str, float]:
        d, lk = pair[0] / max(1, pixels), pair[1] / max(1, pixels)
        return {"dynamic_pj_per_pixel": round(d, 4), "leakage_pj_per_pixel": round(lk, 4),
                "total_pj_per_pixel": round(d + lk, 4)}

    return {"schema": ENERGY_SCHEMA,
            "model": "estimate from a model (mapper.sim.energy; figures and sources in "
                     "mapper/data/energy.json): not a measurement",
            "tiles_on": len(cells) - len(gated & set(cells)),
            "tiles_gated": len(gated & set(cells)), "tiles_used": len(used & set(cells)),
            "toggle_rate": round(alpha, 6), "io_toggles": io_tog,
            "toggles_total": sum(t for t, _b in activity.values()),
            "toggles_source": "Verilator run: bit toggles of every tile-output wire and IO "
                              "port over the stream cycles (per tile in per_tile)",
            "cycles": cycles,
            "pixels": pixels, "fmax_mhz": round(fmax_mhz, 2),
            "run_seconds": seconds,
            **per_px(sums["on"]),
            "ungated": per_px(sums["all_on"]), "all_unused_gated": per_px(sums["min"]),
            "table": {k: v for k, v in tab.items() if isinstance(v, dict)},
            "cell_weights": "garnet.cells.CELL_WEIGHTS", "weights_known": len(CELL_WEIGHTS),
            "cell_leakage": "garnet.cells.CELL_LEAKAGE_NW",
            "per_tile": per_tile}


__all__ = ["ENERGY_SCHEMA", "energy_table", "estimate", "stream_mask", "stream_toggles",
           "tile_activity", "tile_cell_counts"]
