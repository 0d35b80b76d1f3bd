"""A DNN layer's mapping plan before place and route: lanes, PEs, MEM tiles, a coarse-grained
tile schedule and its occupancy (an architect's sizing model before place and route; the
array runs the layers through :mod:`mapper.dnn.array`).

Source: the unified-buffer paper (Liu et al., TACO 2023), section 4.4 (coarse-grained
double-buffered pipelines, loop perfection and flattening: :mod:`mapper.dnn.coarse`) and its ResNet
mapping: ``block_in`` input channels times ``block_out`` output channels multiply in parallel,
every operand stream comes from its own memory port, partial sums live in accumulation
buffers.

**Lanes** (:func:`reductions`). A *reduction* is a Func with an update over an RDom. The
update's ``unroll`` directives (:meth:`mapper.frontend.dsl.Func.update`) give its lanes: an
unrolled split of a pure Var (``k -> ko, ki``) is an *output lane* (``L_o`` = the product of
those factors), of an RDom var (``r.z -> rzo, rzi``, or an unrolled RDom var itself) an *input
lane* (``L_i``). Each cycle the array computes ``L_o`` outputs' partial sums over ``L_i``
reduction points: the reduction's step kernel (:func:`mapper.dnn.step.step_kernel` with its
restart: ``m * L_o * L_i`` multiplications, ``m`` per point, as many adds, the trees plus the
accumulation, and a mux per output lane plus one compare for the first pass), one PE per op
before compute mapping fuses any, and each pure Func reading the reduction at
its own point (the requantisation) costs its op count per output lane.

**Tiles.** The outer parts of the output-lane splits (``ko``) form the tile loop: ``T`` tiles,
each computing ``D / T`` outputs (``D`` = the reduction's domain size) in ``D * R / (T * L_o *
L_i)`` cycles (``R`` = RDom points). Stages of one tile, in order: ``load_<input>`` for every
pipeline Input the reduction reads (its words for the tile over ``io_in`` words per cycle, and
at least a stream's words over its MEM's write ports; an Input that no tiled Var indexes is
loaded once, before the tile loop) and the compute stage (an
inner loop issuing one step per cycle, ``depth`` = MEM read latency + adder-tree depth ``ceil
(log2(L_i m))`` + 1). The pixel loops are innermost, so a partial sum is read, updated and
written back once per pass over the tile's pixels: when that pass (the *accumulation distance*,
``D / (T * L_o)`` steps) is shorter than the step's latency, every step stalls to ``ceil(latency
/ distance)`` cycles (GEMM's 8 x 8 output tile with no pixel loop: 2 cycles per step; keeping the
64 sums in PE registers instead is the way out, not planned here). The last reduction pass
over a tile sends its sums through the
requantisation straight out (``L_o`` words per step; more output lanes than ``io_out`` IO tiles
stretch that pass). Reductions before the last one (MobileNet's depthwise stage) run once,
before the tile loop.
:func:`mapper.dnn.coarse.schedule_coarse` gives ``ii``, cycles, copies per buffer and the
occupancy; :attr:`LayerPlan.ablation` is the paper's Fig. 13 (with and without double
buffering and flattening).

**Buffers and MEM tiles.** A buffer feeds ``s`` parallel *streams*: an Input or Func read
depends on a lane when its index uses the lane's origin Var (the input activations use ``r.z``:
``L_i`` streams; the weights use ``r.z`` and ``k``: ``L_i * L_o`` streams); the accumulation
buffer has ``L_o`` streams. A stream holds ``words`` = its share of the data one copy keeps,
and ``copies`` from the coarse schedule (2 when double-buffered). MEM tiles per buffer: ``ceil(s
/ p) * ceil(min(p, s) * words * copies / capacity)`` with ``p`` = read ports per MEM (1
dual-port, 2 PUB): a stream larger than one MEM chains MEMs. An accumulation buffer is read and
written back once per reduction pass (one read and one write port, one copy): ``L_o`` MEMs per
``capacity`` words of partial sums per lane; one more MEM holds the first-pass flag that
restarts each sum (:mod:`mapper.dnn.memory`, which runs this memory system on Lake's models).

**Wide fetch.** A PUB fetches ``fetch_width`` words at a time; an Input streamed along pixel
rows (coordinate 0 indexed by a pure Var: the activations, not the weights) whose row
``W_in`` is not a multiple of it is padded: compute cycles grow by ``ceil(W_in / f) * f /
W_in`` (the paper reports +12 % for ResNet on the PUB).

Ideal cycles = MACs / multipliers used (every multiplier busy every cycle); occupancy = busy
multiplier-cycles / total = MACs / (multipliers * cycles) (stalls and padding count as idle).

Errors: :class:`~cgra.errors.MappingError` for a pipeline without a reduction, lanes that do
not divide the extents, a plan that needs more PEs or MEMs than the array has (naming both);
:class:`~cgra.errors.CollateralError` from :meth:`Resources.from_design`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from cgra.errors import MappingError
from mapper import ir
from mapper.dnn import coarse, step as dnn_step
from mapper.frontend import tensor
from mapper.frontend import dsl
from mapper.collateral import load_design_summary


@dataclass(frozen=True)
class Resources:
    """What a design offers a layer: tile counts, and per MEM ``mem_words`` (16-bit words),
    read and write ports, ``fetch_width`` (words per SRAM access), ``read_latency`` (cycles);
    IO words per cycle in and out (one per IO tile each way)."""

    name: str
    pes: int
    mems: int
    ios: int
    mem_words: int
    mem_read_ports: int = 1
    fetch_width: int = 1
    read_latency: int = 1
    mem_write_ports: int = 1
    #: the MEM's Lake preset (its cycle-accurate model: ``cgra layer --memories``)
    preset: str = "dualport_2048x16"

    @property
    def io_in(self) -> int:
        return self.ios

    @property
    def io_out(self) -> int:
        return self.ios

    @classmethod
    def from_design(cls, path: str | Path) -> Resources:
        """The resources of a generated design directory (design.json's tile counts, Lake's
        part of mem.json: :func:`mapper.collateral.load_design_summary`). Raises
        :class:`~cgra.errors.CollateralError` for a missing or malformed file."""
        design, mem = load_design_summary(path)
        counts = design.tile_counts
        if mem is None:
            return cls(design.name, counts.get("PE", 0), counts.get("MEM", 0),
                       counts.get("IO", 0), 0)
        return cls(design.name, counts.get("PE", 0), counts.get("MEM", 0),
                   counts.get("IO", 0), mem.capacity_words, len(mem.out_ports),
                   mem.fetch_width, mem.read_latency, len(mem.in_ports), mem.preset)

    def with_mem(self, preset: str, words: int, read_ports: int,
                 fetch_width: int) -> Resources:
        """The same array with another MEM (the dual-port vs PUB comparison; as many write
        ports as read ports, as both presets have)."""
        return Resources(f"{self.name}+{preset}", self.pes, self.mems, self.ios, words,
                         read_ports, fetch_width, self.read_latency, read_ports, preset)


#: the default 32 x 16 array (configs/default.toml): 360 PE, 120 MEM (dual-port 2048 x 16),
#: 32 IO tiles
DEFAULT_32X16 = Resources("default", 360, 120, 32, 2048, 1, 1, 1)


@dataclass(frozen=True)
class Reduction:
    """One reduction Func as the array computes it (module docstring)."""

    func: str
    out_lanes: dict[str, int]          # origin pure Var -> lanes
    in_lanes: dict[str, int]           # origin RDom var -> lanes
    points: int                        # R: RDom points
    muls: int                          # multiplications per RDom point
    extents: dict[str, int]            # pure Var -> domain extent
    #: (producer, vars its index uses, is a pipeline Input, streamed along pixel rows)
    reads: tuple[tuple[str, frozenset[str], bool, bool], ...]

    def outputs_along(self, v: str) -> int:
        """Tiles along output-lane Var ``v``: its extent / its lanes."""
        return self.extents[v] // self.out_lanes[v]

    @property
    def tiles(self) -> int:
        """The tile loop's iterations: the output lanes' outer extents, multiplied."""
        return math.prod(self.outputs_along(v) for v in self.out_lanes)

    @property
    def outputs(self) -> int:
        """D: the reduction's domain points."""
        return math.prod(self.extents.values())

    @property
    def lanes_out(self) -> int:
        return math.prod(self.out_lanes.values())

    @property
    def lanes_in(self) -> int:
        return math.prod(self.in_lanes.values())

    @property
    def multipliers(self) -> int:
        return self.muls * self.lanes_out * self.lanes_in

    @property
    def work(self) -> int:
        """Compute cycles over the whole layer (one step per cycle)."""
        return self.outputs * self.points // (self.lanes_out * self.lanes_in)


def reductions(pipe: dsl.Pipeline) -> list[Reduction]:
    """The reductions of tensor program ``pipe`` in pipeline order, with their lanes (module
    docstring). Raises :class:`MappingError` for no reduction, or a lane factor that does
    not divide its Var's extent."""
    dom = tensor.domains(pipe)
    out = []
    for f in pipe.funcs:
        if f.update_expr is None:
            continue
        pure = {v.name: (hi - lo) for v, (lo, hi) in zip(f.vars, dom[f.name], strict=True)}
        rext = {v.name: v.extent for v in f.rdom.vars}
        lanes = dnn_step.lanes(f, dom[f.name])
        o_l = {ln.origin: ln.factor for ln in lanes if ln.output}
        i_l = {ln.origin: ln.factor for ln in lanes if not ln.output}
        muls = sum(1 for n in dsl._walk(f.update_expr) if isinstance(n, dsl.BinOp)
                   and n.op == "*")
        reads: dict[str, set[str]] = {}
        is_input: dict[str, bool] = {}
        row: dict[str, bool] = {}
        for n in dsl._walk(f.update_expr):
            if isinstance(n, dsl.Access) and n.target is not f:
                used = reads.setdefault(n.target.name, set())
                for a in n.idx:
                    used.update(t.name for t in a.terms)
                # streamed along a pixel row (coordinate 0 follows a pure Var): a PUB pads it
                row[n.target.name] = row.get(n.target.name, False) or any(
                    isinstance(t, dsl.Var) for t in n.idx[0].terms)
                is_input[n.target.name] = isinstance(n.target, dsl.Input)
        out.append(Reduction(f.name, o_l, i_l, math.prod(rext.values()), max(muls, 1),
                             dict(pure),
                             tuple((p, frozenset(u), is_input[p], row[p])
                                   for p, u in reads.items())))
    if not out:
        raise MappingError(f"tensor program {pipe.name}: no reduction (a Func with an RDom "
                           f"update); nothing to plan")
    return out


def accumulation_of(red: Reduction, tiled: bool, read_latency: int) -> dict[str, int]:
    """``{distance, latency, stall}`` of reduction ``red`` (module docstring): a partial sum
    is updated once per pass over the pixels of a tile (``tiled``: its output-lane outers
    form the tile loop, else the whole domain is one tile): ``distance`` steps apart; a
    step's read-add-write ``latency`` = ``read_latency`` + adder-tree depth + 1; a pass
    shorter than that stalls every step to ``stall`` cycles."""
    depth = read_latency + math.ceil(math.log2(max(red.lanes_in * red.muls, 1))) + 1
    distance = red.outputs // (red.tiles if tiled else 1) // red.lanes_out
    return {"distance": distance, "latency": depth, "stall": -(-depth // distance)}


def _consumers(pipe: dsl.Pipeline, red: Reduction) -> list[str]:
    """Pure Funcs reading reduction ``red`` (its requantisation)."""
    return [f.name for f in pipe.funcs if f.update_expr is None and any(
        isinstance(n, dsl.Access) and isinstance(n.target, dsl.Func) and
        n.target.name == red.func for n in dsl._walk(f.pure))]


def read_one(k: ir.Kernel, e: dsl.Access, env: dict) -> int:
    """A pointwise read of a Func (its requantisation's of the reduction): kernel input
    ``<Func>.0`` (16 bits)."""
    k.declare_input(e.target.name, 1, 16)
    return k.input(e.target.name, 0)


def _post_ops(pipe: dsl.Pipeline, red: Reduction) -> int:
    """Ops per output lane of the pure Funcs that read ``red`` at its own point (the
    requantisation), counted on their op DAGs (:func:`mapper.frontend.dsl.func_kernel`)."""
    funcs = {f.name: f for f in pipe.funcs}
    return sum(sum(1 for n in dsl.func_kernel(funcs[name], read_one).live_nodes()
                   if n.op not in (ir.INPUT, *ir.CONST_OPS))
               for name in _consumers(pipe, red))


@dataclass(frozen=True)
class BufferPlan:
    """One buffer on MEM tiles: ``streams`` parallel read streams of ``words`` each per copy,
    ``copies`` (coarse schedule), ``mems`` tiles (module docstring)."""

    name: str
    role: str            # "input" (streamed in), "intermediate" (an earlier reduction's
                         # output), "accumulation" (partial sums), "flag" (first pass)
    streams: int
    words: int
    copies: int
    mems: int


@dataclass
class LayerPlan:
    """The plan of one tensor program on one :class:`Resources` (module docstring): ``pes``
    by role, ``buffers``, the coarse ``schedule`` (double-buffered, flattening where it helps),
    the Fig. 13 ``ablation`` (``(double_buffer, flatten)`` -> schedule), ``macs``,
    ``multipliers``, ``pad_factor`` (wide-fetch padding of the compute stage), ``accumulation``
(per reduction: ``distance`` = steps between two updates of one partial sum, ``latency`` of
a step, ``stall`` = cycles per step)."""

    name: str
    resources: Resources
    reductions: list[Reduction]
    pes: dict[str, int]
    buffers: list[BufferPlan]
    stages: list[coarse.Stage]
    iterations: tuple[int, ...]
    schedule: coarse.CoarseSchedule
    ablation: dict[tuple[bool, bool], coarse.CoarseSchedule]
    macs: int
    multipliers: int
    pad_factor: Fraction = field(default=Fraction(1))
    accumulation: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def pe_count(self) -> int:
        return sum(self.pes.values())

    @property
    def mem_count(self) -> int:
        return sum(b.mems for b in self.buffers)

    @property
    def cycles(self) -> int:
        return self.schedule.total_cycles

    @property
    def ideal_cycles(self) -> int:
        """MACs / multipliers: every multiplier busy every cycle."""
        return -(-self.macs // self.multipliers)

    @property
    def occupancy(self) -> Fraction:
        """Busy multiplier-cycles / total: MACs / (multipliers * cycles)."""
        return self.occupancy_of(self.schedule)

    def occupancy_of(self, schedule: coarse.CoarseSchedule) -> Fraction:
        """:attr:`occupancy` under another schedule (the :attr:`ablation` entries): stalls
        and wide-fetch padding are idle cycles, unlike the coarse schedule's own
        compute-stage occupancy."""
        return Fraction(self.macs, self.multipliers * schedule.total_cycles)

    def summary(self) -> dict:
        """The plan as JSON-ready figures."""
        return {"layer": self.name, "design": self.resources.name, "pes": self.pe_count,
                "pes_by_role": dict(self.pes), "mems": self.mem_count,
                "buffers": [b.__dict__ for b in self.buffers], "macs": self.macs,
                "multipliers": self.multipliers, "ideal_cycles": self.ideal_cycles,
                "cycles": self.cycles, "ii": self.schedule.ii,
                "occupancy": round(float(self.occupancy), 4),
                "pad_factor": str(self.pad_factor), "accumulation": self.accumulation,
                "ablation": {f"double_buffer={db},flatten={fl}": {
                    "cycles": s.total_cycles,
                    "occupancy": round(float(self.occupancy_of(s)), 4)}
                    for (db, fl), s in self.ablation.items()}}


def plan_layer(pipe: dsl.Pipeline, res: Resources = DEFAULT_32X16) -> LayerPlan:
    """Plan tensor program ``pipe`` on ``res`` (module docstring). Raises
    :class:`MappingError` when the plan needs more PEs or MEM tiles than ``res`` has, or
    for a program :func:`reductions` refuses."""
    dom = tensor.domains(pipe)
    reds = reductions(pipe)
    last = reds[-1]
    tiles = last.tiles
    ports = max(res.mem_read_ports, 1)
    pes: dict[str, int] = {}
    raw: list[tuple[str, str, int, int]] = []          # buffer, role, streams, words
    once: list[coarse.Stage] = []                      # before the tile loop (level 0)
    per_tile: list[coarse.Stage] = []                  # in the tile loop (level 1)
    pad = Fraction(1)
    accumulation: dict[str, dict[str, int]] = {}
    for red in reds:
        tiled = red is last and tiles > 1
        lanes = {**red.out_lanes, **red.in_lanes}
        func = next(f for f in pipe.funcs if f.name == red.func)
        step = dnn_step.step_kernel(pipe, red.func, init=isinstance(func.pure, dsl.Const))
        for op, n in sorted(step.kernel.op_counts().items()):
            pes[f"{red.func}: {op}"] = n
        post = _post_ops(pipe, red)
        if post:
            pes[f"{red.func}: requantisation"] = post * red.lanes_out
        reads = []
        for prod, used, is_input, along_rows in red.reads:
            streams = math.prod(n for v, n in lanes.items() if v in used)
            split = math.prod(red.outputs_along(v) for v in red.out_lanes if v in used) \
                if tiled else 1
            words = -(-(math.prod(hi - lo for lo, hi in dom[prod]) // split) // streams)
            role = "input" if is_input else "intermediate"
            if is_input:
                # the IO tiles bound the load, and so does each MEM's write port
                load = coarse.Stage(f"load_{prod}",
                                    latency=max(-(-words * streams // res.io_in),
                                                -(-words // max(res.mem_write_ports, 1)), 1),
                                    level=1 if split > 1 else 0, writes=(prod,))
                (per_tile if split > 1 else once).append(load)
            reads.append(prod)
            raw.append((prod, role, streams, words))
            if is_input and along_rows and res.fetch_width > 1:
                w_in, f = dom[prod][0][1] - dom[prod][0][0], res.fetch_width
                pad = max(pad, Fraction(-(-w_in // f) * f, w_in))
        steps = red.work // (tiles if tiled else 1)
        acc = accumulation_of(red, tiled, res.read_latency)
        accumulation[red.func] = acc
        depth, last_pass = acc["latency"], acc["distance"]
        steps *= acc["stall"]
        # the last reduction pass streams the requantised outputs out: L_o words per step
        # over io_out IO tiles stretch that pass when L_o > io_out
        steps += last_pass * (-(-red.lanes_out // res.io_out) - 1)
        writes = tuple(_consumers(pipe, red)) if red is not last else ()
        stage = coarse.Stage(f"compute_{red.func}", extent=math.ceil(steps * pad), ii=1,
                             depth=depth, level=1 if tiled else 0, reads=tuple(reads),
                             writes=writes, compute=red is last)
        (per_tile if tiled else once).append(stage)
        raw.append((f"acc_{red.func}", "accumulation", red.lanes_out,
                    -(-(red.outputs // (tiles if tiled else 1)) // red.lanes_out)))
        # the first-pass flag (1 on a partial sum's first update: it restarts from the pure
        # definition; mapper.dnn.memory.accumulator_programs), one word per reduction step
        raw.append((f"first_{red.func}", "flag", 1, red.points // red.lanes_in))
    # the tile loop's body after the code before it; a once-only load that a tiled stage
    # needs is listed first (coarse.Stage levels: 0 = before the loop, 1 = in it)
    stages = [s for s in once if s.name.startswith("load_")] + \
        [s for s in once if not s.name.startswith("load_")] + per_tile
    iterations = (1, tiles) if per_tile else (1,)
    sched = coarse.schedule_coarse(stages, iterations)
    table = coarse.ablation(stages, iterations)
    buffers = []
    for name, role, streams, words in raw:
        copies = 1 if role in ("accumulation", "flag") else sched.copies.get(name, 1)
        if role in ("accumulation", "flag"):
            # read and written back once per reduction pass (1 read + 1 write port); the
            # last pass sends its sums out through the requantisation, so one copy
            mems = streams * -(-words // res.mem_words)
        else:
            mems = -(-streams // ports) * -(-words * copies * min(ports, streams)
                                           // res.mem_words)
        buffers.append(BufferPlan(name, role, streams, words, copies, mems))
    macs = sum(tensor.macs(pipe).values())
    plan = LayerPlan(pipe.name, res, reds, pes, buffers, stages, iterations, sched, table,
                     macs, sum(r.multipliers for r in reds), pad, accumulation)
    if plan.pe_count > res.pes:
        raise MappingError(f"{pipe.name}: the plan needs {plan.pe_count} PEs, design "
                           f"{res.name} has {res.pes}; use fewer lanes (smaller block_in / "
                           f"block_out)")
    if plan.mem_count > res.mems:
        raise MappingError(f"{pipe.name}: the plan needs {plan.mem_count} MEM tiles, design "
                           f"{res.name} has {res.mems}; use fewer lanes or a MEM with more "
                           f"read ports (PUB)")
    return plan
