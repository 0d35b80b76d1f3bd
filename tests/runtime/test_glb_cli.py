"""`cgra glb rtl` and `cgra glb config` through the console entry point (in-process): the
files they write, their figures, and bad input as one error line with exit 2."""
from __future__ import annotations

import json
import shutil
from pathlib import Path



ROOT = Path(__file__).resolve().parents[2]


def test_glb_rtl_writes_verilog_and_collateral(cgra, tmp_path):
    code, out, _err = cgra("glb", "rtl", "--config", ROOT / "configs" / "small_glb.toml",
                           "--out", tmp_path)
    assert code == 0
    assert "4 tiles x 2 banks x 1024 x 64 bits (64 KiB), 8 columns" in out
    assert "module glb_tile #(parameter TILE = 0)" in (tmp_path / "glb.v").read_text()
    doc = json.loads((tmp_path / "glb.json").read_text())
    assert doc["schema"] == "garnet.glb/1" and doc["capabilities"]["capacity_elements"] == 32768


def test_glb_config_of_a_run(cgra, gaussian_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(gaussian_run, run)
    code, out, _err = cgra("glb", "config", run, "--config", ROOT / "configs" / "small_glb.toml")
    assert code == 0
    n = sum(1 for ln in (run / "gaussian.bs").read_text().splitlines() if ln.strip())
    assert f"gaussian.bs: {n} words -> gaussian.glb.json" in out
    assert "unicast + row multicast" in out
    img = json.loads((run / "gaussian.glb.json").read_text())
    assert sum(len(c["words"]) for c in img["columns"].values()) == n


def test_glb_bad_inputs_are_one_line(cgra, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[glb]\ntiles = 0\n")
    code, _out, err = cgra("glb", "rtl", "--config", bad, "--out", tmp_path / "o")
    assert code == 2
    assert err.strip() == f"error: {bad}: [glb] field 'tiles' = 0: use 1..64 GLB tiles"
    run = tmp_path / "run"
    run.mkdir()
    (run / "x.bs").write_text("00000104 00020008\nnot a word\n")
    code, _out, err = cgra("glb", "config", run, "--config", ROOT / "configs" / "small_glb.toml",
                           "--height", "8")
    assert code == 2
    assert err.strip() == (f"error: {run / 'x.bs'}:2: 'not a word' is not an 'AAAAAAAA "
                           f"DDDDDDDD' bitstream word; regenerate it with `cgra bitstream`")
