"""CMMC (mapper.dataflow.cmmc): access dependency graphs, control reduction, token levels
and credits, with SARA's known answers (Fig. 2a m3/m4, notes §2.4; Fig. 5, notes §2.6)."""
from __future__ import annotations

import networkx as nx
import pytest
from fixtures_sara import double_buffer, fig2a, fig5b, fig5d

from mapper.dataflow.apps import branch
from mapper.dataflow.cmmc import cmmc
from mapper.dataflow.program import Program
from mapper.dataflow.random_programs import random_program

F, B = False, True      # forward / backward edge


def test_fig2a_m3_ring():
    p, _ = fig2a()
    m3 = cmmc(p).memories["m3"]
    assert m3.edge_set("before") == {
        ("W31", "W32", F), ("W32", "R3", F), ("W31", "R3", F),          # WAW, RAW, RAW
        ("R3", "W31", B), ("R3", "W32", B), ("W32", "W31", B)}          # loop A LCDs
    assert m3.pruned_forward == (("W31", "R3"),)
    assert set(m3.pruned_backward) == {("W32", "W31"), ("R3", "W32")}
    assert m3.edge_set() == {("W31", "W32", F), ("W32", "R3", F), ("R3", "W31", B)}
    levels = {(d.src, d.dst): (d.push_level, d.pop_level, d.push_unit, d.pop_unit,
                               d.kind, d.loop, d.credit) for d in m3.kept}
    assert levels == {
        ("W31", "W32"): ("B", "F", "E'W31", "F'W32", "WAW", None, 0),
        ("W32", "R3"): ("F", "G", "F'W32", "G'R3", "RAW", None, 0),
        ("R3", "W31"): ("G", "B", "G'R3", "E'W31", "WAR", "A", 1)}
    assert all(d.lca == "A" for d in m3.kept)


def test_fig2a_m4_and_counts():
    p, _ = fig2a()
    t = cmmc(p)
    m4 = t.memories["m4"]
    assert m4.edge_set("before") == m4.edge_set() == {("W4", "R4", F), ("R4", "W4", B)}
    (fwd,) = [d for d in m4.kept if not d.backward]
    (bwd,) = [d for d in m4.kept if d.backward]
    assert (fwd.push_level, fwd.pop_level, fwd.push_unit, fwd.pop_unit) == ("F", "G", "F'W4",
                                                                            "G'R4")
    assert (bwd.push_level, bwd.pop_level, bwd.loop, bwd.credit) == ("G", "F", "A", 1)
    # m1, m2 (inside B): ring on loop B; DRAMs with one access each: nothing
    assert t.memories["m1"].edge_set() == {("W1", "R1", F), ("R1", "W1", B)}
    assert t.memories["m1"].kept[1].loop == "B" or t.memories["m1"].kept[0].loop == "B"
    assert t.memories["d5"].edge_set("before") == set()
    assert (t.count(reduced=False), t.count()) == (6 + 2 + 2 + 2, 3 + 2 + 2 + 2)
    assert {s.kind for s in t.streams()} == {"token", "credit"}
    assert ("G'R3", "E'W31", "credit", "R3->W31") in {
        (s.src, s.dst, s.kind, s.site) for s in t.streams()}


def test_fig5d_reduction():
    p, _ = fig5d()
    m = cmmc(p).memories["m"]
    assert m.edge_set("before") == {
        ("W1", "R1", F), ("W1", "W2", F), ("W1", "R2", F), ("R1", "W2", F), ("R1", "R2", F),
        ("W2", "R2", F), ("R1", "W1", B), ("W2", "W1", B), ("W2", "R1", B), ("R2", "W1", B),
        ("R2", "R1", B), ("R2", "W2", B)}
    # forward: W1-W2 and R1-R2 (and W1-R2) removed by transitive reduction
    assert set(m.pruned_forward) == {("W1", "W2"), ("R1", "R2"), ("W1", "R2")}
    # backward: R2⇢R1 via R2⇢W1→R1, W2⇢W1 via W2→R2⇢W1; R2⇢W1 kept
    assert {("R2", "R1"), ("W2", "W1")} <= set(m.pruned_backward)
    assert m.edge_set() == {("W1", "R1", F), ("R1", "W2", F), ("W2", "R2", F),
                            ("R1", "W1", B), ("R2", "W1", B)}
    loops = {(d.src, d.dst): d.loop for d in m.kept if d.backward}
    assert loops == {("R1", "W1"): "B", ("R2", "W1"): "A"}
    # the forward reduction equals networkx's transitive reduction when every path is sure
    fwd = nx.DiGraph([(u, v) for u, v, b in m.edge_set("before") if not b])
    assert set(nx.transitive_reduction(fwd).edges) == {(u, v) for u, v, b in m.edge_set()
                                                       if not b}


def test_fig5b_lcd_across_a_branch():
    p, _ = fig5b()
    d = cmmc(p).memories["d"]
    before = d.edge_set("before")
    # R0 (if clause) and W1 (else clause): no forward edge (the LCA is branch C), LCDs both ways
    assert ("R0", "W1", F) not in before and ("W1", "R0", F) not in before
    assert {("R0", "W1", B), ("W1", "R0", B)} <= before
    # R0, R1: DRAM reads are concurrent (no RAR); W0, R1: no LCD (no common loop)
    assert not {e for e in before if {e[0], e[1]} == {"R0", "R1"}}
    assert ("R1", "W0", B) not in before and ("W0", "R1", F) in before
    assert before == {("W0", "R0", F), ("W0", "W1", F), ("W0", "R1", F), ("W1", "R1", F),
                      ("R0", "W1", B), ("W1", "R0", B)}
    lcd = {(x.src, x.dst): (x.loop, x.lca, x.push_level, x.pop_level) for x in d.kept
           if x.backward}
    assert lcd == {("R0", "W1"): ("A", "C", "C", "C"), ("W1", "R0"): ("A", "C", "C", "C")}
    assert d.pruned_forward == (("W0", "R1"),)


def test_no_reduction_through_edges_inside_a_branch_clause():
    # X, Y inside clause I; W0 before it, Z after it. The edge X -> Y only has tokens when
    # the clause runs (a skipped clause forwards its tokens at once), so it cannot justify
    # removing W0 -> Y or X -> Z; W0 -> Z still goes (W0 -> X -> Z, both sure in A).
    p = Program("guarded")
    d = p.dram("d", (4,))
    m = p.sram("m", (4,))
    with p.foreach(4, label="A") as i:
        with p.foreach(4, label="P0") as k:
            p.store(m, k, k + i, label="W0")
        with p.if_((i % 2).eq(0), label="I"):
            with p.foreach(4, label="P1") as k:
                p.store(d, k, p.load(m, k, label="X"), label="Wd")
            with p.foreach(4, label="P2") as k:
                p.store(m, k, k * 2, label="Y")
        with p.foreach(4, label="P3") as k:
            p.store(d, k, p.load(m, k, label="Z") + 1, label="Wd2")
    mm = cmmc(p).memories["m"]
    fwd = {(u, v) for u, v, b in mm.edge_set() if not b}
    assert fwd == {("W0", "X"), ("W0", "Y"), ("X", "Y"), ("X", "Z"), ("Y", "Z")}
    assert mm.pruned_forward == (("W0", "Z"),)
    plain = nx.transitive_reduction(nx.DiGraph([(u, v) for u, v, b in mm.edge_set("before")
                                                if not b]))
    assert set(plain.edges) == {("W0", "X"), ("X", "Y"), ("Y", "Z")}


def test_multibuffer_credit_proved_by_z3():
    p, _ = double_buffer(write=8, read=8)
    buf = cmmc(p).memories["buf"]
    assert (buf.buffer_loop, buf.credit) == ("A", 2)
    (credit,) = [d for d in buf.kept if d.backward]
    assert (credit.src, credit.dst, credit.credit, credit.loop) == ("R", "W", 2, "A")


def test_multibuffer_credit_refused_when_reads_exceed_writes():
    p, _ = double_buffer(write=6, read=8)
    buf = cmmc(p).memories["buf"]
    assert (buf.buffer_loop, buf.credit) == (None, 1)
    assert [d.credit for d in buf.kept if d.backward] == [1]


def test_multibuffer_credit_refused_for_a_shifted_read():
    p = Program("shifted")
    d = p.dram("d", (4, 8))
    out = p.dram("out", (4, 8))
    buf = p.sram("buf", (8,), buffers=2)
    with p.foreach(4, label="A") as i:
        with p.foreach(8, label="B") as k:
            p.store(buf, k, d[i, k], label="W")
        with p.foreach(8, label="C") as k:
            p.store(out, (i, k), p.load(buf, (k + i) % 9, label="R"), label="Wo")
    assert cmmc(p).memories["buf"].credit == 1


@pytest.mark.parametrize("seed", range(40))
def test_reduction_keeps_the_forward_order(seed):
    """Property on random programs: control reduction never loses a forward ordering (the
    kept forward edges have the transitive closure of all forward edges), every kept edge
    was in the graph before, and pruned + kept = before."""
    p, _ = random_program(seed)
    for m in cmmc(p).memories.values():
        before = {(u, v) for u, v, b in m.edge_set("before") if not b}
        after = {(u, v) for u, v, b in m.edge_set() if not b}
        assert after <= before and before - after == set(m.pruned_forward)
        closure = nx.transitive_closure_dag(nx.DiGraph(list(after)) if after else nx.DiGraph())
        for u, v in before:
            assert closure.has_edge(u, v), (m.memory, u, v)
        back_before = {(u, v) for u, v, b in m.edge_set("before") if b}
        back_after = {(u, v) for u, v, b in m.edge_set() if b}
        assert back_before - back_after == set(m.pruned_backward)


def _fig4(cond=lambda p, i, n: (i % 2).eq(0), n=8, length=4, buffers=2, write=None,
          outer=1, swap=False) -> Program:
    """SARA Fig. 4 (notes §2.5) with knobs: loop O (``outer``) around loop A (``n``) around
    branch B (``cond``); Wmem (loop D, ``write`` words) in the if clause and Rmem (loop F)
    in the else clause, or the other way round with ``swap``."""
    p = Program("fig4")
    d = p.dram("d", (outer, n, length))
    out = p.dram("out", (outer, n, length))
    p.dram("flag", (n,))
    mem = p.sram("mem", (length,), buffers=buffers)

    def writer(o, i):
        with p.foreach(length if write is None else write, label="D") as j:
            p.store(mem, j, d[o, i, j] + i, label="Wmem")

    def reader(o, i):
        with p.foreach(length, label="F") as j:
            p.store(out, (o, i, j), p.load(mem, j, label="Rmem") + 1, label="Wout")

    with p.foreach(outer, label="O") as o:
        with p.foreach(n, label="A") as i:
            first, second = (reader, writer) if swap else (writer, reader)
            with p.if_(cond(p, i, n), label="B"):
                first(o, i)
            with p.else_():
                second(o, i)
    return p


def test_alternating_clauses_get_the_multibuffer_credit():
    """apps.branch (SARA Fig. 4): writer in the if clause on even iterations of A, reader in
    the else clause on odd ones; the WAR credit is the buffer depth, the RAW edge keeps 1."""
    p, _, _ = branch(n=16, length=16)
    mem = cmmc(p).memories["mem"]
    assert (mem.buffer_loop, mem.credit) == ("A", 2)
    assert mem.reason == ("alternating clauses: branch B alternates writer B.then and reader "
                          "B.else along loop A, A(R) ⊆ A(W) of the write phase before")
    assert mem.phases == (("Wmem", "B.then"), ("Rmem", "B.else"))
    assert {(d.src, d.dst, d.kind, d.credit, d.loop, d.push_level, d.pop_level)
            for d in mem.kept} == {("Wmem", "Rmem", "RAW", 1, "A", "B", "B"),
                                   ("Rmem", "Wmem", "WAR", 2, "A", "B", "B")}


def test_alternating_clauses_writer_in_the_else_clause_and_outer_loop():
    mem = cmmc(_fig4(cond=lambda p, i, n: (i % 2).eq(1), swap=True)).memories["mem"]
    assert (mem.credit, mem.phases) == (2, (("Wmem", "B.else"), ("Rmem", "B.then")))
    # O x A = 2 x 4: W R W R | W R W R alternates along the whole execution
    mem = cmmc(_fig4(n=4, outer=2)).memories["mem"]
    assert (mem.buffer_loop, mem.credit) == ("A", 2)


@pytest.mark.parametrize("kw, reason", [
    ({"cond": lambda p, i, n: i < n // 2},
     "the clauses of branch B do not alternate: A=0 and A=1 take the same one"),
    ({"cond": lambda p, i, n: (i % 2).eq(1)},
     "branch B does not take the writer's clause on the first iteration of loop A"),
    ({"buffers": 1}, "mem is single-buffered"),
    ({"write": 3},
     "z3 does not prove that read Rmem at A=1 is contained in the writes at A=0"),
    ({"n": 3, "outer": 2},        # W R W | W R W: two write phases in a row
     "the clauses of branch B do not alternate: A=2 and A=0 take the same one"),
    ({"cond": lambda p, i, n: p.memories["flag"][i].eq(0)},
     "the condition of branch B is not affine in the loop indices"),
])
def test_alternating_clauses_refused(kw, reason):
    mem = cmmc(_fig4(**kw)).memories["mem"]
    assert (mem.buffer_loop, mem.credit, mem.reason, mem.phases) == (None, 1, reason, ())
    assert sorted(d.credit for d in mem.kept) == [1, 1]


def test_multibuffer_reasons_of_the_pipelined_case():
    p, _ = double_buffer(write=8, read=8)
    buf = cmmc(p).memories["buf"]
    assert buf.reason == "pipelined: A(R) ⊆ A(W) in every iteration of loop A"
    assert buf.phases == (("W", "B"), ("R", "C"))
    p, _ = double_buffer(write=6, read=8)
    assert cmmc(p).memories["buf"].reason == (
        "z3 does not prove that read R is contained in the writes of each iteration of loop A")
