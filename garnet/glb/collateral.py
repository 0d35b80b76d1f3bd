"""``glb.json`` (schema ``garnet.glb/1``): the GLB's collateral -- its parameters, address
maps and capabilities -- for the runtime and the compiler (pure: no hardware imports).

Keys: ``schema``; ``params`` (:class:`garnet.glb.params.GlbParams`); ``capabilities``
(``tile_elements``, ``capacity_elements``, ``lanes``, ``dma_dims``, ``extent_max``,
``schedule_max``, ``load_latency`` {``local``: 1, ``chained``: tiles + 1} in cycles,
``config_modes``, ``columns``); ``host_map``: per tile and bank the range of global GLB-word
addresses of the host port (``[first, last]``, ``word_width``-bit words);
``element_map``: per tile the range of global element addresses (chained DMA programs);
``config_registers``: name, index, width (bits) of every DMA register of a tile (GLB config
address ``tile << 8 | index``); ``columns_of_tile``: the array columns each tile serves.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cgra.errors import CollateralError
from garnet.glb.confignet import MODES
from garnet.glb.dma import register_fields
from garnet.glb.params import GlbParams, from_dict

SCHEMA = "garnet.glb/1"
#: where a design directory keeps its GLB files (``glb.v``, ``glb.json``; `cgra rtl` of a
#: TOML with a ``[glb]`` table)
DESIGN_DIR = "glb"


#: the GLB inputs a system top (:func:`garnet.glb.rtl.system_verilog`) has as ports
#: ``glb_<name>`` (the fields of :class:`garnet.glb.model.Cycle` but ``io_in``, which the
#: array drives)
SYSTEM_INPUTS = ("start", "cfg_go", "cfg_wr", "cfg_addr", "cfg_data", "host_wr",
                 "host_waddr", "host_wdata", "host_rd", "host_raddr")


def io_column(name: str, prefix: str, width: int) -> int | None:
    """The column of an array IO port ``<prefix>_<width>_X<xx>_Y<yy>`` (``glb2io`` / ``io2glb``,
    :mod:`garnet.array`), else None."""
    head = f"{prefix}_{width}_X"
    if not name.startswith(head) or len(name) != len(head) + 6 or name[-4:-2] != "_Y":
        return None
    return int(name[len(head):len(head) + 2], 16)


def store_candidates(p: GlbParams, outputs: list[str]) -> dict[int, list[str]]:
    """GLB tile -> the array outputs ``io2glb_<data_width>_X<xx>_Y<yy>`` of the columns it
    serves, sorted by name: the order in which the system top's ``glb_io_sel_<t>`` selects
    the one its store DMA takes (:func:`garnet.glb.rtl.system_verilog`)."""
    out: dict[int, list[str]] = {}
    for n in sorted(outputs):
        c = io_column(n, "io2glb", p.data_width)
        if c is not None:
            out.setdefault(c // p.columns_per_tile, []).append(n)
    return out


def collateral(p: GlbParams) -> dict[str, Any]:
    """The ``glb.json`` document of ``p`` (module docstring)."""
    tw, bw, te = p.tile_words, p.bank_words, p.tile_elements
    return {
        "schema": SCHEMA,
        "params": p.to_dict(),
        "capabilities": {
            "tile_elements": te, "capacity_elements": p.tiles * te, "lanes": p.lanes,
            "dma_dims": p.dma_dims, "extent_max": 1 << p.extent_width,
            "schedule_max": (1 << p.schedule_width) - 1,
            "load_latency": {"local": 1, "chained": p.tiles + 1},
            "config_modes": [m for m in MODES if m != "serial"], "columns": p.columns},
        "host_map": [{"tile": t, "bank": b, "first": t * tw + b * bw, "last": t * tw + (b + 1) * bw - 1}
                     for t in range(p.tiles) for b in range(p.banks)],
        "element_map": [{"tile": t, "first": t * te, "last": (t + 1) * te - 1}
                        for t in range(p.tiles)],
        "config_registers": [{"name": n, "index": i, "width": w}
                             for i, (n, w) in enumerate(register_fields(p))],
        "columns_of_tile": [list(range(t * p.columns_per_tile, (t + 1) * p.columns_per_tile))
                            for t in range(p.tiles)],
    }


def text(p: GlbParams) -> str:
    """The text of ``p``'s ``glb.json``."""
    return json.dumps(collateral(p), indent=1) + "\n"


def write(p: GlbParams, out: str | Path) -> Path:
    """Write ``glb.json`` into directory ``out``; returns its path."""
    path = Path(out) / "glb.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text(p))
    return path


def read(path: str | Path) -> GlbParams:
    """The parameters of a ``glb.json``. Raises :class:`CollateralError` for a missing
    file, another schema or a document that does not match its own parameters."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CollateralError(f"{p}: cannot read the GLB collateral ({exc}); regenerate it "
                              f"with garnet.glb.collateral.write") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise CollateralError(f"{p}: not a {SCHEMA} document; regenerate it")
    params = from_dict(doc.get("params", {}), str(p))
    if collateral(params) != doc:
        raise CollateralError(f"{p}: the address maps do not match its parameters (edited "
                              f"by hand?); regenerate it")
    return params
