"""A 16-bit app on a design of 8-bit words (configs/width8.toml) runs in 8-bit wrap-around
arithmetic: ``mapper.ir.narrow_pipeline`` narrows every data word of the lowered pipeline,
and the two golden models compute at 8 bits -- the numpy interpreter on the narrowed
pipeline, Halide on the DSL pipeline with ``UInt(8)`` / ``Int(8)`` words -- and agree."""
from __future__ import annotations

import numpy as np
import pytest

from cgra.errors import MappingError
from mapper import ir
from mapper.apps import app_images, build_app, load_app_image, lower_app
from mapper.interp import run_outputs
from mapper.sim.halide import run_halide_outputs


def test_narrow_kernel_wraps_at_8_bits():
    (stage,) = lower_app("pointwise", 8, 8).stages
    k = ir.narrow_kernel(stage.kernel, 8)
    assert {n.width for n in k.live_nodes()} == {8} and set(k.input_widths.values()) == {8}
    assert [k.evaluate({"input": [x]})["out"] for x in (0, 100, 127, 128, 255)] == [
        1, 201, 255, 1, 255]                          # (2x + 1) mod 256
    assert ir.narrow_kernel(stage.kernel, 16) is stage.kernel


def test_narrow_kernel_keeps_ir_semantics_of_shifts_and_constants():
    k = ir.Kernel("k")
    k.declare_input("a", 1)
    a = k.input("a")
    k.set_output("o", k.add("coreir.lshr", k.add("coreir.add", a, k.const(0x1F0)),
                            k.const(3)))
    k.set_output("z", k.add("coreir.lshr", a, k.const(8)))
    k.set_output("s", k.add("coreir.ashr", a, k.const(9)))
    n = ir.narrow_kernel(k, 8)
    got = n.evaluate({"a": [0x95]})
    assert got == {"o": ((0x95 + 0xF0) & 0xFF) >> 3, "z": 0, "s": 0xFF}


@pytest.mark.parametrize("app", ["brighten_blur", "unsharp", "color_correct",
                                 "bayer_demosaic", "gaussian"])
def test_goldens_agree_at_8_bits(app):
    p, d = lower_app(app, 32, 32), build_app(app, 32, 32)
    n = ir.narrow_pipeline(p, 8)
    assert all(i.width_bits == 8 for i in n.inputs.values())
    imgs = app_images(d, load_app_image(d, "camera", (32, 32)))
    numpy8, halide8 = run_outputs(n, imgs), run_halide_outputs(d, imgs, 8)
    for o in p.outputs:
        assert halide8[o].dtype in (np.uint8, np.int8)
        assert np.array_equal(numpy8[o].astype(np.int64), halide8[o].astype(np.int64)), o
    if app != "gaussian":              # (the 8-bit sum >> 8 of gaussian is 0 everywhere)
        assert any(numpy8[o].any() for o in p.outputs)
        # 8 bits differ from the app's own 16-bit result
        assert any(not np.array_equal(numpy8[o], run_outputs(p, imgs)[o]) for o in p.outputs)


@pytest.mark.parametrize("app, op", [("gaussian_bf16", "float.mul"),
                                     ("camera_pipeline", "memory.rom2")])
def test_bf16_and_lookup_tables_are_not_narrowed(app, op):
    with pytest.raises(MappingError, match=rf"\({op}\) of 16-bit words cannot run in 8-bit "
                                           r"words; use a design with data_width = 16"):
        ir.narrow_pipeline(lower_app(app, 16, 16), 8)
