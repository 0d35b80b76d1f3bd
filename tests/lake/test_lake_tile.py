"""Tile-level behaviour (flush, chaining) on the Python model and Verilator, the tile
core interface, the multiplier-form RTL and the collateral."""
from __future__ import annotations

import json
import random
import shutil
import subprocess

import pytest

from cgra.config import pack_fields
from cgra.errors import ConfigError
from lake.collateral import all_collateral, collateral, spec_hash, write_collateral
from lake.config import config_fields, configure
from lake.golden import simulate
from lake.model import make_stimulus
from lake.program import delay_line, program
from lake.spec import PRESETS, preset
from lake_helpers import assert_streams_match

BACKENDS = ["model", "rtl"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_flush_restarts_controllers_mid_stream(backend, lake_backend):
    pre = "dualport_2048x16"
    progs = {"data_in_0": program([8, 6], [1, 8], 0, [1, 9], 2),
             "data_out_0": program([8, 6], [1, 8], 0, [1, 9], 12)}
    rng = random.Random(4)
    vals = [rng.randrange(65536) for _ in range(48)]
    first = make_stimulus(pre, progs, {"data_in_0": vals}, stall=[1, 0, 1], seed=8)
    again = make_stimulus(pre, progs, {"data_in_0": vals}, stall=[1, 1, 0], seed=9)
    cut = len(first.records) // 2
    flush = dict(first.records[cut], RESET=0, clk_en=0, flush=1)
    first.records = first.records[:cut] + [flush] + again.records[1:]
    got = lake_backend(backend)(pre, configure(pre, progs), first)
    golden = simulate(progs, {"data_in_0": vals})
    # after the flush the tile replays the whole program from cycle 0
    assert_streams_match(golden, got)


@pytest.mark.parametrize("backend", BACKENDS)
def test_chained_ponds_form_a_64_word_delay_line(backend, lake_backend):
    pre = "pond_32x16"
    w, r = delay_line(40, 128, 64)  # needs 64 words: two 32-word ponds
    assert w.extents == (64, 2)
    progs = {"data_in_0": w, "data_out_0": r}
    with pytest.raises(ConfigError, match="address-range"):
        configure(pre, progs)
    vals = [(31 * k + 7) % 65536 for k in range(128)]
    run = lake_backend(backend)
    tile0 = run(pre, configure(pre, progs, chain_index=0, chain_length=2),
                make_stimulus(pre, progs, {"data_in_0": vals}, seed=1))
    # tile 0 answers only for its own addresses 0..31
    assert len(tile0["data_out_0"]) == 64
    stim1 = make_stimulus(pre, progs, {"data_in_0": vals}, seed=2,
                          chain_streams={"0": dict(tile0["data_out_0"])})
    tile1 = run(pre, configure(pre, progs, chain_index=1, chain_length=2), stim1)
    golden = simulate(progs, {"data_in_0": vals})
    assert_streams_match(golden, tile1)
    assert [v for _, v in tile1["data_out_0"]] == vals


@pytest.mark.parametrize("name", list(PRESETS))
def test_core_spec_matches_circuit(name):
    import lake

    cs = lake.core_spec(name)
    circ = cs.build()
    assert cs.tag == "m" and cs.name == circ.name == f"lake_{name}"
    assert cs.build() is circ  # cached
    for p in cs.ports:
        port = getattr(circ, p.name)
        assert len(port) == p.width if p.width > 1 else True
    for f in cs.config_fields:
        assert len(getattr(circ, f"config_{f.name}")) == f.width
    for n in ("CLK", "RESET", "clk_en", "flush"):
        assert hasattr(circ, n)
    assert cs.info["preset"] == name
    # the tile packs fields into 32-bit registers
    assert pack_fields(list(cs.config_fields))


def test_multiplier_form_rtl_generates_and_lints(tmp_path):
    from lake.rtl import compile_verilog

    path = compile_verilog("pond_32x16", str(tmp_path / "pond_mul"), form="multiplier")
    text = open(path).read()
    assert "module lake_pond_32x16_multiplier" in text and "*" in text
    verilator = shutil.which("verilator")
    assert verilator, "verilator is required (make install)"
    res = subprocess.run([verilator, "--lint-only", "-Wno-fatal", "-Wno-WIDTH", path],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]


def test_collateral_contents(tmp_path):
    dual, pub, pond = (collateral(n) for n in ("dualport_2048x16", "pub_512x64", "pond_32x16"))
    assert dual["capacity_words"] == 2048 and dual["fetch_width"] == 1
    assert pub["capacity_words"] == 2048 and pub["capacity_wide_words"] == 512
    assert pub["fetch_width"] == 4 and pub["word_width"] == 64
    assert pond["capacity_words"] == 32 and pond["storage"]["kind"] == "registers"
    assert [p["name"] for p in pub["ports"]["in"]] == ["data_in_0", "data_in_1"]
    assert [p["name"] for p in pub["ports"]["out"]] == ["data_out_0", "data_out_1"]
    assert pub["operations_per_cycle"]["storage_accesses"] == 1
    assert dual["operations_per_cycle"]["storage_accesses"] == 2
    for c in (dual, pub, pond):
        assert c["max_dimensionality"] == 6 and c["read_latency"] == 1
        assert c["register_widths"]["schedule"] == 24
        assert [f["name"] for f in c["config_fields"]] == [
            f.name for f in config_fields(c["preset"])]
    assert dual["register_widths"]["address"] == 15 and pond["register_widths"]["address"] == 9
    # the minimum full-rate delay is realisable and one less is not
    d = pub["min_delay_full_rate"]
    w, r = delay_line(d, 128, 2048, align=4)
    configure("pub_512x64", {"data_in_0": w, "data_out_0": r})
    w, r = delay_line(d - 1, 128, 2048, align=4)
    with pytest.raises(ConfigError):
        configure("pub_512x64", {"data_in_0": w, "data_out_0": r})
    assert dual["min_delay_full_rate"] == 0
    path = write_collateral("pub_512x64", tmp_path / "mem.json")
    assert json.loads(path.read_text()) == pub
    assert set(all_collateral()) == set(PRESETS)
    assert spec_hash(preset("pub_512x64")) == pub["spec_hash"] != dual["spec_hash"]
