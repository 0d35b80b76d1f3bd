"""Low-unroll duplication end to end (Cascade §V-C4, issue 41 item 9; mapper.duplicate) on the
8x8 array: gaussian at unroll 2 compiled at unroll 1 for a 64x33 strip, placed and routed on
the 4-column sub-array, its configuration copied to columns 4..7, each copy fed its half of
the image; the Verilator output equals numpy and Halide bit for bit. The CLI refuses a
sub-array that breaks the tile pattern with exit status 2 and one line."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mapper.flow import run_app
from mapper.params import AppParams, DuplicateParams, RunParams
from mapper.stages import read_app

CGRA = Path(sys.executable).with_name("cgra")


def test_gaussian_unroll_2_duplicated_bit_exact(small_design, harness, tmp_path):
    r = run_app(RunParams(AppParams("gaussian", 64, 64, 2), small_design, tmp_path / "g",
                          duplicate=DuplicateParams()))
    rep = r.report
    assert rep["match"] == {"numpy": True, "halide": True}
    assert r.output.shape == (62, 62)
    assert rep["unroll"] == 2 and rep["size"] == [64, 64]
    d = rep["duplication"]
    assert (d["copies"], d["columns"], d["sub_array"], d["offsets"]) == (2, 4, [0, 4, 0, 8],
                                                                        [0, 4])
    assert (d["strip_height"], d["strip_rows"]) == (33, 31)
    assert d["pnr_seconds"] > 0 and d["compared"]["tiles"] == 4 * 8
    # one copy is the unroll-1 app on its strip; both copies are on the array
    assert read_app(tmp_path / "g")["params"]["height"] == 33
    assert read_app(tmp_path / "g")["params"]["unroll"] == 1
    pnr = json.loads((tmp_path / "g" / "pnr_report.json").read_text())
    sites = pnr["placement"]
    for name, (x, y) in sites.items():
        if not name.endswith("_dup1"):
            assert x < 4 and sites[f"{name}_dup1"] == [x + 4, y]
    assert rep["resources"]["used"]["I"] == 4 and rep["resources"]["used"]["m"] == 2 * 2
    # the tile and interconnect configuration is copy 0's at x + 4 (address byte 1 = x)
    words = r.flow.bitstream.pairs()
    c0 = {(a & ~0xFF00, (a >> 8) & 0xFF, v) for a, v in words if (a >> 8) & 0xFF < 4}
    c1 = {(a & ~0xFF00, ((a >> 8) & 0xFF) - 4, v) for a, v in words if (a >> 8) & 0xFF >= 4}
    assert c0 == c1 and len(c0) == len(words) // 2
    # two rows of strips in parallel: about half the stream of one 64x64 frame at unroll 1
    assert 64 * 33 <= rep["cycles"]["stream"] < 64 * 64 * 2 // 3


def test_cli_refuses_a_sub_array_that_breaks_the_tile_pattern(small_design, tmp_path):
    r = subprocess.run([str(CGRA), "run", "gaussian", "--design", str(small_design), "--out",
                        str(tmp_path / "run"), "--unroll", "2", "--duplicate", "--sub-array",
                        "3"], capture_output=True, text=True)
    assert r.returncode == 2
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("error: sub-array of 3 columns does not tile design small: tile "
                           "(0, 1) is p")
    assert "multiple of the tile pattern's period (4 columns)" in last
    assert not (tmp_path / "run" / "netlist.json").exists()
