"""resources.json (issue 34 item 4): the resource vectors of one PE tile, one MEM tile and the
switch boxes, written by `cgra rtl` from the specs and read by the dataflow compiler as
PUConstraints. The 8x8 designs take their rule tables from the shared cache (build/rules,
as tests/e2e); the spec-edit test synthesises three targets into its own directory."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import networkx as nx
import pytest
from click.testing import CliRunner

from cgra.cli import cli
from cgra.errors import CollateralError
from garnet import collateral as gc
from garnet.build import generate
from garnet.params import load_toml
from lake.resources import MemResources, mem_resources
from mapper.collateral import load_collateral, load_resources
from mapper.dataflow.partition import check
from mapper.dataflow.resources import load_units
from peak import spec_hash
from peak.examples.cgra_pe import PE
from peak.ir import targets
from peak.resources import PEResources
from peak.rules import build_table
from peak.rules.format import table_path

ROOT = Path(__file__).resolve().parents[2]
SHARED_RULES = ROOT / "build" / "rules"


def _build(out: Path, name: str):
    return generate(load_toml(ROOT / "configs" / f"{name}.toml"), out, rules=True,
                    rules_dir=SHARED_RULES, jobs=2, config_file=f"configs/{name}.toml")


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    """configs/small.toml with its full rule table."""
    out = tmp_path_factory.mktemp("res") / "small"
    _build(out, "small")
    return out


@pytest.fixture(scope="module")
def nomul(tmp_path_factory) -> Path:
    """configs/small_nomul.toml (the PE without a multiplier) with its full rule table."""
    out = tmp_path_factory.mktemp("res") / "small_nomul"
    _build(out, "small_nomul")
    return out


def _mul_add_dfg() -> nx.DiGraph:
    """``out = a * b + c``: two op nodes (m: mul, s: add)."""
    g = nx.DiGraph()
    for n in ("a", "b", "c"):
        g.add_node(n, kind="input")
    g.add_node("m", kind="op", op="mul")
    g.add_node("s", kind="op", op="add")
    g.add_node("out", kind="output")
    g.add_edges_from([("a", "m"), ("b", "m"), ("m", "s"), ("c", "s"), ("s", "out")])
    return g


def test_small_resources_json_values(small):
    design = json.loads((small / "design.json").read_text())
    assert design["files"]["resources.json"] == gc.file_sha256(small / "resources.json")
    doc = json.loads((small / "resources.json").read_text())
    assert doc["schema"] == "garnet.resources/1"
    assert doc["array"] == {"width": 8, "height": 8, "data_width": 16, "pe_tiles": 42,
                            "mem_tiles": 14, "io_tiles": 8}
    assert design["array"]["tiles"] == {"IO": 8, "MEM": 14, "PE": 42}

    pe = doc["pe"]
    assert pe["schema"] == "peak.resources/1" and pe["spec_hash"] == spec_hash(PE)
    assert pe["pe"] == "peak.examples.cgra_pe:PE" and pe["rules"] == "found"
    assert {"coreir.add", "coreir.mul", "coreir.sub", "coreir.mux", "commonlib.smax",
            "coreir.const", "corebit.and"} <= set(pe["ops"])
    assert "pattern.muladd" not in pe["ops"]           # no rule: the PE has no fused mul-add
    assert pe["const_only_ops"] == ["coreir.ashr", "coreir.lshr", "coreir.shl"]
    assert pe["multi_op"]["pattern.select_slt"] == ["coreir.mux", "coreir.slt"]
    assert pe["stages"] == 2
    assert pe["width_classes"] == {"word": 16, "bit": 1}
    assert pe["inputs"] == {"bit": 3, "word": 2} and pe["outputs"] == {"bit": 1, "word": 1}
    assert pe["registers"]["state"] == {"bit": 3, "word": 2}
    assert pe["registers"]["constants"]["word"] == 2

    mem = doc["mem"]
    assert mem["schema"] == "lake.resources/1" and mem["preset"] == "dualport_2048x16"
    assert mem["spec_hash"] == design["spec_hashes"]["mem"]
    assert (mem["capacity_words"], mem["fetch_width"], mem["banks"], mem["data_width"]) == \
        (2048, 1, 1, 16)
    assert mem["ports"] == {"read": 1, "write": 1}
    assert mem["inputs"] == {"word": 1} and mem["outputs"] == {"word": 1}
    assert mem["counters"] == {"controllers": 2, "dims": 6, "address_generators": 2}
    assert mem["chain_tiles"] == 16 and "line_buffer" in mem["modes"]

    ic = doc["interconnect"]
    assert ic["schema"] == "canal.resources/1" and list(ic["classes"]) == ["word", "bit"]
    sides = {"NORTH": 5, "SOUTH": 5, "EAST": 5, "WEST": 5}
    for cls, width in (("word", 16), ("bit", 1)):
        c = ic["classes"][cls]
        assert (c["width"], c["topology"], c["track_length"]) == (width, "imran", 1)
        assert c["tracks"] == sides and c["registers"] == sides


def test_small_units_and_collateral(small):
    units = load_units(small)
    assert set(units) == {"pe", "mem"}
    pe, mem = units["pe"], units["mem"]
    assert (pe.kind, pe.count, pe.stages, pe.registers, pe.lanes) == ("pe", 42, 2, 2, 1)
    assert dict(pe.inputs) == {"scalar": 2, "vector": 0, "bit": 3}
    assert dict(pe.outputs) == {"scalar": 1, "vector": 0, "bit": 1}
    assert {"add", "sub", "mul", "select", "min", "max", "lt", "abs", "neg"} <= pe.ops
    assert not {"shl", "shr", "div", "exp"} & pe.ops    # shifts only by a constant, no divider
    assert (mem.kind, mem.count, mem.stages, mem.ops) == ("mem", 14, 0, frozenset())
    assert dict(mem.inputs) == {"scalar": 1, "vector": 0, "bit": 0}
    c = load_collateral(small)
    assert c.resources is not None and c.resources.mem.capacity_words == 2048
    assert c.require("resources").interconnect["word"].tracks["EAST"] == 5
    assert check(_mul_add_dfg(), [["m"], ["s"]], pe) == []


def test_pe_without_mul_has_no_mul_and_refuses_a_multiply(nomul):
    res = load_resources(nomul)
    assert "coreir.mul" not in res.pe.ops and "coreir.add" in res.pe.ops
    assert res.pe.spec == "peak.examples.cgra_pe_nomul:PE"
    pe = load_units(nomul)["pe"]
    assert "mul" not in pe.ops and "add" in pe.ops and pe.count == 42
    assert check(_mul_add_dfg(), [["m"], ["s"]], pe) == [
        "part 0 {m}: ops ['mul'] are not supported by a pe"]


def test_no_change_rebuild_keeps_bytes_and_reused_routing_rewrites_the_same(small, tmp_path):
    out = tmp_path / "small"
    shutil.copytree(small, out)
    before = (out / "resources.json").read_bytes()
    _build(out, "small")        # (rebuilds what generator sources edited since the fixture)
    assert (out / "resources.json").read_bytes() == before
    mtime = (out / "resources.json").stat().st_mtime_ns
    again = _build(out, "small")
    assert again.nothing_rebuilt
    assert (out / "resources.json").read_bytes() == before
    assert (out / "resources.json").stat().st_mtime_ns == mtime       # not even rewritten
    # a new TOML path changes only the design key: routing and RTL are reused (no graphs
    # in memory: resources.json is rebuilt from routing/) and the bytes stay the same
    renamed = generate(load_toml(ROOT / "configs" / "small.toml"), out, rules=True,
                       rules_dir=SHARED_RULES, jobs=2, config_file="configs/other.toml")
    assert renamed.status["fabric"] == "reused" and renamed.status["rtl"] == "reused"
    assert (out / "resources.json").read_bytes() == before
    gc.verify_files(out, gc.read_design(out))


def _three_targets(spec, shared: Path, jobs: int):
    """A rule builder for the test: PEak's synthesiser restricted to add, mul, const."""
    keys = [t.key for t in targets(16)
            if t.op in ("coreir.add", "coreir.mul", "coreir.const")]
    table = build_table(spec, shared, jobs=1, only=keys)
    return table_path(shared, table.pe), {e.target: e.action for e in table.entries}


def test_pe_spec_edit_regenerates_resources(tmp_path):
    nomul_src = (ROOT / "peak" / "examples" / "cgra_pe_nomul.py").read_text()
    (tmp_path / "my_pe.py").write_text(nomul_src)
    cfg = tmp_path / "pe.toml"
    cfg.write_text('name = "mine"\nwidth = 5\nheight = 3\ntracks = 3\nmem_ratio = 3\n'
                   'pe = "my_pe.py:PE"\ntiming = "cascade-table"\n')
    out = tmp_path / "mine"

    def gen():
        return generate(load_toml(cfg), out, rules_dir=tmp_path / "rules",
                        builder=_three_targets, config_file=cfg)

    gen()
    first = load_resources(out)
    assert first.pe.ops == frozenset({"coreir.add", "coreir.const"})
    assert (first.pe_tiles, first.mem_tiles, first.io_tiles) == (8, 2, 5)
    assert "mul" not in load_units(out)["pe"].ops
    # the edit: the spec file now defines the default PE (with its multiplier)
    (tmp_path / "my_pe.py").write_text("from peak.examples.cgra_pe import PE\n\n"
                                       "__all__ = ['PE']\n")
    with pytest.raises(CollateralError, match=r"resources\.json is stale: PE .*my_pe\.py:PE "
                                              r"was edited.*`cgra rtl --config"):
        load_units(out)                 # before `cgra rtl`: never used silently
    second = gen()
    assert "PE spec edited" in second.changed
    res = load_resources(out)
    assert res.pe.spec_hash == spec_hash(PE) != first.pe.spec_hash
    assert res.pe.ops == frozenset({"coreir.add", "coreir.const", "coreir.mul"})
    assert "mul" in load_units(out)["pe"].ops


def test_tampered_missing_or_malformed_resources_are_refused(small, tmp_path):
    out = tmp_path / "small"
    shutil.copytree(small, out)
    path = out / "resources.json"
    good = path.read_text()
    path.write_text(good.replace('"pe_tiles": 42', '"pe_tiles": 64'))
    with pytest.raises(CollateralError, match=r"resources\.json was modified after `cgra rtl`"
                                              r".*cgra rtl --config configs/small\.toml"):
        load_units(out)
    with pytest.raises(CollateralError, match=r"resources\.json was modified"):
        load_collateral(out)

    # malformed, yet in the manifest (re-recorded): the reader names the file and the key
    doc = json.loads(good)
    del doc["mem"]["capacity_words"]
    gc.write_json(path, doc)
    design = gc.read_design(out)
    gc.write_design(out, {k: v for k, v in design.items() if k not in ("schema", "files")})
    with pytest.raises(CollateralError, match=r"resources\.json \(mem\): malformed MEM "
                                              r"resources.*capacity_words.*cgra rtl"):
        load_units(out)

    # missing (and not in the manifest: a design of an older generator)
    path.unlink()
    gc.write_design(out, {k: v for k, v in design.items() if k not in ("schema", "files")})
    with pytest.raises(CollateralError, match=r"resources\.json is missing.*`cgra rtl "
                                              r"--config configs/small\.toml"):
        load_units(out)
    c = load_collateral(out)             # the rest of the design still loads
    assert c.resources is None
    with pytest.raises(CollateralError, match=r"resources\.json is missing"):
        c.require("resources")


def test_design_without_rules_has_no_ops(small_design):
    _, out = small_design                     # tests/garnet/conftest.py: --no-rules
    doc = json.loads((out / "resources.json").read_text())
    assert doc["pe"]["rules"] == "skipped" and doc["pe"]["ops"] is None
    assert doc["pe"]["inputs"] == {"bit": 3, "word": 2}
    assert doc["array"]["pe_tiles"] == 42 and doc["mem"]["capacity_words"] == 2048
    with pytest.raises(CollateralError, match=r"generated with --no-rules"):
        load_units(out)


def test_wide_fetch_memory_vector_and_malformed_parts():
    pub = mem_resources("pub_512x64")
    assert (pub["capacity_words"], pub["capacity_wide_words"], pub["fetch_width"]) == \
        (2048, 512, 4)
    assert pub["ports"] == {"read": 1, "write": 1}            # one RW port
    assert pub["storage_accesses_per_cycle"] == 1
    assert pub["inputs"] == {"word": 2} and pub["outputs"] == {"word": 2}
    assert pub["counters"] == {"controllers": 8, "dims": 6, "address_generators": 12}
    assert pub["modes"][0] == "vectorized_affine"
    assert MemResources.from_json(pub).capacity_wide_words == 512
    with pytest.raises(CollateralError, match=r"here: schema 'lake.collateral/1' is not "
                                              r"'lake.resources/1'"):
        MemResources.from_json({**pub, "schema": "lake.collateral/1"}, "here")
    with pytest.raises(CollateralError, match=r"here: malformed PE resources.*'rules' is "
                                              r"'maybe'"):
        PEResources.from_json({"schema": "peak.resources/1", "rules": "maybe"}, "here")


def test_cgra_dataflow_maps_onto_the_design_units(small, tmp_path):
    # the dataflow compiler partitions onto the PE's resource vector read from the design:
    # mlp_layer's shifts are by a constant (the stock PE's only kind of shift)
    res = CliRunner().invoke(cli, ["dataflow", "mlp_layer", "--design", str(small),
                                   "--out", str(tmp_path)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    rep = json.loads((tmp_path / "dataflow_report.json").read_text())
    assert rep["bit_exact"] and rep["target"] == f"design {small}"
    assert rep["mapping"]["available"] == {"mem": 14, "pe": 42}
    assert 1 <= rep["mapping"]["units"]["pe"] <= 42
    bad = CliRunner().invoke(cli, ["dataflow", "black_scholes", "--design", str(small),
                                   "--out", str(tmp_path / "b")])
    assert bad.exit_code != 0 and "not supported by any compute unit (pe)" in str(bad.exception)
