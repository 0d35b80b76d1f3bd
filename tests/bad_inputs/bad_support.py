"""Helpers of the bad-input tests: run ``cgra`` as a user does, snapshot a directory tree,
hold a directory's lock from another process, and find a command's processes."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]
CGRA = Path(sys.executable).with_name("cgra")
SMALL = ROOT / "configs" / "small.toml"
SWEEP = ROOT / "configs" / "dse" / "small.toml"
TOY_PE = "peak.examples.toy_pe:ToyPE"
#: the script a :class:`Holder` runs (its command line, as a lock records it:
#: ``lock_holder.py <directory>``)
HOLDER = Path(__file__).with_name("lock_holder.py")


def cgra(args: list[str | Path], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """``cgra ARGS`` in ``cwd`` through the console entry point (exit status, stderr)."""
    return subprocess.run([str(CGRA), *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def start_cgra(args: list[str | Path], cwd: Path, capture: bool = True) -> subprocess.Popen:
    """``cgra ARGS`` started in its own session (its process group: ``pgid == pid``);
    ``capture=False`` discards its output (no pipe a surviving child could hold open)."""
    out = subprocess.PIPE if capture else subprocess.DEVNULL
    return subprocess.Popen([str(CGRA), *map(str, args)], cwd=cwd, stdout=out, stderr=out,
                            text=True, start_new_session=True)


def error_line(res: subprocess.CompletedProcess) -> str:
    """The last stderr line of a refused command (``error: ...``)."""
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def snapshot(root: Path) -> dict[str, tuple[str, str, int]]:
    """Every entry below ``root``: relative path -> (kind, sha256 of a file's bytes,
    modification time in ns). Equal snapshots: nothing was added, removed or changed."""
    out: dict[str, tuple[str, str, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            st = p.lstat()
            if p.is_file():
                out[rel] = ("file", hashlib.sha256(p.read_bytes()).hexdigest(), st.st_mtime_ns)
            else:
                out[rel] = ("dir", "", st.st_mtime_ns)
    return out


def manifest_mismatches(design: Path) -> list[str]:
    """Files of a design directory that are not exactly those its design.json records
    (``files``: relative path -> sha256; hidden entries and the Verilator cache ``sim/``
    are not collateral): [] for a design written by one run."""
    doc = json.loads((design / "design.json").read_text())
    want: dict[str, str] = doc["files"]
    got: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(design):
        rel_dir = Path(dirpath).relative_to(design)
        if rel_dir == Path("."):
            dirnames[:] = [d for d in dirnames if d != "sim" and not d.startswith(".")]
        for f in filenames:
            rel = (rel_dir / f).as_posix()
            if rel != "design.json" and not f.startswith("."):
                got[rel] = hashlib.sha256((Path(dirpath) / f).read_bytes()).hexdigest()
    return sorted(k for k in set(want) | set(got) if want.get(k) != got.get(k))


class Holder:
    """Another process holding the write lock of ``directory`` until :meth:`stop` (or
    ``kill -9`` by :meth:`kill`)."""

    def __init__(self, directory: Path):
        self.proc = subprocess.Popen([sys.executable, str(HOLDER), str(directory)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     cwd=ROOT)
        assert self.proc.stdout.readline().strip() == "locked"
        self.pid = self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(30)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(30)


def live(pids: list[int]) -> list[int]:
    """Those of ``pids`` that still run (zombies, dead and reaped or not, do not)."""
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            continue
    return out


def session_members(sid: int) -> list[int]:
    """Live processes of session ``sid`` (a command started by :func:`start_cgra` and
    everything it started without a session of its own)."""
    out = []
    for p in psutil.process_iter(["status"]):
        try:
            if os.getsid(p.pid) == sid and p.info["status"] != psutil.STATUS_ZOMBIE:
                out.append(p.pid)
        except (ProcessLookupError, PermissionError):
            continue
    return out


def wait_for_children(pid: int, timeout: float = 120.0, at_least: int = 1) -> list[int]:
    """Pids of the descendants of ``pid`` once there are ``at_least`` of them (polled every
    10 ms; fails after ``timeout`` seconds or when ``pid`` ends first)."""
    proc = psutil.Process(pid)
    deadline = time.monotonic() + timeout
    while True:
        try:
            kids = [c.pid for c in proc.children(recursive=True)]
        except psutil.NoSuchProcess:
            kids = []
        if len(kids) >= at_least:
            return kids
        assert proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE, \
            f"process {pid} ended before starting a child"
        assert time.monotonic() < deadline, f"process {pid} started no child in {timeout} s"
        time.sleep(0.01)


def wait_until_gone(pids: list[int], timeout: float = 5.0) -> list[int]:
    """Wait up to ``timeout`` seconds for ``pids`` to end; returns those still running."""
    deadline = time.monotonic() + timeout
    while live(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return live(pids)


def small_toml(tmp: Path, tracks: int, timing: str | None = None) -> Path:
    """configs/small.toml with ``tracks`` routing tracks (another design of the same size)
    and, given ``timing``, that delay model (e.g. ``cascade-table``: nothing measured)."""
    text = SMALL.read_text()
    lines = [f"tracks = {tracks}" if ln.startswith("tracks") else ln
             for ln in text.splitlines()]
    if timing is not None:
        lines.append(f'timing = "{timing}"')
    assert lines != text.splitlines()
    p = tmp / f"small_t{tracks}.toml"
    p.write_text("\n".join(lines) + "\n")
    return p
