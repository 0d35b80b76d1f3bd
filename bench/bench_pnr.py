"""Place-and-route benchmark: pack / place / route / pipeline / bitstream time, wirelength,
routing iterations and critical path for synthetic stencil netlists (the structure memory and
compute mapping produce; 3x3 = gaussian-sized: 17 PEs, 2 MEMs, 6 registers) on 8x8 and 32x16
arrays built with canal (5 tracks, 16- and 1-bit, pipeline registers on every track).

Prints one JSON line per figure and appends rows to ``bench/results/pnr.csv``.
Run: ``.venv/bin/python bench/bench_pnr.py``.
"""
from __future__ import annotations

import csv
import functools
import json
import os
import tempfile
import time
from pathlib import Path

from canal.collateral import dump_json
from canal.passes import InterconnectParams, build_uniform, io_on_edges
from cgra.config import ConfigField
from cgra.core import CoreSpec, PortSpec
from mapper.collateral import load_fabric
from mapper.params import FlowParams
from mapper.closure import back_end
from mapper.backend.pack import stencil_netlist
from mapper.backend.pipeline import PipelineParams
from mapper.backend.place import PlaceParams

RESULTS = Path(__file__).parent / "results" / "pnr.csv"


def _no_rtl():
    raise RuntimeError("the PnR benchmark builds no RTL")


PE = CoreSpec("bench_pe", "p", (PortSpec("data0", 16, "in"), PortSpec("data1", 16, "in"),
                                PortSpec("bit0", 1, "in"), PortSpec("res", 16, "out"),
                                PortSpec("res_p", 1, "out")),
              (ConfigField("inst", 24), ConfigField("data0_reg_en", 1),
               ConfigField("data1_reg_en", 1)), _no_rtl, {"timing_class": "pe"})
MEM = CoreSpec("bench_mem", "m", (PortSpec("data_in_0", 16, "in"),
                                  PortSpec("data_out_0", 16, "out")),
               (ConfigField("write_offset", 16), ConfigField("read_offset", 16)), _no_rtl,
               {"timing_class": "mem"})
IO = CoreSpec("bench_io", "I", (PortSpec("f2io_16", 16, "in"), PortSpec("io2f_16", 16, "out"),
                                PortSpec("f2io_1", 1, "in"), PortSpec("io2f_1", 1, "out")),
              (), _no_rtl, {"timing_class": "io"})


def mem_encoder(inst, config, ports):
    """The bench MEM core's two fields from the (shifted) port programs."""
    return {"write_offset": ports["in0"]["schedule"]["offset"],
            "read_offset": ports["out0"]["schedule"]["offset"]}


@functools.lru_cache(maxsize=None)
def array(w: int, h: int, tmp: str):
    t = time.perf_counter()
    core = io_on_edges(lambda x, y: MEM if x % 4 == 3 else PE, IO, w, h)
    ic = build_uniform(InterconnectParams(w, h, tracks=5), core)
    paths = []
    for width, g in ic.graphs.items():
        p = Path(tmp) / f"routing_{w}x{h}_{width}.json"
        dump_json(g, p)
        paths.append(p)
    build_s = time.perf_counter() - t
    t = time.perf_counter()
    coll = load_fabric(paths, ic.timing)
    return coll, build_s, time.perf_counter() - t


def emit(rows: list[dict], figure: str, value, unit: str, params: dict) -> None:
    row = {"bench": "pnr", "figure": figure, "value": value, "unit": unit, "params": params}
    print(json.dumps(row), flush=True)
    rows.append(row)


def main() -> None:
    rows: list[dict] = []
    cores = os.cpu_count()
    with tempfile.TemporaryDirectory() as tmp:
        for (w, h), kernels in (((8, 8), (3,)), ((32, 16), (3, 5))):
            coll, build_s, load_s = array(w, h, tmp)
            base = {"array": f"{w}x{h}", "cores": cores}
            emit(rows, "load_collateral_s", round(load_s, 3), "s", base)
            for k in kernels:
                nl = stencil_netlist(f"stencil{k}x{k}", kh=k, kw=k, image_width=64)
                for analytical in (False, True):
                    params = {**base, "kernel": f"{k}x{k}", "analytical": analytical,
                              "instances": len(nl.instances), "nets": len(nl.nets)}
                    fp = FlowParams(place=PlaceParams(seed=0, analytical=analytical),
                                    pipeline=PipelineParams(latency={"p": 1},
                                                            target_period_ps=1500.0))
                    t = time.perf_counter()
                    fr = back_end(nl, coll, fp, mem_encoder)
                    total = time.perf_counter() - t
                    for stage, s in fr.seconds.items():
                        emit(rows, f"{stage}_s", round(s, 3), "s", params)
                    emit(rows, "pnr_total_s", round(total, 3), "s", params)
                    emit(rows, "hpwl", fr.placement.hpwl, "tiles", params)
                    emit(rows, "wirelength", fr.routing.total_wirelength(), "segments", params)
                    emit(rows, "routing_iterations", max(fr.routing.iterations.values()),
                         "iterations", params)
                    emit(rows, "critical_path", round(fr.pipelined.timing.period_ps, 1), "ps",
                         params)
                    emit(rows, "extra_latency", max(fr.pipelined.output_latency.values()),
                         "cycles", params)
                    emit(rows, "pipeline_registers", len(fr.pipelined.enabled_regs)
                         + len(fr.pipelined.forced_regs), "registers", params)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    new = not RESULTS.exists()
    with RESULTS.open("a", newline="") as f:
        wr = csv.writer(f)
        if new:
            wr.writerow(["time", "bench", "figure", "value", "unit", "params"])
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        for r in rows:
            wr.writerow([stamp, r["bench"], r["figure"], r["value"], r["unit"],
                         json.dumps(r["params"], sort_keys=True)])


if __name__ == "__main__":
    main()
