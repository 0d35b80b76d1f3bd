"""The rule table of one PE: synthesis of every target, caching, re-verification, files.

The table and rule files are written and read through :mod:`peak.rules.format` (their one
owner; the format is documented there). Per-target times, the solving method and what was
done (``synthesised`` / ``cached`` / ``reused``) go to ``<out>/<PE>.timing.json`` so the
table and the rule files stay byte-stable between runs.

Cache (DESIGN.md §2, keyed by the spec hash): a run first loads the existing table.
* Same spec hash, IR library hash, width and policy: every rule is re-verified on load
  (∀ check) and kept (``cached``); ``none``/``timeout`` entries are kept.
* Otherwise (the spec was edited): every old rule is re-verified on the new spec; rules that
  still hold are kept (``reused``, rewritten with the new spec hash); only failing rules and
  the targets without a rule (the edit may have added the capability) are synthesised again.
Every new rule is verified by :func:`peak.rules.rule.verify_rule` before it is written.
Decompositions (:data:`peak.ir.DECOMPOSITIONS`) are tried for a target that has no
single-PE rule, from the rules of their parts, and verified as a whole.
"""
from __future__ import annotations

import json
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from cgra.errors import CgraError, RuleError
from peak import spec_hash
from peak.ir import DECOMPOSITIONS, Target, ir_op, library_hash, target_dag, targets
from peak.rules.format import (TABLE_SCHEMA, TABLE_VERSION, Instance, InputBinding, Rule,
                               TableEntry, TableFile, read_table, rule_filename, table_path)
from peak.rules.format import write_table as write_table_file
from peak.rules.rule import VerifyResult, verify_rule
from peak.rules.synth import (DEFAULT_TIMEOUT_MS, BindingPolicy, SynthResult, pe_context,
                              synthesize)

__all__ = ["TABLE_SCHEMA", "TABLE_VERSION", "CheckResult", "Entry", "RuleTable", "build_table",
           "check_against", "compose", "load_table", "rule_filename", "rule_from_synth",
           "table_path", "write_table"]


@dataclass
class Entry:
    """One target of a table: ``status`` found/none/timeout, the rule if found, what this
    run did (``action``: synthesised / cached / reused / decomposed), seconds, method."""

    target: str
    op: str
    status: str
    rule: Rule | None = None
    reason: str = ""
    action: str = ""
    seconds: float = 0.0
    method: str = ""


@dataclass
class RuleTable:
    """The rules of one PE. ``entries`` in target order; ``rules()`` the found ones."""

    pe: str
    spec_hash: str
    ir_hash: str
    width: int
    policy: BindingPolicy
    entries: list[Entry] = field(default_factory=list)
    seconds: float = 0.0

    def entry(self, target: str) -> Entry:
        for e in self.entries:
            if e.target == target:
                return e
        raise RuleError(f"rule table of {self.pe} has no target '{target}'")

    def rules(self) -> list[Rule]:
        return [e.rule for e in self.entries if e.rule is not None]

    def rule(self, target: str) -> Rule | None:
        return self.entry(target).rule


# ---------------------------------------------------------------------------- rule building
def rule_from_synth(spec: type, target: Target, width: int, res: SynthResult) -> Rule:
    """The single-PE :class:`Rule` of a found synthesis result."""
    pe = pe_context(spec)
    f = res.found
    assert f is not None
    inst = dict(f.fields)
    const_fields = {fname: port for port, fname in f.binding.consts}
    for fname in const_fields:
        inst[fname] = 0
    bound = dict((pin, port) for port, pin in f.binding.inputs)
    inputs: dict[str, InputBinding] = {}
    for pin in pe.inputs:
        if pin in bound:
            inputs[pin] = InputBinding("ir", port=bound[pin])
        elif pin in f.ties:
            inputs[pin] = InputBinding("tie", value=f.ties[pin])
        else:
            inputs[pin] = InputBinding("free")
    op = ir_op(target.op, width)
    dag = target_dag(op, target)
    return Rule(target.key, target.op, width, list(target.const_inputs),
                list(target.preconditions), spec.__name__, spec_hash(spec), library_hash(),
                [Instance("pe0", inst, const_fields, inputs)],
                {port: ("pe0", pout) for port, pout in f.binding.outputs},
                dag, priority=len(dag["nodes"]))


def compose(spec: type, target: Target, width: int, parts: dict[str, Rule]) -> Rule | None:
    """A multi-PE rule for ``target`` from its decomposition and the rules of its parts
    (``None`` if a part has no rule). Each DAG node becomes one PE instance (id = node id)."""
    dec = DECOMPOSITIONS[target.op]
    instances: list[Instance] = []
    outs_of: dict[str, dict[str, tuple[str, str]]] = {}
    for node in dec["nodes"]:
        part = parts.get(node["op"])
        if part is None or part.cost != 1 or part.const_inputs or part.preconditions:
            return None
        src = part.instances[0]
        inputs: dict[str, InputBinding] = {}
        for pin, b in src.inputs.items():
            if b.kind == "ir":
                arg = node["args"][b.port]
                if arg.startswith("$"):
                    inputs[pin] = InputBinding("ir", port=arg[1:])
                else:
                    iid, pout = outs_of[arg]["out"]
                    inputs[pin] = InputBinding("wire", instance=iid, port=pout)
            else:
                inputs[pin] = b
        instances.append(Instance(node["id"], dict(src.inst), dict(src.const_fields), inputs))
        outs_of[node["id"]] = {k: (node["id"], p) for k, (_, p) in part.outputs.items()}
    outputs = {port: outs_of[nid]["out"] for port, nid in dec["outputs"].items()}
    op = ir_op(target.op, width)
    return Rule(target.key, target.op, width, [], [], spec.__name__, spec_hash(spec),
                library_hash(), instances, outputs, dec, priority=len(op.dag["nodes"]))


# ---------------------------------------------------------------------------- workers
_WORKER: dict[str, Any] = {}


def _init_worker(spec: type) -> None:
    _WORKER["spec"] = spec
    pe_context(spec)          # elaborate once per worker process


def _work(key: str, width: int, policy: BindingPolicy, method: str,
          timeout_ms: int) -> SynthResult:
    from peak.ir import target_from_key
    return synthesize(_WORKER["spec"], target_from_key(key, width), width, policy, method,
                      timeout_ms)


# ---------------------------------------------------------------------------- loading
def load_table(path: Path | str, spec: type | None = None,
               timeout_ms: int = DEFAULT_TIMEOUT_MS) -> RuleTable:
    """Read a table file and its rule files (:func:`peak.rules.format.read_table`). With
    ``spec``, check the spec hash and verify every rule on it (∀ check) — :class:`RuleError`
    naming the rule and the counterexample if one fails. Raises
    :class:`~cgra.errors.CollateralError` for a missing / malformed file."""
    f = read_table(Path(path))
    t = RuleTable(f.pe, f.spec_hash, f.ir_hash, f.width, BindingPolicy.from_json(f.policy))
    t.entries = [Entry(e.target, e.op, e.status, e.rule, e.reason) for e in f.entries]
    if spec is not None:
        if spec_hash(spec) != t.spec_hash:
            raise RuleError(f"{path}: rules were derived from another version of "
                            f"{t.pe} (spec hash {t.spec_hash[:12]} != "
                            f"{spec_hash(spec)[:12]}); run `cgra rules` again")
        for e in t.entries:
            if e.rule is not None:
                v = verify_rule(e.rule, spec, timeout_ms)
                if not v.ok:
                    raise RuleError(f"{path}: rule {e.target} does not hold on "
                                    f"{spec.__name__}: {v.reason}")
    return t


def _load_old(path: Path) -> RuleTable | None:
    """The previous table for the cache, or None if absent / unreadable (then rebuilt)."""
    if not path.exists():
        return None
    try:
        return load_table(path)
    except CgraError:
        return None


# ---------------------------------------------------------------------------- building
Progress = Callable[[Entry, int, int], None]


def build_table(spec: type, out: Path | str, jobs: int = 1, width: int | None = None,
                policy: BindingPolicy | None = None, method: str = "auto",
                timeout_ms: int = DEFAULT_TIMEOUT_MS, only: list[str] | None = None,
                progress: Progress | None = None) -> RuleTable:
    """Synthesise (or reuse) the rule of every target of the IR library on ``spec`` and
    write the table and rule files under ``out``.

    ``width``: IR op width in bits (default: the PE's widest input); ``jobs``: worker
    processes for synthesis; ``only``: restrict to these target keys; ``progress(entry,
    done, total)`` is called as each target completes. Returns the :class:`RuleTable`.
    Raises :class:`cgra.errors.SpecError` for a malformed spec, :class:`RuleError` when a
    synthesised rule fails its independent check (a synthesiser bug, never written)."""
    t0 = time.perf_counter()
    out = Path(out)
    policy = policy or BindingPolicy()
    pe = pe_context(spec)
    width = width or pe.data_width
    h, ih = spec_hash(spec), library_hash()
    tlist = targets(width)
    if only is not None:
        unknown = set(only) - {t.key for t in tlist}
        if unknown:
            raise RuleError(f"unknown rule targets {sorted(unknown)}")
        tlist = [t for t in tlist if t.key in only]
    tpath = table_path(out, spec.__name__)
    old = _load_old(tpath)
    same = (old is not None and old.spec_hash == h and old.ir_hash == ih
            and old.width == width and old.policy == policy)
    old_entries = {e.target: e for e in old.entries} if old is not None else {}
    table = RuleTable(spec.__name__, h, ih, width, policy)
    done: dict[str, Entry] = {}
    todo: list[Target] = []
    total = len(tlist)

    def finish(e: Entry) -> None:
        done[e.target] = e
        if progress is not None:
            progress(e, len(done), total)

    for t in tlist:
        oe = old_entries.get(t.key)
        if oe is not None and oe.rule is not None:
            t1 = time.perf_counter()
            rule = oe.rule
            if not same:
                rule.spec_hash = h
            v = verify_rule(rule, spec, timeout_ms)
            if v.ok:
                finish(Entry(t.key, t.op, "found", rule, "", "cached" if same else "reused",
                             time.perf_counter() - t1, "verify"))
                continue
        elif oe is not None and same:
            finish(Entry(t.key, t.op, oe.status, None, oe.reason, "cached", 0.0, ""))
            continue
        todo.append(t)

    def record(t: Target, res: SynthResult) -> None:
        if res.status == "found":
            rule = rule_from_synth(spec, t, width, res)
            v = verify_rule(rule, spec, timeout_ms)
            if not v.ok:
                raise RuleError(f"synthesised rule {t.key} on {spec.__name__} failed its "
                                f"independent check: {v.reason}")
            finish(Entry(t.key, t.op, "found", rule, "", "synthesised", res.seconds,
                         res.method))
        else:
            reason = ("no instruction and binding implements it" if res.status == "none"
                      else f"z3 timed out ({timeout_ms} ms per query)")
            finish(Entry(t.key, t.op, res.status, None, reason, "synthesised", res.seconds,
                         res.method))

    if jobs > 1 and len(todo) > 1:
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_worker,
                                 initargs=(spec,)) as ex:
            futs = {ex.submit(_work, t.key, width, policy, method, timeout_ms): t
                    for t in todo}
            for fut in as_completed(futs):
                record(futs[fut], fut.result())
    else:
        for t in todo:
            record(t, synthesize(spec, t, width, policy, method, timeout_ms))

    # decompositions for targets without a single-PE rule
    for t in tlist:
        e = done[t.key]
        if e.status == "found" or t.op not in DECOMPOSITIONS or t.const_inputs \
                or e.action == "cached":
            continue
        t1 = time.perf_counter()
        parts = {n["op"]: done[n["op"]].rule for n in DECOMPOSITIONS[t.op]["nodes"]
                 if n["op"] in done}
        rule = compose(spec, t, width, parts)
        if rule is None:
            missing = [n["op"] for n in DECOMPOSITIONS[t.op]["nodes"]
                       if parts.get(n["op"]) is None]
            e.reason = f"no single-PE rule; decomposition needs {', '.join(missing)}"
            continue
        v: VerifyResult = verify_rule(rule, spec, timeout_ms)
        if not v.ok:
            raise RuleError(f"decomposed rule {t.key} on {spec.__name__} failed its check: "
                            f"{v.reason}")
        done[t.key] = Entry(t.key, t.op, "found", rule, "", "decomposed",
                            e.seconds + time.perf_counter() - t1, "compose")

    table.entries = [done[t.key] for t in tlist]
    table.seconds = time.perf_counter() - t0
    write_table(table, spec, out)
    return table


def write_table(table: RuleTable, spec: type, out: Path) -> None:
    """Write the table and one file per rule (:func:`peak.rules.format.write_table`; stale
    rule files removed) and the timing file under ``out``."""
    out = Path(out)
    write_table_file(TableFile(table.pe, table.spec_hash, table.ir_hash, table.width,
                               table.policy.to_json(),
                               [TableEntry(e.target, e.op, e.status, e.rule, e.reason)
                                for e in table.entries]), spec, out)
    timing = {"pe": table.pe, "seconds": round(table.seconds, 3),
              "entries": [{"target": e.target, "status": e.status, "action": e.action,
                           "seconds": round(e.seconds, 4), "method": e.method}
                          for e in table.entries]}
    (out / f"{table.pe}.timing.json").write_text(json.dumps(timing, indent=2) + "\n")


# ---------------------------------------------------------------------------- optimised PE
@dataclass
class CheckResult:
    """Outcome of checking one rule on another PE."""

    target: str
    ok: bool
    result: VerifyResult


def check_against(table: RuleTable, other: type,
                  timeout_ms: int = DEFAULT_TIMEOUT_MS) -> list[CheckResult]:
    """Prove every rule of ``table`` on the PE ``other`` (same ISA: same instruction
    fields). Returns one :class:`CheckResult` per rule; a failing one carries the
    counterexample (inputs, expected, got). Raises :class:`RuleError` if the instruction
    fields of ``other`` differ from the table's PE."""
    from peak.assembler import assembler
    from peak.normalize import normal_form
    asm = assembler(normal_form(other).isa)
    names = {f.name for f in asm.fields}
    out = []
    for rule in table.rules():
        for ins in rule.instances:
            fields = set(ins.inst) | set(ins.const_fields)
            if fields != names:
                raise RuleError(f"{other.__name__} does not have the ISA of {table.pe}: "
                                f"instruction fields differ ({sorted(fields ^ names)}); "
                                "the optimised-PE check needs the same ISA")
        v = verify_rule(rule, other, timeout_ms)
        out.append(CheckResult(rule.target, v.ok, v))
    return out
