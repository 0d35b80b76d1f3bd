"""Golden model 1 for tensor programs (DNN layers): domains and a numpy evaluation of DSL
pipelines over 2 to 4 coordinates.

A *tensor program* is a :class:`mapper.frontend.dsl.Pipeline` whose Funcs and Inputs have up
to :data:`~mapper.frontend.dsl.MAX_DIMS` coordinates ``(x, y, channel, batch)`` and whose reads
are not stencil windows: a reduction over input channels (``w[r.x, r.y, r.z, c] * in[x + r.x,
y + r.y, r.z]``), a transposed or weight read (``a[r.x, y] * b[x, r.x]``), a strided window
(``in[2*x + r.x, 2*y + r.y, r.z]``). Each index of a read is ``floor((s*v + p) / d) + sum(RDom
vars) + c`` with at most one pure Var ``v`` (the DSL's :class:`~mapper.frontend.dsl.Affine`).

**Domains** (:func:`domains`): Halide's valid-domain rule, as for stencils
(:meth:`mapper.ir.Pipeline.domains`): an Input's domain is ``[0, size)`` per coordinate; a Func
is defined where every read of every producer, for every RDom point, lies inside that
producer's domain: per pure Var the intersection over its reads of ``ceil((lo*d - p) / s) <= v
<= floor(((hi - 1)*d + d - 1 - p) / s)`` after moving the RDom and constant terms across.
A read without a pure Var (a weight read ``w[r.x, r.y, r.z, c]``'s first three indices) must
lie inside the producer for every RDom point. Every pure Var must appear in some read (its
extent comes from there).

**Evaluation** (:func:`evaluate`): each Func's op DAG is the stencil flow's own
(:func:`mapper.frontend.dsl.func_kernel`: the pure definition, then the update once per RDom
point, ``r.x`` innermost, the IR op semantics of :func:`mapper.ir.eval_op`), evaluated by
:func:`mapper.interp.eval_kernel` on whole arrays: each distinct read becomes one gathered
array over the Func's domain. Values are 16-bit words (wrap-around arithmetic); arrays are
indexed in reverse coordinate order (``[c, y, x]``, ``[n, c, y, x]``), as numpy views of
Halide buffers are.

The stencil flow refuses tensor programs (:meth:`mapper.frontend.dsl.Pipeline.check_stencil`);
the array runs the shipped layers through :mod:`mapper.dnn.array`; golden model 2 is real Halide
(:func:`mapper.sim.halide.run_halide_outputs`, the same domains).

Errors: :class:`~cgra.errors.MappingError` for a read outside its producer, a pure Var that no
read bounds, an empty domain, an index with two pure Vars; :class:`~cgra.errors.SimulationError`
for a missing or mis-shaped input array or values that do not fit the input's type.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from cgra.errors import MappingError, SimulationError
from mapper import ir
from mapper.frontend import dsl
from mapper.interp import eval_kernel

#: a box domain: one half-open ``(lo, hi)`` range per coordinate, dimension 0 first
Domain = tuple[tuple[int, int], ...]


def _pure_term(a: dsl.Affine, f: dsl.Func, who: str) -> dsl.Var | None:
    pure = [t for t in a.terms if isinstance(t, dsl.Var)]
    if len(pure) > 1:
        raise MappingError(f"Func {f.name}: index {a!r} of {who} uses {len(pure)} pure Vars; "
                           f"an index holds at most one")
    if pure and pure[0] not in f.vars:
        raise MappingError(f"Func {f.name}: index {a!r} of {who} uses Var {pure[0].name}, "
                           f"which is not one of its pure Vars "
                           f"({', '.join(v.name for v in f.vars)})")
    return pure[0] if pure else None


def _rvar_range(a: dsl.Affine, f: dsl.Func, who: str) -> tuple[int, int]:
    """Smallest and largest value of the RDom terms plus the constant of ``a``."""
    lo = hi = a.const
    for t in a.terms:
        if isinstance(t, dsl.RVar):
            if f.rdom is None or t.rdom is not f.rdom:
                raise MappingError(f"Func {f.name}: index {a!r} of {who} uses RDom var "
                                   f"{t.name} outside an update over its RDom")
            lo, hi = lo + t.lo, hi + t.lo + t.extent - 1
    return lo, hi


def _reads(f: dsl.Func) -> list[dsl.Access]:
    out = []
    for e in (f.pure, f.update_expr):
        if e is None:
            continue
        for n in dsl._walk(e):
            if isinstance(n, dsl.Access) and n.target is not f and \
                    not isinstance(n.target, dsl.Table):
                out.append(n)
            elif isinstance(n, dsl.Coord):
                raise MappingError(f"Func {f.name}: {n!r} (a coordinate pattern) is a stencil "
                                   f"construct; a tensor program cannot use it")
    return out


def domains(pipe: dsl.Pipeline) -> dict[str, Domain]:
    """The domain of every Input and Func of ``pipe`` by name (module docstring): per
    coordinate ``(lo, hi)``, half-open, dimension 0 first. Raises :class:`MappingError`."""
    dom: dict[str, Domain] = {i.name: tuple((0, n) for n in i.shape) for i in pipe.inputs}
    for f in pipe.funcs:
        bounds: dict[int, list[int]] = {}
        for acc in _reads(f):
            t = acc.target
            who = t.name
            if isinstance(t, dsl.RepeatEdge):
                raise MappingError(f"Func {f.name}: repeat_edge({who}) in a tensor program; "
                                   f"pad the input tensor on the host instead")
            pd = dom[who]
            for j, a in enumerate(acc.idx):
                plo, phi = pd[j]
                rlo, rhi = _rvar_range(a, f, who)
                v = _pure_term(a, f, who)
                if v is None:
                    if rlo < plo or rhi >= phi:
                        raise MappingError(f"Func {f.name}: reads {who} coordinate {j} at "
                                           f"[{rlo}, {rhi}], outside its domain [{plo}, "
                                           f"{phi - 1}]")
                    continue
                # plo <= floor((s v + p) / d) + rlo  and  floor((s v + p) / d) + rhi <= phi - 1
                s, d, p = a.scale, a.div, a.pre
                lo_q, hi_q = plo - rlo, phi - 1 - rhi
                vlo = -((-(lo_q * d - p)) // s)
                vhi = (hi_q * d + d - 1 - p) // s
                b = bounds.setdefault(id(v), [vlo, vhi])
                b[0], b[1] = max(b[0], vlo), min(b[1], vhi)
        box = []
        for v in f.vars:
            if id(v) not in bounds:
                raise MappingError(f"Func {f.name}: no read bounds its Var {v.name}; a tensor "
                                   f"program takes every extent from its inputs (read an "
                                   f"Input or Func with {v.name})")
            lo, hi = bounds[id(v)]
            if hi < lo:
                raise MappingError(f"Func {f.name}: empty domain along {v.name} (its reads "
                                   f"need {v.name} in [{lo}, {hi}])")
            box.append((lo, hi + 1))
        dom[f.name] = tuple(box)
    return dom


def _check_inputs(pipe: dsl.Pipeline, arrays: dict[str, Any]) -> dict[str, np.ndarray]:
    out = {}
    for i in pipe.inputs:
        if i.name not in arrays:
            raise SimulationError(f"tensor program {pipe.name}: no array for input {i.name}")
        a = np.asarray(arrays[i.name])
        want = tuple(reversed(i.shape))
        if a.shape != want:
            raise SimulationError(f"tensor program {pipe.name}: input {i.name} must have shape "
                                  f"{want} (coordinates reversed), got {a.shape}")
        if a.dtype.kind not in "iu":
            raise SimulationError(f"tensor program {pipe.name}: input {i.name} must hold "
                                  f"integers (16-bit words), got dtype {a.dtype}")
        lo, hi = (-(1 << 15), (1 << 15) - 1) if i.type.signed else (0, (1 << 16) - 1)
        if a.size and (int(a.min()) < lo or int(a.max()) > hi):
            raise SimulationError(f"tensor program {pipe.name}: input {i.name} holds values "
                                  f"in [{int(a.min())}, {int(a.max())}], outside {i.type} "
                                  f"[{lo}, {hi}]")
        out[i.name] = a.astype(np.int64) & 0xFFFF
    return out


def evaluate(pipe: dsl.Pipeline, inputs: dict[str, Any],
             all_funcs: bool = False) -> dict[str, np.ndarray]:
    """Evaluate the tensor program ``pipe`` on ``inputs`` (name -> integer array of the
    input's shape reversed, e.g. ``(C, H, W)`` for ``Input(.., (W, H, C))``; values in the
    input's type). Returns every output (``all_funcs``: every Func) by name over its
    :func:`domains` box, shape reversed, dtype uint16 or int16 by the Func's type.
    Raises :class:`SimulationError` for bad inputs, :class:`MappingError` for a program the
    domains or the op DAG refuse."""
    if any(f.type.is_float for f in pipe.funcs):
        raise MappingError(f"tensor program {pipe.name}: BFloat16 Funcs are not evaluated by "
                           f"mapper.frontend.tensor (16-bit integer layers only)")
    dom = domains(pipe)
    arrays: dict[str, np.ndarray] = _check_inputs(pipe, inputs)
    for f in pipe.funcs:
        arrays[f.name] = _eval_func(f, dom, arrays)
    names = [f.name for f in pipe.funcs] if all_funcs else [o.name for o in pipe.outputs]
    types = {f.name: f.type for f in pipe.funcs}
    res = {}
    for name in names:
        a = arrays[name].astype(np.uint16)
        res[name] = a.view(np.int16) if types[name].signed else a
    return res


def _eval_func(f: dsl.Func, dom: dict[str, Domain], arrays: dict[str, np.ndarray],
               update: bool = True) -> np.ndarray:
    """``f`` over its domain (int64 words, coordinates reversed), its producers in
    ``arrays``; ``update=False``: its pure definition only."""
    box = dom[f.name]
    n = len(box)
    # grid of pure Var v (dimension j): values along numpy axis n-1-j
    grid = {}
    for j, (v, (lo, hi)) in enumerate(zip(f.vars, box, strict=True)):
        shape = [1] * n
        shape[n - 1 - j] = hi - lo
        grid[id(v)] = np.arange(lo, hi, dtype=np.int64).reshape(shape)
    ins: dict[str, list[np.ndarray]] = {}
    keys: dict[str, list[tuple]] = {}

    def index(a: dsl.Affine, env: dict) -> Any:
        c = a.const + sum(env[t] for t in a.terms if isinstance(t, dsl.RVar))
        pure = [t for t in a.terms if isinstance(t, dsl.Var)]
        if not pure:
            return np.int64(c)
        return (a.scale * grid[id(pure[0])] + a.pre) // a.div + c

    def read(k: ir.Kernel, e: dsl.Access, env: dict) -> int:
        t = e.target
        key = tuple((tuple(id(x) for x in a.terms if isinstance(x, dsl.Var)), a.scale,
                     a.div, a.pre, a.const + sum(env[x] for x in a.terms
                                                  if isinstance(x, dsl.RVar)))
                    for a in e.idx)
        lst = keys.setdefault(t.name, [])
        if key in lst:
            return k.input(t.name, lst.index(key))
        src, pd = arrays[t.name], dom[t.name]
        idx = [index(a, env) - pd[j][0] for j, a in enumerate(e.idx)]
        lst.append(key)
        ins.setdefault(t.name, []).append(src[tuple(reversed(idx))])
        k.declare_input(t.name, len(lst), 16)
        return k.input(t.name, len(lst) - 1)

    kernel = dsl.func_kernel(f, read, update=update)
    out = eval_kernel(kernel, ins)["out"]
    shape = tuple(hi - lo for lo, hi in reversed(box))
    return np.broadcast_to(out, shape).astype(np.int64) & 0xFFFF


def macs(pipe: dsl.Pipeline) -> dict[str, int]:
    """Multiply-accumulates per Func: multiplications in its update per RDom point times RDom
    points times domain points (the ideal-cycle numerator of a layer: MACs / PEs used).
    Raises :class:`MappingError` as :func:`domains`."""
    dom = domains(pipe)
    out = {}
    for f in pipe.funcs:
        if f.update_expr is None:
            out[f.name] = 0
            continue
        muls = sum(1 for n in dsl._walk(f.update_expr)
                   if isinstance(n, dsl.BinOp) and n.op == "*")
        points = 1
        for _, e in f.rdom.ranges:
            points *= e
        size = 1
        for lo, hi in dom[f.name]:
            size *= hi - lo
        out[f.name] = muls * points * size
    return out
