"""The memories of a DNN layer on Lake MEM tiles: port programs that load weights and
activations streamed in from the host and read them back as the step kernel's operand streams,
and accumulation MEMs that keep the partial sums, checked on Lake's cycle-accurate model (the
array path of tensor programs, step 3: docs/mapper.md "DNN layers").

**Loop nest** (:func:`loop_nest`): the compute loop of a reduction runs one step
(:func:`mapper.dnn.step.step_kernel`) per ``stall`` cycles (:attr:`mapper.dnn.plan.LayerPlan
.accumulation`) over counters, innermost first: the pixel loops (pure Vars that are not lanes),
the temporal RDom vars, the outer parts of the input-lane splits, then the tiles (outer parts
of the output-lane splits); counters of extent 1 are dropped. Step ``i`` runs at cycle
``start + stall * i`` (``i`` the lexicographic index). A partial sum is read again
``distance`` steps after its read (the pixels of a tile); ``stall`` is the plan's, at least
``ceil((read_latency + loop) / distance)`` with ``loop`` the cycles from its read word to its
write (1 here, the array's budget with :mod:`mapper.dnn.array`). On the array, when that
stalls (no pixel loop, as GEMM's output tile), the tiles move inside the reduction counters
if that shortens the stall and every tile's sums fit one MEM (loop perfection, the
unified-buffer paper section 4.4: ``LayerMemories.tiles_inner``; the accumulation MEMs then
address pixels and tiles, and every output leaves on the last pass).

**One MEM per operand stream** (:func:`map_operands`). A stream reads ``P[c_0, c_1, ...]`` with
each coordinate affine in the counters: ``c_j = b_j + sum_k a_jk i_k``. Its MEM stores the
*compressed box* ``u_j = (c_j - b_j) / g_j`` with ``g_j = gcd_k a_jk`` (an input lane's channel
``8 rzo + i`` becomes ``rzo``), ``u_0`` fastest: ``prod_j E_j`` words, ``E_j = 1 + sum_k (a_jk /
g_j)(e_k - 1)``; one copy for every tile (the whole layer's share of the stream), or a
double buffer (below). Write port ``data_in_0``:
the box in address order, one word per cycle from cycle 0 (the load phase; the host streams
``P[b + g u]``). Read port ``data_out_0``: the loop nest, address strides ``sum_j (a_jk / g_j)
pitch_j``, schedule strides of one step per ``stall`` cycles, firing ``read_latency`` cycles
before the step that uses the word; ``start`` = the longest load + read latency.

**Double buffers** (``map_layer(double_buffer=True)``, the array's default; the unified-buffer
paper section 4.4). A host stream whose outermost moving counter ``t`` (the outermost with a
non-zero coefficient: the tile loop for weights, the input-lane outer for activations) has an
even extent keeps only one iteration's *share* (the compressed box of the counters inside
``t``) per half: iteration ``i_t`` reads half ``i_t mod 2`` (counter ``t`` split into ``2 x
extent/2``, address ``share`` per step of the inner part, so the address offset toggles per
iteration), and the host writes iteration ``n``'s share into its half during iteration ``n -
1``, beginning ``lead`` cycles before iteration ``n``'s first read event (``share <= lead <=
period``, the cycles of one iteration; iteration 0's share in the load phase). The counters
outside ``t`` do not move the stream, so their iterations re-stream the same shares (an
input plane per output-channel tile). Reads may lag the writes by
:meth:`DoubleBuffer.read_slack` cycles. Programs are compacted (extent-1 dimensions dropped,
contiguous ones merged); a stream whose split programs need more dimensions than the MEM
has, with an odd extent of ``t`` or a share longer than ``lead`` keeps the whole box.

**Banks** (chaining a stream over several MEMs). A stream whose MEM would exceed the
capacity is split over the iterations of ``t``: with double buffers, when both halves do not
fit but one share does, a *ping-pong* pair (MEM ``i_t mod 2`` holds iteration ``i_t``'s share,
reloaded during the iteration before); without, the fewest ``k`` banks (``k`` dividing
``t``'s extent) whose shares fit, bank ``b`` holding the iterations ``i_t = k j + b``, loaded
once. Each bank reads only on its own iterations; the step kernel merges a stream's banks by
a mux chain on their ``valid_out`` (:func:`mapper.mapping.memory.merge_banks`, as the stencil flow's
column banks). A stream whose one share exceeds a MEM is refused.

**Wide fetch** (a PUB, ``fetch_width`` = ``fw`` > 1: Lake's rules 'vectorization' and
'pitch', :mod:`lake.config`). Read programs are compacted; a read whose first moving level's
stride does not divide ``fw`` or whose outer levels do not move by whole wide words gets
another layout (:func:`_wide`): the box's coordinates in their order or ordered by the
innermost counter moving them, the first one's *rows* padded to a pitch of whole wide words
(the paper's padding to the fetch width: an 18-word row at 20), and a counter other than the
row's innermost that moves inside a row (``r.x`` of activations read at ``x + r.x``: every
``r.x`` pass would start at another offset inside a wide word) made *shift banks*: MEM ``a``
serves the steps ``r.x = a`` only, stores the rows less their first ``a * step`` words (so
its reads are aligned) and samples the same host stream as bank 0 (its write program skips
those words; one IO lane feeds all, no extra load cycles). A stream no such layout fits is
refused (a stride-3 convolution). Double buffers and banks pad each share to whole wide
words; a strided read (``2x + r.x``) keeps the whole box (fetching a wide word every 2
reads leaves the PUB's one SRAM port no slot for refills). The first read of a wide word
comes :func:`fetch_slack` (``fw + 3``) cycles after its last write; a double buffer
whose refills and reads Lake still refuses (short rows: both take the one SRAM port at
irregular cycles) is held whole (:func:`refill_conflicts`), and a partial sum is
committed with the last of its wide word, so a pass must update a multiple of ``fw`` sums and
``stall * (distance - fw + 1) >= read_latency + loop + 4`` (:func:`_stall`; loop perfection
where that shortens the stall, as GEMM's output tile needs). The four layers run bit-exact
on ``pub_512x64`` (tests/mapper/test_dnn_memory.py) and on the PUB array
(tests/e2e/test_e2e_dnn_pub.py).

**Accumulation** (:func:`accumulator_programs`): one MEM per output lane holds a partial sum
per pixel of the tile (address = the pixel counters' linear index, reused by every pass and
tile); it is read ``read_latency`` cycles before each step and the step kernel's result is
written back one cycle after it (Lake's MEM writes before it reads in one edge, so a read in
the write's cycle sees the new sum: a pass of ``distance`` steps needs ``stall * distance >=
read_latency + 1``, which :mod:`mapper.dnn.plan`'s stall guarantees). A flag MEM holding
``1, 0, 0, ...`` over the reduction counters drives the step kernel's ``first`` input
(:func:`mapper.dnn.step.step_kernel` with ``init``): each sum restarts from the pure
definition on its first pass, so no MEM is cleared between tiles. The final sums are the
values written on the last pass.

**Several reductions** (:func:`map_layer`: MobileNet's depthwise then pointwise): they run
one after the other, each from the cycle after the previous one's last write. An operand read
from a pure Func of an earlier reduction (its requantisation) is an *intermediate buffer*: the
reader's compressed box, written by the earlier reduction's output lane that finishes those
words on its last pass, a cycle after each step; its write program is fitted as an affine
function of that reduction's counters and checked on every word (one lane per buffer).

**Simulation** (:func:`simulate`): every operand MEM configured by
:func:`lake.config.configure` and run on :func:`lake.model.run_model` (its read stream must
arrive exactly at the step cycles); the accumulation and flag MEMs stepped cycle by cycle
with the step kernel (:meth:`mapper.ir.Kernel.evaluate`) between their read and their write;
pure Funcs (requantisation) as :mod:`mapper.frontend.tensor`. The ResNet layer at the paper's
blocking uses 64 + 8 operand MEMs, 8 accumulation MEMs and the flag MEM: 81, as
:func:`mapper.dnn.plan.plan_layer` counts.

Errors: :class:`~cgra.errors.MappingError` for a program without a reduction, a reduction
reading a Func that is not an earlier reduction's requantisation, an intermediate buffer fed
by several lanes or not affinely, a floor-division read, more counters than
the MEM's address generators have dimensions, a stream no split of which fits one MEM, a
non-``+`` accumulation, a pure definition that is not a constant, on a PUB a stream no
wide-fetch layout fits or a pass of fewer partial sums than a wide word;
:class:`~cgra.errors.SimulationError` when a MEM's stream misses its cycles.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from cgra.errors import MappingError, SimulationError
from lake.affine import counters
from mapper.dnn import step as dnn_step
from mapper.frontend import tensor
from mapper.frontend import dsl
from cgra.errors import ConfigError
from lake.config import configure
from lake.spec import preset as lake_preset
from lake.model import input_names, make_model, make_stimulus, run_model
from mapper.dnn.plan import accumulation_of, reductions
from mapper.mapping.memory import MemSpec


@dataclass(frozen=True)
class MemFacts:
    """What layer memory mapping needs of a MEM: ``capacity`` (words), the address
    generators' ``max_dimensionality``, ``read_latency`` (cycles) and ``fetch_width`` (words
    per SRAM access). Defaults: the dual-port 2048 x 16 SRAM."""

    capacity: int = 2048
    max_dimensionality: int = 6
    read_latency: int = 1
    fetch_width: int = 1

    @classmethod
    def of(cls, mem: Any) -> "MemFacts":
        """``mem`` as facts: ``None`` (the defaults), a :class:`MemFacts`, a
        :class:`~mapper.mapping.memory.MemSpec`, a design's
        :class:`~lake.collateral.MemInfo`, or a dict of these four keys (tests, sweeps)."""
        if mem is None:
            return cls()
        if isinstance(mem, cls):
            return mem
        if isinstance(mem, dict):
            return cls(**{k: int(v) for k, v in mem.items()
                          if k in cls.__dataclass_fields__})
        spec = MemSpec.of(mem)
        return cls(spec.capacity, spec.max_dimensionality, spec.read_latency,
                   spec.fetch_width)


@dataclass(frozen=True)
class Counter:
    """A loop of the compute nest: ``name``, ``extent``; ``origin`` the pure Var or RDom var
    it advances by ``step`` per iteration."""

    name: str
    extent: int
    origin: str
    step: int


@dataclass(frozen=True)
class DoubleBuffer:
    """A host-loaded operand MEM reloaded behind the compute (module docstring, "Double
    buffers"): iterations of the stream's outermost moving counter alternate between its two
    halves (or, a ping-pong bank, between it and its partner MEM); ``share`` words per
    iteration, ``period`` cycles between two iterations, and the write of an iteration's
    share begins ``lead`` cycles before its first read event (``share <= lead <=
    period``)."""

    share: int
    period: int
    lead: int

    def read_slack(self, stall: int) -> int:
        """Cycles the MEM's reads may be delayed behind its writes: the last read of
        iteration ``n`` must come before the write of iteration ``n + 2``'s share into the
        same half begins."""
        return self.period + stall - self.lead - 1


@dataclass
class OperandMem:
    """The MEM tile of one operand stream: its ``programs`` (Lake port programs, dict form),
    the box it stores (``gcd`` and ``extents`` per coordinate, ``base`` coordinates) and
    ``words``."""

    stream: dnn_step.Stream
    programs: dict[str, dict]
    base: tuple[int, ...]
    gcd: tuple[int, ...]
    #: the stored box per coordinate (a double buffer: one iteration's share, per half)
    extents: tuple[int, ...]
    #: an intermediate buffer's words in write order (producer coordinates, one row per
    #: write); ``None``: loaded from the host
    write_coords: np.ndarray | None = None
    #: an intermediate buffer's writer: the producer reduction's output lane (index into its
    #: step kernel's ``out_lanes``) whose requantised sums it stores
    writer_lane: int | None = None
    #: a host-loaded double buffer (module docstring); ``None``: loaded once
    double: DoubleBuffer | None = None
    #: the host words in write order when they are not the box in address order (producer
    #: coordinates, one row per write): a double buffer's every share, a bank's shares
    load_coords: np.ndarray | None = None
    #: boxes of :attr:`extents` the MEM stores: 1; 2 for a double buffer's halves; a bank's
    #: iterations (module docstring, "Banks")
    copies: int = 1
    #: this MEM's index among the ``banks`` MEMs of its stream
    bank: int = 0
    banks: int = 1
    #: its index among the banks over the moving counter (module docstring, "Banks"); the
    #: shift banks of one such bank share its host stream (module docstring, "Wide fetch")
    tbank: int = 0
    #: the bank whose host load stream this MEM shares (a shift bank), ``None``: its own
    load_bank: int | None = None
    #: wide fetch: the row pitch of coordinate 0 in the MEM (0: dense, ``extents[0]``), the
    #: words at the start of every row it does not store (a shift bank), and the words per
    #: box (0: ``prod(extents)``; a share padded to whole wide words)
    pitch: int = 0
    skip: int = 0
    stored: int = 0
    #: the coordinates in address order, fastest first (empty: 0, 1, ...; a PUB may store
    #: the coordinate its innermost counter moves first)
    order: tuple[int, ...] = ()

    @property
    def words(self) -> int:
        """Words the MEM stores (padding included)."""
        return (self.stored or math.prod(self.extents)) * self.copies

    @property
    def host_words(self) -> int:
        """Words of its host load stream (its skipped words included: they are its shift
        siblings')."""
        return math.prod(self.extents) * self.copies

    @property
    def burst(self) -> int:
        """Words of one host load burst: all it loads, or one share of a double buffer."""
        return math.prod(self.extents) if self.double else self.host_words

    def box_coords(self) -> np.ndarray:
        """Producer coordinates of the words the MEM writes, in write order (its box in
        address order less a shift bank's skipped words), shape (words, dims) (a double
        buffer: of its first share)."""
        n = len(self.extents)
        order = self.order or tuple(range(n))
        ext = tuple(self.extents[j] for j in order)
        ido = np.indices(tuple(reversed(ext))).reshape(n, -1)[::-1]
        if self.skip:
            ido = ido[:, ido[0] >= self.skip]
        idx = np.empty_like(ido)
        idx[list(order)] = ido
        return np.stack([self.base[j] + self.gcd[j] * idx[j] for j in range(n)], axis=1)

    def addresses(self) -> np.ndarray:
        """The address of each row of :meth:`box_coords` (a box without a pitch: 0, 1,
        ...)."""
        n = len(self.extents)
        order = self.order or tuple(range(n))
        idx = (self.box_coords() - np.array(self.base)) // np.maximum(np.array(self.gcd), 1)
        pitches, p = [0] * n, 1
        for i, j in enumerate(order):
            pitches[j] = p
            p *= (self.pitch or self.extents[j]) if i == 0 else self.extents[j]
        idx[:, order[0]] -= self.skip
        return idx @ np.array(pitches, dtype=np.int64)

    def writes(self, array: np.ndarray, domain: tensor.Domain) -> list[int]:
        """The write stream: the stored words of ``array`` (the producer, coordinates
        reversed, over ``domain``) in write order, as 16-bit words."""
        coords = self.write_coords if self.write_coords is not None else (
            self.load_coords if self.load_coords is not None else self.box_coords())
        idx = [coords[:, j] - domain[j][0] for j in range(coords.shape[1])]
        return [int(v) & 0xFFFF for v in array[tuple(reversed(idx))]]


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
    box: tensor.Domain = ()
    #: steps between two updates of one partial sum (the pixels of a tile; with
    #: ``tiles_inner`` every tile's)
    distance: int = 1
    #: the tile loop runs inside the reduction counters (:func:`loop_nest`)
    tiles_inner: bool = False
    #: words per SRAM access of the MEM (a PUB's wide fetch; 1: dual-port)
    fetch_width: int = 1

    @property
    def steps(self) -> int:
        return math.prod(c.extent for c in self.counters)

    @property
    def cycles(self) -> int:
        """The cycle after the last step."""
        return self.start + self.stall * self.steps

    @property
    def schedule_strides(self) -> list[int]:
        """Cycles between two iterations of each counter (one step per ``stall`` cycles, in
        lexicographic order); ``[stall]`` for a nest without counters."""
        out, s = [], self.stall
        for c in self.counters:
            out.append(s)
            s *= c.extent
        return out or [self.stall]

    @property
    def mem_count(self) -> int:
        """MEM tiles: the operand MEMs, one accumulation MEM per output lane, the flag MEM."""
        return sum(len(v) for v in self.mems.values()) + len(self.step.out_lanes) + 1

    def pass_mask(self, pass_counters: dict[str, int]) -> np.ndarray:
        """Which steps (in time order) run on the pass ``pass_counters`` (counter name ->
        value), a boolean array of :attr:`steps`."""
        pts = counters([c.extent for c in self.counters] or [1])
        keep = np.ones(len(pts), dtype=bool)
        for k, c in enumerate(self.counters):
            if c.name in pass_counters:
                keep &= pts[:, k] == pass_counters[c.name]
        return keep


def loop_nest(f: dsl.Func, sk: dnn_step.StepKernel, dom: tensor.Domain,
              tiles_inner: bool = False) -> list[Counter]:
    """The compute loop nest of reduction ``f`` (module docstring), innermost first;
    ``tiles_inner``: the tiles (output-lane outers) run right after the pixel loops, inside
    the reduction counters (every tile's partial sums stay in the accumulation MEMs)."""
    lanes = {ln.origin: ln for ln in sk.lanes}
    pix: list[Counter] = []
    red: list[Counter] = []
    tiles: list[Counter] = []
    for v, (lo, hi) in zip(f.vars, dom, strict=True):
        if v.name not in lanes:
            pix.append(Counter(v.name, hi - lo, v.name, 1))
    for rv in f.rdom.vars:
        if rv.name not in lanes:
            red.append(Counter(rv.name, rv.extent, rv.name, 1))
    for ln in sk.lanes:
        if not ln.output:
            red.append(Counter(f"{ln.origin}/outer", ln.outer, ln.origin, ln.factor))
    for ln in sk.lanes:
        if ln.output:
            tiles.append(Counter(f"{ln.origin}/outer", ln.outer, ln.origin, ln.factor))
    out = pix + tiles + red if tiles_inner else pix + red + tiles
    return [c for c in out if c.extent > 1]


def _sum_counters(f: dsl.Func, sk: dnn_step.StepKernel, nest: list[Counter],
                  tiles_inner: bool) -> list[bool]:
    """Per counter of ``nest``: does it select the partial sum (a pixel loop, or with
    ``tiles_inner`` a tile loop) rather than a reduction step?"""
    rnames = {rv.name for rv in f.rdom.vars}
    outs = {ln.origin for ln in sk.lanes if ln.output}
    return [c.origin not in rnames and (tiles_inner or c.origin not in outs) for c in nest]


def _distance(f: dsl.Func, sk: dnn_step.StepKernel, nest: list[Counter],
              tiles_inner: bool) -> int:
    """Steps between two updates of one partial sum: the extent of the counters inside the
    first reduction counter (the pixels, with ``tiles_inner`` the tiles too)."""
    sel = _sum_counters(f, sk, nest, tiles_inner)
    return math.prod(c.extent for c, s in zip(nest, sel, strict=True) if s)


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


def last_pass(lm: LayerMemories, f: dsl.Func) -> np.ndarray:
    """:meth:`LayerMemories.pass_mask` of reduction ``f``'s last pass (every RDom counter at
    its last value): the steps that finish a sum."""
    rnames = {rv.name for rv in f.rdom.vars}
    return lm.pass_mask({c.name: c.extent - 1 for c in lm.counters if c.origin in rnames})


def step_coords(lm: LayerMemories, f: dsl.Func, lane: dict[str, int],
                 keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(cycles, coords)`` of reduction ``f``'s steps selected by ``keep``
    (:meth:`LayerMemories.pass_mask`) for output lane ``lane``: each step's cycle and the
    pure-Var coordinates of the sum it finishes (shape (steps, dims)), in time order."""
    pts = counters([c.extent for c in lm.counters] or [1])[keep]
    cycles = lm.start + pts @ np.array(lm.schedule_strides, dtype=np.int64)
    base = {v.name: lo for v, (lo, _) in zip(f.vars, lm.box, strict=True)}
    coords = []
    for v in f.vars:
        val = np.full(len(pts), base[v.name] + lane.get(v.name, 0), dtype=np.int64)
        for k, c in enumerate(lm.counters):
            if c.origin == v.name:
                val = val + c.step * pts[:, k]
        coords.append(val)
    return cycles, np.stack(coords, axis=1)


def fit_affine(points: np.ndarray, values: np.ndarray, who: str) -> tuple[list[int], int]:
    """``(strides, offset)`` of the affine function of loop-nest ``points`` (N, d) that gives
    ``values``, checked on every point. Raises :class:`MappingError`."""
    offset = int(values[0])
    strides = []
    for k in range(points.shape[1]):
        unit = np.flatnonzero((points[:, k] == 1) & (points.sum(axis=1) == 1))
        strides.append(int(values[unit[0]]) - offset if len(unit) else 0)
    if not np.array_equal(offset + points @ np.array(strides, dtype=np.int64), values):
        raise MappingError(f"{who}: its write addresses are not affine in the producer's "
                           f"loop counters; this intermediate buffer is not mapped")
    return strides, offset


def _compact(dims: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Loop dimensions ``(extent, address stride, schedule stride)``, innermost first, with
    extent-1 dimensions dropped and each dimension that continues the one inside it (both
    strides ``extent`` times the inner's) merged into it: the same address and cycle
    sequence in fewer address-generator dimensions."""
    out: list[tuple[int, int, int]] = []
    for e, a, t in dims:
        if e == 1:
            continue
        if out and a == out[-1][1] * out[-1][0] and t == out[-1][2] * out[-1][0]:
            e0, a0, t0 = out.pop()
            out.append((e0 * e, a0, t0))
        else:
            out.append((e, a, t))
    return out or [(1, 1, dims[0][2] if dims else 1)]


def _as_program(dims: list[tuple[int, int, int]], offset: int) -> dict[str, Any]:
    return port_program([d[0] for d in dims], [d[1] for d in dims], [d[2] for d in dims], offset)


@dataclass(frozen=True)
class _Wide:
    """A stream's box on a PUB (module docstring, "Wide fetch"): coordinates in address
    ``order`` (empty: 0, 1, ...), the first one's ``row`` pitch (0: dense), the ``shift``
    counter (``None``: none) and the row words one of its iterations moves (``step``)."""

    row: int = 0
    shift: int | None = None
    step: int = 0
    order: tuple[int, ...] = ()

    def banks(self, nest: list[Counter]) -> int:
        """Shift banks per stored box: the shift counter's extent (1 without one)."""
        return 1 if self.shift is None else nest[self.shift].extent

    def delay(self, a: int, sched: list[int]) -> int:
        """Cycles from the stream's first read to shift bank ``a``'s."""
        return 0 if self.shift is None else a * sched[self.shift]


@dataclass(frozen=True)
class _Share:
    """The box of one iteration of counter ``t`` (the outermost that moves a stream): per
    coordinate ``gcd`` and ``extents`` over the counters inside ``t``, their address
    ``strides``, ``words``, and ``move``: the coordinates one iteration of ``t`` adds."""

    t: int
    gcd: tuple[int, ...]
    extents: tuple[int, ...]
    strides: tuple[int, ...]
    words: int
    move: tuple[int, ...]
    #: its layout on a PUB (module docstring, "Wide fetch")
    wide: _Wide = _Wide()

    @property
    def host(self) -> int:
        """Host words of one share (:attr:`words` less its padding)."""
        return math.prod(self.extents)


def _box(nest: list[Counter], coefs: list[list[int]], inner: int, row: int = 0,
         order: tuple[int, ...] = ()) -> tuple[tuple[int, ...], tuple[int, ...], list[int], int]:
    """The compressed box (module docstring) of a stream whose coordinate ``j`` is ``b_j +
    sum_k coefs[j][k] i_k``, over the ``inner`` innermost counters of ``nest``: ``(gcd per
    coordinate, extent per coordinate, address stride per counter, words)``; ``order``: the
    coordinates in address order (default 0, 1, ...), ``row``: the pitch of the first (a row
    padded to whole wide words; 0: its extent)."""
    gs = [math.gcd(*c[:inner]) if any(c[:inner]) else 0 for c in coefs]
    es = [1 + (sum(c[k] // g * (nest[k].extent - 1) for k in range(inner)) if g else 0)
          for c, g in zip(coefs, gs, strict=True)]
    strides, pitch = [0] * inner, 1
    for i, j in enumerate(order or range(len(coefs))):
        if gs[j]:
            for k in range(inner):
                strides[k] += coefs[j][k] // gs[j] * pitch
        pitch *= (row or es[j]) if i == 0 else es[j]
    return tuple(gs), tuple(es), strides, pitch


def _vector_ok(dims: list[tuple[int, int, int]], fw: int) -> bool:
    """Do compacted read dimensions ``(extent, address stride, schedule stride)`` meet the
    PUB's rules 'vectorization' and 'pitch' (:mod:`lake.config`): the first moving level's
    stride divides ``fw``, every level above it moves by whole wide words?"""
    moving = [j for j, d in enumerate(dims) if d[1]]
    if not moving:
        return True
    j = moving[0]
    return 0 < dims[j][1] <= fw and fw % dims[j][1] == 0 and all(
        d[1] % fw == 0 for d in dims[j + 1:])


def _wide(nest: list[Counter], sched: list[int], coefs: list[list[int]], inner: int,
          fw: int, who: str) -> _Wide:
    """The layout of a stream's box over the ``inner`` innermost counters on a MEM fetching
    ``fw`` words at a time (module docstring, "Wide fetch"): the dense box when its reads
    already meet the PUB's rules; else, with the coordinates in their order or ordered by
    the innermost counter moving them, rows padded to whole wide words and at most one
    counter (besides the row's innermost) moving inside a row and nothing else, whose
    iterations become shift banks. Raises :class:`MappingError` when no layout meets the
    rules."""
    if fw == 1:
        return _Wide()
    _, es, dense, _ = _box(nest, coefs, inner)
    if _vector_ok(_compact([(nest[k].extent, dense[k], sched[k]) for k in range(inner)]), fw):
        return _Wide()
    first = [min([k for k in range(inner) if c[k]] or [inner]) for c in coefs]
    orders = [tuple(range(len(coefs)))]
    orders += [o for o in [tuple(sorted(range(len(coefs)), key=lambda j: first[j]))]
               if o != orders[0]]
    for order in orders:
        r0 = order[0]
        row = -(-es[r0] // fw) * fw
        gs, _, strides, _ = _box(nest, coefs, inner, row, order)
        in_row = [k for k in range(inner) if coefs[r0][k]][1:]
        shifts = [k for k in in_row if strides[k] % fw]
        dims = [(nest[k].extent, strides[k], sched[k]) for k in range(inner)
                if k not in shifts]
        if len(shifts) <= 1 and not any(coefs[j][k] for k in shifts for j in order[1:]) \
                and _vector_ok(_compact(dims), fw):
            sh = shifts[0] if shifts else None
            return _Wide(row, sh, 0 if sh is None else coefs[r0][sh] // gs[r0],
                         order if order != orders[0] else ())
    raise MappingError(f"{who}: its reads are not whole or aligned {fw}-word wide words in "
                       f"any layout with rows padded to whole wide words and at most one "
                       f"shift counter; map it on a MEM with fetch width 1 (dual-port)")


def _share(nest: list[Counter], sched: list[int], coefs: list[list[int]], fw: int = 1,
           who: str = "") -> _Share | None:
    """:class:`_Share` of a stream whose coordinate ``j`` is ``b_j + sum_k coefs[j][k] i_k``
    over ``nest``; ``None`` when no counter moves it. ``fw`` > 1 (a PUB): rows padded and a
    shift counter as :func:`_wide`, every share a whole number of wide words."""
    moving = [k for k in range(len(nest)) if any(c[k] for c in coefs)]
    if not moving:
        return None
    t = moving[-1]
    wd = _wide(nest, sched, coefs, t, fw, who)
    gs, es, strides, words = _box(nest, coefs, t, wd.row, wd.order)
    return _Share(t, gs, es, tuple(strides), -(-words // fw) * fw,
                  tuple(c[t] for c in coefs), wd)


def _rows(extents: tuple[int, ...], row: int, skip: int) -> list[tuple[int, int, int]]:
    """Write dimensions ``(extent, address stride, schedule stride)`` of one box streamed
    in address order, one word per cycle: its rows at pitch ``row`` less the ``skip``
    words at the start of every row (module docstring, "Wide fetch")."""
    words = math.prod(extents)
    if not row:
        return [(words, 1, 1)]
    return [(extents[0] - skip, 1, 1), (words // extents[0], row, extents[0])]


def _ordered(extents: tuple[int, ...], order: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(extents[j] for j in order) if order else extents


def _layout(nest: list[Counter], sched: list[int], sh: _Share, bases: tuple[int, ...],
            banks: int, double: bool, start: int, lat: int, leads: list[int | None],
            max_dims: int, slack: int = 0) -> list[OperandMem] | None:
    """The MEMs of a host stream split over the iterations of counter ``t = sh.t``
    (module docstring, "Double buffers" and "Banks"), ``None`` when the programs need more
    than ``max_dims`` dimensions or a lead is out of range:

    - ``banks == 1, double``: one MEM of two halves, iteration ``i_t`` in half ``i_t mod 2``,
      each share reloaded during the iteration before its own;
    - ``banks == 2, double``: two MEMs of one share each (a ping-pong: MEM ``i_t mod 2``);
    - ``not double``: ``banks`` MEMs, MEM ``b`` holding the shares of the iterations ``i_t =
      banks j + b``, loaded once before the compute.

    ``leads[b]``: cycles before an iteration's first read event at which MEM ``b``'s share
    write begins (double buffers; default the share)."""
    e_t, period = nest[sh.t].extent, sched[sh.t]
    if e_t % (2 if double and banks == 1 else banks):
        return None
    wd = sh.wide
    inner = [(nest[k].extent, sh.strides[k], sched[k]) for k in range(sh.t) if k != wd.shift]
    outer = [(nest[k].extent, 0, sched[k]) for k in range(sh.t + 1, len(nest))]
    its = counters([nest[k].extent for k in range(sh.t, len(nest))])[:, 0]  # i_t, in time
    n_s = wd.banks(nest)
    out = []
    for b in range(banks):
        for a in range(n_s):       # the shift banks of bank b (module docstring, "Wide fetch")
            skip = a * wd.step
            om = OperandMem(None, {}, bases, sh.gcd, sh.extents, bank=b * n_s + a,
                            banks=banks * n_s, tbank=b, load_bank=b * n_s if a else None,
                            pitch=wd.row, skip=skip, stored=sh.words, order=wd.order)
            if double and banks == 1:
                swap = [(2, sh.words, period), (e_t // 2, 0, 2 * period)]
                om.copies = 2
            else:
                swap = [(e_t // banks, 0 if double else sh.words, banks * period)]
                om.copies = 1 if double else e_t // banks
            read = _compact(inner + swap + outer)
            rows = _rows(_ordered(sh.extents, wd.order), wd.row, skip)
            if double:             # every visit of its iterations of t, in time order
                lead = sh.host + slack if leads[b] is None else leads[b]
                if not sh.host + slack <= lead <= period:
                    return None
                write = _compact(rows + swap + outer)
                om.double = DoubleBuffer(sh.host, period, lead)
                w_off = start - lat - lead + b * period
                mine = its[its % banks == b]
            else:                  # each of its iterations once, in order
                write = _compact(rows + [(om.copies, sh.words, sh.host)])
                w_off = 0
                mine = np.arange(b, e_t, banks)
            if max(len(read), len(write)) > max_dims:
                return None
            r_off = start - lat + b * period + wd.delay(a, sched)
            om.programs = {"data_in_0": _as_program(write, w_off + skip),
                           "data_out_0": _as_program(read, r_off)}
            # host coordinates in write order: per iteration its share, moved by counter t
            om.load_coords = (om.box_coords()[None, :, :] + mine[:, None, None] *
                              np.array(sh.move, dtype=np.int64)).reshape(-1, len(bases))
            out.append(om)
    return out


def _whole_wide(nest: list[Counter], sched: list[int], st: dnn_step.Stream,
                bases: tuple[int, ...], gs: tuple[int, ...], es: tuple[int, ...],
                strides: list[int], wide: _Wide, words: int,
                first_read: int) -> list[OperandMem]:
    """The MEMs of a host stream held whole on a PUB (module docstring, "Wide fetch"): one,
    or one shift bank per iteration ``a`` of the shift counter, each storing the box's rows
    at pitch ``row`` less their first ``a * step`` words and reading on the iterations
    ``a`` only, from the same host stream."""
    row, shift = wide.row, wide.shift
    n_s = wide.banks(nest)
    out = []
    for a in range(n_s):
        skip = a * wide.step
        dims = [(nest[k].extent, strides[k], sched[k]) for k in range(len(nest)) if k != shift]
        read = _as_program(_compact(dims), first_read + wide.delay(a, sched))
        write = _as_program(_compact(_rows(_ordered(es, wide.order), row, skip)), skip)
        out.append(OperandMem(st, {"data_in_0": write, "data_out_0": read}, bases, gs, es,
                              bank=a, banks=n_s, load_bank=0 if a else None, pitch=row,
                              skip=skip, stored=words, order=wide.order))
    return out


def _choose_layout(nest: list[Counter], sched: list[int], sh: _Share, bases: tuple[int, ...],
                   whole: int, lat: int, mem: MemFacts, double: bool,
                   leads: list[int | None], slack: int = 0) -> list[OperandMem] | None:
    """The MEMs of a host stream (module docstring, "Double buffers" and "Banks"): with
    ``double``, one double buffer when both halves fit a MEM, else a ping-pong pair when one
    share does; the whole box (``None``) when it fits ``whole <= capacity``; else the fewest
    banks whose shares fit; ``None`` also when nothing fits (the caller refuses)."""
    cap, dims = mem.capacity, mem.max_dimensionality
    run = [sh.strides[k] for k in range(sh.t) if sh.strides[k] and k != sh.wide.shift]
    if mem.fetch_width > 1 and run and run[0] > 1:
        double = False   # a PUB's one SRAM port: strided reads leave no room for refills
    big = 1 << 40                      # offsets are placed later: only the layout is chosen
    if double:
        for banks in (1, 2):
            lay = _layout(nest, sched, sh, bases, banks, True, big, lat, leads, dims, slack)
            if lay and lay[0].words <= cap:
                return lay
    if whole <= cap:
        return None
    e_t = nest[sh.t].extent
    for banks in range(2, e_t + 1):
        if e_t % banks == 0 and e_t // banks * sh.words <= cap:
            return _layout(nest, sched, sh, bases, banks, False, big, lat, leads, dims, slack)
    return None


def fetch_slack(fetch_width: int) -> int:
    """Cycles a PUB (``fetch_width`` > 1) needs between the last write of a wide word and
    its first read beyond a dual-port MEM's one: the aggregator's ``fetch_width - 1``
    words plus 4 (:mod:`lake.config`, rule 'dependence'); 0 for a dual-port MEM."""
    return 0 if fetch_width == 1 else fetch_width + 3


def _stall(need: int, distance: int, fw: int) -> int | None:
    """Cycles per step so that a partial sum read ``distance`` steps after its previous
    read sees that read's update ``need`` cycles (read latency + loop) later. On a PUB
    (``fw`` > 1) the update commits with the last sum of its wide word, ``(fw - 1)`` steps
    later, and is fetched 4 cycles after that (:mod:`lake.config`, rule 'dependence'):
    ``stall * (distance - fw + 1) >= need + 4``; ``None`` when a pass is not a whole number
    of wide words (its reads and write-backs would contend for the PUB's one SRAM port at
    irregular cycles: Lake's rule 'conflict')."""
    if fw == 1:
        return -(-need // distance)
    if distance % fw:
        return None
    return -(-(need + 4) // (distance - fw + 1))


def map_layer(pipe: dsl.Pipeline, preset: MemFacts | MemSpec | dict[str, Any] | None = None,
              loop_cycles: int | None = None, min_start: int = 0,
              double_buffer: bool = False, leads: dict[tuple, int] | None = None,
              hold: frozenset = frozenset(), flatten: bool = True) -> list[LayerMemories]:
    """The memories of every reduction of ``pipe`` in order (module docstring) for a MEM with
    ``preset`` facts (``capacity`` words, ``max_dimensionality``, ``read_latency``,
    ``fetch_width``: > 1 a PUB, module docstring "Wide fetch"; default the dual-port 2048 x
    16). Reduction ``j + 1`` starts after reduction ``j``'s last write;
    an operand read from a pure Func of reduction ``j`` (its requantisation) is an
    intermediate buffer written on ``j``'s last pass.

    ``loop_cycles`` (the array, :mod:`mapper.dnn.array`): cycles an accumulation MEM's
    read-add-write loop may take from the read word to its write; the stall is then at
    least ``ceil((read_latency + loop_cycles) / distance)`` (``None``: the plan's own
    estimate, :func:`mapper.dnn.plan.accumulation_of`). ``min_start``: the earliest cycle of
    every reduction's step 0 (the array's load phase through shared IO lanes).

    ``double_buffer``: every host stream that can (module docstring, "Double buffers") is
    held as two halves of one iteration's share instead of the whole box, except the streams
    in ``hold`` (keys ``(reduction, producer, stream index)``); ``leads`` (keys ``(reduction,
    producer, stream index, bank)``): cycles before an iteration's first read event at which
    a double buffer's share write begins (default: the share, the MEM's own load stream).
    ``flatten=False`` (with ``loop_cycles``) keeps the tiles outside the reduction counters
    (no loop perfection: the ablation of the paper's Fig. 13). Raises :class:`MappingError`."""

    mem = MemFacts.of(preset)
    lat, fw = mem.read_latency, mem.fetch_width
    slack = fetch_slack(fw)
    reds = [f for f in pipe.funcs if f.update_expr is not None]
    if not reds:
        raise MappingError(f"tensor program {pipe.name}: no reduction to map")
    doms = tensor.domains(pipe)
    last = reds[-1].name
    accs = {r.func: accumulation_of(r, r.func == last and r.tiles > 1, lat)
            for r in reductions(pipe)}
    # a sum is read again ``distance`` steps after its read: the loop (read word to write,
    # 1 cycle on Lake's models, ``loop_cycles`` on the array) plus the read latency must fit
    need = lat + (1 if loop_cycles is None else loop_cycles)
    funcs = {f.name: f for f in pipe.funcs}
    made: dict[str, tuple[LayerMemories, dsl.Func]] = {}   # pure Func -> its reduction
    out: list[LayerMemories] = []
    prev_end = 0
    for f in reds:
        sk = dnn_step.step_kernel(pipe, f.name)
        if sk.op != "+":
            raise MappingError(f"Func {f.name}: accumulation by {sk.op!r}; the memory "
                               f"simulation sums contributions (+ only)")
        nest = loop_nest(f, sk, doms[f.name])
        dist = _distance(f, sk, nest, False)
        stall = _stall(need, dist, fw)
        if stall is not None:
            stall = max(accs[f.name]["stall"], stall)
        tiles_inner = False
        if loop_cycles is not None and (stall is None or stall > 1) and flatten:
            # loop perfection (the unified-buffer paper, section 4.4): the tiles inside the
            # reduction counters when that shortens the stall and the sums of every tile fit
            inner = loop_nest(f, sk, doms[f.name], tiles_inner=True)
            d_in = _distance(f, sk, inner, True)
            s_in = _stall(need, d_in, fw)
            if s_in is not None and (stall is None or s_in < stall) and \
                    d_in <= mem.capacity:
                nest, dist, stall, tiles_inner = inner, d_in, s_in, True
        if stall is None:
            raise MappingError(f"Func {f.name}: a pass updates {dist} partial sums per lane, "
                               f"not a multiple of the PUB's {fw}-word wide word; use an "
                               f"output tile of a multiple of {fw} pixels or a MEM with "
                               f"fetch width 1 (dual-port)")
        if len(nest) > mem.max_dimensionality:
            raise MappingError(f"Func {f.name}: {len(nest)} loop counters "
                               f"({', '.join(c.name for c in nest)}) but the MEM's address "
                               f"generators have {mem.max_dimensionality} dimensions")
        base = {v.name: lo for v, (lo, _) in zip(f.vars, doms[f.name], strict=True)}
        base.update({rv.name: rv.lo for rv in f.rdom.vars})
        boxes = []
        sched = LayerMemories(f.name, sk, nest, stall, 0, {}).schedule_strides
        for prod, streams in sk.streams.items():
            if prod in funcs and prod not in made:
                raise MappingError(f"Func {f.name}: reads Func {prod}, which is not the "
                                   f"requantisation of an earlier reduction; not mapped")
            for st in streams:
                bs, coefs = [], []
                for a in st.access:
                    b, coef = _coordinate(a, f, st, nest, base, prod)
                    bs.append(b)
                    coefs.append(coef)
                who = f"Func {f.name}: a stream of {prod}"
                wide = _wide(nest, sched, coefs, len(nest), fw, who) if prod not in made \
                    else _Wide()
                gs, es, strides, pitch = _box(nest, coefs, len(nest), wide.row, wide.order)
                layout = None
                key = (f.name, prod, st.index)
                sh = _share(nest, sched, coefs, fw, who) if prod not in made else None
                if sh is not None:
                    n_s = sh.wide.banks(nest)
                    layout = _choose_layout(nest, sched, sh, tuple(bs), pitch, lat, mem,
                                            double_buffer and key not in hold,
                                            [(leads or {}).get((*key, b * n_s))
                                             for b in range(2)], slack)
                if layout is None and pitch > mem.capacity:
                    per = (f" ({sh.words} per iteration of {nest[sh.t].name})"
                           if sh is not None else "")
                    raise MappingError(f"Func {f.name}: a stream of {prod} needs {pitch} "
                                       f"words{per}, more than one MEM ({mem.capacity}) "
                                       f"holds, and no split over its outermost moving "
                                       f"counter fits; use a smaller input or more lanes")
                boxes.append((prod, st, tuple(bs), gs, es, strides, sh, layout, wide, pitch))
        host = [math.prod(e) + lat + slack for p, _, _, _, e, _, _, lay, _, _ in boxes
                if p not in made and lay is None]
        host += [(om.double.lead - om.tbank * om.double.period if om.double
                  else om.host_words) + lat
                 for *_, lay, _, _ in boxes if lay for om in lay]
        start = max(host + [prev_end + lat + 1, min_start])
        extents = [c.extent for c in nest] or [1]
        lm = LayerMemories(f.name, sk, nest, stall, start, {}, doms[f.name], dist,
                           tiles_inner, fw)
        for prod, st, bs, gs, es, strides, sh, layout, wide, words in boxes:
            read = port_program(extents, strides or [0], sched, start - lat)
            om = OperandMem(st, {}, bs, gs, es)
            if layout is not None:
                lay = _layout(nest, sched, sh, bs, layout[-1].tbank + 1,
                              layout[0].double is not None, start, lat,
                              [om.double.lead if om.double else None
                               for om in layout if om.load_bank is None],
                              mem.max_dimensionality, slack)
                for om in lay:
                    om.stream = st
                lm.mems.setdefault(prod, []).extend(lay)
                continue
            if fw > 1 and prod not in made:     # a PUB: rows, shift banks (docstring)
                lm.mems.setdefault(prod, []).extend(_whole_wide(
                    nest, sched, st, bs, gs, es, strides, wide, words, start - lat))
                continue
            if fw > 1:
                dims = _compact(list(zip(extents, strides or [0], sched, strict=True)))
                if not _vector_ok(dims, fw):
                    raise MappingError(f"Func {f.name}: intermediate buffer {prod} is not "
                                       f"read in whole or aligned {fw}-word wide words; map "
                                       f"it on a MEM with fetch width 1 (dual-port)")
                read = _as_program(dims, start - lat)
            if prod in made:
                om.write_coords, write, om.writer_lane = _intermediate_writes(
                    om, made[prod], prod)
            else:
                write = port_program([om.words], [1], [1], 0)
            om.programs = {"data_in_0": write, "data_out_0": read}
            lm.mems.setdefault(prod, []).append(om)
        out.append(lm)
        prev_end = lm.cycles
        for name in [g.name for g in pipe.funcs if g.update_expr is None and any(
                isinstance(n, dsl.Access) and n.target is f for n in dsl._walk(g.pure))]:
            made[name] = (lm, f)
    return out


def _intermediate_writes(om: OperandMem, producer: tuple[LayerMemories, dsl.Func],
                         prod: str) -> tuple[np.ndarray, dict, int]:
    """The write program of an intermediate buffer: the producer reduction's last-pass steps
    that finish a word of ``om``'s box, written a cycle after the step, in time order (one
    output lane; addresses fitted as an affine function of the producer's counters)."""
    lm, f = producer
    rnames = {rv.name for rv in f.rdom.vars}
    last = last_pass(lm, f)
    box = om.box_coords()
    index = {tuple(c): u for u, c in enumerate(box.tolist())}
    found = []
    for o, lane in enumerate(lm.step.out_lanes):
        cycles, coords = step_coords(lm, f, lane, last)
        addrs = np.array([index.get(tuple(c), -1) for c in coords.tolist()])
        if (addrs >= 0).any():
            found.append((o, cycles, coords, addrs))
    if len(found) != 1 or (found[0][3] < 0).any() or len(found[0][3]) != len(box):
        raise MappingError(f"buffer {prod}: its words come from {len(found)} output lanes of "
                           f"{f.name} (or not one each); an intermediate buffer fed by one lane "
                           f"is mapped, not this one")
    o, cycles, coords, addrs = found[0]
    kept = [c for c in lm.counters if c.origin not in rnames]
    pts = counters([c.extent for c in kept] or [1])
    a_str, a_off = fit_affine(pts, addrs, f"buffer {prod}")
    s_str, s_off = fit_affine(pts, cycles + 1, f"buffer {prod}")
    program = {"dimensionality": len(pts[0]), "extents": [c.extent for c in kept] or [1],
               "address": {"strides": a_str, "offset": a_off},
               "schedule": {"strides": s_str, "offset": s_off}}
    return coords, program, o


def map_operands(pipe: dsl.Pipeline, preset: dict[str, Any] | None = None) -> LayerMemories:
    """:func:`map_layer` of a one-reduction program. Raises :class:`MappingError`."""
    reds = [f for f in pipe.funcs if f.update_expr is not None]
    if len(reds) != 1:
        raise MappingError(f"tensor program {pipe.name}: {len(reds)} reductions; use "
                           f"map_layer")
    return map_layer(pipe, preset)[0]


def port_program(extents: list[int], strides: list[int], sched: list[int], offset: int
                 ) -> dict[str, Any]:
    """A Lake port program (dict form): ``extents`` and address ``strides`` per level
    (innermost first, address offset 0), schedule ``strides`` and first cycle ``offset``."""
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
    (:func:`mapper.dnn.step.step_kernel` with ``init``) restarts each sum on the first pass."""
    rnames = {rv.name for rv in f.rdom.vars}
    extents = [c.extent for c in lm.counters] or [1]
    sched = lm.schedule_strides
    pix, red = [0] * len(extents), [0] * len(extents)
    np_, nr = 1, 1
    sums = _sum_counters(f, lm.step, lm.counters, lm.tiles_inner)
    for k, c in enumerate(lm.counters):
        if c.origin in rnames:
            red[k], nr = nr, nr * c.extent
        elif sums[k]:
            pix[k], np_ = np_, np_ * c.extent
    prog = port_program
    if lm.fetch_width > 1:        # a PUB: one moving level per run (module docstring)
        def prog(e, a, t, off):
            return _as_program(_compact(list(zip(e, a, t, strict=True))), off)
    acc = {"data_in_0": prog(extents, pix, sched, lm.start + 1),
           "data_out_0": prog(extents, pix, sched, lm.start - read_latency)}
    flag = {"data_in_0": port_program([nr], [1], [1], 0),
            "data_out_0": prog(extents, red, sched, lm.start - read_latency)}
    return acc, flag, [1] + [0] * (nr - 1)


def simulate(pipe: dsl.Pipeline, inputs: dict[str, Any], preset: str = "dualport_2048x16",
             loop_cycles: int | None = None, min_start: int = 0, double_buffer: bool = False,
             leads: dict[tuple, int] | None = None, hold: frozenset = frozenset(),
             capacity: int | None = None, flatten: bool = True
             ) -> tuple[dict[str, np.ndarray], list[LayerMemories]]:
    """Run ``pipe`` on Lake MEM models (module docstring), one reduction after the other:
    operand streams from their MEMs (host-loaded, or intermediate buffers written on the
    previous reduction's last pass), partial sums in one accumulation MEM per output lane,
    read, updated by the step kernel (with its restart on the first pass) and written back
    every step, cycle by cycle, on the MEM ``preset`` (a Lake preset name: the dual-port
    ``dualport_2048x16`` or the PUB ``pub_512x64``, whose wide-fetch layouts follow the module
    docstring). ``loop_cycles``, ``min_start``, ``double_buffer``, ``leads``, ``hold``,
    ``flatten``: :func:`map_layer`'s (the array's schedule); ``capacity``: the words a MEM's
    layout may use, default the preset's. Returns every Func by name (as
    :func:`mapper.frontend.tensor.evaluate` with ``all_funcs``) and the :class:`LayerMemories` of each
    reduction. Raises :class:`MappingError`, :class:`SimulationError`,
    :class:`~cgra.errors.ConfigError` (a program Lake's rules refuse)."""

    spec = lake_preset(preset)
    lat = spec.storage.read_latency
    facts = MemFacts(capacity or spec.storage.words, spec.max_dims, lat,
                     spec.storage.fetch_width)
    while True:
        lms = map_layer(pipe, facts, loop_cycles, min_start, double_buffer, leads, hold,
                        flatten)
        bad = refill_conflicts(lms, preset)
        if not bad:
            break
        hold = hold | {k[:3] for k in bad}
    doms = tensor.domains(pipe)
    arrays = tensor._check_inputs(pipe, inputs)
    funcs = {f.name: f for f in pipe.funcs}
    for lm in lms:
        f = funcs[lm.func]
        arrays[f.name] = _run_phase(pipe, f, lm, arrays, doms, preset, spec, lat)
        for g in pipe.funcs:         # its requantisation: what the next reduction reads
            if g.update_expr is None and g.name not in arrays and all(
                    n.target.name in arrays for n in dsl._walk(g.pure)
                    if isinstance(n, dsl.Access)):
                arrays[g.name] = tensor._eval_func(g, doms, arrays)
    for g in pipe.funcs:
        if g.name not in arrays:
            arrays[g.name] = tensor._eval_func(g, doms, arrays)
    res = {}
    for g in pipe.funcs:
        a = arrays[g.name].astype(np.uint16)
        res[g.name] = a.view(np.int16) if g.type.signed else a
    return res, lms


def refill_conflicts(lms: list[LayerMemories], preset: str) -> set[tuple]:
    """Keys ``(reduction, producer, stream, bank)`` of the double buffers whose refill
    writes and reads Lake's rules refuse on MEM ``preset`` (a PUB's one SRAM port taken by
    both at irregular cycles, rule 'conflict'; module docstring, "Wide fetch"): the caller
    holds them whole. Empty on a dual-port MEM."""

    if all(lm.fetch_width == 1 for lm in lms):
        return set()
    bad = set()
    for lm in lms:
        for prod, lst in lm.mems.items():
            for om in lst:
                if om.double is None:
                    continue
                try:
                    configure(preset, om.programs)
                except ConfigError:
                    bad.add((lm.func, prod, om.stream.index, om.bank))
    return bad


def _run_phase(pipe: dsl.Pipeline, f: dsl.Func, lm: LayerMemories,
               arrays: dict[str, np.ndarray], doms: dict[str, tensor.Domain], preset: str,
               spec: Any, lat: int) -> np.ndarray:
    """One reduction on Lake models: its final sums over its domain (int64 words)."""

    n = lm.steps
    want = lm.start + lm.stall * np.arange(n)
    ops: dict[str, list[np.ndarray]] = {}
    for prod, lst in lm.mems.items():
        streams: dict[int, list[tuple[int, int]]] = {}     # a stream's banks, merged
        for om in lst:
            config = configure(preset, om.programs)
            stim = make_stimulus(preset, om.programs,
                                 {"data_in_0": om.writes(arrays[prod], doms[prod])})
            streams.setdefault(om.stream.index, []).extend(
                run_model(preset, config, stim)["data_out_0"])
        for idx, got in sorted(streams.items()):
            got.sort()
            cycles = np.array([c for c, _ in got])
            if len(got) != n or not np.array_equal(cycles, want):
                raise SimulationError(f"operand MEM of {prod} stream {idx}: "
                                      f"{len(got)} words at cycles {cycles[:4].tolist()}..., "
                                      f"expected {n} at {want[:4].tolist()}...")
            ops.setdefault(prod, []).append(np.array([v for _, v in got], dtype=np.int64))
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
            raise SimulationError(f"accumulation MEMs of {f.name}: no valid read at step {i} "
                                  f"(cycle {c})")
        vals = {"acc": [out["data_out_0"] for out in outs[:lanes]],
                "first": [outs[lanes]["data_out_0"]],
                **{p: [arr[i] for arr in lst] for p, lst in ops.items()}}
        res = sk.kernel.evaluate(vals)
        for o in range(lanes):
            v = res[f"out{o}"]
            pending[o][c + 1] = v
            last[o][i] = v
    # the final sums: the values written on the last reduction pass
    acc = np.array(tensor._eval_func(f, doms, arrays, update=False))
    final = last_pass(lm, f)
    for o, lane in enumerate(sk.out_lanes):
        _, coords = step_coords(lm, f, lane, final)
        idx = [coords[:, j] - doms[f.name][j][0] for j in range(coords.shape[1])]
        acc[tuple(reversed(idx))] = last[o][final] & 0xFFFF
    return acc & 0xFFFF
