"""Long wires end to end (issue 39 item 3): the 8x8 array with staggered tracks of 4 tiles
(configs/small_L4.toml; canal.passes.segment_tracks) maps, routes, pipelines and runs on the
generated RTL in Verilator bit-exact with numpy and Halide; the bitstream's routes are proved
on the SMT model of the interconnect (canal.smt). Length 2 (configs/small_L2.toml), the same
code with another length, runs in `make bench` (bench/bench_long_wires.py, bit-exactness per
run; bench/bench_spec_variants.py)."""
from __future__ import annotations

import json

from mapper.flow import run_app
from mapper.params import AppParams, RunParams


def _run(design, app, out):
    r = run_app(RunParams(AppParams(app, 64, 64), design, out))
    assert r.report["match"] == {"numpy": True, "halide": True}
    assert r.report["bitstream_proof"]["proved"] is True
    return r.report


def _pass_hops(design, out) -> int:
    """Route nodes that are pass-through SB_OUTs (a single fan-in) of the run's routing."""
    g = json.loads((design / "routing" / "graph_16.json").read_text())
    single = {n["id"] for n in g["nodes"] if n["kind"] == "SB" and n["io"] == "SB_OUT"
              and len(n["fanin"]) == 1}
    routes = json.loads((out / "routing.json").read_text())
    used = {nid for net in routes["nets"] for path in net["paths"] for nid in path["nodes"]}
    return len(used & single)


def test_gaussian_on_length_4_tracks(small_l4_design, tmp_path):
    rep = _run(small_l4_design, "gaussian", tmp_path)
    assert rep["timing"]["model"] == "cascade-table"
    assert _pass_hops(small_l4_design, tmp_path) > 0          # the long wires are used


def test_unsharp_on_length_4_tracks(small_l4_design, tmp_path):
    _run(small_l4_design, "unsharp", tmp_path)
