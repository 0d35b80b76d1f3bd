"""(issue 42, item 5) No orphan processes: ``kill -9`` of a command leaves none of the
processes it started behind (they are sent SIGKILL when it dies, :mod:`cgra.procs`), the
lock file it leaves is taken over, and the next run gives the same files as an
uninterrupted one."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bad_support import (TOY_PE, cgra, live, session_members, small_toml, start_cgra,
                         wait_for_children, wait_until_gone)

_MIDDLE = textwrap.dedent("""
    import multiprocessing, os, subprocess, sys, time
    from cgra.procs import die_with_parent, pdeathsig_preexec

    def child(parent):
        die_with_parent(parent)
        time.sleep(60)

    ctx = multiprocessing.get_context("fork")
    forked = ctx.Process(target=child, args=(os.getpid(),))
    forked.start()
    tool = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                            preexec_fn=pdeathsig_preexec(), start_new_session=True)
    print(forked.pid, tool.pid, flush=True)
    sys.stdin.read()
""")


@pytest.mark.bad_state
def test_forked_child_and_started_tool_die_with_their_parent():
    """A forked worker calling die_with_parent and a program started through
    pdeathsig_preexec (in a session of its own, as Verilator's make is) end when their
    parent is killed outright."""
    middle = subprocess.Popen([sys.executable, "-c", _MIDDLE], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    kids = [int(x) for x in middle.stdout.readline().split()]
    assert len(live(kids)) == 2
    middle.kill()
    middle.wait(30)
    assert wait_until_gone(kids) == []


def _files(design: Path) -> dict[str, str]:
    return json.loads((design / "design.json").read_text())["files"]


@pytest.mark.bad_state
def test_kill_9_of_cgra_rtl_leaves_no_worker_and_the_next_run_is_identical(tmp_path,
                                                                          tmp_path_factory):
    """`kill -9` of `cgra rtl` (the parent alone) while its RTL worker runs: the worker ends
    within seconds (it used to block forever, ~160 MB), the stale lock file is taken over by
    the next run, whose design has exactly the files of an uninterrupted run. On the
    published table (the kill lands in the RTL worker, before any tile measurement)."""
    small = small_toml(tmp_path_factory.mktemp("cfg"), 5, "cascade-table")
    ref = tmp_path / "ref"
    res = cgra(["rtl", "--config", small, "--out", ref, "--no-rules"], tmp_path)
    assert res.returncode == 0, res.stderr

    out = tmp_path / "d"
    p = start_cgra(["rtl", "--config", small, "--out", out, "--no-rules"], tmp_path, capture=False)
    workers = wait_for_children(p.pid)
    os.kill(p.pid, signal.SIGKILL)                 # the parent only, not its group
    p.wait(30)
    assert p.returncode == -signal.SIGKILL
    assert wait_until_gone(workers) == []
    assert session_members(p.pid) == []
    stale = tmp_path / ".d.lock"
    assert json.loads(stale.read_text())["pid"] == p.pid      # left by the dead run

    again = cgra(["rtl", "--config", small, "--out", out, "--no-rules"], tmp_path)
    assert again.returncode == 0, again.stderr
    assert not stale.exists()
    assert _files(out) == _files(ref) and len(_files(out)) > 20
    assert sorted(x.name for x in tmp_path.iterdir()) == ["d", "ref"]


def _table(rules: Path) -> dict[str, bytes]:
    """The rule table of ToyPE16 in a rules directory: table file and rule files (the
    timing file, wall times, is not part of it)."""
    files = [rules / "ToyPE16.rules.json", *sorted((rules / "ToyPE16").iterdir())]
    return {f.relative_to(rules).as_posix(): f.read_bytes() for f in files}


@pytest.mark.bad_state
def test_kill_9_of_cgra_rules_leaves_no_pool_worker(tmp_path):
    """`kill -9` of `cgra rules` while its synthesis workers run: they end (they used to wait
    forever for tasks, holding the cache entry's lock, so the next `cgra rules` waited too);
    the next run completes with the table of an uninterrupted run."""
    ref = cgra(["rules", "--pe", TOY_PE, "--out", tmp_path / "ref", "--jobs", "2"], tmp_path)
    assert ref.returncode == 0, ref.stderr

    out = tmp_path / "rules"
    p = start_cgra(["rules", "--pe", TOY_PE, "--out", out, "--jobs", "2"], tmp_path, capture=False)
    workers = wait_for_children(p.pid)
    os.kill(p.pid, signal.SIGKILL)
    p.wait(30)
    assert wait_until_gone(workers) == []
    assert session_members(p.pid) == []

    again = cgra(["rules", "--pe", TOY_PE, "--out", out, "--jobs", "2"], tmp_path, timeout=120)
    assert again.returncode == 0, again.stderr
    assert _table(out) == _table(tmp_path / "ref")
