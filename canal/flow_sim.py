"""Stimulus, the Python run and the Verilator run of a ready-valid channel
(:func:`canal.flow_control.rv_channel`), so both can be compared cycle for cycle.

Testbench (the same in Python, :func:`simulate_model`, and in the generated C++ harness,
:func:`harness_source`). Per cycle ``t`` the stimulus row gives ``RESET``, ``clk_en``, ``go``
(the source may start a new word), ``ready_in0``, ``ready_in1`` (sink backpressure),
``alt_valid``, ``alt_I`` (the distractor on the unselected mux inputs). The source presents
``words[idx]`` with ``valid_in = 1`` from the first cycle where ``go = 1`` until the word is
transferred (``valid_in and ready_out``; it never withdraws a presented word), then
``idx += 1``; while it presents nothing ``valid_in = 0`` and ``I = 0``. Inputs are applied,
the design is evaluated, the outputs are sampled, then the rising edge.

Trace: one row per cycle, columns :data:`TRACE_COLUMNS` (driven inputs and sampled outputs;
``O1``, ``valid_out1`` are 0 without a fork).

Stimulus file (text, read by the harness)::

    config <sel> <fifo_en> <fifo_end> <fork_en>     ints (ChannelConfig port values)
    words <W>
    <W lines: one word (decimal)>
    cycles <T>
    <T lines: RESET clk_en go ready_in0 ready_in1 alt_valid alt_I>

Output file: ``T`` lines of the trace columns (decimal). Models are built by
:func:`build_harness` into ``cache_root/<key>/`` where ``key`` hashes the Verilog, the harness
source, the Verilator version, :data:`VERILATOR_FLAGS` and :data:`MAKE_VARS`; a finished build
is stamped ``ok`` and reused (concurrent builders serialise on ``cache_root/.<key>.lock``).
The Verilator runtime objects (:data:`RUNTIME_OBJECTS`) are compiled by the first build and
copied into later ones (``cache_root/runtime-<key>/``).
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from cgra.errors import SimulationError
from cgra.procs import pdeathsig_preexec

from canal.flow_control import ChannelConfig, ChannelParams, rv_channel
from canal.flow_model import ChannelModel

#: stimulus row columns
STIM_COLUMNS = ("RESET", "clk_en", "go", "ready_in0", "ready_in1", "alt_valid", "alt_I")
#: trace row columns
TRACE_COLUMNS = ("valid_in", "I", "ready_out", "alt_ready", "valid_out0", "O0", "ready_in0",
                 "valid_out1", "O1", "ready_in1")
#: Verilator options of every harness build (part of the cache key)
VERILATOR_FLAGS = ("--cc", "--exe")
#: make variables of the C++ build (part of the cache key): no optimisation, the build time
#: matters more than the simulation speed here (a 4-hop channel runs ~10^6 cycles/s anyway)
MAKE_VARS = ("OPT_FAST=-O0", "OPT_SLOW=-O0", "OPT_GLOBAL=-O0")
#: the Verilator runtime objects every model links; compiled once per cache root and
#: Verilator version (~11 s of a ~20 s build on this machine) and copied into later builds
RUNTIME_OBJECTS = ("verilated.o", "verilated_threads.o")
#: wall-clock limit of one build / one run (seconds)
BUILD_TIMEOUT_S = 300
RUN_TIMEOUT_S = 120


@dataclass(frozen=True)
class ChannelStimulus:
    """``config`` of the channel, the source's ``words`` (int64, ``W``) and ``rows`` (int64,
    ``T x 7``, :data:`STIM_COLUMNS`)."""

    config: ChannelConfig
    words: np.ndarray
    rows: np.ndarray

    @property
    def cycles(self) -> int:
        """Rows (cycles) of the run."""
        return int(self.rows.shape[0])


def random_stimulus(p: ChannelParams, n_words: int, seed: int, cycles: int,
                    p_src_stall: float = 0.0, p_sink_stall: tuple[float, float] = (0.0, 0.0),
                    p_clk_stall: float = 0.0, p_alt_valid: float = 0.5,
                    config: ChannelConfig | None = None, reset_cycles: int = 2
                    ) -> ChannelStimulus:
    """A random stimulus (numpy ``default_rng(seed)``): ``n_words`` uniform ``width``-bit
    words; ``reset_cycles`` rows of ``RESET = 1`` (with ``go = 0``), then ``cycles`` rows where
    the source stalls (``go = 0``) with probability ``p_src_stall``, sink ``k`` with
    ``p_sink_stall[k]``, ``clk_en = 0`` with ``p_clk_stall``, ``alt_valid = 1`` with
    ``p_alt_valid`` and random ``alt_I``. ``config`` defaults to
    :meth:`ChannelConfig.default`."""
    rng = np.random.default_rng(seed)
    cfg = config if config is not None else ChannelConfig.default(p)
    cfg.check(p)
    words = rng.integers(0, 1 << p.width, size=n_words, dtype=np.int64)
    n = reset_cycles + cycles
    rows = np.zeros((n, len(STIM_COLUMNS)), dtype=np.int64)
    rows[:reset_cycles, 0] = 1
    rows[:, 1] = 1
    body = slice(reset_cycles, n)
    rows[body, 1] = rng.random(cycles) >= p_clk_stall
    rows[body, 2] = rng.random(cycles) >= p_src_stall
    rows[body, 3] = rng.random(cycles) >= p_sink_stall[0]
    rows[body, 4] = rng.random(cycles) >= p_sink_stall[1]
    rows[body, 5] = rng.random(cycles) < p_alt_valid
    rows[body, 6] = rng.integers(0, 1 << p.width, size=cycles, dtype=np.int64)
    return ChannelStimulus(cfg, words, rows)


def simulate_model(p: ChannelParams, stim: ChannelStimulus) -> np.ndarray:
    """The trace (``T x 10`` int64, :data:`TRACE_COLUMNS`) of :class:`ChannelModel` under the
    testbench of the module docstring."""
    model = ChannelModel(p, stim.config)
    words = stim.words.tolist()
    n_words = len(words)
    out = np.zeros((stim.cycles, len(TRACE_COLUMNS)), dtype=np.int64)
    idx = 0
    presenting = 0
    fork = p.fork
    for t, (rst, ce, go, r0, r1, av, ai) in enumerate(stim.rows.tolist()):
        if not presenting and go and idx < n_words:
            presenting = 1
        data = words[idx] if presenting else 0
        r1 = r1 if fork else 0
        ready, alt_ready, v0, o0, v1, o1 = model.cycle(rst, ce, presenting, data, av, ai, r0, r1)
        out[t] = (presenting, data, ready, alt_ready, v0, o0, r0, v1, o1, r1)
        if presenting and ready:
            idx += 1
            presenting = 0
    return out


def received(trace: np.ndarray, sink: int) -> np.ndarray:
    """Words taken by sink ``sink`` (``valid_out<k> and ready_in<k>``), in order."""
    v, o, r = (TRACE_COLUMNS.index(f"{c}{sink}") for c in ("valid_out", "O", "ready_in"))
    return trace[(trace[:, v] == 1) & (trace[:, r] == 1), o]


def sent(trace: np.ndarray) -> np.ndarray:
    """Words the source transferred (``valid_in and ready_out``), in order."""
    return trace[(trace[:, 0] == 1) & (trace[:, 2] == 1), 1]


def write_stimulus(stim: ChannelStimulus, p: ChannelParams, path: Path) -> None:
    """Write ``stim`` in the stimulus file format of the module docstring."""
    c = stim.config
    lines = [f"config {c.sel_word(p)} {c.mask('fifo_en')} {c.mask('fifo_end')} "
             f"{c.mask('fork_en')}", f"words {len(stim.words)}"]
    lines += map(str, stim.words.tolist())
    lines.append(f"cycles {stim.cycles}")
    lines += (" ".join(map(str, r)) for r in stim.rows.tolist())
    path.write_text("\n".join(lines) + "\n")


def harness_source(p: ChannelParams) -> str:
    """The C++ testbench of :func:`canal.flow_control.rv_channel` ``p`` (module docstring)."""
    top = f"V{p.module_name}"
    cfg = []
    if p.mux_height > 1:
        cfg.append("top->sel = sel;")
    if p.fifo != "none":
        cfg.append("top->fifo_en = fifo_en;")
    if p.fifo == "split":
        cfg.append("top->fifo_end = fifo_end;")
    if p.fork:
        cfg.append("top->fork_en = fork_en;")
    drive1 = "top->ready_in1 = r1;" if p.fork else "r1 = 0;"
    sample1 = ("unsigned long long v1 = top->valid_out1, o1 = top->O1;" if p.fork
               else "unsigned long long v1 = 0, o1 = 0;")
    return f"""// generated by canal.flow_sim; do not edit
#include "{top}.h"
#include "verilated.h"
#include <cstdio>
#include <cstdlib>
#include <vector>

static void die(const char* m) {{ std::fprintf(stderr, "harness: %s\\n", m); std::exit(3); }}

int main(int argc, char** argv) {{
  if (argc != 3) die("usage: harness <stimulus> <trace>");
  FILE* f = std::fopen(argv[1], "r");
  if (!f) die("cannot open stimulus");
  unsigned long long sel, fifo_en, fifo_end, fork_en;
  long n_words, cycles;
  if (std::fscanf(f, "config %llu %llu %llu %llu words %ld", &sel, &fifo_en, &fifo_end,
                  &fork_en, &n_words) != 5) die("bad header");
  std::vector<unsigned long long> words(n_words);
  for (long i = 0; i < n_words; i++)
    if (std::fscanf(f, "%llu", &words[i]) != 1) die("bad word");
  if (std::fscanf(f, " cycles %ld", &cycles) != 1) die("bad cycles");
  (void)sel; (void)fifo_en; (void)fifo_end; (void)fork_en;
  FILE* o = std::fopen(argv[2], "w");
  if (!o) die("cannot open trace");
  static char buf[1 << 20];
  std::setvbuf(o, buf, _IOFBF, sizeof buf);
  VerilatedContext ctx;
  {top}* top = new {top}(&ctx);
  {" ".join(cfg)}
  top->CLK = 0;
  long idx = 0;
  int presenting = 0;
  for (long t = 0; t < cycles; t++) {{
    unsigned long long rst, ce, go, r0, r1, av, ai;
    if (std::fscanf(f, "%llu %llu %llu %llu %llu %llu %llu", &rst, &ce, &go, &r0, &r1, &av,
                    &ai) != 7) die("bad row");
    if (!presenting && go && idx < n_words) presenting = 1;
    unsigned long long data = presenting ? words[idx] : 0;
    top->RESET = rst; top->clk_en = ce; top->valid_in = presenting; top->I = data;
    top->alt_valid = av; top->alt_I = ai; top->ready_in0 = r0; {drive1}
    top->eval();
    unsigned long long ready = top->ready_out;
    {sample1}
    std::fprintf(o, "%d %llu %llu %u %u %llu %llu %llu %llu %llu\\n", presenting, data, ready,
                 (unsigned)top->alt_ready, (unsigned)top->valid_out0,
                 (unsigned long long)top->O0, r0, v1, o1, r1);
    if (presenting && ready) {{ idx++; presenting = 0; }}
    top->CLK = 1; top->eval(); top->CLK = 0;
  }}
  top->final();
  delete top;
  std::fclose(o);
  std::fclose(f);
  return 0;
}}
"""


@functools.lru_cache(maxsize=None)
def _verilator_version() -> str:
    try:
        return subprocess.run(["verilator", "--version"], capture_output=True, text=True,
                              check=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        raise SimulationError(f"verilator --version failed ({e}): install Verilator 5 and put "
                              "it on PATH") from e


def _runtime_key() -> str:
    return hashlib.sha256("\0".join((_verilator_version(), *VERILATOR_FLAGS, *MAKE_VARS))
                          .encode()).hexdigest()[:16]


def _run(cmd: list[str], cwd: Path, what: str) -> str:
    try:
        res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                             timeout=BUILD_TIMEOUT_S, preexec_fn=pdeathsig_preexec())
    except subprocess.TimeoutExpired as e:
        raise SimulationError(f"{what} exceeded {BUILD_TIMEOUT_S} s in {cwd}") from e
    if res.returncode != 0:
        raise SimulationError(f"{what} failed (exit {res.returncode}) in {cwd}:\n"
                              f"{(res.stdout + res.stderr)[-3000:]}")
    return res.stdout + res.stderr


def verilate_and_make(top: str, tmp: Path, runtime: Path,
                      flags: Sequence[str] = VERILATOR_FLAGS) -> str:
    """Verilate ``tmp/top.v`` + ``tmp/harness.cpp`` (top module ``top``, Verilator ``flags``)
    into ``tmp/obj``, reuse the runtime objects of ``runtime`` when present (else save them
    there after the build), make, move the binary to ``tmp/harness`` and remove ``tmp/obj``;
    the build log. Raises
    :class:`SimulationError` when Verilator or make fails."""
    log = _run(["verilator", *flags, "--top-module", top, "-Mdir", "obj",
                "-o", "harness", "top.v", "harness.cpp"], tmp, f"verilator of {top}")
    obj = tmp / "obj"
    have = all((runtime / o).exists() for o in RUNTIME_OBJECTS)
    if have:
        for o in RUNTIME_OBJECTS:
            shutil.copy2(runtime / o, obj / o)
            (obj / o).touch()
    log += _run(["make", "-j", "2", "-f", f"V{top}.mk", *MAKE_VARS, "harness"], obj,
                f"C++ build of {top}")
    if not have:
        part = runtime.with_name(f"{runtime.name}.part-{os.getpid()}")
        shutil.rmtree(part, ignore_errors=True)
        part.mkdir()
        for o in RUNTIME_OBJECTS:
            shutil.copy2(obj / o, part / o)
        try:
            part.rename(runtime)
        except OSError:  # another build saved them first: keep theirs
            shutil.rmtree(part, ignore_errors=True)
    shutil.move(str(obj / "harness"), str(tmp / "harness"))
    shutil.rmtree(obj, ignore_errors=True)
    return log


@dataclass(frozen=True)
class Harness:
    """A built channel model: ``binary``, ``params``, cache ``key``, ``cached`` (reused),
    ``build_seconds`` (0 when reused)."""

    binary: Path
    params: ChannelParams
    key: str
    cached: bool
    build_seconds: float


def build_harness(p: ChannelParams, cache_root: str | Path) -> Harness:
    """Build (or reuse) the Verilator model of ``rv_channel(p)`` with its C++ testbench under
    ``cache_root/<key>/``. Raises :class:`SimulationError` with the build log's tail when
    Verilator or the C++ compile fails."""
    root = Path(cache_root)
    root.mkdir(parents=True, exist_ok=True)
    verilog = rv_channel(p).source()
    harness = harness_source(p)
    key = hashlib.sha256("\0".join((verilog, harness, _runtime_key())).encode()
                         ).hexdigest()[:16]
    final = root / key
    binary = final / "harness"
    with open(root / f".{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (final / "ok").exists() and binary.exists():
            return Harness(binary, p, key, True, 0.0)
        tmp = root / f".{key}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        (tmp / "top.v").write_text(verilog)
        (tmp / "harness.cpp").write_text(harness)
        t0 = time.monotonic()
        log = verilate_and_make(p.module_name, tmp, root / f"runtime-{_runtime_key()}")
        seconds = time.monotonic() - t0
        (tmp / "build.log").write_text(log)
        (tmp / "ok").write_text(f"{seconds:.2f}\n")
        shutil.rmtree(final, ignore_errors=True)
        tmp.rename(final)
        return Harness(binary, p, key, False, seconds)


def run_harness(h: Harness, stim: ChannelStimulus, work_dir: str | Path) -> np.ndarray:
    """Run the built model on ``stim`` in ``work_dir`` (files ``stim.txt``, ``trace.txt``);
    the trace (``T x 10`` int64). Raises :class:`SimulationError` if the harness fails or the
    trace is short."""
    wd = Path(work_dir)
    wd.mkdir(parents=True, exist_ok=True)
    stim_path, trace_path = wd / "stim.txt", wd / "trace.txt"
    write_stimulus(stim, h.params, stim_path)
    try:
        res = subprocess.run([str(h.binary), str(stim_path), str(trace_path)],
                             capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                             preexec_fn=pdeathsig_preexec())
    except subprocess.TimeoutExpired as e:
        raise SimulationError(f"harness {h.binary} exceeded {RUN_TIMEOUT_S} s on {stim_path}"
                              ) from e
    if res.returncode != 0:
        raise SimulationError(f"harness {h.binary} exited {res.returncode} on {stim_path}: "
                              f"{res.stderr[-2000:]}")
    flat = np.array(trace_path.read_text().split(), dtype=np.int64)
    ncol = len(TRACE_COLUMNS)
    if flat.size != stim.cycles * ncol:
        raise SimulationError(f"harness {h.binary}: trace {trace_path} has {flat.size} values, "
                              f"expected {stim.cycles} x {ncol}")
    return flat.reshape(stim.cycles, ncol)
