"""Benchmark of rewrite-rule synthesis on the default 16-bit CGRA PE (issue 3 figures).

Figures (one JSON line each, rows appended to bench/results/rules.csv):
cold synthesis time of the whole table with --jobs 1 and --jobs 2 (fresh directories),
warm time (unchanged spec, every rule re-verified on load), time after the abs edit (abs
removed from the ISA in a temporary copy of the spec), the five slowest targets of the cold
--jobs 1 run, and direct-vs-CEGIS time per target (primitives and patterns, each method in a
fresh process so no cache is shared).

Run: ``.venv/bin/python bench/bench_rules.py`` (about 5-10 minutes on 2 cores).
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "results" / "rules.csv"
CORES = os.cpu_count()


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


def run_table(pe: str, out: Path, jobs: int) -> tuple[float, dict]:
    """Wall time of `cgra rules` in a fresh process, and its timing file."""
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", "from cgra.cli import main; main()", "rules",
                        "--pe", pe, "--out", str(out), "--jobs", str(jobs)],
                       cwd=ROOT, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"cgra rules failed: {r.stderr.strip()}")
    name = pe.split(":")[1]
    return dt, json.loads((out / f"{name}.timing.json").read_text())


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
    pe = "peak.examples.cgra_pe:PE"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cold1, timing1 = run_table(pe, tmp / "j1", 1)
        n = len(timing1["entries"])
        found = sum(e["status"] == "found" for e in timing1["entries"])
        emit("cold_jobs1", round(cold1, 2), "s", targets=n, found=found)
        cold2, _ = run_table(pe, tmp / "j2", 2)
        emit("cold_jobs2", round(cold2, 2), "s", targets=n)
        warm, timing_w = run_table(pe, tmp / "j1", 1)
        assert {e["action"] for e in timing_w["entries"]} == {"cached"}
        emit("warm", round(warm, 2), "s", targets=n)

        import peak.examples.cgra_pe as cgra_pe
        src = Path(cgra_pe.__file__).read_text()
        src = src.replace("    Abs = 2\n", "").replace(
            "        elif inst.alu == ALU.Abs:\n            res = (-a) if a[WIDTH - 1] else a\n",
            "")
        edited = tmp / "cgra_pe_noabs_bench.py"
        edited.write_text(src)
        t_edit, timing_e = run_table(f"{edited}:PE", tmp / "j1", 1)
        actions: dict[str, int] = {}
        for e in timing_e["entries"]:
            actions[e["action"]] = actions.get(e["action"], 0) + 1
        emit("after_abs_edit", round(t_edit, 2), "s", actions=actions)

        slow = sorted(timing1["entries"], key=lambda e: -e["seconds"])[:5]
        for i, e in enumerate(slow, 1):
            emit(f"slowest_{i}", round(e["seconds"], 3), "s", target=e["target"],
                 status=e["status"], method=e["method"])

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
