"""Spatial's ``Sequential`` schedule (PLDI'18 §3) in the dataflow compiler (issue 34): the
builder flag, the control tokens cmmc adds (last stage's done -> first stage of the next
iteration, credit 1; stage k -> stage k + 1), the simulator honouring them (more cycles than
the pipelined loop, the interpreter's result), random programs with sequential loops, the
logreg / pagerank variants and ``cgra dataflow --sequential``."""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from cgra.cli import cli, main
from cgra.errors import ProgramError, SimulationError
from mapper.dataflow.apps import APPS, TOLERANCES
from mapper.dataflow.cmmc import ControlDep, cmmc, control_deps
from mapper.dataflow.interp import interpret
from mapper.dataflow.lower import control_tree, lower
from mapper.dataflow.program import DoWhile, Loop, Program
from mapper.dataflow.random_programs import random_program
from mapper.dataflow.sim import simulate

N = 8


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and a[k].shape == b[k].shape
        and np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f") for k in a)


def two_stage(sequential: bool, par: int = 1) -> tuple[Program, dict]:
    """Per i < N: loop A writes ``s[i] = a[i] * 2 + j`` (j < 4), then loop B reads it,
    ``out[i] = s[i] + j``; so ``out[i] = 2 a[i] + 6``."""
    p = Program("two_stage")
    a, out, s = p.dram("a", (N,)), p.dram("out", (N,)), p.sram("s", (N,))
    with p.foreach(N, par=par, label="L", sequential=sequential) as i:
        with p.foreach(4, label="A") as j:
            p.store(s, i, p.load(a, i, label="Ra") * 2 + j, label="Ws")
        with p.foreach(4, label="B") as j:
            p.store(out, i, p.load(s, i, label="Rs") + j, label="Wo")
    return p, {"a": np.arange(N, dtype=np.int32) - 3}


def _run(p, inputs, **kw):
    v = lower(p)
    return simulate(v, cmmc(v), inputs, **kw)


# ---------------------------------------------------------------------------- front end
def test_builder_flag_and_interpreter_result():
    p, inputs = two_stage(True)
    loops = {c.label: c for c in p.controllers() if isinstance(c, Loop)}
    assert loops["L"].sequential is True
    assert loops["A"].sequential is False and loops["B"].sequential is False
    for seq in (False, True):
        q, x = two_stage(seq)
        assert interpret(q, x)["out"].tolist() == [2 * v + 6 for v in range(-3, N - 3)]
    tree = control_tree(p)
    assert tree.nodes["L"]["sequential"] and not tree.nodes["A"]["sequential"]
    assert tree.nodes["P"]["sequential"] is False


def test_reduce_and_do_while_take_the_flag():
    p = Program("flags")
    r = p.reg("r")
    out = p.dram("out", (1,))
    with p.reduce(r, 4, label="R", sequential=True) as (i, add):
        add(i * 3)
    c = p.reg("c")
    with p.do_while(label="D", sequential=True):
        c.value = c.value + r.value
        p.loop_while(c.value < 40)
    out[0] = c.value
    kinds = {c.label: c.sequential for c in p.controllers() if isinstance(c, (Loop, DoWhile))}
    assert kinds == {"R": True, "D": True}
    assert int(interpret(p)["out"][0]) == 54            # r = 18; 18, 36, 54
    assert _same(_run(p, {}, latency=(1, 4)).memories, interpret(p))


@pytest.mark.parametrize("call", [
    lambda p: p.foreach(4, sequential=1),
    lambda p: p.do_while(sequential="yes"),
])
def test_non_bool_sequential_is_refused(call):
    p = Program("bad")
    with pytest.raises(ProgramError, match=r"sequential must be True or False, got"):
        with call(p):
            pass


# ---------------------------------------------------------------------------- cmmc
def test_control_tokens_of_two_stage():
    p, _ = two_stage(True)
    v = lower(p)
    t = cmmc(v)
    stage_a = ("A", "A'Ra", "A'Ws")
    stage_b = ("B", "B'Rs", "B'Wo")
    assert t.control == (ControlDep("L", "A", "B", False, 0, stage_a, stage_b),
                         ControlDep("L", "B", "A", True, 1, stage_b, stage_a))
    assert control_deps(v) == t.control
    assert [c.key for c in t.control] == ["L:A->B", "L:B->A"]
    pipelined = cmmc(lower(two_stage(False)[0]))
    assert pipelined.control == ()
    assert t.count() == pipelined.count() + 2
    assert t.count(reduced=False) == pipelined.count(reduced=False) + 2
    ctl = [s for s in t.streams() if s.site.startswith("L:")]
    assert len(ctl) == 18                                # 3 x 3 units per direction
    assert {(s.kind, s.site) for s in ctl} == {("token", "L:A->B"), ("credit", "L:B->A")}
    g = t.graph()
    back = [(u, w) for u, w, d in g.edges(data=True) if d["control"] and d["credit"] == 1]
    assert sorted(back) == sorted((u, w) for u in stage_b for w in stage_a)
    assert g.number_of_edges() == len(t.streams())


def test_stages_include_bound_and_condition_leaves():
    """Extra control-tree leaves are stages: L.bound (a data-dependent inner bound) and
    I.cond run in their own control VCUs, chained like the blocks."""
    p = Program("leaves")
    n, out, s = p.dram("n", (4,)), p.dram("out", (4, 4)), p.sram("s", (4,))
    with p.foreach(4, label="L", sequential=True) as i:
        s[i] = n[i] * 2
        with p.foreach(n[i], label="M") as j:
            out[i, j] = s[i] + j
        with p.if_(s[i] > 2, label="I"):
            out[i, 0] = 100 + i
        with p.else_():
            out[i, 3] = -1
    inputs = {"n": np.array([1, 3, 0, 2], np.int32)}
    v = lower(p)
    t = cmmc(v)
    chain = [(c.src, c.dst) for c in t.control]
    assert chain == [("B0", "M.bound"), ("M.bound", "M"), ("M", "I.cond"), ("I.cond", "I"),
                     ("I", "B0")]
    assert [c.backward for c in t.control] == [False] * 4 + [True]
    ref = interpret(p, inputs)
    assert ref["out"][1].tolist() == [101, 7, 8, 0] and ref["out"][0].tolist() == [2, 0, 0, -1]
    for seed in range(3):
        assert _same(simulate(v, t, inputs, seed=seed, latency=(1, 5)).memories, ref)


def test_nested_sequential_controllers_each_get_their_ring():
    p = Program("nested")
    a, out = p.dram("a", (3, 4)), p.dram("out", (3, 4))
    s = p.sram("s", (4,))
    with p.foreach(3, label="O", sequential=True) as i:
        with p.foreach(4, label="I", sequential=True) as j:
            s[j] = a[i, j] + 1
            out[i, j] = s[j] * 2
        with p.foreach(4, label="C") as j:
            out[i, j] = out[i, j] + s[3 - j]
    t = cmmc(lower(p))
    # O: stages I and C; I: its one block (split in two segments, write then read of s) is
    # one stage, its credit goes from the block's units back to themselves
    assert [(c.controller, c.src, c.dst, c.backward) for c in t.control] == [
        ("O", "I", "C", False), ("O", "C", "I", True), ("I", "B0", "B0", True)]
    inner = t.control[-1]
    assert inner.push_units == inner.pop_units == (
        "I.0", "I.1", "I'R0", "I'W1", "I'R2", "I'W3")
    assert set(inner.push_units) == set(t.control[0].push_units)      # stage I of O
    x = {"a": np.arange(12, dtype=np.int32).reshape(3, 4)}
    ref = interpret(p, x)
    aa = x["a"]
    assert ref["out"].tolist() == (2 * (aa + 1) + aa[:, ::-1] + 1).tolist()
    assert _same(_run(p, x, latency=(1, 5), seed=2).memories, ref)


# ---------------------------------------------------------------------------- simulator
@pytest.mark.parametrize("latency", [(1, 1), (1, 4)])
def test_sequential_takes_more_cycles_and_keeps_the_result(latency):
    runs = {}
    for seq in (False, True):
        p, inputs = two_stage(seq)
        r = _run(p, inputs, latency=latency, seed=5)
        assert _same(r.memories, interpret(p, inputs))
        runs[seq] = r.cycles
    assert runs[True] > runs[False]
    assert runs[True] >= 1.3 * runs[False]       # 144 vs 101 cycles at latency 1


def test_par_lanes_of_a_sequential_loop():
    p, inputs = two_stage(True, par=2)
    r = _run(p, inputs, latency=(1, 4), seed=1)
    assert _same(r.memories, interpret(p, inputs))
    assert r.cycles > _run(*two_stage(False, par=2), latency=(1, 4), seed=1).cycles


def test_control_credit_zero_deadlocks_and_two_overlaps():
    p, inputs = two_stage(True)
    v = lower(p)
    t = cmmc(v)
    with pytest.raises(SimulationError, match=r"deadlock .*credit L:B->A"):
        simulate(v, t, inputs, credits={"L:B->A": 0})
    one = simulate(v, t, inputs, latency=(1, 1))
    two = simulate(v, t, inputs, latency=(1, 1), credits={"L:B->A": 2})
    assert two.cycles < one.cycles
    assert _same(two.memories, one.memories)
    with pytest.raises(SimulationError, match="L:A->C name no credit edge"):
        simulate(v, t, inputs, credits={"L:A->C": 1})


@settings(max_examples=10, deadline=None, derandomize=True)
@given(st.integers(min_value=0, max_value=2**31 - 1), st.integers(min_value=0, max_value=99))
def test_random_sequential_programs_equal_the_interpreter(seed, lat_seed):
    p, inputs = random_program(seed, sequential=0.5)
    ref = interpret(p, inputs)
    v = lower(p)
    r = simulate(v, cmmc(v), inputs, seed=lat_seed, latency=(1, 5))
    assert _same(r.memories, ref), f"random_program({seed}, sequential=0.5), lat {lat_seed}"


def test_random_programs_with_sequential_are_the_same_programs():
    with_control = 0
    for seed in range(40):
        base, x = random_program(seed)
        seq, y = random_program(seed, sequential=1.0)
        assert [(type(c).__name__, c.label) for c in base.controllers()] == \
            [(type(c).__name__, c.label) for c in seq.controllers()]
        flags = [c.sequential for c in seq.controllers() if isinstance(c, (Loop, DoWhile))]
        copies = len([m for m in seq.memories.values() if m.kind == "sram"])
        assert flags.count(False) == copies            # only the final copy loops
        assert not any(c.sequential for c in base.controllers()
                       if isinstance(c, (Loop, DoWhile)))
        assert _same(interpret(base, x), interpret(seq, y))
        with_control += bool(control_deps(lower(seq)))
    assert with_control >= 30
    with pytest.raises(ProgramError, match=r"sequential=1.5 is not a probability"):
        random_program(0, sequential=1.5)


# ---------------------------------------------------------------------------- apps, CLI
@pytest.mark.parametrize("name", ["logreg", "pagerank"])
def test_apps_with_a_sequential_iteration_loop(name):
    cycles = {}
    for seq in (False, True):
        p, inputs, reference = APPS[name](sequential=seq)
        r = _run(p, inputs, latency=(1, 1))
        assert _same(r.memories, interpret(p, inputs))
        rtol, atol = TOLERANCES[name]
        for k, want in reference(inputs).items():
            assert np.allclose(r.memories[k], want, rtol=rtol, atol=atol)
        cycles[seq] = r.cycles
    assert cycles[True] > cycles[False]


def test_cli_sequential_reports_the_control_tokens(tmp_path, monkeypatch, capsys):
    res = CliRunner().invoke(cli, ["dataflow", "pagerank", "--sequential", "--latency", "1,1",
                                   "--out", str(tmp_path)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "pagerank (par 1, sequential): bit-exact" in res.output
    rep = json.loads((tmp_path / "dataflow_report.json").read_text())
    assert rep["sequential"] is True and rep["tokens"]["control"] == 3
    assert [(c["backward"], c["credit"]) for c in rep["control_tokens"]] == [
        (False, 0), (False, 0), (True, 1)]
    monkeypatch.setattr(sys, "argv", ["cgra", "dataflow", "gemm", "--sequential", "--out",
                                      str(tmp_path / "g")])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: --sequential: app 'gemm' has no iteration loop to make sequential; apps that "
        "have one: logreg, pagerank"]
