"""Fixtures of the canal tests: small interconnects built once per session."""
from __future__ import annotations

import pytest
from canal_testutil import PT_CORE, io_west_east

from canal.passes import InterconnectParams, build_uniform


@pytest.fixture(scope="session")
def ic4():
    """4x4 array: IO columns x=0 and x=3, pass-through cores inside; 5 tracks, Imran,
    pipeline registers on every SB_OUT, widths 16 and 1."""
    return build_uniform(InterconnectParams(4, 4), io_west_east(4, 4))


@pytest.fixture(scope="session")
def ic2():
    """2x2 array of pass-through cores, no pipeline registers."""
    return build_uniform(InterconnectParams(2, 2, pipeline_registers=[]),
                         lambda x, y: PT_CORE)
