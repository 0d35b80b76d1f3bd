"""Cycle-level Python model of the router and mesh of :mod:`canal.router`, with per-link flit
counters; it matches the generated RTL cycle for cycle (tests/canal/test_router_rtl.py checks
every ejected flit's cycle against Verilator).

The state and the per-cycle rules are those of the :mod:`canal.router` docstring (FIFOs per
input VC, table lookup, lowest-pending-port broadcast order, separable input-first
round-robin switch allocation, registered link outputs and credits, credit counters with the
same-cycle credit bypass, on/off injection ``count < buffers``). A cycle is: every router
computes its grants from the current state and its inputs (the neighbours' current output
and credit registers, the injections), then all routers commit together (the clock edge).

Cycle numbering (shared with the Verilator harness of :mod:`canal.router_harness`): cycle 0
is the first clock edge after the tables are loaded. An injection "in cycle t" is on the
inject port before edge t (accepted when ``inj_ready`` of its VC is high, a function of the
state after edge t-1); an ejection "in cycle t" is the eject register after edge t.

Traffic driver (:func:`run_traffic`): each node has one source queue of flits in injection
order; in cycle t the head flit is offered when its ``time <= t`` and accepted when the
router's ``in_ready[vc]`` is high (then the next flit waits for cycle t+1).

Link counters: ``link_flits[(x, y, port)]`` = flits that left router (x, y) through output
``port`` (L = ejected); ``inject_flits[(x, y)]`` flits injected. The thesis's energy model
(eqs. 3.1/3.2: E_net = sum over allocated routers of P_inactive * T_sim + E_flit * #flit)
takes these counts.
"""
from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from cgra.errors import ConfigError, SimulationError

from canal.router import NUM_PORTS, MeshParams, Port, RouterParams, RouterTables, TableEntry

#: a flit on a link or in a buffer: (vc, id, payload)
Flit = tuple[int, int, int]


class RouterModel:
    """State of one router; :meth:`compute` then :meth:`commit` is one clock cycle.

    ``tables``: input port -> flow id -> encoded entry (ints, :meth:`TableEntry.encode`).
    """

    def __init__(self, p: RouterParams, tables: Mapping[int, Mapping[int, int]] | None = None,
                 name: str = "router"):
        self.p = p
        self.name = name
        V = p.vcs
        self.tables = [dict((tables or {}).get(q, {})) for q in range(NUM_PORTS)]
        self.fifo = [[deque() for _ in range(V)] for _ in range(NUM_PORTS)]
        self.sent = [[0] * V for _ in range(NUM_PORTS)]
        self.cred = [[p.buffers] * V for _ in range(self._credited)]
        self.rri = [0] * NUM_PORTS
        self.rro = [0] * NUM_PORTS
        self.out: list[Flit | None] = [None] * NUM_PORTS     # output registers
        self.cr: list[int | None] = [None] * NUM_PORTS       # credit registers (vc)
        self._next = None

    @property
    def _credited(self) -> int:
        """Output ports with credit counters: N, E, S, W, and L when ``eject_credits``."""
        return NUM_PORTS if self.p.eject_credits else NUM_PORTS - 1

    def in_ready(self, port: int) -> list[bool]:
        """Per VC: the FIFO of input ``port`` has room (``count < buffers``)."""
        return [len(f) < self.p.buffers for f in self.fifo[port]]

    def _entry(self, q: int, fid: int) -> tuple[int, list[int]]:
        word = self.tables[q].get(fid, 0)
        vb = self.p.vc_bits
        return word & ((1 << NUM_PORTS) - 1), [
            word >> (NUM_PORTS + o * vb) & ((1 << vb) - 1) for o in range(NUM_PORTS)]

    def compute(self, inputs: Sequence[Flit | None], cin: Sequence[int | None]) -> None:
        """Grants and next state from the current state, the link inputs (one per port) and
        the credit inputs (one per output port: the VC credited, or None; ``cin[4]`` is
        ignored, or with ``eject_credits`` a bit mask of the VCs credited, as the RTL's
        ``ej_credit``)."""
        V = self.p.vcs

        def credit_ok(o: int, u: int) -> bool:
            if o == Port.L and not self.p.eject_credits:
                return True
            return u < V and (self.cred[o][u] != 0 or self._credit_in(cin, o, u))

        info = {}
        for q in range(NUM_PORTS):
            for v in range(V):
                f = self.fifo[q][v]
                if not f:
                    continue
                _, fid, _ = f[0]
                mask, nv = self._entry(q, fid)
                pend = mask & ~self.sent[q][v]
                if not pend:
                    continue
                tgt = (pend & -pend).bit_length() - 1
                if credit_ok(tgt, nv[tgt]):
                    info[q, v] = (pend, tgt, nv)
        # stage 1: per input port, round robin over VCs
        win: dict[int, int] = {}
        for q in range(NUM_PORTS):
            for k in range(V):
                v = (self.rri[q] + k) % V
                if (q, v) in info:
                    win[q] = v
                    break
        # stage 2: per output port, round robin over input ports
        grant: dict[int, int] = {}   # output -> input
        for o in range(NUM_PORTS):
            for k in range(NUM_PORTS):
                q = (self.rro[o] + k) % NUM_PORTS
                if q in win and info[q, win[q]][1] == o:
                    grant[o] = q
                    break
        self._next = (inputs, cin, win, grant, info)

    @staticmethod
    def _credit_in(cin: Sequence[int | None], o: int, u: int) -> bool:
        if o == Port.L:
            return bool((cin[o] or 0) >> u & 1)
        return cin[o] == u

    def commit(self) -> None:
        """The clock edge: apply the state computed by :meth:`compute`."""
        inputs, cin, win, grant, info = self._next
        p, V = self.p, self.p.vcs
        out: list[Flit | None] = [None] * NUM_PORTS
        cr: list[int | None] = [None] * NUM_PORTS
        sent_on = [None] * NUM_PORTS
        for o, q in grant.items():
            v = win[q]
            pend, tgt, nv = info[q, v]
            _, fid, payload = self.fifo[q][v][0]
            out[o] = (nv[o], fid, payload)
            sent_on[o] = nv[o]
            self.rro[o] = (q + 1) % NUM_PORTS
            self.rri[q] = (v + 1) % V
            if pend & ~(1 << tgt):
                self.sent[q][v] |= 1 << tgt
            else:
                self.fifo[q][v].popleft()
                self.sent[q][v] = 0
                cr[q] = v
        for o in range(self._credited):
            for u in range(V):
                self.cred[o][u] += self._credit_in(cin, o, u) - (sent_on[o] == u)
                if not 0 <= self.cred[o][u] <= p.buffers:
                    raise SimulationError(f"{self.name}: credit counter of output "
                                          f"{Port(o).name} VC {u} is {self.cred[o][u]} "
                                          f"(outside 0..{p.buffers}): a credit protocol error")
        for q in range(NUM_PORTS):
            fl = inputs[q]
            if fl is None:
                continue
            vc = fl[0]
            if not 0 <= vc < V:
                raise SimulationError(f"{self.name}: flit on input {Port(q).name} has VC {vc}"
                                      f" outside 0..{V - 1}")
            if len(self.fifo[q][vc]) >= p.buffers:
                raise SimulationError(f"{self.name}: FIFO overflow on input {Port(q).name} "
                                      f"VC {vc} (the upstream ignored credits or in_ready)")
            self.fifo[q][vc].append(fl)
        self.out, self.cr = out, cr
        self._next = None


@dataclass(frozen=True)
class Ejection:
    """A flit leaving the eject register of router (x, y) in ``cycle``."""

    cycle: int
    x: int
    y: int
    vc: int
    id: int
    flit: int


class MeshModel:
    """The mesh of :func:`canal.router.mesh_verilog`: ``tables`` maps (x, y) to the router's
    tables (input port -> id -> :class:`~canal.router.TableEntry`)."""

    def __init__(self, mp: MeshParams,
                 tables: Mapping[tuple[int, int], RouterTables] | None = None):
        self.mp = mp
        p = mp.router
        tables = tables or {}
        self.routers = {}
        for x, y in mp.nodes():
            t = tables.get((x, y), {})
            enc = {int(q): {fid: e.encode(p) for fid, e in ents.items()} for q, ents in t.items()}
            self.routers[x, y] = RouterModel(p, enc, name=f"router ({x}, {y})")
        for xy in tables:
            if xy not in self.routers:
                raise ConfigError(f"routing table for router {xy} outside the "
                                  f"{mp.width}x{mp.height} mesh")
        self.cycle = 0
        self.link_flits: dict[tuple[int, int, Port], int] = {
            (x, y, Port(o)): 0 for x, y in mp.nodes() for o in range(NUM_PORTS)}
        self.inject_flits: dict[tuple[int, int], int] = {xy: 0 for xy in mp.nodes()}

    def inj_ready(self, x: int, y: int) -> list[bool]:
        return self.routers[x, y].in_ready(Port.L)

    def step(self, inject: Mapping[tuple[int, int], Flit],
             eject_credits: Mapping[tuple[int, int], int] | None = None) -> list[Ejection]:
        """One cycle with the given injections (only offered where ``inj_ready``; a flit on a
        VC that is not ready raises SimulationError); returns the ejections of this cycle.
        ``eject_credits``: (x, y) -> bit mask of the VCs whose ejection buffer returns a
        credit this cycle (routers with :attr:`RouterParams.eject_credits`)."""
        mp = self.mp
        for (x, y), fl in inject.items():
            if not self.inj_ready(x, y)[fl[0]]:
                raise SimulationError(f"injection at ({x}, {y}) on VC {fl[0]} while "
                                      "inj_ready is low")
        for (x, y), r in self.routers.items():
            ins: list[Flit | None] = []
            cin: list[int | None] = []
            for o in Port:
                if o is Port.L:
                    ins.append(inject.get((x, y)))
                    cin.append((eject_credits or {}).get((x, y)))
                    continue
                nb = mp.neighbour(x, y, o)
                if nb is None:
                    ins.append(None)
                    cin.append(None)
                else:
                    n = self.routers[nb]
                    ins.append(n.out[o.opposite])
                    cin.append(n.cr[o.opposite])
            r.compute(ins, cin)
        for r in self.routers.values():
            r.commit()
        ej = []
        for (x, y), r in self.routers.items():
            for o in range(NUM_PORTS):
                if r.out[o] is not None:
                    self.link_flits[x, y, Port(o)] += 1
            if r.out[Port.L] is not None:
                vc, fid, fl = r.out[Port.L]
                ej.append(Ejection(self.cycle, x, y, vc, fid, fl))
        for xy in inject:
            self.inject_flits[xy] += 1
        self.cycle += 1
        return ej


@dataclass(frozen=True)
class Injection:
    """One flit offered at node (x, y) from cycle ``time`` on (in per-node queue order)."""

    time: int
    x: int
    y: int
    vc: int
    id: int
    flit: int


@dataclass
class TrafficResult:
    """Ejections in order, the cycle each injection was accepted (same order as given),
    and the link counters."""

    ejections: list[Ejection]
    accepted: list[int]
    link_flits: dict[tuple[int, int, Port], int] = field(default_factory=dict)
    inject_flits: dict[tuple[int, int], int] = field(default_factory=dict)


def run_traffic(mp: MeshParams, tables: Mapping[tuple[int, int], RouterTables],
                injections: Sequence[Injection], cycles: int) -> TrafficResult:
    """Simulate ``cycles`` cycles of the mesh with the source queues of the module docstring.
    Every injection's accepted cycle is -1 when it was still queued at the end."""
    m = MeshModel(mp, tables)
    queues: dict[tuple[int, int], deque[int]] = {xy: deque() for xy in mp.nodes()}
    for i, inj in enumerate(injections):
        if (inj.x, inj.y) not in queues:
            raise ConfigError(f"injection at ({inj.x}, {inj.y}) outside the "
                              f"{mp.width}x{mp.height} mesh")
        queues[inj.x, inj.y].append(i)
    accepted = [-1] * len(injections)
    ejections: list[Ejection] = []
    for t in range(cycles):
        offer = {}
        for xy, qu in queues.items():
            if qu:
                inj = injections[qu[0]]
                if inj.time <= t and m.inj_ready(*xy)[inj.vc]:
                    offer[xy] = (inj.vc, inj.id, inj.flit)
                    accepted[qu.popleft()] = t
        ejections.extend(m.step(offer))
    return TrafficResult(ejections, accepted, dict(m.link_flits), dict(m.inject_flits))


# ---------------------------------------------------------------- single-router testbench

@dataclass(frozen=True)
class LoadPoint:
    """Uniform random traffic on one router: ``offered`` flits/cycle/input, ``accepted``
    flits/cycle/output port, mean ``latency`` in cycles (injection offer to switch
    traversal, source queueing included) of the flits delivered."""

    offered: float
    accepted: float
    latency: float


def router_uniform_load(p: RouterParams, offered: float, cycles: int = 4000,
                        warmup: int = 500, seed: int = 0) -> LoadPoint:
    """One router, all 5 inputs driven by Bernoulli sources of rate ``offered`` (each flit to
    an output drawn uniformly from the 5 ports; flow id = output port, VC = output mod vcs);
    every output is a sink that returns its credit in the next cycle. Throughput is counted
    after ``warmup`` cycles. With vcs = 1 this is the FIFO input-queued switch of Karol,
    Hluchyj and Morgan, "Input versus output queueing on a space-division packet switch",
    IEEE Trans. Commun. 35(12), 1987: saturation 2 - sqrt(2) = 0.586 for N -> inf, 0.6399 for
    N = 5 (their Table I). Deterministic for a seed."""
    if not 0 <= offered <= 1:
        raise ConfigError(f"offered load {offered} must be in [0, 1] flits/cycle/input")
    rng = random.Random(seed)
    V = p.vcs
    tables = {q: {o: TableEntry(frozenset({Port(o)}), {Port(o): o % V}).encode(p)
                  for o in range(NUM_PORTS)} for q in range(NUM_PORTS)}
    r = RouterModel(p, tables)
    src: list[deque[tuple[int, int]]] = [deque() for _ in range(NUM_PORTS)]  # (time, dst)
    delivered = 0
    lat_sum = 0
    lat_n = 0
    for t in range(cycles):
        for q in range(NUM_PORTS):
            if rng.random() < offered:
                src[q].append((t, rng.randrange(NUM_PORTS)))
        ins: list[Flit | None] = [None] * NUM_PORTS
        ready = [r.in_ready(q) for q in range(NUM_PORTS)]
        for q in range(NUM_PORTS):
            if src[q]:
                t0, d = src[q][0]
                if ready[q][d % V]:
                    src[q].popleft()
                    ins[q] = (d % V, d, t0)
        cin = [fl[0] if fl is not None else None for fl in r.out]
        r.compute(ins, cin)
        r.commit()
        for fl in r.out:
            if fl is not None and t >= warmup:
                delivered += 1
                lat_sum += t - fl[2]
                lat_n += 1
    n = cycles - warmup
    return LoadPoint(offered, delivered / (n * NUM_PORTS), lat_sum / lat_n if lat_n else 0.0)


# ---------------------------------------------------------------- energy (thesis eqs. 3.1/3.2)

def flit_energy(power_w: float, inactive_w: float, testbench_s: float, flits: int) -> float:
    """Marginal energy of one flit in joules, thesis eq. 3.1:
    ``E_flit = (P - P_inactive) * T_testbench / #flit`` (P and P_inactive in watts measured
    on a testbench of ``testbench_s`` seconds that moved ``flits`` flits).
    Raises ConfigError when ``flits`` < 1 or P < P_inactive."""
    if flits < 1 or power_w < inactive_w:
        raise ConfigError(f"flit_energy: need flits >= 1 and P >= P_inactive (got flits="
                          f"{flits}, P={power_w} W, P_inactive={inactive_w} W)")
    return (power_w - inactive_w) * testbench_s / flits


def network_energy(allocated: int, inactive_w: float, sim_s: float, e_flit_j: float,
                   flits: int) -> float:
    """Network energy in joules, thesis eq. 3.2 for one resource type:
    ``E_net = sum over allocated (P_inactive * T_sim) + E_flit * #flit``; unallocated routers
    are power-gated (0 J). ``flits`` is the sum of :attr:`TrafficResult.link_flits`."""
    return allocated * inactive_w * sim_s + e_flit_j * flits
