"""Canal figures: graph build, RTL generation and Verilator build time; node and edge counts.

For each array size (default 4x4, 8x8, 16x16, 32x16; 5 tracks, Imran switch boxes, pipeline
registers on every SB_OUT, 16- and 1-bit graphs; IO tiles on the north row, pass-through
cores elsewhere) prints one JSON line per figure and appends rows to
bench/results/canal.csv:

* ``graph_build_s``   — both graphs, :func:`canal.passes.build_uniform` (s);
* ``rtl_generate_s``  — magma array circuit (:func:`canal.rtl.array_circuit`) (s);
* ``verilog_emit_s``  — CIRCT Verilog emission (s); ``verilog_bytes``;
* ``check_s``         — the structural check on the magma circuit (s);
* ``verilator_build_s`` — ``verilator --cc --build`` of the model library (s), or a
  ``verilator_timeout`` figure when it exceeds ``--verilator-timeout``;
* ``nodes_<w>`` / ``edges_<w>`` per width; ``tile_modules`` (distinct tile modules).

Usage: ``python bench/bench_canal.py [--sizes 4x4,8x8] [--verilator-sizes 4x4]
[--verilator-timeout 900]``.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "canal.csv"


def emit(figure: str, value, unit: str, params: dict) -> None:
    row = {"bench": "canal", "figure": figure, "value": value, "unit": unit,
           "params": {**params, "cores": os.cpu_count(),
                      "load1": round(os.getloadavg()[0], 2)}}
    print(json.dumps(row), flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    new = not RESULTS.exists()
    with RESULTS.open("a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["time", "bench", "figure", "value", "unit", "params"])
        w.writerow([time.strftime("%Y-%m-%dT%H:%M:%S"), "canal", figure, value, unit,
                    json.dumps(row["params"])])


def run_size(width: int, height: int, out: Path, verilator_timeout: float,
             verilator: bool = True) -> None:
    from canal.check import check_rtl
    from canal.cores import io_core, passthru_core
    from canal.graph import Side
    from canal.passes import InterconnectParams, build_uniform, io_on_edges
    from canal.rtl import array_circuit, compile_array

    params = {"size": f"{width}x{height}", "tracks": 5, "topology": "imran",
              "widths": [16, 1]}
    pt, io = passthru_core(), io_core()
    t0 = time.perf_counter()
    ic = build_uniform(InterconnectParams(width, height),
                       io_on_edges(lambda x, y: pt, io, width, height, sides=(Side.NORTH,)))
    emit("graph_build_s", round(time.perf_counter() - t0, 3), "s", params)
    for w, g in ic.graphs.items():
        emit(f"nodes_{w}", len(g.nodes), "nodes", params)
        emit(f"edges_{w}", g.num_edges(), "edges", params)
    t0 = time.perf_counter()
    arr = array_circuit(ic, name="BenchArray")
    emit("rtl_generate_s", round(time.perf_counter() - t0, 3), "s", params)
    emit("tile_modules", len({type(i).name for i in arr.instances
                              if i.name.startswith("Tile_X")}), "modules", params)
    t0 = time.perf_counter()
    vfile = compile_array(arr, out)
    emit("verilog_emit_s", round(time.perf_counter() - t0, 3), "s", params)
    emit("verilog_bytes", vfile.stat().st_size, "bytes", params)
    t0 = time.perf_counter()
    check_rtl(ic, arr)
    emit("check_s", round(time.perf_counter() - t0, 3), "s", params)
    if not verilator:
        return
    vdir = out / "obj_dir"
    cmd = ["verilator", "--cc", "--build", "-Wno-fatal", "-j", "1", "--Mdir", str(vdir),
           "--top-module", arr.name, str(vfile)]
    t0 = time.perf_counter()
    # own process group, so a timeout also stops make and the compilers it started
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        _, err = proc.communicate(timeout=verilator_timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        emit("verilator_timeout", verilator_timeout, "s", params)
        return
    if proc.returncode != 0:
        print(err.decode()[-2000:], file=sys.stderr)
        raise SystemExit(f"verilator build of {params['size']} failed ({proc.returncode})")
    emit("verilator_build_s", round(time.perf_counter() - t0, 1), "s", params)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4x4,8x8,16x16,32x16")
    ap.add_argument("--verilator-timeout", type=float, default=900.0)
    ap.add_argument("--verilator-sizes", default="4x4,8x8,16x16,32x16",
                    help="sizes whose Verilator build is timed (others: graph + RTL only)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_canal_") as tmp:
        for size in args.sizes.split(","):
            w, h = (int(v) for v in size.lower().split("x"))
            run_size(w, h, Path(tmp) / size, args.verilator_timeout,
                     size in args.verilator_sizes.split(","))


if __name__ == "__main__":
    main()
