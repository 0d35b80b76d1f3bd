"""SARA §III-C optimisations (mapper.dataflow.optimize): msr and rtelm rewrite programs and
keep the interpreter's DRAM results; dupra and xbar-elm plan the banked datapath."""
from __future__ import annotations

import numpy as np
import pytest

from mapper.dataflow.interp import interpret
from mapper.dataflow.optimize import dupra, msr, rtelm, xbar_elm
from mapper.dataflow.program import FIFO, DRAM, SRAM, Load, Program, Reg, maximum
from mapper.dataflow.random_programs import random_program


def drams(program: Program, inputs) -> dict[str, np.ndarray]:
    r = interpret(program, inputs)
    return {n: r[n] for n, m in program.memories.items() if isinstance(m, DRAM)}


def same_drams(a: Program, b: Program, inputs) -> None:
    ra, rb = drams(a, inputs), drams(b, inputs)
    assert ra.keys() == rb.keys()
    for n in ra:
        np.testing.assert_array_equal(ra[n], rb[n], err_msg=n)


# ---------------------------------------------------------------------------- msr
def msr_program() -> Program:
    p = Program("msr")
    a = p.dram("a", (8,))
    out = p.dram("out", (4,))
    m = p.sram("m", (4,))
    with p.foreach(8, label="L0") as i:
        m[0] = m[0] + a[i]
        m[1] = maximum(m[1], a[i])
        m[2] = m[2] + 1
    for k in range(4):
        p.store(out, k, p.load(m, k, label=f"Rout{k}"), label=f"Wout{k}")
    return p


def test_msr_turns_a_constant_index_sram_into_4_regs():
    p = msr_program()
    q, rep = msr(p)
    assert rep.converted == {"m": ((0, "m_0"), (1, "m_1"), (2, "m_2"), (3, "m_3"))}
    assert rep.kept == {}
    assert list(q.memories) == ["a", "out", "m_0", "m_1", "m_2", "m_3"]
    assert all(isinstance(q.memories[f"m_{k}"], Reg) for k in range(4))
    # the access sites keep their labels, now on registers
    reads = {ld.label: ld for b in q.blocks() for ld in b.loads()}
    assert (reads["Rout3"].mem.name, reads["Rout3"].index) == ("m_3", ())
    # the input program is untouched
    assert isinstance(p.memories["m"], SRAM) and "m_0" not in p.memories
    x = {"a": np.array([3, 1, 4, 1, 5, 9, 2, 6])}
    assert drams(q, x)["out"].tolist() == [31, 9, 8, 0]
    same_drams(p, q, x)


def test_msr_2d_f32_and_temporaries():
    p = Program("msr2d")
    out = p.dram("out", (2,), dtype="f32")
    m = p.sram("m", (2, 3), dtype="f32")
    with p.foreach(5, label="L"):
        t = p.let(1)
        m[t, 2] = m[t, 2] + 1.5
    out[0] = m[1, 2]
    out[1] = m[0, 0]
    q, rep = msr(p)
    assert rep.converted == {"m": ((0, "m_0"), (5, "m_5"))}
    assert q.memories["m_5"].dtype == "f32" and q.memories["m_5"].init == 0.0
    assert drams(q, {})["out"].tolist() == [7.5, 0.0]
    same_drams(p, q, {})


def test_msr_keeps_an_sram_with_a_loop_index():
    p = Program("keep")
    a = p.dram("a", (4,))
    m = p.sram("m", (4,))
    c = p.sram("c", (2,))
    with p.foreach(4) as i:
        p.store(m, i, a[i], label="Wm")
        c[1] = c[1] + a[i]
    q, rep = msr(p)
    assert rep.kept == {"m": "access Wm has a non-constant address"}
    assert rep.converted == {"c": ((1, "c_1"),)}
    assert isinstance(q.memories["m"], SRAM)


# ---------------------------------------------------------------------------- rtelm
def fifo_chain() -> Program:
    p = Program("chain")
    a = p.dram("a", (16,))
    b = p.dram("b", (32,))
    f1 = p.fifo("f1", depth=16)
    f2 = p.fifo("f2", depth=16)
    with p.foreach(16, label="L0") as i:
        p.store(f1, (), a[i] * 3, label="Wf1")
    with p.foreach(16, label="L1"):
        p.store(f2, (), p.load(f1, (), label="Rf1"), label="Wf2")
    with p.foreach(16, label="L2") as j:
        t = p.let(j * 2 + 1)
        p.store(b, t, p.load(f2, (), label="Rf2"), label="Wb")
    return p


def test_rtelm_collapses_a_chain_of_fifos():
    p = fifo_chain()
    q, rep = rtelm(p)
    assert [(r.memory, r.target, r.writer, r.reader, r.store, r.block)
            for r in rep.eliminated] == [("f1", "f2", "Wf1", "Rf1", "Wf2", "B0"),
                                         ("f2", "b", "Wf2", "Rf2", "Wb", "B0")]
    assert rep.removed_loops == ("L1", "L2")
    assert list(q.memories) == ["a", "b"]
    assert [c.label for c in q.controllers()] == ["P", "L0", "B0"]
    (store,) = q.blocks()[0].stores()
    assert store.label == "Wb" and store.mem.name == "b"
    x = {"a": np.arange(16) - 5}
    out = drams(q, x)["b"]
    assert out[1::2].tolist() == (3 * (np.arange(16) - 5)).tolist()
    assert out[0::2].tolist() == [0] * 16
    same_drams(p, q, x)
    assert isinstance(p.memories["f1"], FIFO)          # input untouched


def test_rtelm_reg_in_one_block():
    p = Program("reg_rt")
    a = p.dram("a", (8,))
    c = p.dram("c", (8,))
    r = p.reg("r")
    with p.foreach(8, label="L") as i:
        p.store(r, (), a[i] + 1, label="Wr")
        p.store(c, i, p.load(r, (), label="Rr"), label="Wc")
    q, rep = rtelm(p)
    assert [(e.memory, e.target) for e in rep.eliminated] == [("r", "c")]
    assert "r" not in q.memories
    assert [s.label for s in q.blocks()[0].stores()] == ["Wc"]
    x = {"a": np.arange(8) * 7}
    assert drams(q, x)["c"].tolist() == (np.arange(8) * 7 + 1).tolist()
    same_drams(p, q, x)


def test_rtelm_refusals_keep_the_program():
    # a Reg written by one loop and read by a later one: the reader sees the last value
    p = Program("reg_late")
    a = p.dram("a", (4,))
    c = p.dram("c", (4,))
    r = p.reg("r")
    with p.foreach(4, label="L0") as i:
        r.value = a[i]
    with p.foreach(4, label="L1") as j:
        c[j] = r.value
    q, rep = rtelm(p)
    assert rep.eliminated == ()
    assert "sees the last value only" in rep.kept["r"]
    same_drams(p, q, {"a": np.array([1, 2, 3, 4])})

    # loop nests of different shape are not in lock-step
    p = Program("shape")
    a = p.dram("a", (16,))
    b = p.dram("b", (16,))
    f = p.fifo("f", depth=16)
    with p.foreach(16, label="L0") as i:
        f.enq(a[i])
    with p.foreach(4, label="L1") as j:
        with p.foreach(4, label="L2") as k:
            b[j * 4 + k] = f.deq()
    q, rep = rtelm(p)
    assert rep.kept == {"f": "blocks B0 and B1 are not in lock-step (their loop nests "
                             "below P differ)"}
    same_drams(p, q, {"a": np.arange(16)})

    # the target is read between the writer and the reader: moving the write is visible
    p = Program("between")
    a = p.dram("a", (4,))
    b = p.dram("b", (4,))
    out = p.dram("out", (1,))
    f = p.fifo("f", depth=4)
    with p.foreach(4, label="L0") as i:
        f.enq(a[i])
    out[0] = p.load(b, 3, label="Rb")
    with p.foreach(4, label="L1") as j:
        b[j] = f.deq()
    q, rep = rtelm(p)
    assert rep.kept["f"].startswith("'b' is also accessed by Rb between the writer")
    assert drams(q, {"a": np.array([5, 6, 7, 8])})["out"].tolist() == [0]

    # an index that reads memory cannot move
    p = Program("gather")
    a = p.dram("a", (4,))
    idx = p.dram("idx", (4,))
    b = p.dram("b", (4,))
    f = p.fifo("f", depth=4)
    with p.foreach(4, label="L0") as i:
        f.enq(a[i])
    with p.foreach(4, label="L1") as j:
        b[idx[j]] = f.deq()
    _, rep = rtelm(p)
    assert rep.kept["f"].startswith("the index reads memory 'idx'")


@pytest.mark.parametrize("seed", range(40))
def test_msr_and_rtelm_keep_random_programs(seed):
    p, x = random_program(seed)
    q, rep = msr(p)
    assert not any(name in q.memories for name in rep.converted)
    same_drams(p, q, x)
    q2, rep2 = rtelm(q)
    assert not any(e.memory in q2.memories for e in rep2.eliminated)
    same_drams(p, q2, x)


def opt_program(seed: int) -> tuple[Program, dict[str, np.ndarray], int, bool]:
    """A random program built for msr and rtelm: SRAM ``c`` (4 words) read and written at
    constant indices by random statements, a chain of ``n`` FIFOs filled from DRAM ``a`` in
    lock-step loops ending in DRAM ``b``, and sometimes a read of ``b`` between the last
    two loops (which must stop the last elimination). Returns ``(program, inputs, n,
    blocked)``."""
    rng = np.random.default_rng(seed)
    p = Program(f"opt{seed}")
    a = p.dram("a", (8,))
    b = p.dram("b", (16,))
    out = p.dram("out", (5,))
    c = p.sram("c", (4,))
    n = int(rng.integers(1, 4))
    blocked = bool(rng.integers(0, 2))
    fifos = [p.fifo(f"f{k}", depth=8) for k in range(n)]
    with p.foreach(8, label="L0") as i:
        for _ in range(int(rng.integers(1, 4))):
            k, m = (int(v) for v in rng.integers(0, 4, size=2))
            ops = [lambda x, y: x + y, lambda x, y: x * y - 1, maximum]
            c[k] = ops[int(rng.integers(0, 3))](c[m], a[i])
        fifos[0].enq(a[i] * int(rng.integers(-3, 4)) + c[int(rng.integers(0, 4))])
    for k in range(1, n):
        with p.foreach(8, label=f"L{k}"):
            fifos[k].enq(fifos[k - 1].deq())
    if blocked:
        out[4] = b[int(rng.integers(0, 16))]
        b[int(rng.integers(0, 16))] = 5
    with p.foreach(8, label=f"L{n}") as j:
        b[j * 2 + int(rng.integers(0, 2))] = fifos[-1].deq()
    for k in range(4):
        out[k] = c[k]
    x = {"a": rng.integers(-8, 9, size=8)}
    return p, x, n, blocked


@pytest.mark.parametrize("seed", range(30))
def test_msr_and_rtelm_on_programs_made_for_them(seed):
    p, x, n, blocked = opt_program(seed)
    q, rep = msr(p)
    assert set(rep.converted) == {"c"}
    assert not any(isinstance(m, SRAM) for m in q.memories.values())
    same_drams(p, q, x)
    q2, rep2 = rtelm(q)
    # the chain collapses into L0, except the last FIFO when b is touched in between
    assert len(rep2.eliminated) == (n - 1 if blocked else n)
    assert [k for k in q2.memories if k.startswith("f")] == ([f"f{n - 1}"] if blocked else [])
    same_drams(p, q2, x)
    q3, rep3 = rtelm(p)                    # rtelm alone, on the SRAM version
    assert len(rep3.eliminated) == len(rep2.eliminated)
    same_drams(p, q3, x)


# ---------------------------------------------------------------------------- dupra, xbar-elm
def skew(par: int = 2) -> Program:
    p = Program("skew")
    d = p.dram("d", (16,))
    out = p.dram("out", (64,))
    m = p.sram("m", (16,))
    with p.foreach(16, par=par, label="F") as i:
        p.store(m, i, d[i], label="Wm")
    with p.foreach(4, label="J") as j:
        with p.foreach(8, par=par, label="I") as i:
            out[j * 8 + i] = p.load(m, i + j, label="R")   # bank (l + j) mod par
    return p


def fig8(par: int) -> Program:
    """SARA Fig. 8: m filled by loop B, then loop C (par ``par``) reads m (access R)."""
    p = Program("fig8")
    d = p.dram("d", (64,))
    out = p.dram("out", (64,))
    m = p.sram("m", (64,))
    with p.foreach(64, label="B") as i:
        p.store(m, i, d[i], label="W")
    with p.foreach(64, par=par, label="C") as i:
        out[i] = p.load(m, i, label="R")
    return p


def test_dupra_recomputes_the_dynamic_bank_addresses():
    plans, rep = dupra(skew())
    assert plans["m"].banks == 2
    (a,) = rep.accesses
    assert (a.memory, a.access, a.lanes, a.forwarded, a.recomputed, a.ops) == (
        "m", "R", 2, 2, 2, 4)
    assert rep.saved == 2
    # Fig. 8's static banks need no BA at all after xbar-elm: nothing to duplicate
    _, rep8 = dupra(fig8(4))
    assert [(a.forwarded, a.recomputed) for a in rep8.accesses] == [(0, 0)]
    assert rep8.saved == 0


def test_xbar_elm_crossbars():
    plans, rep = xbar_elm(fig8(4))
    # R: 4 lanes x 4 banks -> 4 links; W (loop B, one lane) reaches all 4 banks either way
    assert rep.crossbar == {"m": (16 + 4, 4 + 4)}
    assert rep.point_to_point == ("m/R",)
    assert rep.merge_units == {"m": (12, 0)}
    _, rep = xbar_elm(skew())
    # the writer F (i = 2k + l: static) goes point-to-point, R stays a full 2x2 crossbar
    assert rep.crossbar == {"m": (4 + 4, 2 + 4)}
    assert rep.point_to_point == ("m/Wm",)
    assert rep.merge_units == {"m": (4, 2)}


def test_plans_do_not_change_the_program():
    p = skew()
    before = [(c.label, type(c).__name__) for c in p.controllers()]
    dupra(p)
    xbar_elm(p)
    assert [(c.label, type(c).__name__) for c in p.controllers()] == before
    assert all(isinstance(x, Load) for b in p.blocks() for x in b.loads())
