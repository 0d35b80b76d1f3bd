"""(issue 42, item 1) One writer per output directory: a second ``cgra`` command writing a
design, run or DSE directory that another live process is writing exits 2 at once, naming
the holder's pid and command, and changes nothing; a lock left by a dead process is taken
over; the lock goes with the process that took it (not with a forked child) and is released
however the command ends."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bad_support import (SMALL, SWEEP, Holder, cgra, error_line, manifest_mismatches,
                         small_toml, snapshot, start_cgra)
from cgra.errors import LockError
from cgra.lock import DirLock, lock_path


@pytest.mark.bad_silent
def test_second_writer_is_refused_and_a_stale_lock_taken_over(tmp_path):
    run = tmp_path / "run"
    holder = Holder(run)
    lock = tmp_path / ".run.lock"
    assert lock_path(run) == lock
    assert json.loads(lock.read_text())["pid"] == holder.pid
    with pytest.raises(LockError) as e:
        DirLock(run, "--out").acquire()
    assert e.value.pid == holder.pid and e.value.directory == str(run)
    assert f"--out {run}: locked by pid {holder.pid} (" in str(e.value)
    assert str(e.value).endswith("wait for it to finish or use another --out")

    # killed outright: the file stays, with the dead holder's pid, and is taken over
    holder.kill()
    assert json.loads(lock.read_text())["pid"] == holder.pid
    with DirLock(run, "--out") as mine:
        assert json.loads(lock.read_text())["pid"] == os.getpid()
        assert mine.fd is not None
    assert not lock.exists()                        # removed on release

    # a normal release removes the file too; the next writer locks a fresh one
    holder = Holder(run)
    holder.stop()
    assert not lock.exists()
    with DirLock(run):
        assert json.loads(lock.read_text())["pid"] == os.getpid()


_FORKER = textwrap.dedent("""
    import os, sys, time
    from cgra.lock import DirLock
    lock = DirLock(sys.argv[1]).acquire()
    if os.fork() == 0:                  # the child: it reports once it runs
        print(os.getpid(), flush=True)
        time.sleep(60)
        os._exit(0)
    sys.stdin.read()
""")


@pytest.mark.bad_state
def test_a_forked_child_does_not_keep_its_parents_lock(tmp_path):
    """The lock belongs to the process that took it: a child forked meanwhile (the RTL
    worker) drops its copy at once, so killing the parent frees the directory even while
    the child still runs."""
    run = tmp_path / "run"
    parent = subprocess.Popen([sys.executable, "-c", _FORKER, str(run)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    try:
        with pytest.raises(LockError):
            DirLock(run).acquire()
        parent.kill()
        parent.wait(30)
        os.kill(child, 0)                           # still running
        with DirLock(run):
            assert json.loads(lock_path(run).read_text())["pid"] == os.getpid()
    finally:
        os.kill(child, signal.SIGKILL)


@pytest.mark.bad_silent
def test_every_writing_command_reports_the_lock_and_changes_nothing(tmp_path):
    """``cgra rtl``, ``map``, the stage commands, ``sim``, ``run`` and ``dse`` on a directory
    another process is writing: exit 2 before any work, one line naming the directory, the
    holder's pid and the fix; no file of the directory or beside it changed."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "app.json").write_text('{"app": "pointwise"}\n')
    (run / "netlist.json").write_text("{}\n")
    design = tmp_path / "nodesign"          # never read: the lock is checked first
    holder = Holder(run)
    before = snapshot(tmp_path)
    commands = {
        "rtl": ["rtl", "--config", SMALL, "--out", run, "--no-rules"],
        "map": ["map", "pointwise", "--design", design, "--out", run],
        **{s: [s, run] for s in ("pack", "place", "route", "pipeline", "bitstream", "sim")},
        "run": ["run", "pointwise", "--design", design, "--out", run],
        "dse": ["dse", SWEEP, "--out", run, "--cache", tmp_path / "cache"],
    }
    try:
        for name, args in commands.items():
            res = cgra(args, tmp_path)
            line = error_line(res)
            assert res.returncode == 2, (name, res.stderr)
            assert line.startswith("error: ") and f" {run}: locked by pid {holder.pid} (" \
                in line, (name, line)
            assert f"(`lock_holder.py {run}`)" in line, line
            assert line.endswith("wait for it to finish or use another --out" if "--out" in args
                                 else "wait for it to finish or use another RUN_DIR"), line
            assert snapshot(tmp_path) == before, name
    finally:
        holder.stop()


def _one_design(design, want_tracks: int) -> None:
    doc = json.loads((design / "design.json").read_text())
    assert doc["params"]["tracks"] == want_tracks
    assert manifest_mismatches(design) == []        # every file from that one run


@pytest.mark.bad_silent
@settings(max_examples=5, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(offset=st.floats(min_value=0.0, max_value=6.0))
def test_two_rtl_runs_into_one_design_dir_never_mix(tmp_path_factory, offset):
    """Two `cgra rtl` of different designs (5 and 4 tracks) into one directory, the second
    started ``offset`` seconds after the first: each exits 0 with its own design, or one
    reports the other's lock (exit 2, its pid); the directory then holds exactly one design,
    that of the last run to succeed, and nothing else (no temporary sibling, no lock). Both
    on the published table: the property is the lock's, and 10 cold tile measurements
    (each example has its own working directory) would add ~5 min."""
    tmp = tmp_path_factory.mktemp("two")
    out = tmp / "d"
    tracks = {"a": 5, "b": 4}
    cfg = {"a": small_toml(tmp, 5, "cascade-table"), "b": small_toml(tmp, 4, "cascade-table")}
    procs = {"a": start_cgra(["rtl", "--config", cfg["a"], "--out", out, "--no-rules"], tmp)}
    time.sleep(offset)
    procs["b"] = start_cgra(["rtl", "--config", cfg["b"], "--out", out, "--no-rules"], tmp)
    ended: dict[str, float] = {}
    deadline = time.monotonic() + 300
    while len(ended) < 2 and time.monotonic() < deadline:
        for k, p in procs.items():
            if k not in ended and p.poll() is not None:
                ended[k] = time.monotonic()
        time.sleep(0.01)
    res = {k: (p.wait(10), p.communicate()) for k, p in procs.items()}
    codes = {k: r[0] for k, r in res.items()}
    ok = [k for k, c in codes.items() if c == 0]
    assert ok, res
    for k, (code, (stdout, stderr)) in res.items():
        other = procs["b" if k == "a" else "a"]
        if code == 0:
            assert stdout.strip().endswith(f"-> {out}"), stdout
        else:
            assert code == 2, stderr
            line = stderr.strip().splitlines()[-1]
            assert line.startswith(f"error: --out {out}: locked by pid {other.pid} (`cgra rtl "
                                   f"--config {cfg['b' if k == 'a' else 'a']}"), line
    last = max(ok, key=ended.__getitem__)          # the design of the last one to finish
    event("both ran, one after the other" if len(ok) == 2 else f"{ok[0]} ran, the other "
          f"reported its lock")
    _one_design(out, tracks[last])
    assert sorted(p.name for p in tmp.iterdir()) == sorted(["d", cfg["a"].name,
                                                            cfg["b"].name])


@pytest.mark.bad_state
def test_the_lock_is_released_on_ctrl_c_and_on_errors(tmp_path, tmp_path_factory):
    """Ctrl-C during `cgra rtl` (exit 130) and a refused stage command (exit 2) release the
    lock: the lock file is gone and the next writer proceeds. On the published table, so
    that nothing but the design is written in the working directory (a measured model
    caches its tiles in ``build/timing`` there)."""
    out = tmp_path / "d"
    cfg = small_toml(tmp_path_factory.mktemp("cfg"), 5, "cascade-table")
    p = start_cgra(["rtl", "--config", cfg, "--out", out, "--no-rules"], tmp_path)
    lock = tmp_path / ".d.lock"
    deadline = time.monotonic() + 60
    while not lock.exists():
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        time.sleep(0.02)
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert err.strip().splitlines()[-1] == "aborted"
    assert sorted(x.name for x in tmp_path.iterdir()) == []

    res = cgra(["pack", out], tmp_path)            # no run directory there: refused
    assert res.returncode == 2 and "app.json is missing" in error_line(res), res.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == []
