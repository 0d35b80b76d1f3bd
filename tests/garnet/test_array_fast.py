"""The fast paths of the per-tile stages (issue 18) against their general paths:
:func:`canal.rtl.tile_shapes` (shared shapes) vs :func:`canal.rtl.tile_shape` per tile,
and the index-range fast path of :class:`garnet.array.FaninGraph` vs per-node lookup."""
from __future__ import annotations

import pytest

TOY = "peak.examples.toy_pe:ToyPE"


def _odd(**kw):
    """A 6x5 array with the settings of the 'odd' reference config (wilton, 4 tracks, IO
    north and south, connection boxes on three sides, MEM every 3rd column)."""
    from garnet.array import build_interconnect
    from garnet.params import GarnetParams

    p = GarnetParams(**{"name": "odd", "width": 6, "height": 5, "tracks": 4,
                        "topology": "wilton", "pe": TOY, "mem_ratio": 3,
                        "io_sides": ["NORTH", "SOUTH"], "cb_sides": ["NORTH", "EAST", "WEST"],
                        "register_bypass_sides": ["SOUTH", "WEST"], **kw})
    return p, build_interconnect(p)


def _rebuilt(ic):
    """A fresh Interconnect over ``ic``'s (edited) graphs: no cached per-tile views."""
    from canal.interconnect import Interconnect

    return Interconnect(ic.graphs, ic.cores, ic.timing)


def test_tile_shapes_equal_per_tile_shapes_and_are_shared():
    from canal.rtl import tile_shape
    from garnet.array import tile_shapes

    _, ic = _odd()
    shapes = tile_shapes(ic)
    assert list(shapes) == list(ic.tiles)
    for (x, y), s in shapes.items():
        assert s == tile_shape(ic, x, y)
    names = {s.module_name for s in shapes.values()}
    assert len(names) >= 3                                  # IO, PE, MEM at least
    assert len({id(s) for s in shapes.values()}) == len(names)   # one object per module


def test_tile_shapes_follow_a_non_uniform_graph():
    """One tile loses a connection-box edge: its shape differs from its twins', the fast
    path still agrees with the per-tile path everywhere."""
    from canal.rtl import tile_shape
    from garnet.array import tile_shapes

    _, ic = _odd()
    g = ic.graphs[16]
    dst = next(nid for nid, n in g.nodes.items()
               if (n.x, n.y) == (2, 2) and nid.startswith("PORT:") and len(g.fanin[nid]) > 1)
    g.fanin[dst].pop(0)
    ic = _rebuilt(ic)
    shapes = tile_shapes(ic)
    for (x, y), s in shapes.items():
        assert s == tile_shape(ic, x, y)
    twin = next(xy for xy in ic.tiles if xy != (2, 2) and ic.tiles[xy].core ==
                ic.tiles[(2, 2)].core and 0 < xy[1] < 4)
    assert shapes[(2, 2)] != shapes[twin]
    assert shapes[(2, 2)].module_name != shapes[twin].module_name


@pytest.mark.parametrize("bad", ["cross", "sb_in_local"])
def test_tile_shapes_raise_the_per_tile_error(bad):
    from canal.rtl import tile_shape
    from cgra.errors import SpecError
    from garnet.array import tile_shapes

    _, ic = _odd()
    g = ic.graphs[16]
    if bad == "cross":      # an edge from another tile into a switch-box output
        dst = next(nid for nid, n in g.nodes.items() if (n.x, n.y) == (3, 2)
                   and nid.endswith(":OUT"))
        src = next(nid for nid, n in g.nodes.items() if (n.x, n.y) == (1, 1)
                   and nid.endswith(":OUT"))
    else:                   # an SB_IN fed from its own tile
        dst = next(nid for nid, n in g.nodes.items() if (n.x, n.y) == (3, 2)
                   and nid.endswith(":IN"))
        src = next(nid for nid, n in g.nodes.items() if (n.x, n.y) == (3, 2)
                   and nid.startswith("PORT:"))
        g.fanin[dst].clear()
    g.fanin[dst].insert(0, src)
    ic = _rebuilt(ic)
    with pytest.raises(SpecError) as slow:
        for xy in ic.tiles:
            tile_shape(ic, *xy)
    with pytest.raises(SpecError) as fast:
        tile_shapes(ic)
    assert str(fast.value) == str(slow.value) and src in str(fast.value)


def test_fanin_graph_range_fast_path_matches_lookup():
    """connectivity() through the index-range fast path (dg built from the graphs) and
    through per-node lookup (dg built from a copy, so the graph is not one of its spans)
    give equal reports, also for a disconnected graph."""
    import numpy as np

    from garnet.array import FaninGraph, _strong_components, connectivity

    for kw in ({}, {"cb_sides": ["NORTH"]}):
        _, ic = _odd(**kw)
        dg = FaninGraph(ic.graphs)
        other = FaninGraph({w: g.copy() for w, g in ic.graphs.items()})
        assert dg.ids == other.ids and dg.index == other.index
        assert np.array_equal(dg.src, other.src) and np.array_equal(dg.dst, other.dst)
        comps = _strong_components(dg.matrix())
        for g in ic.graphs.values():
            assert np.array_equal(dg.node_range(g), other.node_range(g))
            fast = connectivity(g, dg, comps)
            assert fast == connectivity(g, other, comps)
            assert fast == connectivity(g)
        if kw:
            assert not fast.ok


@pytest.mark.parametrize("src_kind", ["sb_out", "port"])
def test_array_netlist_refuses_a_source_that_is_not_exported(src_kind):
    """The field-based check of the SB_IN wiring agrees with exported_node(): an SB_OUT
    whose track has a pipeline-register RMUX, or a core port, cannot feed a neighbour."""
    from canal.rtl import array_netlist, exported_node
    from cgra.errors import SpecError

    _, ic = _odd()
    g = ic.graphs[1]
    dst = next(nid for nid, n in g.nodes.items() if nid.endswith(":IN") and g.fanin[nid])
    rm = g.nodes[g.fanin[dst][0]]
    assert rm.kind.value == "RMUX" and exported_node(g, rm.x, rm.y, rm.side, rm.track) == rm.id
    if src_kind == "sb_out":
        src = f"SB:1:{rm.x}:{rm.y}:{rm.side.name}:{rm.track}:OUT"
    else:
        src = next(nid for nid, n in g.nodes.items() if nid.startswith("PORT:")
                   and (n.x, n.y) == (rm.x, rm.y))
    g.fanin[dst][0] = src
    sn = g.nodes[src]
    with pytest.raises(SpecError) as exc:
        array_netlist(_rebuilt(ic))
    assert str(exc.value) == (f"edge {src} -> {dst}: the source is not the node exported on "
                              f"its tile's side {sn.side} track {sn.track}")


def test_build_interconnect_fixes_registers_like_the_public_pass():
    """build_interconnect edits build_uniform's fresh graphs in place; the result equals
    fix_registers (which copies and leaves its input as it was), orders included."""
    from canal.passes import build_uniform
    from garnet.array import default_core_fn, fix_registers, interconnect_params

    p, ic = _odd()
    raw = build_uniform(interconnect_params(p), default_core_fn(p), ic.timing)
    before = {w: g.copy() for w, g in raw.graphs.items()}
    fixed = [s for s in p.pipeline_register_sides if s not in p.register_bypass_sides]
    for w, g in raw.graphs.items():
        want = fix_registers(g, fixed)
        assert g == before[w]                                  # input untouched
        got = ic.graphs[w]
        assert got == want and list(got.delay) == list(want.delay)
        assert list(got.fanin) == list(want.fanin)
        assert got.num_edges() < g.num_edges()                 # bypass edges removed
