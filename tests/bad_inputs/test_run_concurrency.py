"""Two ``cgra run`` into one run directory, and ``kill -9`` of ``cgra run`` (issue 42,
acceptance): each run exits 0 with its own result or reports the lock, the directory is
never mixed (one app's files, the report of that app, the bitstream of an uninterrupted
run), no process of a killed run is left, and the next run is identical to an
uninterrupted one. On main before the issue a gaussian run exited 0 reporting pointwise's
result with gaussian's files left beside it."""
from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bad_support import cgra, error_line, session_members, start_cgra, wait_until_gone

APPS = ("gaussian", "pointwise")
#: files compared with the uninterrupted run (the bitstream, the simulation's output and
#: the app's output image)
COMPARED = ("{app}.bs", "sim.out", "{app}.png")


def _run_args(app: str, design: Path, out: Path) -> list:
    return ["run", app, "--design", design, "--out", out, "--size", "32"]


@pytest.fixture(scope="module")
def reference(small_design, tmp_path_factory) -> dict[str, dict[str, bytes]]:
    """app -> compared file -> bytes of an uninterrupted run (it also builds the design's
    Verilator harness once, for the runs below)."""
    out = {}
    for app in APPS:
        d = tmp_path_factory.mktemp("ref") / app
        res = cgra(_run_args(app, small_design, d), cwd=d.parent)
        assert res.returncode == 0, res.stderr
        out[app] = {f.format(app=app): (d / f.format(app=app)).read_bytes() for f in COMPARED}
    return out


def _consistent(d: Path, reference: dict[str, dict[str, bytes]]) -> str:
    """The app whose run ``d`` holds, after checking it holds that app's files only and
    exactly the uninterrupted run's bitstream and outputs."""
    app = json.loads((d / "app.json").read_text())["name"]
    report = json.loads((d / "run_report.json").read_text())
    assert report["app"] == app
    other = next(a for a in APPS if a != app)
    assert not [f.name for f in d.iterdir() if f.name.startswith((f"{other}.", f"{other}_"))]
    for f, data in reference[app].items():
        assert (d / f).read_bytes() == data, f
    return app


@pytest.mark.bad_silent
@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(offset=st.floats(min_value=0.0, max_value=4.0))
def test_two_runs_into_one_directory_never_mix(small_design, reference, tmp_path_factory,
                                               offset):
    d = tmp_path_factory.mktemp("two") / "run"
    first = start_cgra(_run_args("gaussian", small_design, d), cwd=d.parent)
    time.sleep(offset)
    second = cgra(_run_args("pointwise", small_design, d), cwd=d.parent)
    out, err = first.communicate(timeout=600)
    codes = (first.returncode, second.returncode)
    assert 0 in codes, (err, second.stderr)
    for code, stderr, pid in ((first.returncode, err, None),
                              (second.returncode, second.stderr, first.pid)):
        assert code in (0, 2) and "Traceback" not in stderr
        if code == 2:
            line = error_line(type("R", (), {"stderr": stderr})())
            assert "locked by pid" in line and "use another --out" in line
            if pid is not None:
                assert f"pid {pid}" in line
    app = _consistent(d, reference)
    # the run that finished last and succeeded is the one the directory holds
    assert app == ("pointwise" if second.returncode == 0 else "gaussian")


@pytest.mark.bad_state
@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(after=st.floats(min_value=0.3, max_value=3.5))
def test_kill_9_of_cgra_run_leaves_nothing_and_the_next_run_is_identical(
        small_design, reference, tmp_path_factory, after):
    d = tmp_path_factory.mktemp("kill") / "run"
    proc = start_cgra(_run_args("gaussian", small_design, d), cwd=d.parent, capture=False)
    time.sleep(after)
    os.kill(proc.pid, signal.SIGKILL)            # the parent only: its children must follow
    proc.wait(30)
    left = wait_until_gone(session_members(proc.pid), timeout=60)
    assert left == [], f"processes of the killed run still running: {left}"
    res = cgra(_run_args("gaussian", small_design, d), cwd=d.parent)
    assert res.returncode == 0, res.stderr
    assert _consistent(d, reference) == "gaussian"


@pytest.mark.bad_silent
def test_a_run_of_another_app_leaves_none_of_the_old_apps_files(small_design, reference,
                                                                tmp_path):
    """Runs one after the other: the second app's run removes the first one's files."""
    d = tmp_path / "run"
    for app in APPS:
        res = cgra(_run_args(app, small_design, d), cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        assert _consistent(d, reference) == app
