"""The collateral reader (mapper.collateral): schema versions, spec hashes, stale and
missing files -> CollateralError naming the file and how to regenerate it."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cgra.errors import CollateralError
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


def test_valid_design_loads(design):
    c = load_collateral(design)
    assert c.pe["spec"] == "peak.examples.cgra_pe:PE"
    assert c.pe["instruction_width"] == 62
    assert c.mem["name"] == "dualport_2048x16"
    assert c.rules.spec_hash == c.pe_hash
    assert c.rules.status["coreir.add"] == "found"
    assert c.rules.status["pattern.muladd"] == "none"      # the default PE has no MAC
    assert c.rules.rules_for("coreir.mux")[0].n_ops == 2      # a select pattern first
    add = c.rules.by_key["coreir.add[in1=const]"]
    assert add.cost == 1 and add.n_consts == 1
    assert sorted(c.routing_paths) == [1, 16]
    c.check_routing()


def test_missing_directory_names_the_command(tmp_path):
    with pytest.raises(CollateralError, match=r"does not exist.*cgra rtl"):
        load_collateral(tmp_path / "nope")


@pytest.mark.parametrize("name", ["design.json", "pe.json", "mem.json", "config_map.json"])
def test_missing_file_is_named(design, name):
    (design / name).unlink()
    with pytest.raises(CollateralError) as e:
        load_collateral(design)
    assert name in str(e.value) and "cgra rtl" in str(e.value)


def test_wrong_schema_version(design):
    _edit(design / "design.json", lambda d: d.update(schema="garnet.design/0"))
    with pytest.raises(CollateralError, match=r"design.json: schema 'garnet.design/0'"):
        load_collateral(design)


def test_pe_hash_mismatch_between_files(design):
    _edit(design / "design.json", lambda d: d["spec_hashes"].update(pe="0" * 64))
    with pytest.raises(CollateralError, match=r"pe.json: PE spec hash .* differs"):
        load_collateral(design)


def test_pe_edited_after_generation_is_stale(design):
    """The PE source changed since `cgra rtl`: every recorded hash agrees, but not with the
    current spec."""
    old = "1" * 64
    _edit(design / "design.json", lambda d: d["spec_hashes"].update(pe=old))
    _edit(design / "pe.json", lambda d: d.update(spec_hash=old))
    with pytest.raises(CollateralError, match=r"pe.json is stale"):
        load_collateral(design)
    # without the source check, the next inconsistency is found: rules of another hash
    with pytest.raises(CollateralError, match=r"garnet_rules.json: rules are stale"):
        load_collateral(design, check_spec=False)


def test_stale_rules_stamp(design):
    _edit(design / "rules" / "garnet_rules.json", lambda d: d.update(spec_hash="2" * 64))
    with pytest.raises(CollateralError, match=r"garnet_rules.json: rules are stale"):
        load_collateral(design)


def test_stale_rule_table(design):
    table = design / "rules" / "PE.rules.json"
    _edit(table, lambda d: d.update(spec_hash="3" * 64))
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


def test_stale_routing_graph(design):
    _edit(design / "routing" / "graph_16.json", lambda d: d.update(nodes=[{"id": "x"}]))
    c = load_collateral(design)
    with pytest.raises(CollateralError, match=r"graph_16.json: routing graph does not match"):
        c.check_routing()
