"""The SMT model of the interconnect (:mod:`canal.smt`) agrees with the RTL (issue 19, item 4).

**Array.** 4x4, every tile an IO core (:func:`canal.cores.io_core`), 5 tracks, Imran switch
boxes, a bypassable pipeline register on every SB_OUT, widths 16 and 1. The IO core wires its
top-level input ``glb2io_W`` straight to its fabric output ``io2f_W`` and its fabric input
``f2io_W`` straight to the top-level output ``io2glb_W`` (combinational), so every source of
the routing graphs (the 32 core-output PORTs) is driven from a top input and every sink (the 32
core-input PORTs, i.e. every connection box) is observed at a top output, with no logic in
between. :func:`test_every_source_and_sink_reaches_the_top_level` checks this structurally.

**Configurations.** :data:`N_CONFIGS` random configurations (fixed seed) give every select
field of the config map a random value: in range for every switch-box mux and register mux
(the latter's widths leave no room for anything else), and for the connection boxes (20
inputs, 5-bit select) an out-of-range value 20..31 with probability 0.1, which the RTL's
``CanalMux`` and the model both read as constant 0. The selects are encoded into a bitstream
with :func:`canal.smt.encode_selects`; the model reads them back with
:func:`canal.smt.decode_selects` from that same bitstream (asserted equal), and the RTL is
configured with it through the config bus (and every word is read back by the harness).
Four select profiles alternate (register enable probability, probability that a switch box
picks its core output) so that short and long chains, with none or many pipeline
registers, all occur; loops are planted (below).

**What is compared.** For every sink the model's :meth:`~canal.smt.InterconnectModel.derive`
gives ``(source, latency)``, constant 0, or ``None`` (not determined: the sink's selected
fan-in chain ends in a combinational loop with no register). The RTL (Verilator, ONE build for
the file, driven by the stream harness of :mod:`mapper.sim.verilator`: reset, configure, read back,
then stream with ``clk_en = 1``, sampling outputs before each rising edge) gets a fresh stream
on every source top input for :data:`CYCLES` cycles. From the sampled outputs the test derives
the RTL's connectivity *independently of the model*: the set of candidates ``(s, l)``
(source ``s``, lag ``0 <= l <= MAX_LAG``) with ``out[c] == in_s[c - l]`` for every ``c >= l``
and ``out[c] == 0`` for ``c < l`` (registers reset to 0 and hold during configuration,
``clk_en = 0``), plus "constant 0" when the output is 0 in every cycle. The test requires that
set to be exactly ``{model's value}`` for every sink the model determines; sinks the model
says ``None`` for are excluded and counted (asserted a minority).

**Why this is sound.** 16-bit streams: every (source, cycle) pair gets a distinct nonzero
value, so a single sample identifies the source and the cycle: the candidate set has at most
one element and it is the RTL's true connectivity (wrong source, wrong latency and "0 instead
of a source" all change it). 1-bit streams cannot be distinct per cycle; every source gets
independent uniform random bits instead, and a wrong candidate ``(s', l')`` survives only if
``in_s'`` equals the true stream on at least ``CYCLES - MAX_LAG = 32`` independent bits
(probability 2^-32 each; the seed is fixed, so the test is deterministic, and requiring a
single candidate makes any such coincidence a failure, not a silent pass). ``MAX_LAG`` is
asserted above every latency the model derives. The negative controls inside the main test
show the comparison fails on a wrong latency, a wrong source, "0 instead of a source" and on
the model of a configuration one register select away from the real one.

**Combinational loops.** With every register bypassable a configuration can close a loop of
switch boxes, but in this array the shortest one is 12 hops (36 nodes: Imran turns change the
track), so uniformly random selects essentially never close one (0 in the 200 configurations
before planting). Every :data:`PLANT_EVERY`-th configuration therefore gets a planted loop
(:func:`plant_loop`: a shortest cycle through a random SB_OUT, read by a connection box),
alternately fully bypassed and through one enabled register. A loop through a register and
no source holds the reset value 0 forever: the model says constant 0 and the RTL is checked
to agree (counted as ``loop_reg``). A loop with no register is a combinational loop:
``derive`` says ``None``, the test excludes those sinks (counted, asserted < 10% of the
compared ones) and checks, with an independent walk of the selected fan-ins
(:func:`classify`), that ``None`` occurs exactly there.

The hand-made cases (:func:`test_prove_hand_route_and_flipped_selects`) check
:meth:`~canal.smt.InterconnectModel.prove` on the 4x4 pass-through array of ``conftest.py``:
a route from :func:`canal.paths.walk_path`, encoded with ``route_bitstream`` and decoded with
:func:`~canal.smt.decode_selects`, is proved; flipping one select makes ``prove`` report
violations exactly at the flipped node and the nodes after it on the route.

Runtime (2 shared cores, other jobs running): 35-50 s for the file: Verilator build 15-25 s
(``-O0``: the model is tiny, C++ compile time dominates), z3 ``derive`` 5-7 s, 200 harness
runs 9-11 s, magma + graph building ~3 s.
"""
from __future__ import annotations

import random
import subprocess
import time
from collections import Counter
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from canal_testutil import IO_CORE

from canal.graph import NodeKind, Side
from canal.passes import InterconnectParams, build_uniform
from canal.paths import walk_path
from canal.rtl import array_circuit, array_netlist, compile_array, top_port_name
from canal.smt import (InterconnectModel, NodeValue, decode_selects, encode_selects,
                       spots_from_configs)
from garnet.collateral import TopPort
from mapper.sim.verilator import Harness, harness_source, run_harness

N, S, E = Side.NORTH, Side.SOUTH, Side.EAST

N_CONFIGS = 200
CYCLES = 64
MAX_LAG = 32
SEED = 194
#: (register enable probability, probability that an SB_OUT selects a core output; None =
#: uniform over its fan-in) of the configurations, used round-robin
PROFILES = [(0.5, None), (0.5, 0.1), (0.0, 0.05), (0.9, 0.1)]
P_OUT_OF_RANGE = 0.1
#: every PLANT_EVERY-th configuration gets a planted switch-box loop (module docstring)
PLANT_EVERY = 5
ZERO = NodeValue(None, 0)

#: fabric port of the IO core -> the top-level port wired to it inside the core
TOP_OF = {"io2f_16": "glb2io_16", "io2f_1": "glb2io_1",
          "f2io_16": "io2glb_16", "f2io_1": "io2glb_1"}


# -- fixtures -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def io4():
    """4x4 array of IO cores, default parameters (pipeline registers on every SB_OUT)."""
    return build_uniform(InterconnectParams(4, 4), lambda x, y: IO_CORE)


@pytest.fixture(scope="module")
def model4(io4):
    spots = spots_from_configs(io4.configs)
    return InterconnectModel(io4.graphs, spots)


@pytest.fixture(scope="module")
def harness4(io4, tmp_path_factory) -> Harness:
    """The Verilator stream harness of ``io4`` (one build for the module)."""
    d: Path = tmp_path_factory.mktemp("smt_rtl")
    t0 = time.perf_counter()
    arr = array_circuit(io4)
    verilog = compile_array(arr, d)
    ports = [TopPort("CLK", "in", 1), TopPort("RESET", "in", 1)]
    ports += [TopPort(n, dr, w) for n, dr, w in array_netlist(io4).ports]
    src, ins, outs = harness_source(arr.name, ports)
    (d / "harness.cpp").write_text(src)
    cmd = ["verilator", "--cc", "--exe", "--build", "-j", "2", "-Wno-fatal", "-Wno-lint",
           "-Wno-style", "-Wno-UNOPTFLAT", "--no-decoration", "--top-module", arr.name,
           "-Mdir", str(d / "obj"), "-o", str(d / "harness"),
           "-MAKEFLAGS", "OPT_FAST=-O0 OPT_SLOW=-O0 OPT_GLOBAL=-O0",
           str(verilog), str(d / "harness.cpp")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    widths = {p.name: p.width for p in ports}
    return Harness(d, arr.name, d / "harness", ins, outs, widths, "smt_rtl", False,
                   time.perf_counter() - t0, 1)


# -- helpers --------------------------------------------------------------------------------

def _top(io4, nid: str) -> str:
    n = next(g.nodes[nid] for g in io4.graphs.values() if nid in g.nodes)
    return top_port_name(TOP_OF[n.name], n.x, n.y)


def random_selects(model: InterconnectModel, rng: random.Random, p_reg: float,
                   p_core: float | None) -> dict[str, int]:
    """A random value for every select field (module docstring, "Configurations")."""
    sel: dict[str, int] = {}
    for nid in sorted(model.spots):
        fi = model.fanin[nid]
        width = model.select_width(nid)
        kind = model.kind[nid]
        if kind is NodeKind.RMUX:
            reg = next(i for i, f in enumerate(fi) if model.kind[f] is NodeKind.REG)
            sel[nid] = reg if rng.random() < p_reg else 1 - reg
        elif kind is NodeKind.SB and p_core is not None:
            core = [i for i, f in enumerate(fi) if model.is_source(f)]
            other = [i for i in range(len(fi)) if i not in core]
            sel[nid] = rng.choice(core if rng.random() < p_core else other)
        elif len(fi) < (1 << width) and rng.random() < P_OUT_OF_RANGE:
            sel[nid] = rng.randrange(len(fi), 1 << width)
        else:
            sel[nid] = rng.randrange(len(fi))
    return sel


def plant_loop(io4, model: InterconnectModel, sel: dict[str, int], rng: random.Random,
               registered: bool) -> list[str]:
    """Close a switch-box loop in ``sel`` (in place): the shortest cycle through a random SB_OUT
    of a random width, every register mux on it bypassed (``registered``: one of them takes
    its register instead), and the connection box of a tile on it reading the loop. Returns
    the loop's nodes."""
    g = io4.graphs[rng.choice(sorted(io4.graphs))]
    nxg = g.to_networkx()
    nxg.remove_nodes_from([n for n in g.nodes if g.nodes[n].kind is NodeKind.REG])
    outs = sorted(n for n in g.nodes if n.startswith("SB:") and n.endswith(":OUT"))
    while True:
        start = rng.choice(outs)
        back = [nx.shortest_path(nxg, nxt, start) for nxt in nxg.successors(start)
                if nx.has_path(nxg, nxt, start)]
        if back:
            break
    loop = [start] + min(back, key=len)[:-1]          # loop[i] feeds loop[i + 1]
    for i, n in enumerate(loop):
        if len(model.fanin[n]) > 1:
            sel[n] = model.fanin[n].index(loop[i - 1])
    if registered:
        rmux = rng.choice([n for n in loop if model.kind[n] is NodeKind.RMUX])
        sel[rmux] = next(i for i, f in enumerate(model.fanin[rmux])
                         if model.kind[f] is NodeKind.REG)
    sb_in = rng.choice([n for n in loop if n.endswith(":IN")])
    x, y = g.nodes[sb_in].x, g.nodes[sb_in].y
    cb = next(n for n in g.nodes if g.nodes[n].kind is NodeKind.PORT and g.fanin[n]
              and (g.nodes[n].x, g.nodes[n].y) == (x, y))
    sel[cb] = model.fanin[cb].index(sb_in)
    return loop


def classify(model: InterconnectModel, sink: str, sel: dict[str, int]) -> str:
    """How the selected fan-in chain of ``sink`` ends (a walk independent of z3): ``source``,
    ``out_of_range`` (a mux select >= its fan-in), ``edge`` (an SB_IN at the array edge),
    ``loop_reg`` (a loop through an enabled register) or ``loop_comb`` (a combinational loop)."""
    path: list[str] = []
    n = sink
    while True:
        if model.is_source(n):
            return "source"
        path.append(n)
        nxt = model.selected(n, sel)
        if nxt is None:
            return "out_of_range" if model.fanin[n] else "edge"
        if nxt in path:
            loop = path[path.index(nxt):]
            return "loop_reg" if any(model.kind[x] is NodeKind.REG for x in loop) else \
                "loop_comb"
        n = nxt


def rtl_candidates(out: np.ndarray, srcs: list[str], stream: np.ndarray) -> set[NodeValue]:
    """Every ``NodeValue`` consistent with the sampled sink ``out`` (``[CYCLES]``) given the
    source streams ``stream`` (``[len(srcs), CYCLES]``): module docstring, "What is compared"."""
    cands: set[NodeValue] = set()
    if not out.any():
        cands.add(ZERO)
    for lag in range(MAX_LAG + 1):
        if out[:lag].any():
            break                      # a register chain of `lag` stages starts at 0
        hit = (stream[:, :CYCLES - lag] == out[lag:]).all(axis=1)
        cands.update(NodeValue(srcs[k], lag) for k in np.flatnonzero(hit))
    return cands


def mismatches(expected: dict[str, NodeValue | None], observed: dict[str, set[NodeValue]]
               ) -> list[tuple[str, NodeValue, set[NodeValue]]]:
    """Sinks whose determined expected value is not the RTL's unique candidate."""
    return [(s, v, observed[s]) for s, v in expected.items()
            if v is not None and observed[s] != {v}]


def simulate(io4, h: Harness, bitstream, sources: dict[int, list[str]],
             sinks: list[str], rng: random.Random, workdir: Path
             ) -> dict[str, set[NodeValue]]:
    """Run one configuration: fresh streams on every source, RTL candidates of every sink."""
    streams: dict[int, np.ndarray] = {}
    for width, srcs in sources.items():
        if width == 1:
            streams[width] = np.array([[rng.getrandbits(1) for _ in range(CYCLES)]
                                       for _ in srcs], dtype=np.int64)
        else:
            vals = rng.sample(range(1, 1 << width), len(srcs) * CYCLES)   # distinct, nonzero
            streams[width] = np.array(vals, dtype=np.int64).reshape(len(srcs), CYCLES)
    inputs = {_top(io4, s): streams[w][k] for w, srcs in sources.items()
              for k, s in enumerate(srcs)}
    run = run_harness(h, bitstream, inputs, [_top(io4, s) for s in sinks], CYCLES, workdir)
    assert run.readback_mismatches == []
    assert run.cycles == CYCLES
    return {s: rtl_candidates(run.outputs[_top(io4, s)], sources[int(s.split(":")[1])],
                              streams[int(s.split(":")[1])]) for s in sinks}


# -- tests ----------------------------------------------------------------------------------

def test_every_source_and_sink_reaches_the_top_level(io4, model4):
    """Every core output of the routing graphs is an IO core's ``io2f_*`` (driven from a top
    input) and every core input an ``f2io_*`` (observed at a top output), 16 of each per
    width, every one with a distinct top port of its width."""
    net_ports = {n: (d, w) for n, d, w in array_netlist(io4).ports}
    for width, g in io4.graphs.items():
        srcs = [n for n in g.nodes if model4.is_source(n)]
        sinks = [n for n in g.nodes if g.nodes[n].kind is NodeKind.PORT and g.fanin[n]]
        assert len(srcs) == len(sinks) == 16
        assert {g.nodes[n].name for n in srcs} == {f"io2f_{width}"}
        assert {g.nodes[n].name for n in sinks} == {f"f2io_{width}"}
        assert len(g.fanin[sinks[0]]) == 20
        assert {net_ports[_top(io4, n)] for n in srcs} == {("in", width)}
        assert {net_ports[_top(io4, n)] for n in sinks} == {("out", width)}
        assert len({_top(io4, n) for n in srcs + sinks}) == 32


def test_model_equals_rtl_on_random_configs(io4, model4, harness4, tmp_path):
    """For N_CONFIGS random configurations every sink the model determines shows in the RTL
    exactly the model's source with the model's latency, or constant 0 (module docstring);
    then the negative controls."""
    t0 = time.perf_counter()
    rng = random.Random(SEED)
    sources = {w: sorted(n for n in g.nodes if model4.is_source(n))
               for w, g in io4.graphs.items()}
    sinks = sorted(n for g in io4.graphs.values() for n in g.nodes
                   if g.nodes[n].kind is NodeKind.PORT and g.fanin[n])
    kinds: Counter = Counter()
    values: Counter = Counter()
    compared = excluded = 0
    max_latency = 0
    bad = []
    z3_s = sim_s = 0.0
    control = None
    loops: list[int] = []
    loop_rtl_zero = 0
    for k in range(N_CONFIGS):
        sel = random_selects(model4, rng, *PROFILES[k % len(PROFILES)])
        if k % PLANT_EVERY == PLANT_EVERY - 1:
            loop = plant_loop(io4, model4, sel, rng, registered=k % (2 * PLANT_EVERY) < PLANT_EVERY)
            loops.append(len(loop))
        bitstream = encode_selects(sel, model4.spots)
        decoded = decode_selects(bitstream, model4.spots)
        assert decoded == sel
        ta = time.perf_counter()
        derived = model4.derive(sinks, decoded)
        tb = time.perf_counter()
        observed = simulate(io4, harness4, bitstream, sources, sinks, rng, tmp_path)
        z3_s += tb - ta
        sim_s += time.perf_counter() - tb
        for s in sinks:
            kind = classify(model4, s, decoded)
            kinds[kind] += 1
            v = derived[s]
            assert (v is None) == (kind == "loop_comb"), (k, s, kind, v)
            if v is None:
                excluded += 1
                loop_rtl_zero += ZERO in observed[s]
                continue
            compared += 1
            values["zero" if v.source is None else f"lat{min(v.latency, 3)}"] += 1
            max_latency = max(max_latency, v.latency)
        bad += [(k, *m) for m in mismatches(derived, observed)]
        if control is None and k % len(PROFILES) == 0 and \
                sum(1 for s in sinks if derived[s] and derived[s].latency >= 1) >= 2:
            control = (sel, bitstream, derived, observed)
    print(f"\nSMT == RTL: {N_CONFIGS} configs, {compared} sinks compared, {excluded} excluded "
          f"(combinational loops; the RTL shows 0 on {loop_rtl_zero}); chain ends {dict(kinds)}; values {dict(values)}; max latency "
          f"{max_latency}; planted loops of {sorted(set(loops))} nodes; z3 {z3_s:.1f} s, simulation {sim_s:.1f} s, Verilator build "
          f"{harness4.build_seconds:.1f} s, loop {time.perf_counter() - t0:.1f} s")
    assert bad == [], f"{len(bad)} disagreements, first: {bad[:5]}"
    assert compared + excluded == N_CONFIGS * len(sinks) == 6400
    assert 0 < excluded < 0.1 * compared
    assert max_latency < MAX_LAG
    # every kind of value and chain end was exercised
    assert min(values[k] for k in ("zero", "lat0", "lat1", "lat2", "lat3")) >= 20, values
    assert min(kinds[k] for k in ("source", "out_of_range", "edge")) >= 100, kinds
    assert min(kinds[k] for k in ("loop_reg", "loop_comb")) >= N_CONFIGS // PLANT_EVERY // 2

    # -- negative controls: the comparison must be able to fail --
    assert control is not None
    sel, bitstream, derived, observed = control
    assert mismatches(derived, observed) == []
    lat = next(s for s in sinks if derived[s] and derived[s].latency >= 1)
    src = next(s for s in sinks if derived[s] and derived[s].source and s != lat)
    zero = next(s for s in sinks if derived[s] == ZERO)
    wrong = dict(derived)
    wrong[lat] = NodeValue(derived[lat].source, derived[lat].latency + 1)
    other = next(x for x in sources[int(src.split(":")[1])] if x != derived[src].source)
    wrong[src] = NodeValue(other, derived[src].latency)
    wrong[zero] = NodeValue(sources[int(zero.split(":")[1])][0], 0)
    assert sorted(m[0] for m in mismatches(wrong, observed)) == sorted([lat, src, zero])
    # the model of a configuration one register select away (a wrong decode of the bitstream)
    chain = model4.cone([lat], sel)
    rmux = next(x for x in chain if model4.kind[x] is NodeKind.RMUX)
    off = dict(sel)
    off[rmux] = 1 - sel[rmux]
    assert decode_selects(bitstream, model4.spots)[rmux] == sel[rmux]
    assert lat in {m[0] for m in mismatches(model4.derive(sinks, off), observed)}


def test_prove_hand_route_and_flipped_selects(ic4):
    """``prove`` on a routed bitstream of the pass-through array: the route holds; one flipped
    select breaks exactly the flipped node and the nodes after it."""
    g = ic4.graphs[16]
    spots = spots_from_configs(ic4.configs)
    model = InterconnectModel(ic4.graphs, spots)
    source, sink = "PORT:16:0:1:io2f_16", "PORT:16:3:0:f2io_16"
    path = walk_path(g, source, [E, S, E, N, N, E], sink, registers=[2])
    sel = decode_selects(ic4.route_bitstream({"data": [path]}), spots)
    expected = {}
    latency = 0
    for n in path[1:]:
        latency += g.nodes[n].kind is NodeKind.REG
        expected[n] = NodeValue(source, latency)
    assert expected[sink] == NodeValue(source, 1)
    res = model.prove(expected, sel)
    assert res.proved and res.violations == []
    assert res.select_vars == sum(1 for n in path if len(g.fanin[n]) > 1) == 13

    # the register mux of hop 2 set to bypass: latency 0 from that mux on
    rmux = path[path.index("REG:16:1:2:EAST:0") + 1]
    assert rmux == "RMUX:16:1:2:EAST:0" and sel[rmux] == 1
    res = model.prove(expected, {**sel, rmux: 0})
    assert not res.proved
    assert [v.node for v in res.violations] == path[path.index(rmux):]
    assert {v.actual for v in res.violations} == {NodeValue(source, 0)}

    # the first switch box reads the west array edge (no driver) instead of the core: 0
    first = path[1]
    edge = next(i for i, f in enumerate(g.fanin[first])
                if g.nodes[f].kind is NodeKind.SB and not g.fanin[f])
    res = model.prove(expected, {**sel, first: edge})
    assert [v.node for v in res.violations] == path[1:]
    assert {v.actual.source for v in res.violations} == {None}

    # the connection box with an out-of-range select (fan-in 20, 5-bit field): constant 0
    assert len(g.fanin[sink]) == 20 and model.select_width(sink) == 5
    res = model.prove(expected, {**sel, sink: 27})
    assert [(v.node, v.actual) for v in res.violations] == [(sink, ZERO)]
    assert model.prove({sink: ZERO}, {**sel, sink: 27}).proved
