"""Multi-rate pipelines (issue 14): strided and repeated accesses in the DSL, their IR
windows and domains, the rate-matched schedule, addressed MEM buffers for reads whose
distance varies, and the stream model of the memory-mapped netlist against numpy and real
Halide."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgra.errors import MappingError
from mapper import ir
from mapper.apps import build_app, lower_app
from mapper.frontend.dsl import Func, Input, Pipeline, UInt16, Var
from mapper.halide_export import run_halide
from mapper.interp import run_pipeline
from mapper.memory import DUAL_PORT_SRAM, PHYSICAL_UNIFIED_BUFFER, map_memory
from mapper.streams import run_streams


def _img(w: int, h: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 1 << 16, (h, w)).astype(np.uint16)


def _down_ref(img: np.ndarray) -> np.ndarray:
    h, w = img.shape
    i = img[: h // 2 * 2, : w // 2 * 2].astype(np.int64)
    return (((i[0::2, 0::2] + i[0::2, 1::2] + i[1::2, 0::2] + i[1::2, 1::2]) & 0xFFFF) >> 2
            ).astype(np.uint16)


def test_dsl_rates_windows_and_domains():
    p = lower_app("downsample", 15, 10)
    w = p.stage("down").windows["input"]
    assert w.rate == ((2, 1), (2, 1))
    assert sorted(w.offsets) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert p.domains()["down"] == ir.Box(0, 7, 0, 5)       # floor(15/2) x floor(10/2)
    u = lower_app("upsample", 15, 10)
    assert u.stage("up").windows["input"].rate == ((1, 2), (1, 2))
    assert u.domains()["up"] == ir.Box(0, 30, 0, 20)
    assert u.multi_rate and p.multi_rate and not lower_app("gaussian", 16, 16).multi_rate
    # the JSON round trip keeps the rate
    assert ir.Pipeline.from_dict(p.to_dict()).stage("down").windows["input"].rate == \
        ((2, 1), (2, 1))


@pytest.mark.parametrize("w,h", [(16, 12), (15, 9), (2, 2)])
def test_goldens_agree_with_the_formulas(w, h):
    img = _img(w, h, w * h)
    down = build_app("downsample", w, h)
    assert np.array_equal(run_pipeline(down.lower(), {"input": img}), _down_ref(img))
    assert np.array_equal(run_halide(down, {"input": img}), _down_ref(img))
    up = build_app("upsample", w, h)
    rep = np.repeat(np.repeat(img, 2, 0), 2, 1)
    assert np.array_equal(run_pipeline(up.lower(), {"input": img}), rep)
    assert np.array_equal(run_halide(up, {"input": img}), rep)


def test_schedules_and_mem_counts():
    """downsample: the output runs every 2nd cycle of every 2nd row over a delay line;
    upsample: the input streams every 2nd cycle and idles every other output row; the
    buffer is an addressed one-row circular buffer on one MEM (paper Table 6: upsample 1)."""
    d = map_memory(lower_app("downsample", 64, 64), DUAL_PORT_SRAM)
    assert d.schedule.stages["input"].strides == (1, 64)
    assert d.schedule.stages["down"].strides == (2, 128)
    assert d.schedule.stages["down"].start == 65                 # in(2x+1, 2y+1) arrives
    assert d.counts()["mem"] == 1 and d.counts()["reg"] == 2
    u = map_memory(lower_app("upsample", 64, 64), DUAL_PORT_SRAM)
    s = u.schedule
    assert s.stages["input"].strides == (2, 256) and s.stages["up"].strides == (1, 128)
    assert u.counts()["mem"] == 1 and u.counts()["reg"] == 0
    mem = next(i for i in u.netlist.instances.values() if i.kind == "mem")
    ports = mem.config["ports"]
    assert ports["data_in_0"]["address"] == {"strides": [1, 0], "offset": 0}
    assert ports["data_out_0"]["extents"] == [2, 64, 128]
    assert ports["data_out_0"]["address"]["strides"] == [0, 1, 0]
    assert ports["data_out_0"]["schedule"]["strides"] == [1, 2, 128]
    assert mem.config["segments"][0]["kind"] == "addressed"
    assert mem.config["segments"][0]["words"] == 64              # one input row
    (buf,) = [b for b in s.poly.report() if b["buffer"] == "buf_input"]
    assert buf["capacity"] == 64
    # every read at least read latency + 1 cycles after its write
    assert min(r[1] for r in buf["reads"]) == DUAL_PORT_SRAM["read_latency"] + 1


@settings(max_examples=12, deadline=None)
@given(w=st.integers(2, 20), h=st.integers(2, 9), app=st.sampled_from(
    ["downsample", "upsample", "down_up"]), lat=st.integers(0, 2))
def test_stream_model_matches_numpy(w, h, app, lat):
    if app == "down_up":
        x, y = Var("x"), Var("y")
        inp = Input("input", UInt16, (w, h))
        down = Func("down")
        down[x, y] = (inp[2 * x, 2 * y] + inp[2 * x + 1, 2 * y + 1]) >> 1
        up = Func("up")
        up[x, y] = down[x / 2, y / 2] * 3 + down[x / 2 + 1, y / 2]
        if w < 4:
            with pytest.raises(MappingError, match="stage up has an empty domain"):
                Pipeline(up, "down_up").lower()
            return
        p = Pipeline(up, "down_up").lower()
    else:
        p = lower_app(app, w, h)
    mm = map_memory(p, DUAL_PORT_SRAM, latencies={s.name: lat for s in p.stages})
    img = _img(w, h, w + 100 * h)
    assert np.array_equal(run_streams(mm, {"input": img}), run_pipeline(p, {"input": img}))


def test_errors():
    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (16, 16))
    f = Func("f")
    f[x, y] = inp[2 * x, y] + inp[x, y]
    with pytest.raises(MappingError, match=r"Func f: reads input at two rates \(\(2, 1\), "
                                           r"\(1, 1\)\) and \(\(1, 1\), \(1, 1\)\)"):
        Pipeline(f, "two").lower()
    with pytest.raises(MappingError, match=r"only the pure variable itself may be scaled"):
        _ = (x + 1) / 2
    with pytest.raises(MappingError, match=r"only a positive integer literal"):
        _ = x * 0
    with pytest.raises(MappingError, match=r"multi-rate pipelines run with unroll 1"):
        build_app("downsample", 16, 16, unroll=2).lower()
    # the PUB serves upsample's repeated reads (tests/mapper/test_pub_addressed.py) but its
    # aggregator needs writes in whole 4-word wide words
    with pytest.raises(MappingError, match=r"port data_in_0 has innermost address stride 1 "
                                           r"and extent 31, but MEM pub_512x64 aggregates 4"):
        map_memory(lower_app("laplacian_pyramid", 64, 64), PHYSICAL_UNIFIED_BUFFER)
    big = lower_app("upsample", 4096, 8)
    with pytest.raises(MappingError, match=r"circular buffer of 4096 words .* MEM "
                                           r"dualport_2048x16 holds 2048"):
        map_memory(big, DUAL_PORT_SRAM)
