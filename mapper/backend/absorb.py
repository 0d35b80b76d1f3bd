"""Register-chain absorption: long chains of balancing registers become one MEM delay line.

Source: Cascade (Zhang et al., "Cascade: An Application Pipelining Toolkit for
Coarse-Grained Reconfigurable Arrays", ACM TRETS 2023), register-chain absorption into
memories (the reference flow is StanfordAHA archipelago). In our flow the chains appear after
routing: branch-delay matching (:mod:`mapper.backend.pipeline`) fills a short branch with switch-box
pipeline registers, and on a kernel whose branches differ by many PE stages (harris on 32x16
at 900 MHz: sink paths with 7-12 balancing registers) that spends a register site per cycle
of latency.

The pass, a function from a routed and pipelined design to another one:

1. **Chains** (:func:`plan_delay_lines`): for every PE sink, the *balancing* registers on its
   routed path (:attr:`PipelineResult.enabled_regs`: neither forced by register insertion,
   nor mandatory, nor a netlist register's site). A net whose PE sinks carry ``min_chain`` or
   more of them (data width only: a MEM word is that wide) gets a delay line of ``D`` =
   the smallest such chain (cycles); those sinks move behind it.
2. **Delay lines** (:func:`insert_delay_lines`): each is a new MEM instance (``dly_<net>``),
   a circular buffer written every cycle from the net's stream and read ``D0 -
   read_latency`` cycles later (:func:`mapper.mapping.memory.delay_line_programs`: the programs of a
   stencil delay line), over the whole run (``span``: the last scheduled cycle of any
   program + 1), with words for up to ``2 * chain + 8`` cycles. ``D0`` is the MEM's shortest
   delay (:func:`shortest_delay`) and its config records ``balance_delay`` = ``D0``: unlike a
   stencil tap, this latency is *not* intended, so pipelining counts it as extra latency of
   the output (``sigma_out = sigma_in + D0 + e``), and branch-delay matching reads the line
   ``e`` cycles later (its first resource: a MEM read schedule), ``e`` the deficit the moved
   sinks still have after the new routes. The delay is therefore what the placed and routed
   detour leaves, never more (a longer one would make every other operand of the sink
   late).
3. The flow (:func:`mapper.backend.absorb.absorb_chains`) places, routes and pipelines the new design
   with the same seed and keeps it only when it closes, meets the clock target when the
   original did (else reaches at least its Fmax), and uses fewer registers.
"""
from __future__ import annotations

import copy
import dataclasses
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cgra.errors import MappingError, PlacementError, RoutingError
from mapper.mapping.memory import MemSpec, Segment, check_program, delay_line_programs
from mapper.backend.pack import PackedDesign, PackedInstance, PackedNet
from mapper.backend.checks import check_placed, check_routed
from mapper.backend.nets import Terminal
from mapper.backend.pipeline import PassReport, pipeline, registers_of
from mapper.backend.place import check_capacity, place
from mapper.backend.route import route_design

if TYPE_CHECKING:
    from mapper.collateral import Collateral
    from mapper.params import FlowParams, Step
    from mapper.backend.pipeline import PipelineResult
    from mapper.backend.place import Placement
    from mapper.backend.route import RoutingResult

#: the smallest chain the pass accepts: shorter delays stay registers (the memory mapper's
#: shift-register threshold, :data:`mapper.mapping.memory.DEFAULT_SR_THRESHOLD`, is 4)
MIN_CHAIN = 4


@dataclass(frozen=True)
class DelayLine:
    """One planned delay line: the net it cuts, the PE sinks that move behind it and its
    latency ``cycles``."""

    net: str
    sinks: tuple[Terminal, ...]
    cycles: int

    @property
    def mem(self) -> str:
        """Name of the MEM instance."""
        return f"dly_{self.net}"


def balancing_chains(pr: PipelineResult) -> dict[Terminal, tuple[str, int]]:
    """PE sink -> (net, balancing registers on its routed path) for every PE sink of
    ``pr`` with at least one."""
    enabled = set(pr.enabled_regs)
    out: dict[Terminal, tuple[str, int]] = {}
    for name, route in pr.routing.nets.items():
        for sink, path in route.paths.items():
            if pr.packed.instances[sink[0]].tag != "p":
                continue
            k = sum(1 for n in path[1:-1] if n in enabled)
            if k:
                out[sink] = (name, k)
    return out


def check_min_chain(min_chain: int, spec: MemSpec) -> None:
    """Raise :class:`MappingError` when ``min_chain`` is below :data:`MIN_CHAIN` or below
    what MEM ``spec`` can delay at full rate (``spec.min_delay + spec.read_latency``
    cycles: 8 on the PUB, as the memory mapper's shortest delay line)."""
    floor = max(MIN_CHAIN, spec.min_delay + spec.read_latency)
    if min_chain < floor:
        raise MappingError(f"register absorption: chains of {min_chain} register(s) are too "
                           f"short for a delay line on MEM {spec.name}; use --absorb "
                           f"{floor} or more")


def plan_delay_lines(pr: PipelineResult, min_chain: int, word_width: int,
                     spec: MemSpec) -> list[DelayLine]:
    """The delay lines worth building (module docstring, step 1), sorted by net name.
    Raises :class:`MappingError` as :func:`check_min_chain`."""
    check_min_chain(min_chain, spec)
    widths = {n.name: n.width for n in pr.packed.nets}
    by_net: dict[str, list[tuple[Terminal, int]]] = {}
    for sink, (net, k) in balancing_chains(pr).items():
        if k >= min_chain and widths[net] == word_width:
            by_net.setdefault(net, []).append((sink, k))
    return [DelayLine(net, tuple(sorted(s for s, _ in got)), min(k for _, k in got))
            for net, got in sorted(by_net.items())]


def last_cycle(packed: PackedDesign) -> int:
    """The last scheduled cycle of any MEM port or IO program of ``packed`` (nominal,
    before pipelining)."""
    last = 0
    for inst in packed.instances.values():
        progs = list(inst.config.get("ports", {}).values())
        if "program" in inst.config:
            progs.append(inst.config["program"])
        for prog in progs:
            sched = prog.get("schedule", {})
            end = int(sched.get("offset", 0)) + sum(
                (int(e) - 1) * int(s) for e, s in zip(prog.get("extents", []),
                                                      sched.get("strides", []), strict=False))
            last = max(last, end)
    return last


def shortest_delay(spec: MemSpec) -> int:
    """The shortest delay (cycles) of a delay line on MEM ``spec``: 2 (a read one cycle
    after the write), or ``min_delay + read_latency`` (8 on the PUB)."""
    return max(2, spec.min_delay + spec.read_latency)


def delay_line_config(line: DelayLine, spec: MemSpec, preset: str, span: int
                      ) -> dict[str, Any]:
    """The MEM instance config of ``line``: Lake port programs ``data_in_0`` /
    ``data_out_0`` over ``span`` cycles for the shortest delay ``D0``
    (:func:`shortest_delay`), a circular buffer of words for up to ``2 * cycles + 8``
    cycles (capped by the MEM: pipelining reads later by the deficit it finds, as a stencil
    tap's read schedule absorbs one), one segment, ``balance_delay`` = ``D0``. Raises
    :class:`MappingError` when the programs do not fit the MEM's counters."""
    rl = spec.read_latency
    d0 = shortest_delay(spec)
    longest = min(2 * line.cycles + 8, spec.capacity + rl - 1)
    words = min(spec.capacity, -(-(longest - rl + 1) // spec.fetch_width) * spec.fetch_width)
    seg = Segment((f"balance:{line.net}", 0), 0, [d0], words)
    seg.tile, seg.address, seg.in_port, seg.out_ports = 0, 0, 0, [0]
    write, reads = delay_line_programs(seg, 0, span, spec)
    for port, prog in (("data_in_0", write), ("data_out_0", reads[0])):
        check_program(prog, spec, f"delay line {line.mem} port {port}")
    return {"preset": preset, "ports": {"data_in_0": write, "data_out_0": reads[0]},
            "segments": [{"buffer": f"balance:{line.net}", "lane": 0, "base": 0,
                          "taps": [d0], "words": words, "address": 0,
                          "passthrough": False, "in_port": 0, "out_ports": [0]}],
            "balance_delay": d0}


def insert_delay_lines(packed: PackedDesign, lines: list[DelayLine], spec: MemSpec,
                       preset: str) -> PackedDesign:
    """A copy of ``packed`` (un-pipelined: nominal programs) with each delay line of
    ``lines`` inserted (module docstring, step 2): the MEM ``dly_<net>`` joins net ``net``
    as a sink, and a new net ``<net>_dly`` from its ``data_out_0`` drives the moved sinks.
    Raises :class:`MappingError` as :func:`delay_line_config`, or when an instance or net of
    that name already exists."""
    out = copy.deepcopy(packed)
    span = last_cycle(packed) + 1
    nets = {n.name: n for n in out.nets}
    for line in lines:
        if line.mem in out.instances or f"{line.net}_dly" in nets:
            raise MappingError(f"register absorption: {line.mem} / {line.net}_dly already "
                               f"exist in design {packed.name}")
        net = nets[line.net]
        out.instances[line.mem] = PackedInstance(line.mem, "mem", "m",
                                                 delay_line_config(line, spec, preset, span))
        moved = set(line.sinks)
        net.sinks = [s for s in net.sinks if s not in moved] + [(line.mem, "data_in_0")]
        new = PackedNet(f"{line.net}_dly", net.width, (line.mem, "data_out_0"),
                        list(line.sinks))
        out.nets.append(new)
        nets[new.name] = new
    return out


def delay_lines_of(packed: PackedDesign, absorbed: dict[Terminal, int] | None = None
                   ) -> list[dict[str, Any]]:
    """The delay lines of a design (``[{mem, net, cycles, sinks}]``, for reports):
    ``cycles`` = the shortest delay plus what pipelining absorbed into the read
    (``absorbed``: :attr:`PipelineResult.mem_absorbed`)."""
    out = []
    for name, inst in packed.instances.items():
        if "balance_delay" in inst.config:
            src = next(n for n in packed.nets if n.source == (name, "data_out_0"))
            out.append({"mem": name, "net": src.name.removesuffix("_dly"),
                        "cycles": int(inst.config["balance_delay"])
                        + (absorbed or {}).get((name, "data_out_0"), 0),
                        "sinks": [list(s) for s in src.sinks]})
    return out


# ---------------------------------------------------------------------------- the pass
def absorb_chains(packed, placement: Placement, routing: RoutingResult, pr: PipelineResult,
                  coll: Collateral, p: FlowParams, say: Step | None = None
                  ) -> tuple[Any, Placement, RoutingResult, PipelineResult, dict[str, Any]]:
    """Register-chain absorption (:mod:`mapper.backend.absorb`) of the closed design ``packed`` /
    ``placement`` / ``routing`` / ``pr``, in rounds (at most :data:`ABSORB_ROUNDS`): plan the
    delay lines (chains of ``p.absorb_chains`` balancing registers or more), insert them,
    place only them (every other instance keeps its site), then route and pipeline. A round
    is kept when it closes, meets the clock target when the design before it did (else
    reaches at least its Fmax) and uses fewer registers; the next round plans on it. The
    rounds stop at the first round that is not kept or plans nothing. When a round is kept
    the passes end with one ``register absorption`` :class:`~mapper.backend.pipeline.PassReport`.

    Returns (packed, placement, routing, pipelined design) kept and a report ``{min_chain,
    rounds: [{delay_lines, registers, fmax_mhz, kept, reason}], delay_lines, kept,
    registers_before, registers_after, seconds}``. Raises :class:`MappingError` for a
    ``min_chain`` the design's MEM cannot serve."""
    t0 = time.perf_counter()
    say = say or (lambda _m: None)
    check_absorb(p, coll)
    spec = MemSpec.from_info(coll.mem)
    preset = spec.name
    target = p.pipeline.target_period_ps
    best = (packed, placement, routing, pr)
    rounds: list[dict[str, Any]] = []
    for _k in range(ABSORB_ROUNDS):
        pk0, pl0, rr0, pr0 = best
        lines = plan_delay_lines(pr0, p.absorb_chains, coll.data_width, spec)
        row: dict[str, Any] = {"delay_lines": len(lines), "kept": False}
        rounds.append(row)
        if not lines:
            row["reason"] = f"no net carries {p.absorb_chains} or more balancing registers"
            break
        say(f"register absorption: {len(lines)} delay line(s); route and pipeline again")
        moved = {s for line in lines for s in line.sinks}
        # every other route is kept (the first PathFinder iteration starts from it)
        keep = {name: {s: path for s, path in r.paths.items() if s not in moved}
                for name, r in rr0.nets.items()}
        try:
            new = insert_delay_lines(pk0, lines, spec, preset)
            check_capacity(new, coll, ("m",))
            pl2 = place(new, coll, dataclasses.replace(p.place, seed=pl0.seed,
                                                       alpha=pl0.alpha, fixed=dict(pl0.sites)))
            check_placed("absorption: place", new, pl2, coll)
            rr2 = route_design(new, pl2, coll, p.route, keep=keep)
            check_routed("absorption: route", new, rr2, coll)
            pr2 = pipeline(new, pl2, rr2, coll, p.pipeline)
        except (MappingError, PlacementError, RoutingError) as exc:
            row["reason"] = f"the design with delay lines did not close: {exc}"
            break
        regs, before = registers_of(pr2), registers_of(pr0)
        row.update(registers=regs, fmax_mhz=round(pr2.timing.fmax_mhz, 2))
        met = target is not None and pr0.timing.period_ps <= target + 1e-6
        if met and pr2.timing.period_ps > target + 1e-6:
            row["reason"] = (f"the design with delay lines misses the target "
                             f"({pr2.timing.fmax_mhz:.1f} MHz)")
        elif not met and pr2.timing.fmax_mhz < pr0.timing.fmax_mhz - 1e-6:
            row["reason"] = (f"the design with delay lines is slower "
                             f"({pr2.timing.fmax_mhz:.1f} < {pr0.timing.fmax_mhz:.1f} MHz)")
        elif regs >= before:
            row["reason"] = f"not fewer registers ({regs} >= {before})"
        else:
            row["kept"], row["reason"] = True, "fewer registers"
            best = (new, pl2, rr2, pr2)
            continue
        break
    packed2, pl2, rr2, pr2 = best
    kept = pr2 is not pr
    info: dict[str, Any] = {
        "min_chain": p.absorb_chains, "rounds": rounds, "kept": kept,
        "delay_lines": sum(r["delay_lines"] for r in rounds if r["kept"]),
        "registers_before": registers_of(pr), "registers_after": registers_of(pr2),
        "seconds": round(time.perf_counter() - t0, 3)}
    if kept:
        pr2.unpipelined = pr.unpipelined        # the baseline stays the design before absorption
        last = pr2.passes[-1] if pr2.passes else None
        pr2.passes = list(pr.passes) + [PassReport(
            "register absorption", pr2.timing.period_ps, pr2.timing.fmax_mhz, registers_of(pr2),
            max(pr2.output_latency.values(), default=0), last.reroutes if last else 0,
            time.perf_counter() - t0)]
    return packed2, pl2, rr2, pr2, info


#: rounds of :func:`absorb_chains` (each routes and pipelines the design once more)
ABSORB_ROUNDS = 3


def check_absorb(p: FlowParams, coll: Collateral) -> None:
    """Refuse a ``p.absorb_chains`` the design's MEM cannot serve, before any placement."""
    if coll.mem is None:
        raise MappingError(f"--absorb {p.absorb_chains}: the design has no MEM tiles to hold "
                           f"delay lines; drop --absorb")
    check_min_chain(p.absorb_chains, MemSpec.from_info(coll.mem))


__all__ = ["ABSORB_ROUNDS", "absorb_chains", "check_absorb", "MIN_CHAIN", "DelayLine", "balancing_chains", "check_min_chain", "plan_delay_lines", "last_cycle",
           "shortest_delay", "delay_line_config", "insert_delay_lines", "delay_lines_of"]
