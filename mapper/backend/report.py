"""The back end's JSON report and a picture of the placed and routed design.

:func:`report` gives the JSON report (schema ``mapper.pnr_report/1``): resources used /
available per tile type, placement, wirelength (track segments), HPWL, routing iterations,
registers (netlist, balancing, compute pipelining, PE inputs delayed and their cycles: more
than one per input with ``DELAY<k>`` modes), static timing (critical path,
ps), per output stream the extra latency added by pipelining and its first valid cycle (the
shifted output schedule offset, when the netlist gives one), seconds per stage, the Fmax,
registers and latency after each pipelining pass (``passes``), the Fmax of the same routes
with no pipeline register (``timing_unpipelined``, :func:`mapper.backend.pipeline.unpipelined_timing`)
and the placements that failed
before the one kept (``placement_attempts``: seed, stage, error), and the placement exponent
sweep when one ran (``alpha_sweep``: alpha, seed, fmax_mhz, registers, kept), register-chain
absorption (``absorption``: :func:`mapper.backend.absorb.absorb_chains`'s report, ``null`` when off) and
the MEM delay lines of the design (``delay_lines``: mem, net, cycles, sinks), and the power
domains (``power``: :func:`mapper.backend.power.power_summary`, tiles on / gated / used /
unused; ``energy`` after a sim with the energy estimate, :mod:`mapper.sim.energy`).
:func:`draw` writes a PNG (matplotlib, Agg backend): tiles coloured by type (the unused
tiles, which ``--power-gate`` gates, hatched and faded), instance names,
every routed net as a polyline through its switch-box tracks (16-bit solid, 1-bit dashed),
enabled pipeline registers as red squares. The stages themselves are driven by
:mod:`mapper.flow`.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from canal.routing import RoutingGraph
from mapper.backend.absorb import delay_lines_of
from mapper.backend.place import site_capacity
from mapper.backend.power import gated_tiles, power_summary
from canal.graph import IO, NodeKind, parse_id
from cgra.errors import CollateralError

if TYPE_CHECKING:
    from mapper.collateral import Collateral
    from mapper.stages import FlowResult

REPORT_SCHEMA = "mapper.pnr_report/1"
TAG_COLOURS = {"p": "#cfe2f3", "m": "#d9ead3", "I": "#fff2cc", "i": "#fce5cd", "": "#f3f3f3"}


def report(flow: FlowResult, coll: Collateral) -> dict[str, Any]:
    """The JSON report of a :class:`mapper.stages.FlowResult` (see the module docstring)."""
    pk, pl, pr = flow.packed, flow.placement, flow.pipelined
    caps = site_capacity(coll)
    avail: dict[str, int] = {}
    for c, sites in caps.items():
        key = c[0] if len(c) == 1 else f"r{c[1]}"
        avail[key] = avail.get(key, 0) + sum(sites.values())
    used = pk.counts()
    return {
        "schema": REPORT_SCHEMA,
        "design": pk.name,
        "array": list(coll.size),
        "resources": {"used": used, "available": avail,
                      "absorbed_registers": len(pk.absorbed_regs),
                      "folded_constants": len(pk.folded_consts)},
        "placement": {n: list(xy) for n, xy in pl.sites.items()},
        "placement_cost": round(pl.cost, 3),
        "hpwl_tiles": pl.hpwl,
        "placer": {"method": pl.method, "seconds": round(pl.seconds, 3),
                   "global_seconds": round(pl.global_seconds, 3),
                   "net_box_overlap_tiles": pl.overlap},
        "seed": pl.seed,
        "alpha": pl.alpha,
        "wirelength_segments": {str(w): v for w, v in flow.routing.wirelength.items()},
        "wirelength_total": flow.routing.total_wirelength(),
        "routing_iterations": {str(w): v for w, v in flow.routing.iterations.items()},
        "registers": {"netlist_on_reg_sites": len(flow.routing.reg_sites),
                      "balancing": len(pr.enabled_regs),
                      "compute_pipelining": len(pr.forced_regs),
                      "pe_input_balancing": len(pr.pe_input_regs),
                      "pe_input_balancing_cycles": sum(pr.pe_input_delay.values()),
                      "mem_absorbed_cycles": sum(pr.mem_absorbed.values())},
        "timing": pr.timing.to_dict(),
        "timing_unpipelined": None if pr.unpipelined is None else {
            "period_ps": round(pr.unpipelined.period_ps, 2),
            "fmax_mhz": round(pr.unpipelined.fmax_mhz, 2)},
        "extra_output_latency_cycles": pr.output_latency,
        "outputs": {inst: {"extra_latency_cycles": lat,
                           "first_valid_cycle": pr.packed.instances[inst].config.get(
                               "program", {}).get("schedule", {}).get("offset")}
                    for inst, lat in pr.output_latency.items()},
        "bitstream_words": len(flow.bitstream.entries) if flow.bitstream else None,
        "stage_seconds": {k: round(v, 4) for k, v in flow.seconds.items()},
        "passes": [r.to_dict() for r in pr.passes],
        "placement_attempts": list(flow.attempts),
        "alpha_sweep": list(flow.alpha_sweep),
        "absorption": flow.absorption,
        "delay_lines": delay_lines_of(pk, pr.mem_absorbed),
        # power domains (mapper.backend.power): tiles used / unused; the bitstream stage
        # rewrites it with its own power state (gated or not)
        "power": power_summary(coll, pl, pr.routing, False),
    }


def save_report(flow: FlowResult, coll: Collateral, path: str | Path) -> dict:
    """Write :func:`report` as JSON to ``path``; returns the report."""
    rep = report(flow, coll)
    Path(path).write_text(json.dumps(rep, indent=1) + "\n")
    return rep


def _node_xy(rg: RoutingGraph, nid: str, tracks: int) -> tuple[float, float]:
    n = rg.ig.nodes[nid]
    x, y = n.x, n.y
    kind = n.kind.value
    if kind == "PORT":
        k = sum(ord(c) for c in nid) % 7
        return x - 0.15 + 0.05 * k, y + 0.1 - 0.03 * k
    t = n.track or 0
    off = -0.35 + 0.7 * (t + 0.5) / max(tracks, 1)
    sb_in = kind == "SB" and n.io.name == "SB_IN"
    edge = {"SB": 0.47 if sb_in else 0.40, "REG": 0.33, "RMUX": 0.43}[kind]
    if sb_in:
        off += 0.04
    side = n.side.name
    if side == "NORTH":
        return x + off, y - edge
    if side == "SOUTH":
        return x + off, y + edge
    if side == "EAST":
        return x + edge, y + off
    return x - edge, y + off


def draw(flow: FlowResult, coll: Collateral, path: str | Path,
         title: str | None = None, critical: bool = False) -> Path:
    """Write a PNG of the placed and routed design to ``path`` (see the module docstring);
    with ``critical`` the nets are drawn faint and the critical path of the static timing
    analysis is drawn on top (thick black, its start and end points marked, arrival times in
    ps at its switch-box hops): the ``timing.png`` of a run."""
    import matplotlib  # deferred: loads matplotlib, PIL, numpy, 5 more only when called

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: loads matplotlib, PIL, numpy, 7 more only when called
    from matplotlib.collections import LineCollection, PatchCollection  # deferred, as above
    from matplotlib.patches import Rectangle  # deferred: loads matplotlib, PIL, numpy, 5 more only when called


    graphs = coll.graphs
    rg0 = next(iter(graphs.values()))
    cols, rows = rg0.size
    fig, ax = plt.subplots(figsize=(max(6, cols * 1.1), max(6, rows * 1.1)), dpi=110)
    # unused tiles (no instance, no routed node: the tiles --power-gate gates) hatched grey
    unused = set(gated_tiles(coll, flow.placement, flow.pipelined.routing))
    by_use: dict[bool, list] = {False: [], True: []}
    tags: dict[str, list[tuple[int, int]]] = {}
    for (x, y), t in rg0.tiles.items():
        by_use[(x, y) in unused].append(((x, y), t))
        tags.setdefault(t.tag or ".", []).append((x, y))
    for off, tiles in by_use.items():
        if tiles:
            ax.add_collection(PatchCollection(
                [Rectangle((x - 0.45, y - 0.45), 0.9, 0.9) for (x, y), _ in tiles],
                facecolors=[TAG_COLOURS.get(t.tag, "#eeeeee") for _, t in tiles],
                edgecolors="#999999", linewidths=0.6, hatch="////" if off else None,
                alpha=0.45 if off else 1.0))
    for tag, xys in tags.items():
        # one marker set per tag, not a text artist per tile (~1 ms each: 0.7 s at 32x16);
        # a mathtext marker is scaled to its box, so a tag other than letters and digits
        # (the empty tag's ".") is a plain dot
        glyph = tag.isascii() and tag.isalnum()
        ax.scatter([x - 0.38 for x, _ in xys], [y - 0.33 for _, y in xys],
                   s=30 if glyph else 2, c="#777777", linewidths=0,
                   marker=f"$\\mathrm{{{tag}}}$" if glyph else "o")
    labels: dict[tuple[int, int], list[str]] = {}
    for inst, xy in flow.placement.sites.items():
        if flow.packed.instances[inst].tag != "r":
            labels.setdefault(tuple(xy), []).append(inst)
    for (x, y), names in labels.items():
        ax.text(x, y, "\n".join(n[:12] for n in names), fontsize=5, ha="center", va="center")
    cmap = plt.get_cmap("tab20")
    routing = flow.pipelined.routing
    # every routed segment in one line collection per line style (solid: data nets, dashed:
    # 1-bit nets) and every enabled register in one marker set, in net order: one artist
    # each instead of one per segment (a 32x16 run has thousands of segments)
    segments: dict[bool, tuple[list, list]] = {True: ([], []), False: ([], [])}
    regs: list[tuple[float, float]] = []
    for k, r in enumerate(routing.nets.values()):
        rg = graphs[r.width]
        tracks = int(rg.params.get("tracks", 5))
        colour = "#bbbbbb" if critical else cmap(k % 20)
        lines, colours = segments[r.width > 1]
        for a, b in r.edges():
            lines.append((_node_xy(rg, a, tracks), _node_xy(rg, b, tracks)))
            colours.append(colour)
        regs.extend(_node_xy(rg, n, tracks) for n in r.nodes()
                    if parse_id(n).kind is NodeKind.REG)
    for solid, (lines, colours) in segments.items():
        if lines:
            ax.add_collection(LineCollection(lines, colors=colours,
                                             linewidths=0.6 if critical else 0.9,
                                             linestyles="-" if solid else "--"))
    if regs:
        ax.plot([x for x, _ in regs], [y for _, y in regs], linestyle="none", marker="s",
                markersize=3, color="red")
    pr = flow.pipelined
    if critical and pr.timing.path:
        pts = []
        for n, arrival in pr.timing.path:
            base = n.split("#")[0]          # a register's output is "<REG id>#Q"
            try:
                nid = parse_id(base)
            except CollateralError:         # not a routing node: "CORE:<instance>"
                continue
            if nid.width in graphs and base in graphs[nid.width].index:
                rg = graphs[nid.width]
                pts.append((_node_xy(rg, base, int(rg.params.get("tracks", 5))), arrival, nid))
        if pts:
            xs, ys = [p[0][0] for p in pts], [p[0][1] for p in pts]
            ax.plot(xs, ys, color="black", linewidth=2.2)
            ax.plot([xs[0]], [ys[0]], marker="o", markersize=7, color="green")
            ax.plot([xs[-1]], [ys[-1]], marker="X", markersize=8, color="black")
            for (xy, arrival, nid) in pts:
                if nid.io is IO.SB_OUT:
                    ax.text(xy[0], xy[1], f"{arrival:.0f}", fontsize=5, color="black")
    ax.set_xlim(-0.6, cols - 0.4)
    ax.set_ylim(rows - 0.4, -0.6)
    ax.set_aspect("equal")
    ax.set_xticks(range(cols))
    ax.set_yticks(range(rows))
    ax.set_title(title or f"{flow.packed.name}: {flow.routing.total_wirelength()} segments, "
                 f"critical path {pr.timing.period_ps:.0f} ps "
                 f"({pr.timing.fmax_mhz:.0f} MHz)", fontsize=9)
    out = Path(path)
    # zlib level 1: a third of level 6's encoding time (0.47 -> 0.16 s for a 32x16's
    # 3872 x 1936 pixels) for a file ~1.3x larger
    fig.savefig(out, pil_kwargs={"compress_level": 1})
    plt.close(fig)
    return out
