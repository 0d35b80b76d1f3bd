"""The host runtime (AHA §6, RDAI / OpenCL shape) on the functional platform: discovery by
vendor-name-version, buffers in the GLB, a program from `cgra run` artifacts, an in-order
queue with events, typed errors, and the tiled executor with double buffering."""
from __future__ import annotations

import numpy as np
import pytest

import runtime
from cgra.errors import CollateralError
from garnet.glb.confignet import simulate
from runtime import CommandQueue, Context, DeviceError, get_device, platforms
from runtime.tiled import TiledExecutor

W = np.array([[24, 30, 24], [30, 37, 30], [24, 30, 24]], dtype=np.int64)


def gaussian_numpy(img: np.ndarray) -> np.ndarray:
    """The gaussian app's formula (mapper/apps/gaussian.py) in plain numpy."""
    h, w = img.shape
    acc = np.zeros((h - 2, w - 2), dtype=np.int64)
    for j in range(3):
        for i in range(3):
            acc += W[j, i] * img[j:j + h - 2, i:i + w - 2]
    return ((acc & 0xFFFF) >> 8).astype(np.uint16)


def test_discovery_by_triple():
    assert [p.triple for p in platforms()] == [("cgra-gen", "functional", "1"),
                                               ("cgra-gen", "verilator", "1")]
    dev = get_device("cgra-gen", "functional", "1")
    assert dev.capacity == 4 * 2 * 1024 * 4
    with pytest.raises(DeviceError, match="no platform acme/fpga/2; known: cgra-gen/functional/1, cgra-gen/verilator/1"):
        get_device("acme", "fpga", "2")
    with pytest.raises(DeviceError, match="index 3 does not exist"):
        get_device("cgra-gen", "functional", "1", 3)


def test_gaussian_end_to_end(gaussian_run):
    dev = get_device("cgra-gen", "functional", "1")
    ctx = Context(dev)
    prog = ctx.program(gaussian_run)
    assert (prog.app, prog.width, prog.height) == ("gaussian", 64, 64)
    assert len(prog.bitstream) > 100
    img = np.random.default_rng(7).integers(0, 256, size=(64, 64))
    q = CommandQueue(ctx)
    bi, bo = ctx.buffer((64, 64)), ctx.buffer((62, 62))
    assert (bi.base, bo.base) == (0, 4096)
    ew = q.write(bi, img)
    er = q.run(prog, {"input": bi}, bo)
    ed = q.read(bo)
    assert ew.status == er.status == ed.status == "queued"
    ed.wait()
    assert ew.status == er.status == ed.status == "complete"
    assert np.array_equal(ed.result, gaussian_numpy(img))
    assert (ew.cycles, er.cycles, ed.cycles) == (1024, 4096, 961)
    # the bitstream configures the array through the GLB faster than the single port
    p = dev.glb
    serial = simulate(p, prog.bitstream, 8, "serial").cycles
    uni = simulate(p, prog.bitstream, 8, "unicast").cycles
    assert serial == len(prog.bitstream) and uni < serial / 2


def test_typed_errors(gaussian_run, tmp_path):
    dev = get_device("cgra-gen", "functional", "1")
    ctx = Context(dev)
    prog = ctx.program(gaussian_run)
    with pytest.raises(DeviceError, match="does not fit the GLB: 32768 of 32768 words free"):
        ctx.buffer((512, 512))
    small = ctx.buffer((32, 32))
    q = CommandQueue(ctx)
    with pytest.raises(DeviceError, match="mapped for 64x64"):
        q.run(prog, {"input": small}, ctx.buffer((30, 30)))
    with pytest.raises(DeviceError, match=r"inputs \['img'\] given, the app has \['input'\]"):
        q.run(prog, {"img": small}, small)
    with pytest.raises(DeviceError, match="outside the 16-bit"):
        q.write(small, np.full((32, 32), 70000))
    bi, bo = ctx.buffer((64, 64)), ctx.buffer((62, 62))
    ev = q.run(prog, {"input": bi}, bo)           # never written: fails when it executes
    later = q.read(bo)
    with pytest.raises(DeviceError, match="input 'input' was never written"):
        ev.wait()
    assert ev.status == later.status == "error"
    with pytest.raises(CollateralError, match="not a run directory"):
        ctx.program(tmp_path)


@pytest.mark.parametrize("shape", [(512, 512), (300, 517)])
def test_tiled_executor_streams_images_larger_than_the_glb(gaussian_run, shape):
    dev = get_device("cgra-gen", "functional", "1")
    ctx = Context(dev)
    img = np.random.default_rng(shape[1]).integers(0, 256, size=shape)
    assert img.size > dev.capacity or shape == (300, 517)
    res = TiledExecutor(ctx, ctx.program(gaussian_run)).run(img)
    assert np.array_equal(res.output, gaussian_numpy(img))
    assert res.tiles == {(512, 512): 81, (300, 517): 45}[shape]
    # double buffering hides the host transfers behind the runs (1 px/cycle per run)
    assert res.cycles_double_buffered < res.cycles_sequential
    assert res.cycles_double_buffered == res.tiles * 4096 + 1024 + 961


def test_tiled_executor_refuses_a_small_image(gaussian_run):
    ctx = Context(get_device("cgra-gen", "functional", "1"))
    ex = TiledExecutor(ctx, ctx.program(gaussian_run))
    with pytest.raises(DeviceError, match="smaller than the program's 64x64 input"):
        ex.run(np.zeros((40, 100), dtype=np.int64))


def test_platform_plugin_registration():
    class Doubler(runtime.FunctionalPlatform):
        vendor, name, version = "test", "doubler", "0"

        def execute(self, program, images):
            out, cycles = super().execute(program, images)
            return out, 2 * cycles

    rt = runtime.Runtime(extra=(Doubler,))
    assert [p.triple for p in rt.platforms()] == [("cgra-gen", "functional", "1"),
                                                  ("cgra-gen", "verilator", "1"),
                                                  ("test", "doubler", "0")]
    assert rt.get_device("test", "doubler", "0").platform.triple == ("test", "doubler", "0")
    with pytest.raises(DeviceError, match="registered twice"):
        runtime.Runtime(extra=(runtime.FunctionalPlatform,))


def verilator_gaussian(run_dir, seed: int):
    """A random 64x64 image (``seed``) through gaussian's program ``run_dir`` on the
    Verilator platform: ``(device, image, run event, output read back)``."""
    dev = get_device("cgra-gen", "verilator", "1")
    ctx = Context(dev)
    prog = ctx.program(run_dir)
    img = np.random.default_rng(seed).integers(0, 256, size=(64, 64))
    q = CommandQueue(ctx)
    bi, bo = ctx.buffer((64, 64)), ctx.buffer((62, 62))
    q.write(bi, img)
    er = q.run(prog, {"input": bi}, bo)
    return dev, img, er, q.read(bo).wait().result


def test_verilator_platform_runs_the_array_rtl(gaussian_run):
    """The same queue on the generated array RTL (Verilator; the design's harness is the one
    tests/e2e builds for the 8x8, shared through the design directory) gives numpy's image."""
    _dev, img, er, out = verilator_gaussian(gaussian_run, 11)
    assert np.array_equal(out, gaussian_numpy(img))
    # the array streams 4096 pixels; its first output comes after the line buffer's latency
    assert 4096 < er.cycles < 4096 + 64
