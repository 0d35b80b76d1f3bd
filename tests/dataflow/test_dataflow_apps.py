"""SARA Table IV apps and the paper's control examples (mapper.dataflow.apps) against numpy."""
from __future__ import annotations

import numpy as np
import pytest

from cgra.errors import ProgramError
from mapper.dataflow.apps import (
    APPS,
    TOLERANCES,
    black_scholes,
    branch,
    dot_product,
    fig2a,
    gemm,
    kmeans_step,
    mlp_layer,
    pagerank,
    random_graph,
)
from mapper.dataflow.interp import interpret, interpret_stats
from mapper.dataflow.program import Loop


def _agree(name, got, want):
    rtol, atol = TOLERANCES[name]
    for k, v in want.items():
        assert got[k].dtype == v.dtype, k
        assert got[k].shape == v.shape, k
        if rtol == 0 and atol == 0:
            np.testing.assert_array_equal(got[k], v, err_msg=f"{name}.{k}")
        else:
            np.testing.assert_allclose(got[k], v, rtol=rtol, atol=atol, err_msg=f"{name}.{k}")


def test_registry_lists_every_app_with_a_tolerance():
    assert set(APPS) == set(TOLERANCES) == {
        "dot_product", "outer_product", "gemm", "black_scholes", "kmeans_step", "logreg",
        "mlp_layer", "pagerank", "branch", "fig2a"}


@pytest.mark.parametrize("par", [1, 2])
@pytest.mark.parametrize("name", sorted(APPS))
def test_app_matches_numpy(name, par):
    p, inputs, reference = APPS[name](par=par)
    got = interpret(p, inputs)
    _agree(name, got, reference(inputs))
    assert any(c.par == par for c in p.controllers() if isinstance(c, Loop))


@pytest.mark.parametrize("name", sorted(APPS))
def test_par_does_not_change_the_sequential_result(name):
    p1, inputs, _ = APPS[name](par=1)
    p4, inputs4, _ = APPS[name](par=4)
    r1, r4 = interpret(p1, inputs), interpret(p4, inputs4)
    for m in p1.inputs():
        np.testing.assert_array_equal(r1[m.name], r4[m.name])


@pytest.mark.parametrize("name", sorted(APPS))
def test_reference_follows_other_inputs(name):
    p, _, reference = APPS[name]()
    _, inputs, _ = APPS[name](seed=1)
    _agree(name, interpret(p, inputs), reference(inputs))


def test_dot_product_known_answer():
    p, _, ref = dot_product(n=4, par=2)
    x = {"a": np.array([1, 2, 3, 4], np.int32), "b": np.array([5, 6, 7, 8], np.int32)}
    assert interpret(p, x)["out"].tolist() == [70]
    assert ref(x)["out"].tolist() == [70]


def test_gemm_known_answer():
    p, _, _ = gemm(m=2, n=2, k=2)
    x = {"a": np.array([[1, 2], [3, 4]]), "b": np.array([[5, 6], [7, 8]])}
    assert interpret(p, x)["c"].tolist() == [[19, 22], [43, 50]]


def test_black_scholes_textbook_value():
    # S = K = 100, r = 5 %, sigma = 20 %, T = 1 year: call 10.4506, put 5.5735 (Hull)
    p, _, _ = black_scholes(n=2)
    one = np.ones(2, np.float32)
    x = {"sptprice": 100 * one, "strike": 100 * one, "rate": 0.05 * one,
         "volatility": 0.2 * one, "otime": one, "otype": np.array([0, 1])}
    np.testing.assert_allclose(interpret(p, x)["price"], [10.4506, 5.5735], atol=2e-4)


def test_kmeans_known_answer_ties_and_empty_cluster():
    p, _, ref = kmeans_step(n=5, d=2, k=3)
    x = {"points": np.array([[0, 0], [1, 1], [10, 10], [11, 11], [5, 5]]),
         "centroids": np.array([[0, 0], [10, 10], [100, 100]])}
    r = interpret(p, x)
    # (5, 5) is at squared distance 50 from both: the lower index wins
    assert r["assign"].tolist() == [0, 0, 1, 1, 0]
    # cluster 0: floor(6/3) = 2; cluster 1: floor(21/2) = 10; cluster 2 empty: stays
    assert r["new_centroids"].tolist() == [[2, 2], [10, 10], [100, 100]]
    assert ref(x)["new_centroids"].tolist() == [[2, 2], [10, 10], [100, 100]]


def test_mlp_layer_relu_and_floor_shift():
    p, _, _ = mlp_layer(batch=1, n_in=2, n_out=2, shift=2)
    x = {"x": np.array([[3, -1]]), "w": np.array([[1, 1], [-1, 1]]), "bias": np.array([-1, 0])}
    # o0: 3 - 1 - 1 = 1 >> 2 = 0; o1: -3 - 1 = -4 >> 2 = -1 -> relu 0; with bias 13: ...
    assert interpret(p, x)["y"].tolist() == [[0, 0]]
    x["bias"] = np.array([13, 20])
    assert interpret(p, x)["y"].tolist() == [[3, 4]]      # 15 >> 2, 16 >> 2


def test_pagerank_reads_loop_bounds_from_dram_and_keeps_a_cycle_uniform():
    p, _, _ = pagerank(n=3, avg_degree=1, iters=3)
    bounds = {ld.mem.name for _, ld in p.bound_loads()}
    assert bounds == {"rowptr"}
    # the cycle 0 -> 1 -> 2 -> 0: in-edge CSR rowptr [0, 1, 2, 3], sources [2, 0, 1]
    x = {"rowptr": np.array([0, 1, 2, 3]), "col": np.array([2, 0, 1]), "outdeg": np.ones(3)}
    np.testing.assert_allclose(interpret(p, x)["rank"], [1 / 3] * 3, rtol=1e-6)


def test_random_graph_csr_is_consistent():
    rowptr, col, outdeg = random_graph(16, 3, seed=0)
    assert rowptr[0] == 0 and rowptr[-1] == len(col)
    assert np.all(np.diff(rowptr) >= 0)
    assert np.bincount(col, minlength=16).tolist() == outdeg.tolist()
    assert outdeg.min() >= 1


def test_branch_example_writes_in_if_and_reads_in_else():
    p, _, _ = branch(n=4, length=2)
    x = {"d": np.array([[1, 2], [10, 20], [3, 4], [30, 40]])}
    r, st = interpret_stats(p, x)
    # i=0 writes mem = [2, 4]; i=1 reads: [12, 24]; i=2 writes [8, 10]; i=3: [38, 50]
    assert r["out"].tolist() == [[0, 0], [12, 24], [0, 0], [38, 50]]
    assert st.branch_taken == {"B": (2, 2)}
    assert st.accesses["Wmem"] == 4 and st.accesses["Rmem"] == 4
    assert st.loop_iterations == {"A": 4, "D": 4, "F": 4}


def test_branch_double_buffers_mem_and_still_equals_numpy():
    """apps.branch declares ``mem`` with 2 buffers (SARA Fig. 4 overlap); the buffer count
    does not change the sequential result, and 0 buffers is refused."""
    p2, inputs, reference = branch(n=6, length=3, seed=2)
    p1, _, _ = branch(n=6, length=3, seed=2, buffers=1)
    assert (p2.memories["mem"].buffers, p1.memories["mem"].buffers) == (2, 1)
    want = reference(inputs)
    for p in (p1, p2):
        _agree("branch", interpret(p, inputs), want)
    assert want["out"][1].tolist() == (inputs["d"][0] * 2 + inputs["d"][1]).tolist()
    with pytest.raises(ProgramError, match="app branch: buffers=0 must be >= 1"):
        branch(buffers=0)


def test_fig2a_has_the_papers_labels_and_counts():
    p, inputs, _ = fig2a(a=2, b=3, c=4, f=2)
    labels = {c.label for c in p.controllers()}
    assert {"A", "B", "C", "D", "E", "F", "G"} <= labels
    sites = {s.label: s.mem.name for b in p.blocks() for s in b.stores()}
    sites.update({ld.label: ld.mem.name for b in p.blocks() for ld in b.loads()})
    assert {k: sites[k] for k in ("W31", "W32", "R3", "W4", "R4")} == {
        "W31": "m3", "W32": "m3", "R3": "m3", "W4": "m4", "R4": "m4"}
    assert p.memories["m1"].scope.label == "B"
    _, st = interpret_stats(p, inputs)
    assert st.loop_iterations == {"A": 2, "B": 6, "C": 24, "D": 24, "E": 24, "F": 4, "G": 8}
    assert st.accesses["W31"] == 24 and st.accesses["W32"] == 4 and st.accesses["R3"] == 8


@pytest.mark.parametrize("call, message", [
    (lambda: gemm(m=0), "app gemm: m=0 must be >= 1"),
    (lambda: dot_product(par=0), "app dot_product: par=0 must be >= 1"),
    (lambda: fig2a(c=2, f=3), "app fig2a: f=3 must be <= c=2"),
    (lambda: mlp_layer(shift=32), "app mlp_layer: shift=32 must be in [0, 32)"),
    (lambda: pagerank(n=4, nnz_max=1), "app pagerank: nnz_max=1 is below the graph's"),
])
def test_bad_sizes(call, message):
    with pytest.raises(ProgramError) as e:
        call()
    assert str(e.value).startswith(message)
