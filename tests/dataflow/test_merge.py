"""SARA global merging (mapper.dataflow.merge): VUs packed into PUs by sum/max/union
reductions, traversal vs MILP merger, the "units run out" error."""
from __future__ import annotations

import networkx as nx
import pytest

from cgra.errors import MappingError
from mapper.dataflow.merge import (
    VUCost,
    best_traversal_merge,
    check_merge,
    group_cost,
    solver_merge,
    traversal_merge,
)
from mapper.dataflow.partition import part_cost
from mapper.dataflow.units import PUConstraints


def unit(kind="pcu", stages=6, vin=4, vout=4, sin=6, sout=4, registers=16,
         ops=("add", "mul", "exp"), lanes=16, count=None) -> PUConstraints:
    return PUConstraints(kind, stages, {"scalar": sin, "vector": vin},
                         {"scalar": sout, "vector": vout}, registers, frozenset(ops), lanes,
                         count)


def vu(ops=2, vin=0, vout=1, registers=4, op_set=("add",), lanes=16) -> VUCost:
    return VUCost(ops, {"vector": vin}, {"vector": vout}, registers, frozenset(op_set), lanes)


def chain(n: int, ops: int = 2) -> nx.DiGraph:
    g = nx.DiGraph()
    for k in range(n):
        g.add_node(k, cost=vu(ops=ops, vin=1 if k else 0))
        if k:
            g.add_edge(k - 1, k, width="vector")
    return g


def test_chain_merges_three_per_unit():
    # 6 VUs of 2 ops on 6-stage PCUs: 3 per unit (each group: 2 vector sources <= 4)
    g = chain(6)
    for merged in (traversal_merge(g, [unit()]), solver_merge(g, [unit()])):
        assert merged.units == {"pcu": 2}
        assert check_merge(g, merged, [unit()]) == []
        assert sorted(len(m) for m in merged.groups().values()) == [3, 3]
    assert solver_merge(g, [unit()]).optimal is True


def test_reductions_sum_max_union_and_broadcast_once():
    g = nx.DiGraph()
    g.add_node("s", cost=vu(ops=1, vout=1))
    g.add_node("a", cost=VUCost(2, {"vector": 1, "scalar": 2}, {"vector": 1}, 5,
                                frozenset({"add"}), 8))
    g.add_node("b", cost=VUCost(3, {"vector": 2}, {"vector": 2}, 7, frozenset({"mul"}), 16))
    g.add_edge("s", "a", width="vector")
    g.add_edge("s", "b", width="vector")
    got = group_cost(g, ["a", "b"])
    assert got.ops == 5  # sum
    # a: s + 0 external vector, b: s + 1 external; s is broadcast to both: 1 + 0 + 1
    assert got.inputs == {"scalar": 2, "vector": 2, "bit": 0}
    assert got.outputs == {"scalar": 0, "vector": 3, "bit": 0}  # sum
    assert got.registers == 7 and got.lanes == 16  # max
    assert got.op_set == frozenset({"add", "mul"})  # union


def test_solver_beats_first_fit():
    # bin packing on 8 stages: 4+2+2 and 3+3+2 fit 2 units; the traversal keeps one open
    # unit and goes 4+3 | 3+2+2 | 2: 3 units
    g = nx.DiGraph()
    for k, ops in enumerate([4, 3, 3, 2, 2, 2]):
        g.add_node(k, cost=vu(ops=ops))
    pus = [unit(stages=8)]
    assert best_traversal_merge(g, pus).units == {"pcu": 3}
    got = solver_merge(g, pus)
    assert got.units == {"pcu": 2} and got.optimal is True
    assert sorted(sorted(g.nodes[v]["cost"].ops for v in m)
                  for m in got.groups().values()) == [[2, 2, 4], [2, 3, 3]]
    assert check_merge(g, got, pus) == []


def test_heterogeneous_units_and_feasibility():
    # "mul" runs on a PCU only; there is one PCU and two PMUs
    g = nx.DiGraph()
    g.add_node("add0", cost=vu(ops=4))
    g.add_node("mul", cost=vu(ops=4, op_set=("mul",)))
    g.add_node("add1", cost=vu(ops=4))
    pus = [unit("pcu", stages=4, count=1), unit("pmu", stages=4, ops=("add",), count=2)]
    # traversal: add0 takes the only PCU, then mul has no PCU left
    with pytest.raises(MappingError, match=r"merging needs 2 pcu units, the array has 1 "
                                           r"\(short by 1\)"):
        traversal_merge(g, pus)
    got = solver_merge(g, pus)
    assert got.units == {"pcu": 1, "pmu": 2}
    assert got.assignment["mul"] == ("pcu", 0)
    assert check_merge(g, got, pus) == []


def test_units_run_out():
    g = nx.DiGraph()
    for k in range(9):
        g.add_node(k, cost=vu(ops=3))
    pus = [unit("pmu", stages=4, ops=("add",), count=8)]
    for merger in (traversal_merge, solver_merge, best_traversal_merge):
        with pytest.raises(MappingError, match=r"needs 9 pmu units, the array has 8"):
            merger(g, pus)


def test_vu_that_fits_nothing():
    g = nx.DiGraph()
    g.add_node("big", cost=vu(ops=9))
    with pytest.raises(MappingError, match=r"VU 'big' fits no PU type \(VU 'big': 9 ops "
                                           r"exceed the 6 stages of a pcu\)"):
        traversal_merge(g, [unit()])


def test_inconsistent_cost_is_refused():
    g = chain(2)
    g.nodes[1]["cost"] = vu(vin=0)
    with pytest.raises(MappingError, match=r"VU 1: its cost counts 0 vector inputs but it "
                                           r"has 1 vector source VUs"):
        solver_merge(g, [unit()])


def test_check_merge_reports_overfull_units():
    g = chain(4, ops=3)
    bad = check_merge(g, {k: ("pcu", 0) for k in range(4)}, [unit(count=1)])
    assert bad == ["pcu 0: 12 ops exceed the 6 stages of a pcu"]


def test_vu_cost_from_a_partition():
    dfg = nx.DiGraph()
    dfg.add_node("x", kind="input", width="vector")
    for n in "ab":
        dfg.add_node(n, kind="op", op="mul", width="vector")
    dfg.add_edges_from([("x", "a"), ("x", "b"), ("a", "b")])
    cost = VUCost.of(part_cost(dfg, {"a", "b"}), lanes=16)
    # x (broadcast to a and b: one input) and a are live between stage 1 and 2
    assert cost == VUCost(2, {"scalar": 0, "vector": 1, "bit": 0},
                          {"scalar": 0, "vector": 0, "bit": 0}, 2,
                          frozenset({"mul"}), 16)
