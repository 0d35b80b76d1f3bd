"""Coordinate patterns (``x % m``, Halide's ``select`` on coordinate parity): the DSL value,
the IR pattern input (numpy == Halide), the pattern ROM that memory mapping makes of it (one
row or column in a MEM loaded with the bitstream, read at each reader's time: no delay line)
and the errors."""
from __future__ import annotations

import numpy as np
import pytest

from cgra.errors import MappingError
from mapper import interp, ir
from mapper.apps import app_images, build_app, load_app_image
from mapper.frontend.dsl import (Func, Input, Pipeline, RDom, UInt16, Var, pattern_name,
                                 repeat_edge, select)
from mapper.sim.halide import run_halide, run_halide_outputs
from mapper.mapping.memory import (DUAL_PORT_SRAM, PHYSICAL_UNIFIED_BUFFER, MemSpec, map_memory,
                           pattern_rom)
from mapper.mapping.streams import run_streams, run_streams_outputs


def _phases(w: int = 20, h: int = 12, unroll: int = 1) -> Pipeline:
    x, y = Var("x"), Var("y")
    m = Input("m", UInt16, (w, h))
    f = Func("f")
    f[x, y] = select(x % 2 == y % 2, m[x, y] + m[x + 1, y], m[x, y + 1]) + (x + 4) % 3 * 100
    return Pipeline(f, "phases", unroll)


def test_patterns_are_pipeline_inputs_made_not_given():
    p = _phases().lower()
    pats = {k: v.pattern for k, v in p.inputs.items() if v.pattern}
    assert pats == {pattern_name("x", 2, 0): ("x", 2, 0), pattern_name("y", 2, 0): ("y", 2, 0),
                    pattern_name("x", 3, 1): ("x", 3, 1)}            # (x + 4) % 3 = (x + 1) % 3
    img = p.inputs[pattern_name("x", 3, 1)].pattern_image()
    assert img.shape == (12, 20) and img[5, :5].tolist() == [1, 2, 0, 1, 2]
    assert p.inputs[pattern_name("y", 2, 0)].pattern_image()[:4, 7].tolist() == [0, 1, 0, 1]
    back = ir.Pipeline.from_dict(p.to_dict())
    assert {k: v.pattern for k, v in back.inputs.items()} == {k: v.pattern
                                                             for k, v in p.inputs.items()}


@pytest.mark.parametrize("unroll", [1, 2, 3])
def test_numpy_halide_and_stream_model_agree(unroll):
    dsl_p = _phases(21, 10, unroll)
    p = dsl_p.lower()
    img = np.random.default_rng(3).integers(0, 256, (10, 21)).astype(np.uint16)
    got = interp.run_pipeline(p, {"m": img})
    assert np.array_equal(got, run_halide(dsl_p, {"m": img}))
    xs, ys = np.meshgrid(np.arange(20), np.arange(9))
    a = img.astype(np.int64)
    want = np.where(xs % 2 == ys % 2, a[:9, :20] + a[:9, 1:21], a[1:10, :20]) + \
        (xs + 4) % 3 * 100
    assert np.array_equal(got.astype(np.int64), want)
    mm = map_memory(p, DUAL_PORT_SRAM)
    assert np.array_equal(run_streams(mm, {"m": img}), got)
    roms = {n: i.config for n, i in mm.netlist.instances.items() if "rom" in i.config}
    # one ROM per pattern and lane, read at the reader's time (no delay line behind it)
    assert len(roms) == 3 * unroll
    assert not [n for n in mm.netlist.instances if n.startswith("io_in___coord")]
    for name, cfg in roms.items():
        prog = cfg["ports"]["data_out_0"]
        lane = int(name.split("_l")[1].split("_")[0])
        if cfg["pattern"][0] == "x":
            assert prog["address"] == {"strides": [unroll, 0], "offset": lane}
        else:
            assert prog["address"] == {"strides": [0, 1], "offset": 0}
        assert cfg["latency"] == MemSpec.from_dict(DUAL_PORT_SRAM).read_latency == 1


def test_pattern_rom_contents_and_schedule():
    dp, pub = MemSpec.from_dict(DUAL_PORT_SRAM), MemSpec.from_dict(PHYSICAL_UNIFIED_BUFFER)
    pin = ir.PipelineInput("p", (10, 6), pattern=("x", 4, 3))
    stream = {"dimensionality": 2, "extents": [5, 6],
              "schedule": {"strides": [1, 5], "offset": 0}}
    words, prog = pattern_rom(pin, 1, 2, stream, dp, distance=7)
    assert words == [(i + 3) % 4 for i in range(10)]
    assert prog == {"dimensionality": 2, "extents": [5, 6],
                    "address": {"strides": [2, 0], "offset": 1},
                    "schedule": {"strides": [1, 5], "offset": 7}}
    col, prog = pattern_rom(ir.PipelineInput("q", (10, 6), pattern=("y", 2, 1)), 0, 1,
                            stream, dp)
    assert col == [1, 0, 1, 0, 1, 0] and prog["address"]["strides"] == [0, 1]
    with pytest.raises(MappingError, match="MEM pub_512x64 fetches 4-word wide words and has "
                                           "no config-bus memory; use a dual-port preset"):
        pattern_rom(pin, 0, 1, stream, pub)
    with pytest.raises(MappingError, match="a 4000-word row does not fit the 2048 words"):
        pattern_rom(pin, 0, 1, {**stream, "extents": [4000, 6]}, dp)


def test_bayer_demosaic_recovers_flat_colours_and_matches_halide():
    p = build_app("bayer_demosaic", 32, 24)
    ims = app_images(p, load_app_image(p, "astronaut", (24, 32)))
    got = interp.run_outputs(p.lower(), ims)
    want = run_halide_outputs(p, ims)
    assert list(got) == ["red", "green", "blue"]
    assert all(np.array_equal(got[k], want[k]) and got[k].shape == (22, 30) for k in got)
    assert all(np.array_equal(v, got[k]) for k, v in
               run_streams_outputs(map_memory(p.lower(), DUAL_PORT_SRAM), ims).items())
    # a flat colour survives bilinear demosaicking exactly
    flat = np.zeros((24, 32, 3), np.uint16)
    flat[..., 0], flat[..., 1], flat[..., 2] = 200, 120, 40
    out = interp.run_outputs(p.lower(), app_images(p, flat))
    assert [int(np.unique(out[k])[0]) for k in ("red", "green", "blue")] == [200, 120, 40]
    assert all(len(np.unique(out[k])) == 1 for k in out)


def test_coordinate_errors():
    x, y = Var("x"), Var("y")
    r = RDom([(0, 3)])
    m = Input("m", UInt16, (16, 8))
    with pytest.raises(MappingError, match=r"\(x \+ y \+ 0\) % 2: only a pure variable plus "
                                           r"a constant"):
        _ = (x + y) % 2
    with pytest.raises(MappingError, match="the modulus must be a positive integer literal"):
        _ = x % 0
    with pytest.raises(MappingError, match="only a pure variable plus a constant"):
        _ = r.x % 2
    z = Var("z")
    f = Func("f")
    f[x, y] = m[x, y] + z % 2
    with pytest.raises(MappingError, match="Func f: \\(z \\+ 0\\) % 2 uses Var z, which is not "
                                           "one of its pure variables"):
        Pipeline(f, "bad").lower()
    g = Func("g")
    g[x, y] = repeat_edge(m)[x - 1, y] + x % 2
    with pytest.raises(MappingError, match="needs an Input to take its size from and no "
                                           "repeat_edge"):
        Pipeline(g, "clamped").lower()
    h = Func("h")
    h[x, y] = m[2 * x, y] + x % 2
    with pytest.raises(MappingError, match="needs a single-rate pipeline without repeat_edge"):
        Pipeline(h, "strided").lower()
