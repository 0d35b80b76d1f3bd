"""What a PE author writes: :class:`Peak`, :class:`Register`, :class:`RegisterFile`,
:func:`name_outputs`.

A spec is a ``Peak`` subclass. ``__init__`` declares state as attributes (a ``Register``, a
``RegisterFile``, a sub-PE, or a plain int/bool parameter). ``__call__(self, inst, *inputs)``
is annotated (``inst: ISA``, each input with a hwtypes type) and decorated with
``@name_outputs(name=Type, ...)``; its body uses ordinary ``if``/``elif``/``else`` and
``return``. The body is normalised once per class (:mod:`peak.normalize`); calling an
instance runs the normal form on concrete values (:mod:`peak.model`)::

    model = ToyPE()
    res, flag = model(inst, A, B, C, c_in)     # hwtypes values or ints; state kept inside

Defining a spec class also lets its instruction type's Product fields of type Bit /
BitVector take plain ints (``Inst(Opcode.Add, 0, 1, 0)``; :func:`peak.coerce.accept_int_fields`).

Register semantics (one cycle of latency): ``self.r(v)`` returns the stored value and
latches ``v``; ``self.r(v, en)`` latches only when ``en`` is 1. On a path where ``self.r``
is not called the register holds. ``RegisterFile(depth, T)``: ``self.rf.read(addr)``
returns the stored entry (combinational), ``self.rf.write(addr, data, en=1)`` writes at the
end of the cycle. A sub-PE attribute is called ``self.sub(inst, *inputs)`` at one place.
"""
from __future__ import annotations

from typing import Any, Callable

from peak import model
from peak.coerce import accept_int_fields
from peak.state import PeakBase, Register, RegisterFile


def name_outputs(**outputs: Any) -> Callable:
    """Decorator of ``__call__`` naming its outputs and their hwtypes types, in order."""

    def deco(fn: Callable) -> Callable:
        fn._peak_outputs_ = dict(outputs)
        return fn

    return deco


def _instruction_type(fn: Any) -> Any:
    """The annotation of ``__call__``'s instruction argument when it is already a type
    object; None for a string annotation (``from __future__ import annotations``), which
    :func:`peak.normal_form` resolves later (and then calls
    :func:`peak.coerce.accept_int_fields` itself)."""
    code = getattr(fn, "__code__", None)
    if code is None or code.co_argcount < 2:
        return None
    T = getattr(fn, "__annotations__", {}).get(code.co_varnames[1])
    return T if isinstance(T, type) else None


class Peak(PeakBase):
    """Base class of PE specs. Subclasses define ``__init__`` (state) and ``__call__``.

    Calling an instance runs the normalised ``__call__`` on concrete values, updates the
    state and returns the outputs (a tuple when there are several, else the value).
    Methods: ``reset()`` restores every register to its init value; ``state()`` /
    ``set_state(values)`` read / write the state leaves (order of
    ``normal_form(cls).state``)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__call__" in cls.__dict__:
            user = cls.__dict__["__call__"]
            cls._spec_call_ = user
            cls.__call__ = Peak._model_call  # type: ignore[method-assign]
            isa = _instruction_type(user)
            if isa is not None:
                accept_int_fields(isa)

    def _model_call(self, inst: Any, *inputs: Any) -> Any:
        return model.step(self, inst, *inputs)

    def reset(self) -> None:
        model.reset(self)

    def state(self) -> tuple:
        return model.get_state(self)

    def set_state(self, values: tuple | list) -> None:
        model.set_state(self, values)


__all__ = ["Peak", "PeakBase", "Register", "RegisterFile", "name_outputs"]
