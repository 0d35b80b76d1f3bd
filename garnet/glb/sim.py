"""Run the generated GLB RTL (:mod:`garnet.glb.rtl`) on a list of input cycles in Icarus
Verilog or Verilator, and the cycle-level model (:mod:`garnet.glb.model`) on the same cycles.

The testbench reads one packed input vector per cycle (``$readmemh`` of ``stim.hex``), drives
the top's inputs, prints every output (order of :meth:`garnet.glb.model.Outputs.flat`) before
the rising edge, then clocks once. Build and run take ~1 s for a 4-tile GLB of 64-word banks.
"""
from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path
from typing import Sequence

from cgra.errors import SimulationError
import numpy as np

from garnet.glb.dma import DmaProgram
from garnet.glb.model import Cycle, GlbModel, config_cycles
from garnet.glb.params import GlbParams
from garnet.glb.rtl import glb_verilog
from lake.program import program


def _fields(p: GlbParams) -> list[tuple[str, int]]:
    """(input name, bits) packed into one stimulus vector, LSB first."""
    hw = p.word_address_width
    out = [("rst", 1), ("start", p.tiles), ("cfg_go", p.tiles), ("cfg_wr", 1), ("cfg_addr", 16), ("cfg_data", 32),
           ("host_wr", 1), ("host_waddr", hw), ("host_wdata", p.word_width), ("host_rd", 1),
           ("host_raddr", hw)]
    return out + [(f"io_in_{t}", p.data_width) for t in range(p.tiles)]


def _pack(p: GlbParams, c: Cycle) -> int:
    vals = {"rst": c.RESET, "start": sum(b << t for t, b in enumerate(c.start or [])),
            "cfg_go": sum(b << t for t, b in enumerate(c.cfg_go or [])),
            "cfg_wr": c.cfg_wr, "cfg_addr": c.cfg_addr, "cfg_data": c.cfg_data,
            "host_wr": c.host_wr, "host_waddr": c.host_waddr, "host_wdata": c.host_wdata,
            "host_rd": c.host_rd, "host_raddr": c.host_raddr}
    for t in range(p.tiles):
        vals[f"io_in_{t}"] = (c.io_in or [0] * p.tiles)[t]
    word, sh = 0, 0
    for name, w in _fields(p):
        word |= (int(vals[name]) & ((1 << w) - 1)) << sh
        sh += w
    return word


def testbench(p: GlbParams, ncycles: int) -> str:
    """The Icarus testbench of the ``glb`` top for ``ncycles`` cycles (Verilog text)."""
    fields = _fields(p)
    total = sum(w for _n, w in fields)
    L = ["`timescale 1ns/1ps", "module tb;", "  reg clk = 0;",
         f"  reg [{total - 1}:0] stim [0:{ncycles - 1}];", f"  reg [{total - 1}:0] s;"]
    outs: list[str] = []
    conns = [".clk(clk)"]
    sh = 0
    for name, w in fields:
        L.append(f"  wire [{w - 1}:0] {name} = s[{sh + w - 1}:{sh}];")
        conns.append(f".{name}({name})")
        sh += w
    for t in range(p.tiles):
        for o, w in ((f"io_out_valid_{t}", 1), (f"io_out_{t}", p.data_width),
                     (f"ld_done_{t}", 1), (f"st_done_{t}", 1)):
            L.append(f"  wire [{w - 1}:0] {o};")
            outs.append(o)
    L.append("  wire host_rd_valid;")
    L.append(f"  wire [{p.word_width - 1}:0] host_rdata;")
    outs += ["host_rd_valid", "host_rdata"]
    for t in range(p.tiles):
        for b in range(p.banks):
            L.append(f"  wire cfg_valid_{t}_{b};")
            L.append(f"  wire [{p.word_width - 1}:0] cfg_word_{t}_{b};")
            outs += [f"cfg_valid_{t}_{b}", f"cfg_word_{t}_{b}"]
    conns += [f".{o}({o})" for o in outs]
    L.append("  glb dut (" + ", ".join(conns) + ");")
    L.append("  integer i;")
    L.append("  initial begin")
    L.append('    $readmemh("stim.hex", stim);')
    L.append(f"    for (i = 0; i < {ncycles}; i = i + 1) begin")
    L.append("      s = stim[i]; #1;")
    L.append('      $display("' + " ".join(["%h"] * len(outs)) + '", ' + ", ".join(outs) + ");")
    L.append("      clk = 1; #1; clk = 0; #1;")
    L.append("    end")
    L.append("    $finish;")
    L.append("  end")
    L.append("endmodule")
    return "\n".join(L) + "\n"


def run_rtl(p: GlbParams, cycles: Sequence[Cycle], workdir: str | Path,
            simulator: str = "icarus") -> list[list[int]]:
    """Per cycle, the flat outputs of the RTL (:meth:`Outputs.flat` order; -1 for a value
    with x or z bits, e.g. before the first reset) in ``simulator``: ``"icarus"`` (compiles
    in well under a second) or ``"verilator"`` (``--binary --timing``; ~10-30 s to build).
    Raises :class:`SimulationError` when the simulator is missing, fails, or prints a wrong
    number of lines."""
    if simulator not in ("icarus", "verilator"):
        raise SimulationError(f"GLB RTL simulator '{simulator}': use 'icarus' or 'verilator'")
    tools = ["iverilog", "vvp"] if simulator == "icarus" else ["verilator"]
    paths = [shutil.which(t) for t in tools]
    if not all(paths):
        raise SimulationError(f"{' and '.join(tools)} not installed; apt-get install "
                              f"{'iverilog' if simulator == 'icarus' else 'verilator'}")
    wd = Path(workdir)
    wd.mkdir(parents=True, exist_ok=True)
    (wd / "glb.v").write_text(glb_verilog(p))
    (wd / "tb.v").write_text(testbench(p, len(cycles)))
    total = sum(w for _n, w in _fields(p))
    digits = (total + 3) // 4
    (wd / "stim.hex").write_text("".join(f"{_pack(p, c):0{digits}x}\n" for c in cycles))
    if simulator == "icarus":
        build = [paths[0], "-g2005", "-o", "sim.vvp", "tb.v", "glb.v"]
        run_cmd = [paths[1], "-n", "sim.vvp"]
    else:
        build = [paths[0], "--binary", "--timing", "-Wno-fatal", "-Wno-lint", "--top-module",
                 "tb", "tb.v", "glb.v", "-o", "vtb"]
        run_cmd = [str(wd / "obj_dir" / "vtb")]
    comp = subprocess.run(build, cwd=wd, capture_output=True, text=True)
    if comp.returncode != 0:
        raise SimulationError(f"{simulator} failed to build the GLB RTL in {wd}: "
                              f"{comp.stderr[-800:]}")
    run = subprocess.run(run_cmd, cwd=wd, capture_output=True, text=True)
    if run.returncode != 0:
        raise SimulationError(f"{simulator} run of the GLB testbench in {wd} failed: "
                              f"{run.stderr[-800:]}")
    rows = []
    width = 4 * p.tiles + 2 + 2 * p.tiles * p.banks
    for line in run.stdout.splitlines():
        parts = line.split()
        if len(parts) == width:
            rows.append([_hex(x) for x in parts])
    if len(rows) != len(cycles):
        raise SimulationError(f"GLB testbench in {wd}: {len(rows)} output lines for "
                              f"{len(cycles)} cycles: {run.stdout[-400:]}")
    return rows


def run_icarus(p: GlbParams, cycles: Sequence[Cycle], workdir: str | Path) -> list[list[int]]:
    """:func:`run_rtl` in Icarus Verilog."""
    return run_rtl(p, cycles, workdir, "icarus")


def _hex(token: str) -> int:
    """A printed value; -1 for one holding x or z bits (registers before the first reset)."""
    try:
        return int(token, 16)
    except ValueError:
        return -1


def run_model(p: GlbParams, cycles: Sequence[Cycle], preload: dict | None = None
              ) -> tuple[list[list[int]], GlbModel]:
    """Per cycle, the flat outputs of the cycle-level model, and the model after the run.
    ``preload``: ``{(tile, bank, word): value}`` written through the back door first."""
    m = GlbModel(p)
    for (t, b, w), v in (preload or {}).items():
        m.load_word(t, b, w, v)
    return [m.step(c).flat() for c in cycles], m


def _random_box(rng: random.Random, lo: int, hi: int) -> tuple[list[int], list[int], int]:
    """A 1..3-d box of distinct addresses inside [lo, hi): extents, strides, offset."""
    while True:
        dims = rng.randint(1, 3)
        ext = [rng.randint(2, 6) for _ in range(dims)]
        strides, span = [], 1
        for e in ext:
            s = span * rng.choice([1, 1, 2])
            strides.append(s)
            span = s * e
        if span <= hi - lo:
            off = lo + rng.randint(0, hi - lo - span)
            return ext, strides, off


def _dense_schedule(ext: list[int], gap: int) -> list[int]:
    """Schedule strides of a dense raster with ``gap`` idle cycles after each level."""
    strides, span = [], 1
    for e in ext:
        strides.append(span)
        span = span * e + gap
    return strides


def random_scenario(p: GlbParams, seed: int, chain: bool):
    """A random DMA run on ``p`` (seeded): every GLB word random (``preload``: (tile, bank,
    word) -> value; ``mem``: the same as element words), random 1-3-d load programs over the
    lower half and store programs over the upper half of each tile (``chain``: one chained
    load DMA on tile 0 over the lower half of the whole GLB and one chained store DMA on
    tile 1 over the upper half), the config cycles, a start, the run with each store's
    values on ``io_in`` at its schedule, and a host read-back of every word. Returns
    ``(p, cycles, preload, mem, loads, stores)``; ``loads``: tile -> program, ``stores``:
    tile -> (program, values)."""
    rng = random.Random(seed)
    e = p.tile_elements
    preload, mem = {}, np.zeros(p.tiles * e, dtype=np.int64)
    for t in range(p.tiles):
        for b in range(p.banks):
            for w in range(p.bank_words):
                v = rng.getrandbits(p.word_width)
                preload[(t, b, w)] = v
                base = t * e + (b * p.bank_words + w) * p.lanes
                for ln in range(p.lanes):
                    mem[base + ln] = (v >> (16 * ln)) & 0xFFFF
    loads, stores, progs = {}, {}, {}
    for t in range(p.tiles):
        if chain and t != 0:
            continue
        # loads read the lower half of the space, stores write the upper half
        if chain:
            ext, st, off = _random_box(rng, 0, p.tiles * e // 2)
        else:
            ext, st, off = _random_box(rng, 0, e // 2)
        sched = _dense_schedule(ext, rng.randint(0, 2))
        loads[t] = DmaProgram(program(ext, st, off, sched, rng.randint(0, 5)), chain)
    for t in range(p.tiles):
        if chain and t != 1:
            continue
        if chain:
            ext, st, off = _random_box(rng, p.tiles * e // 2, p.tiles * e)
        else:
            ext, st, off = _random_box(rng, e // 2, e)
        sched = _dense_schedule(ext, rng.randint(0, 2))
        prog = DmaProgram(program(ext, st, off, sched, rng.randint(0, 5)), chain)
        stores[t] = (prog, [rng.getrandbits(16) for _ in range(prog.program.size)])
    for t, prog in loads.items():
        progs[(t, "ld")] = prog
    for t, (prog, _v) in stores.items():
        progs[(t, "st")] = prog
    cycles = [Cycle(RESET=1)] + config_cycles(p, progs)
    cycles.append(Cycle(start=[1] * p.tiles))
    # the store DMAs sample io_in at their schedule: drive the k-th value at the k-th fire
    run_len = max(int(pr.program.last_cycle()) for pr in progs.values()) + p.tiles + 4
    io = [[0] * p.tiles for _ in range(run_len)]
    for t, (prog, vals) in stores.items():
        for c, v in zip(prog.program.cycles(), vals, strict=True):
            io[int(c)][t] = v
    cycles += [Cycle(io_in=io[c]) for c in range(run_len)]
    # read the whole GLB back through the host port
    for a in range(p.tiles * p.tile_words):
        cycles.append(Cycle(host_rd=1, host_raddr=a))
    cycles.append(Cycle())
    return p, cycles, preload, mem, loads, stores
