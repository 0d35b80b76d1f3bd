"""Long wires benchmark (issue 39 item 3): staggered tracks of 1, 2 and 4 tiles
(``track_length``; :func:`canal.passes.segment_tracks`) under gaussian, unsharp and harris.

Designs: gaussian and unsharp on the 8x8 array (configs/small.toml), harris (80 PEs) on the
32x16 one (configs/default.toml), each with ``track_length`` overridden (tracks = 5), generated
into ``build/long_wires/<config>_L<L>`` when missing (rules from ``build/rules``). Every run is
the whole flow (map, pack, place with the seed, route, pipeline, bitstream, Verilator
simulation: :func:`mapper.flow.run_app`) on a 64x64 image.

Figures per run (app, L, seed): ``wirelength`` (tile-to-tile track segments used: the SB_IN
nodes of the routes, so a long wire counts every tile it spans), ``mux_hops`` (switch-box
muxes on the routes: SB_OUT nodes with more than one fan-in), ``pass_hops`` (pass-through
SB_OUTs on the routes: tiles crossed on a long wire without a switch), ``fmax`` (MHz, the
published-table timing model: a pass-through costs one tile of wire,
:meth:`canal.timing.TimingModel.pass_through`), ``match`` (bit-exact with numpy and Halide),
``seconds``. Summary per (app, L): the means over the seeds that closed and their ratio to
L = 1 of the same run.

Run: ``.venv/bin/python bench/bench_long_wires.py [--seeds 5] [--lengths 1,2,4]
[--apps gaussian,unsharp,harris] [--fmax MHz]`` (state the cores). Appends to
``bench/results/long_wires.csv``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import benchlib

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cgra.errors import CgraError  # noqa: E402  (the project root on sys.path first)
from garnet.build import generate  # noqa: E402
from garnet.params import load_toml, validate  # noqa: E402
from mapper.backend.pipeline import PipelineParams  # noqa: E402
from mapper.backend.place import PlaceParams  # noqa: E402
from mapper.flow import run_app  # noqa: E402
from mapper.params import AppParams, FlowParams, RunParams  # noqa: E402

APPS = ("gaussian", "unsharp", "harris")
#: the array each app runs on (harris needs 80 PEs: more than the 8x8 has)
CONFIG = {"gaussian": "small", "unsharp": "small", "harris": "default"}
ARRAY = {"small": "8x8", "default": "32x16"}


def design(config: str, length: int) -> Path:
    """``build/long_wires/<config>_L<length>``: configs/<config>.toml with ``track_length``
    overridden, generated when missing."""
    out = ROOT / "build" / "long_wires" / f"{config}_L{length}"
    if not (out / "design.json").is_file():
        params = load_toml(ROOT / "configs" / f"{config}.toml")
        params.track_length = length
        params.name = f"{config}_L{length}"
        validate(params)
        # (no config_file: the parameters are the TOML's with track_length overridden)
        generate(params, out, rules=True, rules_dir=ROOT / "build" / "rules", jobs=2)
    return out


def route_hops(design_dir: Path, run_dir: Path) -> tuple[int, int]:
    """(switch-box muxes, pass-through SB_OUTs) on the routes of ``run_dir`` (distinct
    nodes, every width)."""
    fanin: dict[str, int] = {}
    for f in (design_dir / "routing").glob("graph_*.json"):
        for n in json.loads(f.read_text())["nodes"]:
            if n["kind"] == "SB" and n["io"] == "SB_OUT":
                fanin[n["id"]] = len(n["fanin"])
    routes = json.loads((run_dir / "routing.json").read_text())
    used = {nid for net in routes["nets"] for path in net["paths"] for nid in path["nodes"]}
    sb = [fanin[n] for n in used if n in fanin]
    return sum(1 for k in sb if k > 1), sum(1 for k in sb if k == 1)


def run(app: str, length: int, seed: int, tmp: Path, fmax: float | None = None) -> dict:
    """One run's figures (``ok`` False with the error when the flow failed); ``fmax``:
    pipeline to that target (MHz; compute pipelining and register insertion); ``None``
    (the default, as `cgra run`): toward the timing model's floor; 0: branch-delay matching
    only."""
    d = design(CONFIG[app], length)
    out = tmp / f"{app}_L{length}_s{seed}"
    pipe = (PipelineParams(register_pe_inputs=True, auto_target=True) if fmax is None
            else PipelineParams(register_pe_inputs=True, target_period_ps=1e6 / fmax) if fmax
            else PipelineParams())
    t = time.perf_counter()
    try:
        r = run_app(RunParams(AppParams(app, 64, 64), d, out,
                              flow=FlowParams(place=PlaceParams(seed=seed), pipeline=pipe)))
    except CgraError as exc:
        return {"ok": False, "error": str(exc)[:200]}
    rep = r.report
    mux, passing = route_hops(d, out)
    return {"ok": True, "wirelength": rep["wirelength_total"], "mux_hops": mux,
            "pass_hops": passing, "fmax": rep["timing"]["fmax_mhz"],
            "match": rep["match"] == {"numpy": True, "halide": True},
            "seconds": round(time.perf_counter() - t, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5, help="placement seeds 0..N-1")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--lengths", default="1,2,4")
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--array", choices=("auto", "32x16"), default="auto",
                    help="auto: gaussian and unsharp on 8x8, harris on 32x16; 32x16: every "
                         "app on the 32x16 array")
    ap.add_argument("--fmax", type=float, default=None,
                    help="pipeline to this target (MHz); default: toward the timing model's "
                         "floor, as `cgra run`; 0: branch-delay matching only")
    args = ap.parse_args()
    if args.array == "32x16":
        CONFIG.update({a: "default" for a in CONFIG})
    lengths = [int(x) for x in args.lengths.split(",")]
    rows: list[dict] = []
    got: dict[tuple[str, int], list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-long-wires-") as tmp:
        for app in args.apps.split(","):
            for length in lengths:
                for seed in range(args.first_seed, args.first_seed + args.seeds):
                    p = {"app": app, "array": ARRAY[CONFIG[app]], "track_length": length,
                         "tracks": 5, "seed": seed, "image": "64x64",
                         "fmax_target": args.fmax}
                    r = run(app, length, seed, Path(tmp), args.fmax)
                    if not r["ok"]:
                        rows.append(benchlib.row("long_wires", "closed", 0, "bool",
                                                 {**p, "error": r["error"]}))
                        continue
                    got.setdefault((app, length), []).append(r)
                    for fig, unit in (("wirelength", "segments"), ("mux_hops", "muxes"),
                                      ("pass_hops", "tiles"), ("fmax", "MHz"),
                                      ("match", "bool"), ("seconds", "s")):
                        v = int(r[fig]) if fig == "match" else r[fig]
                        rows.append(benchlib.row("long_wires", fig, v, unit, p))
        for (app, length), rs in sorted(got.items()):
            p = {"app": app, "array": ARRAY[CONFIG[app]], "track_length": length,
                 "runs": len(rs), "image": "64x64", "fmax_target": args.fmax}
            base = got.get((app, 1))
            for fig, unit in (("wirelength", "segments"), ("mux_hops", "muxes"),
                              ("fmax", "MHz")):
                mean = statistics.mean(r[fig] for r in rs)
                rows.append(benchlib.row("long_wires", f"mean_{fig}", round(mean, 2), unit, p))
                if base and length != 1:
                    ref = statistics.mean(r[fig] for r in base)
                    rows.append(benchlib.row("long_wires", f"{fig}_ratio_vs_L1",
                                             round(mean / ref, 3), "x", p))
            rows.append(benchlib.row("long_wires", "bit_exact",
                                     f"{sum(r['match'] for r in rs)}/{len(rs)}", "runs", p))
    benchlib.save_rows("long_wires", rows)


if __name__ == "__main__":
    main()
