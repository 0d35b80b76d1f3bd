"""Pipelining after place and route: branch-delay matching, latency absorption into memory
schedules, compute pipelining and static timing analysis.

Source: Cascade (Zhang et al., "Cascade: An Application Pipelining Toolkit for Coarse-Grained
Reconfigurable Arrays", 2022): post-PnR register insertion at switch-box pipeline registers
already on a net's route, branch-delay matching, and moving balancing latency into memory
schedules instead of registers.

**Cycle model.** The front end (:mod:`mapper.memory`) schedules every stream assuming zero
interconnect and compute latency; netlist registers and memory taps are *intended* delays
(the stencil). This pass computes, for every signal, its *extra* latency ``sigma`` (cycles)
over that nominal schedule:

* an IO input: 0; a netlist register (on a ``REG`` site or absorbed into a PE input): its
  input's sigma;
* a route: +1 per enabled pipeline register strictly inside the path (the ``REG`` that is a
  netlist register's own site is not extra);
* a PE: all data inputs must have the same sigma ``T`` (branch-delay matching); its output is
  ``T + L`` with ``L`` the PE latency in cycles (``PipelineParams.latency['p']`` or the
  instance's ``config['latency']``);
* a MEM output port: sigma of the input port of its delay-line segment + ``e`` cycles of
  absorbed delay; the MEM's port programs are shifted accordingly (write schedule offset
  ``+= sigma_in``, read offset ``+= sigma_in + e``), so the stored stream keeps its intended
  distance;
* an IO output: its output program (valid window) starts ``sigma`` cycles later — the
  latency added by pipelining.

**Branch-delay matching.** Instances are visited in topological order; each PE's target ``T``
is the maximum sigma over its inputs, so every other input has a deficit ``T - sigma``.
Deficits are filled (1) by delaying a MEM read port whose output feeds only PE inputs with a
deficit (``e`` = the smallest such deficit, limited by the words the delay line can still
hold), then (2) by enabling pipeline registers on the net's routed tree: sites (a register mux
reached through its bypass) are visited from the root towards the sinks and enabled when every
sink below still needs a cycle, and (3) by a PE input register when the PE has one free. A
deficit left over raises :class:`~cgra.errors.RoutingError` naming the net, the sink and the
missing cycles.

**Static timing analysis.** Start points: enabled ``REG`` nodes (clock-to-Q is in the
``REG -> RMUX`` edge delay), outputs of MEM, IO and registered PEs (arrival = core delay, ps,
the ``core`` class of the tile in the design's timing model, ``timing.json``). End points:
``REG`` nodes and core inputs of MEM, IO and registered PEs. A combinational PE (``L = 0``) adds
its core delay from each non-registered input to its output. Edge delays are the routing
graph's ``delay_ps``. The critical path is the longest start-to-end path (ps).

**Compute pipelining** (``PipelineParams.target_period_ps``): while the critical path exceeds
the target, enable the bypassed register site on the critical path whose arrival time is
closest to half the path delay, re-run branch-delay matching and timing analysis.
"""
from __future__ import annotations

import copy
import heapq
import time
from itertools import pairwise
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import networkx as nx

from canal.timing import TimingModel
from cgra.errors import ConfigError, MappingError, RoutingError
from mapper.pack import PackedDesign
from mapper.place import Placement
from mapper.route import NetRoute, RoutingGraph, RoutingResult, Terminal

if TYPE_CHECKING:
    from mapper.collateral import Collateral

_TAG_CLASS = {"p": "pe", "m": "mem", "I": "io", "i": "io"}


@dataclass
class PipelineParams:
    """``latency``: PnR tag -> core latency in cycles (an instance's ``config['latency']``
    overrides); ``absorb_into_mem``: use MEM schedule offsets for balancing;
    ``target_period_ps``: compute-pipelining target (``None`` = only balance);
    ``max_pipeline_steps``: bound on compute-pipelining iterations; ``input_reg_field``: PE
    field template of an input register (as :class:`mapper.pack.PackParams`)."""

    latency: dict[str, int] = field(default_factory=lambda: {"p": 0, "m": 0, "I": 0, "i": 0})
    absorb_into_mem: bool = True
    target_period_ps: float | None = None
    max_pipeline_steps: int = 64
    input_reg_field: str = "{port}_reg_en"


@dataclass
class TimingReport:
    """Static timing result: ``period_ps`` (critical path delay), ``fmax_mhz``, ``path``:
    [(node, arrival ps)] from start to end point, ``start``/``end`` descriptions."""

    period_ps: float
    fmax_mhz: float
    path: list[tuple[str, float]]

    def to_dict(self) -> dict[str, Any]:
        return {"period_ps": round(self.period_ps, 2), "fmax_mhz": round(self.fmax_mhz, 2),
                "critical_path": [{"node": n, "arrival_ps": round(a, 2)} for n, a in self.path]}


@dataclass
class PipelineResult:
    """Outcome of :func:`pipeline`: ``routing`` (routes with enabled registers inserted),
    ``packed`` (instance configs with shifted MEM / IO schedules and PE input-register fields),
    ``sigma_in``: (instance, port) -> extra cycles at that sink, ``enabled_regs``: REG node ids
    enabled for balancing, ``forced_regs``: REG node ids enabled by compute pipelining,
    ``mem_absorbed``: (mem, port) -> cycles of delay absorbed by the read schedule,
    ``pe_input_regs``: [(pe, core port)] input registers used for balancing,
    ``output_latency``: IO output -> extra cycles, ``timing``, ``seconds``."""

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


def _reg_of_rmux(rmux: str) -> str:
    return "REG" + rmux[len("RMUX"):]


def _latency(packed: PackedDesign, inst: str, p: PipelineParams) -> int:
    i = packed.instances[inst]
    if "latency" in i.config and i.tag == "p":
        return int(i.config["latency"])
    return int(p.latency.get(i.tag, 0))


def _mem_groups(packed: PackedDesign, inst: str, in_ports: list[str], out_ports: list[str]
                ) -> dict[str, str | None]:
    """MEM output port -> the input port of its delay-line segment (from ``config['segments']``,
    segment k = port ``in<k>``, its taps = the next output ports in order; else the only input
    port). ``None``: not known — the output then follows the latest input."""
    cfg = packed.instances[inst].config
    segs = cfg.get("segments")
    out: dict[str, str | None] = {}
    if segs:
        k_out = 0
        for k, s in enumerate(segs):
            for _ in s.get("taps", []):
                out[f"out{k_out}"] = f"in{k}"
                k_out += 1
    for o in out_ports:
        if o not in out:
            out[o] = in_ports[0] if len(in_ports) == 1 else None
    return out


def _mem_slack(packed: PackedDesign, inst: str, out_port: str, read_latency: int = 1) -> int:
    """Cycles a read port's delay can grow while its delay line still holds the word."""
    cfg = packed.instances[inst].config
    segs = cfg.get("segments")
    if not segs or not out_port.startswith("out"):
        return 0
    k_out, want = 0, int(out_port[3:]) if out_port[3:].isdigit() else -1
    for s in segs:
        for t in s.get("taps", []):
            if k_out == want:
                return max(0, int(s["words"]) + read_latency - 1 - (int(t) - int(s["base"])))
            k_out += 1
    return 0


class _Design:
    """Working state of the pipelining pass."""

    def __init__(self, packed: PackedDesign, routing: RoutingResult,
                 graphs: dict[int, RoutingGraph], p: PipelineParams):
        self.packed, self.graphs, self.p = packed, graphs, p
        self.routing = routing
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
        dag = nx.DiGraph()
        dag.add_nodes_from(packed.instances)
        for n in packed.nets:
            for s in n.sinks:
                dag.add_edge(n.source[0], s[0])
        try:
            self.order = list(nx.lexicographical_topological_sort(dag))
        except nx.NetworkXUnfeasible:
            cyc = nx.find_cycle(dag)
            raise MappingError(f"design {packed.name}: feedback loop through instances "
                               f"{[a for a, _ in cyc]}; branch-delay matching needs an acyclic "
                               f"netlist (keep loops inside a PE or memory)") from None
        self.mem_group = {i: _mem_groups(packed, i, self.in_ports[i], self.out_ports[i])
                          for i, inst in packed.instances.items() if inst.tag == "m"}

    # -- route helpers -----------------------------------------------------------------
    @staticmethod
    def with_regs(route: NetRoute, enabled: set[str]) -> NetRoute:
        """Copy of ``route`` with REG nodes inserted before every enabled RMUX reached
        through its bypass."""
        paths = {}
        for t, p in route.paths.items():
            q = [p[0]]
            for a, b in pairwise(p):
                if b.startswith("RMUX:") and b in enabled and not a.startswith("REG:"):
                    q.append(_reg_of_rmux(b))
                q.append(b)
            paths[t] = q
        return NetRoute(route.name, route.width, route.source, paths)

    @staticmethod
    def path_regs(path: list[str]) -> int:
        """Extra registers strictly inside a path (not the root, not the final node)."""
        return sum(1 for n in path[1:-1] if n.startswith("REG:"))

    # -- the pass ----------------------------------------------------------------------
    def balance(self, forced: set[str]) -> dict[str, Any]:
        packed = self.packed
        routes = {n: self.with_regs(r, forced) for n, r in self.routing.nets.items()}
        sigma_out: dict[Terminal, int] = {}
        absorbed: dict[Terminal, int] = {}
        target: dict[str, int] = {}
        # pass 1: sigma with forced registers only; PE targets
        def arrival(term: Terminal) -> int:
            net = self.driver.get(term)
            if net is None:
                return 0
            return sigma_out[self.net_by_name[net].source] + self.path_regs(routes[net].paths[term])

        for inst in self.order:
            pi = packed.instances[inst]
            ins = self.in_ports[inst]
            if pi.tag == "p":
                t = max((arrival((inst, q)) for q in ins), default=0)
                target[inst] = t
                for o in self.out_ports[inst]:
                    sigma_out[(inst, o)] = t + _latency(packed, inst, self.p)
            elif pi.tag == "m":
                latest = max((arrival((inst, q)) for q in ins), default=0)
                for o in self.out_ports[inst]:
                    src = self.mem_group[inst].get(o)
                    sigma_out[(inst, o)] = arrival((inst, src)) if src else latest
            elif pi.tag == "r":
                a = arrival((inst, ins[0]))
                for o in self.out_ports[inst]:
                    sigma_out[(inst, o)] = a
            else:
                for o in self.out_ports[inst]:
                    sigma_out[(inst, o)] = 0
        deficit: dict[Terminal, int] = {}
        for inst, t in target.items():
            for q in self.in_ports[inst]:
                d = t - arrival((inst, q))
                if d:
                    deficit[(inst, q)] = d
        # pass 2: absorb into MEM read schedules
        if self.p.absorb_into_mem:
            for net in packed.nets:
                src = net.source
                if packed.instances[src[0]].tag != "m":
                    continue
                pe_sinks = [s for s in net.sinks if packed.instances[s[0]].tag == "p"]
                if not pe_sinks or any(packed.instances[s[0]].tag not in ("p", "I", "i")
                                       for s in net.sinks):
                    continue
                e = min(deficit.get(s, 0) for s in pe_sinks)
                e = min(e, _mem_slack(packed, src[0], src[1]))
                if e > 0:
                    absorbed[src] = e
                    sigma_out[src] += e
                    for s in pe_sinks:
                        deficit[s] -= e
        # pass 3: registers on the routed trees
        enabled: set[str] = set()
        used_nodes = {n for r in routes.values() for n in r.nodes()}
        for net in packed.nets:
            need = {s: deficit.get(s, 0) for s in net.sinks if deficit.get(s, 0) > 0}
            if not need:
                continue
            r = routes[net.name]
            base_regs = {s: self.path_regs(r.paths[s]) for s in need}
            below: dict[str, set[Terminal]] = {}
            depth: dict[str, int] = {}
            parent: dict[str, str] = {}
            for t, pth in r.paths.items():
                for k, n in enumerate(pth):
                    below.setdefault(n, set()).add(t)
                    depth[n] = k
                    if k:
                        parent[n] = pth[k - 1]
            sites = [n for n in below if n.startswith("RMUX:") and parent.get(n, "").startswith(
                "SB:") and _reg_of_rmux(n) not in used_nodes]
            sites.sort(key=lambda n: depth[n])
            for n in sites:
                sub = below[n]
                if all(need.get(s, 0) >= 1 for s in sub):
                    enabled.add(n)
                    for s in sub:
                        need[s] -= 1
            if enabled:
                routes[net.name] = r = self.with_regs(r, enabled)
                used_nodes.update(r.nodes())
            for s, k in need.items():
                if k > 0:
                    r = self._detour(r, s, base_regs[s] + deficit[s], used_nodes)
                    if r is not None:
                        routes[net.name] = r
                        used_nodes.update(r.nodes())
                        k = 0
                    r = routes[net.name]
                deficit[s] = k
                if k == 0:
                    del deficit[s]
        # pass 4: PE input registers
        pe_regs: list[tuple[str, str]] = []
        fields_set: dict[str, dict[str, int]] = {}
        for (inst, port), k in list(deficit.items()):
            if k <= 0:
                continue
            net = self.net_by_name[self.driver[(inst, port)]]
            rg = self.graphs[net.width]
            cp = self._core_port(inst, port, rg)
            fname = self.p.input_reg_field.format(port=cp)
            pi = packed.instances[inst]
            fields = self._pe_fields(inst, rg)
            if k == 1 and fname in fields and cp not in pi.input_regs and cp not in pi.consts:
                pe_regs.append((inst, cp))
                fields_set.setdefault(inst, {})[fname] = 1
                deficit[(inst, port)] = 0
                continue
            raise RoutingError(
                f"branch-delay matching: net {net.name} reaches {inst}.{port} {k} cycle(s) "
                f"earlier than the PE's other operands and its route has no free pipeline-"
                f"register site left (and no MEM schedule to absorb it); fix: add pipeline "
                f"registers on more tracks, or re-place with another seed")
        return {"routes": routes, "sigma_out": sigma_out, "absorbed": absorbed,
                "enabled": enabled, "pe_regs": pe_regs, "fields": fields_set}

    def _detour(self, route: NetRoute, sink: Terminal, total: int, used: set[str]
                ) -> NetRoute | None:
        """Re-route ``sink``'s branch of ``route`` through free nodes so that its path holds
        exactly ``total`` extra registers (a search over (node, registers so far) states,
        registers counted when the path enters a ``REG`` node). Returns the new route or
        ``None`` when no such branch exists."""
        rg = self.graphs[route.width]
        hop = 2.0 / max(1, int(rg.params.get("track_length", 1)))
        others = [p for t, p in route.paths.items() if t != sink]
        keep: dict[str, list[str]] = {}
        for p in others:
            for k, n in enumerate(p):
                keep.setdefault(n, p[:k + 1])
        root = route.paths[sink][0]
        keep.setdefault(root, [root])
        target = route.paths[sink][-1]
        tidx = rg.index[target]
        tx, ty = rg.xy[tidx]
        mine = set(route.nodes())
        blocked = (used - mine) | set(keep)
        heap: list[tuple[int, int, int, int]] = []
        prev: dict[tuple[int, int], tuple[int, int] | None] = {}
        dist: dict[tuple[int, int], int] = {}
        starts = {}
        for n, prefix in keep.items():
            if n.startswith(("PORT:", "REG:")) and n != root:
                continue
            c = sum(1 for m in prefix[1:] if m.startswith("REG:"))
            if c <= total:
                i = rg.index[n]
                st = (i, c)
                starts[st] = prefix
                dist[st] = 0
                prev[st] = None
                x, y = rg.xy[i]
                heapq.heappush(heap, (hop * (abs(x - tx) + abs(y - ty)), 0, i, c))
        found = None
        while heap:
            _f, g, u, c = heapq.heappop(heap)
            if g > dist.get((u, c), 1 << 30):
                continue
            if u == tidx and c == total:
                found = (u, c)
                break
            for v in rg.succ[u]:
                nid = rg.ids[v]
                kind = rg.kind[v]
                if v != tidx and (nid in blocked or kind == "PORT"):
                    continue
                nc = c + (1 if kind == "REG" else 0)
                if nc > total:
                    continue
                st = (v, nc)
                if g + 1 < dist.get(st, 1 << 30):
                    dist[st] = g + 1
                    prev[st] = (u, c)
                    x, y = rg.xy[v]
                    heapq.heappush(heap, (g + 1 + hop * (abs(x - tx) + abs(y - ty)), g + 1, v, nc))
        if found is None:
            return None
        branch = []
        st: tuple[int, int] | None = found
        while st is not None and st not in starts:
            branch.append(rg.ids[st[0]])
            st = prev[st]
        if st is None:
            return None
        path = starts[st] + branch[::-1]
        paths = dict(route.paths)
        paths[sink] = path
        return NetRoute(route.name, route.width, route.source, paths)

    def _core_port(self, inst: str, port: str, rg: RoutingGraph) -> str:
        x, y = self._sites[inst]
        return self.packed.core_port(inst, port, x, y, rg, "in")

    def _pe_fields(self, inst: str, rg: RoutingGraph) -> set[str]:
        return {f.name for f in rg.tiles[self._sites[inst]].config_fields}

    def sigma_in(self, state: dict[str, Any]) -> dict[Terminal, int]:
        out = {}
        for net in self.packed.nets:
            for s in net.sinks:
                out[s] = state["sigma_out"][net.source] + self.path_regs(
                    state["routes"][net.name].paths[s])
        for inst, cp in state["pe_regs"]:
            for q in self.in_ports[inst]:
                x, y = self._sites[inst]
                net = self.net_by_name[self.driver[(inst, q)]]
                if self.packed.core_port(inst, q, x, y, self.graphs[net.width], "in") == cp:
                    out[(inst, q)] += 1
        return out


def _core_delay(rg: RoutingGraph, xy: tuple[int, int], timing: TimingModel) -> float:
    t = rg.tiles[xy]
    cls = t.timing_class or _TAG_CLASS.get(t.tag, "pe")
    delay = timing.core(cls)
    if delay is None:
        raise ConfigError(f"timing model {timing.source} has no core delay for class '{cls}' "
                          f"(tile {xy}); add it to the 'core' section of the delay table")
    return delay


def timing_analysis(packed: PackedDesign, placement: Placement, routing: RoutingResult,
                    coll: Collateral, params: PipelineParams | None = None,
                    pe_input_regs: list[tuple[str, str]] | None = None) -> TimingReport:
    """Static timing analysis of a routed design (model in the module docstring) with the
    collateral's routing-graph edge delays and timing model.

    Returns the :class:`TimingReport` (critical path in ps). Raises :class:`RoutingError`
    on a combinational loop."""
    p = params or PipelineParams()
    graphs, tbl = coll.graphs, coll.timing
    g = nx.DiGraph()
    start: dict[str, float] = {}
    end: set[str] = set()
    reg_inputs = {(i, cp) for i, cp in (pe_input_regs or [])}
    for name, i in packed.instances.items():
        reg_inputs |= {(name, cp) for cp in i.input_regs}
    pe_out_nodes: dict[str, list[str]] = {}
    pe_in_nodes: dict[str, list[tuple[str, bool]]] = {}
    for net in packed.nets:
        r = routing.nets[net.name]
        rg = graphs[net.width]
        for pth in r.paths.values():
            for a, b in pairwise(pth):
                if b.startswith("REG:"):
                    end.add(b)
                    g.add_edge(a, b, delay=rg.delay(a, b))
                elif a.startswith("REG:"):
                    start[a] = 0.0
                    g.add_edge(a + "#Q", b, delay=rg.delay(a, b))
                    start[a + "#Q"] = 0.0
                else:
                    g.add_edge(a, b, delay=rg.delay(a, b))
        src_inst, _ = net.source
        si = packed.instances[src_inst]
        root = next(iter(r.paths.values()))[0]
        if si.tag != "r":
            xy = placement.sites[src_inst]
            if si.tag == "p" and _latency(packed, src_inst, p) == 0:
                pe_out_nodes.setdefault(src_inst, []).append(root)
            else:
                start[root] = _core_delay(rg, xy, tbl)
        for (inst, port), pth in r.paths.items():
            ti = packed.instances[inst]
            if ti.tag == "r":
                continue
            node = pth[-1]
            if ti.tag == "p" and _latency(packed, inst, p) == 0:
                x, y = placement.sites[inst]
                cp = packed.core_port(inst, port, x, y, rg, "in")
                pe_in_nodes.setdefault(inst, []).append((node, (inst, cp) in reg_inputs))
                if (inst, cp) in reg_inputs:
                    end.add(node)
            else:
                end.add(node)
    for inst, outs in pe_out_nodes.items():
        rg = next(iter(graphs.values()))
        d = _core_delay(rg, placement.sites[inst], tbl)
        core = f"CORE:{inst}"
        for o in outs:
            g.add_edge(core, o, delay=d)
        ins = pe_in_nodes.get(inst, [])
        comb = [n for n, registered in ins if not registered]
        for n in comb:
            g.add_edge(n, core, delay=0.0)
        if len(comb) < len(ins) or not ins:
            start[core] = 0.0
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
        return TimingReport(0.0, float("inf"), [])
    crit = max(ends, key=lambda n: (arr[n], n))
    path = [crit]
    while prev.get(path[-1]) is not None:
        path.append(prev[path[-1]])
    path.reverse()
    period = arr[crit]
    return TimingReport(period, 1e6 / period if period > 0 else float("inf"),
                        [(n, arr[n]) for n in path])


def _shift_program(prog: dict[str, Any], delta: int, where: str) -> dict[str, Any]:
    out = copy.deepcopy(prog)
    sched = out.setdefault("schedule", {})
    sched["offset"] = int(sched.get("offset", 0)) + delta
    if sched["offset"] < 0:
        raise ConfigError(f"{where}: schedule offset {sched['offset']} < 0 after pipelining")
    return out


def pipeline(packed: PackedDesign, placement: Placement, routing: RoutingResult,
             coll: Collateral, params: PipelineParams | None = None) -> PipelineResult:
    """Branch-delay matching, MEM latency absorption, optional compute pipelining and static
    timing analysis of a placed and routed design (see the module docstring).

    Returns a :class:`PipelineResult`; ``packed`` and ``routing`` are not modified (the
    result holds updated copies). Raises :class:`RoutingError` when a deficit cannot be
    balanced, :class:`MappingError` on a feedback loop, :class:`ConfigError` on a timing model
    without a core class or a negative schedule offset.
    """
    t0 = time.perf_counter()
    p = params or PipelineParams()
    d = _Design(packed, routing, coll.graphs, p)
    d._sites = placement.sites
    forced: set[str] = set()
    state = d.balance(forced)

    def make(state: dict[str, Any]) -> tuple[RoutingResult, PackedDesign]:
        rr = RoutingResult(dict(state["routes"]), dict(routing.reg_sites),
                           dict(routing.iterations), routing.seconds, dict(routing.wirelength))
        pk = copy.deepcopy(packed)
        for inst, fs in state["fields"].items():
            pk.instances[inst].fields.update(fs)
        return rr, pk

    rr, pk = make(state)
    timing = timing_analysis(pk, placement, rr, coll, p, state["pe_regs"])
    steps = 0
    while p.target_period_ps is not None and timing.period_ps > p.target_period_ps \
            and steps < p.max_pipeline_steps:
        steps += 1
        names = [n for n, _ in timing.path]
        cands = [(abs(a - timing.period_ps / 2), n) for (n, a), prv in
                 zip(timing.path[1:], names[:-1], strict=True)
                 if n.startswith("RMUX:") and prv.startswith("SB:") and n not in forced]
        if not cands:
            break
        forced.add(min(cands)[1])
        state = d.balance(forced)
        rr, pk = make(state)
        timing = timing_analysis(pk, placement, rr, coll, p, state["pe_regs"])
    sig = d.sigma_in(state)
    # check: every PE sees its operands in the same cycle
    for inst, pi in pk.instances.items():
        if pi.tag == "p":
            vals = {sig[(inst, q)] for q in d.in_ports[inst]}
            if len(vals) > 1:
                raise RoutingError(f"branch-delay matching failed at PE {inst}: operands arrive "
                                   f"with extra latencies {sorted(vals)}")
    # shift memory and output schedules
    out_lat: dict[str, int] = {}
    for inst, pi in pk.instances.items():
        if pi.tag == "m" and "ports" in pi.config:
            ports = dict(pi.config["ports"])
            for port, prog in pi.config["ports"].items():
                if port.startswith("in"):
                    delta = sig.get((inst, port), 0)
                else:
                    src = d.mem_group[inst].get(port)
                    base = sig.get((inst, src), 0) if src else \
                        max((sig.get((inst, q), 0) for q in d.in_ports[inst]), default=0)
                    delta = base + state["absorbed"].get((inst, port), 0)
                if delta:
                    ports[port] = _shift_program(prog, delta, f"MEM {inst} port {port}")
            pi.config["ports"] = ports
        elif pi.tag == "m" and any(sig.get((inst, q), 0) for q in d.in_ports[inst]):
            raise ConfigError(f"MEM {inst}: pipelining delays its inputs by "
                              f"{[sig.get((inst, q), 0) for q in d.in_ports[inst]]} cycles but "
                              f"its config has no 'ports' programs to shift")
        if pi.kind == "io_out" or (pi.tag in ("I", "i") and d.in_ports[inst]):
            lat = max((sig[(inst, q)] for q in d.in_ports[inst]), default=0)
            out_lat[inst] = lat
            if "program" in pi.config and lat:
                pi.config["program"] = _shift_program(pi.config["program"], lat,
                                                      f"IO {inst} output program")
    forced_regs = {_reg_of_rmux(n) for n in forced}
    enabled = sorted({n for r in rr.nets.values() for pth in r.paths.values()
                      for n in pth[1:-1] if n.startswith("REG:")} - forced_regs)
    return PipelineResult(rr, pk, sig, enabled, sorted(forced_regs),
                          dict(state["absorbed"]), list(state["pe_regs"]), out_lat, timing,
                          time.perf_counter() - t0)


def check_balanced(result: PipelineResult) -> None:
    """Raise :class:`RoutingError` unless every PE's operands have equal extra latency."""
    by_inst: dict[str, set[int]] = {}
    for (inst, _port), s in result.sigma_in.items():
        if result.packed.instances[inst].tag == "p":
            by_inst.setdefault(inst, set()).add(s)
    for inst, vals in by_inst.items():
        if len(vals) > 1:
            raise RoutingError(f"PE {inst}: operands arrive with extra latencies {sorted(vals)}")
