"""A hybrid array with flits narrower than a word (issue 33 item 3, "flit width"):
configs/tiny_hybrid.toml with ``flit_width = 8``, so a 16-bit word crosses the dynamic layer
as 2 flits (LSB part first, reassembled at the ejection buffer). `cgra run brighten_blur
--unroll 2 --size 16` overflows nets to the routers and runs bit-exact with numpy and Halide
under the default random stalls, and the cycle model of both layers (canal.rv_netsim with
canal.netsim's routers) predicts the RTL's cycles exactly. The RTL of multi-flit words is
also in `make test` (tests/canal/test_dynamic_array.py, 6-bit flits, 3 per word).

Figures (``bench/results/hybrid_flits.csv``): the fabric name, RTL and model cycles, input
stall and output backpressure cycles, ``bit_exact``, the run's seconds. The bench stops with
a message when the run is not bit-exact or the model's cycles differ from the RTL's.

Run: ``.venv/bin/python bench/bench_hybrid_flits.py`` (~1 min on 2 cores).
"""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from benchlib import row, save_rows  # noqa: E402
from garnet.build import generate  # noqa: E402
from garnet.params import load_toml  # noqa: E402

NAME = "hybrid_flits"
CGRA = Path(sys.executable).with_name("cgra")
APP = ("brighten_blur", "--unroll", "2", "--size", "16")


def main() -> None:
    p = load_toml(ROOT / "configs" / "tiny_hybrid.toml")
    p = dataclasses.replace(p, name="tiny_hybrid_f8", dynamic={**p.dynamic, "flit_width": 8})
    design = ROOT / "build" / "tiny_hybrid_f8"
    generate(p, design, rules=True, rules_dir=ROOT / "build" / "rules", jobs=2)
    fabric = json.loads((design / "design.json").read_text())["flow_control"]["dynamic"][
        "fabric_name"]
    out = ROOT / "build" / "apps" / "hybrid_flits"
    t = time.perf_counter()
    r = subprocess.run([str(CGRA), "run", *APP, "--design", str(design), "--out", str(out)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"cgra run on {design}: {r.stderr[-2000:]}")
    params = {"config": "configs/tiny_hybrid.toml", "flit_width": 8, "fabric": fabric,
              "app": " ".join(APP)}
    rows = [row(NAME, "run_seconds", round(time.perf_counter() - t, 1), "s", params)]
    hs = json.loads((out / "run_report.json").read_text())["handshake"]
    exact = "bit-exactly" in r.stdout and "overflowed to the dynamic layer" in r.stdout
    rows.append(row(NAME, "bit_exact", exact, "bool", params))
    rows.append(row(NAME, "cycles_rtl", hs["cycles"], "cycles", params))
    rows.append(row(NAME, "cycles_model", hs["model_cycles"], "cycles", params))
    rows.append(row(NAME, "input_stall_cycles", hs["input_stall_cycles"], "cycles", params))
    rows.append(row(NAME, "output_backpressure_cycles", hs["output_backpressure_cycles"],
                    "cycles", params))
    save_rows(NAME, rows)
    if fabric != "H-x1-v2-b3-f8-db" or not exact or hs["model_cycles"] != hs["cycles"]:
        sys.exit(f"{fabric}: bit-exact {exact}, RTL {hs['cycles']} cycles, model "
                 f"{hs['model_cycles']}")


if __name__ == "__main__":
    main()
