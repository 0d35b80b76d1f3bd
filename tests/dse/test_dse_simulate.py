"""Issue 17: `simulate = true` in a sweep runs every point through the bitstream and a
Verilator simulation on the design's RTL, checked bit for bit against numpy and Halide; the
simulated stream cycles are recorded beside the static schedule's, a simulated point has its
own cache entry, and a second run computes nothing."""
from __future__ import annotations

import csv
import pathlib
import subprocess
import sys

from mapper.sim.verilator import model_cache_dir

ROOT = pathlib.Path(__file__).resolve().parents[2]
#: the rule tables of the whole suite (content-keyed: shared with the e2e designs)
RULES = str(ROOT / "build" / "rules")
CGRA = pathlib.Path(sys.executable).parent / "cgra"

SWEEP = """[sweep]
base = "{root}/configs/small.toml"
name = "sim"
apps = ["pointwise", "gaussian", "downsample"]
image = [32, 24]
seed = 0
simulate = {simulate}

[grid]
pe = ["D1"]
timing = ["cascade-table"]      # the published table: the test is the simulation's, not the STA's
"""


def _dse(sweep: pathlib.Path, cache: pathlib.Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(CGRA), "dse", str(sweep), "--cache", str(cache), "--rules", RULES, "--workers",
                           "1", "--no-progress"], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)


def test_simulated_sweep_records_verilator_cycles(tmp_path, small_design):
    cache = tmp_path / "cache"
    # the sweep's design is configs/small.toml's RTL: its Verilator model cache (that of a
    # design in <cache>/designs) is the session's e2e one, content-keyed and locked, so the
    # model the e2e tests build is not built again
    shared = model_cache_dir(small_design)
    shared.mkdir(exist_ok=True)
    link = model_cache_dir(cache / "designs" / "any")
    link.parent.mkdir(parents=True)
    link.symlink_to(shared, target_is_directory=True)
    sim = tmp_path / "sim.toml"
    sim.write_text(SWEEP.format(root=ROOT, simulate="true"))
    first = _dse(sim, cache)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "computed 3 points (1 designs)" in first.stdout
    # --rules: the rule tables come from (and go to) the shared directory, not <cache>/rules
    assert not (cache / "rules").exists()
    assert (pathlib.Path(RULES) / "PE.rules.json").is_file()
    rows = list(csv.DictReader(open(cache / "results" / "sim" / "results.csv")))
    assert [r["status"] for r in rows] == ["ok"] * 3, [r["error"] for r in rows]
    for r in rows:
        # the Verilator run matched both golden models (else the point would have failed)
        # and streamed the frame in exactly the cycles the static schedule predicts
        assert int(r["sim_cycles"]) == int(r["cycles"]), r
        assert float(r["sim_s"]) > 0
    by_app = {r["app"]: int(r["sim_cycles"]) for r in rows}
    assert by_app["pointwise"] >= 32 * 24 and by_app["downsample"] >= 32 * 24
    again = _dse(sim, cache)
    assert "computed 0 points" in again.stdout
    # without simulation the same points are other result files: computed anew (the design
    # is reused), with the same static cycles and no sim columns filled
    plain = tmp_path / "plain.toml"
    plain.write_text(SWEEP.format(root=ROOT, simulate="false"))
    third = _dse(plain, cache)
    assert third.returncode == 0 and "computed 3 points" in third.stdout, third.stdout
    rows2 = list(csv.DictReader(open(cache / "results" / "sim" / "results.csv")))
    assert all(r["sim_cycles"] == "" and r["sim_s"] == "" for r in rows2)
    assert {r["app"]: r["cycles"] for r in rows2} == {r["app"]: r["cycles"] for r in rows}
