"""``cgra rtl``: generate the array RTL and all compiler collateral into ``build/<design>/``.

Layout of the output directory (schema ``garnet.design/1``; see docs/garnet.md)::

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
    design.json            schema version, parameters, spec hashes, top module and ports

Everything is written into a temporary sibling directory ``.<name>.tmp-<pid>`` which
replaces ``<out>`` only when complete, so an interrupted run never leaves a half-written
design (the previous design, if any, stays intact until the final rename).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from cgra.errors import CollateralError

from garnet.params import GarnetParams, validate

SCHEMA = "garnet.design/1"
CONFIG_MAP_SCHEMA = "garnet.config_map/1"
PE_SCHEMA = "garnet.pe/1"
MEM_SCHEMA = "garnet.mem/1"
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


def _write_json(path: Path, doc: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")


def _hash_json(doc: object) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def _lake_hash(preset_name: str) -> str:
    """sha256 over the Lake spec object and the source of the Lake hardware modules."""
    import inspect

    import lake.config
    import lake.rtl
    import lake.spec

    h = hashlib.sha256(repr(lake.spec.preset(preset_name)).encode())
    for mod in (lake.spec, lake.config, lake.rtl):
        h.update(inspect.getsource(mod).encode())
    return h.hexdigest()


def generate(params: GarnetParams, out: str | Path, *, rules: bool = True,
             rules_dir: str | Path | None = None, jobs: int = 1,
             step: Step | None = None, builder=None) -> BuildResult:
    """Generate the design of ``params`` into ``out`` (see the module docstring).

    ``rules=False`` skips the rule table (RTL-only iterations); ``rules_dir`` is the shared
    rule-table directory PEak caches in (default ``build/rules``, as ``make rules``);
    ``jobs``: processes for rule synthesis; ``builder``: see :mod:`garnet.rules`;
    ``step(msg)`` is called before each stage (progress display). Raises
    :class:`~cgra.errors.ConfigError` for bad parameters (before any generation),
    ``SpecError`` / ``RuleError`` / ``CollateralError`` from the generators.
    """
    import magma as m

    from canal import collateral as canal_coll
    from garnet.array import array_circuit, build_interconnect
    from garnet.cores import TAGS, load_pe_spec, mem_collateral, pe_core
    from garnet.rules import provide_rules

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 100_000))
    t0 = time.perf_counter()
    say = step or (lambda msg: None)
    validate(params)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    try:
        spec = load_pe_spec(params.pe)
        pe = pe_core(spec)
        pe_hash = pe.info["spec_hash"]

        # -- interconnect and routing collateral
        say("interconnect graphs")
        ic = build_interconnect(params)
        from garnet.array import combinational_cycle
        cycle = combinational_cycle(ic)
        if cycle is not None:
            say(f"warning: the interconnect has a combinational cycle ({' -> '.join(cycle[:6])} "
                f"...); Verilator models will be slow. Make pipeline registers on one "
                f"horizontal and one vertical side mandatory (register_bypass_sides)")
        say("routing graphs")
        routing = tmp / "routing"
        routing.mkdir()
        graph_hashes = {}
        for w, g in sorted(ic.graphs.items(), reverse=True):
            doc = canal_coll.to_json(g)
            graph_hashes[str(w)] = _hash_json(doc)
            _write_json(routing / f"graph_{w}.json", doc)
            canal_coll.dump_text(g, routing / f"graph_{w}.txt")
        rows = canal_coll.layout(next(iter(ic.graphs.values())))
        (routing / "layout.txt").write_text("\n".join(rows) + "\n")
        _write_json(routing / "layout.json", {"width": params.width, "height": params.height,
                                              "rows": rows, "tags": TAGS,
                                              "site_tags": {"I": ["I", "i"], "p": ["p"],
                                                            "m": ["m"]}})

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

        # -- PE / MEM / config map / design
        say("collateral")
        from peak import normal_form
        from peak.assembler import assembler
        asm = assembler(normal_form(spec).isa)
        configs = ic.configs
        pe_doc = _pe_doc(spec, params.pe, pe, asm)
        _write_json(tmp / "pe.json", pe_doc)
        mem_doc = None
        if params.mem_ratio:
            from garnet.cores import mem_core
            mem = mem_core(params.mem_preset)
            mem_doc = {**mem_collateral(params.mem_preset), "schema": MEM_SCHEMA,
                       "lake_schema": mem.info.get("schema"), "tag": "m", "spec_hash": _lake_hash(params.mem_preset),
                       "config": _core_regs(mem.config_fields)}
        _write_json(tmp / "mem.json", mem_doc if mem_doc is not None else
                    {"schema": MEM_SCHEMA, "name": None, "note": "mem_ratio = 0: no MEM tiles"})
        cmap_rows = []
        for row in ic.config_map_rows():
            info = ic.tiles[(row["x"], row["y"])]
            cmap_rows.append({"x": row["x"], "y": row["y"], "tag": info.tag or None,
                              "core": info.core, **{k: v for k, v in row.items()
                                                    if k not in ("x", "y")}})
        _write_json(tmp / "config_map.json", {
            "schema": CONFIG_MAP_SCHEMA,
            "address": "reg << 24 | feature << 16 | x << 8 | y",
            "data_width": 32,
            "columns": ["x", "y", "tag", "core", "feature", "feature_name", "field", "node",
                        "reg", "lo", "width", "field_lo", "addr"],
            "tiles": [{"x": x, "y": y, "features": [
                {"feature": f.index, "name": f.name, "registers": f.num_regs}
                for f in tc.features]} for (x, y), tc in configs.items()],
            "fields": cmap_rows})
        counts: dict[str, int] = {}
        for info in ic.tiles.values():
            kind = {"p": "PE", "m": "MEM", "I": "IO"}.get(info.tag, "empty")
            counts[kind] = counts.get(kind, 0) + 1
        top_ports = _top_ports(circ)
        design = {
            "schema": SCHEMA,
            "name": params.name,
            "params": params.to_dict(),
            "array": {"width": params.width, "height": params.height, "tiles": counts},
            "spec_hashes": {"pe": pe_hash,
                            "mem": mem_doc["spec_hash"] if mem_doc else None,
                            "routing_graphs": graph_hashes},
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
        _write_json(tmp / "design.json", design)

        # -- move into place
        say("install")
        old = None
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
        raise
    return BuildResult(out, circ.name, names, vbytes, rules_source, pe_hash, counts,
                       time.perf_counter() - t0, cycle, circ, ic, rule_counts)


def _pe_doc(spec, pe_path: str, pe, asm) -> dict:
    """pe.json: PEak's own document (:func:`peak.collateral.pe_json`, schema peak.pe/1) plus
    what the array adds: ``module`` (Verilog core), ``tag``, ``layout`` (= ``fields``, the
    assembler layout), ``config_slices`` (where ``inst`` lives in feature 0) and the
    core latency."""
    try:
        from peak.collateral import pe_json
        doc = pe_json(spec)
    except ImportError:
        doc = {"schema": "peak.pe/1", "spec": pe_path, "name": spec.__name__,
               "spec_hash": pe.info["spec_hash"], "instruction_width": asm.width,
               "fields": asm.layout(),
               "inputs": [{"name": p.name, "width": p.width} for p in pe.inputs()],
               "outputs": [{"name": p.name, "width": p.width} for p in pe.outputs()],
               "config": {"field": "inst", "registers": (asm.width + 31) // 32}}
    doc["spec"] = pe_path
    doc.update({"garnet_schema": PE_SCHEMA, "module": pe.name, "tag": "p",
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
    import magma as m

    ports = []
    for name, T in circ.IO.items():
        d = "input" if T.is_input() else "output"
        width = len(T) if issubclass(T, m.Bits) else 1
        ports.append({"name": name, "direction": d, "width": width})
    return ports
