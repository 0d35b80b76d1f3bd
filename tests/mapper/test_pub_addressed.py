"""Addressed buffers (upsampling) on the physical unified buffer (issue 14, paper Table 6
"upsample 1"): the transpose buffer serves each fetched wide word to a run of repeated
reads, so one PUB holds upsample's row buffer."""
from __future__ import annotations

import numpy as np
import pytest

from cgra.errors import MappingError
from lake.config import configure, controller_programs
from lake.golden import simulate
from lake.model import make_stimulus, run_model
from mapper.apps import lower_app
from mapper.frontend.dsl import Func, Input, Pipeline, UInt16, Var
from mapper.interp import run_pipeline
from mapper.mapping.memory import (DUAL_PORT_SRAM, PHYSICAL_UNIFIED_BUFFER, map_memory,
                           wide_read_latency)
from mapper.mapping.streams import run_streams


def test_upsample_64_on_one_pub():
    mm = map_memory(lower_app("upsample", 64, 64), PHYSICAL_UNIFIED_BUFFER)
    assert mm.counts()["mem"] == 1 and mm.counts()["reg"] == 0
    s = mm.schedule
    assert s.stages["input"].strides == (2, 256) and s.stages["up"].strides == (1, 128)
    # the read waits for the aggregator: 3 more writes (every 2 cycles) + commit, fetch,
    # transpose-buffer write (3) + SRAM-side phase room (3) on top of the read latency
    assert wide_read_latency(s, mm.spec) == 1 + 3 * 2 + 3 + 3 == 13
    assert wide_read_latency(s, map_memory(lower_app("upsample", 64, 64),
                                           DUAL_PORT_SRAM).spec) == 1
    (tile,) = mm.tiles
    r = tile.programs["data_out_0"]
    assert r["extents"] == [2, 64, 128]
    assert r["address"] == {"strides": [0, 1, 0], "offset": 0}
    assert r["schedule"] == {"strides": [1, 2, 128], "offset": 13}
    assert tile.segments[0].words == 64
    # Lake accepts the programs: one SRAM fetch per 8 output cycles
    tb = controller_programs("pub_512x64", tile.programs)["tb0"]
    assert tb.extents == (16, 128) and tb.schedule.strides == (8, 128)
    # the dual-port MEM keeps its tighter schedule (one cycle after the write)
    dp = map_memory(lower_app("upsample", 64, 64), DUAL_PORT_SRAM)
    assert dp.tiles[0].programs["data_out_0"]["schedule"]["offset"] == 1
    assert s.completion_cycle() == dp.schedule.completion_cycle() + 12


def test_upsample_pub_streams_known_answer():
    """The mapped PUB tile on Lake's cycle-accurate model and the memory-side stream model
    both give the 2x upsampled image."""
    p = lower_app("upsample", 16, 8)
    mm = map_memory(p, PHYSICAL_UNIFIED_BUFFER)
    img = (np.arange(16 * 8, dtype=np.int64).reshape(8, 16) * 37 + 5) & 0xFFFF
    rep = np.repeat(np.repeat(img, 2, 0), 2, 1)
    assert np.array_equal(run_pipeline(p, {"input": img}), rep)
    assert np.array_equal(run_streams(mm, {"input": img}), rep)
    (tile,) = mm.tiles
    progs = tile.programs
    stream = img.flatten().tolist()
    cfg = configure("pub_512x64", progs)
    stim = make_stimulus("pub_512x64", progs, {"data_in_0": stream}, stall=[1, 1, 0])
    got = run_model("pub_512x64", cfg, stim)["data_out_0"]
    assert got == simulate(progs, {"data_in_0": stream})["data_out_0"]
    first = progs["data_out_0"]["schedule"]["offset"] + 1
    assert [c for c, _ in got][:3] == [first, first + 1, first + 2]
    assert np.array_equal(np.array([v for _, v in got]).reshape(16, 32), rep)


def test_rows_that_are_not_whole_wide_words():
    """The pyramid's 31- and 15-word levels: each row is stored at a pitch of whole wide
    words (32, 16), its last wide word partial (Lake's pitch rule); 7 PUB tiles where the
    dual-port MEM needs 9, and the memory-side stream model equals the interpreter."""
    p = lower_app("laplacian_pyramid", 64, 64)
    pub = map_memory(p, PHYSICAL_UNIFIED_BUFFER)
    assert pub.counts()["mem"] == 7 and map_memory(p, DUAL_PORT_SRAM).counts()["mem"] == 9
    addressed = [t for t in pub.tiles if t.segments[0].addressed]
    writes = sorted((t.programs["data_in_0"]["extents"][0],
                     t.programs["data_in_0"]["address"]["strides"][1]) for t in addressed)
    assert writes == [(15, 0), (30, 0), (31, 0)]        # one-row buffers: rows overwrite
    assert sorted(t.segments[0].words for t in addressed) == [16, 32, 32]
    img = (np.arange(64 * 64, dtype=np.int64).reshape(64, 64) * 7919 + 3) % 251
    assert np.array_equal(run_streams(pub, {"input": img}), run_pipeline(p, {"input": img}))


def test_unaligned_and_strided_reads_and_refusals_name_the_rule():
    # upsampling a 32-wide image shifted by one word (x/2 + 1): runs start inside a wide
    # word and cross into the next (Lake's unaligned runs); one PUB serves both reads
    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (32, 16))
    up = Func("up")
    up[x, y] = inp[x / 2, y / 2] * 3 + inp[x / 2 + 1, y / 2]
    p = Pipeline(up, "up_shift").lower()
    assert map_memory(p, DUAL_PORT_SRAM).counts()["mem"] == 2
    mm = map_memory(p, PHYSICAL_UNIFIED_BUFFER)
    (tile,) = mm.tiles
    assert [tile.programs[f"data_out_{q}"]["address"]["offset"] for q in (0, 1)] == [0, 1]
    img = (np.arange(32 * 16, dtype=np.int64).reshape(16, 32) * 977 + 11) % 4093
    assert np.array_equal(run_streams(mm, {"input": img}), run_pipeline(p, {"input": img}))
    # a strided read (downsample by 2 of a repeated row): each wide word serves 2 reads
    f = Func("f")
    f[x, y] = inp[2 * x, y / 2]
    strided = Pipeline(f, "strided").lower()
    mm = map_memory(strided, PHYSICAL_UNIFIED_BUFFER)
    assert mm.counts()["mem"] == 1
    assert mm.tiles[0].programs["data_out_0"]["address"]["strides"] == [2, 0]
    assert np.array_equal(run_streams(mm, {"input": img}), run_pipeline(strided,
                                                                        {"input": img}))
    # stride 3 is not a transpose-buffer run: refused by Lake's rule, the fix named
    wide = Input("input", UInt16, (48, 16))
    g = Func("g")
    g[x, y] = wide[3 * x, y / 2]
    s3 = Pipeline(g, "strided3").lower()
    assert map_memory(s3, DUAL_PORT_SRAM).counts()["mem"] == 1
    with pytest.raises(MappingError, match=r"MEM pub_512x64: port data_out_0: rule "
                                           r"'vectorization' broken: level 0, the first that "
                                           r"moves the address, has address stride 3.*"
                                           r"dual-port MEM"):
        map_memory(s3, PHYSICAL_UNIFIED_BUFFER)
    # a MEM with the PUB's shape under another name gets the structural check only
    other = dict(PHYSICAL_UNIFIED_BUFFER, name="wide_custom")
    assert map_memory(lower_app("upsample", 32, 32), other).counts()["mem"] == 1


def test_short_delays_become_registers_on_the_pub():
    """The PUB realises a full-rate delay line from 7 cycles on (``min_delay_full_rate`` of
    its collateral: aggregator + transpose buffer); a tap issues its read one cycle early, so
    distances up to 7 become register chains and 8 or more a delay line Lake accepts (the
    dual-port MEM keeps its threshold of 4)."""
    from lake.collateral import collateral

    assert PHYSICAL_UNIFIED_BUFFER["min_delay_full_rate"] == \
        collateral("pub_512x64")["min_delay_full_rate"] == 7
    x, y = Var("x"), Var("y")
    got = {}
    for d in (5, 7, 8, 9):
        inp = Input("input", UInt16, (32, 16))
        f = Func("f")
        f[x, y] = inp[x, y] + inp[x + d, y]
        p = Pipeline(f, "short").lower()
        mm = map_memory(p, PHYSICAL_UNIFIED_BUFFER)
        got[d] = (mm.counts()["mem"], mm.counts()["reg"])
        for tile in mm.tiles:
            configure("pub_512x64", tile.programs)          # Lake's encoder accepts it
        img = (np.arange(32 * 16, dtype=np.int64).reshape(16, 32) * 31 + 7) % 1021
        assert np.array_equal(run_streams(mm, {"input": img}), run_pipeline(p, {"input": img}))
        assert map_memory(p, DUAL_PORT_SRAM).counts()["mem"] == 1
    assert got == {5: (0, 5), 7: (0, 7), 8: (1, 0), 9: (1, 0)}
