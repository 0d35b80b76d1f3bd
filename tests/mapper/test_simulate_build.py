"""The Verilator build of the stream harness (:func:`mapper.sim.verilator.build_harness`):
progress messages, and an interrupted build leaves nothing behind (no ``.<key>.tmp-<pid>``
directory in the model cache, no Verilator/make/compiler process); directories of dead builds
are removed by the next build, never those of a live process. The model cache is keyed by
content (design directories with identical RTL share a model) and keeps the most recently used
``SimParams.cache_models`` models (with a fake Verilator whose "model" is a shell script)."""
from __future__ import annotations

import fcntl
import os
import pathlib
import queue
import re
import shutil
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

from cgra.errors import ConfigError, SimulationError  # noqa: E402
from mapper.params import SimOptions  # noqa: E402
from mapper.sim.verilator import (CACHE_DIR_NAME, Harness, SimParams,  # noqa: E402
                                  build_harness, group_members, model_cache_dir,
                                  prune_models, remove_stale_builds, run_harness)

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


def cache(design: pathlib.Path) -> pathlib.Path:
    """The design's default model cache (beside the design directory)."""
    return design.parent / CACHE_DIR_NAME


def tmp_dirs(design: pathlib.Path) -> list[str]:
    sim = cache(design)
    return sorted(p.name for p in sim.iterdir() if ".tmp-" in p.name) if sim.is_dir() else []


def test_sigterm_during_build_kills_compilers_and_removes_tmp(design):
    built_before = sorted(cache(design).glob("[0-9a-f]*/ok"))
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
    assert sorted(cache(design).glob("[0-9a-f]*/ok")) == built_before  # no half-built model
    for rt in cache(design).glob("rt-*"):        # a run-time library is cached only complete
        assert (rt / "ok").is_file() and (rt / "verilated.o").is_file()
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
    sim = cache(design)
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
        return re.search(r"/\.sim-cache/([0-9a-f]{16})\.failed\.log", str(err.value)).group(1)

    base = SimParams(verilator=fake)
    key = key_of(base)
    assert key == key_of(SimParams(verilator=fake, jobs=1))          # same model
    assert len({key, key_of(SimParams(verilator=fake, opt_fast="-O2")),
                key_of(SimParams(verilator=fake, precompiled_header=False)),
                key_of(SimParams(verilator=fake, extra_flags=(*base.extra_flags, "-O3")))}) == 4
    cached = cache(design) / key
    cached.mkdir()
    (cached / "harness").write_text("")
    (cached / "ok").write_text("1.0\n")
    seen: list[str] = []
    h = build_harness(design, base, progress=seen.append)
    assert h.cached and h.key == key and h.exe == cached / "harness" and seen == ["cached"]


#: a Verilator stand-in whose makefile "compiles" the model into a shell script
FAKE_OK = r"""
while [ $# -gt 0 ]; do
  case "$1" in
    -Mdir) mdir="$2"; shift;;
    -o) exe="$2"; shift;;
    --top-module) top="$2"; shift;;
  esac
  shift
done
mkdir -p "$mdir"
printf 'fake:\n\tprintf "#!/bin/sh\\nexit 0\\n" > %s && chmod +x %s\nVK_SLOW_OBJS = slow.o\n' \
  "$exe" "$exe" > "$mdir/V$top.mk"
"""


def copy_design(design: pathlib.Path, to: pathlib.Path) -> pathlib.Path:
    """A second design directory with byte-identical RTL (design.json and rtl/ only)."""
    to.mkdir(parents=True)
    (to / "design.json").write_bytes((design / "design.json").read_bytes())
    shutil.copytree(design / "rtl", to / "rtl")
    return to


def test_identical_rtl_in_two_design_dirs_shares_one_model(design, tmp_path):
    assert model_cache_dir(design) == cache(design)
    params = SimParams(verilator=fake_verilator(tmp_path, FAKE_OK),
                       cache_dir=str(tmp_path / "cache"))
    a = build_harness(design, params)
    assert not a.cached and a.build_seconds > 0
    assert a.exe == tmp_path / "cache" / a.key / "harness" and a.exe.is_file()
    assert (a.exe.parent / "ok").is_file() and (a.exe.parent / "used").is_file()
    b_dir = copy_design(design, tmp_path / "b")
    b = build_harness(b_dir, params)
    assert b.cached and b.build_seconds == 0.0
    assert (b.key, b.exe, b.lock) == (a.key, a.exe, a.lock) and b.design_dir == b_dir
    models = [p.name for p in (tmp_path / "cache").iterdir() if not p.name.startswith(".")]
    assert models == [a.key]            # (the fake Verilator builds no run-time library)


def test_cache_keeps_the_most_recently_used_models(design, tmp_path):
    fake = fake_verilator(tmp_path, FAKE_OK)
    root = tmp_path / "cache"

    def params(opt: str, keep: int = 2) -> SimParams:
        return SimParams(verilator=fake, cache_dir=str(root), cache_models=keep, opt_fast=opt)

    def models() -> set[str]:
        return {p.name for p in root.iterdir() if not p.name.startswith(".")}

    k1 = build_harness(design, params("-O1")).key
    k2 = build_harness(design, params("-Og")).key
    time.sleep(0.01)
    assert build_harness(design, params("-O1")).cached           # k1 used after k2
    k3 = build_harness(design, params("-O2")).key
    assert models() == {k1, k3}                   # k2, the least recently used, is pruned
    assert not build_harness(design, params("-Og", 3)).cached    # rebuilt
    # a model whose lock another process holds (run_harness starting it) is kept
    with open(root / f".{k3}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)
        assert prune_models(root, 1, protect=(k2,)) == [root / k1]
    assert models() == {k2, k3}
    assert prune_models(root, 1) == [root / k3] and models() == {k2}
    assert not [p for p in root.iterdir() if ".evict-" in p.name or ".tmp-" in p.name]


def test_run_of_a_pruned_model_names_the_fix(tmp_path):
    exe = tmp_path / "cache" / "0123456789abcdef" / "harness"
    h = Harness(tmp_path, "Top", exe, [], [], {}, "0123456789abcdef", True, 0.0, 1,
                tmp_path / ".0123456789abcdef.lock")
    with pytest.raises(SimulationError, match="is gone .*cache_models"):
        run_harness(h, [], {}, [], 4, tmp_path / "run")
    h.lock = tmp_path / "cache" / ".0123456789abcdef.lock"    # the whole cache removed
    with pytest.raises(SimulationError, match="is gone"):
        run_harness(h, [], {}, [], 4, tmp_path / "run")


#: a Verilator stand-in with a run-time library: the stand-in design's makefile "compiles"
#: verilated.o / verilated_threads.o; a model's makefile fails if it has to compile them
FAKE_RT = r"""
exe=/dev/null
while [ $# -gt 0 ]; do
  case "$1" in
    -Mdir) mdir="$2"; shift;;
    -o) exe="$2"; shift;;
    --top-module) top="$2"; shift;;
  esac
  shift
done
mkdir -p "$mdir"
if [ "$top" = cgra_runtime_stub ]; then
  printf 'VK_GLOBAL_OBJS = verilated.o verilated_threads.o\n%%.o:\n\techo compiled > $@; echo "$@:" > $*.d\n' > "$mdir/V$top.mk"
else
  printf 'fake: verilated.o verilated_threads.o\n\tprintf "#!/bin/sh\\nexit 0\\n" > %s && chmod +x %s\nVK_GLOBAL_OBJS = verilated.o verilated_threads.o\nverilated.o verilated_threads.o: V%s.mk\n\techo rebuilt $@; exit 1\n' \
    "$exe" "$exe" "$top" > "$mdir/V$top.mk"
fi
"""


def test_model_builds_take_the_runtime_from_the_cache(design, tmp_path):
    """Verilator's run-time library is compiled once per cache (beside the first model's
    verilation) and copied into every model build whose compile flags match."""
    root = tmp_path / "cache"
    params = SimParams(verilator=fake_verilator(tmp_path, FAKE_RT), cache_dir=str(root),
                       precompiled_header=False)
    a = build_harness(design, params)
    rt = [p for p in root.iterdir() if p.name.startswith("rt-")]
    assert len(rt) == 1 and (rt[0] / "verilated.o").read_text() == "compiled\n"
    assert (rt[0] / "ok").is_file() and (rt[0] / "verilated_threads.d").is_file()
    log = (a.exe.parent / "build.log").read_text()
    assert f"run-time library from {rt[0].name}: 2 objects" in log and "rebuilt" not in log
    shutil.rmtree(a.exe.parent)               # the next model: the runtime is in the cache
    b = build_harness(design, params)
    assert not b.cached and f"from {rt[0].name}" in (b.exe.parent / "build.log").read_text()
    shutil.rmtree(b.exe.parent)                # flags that differ: make compiles its own
    (rt[0] / "flags.txt").write_text("g++ -O3\n")
    with pytest.raises(SimulationError, match="failed with status") as err:
        build_harness(design, params)
    assert "rebuilt verilated.o" in str(err.value)
    assert not [p for p in root.iterdir() if ".tmp-" in p.name]


def test_cache_bound_is_validated():
    with pytest.raises(ConfigError, match=r"SimParams.cache_models = 0 is out of range: give "
                                          r"an integer in \[1, 100000\]"):
        SimOptions(sim=SimParams(cache_models=0)).validate()
