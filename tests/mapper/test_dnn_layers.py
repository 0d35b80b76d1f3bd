"""DNN layers as tensor programs (mapper/apps/dnn.py, mapper/frontend/tensor.py): the numpy evaluation
against real Halide and against the layer formulas written directly in numpy, on seeded
random tensors and on a real image; domains, MAC counts and the refusals."""
from __future__ import annotations

import numpy as np
import pytest

from cgra.errors import MappingError, SimulationError
from mapper.frontend import tensor
from mapper.apps import dnn
from mapper.frontend.dsl import Func, Input, Int16, Pipeline, RDom, UInt16, Var, cast
from mapper.sim.halide import run_halide_outputs


def _wrap16(a: np.ndarray) -> np.ndarray:
    return ((a + 32768) % 65536 - 32768).astype(np.int64)


def _requant(acc: np.ndarray, shift: int) -> np.ndarray:
    return np.clip(_wrap16(acc) >> shift, 0, 255).astype(np.uint16)


def _conv_ref(inp: np.ndarray, w: np.ndarray, stride: int, shift: int) -> np.ndarray:
    """The conv + requantisation formula of mapper/apps/dnn.py: inp [c, y, x], w [k, c, j, i]."""
    c_in, h, wd = inp.shape
    ho, wo = (h - 3) // stride + 1, (wd - 3) // stride + 1
    acc = np.zeros((w.shape[0], ho, wo), np.int64)
    for j in range(3):
        for i in range(3):
            win = inp[:, j:j + stride * (ho - 1) + 1:stride,
                      i:i + stride * (wo - 1) + 1:stride].astype(np.int64)
            acc += np.einsum("kc,cyx->kyx", w[:, :, j, i].astype(np.int64), win)
    return _requant(acc, shift)


def _check(pipe: Pipeline, ins: dict, ref: np.ndarray) -> None:
    ours = tensor.evaluate(pipe, ins)[pipe.output.name]
    hal = run_halide_outputs(pipe, ins)[pipe.output.name]
    assert ours.shape == ref.shape == hal.shape
    assert ours.dtype == hal.dtype
    np.testing.assert_array_equal(ours, ref)
    np.testing.assert_array_equal(hal, ref)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_resnet_layer_random(seed):
    pipe = dnn.resnet_layer(10, 9, 16, 16)
    ins = dnn.layer_inputs(pipe, seed)
    ref = _conv_ref(ins["input"], ins["weights"], 1, dnn.SHIFT)
    assert ref.shape == (16, 7, 8)
    assert 0 < np.count_nonzero(ref) < ref.size     # ReLU clips some, not all
    _check(pipe, ins, ref)


def test_resnet_layer_real_image_first_layer():
    """A first layer: the astronaut's R, G, B planes as the 3 input channels."""
    pipe = dnn.resnet_layer(12, 10, c_in=3, c_out=8, block_in=1)
    ins = dnn.layer_inputs(pipe, 7, image="astronaut")
    assert ins["input"].shape == (3, 10, 12)
    assert not np.array_equal(ins["input"][0], ins["input"][2])   # real colour planes
    _check(pipe, ins, _conv_ref(ins["input"], ins["weights"], 1, dnn.SHIFT))


@pytest.mark.parametrize("size", [(17, 17), (10, 12)])
def test_resnet_stride2(size):
    w, h = size
    pipe = dnn.resnet_stride2(w, h, 8, 16)
    ins = dnn.layer_inputs(pipe, 3)
    ref = _conv_ref(ins["input"], ins["weights"], 2, dnn.SHIFT)
    assert ref.shape == (16, (h - 3) // 2 + 1, (w - 3) // 2 + 1)
    _check(pipe, ins, ref)
    assert tensor.domains(pipe)["resnet_stride2"] == ((0, (w - 3) // 2 + 1),
                                                      (0, (h - 3) // 2 + 1), (0, 16))


def test_mobilenet_layer():
    pipe = dnn.mobilenet_layer(9, 8, 16, 8)
    ins = dnn.layer_inputs(pipe, 4)
    x = ins["input"].astype(np.int64)
    wd, wp = ins["weights_dw"].astype(np.int64), ins["weights_pw"].astype(np.int64)
    acc = np.zeros((16, 6, 7), np.int64)
    for j in range(3):
        for i in range(3):
            acc += wd[:, j, i, None, None] * x[:, j:j + 6, i:i + 7]
    dw = _requant(acc, dnn.SHIFT - 2).astype(np.int64)
    ref = _requant(np.einsum("kc,cyx->kyx", wp, dw), dnn.SHIFT - 2)
    _check(pipe, ins, ref)
    got = tensor.evaluate(pipe, ins, all_funcs=True)
    np.testing.assert_array_equal(got["depthwise"], dw)


def test_gemm():
    pipe = dnn.gemm(16, 24, 40)
    ins = dnn.layer_inputs(pipe, 5)
    a, b = ins["a"].astype(np.int64), ins["b"].astype(np.int64)
    assert a.shape == (16, 40) and b.shape == (40, 24)
    ref = _wrap16(a @ b).astype(np.int16)
    _check(pipe, ins, ref)


def test_gemm_wraps_like_the_16_bit_pe():
    """Products and sums wrap modulo 2^16 (Halide's Int(16), the PE's adder)."""
    pipe = dnn.gemm(8, 8, 8)
    ins = {"a": np.full((8, 8), 300, np.int16), "b": np.full((8, 8), 200, np.int16)}
    got = tensor.evaluate(pipe, ins)["gemm"]
    assert got[0, 0] == _wrap16(np.array(8 * 300 * 200))      # 480000 mod 2^16, signed
    assert got[0, 0] == 480000 - 7 * 65536 == 21248
    np.testing.assert_array_equal(run_halide_outputs(pipe, ins)["gemm"], got)


def test_macs_and_blocking():
    pipe = dnn.resnet_layer(18, 18, 16, 16)
    assert tensor.macs(pipe) == {"conv": 16 * 16 * 16 * 9 * 16, "resnet_layer": 0}
    dirs = {f.name: [(d.definition, d.kind, d.var, d.factor) for d in f.directives]
            for f in pipe.funcs}
    assert dirs["conv"] == [("update", "split", "r.z", 8), ("update", "split", "k", 8),
                            ("update", "unroll", "rzi", 0), ("update", "unroll", "ki", 0)]
    assert dirs["resnet_layer"] == []


def test_stencil_flow_refuses_tensor_programs():
    pipe = dnn.resnet_layer(10, 10, 8, 8)
    assert not pipe.is_stencil()
    with pytest.raises(MappingError, match=r"Input weights has 4 coordinates \(3, 3, 8, 8\)"):
        pipe.lower()
    g = dnn.gemm(8, 8, 8)
    assert not g.is_stencil()
    with pytest.raises(MappingError, match="access to a dimension 0 must be x"):
        g.lower()


def test_bad_blocking_and_directives():
    with pytest.raises(MappingError, match="c_in = 12 channels is not a multiple of the block 8"):
        dnn.resnet_layer(10, 10, 12, 16)
    x, y, c = Var("x"), Var("y"), Var("c")
    inp = Input("i", UInt16, (4, 4, 6))
    r = RDom([(0, 6)], "r")
    f = Func("f")
    f[x, y, c] = cast(UInt16, 0)
    f[x, y, c] += inp[x, y, r.x]
    with pytest.raises(MappingError, match="RDom extent 6 is not a multiple of 4"):
        f.update().split(r.x, "ro", "ri", 4)
    with pytest.raises(MappingError, match="names no variable"):
        f.unroll("q")
    with pytest.raises(MappingError, match="needs two new names"):
        f.split(x, "x", "xi", 2)
    with pytest.raises(MappingError, match="update definition"):
        Func("g").update()


def test_domain_errors():
    x, y, c = Var("x"), Var("y"), Var("c")
    inp = Input("i", UInt16, (4, 4, 2))
    f = Func("f")
    f[x, y, c] = inp[x, y, 3]                       # channel 3 of a 2-channel input
    with pytest.raises(MappingError, match=r"reads i coordinate 2 at \[3, 3\], outside"):
        tensor.domains(Pipeline(f, "p"))
    g = Func("g")
    g[x, y, c] = inp[x, y, 0]                        # nothing bounds c
    with pytest.raises(MappingError, match="no read bounds its Var c"):
        tensor.domains(Pipeline(g, "p"))
    h = Func("h")
    with pytest.raises(MappingError, match="accesses must have 3 indices"):
        h[x, y] = inp[x, y]


def test_input_errors():
    pipe = dnn.gemm(8, 8, 8)
    ins = dnn.layer_inputs(pipe, 0)
    with pytest.raises(SimulationError, match=r"input b must have shape \(8, 8\)"):
        tensor.evaluate(pipe, {**ins, "b": ins["b"][:4]})
    with pytest.raises(SimulationError, match="no array for input a"):
        tensor.evaluate(pipe, {"b": ins["b"]})
    with pytest.raises(SimulationError, match=r"outside Int16"):
        tensor.evaluate(pipe, {**ins, "a": np.full((8, 8), 40000, np.int64)})
    with pytest.raises(MappingError, match="shape must be"):
        Input("t", Int16, (2, 2, 2, 2, 2))
    with pytest.raises(MappingError, match="RDom r: dimension 2 of a 2-D RDom"):
        _ = RDom([(0, 3), (0, 3)], "r").z
