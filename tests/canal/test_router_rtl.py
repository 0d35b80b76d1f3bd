"""The generated router mesh (Verilator) against the Python model :mod:`canal.netsim`:
every ejected flit in the same cycle, on 20 seeded random 4x4 traffic cases (multi-flit
packets, broadcasts, random injection times, 5 heavy cases), plus the config bus."""
from __future__ import annotations

import pytest
from router_cases import eject_vcs_ok, packet_cycles, random_case, received

from canal.netsim import Injection, run_traffic
from cgra.config import config_address

from canal.router import MeshParams, Port, RouterParams
from canal.router_harness import build_mesh_harness, run_mesh_harness
from canal.vc_alloc import Flow, allocate

#: 2 VCs, 3 buffers, 8-bit flits, 16-bit packets (2 flits each), 16 flow ids
MESH = MeshParams(4, 4, RouterParams(vcs=2, buffers=3, flit_width=8, data_width=16, ids=16))
SEEDS = range(20)
#: seeds 15..19 are heavy: 12 flows, up to 12 packets each within 20 cycles (back-pressure
#: from full FIFOs and credit stalls on every shared link)
HEAVY = {"flows": 12, "max_packets": 12, "horizon": 20}


@pytest.fixture(scope="session")
def mesh_harness(tmp_path_factory):
    """The 4x4 mesh harness, built once per content hash under the pytest temp root (shared
    by the sessions and xdist workers that pytest keeps)."""
    cache = tmp_path_factory.getbasetemp().parent / "router_build"
    return build_mesh_harness(MESH, cache)


@pytest.fixture(scope="module")
def rtl_runs(mesh_harness, tmp_path_factory):
    d = tmp_path_factory.mktemp("router_vectors")
    runs = {}
    for seed in SEEDS:
        case = random_case(MESH, seed, **(HEAVY if seed >= 15 else {}))
        py = run_traffic(MESH, case.alloc.tables(), case.injections, case.cycles)
        rtl = run_mesh_harness(mesh_harness, case.alloc.config_writes(), case.injections,
                               case.cycles, d / f"case{seed}.txt")
        runs[seed] = (case, py, rtl)
    return runs


@pytest.mark.parametrize("seed", SEEDS)
def test_python_model_equals_verilator(rtl_runs, seed):
    case, py, (ej, acc) = rtl_runs[seed]
    assert len(ej) == sum(len(v) for v in case.expected.values())
    assert py.ejections == ej            # every flit: same cycle, node, VC, id, payload
    assert py.accepted == acc            # every injection accepted in the same cycle
    n = MESH.router.flits_per_packet
    assert packet_cycles(py.ejections, n) == packet_cycles(ej, n)
    # delivered exactly once and in order per flow and destination, on the allocated VC
    assert received(ej) == case.expected
    assert eject_vcs_ok(case.alloc, ej)


def test_cases_cover_broadcast_and_contention(rtl_runs):
    """The 20 cases exercise broadcasts and shared links (VC 1 in use), and the comparison
    covers several thousand flits."""
    flows = [t.flow for case, _, _ in rtl_runs.values() for t in case.alloc.trees.values()]
    assert sum(len(f.dsts) > 1 for f in flows) >= 20
    assert all(case.alloc.vcs_used() == 2 for case, _, _ in rtl_runs.values())
    flits = sum(len(rtl[0]) for _, _, rtl in rtl_runs.values())
    print(f"cycle-equal ejected flits over {len(rtl_runs)} cases: {flits}")
    assert flits > 1000


def test_zero_load_latency_rtl(mesh_harness, tmp_path):
    """One flit (0, 0) -> (3, 3): 6 hops, ejected in cycle 1 + 2 * 6 = 13 in both (the
    :mod:`canal.router` pipeline: 1 cycle into the source FIFO, 2 per hop)."""
    alloc = allocate(MESH, [Flow(5, (0, 0), ((3, 3),))])
    inj = [Injection(0, 0, 0, 0, 5, 0xA5)]
    ej, acc = run_mesh_harness(mesh_harness, alloc.config_writes(), inj, 20, tmp_path / "v")
    assert [(e.cycle, e.x, e.y, e.id, e.flit) for e in ej] == [(13, 3, 3, 5, 0xA5)]
    assert acc == [0]


def test_tables_read_back_through_the_config_bus(mesh_harness, tmp_path):
    """Every routing-table entry written reads back (read_data = OR over the routers, each 0
    unless addressed); an unwritten entry and an address outside the tables read 0."""
    alloc = allocate(MESH, [Flow(0, (0, 0), ((3, 3), (1, 2))), Flow(7, (2, 1), ((0, 1),))])
    writes = alloc.config_writes()
    assert len(writes) == 9 + 3            # routers on the two trees
    empty = config_address(8, Port.N, 3, 3)
    outside = config_address(0, 9, 1, 1)
    got: dict[int, int] = {}
    run_mesh_harness(mesh_harness, writes, [], 1, tmp_path / "v",
                     reads=[a for a, _ in writes] + [empty, outside], read_back=got)
    assert got == {**dict(writes), empty: 0, outside: 0}
