"""Pond vs no pond (issue 39 item 4): the PE tiles' register file (the "pond", AHA paper
Sec. 4.2; Lake's pond_32x16: 32 x 16-bit registers, 1 in + 1 out) used by buffer mapping for
short-reuse delay lines (mapper.mapping.memory step 5; unified-buffer paper Sec. 5), on
configs/small_pond.toml (8x8). Every app runs twice on the same design: with the pond
(``AppParams.pond = True``, the default) and without (``pond = False``: registers and MEM
tiles only, as on configs/small.toml), each on the generated RTL in Verilator and compared
bit-exactly with numpy and Halide.

Figures per app and variant (``params``: app, image, variant, seed): ``mem_count`` (MEM tiles),
``pond_count`` (ponds used), ``netlist_registers`` (registers of the memory mapping),
``route_registers`` (pipeline registers enabled on routes: netlist registers on register
sites + balancing + compute pipelining, the run report's ``registers``), ``pe_input_cycles``
(PE input-register cycles of delay balancing), ``cycles`` (stream cycles), ``match`` (1 =
bit-exact). Apps: gaussian and unsharp on a 32x32 image (their two row buffers of 30 cycles
fit a pond), the DNN layer resnet_layer at CI size (input 6x6x4, 4 output channels, 2 x 2
channel blocking: its two accumulation buffers of 16 partial sums fit a pond; the operand
and flag buffers stay on MEM tiles), and harris at 32x32 (8x8 is too small for its 80 PEs:
counts from the mapping only).

Run: ``.venv/bin/python bench/bench_pond.py [--apps gaussian,unsharp] [--size 32]
[--design build/small_pond] [--seed 0]`` (state the cores). Appends to
``bench/results/pond.csv``.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import benchlib

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lake.collateral import MemInfo, collateral  # noqa: E402  (the project root first)
from mapper.apps import lower_app  # noqa: E402
from mapper.backend.place import PlaceParams  # noqa: E402
from mapper.flow import run_app  # noqa: E402
from mapper.mapping.memory import map_memory  # noqa: E402
from mapper.params import AppParams, FlowParams, RunParams  # noqa: E402
from mapper.stages import read_app  # noqa: E402

APPS = ("gaussian", "unsharp", "resnet_layer")
#: DNN layers: (side, channels, block) of the runs (tests/e2e/test_e2e_dnn.py's CI size)
LAYERS = {"resnet_layer": (6, 4, 2)}
#: apps whose pond vs no-pond counts are reported from the mapping alone
MAPPING_ONLY = ("harris",)


def route_registers(rep: dict) -> int:
    """Pipeline registers enabled on routes (run report ``registers``)."""
    r = rep["registers"]
    return int(r["netlist_on_reg_sites"] + r["balancing"] + r["compute_pipelining"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--size", type=int, default=32, help="square image side (pixels)")
    ap.add_argument("--design", default=None,
                    help="design directory (default build/small_pond, generated)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    design = Path(args.design) if args.design else benchlib.default_design("small_pond")
    rows: list[dict] = []
    size = args.size
    with tempfile.TemporaryDirectory(prefix="bench-pond-") as tmp:
        for app in args.apps.split(","):
            for variant, pond in (("pond", True), ("no_pond", False)):
                side, channels, block = LAYERS.get(app, (size, None, None))
                q = {"app": app, "image": f"{side}x{side}", "variant": variant,
                     "seed": args.seed, "design": design.name,
                     **({"channels": channels, "block": block} if channels else {})}
                out = Path(tmp) / f"{app}_{variant}"
                r = run_app(RunParams(AppParams(app, side, side, channels=channels,
                                                block=block, pond=pond), design, out,
                                      FlowParams(place=PlaceParams(seed=args.seed))))
                counts = read_app(out)["counts"]
                rep = r.report
                for fig, value, unit in (
                        ("mem_count", counts["mem"], "tiles"),
                        ("pond_count", counts.get("pond", 0), "ponds"),
                        ("netlist_registers", counts["reg"], "registers"),
                        ("route_registers", route_registers(rep), "registers"),
                        ("pe_input_cycles", rep["registers"]["pe_input_balancing_cycles"],
                         "cycles"),
                        ("cycles", rep["cycles"]["stream"] if "cycles" in rep
                         else rep["layer"]["cycles"], "cycles"),
                        ("match", int(rep["match"] == {"numpy": True, "halide": True}),
                         "bool")):
                    rows.append(benchlib.row("pond", fig, value, unit, q))
        pond = MemInfo.from_json(collateral("pond_32x16"))
        mem = MemInfo.from_json(collateral("dualport_2048x16"))
        for app in MAPPING_ONLY:
            for variant, p in (("pond", pond), ("no_pond", None)):
                c = map_memory(lower_app(app, size, size, 1), mem, pond=p).counts()
                q = {"app": app, "image": f"{size}x{size}", "variant": variant,
                     "mapping_only": True}
                rows.append(benchlib.row("pond", "mem_count", c["mem"], "tiles", q))
                rows.append(benchlib.row("pond", "pond_count", c["pond"], "ponds", q))
                rows.append(benchlib.row("pond", "netlist_registers", c["reg"], "registers",
                                         q))
    benchlib.save_rows("pond", rows)


if __name__ == "__main__":
    main()
