"""``kill -9`` at random times (issue 42, acceptance): of ``cgra rtl`` and ``cgra rules`` at
any moment of their run (hypothesis over the delay; tests/bad_inputs/test_run_concurrency.py
does ``cgra run``), no process of the killed command is left, and the next run gives the
files of an uninterrupted one. Also two ``cgra sim`` on one run directory (hypothesis over
the start offset): each exits 0 with its own result or reports the lock, and the directory
holds one simulation's files, never a mix (on main before the issue, run_report.json and
compare.png said camera while the images and sim files were coffee's)."""
from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bad_support import (TOY_PE, cgra, error_line, session_members, small_toml, start_cgra,
                         wait_until_gone)

SETTINGS = settings(max_examples=3, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _kill_at(args: list, cwd: Path, after: float) -> None:
    """Start ``cgra ARGS``, ``kill -9`` the command alone after ``after`` seconds (if it
    still runs) and check that none of its processes is left a few seconds later."""
    p = start_cgra(args, cwd, capture=False)
    time.sleep(after)
    if p.poll() is None:
        os.kill(p.pid, signal.SIGKILL)
    p.wait(30)
    assert wait_until_gone(session_members(p.pid), timeout=30) == []


def _manifest(design: Path) -> dict[str, str]:
    return json.loads((design / "design.json").read_text())["files"]


@pytest.fixture(scope="module")
def small_cfg(tmp_path_factory) -> Path:
    """configs/small.toml on the published table: the property is the kill's, and each
    example's own working directory would measure the tiles again (~15 s each)."""
    return small_toml(tmp_path_factory.mktemp("cfg"), 5, "cascade-table")


@pytest.fixture(scope="module")
def rtl_reference(tmp_path_factory, small_cfg) -> dict[str, str]:
    d = tmp_path_factory.mktemp("rtl_ref") / "d"
    res = cgra(["rtl", "--config", small_cfg, "--out", d, "--no-rules"], d.parent)
    assert res.returncode == 0, res.stderr
    return _manifest(d)


@pytest.mark.bad_state
@SETTINGS
@given(after=st.floats(min_value=0.1, max_value=5.0))
def test_kill_9_of_cgra_rtl_at_any_time(rtl_reference, small_cfg, tmp_path_factory, after):
    d = tmp_path_factory.mktemp("rtl_kill") / "d"
    _kill_at(["rtl", "--config", small_cfg, "--out", d, "--no-rules"], d.parent, after)
    res = cgra(["rtl", "--config", small_cfg, "--out", d, "--no-rules"], d.parent)
    assert res.returncode == 0, res.stderr
    assert _manifest(d) == rtl_reference


def _table(rules: Path) -> dict[str, bytes]:
    files = [rules / "ToyPE16.rules.json", *sorted((rules / "ToyPE16").iterdir())]
    return {f.relative_to(rules).as_posix(): f.read_bytes() for f in files}


@pytest.fixture(scope="module")
def rules_reference(tmp_path_factory) -> dict[str, bytes]:
    d = tmp_path_factory.mktemp("rules_ref") / "rules"
    res = cgra(["rules", "--pe", TOY_PE, "--out", d, "--jobs", "2"], d.parent)
    assert res.returncode == 0, res.stderr
    return _table(d)


@pytest.mark.bad_state
@SETTINGS
@given(after=st.floats(min_value=0.1, max_value=4.0))
def test_kill_9_of_cgra_rules_at_any_time(rules_reference, tmp_path_factory, after):
    d = tmp_path_factory.mktemp("rules_kill") / "rules"
    _kill_at(["rules", "--pe", TOY_PE, "--out", d, "--jobs", "2"], d.parent, after)
    res = cgra(["rules", "--pe", TOY_PE, "--out", d, "--jobs", "2"], d.parent, timeout=300)
    assert res.returncode == 0, res.stderr
    assert _table(d) == rules_reference


# ---------------------------------------------------------------------------- two cgra sim
IMAGES = ("camera", "coffee")


@pytest.fixture(scope="module")
def mapped(small_design, tmp_path_factory) -> tuple[Path, dict[str, bytes]]:
    """A gaussian run directory through the bitstream stage, and image -> the sim.out of an
    uninterrupted `cgra sim` with it."""
    d = tmp_path_factory.mktemp("sim") / "run"
    res = cgra(["run", "gaussian", "--design", small_design, "--out", d, "--size", "32"],
               d.parent)
    assert res.returncode == 0, res.stderr
    out = {}
    for image in IMAGES:
        res = cgra(["sim", d, "--image", image], d.parent)
        assert res.returncode == 0, res.stderr
        out[image] = (d / "sim.out").read_bytes()
    assert out["camera"] != out["coffee"]
    return d, out


@pytest.mark.bad_silent
@SETTINGS
@given(offset=st.floats(min_value=0.0, max_value=3.0))
def test_two_sims_on_one_run_directory_never_mix(mapped, offset):
    d, reference = mapped
    first = start_cgra(["sim", d, "--image", "camera"], d.parent)
    time.sleep(offset)
    second = cgra(["sim", d, "--image", "coffee"], d.parent)
    _out, err = first.communicate(timeout=600)
    codes = (first.returncode, second.returncode)
    assert 0 in codes, (err, second.stderr)
    for code, stderr in ((first.returncode, err), (second.returncode, second.stderr)):
        assert code in (0, 2) and "Traceback" not in stderr
        if code == 2:
            line = error_line(type("R", (), {"stderr": stderr})())
            assert "locked by pid" in line
    report = json.loads((d / "run_report.json").read_text())
    image = "coffee" if second.returncode == 0 else "camera"
    assert report["image"] == image
    assert (d / "sim.out").read_bytes() == reference[image]
