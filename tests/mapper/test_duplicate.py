"""Low-unroll duplication (Cascade §V-C4, issue 41 item 9; mapper.duplicate): the strip plan,
the translation-invariance check and its refusals, and the replication of a placed, routed and
pipelined sub-array design across a canal fabric (IO row on top, every 4th column MEM)."""
from __future__ import annotations

import pytest

from canal.config import route_selects
from canal.passes import InterconnectParams, build_uniform, io_on_edges
from cgra.errors import ConfigError, MappingError
from mapper.backend.pack import pack, stencil_netlist
from mapper.backend.pipeline import PipelineParams, pipeline
from mapper.backend.place import PlaceParams, place
from mapper.backend.route import check_routes, route_design
from mapper.collateral import Collateral
from mapper.duplicate import (DuplicationPlan, check_translation, copy_name, plan_duplication,
                              replicate, shift_node, sub_collateral, tag_period)
from mapper.params import AppParams, DuplicateParams, RunParams
from mapper.stages import FlowResult
from test_cascade import IO, MEM, PE, fabric


@pytest.fixture(scope="module")
def wide() -> Collateral:
    """16 columns, an IO row and 2 rows (MEM at x % 4 == 3): four 4-column copies."""
    return fabric(16, 3)


def test_plan_gaussian_strips(wide):
    """gaussian 64x64 at unroll 4: 62 output rows -> 16 per copy, compiled on a 64x18 strip
    (two halo rows), four 4-column sub-arrays (the tile pattern's period) at x = 0, 4, 8, 12;
    gaussian_edge (repeat-edge padding) keeps 64 output rows -> 16 per copy on 64x16 strips."""
    assert tag_period(wide) == 4
    p = plan_duplication(AppParams("gaussian", 64, 64, 4), wide, DuplicateParams())
    assert (p.copies, p.columns, p.rows, p.strip_rows, p.strip_height) == (4, 4, 3, 16, 18)
    assert p.offsets == [0, 4, 8, 12] and p.boxes == {"blur": (0, 62, 0, 62)}
    assert p.strip_params(AppParams("gaussian", 64, 64, 4)) == AppParams("gaussian", 64, 18, 1)
    assert p.to_dict()["sub_array"] == [0, 4, 0, 3]
    e = plan_duplication(AppParams("gaussian_edge", 64, 64, 4), wide, DuplicateParams())
    assert (e.strip_rows, e.strip_height, e.boxes) == (16, 16, {"blur": (1, 65, 1, 65)})
    two = plan_duplication(AppParams("gaussian", 64, 64, 2), wide, DuplicateParams())
    assert (two.columns, two.strip_rows, two.strip_height) == (8, 31, 33)
    # unroll 8 as four copies of the unroll-2 app: each compiled at unroll 2 on a 64x18 strip
    cu = plan_duplication(AppParams("gaussian", 64, 64, 8), wide, DuplicateParams(unroll=2))
    assert (cu.copies, cu.copy_unroll, cu.columns, cu.strip_rows) == (4, 2, 4, 16)
    assert cu.strip_params(AppParams("gaussian", 64, 64, 8)) == AppParams("gaussian", 64, 18, 2)
    assert cu.to_dict()["app"] == {"width": 64, "height": 64, "unroll": 8}


@pytest.mark.parametrize("app, dup, match", [
    (AppParams("gaussian", 64, 64, 1), DuplicateParams(), "has nothing to duplicate; give "
                                                          "--unroll 2 or more"),
    (AppParams("gaussian", 64, 64, 4), DuplicateParams(unroll=3), "--copy-unroll 3 does not "
                                                                  "divide --unroll 4"),
    (AppParams("gaussian", 64, 64, 4), DuplicateParams(unroll=4), "give --unroll 8 or more"),
    (AppParams("laplacian_pyramid", 64, 64, 2), DuplicateParams(), "several rates"),
    (AppParams("gaussian", 64, 64, 4), DuplicateParams(5), r"need 20 columns, design "
                                                           r"fabric has 16; use --sub-array <= 4"),
    (AppParams("gaussian", 64, 5, 4), DuplicateParams(), "has 3 output rows, fewer than the 4"),
    (AppParams("gaussian", 64, 64, 8), DuplicateParams(), r"need 32 columns, design fabric "
                                                          r"has 16"),
    (AppParams("resnet_layer", 18, 18, 2), DuplicateParams(), "not a stencil app"),
])
def test_plan_refusals(wide, app, dup, match):
    """Duplication is refused, one line naming the fix, for fewer than two copies (unroll 1, or
    a copy unroll equal to the unroll), a copy unroll that does not divide it, a multi-rate app,
    copies that do not fit side by side, fewer output rows than copies, a default sub-array
    narrower than the tile pattern's period and a DNN layer."""
    with pytest.raises(MappingError, match=match):
        plan_duplication(app, wide, dup)


def test_sub_array_option_is_range_checked():
    """``--sub-array 0`` is refused before any work (ConfigError naming the option)."""
    with pytest.raises(ConfigError, match=r"--sub-array = 0 is out of range"):
        RunParams(AppParams("gaussian", 64, 64, 2), "build/small",
                  duplicate=DuplicateParams(0)).validate()


def test_translation_check_counts_and_refusals(wide):
    """A 4-column sub-array repeats across the fabric: every tile, node and edge of the
    sub-array compared once per further copy. A 3-column one breaks the MEM-every-4th-column
    pattern (refused naming the tile), and so does a fabric whose MEM columns are not
    periodic, or one where a copy's switch-box edge is slower."""
    sub = sub_collateral(wide, 4)
    assert sub.size == (4, 3)
    got = check_translation(wide, 4, 4)
    nodes = len(sub.graphs[16].ig.nodes)
    assert got == {"tiles": 3 * 12, "nodes": 3 * nodes,
                   "edges": 3 * sub.graphs[16].ig.num_edges()}
    with pytest.raises(MappingError, match=r"sub-array of 3 columns does not tile design "
                                           r"fabric: tile \(0, 1\) is p .* at \(3, 1\); use a "
                                           r"--sub-array width that is a multiple of the tile "
                                           r"pattern's period \(4 columns\)"):
        check_translation(wide, 3, 2)
    odd = Collateral.from_graphs(build_uniform(
        InterconnectParams(8, 3, tracks=5, widths=(16,)),
        io_on_edges(lambda x, y: MEM if x == 3 else PE, IO, 8, 3)))
    with pytest.raises(MappingError, match=r"tile \(3, 1\) is m .* copy 1 has tile p"):
        check_translation(odd, 4, 2)
    ic = build_uniform(InterconnectParams(8, 3, tracks=5, widths=(16,)),
                       io_on_edges(lambda x, y: MEM if x % 4 == 3 else PE, IO, 8, 3))
    g = ic.graphs[16]
    dst = "SB:16:5:1:EAST:0:OUT"
    g.delay[(g.fanin[dst][0], dst)] += 1.0
    with pytest.raises(MappingError, match=r"fan-in of SB:16:1:1:EAST:0:OUT and of its copy "
                                           r"SB:16:5:1:EAST:0:OUT differ"):
        check_translation(Collateral.from_graphs(ic), 4, 2)


def test_replicate_placed_routed_pipelined_stencil():
    """A 2x2 stencil packed, placed, routed and pipelined on the 4-column sub-array of an 8x5
    fabric, replicated twice: copy 1's instances sit 4 columns east of copy 0's, its routes
    are copy 0's shifted (checked against the whole fabric's graph), its interconnect selects
    are copy 0's at the shifted muxes, its IO instances stream rows from ``row_shift`` 8 and
    the whole output box, and the counts add up."""
    coll = fabric(8, 5)
    sub = sub_collateral(coll, 4)
    packed = pack(stencil_netlist(kh=2, kw=2, image_width=16, mem_preset="dualport_2048x16"),
                  sub)
    pl = place(packed, sub, PlaceParams(seed=0))
    rr = route_design(packed, pl, sub)
    pr = pipeline(packed, pl, rr, sub, PipelineParams())
    assert all(x < 4 for x, _ in pl.sites.values())
    plan = DuplicationPlan("stencil", 16, 16, 2, 4, 5, 9, 8, {"stencil": (0, 15, 0, 15)}, 8)
    rep = replicate(FlowResult(packed, pl, rr, pr, None), plan)
    for n, (x, y) in pl.sites.items():
        assert rep.placement.sites[n] == (x, y)
        assert rep.placement.sites[copy_name(n, 1)] == (x + 4, y)
    assert len(rep.placement.sites) == 2 * len(pl.sites) == 2 * 10   # registers: on REG sites
    check_routes(rep.pipelined.packed, rep.placement, rep.pipelined.routing, coll)
    for name, r in rr.nets.items():
        for t in r.paths:
            twin = rep.pipelined.routing.nets[copy_name(name, 1)].paths[(copy_name(t[0], 1),
                                                                          t[1])]
            assert twin == [shift_node(v, 4) for v in rep.pipelined.routing.nets[name]
                            .paths[t]]
    sel = route_selects({w: rg.ig for w, rg in coll.graphs.items()},
                        rep.pipelined.routing.routes())
    c0 = {n: v for n, (v, _net) in sel.items() if int(n.split(":")[2]) < 4}
    c1 = {shift_node(n, -4): v for n, (v, _net) in sel.items() if int(n.split(":")[2]) >= 4}
    assert c0 == c1 and len(c0) == len(sel) // 2 > 0
    ios = {n: i.config for n, i in rep.pipelined.packed.instances.items()
           if i.kind in ("io_in", "io_out")}
    assert {n: c["row_shift"] for n, c in ios.items()} == {
        "io_in": 0, "io_out": 0, "io_in_dup1": 8, "io_out_dup1": 8}
    assert rep.placement.hpwl == 2 * pl.hpwl
    assert rep.pipelined.routing.wirelength == {16: 2 * rr.wirelength[16]}
    assert len(rep.pipelined.enabled_regs) == 2 * len(pr.enabled_regs)
    assert rep.pipelined.timing.period_ps == pr.timing.period_ps
