"""Custom interconnects by path (field ``interconnect``, :mod:`canal.custom`; issue 39):
diagonal tracks in the routing graph and in the top's wiring, the refusal of a cycle and of
broken build functions (typed one-line errors naming the file, exit code 2 from `cgra rtl`)
and the incremental build rebuilding the graphs when the build file changes."""
from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest
from click.testing import CliRunner

from canal.custom import (add_diagonal_links, check_wiring, cut_wires, diagonal_links,
                          exported, rewire, wires)
from canal.collateral import load_json
from canal.graph import IO, Side, rmux_id, sb_id
from canal.rtl import array_netlist, tile_shapes
from cgra.cli import cli
from cgra.errors import ConfigError, SpecError
from garnet.array import build_interconnect, check_interconnect
from garnet.params import from_dict, load_toml

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
CGRA = Path(sys.executable).with_name("cgra")
TOY = "peak.examples.toy_pe:ToyPE"


@pytest.fixture(scope="module")
def diagonal_ic():
    params = load_toml(ROOT / "configs" / "small_diagonal.toml")
    return params, build_interconnect(params)


@pytest.fixture(scope="module")
def plain_ic():
    return build_interconnect(load_toml(ROOT / "configs" / "small.toml"))


def test_toml_path_is_relative_to_the_toml_file():
    p = load_toml(ROOT / "configs" / "small_diagonal.toml")
    assert p.interconnect == f"{ROOT / 'configs' / 'ic_diagonal.py'}:build"


def test_diagonal_links_in_the_routing_graph(diagonal_ic, plain_ic):
    params, ic = diagonal_ic
    check_interconnect(ic, params, "configs/small_diagonal.toml")     # connected, no cycle
    for w in (16, 1):
        g = ic.graphs[w]
        diag = diagonal_links(g)
        # 4 directions (EAST->SE, WEST->NW on track 4; SOUTH->SW, NORTH->NE on track 3),
        # each with 7 x 7 destination tiles whose diagonal source is on the 8x8 array
        assert len(diag) == 196
        steps = {}
        for s, d, step in wires(g):
            if (s, d) in diag:
                steps[step] = steps.get(step, 0) + 1
        assert steps == {(1, 1): 49, (-1, -1): 49, (-1, 1): 49, (1, -1): 49}
        # the EAST output of (2, 3) on track 4 (registered: its RMUX) feeds (3, 4)'s WEST
        # input, which lost its straight source (2, 4)
        assert g.fanin[sb_id(w, 3, 4, Side.WEST, 4, IO.SB_IN)] == [rmux_id(w, 2, 3, Side.EAST, 4)]
        # the north edge loses the inputs of the south-east diagonal (no tile at y = -1)
        assert g.fanin[sb_id(w, 3, 0, Side.WEST, 4, IO.SB_IN)] == []
        # the plain graph has 8 x 7 straight wires per direction and track where the
        # diagonal has 7 x 7: 4 x 7 wires fewer
        plain = plain_ic.graphs[w]
        assert not diagonal_links(plain)
        assert len(wires(plain)) - len(wires(g)) == 4 * 7
        check_wiring(g)


def test_diagonal_wires_in_the_top_and_tiles_unchanged(diagonal_ic, plain_ic):
    _, ic = diagonal_ic
    net = array_netlist(ic, 4)
    ins = dict(net.inputs[(3, 4)])
    assert ins["SB_T4_WEST_SB_IN_B16"] == ("out", 2, 3, "SB_T4_EAST_SB_OUT_B16", 16)
    assert ins["SB_T3_SOUTH_SB_IN_B1"] == ("out", 2, 5, "SB_T3_NORTH_SB_OUT_B1", 1)
    assert dict(net.inputs[(3, 0)])["SB_T4_WEST_SB_IN_B16"] == ("const", 0, 16)
    # only the top's wiring differs: the tile modules are the plain array's
    names = {xy: s.module_name for xy, s in tile_shapes(ic).items()}
    assert names == {xy: s.module_name for xy, s in tile_shapes(plain_ic).items()}
    assert len(set(names.values())) == 3


def test_passes_refuse_what_the_rtl_cannot_express(plain_ic):
    g = plain_ic.graphs[16].copy()
    dst = sb_id(16, 3, 3, Side.WEST, 0, IO.SB_IN)
    with pytest.raises(SpecError, match="another tile exports"):
        rewire(g, sb_id(16, 3, 3, Side.EAST, 0, IO.SB_OUT), dst)        # own tile
    with pytest.raises(SpecError, match="another tile exports"):
        rewire(g, sb_id(16, 1, 3, Side.EAST, 0, IO.SB_OUT), dst)        # not exported: RMUX
    with pytest.raises(SpecError, match="parallel"):
        add_diagonal_links(g, "EAST", "WEST", tracks=[0])
    assert rewire(g, exported(g, 1, 2, "EAST", 0), dst) == (rmux_id(16, 1, 2, Side.EAST, 0),
                                                            dst)
    assert g.fanin[dst] == [rmux_id(16, 1, 2, Side.EAST, 0)]
    check_wiring(g)
    assert len(cut_wires(g, "NORTH", [3, 4])) == 2 * 8 * 7
    g.fanin[dst] = [rmux_id(16, 1, 2, Side.EAST, 0), rmux_id(16, 2, 3, Side.EAST, 0)]
    with pytest.raises(SpecError, match="at most one source"):
        check_wiring(g)


def _params(ref: str, **kw):
    base = load_toml(ROOT / "configs" / "small.toml").to_dict()
    return from_dict({**base, **kw, "interconnect": ref}, "x.toml")


def test_cycle_refused_naming_the_cycle_nodes():
    ref = f"{DATA / 'ic_cycle.py'}:build"
    p = _params(ref)
    ic = build_interconnect(p)
    with pytest.raises(ConfigError) as e:
        check_interconnect(ic, p, "x.toml")
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"x.toml: field 'interconnect' = '{ref}': the interconnect has a "
                          f"combinational cycle")
    assert ("(6 nodes: SB:16:2:3:WEST:0:OUT -> RMUX:16:2:3:WEST:0 -> SB:16:3:3:EAST:0:IN -> "
            "SB:16:3:3:WEST:0:OUT -> RMUX:16:3:3:WEST:0 -> SB:16:2:3:EAST:0:IN -> "
            "SB:16:2:3:WEST:0:OUT)") in msg
    assert f"change the build function in {DATA / 'ic_cycle.py'}" in msg


def test_disconnected_graph_refused():
    def build(graphs, params):
        for g in graphs.values():
            for side in Side:
                cut_wires(g, side, range(params.tracks))
        return graphs

    mod = types.ModuleType("_ic_cut_all")
    mod.build = build
    sys.modules["_ic_cut_all"] = mod
    try:
        p = _params("_ic_cut_all:build")
        ic = build_interconnect(p)
        with pytest.raises(ConfigError) as e:
            check_interconnect(ic, p, "x.toml")
    finally:
        del sys.modules["_ic_cut_all"]
    msg = str(e.value)
    assert msg.startswith("x.toml: field 'interconnect' = '_ic_cut_all:build': the 16-bit "
                          "interconnect is disconnected: ")
    assert "remove the field interconnect" in msg


@pytest.mark.parametrize("fn, line, text", [
    ("build_raises", 8, "ValueError: no diagonal for 5 tracks (interconnect"),
    ("build_list", 11, "build_list(graphs, params) returned a list, not a dict"),
    ("build_inside", 15, "SB:16:2:2:EAST:0:IN is fed from its own tile"),
])
def test_broken_build_function_names_file_and_line(fn, line, text):
    ref = f"{DATA / 'ic_bad.py'}:{fn}"
    with pytest.raises(SpecError) as e:
        build_interconnect(_params(ref))
    assert (e.value.file, e.value.line) == (str(DATA / "ic_bad.py"), line)
    assert str(e.value).startswith(f"{DATA / 'ic_bad.py'}:{line}: ")
    assert text in str(e.value) and "\n" not in str(e.value)


def test_bad_paths_refused_at_load(tmp_path):
    cfg = tmp_path / "x.toml"
    cfg.write_text('interconnect = "nothere.py:build"\n')
    with pytest.raises(ConfigError) as e:
        load_toml(cfg)
    assert str(e.value).startswith(f"{cfg}: field 'interconnect' = '{tmp_path / 'nothere.py'}"
                                   f":build': file {tmp_path / 'nothere.py'} does not exist")
    with pytest.raises(ConfigError, match="has no attribute 'nope'; functions there: "
                                          r"\['build_inside', 'build_list', 'build_raises'\]"):
        _params(f"{DATA / 'ic_bad.py'}:nope")
    with pytest.raises(ConfigError, match="not of the form module:Class"):
        _params("ic_diagonal.py")


def test_cgra_rtl_refuses_the_cycle_with_exit_code_2(tmp_path):
    cfg = tmp_path / "cyc.toml"
    cfg.write_text((ROOT / "configs" / "small.toml").read_text()
                   + f'interconnect = "{DATA / "ic_cycle.py"}:build"\n')
    out = tmp_path / "out"
    res = subprocess.run([str(CGRA), "rtl", "--config", str(cfg), "--out", str(out),
                          "--no-rules"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, res.stderr
    msg = res.stderr.strip().splitlines()[-1]
    assert msg.startswith(f"error: {cfg}: field 'interconnect' = '{DATA / 'ic_cycle.py'}:build'")
    assert "combinational cycle" in msg and "SB:16:3:3:EAST:0:IN" in msg
    assert not out.exists()


IC_V1 = '''from canal.custom import add_diagonal_links


def build(graphs, params):
    for g in graphs.values():
        add_diagonal_links(g, "EAST", "SOUTH", tracks=[TRACKS])
    return graphs
'''


def _run(args: list[str]) -> str:
    res = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output.strip().splitlines()[-1]


def test_editing_the_build_file_rebuilds_the_graphs(tmp_path):
    ic_file = tmp_path / "ic.py"
    ic_file.write_text(IC_V1.replace("TRACKS", "0"))
    cfg = tmp_path / "d.toml"
    cfg.write_text(f'width = 4\nheight = 3\npe = "{TOY}"\ninterconnect = "ic.py:build"\n')
    out = tmp_path / "d"
    args = ["rtl", "--config", str(cfg), "--out", str(out), "--no-rules"]
    first = _run(args)
    assert "interconnect regenerated" in first

    def diagonal_tracks() -> list:
        g = load_json(out / "routing" / "graph_16.json")
        return sorted({g.nodes[d].track for _, d in diagonal_links(g)})
    assert diagonal_tracks() == [0]
    assert "nothing rebuilt" in _run(args)
    ic_file.write_text(IC_V1.replace("TRACKS", "1, 2"))       # same name and size class
    third = _run(args)
    assert "interconnect regenerated" in third and "build function" in third, third
    assert diagonal_tracks() == [1, 2]
