"""Project-wide pytest fixtures.

magma keeps global state (the circuit registry used for name uniquification). All RTL
generation in a test process goes through generators that cache each distinct module by
its parameters, so a module is defined once per process; ``magma_out`` gives each test
session one scratch directory for Verilog and Verilator builds.
"""
from __future__ import annotations


import pytest


@pytest.fixture(scope="session")
def magma_out(tmp_path_factory):
    """A per-session (per xdist worker) directory for generated Verilog and Verilator builds."""
    return tmp_path_factory.mktemp("rtl")


#: the "odd" array of the fast-path tests: wilton, 4 tracks, IO north and south, MEM every
#: 3rd column, register bypass on two sides, connection boxes on three
ODD_ARRAY = {"width": 6, "height": 5, "tracks": 4, "topology": "wilton", "mem_ratio": 3,
             "io_sides": ["NORTH", "SOUTH"], "register_bypass_sides": ["SOUTH", "WEST"],
             "cb_sides": ["NORTH", "EAST", "WEST"]}


@pytest.fixture
def odd_interconnect():
    """A fresh :class:`canal.Interconnect` of :data:`ODD_ARRAY` (the stamped and templated
    writers are checked against their per-node references on it)."""
    from garnet.array import build_interconnect
    from garnet.params import GarnetParams

    return build_interconnect(GarnetParams(**ODD_ARRAY))


@pytest.fixture
def extra_sb_edge():
    """``add(g, dst)``: give the SB_OUT ``dst`` (``SB:<w>:x:y:SIDE:t:OUT``) one more fan-in,
    the first SB_IN of its tile (sides W, E, S; every track) it does not read yet, delay
    10 ps: an irregular tile. Returns the new source's id."""
    def add(g, dst: str) -> str:
        w, x, y = dst.split(":")[1:4]
        tracks = g.params["tracks"]
        src = next(f"SB:{w}:{x}:{y}:{s}:{t}:IN" for s in ("WEST", "EAST", "SOUTH")
                   for t in range(tracks) if f"SB:{w}:{x}:{y}:{s}:{t}:IN" not in g.fanin[dst])
        g.add_edge(src, dst, 10.0)
        return src
    return add
