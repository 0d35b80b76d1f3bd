"""Energy estimate of a simulated run: switching activity from the Verilator run, per-cell
energy from yosys cell counts and a cited table, leakage of the tiles that are on.

**This is a model, not a measurement** (the figures and their sources are in
``mapper/data/energy.json``, :func:`energy_table`; each says it is a model). What goes in:

* **Cells**: each distinct tile module of the design's ``rtl/`` synthesised with yosys
  (:func:`garnet.cells.tile_cells`: generic gates, ``abc -fast``), cell counts per yosys cell
  type, cached by the module's Verilog hash under ``<model cache>/cells/`` (the Verilator
  model cache beside the design, :func:`mapper.sim.verilator.model_cache_dir`), so a design
  is synthesised once (~30 s for the three tile modules of the 8x8 on one core).
* **Activity**: the toggle rate ``alpha`` (bit toggles per bit per cycle) of the words that
  crossed the array's top ports in the Verilator run: every input stream the harness drove
  and every output port it sampled (``popcount(v[t] ^ v[t-1])`` summed over the stream
  cycles, divided by the port bits and the cycles). The IO tiles' toggles are those
  counts; inside the array the same ``alpha`` is applied to every cell of a used tile (a
  first-order model: the tile's internal nodes switch as often as the data it streams; an
  unused tile's data is taken as not switching).
* **Dynamic energy** per run: used tiles ``alpha x cycles x sum_cells(weight x
  nand2_toggle_fj)`` (a cell's toggle energy scales with its NAND2-equivalent area,
  :data:`garnet.cells.CELL_WEIGHTS`); every *on* tile's flip-flops ``cycles x ff_clock_fj``
  (no clock gating in the RTL); a used MEM tile's SRAM ``sram_accesses_per_cycle x cycles x
  bytes x sram_access_pj_per_byte`` (AHA paper §4.2's 16-bit SRAM figure).
* **Leakage** per run: every on tile's NAND2 equivalents x ``nand2_leakage_nw`` (plus its
  SRAM bits x ``sram_leakage_nw_per_kbit``) x the run time (stream cycles / the design's
  Fmax from static timing). A gated tile leaks nothing (AHA §4.3: gating "eliminat[es]
  leakage power consumption") and its flip-flops are not clocked.

Both figures are given per output pixel, for the run's power state (``gated``: the unused
tiles gated by the bitstream, or not) and, for comparison, for the other state
(``ungated`` / ``all_gated`` counterparts computed from the same activity).
"""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from cgra.errors import CollateralError
from garnet.cells import CELL_WEIGHTS, nand2_area, tile_cells, tile_sites

ENERGY_SCHEMA = "mapper.energy/1"


def energy_table() -> dict[str, Any]:
    """The per-cell energy table (``mapper/data/energy.json``, schema
    ``mapper.energy_table/1``): name -> ``{value, unit, source, model}``. Raises
    :class:`CollateralError` when the package data is missing or malformed."""
    try:
        doc = json.loads(resources.files("mapper").joinpath("data", "energy.json").read_text())
        for k in ("nand2_toggle_fj", "ff_clock_fj", "nand2_leakage_nw",
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


def _is_ff(cell: str) -> bool:
    """A yosys flip-flop cell type (``$_DFF*``, ``$_SDFF*``, ``$_ALDFF*``, ``$_FF_``)."""
    return cell.startswith(("$_DFF", "$_SDFF", "$_ALDFF", "$_FF_"))


def tile_cell_counts(design: Path, cache: Path) -> dict[tuple[int, int], dict[str, Any]]:
    """(x, y) -> ``{module, cell_types, nand2, ffs}`` of every tile of ``design``: the yosys
    counts of its module (:func:`garnet.cells.tile_cells`, cached under ``cache``), its area
    in NAND2 equivalents and its flip-flop count. Raises :class:`CollateralError` when yosys
    fails or a cell type has no weight."""
    sites = tile_sites(design)
    per_mod: dict[str, dict[str, Any]] = {}
    for mod in sorted(set(sites.values())):
        r = tile_cells(design, mod, cache)
        types = r["cell_types"]
        per_mod[mod] = {"module": mod, "cell_types": types, "nand2": nand2_area(types, mod),
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
             io_streams: Mapping[str, tuple[np.ndarray, int]], cycles: int, pixels: int,
             fmax_mhz: float, data_width: int = 16) -> dict[str, Any]:
    """The energy report (module docstring) of a run: ``design`` (its ``rtl/``), ``cache``
    (yosys cell counts), ``tags``: (x, y) -> PnR tag (``m`` = MEM), ``used`` tiles,
    ``gated`` tiles (gated by the run's bitstream), ``io_streams``: top port -> (words per
    stream cycle, port bits) of every streamed input and sampled output, ``cycles`` stream
    cycles, ``pixels`` output pixels, ``fmax_mhz`` the clock (run time = cycles / Fmax).
    Energies in pJ. Raises :class:`CollateralError` for an unreadable table or a yosys
    failure."""
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
        data_pj = alpha * cycles * c["nand2"] * val("nand2_toggle_fj") / 1000 if is_used else 0.0
        sram_dyn = sram_pj if (is_used and mem) else 0.0
        clock_pj = cycles * c["ffs"] * val("ff_clock_fj") / 1000
        leak_nw = c["nand2"] * val("nand2_leakage_nw") + \
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
                         "toggles": round(alpha * cycles * sum(c["cell_types"].values()))
                         if is_used else 0,
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
            "toggle_rate": round(alpha, 6), "io_toggles": io_tog, "cycles": cycles,
            "pixels": pixels, "fmax_mhz": round(fmax_mhz, 2),
            "run_seconds": seconds,
            **per_px(sums["on"]),
            "ungated": per_px(sums["all_on"]), "all_unused_gated": per_px(sums["min"]),
            "table": {k: v for k, v in tab.items() if isinstance(v, dict)},
            "cell_weights": "garnet.cells.CELL_WEIGHTS", "weights_known": len(CELL_WEIGHTS),
            "per_tile": per_tile}


__all__ = ["ENERGY_SCHEMA", "energy_table", "estimate", "stream_toggles", "tile_cell_counts"]
