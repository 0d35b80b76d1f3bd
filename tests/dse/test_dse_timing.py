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


def test_fmax_comes_from_the_measured_model_of_each_design_point(tmp_path):
    res = subprocess.run([str(CGRA), "dse", "configs/dse/timing.toml", "--cache",
                          str(tmp_path), "--rules", str(ROOT / "build" / "rules"), "--workers", "2", "--no-progress"], cwd=ROOT,
                         capture_output=True, text=True, timeout=1200)
    assert res.returncode == 0, res.stderr[-3000:]
    rows = list(csv.DictReader(open(tmp_path / "results" / "timing" / "results.csv")))
    assert len(rows) == 4 and all(r["status"] == "ok" for r in rows)
    assert all(r["timing_model"].startswith("measured (OpenSTA") for r in rows)
    cb: dict[tuple[str, int], float] = {}
    for d in (tmp_path / "designs").glob("*/design.json"):
        params = json.loads(d.read_text())["params"]
        timing = json.loads((d.parent / "timing.json").read_text())
        assert timing["source"] == "measured"
        cb[(params["pe"], params["tracks"])] = timing["classes"]["cb:pe"]
    assert len(cb) == 4
    for pe in {p for p, _ in cb}:
        assert cb[(pe, 4)] > cb[(pe, 3)]
    # the Fmax of each point is its own: the rows of one PE at two track counts differ
    fmax = {(r["pe"], int(r["tracks"])): float(r["fmax_mhz"]) for r in rows}
    assert all(f > 0 for f in fmax.values()) and len(set(fmax.values())) > 1
