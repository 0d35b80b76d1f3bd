"""Parameters of a generated CGRA: one dataclass, loaded from TOML, validated before any
generation.

TOML keys (all top level; every key is optional and takes the default below)::

    name = "small"                  # design name (informative; the output dir is --out)
    width = 8                       # columns (x), 1..256
    height = 8                      # rows (y) including the IO row, 2..256
    tracks = 5                      # routing tracks per side per bit width, >= 1
    topology = "imran"              # switch box: "imran" | "wilton" | "disjoint"
    track_length = 1                # tiles spanned by one track segment
    widths = [16, 1]                # interconnect bit widths (one routing graph each)
    mem_ratio = 4                   # every mem_ratio-th column is MEM (x % r == r - 1); 0 = none
    pe = "peak.examples.cgra_pe:PE" # PEak spec: "module:Class" or "path/to/my_pe.py:Class"
                                    # (a file path is relative to the TOML file)
    mem_preset = "dualport_2048x16" # Lake preset ("dualport_2048x16", "pub_512x64", ...)
    io_sides = ["NORTH"]            # array edges holding IO tiles
    pipeline_register_sides = ["NORTH", "SOUTH", "EAST", "WEST"]  # SB_OUT sides with registers
    pipeline_register_tracks = []   # tracks with registers; empty = all tracks
    register_bypass_sides = ["SOUTH", "WEST"]  # registers that a route may bypass; on the
                                    # other sides every route passes the register (1 cycle)
    cb_sides = ["NORTH", "SOUTH", "EAST", "WEST"]  # connection-box sides (all tracks)
    flush_interval = 4              # rows per flush-spine register stage; 0 = no spine
    timing = ""                     # delay table JSON (ps), relative to the TOML file;
                                    # "" = the project's default (canal/data/delays_ps.json)

Default layout: IO tiles on the ``io_sides`` edges (top row by default), elsewhere a MEM in
column x when ``mem_ratio > 0 and x % mem_ratio == mem_ratio - 1``, else a PE.
:func:`validate` raises :class:`ConfigError` naming the field and the fix; it runs before
any hardware is generated.
"""
from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cgra.errors import ConfigError

SIDES = ("NORTH", "SOUTH", "EAST", "WEST")
TOPOLOGIES = ("imran", "wilton", "disjoint")


@dataclass
class GarnetParams:
    """All parameters of one CGRA (see the module docstring for units and meaning)."""

    name: str = "default"
    width: int = 32
    height: int = 16
    tracks: int = 5
    topology: str = "imran"
    track_length: int = 1
    widths: list[int] = field(default_factory=lambda: [16, 1])
    mem_ratio: int = 4
    pe: str = "peak.examples.cgra_pe:PE"
    mem_preset: str = "dualport_2048x16"
    io_sides: list[str] = field(default_factory=lambda: ["NORTH"])
    pipeline_register_sides: list[str] = field(default_factory=lambda: list(SIDES))
    pipeline_register_tracks: list[int] = field(default_factory=list)
    register_bypass_sides: list[str] = field(default_factory=lambda: ["SOUTH", "WEST"])
    cb_sides: list[str] = field(default_factory=lambda: list(SIDES))
    flush_interval: int = 4
    timing: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def tile_kind(self, x: int, y: int) -> str:
        """``"io"``, ``"mem"`` or ``"pe"`` of tile (x, y) in the default layout."""
        if (("NORTH" in self.io_sides and y == 0)
                or ("SOUTH" in self.io_sides and y == self.height - 1)
                or ("WEST" in self.io_sides and x == 0)
                or ("EAST" in self.io_sides and x == self.width - 1)):
            return "io"
        if self.mem_ratio and x % self.mem_ratio == self.mem_ratio - 1:
            return "mem"
        return "pe"


_FIELDS = {f.name: f for f in dataclasses.fields(GarnetParams)}


def _where(source: str | None, key: str) -> str:
    return f"{source}: field '{key}'" if source else f"field '{key}'"


def from_dict(doc: dict[str, Any], source: str | None = None) -> GarnetParams:
    """Build and validate parameters from a dict (TOML document). Unknown keys and values
    of the wrong type raise :class:`ConfigError` naming the key."""
    kwargs: dict[str, Any] = {}
    for key, value in doc.items():
        if key not in _FIELDS:
            raise ConfigError(f"{_where(source, key)}: unknown parameter; known parameters: "
                              f"{sorted(_FIELDS)}")
        default = getattr(GarnetParams(), key)
        if isinstance(default, bool) or isinstance(default, int):
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError(f"{_where(source, key)} = {value!r}: expected an integer")
        elif isinstance(default, str):
            if not isinstance(value, str):
                raise ConfigError(f"{_where(source, key)} = {value!r}: expected a string")
        elif isinstance(default, list):
            if not isinstance(value, list):
                raise ConfigError(f"{_where(source, key)} = {value!r}: expected a list")
            value = list(value)
        kwargs[key] = value
    params = GarnetParams(**kwargs)
    validate(params, source)
    return params


def load_toml(path: str | Path) -> GarnetParams:
    """Read and validate a TOML parameter file. Raises :class:`ConfigError` for a missing
    file, a TOML syntax error (with its line) or an invalid field."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file {p} does not exist; pass an existing TOML file "
                          f"(e.g. configs/small.toml)")
    try:
        doc = tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: TOML syntax error: {exc}") from None
    # file paths in the TOML are relative to the TOML file
    if isinstance(doc.get("timing"), str) and doc["timing"]:
        doc["timing"] = str(p.parent / doc["timing"])
    pe = doc.get("pe")
    if isinstance(pe, str) and pe.count(":") == 1 and pe.split(":")[0].endswith(".py") \
            and not Path(pe.split(":")[0]).is_absolute():
        doc["pe"] = f"{p.parent / pe.split(':')[0]}:{pe.split(':')[1]}"
    return from_dict(doc, str(p))


def validate(p: GarnetParams, source: str | None = None) -> None:
    """Check every field; raises :class:`ConfigError` naming the first bad field and a fix.
    Also imports the PE spec (``pe``) and checks the Lake preset (``mem_preset``)."""
    def err(key: str, msg: str) -> ConfigError:
        return ConfigError(f"{_where(source, key)} = {getattr(p, key)!r}: {msg}")

    if not 1 <= p.width <= 256:
        raise err("width", "the array needs 1..256 columns (8-bit x in the config address)")
    if not 2 <= p.height <= 256:
        raise err("height", "the array needs 2..256 rows (the IO row plus at least one row "
                            "of cores; 8-bit y in the config address)")
    if p.tracks < 1:
        raise err("tracks", "use at least 1 routing track per side (default 5)")
    if p.topology not in TOPOLOGIES:
        raise err("topology", f"choose one of {list(TOPOLOGIES)}")
    if p.track_length < 1:
        raise err("track_length", "a track spans at least 1 tile")
    if not p.widths or any(not isinstance(w, int) or w < 1 for w in p.widths) \
            or len(set(p.widths)) != len(p.widths):
        raise err("widths", "give distinct positive bit widths, e.g. [16, 1]")
    if not {16, 1} <= set(p.widths):
        raise err("widths", "the PE, MEM and IO cores have 16-bit and 1-bit ports; include "
                            "both 16 and 1")
    if p.mem_ratio < 0 or p.mem_ratio > p.width:
        raise err("mem_ratio", f"use 0 (no MEM columns) or 1..width ({p.width}); every "
                               f"mem_ratio-th column becomes MEM")
    for key in ("io_sides", "pipeline_register_sides", "cb_sides", "register_bypass_sides"):
        vals = getattr(p, key)
        bad = [s for s in vals if s not in SIDES]
        if bad or len(set(vals)) != len(vals):
            raise err(key, f"list distinct sides from {list(SIDES)}")
    extra = [s for s in p.register_bypass_sides if s not in p.pipeline_register_sides]
    if extra:
        raise err("register_bypass_sides", f"sides {extra} have no pipeline registers; list "
                                           f"only sides of pipeline_register_sides")
    if not p.io_sides:
        raise err("io_sides", "the array needs IO tiles on at least one edge, e.g. ['NORTH']")
    if not p.cb_sides:
        raise err("cb_sides", "core inputs need at least one connection-box side")
    for t in p.pipeline_register_tracks:
        if not isinstance(t, int) or not 0 <= t < p.tracks:
            raise err("pipeline_register_tracks", f"tracks are 0..{p.tracks - 1}; [] = all")
    if p.timing:
        from canal.timing import TimingModel
        if not Path(p.timing).is_file():
            raise err("timing", "no such delay table file; give a JSON table like "
                                "canal/data/delays_ps.json (path relative to the TOML file), "
                                "or \"\" for the default")
        try:
            TimingModel.load(p.timing)
        except ConfigError as exc:
            raise err("timing", str(exc)) from None
    if p.flush_interval < 0:
        raise err("flush_interval", "use 0 (flush wired directly) or N >= 1 rows per spine "
                                    "register stage")
    from garnet.cores import load_pe_spec
    load_pe_spec(p.pe, _where(source, "pe"))
    from lake.spec import PRESETS
    if p.mem_ratio and p.mem_preset not in PRESETS:
        raise err("mem_preset", f"unknown Lake preset; known presets: {sorted(PRESETS)}")
    kinds = {p.tile_kind(x, y) for x in range(p.width) for y in range(p.height)}
    if "pe" not in kinds:
        raise err("mem_ratio", "this layout has no PE tile; lower mem_ratio or enlarge the "
                               "array")
