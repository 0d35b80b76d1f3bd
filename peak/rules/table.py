"""The rule table of one PE: synthesis of every target, the rule cache, re-verification.

Tables and rule files are written and read through :mod:`peak.rules.format` (their one
owner; the file format and the layout of a shared rules directory are documented there).
:func:`build_table` works on a shared rules directory ``out``:

* the cache entry ``out/cache/<spec_hash[:16]>-<variant>/`` of this key (PE spec hash, IR
  library hash, width, binding policy) holds the table ``<PE>.rules.json``, one rule file
  per found rule and ``<PE>.timing.json`` (per-target time, method and action of the run
  that produced each entry, so tables and rule files stay byte-stable between runs);
* the view ``out/<PE>.rules.json`` (+ ``out/<PE>/``, ``out/<PE>.timing.json``) is a copy
  of the entry of the last completed run for a PE class named ``<PE>``.

What a run does per target (``action`` of its :class:`Entry`):

* ``cached``: the entry of this key has it; a rule is re-verified on load (∀ check) and
  kept, ``none``/``timeout`` are kept;
* ``reused``: the spec was edited (no entry for it yet): the rule of the *base* table (the
  newest other entry of a PE class of the same name, IR library hash, width and policy, or
  the view) still holds on the new spec (∀ check). A reused rule of cost ``c > 1`` is kept
  only if no cheaper rule exists: a single-PE synthesis runs first (new ops only ever make
  rules cheaper, and every multi-PE rule is a decomposition of :data:`peak.ir.DECOMPOSITIONS`),
  and a rule it finds replaces it (``improved``). Targets without a rule in the base, and
  rules that fail, are synthesised. So an incremental table has the status and cost of a
  cold one for every target;
* ``synthesised`` (:func:`peak.rules.synth.synthesize`, then :func:`verify_rule` before it
  is written); ``decomposed``: a target of :data:`peak.ir.DECOMPOSITIONS` without a
  single-PE rule, composed from the rules of its parts and verified as a whole (tried on
  every run, cached or not: it is cheap, and the parts may have appeared since); or (issue
  41) a target whose op has shapes in :data:`peak.ir.TWO_PE_SHAPES` and no single-PE rule:
  a two-PE rule from the first shape whose parts have single-PE rules
  (:func:`compose_shape`), verified as a whole before it is stored (:func:`_two_pe_all`).

``force`` re-synthesises every target, reading nothing from the cache. ``only`` restricts
the run to those targets: every other entry of the cache entry is kept as it is (rule
files untouched).

Concurrency and interrupts: a run holds an ``fcntl`` lock on its cache entry directory from
loading to the last write (a second run on the same key waits, then finds the first one's
rules cached), and a lock on ``out`` while it writes the view. Each target is written as
soon as it is finished (rule file first, then table and timing files, each through a
temporary file and ``os.replace``), except a decomposable target still waiting for its
compose step and a reused multi-PE rule still waiting for its cheaper search. So Ctrl-C or
SIGTERM (worker processes ignore SIGINT and are terminated by the parent) keeps everything
proved before it, in a consistent table.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import z3

from cgra.errors import CgraError, RuleError
from cgra.procs import die_with_parent
from peak import normal_form, spec_hash
from peak.ir import (COMMUTATIVE, DECOMPOSITIONS, TWO_PE_SHAPES, Target, ir_op, library_hash,
                     target_dag, targets, wants_float)
from peak.rules.format import (TABLE_SCHEMA, TABLE_VERSION, Instance, InputBinding, Rule,
                               TableEntry, TableFile, cached_tables, copy_table, entry_dir,
                               locked, read_header, read_table, rule_filename,
                               table_path, timing_path, write_atomic, write_rule)
from peak.rules.format import write_table as write_table_file
from peak.rules.rule import VerifyResult, verify_rule
from peak.rules.synth import (DEFAULT_TIMEOUT_MS, BindingPolicy, SynthResult, pe_context,
                              synthesize)
from peak.assembler import assembler
from peak.ir import target_from_key

__all__ = ["TABLE_SCHEMA", "TABLE_VERSION", "CheckResult", "Entry", "RuleTable", "build_table",
           "check_against", "compose", "compose_shape", "load_table", "shape_parts",
           "rule_filename", "rule_from_synth",
           "table_path", "write_table"]


@dataclass
class Entry:
    """One target of a table: ``status`` found/none/timeout, the rule if found, what this
    run did (``action``: synthesised / cached / reused / improved / decomposed), seconds,
    method."""

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
    """The rules of one PE. ``entries`` in target order (the targets of this run);
    ``rules()`` the found ones. ``path``: the table file of the cache entry (every target
    it holds, not only this run's); ``view``: the view ``<out>/<PE>.rules.json``."""

    pe: str
    spec_hash: str
    ir_hash: str
    width: int
    policy: BindingPolicy
    entries: list[Entry] = field(default_factory=list)
    seconds: float = 0.0
    path: Path | None = None
    view: Path | None = None

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


def _decomposable(t: Target) -> bool:
    return t.op in DECOMPOSITIONS and not t.const_inputs


def shape_parts(target: Target, shape: dict[str, Any]) -> list[Target] | None:
    """The part targets of a two-PE shape (:data:`peak.ir.TWO_PE_SHAPES`) for ``target``,
    one per node in order: the node's op with the node inputs fed by a constant input of
    ``target`` as its own constant inputs (``smax[in1=const]`` by ``mux(in0=$in1, in1=$in0,
    sel=sge($in0, $in1))`` needs ``coreir.sge[in1=const]`` and ``coreir.mux[in0=const]``).
    ``None`` if a part would be a constant-operand variant the library does not have (a
    commutative op's ``[in0=const]``)."""
    out = []
    for node in shape["nodes"]:
        consts = tuple(sorted(port for port, arg in node["args"].items()
                              if arg.startswith("$") and arg[1:] in target.const_inputs))
        if node["op"] in COMMUTATIVE and "in0" in consts:
            return None
        out.append(Target(node["op"], consts))
    return out


def compose_shape(spec: type, target: Target, width: int, shape: dict[str, Any],
                  parts: list[Rule | None]) -> Rule | None:
    """The two-PE rule of ``target`` (issue 41) from a shape of
    :data:`peak.ir.TWO_PE_SHAPES` and the single-PE rules of its parts (``parts``, one per
    node, as :func:`shape_parts`), or ``None`` if a part has no rule (or is not a single-PE
    rule without preconditions). Each node becomes one PE instance (id = node id): a part's
    ``ir`` bindings become the node's sources (an op input: ``ir``; the earlier node:
    ``wire`` from its PE output), its constant fields bind the target's constant input the
    node reads. The rule's pattern is the target's own DAG (:func:`peak.ir.target_dag`: the
    mapper matches the op itself, at cost 2). Not verified here: the caller proves it
    (:func:`verify_rule`) before it is stored."""
    instances: list[Instance] = []
    outs_of: dict[str, tuple[str, str]] = {}
    for node, part in zip(shape["nodes"], parts, strict=True):
        if part is None or part.cost != 1 or part.preconditions:
            return None
        src = part.instances[0]
        inputs: dict[str, InputBinding] = {}
        for pin, b in src.inputs.items():
            if b.kind == "ir":
                arg = node["args"][b.port]
                if arg.startswith("$"):
                    inputs[pin] = InputBinding("ir", port=arg[1:])
                else:
                    iid, pout = outs_of[arg]
                    inputs[pin] = InputBinding("wire", instance=iid, port=pout)
            else:
                inputs[pin] = b
        const_fields = {f: node["args"][port][1:] for f, port in src.const_fields.items()}
        instances.append(Instance(node["id"], dict(src.inst), const_fields, inputs))
        outs_of[node["id"]] = (node["id"], part.outputs["out"][1])
    op = ir_op(target.op, width)
    dag = target_dag(op, target)
    return Rule(target.key, target.op, width, list(target.const_inputs),
                list(target.preconditions), spec.__name__, spec_hash(spec), library_hash(),
                instances, {"out": outs_of[shape["outputs"]["out"]]}, dag,
                priority=len(dag["nodes"]))


# ---------------------------------------------------------------------------- one target
def _synthesised(spec: type, t: Target, width: int, policy: BindingPolicy, method: str,
                 timeout_ms: int, action: str = "synthesised") -> Entry:
    """Synthesise ``t``; a found rule is verified independently before it is returned."""
    res = synthesize(spec, t, width, policy, method, timeout_ms)
    if res.status == "found":
        rule = rule_from_synth(spec, t, width, res)
        v = verify_rule(rule, spec, timeout_ms)
        if not v.ok:
            raise RuleError(f"synthesised rule {t.key} on {spec.__name__} failed its "
                            f"independent check: {v.reason}")
        return Entry(t.key, t.op, "found", rule, "", action, res.seconds, res.method)
    reason = ("no instruction and binding implements it" if res.status == "none"
              else f"z3 timed out ({timeout_ms} ms per query)")
    return Entry(t.key, t.op, res.status, None, reason, "synthesised", res.seconds,
                 res.method)


def instruction_fields(spec: type) -> dict[str, int]:
    """Instruction field name -> the code a field new to a rule gets in :func:`adapt_rule`:
    0, or the smallest tag code of an enum field without a member coded 0."""

    out: dict[str, int] = {}
    for f in assembler(normal_form(spec).isa).fields:
        out[f.name] = 0 if f.tags is None or 0 in f.tags.values() else min(f.tags.values())
    return out


def adapt_rule(rule: Rule, fields: dict[str, int], inputs: list[str]) -> Rule:
    """``rule`` (of an earlier version of a spec) with its instances made to fit the edited
    spec: instruction fields the spec no longer has are dropped and new ones get their
    default code (``fields``, :func:`instruction_fields`); bindings of PE inputs the spec no
    longer has are dropped and new ``inputs`` are bound ``free`` (any value). Nothing is
    assumed about the result: the caller re-verifies it (∀ check) like any reused rule, so
    an edit whose new field or input changes what the old instruction computes fails the
    proof and the target is synthesised again."""
    instances = []
    for ins in rule.instances:
        inst = {k: v for k, v in ins.inst.items() if k in fields}
        consts = {k: v for k, v in ins.const_fields.items() if k in fields}
        for k, code in fields.items():
            if k not in inst and k not in consts:
                inst[k] = code
        binds = {k: b for k, b in ins.inputs.items() if k in inputs}
        for k in inputs:
            binds.setdefault(k, InputBinding("free"))
        instances.append(replace(ins, inst=inst, const_fields=consts, inputs=binds))
    return replace(rule, instances=instances)


def solve_target(spec: type, t: Target, width: int, policy: BindingPolicy, method: str,
                 timeout_ms: int, candidate: Entry | None = None) -> Entry:
    """The entry of ``t`` on ``spec``. ``candidate``: an entry from the cache (``action``
    ``cached``: same key) or from the base table (``reused``: an earlier version of the
    spec). A candidate rule is re-verified (∀ check) and kept if it holds — a reused
    multi-PE rule only if a single-PE synthesis finds no cheaper rule; a cached
    ``none``/``timeout`` is kept; anything else is synthesised."""
    t1 = time.perf_counter()
    if candidate is not None and candidate.rule is not None:
        v = verify_rule(candidate.rule, spec, timeout_ms)
        if v.ok:
            kept = replace(candidate, seconds=time.perf_counter() - t1, method="verify")
            if candidate.action == "cached" or candidate.rule.cost <= 1:
                return kept
            better = _synthesised(spec, t, width, policy, method, timeout_ms, "improved")
            if better.status == "found" and better.rule is not None \
                    and better.rule.cost < candidate.rule.cost:
                better.seconds = time.perf_counter() - t1
                return better
            kept.seconds = time.perf_counter() - t1
            return kept
    elif candidate is not None and candidate.action == "cached":
        return replace(candidate, seconds=0.0, method="")
    e = _synthesised(spec, t, width, policy, method, timeout_ms)
    e.seconds = time.perf_counter() - t1
    return e


# ---------------------------------------------------------------------------- workers
_WORKER: dict[str, Any] = {}


def _init_worker(spec: type, parent_pid: int) -> None:
    # A worker dies with the parent (kill -9 of `cgra rules`): else it would block forever
    # on the task queue, holding the cache entry's lock it inherited (cgra.procs).
    die_with_parent(parent_pid)
    # Ctrl-C reaches the whole process group: the parent handles it and terminates the
    # workers (a worker raising KeyboardInterrupt would print a traceback); SIGTERM (what
    # the parent sends) ends a worker at once, not through the parent's inherited handler.
    # z3 would catch SIGINT during a query and answer "unknown" (read as a timeout).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    z3.set_param("ctrl_c", False)
    _WORKER["spec"] = spec
    pe_context(spec)          # elaborated in the parent before the fork: a cache hit


def _work(key: str, width: int, policy: BindingPolicy, method: str, timeout_ms: int,
          candidate: Entry | None) -> Entry:
    return solve_target(_WORKER["spec"], target_from_key(key, width), width, policy, method,
                        timeout_ms, candidate)


def _terminate(ex: ProcessPoolExecutor) -> None:
    """Stop a pool now: cancel what has not started and terminate the worker processes
    (``ProcessPoolExecutor.terminate_workers`` from Python 3.14 on)."""
    stop = getattr(ex, "terminate_workers", None)
    if stop is not None:
        stop()
        return
    procs = list((getattr(ex, "_processes", None) or {}).values())
    manager = getattr(ex, "_executor_manager_thread", None)
    for p in procs:
        if p.is_alive():
            p.terminate()
    ex.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        p.join(5)
    # Wait for the pool's manager thread to close its wake-up pipe: if it were still
    # closing it at interpreter exit, concurrent.futures' exit hook could write to the
    # half-closed pipe and print an OSError traceback after "aborted" (Python 3.11).
    if manager is not None:
        manager.join(5)


# ---------------------------------------------------------------------------- loading
def load_table(path: Path | str, spec: type | None = None,
               timeout_ms: int = DEFAULT_TIMEOUT_MS) -> RuleTable:
    """Read a table file (or a directory holding one: a view or a cache entry) and its rule
    files (:func:`peak.rules.format.read_table`). With ``spec``, check the spec hash and
    verify every rule on it (∀ check) — :class:`RuleError` naming the rule and the
    counterexample if one fails. Raises :class:`~cgra.errors.CollateralError` for a
    missing / malformed file."""
    f = read_table(Path(path))
    t = RuleTable(f.pe, f.spec_hash, f.ir_hash, f.width, BindingPolicy.from_json(f.policy),
                  path=f.path)
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


def _read_lenient(path: Path) -> TableFile | None:
    """A table for the cache (entries whose rule file is unreadable left out), or ``None``
    if it is absent or unreadable (then rebuilt)."""
    if not path.is_file():
        return None
    try:
        return read_table(path, skip_bad_rules=True)
    except CgraError:
        return None


def _read_timing(table: Path) -> dict[str, dict[str, Any]]:
    try:
        doc = json.loads(timing_path(table).read_text())
        return {str(e["target"]): dict(e) for e in doc["entries"]}
    except (OSError, ValueError, TypeError, KeyError):
        return {}


def _find_base(out: Path, pe_name: str, h: str, ih: str, width: int,
               policy: dict[str, Any]) -> TableFile | None:
    """The table to reuse rules from after an edit: the newest table of a PE class named
    ``pe_name`` in the cache of ``out`` or its view, with the same IR library hash, width
    and policy and another spec hash."""
    cands = cached_tables(out, pe_name)
    view = table_path(out, pe_name)
    if view.is_file():
        cands.append(view)
    cands.sort(key=lambda p: -p.stat().st_mtime_ns)
    for p in cands:
        hd = read_header(p)
        if hd is None or hd["pe"] != pe_name or hd["spec_hash"] == h or hd["ir_hash"] != ih \
                or hd["width"] != width or hd["policy"] != policy:
            continue
        base = _read_lenient(p)
        if base is not None:
            return base
    return None


# ---------------------------------------------------------------------------- the cache entry
class _Store:
    """The table of one cache entry while a run updates it (the caller holds its lock):
    every entry read from disk plus this run's, written after each update."""

    def __init__(self, spec: type, directory: Path, header: TableFile,
                 order: dict[str, int]) -> None:
        self.spec = spec
        self.dir = directory
        self.header = header
        self.order = order
        self.entries: dict[str, TableEntry] = {}
        self.timing: dict[str, dict[str, Any]] = {}
        self.dirty = False
        self.flushed = time.perf_counter()

    def load(self) -> TableFile | None:
        old = _read_lenient(table_path(self.dir, self.header.pe))
        h = self.header
        if old is None or (old.pe, old.spec_hash, old.ir_hash, old.width, old.policy) != \
                (h.pe, h.spec_hash, h.ir_hash, h.width, h.policy):
            return None
        self.entries = {e.target: e for e in old.entries}
        self.timing = _read_timing(table_path(self.dir, h.pe))
        return old

    def table(self) -> TableFile:
        h = self.header
        big = len(self.order)
        ents = sorted(self.entries.values(), key=lambda e: (self.order.get(e.target, big),
                                                           e.target))
        return TableFile(h.pe, h.spec_hash, h.ir_hash, h.width, h.policy, ents)

    #: seconds between two writes of the table while targets complete
    FLUSH_EVERY = 0.2

    def put(self, e: Entry, seconds: float) -> None:
        """Record ``e``; a new rule's file is written at once, the table and timing files
        (which name it) at most every :attr:`FLUSH_EVERY` seconds and by :meth:`flush`. A
        cached entry changes nothing on disk."""
        self.entries[e.target] = TableEntry(e.target, e.op, e.status, e.rule, e.reason)
        self.timing[e.target] = {"target": e.target, "status": e.status, "action": e.action,
                                 "seconds": round(e.seconds, 4), "method": e.method}
        if e.action == "cached":
            return
        if e.rule is not None:
            write_rule(e.rule, self.spec, self.dir / self.header.pe / rule_filename(e.target))
        self.dirty = True
        if time.perf_counter() - self.flushed >= self.FLUSH_EVERY:
            self.flush(seconds)

    def flush(self, seconds: float, prune: bool = False) -> TableFile:
        """Write the table and the timing file (rule files are already in place)."""
        t = self.table()
        write_table_file(t, None, self.dir, prune=prune, rules=())
        timing = {"pe": t.pe, "seconds": round(seconds, 3),
                  "entries": [self.timing[e.target] for e in t.entries
                              if e.target in self.timing]}
        write_atomic(timing_path(t.path), json.dumps(timing, indent=2) + "\n")
        self.dirty = False
        self.flushed = time.perf_counter()
        return t


# ---------------------------------------------------------------------------- building
Progress = Callable[[Entry, int, int], None]


def build_table(spec: type, out: Path | str, jobs: int = 1, width: int | None = None,
                policy: BindingPolicy | None = None, method: str = "auto",
                timeout_ms: int = DEFAULT_TIMEOUT_MS, only: list[str] | None = None,
                progress: Progress | None = None, force: bool = False,
                on_wait: Callable[[Path], None] | None = None) -> RuleTable:
    """Synthesise (or reuse) the rule of every target of the IR library on ``spec`` through
    the shared rules directory ``out`` (cache entry + view; module docstring). The targets
    are :func:`peak.ir.targets`, with the BFloat16 ops when the spec asks for them
    (``ir_float = True``, :func:`peak.ir.wants_float`).

    ``width``: IR op width in bits (default: the PE's widest input); ``jobs``: worker
    processes; ``only``: restrict to these target keys (other entries of the cache entry are
    kept); ``force``: re-synthesise, reading nothing from the cache; ``progress(entry,
    done, total)`` is called as each target completes; ``on_wait(dir)`` when another process
    holds the lock. Returns the :class:`RuleTable` of this run's targets. Raises
    :class:`cgra.errors.SpecError` for a malformed spec (nothing written),
    :class:`RuleError` for an unknown target or when a synthesised rule fails its
    independent check (a synthesiser bug, never written)."""
    t0 = time.perf_counter()
    out = Path(out)
    policy = policy or BindingPolicy()
    pe = pe_context(spec)                       # SpecError before anything is written
    width = width or pe.data_width
    h, ih = spec_hash(spec), library_hash()
    all_targets = targets(width, floats=wants_float(spec))
    tlist = all_targets
    if only is not None:
        unknown = set(only) - {t.key for t in all_targets}
        if unknown:
            raise RuleError(f"unknown rule targets {sorted(unknown)}")
        tlist = [t for t in all_targets if t.key in only]
    pol = policy.to_json()
    edir = entry_dir(out, h, ih, width, pol)
    header = TableFile(spec.__name__, h, ih, width, pol)
    store = _Store(spec, edir, header, {t.key: i for i, t in enumerate(all_targets)})
    with locked(edir, on_wait):
        old = store.load()          # with force: kept until each target is redone
        cached = None if force else old
        cached_of = {e.target: e for e in cached.entries} if cached is not None else {}
        base = None
        if not force and any(t.key not in cached_of for t in tlist):
            base = _find_base(out, spec.__name__, h, ih, width, pol)
        base_of = {e.target: e for e in base.entries} if base is not None else {}
        timing_hint = _read_timing(base.path) if base is not None and base.path else {}
        timing_hint.update(store.timing)

        field_codes = instruction_fields(spec)
        pe_inputs = [name for name, _ in normal_form(spec).inputs]
        tasks: list[tuple[Target, Entry | None]] = []
        for t in tlist:
            cand = None
            ce = cached_of.get(t.key)
            be = base_of.get(t.key)
            if not force and ce is not None:
                cand = Entry(t.key, t.op, ce.status, ce.rule, ce.reason, "cached")
            elif not force and be is not None and be.rule is not None:
                rule = adapt_rule(replace(be.rule, spec_hash=h, pe=spec.__name__), field_codes,
                                  pe_inputs)
                cand = Entry(t.key, t.op, "found", rule, "", "reused")
            tasks.append((t, cand))
        # longest first (previous times when known; synthesis before re-verification)
        tasks.sort(key=lambda tc: (tc[1] is not None and tc[1].rule is not None,
                                   -float(timing_hint.get(tc[0].key, {}).get("seconds", 1.0))
                                   if tc[1] is None or tc[1].rule is None else 0.0))

        done: dict[str, Entry] = {}
        total = len(tlist)

        def finish(t: Target, e: Entry) -> None:
            done[t.key] = e
            if not (_decomposable(t) and e.status != "found"):
                store.put(e, time.perf_counter() - t0)      # else: after its compose step
            if progress is not None:
                progress(e, len(done), total)

        try:
            if tasks:
                _run_pool(spec, tasks, jobs, width, policy, method, timeout_ms, finish)
            _compose_all(spec, tlist, width, timeout_ms, done, store, t0)
            _two_pe_all(spec, tlist, width, policy, method, timeout_ms, done, store, t0)
        except BaseException:
            if store.dirty:         # keep what was proved (Ctrl-C, SIGTERM, a failed check)
                store.flush(time.perf_counter() - t0)
            raise
        seconds = time.perf_counter() - t0
        final = store.flush(seconds, prune=True)
        with locked(out, on_wait):              # the view: a copy of this entry
            copy_table(final, out)
    return RuleTable(spec.__name__, h, ih, width, policy, [done[t.key] for t in tlist],
                     seconds, final.path, table_path(out, spec.__name__))


def _compose_all(spec: type, tlist: list[Target], width: int, timeout_ms: int,
                 done: dict[str, Entry], store: _Store, t0: float) -> None:
    """Decompositions for the targets of ``tlist`` without a single-PE rule, from the
    parts' rules anywhere in the cache entry; updates ``done`` and ``store``."""
    for t in tlist:
        e = done[t.key]
        if not _decomposable(t) or e.status == "found":
            continue
        t1 = time.perf_counter()
        parts = {n["op"]: store.entries[n["op"]].rule for n in DECOMPOSITIONS[t.op]["nodes"]
                 if n["op"] in store.entries}
        rule = compose(spec, t, width, parts)
        if rule is None:
            missing = [n["op"] for n in DECOMPOSITIONS[t.op]["nodes"]
                       if parts.get(n["op"]) is None]
            reason = f"no single-PE rule; decomposition needs {', '.join(missing)}"
            done[t.key] = replace(e, reason=reason)
            store.put(done[t.key], time.perf_counter() - t0)
            continue
        v: VerifyResult = verify_rule(rule, spec, timeout_ms)
        if not v.ok:
            raise RuleError(f"decomposed rule {t.key} on {spec.__name__} failed its "
                            f"check: {v.reason}")
        done[t.key] = Entry(t.key, t.op, "found", rule, "", "decomposed",
                            e.seconds + time.perf_counter() - t1, "compose")
        store.put(done[t.key], time.perf_counter() - t0)


_NO_SHAPE = "; no two-PE shape has single-PE parts "


def _shape_name(shape: dict[str, Any]) -> str:
    return " -> ".join(n["op"].split(".")[-1] for n in shape["nodes"])


def _two_pe_all(spec: type, tlist: list[Target], width: int, policy: BindingPolicy,
                method: str, timeout_ms: int, done: dict[str, Entry], store: _Store,
                t0: float) -> None:
    """Two-PE rules (issue 41) for the targets of ``tlist`` whose op has shapes in
    :data:`peak.ir.TWO_PE_SHAPES` and that have no rule (single-PE synthesis found none):
    the first shape whose parts all have single-PE rules and whose composition
    (:func:`compose_shape`) proves correct (:func:`verify_rule`, z3 with ``timeout_ms``)
    becomes the entry, ``action`` ``decomposed``, method ``shape <n0> -> <n1>``. The parts'
    rules come from the cache entry (this run's or earlier ones); a part target it does not
    hold (an ``only`` run) is synthesised here and stored. A composition failing its proof is
    a bug in a shape (:class:`RuleError`: the shapes are checked on the IR references by the
    tests). Updates ``done`` and ``store``."""
    for t in tlist:
        e = done[t.key]
        if t.op not in TWO_PE_SHAPES or e.status == "found":
            continue
        t1 = time.perf_counter()
        tried = []
        for shape in TWO_PE_SHAPES[t.op]:
            pts = shape_parts(t, shape)
            if pts is None:
                continue
            rules: list[Rule | None] = []
            for pt in pts:
                te = store.entries.get(pt.key)
                if te is None:
                    part = _synthesised(spec, pt, width, policy, method, timeout_ms)
                    store.put(part, time.perf_counter() - t0)
                    te = store.entries[pt.key]
                rules.append(te.rule)
            rule = compose_shape(spec, t, width, shape, rules)
            tried.append(_shape_name(shape))
            if rule is None:
                continue
            v: VerifyResult = verify_rule(rule, spec, timeout_ms)
            if not v.ok:
                raise RuleError(f"two-PE rule {t.key} ({_shape_name(shape)}) on "
                                f"{spec.__name__} failed its check: {v.reason}")
            done[t.key] = Entry(t.key, t.op, "found", rule, "", "decomposed",
                                e.seconds + time.perf_counter() - t1,
                                f"shape {_shape_name(shape)}")
            break
        else:
            reason = (f"{e.reason.split(_NO_SHAPE)[0]}{_NO_SHAPE}"
                      f"({', '.join(tried) or 'none applies'})")
            done[t.key] = replace(e, reason=reason, seconds=e.seconds + time.perf_counter() - t1)
        store.put(done[t.key], time.perf_counter() - t0)


def _run_pool(spec: type, tasks: list[tuple[Target, Entry | None]], jobs: int, width: int,
              policy: BindingPolicy, method: str, timeout_ms: int,
              finish: Callable[[Target, Entry], None]) -> None:
    """Solve ``tasks`` in ``jobs`` forked worker processes (they inherit the elaborated PE),
    calling ``finish`` in this process as each completes. On any exception here (Ctrl-C,
    SIGTERM, a failed check) the workers are terminated before it propagates. With
    ``jobs=1`` too: this process only waits, so an interrupt is handled at once instead of
    after the z3 query running in it."""
    ctx = multiprocessing.get_context("fork")
    ex = ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=ctx,
                             initializer=_init_worker, initargs=(spec, os.getpid()))
    try:
        futs: dict[Future, Target] = {
            ex.submit(_work, t.key, width, policy, method, timeout_ms, cand): t
            for t, cand in tasks}
        pending = set(futs)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in sorted(finished, key=lambda f: futs[f].key):
                finish(futs[fut], fut.result())
    except BaseException:
        _terminate(ex)
        raise
    ex.shutdown(wait=True)


def write_table(table: RuleTable, spec: type, out: Path) -> None:
    """Write ``table`` as a self-contained table in the directory ``out``: the table file,
    one file per rule (:func:`peak.rules.format.write_table`; stale rule files removed) and
    the timing file (no cache, no lock: for exporting a table)."""
    out = Path(out)
    f = TableFile(table.pe, table.spec_hash, table.ir_hash, table.width,
                  table.policy.to_json(),
                  [TableEntry(e.target, e.op, e.status, e.rule, e.reason)
                   for e in table.entries])
    write_table_file(f, spec, out)
    timing = {"pe": table.pe, "seconds": round(table.seconds, 3),
              "entries": [{"target": e.target, "status": e.status, "action": e.action,
                           "seconds": round(e.seconds, 4), "method": e.method}
                          for e in table.entries]}
    write_atomic(out / f"{table.pe}.timing.json", json.dumps(timing, indent=2) + "\n")


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
    from peak.normalize import normal_form  # deferred: the import would close an import circle or shadow a name
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
