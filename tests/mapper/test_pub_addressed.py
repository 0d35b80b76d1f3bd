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
from mapper.memory import (DUAL_PORT_SRAM, PHYSICAL_UNIFIED_BUFFER, map_memory,
                           wide_read_latency)
from mapper.streams import run_streams


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


def test_pub_refusals_name_the_rule():
    # the aggregator needs writes in whole wide words: a 31-wide level of the pyramid
    with pytest.raises(MappingError, match=r"port data_in_0 has innermost address stride 1 "
                                           r"and extent 31, but MEM pub_512x64 aggregates 4"):
        map_memory(lower_app("laplacian_pyramid", 64, 64), PHYSICAL_UNIFIED_BUFFER)
    # upsampling a 32-wide image cropped to 31 read columns: runs of a wide word would have
    # to end inside the 31-extent level, the transpose-buffer rule refuses it by name
    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (32, 16))
    up = Func("up")
    up[x, y] = inp[x / 2, y / 2] * 3 + inp[x / 2 + 1, y / 2]
    p = Pipeline(up, "up_shift").lower()
    assert map_memory(p, DUAL_PORT_SRAM).counts()["mem"] == 2
    with pytest.raises(MappingError, match=r"MEM pub_512x64: port data_out_0: rule "
                                           r"'vectorization' broken: the reads of levels "
                                           r"0\.\.1 \(extents \[2, 31\].*dual-port MEM"):
        map_memory(p, PHYSICAL_UNIFIED_BUFFER)
    # a MEM with the PUB's shape under another name gets the structural check only
    other = dict(PHYSICAL_UNIFIED_BUFFER, name="wide_custom")
    assert map_memory(lower_app("upsample", 32, 32), other).counts()["mem"] == 1
