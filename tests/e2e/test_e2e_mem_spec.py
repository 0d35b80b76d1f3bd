"""The architect's own MEM spec end to end (issue 39 item 1): gaussian on the 8x8 array
whose MEM tiles are configs/mem_wide8.py (a unified buffer fetching 8 words per SRAM
access), on the generated RTL in Verilator, bit-exact with numpy and Halide; buffer mapping
follows mem.json: one 2-in/2-out MEM holds both line buffers. The 4096-word dual port
written in Lake's components runs gaussian in tests/test_tutorial.py (section 4, the same
spec as configs/mem_dp4096.py: two 1-in/1-out MEMs); harris on both at 32x16:
bench/bench_spec_variants.py."""
from __future__ import annotations

import json

from mapper.flow import run_app
from mapper.params import AppParams, RunParams
from mapper.stages import read_app


def test_gaussian_on_the_fetch_width_8_buffer(small_wide8_design, tmp_path):
    mem = json.loads((small_wide8_design / "mem.json").read_text())["lake"]
    assert (mem["preset"], mem["capacity_words"], mem["fetch_width"],
            len(mem["ports"]["in"])) == ("wide8_256x128", 2048, 8, 2)
    r = run_app(RunParams(AppParams("gaussian", 64, 64), small_wide8_design, tmp_path))
    assert r.report["match"] == {"numpy": True, "halide": True}
    counts = read_app(tmp_path)["counts"]
    assert (counts["io"], counts["mem"], counts["pe"]) == (2, 1, 18)
