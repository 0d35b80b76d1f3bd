"""(issue 42, item 4) An output path that cannot be a writable directory is refused before
any work: exit 2, one line naming the option, the path and the fix, and no file changed.

As root, permissions do not stop a write, so the unwritable directory here is one below a
regular file (``somefile/sub``: it can never be created); ``--out`` naming a file is the
clashing case."""
from __future__ import annotations

import shutil

import pytest

from bad_support import SMALL, SWEEP, TOY_PE, cgra, error_line, snapshot

FILE = "somefile"
UNDER = "somefile/sub"

#: (case, command line with {bad} for the bad path, the option the message names, what it
#: did on main before issue 42: the pytest marker of its class, bench/bench_bad_inputs.py)
CASES = [
    ("rtl --out under a file", ["rtl", "--config", SMALL, "--out", "{bad}", "--no-rules"],
     "--out", "bad_traceback"),
    ("rtl --cache-dir under a file", ["rtl", "--config", SMALL, "--out", "d", "--no-rules",
                                      "--cache-dir", "{bad}"], "--cache-dir", "bad_silent"),
    ("rtl --rules-dir under a file", ["rtl", "--config", SMALL, "--out", "d",
                                      "--rules-dir", "{bad}"], "--rules-dir", "bad_traceback"),
    ("rules --out under a file", ["rules", "--pe", TOY_PE, "--out", "{bad}"], "--out",
     "bad_traceback"),
    ("map --out under a file", ["map", "pointwise", "--design", "d", "--out", "{bad}"],
     "--out", "bad_traceback"),
    ("run --out under a file", ["run", "pointwise", "--design", "d", "--out", "{bad}"],
     "--out", "bad_traceback"),
    ("dse --out under a file", ["dse", SWEEP, "--cache", "c", "--out", "{bad}"], "--out",
     "bad_traceback"),
    ("dse --cache under a file", ["dse", SWEEP, "--cache", "{bad}", "--out", "o"], "--cache",
     "bad_hang"),
    *[(f"{s} RUN_DIR under a file", [s, "{bad}"], "RUN_DIR", "bad_refused")
      for s in ("pack", "place", "route", "pipeline", "bitstream", "sim")],
]


@pytest.mark.parametrize("case,args,option", [
    pytest.param(*c[:3], id=c[0], marks=getattr(pytest.mark, c[3])) for c in CASES])
def test_output_below_a_file_is_refused_before_work(tmp_path, case, args, option):
    (tmp_path / FILE).write_text("a user's file\n")
    before = snapshot(tmp_path)
    res = cgra([a.format(bad=UNDER) if isinstance(a, str) else a for a in args], tmp_path)
    line = error_line(res)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    assert line.startswith(f"error: {option} ") and UNDER in line, line
    assert f"{tmp_path / FILE} is a file, so no directory can be created below it; give " \
           f"another {option}" in line, line
    assert snapshot(tmp_path) == before


#: commands whose directory option names an existing file (map's --out is a plain path:
#: checked by cgra.outputs; the others are refused by click's directory type, also exit 2)
FILE_CASES = [
    ("map", ["map", "pointwise", "--design", "d", "--out", FILE],
     f"error: --out {FILE}: exists and is a file, not a directory; remove it or give another "
     f"--out", "bad_traceback"),
    ("rtl", ["rtl", "--config", SMALL, "--out", FILE], f"Directory '{FILE}' is a file.",
     "bad_refused"),
    ("run", ["run", "pointwise", "--design", "d", "--out", FILE],
     f"Directory '{FILE}' is a file.", "bad_refused"),
    ("pack", ["pack", FILE], f"Directory '{FILE}' is a file.", "bad_refused"),
    ("dse", ["dse", SWEEP, "--cache", "c", "--out", FILE], f"Directory '{FILE}' is a file.",
     "bad_refused"),
]


@pytest.mark.parametrize("case,args,words", [
    pytest.param(*c[:3], id=c[0], marks=getattr(pytest.mark, c[3])) for c in FILE_CASES])
def test_output_that_is_a_file_is_refused(tmp_path, case, args, words):
    (tmp_path / FILE).write_text("a user's file\n")
    before = snapshot(tmp_path)
    res = cgra(args, tmp_path)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    assert words in error_line(res), res.stderr
    assert snapshot(tmp_path) == before


@pytest.mark.bad_traceback
def test_verilator_cache_of_the_design_that_is_a_file_is_refused(tmp_path, small_design):
    """`cgra run` writes the Verilator model cache ``<design>/../.sim-cache/`` (shared by the
    design directories beside it, mapper.sim.verilator): a file there is refused before the
    run directory is touched."""
    design = tmp_path / "d"
    shutil.copytree(small_design, design)
    (tmp_path / ".sim-cache").write_text("not a directory\n")
    before = snapshot(tmp_path)
    res = cgra(["run", "pointwise", "--design", design, "--out", tmp_path / "r"], tmp_path)
    assert res.returncode == 2, res.stderr
    assert error_line(res) == (f"error: --design {tmp_path / '.sim-cache'}: exists and is a "
                               f"file, not a directory; remove it or give another --design")
    assert snapshot(tmp_path) == before
