"""mapper.sim.glb.ColumnTimeline: the per-cycle values of the array's column ports for a
configuration through the column paths (stall, bundles, flush, restart), exactly, and its
refusals."""
from __future__ import annotations

import numpy as np
import pytest

from cgra.errors import SimulationError
from mapper.sim.glb import ColumnTimeline, column_paths


def test_a_reconfiguration_of_one_column_cycle_by_cycle():
    tl = ColumnTimeline(3, 20, stages=2, flush_wait=3)
    streams = {1: [(0, 0x0000FF0100000001), (2, (1 << 63) | 0x0000010100000005)]}
    # last bundle at 2, last stage written at 3, flush at 4, drain 5..7, restart at 8
    assert (tl.writing(streams), tl.length(streams)) == (4, 8)
    assert tl.configure(5, [1], streams) == 13
    ins = tl.inputs
    assert list(np.flatnonzero(ins["stall_X01"])) == list(range(5, 13))
    assert list(np.flatnonzero(ins["flush_X01"])) == [9]
    assert list(np.flatnonzero(ins["cfg_valid_X01"])) == [5, 7]
    # a bundle with bit 63 set is kept as the same 64 bits in int64
    assert int(ins["cfg_word_X01"][7]) & ((1 << 64) - 1) == (1 << 63) | 0x0000010100000005
    for x in (0, 2):                    # the other columns: untouched
        for p in ("cfg_valid", "cfg_word", "flush", "stall"):
            assert not ins[f"{p}_X{x:02X}"].any()


def test_refusals():
    tl = ColumnTimeline(2, 10, stages=1, flush_wait=1)
    with pytest.raises(SimulationError, match=r"bundles for column\(s\) \[1\] outside the "
                                              r"columns reconfigured \[0\]"):
        tl.configure(0, [0], {1: [(0, 1)]})
    with pytest.raises(SimulationError, match="from cycle 7 ends at cycle 11, after the run.s 10"):
        tl.configure(7, [0, 1], {0: [(0, 1), (1, 2)]})
    assert column_paths(["clk_en", "cfg_word_X00"]) and not column_paths(["clk_en"])
