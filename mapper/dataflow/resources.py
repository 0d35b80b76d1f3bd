"""The physical units of a design, as the dataflow compiler's partitioner sees them.

:func:`load_units` reads a design directory's ``resources.json`` (written by ``cgra rtl``;
format owned by :mod:`garnet.collateral`, parts by :mod:`peak.resources`,
:mod:`lake.resources`, :mod:`canal.resources`) through :func:`mapper.collateral.load_resources`
and turns the resource vectors of one PE tile and one MEM tile into
:class:`~mapper.dataflow.units.PUConstraints` (SARA §III-B1, Table I), so editing a PE or
memory spec and running ``cgra rtl`` changes the partitioning with no hand edit.

Conversion (``pe`` / ``mem``; ``count`` = the number of such tiles in the array):

* ``ops``: the dataflow operators (:data:`mapper.dataflow.program.OPS` names) the PE offers
  on integer words: operator ``o`` is offered when the PE has a rule (``ops`` of
  resources.json, IR names) for one of :data:`IR_OPS` ``[o]`` that does not need a constant
  operand (``const_only_ops``: a PE that shifts only by a constant does not offer ``shl``).
  The table maps integer operators only: a program's f32 operators are named ``fadd``,
  ``flt``, ... by the lowering (:func:`mapper.dataflow.lower.dfg_op`), so an integer PE
  refuses them. A MEM tile executes no operator: ``ops`` empty, ``stages`` 0.
* ``stages``: the most IR ops one PE instruction covers (``stages`` of resources.json: 2 on a
  PE with compare-and-select rules, 1 otherwise; which ops fuse is listed in its
  ``multi_op``).
* ``inputs`` / ``outputs``: the data-word ports (width class ``word`` of resources.json) as
  width class ``"scalar"`` and the 1-bit ports (``bit``) as ``"bit"``
  (:data:`~mapper.dataflow.units.WIDTH_CLASSES`: a comparison's predicate), ``"vector"`` 0:
  the array moves one word per port per cycle.
* ``registers``: the PE's word-wide state registers (input pipeline / delay registers);
  0 for a MEM tile. ``lanes``: 1.

Errors: :class:`~cgra.errors.CollateralError` naming resources.json and the ``cgra rtl``
command that regenerates it when it is missing, modified, malformed or stale, or when the
design was generated with ``--no-rules`` (the PE's ops are then unknown).
"""
from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

from cgra.errors import CollateralError
from garnet.collateral import Resources
from mapper.collateral import load_resources
from mapper.dataflow.units import PUConstraints

#: dataflow operator -> the IR ops (rule-table names) any one of which implements it on
#: signed integer words (``shr`` is arithmetic, comparisons signed, ``neg`` is ``0 - x``);
#: an empty tuple: no IR op of the rule library implements it on a PE
IR_OPS: dict[str, tuple[str, ...]] = {
    "add": ("coreir.add",), "sub": ("coreir.sub",), "mul": ("coreir.mul",),
    "div": (), "mod": (),
    "and": ("coreir.and",), "or": ("coreir.or",), "xor": ("coreir.xor",),
    "not": ("coreir.not",), "shl": ("coreir.shl",), "shr": ("coreir.ashr",),
    "lt": ("coreir.slt",), "le": ("coreir.sle",), "gt": ("coreir.sgt",),
    "ge": ("coreir.sge",), "eq": ("coreir.eq",), "ne": ("coreir.neq",),
    "min": ("commonlib.smin",), "max": ("commonlib.smax",), "select": ("coreir.mux",),
    "neg": ("coreir.sub",), "abs": ("commonlib.abs",),
    "exp": (), "log": (), "sqrt": (), "to_f32": (), "to_i32": (),
}
#: a shift by a constant amount (:func:`mapper.dataflow.lower.dfg_op`): a PE whose shifts
#: take only a constant operand (``const_only_ops``) offers these
CONST_SHIFTS: dict[str, tuple[str, ...]] = {"shl_const": ("coreir.shl",),
                                            "shr_const": ("coreir.ashr",)}


def _scalar(counts) -> MappingProxyType:
    return MappingProxyType({"scalar": int(counts.get("word", 0)), "vector": 0,
                             "bit": int(counts.get("bit", 0))})


def pe_units(res: Resources) -> PUConstraints:
    """The PE tile of ``res`` as a :class:`PUConstraints` (module docstring). Raises
    :class:`CollateralError` when the design has no rule table (``--no-rules``)."""
    pe = res.pe
    if pe.ops is None or pe.stages is None:
        raise CollateralError(f"{res.path}: the PE's ops are unknown (the design was "
                              f"generated with --no-rules); regenerate it with `cgra rtl` "
                              f"without --no-rules")
    usable = pe.ops - (pe.const_only_ops or frozenset())
    ops = frozenset(o for o, ir in IR_OPS.items() if any(i in usable for i in ir))
    ops |= frozenset(o for o, ir in CONST_SHIFTS.items() if any(i in pe.ops for i in ir))
    return PUConstraints(kind="pe", stages=pe.stages, inputs=_scalar(pe.inputs),
                         outputs=_scalar(pe.outputs),
                         registers=int(pe.state_registers.get("word", 0)), ops=ops,
                         lanes=1, count=res.pe_tiles)


def mem_units(res: Resources) -> PUConstraints | None:
    """The MEM tile of ``res`` as a :class:`PUConstraints` (no ops, no stages, its data-word
    ports; capacity and counters stay on ``res.mem``), ``None`` without MEM tiles."""
    if res.mem is None:
        return None
    return PUConstraints(kind="mem", stages=0, inputs=_scalar(res.mem.inputs),
                         outputs=_scalar(res.mem.outputs), registers=0, ops=frozenset(),
                         lanes=1, count=res.mem_tiles)


def units(res: Resources) -> dict[str, PUConstraints]:
    """``{"pe": ..., "mem": ...}`` of ``res`` (``mem`` left out without MEM tiles)."""
    out = {"pe": pe_units(res)}
    mem = mem_units(res)
    if mem is not None:
        out["mem"] = mem
    return out


def load_units(design_dir: str | Path, check_spec: bool = True) -> dict[str, PUConstraints]:
    """The physical units of the design in ``design_dir``: kind (``"pe"``, ``"mem"``; no
    ``"mem"`` without MEM tiles) -> :class:`PUConstraints` with ``count`` = tiles of that
    kind (module docstring). ``check_spec``: refuse a design whose PE spec was edited since
    it was generated (:func:`mapper.collateral.load_resources`). Raises
    :class:`CollateralError` naming resources.json and the regeneration command when it is
    missing, modified, malformed or stale, or the design has no rule table."""
    return units(load_resources(design_dir, check_spec))
