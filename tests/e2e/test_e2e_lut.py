"""Lookup tables end to end on the 8x8 design: the camera pipeline (three 256-entry gamma
tables in MEM tiles in lookup-table mode, contents loaded through the config bus with the
bitstream) runs on the generated RTL in Verilator and matches numpy and Halide bit for bit;
the bitstream proof checks every table word."""
from __future__ import annotations

import numpy as np
import pytest

from mapper.apps.camera_pipeline import GAMMA
from mapper.backend.verify import check_lut_contents, VerificationError, verify
from mapper.collateral import load_collateral
from mapper.flow import run_app
from mapper.params import AppParams, FlowParams, RunParams, SimOptions


def test_camera_pipeline_on_verilator(app_run, assert_gated):
    r = app_run("camera_pipeline")          # run_sim raises on any mismatch with a golden
    assert_gated(r, 12)                     # bit-exact with every unused tile gated
    assert list(r.outputs) == ["red", "green", "blue"]
    assert all(a.shape == (30, 30) for a in r.outputs.values())
    assert r.report["match"] == {"numpy": True, "halide": True}
    assert all(set(np.unique(a)) <= set(GAMMA) and len(np.unique(a)) > 20
               for a in r.outputs.values())
    packed = r.flow.pipelined.packed
    luts = {n: i for n, i in packed.instances.items() if "lut" in i.config}
    assert len(luts) == 3 and all(i.config["lut"] == list(GAMMA) for i in luts.values())
    # every bitstream word reads back over the config bus, the table words included
    assert r.sim.readback_mismatches == []
    assert sum(1 for e in r.flow.bitstream.entries if "lookup table" in e.what) == 3 * 256


def test_bitstream_proof_checks_every_table_word(app_run, small_design):
    r = app_run("camera_pipeline")
    coll = load_collateral(small_design)
    words = r.flow.bitstream.pairs()
    verify(words, r.flow.pipelined, coll)
    assert check_lut_contents(words, r.flow.pipelined, coll) == 3 * 256
    base = {xy: t.config_memory.feature for xy, t in coll.tiles.items() if t.config_memory}
    lut_words = [(a, d) for a, d in words
                 if ((a >> 8) & 0xFF, a & 0xFF) in base
                 and (a >> 16) & 0xFF >= base[((a >> 8) & 0xFF, a & 0xFF)] and d == 255]
    assert len(lut_words) >= 3              # the last gamma entry of each table
    bad = [(a, d ^ 1) if (a, d) == lut_words[0] else (a, d) for a, d in words]
    with pytest.raises(VerificationError, match=r"lookup \w+ at tile \(\d+, \d+\): word \d+ "
                                                r"\(address 0x[0-9A-F]{8}\) is 0xfe, the "
                                                r"table needs 0xff"):
        check_lut_contents(bad, r.flow.pipelined, coll)
    with pytest.raises(VerificationError, match="is not written"):
        check_lut_contents([w for w in words if w != lut_words[0]], r.flow.pipelined, coll)


def test_bayer_demosaic_pattern_roms_on_verilator(small_design, harness, tmp_path,
                                                  assert_gated):
    """Full-resolution demosaic selecting by coordinate parity: x % 2 and y % 2 come from two
    pattern ROMs per reader time (MEM tiles holding 0, 1, 0, 1, ... loaded with the
    bitstream); on astronaut, bit-exact with numpy and Halide; the proof checks the ROM words
    and refuses a flipped one."""
    r = run_app(RunParams(AppParams("bayer_demosaic", 48, 32), small_design, tmp_path,
                          FlowParams(power_gate=True), sim=SimOptions(image="astronaut")))
    assert r.report["match"] == {"numpy": True, "halide": True}
    assert_gated(r, 8)                      # every unused tile gated
    assert all(a.shape == (30, 46) for a in r.outputs.values())
    assert not np.array_equal(r.outputs["red"], r.outputs["blue"])       # a colour image
    packed = r.flow.pipelined.packed
    roms = {n: i.config for n, i in packed.instances.items() if "rom" in i.config}
    assert roms and all(c["rom"][:4] in ([0, 1, 0, 1], [1, 0, 1, 0]) for c in roms.values())
    assert not [n for n, i in packed.instances.items() if i.kind == "io_in"
                and i.config.get("input", "").startswith("__coord")]
    coll = load_collateral(small_design)
    words = r.flow.bitstream.pairs()
    n = sum(len(c["rom"]) for c in roms.values())
    assert check_lut_contents(words, r.flow.pipelined, coll) == n
    rom_entries = [e for e in r.flow.bitstream.entries if "pattern ROM" in e.what]
    assert len(rom_entries) == n
    flip = rom_entries[1]
    bad = [(a, d ^ 1) if a == flip.addr else (a, d) for a, d in words]
    with pytest.raises(VerificationError, match=r"pattern ROM rom_coord_\w+ at tile "):
        check_lut_contents(bad, r.flow.pipelined, coll)
