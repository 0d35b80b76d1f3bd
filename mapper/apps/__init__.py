"""Shipped applications written in the DSL (:mod:`mapper.frontend.dsl`).

``build_app(name, width=64, height=64, unroll=1)`` returns a :class:`dsl.Pipeline`;
``lower_app`` returns the IR :class:`mapper.ir.Pipeline`.  Each app module documents its exact
integer formulas.  Boundary handling: outputs only where the whole stencil is inside the input
(the output shrinks by the stencil footprint minus one per stage), except in ``gaussian_edge``,
which reads its input through ``repeat_edge`` (clamp to edge) and keeps the input size.  ``downsample``,
``upsample``, ``upsample_bilinear`` and ``laplacian_pyramid`` are multi-rate (strided and repeated reads) and run
with ``unroll = 1``.

Images: an app's integer inputs take the pixel values as they are; a ``BFloat16`` input takes
their bf16 encodings (:func:`app_images`; the array has no int -> bf16 op in the IR yet) and a
``BFloat16`` output is produced as encodings (:func:`display_image` decodes them).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cgra.errors import MappingError
from mapper import ir
from mapper.apps import (bayer_demosaic, brighten_bf16, brighten_blur, camera_pipeline,
                         color_correct, demosaic, downsample, gaussian, gaussian_bf16,
                         gaussian_edge, harris, laplacian_pyramid, nlm_bf16, pointwise, rgb_luma,
                         unsharp, upsample, upsample_bilinear)
from mapper.frontend import dsl
from mapper.images import bayer_rggb
from mapper.images import load_image, load_rgb

#: app name -> builder(width, height, unroll) -> dsl.Pipeline
APPS: dict[str, Callable[[int, int, int], dsl.Pipeline]] = {
    "pointwise": pointwise.build,
    "brighten_blur": brighten_blur.build,
    "gaussian": gaussian.build,
    "gaussian_edge": gaussian_edge.build,
    "unsharp": unsharp.build,
    "harris": harris.build,
    "gaussian_bf16": gaussian_bf16.build,
    "brighten_bf16": brighten_bf16.build,
    "nlm_bf16": nlm_bf16.build,
    "downsample": downsample.build,
    "upsample": upsample.build,
    "upsample_bilinear": upsample_bilinear.build,
    "laplacian_pyramid": laplacian_pyramid.build,
    "rgb_luma": rgb_luma.build,
    "demosaic": demosaic.build,
    "color_correct": color_correct.build,
    "camera_pipeline": camera_pipeline.build,
    "bayer_demosaic": bayer_demosaic.build,
}

#: DNN layers (:data:`mapper.apps.dnn.LAYERS`; named here so that :data:`DESIGNS` is data of
#: this module without importing the tensor programs)
LAYER_NAMES: tuple[str, ...] = ("resnet_layer", "resnet_stride2", "mobilenet_layer", "gemm")


@dataclass(frozen=True)
class Fit:
    """The shipped design an app or DNN layer runs on by default: ``design`` names
    ``configs/<design>.toml`` (``build/<design>`` once generated; ``make app`` uses it) and
    ``why`` says what the smaller 8x8 ``small`` lacks, empty when the app fits it."""

    design: str
    why: str = ""


#: app or DNN layer -> the design it fits (:class:`Fit`): every app of :data:`APPS` and
#: layer of :data:`LAYER_NAMES`. ``make app`` picks the same design (the Makefile's
#: ``APP_DESIGN_<app>`` lines; tests/mapper/test_cli_run.py checks they agree) and
#: ``cgra run --list`` prints it.
DESIGNS: dict[str, Fit] = {
    **{a: Fit("small") for a in ("pointwise", "brighten_blur", "gaussian", "gaussian_edge",
                                 "unsharp", "downsample", "upsample", "upsample_bilinear",
                                 "rgb_luma", "demosaic", "color_correct", "camera_pipeline",
                                 "bayer_demosaic")},
    "harris": Fit("default", "more PE tiles than the 8x8 array has"),
    "laplacian_pyramid": Fit("default", "more MEM tiles than the 8x8 array has"),
    **{a: Fit("bf16", "BFloat16 ops: the FP PE of peak/examples/cgra_pe_bf16.py")
       for a in ("gaussian_bf16", "brighten_bf16", "nlm_bf16")},
    **{a: Fit("default", "a DNN layer: more MEM tiles than the 8x8 array has")
       for a in LAYER_NAMES},
}

#: output names that make an app's outputs one colour image (``<app>.png`` and
#: ``compare.png`` are drawn in RGB: :func:`colour_outputs`)
RGB_OUTPUTS: tuple[str, str, str] = ("red", "green", "blue")

#: apps computing in BFloat16: they need a PE with the float ops (``ir_float``, e.g. the FP PE
#: of ``configs/bf16.toml``) and take bf16 encodings as input (:func:`app_images`)
FLOAT_APPS: frozenset[str] = frozenset({"gaussian_bf16", "brighten_bf16", "nlm_bf16"})

#: apps whose BFloat16 outputs may differ from the Halide golden (``exp`` and ``/`` there are
#: correctly rounded, on the array the <= 2 ulp decompositions of :mod:`mapper.frontend.float_math`):
#: app -> the stated bound in bf16 ulps, derived in the app's docstring. The flow compares
#: the RTL with Halide within it (:func:`mapper.sim.run.check_output`), with the numpy
#: interpreter (the IR's semantics) still bit for bit; every other app: bit for bit with both
HALIDE_TOLERANCE_ULP: dict[str, int] = {"nlm_bf16": nlm_bf16.HALIDE_TOLERANCE_ULP}


def build_app(name: str, width: int = 64, height: int = 64, unroll: int = 1) -> dsl.Pipeline:
    """The DSL pipeline of app ``name`` on a ``width`` x ``height`` input image.

    Raises :class:`MappingError` for an unknown app name.
    """
    if name not in APPS:
        from mapper.apps.dnn import LAYERS  # deferred: loads mapper.apps only when called
        if name in LAYERS:
            raise MappingError(f"'{name}' is a DNN layer (a tensor program), not a stencil "
                               f"app: `cgra run {name} --design build/default` compiles it "
                               f"(mapper.dnn.array), `cgra layer {name}` prints its plan")
        raise MappingError(f"unknown app '{name}'; shipped apps: {', '.join(sorted(APPS))}")
    return APPS[name](width, height, unroll)


def lower_app(name: str, width: int = 64, height: int = 64, unroll: int = 1) -> ir.Pipeline:
    """The IR pipeline of app ``name`` (see :func:`build_app`)."""
    return build_app(name, width, height, unroll).lower()


def app_images(pipe: dsl.Pipeline, img: np.ndarray) -> dict[str, np.ndarray]:
    """The image of every input of ``pipe`` made from the pixel array ``img`` by the app's
    input convention (``pipe.image``, :data:`dsl.IMAGE_CONVENTIONS`): ``grey`` takes a grey
    ``[y, x]`` array for every input; ``rgb`` an ``[y, x, c]`` colour array, input ``r``
    plane 0, ``g`` 1, ``b`` 2; ``bayer_rggb`` a colour array, the input gets its RGGB mosaic
    (:func:`mapper.images.bayer_rggb`). Values are the pixels for an integer input, their bf16
    encodings (:func:`dsl.to_bf16_bits`, nearest even; exact for 0..255) for a ``BFloat16``
    input. Raises :class:`MappingError` for an array of the wrong rank."""

    img = np.asarray(img)
    want = 2 if pipe.image == "grey" else 3
    if img.ndim != want:
        raise MappingError(f"app {pipe.name}: its input convention '{pipe.image}' takes a "
                           f"{'grey [y, x]' if want == 2 else 'colour [y, x, c]'} image, got "
                           f"shape {img.shape}")
    planes = {i.name: img if pipe.image == "grey" else
              bayer_rggb(img) if pipe.image == "bayer_rggb" else
              np.ascontiguousarray(img[..., dsl.RGB_PLANES.index(i.name)])
              for i in pipe.inputs}
    return {n: dsl.to_bf16_bits(planes[n]) if i.type.is_float else planes[n]
            for n, i in ((i.name, i) for i in pipe.inputs)}


def load_app_image(pipe: dsl.Pipeline, source: str, size: tuple[int, int]) -> np.ndarray:
    """The test image ``source`` (sample name or file) as the app's convention needs it:
    grey ``[y, x]`` (:func:`mapper.images.load_image`) or colour ``[y, x, c]``
    (:func:`mapper.images.load_rgb`); ``size`` = ``(height, width)``."""

    return load_image(source, size) if pipe.image == "grey" else load_rgb(source, size)


def display_image(pipe: dsl.Pipeline, out: np.ndarray, name: str | None = None) -> np.ndarray:
    """``out`` (output ``name``, default the first) as values to show: the float32 values of
    a ``BFloat16`` output's encodings, else ``out`` itself."""
    f = next((o for o in pipe.outputs if o.name == name), pipe.output)
    return dsl.from_bf16_bits(out) if f.type.is_float else out


def colour_outputs(pipe: dsl.Pipeline) -> tuple[str, str, str] | None:
    """The names of ``pipe``'s red, green and blue outputs (:data:`RGB_OUTPUTS`), in that
    order, when its outputs are exactly those three (color_correct, camera_pipeline,
    bayer_demosaic: one colour image); else ``None`` (a grey output, or outputs that are not
    one picture)."""
    names = [o.name for o in pipe.outputs]
    return RGB_OUTPUTS if sorted(names) == sorted(RGB_OUTPUTS) else None


def fit_of(name: str) -> Fit:
    """The design app or layer ``name`` runs on by default (:data:`DESIGNS`). Raises
    :class:`MappingError` for an unknown name."""
    if name not in DESIGNS:
        raise MappingError(f"unknown app '{name}'; shipped apps and layers: "
                           f"{', '.join(sorted(DESIGNS))}")
    return DESIGNS[name]
