"""Incremental `cgra rtl`: an unchanged configuration rebuilds nothing, a PE edit keeps the
interconnect graphs, a TOML edit of an interconnect field rebuilds them, the tiles compiled
module by module are byte-identical to one CIRCT run over the whole array and the top
written as text is equivalent to CIRCT's (yosys), and the modules compiled do not grow with
the array size."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from canal.passes import (add_switch_boxes, build_tiles, connect_core_ports, empty_graph,
                          wire_tracks)
from cgra.cli import cli
from garnet.array import build_interconnect, connectivity, default_core_fn, interconnect_params
from garnet.params import GarnetParams

ROOT = Path(__file__).resolve().parents[2]
TOY = "peak.examples.toy_pe:ToyPE"
CGRA = Path(sys.executable).with_name("cgra")


def _run(args: list[str]) -> str:
    res = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output.strip().splitlines()[-1]


def _stat(d: Path) -> dict[str, tuple[int, int]]:
    """relative path -> (inode, mtime_ns) of every file below ``d``, caches excluded."""
    return {str(p.relative_to(d)): (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in sorted(d.rglob("*"))
            if p.is_file() and ".cache" not in p.relative_to(d).parts}


def _timings(output: str) -> list[tuple[str, float]]:
    """The ``--timings`` lines of ``cgra rtl``: [(stage, seconds)], the total last."""
    import re

    return [(m.group(2), float(m.group(1))) for m in
            (re.match(r"\s*([0-9]+\.[0-9]{2}) s  (.+)$", ln) for ln in output.splitlines())
            if m]


def test_unchanged_8x8_rebuilds_nothing(tmp_path):
    out = tmp_path / "small"
    args = ["rtl", "--config", str(ROOT / "configs" / "small.toml"), "--out", str(out),
            "--no-rules"]
    res = CliRunner().invoke(cli, args + ["--timings"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    first = res.output.strip().splitlines()[-1]
    assert "interconnect regenerated" in first and "no previous design" in first
    # --timings: every stage of this process in order, then the RTL worker's (one per
    # compiled tile module, the top, the top in column blocks), then the whole command
    stages = _timings(res.output)
    names = [n for n, _ in stages]
    main = [n for n in names if not n.startswith("worker: ")][:-1]
    # the measured timing model (the default) times the tiles once their Verilog exists,
    # then writes the routing graphs with the measured delays
    assert main == ["keys", "interconnect graphs", "Verilog (CIRCT)", "interconnect check",
                    "Verilog (CIRCT): waiting for the worker",
                    "timing model (yosys + OpenSTA per tile)", "routing graphs",
                    "collateral", "install", "cache prune"], names
    worker = [n[len("worker: "):] for n in names if n.startswith("worker: ")]
    assert worker[0] == "tile shapes" and worker[-2:] == [
        "Verilog (top level)", "Verilog (top level in column blocks)"]
    assert sorted(w.split(": ")[1].split("_")[1] for w in worker[1:-2]) == \
        ["PECore", "io", "lake"], worker
    assert names[-1] == "total (cgra rtl, wall)"
    total = stages[-1][1]
    assert all(s >= 0 for _, s in stages)
    assert sum(s for n, s in stages[:-1] if not n.startswith("worker: ")) <= total + 0.02
    marker = [json.loads(p.read_text()) for p in (out / ".cache" / "interconnect").iterdir()]
    assert [m["validated"] for m in marker] == [True]
    before = _stat(out)
    res = CliRunner().invoke(cli, args + ["--timings"], catch_exceptions=False)
    second = res.output.strip().splitlines()[-1]
    assert "nothing rebuilt" in second, second
    assert [n for n, _ in _timings(res.output)] == ["keys", "total (cgra rtl, wall)"]
    assert _stat(out) == before                 # not one file rewritten (inode and mtime)
    design = json.loads((out / "design.json").read_text())
    assert set(design["build"]["keys"]) == {"interconnect", "fabric", "rtl", "design", "all"}


def test_toy_design_with_rules_rebuilds_nothing_then_tracks_rebuild_interconnect(tmp_path):
    cfg = tmp_path / "tiny.toml"
    cfg.write_text(f'name = "tiny"\nwidth = 4\nheight = 3\ntracks = 3\npe = "{TOY}"\n'
                   'timing = "cascade-table"\n')
    out, shared = tmp_path / "tiny", tmp_path / "rules"
    args = ["rtl", "--config", str(cfg), "--out", str(out), "--rules-dir", str(shared)]
    _run(args)
    before = _stat(out)
    again = _run(args)
    assert "nothing rebuilt" in again and "rules reused from previous design" in again
    assert _stat(out) == before
    g3 = json.loads((out / "routing" / "graph_16.json").read_text())

    cfg.write_text(cfg.read_text().replace("tracks = 3", "tracks = 2"))
    edited = _run(args)
    assert "interconnect regenerated" in edited and "changed: tracks" in edited, edited
    assert "rules reused from previous design" in edited
    g2 = json.loads((out / "routing" / "graph_16.json").read_text())
    assert g2["params"]["tracks"] == 2 and g3["params"]["tracks"] == 3

    # a field outside the interconnect (flush_interval) keeps the graphs and the tiles
    cfg.write_text(cfg.read_text() + "flush_interval = 1\n")
    flush = _run(args)
    assert "interconnect reused" in flush and "routing collateral reused" in flush, flush
    assert "RTL: top compiled, IO tile, PE tile, MEM tile from the cache" in flush, flush
    from garnet import collateral as gc
    gc.verify_files(out, gc.read_design(out))


def _subset_builder(spec, shared: Path, jobs: int):
    """A rule builder for the test: PEak's synthesiser restricted to three targets."""
    from peak.ir import targets
    from peak.rules import build_table
    from peak.rules.format import table_path

    keys = [t.key for t in targets(16) if t.op in ("coreir.add", "coreir.const")]
    table = build_table(spec, shared, jobs=1, only=keys)
    return table_path(shared, table.pe), {e.target: e.action for e in table.entries}


def test_pe_edit_keeps_interconnect_graphs(tmp_path):
    from garnet.build import generate
    from garnet.params import load_toml
    from mapper.collateral import load_collateral

    shutil.copy(ROOT / "peak" / "examples" / "cgra_pe.py", tmp_path / "my_pe.py")
    cfg = tmp_path / "pe.toml"
    cfg.write_text('name = "mine"\nwidth = 5\nheight = 3\ntracks = 3\nmem_ratio = 3\n'
                   'pe = "my_pe.py:PE"\ntiming = "cascade-table"\n')   # graphs reuse, not STA
    out, shared = tmp_path / "mine", tmp_path / "rules"

    def gen():
        return generate(load_toml(cfg), out, rules_dir=shared, builder=_subset_builder,
                        config_file=cfg)

    first = gen()
    assert first.status["interconnect"] == "regenerated"
    graph = json.loads((out / "routing" / "graph_16.json").read_text())
    rtl = {p.name: p.read_text() for p in (out / "rtl").glob("*.v")}

    src = (tmp_path / "my_pe.py").read_text()
    edited = src.replace('"""The default CGRA PE', '"""An edited copy of the default CGRA PE', 1)
    assert edited != src
    (tmp_path / "my_pe.py").write_text(edited)
    second = gen()
    line = second.summary()
    assert "interconnect reused, PE regenerated" in line, line
    assert second.status == {"interconnect": "reused", "fabric": "regenerated",
                             "rtl": "regenerated", "docs": "regenerated"}
    kinds = [m.split("_")[1] for m in second.compiled]
    assert kinds == ["PECore", "5x3"], second.compiled        # the PE tile and the top
    assert any(m.startswith("Tile_lake_") for m in second.cached)
    assert any(m.startswith("Tile_io_") for m in second.cached)
    assert second.pe_hash != first.pe_hash and second.top != first.top
    # the graphs themselves are the same; only the PE tiles' records name the new module
    graph2 = json.loads((out / "routing" / "graph_16.json").read_text())
    assert graph2["nodes"] == graph["nodes"]
    assert {t["core"] for t in graph2["tiles"]} != {t["core"] for t in graph["tiles"]}
    rtl2 = {p.name: p.read_text() for p in (out / "rtl").glob("*.v")}
    mem = [n for n in rtl if n.startswith("Tile_lake_")]
    assert mem and all(rtl2[n] == rtl[n] for n in mem)        # MEM tile reused verbatim
    coll = load_collateral(out)                                 # every hash checks out
    assert coll.pe.spec_hash == second.pe_hash


def test_validation_refuses_before_writing(tmp_path):
    base = (ROOT / "configs" / "small.toml").read_text()

    def run(replace: str, line: str) -> str:
        text = "\n".join(x for x in base.splitlines() if not x.startswith(replace.split()[0]))
        cfg = tmp_path / f"{replace.split()[0]}.toml"
        cfg.write_text(text + "\n" + line + "\n")
        out = tmp_path / f"out_{replace.split()[0]}"
        res = subprocess.run([str(CGRA), "rtl", "--config", str(cfg), "--out", str(out),
                              "--no-rules"], cwd=ROOT, capture_output=True, text=True,
                             timeout=300)
        assert res.returncode == 2, res.stderr
        assert not out.exists() and not list(tmp_path.glob(".out_*"))   # nothing written
        msg = res.stderr.strip().splitlines()[-1]
        assert msg.startswith("error: ") and res.stdout == ""
        return msg

    cycle = run("pipeline_register_tracks", "pipeline_register_tracks = [0, 1]")
    assert "field 'pipeline_register_tracks' = [0, 1]" in cycle
    assert "combinational cycle" in cycle and "use pipeline_register_tracks = []" in cycle
    nodes = cycle.split("nodes: ")[1].split(")")[0].split(" -> ")
    assert len(nodes) >= 3 and nodes[0] == nodes[-1] and nodes[0].startswith("SB:")

    cut = run("cb_sides", 'cb_sides = ["NORTH"]')
    assert "field 'cb_sides' = ['NORTH']" in cut and "disconnected" in cut
    assert "8 of 120 core inputs cannot be fed from any IO tile" in cut
    assert "PORT:16:0:0:f2io_16 (IO tile (0, 0))" in cut

    long = run("track_length", "track_length = 6")      # small.toml has tracks = 5
    assert "field 'track_length' = 6" in long
    assert "with tracks = 5 < L = 6" in long and "use tracks >= 6 or track_length <= 5" in long


def test_connectivity_reports_disconnected_subgrids():
    """Canal's literal track_length = 2 wiring (canal.passes.wire_tracks: a wire jumps 2
    tiles, no taps between) splits a 4x4 array into 4 sub-grids; `cgra rtl` builds long
    tracks as staggered segments instead (canal.passes.segment_tracks), which connect."""
    p = GarnetParams(width=4, height=4, tracks=2, mem_ratio=0, track_length=2)
    assert connectivity(build_interconnect(p).graphs[16]).ok    # staggered: connected
    tiles, _ = build_tiles(interconnect_params(p), default_core_fn(p))
    lit = connect_core_ports(wire_tracks(add_switch_boxes(empty_graph(16, tiles), "imran", 2),
                                         track_length=2))
    rep = connectivity(lit)
    assert not rep.ok and rep.outputs == 16
    assert len(rep.stuck) == 16                  # no core output reaches every input
    ok = connectivity(build_interconnect(GarnetParams(width=4, height=4, tracks=2,
                                                      mem_ratio=0)).graphs[16])
    assert ok.ok and ok.inputs == 4 + 12 * 2       # IO f2io_16 + PE data0, data1


def _blackbox_stubs(modules: dict[str, list[dict]]) -> str:
    """Verilog ``(* blackbox *)`` modules with the ports of ``port_list`` entries."""
    def rng(w: int) -> str:
        return "" if w == 1 else f"[{w - 1}:0]"
    return "".join(
        f"(* blackbox *)\nmodule {mod}(" + ", ".join(
            f"{'input' if p['direction'] == 'in' else 'output'} {rng(p['width'])} {p['name']}"
            for p in ports) + ");\nendmodule\n" for mod, ports in modules.items())


def _yosys_equivalent(d: Path, stubs: str, gold: str, gate: str, top: str) -> str:
    """Run yosys' equivalence check of two versions of module ``top`` (tiles as black
    boxes); returns the log; raises AssertionError when not proven equivalent."""
    (d / "stubs.v").write_text(stubs)
    (d / "gold.v").write_text(gold.replace(f"module {top}(", "module gold(", 1))
    (d / "gate.v").write_text(gate.replace(f"module {top}(", "module gate(", 1))
    script = ("read_verilog -sv stubs.v gold.v gate.v; hierarchy -check; proc; opt_clean; "
              "equiv_make gold gate equiv; hierarchy -top equiv; equiv_struct; "
              "equiv_simple -seq 2; equiv_induct; equiv_status -assert")
    res = subprocess.run(["yosys", "-q", "-p", script], cwd=d, capture_output=True,
                         text=True)
    assert res.returncode == 0, (res.stdout + res.stderr)[-2000:]
    return res.stdout


def test_modules_compiled_apart_equal_one_circt_run(tmp_path):
    """The tile modules compiled one by one are byte-identical to compiling the whole array
    at once (magma -> CIRCT, Canal's array circuit), the top is named as Canal names it, and
    the top written as text (canal.rtl.array_verilog) is equivalent to CIRCT's top: yosys
    proves every wire and output equal with the tiles as black boxes (flush spine with
    flush_interval = 1, tile ids, SB wiring, IO ports, read_data OR); a wrong tile id or a
    missing read_data term is caught."""
    from canal.rtl import compile_array, tile_circuit
    from garnet.array import array_circuit, port_list, tile_shapes, top_name
    from garnet.build import generate, split_verilog
    from garnet.params import GarnetParams

    p = GarnetParams(name="cmp", width=4, height=3, tracks=2, pe=TOY, mem_ratio=3,
                     flush_interval=1)
    res = generate(p, tmp_path / "cmp", rules=False)
    ic = res.interconnect
    full = array_circuit(ic, p)
    shapes = tile_shapes(ic)
    assert top_name(ic, shapes, p) == full.name == res.top
    text = compile_array(full, tmp_path / "full").read_text()
    whole = dict(split_verilog(text))
    files = (tmp_path / "cmp" / "rtl" / "filelist.f").read_text().split()
    assert sorted(f[:-2] for f in files) == sorted(whole)     # same modules
    assert files[-1] == f"{res.top}.v"                         # the top last
    for f in files[:-1]:
        assert (tmp_path / "cmp" / "rtl" / f).read_text() == whole[f[:-2]], f
    tiles = {s.module_name: port_list(tile_circuit(s, ic.configs[xy], ic.core(*xy)))
             for xy, s in shapes.items()}
    stubs = _blackbox_stubs(tiles)
    gate = (tmp_path / "cmp" / "rtl" / files[-1]).read_text()
    log = _yosys_equivalent(tmp_path, stubs, whole[res.top], gate, res.top)
    assert "unproven" not in log
    for wrong in (gate.replace("(16'h101)", "(16'h102)", 1),
                  gate.replace("| _Tile_X01_Y01_read_data ", "", 1)):
        assert wrong != gate
        with pytest.raises(AssertionError, match="unproven"):
            _yosys_equivalent(tmp_path, stubs, whole[res.top], wrong, res.top)


def test_distinct_modules_do_not_grow_with_the_array(tmp_path):
    """Two arrays of different sizes with the same tile pattern (8x8 and 12x8, MEM every 4th
    column) elaborate the same modules apart from the top: the HDL back end compiles one
    module per distinct tile (3 tiles here) whatever the array size, and the second array
    takes every tile from the shared build cache and only writes its top (text, no CIRCT)."""
    from garnet.build import generate
    from garnet.params import GarnetParams

    cache = tmp_path / "cache"
    res = {}
    for w in (8, 12):
        p = GarnetParams(name=f"pat{w}", width=w, height=8, tracks=2, pe=TOY, mem_ratio=4)
        res[w] = generate(p, tmp_path / f"pat{w}", rules=False, cache_dir=cache)
    a, b = res[8], res[12]
    assert a.top != b.top and a.top.startswith("Garnet_8x8_") and b.top.startswith("Garnet_12x8_")
    assert a.modules[-1] == a.top and b.modules[-1] == b.top
    assert set(a.modules[:-1]) == set(b.modules[:-1])
    assert len(a.modules) == len(b.modules)
    assert sorted(m for m in a.compiled if m.startswith("Tile_")) == \
        sorted({m for m in a.modules if m.startswith("Tile_")})
    assert len([m for m in a.compiled if m.startswith("Tile_")]) == 3      # IO, PE, MEM
    assert b.compiled == [b.top]
    assert b.tile_counts == {"IO": 12, "MEM": 21, "PE": 63}


def test_corrupt_cache_entry_is_a_miss(tmp_path):
    from garnet.build import generate
    from garnet.params import GarnetParams

    p = GarnetParams(name="c", width=3, height=2, tracks=2, pe=TOY, mem_ratio=0)
    generate(p, tmp_path / "c", rules=False)
    entries = sorted((tmp_path / "c" / ".cache" / "rtl").glob("Tile_*.json"))
    assert entries
    for e in entries:
        e.write_text(e.read_text().replace("endmodule", "endmodule // tampered", 1))
    ic_markers = list((tmp_path / "c" / ".cache" / "interconnect").glob("*.json"))
    ic_markers[0].write_bytes(b"not json")
    p2 = GarnetParams(name="c", width=3, height=2, tracks=2, pe=TOY, mem_ratio=0,
                      flush_interval=2)
    res = generate(p2, tmp_path / "c", rules=False)
    assert res.status["interconnect"] == "regenerated"
    assert all(m.startswith(("Tile_", "Garnet_")) for m in res.compiled)
    assert len(res.compiled) == len(entries) + 1                # every tile and the top
    assert "tampered" not in "".join(p.read_text() for p in (tmp_path / "c" / "rtl").iterdir())


def test_edited_design_file_is_not_reused(tmp_path):
    from garnet.build import generate
    from garnet.params import GarnetParams

    p = GarnetParams(name="t", width=3, height=2, tracks=2, pe=TOY, mem_ratio=0)
    generate(p, tmp_path / "t", rules=False)
    f = tmp_path / "t" / "config_map.json"
    f.write_text(f.read_text() + " ")
    res = generate(p, tmp_path / "t", rules=False)
    assert not res.nothing_rebuilt
    assert "previous design failed its manifest check" in res.summary()
    from garnet import collateral as gc
    gc.verify_files(tmp_path / "t", gc.read_design(tmp_path / "t"))


@pytest.mark.parametrize("field", ["tracks", "cb_sides", "timing"])
def test_interconnect_key_follows_interconnect_fields(field, tmp_path):
    from garnet.build import _inputs, compute_keys, spec_hashes
    from garnet.params import GarnetParams

    def keys(p):
        return compute_keys(_inputs(p, spec_hashes(p)), False, None)

    pub = {"timing": "cascade-table"}
    a = GarnetParams(width=4, height=3, pe=TOY, **pub)
    table = tmp_path / "delays.json"
    from canal.timing import default_table_text
    table.write_text(default_table_text().replace("184.89", "184.9"))
    b = GarnetParams(width=4, height=3, pe=TOY, **{
        "tracks": {"tracks": 4, **pub}, "cb_sides": {"cb_sides": ["NORTH", "WEST"], **pub},
        "timing": {"timing": str(table)}}[field])
    ka, kb = keys(a), keys(b)
    assert ka.interconnect != kb.interconnect and ka.rtl != kb.rtl
    c = GarnetParams(width=4, height=3, pe=TOY, name="other", flush_interval=1, **pub)
    kc = keys(c)
    assert kc.interconnect == ka.interconnect and kc.fabric == ka.fabric
    assert kc.rtl != ka.rtl and kc.design != ka.design
    # on the measured model (the default) the fabric collateral is a function of the RTL
    am = GarnetParams(width=4, height=3, pe=TOY)
    cm = GarnetParams(width=4, height=3, pe=TOY, name="other", flush_interval=1)
    kam, kcm = keys(am), keys(cm)
    assert kam.interconnect != ka.interconnect          # the model is part of the key
    assert kcm.interconnect == kam.interconnect and kcm.fabric != kam.fabric


def test_array_top_refuses_tiles_that_do_not_fit(tmp_path):
    """The text top checks the tile modules against the netlist: a tile port the top drives
    but the module lacks, or a port of another width, is a one-line SpecError naming the
    tile instance, the module and the port."""
    from canal.rtl import tile_circuit
    from cgra.errors import SpecError
    from garnet.array import array_top, build_interconnect, port_list, tile_shapes
    from garnet.params import GarnetParams

    p = GarnetParams(name="bad", width=3, height=2, tracks=2, pe=TOY, mem_ratio=0)
    ic = build_interconnect(p)
    shapes = tile_shapes(ic)
    ports = {s.module_name: port_list(tile_circuit(s, ic.configs[xy], ic.core(*xy)))
             for xy, s in shapes.items()}
    text, top_ports = array_top(ic, p, shapes, ports, "Top")
    assert text.count("\nmodule Top(") == 1 and text.rstrip().endswith("endmodule")
    assert [q["name"] for q in top_ports][:7] == ["clk_en", "flush", "config_addr",
                                                  "config_data", "config_write",
                                                  "config_read", "read_data"]
    assert [q["type"] for q in top_ports][-2:] == ["clock", "reset"]
    pe = shapes[(0, 1)].module_name
    lacking = {**ports, pe: [q for q in ports[pe] if q["name"] != "tile_id"]}
    with pytest.raises(SpecError, match=r"tile Tile_X00_Y01 \(Tile_PECore.*\) has no port\(s\) "
                                        r"\['tile_id'\]") as exc:
        array_top(ic, p, shapes, lacking, "Top")
    assert "\n" not in str(exc.value)
    narrow = {**ports, pe: [{**q, "width": 8} if q["name"] == "SB_T0_NORTH_SB_IN_B16" else q
                            for q in ports[pe]]}
    with pytest.raises(SpecError, match=r"input SB_T0_NORTH_SB_IN_B16 of tile Tile_X00_Y01 "
                                        r"\(.*\) is 8 bits but is driven by 16 bits"):
        array_top(ic, p, shapes, narrow, "Top")
