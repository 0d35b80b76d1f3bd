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
from peak.family import PY
from peak.normalize import normal_form


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


def _int_value(T: Any, v: int, what: str) -> Any:
    """The plain int (or bool) ``v`` as a value of hwtypes type ``T``: a Bit takes 0 or 1, a
    ``w``-bit vector ``-2**(w-1) <= v < 2**w``; ConfigError naming ``what`` otherwise."""
    v = int(v)
    if issubclass(T, ht.AbstractBit):
        if v not in (0, 1):
            raise ConfigError(f"{what} = {v} is not a Bit (0 or 1)")
        return T(v)
    w = T.size
    if not -(1 << (w - 1)) <= v < (1 << w):
        raise ConfigError(f"{what} = {v} does not fit {T.__name__} ({w} bits); give "
                          f"{-(1 << (w - 1))} .. {(1 << w) - 1}")
    return T(v)


def _coerce(T: Any, v: Any, what: str) -> Any:
    if isinstance(v, T):
        return v
    if isinstance(v, (bool, int)):
        return _int_value(T, v, what)
    if isinstance(v, (ht.AbstractBit, ht.AbstractBitVector)):
        return T(v)
    raise ConfigError(f"{what} = {v!r} is not a value of {T}")


def accept_int_fields(isa: Any) -> None:
    """Let the Product types of an ISA take plain ints for their ``Bit`` / ``BitVector[n]``
    fields, as hwtypes' own ``Bit(0)`` / ``BitVector[16](5)`` do: ``Inst(Opcode.Add, 0, 1, 0)``
    instead of ``Inst(Opcode.Add, Bit(0), Bit(1), Bit(0))``. Ranges as for model inputs
    (ConfigError naming the field otherwise); other values are passed on to hwtypes'
    type check unchanged. Sets an ``__init__`` on each Product type of ``isa`` itself (nested
    Products and Sum variants included; hwtypes' shared anonymous base classes are not
    touched) once; idempotent. Called for the instruction type
    of every :class:`~peak.spec.Peak` subclass when the class is defined."""
    from hwtypes.adt_meta import ProductMeta, SumMeta

    seen: set[int] = set()

    def visit(T: Any) -> None:
        if not isinstance(T, type) or id(T) in seen:
            return
        seen.add(id(T))
        if isinstance(T, SumMeta):
            for variant in T.fields:
                visit(variant)
            return
        if not isinstance(T, ProductMeta) or not T.is_bound:
            return
        fields = list(T.field_dict.items())
        for _, FT in fields:
            visit(FT)
        if getattr(T.__dict__.get("__init__"), "_peak_accepts_ints_", False):
            return
        orig = T.__init__          # hwtypes' generated __init__, on a shared anonymous base

        def conv(name: str, FT: Any, v: Any) -> Any:
            if isinstance(v, (bool, int)) and isinstance(FT, type) and \
                    (issubclass(FT, ht.AbstractBit) or
                     (issubclass(FT, ht.AbstractBitVector) and FT.is_sized)):
                return _int_value(FT, v, f"{T.__name__}.{name}")
            return v

        @functools.wraps(orig)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            args = tuple(conv(n, FT, v) for (n, FT), v in zip(fields, args, strict=False)) \
                + args[len(fields):]
            kwargs = {k: conv(k, T.field_dict[k], v) if k in T.field_dict else v
                      for k, v in kwargs.items()}
            orig(self, *args, **kwargs)

        __init__._peak_accepts_ints_ = True  # type: ignore[attr-defined]
        T.__init__ = __init__
    visit(isa)


def _state_of(model: Any) -> list:
    from peak.spec import Peak, Register, RegisterFile
    out: list = []
    for obj in vars(model).values():
        if isinstance(obj, Register):
            out.append(obj)
        elif isinstance(obj, RegisterFile):
            out.extend((obj, i) for i in range(obj.depth))
        elif isinstance(obj, Peak):
            out.extend(_state_of(obj))
    return out


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
            s[0].values[s[1]] = _coerce(s[0].T, v, "state")
        else:
            s.value = _coerce(s.T, v, "state")


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
    args = [_coerce(T, v, f"input {n}") for (n, T), v in zip(nf.inputs, inputs, strict=True)]
    key, view = _key_view(nf.isa, inst)
    raw, nxt = nf.runner(PY, key, view)(get_state(model), *args)
    outs = nf.outputs_tuple(raw)
    outs = tuple(_coerce(T, v, f"output {n}") for (n, T), v in zip(nf.outputs, outs, strict=True))
    set_state(model, nxt)
    return outs if len(outs) > 1 else outs[0]


def _args_state(spec: type, inputs: tuple | list, state: tuple | list) -> tuple:
    nf = normal_form(spec)
    if len(inputs) != len(nf.inputs) or len(state) != len(nf.state):
        raise ConfigError(f"{spec.__name__} takes {len(nf.inputs)} inputs and "
                          f"{len(nf.state)} state values, got {len(inputs)} and {len(state)}")
    args = [_coerce(T, v, f"input {n}") for (n, T), v in zip(nf.inputs, inputs, strict=True)]
    st = tuple(_coerce(leaf.T, v, f"state {leaf.name}")
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
