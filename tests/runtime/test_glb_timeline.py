"""mapper.sim.glb.ColumnTimeline: the per-cycle stall and flush of the system top's columns
for a configuration (stall, flush one cycle, drain, restart), exactly, and its refusals."""
from __future__ import annotations

import numpy as np
import pytest

from cgra.errors import SimulationError
from mapper.sim.glb import ColumnTimeline


def test_holding_one_column_cycle_by_cycle():
    tl = ColumnTimeline(3, 20, flush_wait=3)
    assert sorted(tl.inputs) == sorted(f"{k}_X{x:02X}" for x in range(3)
                                       for k in ("stall", "flush"))
    # stalled 5..12, flushed at 13 - 1 - 3 = 9, running again at 13
    assert tl.hold([1], 5, 13) == 9
    assert list(np.flatnonzero(tl.inputs["stall_X01"])) == list(range(5, 13))
    assert list(np.flatnonzero(tl.inputs["flush_X01"])) == [9]
    for x in (0, 2):                    # the other columns: untouched
        assert not tl.inputs[f"stall_X{x:02X}"].any()
        assert not tl.inputs[f"flush_X{x:02X}"].any()


def test_refusals():
    tl = ColumnTimeline(2, 10, flush_wait=2)
    with pytest.raises(SimulationError, match=r"cycles 4\.\.6 of 10 cannot hold a flush and "
                                              r"its 2-cycle drain"):
        tl.hold([0], 4, 6)
    with pytest.raises(SimulationError, match=r"cycles 4\.\.11 of 10"):
        tl.hold([0, 1], 4, 11)
