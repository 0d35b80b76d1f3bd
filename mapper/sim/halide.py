"""Golden model 2: build the same DSL pipeline in real Halide (``import halide as hl``, v21)
and JIT-run it on the CPU.

The exporter works from the DSL tree (:mod:`mapper.frontend.dsl`), not from the lowered IR,
so it is independent of the lowering and of the numpy interpreter: Halide evaluates the
reductions with its own ``RDom`` update loops, its own integer semantics (16-bit wrap-around,
floor division by powers of two, ``abs`` returning unsigned) and its own bounds inference.
The output is realized over the same valid domain as :meth:`mapper.ir.Pipeline.domains`
(so the output image shrinks by the stencil footprint), or for inputs read through
``repeat_edge`` (Halide's own ``BoundaryConditions.repeat_edge``) over the input's domain at the
output's rate (:meth:`mapper.frontend.dsl.Pipeline.output_domain`).  The ``unroll`` factor becomes a
``split(x, U).unroll`` schedule (results are unchanged by construction).

``BFloat16`` values are Halide ``BFloat(16)`` (CPU: emulated through float32, rounded to
nearest even after each op; exact with the FP PE for ``+ - *`` except subnormals and NaN
payloads, docs/peak_dsl.md "BFloat16"). Images stay 16-bit encodings at the boundary: a
BFloat16 input is a ``UInt(16)`` ImageParam ``reinterpret``-ed as ``BFloat(16)``, constants and
tables are built from their encodings (no rounding in Halide), and a BFloat16 output is
realized as its ``UInt(16)`` encodings.

Word width: on a design of narrower data words than the app's (``data_width = 8``, an app
of ``UInt16``), ``word_bits`` builds the app with its integer types that many bits wide
(``UInt16`` -> ``UInt(8)``, ``Int16`` -> ``Int(8)``; images, tables and constants keep their
low bits), the golden model of :func:`mapper.ir.narrow_pipeline`. A shift by a constant of
at least the word width, which Halide leaves undefined (its simplifier refuses it), is the
IR's value (SMT-LIB ``bvlshr`` / ``bvashr`` / ``bvshl``: 0, or the sign fill of an
arithmetic shift).

Compiled pipelines are cached per DSL pipeline object and word width (JIT compile costs
~1 s).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from cgra.errors import SimulationError
from mapper.frontend import dsl


def _hl():
    import halide as hl  # deferred: loads halide only when called

    return hl


def _htype(t: dsl.Type):
    hl = _hl()
    if t is dsl.Bool:
        return hl.Bool()
    if t.is_float:
        return hl.BFloat(t.bits)
    return hl.Int(t.bits) if t.signed else hl.UInt(t.bits)


def _storage(t: dsl.Type):
    """The Halide type of ``t``'s images and tables (a BFloat16 image holds encodings)."""
    return _hl().UInt(16) if t.is_float else _htype(t)


def _value(t: dsl.Type, e):
    """A read of a ``t`` image (storage type) as a ``t`` value."""
    return _hl().reinterpret(_htype(t), e) if t.is_float else e


class HalidePipeline:
    """A DSL pipeline built as Halide Funcs; :meth:`run` realizes it on images."""

    def __init__(self, pipe: dsl.Pipeline, word_bits: int | None = None):
        hl = _hl()
        self.pipe = pipe
        if word_bits is not None and word_bits not in (8, 16, 32):
            raise SimulationError(f"Halide golden {pipe.name}: word_bits {word_bits} is not a "
                                  f"Halide integer width the images can hold (8, 16, 32)")
        #: bits of the integer words (None: the DSL types' own 16)
        self.word_bits = word_bits
        self.params = {i.name: hl.ImageParam(self._storage(i.type), len(i.shape),
                                             f"input_{i.name}")
                       for i in pipe.inputs}
        self.vars: dict[str, Any] = {}         # DSL Var name -> hl.Var
        self.funcs: dict[str, Any] = {}
        self.tables: dict[int, Any] = {}
        self.clamped: dict[str, Any] = {}      # input name -> its repeat_edge Func
        for f in pipe.funcs:
            self._define(f)
        for f in pipe.funcs:
            if f is not pipe.output:
                self.funcs[f.name].compute_root()
        #: output name -> (the Func realised, its storage type, its domain: (lo, hi) per
        #: coordinate); each output is realised on its own, over its own domain
        self.outs: dict[str, tuple[Any, Any, Any]] = {}
        self.tensor = not pipe.is_stencil()
        if self.tensor:                # mapper.frontend.tensor's domains (its module docstring)
            from mapper.frontend.tensor import domains as tensor_domains  # deferred: loads mapper.frontend, mapper.interp only when called
            tdom = tensor_domains(pipe)
            domains = {o.name: tdom[o.name] for o in pipe.outputs}
        else:
            domains = {n: ((b.x0, b.x1), (b.y0, b.y1))
                       for n, b in pipe.output_domains().items()}
        for o in pipe.outputs:
            out = self.funcs[o.name]
            vs = [self._var(v.name) for v in o.vars]
            if o.type.is_float:        # realize the encodings
                enc = hl.Func(f"{o.name}_bits")
                enc[vs] = hl.reinterpret(hl.UInt(16), out[vs])
                out = enc
            elif o is not pipe.output:
                out = hl.Func(f"{o.name}_out")     # a root copy: o stays compute_root
                out[vs] = self.funcs[o.name][vs]
            if o is pipe.output and pipe.unroll > 1:
                xo, xi = hl.Var("xo"), hl.Var("xi")
                out.split(vs[0], xo, xi, pipe.unroll, hl.TailStrategy.GuardWithIf).unroll(xi)
            out.compile_jit()
            self.outs[o.name] = (out, self._storage(o.type), domains[o.name])
        self.out, self.out_type, self.domain = self.outs[pipe.output.name]

    def _htype(self, t: dsl.Type):
        """``t`` as a Halide type, integer words ``word_bits`` wide when set."""
        if self.word_bits is None or t is dsl.Bool or t.is_float:
            return _htype(t)
        hl = _hl()
        return hl.Int(self.word_bits) if t.signed else hl.UInt(self.word_bits)

    def _storage(self, t: dsl.Type):
        return _storage(t) if t.is_float else self._htype(t)

    def _dtype(self, t: dsl.Type) -> np.dtype:
        """The numpy type of ``t``'s images and tables."""
        bits = 16 if self.word_bits is None or t.is_float else self.word_bits
        return np.dtype(f"{'int' if t.signed and not t.is_float else 'uint'}{bits}")

    def _var(self, name: str):
        if name not in self.vars:
            self.vars[name] = _hl().Var(name)
        return self.vars[name]

    def _define(self, f: dsl.Func) -> None:
        hl = _hl()
        hf = hl.Func(f.name)
        self.funcs[f.name] = hf
        pure = {v: self._var(v.name) for v in f.vars}
        vs = [pure[v] for v in f.vars]
        hf[vs] = self._expr(f.pure, pure, {}, f)
        rmap: dict = {}
        if f.update_expr is not None:
            r = hl.RDom([hl.Range(lo, e) for lo, e in f.rdom.ranges], f.rdom.name)
            rmap = {v: r[i] for i, v in enumerate(f.rdom.vars)}
            hf[vs] = self._expr(f.update_expr, pure, rmap, f)
        self._schedule(f, hf, pure, rmap)

    def _schedule(self, f: dsl.Func, hf, pure: dict, rmap: dict) -> None:
        """Apply ``f``'s split / unroll directives (Halide's own; results unchanged)."""
        hl = _hl()
        names = {"pure": {v.name: x for v, x in pure.items()},
                 "update": {**{v.name: x for v, x in pure.items()},
                            **{v.name: x for v, x in rmap.items()}}}
        for d in f.directives:
            known = names[d.definition]
            stage = hf if d.definition == "pure" else hf.update(0)
            if d.kind == "split":
                v = known[d.var]
                make = hl.RVar if isinstance(v, hl.RVar) else hl.Var
                known[d.outer], known[d.inner] = make(d.outer), make(d.inner)
                stage.split(v, known[d.outer], known[d.inner], d.factor,
                            hl.TailStrategy.GuardWithIf)
            else:
                stage.unroll(known[d.var])

    def _index(self, a: dsl.Affine, pure: dict, rmap: dict):
        hl = _hl()
        def var(t: dsl.Var):
            v = pure[t]
            if a.scale != 1:
                v = v * a.scale
            if a.pre:
                v = v + a.pre
            if a.div != 1:
                v = v / a.div          # Halide's integer division floors
            return v

        if a.const == 0 and len(a.terms) == 1 and isinstance(a.terms[0], dsl.Var):
            return var(a.terms[0])
        e = hl.Expr(int(a.const))
        for t in a.terms:
            e = e + (var(t) if isinstance(t, dsl.Var) else rmap[t])
        return e

    def _expr(self, e: dsl.Expr, pure: dict, rmap: dict, f: dsl.Func):
        hl = _hl()
        rec = lambda s: self._expr(s, pure, rmap, f)  # noqa: E731
        if isinstance(e, dsl.Const):
            if e.type.is_float:
                return hl.reinterpret(hl.BFloat(16), hl.cast(hl.UInt(16), e.value))
            return hl.cast(self._htype(e.type), e.value)
        if isinstance(e, dsl.Access):
            idx = [self._index(a, pure, rmap) for a in e.idx]
            t = e.target
            if isinstance(t, dsl.Input):
                return _value(t.type, self.params[t.name][idx])
            if isinstance(t, dsl.RepeatEdge):
                if t.name not in self.clamped:
                    self.clamped[t.name] = hl.BoundaryConditions.repeat_edge(self.params[t.name])
                return _value(t.type, self.clamped[t.name][idx])
            if isinstance(t, dsl.Table):
                if id(t) not in self.tables:
                    rows = np.array(t.rows, dtype=np.int64).astype(self._dtype(t.type))
                    self.tables[id(t)] = hl.Buffer(rows, t.name)
                return _value(t.type, self.tables[id(t)][idx[0], idx[1]])
            return self.funcs[t.name][idx]
        if isinstance(e, dsl.Coord):
            return hl.cast(self._htype(dsl.UInt16), (pure[e.var] + e.offset) % e.modulus)
        if isinstance(e, dsl.Lookup):
            t = e.lut
            if id(t) not in self.tables:
                vals = np.array(t.values, dtype=np.int64).astype(self._dtype(t.type))
                self.tables[id(t)] = hl.Buffer(vals, t.name)
            i = hl.clamp(hl.cast(hl.Int(32), rec(e.index)), 0, len(t.values) - 1)
            return _value(t.type, self.tables[id(t)][i])
        if isinstance(e, dsl.Cast):
            return hl.cast(self._htype(e.type), rec(e.a))
        if isinstance(e, dsl.Select):
            return hl.select(rec(e.c), rec(e.a), rec(e.b))
        if isinstance(e, dsl.Unary):
            a = rec(e.a)
            if e.op == "~":
                return ~a
            if e.op == "exp":                  # float32 exp, rounded to bf16
                return hl.cast(hl.BFloat(16), hl.exp(a))
            return hl.cast(self._htype(dsl.UInt16), hl.abs(a))
        if isinstance(e, dsl.BinOp):
            a, b = rec(e.a), rec(e.b)
            op = e.op
            if e.a.type is dsl.Bool:
                if op == "&":
                    return a & b
                if op == "|":
                    return a | b
                if op in ("^", "!="):
                    return a != b
                return a == b
            if op in (">>", "<<"):
                amount = e.b.value
                t = self._htype(e.a.type)
                if amount >= t.bits():         # undefined in Halide; the IR's value
                    if op == ">>" and t.is_int():
                        return a >> (t.bits() - 1)
                    return hl.cast(t, 0)
                return a >> amount if op == ">>" else a << amount
            return {
                "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b,
                "&": lambda: a & b, "|": lambda: a | b, "^": lambda: a ^ b,
                "min": lambda: hl.min(a, b), "max": lambda: hl.max(a, b),
                "<": lambda: a < b, "<=": lambda: a <= b, ">": lambda: a > b,
                ">=": lambda: a >= b, "==": lambda: a == b, "!=": lambda: a != b,
            }[op]()
        raise SimulationError(f"Halide export of Func {f.name}: cannot translate {type(e).__name__}")

    def run(self, images: dict[str, np.ndarray]) -> np.ndarray:
        """Realize the (first) output over its valid domain; images are arrays ``[y, x]``
        (a tensor input: its coordinates reversed, ``[c, y, x]``).

        Returns an array ``(height, width)`` of the output domain (uint16 or int16; a tensor
        output: its coordinates reversed).
        Raises :class:`SimulationError` when an input image is missing or mis-shaped.
        """
        return self.run_outputs(images)[self.pipe.output.name]

    def run_outputs(self, images: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """:meth:`run` for every output: output name -> its array."""
        hl = _hl()
        keep: list[np.ndarray] = []
        for i in self.pipe.inputs:
            if i.name not in images:
                raise SimulationError(f"Halide golden {self.pipe.name}: no image for input {i.name}")
            img = np.asarray(images[i.name])
            if img.shape != tuple(reversed(i.shape)):
                raise SimulationError(f"Halide golden {self.pipe.name}: input {i.name} must be "
                                      f"{tuple(reversed(i.shape))} (coordinates reversed: "
                                      f"height, width for an image), got {img.shape}")
            arr = np.ascontiguousarray(img.astype(np.int64).astype(self._dtype(i.type)))
            keep.append(arr)          # hl.Buffer wraps the array's memory: keep it alive
            self.params[i.name].set(hl.Buffer(arr))
        res = {}
        for name, (out, out_type, b) in self.outs.items():
            buf = hl.Buffer(out_type, [hi - lo for lo, hi in b])
            buf.set_min([lo for lo, _ in b])
            out.realize(buf)
            res[name] = np.array(buf, copy=True)
        del keep
        return res


_CACHE: dict[tuple[int, int | None], tuple[dsl.Pipeline, HalidePipeline]] = {}


def halide_pipeline(pipe: dsl.Pipeline, word_bits: int | None = None) -> HalidePipeline:
    """The (cached) Halide build of a DSL pipeline (integer words ``word_bits`` wide when
    given: :class:`HalidePipeline`)."""
    hit = _CACHE.get((id(pipe), word_bits))
    if hit is None or hit[0] is not pipe:
        hit = (pipe, HalidePipeline(pipe, word_bits))
        _CACHE[(id(pipe), word_bits)] = hit
    return hit[1]


def run_halide(pipe: dsl.Pipeline, images: dict[str, np.ndarray]) -> np.ndarray:
    """Run ``pipe`` in real Halide over the (first) output's valid domain (see
    :class:`HalidePipeline`)."""
    return halide_pipeline(pipe).run(images)


def run_halide_outputs(pipe: dsl.Pipeline, images: dict[str, np.ndarray],
                       word_bits: int | None = None) -> dict[str, np.ndarray]:
    """Run ``pipe`` in real Halide: every output over its own domain, by name (integer
    words ``word_bits`` wide when given: :class:`HalidePipeline`)."""
    return halide_pipeline(pipe, word_bits).run_outputs(images)
