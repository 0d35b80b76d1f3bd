"""A broken interconnect (tests only): a loop-back wire closes a combinational cycle.

Tile (2, 3)'s WEST output on track 0 is rewired into the EAST input of tile (3, 3), the
tile it came from the other side of. The WEST registers are bypassable (register_bypass_sides
of configs/small.toml), so SB_OUT(3,3,WEST,0) -> RMUX -> SB_IN(2,3,EAST,0) -> SB_OUT(2,3,WEST,0)
-> RMUX -> SB_IN(3,3,EAST,0) -> SB_OUT(3,3,WEST,0) is a loop without a register: `cgra rtl`
refuses it naming these nodes.
"""
from canal.custom import exported, rewire
from canal.graph import IO, Side, sb_id


def build(graphs, params):
    for w, g in graphs.items():
        rewire(g, exported(g, 2, 3, "WEST", 0), sb_id(w, 3, 3, Side.EAST, 0, IO.SB_IN))
    return graphs
