"""Rewrite-rule synthesis from a PEak PE spec (DESIGN.md §3 peak; PEak paper, Daly et al.,
"Synthesizing Instruction Selection Rewrite Rules from RTL using SMT", FMCAD 2022).

For each target of the IR library (:mod:`peak.ir`: CoreIR primitives, multi-op patterns,
constant-operand variants) find a PE instruction and bindings with
``∀ inputs: IR(inputs) == PE(inst, bound inputs)`` (:mod:`peak.rules.synth`), re-verify it
independently (:func:`peak.rules.rule.verify_rule`) and write it (:mod:`peak.rules.rule`
documents the rule JSON, :mod:`peak.rules.table` the table JSON and the cache).

Public API::

    build_table(spec, out, jobs=1, width=None, policy=None, method="auto",
                timeout_ms=30000, only=None, progress=None) -> RuleTable
    load_table(path, spec=None) -> RuleTable        # spec given: hash check + ∀ check of
                                                    # every rule (verify on load)
    check_against(table, other_spec) -> list[CheckResult]   # optimised-PE check
    synthesize(spec, target, width, policy=None, method="auto", timeout_ms=30000)
        -> SynthResult                               # one target, no files
    verify_rule(rule, spec, timeout_ms=30000) -> VerifyResult
    load_spec("module:Class" | "file.py:Class" | "module:factory(8)") -> type
                                                    # = peak.load_spec (re-exported)
    BindingPolicy(ties="auto" | "bits" | "none" | {pe_input: (consts...)})

Command line: ``cgra rules --pe <module:Spec> --out <dir> [--jobs N]
[--check-against <module:Spec>]`` (:mod:`peak.rules.cli`); ``make rules`` runs it on the
default PE.

How the mapper uses a table (issue 7): read ``<dir>/<PE>.rules.json``; for each ``found``
entry load the rule file; cover the op DAG with the rules' ``pattern`` DAGs, highest
``priority`` first (multi-op patterns and constant-operand variants cover more nodes),
then lowest ``cost``; a rule with ``preconditions`` applies only when its constants
satisfy them. Ops of the kernels in ``mapper/data/coreir`` on the default PE:
``coreir.const`` has its own rule (a PE whose ``res`` is the ``data0_const`` field) but is
normally folded into the consumer through a ``[inX=const]`` variant; ``coreir.lshr`` and
``coreir.ashr`` (by a variable amount) have no rule because the PE shifts by ``b[3:0]``,
and the kernels only shift by constants, which the ``coreir.lshr[in1=const]`` /
``coreir.ashr[in1=const]`` rules cover (precondition: amount < 16; a larger constant
amount folds to 0 for lshr/shl and to ``ashr`` by 15); ``commonlib.absd`` is the
two-PE decomposition ``abs(sub(a, b))``.
"""
import importlib
from typing import Any

#: public name -> module defining it; loaded on first use, so that reading a rule table
#: (:mod:`peak.rules.format`, pure) never imports the synthesiser
_LAZY = {"load_spec": "peak.load", "Counterexample": "peak.rules.rule",
         "VerifyResult": "peak.rules.rule", "verify_rule": "peak.rules.rule",
         "Rule": "peak.rules.format", "read_rule": "peak.rules.format",
         "write_rule": "peak.rules.format", "BindingPolicy": "peak.rules.synth",
         "SynthResult": "peak.rules.synth", "synthesize": "peak.rules.synth",
         "CheckResult": "peak.rules.table", "Entry": "peak.rules.table",
         "RuleTable": "peak.rules.table", "build_table": "peak.rules.table",
         "check_against": "peak.rules.table", "load_table": "peak.rules.table"}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'peak.rules' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
