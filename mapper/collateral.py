"""Read and validate a collateral directory ``build/<design>/`` (what the mapper consumes).

The mapper never imports the hardware generators; it reads the files garnet wrote
(``garnet/build.py``) and checks them before use:

=========================  =====================================  ===========================
file                       schema                                 checked
=========================  =====================================  ===========================
``design.json``            ``garnet.design/1``                    schema; spec hashes below
``pe.json``                ``peak.pe/1`` (:mod:`peak.collateral`)  schema, keys, ``spec_hash``
                                                                  == ``design.spec_hashes.pe``
``mem.json``               ``garnet.mem/1``                       schema, ``spec_hash`` ==
                                                                  ``design.spec_hashes.mem``
``rules/garnet_rules.json`` ``garnet.rules_stamp/1``              ``spec_hash`` == PE hash,
                                                                  listed files exist
``rules/*.json``           rule table (below)                     every rule's ``spec_hash``
``routing/graph_<w>.json`` ``canal.routing_graph/1``              exists; sha256 == design
                                                                  (:meth:`Collateral.check_routing`)
``config_map.json``        ``garnet.config_map/1``                schema
=========================  =====================================  ===========================

With ``check_spec=True`` the PE spec named in ``pe.json`` is imported (a pure Python class,
no hardware generation) and its current :func:`peak.spec_hash` compared with the recorded
one: a spec edited after ``cgra rtl`` makes the collateral *stale*. Any missing, malformed or
stale file raises :class:`cgra.errors.CollateralError` naming the file and the command that
regenerates it (``cgra rtl --config <toml> --out <dir>`` / ``make rtl``).

Rule table: ``rules/<PE>.rules.json`` (schema ``peak-rule-table``) and one
``peak-rewrite-rule`` file per rule (formats documented in :mod:`peak.rules.table` and
:mod:`peak.rules.rule`, version 1), parsed here (importing :mod:`peak.rules` would pull in
the synthesiser, which the layering contract forbids) into the mapper's :class:`RuleTable` (pattern DAG, PE instances with instruction fields,
constant fields and input bindings, outputs, preconditions, priority, cost).
"""
from __future__ import annotations

import hashlib
import importlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cgra.errors import CollateralError

DESIGN_SCHEMA = "garnet.design/1"
PE_SCHEMA = "peak.pe/1"
MEM_SCHEMA = "garnet.mem/1"
STAMP_SCHEMA = "garnet.rules_stamp/1"
CONFIG_MAP_SCHEMA = "garnet.config_map/1"
ROUTING_SCHEMA = "canal.routing_graph/1"
STAMP = "garnet_rules.json"


# ---------------------------------------------------------------------------- rules
@dataclass(frozen=True)
class Precondition:
    """``constant <op> value`` on a rule constant; ``op`` is ``"ult"`` (unsigned <)."""

    port: str
    op: str
    value: int

    def holds(self, v: int | None) -> bool:
        if v is None:
            return False
        if self.op == "ult":
            return v < self.value
        raise CollateralError(f"rule precondition on '{self.port}' uses unknown operator "
                              f"'{self.op}'; regenerate the rules with `cgra rules`")


@dataclass(frozen=True)
class PEBinding:
    """How one PE input of a rule instance is driven: ``kind`` ``ir`` (rule input ``port``),
    ``free`` (don't care), ``tie`` (constant ``value``) or ``wire`` (output ``port`` of rule
    instance ``instance``)."""

    kind: str
    port: str | None = None
    value: int | None = None
    instance: str | None = None


@dataclass
class RuleInstance:
    """One PE of a rule: instruction field values ``inst`` (ints; constant fields 0),
    ``const_fields`` = instruction field -> rule constant, ``inputs`` = PE input -> binding."""

    id: str
    inst: dict[str, int]
    const_fields: dict[str, str]
    inputs: dict[str, PEBinding]


@dataclass
class Rule:
    """One rewrite rule as the mapper uses it (read from ``peak-rewrite-rule`` files).

    ``key`` is the target (``coreir.add[in1=const]``), ``dag`` the IR pattern it covers
    (nodes ``{"id", "op", "args": {port: "$in" | node id}, "value": "#const"}`` and
    ``outputs``), ``instances`` its PEs (``cost`` = their count), ``outputs`` IR output ->
    (instance, PE output port), ``priority`` = IR nodes covered (higher first)."""

    key: str
    op: str
    width: int
    dag: dict[str, Any]
    instances: list[RuleInstance]
    outputs: dict[str, tuple[str, str]]
    preconditions: tuple[Precondition, ...] = ()
    const_inputs: tuple[str, ...] = ()
    priority: int = 0
    spec_hash: str | None = None
    source: str = ""
    root_output: str = "out"

    @property
    def cost(self) -> int:
        """PEs used by the rule."""
        return len(self.instances)

    @property
    def root_op(self) -> str:
        root = self.dag["outputs"][self.root_output]
        return next(n["op"] for n in self.dag["nodes"] if n["id"] == root)

    @property
    def n_ops(self) -> int:
        """IR ops covered (constant nodes not counted)."""
        return sum(1 for n in self.dag["nodes"] if n["op"] not in ("coreir.const",
                                                                    "corebit.const"))

    @property
    def n_consts(self) -> int:
        """Rule constants folded into instruction fields."""
        return sum(len(i.const_fields) for i in self.instances)

    def order(self) -> tuple:
        """Covering order: more IR ops, more folded constants, higher priority, fewer PEs."""
        return (-self.n_ops, -self.n_consts, -self.priority, self.cost, self.key)


@dataclass
class RuleTable:
    """The rewrite rules of one PE: found rules plus every target's status, and the
    multi-PE decompositions the mapper may expand (op -> pattern DAG)."""

    rules: list[Rule]
    status: dict[str, str] = field(default_factory=dict)
    spec_hash: str | None = None
    pe: str = ""
    source: str = ""
    decompositions: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_key: dict[str, Rule] = {r.key: r for r in self.rules}
        self._by_root: dict[str, list[Rule]] = {}
        for r in self.rules:
            self._by_root.setdefault(r.root_op, []).append(r)
        for lst in self._by_root.values():
            lst.sort(key=Rule.order)

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


TABLE_SCHEMA = "peak-rule-table"
RULE_SCHEMA = "peak-rewrite-rule"
TABLE_VERSION = 1
RULE_VERSION = 1


def parse_rule(d: Any, where: str, regen: str) -> Rule:
    """A :class:`Rule` from a ``peak-rewrite-rule`` document (version 1, see
    :mod:`peak.rules.rule`). Raises :class:`CollateralError` naming ``where``."""
    if not isinstance(d, dict) or d.get("schema") != RULE_SCHEMA:
        raise CollateralError(f"{where}: not a rule file (schema {RULE_SCHEMA!r} expected); "
                              f"{regen}")
    if d.get("version") != RULE_VERSION:
        raise CollateralError(f"{where}: rule schema version {d.get('version')} is not "
                              f"{RULE_VERSION}; {regen}")
    try:
        insts = []
        for i in d["instances"]:
            ins = {}
            for pin, b in i["inputs"].items():
                if b["kind"] not in ("ir", "free", "tie", "wire"):
                    raise ValueError(f"input {pin}: binding kind {b['kind']!r}")
                ins[pin] = PEBinding(b["kind"], b.get("port"),
                                     None if b.get("value") is None else int(b["value"]),
                                     b.get("instance"))
            insts.append(RuleInstance(str(i["id"]), {k: int(v) for k, v in i["inst"].items()},
                                      {fn: str(c["port"]) for fn, c in
                                       i["const_fields"].items()}, ins))
        return Rule(str(d["target"]), str(d["op"]), int(d["width"]), d["pattern"], insts,
                    {k: (str(v["instance"]), str(v["port"])) for k, v in d["outputs"].items()},
                    tuple(Precondition(str(p["port"]), str(p["op"]), int(p["value"]))
                          for p in d["preconditions"]),
                    tuple(d["const_inputs"]), int(d["priority"]), d.get("spec_hash"), where)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CollateralError(f"{where}: malformed rule ({type(exc).__name__}: {exc}); "
                              f"{regen}") from None


def find_table(rules_dir: Path, pe_name: str | None = None) -> Path:
    """The table file ``<PE>.rules.json`` in ``rules_dir`` (``pe_name`` picks one of
    several). Raises :class:`CollateralError` when there is none."""
    rules_dir = Path(rules_dir)
    if rules_dir.is_file():
        return rules_dir
    if pe_name and (rules_dir / f"{pe_name}.rules.json").is_file():
        return rules_dir / f"{pe_name}.rules.json"
    found = sorted(rules_dir.glob("*.rules.json")) if rules_dir.is_dir() else []
    if len(found) != 1:
        raise CollateralError(f"{rules_dir}: expected one rule table <PE>.rules.json, found "
                              f"{[f.name for f in found]}; regenerate the rules with `cgra "
                              f"rules --pe <module:Class> --out {rules_dir}` (or `cgra rtl`)")
    return found[0]


def load_rule_table(path: str | Path, spec_hash: str | None = None,
                    pe_name: str | None = None) -> RuleTable:
    """Read a rule table: the ``peak-rule-table`` file ``<PE>.rules.json`` (or a directory
    holding it) and the ``peak-rewrite-rule`` file of every ``found`` entry (formats of
    :mod:`peak.rules.table` / :mod:`peak.rules.rule`, version 1; parsed here because the
    mapper may not import the synthesiser). With ``spec_hash`` the table and each rule must
    come from that PE spec. Raises :class:`CollateralError` naming the file for a missing,
    malformed, stale or unknown-version table or rule."""
    from peak.ir import DECOMPOSITIONS

    tpath = find_table(Path(path), pe_name)
    regen = (f"regenerate the rules with `cgra rules --pe <module:Class> --out "
             f"{tpath.parent}` (or `cgra rtl`)")
    d = _read_json(tpath, regen)
    if not isinstance(d, dict) or d.get("schema") != TABLE_SCHEMA:
        raise CollateralError(f"{tpath}: not a rule table (schema {TABLE_SCHEMA!r} "
                              f"expected); {regen}")
    if d.get("version") != TABLE_VERSION:
        raise CollateralError(f"{tpath}: rule table version {d.get('version')} is not "
                              f"{TABLE_VERSION}; {regen}")
    table_hash = d.get("spec_hash")
    if spec_hash is not None and table_hash != spec_hash:
        raise CollateralError(f"{tpath}: rule table is stale (derived from PE spec hash "
                              f"{str(table_hash)[:12]}, the design's PE has {spec_hash[:12]}); "
                              f"{regen}")
    rules: list[Rule] = []
    status: dict[str, str] = {}
    try:
        entries = list(d["entries"])
        for e in entries:
            status[str(e["target"])] = str(e["status"])
            if e["status"] != "found":
                continue
            rpath = tpath.parent / e["rule"]
            r = parse_rule(_read_json(rpath, regen), str(rpath), regen)
            if r.key != e["target"]:
                raise CollateralError(f"{rpath}: holds rule {r.key}, the table lists it for "
                                      f"{e['target']}; {regen}")
            if spec_hash is not None and r.spec_hash != spec_hash:
                raise CollateralError(f"{rpath}: rule {r.key} is stale (PE spec hash "
                                      f"{str(r.spec_hash)[:12]}, the design's PE has "
                                      f"{spec_hash[:12]}); {regen}")
            rules.append(r)
    except (KeyError, TypeError) as exc:
        raise CollateralError(f"{tpath}: malformed rule table ({type(exc).__name__}: {exc}); "
                              f"{regen}") from None
    return RuleTable(rules, status, table_hash, str(d.get("pe", "")), str(tpath),
                     dict(DECOMPOSITIONS))


def _read_json(path: Path, regen: str) -> Any:
    if not path.is_file():
        raise CollateralError(f"{path} is missing; {regen}")
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CollateralError(f"{path}: cannot read JSON ({exc}); {regen}") from None


def load_pe_model(pe_doc: dict[str, Any]) -> type:
    """The PE spec class named by ``pe.json`` (``"module:Class"``): a pure Python class whose
    instances are the PE's Python model (:mod:`peak.model`). Raises :class:`CollateralError`
    when it does not import."""
    path = str(pe_doc.get("spec", ""))
    try:
        mod, cls = path.split(":")
        return getattr(importlib.import_module(mod), cls)
    except (ValueError, ImportError, AttributeError) as exc:
        raise CollateralError(f"pe.json: PE spec '{path}' cannot be imported ({exc}); "
                              f"install the package defining it or regenerate the design") \
            from None


# ---------------------------------------------------------------------------- design dir
@dataclass
class Collateral:
    """A validated collateral directory: parsed ``design.json``, ``pe.json``, ``mem.json``
    (``None`` when the design has no MEM tiles), the rule table, and file paths."""

    root: Path
    design: dict[str, Any]
    pe: dict[str, Any]
    mem: dict[str, Any] | None
    rules: RuleTable
    config_map_path: Path
    routing_paths: dict[int, Path]

    @property
    def name(self) -> str:
        return str(self.design.get("name", self.root.name))

    @property
    def pe_hash(self) -> str:
        return str(self.pe["spec_hash"])

    def regen_hint(self) -> str:
        return regen_hint(self.root, self.design)

    def check_routing(self) -> None:
        """Compare each routing graph's sha256 (of its JSON, keys sorted) with
        ``design.json``; raises :class:`CollateralError` for a stale graph."""
        want = (self.design.get("spec_hashes") or {}).get("routing_graphs") or {}
        for w, path in self.routing_paths.items():
            doc = _read_json(path, self.regen_hint())
            if isinstance(doc, dict) and doc.get("schema") not in (None, ROUTING_SCHEMA):
                raise CollateralError(f"{path}: schema {doc.get('schema')!r} is not "
                                      f"{ROUTING_SCHEMA!r}; {self.regen_hint()}")
            got = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()
            if str(w) in want and want[str(w)] != got:
                raise CollateralError(f"{path}: routing graph does not match design.json "
                                      f"(hash {got[:12]} vs {want[str(w)][:12]}); "
                                      f"{self.regen_hint()}")


def regen_hint(root: Path, design: dict[str, Any] | None = None) -> str:
    name = (design or {}).get("name") or Path(root).name
    return (f"regenerate it with `cgra rtl --config configs/{name}.toml --out {root}` "
            f"(`make rtl`)")


def _schema(doc: Any, want: str, path: Path, hint: str) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise CollateralError(f"{path}: expected a JSON object; {hint}")
    if doc.get("schema") != want:
        raise CollateralError(f"{path}: schema {doc.get('schema')!r} is not {want!r} (written "
                              f"by another version of the generator); {hint}")
    return doc


def load_collateral(path: str | Path, check_spec: bool = True) -> Collateral:
    """Read and validate the collateral directory ``path`` (module docstring).

    Raises :class:`CollateralError` naming the file and how to regenerate it when a file is
    missing, malformed, of another schema version, or stale (spec hashes disagree between
    files, or with the current PE spec source when ``check_spec``)."""
    root = Path(path)
    if not root.is_dir():
        raise CollateralError(f"design directory {root} does not exist; generate it with "
                              f"`cgra rtl --config configs/<design>.toml --out {root}` "
                              f"(`make rtl`)")
    hint0 = regen_hint(root)
    design = _schema(_read_json(root / "design.json", hint0), DESIGN_SCHEMA,
                     root / "design.json", hint0)
    hint = regen_hint(root, design)
    hashes = design.get("spec_hashes") or {}

    pe_path = root / "pe.json"
    pe = _schema(_read_json(pe_path, hint), PE_SCHEMA, pe_path, hint)
    for key in ("instruction_width", "fields", "inputs", "outputs", "spec_hash", "spec"):
        if key not in pe:
            raise CollateralError(f"{pe_path}: missing key '{key}'; {hint}")
    if hashes.get("pe") is not None and hashes["pe"] != pe["spec_hash"]:
        raise CollateralError(f"{pe_path}: PE spec hash {pe['spec_hash'][:12]} differs from "
                              f"design.json ({str(hashes['pe'])[:12]}): the files come from "
                              f"different runs; {hint}")
    if check_spec:
        from peak import spec_hash as current_hash
        spec = load_pe_model(pe)
        now = current_hash(spec)
        if now != pe["spec_hash"]:
            raise CollateralError(f"{pe_path} is stale: PE {pe['spec']} was edited after the "
                                  f"design was generated (spec hash now {now[:12]}, recorded "
                                  f"{pe['spec_hash'][:12]}); {hint}")

    mem_path = root / "mem.json"
    mem = _schema(_read_json(mem_path, hint), MEM_SCHEMA, mem_path, hint)
    if mem.get("name") is None:
        mem = None
    elif hashes.get("mem") is not None and mem.get("spec_hash") != hashes["mem"]:
        raise CollateralError(f"{mem_path}: MEM spec hash differs from design.json: the files "
                              f"come from different runs; {hint}")

    rules_dir = root / "rules"
    if not rules_dir.is_dir():
        raise CollateralError(f"{rules_dir} is missing (the design was generated without "
                              f"rules?); {hint}")
    stamp_path = rules_dir / STAMP
    stamp = _schema(_read_json(stamp_path, hint), STAMP_SCHEMA, stamp_path, hint)
    if stamp.get("spec_hash") != pe["spec_hash"]:
        raise CollateralError(f"{stamp_path}: rules are stale (PE spec hash "
                              f"{str(stamp.get('spec_hash'))[:12]}, the design's PE has "
                              f"{pe['spec_hash'][:12]}); {hint}")
    for f in stamp.get("files", []):
        if not (rules_dir / f).is_file():
            raise CollateralError(f"{rules_dir / f} is listed in {stamp_path} but missing; "
                                  f"{hint}")
    rules = load_rule_table(rules_dir, pe["spec_hash"], pe.get("name"))

    cm_path = root / "config_map.json"
    _schema(_read_json(cm_path, hint), CONFIG_MAP_SCHEMA, cm_path, hint)
    routing: dict[int, Path] = {}
    widths = (design.get("params") or {}).get("widths") or []
    for w in widths:
        gp = root / "routing" / f"graph_{w}.json"
        if not gp.is_file():
            raise CollateralError(f"{gp} is missing; {hint}")
        routing[int(w)] = gp
    return Collateral(root, design, pe, mem, rules, cm_path, routing)
