"""Shared helpers of the canal tests (cores and layouts)."""
from __future__ import annotations

from canal.cores import io_core, passthru_core
from canal.graph import Side
from canal.passes import io_on_edges

IO_CORE = io_core()
PT_CORE = passthru_core()


def io_west_east(width: int, height: int):
    """IO cores on the west and east columns, pass-through cores inside."""
    return io_on_edges(lambda x, y: PT_CORE, IO_CORE, width, height,
                       sides=(Side.WEST, Side.EAST))
