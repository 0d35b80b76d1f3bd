"""Programs of the SARA paper's figures (Zhang et al., ISCA 2021), built with
mapper.dataflow.program; copied here so tests never read the shared reference notes.

* :func:`fig2a`: the running example of Fig. 2a (notes §2.1) with the paper's labels.
* :func:`fig5d`: the control-reduction example of Fig. 5c/d/e (notes §2.6): loop A holding
  loop B (W1 in C, R1 in D) and then W2 (E), R2 (F), all on one SRAM ``m``.
* :func:`fig5b`: Fig. 5a/b: W0 before loop A, branch C inside A (R0 in the if clause, W1 in
  the else clause), R1 after the loop, all on one DRAM ``d``.
* :func:`double_buffer`: a producer loop B and a consumer loop C inside loop A on an SRAM
  with ``buffers=2`` (A(R) ⊆ A(W) when ``read <= write``).
"""
from __future__ import annotations

import numpy as np

from mapper.dataflow.program import Program


def fig2a(n: int = 4):
    """SARA Fig. 2a: A{ B{ m1,m2; C; D; E(W31) }; F(W4, W32); G(R3, R4) }; returns
    (program, inputs)."""
    p = Program("fig2a")
    d1, d2, d3, d4 = (p.dram(f"d{k}", (n,)) for k in range(1, 5))
    d5 = p.dram("d5", (n,))
    m3, m4 = p.sram("m3", (n,)), p.sram("m4", (n,))
    with p.foreach(2, label="A") as i:
        with p.foreach(2, label="B") as j:
            m1, m2 = p.sram("m1", (n,)), p.sram("m2", (n,))
            with p.foreach(n, label="C") as k:
                p.store(m1, k, p.load(d1, k, label="R_d1") + i, label="W1")
            with p.foreach(n, label="D") as k:
                p.store(m2, k, p.load(d2, k, label="R_d2") + p.load(d3, k, label="R_d3") + j,
                        label="W2")
            with p.foreach(n, label="E") as k:
                p.store(m3, k, p.load(m1, k, label="R1") * p.load(m2, k, label="R2"),
                        label="W31")
        with p.foreach(n, label="F") as j:
            p.store(m4, j, j * 3 + i, label="W4")
            p.store(m3, j, p.load(d4, j, label="R_d4") + i, label="W32")
        with p.foreach(n, label="G") as j:
            p.store(d5, j, p.load(m3, j, label="R3") - p.load(m4, j, label="R4"), label="W5")
    rng = np.random.default_rng(1)
    inputs = {f"d{k}": rng.integers(-9, 10, size=n).astype(np.int32) for k in range(1, 5)}
    return p, inputs


def fig5d(n: int = 4):
    """SARA Fig. 5c/d: returns (program, inputs)."""
    p = Program("fig5d")
    d = p.dram("d", (n,))
    o1, o2 = p.dram("o1", (n,)), p.dram("o2", (n,))
    m = p.sram("m", (n,))
    with p.foreach(2, label="A") as i:
        with p.foreach(3, label="B") as j:
            with p.foreach(n, label="C") as k:
                p.store(m, k, p.load(d, k, label="Rd") + j, label="W1")
            with p.foreach(n, label="D") as k:
                p.store(o1, k, p.load(m, k, label="R1") + i, label="Wo1")
        with p.foreach(n, label="E") as k:
            p.store(m, k, k * i, label="W2")
        with p.foreach(n, label="F") as k:
            p.store(o2, k, p.load(m, (k + 1) % n, label="R2"), label="Wo2")
    inputs = {"d": np.arange(n, dtype=np.int32) * 5 - 3}
    return p, inputs


def fig5b(n: int = 6):
    """SARA Fig. 5a/b: returns (program, inputs)."""
    p = Program("fig5b")
    d = p.dram("d", (n,))
    out = p.dram("out", (n + 1,))
    p.store(d, 0, 7, label="W0")
    with p.foreach(1, n, label="A") as i:
        with p.if_((i % 2).eq(0), label="C"):
            p.store(out, i, p.load(d, i - 1, label="R0") * 2, label="Wout")
        with p.else_():
            p.store(d, i, p.load(out, i - 1, label="Rout") + i, label="W1")
    p.store(out, n, p.load(d, n - 1, label="R1"), label="Wlast")
    inputs = {"d": np.arange(n, dtype=np.int32) + 10}
    return p, inputs


def double_buffer(write: int = 8, read: int = 8, iters: int = 6, body: int = 3,
                  repeat: int = 1):
    """Loop A (``iters``): B writes ``buf[k] = f(d[i, k])`` for k < ``write`` (``body``
    chained ops), C reads ``buf[k // repeat]`` for k < ``read * repeat`` into
    ``out[i, k // repeat]`` (a consumer ``repeat`` times slower). ``buf`` is
    double-buffered; returns (program, inputs)."""
    size = max(write, read)
    p = Program("double_buffer")
    d = p.dram("d", (iters, size))
    out = p.dram("out", (iters, size))
    buf = p.sram("buf", (size,), buffers=2)
    with p.foreach(iters, label="A") as i:
        with p.foreach(write, label="B") as k:
            v = p.load(d, (i, k), label="Rd")
            for _ in range(body):
                v = v * 3 + i
            p.store(buf, k, v, label="W")
        with p.foreach(read * repeat, label="C") as k:
            p.store(out, (i, k // repeat), p.load(buf, k // repeat, label="R") - k,
                    label="Wout")
    rng = np.random.default_rng(3)
    inputs = {"d": rng.integers(-9, 10, size=(iters, size)).astype(np.int32)}
    return p, inputs
