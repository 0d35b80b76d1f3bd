"""PEak figures: build time of the three interpretations of the default PE (+ Verilog),
Verilator build + 10k vectors, PE instruction width. One JSON line per figure; rows are
appended to bench/results/peak.csv. Run: .venv/bin/python bench/bench_peak.py"""
from __future__ import annotations

import csv
import json
import os
import random
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def emit(figure: str, value: float, unit: str, params: dict) -> None:
    row = {"bench": "peak", "figure": figure, "value": round(value, 3), "unit": unit,
           "params": {**params, "cores": os.cpu_count()}}
    print(json.dumps(row), flush=True)
    path = os.path.join(ROOT, "bench", "results", "peak.csv")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["time", "bench", "figure", "value", "unit", "params"])
        w.writerow([time.strftime("%Y-%m-%dT%H:%M:%S"), "peak", figure, row["value"], unit,
                    json.dumps(row["params"])])


def main() -> None:
    t0 = time.perf_counter()
    from peak.assembler import assembler
    from peak.examples.cgra_pe import PE, Inst
    from peak.normalize import normal_form
    from peak.rtl import write_verilog
    from peak.smt import symbolic
    t_import = time.perf_counter() - t0
    out = tempfile.mkdtemp(prefix="bench_peak_")
    t1 = time.perf_counter()
    nf = normal_form(PE)
    pe = PE()
    asm = assembler(Inst)
    pe(asm.decode(0), 1, 2, 0, 0, 0)                       # Python interpretation
    t_py = time.perf_counter() - t1
    t2 = time.perf_counter()
    sym = symbolic(PE)
    sym.z3()
    t_smt = time.perf_counter() - t2
    t3 = time.perf_counter()
    vfile = write_verilog(PE, out)
    t_rtl = time.perf_counter() - t3
    total = time.perf_counter() - t1
    params = {"pe": "peak.examples.cgra_pe:PE", "ssa_lines": len(nf.source.splitlines())}
    emit("import_time", t_import, "s", params)
    emit("normal_form_and_python_model", t_py, "s", params)
    emit("smt_model_and_z3", t_smt, "s", params)
    emit("magma_circuit_and_verilog", t_rtl, "s", {**params, "verilog_bytes":
                                                    os.path.getsize(vfile)})
    emit("three_interpretations_plus_verilog", total, "s", params)
    emit("instruction_width", asm.width, "bits", params)

    from peak.sim import check_vectors
    rng = random.Random(1)
    n = 10_000
    vecs = [(asm.random_encoding(rng), (rng.getrandbits(16), rng.getrandbits(16),
                                        rng.getrandbits(1), rng.getrandbits(1),
                                        rng.getrandbits(1))) for _ in range(n)]
    import resource
    from peak.sim import RTLSim, model_outputs

    def cpu() -> float:
        me = resource.getrusage(resource.RUSAGE_SELF)
        ch = resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + ch.ru_utime + ch.ru_stime

    t4, c4 = time.perf_counter(), cpu()
    sim = RTLSim(PE, os.path.join(out, "verilator"))
    got = sim.run(vecs)
    emit("verilator_build_plus_10k_vectors", time.perf_counter() - t4, "s",
         {**params, "vectors": n, "cpu_s": round(cpu() - c4, 2)})
    t5 = time.perf_counter()
    sim.run(vecs)
    emit("rerun_10k_vectors_prebuilt", time.perf_counter() - t5, "s", {**params, "vectors": n})
    t6 = time.perf_counter()
    want = model_outputs(PE, vecs)
    emit("python_model_10k_vectors", time.perf_counter() - t6, "s", {**params, "vectors": n})
    if want != got:
        bad = next(i for i, (a, b) in enumerate(zip(want, got, strict=True)) if a != b)
        raise SystemExit(f"RTL and Python model differ at vector {bad}: {want[bad]} vs "
                         f"{got[bad]}")
    t7 = time.perf_counter()
    check_vectors(PE, vecs[:1000], os.path.join(out, "verilator_check"))
    emit("check_vectors_1k_including_build", time.perf_counter() - t7, "s",
         {**params, "vectors": 1000})


if __name__ == "__main__":
    main()
