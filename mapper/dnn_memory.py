"""The memories of a DNN layer on Lake MEM tiles: port programs that load weights and
activations streamed in from the host and read them back as the step kernel's operand streams,
and accumulation MEMs that keep the partial sums, checked on Lake's cycle-accurate model (the
array path of tensor programs, step 3: docs/mapper.md "DNN layers").

**Loop nest** (:func:`loop_nest`): the compute loop of a reduction runs one step
(:func:`mapper.dnn_step.step_kernel`) per ``stall`` cycles (:attr:`mapper.dnn_plan.LayerPlan
.accumulation`) over counters, innermost first: the pixel loops (pure Vars that are not lanes),
the temporal RDom vars, the outer parts of the input-lane splits, then the tiles (outer parts
of the output-lane splits); counters of extent 1 are dropped. Step ``i`` runs at cycle
``start + stall * i`` (``i`` the lexicographic index).

**One MEM per operand stream** (:func:`map_operands`). A stream reads ``P[c_0, c_1, ...]`` with
each coordinate affine in the counters: ``c_j = b_j + sum_k a_jk i_k``. Its MEM stores the
*compressed box* ``u_j = (c_j - b_j) / g_j`` with ``g_j = gcd_k a_jk`` (an input lane's channel
``8 rzo + i`` becomes ``rzo``), ``u_0`` fastest: ``prod_j E_j`` words, ``E_j = 1 + sum_k (a_jk /
g_j)(e_k - 1)``; one copy for every tile (the whole layer's share of the stream; double
buffering a tile's share against the next is the following step). Write port ``data_in_0``:
the box in address order, one word per cycle from cycle 0 (the load phase; the host streams
``P[b + g u]``). Read port ``data_out_0``: the loop nest, address strides ``sum_j (a_jk / g_j)
pitch_j``, schedule strides of one step per ``stall`` cycles, firing ``read_latency`` cycles
before the step that uses the word; ``start`` = the longest load + read latency.

**Accumulation** (:func:`accumulator_programs`): one MEM per output lane holds a partial sum
per pixel of the tile (address = the pixel counters' linear index, reused by every pass and
tile); it is read ``read_latency`` cycles before each step and the step kernel's result is
written back one cycle after it (Lake's MEM writes before it reads in one edge, so a read in
the write's cycle sees the new sum: a pass of ``distance`` steps needs ``stall * distance >=
read_latency + 1``, which :mod:`mapper.dnn_plan`'s stall guarantees). A flag MEM holding
``1, 0, 0, ...`` over the reduction counters drives the step kernel's ``first`` input
(:func:`mapper.dnn_step.step_kernel` with ``init``): each sum restarts from the pure
definition on its first pass, so no MEM is cleared between tiles. The final sums are the
values written on the last pass.

**Simulation** (:func:`simulate`): every operand MEM configured by
:func:`lake.config.configure` and run on :func:`lake.model.run_model` (its read stream must
arrive exactly at the step cycles); the accumulation and flag MEMs stepped cycle by cycle
with the step kernel (:func:`mapper.ir.eval_op` per op) between their read and their write;
pure Funcs (requantisation) as :mod:`mapper.tensor`. The ResNet layer at the paper's
blocking uses 64 + 8 operand MEMs, 8 accumulation MEMs and the flag MEM: 81, as
:func:`mapper.dnn_plan.plan_layer` counts.

Errors: :class:`~cgra.errors.MappingError` for a program with other than one reduction, a
reduction reading a Func (an intermediate buffer), a floor-division read, more counters than
the MEM's address generators have dimensions, a box larger than one MEM (chaining is the
stencil flow's, not yet this one's), a non-``+`` accumulation, a pure definition that is not
a constant; :class:`~cgra.errors.SimulationError` when a MEM's stream misses its cycles.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from cgra.errors import MappingError, SimulationError
from mapper import dnn_step, tensor
from mapper.frontend import dsl


@dataclass(frozen=True)
class Counter:
    """A loop of the compute nest: ``name``, ``extent``; ``origin`` the pure Var or RDom var
    it advances by ``step`` per iteration."""

    name: str
    extent: int
    origin: str
    step: int


@dataclass
class OperandMem:
    """The MEM tile of one operand stream: its ``programs`` (Lake port programs, dict form),
    the box it stores (``gcd`` and ``extents`` per coordinate, ``base`` coordinates) and
    ``words``."""

    stream: dnn_step.Stream
    programs: dict[str, dict]
    base: tuple[int, ...]
    gcd: tuple[int, ...]
    extents: tuple[int, ...]

    @property
    def words(self) -> int:
        return math.prod(self.extents)

    def writes(self, array: np.ndarray, domain: tensor.Domain) -> list[int]:
        """The load stream: the stored box of ``array`` (the producer, coordinates reversed,
        over ``domain``) in address order, as 16-bit words."""
        idx = np.indices(tuple(reversed(self.extents))).reshape(len(self.extents), -1)[::-1]
        coords = [self.base[j] + self.gcd[j] * idx[j] - domain[j][0]
                  for j in range(len(self.extents))]
        return [int(v) & 0xFFFF for v in array[tuple(reversed(coords))]]


@dataclass
class LayerMemories:
    """The operand MEMs of one reduction: ``counters`` (innermost first), ``stall`` (cycles
    per step), ``start`` (cycle of step 0), ``mems`` per producer in stream order."""

    func: str
    step: dnn_step.StepKernel
    counters: list[Counter]
    stall: int
    start: int
    mems: dict[str, list[OperandMem]]

    @property
    def steps(self) -> int:
        return math.prod(c.extent for c in self.counters)

    @property
    def cycles(self) -> int:
        """The cycle after the last step."""
        return self.start + self.stall * self.steps


def loop_nest(f: dsl.Func, sk: dnn_step.StepKernel, dom: tensor.Domain) -> list[Counter]:
    """The compute loop nest of reduction ``f`` (module docstring), innermost first."""
    lanes = {ln.origin: ln for ln in sk.lanes}
    out: list[Counter] = []
    for v, (lo, hi) in zip(f.vars, dom, strict=True):
        if v.name not in lanes:
            out.append(Counter(v.name, hi - lo, v.name, 1))
    for rv in f.rdom.vars:
        if rv.name not in lanes:
            out.append(Counter(rv.name, rv.extent, rv.name, 1))
    for ln in sk.lanes:
        if not ln.output:
            out.append(Counter(f"{ln.origin}/outer", ln.outer, ln.origin, ln.factor))
    for ln in sk.lanes:
        if ln.output:
            out.append(Counter(f"{ln.origin}/outer", ln.outer, ln.origin, ln.factor))
    return [c for c in out if c.extent > 1]


def _coordinate(a: dsl.Affine, f: dsl.Func, st: dnn_step.Stream, counters: list[Counter],
                base: dict[str, int], who: str) -> tuple[int, list[int]]:
    """``(b, [a_k])``: the coordinate of access ``a`` as ``b + sum_k a_k i_k``."""
    if a.div != 1:
        raise MappingError(f"Func {f.name}: read {who}[{a!r}] divides a coordinate; operand "
                           f"MEMs take affine reads only")
    inner = dict(st.lanes)
    b, coef = a.const, [0] * len(counters)
    for t in a.terms:
        scale = a.scale if isinstance(t, dsl.Var) else 1
        b += scale * (base[t.name] + inner.get(t.name, 0))
        for k, c in enumerate(counters):
            if c.origin == t.name:
                coef[k] += scale * c.step
    b += a.pre
    return b, coef


def map_operands(pipe: dsl.Pipeline, preset: dict[str, Any] | None = None) -> LayerMemories:
    """Port programs of every operand MEM of ``pipe``'s reduction (module docstring) for a
    MEM with ``preset`` facts (``capacity`` words, ``max_dimensionality``, ``read_latency``;
    default the dual-port 2048 x 16). Raises :class:`MappingError`."""
    from mapper.dnn_plan import plan_layer

    mem = {"capacity": 2048, "max_dimensionality": 6, "read_latency": 1, **(preset or {})}
    reds = [f for f in pipe.funcs if f.update_expr is not None]
    if len(reds) != 1:
        raise MappingError(f"tensor program {pipe.name}: {len(reds)} reductions; operand MEMs "
                           f"are mapped for one reduction (intermediate buffers come next)")
    f = reds[0]
    sk = dnn_step.step_kernel(pipe, f.name)
    if sk.op != "+":
        raise MappingError(f"Func {f.name}: accumulation by {sk.op!r}; the operand-MEM "
                           f"simulation sums contributions (+ only)")
    doms = tensor.domains(pipe)
    counters = loop_nest(f, sk, doms[f.name])
    if len(counters) > mem["max_dimensionality"]:
        raise MappingError(f"Func {f.name}: {len(counters)} loop counters "
                           f"({', '.join(c.name for c in counters)}) but the MEM's address "
                           f"generators have {mem['max_dimensionality']} dimensions")
    stall = plan_layer(pipe).accumulation[f.name]["stall"]
    base = {v.name: lo for v, (lo, _) in zip(f.vars, doms[f.name], strict=True)}
    base.update({rv.name: rv.lo for rv in f.rdom.vars})
    inputs = {i.name for i in pipe.inputs}
    built: dict[str, list[tuple[dnn_step.Stream, tuple, tuple, tuple, list[int]]]] = {}
    for prod, streams in sk.streams.items():
        if prod not in inputs:
            raise MappingError(f"Func {f.name}: reads Func {prod}, an intermediate buffer; "
                               f"operand MEMs are mapped for pipeline Inputs only")
        for st in streams:
            bs, gs, es, strides = [], [], [], [0] * len(counters)
            pitch = 1
            for a in st.access:
                b, coef = _coordinate(a, f, st, counters, base, prod)
                g = math.gcd(*coef) if any(coef) else 0
                ext = 1 + (sum(c // g * (n.extent - 1) for c, n in zip(coef, counters,
                                                                    strict=True)) if g else 0)
                for k, c in enumerate(coef):
                    if g:
                        strides[k] += c // g * pitch
                bs.append(b)
                gs.append(g)
                es.append(ext)
                pitch *= ext
            if pitch > mem["capacity"]:
                raise MappingError(f"Func {f.name}: a stream of {prod} needs {pitch} words, "
                                   f"more than one MEM ({mem['capacity']}); use more lanes "
                                   f"or smaller tiles")
            built.setdefault(prod, []).append((st, tuple(bs), tuple(gs), tuple(es), strides))
    words = max(math.prod(e) for lst in built.values() for _, _, _, e, _ in lst)
    lat = mem["read_latency"]
    start = words + lat
    sched, s = [], stall
    for c in counters:
        sched.append(s)
        s *= c.extent
    extents = [c.extent for c in counters] or [1]
    sched = sched or [stall]
    mems: dict[str, list[OperandMem]] = {}
    for prod, lst in built.items():
        for st, bs, gs, es, strides in lst:
            n = math.prod(es)
            programs = {
                "data_in_0": {"dimensionality": 1, "extents": [n],
                              "address": {"strides": [1], "offset": 0},
                              "schedule": {"strides": [1], "offset": 0}},
                "data_out_0": {"dimensionality": len(extents), "extents": extents,
                               "address": {"strides": strides or [0], "offset": 0},
                               "schedule": {"strides": sched, "offset": start - lat}}}
            mems.setdefault(prod, []).append(OperandMem(st, programs, bs, gs, es))
    return LayerMemories(f.name, sk, counters, stall, start, mems)


def _program(extents: list[int], strides: list[int], sched: list[int], offset: int) -> dict:
    return {"dimensionality": len(extents), "extents": list(extents),
            "address": {"strides": list(strides), "offset": 0},
            "schedule": {"strides": list(sched), "offset": offset}}


def accumulator_programs(lm: LayerMemories, f: dsl.Func, read_latency: int = 1
                         ) -> tuple[dict[str, dict], dict[str, dict], list[int]]:
    """``(accumulation MEM programs, first-pass flag MEM programs, flag words)`` of
    :class:`LayerMemories` ``lm`` of reduction ``f``: an accumulation MEM (one per output lane)
    holds a partial sum per pixel of the tile (address = the pixel counters' linear index, the
    same for every pass and tile), read ``read_latency`` cycles before each step and written
    back one cycle after it; the flag MEM holds ``1, 0, 0, ...`` over the reduction counters
    (address = their linear index) and is read with the steps: the step kernel's ``first``
    (:func:`mapper.dnn_step.step_kernel` with ``init``) restarts each sum on the first pass."""
    rnames = {rv.name for rv in f.rdom.vars}
    extents = [c.extent for c in lm.counters] or [1]
    sched, s = [], lm.stall
    for c in lm.counters:
        sched.append(s)
        s *= c.extent
    sched = sched or [lm.stall]
    pix, red = [0] * len(extents), [0] * len(extents)
    np_, nr = 1, 1
    for k, c in enumerate(lm.counters):
        if c.origin in rnames:
            red[k], nr = nr, nr * c.extent
        elif c.origin not in {ln.origin for ln in lm.step.lanes if ln.output}:
            pix[k], np_ = np_, np_ * c.extent
    acc = {"data_in_0": _program(extents, pix, sched, lm.start + 1),
           "data_out_0": _program(extents, pix, sched, lm.start - read_latency)}
    flag = {"data_in_0": _program([nr], [1], [1], 0),
            "data_out_0": _program(extents, red, sched, lm.start - read_latency)}
    return acc, flag, [1] + [0] * (nr - 1)


def simulate(pipe: dsl.Pipeline, inputs: dict[str, Any], preset: str = "dualport_2048x16"
             ) -> tuple[dict[str, np.ndarray], LayerMemories]:
    """Run ``pipe`` on Lake MEM models (module docstring): operand streams from their MEMs,
    partial sums in one accumulation MEM per output lane, read, updated by the step kernel
    (with its restart on the first pass) and written back every step, cycle by cycle.
    Returns every Func by name (as :func:`mapper.tensor.evaluate` with ``all_funcs``) and the
    :class:`LayerMemories`. Raises :class:`MappingError`, :class:`SimulationError`."""
    from lake.config import configure
    from lake.model import input_names, make_model, make_stimulus, run_model
    from lake.spec import preset as lake_preset

    spec = lake_preset(preset)
    lat = spec.storage.read_latency
    lm = map_operands(pipe, {"capacity": spec.storage.words,
                             "max_dimensionality": spec.max_dims, "read_latency": lat})
    doms = tensor.domains(pipe)
    arrays = tensor._check_inputs(pipe, inputs)
    n = lm.steps
    want = lm.start + lm.stall * np.arange(n)
    ops: dict[str, list[np.ndarray]] = {}
    for prod, lst in lm.mems.items():
        for om in lst:
            config = configure(preset, om.programs)
            stim = make_stimulus(preset, om.programs,
                                 {"data_in_0": om.writes(arrays[prod], doms[prod])})
            got = run_model(preset, config, stim)["data_out_0"]
            cycles = np.array([c for c, _ in got])
            if len(got) != n or not np.array_equal(cycles, want):
                raise SimulationError(f"operand MEM of {prod} stream {om.stream.index}: "
                                      f"{len(got)} words at cycles {cycles[:4].tolist()}..., "
                                      f"expected {n} at {want[:4].tolist()}...")
            ops.setdefault(prod, []).append(np.array([v for _, v in got], dtype=np.int64))
    f = next(x for x in pipe.funcs if x.name == lm.func)
    sk = dnn_step.step_kernel(pipe, f.name, init=True)
    acc_prog, flag_prog, flag_words = accumulator_programs(lm, f, lat)
    lanes = len(sk.out_lanes)
    models = []
    for progs in [acc_prog] * lanes + [flag_prog]:
        m = make_model(preset)
        m.configure(configure(preset, progs))
        models.append(m)
    base = {name: 0 for name in input_names(spec)}
    for m in models:
        m.step(dict(base, RESET=1, clk_en=0, flush=0))
    nodes = sk.kernel.live_nodes()
    step_at = {int(c): i for i, c in enumerate(want)}
    pending: list[dict[int, int]] = [dict() for _ in range(lanes)]
    flag_load = dict(enumerate(flag_words))
    last: list[np.ndarray] = [np.zeros(n, dtype=np.int64) for _ in range(lanes)]
    for c in range(lm.cycles + 2):
        outs = [m.step(dict(base, RESET=0, clk_en=1, flush=0,
                            data_in_0=(pending[o].pop(c, 0) if o < lanes
                                       else flag_load.get(c, 0))))
                for o, m in enumerate(models)]
        i = step_at.get(c)
        if i is None:
            continue
        if not all(out["valid_out_0"] for out in outs):
            raise SimulationError(f"accumulation MEMs: no valid read at step {i} (cycle {c})")
        vals = {"acc": [out["data_out_0"] for out in outs[:lanes]],
                "first": [outs[lanes]["data_out_0"]],
                **{p: [arr[i] for arr in lst] for p, lst in ops.items()}}
        res = _eval_scalar(nodes, vals)
        for o in range(lanes):
            v = int(res[sk.kernel.outputs[f"out{o}"]])
            pending[o][c + 1] = v
            last[o][i] = v
    # the final sums: the values written on the last reduction pass
    acc = np.array(tensor._eval_func(f, doms, arrays, update=False))
    shape = tuple(c.extent for c in reversed(lm.counters)) or (1,)
    rnames = {rv.name for rv in f.rdom.vars}
    rev = list(reversed(lm.counters))
    sel = tuple(-1 if c.origin in rnames else slice(None) for c in rev)
    keep = [c for c in rev if c.origin not in rnames]
    lanes_of = {ln.origin: ln for ln in sk.lanes}
    for o, lane in enumerate(sk.out_lanes):
        total = last[o].reshape(shape)[sel]
        grids = np.indices(total.shape) if total.ndim else np.zeros((0,), dtype=np.int64)
        coord = {}
        for v in f.vars:
            value = np.zeros(total.shape, dtype=np.int64)
            if v.name in lanes_of:
                value = value + lane[v.name]
            for axis, cnt in enumerate(keep):
                if cnt.origin == v.name:
                    value = value + cnt.step * grids[axis]
            coord[v.name] = value
        acc[tuple(coord[v.name] for v in reversed(f.vars))] = total & 0xFFFF
    arrays[f.name] = acc & 0xFFFF
    for g in pipe.funcs:
        if g.update_expr is None:
            arrays[g.name] = tensor._eval_func(g, doms, arrays)
    res_arrays = {}
    for g in pipe.funcs:
        a = arrays[g.name].astype(np.uint16)
        res_arrays[g.name] = a.view(np.int16) if g.type.signed else a
    return res_arrays, lm


def _eval_scalar(nodes: list, inputs: dict[str, list[int]]) -> dict[int, int]:
    """The step kernel on one step's scalar inputs (16-bit words; :func:`mapper.ir.eval_op`)."""
    from mapper.ir import CONST_OPS, INPUT, eval_op

    vals: dict[int, int] = {}
    for nd in nodes:
        if nd.op == INPUT:
            name, idx = nd.input
            vals[nd.id] = int(inputs[name][idx]) & ((1 << nd.width) - 1)
        elif nd.op in CONST_OPS:
            vals[nd.id] = nd.value
        else:
            vals[nd.id] = eval_op(nd.op, [vals[a] for a in nd.args], 16)
    return vals
