"""Placement: optional analytical (quadratic) global placement, then simulated annealing.

Sites come from the layout of the routing graph: an instance of tag ``p`` goes on a PE tile,
``m`` on a MEM tile, ``I`` on an IO tile, ``i`` on a tile tagged ``i`` or on an ``I`` tile with a
routable 1-bit port, ``o`` (a pond, the PE register file) on a PE tile whose core has the
pond's ports (pe.json's ``pond``: a PE tile holds one PE and one pond) (capacity one
instance per tag per tile); a register (``r``) goes in any
tile with pipeline-register nodes of its width, at most as many registers per tile as the tile
has such nodes.

**Cost**: ``sum over nets of HPWL(net) ** alpha`` with HPWL the half-perimeter of the net's
bounding box in tiles (``alpha`` = 1 is plain wirelength; larger alpha penalises long nets
more, a timing-driven proxy).

**Global placement** (``PlaceParams.analytical``), AHA (Bahr et al., "Amber: ... agile
hardware" / the AHA flow paper) §5.3, Eq. 1: analytical placement in the style of APlace,

1. a quadratic start (clique net model: each net of k terminals adds edges of weight
   1/(k-1); IO instances anchored at evenly spread IO sites; a weak pull ``anchor`` to the
   array centre keeps the Laplacian non-singular; ``L x = b`` solved with numpy, snapped to
   1/1024 tile);
2. (``global_method="cg"``, the default) conjugate gradient (:func:`minimise_cg`, scipy's
   ``minimize(method="CG")`` with CPU-independent arithmetic) on the sum over 2-pin connections
   (source -> each sink) of the smoothed L2 distance ``sqrt(dx^2 + dy^2 + eps^2)`` (the AHA
   flow's HPWL estimate), plus the MEM-column potential ``beta * softmin_c (x - x_c)^2`` on
   every MEM instance (x_c the MEM columns; pulls MEM nodes onto MEM columns so legalisation
   moves them little), plus a pairwise same-site-class repulsion
   ``density * exp(-d^2 / sigma^2)`` (a density term: without it the wirelength optimum is
   one point); ``global_method="quadratic"`` stops after step 1.

Legalisation assigns each tag's instances to that tag's sites minimising squared
displacement (Hungarian method, :func:`scipy.optimize.linear_sum_assignment`). The annealer
then starts from the legal placement at a lower temperature (``t_scale``).

**Detailed placement cost with power awareness** (AHA §5.3, Eq. 2, ``gamma`` > 0):
``sum_net HPWL(net)^alpha - gamma * sum_net |bbox(net) ∩ bbox(other nets)|``, i.e. a net
whose bounding box overlaps the boxes of other nets costs less: it is less likely to need
new powered-on pass-through tiles. Computed exactly and incrementally from a tile grid
counting how many net boxes cover each tile (a tile covered by c >= 2 boxes adds c to the
overlap sum). ``gamma = 0`` (the default) is the plain wirelength cost.

**Annealing** follows VPR (Betz & Rose, "VPR: A New Packing, Placement and Routing Tool for
FPGA Research", FPL 1997): moves are displacements to (or swaps with the occupant of) a random
compatible site within a range window ``rlim``; initial temperature 20x the standard deviation
of random-move costs; ``inner * N^(4/3)`` moves per temperature; temperature and window adapt
to the acceptance rate; stop when ``T < 0.005 * cost / nets``. All randomness comes from
``random.Random(seed)``: same netlist + seed = same placement, on any CPU (the global
placement uses no BLAS inner product and no CPU-dispatched exp/log: see :func:`minimise_cg`).
"""
from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from cgra.errors import MappingError, PlacementError
from mapper.netlist import Netlist
from mapper.backend.pack import PackedDesign

if TYPE_CHECKING:
    from mapper.collateral import Collateral

TAG_NAMES = {"p": "PE", "m": "MEM", "o": "pond", "I": "16-bit IO", "i": "1-bit IO",
             "r": "register"}


@dataclass
class PlaceParams:
    """``seed``; ``alpha`` (HPWL exponent); ``analytical`` (global placement first, the
    default; ``False``: simulated annealing alone from a random placement, the flow before
    issue 36);
    ``global_method`` (``"cg"``: quadratic start then conjugate gradient with the MEM-column
    potential; ``"quadratic"``: the quadratic solution only); ``inner`` (moves per
    temperature = inner * N^(4/3)); ``max_temperatures``; ``anchor`` (weight of the pull to
    the centre in the quadratic system); ``mem_potential`` (beta, tiles^-1: weight of the
    MEM-column potential); ``density`` (weight of the repulsion, in tiles);
    ``t_scale`` (the annealer's start temperature relative to VPR's, after a global
    placement) and ``window`` (its first move window, tiles; VPR starts at the whole
    array); ``gamma`` (weight of the net-box overlap reward of AHA Eq. 2, 0 = off);
    ``fixed``: instance -> (x, y) kept in place."""

    seed: int = 0
    alpha: float = 1.0
    analytical: bool = True
    global_method: str = "cg"
    inner: float = 1.0
    max_temperatures: int = 300
    anchor: float = 0.01
    mem_potential: float = 0.5
    density: float = 1.0
    t_scale: float = 0.01
    window: float = 2.0
    gamma: float = 0.0
    fixed: dict[str, tuple[int, int]] = field(default_factory=dict)

    def __post_init__(self):
        if self.global_method not in ("cg", "quadratic"):
            raise PlacementError(f"global_method {self.global_method!r} is not 'cg' or "
                                 f"'quadratic'")


@dataclass
class Placement:
    """``sites``: instance -> (x, y); ``cost`` = sum HPWL^alpha (minus gamma x overlap);
    ``hpwl`` = sum HPWL (tiles); ``seconds``; ``temperatures`` (annealing steps run);
    ``seed``; ``alpha``; ``method`` (``"sa"``, ``"cg+sa"`` or ``"quadratic+sa"``);
    ``global_seconds`` (time of the global placement and legalisation); ``overlap`` (the
    sum of net-box overlaps of Eq. 2, tiles)."""

    sites: dict[str, tuple[int, int]]
    cost: float
    hpwl: int
    seconds: float
    temperatures: int
    seed: int
    alpha: float
    method: str = "sa"
    global_seconds: float = 0.0
    overlap: int = 0


def _site_class(packed: PackedDesign) -> dict[str, tuple]:
    """instance -> site class key: (tag,) or ('r', width)."""
    reg_w: dict[str, int] = {}
    for n in packed.nets:
        for inst, _ in n.sinks:
            if packed.instances[inst].tag == "r":
                reg_w[inst] = n.width
    out = {}
    for name, inst in packed.instances.items():
        if inst.tag == "r":
            if name not in reg_w:
                raise PlacementError(f"register {name} has no input net; it cannot be placed")
            out[name] = ("r", reg_w[name])
        else:
            out[name] = (inst.tag,)
    return out


def site_capacity(coll: Collateral) -> dict[tuple, dict[tuple[int, int], int]]:
    """Site class -> (x, y) -> how many instances of the class the tile holds."""
    graphs = coll.graphs
    g = next(iter(graphs.values()))
    caps: dict[tuple, dict[tuple[int, int], int]] = {}
    pond_port = coll.pond.port(coll.pond.mem.in_ports[0]) if coll.pond is not None else None
    for (x, y), t in sorted(g.tiles.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if t.tag in ("p", "m", "I", "i"):
            caps.setdefault((t.tag,), {})[(x, y)] = 1
        if t.tag == "I" and 1 in graphs and t.routable(1):
            caps.setdefault(("i",), {})[(x, y)] = 1
        if t.tag == "p" and pond_port and any(q.name == pond_port for q in t.ports):
            caps.setdefault(("o",), {})[(x, y)] = 1     # the PE tile's pond: a second site
    for w, rg in sorted(graphs.items(), reverse=True):
        for xy, regs in sorted(rg.regs_by_tile.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            caps.setdefault(("r", w), {})[xy] = len(regs)
    return caps


def _hpwl(pts: list[tuple[int, int]]) -> int:
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    return max(xs) - min(xs) + max(ys) - min(ys)


class _Annealer:
    def __init__(self, packed: PackedDesign, cls: dict[str, tuple],
                 caps: dict[tuple, dict[tuple[int, int], int]], p: PlaceParams):
        self.p = p
        self.names = list(packed.instances)
        self.idx = {n: i for i, n in enumerate(self.names)}
        self.cls = [cls[n] for n in self.names]
        self.caps = caps
        self.site_list = {c: list(v) for c, v in caps.items()}
        self.nets: list[list[int]] = []
        self.inst_nets: list[list[int]] = [[] for _ in self.names]
        for n in packed.nets:
            members = sorted({self.idx[n.source[0]], *(self.idx[s[0]] for s in n.sinks)})
            if len(members) < 2:
                continue
            k = len(self.nets)
            self.nets.append(members)
            for m in members:
                self.inst_nets[m].append(k)
        self.loc: list[tuple[int, int]] = [(0, 0)] * len(self.names)
        self.occ: dict[tuple, dict[tuple[int, int], list[int]]] = {c: {} for c in caps}
        self.fixed = {self.idx[n] for n in p.fixed if n in self.idx}
        self.gamma = float(p.gamma)
        xs = [xy[0] for v in caps.values() for xy in v] or [0]
        ys = [xy[1] for v in caps.values() for xy in v] or [0]
        self.grid_shape = (max(xs) + 1, max(ys) + 1)
        self.cover = np.zeros(self.grid_shape, dtype=np.int32)
        self.boxes: list[tuple[int, int, int, int]] = []
        self.overlap = 0
        self._pending: tuple | None = None

    def set_all(self, locs: dict[int, tuple[int, int]]) -> None:
        self.occ = {c: {} for c in self.caps}
        for i, xy in locs.items():
            self.loc[i] = xy
            self.occ[self.cls[i]].setdefault(xy, []).append(i)
        self.net_cost = [self._net_cost(k) for k in range(len(self.nets))]
        self.total = sum(self.net_cost)
        if self.gamma:
            self.boxes = [self._box(k) for k in range(len(self.nets))]
            self.cover = np.zeros(self.grid_shape, dtype=np.int32)
            for x0, x1, y0, y1 in self.boxes:
                self.cover[x0:x1 + 1, y0:y1 + 1] += 1
            self.overlap = _overlap(self.cover)
            self.total -= self.gamma * self.overlap

    def _box(self, k: int) -> tuple[int, int, int, int]:
        pts = [self.loc[i] for i in self.nets[k]]
        xs = [q[0] for q in pts]
        ys = [q[1] for q in pts]
        return min(xs), max(xs), min(ys), max(ys)

    def _net_cost(self, k: int) -> float:
        h = _hpwl([self.loc[i] for i in self.nets[k]])
        return float(h) ** self.p.alpha if h else 0.0

    def hpwl(self) -> int:
        return sum(_hpwl([self.loc[i] for i in m]) for m in self.nets)

    def propose(self, rng: random.Random, rlim: float) -> tuple | None:
        movable = self.movable
        i = movable[rng.randrange(len(movable))]
        c = self.cls[i]
        sites = self.site_list[c]
        x0, y0 = self.loc[i]
        for _ in range(8):
            s = sites[rng.randrange(len(sites))]
            if s != (x0, y0) and abs(s[0] - x0) <= rlim and abs(s[1] - y0) <= rlim:
                break
        else:
            return None
        occ = self.occ[c].get(s, [])
        j = -1
        if len(occ) >= self.caps[c][s]:
            j = occ[rng.randrange(len(occ))]
            if j in self.fixed:
                return None
        return i, j, s

    def delta(self, move: tuple) -> tuple[float, dict[int, float]]:
        i, j, s = move
        old_i = self.loc[i]
        self.loc[i] = s
        if j >= 0:
            self.loc[j] = old_i
        touched = set(self.inst_nets[i])
        if j >= 0:
            touched.update(self.inst_nets[j])
        new = {k: self._net_cost(k) for k in touched}
        d = sum(new[k] - self.net_cost[k] for k in touched)
        if self.gamma:
            boxes = {k: self._box(k) for k in touched}
            cover = self.cover.copy()
            for k in touched:
                x0, x1, y0, y1 = self.boxes[k]
                cover[x0:x1 + 1, y0:y1 + 1] -= 1
                x0, x1, y0, y1 = boxes[k]
                cover[x0:x1 + 1, y0:y1 + 1] += 1
            ov = _overlap(cover)
            d -= self.gamma * (ov - self.overlap)
            self._pending = (boxes, cover, ov)
        self.loc[i] = old_i
        if j >= 0:
            self.loc[j] = s
        return d, new

    def apply(self, move: tuple, new: dict[int, float]) -> None:
        i, j, s = move
        c = self.cls[i]
        old_i = self.loc[i]
        self.occ[c][old_i].remove(i)
        self.occ[c].setdefault(s, []).append(i)
        self.loc[i] = s
        if j >= 0:
            self.occ[c][s].remove(j)
            self.occ[c].setdefault(old_i, []).append(j)
            self.loc[j] = old_i
        for k, v in new.items():
            self.total += v - self.net_cost[k]
            self.net_cost[k] = v
        if self.gamma:
            boxes, cover, ov = self._pending
            for k, b in boxes.items():
                self.boxes[k] = b
            self.cover = cover
            self.total -= self.gamma * (ov - self.overlap)
            self.overlap = ov

    def anneal(self, rng: random.Random, t_scale: float, max_dim: int,
               rlim_start: float | None = None) -> int:
        self.movable = [i for i in range(len(self.names)) if i not in self.fixed
                        and len(self.site_list[self.cls[i]]) > 1]
        if not self.movable or not self.nets:
            return 0
        n = len(self.movable)
        # initial temperature from the spread of random-move costs
        rlim = float(max_dim if rlim_start is None else min(rlim_start, max_dim))
        deltas = []
        for _ in range(max(n, 20)):
            mv = self.propose(rng, rlim)
            if mv is not None:
                deltas.append(self.delta(mv)[0])
        std = float(np.std(deltas)) if deltas else 1.0
        temp = max(20.0 * std * t_scale, 1e-3)
        moves = max(int(self.p.inner * n ** (4 / 3)), 20)
        steps = 0
        while steps < self.p.max_temperatures:
            steps += 1
            acc = 0
            tried = 0
            for _ in range(moves):
                mv = self.propose(rng, rlim)
                if mv is None:
                    continue
                tried += 1
                d, new = self.delta(mv)
                if d <= 0 or rng.random() < math.exp(-d / temp):
                    self.apply(mv, new)
                    acc += 1
            r = acc / tried if tried else 0.0
            if temp < 0.005 * max(self.total, 1e-9) / len(self.nets) or self.total == 0:
                break
            temp *= 0.5 if r > 0.96 else 0.9 if r > 0.8 else 0.95 if r > 0.15 else 0.8
            rlim = min(max(rlim * (1 - 0.44 + r), 1.0), float(max_dim))
        # final greedy pass at T = 0
        for _ in range(moves):
            mv = self.propose(rng, 2.0)
            if mv is not None:
                d, new = self.delta(mv)
                if d < 0:
                    self.apply(mv, new)
        return steps


def _overlap(cover: np.ndarray) -> int:
    """Sum over nets of the tiles of the net's box also covered by another net's box: a tile
    covered by c >= 2 boxes counts c times (AHA Eq. 2's ``Area_net ∩ Area_existing``)."""
    return int(cover[cover >= 2].sum())


def _cg(ann: _Annealer, packed: PackedDesign, start: np.ndarray,
        anchors: dict[int, tuple[float, float]], p: PlaceParams) -> np.ndarray:
    """Conjugate-gradient global placement (module docstring, step 2) from ``start`` (N, 2);
    anchored instances stay where ``anchors`` puts them. Returns (N, 2) coordinates."""
    n = len(ann.names)
    free = np.array([i for i in range(n) if i not in anchors], dtype=int)
    if free.size == 0:
        return start
    pos = start.copy()
    for i, xy in anchors.items():
        pos[i] = xy
    src, dst = [], []
    for net in packed.nets:
        a = ann.idx[net.source[0]]
        for inst, _ in net.sinks:
            b = ann.idx[inst]
            if a != b:
                src.append(a)
                dst.append(b)
    src_a, dst_a = np.array(src, dtype=int), np.array(dst, dtype=int)
    mem_cols = np.array(sorted({xy[0] for xy in ann.caps.get(("m",), {})}), dtype=float)
    mem_idx = np.array([i for i in free if ann.cls[i] == ("m",)], dtype=int)
    groups = []
    for c, sites in ann.caps.items():
        if all(v == 1 for v in sites.values()):
            members = np.array([i for i in range(n) if ann.cls[i] == c], dtype=int)
            if members.size > 1:
                groups.append(members)
    eps2, tau, sigma2 = 0.25, 0.5, 1.0
    beta, rho = p.mem_potential, p.density

    def f(flat: np.ndarray) -> tuple[float, np.ndarray]:
        x = pos.copy()
        x[free] = flat.reshape(-1, 2)
        g = np.zeros_like(x)
        total = 0.0
        if src_a.size:
            d = x[src_a] - x[dst_a]
            r = np.sqrt((d * d).sum(axis=1) + eps2)
            total += float(r.sum())
            gd = d / r[:, None]
            np.add.at(g, src_a, gd)
            np.add.at(g, dst_a, -gd)
        if beta and mem_idx.size and mem_cols.size:
            dx = x[mem_idx, 0][:, None] - mem_cols[None, :]          # (m, columns)
            e = -(dx * dx) / tau
            emax = e.max(axis=1, keepdims=True)
            w = exp_det(e - emax)
            ssum = w.sum(axis=1, keepdims=True)
            total += float(beta * (-tau * (log_det(ssum) + emax)).sum())
            g[mem_idx, 0] += beta * ((w / ssum) * 2 * dx).sum(axis=1)
        if rho:
            for members in groups:
                d = x[members][:, None, :] - x[members][None, :, :]  # (k, k, 2)
                e = exp_det(-(d * d).sum(axis=2) / sigma2)
                np.fill_diagonal(e, 0.0)
                total += float(rho * e.sum() / 2)
                g[members] += rho * (-2.0 / sigma2) * (e[:, :, None] * d).sum(axis=1)
        return total, g[free].ravel()

    pos[free] = minimise_cg(f, pos[free].ravel(), maxiter=100, gtol=1e-3).reshape(-1, 2)
    return pos


# ------------------------------------------------------- reproducible numerics (any x86/ARM CPU)
# The same seed must give the same placement on every machine. BLAS (numpy's dot, LAPACK's
# solve) picks its kernel, and with it the order of its sums, per CPU, and numpy's float64
# exp/log take an AVX-512 path on CPUs that have it: scipy's CG (whose inner products are
# BLAS ddot) placed the 8x8 stencil of tests/mapper/test_pipeline.py up to 0.58 tiles apart
# on two CPUs from a start that differed by 4e-15, which changed its routes and its Fmax.
# Below, every operation is one IEEE-754 correctly rounded elementwise operation or numpy's
# pairwise summation, whose order does not depend on the CPU.
_LN2 = 0.6931471805599453
_LN2_HI = 6.93147180369123816490e-01    # ln 2 split so that k * _LN2_HI is exact (fdlibm)
_LN2_LO = 1.90821492927058770002e-10
_INV_FACT = [1.0 / math.factorial(n) for n in range(14)]


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """``a . b`` (1-D float64) by numpy's pairwise summation of the products."""
    return float(np.add.reduce(a * b))


def exp_det(x: np.ndarray) -> np.ndarray:
    """``exp(x)`` (float64, any shape) to ~2 ulp, the same bits on every CPU: ``x = k ln2 +
    r`` with ``|r| <= ln2 / 2`` (Cody-Waite reduction), the degree-13 Taylor polynomial of
    ``exp(r)`` (truncation < 1e-17) by Horner's rule, scaled by ``2^k`` (exact)."""
    x = np.asarray(x, dtype=float)
    k = np.rint(x / _LN2)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = np.full_like(r, _INV_FACT[13])
    for c in reversed(_INV_FACT[:13]):
        p = p * r + c
    return np.ldexp(p, np.clip(k, -2000, 2000).astype(np.int64))


def log_det(x: np.ndarray) -> np.ndarray:
    """``log(x)`` for ``x > 0`` (float64) to ~2 ulp, the same bits on every CPU: ``x = m
    2^e`` with ``m`` in [sqrt(1/2), sqrt(2)), ``log m = 2 atanh(z)``, ``z = (m - 1) / (m +
    1)`` (``|z| < 0.172``), its series to ``z^23`` (truncation < 1e-18)."""
    m, e = np.frexp(np.asarray(x, dtype=float))
    low = m < 0.7071067811865476
    m = np.where(low, m * 2.0, m)
    e = np.where(low, e - 1, e)
    z = (m - 1.0) / (m + 1.0)
    z2 = z * z
    s = np.full_like(z, 1.0 / 23)
    for j in range(10, -1, -1):
        s = s * z2 + 1.0 / (2 * j + 1)
    return e * _LN2 + 2.0 * z * s


def minimise_cg(f, x0: np.ndarray, maxiter: int = 100, gtol: float = 1e-3,
                c1: float = 1e-4, c2: float = 0.4) -> np.ndarray:
    """Minimise ``f`` (``x`` (n,) float64 -> ``(value, gradient (n,))``) from ``x0``:
    Polak-Ribiere+ nonlinear conjugate gradient (Nocedal & Wright, *Numerical Optimization*,
    2nd ed., §5.2, Eq. 5.44-5.45), as scipy's ``minimize(method="CG")``: MINPACK's strong-
    Wolfe line search (scipy's ``scalar_search_wolfe1``, ``c1``, ``c2``; first trial step
    from the last decrease, Eq. 3.60), a restart along the steepest descent when the
    direction descends too little (``g.d > -0.01 g.g``) or the search finds no step. Stops
    after ``maxiter`` iterations, when the largest gradient component is at most ``gtol``,
    or when no step along the steepest descent decreases ``f``. The line search runs on
    scalars and every inner product is :func:`_dot`, so the iterates are the same bits on
    every CPU; scipy's CG, used before, takes its inner products from BLAS (whose kernel,
    and order of summation, depends on the CPU) and was not."""
    from scipy.optimize._linesearch import scalar_search_wolfe1  # deferred, as scipy.optimize: global placement only; the scalar MINPACK search (scipy's CG's own), no public name

    x = np.array(x0, dtype=float)
    fx, g = f(x)
    d = -g
    gg = _dot(g, g)
    f_old = fx + 0.5 * float(np.sqrt(gg))
    for _ in range(maxiter):
        if float(np.abs(g).max()) <= gtol:
            break
        slope = _dot(g, d)
        if slope > -0.01 * gg:
            d, slope = -g, -gg
        seen: dict[float, tuple] = {}

        def phi(a: float, x=x, d=d, seen=seen) -> float:
            if a not in seen:
                xa = x + a * d
                seen[a] = (xa, *f(xa))
            return seen[a][1]

        def dphi(a: float, d=d, seen=seen) -> float:
            phi(a)
            return _dot(seen[a][2], d)

        step = scalar_search_wolfe1(phi, dphi, fx, f_old, slope, c1=c1, c2=c2,
                                    amax=1e100, amin=1e-100)[0]
        if step is None:
            if slope == -gg:
                break
            d = -g                                  # restart (§5.2) from the same point
            continue
        xn, fn, gn = seen[step]
        ggn = _dot(gn, gn)
        beta = max(0.0, _dot(gn, gn - g) / gg) if gg > 0.0 else 0.0
        d = -gn + beta * d
        f_old, x, fx, g, gg = fx, xn, fn, gn, ggn
    return x


def _quadratic(ann: _Annealer, anchors: dict[int, tuple[float, float]], centre: tuple[float, float],
               eps: float) -> np.ndarray:
    """Solve the clique-model quadratic placement; returns (N, 2) coordinates."""
    n = len(ann.names)
    lap = np.zeros((n, n))
    for m in ann.nets:
        w = 1.0 / (len(m) - 1)
        for a in range(len(m)):
            for b in range(a + 1, len(m)):
                i, j = m[a], m[b]
                lap[i, i] += w
                lap[j, j] += w
                lap[i, j] -= w
                lap[j, i] -= w
    rhs = np.zeros((n, 2))
    for i in range(n):
        lap[i, i] += eps
        rhs[i] += eps * np.asarray(centre)
    big = 1e3
    for i, (x, y) in anchors.items():
        lap[i, i] += big
        rhs[i] += big * np.asarray((x, y))
    # LAPACK's result differs in the last bits between CPUs (4e-15 seen): snapped to 1/1024
    # tile, it is the same start for the conjugate gradient everywhere
    return np.round(np.linalg.solve(lap, rhs) * 1024.0) / 1024.0


def _legalise(ann: _Annealer, coords: np.ndarray, fixed_locs: dict[int, tuple[int, int]]
              ) -> dict[int, tuple[int, int]]:
    from scipy.optimize import linear_sum_assignment  # deferred: scipy.optimize costs 0.34 s of import, only for global placement

    locs = dict(fixed_locs)
    by_cls: dict[tuple, list[int]] = {}
    for i in range(len(ann.names)):
        if i not in locs:
            by_cls.setdefault(ann.cls[i], []).append(i)
    for c, members in by_cls.items():
        used = {}
        for i, xy in locs.items():
            if ann.cls[i] == c:
                used[xy] = used.get(xy, 0) + 1
        slots = [xy for xy, cap in ann.caps[c].items()
                 for _ in range(min(cap - used.get(xy, 0), len(members)))]
        pts = coords[members]                                   # (n, 2)
        sl = np.asarray(slots, dtype=float)                     # (s, 2)
        cost = ((pts[:, None, :] - sl[None, :, :]) ** 2).sum(axis=2)
        rows, cols = linear_sum_assignment(cost)
        for r, cidx in zip(rows, cols, strict=True):
            locs[members[r]] = slots[cidx]
    return locs


def place(packed: PackedDesign, coll: Collateral,
          params: PlaceParams | None = None) -> Placement:
    """Place ``packed`` on the array of ``coll``.

    Returns a :class:`Placement` (tile coordinates, cost, HPWL in tiles, seconds). Raises
    :class:`PlacementError` when a tag has more instances than sites (naming the tag, the
    count needed and the sites available), or a fixed site is incompatible.
    """
    t0 = time.perf_counter()
    p = params or PlaceParams()
    rng = random.Random(p.seed)
    cls = _site_class(packed)
    caps = site_capacity(coll)
    need: dict[tuple, int] = {}
    for c in cls.values():
        need[c] = need.get(c, 0) + 1
    for c, k in need.items():
        have = sum(caps.get(c, {}).values())
        if k > have:
            what = TAG_NAMES.get(c[0], c[0]) + (f" ({c[1]}-bit)" if len(c) > 1 else "")
            raise PlacementError(
                f"design {packed.name} needs {k} {what} site(s) (tag '{c[0]}') but the array "
                f"has {have}; use a larger array, a smaller unroll factor, or fewer "
                f"{what} instances")
    ann = _Annealer(packed, cls, caps, p)
    fixed_locs: dict[int, tuple[int, int]] = {}
    for name, xy in p.fixed.items():
        if name not in ann.idx:
            raise PlacementError(f"fixed placement names unknown instance {name}")
        c = cls[name]
        if tuple(xy) not in caps.get(c, {}):
            raise PlacementError(f"instance {name} (tag '{c[0]}') cannot be fixed at tile "
                                 f"{tuple(xy)}: not a {TAG_NAMES.get(c[0], c[0])} site")
        fixed_locs[ann.idx[name]] = (int(xy[0]), int(xy[1]))
    cols, rows = coll.size
    max_dim = max(cols, rows)
    if p.analytical and ann.nets:
        # anchor IO instances on the IO sites nearest the array centre (in instance order,
        # west to east), then solve
        anchors: dict[int, tuple[float, float]] = dict(fixed_locs)
        cx, cy = (cols - 1) / 2, (rows - 1) / 2
        for tag in ("I", "i"):
            ios = [i for i in range(len(ann.names)) if ann.cls[i] == (tag,)
                   and i not in fixed_locs]
            free = [s for s in caps.get((tag,), {}) if s not in fixed_locs.values()]
            near = sorted(free, key=lambda s: (abs(s[0] - cx) + abs(s[1] - cy), s))[:len(ios)]
            for i, s in zip(ios, sorted(near), strict=True):
                anchors[i] = s
        coords = _quadratic(ann, anchors, ((cols - 1) / 2, (rows - 1) / 2), p.anchor)
        if p.global_method == "cg":
            coords = _cg(ann, packed, coords, anchors, p)
        locs = _legalise(ann, coords, fixed_locs)
        t_scale = p.t_scale
        method = f"{p.global_method}+sa"
        t_global = time.perf_counter() - t0
    else:
        locs = dict(fixed_locs)
        for c in caps:
            members = [i for i in range(len(ann.names)) if ann.cls[i] == c and i not in locs]
            slots = [xy for xy, cap in caps[c].items() for _ in range(cap)]
            for xy in fixed_locs.values():
                if xy in slots and any(ann.cls[i] == c and fixed_locs[i] == xy
                                       for i in fixed_locs):
                    slots.remove(xy)
            rng.shuffle(slots)
            for i, xy in zip(members, slots, strict=False):
                locs[i] = xy
        t_scale = 1.0
        method, t_global = "sa", 0.0
    ann.set_all(locs)
    steps = ann.anneal(rng, t_scale, max_dim, p.window if method != "sa" else None)
    sites = {n: ann.loc[i] for i, n in enumerate(ann.names)}
    return Placement(sites, ann.total, ann.hpwl(), time.perf_counter() - t0, steps, p.seed,
                     p.alpha, method, t_global, ann.overlap if ann.gamma else 0)


def check_placement(packed: PackedDesign, placement: Placement, coll: Collateral,
                    where: str = "", fix: str = "") -> None:
    """Raise :class:`PlacementError` unless ``placement`` places exactly the instances of
    ``packed``, every site is on the array (``0 <= x < columns``, ``0 <= y < rows``) on a tile
    whose tag takes the instance (module docstring: a PE on a ``p`` tile, a MEM on an ``m``
    tile, an IO on an ``I`` / ``i`` tile, a register on a tile with pipeline-register nodes of
    its width), and no site holds more instances of a class than its capacity
    (:func:`site_capacity`). The message names the instance, the site and the tile's tag;
    ``where`` (the file read, e.g. ``placement.json``) prefixes it and ``fix`` ends it.
    Linear in the instances and tiles."""
    pre = f"{where}: " if where else ""
    tail = f"; {fix}" if fix else ""
    cls = _site_class(packed)
    caps = site_capacity(coll)
    cols, rows = coll.size
    tiles = coll.tiles
    for name in placement.sites:
        if name not in packed.instances:
            raise PlacementError(f"{pre}instance {name} has a site but is not an instance of "
                                 f"the packed design {packed.name}{tail}")
    occupants: dict[tuple, list[str]] = {}
    for name in packed.instances:
        if name not in placement.sites:
            raise PlacementError(f"{pre}instance {name} is not placed{tail}")
        xy = tuple(placement.sites[name])
        c = cls[name]
        what = _class_name(c)
        inst = f"instance {name} ({what}, tag '{c[0]}')"
        if not (0 <= xy[0] < cols and 0 <= xy[1] < rows):
            raise PlacementError(f"{pre}{inst} is placed at site {xy}, off the {cols}x{rows} "
                                 f"array (x 0..{cols - 1}, y 0..{rows - 1}){tail}")
        tile = _tile_kind(tiles.get(xy))
        cap = caps.get(c, {}).get(xy, 0)
        if cap == 0:
            raise PlacementError(f"{pre}{inst} is placed at site {xy}, {tile} that holds no "
                                 f"{what}{tail}")
        here = occupants.setdefault((c, xy), [])
        here.append(name)
        if len(here) > cap:
            are = "are both" if len(here) == 2 else "are all"
            raise PlacementError(f"{pre}instances {', '.join(here)} ({what}, tag '{c[0]}') "
                                 f"{are} placed at site {xy}, {tile} that holds {cap} "
                                 f"{what}{'s' if cap > 1 else ''}{tail}")


def _class_name(c: tuple) -> str:
    """``PE``, ``MEM``, ``16-bit IO``, ``16-bit register``, ... of a site class."""
    return f"{c[1]}-bit register" if c[0] == "r" else TAG_NAMES.get(c[0], f"tag {c[0]!r}")


def _tile_kind(tile) -> str:
    """``a tile of tag 'p' (PE)`` / ``an empty tile (no core)`` of a tile record."""
    if tile is None or not tile.tag:
        return "an empty tile (no core)"
    return f"a tile of tag '{tile.tag}' ({TAG_NAMES.get(tile.tag, tile.tag)})"


def check_capacity(nl: Netlist, coll: Collateral, tags: tuple[str, ...] = ("p", "m", "o")
                   ) -> None:
    """Raise :class:`MappingError` when the netlist needs more tiles of a kind in ``tags``
    (default PE and MEM: what the app computes with; the IO count of stand-alone CoreIR
    kernels, one IO per kernel port, is placement's concern) than the design has, naming
    the kind, both counts and the fix."""
    caps = site_capacity(coll)
    need: dict[str, int] = {}
    for inst in nl.instances.values():
        if inst.tag in tags:
            need[inst.tag] = need.get(inst.tag, 0) + 1
    names = {"p": "PE", "m": "MEM", "o": "pond (PE tiles with a pond)", "I": "16-bit IO",
             "i": "1-bit IO"}
    for tag, k in need.items():
        have = sum(caps.get((tag,), {}).values())
        if k > have:
            raise MappingError(f"{nl.name} needs {k} {names[tag]} tiles but design "
                               f"{coll.name} ({coll.size[0]}x{coll.size[1]}) has {have}; use a "
                               f"larger design (e.g. configs/default.toml), a smaller unroll, "
                               f"or fewer ops")
