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
from mapper.sim.halide import run_halide
from mapper.interp import run_pipeline
from mapper.mapping.memory import DUAL_PORT_SRAM, PHYSICAL_UNIFIED_BUFFER, map_memory
from mapper.mapping.streams import run_streams


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
    with pytest.raises(MappingError, match=r"only the pure variable plus a constant may be "
                                           r"scaled or divided"):
        _ = (x + y) / 2
    with pytest.raises(MappingError, match=r"a floor division cannot be scaled \(Halide "
                                           r"floors first\)"):
        _ = (x / 2) * 2
    with pytest.raises(MappingError, match=r"only a positive integer literal"):
        _ = x * 0
    with pytest.raises(MappingError, match=r"multi-rate pipelines run with unroll 1"):
        build_app("downsample", 16, 16, unroll=2).lower()
    # a row wider than one MEM is banked by columns on a dual-port MEM
    # (tests/mapper/test_circular_rows.py); the PUB does not bank
    big = lower_app("upsample", 4096, 8)
    with pytest.raises(MappingError, match=r"circular buffer of 4096 words or more \(1 row\(s\) "
                                           r"of 4096, 4096 words live\) .* MEM pub_512x64 "
                                           r"holds 2048; use a narrower image"):
        map_memory(big, PHYSICAL_UNIFIED_BUFFER)
    banked = map_memory(big, DUAL_PORT_SRAM)
    assert [s.words for t in banked.tiles for s in t.segments] == [2048, 2048]


def test_floor_division_of_a_shifted_index():
    """Halide's ``(x + 1) / 2``: the offset sits inside the floor (window offsets in units of
    1/b), normalised by the rate's gcd; the bilinear upsample matches a hand-written numpy
    version and Halide, maps to a 2-row buffer read four times on the dual-port MEM with one
    idle cycle per output row, and is refused by name on the PUB."""
    x = Var("x")
    a = (x + 1) / 2
    assert (a.scale, a.div, a.pre, a.const) == (1, 2, 1, 0) and repr(a) == "(x + 1)/2 + 0"
    b = (2 * x + 3) / 4 + 1                 # floor((2x + 3)/4) + 1 = floor((x + 1)/2) + 1
    assert (b.scale, b.div, b.pre, b.const) == (1, 2, 1, 1)
    c = (x / 2 + 1) / 3                     # floor((floor(x/2) + 1)/3) = floor((x + 2)/6)
    assert (c.scale, c.div, c.pre, c.const) == (1, 6, 2, 0)
    for v in range(-7, 20):                 # the identities the normalisation relies on
        assert (2 * v + 3) // 4 + 1 == (v + 1) // 2 + 1 and (v // 2 + 1) // 3 == (v + 2) // 6

    W, H = 20, 9
    p = lower_app("upsample_bilinear", W, H)
    (st_,) = p.stages
    assert st_.windows["input"].offsets == ((0, 0), (1, 0), (0, 1), (1, 1))
    assert st_.windows["input"].rate == ((1, 2), (1, 2))
    assert (p.domains()["up"].width, p.domains()["up"].height) == (2 * W - 1, 2 * H - 1)
    img = np.random.default_rng(5).integers(0, 1 << 16, (H, W))
    want = np.zeros((2 * H - 1, 2 * W - 1), np.int64)
    for yy in range(2 * H - 1):
        for xx in range(2 * W - 1):
            want[yy, xx] = (img[yy // 2, xx // 2] + img[yy // 2, (xx + 1) // 2]
                            + img[(yy + 1) // 2, xx // 2]
                            + img[(yy + 1) // 2, (xx + 1) // 2]) % (1 << 16) >> 2
    got = run_pipeline(p, {"input": img})
    assert np.array_equal(got, want)
    assert np.array_equal(run_halide(build_app("upsample_bilinear", W, H), {"input": img}),
                          want)
    mm = map_memory(p, DUAL_PORT_SRAM)
    # 2 rows live, but the write splits its row counter by R: 3 rows divide H = 9
    assert [s.words for t in mm.tiles for s in t.segments] == [3 * W] * 4
    assert mm.schedule.stages["up"].strides == (1, 2 * W)   # 2W cycles for 2W - 1 pixels
    assert np.array_equal(run_streams(mm, {"input": img}), want)
    # the (x + 1)/2 reads start one x early (in the previous row's idle cycle), so they
    # read 0,0,1,1,...: transpose-buffer runs; two PUB tiles serve the four reads
    pub = map_memory(p, PHYSICAL_UNIFIED_BUFFER)
    assert pub.counts()["mem"] == 2
    for t in pub.tiles:
        for q in (0, 1):
            assert t.programs[f"data_out_{q}"]["address"]["strides"][:2] == [0, 1]
    assert np.array_equal(run_streams(pub, {"input": img}), want)
