"""Issue 11's back end: latency-constrained routing, branch-delay matching that does not run
out, the invariant checks after every pass, per-op PE delays and the known answer of the
Cascade delay model, and the automatic re-placement of the flow."""
from __future__ import annotations

import pytest

from canal.graph import IO as SbIO
from canal.graph import InterconnectGraph, Node, NodeKind, Side, TileInfo
from canal.passes import InterconnectParams, build_uniform, io_on_edges
from cgra.config import ConfigField
from cgra.core import CoreSpec, PortSpec
from cgra.errors import InternalError, RoutingError
from mapper.collateral import Collateral
from mapper.netlist import Netlist
from mapper.backend.pack import pack, stencil_netlist
from mapper.backend.checks import check_balanced
from mapper.backend.pipeline import (BalanceError, PipelineParams, path_regs, pipeline,
                             timing_analysis)
from mapper.backend.place import PlaceParams, place
from canal.routing import RoutingGraph
from mapper.backend.route import PathFinder, route_design


def _no_rtl():
    raise AssertionError("back-end tests never build RTL")


PE = CoreSpec("k_pe", "p", (PortSpec("data0", 16, "in"), PortSpec("data1", 16, "in"),
                            PortSpec("res", 16, "out")),
              (ConfigField("inst", 20), ConfigField("data0_reg_en", 1),
               ConfigField("data1_reg_en", 1)), _no_rtl, {"timing_class": "pe"})
MEM = CoreSpec("k_mem", "m", (PortSpec("data_in_0", 16, "in"),
                              PortSpec("data_out_0", 16, "out")),
               (ConfigField("depth", 12),), _no_rtl, {"timing_class": "mem"})
IO = CoreSpec("k_io", "I", (PortSpec("f2io_16", 16, "in"), PortSpec("io2f_16", 16, "out")),
              (), _no_rtl, {"timing_class": "io"})


def fabric(w: int, h: int, tracks: int = 5, mandatory: tuple[str, ...] = ()) -> Collateral:
    """A canal fabric (IO row on top, every 4th column MEM); pipeline registers on every
    SB_OUT, those on ``mandatory`` sides without bypass (as garnet's default array)."""
    core = io_on_edges(lambda x, y: MEM if x % 4 == 3 else PE, IO, w, h)
    ic = build_uniform(InterconnectParams(w, h, tracks=tracks, widths=(16,)), core)
    if mandatory:
        from garnet.array import fix_registers
        from canal.interconnect import Interconnect
        ic = Interconnect({k: fix_registers(g, list(mandatory)) for k, g in ic.graphs.items()},
                          ic.cores, ic.timing)
    return Collateral.from_graphs(ic)


@pytest.fixture(scope="module")
def row() -> Collateral:
    """One IO row and one row of 8 PE tiles (no MEM), every register bypassable."""
    core = io_on_edges(lambda x, y: PE, IO, 8, 2)
    return Collateral.from_graphs(build_uniform(InterconnectParams(8, 2, tracks=5,
                                                                   widths=(16,)), core))


def _two_pes(ops_a=None) -> Netlist:
    nl = Netlist("row")
    nl.add_instance("src", "io_in", "I")
    nl.add_instance("a", "pe", "p", {"inst": 1, **({"ops": ops_a} if ops_a else {})})
    nl.add_instance("b", "pe", "p", {"inst": 1})
    nl.add_instance("dst", "io_out", "I")
    nl.add_net(("src", "out"), [("a", "data0")], 16, "in")
    nl.add_net(("a", "res"), [("b", "data0")], 16, "ab")
    nl.add_net(("b", "res"), [("dst", "in")], 16, "out")
    return nl


def _placed(nl, coll, fixed, seed=0):
    packed = pack(nl, coll)
    pl = place(packed, coll, PlaceParams(seed=seed, fixed=fixed))
    return packed, pl, route_design(packed, pl, coll)


@pytest.mark.parametrize("ops, core_ps", [(None, 700.0), (["coreir.add"], 520.0),
                                          (["coreir.mul"], 570.0)])
def test_cascade_known_answer_row_of_pes(row, ops, core_ps):
    """The Cascade delay model's known answer: a PE at x=0 driving a PE at x=7 east along one
    row through six PE tiles is 700 + 6*149 + 240 = 1834 ps unpipelined (PE core, six W->E
    switch-box hops of a PE tile, the connection box); a PE configured for an add takes the
    table's 0.52 ns add figure instead of the PE's worst case, a multiply umult0's 0.57 ns."""
    packed, pl, rr = _placed(_two_pes(ops), row, {"src": (0, 0), "a": (0, 1), "b": (7, 1),
                                                   "dst": (7, 0)})
    path = rr.nets["ab"].paths[("b", "data0")]
    outs = [n for n in path if n.startswith("SB:") and n.endswith(":OUT")]
    assert [(int(n.split(":")[2]), n.split(":")[4]) for n in outs] == \
        [(x, "EAST") for x in range(7)]              # straight along the row
    t = timing_analysis(packed, pl, rr, row, PipelineParams(latency={"p": 1}))
    want = core_ps + 6 * 149.0 + 240.0
    assert t.period_ps == pytest.approx(want)
    assert t.path[-1][0] == "PORT:16:7:1:data0"
    if ops is None:
        assert t.period_ps == pytest.approx(1834.0)


def test_unpipelined_timing_bypasses_the_mandatory_registers():
    """With every EAST register mandatory (garnet's default array), the same row route holds
    one register per hop, so the a -> b path is cut at every hop; the unpipelined figure (Cascade's
    baseline: no pipeline register) is the known answer again, 1834 ps."""
    from canal.interconnect import Interconnect
    from garnet.array import fix_registers
    from mapper.backend.pipeline import unpipelined_timing

    core = io_on_edges(lambda x, y: PE, IO, 8, 2)
    ic = build_uniform(InterconnectParams(8, 2, tracks=5, widths=(16,)), core)
    coll = Collateral.from_graphs(Interconnect(
        {k: fix_registers(g, ["EAST"]) for k, g in ic.graphs.items()}, ic.cores, ic.timing))
    packed, pl, rr = _placed(_two_pes(), coll, {"src": (0, 0), "a": (0, 1), "b": (7, 1),
                                                 "dst": (7, 0)})
    path = rr.nets["ab"].paths[("b", "data0")]
    assert [n.split(":")[2] for n in path if n.startswith("REG:")] == [str(x) for x in range(7)]
    p = PipelineParams(latency={"p": 1})
    t = timing_analysis(packed, pl, rr, coll, p)
    assert t.period_ps < 1834.0 - 600                # the row is cut at every hop
    assert t.path[-1][0] != "PORT:16:7:1:data0" or t.path[0][0].startswith("REG:")
    u = unpipelined_timing(packed, pl, rr, coll, p)
    assert u.period_ps == pytest.approx(1834.0)
    assert u.path[0][0] == "PORT:16:0:1:res" and u.path[-1][0] == "PORT:16:7:1:data0"
    pr = pipeline(packed, pl, rr, coll, p)
    assert pr.unpipelined.period_ps == pytest.approx(1834.0)


def _toy():
    """a, b sources; A sink; a chain of three east tiles; every SB_OUT with a register."""
    g = InterconnectGraph(16, {(x, 0): TileInfo(x, 0, "c", "p") for x in range(4)})
    src = g.add_node(Node(NodeKind.PORT, 0, 0, 16, name="a", direction="out"))
    dst = g.add_node(Node(NodeKind.PORT, 3, 0, 16, name="A", direction="in"))
    prev = src
    for x in range(3):
        out = g.add_node(Node(NodeKind.SB, x, 0, 16, Side.EAST, 0, SbIO.SB_OUT))
        reg = g.add_node(Node(NodeKind.REG, x, 0, 16, Side.EAST, 0))
        rmux = g.add_node(Node(NodeKind.RMUX, x, 0, 16, Side.EAST, 0))
        nxt = g.add_node(Node(NodeKind.SB, x + 1, 0, 16, Side.WEST, 0, SbIO.SB_IN))
        if x == 0:
            g.add_edge(prev, out)
        else:
            g.add_edge(prev, out, 100.0)
        g.add_edge(out, reg)
        g.add_edge(out, rmux)
        g.add_edge(reg, rmux, 230.0)
        g.add_edge(rmux, nxt)
        prev = nxt
    g.add_edge(prev, dst, 240.0)
    return RoutingGraph(g), src, dst


@pytest.mark.parametrize("want", [0, 1, 2, 3])
def test_exact_register_search(want):
    """A* over (node, registers) states gives a path with exactly the registers asked for
    (a bypassable register is enabled by routing through its REG node), none beyond what
    the graph offers."""
    rg, src, dst = _toy()
    pf = PathFinder(rg)
    p = pf._search_exact({rg.index[src]: 0}, {rg.index[dst]}, want, 3, 0)
    path = [rg.ids[i] for i in p]
    assert path[0] == src and path[-1] == dst and path_regs(path) == want
    assert pf._search_exact({rg.index[src]: 0}, {rg.index[dst]}, 4, 3, 0) is None


def test_pinned_register_counts_route_as_asked():
    """route_design(pinned=...): every sink's path holds exactly its pinned register count;
    the stencil's nets keep the rest as they were."""
    coll = fabric(8, 8)
    packed = pack(stencil_netlist("s"), coll)
    pl = place(packed, coll, PlaceParams(seed=1))
    rr = route_design(packed, pl, coll)
    pinned = {n: {s: path_regs(p) for s, p in r.paths.items()} for n, r in rr.nets.items()}
    name = next(n for n, r in rr.nets.items() if not next(iter(r.paths))[0].startswith("reg"))
    sink = next(iter(pinned[name]))
    pinned[name][sink] += 2
    again = route_design(packed, pl, coll, pinned=pinned, pinned_sites=rr.reg_sites)
    for n, r in again.nets.items():
        for s, p in r.paths.items():
            assert path_regs(p) == pinned[n][s], (n, s)


def test_balancing_on_mandatory_registers_closes_every_seed():
    """On a fabric whose NORTH/EAST registers are mandatory (garnet's default), branches of
    one PE differ by whole cycles; balancing (PE input registers, route registers,
    latency-constrained re-routing) closes the stencil on every seed of 0..4."""
    coll = fabric(8, 8, mandatory=("NORTH", "EAST"))
    nl = stencil_netlist("s", image_width=16)
    for seed in range(5):
        packed = pack(nl, coll)
        pl = place(packed, coll, PlaceParams(seed=seed))
        rr = route_design(packed, pl, coll)
        res = pipeline(packed, pl, rr, coll, PipelineParams(latency={"p": 1}))
        check_balanced(res)
        assert [p.name for p in res.passes] == ["balance"]


def test_register_insertion_reaches_the_target_and_stays_balanced():
    coll = fabric(8, 8, mandatory=("NORTH", "EAST"))
    packed = pack(stencil_netlist("s", image_width=16), coll)
    pl = place(packed, coll, PlaceParams(seed=2))
    rr = route_design(packed, pl, coll)
    base = pipeline(packed, pl, rr, coll, PipelineParams())
    res = pipeline(packed, pl, rr, coll, PipelineParams(register_pe_inputs=True,
                                                        target_period_ps=1e6 / 900))
    assert [p.name for p in res.passes] == ["balance", "compute pipelining",
                                            "register insertion", "ALAP"]
    assert res.timing.fmax_mhz >= 900 > base.timing.fmax_mhz
    check_balanced(res)
    assert res.passes[-1].fmax_mhz == pytest.approx(res.timing.fmax_mhz)
    assert res.passes[-1].registers > res.passes[0].registers
    # STA of the result agrees with the reported figure
    again = timing_analysis(res.packed, pl, res.routing, coll, PipelineParams(),
                            res.pe_input_regs)
    assert again.period_ps == pytest.approx(res.timing.period_ps)


def test_an_illegal_route_is_caught_with_the_pass_name(monkeypatch):
    """A pass that breaks a route (here its first step made to drop a node of a path) is
    stopped by the invariant check naming the pass, not later by the bitstream."""
    from mapper.backend import pipeline as P

    coll = fabric(8, 8, mandatory=("NORTH", "EAST"))
    packed, pl, rr = _placed(stencil_netlist("s", image_width=16), coll, {}, seed=3)
    real = P._Design.balance

    def broken(self, st):
        real(self, st)
        name, r = next((n, r) for n, r in st.routes.items()
                       if max(map(len, r.paths.values())) > 4)
        t, p = next((t, p) for t, p in r.paths.items() if len(p) > 4)
        r.paths[t] = p[:2] + p[3:]

    monkeypatch.setattr(P._Design, "balance", broken)
    with pytest.raises(InternalError, match=r"pass 'balance' broke an invariant \(a compiler "
                                            r"bug\): net .* edge .* is not in the 16-bit"):
        pipeline(packed, pl, rr, coll, PipelineParams(latency={"p": 1}))


def test_flow_places_again_when_pipelining_fails(monkeypatch):
    """`cgra run` never asks for another seed: a placement whose pipelining fails is placed
    again with the next seed, and each failure is reported."""
    from mapper import closure as F

    coll = fabric(8, 8)
    real = F.pipeline
    calls = []

    def flaky(packed, pl, rr, c, params=None):
        calls.append(pl.seed)
        if len(calls) == 1:
            raise BalanceError("branch-delay matching: test failure on the first placement")
        return real(packed, pl, rr, c, params)

    monkeypatch.setattr(F, "pipeline", flaky)
    fr = F.back_end(stencil_netlist("s", image_width=16), coll,
                    F.FlowParams(place=PlaceParams(seed=4)), lambda i, c, p: {"depth": 1})
    # the retry anneals alone from the same seed (the analytical placement hardly depends
    # on the seed)
    assert calls == [4, 4]
    assert fr.placement.seed == 4 and fr.placement.method == "sa"
    assert fr.attempts == [{"seed": 4, "placer": "analytical", "stage": "pipeline",
                            "error": "branch-delay matching: test failure on the first "
                                     "placement"}]
    monkeypatch.setattr(F, "pipeline", lambda *a, **k: (_ for _ in ()).throw(
        BalanceError("never closes")))
    with pytest.raises(RoutingError, match=r"2 placement attempt\(s\) \(analytical seed 4; "
                                           r"annealing seed 4\) all failed; the last at "
                                           r"pipeline: never closes"):
        F.back_end(stencil_netlist("s", image_width=16), coll,
                   F.FlowParams(place=PlaceParams(seed=4), place_attempts=2),
                   lambda i, c, p: {"depth": 1})


def test_alpha_sweep_keeps_the_highest_fmax():
    """The placement exponent sweep places, routes and pipelines once per HPWL exponent and
    keeps the result with the highest Fmax: the kept figure is the table's maximum and the
    placement is the one placed with that exponent."""
    from mapper import closure as F

    coll = fabric(8, 8, mandatory=("NORTH", "EAST"))
    params = F.FlowParams(place=PlaceParams(seed=1), alphas=(1.0, 1.5, 2.0),
                          pipeline=PipelineParams(register_pe_inputs=True,
                                                  target_period_ps=1e6 / 2000))
    fr = F.back_end(stencil_netlist("s", image_width=16), coll, params,
                    lambda i, c, p: {"depth": 1})
    table = fr.alpha_sweep
    assert [r["alpha"] for r in table] == [1.0, 1.5, 2.0]
    assert sum(r["kept"] for r in table) == 1
    kept = next(r for r in table if r["kept"])
    assert kept["fmax_mhz"] == max(r["fmax_mhz"] for r in table)
    assert fr.pipelined.timing.fmax_mhz == pytest.approx(kept["fmax_mhz"], abs=0.01)
    assert fr.placement.alpha == kept["alpha"] and fr.placement.seed == kept["seed"] == 1
    # each row is what a single run with that exponent gives
    for r in table:
        one = F.back_end(stencil_netlist("s", image_width=16), coll, F.FlowParams(
            place=PlaceParams(seed=1, alpha=r["alpha"]), pipeline=params.pipeline),
            lambda i, c, p: {"depth": 1})
        assert one.pipelined.timing.fmax_mhz == pytest.approx(r["fmax_mhz"], abs=0.01)
        assert one.alpha_sweep == []


@pytest.mark.parametrize("text,words", [("1,x", "'x' is not an HPWL exponent"),
                                        ("1,9", "'9' is not an HPWL exponent"),
                                        ("1,1", "an exponent is repeated")])
def test_alpha_sweep_option_is_checked(text, words):
    from cgra.errors import ConfigError
    from mapper.cli import _alphas

    assert _alphas("1, 1.5,2") == (1.0, 1.5, 2.0) and _alphas(None) == ()
    with pytest.raises(ConfigError, match=words):
        _alphas(text)


def test_a_missed_clock_target_places_again_and_keeps_the_best(monkeypatch):
    """A placement that routes but misses the target clock is placed again (at most
    ``timing_attempts`` times); when none meets it, the highest-Fmax attempt is kept and the
    misses are reported with stage "timing"."""
    from mapper import closure as F

    coll = fabric(8, 8, mandatory=("NORTH", "EAST"))
    real = F.pipeline
    seen: dict[tuple[int, str], float] = {}

    def spy(packed, pl, rr, c, params=None):
        res = real(packed, pl, rr, c, params)
        seen[pl.seed, pl.method] = res.timing.fmax_mhz
        return res

    monkeypatch.setattr(F, "pipeline", spy)
    unreachable = PipelineParams(register_pe_inputs=True, target_period_ps=1e6 / 50_000)
    fr = F.back_end(stencil_netlist("s", image_width=16), coll,
                    F.FlowParams(place=PlaceParams(seed=2), pipeline=unreachable,
                                 timing_attempts=3), lambda i, c, p: {"depth": 1})
    # the analytical placement, then annealing alone from seeds 2 and 1002
    assert sorted(seen) == [(2, "cg+sa"), (2, "sa"), (1002, "sa")]
    best = max(seen, key=seen.get)
    assert (fr.placement.seed, fr.placement.method) == best
    assert fr.pipelined.timing.fmax_mhz == pytest.approx(seen[best])
    placer = {"cg+sa": "analytical", "sa": "sa"}
    assert sorted((a["seed"], a["placer"]) for a in fr.attempts) == \
        sorted((s, placer[m]) for s, m in set(seen) - {best})
    assert {a["stage"] for a in fr.attempts} == {"timing"}
    # each miss names the critical path and why it cannot be cut (issue 41 item 9d)
    assert all(" MHz < 50000 MHz: the critical path (" in a["error"]
               and "has no register site on it: a stage no pipeline register can split"
               in a["error"] for a in fr.attempts), fr.attempts
    # a reachable target closes on the first placement: no attempt reported
    seen.clear()
    fr = F.back_end(stencil_netlist("s", image_width=16), coll,
                    F.FlowParams(place=PlaceParams(seed=2), pipeline=PipelineParams(
                        register_pe_inputs=True, target_period_ps=1e6 / 100)),
                    lambda i, c, p: {"depth": 1})
    assert list(seen) == [(2, "cg+sa")] and fr.attempts == []
