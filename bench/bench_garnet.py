"""Garnet figures: wall time and peak memory (max RSS) of `cgra rtl` for 8x8, 16x16 and 32x16,
size of the generated Verilog, Verilator lint counts and Verilator build time of the 8x8
array. One JSON line per figure; rows are appended to bench/results/garnet.csv.

Each `cgra rtl` runs in its own process (a fresh magma state, as `make rtl` would) with the
rules step on by default; pass --no-rules to time RTL + routing collateral only.
Run: .venv/bin/python bench/bench_garnet.py [--no-rules] [--rules-dir build/rules]
[--sizes 8x8,16x16,32x16]
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CGRA = str(Path(sys.executable).parent / "cgra")


def emit(figure: str, value: float, unit: str, params: dict) -> None:
    row = {"bench": "garnet", "figure": figure, "value": round(value, 3), "unit": unit,
           "params": {**params, "cores": os.cpu_count()}}
    print(json.dumps(row), flush=True)
    path = ROOT / "bench" / "results" / "garnet.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    with open(path, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["time", "bench", "figure", "value", "unit", "params"])
        w.writerow([time.strftime("%Y-%m-%dT%H:%M:%S"), "garnet", figure, row["value"], unit,
                    json.dumps(row["params"])])


def _config(tmp: Path, w: int, h: int) -> Path:
    text = (ROOT / "configs" / "default.toml").read_text()
    text = text.replace('name = "default"', f'name = "bench_{w}x{h}"')
    text = text.replace("width = 32", f"width = {w}").replace("height = 16", f"height = {h}")
    p = tmp / f"bench_{w}x{h}.toml"
    p.write_text(text)
    return p


def run_rtl(tmp: Path, w: int, h: int, no_rules: bool, tag: str = "",
            rules_dir: Path | None = None) -> Path:
    cfg = _config(tmp, w, h)
    out = tmp / f"design_{w}x{h}{tag}"
    cmd = [CGRA, "rtl", "--config", str(cfg), "--out", str(out),
           "--rules-dir", str(rules_dir or tmp / "rules")]
    if no_rules:
        cmd.append("--no-rules")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"cgra rtl {w}x{h} failed:\n{proc.stderr[-3000:]}")
    summary = proc.stdout.strip().splitlines()[-1]
    params = {"array": f"{w}x{h}", "rules": not no_rules, "summary": summary}
    if tag:
        emit(f"cgra_rtl_wall{tag}", wall, "s", params)
        return out
    emit("cgra_rtl_wall", wall, "s", params)
    emit("cgra_rtl_cpu", (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
         "s", params)
    emit("cgra_rtl_peak_rss", after.ru_maxrss / 1024, "MB", params)
    vbytes = sum(p.stat().st_size for p in (out / "rtl").glob("*.v"))
    nfiles = len(list((out / "rtl").glob("*.v")))
    emit("verilog_size", vbytes / 1e6, "MB", {"array": f"{w}x{h}", "files": nfiles})
    coll = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    emit("collateral_size", coll / 1e6, "MB", {"array": f"{w}x{h}"})
    return out


def verilator_build(design: Path, tmp: Path) -> None:
    from garnet.lint import lint

    t0 = time.perf_counter()
    rep = lint(design)
    emit("verilator_lint_wall", time.perf_counter() - t0, "s",
         {"array": "8x8", "errors": len(rep.errors), "warnings": dict(rep.warnings)})
    doc = json.loads((design / "design.json").read_text())
    build = tmp / "vbuild"
    shutil.copytree(design / "rtl", build)
    cmd = ["verilator", "--cc", "--build", "-j", "2", "-Wno-fatal", "--top-module", doc["top"],
           "-f", "filelist.f", "-Mdir", "obj_dir"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=build, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"verilator build failed:\n{proc.stderr[-3000:]}")
    emit("verilator_build_wall", wall, "s", {"array": "8x8", "cmd": " ".join(cmd[:8])})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-rules", action="store_true")
    ap.add_argument("--sizes", default="8x8,16x16,32x16")
    ap.add_argument("--rules-dir", default=None,
                    help="an existing shared rules dir (e.g. build/rules after `make rules`): "
                         "skip the cold rule-synthesis run")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_garnet_"))
    try:
        designs = {}
        rules_dir = Path(args.rules_dir).resolve() if args.rules_dir else None
        if not args.no_rules and rules_dir is None:
            # first run synthesises the rule table cold into the shared dir; the measured
            # runs below reuse it (as `make rtl` after `make rules`)
            run_rtl(tmp, 8, 8, False, tag="_cold_rules")
        for s in args.sizes.split(","):
            w, h = (int(v) for v in s.split("x"))
            designs[s] = run_rtl(tmp, w, h, args.no_rules, rules_dir=rules_dir)
        if "8x8" in designs:
            verilator_build(designs["8x8"], tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
