"""Issue 16 item 1: the DSE area proxy (dse.area) synthesises the BFloat16 PE tile.

CIRCT writes a bit of a mux of vectors as a select of a 2-D packed array inside an index
(``_GEN_6[_GEN_25[_GEN_24][0]]``: the priority chain of ``peak.bf16.Int16ToBF16`` reads
``mag[i]`` of ``mag = neg.ite(-x, x)``); :func:`dse.area.flatten_packed` left such
nested selects 2-D and yosys 0.23 stopped with ``Unsupported expression on dynamic range
select``. It also read an element select whose index holds a bit range (``_GEN_0[inst[18:17]
== 2'h1]``) as a bit range and left it a 1-bit select, which under-counted the integer PE
tile. Checked here: the rewrite on those constructs (exact text), the yosys cell counts of
both PE tiles of the 8x8 arrays (configs/bf16_small.toml, configs/small.toml, RTL only), and
the yosys netlist of the rewritten bf16 PE against CIRCT's Verilog under Verilator (random
instructions, data and clock enables, every cycle compared)."""
from __future__ import annotations

import dataclasses

import random
import subprocess
from pathlib import Path

import pytest

from dse.area import tile_cells
from garnet.sta.verilog import flatten_packed, hoist_automatic
from garnet.sta.verilog import modules as _modules

ROOT = Path(__file__).resolve().parents[2]


def test_flatten_packed_rewrites_nested_and_ranged_element_selects():
    src = ("module M(input [1:0] s, input [3:0] i, input [15:0] d, output [4:0] y, "
           "output [15:0] z);\n"
           "  wire [1:0][15:0] A = {{16'h0 - d}, {d}};\n"
           "  wire [1:0][4:0]  B = {{5'hE}, {5'h3}};\n"
           "  assign y = B[A[s[0]][3]];\n"
           "  assign z = A[i[3:2] == 2'h1];\n"
           "endmodule\n")
    out = flatten_packed(src)
    assert "wire [31:0] A = {{16'h0 - d}, {d}};" in out
    assert "wire [9:0] B = {{5'hE}, {5'h3}};" in out
    assert "assign y = B[(A[(s[0])*16 + (3)])*5 +: 5];" in out
    assert "assign z = A[(i[3:2] == 2'h1)*16 +: 16];" in out
    assert "][" not in out


def _design(tmp_path_factory, name: str) -> Path:
    from garnet.build import generate
    from garnet.params import load_toml

    out = tmp_path_factory.mktemp(f"area_{name}")
    # cell counts only: the published delay table, nothing measured
    params = dataclasses.replace(load_toml(ROOT / "configs" / f"{name}.toml"),
                                 timing="cascade-table")
    generate(params, out, rules=False, jobs=1, config_file=f"configs/{name}.toml")
    return out


@pytest.fixture(scope="module")
def designs(tmp_path_factory) -> dict[str, Path]:
    """RTL (no rules) of the 8x8 arrays with the integer PE and with the BFloat16 PE."""
    return {n: _design(tmp_path_factory, n) for n in ("small", "bf16_small")}


def _pe_modules(design: Path) -> tuple[str, str]:
    """(PE tile module, PE module) names of a design's ``rtl/``."""
    mods = _modules(design / "rtl")
    tile = next(m for m in mods if m.startswith("Tile_PECore_"))
    pe = next(m for m in mods if m.startswith("PE_"))
    return tile, pe


def test_bf16_pe_tile_synthesises_and_costs_more_than_the_integer_pe(designs, tmp_path):
    cache = tmp_path / "area"
    got = {}
    for name, d in designs.items():
        tile, pe = _pe_modules(d)
        t = tile_cells(d, tile, cache)
        p = tile_cells(d, pe, cache)
        assert t["cached"] is False and t["cells"] > 0 and t["nand2"] > 0
        assert 0 < p["cells"] < t["cells"]          # the tile holds the PE and interconnect
        got[name] = (t["cells"], p["cells"], t["nand2"])
    print(f"\nyosys cells (tile, PE, tile NAND2-eq): {got}")
    (bt, bp, bn), (it, ip, inn) = got["bf16_small"], got["small"]
    # the FP unit (add, mul, compare, two conversions) is more than half the integer PE
    assert bp > 1.5 * ip and bt > it and bn > inn
    # the interconnect part of both tiles is the same array parameters: close in size
    assert abs((bt - bp) - (it - ip)) < 0.1 * (it - ip)


_TB = """\
#include "Vtop.h"
#include <cstdio>
#include <cstdlib>
int main(int argc, char** argv) {
  FILE* f = fopen("vectors.txt", "r");
  Vtop t; long n = 0, bad = 0; unsigned long long inst; unsigned d0, d1, b, en;
  t.RESET = 1; t.clk_en = 1; t.CLK = 0; t.eval(); t.CLK = 1; t.eval(); t.RESET = 0;
  while (fscanf(f, "%llx %x %x %x %x", &inst, &d0, &d1, &b, &en) == 5) {
    t.CLK = 0; t.inst = inst; t.data0 = d0; t.data1 = d1;
    t.bit0 = b & 1; t.bit1 = (b >> 1) & 1; t.bit2 = (b >> 2) & 1; t.clk_en = en; t.eval();
    if (t.r1 != t.r2 || t.p1 != t.p2) bad++;
    n++; t.CLK = 1; t.eval();
  }
  printf("%ld %ld\\n", n, bad);
  return 0;
}
"""


#: 20000 cycles of a yosys netlist in Verilator (~35 s): `make bench` runs it, `make test` does not
@pytest.mark.bench
def test_yosys_netlist_of_the_bf16_pe_equals_the_circt_verilog(designs, tmp_path):
    """The rewritten bf16 PE synthesised by yosys (``synth -flatten; abc -fast``, as the
    area proxy) and written as a netlist computes what CIRCT's Verilog computes: 20000
    cycles of random instructions (opcode field over every FP and integer op), data,
    bits and clock enables, both outputs compared before every clock edge."""
    from peak.assembler import assembler
    from peak.examples.cgra_pe_bf16 import ALU, PE
    from peak.normalize import normal_form

    design = designs["bf16_small"]
    _, pe = _pe_modules(design)
    text = _modules(design / "rtl")[pe]
    (tmp_path / "orig.v").write_text(text)
    (tmp_path / "flat.v").write_text(
        flatten_packed(hoist_automatic(text)).replace(f"module {pe}", "module PE_flat", 1))
    subprocess.run(["yosys", "-q", "-p", "read_verilog -sv flat.v; synth -flatten -top "
                    "PE_flat; abc -fast; opt_clean; write_verilog -noattr net.v"],
                   cwd=tmp_path, check=True, capture_output=True, timeout=600)
    asm = assembler(normal_form(PE).isa)
    width = asm.width
    alu = next(f for f in asm.layout() if f["name"] == "alu")
    assert (alu["lo"], alu["width"]) == (0, 5)
    ports = ("clk_en(clk_en), .inst(inst), .data0(data0), .data1(data1), .bit0(bit0), "
             ".bit1(bit1), .bit2(bit2), .CLK(CLK), .RESET(RESET)")
    (tmp_path / "top.sv").write_text(
        f"module top(input CLK, RESET, clk_en, input [{width - 1}:0] inst, "
        "input [15:0] data0, data1, input bit0, bit1, bit2, output [15:0] r1, r2, "
        "output p1, p2);\n"
        f"  {pe} a(.{ports}, .res(r1), .res_p(p1));\n"
        f"  PE_flat b(.{ports}, .res(r2), .res_p(p2));\nendmodule\n")
    (tmp_path / "tb.cpp").write_text(_TB)
    rng = random.Random(16)
    n_alu = len(list(ALU.enumerate()))
    lines = []
    for _ in range(20000):
        inst = (rng.getrandbits(width) & ~0x1F) | rng.randrange(n_alu)   # any ALU op
        lines.append(f"{inst:x} {rng.getrandbits(16):x} {rng.getrandbits(16):x} "
                     f"{rng.getrandbits(3):x} {int(rng.random() < 0.9)}")
    (tmp_path / "vectors.txt").write_text("\n".join(lines) + "\n")
    subprocess.run(["verilator", "--cc", "--exe", "--build", "-O1", "-Wno-fatal", "-Wno-lint",
                    "-Wno-style", "--top-module", "top", "top.sv", "orig.v", "net.v",
                    "tb.cpp"], cwd=tmp_path, check=True, capture_output=True, timeout=900)
    res = subprocess.run(["./obj_dir/Vtop"], cwd=tmp_path, check=True, capture_output=True,
                         text=True, timeout=300)
    assert res.stdout.split() == ["20000", "0"]
