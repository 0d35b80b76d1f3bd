"""Rule records, their JSON form, and the independent ∀ check of a rule.

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

:func:`verify_rule` is the independent ∀ check: it re-evaluates the PE spec with the
rule's concrete instruction through :func:`peak.smt.evaluate_smt` (not the synthesiser's
symbolic elaboration), composes the instances, and asks z3 for an input on which
``IR != PE`` (with a timeout). It is run on every rule before it is written, on every
cached rule when loaded, and against another PE by the optimised-PE check.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hwtypes as ht
import z3

from cgra.errors import ConfigError, RuleError, SpecError
from peak.assembler import assembler
from peak.ir import Precondition, ir_op
from peak.normalize import normal_form
from peak.smt import evaluate_smt, to_z3

_CALLS = itertools.count()

RULE_SCHEMA = "peak-rewrite-rule"
RULE_VERSION = 1


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
        kind = d.get("kind")
        if kind not in ("ir", "free", "tie", "wire"):
            raise RuleError(f"{where}: input binding kind {kind!r} is not ir/free/tie/wire")
        return InputBinding(kind, d.get("port"), d.get("value"), d.get("instance"))


@dataclass
class Instance:
    """One configured PE of a rule: instruction field values (constant fields 0),
    constant field -> IR constant port, PE input -> binding."""

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

    # ------------------------------------------------------------------ JSON
    def to_json(self, spec: type) -> dict[str, Any]:
        """JSON-ready dict; ``spec`` supplies the instruction layout (tags, bit offsets)."""
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
    def from_json(d: dict[str, Any], where: str = "rule") -> "Rule":
        """Parse a rule dict; :class:`RuleError` naming ``where`` and the key on any
        schema problem."""
        if not isinstance(d, dict) or d.get("schema") != RULE_SCHEMA:
            raise RuleError(f"{where}: not a rule file (schema {RULE_SCHEMA!r} expected)")
        if d.get("version") != RULE_VERSION:
            raise RuleError(f"{where}: rule schema version {d.get('version')} is not "
                            f"{RULE_VERSION}; regenerate with `cgra rules`")
        try:
            insts = [Instance(i["id"], {k: int(v) for k, v in i["inst"].items()},
                              {fn: c["port"] for fn, c in i["const_fields"].items()},
                              {k: InputBinding.from_json(v, f"{where}: input {k}")
                               for k, v in i["inputs"].items()})
                     for i in d["instances"]]
            return Rule(d["target"], d["op"], int(d["width"]), list(d["const_inputs"]),
                        [Precondition(p["port"], p["op"], int(p["value"]))
                         for p in d["preconditions"]],
                        d["pe"], d["spec_hash"], d["ir_hash"], insts,
                        {k: (v["instance"], v["port"]) for k, v in d["outputs"].items()},
                        d["pattern"], int(d["priority"]))
        except (KeyError, TypeError, ValueError) as e:
            raise RuleError(f"{where}: malformed rule ({type(e).__name__}: {e}); "
                            "regenerate with `cgra rules`") from e


def write_rule(rule: Rule, spec: type, path: Path) -> None:
    """Write ``rule`` as stable JSON (sorted keys, 2-space indent) to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rule.to_json(spec), indent=2, sort_keys=True) + "\n")


def read_rule(path: Path) -> Rule:
    """Parse a rule file; :class:`RuleError` naming the file if unreadable/malformed."""
    try:
        d = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise RuleError(f"{path}: cannot read rule file: {e}") from e
    return Rule.from_json(d, str(path))


# ---------------------------------------------------------------------------- verification
@dataclass
class Counterexample:
    """Inputs (IR ports and constants, plus free PE inputs / state by
    ``<instance>.<name>``), expected IR outputs and the PE's outputs, all unsigned ints."""

    inputs: dict[str, int]
    expected: dict[str, int]
    got: dict[str, int]

    def __str__(self) -> str:
        def fmt(d: dict[str, int]) -> str:
            return ", ".join(f"{k}={v:#x}" for k, v in d.items())
        return f"inputs {{{fmt(self.inputs)}}} expected {{{fmt(self.expected)}}} " \
               f"got {{{fmt(self.got)}}}"


@dataclass
class VerifyResult:
    """``ok`` True when ∀ inputs IR == PE; else ``counterexample`` or ``reason``."""

    ok: bool
    counterexample: Counterexample | None = None
    reason: str = ""


def _var(name: str, width: int) -> Any:
    if width == 1:
        return ht.SMTBit(name=f"{name}.b")
    return ht.SMTBitVector[width](name=f"{name}.w{width}")


def _width(T: Any) -> int:
    return T.size if hasattr(T, "size") else 1


def _z3_int(v: Any) -> int:
    if z3.is_true(v):
        return 1
    if z3.is_false(v):
        return 0
    return v.as_long()


def verify_rule(rule: Rule, spec: type, timeout_ms: int = 30_000) -> VerifyResult:
    """Prove ``∀ inputs: pre → IR(inputs) == rule applied to spec`` with z3.

    Independent of the synthesiser: the PE is evaluated afresh on the rule's concrete
    instruction. Returns a :class:`VerifyResult` (never raises for a wrong rule); raises
    :class:`RuleError` only for an unknown IR op / width."""
    op = ir_op(rule.op, rule.width)
    nf = normal_form(spec)
    asm = assembler(nf.isa)
    tag = f"rv{next(_CALLS)}.{rule.target}"       # fresh SMT names per check
    ports = {p.name: p.width for p in op.inputs}
    ir_vals: dict[str, Any] = {}
    for p in op.inputs:
        ir_vals[p.name] = _var(f"{tag}.{p.name}", p.width)
    const_vals: dict[str, Any] = {c.name: _var(f"{tag}.#{c.name}", c.width) for c in op.consts}
    ir_fields: dict[str, Any] = {}
    for f in assembler(normal_form(op.spec).isa).fields:
        ir_fields[f.name] = const_vals[f.name] if f.name in const_vals else 0
    ir_out, _ = evaluate_smt(op.spec, ir_fields, [ir_vals[p.name] for p in op.inputs])
    expected = {p.name: v for p, v in zip(op.outputs, ir_out, strict=True)}
    named: dict[str, Any] = {f"{k}": v for k, v in ir_vals.items()}
    named.update({f"#{k}": v for k, v in const_vals.items()})
    rule_consts = dict(const_vals)
    for p in rule.const_inputs:
        if p not in ports:
            return VerifyResult(False, reason=f"constant input '{p}' is not a port of {rule.op}")
        rule_consts[p] = ir_vals[p]

    outs: dict[str, dict[str, Any]] = {}
    field_names = [f.name for f in asm.fields]
    for ins in rule.instances:
        missing = [f for f in field_names if f not in ins.inst and f not in ins.const_fields]
        extra = [f for f in list(ins.inst) + list(ins.const_fields) if f not in field_names]
        if missing or extra:
            return VerifyResult(False, reason=f"instance {ins.id}: instruction fields do not "
                                f"match {spec.__name__} (missing {missing}, unknown {extra})")
        fields: dict[str, Any] = {}
        for f in asm.fields:
            if f.name in ins.const_fields:
                port = ins.const_fields[f.name]
                if port not in rule_consts:
                    return VerifyResult(False, reason=f"instance {ins.id}: field {f.name} "
                                        f"binds unknown constant '{port}'")
                v = rule_consts[port]
                if _width(type(v)) != f.width and not (f.width == 1 and isinstance(v, ht.SMTBit)):
                    return VerifyResult(False, reason=f"instance {ins.id}: field {f.name} "
                                        f"({f.width} bits) binds constant '{port}' of another "
                                        "width")
                fields[f.name] = v
            else:
                val = ins.inst[f.name]
                if f.tags is not None and val not in set(f.tags.values()):
                    return VerifyResult(False, reason=f"instance {ins.id}: field {f.name} = "
                                        f"{val} is not a valid code {f.tags}")
                if not 0 <= val < (1 << f.width):
                    return VerifyResult(False, reason=f"instance {ins.id}: field {f.name} = "
                                        f"{val} does not fit {f.width} bits")
                fields[f.name] = val
        args = []
        for pin, T in nf.inputs:
            w = _width(T)
            b = ins.inputs.get(pin)
            if b is None:
                return VerifyResult(False, reason=f"instance {ins.id}: no binding for PE "
                                    f"input {pin}")
            if b.kind == "ir":
                if b.port not in ir_vals or ports[b.port] != w:
                    return VerifyResult(False, reason=f"instance {ins.id}: input {pin} "
                                        f"binds IR port {b.port!r} (missing or wrong width)")
                args.append(ir_vals[b.port])
            elif b.kind == "free":
                v = _var(f"{tag}.{ins.id}.{pin}", w)
                named[f"{ins.id}.{pin}"] = v
                args.append(v)
            elif b.kind == "tie":
                args.append(int(b.value or 0))
            else:
                src = outs.get(b.instance or "", {}).get(b.port or "")
                if src is None:
                    return VerifyResult(False, reason=f"instance {ins.id}: input {pin} wires "
                                        f"{b.instance}.{b.port}, not an earlier instance output")
                args.append(src)
        state = []
        for leaf in nf.state:
            v = _var(f"{tag}.{ins.id}.state.{leaf.name}", _width(leaf.T))
            named[f"{ins.id}.state.{leaf.name}"] = v
            state.append(v)
        try:
            o, _ = evaluate_smt(spec, fields, args, state)
        except (ConfigError, SpecError) as e:
            return VerifyResult(False, reason=f"instance {ins.id}: {e}")
        outs[ins.id] = {n: v for (n, _), v in zip(nf.outputs, o, strict=True)}
    got: dict[str, Any] = {}
    for port, (iid, pout) in rule.outputs.items():
        if iid not in outs or pout not in outs[iid]:
            return VerifyResult(False, reason=f"output {port} names {iid}.{pout}, which does "
                                "not exist")
        got[port] = outs[iid][pout]
    if set(got) != set(expected):
        return VerifyResult(False, reason=f"outputs {sorted(got)} do not match the op's "
                            f"{sorted(expected)}")
    for port in expected:
        if _width(type(got[port])) != _width(type(expected[port])):
            return VerifyResult(False, reason=f"output {port}: width mismatch")
    eq = ht.SMTBit(1)
    for port in expected:
        eq = eq & (expected[port] == got[port])
    s = z3.SolverFor("QF_BV")
    s.set("timeout", int(timeout_ms))
    for pc in rule.preconditions:
        if pc.op != "ult" or pc.port not in rule_consts:
            return VerifyResult(False, reason=f"unsupported precondition {pc}")
        s.add(to_z3((rule_consts[pc.port] < pc.value).value))
    s.add(z3.Not(to_z3(eq.value)))
    r = s.check()
    if r == z3.unsat:
        return VerifyResult(True)
    if r == z3.unknown:
        return VerifyResult(False, reason=f"z3 gave up after {timeout_ms} ms "
                            f"({s.reason_unknown()})")
    m = s.model()

    def ev(v: Any) -> int:
        return _z3_int(m.eval(to_z3(v.value), model_completion=True))
    cex = Counterexample({k: ev(v) for k, v in named.items()},
                         {k: ev(v) for k, v in expected.items()},
                         {k: ev(v) for k, v in got.items()})
    return VerifyResult(False, counterexample=cex, reason=f"counterexample: {cex}")
