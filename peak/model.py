"""The Python model: the normal form evaluated with concrete hwtypes values.

``model = Spec(); outs = model(inst, *inputs)`` — ``inst`` is an ISA value, a flat
``BitVector[width]`` or an int (decoded by the assembler; an invalid encoding raises
:class:`~cgra.errors.ConfigError`); inputs are hwtypes values or ints of the declared
types (a Bit takes 0/1, a ``w``-bit vector ``-2**(w-1) .. 2**w - 1``; ConfigError otherwise).
The instruction's Product types take plain ints for Bit / BitVector fields
(:func:`accept_int_fields`): ``ToyPE()(Inst(Opcode.Add, 0, 1, 0), 2, 3, 5, 0) == (17, 0)``. One call is one clock cycle: registers latch and the outputs are returned (a tuple
when the spec has several outputs). From the second call with the same instruction on, a
call runs the normal form partially evaluated for that instruction
(``NormalForm.specialized``: ~35 us per call for the default PE instead of ~0.6 ms).
"""
from __future__ import annotations

import functools
from typing import Any

import hwtypes as ht

from cgra.errors import ConfigError
from peak.assembler import assembler
from peak.coerce import accept_int_fields, coerce
from peak.family import PY
from peak.normalize import normal_form
from peak.state import PeakBase, Register, RegisterFile


@functools.lru_cache(maxsize=4096)
def _view_of(isa: Any, inst: Any) -> tuple[int, Any]:
    asm = assembler(isa)
    if isinstance(inst, (int, ht.BitVector)) and not isinstance(inst, isa):
        value = asm.decode(inst)          # validates
        flat = asm.encode(value)
    else:
        flat = asm.encode(inst)
    return flat, asm.flat_view(ht.BitVector[asm.width](flat), PY)


def _key_view(isa: Any, inst: Any) -> tuple[int, Any]:
    try:
        return _view_of(isa, inst)
    except TypeError as e:      # unhashable input: build without the cache
        if "unhashable" not in str(e):
            raise
        return _view_of.__wrapped__(isa, inst)


def instruction_view(isa: Any, inst: Any) -> Any:
    """The Python-family view of ``inst`` (ISA value, flat ``BitVector`` or int), cached."""
    return _key_view(isa, inst)[1]


_LEAVES = "_peak_state_leaves_"


def _state_of(model: Any) -> list:
    """The state elements of ``model`` (``Register`` / ``(RegisterFile, entry)``, sub-PEs'
    included, in the order of ``normal_form(type(model)).state``): collected once per
    instance (the state is what ``__init__`` declared) and kept in its ``__dict__``, since a
    PE made of many sub-PEs would otherwise be walked twice per cycle."""
    leaves = model.__dict__.get(_LEAVES)
    if leaves is None:
        leaves = []
        for obj in vars(model).values():
            if isinstance(obj, Register):
                leaves.append(obj)
            elif isinstance(obj, RegisterFile):
                leaves.extend((obj, i) for i in range(obj.depth))
            elif isinstance(obj, PeakBase):
                leaves.extend(_state_of(obj))
        model.__dict__[_LEAVES] = leaves
    return leaves


def get_state(model: Any) -> tuple:
    """The state leaves of ``model`` (order of ``normal_form(type(model)).state``)."""
    vals = []
    for s in _state_of(model):
        vals.append(s[0].values[s[1]] if isinstance(s, tuple) else s.value)
    return tuple(vals)


def set_state(model: Any, values: tuple | list) -> None:
    """Overwrite the state leaves (ints or hwtypes values) of ``model``."""
    leaves = _state_of(model)
    if len(values) != len(leaves):
        raise ConfigError(f"{type(model).__name__} has {len(leaves)} state values, "
                          f"got {len(values)}")
    for s, v in zip(leaves, values, strict=True):
        if isinstance(s, tuple):
            s[0].values[s[1]] = coerce(s[0].T, v, "state")
        else:
            s.value = coerce(s.T, v, "state")


def reset(model: Any) -> None:
    """Restore every state element to its init value."""
    leaves = _state_of(model)
    for s in leaves:
        if isinstance(s, tuple):
            s[0].values[s[1]] = s[0].T(s[0].init)
        else:
            s.value = s.T(s.init)


def step(model: Any, inst: Any, *inputs: Any) -> Any:
    """One clock cycle of ``model``: outputs for (inst, inputs); the state advances."""
    nf = normal_form(type(model))
    if len(inputs) != len(nf.inputs):
        raise ConfigError(f"{type(model).__name__} takes {len(nf.inputs)} inputs "
                          f"{[n for n, _ in nf.inputs]}, got {len(inputs)}")
    args = [coerce(T, v, f"input {n}") for (n, T), v in zip(nf.inputs, inputs, strict=True)]
    key, view = _key_view(nf.isa, inst)
    raw, nxt = nf.runner(PY, key, view)(get_state(model), *args)
    outs = nf.outputs_tuple(raw)
    outs = tuple(coerce(T, v, f"output {n}") for (n, T), v in zip(nf.outputs, outs, strict=True))
    set_state(model, nxt)
    return outs if len(outs) > 1 else outs[0]


def _args_state(spec: type, inputs: tuple | list, state: tuple | list) -> tuple:
    nf = normal_form(spec)
    if len(inputs) != len(nf.inputs) or len(state) != len(nf.state):
        raise ConfigError(f"{spec.__name__} takes {len(nf.inputs)} inputs and "
                          f"{len(nf.state)} state values, got {len(inputs)} and {len(state)}")
    args = [coerce(T, v, f"input {n}") for (n, T), v in zip(nf.inputs, inputs, strict=True)]
    st = tuple(coerce(leaf.T, v, f"state {leaf.name}")
               for leaf, v in zip(nf.state, state, strict=True))
    return nf, args, st


def evaluate(spec: type, inst: Any, inputs: tuple | list, state: tuple | list) -> tuple:
    """Pure evaluation: ``(outputs_tuple, next_state_tuple)`` of ``spec`` for the given
    instruction, inputs and state (no object kept). :class:`ConfigError` on wrong counts."""
    nf, args, st = _args_state(spec, inputs, state)
    raw, nxt = nf.function(PY)(st, instruction_view(nf.isa, inst), *args)
    return nf.outputs_tuple(raw), tuple(nxt)


def evaluate_specialized(spec: type, inst: Any, inputs: tuple | list,
                         state: tuple | list) -> tuple:
    """:func:`evaluate` through the per-instruction specialised normal form (what model
    calls use); the two must agree (tested)."""
    nf, args, st = _args_state(spec, inputs, state)
    key, view = _key_view(nf.isa, inst)
    raw, nxt = nf.specialized(PY, key, view)(st, *args)
    return nf.outputs_tuple(raw), tuple(nxt)


__all__ = ["accept_int_fields", "evaluate", "evaluate_specialized", "get_state", "instruction_view",
           "reset", "set_state", "step"]
