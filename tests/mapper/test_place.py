"""Simulated-annealing placement (with and without quadratic global placement)."""
from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

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


ROOT = Path(__file__).resolve().parents[2]


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


#: places the 8x8 stencil of tests/mapper/test_pipeline.py (5 tracks, seed 2) and prints the
#: global placement's coordinates and the final sites
_PLACE_SCRIPT = """
import json, sys, tempfile
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from test_pipeline import PE, MEM, IO
from canal.collateral import dump_json
from canal.passes import InterconnectParams, build_uniform, io_on_edges
from mapper.collateral import load_fabric
from mapper.backend.pack import pack, stencil_netlist
from mapper.backend import place as P
tmp = Path(tempfile.mkdtemp())
ic = build_uniform(InterconnectParams(8, 8, tracks=5, widths=(16,)),
                   io_on_edges(lambda x, y: MEM if x % 4 == 3 else PE, IO, 8, 8))
dump_json(ic.graphs[16], tmp / "routing_16.json")
graphs = load_fabric([tmp / "routing_16.json"])
seen = {}
cg = P._cg
P._cg = lambda *a: seen.setdefault("cg", cg(*a))
pl = P.place(pack(stencil_netlist("g"), graphs), graphs, P.PlaceParams(seed=2))
print(json.dumps({"cg": seen["cg"].tolist(), "sites": sorted(pl.sites.items())}))
"""


def test_same_seed_same_placement_on_any_cpu():
    """The same seed places the same on every machine: the global placement is computed
    with no BLAS inner product and no CPU-dispatched exp/log, and LAPACK's quadratic start
    is snapped to 1/1024 tile. Here numpy's SIMD paths and OpenBLAS's kernel (generic SSE3,
    or ARMv8 on ARM, against the one it detects) are switched in two processes: the CG
    coordinates are the same bits. With scipy's CG, used before, the same stencil ended up
    to 0.58 tiles apart on an AVX2 CPU with the two kernels, and with a different Fmax."""
    generic = {"OPENBLAS_CORETYPE": "Prescott",
               "NPY_DISABLE_CPU_FEATURES": "AVX2 FMA3 AVX512F AVX512CD AVX512_SKX"} \
        if platform.machine() in ("x86_64", "AMD64") else \
        {"OPENBLAS_CORETYPE": "ARMV8", "NPY_DISABLE_CPU_FEATURES": "ASIMDHP ASIMDDP ASIMDFHM"}
    outs = []
    for env in ({}, generic):
        # the child's whole environment: nothing but the switches (OpenBLAS and numpy read
        # them as they load), none in the default run
        r = subprocess.run([sys.executable, "-c", _PLACE_SCRIPT, str(Path(__file__).parent)],
                           capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
        assert r.returncode == 0, r.stderr[-2000:]
        outs.append(json.loads(r.stdout.splitlines()[-1]))
    assert outs[0]["cg"] == outs[1]["cg"]
    assert outs[0]["sites"] == outs[1]["sites"]


def test_reproducible_exp_log_and_cg():
    """exp_det / log_det within 2 ulp of numpy's; minimise_cg finds the minimum of a convex
    quadratic (and of Rosenbrock's function near its valley) like a textbook CG."""
    x = np.linspace(-700.0, 5.0, 20001)
    e = P.exp_det(x)
    assert np.all(np.abs(e - np.exp(x)) <= 2 * np.spacing(np.exp(x)))
    assert P.exp_det(np.array([0.0]))[0] == 1.0 and P.exp_det(np.array([-1e6]))[0] == 0.0
    y = np.linspace(1e-3, 64.0, 20001)
    assert np.all(np.abs(P.log_det(y) - np.log(y)) <= 2 * np.spacing(np.abs(np.log(y)) + 1e-300))
    assert P.log_det(np.array([1.0]))[0] == 0.0
    a = np.diag([1.0, 4.0, 9.0])
    c = np.array([3.0, -2.0, 0.5])
    got = P.minimise_cg(lambda v: (0.5 * v @ a @ v - c @ v, a @ v - c), np.zeros(3), gtol=1e-9)
    assert np.allclose(got, np.linalg.solve(a, c), atol=1e-7)

    def rosen(v):
        x0, x1 = v
        return ((1 - x0) ** 2 + 100 * (x1 - x0 ** 2) ** 2,
                np.array([-2 * (1 - x0) - 400 * x0 * (x1 - x0 ** 2), 200 * (x1 - x0 ** 2)]))
    r = P.minimise_cg(rosen, np.array([-1.2, 1.0]), maxiter=2000, gtol=1e-6)
    assert np.allclose(r, [1.0, 1.0], atol=1e-3)
