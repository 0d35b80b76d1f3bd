"""Simulated-annealing placement (with and without quadratic global placement)."""
from __future__ import annotations

import numpy as np
import pytest

from canal.collateral import dump_json
from canal.passes import InterconnectParams, build_uniform, io_on_edges
from cgra.config import ConfigField
from cgra.core import CoreSpec, PortSpec
from cgra.errors import ConfigError, PlacementError
from mapper.collateral import load_fabric
from mapper.netlist import Netlist
from mapper.params import FlowParams
from mapper.backend.pack import pack, stencil_netlist
from mapper.backend import place as P
from mapper.backend.place import PlaceParams, Placement, check_placement, place, site_capacity


def _no_rtl():
    raise AssertionError("PnR tests never build RTL")


PE = CoreSpec("t_pe", "p", (PortSpec("data0", 16, "in"), PortSpec("data1", 16, "in"),
                            PortSpec("res", 16, "out")),
              (ConfigField("inst", 20),), _no_rtl, {"timing_class": "pe"})
MEM = CoreSpec("t_mem", "m", (PortSpec("data_in_0", 16, "in"), PortSpec("data_out_0", 16, "out")),
               (ConfigField("depth", 12),), _no_rtl, {"timing_class": "mem"})
IO = CoreSpec("t_io", "I", (PortSpec("f2io_16", 16, "in"), PortSpec("io2f_16", 16, "out"),
                            PortSpec("f2io_1", 1, "in"), PortSpec("io2f_1", 1, "out")),
              (), _no_rtl, {"timing_class": "io"})


@pytest.fixture(scope="module")
def graphs8(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("p8")
    core = io_on_edges(lambda x, y: MEM if x % 4 == 3 else PE, IO, 8, 8)
    ic = build_uniform(InterconnectParams(8, 8, tracks=2), core)
    for w, g in ic.graphs.items():
        dump_json(g, tmp / f"routing_{w}.json")
    return load_fabric(sorted(tmp.glob("*.json")))


@pytest.fixture(scope="module")
def stencil(graphs8):
    return pack(stencil_netlist("g"), graphs8)


def _hpwl_recomputed(packed, pl: Placement, alpha: float) -> float:
    total = 0.0
    for n in packed.nets:
        pts = [pl.sites[i] for i in {n.source[0], *(s[0] for s in n.sinks)}]
        if len(pts) < 2:
            continue
        h = max(p[0] for p in pts) - min(p[0] for p in pts) + \
            max(p[1] for p in pts) - min(p[1] for p in pts)
        total += h ** alpha if h else 0.0
    return total


def test_site_capacity_from_layout(graphs8):
    caps = site_capacity(graphs8)
    assert len(caps[("p",)]) == 7 * 6 and len(caps[("m",)]) == 7 * 2
    assert sorted(caps[("I",)]) == [(x, 0) for x in range(8)]
    # IO tiles with a 1-bit port also host 1-bit IO; 2 tracks x 4 sides register sites per
    # tile, less the sides facing off the array (their register drives nothing)
    assert set(caps[("i",)]) == set(caps[("I",)])
    for (x, y), n in caps[("r", 16)].items():
        off_array = (x == 0) + (x == 7) + (y == 0) + (y == 7)
        assert n == 2 * (4 - off_array), (x, y)
    assert len(caps[("r", 16)]) == 64


@pytest.mark.parametrize("analytical", [True, False])
def test_placement_is_legal_and_deterministic(graphs8, stencil, analytical):
    a = place(stencil, graphs8, PlaceParams(seed=7, analytical=analytical))
    check_placement(stencil, a, graphs8)
    b = place(stencil, graphs8, PlaceParams(seed=7, analytical=analytical))
    assert a.sites == b.sites and a.cost == b.cost
    assert a.hpwl == _hpwl_recomputed(stencil, a, 1.0)
    # 17 PEs + taps: far better than a random scatter on an 8x8 array
    assert a.hpwl <= 2 * len(stencil.nets)


def test_cost_uses_alpha(graphs8, stencil):
    pl = place(stencil, graphs8, PlaceParams(seed=1, alpha=2.0))
    assert pl.cost == pytest.approx(_hpwl_recomputed(stencil, pl, 2.0))
    assert pl.alpha == 2.0


def test_two_connected_pes_end_adjacent(graphs8):
    nl = Netlist("pair")
    nl.add_instance("a", "pe", "p", {"inst": 0})
    nl.add_instance("b", "pe", "p", {"inst": 0})
    nl.add_net(("a", "res"), [("b", "data0")], 16)
    for analytical in (True, False):
        pl = place(pack(nl, graphs8), graphs8, PlaceParams(seed=5, analytical=analytical))
        assert pl.hpwl == 1


def test_fixed_instances_stay(graphs8, stencil):
    pl = place(stencil, graphs8, PlaceParams(seed=2, fixed={"io_in": (0, 0), "io_out": (7, 0)}))
    assert pl.sites["io_in"] == (0, 0) and pl.sites["io_out"] == (7, 0)
    with pytest.raises(PlacementError, match="cannot be fixed at tile"):
        place(stencil, graphs8, PlaceParams(fixed={"io_in": (1, 1)}))


def test_too_many_pes_names_the_resource(graphs8):
    # a stencil of 7x7 taps needs 49 + 48 PEs; the 8x8 array has 42 PE tiles
    packed = pack(stencil_netlist("big", kh=7, kw=7), graphs8)
    with pytest.raises(PlacementError) as exc:
        place(packed, graphs8)
    msg = str(exc.value)
    assert "needs 97 PE site(s) (tag 'p')" in msg and "has 42" in msg


def test_checker_rejects_wrong_tile_type(graphs8, stencil):
    pl = place(stencil, graphs8, PlaceParams(seed=0))
    bad = Placement(dict(pl.sites), pl.cost, pl.hpwl, 0.0, 0, 0, 1.0)
    mem_site = next(xy for xy, t in graphs8.tiles.items() if t.tag == "m")
    bad.sites["mul0"] = mem_site
    with pytest.raises(PlacementError, match="mul0 .* tag 'm'"):
        check_placement(stencil, bad, graphs8)


def _mem_pe_netlist(n_mem: int = 2) -> Netlist:
    """A chain io -> mem -> pe -> pe -> io with ``n_mem`` MEM stages."""
    nl = Netlist("chain")
    nl.add_instance("io_in", "io", "I", {})
    nl.add_instance("io_out", "io", "I", {})
    prev = ("io_in", "io2f_16")
    for k in range(n_mem):
        nl.add_instance(f"m{k}", "mem", "m", {"depth": 0})
        nl.add_net(prev, [(f"m{k}", "data_in_0")], 16)
        nl.add_instance(f"p{k}", "pe", "p", {"inst": 0})
        nl.add_net((f"m{k}", "data_out_0"), [(f"p{k}", "data0")], 16)
        prev = (f"p{k}", "res")
    nl.add_net(prev, [("io_out", "f2io_16")], 16)
    return nl


def test_cg_global_placement_beats_sa_alone_on_the_stencil(graphs8, stencil):
    # AHA §5.3: analytical global placement then a cold annealer; on the 3x3 stencil the
    # result is legal, deterministic and no longer than SA alone, seed for seed
    for seed in range(3):
        sa = place(stencil, graphs8, PlaceParams(seed=seed, analytical=False))
        cg = place(stencil, graphs8, PlaceParams(seed=seed))
        check_placement(stencil, cg, graphs8)
        assert cg.method == "cg+sa" and sa.method == "sa"
        assert cg.hpwl <= sa.hpwl
        assert 0.0 < cg.global_seconds < cg.seconds


def test_mem_potential_puts_mem_instances_on_mem_columns(graphs8):
    packed = pack(_mem_pe_netlist(), graphs8)
    cls, caps = P._site_class(packed), site_capacity(graphs8)
    mem_cols = {xy[0] for xy in caps[("m",)]}           # x = 3 and 7 on this layout
    assert mem_cols == {3, 7}
    dist = {}
    for beta in (0.0, 0.5, 20.0):
        p = PlaceParams(seed=0, analytical=True, mem_potential=beta)
        ann = P._Annealer(packed, cls, caps, p)
        start = np.full((len(ann.names), 2), 1.5)      # every instance on column 1.5
        start[:, 1] = np.arange(len(ann.names))
        anchors = {ann.idx["io_in"]: (0.0, 0.0), ann.idx["io_out"]: (7.0, 0.0)}
        out = P._cg(ann, packed, start, anchors, p)
        assert tuple(out[ann.idx["io_in"]]) == (0.0, 0.0)   # anchored instances stay
        dist[beta] = max(min(abs(out[ann.idx[f"m{k}"], 0] - c) for c in mem_cols)
                         for k in range(2))
    # the potential pulls MEM instances towards MEM columns, the more the stronger it is
    assert dist[20.0] < dist[0.5] < dist[0.0]
    assert dist[20.0] < 0.1


def test_overlap_term_of_aha_eq2(graphs8):
    # AHA Fig. 15: a new net whose box overlaps the existing nets' boxes is preferred at
    # equal wirelength. Two existing nets a-b and c-d cover x = 1..4 on rows 1 and 2; the
    # new 2-pin net e-f is either on row 5 (option 1: no overlap) or on row 2 (option 2).
    nl = Netlist("fig15")
    for n in "abcdef":
        nl.add_instance(n, "pe", "p", {"inst": 0})
    nl.add_net(("a", "res"), [("b", "data0")], 16)
    nl.add_net(("c", "res"), [("d", "data0")], 16)
    nl.add_net(("e", "res"), [("f", "data0")], 16)
    packed = pack(nl, graphs8)
    cls, caps = P._site_class(packed), site_capacity(graphs8)
    costs = {}
    for option, row in (("1", 5), ("2", 2)):
        ann = P._Annealer(packed, cls, caps, PlaceParams(gamma=0.5))
        sites = {"a": (1, 1), "b": (2, 1), "c": (1, 2), "d": (2, 2), "e": (4, row),
                 "f": (5, row)}
        if option == "2":
            sites.update(e=(1, 3), f=(2, 3))
            sites.update(c=(1, 2), d=(2, 3))             # c-d spans rows 2..3
        ann.set_all({ann.idx[n]: xy for n, xy in sites.items()})
        costs[option] = (ann.hpwl(), ann.overlap, ann.total)
    # wirelength: option 1 = 1 + 1 + 1 = 3, option 2 = 1 + 2 + 1 = 4 - the overlap reward
    assert costs["1"][:2] == (3, 0)
    assert costs["2"][1] == 4                            # tiles (1,3), (2,3) in 2 boxes each
    assert costs["2"][2] == pytest.approx(4 - 0.5 * 4)
    assert costs["2"][2] < costs["1"][2]


def test_gamma_placement_is_legal_and_its_overlap_is_exact(graphs8, stencil):
    pl = place(stencil, graphs8, PlaceParams(seed=3, analytical=True, gamma=0.3))
    check_placement(stencil, pl, graphs8)
    cover = np.zeros((8, 8), dtype=np.int32)
    for n in stencil.nets:
        pts = [pl.sites[i] for i in {n.source[0], *(s[0] for s in n.sinks)}]
        if len(pts) < 2:
            continue
        xs, ys = [q[0] for q in pts], [q[1] for q in pts]
        cover[min(xs):max(xs) + 1, min(ys):max(ys) + 1] += 1
    assert pl.overlap == P._overlap(cover) > 0
    assert pl.cost == pytest.approx(_hpwl_recomputed(stencil, pl, 1.0) - 0.3 * pl.overlap)


def test_bad_place_parameters_are_refused():
    with pytest.raises(PlacementError, match="global_method 'spectral'"):
        PlaceParams(global_method="spectral")
    # the numeric ones are checked with every other option (mapper.params.RANGES)
    with pytest.raises(ConfigError, match=r"--gamma = -1.0.*a number >= 0"):
        FlowParams(place=PlaceParams(gamma=-1.0)).validate()
    with pytest.raises(ConfigError, match=r"PlaceParams.window = 0.5"):
        FlowParams(place=PlaceParams(window=0.5)).validate()
