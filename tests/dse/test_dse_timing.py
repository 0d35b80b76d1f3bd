"""Issue 40: `cgra dse configs/dse/timing.toml` -- a sweep over tracks and PE variants on the
measured timing model: every point's Fmax names the model it comes from, and the model is
each design point's own (the connection box of a 4-track design is measured slower than
the 3-track one's; the published table has one figure for both)."""
from __future__ import annotations

import csv
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
CGRA = pathlib.Path(sys.executable).parent / "cgra"


#: configs/dse/timing.toml's sweep on one PE (D1 at tracks 3 and 4: the shipped example's
#: D3 points cost another rule table and tile measurement; `cgra dse configs/dse/timing.toml`
#: runs all four)
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


def test_fmax_comes_from_the_measured_model_of_each_design_point(tmp_path):
    sweep = tmp_path / "timing.toml"
    sweep.write_text(SWEEP.format(root=ROOT))
    shipped = (ROOT / "configs" / "dse" / "timing.toml").read_text()
    assert 'base = "../small_measured.toml"' in shipped and "tracks = [3, 4]" in shipped
    res = subprocess.run([str(CGRA), "dse", str(sweep), "--cache", str(tmp_path / "c"),
                          "--rules", str(ROOT / "build" / "rules"), "--workers", "2",
                          "--no-progress"], cwd=ROOT, capture_output=True, text=True,
                         timeout=1200)
    assert res.returncode == 0, res.stderr[-3000:]
    rows = list(csv.DictReader(open(tmp_path / "c" / "results" / "timing" / "results.csv")))
    assert len(rows) == 2 and all(r["status"] == "ok" for r in rows)
    assert all(r["timing_model"].startswith("measured (OpenSTA") for r in rows)
    cb: dict[tuple[str, int], float] = {}
    for d in (tmp_path / "c" / "designs").glob("*/design.json"):
        params = json.loads(d.read_text())["params"]
        timing = json.loads((d.parent / "timing.json").read_text())
        assert timing["source"] == "measured"
        cb[(params["pe"], params["tracks"])] = timing["classes"]["cb:pe"]
    assert len(cb) == 2
    for pe in {p for p, _ in cb}:
        assert cb[(pe, 4)] > cb[(pe, 3)]
    # the Fmax of each point is its own: the rows of one PE at two track counts differ
    fmax = {(r["pe"], int(r["tracks"])): float(r["fmax_mhz"]) for r in rows}
    assert all(f > 0 for f in fmax.values()) and len(set(fmax.values())) > 1
