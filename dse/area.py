"""Area proxy of a design: yosys cell counts of each distinct tile module times its tile count.

Each tile module (``Tile_*`` in ``rtl/``) is synthesised on its own with yosys (``synth
-flatten -top <tile>; abc -fast; stat``, see :data:`SCRIPT`) and its cell count is cached
under ``area/<module>-<sha256 of the module's Verilog and its sub-modules>.json`` beside
the sweep's rules directory (:data:`AREA_DIR_NAME`), so a tile shared by several designs
or sweeps (the IO tile, the PE tile of every MEM variant) is synthesised once. The SRAM macro (``Memory``) is a black box: a behavioural 2048 x 16 array
would become 32 K flip-flops; its bits are reported apart (``sram_bits``) and not counted
as cells.

yosys 0.23 (Debian's) does not read the multi-dimensional packed arrays CIRCT writes
(``wire [1:0][15:0] _GEN = {{a}, {b}}; ... _GEN[s]``): :func:`flatten_packed` rewrites
them as flat vectors (``wire [31:0] _GEN``, ``_GEN[(s)*16 +: 16]``), bit for bit the same
(a packed array is laid out element N-1 first, like a concatenation).

Besides the cell count, each tile gets a liberty-free area in *NAND2 equivalents*
(:data:`CELL_WEIGHTS`: a relative area per yosys internal cell type, NAND2 = 1.0, from the
NanGate 45 nm Open Cell Library's X1 cell areas; :func:`nand2_area`). It is computed from
the cached per-cell-type counts (``cell_types``), so area results cached before it existed
get it too and a change of the table needs no new yosys run.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from garnet.sta.verilog import closure, modules
# the per-tile synthesis, its cache and the cell weights live in garnet.cells (the mapper's
# energy estimate reads them too); re-exported here for the area proxy's users
from garnet.cells import (AREA_SCHEMA, CELL_WEIGHTS, NANGATE45_X1_UM2,  # noqa: F401
                          REWRITE_REVISION, SCRIPT, UnknownCellError, nand2_area, tile_cells)


#: the cache of tile cell counts (:func:`tile_cells`), beside the rules directory of a sweep
#: (``<cache>/area`` with the default ``<cache>/rules``), as ``timing`` is beside it for the
#: tile timing measurements (:data:`garnet.build.TIMING_DIR_NAME`)
AREA_DIR_NAME = "area"


def design_area(design: Path, cache: Path) -> dict:
    """Area proxy of a generated design: ``{cells, nand2, by_tile: {module: {count, cells,
    nand2, seconds, cached}}, sram_bits}``: ``cells`` / ``nand2`` (NAND2 equivalents,
    :func:`nand2_area`) of each distinct tile, and the design totals (each tile's figure
    times its tile count; ``nand2`` rounded to 0.1)."""
    design = Path(design)
    doc = json.loads((design / "design.json").read_text())
    mods = modules(design / "rtl")
    top = mods[doc["top"]]
    counts: dict[str, int] = {}
    for m in re.finditer(r"^\s*(Tile_[\w$]+)\s+[A-Za-z_][\w$]*\s*\(", top, re.M):
        counts[m[1]] = counts.get(m[1], 0) + 1
    by_tile: dict[str, dict] = {}
    total = 0
    nand2 = 0.0
    for mod, n in sorted(counts.items()):
        r = tile_cells(design, mod, cache)
        by_tile[mod] = {"count": n, "cells": r["cells"], "nand2": r["nand2"],
                        "seconds": r["seconds"], "cached": r["cached"]}
        total += n * r["cells"]
        nand2 += n * r["nand2"]
    sram = 0
    if "Memory" in mods:
        m = re.search(r"\[(\d+):0\]\s*\[(\d+):0\]", mods["Memory"])
        per = (int(m[1]) + 1) * (int(m[2]) + 1) if m else 0
        sram = per * sum(n for mod, n in counts.items()
                         if "Memory" in closure(mod, mods))
    return {"cells": total, "nand2": round(nand2, 1), "by_tile": by_tile, "sram_bits": sram}


def design_nand2(cache: Path, design_key: str) -> float | None:
    """NAND2-equivalent area of a design of a sweep cache, for results cached before the
    ``nand2`` figure existed: the design task's record ``<cache>/designs/<key>.dse.json``
    (``None`` when it is missing or the design failed); its ``area.nand2`` when recorded,
    else :func:`design_area` again, whose tiles are read from ``<cache>/area`` (the stored
    per-cell-type counts; yosys runs only for a tile whose entry was deleted)."""
    marker = Path(cache) / "designs" / f"{design_key}.dse.json"
    if not marker.is_file():
        return None
    doc = json.loads(marker.read_text())
    if "area" not in doc:
        return None
    if "nand2" in doc["area"]:
        return doc["area"]["nand2"]
    return design_area(Path(doc["dir"]), Path(cache) / "area")["nand2"]
