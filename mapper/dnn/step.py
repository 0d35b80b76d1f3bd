"""The step kernel of a reduction: what the array computes in one cycle of a tensor program's
compute loop (the first step of the array path, docs/mapper.md "DNN layers"), and a loop-nest
simulator that checks it against :func:`mapper.frontend.tensor.evaluate`.

**Lanes** are the reduction's unrolled directives (:func:`mapper.dnn.plan.reductions`): each
*lane variable* is an origin Var (a pure Var for output lanes, an RDom var for input lanes)
unrolled directly (``F`` = its extent) or through one split (``v = outer * F + inner``,
``inner`` unrolled). Everything else is *temporal*: the outer parts of the splits and the
RDom vars that are not unrolled are loop counters the address generators run; the pure Vars
that are not lanes are the pixel loops.

**Step kernel** (:func:`step_kernel`, an :class:`mapper.ir.Kernel` ``hstep_<func>``): for every
output lane ``o`` (an assignment of the output-lane inners), ``out<o> = acc[o] OP e(p_1) OP
... OP e(p_n)`` over the input-lane points ``p`` (inner values, ``r.x`` fastest), where ``acc``
is the partial sum read from the accumulation buffer and ``e`` the update's operand
(:func:`mapper.frontend.dsl.expr_lowerer`, the same lowering as the stencil flow). Each read
of a producer becomes one element of the kernel input named after it: a *stream*
(:class:`Stream`: the access, the lane values it sees), i.e. one MEM read port on the array.
The update must be ``f[p] = f[p] OP e`` with ``OP`` associative and commutative on 16-bit
words (``+ min max & | ^``, integer types): the array sums in the blocked order
(``rzo``, ``r.y``, ``r.x``, lanes in a tree), not Halide's.

**Simulator** (:func:`run_steps`): every reduction runs as the array would order it — tiles
(the output lanes' outer values), then the temporal reduction counters — evaluating the step
kernel on whole pixel grids (:func:`mapper.interp.eval_kernel`), operands gathered per stream
from the producers; pure Funcs (requantisation) are evaluated as in :mod:`mapper.frontend.tensor`.

Errors: :class:`~cgra.errors.MappingError` for an update that is not an associative
accumulation, a lane variable split twice or an unrolled outer variable; simulator input
errors as :func:`mapper.frontend.tensor.evaluate`.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from cgra.errors import MappingError
from mapper import ir
from mapper.frontend import tensor
from mapper.frontend import dsl
from mapper.interp import eval_kernel

#: accumulation ops the array may reorder (16-bit integer words)
ASSOCIATIVE = ("+", "min", "max", "&", "|", "^")


@dataclass(frozen=True)
class Lane:
    """One lane variable: ``origin`` (a pure Var or RDom var name) ``= outer * factor +
    inner`` with ``inner`` in ``0 .. factor-1`` unrolled; ``extent`` of the origin; ``output``
    for a pure Var."""

    origin: str
    factor: int
    extent: int
    output: bool

    @property
    def outer(self) -> int:
        return self.extent // self.factor


@dataclass(frozen=True)
class Stream:
    """One operand stream of a step kernel: element ``index`` of kernel input ``producer``
    reads ``producer[access]`` with the lane inners ``lanes`` (origin -> inner) substituted."""

    producer: str
    index: int
    access: tuple[dsl.Affine, ...]
    lanes: tuple[tuple[str, int], ...]


@dataclass
class StepKernel:
    """The step kernel of reduction ``func`` (module docstring): ``kernel`` (inputs: one per
    producer with its :attr:`streams`, ``acc`` with one element per output lane; outputs
    ``out<o>``), its ``lanes``, ``out_lanes`` (origin -> inner per output lane) and the
    accumulation ``op``."""

    func: str
    kernel: ir.Kernel
    lanes: list[Lane]
    out_lanes: list[dict[str, int]]
    streams: dict[str, list[Stream]]
    op: str


def lanes(f: dsl.Func, dom: tensor.Domain) -> list[Lane]:
    """The lanes of reduction ``f`` over its domain ``dom`` (module docstring), in directive
    order. Raises :class:`MappingError` for an unrolled outer, a lane variable split twice
    or unrolled twice, a factor that does not divide its extent."""
    pure = {v.name: hi - lo for v, (lo, hi) in zip(f.vars, dom, strict=True)}
    rext = {v.name: v.extent for v in f.rdom.vars}
    splits = {d.inner: d for d in f.directives if d.definition == "update" and d.kind == "split"}
    outers = {d.outer for d in splits.values()}
    found: dict[str, Lane] = {}
    for d in f.directives:
        if d.definition != "update" or d.kind != "unroll":
            continue
        if d.var in outers:
            raise MappingError(f"Func {f.name}: unroll({d.var}) unrolls the outer part of a "
                               f"split; unroll the inner part (the lanes)")
        sp = splits.get(d.var)
        origin = sp.var if sp else d.var
        if sp and sp.var in splits:
            raise MappingError(f"Func {f.name}: {origin} is split twice on the way to the "
                               f"lane {d.var}; split a lane variable once")
        extent = pure.get(origin, rext.get(origin))
        factor = sp.factor if sp else extent
        if extent % factor:
            raise MappingError(f"Func {f.name}: {factor} lanes along {origin} do not divide "
                               f"its extent {extent}")
        if origin in found:
            raise MappingError(f"Func {f.name}: {origin} is unrolled twice")
        found[origin] = Lane(origin, factor, extent, origin in pure)
    return list(found.values())


def _accumulation_op(f: dsl.Func) -> str:
    e = f.update_expr
    if isinstance(e, dsl.BinOp) and e.op in ASSOCIATIVE and not e.type.is_float:
        for me in (e.a, e.b):
            if isinstance(me, dsl.Access) and me.target is f:
                return e.op
    raise MappingError(f"Func {f.name}: the update is not f[p] = f[p] OP e with OP one of "
                       f"{' '.join(ASSOCIATIVE)} on integers; the array reorders the reduction "
                       f"(blocked loops, adder trees), so only such accumulations are mapped")


def _points(lanes: list[Lane]) -> list[dict[str, int]]:
    """Assignments of the lanes' inners, the first lane fastest."""
    return [dict(zip([ln.origin for ln in lanes], reversed(combo), strict=True))
            for combo in itertools.product(*[range(ln.factor) for ln in reversed(lanes)])]


def step_kernel(pipe: dsl.Pipeline, func: str, init: bool = False) -> StepKernel:
    """The step kernel of reduction ``func`` of tensor program ``pipe`` (module docstring).
    ``init``: the accumulator input passes through ``coreir.mux(acc, init, first != 0)``,
    ``first`` an extra input (1 on the first reduction pass: the sum restarts from the pure
    definition, which must then be a constant). Raises :class:`MappingError`."""
    funcs = {f.name: f for f in pipe.funcs}
    if func not in funcs or funcs[func].update_expr is None:
        raise MappingError(f"tensor program {pipe.name}: {func!r} is not a reduction (a Func "
                           f"with an RDom update)")
    f = funcs[func]
    op = _accumulation_op(f)
    dom = tensor.domains(pipe)[func]
    lns = lanes(f, dom)
    outs = _points([ln for ln in lns if ln.output])
    ins = _points([ln for ln in lns if not ln.output])
    rvars = {v.name: v for v in f.rdom.vars}
    k = ir.Kernel(f"hstep_{func}")
    k.declare_input("acc", len(outs), 16)
    streams: dict[str, list[Stream]] = {}
    keys: dict[str, list[tuple]] = {}
    state: dict[str, Any] = {}

    def read(kern: ir.Kernel, e: dsl.Access, env: dict) -> int:
        names = {t.name for a in e.idx for t in a.terms}
        seen = tuple(sorted((o, v) for o, v in {**state["out"], **state["in"]}.items()
                            if o in names))
        key = (tuple(repr(a) for a in e.idx), seen)
        lst = keys.setdefault(e.target.name, [])
        if key not in lst:
            lst.append(key)
            streams.setdefault(e.target.name, []).append(
                Stream(e.target.name, len(lst) - 1, e.idx, seen))
            kern.declare_input(e.target.name, len(lst), 16)
        return kern.input(e.target.name, lst.index(key))

    lower = dsl.expr_lowerer(f, k, read)
    restart = None
    if init:
        if not isinstance(f.pure, dsl.Const):
            raise MappingError(f"Func {f.name}: its pure definition is not a constant; a "
                               f"restarting accumulator needs one (a bias read is not "
                               f"mapped yet)")
        k.declare_input("first", 1, 16)
        restart = k.add("coreir.neq", k.input("first", 0), k.const(0, 16))
        start = k.const(f.pure.value, 16)
    for o, out in enumerate(outs):
        val = k.input("acc", o)
        if restart is not None:
            val = k.add("coreir.mux", val, start, restart)
        state["out"] = out
        for p in ins:
            state["in"] = p
            env = {rv: p.get(name, 0) for name, rv in rvars.items()}
            val = lower(f.update_expr, env, val, {})
        k.set_output(f"out{o}", val)
    return StepKernel(func, ir.simplify(k), lns, outs, streams, op)


def _affine(a: dsl.Affine, vals: dict[str, Any]) -> Any:
    c = a.const + sum(vals[t.name] for t in a.terms if isinstance(t, dsl.RVar))
    pure = [t for t in a.terms if isinstance(t, dsl.Var)]
    if not pure:
        return c
    return (a.scale * vals[pure[0].name] + a.pre) // a.div + c


def _run_reduction(pipe: dsl.Pipeline, f: dsl.Func, dom: dict[str, tensor.Domain],
                   arrays: dict[str, np.ndarray]) -> np.ndarray:
    sk = step_kernel(pipe, f.name)
    box = dom[f.name]
    n = len(box)
    acc = np.array(tensor._eval_func(f, dom, arrays, update=False))
    lane_of = {ln.origin: ln for ln in sk.lanes}
    # pixel loops: pure Vars that are not lanes, as broadcast grids over the axes an
    # accumulation-buffer slice keeps (coordinates reversed, lane coordinates dropped)
    pix = [(v, r) for v, r in zip(f.vars, box, strict=True) if v.name not in lane_of]
    grid: dict[str, Any] = {}
    for q, (v, (lo, hi)) in enumerate(reversed(pix)):
        shape = [1] * len(pix)
        shape[q] = hi - lo
        grid[v.name] = np.arange(lo, hi, dtype=np.int64).reshape(shape)
    out_lanes = [ln for ln in sk.lanes if ln.output]
    in_lanes = [ln for ln in sk.lanes if not ln.output]
    temporal = [v for v in f.rdom.vars if v.name not in lane_of]
    tiles = itertools.product(*[range(ln.outer) for ln in out_lanes])
    lo_of = {v.name: lo for v, (lo, _) in zip(f.vars, box, strict=True)}
    base = {**lo_of, **{v.name: v.lo for v in f.rdom.vars}}     # each origin's first value
    for tile in tiles:
        outer_out = dict(zip([ln.origin for ln in out_lanes], tile, strict=True))
        # the accumulation buffer slice of each output lane
        slices = []
        for lane in sk.out_lanes:
            idx = []
            for j in reversed(range(n)):
                v = f.vars[j].name
                if v in lane_of:
                    idx.append(outer_out[v] * lane_of[v].factor + lane[v] - lo_of[v])
                else:
                    idx.append(slice(None))
            slices.append(tuple(idx))
        steps = itertools.product(*[range(ln.outer) for ln in in_lanes],
                                  *[range(v.lo, v.lo + v.extent) for v in temporal])
        for step in steps:
            outer_in = dict(zip([ln.origin for ln in in_lanes], step[:len(in_lanes)],
                                strict=True))
            t_vals = {v.name: c for v, c in zip(temporal, step[len(in_lanes):], strict=True)}
            ins: dict[str, list[Any]] = {"acc": [acc[s] for s in slices]}
            for prod, lst in sk.streams.items():
                src, pd = arrays[prod], dom[prod]
                arrs = []
                for st in lst:
                    vals: dict[str, Any] = {**grid, **t_vals}
                    seen = dict(st.lanes)
                    for origin, ln in lane_of.items():
                        outer = (outer_out if ln.output else outer_in)[origin]
                        vals[origin] = base[origin] + outer * ln.factor + seen.get(origin, 0)
                    idx = [np.asarray(_affine(a, vals)) - pd[j][0]
                           for j, a in enumerate(st.access)]
                    arrs.append(src[tuple(reversed(idx))])
                ins[prod] = arrs
            res = eval_kernel(sk.kernel, ins)
            for o, s in enumerate(slices):
                acc[s] = np.broadcast_to(res[f"out{o}"], acc[s].shape)
    return acc


def run_steps(pipe: dsl.Pipeline, inputs: dict[str, Any]) -> dict[str, np.ndarray]:
    """Evaluate tensor program ``pipe`` with every reduction run step by step through its
    step kernel in the array's loop order (module docstring). Returns every Func by name
    (as :func:`mapper.frontend.tensor.evaluate` with ``all_funcs``). Raises :class:`MappingError` /
    :class:`~cgra.errors.SimulationError` as :func:`step_kernel` and
    :func:`mapper.frontend.tensor.evaluate`."""
    dom = tensor.domains(pipe)
    arrays = tensor._check_inputs(pipe, inputs)
    for f in pipe.funcs:
        if f.update_expr is None:
            arrays[f.name] = tensor._eval_func(f, dom, arrays)
        else:
            arrays[f.name] = _run_reduction(pipe, f, dom, arrays) & 0xFFFF
    out = {}
    for f in pipe.funcs:
        a = arrays[f.name].astype(np.uint16)
        out[f.name] = a.view(np.int16) if f.type.signed else a
    return out


def lane_count(sk: StepKernel) -> tuple[int, int]:
    """``(output lanes, input-lane points)`` of a step kernel."""
    outs = math.prod(ln.factor for ln in sk.lanes if ln.output)
    ins = math.prod(ln.factor for ln in sk.lanes if not ln.output)
    return outs, ins
