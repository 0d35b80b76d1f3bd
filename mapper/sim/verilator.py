"""Simulation of a configured array in Verilator with a generated C++ stream harness.

The harness is generated from the collateral only (``design.json``: top module and top-level
ports; ``rtl/filelist.f``) and compiled once per *content*: the model cache
(:func:`model_cache_dir`: ``.sim-cache/`` beside the design directories, or
``SimParams.cache_dir``) holds ``<key>/`` where ``key`` (16 hex digits of a sha256) hashes the
RTL files (names and bytes), the harness source (top module and ports), the Verilator
version and the build flags (Verilator options, ``OPT_FAST``/``OPT_SLOW``, the
precompiled-header switch, :data:`BUILD_RECIPE`), and nothing else. So two design
directories with byte-identical RTL share one model, and regenerating a design (A -> B -> A,
e.g. ``build/small`` from another TOML and back) finds A's model again: the cache is outside
the design directories and a regeneration never touches it. Cache layout::

    .sim-cache/<key>/             a finished model: harness, harness.cpp, ports.json,
                                  build.cmd, build.log, ok (stamp: build seconds), used
    .sim-cache/.<key>.lock        exclusive while <key> is built or pruned; shared while
                                  run_harness starts the binary
    .sim-cache/.<key>.tmp-<pid>/  a build in progress (renamed to <key>/ when complete)
    .sim-cache/<key>.failed.log   the log of the last failed build of <key>

Concurrent builds of one model (pytest-xdist workers, two ``cgra run`` at once) are
serialised by its lock (different models build in parallel); a finished build is stamped
``ok`` and never rebuilt. An interrupted build removes its directory and kills its
Verilator/make/compiler process group, and a directory left by a killed process is removed by
the next build (:func:`remove_stale_builds`). Verilator, make and the simulation harness are
sent SIGKILL when the process that started them dies (``kill -9`` runs no cleanup:
:mod:`cgra.procs`). The cache is bounded: a build that adds a model removes the least
recently used models beyond ``SimParams.cache_models`` (default 16; an 8x8 model is ~0.8 MB,
a 32x16 one ~5 MB), never one being built or started (:func:`prune_models`). Whether a run
reused a model is in its report (``run_report.json`` ``verilator``: ``key``, ``cached``,
``build_seconds``, and the ``cgra run`` / ``cgra sim`` summary line).

Protocol driven by the harness (docs/garnet.md, "Driving the top module"), one line of
``sim.log`` per phase:

1. ``RESET = 1`` for 2 rising edges with ``clk_en = 0``, ``config_write = 0``; then 1 idle edge;
2. one config write per rising edge for every bitstream line ``AAAAAAAA DDDDDDDD``
   (``config_addr``, ``config_data``, ``config_write = 1``);
3. read-back: ``config_read = 1``, every written address is compared (combinational
   ``read_data``) with the last word written to it; mismatches are reported;
4. ``flush`` high for one rising edge with ``clk_en = 0``, then ``flush_wait`` edges with
   ``clk_en = 0`` so every row of the flush spine has restarted its MEM controllers (a row
   sees the flush ``y // flush_interval`` cycles late; spine registers are not stalled), so
   cycle 0 of every MEM schedule is the first cycle with ``clk_en = 1``;
5. ``clk_en = 1``; for each stream cycle ``c = 0 .. T-1``: drive the input ports with row ``c``
   of the stimulus, evaluate, sample the output ports (IO cores are combinational, so an
   output sampled in cycle ``c`` is the fabric's value during cycle ``c``), rising edge.

Stimulus file (text)::

    cycles <T>
    flush_wait <F>
    readback <0|1>
    in <k_1> <k_2> ...        indices into design ports (<key>/ports.json "inputs")
    out <j_1> <j_2> ...       indices into "outputs"
    data
    <v_1> <v_2> ...            T lines, one value (decimal) per input port

Output file: ``readback <n_mismatches>``, then one ``mismatch <addr> <expected> <got>`` line per
read-back mismatch (hex), then ``data``, then T lines of sampled output values (decimal), then
``edges <n>``, then ``toggles <P>`` and P lines ``<count> <mask>`` (decimal): per *probe* (every
wire of the top module that carries a tile's output, ``_Tile_X<xx>_Y<yy>_<port>``, read-only
public through a Verilator config file, :func:`tile_probes`) the bit toggles
``sum_t popcount(v[t] ^ v[t-1])`` over the stream cycles (``v[-1]`` = its value when the stream
starts) and the OR of those XORs (the bits that switched at least once): the per-tile
activity of the energy estimate (:mod:`mapper.sim.energy`).

Build time (Verilator 5.006, g++ 12.2, 2 cores shared with other jobs, load 1-2; wall seconds
of verilate + C++ compile, CPU seconds of the C++ compile; simulation speed of the built model
on the gaussian stimulus; every variant gave bit-identical outputs):

================================  ========  ================================  ==============
flags                             8x8 wall  32x16 wall (compile CPU)          32x16 cycles/s
================================  ========  ================================  ==============
old default (OPT_FAST=-O1)        15.2      91.0 (112)                        2607
--no-decoration + PCH (default)   12.4      80.3 (73)                         2662
the same with OPT_FAST=-Og        11.5      66.5 (56)                         2220
-fno-inline                       58.0      > 700, stopped at 26/176 objects  8x8: 0.34x
--hierarchical, tiles hier_block  31.7      241                               548
================================  ========  ================================  ==============

Verilation itself is ~35 s of the 32x16 build, single-threaded, and no ``-fno-<pass>`` makes it
faster. Verilator 5 schedules the whole design globally, so every tile *instance* gets its own
C++ functions (the tile id is constant-folded, neighbour signals are substituted): the model
grows with the tile count whatever the inlining (``-fno-inline`` only adds per-module classes
on top); hierarchical blocks add a DPI wrapper per instance. What does scale is the ~0.4 s
every generated .cpp file spends parsing ``verilated.h``: compiling it once
(``SimParams.precompiled_header``) cuts the C++ compile by a third.

Issue 41 (``bench/bench_verilator.py``, ``bench/results/verilator.csv``; 32x16
``configs/default.toml``, every variant a cold build into an empty cache, then the gaussian
run's bitstream and stimulus replayed; outputs bit-identical across all variants). The
machine was shared with ~5 other jobs (1-minute load 3-24 on 2 cores, changing during a
round), so wall seconds are inflated 2-8x and even ratios within a round are rough:

==============================================  =========  =========  =========  =========
variant: wall s (verilate s), cycles/s           round 1    round 2    round 3    round 4
==============================================  =========  =========  =========  =========
runtime compiled after the verilation (before)  680 (251)  347 (125)  156 (60)   162 (62)
                                                354        783        2346       2303
runtime beside the verilation (default)         563 (268)  129 (66)   213 (84)   163 (64)
                                                808        2082       1868       2003
runtime from the cache (any earlier model)      500 (210)  226 (79)   -          -
                                                344        1494
``--x-assign fast --x-initial fast``            375 (201)  149 (68)   -          -
                                                972        1649
``OPT_FAST=-Og``                                245 (127)  -          -          -
                                                1258
1-minute load during the round                  5-24       3-6        3-4        0.6-5.6
==============================================  =========  =========  =========  =========

The run-time library (``verilated.o``, ``verilated_threads.o``, at ``-Os``) and the two
precompiled ``verilated.h`` (one per optimisation level) do not depend on the design, yet make
compiled them only after the single-threaded verilation, while the second core idled through
its ~35-60 s. :class:`_Runtime` compiles them from a stand-in design *beside* the verilation
(or takes them from the cache) and copies them in when the compile flags match (the model is
the same). On idle cores that removes the run-time library's CPU (tens of seconds) from the
part after the verilation; on this machine the other jobs' load swamped it: rounds 1-2 show
the part after verilation 429 -> 295 s and 222 -> 63 s, rounds 3-4 (quieter) no gain. It is
kept as the default (``SimParams.share_runtime = False`` is the old build) because every later
build in the cache skips that compile outright. ``--x-assign fast --x-initial fast`` gave no
gain at equal load (more C++ CPU), and ``OPT_FAST=-Og`` costs 17% of the simulation speed
(first table), so the other defaults stay.

Stop 50 (one round each, idle machine, load 0.2-1.7; 32x16, gaussian replayed, outputs
bit-identical): the earlier defaults (``-O1``, Verilator's own file split) 99.7 s wall
(verilate 51.6 s, C++ 48.1 s, 39.2 MB of C++, 1748 cycles/s); ``--output-split 60000``
(fewer, larger .cpp files, each paying the header parse once) 92.7 s (C++ 42.0 s, 1992
cycles/s); with ``OPT_FAST=-Og`` too 85.7 s (C++ 30.4 s, 1686 cycles/s). The last is the
default since: -37% of the C++ compile for -4% of simulation speed in this round (the
17% of the first table was at -O1 without the split, on a loaded machine). The target of
<= 60 s for the cold 32x16 build is still not met: the single-threaded verilation alone is
50-55 s. Earlier: at load 0.6-5.6 it took ~160 s (the single-threaded verilation ~60 s of it; no
variant above shortened that). Reusing a cached model instead takes
0.08 s of :func:`build_harness` at 32x16 (``bench_verilator.py --reuse``); the third run of
A -> B -> A on 8x8 is a 17.6 s ``cgra run`` against 110.9 s with a cold build (load 18). ccache
(not installed here) would only help the run-time library, which the
cache already shares, since each design's verilated C++ is new. ``OPT_FAST=-O0`` (stop 51,
8x8, variant ``opt_fast_O0``, outputs identical): 20.9 CPU s against 22.3 at ``-Og`` (C++ 8.8
against 10.2 s wall) for 13 286 against 31 840 cycles/s, so ``-Og`` stays. ``-fno-dfg``
(Verilator 5's data-flow-graph optimiser off; 32x16, idle machine): 81.8 s (verilate 50.0 s)
against 74.9 s (45.8 s) for the default, so it stays on. Verilator's ``--stats`` of the 32x16
verilation (42.8 s) shows no stage above 5.1 s (``gate``; then scheduling 3.9 + 2.9 + 2.5 s,
``scope`` 2.1 s): the time is spread over the flattened 512 tiles, not one pass to turn off.

**Column blocks** (stop 52; ``SimParams.hierarchy``, ``cgra run --model-hierarchy``). What
does cut it is verilating fewer tiles: ``cgra rtl`` also writes the top in blocks of 4
columns (``rtl/hier/``, :func:`canal.rtl.column_verilog`; the same netlist, one level deeper,
and on the default layout every block is the same module), marked ``hier_block``, and
``verilator --hierarchical`` verilates and compiles one block and a top of 8 instances.
Cold builds, ``bench_verilator.py --only flat,blocks`` (idle machine, load 1-1.8; gaussian
replayed, outputs bit-identical to the flat model's in every round; wall s (verilate s),
cycles/s; both at ``OPT_FAST=-Og`` here, see below for -O1; 16x8 and 32x8 are
``configs/default.toml`` with ``width`` / ``height`` changed):

======================  ===================  ===================  =========================
design (tiles)          flat                 blocks of 4 columns  blocks / flat
======================  ===================  ===================  =========================
8x8 (64)                13.5 (8.0), 33 202   21.5 (7.7), 10 190   1.6x build, 0.31x speed
16x8 (128)              19.4 (10.3), 14 103  21.9 (7.5), 5 264    1.1x build, 0.37x speed
32x8 (256)              34.9 (19.8), 4 434   23.3 (7.8), 2 675    0.67x build, 0.60x speed
32x16 (512), round 1    76.5 (46.8), 1 699   34.2 (8.5), 1 266    0.45x build, 0.75x speed
32x16 (512), round 2    77.6 (46.6), 1 698   32.4 (8.3), 1 219    0.42x build, 0.72x speed
======================  ===================  ===================  =========================

Each block is a separate model behind a DPI wrapper, so the top evaluates the blocks one
after the other and a combinational route across blocks settles over several passes:
the simulation is slower, by less as the array grows (the flat model's speed falls faster
than linearly with the tile count). From 256 tiles (:data:`HIER_MIN_TILES`) the cold build
saves more than a run of a few thousand cycles loses, so "auto" takes the blocks there;
below, the flat top. Toggle counts (``--energy``) read wires of the flat top and always use
it. Blocks of 1, 2, 8 and 16 columns on the 32x16 (one round, same machine): 58.3, 46.5,
37.6 and 59.6 s, 842, 1133, 1164 and 856 cycles/s (:data:`garnet.collateral.MIN_BLOCK_COLUMNS`).
The blocks' C++ is a third of the flat model's (12.5 against 39.1 MB), so a higher
``OPT_FAST`` costs little there (``SimParams.opt_fast_blocks``; 32x16, variants
``blocks_Og`` / ``blocks`` / ``blocks_O2``, load 0.6-1.8): -Og 31.7-33.0 s, 1243-1292
cycles/s; -O1 33.4-35.4 s, 1490-1533 cycles/s; -O2 43.2 s, 1541 cycles/s. -O1 is the default:
in the run of ``bench_verilator.py`` with its defaults, flat 76.7 s (verilate 47.9 s) and
1688 cycles/s against blocks 34.4 s (verilate 8.5 s) and 1533 cycles/s (0.45x the build,
0.91x the speed), outputs bit-identical.

**Tile blocks** (``SimParams.hierarchy = "tiles"``, ``cgra run --model-hierarchy tiles``).
The per-instance code is what makes ready-valid arrays slow to build: their tiles carry
valid and ready beside every track and a skid FIFO at each register site, and a PE tile of
configs/small_df.toml also holds a 128-word scratchpad and a divider. The flat model of that
8x8 is 45 MB of C++ (a 195 kB tile module, 56 instances), 122 s cold (verilate 40 s; idle
machine). Marking each distinct tile module ``hier_block`` (a Verilator config file beside
the build; no RTL change) verilates and compiles it once: 13 s of verilation. Side by side
(one script, kmeans_step and gemm_tile at par 2 under stalls, seed 1): the tile-block model
built in 58.1 s against 129.8 s flat, same cycles, byte-identical ``sim.out``; it simulates
at about 0.27x the speed (kmeans_step's 411 cycles in 1.85-1.98 s against 0.50 s), a few
seconds on a dataflow run, so the cold build wins. The blocks do not help static arrays at
this size (configs/small.toml's 8x8: 21 s flat against 30 s in tile blocks; the 32x16: 241
s, first table), nor the 4x3 tiny_rv (10.5 against 18.4 s), and help tiny_hybrid a little
(22.8 against 17.7 s); so "auto" takes them for ready-valid and hybrid arrays whose tile
instances hold at least :data:`TILE_BLOCK_MIN_BYTES` of Verilog (:func:`tile_modules`:
small_df 17.5 MB, tiny_hybrid 2.1 MB, tiny_rv 1.2 MB). A combinational route across tiles
settles over several passes of the blocks' wrappers, as with column blocks; runs are
byte-identical to the flat model's (tests/e2e/test_ready_valid.py replays a stalled run in
tile blocks). Arrays of :data:`HIER_MIN_TILES` tiles or more stay flat under "auto": the
32x16 of dataflow PEs (configs/default_df.toml, 512 block wrappers in its top) verilated in
6 min and was still compiling after 13 min (two g++ processes at 7 GB each) when stopped,
against 1562 s flat (stop 68), so tile blocks there are not shown to pay.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import selectors
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import psutil

from cgra.errors import CollateralError, ConfigError, SimulationError
from cgra.procs import pdeathsig_preexec
from garnet import collateral as gc
from garnet.collateral import MIN_BLOCK_COLUMNS, DesignInfo, TopPort
from garnet.sta.verilog import closure, instances, modules
from mapper.sim.rv_harness import (HARNESS_HELPERS, PORT_LINES, config_phases, harness_opening,
                                   is_handshake_design, rv_harness_source)

HARNESS_VERSION = "cgra.stream_harness/2"
#: control ports of the top module the harness drives itself (docs/garnet.md)
CONTROL_PORTS = ("CLK", "RESET", "clk_en", "flush", "config_addr", "config_data",
                 "config_write", "config_read")


#: the fewest tiles for which SimParams.hierarchy "auto" builds the model from the column
#: blocks (module docstring, "Build time": measured on 8x8, 16x8, 32x8 and 32x16)
HIER_MIN_TILES = 256
#: the least Verilog (bytes, summed over the top's tile instances with their submodules) for
#: which SimParams.hierarchy "auto" builds a ready-valid or hybrid design's model from tile
#: blocks (module docstring, "Tile blocks"): small_df 17.5 MB, tiny_hybrid 2.1 MB take them,
#: tiny_rv 1.2 MB stays flat; arrays of HIER_MIN_TILES tiles or more stay flat (not measured)
TILE_BLOCK_MIN_BYTES = 2_000_000


@dataclass
class SimParams:
    """Verilator build and run options.

    ``jobs``: parallel C++ compile jobs; ``opt_fast``/``opt_slow``: compiler optimisation of the
    model's hot / cold code (Verilator's ``OPT_FAST`` / ``OPT_SLOW``; ``opt_fast_blocks``:
    ``OPT_FAST`` of a model built from column blocks, whose C++ is a third of the flat
    model's, so -O1 costs 2-4 s there for +18-20% simulation speed); ``precompiled_header``:
    compile ``verilated.h`` once per optimisation level instead of in every generated file
    (-38% C++ compile time at 32x16, same model); ``flush_wait``: idle
    cycles after the flush pulse (``None`` = ``height // flush_interval + 1`` from
    design.json); ``readback``: compare every written config register;
    ``build_timeout_s`` / ``run_timeout_s``: wall-clock limits (seconds); ``extra_flags``:
    Verilator options (``--no-decoration``: C++ without comments, 2.6x smaller);
    ``cache_dir``: the model cache shared by designs (``None``: ``.sim-cache`` beside the
    design directory, :func:`model_cache_dir`; a relative path is taken from the working
    directory); ``cache_models``: models the cache keeps (the most recently used; a build
    that adds one removes the least recently used beyond it, :func:`prune_models`);
    ``share_runtime``: take Verilator's run-time library and the precompiled header from the
    cache, compiling them beside the verilation when it has none (:class:`_Runtime`; the
    model is the same either way); ``toggles``: count the bit toggles of every tile-output wire
    (:func:`tile_probes`, the per-tile activity of ``cgra run --energy``). Off by default: the
    probe wires must be public, which keeps Verilator from folding them into the tiles' own
    code: at 32x16 the generated C++ grows from 30 MB to 53 MB (the verilation time is the
    same, 49 s CPU either way, 2026-12-05), and the C++ compile with it. A model with
    probes is a different cache entry.

    Build-time measurements of these choices: module docstring, "Build time"."""

    verilator: str = "verilator"
    jobs: int = 2
    opt_fast: str = "-Og"
    opt_fast_blocks: str = "-O1"
    opt_slow: str = "-O0"
    precompiled_header: bool = True
    flush_wait: int | None = None
    readback: bool = True
    build_timeout_s: float = 1800.0
    run_timeout_s: float = 1800.0
    extra_flags: tuple[str, ...] = ("-Wno-fatal", "-Wno-lint", "-Wno-style", "-Wno-UNOPTFLAT",
                                    "--no-decoration", "--output-split", "60000")
    cache_dir: str | None = None
    cache_models: int = 16
    share_runtime: bool = True
    toggles: bool = False
    #: ready-valid designs (:mod:`mapper.sim.rv_harness`): probability per cycle that an
    #: input socket stalls (presents no token) and that an output socket's ready is 0, and
    #: the seed of their draws
    stall_in: float = 0.3
    stall_out: float = 0.3
    stall_seed: int = 1
    #: "auto": the top in column blocks (``rtl/hier/``, ``verilator --hierarchical``: each
    #: distinct block verilated and compiled once) for static arrays of at least
    #: :data:`HIER_MIN_TILES` tiles whose design has blocks, the tile blocks for ready-valid
    #: and hybrid arrays of fewer tiles with at least :data:`TILE_BLOCK_MIN_BYTES` of tile
    #: Verilog, unless toggles are counted; "flat": the flat top; "blocks": the column blocks or a
    #: ConfigError; "tiles": every distinct tile module of the flat top a block of its own
    #: (``hier_block`` in a Verilator config file)
    hierarchy: str = "auto"
    #: build the design's system top (the array and its GLB in RTL, ``design.json``
    #: ``system``; a design with a ``[glb]`` table) instead of the array top
    system: bool = False


@dataclass
class Harness:
    """A compiled harness: ``exe`` (binary), ``inputs`` / ``outputs``: data port names of the top
    module in the harness's index order, ``widths``: port -> bits, ``key``: cache key
    (content hash, module docstring), ``cached``: True when an earlier build was reused (by
    this or another design directory), ``build_seconds``: wall time of the build (0 when
    cached), ``flush_wait``: idle cycles after the flush pulse; ``lock``: the model's lock
    file in the cache (:func:`run_harness` holds it shared while it starts the binary, so
    :func:`prune_models` cannot remove it underneath; ``None``: a harness outside the cache);
    ``probes``: the tile-output wires whose toggles the harness counts (:func:`tile_probes`,
    in the order of its ``toggles`` lines)."""

    design_dir: Path
    top: str
    exe: Path
    inputs: list[str]
    outputs: list[str]
    widths: dict[str, int]
    key: str
    cached: bool
    build_seconds: float
    flush_wait: int
    lock: Path | None = None
    probes: list[str] = field(default_factory=list)
    #: a ready-valid design's harness (:mod:`mapper.sim.rv_harness`: tokens, stalls)
    handshake: bool = False
    #: columns per block of a model built from ``rtl/hier/`` (0: the flat top)
    hier_columns: int = 0
    #: the tile modules verilated as blocks of their own (SimParams.hierarchy "tiles"; empty
    #: otherwise)
    hier_tiles: tuple[str, ...] = ()


@dataclass
class SimRun:
    """One harness run: ``outputs``: port -> int64 array ``[T]`` of sampled values,
    ``readback_mismatches``: [(addr, expected, got)], ``seconds``: wall time,
    ``cycles``: stream cycles ``T``, ``total_cycles``: every clock edge of the run,
    ``toggles``: probe wire (:func:`tile_probes`) -> (bit toggles over the stream cycles,
    mask of the bits that switched), empty for a harness without probes."""

    outputs: dict[str, np.ndarray]
    readback_mismatches: list[tuple[int, int, int]]
    seconds: float
    cycles: int
    total_cycles: int
    files: dict[str, Path] = field(default_factory=dict)
    toggles: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: a ready-valid run (:mod:`mapper.sim.rv_harness`): ``cycles`` (stream phase),
    #: ``input_stall_cycles``, ``output_backpressure_cycles``, ``input_tokens``, ``seed``,
    #: ``p_in``, ``p_out``; empty for a static run
    handshake: dict[str, float] = field(default_factory=dict)


def load_design_doc(design_dir: str | Path) -> DesignInfo:
    """``design.json`` of a design directory (:func:`garnet.collateral.read_design_info`,
    the format's owner) with its RTL files verified against the manifest. Raises
    :class:`CollateralError` when it is missing, stale or lacks the top module / port list."""

    design = gc.read_design_info(design_dir)
    design.verify_files([f for f in design.files if f.startswith("rtl/")])
    for k in ("top", "ports"):
        if not getattr(design, k):
            raise CollateralError(f"{Path(design_dir) / 'design.json'}: missing key '{k}'; "
                                  f"{design.hint}")
    return design


def tile_modules(rtl_dir: str | Path, top: str) -> tuple[list[str], int]:
    """The distinct modules the top ``top`` of ``rtl_dir`` instantiates (the tiles, sorted),
    and the Verilog bytes of its instances: each instance's module with its submodules
    (:func:`garnet.sta.verilog.closure`), once per instance (what a flat Verilator model
    schedules per instance). Raises :class:`CollateralError` when ``rtl_dir`` has no
    module ``top``."""
    mods = modules(Path(rtl_dir))
    if top not in mods:
        raise CollateralError(f"{rtl_dir}: no Verilog module {top}; regenerate the design "
                              f"with `cgra rtl`")
    insts = [n for n in instances(mods[top], mods) if n != top]
    sizes = {n: sum(len(mods[m].encode()) for m in closure(n, mods)) for n in set(insts)}
    return sorted(sizes), sum(sizes[n] for n in insts)


def _hierarchy(p: SimParams, doc: DesignInfo, handshake: bool) -> tuple[str, list[str]]:
    """How the model is built (:attr:`SimParams.hierarchy`): ``"columns"`` from the column
    blocks of ``rtl/hier/``, ``"tiles"`` from the flat top with each tile module a block,
    ``"flat"``; with the tile modules of ``"tiles"`` (:func:`tile_modules`, else ``[]``).
    Raises :class:`ConfigError` for an unknown value, for ``"blocks"`` on a
    design without blocks, and for ``"blocks"`` or ``"tiles"`` with toggle probes (they are
    wires of the flat top)."""
    mode = p.hierarchy
    if mode not in ("auto", "flat", "blocks", "tiles"):
        raise ConfigError(f"SimParams.hierarchy = {mode!r}; use 'auto', 'flat', 'blocks' or "
                          f"'tiles'")
    usable = bool(doc.hier_columns and doc.hier_filelist) and not handshake
    if mode in ("blocks", "tiles") and p.toggles:
        raise ConfigError(f"hierarchy '{mode}' cannot count toggles (the probes are wires "
                          f"of the flat top); use hierarchy 'auto' or 'flat' with toggles")
    if mode == "blocks":
        if not usable:
            raise ConfigError(f"{doc.root}: the design has no column blocks (rtl/hier/, "
                              f"written by `cgra rtl` for static arrays of two blocks of "
                              f">= {MIN_BLOCK_COLUMNS} columns); use hierarchy 'flat' or "
                              f"'auto' (or 'tiles'), or regenerate a design made before the "
                              f"blocks")
        return "columns", []
    if mode == "tiles":
        return mode, tile_modules(doc.root / "rtl", doc.top)[0]
    if mode == "flat" or p.toggles:
        return "flat", []
    if usable and doc.columns * doc.rows >= HIER_MIN_TILES:
        return "columns", []
    if handshake and doc.columns * doc.rows < HIER_MIN_TILES:
        names, size = tile_modules(doc.root / "rtl", doc.top)
        if size >= TILE_BLOCK_MIN_BYTES:
            return "tiles", names
    return "flat", []


def check_hierarchy(design_dir: str | Path, params: SimParams) -> str:
    """How :func:`build_harness` would build the model of ``design_dir`` under ``params``
    (``"flat"``, ``"columns"`` or ``"tiles"``; checked before a run maps anything). Raises
    :class:`ConfigError` as the build would (:attr:`SimParams.hierarchy`) and
    :class:`CollateralError` for a missing or malformed design.json."""
    doc = gc.read_design_info(design_dir)
    return _hierarchy(params, doc, is_handshake_design(doc.ports))[0]


def _rtl_files(design_dir: Path, filelist: str = "rtl/filelist.f") -> list[Path]:
    fl = design_dir / filelist
    if not fl.is_file():
        raise CollateralError(f"{fl}: missing; regenerate the design with `cgra rtl`")
    files = [design_dir / "rtl" / f for f in fl.read_text().split()]
    for f in files:
        if not f.is_file():
            raise CollateralError(f"{fl}: lists {f.name}, which does not exist; regenerate the "
                                  f"design")
    return files


def _check_port_width(width: int) -> None:
    if width > 64:
        raise CollateralError(f"top port of {width} bits: the stream harness handles ports of "
                              f"at most 64 bits")


#: a wire of the top module carrying a tile's output (canal.rtl.array_verilog's naming):
#: ``wire [w-1:0] _Tile_X<xx>_Y<yy>_<port>;`` (group 1: msb, 2: name, 3/4: x/y in hex)
_PROBE_WIRE = re.compile(
    r"^\s*wire\s+(?:\[(\d+):0\]\s+)?(_Tile_X([0-9A-F]{2})_Y([0-9A-F]{2})_\w+)\s*;", re.M)


def tile_probes(verilog: str, top: str) -> list[tuple[str, int]]:
    """``[(wire, bits)]`` of every wire of module ``top`` in ``verilog`` that carries a tile's
    data output (``_Tile_X<xx>_Y<yy>_<port>``, :data:`_PROBE_WIRE`; the config read-back
    ``read_data`` wires excluded, and wires over 64 bits), in file order: what the harness
    counts toggles of. Empty when ``top`` is not in ``verilog``."""
    m = re.search(rf"^module\s+{re.escape(top)}\b(.*?)^endmodule", verilog, re.S | re.M)
    if m is None:
        return []
    out = []
    for w in _PROBE_WIRE.finditer(m[1]):
        bits = int(w[1]) + 1 if w[1] is not None else 1
        if not w[2].endswith("_read_data") and bits <= 64:
            out.append((w[2], bits))
    return out


def probe_tile(wire: str) -> tuple[int, int]:
    """(x, y) of the tile whose output a probe wire (:func:`tile_probes`) carries."""
    return int(wire[7:9], 16), int(wire[11:13], 16)


def harness_source(top: str, ports: Sequence[TopPort], probes: Sequence[tuple[str, int]] = (),
                   scope: str = "") -> tuple[str, list[str], list[str]]:
    """C++ source of the stream harness for top module ``top`` with ``ports``
    (:class:`garnet.collateral.TopPort`: name, direction, width from design.json) and the
    toggle ``probes`` (:func:`tile_probes`; none: no ``toggles`` counted, and the model needs
    no public signal; ``scope``: the Verilator path prefix of the probes' module instance,
    ``"array__DOT__"`` in a system top). Returns ``(source, data inputs, outputs)``; the data inputs are every
    input except :data:`CONTROL_PORTS`."""
    names = {p.name for p in ports}
    for c in CONTROL_PORTS:
        if c not in names:
            raise CollateralError(f"design.json: top module {top} has no port '{c}' (the harness "
                                  f"drives {', '.join(CONTROL_PORTS)}); regenerate the design")
    ins = [p.name for p in ports if p.direction.startswith("in") and p.name not in CONTROL_PORTS]
    outs = [p.name for p in ports if p.direction.startswith("out")]
    for p in ports:
        _check_port_width(p.width)
    set_cases = "\n".join(f"    case {k}: t->{n} = v; break;" for k, n in enumerate(ins))
    get_cases = "\n".join(f"    case {k}: return (uint64_t)t->{n};" for k, n in enumerate(outs))
    zero = "\n".join(f"  t->{n} = 0;" for n in ins)
    cls = f"V{top}"
    root_h = f'#include "{cls}___024root.h"\n' if probes else ""
    npr = len(probes)
    probe_reads = "\n".join(f"  pv[{k}] = (uint64_t)t->rootp->{top}__DOT__{scope}{w};"
                             for k, (w, _b) in enumerate(probes))
    phases, opening = config_phases(zero), harness_opening(cls)
    helpers, port_lines = HARNESS_HELPERS, PORT_LINES
    src = f"""// generated by mapper.sim.verilator ({HARNESS_VERSION}); do not edit
#include "{cls}.h"
{root_h}#include "verilated.h"
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

static {cls}* t;
static uint64_t edges = 0;
// toggle probes: the value of each tile-output wire, its toggles and switched bits
static const int NPROBE = {npr};
static uint64_t pv[NPROBE + 1], pprev[NPROBE + 1], ptog[NPROBE + 1], pmask[NPROBE + 1];
static void read_probes() {{
{probe_reads}
}}
static void count_probes() {{
  read_probes();
  for (int k = 0; k < NPROBE; k++) {{
    uint64_t x = pv[k] ^ pprev[k];
    ptog[k] += (uint64_t)__builtin_popcountll(x);
    pmask[k] |= x;
    pprev[k] = pv[k];
  }}
}}

{helpers}static void set_in(int k, uint64_t v) {{
  switch (k) {{
{set_cases}
    default: die("bad input index", "");
  }}
}}
static uint64_t get_out(int k) {{
  switch (k) {{
{get_cases}
    default: die("bad output index", "");
  }}
  return 0;
}}

{opening}{port_lines}  FILE* fo = fopen(argv[3], "w");
  if (!fo) die("cannot open output", argv[3]);

{phases}  // 5. stream
  t->clk_en = 1;
  read_probes();
  for (int k = 0; k < NPROBE; k++) pprev[k] = pv[k];
  fprintf(fo, "data\\n");
  std::vector<unsigned long long> row(in_idx.size());
  for (long c = 0; c < cycles; c++) {{
    for (size_t i = 0; i < in_idx.size(); i++) {{
      if (fscanf(fs, "%llu", &row[i]) != 1) die("stimulus: short data", argv[2]);
      set_in(in_idx[i], row[i]);
    }}
    t->eval();
    for (size_t j = 0; j < out_idx.size(); j++)
      fprintf(fo, j ? " %llu" : "%llu", (unsigned long long)get_out(out_idx[j]));
    fprintf(fo, "\\n");
    tick();
    count_probes();
  }}
  fprintf(fo, "edges %llu\\n", (unsigned long long)edges);
  fprintf(fo, "toggles %d\\n", NPROBE);
  for (int k = 0; k < NPROBE; k++)
    fprintf(fo, "%llu %llu\\n", (unsigned long long)ptog[k], (unsigned long long)pmask[k]);
  fclose(fo);
  fclose(fs);
  t->final();
  delete t;
  return 0;
}}
"""
    return src, ins, outs


def _verilator_version(verilator: str) -> str:
    try:
        r = subprocess.run([verilator, "--version"], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise SimulationError(f"Verilator executable '{verilator}' not found; install Verilator "
                              f"(apt-get install verilator) or set SimParams.verilator") from None
    return r.stdout.strip()


def flush_wait_of(design: DesignInfo, params: SimParams) -> int:
    """Cycles the harness waits after the flush for the flush spine to reach every row
    (``params.flush_wait`` when set, else ``rows // flush_interval + 1``; 1 without a
    spine)."""
    if params.flush_wait is not None:
        return int(params.flush_wait)
    interval = design.flush_interval
    return (design.rows // interval + 1) if interval else 1


# -- build directories and child processes -------------------------------------------------

#: the model cache's directory name beside the design directories (:func:`model_cache_dir`)
CACHE_DIR_NAME = ".sim-cache"
#: the ready-valid harness's deadlock line (exit status 4, :mod:`mapper.sim.rv_harness`)
_DEADLOCK_RE = re.compile(r"deadlock: output (\d+) has (\d+) of (\d+) tokens after (\d+) cycles")
_KEY_RE = re.compile(r"^(?:rt-)?[0-9a-f]{16}$")
_TMP_RE = re.compile(r"^\.(?P<key>(?:rt-)?[0-9a-f]+)\.(?:tmp|evict)-(?P<pid>\d+)$")


def model_cache_dir(design_dir: str | Path, params: SimParams | None = None) -> Path:
    """The Verilator model cache ``design_dir`` uses (absolute): ``SimParams.cache_dir`` when
    set (relative to the working directory), else ``<design_dir>/../.sim-cache``
    (:data:`CACHE_DIR_NAME`), shared by every design directory beside it and by every
    regeneration of them (models are keyed by content, module docstring)."""
    p = params or SimParams()
    if p.cache_dir is not None:
        return Path(p.cache_dir).resolve()
    return Path(design_dir).resolve().parent / CACHE_DIR_NAME


def remove_stale_builds(sim_root: str | Path) -> list[Path]:
    """Remove the ``.<key>.tmp-<pid>`` build directories (and ``.<key>.evict-<pid>``
    directories of a :func:`prune_models`) in the model cache ``sim_root`` left by a process
    ``pid`` that no longer exists (killed with SIGKILL, machine reset); a directory whose
    process is alive is never touched. Returns the removed paths."""
    root = Path(sim_root)
    removed = []
    if not root.is_dir():
        return removed
    for d in root.iterdir():
        m = _TMP_RE.match(d.name)
        if m is None or not d.is_dir():
            continue
        pid = int(m.group("pid"))
        if pid != os.getpid() and psutil.pid_exists(pid):
            continue
        shutil.rmtree(d, ignore_errors=True)
        removed.append(d)
    return removed


def _last_use(model: Path) -> float:
    """mtime (s) of the model's ``used`` stamp (of ``ok`` for a model never reused)."""
    for stamp in ("used", "ok"):
        try:
            return (model / stamp).stat().st_mtime
        except FileNotFoundError:
            continue
    return 0.0


def prune_models(cache_root: str | Path, keep: int, protect: Sequence[str] = ()) -> list[Path]:
    """Bound the model cache ``cache_root`` to the ``keep`` most recently used finished
    models (``<key>/ok``; last use = the mtime of the ``used`` stamp :func:`build_harness`
    touches whenever it returns the model): the others are removed, except a key in
    ``protect`` and a model whose lock (``.<key>.lock``) another process holds (a build of
    it, or :func:`run_harness` starting it). A model is renamed to ``.<key>.evict-<pid>``
    before it is deleted, so no ``<key>/`` is ever half removed (a crash leaves a directory
    :func:`remove_stale_builds` removes). Returns the removed model directories."""
    root = Path(cache_root)
    if not root.is_dir():
        return []
    models = sorted(((_last_use(d), d.name, d) for d in root.iterdir()
                     if _KEY_RE.match(d.name) and (d / "ok").is_file()), reverse=True)
    removed = []
    for _t, key, d in models[max(0, keep):]:
        if key in protect:
            continue
        with open(root / f".{key}.lock", "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue                # being built or started: keep it this time
            try:
                if not (d / "ok").is_file():
                    continue
                gone = root / f".{key}.evict-{os.getpid()}"
                d.rename(gone)
                shutil.rmtree(gone, ignore_errors=True)
                removed.append(d)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
    return removed


@contextlib.contextmanager
def _flock(path: Path | None, mode: int):
    """Hold ``flock(mode)`` on the file ``path`` (created if missing) for the ``with`` body;
    no lock when ``path`` is None or its directory is gone (nothing left to protect)."""
    if path is None or not path.parent.is_dir():
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, mode)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def group_members(pgid: int) -> list[int]:
    """Pids of the live (not zombie) processes of process group ``pgid`` (through psutil)."""
    pids = []
    for p in psutil.process_iter(["status"]):
        try:
            if os.getpgid(p.pid) == pgid and p.info["status"] != psutil.STATUS_ZOMBIE:
                pids.append(p.pid)
        except (ProcessLookupError, PermissionError):
            continue
    return pids


def _kill_group(proc: subprocess.Popen, grace_s: float = 3.0) -> None:
    """Terminate the process group led by ``proc`` (started with ``start_new_session``):
    SIGTERM to the group, SIGKILL to whatever is still alive after ``grace_s`` seconds; waits
    until no process of the group is left (at most a few seconds more)."""
    pgid = proc.pid
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + wait_s
        while True:
            if proc.poll() is None:
                try:
                    proc.wait(timeout=0.05)
                except subprocess.TimeoutExpired:
                    pass
            if proc.poll() is not None and not group_members(pgid):
                return
            if time.monotonic() >= deadline:
                break
            time.sleep(0.05)


def _run_streamed(cmd: list[str], cwd: Path, log, deadline: float,
                  on_line: Callable[[str], None] | None = None) -> int:
    """Run ``cmd`` in its own session (process group), append its merged stdout/stderr to
    ``log`` (a text file) and pass every line to ``on_line``. Returns the exit status. On a
    timeout (``deadline``, :func:`time.monotonic` seconds), an exception or
    KeyboardInterrupt, the whole group is killed (:func:`_kill_group`) and the exception
    propagates (:class:`subprocess.TimeoutExpired` for the timeout)."""
    # its own session, so the whole group can be killed; SIGKILL when this process dies
    # (kill -9 runs no cleanup: cgra.procs)
    proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=pdeathsig_preexec())
    try:
        fd = proc.stdout.fileno()
        buf = b""
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise subprocess.TimeoutExpired(cmd, 0)
                if not sel.select(timeout=min(left, 0.5)):
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for raw in lines:
                    line = raw.decode(errors="replace")
                    log.write(line + "\n")
                    if on_line is not None:
                        on_line(line)
        if buf:
            log.write(buf.decode(errors="replace") + "\n")
        left = max(0.0, deadline - time.monotonic())
        try:
            return proc.wait(timeout=left)
        except subprocess.TimeoutExpired:
            raise subprocess.TimeoutExpired(cmd, 0) from None
    except BaseException:
        _kill_group(proc)
        raise
    finally:
        proc.stdout.close()
        if proc.poll() is not None and group_members(proc.pid):
            # the leader exited but left children behind (e.g. make killed by a signal)
            _kill_group(proc)


#: Wrapper of Verilator's makefile: ``cgra-objects`` lists the objects the build compiles
#: (progress display).
_WRAPPER_MK = """\
# generated by mapper.sim.verilator ({recipe}); do not edit
include {mk}
cgra-objects:
\t@echo CGRA_OBJECTS $(VK_OBJS) $(VK_GLOBAL_OBJS) $(VK_USER_OBJS)
cgra-flags:
\t@echo CGRA_FLAGS $(CXX) $(CXXFLAGS) $(CPPFLAGS) $(OPT_FAST) $(OPT_SLOW) $(OPT_GLOBAL) \
\t  $(VK_GLOBAL_OBJS)
"""
#: Precompiled ``verilated.h``, one per optimisation level: GCC picks the valid one from the
#: ``verilated.h.gch/`` directory and silently falls back to the header when none matches.
#: Parsing verilated.h is ~0.4 s of the ~1 s each generated .cpp file takes at -O1.
_PCH_MK = """\
CGRA_PCH_FLAGS = $(CXXFLAGS) $(filter-out -MMD -MP,$(CPPFLAGS))
CGRA_VH = $(VERILATOR_ROOT)/include/verilated.h
verilated.h.gch/fast.gch:
\t@mkdir -p verilated.h.gch && ln -sf $(CGRA_VH) verilated.h
\t$(CXX) $(CGRA_PCH_FLAGS) $(OPT_FAST) -x c++-header $(CGRA_VH) -o $@
verilated.h.gch/slow.gch:
\t@mkdir -p verilated.h.gch && ln -sf $(CGRA_VH) verilated.h
\t$(CXX) $(CGRA_PCH_FLAGS) $(OPT_SLOW) -x c++-header $(CGRA_VH) -o $@
$(VK_FAST_OBJS) $(VK_USER_OBJS) $(VM_PREFIX)__ALL.o: | verilated.h.gch/fast.gch
$(VK_SLOW_OBJS): | verilated.h.gch/slow.gch
"""
#: bump when the build recipe changes (part of the cache key)
BUILD_RECIPE = "verilate+make/pch-1"
_COMPILE_RE = re.compile(r"\s-c\s+-o\s+(\S+\.o)\s")


def _count_objects(obj: Path, make_vars: list[str], log, deadline: float) -> int:
    """Number of objects the build compiles (the wrapper's ``cgra-objects`` target)."""
    found: list[str] = []

    def grab(line: str) -> None:
        if line.startswith("CGRA_OBJECTS"):
            found.extend(line.split()[1:])

    cmd = ["make", "-s", "-C", str(obj), "-f", "cgra.mk", *make_vars, "cgra-objects"]
    _run_streamed(cmd, obj, log, deadline, grab)
    return len(found)


class _MakeProgress:
    """Turns make's echoed commands into progress messages."""

    def __init__(self, say: Callable[[str], None], total: int, exe: Path):
        self.say, self.total, self.exe, self.k = say, total, str(exe), 0
        self.linking = False

    def __call__(self, line: str) -> None:
        if "-x c++-header" in line:
            self.say("precompiling verilated.h")
        elif _COMPILE_RE.search(line):
            self.k += 1
            n = max(self.total, self.k)
            self.say(f"compiling C++ ({self.k}/{n} objects)")
        elif not self.linking and (line.startswith("Archive ") or
                                   (f"-o {self.exe}" in line and " -c " not in line)):
            self.linking = True
            self.say("linking")


def _reuse(model: Path, binary: str = "harness") -> bool:
    """True when ``model`` is a finished cache entry (``ok`` stamp and its ``binary``);
    marks its use (``used`` stamp, :func:`prune_models`). Finished entries never change."""
    if not ((model / "ok").is_file() and (model / binary).is_file()):
        return False
    try:
        (model / "used").touch()
    except FileNotFoundError:           # pruned by another process just now
        return False
    return True


def build_harness(design_dir: str | Path, params: SimParams | None = None,
                  progress: Callable[[str], None] | None = None) -> Harness:
    """Generate and compile the stream harness of ``design_dir``, or reuse the model of the
    same content from the model cache (:func:`model_cache_dir`, module docstring):
    ``verilator --cc`` then ``make -j SimParams.jobs`` with a precompiled ``verilated.h``
    (``SimParams.precompiled_header``), both in their own process group. A build that adds
    a model bounds the cache to ``SimParams.cache_models`` models (:func:`prune_models`).

    ``progress(msg)`` (optional) is called with short messages as the build advances:
    ``"cached"``, ``"waiting for another build of this model"``, ``"verilating"``,
    ``"precompiling verilated.h"``, ``"compiling C++ (k/n objects)"``, ``"linking"``.

    Interrupts (KeyboardInterrupt, or SIGTERM turned into an exception by ``cgra``) and any
    other exception kill the Verilator/make/compiler process group, remove the temporary
    ``.<key>.tmp-<pid>`` directory and propagate; stale temporary directories of dead
    processes are removed by the next build (:func:`remove_stale_builds`). The log of a
    failed or timed-out build is kept as ``<cache>/<key>.failed.log``.

    Raises :class:`CollateralError` for a missing/malformed design and
    :class:`SimulationError` when Verilator or the C++ build fails (with the log's tail) or
    exceeds ``SimParams.build_timeout_s``."""
    p = params or SimParams()
    say = progress or (lambda _m: None)
    d = Path(design_dir).resolve()
    doc = load_design_doc(d)
    top, top_ports = doc.top, doc.ports
    if p.system:
        if not doc.system_top or not doc.system_filelist:
            raise CollateralError(f"{d}: the design has no system top (array and GLB, "
                                  f"design.json 'system'); generate it from a TOML with a "
                                  f"[glb] table")
        top, top_ports = doc.system_top, doc.system_ports
        doc.verify_files([f for f in doc.files if f.startswith("glb/")])
    handshake = is_handshake_design(top_ports)
    mode, blocks = ("flat", []) if p.system else _hierarchy(p, doc, handshake)
    hier = mode == "columns"
    filelist = doc.system_filelist if p.system else \
        doc.hier_filelist if hier else "rtl/filelist.f"
    files = _rtl_files(d, filelist)
    # the tile-output wires are the array top's (in a system top, those of its "array")
    probes = next((pr for f in files if (pr := tile_probes(f.read_text(), doc.top))), []) \
        if p.toggles else []
    src, ins, outs = rv_harness_source(top, top_ports) if handshake else \
        harness_source(top, top_ports, probes, "array__DOT__" if p.system else "")
    if handshake:
        probes = []                     # no toggle probes in the ready-valid harness
    # (a system top's array ports too: the widths of the streams the GLB drives and takes)
    widths = {**{q.name: q.width for q in doc.ports}, **{q.name: q.width for q in top_ports}}
    make_vars = [f"OPT_FAST={p.opt_fast_blocks if hier else p.opt_fast}", f"OPT_SLOW={p.opt_slow}"]
    flags = [*p.extra_flags, *make_vars, f"pch={int(p.precompiled_header)}", BUILD_RECIPE,
             f"hier={doc.hier_columns if hier else 0}",
             *([f"tiles={','.join(blocks)}"] if blocks else [])]
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    h.update(src.encode())
    version = _verilator_version(p.verilator)
    h.update(version.encode())
    h.update(json.dumps(flags).encode())
    key = h.hexdigest()[:16]
    root = model_cache_dir(d, p)
    root.mkdir(parents=True, exist_ok=True)
    out = root / key
    exe = out / "harness"
    lock_path = root / f".{key}.lock"
    fw = flush_wait_of(doc, p)

    def result(cached: bool, secs: float) -> Harness:
        return Harness(d, top, exe, ins, outs, widths, key, cached, secs, fw, lock_path,
                       [w for w, _b in probes], handshake,
                       doc.hier_columns if hier else 0, tuple(blocks))

    if _reuse(out):
        say("cached")
        return result(True, 0.0)
    with open(lock_path, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say("waiting for another build of this model")
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            remove_stale_builds(root)
            if _reuse(out):
                say("cached")
                return result(True, 0.0)
            t0 = time.perf_counter()
            tmp = root / f".{key}.tmp-{os.getpid()}"
            failed_log = root / f"{key}.failed.log"
            try:
                secs = _build(p, d, top, src, ins, outs, widths, make_vars, tmp, say,
                              progress is not None, t0, failed_log, version, probes=bool(probes),
                              filelist=filelist, hier=hier, probe_module=doc.top,
                              blocks=blocks)
                (tmp / "used").touch()
                if out.exists():
                    shutil.rmtree(out)
                tmp.rename(out)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            failed_log.unlink(missing_ok=True)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    prune_models(root, p.cache_models, protect=(key,))
    return result(False, secs)


#: the stand-in design whose makefile builds Verilator's run-time library for a runtime entry
_STUB_V = "module cgra_runtime_stub(input CLK, output O);\n  assign O = CLK;\nendmodule\n"
#: run-time library files a model build takes from a runtime entry (besides the PCH)
_RUNTIME_FILES = ("verilated.o", "verilated.d", "verilated_threads.o", "verilated_threads.d")


def _make_flags(obj: Path, make_vars: list[str], log, deadline: float) -> str:
    """The compile flags (compiler, CXXFLAGS, CPPFLAGS, OPT_*) and run-time objects of the
    makefile in ``obj`` (the wrapper's ``cgra-flags`` target)."""
    found: list[str] = []

    def grab(line: str) -> None:
        if line.startswith("CGRA_FLAGS"):
            found.append(" ".join(line.split()[1:]))

    cmd = ["make", "-s", "-C", str(obj), "-f", "cgra.mk", *make_vars, "cgra-flags"]
    _run_streamed(cmd, obj, log, deadline, grab)
    return found[0] if found else ""


class _Runtime:
    """Verilator's run-time library (``verilated.o``, ``verilated_threads.o``) and the
    precompiled ``verilated.h`` of one toolchain and flag set: the same for every model, so
    it is compiled once into the model cache (``rt-<key>/``, ``key`` hashing the Verilator
    version, the Verilator options, ``OPT_*`` and the PCH switch) and copied into each model's
    build. When the cache has none, it is compiled from a stand-in design
    (:data:`_STUB_V`) in the background *while* Verilator translates the model (single-threaded,
    so a second core is free). A model build uses it only when its own makefile's compile
    flags equal the entry's (``flags.txt``); otherwise make compiles them as usual. Same
    guarantees as a model: its lock, a ``.rt-<key>.tmp-<pid>`` directory renamed into place,
    an ``ok`` stamp, pruned with the models (:func:`prune_models`)."""

    def __init__(self, p: SimParams, root: Path, make_vars: list[str], version: str):
        h = hashlib.sha256(json.dumps([version, list(p.extra_flags), make_vars,
                                       p.precompiled_header, BUILD_RECIPE]).encode())
        self.key = "rt-" + h.hexdigest()[:16]
        self.dir = root / self.key
        self.p, self.root, self.make_vars = p, root, make_vars
        self.proc: subprocess.Popen | None = None
        self.lock = None
        self.tmp = root / f".{self.key}.tmp-{os.getpid()}"

    def start(self) -> None:
        """Start compiling the runtime in the background unless the cache has it or another
        process is compiling it."""
        if not self.p.share_runtime or _reuse(self.dir, "verilated.o"):
            return
        self.lock = open(self.root / f".{self.key}.lock", "a")
        try:
            fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.lock.close()
            self.lock = None
            return
        shutil.rmtree(self.tmp, ignore_errors=True)
        obj = self.tmp / "obj"
        obj.mkdir(parents=True)
        (self.tmp / "stub.v").write_text(_STUB_V)
        (obj / "cgra.mk").write_text(_WRAPPER_MK.format(recipe=BUILD_RECIPE,
                                                        mk="Vcgra_runtime_stub.mk")
                                     + (_PCH_MK if self.p.precompiled_header else ""))
        targets = ["verilated.o", "verilated_threads.o"]
        if self.p.precompiled_header:
            targets += ["verilated.h.gch/fast.gch", "verilated.h.gch/slow.gch"]
        verilate = [self.p.verilator, "--cc", *self.p.extra_flags, "--top-module",
                    "cgra_runtime_stub", "-Mdir", str(obj), str(self.tmp / "stub.v")]
        make = ["make", "-C", str(obj), "-f", "cgra.mk",
                "-j", str(max(1, self.p.jobs - 1)), *self.make_vars, *targets]
        script = f"{shlex.join(verilate)} && {shlex.join(make)}"
        with open(self.tmp / "build.log", "w") as log:
            self.proc = subprocess.Popen(["sh", "-c", script], cwd=self.tmp,
                                         stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True,
                                         preexec_fn=pdeathsig_preexec())

    def finish(self, deadline: float, log) -> Path | None:
        """Wait for a background compile (until ``deadline``, :func:`time.monotonic`
        seconds) and install it; the runtime directory, or None when there is none."""
        if self.proc is not None:
            try:
                rc = self.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise subprocess.TimeoutExpired("runtime build", 0) from None
            self.proc = None
            try:
                obj = self.tmp / "obj"
                if rc == 0:
                    (self.tmp / "flags.txt").write_text(
                        _make_flags(obj, self.make_vars, log, deadline) + "\n")
                    for f in _RUNTIME_FILES:
                        shutil.copyfile(obj / f, self.tmp / f)
                    if self.p.precompiled_header:
                        shutil.copytree(obj / "verilated.h.gch", self.tmp / "verilated.h.gch")
                        os.symlink(os.readlink(obj / "verilated.h"), self.tmp / "verilated.h")
                    shutil.rmtree(obj)
                    (self.tmp / "ok").write_text("runtime\n")
                    (self.tmp / "used").touch()
                    shutil.rmtree(self.dir, ignore_errors=True)
                    self.tmp.rename(self.dir)
            finally:
                self.release()
        return self.dir if self.p.share_runtime and _reuse(self.dir, "verilated.o") else None

    def release(self) -> None:
        """Stop a background compile, remove its directory and free the lock."""
        if self.proc is not None:
            _kill_group(self.proc)
            self.proc = None
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self.lock is not None:
            fcntl.flock(self.lock, fcntl.LOCK_UN)
            self.lock.close()
            self.lock = None


def _link(src: str, dst: str) -> None:
    """Hard link ``src`` as ``dst`` (a copy across file systems)."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def _install_runtime(rt: Path, obj: Path, flags: str, pch: bool) -> int:
    """Copy the runtime entry ``rt`` into the model's object directory ``obj`` when its
    compile flags equal the model's ``flags`` (fresh mtimes, so make takes the objects as up
    to date; the ``verilated.h`` link the PCH rule makes); returns the objects installed."""
    if not flags or (rt / "flags.txt").read_text().strip() != flags:
        return 0
    for f in _RUNTIME_FILES:
        shutil.copyfile(rt / f, obj / f)
    if pch:     # ~60 MB each: hard links (no prerequisites, so their mtime does not matter)
        shutil.copytree(rt / "verilated.h.gch", obj / "verilated.h.gch", copy_function=_link)
        if not (obj / "verilated.h").exists():
            os.symlink(os.readlink(rt / "verilated.h"), obj / "verilated.h")
    return sum(1 for f in _RUNTIME_FILES if f.endswith(".o"))


def _build(p: SimParams, d: Path, top: str, src: str, ins: list[str], outs: list[str],
           widths: dict[str, int], make_vars: list[str], tmp: Path,
           say: Callable[[str], None], count: bool, t0: float, failed_log: Path,
           version: str, probes: bool = False, filelist: str = "rtl/filelist.f",
           hier: bool = False, probe_module: str | None = None,
           blocks: Sequence[str] = ()) -> float:
    """Verilate and compile into ``tmp`` (see :func:`build_harness`; the run-time library
    from the cache or compiled beside the verilation, :class:`_Runtime`; ``probes``: make the
    tile-output wires public for the harness's toggle counts); returns the seconds. The log
    of a failed build is kept as ``failed_log``; ``filelist`` (relative to ``d``) lists the
    Verilog, ``hier``: verilate the column blocks of ``rtl/hier/`` once each
    (``--hierarchical``); ``blocks``: the modules of the flat top to verilate once each
    (``hier_block`` lines in ``tiles.vlt``, ``--hierarchical``)."""
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    (tmp / "harness.cpp").write_text(src)
    vlt = []
    if probes:
        # the tile-output wires the harness reads (tile_probes): read-only public, nothing else
        (tmp / "probes.vlt").write_text(f'`verilator_config\npublic_flat_rd -module '
                                        f'"{probe_module or top}" '
                                        f'-var "_Tile_X*"\n')
        vlt = [str(tmp / "probes.vlt")]
    if blocks:
        (tmp / "tiles.vlt").write_text("`verilator_config\n" + "".join(
            f'hier_block -module "{b}"\n' for b in blocks))
        vlt.append(str(tmp / "tiles.vlt"))
    (tmp / "ports.json").write_text(json.dumps(
        {"harness": HARNESS_VERSION, "top": top, "inputs": ins, "outputs": outs,
         "widths": widths}, indent=1) + "\n")
    obj = tmp / "obj"
    jobs = str(max(1, p.jobs))
    verilate = [p.verilator, "--cc", "--exe", *p.extra_flags,
                *(["--hierarchical"] if hier or blocks else []), "--top-module", top,
                "-f", str(d / filelist), "-Mdir", str(obj),
                "-o", str(tmp / "harness"), *vlt, str(tmp / "harness.cpp")]
    make = ["make", "-C", str(obj), "-f", "cgra.mk", "-j", jobs, *make_vars]
    (tmp / "build.cmd").write_text(" ".join(verilate) + "\n" + " ".join(make) + "\n")
    deadline = time.monotonic() + p.build_timeout_s
    log_path = tmp / "build.log"
    runtime = _Runtime(p, tmp.parent, make_vars, version)
    with open(log_path, "w") as log:
        try:
            runtime.start()                 # in the background, beside the verilation
            say("verilating")
            rc = _run_streamed(verilate, d / "rtl", log, deadline)
            if rc == 0:
                wrapper = _WRAPPER_MK.format(recipe=BUILD_RECIPE, mk=f"V{top}.mk")
                (obj / "cgra.mk").write_text(wrapper + (_PCH_MK if p.precompiled_header
                                                        else ""))
                rt = runtime.finish(deadline, log)
                have = 0
                if rt is not None:
                    flags = _make_flags(obj, make_vars, log, deadline)
                    with _flock(rt.parent / f".{rt.name}.lock", fcntl.LOCK_SH):  # no pruning
                        if (rt / "ok").is_file():
                            have = _install_runtime(rt, obj, flags, p.precompiled_header)
                    log.write(f"cgra: run-time library from {rt.name}: {have} objects\n")
                total = _count_objects(obj, make_vars, log, deadline) - have if count else 0
                rc = _run_streamed(make, obj, log, deadline,
                                   _MakeProgress(say, total, tmp / "harness"))
        except subprocess.TimeoutExpired:
            log.close()
            shutil.copyfile(log_path, failed_log)
            raise SimulationError(f"Verilator build of {top} ({d}) exceeded "
                                  f"{p.build_timeout_s:.0f} s (log {failed_log}); raise "
                                  f"SimParams.build_timeout_s") from None
        except FileNotFoundError as exc:
            raise SimulationError(f"Verilator build of {top} ({d}): {exc.filename} not found; "
                                  f"install it (apt-get install make g++)") from None
        finally:
            runtime.release()
    if rc != 0 or not (tmp / "harness").is_file():
        shutil.copyfile(log_path, failed_log)
        tail = "\n".join(log_path.read_text(errors="replace").strip().splitlines()[-15:])
        raise SimulationError(f"Verilator build of {top} ({d}) failed with status {rc}; "
                              f"log {failed_log}:\n{tail}")
    shutil.rmtree(obj, ignore_errors=True)
    secs = time.perf_counter() - t0
    (tmp / "ok").write_text(f"{secs:.2f}\n")
    return secs


def run_harness(h: Harness, bitstream: list[tuple[int, int]], inputs: dict[str, np.ndarray],
                outputs: list[str], cycles: int, workdir: str | Path,
                params: SimParams | None = None,
                tokens: dict[str, int] | None = None) -> SimRun:
    """Configure the array with ``bitstream`` (``[(addr, data)]``, 32-bit each), stream
    ``inputs`` (top input port -> int array of length >= ``cycles``, one word per cycle;
    undriven data inputs stay 0) and sample ``outputs`` (top output ports) for ``cycles``
    cycles. Files go to ``workdir`` (``sim.bs``, ``sim.stim``, ``sim.out``). ``tokens`` (a
    ready-valid design only): socket -> its token count, for every driven input and sampled
    output; an input then presents its first ``tokens[n]`` rows and goes invalid, and the
    run ends when every output has its count (:mod:`mapper.sim.rv_harness`); ``cycles`` is
    the largest count. Without it every socket moves ``cycles`` tokens.

    Raises :class:`SimulationError` for an unknown port, a value that does not fit its port,
    a harness failure or timeout."""
    p = params or SimParams()
    wd = Path(workdir)
    wd.mkdir(parents=True, exist_ok=True)
    idx_in = {n: k for k, n in enumerate(h.inputs)}
    idx_out = {n: k for k, n in enumerate(h.outputs)}
    ins = sorted(inputs)
    for n in ins:
        if n not in idx_in:
            raise SimulationError(f"top module {h.top} has no data input port '{n}'; inputs: "
                                  f"{h.inputs[:8]}...")
    for n in outputs:
        if n not in idx_out:
            raise SimulationError(f"top module {h.top} has no output port '{n}'; outputs: "
                                  f"{h.outputs[:8]}...")
    cols = []
    for n in ins:
        v = np.asarray(inputs[n], dtype=np.int64)
        if v.shape[0] < cycles:
            raise SimulationError(f"input stream for port {n} has {v.shape[0]} values, the run "
                                  f"needs {cycles}")
        v = v[:cycles]
        # a 64-bit port's words are int64 bit patterns (written unsigned below)
        if h.widths[n] < 64 and ((v < 0).any() or (v >> h.widths[n]).any()):
            raise SimulationError(f"input stream for port {n}: values outside the "
                                  f"{h.widths[n]}-bit port range")
        cols.append(v)
    bs_path, stim_path, out_path = wd / "sim.bs", wd / "sim.stim", wd / "sim.out"
    bs_path.write_text("".join(f"{a:08X} {d:08X}\n" for a, d in bitstream))
    with open(stim_path, "w") as f:
        f.write(f"cycles {cycles}\nflush_wait {h.flush_wait}\nreadback {int(p.readback)}\n")
        if h.handshake:
            f.write(f"stalls {p.stall_seed} {round(p.stall_in * 1000)} "
                    f"{round(p.stall_out * 1000)}\n")
            counts = [] if tokens is None else [int(tokens[n]) for n in (*ins, *outputs)]
            f.write(" ".join(["tokens", str(len(counts)), *map(str, counts)]) + "\n")
        elif tokens is not None:
            raise SimulationError(f"top module {h.top} is not a ready-valid design; token "
                                  f"counts apply to handshake sockets only")
        f.write("in " + " ".join(str(idx_in[n]) for n in ins) + "\n")
        f.write("out " + " ".join(str(idx_out[n]) for n in outputs) + "\ndata\n")
        if cols:
            np.savetxt(f, np.stack(cols, axis=1).view(np.uint64), fmt="%d")
        else:
            f.write("\n" * cycles)
    t0 = time.perf_counter()
    with _flock(h.lock, fcntl.LOCK_SH):     # the cache cannot prune the model while it starts
        if not h.exe.is_file():
            raise SimulationError(f"the Verilator model {h.exe.parent} is gone (removed from "
                                  f"the model cache, which keeps SimParams.cache_models "
                                  f"models); build it again (build_harness / `cgra sim`)")
        proc = subprocess.Popen([str(h.exe), str(bs_path), str(stim_path), str(out_path)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=pdeathsig_preexec())     # dies with this process
    with proc:
        try:
            stdout, stderr = proc.communicate(timeout=p.run_timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise SimulationError(f"simulation of {h.top} exceeded {p.run_timeout_s:.0f} s "
                                  f"({cycles} cycles)") from None
        except BaseException:
            proc.kill()
            raise
    secs = time.perf_counter() - t0
    dead = _DEADLOCK_RE.search(stderr or "") if proc.returncode == 4 else None
    if dead is not None:            # the ready-valid harness (mapper.sim.rv_harness)
        raise SimulationError(f"ready-valid run stalled for good: output "
                              f"{h.outputs[int(dead[1])]} has {dead[2]} of {dead[3]} tokens "
                              f"after {dead[4]} cycles (a route's valid or ready is not "
                              f"connected: prove the bitstream with `cgra verify`)")
    if proc.returncode != 0:
        raise SimulationError(f"simulation harness {h.exe} failed with status "
                              f"{proc.returncode}: {(stderr or stdout).strip()[-800:]}")
    lines = out_path.read_text().splitlines()
    nbad = int(lines[0].split()[1])
    bad = [tuple(int(x, 16) for x in ln.split()[1:4]) for ln in lines[1:1 + nbad]]
    k = 1 + nbad
    if lines[k] != "data":
        raise SimulationError(f"{out_path}: malformed harness output (expected 'data')")
    data_lines = lines[k + 1:k + 1 + cycles]
    edges = int(lines[k + 1 + cycles].split()[1])
    if outputs:
        # unsigned 64-bit words (a GLB word) kept as their int64 bit patterns
        arr = np.array([ln.split() for ln in data_lines], dtype=np.uint64).view(
            np.int64).reshape(cycles, len(outputs))
    else:
        arr = np.zeros((cycles, 0), np.int64)
    outs = {n: arr[:, j] for j, n in enumerate(outputs)}
    toggles: dict[str, tuple[int, int]] = {}
    rest = lines[k + 2 + cycles:]
    handshake: dict[str, float] = {}
    if h.handshake:
        if not rest or not rest[0].startswith("handshake "):
            raise SimulationError(f"{out_path}: malformed harness output (expected 'handshake')")
        hs = [int(v) for v in rest[0].split()[1:5]]
        handshake = {"cycles": hs[0], "input_stall_cycles": hs[1],
                     "output_backpressure_cycles": hs[2], "input_tokens": hs[3],
                     "seed": p.stall_seed, "p_in": p.stall_in, "p_out": p.stall_out}
        rest = rest[1:]
    if h.probes and rest and rest[0].startswith("toggles "):
        vals = [tuple(int(x) for x in ln.split()) for ln in rest[1:1 + len(h.probes)]]
        if int(rest[0].split()[1]) != len(h.probes) or len(vals) != len(h.probes):
            raise SimulationError(f"{out_path}: malformed harness output ({rest[0]!r} for "
                                  f"{len(h.probes)} probes)")
        toggles = {w: (v[0], v[1]) for w, v in zip(h.probes, vals, strict=True)}
    return SimRun(outs, bad, secs, cycles, edges,
                  {"bitstream": bs_path, "stimulus": stim_path, "output": out_path}, toggles,
                  handshake)
