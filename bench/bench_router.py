"""The dynamic layer's router (issue 33): area vs VCs, buffers and flit width, and latency /
throughput curves from the Python model.

* ``cells`` / ``flops``: yosys 0.23 generic ``synth`` (``read_verilog; synth -top; stat``) of
  :func:`canal.router.router_verilog` for every (vcs, buffers, flit_width) in the sweep
  (default vcs 1, 2, 4 x buffers 2, 3, 4 x flit width 8, 16, 32; 16 routing-table ids; the
  tables are 5 x 16 x (5 + 5 * vc_bits) of the flops). The thesis (ch. 3.3.3, Fig. 3.8) reports
  the same trends on 28 nm: more VCs or deeper buffers cost area, narrower flits save it.
* ``accepted`` / ``latency``: one router under uniform random traffic
  (:func:`canal.netsim.router_uniform_load`, 4000 cycles, 500 warm-up) per VC count and
  offered load; ``saturation`` = accepted at offered 1.0 (1 VC: the HOL limit, Karol et al.
  1987: 0.6399 for 5 ports).
* ``mesh_accepted`` / ``mesh_latency``: the 4x4 mesh (4 VCs, 3 buffers, 16-bit flits and
  packets), one XY-routed flow per node to a seeded random destination, Bernoulli packet
  injection per node; latency = mean cycles from a packet's injection time to its ejection.

Run: ``.venv/bin/python bench/bench_router.py [--vcs 1,2,4] [--buffers 2,3,4]
[--flits 8,16,32] [--no-area] [--seed 0]`` (state the cores). Appends to
``bench/results/router.csv``.
"""
from __future__ import annotations

import argparse
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import benchlib

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from canal.netsim import Injection, router_uniform_load, run_traffic  # noqa: E402
from canal.router import MeshParams, RouterParams, router_verilog  # noqa: E402
from canal.vc_alloc import Flow, allocate  # noqa: E402

LOADS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def yosys_cells(p: RouterParams, tmp: Path) -> tuple[int, int]:
    """(cells, flip-flops) of the router after yosys ``synth``."""
    v = tmp / f"{p.module_name}.v"
    v.write_text(router_verilog(p))
    r = subprocess.run(["yosys", "-q", "-p", f"read_verilog {v}; synth -top {p.module_name}; "
                        "tee -o /dev/stdout stat"], capture_output=True, text=True, check=True)
    cells = int(re.search(r"Number of cells:\s+(\d+)", r.stdout).group(1))
    flops = sum(int(n) for n in re.findall(r"\$_S?DFF\w*\s+(\d+)", r.stdout))
    return cells, flops


def mesh_point(rate: float, seed: int, cycles: int = 1500, warmup: int = 300):
    """(accepted flits/cycle/node, mean packet latency) of the 4x4 mesh at ``rate``."""
    mp = MeshParams(4, 4, RouterParams(vcs=4, buffers=3, flit_width=16, data_width=16))
    rng = random.Random(seed)
    nodes = list(mp.nodes())
    flows = [Flow(i, s, (rng.choice([n for n in nodes if n != s]),))
             for i, s in enumerate(nodes)]
    alloc = allocate(mp, flows)
    inj = []
    for t in range(cycles):
        for f in flows:
            if rng.random() < rate:
                inj.append(Injection(t, *f.src, alloc.inject_vc(f.id), f.id, t & 0xFFFF))
    inj.sort(key=lambda j: j.time)
    r = run_traffic(mp, alloc.tables(), inj, cycles)
    done = [e for e in r.ejections if e.cycle >= warmup]
    lat = [e.cycle - e.flit for e in done if e.flit <= e.cycle]
    return len(done) / ((cycles - warmup) * len(nodes)), sum(lat) / max(1, len(lat))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vcs", default="1,2,4")
    ap.add_argument("--buffers", default="2,3,4")
    ap.add_argument("--flits", default="8,16,32")
    ap.add_argument("--no-area", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    vcs = [int(v) for v in args.vcs.split(",")]
    rows: list[dict] = []
    if not args.no_area:
        with tempfile.TemporaryDirectory(prefix="bench-router-") as tmp:
            for v in vcs:
                for b in (int(x) for x in args.buffers.split(",")):
                    for f in (int(x) for x in args.flits.split(",")):
                        p = RouterParams(vcs=v, buffers=b, flit_width=f, data_width=f, ids=16)
                        cells, flops = yosys_cells(p, Path(tmp))
                        q = {"vcs": v, "buffers": b, "flit_width": f, "ids": 16,
                             "tool": "yosys synth"}
                        rows.append(benchlib.row("router", "cells", cells, "cells", q))
                        rows.append(benchlib.row("router", "flops", flops, "flops", q))
    for v in vcs:
        for load in LOADS:
            pt = router_uniform_load(RouterParams(vcs=v), load, seed=args.seed)
            q = {"vcs": v, "buffers": 3, "offered": load, "seed": args.seed,
                 "traffic": "uniform random, 1 router"}
            rows.append(benchlib.row("router", "accepted", round(pt.accepted, 4),
                                     "flits/cycle/port", q))
            rows.append(benchlib.row("router", "latency", round(pt.latency, 2), "cycles", q))
            if load == 1.0:
                rows.append(benchlib.row("router", "saturation", round(pt.accepted, 4),
                                         "flits/cycle/port", q))
    for load in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6):
        acc, lat = mesh_point(load, args.seed)
        q = {"mesh": "4x4", "vcs": 4, "buffers": 3, "offered": load, "seed": args.seed,
             "traffic": "one random-destination flow per node"}
        rows.append(benchlib.row("router", "mesh_accepted", round(acc, 4), "flits/cycle/node", q))
        rows.append(benchlib.row("router", "mesh_latency", round(lat, 2), "cycles", q))
    benchlib.save_rows("router", rows)


if __name__ == "__main__":
    main()
