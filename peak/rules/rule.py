"""The independent ∀ check of a rewrite rule (the rule records and their JSON form live in
:mod:`peak.rules.format`, the one owner of the rule-table file format).

:func:`verify_rule` re-evaluates the PE spec with the rule's concrete instruction through
:func:`peak.smt.evaluate_smt` (not the synthesiser's symbolic elaboration), composes the
instances, and asks z3 for an input on which ``IR != PE`` (with a timeout). It is run on every
rule before it is written, on every cached rule when loaded, and against another PE by the
optimised-PE check.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import hwtypes as ht
import z3

from cgra.errors import ConfigError, SpecError
from peak.assembler import assembler
from peak.ir import ir_op
from peak.normalize import normal_form
from peak.rules.format import (RULE_SCHEMA, RULE_VERSION, InputBinding, Instance, Rule,
                               read_rule, write_rule)
from peak.smt import evaluate_smt, to_z3

__all__ = ["RULE_SCHEMA", "RULE_VERSION", "Counterexample", "InputBinding", "Instance", "Rule",
           "VerifyResult", "read_rule", "verify_rule", "write_rule"]

_CALLS = itertools.count()


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
