"""`cgra map`: shipped DSL apps and CoreIR files onto a collateral directory; netlist JSON and
.packed written; per-stage times and counts printed; errors as one-line CgraErrors."""
from __future__ import annotations

import glob
from pathlib import Path

import pytest
from click.testing import CliRunner

from cgra.cli import cli
from cgra.errors import CollateralError, MappingError
from mapper.cli import map_app, map_cmd
from mapper.netlist import Netlist, parse_packed

COREIR = Path(__file__).resolve().parents[3] / "shared" / "apps" / "coreir"

#: session fixtures default_design / nomul_design (rule tables shared across workers)
pytest_plugins = ["mapper_support"]


def test_map_gaussian_writes_netlist_and_packed(default_design, tmp_path):
    out = tmp_path / "gaussian"
    r = CliRunner().invoke(map_cmd, ["gaussian", "--design", str(default_design), "--out",
                                     str(out), "--vectors", "100"])
    assert r.exit_code == 0, r.output
    for step in ("collateral", "front end", "memory mapping", "compute mapping",
                 "equivalence check"):
        assert step in r.output
    assert "18 PEs, 2 MEMs, 6 registers, 2 IOs" in r.output
    nl = Netlist.load(out / "gaussian.json")
    assert nl.counts() == {"pe": 18, "mem": 2, "reg": 6, "io_in": 1, "io_out": 1}
    packed = parse_packed((out / "gaussian.packed").read_text())
    assert sum(1 for b in packed.id_to_name if b.startswith("p")) == 18
    assert len(packed.nets) == len(nl.nets)
    pe = next(i for i in nl.instances.values() if i.kind == "pe")
    assert pe.tag == "p" and isinstance(pe.config["inst"], int) and pe.config["latency"] == 0


def test_map_app_counts_and_times(default_design):
    res = map_app("brighten_blur", default_design, vectors=50)
    assert res.counts() == {"pe": 5, "mem": 1, "reg": 2, "io": 2}
    assert set(res.times) == {"collateral", "front end", "memory mapping", "compute mapping",
                              "equivalence check"}
    assert all(t >= 0 for t in res.times.values())


def test_map_coreir_file(default_design, tmp_path):
    app = COREIR / "harris_compute.json"
    res = map_app(str(app), default_design, vectors=20)
    assert res.counts()["pe"] == 90
    assert res.counts()["mem"] == 0
    paths = res.write(tmp_path)
    assert paths[0].name == "harris_compute.json" and paths[1].is_file()
    assert Netlist.load(paths[0]).counts()["pe"] == 90


def test_unknown_app_and_missing_design(default_design, tmp_path):
    with pytest.raises(MappingError, match="unknown app 'nope'"):
        map_app("nope", default_design, vectors=0)
    with pytest.raises(CollateralError, match="cgra rtl"):
        map_app("gaussian", tmp_path / "missing", vectors=0)


def test_cgra_map_on_pe_without_multiplier_is_one_line_error(nomul_design, tmp_path, capsys):
    """Through the `cgra` entry point: MappingError naming the op and the kernel."""
    with pytest.raises(MappingError) as e:
        cli.main(["map", str(COREIR / "pointwise_compute.json"), "--design",
                  str(nomul_design), "--out", str(tmp_path)], standalone_mode=False)
    assert "coreir.mul" in str(e.value) and "hcompute_mult_stencil" in str(e.value)
    assert not list(tmp_path.iterdir())


def test_every_coreir_file_through_map_app(default_design):
    total = {Path(p).stem: map_app(p, default_design, vectors=0).counts()["pe"]
             for p in sorted(glob.glob(str(COREIR / "*.json")))}
    assert total["gaussian_compute"] == 20 and total["up_sample_compute"] == 0
    assert len(total) == 10
