"""Golden model 1: a numpy interpreter of the IR, vectorised over the image.

Values are carried as ``int64`` arrays holding the unsigned ``width``-bit patterns (widths up to
31 bits), so every op is exact: wrap-around modulo ``2**width`` and signed/unsigned readings
follow :func:`mapper.ir.eval_op` bit for bit.  Images are numpy arrays indexed ``[y, x]``.
"""
from __future__ import annotations

import numpy as np

from cgra.errors import MappingError
from mapper.ir import (BIT, CONST_OPS, FLOAT_OPS, INPUT, LUT_OP, OPS, Box, Kernel, Pipeline,
                       eval_op)

_MAX_WIDTH = 31


def _signed(a: np.ndarray, w: int) -> np.ndarray:
    return a - (((a >> (w - 1)) & 1) << w)


def _np_float(op: str, a: list[np.ndarray]) -> np.ndarray:
    """A BFloat16 op element-wise (:func:`mapper.ir.eval_op` per distinct operand, or pair of
    operands)."""
    if len(a) == 1:
        x = np.asarray(a[0], np.int64) & 0xFFFF
        uniq, inv = np.unique(x, return_inverse=True)
        vals = np.array([eval_op(op, [int(v)], 16) for v in uniq], dtype=np.int64)
        return vals[inv].reshape(x.shape)
    x, y = np.broadcast_arrays(np.asarray(a[0], np.int64), np.asarray(a[1], np.int64))
    pairs = (x.astype(np.int64) << 16) | (y & 0xFFFF)
    uniq, inv = np.unique(pairs, return_inverse=True)
    vals = np.array([eval_op(op, [int(p) >> 16, int(p) & 0xFFFF], 16) for p in uniq],
                    dtype=np.int64)
    return vals[inv].reshape(x.shape)


def np_op(op: str, args: list[np.ndarray], width: int,
          table: tuple[int, ...] | None = None) -> np.ndarray:
    """Apply IR op ``op`` element-wise; ``args`` hold unsigned patterns, ``width`` = operand
    width in bits for comparisons, result width otherwise; ``table``: the entries of a
    lookup (:data:`mapper.ir.LUT_OP`).  Returns an int64 array."""
    if width > _MAX_WIDTH:
        raise MappingError(f"interpreter: {width}-bit values are wider than {_MAX_WIDTH} bits")
    m = (1 << width) - 1
    a = args
    if op == LUT_OP:
        if not table:
            raise MappingError(f"interpreter: {LUT_OP} without its table")
        t = np.asarray(table, dtype=np.int64) & m
        return t[np.minimum(np.asarray(a[0], dtype=np.int64) & m, len(t) - 1)]
    if op in FLOAT_OPS:
        return _np_float(op, a)
    name = op.split(".", 1)[1]
    if op.startswith("corebit."):
        if name == "and":
            return a[0] & a[1]
        if name == "or":
            return a[0] | a[1]
        if name == "xor":
            return a[0] ^ a[1]
        if name == "not":
            return 1 - a[0]
        if name == "mux":
            return np.where(a[2] != 0, a[1], a[0])
    s = lambda i: _signed(a[i], width)  # noqa: E731
    if name == "add":
        return (a[0] + a[1]) & m
    if name == "sub":
        return (a[0] - a[1]) & m
    if name == "mul":
        return (a[0] * a[1]) & m
    if name == "lshr":
        return np.where(a[1] >= width, 0, a[0] >> np.minimum(a[1], width - 1))
    if name == "shl":
        return np.where(a[1] >= width, 0, (a[0] << np.minimum(a[1], width - 1)) & m)
    if name == "ashr":
        return (s(0) >> np.minimum(a[1], width - 1)) & m
    if name == "and":
        return a[0] & a[1]
    if name == "or":
        return a[0] | a[1]
    if name == "xor":
        return a[0] ^ a[1]
    if name == "not":
        return ~a[0] & m
    cmp = {"eq": np.equal, "neq": np.not_equal, "ult": np.less, "ule": np.less_equal,
           "ugt": np.greater, "uge": np.greater_equal}
    if name in cmp:
        return cmp[name](a[0], a[1]).astype(np.int64)
    scmp = {"slt": np.less, "sle": np.less_equal, "sgt": np.greater, "sge": np.greater_equal}
    if name in scmp:
        return scmp[name](s(0), s(1)).astype(np.int64)
    if name == "mux":
        return np.where(a[2] != 0, a[1], a[0])
    if name == "smax":
        return np.where(s(0) >= s(1), a[0], a[1])
    if name == "smin":
        return np.where(s(0) <= s(1), a[0], a[1])
    if name == "umax":
        return np.maximum(a[0], a[1])
    if name == "umin":
        return np.minimum(a[0], a[1])
    if name == "abs":
        return np.abs(s(0)) & m
    if name == "absd":
        return np.abs(_signed((a[0] - a[1]) & m, width)) & m
    if name == "mult_middle":
        return ((s(0) * s(1)) >> (width // 2)) & m
    raise MappingError(f"interpreter: unknown op '{op}'")


def eval_kernel(kernel: Kernel, inputs: dict[str, list[np.ndarray]]) -> dict[str, np.ndarray]:
    """Evaluate ``kernel`` on arrays: ``inputs[name][i]`` is the array of element ``i``.

    All arrays must broadcast together.  Returns output name -> int64 array of unsigned
    patterns.  Raises :class:`MappingError` for a missing input element.
    """
    vals: dict[int, np.ndarray] = {}
    for n in kernel.live_nodes():
        if n.op == INPUT:
            name, idx = n.input
            if name not in inputs or len(inputs[name]) <= idx:
                raise MappingError(f"interpreter: kernel {kernel.name} needs input {name}[{idx}]")
            vals[n.id] = np.asarray(inputs[name][idx], dtype=np.int64) & ((1 << n.width) - 1)
        elif n.op in CONST_OPS:
            vals[n.id] = np.int64(n.value)
        else:
            spec = OPS[n.op]
            w = kernel.nodes[n.args[0]].width if spec.result == BIT and spec.operands[0] != BIT \
                else n.width
            vals[n.id] = np_op(n.op, [vals[a] for a in n.args], w, n.table)
    return {k: np.asarray(vals[v]) for k, v in kernel.outputs.items()}


def run_pipeline(pipeline: Pipeline, images: dict[str, np.ndarray],
                 all_stages: bool = False) -> np.ndarray | dict[str, tuple[Box, np.ndarray]]:
    """Run ``pipeline`` on input images (arrays ``[y, x]`` of shape ``(height, width)`` of each
    input's :attr:`~mapper.ir.PipelineInput.source_shape`; padded inputs are padded here).

    A coordinate-pattern input (:attr:`~mapper.ir.PipelineInput.pattern`) needs no image.
    Returns the (first) output stage over its valid domain (shape ``(y1-y0, x1-x0)``, dtype uint16 or
    int16 by the stage's signedness), or with ``all_stages`` every stage's ``(Box, array)``.
    Raises :class:`MappingError` if an image is missing or has the wrong shape.
    """
    dom = pipeline.domains()
    arrays: dict[str, np.ndarray] = {}
    for name, pin in pipeline.inputs.items():
        if pin.pattern is not None:        # a coordinate pattern: made, not given
            arrays[name] = pin.pattern_image().astype(np.int64)
            continue
        if name not in images:
            raise MappingError(f"pipeline {pipeline.name}: no image given for input '{name}'")
        img = pin.prepare(images[name], f"pipeline {pipeline.name}")  # repeat-edge padding
        arrays[name] = img.astype(np.int64) & ((1 << pin.width_bits) - 1)
    for s in pipeline.stages:
        b = dom[s.name]
        ins: dict[str, list[np.ndarray]] = {}
        for iname, w in s.windows.items():
            pb, pa = dom[w.producer], arrays[w.producer]
            xs, ys = np.arange(b.x0, b.x1), np.arange(b.y0, b.y1)
            ins[iname] = [pa[np.ix_(w.coord(ys, 1, dy) - pb.y0, w.coord(xs, 0, dx) - pb.x0)]
                          for dx, dy in w.offsets]
        out = eval_kernel(s.kernel, ins)["out"]
        arrays[s.name] = np.broadcast_to(out, (b.height, b.width)).astype(np.int64)
    if all_stages:
        return {s.name: (dom[s.name], arrays[s.name]) for s in pipeline.stages}
    return _typed(pipeline, pipeline.output, arrays)


def _typed(pipeline: Pipeline, name: str, arrays: dict[str, np.ndarray]) -> np.ndarray:
    res = arrays[name].astype(np.uint16)
    return res.view(np.int16) if pipeline.stage(name).signed else res


def run_outputs(pipeline: Pipeline, images: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """:func:`run_pipeline` for every output stage (:attr:`mapper.ir.Pipeline.outputs`):
    stage name -> its image over its domain (uint16 or int16)."""
    stages = run_pipeline(pipeline, images, all_stages=True)
    return {o: _typed(pipeline, o, {o: stages[o][1]}) for o in pipeline.outputs}
