"""The column configuration path's RTL (Icarus) performs exactly the writes of the GLB image
(:func:`garnet.glb.confignet.expand`) in the cycles the model counts
(:func:`garnet.glb.confignet.simulate`), with pipeline registers and row multicast."""
from __future__ import annotations

import random
import shutil
import subprocess

import pytest

from cgra.config import config_address
from garnet.glb.confignet import expand, glb_image, simulate
from garnet.glb.params import GlbParams
from garnet.glb.rtl import column_verilog

H, R = 12, 4


def _tb(words: list[int]) -> str:
    n = len(words) + H // R + 3
    lines = ["module tb;", "  reg clk = 0; reg rst = 1; reg v = 0; reg [63:0] w = 0;",
             f"  wire [{H - 1}:0] wr;"]
    lines += [f"  wire [31:0] a{y}, d{y};" for y in range(H)]
    conns = ", ".join([".clk(clk)", ".rst(rst)", ".in_valid(v)", ".in_word(w)", ".wr(wr)"]
                      + [f".addr_{y}(a{y}), .data_{y}(d{y})" for y in range(H)])
    lines.append(f"  glb_cfg_column dut ({conns});")
    lines.append("  integer c;")
    lines.append("  initial begin")
    lines.append("    #1 clk = 1; #1 clk = 0; rst = 0;")
    lines.append(f"    for (c = 0; c < {n}; c = c + 1) begin")
    lines.append("      case (c)")
    for k, word in enumerate(words):
        # read at cycle k: in the bank's read register (stage 0) during cycle k + 1
        lines.append(f"        {k + 1}: begin v = 1; w = 64'h{word:016x}; end")
    lines.append("        default: begin v = 0; w = 0; end")
    lines.append("      endcase")
    lines.append("      #1;")
    for y in range(H):
        lines.append(f'      if (wr[{y}]) $display("%0d %h %h", c, a{y}, d{y});')
    lines.append("      clk = 1; #1 clk = 0;")
    lines.append("    end")
    lines.append("    $finish;")
    lines.append("  end")
    lines.append("endmodule")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("seed,row_multicast", [(0, False), (1, True), (2, True)])
def test_column_rtl_performs_the_image(seed, row_multicast, tmp_path):
    rng = random.Random(seed)
    p = GlbParams(tiles=1, bank_words=256, config_pipeline_rows=R)
    seen, bs = set(), []
    for _ in range(60):
        a = config_address(rng.randint(0, 5), rng.randint(0, 2), 0, rng.randint(0, H - 1))
        if a not in seen:
            seen.add(a)
            bs.append((a, rng.choice([0, 3, rng.getrandbits(32)])))
    img = glb_image(p, bs, H, row_multicast)
    (tmp_path / "col.v").write_text(column_verilog(H, R))
    (tmp_path / "tb.v").write_text(_tb(img.columns[0]))
    subprocess.run([shutil.which("iverilog"), "-g2005", "-o", "s.vvp", "tb.v", "col.v"],
                   cwd=tmp_path, check=True, capture_output=True)
    out = subprocess.run([shutil.which("vvp"), "-n", "s.vvp"], cwd=tmp_path, check=True,
                         capture_output=True, text=True).stdout
    writes = [tuple(int(x, 16) if i else int(x) for i, x in enumerate(ln.split()))
              for ln in out.splitlines() if len(ln.split()) == 3]
    assert sorted((a, d) for _c, a, d in writes) == expand(img, H) == sorted(bs)
    run = simulate(p, bs, H, "unicast", row_multicast)
    assert max(c for c, _a, _d in writes) + 1 == run.cycles
    if row_multicast:
        assert len(img.columns[0]) < len(bs)
