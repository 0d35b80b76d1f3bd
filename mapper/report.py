"""The back end of the mapper in one call, its JSON report and a picture of the result.

:func:`pnr_flow` runs pack -> place -> route -> pipeline -> bitstream on a mapped netlist and
the collateral, timing each stage. :func:`report` gives the JSON report (schema
``mapper.pnr_report/1``): resources used / available per tile type, placement, wirelength
(track segments), HPWL, routing iterations, registers (netlist, balancing, compute
pipelining, PE input), static timing (critical path, ps), per output stream the extra latency
added by pipelining and its first valid cycle (the shifted output schedule offset, when the
netlist gives one), and seconds per stage. :func:`draw` writes a PNG (matplotlib, Agg backend): tiles coloured by
type, instance names, every routed net as a polyline through its switch-box tracks (16-bit
solid, 1-bit dashed), enabled pipeline registers as red squares.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mapper.bitstream import Bitstream, ConfigMap, MemEncoder, generate
from mapper.netlist import Netlist
from mapper.pack import PackedDesign, PackParams, pack
from mapper.pipeline import PipelineParams, PipelineResult, pipeline
from mapper.place import PlaceParams, Placement, place, site_capacity
from mapper.route import RouterParams, RoutingGraph, RoutingResult, find_graphs, route_design

REPORT_SCHEMA = "mapper.pnr_report/1"
TAG_COLOURS = {"p": "#cfe2f3", "m": "#d9ead3", "I": "#fff2cc", "i": "#fce5cd", "": "#f3f3f3"}


@dataclass
class FlowParams:
    """Parameters of every back-end stage."""

    pack: PackParams = field(default_factory=PackParams)
    place: PlaceParams = field(default_factory=PlaceParams)
    route: RouterParams = field(default_factory=RouterParams)
    pipeline: PipelineParams = field(default_factory=PipelineParams)


@dataclass
class FlowResult:
    """Everything :func:`pnr_flow` produced; ``seconds``: stage -> wall time (s)."""

    packed: PackedDesign
    placement: Placement
    routing: RoutingResult
    pipelined: PipelineResult
    bitstream: Bitstream
    seconds: dict[str, float]


def pnr_flow(netlist: Netlist, graphs: dict[int, RoutingGraph], config_map: ConfigMap,
             params: FlowParams | None = None, mem_encoder: MemEncoder | None = None
             ) -> FlowResult:
    """pack -> place -> route -> pipeline -> bitstream. Errors of each stage propagate
    (:class:`~cgra.errors.MappingError`, ``PlacementError``, ``RoutingError``,
    ``ConfigError``, ``CollateralError``)."""
    p = params or FlowParams()
    secs: dict[str, float] = {}
    t = time.perf_counter()
    packed = pack(netlist, graphs, p.pack)
    secs["pack"] = time.perf_counter() - t
    t = time.perf_counter()
    placement = place(packed, graphs, p.place)
    secs["place"] = time.perf_counter() - t
    t = time.perf_counter()
    routing = route_design(packed, placement, graphs, p.route)
    secs["route"] = time.perf_counter() - t
    t = time.perf_counter()
    piped = pipeline(packed, placement, routing, graphs, p.pipeline)
    secs["pipeline"] = time.perf_counter() - t
    t = time.perf_counter()
    bs = generate(piped.packed, placement, piped.routing, graphs, config_map, mem_encoder)
    secs["bitstream"] = time.perf_counter() - t
    return FlowResult(packed, placement, routing, piped, bs, secs)


def load_design(design_dir: str | Path) -> tuple[dict[int, RoutingGraph], ConfigMap]:
    """The routing graphs (``routing/*.json``) and the config map (``config_map.json``) of a
    collateral directory ``build/<design>``. Raises :class:`~cgra.errors.CollateralError`
    when either is missing or malformed."""
    d = Path(design_dir)
    graphs = find_graphs(d)
    return graphs, ConfigMap.load(d / "config_map.json")


def run_pnr(netlist: Netlist, design_dir: str | Path, out_dir: str | Path,
            params: FlowParams | None = None, mem_encoder: MemEncoder | None = None
            ) -> FlowResult:
    """Load the collateral of ``design_dir``, run :func:`pnr_flow` and write into ``out_dir``:
    ``<app>.bs`` / ``<app>.bs.json`` (bitstream), ``pnr_report.json`` and ``pnr.png``."""
    t = time.perf_counter()
    graphs, cm = load_design(design_dir)
    load_s = time.perf_counter() - t
    flow = pnr_flow(netlist, graphs, cm, params, mem_encoder)
    flow.seconds = {"load_collateral": load_s, **flow.seconds}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    flow.bitstream.save(out)
    save_report(flow, graphs, out / "pnr_report.json")
    draw(flow, graphs, out / "pnr.png")
    return flow


def report(flow: FlowResult, graphs: dict[int, RoutingGraph]) -> dict[str, Any]:
    """The JSON report of a :class:`FlowResult` (see the module docstring)."""
    pk, pl, pr = flow.packed, flow.placement, flow.pipelined
    caps = site_capacity(graphs)
    avail: dict[str, int] = {}
    for c, sites in caps.items():
        key = c[0] if len(c) == 1 else f"r{c[1]}"
        avail[key] = avail.get(key, 0) + sum(sites.values())
    used = pk.counts()
    rg0 = next(iter(graphs.values()))
    return {
        "schema": REPORT_SCHEMA,
        "design": pk.name,
        "array": list(rg0.size),
        "resources": {"used": used, "available": avail,
                      "absorbed_registers": len(pk.absorbed_regs),
                      "folded_constants": len(pk.folded_consts)},
        "placement": {n: list(xy) for n, xy in pl.sites.items()},
        "placement_cost": round(pl.cost, 3),
        "hpwl_tiles": pl.hpwl,
        "seed": pl.seed,
        "alpha": pl.alpha,
        "wirelength_segments": {str(w): v for w, v in flow.routing.wirelength.items()},
        "wirelength_total": flow.routing.total_wirelength(),
        "routing_iterations": {str(w): v for w, v in flow.routing.iterations.items()},
        "registers": {"netlist_on_reg_sites": len(flow.routing.reg_sites),
                      "balancing": len(pr.enabled_regs),
                      "compute_pipelining": len(pr.forced_regs),
                      "pe_input_balancing": len(pr.pe_input_regs),
                      "mem_absorbed_cycles": sum(pr.mem_absorbed.values())},
        "timing": pr.timing.to_dict(),
        "extra_output_latency_cycles": pr.output_latency,
        "outputs": {inst: {"extra_latency_cycles": lat,
                           "first_valid_cycle": pr.packed.instances[inst].config.get(
                               "program", {}).get("schedule", {}).get("offset")}
                    for inst, lat in pr.output_latency.items()},
        "bitstream_words": len(flow.bitstream.entries),
        "stage_seconds": {k: round(v, 4) for k, v in flow.seconds.items()},
    }


def save_report(flow: FlowResult, graphs: dict[int, RoutingGraph], path: str | Path) -> dict:
    """Write :func:`report` as JSON to ``path``; returns the report."""
    rep = report(flow, graphs)
    Path(path).write_text(json.dumps(rep, indent=1) + "\n")
    return rep


def _node_xy(rg: RoutingGraph, nid: str, tracks: int) -> tuple[float, float]:
    a = rg.g.nodes[nid]
    x, y = a["x"], a["y"]
    kind = a["kind"]
    if kind == "PORT":
        k = sum(ord(c) for c in nid) % 7
        return x - 0.15 + 0.05 * k, y + 0.1 - 0.03 * k
    t = a["track"] or 0
    off = -0.35 + 0.7 * (t + 0.5) / max(tracks, 1)
    edge = {"SB": 0.47 if a["io"] == "SB_IN" else 0.40, "REG": 0.33, "RMUX": 0.43}[kind]
    if kind == "SB" and a["io"] == "SB_IN":
        off += 0.04
    side = a["side"]
    if side == "NORTH":
        return x + off, y - edge
    if side == "SOUTH":
        return x + off, y + edge
    if side == "EAST":
        return x + edge, y + off
    return x - edge, y + off


def draw(flow: FlowResult, graphs: dict[int, RoutingGraph], path: str | Path,
         title: str | None = None) -> Path:
    """Write a PNG of the placed and routed design to ``path`` (see the module docstring)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    rg0 = next(iter(graphs.values()))
    cols, rows = rg0.size
    fig, ax = plt.subplots(figsize=(max(6, cols * 1.1), max(6, rows * 1.1)), dpi=110)
    for (x, y), t in rg0.tiles.items():
        ax.add_patch(Rectangle((x - 0.45, y - 0.45), 0.9, 0.9, facecolor=TAG_COLOURS.get(
            t.tag, "#eeeeee"), edgecolor="#999999", linewidth=0.6))
        ax.text(x - 0.42, y - 0.30, t.tag or ".", fontsize=6, color="#777777")
    labels: dict[tuple[int, int], list[str]] = {}
    for inst, xy in flow.placement.sites.items():
        if flow.packed.instances[inst].tag != "r":
            labels.setdefault(tuple(xy), []).append(inst)
    for (x, y), names in labels.items():
        ax.text(x, y, "\n".join(n[:12] for n in names), fontsize=5, ha="center", va="center")
    cmap = plt.get_cmap("tab20")
    routing = flow.pipelined.routing
    for k, r in enumerate(routing.nets.values()):
        rg = graphs[r.width]
        tracks = int(rg.params.get("tracks", 5))
        colour = cmap(k % 20)
        for a, b in r.edges():
            (x0, y0), (x1, y1) = _node_xy(rg, a, tracks), _node_xy(rg, b, tracks)
            ax.plot([x0, x1], [y0, y1], color=colour, linewidth=0.9,
                    linestyle="-" if r.width > 1 else "--")
        for n in r.nodes():
            if n.startswith("REG:"):
                x0, y0 = _node_xy(rg, n, tracks)
                ax.plot([x0], [y0], marker="s", markersize=3, color="red")
    ax.set_xlim(-0.6, cols - 0.4)
    ax.set_ylim(rows - 0.4, -0.6)
    ax.set_aspect("equal")
    ax.set_xticks(range(cols))
    ax.set_yticks(range(rows))
    pr = flow.pipelined
    ax.set_title(title or f"{flow.packed.name}: {flow.routing.total_wirelength()} segments, "
                 f"critical path {pr.timing.period_ps:.0f} ps", fontsize=9)
    out = Path(path)
    fig.savefig(out)
    plt.close(fig)
    return out
