"""Dataflow programs on the generated array (issue 35, items 2-3): programs of the dataflow
DSL (dot_product, gemm_tile, SARA's Fig. 4 branch and small programs of each construct)
compiled onto the 8x8
ready-valid array of dataflow PEs (configs/small_df.toml), placed, routed, proved, run in
Verilator under random IO stalls and compared with the sequential interpreter; the
refusals; a deadlock by construction caught by the token-level simulator before any RTL is
built."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from cgra.errors import MappingError, SimulationError
from mapper.collateral import load_collateral
from mapper.dataflow.apps import APPS, ARRAY_PROGRAMS
from mapper.dataflow.array import compile_program
from mapper.dataflow.array_run import run_program
from mapper.dataflow.interp import interpret
from mapper.dataflow.program import Program, maximum, op, select
from mapper.dataflow.random_programs import random_program
from peak.examples.dataflow_pe import DataflowPE, make_dataflow_pe


def assert_model(r) -> None:
    """The model of the mapped program (mapper.dataflow.array_model) predicts the RTL's
    cycles, input stall and backpressure cycles exactly: the same stall draws, the routes'
    FIFO sites, each PE's rates from its instruction."""
    c = r.report["cycles"]
    assert r.model_cycles == r.cycles == c["rtl"] == c["array_model"], (r.model_cycles,
                                                                       r.cycles)
    assert c["array_model_ratio"] == 1.0
    assert c["array_model_stalls"] == list(r.stalls)


@pytest.fixture(scope="module")
def df(design_dir):
    # a dataflow program is compiled without rewrite rules: a one-rule table (the design
    # must have one to load) instead of the PE's 91 targets
    return load_collateral(design_dir("small_df", only=["coreir.add"]))


def scale_rows(n: int = 6, m: int = 5, seed: int = 3):
    """A value of the outer loop held across the inner one (a Reg written once per i), the
    inner index as an operand, a comparison feeding a select."""
    p = Program("scale_rows")
    a, b = p.dram("a", (n,)), p.dram("b", (n, m))
    out = p.dram("out", (n, m))
    r = p.reg("r")
    with p.foreach(n) as i:
        r.value = a[i] * 3
        with p.foreach(m) as j:
            v = p.let(b[i, j] * r.value + j)
            out[i, j] = v - select(b[i, j] > 0, 1, 2)
    rng = np.random.default_rng(seed)
    inputs = {"a": rng.integers(-9, 10, n).astype(np.int32),
              "b": rng.integers(-9, 10, (n, m)).astype(np.int32)}
    want = (inputs["b"] * (inputs["a"] * 3)[:, None] + np.arange(m)
            - np.where(inputs["b"] > 0, 1, 2))
    return p, inputs, want


def reg_chain(n: int = 12):
    """A Reg written and read in every iteration by two blocks (a loop-carried credit)."""
    p = Program("reg_chain")
    a, out = p.dram("a", (n,)), p.dram("out", (n,))
    t = p.reg("t")
    with p.foreach(n) as i:
        t.value = a[i] + 1
        with p.foreach(1):
            out[i] = t.value * t.value
    return p, {"a": np.arange(n, dtype=np.int32) - 4}


def windows(n: int = 4, m: int = 6, par: int = 2, seed: int = 5):
    """A reduction with a non-zero initial value per outer iteration, par lanes, abs and a
    max with a constant."""
    p = Program("windows")
    a, b = p.dram("a", (n, m)), p.dram("b", (m,))
    out = p.dram("out", (n,))
    acc = p.reg("acc")
    with p.foreach(n) as i:
        acc.value = 5
        with p.foreach(m, par=par) as j:
            acc.value = acc.value + op("abs", a[i, j] - b[j])
        out[i] = maximum(acc.value, 30)
    rng = np.random.default_rng(seed)
    inputs = {"a": rng.integers(-20, 21, (n, m)).astype(np.int32),
              "b": rng.integers(-20, 21, m).astype(np.int32)}
    want = np.maximum(5 + np.abs(inputs["a"] - inputs["b"]).sum(axis=1), 30)
    return p, inputs, want


def quotients(n: int = 4, m: int = 6, seed: int = 11):
    """Floor division and modulo by data (zero and negative divisors, ``-2**31 // -1``) and a
    row mean (a reduction's sum divided by the constant ``m``)."""
    p = Program("quotients")
    a, b = p.dram("a", (n, m)), p.dram("b", (n, m))
    q, r, mean = p.dram("q", (n, m)), p.dram("r", (n, m)), p.dram("mean", (n,))
    s = p.reg("s")
    with p.foreach(n) as i:
        with p.reduce(s, m) as (j, add):
            add(a[i, j])
        mean[i] = s.value // m
        with p.foreach(m) as j:
            x, y = p.let(a[i, j]), p.let(b[i, j])
            q[i, j] = x // y
            r[i, j] = x % y
    rng = np.random.default_rng(seed)
    a_in = rng.integers(-50, 51, (n, m)).astype(np.int64)
    b_in = rng.integers(-4, 5, (n, m)).astype(np.int64)
    a_in[0, :2], b_in[0, :2] = -2**31, (-1, 0)
    one = np.where(b_in == 0, 1, b_in)
    wrap = lambda v: ((v + 2**31) % 2**32 - 2**31).astype(np.int32)  # noqa: E731
    want = {"q": wrap(np.where(b_in == 0, 0, a_in // one)),
            "r": wrap(np.where(b_in == 0, 0, a_in % one)),
            "mean": wrap(wrap(a_in.sum(axis=1)).astype(np.int64) // m)}
    return p, {"a": a_in.astype(np.int32), "b": b_in.astype(np.int32)}, want


def test_floor_division_and_modulo_on_the_pes_divider(df, tmp_path):
    """``//`` and ``%`` on Div / Mod PEs (configs/small_df.toml's PE has the divider) under
    random stalls: Python's floor semantics, ``x // 0 = x % 0 = 0`` as the interpreter,
    ``-2**31 // -1`` wrapping to ``-2**31``; the row mean divides a reduction by a constant
    operand. The same program on a PE without the divider is refused, naming the fix."""
    program, inputs, want = quotients()
    assert (want["q"][0, :2].tolist(), want["r"][0, :2].tolist()) == ([-2**31, 0], [0, 0])
    assert (want["q"] < 0).any() and (want["r"] < 0).any() and (want["mean"] < 0).any()
    r = run_program(program, inputs, df, tmp_path, stall_in=0.3, stall_out=0.3, stall_seed=8)
    ref = interpret(program, inputs)
    # the 8x8 of dataflow PEs (17.5 MB of tile Verilog) is verilated in tile blocks ("auto"):
    # its two tile modules once each
    assert r.report["verilator"]["hier_tiles"] == sorted(
        p.stem for p in (df.root / "rtl").glob("RvTile_*.v"))
    assert len(r.report["verilator"]["hier_tiles"]) == 2
    for name in ("q", "r", "mean"):
        assert np.array_equal(r.memories[name], want[name]), name
        assert np.array_equal(ref[name], want[name]), name
    assert_model(r)
    ops = sorted((pe.op, pe.operands["b"].kind) for pe in r.program.pes.values()
                 if pe.op in ("Div", "Mod"))
    assert ops == [("Div", "const"), ("Div", "net"), ("Mod", "net")]
    with pytest.raises(MappingError, match=re.escape(
            "operator 'div' needs a divider; the design's PE has none (build it with "
            "make_dataflow_pe(..., div=True))")):
        compile_program(program, inputs, MEM_PE)


def nearest(n: int = 6, k: int = 4, d: int = 3, seed: int = 2):
    """k-means' assignment step (apps.kmeans_step's centroid loop): per point the index of
    the nearest centroid (first minimum; centroid 2 duplicates centroid 0, so every point
    closest to it ties and keeps 0) and its distance; and an arg-max with initial values
    that are not the extreme (``far`` starts at 101 with index -1: a point whose every
    distance is at most 101 keeps -1; seed 2 has one at 93 and two at exactly 101)."""
    p = Program("nearest")
    pts, cen_d = p.dram("points", (n, d)), p.dram("centroids", (k, d))
    assign, bestd, farthest = (p.dram("assign", (n,)), p.dram("best_dist", (n,)),
                               p.dram("far_index", (n,)))
    cen = p.sram("cen", (k, d))
    with p.foreach(k) as c, p.foreach(d) as j:
        cen[c, j] = cen_d[c, j]
    dist, best, bi = p.reg("dist"), p.reg("best"), p.reg("best_index")
    far, fi = p.reg("far"), p.reg("fi")
    with p.foreach(n) as i:
        best.value = 2**31 - 1
        bi.value = 0
        far.value = 101
        fi.value = -1
        with p.foreach(k) as c:
            with p.reduce(dist, d) as (j, add):
                diff = p.let(pts[i, j] - cen[c, j])
                add(diff * diff)
            closer = p.let(dist.value < best.value)
            bi.value = select(closer, c, bi.value)
            best.value = select(closer, dist.value, best.value)
            farther = p.let(far.value < dist.value)
            fi.value = select(farther, c, fi.value)
            far.value = select(farther, dist.value, far.value)
        assign[i] = bi.value
        bestd[i] = best.value
        farthest[i] = fi.value
    rng = np.random.default_rng(seed)
    inputs = {"points": rng.integers(-6, 7, (n, d)).astype(np.int32),
              "centroids": rng.integers(-6, 7, (k, d)).astype(np.int32)}
    inputs["centroids"][2] = inputs["centroids"][0]
    dd = ((inputs["points"][:, None, :].astype(np.int64)
           - inputs["centroids"][None, :, :]) ** 2).sum(axis=2)
    far_i = np.where(dd.max(axis=1) > 101, np.argmax(dd, axis=1), -1)
    want = {"assign": np.argmin(dd, axis=1), "best_dist": dd.min(axis=1), "far_index": far_i}
    return p, inputs, {k_: v.astype(np.int32) for k_, v in want.items()}


def test_arg_min_and_arg_max_over_a_loop_on_argmin_pes(df, tmp_path):
    """``best = select(dist < best, dist, best)`` with the index beside it, over the
    centroid loop: an ARGMIN PE (ties keep the lower index) and a MIN PE per pair, the
    initial values combined after the loop (the arg-max's 101 / -1 through a compare and a
    select; the arg-min's extreme initial value needs none for ``best``), under random
    stalls; the same cycles as the model."""
    program, inputs, want = nearest()
    assert (want["far_index"] == -1).sum() == 3 and (want["far_index"] >= 0).sum() == 3
    dists = ((inputs["points"][:, None, :].astype(np.int64)
              - inputs["centroids"][None, :, :]) ** 2).sum(axis=2)
    assert [len(np.flatnonzero(d == d.min())) for d in dists] == [1, 2, 1, 1, 1, 2]  # ties
    r = run_program(program, inputs, df, tmp_path, stall_in=0.3, stall_out=0.3, stall_seed=6)
    ref = interpret(program, inputs)
    for name in want:
        assert np.array_equal(r.memories[name], want[name]), name
        assert np.array_equal(ref[name], want[name]), name
    assert_model(r)
    reds = sorted(pe.red for pe in r.program.pes.values() if pe.red != "NONE")
    assert reds == ["ADD", "ARGMAX", "ARGMIN", "MAX", "MIN"]
    arg = next(pe for pe in r.program.pes.values() if pe.red == "ARGMIN")
    assert arg.operands["b"].kind == "index" and arg.levels["emit_level"] == 1


@pytest.mark.parametrize("par, p_stall, seed", [(1, 0.6, 2), (2, 0.3, 3)])
def test_dot_product_bit_exact_under_random_stalls(df, par, p_stall, seed, tmp_path):
    program, inputs, reference = APPS["dot_product"](n=64, par=par)
    r = run_program(program, inputs, df, tmp_path, stall_in=p_stall, stall_out=p_stall,
                    stall_seed=seed)
    assert np.array_equal(r.memories["out"], reference(inputs)["out"])
    assert_model(r)
    assert r.report["pes"] == {1: 1, 2: 3}[par]              # MAC; 2 MACs + 1 add
    assert r.report["io"] == {"in": 2 * par, "out": 1}
    assert r.report["tokens"] == {"in": 128, "out": 1}
    assert r.stalls[0] > 0 and r.stalls[1] >= 0
    # every input word crosses one handshake: at least n / par cycles per lane
    assert r.cycles >= 64 // par
    doc = json.loads((tmp_path / "dataflow_run.json").read_text())
    assert doc["bit_exact"] and doc["cycles"]["rtl"] == r.cycles
    # the bitstream proof of `cgra verify`: every net, valid and ready on its segments
    assert doc["bitstream_proof"]["nets"] == 4 * par - 1         # inputs, partials, tree
    assert doc["bitstream_proof"]["ready_valid"]["nets"] == 4 * par - 1


def test_holds_index_operands_and_select(df, tmp_path):
    program, inputs, want = scale_rows()
    r = run_program(program, inputs, df, tmp_path, stall_in=0.3, stall_out=0.3, stall_seed=7)
    assert np.array_equal(r.memories["out"], want)
    assert_model(r)
    pe = {p.op: p for p in r.program.pes.values()}
    # b * r reads r (produced once per i) held for the 5 inner firings
    mul = next(p for p in r.program.pes.values() if p.op == "Mul" and len(p.chain) == 2)
    held = [port for port, v in mul.operands.items() if v.kind == "net"
            and len(v.rate) == 1]
    assert held and mul.levels[f"deq_{held[0]}_level"] == 1
    assert "Sel" in pe and any(p.cond == "GT" for p in r.program.pes.values())


def test_reduction_lanes_with_initial_value(df, tmp_path):
    program, inputs, want = windows()
    r = run_program(program, inputs, df, tmp_path, stall_in=0.2, stall_out=0.4, stall_seed=9)
    assert np.array_equal(r.memories["out"], want)
    assert_model(r)
    reds = [p for p in r.program.pes.values() if p.red == "ADD"]
    assert len(reds) == 2 and all(p.levels["emit_level"] == 1 for p in reds)


def test_a_value_with_other_readers_is_not_reduced_in_place(df, tmp_path):
    """``t`` feeds the reduction and a store: its PE keeps emitting every firing, a PassA PE
    beside it reduces."""
    n = 10
    p = Program("shared")
    a, out, tot = p.dram("a", (n,)), p.dram("out", (n,)), p.dram("tot", (1,))
    acc = p.reg("acc")
    with p.foreach(n) as i:
        t = p.let(a[i] * 2)
        acc.value = acc.value + t
        out[i] = t
    tot[0] = acc.value
    inputs = {"a": np.arange(n, dtype=np.int32) * 3 - 7}
    r = run_program(p, inputs, df, tmp_path, stall_in=0.3, stall_out=0.3, stall_seed=5)
    assert np.array_equal(r.memories["out"], inputs["a"] * 2)
    assert_model(r)
    assert r.memories["tot"].tolist() == [int((inputs["a"] * 2).sum())]
    ops = sorted((pe.op, pe.red) for pe in r.program.pes.values())
    assert ops == [("Mul", "NONE"), ("PassA", "ADD")]


def test_reg_forwarding_and_a_removed_credit(df, tmp_path):
    program, inputs = reg_chain()
    r = run_program(program, inputs, df, tmp_path / "ok", stall_in=0.3, stall_out=0.3)
    assert np.array_equal(r.memories["out"], (inputs["a"] + 1) ** 2)
    assert_model(r)
    with pytest.raises(SimulationError, match="token-level simulator stops before any RTL "
                                              "is built: deadlock"):
        run_program(program, inputs, df, tmp_path / "dead", credits={"*": 0})
    assert not (tmp_path / "dead" / "sim.bs").exists()


def test_more_units_than_the_array_has_is_refused(df, tmp_path):
    program, inputs, _ = APPS["dot_product"](n=64, par=4)
    with pytest.raises(MappingError, match=r"needs 1 more IO tiles \(9 needed, 8 on the "
                                           r"array\)"):
        run_program(program, inputs, df, tmp_path)
    assert not (tmp_path / "sim.bs").exists()


@pytest.mark.parametrize("par, units", [(1, {"L9": 5, "ta": 1, "tb": 1}),
                                        (2, {"L9": 11, "ta": 2, "tb": 2})])
def test_gemm_tile_with_its_tiles_in_memory_pes(df, par, units, tmp_path):
    """SARA's GEMM tile (8x8x8): a and b copied into SRAMs ta and tb, a memory PE per read
    site and lane (written in address order, then read at i*8 + k and k*8 + j), the
    k-reduction a MAC per lane; the copy loops run in one lane (a memory PE takes one
    write stream)."""
    program, inputs, reference = ARRAY_PROGRAMS["gemm_tile"](par=par)
    r = run_program(program, inputs, df, tmp_path, stall_in=0.3, stall_out=0.3,
                    stall_seed=2)
    assert np.array_equal(r.memories["c"], reference(inputs)["c"])
    assert_model(r)
    assert {u: len(p) for u, p in r.program.units.items()} == units
    mems = [p for p in r.program.pes.values() if p.op == "Mem"]
    # one epoch: 64 writes, then this lane's 512 / par reads
    assert [p.counters[0] for p in mems] == [(0, 1, 64 + 512 // par)] * 2 * par
    assert all(p.consts == {"b_const": 64} for p in mems)
    assert r.report["tokens"] == {"in": 128, "out": 64}


@pytest.mark.parametrize("par, p_stall, seed", [(1, 0.3, 4), (2, 0.5, 6)])
def test_branch_clauses_on_strided_counters_and_a_refilled_memory(df, par, p_stall, seed,
                                                                   tmp_path):
    """SARA Fig. 4 (n = 8, length 4): the if clause runs on A's even iterations (its units
    count A as range(0, 8, 2)), the else clause on the odd ones (range(1, 8, 2)); mem is a
    memory PE per else-clause lane, refilled in 4 epochs of 4 writes, each followed by
    the lane's 4 / par reads."""
    program, inputs, reference = ARRAY_PROGRAMS["branch"](par=par, seed=seed)
    r = run_program(program, inputs, df, tmp_path, stall_in=p_stall, stall_out=p_stall,
                    stall_seed=seed)
    want = reference(inputs)["out"]
    assert np.array_equal(r.memories["out"], want)
    assert_model(r)
    assert not want[::2].any() and want[1::2].any()
    assert {u: len(p) for u, p in r.program.units.items()} == {"D": 2, "F": 2 * par,
                                                               "mem": par}
    a_ranges = {p.unit: (p.chain[0][0].start.value, p.chain[0][0].stop.value,
                         p.chain[0][0].step.value)
                for p in r.program.pes.values() if p.op != "Mem"}
    assert a_ranges == {"D": (0, 7, 2), "F": (1, 8, 2)}
    mems = [p for p in r.program.pes.values() if p.op == "Mem"]
    assert [(p.counters[0], p.consts) for p in mems] == \
        [((0, 1, 4 + 4 // par), {"b_const": 4})] * par
    assert r.report["tokens"] == {"in": 32, "out": 16}
    assert r.stalls[0] > 0


MEM_PE = make_dataflow_pe(32, 3, 16, 64)
DIV_PE = make_dataflow_pe(32, 3, 16, 64, div=True)
DF_PE = make_dataflow_pe(32, 3, 16, 128, div=True)     # configs/small_df.toml's PE


@pytest.mark.parametrize("par, seed, used", [(1, 3, 3), (2, 2, 2)])
def test_kmeans_step_bit_exact_under_random_stalls(df, par, seed, used, tmp_path):
    """apps.kmeans_step at its defaults (32 points, 4 dimensions, 3 centroids; the points
    fill small_df's 128-word scratchpads): the distances reduce in place (``par`` lanes),
    the nearest centroid is an ARGMIN PE, the centroid sums and counts are scatter-adds
    (``MemAcc`` memory PEs at the assigned centroid's address) read back per lane of the
    last loop (lane ``l`` of ``par`` reads sums at ``l, l + par, ...``: ``a_const``), the
    means divide on Div PEs; ``assign`` and ``new_centroids`` equal the reference and the
    interpreter under random stalls, in the model's cycles. Seed 2 leaves centroid 0
    without points: it stays (the ``cnt > 0`` select), its division by 0 discarded."""
    program, inputs, reference = ARRAY_PROGRAMS["kmeans_step"](par=par, seed=seed)
    want = reference(inputs)
    assert len(set(want["assign"].tolist())) == used
    r = run_program(program, inputs, df, tmp_path, stall_in=0.3, stall_out=0.3,
                    stall_seed=seed)
    for name in ("assign", "new_centroids"):
        assert np.array_equal(r.memories[name], want[name]), name
    assert_model(r)
    ops = [pe.op for pe in r.program.pes.values()]
    # pts: a copy per distance lane and one for the sums; cen: per distance and mean lane
    assert (ops.count("MemAcc"), ops.count("Mem"), ops.count("Div")) == \
        (2 * par, 3 * par + 1, par)
    assert sorted(pe.red for pe in r.program.pes.values() if pe.red != "NONE") == \
        ["ADD"] * par + ["ARGMIN", "MIN"]
    acc = sorted((pe.unit, pe.counters[0], pe.consts["b_const"], pe.consts["a_const"])
                 for pe in r.program.pes.values() if pe.op == "MemAcc")
    assert acc == sorted([("counts", (0, 1, 32 + 3), 32, 0)] * par
                         + [("sums", (0, 1, 128 + 12 // par), 128, lane | (par - 1) << 16)
                            for lane in range(par)])
    assert r.report["tokens"] == {"in": 32 * 4 + 12, "out": 32 + 12}
    assert r.report["io"] == {"in": 2, "out": 1 + par}


def _argmin_program(cond: str = "lt", par: int = 1, extra_read: bool = False) -> Program:
    p = Program("amin")
    a, out = p.dram("a", (3, 4)), p.dram("out", (3,))
    best, bi = p.reg("best"), p.reg("bi")
    with p.foreach(3) as i:
        best.value = 1000
        bi.value = 0
        with p.foreach(4, par=par) as c:
            x = p.let(a[i, c] * 2)
            t = p.let(op(cond, x, best.value))
            bi.value = select(t, c, bi.value)
            best.value = select(t, x, best.value)
            if extra_read:
                out[i] = t
        if not extra_read:
            out[i] = bi.value
    return p


def _scatter_program(read_early: bool = False, order: str = "rows") -> Program:
    p = Program("scatter")
    a, ix, out = p.dram("a", (8,)), p.dram("ix", (8,)), p.dram("out", (2, 3))
    m = p.sram("m", (2, 3))
    with p.foreach(8) as i:
        m[ix[i], 1] = m[ix[i], 1] + a[i]
        if read_early:
            out[0, 0] = m[0, 1]
    if order == "rows":
        with p.foreach(2) as r, p.foreach(3) as c:
            out[r, c] = m[r, c]
    else:
        with p.foreach(3) as c, p.foreach(2) as r:
            out[r, c] = m[r, c]
    return p


@pytest.mark.parametrize("make, needle", [
    # non-strict: ties would keep the later index, not an arg-min PE's first
    (lambda: _argmin_program("le"), "Reg 'best' is read in loop"),
    (lambda: _argmin_program(extra_read=True), "Reg 'best' is read in loop"),
    (lambda: _argmin_program(par=2), "an arg-min reduction into Regs 'bi' / 'best' in the "
                                     "lanes of a par loop"),
    (lambda: _scatter_program(read_early=True), "SRAM 'm': R5 reads it before the "
                                                "scatter-add W4 ends"),
    (lambda: _scatter_program(order="columns"), "reads scatter-added SRAM 'm' at addresses "
                                                "that are not a rising arithmetic sequence"),
])
def test_arg_reductions_and_scatter_adds_the_array_does_not_run_are_named(make, needle):
    """An arg-min only with a strict compare whose Let nothing else reads, outside par lanes;
    a scatter-add read only after its updates, in address order."""
    program = make()
    inputs = {"a": np.arange(12, dtype=np.int32).reshape(3, 4) % 5}
    if program.name == "scatter":
        inputs = {"a": np.arange(8, dtype=np.int32), "ix": np.arange(8, dtype=np.int32) % 2}
    with pytest.raises(MappingError, match=re.escape(needle)):
        compile_program(program, inputs, DIV_PE)


def test_a_scatter_add_and_an_arg_min_compile_to_their_pes():
    """The positive forms of the programs above: one ARGMIN and one MIN PE; one MemAcc PE
    whose reads are the 6 words in address order (counter 8 updates + 6 reads)."""
    ap = compile_program(_argmin_program(), {"a": np.arange(12, dtype=np.int32).reshape(3, 4)},
                         DIV_PE)
    assert sorted(pe.red for pe in ap.pes.values() if pe.red != "NONE") == ["ARGMIN", "MIN"]
    ap = compile_program(_scatter_program(), {"a": np.arange(8, dtype=np.int32),
                                              "ix": np.arange(8, dtype=np.int32) % 2}, DIV_PE)
    acc = [pe for pe in ap.pes.values() if pe.op == "MemAcc"]
    assert [(pe.counters[0], pe.consts) for pe in acc] == [((0, 1, 14),
                                                           {"b_const": 8, "a_const": 0})]
    assert ap.golden["out"].tolist() == [[0, 12, 0], [0, 16, 0]]


@pytest.mark.parametrize("app, kw, pe, needle", [
    ("black_scholes", {}, MEM_PE, "f32 values (the dataflow PE is an integer datapath)"),
    ("gemm_tile", {}, DataflowPE, "SRAM 'ta': the design's PE has no scratchpad"),
    ("mlp_layer", {}, MEM_PE, "SRAM 'ws': 128 words; the PE's scratchpad holds 64"),
    ("pagerank", {}, MEM_PE, "SRAM 'ranks': written at 2 sites ['W0', 'W14']"),
    ("fig2a", {}, MEM_PE, "SRAM 'm3': written at 2 sites ['W31', 'W32']"),
    ("kmeans_step", {}, MEM_PE, "SRAM 'pts': 128 words; the PE's scratchpad holds 64"),
    ("kmeans_step", {"n": 33}, DF_PE, "SRAM 'pts': 132 words; the PE's scratchpad holds 128"),
    ("kmeans_step", {"n": 8}, MEM_PE, "unit B19: operator 'div' needs a divider; the "
                                     "design's PE has none"),
    ("kmeans_step", {"n": 8, "d": 3, "par": 2}, DIV_PE, "R30: reads scatter-added SRAM "
                                                       "'sums' (lane 0) at addresses that are "
                                                       "not a rising arithmetic sequence"),
])
def test_constructs_not_mapped_yet_are_named(app, kw, pe, needle):
    program, inputs, _ = ARRAY_PROGRAMS[app](**kw)
    with pytest.raises(MappingError, match=re.escape(needle)):
        compile_program(program, inputs, pe)


def _branch_program(cond, orelse: bool = True) -> Program:
    p = Program("rows")
    a, out = p.dram("a", (6,)), p.dram("out", (6,))
    with p.foreach(6, label="A") as i:
        with p.if_(cond(i, a), label="B"):
            with p.foreach(1):
                out[i] = a[i] * 2
        if orelse:
            with p.else_():
                with p.foreach(1):
                    out[i] = a[i] + 1
    return p


@pytest.mark.parametrize("cond, needle", [
    (lambda i, a: a[i] > 0, "branch B: its condition reads data or more than one loop index"),
    (lambda i, a: (i % 3).eq(0), "branch B: a clause runs on iterations [1, 2, 4, 5] of loop "
                                 "A, not a strided range"),
])
def test_branches_the_array_does_not_run_are_named(cond, needle):
    with pytest.raises(MappingError, match=re.escape(needle)):
        compile_program(_branch_program(cond), {"a": np.arange(6, dtype=np.int32)}, MEM_PE)


def test_a_branch_on_an_index_compiles_to_strided_clauses():
    """i % 3 == 0 without an else: the clause counts A as range(0, 4, 3); the DRAM
    streams carry only the iterations the clause runs."""
    ap = compile_program(_branch_program(lambda i, a: (i % 3).eq(0), orelse=False),
                         {"a": np.arange(6, dtype=np.int32) * 7}, MEM_PE)
    lp = next(iter(ap.pes.values())).chain[0][0]
    assert (lp.start.value, lp.stop.value, lp.step.value) == (0, 4, 3)
    assert [v.tolist() for v in ap.inputs.values()] == [[0, 21]]
    assert [v[1] for v in ap.outputs.values()] == [[(0,), (3,)]]


def test_memory_epochs_the_memory_pe_cannot_serve_are_named():
    """A read between two writes of an epoch, and an SRAM read a different number of times
    after each of its epochs."""
    p = Program("early")
    a, out, m = p.dram("a", (4,)), p.dram("out", (4,)), p.sram("m", (4,))
    with p.foreach(4) as i:
        p.store(m, i, a[i], label="Wm")
        out[i] = p.load(m, 0, label="Rm")
    with pytest.raises(MappingError, match=re.escape(
            "SRAM 'm': Rm reads it while Wm writes an epoch")):
        compile_program(p, {"a": np.arange(4, dtype=np.int32)}, MEM_PE)
    p = Program("uneven")
    a, out, m = p.dram("a", (2, 4)), p.dram("out", (4,)), p.sram("m", (4,))
    with p.foreach(2) as i:
        with p.foreach(4) as j:
            p.store(m, j, a[i, j], label="Wm")
        with p.if_(i.eq(0), label="B"):
            with p.foreach(4) as k:
                out[k] = p.load(m, k, label="Rm")
    with pytest.raises(MappingError, match=re.escape(
            "Rm: reads SRAM 'm' [4, 0] times after its 2 write epochs; a memory PE reads "
            "the same number of words after every epoch")):
        compile_program(p, {"a": np.arange(8, dtype=np.int32).reshape(2, 4)}, MEM_PE)


#: the random programs (mapper.dataflow.random_programs, seeds 0-299) the array runs
RANDOM_COMPILED = [29, 31, 77, 110, 111, 120, 131, 140, 160, 166, 167, 174, 181, 229, 244,
                   266, 271, 276, 285, 293]


def test_random_programs_compile_or_are_refused_in_one_line():
    """Seeds 0-299: each program compiles or is refused with a one-line MappingError (most
    for SRAMs written at several sites), never another exception."""
    compiled = []
    for seed in range(300):
        program, inputs = random_program(seed)
        try:
            compile_program(program, inputs, MEM_PE)
        except MappingError as exc:
            assert "\n" not in str(exc) and str(exc).startswith(
                f"dataflow program 'random{seed}' on the array: ")
            continue
        compiled.append(seed)
    assert compiled == RANDOM_COMPILED


@pytest.mark.parametrize("seed", [167, 271])
def test_random_programs_bit_exact_on_the_array(df, seed, tmp_path):
    """Random programs (nested loops, Regs forwarded and reduced, SRAMs never written read as 0),
    under random stalls: the DRAMs equal the interpreter's."""
    program, inputs = random_program(seed)
    r = run_program(program, inputs, df, tmp_path, stall_in=0.3, stall_out=0.3,
                    stall_seed=seed)
    assert np.array_equal(r.memories["out"], interpret(program, inputs)["out"])
    assert_model(r)
    assert r.report["pes"] >= 5 and r.cycles > 0


def test_cgra_run_on_a_dataflow_design(df, tmp_path, cgra):
    code, out, err = cgra("run", "dot_product", "--design", df.root, "--par", "2", "--out",
                          tmp_path / "run", "--stall-seed", "4", "--arg", "n=32")
    assert code == 0, err
    assert "dot_product (par 2) on design small_df: bit-exact" in out
    assert json.loads((tmp_path / "run" / "dataflow_run.json").read_text())["tokens"] == \
        {"in": 64, "out": 1}                                  # --arg n=32: 2 x 32 words
    assert "3 PEs (L1: 3), 4 input and 1 output IO tiles" in out
    # the clock the routed program closes at, named by its model (configs/small_df.toml
    # names the 32-bit delay table), as pipelined.json holds it
    rep = json.loads((tmp_path / "run" / "dataflow_run.json").read_text())
    pl = json.loads((tmp_path / "run" / "pipelined.json").read_text())["timing"]
    assert rep["timing"]["fmax_mhz"] == round(pl["fmax_mhz"], 2) > 0
    assert rep["timing"]["model"].startswith("table ") and \
        rep["timing"]["model"].endswith("delays_32.json")
    assert (f"{rep['timing']['fmax_mhz']:.0f} MHz (critical path "
            f"{rep['timing']['period_ps']:.0f} ps, {rep['timing']['model']})") in out
    c = rep["cycles"]
    assert c["array_model"] == c["rtl"]
    assert (f"{c['rtl']} cycles in RTL under random stalls" in out and f"predicted "
            f"{c['rtl']} by the model of the mapped program, {c['token_simulator']} by the "
            f"token-level simulator of SARA's units" in out)
    # the run directory holds the stage files: `cgra verify` proves its bitstream
    code, out, err = cgra("verify", df.root, tmp_path / "run" / "dot_product.bs")
    assert code == 0, err
    assert "proved for 7 nets" in out and "valid/ready proved with the data on 7" in out
    app = json.loads((tmp_path / "run" / "app.json").read_text())
    assert app["kind"] == "dataflow" and app["units"] == {"L1": 3}
    code, out, err = cgra("run", "dot_product", "--design", df.root, "--unroll", "2", "--out",
                          tmp_path / "bad")
    assert code == 2 and "error: --unroll: not an option of a dataflow program" in err
    assert not (tmp_path / "bad").exists()
    code, out, err = cgra("run", "dot_product", "--design", df.root, "--model-hierarchy",
                          "blocks", "--out", tmp_path / "blocks")
    assert code == 2 and "the design has no column blocks" in err and "'tiles'" in err
    assert not (tmp_path / "blocks").exists()
    code, out, err = cgra("run", "gaussian", "--design", df.root, "--par", "2", "--out",
                          tmp_path / "g")
    assert code == 2 and "error: --par: gaussian is not a dataflow program" in err
    for args, needle in [(["--arg", "m=3"], "--arg 'm=3': dot_product has no size argument "
                                             "'m'; dot_product takes n"),
                         (["--arg", "n"], "--arg 'n': not NAME=INT"),
                         (["--arg", "n=4", "--arg", "n=5"], "--arg 'n=5': repeated"),
                         (["--arg", "n=x"], "--arg 'n=x': 'x' is not an integer"),
                         (["--arg", "n=0"], "n=0 must be >= 1")]:
        code, out, err = cgra("run", "dot_product", "--design", df.root, "--out",
                              tmp_path / "a", *args)
        assert code == 2 and needle in err and "Traceback" not in err, (args, err)
        assert not (tmp_path / "a").exists()
    code, out, err = cgra("run", "gaussian", "--design", df.root, "--arg", "n=3", "--out",
                          tmp_path / "g")
    assert code == 2 and "error: --arg: gaussian is not a dataflow program" in err
