"""Area of one switch box, static versus ready-valid (issue 33): yosys cell counts of
:func:`canal.flow_control.switch_box` with ``T`` tracks (1..6) x 4 sides x 16 bits, disjoint
topology (fan-in 3 per SB_OUT), one pipeline site per SB_OUT, in three flavours:

* ``static``: 3:1 mux + 16-bit pipeline register + register mux (RMUX), as canal/rtl.py's SB;
* ``skid``: ready-valid mux + 2-entry skid FIFO per SB_OUT (Zhang, thesis ch. 3);
* ``split``: ready-valid mux + one split-FIFO half per SB_OUT (Cascade §V-D / §VI-E: a
  2-entry FIFO built from two adjacent SB registers).

Synthesis: the script of :data:`dse.area.SCRIPT` without the Memory black box (``synth
-flatten -noabc; abc -fast; opt_clean; stat``); figures per (tracks, flow): ``cells``,
``dff_bits`` (flip-flop cells), ``nand2`` (:func:`dse.area.nand2_area`) and the ratios of
``cells`` and ``nand2`` to the static SB of the same T. Config is on ports in all three flavours
(no config registers), so the counts compare datapath + flow control only.

Run: ``.venv/bin/python bench/bench_flow_control.py [--tracks 1,2,3,4,5,6] [--width 16]``
(state the cores). Appends to ``bench/results/flow_control.csv`` and prints a table.

``--array N``: also the ready-valid *array* (canal/rv_rtl.py) in Verilator: the 3x2 arrays
and multicast nets of tests/canal/test_rv_array.py (skid: garnet's array with its PEs wrapped,
IO (0, 0) -> IO (2, 0) and IO (1, 0); split: the pass-through array, IO (0, 0) -> IO (2, 0)
and the PE socket (1, 1); every FIFO site on the routes enabled; the test helpers are imported
from tests/canal), ``N`` random words per run, for skid and split FIFOs with no
stalls and with source / sink stall probability 0.3; figures ``array_words_per_cycle`` (words
/ cycles until the last word at the slower sink), ``array_latency`` (cycles from a word's
transfer at the source to the sink, no stalls) and ``array_lost_words`` (words missing, out of
order or duplicated at any sink; 0 expected).
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchlib

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "tests" / "canal"))

import numpy as np  # noqa: E402

from canal.flow_control import SB_FLOWS, switch_box  # noqa: E402  (project root first)
from canal.ready_valid import rv_bitstream  # noqa: E402
from canal.rv_array_sim import run_array_harness  # noqa: E402
from dse.area import nand2_area  # noqa: E402
from rv_array_testutil import harness, mc_array, mc_sinks, multicast_route  # noqa: E402

SCRIPT = ("read_verilog -sv sb.v; hierarchy -top {top}; synth -flatten -noabc -top {top}; "
          "abc -fast; opt_clean; tee -o stat.txt stat")


def synth(tracks: int, width: int, flow: str, tmp: Path) -> dict:
    """``{cells, dff_bits, nand2, types, seconds}`` of one switch box."""
    mod = switch_box(tracks, width, flow)
    d = tmp / mod.name
    d.mkdir(parents=True, exist_ok=True)
    (d / "sb.v").write_text(mod.source())
    t0 = time.perf_counter()
    subprocess.run(["yosys", "-q", "-p", SCRIPT.format(top=mod.name)], cwd=d, check=True,
                   capture_output=True, text=True, timeout=600)
    stat = (d / "stat.txt").read_text()
    block = stat[stat.rfind("Number of cells:"):]
    cells = int(re.match(r"Number of cells:\s+(\d+)", block)[1])
    types = {m[1]: int(m[2]) for m in re.finditer(r"^\s+(\$\S+)\s+(\d+)\s*$", block, re.M)}
    return {"cells": cells, "types": types, "nand2": round(nand2_area(types, mod.name), 1),
            "dff_bits": sum(n for c, n in types.items() if "DFF" in c),
            "seconds": round(time.perf_counter() - t0, 2)}


def array_runs(n_words: int, tmp: Path) -> list[dict]:
    """The ``--array`` figures (module docstring) as benchlib rows; prints one line per run."""
    rows = []
    for kind in ("skid", "split"):
        ic = mc_array(kind)
        paths = multicast_route(ic.graphs[16], mc_sinks(kind))
        bits = rv_bitstream(ic, {"n": paths})
        h = harness(kind)
        for p_stall in (0.0, 0.3):
            words = np.random.default_rng(9).integers(0, 1 << 16, n_words)
            t0 = time.perf_counter()
            tr = run_array_harness(h, bits, words, 9, p_stall, p_stall, 8 * n_words,
                                   tmp / f"{kind}_{p_stall}")
            lost = sum(n_words - len(r) if np.array_equal(r[:, 1], words[:len(r)])
                       else n_words for r in tr.received[:2])
            last = max(int(r[-1, 0]) for r in tr.received[:2] if len(r))
            p = {"array": "3x2 garnet PE" if kind == "skid" else "3x2 pass-through",
                 "tracks": 2, "fifo": kind, "p_src_stall": p_stall,
                 "p_sink_stall": p_stall, "words": n_words, "sinks": 2, "cores": 2,
                 "sim_seconds": round(time.perf_counter() - t0, 2)}
            rows.append(benchlib.row("flow_control", "array_words_per_cycle",
                                     round(n_words / (last + 1), 4), "words/cycle", p))
            rows.append(benchlib.row("flow_control", "array_lost_words", lost, "words", p))
            if p_stall == 0.0:
                lat = int(tr.received[0][0, 0] - tr.sent[0, 0])
                rows.append(benchlib.row("flow_control", "array_latency", lat, "cycles", p))
            print(f"array {kind:>5} stall {p_stall:.1f}: {n_words / (last + 1):.3f} words/cycle, "
                  f"lost {lost}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tracks", default="1,2,3,4,5,6")
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--array", type=int, default=0,
                    help="words per ready-valid array run (0 = skip the array figures)")
    args = ap.parse_args()
    tracks = [int(t) for t in args.tracks.split(",")]
    rows: list[dict] = []
    table: list[tuple] = []
    with tempfile.TemporaryDirectory(prefix="bench-flow-control-") as tmp:
        for t in tracks:
            base: dict | None = None
            for flow in SB_FLOWS:
                r = synth(t, args.width, flow, Path(tmp))
                base = base or r
                p = {"tracks": t, "sides": 4, "width": args.width, "flow": flow,
                     "topology": "disjoint", "fanin": 3, "sites_per_sb_out": 1,
                     "yosys_script": SCRIPT.format(top="SB")}
                for fig, unit in (("cells", "cells"), ("dff_bits", "flip-flops"),
                                  ("nand2", "NAND2-eq")):
                    rows.append(benchlib.row("flow_control", fig, r[fig], unit, p))
                rows.append(benchlib.row("flow_control", "cells_vs_static",
                                         round(r["cells"] / base["cells"], 3), "ratio", p))
                rows.append(benchlib.row("flow_control", "nand2_vs_static",
                                         round(r["nand2"] / base["nand2"], 3), "ratio", p))
                table.append((t, flow, r["cells"], r["dff_bits"], r["nand2"],
                              r["cells"] / base["cells"], r["nand2"] / base["nand2"]))
        if args.array:
            rows += array_runs(args.array, Path(tmp))
    benchlib.save_rows("flow_control", rows)
    print(f"{'T':>2} {'flow':>6} {'cells':>6} {'dff':>5} {'nand2':>8} {'cells/st':>8} "
          f"{'nand2/st':>8}")
    for t, flow, c, dff, a, rc, ra in table:
        print(f"{t:>2} {flow:>6} {c:>6} {dff:>5} {a:>8.1f} {rc:>8.2f} {ra:>8.2f}")
    print(f"summary: {len(table)} switch boxes synthesised (width {args.width}, tracks "
          f"{args.tracks})")


if __name__ == "__main__":
    main()
