"""DNN layers on the array: the netlist of a tensor program (step-kernel PEs, operand,
accumulation and flag MEMs, requantisation PEs, IO tiles) for the stencil flow's back end, and
its stimulus and sampling on the generated RTL (the array path of tensor programs, steps 4
and 5: docs/mapper.md "DNN layers").

**Memories** are :func:`mapper.dnn.memory.map_layer`'s, with the array's two additions:

- *Load phase through the IO tiles.* Every host-loaded MEM (an operand stream's compressed
  box, a reduction's first-pass flag) is written through one input IO tile; when there are
  more such MEMs than free IO tiles, an IO tile feeds several MEMs one after the other (the
  longest-first greedy assignment to the least-loaded IO tile; a MEM's write program starts
  at its offset in that IO tile's stream, so one broadcast net feeds them all). Every
  reduction starts after the longest IO stream plus the MEM's read latency. Double buffers
  (the default; :mod:`mapper.dnn.memory`, "Double buffers") load only their first share
  then: a lane carries its whole boxes first and its shares last, all lanes end at the
  compute start, and each later share arrives on its lane at the same distance (``lead``)
  before its own iteration, so a lane never carries two words in one cycle (a lane whose
  shares exceed its shortest iteration keeps those MEMs whole). A stream over several MEMs
  (banks, ping-pong pairs) is merged in the step kernel by a mux chain on the banks'
  ``valid_out`` (1-bit nets).
- *The accumulation loop* MEM -> restart mux -> adders -> MEM is a cycle in the netlist: its
  MEM is marked ``accumulator`` with a ``loop_cycles`` budget (cycles from the read word to
  the write of the new sum that the schedule allows: ``stall * distance - read_latency``, a
  partial sum being read again ``distance`` steps of ``stall`` cycles after its update).
  :mod:`mapper.backend.pipeline` cuts the loop at the MEM's write port, reads the MEM later when the
  other operands arrive later, shifts its write by the loop's latency and refuses
  (:class:`~mapper.backend.pipeline.BalanceError`, so the flow places again) a loop over its
  budget; ``loop_cycles`` (:class:`mapper.params.AppParams`) sets the budget a layer is
  scheduled for (the stall ``ceil((read_latency + loop_cycles) / distance)``).

**Nominal schedule** (the pipelining pass's zero): step ``i`` at cycle ``start + stall i``
reads every operand word at that cycle (MEM read programs fire ``read_latency`` earlier) and
writes its sums (accumulation MEMs, intermediate buffers, output IO) at the same cycle; the
pipelining pass shifts each program by the latency the routes and PEs add.

**Outputs**: one IO tile per output lane, valid on the last reduction pass only (its program
is the last-pass steps, an affine function of the pixel and tile counters); the requantisation
(a pure Func reading the reduction at its own point) is one PE cluster per lane between the
step kernel and the IO (or the intermediate MEM a later reduction reads).

Errors: :class:`~cgra.errors.MappingError` (a pure Func that is not a pointwise
requantisation of a reduction, fewer IO tiles than output lanes plus one, and
:func:`mapper.dnn.memory.map_layer`'s); :class:`~cgra.errors.SimulationError` when a sampled
output is missing or differs from a golden model.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from cgra.errors import MappingError, SimulationError
from lake.affine import counters
from mapper.dnn import memory as dnn_memory, step as dnn_step
from mapper.dnn.memory import MemFacts
from mapper.frontend import tensor
from mapper.dnn.plan import read_one, reductions
from mapper.frontend import dsl
from mapper.mapping.compute import map_compute
from lake.collateral import MemInfo
from mapper.mapping.memory import MemSpec, kernel_instance, merge_banks
from mapper.netlist import Netlist
from mapper.backend.place import check_capacity, site_capacity
from pathlib import Path
from mapper import stages as st
from mapper.apps.dnn import LAYERS
from mapper.apps.dnn import block_choices, build_layer
from mapper.apps.dnn import layer_inputs
from mapper.backend.report import report as pnr_report
from mapper.mapping.streams import program_events
from mapper.params import AppParams
from mapper.sim.halide import run_halide_outputs
from mapper.sim.run import io_port
from mapper.sim.run import proved_flow, simulate_on_rtl

if TYPE_CHECKING:
    from mapper.collateral import Collateral
    from mapper.params import AppParams

#: cycles a read-add-write loop may take by default (read word to the write of its sum): a
#: 2 x 2 lane block takes 4-7 on the default array with compute pipelining
DEFAULT_LOOP_CYCLES = 12
#: a host-loaded MEM: ``(reduction, producer, stream index, bank)``; a flag MEM's producer is
#: ``"first"``
MemKey = tuple[str, str, int, int]
#: read slack of a MEM that holds its words for the whole layer (cycles; any delay is fine)
HOLD = 1 << 20


@dataclass(frozen=True)
class Load:
    """One host-loaded MEM on an input IO tile: ``mem`` (instance), ``offset`` (cycle of its
    first word in the IO stream), ``words`` and ``key`` (:data:`MemKey`)."""

    mem: str
    offset: int
    words: int
    key: MemKey


@dataclass
class LayerNetlist:
    """:func:`layer_netlist`'s result: the memory-side ``netlist`` (kernel placeholders for
    the step kernels and requantisations), the reductions' memories ``lms``, the IO loads
    (IO instance -> :class:`Load` list), ``outputs`` (io_out instance -> ``(reduction, output
    Func, lane)``) and the ``loop_cycles`` budget."""

    netlist: Netlist
    lms: list[dnn_memory.LayerMemories]
    loads: dict[str, list[Load]]
    outputs: dict[str, tuple[str, str, int]]
    loop_cycles: int
    multipliers: int = 0
    #: :func:`mapper.dnn.memory.map_layer`'s schedule arguments of these memories
    #: (``loop_cycles``, ``min_start``, ``double_buffer``, ``leads``, ``hold``,
    #: ``flatten``): the same programs run on Lake's models with
    #: ``dnn_memory.simulate(pipe, inputs, **schedule)``
    schedule: dict[str, Any] = field(default_factory=dict)
    #: the channel blocking it was mapped at (set by :func:`map_layer`)
    blocking: Blocking | None = None

    @property
    def load_cycles(self) -> int:
        """Cycles of the longest IO load stream."""
        return max((ld.offset + ld.words for lst in self.loads.values() for ld in lst),
                   default=0)


def _requantisations(pipe: dsl.Pipeline) -> dict[str, dsl.Func]:
    """Reduction name -> the pure Func reading it at its own point (its requantisation).
    Raises :class:`MappingError` for any other pure Func."""
    reds = {f.name for f in pipe.funcs if f.update_expr is not None}
    out: dict[str, dsl.Func] = {}
    for g in pipe.funcs:
        if g.update_expr is not None:
            continue
        reads = [n for n in dsl._walk(g.pure) if isinstance(n, dsl.Access)]
        targets = {n.target.name for n in reads}
        own = all(len(n.idx) == len(g.vars) and all(
            len(a.terms) == 1 and a.terms[0] is v and a.const == 0 and a.scale == 1 and
            a.div == 1 and a.pre == 0 for a, v in zip(n.idx, g.vars, strict=True))
            for n in reads)
        if len(targets) != 1 or not targets <= reds or not own:
            raise MappingError(f"Func {g.name}: the array maps a pure Func only as the "
                               f"pointwise requantisation of one reduction (it reads "
                               f"{sorted(targets)}); compute it in a reduction's update")
        red = next(iter(targets))
        if red in out:
            raise MappingError(f"Func {g.name}: reduction {red} already has the "
                               f"requantisation {out[red].name}; one per reduction is mapped")
        out[red] = g
    return out


def _assign(sizes: list[tuple[Any, int]], lanes: int) -> list[list[tuple[Any, int, int]]]:
    """Longest first, each to the least-loaded of ``lanes`` IO streams: per lane, ``(item,
    offset, words)`` in stream order."""
    out: list[list[tuple[Any, int, int]]] = [[] for _ in range(lanes)]
    used = [0] * lanes
    for k in sorted(range(len(sizes)), key=lambda k: (-sizes[k][1], k)):
        j = min(range(lanes), key=lambda j: (used[j], j))
        out[j].append((sizes[k][0], used[j], sizes[k][1]))
        used[j] += sizes[k][1]
    return [sorted(lst, key=lambda t: t[1]) for lst in out]


def _load_program(offset: int, words: int) -> dict[str, Any]:
    return dnn_memory.port_program([words], [1], [1], offset)


def _shifted(prog: dict[str, Any], cycles: int) -> dict[str, Any]:
    """``prog`` ``cycles`` later (a whole box's write program at its place on its IO
    lane)."""
    return dict(prog, schedule=dict(prog["schedule"],
                                    offset=int(prog["schedule"]["offset"]) + cycles))


def _nominal_write(prog: dict[str, Any]) -> dict[str, Any]:
    """``prog`` a cycle earlier: dnn_memory writes a step's sums a cycle after the step, the
    array's nominal schedule at the step (module docstring)."""
    return dict(prog, schedule=dict(prog["schedule"],
                                    offset=int(prog["schedule"]["offset"]) - 1))


def _mem_name(key: MemKey) -> str:
    """The MEM instance of ``(reduction, producer, stream, bank)`` (``producer`` ``"first"``:
    the reduction's flag MEM; bank 0 carries no suffix)."""
    red, prod, idx, bank = key
    if prod == "first":
        return f"flag_{red}"
    return f"mem_{red}_{prod}_s{idx}" + (f"_b{bank}" if bank else "")


def output_program(lm: dnn_memory.LayerMemories, f: dsl.Func, o: int) -> dict[str, Any]:
    """The nominal output program of output lane ``o`` of reduction ``f``: its last-pass
    steps (module docstring) as an affine schedule of the pixel and tile counters."""
    rnames = {rv.name for rv in f.rdom.vars}
    cycles, _ = dnn_memory.step_coords(lm, f, lm.step.out_lanes[o],
                                       dnn_memory.last_pass(lm, f))
    kept = [c for c in lm.counters if c.origin not in rnames]
    pts = counters([c.extent for c in kept] or [1])
    strides, offset = dnn_memory.fit_affine(pts, cycles, f"output lane {o} of {f.name}")
    ext = [c.extent for c in kept] or [1]
    return dnn_memory.port_program(ext, [0] * len(ext), strides, offset)


def _load_plan(pipe: dsl.Pipeline, facts: MemFacts, loop_cycles: int, io_tiles: int,
               double_buffer: bool, hold: frozenset, flatten: bool
               ) -> tuple[list[list[tuple[MemKey, int, int]]], dict[MemKey, int],
                          dict[MemKey, int]]:
    """The IO load lanes of the host-loaded MEMs (module docstring): per lane ``(key,
    offset, words)`` with the whole boxes first and the double buffers' shares after them,
    every lane ending at the same cycle (the longest lane's length); the double buffers'
    ``leads`` (cycles from the start of their share to the end of the lane) and
    ``periods`` (cycles of one iteration). Raises :class:`MappingError`."""
    funcs = {f.name: f for f in pipe.funcs}
    lms = dnn_memory.map_layer(pipe, facts, loop_cycles, 0, double_buffer, None, hold,
                               flatten)
    n_out = len(lms[-1].step.out_lanes)
    lanes_free = io_tiles - n_out
    sizes: list[tuple[MemKey, int]] = []
    periods: dict[MemKey, int] = {}
    for lm in lms:
        for prod, lst in lm.mems.items():
            for om in lst:
                if om.write_coords is None and om.load_bank is None:
                    key = (lm.func, prod, om.stream.index, om.bank)
                    sizes.append((key, om.burst))
                    if om.double:
                        periods[key] = om.double.period
        rn = math.prod(c.extent for c in lm.counters
                       if c.origin in {rv.name for rv in funcs[lm.func].rdom.vars})
        sizes.append(((lm.func, "first", 0, 0), rn))
    if lanes_free < 1:
        raise MappingError(f"{pipe.name}: {n_out} output lanes and a load stream need "
                           f"{n_out + 1} IO tiles, the design has {io_tiles}; use fewer output "
                           f"lanes (a smaller block) or a design with more IO tiles")
    assign = _assign(sizes, min(lanes_free, len(sizes)))
    longest = max(off + n for lst in assign for _, off, n in lst)
    out, leads = [], {}
    for lst in assign:
        lst = sorted(lst, key=lambda t: (t[0] in periods, t[1]))    # whole boxes first
        tot = sum(n for _, _, n in lst)
        lane, off = [], longest - tot
        for k, _o, n in lst:
            lane.append((k, off, n))
            if k in periods:     # to the first read event: the lane's end + a PUB's slack
                leads[k] = longest - off + dnn_memory.fetch_slack(facts.fetch_width)
            off += n
        out.append(lane)
    return out, leads, periods


def _top_address(ports: dict[str, dict[str, Any]]) -> int:
    """The highest storage address (words) the port programs ``ports`` touch."""
    return max(int(q["address"]["offset"]) + sum(
        (int(e) - 1) * max(int(a), 0) for e, a in zip(q["extents"], q["address"]["strides"],
                                                       strict=True))
        for q in ports.values())


def layer_netlist(pipe: dsl.Pipeline, mem: MemInfo | MemSpec | dict[str, Any], io_tiles: int,
                  loop_cycles: int = DEFAULT_LOOP_CYCLES,
                  double_buffer: bool = True, flatten: bool = True,
                  pond: MemInfo | MemSpec | None = None) -> LayerNetlist:
    """The memory-side netlist of tensor program ``pipe`` (module docstring) for a MEM with
    ``mem`` (a design's :class:`~lake.collateral.MemInfo`, a
    :class:`~mapper.mapping.memory.MemSpec` or a preset dict of
    :data:`mapper.mapping.memory.PRESETS`: preset, capacity, max_dimensionality,
    read_latency, fetch_width, word width) on an array with ``io_tiles`` 16-bit IO tiles.
    ``pond``: the PE tiles' register file (pe.json's ``pond``): an accumulation buffer
    whose partial sums (one word per pixel of a tile) fit it and whose read latency is the
    MEM's goes there (kind ``pond``, tag ``o``: the DNN accumulator of the AHA paper's pond,
    Sec. 4.2) instead of a MEM tile. Raises :class:`MappingError`."""
    spec = MemSpec.of(mem)
    pond_spec = MemSpec.of(pond) if pond is not None else None
    facts = MemFacts.of(spec)
    lat = facts.read_latency
    preset = spec.name
    if loop_cycles < 1:
        raise MappingError(f"{pipe.name}: loop_cycles {loop_cycles} must be >= 1 (the read-"
                           f"add-write loop takes at least a cycle)")
    requant = _requantisations(pipe)
    funcs = {f.name: f for f in pipe.funcs}
    out_func = pipe.output
    last = [f.name for f in pipe.funcs if f.update_expr is not None][-1]
    out_red = out_func.name if out_func.update_expr is not None else next(
        (r for r, g in requant.items() if g is out_func), None)
    if out_red != last:
        raise MappingError(f"{pipe.name}: the output {out_func.name} is neither the last "
                           f"reduction nor its requantisation; not mapped on the array")
    # first pass: sizes of the host loads, to schedule the IO streams
    hold: set[tuple[str, str, int]] = set()
    while True:
        assign, leads, periods = _load_plan(pipe, facts, loop_cycles, io_tiles, double_buffer,
                                            frozenset(hold), flatten)
        longest = max((off + n for lst in assign for _, off, n in lst), default=0)
        late = set()                 # a share longer before its iteration than the lane's
        for lst in assign:           # shortest iteration: its writes would overlap another's
            shortest = min((periods[k] for k, _o, _n in lst if k in periods), default=0)
            late |= {k for k, _o, _n in lst if k in leads and leads[k] > shortest}
        if not late:
            first_step = longest + lat + dnn_memory.fetch_slack(facts.fetch_width)
            lms = dnn_memory.map_layer(pipe, facts, loop_cycles, first_step, double_buffer,
                                       leads, frozenset(hold), flatten)
            # a PUB's refills that contend with the reads for its SRAM port: held whole
            late = dnn_memory.refill_conflicts(lms, preset)
            if not late:
                break
        hold |= {k[:3] for k in late}   # a lane's shares exceed its shortest iteration

    nl = Netlist(pipe.name)
    where: dict[MemKey, tuple[int, int]] = {}    # key -> (IO lane, offset)
    loads: dict[str, list[Load]] = {}
    for j, lst in enumerate(assign):
        name = f"io_in_load{j}"       # its program follows once its MEMs are known
        nl.add_instance(name, "io_in", "I", {"loads": [[list(k), off, n] for k, off, n in lst]})
        for k, off, _n in lst:
            where[k] = (j, off)
    sink_of: dict[int, list[tuple[str, str]]] = {j: [] for j in range(len(assign))}
    nets: dict[tuple[str, str], list[tuple[str, str]]] = {}          # source -> sinks
    bits: dict[tuple[str, str], list[tuple[str, str]]] = {}          # 1-bit nets (valid)
    outputs: dict[str, tuple[str, str, int]] = {}
    multipliers = 0
    prev_writers: dict[tuple[str, int], list[tuple[str, str]]] = {}   # (Func, lane) -> sinks
    for lm in lms:
        f = funcs[lm.func]
        sk = dnn_step.step_kernel(pipe, f.name, init=True)
        multipliers += sum(1 for n in sk.kernel.live_nodes() if n.op == "coreir.mul")
        stage = f"hstep_{f.name}"
        kinst = kernel_instance(stage)
        kernel, banked = sk.kernel, []
        for prod, lst in lm.mems.items():         # a stream over several MEMs: a mux chain
            for om in lst:
                if om.banks > 1 and om.bank == 0:
                    kernel, din, vin = merge_banks(kernel, prod, om.stream.index, om.banks)
                    banked.append([din, vin])
        kcfg: dict[str, Any] = {"stage": stage, "signed": False, "dag": kernel.to_dict()}
        if banked:
            kcfg["banked"] = banked
        nl.add_instance(kinst, "kernel", None, kcfg)
        for prod, lst in lm.mems.items():
            for om in lst:
                key = (f.name, prod, om.stream.index, om.bank)
                name = _mem_name(key)
                ports = dict(om.programs)
                # a shift bank samples its owner's host stream (dnn_memory, "Wide fetch")
                owner = key if om.load_bank is None else (*key[:3], om.load_bank)
                cfg: dict[str, Any] = {"preset": preset, "read_slack": HOLD,
                                       "role": "operand", "reduction": f.name,
                                       "stream": [prod, om.stream.index]}
                if om.banks > 1:
                    cfg["bank"] = [om.bank, om.banks]
                if om.double is not None:      # written by its IO lane every iteration
                    j, _off = where[owner]
                    cfg["read_slack"] = om.double.read_slack(lm.stall)
                    cfg["double_buffer"] = {"share": om.double.share,
                                            "period": om.double.period,
                                            "lead": om.double.lead}
                    sink_of[j].append((name, "data_in_0"))
                elif om.write_coords is None:
                    j, off = where[owner]
                    ports["data_in_0"] = _shifted(ports["data_in_0"], off)
                    sink_of[j].append((name, "data_in_0"))
                else:                      # an intermediate buffer
                    ports["data_in_0"] = _nominal_write(ports["data_in_0"])
                    cfg["role"] = "intermediate"
                    # written by lane writer_lane of the requantisation ``prod``
                    prev_writers.setdefault((prod, int(om.writer_lane)), []).append(
                        (name, "data_in_0"))
                cfg["ports"] = dict(sorted(ports.items()))
                nl.add_instance(name, "mem", "m", cfg)
                if om.banks > 1:
                    i = om.stream.index
                    nets[(name, "data_out_0")] = [(kinst, f"{prod}_bank{i}.{om.bank}")]
                    if om.bank:                # the mux chain never reads bank 0's valid
                        bits[(name, "valid_out_0")] = [(kinst, f"{prod}_valid{i}.{om.bank}")]
                else:
                    nets[(name, "data_out_0")] = [(kinst, f"{prod}.{om.stream.index}")]
        acc, flag, _words = dnn_memory.accumulator_programs(lm, f, lat)
        budget = lm.stall * lm.distance - lat
        # a partial-sum buffer of a few words is a short-reuse buffer: the PE tile's pond
        in_pond = pond_spec is not None and pond_spec.read_latency == lat \
            and pond_spec.fetch_width == 1 and _top_address(acc) < pond_spec.capacity
        for o in range(len(sk.out_lanes)):
            name = f"acc_{f.name}_o{o}"
            nl.add_instance(name, *(("pond", "o") if in_pond else ("mem", "m")), {
                "preset": pond_spec.name if in_pond else preset, "ports": {"data_in_0": _nominal_write(acc["data_in_0"]),
                                           "data_out_0": acc["data_out_0"]},
                "read_slack": HOLD, "role": "accumulation", "reduction": f.name,
                "accumulator": {"loop_cycles": budget, "stall": lm.stall,
                                "distance": lm.distance, "read_latency": lat}})
            nets[(name, "data_out_0")] = [(kinst, f"acc.{o}")]
        fname = _mem_name((f.name, "first", 0, 0))
        j, off = where[(lm.func, "first", 0, 0)]
        nl.add_instance(fname, "mem", "m", {
            "preset": preset, "read_slack": HOLD, "role": "flag", "reduction": f.name,
            "ports": {"data_in_0": _load_program(off, len(_words)),
                      "data_out_0": flag["data_out_0"]}})
        sink_of[j].append((fname, "data_in_0"))
        nets[(fname, "data_out_0")] = [(kinst, "first.0")]
        g = requant.get(f.name)

        def output_io(func: str, o: int, lm=lm, f=f) -> tuple[str, str]:
            """The IO output of lane ``o`` of the output Func ``func`` (its sink)."""
            io = f"io_out_{func}_o{o}"
            nl.add_instance(io, "io_out", "I", {"stage": func, "lane": o,
                                                "program": output_program(lm, f, o)})
            outputs[io] = (f.name, func, o)
            return (io, "in")

        for o in range(len(sk.out_lanes)):
            sinks = [(f"acc_{f.name}_o{o}", "data_in_0")]
            if g is not None:
                qstage = f"{g.name}_o{o}"
                qinst = kernel_instance(qstage)
                dag = dsl.func_kernel(g, read_one)
                nl.add_instance(qinst, "kernel", None, {"stage": qstage, "signed": False,
                                                       "dag": dag.to_dict()})
                sinks.append((qinst, f"{f.name}.0"))
                qsinks = list(prev_writers.get((g.name, o), []))
                if g is out_func:
                    qsinks.append(output_io(g.name, o))
                if qsinks:
                    nets[(qinst, "out")] = qsinks
            elif f is out_func:
                sinks.append(output_io(f.name, o))
            nets[(kinst, f"out{o}")] = sinks
    # an intermediate buffer exists once its reader's reduction is mapped: its writer (a lane
    # of an earlier requantisation) is wired now
    for (gname, o), sinks in prev_writers.items():
        ss = nets.setdefault((kernel_instance(f"{gname}_o{o}"), "out"), [])
        ss.extend(s for s in sinks if s not in ss)
    for j in range(len(assign)):
        nets[(f"io_in_load{j}", "out")] = sink_of[j]
        for k, off, n in assign[j]:
            loads.setdefault(f"io_in_load{j}", []).append(Load(_mem_name(k), off, n, tuple(k)))
        # the lane's stream: the load phase, then the double buffers' shares every iteration
        span = max(int(program_events(nl.instances[_mem_name(k)].config["ports"][
            "data_in_0"])[0].max()) + 1 for k, _o, _n in assign[j])
        nl.instances[f"io_in_load{j}"].config["program"] = _load_program(0, span)
    word = spec.word_width
    for src, ss in nets.items():
        nl.add_net(src, ss, word, f"{src[0]}_{src[1]}".replace(".", "_"))
    for src, ss in bits.items():
        nl.add_net(src, ss, 1, f"{src[0]}_{src[1]}".replace(".", "_"))
    nl.validate()
    schedule = {"loop_cycles": loop_cycles, "min_start": first_step,
                "double_buffer": double_buffer, "leads": leads, "hold": frozenset(hold),
                "flatten": flatten}
    return LayerNetlist(nl, lms, loads, outputs, loop_cycles, multipliers, schedule)


# ---------------------------------------------------------------------------- stimulus
@dataclass
class LayerStreams:
    """Top-port stimulus and sampling of a layer run: ``inputs`` port -> words per cycle,
    ``outputs``: [(io_out instance, port, cycles ``[n]``, coordinates ``[n, dims]``)],
    ``cycles`` (last sampled cycle + 1), ``first_output``, ``compute_start`` (cycle of the
    first step, nominal), ``output`` (the output Func) and its ``domain``."""

    inputs: dict[str, np.ndarray]
    outputs: list[tuple[str, str, np.ndarray, np.ndarray]]
    cycles: int
    first_output: int
    compute_start: int
    output: str
    domain: tensor.Domain

    def assemble(self, samples: dict[str, np.ndarray], name: str) -> np.ndarray:
        """The output tensor (int64, coordinates reversed, over :attr:`domain`) from
        ``samples`` (top port -> words per cycle). Raises :class:`SimulationError` when a
        value is never sampled."""
        shape = tuple(hi - lo for lo, hi in reversed(self.domain))
        res = np.zeros(shape, np.int64)
        seen = np.zeros(shape, bool)
        for _inst, port, cyc, coords in self.outputs:
            idx = tuple(coords[:, j] - self.domain[j][0]
                        for j in reversed(range(coords.shape[1])))
            res[idx] = samples[port][cyc]
            seen[idx] = True
        if not seen.all():
            raise SimulationError(f"{name}: {int((~seen).sum())} values of output "
                                  f"{self.output} were never sampled (the output programs do "
                                  f"not cover its domain)")
        return res


def layer_streams(ln: LayerNetlist, pipe: dsl.Pipeline, packed, sites: dict[str, tuple],
                  inputs: dict[str, np.ndarray]) -> LayerStreams:
    """Stimulus and sampling for a placed and pipelined layer (``packed``: the pipelined
    design, whose output programs carry the pipelining latency; ``sites``: instance -> IO
    tile): every IO load stream in its MEMs' order, each output lane sampled on its program's
    cycles at the coordinates of its last-pass steps. Raises :class:`SimulationError` for a
    missing input tensor or an output program that does not match its steps."""

    arrays = tensor._check_inputs(pipe, inputs)
    doms = tensor.domains(pipe)
    funcs = {f.name: f for f in pipe.funcs}
    by_key = {}
    for lm in ln.lms:
        for prod, lst in lm.mems.items():
            for om in lst:
                by_key[(lm.func, prod, om.stream.index, om.bank)] = om
    flags = {lm.func: dnn_memory.accumulator_programs(lm, funcs[lm.func])[2] for lm in ln.lms}
    ins: dict[str, np.ndarray] = {}
    for inst, lst in ln.loads.items():
        events = []
        for ld in lst:
            red, prod = ld.key[:2]
            words = flags[red] if prod == "first" else \
                by_key[ld.key].writes(arrays[prod], doms[prod])
            # the MEM's nominal write cycles (a double buffer's: every iteration's share)
            cyc, _ = program_events(ln.netlist.instances[ld.mem].config["ports"]["data_in_0"])
            if len(cyc) != len(words):
                raise SimulationError(f"MEM {ld.mem}: its write program has {len(cyc)} "
                                      f"events for {len(words)} host words")
            events.append((cyc, np.asarray(words, np.int64)))
        vals = np.zeros(max(int(c.max()) for c, _ in events) + 1, np.int64)
        for cyc, words in events:
            vals[cyc] = words
        ins[io_port("I", "in", sites[inst])] = vals
    outs = []
    lms = {lm.func: lm for lm in ln.lms}
    for inst, (red, _out, o) in sorted(ln.outputs.items()):
        lm, f = lms[red], funcs[red]
        cyc, _ = program_events(packed.instances[inst].config["program"])
        _, coords = dnn_memory.step_coords(lm, f, lm.step.out_lanes[o],
                                           dnn_memory.last_pass(lm, f))
        if len(cyc) != len(coords):
            raise SimulationError(f"output {inst}: its program has {len(cyc)} events for "
                                  f"{len(coords)} sums")
        outs.append((inst, io_port("I", "out", sites[inst]), cyc, coords))
    cycles = max(int(o[2].max()) for o in outs) + 1
    for p, v in ins.items():
        if len(v) < cycles:
            ins[p] = np.concatenate([v, np.zeros(cycles - len(v), np.int64)])
    return LayerStreams(ins, outs, cycles, min(int(o[2].min()) for o in outs),
                        ln.lms[0].start, pipe.output.name, doms[pipe.output.name])


def first_difference(got: np.ndarray, want: np.ndarray) -> tuple[tuple[int, ...], int, int]:
    """``(coordinates (x, y, ...), expected, got)`` of the first differing value in memory
    order of two equal-shape tensors (coordinates reversed in the arrays)."""
    i = tuple(int(v) for v in np.argwhere(got.astype(np.int64) != want.astype(np.int64))[0])
    return tuple(reversed(i)), int(want[i]), int(got[i])


# ---------------------------------------------------------------------------- the map stage
def is_layer(app: str) -> bool:
    """A DNN layer (:data:`mapper.apps.dnn.LAYERS`), compiled by this module."""
    return app in LAYERS


def layer_pipeline(p: AppParams):
    """The tensor program of DNN layer ``p.app`` at ``p``'s sizes."""
    return build_layer(p.app, p.width, p.channels, p.block)


def layer_mapping(p: AppParams, coll: Collateral):
    """``(tensor program, LayerNetlist)`` of DNN layer ``p.app`` on ``coll``
    (:func:`layer_netlist` with the design's MEM and IO tiles)."""
    pipe = layer_pipeline(p)
    io_tiles = sum(site_capacity(coll).get(("I",), {}).values())
    return pipe, layer_netlist(pipe, coll.require("mem"), io_tiles, p.loop_cycles,
                               p.double_buffer, p.flatten,
                               coll.pond.mem if coll.pond is not None and p.pond else None)


@dataclass(frozen=True)
class Blocking:
    """The channel blocking a layer is mapped at: ``block`` (channels in parallel, in and
    out; gemm: the output tile side), the last reduction's ``in_lanes`` x ``out_lanes``
    (:func:`mapper.dnn.plan.reductions`: GEMM's 4 x 4 tile is 16 output lanes, 1 input
    lane), ``chosen`` (no block was given: the largest of
    :func:`mapper.apps.dnn.block_choices` that fits the design was taken) and ``refused``:
    the larger blocks tried first, each with the reason it does not fit."""

    block: int
    in_lanes: int
    out_lanes: int
    chosen: bool
    refused: tuple[tuple[int, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``app.json`` ``blocking``, ``run_report.json`` ``layer.blocking``;
        ``summary``: :meth:`describe`)."""
        return {"block": self.block, "in_lanes": self.in_lanes, "out_lanes": self.out_lanes,
                "chosen": self.chosen, "refused": {str(b): why for b, why in self.refused},
                "summary": self.describe()}

    def describe(self) -> str:
        """One line: ``block 4 (16 output x 1 input lanes), chosen: block 8 refused (gemm:
        64 output lanes and a load stream need 65 IO tiles, the design has 32)``."""
        how = "chosen" if self.chosen else "given"
        why = "; ".join(f"block {b} refused ({r.split('; ')[0]})" for b, r in self.refused)
        return (f"block {self.block} ({self.out_lanes} output x {self.in_lanes} input lanes), "
                f"{how}{': ' + why if why else ''}")


def _map_at(p: AppParams, coll: Collateral, times: dict[str, float]):
    """:func:`layer_mapping` and compute mapping of ``p`` (its block given), refused with
    :class:`MappingError` when the netlist needs more PE or MEM tiles than ``coll`` has
    (IO tiles: :func:`layer_netlist`)."""
    t = time.perf_counter()
    pipe, ln = layer_mapping(p, coll)
    times["memory mapping"] = time.perf_counter() - t
    t = time.perf_counter()
    compute = map_compute(ln.netlist, coll.require("rules"), coll.require("pe"), mem=coll.mem,
                          latency=coll.pe_latency)
    times["compute mapping"] = time.perf_counter() - t
    check_capacity(compute.netlist, coll)
    last = reductions(pipe)[-1]
    return compute, ln, last


def map_layer(p: AppParams, coll: Collateral, times: dict[str, float]):
    """A DNN layer's netlist (:func:`layer_mapping`) with its kernels compute-mapped:
    ``(ComputeMapping, LayerNetlist)``, the blocking in ``LayerNetlist.blocking``.

    Without a block (``p.block is None``) the blocks of
    :func:`mapper.apps.dnn.block_choices` are tried largest first (the paper's 8 first) and
    the first whose netlist fits the design's IO tiles (output lanes + 1 load stream), PE
    and MEM tiles is kept: the 32x16 default array runs the convolutions at 8 x 8 and GEMM
    at a 4 x 4 tile. Raises :class:`MappingError`: a given block that does not fit (naming
    the largest block that does), or no block that fits."""
    if p.block is not None:
        layer_pipeline(p)                 # a block that does not divide: its own error
        try:
            compute, ln, last = _map_at(p, coll, times)
        except MappingError as exc:
            fits = next((b for b in block_choices(p.app, p.width, p.channels)
                         if b != p.block and _fits(replace(p, block=b), coll)), None)
            if fits is None:
                raise
            raise MappingError(f"{exc}; block {fits} fits design {coll.name} (--block "
                               f"{fits}; without --block the largest block that fits is "
                               f"chosen)") from exc
        ln.blocking = Blocking(p.block, last.lanes_in, last.lanes_out, False)
        return compute, ln
    refused: list[tuple[int, str]] = []
    for b in block_choices(p.app, p.width, p.channels):
        try:
            compute, ln, last = _map_at(replace(p, block=b), coll, times)
        except MappingError as exc:
            refused.append((b, str(exc)))
            continue
        ln.blocking = Blocking(b, last.lanes_in, last.lanes_out, True, tuple(refused))
        return compute, ln
    raise MappingError(f"{p.app}: no block fits design {coll.name} "
                       f"({coll.size[0]}x{coll.size[1]}): "
                       + "; ".join(f"block {b}: {why.split('; ')[0]}" for b, why in refused)
                       + "; use a larger design (e.g. configs/default.toml) or smaller "
                         "layer sizes")


def _fits(p: AppParams, coll: Collateral) -> bool:
    """``p`` (its block given) maps within the design's tiles (:func:`_map_at`)."""
    try:
        _map_at(p, coll, {})
    except MappingError:
        return False
    return True


__all__ = ["DEFAULT_LOOP_CYCLES", "Blocking", "is_layer", "layer_mapping", "layer_pipeline", "map_layer", "LayerNetlist", "LayerStreams", "Load", "first_difference",
           "layer_netlist", "layer_report", "loop_latencies", "layer_streams", "output_program",
           "LayerRun", "run_layer_sim"]


# ---------------------------------------------------------------------------- sim stage
@dataclass
class LayerRun:
    """Everything one layer run produced (:func:`run_layer_sim`): the ``output`` tensor as
    simulated (coordinates reversed), both goldens, the ``inputs``, the flow, the streams,
    ``report`` (``run_report.json``) and the run directory."""

    app: str
    inputs: dict[str, np.ndarray]
    output: np.ndarray
    golden_numpy: np.ndarray
    golden_halide: np.ndarray
    flow: Any
    streams: LayerStreams
    report: dict[str, Any]
    out_dir: Any
    coll: Any


def loop_latencies(packed) -> dict[str, list[int]]:
    """Accumulation MEM -> ``[loop cycles, budget]`` of a pipelined design: the cycles from
    its read word to the write of the new sum (write offset - read offset - read latency of
    its shifted programs; 0 in the nominal schedule) and its ``loop_cycles`` budget."""
    out = {}
    for name, inst in packed.instances.items():
        acc = inst.config.get("accumulator")
        if acc is None:
            continue
        ports = inst.config["ports"]
        w = int(ports["data_in_0"]["schedule"]["offset"])
        r = int(ports["data_out_0"]["schedule"]["offset"])
        out[name] = [w - r - int(acc.get("read_latency", 1)), int(acc["loop_cycles"])]
    return out


def layer_report(ln: LayerNetlist, pipe: dsl.Pipeline, streams: LayerStreams,
                 packed=None) -> dict[str, Any]:
    """The layer figures of a run: MACs, multipliers, the load phase, cycles (the last output
    + 1), ideal cycles (MACs / multipliers), occupancy (MACs / (multipliers x cycles): busy
    multiplier-cycles over all), and the same over the compute phase alone; MEMs by role and
    how many operand MEMs are double buffers and the words all operand MEMs store;
    with the pipelined ``packed`` design, the longest accumulation loop and its budget
    (:func:`loop_latencies`)."""
    macs = sum(tensor.macs(pipe).values())
    mul = max(ln.multipliers, 1)
    compute = streams.cycles - streams.compute_start
    loops = loop_latencies(packed) if packed is not None else {}
    roles: dict[str, int] = {}
    ponds: dict[str, int] = {}
    double = 0
    for inst in ln.netlist.instances.values():
        if inst.kind == "mem":
            roles[inst.config["role"]] = roles.get(inst.config["role"], 0) + 1
            double += "double_buffer" in inst.config
        if inst.kind == "pond":
            ponds[inst.config["role"]] = ponds.get(inst.config["role"], 0) + 1
    return {"macs": macs, "multipliers": ln.multipliers, "load_cycles": ln.load_cycles,
            "double_buffers": double,
            "operand_words": sum(om.words for lm in ln.lms for lst in lm.mems.values()
                                 for om in lst),
            "compute_start": streams.compute_start, "cycles": streams.cycles,
            "compute_cycles": compute, "ideal_cycles": -(-macs // mul),
            "occupancy": round(macs / (mul * streams.cycles), 4),
            "compute_occupancy": round(macs / (mul * compute), 4),
            "stall": [lm.stall for lm in ln.lms], "loop_cycles": ln.loop_cycles,
            "mems": roles, **({"ponds": ponds} if ponds else {}),
            **({"loop_latency": max(v[0] for v in loops.values()),
                "loop_budget": min(v[1] for v in loops.values())} if loops else {})}


def run_layer_sim(run_dir, coll, app: dict[str, Any], opts, say, seconds=None) -> LayerRun:
    """The sim stage of a DNN layer: prove the bitstream, run the generated RTL in Verilator
    on the layer's input tensors (:class:`mapper.params.SimOptions`), compare its output with
    :func:`mapper.frontend.tensor.evaluate` and real Halide bit for bit, write ``run_report.json``
    (:func:`layer_report` under ``layer``). Raises :class:`SimulationError` naming the first
    differing output value and the golden."""


    run_dir = Path(run_dir)
    secs = dict(seconds or {})
    params = AppParams(**app["params"])
    blocking = app.get("blocking")
    if blocking is not None:               # the block the map stage chose
        params = replace(params, block=int(blocking["block"]))
    pipe, ln = layer_mapping(params, coll)
    flow, proof = proved_flow(run_dir, coll, say, secs)
    ins = layer_inputs(pipe, opts.tensor_seed, None if opts.image == "random" else opts.image)
    streams = layer_streams(ln, pipe, flow.pipelined.packed, flow.placement.sites, ins)
    harness, sim = simulate_on_rtl(run_dir, coll, flow, streams.inputs,
                                   [o[1] for o in streams.outputs], streams.cycles, opts, say,
                                   secs, app["name"])
    got = streams.assemble(sim.outputs, app["name"])
    say("golden models")
    t = time.perf_counter()
    name = pipe.output.name
    g_np = tensor.evaluate(pipe, ins)[name]
    secs["golden_numpy"] = time.perf_counter() - t
    t = time.perf_counter()
    g_hl = run_halide_outputs(pipe, ins)[name]
    secs["golden_halide"] = time.perf_counter() - t
    out = got.astype(np.uint16)
    if g_np.dtype == np.int16:
        out = out.view(np.int16)
    for gname, g in (("numpy", g_np), ("Halide", g_hl)):
        if g.shape != out.shape:
            raise SimulationError(f"{app['name']}: simulated output has shape "
                                  f"{out.shape[::-1]}, the {gname} golden {g.shape[::-1]}")
        if not np.array_equal(out, g):
            at, want, have = first_difference(out, g)
            n = int(np.count_nonzero(out.astype(np.int64) != g.astype(np.int64)))
            raise SimulationError(f"{app['name']}: RTL output differs from the {gname} golden "
                                  f"at {n} of {out.size} values; first at {name}{list(at)}: "
                                  f"expected {want}, got {have} (files in {run_dir})")
    pr = pnr_report(flow, coll)
    rep = {"schema": st.RUN_SCHEMA, "app": app["name"], "kind": "dnn", "design": str(coll.root),
           "seed": flow.placement.seed, "image": opts.image, "tensor_seed": opts.tensor_seed,
           "shapes": {i.name: list(i.shape) for i in pipe.inputs},
           "output_shape": list(reversed(out.shape)),
           "match": {"numpy": True, "halide": True}, "resources": pr["resources"],
           "wirelength_total": pr["wirelength_total"], "registers": pr["registers"],
           "timing": {k: v for k, v in pr["timing"].items() if k != "critical_path"},
           "layer": {**layer_report(ln, pipe, streams, flow.pipelined.packed),
                     **({"blocking": blocking} if blocking is not None else {})},
           "latency": {"first_output_cycle": streams.first_output,
                       "per_output": pr["extra_output_latency_cycles"]},
           "verilator": {"key": harness.key, "cached": harness.cached,
                         "build_seconds": round(harness.build_seconds, 3),
                         "cycles": streams.cycles},
           "bitstream_proof": proof.to_dict(),
           "stage_seconds": {k: round(v, 4) for k, v in secs.items()}}
    np.save(run_dir / f"{app['name']}_output.npy", out)
    st.save_run_report(run_dir, coll, rep)
    return LayerRun(app["name"], ins, out, g_np, g_hl, flow, streams, rep, run_dir, coll)
