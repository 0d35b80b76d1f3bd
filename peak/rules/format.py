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
          "inst_tags": {"alu": "Add", ...},         # enum fields by member name
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

Errors: every reader raises :class:`cgra.errors.CollateralError` naming the file and the
problem, with ``cgra rules`` / ``cgra rtl`` as the fix.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cgra.errors import CollateralError
from peak.ir import Precondition

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
        from peak.assembler import assembler
        from peak.normalize import normal_form

        asm = assembler(normal_form(spec).isa)
        insts = []
        for ins in self.instances:
            tags = {}
            for f in asm.fields:
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


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary sibling and a rename, so a reader never
    sees a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


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
    """The table file of PE ``pe_name`` in directory ``out``."""
    return Path(out) / f"{pe_name}.rules.json"


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


def read_table(path: Path | str, spec_hash: str | None = None) -> TableFile:
    """Read a table file (or the directory holding exactly one) and the rule file of every
    ``found`` entry. With ``spec_hash``, the table and every rule must come from that PE
    spec. Raises :class:`CollateralError` naming the file for a missing, malformed, stale or
    unknown-version table or rule."""
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
            rule = read_rule(rpath)
            if rule.target != target:
                raise CollateralError(f"{rpath}: holds rule {rule.target}, the table lists it "
                                      f"for {target}; {_regen(tpath)}")
            if spec_hash is not None and rule.spec_hash != spec_hash:
                raise CollateralError(f"{rpath}: rule {target} is stale (PE spec hash "
                                      f"{rule.spec_hash[:12]}, the design's PE has "
                                      f"{spec_hash[:12]}); {_regen(tpath)}")
        t.entries.append(TableEntry(target, op, status, rule, str(e.get("reason", ""))))
    return t


def write_table(table: TableFile, spec: type, out: Path, *, prune: bool = True) -> Path:
    """Write the rule files of ``table`` and then the table file (atomically) under ``out``.

    With ``prune``, rule files of this PE that the table no longer names are removed (only
    after the new table is in place). Returns the table file path."""
    out = Path(out)
    rdir = out / table.pe
    rdir.mkdir(parents=True, exist_ok=True)
    entries = []
    for e in table.entries:
        d: dict[str, Any] = {"target": e.target, "op": e.op, "status": e.status}
        if e.rule is not None:
            rel = f"{table.pe}/{rule_filename(e.target)}"
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
        keep = {Path(f).name for f in table.rule_files()}
        for f in rdir.glob("*.json"):
            if f.name not in keep:
                f.unlink()
    table.path = path
    return path
