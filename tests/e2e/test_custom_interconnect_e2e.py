"""A custom interconnect end to end (issue 39): gaussian on the 8x8 array with diagonal
tracks (configs/small_diagonal.toml: configs/ic_diagonal.py turns tracks 3 and 4 of every
width diagonal) runs on the generated RTL in Verilator bit-exact with numpy and Halide, and
its routes use diagonal wires (the top wires SB_OUT(x, y) to SB_IN(x +- 1, y +- 1))."""
from __future__ import annotations

from itertools import pairwise

from canal.collateral import load_json
from canal.custom import diagonal_links
from mapper.flow import run_app
from mapper.params import AppParams, RunParams
from mapper.stages import read_stage


def test_gaussian_on_diagonal_tracks(small_diagonal_design, tmp_path):
    r = run_app(RunParams(AppParams("gaussian", 64, 64), small_diagonal_design, tmp_path))
    assert r.report["match"] == {"numpy": True, "halide": True}
    graphs = {w: load_json(small_diagonal_design / "routing" / f"graph_{w}.json")
              for w in (16, 1)}
    diag = {w: diagonal_links(g) for w, g in graphs.items()}
    # 4 diagonal directions x 7 x 7 destination tiles on the array, per width
    assert {w: len(d) for w, d in diag.items()} == {16: 196, 1: 196}
    doc = read_stage(tmp_path, "route", "mapper.routing/1", None)
    used = set()
    for net in doc["nets"]:
        for p in net["paths"]:
            nodes = p["nodes"]
            used |= {(a, b) for a, b in pairwise(nodes)} & diag[net["width"]]
    assert len(used) >= 1
