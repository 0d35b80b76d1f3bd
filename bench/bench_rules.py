"""Benchmark of rewrite-rule synthesis on the default 16-bit CGRA PE (issues 3 and 12).

Figures (one JSON line each, rows appended to bench/results/rules.csv), each a fresh
``cgra rules`` process (wall time; ``cpu_s`` = user + system time of it and its workers):

* ``cold_jobs2`` / ``cold_jobs1``: the whole table into an empty directory;
* ``warm``: the same command again (every rule re-verified on load, nothing synthesised);
* ``incremental_absd``: the PE with a 1-PE ``Absd`` ALU op added (a temporary copy of the
  spec), built from the cold table's directory; ``equal_to_cold`` says whether every
  target has the status and cost of ``cold_absd`` (the edited PE into an empty directory),
  ``absd_cost`` the cost of ``commonlib.absd`` (1: the stale 2-PE rule was not kept);
* ``after_abs_edit``: the PE without its ``Abs`` op, from the cold table's directory;
* ``slowest_1..5``: the slowest targets of the cold ``--jobs 1`` run;
* with ``--methods``: direct-vs-CEGIS time per target (primitives and patterns, each method
  in a fresh process so no cache is shared; several minutes).

Run: ``.venv/bin/python bench/bench_rules.py [--methods]`` (about 1-2 minutes on 2 cores
without ``--methods``).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "results" / "rules.csv"
CORES = os.cpu_count()
PE = "peak.examples.cgra_pe:PE"

from peak.examples.cgra_pe_edits import ADD_ABSD, REMOVE_ABS, write_edited  # noqa: E402



def emit(figure: str, value: float | str, unit: str, **params: object) -> None:
    params = dict(params, cores=CORES)
    row = {"bench": "rules", "figure": figure, "value": value, "unit": unit,
           "params": params}
    print(json.dumps(row), flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    new = not RESULTS.exists()
    with RESULTS.open("a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["time", "bench", "figure", "value", "unit", "params"])
        w.writerow([time.strftime("%Y-%m-%dT%H:%M:%S"), "rules", figure, value, unit,
                    json.dumps(params, sort_keys=True)])


def run_table(pe: str, out: Path, jobs: int) -> tuple[float, float, dict]:
    """Wall and CPU seconds of `cgra rules` in a fresh process, and its timing file."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", "from cgra.cli import main; main()", "rules",
                        "--pe", pe, "--out", str(out), "--jobs", str(jobs)],
                       cwd=ROOT, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"cgra rules failed: {r.stderr.strip()}")
    cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    return round(dt, 2), round(cpu, 2), json.loads((out / "PE.timing.json").read_text())


def costs(out: Path) -> dict[str, tuple[str, int | None]]:
    """target -> (status, cost) of the view ``out/PE.rules.json``."""
    doc = json.loads((out / "PE.rules.json").read_text())
    return {e["target"]: (e["status"], e.get("cost")) for e in doc["entries"]}


def edited(tmp: Path, name: str, edits: list[tuple[str, str]]) -> str:
    return f"{write_edited(tmp / f'{name}.py', edits)}:PE"


def actions_of(timing: dict) -> dict[str, int]:
    out: dict[str, int] = {}
    for e in timing["entries"]:
        out[e["action"]] = out.get(e["action"], 0) + 1
    return out


_METHOD_SCRIPT = """
import json, sys, time
from peak.examples.cgra_pe import PE
from peak.ir import PATTERNS, PRIMITIVES, Target
from peak.rules.synth import pe_context, synthesize
pe_context(PE)
out = {}
for name in PRIMITIVES + PATTERNS:
    r = synthesize(PE, Target(name), 16, method=sys.argv[1], timeout_ms=20000)
    out[name] = [r.seconds, r.status, r.stats.queries]
print(json.dumps(out))
"""


def per_method(method: str) -> dict:
    r = subprocess.run([sys.executable, "-c", _METHOD_SCRIPT, method], cwd=ROOT,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{method} run failed: {r.stderr.strip()[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", action="store_true",
                    help="also compare the direct query with CEGIS per target (slow)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_:
        tmp = Path(tmp_)
        cold2, cpu2, timing2 = run_table(PE, tmp / "j2", 2)
        n = len(timing2["entries"])
        found = sum(e["status"] == "found" for e in timing2["entries"])
        emit("cold_jobs2", cold2, "s", cpu_s=cpu2, targets=n, found=found)
        cold1, cpu1, timing1 = run_table(PE, tmp / "j1", 1)
        emit("cold_jobs1", cold1, "s", cpu_s=cpu1, targets=n, found=found)
        warm, cpuw, timing_w = run_table(PE, tmp / "j2", 2)
        assert set(actions_of(timing_w)) == {"cached"}, actions_of(timing_w)
        emit("warm", warm, "s", cpu_s=cpuw, targets=n, jobs=2)

        absd = edited(tmp, "cgra_pe_absd_bench", ADD_ABSD)
        t_inc, cpu_inc, timing_inc = run_table(absd, tmp / "j2", 2)
        t_cold, cpu_cold, _ = run_table(absd, tmp / "absd_cold", 2)
        inc, cold = costs(tmp / "j2"), costs(tmp / "absd_cold")
        emit("incremental_absd", t_inc, "s", cpu_s=cpu_inc, jobs=2,
             equal_to_cold=inc == cold, absd_cost=inc["commonlib.absd"][1],
             differ=sorted(k for k in cold if inc.get(k) != cold[k]),
             actions=actions_of(timing_inc))
        emit("cold_absd", t_cold, "s", cpu_s=cpu_cold, jobs=2,
             absd_cost=cold["commonlib.absd"][1])

        noabs = edited(tmp, "cgra_pe_noabs_bench", REMOVE_ABS)
        t_edit, cpu_edit, timing_e = run_table(noabs, tmp / "j1", 1)
        emit("after_abs_edit", t_edit, "s", cpu_s=cpu_edit, jobs=1,
             actions=actions_of(timing_e))

        slow = sorted(timing1["entries"], key=lambda e: -e["seconds"])[:5]
        for i, e in enumerate(slow, 1):
            emit(f"slowest_{i}", round(e["seconds"], 3), "s", target=e["target"],
                 status=e["status"], method=e["method"])

    if not args.methods:
        return
    cegis = per_method("cegis")
    direct = per_method("direct")
    for name in cegis:
        c, d = cegis[name], direct[name]
        emit(f"method:{name}", round(c[0], 3), "s", cegis_s=round(c[0], 3),
             direct_s=round(d[0], 3), cegis_status=c[1], direct_status=d[1],
             faster="cegis" if c[0] <= d[0] else "direct")
    emit("method_total_cegis", round(sum(v[0] for v in cegis.values()), 2), "s")
    emit("method_total_direct", round(sum(v[0] for v in direct.values()), 2), "s")


if __name__ == "__main__":
    main()
