"""The bad-input sweep (issue 42): run every case of ``tests/bad_inputs/`` and print, per
class, how many cases there are and how many are handled now (the test passes: exit 2 with a
one-line typed error naming the fix, nothing changed that existed before, no process left).

Each test carries one marker naming what that input did on main before issue 42
(pyproject ``[tool.pytest.ini_options] markers``): ``bad_traceback`` (a traceback from inside
a library), ``bad_silent`` (a wrong or mixed result with exit 0), ``bad_hang`` (a run that
never ended, or took minutes to refuse), ``bad_state`` (a bad state left behind: an orphan
process, a stale file taken as fresh) and ``bad_refused`` (already a clear error; kept so it
stays one); ``good_input`` marks the control cases (the good artifact passes the same
checks). A case whose test fails counts as still in its class.

It also times, each as a separate ``cgra`` process on configs/small.toml's design, the
capacity refusals the issue asks to be fast (goal: under 5 s from start to refusal):
``cgra map gaussian --unroll 1000``, ``cgra run gaussian --size 4000`` and
``cgra dse --workers -1``.

Usage: ``python bench/bench_bad_inputs.py [--jobs N] [--no-timing]``. Prints one JSON line per
figure (bench/benchlib.py) and appends them to ``bench/results/bad_inputs.csv``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bad_inputs_plugin import CLASSES  # noqa: E402
from benchlib import row, save_rows  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def sweep(jobs: int) -> tuple[list[dict], float]:
    """Run tests/bad_inputs; one record per test (test, class, outcome, seconds)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.jsonl"
        cmd = [sys.executable, "-m", "pytest", "tests/bad_inputs", "-q", "-p", "no:cacheprovider",
               "-p", "bad_inputs_plugin", "--bad-inputs-report", str(report)]
        if jobs > 1:
            cmd += ["-n", str(jobs), "--dist", "loadfile"]
        # the plugin module sits beside this script: the child pytest (and its workers)
        # import it from there
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent)}
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, env=env)
        secs = time.perf_counter() - t0
        recs = [json.loads(ln) for ln in report.read_text().splitlines()] \
            if report.exists() else []
    return recs, secs


def time_refusals(design: Path) -> list[tuple[str, float, int]]:
    """(command, seconds from start to exit, exit status) of each capacity refusal."""
    exe = Path(sys.executable).with_name("cgra")
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        sweep_file = Path(tmp) / "sweep.toml"
        sweep_file.write_text(f'[sweep]\nbase = "{(ROOT / "configs" / "small.toml").as_posix()}"'
                              f'\ncache = "cache"\napps = ["gaussian"]\n[grid]\ntracks = [4]\n')
        for args in (["map", "gaussian", "--unroll", "1000", "--design", str(design),
                      "--out", f"{tmp}/u1000"],
                     ["run", "gaussian", "--size", "4000", "--design", str(design),
                      "--out", f"{tmp}/s4000"],
                     ["dse", str(sweep_file), "--workers", "-1", "--no-progress"]):
            t0 = time.perf_counter()
            res = subprocess.run([str(exe), *args], cwd=tmp, capture_output=True, text=True,
                                 timeout=600)
            out.append((" ".join(["cgra", *args[:4]]), time.perf_counter() - t0,
                        res.returncode))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2, help="pytest-xdist workers (default 2)")
    ap.add_argument("--no-timing", action="store_true", help="skip the refusal timings")
    ap.add_argument("--design", type=Path, default=ROOT / "build" / "small",
                    help="the design the refusals are timed on (default build/small: "
                         "`make rtl DESIGN=small`)")
    a = ap.parse_args()
    recs, secs = sweep(a.jobs)
    params = {"jobs": a.jobs, "tests": len(recs)}
    rows = []
    for kind in (*CLASSES, "unmarked"):
        mine = [r for r in recs if r["class"] == kind]
        if not mine and kind == "unmarked":
            continue
        ok = sum(1 for r in mine if r["outcome"] == "passed")
        rows.append(row("bad_inputs", f"{kind}: cases", len(mine), "cases", params))
        left = "failing" if kind in ("good_input", "unmarked", "bad_refused") else kind[4:]
        rows.append(row("bad_inputs", f"{kind}: still {left}", len(mine) - ok, "cases",
                        params))
    for r in recs:
        if r["outcome"] != "passed":
            print(f"  not handled: {r['test']} ({r['class']}, {r['outcome']})", file=sys.stderr)
    rows.append(row("bad_inputs", "sweep wall time", round(secs, 1), "s", params))
    if not a.no_timing:
        if not (a.design / "design.json").is_file():
            raise SystemExit(f"bench_bad_inputs: {a.design} is not a design; run `make rtl "
                             f"DESIGN=small` or pass --design")
        for cmd, s, code in time_refusals(a.design):
            rows.append(row("bad_inputs", f"time to refusal: {cmd}", round(s, 2), "s",
                            {"design": str(a.design), "exit_status": code}))
    save_rows("bad_inputs", rows)


if __name__ == "__main__":
    main()
