"""nlm_bf16: a small non-local-means style filter in BFloat16 on the FP PE: each output pixel is
the average of its 4-neighbourhood (the pixel and its left, right, upper and lower
neighbours), each neighbour weighted by ``exp(-h * (p - q)**2)`` (1-pixel patches, a cross
search window), normalised by the sum of the weights (a division).

- Input ``input``: ``BFloat16`` encodings of grey pixels ``0..255`` (exact in bf16), made on
  the host by :func:`mapper.apps.app_images`. Larger values are outside the stated bound (the
  exponent argument could pass ``-16``, where :func:`mapper.frontend.float_math.exp` saturates).
- Weights, one per pair of adjacent pixels, computed once and read by both pixels of the pair
  (the weight is symmetric; this halves the ``exp`` count: 2 instead of 4 per output pixel):
  ``wh(x, y) = exp((in(x, y) - in(x+1, y))**2 * -H)`` (pair (x, y)-(x+1, y)),
  ``wv(x, y) = exp((in(x, y) - in(x, y+1))**2 * -H)`` (pair (x, y)-(x, y+1)), with
  ``H = 2**-12`` (:data:`H`): the argument is in ``[-15.875, 0]``, inside ``exp``'s
  unsaturated range ``|x| <= 16`` for any pair of pixels 0..255 (``255**2`` rounds to 65024
  in bf16).  Each: ``float.sub``, ``float.mul``, ``float.mul`` by the constant, ``exp``
  (19 PEs): 22 PEs.
- Output, centre ``p = in(x+1, y+1)``, neighbours ``l, r, u, d`` = ``in(x, y+1)``,
  ``in(x+2, y+1)``, ``in(x+1, y)``, ``in(x+1, y+2)`` with weights ``wl = wh(x, y+1)``,
  ``wr = wh(x+1, y+1)``, ``wu = wv(x+1, y)``, ``wd = wv(x+1, y+1)``:
  ``num = (((p + wl*l) + wr*r) + wu*u) + wd*d``, ``den = (((1 + wl) + wr) + wu) + wd``,
  ``nlm_bf16 = num / den`` (the centre's weight is ``exp(0) = 1``): 4 ``float.mul``,
  8 ``float.add``, the 11-PE division: 23 PEs. 67 PEs in all and 4 MEM tiles (line
  buffers) on ``configs/bf16.toml``.
- Output: ``BFloat16`` encodings (a weighted average of pixels, in ``[0, 255]``).

Output domain: ``(W-2) x (H-2)``. Needs the FP PE with ``float.min``/``max`` by a constant and
the int16 <-> bf16 conversions (``exp``): ``configs/bf16.toml``.

Golden models and the stated bound :data:`HALIDE_TOLERANCE_ULP`. The RTL, the numpy
interpreter and Halide share every rounding up to the exponent argument (the difference of
integers 0..255 is exact, the square is rounded to nearest even by all three, ``* -H`` is
exact), so only ``exp`` and ``/`` differ. The numpy interpreter evaluates the IR (the
decompositions of :mod:`mapper.frontend.float_math`) and equals the RTL bit for bit. Halide computes
``exp`` and ``/`` in float32 and rounds to bf16: the exact value rounded to nearest even (the
double rounding is innocuous for ``/ + *``, float32 having more than ``2*8 + 2`` bits; for
``exp`` it is checked on every argument of ``[-16, 0]`` by ``tests/mapper/test_nlm_bf16.py``).
Bound on the output's ulp distance (:func:`mapper.sim.run.bf16_ulp_distance`), every rounding
taken at its worst and in opposite directions in the two paths, with ``u = 2**-8`` (bf16 has
8 significant bits: rounding to nearest is within ``u`` relative, an ulp of ``v`` lies in
``(u*|v|, 2u*|v|]``), as a factor on the exact value (:func:`halide_bound_ulp` evaluates it):

1. weights ``w``: ``float_math.exp`` is within 2 ulp of the rounded ``exp``, i.e. 2.5 ulp
   ``<= e = 5u(1 + u)`` relative of the exact one; Halide's within ``e = u``;
2. products ``w * q`` (``q`` exact): one rounding, ``(1 +- e)(1 +- u)``;
3. sums of positive terms: a sum's factor lies between its terms' extreme factors, times
   ``(1 +- u)`` per addition: ``num`` (4 additions after a product) within
   ``(1 +- e)(1 +- u)**5``, ``den`` (``1`` exact, 4 additions) within ``(1 +- e)(1 +- u)**4``;
4. the quotient: ``num / den`` times the division's own error ``d`` (``float_math.div``:
   2 ulp from the rounded quotient, ``d = 5u(1 + u)``; Halide ``d = u``): the output lies in
   ``[L, U] * exact`` with ``U = (1+e)(1+u)**5 (1+d) / ((1-e)(1-u)**4)``,
   ``L = (1-e)(1-u)**5 (1-d) / ((1+e)(1+u)**4)``; ours ``[0.9103, 1.0981]``, Halide's
   ``[0.9542, 1.0480]``;
5. two values in those ranges are at most ``(U_a - L_b) * x`` apart, and an ulp at the lower
   one is more than ``u * L_b * x``: ``max((U_ours - L_hl) / (u L_hl), (U_hl - L_ours) /
   (u L_ours)) = 38.8``, so at most 38 ulp: :data:`HALIDE_TOLERANCE_ULP`.

A zero output (a black neighbourhood) is exact in all three models (``0 * recip(den) = 0``).
The bound is loose by construction; the measured difference on the camera, astronaut and
coffee images is at most 3 ulp (``tests/mapper/test_nlm_bf16.py``; on Verilator,
``tests/e2e/test_e2e_nlm_bf16.py``).
"""
from __future__ import annotations

from mapper.frontend.dsl import BFloat16, Func, Input, Pipeline, Var, exp

#: the filter strength: weights ``exp(-H * (p - q)**2)`` (a power of two: ``* -H`` is exact);
#: ``|p - q| = 64`` gives ``1/e``
H = 2.0 ** -12
#: the relative rounding error of bf16 (8 significant bits, round to nearest even)
U = 2.0 ** -8
#: the error bounds of :mod:`mapper.frontend.float_math`'s ``exp`` and ``div``, in ulps of the result
#: from the correctly rounded value
EXP_ULP, DIV_ULP = 2, 2


def halide_bound_ulp(exp_ulp: float = EXP_ULP, div_ulp: float = DIV_ULP) -> float:
    """The worst-case distance, in bf16 ulps, between the array's output and Halide's when
    the array's ``exp`` and ``/`` are within ``exp_ulp`` / ``div_ulp`` ulp of the rounded
    value and Halide's are correctly rounded (module docstring, steps 1-5): 38.8 for 2 and 2
    (25.2 for 0 and 0: the products' and sums' roundings alone)."""
    def envelope(e: float, d: float) -> tuple[float, float]:
        hi = (1 + e) * (1 + U) ** 5 * (1 + d) / ((1 - e) * (1 - U) ** 4)
        lo = (1 - e) * (1 - U) ** 5 * (1 - d) / ((1 + e) * (1 + U) ** 4)
        return hi, lo

    rel = lambda k: (2 * k + 1) * U * (1 + U)  # noqa: E731  (k + 1/2) ulp <= 2u(1+u) each
    hi_o, lo_o = envelope(rel(exp_ulp), rel(div_ulp))
    hi_h, lo_h = envelope(U, U)
    return max((hi_o - lo_h) / (U * lo_h), (hi_h - lo_o) / (U * lo_o))


#: the stated bound of the Halide comparison, in bf16 ulps of the output:
#: ``floor(halide_bound_ulp()) = 38`` (module docstring)
HALIDE_TOLERANCE_ULP = 38


def pair_weight(name: str, inp: Input, x: Var, y: Var, dx: int, dy: int) -> Func:
    """``name[x, y] = exp((inp[x, y] - inp[x + dx, y + dy])**2 * -H)``: the weight of the pair
    of pixels ``(x, y)`` and ``(x + dx, y + dy)`` (22 PEs)."""
    w = Func(name)
    diff = inp[x, y] - inp[x + dx, y + dy]
    w[x, y] = exp(diff * diff * -H)
    return w


def build(width: int = 64, height: int = 64, unroll: int = 1) -> Pipeline:
    x, y = Var("x"), Var("y")
    inp = Input("input", BFloat16, (width, height))
    wh = pair_weight("wh", inp, x, y, 1, 0)
    wv = pair_weight("wv", inp, x, y, 0, 1)
    out = Func("nlm_bf16")
    terms = [(wh[x, y + 1], inp[x, y + 1]), (wh[x + 1, y + 1], inp[x + 2, y + 1]),
             (wv[x + 1, y], inp[x + 1, y]), (wv[x + 1, y + 1], inp[x + 1, y + 2])]
    num, den = inp[x + 1, y + 1], None
    for w, q in terms:
        num = num + w * q
        den = w + 1.0 if den is None else den + w
    out[x, y] = num / den
    return Pipeline(out, "nlm_bf16", unroll)
