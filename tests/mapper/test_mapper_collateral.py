"""The collateral reader (mapper.collateral.load_collateral): schema versions, the file
manifest of design.json, spec hashes, stale and missing files -> CollateralError naming the
file, the hashes and how to regenerate it."""
from __future__ import annotations

import dataclasses

import json
import shutil
from pathlib import Path

import pytest

from cgra.errors import CollateralError
from garnet import collateral as gc
from mapper.collateral import load_collateral, load_rule_table

#: session fixtures default_design / nomul_design (rule tables shared across workers)
pytest_plugins = ["mapper_support"]


@pytest.fixture
def design(default_design, tmp_path) -> Path:
    """A private copy of the default design to break."""
    d = tmp_path / "default"
    shutil.copytree(default_design, d)
    return d


def _edit(path: Path, fn) -> None:
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc))


def _reseal(design: Path) -> None:
    """Rewrite design.json's manifest over the current files (as if `cgra rtl` had written
    them): the checks behind the manifest are then exercised."""
    doc = json.loads((design / "design.json").read_text())
    gc.write_design(design, {k: v for k, v in doc.items() if k not in ("schema", "files")})


def test_valid_design_loads(design):
    c = load_collateral(design)
    assert c.pe.spec == "peak.examples.cgra_pe:PE"
    assert c.pe.instruction_width == 62 and c.pe_latency == 0
    assert c.mem.preset == c.mem_preset == "dualport_2048x16"
    assert (c.mem.capacity_words, c.mem.data_width, c.mem.wide_word_width) == (2048, 16, 16)
    assert c.design.name == c.name == "default" and c.design.widths == (16, 1)
    for part, field in ((c, "pe"), (c.pe, "spec"), (c.mem, "capacity_words"),
                        (c.design, "widths"), (c.timing, "table"), (c.config_map, "nodes"),
                        (c.graphs[16], "succ"), (c.pe_tile, "latency_cycles")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(part, field, None)                # typed, frozen collateral
    assert c.rules.spec_hash == c.pe_hash
    assert c.rules.status["coreir.add"] == "found"
    assert c.rules.status["pattern.muladd"] == "none"      # the default PE has no MAC
    assert c.rules.rules_for("coreir.mux")[0].n_ops == 2      # a select pattern first
    add = c.rules.by_key["coreir.add[in1=const]"]
    assert add.cost == 1 and add.n_consts == 1
    assert list(c.graphs) == [16, 1] and c.size == (16, 16)
    assert c.timing.source == "default" and c.timing.core("pe") == 700.0
    assert c.design_id == gc.file_sha256(design / "design.json")
    assert len(c.config_map.nodes) > 1000


def test_missing_directory_names_the_command(tmp_path):
    with pytest.raises(CollateralError, match=r"does not exist.*cgra rtl"):
        load_collateral(tmp_path / "nope")


@pytest.mark.parametrize("name", ["design.json", "pe.json", "mem.json", "config_map.json",
                                  "timing.json", "routing/graph_16.json"])
def test_missing_file_is_named(design, name):
    (design / name).unlink()
    with pytest.raises(CollateralError) as e:
        load_collateral(design)
    assert name in str(e.value) and "cgra rtl" in str(e.value)


@pytest.mark.parametrize("name", ["routing/graph_16.json", "routing/graph_1.txt",
                                  "rules/PE.rules.json", "rules/PE/coreir.add.json",
                                  "rules/garnet_rules.json", "config_map.json", "timing.json",
                                  "mem.json", "pe.json"])
def test_tampered_file_is_stale(design, name):
    """Any change to a collateral file after `cgra rtl` (here one byte appended) is refused
    naming the file, both hashes and the regeneration command."""
    p = design / name
    p.write_bytes(p.read_bytes() + b" ")
    with pytest.raises(CollateralError) as e:
        load_collateral(design)
    msg = str(e.value)
    assert f"{name} was modified after `cgra rtl` wrote it" in msg
    assert "design.json records" in msg and "cgra rtl --config" in msg


def test_truncated_routing_graph_is_refused(design):
    """(bad-input case) a routing graph cut in half: refused as stale, not skipped."""
    p = design / "routing" / "graph_16.json"
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    with pytest.raises(CollateralError, match=r"graph_16.json was modified"):
        load_collateral(design)
    _reseal(design)         # even with a consistent manifest, the reader refuses it
    with pytest.raises(CollateralError, match=r"graph_16.json: cannot read routing graph"):
        load_collateral(design)


def test_extra_file_is_refused(design):
    (design / "routing" / "graph_8.json").write_text("{}")
    with pytest.raises(CollateralError, match=r"graph_8.json is not part of the design"):
        load_collateral(design)
    (design / "routing" / "graph_8.json").unlink()
    (design / "sim").mkdir()             # the Verilator cache is not collateral
    (design / "sim" / "x").write_text("ok")
    load_collateral(design)


def test_wrong_schema_version(design):
    _edit(design / "design.json", lambda d: d.update(schema="garnet.design/1"))
    with pytest.raises(CollateralError, match=r"design.json: schema 'garnet.design/1'"):
        load_collateral(design)


def test_pe_hash_mismatch_between_files(design):
    _edit(design / "design.json", lambda d: d["spec_hashes"].update(pe="0" * 64))
    with pytest.raises(CollateralError, match=r"pe.json: PE spec hash .* differs"):
        load_collateral(design)


def test_pe_edited_after_generation_is_stale(design, monkeypatch):
    """The PE source changed since `cgra rtl` (its hash now differs from every recorded
    one): stale, naming the spec and both hashes."""
    import peak
    monkeypatch.setattr(peak, "spec_hash", lambda spec: "1" * 64)
    with pytest.raises(CollateralError, match=r"pe.json is stale: PE peak.examples.cgra_pe:PE "
                                              r"was edited .* now 111111111111"):
        load_collateral(design)
    load_collateral(design, check_spec=False)


def test_stale_rules_stamp(design):
    _edit(design / "rules" / "garnet_rules.json", lambda d: d.update(spec_hash="2" * 64))
    _reseal(design)
    with pytest.raises(CollateralError, match=r"garnet_rules.json: rules are stale"):
        load_collateral(design)


def test_stale_rule_table(design):
    _edit(design / "rules" / "PE.rules.json", lambda d: d.update(spec_hash="3" * 64))
    _reseal(design)
    with pytest.raises(CollateralError, match=r"PE.rules.json: rule table is stale"):
        load_collateral(design)


def test_missing_rule_file(design):
    (design / "rules" / "PE" / "coreir.add.json").unlink()
    with pytest.raises(CollateralError, match=r"coreir.add.json"):
        load_collateral(design)


def test_unknown_rule_table_version(design):
    table = design / "rules" / "PE.rules.json"
    _edit(table, lambda d: d.update(version=99))
    with pytest.raises(CollateralError, match=r"version 99.*cgra rules"):
        load_rule_table(design / "rules")


def test_malformed_timing_model(design):
    _edit(design / "timing.json", lambda d: d["table"].pop("register_mux"))
    _reseal(design)
    with pytest.raises(CollateralError, match=r"timing.json: malformed timing model .*"
                                              r"register_mux"):
        load_collateral(design)
