"""The SMT model: the normal form evaluated with hwtypes' SMT family (pysmt formulas).

Two ways in:

* :func:`evaluate_smt` ``(spec, inst, inputs, state) -> (outputs, next_state)`` runs the
  (cached, compiled) normal form on the SMT values you give: ``inst`` is a flat
  ``SMTBitVector[width]`` (decoded through the assembler layout) or a dict of per-field
  values keyed by :attr:`peak.assembler.FieldInfo.name` (``SMTBit`` for 1-bit ``Bit``
  fields, ``SMTBitVector[w]`` otherwise, ints allowed). No solver is involved; the cost is
  one pass over the straight-line normal form (~1 ms for the default PE).
* :func:`symbolic` ``(spec, fields=False, prefix="")`` -> :class:`SymbolicPE`: the PE
  elaborated ONCE with free variables (``<prefix>inst`` or ``<prefix>inst.<field>``,
  ``<prefix><input>``, default prefix ``"<module>.<SpecName>."``, ``<prefix>state.<leaf>``), cached per arguments; ``substitute``
  replaces variables by values (pysmt), ``z3()`` gives z3 expressions.

Formulas stay small: the normal form selects the outputs with ``ite`` chains on the opcode
and shares every subterm (pysmt hash-conses identical nodes).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import hwtypes as ht
from pysmt.fnode import FNode

from cgra.errors import ConfigError
from peak.assembler import assembler, leaf_name
from peak.family import SMT
from peak.normalize import normal_form
from pysmt.shortcuts import get_env


def _smt_value(T: Any, v: Any, what: str) -> Any:
    FT = SMT.map_type(T)
    if isinstance(v, (bool, int)):
        return FT(int(v))
    if isinstance(v, (ht.SMTBit, ht.SMTBitVector)):
        return v if type(v) is FT else FT(v)
    if isinstance(v, (ht.AbstractBit, ht.AbstractBitVector)):
        return FT(int(v))
    if isinstance(v, FNode):
        return FT(v)
    raise ConfigError(f"{what}: {v!r} is not an SMT value of {T}")


def field_view(spec: type, fields: dict[str, Any]) -> Any:
    """The SMT instruction view of per-field values (keys: assembler field names).
    Raises :class:`ConfigError` naming a missing field."""
    asm = assembler(normal_form(spec).isa)

    def leaf(node: Any) -> Any:
        name = leaf_name(node)
        if name not in fields:
            raise ConfigError(f"no value for instruction field '{name}' of "
                              f"{spec.__name__}; fields: {[f.name for f in asm.fields]}")
        v = fields[name]
        if node.kind == "bit":
            return _smt_value(ht.Bit, v, name)
        w = node.tag_width if node.kind == "sum" else node.width
        T = ht.SIntVector[w] if node.kind == "bits" and node.signed else ht.BitVector[w]
        return _smt_value(T, v, name)
    return asm.view(leaf, SMT)


def evaluate_smt(spec: type, inst: Any, inputs: list | tuple | dict,
                 state: list | tuple | dict | None = None) -> tuple[tuple, tuple]:
    """Outputs and next state of ``spec`` for SMT (or int) values.

    ``inst``: ``SMTBitVector[width]`` flat instruction or dict field name -> value.
    ``inputs``: in declaration order or a dict by name. ``state``: in the order of
    ``normal_form(spec).state`` or a dict by leaf name; ``None`` = the reset values.
    Returns ``(outputs, next_state)`` as tuples of hwtypes SMT values."""
    nf = normal_form(spec)
    asm = assembler(nf.isa)
    if isinstance(inst, dict):
        view = field_view(spec, inst)
    else:
        flat = inst if isinstance(inst, ht.SMTBitVector) else ht.SMTBitVector[asm.width](inst)
        if flat.size != asm.width:
            raise ConfigError(f"instruction of {spec.__name__} has {asm.width} bits, got "
                              f"{flat.size}")
        view = asm.flat_view(flat, SMT)
    if isinstance(inputs, dict):
        inputs = [inputs[n] for n, _ in nf.inputs]
    if len(inputs) != len(nf.inputs):
        raise ConfigError(f"{spec.__name__} takes inputs {[n for n, _ in nf.inputs]}, got "
                          f"{len(inputs)} values")
    args = [_smt_value(T, v, f"input {n}") for (n, T), v in zip(nf.inputs, inputs, strict=False)]
    if state is None:
        state = [leaf.init for leaf in nf.state]
    elif isinstance(state, dict):
        state = [state[leaf.name] for leaf in nf.state]
    st = tuple(_smt_value(leaf.T, v, f"state {leaf.name}") for leaf, v in zip(nf.state, state, strict=False))
    raw, nxt = nf.function(SMT)(st, view, *args)
    outs = nf.outputs_tuple(raw)
    outs = tuple(_smt_value(T, v, f"output {n}") for (n, T), v in zip(nf.outputs, outs, strict=False))
    nxt = tuple(_smt_value(leaf.T, v, f"state {leaf.name}") for leaf, v in zip(nf.state, nxt, strict=False))
    return outs, nxt


def field_valid(spec: type, fields: dict[str, Any]) -> Any:
    """Validity (``SMTBit``) of per-field values: every Enum field / Sum tag holds a declared
    code."""
    asm = assembler(normal_form(spec).isa)
    ok = ht.SMTBit(1)
    for f in asm.fields:
        if f.tags is None or len(set(f.tags.values())) == 1 << f.width:
            continue
        v = _smt_value(ht.BitVector[f.width], fields[f.name], f.name)
        any_code = ht.SMTBit(0)
        for code in sorted(set(f.tags.values())):
            any_code = any_code | (v == ht.SMTBitVector[f.width](code))
        ok = ok & any_code
    return ok


@dataclass
class SymbolicPE:
    """A spec elaborated once over free SMT variables.

    ``inst``: flat ``SMTBitVector[width]`` (or None in per-field mode); ``fields``: field
    name -> variable (per-field mode) ; ``inputs``: name -> variable; ``state``: leaf name ->
    variable; ``outputs``: name -> SMT value; ``next_state``: leaf name -> SMT value;
    ``valid``: ``SMTBit`` validity of the instruction."""

    spec: type
    width: int
    inst: Any
    fields: dict[str, Any]
    inputs: dict[str, Any]
    state: dict[str, Any]
    outputs: dict[str, Any]
    next_state: dict[str, Any]
    valid: Any
    _z3: dict = field(default_factory=dict)

    def variables(self) -> dict[str, Any]:
        """Every free variable by name (instruction, fields, inputs, state)."""
        d: dict[str, Any] = {}
        if self.inst is not None:
            d["inst"] = self.inst
        d.update({f"inst.{k}": v for k, v in self.fields.items()})
        d.update(self.inputs)
        d.update({f"state.{k}": v for k, v in self.state.items()})
        return d

    def substitute(self, values: dict[Any, Any], simplify: bool = True) -> tuple[dict, dict]:
        """Outputs and next state with variables replaced: ``values`` maps a variable (the
        SMT object or its name from :meth:`variables`) to an SMT value or int. Returns
        ``(outputs, next_state)`` as dicts of pysmt formulas (simplified when asked)."""
        names = self.variables()
        sub: dict[FNode, FNode] = {}
        for k, v in values.items():
            var = names[k] if isinstance(k, str) else k
            val = v.value if hasattr(v, "value") and isinstance(v.value, FNode) else v
            if isinstance(val, (int, bool)):
                val = type(var)(int(val)).value
            elif not isinstance(val, FNode):
                val = type(var)(int(val)).value
            sub[var.value] = val
        def do(x: Any) -> FNode:
            r = x.value.substitute(sub)
            return r.simplify() if simplify else r
        return ({k: do(v) for k, v in self.outputs.items()},
                {k: do(v) for k, v in self.next_state.items()})

    def z3(self) -> dict[str, Any]:
        """z3 expressions (cached) of outputs (``out.<name>``), next state
        (``next.<leaf>``), validity (``valid``) and the variables (by :meth:`variables`
        name)."""
        if not self._z3:
            conv = z3_converter()
            for k, v in self.outputs.items():
                self._z3[f"out.{k}"] = conv.convert(v.value)
            for k, v in self.next_state.items():
                self._z3[f"next.{k}"] = conv.convert(v.value)
            self._z3["valid"] = conv.convert(self.valid.value)
            for k, v in self.variables().items():
                self._z3[k] = conv.convert(v.value)
        return self._z3


@functools.lru_cache(maxsize=1)
def z3_converter() -> Any:
    """A pysmt -> z3 converter (pysmt's own, in z3's main context)."""
    return get_env().factory.Solver(name="z3").converter


def to_z3(x: Any) -> Any:
    """z3 expression of a pysmt formula or an hwtypes SMT value."""
    return z3_converter().convert(x.value if hasattr(x, "value") and
                                  isinstance(x.value, FNode) else x)


@functools.lru_cache(maxsize=None)
def symbolic(spec: type, fields: bool = False, prefix: str | None = None) -> SymbolicPE:
    """The symbolic PE (cached per arguments). With ``fields=True`` the instruction is one
    variable per assembler field (``<prefix>inst.<field>``), else one flat variable
    ``<prefix>inst`` of ``width`` bits. pysmt variable names are global, so the default
    prefix is ``"<module>.<SpecName>."`` (``"<module>.<SpecName>_f."`` with fields), so an
    edited copy of a spec in another module never collides; pass a distinct prefix
    for a second copy of the same PE."""
    if prefix is None:
        prefix = f"{spec.__module__}.{spec.__qualname__}{'_f' if fields else ''}."
    nf = normal_form(spec)
    asm = assembler(nf.isa)
    field_vars: dict[str, Any] = {}
    flat = None
    if fields:
        for f in asm.fields:
            T = ht.SMTBit if f.kind == "bit" else ht.SMTBitVector[f.width]
            field_vars[f.name] = T(name=f"{prefix}inst.{f.name}")
        inst: Any = field_vars
        valid = field_valid(spec, field_vars)
    else:
        flat = ht.SMTBitVector[asm.width](name=f"{prefix}inst")
        inst = flat
        valid = asm.is_valid(flat)
    inputs = {n: SMT.map_type(T)(name=f"{prefix}{n}") for n, T in nf.inputs}
    state = {leaf.name: SMT.map_type(leaf.T)(name=f"{prefix}state.{leaf.name}")
             for leaf in nf.state}
    outs, nxt = evaluate_smt(spec, inst, list(inputs.values()), list(state.values()))
    return SymbolicPE(spec=spec, width=asm.width, inst=flat, fields=field_vars,
                      inputs=inputs, state=state,
                      outputs={n: v for (n, _), v in zip(nf.outputs, outs, strict=False)},
                      next_state={leaf.name: v for leaf, v in zip(nf.state, nxt, strict=False)},
                      valid=valid)
