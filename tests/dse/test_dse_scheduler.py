"""Issue 17: `cgra dse --scheduler` on an existing Dask cluster started with `dask scheduler`
and `dask worker` (separate processes, as on a real cluster): daemonic workers (dask's
default) are refused with one line and exit 2 before any task runs; non-daemonic workers run
the sweep (one 8x8 design, gaussian) and record its metrics; an unreachable scheduler is a
one-line error."""
from __future__ import annotations

import csv
import pathlib
import socket
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
#: the rule tables of the whole suite (content-keyed: shared with the e2e designs)
RULES = str(ROOT / "build" / "rules")
BIN = pathlib.Path(sys.executable).parent
SWEEP = f"""[sweep]
base = "{ROOT}/configs/small.toml"
apps = ["gaussian"]
image = [64, 64]
seed = 0

[grid]
tracks = [4]
width = [8]
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dse(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "cgra"), "dse", *args, "--rules", RULES, "--no-progress"], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)


def _wait_workers(address: str, n: int) -> None:
    from distributed import Client

    with Client(address, timeout="20s") as c:
        c.wait_for_workers(n, timeout=60)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A scheduler process and, per test, a worker process (killed afterwards)."""
    tmp = tmp_path_factory.mktemp("dse_sched")
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    sched = subprocess.Popen([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1",
                              "--port", str(port), "--no-dashboard"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs: list[subprocess.Popen] = []

    def worker(daemonic: bool) -> None:
        """One worker: under a nanny (dask's default: a daemonic worker process) or, with
        ``--no-nanny``, the `dask worker` process itself (not daemonic)."""
        for p in procs:
            p.kill()            # a test process: no graceful shutdown to wait for
            p.wait(30)
        procs.clear()
        mode = ["--nanny"] if daemonic else ["--no-nanny"]
        procs.append(subprocess.Popen(
            [str(BIN / "dask"), "worker", address, *mode, "--nthreads", "1",
             "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(1)
        _wait_workers(address, 1)

    sweep = tmp / "one.toml"
    sweep.write_text(SWEEP)
    yield address, worker, sweep, tmp
    for p in [*procs, sched]:
        p.kill()
        p.wait(30)


def test_daemonic_workers_are_refused_then_a_real_cluster_runs_the_sweep(cluster):
    address, worker, sweep, tmp = cluster
    worker(daemonic=True)
    r = _dse(str(sweep), "--scheduler", address, "--cache", str(tmp / "c1"))
    assert r.returncode == 2
    line = r.stderr.strip().splitlines()
    assert len(line) == 1 and "run as daemonic processes" in line[0]
    assert "DASK_DISTRIBUTED__WORKER__DAEMON=False" in line[0]
    assert not (tmp / "c1" / "results").exists()          # no task ran
    worker(daemonic=False)
    r = _dse(str(sweep), "--scheduler", address, "--cache", str(tmp / "c2"))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "computed 1 points (1 designs)" in r.stdout and "0 failed" in r.stdout
    with open(tmp / "c2" / "results" / "one" / "results.csv") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["status"] == "ok" and int(row["pe_count"]) == 18
    assert float(row["area_nand2"]) > float(row["area_cells"]) > 0


def test_unreachable_scheduler(cluster, tmp_path):
    _address, _worker, sweep, _tmp = cluster
    r = _dse(str(sweep), "--scheduler", f"tcp://127.0.0.1:{_free_port()}", "--cache",
             str(tmp_path / "c"))
    assert r.returncode == 2
    assert "cannot connect to a Dask scheduler there" in r.stderr
    # refused by the plain connect (nothing listens), not after the client's retries
    assert "nothing listens on that port" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
