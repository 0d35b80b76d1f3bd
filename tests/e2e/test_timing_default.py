"""The measured timing model is the default (issue 40, item 3), end to end: `cgra run
gaussian` on configs/small_measured.toml -- configs/small.toml with the default written out
(tests/garnet/test_params.py checks they differ only in name) -- is bit-exact, pipelines
toward the measured model's floor and reports that model by name; `--fmax 900`, which the
published table meets, reports the real shortfall on the measured one (Cascade §V-A: the
model follows the generated tiles)."""
from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CGRA = str(pathlib.Path(sys.executable).parent / "cgra")


def _run(design: pathlib.Path, out: pathlib.Path, *args: str) -> dict:
    proc = subprocess.run([CGRA, "run", "gaussian", "--design", str(design), "--seed", "3",
                           "--out", str(out), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "matches numpy and Halide bit-exactly" in proc.stdout
    rep = json.loads((out / "pnr_report.json").read_text())["timing"]
    assert rep["model"] in proc.stdout            # every MHz line names its model
    return rep


def test_gaussian_on_the_default_model_meets_its_floor_and_reports_900_mhz_short(
        measured_small_design, tmp_path):
    timing = json.loads((measured_small_design / "timing.json").read_text())
    assert timing["source"] == "measured"
    mul = timing["pe_ops"]["coreir.mul"]
    assert timing["pe_ops"]["coreir.add"] < mul          # the multiply is the slowest op used
    # without --fmax: the floor of the measured model is a PE core (the published table's
    # is a MEM core, 1000 ps), here gaussian's multiply; pipelining reaches it
    rep = _run(measured_small_design, tmp_path / "auto")
    assert rep["model"].startswith("measured (OpenSTA ") and "liberty cgra_le65" in rep["model"]
    assert rep["target"].startswith("PE core (coreir.mul)")
    assert rep["target_period_ps"] == pytest.approx(mul, abs=0.01)
    assert rep["period_ps"] == pytest.approx(mul, abs=0.01)
    assert "target_missed" not in rep
    # --fmax 900: below every PE op of the measured model, so it stops at the same clock and
    # says why, instead of reporting the table's 900 MHz
    rep = _run(measured_small_design, tmp_path / "f900", "--fmax", "900")
    assert rep["target_mhz"] == 900.0
    assert rep["fmax_mhz"] == pytest.approx(1e6 / mul, abs=0.01) and rep["fmax_mhz"] < 900
    miss = rep["target_missed"]
    assert miss.startswith(f"Fmax {1e6 / mul:.0f} MHz < 900 MHz: the critical path (PE ")
    assert "starts at the registered inputs of PE " in miss
    assert miss.endswith("its core delay is a stage no pipeline register can split (a "
                         "faster PE op or a lower --fmax)")
