"""Cold Verilator build of the stream harness (issue 41, item 8a) and reuse of a cached model
(item 1), per build variant (:class:`mapper.sim.verilator.SimParams`).

Every variant builds the design's model into an empty cache of its own (``--work``), so each
build is cold: verilation, the C++ compile and, unless the variant says ``warm_runtime``,
Verilator's run-time library and precompiled header too. Figures per variant:

* ``build_wall_s``: wall time of :func:`build_harness` (s);
* ``verilate_s``: wall time of the verilation (s; single-threaded);
* ``cxx_s``: wall time from the end of the verilation to the linked harness (s: the C++
  compile on ``SimParams.jobs`` cores, and the link);
* ``cxx_mb``: size of the C++ Verilator generated (MB, every ``.cpp`` of the build);
* ``build_cpu_s``: CPU time (user + system) of every process the build ran (s); on a loaded
  machine this, not the wall time, is what compares variants;
* ``cycles_per_s``: clock edges per second of the built harness replaying the run directory's
  ``sim.bs`` / ``sim.stim`` (``--run``, a `cgra run` of the same design), and whether its
  ``sim.out`` is byte-identical to the first variant's (``bit_identical``), and
  ``us_per_cycle``, its inverse (microseconds per clock edge).

Variants run interleaved (``--rounds``), and every row records the 1-minute load average
before and after the build. ``--reuse``: the time of a build that finds the model in the
cache (the third run of A -> B -> A).

Usage (about 0.5-1.5 min per 32x16 build on 2 cores; one at a time). With no option (as
``make bench`` runs it): the 32x16 default design, brought up to date, and a gaussian run on
it made in ``--work`` when ``--run`` is not given; variants ``flat`` and ``blocks``, then the
reuse of a cached model::

    .venv/bin/python bench/bench_verilator.py
    .venv/bin/python bench/bench_verilator.py --design build/small --run RUN --only default
    .venv/bin/python bench/bench_verilator.py --only all --rounds 2
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchlib import default_design, row, save_rows  # noqa: E402

from mapper.flow import run_app  # noqa: E402
from mapper.params import AppParams, RunParams  # noqa: E402

from mapper.sim.verilator import SimParams, build_harness  # noqa: E402

BASE_FLAGS = SimParams().extra_flags
#: the defaults before stop 50 (OPT_FAST=-O1, Verilator's own --output-split)
OLD_FLAGS = tuple(f for f in BASE_FLAGS if f not in ("--output-split", "60000"))

FLAT = {"hierarchy": "flat"}

#: variant name -> (SimParams fields, warm runtime?); the variants measured before the column
#: blocks (stop 52) build the flat top, as they did then
VARIANTS: dict[str, tuple[dict, bool]] = {
    "serial_runtime": ({**FLAT, "share_runtime": False}, False),  # the build before issue 41
    "default": ({}, False),
    "default_warm_runtime": ({}, True),
    "x_fast": ({**FLAT, "extra_flags": (*BASE_FLAGS, "--x-assign", "fast", "--x-initial",
                                        "fast")}, False),
    # issue 41 item 8 (2026-12-05): fewer, larger generated .cpp files (each pays the
    # precompiled header and the __Syms.h parse once) and OPT_FAST=-Og -- the default since
    # stop 50 -- against the earlier defaults and each change alone
    "old_default": ({**FLAT, "opt_fast": "-O1", "extra_flags": OLD_FLAGS}, False),
    "opt_fast_Og": ({**FLAT, "extra_flags": OLD_FLAGS}, False),
    "split_60k": ({**FLAT, "opt_fast": "-O1"}, False),
    # no optimisation of the model's hot code either: the C++ compile against -Og, and what
    # it costs in simulation speed
    "opt_fast_O0": ({**FLAT, "opt_fast": "-O0"}, False),
    # Verilator 5's data-flow-graph optimiser off (the verilation is the single-threaded part)
    "no_dfg": ({**FLAT, "extra_flags": (*BASE_FLAGS, "-fno-dfg")}, False),
    # the flat top against the top in column blocks (rtl/hier/, verilator --hierarchical:
    # each distinct block verilated and compiled once; "auto" picks it from 256 tiles)
    "flat": (FLAT, False),
    "blocks": ({"hierarchy": "blocks"}, False),
    # the blocks' C++ is a third of the flat model's: how much simulation speed does the
    # compiler's optimisation buy back, for how much build time ("blocks": -O1, the default)
    "blocks_Og": ({"hierarchy": "blocks", "opt_fast_blocks": "-Og"}, False),
    "blocks_O2": ({"hierarchy": "blocks", "opt_fast_blocks": "-O2"}, False),
}


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _replay(exe: Path, run: Path, out: Path) -> tuple[float, int]:
    """(seconds, clock edges) of the harness replaying ``run``'s bitstream and stimulus."""
    t = time.perf_counter()
    subprocess.run([str(exe), str(run / "sim.bs"), str(run / "sim.stim"), str(out)],
                   check=True, capture_output=True)
    secs = time.perf_counter() - t
    edges = next(int(ln.split()[1]) for ln in out.read_text().splitlines()
                 if ln.startswith("edges "))
    return secs, edges


def measure(name: str, design: Path, run: Path, work: Path, k: int) -> list[dict]:
    fields, warm = VARIANTS[name]
    cache = work / f"cache-{name}-{k}"
    shutil.rmtree(cache, ignore_errors=True)
    params = SimParams(cache_dir=str(cache), **fields)
    if warm:        # the run-time library in the cache: build a model of another design
        small = work / "warm_from"
        if not small.is_dir():
            raise SystemExit(f"--warm-from: give a small design to warm the runtime "
                             f"(missing {small})")
        build_harness(small, params)
    stamps: dict[str, float] = {}
    cxx_bytes: list[int] = []
    t0 = time.perf_counter()

    def progress(msg: str) -> None:
        stamps.setdefault(msg.split(" (")[0], time.perf_counter() - t0)
        if not cxx_bytes and msg != "verilating":     # verilated: the build's C++ is there
            cxx_bytes.append(sum(f.stat().st_size for f in
                                 cache.glob(f".*.tmp-{os.getpid()}/obj/**/*.cpp")))

    load0 = os.getloadavg()[0]
    c0 = _cpu()
    h = build_harness(design, params, progress=progress)
    cpu = _cpu() - c0
    wall = time.perf_counter() - t0
    load1 = os.getloadavg()[0]
    verilated = min(v for m, v in stamps.items() if m != "verilating")
    verilate = verilated - stamps["verilating"]
    secs, edges = _replay(h.exe, run, work / f"{name}-{k}.out")
    p = {"variant": name, "round": k, "design": design.name, "fields": {
        key: list(v) if isinstance(v, tuple) else v for key, v in fields.items()},
        "warm_runtime": warm, "load1_before": round(load0, 2), "load1_after": round(load1, 2),
        "verilator": "5.006", "jobs": params.jobs,
        "opt_fast": params.opt_fast_blocks if h.hier_columns else params.opt_fast,
        "opt_slow": params.opt_slow,
        "extra_flags": list(params.extra_flags), "hierarchy": params.hierarchy,
        "hier_columns": h.hier_columns}
    rows = [row("verilator", "build_wall_s", round(wall, 1), "s", p),
            row("verilator", "verilate_s", round(verilate, 1), "s", p),
            row("verilator", "cxx_s", round(wall - verilated, 1), "s", p),
            row("verilator", "cxx_mb", round(cxx_bytes[0] / 1e6, 1) if cxx_bytes else None,
                "MB", p),
            row("verilator", "build_cpu_s", round(cpu, 1), "s", p),
            row("verilator", "cycles_per_s", round(edges / secs), "cycles/s",
                {**p, "edges": edges}),
            row("verilator", "us_per_cycle", round(1e6 * secs / edges, 1), "us",
                {**p, "edges": edges})]
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--design", type=Path, default=None,
                    help="design directory (default: build/default, brought up to date)")
    ap.add_argument("--run", type=Path, default=None,
                    help="a `cgra run` directory of the design (sim.bs, sim.stim; default: "
                         "a 64x64 gaussian run made in --work)")
    ap.add_argument("--work", type=Path, default=Path("build/bench_verilator"),
                    help="scratch directory (caches, harness outputs)")
    ap.add_argument("--warm-from", type=Path, default=None,
                    help="a small design whose build warms the run-time library "
                         "(variant default_warm_runtime)")
    ap.add_argument("--only", default="flat,blocks",
                    help="variants, comma-separated, or 'all'")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--reuse", action=argparse.BooleanOptionalAction, default=True,
                    help="also time a build that finds the model in the cache")
    a = ap.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    if a.design is None:
        a.design = default_design("default")
    if a.run is None:
        a.run = a.work / f"run-gaussian-{a.design.name}"
        if not (a.run / "sim.stim").is_file():
            run_app(RunParams(AppParams("gaussian", 64, 64), a.design, a.run))
    if a.warm_from is not None:
        link = a.work / "warm_from"
        if not link.exists():
            shutil.copytree(a.warm_from, link, ignore=shutil.ignore_patterns("sim"))
    names = list(VARIANTS) if a.only == "all" else a.only.split(",")
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        raise SystemExit(f"--only: unknown variant(s) {unknown}; choose from {list(VARIANTS)}")
    rows: list[dict] = []
    for k in range(a.rounds):
        for name in names:
            rows += measure(name, a.design.resolve(), a.run.resolve(), a.work.resolve(), k)
    # this invocation's outputs only (the scratch directory keeps earlier runs' of other
    # designs)
    outs = [a.work / f"{name}-{k}.out" for k in range(a.rounds) for name in names]
    same = len({o.read_bytes() for o in outs}) == 1
    rows.append(row("verilator", "bit_identical", same, "bool",
                    {"variants": names, "rounds": a.rounds, "files": len(outs)}))
    if a.reuse:
        cache = a.work.resolve() / f"cache-{names[0]}-0"
        t = time.perf_counter()
        h = build_harness(a.design, SimParams(cache_dir=str(cache), **VARIANTS[names[0]][0]))
        rows.append(row("verilator", "reuse_wall_s", round(time.perf_counter() - t, 2), "s",
                        {"variant": names[0], "cached": h.cached,
                         "build_seconds": h.build_seconds, "design": a.design.name}))
    save_rows("verilator", rows)


if __name__ == "__main__":
    main()
