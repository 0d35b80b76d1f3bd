"""File formats of the back-end stages: the one reader and writer of each stage's result.

A run directory (``build/apps/<app>/`` by default) holds one file per stage; each stage reads
the previous one's file and writes its own, so any stage can be run, inspected, replaced or
resumed alone (``cgra pack / place / route / pipeline / bitstream / sim``, chained by
``cgra run``; :mod:`mapper.flow`)::

    app.json          mapper.app/1        what was compiled: app, image size, unroll, design
    netlist.json      (mapper.netlist)    the mapped netlist; <app>.packed: cgra_pnr text form
    packed.json       mapper.packed/1     the packed netlist (PackedDesign)
    placement.json    mapper.placement/1  sites and cost (Placement); <app>.place: text form
    routing.json      mapper.routing/1    routed trees (RoutingResult); <app>.route: text form
    pipelined.json    mapper.pipelined/1  PipelineResult (routes with registers, packed design
                                          with shifted schedules, latencies, timing report)
    <app>.bs, <app>.bs.json               the bitstream (mapper.backend.bitstream)

Every stage file carries a header ``{"schema", "design": <name>, "design_id": <sha256 of the
design's design.json>, "input": {"file": <previous stage file>, "sha256": <its bytes>}}``.
:func:`read_stage` refuses (:class:`~cgra.errors.CollateralError`) a file made for another
generation of the design, or whose input file has changed since: a stale result is never
silently reused. Every document is plain JSON (terminals are ``[instance, port]`` pairs).

Each reader also checks what it reads against the design and the files it was made from, so
every command reading a stage file gets the same checks, linear in the file:
:func:`load_placement` (every instance of packed.json placed once, on the array, on a tile
whose tag takes it: :func:`~mapper.backend.place.check_placement`), :func:`load_routing`
(every net of packed.json routed, every node in the routing graph of its width, every path
connected from its net's source to its sink: :func:`~mapper.backend.route.check_routes`) and
:func:`load_bitstream` (``<app>.bs`` holds exactly bitstream.json's words). A violation is a
:class:`~cgra.errors.CgraError` naming the file, the item and the command that remakes it.

Text forms for interop with the cgra_pnr / cyclone tools: ``.place`` (two header lines, then
``<name>\\t<x>\\t<y>\\t\\t#<block id>`` per instance, block ids as in ``.packed``) and ``.route``
(``Net ID: <net> Segment Size: <n>``, then per sink ``Segment: <k> Size: <m>`` and one node per
line in the canal text-format node syntax, :func:`canal.collateral.node_line`).
"""
from __future__ import annotations

import json
import os
from itertools import zip_longest
from pathlib import Path
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from canal.collateral import node_line
from cgra.errors import CollateralError
from garnet.collateral import file_sha256
from mapper.backend.bitstream import Bitstream, read_text_file
from mapper.collateral import load_collateral
from mapper.netlist import Netlist
from mapper.backend.pack import PackedDesign, PackedInstance, PackedNet
from mapper.backend.pipeline import PassReport, PipelineResult, TimingReport
from mapper.backend.place import Placement, check_placement
from mapper.backend.report import draw, save_report
from mapper.backend.nets import DynamicRoute
from mapper.backend.route import NetRoute, RoutingResult, check_routes

if TYPE_CHECKING:
    from mapper.collateral import Collateral

APP_SCHEMA = "mapper.app/1"
PACKED_SCHEMA = "mapper.packed/1"
PLACEMENT_SCHEMA = "mapper.placement/1"
ROUTING_SCHEMA = "mapper.routing/1"
PIPELINED_SCHEMA = "mapper.pipelined/1"
BITSTREAM_SCHEMA = "mapper.bitstream/1"
#: ``run_report.json``, the sim stage's file (:func:`save_run_report`)
RUN_SCHEMA = "mapper.run_report/1"

#: stage -> (file name in the run directory, the stage whose file it reads)
STAGES: dict[str, tuple[str, str | None]] = {
    "map": ("netlist.json", None),
    "pack": ("packed.json", "map"),
    "place": ("placement.json", "pack"),
    "route": ("routing.json", "place"),
    "pipeline": ("pipelined.json", "route"),
    "bitstream": ("bitstream.json", "pipeline"),
    "sim": ("run_report.json", "bitstream"),
}
ORDER = list(STAGES)


def stage_file(run_dir: str | Path, stage: str) -> Path:
    return Path(run_dir) / STAGES[stage][0]


#: files every run writes besides the stage files and ``<app>.*`` / ``<app>_*``
RUN_FILES = ("app.json", "pnr_report.json", "pnr.png", "timing.png", "sim.bs", "sim.stim",
             "sim.out", "input.png", "input.npy", "compare.png")


def clear_run_dir(run_dir: str | Path) -> list[Path]:
    """Remove what an earlier run left in ``run_dir`` before a new mapping is written there:
    the stage files, :data:`RUN_FILES`, and the files named after the app its ``app.json``
    records (``<app>.*``, ``<app>_*``), so a run of another app into the same directory never
    leaves the old app's bitstream or images beside the new ones. Other files are kept.
    Returns the files removed."""
    d = Path(run_dir)
    if not d.is_dir():
        return []
    names = {f for f, _ in STAGES.values()} | set(RUN_FILES)
    old = None
    try:
        doc = json.loads((d / "app.json").read_text())
        old = str(doc.get("name")) if isinstance(doc, dict) and doc.get("name") else None
    except (OSError, json.JSONDecodeError):
        pass
    gone = []
    for f in sorted(d.iterdir()):
        stale = f.name in names or (old is not None and (
            f.name.startswith(f"{old}.") or f.name.startswith(f"{old}_")))
        if stale and f.is_file():
            f.unlink()
            gone.append(f)
    return gone


def header(schema: str, coll: Collateral, run_dir: str | Path, stage: str) -> dict[str, Any]:
    """The header of ``stage``'s file: schema, design, and the hash of its input file."""
    prev = STAGES[stage][1]
    h: dict[str, Any] = {"schema": schema, "design": coll.name, "design_id": coll.design_id}
    if prev is not None:
        p = stage_file(run_dir, prev)
        h["input"] = {"file": p.name, "sha256": file_sha256(p)}
    return h


def write_doc(path: str | Path, doc: dict[str, Any]) -> Path:
    """Write a stage document atomically (temporary sibling, then rename)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, p)
    return p


def read_stage(run_dir: str | Path, stage: str, schema: str,
               coll: Collateral | None = None) -> dict[str, Any]:
    """Read ``stage``'s file of ``run_dir`` and check its header (module docstring).

    Raises :class:`CollateralError` naming the file and the command that remakes it when the
    file is missing, malformed, of another schema, made for another generation of the
    design (``coll.design_id``) or when its input file changed after it was written."""
    p = stage_file(run_dir, stage)
    fix = f"run `cgra {stage} {run_dir}` (or `cgra run`) again"
    if not p.is_file():
        raise CollateralError(f"{p} is missing: stage '{stage}' has not been run; {fix}")
    try:
        doc = json.loads(p.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CollateralError(f"{p}: cannot read JSON ({exc}); {fix}") from None
    if not isinstance(doc, dict) or doc.get("schema") != schema:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise CollateralError(f"{p}: schema {got!r} is not {schema!r}; {fix}")
    if coll is not None and coll.design_id is not None \
            and doc.get("design_id") != coll.design_id:
        raise CollateralError(f"{p} was made for another generation of design "
                              f"{doc.get('design')} (design.json {str(doc.get('design_id'))[:12]},"
                              f" now {coll.design_id[:12]}): stale; {fix}")
    inp = doc.get("input")
    if isinstance(inp, dict):
        src = Path(run_dir) / str(inp.get("file"))
        if not src.is_file() or file_sha256(src) != inp.get("sha256"):
            raise CollateralError(f"{p} is stale: its input {src.name} changed (or is gone) "
                                  f"after it was written; {fix}")
    return doc


def _pairs(items) -> list[list[str]]:
    return [list(t) for t in items]


def _term(t: Any, where: str) -> tuple[str, str]:
    if not (isinstance(t, (list, tuple)) and len(t) == 2):
        raise CollateralError(f"{where}: terminal {t!r} is not [instance, port]")
    return (str(t[0]), str(t[1]))


# ---------------------------------------------------------------------------- packed
def packed_to_json(pk: PackedDesign) -> dict[str, Any]:
    return {"name": pk.name,
            "instances": {n: {"kind": i.kind, "tag": i.tag, "config": i.config,
                              "fields": i.fields, "input_regs": i.input_regs,
                              "consts": i.consts} for n, i in pk.instances.items()},
            "nets": [{"name": n.name, "width": n.width, "source": list(n.source),
                      "sinks": _pairs(n.sinks)} for n in pk.nets],
            "port_map": pk.port_map,
            "absorbed_regs": {r: list(v) for r, v in pk.absorbed_regs.items()},
            "folded_consts": {c: _pairs(v) for c, v in pk.folded_consts.items()}}


def _regs(v: Any) -> list[str]:
    """The absorbed registers of a PE input (a list; one name in files written before
    register chains were absorbed)."""
    return [str(v)] if isinstance(v, str) else [str(x) for x in v]


def packed_from_json(d: dict[str, Any], where: str) -> PackedDesign:
    try:
        insts = {n: PackedInstance(n, i["kind"], i["tag"], dict(i["config"]),
                                   {k: int(v) for k, v in i["fields"].items()},
                                   {k: _regs(v) for k, v in i["input_regs"].items()},
                                   {k: int(v) for k, v in i["consts"].items()})
                 for n, i in d["instances"].items()}
        nets = [PackedNet(n["name"], int(n["width"]), _term(n["source"], where),
                          [_term(s, where) for s in n["sinks"]]) for n in d["nets"]]
        return PackedDesign(d["name"], insts, nets, {k: dict(v) for k, v in
                                                     d["port_map"].items()},
                            {r: _term(v, where) for r, v in d["absorbed_regs"].items()},
                            {c: [_term(t, where) for t in v]
                             for c, v in d["folded_consts"].items()})
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CollateralError(f"{where}: malformed packed design ({type(exc).__name__}: "
                              f"{exc}); run `cgra pack` again") from None


# ---------------------------------------------------------------------------- placement
def placement_to_json(pl: Placement) -> dict[str, Any]:
    return {"sites": {n: list(xy) for n, xy in pl.sites.items()}, "cost": pl.cost,
            "hpwl": pl.hpwl, "seconds": pl.seconds, "temperatures": pl.temperatures,
            "seed": pl.seed, "alpha": pl.alpha, "method": pl.method,
            "global_seconds": pl.global_seconds, "overlap": pl.overlap}


def placement_from_json(d: dict[str, Any], where: str) -> Placement:
    try:
        return Placement({n: (int(xy[0]), int(xy[1])) for n, xy in d["sites"].items()},
                         float(d["cost"]), int(d["hpwl"]), float(d["seconds"]),
                         int(d["temperatures"]), int(d["seed"]), float(d["alpha"]),
                         str(d.get("method", "sa")), float(d.get("global_seconds", 0.0)),
                         int(d.get("overlap", 0)))
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise CollateralError(f"{where}: malformed placement ({type(exc).__name__}: {exc}); "
                              f"run `cgra place` again") from None


def place_text(pl: Placement, block_ids: dict[str, str]) -> str:
    """The cgra_pnr ``.place`` text of a placement (module docstring); ``block_ids``:
    instance -> block id (:meth:`mapper.netlist.Netlist.block_ids` numbering)."""
    lines = ["Block Name\t\t\tX\tY\t\t#Block ID", "-" * 40]
    for n, (x, y) in pl.sites.items():
        lines.append(f"{n}\t\t{x}\t{y}\t\t#{block_ids.get(n, n)}")
    return "\n".join(lines) + "\n"


def parse_place_text(text: str, where: str = "<place>") -> dict[str, tuple[int, int]]:
    """Instance -> (x, y) from a ``.place`` text (the two header lines are skipped).
    Raises :class:`CollateralError` naming the line."""
    sites: dict[str, tuple[int, int]] = {}
    for k, line in enumerate(text.splitlines()[2:], 3):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 4 or not parts[3].startswith("#"):
            raise CollateralError(f"{where}:{k}: expected '<name> <x> <y> #<id>', got {line!r}")
        try:
            sites[parts[0]] = (int(parts[1]), int(parts[2]))
        except ValueError:
            raise CollateralError(f"{where}:{k}: x and y must be integers: {line!r}") from None
    return sites


# ---------------------------------------------------------------------------- routing
def routing_to_json(rr: RoutingResult) -> dict[str, Any]:
    return {"nets": [{"name": r.name, "width": r.width, "source": list(r.source),
                      "paths": [{"sink": list(t), "nodes": p} for t, p in r.paths.items()]}
                     for r in rr.nets.values()],
            "reg_sites": rr.reg_sites,
            "iterations": {str(w): v for w, v in rr.iterations.items()},
            "seconds": rr.seconds,
            "wirelength": {str(w): v for w, v in rr.wirelength.items()}} | (
        {"dynamic": [{"name": r.name, "id": r.id, "source": list(r.source),
                      "sinks": [{"sink": list(t), "at": list(at), "tokens": r.tokens.get(t, 0)}
                                for t, at in r.sinks.items()]}
                     for r in rr.dynamic.values()]} if rr.dynamic else {})


def _xyp(v: Any) -> tuple[int, int, str]:
    x, y, p = v
    return int(x), int(y), str(p)


def routing_from_json(d: dict[str, Any], where: str) -> RoutingResult:
    try:
        nets = {}
        for n in d["nets"]:
            paths = {_term(p["sink"], where): [str(x) for x in p["nodes"]] for p in n["paths"]}
            nets[n["name"]] = NetRoute(n["name"], int(n["width"]), _term(n["source"], where),
                                       paths)
        dyn = {r["name"]: DynamicRoute(
            str(r["name"]), int(r["id"]), _xyp(r["source"]),
            {_term(s["sink"], where): _xyp(s["at"]) for s in r["sinks"]},
            {_term(s["sink"], where): int(s["tokens"]) for s in r["sinks"]})
            for r in d.get("dynamic", [])}
        return RoutingResult(nets, {k: str(v) for k, v in d["reg_sites"].items()},
                             {int(w): int(v) for w, v in d["iterations"].items()},
                             float(d["seconds"]),
                             {int(w): int(v) for w, v in d["wirelength"].items()}, dyn)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CollateralError(f"{where}: malformed routing ({type(exc).__name__}: {exc}); "
                              f"run `cgra route` again") from None


def route_text(rr: RoutingResult, coll: Collateral) -> str:
    """The ``.route`` text of a routing (module docstring)."""
    lines = []
    for r in rr.nets.values():
        ig = coll.graphs[r.width].ig
        lines.append(f"Net ID: {r.name} Segment Size: {len(r.paths)}")
        if r.name in rr.dynamic:
            lines.append(f"# on the dynamic layer: flow id {rr.dynamic[r.name].id}")
        for k, (term, path) in enumerate(r.paths.items()):
            lines.append(f"Segment: {k} Size: {len(path)}  # sink {term[0]}.{term[1]}")
            lines += [node_line(ig.nodes[n]) for n in path]
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- pipelined
def pipelined_to_json(pr: PipelineResult) -> dict[str, Any]:
    return {"routing": routing_to_json(pr.routing), "packed": packed_to_json(pr.packed),
            "sigma_in": [[i, p, s] for (i, p), s in pr.sigma_in.items()],
            "enabled_regs": pr.enabled_regs, "forced_regs": pr.forced_regs,
            "mem_absorbed": [[i, p, c] for (i, p), c in pr.mem_absorbed.items()],
            "pe_input_regs": _pairs(pr.pe_input_regs),
            "pe_input_delay": [[i, p, k] for (i, p), k in pr.pe_input_delay.items()],
            "output_latency": pr.output_latency,
            "timing": {"period_ps": pr.timing.period_ps, "fmax_mhz": pr.timing.fmax_mhz,
                       "model": pr.timing.model,
                       "path": [[n, a] for n, a in pr.timing.path],
                       "target_ps": pr.timing.target_ps, "target": pr.timing.target,
                       "miss": pr.timing.miss},
            **({} if pr.unpipelined is None else {"unpipelined": {
                "period_ps": pr.unpipelined.period_ps, "fmax_mhz": pr.unpipelined.fmax_mhz,
                "path": [[n, a] for n, a in pr.unpipelined.path]}}),
            "seconds": pr.seconds,
            "passes": [{"name": r.name, "period_ps": r.period_ps, "fmax_mhz": r.fmax_mhz,
                        "registers": r.registers, "latency": r.latency,
                        "reroutes": r.reroutes, "seconds": r.seconds} for r in pr.passes]}


def pipelined_from_json(d: dict[str, Any], where: str) -> PipelineResult:
    try:
        t = d["timing"]
        u = d.get("unpipelined")
        return PipelineResult(
            routing_from_json(d["routing"], where), packed_from_json(d["packed"], where),
            {(str(i), str(p)): int(s) for i, p, s in d["sigma_in"]},
            [str(x) for x in d["enabled_regs"]], [str(x) for x in d["forced_regs"]],
            {(str(i), str(p)): int(c) for i, p, c in d["mem_absorbed"]},
            [_term(x, where) for x in d["pe_input_regs"]],
            {str(k): int(v) for k, v in d["output_latency"].items()},
            TimingReport(float(t["period_ps"]), float(t["fmax_mhz"]),
                         [(str(n), float(a)) for n, a in t["path"]], str(t.get("model", "")),
                         None if t.get("target_ps") is None else float(t["target_ps"]),
                         str(t.get("target", "")), str(t.get("miss", ""))),
            float(d["seconds"]),
            [PassReport(str(r["name"]), float(r["period_ps"]), float(r["fmax_mhz"]),
                        int(r["registers"]), int(r["latency"]), int(r["reroutes"]),
                        float(r["seconds"])) for r in d["passes"]],
            {(str(i), str(p)): int(k) for i, p, k in d["pe_input_delay"]}
            if "pe_input_delay" in d else {_term(x, where): 1 for x in d["pe_input_regs"]},
            None if u is None else TimingReport(float(u["period_ps"]), float(u["fmax_mhz"]),
                                                [(str(n), float(a)) for n, a in u["path"]]))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CollateralError(f"{where}: malformed pipelined design ({type(exc).__name__}: "
                              f"{exc}); run `cgra pipeline` again") from None


# ---------------------------------------------------------------------------- run directories
@dataclass
class FlowResult:
    """The back end's results for one app: packed design, placement, routing, pipelined
    design, bitstream (``None`` until that stage ran), seconds per stage and the placement
    attempts that failed first."""

    packed: Any
    placement: Placement
    routing: RoutingResult
    pipelined: PipelineResult
    bitstream: Bitstream | None
    seconds: dict[str, float] = field(default_factory=dict)
    #: placements that failed before this one (``{seed, stage, error}``)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    #: the placement exponent sweep (``{alpha, seed, fmax_mhz, registers, kept}``; empty
    #: without :attr:`FlowParams.alphas`)
    alpha_sweep: list[dict[str, Any]] = field(default_factory=list)
    #: register-chain absorption (:func:`absorb_chains`'s report; ``None`` when it was off)
    absorption: dict[str, Any] | None = None


def read_app(run_dir: str | Path) -> dict[str, Any]:
    """``app.json`` of a run directory; :class:`CollateralError` when missing/malformed."""
    p = Path(run_dir) / "app.json"
    if not p.is_file():
        raise CollateralError(f"{p} is missing: {run_dir} is not a run directory; run `cgra "
                              f"map <app> --design <dir> --out {run_dir}` first")
    try:
        doc = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CollateralError(f"{p}: cannot read JSON ({exc}); run `cgra map` again") from None
    if not isinstance(doc, dict) or doc.get("schema") != APP_SCHEMA:
        raise CollateralError(f"{p}: not a {APP_SCHEMA} file; run `cgra map` again")
    net = stage_file(run_dir, "map")
    if not net.is_file() or file_sha256(net) != doc.get("netlist_sha256"):
        raise CollateralError(f"{net} changed (or is gone) after `cgra map` wrote it; run "
                              f"`cgra map` again")
    return doc


def open_design(run_dir: str | Path, design: str | Path | None = None,
                check_spec: bool = True) -> Collateral:
    """The collateral of a run: ``design`` when given, else the design ``app.json`` names;
    it must be the generation the run was mapped on."""
    app = read_app(run_dir)
    coll = load_collateral(design if design is not None else app["design"], check_spec)
    if app.get("design_id") != coll.design_id:
        raise CollateralError(f"{Path(run_dir) / 'app.json'}: the run was mapped on another "
                              f"generation of design {app.get('design_name')} than "
                              f"{coll.root}; run `cgra map` again")
    return coll


def app_name(run_dir: Path) -> str:
    """The app name ``app.json`` records (:func:`read_app`)."""
    return str(read_app(run_dir)["name"])


def save_packed(run_dir: Path, coll: Collateral, packed: PackedDesign) -> None:
    """packed.json of ``packed`` (with its header)."""
    write_doc(stage_file(run_dir, "pack"), {
        **header(PACKED_SCHEMA, coll, run_dir, "pack"), **packed_to_json(packed)})


def load_packed(run_dir: str | Path, coll: Collateral) -> PackedDesign:
    """packed.json of a run directory (checked, :func:`read_stage`)."""
    d = read_stage(run_dir, "pack", PACKED_SCHEMA, coll)
    return packed_from_json(d, str(stage_file(run_dir, "pack")))


def save_placement(run_dir: Path, coll: Collateral, pl: Placement) -> None:
    """placement.json and ``<app>.place`` (block ids of the netlist; an instance the
    netlist lacks, e.g. a delay line, keeps its name)."""
    write_doc(stage_file(run_dir, "place"), {
        **header(PLACEMENT_SCHEMA, coll, run_dir, "place"), **placement_to_json(pl)})
    nl = Netlist.load(stage_file(run_dir, "map"))
    ids = {n: b for n, b in nl.block_ids().items() if n in pl.sites}
    (run_dir / f"{app_name(run_dir)}.place").write_text(place_text(pl, ids))


def load_placement(run_dir: str | Path, coll: Collateral,
                   packed: PackedDesign | None = None) -> Placement:
    """placement.json of a run directory (checked, :func:`read_stage`), checked against the
    packed design (``packed``, else the run's packed.json) and the array of ``coll``
    (:func:`~mapper.backend.place.check_placement`: every instance placed once, on the
    array, on a tile whose tag takes it, no site over capacity). Raises
    :class:`~cgra.errors.PlacementError` naming the file, the instance, the site and the
    tile's tag."""
    d = read_stage(run_dir, "place", PLACEMENT_SCHEMA, coll)
    where = str(stage_file(run_dir, "place"))
    pl = placement_from_json(d, where)
    check_placement(packed if packed is not None else load_packed(run_dir, coll), pl, coll,
                    where, f"run `cgra place {run_dir}` again")
    return pl


def save_routing(run_dir: Path, coll: Collateral, rr: RoutingResult) -> None:
    """routing.json and ``<app>.route``."""
    write_doc(stage_file(run_dir, "route"), {
        **header(ROUTING_SCHEMA, coll, run_dir, "route"), **routing_to_json(rr)})
    (run_dir / f"{app_name(run_dir)}.route").write_text(route_text(rr, coll))


def load_routing(run_dir: str | Path, coll: Collateral, packed: PackedDesign | None = None,
                 placement: Placement | None = None) -> RoutingResult:
    """routing.json of a run directory (checked, :func:`read_stage`), checked against the
    packed design and placement it routes (``packed`` / ``placement``, else the run's files,
    :func:`load_packed`, :func:`load_placement`) and the routing graphs of ``coll``
    (:func:`~mapper.backend.route.check_routes`: every net present, every node in the graph
    of its width, every path connected from its net's source to its sink). Raises
    :class:`~cgra.errors.RoutingError` naming the file, the net, the sink and the node."""
    d = read_stage(run_dir, "route", ROUTING_SCHEMA, coll)
    where = str(stage_file(run_dir, "route"))
    rr = routing_from_json(d, where)
    packed = packed if packed is not None else load_packed(run_dir, coll)
    placement = placement if placement is not None else load_placement(run_dir, coll, packed)
    check_routes(packed, placement, rr, coll, where, f"run `cgra route {run_dir}` again")
    return rr


def save_pipelined_design(run_dir: str | Path, coll: Collateral, pr: PipelineResult) -> None:
    """Write the pipelined design ``pr`` (of the run directory's packed design, placement
    and routing) as pipelined.json, alone (a dataflow run has no FlowResult to report)."""
    run_dir = Path(run_dir)
    write_doc(stage_file(run_dir, "pipeline"), {
        **header(PIPELINED_SCHEMA, coll, run_dir, "pipeline"), **pipelined_to_json(pr)})


def save_pipelined(run_dir: str | Path, coll: Collateral, flow: FlowResult) -> None:
    """Write ``flow.pipelined`` (the pipelined design of the run directory's packed design,
    placement and routing, which ``flow`` holds) as pipelined.json
    (:func:`save_pipelined_design`), with ``pnr_report.json``, ``pnr.png`` and
    ``timing.png``."""
    run_dir = Path(run_dir)
    save_pipelined_design(run_dir, coll, flow.pipelined)
    save_report(flow, coll, run_dir / "pnr_report.json")
    draw(flow, coll, run_dir / "pnr.png")
    draw(flow, coll, run_dir / "timing.png", critical=True)


def update_pnr_report(run_dir: str | Path, sections: dict[str, Any]) -> None:
    """Replace (or add) top-level ``sections`` of a run directory's ``pnr_report.json``
    (the bitstream's ``power`` state, the sim stage's ``energy``); nothing when the run has
    no report yet. Raises :class:`CollateralError` when the report is not JSON."""
    path = Path(run_dir) / "pnr_report.json"
    if not path.is_file():
        return
    try:
        doc = json.loads(path.read_text())
    except ValueError as exc:
        raise CollateralError(f"{path}: not JSON ({exc}); run `cgra pipeline` again") from None
    doc.update(sections)
    path.write_text(json.dumps(doc, indent=1) + "\n")


def load_flow(run_dir: str | Path, coll: Collateral) -> FlowResult:
    """The saved back-end results of a run directory (through the pipelining stage)."""
    d = read_stage(run_dir, "pipeline", PIPELINED_SCHEMA, coll)
    pr = pipelined_from_json(d, str(stage_file(run_dir, "pipeline")))
    packed = load_packed(run_dir, coll)
    pl = load_placement(run_dir, coll, packed)
    return FlowResult(packed, pl, load_routing(run_dir, coll, packed, pl), pr, None)


def save_bitstream(run_dir: str | Path, coll: Collateral, bs: Bitstream) -> None:
    """``<app>.bs`` (:meth:`~mapper.backend.bitstream.Bitstream.save_text`, the one writer of
    the text form) and bitstream.json (with its header) of a run directory."""
    bs.save_text(run_dir)
    write_doc(stage_file(run_dir, "bitstream"),
              {**bs.to_json(), **header(BITSTREAM_SCHEMA, coll, run_dir, "bitstream")})


def bitstream_file(run_dir: str | Path) -> Path:
    """``<app>.bs`` of a run directory: the bitstream a user deploys, what `cgra sim` runs."""
    return Path(run_dir) / f"{app_name(Path(run_dir))}.bs"


def load_bitstream(run_dir: str | Path, coll: Collateral) -> Bitstream:
    """bitstream.json of a run directory (checked, :func:`read_stage`) and the ``<app>.bs``
    beside it (:func:`bitstream_file`), which must hold exactly its words, line for line:
    the returned bitstream's :meth:`~mapper.backend.bitstream.Bitstream.pairs` are the
    ``.bs`` file's. Raises :class:`CollateralError` naming the ``.bs`` file and its first
    line that is missing, extra or differs from bitstream.json (or when it cannot be read),
    :class:`~cgra.errors.ConfigError` naming the line that is malformed. (Every address and
    data word is checked against the config map where the words are proved,
    :func:`mapper.backend.verify.verify`.)"""
    d = read_stage(run_dir, "bitstream", BITSTREAM_SCHEMA, coll)
    bs = Bitstream.from_json(d, str(stage_file(run_dir, "bitstream")))
    path = bitstream_file(run_dir)
    fix = f"run `cgra bitstream {run_dir}` again"
    words = read_text_file(path, fix)
    want = bs.pairs()
    for k, (got, exp) in enumerate(zip_longest(words, want), 1):
        if got == exp:
            continue
        if got is None:
            what = f"is missing (the file ends after line {k - 1})"
        else:
            what = f"is '{got[0]:08X} {got[1]:08X}'"
        need = f"no line {k} (it has {len(want)} words)" if exp is None \
            else f"'{exp[0]:08X} {exp[1]:08X}'"
        raise CollateralError(f"{path} line {k} {what}, but bitstream.json, written with it "
                              f"by `cgra bitstream`, has {need}: the .bs file was changed "
                              f"after it was written; {fix}")
    return bs


def save_run_report(run_dir: str | Path, coll: Collateral, report: dict[str, Any]) -> None:
    """``run_report.json`` (schema :data:`RUN_SCHEMA`) of a run directory: ``report`` (an app's,
    :func:`mapper.sim.run.run_report`, or a DNN layer's, :func:`mapper.dnn.array.run_layer_sim`)
    with the sim stage's header; the one writer of that file."""
    write_doc(stage_file(run_dir, "sim"), {**report, **header(RUN_SCHEMA, coll, run_dir, "sim")})
