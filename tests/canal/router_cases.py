"""Seeded random traffic on the dynamic mesh for the router tests: flows (XY routes, some
broadcasts) kept only when the VC allocator accepts them, packets of ``data_width`` bits
split into ``flits_per_packet`` flits (LSB part first) at random times per source."""
from __future__ import annotations

import random
from dataclasses import dataclass

from cgra.errors import RoutingError

from canal.netsim import Ejection, Injection
from canal.router import MeshParams, Port
from canal.vc_alloc import Allocation, Flow, Link, allocate


@dataclass
class Case:
    alloc: Allocation
    injections: list[Injection]
    #: (flow id, destination) -> payload flits in send order
    expected: dict[tuple[int, tuple[int, int]], list[int]]
    cycles: int


def random_case(mp: MeshParams, seed: int, flows: int = 8, max_packets: int = 6,
                horizon: int = 60, cycles: int = 260) -> Case:
    rng = random.Random(seed)
    p = mp.router
    nodes = list(mp.nodes())
    chosen: list[Flow] = []
    for _ in range(flows * 4):
        if len(chosen) == flows:
            break
        src = rng.choice(nodes)
        k = rng.choice((1, 1, 1, 2, 3))
        dsts = tuple(rng.sample([n for n in nodes if n != src], k))
        cand = Flow(len(chosen), src, dsts)
        try:
            allocate(mp, [*chosen, cand])
        except RoutingError:
            continue
        chosen.append(cand)
    alloc = allocate(mp, chosen)
    n = p.flits_per_packet
    packets = []   # (time, fid, seq, data)
    for f in chosen:
        times = sorted(rng.randrange(horizon) for _ in range(rng.randint(1, max_packets)))
        packets += [(t, f.id, s, rng.getrandbits(p.data_width)) for s, t in enumerate(times)]
    packets.sort()
    inj: list[Injection] = []
    expected: dict[tuple[int, tuple[int, int]], list[int]] = {}
    mask = (1 << p.flit_width) - 1
    for t, fid, _, data in packets:
        f = alloc.trees[fid].flow
        flits = [data >> (i * p.flit_width) & mask for i in range(n)]
        for fl in flits:
            inj.append(Injection(t, f.src[0], f.src[1], alloc.inject_vc(fid), fid, fl))
        for d in f.dsts:
            expected.setdefault((fid, d), []).extend(flits)
    return Case(alloc, inj, expected, cycles)


def received(ejections: list[Ejection]) -> dict[tuple[int, tuple[int, int]], list[int]]:
    """(flow id, destination) -> payload flits in ejection order."""
    out: dict[tuple[int, tuple[int, int]], list[int]] = {}
    for e in ejections:
        out.setdefault((e.id, (e.x, e.y)), []).append(e.flit)
    return out


def packet_cycles(ejections: list[Ejection], flits_per_packet: int
                  ) -> dict[tuple[int, tuple[int, int]], list[int]]:
    """(flow id, destination) -> the delivery cycle of each packet (its last flit)."""
    per: dict[tuple[int, tuple[int, int]], list[int]] = {}
    for e in ejections:
        per.setdefault((e.id, (e.x, e.y)), []).append(e.cycle)
    return {k: v[flits_per_packet - 1::flits_per_packet] for k, v in per.items()}


def eject_vcs_ok(alloc: Allocation, ejections: list[Ejection]) -> bool:
    """Every flit leaves on the VC the allocator gave its flow on that ejection link."""
    return all(alloc.vcs[e.id][Link(e.x, e.y, Port.L)] == e.vc for e in ejections)
