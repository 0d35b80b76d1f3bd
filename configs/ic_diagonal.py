"""Diagonal tracks on the 8x8 array (configs/small_diagonal.toml, field ``interconnect``).

Track 4 of every bit width runs diagonally: the wire leaving a tile by its EAST side lands
in the tile south-east of it (entering by its WEST side) and the wire leaving by WEST lands
north-west; track 3 runs along the other diagonal (SOUTH -> south-west, NORTH ->
north-east). Tracks 0..2 stay straight, so every tile keeps its nearest neighbours, and a
route on tracks 3/4 covers one column and one row per switch-box hop (an 8-neighbour mesh
made of the track-based interconnect). The tiles are unchanged (same modules); only the
wiring between them differs. The registers stay as configs/small.toml has them: EAST and
NORTH mandatory, so every cycle still passes a register (the bypassable diagonals, WEST ->
north-west and SOUTH -> south-west, both step west).
"""
from canal.custom import add_diagonal_links


def build(graphs, params):
    for g in graphs.values():
        add_diagonal_links(g, "EAST", "SOUTH", tracks=[4])
        add_diagonal_links(g, "WEST", "NORTH", tracks=[4])
        add_diagonal_links(g, "SOUTH", "WEST", tracks=[3])
        add_diagonal_links(g, "NORTH", "EAST", tracks=[3])
    return graphs
