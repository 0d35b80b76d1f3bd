"""`cgra dse` on the measured timing model (issue 40, acceptance 4): a sweep over tracks on
configs/small_measured.toml (the 8x8 with ``measured_timing = true``; the shipped sweep
configs/dse/timing.toml, D1 at tracks 3 and 4 here: its D3 points cost another rule table and
tile measurement), where every point's Fmax names the model it comes from and the model is
the point's own: the connection box of the 4-track design is measured slower than the
3-track one's (the published table has one figure for both).

Figures (``bench/results/dse_timing.csv``): per point, Fmax (MHz), the measured connection-box
delay ``cb:pe`` (ps) and the timing model's name; the sweep's seconds. The bench stops with a
message when a point fails, a point's model is not the measured one, the 4-track connection
box is not slower than the 3-track one, or both points have one Fmax.

Run: ``.venv/bin/python bench/bench_dse_timing.py`` (~1.5 min on 2 cores).
"""
from __future__ import annotations

import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from benchlib import row, save_rows  # noqa: E402

NAME = "dse_timing"
CGRA = Path(sys.executable).parent / "cgra"
SWEEP = """[sweep]
base = "{root}/configs/small_measured.toml"
apps = ["gaussian"]
image = [64, 64]
seed = 0
fmax_mhz = 0.0
simulate = false

[grid]
pe = ["D1"]
tracks = [3, 4]
width = [8]
height = [8]
"""


def main() -> None:
    shipped = (ROOT / "configs" / "dse" / "timing.toml").read_text()
    if 'base = "../small_measured.toml"' not in shipped or "tracks = [3, 4]" not in shipped:
        sys.exit("configs/dse/timing.toml no longer sweeps small_measured.toml at tracks 3, 4")
    params = {"base": "configs/small_measured.toml", "app": "gaussian", "image": "64x64",
              "pe": "D1", "tracks": [3, 4], "workers": 2}
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench-dse-timing-") as tmp:
        sweep = Path(tmp) / "timing.toml"
        sweep.write_text(SWEEP.format(root=ROOT))
        t = time.perf_counter()
        res = subprocess.run([str(CGRA), "dse", str(sweep), "--cache", str(Path(tmp) / "c"),
                              "--rules", str(ROOT / "build" / "rules"), "--workers", "2",
                              "--no-progress"], cwd=ROOT, capture_output=True, text=True,
                             timeout=1200)
        if res.returncode != 0:
            sys.exit(f"cgra dse failed: {res.stderr[-2000:]}")
        rows.append(row(NAME, "sweep_seconds", round(time.perf_counter() - t, 1), "s", params))
        out = Path(tmp) / "c"
        points = list(csv.DictReader(open(out / "results" / "timing" / "results.csv")))
        cb: dict[int, float] = {}
        for d in (out / "designs").glob("*/design.json"):
            p = json.loads(d.read_text())["params"]
            timing = json.loads((d.parent / "timing.json").read_text())
            if timing["source"] != "measured":
                sys.exit(f"{d.parent.name}: timing.json source {timing['source']!r}")
            cb[int(p["tracks"])] = float(timing["classes"]["cb:pe"])
        fmax = {}
        for r in points:
            if r["status"] != "ok" or not r["timing_model"].startswith("measured (OpenSTA"):
                sys.exit(f"point {r}: not ok on the measured model")
            k = int(r["tracks"])
            fmax[k] = float(r["fmax_mhz"])
            rows.append(row(NAME, "fmax", fmax[k], "MHz",
                            {**params, "tracks": k, "model": r["timing_model"]}))
            rows.append(row(NAME, "cb_pe_delay", cb[k], "ps", {**params, "tracks": k}))
    save_rows(NAME, rows)
    if not cb[4] > cb[3] or len(set(fmax.values())) < 2:
        sys.exit(f"connection box 3 tracks {cb[3]} ps, 4 tracks {cb[4]} ps; Fmax {fmax}")


if __name__ == "__main__":
    main()
