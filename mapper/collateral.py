"""The collateral a design gives the mapper, read and validated once: :class:`Collateral`.

The mapper never imports the hardware generators; it reads the files ``cgra rtl`` wrote
through the modules that own their formats, once, into frozen dataclasses
(:mod:`garnet.collateral` for design.json (:class:`~garnet.collateral.DesignInfo`), the
config map (:class:`~garnet.collateral.ConfigMap`), the rules stamp, and the envelopes of
pe.json and mem.json (:class:`~garnet.collateral.TileCore`); :mod:`peak.collateral` for
PEak's part of pe.json (:class:`~peak.collateral.PEInfo`); :mod:`lake.collateral` for Lake's
part of mem.json (:class:`~lake.collateral.MemInfo`); :mod:`peak.rules.format` for the rule
table; :mod:`canal.collateral` for the routing graphs
(:class:`~canal.routing.RoutingGraph`); :mod:`canal.timing` for timing.json
(:class:`~canal.timing.TimingModel`)). No other mapper module opens a design file or
indexes a collateral dict. :func:`load_collateral` checks, in this order:

1. ``design.json`` (schema ``garnet.design/2``) and its manifest: every file of the
   directory has the sha256 recorded when it was written (:func:`garnet.collateral.verify_files`)
   — a tampered, truncated, missing or extra file is refused;
2. ``pe.json``: its spec hash equals design.json's, and (``check_spec``) the PE spec it names,
   imported now, still has that hash — a spec edited after ``cgra rtl`` makes the design
   *stale*;
3. ``mem.json`` / the rules stamp / the rule table: all from the same PE and MEM spec;
4. the routing graphs (one per width of the design), the config map and the timing model;
5. ``resources.json`` (:func:`garnet.collateral.read_resources`, the resource vectors of one
   PE / MEM tile and the switch boxes) when the manifest lists it: its PE and MEM spec
   hashes equal design.json's. A directory written without it (by an older generator, or by
   a test writing the fabric files alone) loads with ``resources`` ``None``;
   :func:`load_resources` and ``require("resources")`` refuse it.

Any failure raises :class:`cgra.errors.CollateralError` naming the file, the hashes and the
command that regenerates the design (``cgra rtl --config <toml> --out <dir>``).

Unit tests and benchmarks of the back end build a :class:`Collateral` straight from canal
graphs with :meth:`Collateral.from_graphs` (no directory, no rules).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from canal.config import config_map_rows, tile_configs
from canal.graph import InterconnectGraph
from canal.routing import RoutingGraph, as_graphs
from canal.timing import TimingModel
from cgra.errors import CgraError, CollateralError
from garnet import collateral as gc
from garnet.collateral import ConfigMap, DesignInfo, PondInfo, Resources, TileCore
from lake.collateral import MemInfo
from peak.collateral import PEInfo
from peak.rules.format import Rule, TableFile, read_table
from peak.ir import DECOMPOSITIONS
from peak.load import load_spec


# ---------------------------------------------------------------------------- rules
@dataclass
class RuleTable:
    """The rewrite rules of one PE as instruction selection uses them: the found rules
    (:class:`peak.rules.format.Rule`), every target's status, and the multi-PE
    decompositions the mapper may expand (op -> pattern DAG)."""

    rules: list[Rule]
    status: dict[str, str] = field(default_factory=dict)
    spec_hash: str | None = None
    pe: str = ""
    source: str = ""
    decompositions: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_key: dict[str, Rule] = {r.target: r for r in self.rules}
        self._by_root: dict[str, list[Rule]] = {}
        for r in self.rules:
            self._by_root.setdefault(r.root_op, []).append(r)
        for lst in self._by_root.values():
            lst.sort(key=Rule.order)

    @classmethod
    def from_file(cls, table: TableFile) -> "RuleTable":
        return cls(table.rules(), table.status(), table.spec_hash, table.pe, str(table.path),
                   dict(DECOMPOSITIONS))

    def rules_for(self, op: str) -> list[Rule]:
        """Rules whose pattern root is ``op``, in covering order (:meth:`Rule.order`)."""
        return self._by_root.get(op, [])

    def has_op(self, op: str) -> bool:
        """True if a rule's pattern root is ``op``."""
        return bool(self._by_root.get(op))

    def const_rule(self, op: str, width: int) -> Rule | None:
        """The ``coreir.const`` / ``corebit.const`` rule (materialises constants)."""
        r = self.by_key.get(op)
        if r is not None and (op == "corebit.const" or r.width == width):
            return r
        return None


def load_rule_table(path: str | Path, spec_hash: str | None = None) -> RuleTable:
    """The rule table in ``path`` (a table file or the directory holding it) read through
    :func:`peak.rules.format.read_table` (``spec_hash``: every rule must come from that PE).
    Raises :class:`CollateralError` naming the file."""
    return RuleTable.from_file(read_table(Path(path), spec_hash))


def load_pe_model(pe: PEInfo) -> type:
    """The PE spec class named by ``pe.json`` (:attr:`PEInfo.spec`, any reference
    :func:`peak.load_spec` accepts): a pure Python class whose instances are the PE's
    Python model. Raises :class:`CollateralError` when it does not import."""
    return _load_spec_ref(pe.spec)


def _load_spec_ref(ref: str) -> type:
    """:func:`load_pe_model` of a spec reference."""
    try:
        return load_spec(ref)
    except CollateralError:
        raise
    except CgraError as exc:  # SpecError/ConfigError/RuleError: one line
        raise CollateralError(f"pe.json: PE spec '{ref}' cannot be loaded ({exc}); install "
                              f"the package defining it or regenerate the design") from None


# ---------------------------------------------------------------------------- the object
@dataclass(frozen=True)
class Collateral:
    """Everything the mapper knows about one design, validated (module docstring).

    ``root``: the design directory (``None`` for :meth:`from_graphs`); ``design``: design.json
    (``None`` for :meth:`from_graphs`); ``pe`` / ``mem``: PEak's and Lake's part of pe.json /
    mem.json (``mem`` ``None`` without MEM tiles; both ``None`` from :meth:`from_graphs`);
    ``pe_tile`` / ``mem_tile``: what the array adds to them; ``rules``: the rule table;
    ``graphs``: width (bits) -> :class:`~canal.routing.RoutingGraph`, widest first;
    ``config_map``: mux select fields; ``timing``: the delay model; ``design_id``: sha256 of
    design.json; ``fabric_name``: the name of a collateral built from graphs;
    ``resources``: resources.json (:class:`~garnet.collateral.Resources`; ``None`` when the
    directory has none, module docstring); ``pond``: the PE tiles' register file (pe.json's
    ``pond``, :class:`~garnet.collateral.PondInfo`; ``None`` without one or from
    :meth:`from_graphs`)."""

    root: Path | None
    design: DesignInfo | None
    pe: PEInfo | None
    mem: MemInfo | None
    rules: RuleTable | None
    graphs: dict[int, RoutingGraph]
    config_map: ConfigMap
    timing: TimingModel
    design_id: str | None = None
    pe_tile: TileCore | None = None
    mem_tile: TileCore | None = None
    fabric_name: str = "fabric"
    resources: Resources | None = None
    #: the PE tiles' register file (pe.json's ``pond``, :class:`garnet.collateral.PondInfo`);
    #: ``None`` when the PE tiles have none
    pond: PondInfo | None = None

    @classmethod
    def from_graphs(cls, graphs: Iterable[InterconnectGraph | RoutingGraph] | Any,
                    timing: TimingModel | None = None, name: str = "fabric") -> "Collateral":
        """The fabric part of a collateral (graphs, config map, timing) straight from canal
        graphs (or an :class:`canal.interconnect.Interconnect`): for tests and benchmarks of
        the back end. The config map is computed by :func:`canal.config.tile_configs`."""
        ic_timing = getattr(graphs, "timing", None)
        if hasattr(graphs, "graphs"):
            graphs = graphs.graphs.values()
        elif isinstance(graphs, dict):
            graphs = graphs.values()
        rgs = as_graphs(graphs)
        rows = config_map_rows(tile_configs({w: rg.ig for w, rg in rgs.items()}))
        return cls(None, None, None, None, None, rgs, ConfigMap.from_rows(rows, name),
                   timing or ic_timing or TimingModel.load(), fabric_name=name)

    @property
    def name(self) -> str:
        return self.design.name if self.design is not None else self.fabric_name

    @property
    def pe_hash(self) -> str:
        return self.require("pe").spec_hash

    @property
    def pe_latency(self) -> int | None:
        """The PE core's latency (cycles) as pe.json states it, ``None`` when not stated."""
        return self.pe_tile.latency_cycles if self.pe_tile is not None else None

    @property
    def mem_preset(self) -> str | None:
        """The Lake preset of the MEM tiles, ``None`` without MEM tiles."""
        return self.mem.preset if self.mem is not None else None

    @property
    def size(self) -> tuple[int, int]:
        """(columns, rows) of the array."""
        return next(iter(self.graphs.values())).size

    @property
    def data_width(self) -> int:
        """Bits of a data word: design.json's ``params.data_width`` (designs of before the
        parameter: 16), else (a fabric from graphs) the widest routing graph."""
        if self.design is not None:
            return self.design.data_width
        return max(self.graphs)

    @property
    def tiles(self):
        """(x, y) -> :class:`~canal.graph.TileInfo` (the same in every width's graph)."""
        return next(iter(self.graphs.values())).tiles

    def regen_hint(self) -> str:
        if self.design is not None:
            return self.design.hint
        return gc.regen_hint(self.root or self.name)

    def require(self, what: str) -> Any:
        """``pe``, ``rules``, ``resources`` (or ``mem``): the part, or
        :class:`CollateralError` when this collateral has none (a fabric-only object, a
        design without MEM tiles, a directory without resources.json)."""
        value = getattr(self, what)
        if value is None:
            if what == "resources" and self.root is not None:
                raise CollateralError(_no_resources(self.root, self.regen_hint()))
            if what == "mem":
                raise CollateralError(f"design {self.name} has no MEM tiles (mem.json names "
                                      f"none); use a design with mem_ratio > 0")
            raise CollateralError(f"collateral {self.name} has no {what} (built from graphs "
                                  f"only); load a design directory written by `cgra rtl`")
        return value


def load_fabric(paths: Iterable[str | Path], timing: TimingModel | None = None,
                name: str = "fabric") -> Collateral:
    """A fabric-only :class:`Collateral` from routing-graph JSON files (one per width), read
    through :mod:`canal.collateral`: for placing and routing on graphs outside a design
    directory (tests, benchmarks, graphs from another generator)."""
    return Collateral.from_graphs([RoutingGraph.load(p) for p in paths], timing, name)


def load_design_summary(path: str | Path) -> tuple[DesignInfo, MemInfo | None]:
    """The light part of a design directory, for planning without the routing graphs:
    design.json (:class:`~garnet.collateral.DesignInfo`) and Lake's part of mem.json
    (``None`` without MEM tiles), both checked against the manifest. Raises
    :class:`CollateralError`."""
    design = gc.read_design_info(path)
    design.verify_files(["mem.json"])
    parts = gc.read_mem(Path(path) / "mem.json", design.hint)
    return design, (parts[0] if parts is not None else None)


def _no_resources(root: Path, hint: str) -> str:
    return (f"{root / gc.RESOURCES} is missing (not in the design's manifest: the design was "
            f"written before resource vectors were collateral, or without `cgra rtl`); {hint}")


def _read_resources(root: Path, design: DesignInfo) -> Resources:
    """resources.json of a design whose manifest lists it, checked against design.json's
    spec hashes. Raises :class:`CollateralError`."""
    hint = design.hint
    res = gc.read_resources(root / gc.RESOURCES, hint)
    if res.pe.spec_hash != design.pe_hash:
        raise CollateralError(f"{root / gc.RESOURCES}: PE spec hash {res.pe.spec_hash[:12]} "
                              f"differs from design.json ({str(design.pe_hash)[:12]}): the "
                              f"files come from different runs; {hint}")
    if (res.mem is not None and res.mem.spec_hash != design.mem_hash) \
            or (res.mem is None and res.mem_tiles):
        raise CollateralError(f"{root / gc.RESOURCES}: MEM spec hash differs from design.json "
                              f"(or MEM tiles without a MEM vector): the files come from "
                              f"different runs; {hint}")
    return res


def load_resources(path: str | Path, check_spec: bool = True) -> Resources:
    """The resource vectors of the design directory ``path`` (resources.json, typed:
    :class:`~garnet.collateral.Resources`) without the routing graphs: design.json, the
    manifest entry of resources.json, its spec hashes against design.json's and, with
    ``check_spec``, the PE spec it names, imported now, against its recorded hash (as
    :func:`load_collateral`). Raises :class:`CollateralError` naming the file and the
    `cgra rtl` command that regenerates it when resources.json is missing, modified after
    generation, malformed or stale (a PE spec edited since)."""
    root = Path(path)
    design = gc.read_design_info(root)
    if gc.RESOURCES not in design.files:
        raise CollateralError(_no_resources(root, design.hint))
    design.verify_files([gc.RESOURCES])
    res = _read_resources(root, design)
    if check_spec:
        from peak import spec_hash as current_hash  # deferred: the import would close an import circle or shadow a name
        now = current_hash(_load_spec_ref(res.pe.spec))
        if now != res.pe.spec_hash:
            raise CollateralError(f"{root / gc.RESOURCES} is stale: PE {res.pe.spec} was "
                                  f"edited after the design was generated (spec hash now "
                                  f"{now[:12]}, recorded {res.pe.spec_hash[:12]}); "
                                  f"{design.hint}")
    return res


def load_collateral(path: str | Path, check_spec: bool = True) -> Collateral:
    """Read and validate the design directory ``path`` once (module docstring).

    Raises :class:`CollateralError` naming the file and how to regenerate it when a file is
    missing, malformed, modified after generation, of another schema version, or stale
    (spec hashes disagree between files, or with the current PE spec source when
    ``check_spec``)."""

    root = Path(path)
    design = gc.read_design_info(root)
    hint = design.hint
    design.verify_files()

    pe, pe_tile = gc.read_pe(root / "pe.json", hint)
    if design.pe_hash != pe.spec_hash:
        raise CollateralError(f"{root / 'pe.json'}: PE spec hash {pe.spec_hash[:12]} "
                              f"differs from design.json ({str(design.pe_hash)[:12]}): the "
                              f"files come from different runs; {hint}")
    if check_spec:
        from peak import spec_hash as current_hash  # deferred: the import would close an import circle or shadow a name
        now = current_hash(load_pe_model(pe))
        if now != pe.spec_hash:
            raise CollateralError(f"{root / 'pe.json'} is stale: PE {pe.spec} was edited "
                                  f"after the design was generated (spec hash now {now[:12]}, "
                                  f"recorded {pe.spec_hash[:12]}); {hint}")

    mem_parts = gc.read_mem(root / "mem.json", hint)
    mem, mem_tile = mem_parts if mem_parts is not None else (None, None)
    if mem is not None and mem.spec_hash != design.mem_hash:
        raise CollateralError(f"{root / 'mem.json'}: MEM spec hash differs from design.json: "
                              f"the files come from different runs; {hint}")

    rules_dir = root / "rules"
    if not rules_dir.is_dir():
        raise CollateralError(f"{rules_dir} is missing (the design was generated with "
                              f"--no-rules?); {hint}")
    stamp = gc.read_stamp(rules_dir, hint)
    if stamp.get("spec_hash") != pe.spec_hash:
        raise CollateralError(f"{rules_dir / gc.STAMP}: rules are stale (PE spec hash "
                              f"{str(stamp.get('spec_hash'))[:12]}, the design's PE has "
                              f"{pe.spec_hash[:12]}); {hint}")
    rules = load_rule_table(rules_dir / str((stamp.get("files") or [""])[0]), pe.spec_hash)

    if not design.widths:
        raise CollateralError(f"{root / 'design.json'}: no interconnect widths in 'params'; "
                              f"{hint}")
    graphs = as_graphs(RoutingGraph.load(root / "routing" / f"graph_{w}.json")
                       for w in design.widths)
    config_map = gc.read_config_map(root / "config_map.json", hint)
    timing = TimingModel.read(root / "timing.json")
    resources = _read_resources(root, design) if gc.RESOURCES in design.files else None
    return Collateral(root, design, pe, mem, rules, graphs, config_map, timing,
                      gc.design_id(root), pe_tile, mem_tile, resources=resources,
                      pond=gc.read_pond(root / "pe.json", hint))
