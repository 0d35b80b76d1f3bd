"""The resource vector of one PE: what a single PE tile offers a partitioner.

``pe_resources(pe, table) -> dict`` (schema ``"peak.resources/1"``) is computed from the PE's
collateral only: PEak's part of ``pe.json`` (:class:`peak.collateral.PEInfo`: ports, state,
instruction fields) and the PE's rewrite-rule table (:class:`peak.rules.format.TableFile`:
which IR ops an instruction implements). Editing the PE spec changes both, so the vector
follows the spec with no hand edit::

    {"schema": "peak.resources/1",
     "pe": "peak.examples.cgra_pe:PE", "name": "PE", "spec_hash": "<sha256 hex>",
     "data_width": 16,                               # bits of a word
     "width_classes": {"word": 16, "bit": 1},        # class -> bits
     "inputs":  {"bit": 3, "word": 2},               # data inputs per width class
     "outputs": {"bit": 1, "word": 1},               # data outputs per width class
     "registers": {"state": {"bit": 3, "word": 2},   # state (pipeline / delay) registers
                   "constants": {"bit": 1, "word": 2}},  # constant fields the rules load
     "control": {"counter_chains": 0, "counter_levels": 0,   # control hardware (below)
                 "token_fifos": 0, "token_slots": 0, "credit_counters": 0, "credits": 0,
                 "input_fifos": 0, "input_fifo_words": 0},
     "rules": "found",                               # "found" | "skipped" (no rule table)
     "ops": ["coreir.add", "coreir.const", ...],     # IR ops one PE executes (sorted)
     "const_only_ops": ["coreir.shl", ...],          # ... only with a constant operand
     "multi_op": {"pattern.select_slt": ["coreir.mux", "coreir.slt"], ...},
     "stages": 2}                                    # most IR ops one instruction covers

**Width classes** are named after the data width: ``word`` is a port of ``data_width`` bits
(the PE's widest input, :attr:`PEInfo.data_width`), ``bit`` a 1-bit port; a port of any
other width ``w`` is class ``"<w>b"`` (e.g. ``"8b"``).

**Ops** are the IR op names of the rule table (``coreir.add``, ``commonlib.smax``,
``float.add``, ...: the names :class:`mapper.collateral.RuleTable` covers with), taken from
the ``found`` rules that use one PE (``cost`` 1) and cover one IR op (constants
``coreir.const`` / ``corebit.const`` included: the PE materialises them). An op whose every
such rule binds a data input to a constant (``coreir.shl[in1=const]`` but no
``coreir.shl``) is listed in ``ops`` and in ``const_only_ops``. ``multi_op`` lists the
single-PE rules covering several IR ops (target -> the IR ops of its pattern, sorted,
constants left out); ``stages`` is the largest number of IR ops one instruction covers (1
when there is no multi-op rule, 0 without any rule). Multi-PE decompositions (``cost`` > 1)
are not resources of one PE and are left out. ``table=None`` (a design built with
``--no-rules``) gives ``"rules": "skipped"`` and ``ops``, ``const_only_ops``, ``multi_op``,
``stages`` all ``null``.

**Registers**: ``state`` counts the PE's state leaves (:attr:`PEInfo.state`, e.g. the
DELAY registers of the inputs) per width class; ``constants`` counts the instruction fields
the rules load constants into (``const_fields`` of the found rules), per width class of
the field, or, without a rule table, none (``{}``).

**Control** counts the control components the spec includes (:mod:`peak.control`, listed
in ``pe.json``'s ``control``; SARA §III-A): ``counter_chains`` and their ``counter_levels``
(counters, summed), ``token_fifos`` and their ``token_slots`` (depths summed),
``credit_counters`` and their ``credits`` (maximum credits summed), ``input_fifos`` and
their ``input_fifo_words`` (depths summed). Every key is present (0 for a PE without
control hardware); a document written before the key existed reads as all zeros.

The one reader of the document is :meth:`PEResources.from_json` (typed, frozen).

Pure (no solver, no hardware imports). Errors: :meth:`PEResources.from_json` raises
:class:`~cgra.errors.CollateralError` for a malformed document; :func:`pe_resources` has none
of its own (its inputs were checked by :meth:`PEInfo.from_json` and
:func:`peak.rules.format.read_table`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from cgra.resources import check_schema, counts, width_class
from cgra.errors import CollateralError
from peak.collateral import PEInfo
from peak.rules.format import Rule, TableFile

SCHEMA = "peak.resources/1"
#: IR ops that materialise a constant (no data input)
CONST_OPS = ("coreir.const", "corebit.const")


def _count(widths: Iterable[int], data_width: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for w in widths:
        c = width_class(w, data_width)
        out[c] = out.get(c, 0) + 1
    return dict(sorted(out.items()))


def _pattern_ops(rule: Rule) -> list[str]:
    """The IR ops of a rule's pattern, constants left out, sorted (with repeats)."""
    return sorted(str(n["op"]) for n in rule.pattern["nodes"] if n["op"] not in CONST_OPS)


#: the keys of the ``control`` table, in order, and what each adds per component:
#: (key, component kind, parameter summed or None to count the component)
CONTROL_KEYS = (("counter_chains", "counter_chain", None),
                ("counter_levels", "counter_chain", "levels"),
                ("token_fifos", "token_fifo", None),
                ("token_slots", "token_fifo", "depth"),
                ("credit_counters", "credit_counter", None),
                ("credits", "credit_counter", "max_credits"),
                ("input_fifos", "input_fifo", None),
                ("input_fifo_words", "input_fifo", "depth"))


def control_counts(control: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """The ``control`` table (module docstring) of the control components ``control``
    (:attr:`PEInfo.control`)."""
    out = {key: 0 for key, _, _ in CONTROL_KEYS}
    for c in control:
        for key, kind, param in CONTROL_KEYS:
            if c.get("kind") == kind:
                out[key] += 1 if param is None else int(c[param])
    return out


def pe_resources(pe: PEInfo, table: TableFile | None) -> dict[str, Any]:
    """The resource vector of PE ``pe`` (module docstring) with the rules of ``table``
    (``None``: no rule table, ``"rules": "skipped"``). Widths in bits, counts per width
    class. Deterministic: lists sorted, so equal inputs give equal JSON bytes."""
    dw = pe.data_width
    fields = {f.name: f.width for f in pe.fields}
    doc: dict[str, Any] = {
        "schema": SCHEMA, "pe": pe.spec, "name": pe.name, "spec_hash": pe.spec_hash,
        "data_width": dw,
        "width_classes": {width_class(w, dw): w for w in sorted(
            {p.width for p in (*pe.inputs, *pe.outputs)}, reverse=True)},
        "inputs": _count((p.width for p in pe.inputs), dw),
        "outputs": _count((p.width for p in pe.outputs), dw),
        "control": control_counts(pe.control),
    }
    state = _count((w for _, w, _ in pe.state), dw)
    if table is None:
        doc["registers"] = {"state": state, "constants": {}}
        doc.update({"rules": "skipped", "ops": None, "const_only_ops": None,
                    "multi_op": None, "stages": None})
        return doc
    single = [r for r in table.rules() if r.cost == 1]
    const_fields = sorted({f for r in single for ins in r.instances for f in ins.const_fields})
    doc["registers"] = {"state": state,
                        "constants": _count((fields[f] for f in const_fields if f in fields),
                                            dw)}
    one = [r for r in single if r.n_ops <= 1]
    ops = sorted({r.op for r in one})
    variable = {r.op for r in one if not r.const_inputs}
    multi = {r.target: _pattern_ops(r) for r in single if r.n_ops > 1}
    doc.update({
        "rules": "found",
        "ops": ops,
        "const_only_ops": sorted(set(ops) - variable - set(CONST_OPS)),
        "multi_op": dict(sorted(multi.items())),
        "stages": max((r.n_ops for r in single), default=0),
    })
    return doc


@dataclass(frozen=True)
class PEResources:
    """A ``peak.resources/1`` document (module docstring), typed. Counts per width class
    (``word``, ``bit``, ``<w>b``); ``ops``, ``const_only_ops``, ``multi_op`` and ``stages``
    are ``None`` when the design has no rule table (``rules == "skipped"``)."""

    spec: str
    name: str
    spec_hash: str
    data_width: int
    width_classes: Mapping[str, int]
    inputs: Mapping[str, int]
    outputs: Mapping[str, int]
    state_registers: Mapping[str, int]
    constant_registers: Mapping[str, int]
    rules: str
    ops: frozenset[str] | None
    const_only_ops: frozenset[str] | None
    multi_op: Mapping[str, tuple[str, ...]] | None
    stages: int | None
    #: the ``control`` table (module docstring): component counts and summed sizes
    control: Mapping[str, int] = field(default_factory=lambda: MappingProxyType(
        {key: 0 for key, _, _ in CONTROL_KEYS}))

    @classmethod
    def from_json(cls, doc: Any, where: str = "PE resources") -> "PEResources":
        """Parse a ``peak.resources/1`` document. Raises :class:`CollateralError` naming
        ``where`` and the missing or malformed key."""
        check_schema(doc, SCHEMA, where)
        try:
            found = doc["rules"] == "found"
            if doc["rules"] not in ("found", "skipped"):
                raise ValueError(f"'rules' is {doc['rules']!r}, not 'found' or 'skipped'")
            regs = doc["registers"]
            return cls(
                str(doc["pe"]), str(doc["name"]), str(doc["spec_hash"]),
                int(doc["data_width"]), counts(doc, "width_classes"),
                counts(doc, "inputs"), counts(doc, "outputs"),
                counts(regs, "state"), counts(regs, "constants"), str(doc["rules"]),
                frozenset(str(o) for o in doc["ops"]) if found else None,
                frozenset(str(o) for o in doc["const_only_ops"]) if found else None,
                MappingProxyType({str(k): tuple(str(o) for o in v)
                                  for k, v in doc["multi_op"].items()}) if found else None,
                int(doc["stages"]) if found else None,
                MappingProxyType({**{key: 0 for key, _, _ in CONTROL_KEYS},
                                  **counts(doc, "control")}) if "control" in doc
                else MappingProxyType({key: 0 for key, _, _ in CONTROL_KEYS}))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CollateralError(f"{where}: malformed PE resources ({exc!r}); regenerate "
                                  f"the design with `cgra rtl`") from None
