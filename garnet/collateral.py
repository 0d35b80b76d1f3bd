"""The collateral directory ``build/<design>/``: the one owner of its design-level formats.

Pure (no hardware imports): ``cgra rtl`` (:mod:`garnet.build`) writes through it, the mapper
(:mod:`mapper.collateral`) reads through it. Files and who owns their format::

    design.json            garnet.design/2   (here)  parameters, spec hashes, top module and
                                                     ports, ``build`` (garnet.build/1: the
                                                     keys of the incremental build), and
                                                     ``files``: the sha256 of every other file
                                                     below (the manifest)
    config_map.json        garnet.config_map/1 (here) every config field: tile, feature,
                                                     register, bits, address
    mem.json               garnet.mem/2      (here)  ``lake``: Lake's own document, as Lake
                                                     wrote it (lake.collateral/1, read as a
                                                     :class:`lake.collateral.MemInfo`);
                                                     ``tile``: what the array adds
                                                     (:class:`TileCore`)
    pe.json                garnet.pe/2       (here)  ``peak``: PEak's own document
                                                     (peak.pe/1, :class:`peak.collateral.PEInfo`);
                                                     ``tile``: what the array adds
    rules/garnet_rules.json garnet.rules_stamp/1 (here) which PE / IR library the rules are for
    rules/<PE>.rules.json  peak-rule-table (peak.rules.format)
    routing/graph_<w>.json canal.routing_graph/1 (canal.collateral), and .txt
    routing/layout.txt|json the PnR tags per tile (here)
    timing.json            canal.timing/1 (canal.timing)
    resources.json         garnet.resources/1 (here) what one PE / MEM tile and one switch
                                                     box offer (``pe``: peak.resources/1,
                                                     ``mem``: lake.resources/1,
                                                     ``interconnect``: canal.resources/1,
                                                     each as its DSL wrote it) and the
                                                     ``array``'s tile counts
    rtl/*.v, rtl/filelist.f Verilog (CIRCT output, one file per module)
    rtl/hier/*.v, filelist.f the top again in column blocks (canal.rtl.column_verilog;
                             design.json ``rtl.hier``: ``columns``, ``filelist``,
                             ``modules``, or null)

**Manifest.** ``design.json["files"]`` maps every file of the directory (paths relative to it,
``/``-separated; ``sim/`` excluded: it is the Verilator cache of the harness) to the sha256 of
its bytes. :func:`verify_files` recomputes them: an edited, truncated, missing or extra file
is refused with a :class:`~cgra.errors.CollateralError` naming the file, both hashes and the
``cgra rtl`` command that regenerates the design. ``design_id`` = sha256 of design.json's
bytes identifies one generation of a design (stage files of the mapper record it).

**One author per document.** pe.json and mem.json nest the core generator's document
unchanged (``peak`` / ``lake``) beside the array's own fields (``tile``: tag, Verilog
module, routable ports, where the core's config fields live in feature 0, latency), so no
key of PEak or Lake is overridden or renamed. Readers get frozen dataclasses:
:func:`read_design_info` (:class:`DesignInfo`), :func:`read_pe` (:class:`PEInfo` +
:class:`TileCore`), :func:`read_mem` (:class:`MemInfo` + :class:`TileCore`),
:func:`read_config_map` (:class:`ConfigMap`), :func:`read_resources` (:class:`Resources`).
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from json.encoder import encode_basestring_ascii as _encode_str
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from cgra.errors import CollateralError
from cgra.config import config_address
from cgra.core import ConfigMemory

from canal.config import POWER_GATE_FEATURE, RV_FEATURE

if TYPE_CHECKING:
    from canal.resources import TrackClass
    from lake.collateral import MemInfo
    from lake.resources import MemResources
    from peak.collateral import PEInfo
    from peak.resources import PEResources

DESIGN_SCHEMA = "garnet.design/2"
CONFIG_MAP_SCHEMA = "garnet.config_map/1"
MEM_SCHEMA = "garnet.mem/2"
PE_SCHEMA = "garnet.pe/2"
STAMP_SCHEMA = "garnet.rules_stamp/1"
BUILD_SCHEMA = "garnet.build/1"
STAMP = "garnet_rules.json"
LAYOUT_SCHEMA = "garnet.layout/1"
RESOURCES_SCHEMA = "garnet.resources/1"
RESOURCES = "resources.json"
#: directories of a design that are not collateral (caches written later)
UNMANAGED = ("sim",)


def file_sha256(path: str | Path) -> str:
    """sha256 (hex) of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_json(path: str | Path, doc: Any, *, compact: bool = False) -> Path:
    """Write ``doc`` as JSON (indent 1, or compact) with a trailing newline; returns path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(doc, separators=(",", ":")) if compact else json.dumps(doc, indent=1)
    p.write_text(text + "\n")
    return p


def read_json(path: str | Path, hint: str) -> Any:
    """Parse a JSON file; :class:`CollateralError` naming it (missing / malformed) + ``hint``."""
    p = Path(path)
    if not p.is_file():
        raise CollateralError(f"{p} is missing; {hint}")
    try:
        return json.loads(p.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CollateralError(f"{p}: cannot read JSON ({exc}); {hint}") from None


def check_schema(doc: Any, want: str, path: str | Path, hint: str) -> dict[str, Any]:
    """``doc`` if it is an object of schema ``want``, else :class:`CollateralError`."""
    if not isinstance(doc, dict):
        raise CollateralError(f"{path}: expected a JSON object; {hint}")
    if doc.get("schema") != want:
        raise CollateralError(f"{path}: schema {doc.get('schema')!r} is not {want!r} (written "
                              f"by another version of the generator); {hint}")
    return doc


# ---------------------------------------------------------------------------- design.json
def regen_hint(root: str | Path, design: dict[str, Any] | None = None) -> str:
    """How to regenerate the design in ``root`` (the command, with its TOML when known)."""
    design = design or {}
    config = design.get("config_file")
    if not config:
        name = design.get("name") or Path(root).name
        config = f"configs/{name}.toml"
    return f"regenerate it with `cgra rtl --config {config} --out {root}`"


def managed_files(root: str | Path) -> list[str]:
    """Relative paths of every collateral file under ``root`` except design.json and the
    unmanaged caches (:data:`UNMANAGED`), sorted."""
    root = Path(root)
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        if rel_dir == Path("."):
            dirnames[:] = [d for d in dirnames if d not in UNMANAGED and not d.startswith(".")]
        for f in filenames:
            rel = (rel_dir / f).as_posix()
            if rel != "design.json" and not f.startswith("."):
                out.append(rel)
    return sorted(out)


def manifest(root: str | Path) -> dict[str, str]:
    """Relative path -> sha256 of every managed file under ``root``."""
    root = Path(root)
    return {rel: file_sha256(root / rel) for rel in managed_files(root)}


def write_design(root: str | Path, design: dict[str, Any]) -> Path:
    """Write ``design.json`` into ``root`` with the manifest of every other file (call it
    last, when all other files are written). Returns the path."""
    doc = {**design, "schema": DESIGN_SCHEMA, "files": manifest(root)}
    return write_json(Path(root) / "design.json", doc)


def read_design(root: str | Path) -> dict[str, Any]:
    """``design.json`` of ``root``, schema-checked (not yet the manifest: see
    :func:`verify_files`). Raises :class:`CollateralError`."""
    root = Path(root)
    if not root.is_dir():
        raise CollateralError(f"design directory {root} does not exist; generate it with "
                              f"`cgra rtl --config configs/{root.name}.toml --out {root}` "
                              f"(`make rtl DESIGN={root.name}` for build/{root.name})")
    hint = regen_hint(root)
    doc = check_schema(read_json(root / "design.json", hint), DESIGN_SCHEMA,
                       root / "design.json", hint)
    if not isinstance(doc.get("files"), dict):
        raise CollateralError(f"{root / 'design.json'}: no file manifest; {hint}")
    return doc


#: the fewest columns in one block of the array top in column blocks (``rtl/hier/``,
#: :func:`garnet.array.block_columns`): measured on the 32x16 default design, Verilator
#: 5.006, 2 cores (cold build of the stream harness, s, and clock edges per second of the
#: gaussian run): flat 76.2 s / 1711; blocks of 1 column 58.3 s / 842; 2: 46.5 / 1133;
#: 4: 33.5 / 1249; 8: 37.6 / 1164; 16: 59.6 / 856 (2026-12-05)
MIN_BLOCK_COLUMNS = 4


#: the IO core's fabric ports -> the name of their socket at the top of a ready-valid array
#: (:func:`garnet.build.generate_rv_rtl`): the names of the static array's IO ports (the IO
#: core is a wire between them), so the stream plan (:func:`mapper.sim.run.stream_plan`)
#: addresses both arrays alike
RV_IO_SOCKETS = {"io2f_{w}": "glb2io_{w}", "f2io_{w}": "io2glb_{w}"}


@dataclass(frozen=True)
class TopPort:
    """A port of the top module: name, ``in``/``out``, width (bits)."""

    name: str
    direction: str
    width: int


@dataclass(frozen=True)
class DesignInfo:
    """``design.json`` as its readers need it (typed; :func:`read_design_info`): the
    design's name, the TOML it came from, the array (``columns`` x ``rows`` tiles, tile
    counts per kind), data width and interconnect widths (bits), the spec hashes of its
    cores, the top module and its ports, the flush spine interval (rows per register, 0:
    none), the file manifest (relative path -> sha256) and the top in column blocks
    (``rtl/hier/``, :func:`garnet.array.array_blocks`): columns per block (0: none) and its
    file list (relative path)."""

    root: Path
    name: str
    config_file: str | None
    columns: int
    rows: int
    tile_counts: Mapping[str, int]
    data_width: int
    widths: tuple[int, ...]
    pe_hash: str | None
    mem_hash: str | None
    top: str | None
    ports: tuple[TopPort, ...]
    flush_interval: int
    files: Mapping[str, str]
    hier_columns: int = 0
    hier_filelist: str | None = None
    #: the system top of a design with a GLB (the array and its GLB: ``glb/system.f``,
    #: :func:`garnet.glb.rtl.system_verilog`): module, ports, file list; None / () without
    system_top: str | None = None
    system_ports: tuple[TopPort, ...] = ()
    system_filelist: str | None = None
    #: words each enabled ready-valid FIFO site holds after reset (params ``fifo_tokens``)
    fifo_tokens: int = 1

    @property
    def hint(self) -> str:
        """How to regenerate this design (:func:`regen_hint`)."""
        return regen_hint(self.root, {"name": self.name, "config_file": self.config_file})

    def verify_files(self, only: Iterable[str] | None = None) -> None:
        """:func:`verify_manifest` of this design's directory."""
        verify_manifest(self.root, self.files, self.hint, only)

    @classmethod
    def from_json(cls, root: str | Path, doc: dict[str, Any]) -> "DesignInfo":
        """Type a schema-checked design.json document (:func:`read_design`). Raises
        :class:`CollateralError` naming the malformed key."""
        root = Path(root)
        try:
            params = doc.get("params") or {}
            array = doc.get("array") or {}
            hashes = doc.get("spec_hashes") or {}
            hier = (doc.get("rtl") or {}).get("hier") or {}
            system = doc.get("system") or {}
            return cls(
                root, str(doc.get("name") or root.name), doc.get("config_file"),
                int(params.get("width", array.get("width", 0))),
                int(params.get("height", array.get("height", 0))),
                MappingProxyType({str(k): int(v) for k, v in (array.get("tiles") or {}).items()}),
                int(params.get("data_width", 16)),
                tuple(int(w) for w in params.get("widths") or ()),
                hashes.get("pe"), hashes.get("mem"), doc.get("top"),
                tuple(TopPort(str(q["name"]), str(q["direction"]), int(q["width"]))
                      for q in doc.get("ports") or ()),
                int(params.get("flush_interval", 0) or 0),
                MappingProxyType(dict(doc["files"])),
                int(hier.get("columns", 0)), hier.get("filelist"),
                system.get("top"),
                tuple(TopPort(str(q["name"]), str(q["direction"]), int(q["width"]))
                      for q in system.get("ports") or ()),
                system.get("filelist"), int(params.get("fifo_tokens", 1)))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CollateralError(f"{root / 'design.json'}: malformed ({exc!r}); "
                                  f"{regen_hint(root, doc)}") from None


def read_design_info(root: str | Path) -> DesignInfo:
    """:func:`read_design`, typed (:class:`DesignInfo`). Raises :class:`CollateralError`."""
    return DesignInfo.from_json(root, read_design(root))


def design_id(root: str | Path) -> str:
    """sha256 of ``design.json`` (identifies one generation of the design)."""
    return file_sha256(Path(root) / "design.json")


def verify_files(root: str | Path, design: dict[str, Any],
                 only: Iterable[str] | None = None) -> None:
    """Check the manifest of a design.json document (:func:`verify_manifest`)."""
    verify_manifest(root, design["files"], regen_hint(root, design), only)


def verify_manifest(root: str | Path, want: Mapping[str, str], hint: str,
                    only: Iterable[str] | None = None) -> None:
    """Check the manifest ``want`` (relative path -> sha256): every listed file exists with
    its recorded sha256 and no managed file is unlisted. ``only``: check just these relative
    paths. Raises :class:`CollateralError` naming the file, the hashes and ``hint`` (the
    regeneration command)."""
    root = Path(root)
    names = sorted(want) if only is None else list(only)
    for rel in names:
        if rel not in want:
            raise CollateralError(f"{root / rel} is not listed in {root / 'design.json'}; "
                                  f"the design directory is incomplete; {hint}")
        p = root / rel
        if not p.is_file():
            raise CollateralError(f"{p} is missing (listed in design.json); {hint}")
        got = file_sha256(p)
        if got != want[rel]:
            raise CollateralError(f"{p} was modified after `cgra rtl` wrote it (sha256 "
                                  f"{got[:12]}, design.json records {want[rel][:12]}): stale "
                                  f"collateral; {hint}")
    if only is None:
        extra = sorted(set(managed_files(root)) - set(want))
        if extra:
            raise CollateralError(f"{root / extra[0]} is not part of the design written by "
                                  f"`cgra rtl` ({len(extra)} unlisted file(s)); remove it or "
                                  f"{hint}")


# ---------------------------------------------------------------------------- build keys
def build_doc(keys: dict[str, str], status: dict[str, str],
              compiled: list[str]) -> dict[str, Any]:
    """design.json ``build``: the sha256 key of each group of files (``interconnect``,
    ``fabric``, ``rtl``, ``design``, and ``all`` over every input; see
    :mod:`garnet.build`), what the run did with each
    group (``reused`` / ``regenerated``) and the modules CIRCT compiled. ``cgra rtl`` reuses
    a group of the previous design whose key is unchanged; readers may ignore it."""
    return {"schema": BUILD_SCHEMA, "keys": dict(keys), "status": dict(status),
            "compiled": list(compiled)}


def read_build(design: dict[str, Any]) -> dict[str, Any]:
    """The ``build`` record of a design.json document, or ``{}`` when it has none (a design
    of an older generator) or of another schema."""
    doc = design.get("build")
    if not isinstance(doc, dict) or doc.get("schema") != BUILD_SCHEMA \
            or not isinstance(doc.get("keys"), dict):
        return {}
    return doc


# ---------------------------------------------------------------------------- config map
@dataclass(frozen=True)
class FieldLoc:
    """One piece of a field: bits ``[lo, lo+width)`` of register ``reg`` of ``feature`` hold
    bits ``[field_lo, field_lo+width)`` of field ``name``."""

    name: str
    feature: int
    feature_name: str
    reg: int
    lo: int
    width: int
    field_lo: int


@dataclass(frozen=True)
class ConfigMap:
    """The config map as the bitstream generator uses it: routing node id -> (x, y,
    [:class:`FieldLoc`]) for every mux select field (rows with a ``node``); core fields
    (feature 0) come from the routing graph's tile records; ``power_gates``: (x, y) -> the
    :class:`FieldLoc` of the tile's power-gate field (feature ``pg``, field ``gate`` of
    :mod:`canal.config`; empty for a map written before power domains); ``rv_fields``: node
    id -> (x, y, [:class:`FieldLoc`]) of its ready-valid fields (features ``rv<w>``: the valid
    enable ``<mux>_en``, a split site's ``<reg>_end``; :mod:`canal.ready_valid`), kept out
    of ``nodes`` so a select is never written into them (empty for a static design)."""

    nodes: dict[str, tuple[int, int, list[FieldLoc]]] = field(default_factory=dict)
    #: (x, y) -> the tile's config memory (``tiles[].config_memory`` of config_map.json)
    config_memories: dict[tuple[int, int], Any] = field(default_factory=dict)
    power_gates: dict[tuple[int, int], FieldLoc] = field(default_factory=dict)
    rv_fields: dict[str, tuple[int, int, list[FieldLoc]]] = field(default_factory=dict)

    @classmethod
    def from_rows(cls, rows: Iterable[dict[str, Any]], source: str = "<rows>",
                  config_memories: Mapping[tuple[int, int], Any] | None = None
                  ) -> "ConfigMap":
        """The map of the config-map rows (:func:`canal.config.config_map_rows`) and the
        tiles' config memories. Raises :class:`CollateralError` naming ``source``."""
        cm = cls(config_memories=dict(config_memories or {}))
        try:
            for r in rows:
                if r.get("node") is None:
                    if r.get("feature_name") == POWER_GATE_FEATURE:
                        cm.power_gates[(int(r["x"]), int(r["y"]))] = FieldLoc(
                            r["field"], int(r["feature"]), POWER_GATE_FEATURE, int(r["reg"]),
                            int(r["lo"]),
                            int(r["width"]), int(r.get("field_lo", 0)))
                    continue
                fname = str(r.get("feature_name", ""))
                rv = fname.startswith(RV_FEATURE) and fname[len(RV_FEATURE):].isdigit()
                ent = (cm.rv_fields if rv else cm.nodes).setdefault(
                    r["node"], (int(r["x"]), int(r["y"]), []))
                ent[2].append(FieldLoc(r["field"], int(r["feature"]), r.get("feature_name", ""),
                                       int(r["reg"]), int(r["lo"]), int(r["width"]),
                                       int(r.get("field_lo", 0))))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CollateralError(f"{source}: malformed config-map row ({exc!r}); regenerate "
                                  f"the collateral with `cgra rtl`") from None
        return cm


def config_map_doc(rows: list[dict[str, Any]], tiles: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``config_map.json`` document: ``rows`` as :func:`canal.config.config_map_rows`
    gives them (plus ``tag``/``core`` per tile), ``tiles`` = [{x, y, features: [{feature,
    name, registers}], config_memory (only on tiles whose core has one): {feature, words,
    width}}] (a ``mem<i>`` feature's ``registers`` are its memory words, see
    :mod:`canal.config`)."""
    return {"schema": CONFIG_MAP_SCHEMA,
            "address": "reg << 24 | feature << 16 | x << 8 | y",
            "data_width": 32,
            "columns": ["x", "y", "tag", "core", "feature", "feature_name", "field", "node",
                        "reg", "lo", "width", "field_lo", "addr"],
            "tiles": tiles, "fields": rows}


def config_map_tiles_doc(tiles: Mapping[tuple[int, int], Any],
                         configs: Mapping[tuple[int, int], Any],
                         rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The ``config_map.json`` document of an array: ``tiles`` = (x, y) -> tile record
    (:class:`canal.graph.TileInfo`: ``tag``, ``core``), ``configs`` = (x, y) ->
    :class:`canal.config.TileConfig`, ``rows`` = :func:`canal.config.config_map_rows` of
    ``configs``. Each row gets the ``tag`` (``null`` when empty) and ``core`` of its tile;
    each tile lists its features (``registers``: the memory words of a ``mem<i>`` feature,
    else its register count) and its config memory. :func:`config_map_json` gives the same
    document as compact JSON text, faster."""
    cmap_rows = []
    for row in rows:
        info = tiles[(row["x"], row["y"])]
        cmap_rows.append({"x": row["x"], "y": row["y"], "tag": info.tag or None,
                          "core": info.core, **{k: v for k, v in row.items()
                                                if k not in ("x", "y")}})
    return config_map_doc(cmap_rows, [
        {"x": x, "y": y, "features": [
            {"feature": f.index, "name": f.name, "registers": f.words or f.num_regs}
            for f in tc.features],
         **({} if tc.config_memory is None else {"config_memory": {
             "feature": tc.config_memory.feature, "words": tc.config_memory.words,
             "width": tc.config_memory.width}})}
        for (x, y), tc in configs.items()])


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


def config_map_json(tiles: Mapping[tuple[int, int], Any],
                    configs: Mapping[tuple[int, int], Any]) -> str:
    """``json.dumps(config_map_tiles_doc(tiles, configs, config_map_rows(configs)),
    separators=(",", ":"))``, character for character, without building the ~130 000 row
    dicts of a 64x32 array: tiles whose config has the same layout (per feature: index,
    name, ``slices`` list object, ``nodes`` keys, words and register count; plus the config
    memory, tag and core; the tiles :func:`canal.config.tile_configs` stamps from one
    template) share pre-encoded text, and only x, y, the node ids and ``addr`` are encoded
    per tile (the JSON encoder's own string and integer encodings). Raises
    :class:`~cgra.errors.ConfigError` as :func:`canal.config.config_map_rows` for an address
    part out of range."""

    empty = _dumps(config_map_doc([], []))
    tail = '"tiles":[],"fields":[]}'
    if not empty.endswith(tail):            # pragma: no cover - config_map_doc's key order
        raise AssertionError("config_map_doc must end with tiles, fields")
    tile_texts: list[str] = []
    row_texts: list[str] = []
    templates: dict[tuple, tuple[str, list[tuple]]] = {}
    for (x, y), tc in configs.items():
        info = tiles[(x, y)]
        feats = tc.features
        cm = tc.config_memory
        key = (info.tag or None, info.core,
               None if cm is None else (cm.feature, cm.words, cm.width),
               tuple((f.index, f.name, id(f.slices), tuple(f.nodes), f.words, f.num_regs)
                     for f in feats))
        tmpl = templates.get(key)
        if tmpl is None:
            tile_doc = {"features": [{"feature": f.index, "name": f.name,
                                      "registers": f.words or f.num_regs} for f in feats],
                        **({} if cm is None else {"config_memory": {
                            "feature": cm.feature, "words": cm.words, "width": cm.width}})}
            th = f',"tag":{_dumps(key[0])},"core":{_dumps(key[1])}'
            parts = []
            for j, f in enumerate(feats):
                for s in f.slices:
                    config_address(s.reg, f.index, x, y)      # every part in range
                    pre = (f'{th},"feature":{_dumps(f.index)},"feature_name":'
                           f'{_dumps(f.name)},"field":{_dumps(s.name)},"node":')
                    post = (f',"reg":{_dumps(s.reg)},"lo":{_dumps(s.lo)},"width":'
                            f'{_dumps(s.width)},"field_lo":{_dumps(s.field_lo)},"addr":')
                    if s.name in f.nodes:
                        parts.append((pre, j, s.name, post, s.reg << 24 | f.index << 16))
                    else:
                        parts.append((pre + "null" + post, -1, "", "",
                                      s.reg << 24 | f.index << 16))
            tmpl = templates[key] = (_dumps(tile_doc)[1:], parts)
        elif tmpl[1]:
            config_address(0, 0, x, y)      # x, y in range (reg, feature: as the template's)
        tile_text, parts = tmpl
        xs, ys, xy = _dumps(x), _dumps(y), x << 8 | y
        tile_texts.append(f'{{"x":{xs},"y":{ys},{tile_text}')
        head = f'{{"x":{xs},"y":{ys}'
        for pre, j, sname, post, base in parts:
            if j < 0:
                row_texts.append(f"{head}{pre}{base | xy}}}")
            else:
                nid = feats[j].nodes[sname]
                node = (_encode_str(nid) if type(nid) is str
                        else _dumps(nid))
                row_texts.append(f"{head}{pre}{node}{post}{base | xy}}}")
    return (f'{empty[:-len(tail)]}"tiles":[{",".join(tile_texts)}],'
            f'"fields":[{",".join(row_texts)}]}}')


def write_config_map(path: str | Path, tiles: Mapping[tuple[int, int], Any],
                     configs: Mapping[tuple[int, int], Any]) -> Path:
    """Write ``config_map.json`` (:func:`config_map_json`, compact, trailing newline:
    the bytes of ``write_json(path, config_map_tiles_doc(...), compact=True)``)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(config_map_json(tiles, configs) + "\n")
    return p


def read_config_map(path: str | Path, hint: str = "regenerate the design with `cgra rtl`"
                    ) -> ConfigMap:
    """Read ``config_map.json`` into a :class:`ConfigMap`; :class:`CollateralError` when
    missing or malformed."""
    doc = check_schema(read_json(path, hint), CONFIG_MAP_SCHEMA, path, hint)
    rows = doc.get("fields")
    if not isinstance(rows, list):
        raise CollateralError(f"{path}: config map has no 'fields' list; {hint}")
    memories: dict[tuple[int, int], ConfigMemory] = {}
    try:
        for t in doc.get("tiles", []):
            d = t.get("config_memory")
            if d is not None:
                memories[(int(t["x"]), int(t["y"]))] = ConfigMemory(
                    int(d["words"]), int(d["width"]), int(d["feature"]))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CollateralError(f"{path}: malformed config_memory of a tile ({exc!r}); "
                              f"{hint}") from None
    return ConfigMap.from_rows(rows, str(path), memories)


# ---------------------------------------------------------------------------- pe.json, mem.json
@dataclass(frozen=True)
class CoreSlice:
    """Bits ``[lo, lo+width)`` of register ``reg`` of feature 0 hold bits
    ``[field_lo, field_lo+width)`` of the core's config field ``field``."""

    field: str
    reg: int
    lo: int
    width: int
    field_lo: int = 0


@dataclass(frozen=True)
class TileCore:
    """What the array adds to a core's own collateral (the ``tile`` object of pe.json and
    mem.json): the layout ``tag`` of its tiles, its Verilog ``module``, its routable
    ``ports`` ((name, ``in``/``out``, width in bits)), where its config fields live in
    feature 0 (``config_registers`` 32-bit registers, :class:`CoreSlice` each) and its
    latency (cycles from an input to an output; ``None``: not stated) with a note."""

    tag: str
    module: str
    config_registers: int
    config_slices: tuple[CoreSlice, ...]
    ports: tuple[tuple[str, str, int], ...] = ()
    latency_cycles: int | None = None
    latency_note: str = ""

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "tag": self.tag, "module": self.module,
            "ports": [{"name": n, "direction": d, "width": w} for n, d, w in self.ports],
            "config": {"feature": 0, "registers": self.config_registers,
                       "slices": [{"field": c.field, "reg": c.reg, "lo": c.lo,
                                   "width": c.width, "field_lo": c.field_lo}
                                  for c in self.config_slices]}}
        if self.latency_cycles is not None:
            doc["latency"] = {"cycles": self.latency_cycles, "note": self.latency_note}
        return doc

    @classmethod
    def from_json(cls, doc: Any, where: str, hint: str) -> "TileCore":
        try:
            cfg, lat = doc["config"], doc.get("latency")
            return cls(str(doc["tag"]), str(doc["module"]), int(cfg["registers"]),
                       tuple(CoreSlice(str(c["field"]), int(c["reg"]), int(c["lo"]),
                                       int(c["width"]), int(c.get("field_lo", 0)))
                             for c in cfg["slices"]),
                       tuple((str(q["name"]), str(q["direction"]), int(q["width"]))
                             for q in doc.get("ports") or ()),
                       None if lat is None else int(lat["cycles"]),
                       "" if lat is None else str(lat.get("note", "")))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CollateralError(f"{where}: malformed 'tile' object ({exc!r}); {hint}") from None


def pe_doc(peak_doc: dict[str, Any], tile: TileCore) -> dict[str, Any]:
    """``pe.json``: PEak's document (:func:`peak.collateral.pe_json`) and the array's
    additions, each under its own key."""
    return {"schema": PE_SCHEMA, "peak": peak_doc, "tile": tile.to_json()}


def read_pe(path: str | Path, hint: str) -> tuple[PEInfo, TileCore]:
    """``pe.json``: PEak's part (:class:`PEInfo`) and the array's (:class:`TileCore`).
    Raises :class:`CollateralError` naming the file."""
    from peak.collateral import PEInfo  # deferred: loads z3, pysmt, hwtypes only when called

    doc = check_schema(read_json(path, hint), PE_SCHEMA, path, hint)
    return (PEInfo.from_json(doc.get("peak"), f"{path} (peak)"),
            TileCore.from_json(doc.get("tile"), str(path), hint))


@dataclass(frozen=True)
class PondInfo:
    """The PE tiles' register file ("pond", AHA paper Sec. 4.2) as pe.json's ``pond`` object
    states it: Lake's collateral of the memory (:class:`lake.collateral.MemInfo`: capacity
    in words, ports, read latency in cycles, config fields) and the ``prefix`` its data
    ports and config fields carry in the PE tile (``pond_data_in_0``, ``pond_in0_enable``;
    :func:`garnet.cores.pe_pond_core`)."""

    mem: Any
    prefix: str

    def port(self, name: str) -> str:
        """The PE tile's core port of the pond's port ``name`` (``data_in_0`` ->
        ``pond_data_in_0``)."""
        return self.prefix + name

    def fields(self, values: dict[str, int]) -> dict[str, int]:
        """Lake config field values (:func:`lake.config.configure`) as the PE tile's core
        fields (names with :attr:`prefix`)."""
        return {self.prefix + k: v for k, v in values.items()}


def read_pond(path: str | Path, hint: str) -> PondInfo | None:
    """The ``pond`` object of ``pe.json`` (:func:`garnet.cores.pond_collateral`), ``None``
    when the design's PE tiles have no pond. Reading registers the pond's memory spec
    under its name (:class:`lake.collateral.MemInfo`). Raises :class:`CollateralError`
    naming the file for a malformed object."""
    from lake.collateral import MemInfo  # deferred: loads numpy and Lake's encoder only when called

    doc = check_schema(read_json(path, hint), PE_SCHEMA, path, hint)
    pond = doc.get("pond")
    if pond is None:
        return None
    if not isinstance(pond, dict) or not isinstance(pond.get("prefix"), str):
        raise CollateralError(f"{path}: malformed 'pond' object (needs 'lake' and 'prefix'); "
                              f"{hint}")
    return PondInfo(MemInfo.from_json(pond.get("lake"), f"{path} (pond)"), pond["prefix"])


def mem_doc(lake_doc: dict[str, Any], tile: TileCore) -> dict[str, Any]:
    """``mem.json`` of a design with MEM tiles: the Lake collateral of the preset as Lake
    wrote it (:func:`lake.collateral.collateral`, with the preset's ``spec_hash``) and the
    array's additions, each under its own key."""
    return {"schema": MEM_SCHEMA, "lake": lake_doc, "tile": tile.to_json()}


def no_mem_doc() -> dict[str, Any]:
    return {"schema": MEM_SCHEMA, "lake": None, "note": "mem_ratio = 0: no MEM tiles"}


def read_mem(path: str | Path, hint: str) -> tuple[MemInfo, TileCore] | None:
    """``mem.json``: Lake's part (:class:`MemInfo`) and the array's (:class:`TileCore`), or
    ``None`` when the design has no MEM tiles. Raises :class:`CollateralError`."""
    from lake.collateral import MemInfo  # deferred: loads numpy and Lake's encoder only when called

    doc = check_schema(read_json(path, hint), MEM_SCHEMA, path, hint)
    if doc.get("lake") is None:
        return None
    return (MemInfo.from_json(doc["lake"], f"{path} (lake)"),
            TileCore.from_json(doc.get("tile"), str(path), hint))


# ---------------------------------------------------------------------------- rules stamp
def write_stamp(directory: str | Path, pe_ref: str, spec_hash: str, ir_hash: str, key: str,
                files: list[str]) -> Path:
    """Write ``rules/garnet_rules.json``: which PE (reference and spec hash) and IR library
    the rules are for, their cache ``key`` and files (relative, table first)."""
    return write_json(Path(directory) / STAMP, {
        "schema": STAMP_SCHEMA, "pe": pe_ref, "spec_hash": spec_hash, "ir_hash": ir_hash,
        "key": key, "files": files})


def read_stamp(directory: str | Path, hint: str | None = None) -> dict[str, Any] | None:
    """The stamp of a rules directory. With ``hint`` a missing or malformed stamp raises
    :class:`CollateralError`; without, it gives ``None`` (a cache probe)."""
    p = Path(directory) / STAMP
    if hint is None:
        try:
            doc = json.loads(p.read_text())
        except (OSError, json.JSONDecodeError):
            return None
        return doc if isinstance(doc, dict) and doc.get("schema") == STAMP_SCHEMA else None
    return check_schema(read_json(p, hint), STAMP_SCHEMA, p, hint)


# ---------------------------------------------------------------------------- layout
def layout_doc(width: int, height: int, rows: list[str], tags: dict[str, str]) -> dict:
    """``routing/layout.json``: array size, one tag string per row, the tag legend and which
    netlist tags each site tag accepts."""
    return {"schema": LAYOUT_SCHEMA, "width": width, "height": height, "rows": rows,
            "tags": tags, "site_tags": {"I": ["I", "i"], "p": ["p"], "m": ["m"]}}


# ---------------------------------------------------------------------------- resources.json
def resources_doc(pe: dict[str, Any], mem: dict[str, Any] | None,
                  interconnect: dict[str, Any], width: int, height: int, data_width: int,
                  counts: Mapping[str, int]) -> dict[str, Any]:
    """``resources.json``: the resource vectors of one PE tile (``pe``, PEak's
    :func:`peak.resources.pe_resources`), one MEM tile (``mem``, Lake's
    :func:`lake.resources.mem_resources`; ``None`` without MEM tiles) and the interconnect
    (``interconnect``, Canal's :func:`canal.resources.interconnect_resources`), each nested
    unchanged, and the ``array``: ``width`` x ``height`` tiles, ``data_width`` (bits) and the
    number of tiles of each kind (``counts``: ``PE`` / ``MEM`` / ``IO`` -> tiles)."""
    return {"schema": RESOURCES_SCHEMA, "pe": pe, "mem": mem, "interconnect": interconnect,
            "array": {"width": width, "height": height, "data_width": data_width,
                      "pe_tiles": int(counts.get("PE", 0)),
                      "mem_tiles": int(counts.get("MEM", 0)),
                      "io_tiles": int(counts.get("IO", 0))}}


@dataclass(frozen=True)
class Resources:
    """``resources.json`` (schema ``garnet.resources/1``), typed (:func:`read_resources`):
    what one physical unit of each kind offers -- ``pe``
    (:class:`peak.resources.PEResources`), ``mem`` (:class:`lake.resources.MemResources`,
    ``None`` without MEM tiles), ``interconnect`` (width class -> :class:`canal.resources.
    TrackClass`) -- and how many the array has: ``columns`` x ``rows`` tiles, ``pe_tiles``,
    ``mem_tiles``, ``io_tiles``; ``data_width`` in bits; ``path``: the file read."""

    path: Path
    pe: PEResources
    mem: MemResources | None
    interconnect: Mapping[str, TrackClass]
    columns: int
    rows: int
    data_width: int
    pe_tiles: int
    mem_tiles: int
    io_tiles: int


def read_resources(path: str | Path, hint: str) -> Resources:
    """Read ``resources.json`` into :class:`Resources` through the readers of the DSLs that
    own its parts. Raises :class:`CollateralError` naming the file and ``hint`` (the
    regeneration command) when it is missing, malformed or of another schema."""
    from canal.resources import read_interconnect_resources  # deferred: loads canal.graph (networkx) only when called
    from lake.resources import MemResources  # deferred: loads numpy and Lake's encoder only when called
    from peak.resources import PEResources  # deferred: loads z3, pysmt, hwtypes only when called

    p = Path(path)
    doc = check_schema(read_json(p, hint), RESOURCES_SCHEMA, p, hint)
    try:
        pe = PEResources.from_json(doc.get("pe"), f"{p} (pe)")
        mem = None if doc.get("mem") is None else MemResources.from_json(doc["mem"],
                                                                         f"{p} (mem)")
        ic = read_interconnect_resources(doc.get("interconnect"), f"{p} (interconnect)")
    except CollateralError as exc:
        raise CollateralError(f"{exc}; {hint}") from None
    try:
        a = doc["array"]
        return Resources(p, pe, mem, ic, int(a["width"]), int(a["height"]),
                         int(a["data_width"]), int(a["pe_tiles"]), int(a["mem_tiles"]),
                         int(a["io_tiles"]))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CollateralError(f"{p}: malformed 'array' object ({exc!r}); {hint}") from None
