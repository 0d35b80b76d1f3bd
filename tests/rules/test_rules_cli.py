"""`cgra rules`: one-line errors for malformed input, and a small end-to-end run."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cgra.errors import SpecError
from peak.rules import load_spec

ROOT = Path(__file__).resolve().parents[2]
CGRA = [sys.executable, "-c", "from cgra.cli import main; main()"]


def _run(args, tmp_path):
    return subprocess.run(CGRA + ["rules", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_module_that_does_not_import(tmp_path):
    r = _run(["--pe", "no_such_pkg.pe:PE", "--out", str(tmp_path / "o")], tmp_path)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "no_such_pkg.pe" in lines[0] and "does not import" in lines[0]


def test_class_that_is_not_a_peak_spec(tmp_path):
    r = _run(["--pe", "peak.examples.cgra_pe:ALU", "--out", str(tmp_path / "o")], tmp_path)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "ALU is not a PEak spec class" in lines[0]
    assert "cgra_pe.py" in lines[0]


def test_load_spec_errors(tmp_path):
    """peak.rules re-exports peak.load_spec; every resolution error is a SpecError."""
    with pytest.raises(SpecError, match="not of the form"):
        load_spec("peak.examples.cgra_pe")
    with pytest.raises(SpecError, match="has no attribute 'Nope'"):
        load_spec("peak.examples.cgra_pe:Nope")
    bad = tmp_path / "broken_pe.py"
    bad.write_text("import this_module_does_not_exist_either\n")
    with pytest.raises(SpecError, match="does not import"):
        load_spec(f"{bad}:PE")
    with pytest.raises(SpecError, match="not a PEak spec"):
        load_spec("peak.examples.toy_pe:make_toy_pe")
    assert load_spec("peak.examples.toy_pe:make_toy_pe(8)").width == 8


def test_bad_check_against_spec_is_reported_before_writing(tmp_path):
    bad = tmp_path / "bad_pe.py"
    bad.write_text(Path(ROOT / "peak" / "examples" / "toy_pe.py").read_text()
                   .replace("B = B * C", "B = B * C + (1 << 20)"))
    line = next(i for i, t in enumerate(bad.read_text().splitlines(), 1) if "1 << 20" in t)
    out = tmp_path / "o"
    r = _run(["--pe", "peak.examples.toy_pe:make_toy_pe(8)", "--out", str(out),
              "--check-against", f"{bad}:make_toy_pe(8)"], tmp_path)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {bad}:{line}: ToyPE8.__call__: ")
    assert "int constant 1 << 20 (= 1048576) does not fit the 8-bit operand of `+`" in lines[0]
    assert not out.exists()


def test_cli_toy_run_and_check(tmp_path):
    out = tmp_path / "toy"
    args = ["--pe", "peak.examples.toy_pe:make_toy_pe(8)", "--out", str(out),
            "--only", "coreir.add", "--only", "coreir.and", "--only", "coreir.mul",
            "--check-against", "peak.examples.toy_pe:make_toy_pe(8)"]
    r = _run(args, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "coreir.add" in r.stdout and "all 2 rules of ToyPE8 hold on ToyPE8" in r.stdout
    doc = json.loads((out / "ToyPE8.rules.json").read_text())
    assert {e["target"]: e["status"] for e in doc["entries"]} == \
        {"coreir.add": "found", "coreir.and": "found", "coreir.mul": "none"}
    timing = json.loads((out / "ToyPE8.timing.json").read_text())
    assert {e["action"] for e in timing["entries"]} == {"synthesised"}
    r2 = _run(args, tmp_path)                       # warm: everything from the cache
    assert r2.returncode == 0, r2.stderr
    timing = json.loads((out / "ToyPE8.timing.json").read_text())
    assert {e["action"] for e in timing["entries"]} == {"cached"}
