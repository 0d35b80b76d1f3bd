"""GLB figures (AHA paper §4.4, Fig. 12; §6): the GLB tile's yosys cell count; the RTL
(Icarus) against the cycle-level model on a random DMA program; configuration cycles of
harris (default 32x16 array) and of the full array through the GLB (broadcast, unicast,
unicast + row multicast) against today's single config port (one word per cycle), all in
the same model; the tiled executor's throughput on a 512x512 gaussian with and without
double buffering against the array's 1 pixel/cycle; the functional platform's run time.

Prints one JSON line per figure and appends them to bench/results/glb.csv. Run:
``.venv/bin/python bench/bench_glb.py`` (~1 min on 2 cores once build/default exists).
Cells are counted after ``proc; flatten; opt; memory -nomap; opt; techmap; opt`` (generic
gates; each SRAM lane kept as one ``$mem`` cell, reported apart).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from benchlib import default_design, row, save_rows  # noqa: E402
from garnet.glb.confignet import read_bitstream, simulate  # noqa: E402
from garnet.glb.params import GlbParams, load_toml  # noqa: E402
from garnet.glb.rtl import tile_verilog  # noqa: E402
from garnet.glb.sim import random_scenario, run_model, run_rtl  # noqa: E402
from garnet.glb.model import Cycle  # noqa: E402
from mapper.flow import run_stages  # noqa: E402
from mapper.params import AppParams, RunParams  # noqa: E402
from runtime import CommandQueue, Context, get_device  # noqa: E402
from runtime.tiled import TiledExecutor  # noqa: E402

NAME = "glb"


def yosys_cells(p: GlbParams, work: Path) -> tuple[int, int]:
    """(logic cells, $mem cells) of ``glb_tile``."""
    v = work / "glb_tile.v"
    v.write_text(tile_verilog(p))
    script = (f"read_verilog {v}; hierarchy -top glb_tile; proc; flatten; opt; memory -nomap; "
              f"opt; techmap; opt; stat")
    out = subprocess.run(["yosys", "-q", "-p", script + "; tee -o " + str(work / "stat.txt") +
                          " stat"], capture_output=True, text=True, check=True)
    del out
    text = (work / "stat.txt").read_text()
    total = int(re.search(r"Number of cells:\s+(\d+)", text).group(1))
    mems = sum(int(n) for n in re.findall(r"\$mem\w*\s+(\d+)", text))
    return total - mems, mems


def config_figures(p: GlbParams, words: list[tuple[int, int]], height: int, what: str,
                   rows: list[dict]) -> None:
    serial = simulate(p, words, height, "serial").cycles
    rows.append(row(NAME, f"config cycles {what}: single port", serial, "cycles",
                    {"words": len(words)}))
    for mode, rm in (("broadcast", False), ("unicast", False), ("unicast", True)):
        r = simulate(p, words, height, mode, rm)
        label = mode + (" + row multicast" if rm else "")
        rows.append(row(NAME, f"config cycles {what}: {label}", r.cycles, "cycles",
                        {"words": len(words), "streams": r.streams}))
        rows.append(row(NAME, f"config speedup {what}: {label} vs single port",
                        round(serial / r.cycles, 2), "x", {"aha_fig12": 20.7 if "harris" in what
                                                          else 25.3}))


def main() -> None:
    rows: list[dict] = []
    p = load_toml(ROOT / "configs" / "default_glb.toml")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        t = time.perf_counter()
        logic, mems = yosys_cells(p, work)
        rows.append(row(NAME, "glb_tile logic cells (yosys, generic gates)", logic, "cells",
                        {**p.to_dict(), "yosys_seconds": round(time.perf_counter() - t, 1)}))
        rows.append(row(NAME, "glb_tile SRAM arrays ($mem cells)", mems, "cells",
                        {"bits_per_tile": p.tile_words * p.word_width}))
        # the RTL in Icarus and in Verilator against the model: a chained random DMA run
        q = GlbParams(tiles=3, bank_words=32)
        gp, cycles, preload, _mem, _l, _s = random_scenario(q, 3, True)
        pre = [Cycle(RESET=1)] + [Cycle(host_wr=1, host_waddr=t * q.tile_words + b * q.bank_words
                                        + w, host_wdata=v) for (t, b, w), v in preload.items()]
        t = time.perf_counter()
        model_rows, _m = run_model(q, cycles, preload)
        model_s = time.perf_counter() - t
        for sim in ("icarus", "verilator"):
            t = time.perf_counter()
            rtl = run_rtl(q, pre + cycles, work / sim, sim)[len(pre):]
            rows.append(row(NAME, f"GLB RTL ({sim}) == model, chained random DMA run",
                            int(rtl == model_rows), "bool",
                            {"cycles": len(cycles), "build_and_run_s":
                             round(time.perf_counter() - t, 1), "model_s": round(model_s, 3)}))
        # harris and the full array on the default 32x16
        design = default_design()
        run = work / "harris"
        t = time.perf_counter()
        run_stages(RunParams(AppParams("harris"), design, run), "bitstream")
        words = read_bitstream(run / "harris.bs")
        rows.append(row(NAME, "harris compile to bitstream", round(time.perf_counter() - t, 1),
                        "s", {"design": "default"}))
        height = json.loads((design / "design.json").read_text())["params"]["height"]
        config_figures(p, words, height, "harris", rows)
        cmap = json.loads((design / "config_map.json").read_text())
        regs = sorted({f["addr"] for f in cmap["fields"]})
        full = [(a, 0) for a in regs]
        serial = simulate(p, full, height, "serial").cycles
        uni = simulate(p, full, height, "unicast").cycles
        rows.append(row(NAME, "config cycles full array: single port", serial, "cycles",
                        {"registers": len(regs)}))
        rows.append(row(NAME, "config cycles full array: unicast", uni, "cycles",
                        {"registers": len(regs)}))
        rows.append(row(NAME, "config speedup full array: unicast vs single port",
                        round(serial / uni, 2), "x", {"aha_fig12": 25.3}))
        # tiled executor: gaussian (64x64 program) over 512x512
        small = default_design("small")
        grun = work / "gaussian"
        run_stages(RunParams(AppParams("gaussian"), small, grun), "bitstream")
        dev = get_device("cgra-gen", "functional", "1")
        ctx = Context(dev)
        img = np.random.default_rng(0).integers(0, 256, size=(512, 512))
        t = time.perf_counter()
        res = TiledExecutor(ctx, ctx.program(grun)).run(img)
        wall = time.perf_counter() - t
        rows.append(row(NAME, "tiled gaussian 512x512: pixels/cycle, double buffered",
                        round(res.pixels_per_cycle, 3), "px/cycle",
                        {"tiles": res.tiles, "cycles": res.cycles_double_buffered,
                         "array_rate": 1.0}))
        rows.append(row(NAME, "tiled gaussian 512x512: pixels/cycle, sequential",
                        round(res.pixels_per_cycle_sequential, 3), "px/cycle",
                        {"tiles": res.tiles, "cycles": res.cycles_sequential}))
        rows.append(row(NAME, "functional platform: 512x512 gaussian queue wall time",
                        round(wall, 3), "s", {"tiles": res.tiles}))
        # the same queue (one 64x64 gaussian) on both platforms
        img64 = img[:64, :64]
        outs = {}
        for plat in ("functional", "verilator"):
            pctx = Context(get_device("cgra-gen", plat, "1"))
            prog = pctx.program(grun)
            if plat == "verilator":
                t = time.perf_counter()
                pctx.device.platform.execute(prog, {"input": img64})   # builds the harness
                rows.append(row(NAME, "verilator platform: first run (harness build)",
                                round(time.perf_counter() - t, 1), "s", {"design": "small"}))
            cq = CommandQueue(pctx)
            bi, bo = pctx.buffer((64, 64)), pctx.buffer((62, 62))
            t = time.perf_counter()
            cq.write(bi, img64)
            er = cq.run(prog, {"input": bi}, bo)
            outs[plat] = cq.read(bo).wait().result
            rows.append(row(NAME, f"{plat} platform: 64x64 gaussian queue wall time",
                            round(time.perf_counter() - t, 3), "s", {"run_cycles": er.cycles}))
        rows.append(row(NAME, "platforms agree on the 64x64 gaussian",
                        int(bool((outs["functional"] == outs["verilator"]).all())), "bool", {}))
    save_rows(NAME, rows)
    print(json.dumps({"bench": NAME, "figures": len(rows)}))


if __name__ == "__main__":
    main()
