"""PnR success, static versus hybrid at equal track count (issue 33, "Figures"): the 8x8 of
configs/small_rv.toml (ready-valid, skid FIFOs) with ``tracks`` = 1 and 2, once as is
(static tracks only) and once with a router per tile (``dynamic = {vcs = 4, ids = 64}``,
canal.dynamic). Every app is mapped (``threshold`` = the shift-register threshold: the default
4, and 0, which puts delay lines in MEMs instead of register chains) and placed, routed and
pipelined by the flow of ``cgra run`` (8 placement attempts). Per (tracks, fabric, app,
threshold): ``routed`` (1 = the flow closed), ``dynamic_nets``, ``vcs_used`` (the largest VC
number any link needs + 1; thesis Fig. 3.12: VCs needed), ``vcs_pure_dynamic`` (the VCs the
same placement needs when every core-to-core net is a flow on the mesh: the thesis's pure
dynamic network, 4 VCs there against <= 2 hybrid), ``max_tokens`` and the flow's
``seconds``; a failure's reason is in the row's parameters.

``--sim``: also the stream cycles in Verilator without stalls (the run's bitstream and sim
stages, ``--stall-in 0 --stall-out 0``) of every run that closed, and their tokens per cycle; ``--fabrics static,hybrid,scheduled`` adds the statically scheduled
array (``flow_control = "static"``) of the same size and tracks. ``--apps`` picks apps.

Run: ``.venv/bin/python bench/bench_hybrid.py [--tracks 1,2] [--sim]`` (state the cores).
Appends to ``bench/results/hybrid.csv``.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path

import benchlib

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from canal.dynamic import DynamicNet, allocate_nets  # noqa: E402  (project root first)
from canal.router import MeshParams, RouterParams  # noqa: E402
from canal.vc_alloc import Flow, allocate  # noqa: E402
from cgra.errors import CgraError  # noqa: E402
from garnet.build import generate  # noqa: E402
from garnet.params import load_toml  # noqa: E402
from mapper.backend.dynamic import layer_of  # noqa: E402
from mapper.collateral import load_collateral  # noqa: E402
from mapper.flow import run_stages  # noqa: E402
from mapper.params import AppParams, RunParams, SimOptions  # noqa: E402
from mapper.stages import load_flow  # noqa: E402

APPS = [("gaussian", 1), ("unsharp", 1), ("brighten_blur", 2), ("color_correct", 1),
        ("camera_pipeline", 1), ("bayer_demosaic", 1), ("laplacian_pyramid", 1)]
DYNAMIC = {"vcs": 4, "buffers": 3, "ids": 64}


#: fabric -> (flow_control, dynamic): ready-valid static tracks, hybrid, and (``--sim``) the
#: statically scheduled array of the same size and tracks
FABRICS = {"static": ("ready_valid", {}), "hybrid": ("ready_valid", DYNAMIC),
           "scheduled": ("static", {})}


def designs(tracks: list[int], fabrics: list[str], tmp: Path) -> dict[tuple[int, str], Path]:
    base = load_toml(ROOT / "configs" / "small_rv.toml")
    out = {}
    for t in tracks:
        for fabric in fabrics:
            flow, dyn = FABRICS[fabric]
            p = dataclasses.replace(base, name=f"rv_t{t}_{fabric}", tracks=t, dynamic=dyn,
                                    flow_control=flow)
            d = tmp / p.name
            generate(p, d, rules=True, rules_dir=ROOT / "build" / "rules", jobs=2)
            out[(t, fabric)] = d
    return out


def pure_dynamic_vcs(design: Path, run: Path) -> int:
    """VCs needed when EVERY core-to-core net of the layer's width is a flow on the mesh (the
    thesis's pure dynamic network; no one-injection-per-tile limit, XY routes)."""
    coll = load_collateral(design)
    flow = load_flow(run, coll)
    packed, sites = flow.pipelined.packed, flow.placement.sites
    flows = []
    for n in packed.nets:
        if n.width != 16 or any(packed.instances[i].tag == "r"
                                for i, _ in (n.source, *n.sinks)):
            continue
        dsts = tuple(dict.fromkeys(tuple(sites[i]) for i, _ in n.sinks))
        flows.append(Flow(len(flows), tuple(sites[n.source[0]]), dsts))
    mesh = MeshParams(*coll.size, RouterParams(vcs=32, ids=256))
    return allocate(mesh, flows).vcs_used()


def vcs_used(design: Path, run: Path) -> tuple[int, int, int]:
    """(dynamic nets, VCs needed, most tokens) of a closed run."""
    coll = load_collateral(design)
    flow = load_flow(run, coll)
    dyn = flow.pipelined.routing.dynamic
    if not dyn:
        return 0, 0, 0
    layer = layer_of(coll)
    nets = [DynamicNet(r.id, r.source, tuple((*at, r.tokens.get(t, 0))
                                             for t, at in r.sinks.items()))
            for r in sorted(dyn.values(), key=lambda r: r.id)]
    alloc = allocate_nets(coll.size, layer, nets)
    return len(dyn), alloc.vcs_used(), max(k for r in dyn.values() for k in r.tokens.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tracks", default="1,2")
    ap.add_argument("--thresholds", default="4,0")
    ap.add_argument("--sim", action="store_true")
    ap.add_argument("--apps", default=",".join(a for a, _ in APPS))
    ap.add_argument("--fabrics", default="static,hybrid")
    a = ap.parse_args()
    tracks = [int(t) for t in a.tracks.split(",")]
    apps = [(n, u) for n, u in APPS if n in a.apps.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-hybrid-") as tmp:
        tmp = Path(tmp)
        ds = designs(tracks, a.fabrics.split(","), tmp)
        for (t, fabric), design in ds.items():
            for app, unroll in apps:
                for thr in (int(x) for x in a.thresholds.split(",")):
                    q = {"array": "8x8 configs/small_rv.toml", "tracks": t, "fabric": fabric,
                         "flow_control": FABRICS[fabric][0],
                         "dynamic": DYNAMIC if fabric == "hybrid" else None, "app": app,
                         "unroll": unroll, "threshold": thr, "size": 32}
                    run = tmp / f"{app}_{thr}_{t}_{fabric}"
                    t0 = time.perf_counter()
                    try:
                        run_stages(RunParams(AppParams(app, 32, 32, unroll, threshold=thr),
                                             design, run), "pipeline")
                        ok, why = 1, ""
                    except CgraError as exc:
                        ok, why = 0, str(exc).split(":")[0][:120]
                    secs = round(time.perf_counter() - t0, 2)
                    q["failure"] = why
                    rows.append(benchlib.row("hybrid", "routed", ok, "bool", q))
                    rows.append(benchlib.row("hybrid", "seconds", secs, "s", q))
                    print(f"tracks {t} {fabric:6s} {app:18s} thr {thr}: "
                          f"{'closed' if ok else 'FAILED ' + why} ({secs} s)", flush=True)
                    if not ok:
                        continue
                    n, vcs, tok = vcs_used(design, run)
                    rows += [benchlib.row("hybrid", "dynamic_nets", n, "nets", q),
                             benchlib.row("hybrid", "vcs_used", vcs, "VCs", q),
                             benchlib.row("hybrid", "max_tokens", tok, "tokens", q),
                             benchlib.row("hybrid", "vcs_pure_dynamic",
                                          pure_dynamic_vcs(design, run), "VCs", q)]
                    print(f"    dynamic nets {n}, VCs {vcs} (pure dynamic "
                          f"{rows[-1]['value']}), max tokens {tok}", flush=True)
                    if a.sim:
                        # the same mapping and placement through bitstream and Verilator
                        try:
                            run_stages(RunParams(AppParams(app, 32, 32, unroll, threshold=thr),
                                                 design, run, resume_from="bitstream",
                                                 sim=SimOptions(stall_in=0.0, stall_out=0.0)),
                                       "sim")
                            err = ""
                        except CgraError as exc:
                            err = str(exc)
                        if not err:
                            rep = json.loads((run / "run_report.json").read_text())
                            hs = rep.get("handshake")
                            cyc = hs["cycles"] if hs else rep["cycles"]["stream"]
                            toks = hs["tokens"] if hs else rep["cycles"]["stream"]
                            qs = {**q, "sim_dynamic_nets": rep.get("dynamic", {}).get("nets", 0)}
                            rows += [benchlib.row("hybrid", "cycles", cyc, "cycles", qs),
                                     benchlib.row("hybrid", "tokens_per_cycle",
                                                  round(toks / cyc, 4), "tokens/cycle", qs)]
                            print(f"    cgra run (no stalls): {cyc} cycles, "
                                  f"{qs['sim_dynamic_nets']} dynamic nets", flush=True)
                        else:
                            print(f"    sim failed: {err[:300]}", flush=True)
    benchlib.save_rows("hybrid", rows)


if __name__ == "__main__":
    main()
