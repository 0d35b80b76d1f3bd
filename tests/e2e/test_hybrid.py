"""Issue 33, hybrid acceptance: on a ready-valid array with ONE static track and a router per
tile (configs/tiny_hybrid.toml, 5x4), the nets the static track cannot hold overflow to the
dynamic layer and the app still runs bit-exact in Verilator under random stalls; the same
array without routers reports the track shortage. Also the overflow policy itself
(mapper.backend.dynamic: lowest activity x fanout first) and the bad inputs. (The same run
with 2 flits per word, model cycles equal to the RTL's, is bench/bench_hybrid_flits.py; the
RTL of multi-flit words is tests/canal/test_dynamic_array.py.)"""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from canal.fabric_name import parse_fabric_name
from cgra.errors import ConfigError, RoutingError
from garnet.build import generate
from garnet.params import load_toml
from garnet.sta import liberty
from mapper.backend.dynamic import overflow_rank, stream_activity
from mapper.backend.pipeline import unpipelined_timing
from mapper.backend.route import CongestionError, route_design
from mapper.collateral import load_collateral
from mapper.flow import run_stages
from mapper.params import AppParams, FlowParams, RunParams
from mapper.stages import load_packed, load_placement, load_routing

CGRA = Path(sys.executable).with_name("cgra")
ROOT = Path(__file__).resolve().parents[2]
APP = ("brighten_blur", "--unroll", "2", "--size", "16")


def _cgra(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(CGRA), *map(str, args)], capture_output=True, text=True)


@pytest.fixture(scope="module")
def hybrid(design_dir) -> Path:
    return design_dir("tiny_hybrid")


@pytest.fixture(scope="module")
def measured(hybrid) -> Path:
    """configs/tiny_hybrid.toml as shipped: the measured delay model (its RvTiles and routers
    synthesised and timed, garnet.sta.measure), generated beside the session's hybrid design
    (the same RTL, so the two share one Verilator model)."""
    out = hybrid.parent / "tiny_hybrid_measured"
    if not (out / "design.json").is_file():
        generate(load_toml(ROOT / "configs" / "tiny_hybrid.toml"), out, rules=True,
                 rules_dir=ROOT / "build" / "rules", jobs=2,
                 config_file="configs/tiny_hybrid.toml")
    return out


@pytest.fixture(scope="module")
def static_twin(hybrid, tmp_path_factory) -> Path:
    """configs/tiny_hybrid.toml without its routers (the same one static track; the
    published delay table, as the session's hybrid design: tests/conftest.py)."""
    p = dataclasses.replace(load_toml(ROOT / "configs" / "tiny_hybrid.toml"),
                            name="tiny_static1", dynamic={}, timing="cascade-table")
    out = tmp_path_factory.mktemp("static1") / "tiny_static1"
    generate(p, out, rules=True, rules_dir=ROOT / "build" / "rules", jobs=2)
    return out


@pytest.fixture(scope="module")
def placed(hybrid, tmp_path_factory) -> Path:
    """brighten_blur (unroll 2) mapped, packed and placed on the hybrid array."""
    run = tmp_path_factory.mktemp("placed") / "bb2"
    for args in (("map", *APP[:3], "--size", 16, "--design", hybrid, "--out", run),
                 ("pack", run), ("place", run)):
        r = _cgra(*args)
        assert r.returncode == 0, r.stderr
    return run


def test_hybrid_design_records_its_routers(hybrid):
    doc = json.loads((hybrid / "design.json").read_text())
    assert doc["flow_control"]["dynamic"]["vcs"] == 2
    assert doc["flow_control"]["dynamic"]["width"] == 16
    name = doc["flow_control"]["dynamic"]["fabric_name"]
    assert name == "H-x1-v2-b3-f16-db"         # thesis Table 3.2: 1 static track, 2 VCs ...
    assert str(parse_fabric_name(name)) == name
    rtl = "".join(f.read_text() for f in (hybrid / "rtl").glob("*.v"))
    assert "module canal_router_v2_b3_f16_i16_fb1_ec" in rtl
    assert "module DynEject_b3_w16_t6" in rtl


def test_overflow_goes_dynamic_and_runs_bit_exact_under_stalls(hybrid, tmp_path):
    """`cgra run` on the 1-track hybrid: nets overflow to the routers, the output equals numpy
    and Halide under random stalls (two seeds) and without; the summary names the dynamic
    nets; every dynamic net has no static path and the tokens balancing gave it; the
    bitstream proves (static routes) and checks (every word a config field of the design)."""
    cycles = {}
    for seed in (1, 2):
        out = tmp_path / f"s{seed}"
        r = _cgra("run", *APP, "--design", hybrid, "--out", out, "--stall-seed", seed)
        assert r.returncode == 0, r.stderr
        assert "15x15 output matches numpy and Halide bit-exactly" in r.stdout
        assert "hybrid: 5 net(s) overflowed to the dynamic layer (static tracks full)" \
            in r.stdout
        rep = json.loads((out / "run_report.json").read_text())
        cycles[seed] = rep["handshake"]["cycles"]
        # the cycle model of both layers (canal.rv_netsim + canal.netsim's routers)
        # predicts the RTL's cycles exactly
        assert rep["handshake"]["model_cycles"] == cycles[seed]
        assert rep["dynamic"]["nets"] == 5
    assert cycles[1] != cycles[2]
    pipe = json.loads((tmp_path / "s1" / "pipelined.json").read_text())
    dyn = {d["name"]: d for d in pipe["routing"]["dynamic"]}
    assert len(dyn) == 5 and sorted(d["id"] for d in dyn.values()) == list(range(5))
    paths = {n["name"]: n["paths"] for n in pipe["routing"]["nets"]}
    assert all(paths[n] == [] for n in dyn)
    assert any(s["tokens"] > 0 for d in dyn.values() for s in d["sinks"])
    r = _cgra("run", *APP, "--design", hybrid, "--out", tmp_path / "ns", "--stall-in", 0,
              "--stall-out", 0)
    assert r.returncode == 0 and "bit-exactly" in r.stdout
    rep = json.loads((tmp_path / "ns" / "run_report.json").read_text())
    # 146 tokens per stream; a broadcast duplicates one copy per cycle at its divergence
    # router, so the array moves 0.5 tokens per cycle at best (measured: 294 cycles)
    assert rep["handshake"]["tokens"] == 146
    assert 146 / rep["handshake"]["cycles"] == pytest.approx(0.497, abs=0.01)
    bs = tmp_path / "s1" / "brighten_blur.bs"
    v = _cgra("verify", hybrid, bs)
    assert v.returncode == 0, v.stderr
    assert "5 dynamic nets: router tables walked from injection to every sink" in v.stdout
    # mutations of the dynamic layer's words are caught, naming the net and the tile
    lines = bs.read_text().splitlines()
    table = [k for k, ln in enumerate(lines) if 1 <= int(ln.split()[0], 16) >> 16 & 0xFF <= 5]
    assert len(table) >= 5
    bad = tmp_path / "s1" / "mutated.bs"
    bad.write_text("\n".join(ln for k, ln in enumerate(lines) if k != table[0]) + "\n")
    v = _cgra("verify", hybrid, bad)
    assert v.returncode == 2 and "has no table entry for it on input" in v.stderr
    dyn = [k for k, ln in enumerate(lines) if int(ln.split()[0], 16) >> 16 & 0xFF == 6]
    flipped = list(lines)
    a, d = flipped[dyn[0]].split()
    flipped[dyn[0]] = f"{a} {int(d, 16) ^ 1:08X}"        # inj_en / the first field
    bad.write_text("\n".join(flipped) + "\n")
    v = _cgra("verify", hybrid, bad)
    assert v.returncode == 2 and "dynamic net" in v.stderr and "Traceback" not in v.stderr


def test_static_array_reports_the_track_shortage(static_twin, tmp_path):
    r = _cgra("run", *APP, "--design", static_twin, "--out", tmp_path / "r")
    assert r.returncode == 2
    assert "placement attempt(s)" in r.stderr and "all failed" in r.stderr
    assert "16-bit routing did not converge" in r.stderr
    assert "Traceback" not in r.stderr


def test_policy_moves_the_lowest_ranked_congested_net(hybrid, static_twin, placed):
    """route_design on the placed design: static alone does not converge (CongestionError
    naming the nets on overused nodes); on the hybrid array the nets that moved are each the
    lowest-ranked (activity x fanout) movable net of some congestion, so their rank is never
    above the highest rank of the design; naming dynamic nets on a static array is refused."""
    coll = load_collateral(hybrid)
    packed, pl = load_packed(placed, coll), load_placement(placed, coll)
    with pytest.raises(CongestionError) as e:
        route_design(packed, pl, coll, dynamic=[])
    assert e.value.width == 16 and e.value.nets
    rr = route_design(packed, pl, coll)
    assert rr.dynamic
    rank = overflow_rank(packed, stream_activity(packed))
    assert all(v == 1.0 for v in stream_activity(packed).values())   # every stream 1 word/cycle
    assert rank["brighten_l0_d0"] == 3.0          # fanout 3
    for name, d in rr.dynamic.items():
        assert rr.nets[name].paths == {}
        assert set(d.sinks) == set(next(n for n in packed.nets if n.name == name).sinks)
    # flow 0 is the first move: the lowest-ranked congested net that is not a register's
    nets = {n.name: n for n in packed.nets}
    movable = [n for n in e.value.nets
               if all(packed.instances[i].tag != "r" for i, _ in (nets[n].source,
                                                                  *nets[n].sinks))]
    first = min(rr.dynamic.values(), key=lambda d: d.id).name
    assert first in movable
    assert rank[first] == min(rank[n] for n in movable)
    static = load_collateral(static_twin)
    with pytest.raises(RoutingError, match="has none; add a dynamic"):
        route_design(packed, pl, static, dynamic=[next(iter(rr.dynamic))])


def test_column_range_on_a_hybrid_array_is_refused(hybrid, tmp_path):
    """A column range (or --duplicate) would route flows on part of the mesh: refused with one
    line before any work."""
    p = RunParams(AppParams("pointwise", 16, 16), hybrid, tmp_path / "r",
                  FlowParams(columns=(0, 2)))
    with pytest.raises(ConfigError, match="has a dynamic layer .* a column range is not "
                                          "supported on a hybrid array"):
        run_stages(p, "pipeline")


def test_the_measured_model_times_ready_valid_tiles_and_routers(measured):
    """Issue 40 item 3 on a ready-valid array: every tile measured is an RvTile; per class and
    width a ready hop (one tile of a ready chain) and a data/valid hop per side pair; the
    ready chain through the wrapped PE and MEM; the routers' own stage slower than any hop;
    the FIFO site's clock-to-Q and output mux as the register class."""
    doc = json.loads((measured / "timing.json").read_text())
    t = doc["table"]
    assert doc["source"] == "measured" and t["_measured"]["liberty"] == "cgra_le65"
    tiles = t["_measured"]["tiles"]
    assert len(tiles) == 3 and all(m.startswith("RvTile_") for m in tiles)
    assert {v["tclass"] for v in tiles.values()} == {"io", "mem", "pe"}
    assert set(t["ready_hop"]) == {"io", "mem", "pe"}
    for tc, by_w in t["ready_hop"].items():
        assert set(by_w) == {"1", "16"} and all(v > 0 for v in by_w.values())
        assert all(len(t["switch_box_hop"][tc][w]) == 12 for w in by_w)
    assert set(t["ready_through_core"]) == {"mem", "pe"}
    worst_hop = max(v for by_w in t["switch_box_hop"].values() for d in by_w.values()
                    for v in d.values())
    assert min(t["ready_through_core"].values()) > max(
        v for d in t["ready_hop"].values() for v in d.values())
    assert set(t["router"]) == {"io", "mem", "pe"}
    assert min(t["router"].values()) > worst_hop
    # a FIFO site's clock-to-Q and output mux: more than a flip-flop, less than a hop
    assert liberty.DFF_CLK_Q_FO4 * liberty.FO4_PS < t["register_mux"] < worst_hop
    assert doc["classes"]["reg"] == t["register_mux"]


def test_a_net_on_the_dynamic_layer_is_timed_at_the_routers_stage(measured, tmp_path):
    """brighten_blur on the measured hybrid: bit-exact; its nets on the dynamic layer make
    the routers' measured stage the critical path, which no route register splits, and the
    report says so; the ready chains are in the STA (mapper.backend.pipeline._ready_chains)."""
    out = tmp_path / "m"
    r = _cgra("run", *APP, "--design", measured, "--out", out)
    assert r.returncode == 0, r.stderr
    assert "15x15 output matches numpy and Halide bit-exactly" in r.stdout
    assert "measured (OpenSTA" in r.stdout
    rep = json.loads((out / "pnr_report.json").read_text())
    router = json.loads((measured / "timing.json").read_text())["table"]["router"]
    tim = rep["timing"]
    assert tim["period_ps"] in [round(v, 2) for v in router.values()]
    assert tim["fmax_mhz"] == pytest.approx(1e6 / tim["period_ps"], abs=0.01)
    assert tim["critical_path"][0]["node"].startswith("RTR:")
    assert "the routers' own stage on the dynamic layer" in tim["target_missed"]
    assert "no route register can split it" in tim["target_missed"]
    # the ready wires are timed too: with no FIFO site enabled the critical path is a ready
    # chain from the output socket back to the input socket through the wrapped cores'
    # fire logic, longer than any data path; the same design on the model without its
    # ready figures is faster
    pipe = json.loads((out / "pipelined.json").read_text())
    path = [n for n, _ in pipe["unpipelined"]["path"]]
    assert path[0].startswith("RDY:PORT:") and path[0].endswith(":f2io_16")
    assert path[-1].startswith("RDY:PORT:") and path[-1].endswith(":io2f_16")
    assert any(n.endswith((":data0", ":data1", ":res")) for n in path)
    coll = load_collateral(measured)
    packed = load_packed(out, coll)
    placement = load_placement(out, coll, packed)
    routing = load_routing(out, coll, packed, placement)
    with_ready = unpipelined_timing(packed, placement, routing, coll)
    assert with_ready.period_ps == pytest.approx(pipe["unpipelined"]["period_ps"], abs=0.01)
    coll = dataclasses.replace(coll, timing=dataclasses.replace(coll.timing, table={
        k: v for k, v in coll.timing.table.items()
        if k not in ("ready_hop", "ready_through_core")}))
    data_only = unpipelined_timing(packed, placement, routing, coll)
    assert not any(n.startswith("RDY:") for n, _ in data_only.path)
    assert with_ready.period_ps > data_only.period_ps
