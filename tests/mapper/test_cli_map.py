"""`cgra map`: shipped DSL apps and CoreIR files onto a design directory; netlist JSON, .packed
and app.json written; per-stage times and counts printed; errors as one-line CgraErrors."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cgra.cli import cli
from cgra.errors import CollateralError, MappingError
from mapper.cli import map_cmd
from mapper.collateral import load_collateral
from mapper.params import AppParams
from mapper.flow import map_app
from mapper.frontend.coreir import example_kernels, example_path
from mapper.netlist import Netlist, parse_packed

#: session fixtures default_design / nomul_design (rule tables shared across workers)
pytest_plugins = ["mapper_support"]


@pytest.fixture(scope="module")
def coll(default_design):
    return load_collateral(default_design)


def test_map_gaussian_writes_netlist_packed_and_app(default_design, tmp_path):
    out = tmp_path / "gaussian"
    r = CliRunner().invoke(map_cmd, ["gaussian", "--design", str(default_design), "--out",
                                     str(out), "--vectors", "100"])
    assert r.exit_code == 0, r.output
    for step in ("front end", "memory mapping", "compute mapping", "equivalence check"):
        assert step in r.output
    assert "18 PEs, 2 MEMs, 6 registers, 2 IOs" in r.output
    nl = Netlist.load(out / "netlist.json")
    assert nl.counts() == {"pe": 18, "mem": 2, "reg": 6, "io_in": 1, "io_out": 1}
    packed = parse_packed((out / "gaussian.packed").read_text())
    assert sum(1 for b in packed.id_to_name if b.startswith("p")) == 18
    assert len(packed.nets) == len(nl.nets)
    pe = next(i for i in nl.instances.values() if i.kind == "pe")
    assert pe.tag == "p" and isinstance(pe.config["inst"], int) and pe.config["latency"] == 0
    app = json.loads((out / "app.json").read_text())
    assert app["schema"] == "mapper.app/1" and app["kind"] == "dsl"
    assert app["params"]["width"] == 64 and app["counts"]["pe"] == 18
    assert app["design_id"] == load_collateral(default_design).design_id
    assert app["ideal"]["first_output_cycle"] > 0


def test_map_app_counts_and_times(coll):
    res = map_app(AppParams("brighten_blur", vectors=50), coll)
    assert res.counts() == {"pe": 5, "mem": 1, "reg": 2, "io": 2}
    assert set(res.times) == {"front end", "memory mapping", "compute mapping",
                              "equivalence check"}
    assert all(t >= 0 for t in res.times.values())


def test_map_coreir_file(coll):
    res = map_app(AppParams(str(example_path("harris")), vectors=20), coll)
    assert res.counts()["pe"] == 90
    assert res.counts()["mem"] == 0
    assert res.name == "harris_compute"


def test_unknown_app_and_missing_design(coll, tmp_path):
    with pytest.raises(MappingError, match="unknown app 'nope'"):
        map_app(AppParams("nope"), coll)
    with pytest.raises(CollateralError, match="cgra rtl"):
        load_collateral(tmp_path / "missing")


def test_kernel_larger_than_the_design_is_refused(nomul_design, default_design, tmp_path):
    """(bad-input case) `cgra map` of a kernel that needs more PEs than the design has:
    exit 2, one line naming both counts, nothing written."""
    from mapper_support import DEFAULT_PE, write_collateral

    small = write_collateral(tmp_path / "tiny", DEFAULT_PE, default_design / "rules",
                             width=4, height=4)
    out = tmp_path / "out"
    r = subprocess.run([str(Path(sys.executable).with_name("cgra")), "map",
                        str(example_path("harris")), "--design", str(small), "--out", str(out),
                        "--vectors", "0"], capture_output=True, text=True)
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error: harris_compute needs 90 PE tiles but design tiny (4x4) "
                               "has 9")
    assert not out.exists()


def test_cgra_map_on_pe_without_multiplier_is_one_line_error(nomul_design, tmp_path):
    """Through the `cgra` entry point: MappingError naming the op and the kernel."""
    with pytest.raises(MappingError) as e:
        cli.main(["map", str(example_path("pointwise")), "--design",
                  str(nomul_design), "--out", str(tmp_path / "o")], standalone_mode=False)
    assert "coreir.mul" in str(e.value) and "hcompute_mult_stencil" in str(e.value)
    assert not (tmp_path / "o").exists()


def test_every_coreir_file_through_map_app(coll):
    total = {name: map_app(AppParams(str(p)), coll).counts()["pe"]
             for name, p in example_kernels().items()}
    assert total["gaussian"] == 20 and total["up_sample"] == 0
    assert len(total) == 10
