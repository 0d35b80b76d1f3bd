"""Lake figures: RTL generation time, Verilog size and yosys cell counts per preset;
Verilator and Python-model cycles per second for the physical unified buffer; and a check
that the multiplier-form RTL (pond, its own Verilator build) agrees with the
recurrence-form model on random programs.

Prints one JSON line per figure ({"bench", "figure", "value", "unit", "params"}) and
appends the rows to bench/results/lake.csv. Run: ``.venv/bin/python bench/bench_lake.py``.
Yosys 0.23 parses neither ``automatic`` locals nor packed 2-D ``reg`` arrays, so yosys reads
a copy compiled with ``disallow_local_variables=True`` whose storage declaration is
rewritten to an unpacked array (same hardware); cells are counted after
``proc; flatten; opt; memory -nomap; opt; techmap; opt`` (generic gates, the SRAM kept as
one ``$mem`` cell).
"""
from __future__ import annotations

import csv
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lake.config import configure  # noqa: E402
from lake.affine import strides_from_deltas  # noqa: E402
from lake.model import make_model, make_stimulus, run_model  # noqa: E402
from lake.program import delay_line, program  # noqa: E402
from lake.spec import PRESETS  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "lake.csv"
CORES = os.cpu_count()


def emit(figure: str, value, unit: str, **params) -> None:
    params["cores"] = CORES
    row = {"bench": "lake", "figure": figure, "value": value, "unit": unit, "params": params}
    print(json.dumps(row), flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    new = not RESULTS.exists()
    with RESULTS.open("a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["time", "bench", "figure", "value", "unit", "params"])
        w.writerow([time.strftime("%Y-%m-%dT%H:%M:%S"), "lake", figure, value, unit,
                    json.dumps(params, sort_keys=True)])


def yosys_cells(verilog: Path, top: str) -> dict[str, int] | None:
    yosys = shutil.which("yosys")
    if yosys is None:
        return None
    text = verilog.read_text()
    text = re.sub(r"reg \[(\d+):0\]\[(\d+):0\] (\w+);", r"reg [\2:0] \3 [0:\1];", text)
    src = verilog.with_suffix(".yosys.v")
    src.write_text(text)
    script = (f"read_verilog -sv {src}; hierarchy -top {top}; proc; flatten; opt; "
              "memory -nomap; opt; techmap; opt; stat")
    out = subprocess.run([yosys, "-p", script], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"yosys failed on {src}: {out.stderr[-500:]}")
    stat = out.stdout[out.stdout.rindex("Printing statistics"):]
    cells = int(re.search(r"Number of cells:\s+(\d+)", stat).group(1))
    dffs = sum(int(n) for n in re.findall(r"\$_DFFE?_\w+\s+(\d+)", stat))
    mems = sum(int(n) for n in re.findall(r"\$mem\w*\s+(\d+)", stat))
    return {"cells": cells, "flip_flops": dffs, "sram_macro_cells": mems}


def random_program(rng: random.Random, words: int, start: int):
    """A random legal program (up to 4 levels) with addresses in [0, words)."""
    while True:
        d = rng.randint(1, 4)
        ext = [rng.randint(1, 4) for _ in range(d)]
        astr = [rng.randint(-5, 5) for _ in range(d)]
        lo = sum(min(0, s * (e - 1)) for s, e in zip(astr, ext, strict=True))
        hi = sum(max(0, s * (e - 1)) for s, e in zip(astr, ext, strict=True))
        if hi - lo < words:
            sstr = strides_from_deltas(ext, [rng.randint(1, 3) for _ in range(d)])
            return program(ext, astr, -lo + rng.randint(0, words - 1 - (hi - lo)), sstr, start)


def multiplier_form_check(out: Path, n: int = 40) -> None:
    """Build the multiplier-form pond under Verilator and compare it with the
    recurrence-form Python model on ``n`` random programs with random stalls."""
    from lake.sim import VerilatorMemory

    pre = "pond_32x16"
    vm = VerilatorMemory(pre, out / "verilator_pond_multiplier", form="multiplier")
    rng = random.Random(2024)
    agree = 0
    for k in range(n):
        w = random_program(rng, 32, rng.randint(0, 4))
        r = random_program(rng, 32, rng.randint(0, w.last_cycle() + 6))
        progs = {"data_in_0": w, "data_out_0": r}
        cfg = configure(pre, progs)
        stall = [rng.randint(0, 1) for _ in range(5)] + [1]
        stim = make_stimulus(pre, progs, {"data_in_0": [rng.randrange(65536)
                                                         for _ in range(w.size)]},
                             stall=stall, seed=k)
        agree += vm.run(cfg, stim) == run_model(pre, cfg, stim)
    emit("multiplier_form_rtl_agrees_with_recurrence_model", agree, "programs", preset=pre,
         programs=n, form="multiplier")


def main() -> None:
    import magma  # noqa: F401  (import time is not generation time)

    from lake.rtl import compile_verilog, memory_circuit
    from lake.sim import VerilatorMemory

    out = Path(tempfile.mkdtemp(prefix="bench_lake_"))
    for name in PRESETS:
        t0, c0 = time.perf_counter(), time.process_time()
        memory_circuit(name)
        path = Path(compile_verilog(name, str(out / name)))
        dt = time.perf_counter() - t0
        emit("rtl_generation_time", round(dt, 3), "s", preset=name,
             cpu_seconds=round(time.process_time() - c0, 3))
        emit("verilog_size", path.stat().st_size, "bytes", preset=name)
        t0 = time.perf_counter()
        plain = Path(compile_verilog(name, str(out / f"{name}_yosys"),
                                     disallow_local_variables=True))
        cells = yosys_cells(plain, f"lake_{name}")
        if cells is not None:
            for k, v in cells.items():
                emit(f"yosys_{k}", v, "count", preset=name,
                     flow="proc;flatten;opt;memory -nomap;opt;techmap;opt",
                     yosys_seconds=round(time.perf_counter() - t0, 2))

    # PUB: all four ports at one word per cycle for `n` words each
    pre = "pub_512x64"
    n = 4 * 16384
    w0, r0 = delay_line(40, n, 1024, align=4)
    w1, r1 = delay_line(52, n, 1024, align=4)
    d1w, d1r = w1.to_dict(), r1.to_dict()
    d1w["address"]["offset"] += 1024
    d1r["address"]["offset"] += 1024
    progs = {"data_in_0": w0, "data_out_0": r0, "data_in_1": d1w, "data_out_1": d1r}
    cfg = configure(pre, progs)
    ins = {"data_in_0": [k % 65536 for k in range(n)],
           "data_in_1": [(3 * k) % 65536 for k in range(n)]}
    stim = make_stimulus(pre, progs, ins)
    cycles = len(stim.records)
    t0 = time.perf_counter()
    vm = VerilatorMemory(pre, out / "verilator_pub")
    emit("verilator_build_time", round(time.perf_counter() - t0, 2), "s", preset=pre)
    vm.run_records(cfg, stim.records[:100])
    t0 = time.perf_counter()
    rows = vm.run_records(cfg, stim.records)
    dt = time.perf_counter() - t0
    emit("verilator_cycles_per_second", round(cycles / vm.last_run_seconds), "cycles/s",
         preset=pre, cycles=cycles, harness="fault testbench executable reading a command "
         "file (one fscanf per input and one printf per cycle)")
    emit("verilator_cycles_per_second_with_python_io", round(cycles / dt), "cycles/s",
         preset=pre, cycles=cycles, harness="including Python stimulus encoding and parsing")
    valid = sum(r["valid_out_0"] + r["valid_out_1"] for r in rows)
    emit("pub_words_out", valid, "words", preset=pre, cycles=cycles)
    multiplier_form_check(out)
    model = make_model(pre)
    model.configure(cfg)
    sub = stim.records[:20000]
    t0 = time.perf_counter()
    for r in sub:
        model.step(r)
    dt = time.perf_counter() - t0
    emit("python_model_cycles_per_second", round(len(sub) / dt), "cycles/s", preset=pre,
         cycles=len(sub))


if __name__ == "__main__":
    main()
