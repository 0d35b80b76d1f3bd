"""DSE figures (issue 17): wall time of one small `cgra dse` sweep run sequentially (a
LocalCluster of 1 worker) and in parallel (a LocalCluster of N workers, default 2), side by
side in the same run, each on a fresh cache (a temporary directory: rule synthesis, RTL
generation, yosys area and mapping all included), and their ratio.

The sweep: the array size ``--size WxH`` (default 16x8; 8x8 for a quick run; 32x16 takes
long: a bench machine, not a laptop), every combination of ``--pe`` (D1 / D3 / module:Class),
``--tracks`` and ``--mem`` (DP / PUB / a Lake preset) over ``--apps``, base parameters
configs/small.toml, seed 0, 64x64 image. Both runs must give the same results.csv (the
sweep is deterministic); the benchmark checks it. Figures: ``wall_seconds_workers_1``,
``wall_seconds_workers_<N>``, ``speedup`` (sequential / parallel) and ``points``.
One JSON line per figure; rows are appended to bench/results/dse.csv.
Run: .venv/bin/python bench/bench_dse.py [--size 16x8] [--apps gaussian,harris]
[--pe D1] [--tracks 4,5] [--mem DP,PUB] [--workers 2]
"""
from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchlib  # noqa: E402  (bench/benchlib.py: JSON lines and results CSV)

ROOT = Path(__file__).resolve().parents[1]
CGRA = str(Path(sys.executable).parent / "cgra")


def emit(figure: str, value: float, unit: str, params: dict) -> None:
    """One figure, printed and appended to bench/results/dse.csv at once."""
    benchlib.save_rows("dse", [benchlib.row("dse", figure, round(value, 3), unit, params)])


def sweep_toml(size: tuple[int, int], apps: list[str], pe: list[str], tracks: list[int],
               mem: list[str]) -> str:
    return (f'[sweep]\nbase = "{ROOT}/configs/small.toml"\nname = "bench"\n'
            f"apps = {json.dumps(apps)}\nimage = [64, 64]\nseed = 0\n\n[grid]\n"
            f"pe = {json.dumps(pe)}\ntracks = {json.dumps(tracks)}\n"
            f"mem_preset = {json.dumps(mem)}\nwidth = [{size[0]}]\nheight = [{size[1]}]\n")


def timed_run(sweep: Path, workers: int) -> tuple[float, str, list[dict]]:
    """Wall seconds of `cgra dse` on a fresh cache with ``workers`` LocalCluster workers,
    its summary line and its results.csv rows (timing columns dropped)."""
    with tempfile.TemporaryDirectory(prefix=f"bench_dse_w{workers}_") as tmp:
        t = time.perf_counter()
        r = subprocess.run([CGRA, "dse", str(sweep), "--cache", tmp, "--workers",
                            str(workers), "--no-progress"], capture_output=True, text=True)
        wall = time.perf_counter() - t
        if r.returncode != 0:
            sys.exit(f"cgra dse --workers {workers} failed:\n{r.stderr[-3000:]}")
        with open(Path(tmp) / "results" / "bench" / "results.csv") as fh:
            rows = [{k: v for k, v in row.items()
                     if not k.endswith(("_s", "_seconds"))} for row in csv.DictReader(fh)]
    return wall, r.stdout.strip().splitlines()[-1], rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="16x8", help="array WxH (default 16x8)")
    ap.add_argument("--apps", default="gaussian")
    ap.add_argument("--pe", default="D1")
    ap.add_argument("--tracks", default="4,5")
    ap.add_argument("--mem", default="DP,PUB")
    ap.add_argument("--workers", type=int, default=2, help="workers of the parallel run")
    a = ap.parse_args()
    w, h = (int(v) for v in a.size.lower().split("x"))
    apps, pe, mem = a.apps.split(","), a.pe.split(","), a.mem.split(",")
    tracks = [int(v) for v in a.tracks.split(",")]
    points = len(pe) * len(tracks) * len(mem) * len(apps)
    params = {"size": f"{w}x{h}", "apps": apps, "pe": pe, "tracks": tracks, "mem": mem,
              "designs": points // len(apps)}
    with tempfile.TemporaryDirectory(prefix="bench_dse_") as tmp:
        sweep = Path(tmp) / "bench.toml"
        sweep.write_text(sweep_toml((w, h), apps, pe, tracks, mem))
        seq, seq_line, seq_rows = timed_run(sweep, 1)
        par, par_line, par_rows = timed_run(sweep, a.workers)
    if seq_rows != par_rows:
        sys.exit("the sequential and the parallel sweep gave different results.csv")
    print(f"# 1 worker: {seq_line}\n# {a.workers} workers: {par_line}", flush=True)
    emit("points", points, "points", params)
    emit("wall_seconds_workers_1", seq, "s", params)
    emit(f"wall_seconds_workers_{a.workers}", par, "s", params)
    emit("speedup", seq / par, "x", {**params, "workers": a.workers})


if __name__ == "__main__":
    main()
