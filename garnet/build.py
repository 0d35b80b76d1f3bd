"""``cgra rtl``: generate the array RTL and all compiler collateral into ``build/<design>/``.

Layout of the output directory (schema ``garnet.design/2``; formats owned by
:mod:`garnet.collateral`, which lists who owns each file; see docs/garnet.md)::

    rtl/<module>.v         one Verilog file per distinct module (CIRCT output, split)
    rtl/<top>.v            the top module (also listed last in filelist.f)
    rtl/filelist.f         all files, dependencies first (verilator -f / any simulator)
    rules/                 the PE rewrite-rule table + garnet_rules.json (key stamp)
    routing/graph_<w>.json routing graph per bit width (canal.routing_graph/1)
    routing/graph_<w>.txt  the same in the plain-text router format
    routing/layout.txt     one line per row y, one PnR tag per column x (p, m, I)
    routing/layout.json    {"width", "height", "rows": [...], "tags": {...}}
    pe.json                PE spec, hash, instruction width, assembler layout, ports
    mem.json               MEM preset: capacity, ports, config fields (mapper MemSpec keys)
    config_map.json        every config field: tile, feature, register, bits, address
    timing.json            the delay model (canal.timing/1) the routing graphs' delays use
    design.json            schema version, parameters, spec hashes, top module and ports,
                           and the sha256 of every file above (written last)

Everything is written into a temporary sibling directory ``.<name>.tmp-<pid>`` which
replaces ``<out>`` only when complete, so an interrupted run never leaves a half-written
design (the previous design, if any, stays intact until the final rename). Directories left
by a killed run (``.<name>.tmp-<pid>``, ``.<name>.old-<pid>`` of a dead ``pid``) are cleaned
up by the next run (:func:`clean_stale_siblings`).
"""
from __future__ import annotations

import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import psutil

from cgra.errors import CollateralError

from garnet import collateral as gc
from garnet.params import GarnetParams, validate

DEFAULT_RULES_DIR = Path("build/rules")

Step = Callable[[str], None]


@dataclass
class BuildResult:
    """What :func:`generate` produced. Times in seconds, sizes in bytes."""

    out: Path
    top: str
    modules: list[str]
    verilog_bytes: int
    rules_source: str          # "previous design" | "cache" | "synthesised" | "skipped"
    pe_hash: str
    tile_counts: dict[str, int]
    seconds: float
    combinational_cycle: list[str] | None = None
    circuit: object = field(repr=False, default=None)
    interconnect: object = field(repr=False, default=None)

    rule_counts: dict[str, int] = field(default_factory=dict)

    def _rule_counts(self) -> str:
        if not self.rule_counts:
            return ""
        return ": " + ", ".join(f"{n} {k}" for k, n in sorted(self.rule_counts.items()))

    @property
    def rules_reused(self) -> bool:
        return self.rules_source in ("previous design", "cache")

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
                f"{self.verilog_bytes / 1e6:.2f} MB; {rules}; {self.seconds:.1f} s -> "
                f"{self.out}")


_MODULE_RE = re.compile(r"^module\s+([A-Za-z_][A-Za-z0-9_$]*)", re.M)


def split_verilog(text: str) -> list[tuple[str, str]]:
    """Split CIRCT output into ``[(module name, text)]`` in file order (dependencies first).
    Text outside modules (comments, macros) is prepended to every module so each file is
    self-contained. Raises :class:`CollateralError` on unbalanced module/endmodule."""
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
        elif line.strip():
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


def generate(params: GarnetParams, out: str | Path, *, rules: bool = True,
             rules_dir: str | Path | None = None, jobs: int = 1,
             step: Step | None = None, builder=None,
             config_file: str | Path | None = None) -> BuildResult:
    """Generate the design of ``params`` into ``out`` (see the module docstring).
    ``config_file``: the TOML the parameters came from (recorded in design.json, so stale
    collateral errors can name the exact regeneration command).

    ``rules=False`` skips the rule table (RTL-only iterations); ``rules_dir`` is the shared
    rule-table directory PEak caches in (default ``build/rules``, as ``make rules``);
    ``jobs``: processes for rule synthesis; ``builder``: see :mod:`garnet.rules`;
    ``step(msg)`` is called before each stage (progress display). Raises
    :class:`~cgra.errors.ConfigError` for bad parameters (before any generation),
    ``SpecError`` / ``RuleError`` / ``CollateralError`` from the generators.
    """
    from cgra.hdl import m

    from canal.timing import TimingModel
    from garnet.array import array_circuit, build_interconnect
    from garnet.cores import TAGS, load_pe_spec, pe_core
    from garnet.rules import provide_rules

    t0 = time.perf_counter()
    say = step or (lambda msg: None)
    validate(params)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for action in clean_stale_siblings(out):
        say(action)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    old = None
    try:
        spec = load_pe_spec(params.pe)
        pe = pe_core(spec)
        pe_hash = pe.info["spec_hash"]

        # -- interconnect and routing collateral
        say("interconnect graphs")
        ic = build_interconnect(params, timing=TimingModel.load(params.timing or None))
        from garnet.array import combinational_cycle
        cycle = combinational_cycle(ic)
        if cycle is not None:
            say(f"warning: the interconnect has a combinational cycle ({' -> '.join(cycle[:6])} "
                f"...); Verilator models will be slow. Make pipeline registers on one "
                f"horizontal and one vertical side mandatory (register_bypass_sides)")
        say("routing graphs")
        write_fabric(tmp, params, ic, spec, pe)

        # -- RTL
        say("array circuit")
        circ = array_circuit(ic, params)
        say("Verilog (CIRCT)")
        mlir_dir = tmp / "_circt"
        mlir_dir.mkdir()
        m.compile(str(mlir_dir / circ.name), circ, output="mlir-verilog")
        text = (mlir_dir / f"{circ.name}.v").read_text()
        shutil.rmtree(mlir_dir)
        rtl = tmp / "rtl"
        rtl.mkdir()
        parts = split_verilog(text)
        names = [n for n, _ in parts]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise CollateralError(f"rtl/: modules {dup} are defined twice in the CIRCT output; "
                                  f"two different generators used the same module name")
        if names[-1] != circ.name:
            raise CollateralError(f"rtl/: the last module is {names[-1]}, expected the top "
                                  f"{circ.name}")
        for n, body in parts:
            (rtl / f"{n}.v").write_text(body)
        (rtl / "filelist.f").write_text("".join(f"{n}.v\n" for n in names))
        vbytes = sum(len(b.encode()) for _, b in parts)

        # -- rules
        if rules:
            say("rules")
            prev = out / "rules" if (out / "rules").is_dir() else None
            shared = Path(rules_dir) if rules_dir is not None else DEFAULT_RULES_DIR
            rr = provide_rules(spec, params.pe, pe_hash, tmp / "rules", prev, shared, jobs,
                               builder)
            rule_counts = rr.counts
            rules_source = rr.source
        else:
            rules_source = "skipped"
            rule_counts = {}

        # -- design
        say("collateral")
        mem_doc = gc.read_mem(tmp / "mem.json", "internal")
        counts: dict[str, int] = {}
        for info in ic.tiles.values():
            kind = {"p": "PE", "m": "MEM", "I": "IO"}.get(info.tag, "empty")
            counts[kind] = counts.get(kind, 0) + 1
        top_ports = _top_ports(circ)
        design = {
            "name": params.name,
            "config_file": str(config_file) if config_file is not None else None,
            "params": params.to_dict(),
            "array": {"width": params.width, "height": params.height, "tiles": counts},
            "spec_hashes": {"pe": pe_hash,
                            "mem": mem_doc["spec_hash"] if mem_doc else None},
            "top": circ.name,
            "rtl": {"filelist": "rtl/filelist.f", "files": [f"rtl/{n}.v" for n in names],
                    "modules": names, "bytes": vbytes},
            "combinational_cycle": cycle,
            "rules": {"source": rules_source, "spec_hash": pe_hash if rules else None,
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
                "io": "glb2io_16_X<xx>_Y<yy> -> io2f_16 (fabric), f2io_16 -> "
                      "io2glb_16_X<xx>_Y<yy>: combinational; latency = enabled pipeline "
                      "registers on the route + PE DELAY inputs",
            },
            "tags": TAGS,
        }
        gc.write_design(tmp, design)        # last: it records the sha256 of every file

        # -- move into place
        say("install")
        if out.exists():
            old = out.parent / f".{out.name}.old-{os.getpid()}"
            if old.exists():
                shutil.rmtree(old)
            out.rename(old)
        tmp.rename(out)
        if old is not None:
            shutil.rmtree(old)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and old.exists() and not out.exists():
            old.rename(out)             # interrupted between the two renames
        raise
    return BuildResult(out, circ.name, names, vbytes, rules_source, pe_hash, counts,
                       time.perf_counter() - t0, cycle, circ, ic, rule_counts)


def write_fabric(dest: Path, params: GarnetParams, ic, spec: type, pe) -> None:
    """Write the fabric collateral of interconnect ``ic`` into ``dest``: the routing graphs
    (JSON and text) and layout, ``timing.json``, ``pe.json`` (PE ``spec``, core ``pe``),
    ``mem.json`` and ``config_map.json``; formats in :mod:`garnet.collateral`. No RTL, no
    rules, no design.json (the caller writes it last, with :func:`garnet.collateral.write_design`)."""
    from canal import collateral as canal_coll
    from garnet.cores import TAGS, mem_collateral, mem_core

    routing = Path(dest) / "routing"
    routing.mkdir(parents=True, exist_ok=True)
    for w, g in sorted(ic.graphs.items(), reverse=True):
        canal_coll.dump_json(g, routing / f"graph_{w}.json", ic.timing)
        canal_coll.dump_text(g, routing / f"graph_{w}.txt")
    rows = canal_coll.layout(next(iter(ic.graphs.values())))
    (routing / "layout.txt").write_text("\n".join(rows) + "\n")
    gc.write_json(routing / "layout.json",
                  gc.layout_doc(params.width, params.height, rows, TAGS))
    ic.timing.save(Path(dest) / "timing.json")
    gc.write_json(Path(dest) / "pe.json", _pe_doc(spec, pe))
    mem_doc = None
    if params.mem_ratio:
        mem_doc = gc.mem_doc(mem_collateral(params.mem_preset),
                             _core_regs(mem_core(params.mem_preset).config_fields))
    gc.write_json(Path(dest) / "mem.json", mem_doc if mem_doc is not None else gc.no_mem_doc())
    cmap_rows = []
    for row in ic.config_map_rows():
        info = ic.tiles[(row["x"], row["y"])]
        cmap_rows.append({"x": row["x"], "y": row["y"], "tag": info.tag or None,
                          "core": info.core, **{k: v for k, v in row.items()
                                                if k not in ("x", "y")}})
    gc.write_json(Path(dest) / "config_map.json", gc.config_map_doc(cmap_rows, [
        {"x": x, "y": y, "features": [
            {"feature": f.index, "name": f.name, "registers": f.num_regs}
            for f in tc.features]} for (x, y), tc in ic.configs.items()]))


def _pe_doc(spec, pe) -> dict:
    """pe.json: PEak's own document (:func:`peak.collateral.pe_json`, schema peak.pe/1, whose
    ``spec`` is a reference :func:`peak.load_spec` resolves in any process) plus what the
    array adds: ``module`` (Verilog core), ``tag``, ``layout`` (= ``fields``, the assembler
    layout), ``config_slices`` (where ``inst`` lives in feature 0) and the core latency."""
    from peak.collateral import pe_json

    doc = pe_json(spec)
    doc.update({"garnet_schema": gc.PE_GARNET_SCHEMA, "module": pe.name, "tag": "p",
                "layout": doc["fields"], "config_slices": _core_regs(pe.config_fields),
                "latency": {"cycles": 0, "note": "outputs are combinational in the inputs "
                            "and the PE state; an input in DELAY mode adds 1 cycle"}})
    return doc


def _core_regs(fields) -> dict:
    """Where each core field lives inside feature 0: [{field, reg, lo, width, field_lo}]."""
    from cgra.config import pack_fields

    slices = pack_fields(tuple(fields))
    return {"feature": 0, "registers": (max(s.reg for s in slices) + 1) if slices else 0,
            "slices": [{"field": s.name, "reg": s.reg, "lo": s.lo, "width": s.width,
                        "field_lo": s.field_lo} for s in slices]}


def _top_ports(circ) -> list[dict]:
    """[{name, direction, width}] of the top module (magma view: In = input)."""
    from cgra.hdl import m

    ports = []
    for name, T in circ.IO.items():
        d = "input" if T.is_input() else "output"
        width = len(T) if issubclass(T, m.Bits) else 1
        ports.append({"name": name, "direction": d, "width": width})
    return ports
