"""Broken interconnect build functions (tests only): one raises, one returns a list, one
wires an SB_IN from inside its own tile."""
from canal.graph import IO, Side, sb_id


def build_raises(graphs, params):
    tracks = params.tracks
    raise ValueError(f"no diagonal for {tracks} tracks")


def build_list(graphs, params):
    return list(graphs.values())


def build_inside(graphs, params):
    for w, g in graphs.items():
        dst = sb_id(w, 2, 2, Side.EAST, 0, IO.SB_IN)
        g.fanin[dst] = [sb_id(w, 2, 2, Side.WEST, 0, IO.SB_OUT)]
    return graphs
