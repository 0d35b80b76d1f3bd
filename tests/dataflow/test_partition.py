"""SARA compute partitioning (mapper.dataflow.partition): Table I legality, the Fig. 6/7
fixtures, traversal variants, the MILP partitioner against brute force, retiming."""
from __future__ import annotations

import time

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgra.errors import MappingError
from mapper.dataflow.partition import (
    VARIANTS,
    Partition,
    best_traversal,
    brute_force_partition,
    check,
    part_cost,
    require_legal,
    retime,
    solver_partition,
    traversal_partition,
)
from mapper.dataflow.units import SARA_PCU, PUConstraints

OPS = frozenset({"add", "mul", "lt", "select", "exp"})


def pu(stages=2, scalar_in=4, vector_in=4, scalar_out=4, vector_out=4, registers=8,
       ops=OPS) -> PUConstraints:
    return PUConstraints("pcu", stages, {"scalar": scalar_in, "vector": vector_in},
                         {"scalar": scalar_out, "vector": vector_out}, registers, ops)


def dfg(ops, edges, lcd=(), **extra) -> nx.DiGraph:
    """Op nodes ``ops`` ("add" each, scalar), non-LCD ``edges``, LCD ``lcd`` edges; ``extra``
    maps a node id to its attributes (inputs, outputs, consts, ...)."""
    g = nx.DiGraph()
    for n in ops:
        g.add_node(n, kind="op", op="add", width="scalar")
    for n, attrs in extra.items():
        g.add_node(n, **attrs)
    g.add_edges_from(edges)
    g.add_edges_from(lcd, lcd=True)
    return g


# --- Fig. 7: a cycle that remains after removing the LCD edge is illegal --------------------

def fig7() -> nx.DiGraph:
    """Project notes §2.7.1 (inferred from SARA Fig. 7): a->b->c, a->c, LCD c->a."""
    return dfg("abc", [("a", "b"), ("b", "c"), ("a", "c")], lcd=[("c", "a")])


def test_fig7_lcd_cycle_is_legal():
    assert check(fig7(), [{"a"}, {"b", "c"}], pu()) == []


def test_fig7_cycle_without_lcd_is_illegal():
    bad = check(fig7(), [{"a", "c"}, {"b"}], pu())
    assert bad == ["part 0 -> part 1 -> part 0 form a cycle that remains without the LCD "
                   "edges (SARA Fig. 7): each VU waits for all its inputs, so the partitions "
                   "deadlock"]


def test_fig7_require_legal_raises_mapping_error():
    with pytest.raises(MappingError, match=r"illegal partitioning on pcu: part 0 -> part 1"):
        require_legal(fig7(), [{"a", "c"}, {"b"}], pu())


def test_fig7_optimum_is_the_legal_split():
    g = fig7()
    for got in (brute_force_partition(g, pu()), solver_partition(g, pu())):
        assert len(got) == 2
        assert check(g, got.parts, pu()) == []
    # {a, b} | {c} keeps 2 cross edges (b->c, a->c) plus the LCD c->a: 3 in all
    assert brute_force_partition(g, pu()).cross_edges(g) == 3


# --- Fig. 6 (in its spirit; the figure's graph is not in the text) -------------------------

def fig6() -> nx.DiGraph:
    """a broadcasts to b, c, d; b->d. Two ops per partition."""
    return dfg("abcd", [("a", "b"), ("a", "c"), ("a", "d"), ("b", "d")])


def test_fig6_solutions():
    g = fig6()
    sol1 = Partition((frozenset("ab"), frozenset("cd")), "given")
    sol2 = Partition((frozenset("ac"), frozenset("bd")), "given")
    sol3 = [frozenset("ad"), frozenset("bc")]
    assert check(g, sol1, pu()) == []  # a Partition or a list of sets
    assert check(g, sol2.parts, pu()) == []
    assert sol1.cross_edges(g) == 3 and sol2.cross_edges(g) == 2  # solution 2 is better
    assert check(g, sol3, pu())[0].startswith("part 0 -> part 1 -> part 0 form a cycle")
    best = brute_force_partition(g, pu())
    assert set(best.parts) == set(sol2.parts)
    got = solver_partition(g, pu())
    assert got.optimal is True
    assert set(got.parts) == set(sol2.parts)


# --- Table I costs and violations ------------------------------------------------------------

def test_broadcast_counts_once():
    # input x feeds a, b and c; op a feeds d and e in another partition
    g = dfg("abcde", [("x", "a"), ("x", "b"), ("x", "c"), ("a", "d"), ("a", "e")],
            x={"kind": "input", "width": "vector"})
    first = part_cost(g, {"a", "b", "c"})
    assert first.inputs == {"scalar": 0, "vector": 1, "bit": 0}
    assert first.outputs == {"scalar": 1, "vector": 0, "bit": 0}
    second = part_cost(g, {"d", "e"})
    assert second.inputs == {"scalar": 1, "vector": 0, "bit": 0}
    assert second.outputs == {"scalar": 0, "vector": 0, "bit": 0}


def test_consts_are_free_and_mem_reads_take_an_input_in_each_partition():
    g = dfg("ab", [("k", "a"), ("k", "b"), ("m", "a"), ("m", "b"), ("b", "y")],
            k={"kind": "const", "op": "const"}, m={"kind": "mem_read", "width": "vector"},
            y={"kind": "output"})
    for part in ({"a"}, {"b"}):
        assert part_cost(g, part).inputs == {"scalar": 0, "vector": 1, "bit": 0}
    assert part_cost(g, {"a", "b"}).inputs == {"scalar": 0, "vector": 1, "bit": 0}
    assert part_cost(g, {"b"}).outputs == {"scalar": 1, "vector": 0, "bit": 0}  # feeds output y


def test_register_count():
    # x -> a -> b -> c, x -> c: x and a live after stage 1, x and b after stage 2
    g = dfg("abc", [("x", "a"), ("a", "b"), ("b", "c"), ("x", "c")],
            x={"kind": "input", "width": "scalar"})
    assert part_cost(g, {"a", "b", "c"}).registers == 2
    # a value leaving the partition stays live to the last stage: a leaves, b, c inside
    g2 = dfg("abcz", [("a", "b"), ("b", "c"), ("a", "z")])
    assert part_cost(g2, {"a", "b", "c"}).registers == 2
    assert part_cost(g2, {"a"}).registers == 0


def test_violations_name_part_and_resource():
    g = dfg("abc", [("x", "a"), ("y", "a"), ("a", "b"), ("b", "c")],
            x={"kind": "input"}, y={"kind": "input"})
    g.nodes["c"]["op"] = "div"
    bad = check(g, [{"a", "b", "c"}], pu(stages=2, scalar_in=1))
    assert bad == [
        "part 0 {a, b, c}: 3 ops exceed the 2 stages of a pcu",
        "part 0 {a, b, c}: 2 unique scalar input sources exceed the 1 scalar inputs of a pcu",
        "part 0 {a, b, c}: ops ['div'] are not supported by a pcu",
    ]
    regs = check(dfg("abc", [("a", "c"), ("b", "c")]), [{"a", "b", "c"}],
                 pu(stages=3, registers=1))
    assert regs == ["part 0 {a, b, c}: 2 live values exceed the 1 pipeline registers of a pcu"]


def test_cover_violations():
    g = dfg("abc", [("a", "b"), ("b", "c")])
    assert check(g, [{"a", "b"}, {"b"}], pu()) == [
        "op 'b' is in part 0 and part 1; put it in one part", "op 'c' is in no part; every "
        "op node needs a partition"]


def test_malformed_graphs_raise_mapping_error():
    with pytest.raises(MappingError, match="cycle of non-LCD edges"):
        check(dfg("ab", [("a", "b"), ("b", "a")]), [{"a", "b"}], pu())
    g = dfg("a", [])
    g.add_node("q", kind="wire")
    with pytest.raises(MappingError, match="kind 'wire' is not one of"):
        check(g, [{"a"}], pu())
    g = dfg("ab", [("a", "b")])
    g.nodes["b"]["op"] = "fft"
    with pytest.raises(MappingError, match=r"op 'b' alone: ops \['fft'\] are not supported"):
        traversal_partition(g, pu())


# --- traversal partitioner -------------------------------------------------------------------

def chain_with_skips(n: int) -> nx.DiGraph:
    g = dfg(range(n), [(k, k + 1) for k in range(n - 1)] + [(k, k + 3) for k in range(n - 3)])
    g.add_node("x", kind="input", width="vector")
    g.add_edges_from(("x", k) for k in range(0, n, 2))
    return g


@pytest.mark.parametrize(("order", "direction"), VARIANTS)
def test_traversal_variants_are_legal(order, direction):
    g = chain_with_skips(12)
    got = traversal_partition(g, pu(stages=3, scalar_out=2), order, direction)
    assert got.method == f"{order}-{direction}"
    assert check(g, got.parts, pu(stages=3, scalar_out=2)) == []
    # each op k feeds k+1 and k+3: a 3-op part {k, k+1, k+2} has 3 live-outs > 2 outputs,
    # so only the tail {8, 9, 10} holds 3 ops (9 and 10 feed 11 only): 6 parts
    assert len(got) == 6


def test_solver_proves_the_chain_optimum():
    # 8 ops: {0, 1} {2, 3} {4, 5, 6} {7}; 7 chain edges + 5 skips, 8 of them cross
    g = chain_with_skips(8)
    p = pu(stages=3, scalar_out=2)
    got = solver_partition(g, p, time_limit_s=60.0)
    assert got.optimal is True
    assert (len(got), got.cross_edges(g)) == (4, 8)
    exact = brute_force_partition(g, p)
    assert (len(exact), exact.cross_edges(g)) == (4, 8)


def test_traversal_closes_on_the_first_break():
    # bfs-fwd on a 7-op chain with 3 stages: {0,1,2} {3,4,5} {6}
    g = dfg(range(7), [(k, k + 1) for k in range(6)])
    got = traversal_partition(g, pu(stages=3))
    assert got.parts == (frozenset({0, 1, 2}), frozenset({3, 4, 5}), frozenset({6}))
    back = traversal_partition(g, pu(stages=3), "bfs", "bwd")
    assert back.parts == (frozenset({6, 5, 4}), frozenset({3, 2, 1}), frozenset({0}))


def test_best_traversal_names_the_winner():
    g = chain_with_skips(12)
    got = best_traversal(g, pu(stages=3, scalar_out=2))
    assert got.method in {f"{o}-{d}" for o, d in VARIANTS}
    assert len(got) == 6
    with pytest.raises(MappingError, match="traversal variant 'bfs'/'up' unknown"):
        traversal_partition(g, pu(), "bfs", "up")


def test_sara_pcu_fits_a_small_kernel_in_one_unit():
    g = dfg("abcdef", [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "f")])
    assert best_traversal(g, SARA_PCU).parts == (frozenset("abcdef"),)


# --- solver vs brute force (property test) ---------------------------------------------------

SMALL = pu(stages=3, scalar_in=3, vector_in=3, scalar_out=1, vector_out=1, registers=2)


@st.composite
def random_dfg(draw) -> nx.DiGraph:
    """A DAG of 3..8 op nodes with at most 2 non-LCD sources each (ops or 2 inputs), some
    LCD back edges, random widths, a live-out."""
    n = draw(st.integers(3, 8))
    g = nx.DiGraph()
    for k in range(2):
        g.add_node(f"in{k}", kind="input", width=draw(st.sampled_from(["scalar", "vector"])))
    for k in range(n):
        g.add_node(k, kind="op", op=draw(st.sampled_from(["add", "mul"])),
                   width=draw(st.sampled_from(["scalar", "vector"])))
        choices = ["in0", "in1", *range(k)]
        srcs = draw(st.lists(st.sampled_from(choices), max_size=2, unique=True))
        g.add_edges_from((s, k) for s in srcs)
    if n > 1 and draw(st.booleans()):
        j = draw(st.integers(1, n - 1))
        i = draw(st.integers(0, j - 1))
        if not g.has_edge(j, i) and not g.has_edge(i, j):
            g.add_edge(j, i, lcd=True)
    g.add_node("out", kind="output")
    g.add_edge(n - 1, "out")
    return g


@settings(max_examples=50, deadline=None, derandomize=True)
@given(random_dfg())
def test_solver_matches_brute_force(g):
    exact = brute_force_partition(g, SMALL)
    got = solver_partition(g, SMALL, time_limit_s=20.0)
    assert got.optimal is True
    assert len(got) == len(exact)
    assert got.cross_edges(g) == exact.cross_edges(g)
    assert check(g, got.parts, SMALL) == []
    assert check(g, exact.parts, SMALL) == []
    assert len(got) <= len(best_traversal(g, SMALL))
    for order, direction in VARIANTS:
        assert check(g, traversal_partition(g, SMALL, order, direction).parts, SMALL) == []


def test_bfs_interleaves_independent_chains():
    # two chains a->b->c and d->e->f joined by c->f, one scalar output per partition:
    # BFS visits a, d, b, e, ... and {a, d} already has 2 live-outs, so every BFS part
    # closes after one op until {c, f}; DFS follows one chain at a time (2 parts)
    g = dfg("abcdef", [("a", "b"), ("b", "c"), ("d", "e"), ("e", "f"), ("c", "f")])
    p = pu(stages=3, scalar_out=1)
    assert len(traversal_partition(g, p, "bfs", "fwd")) == 5
    dfs = traversal_partition(g, p, "dfs", "fwd")
    assert dfs.parts == (frozenset("abc"), frozenset("def"))
    assert best_traversal(g, p).method == "dfs-fwd"
    exact = brute_force_partition(g, p)
    got = solver_partition(g, p)
    assert len(got) == len(exact) == 2
    assert set(got.parts) == set(exact.parts) == {frozenset("abc"), frozenset("def")}


def test_solver_enforces_registers_by_lazy_cuts():
    # one partition {a, b, c} keeps x and a live after stage 1 (2 > 1 register): the MILP
    # proposes it, the cut forbids it, the optimum is {a, b} | {c}
    g = dfg("abc", [("x", "a"), ("a", "b"), ("b", "c"), ("x", "c")],
            x={"kind": "input", "width": "scalar"})
    p = pu(stages=3, registers=1)
    got = solver_partition(g, p)
    assert got.optimal is True
    assert got.parts == (frozenset("ab"), frozenset("c"))
    assert brute_force_partition(g, p).parts == got.parts


def test_solver_respects_its_time_limit_on_a_large_graph():
    # 60 ops: the program exceeds IN_PROCESS_MAX_VARS, HiGHS runs in a worker that is killed
    # after the limit; the answer is legal and no worse than the best traversal
    g = chain_with_skips(60)
    p = pu(stages=3, scalar_out=2)
    start = time.monotonic()
    got = solver_partition(g, p, time_limit_s=1.0)
    assert time.monotonic() - start < 10.0
    assert got.method == "milp"
    assert check(g, got, p) == []
    assert len(got) <= len(best_traversal(g, p))


def test_solver_with_too_few_parts_raises():
    g = dfg(range(5), [(k, k + 1) for k in range(4)])
    with pytest.raises(MappingError, match="need more than max_parts=2"):
        solver_partition(g, pu(stages=2), max_parts=2)


def test_brute_force_refuses_big_graphs():
    g = dfg(range(11), [])
    with pytest.raises(MappingError, match="at most 10 ops, the DFG has 11"):
        brute_force_partition(g, pu())


# --- retiming --------------------------------------------------------------------------------

def retime_fixture() -> nx.DiGraph:
    """a->b->c->d with skips a->c (gap 2) and a->d (gap 3), one op per partition."""
    return dfg("abcd", [("a", "b"), ("b", "c"), ("c", "d"), ("a", "c"), ("a", "d")])


@pytest.mark.parametrize(("depth", "buffers"), [(1, 2), (2, 1), (3, 0)])
def test_retiming_buffers(depth, buffers):
    g = retime_fixture()
    got = retime(g, [{"a"}, {"b"}, {"c"}, {"d"}], depth)
    assert got.levels == (0, 1, 2, 3)
    assert len(got.retiming) == buffers
    assert got.units == 4 + buffers


def test_retiming_counts_a_broadcast_once_per_consumer_part():
    got = retime(retime_fixture(), [{"a"}, {"b"}, {"c", "d"}], 1)
    assert got.levels == (0, 1, 2)
    assert [(r.source, r.consumer_part, r.gap) for r in got.retiming] == [("a", 2, 2)]
    assert got.units == 4
    with pytest.raises(MappingError, match="buffer depth 0 must be >= 1"):
        retime(retime_fixture(), [{"a", "b", "c", "d"}], 0)
