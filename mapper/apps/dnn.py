"""DNN layers as tensor programs (:mod:`mapper.frontend.tensor`): the unified-buffer paper's second
application class (Liu et al., TACO 2023, section 6: ResNet, MobileNet, GEMM), in 16-bit
integer arithmetic with a shift-and-saturate requantisation as the AHA flow's integer ResNet.

Types and formulas (Halide semantics; every value a 16-bit word, wrap-around arithmetic):

- activations ``UInt16`` in ``0..255``, laid out ``(x, y, c)`` (numpy ``[c, y, x]``); weights
  ``Int16`` (numpy layout: coordinates reversed);
- ``conv(x, y, k) = sum_{c, j, i} Int16(in(s*x + i, s*y + j, c)) * w(i, j, c, k)`` over the
  ``3 x 3`` window and every input channel (``RDom r``: ``r.x = i``, ``r.y = j``, ``r.z = c``),
  accumulated in ``Int16`` (wrap-around, as the 16-bit PE);
- requantisation ``q(a) = UInt16(clamp(a >> shift, 0, 255))`` (arithmetic shift, then ReLU and
  saturation to 8 bits): the next layer's activation;
- ``resnet_layer``: stride 1; ``resnet_stride2``: stride 2 (``in(2x + i, 2y + j, c)``);
- ``mobilenet_layer``: depthwise ``dw(x, y, c) = q(sum_{j, i} Int16(in(x + i, y + j, c)) *
  wd(i, j, c))`` then pointwise ``pw(x, y, k) = q(sum_c Int16(dw(x, y, c)) * wp(c, k))``;
- ``gemm``: ``C(x, y) = sum_k A(k, y) * B(x, k)`` (``Int16``, wrap-around; ``A`` is M x K
  with ``y`` the row, ``B`` K x N), no requantisation.

Output domains: the valid domain (:func:`mapper.frontend.tensor.domains`): ``W - 2`` x ``H - 2`` for a
3x3 window at stride 1, ``(W - 3) // 2 + 1`` at stride 2.

Schedules (Halide directives on the reduction's update, results unchanged): the paper's
channel blocking, ``block_in`` input channels and ``block_out`` output channels in parallel
(8 and 8 in the paper): ``conv.update().split(r.z, rzo, rzi, block_in).split(k, ko, ki,
block_out).unroll(rzi).unroll(ki)``; the depthwise stage ``block_in`` channels (its 3 x 3
window in time, as the convolutions'); ``gemm``: an 8 x 8 output tile (``split`` + ``unroll`` of ``x`` and
``y``). Blocks must divide the channel counts (:class:`~cgra.errors.MappingError` otherwise);
:mod:`mapper.dnn.plan` reads them as the layer's lanes. On the array, a layer given no block
takes the largest of :func:`block_choices` that fits the design's IO, PE and MEM tiles
(:func:`mapper.dnn.array.map_layer`: GEMM's 8 x 8 tile needs 65 IO tiles, so on the 32-IO
default array it runs 4 x 4).

Inputs (:func:`layer_inputs`): random tensors from a seeded generator (activations
``0..255``, weights ``-8..7``) or, for a layer's first input, a real image
(:func:`mapper.images.load_rgb`: its R, G, B planes as channels, cycled when the layer takes
more than three).
"""
from __future__ import annotations

import inspect
from collections.abc import Callable

import numpy as np

from cgra.errors import ConfigError, MappingError
from mapper.frontend.dsl import (Func, Input, Int16, Pipeline, RDom, UInt16, Var, cast,
                                 clamp)
from mapper.images import load_rgb

#: requantisation shift of the shipped layers (weights -8..7 times 0..255 activations over
#: 9 C_in taps: sums up to ~2^14 for C_in = 16)
SHIFT = 6
#: channels computed in parallel, as in the paper (8 input x 8 output channels)
BLOCK = 8


def requantize(acc, shift: int = SHIFT) -> object:
    """``UInt16(clamp(acc >> shift, 0, 255))`` of an Int16 accumulator (ReLU + saturation)."""
    return cast(UInt16, clamp(acc >> shift, 0, 255))


def _check_block(name: str, what: str, channels: int, block: int) -> None:
    if block < 1 or channels % block:
        raise MappingError(f"{name}: {what} = {channels} channels is not a multiple of the "
                           f"block {block}; choose a block that divides it")


def _conv(name: str, width: int, height: int, c_in: int, c_out: int, stride: int,
          block_in: int, block_out: int, shift: int) -> Pipeline:
    _check_block(name, "c_in", c_in, block_in)
    _check_block(name, "c_out", c_out, block_out)
    x, y, k = Var("x"), Var("y"), Var("k")
    inp = Input("input", UInt16, (width, height, c_in))
    w = Input("weights", Int16, (3, 3, c_in, c_out))
    r = RDom([(0, 3), (0, 3), (0, c_in)], "r")
    conv = Func("conv")
    conv[x, y, k] = cast(Int16, 0)
    conv[x, y, k] += cast(Int16, inp[stride * x + r.x, stride * y + r.y, r.z]) * \
        w[r.x, r.y, r.z, k]
    out = Func(name)
    out[x, y, k] = requantize(conv[x, y, k], shift)
    conv.update().split(r.z, "rzo", "rzi", block_in).split(k, "ko", "ki", block_out) \
        .unroll("rzi").unroll("ki")
    return Pipeline(out, name)


def resnet_layer(width: int = 18, height: int = 18, c_in: int = 16, c_out: int = 16,
                 block_in: int = BLOCK, block_out: int = BLOCK,
                 shift: int = SHIFT) -> Pipeline:
    """ResNet 3x3 convolution, stride 1, ReLU (module docstring); input ``width x height x
    c_in``, output ``(width - 2) x (height - 2) x c_out``."""
    return _conv("resnet_layer", width, height, c_in, c_out, 1, block_in, block_out, shift)


def resnet_stride2(width: int = 17, height: int = 17, c_in: int = 16, c_out: int = 16,
                   block_in: int = BLOCK, block_out: int = BLOCK,
                   shift: int = SHIFT) -> Pipeline:
    """ResNet 3x3 convolution, stride 2, ReLU; output ``((width - 3) // 2 + 1)`` wide."""
    return _conv("resnet_stride2", width, height, c_in, c_out, 2, block_in, block_out, shift)


def mobilenet_layer(width: int = 18, height: int = 18, c_in: int = 16, c_out: int = 16,
                    block_in: int = BLOCK, block_out: int = BLOCK,
                    shift: int = SHIFT) -> Pipeline:
    """MobileNet depthwise-separable block: depthwise 3x3 (``block_in`` channels in parallel)
    then pointwise 1x1 (``block_in`` x ``block_out``), each requantised."""
    _check_block("mobilenet_layer", "c_in", c_in, block_in)
    _check_block("mobilenet_layer", "c_out", c_out, block_out)
    x, y, c, k = Var("x"), Var("y"), Var("c"), Var("k")
    inp = Input("input", UInt16, (width, height, c_in))
    wd = Input("weights_dw", Int16, (3, 3, c_in))
    wp = Input("weights_pw", Int16, (c_in, c_out))
    rd = RDom([(0, 3), (0, 3)], "rd")
    dw_acc = Func("dw_conv")
    dw_acc[x, y, c] = cast(Int16, 0)
    dw_acc[x, y, c] += cast(Int16, inp[x + rd.x, y + rd.y, c]) * wd[rd.x, rd.y, c]
    dw = Func("depthwise")
    dw[x, y, c] = requantize(dw_acc[x, y, c], shift - 2)
    rp = RDom([(0, c_in)], "rp")
    pw_acc = Func("pw_conv")
    pw_acc[x, y, k] = cast(Int16, 0)
    pw_acc[x, y, k] += cast(Int16, dw[x, y, rp.x]) * wp[rp.x, k]
    out = Func("mobilenet_layer")
    out[x, y, k] = requantize(pw_acc[x, y, k], shift - 2)
    dw_acc.update().split(c, "co", "ci", block_in).unroll("ci")
    pw_acc.update().split(rp.x, "rpo", "rpi", block_in).split(k, "ko", "ki", block_out) \
        .unroll("rpi").unroll("ki")
    return Pipeline(out, "mobilenet_layer")


def gemm(m: int = 16, n: int = 16, k: int = 32, tile: int = 8) -> Pipeline:
    """``C = A B`` (``A`` m x k, ``B`` k x n, Int16 wrap-around) computed in ``tile x tile``
    output blocks (module docstring). Inputs ``a`` shape ``(k, m)`` and ``b`` ``(n, k)``
    (numpy ``[m, k]`` and ``[k, n]``); output ``(n, m)`` (numpy ``[m, n]``)."""
    _check_block("gemm", "m", m, tile)
    _check_block("gemm", "n", n, tile)
    x, y = Var("x"), Var("y")
    a = Input("a", Int16, (k, m))
    b = Input("b", Int16, (n, k))
    r = RDom([(0, k)], "r")
    c = Func("gemm")
    c[x, y] = cast(Int16, 0)
    c[x, y] += a[r.x, y] * b[x, r.x]
    c.update().split(x, "xo", "xi", tile).split(y, "yo", "yi", tile).unroll("xi").unroll("yi")
    return Pipeline(c, "gemm")


#: layer name -> builder (keyword sizes, defaults sized for CI)
LAYERS: dict[str, Callable[..., Pipeline]] = {
    "resnet_layer": resnet_layer,
    "resnet_stride2": resnet_stride2,
    "mobilenet_layer": mobilenet_layer,
    "gemm": gemm,
}


#: each layer's default input side (pixels; gemm: m = n), for a command line's --size
DEFAULT_SIZE = {"resnet_layer": 18, "resnet_stride2": 17, "mobilenet_layer": 18, "gemm": 16}


def block_choices(layer: str, size: int | None = None,
                  channels: int | None = None) -> list[int]:
    """The blocks layer ``layer`` can take at input side ``size`` and ``channels`` (``None``:
    the layer's defaults), largest first: the divisors of its blocked extent (c_in = c_out;
    gemm: m = n = ``size``) up to the paper's :data:`BLOCK`. The array flow maps the first
    that fits the design when no block is given (:func:`mapper.dnn.array.map_layer`).
    Raises :class:`MappingError` for an unknown layer."""
    if layer not in LAYERS:
        raise MappingError(f"unknown layer '{layer}'; layers: {', '.join(sorted(LAYERS))}")
    if layer == "gemm":
        extent = size if size is not None else DEFAULT_SIZE["gemm"]
    else:
        extent = channels if channels is not None else \
            inspect.signature(LAYERS[layer]).parameters["c_in"].default
    return [b for b in range(min(BLOCK, extent), 0, -1) if extent % b == 0]


def build_layer(layer: str, size: int | None = None, channels: int | None = None,
                block: int | None = None) -> Pipeline:
    """Layer ``layer`` of :data:`LAYERS` with input side ``size`` (width = height; gemm: m =
    n), ``channels`` (c_in = c_out; gemm: the reduction k) and ``block`` (channels in
    parallel in and out; gemm: the output tile side); ``None``: the layer's default. Raises
    :class:`MappingError` for an unknown layer or a block that does not divide."""
    if layer not in LAYERS:
        raise MappingError(f"unknown layer '{layer}'; layers: {', '.join(sorted(LAYERS))}")
    if layer == "gemm":
        kw = {k: v for k, v in (("m", size), ("n", size), ("k", channels), ("tile", block))
              if v is not None}
    else:
        kw = {k: v for k, v in (("width", size), ("height", size), ("c_in", channels),
                                ("c_out", channels), ("block_in", block),
                                ("block_out", block)) if v is not None}
    return LAYERS[layer](**kw)


def image_tensor(source: str, width: int, height: int, channels: int) -> np.ndarray:
    """A real image as a ``(channels, height, width)`` uint16 activation tensor (values
    0..255): channel ``c`` = colour plane ``c % 3`` (R, G, B) of :func:`mapper.images.load_rgb`
    of ``source`` (a shipped scikit-image sample or a file). Raises :class:`MappingError`."""

    rgb = load_rgb(source, (width, height))
    return np.stack([rgb[:, :, c % 3] for c in range(channels)]).astype(np.uint16)


def takes_image(pipe: Pipeline) -> bool:
    """True when the layer's first input is an unsigned (channels, height, width) activation
    that :func:`layer_inputs` can fill with a real image (not gemm's 2-D operand)."""
    first = pipe.inputs[0] if pipe.inputs else None
    return first is not None and not first.type.signed and len(first.shape) == 3


def layer_inputs(pipe: Pipeline, seed: int = 0, image: str | None = None,
                 strict: bool = False) -> dict[str, np.ndarray]:
    """Inputs of a layer (arrays, coordinates reversed): from ``numpy.random.default_rng(seed)``
    activations ``0..255`` (``UInt16`` inputs) and weights ``-8..7`` (``Int16`` inputs), in the
    order of ``pipe.inputs``; with ``image``, the first input is that real image
    (:func:`image_tensor`). ``strict``: an ``image`` the layer cannot use (:func:`takes_image`
    is false) raises :class:`~cgra.errors.ConfigError` instead of being ignored."""
    if strict and image is not None and not takes_image(pipe):
        first = pipe.inputs[0]
        raise ConfigError(f"--image {image}: layer {pipe.name}'s first input {first.name} is "
                          f"{'signed' if first.type.signed else 'unsigned'} "
                          f"{'x'.join(map(str, reversed(first.shape)))}, not an unsigned "
                          f"(channels, height, width) activation, so the image would be "
                          f"ignored; drop --image (its tensors are random, --seed)")
    rng = np.random.default_rng(seed)
    out = {}
    for idx, i in enumerate(pipe.inputs):
        shape = tuple(reversed(i.shape))
        if idx == 0 and image is not None and not i.type.signed and len(shape) == 3:
            out[i.name] = image_tensor(image, i.shape[0], i.shape[1], i.shape[2])
        elif i.type.signed:
            out[i.name] = rng.integers(-8, 8, shape).astype(np.int16)
        else:
            out[i.name] = rng.integers(0, 256, shape).astype(np.uint16)
    return out
