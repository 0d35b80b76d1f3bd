"""Issue 37 (a): a design with a ``[glb]`` table (configs/small_glb.toml) makes `cgra run` go
through the GLB in RTL: the design's system top (the array and its GLB in one Verilator model)
is driven through the GLB's host and control ports only -- the bitstream's config image
host-written into GLB banks and streamed by the config streamers into the array's column
config paths, the image host-written and streamed by a load DMA into the array, the output
stored by a store DMA and read back through the host port -- and the output equals numpy and
Halide. The GLB's cycle model, given the array's outputs, reads the same buffers; the same
cycles replayed on the GLB RTL alone (Icarus) give the model's outputs, cycle for cycle."""
from __future__ import annotations

import filecmp
import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from canal.config import column_ports
from cgra.cli import main
from garnet.glb.confignet import simulate
from garnet.glb.params import load_table
from garnet.glb.sim import run_rtl
from cgra.errors import SimulationError
from mapper.apps import build_app
from mapper.flow import run_app
from mapper.params import AppParams, RunParams
from mapper.sim.glb import design_glb, run_through_glb
from mapper.sim.run import io_ports
from mapper.sim.verilator import SimParams, run_harness

from test_runtime_api import gaussian_numpy, verilator_gaussian

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def glb_gaussian(small_glb_design, tmp_path_factory):
    """`cgra run gaussian` (64x64 camera crop, seed 0) on the 8x8 with a GLB."""
    return run_app(RunParams(AppParams("gaussian", 64, 64), small_glb_design,
                             tmp_path_factory.mktemp("glbrun") / "gaussian"))


def test_design_with_glb_table_has_glb_collateral_and_column_config_paths(small_design,
                                                                          small_glb_design):
    p = design_glb(small_glb_design)
    assert p == load_table(ROOT / "configs" / "small_glb.toml")
    assert (p.tiles, p.bank_words, p.columns) == (4, 1024, 8)
    assert "module glb_tile #(parameter TILE = 0)" in (small_glb_design / "glb" / "glb.v").read_text()
    assert design_glb(small_design) is None and not (small_design / "glb").exists()
    # the tiles' RTL is byte-identical with and without the [glb] table; the top differs:
    # a config path per column (glb_cfg_column, 8 rows, a stage every 4), a stall and a flush
    plain = json.loads((small_design / "design.json").read_text())
    glb = json.loads((small_glb_design / "design.json").read_text())
    assert glb["top"] != plain["top"]
    names = sorted(f.name for f in (small_design / "rtl").iterdir() if f.is_file())
    assert sorted(f.name for f in (small_glb_design / "rtl").iterdir() if f.is_file()) == \
        sorted([n for n in names if n != f"{plain['top']}.v"] +
               [f"{glb['top']}.v", "glb_cfg_column_h8_r4.v"])
    tiles = [n for n in names if n.startswith(("Tile_", "Canal"))]
    _match, mismatch, errors = filecmp.cmpfiles(small_design / "rtl", small_glb_design / "rtl",
                                                tiles, shallow=False)
    assert mismatch == errors == [] and tiles
    top = (small_glb_design / "rtl" / f"{glb['top']}.v").read_text()
    assert top.count("glb_cfg_column_h8_r4 ColumnConfig_X") == 8
    assert "wire        clk_en_X05 = clk_en & ~stall_X05;" in top
    assert "wire [31:0] config_addr_X02_Y07 = _ColumnConfig_X02_wr[7] ? " \
        "_ColumnConfig_X02_addr_7 : config_addr;" in top
    # the system top: the array and the GLB, the GLB's config streams on the column paths,
    # its load DMA on both columns' inputs, its store DMA on the selected column's output
    sys_top = glb["system"]["top"]
    assert sys_top.startswith(glb["top"] + "_glb_")
    assert (small_glb_design / "glb" / "system.f").read_text().split()[-2:] == \
        ["../glb/glb.v", f"../glb/{sys_top}.v"]
    text = (small_glb_design / "glb" / f"{sys_top}.v").read_text()
    assert f"  {glb['top']} array (" in text and "  glb glb (" in text
    assert ".cfg_word_X05(cfg_word_2_1)" in text
    assert ".glb2io_16_X04_Y00(io_out_2)" in text and ".glb2io_16_X05_Y00(io_out_2)" in text
    assert "assign io_in_2 = (glb_io_sel_2 == 0) ? io2glb_16_X04_Y00 : io2glb_16_X05_Y00;" \
        in text
    sys_ports = {q["name"] for q in glb["system"]["ports"]}
    assert {"glb_host_wdata", "glb_host_rdata", "stall_X03", "io2glb_16_X03_Y00"} <= sys_ports
    assert not {"cfg_word_X03", "glb2io_16_X03_Y00"} & sys_ports
    extra = {q["name"]: q["width"] for q in glb["ports"]} .items() - \
        {q["name"]: q["width"] for q in plain["ports"]}.items()
    assert sorted(extra) == sorted((n, w) for x in range(8) for n, w in
                                   zip(column_ports(x), (1, 64, 1, 1), strict=True))
    assert not glb["rtl"].get("hier")           # the flat top only (no column blocks)


def test_cgra_run_goes_through_the_glb(glb_gaussian):
    run = glb_gaussian
    rep = run.report
    assert rep["match"] == {"numpy": True, "halide": True}
    assert np.array_equal(run.output, gaussian_numpy(run.image.astype(np.int64)))
    g = rep["glb"]
    # the config network: the GLB image with row multicast, every write of the bitstream
    pairs = run.flow.bitstream.pairs()
    p = run.glb.params
    assert g["config"]["writes"] == len(pairs) == g["config"]["single_port_cycles"]
    assert g["config"]["cycles"] == simulate(p, pairs, 8, "unicast", row_multicast=True).cycles
    assert g["config"]["cycles"] * 3 < len(pairs)
    assert sorted(run.glb.config.writes) == sorted(pairs)
    # written by the GLB's streamers into the array's column paths in the RTL (no write
    # through the shared port): from the first bundle to the last row's write, 2 stages (8
    # rows, a stage every 4) after the last bundle. The GLB model counts from the first bank
    # read to the write of the last word's own row: one cycle more than the RTL when that
    # row is in the column path's second stage, the same when it is in the first (which
    # the placement decides)
    last = max(c for st in run.glb.config.streams.values() for c, _w in st)
    assert g["config"]["through"] == "GLB config streamers and column paths (RTL)"
    assert g["config"]["array_cycles"] == last + 2
    assert g["config"]["array_cycles"] <= g["config"]["cycles"] <= g["config"]["array_cycles"] + 1
    assert (run.out_dir / "sim.bs").read_text() == ""
    # one system run: the GLB's cycles but its first (the harness's reset); the array
    # starts (unstalled) at the cycle after the DMAs' start
    assert g["config"]["restart_cycle"] == run.glb.prologue
    # (the harness's edges: 3 of reset, the flush and its 3-cycle drain, then the run)
    assert run.report["cycles"]["total_clock_edges"] == len(run.glb.session.cycles) - 1 + 7
    starts = [k for k, c in enumerate(run.glb.session.cycles) if c.start]
    assert starts == [run.glb.prologue - 1]
    # the load DMA's words are exactly the stream the array's input IO tile expects, and the
    # store DMA's buffer holds the output stream (one input and one output GLB tile)
    assert list(run.glb.inputs) == list(run.plan.inputs)
    for port, words in run.plan.inputs.items():
        assert np.array_equal(run.glb.inputs[port], words)
    assert len(g["loads"]) == len(g["stores"]) == 1
    assert set(g["phases"]) == {"configure", "stream"}
    assert g["phases"]["stream"] > run.plan.cycles
    assert g["model"].startswith("RTL: the array and the GLB in one Verilator model")


def test_glb_rtl_replays_the_run(glb_gaussian, tmp_path):
    """The GLB RTL in Icarus, driven with every cycle the model was driven with in the run
    (reset, host writes of the config image and the input, config streamers, DMA programs,
    the load and store streams, the host read-back), shows the model's outputs every cycle."""
    s = glb_gaussian.glb.session
    rows = run_rtl(s.p, s.cycles, tmp_path)
    want = [o.flat() for o in s.outputs]
    assert len(rows) == len(want) == len(s.cycles)
    first_bad = next((k for k in range(1, len(rows)) if rows[k] != want[k]), None)
    assert first_bad is None, (first_bad, rows[first_bad], want[first_bad])


def test_bad_glb_table_is_one_line(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text((ROOT / "configs" / "small_glb.toml").read_text()
                   .replace("bank_words = 1024", "bank_words = 1000"))
    monkeypatch.setattr(sys, "argv", ["cgra", "rtl", "--config", str(bad), "--out",
                                      str(tmp_path / "o")])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"error: {bad}: [glb] field 'bank_words' = 1000: use a power of two in "
                   f"16..65536 (address bits are sliced)")
    assert not (tmp_path / "o").exists()


def test_run_report_names_the_glb(glb_gaussian):
    doc = json.loads((glb_gaussian.out_dir / "run_report.json").read_text())
    assert doc["glb"]["params"]["tiles"] == 4
    assert doc["glb"]["model"].startswith("RTL: ")


def test_host_api_on_verilator_goes_through_the_design_glb(glb_gaussian):
    """The host API's Verilator platform on the same program: the array RTL configured
    through the GLB's config network and fed by its DMAs gives numpy's image."""
    dev, img, er, out = verilator_gaussian(glb_gaussian.out_dir, 5)
    assert np.array_equal(out, gaussian_numpy(img))
    assert er.cycles == glb_gaussian.plan.cycles
    g = dev.platform.last_glb
    assert g is not None and g.config.cycles == glb_gaussian.report["glb"]["config"]["cycles"]
    assert np.array_equal(g.buffers[next(iter(g.buffers))][:62, :62], out)


def test_cgra_run_summary_says_glb(small_glb_design, tmp_path):
    """The shipped [glb] config: `cgra run` (the command line, defaults) goes through the GLB
    and says so."""
    r = subprocess.run([str(pathlib.Path(sys.executable).with_name("cgra")), "run", "pointwise",
                        "--design", str(small_glb_design), "--size", "16", "--out",
                        str(tmp_path / "pw")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "16x16 output matches numpy and Halide bit-exactly" in r.stdout
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("through the GLB"))
    assert line.startswith("through the GLB (4 tiles, in RTL with the array): config ")
    assert "(unicast + row multicast; single port " in line
    doc = json.loads((tmp_path / "pw" / "run_report.json").read_text())
    assert doc["glb"]["config"]["writes"] == doc["glb"]["config"]["single_port_cycles"]
    assert f"single port {doc['glb']['config']['single_port_cycles']})" in line


def test_a_glb_rtl_that_disagrees_with_its_model_is_named(glb_gaussian, tmp_path):
    """The model replayed with the array's outputs must read the RTL's buffers: an array
    output seen differently by the model (one word flipped) is a one-line SimulationError
    naming the port and the first element."""
    run = glb_gaussian
    h = run.harness
    params = SimParams(system=True)

    def run_system(inputs, ports, cycles):
        got = run_harness(h, [], inputs, ports, cycles, tmp_path, params).outputs
        port = next(q for q in ports if q.startswith("io2glb_16"))
        got[port] = got[port].copy()
        got[port][run.glb.prologue + 200] ^= 1            # what the model will see
        return got

    images = {build_app("gaussian", 64, 64).inputs[0].name: run.image}
    with pytest.raises(SimulationError, match=r"gaussian: the GLB RTL and its model read "
                                              r"different output buffers for io2glb_16_X"):
        run_through_glb(run.glb.params, 8, 8, run.flow, run.plan, images, io_ports(run.flow),
                        run_system, h.outputs, h.flush_wait, "gaussian")
