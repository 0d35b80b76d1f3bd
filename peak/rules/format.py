"""The rule-table file format: the one reader and writer of rule files and table files.

Pure (no solver, no hardware imports): the mapper reads rule tables through this module, the
synthesiser (:mod:`peak.rules.table`) writes them through it, and the verifier
(:mod:`peak.rules.rule`) checks the :class:`Rule` records it produces.

Rule file (one per rule, ``<out>/<PE>/<target>.json``), schema ``"peak-rewrite-rule"``,
version :data:`RULE_VERSION`::

    {
      "schema": "peak-rewrite-rule", "version": 1,
      "target": "coreir.add[in1=const]",      # op, plus which data inputs are constants
      "op": "coreir.add", "width": 16,          # IR op name (CoreIR genref) and width (bits)
      "const_inputs": ["in1"],                  # IR inputs fed by coreir.const
      "preconditions": [{"port": "in1", "op": "ult", "value": 16}],   # on those constants
      "pe": "PE", "spec_hash": "<sha256>",      # the PE spec the rule was proved on
      "ir_hash": "<sha256>",                    # peak.ir.library_hash()
      "cost": 1,                                # PEs used
      "priority": 2,                            # IR nodes covered (mapper: highest first)
      "pattern": {"nodes": [...], "outputs": {"out": "n0"}},   # see below
      "instances": [{
          "id": "pe0",
          "inst": {"alu": 0, "data1_mode": 2, ...},   # every instruction field (ints)
          "inst_tags": {"alu": "Add", ...},         # enum fields by member name (of a Sum:
                                                    # the tag and the selected variant's)
          "inst_bits": "0x...",                      # assembled, constant fields 0
          "const_fields": {"data1_const": {"port": "in1", "lo": 37, "width": 16}},
          "inputs": {"data0": {"kind": "ir", "port": "in0"},
                     "data1": {"kind": "free"},       # don't care (any value works)
                     "bit0": {"kind": "tie", "value": 0},   # drive the constant
                     ...}                              # composite rules also use
                                                       # {"kind": "wire", "instance": "n0",
                                                       #  "port": "res"}
      }],
      "outputs": {"out": {"instance": "pe0", "port": "res"}}
    }

To configure a PE for the rule: take ``inst_bits`` and OR in each IR constant at its
``const_fields`` position (``value << lo``, ``width`` bits), i.e. ``inst`` with the
constant fields replaced by the IR constants. Connect each PE input as its binding says.
A rule with ``preconditions`` applies only when the constants satisfy them.

``pattern`` is the IR DAG the rule covers: ``nodes`` in topological order, each
``{"id", "op", "args": {port: source}}`` where a source is ``$<port>`` (a rule input),
``k_<port>`` / another node id; constant nodes are ``{"op": "coreir.const", "value":
"#<port>"}`` (the rule's constant ``<port>``); ``outputs`` names the node of each output.

Table file ``<out>/<PE>.rules.json``, schema ``"peak-rule-table"``, version
:data:`TABLE_VERSION`::

    {"schema": "peak-rule-table", "version": 1,
     "pe": "PE", "spec_hash": "<sha256>", "ir_hash": "<sha256>", "width": 16,
     "policy": {"ties": "auto"},
     "entries": [{"target": "coreir.add", "op": "coreir.add", "status": "found",
                  "rule": "PE/coreir.add.json", "cost": 1, "priority": 1},
                 {"target": "pattern.muladd", "op": "pattern.muladd", "status": "none",
                  "reason": "no instruction and binding implements it"}, ...]}

``status`` is ``found`` (``rule`` is the rule file, relative to the table's directory),
``none`` (the PE cannot implement the target) or ``timeout`` (z3 gave up; not a proof).
Next to the table, ``<PE>.timing.json`` records per target the time, method and action of
the run that produced it (not part of the format the mapper reads).

The shared rules directory (``cgra rules --out DIR``, default ``build/rules``) is a
content-addressed cache plus one readable *view* per PE class name::

    DIR/cache/<spec_hash[:16]>-<variant>/<PE>.rules.json    one cache entry per (PE spec
    DIR/cache/<spec_hash[:16]>-<variant>/<PE>/<target>.json  hash, IR library hash, width,
    DIR/cache/<spec_hash[:16]>-<variant>/<PE>.timing.json    binding policy): never shared
                                                             by two specs
    DIR/<PE>.rules.json, DIR/<PE>/<target>.json, DIR/<PE>.timing.json
                                 the view: a copy of the entry of the last completed run
                                 for a PE class named <PE> (what ``read_table(DIR)`` reads)

``<variant>`` is ``sha256(json [ir_hash, width, policy])[:8]`` (:func:`entry_name`). Every
file is written through a temporary sibling and ``os.replace``; writers hold an ``fcntl``
lock on the entry directory (:func:`locked`) and, for the view, on ``DIR``. Rule files are
written before the table that names them, so a reader never sees a table naming a missing
rule file.

Errors: every reader raises :class:`cgra.errors.CollateralError` naming the file and the
problem, with ``cgra rules`` / ``cgra rtl`` as the fix.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from cgra.errors import CollateralError
from peak.ir import Precondition
from peak.assembler import assembler
from peak.normalize import normal_form

RULE_SCHEMA = "peak-rewrite-rule"
RULE_VERSION = 1
TABLE_SCHEMA = "peak-rule-table"
TABLE_VERSION = 1
STATUSES = ("found", "none", "timeout")
_CONST_OPS = ("coreir.const", "corebit.const")


def _regen(path: str | Path) -> str:
    return (f"regenerate the rules with `cgra rules --pe <module:Class> --out "
            f"{Path(path).parent}` (or `cgra rtl`)")


def _check_version(d: Any, schema: str, version: int, where: str | Path, what: str) -> None:
    if not isinstance(d, dict) or d.get("schema") != schema:
        raise CollateralError(f"{where}: not a {what} (schema {schema!r} expected); "
                              f"{_regen(where)}")
    if d.get("version") != version:
        raise CollateralError(f"{where}: {what} version {d.get('version')} is not {version}; "
                              f"{_regen(where)}")


@dataclass
class InputBinding:
    """How one PE input is driven: ``kind`` ``ir`` (IR input ``port``), ``free`` (any
    value), ``tie`` (constant ``value``) or ``wire`` (output ``port`` of ``instance``)."""

    kind: str
    port: str | None = None
    value: int | None = None
    instance: str | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind}
        if self.kind == "ir":
            d["port"] = self.port
        elif self.kind == "tie":
            d["value"] = self.value
        elif self.kind == "wire":
            d["instance"], d["port"] = self.instance, self.port
        return d

    @staticmethod
    def from_json(d: dict[str, Any], where: str) -> "InputBinding":
        kind = d.get("kind") if isinstance(d, dict) else None
        if kind not in ("ir", "free", "tie", "wire"):
            raise CollateralError(f"{where}: input binding kind {kind!r} is not "
                                  f"ir/free/tie/wire")
        value = d.get("value")
        return InputBinding(kind, d.get("port"), None if value is None else int(value),
                            d.get("instance"))


@dataclass
class Instance:
    """One configured PE of a rule: instruction field values ``inst`` (ints; constant
    fields 0), ``const_fields`` = instruction field -> rule constant port, ``inputs`` = PE
    input -> binding."""

    id: str
    inst: dict[str, int]
    const_fields: dict[str, str]
    inputs: dict[str, InputBinding]


@dataclass
class Rule:
    """A rewrite rule (see the module docstring for the JSON form)."""

    target: str
    op: str
    width: int
    const_inputs: list[str]
    preconditions: list[Precondition]
    pe: str
    spec_hash: str
    ir_hash: str
    instances: list[Instance]
    outputs: dict[str, tuple[str, str]]
    pattern: dict[str, Any]
    priority: int
    cost: int = field(init=False)

    def __post_init__(self) -> None:
        self.cost = len(self.instances)

    # -- covering view (what instruction selection orders rules by) ------------------------
    @property
    def root_output(self) -> str:
        """The output the pattern is rooted at (``out`` when the rule has it)."""
        return "out" if "out" in self.outputs else next(iter(self.outputs))

    @property
    def root_op(self) -> str:
        root = self.pattern["outputs"][self.root_output]
        return next(n["op"] for n in self.pattern["nodes"] if n["id"] == root)

    @property
    def n_ops(self) -> int:
        """IR ops covered (constant nodes not counted)."""
        return sum(1 for n in self.pattern["nodes"] if n["op"] not in _CONST_OPS)

    @property
    def n_consts(self) -> int:
        """Rule constants folded into instruction fields."""
        return sum(len(i.const_fields) for i in self.instances)

    def order(self) -> tuple:
        """Covering order: more IR ops, more folded constants, higher priority, fewer PEs."""
        return (-self.n_ops, -self.n_consts, -self.priority, self.cost, self.target)

    # -- JSON --------------------------------------------------------------------------
    def to_json(self, spec: type) -> dict[str, Any]:
        """JSON-ready dict; ``spec`` supplies the instruction layout (tags, bit offsets)."""

        asm = assembler(normal_form(spec).isa)
        insts = []
        for ins in self.instances:
            tags = {}
            for f in asm.live_fields(ins.inst):      # a Sum: the selected variant's fields
                if f.tags is not None:
                    names = [n for n, c in f.tags.items() if c == ins.inst.get(f.name)]
                    tags[f.name] = names[0] if names else None
            bits = 0
            for f in asm.fields:
                bits |= (ins.inst.get(f.name, 0) & ((1 << f.width) - 1)) << f.lo
            insts.append({
                "id": ins.id,
                "inst": {f.name: ins.inst[f.name] for f in asm.fields if f.name in ins.inst},
                "inst_tags": tags,
                "inst_bits": hex(bits),
                "const_fields": {fn: {"port": port, "lo": asm.field(fn).lo,
                                      "width": asm.field(fn).width}
                                 for fn, port in sorted(ins.const_fields.items())},
                "inputs": {k: v.to_json() for k, v in ins.inputs.items()},
            })
        return {
            "schema": RULE_SCHEMA, "version": RULE_VERSION,
            "target": self.target, "op": self.op, "width": self.width,
            "const_inputs": list(self.const_inputs),
            "preconditions": [p.to_json() for p in self.preconditions],
            "pe": self.pe, "spec_hash": self.spec_hash, "ir_hash": self.ir_hash,
            "cost": self.cost, "priority": self.priority,
            "pattern": self.pattern,
            "instances": insts,
            "outputs": {k: {"instance": i, "port": p} for k, (i, p) in self.outputs.items()},
        }

    @staticmethod
    def from_json(d: Any, where: str = "rule") -> "Rule":
        """Parse a rule document; :class:`CollateralError` naming ``where`` and the key on
        any schema problem."""
        _check_version(d, RULE_SCHEMA, RULE_VERSION, where, "rule file")
        try:
            insts = [Instance(str(i["id"]), {k: int(v) for k, v in i["inst"].items()},
                              {fn: str(c["port"]) for fn, c in i["const_fields"].items()},
                              {k: InputBinding.from_json(v, f"{where}: input {k}")
                               for k, v in i["inputs"].items()})
                     for i in d["instances"]]
            outputs = {str(k): (str(v["instance"]), str(v["port"]))
                       for k, v in d["outputs"].items()}
            if not insts or not outputs:
                raise ValueError("a rule needs at least one instance and one output")
            pattern = d["pattern"]
            if not isinstance(pattern, dict) or not isinstance(pattern.get("nodes"), list):
                raise ValueError("pattern has no node list")
            return Rule(str(d["target"]), str(d["op"]), int(d["width"]),
                        [str(c) for c in d["const_inputs"]],
                        [Precondition(str(p["port"]), str(p["op"]), int(p["value"]))
                         for p in d["preconditions"]],
                        str(d["pe"]), str(d["spec_hash"]), str(d["ir_hash"]), insts, outputs,
                        pattern, int(d["priority"]))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CollateralError(f"{where}: malformed rule ({type(e).__name__}: {e}); "
                                  f"{_regen(where)}") from None


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise CollateralError(f"{path}: {what} is missing; {_regen(path)}") from None
    except (OSError, json.JSONDecodeError) as e:
        raise CollateralError(f"{path}: cannot read {what} ({e}); {_regen(path)}") from None


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write ``text`` to ``path`` through a temporary sibling and a rename, so a reader never
    sees a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        if isinstance(text, bytes):
            tmp.write_bytes(text)
        else:
            tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


@contextlib.contextmanager
def locked(directory: Path, on_wait: Callable[[Path], None] | None = None) -> Iterator[None]:
    """Hold an exclusive ``fcntl.flock`` on ``directory`` (created if missing) for the
    ``with`` block; ``on_wait(directory)`` is called first if another process holds it.
    The lock goes with the process (released if it dies)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait(directory)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)                # closing the descriptor releases the lock


def write_rule(rule: Rule, spec: type, path: Path) -> None:
    """Write ``rule`` as stable JSON (sorted keys, 2-space indent) to ``path``."""
    write_atomic(Path(path), json.dumps(rule.to_json(spec), indent=2, sort_keys=True) + "\n")


def read_rule(path: Path) -> Rule:
    """Parse a rule file; :class:`CollateralError` naming the file if unreadable/malformed."""
    return Rule.from_json(_read_json(Path(path), "rule file"), str(path))


def rule_filename(target: str) -> str:
    """File name of a target's rule: ``coreir.add[in1=const]`` -> ``coreir.add__in1_const.json``."""
    return (target.replace("[", "__").replace("]", "").replace("=const", "_const")
            .replace(",", "_")) + ".json"


def table_path(out: Path, pe_name: str) -> Path:
    """The table file of PE ``pe_name`` in directory ``out`` (in a shared rules directory:
    the view)."""
    return Path(out) / f"{pe_name}.rules.json"


def timing_path(table: Path) -> Path:
    """The timing file next to a table file (``<PE>.timing.json``)."""
    table = Path(table)
    return table.with_name(table.name.replace(".rules.json", ".timing.json"))


CACHE_DIR = "cache"
"""Sub-directory of a shared rules directory holding the cache entries."""


def entry_name(spec_hash: str, ir_hash: str, width: int, policy: dict[str, Any]) -> str:
    """Directory name of the cache entry of one (spec hash, IR library hash, width in bits,
    binding policy as JSON): ``<spec_hash[:16]>-<sha256([ir_hash, width, policy])[:8]>``."""
    variant = hashlib.sha256(json.dumps([ir_hash, int(width), policy], sort_keys=True)
                             .encode()).hexdigest()[:8]
    return f"{spec_hash[:16]}-{variant}"


def entry_dir(root: Path, spec_hash: str, ir_hash: str, width: int,
              policy: dict[str, Any]) -> Path:
    """The cache entry directory of that key in the shared rules directory ``root``."""
    return Path(root) / CACHE_DIR / entry_name(spec_hash, ir_hash, width, policy)


def cached_tables(root: Path, pe_name: str, spec_hash: str | None = None) -> list[Path]:
    """Table files of PE class ``pe_name`` in the cache of ``root`` (only the entries of
    ``spec_hash`` if given), newest first (by modification time)."""
    pattern = f"{spec_hash[:16]}-*" if spec_hash else "*"
    found = [p for p in (Path(root) / CACHE_DIR).glob(f"{pattern}/{pe_name}.rules.json")
             if p.is_file()]
    return sorted(found, key=lambda p: (-p.stat().st_mtime_ns, str(p)))


def read_header(path: Path) -> dict[str, Any] | None:
    """The header of a table file (``pe``, ``spec_hash``, ``ir_hash``, ``width``,
    ``policy``, and the list of ``targets``) without reading rule files; ``None`` if the
    file is missing or not a table of this version (a cache probe, never raises)."""
    try:
        d = json.loads(Path(path).read_text())
        if d.get("schema") != TABLE_SCHEMA or d.get("version") != TABLE_VERSION:
            return None
        return {"pe": str(d["pe"]), "spec_hash": str(d["spec_hash"]),
                "ir_hash": str(d["ir_hash"]), "width": int(d["width"]),
                "policy": dict(d["policy"]),
                "targets": [str(e["target"]) for e in d["entries"]]}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


@dataclass
class TableEntry:
    """One target of a table file: ``status`` found/none/timeout, the ``rule`` when found
    (loaded from its file), the ``reason`` otherwise."""

    target: str
    op: str
    status: str
    rule: Rule | None = None
    reason: str = ""


@dataclass
class TableFile:
    """A table file as stored: the PE name, its spec hash, the IR library hash, the IR width
    (bits), the binding policy (as JSON) and the entries in target order; ``path`` is where it
    was read from (``None`` before it is written)."""

    pe: str
    spec_hash: str
    ir_hash: str
    width: int
    policy: dict[str, Any]
    entries: list[TableEntry] = field(default_factory=list)
    path: Path | None = None

    def rules(self) -> list[Rule]:
        return [e.rule for e in self.entries if e.rule is not None]

    def status(self) -> dict[str, str]:
        return {e.target: e.status for e in self.entries}

    def rule_files(self) -> list[str]:
        """Rule files named by the table, relative to its directory."""
        return [f"{self.pe}/{rule_filename(e.target)}" for e in self.entries
                if e.rule is not None]


def find_table(rules_dir: Path, pe_name: str | None = None) -> Path:
    """The table file ``<PE>.rules.json`` in ``rules_dir`` (``pe_name`` picks one of
    several; a file path is returned as is). Raises :class:`CollateralError` when there is
    none or several."""
    rules_dir = Path(rules_dir)
    if rules_dir.is_file():
        return rules_dir
    if pe_name and table_path(rules_dir, pe_name).is_file():
        return table_path(rules_dir, pe_name)
    found = sorted(rules_dir.glob("*.rules.json")) if rules_dir.is_dir() else []
    if len(found) != 1:
        raise CollateralError(f"{rules_dir}: expected one rule table <PE>.rules.json, found "
                              f"{[f.name for f in found]}; regenerate the rules with `cgra "
                              f"rules --pe <module:Class> --out {rules_dir}` (or `cgra rtl`)")
    return found[0]


def read_table(path: Path | str, spec_hash: str | None = None, *,
               skip_bad_rules: bool = False) -> TableFile:
    """Read a table file (or the directory holding exactly one) and the rule file of every
    ``found`` entry. With ``spec_hash``, the table and every rule must come from that PE
    spec. Raises :class:`CollateralError` naming the file for a missing, malformed, stale or
    unknown-version table or rule; with ``skip_bad_rules`` an entry whose rule file is
    missing, malformed or stale is left out instead (the synthesiser's cache probe)."""
    tpath = find_table(Path(path))
    d = _read_json(tpath, "rule table")
    _check_version(d, TABLE_SCHEMA, TABLE_VERSION, tpath, "rule table")
    try:
        t = TableFile(str(d["pe"]), str(d["spec_hash"]), str(d["ir_hash"]), int(d["width"]),
                      dict(d["policy"]), path=tpath)
        raw = list(d["entries"])
    except (KeyError, TypeError, ValueError) as e:
        raise CollateralError(f"{tpath}: malformed rule table ({type(e).__name__}: {e}); "
                              f"{_regen(tpath)}") from None
    if spec_hash is not None and t.spec_hash != spec_hash:
        raise CollateralError(f"{tpath}: rule table is stale (derived from PE spec hash "
                              f"{t.spec_hash[:12]}, the design's PE has {spec_hash[:12]}); "
                              f"{_regen(tpath)}")
    for e in raw:
        try:
            target, op, status = str(e["target"]), str(e["op"]), str(e["status"])
            rel = e.get("rule") if status == "found" else None
            if status not in STATUSES or (status == "found" and not rel):
                raise ValueError(f"entry {target}: status {status!r}")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CollateralError(f"{tpath}: malformed rule table entry ({exc}); "
                                  f"{_regen(tpath)}") from None
        rule = None
        if rel:
            rpath = tpath.parent / rel
            try:
                rule = read_rule(rpath)
                if rule.target != target:
                    raise CollateralError(f"{rpath}: holds rule {rule.target}, the table "
                                          f"lists it for {target}; {_regen(tpath)}")
                if spec_hash is not None and rule.spec_hash != spec_hash:
                    raise CollateralError(f"{rpath}: rule {target} is stale (PE spec hash "
                                          f"{rule.spec_hash[:12]}, the design's PE has "
                                          f"{spec_hash[:12]}); {_regen(tpath)}")
            except CollateralError:
                if skip_bad_rules:
                    continue
                raise
        t.entries.append(TableEntry(target, op, status, rule, str(e.get("reason", ""))))
    return t


def write_table(table: TableFile, spec: type | None, out: Path, *, prune: bool = True,
                rules: Iterable[str] | None = None) -> Path:
    """Write the rule files of ``table`` and then the table file (atomically) under ``out``.

    ``rules``: the targets whose rule files are (re)written (default: every found entry;
    the others must already be in place, ``spec`` may then be ``None`` when ``rules`` is
    empty). With ``prune``, rule files of this PE that the table no longer names are
    removed (only after the new table is in place). Returns the table file path."""
    out = Path(out)
    rdir = out / table.pe
    rdir.mkdir(parents=True, exist_ok=True)
    write = None if rules is None else set(rules)
    entries = []
    for e in table.entries:
        d: dict[str, Any] = {"target": e.target, "op": e.op, "status": e.status}
        if e.rule is not None:
            rel = f"{table.pe}/{rule_filename(e.target)}"
            if write is None or e.target in write:
                if spec is None:
                    raise ValueError("write_table: writing rule files needs the PE spec")
                write_rule(e.rule, spec, out / rel)
            d.update(rule=rel, cost=e.rule.cost, priority=e.rule.priority)
        else:
            d["reason"] = e.reason
        entries.append(d)
    doc = {"schema": TABLE_SCHEMA, "version": TABLE_VERSION, "pe": table.pe,
           "spec_hash": table.spec_hash, "ir_hash": table.ir_hash, "width": table.width,
           "policy": table.policy, "entries": entries}
    path = table_path(out, table.pe)
    write_atomic(path, json.dumps(doc, indent=2, sort_keys=True) + "\n")
    if prune:
        prune_rules(table, out)
    table.path = path
    return path


def prune_rules(table: TableFile, out: Path) -> None:
    """Remove the rule files in ``out/<PE>/`` that ``table`` does not name."""
    keep = {Path(f).name for f in table.rule_files()}
    rdir = Path(out) / table.pe
    for f in rdir.glob("*.json") if rdir.is_dir() else ():
        if f.name not in keep:
            f.unlink(missing_ok=True)


def copy_table(table: TableFile, dest: Path, *, prune: bool = True) -> list[str]:
    """Copy a table read from disk (``table.path`` set), its timing file and its rule files
    into the directory ``dest`` (same relative layout; rule files first, each file written
    atomically, the table last; with ``prune``, rule files of this PE in ``dest`` that the
    table does not name are removed afterwards). Returns the relative paths written (table
    first)."""
    assert table.path is not None, "copy_table needs a table read from disk"
    src = table.path.parent
    dest = Path(dest)

    def copy(rel: str) -> None:
        data = (src / rel).read_bytes()
        try:
            if (dest / rel).read_bytes() == data:
                return                          # unchanged: not rewritten
        except OSError:
            pass
        write_atomic(dest / rel, data)

    files = []
    for rel in table.rule_files():
        copy(rel)
        files.append(rel)
    timing = timing_path(table.path)
    if timing.is_file():
        copy(timing.name)
        files.insert(0, timing.name)
    copy(table.path.name)
    files.insert(0, table.path.name)
    if prune:
        prune_rules(table, dest)
    return files
