"""``cgra rtl``: generate the array RTL and all compiler collateral into ``build/<design>/``,
incrementally.

Layout of the output directory (schema ``garnet.design/2``; formats owned by
:mod:`garnet.collateral`, which lists who owns each file; see docs/garnet.md)::

    rtl/<module>.v         one Verilog file per distinct module (CIRCT output of the
                           tiles, split; the top written as text)
    rtl/<top>.v            the top module (also listed last in filelist.f)
    rtl/filelist.f         all files, dependencies first (verilator -f / any simulator)
    rtl/hier/              the same top in blocks of columns (garnet.array.array_blocks;
                           arrays of >= 8 columns): the block modules, the top of that
                           name again, filelist.f (paths relative to rtl/) -- the netlist
                           of rtl/<top>.v, for Verilator's --hierarchical (each distinct
                           block verilated once; mapper.sim.verilator SimParams.hierarchy)
    rules/                 the PE rewrite-rule table + garnet_rules.json (key stamp)
    routing/graph_<w>.json routing graph per bit width (canal.routing_graph/1)
    routing/graph_<w>.txt  the same in the plain-text router format
    routing/layout.txt     one line per row y, one PnR tag per column x (p, m, I)
    routing/layout.json    {"width", "height", "rows": [...], "tags": {...}}
    pe.json                PEak's PE document (spec, hash, instruction layout, ports) + the
                           tile's additions (garnet.pe/2, :mod:`garnet.collateral`)
    mem.json               Lake's preset document (capacity, ports, modes, config fields) +
                           the tile's additions (garnet.mem/2)
    config_map.json        every config field: tile, feature, register, bits, address
    timing.json            the delay model (canal.timing/2) the routing graphs' delays use
    resources.json         the resource vectors of one PE tile (ops from the rules), one MEM
                           tile and the switch boxes, and the tile counts (garnet.resources/1)
    design.json            schema version, parameters, spec hashes, top module and ports,
                           the build keys, and the sha256 of every file above (written last)
    .cache/                the build cache (not collateral, not in the manifest; see below)

**Validation.** Before anything is written the interconnect is checked
(:func:`garnet.array.check_interconnect`): every core output reaches every core input of
its width, every core input can be fed from an IO tile, and no combinational cycle runs
through bypassable pipeline registers. A failure is a :class:`~cgra.errors.ConfigError`
naming the TOML field.

**Incremental build.** Every group of files is keyed by the sha256 of what it depends on
(:class:`Keys`; recorded in design.json ``build``, :func:`garnet.collateral.build_doc`):

* ``interconnect`` -- the graphs: the interconnect fields of the TOML
  (:data:`garnet.params.INTERCONNECT_FIELDS`), the delay table, each core's routable ports
  (:func:`garnet.array.core_interface`: not its name, so a PE edit keeping the ports keeps
  the graphs) and the source of the graph generators;
* ``fabric`` (routing/, timing.json, config_map.json) -- the interconnect key, the cores'
  names and config fields, the PE and Lake spec hashes, the source of the writers;
* ``rtl`` (rtl/) -- the interconnect key, the cores, PE and Lake spec hashes,
  ``flush_interval``, the source of every RTL generator and the magma / CIRCT versions;
* pe.json and mem.json are rebuilt in memory (milliseconds) and compared byte for byte;
* ``rules/`` -- :func:`garnet.rules.provide_rules` (its own key: PE spec and IR library);
* ``design`` -- the parameters, the TOML path, the rules switch and the source of the
  resource-vector writers (:data:`SOURCES` ``["resources"]``);
* resources.json is written on every run that writes anything (its inputs -- the rules,
  pe.json, the MEM spec, the graphs, the tile counts -- are all covered by the keys above,
  so an unchanged design keeps the file; milliseconds: the graphs are in memory, or read
  back from routing/ when the routing collateral was reused);
* ``all`` -- every input at once (:func:`fast_key`), computed without importing magma:
  when it and the rules key are unchanged the run stops there.

A group whose key equals the previous design's (and whose files pass the manifest) is
hard-linked from it; when every key is unchanged nothing is written at all ("nothing
rebuilt"). Below a group, the build cache ``<out>/.cache`` (or ``--cache-dir``) keeps

* which interconnect keys passed :func:`garnet.array.check_interconnect` (a marker per key:
  the graphs are a function of the key and are rebuilt, in about the time loading them
  took -- 1 s at 64x32 -- without the check; after a PE edit they carry the new cores'
  tile records), and
* the Verilog per module, keyed by content: each distinct tile module is compiled by
  magma -> CIRCT on its own (``Tile_<core>_<hash>`` and its sub-modules; key = its name,
  which hashes the tile shape, + the core's spec hash + the RTL generator source), and the
  top is written as text from :func:`canal.rtl.array_netlist` (:func:`garnet.array.array_top`,
  no magma, no CIRCT; key = the tile modules by position, the inter-tile wiring,
  ``flush_interval``, the generator source -- ``canal/rtl.py`` holds the emitter, so an
  emitter edit changes the key). The tiles are byte-identical to one CIRCT run over the
  whole array and the top is equivalent to CIRCT's (tests/garnet/test_incremental.py); a
  PE edit recompiles the PE tile, rewrites the top and reuses the MEM and IO tiles.

Everything is written into a temporary sibling directory ``.<name>.tmp-<pid>`` which
replaces ``<out>`` only when complete (design.json written last), so an interrupted run
never leaves a half-written design (the previous design, if any, stays intact until the
final rename; the cache and, when the RTL is unchanged, the Verilator cache ``sim/`` move
along). Directories left by a killed run (``.<name>.tmp-<pid>``, ``.<name>.old-<pid>`` of a
dead ``pid``) are cleaned up by the next run (:func:`clean_stale_siblings`).
"""
from __future__ import annotations

import gc as pygc
import hashlib
import json
import os
import pickle
import re
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import psutil

from cgra.errors import CollateralError, ConfigError, InternalError
from cgra.procs import die_with_parent

from garnet import collateral as gc
from garnet.glb.collateral import DESIGN_DIR as GLB_DIR, text as glb_json
from garnet.glb.params import GlbParams
from garnet.glb.rtl import column_verilog as glb_column_verilog, glb_verilog
from garnet.glb.rtl import system_verilog as glb_system_verilog
from garnet.params import INTERCONNECT_FIELDS, GarnetParams, validate
from cgra.errors import CgraError
from garnet.params import mem_spec, pe_spec, pond_spec, table_path
import itertools
import signal
from canal import collateral as canal_coll
from canal.custom import source_hash as ic_source_hash
from canal.graph import no_gc
from canal.dynamic import parse_dynamic
from canal.fabric_name import FabricName
from canal.ready_valid import flow_of, parse_flow_control
from canal.timing import TimingModel
from canal.timing import default_table_text, retime, validate_table
from canal.resources import interconnect_resources
import importlib.metadata as md
import multiprocessing
import traceback

DEFAULT_RULES_DIR = Path("build/rules")
#: the shared cache of tile timing measurements (:mod:`garnet.sta.measure`, keyed by tile
#: RTL, so any design reuses a tile measured for another): beside the rules directory
TIMING_DIR_NAME = "timing"
#: the build cache inside a design directory (hidden: not collateral, not in the manifest)
CACHE_DIR_NAME = ".cache"
CACHE_SCHEMA = "garnet.build_cache/1"
ROOT = Path(__file__).resolve().parents[1]

Step = Callable[[str], None]


def stage_durations(marks: list[tuple[str, float]], end: float) -> list[tuple[str, float]]:
    """``[(stage, wall seconds)]`` from ``marks`` = ``[(stage, perf_counter at its start)]``
    in order; each stage lasts until the next one starts, the last until ``end``. A stage
    announced twice in a row (the same message) is merged."""
    out: list[tuple[str, float]] = []
    for i, (msg, t) in enumerate(marks):
        dt = (marks[i + 1][1] if i + 1 < len(marks) else end) - t
        if out and out[-1][0] == msg:
            out[-1] = (msg, out[-1][1] + dt)
        else:
            out.append((msg, dt))
    return out


@dataclass
class BuildResult:
    """What :func:`generate` produced. Times in seconds, sizes in bytes.

    ``status``: group -> what happened to it (``"reused"``, ``"regenerated"``, ...), for
    ``interconnect``, ``fabric``, ``rtl``, ``docs``; ``compiled``: the modules CIRCT
    compiled in this run (tile and top modules; empty when the RTL came from the previous
    design or the cache), ``cached``: those taken from the build cache; ``changed``: why
    the groups were rebuilt (one phrase each).
    ``stages``: (stage, wall seconds) in the order they ran: this process's stages (the
    ``step`` messages), then the RTL worker's, named ``worker: <stage>``; they overlap in time
    with the stages of this process after ``Verilog (CIRCT)`` (``cgra rtl --timings``).
    ``circuit`` (a magma declaration of the top: its ports, for a fault testbench; the
    Verilog is in rtl/) and ``interconnect`` are
    built on first access when this run did not need them."""

    out: Path
    top: str
    modules: list[str]
    verilog_bytes: int
    rules_source: str          # "previous design" | "cache" | "synthesised" | "skipped"
    pe_hash: str
    tile_counts: dict[str, int]
    seconds: float
    combinational_cycle: list[str] | None = None
    rule_counts: dict[str, int] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)
    compiled: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    cached: list[str] = field(default_factory=list)
    stages: list[tuple[str, float]] = field(default_factory=list)
    _circuit: Any = field(repr=False, default=None)
    _interconnect: Any = field(repr=False, default=None)
    _lazy: dict[str, Callable[[], Any]] = field(repr=False, default_factory=dict)

    @property
    def circuit(self):
        if self._circuit is None and "circuit" in self._lazy:
            self._circuit = self._lazy["circuit"]()
        return self._circuit

    @property
    def interconnect(self):
        if self._interconnect is None and "interconnect" in self._lazy:
            self._interconnect = self._lazy["interconnect"]()
        return self._interconnect

    def _rule_counts(self) -> str:
        if not self.rule_counts:
            return ""
        return ": " + ", ".join(f"{n} {k}" for k, n in sorted(self.rule_counts.items()))

    @property
    def rules_reused(self) -> bool:
        return self.rules_source in ("previous design", "cache")

    @property
    def nothing_rebuilt(self) -> bool:
        return bool(self.status) and all(v == "reused" for v in self.status.values()) \
            and self.rules_source in ("previous design", "skipped")

    def _build_summary(self) -> str:
        if self.nothing_rebuilt:
            return ("nothing rebuilt: interconnect, RTL, collateral and rules reused from the "
                    "previous design (keys unchanged)")
        st = self.status
        head = f"interconnect {st.get('interconnect', '?')}"
        if "PE spec edited" in self.changed:
            head += ", PE regenerated"
        if st.get("rtl") == "regenerated" and not self.compiled:
            rtl = f"RTL from the cache ({', '.join(_module_kind(m) for m in self.cached)})"
        elif st.get("rtl") == "regenerated":
            rtl = f"RTL: {', '.join(_module_kind(m) for m in self.compiled)} compiled"
            if self.cached:
                rtl += f", {', '.join(_module_kind(m) for m in self.cached)} from the cache"
        else:
            rtl = f"RTL {st.get('rtl', '?')}"
        s = f"{head}; {rtl}; routing collateral {st.get('fabric', '?')}"
        if self.changed:
            s += f" ({'; '.join(self.changed)})"
        return s

    def summary(self) -> str:
        """The one-line summary printed at the end of ``cgra rtl``."""
        counts = ", ".join(f"{n} {k}" for k, n in sorted(self.tile_counts.items()))
        if self.rules_source == "skipped":
            rules = "rules skipped (--no-rules)"
        elif self.rules_reused:
            rules = (f"rules reused from {self.rules_source} (PE hash {self.pe_hash[:8]} "
                     f"unchanged{self._rule_counts()})")
        else:
            rules = (f"rules regenerated (PE hash {self.pe_hash[:8]}"
                     f"{self._rule_counts()})")
        return (f"{self.top}: {counts}; {len(self.modules)} Verilog modules, "
                f"{self.verilog_bytes / 1e6:.2f} MB; {self._build_summary()}; {rules}; "
                f"{self.seconds:.1f} s -> {self.out}")


def _module_kind(name: str) -> str:
    """``PE tile`` / ``MEM tile`` / ``IO tile`` / ``top`` / the module name (summary)."""
    for prefix, kind in (("Tile_PECore_", "PE tile"), ("Tile_lake_", "MEM tile"),
                         ("Tile_io_", "IO tile"), ("Garnet_", "top")):
        if name.startswith(prefix):
            return kind
    return name


_MODULE_RE = re.compile(r"^module\s+([A-Za-z_][A-Za-z0-9_$]*)", re.M)
_EXTERN_RE = re.compile(r"^// external module \S+\s*$")


def split_verilog(text: str) -> list[tuple[str, str]]:
    """Split CIRCT output into ``[(module name, text)]`` in file order (dependencies first).
    Text outside modules (comments, macros) is prepended to every module so each file is
    self-contained; CIRCT's ``// external module <name>`` notes (a module compiled against
    declarations, :func:`garnet.array.array_top`) are dropped. Raises
    :class:`CollateralError` on unbalanced module/endmodule."""
    lines = text.splitlines(keepends=True)
    header: list[str] = []
    modules: list[tuple[str, str]] = []
    cur: list[str] | None = None
    name = ""
    for line in lines:
        mm = _MODULE_RE.match(line)
        if mm and cur is None:
            cur, name = [line], mm.group(1)
            continue
        if cur is not None:
            cur.append(line)
            if line.startswith("endmodule"):
                modules.append((name, "".join(cur)))
                cur = None
        elif line.strip() and not _EXTERN_RE.match(line):
            header.append(line)
    if cur is not None:
        raise CollateralError(f"Verilog split: module {name} has no endmodule; the CIRCT "
                              f"output is truncated")
    pre = "".join(header)
    return [(n, pre + body) for n, body in modules]


_SIBLING_RE = re.compile(r"^\.(?P<name>.+)\.(?P<kind>tmp|old)-(?P<pid>\d+)$")


def clean_stale_siblings(out: str | Path) -> list[str]:
    """Clean up after ``generate`` runs on ``out`` that were killed (SIGKILL, power loss):
    remove the sibling directories ``.<name>.tmp-<pid>`` and ``.<name>.old-<pid>`` of
    processes ``pid`` that no longer exist. A stale ``.old`` while ``<name>`` itself is
    missing is the previous good design (the run died between its two renames): the newest
    one is renamed back to ``<name>`` instead of being deleted. Directories of live
    processes (and of this process) are never touched. Returns one message per action."""
    out = Path(out)
    if not out.parent.is_dir():
        return []
    stale: dict[str, list[Path]] = {"tmp": [], "old": []}
    for d in out.parent.iterdir():
        mt = _SIBLING_RE.match(d.name)
        if mt is None or mt.group("name") != out.name or not d.is_dir():
            continue
        pid = int(mt.group("pid"))
        if pid == os.getpid() or psutil.pid_exists(pid):
            continue
        stale[mt.group("kind")].append(d)
    actions = []
    olds = sorted(stale["old"], key=lambda p: p.stat().st_mtime)
    if olds and not out.exists():
        keep = olds.pop()
        keep.rename(out)
        actions.append(f"restored {out.name} from {keep.name}")
    for d in stale["tmp"] + olds:
        shutil.rmtree(d, ignore_errors=True)
        actions.append(f"removed {d.name}")
    return actions


# ---------------------------------------------------------------------- build keys
#: source files each group of the design depends on (paths relative to the project root;
#: a directory means every ``*.py`` below it)
SOURCES: dict[str, tuple[str, ...]] = {
    "interconnect": ("cgra", "canal/graph.py", "canal/passes.py", "canal/timing.py",
                     "canal/interconnect.py", "canal/config.py", "canal/cores.py",
                     "garnet/array.py", "garnet/params.py", "garnet/cores.py",
                     "canal/custom.py"),
    "fabric": ("canal/collateral.py", "garnet/collateral.py", "garnet/build.py"),
    "rtl": ("cgra", "canal", "garnet/array.py", "garnet/cores.py", "garnet/build.py", "peak",
            "lake"),
    # the writers of resources.json's parts: a group of their own (not part of ``rtl``)
    "resources": ("peak/resources.py", "lake/resources.py", "canal/resources.py"),
    # the GLB's generators (a design with a [glb] table: glb/, the column config paths in
    # the top, the system top); not part of ``rtl``, whose tiles do not depend on them
    "glb": ("garnet/glb",),
}
SOURCES["all"] = tuple(sorted({e for group in SOURCES.values() for e in group}))
#: distributions whose version is part of the RTL key
RTL_TOOLS = ("magma-lang", "circt", "hwtypes")


def _sha(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def source_hash(group: str) -> str:
    """sha256 over the source files of :data:`SOURCES` ``[group]`` (a directory without
    ``peak/rules``, the rule synthesiser, whose output has its own key, and without the
    resource-vector writers, which are listed by name where they count), plus the tool
    versions for ``rtl``."""

    h = hashlib.sha256()
    files: set[Path] = set()
    for entry in SOURCES[group]:
        p = ROOT / entry
        if p.is_dir():
            files |= {f for f in p.rglob("*.py")
                      if not f.relative_to(ROOT).as_posix().startswith("peak/rules/")
                      and f.relative_to(ROOT).as_posix() not in SOURCES["resources"]}
        elif p.is_file():
            files.add(p)
    for f in sorted(files):
        h.update(f.relative_to(ROOT).as_posix().encode() + b"\0")
        h.update(f.read_bytes() + b"\0")
    if group in ("rtl", "all"):
        for dist in RTL_TOOLS:
            try:
                h.update(f"{dist}=={md.version(dist)}".encode())
            except md.PackageNotFoundError:
                h.update(f"{dist}==?".encode())
    return h.hexdigest()


@dataclass
class Inputs:
    """Everything the keys are computed from (cheap: no hardware is generated)."""

    params: GarnetParams
    spec: type
    cores: dict[str, Any]           # layout kind (pe, mem, io) -> CoreSpec
    pe_hash: str
    mem_hash: str | None
    timing_hash: str
    ic_hash: str | None = None      # the interconnect build file's sha256 (SpecHashes)
    #: rows per pipeline stage of the per-column config paths (a design with a ``[glb]``
    #: table: ``config_pipeline_rows``; :class:`canal.rtl.ConfigColumns`); 0 = none
    config_columns: int = 0


@dataclass
class Keys:
    """sha256 keys of the design's groups (module docstring) and :func:`fast_key`."""

    interconnect: str
    fabric: str
    rtl: str
    design: str
    all: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"interconnect": self.interconnect, "fabric": self.fabric, "rtl": self.rtl,
                "design": self.design, "all": self.all}


@dataclass
class SpecHashes:
    """What a design's content depends on besides the parameters and the generator source:
    the PE spec (class and sha256 of its source), the Lake preset's hash (None without MEM
    tiles) and the delay table's sha256; ``ic_hash``: the sha256 of the interconnect build
    function's file (field ``interconnect``, :func:`canal.custom.source_hash`; None without
    one). Computed without importing the hardware
    generators (no magma), so an unchanged design is recognised in well under a second."""

    spec: type
    pe_hash: str
    mem_hash: str | None
    timing_hash: str
    ic_hash: str | None = None
    #: the pond's Lake spec hash (field ``pond``; None without a pond)
    pond_hash: str | None = None


def spec_hashes(params: GarnetParams) -> SpecHashes:
    from peak import spec_hash  # deferred: loads z3, pysmt, hwtypes, 1 more only when called

    spec = pe_spec(params.pe)
    kinds = {params.tile_kind(x, y) for x in range(params.width) for y in range(params.height)}
    mem_hash = None
    if "mem" in kinds:
        from lake.collateral import collateral  # deferred: loads lake.collateral, lake.lut only when called
        mem_hash = collateral(mem_spec(params))["spec_hash"]
    if params.measured_timing:
        from garnet.sta.measure import model_hash  # deferred: loads magma (canal.rtl), measured models only
        table = model_hash().encode()
    else:
        tp = table_path(params)
        table = Path(tp).read_bytes() if tp else default_table_text().encode()
    ic_hash = None
    if params.interconnect:
        ic_hash = ic_source_hash(params.interconnect)
    pond_hash = None
    if params.pond:
        from lake.collateral import collateral  # deferred: loads lake.collateral, lake.lut only when called
        pond_hash = collateral(pond_spec(params))["spec_hash"]
    return SpecHashes(spec, spec_hash(spec), mem_hash, hashlib.sha256(table).hexdigest(),
                      ic_hash, pond_hash)


def fast_key(params: GarnetParams, sh: SpecHashes, rules: bool,
             config_file: str | None) -> str:
    """One key over every input of the design (parameters, TOML path, rules switch, spec
    hashes, delay table, the source of every generator): equal keys mean every group key
    (:func:`compute_keys`) is equal, so nothing needs rebuilding."""
    return _sha("all", gc.DESIGN_SCHEMA, params.to_dict(), config_file, rules, sh.pe_hash,
                sh.mem_hash, sh.timing_hash, source_hash("all"),
                *((sh.ic_hash,) if sh.ic_hash else ()), *((sh.pond_hash,) if sh.pond_hash else ()))


def _inputs(params: GarnetParams, sh: SpecHashes) -> Inputs:
    from garnet.cores import io_core, mem_core, pe_core, pe_pond_core  # deferred: loads magma, z3, pysmt, 14 more only when called

    pe = pe_pond_core(sh.spec, pond_spec(params)) if params.pond else pe_core(sh.spec)
    if pe.info["spec_hash"] != sh.pe_hash:
        raise CollateralError(f"PE {params.pe}: spec hash {pe.info['spec_hash'][:12]} of the "
                              f"core differs from {sh.pe_hash[:12]}; the spec changed during "
                              f"the run: run `cgra rtl` again")
    kinds = {params.tile_kind(x, y) for x in range(params.width) for y in range(params.height)}
    cores: dict[str, Any] = {"pe": pe, "io": io_core(params.data_width)}
    if "mem" in kinds:
        cores["mem"] = mem_core(mem_spec(params))
    cores = {k: c for k, c in cores.items() if k in kinds}
    return Inputs(params, sh.spec, cores, sh.pe_hash, sh.mem_hash, sh.timing_hash,
                  sh.ic_hash)


def compute_keys(inp: Inputs, rules: bool, config_file: str | None) -> Keys:
    """The :class:`Keys` of a design (see the module docstring)."""
    from garnet.array import core_identity, core_interface  # deferred: loads magma, z3, pysmt, 14 more only when called

    p = inp.params
    ic = _sha("interconnect", p.subset(INTERCONNECT_FIELDS), inp.timing_hash,
              {k: core_interface(c) for k, c in sorted(inp.cores.items())},
              source_hash("interconnect"), *((inp.ic_hash,) if inp.ic_hash else ()))
    ident = {k: core_identity(c) for k, c in sorted(inp.cores.items())}
    rtl = _sha("rtl", ic, ident, inp.pe_hash, inp.mem_hash, p.flush_interval,
               source_hash("rtl"), *((("config_columns", inp.config_columns),
                                      source_hash("glb")) if inp.config_columns else ()),
               *((("fifo_tokens", p.fifo_tokens),) if p.fifo_tokens != 1 else ()))
    # a measured model is a function of the RTL (and the rules' instructions)
    fabric = _sha("fabric", ic, ident, inp.pe_hash, inp.mem_hash, source_hash("fabric"),
                  *((rtl, rules) if p.measured_timing else ()))
    design = _sha("design", gc.DESIGN_SCHEMA, p.to_dict(), config_file, rules,
                  source_hash("resources"))
    return Keys(ic, fabric, rtl, design)


# ---------------------------------------------------------------------- build cache
class BuildCache:
    """The build cache of ``cgra rtl`` (module docstring): ``interconnect/<key>.json``
    (the interconnect of this key passed the check) and ``rtl/<module>-<key>.json`` (CIRCT output of one
    module with its sub-modules, and its ports). Entries are written atomically and checked
    on read (schema, key, sha256 of the Verilog); a bad entry is a miss. Old entries are
    pruned (:meth:`prune`): the newest :data:`KEEP` per kind, :data:`MAX_BYTES` at most."""

    KEEP = {"interconnect": 16, "rtl": 64}
    MAX_BYTES = 128 << 20

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def _write(self, path: Path, data: bytes) -> None:
        """Write an entry atomically; a cache that cannot be written (read-only, moved
        away by a concurrent run on the same design) only costs the reuse."""
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(data)
            os.replace(tmp, path)
        except OSError:
            pass
        finally:
            tmp.unlink(missing_ok=True)

    def _touch(self, path: Path) -> None:
        try:
            os.utime(path)
        except OSError:
            pass                      # a read-only cache still serves hits

    # -- interconnect
    def _interconnect_path(self, key: str) -> Path:
        return self.root / "interconnect" / f"{key[:32]}.json"

    def interconnect_validated(self, key: str) -> bool:
        """Whether the interconnect of ``key`` passed :func:`garnet.array.check_interconnect`
        before (an unreadable or foreign entry: no)."""
        path = self._interconnect_path(key)
        try:
            doc = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return False
        if not isinstance(doc, dict) or doc.get("schema") != CACHE_SCHEMA \
                or doc.get("key") != key or doc.get("validated") is not True:
            return False
        self._touch(path)
        return True

    def put_interconnect_validated(self, key: str) -> None:
        self._write(self._interconnect_path(key), json.dumps(
            {"schema": CACHE_SCHEMA, "key": key, "validated": True}).encode())

    # -- modules
    def _module_path(self, module: str, key: str) -> Path:
        return self.root / "rtl" / f"{module}-{key[:24]}.json"

    def module(self, module: str, key: str) -> dict | None:
        """``{"module", "ports", "modules": [[name, verilog], ...]}`` or None."""
        path = self._module_path(module, key)
        if not path.is_file():
            return None
        try:
            doc = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return None
        if not isinstance(doc, dict) or doc.get("schema") != CACHE_SCHEMA \
                or doc.get("key") != key or doc.get("module") != module \
                or doc.get("sha256") != _sha(doc.get("modules"), doc.get("ports")):
            return None
        self._touch(path)
        return doc

    def put_module(self, module: str, key: str, ports: list[dict],
                   modules: list[tuple[str, str]]) -> dict:
        mods = [[n, t] for n, t in modules]
        doc = {"schema": CACHE_SCHEMA, "key": key, "module": module, "ports": ports,
               "modules": mods, "sha256": _sha(mods, ports)}
        self._write(self._module_path(module, key), json.dumps(doc).encode())
        return doc

    def prune(self) -> None:
        """Keep the newest :data:`KEEP` entries of each kind (by last use), at most
        :data:`MAX_BYTES` per kind (the newest entry always stays)."""
        for kind, keep in self.KEEP.items():
            d = self.root / kind
            if not d.is_dir():
                continue
            entries = sorted((f for f in d.iterdir() if not f.name.startswith(".")),
                             key=lambda f: f.stat().st_mtime, reverse=True)
            total = 0
            for i, f in enumerate(entries):
                total += f.stat().st_size
                if i >= keep or (i > 0 and total > self.MAX_BYTES):
                    f.unlink(missing_ok=True)


# ---------------------------------------------------------------------- RTL
def drive_clocks(top) -> None:
    """Drive every undriven clock-type input (CLK, RESET, ...) of every instance in the
    hierarchy of ``top`` from its definition's single source of that type -- what magma's
    ``wire_clocks`` pass does, with the same Verilog, but that pass rescans the whole
    definition for every instance (quadratic: ~10 s of a 32x16 compile); here the source is
    found once per definition. Definitions with no or several sources are left to magma
    (which warns)."""

    from magma.clock import ClockTypes  # deferred: loads magma, z3, pysmt, 14 more only when called
    from magma.is_definition import isdefinition  # deferred: loads magma, z3, pysmt, 14 more only when called
    from magma.passes.clock import get_output_clocks_in_defn, get_undriven_clocks_in_value  # deferred: loads magma, z3, pysmt, 14 more only when called

    seen: set = set()
    stack = [top]
    while stack:
        defn = stack.pop()
        if defn in seen or not isdefinition(defn):
            continue
        seen.add(defn)
        sources = {}
        for ct in ClockTypes:
            found = list(itertools.islice(get_output_clocks_in_defn(defn, ct), 2))
            if len(found) == 1:
                sources[ct] = found[0]
        if sources:
            with defn.open():
                for inst in defn.instances:
                    for port in inst.interface.inputs(include_clocks=True):
                        for ct, clk in sources.items():
                            for undriven in list(get_undriven_clocks_in_value(port, ct)):
                                undriven @= clk
        stack.extend(type(i) for i in defn.instances)


def compile_module(circuit, workdir: Path) -> list[tuple[str, str]]:
    """CIRCT Verilog of ``circuit`` (and every sub-module it defines), split per module
    (:func:`split_verilog`), dependencies first; ``workdir`` holds the temporary files."""
    from cgra.hdl import m  # deferred: loads magma, z3, pysmt, 14 more only when called


    workdir.mkdir(parents=True, exist_ok=True)
    base = workdir / circuit.name
    drive_clocks(circuit)
    with no_gc():
        m.compile(str(base), circuit, output="mlir-verilog")
    text = base.with_suffix(".v").read_text()
    for suffix in (".v", ".mlir"):
        base.with_suffix(suffix).unlink(missing_ok=True)
    return split_verilog(text)


@dataclass
class RtlOutput:
    """What :func:`generate_rtl` produced."""

    top: str
    modules: list[tuple[str, str]]          # (name, Verilog), dependencies first, top last
    ports: list[dict]                       # of the top (port_list format)
    compiled: list[str]                     # tile / top modules compiled in this run
    cached: list[str]                       # tile / top modules taken from the cache
    tile_ports: dict[str, list[dict]]       # tile module -> its ports
    #: the top again in blocks of this many columns (garnet.array.array_blocks; 0: none)
    hier_columns: int = 0
    hier_modules: list[tuple[str, str]] = field(default_factory=list)  # (name, Verilog), top last
    stages: list[tuple[str, float]] = field(default_factory=list)  # (stage, wall seconds)


def _core_content(inp: Inputs, core) -> str | None:
    """What a core's Verilog depends on beyond its name (the spec hashes)."""
    if core is None:
        return None
    if core.tag == "p":
        return core.info.get("spec_hash") + (core.info.get("pond_spec_hash") or "")
    if core.tag == "m":
        return inp.mem_hash
    return core.name


def generate_rtl(ic, inp: Inputs, cache: BuildCache, workdir: Path,
                 say: Step = lambda msg: None) -> RtlOutput:
    """The Verilog of the array: one CIRCT run per distinct tile module and the top written
    as text (:func:`garnet.array.array_top`), each taken from ``cache`` when its key is
    there (module docstring). Raises :class:`CollateralError` when two modules of one name
    differ, :class:`~cgra.errors.SpecError` when a tile lacks a port the top drives."""
    from canal.rtl import ConfigColumns, array_netlist, tile_circuit  # deferred: loads magma, z3, pysmt, 14 more only when called
    from garnet.array import array_blocks, array_top, block_columns, port_list, tile_shapes, top_name  # deferred: loads magma, z3, pysmt, 14 more only when called

    if flow_of(ic.graphs).ready_valid:
        return generate_rv_rtl(ic, inp, workdir, say)
    src = source_hash("rtl")
    say("tile shapes")
    shapes = tile_shapes(ic)
    first: dict[str, tuple[int, int]] = {}
    for xy in ic.tiles:
        first.setdefault(shapes[xy].module_name, xy)
    entries: dict[str, dict] = {}
    compiled: list[str] = []
    for mod, xy in first.items():
        key = _sha("tile", src, mod, _core_content(inp, ic.core(*xy)))
        ent = cache.module(mod, key)
        if ent is None:
            say(f"Verilog (CIRCT): {mod}")
            circ = tile_circuit(shapes[xy], ic.configs[xy], ic.core(*xy))
            ent = cache.put_module(mod, key, port_list(circ), compile_module(circ, workdir))
            compiled.append(mod)
        entries[mod] = ent
    top = top_name(ic, shapes, inp.params, config_columns=inp.config_columns)
    ident = repr((sorted((xy, s.module_name) for xy, s in shapes.items()),
                  sorted(ic.graphs), inp.params.flush_interval,
                  [(nid, tuple(g.fanin[nid])) for w, g in sorted(ic.graphs.items())
                   for nid in g.nodes if nid.startswith("SB:") and nid.endswith(":IN")],
                  *((inp.config_columns,) if inp.config_columns else ())))
    key = _sha("top", src, top, hashlib.sha256(ident.encode()).hexdigest(),
               *((source_hash("glb"),) if inp.config_columns else ()))
    tile_ports = {mod: e["ports"] for mod, e in entries.items()}
    # a design with a GLB: each column configured over its own path (garnet.glb.rtl)
    rows = ic.size[1]
    cc = ConfigColumns(f"glb_cfg_column_h{rows}_r{inp.config_columns}", rows) \
        if inp.config_columns else None
    net = None                          # the array netlist, made once for both tops
    ent = cache.module(top, key)
    if ent is None:
        say("Verilog (top level)")
        with no_gc():
            net = array_netlist(ic, inp.params.flush_interval, columns=cc)
        text, ports = array_top(ic, inp.params, shapes, tile_ports, top, net)
        mods = [(top, text)]
        if cc is not None:
            mods.insert(0, (cc.module, glb_column_verilog(rows, inp.config_columns,
                                                          cc.module)))
        ent = cache.put_module(top, key, ports, mods)
        compiled.append(top)
    # (the column blocks of canal.rtl.column_verilog do not carry column config paths)
    columns = block_columns(shapes, inp.params.width) if cc is None else 0
    hier_key = _sha("hier", key, columns)
    hier = cache.module(f"{top}.hier", hier_key)
    if hier is None:
        say("Verilog (top level in column blocks)")
        blocks = array_blocks(ic, inp.params, shapes, tile_ports, top, columns, net) \
            if columns else []
        hier = cache.put_module(f"{top}.hier", hier_key, [], blocks)
    modules: dict[str, str] = {}
    for mod in first:
        for name, text in entries[mod]["modules"]:
            if name in modules and modules[name] != text:
                raise CollateralError(f"rtl/: module {name} is generated twice with different "
                                      f"Verilog (in {mod} and before); two generators used the "
                                      f"same module name")
            modules.setdefault(name, text)
    if top in modules:
        raise CollateralError(f"rtl/: a tile defines a module named like the top {top}")
    out = list(modules.items()) + [tuple(mt) for mt in ent["modules"]]
    cached = [mod for mod in [*first, top] if mod not in compiled]
    return RtlOutput(top, out, ent["ports"], compiled, cached, tile_ports, columns,
                     [tuple(b) for b in hier["modules"]])


def generate_rv_rtl(ic, inp: Inputs, workdir: Path, say: Step = lambda msg: None
                    ) -> RtlOutput:
    """The Verilog of a ready-valid array (issue 33): :func:`canal.rv_rtl.rv_array` with the
    PE and MEM cores (their magma -> CIRCT Verilog, :func:`canal.rv_rtl.core_verilog`, once
    per core) in generated handshake wrappers, every skid FIFO site holding one initial
    token (so the array is transfer-equivalent to the static one: a pipeline register is
    one token), the IO tiles' fabric ports as top sockets named like the static IO ports
    (:data:`garnet.collateral.RV_IO_SOCKETS`, each with ``_valid`` and ``_ready``). Top module
    ``<name>_<W>x<H>_<hash>``. Raises :class:`ConfigError` for split FIFOs (their initial
    tokens are not built) and :class:`~cgra.errors.SpecError` from the generators."""
    from canal.rv_rtl import core_verilog, rv_array  # deferred: loads magma, z3, pysmt, 14 more only when called

    cores = {}
    for xy in ic.tiles:
        core = ic.core(*xy)
        if core is not None and core.tag != "I" and core.name not in cores:
            say(f"Verilog (CIRCT): {core.name}")
            cores[core.name] = core_verilog(core, workdir)
    say("Verilog (ready-valid array)")
    names = {a.format(w=w): b.format(w=w) for w in ic.graphs for a, b in gc.RV_IO_SOCKETS.items()}
    arr = rv_array(ic, inp.params.name, cores, fifo_tokens=inp.params.fifo_tokens,
                   socket_names=names)
    ports = [{"name": n, "direction": d, "width": w} for n, d, w in arr.ports]
    return RtlOutput(arr.top, [(mod.name, mod.text) for mod in arr.modules], ports,
                     [mod.name for mod in arr.modules], [], {})


class RtlWorker:
    """:func:`generate_rtl` in a forked worker process, so the caller writes the routing
    collateral and the rules meanwhile, and the magma circuits (millions of Python
    objects: ~4 s to free at 32x16) die with the worker (``os._exit``, no teardown). The
    worker writes the module cache itself and sends back the :class:`RtlOutput` (without
    the circuit). :meth:`stop` kills it (interrupts, errors of the caller)."""

    def __init__(self, proc, conn):
        self.proc = proc
        self.conn = conn

    @classmethod
    def start(cls, ic, inp: Inputs, cache: BuildCache, workdir: Path) -> "RtlWorker":

        ctx = multiprocessing.get_context("fork")
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_rtl_worker,
                           args=(send, recv, os.getpid(), ic, inp, cache.root, workdir),
                           name="garnet-rtl", daemon=True)
        proc.start()
        send.close()
        return cls(proc, recv)

    def result(self) -> RtlOutput:
        """Wait for the worker; re-raises its error (a :class:`CgraError` as itself,
        anything else, a bug, as :class:`InternalError` with the worker's traceback)."""
        try:
            kind, payload = self.conn.recv()
        except EOFError:
            self.proc.join()
            raise CollateralError(f"rtl/: the Verilog worker process died (exit code "
                                  f"{self.proc.exitcode}) before sending the RTL") from None
        finally:
            self.conn.close()
        self.proc.join()
        if kind == "ok":
            return payload
        if isinstance(payload, BaseException):
            raise payload
        raise InternalError(f"rtl/: Verilog generation failed in the worker process:\n"
                            f"{payload}")

    def stop(self) -> None:
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(10)
            if self.proc.is_alive():
                self.proc.kill()
                self.proc.join()
        self.conn.close()


def _rtl_worker(conn, parent_end, parent_pid: int, ic, inp: Inputs, cache_root: Path,
                workdir: Path) -> None:
    """Body of :class:`RtlWorker` (in the forked child; multiprocessing ends it with
    ``os._exit``). It dies with its parent (``kill -9`` of ``cgra rtl``): SIGKILL on the
    parent's death (:func:`cgra.procs.die_with_parent`), and it closes its inherited copy of
    the parent's end of the pipe, ``parent_end``, so that sending the RTL to a dead parent
    fails (EPIPE) instead of blocking forever on a full pipe that it reads itself."""
    die_with_parent(parent_pid)
    parent_end.close()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)     # stop() ends it at once
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # Ctrl-C: the parent stops it

    try:
        marks: list[tuple[str, float]] = []
        with no_gc():       # the child ends with os._exit: no garbage left to collect
            rtl = generate_rtl(ic, inp, BuildCache(cache_root), workdir,
                               lambda msg: marks.append((msg, time.perf_counter())))
        rtl.stages = stage_durations(marks, time.perf_counter())
        conn.send(("ok", rtl))
    except CgraError as exc:
        try:
            conn.send(("error", exc))
        except (pickle.PicklingError, TypeError, AttributeError):
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
    except Exception:  # noqa: BLE001 - sent to the parent, which raises it
        conn.send(("error", traceback.format_exc()))
    finally:
        conn.close()


def _top_ports_of(ports: list[dict]) -> list[dict]:
    """design.json ``ports`` ([{name, direction input/output, width}]) from a port list."""
    return [{"name": p["name"], "direction": "input" if p["direction"] == "in" else "output",
             "width": p["width"]} for p in ports]


# ---------------------------------------------------------------------- generate
@dataclass
class _Previous:
    """The design already in ``out`` when it passed its manifest check."""

    root: Path
    design: dict
    keys: dict[str, str]


def _previous(out: Path) -> tuple[_Previous | None, str]:
    if not (out / "design.json").is_file():
        return None, ""
    try:
        design = gc.read_design(out)
        gc.verify_files(out, design)
    except CollateralError as exc:
        return None, f"previous design not reused: {exc}"
    return _Previous(out, design, gc.read_build(design).get("keys", {})), ""


_FABRIC_FILES = ("routing", "timing.json", "config_map.json")


def _link_tree(src: Path, dst: Path, rels: list[str]) -> None:
    """Hard-link (copy when linking fails) the files ``rels`` of ``src`` into ``dst``."""
    for rel in rels:
        s, d = src / rel, dst / rel
        d.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(s, d)
        except OSError:
            shutil.copy2(s, d)


def _group_files(prev: _Previous, prefixes: tuple[str, ...]) -> list[str]:
    return [rel for rel in prev.design["files"]
            if any(rel == p or rel.startswith(p + "/") for p in prefixes)]


def _changed_fields(prev: _Previous | None, params: GarnetParams) -> list[str]:
    if prev is None:
        return []
    old = prev.design.get("params") or {}
    new = params.to_dict()
    return [k for k in new if old.get(k) != new[k]]


def generate(params: GarnetParams, out: str | Path, *, rules: bool = True,
             rules_dir: str | Path | None = None, jobs: int | None = None,
             step: Step | None = None, builder=None,
             config_file: str | Path | None = None,
             cache_dir: str | Path | None = None,
             glb: GlbParams | None = None) -> BuildResult:
    """Generate the design of ``params`` into ``out``, incrementally (module docstring).
    ``config_file``: the TOML the parameters came from (recorded in design.json, so stale
    collateral errors can name the exact regeneration command).

    ``rules=False`` skips the rule table (RTL-only iterations); ``rules_dir`` is the shared
    rule-table directory PEak caches in (default ``build/rules``, as ``make rules``);
    ``jobs``: processes for rule synthesis (default: every core); ``builder``: see
    :mod:`garnet.rules`; ``cache_dir``: the build cache (default ``<out>/.cache``);
    ``step(msg)`` is called before each stage (progress display). Raises
    :class:`~cgra.errors.ConfigError` for bad parameters or an unusable interconnect
    (before anything is written), ``SpecError`` / ``RuleError`` / ``CollateralError`` from
    the generators.
    """
    from garnet.rules import ir_hash, provide_rules, rules_key  # deferred: loads z3, pysmt, hwtypes, 1 more only when called

    t0 = time.perf_counter()
    marks: list[tuple[str, float]] = []

    def say(msg: str) -> None:
        marks.append((msg, time.perf_counter()))
        if step is not None:
            step(msg)
    jobs = jobs or os.cpu_count() or 1
    validate(params)
    flow = parse_flow_control(params.flow_control, params.fifo_kind, params.widths)
    if any(k == "split" for _, k in flow.kinds):
        where = f"{config_file}: " if config_file is not None else ""
        raise ConfigError(f"{where}field 'fifo_kind' = {params.fifo_kind!r}: `cgra rtl` builds "
                          "ready-valid arrays with skid FIFOs only (a site holds the initial "
                          "token of the static register it replaces; split halves do not); set "
                          "fifo_kind = \"skid\"")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for action in clean_stale_siblings(out):
        say(action)
    cfg = str(config_file) if config_file is not None else None

    say("keys")
    sh = spec_hashes(params)
    fast = fast_key(params, sh, rules, cfg)
    if glb is not None:     # the [glb] table: glb/glb.v and glb/glb.json (garnet.glb)
        fast = _sha("all+glb", fast, glb.to_dict(), source_hash("glb"))
    prev, why_not = _previous(out)
    if why_not:
        say(why_not)
    pkeys = prev.keys if prev is not None else {}
    prev_rules = (prev.design.get("rules") or {}) if prev is not None else {}
    reuse: dict[str, bool] = {}
    if rules:
        stamp = gc.read_stamp(out / "rules") if prev is not None else None
        reuse["rules"] = stamp is not None and prev_rules.get("source") != "skipped" \
            and stamp.get("key") == rules_key(sh.pe_hash, ir_hash())
    else:
        reuse["rules"] = prev is not None and prev_rules.get("source") == "skipped"
    counts = _tile_counts(params)
    cache = BuildCache(cache_dir if cache_dir is not None else out / CACHE_DIR_NAME)

    def unchanged() -> BuildResult:
        """Nothing to do: the previous design, untouched."""
        d = prev.design

        def lazy_ic():                  # after the run: no progress display any more
            return _interconnect(params, _inputs(params, sh), compute_keys(
                _inputs(params, sh), rules, cfg), cache, lambda msg: None)[0]
        return BuildResult(
            out, d["top"], list(d["rtl"]["modules"]), d["rtl"]["bytes"],
            "skipped" if not rules else "previous design", sh.pe_hash, counts,
            time.perf_counter() - t0, None, dict(prev_rules.get("counts") or {}),
            {"interconnect": "reused", "rtl": "reused", "fabric": "reused", "docs": "reused"},
            stages=stage_durations(marks, time.perf_counter()),
            _lazy={"interconnect": lazy_ic,
                   "circuit": lambda: _top_declaration(d["top"], d["ports"])})

    if prev is not None and reuse["rules"] and pkeys.get("all") == fast:
        return unchanged()              # no hardware generator imported (~1 s saved)

    inp = _inputs(params, sh)
    if glb is not None:         # the GLB configures each column over its own path
        inp = replace(inp, config_columns=glb.config_pipeline_rows)
    keys = compute_keys(inp, rules, cfg)
    keys.all = fast
    docs = _docs(params, inp)
    docs.update(_glb_docs(glb))
    reuse.update({g: pkeys.get(g) == getattr(keys, g) for g in ("fabric", "rtl", "design")})
    reuse["docs"] = prev is not None and all(
        (out / name).is_file() and (out / name).read_bytes() == data
        for name, data in docs.items()) and (out / GLB_DIR).is_dir() == (glb is not None)
    if prev is not None and all(reuse.values()):
        return unchanged()

    changed = _reasons(prev, why_not, params, inp, keys, pkeys)
    ic = None
    status = {"interconnect": "reused", "fabric": "reused" if reuse["fabric"] else
              "regenerated", "rtl": "reused" if reuse["rtl"] else "regenerated",
              "docs": "reused" if reuse["docs"] else "regenerated"}
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    if cache_dir is None and not out.exists():
        cache = BuildCache(tmp / CACHE_DIR_NAME)      # moves into place with the design
    old = None
    frozen = False
    worker: RtlWorker | None = None
    moved: list[tuple[Path, Path]] = []
    try:
        # -- RTL: CIRCT in a worker process, forked as soon as the graphs exist, while
        # this one checks the interconnect and writes the other collateral
        def start_worker(ic) -> None:
            nonlocal worker
            if not reuse["rtl"]:
                say("Verilog (CIRCT)")
                worker = RtlWorker.start(ic, inp, cache, tmp / "_circt")

        # -- interconnect (validated before anything else is written to the design)
        if not (reuse["fabric"] and reuse["rtl"]):
            with no_gc():           # graphs of ~10^6 objects: full collections rescan them
                ic, status["interconnect"] = _interconnect(params, inp, keys, cache, say, cfg,
                                                           False, start_worker)
                # and would, at the first collection after this block (0.35 s at 64x32):
                # the graphs live until the end of the run, so the collector skips them
                # (gc.freeze; unfrozen, not collected, when this function returns)
                pygc.freeze()
                frozen = True

        # -- routing collateral (graphs, layout, timing, config map); a measured model
        # waits for the RTL (and the rules: per-op PE delays) and is written below
        measure_later = params.measured_timing and not reuse["fabric"]
        if reuse["fabric"]:
            _link_tree(out, tmp, _group_files(prev, _FABRIC_FILES))
        elif not measure_later:
            say("routing graphs")
            with no_gc():
                _write_routing(tmp, params, ic)
        for name, data in docs.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_bytes(data)
        if ic is not None and not ic.timing.classes:
            ic.timing = ic.timing.resolve(ic.graphs)   # (the routing collateral was reused)

        # -- rules
        if rules:
            say("rules")
            previous = out / "rules" if prev is not None and (out / "rules").is_dir() else None
            shared = Path(rules_dir) if rules_dir is not None else DEFAULT_RULES_DIR
            rr = provide_rules(inp.spec, params.pe, inp.pe_hash, tmp / "rules", previous,
                               shared, jobs, builder)
            rule_counts, rules_source = rr.counts, rr.source
        else:
            rules_source, rule_counts = "skipped", {}

        if worker is None:
            d = prev.design
            _link_tree(out, tmp, _group_files(prev, ("rtl",)))
            top, names, vbytes = d["top"], list(d["rtl"]["modules"]), d["rtl"]["bytes"]
            top_ports = d["ports"]
            hier = d["rtl"].get("hier")
            compiled: list[str] = []
            cached: list[str] = []
            worker_stages = []
        else:
            say("Verilog (CIRCT): waiting for the worker")
            rtl = worker.result()
            worker_stages = [(f"worker: {name}", s) for name, s in rtl.stages]
            worker = None
            shutil.rmtree(tmp / "_circt", ignore_errors=True)
            (tmp / "rtl").mkdir()
            for n, body in rtl.modules:
                (tmp / "rtl" / f"{n}.v").write_text(body)
            names = [n for n, _ in rtl.modules]
            (tmp / "rtl" / "filelist.f").write_text("".join(f"{n}.v\n" for n in names))
            top, vbytes = rtl.top, sum(len(b.encode()) for _, b in rtl.modules)
            top_ports = _top_ports_of(rtl.ports)
            compiled, cached = rtl.compiled, rtl.cached
            hier = _write_hier(tmp / "rtl", rtl)

        # -- the measured timing model: tiles synthesised and timed, graphs re-timed
        if measure_later:
            say("timing model (yosys + OpenSTA per tile)")
            shared = Path(rules_dir) if rules_dir is not None else DEFAULT_RULES_DIR
            _measure(ic, tmp, shared.parent / TIMING_DIR_NAME, rules, jobs)
            say("routing graphs")
            with no_gc():
                _write_routing(tmp, params, ic)

        # -- design
        say("collateral")
        write_resources(tmp, params, inp, ic, counts, docs["pe.json"],
                        tmp / "rules" / rr.files[0] if rules else None)
        design = _design_doc(params, cfg, counts, inp, top, names, vbytes, top_ports,
                             rules, rules_source, rule_counts)
        design["rtl"]["hier"] = hier
        if glb is not None:             # the array and its GLB as one top (garnet.glb.rtl)
            design["system"] = _write_system(tmp, glb, top, names, top_ports)
        design["build"] = gc.build_doc(keys.as_dict(), status, compiled)
        gc.write_design(tmp, design)        # last: it records the sha256 of every file

        # -- move into place (the cache and, for unchanged RTL, the Verilator cache too)
        say("install")
        if cache_dir is None and (out / CACHE_DIR_NAME).is_dir() \
                and not (tmp / CACHE_DIR_NAME).exists():
            moved.append((out / CACHE_DIR_NAME, tmp / CACHE_DIR_NAME))
        if reuse["rtl"] and (out / "sim").is_dir():
            moved.append((out / "sim", tmp / "sim"))
        for a, b in moved:
            a.rename(b)
        if out.exists():
            old = out.parent / f".{out.name}.old-{os.getpid()}"
            if old.exists():
                shutil.rmtree(old)
            out.rename(old)
        tmp.rename(out)
        if old is not None:
            shutil.rmtree(old)
    except BaseException:
        if worker is not None:
            worker.stop()
        if old is not None and old.exists() and not out.exists():
            old.rename(out)             # interrupted between the two renames
        for a, b in moved:              # the old design stays: give it its caches back
            if b.exists() and not a.exists() and a.parent.is_dir():
                b.rename(a)
        if frozen:
            pygc.unfreeze()
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if frozen:
        pygc.unfreeze()
    say("cache prune")
    BuildCache(out / CACHE_DIR_NAME if cache_dir is None else cache_dir).prune()
    t_end = time.perf_counter()
    result = BuildResult(out, top, names, vbytes, rules_source, inp.pe_hash, counts,
                         t_end - t0, None, rule_counts, status, compiled, changed,
                         cached, stage_durations(marks, t_end) + worker_stages,
                         _interconnect=ic)
    final_cache = BuildCache(out / CACHE_DIR_NAME if cache_dir is None else cache_dir)
    result._lazy = {"interconnect": lambda: _interconnect(params, inp, keys, final_cache,
                                                          lambda msg: None)[0],
                    "circuit": lambda: _top_declaration(top, top_ports)}
    return result


def _graph_model(params: GarnetParams) -> TimingModel:
    """The delay model the graphs are built on: the design's table, or for a measured
    model the published table with every width of the design mapped to its 16-bit figures
    (provisional: :func:`_measure` re-times every edge once the tiles are measured)."""
    tm = TimingModel.load(table_path(params))
    if not params.measured_timing:
        return tm
    table = dict(tm.table)
    table["width_aliases"] = {str(w): "16" for w in params.widths if w != 16
                              and str(w) not in table["switch_box_hop"]["pe"]}
    return TimingModel(validate_table(table, "measured (provisional)"),
                       "measured (provisional)", dict(tm.aliases))


def _measure(ic, tmp: Path, cache: Path, rules: bool, jobs: int) -> None:
    """Measure the tiles of ``tmp/rtl`` (:func:`garnet.sta.measure.measure_design`, cached
    under ``cache`` by tile RTL: :data:`TIMING_DIR_NAME` beside the shared rules), make the
    result ``ic``'s timing model and re-time its graphs (:func:`canal.timing.retime`)."""
    from garnet.sta.measure import measure_design  # deferred: loads magma (canal.rtl), measured models only

    table = measure_design(ic, tmp / "rtl", cache,
                           tmp / "rules" if rules else None, jobs=min(jobs, 4))
    tm = TimingModel.from_table(table, "measured")
    ic.timing = tm.resolve(ic.graphs)
    retime(ic.graphs, ic.timing)


def _reasons(prev: _Previous | None, why_not: str, params: GarnetParams, inp: Inputs,
             keys: Keys, pkeys: dict) -> list[str]:
    """Short phrases saying why groups are rebuilt (for the summary line)."""
    if prev is None:
        return ["previous design failed its manifest check" if why_not else
                "no previous design"]
    if not pkeys:
        return ["the previous design has no build keys"]
    out = []
    fields = _changed_fields(prev, params)
    if fields:
        out.append("changed: " + ", ".join(fields))
    old = prev.design.get("spec_hashes") or {}
    if old.get("pe") != inp.pe_hash:
        out.append("PE spec edited")
    if old.get("mem") != inp.mem_hash:
        out.append("MEM spec changed")
    if not out and pkeys.get("interconnect") != keys.interconnect:
        out.append("interconnect build function, generator source or delay table "
                   "changed" if inp.ic_hash else
                   "interconnect generator source or delay table changed")
    elif not out and (pkeys.get("rtl") != keys.rtl or pkeys.get("fabric") != keys.fabric):
        out.append("generator source changed")
    return out


def _interconnect(params: GarnetParams, inp: Inputs, keys: Keys, cache: BuildCache,
                  say: Step, source: str | None = None, resolve_timing: bool = True,
                  built: Callable[[Any], None] | None = None):
    """``(Interconnect, "reused" | "regenerated")``: the graphs of ``keys.interconnect``,
    built (:func:`garnet.array.build_interconnect`) and validated
    (:func:`garnet.array.check_interconnect`, whose pass the cache records), or, when the
    cache says this key passed before, built without the check ("reused": the graphs are
    a function of the key, so they are the ones that passed). ``built(ic)`` is called as
    soon as the graphs exist, before the check (the caller forks its RTL worker there; a
    failed check raises and the caller stops it). ``resolve_timing=False`` leaves the timing
    model's path classes to the caller (``ic.timing = ic.timing.resolve(ic.graphs)``)."""
    from garnet.array import build_interconnect, check_interconnect  # deferred: loads magma, z3, pysmt, 14 more only when called

    validated = cache.interconnect_validated(keys.interconnect)
    say("interconnect graphs (validated before)" if validated else "interconnect graphs")
    ic = build_interconnect(params, timing=_graph_model(params),
                            resolve_timing=resolve_timing)
    if built is not None:
        built(ic)
    if validated:
        return ic, "reused"
    say("interconnect check")
    check_interconnect(ic, params, source)
    cache.put_interconnect_validated(keys.interconnect)
    return ic, "regenerated"


def _top_declaration(top: str, ports: list[dict]):
    """A magma declaration of the top module ``top`` with the ports of design.json
    (``[{name, direction input/output, width}]``; ``CLK`` a clock, ``RESET`` a reset): what
    a fault testbench drives (the Verilog is the text in rtl/)."""
    from garnet.array import tile_declaration  # deferred: loads magma, z3, pysmt, 14 more only when called

    kinds = {"CLK": "clock", "RESET": "reset"}
    return tile_declaration(top, [
        {"name": p["name"], "direction": "in" if p["direction"] == "input" else "out",
         "type": kinds.get(p["name"], "bit" if p["width"] == 1 else "bits"),
         "width": p["width"]} for p in ports])


def _tile_counts(params: GarnetParams) -> dict[str, int]:
    counts: dict[str, int] = {}
    for x in range(params.width):
        for y in range(params.height):
            kind = {"io": "IO", "mem": "MEM", "pe": "PE"}[params.tile_kind(x, y)]
            counts[kind] = counts.get(kind, 0) + 1
    return counts


def _glb_docs(glb: GlbParams | None) -> dict[str, bytes]:
    """``glb/glb.v`` (:func:`garnet.glb.rtl.glb_verilog`) and ``glb/glb.json``
    (:func:`garnet.glb.collateral.collateral`) of a design with a GLB; none without."""
    if glb is None:
        return {}
    return {f"{GLB_DIR}/glb.v": glb_verilog(glb).encode(),
            f"{GLB_DIR}/glb.json": glb_json(glb).encode()}


def _docs(params: GarnetParams, inp: Inputs) -> dict[str, bytes]:
    """pe.json and mem.json (bytes, as :func:`garnet.collateral.write_json` writes them)."""
    from garnet.cores import mem_collateral, pe_collateral  # deferred: loads magma, z3, pysmt, 14 more only when called

    mem_doc = mem_collateral(mem_spec(params)) if params.mem_ratio else gc.no_mem_doc()
    return {"pe.json": (json.dumps(pe_collateral(inp.spec, inp.cores["pe"]), indent=1) + "\n")
            .encode(),
            "mem.json": (json.dumps(mem_doc, indent=1) + "\n").encode()}


def write_resources(dest: Path, params: GarnetParams, inp: Inputs, ic, counts: dict[str, int],
                    pe_json: bytes, table: Path | None) -> Path:
    """Write ``dest/resources.json`` (:func:`garnet.collateral.resources_doc`): PEak's
    resource vector of the PE (:func:`peak.resources.pe_resources`) from ``pe_json`` (the
    bytes of pe.json) and the rule table ``table`` (``None``: built with ``--no-rules``, the
    ops are left ``null``), Lake's of the MEM preset (:func:`lake.resources.mem_resources`;
    ``null`` without MEM tiles), Canal's of the interconnect
    (:func:`canal.resources.interconnect_resources`) from ``ic``'s graphs, or, when ``ic``
    is ``None`` (the routing collateral was reused), from ``dest/routing/graph_<w>.json``,
    and the tile ``counts`` (``PE``/``MEM``/``IO`` -> tiles). Raises
    :class:`CollateralError` from the readers of the rule table and the graphs."""
    from lake.resources import mem_resources  # deferred: loads numpy and Lake's encoder only when called
    from peak.collateral import PEInfo  # deferred: loads z3, pysmt, hwtypes only when called
    from peak.resources import pe_resources  # deferred: loads z3, pysmt, hwtypes only when called
    from peak.rules.format import read_table  # deferred: loads z3, pysmt, hwtypes only when called

    table_file = read_table(table, inp.pe_hash) if table is not None else None
    pe = pe_resources(PEInfo.from_json(json.loads(pe_json)["peak"], "pe.json (peak)"),
                      table_file)
    mem = mem_resources(mem_spec(params)) if "mem" in inp.cores else None
    graphs = ic.graphs.values() if ic is not None else [
        canal_coll.load_json(Path(dest) / "routing" / f"graph_{w}.json")
        for w in params.widths]
    doc = gc.resources_doc(pe, mem, interconnect_resources(graphs, params.data_width),
                           params.width, params.height, params.data_width, counts)
    return gc.write_json(Path(dest) / gc.RESOURCES, doc)


def _write_hier(rtl_dir: Path, rtl: RtlOutput) -> dict | None:
    """Write the top in column blocks (:attr:`RtlOutput.hier_modules`) to ``rtl/hier/``
    with ``rtl/hier/filelist.f`` (paths relative to ``rtl/``: the tile modules, then the
    blocks and that top); returns design.json's ``rtl.hier`` (``columns`` per block,
    ``filelist``, ``modules``) or None when the array has no block hierarchy."""
    if not rtl.hier_columns:
        return None
    (rtl_dir / "hier").mkdir()
    for n, body in rtl.hier_modules:
        (rtl_dir / "hier" / f"{n}.v").write_text(body)
    files = [f"{n}.v" for n, _ in rtl.modules if n != rtl.top] + \
        [f"hier/{n}.v" for n, _ in rtl.hier_modules]
    (rtl_dir / "hier" / "filelist.f").write_text("".join(f + "\n" for f in files))
    return {"columns": rtl.hier_columns, "filelist": "rtl/hier/filelist.f",
            "modules": [n for n, _ in rtl.hier_modules]}


def _write_system(out: Path, glb: GlbParams, top: str, names: list[str],
                  top_ports: list[dict]) -> dict:
    """Write the system top of a design with a GLB (:func:`garnet.glb.rtl.system_verilog`:
    the array ``top`` and the ``glb``) to ``glb/<name>.v`` with ``glb/system.f`` (paths
    relative to ``rtl/``: the array's modules ``names``, ``../glb/glb.v``, the system top);
    returns design.json's ``system`` (``top``, ``filelist``, ``ports`` as ``ports``).
    Raises :class:`ConfigError` for a GLB that does not fit the array."""
    name = f"{top}_glb_{_sha('system', glb.to_dict())[:8]}"
    ports = [(q["name"], "in" if q["direction"] == "input" else "out", int(q["width"]))
             for q in top_ports]
    text, sys_ports = glb_system_verilog(glb, top, ports, name)
    (out / GLB_DIR / f"{name}.v").write_text(text)
    files = [f"{n}.v" for n in names] + [f"../{GLB_DIR}/glb.v", f"../{GLB_DIR}/{name}.v"]
    (out / GLB_DIR / "system.f").write_text("".join(f + "\n" for f in files))
    return {"top": name, "filelist": f"{GLB_DIR}/system.f",
            "ports": _top_ports_of([{"name": n, "direction": d, "width": w}
                                    for n, d, w in sys_ports])}


def _design_doc(params: GarnetParams, cfg: str | None, counts: dict, inp: Inputs, top: str,
                names: list[str], vbytes: int, top_ports: list[dict], rules: bool,
                rules_source: str, rule_counts: dict) -> dict:
    from garnet.cores import tags  # deferred: loads magma, z3, pysmt, 14 more only when called

    flow = parse_flow_control(params.flow_control, params.fifo_kind, params.widths)
    layer = parse_dynamic(params.dynamic or None, params.widths)
    return {
        "name": params.name,
        "config_file": cfg,
        "params": params.to_dict(),
        "array": {"width": params.width, "height": params.height, "tiles": counts},
        "spec_hashes": {"pe": inp.pe_hash, "mem": inp.mem_hash},
        "top": top,
        "rtl": {"filelist": "rtl/filelist.f", "files": [f"rtl/{n}.v" for n in names],
                "modules": names, "bytes": vbytes},
        "combinational_cycle": None,       # refused by garnet.array.check_interconnect
        "rules": {"source": rules_source, "spec_hash": inp.pe_hash if rules else None,
                  "counts": rule_counts},
        "ports": top_ports,
        "protocol": {
            "reset": "RESET synchronous active high; hold >= 1 rising edge",
            "clk_en": "1 = run, 0 = stall (config writes still happen)",
            "config_write": "config_addr/config_data/config_write sampled at the rising "
                            "edge; 1 write per cycle",
            "config_read": "read_data (combinational) = addressed register while "
                           "config_read = 1, else 0",
            "flush": f"row y sees flush {params.flush_interval and 'y // ' + str(params.flush_interval)} "
                     f"cycles late (spine registers not stalled)" if params.flush_interval
                     else "flush reaches every tile in the same cycle",
            "io": f"glb2io_{params.data_width}_X<xx>_Y<yy> -> io2f_{params.data_width} "
                  f"(fabric), f2io_{params.data_width} -> io2glb_{params.data_width}"
                  f"_X<xx>_Y<yy>: combinational; latency = enabled pipeline "
                  f"registers on the route + PE DELAY / DELAY<k> input cycles",
        },
        "tags": tags(params.data_width),
    } | ({"flow_control": {
        "tracks": {str(w): k for w, k in flow.kinds},
        "protocol": "every socket <port> has <port>_valid and <port>_ready (a transfer when "
                    "both are 1 at a rising edge with clk_en = 1); IO sockets are named like "
                    "the static IO ports; every skid FIFO site starts with one token (0), PE "
                    "and MEM tiles fire (clk_en of the core) when every used input is valid "
                    "and every used output can be taken: token k of a stream is the static "
                    "array's value in cycle k"}
        | ({"dynamic": layer.to_params() | {
            "width": layer.width,
            # the thesis's name (Table 3.2): static links, VCs, buffers, flit width, skid
            "fabric_name": str(FabricName("H", params.tracks, layer.vcs, layer.buffers,
                                          layer.flit, "db")),
            "protocol": "a VC router per tile (canal.dynamic): tables at features 1..5, "
                        "injection / ejection fields in feature 6 (dyn); an ejection "
                        "buffer first gives its initial tokens (0), so a dynamic route "
                        "with k tokens is a static route with k registers"}}
           if layer is not None else {})} if flow.ready_valid else {})


def write_fabric(dest: Path, params: GarnetParams, ic, spec: type, pe) -> None:
    """Write the fabric collateral of interconnect ``ic`` into ``dest``: the routing graphs
    (JSON and text) and layout, ``timing.json``, ``pe.json`` (PE ``spec``, core ``pe``),
    ``mem.json`` and ``config_map.json``; formats in :mod:`garnet.collateral`. No RTL, no
    rules, no design.json (the caller writes it last, with :func:`garnet.collateral.write_design`)."""
    from garnet.cores import mem_collateral, pe_collateral  # deferred: loads magma, z3, pysmt, 14 more only when called

    _write_routing(dest, params, ic)
    gc.write_json(Path(dest) / "pe.json", pe_collateral(spec, pe))
    gc.write_json(Path(dest) / "mem.json", mem_collateral(mem_spec(params))
                  if params.mem_ratio else gc.no_mem_doc())


def _write_routing(dest: Path, params: GarnetParams, ic) -> None:
    """The routing graphs (JSON and text), layout, ``timing.json`` and ``config_map.json``
    of ``ic`` (the ``fabric`` group); resolves ``ic.timing`` first when it is not (from the
    representative edges the graph dumps return)."""
    from garnet.cores import tags  # deferred: loads magma, z3, pysmt, 14 more only when called

    routing = Path(dest) / "routing"
    routing.mkdir(parents=True, exist_ok=True)
    reps = {}
    for w, g in sorted(ic.graphs.items(), reverse=True):
        reps[w] = canal_coll.dump_graph(g, routing / f"graph_{w}.json",
                                        routing / f"graph_{w}.txt", ic.timing)
    if not ic.timing.classes:   # from the dumps' columns: a few hundred edges per width
        ic.timing = ic.timing.resolve(ic.graphs, edges=reps)
    rows = canal_coll.layout(next(iter(ic.graphs.values())))
    (routing / "layout.txt").write_text("\n".join(rows) + "\n")
    gc.write_json(routing / "layout.json",
                  gc.layout_doc(params.width, params.height, rows, tags(params.data_width)))
    ic.timing.save(Path(dest) / "timing.json")
    gc.write_config_map(Path(dest) / "config_map.json", ic.tiles, ic.configs)
