"""The sweep file of ``cgra dse`` (TOML), parsed and validated before anything runs.

::

    [sweep]
    base = "../small.toml"        # GarnetParams TOML every point starts from (relative to
                                  # this file)
    cache = "../../build/dse"     # shared cache: designs, rules, area, results (relative to
                                  # this file; --cache overrides)
    rules = ""                    # rule-table cache ("" = <cache>/rules; relative to this
                                  # file; --rules overrides), e.g. "../../build/rules" to
                                  # share the rules `make rtl` synthesised
    out = ""                      # results.csv and plots ("" = <cache>/results/<sweep name>,
                                  # <cache>/results/<sweep name>-search for a search)
    name = "small"                # default: the file's stem; part of every design's name,
                                  # hence of its cache key
    apps = ["gaussian", {app = "gaussian", unroll = 2}, "harris"]
    image = [64, 64]              # input image width x height (pixels)
    seed = 0                      # placement seed
    fmax_mhz = 0.0                # pipelining target clock (0 = balance only, no target)
    simulate = false              # true: also the bitstream and a Verilator run per point,
                                  # checked bit for bit against numpy and Halide (slower)
    scheduler = ""                # Dask scheduler address ("" = a LocalCluster; --scheduler)
    workers = 0                   # LocalCluster worker processes (0 = one per core)

    [grid]                        # field -> values: every GarnetParams field
    pe = ["D1", "D3"]             # PE presets (PE_PRESETS: D1, D2, D3) or "module:Class"
    tracks = [4, 5]
    mem_preset = ["DP", "PUB"]    # MEM presets (MEM_PRESETS) or a Lake preset name

    [search]                      # optional: a multi-objective search instead of the grid
    method = "nsga2"              # Optuna NSGAIISampler (the only method)
    trials = 16                   # trials evaluated (>= 1), duplicates of a design included
    population = 8                # NSGA-II population = trials asked per batch (>= 2)
    seed = 0                      # the sampler's seed

Every point (the product of the grid) is validated as a GarnetParams (garnet.params) when the
file is loaded: a bad value is one ConfigError naming the sweep file and the field.
"""
from __future__ import annotations

import hashlib
import itertools
import math
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cgra.errors import CgraError, ConfigError
from cgra.tomlfile import read_toml
from garnet.params import _FIELDS, from_dict, load_toml
from mapper.apps import APPS

#: PE variants by name (AHA paper §8.7): D1 the integer PE, D2 + a 1..4-cycle delay chain
#: per data input, D3 + add3 / multiply-add
PE_PRESETS = {"D1": "peak.examples.cgra_pe:PE", "D2": "peak.examples.cgra_pe_d2:PE",
              "D3": "peak.examples.cgra_pe_d3:PE"}
#: MEM variants by name: dual-port SRAM and the physical unified buffer (wide fetch)
MEM_PRESETS = {"DP": "dualport_2048x16", "PUB": "pub_512x64"}

_SWEEP_KEYS = {"base": str, "cache": str, "rules": str, "out": str, "apps": list, "image": list, "seed": int,
               "fmax_mhz": (int, float), "simulate": bool, "scheduler": str, "workers": int,
               "name": str}
_SEARCH_KEYS = {"method": str, "trials": int, "population": int, "seed": int}
SEARCH_METHODS = ("nsga2",)


@dataclass(frozen=True)
class Search:
    """The ``[search]`` table: an NSGA-II search over the grid's values (categorical
    choices), ``trials`` trials asked ``population`` at a time, sampler seed ``seed``."""

    method: str = "nsga2"
    trials: int = 16
    population: int = 8
    seed: int = 0


@dataclass(frozen=True)
class AppSpec:
    """One app of the sweep: a shipped DSL app (or CoreIR path) and its unroll."""

    app: str
    unroll: int = 1

    @property
    def label(self) -> str:
        return self.app if self.unroll == 1 else f"{self.app}_u{self.unroll}"


@dataclass
class Point:
    """One design of the sweep: its grid values (as written: ``{"pe": "D1", ...}``), the
    validated parameters, and the content hash naming its design directory."""

    values: dict[str, Any]
    params: Any                       # garnet.params.GarnetParams
    key: str

    @property
    def label(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.values.items())


@dataclass
class Sweep:
    path: Path
    name: str
    base: Path
    cache: Path
    out: Path
    apps: list[AppSpec]
    image: tuple[int, int]
    seed: int
    fmax_mhz: float
    simulate: bool
    scheduler: str
    workers: int
    grid: dict[str, list[Any]]
    points: list[Point] = field(default_factory=list)
    search: Search | None = None      # None: the grid sweep (every point)
    rules: Path | None = None         # rule-table cache (None: <cache>/rules)

    @property
    def rules_dir(self) -> Path:
        """The rule-table cache of the designs (``rules`` or ``<cache>/rules``): rule
        tables are keyed by the PE spec's content hash, so any directory can be shared."""
        return self.rules if self.rules is not None else self.cache / "rules"


def _err(path: Path, key: str, msg: str) -> ConfigError:
    return ConfigError(f"{path}: field '{key}': {msg}")


def params_key(params) -> str:
    """Content hash of a design: its parameters and the hashes of its PE spec, MEM preset
    and delay table (not the generators' source: see docs/dse.md)."""
    from garnet.build import spec_hashes  # deferred: loads psutil only when called

    sh = spec_hashes(params)
    doc = [params.to_dict(), sh.pe_hash, sh.mem_hash, sh.timing_hash]
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:20]


def load_sweep(path: str | Path, cache: str | Path | None = None,
               out: str | Path | None = None, rules: str | Path | None = None) -> Sweep:
    """Read and validate a sweep file (module docstring); ``cache`` / ``out`` / ``rules``
    override the file's. Raises :class:`ConfigError` naming the file and the field."""

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"sweep file {p} does not exist; pass an existing TOML file "
                          f"(e.g. configs/dse/small.toml)")
    doc = read_toml(p)
    for k in doc:
        if k not in ("sweep", "grid", "search"):
            raise _err(p, k, "unknown table; a sweep file has [sweep], [grid] and [search]")
    sw = doc.get("sweep", {})
    for k, v in sw.items():
        if k not in _SWEEP_KEYS:
            raise _err(p, f"sweep.{k}", f"unknown key; known keys: {sorted(_SWEEP_KEYS)}")
        t = _SWEEP_KEYS[k]
        if not isinstance(v, t) or (t is int and isinstance(v, bool)):
            raise _err(p, f"sweep.{k}", f"{v!r} has the wrong type")
    if "base" not in sw:
        raise _err(p, "sweep.base", "missing: the GarnetParams TOML every point starts from")
    base = (p.parent / sw["base"]).resolve()
    try:
        base_params = load_toml(base)
    except ConfigError as exc:
        raise _err(p, "sweep.base", str(exc)) from None
    cache_dir = Path(cache) if cache else (p.parent / sw.get("cache", "../../build/dse"))
    rules_dir = Path(rules) if rules else (p.parent / sw["rules"] if sw.get("rules") else None)
    name = sw.get("name", p.stem)
    search = _load_search(p, doc["search"]) if "search" in doc else None
    out_dir = Path(out) if out else (
        p.parent / sw["out"] if sw.get("out") else
        cache_dir / "results" / (name if search is None else f"{name}-search"))
    apps: list[AppSpec] = []
    for a in sw.get("apps", []):
        if isinstance(a, str):
            apps.append(AppSpec(a))
        elif isinstance(a, dict) and isinstance(a.get("app"), str) \
                and isinstance(a.get("unroll", 1), int) and set(a) <= {"app", "unroll"}:
            apps.append(AppSpec(a["app"], a.get("unroll", 1)))
        else:
            raise _err(p, "sweep.apps", f"{a!r}: expected an app name or "
                       "{app = \"name\", unroll = N}")
    if not apps:
        raise _err(p, "sweep.apps", "no apps; list at least one (e.g. [\"gaussian\"])")
    for a in apps:
        if a.app not in APPS and not Path(a.app).is_file():
            raise _err(p, "sweep.apps", f"unknown app {a.app!r}; shipped apps: {sorted(APPS)}")
        if a.unroll < 1:
            raise _err(p, "sweep.apps", f"{a.app}: unroll {a.unroll} must be >= 1")
    for key, lo, hi in (("seed", 0, None), ("workers", 0, 1024), ("fmax_mhz", 0, 1e6)):
        v = sw.get(key)
        if v is not None and not (math.isfinite(v) and v >= lo and (hi is None or v <= hi)):
            span = f"[{lo}, {hi:g}]" if hi is not None else f">= {lo}"
            raise _err(p, f"sweep.{key}", f"{v!r} is out of range: give a number {span}"
                       + (" (0 = one worker per core)" if key == "workers" else ""))
    image = sw.get("image", [64, 64])
    if len(image) != 2 or not all(isinstance(v, int) and v > 0 for v in image):
        raise _err(p, "sweep.image", f"{image!r}: expected [width, height] in pixels")
    grid = doc.get("grid", {})
    for k, vals in grid.items():
        if k not in _FIELDS:
            raise _err(p, f"grid.{k}", f"not a GarnetParams field; fields: {sorted(_FIELDS)}")
        if not isinstance(vals, list) or not vals:
            raise _err(p, f"grid.{k}", f"{vals!r}: expected a non-empty list of values")
    sweep = Sweep(p, name, base, cache_dir.resolve(), out_dir.resolve(), apps,
                  (image[0], image[1]), sw.get("seed", 0), float(sw.get("fmax_mhz", 0.0)),
                  sw.get("simulate", False), sw.get("scheduler", ""), sw.get("workers", 0), grid,
                  search=search,
                  rules=rules_dir.resolve() if rules_dir is not None else None)
    base_doc = base_params.to_dict()
    keys = list(grid)
    for combo in itertools.product(*(grid[k] for k in keys)):
        values = dict(zip(keys, combo, strict=True))
        d = dict(base_doc)
        for k, v in values.items():
            if k == "pe" and isinstance(v, str):
                v = PE_PRESETS.get(v, v)
            if k == "mem_preset" and isinstance(v, str):
                v = MEM_PRESETS.get(v, v)
            d[k] = v
        d["name"] = re.sub(r"[^A-Za-z0-9_]+", "_", f"{name}_" + "_".join(map(str, combo)))
        label = ", ".join(f"{k} = {v!r}" for k, v in values.items())
        try:
            params = from_dict(d, f"{p} (grid point {label})")
            if "pe" in values:
                from garnet.params import pe_spec  # deferred: loads  only when called
                pe_spec(params.pe, where=f"{p}: field 'grid.pe'")
            if "mem_preset" in values:
                from lake.spec import preset  # deferred: loads  only when called
                preset(params.mem_preset)
        except ConfigError:
            raise
        except CgraError as exc:   # SpecError of a PE / MEM preset
            raise ConfigError(f"{p}: grid point {label}: {exc}") from None
        sweep.points.append(Point(values, params, params_key(params)))
    return sweep


def _load_search(p: Path, doc: Any) -> Search:
    """Validate the ``[search]`` table (module docstring); ConfigError naming the field."""
    if not isinstance(doc, dict):
        raise _err(p, "search", "expected a table [search]")
    for k, v in doc.items():
        if k not in _SEARCH_KEYS:
            raise _err(p, f"search.{k}", f"unknown key; known keys: {sorted(_SEARCH_KEYS)}")
        t = _SEARCH_KEYS[k]
        if not isinstance(v, t) or (t is int and isinstance(v, bool)):
            raise _err(p, f"search.{k}", f"{v!r} has the wrong type (expected "
                       f"{t.__name__})")
    s = Search(**doc)
    if s.method not in SEARCH_METHODS:
        raise _err(p, "search.method", f"{s.method!r} is not a search method; methods: "
                   f"{list(SEARCH_METHODS)}")
    if s.trials < 1:
        raise _err(p, "search.trials", f"{s.trials} must be >= 1")
    if s.seed < 0:
        raise _err(p, "search.seed", f"{s.seed} must be >= 0")
    if s.population < 2:
        raise _err(p, "search.population", f"{s.population} must be >= 2 (NSGA-II crossover "
                   "needs two parents)")
    return s
