"""Placement benchmark (issue 36 item 1; AHA §5.3): simulated annealing alone vs analytical
global placement (conjugate gradient on the L2 wirelength with a MEM-column potential) + a
cold annealer, and the power-aware overlap term (Eq. 2, ``gamma``), on the README apps.

For each app, seed and placer: HPWL (tiles), placement seconds (global part separately),
then route + pipeline of that same placement (default pipelining): routed wirelength (track
segments), Fmax (MHz, the design's timing model) and tiles touched (a tile holding a placed
instance or a routed node: the tiles that must stay powered). Both placers run side by side
in one process, seed for seed, so the time ratio is measured under the same load.

Prints one JSON line per figure and appends rows to ``bench/results/placement.csv``.
Run: ``.venv/bin/python bench/bench_placement.py [--seeds 5] [--apps harris,camera_pipeline]``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import default_design, row, save_rows
from canal.graph import parse_id
from cgra.errors import CgraError
from mapper.collateral import load_collateral
from mapper.backend.pack import pack
from mapper.backend.pipeline import pipeline
from mapper.backend.place import PlaceParams, place
from mapper.backend.route import route_design
from mapper.netlist import Netlist
from mapper.params import FlowParams

ROOT = Path(__file__).resolve().parents[1]
#: app -> design it fits (the Makefile's APP_DESIGN)
APPS = {"gaussian": "small", "unsharp": "small", "harris": "default",
        "camera_pipeline": "default"}
PLACERS = {"sa": {"analytical": False}, "analytical": {"analytical": True},
           "analytical+gamma": {"analytical": True, "gamma": 0.2}}


def netlist(app: str, design: Path, tmp: Path) -> Netlist:
    out = tmp / app
    subprocess.run([str(Path(sys.executable).parent / "cgra"), "map", app, "--design", str(design),
                    "--out", str(out)], check=True, capture_output=True, cwd=ROOT)
    return Netlist.from_dict(json.loads((out / "netlist.json").read_text()))


def tiles_touched(pl, rr) -> int:
    tiles = set(pl.sites.values())
    for net in rr.nets.values():
        for n in net.nodes():
            f = parse_id(n)
            tiles.add((f.x, f.y))
    return len(tiles)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--apps", default=",".join(APPS))
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for app in args.apps.split(","):
            design = default_design(APPS[app])
            coll = load_collateral(design)
            packed = pack(netlist(app, design, Path(tmp)), coll)
            place(packed, coll, PlaceParams(analytical=True))      # imports warm
            agg: dict[str, dict[str, list]] = {}
            for seed in range(args.seeds):
                for name, kw in PLACERS.items():
                    pp = PlaceParams(seed=seed, **kw)
                    pl = place(packed, coll, pp)
                    t = time.perf_counter()
                    try:
                        rr = route_design(packed, pl, coll)
                        pr = pipeline(packed, pl, rr, coll, FlowParams().pipeline_params())
                        wl, fmax = rr.total_wirelength(), pr.timing.fmax_mhz
                        touched = tiles_touched(pl, rr)
                    except CgraError as exc:      # a failed route or balance is a figure too
                        wl = fmax = touched = None
                        print(f"{app} seed {seed} {name}: {type(exc).__name__}: {exc}",
                              file=sys.stderr)
                    params = {"app": app, "design": APPS[app], "seed": seed, "placer": name,
                              **{k: v for k, v in kw.items()}}
                    a = agg.setdefault(name, {"hpwl": [], "s": [], "wl": [], "tiles": [],
                                              "fmax": []})
                    a["hpwl"].append(pl.hpwl)
                    a["s"].append(pl.seconds)
                    rows.append(row("placement", "hpwl", pl.hpwl, "tiles", params))
                    rows.append(row("placement", "place_seconds", round(pl.seconds, 3), "s",
                                    {**params, "global_seconds": round(pl.global_seconds, 3)}))
                    if wl is not None:
                        a["wl"].append(wl)
                        a["tiles"].append(touched)
                        a["fmax"].append(fmax)
                        rows.append(row("placement", "wirelength", wl, "segments", params))
                        rows.append(row("placement", "tiles_touched", touched, "tiles", params))
                        rows.append(row("placement", "fmax", round(fmax, 1), "MHz",
                                        {**params, "route_pipeline_s":
                                         round(time.perf_counter() - t, 2)}))
            for name, a in agg.items():
                summary = {k: round(statistics.mean(v), 2) for k, v in a.items() if v}
                print(f"# {app} {name}: mean over {args.seeds} seeds {summary}")
            base = agg["sa"]
            an = agg["analytical"]
            rows.append(row("placement", "hpwl_ratio_analytical_vs_sa",
                            round(sum(an["hpwl"]) / sum(base["hpwl"]), 3), "x",
                            {"app": app, "seeds": args.seeds}))
            rows.append(row("placement", "time_ratio_analytical_vs_sa",
                            round(sum(an["s"]) / sum(base["s"]), 3), "x",
                            {"app": app, "seeds": args.seeds}))
    print(f"-> {save_rows('placement', rows)}")


if __name__ == "__main__":
    main()
