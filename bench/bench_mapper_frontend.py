"""Mapper front half figures: per app at unroll 1 on a 64x64 image, compute-op count (one PE
per op before rule covering), MEM tiles (dual-port SRAM and physical unified buffer presets),
registers after shift-register optimisation, IOs, and the time to lower + memory-map.
Reference numbers: AHA paper (PE / MEM: blur 20 / 2, harris 91 / 6, unsharp 101 / 11) and the
unified-buffer paper's MEM counts after shift-register optimisation (gaussian 1, harris 5,
unsharp 6).  Prints one JSON line per figure and appends rows to
bench/results/mapper_frontend.csv.  Usage: ``.venv/bin/python bench/bench_mapper_frontend.py``
"""
from __future__ import annotations

import csv
import json
import os
import time
from pathlib import Path

from mapper.apps import APPS, lower_app
from mapper.memory import DUAL_PORT_SRAM, PHYSICAL_UNIFIED_BUFFER, map_memory

AHA = {"gaussian": (20, 2), "harris": (91, 6), "unsharp": (101, 11)}
UB_PAPER_MEM = {"gaussian": 1, "harris": 5, "unsharp": 6}


def main() -> None:
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    rows = []
    cores = os.cpu_count()
    for name in sorted(APPS):
        t0 = time.perf_counter()
        p = lower_app(name, 64, 64, 1)
        t1 = time.perf_counter()
        dp = map_memory(p, DUAL_PORT_SRAM)
        t2 = time.perf_counter()
        pub = map_memory(p, PHYSICAL_UNIFIED_BUFFER)
        c = dp.counts()
        figs = {
            "pe_ops": (c["pe_ops"], "ops"), "mem_dual_port": (c["mem"], "tiles"),
            "mem_pub": (pub.counts()["mem"], "tiles"), "registers": (c["reg"], "regs"),
            "io": (c["io"], "ios"), "lower_time": ((t1 - t0) * 1e3, "ms"),
            "memory_map_time": ((t2 - t1) * 1e3, "ms"),
        }
        params = {"app": name, "unroll": 1, "image": "64x64", "cores": cores,
                  "aha_pe_mem": AHA.get(name), "ub_paper_mem": UB_PAPER_MEM.get(name)}
        for fig, (val, unit) in figs.items():
            line = {"bench": "mapper_frontend", "figure": fig, "value": round(val, 3),
                    "unit": unit, "params": params}
            print(json.dumps(line))
            rows.append([time.strftime("%Y-%m-%dT%H:%M:%S"), name, fig, round(val, 3), unit, cores])
    with open(out / "mapper_frontend.csv", "a", newline="") as f:
        csv.writer(f).writerows(rows)


if __name__ == "__main__":
    main()
