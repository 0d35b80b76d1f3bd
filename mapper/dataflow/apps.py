"""Benchmark applications of SARA (Zhang et al., ISCA 2021, Table IV) at small sizes, plus
the paper's two control-flow examples (the running example of Fig. 2a and the outer branch
of Fig. 4).

Every builder takes its sizes and a parallelization factor ``par`` (the ``par`` of the
loop(s) a compiler would parallelize first; it never changes the sequential result) and
returns ``(program, inputs, reference)``:

* ``program``: a :class:`~mapper.dataflow.program.Program`;
* ``inputs``: DRAM name -> numpy array (``int32`` / ``float32``), deterministic from ``seed``;
* ``reference``: ``reference(inputs) -> {output DRAM name: expected array}``, computed with
  numpy independently of the program.

Integer apps (``i32``) equal their reference exactly (wrapping two's-complement
arithmetic; integer division floors like numpy ``//``). Float apps (``f32``) agree within
:data:`TOLERANCES` (``numpy.allclose`` ``rtol``/``atol``): numpy vectorises sums and
transcendental functions differently from the one-value-at-a-time interpreter, so the last
bits may differ.

:data:`APPS` maps an app name to its builder. Table IV sizes are far larger (for example
mlp 64x32x16x8, bs 102,400 records, kmeans 1,536 points x 96 dims, K = 20); the defaults
here keep a sequential interpretation well under a second.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cgra.errors import ProgramError
from mapper.dataflow.program import (
    DRAM,
    SRAM,
    Expr,
    Program,
    exp,
    log,
    maximum,
    select,
    sqrt,
    to_f32,
)

Reference = Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
App = tuple[Program, dict[str, np.ndarray], Reference]

#: app name -> (rtol, atol) for ``numpy.allclose`` of the program's outputs against the
#: reference; ``(0, 0)``: exactly equal.
TOLERANCES: dict[str, tuple[float, float]] = {
    "dot_product": (0.0, 0.0),
    "outer_product": (0.0, 0.0),
    "gemm": (0.0, 0.0),
    "black_scholes": (1e-5, 1e-5),
    "kmeans_step": (0.0, 0.0),
    "logreg": (1e-5, 1e-6),
    "mlp_layer": (0.0, 0.0),
    "pagerank": (1e-5, 1e-7),
    "branch": (0.0, 0.0),
    "fig2a": (0.0, 0.0),
}


def _check(name: str, **sizes: int) -> None:
    for k, v in sizes.items():
        if int(v) < 1:
            raise ProgramError(f"app {name}: {k}={v} must be >= 1")


def _wrap32(a) -> np.ndarray:
    """int64 results as wrapped int32 (the programs' two's-complement arithmetic)."""
    return np.asarray(a, dtype=np.int64).astype(np.int32)


def _copy_in(p: Program, src: DRAM, dst: SRAM, par: int = 1) -> None:
    """``dst[...] = src[...]`` (a DRAM tile load into an SRAM of the same shape)."""
    if len(src.shape) == 1:
        with p.foreach(src.shape[0], par=par) as i:
            dst[i] = src[i]
    else:
        with p.foreach(src.shape[0]) as i, p.foreach(src.shape[1], par=par) as j:
            dst[i, j] = src[i, j]


def _ints(rng: np.random.Generator, lo: int, hi: int, shape) -> np.ndarray:
    return rng.integers(lo, hi + 1, size=shape).astype(np.int32)


# ---------------------------------------------------------------------------- linear algebra
def dot_product(n: int = 64, par: int = 1, seed: int = 0) -> App:
    """``out[0] = sum_i a[i] * b[i]``: ``a``, ``b`` i32 (n,), values in [-100, 100]; a
    reduction into a Reg with ``par`` lanes."""
    _check("dot_product", n=n, par=par)
    p = Program("dot_product")
    a, b = p.dram("a", (n,)), p.dram("b", (n,))
    out = p.dram("out", (1,))
    acc = p.reg("acc")
    with p.reduce(acc, n, par=par) as (i, add):
        add(a[i] * b[i])
    out[0] = acc.value
    rng = np.random.default_rng(seed)
    inputs = {"a": _ints(rng, -100, 100, n), "b": _ints(rng, -100, 100, n)}

    def reference(x):
        return {"out": _wrap32([np.dot(x["a"].astype(np.int64), x["b"].astype(np.int64))])}
    return p, inputs, reference


def outer_product(n: int = 16, m: int = 16, par: int = 1, seed: int = 0) -> App:
    """``out[i, j] = a[i] * b[j]``: ``a`` i32 (n,), ``b`` i32 (m,) loaded into SRAMs, ``out``
    i32 (n, m); ``par`` on the inner loop."""
    _check("outer_product", n=n, m=m, par=par)
    p = Program("outer_product")
    a, b = p.dram("a", (n,)), p.dram("b", (m,))
    out = p.dram("out", (n, m))
    sa, sb = p.sram("sa", (n,)), p.sram("sb", (m,))
    _copy_in(p, a, sa, par)
    _copy_in(p, b, sb, par)
    with p.foreach(n) as i, p.foreach(m, par=par) as j:
        out[i, j] = sa[i] * sb[j]
    rng = np.random.default_rng(seed)
    inputs = {"a": _ints(rng, -1000, 1000, n), "b": _ints(rng, -1000, 1000, m)}

    def reference(x):
        return {"out": _wrap32(np.outer(x["a"].astype(np.int64), x["b"].astype(np.int64)))}
    return p, inputs, reference


def gemm(m: int = 8, n: int = 8, k: int = 8, par: int = 1, seed: int = 0) -> App:
    """One GEMM tile (Spatial's gemm_tile): ``c = a @ b`` with ``a`` i32 (m, k), ``b`` i32
    (k, n), ``c`` i32 (m, n); tiles loaded into SRAMs, the k-reduction into a Reg with
    ``par`` lanes. Values in [-50, 50]."""
    _check("gemm", m=m, n=n, k=k, par=par)
    p = Program("gemm")
    a, b = p.dram("a", (m, k)), p.dram("b", (k, n))
    c = p.dram("c", (m, n))
    ta, tb = p.sram("ta", (m, k)), p.sram("tb", (k, n))
    _copy_in(p, a, ta, par)
    _copy_in(p, b, tb, par)
    acc = p.reg("acc")
    with p.foreach(m) as i, p.foreach(n) as j:
        with p.reduce(acc, k, par=par) as (kk, add):
            add(ta[i, kk] * tb[kk, j])
        c[i, j] = acc.value
    rng = np.random.default_rng(seed)
    inputs = {"a": _ints(rng, -50, 50, (m, k)), "b": _ints(rng, -50, 50, (k, n))}

    def reference(x):
        return {"c": _wrap32(x["a"].astype(np.int64) @ x["b"].astype(np.int64))}
    return p, inputs, reference


# ---------------------------------------------------------------------------- finance
_INV_SQRT_2PI = 0.39894228040143270286


def _cndf_program(p: Program, x: Expr) -> Expr:
    """PARSEC blackscholes ``CNDF`` (Abramowitz-Stegun 26.2.17) as block temporaries."""
    ax = p.let(select(x < 0.0, -x, x))
    npx = p.let(exp(ax * ax * -0.5) * _INV_SQRT_2PI)
    k1 = p.let(1.0 / (ax * 0.2316419 + 1.0))
    k2 = p.let(k1 * k1)
    k3 = p.let(k2 * k1)
    k4 = p.let(k3 * k1)
    k5 = p.let(k4 * k1)
    poly = p.let(k1 * 0.319381530 + (k2 * -0.356563782 + k3 * 1.781477937
                                     + k4 * -1.821255978 + k5 * 1.330274429))
    local = p.let(1.0 - poly * npx)
    return p.let(select(x < 0.0, 1.0 - local, local))


def _cndf_numpy(x: np.ndarray) -> np.ndarray:
    f = np.float32
    ax = np.where(x < 0, -x, x).astype(f)
    npx = (np.exp(ax * ax * f(-0.5)) * f(_INV_SQRT_2PI)).astype(f)
    k1 = (f(1.0) / (ax * f(0.2316419) + f(1.0))).astype(f)
    k2 = k1 * k1
    k3 = k2 * k1
    k4 = k3 * k1
    k5 = k4 * k1
    poly = k1 * f(0.319381530) + (k2 * f(-0.356563782) + k3 * f(1.781477937)
                                  + k4 * f(-1.821255978) + k5 * f(1.330274429))
    local = f(1.0) - poly * npx
    return np.where(x < 0, f(1.0) - local, local).astype(f)


def black_scholes(n: int = 64, par: int = 1, seed: int = 0) -> App:
    """Black-Scholes option pricing (PARSEC ``BlkSchlsEqEuroNoDiv``), SARA's "massive basic
    block": one hyperblock per option with ``exp``, ``log``, ``sqrt`` and two CNDFs.

    Inputs f32 (n,): ``sptprice`` in [10, 100), ``strike`` in [10, 100), ``rate`` in
    [0.01, 0.1), ``volatility`` in [0.05, 0.6), ``otime`` in [0.1, 2); ``otype`` i32 (n,)
    0 = call, 1 = put. Output ``price`` f32 (n,). Tolerance: :data:`TOLERANCES`."""
    _check("black_scholes", n=n, par=par)
    p = Program("black_scholes")
    s_, k_, r_, v_, t_ = (p.dram(nm, (n,), "f32") for nm in
                          ("sptprice", "strike", "rate", "volatility", "otime"))
    otype = p.dram("otype", (n,))
    price = p.dram("price", (n,), "f32")
    with p.foreach(n, par=par) as i:
        s, k, r, v, t = (p.let(d[i]) for d in (s_, k_, r_, v_, t_))
        sqrt_t = p.let(sqrt(t))
        log_term = p.let(log(s / k))
        power = p.let(v * v * 0.5)
        d1 = p.let(((r + power) * t + log_term) / (v * sqrt_t))
        d2 = p.let(d1 - v * sqrt_t)
        n1 = _cndf_program(p, d1)
        n2 = _cndf_program(p, d2)
        fut = p.let(k * exp(-r * t))
        call = p.let(s * n1 - fut * n2)
        put = p.let(fut * (1.0 - n2) - s * (1.0 - n1))
        price[i] = select(otype[i].eq(0), call, put)
    rng = np.random.default_rng(seed)
    f = np.float32
    inputs = {"sptprice": rng.uniform(10, 100, n).astype(f),
              "strike": rng.uniform(10, 100, n).astype(f),
              "rate": rng.uniform(0.01, 0.1, n).astype(f),
              "volatility": rng.uniform(0.05, 0.6, n).astype(f),
              "otime": rng.uniform(0.1, 2.0, n).astype(f),
              "otype": _ints(rng, 0, 1, n)}

    def reference(x):
        s, k, r, v, t = (x[nm].astype(f) for nm in
                         ("sptprice", "strike", "rate", "volatility", "otime"))
        sqrt_t = np.sqrt(t)
        log_term = np.log(s / k)
        power = v * v * f(0.5)
        d1 = ((r + power) * t + log_term) / (v * sqrt_t)
        d2 = d1 - v * sqrt_t
        n1, n2 = _cndf_numpy(d1), _cndf_numpy(d2)
        fut = k * np.exp(-r * t)
        call = s * n1 - fut * n2
        put = fut * (f(1.0) - n2) - s * (f(1.0) - n1)
        return {"price": np.where(x["otype"] == 0, call, put).astype(f)}
    return p, inputs, reference


# ---------------------------------------------------------------------------- analytics
def kmeans_step(n: int = 32, d: int = 4, k: int = 3, par: int = 1, seed: int = 0) -> App:
    """One k-means iteration in i32: assign each point (``points`` (n, d)) to the nearest
    centroid (``centroids`` (k, d); squared Euclidean distance, ties to the lower index),
    then move each centroid to the floor mean (``//``) of its points (a centroid with no
    points stays). Outputs ``assign`` i32 (n,) and ``new_centroids`` i32 (k, d). The
    centroid sums use data-dependent SRAM indices (the assigned cluster). ``par`` on the
    distance reduction and the dimension loops. Values in [-20, 20]."""
    _check("kmeans_step", n=n, d=d, k=k, par=par)
    p = Program("kmeans_step")
    pts_d, cen_d = p.dram("points", (n, d)), p.dram("centroids", (k, d))
    assign_d, new_d = p.dram("assign", (n,)), p.dram("new_centroids", (k, d))
    pts, cen = p.sram("pts", (n, d)), p.sram("cen", (k, d))
    sums, counts = p.sram("sums", (k, d)), p.sram("counts", (k,))
    _copy_in(p, pts_d, pts, par)
    _copy_in(p, cen_d, cen, par)
    dist, best, bi = p.reg("dist"), p.reg("best"), p.reg("best_index")
    with p.foreach(n) as i:
        best.value = 2**31 - 1
        bi.value = 0
        with p.foreach(k) as c:
            with p.reduce(dist, d, par=par) as (j, add):
                diff = p.let(pts[i, j] - cen[c, j])
                add(diff * diff)
            closer = p.let(dist.value < best.value)
            bi.value = select(closer, c, bi.value)
            best.value = select(closer, dist.value, best.value)
        assign_d[i] = bi.value
        with p.foreach(d, par=par) as j:
            sums[bi.value, j] = sums[bi.value, j] + pts[i, j]
        counts[bi.value] = counts[bi.value] + 1
    with p.foreach(k) as c, p.foreach(d, par=par) as j:
        cnt = p.let(counts[c])
        new_d[c, j] = select(cnt > 0, sums[c, j] // cnt, cen[c, j])
    rng = np.random.default_rng(seed)
    inputs = {"points": _ints(rng, -20, 20, (n, d)), "centroids": _ints(rng, -20, 20, (k, d))}

    def reference(x):
        pt = x["points"].astype(np.int64)
        ce = x["centroids"].astype(np.int64)
        dd = ((pt[:, None, :] - ce[None, :, :]) ** 2).sum(axis=2)
        assign = np.argmin(dd, axis=1)              # first minimum: ties to the lower index
        new = ce.copy()
        for c in range(k):
            members = pt[assign == c]
            if len(members):
                new[c] = members.sum(axis=0) // len(members)
        return {"assign": _wrap32(assign), "new_centroids": _wrap32(new)}
    return p, inputs, reference


def logreg(n: int = 32, d: int = 8, iters: int = 2, lr: float = 0.5, par: int = 1,
           seed: int = 0, sequential: bool = False) -> App:
    """Logistic regression by batch gradient descent in f32 (SARA's logreg): ``iters``
    times, ``w -= (lr / n) * sum_i (sigmoid(x_i . w) - y_i) x_i`` with
    ``sigmoid(z) = 1 / (1 + exp(-z))``. Inputs ``x`` f32 (n, d) in [-1, 1), ``y`` f32 (n,)
    in {0, 1}, ``w0`` f32 (d,) (zeros); output ``w`` f32 (d,). ``par`` on the dimension
    loops. ``sequential=True``: the epoch loop is Spatial's ``Sequential.Foreach`` (as in
    Spatial's LogReg; PLDI'18 §3), its epochs and their three phases never overlap.
    Tolerance: :data:`TOLERANCES`."""
    _check("logreg", n=n, d=d, iters=iters, par=par)
    p = Program("logreg")
    x_d, y_d, w0 = p.dram("x", (n, d), "f32"), p.dram("y", (n,), "f32"), p.dram("w0", (d,), "f32")
    w_out = p.dram("w", (d,), "f32")
    xs, w, grad = p.sram("xs", (n, d), "f32"), p.sram("ws", (d,), "f32"), p.sram("grad", (d,), "f32")
    _copy_in(p, x_d, xs, par)
    _copy_in(p, w0, w, par)
    z, err = p.reg("z", "f32"), p.reg("err", "f32")
    scale = np.float32(lr) / np.float32(n)
    with p.foreach(iters, sequential=sequential):
        with p.foreach(d, par=par) as j:
            grad[j] = 0.0
        with p.foreach(n) as i:
            with p.reduce(z, d, par=par) as (j, add):
                add(xs[i, j] * w[j])
            err.value = 1.0 / (exp(-z.value) + 1.0) - y_d[i]
            with p.foreach(d, par=par) as j:
                grad[j] = grad[j] + err.value * xs[i, j]
        with p.foreach(d, par=par) as j:
            w[j] = w[j] - grad[j] * float(scale)
    with p.foreach(d, par=par) as j:
        w_out[j] = w[j]
    rng = np.random.default_rng(seed)
    inputs = {"x": rng.uniform(-1, 1, (n, d)).astype(np.float32),
              "y": rng.integers(0, 2, n).astype(np.float32),
              "w0": np.zeros(d, np.float32)}

    def reference(x):
        f = np.float32
        xx, yy, ww = x["x"].astype(f), x["y"].astype(f), x["w0"].astype(f).copy()
        for _ in range(iters):
            zz = (xx @ ww).astype(f)
            e = (f(1.0) / (np.exp(-zz) + f(1.0)) - yy).astype(f)
            g = (e @ xx).astype(f)
            ww = (ww - g * scale).astype(f)
        return {"w": ww}
    return p, inputs, reference


def mlp_layer(batch: int = 2, n_in: int = 16, n_out: int = 8, shift: int = 4, par: int = 1,
              seed: int = 0) -> App:
    """One fully connected layer in i32 fixed point (SARA's mlp, one of its 64x32x16x8
    layers at a small size): ``y[b, o] = max(0, (sum_i w[o, i] * x[b, i] + bias[o]) >> shift)``
    (arithmetic shift, so it floors). Inputs ``x`` i32 (batch, n_in) in [-64, 64],
    ``w`` i32 (n_out, n_in) in [-32, 32], ``bias`` i32 (n_out,) in [-256, 256]; output
    ``y`` i32 (batch, n_out). Weights in an SRAM; ``par`` on the dot-product reduction."""
    _check("mlp_layer", batch=batch, n_in=n_in, n_out=n_out, par=par)
    if not 0 <= shift < 32:
        raise ProgramError(f"app mlp_layer: shift={shift} must be in [0, 32)")
    p = Program("mlp_layer")
    x_d, w_d, b_d = p.dram("x", (batch, n_in)), p.dram("w", (n_out, n_in)), p.dram("bias", (n_out,))
    y_d = p.dram("y", (batch, n_out))
    ws, xs = p.sram("ws", (n_out, n_in)), p.sram("xs", (n_in,))
    _copy_in(p, w_d, ws, par)
    acc = p.reg("acc")
    with p.foreach(batch) as b:
        with p.foreach(n_in, par=par) as i:
            xs[i] = x_d[b, i]
        with p.foreach(n_out) as o:
            with p.reduce(acc, n_in, par=par) as (i, add):
                add(ws[o, i] * xs[i])
            y_d[b, o] = maximum((acc.value + b_d[o]) >> shift, 0)
    rng = np.random.default_rng(seed)
    inputs = {"x": _ints(rng, -64, 64, (batch, n_in)), "w": _ints(rng, -32, 32, (n_out, n_in)),
              "bias": _ints(rng, -256, 256, n_out)}

    def reference(x):
        acc_ = x["x"].astype(np.int64) @ x["w"].astype(np.int64).T + x["bias"].astype(np.int64)
        return {"y": _wrap32(np.maximum(_wrap32(acc_).astype(np.int64) >> shift, 0))}
    return p, inputs, reference


# ---------------------------------------------------------------------------- graph
def random_graph(n: int, avg_degree: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random directed graph on ``n`` nodes, every node with out-degree >= 1, as the CSR of
    its *in*-edges: ``(rowptr (n+1,), col (nnz,), outdeg (n,))``, all int32; the sources
    of the edges into ``v`` are ``col[rowptr[v]:rowptr[v+1]]``, sorted."""
    rng = np.random.default_rng(seed)
    edges = set()
    for u in range(n):
        for v in rng.choice(n, size=int(rng.integers(1, 2 * avg_degree)), replace=True):
            edges.add((u, int(v)))
    src = np.array(sorted(edges, key=lambda e: (e[1], e[0])), dtype=np.int64)
    rowptr = np.zeros(n + 1, np.int64)
    np.add.at(rowptr, src[:, 1] + 1, 1)
    rowptr = np.cumsum(rowptr)
    outdeg = np.bincount(src[:, 0], minlength=n)
    return rowptr.astype(np.int32), src[:, 0].astype(np.int32), outdeg.astype(np.int32)


def pagerank(n: int = 16, avg_degree: int = 3, iters: int = 2, damping: float = 0.85,
             par: int = 1, seed: int = 0, nnz_max: int | None = None,
             sequential: bool = False) -> App:
    """PageRank by pull iterations in f32 (SARA's pr), the data-dependent-bounds case: the
    edge loop of node ``v`` runs ``range(rowptr[v], rowptr[v+1])``, bounds read from DRAM,
    and gathers ``rank[col[e]]`` (a data-dependent SRAM index).
    ``rank'[v] = (1 - damping) / n + damping * sum_{u -> v} rank[u] / outdeg[u]``, from
    ``rank = 1 / n``, ``iters`` times. Inputs (see :func:`random_graph`) ``rowptr`` i32
    (n+1,), ``col`` i32 (nnz_max,) (zero-padded after ``rowptr[n]`` edges; default
    capacity ``n * (2 * avg_degree - 1)``, the most :func:`random_graph` can draw, so the
    program accepts the graph of any seed), ``outdeg`` i32 (n,); output ``rank`` f32 (n,).
    ``par`` on the node loop. ``sequential=True``: the iteration loop is Spatial's
    ``Sequential.Foreach`` (PLDI'18 §3), its iterations and their three phases never
    overlap. Tolerance: :data:`TOLERANCES`."""
    _check("pagerank", n=n, avg_degree=avg_degree, iters=iters, par=par)
    rowptr, col, outdeg = random_graph(n, avg_degree, seed)
    nnz = n * (2 * avg_degree - 1) if nnz_max is None else int(nnz_max)
    if nnz < len(col):
        raise ProgramError(f"app pagerank: nnz_max={nnz} is below the graph's {len(col)} "
                           f"edges; raise nnz_max")
    col = np.concatenate([col, np.zeros(nnz - len(col), np.int32)])
    p = Program("pagerank")
    rp_d, col_d, deg_d = p.dram("rowptr", (n + 1,)), p.dram("col", (nnz,)), p.dram("outdeg", (n,))
    rank_d = p.dram("rank", (n,), "f32")
    rank, new = p.sram("ranks", (n,), "f32"), p.sram("new_ranks", (n,), "f32")
    contrib = p.sram("contrib", (n,), "f32")
    f = np.float32
    base, damp, init = f((1.0 - damping) / n), f(damping), f(1.0 / n)
    acc = p.reg("acc", "f32")
    with p.foreach(n, par=par) as v:
        rank[v] = float(init)
    with p.foreach(iters, sequential=sequential):
        with p.foreach(n, par=par) as u:
            contrib[u] = rank[u] / to_f32(deg_d[u])
        with p.foreach(n, par=par) as v:
            acc.value = 0.0
            with p.foreach(rp_d[v], rp_d[v + 1]) as e:
                acc.value = acc.value + contrib[col_d[e]]
            new[v] = acc.value * float(damp) + float(base)
        with p.foreach(n, par=par) as v:
            rank[v] = new[v]
    with p.foreach(n, par=par) as v:
        rank_d[v] = rank[v]
    inputs = {"rowptr": rowptr, "col": col, "outdeg": outdeg}

    def reference(x):
        rp, cl, dg = x["rowptr"], x["col"], x["outdeg"]
        r = np.full(n, init, f)
        for _ in range(iters):
            c = (r / dg.astype(f)).astype(f)
            new_r = np.empty(n, f)
            for v in range(n):
                s = f(0.0)
                for e in range(rp[v], rp[v + 1]):
                    s = f(s + c[cl[e]])
                new_r[v] = f(s * damp) + base
            r = new_r
        return {"rank": r}
    return p, inputs, reference


# ---------------------------------------------------------------------------- paper examples
def branch(n: int = 8, length: int = 4, par: int = 1, seed: int = 0, buffers: int = 2) -> App:
    """SARA Fig. 4 / §III-A (notes §2.5): an outer branch enclosing loops. Loop ``A`` runs
    ``n`` iterations; branch ``B`` tests ``i % 2 == 0``. The if clause (loop ``D``,
    ``length`` iterations) writes ``mem[j] = d[i, j] * 2 + i`` (access ``Wmem``) on even
    iterations; the else clause (loop ``F``) reads ``mem[j]`` (access ``Rmem``) on odd ones
    and writes ``out[i, j] = mem[j] + d[i, j]``. Input ``d`` i32 (n, length) in [-9, 9];
    output ``out`` i32 (n, length), zero on even rows. ``par`` on ``D`` and ``F``.

    ``mem`` has ``buffers`` buffers (default 2, double-buffered): CMMC proves that the
    clauses alternate (writer first) and that each read phase reads what the write phase
    before it wrote, so the credit ``Rmem ⇢ Wmem`` is ``buffers`` and the if clause of
    iteration i + 1 overlaps the else clause of iteration i (:mod:`mapper.dataflow.cmmc`,
    "alternating clauses"): about (n/2 + 1) clause runs instead of n. With ``buffers=1``
    the clauses run one after the other (hierarchical pipelining, about n clause runs).
    Raises :class:`ProgramError` for a size, ``par`` or ``buffers`` below 1."""
    _check("branch", n=n, length=length, par=par, buffers=buffers)
    p = Program("branch")
    d = p.dram("d", (n, length))
    out = p.dram("out", (n, length))
    mem = p.sram("mem", (length,), buffers=buffers)
    with p.foreach(n, label="A") as i:
        with p.if_((i % 2).eq(0), label="B"):
            with p.foreach(length, par=par, label="D") as j:
                p.store(mem, j, p.load(d, (i, j), label="Rd_if") * 2 + i, label="Wmem")
        with p.else_():
            with p.foreach(length, par=par, label="F") as j:
                p.store(out, (i, j), p.load(mem, j, label="Rmem")
                        + p.load(d, (i, j), label="Rd_else"), label="Wout")
    rng = np.random.default_rng(seed)
    inputs = {"d": _ints(rng, -9, 9, (n, length))}

    def reference(x):
        dd = x["d"].astype(np.int64)
        o = np.zeros((n, length), np.int64)
        m = np.zeros(length, np.int64)
        for i in range(n):
            if i % 2 == 0:
                m = dd[i] * 2 + i
            else:
                o[i] = m + dd[i]
        return {"out": _wrap32(o)}
    return p, inputs, reference


def fig2a(a: int = 2, b: int = 2, c: int = 4, f: int = 2, par: int = 1, seed: int = 0) -> App:
    """SARA's running example (Fig. 2a, notes §2.1) with its labels: controllers ``A``..``G``
    and accesses ``W31``, ``W32``, ``R3`` (SRAM ``m3``), ``W4``, ``R4`` (SRAM ``m4``)::

        A: for i in range(a):
          B: for j in range(b):
            m1, m2 = sram(c), sram(c)                    # declared inside B
            C: for k in range(c): m1[k] = d1[i, j, k]                       # R_d1, W1
            D: for k in range(c): m2[k] = d2[i, j, k] + d3[i, j, k]         # R_d2, R_d3, W2
            E: for k in range(c): m3[k] = m1[k] * m2[k] + j                 # R1, R2, W31
          F: for k in range(f): t = d4[i, k]                                # R_d4
                                m4[k] = t * 3 + i                           # W4
                                m3[k] = t                                   # W32
          G: for k in range(c): d5[i, k] = m3[k] - m4[k % f]                # R3, R4, W5

    ``f <= c``. Inputs ``d1``, ``d2``, ``d3`` i32 (a, b, c), ``d4`` i32 (a, f), values in
    [-9, 9]; output ``d5`` i32 (a, c). ``par`` on the innermost loops C, D, E, G."""
    _check("fig2a", a=a, b=b, c=c, f=f, par=par)
    if f > c:
        raise ProgramError(f"app fig2a: f={f} must be <= c={c} (F writes m3[0:f])")
    p = Program("fig2a")
    d1, d2, d3 = (p.dram(nm, (a, b, c)) for nm in ("d1", "d2", "d3"))
    d4, d5 = p.dram("d4", (a, f)), p.dram("d5", (a, c))
    m3, m4 = p.sram("m3", (c,)), p.sram("m4", (f,))
    with p.foreach(a, label="A") as i:
        with p.foreach(b, label="B") as j:
            m1, m2 = p.sram("m1", (c,)), p.sram("m2", (c,))
            with p.foreach(c, par=par, label="C") as k:
                p.store(m1, k, p.load(d1, (i, j, k), label="R_d1"), label="W1")
            with p.foreach(c, par=par, label="D") as k:
                p.store(m2, k, p.load(d2, (i, j, k), label="R_d2")
                        + p.load(d3, (i, j, k), label="R_d3"), label="W2")
            with p.foreach(c, par=par, label="E") as k:
                p.store(m3, k, p.load(m1, k, label="R1") * p.load(m2, k, label="R2") + j,
                        label="W31")
        with p.foreach(f, label="F") as k:
            t = p.let(p.load(d4, (i, k), label="R_d4"))
            p.store(m4, k, t * 3 + i, label="W4")
            p.store(m3, k, t, label="W32")
        with p.foreach(c, par=par, label="G") as k:
            p.store(d5, (i, k), p.load(m3, k, label="R3") - p.load(m4, k % f, label="R4"),
                    label="W5")
    rng = np.random.default_rng(seed)
    inputs = {nm: _ints(rng, -9, 9, (a, b, c)) for nm in ("d1", "d2", "d3")}
    inputs["d4"] = _ints(rng, -9, 9, (a, f))

    def reference(x):
        x1, x2, x3, x4 = (x[nm].astype(np.int64) for nm in ("d1", "d2", "d3", "d4"))
        out = np.zeros((a, c), np.int64)
        m3_ = np.zeros(c, np.int64)
        for i in range(a):
            for j in range(b):
                m3_ = x1[i, j] * (x2[i, j] + x3[i, j]) + j
            m4_ = x4[i] * 3 + i
            m3_[:f] = x4[i]
            out[i] = m3_ - m4_[np.arange(c) % f]
        return {"d5": _wrap32(out)}
    return p, inputs, reference


#: app name -> builder (every builder accepts ``par=`` and ``seed=`` and has default sizes)
APPS: dict[str, Callable[..., App]] = {
    "dot_product": dot_product,
    "outer_product": outer_product,
    "gemm": gemm,
    "black_scholes": black_scholes,
    "kmeans_step": kmeans_step,
    "logreg": logreg,
    "mlp_layer": mlp_layer,
    "pagerank": pagerank,
    "branch": branch,
    "fig2a": fig2a,
}

#: the programs ``cgra run`` compiles onto a ready-valid array of dataflow PEs
#: (:mod:`mapper.dataflow.array_run`), by their ``cgra run`` name: the APPS names, with the
#: GEMM tile as ``gemm_tile`` (``cgra run gemm`` is the DNN layer)
ARRAY_PROGRAMS: dict[str, Callable[..., App]] = {
    ("gemm_tile" if k == "gemm" else k): v for k, v in APPS.items()}

