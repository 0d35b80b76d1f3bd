"""The pond end to end (issue 39 item 4): configs/small_pond.toml (every PE tile holds the PE
and Lake's pond_32x16 register file, AHA paper Sec. 4.2) at 6x6 -- 20 PE tiles with ponds,
5 MEM tiles: a shorter Verilator build than 8x8 -- runs gaussian on a 32x32 image on the
generated RTL, bit-exact with numpy and Halide, with both row buffers (30-cycle delay lines)
in ponds: no MEM tile, where the same design mapped without the pond needs two. unsharp and
a DNN layer (resnet_layer's accumulators in ponds) with and without the pond at 8x8:
bench/bench_pond.py."""
from __future__ import annotations

import dataclasses
import json
import pathlib

import pytest

from garnet.build import generate
from garnet.params import load_toml, validate
from mapper.collateral import load_collateral
from mapper.flow import run_app, run_map
from mapper.params import AppParams, RunParams
from mapper.stages import read_app

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pond_design(tmp_path_factory) -> pathlib.Path:
    """configs/small_pond.toml at 6 x 6 (rules from build/rules)."""
    params = dataclasses.replace(load_toml(ROOT / "configs" / "small_pond.toml"), width=6,
                                 height=6, name="small_pond_6x6")
    validate(params)
    out = tmp_path_factory.mktemp("pond") / "small_pond_6x6"
    generate(params, out, rules=True, rules_dir=ROOT / "build" / "rules", jobs=2,
             config_file="configs/small_pond.toml")
    return out


def test_gaussian_row_buffers_in_ponds_bit_exact(pond_design, tmp_path):
    pe = json.loads((pond_design / "pe.json").read_text())
    assert (pe["pond"]["lake"]["preset"], pe["pond"]["lake"]["capacity_words"],
            pe["pond"]["prefix"]) == ("pond_32x16", 32, "pond_")
    r = run_app(RunParams(AppParams("gaussian", 32, 32), pond_design, tmp_path / "pond"))
    assert r.report["match"] == {"numpy": True, "halide": True}
    with_pond = read_app(tmp_path / "pond")["counts"]
    assert (with_pond["mem"], with_pond["pond"], with_pond["reg"], with_pond["pe"]) == \
        (0, 2, 6, 18)
    # the ponds sit on PE tiles and the bitstream programs them through the tile's fields
    sites = json.loads((tmp_path / "pond" / "placement.json").read_text())["sites"]
    coll = load_collateral(pond_design)
    assert {coll.tiles[tuple(sites[f"pond_{k}"])].tag for k in (0, 1)} == {"p"}
    bs = json.loads((tmp_path / "pond" / "bitstream.json").read_text())
    pond_fields = {f for e in bs["entries"] for f in e["fields"] if f.startswith("pond_")}
    assert {"pond_in0_enable", "pond_out0_enable", "pond_out0_sched_offset"} <= pond_fields
    # the same design mapped without the pond: both row buffers on MEM tiles
    without = run_map(tmp_path / "no_pond", coll, AppParams("gaussian", 32, 32,
                                                            pond=False)).counts()
    assert (without["mem"], without.get("pond", 0), without["reg"], without["pe"]) == \
        (2, 0, 6, 18)
