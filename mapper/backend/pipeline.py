"""Pipelining after place and route: branch-delay matching that does not run out, compute
pipelining, post-PnR register insertion to a target clock, latency absorption into memory
schedules, and static timing analysis.

Source: Cascade (Zhang et al., "Cascade: An Application Pipelining Toolkit for
Coarse-Grained Reconfigurable Arrays", ACM TRETS 2023; the reference flow is StanfordAHA
archipelago): registers are inserted at switch-box pipeline registers on a net's own route,
branch-delay matching keeps every PE's operands aligned, and balancing latency moves into
memory schedules instead of registers where a memory can hold it.

**Cycle model.** The front end (:mod:`mapper.mapping.memory`) schedules every stream assuming zero
interconnect and compute latency; netlist registers and memory taps are *intended* delays
(the stencil). This pass computes, for every signal, its *extra* latency ``sigma`` (cycles)
over that nominal schedule:

* an IO input: 0; a netlist register (on a ``REG`` site or absorbed into a PE input): its
  input's sigma;
* a route: +1 per enabled pipeline register strictly inside the path (a ``REG`` node on the
  path; the ``REG`` that is a netlist register's own site is not extra);
* a PE input: + ``k`` when this pass delays it by ``k`` cycles in the PE (``pe_input_delay``;
  ``k`` = 1 with an input register, up to the longest ``DELAY<k>`` mode of the input);
* a PE: all inputs must have the same sigma ``T`` (branch-delay matching); its output is
  ``T + L`` with ``L`` the PE latency in cycles (``PipelineParams.latency['p']`` or the
  instance's ``config['latency']``);
* a MEM output port: sigma of the input port of its delay-line segment + ``e`` cycles of
  absorbed delay (+ ``D`` for a balancing delay line of :mod:`mapper.backend.absorb`, config
  ``balance_delay``: its latency is not a stencil tap); the MEM's port programs are shifted
  accordingly (write schedule offset ``+= sigma_in``, read offset ``+= sigma_in + e``), so
  the stored stream keeps its distance;
* an IO output: its output program (valid window) starts ``sigma`` cycles later.

**Branch-delay matching** (:meth:`_Design.balance`). Each PE's target ``T`` is the largest
sigma over its inputs; every other input has a deficit ``T - sigma``, filled in this order:

1. a MEM read port whose output feeds only PE inputs with a deficit is read later (``e`` =
   the smallest such deficit, limited by the words its delay line can still hold);
2. the PE's own input delay: one cycle (an input register, or a ``DELAY`` mode), or up to
   the longest delay mode of the input (``DELAY<k>`` tags of ``pe.json``, e.g. four cycles
   with ``peak/examples/cgra_pe_d2.py``) minus the cycles its absorbed netlist registers
   already use;
3. bypassed register sites on the net's routed tree (root first: a register shared by
   several sinks that all need a cycle serves them all); on a hybrid array, a sink of a net
   on the dynamic layer takes initial tokens of its ejection buffer instead (a token is a
   register of the static route it replaces, :mod:`canal.dynamic`; this runs right after
   step 1, :meth:`_Design._dyn_tokens`);
4. latency-constrained re-routing: every sink's register count is pinned to its current
   value and the short branches ask for more; the negotiated router
   (:func:`mapper.backend.route.route_design` with ``regs``) finds routes through free registers
   where latency is needed, moving other nets as congestion requires (register-demand
   routing: a branch that needs more registers than its shortest route has meanders through
   more switch boxes on a simple path, holding exactly the count asked for; a count the
   router cannot meet is a :class:`~cgra.errors.RoutingError`, never a shorter route);
5. on a hybrid array, when no static route holds the registers, the short branches' nets
   move to the dynamic layer (:meth:`_Design._overflow`) and take tokens;
6. when that fails too, :class:`BalanceError` names the net, the sink and the cycles missing;
   the driver (:mod:`mapper.flow`) then places again with another seed.

**Static timing analysis** (:func:`timing_analysis`). Start points: enabled ``REG`` nodes
(clock-to-Q is in the ``REG -> RMUX`` class), outputs of MEM, IO and registered PEs (arrival =
the core delay of the tile class, for a PE the delay of its op). End points: ``REG`` nodes and
core inputs of MEM, IO and registered PEs. A combinational PE adds its core delay from each
non-registered input to its output. Edge delays are the classes of the design's timing model
(``timing.json``, :mod:`canal.timing`). Clock skew is a potential over the tiles (the table's
``enter_from_north`` per row southward, ``pe_to_mem`` into a MEM column); a path's delay is its
raw delay minus the skew difference between its end and start tile. A net on the dynamic
layer of a hybrid array ends at the router's injection and its sinks start at their ejection
buffers (registers); when the model measured the routers (a measured ``timing.json``'s
``router`` figure, :mod:`garnet.sta.measure`), each such net adds the router's own
register-to-register stage (node ``RTR:<net>``). The critical path is the longest
start-to-end path (ps).

**Passes** of :func:`pipeline`, each reported (:class:`PassReport`: Fmax, registers, latency):
``balance`` (matching only); with ``register_pe_inputs``, ``compute pipelining`` (every PE data
input registered, then balanced); with ``target_period_ps`` (or ``auto_target``: the target is
:func:`period_floor`, the slowest register-to-register stage pipelining cannot split, e.g. a
MEM core), ``register insertion``: repeat
{STA; on the critical path pick the bypassed register site of the net's own route whose
arrival is closest to half the path delay; enable it; re-balance} until the target is met, no
candidate is left or ``max_pipeline_steps``; with ``broadcast_fanout``, high-fanout nets get a
register at every branch of their route tree that serves at most ``broadcast_leaves`` sinks
before balancing; with compute pipelining and ``alap`` (default), ``ALAP``: in reverse
topological order, a PE whose every output path carries a balancing route register and whose
every input can wait one more cycle in the PE (its input register or ``DELAY<k>`` modes) is
scheduled one cycle later when that saves registers: its inputs take the cycle inside the PE
and one balancing register leaves every root-to-sink path of its output routes (the fewest
such registers, a cut of each route tree); a move that lengthens the critical path past the
target (or past the current period without one) is undone. As late as possible per kernel
within the PE's own delay, it moves latency off the interconnect; on the default PE, whose
inputs compute pipelining has already registered, it seldom applies. Register-chain
absorption (long balancing chains become MEM delay lines, :mod:`mapper.backend.absorb`) runs after
these passes, from :func:`mapper.backend.absorb.absorb_chains`.
"""
from __future__ import annotations

import copy
import dataclasses
import time
from itertools import pairwise
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import networkx as nx

from canal.graph import parse_id, reg_id, rmux_id
from canal.ready_valid import graph_kind
from cgra.errors import ConfigError, InternalError, MappingError, RoutingError
from mapper.backend.checks import check_pipelined
from mapper.backend.pack import (PackedDesign, delay_codes, input_delay, input_register,
                         mode_field_name, set_input_register)
from mapper.backend.dynamic import layer_of, overflow_pick
from mapper.backend.nets import DynamicRoute
from mapper.backend.place import Placement
from mapper.backend.route import NetRoute, RouterParams, RoutingResult, Terminal, route_design

if TYPE_CHECKING:
    from mapper.collateral import Collateral

_TAG_CLASS = {"p": "pe", "m": "mem", "I": "io", "i": "io"}
#: tags of memories with port programs whose schedules balancing shifts: MEM tiles and ponds
#: (the PE register file, :mod:`mapper.mapping.memory` step 5)
_MEM_TAGS = ("m", "o")


class BalanceError(RoutingError):
    """Branch-delay matching could not delay a branch enough (the message names the net, the
    sink, the cycles missing and what was tried)."""


@dataclass
class PipelineParams:
    """``latency``: PnR tag -> core latency in cycles (an instance's ``config['latency']``
    overrides); ``absorb_into_mem``: use MEM schedule offsets for balancing;
    ``register_pe_inputs``: compute pipelining (every PE data input registered);
    ``target_period_ps``: post-PnR register insertion target (``None`` = only balance,
    unless ``auto_target``); ``auto_target``: with no ``target_period_ps``, insert registers
    toward :func:`period_floor`, the slowest register-to-register stage the timing model
    allows (the best Fmax pipelining can reach; a miss is reported, not an error);
    ``max_pipeline_steps``: bound on insertion iterations; ``reroute``: allow
    latency-constrained re-routing for balancing (``max_reroutes`` rounds);
    ``max_rejected``: register insertion stops after this many sites whose register could
    not be balanced (each costs a balancing run, possibly re-routes);
    ``broadcast_fanout``: nets with at least this many sinks get register trees (0 = off),
    ``broadcast_leaves``: sinks per branch register; ``broadcast_on_miss``: when a target is
    missed with broadcast trees off, pipeline again with ``broadcast_fanout`` = this and keep
    the better result (:func:`pipeline`; 0 = off); ``input_reg_field``: PE field template of
    an input register (as :class:`mapper.backend.pack.PackParams`); ``alap``: with compute pipelining,
    the ALAP pass (module docstring) after the others."""

    latency: dict[str, int] = field(default_factory=lambda: {"p": 0, "m": 0, "I": 0, "i": 0})
    absorb_into_mem: bool = True
    register_pe_inputs: bool = False
    target_period_ps: float | None = None
    auto_target: bool = False
    max_pipeline_steps: int = 256
    reroute: bool = True
    max_reroutes: int = 3
    broadcast_fanout: int = 0
    broadcast_leaves: int = 4
    max_rejected: int = 12
    broadcast_on_miss: int = 0
    input_reg_field: str = "{port}_reg_en"
    alap: bool = True
    #: router parameters of the re-routes of branch-delay matching (``None``: the defaults;
    #: the flow passes its own when routing is power-aware, ``RouterParams.power_cost``)
    router: RouterParams | None = None


@dataclass
class TimingReport:
    """Static timing result: ``period_ps`` (critical path delay), ``fmax_mhz``, ``path``:
    [(node, arrival ps)] from start to end point, and ``model``: the delay model it comes
    from (:meth:`canal.timing.TimingModel.describe`)."""

    period_ps: float
    fmax_mhz: float
    path: list[tuple[str, float]]
    model: str = ""
    #: the register-insertion target (ps) the pipelining aimed for, ``None`` without one
    target_ps: float | None = None
    #: where the target comes from: ``"--fmax"`` or the floor stage (:func:`period_floor`)
    target: str = ""
    #: why the target was missed (one line naming the critical path and what it lacks:
    #: :func:`pipeline_passes`), ``""`` when met or without a target
    miss: str = ""

    def to_dict(self) -> dict[str, Any]:
        tgt = {} if self.target_ps is None else {
            "target_period_ps": round(self.target_ps, 2),
            "target_mhz": round(1e6 / self.target_ps, 2), "target": self.target,
            **({"target_missed": self.miss} if self.miss else {})}
        return {"period_ps": round(self.period_ps, 2), "fmax_mhz": round(self.fmax_mhz, 2),
                "model": self.model, **tgt,
                "critical_path": [{"node": n, "arrival_ps": round(a, 2)} for n, a in self.path]}


@dataclass
class PassReport:
    """What one pass achieved: the critical path (ps) and Fmax (MHz) after it, pipeline
    registers in use (route registers enabled by the passes plus PE input registers), the
    largest extra latency of an output stream (cycles), latency-constrained re-routes and
    seconds."""

    name: str
    period_ps: float
    fmax_mhz: float
    registers: int
    latency: int
    reroutes: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"pass": self.name, "period_ps": round(self.period_ps, 2),
                "fmax_mhz": round(self.fmax_mhz, 2), "registers": self.registers,
                "latency_cycles": self.latency, "reroutes": self.reroutes,
                "seconds": round(self.seconds, 4)}


@dataclass
class PipelineResult:
    """Outcome of :func:`pipeline`: ``routing`` (routes with enabled registers inserted; may
    differ from the input routing where branches were re-routed), ``packed`` (instance
    configs with shifted MEM / IO schedules and PE input-register fields), ``sigma_in``:
    (instance, port) -> extra cycles at that sink, ``enabled_regs``: REG ids enabled for
    balancing, ``forced_regs``: REG ids enabled by register insertion, ``mem_absorbed``:
    (mem, port) -> cycles of delay absorbed by the read schedule, ``pe_input_regs``: [(pe,
    core port)] PE inputs delayed in the PE by this pass (sorted, each once),
    ``output_latency``: IO output -> extra cycles, ``timing``, ``seconds``, ``passes`` (one
    :class:`PassReport` per pass), ``pe_input_delay``: (pe, core port) -> cycles that
    input is delayed by this pass (1 for every entry of ``pe_input_regs`` on the default PE;
    up to the longest ``DELAY<k>`` mode with a deeper PE); ``unpipelined``: the timing of the
    input routing with no pipeline register (:func:`unpipelined_timing`)."""

    routing: RoutingResult
    packed: PackedDesign
    sigma_in: dict[Terminal, int]
    enabled_regs: list[str]
    forced_regs: list[str]
    mem_absorbed: dict[Terminal, int]
    pe_input_regs: list[tuple[str, str]]
    output_latency: dict[str, int]
    timing: TimingReport
    seconds: float
    passes: list[PassReport] = field(default_factory=list)
    pe_input_delay: dict[tuple[str, str], int] = field(default_factory=dict)
    #: the same placed and routed design with no pipeline register (:func:`unpipelined_timing`)
    unpipelined: TimingReport | None = None


def _reg_of_rmux(rmux: str) -> str:
    """The REG id of the pipeline register behind RMUX ``rmux`` (same tile, side, track)."""
    n = parse_id(rmux)
    return reg_id(n.width, n.x, n.y, n.side, n.track)


def _rmux_of_reg(reg: str) -> str:
    """The RMUX id of the register mux after REG ``reg``."""
    n = parse_id(reg)
    return rmux_id(n.width, n.x, n.y, n.side, n.track)


def path_regs(path: list[str]) -> int:
    """Extra registers strictly inside a path (not the root, not the final node)."""
    return sum(1 for n in path[1:-1] if n.startswith("REG:"))


def with_regs(route: NetRoute, enabled: set[str]) -> NetRoute:
    """Copy of ``route`` with the REG node inserted before every RMUX of ``enabled`` (REG ids)
    that the route reaches through its bypass."""
    rmuxes = {_rmux_of_reg(r) for r in enabled}
    paths = {}
    for t, p in route.paths.items():
        q = [p[0]]
        for a, b in pairwise(p):
            if b in rmuxes and not a.startswith("REG:"):
                q.append(_reg_of_rmux(b))
            q.append(b)
        paths[t] = q
    return NetRoute(route.name, route.width, route.source, paths)


def without_regs(route: NetRoute, regs: set[str]) -> NetRoute:
    """Copy of ``route`` with the REG nodes of ``regs`` bypassed (removed from every path)."""
    return NetRoute(route.name, route.width, route.source,
                    {t: [n for n in p if n not in regs] for t, p in route.paths.items()})


def tree_cut(node: str, kids: dict[str, set[str]], regs: set[str]) -> set[str] | None:
    """The fewest nodes of ``regs`` in the route tree below ``node`` that meet every
    root-to-sink path exactly once (``None``: a path without one)."""
    below = kids.get(node)
    if not below:
        return None
    sub: set[str] | None = set()
    for c in sorted(below):
        got = tree_cut(c, kids, regs)
        if got is None:
            sub = None
            break
        sub |= got
    if node in regs and (sub is None or len(sub) > 1):
        return {node}
    return sub


def is_lut(packed: PackedDesign, inst: str) -> bool:
    """True for a MEM instance in lookup-table mode (:class:`mapper.mapping.compute.MappedLUT`): a
    fixed-latency core like a PE, with no schedule to shift."""
    i = packed.instances[inst]
    return i.tag == "m" and "lut" in i.config


def _latency(packed: PackedDesign, inst: str, p: PipelineParams) -> int:
    """Core latency (cycles): a PE's, a lookup MEM's or a pattern ROM's from its config,
    else the tag's."""
    i = packed.instances[inst]
    if "latency" in i.config and (i.tag == "p" or (i.tag == "m" and (
            "lut" in i.config or "rom" in i.config))):
        return int(i.config["latency"])
    return int(p.latency.get(i.tag, 0))


def _mem_groups(packed: PackedDesign, inst: str, in_ports: list[str], out_ports: list[str]
                ) -> dict[str, str | None]:
    """MEM output port -> the input port of its delay-line segment (from ``config['segments']``:
    ``data_in_<in_port>`` -> ``data_out_<q>`` for ``q`` in its ``out_ports`` (memory
    mapping's segments); without them segment k = port ``in<k>``, its taps = the next output
    ports in order; else the only input port). ``None``: not known — the output then follows
    the latest input."""
    cfg = packed.instances[inst].config
    segs = cfg.get("segments")
    out: dict[str, str | None] = {}
    if segs:
        k_out = 0
        for k, s in enumerate(segs):
            if "in_port" in s:
                for q in s["out_ports"]:
                    out[f"data_out_{q}"] = f"data_in_{s['in_port']}"
                continue
            for _ in s.get("taps", []):
                out[f"out{k_out}"] = f"in{k}"
                k_out += 1
    for o in out_ports:
        if o not in out:
            out[o] = in_ports[0] if len(in_ports) == 1 else None
    return out


def _mem_slack(packed: PackedDesign, inst: str, out_port: str, read_latency: int = 1) -> int:
    """Cycles a read port's delay can grow while its delay line still holds the word (a MEM
    whose config states ``read_slack``, cycles: that; a DNN operand or accumulation MEM holds
    its words until the layer ends, :mod:`mapper.dnn.array`)."""
    cfg = packed.instances[inst].config
    if "read_slack" in cfg:
        return int(cfg["read_slack"])
    segs = cfg.get("segments")
    if segs and "balance_delay" in cfg and out_port == "data_out_0":
        # a balancing delay line (mapper.backend.absorb): its words beyond its shortest delay
        s = segs[0]
        return max(0, int(s["words"]) + read_latency - 1 - (int(s["taps"][0]) - int(s["base"])))
    if not segs or not out_port.startswith("out"):
        return 0
    k_out, want = 0, int(out_port[3:]) if out_port[3:].isdigit() else -1
    for s in segs:
        for t in s.get("taps", []):
            if k_out == want:
                return max(0, int(s["words"]) + read_latency - 1 - (int(t) - int(s["base"])))
            k_out += 1
    return 0


@dataclass
class _State:
    """The working design of the passes: routes (REG nodes on a path = enabled registers),
    PE input delays added ((PE, core port) -> cycles), MEM read delays absorbed, registers
    forced by timing, and the register sites of netlist registers (they move when a width is
    re-routed)."""

    routes: dict[str, NetRoute]
    reg_sites: dict[str, str]
    pe_regs: dict[tuple[str, str], int] = field(default_factory=dict)
    absorbed: dict[Terminal, int] = field(default_factory=dict)
    forced: set[str] = field(default_factory=set)
    reroutes: int = 0
    #: sink of a dynamic net -> initial tokens of its ejection buffer (:mod:`canal.dynamic`)
    tokens: dict[Terminal, int] = field(default_factory=dict)
    #: the nets on the dynamic layer of a hybrid array (flow-id order)
    dynamic: dict[str, DynamicRoute] = field(default_factory=dict)

    def snapshot(self) -> tuple:
        return (dict(self.routes), dict(self.reg_sites), dict(self.pe_regs), dict(self.absorbed),
                set(self.forced), dict(self.tokens), dict(self.dynamic))

    def restore(self, saved: tuple) -> None:
        routes, sites, pe_regs, absorbed, forced, tokens, dynamic = saved
        self.routes, self.reg_sites, self.pe_regs = dict(routes), dict(sites), dict(pe_regs)
        self.absorbed, self.forced, self.tokens = dict(absorbed), set(forced), dict(tokens)
        self.dynamic = dict(dynamic)


class _Design:
    """The design the passes work on: netlist indexes, topological order, the collateral."""

    def __init__(self, packed: PackedDesign, placement: Placement, routing: RoutingResult,
                 coll: Collateral, p: PipelineParams):
        self.packed, self.placement, self.coll, self.p = packed, placement, coll, p
        self.routing = routing
        #: the dynamic layer of a hybrid array (None on other arrays)
        self.layer = layer_of(coll)
        self.graphs = coll.graphs
        self.sites = placement.sites
        self.net_by_name = {n.name: n for n in packed.nets}
        self.driver: dict[Terminal, str] = {}
        for n in packed.nets:
            for s in n.sinks:
                self.driver[s] = n.name
        self.in_ports: dict[str, list[str]] = {i: [] for i in packed.instances}
        self.out_ports: dict[str, list[str]] = {i: [] for i in packed.instances}
        for n in packed.nets:
            if n.source[1] not in self.out_ports[n.source[0]]:
                self.out_ports[n.source[0]].append(n.source[1])
            for inst, port in n.sinks:
                self.in_ports[inst].append(port)
        #: accumulation MEMs (config ``accumulator``): their read port does not follow their
        #: write port, so the loop MEM -> PEs -> MEM is cut at the write
        self.feedback = {i for i, inst in packed.instances.items()
                         if inst.tag in _MEM_TAGS and "accumulator" in inst.config}
        dag = nx.DiGraph()
        dag.add_nodes_from(packed.instances)
        for n in packed.nets:
            for s in n.sinks:
                if s[0] not in self.feedback:
                    dag.add_edge(n.source[0], s[0])
        try:
            self.order = list(nx.lexicographical_topological_sort(dag))
        except nx.NetworkXUnfeasible:
            cyc = nx.find_cycle(dag)
            raise MappingError(f"design {packed.name}: feedback loop through instances "
                               f"{[a for a, _ in cyc]}; branch-delay matching needs an acyclic "
                               f"netlist (keep loops inside a PE or memory)") from None
        self.mem_group = {i: _mem_groups(packed, i, self.in_ports[i], self.out_ports[i])
                          for i, inst in packed.instances.items() if inst.tag in _MEM_TAGS}
        #: (PE, netlist port) -> core port
        self.core_port: dict[Terminal, str] = {}
        for n in packed.nets:
            rg = self.graphs[n.width]
            for inst, port in n.sinks:
                if packed.instances[inst].tag == "p":
                    x, y = self.sites[inst]
                    self.core_port[(inst, port)] = packed.core_port(inst, port, x, y, rg, "in")

    # -- latency -----------------------------------------------------------------------
    def pe_reg_room(self, inst: str, port: str, st: _State) -> int:
        """Cycles (>= 0) by which this pass can still delay PE sink ``(inst, port)`` inside
        the PE: through the input's instruction mode field (the longest ``DELAY<k>`` mode of
        ``pe.json`` minus the cycles of its current mode (absorbed netlist registers) and of
        the delay this pass already added, :func:`mapper.backend.pack.input_register`), else 1 when
        the core has the config field ``input_reg_field`` and the input is free, else 0 (a
        constant input, or no way to register it)."""
        cp = self.core_port[(inst, port)]
        pi = self.packed.instances[inst]
        added = st.pe_regs.get((inst, cp), 0)
        if cp in pi.consts:
            return 0
        now = input_delay(self.coll.pe, pi.config, cp)
        if now is not None:
            codes = delay_codes(self.coll.pe, mode_field_name(self.coll.pe, pi.config, cp))
            room = 0
            while now + added + room + 1 in codes:
                room += 1
            return room
        if cp in pi.input_regs or added:
            return 0
        fname = self.p.input_reg_field.format(port=cp)
        return int(fname in {f.name for f in self.coll.tiles[self.sites[inst]].config_fields})

    def pe_reg_free(self, inst: str, port: str, st: _State) -> bool:
        """Can this pass delay PE sink ``(inst, port)`` by one more cycle inside the PE?
        (:meth:`pe_reg_room` > 0)"""
        return self.pe_reg_room(inst, port, st) > 0

    def arrivals(self, st: _State) -> tuple[dict[Terminal, int], dict[Terminal, int],
                                            dict[str, int]]:
        """(sigma at every sink, sigma at every source port, PE targets)."""
        packed = self.packed
        sigma_out: dict[Terminal, int] = {}
        sigma_in: dict[Terminal, int] = {}
        target: dict[str, int] = {}

        def arrival(term: Terminal) -> int:
            net = self.driver.get(term)
            if net is None:
                return 0
            a = sigma_out[self.net_by_name[net].source] + (
                st.tokens.get(term, 0) if net in st.dynamic
                else path_regs(st.routes[net].paths[term]))
            a += st.pe_regs.get((term[0], self.core_port.get(term)), 0)
            sigma_in[term] = a
            return a

        for inst in self.order:
            pi = packed.instances[inst]
            if inst in self.feedback:
                # an accumulation MEM's read is scheduled by its own program, later only by
                # the delay balancing gives it; its write port's arrival comes after the PEs
                for o in self.out_ports[inst]:
                    sigma_out[(inst, o)] = st.absorbed.get((inst, o), 0)
                continue
            ins = self.in_ports[inst]
            arr = {q: arrival((inst, q)) for q in ins}
            if pi.tag == "p" or is_lut(packed, inst):
                t = max(arr.values(), default=0)
                target[inst] = t
                for o in self.out_ports[inst]:
                    sigma_out[(inst, o)] = t + _latency(packed, inst, self.p)
            elif pi.tag in _MEM_TAGS:
                latest = max(arr.values(), default=0)
                # a pattern ROM's word comes one read latency after its stream schedule
                rom = _latency(packed, inst, self.p) if "rom" in pi.config else 0
                # a balancing delay line's latency is extra, not a stencil tap
                # (mapper.backend.absorb)
                rom += int(pi.config.get("balance_delay", 0))
                for o in self.out_ports[inst]:
                    src = self.mem_group[inst].get(o)
                    sigma_out[(inst, o)] = (arr.get(src, 0) if src else latest) + \
                        st.absorbed.get((inst, o), 0) + rom
            elif pi.tag == "r":
                a = arr.get(ins[0], 0) if ins else 0
                for o in self.out_ports[inst]:
                    sigma_out[(inst, o)] = a
            else:
                for o in self.out_ports[inst]:
                    sigma_out[(inst, o)] = 0
        for inst in sorted(self.feedback):
            for q in self.in_ports[inst]:
                arrival((inst, q))
        return sigma_in, sigma_out, target

    def loop_excess(self, st: _State) -> list[tuple[str, int, int]]:
        """``(MEM, loop cycles, budget)`` of every accumulation MEM whose read-add-write loop
        is longer than its schedule allows: the cycles from its read word (``data_out_0``)
        to the write of the new sum (``data_in_0``) over the nominal schedule's zero must
        stay within ``config['accumulator']['loop_cycles']`` (a partial sum's next read comes
        that many cycles after its write at the earliest; :mod:`mapper.dnn.array`)."""
        if not self.feedback:
            return []
        sigma_in, _, _ = self.arrivals(st)
        out = []
        for inst in sorted(self.feedback):
            cfg = self.packed.instances[inst].config
            budget = int(cfg["accumulator"]["loop_cycles"])
            write = max((sigma_in[(inst, q)] for q in self.in_ports[inst]), default=0)
            read = min((st.absorbed.get((inst, o), 0) for o in self.out_ports[inst]),
                       default=0)
            if write - read > budget:
                out.append((inst, write - read, budget))
        return out

    def deficits(self, st: _State) -> dict[Terminal, int]:
        sigma_in, _, target = self.arrivals(st)
        out = {}
        for inst, t in target.items():
            for q in self.in_ports[inst]:
                d = t - sigma_in[(inst, q)]
                if d:
                    out[(inst, q)] = d
        return out

    def output_latency(self, st: _State) -> int:
        sigma_in, _, _ = self.arrivals(st)
        lat = [sigma_in.get((i, q), 0) for i, pi in self.packed.instances.items()
               if pi.kind == "io_out" for q in self.in_ports[i]]
        return max(lat, default=0)

    # -- balancing ---------------------------------------------------------------------
    def balance(self, st: _State) -> None:
        """Branch-delay matching in place (module docstring); raises :class:`BalanceError`."""
        for _round in range(self.p.max_reroutes + 1):
            deficit = self.deficits(st)
            if not deficit:
                break
            if self.p.absorb_into_mem:
                self._absorb_mem(st, deficit)
            self._dyn_tokens(st, deficit)
            self._pe_input_regs(st, deficit)
            self._tree_regs(st, deficit)
            deficit = {s: d for s, d in deficit.items() if d > 0}
            if not deficit:
                continue            # verify on the next round
            if not self.p.reroute:
                break
            self._reroute(st, deficit)
        deficit = self.deficits(st)
        if not deficit:
            long = self.loop_excess(st)
            if long:
                inst, cyc, budget = long[0]
                raise BalanceError(
                    f"branch-delay matching: the read-add-write loop of accumulation MEM "
                    f"{inst} takes {cyc} cycles (read word to write), its schedule allows "
                    f"{budget} ({len(long)} such MEM(s)); map the layer with a larger loop "
                    f"budget (`cgra run --loop-cycles {cyc}`) or place it again")
            return
        (inst, port), k = sorted(deficit.items())[0]
        net = self.driver[(inst, port)]
        raise BalanceError(
            f"branch-delay matching: net {net} reaches {inst}.{port} {k} cycle(s) "
            f"earlier than the PE's other operands; no MEM schedule, PE input register, "
            f"free register site on its route or latency-constrained re-route "
            f"({st.reroutes} tried) can delay it ({len(deficit)} sink(s) short by "
            f"{sum(deficit.values())} cycle(s) in all)")

    def _absorb_mem(self, st: _State, deficit: dict[Terminal, int]) -> None:
        """Read MEM taps later where every consumer can take it: the delay ``e`` of a tap is
        the smallest deficit over its sinks, looking through netlist registers (a register
        passes a delay on to its own sinks) and capped by the words its delay line can still
        hold; every PE sink below it then needs ``e`` cycles less."""
        packed = self.packed
        by_source = {n.source: n for n in packed.nets}

        def room(term: Terminal, seen: frozenset = frozenset()) -> tuple[int, list[Terminal]]:
            """(cycles the signal into ``term`` may be delayed, PE sinks it delays): a
            register or a MEM delay-line segment passes the delay on to what it drives."""
            inst, port = term
            tag = packed.instances[inst].tag
            if tag == "p":
                return deficit.get(term, 0), [term]
            if tag in ("I", "i") or inst in self.feedback:
                return 1 << 30, []            # an output stream (a sum's write) just starts later
            if inst in seen or tag not in ("r", *_MEM_TAGS):
                return 0, []
            if tag == "r":
                outs = [by_source[(inst, o)] for o in self.out_ports[inst]]
            else:
                outs = [by_source[(inst, o)] for o in self.out_ports[inst]
                        if self.mem_group[inst].get(o) == port]
            got = [room(s, seen | {inst}) for n in outs for s in n.sinks]
            if not got:
                return 0, []
            return min(r for r, _ in got), [t for _, ts in got for t in ts]

        for net in packed.nets:
            src = net.source
            if packed.instances[src[0]].tag not in _MEM_TAGS:
                continue
            rooms = [room(s) for s in net.sinks]
            pe_sinks = [t for _, ts in rooms for t in ts]
            if not pe_sinks:
                continue
            e = min(min(r for r, _ in rooms),
                    _mem_slack(packed, src[0], src[1]) - st.absorbed.get(src, 0))
            if e > 0:
                st.absorbed[src] = st.absorbed.get(src, 0) + e
                for t in pe_sinks:
                    deficit[t] -= e

    def _dyn_tokens(self, st: _State, deficit: dict[Terminal, int]) -> None:
        """Fill deficits at the sinks of dynamic nets with initial tokens of their ejection
        buffers (a static route's registers, :mod:`canal.dynamic`): the sinks of one net in
        one tile share a buffer, so they get the smallest of their deficits; at most
        ``2**token_bits - 1`` tokens."""
        for r in st.dynamic.values():
            by_tile: dict[tuple[int, int], list[Terminal]] = {}
            for t, (x, y, _) in r.sinks.items():
                by_tile.setdefault((x, y), []).append(t)
            for terms in by_tile.values():
                now = st.tokens.get(terms[0], 0)
                add = min(min(deficit.get(t, 0) for t in terms), self.layer.max_tokens - now)
                if add <= 0:
                    continue
                for t in terms:
                    st.tokens[t] = now + add
                    if t in deficit:
                        deficit[t] -= add

    def _pe_input_regs(self, st: _State, deficit: dict[Terminal, int]) -> None:
        """Fill deficits (cycles) at PE inputs with the PE's own input delay, up to
        :meth:`pe_reg_room` cycles per input (1 on the default PE)."""
        for (inst, port), k in sorted(deficit.items()):
            take = min(k, self.pe_reg_room(inst, port, st)) if k > 0 else 0
            if take:
                key = (inst, self.core_port[(inst, port)])
                st.pe_regs[key] = st.pe_regs.get(key, 0) + take
                deficit[(inst, port)] = k - take

    def _tree_regs(self, st: _State, deficit: dict[Terminal, int]) -> None:
        used = {n for r in st.routes.values() for n in r.nodes()}
        for net in self.packed.nets:
            need = {s: deficit[s] for s in net.sinks if deficit.get(s, 0) > 0}
            if not need:
                continue
            r = st.routes[net.name]
            below: dict[str, set[Terminal]] = {}
            depth: dict[str, int] = {}
            parent: dict[str, str] = {}
            for t, pth in r.paths.items():
                for k, n in enumerate(pth):
                    below.setdefault(n, set()).add(t)
                    depth[n] = k
                    if k:
                        parent[n] = pth[k - 1]
            sites = sorted((n for n in below if n.startswith("RMUX:")
                            and parent.get(n, "").startswith("SB:")
                            and _reg_of_rmux(n) not in used), key=lambda n: (depth[n], n))
            enabled = set()
            for n in sites:
                sub = below[n]
                if all(need.get(s, 0) >= 1 for s in sub):
                    enabled.add(_reg_of_rmux(n))
                    for s in sub:
                        need[s] -= 1
            if enabled:
                st.routes[net.name] = with_regs(r, enabled)
                used |= enabled
                for s in need:
                    deficit[s] = need[s]

    def _reroute(self, st: _State, deficit: dict[Terminal, int]) -> None:
        """Latency-constrained re-routing: every sink pinned to its register count, the short
        ones asking for their deficit more (module docstring)."""
        regs = {name: {s: path_regs(p) + deficit.get(s, 0) for s, p in r.paths.items()}
                for name, r in st.routes.items() if name not in st.dynamic}
        # a PE input register enabled earlier stays; the router must not drop the registers
        # forced by timing: the pinned counts keep each sink's latency, not their positions
        # netlist registers keep their sites (the current routes then satisfy every pinned
        # count but the short ones); when that fails, the registers whose output nets are
        # short may move to another register site of their tile
        st.reroutes += 1
        keep = {name: {s: p for s, p in r.paths.items() if s not in deficit}
                for name, r in st.routes.items()}
        try:
            rr = route_design(self.packed, self.placement, self.coll, self.p.router, regs,
                              st.reg_sites, keep=keep, dynamic=list(st.dynamic))
        except RoutingError:
            short = {self.net_by_name[self.driver[s]].source[0] for s in deficit}
            keep = {r: site for r, site in st.reg_sites.items() if r not in short}
            try:
                rr = route_design(self.packed, self.placement, self.coll, self.p.router, regs,
                                  keep, short, dynamic=list(st.dynamic))
            except RoutingError as exc:
                rr = self._overflow(st, deficit, regs)
                if rr is not None:
                    st.dynamic = dict(rr.dynamic)
                    st.routes = dict(rr.nets)
                    st.reg_sites = dict(rr.reg_sites)
                    st.forced = {n for r in st.routes.values() for n in r.nodes()
                                 if n in st.forced}
                    return
                (inst, port), k = sorted(deficit.items())[0]
                raise BalanceError(
                    f"branch-delay matching: net {self.driver[(inst, port)]} reaches "
                    f"{inst}.{port} {k} cycle(s) earlier than the PE's other operands and no "
                    f"route with {k} more pipeline register(s) exists ({exc})") from None
        st.routes = dict(rr.nets)
        st.reg_sites = dict(rr.reg_sites)
        st.forced = {n for r in st.routes.values() for n in r.nodes()
                     if n in st.forced}

    def _overflow(self, st: _State, deficit: dict[Terminal, int],
                  regs: dict[str, dict[Terminal, int]]) -> RoutingResult | None:
        """On a hybrid array, when no static route holds the registers a short branch needs:
        the nets of the short sinks that the dynamic layer can carry move to it (their
        ejection buffers' tokens then fill any deficit; :mod:`mapper.backend.dynamic`) and
        the rest is routed again with its pinned counts. None when no net can move or that
        routing fails too."""
        if self.layer is None:
            return None
        moved = list(st.dynamic)
        for name in sorted({self.driver[s] for s in deficit}):
            if name in moved:
                continue
            pick, _ = overflow_pick(self.packed, self.placement, self.coll, self.layer,
                                    [name], moved)
            if pick is not None:
                moved.append(pick)
        if len(moved) == len(st.dynamic):
            return None
        keep = {name: {s: p for s, p in r.paths.items() if s not in deficit}
                for name, r in st.routes.items() if name not in moved}
        try:
            return route_design(self.packed, self.placement, self.coll, self.p.router,
                                {n: c for n, c in regs.items() if n not in moved},
                                st.reg_sites, keep=keep, dynamic=moved)
        except RoutingError:
            return None

    # -- ALAP ------------------------------------------------------------------------
    def balancing_regs(self, st: _State) -> set[str]:
        """Route registers enabled by branch-delay matching: not forced by register
        insertion or a register tree, not a netlist register's site, not mandatory."""
        sites = set(st.reg_sites.values())
        out = set()
        for r in st.routes.values():
            fanin = self.graphs[r.width].ig.fanin
            for pth in r.paths.values():
                for n in pth[1:-1]:
                    if (n.startswith("REG:") and n not in st.forced and n not in sites
                            and len(fanin[_rmux_of_reg(n)]) > 1):
                        out.add(n)
        return out

    def alap_move(self, inst: str, st: _State, balancing: set[str]
                  ) -> tuple[dict[str, set[str]], int] | None:
        """The ALAP move of PE ``inst`` when it saves registers: ({output net: the balancing
        registers cut from its route tree, one on every root-to-sink path, fewest first},
        registers saved), or ``None`` (a sink that is not a PE, an input the PE cannot
        delay, a path without a balancing register, or no saving)."""
        pi = self.packed.instances[inst]
        if pi.tag != "p" or is_lut(self.packed, inst) or not self.in_ports[inst]:
            return None
        nets = [n for n in self.packed.nets if n.source[0] == inst]
        if not nets or any(self.packed.instances[s[0]].tag != "p"
                           for n in nets for s in n.sinks) or any(
                               n.name in st.dynamic for n in nets):
            return None
        if any(self.pe_reg_room(inst, q, st) < 1 for q in self.in_ports[inst]):
            return None
        cost = sum(1 for q in self.in_ports[inst]
                   if (inst, self.core_port[(inst, q)]) not in st.pe_regs)
        cuts: dict[str, set[str]] = {}
        for n in nets:
            kids: dict[str, set[str]] = {}
            paths = st.routes[n.name].paths
            for pth in paths.values():
                for a, b in pairwise(pth):
                    kids.setdefault(a, set()).add(b)
            got = tree_cut(next(iter(paths.values()))[0], kids, balancing)
            if got is None:
                return None
            cuts[n.name] = got
        saved = sum(len(c) for c in cuts.values()) - cost
        return (cuts, saved) if saved > 0 else None

    def apply_alap(self, inst: str, cuts: dict[str, set[str]], st: _State) -> None:
        """Delay PE ``inst`` one cycle: every input one more cycle inside the PE, the cut
        registers off its output routes."""
        for q in self.in_ports[inst]:
            key = (inst, self.core_port[(inst, q)])
            st.pe_regs[key] = st.pe_regs.get(key, 0) + 1
        for net, regs in cuts.items():
            st.routes[net] = without_regs(st.routes[net], regs)

    # -- register trees ----------------------------------------------------------------
    def broadcast(self, st: _State) -> None:
        """Give every net with ``broadcast_fanout`` or more sinks a register at each branch
        of its route tree that serves at most ``broadcast_leaves`` sinks (module
        docstring); balancing then equalises what remains."""
        if self.p.broadcast_fanout <= 0:
            return
        used = {n for r in st.routes.values() for n in r.nodes()}
        for net in self.packed.nets:
            if len(net.sinks) < self.p.broadcast_fanout:
                continue
            r = st.routes[net.name]
            below: dict[str, set[Terminal]] = {}
            parent: dict[str, str] = {}
            for t, pth in r.paths.items():
                for k, n in enumerate(pth):
                    below.setdefault(n, set()).add(t)
                    if k:
                        parent[n] = pth[k - 1]
            done: set[Terminal] = set()
            enabled = set()
            for t, pth in r.paths.items():
                if t in done:
                    continue
                for n in pth:
                    if (n.startswith("RMUX:") and parent.get(n, "").startswith("SB:")
                            and _reg_of_rmux(n) not in used
                            and len(below[n]) <= self.p.broadcast_leaves
                            and not (below[n] & done)):
                        enabled.add(_reg_of_rmux(n))
                        done |= below[n]
                        break
            if enabled:
                st.routes[net.name] = with_regs(r, enabled)
                used |= enabled
                st.forced |= enabled


# ---------------------------------------------------------------------------- timing
def _tile_class(coll: Collateral, xy: tuple[int, int]) -> str:
    t = coll.tiles[xy]
    return t.timing_class or _TAG_CLASS.get(t.tag, "pe")


def _pe_delay(tm: Any, config: dict[str, Any]) -> float:
    """Core delay (ps) of a PE instance from its netlist config: the IR ``ops`` it covers and
    its rule's ``op`` (:meth:`canal.timing.TimingModel.pe_delay`)."""
    return tm.pe_delay(config.get("ops", ()), config.get("op"))


def _clock(coll: Collateral, xy: tuple[int, int]) -> float:
    """Clock arrival offset (ps) of tile ``xy`` (:meth:`canal.timing.TimingModel.clock_offset`)."""
    return coll.timing.clock_offset(_tile_class(coll, xy), xy[1])


def timing_analysis(packed: PackedDesign, placement: Placement, routing: RoutingResult,
                    coll: Collateral, params: PipelineParams | None = None,
                    pe_input_regs: list[tuple[str, str]] | None = None) -> TimingReport:
    """Static timing analysis of a routed design (model in the module docstring) with the
    delay classes of the collateral's timing model.

    Returns the :class:`TimingReport` (critical path in ps). Raises :class:`RoutingError`
    on a combinational loop and :class:`ConfigError` for a class without a delay."""
    p = params or PipelineParams()
    graphs, tm = coll.graphs, coll.timing
    g = nx.DiGraph()
    start: dict[str, float] = {}
    end: dict[str, float] = {}            # end point -> clock offset of its tile
    reg_inputs = {(i, cp) for i, cp in (pe_input_regs or [])}
    for name, i in packed.instances.items():
        reg_inputs |= {(name, cp) for cp in i.input_regs}
    pe_out_nodes: dict[str, list[str]] = {}
    pe_in_nodes: dict[str, list[tuple[str, bool]]] = {}
    #: ready chains of a measured ready-valid array: wrapped instance -> its output nets'
    #: ready end points and its input nets' ready start points (:func:`_ready_chains`)
    ready: dict[str, tuple[list[str], list[str]]] = {}

    for net in packed.nets:
        r = routing.nets[net.name]
        rg = graphs[net.width]
        ig = rg.ig
        dyn = routing.dynamic.get(net.name)
        if dyn is None:
            root = next(iter(r.paths.values()))[0]
            sink_nodes = {t: pth[-1] for t, pth in r.paths.items()}
        else:
            # a dynamic net (canal.dynamic): the source's word ends in the router's
            # injection buffer, each sink's starts at its ejection buffer (registers)
            root = rg.port_node(*dyn.source)
            g.add_edge(root, f"DYN:{net.name}", delay=0.0)
            end[f"DYN:{net.name}"] = _clock(coll, dyn.source[:2])
            sink_nodes = {t: rg.port_node(*at) for t, at in dyn.sinks.items()}
            for t, node in sink_nodes.items():
                start[node] = _clock(coll, dyn.sinks[t][:2])
            # the routers the word crosses: their own register-to-register stage (a
            # measured model's ``router`` figure of the source tile's class)
            rt = tm.router(_tile_class(coll, dyn.source[:2]))
            if rt is not None:
                q, r_end = f"RTR:{net.name}#Q", f"RTR:{net.name}"
                g.add_edge(q, r_end, delay=rt)
                start[q] = end[r_end] = _clock(coll, dyn.source[:2])
        for pth in r.paths.values():
            for a, b in pairwise(pth):
                d = tm.edge_delay(ig, a, b)
                if b.startswith("REG:"):
                    end[b] = _clock(coll, parse_id(b).xy)
                    g.add_edge(a, b, delay=d)
                elif a.startswith("REG:"):
                    start[a + "#Q"] = _clock(coll, parse_id(a).xy)
                    g.add_edge(a + "#Q", b, delay=d)
                else:
                    g.add_edge(a, b, delay=d)
        if dyn is None and graph_kind(ig) != "static":
            _ready_chains(g, start, end, ready, net, r, ig, packed, placement, coll, root,
                          sink_nodes)
        src_inst, _ = net.source
        si = packed.instances[src_inst]
        if si.tag != "r":
            xy = placement.sites[src_inst]
            if si.tag == "p":
                d = _pe_delay(tm, si.config)
                if _latency(packed, src_inst, p) == 0:
                    pe_out_nodes.setdefault(src_inst, []).append(root)
                else:
                    start[root] = d + _clock(coll, xy)
            else:
                start[root] = tm.core_delay(_tile_class(coll, xy)) + _clock(coll, xy)
        for (inst, port), node in sink_nodes.items():
            ti = packed.instances[inst]
            if ti.tag == "r":
                continue
            xy = placement.sites[inst]
            if ti.tag == "p" and _latency(packed, inst, p) == 0:
                cp = packed.core_port(inst, port, xy[0], xy[1], rg, "in")
                pe_in_nodes.setdefault(inst, []).append((node, (inst, cp) in reg_inputs))
                if (inst, cp) in reg_inputs:
                    end[node] = _clock(coll, xy)
            else:
                end[node] = _clock(coll, xy)
    for inst, outs in pe_out_nodes.items():
        xy = placement.sites[inst]
        d = _pe_delay(tm, packed.instances[inst].config)
        core = f"CORE:{inst}"
        for o in outs:
            g.add_edge(core, o, delay=d)
        ins = pe_in_nodes.get(inst, [])
        comb = [n for n, registered in ins if not registered]
        for n in comb:
            g.add_edge(n, core, delay=0.0)
        if len(comb) < len(ins) or not ins:
            start[core] = _clock(coll, xy)
    for inst, (outs, ins) in ready.items():
        # a wrapped core's fire logic joins the ready of its outputs to its inputs
        d = tm.ready_through_core(_tile_class(coll, placement.sites[inst]))
        if d is None:
            continue
        for o in outs:
            for i in ins:
                g.add_edge(o, i, delay=d)
    for n in start:
        g.add_node(n)
    try:
        order = list(nx.topological_sort(g))
    except nx.NetworkXUnfeasible:
        cyc = nx.find_cycle(g)
        raise RoutingError(f"combinational loop in the routed design through "
                           f"{[a for a, _ in cyc][:8]}; put a register in the loop") from None
    arr: dict[str, float] = {}
    prev: dict[str, str | None] = {}
    for n in order:
        best, bp = start.get(n, None), None
        for u in g.predecessors(n):
            if u in arr:
                v = arr[u] + g.edges[u, n]["delay"]
                if best is None or v > best:
                    best, bp = v, u
        if best is not None:
            arr[n] = best
            prev[n] = bp
    ends = [n for n in end if n in arr]
    if not ends:
        return TimingReport(0.0, float("inf"), [], tm.describe())
    crit = max(ends, key=lambda n: (arr[n] - end[n], n))
    path = [crit]
    while prev.get(path[-1]) is not None:
        path.append(prev[path[-1]])
    path.reverse()
    period = arr[crit] - end[crit]
    return TimingReport(period, 1e6 / period if period > 0 else float("inf"),
                        [(n, arr[n]) for n in path], tm.describe())


_SIDE_TO = {(0, -1): "N", (0, 1): "S", (1, 0): "E", (-1, 0): "W"}


def _ready_chains(g: nx.DiGraph, start: dict[str, float], end: dict[str, float],
                  ready: dict[str, tuple[list[str], list[str]]], net: Any, r: NetRoute,
                  ig: Any, packed: PackedDesign, placement: Placement, coll: Collateral,
                  root: str, sink_nodes: dict[tuple[str, str], str]) -> None:
    """The ready wires of one net on a ready-valid track, added to the STA graph ``g``
    backwards along its route (nodes ``RDY:<route node>``), when the timing model measured
    them (``ready_hop``, :mod:`garnet.sta.measure`; the published table has none): a
    switch-box hop costs the tile's ready hop, other edges 0; an enabled FIFO site (a
    ``REG`` on the route) starts the chain upstream of it with its registered ready
    (``RDY:<REG>#Q``, the register class) and ends the chain downstream of it
    (``RDY:<REG>#D``); a chain starts at a sink (an IO socket's or a wrapped core's ready)
    and ends at the source; a wrapped core (PE, MEM) joins the chains ending at its outputs
    to those starting at its inputs (``ready_through_core``, added by the caller from
    ``ready``). A ready chain crosses the tiles of the data it stalls, so the period covers
    both (Cascade §V-D: the ready is a combinational path back to the last FIFO)."""
    tm = coll.timing
    if not tm.table.get("ready_hop"):
        return
    for pth in r.paths.values():
        for a, b in pairwise(pth):
            if b.startswith("REG:"):
                q = f"RDY:{b}#Q"
                start[q] = tm.register_mux() + _clock(coll, parse_id(b).xy)
                g.add_edge(q, f"RDY:{a}", delay=0.0)
            elif a.startswith("REG:"):
                dpin = f"RDY:{a}#D"
                end[dpin] = _clock(coll, parse_id(a).xy)
                g.add_edge(f"RDY:{b}", dpin, delay=0.0)
            else:
                d = 0.0
                if tm.edge_class(ig, a, b).startswith("sb:"):
                    d = tm.ready_hop(_tile_class(coll, parse_id(b).xy), ig.width) or 0.0
                g.add_edge(f"RDY:{b}", f"RDY:{a}", delay=d)
    src_inst, _ = net.source
    if not root.startswith("REG:"):
        end[f"RDY:{root}"] = _clock(coll, parse_id(root).xy)
        if packed.instances[src_inst].tag in ("p", "m", "o"):
            ready.setdefault(src_inst, ([], []))[0].append(f"RDY:{root}")
    for (inst, _port), node in sink_nodes.items():
        if node.startswith("REG:"):
            continue
        start[f"RDY:{node}"] = _clock(coll, parse_id(node).xy)
        if packed.instances[inst].tag in ("p", "m", "o"):
            ready.setdefault(inst, ([], []))[1].append(f"RDY:{node}")


def period_floor(packed: PackedDesign, placement: Placement, coll: Collateral,
                 params: PipelineParams | None = None) -> tuple[float, str]:
    """The shortest clock period (ps) pipelining can reach on this placed design under the
    design's timing model: the slowest register-to-register stage no register insertion can
    split, with what it is. Stages (delays from ``coll.timing``, skew as in
    :func:`timing_analysis`):

    * the core of every placed instance: a PE's op delay (:meth:`canal.timing.TimingModel.pe_delay`;
      its inputs are registered by compute pipelining and its output reaches a register site
      on its own tile's switch box), a MEM or IO core's ``core`` delay;
    * a core input: a register on a neighbouring tile, its register mux and the connection
      box of the core's tile class (``reg`` + ``cb:<class>``), minus the clock skew;
    * one switch-box hop between registers of neighbouring tiles (``reg`` + the hop of the
      receiving tile's class and width, entering from the side facing the sender), minus the
      skew, over every tile pair of the array;
    * on a measured ready-valid array, a ready chain through each placed wrapped core
      (``reg``, a FIFO site's registered ready, + ``ready_through_core``: the FIFO sites
      nearest the core on both sides; :func:`_ready_chains`).

    Returns (period in ps, the stage, e.g. ``"MEM core (mem): 1000 ps"``). Raises
    :class:`ConfigError` for a class the timing model has no delay for."""
    p = params or PipelineParams()
    tm = coll.timing
    tiles = coll.tiles
    reg = tm.register_mux()
    stages: list[tuple[float, str]] = []
    sink_classes: set[str] = set()
    for name, inst in packed.instances.items():
        if inst.tag == "r" or name not in placement.sites:
            continue
        tc = _tile_class(coll, placement.sites[name])
        sink_classes.add(tc)
        if inst.tag == "p":
            ops = [o for o in inst.config.get("ops", ())
                   if o not in ("coreir.const", "corebit.const")]
            what = f"PE core ({', '.join(ops) or 'worst op'})"
            d = _pe_delay(tm, inst.config)
            if _latency(packed, name, p) > 0:
                what += ", registered output"
        else:
            what = f"{ {'m': 'MEM', 'o': 'pond'}.get(inst.tag, 'IO')} core ({tc})"
            d = tm.core_delay(tc)
        stages.append((d, what))
        rtc = tm.ready_through_core(tc) if inst.tag in ("p", "m", "o") else None
        if rtc is not None:
            stages.append((reg + rtc, f"a ready chain through a {tc} core (FIFO ready "
                                      f"{reg:.0f} + through the core {rtc:.0f} ps)"))
    sb = [k for k in tm.classes if k.startswith("sb:")]
    for (x, y), t in tiles.items():
        te = _tile_class(coll, (x, y))
        for (dx, dy), side in _SIDE_TO.items():
            s_xy = (x - dx, y - dy)               # the sender, on the side ``side`` faces
            if s_xy not in tiles:
                continue
            skew = _clock(coll, (x, y)) - _clock(coll, s_xy)
            entering = {"N": "S", "S": "N", "E": "W", "W": "E"}[side]
            hops = [tm.class_delay(k) for k in sb
                    if k.split(":")[1] == te and k.split(":")[3].startswith(entering + "->")]
            if hops:
                stages.append((reg + max(hops) - skew,
                               f"one switch-box hop into a {te} tile (register {reg:.0f} + "
                               f"hop {max(hops):.0f} - skew {skew:.0f} ps)"))
            if t.core is not None and te in sink_classes:
                cb = tm.class_delay(f"cb:{te}")
                stages.append((reg + cb - skew, f"a register into a {te} core input "
                                                f"(register {reg:.0f} + connection box "
                                                f"{cb:.0f} - skew {skew:.0f} ps)"))
    if not stages:
        return 0.0, "no stage"
    d, what = max(stages, key=lambda s: (s[0], s[1]))
    return d, f"{what}: {d:.0f} ps"


def unpipelined_timing(packed: PackedDesign, placement: Placement, routing: RoutingResult,
                       coll: Collateral, params: PipelineParams | None = None) -> TimingReport:
    """Static timing of the placed and routed design with no pipeline register: every
    ``REG`` node on a route that is not a netlist register's site counts as bypassed (class
    ``bypass``, also where the interconnect makes that register mandatory: a what-if) and no
    PE input is registered beyond the netlist's own registers. The baseline of the Cascade
    paper's "unpipelined" Fmax (30-103 MHz for its dense apps); on an interconnect whose
    NORTH/EAST registers are mandatory, the ``balance`` pass is already pipelined by them.
    Raises as :func:`timing_analysis`."""
    keep = set(routing.reg_sites.values())
    nets = {name: NetRoute(r.name, r.width, r.source,
                           {t: [n for n in pth if not n.startswith("REG:") or n in keep]
                            for t, pth in r.paths.items()})
            for name, r in routing.nets.items()}
    bare = RoutingResult(nets, dict(routing.reg_sites), dict(routing.iterations),
                         routing.seconds, dict(routing.wirelength), dict(routing.dynamic))
    return timing_analysis(packed, placement, bare, coll, params, [])


def _shift_program(prog: dict[str, Any], delta: int, where: str) -> dict[str, Any]:
    out = copy.deepcopy(prog)
    sched = out.setdefault("schedule", {})
    sched["offset"] = int(sched.get("offset", 0)) + delta
    if sched["offset"] < 0:
        raise ConfigError(f"{where}: schedule offset {sched['offset']} < 0 after pipelining")
    return out


# ---------------------------------------------------------------------------- the passes
#: ``cgra run`` / ``cgra pipeline``'s ``PipelineParams.broadcast_on_miss``: a missed target
#: whose critical path is on a net of this many sinks or more tries broadcast register trees
BROADCAST_ON_MISS = 6


def critical_fanout(res: PipelineResult) -> int:
    """The most sinks of a net whose route holds a node of ``res``'s critical path (0 when
    the path is on no route, e.g. inside a core)."""
    crit = {n.removeprefix("RDY:").split("#")[0] for n, _ in res.timing.path}
    sinks = {n.name: len(n.sinks) for n in res.packed.nets}
    return max((sinks[name] for name, r in res.routing.nets.items()
                if any(n in crit for n in r.nodes())), default=0)


def pipeline(packed: PackedDesign, placement: Placement, routing: RoutingResult,
             coll: Collateral, params: PipelineParams | None = None) -> PipelineResult:
    """The passes (:func:`pipeline_passes`); with ``broadcast_on_miss`` = F, a missed target
    (broadcast trees off) and a critical path on a net of F sinks or more
    (:func:`critical_fanout`: only there can a register tree shorten it), the passes again
    with ``broadcast_fanout = F``, keeping the better result (higher Fmax, then fewer
    registers: never worse than the first). Returns and raises as :func:`pipeline_passes`."""
    p = params or PipelineParams()
    res = pipeline_passes(packed, placement, routing, coll, p)
    if p.broadcast_on_miss and not p.broadcast_fanout and res.timing.miss and \
            critical_fanout(res) >= p.broadcast_on_miss:
        try:
            alt = pipeline_passes(packed, placement, routing, coll,
                                  dataclasses.replace(p, broadcast_fanout=p.broadcast_on_miss))
        except RoutingError:
            return res                  # broadcast trees could not be balanced: keep the first
        if (round(alt.timing.fmax_mhz, 6), -registers_of(alt)) > \
                (round(res.timing.fmax_mhz, 6), -registers_of(res)):
            return alt
    return res


def pipeline_passes(packed: PackedDesign, placement: Placement, routing: RoutingResult,
                    coll: Collateral, params: PipelineParams | None = None) -> PipelineResult:
    """Branch-delay matching, compute pipelining, register insertion to a target period and
    static timing analysis of a placed and routed design (see the module docstring); every
    pass leaves the design balanced and legally routed (checked: a violation is an
    :class:`~cgra.errors.InternalError` naming the pass).

    Returns a :class:`PipelineResult`; ``packed`` and ``routing`` are not modified (the
    result holds updated copies). Raises :class:`BalanceError` when a deficit cannot be
    balanced, :class:`MappingError` on a feedback loop, :class:`ConfigError` on a timing model
    without a class or a negative schedule offset."""
    t0 = time.perf_counter()
    p = params or PipelineParams()
    d = _Design(packed, placement, routing, coll, p)
    st = _State(dict(routing.nets), dict(routing.reg_sites),
                tokens={t: k for r in routing.dynamic.values() for t, k in r.tokens.items()},
                dynamic=dict(routing.dynamic))
    reports: list[PassReport] = []

    def result() -> PipelineResult:
        return _result(d, st, routing, time.perf_counter() - t0, reports)

    def report(name: str, t_start: float, res: PipelineResult) -> None:
        check_pipelined(name, res, coll)
        regs = len(res.enabled_regs) + len(res.forced_regs) + len(res.pe_input_regs)
        reports.append(PassReport(name, res.timing.period_ps, res.timing.fmax_mhz, regs,
                                  max(res.output_latency.values(), default=0), st.reroutes,
                                  time.perf_counter() - t_start))

    unpiped = unpipelined_timing(packed, placement, routing, coll, p)
    target, target_of = p.target_period_ps, "--fmax"
    if target is None and p.auto_target:
        target, target_of = period_floor(packed, placement, coll, p)
    t = time.perf_counter()
    d.broadcast(st)
    d.balance(st)
    res = result()
    report("balance" if not p.broadcast_fanout else "broadcast trees + balance", t, res)
    if p.register_pe_inputs:
        t = time.perf_counter()
        for inst, pi in packed.instances.items():
            if pi.tag != "p":
                continue
            for q in d.in_ports[inst]:
                if d.pe_reg_free(inst, q, st):
                    key = (inst, d.core_port[(inst, q)])
                    st.pe_regs[key] = st.pe_regs.get(key, 0) + 1
        d.balance(st)
        res = result()
        report("compute pipelining", t, res)
    if target is not None:
        t = time.perf_counter()
        steps = 0
        rejected: dict[str, str] = {}
        stop = ""
        while res.timing.period_ps > target and steps < p.max_pipeline_steps:
            steps += 1
            site = _insertion_site(res, st, set(rejected))
            if site is None or len(rejected) >= p.max_rejected:
                stop = "no site" if site is None else "rejected"
                break
            net, reg = site
            saved = st.snapshot()
            st.routes[net] = with_regs(st.routes[net], {reg})
            st.forced.add(reg)
            try:
                d.balance(st)
            except BalanceError as exc:
                st.restore(saved)          # this register cannot be balanced: try another
                rejected[reg] = str(exc)
                continue
            res = result()
        else:
            stop = "steps"
        report("register insertion", t, res)
    if p.register_pe_inputs and p.alap:
        t = time.perf_counter()
        balancing = d.balancing_regs(st)      # a kept move only removes some of them
        for inst in reversed(d.order):
            move = d.alap_move(inst, st, balancing)
            if move is None:
                continue
            saved = st.snapshot()
            d.apply_alap(inst, move[0], st)
            if d.deficits(st):
                raise InternalError(f"ALAP: delaying PE {inst} unbalanced "
                                    f"{sorted(d.deficits(st))[:3]}")
            if d.loop_excess(st):
                st.restore(saved)           # it lengthens an accumulation loop past its budget
                continue
            new = result()
            bound = res.timing.period_ps if target is None else \
                max(target, res.timing.period_ps)
            if new.timing.period_ps > bound + 1e-6:
                st.restore(saved)           # a removed register was cutting the critical path
                continue
            res = new
            balancing -= {r for regs in move[0].values() for r in regs}
        report("ALAP", t, res)
    res.passes = list(reports)
    res.unpipelined = unpiped
    if target is not None:
        miss = ""
        if res.timing.period_ps > target + 1e-6:
            miss = _closure_miss(res, st, target, placement, rejected, stop,
                                p.max_pipeline_steps)
        res.timing = dataclasses.replace(res.timing, target_ps=target, target=target_of,
                                         miss=miss)
    return res


def _where(node: str, at: dict[tuple[int, int], str]) -> str:
    """A critical-path end point for a message: the instance on its tile and the tile."""
    if node.startswith("DYN:"):
        return f"the dynamic layer (net {node[4:]})"
    if node.startswith("RTR:"):
        return f"the routers of the dynamic layer (net {node[4:].removesuffix('#Q')})"
    if node.startswith("RDY:"):
        node = node[4:].split("#")[0]
    n = parse_id(node.removesuffix("#Q")) if not node.startswith("CORE:") else None
    if n is None:
        return f"PE {node[5:]}"
    inst = at.get(n.xy)
    what = "register" if node.startswith("REG:") else (inst or "port")
    return f"{what} ({n.x},{n.y})"


def _closure_miss(res: PipelineResult, st: _State, target: float, placement: Placement,
                 rejected: dict[str, str], stop: str, max_steps: int) -> str:
    """Why register insertion stopped above ``target`` (ps), in one line naming the critical
    path (its end points and tiles), the register sites on it and what each lacks: taken by
    another net, a register branch-delay matching could not balance (with the branch and the
    registers it was short of), or none at all (a stage no register can split, e.g. a core).
    ``stop``: ``"no site"``, ``"rejected"`` (``max_rejected`` reached) or ``"steps"``."""
    tm = res.timing
    at = {xy: name for name, xy in placement.sites.items()
          if name in res.packed.instances and res.packed.instances[name].tag != "r"}
    used = {n for r in st.routes.values() for n in r.nodes()}
    names = [n for n, _ in tm.path]
    sites = [_reg_of_rmux(n) for prv, n, _ in _route_pairs(tm.path)
             if n.startswith("RMUX:") and prv.startswith("SB:")]
    taken = [r for r in sites if r in used]
    bad = [r for r in sites if r in rejected]
    chain = names and names[0].startswith("RDY:")
    hops = sum(1 for n in names if n.removeprefix("RDY:").startswith("SB:") and ":IN" in n)
    head = (f"Fmax {tm.fmax_mhz:.0f} MHz < {1e6 / target:.0f} MHz: the critical path "
            f"({'a ready chain, ' if chain else ''}{_where(names[0], at)} -> "
            f"{_where(names[-1], at)}, {tm.period_ps:.0f} ps, {hops} switch-box hops)")
    if stop == "steps":
        return f"{head} was still being cut after {max_steps} insertion steps " \
               f"(PipelineParams.max_pipeline_steps)"
    if names[0].startswith("RTR:"):
        return (f"Fmax {tm.fmax_mhz:.0f} MHz < {1e6 / target:.0f} MHz: the critical path is "
                f"the routers' own stage on the dynamic layer (net "
                f"{names[-1][4:]}, {tm.period_ps:.0f} ps, measured: register to register "
                f"inside a router or across a mesh link): no route register can split it (a "
                f"pipelined router, static routes for the net, or a lower --fmax)")
    comb = [n[5:] for n in names if n.startswith("CORE:")]
    if not sites and comb and names[0] == f"CORE:{comb[0]}":
        # it launches at the core's registered inputs: the core alone is the stage
        return (f"{head} starts at the registered inputs of {_where(names[0], at)}: its "
                f"core delay is a stage no pipeline register can split (a faster PE op or "
                f"a lower --fmax)")
    if not sites and comb:
        return (f"{head} passes through PE {comb[0]} combinationally and has no register "
                f"site: register the PE's inputs (compute pipelining, "
                f"PipelineParams.register_pe_inputs; on by default with `cgra run`)")
    if not sites:
        return f"{head} has no register site on it: a stage no pipeline register can split"
    parts = []
    if taken:
        parts.append(f"{len(taken)} of its {len(sites)} switch-box register sites are taken "
                     f"by other nets")
    if bad:
        n = parse_id(bad[0])
        why = rejected[bad[0]].removeprefix("branch-delay matching: ")
        parts.append(f"{len(bad)} cannot be balanced (the register at ({n.x},{n.y}): "
                     f"{why})")
    rest = len(sites) - len(taken) - len(bad)
    if rest > 0:
        parts.append(f"{rest} were not tried")
    tail = "; register insertion stopped after rejecting " \
        f"{len(rejected)} sites (PipelineParams.max_rejected)" if stop == "rejected" else ""
    return f"{head} has no free register site: " + "; ".join(parts) + tail


def _route_pairs(path: list[tuple[str, float]]) -> list[tuple[str, str, float]]:
    """(node, next node, arrival at the next on the critical path) of each step of
    ``path``, in route order: a ready chain (``RDY:`` nodes, :func:`_ready_chains`) runs
    against its route, so its steps are reversed and its nodes named as the route's (an
    enabled FIFO site on it splits it like a register splits a data path)."""
    names = [n for n, _ in path]
    if names and names[0].startswith("RDY:"):
        def bare(n: str) -> str:
            return n[4:].split("#")[0] if n.startswith("RDY:") else n
        return [(bare(nxt), bare(n), a)
                for (n, a), nxt in zip(path[:-1], names[1:], strict=True)]
    return [(prv, n, a) for (n, a), prv in zip(path[1:], names[:-1], strict=True)]


def _insertion_site(res: PipelineResult, st: _State, rejected: set[str]
                    ) -> tuple[str, str] | None:
    """(net, REG id) of the bypassed register site on the critical path whose arrival is
    closest to half the path delay (sites in ``rejected`` excluded), or ``None``."""
    timing = res.timing
    used = {n for r in st.routes.values() for n in r.nodes()}
    net_of: dict[str, str] = {}
    for name, r in st.routes.items():
        for n in r.nodes():
            net_of.setdefault(n, name)
    cands = []
    for prv, n, a in _route_pairs(timing.path):
        if n.startswith("RMUX:") and prv.startswith("SB:") and _reg_of_rmux(n) not in used \
                and n in net_of and _reg_of_rmux(n) not in rejected:
            cands.append((abs(a - timing.period_ps / 2), n))
    if not cands:
        return None
    n = min(cands)[1]
    return net_of[n], _reg_of_rmux(n)


def _result(d: _Design, st: _State, routing: RoutingResult, seconds: float,
            reports: list[PassReport]) -> PipelineResult:
    """The :class:`PipelineResult` of the current state: shifted schedules, fields, STA."""
    packed = d.packed
    dyn = {n: dataclasses.replace(r, tokens={t: st.tokens.get(t, 0) for t in r.sinks})
           for n, r in st.dynamic.items()}
    rr = RoutingResult(dict(st.routes), dict(st.reg_sites), dict(routing.iterations),
                       routing.seconds, dict(routing.wirelength), dyn)
    pk = copy.deepcopy(packed)
    for (inst, cp), k in st.pe_regs.items():
        pi = pk.instances[inst]
        mode = input_register(d.coll.pe, pi.config, cp, cycles=k)
        if mode is not None:
            set_input_register(d.coll.pe, pi.config, *mode)
        elif k == 1:
            pi.fields[d.p.input_reg_field.format(port=cp)] = 1
        else:
            raise InternalError(f"pipelining: PE {inst} input {cp} was given {k} cycles of "
                                f"input delay but has no mode for them")
    pe_regs = sorted(st.pe_regs)
    timing = timing_analysis(pk, d.placement, rr, d.coll, d.p, pe_regs)
    sig, _, _ = d.arrivals(st)
    out_lat: dict[str, int] = {}
    for inst, pi in pk.instances.items():
        if pi.tag in _MEM_TAGS and "ports" in pi.config:
            ports = dict(pi.config["ports"])
            for port, prog in pi.config["ports"].items():
                if port.startswith(("in", "data_in")):         # a write port
                    delta = sig.get((inst, port), 0)
                elif inst in d.feedback:                       # its own read schedule
                    delta = st.absorbed.get((inst, port), 0)
                else:
                    src = d.mem_group[inst].get(port)
                    base = sig.get((inst, src), 0) if src else \
                        max((sig.get((inst, q), 0) for q in d.in_ports[inst]), default=0)
                    delta = base + st.absorbed.get((inst, port), 0)
                if delta:
                    ports[port] = _shift_program(prog, delta, f"MEM {inst} port {port}")
            pi.config["ports"] = ports
        elif pi.tag in _MEM_TAGS and not is_lut(d.packed, inst) and \
                any(sig.get((inst, q), 0) for q in d.in_ports[inst]):
            raise ConfigError(f"MEM {inst}: pipelining delays its inputs by "
                              f"{[sig.get((inst, q), 0) for q in d.in_ports[inst]]} cycles but "
                              f"its config has no 'ports' programs to shift")
        if pi.kind == "io_out" or (pi.tag in ("I", "i") and d.in_ports[inst]):
            lat = max((sig[(inst, q)] for q in d.in_ports[inst]), default=0)
            out_lat[inst] = lat
            if "program" in pi.config and lat:
                pi.config["program"] = _shift_program(pi.config["program"], lat,
                                                      f"IO {inst} output program")
    netlist_sites = set(st.reg_sites.values())
    all_regs = {n for r in rr.nets.values() for pth in r.paths.values()
                for n in pth[1:-1] if n.startswith("REG:")}
    mandatory = {n for n in all_regs if len(d.coll.graphs[parse_id(n).width].ig.fanin[
        _rmux_of_reg(n)]) == 1}
    forced = sorted(st.forced & all_regs)
    enabled = sorted(all_regs - set(forced) - netlist_sites - mandatory)
    return PipelineResult(rr, pk, sig, enabled, forced, dict(st.absorbed), pe_regs, out_lat,
                          timing, seconds, list(reports), dict(sorted(st.pe_regs.items())))


def registers_of(pr: PipelineResult) -> int:
    """Pipeline registers of a pipelined design: those of its last pass report, else every
    enabled and forced register."""
    return pr.passes[-1].registers if pr.passes else len(pr.enabled_regs) + len(pr.forced_regs)


__all__ = ["BROADCAST_ON_MISS", "BalanceError", "PassReport", "PipelineParams", "PipelineResult",
           "TimingReport", "critical_fanout", "path_regs", "period_floor", "pipeline",
           "pipeline_passes", "registers_of", "timing_analysis", "tree_cut",
           "unpipelined_timing", "with_regs", "without_regs"]
