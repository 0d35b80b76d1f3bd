"""Garnet figures: wall time and peak memory (max RSS) of `cgra rtl` for 8x8, 16x16 and 32x16,
size of the generated Verilog, Verilator lint counts and Verilator build time of the 8x8
array; and the incremental build at 32x16 (what `make rtl` runs): cold, no change, PE edit,
TOML edits. One JSON line per figure; rows are appended to bench/results/garnet.csv.

Each `cgra rtl` runs in its own process (a fresh magma state, as `make rtl` would) with the
rules step on by default; pass --no-rules to time RTL + routing collateral only.

Incremental figures (``--incremental 32x16``, "" to skip), on a copy of the default PE
(``my_pe.py:PE`` next to a TOML in a temporary directory, so the PE edit leaves the project
alone) with its own shared rules directory (seeded from --rules-dir when given):
``rtl_incr_cold`` (new design: interconnect, validation, RTL, collateral, rules for the
copy), ``rtl_incr_no_change`` (the same command again: nothing rebuilt),
``rtl_incr_pe_edit`` (the PE's docstring edited: new spec hash; interconnect reused, PE
tile + top recompiled, rules re-derived by PEak), ``rtl_incr_pe_edit_no_rules`` (another
PE edit, --no-rules: the RTL/collateral part alone), ``rtl_incr_toml_tracks`` (tracks
5 -> 4: interconnect rebuilt and validated, every module recompiled),
``rtl_incr_toml_flush`` (flush_interval: only the top recompiled). Each row carries the
summary line of the run.
Stage figures (``--stages 8x8,16x16,32x16,64x32``, "" to skip; each size in a fresh
process, no cache): ``stage_interconnect`` (graphs + check), ``stage_tile_shapes``,
``stage_tiles_circt`` (magma -> CIRCT of each distinct tile), ``stage_top_text`` (the top
written as text, what `cgra rtl` does: :func:`garnet.array.array_top`) and, side by side in
the same process, ``stage_top_magma_circt`` (the previous top: the magma body of the same
:func:`canal.rtl.array_netlist` against tile declarations, compiled by CIRCT); plus
``stages_growth_exponent_*`` = slope of log(time) over log(tile count) between the
smallest and the largest size.
Scaling figures (``--scaling 8x8,16x16,32x16,64x32,64x64``, "" to skip; issue 18): each
size's `cgra rtl --timings` into a fresh directory (cold build cache, the shared rules warm),
the sizes interleaved over ``--rounds`` rounds so machine noise hits every size alike:
``scaling_wall`` per size and round with the stage times of that run (``stages``: this
process, ``worker:`` the RTL worker beside it), ``scaling_ratio_64x32_32x16`` per round
(the goal: <= 2) and ``scaling_growth_exponent`` (least-squares slope of log(wall) over
log(tile count), all sizes, the minimum of the rounds per size).
Run: .venv/bin/python bench/bench_garnet.py [--no-rules] [--rules-dir build/rules]
[--sizes 8x8,16x16,32x16] [--incremental 32x16] [--stages 8x8,16x16,32x16,64x32]
[--scaling 8x8,16x16,32x16,64x32,64x64 --rounds 2]
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


def _timed_rtl(cfg: Path, out: Path, rules_dir: Path, no_rules: bool = False
               ) -> tuple[float, str]:
    cmd = [CGRA, "rtl", "--config", str(cfg), "--out", str(out), "--rules-dir", str(rules_dir)]
    if no_rules:
        cmd.append("--no-rules")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    return wall, proc.stdout.strip().splitlines()[-1]


def scaling(tmp: Path, sizes: list[str], rounds: int, rules_dir: Path,
            no_rules: bool) -> None:
    """The scaling figures (module docstring)."""
    import math
    import re

    walls: dict[str, list[float]] = {s: [] for s in sizes}
    for r in range(rounds):
        for s in sizes:
            w, h = (int(v) for v in s.split("x"))
            cfg = _config(tmp, w, h)
            out = tmp / f"scaling_{s}_{r}"
            cmd = [CGRA, "rtl", "--config", str(cfg), "--out", str(out), "--rules-dir",
                   str(rules_dir), "--timings"] + (["--no-rules"] if no_rules else [])
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
            wall = time.perf_counter() - t0
            if proc.returncode != 0:
                raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
            shutil.rmtree(out, ignore_errors=True)
            lines = proc.stdout.strip().splitlines()
            stage_times = {m.group(2): float(m.group(1)) for m in
                           (re.match(r"\s*([0-9.]+) s  (.*)$", ln) for ln in lines[:-1]) if m}
            walls[s].append(wall)
            emit("scaling_wall", wall, "s", {"array": s, "round": r, "rules": not no_rules,
                                             "stages": stage_times, "summary": lines[-1]})
        if "32x16" in walls and "64x32" in walls:
            emit("scaling_ratio_64x32_32x16", walls["64x32"][-1] / walls["32x16"][-1], "",
                 {"round": r, "goal": "<= 2"})
    if len(sizes) >= 2:
        import numpy as np

        xs = [math.log(math.prod(int(v) for v in s.split("x"))) for s in sizes]
        ys = [math.log(min(walls[s])) for s in sizes]
        k = float(np.polyfit(xs, ys, 1)[0])
        emit("scaling_growth_exponent", k, "", {"sizes": sizes, "fit": "least squares, "
                                                 "min wall of the rounds per size"})


def incremental(tmp: Path, w: int, h: int, rules_dir: Path | None) -> None:
    """The incremental-build figures (module docstring)."""
    d = tmp / "incremental"
    d.mkdir()
    pe = d / "my_pe.py"
    shutil.copy(ROOT / "peak" / "examples" / "cgra_pe.py", pe)
    cfg = _config(d, w, h)
    cfg.write_text(cfg.read_text().replace('pe = "peak.examples.cgra_pe:PE"',
                                           'pe = "my_pe.py:PE"'))
    shared = d / "rules"
    if rules_dir is not None and rules_dir.is_dir():
        shutil.copytree(rules_dir, shared)
    out = d / "design"
    params = {"array": f"{w}x{h}", "rules": True}

    def run(figure: str, no_rules: bool = False) -> None:
        wall, summary = _timed_rtl(cfg, out, shared, no_rules)
        emit(figure, wall, "s", {**params, "rules": not no_rules, "summary": summary})

    run("rtl_incr_cold")
    run("rtl_incr_no_change")
    pe.write_text(pe.read_text().replace('"""The default CGRA PE', '"""An edited CGRA PE', 1))
    run("rtl_incr_pe_edit")
    run("rtl_incr_no_change")
    cfg.write_text(cfg.read_text().replace("tracks = 5", "tracks = 4"))
    run("rtl_incr_toml_tracks")
    cfg.write_text(cfg.read_text().replace("flush_interval = 4", "flush_interval = 2"))
    run("rtl_incr_toml_flush")
    pe.write_text(pe.read_text().replace('"""An edited CGRA PE', '"""Edited again: a PE', 1))
    run("rtl_incr_pe_edit_no_rules", no_rules=True)


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


def stage_child(w: int, h: int) -> None:
    """Time the stages of `cgra rtl`'s RTL path at w x h (module docstring) in this process
    and print one JSON object {stage: seconds}."""
    import hashlib

    from cgra.hdl import m

    from canal.rtl import _array_body, array_netlist, tile_circuit
    from canal.timing import TimingModel
    from garnet.array import (array_top, build_interconnect, check_interconnect, port_list,
                              tile_declaration, tile_shapes)
    from garnet.build import compile_module
    from garnet.params import load_toml

    from canal.graph import no_gc

    tmp = Path(tempfile.mkdtemp(prefix="bench_stages_"))
    try:
        params = load_toml(_config(tmp, w, h))
        out: dict[str, float] = {}
        gc_off = no_gc()            # as in `cgra rtl` (garnet.build)
        gc_off.__enter__()
        t0 = time.perf_counter()
        ic = build_interconnect(params, timing=TimingModel.load(params.timing or None))
        check_interconnect(ic, params)
        out["interconnect"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        shapes = tile_shapes(ic)
        out["tile_shapes"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        ports: dict[str, list[dict]] = {}
        for xy, s in shapes.items():
            if s.module_name not in ports:
                circ = tile_circuit(s, ic.configs[xy], ic.core(*xy))
                compile_module(circ, tmp)
                ports[s.module_name] = port_list(circ)
        out["tiles_circt"] = time.perf_counter() - t0
        top = f"BenchTop_{w}x{h}_{hashlib.sha1(str(sorted(ports)).encode()).hexdigest()[:6]}"
        t0 = time.perf_counter()
        text, _ = array_top(ic, params, shapes, ports, top)
        out["top_text"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        net = array_netlist(ic, params.flush_interval)
        decls = {mod: tile_declaration(mod, p) for mod, p in ports.items()}
        circuits = {xy: decls[s.module_name] for xy, s in shapes.items()}
        io_ports = {n: (m.In if d == "in" else m.Out)(m.Bit if wd == 1 else m.Bits[wd])
                    for n, d, wd in net.ports}

        class Top(m.Circuit):
            name = top + "_magma"
            io = m.IO(**io_ports) + m.ClockIO(has_reset=True)
            _array_body(io, net, circuits)
        compile_module(Top, tmp)
        out["top_magma_circt"] = time.perf_counter() - t0
        out["top_text_bytes"] = len(text.encode())
        gc_off.__exit__(None, None, None)
        print(json.dumps(out), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def stages(sizes: list[str]) -> None:
    """The stage figures (module docstring), each size in its own process."""
    import math

    got: dict[str, dict[str, float]] = {}
    for s in sizes:
        proc = subprocess.run([sys.executable, __file__, "--stage-child", s],
                              capture_output=True, text=True, cwd=ROOT)
        if proc.returncode != 0:
            raise SystemExit(f"stages {s} failed:\n{proc.stderr[-3000:]}")
        got[s] = json.loads(proc.stdout.strip().splitlines()[-1])
        for stage, v in got[s].items():
            if stage.endswith("_bytes"):
                emit(f"stage_{stage}", v / 1e6, "MB", {"array": s})
            else:
                emit(f"stage_{stage}", v, "s", {"array": s})
    if len(sizes) >= 2:
        a, b = sizes[0], sizes[-1]
        na, nb = (math.prod(int(v) for v in x.split("x")) for x in (a, b))
        for stage in ("top_text", "top_magma_circt", "interconnect"):
            k = math.log(got[b][stage] / got[a][stage]) / math.log(nb / na)
            emit(f"stages_growth_exponent_{stage}", k, "", {"from": a, "to": b})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-rules", action="store_true")
    ap.add_argument("--sizes", default="8x8,16x16,32x16")
    ap.add_argument("--rules-dir", default=None,
                    help="an existing shared rules dir (e.g. build/rules after `make rules`): "
                         "skip the cold rule-synthesis run")
    ap.add_argument("--incremental", default="32x16",
                    help="array size of the incremental-build figures ('' = skip)")
    ap.add_argument("--stages", default="",
                    help="array sizes of the per-stage figures, e.g. 8x8,32x16 ('' = skip)")
    ap.add_argument("--scaling", default="",
                    help="array sizes of the scaling figures, e.g. 8x8,32x16,64x32 ('' = skip)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of the scaling figures")
    ap.add_argument("--stage-child", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.stage_child:
        stage_child(*(int(v) for v in args.stage_child.split("x")))
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench_garnet_"))
    try:
        designs = {}
        rules_dir = Path(args.rules_dir).resolve() if args.rules_dir else None
        sizes = [s for s in args.sizes.split(",") if s]
        if sizes and not args.no_rules and rules_dir is None:
            # first run synthesises the rule table cold into the shared dir; the measured
            # runs below reuse it (as `make rtl` after `make rules`)
            run_rtl(tmp, 8, 8, False, tag="_cold_rules")
        for s in sizes:
            w, h = (int(v) for v in s.split("x"))
            designs[s] = run_rtl(tmp, w, h, args.no_rules, rules_dir=rules_dir)
        if args.incremental:
            w, h = (int(v) for v in args.incremental.split("x"))
            incremental(tmp, w, h, rules_dir if rules_dir is not None else tmp / "rules")
        if "8x8" in designs:
            verilator_build(designs["8x8"], tmp)
        if args.scaling:
            shared = rules_dir if rules_dir is not None else tmp / "rules"
            if not args.no_rules and not shared.is_dir():
                run_rtl(tmp, 8, 8, False, tag="_cold_rules", rules_dir=shared)
            scaling(tmp, args.scaling.split(","), args.rounds, shared, args.no_rules)
        if args.stages:             # last: its processes would count in the peak RSS above
            stages(args.stages.split(","))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
