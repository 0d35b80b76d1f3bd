"""The Verilator build of the stream harness (:func:`mapper.sim.verilator.build_harness`):
progress messages, and an interrupted build leaves nothing behind (no ``sim/.<key>.tmp-<pid>``
directory, no Verilator/make/compiler process); directories of dead builds are removed by the
next build, never those of a live process."""
from __future__ import annotations

import os
import pathlib
import queue
import re
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cgra.errors import SimulationError  # noqa: E402
from mapper.sim.verilator import (SimParams, build_harness, group_members,  # noqa: E402
                             remove_stale_builds)

CGRA = pathlib.Path(sys.executable).with_name("cgra")

#: build_harness in a subprocess that turns SIGTERM into an exception, as `cgra` does
BUILD_SCRIPT = """
import signal, sys
from cgra.interrupt import Terminated
from mapper.sim.verilator import build_harness

def term(signum, frame):
    raise Terminated()

signal.signal(signal.SIGTERM, term)
try:
    build_harness(sys.argv[1], progress=lambda m: print(m, flush=True))
except Terminated:
    print("terminated", flush=True)
    sys.exit(143)
"""


@pytest.fixture(scope="module")
def design(tmp_path_factory) -> pathlib.Path:
    """The 8x8 design (configs/small.toml), RTL and collateral only."""
    out = tmp_path_factory.mktemp("simbuild") / "small"
    r = subprocess.run([str(CGRA), "rtl", "--config", str(ROOT / "configs" / "small.toml"),
                        "--out", str(out), "--no-rules"], cwd=ROOT, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return out


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie or a vanished process does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def descendants(pid: int) -> dict[int, int]:
    """Live descendants of ``pid``: pid -> process group."""
    found: dict[int, int] = {}
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return found
    for k in kids:
        try:
            if k.status() != psutil.STATUS_ZOMBIE:
                found[k.pid] = os.getpgid(k.pid)
        except (psutil.NoSuchProcess, ProcessLookupError):
            continue
    return found


def live_in_groups(pgids: set[int]) -> list[int]:
    return [pid for g in pgids for pid in group_members(g)]


def tmp_dirs(design: pathlib.Path) -> list[str]:
    sim = design / "sim"
    return sorted(p.name for p in sim.iterdir() if ".tmp-" in p.name) if sim.is_dir() else []


def test_sigterm_during_build_kills_compilers_and_removes_tmp(design):
    built_before = sorted((design / "sim").glob("*/ok"))
    proc = subprocess.Popen([sys.executable, "-c", BUILD_SCRIPT, str(design)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def reader() -> None:
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=reader, daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + 240
    try:
        # wait until the C++ compilers run (verilation of 8x8 takes a few seconds)
        while not (seen and seen[-1].startswith("compiling C++")):
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            assert line is not None, f"build ended before compiling: {seen}"
            seen.append(line)
        assert [n for n in tmp_dirs(design) if n.endswith(f".tmp-{proc.pid}")], tmp_dirs(design)
        kids = descendants(proc.pid)
        groups = set(kids.values()) - {proc.pid}
        assert groups, f"verilator/make must run in their own process group: {kids}"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    while (line := lines.get(timeout=10)) is not None:
        seen.append(line)
    assert seen[0] == "verilating"
    counts = [m.groups() for m in map(re.compile(r"compiling C\+\+ \((\d+)/(\d+) objects\)$").match,
                                      seen) if m]
    k, n = map(int, counts[-1])
    assert 1 <= k <= n and n >= 5, seen
    assert seen[-1] == "terminated" and proc.returncode == 143, seen
    assert tmp_dirs(design) == []
    assert sorted((design / "sim").glob("*/ok")) == built_before  # nothing half-built cached
    assert live_in_groups(groups | {proc.pid}) == []
    still = [k for k in kids if alive(k)]
    assert not still, f"children still running: {still}"


def fake_verilator(tmp_path: pathlib.Path, body: str) -> str:
    exe = tmp_path / "fake-verilator"
    exe.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'Verilator 0.0 fake'; "
                   f"exit 0; fi\n{body}\n")
    exe.chmod(0o755)
    return str(exe)


def test_next_build_removes_dead_builds_only(design, tmp_path):
    sim = design / "sim"
    sim.mkdir(exist_ok=True)
    dead = sim / f".0123456789abcdef.tmp-{dead_pid()}"
    live = sim / f".0123456789abcdef.tmp-{os.getppid()}"
    for d in (dead, live):
        (d / "obj").mkdir(parents=True)
    params = SimParams(verilator=fake_verilator(tmp_path, "echo 'no such module'; exit 1"))
    with pytest.raises(SimulationError, match="failed with status 1") as err:
        build_harness(design, params)
    log = pathlib.Path(re.search(r"log (\S+\.failed\.log):", str(err.value)).group(1))
    assert "no such module" in log.read_text()        # the log outlives the build directory
    assert not dead.exists() and live.is_dir()
    assert tmp_dirs(design) == [live.name]        # the failed build removed its own directory
    assert remove_stale_builds(sim) == [] and live.is_dir()
    live.rename(sim / f".0123456789abcdef.tmp-{dead_pid()}")
    assert len(remove_stale_builds(sim)) == 1 and tmp_dirs(design) == []


def test_build_timeout_kills_the_process_group(design, tmp_path):
    pidfile = tmp_path / "sleep.pid"
    params = SimParams(verilator=fake_verilator(tmp_path, f"sleep 60 & echo $! > {pidfile}; "
                                                          f"wait"),
                       build_timeout_s=1.0)
    t0 = time.monotonic()
    with pytest.raises(SimulationError, match="exceeded 1 s"):
        build_harness(design, params)
    assert time.monotonic() - t0 < 20
    assert tmp_dirs(design) == []
    sleeper = int(pidfile.read_text())
    assert not alive(sleeper), f"the verilator child {sleeper} is still running"


def test_cache_key_includes_the_flags(design, tmp_path):
    fake = fake_verilator(tmp_path, "exit 1")

    def key_of(params: SimParams) -> str:
        with pytest.raises(SimulationError) as err:
            build_harness(design, params)
        return re.search(r"/sim/([0-9a-f]{16})\.failed\.log", str(err.value)).group(1)

    base = SimParams(verilator=fake)
    key = key_of(base)
    assert key == key_of(SimParams(verilator=fake, jobs=1))          # same model
    assert len({key, key_of(SimParams(verilator=fake, opt_fast="-Og")),
                key_of(SimParams(verilator=fake, precompiled_header=False)),
                key_of(SimParams(verilator=fake, extra_flags=(*base.extra_flags, "-O3")))}) == 4
    cached = design / "sim" / key
    cached.mkdir()
    (cached / "harness").write_text("")
    (cached / "ok").write_text("1.0\n")
    seen: list[str] = []
    h = build_harness(design, base, progress=seen.append)
    assert h.cached and h.key == key and h.exe == cached / "harness" and seen == ["cached"]
