"""DSE figures on the default 32x16 array (issue 17, the AHA paper's section 8.7 trends):
runs `cgra dse configs/dse/aha.toml` (PE D1/D2/D3 x tracks 3/4/5/6 x MEM dual-port/PUB over
gaussian, unsharp, harris and laplacian_pyramid) and summarises its results.csv:

* ``wall_seconds`` of the sweep on a LocalCluster (``--workers``, default 2) and
  ``task_seconds_sum``, the sum of every task's own time (design generation + area proxy per
  design, compile time per point): what one worker would take; ``parallel_ratio`` = sum /
  wall. Only on a fresh cache (no ``--cache``): in a given cache, design tasks find their
  designs already generated but still report the seconds of the first generation;
* per app, PE count per PE variant (tracks 5, dual-port: the multi-op rules of D3 lower it)
  and the balancing/timing registers (``pipeline_registers``: D2's input delay chains lower
  them);
* per app, MEM count dual-port vs PUB (D1, tracks 5: the wide-fetch PUB halves it);
* mean Fmax and mean runtime per track count over every successful point (more than about
  five tracks stops helping);
* the design area (NAND2 equivalents) per (PE, tracks, MEM).

``--sweep configs/dse/small.toml`` runs the shipped DSE example instead (24 points, about
2 min; CI runs half its grid, tests/dse/ci_sweep.toml): the same figures, and the bench
fails (exit 1) unless every point of the example maps (issue 41: an example shows the tool
working).

One JSON line per figure; rows appended to bench/results/dse_trends.csv.
Run: .venv/bin/python bench/bench_dse_trends.py [--workers 2] [--cache DIR]
[--sweep configs/dse/aha.toml] (default cache: a fresh temporary directory; the AHA sweep
takes about 13 min on 2 cores)
"""
from __future__ import annotations

import argparse
import csv
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchlib  # noqa: E402  (bench/benchlib.py: JSON lines and results CSV)

ROOT = Path(__file__).resolve().parents[1]
CGRA = str(Path(sys.executable).parent / "cgra")
SWEEP = ROOT / "configs" / "dse" / "aha.toml"
EXAMPLE = ROOT / "configs" / "dse" / "small.toml"
APPS = ("gaussian", "unsharp", "harris", "laplacian_pyramid")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=None,
                    help="sweep cache (default: a fresh temporary directory)")
    ap.add_argument("--sweep", default=str(SWEEP.relative_to(ROOT)),
                    help="sweep file, relative to the repository (default %(default)s)")
    a = ap.parse_args()
    sweep = ROOT / a.sweep
    rows: list[dict] = []
    params = {"sweep": a.sweep, "workers": a.workers}

    def emit(figure: str, value: float, unit: str, **extra) -> None:
        rows.append(benchlib.row("dse_trends", figure, round(value, 3), unit,
                                 {**params, **extra}))

    with tempfile.TemporaryDirectory(prefix="bench_dse_trends_") as tmp:
        cache = a.cache or Path(tmp)
        t = time.perf_counter()
        r = subprocess.run([CGRA, "dse", str(sweep), "--cache", str(cache), "--workers",
                            str(a.workers), "--no-progress"], capture_output=True, text=True)
        wall = time.perf_counter() - t
        if r.returncode != 0:
            sys.exit(f"cgra dse failed:\n{r.stderr[-3000:]}")
        summary = r.stdout.strip().splitlines()[-1]
        with open(cache / "results" / sweep.stem / "results.csv") as fh:
            res = list(csv.DictReader(fh))
    computed = int(re.search(r"computed (\d+) points", summary).group(1))
    num = lambda r, k: float(r[k]) if r[k] else 0.0  # noqa: E731
    if a.cache is None:
        designs = {r["design"]: num(r, "design_seconds") + num(r, "area_seconds")
                   for r in res}
        total = sum(designs.values()) + sum(num(r, "compile_s") for r in res)
        emit("wall_seconds", wall, "s", points=computed)
        emit("task_seconds_sum", total, "s", points=computed)
        emit("parallel_ratio", total / wall, "x", points=computed)
    ok = [r for r in res if r["status"] == "ok"]
    emit("failed_points", len(res) - len(ok), "points")

    def pick(app: str, pe: str, tracks: str, mem: str) -> dict | None:
        got = [r for r in ok if (r["app"], r["pe"], r["tracks"], r["mem_preset"]) ==
               (app, pe, tracks, mem)]
        return got[0] if got else None

    for app in APPS:
        for pe in ("D1", "D2", "D3"):
            p = pick(app, pe, "5", "DP")
            if p:
                emit("pe_count", num(p, "pe_count"), "PEs", app=app, pe=pe)
                emit("pipeline_registers", num(p, "pipeline_registers"), "registers",
                     app=app, pe=pe)
        for mem in ("DP", "PUB"):
            p = pick(app, "D1", "5", mem)
            if p:
                emit("mem_count", num(p, "mem_count"), "MEMs", app=app, mem=mem)
    for t in sorted({r["tracks"] for r in ok}, key=int):
        pts = [r for r in ok if r["tracks"] == t]
        emit("mean_fmax", statistics.mean(num(r, "fmax_mhz") for r in pts), "MHz",
             tracks=int(t), points=len(pts))
        emit("mean_runtime", statistics.mean(num(r, "runtime_us") for r in pts), "us",
             tracks=int(t), points=len(pts))
    for key in sorted({(r["pe"], r["tracks"], r["mem_preset"]) for r in ok}):
        p = next(r for r in ok if (r["pe"], r["tracks"], r["mem_preset"]) == key)
        emit("area_nand2", num(p, "area_nand2"), "NAND2-eq", pe=key[0], tracks=int(key[1]),
             mem=key[2])
    benchlib.save_rows("dse_trends", rows)
    if sweep.resolve() == EXAMPLE.resolve() and len(ok) != len(res):
        sys.exit(f"the shipped example {a.sweep}: {len(res) - len(ok)} of {len(res)} points "
                 f"failed: " + "; ".join(f"{r['app']} {r['pe']}/{r['tracks']}/"
                                         f"{r['mem_preset']}: {r['error']}"
                                         for r in res if r["status"] != "ok"))


if __name__ == "__main__":
    main()
