"""Mapper front half figures: per app at unroll 1 on a 64x64 image, compute-op count (one PE
per op before rule covering), MEM tiles (dual-port SRAM and physical unified buffer presets),
registers after shift-register optimisation, IOs, and the time to lower + memory-map.
Reference numbers: AHA paper (PE / MEM: blur 20 / 2, harris 91 / 6, unsharp 101 / 11) and the
unified-buffer paper's MEM counts after shift-register optimisation (gaussian 1, harris 5,
unsharp 6).

Instruction selection (issue 12, item 3): PEs per app (64x64, unroll 1 and 2) and per shipped
CoreIR file on the default PE (``build/default``, configs/default.toml) and on the
three-input PE (``build/d3``, configs/d3.toml: ``Add3``/``MulAdd``), with greedy maximal munch
and with the minimum-cost cover (``mapper.mapping.compute``, method ``optimal``), and the covering
time. Designs are generated there when absent (RTL and rules, a few minutes; the D3 rules
are cached in ``build/rules_d3``).

Prints one JSON line per figure and appends rows to bench/results/mapper_frontend.csv.
Usage: ``.venv/bin/python bench/bench_mapper_frontend.py``
"""
from __future__ import annotations

import csv
import json
import os
import time
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mapper.apps import APPS, lower_app  # noqa: E402
from mapper.mapping.memory import DUAL_PORT_SRAM, PHYSICAL_UNIFIED_BUFFER, map_memory  # noqa: E402

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
    rows += pe_counts(cores)
    with open(out / "mapper_frontend.csv", "a", newline="") as f:
        csv.writer(f).writerows(rows)


def design_dir(name: str) -> Path:
    """``build/<name>`` (configs/<name>.toml), generated when absent."""
    d = ROOT / "build" / name
    if not (d / "design.json").is_file() or not (d / "rules").is_dir():
        from garnet.build import generate
        from garnet.params import load_toml

        rules = ROOT / "build" / ("rules" if name == "default" else f"rules_{name}")
        generate(load_toml(ROOT / "configs" / f"{name}.toml"), d, rules=True,
                 rules_dir=rules, jobs=2, config_file=f"configs/{name}.toml")
    return d


def pe_counts(cores: int | None) -> list[list]:
    """PE-count figures of instruction selection (module docstring); returns CSV rows."""
    from mapper.collateral import load_collateral
    from mapper.mapping.compute import cover_kernel, map_compute
    from mapper.frontend.coreir import example_kernels, import_coreir

    rows = []

    def emit(fig: str, val: float, unit: str, params: dict) -> None:
        print(json.dumps({"bench": "mapper_frontend", "figure": fig, "value": val,
                          "unit": unit, "params": {**params, "cores": cores}}))
        rows.append([time.strftime("%Y-%m-%dT%H:%M:%S"), params.get("app"), fig, val, unit,
                     cores])

    for design in ("default", "d3"):
        c = load_collateral(design_dir(design))
        for unroll in (1, 2):
            for name in sorted(APPS):
                mm = map_memory(lower_app(name, 64, 64, unroll), DUAL_PORT_SRAM)
                for method in ("greedy", "optimal"):
                    t0 = time.perf_counter()
                    cm = map_compute(mm.netlist, c.rules, c.pe, method=method)
                    dt = time.perf_counter() - t0
                    p = {"app": name, "unroll": unroll, "image": "64x64", "pe": design,
                         "method": method}
                    emit("pes", sum(cm.pe_counts().values()), "PEs", p)
                    emit("cover_time", round(dt * 1e3, 3), "ms", p)
        for path in example_kernels().values():
            kernels = import_coreir(path)
            for method in ("greedy", "optimal"):
                n = sum(cover_kernel(k, c.rules, c.pe, method=method).pe_count()
                        for k in kernels.values())
                emit("pes", n, "PEs", {"app": f"coreir:{Path(path).stem}", "pe": design,
                                       "method": method})
    return rows


if __name__ == "__main__":
    main()
