"""Yosys cell counts of a design's tile modules: the per-module synthesis and its cache.

Each tile module (``Tile_*`` in a design's ``rtl/``) is synthesised on its own with yosys
(``synth -flatten -top <tile>; abc -fast; stat``, see :data:`SCRIPT`) and its cell count per
yosys internal cell type is cached under ``<cache>/<module>-<sha256 of the module's Verilog
and its sub-modules>.json``, so a tile shared by several designs is synthesised once. The
SRAM macro (``Memory``) is a black box (a behavioural 2048 x 16 array would become 32 K
flip-flops). :data:`CELL_WEIGHTS` gives each yosys cell type a relative area in NAND2
equivalents (NanGate 45 nm X1 areas, :mod:`garnet.sta.liberty`).

A reader of a generated design's RTL (collateral), with no hardware generator behind it: the
area proxy (:mod:`dse.area`) and the mapper's energy estimate (:mod:`mapper.sim.energy`) use
it.
"""
from __future__ import annotations

import hashlib
import json
import re
import subprocess
import tempfile
import time
from itertools import product
from pathlib import Path

from cgra.errors import CollateralError
from cgra.procs import pdeathsig_preexec
from garnet.sta import liberty
from garnet.sta.verilog import closure, flatten_packed, hoist_automatic, modules


def tile_sites(design: Path) -> dict[tuple[int, int], str]:
    """(x, y) -> the module of tile instance ``Tile_X<xx>_Y<yy>`` in the top module of
    ``design`` (``design.json`` ``top`` in ``rtl/``; :func:`canal.rtl.tile_instance_name`).
    Raises :class:`CollateralError` when the top module has no tile instance."""
    design = Path(design)
    doc = json.loads((design / "design.json").read_text())
    top = modules(design / "rtl")[doc["top"]]
    out = {(int(m[2], 16), int(m[3], 16)): m[1] for m in re.finditer(
        r"^\s*(Tile_[\w$]+)\s+Tile_X([0-9A-F]{2})_Y([0-9A-F]{2})\s*\(", top, re.M)}
    if not out:
        raise CollateralError(f"{design}/rtl: top module {doc['top']} has no tile instance "
                              f"Tile_X<xx>_Y<yy>; regenerate the design with `cgra rtl`")
    return out


def tile_modules(design: Path) -> dict[str, int]:
    """Tile module name -> number of instances in the top module of ``design`` (its
    ``design.json`` ``top`` in ``rtl/``)."""
    design = Path(design)
    doc = json.loads((design / "design.json").read_text())
    top = modules(design / "rtl")[doc["top"]]
    counts: dict[str, int] = {}
    for m in re.finditer(r"^\s*(Tile_[\w$]+)\s+[A-Za-z_][\w$]*\s*\(", top, re.M):
        counts[m[1]] = counts.get(m[1], 0) + 1
    return counts


class UnknownCellError(CollateralError):
    """A yosys ``stat`` of a tile lists a cell type with no weight in :data:`CELL_WEIGHTS`
    (a yosys version or a synthesis script emitting cells this table does not know)."""

#: yosys script per tile (``{files}``, ``{top}``): a generic gate-level synthesis with the
#: fast ABC mapping; ``stat`` counts the cells
SCRIPT = ("read_verilog -sv {files}; hierarchy -top {top}; blackbox Memory; "
          "synth -flatten -noabc -top {top}; abc -fast; opt_clean; tee -o stat.txt stat")
AREA_SCHEMA = "dse.area/1"
#: revision of the Verilog rewriting for yosys (:func:`flatten_packed`,
#: :func:`hoist_automatic`), part of every cache key: revision 2 rewrites element selects
#: whose index holds a bit range (``x[a[3:2] == 2'h1]``, read as a bit range by revision 1)
#: and nested element selects (``y[x[s][0]]``, rejected by yosys in revision 1), so counts
#: cached by revision 1 are not reused
REWRITE_REVISION = 2


# ----------------------------------------------------------------------------- cell weights
#: Cell areas (um^2) of the NanGate 45 nm X1 cells, owned by :mod:`garnet.sta.liberty`
#: (provenance there), used to weigh the yosys cells.
NANGATE45_X1_UM2 = liberty.NANGATE45_X1_UM2


def _eq(*cells: str) -> float:
    """Area of a composition of NanGate X1 cells, in NAND2_X1 equivalents (3 decimals)."""
    return round(sum(NANGATE45_X1_UM2[c] for c in cells) / NANGATE45_X1_UM2["NAND2"], 3)


def _family(prefix: str, slots: str, weight: float) -> dict[str, float]:
    """Every ``$_<prefix>_<letters>_`` name of a flip-flop / latch family: ``slots`` has a
    ``p`` per polarity letter (N/P) and a ``v`` per reset-value letter (0/1)."""
    names = [""]
    for slot in slots:
        names = [n + c for n, c in product(names, "NP" if slot == "p" else "01")]
    return {f"$_{prefix}_{n}_": weight for n in names}


#: Relative area per yosys internal (``simcells``) cell type, in NAND2 equivalents
#: (NAND2 = 1.0): the cell's NanGate 45 nm X1 realisation (:data:`NANGATE45_X1_UM2`) divided
#: by NAND2_X1 (0.798 um^2). A cell without a NanGate counterpart is its cheapest
#: composition of NanGate cells: ANDNOT = INV + NOR2, ORNOT = INV + NAND2, NMUX = MUX2 + INV,
#: MUX4/8/16 = trees of 3/7/15 MUX2, an enable = a MUX2 feeding D back, a synchronous
#: reset/set = an AND2/OR2 on D, an async load = DFFRS + 2 NAND2 + INV (set/reset from AD).
#: Signal *polarities* (``N``/``P`` letters, reset value 0/1) cost nothing: the inverter of
#: a clock, enable or reset net is shared by every cell on that net. Covers every ``$_*_``
#: cell of yosys 0.23's ``simcells.v`` (all that ``synth -noabc; abc`` can leave), plus the
#: black-boxed SRAM macro ``Memory`` at 0 (its bits are ``sram_bits``).
CELL_WEIGHTS: dict[str, float] = {
    "$_BUF_": _eq("BUF"), "$_NOT_": _eq("INV"),
    "$_AND_": _eq("AND2"), "$_NAND_": _eq("NAND2"), "$_OR_": _eq("OR2"), "$_NOR_": _eq("NOR2"),
    "$_XOR_": _eq("XOR2"), "$_XNOR_": _eq("XNOR2"),
    "$_ANDNOT_": _eq("INV", "NOR2"), "$_ORNOT_": _eq("INV", "NAND2"),
    "$_MUX_": _eq("MUX2"), "$_NMUX_": _eq("MUX2", "INV"),
    "$_MUX4_": _eq(*["MUX2"] * 3), "$_MUX8_": _eq(*["MUX2"] * 7),
    "$_MUX16_": _eq(*["MUX2"] * 15),
    "$_AOI3_": _eq("AOI21"), "$_OAI3_": _eq("OAI21"),
    "$_AOI4_": _eq("AOI22"), "$_OAI4_": _eq("OAI22"),
    "$_TBUF_": _eq("TBUF"),
    **_family("SR", "pp", _eq("NOR2", "NOR2")),
    "$_FF_": _eq("DFF"),
    **_family("DFF", "p", _eq("DFF")),
    **_family("DFF", "ppv", _eq("DFFR")),
    **_family("DFFE", "pp", _eq("DFF", "MUX2")),
    **_family("DFFE", "ppvp", _eq("DFFR", "MUX2")),
    **_family("ALDFF", "pp", _eq("DFFRS", "NAND2", "NAND2", "INV")),
    **_family("ALDFFE", "ppp", _eq("DFFRS", "NAND2", "NAND2", "INV", "MUX2")),
    **_family("DFFSR", "ppp", _eq("DFFRS")),
    **_family("DFFSRE", "pppp", _eq("DFFRS", "MUX2")),
    **_family("SDFF", "ppv", _eq("DFF", "AND2")),
    **_family("SDFFE", "ppvp", _eq("DFF", "AND2", "MUX2")),
    **_family("SDFFCE", "ppvp", _eq("DFF", "AND2", "MUX2")),
    **_family("DLATCH", "p", _eq("DLH")),
    **_family("DLATCH", "ppv", _eq("DLH", "AND2")),
    **_family("DLATCHSR", "ppp", _eq("DLH", "AND2", "OR2")),
    "Memory": 0.0,
}


def nand2_area(cell_types: dict[str, int], module: str = "?") -> float:
    """Area of a synthesised module in NAND2 equivalents: the sum over its cell types of
    count x :data:`CELL_WEIGHTS` weight (``cell_types``: yosys ``stat`` type -> count, as
    :func:`tile_cells` returns; rounded to 0.001). Raises :class:`UnknownCellError` naming
    the cell and ``module`` for a type without a weight (never counted as 0)."""
    total = 0.0
    for cell, n in sorted(cell_types.items()):
        w = CELL_WEIGHTS.get(cell)
        if w is None:
            raise UnknownCellError(
                f"tile {module}: yosys cell type {cell} ({n}x) has no area weight in "
                "dse.area.CELL_WEIGHTS; add its NAND2-equivalent weight there")
        total += n * w
    return round(total, 3)

def tile_cells(design: Path, module: str, cache: Path, timeout: float = 1800) -> dict:
    """``{module, cells, cell_types, nand2, key, seconds, cached}`` of one tile module of
    ``design`` (module docstring): ``cells`` the yosys cell count, ``cell_types`` the count
    per cell type, ``nand2`` the area in NAND2 equivalents (:func:`nand2_area`, derived from
    ``cell_types`` on every call, so cache entries written before it existed get it too);
    cached under ``cache`` by Verilog hash. Raises :class:`UnknownCellError` for a cell type
    without a weight, ``CollateralError`` when yosys fails."""
    mods = modules(Path(design) / "rtl")
    if module not in mods:
        raise CollateralError(f"{design}/rtl: no module {module}")
    deps = closure(module, mods)
    key = hashlib.sha256(json.dumps([SCRIPT, REWRITE_REVISION] + [mods[d] for d in deps])
                         .encode()).hexdigest()
    cache = Path(cache)
    hit = cache / f"{module}-{key[:20]}.json"
    if hit.is_file():
        doc = json.loads(hit.read_text())
        return {**doc, "nand2": nand2_area(doc["cell_types"], module), "cached": True}
    t = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dse-area-") as tmp:
        files = []
        for d in deps:
            if d == "Memory":
                continue
            p = Path(tmp) / f"{d}.v"
            p.write_text(flatten_packed(hoist_automatic(mods[d])))
            files.append(p.name)
        stub = Path(tmp) / "Memory_stub.v"
        if "Memory" in deps:
            m = re.search(r"module\s+Memory\s*\((.*?)\);", mods["Memory"], re.S)
            stub.write_text(f"(* blackbox *) module Memory({m[1] if m else ''});\nendmodule\n")
            files.append(stub.name)
        script = SCRIPT.format(files=" ".join(files), top=module)
        res = subprocess.run(["yosys", "-q", "-p", script], cwd=tmp, capture_output=True,
                             text=True, timeout=timeout,
                             preexec_fn=pdeathsig_preexec())    # dies with the worker
        stat = (Path(tmp) / "stat.txt").read_text() if res.returncode == 0 else ""
    if res.returncode != 0:
        err = (res.stderr or res.stdout).strip().splitlines()
        raise CollateralError(f"yosys failed on tile {module} of {design}: "
                              f"{err[-1] if err else res.returncode}")
    cells, types = _parse_stat(stat)
    doc = {"schema": AREA_SCHEMA, "module": module, "cells": cells, "cell_types": types,
           "key": key, "seconds": round(time.perf_counter() - t, 3)}
    cache.mkdir(parents=True, exist_ok=True)
    tmpf = hit.with_suffix(".tmp")
    tmpf.write_text(json.dumps(doc, indent=1) + "\n")
    tmpf.replace(hit)       # the counts are cached even when a cell type has no weight
    return {**doc, "nand2": nand2_area(types, module), "cached": False}


def _parse_stat(log: str) -> tuple[int, dict[str, int]]:
    """Cell count and cells by type of the last ``stat`` block of a yosys log."""
    block = log[log.rfind("Number of cells:"):]
    m = re.match(r"Number of cells:\s+(\d+)", block)
    if m is None:
        raise CollateralError("yosys stat printed no cell count")
    types: dict[str, int] = {}
    for line in block.splitlines()[1:]:
        tm = re.match(r"\s+(\S+)\s+(\d+)\s*$", line)
        if tm:
            types[tm[1]] = int(tm[2])
        elif line.strip() and not line.startswith(" "):
            break
    return int(m[1]), types


__all__ = ["AREA_SCHEMA", "CELL_WEIGHTS", "REWRITE_REVISION", "SCRIPT",
           "UnknownCellError", "nand2_area", "tile_cells", "tile_modules", "tile_sites"]
