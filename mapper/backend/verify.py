"""Bitstream proofs: the interconnect configured by a bitstream realises the routed, pipelined
design (``cgra verify``; ``cgra run`` runs it before simulation).

The bitstream's words are decoded through the design's config map into the select variables
of Canal's SMT model (:mod:`canal.smt`), and z3 proves, for every net of the pipelined routing
(``pipelined.json``):

* every node of the net's routed tree, and so every sink, carries the net's source — the core
  output at the root of its register chain (a net leaving a netlist register continues the
  net that feeds it) — through configured muxes. A node carrying another net's source is a
  node driven by two nets; a sink carrying constant 0 or a source that no net routes there is
  an unrouted signal driven into a used core input;
* the latency (clock cycles) at every node equals the number of pipeline registers (``REG``
  nodes) the pipelining pass put on the path to it.

Before the proof, linear checks of the structure: every word writes a config register of the
design's config map and sets only bits of its fields, each address once
(:func:`mapper.backend.bitstream.check_words`: an address no tile has is refused), and every
placed instance's core config is written to a tile of the kind it names
(:func:`check_structure`: a PE on an IO tile is refused, so is a core whose config registers
are not written). The pipelining report is checked against its own routes: every register
the pass says it enabled lies on a route.

No tile that a routed net passes (so no tile of a routed instance) is power-gated by the
bitstream (:func:`check_power`; a gated tile outputs 0 and loses its state, :mod:`canal.rtl`).

The contents of every lookup table (a MEM in lookup-table mode,
:func:`mapper.mapping.compute.lut_config`) and coordinate-pattern ROM
(:func:`mapper.mapping.memory.pattern_rom`) are checked word for word: the bitstream must write entry
``i`` to word ``i`` of the SRAM of the tile its output is routed from
(:func:`canal.config.config_memory_writes`).

A failed proof raises :class:`VerificationError` naming the net, the first node of its route
(from the source) whose value is wrong, that node's select field (tile, feature, field, the
value the bitstream gives, the value the route needs) and what the node carries instead.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from canal.config import config_map_rows, tile_configs
from canal.graph import NodeKind, parse_id
from canal.ready_valid import graph_kind
from canal.rv_smt import prove_rv_net
from canal.smt import BitstreamSelects, FieldSpot, InterconnectModel, NodeValue, ProofResult
from cgra.config import config_address, pack_fields
from cgra.errors import CgraError, RoutingError
from mapper.collateral import Collateral
from mapper.backend.dynamic import check_dynamic
from mapper.backend.pipeline import PipelineResult
from canal.config import config_memory_writes
from mapper.backend.bitstream import BitstreamWords, check_words, read_text_file, rom_contents
from mapper.backend.place import TAG_NAMES, site_capacity
from mapper.backend.power import gated_by_bitstream


class VerificationError(CgraError):
    """A bitstream does not configure the interconnect the routing describes (the message
    names the net, node and config field)."""


@dataclass
class VerifyReport:
    """A proved bitstream: ``nets``, checked ``nodes`` (route nodes), ``sinks``, the sliced
    model's size (``cone_nodes``, ``select_vars``) and seconds (``expected``: the routes'
    values, ``build``: slicing, decoding and the formula, ``solve``: z3, ``total``)."""

    nets: int
    nodes: int
    sinks: int
    cone_nodes: int
    select_vars: int
    seconds: dict[str, float] = field(default_factory=dict)
    #: ready-valid designs: nets and segments whose valid / ready connectivity was proved
    #: with their data (:func:`verify_handshake`); 0 for a static design
    rv_nets: int = 0
    rv_segments: int = 0
    #: hybrid designs: nets on the dynamic layer whose tables and fields were checked
    #: (:func:`mapper.backend.dynamic.check_dynamic`); 0 elsewhere
    dynamic_nets: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"proved": True, "nets": self.nets, "nodes": self.nodes, "sinks": self.sinks,
                "cone_nodes": self.cone_nodes, "select_vars": self.select_vars,
                "seconds": {k: round(v, 4) for k, v in self.seconds.items()}} | (
            {"ready_valid": {"nets": self.rv_nets, "segments": self.rv_segments}}
            if self.rv_nets else {}) | (
            {"dynamic": {"nets": self.dynamic_nets}} if self.dynamic_nets else {})


def model_of(coll: Collateral) -> InterconnectModel:
    """Canal's SMT model of the design's graphs with the select fields of its config map."""
    spots: dict[str, list] = {}
    for node, (x, y, locs) in coll.config_map.nodes.items():
        spots[node] = [_spot(node, x, y, loc) for loc in locs]
    return InterconnectModel({w: rg.ig for w, rg in coll.graphs.items()}, spots)


def _spot(node: str, x: int, y: int, loc) -> FieldSpot:
    return FieldSpot(loc.name, x, y, loc.feature, loc.feature_name,
                     config_address(loc.reg, loc.feature, x, y), loc.lo, loc.width,
                     loc.field_lo)


def expected_values(model: InterconnectModel, res: PipelineResult
                    ) -> tuple[dict[str, NodeValue], dict[str, str], dict[str, list[list[str]]]]:
    """What every routed node must carry: node -> :class:`NodeValue`, node -> net, and net ->
    its paths. Raises :class:`VerificationError` when the routing is not a forest of trees
    rooted at core outputs (a path off the graph, a node on two nets, a register-rooted net
    whose register no net feeds)."""
    nets = {n: list(r.paths.values()) for n, r in res.routing.nets.items()}
    want: dict[str, NodeValue] = {}
    owner: dict[str, str] = {}
    pending = [n for n in nets if nets[n]]
    while pending:
        left = []
        for net in pending:
            root = nets[net][0][0]
            if root not in model.fanin:
                raise VerificationError(f"net {net}: root {root} is not a node of the "
                                        f"interconnect graphs; route it again")
            if model.is_source(root):
                base = NodeValue(root, 0)
            elif root in want:
                base = want[root]
            else:
                left.append(net)
                continue
            for path in nets[net]:
                if path[0] != root:
                    raise VerificationError(f"net {net}: paths start at {root} and {path[0]}")
                lat = base.latency
                for a, b in pairwise(path):
                    if a not in model.fanin.get(b, ()):
                        raise VerificationError(f"net {net}: route edge {a} -> {b} is not in "
                                                f"the interconnect graph")
                    if model.kind[b] is NodeKind.REG:
                        lat += 1
                    v = NodeValue(base.source, lat)
                    if owner.get(b, net) != net or want.get(b, v) != v:
                        raise VerificationError(
                            f"net {net}: node {b} is also on net {owner[b]}'s route (or reached "
                            f"with two latencies); the routing is not legal, route again")
                    want[b], owner[b] = v, net
        if len(left) == len(pending):
            raise VerificationError(f"net {left[0]}: its root {nets[left[0]][0][0]} is a "
                                    f"register no routed net feeds")
        pending = left
    return want, owner, nets


def check_report(res: PipelineResult) -> None:
    """The pipelining report agrees with its routes: every register it enabled (balancing or
    insertion) is on a route. Raises :class:`VerificationError`."""
    on_routes = {n for r in res.routing.nets.values() for p in r.paths.values() for n in p}
    for reg in [*res.enabled_regs, *res.forced_regs]:
        if reg not in on_routes:
            raise VerificationError(f"pipelining reports register {reg} enabled but no route "
                                    f"passes it; run `cgra pipeline` again")


def _describe(model: InterconnectModel, v: NodeValue | None, owner_of_source: dict[str, str]
              ) -> str:
    if v is None or v.source is None:
        return "constant 0 (no source selected upstream)"
    net = owner_of_source.get(v.source)
    who = f"source of net {net}" if net else "a source no net routes"
    return f"{v.source} ({who}) {v.latency} cycle(s) late"


def check_lut_contents(bitstream: list[tuple[int, int]], res: PipelineResult,
                       coll: Collateral) -> int:
    """Every lookup table and pattern ROM of ``res`` is written into its tile's SRAM by
    ``bitstream`` (module docstring); returns the number of words checked. The tile is the
    one the instance's output net is routed from. Raises :class:`VerificationError` naming the instance, the word, the
    address and both values."""

    words = dict(bitstream)
    checked = 0
    for inst, pi in res.packed.instances.items():
        table = rom_contents(pi.config) if pi.tag == "m" else None
        if table is None:
            continue
        what = "lookup" if "lut" in pi.config else "pattern ROM"
        roots = [r.paths[t][0] for r in res.routing.nets.values() if r.source[0] == inst
                 for t in r.paths]
        if not roots:
            continue                    # an unread lookup: nothing depends on its contents
        node = next(rg.ig.nodes[roots[0]] for rg in coll.graphs.values()
                    if roots[0] in rg.ig.nodes)
        cm = coll.tiles[(node.x, node.y)].config_memory
        if cm is None:
            raise VerificationError(f"{what} {inst} at tile ({node.x}, {node.y}): the tile has "
                                    f"no config memory to hold its table")
        for i, (addr, data) in enumerate(config_memory_writes(node.x, node.y, cm,
                                                              list(enumerate(table)))):
            got = words.get(addr)
            if got is None or got & ((1 << cm.width) - 1) != data:
                raise VerificationError(
                    f"{what} {inst} at tile ({node.x}, {node.y}): word {i} (address "
                    f"0x{addr:08X}) is {'not written' if got is None else hex(got)}, the "
                    f"table needs {hex(data)}; regenerate the bitstream (`cgra bitstream`)")
            checked += 1
    return checked


def check_structure(bitstream: list[tuple[int, int]], res: PipelineResult,
                    coll: Collateral) -> int:
    """Each instance of ``res.packed`` (but netlist registers) is routed at one tile, of a
    kind that takes it (the tag's sites, :func:`mapper.backend.place.site_capacity`: a PE on
    a PE tile, never on an IO tile), and ``bitstream`` writes its core config there: every
    register of feature 0 of that tile's core config fields. The tile of an instance is the
    tile of the core-port nodes its routed nets start or end at (``res.routing``; an
    instance no net touches has no tile and is not checked). Returns the number of
    instances checked; raises :class:`VerificationError` naming the instance, its kind, the
    tile and its tag, or the register not written. Linear in the routed paths."""
    where = getattr(bitstream, "source", "bitstream")
    tiles_of: dict[str, dict[tuple[int, int], str]] = {}     # instance -> tile -> a port node
    for r in res.routing.nets.values():
        rg = coll.graphs.get(r.width)
        if rg is None:
            continue
        for term, path in r.paths.items():
            if not path:
                continue
            for inst, nid in ((r.source[0], path[0]), (term[0], path[-1])):
                i = rg.index.get(nid)
                if i is not None:
                    tiles_of.setdefault(inst, {}).setdefault(rg.xy[i], nid)
    caps = site_capacity(coll)
    words = {a for a, _ in bitstream}
    checked = 0
    for inst, pi in res.packed.instances.items():
        if pi.tag == "r" or inst not in tiles_of:
            continue
        what = f"{TAG_NAMES.get(pi.tag, pi.tag)} {inst} (tag '{pi.tag}')"
        at = tiles_of[inst]
        if len(at) > 1:
            (a, na), (b, nb) = list(at.items())[:2]
            raise VerificationError(f"{where}: {what}: its nets are routed at two tiles, {a} "
                                    f"({na}) and {b} ({nb}); an instance sits on one tile; "
                                    f"route it again (`cgra route`)")
        (x, y), nid = next(iter(at.items()))
        tile = coll.tiles.get((x, y))
        if (x, y) not in caps.get((pi.tag,), {}):
            tag = f"tag '{tile.tag}'" if tile is not None and tile.tag else "no core"
            raise VerificationError(
                f"{where}: {what} is routed at tile ({x}, {y}) ({nid}), a tile of {tag}: its "
                f"core config cannot be written to a tile of that kind; place and route it "
                f"again (`cgra place`, `cgra route`)")
        for reg in sorted({sl.reg for sl in pack_fields(tile.config_fields)}
                          if tile.config_fields else ()):
            addr = config_address(reg, 0, x, y)
            if addr not in words:
                raise VerificationError(
                    f"{where}: {what} at tile ({x}, {y}): its core config register {reg} "
                    f"(address {addr:08X}) is not written; regenerate the bitstream "
                    f"(`cgra bitstream`)")
        checked += 1
    return checked


def check_power(bitstream: list[tuple[int, int]], res: PipelineResult, coll: Collateral
                ) -> int:
    """No tile holding a node of a routed net of ``res`` is gated by ``bitstream`` (its
    power-gate word with ``gate`` = 1, :func:`mapper.backend.power.gated_by_bitstream`).
    Returns the number of gated tiles; raises :class:`VerificationError` naming the first
    such tile (by (x, y)) and a net routed through it."""
    gated = gated_by_bitstream(coll, bitstream)
    if not gated:
        return 0
    where = getattr(bitstream, "source", "bitstream")
    bad: dict[tuple[int, int], str] = {}
    for name, r in res.routing.nets.items():
        for path in r.paths.values():
            for nid in path:
                xy = parse_id(nid).xy
                if xy in gated:
                    bad.setdefault(xy, f"net {name} ({nid})")
    if bad:
        xy = min(bad)
        raise VerificationError(f"{where}: tile {xy} is power-gated but {bad[xy]} is routed "
                                f"through it ({len(bad)} used tile(s) gated); a gated tile "
                                f"outputs 0 -- gate only unused tiles (`cgra run "
                                f"--power-gate`)")
    return len(gated)


def verify(bitstream: list[tuple[int, int]], res: PipelineResult, coll: Collateral,
           model: InterconnectModel | None = None, timeout_ms: int = 20_000) -> VerifyReport:
    """Prove that ``bitstream`` (``[(addr, data)]``; a :class:`BitstreamWords` names its file
    in the messages) realises the routing of ``res`` on the fabric of ``coll`` (module
    docstring). First, linear checks: every word writes a config register of the config map
    (:func:`mapper.backend.bitstream.check_words`, :class:`~cgra.errors.ConfigError` naming
    the line and the address) and every instance's core config is written to a tile of its
    kind (:func:`check_structure`). Returns a :class:`VerifyReport`; raises
    :class:`VerificationError` with the net, node and field of the first wrong node, and
    :class:`~cgra.errors.ConfigError` when z3 does not answer within ``timeout_ms``."""
    t0 = time.perf_counter()
    check_words(bitstream, coll)
    model = model or model_of(coll)
    check_report(res)
    want, owner, nets = expected_values(model, res)
    check_structure(bitstream, res, coll)
    check_power(bitstream, res, coll)
    t1 = time.perf_counter()
    selects = BitstreamSelects(bitstream, model.spots)
    proof = model.prove(want, selects, timeout_ms)
    t3 = time.perf_counter()
    if not proof.proved:
        raise VerificationError(_explain(model, proof, selects, want, owner, nets))
    check_lut_contents(bitstream, res, coll)
    rv_nets, rv_segs = verify_handshake(bitstream, nets, coll, timeout_ms)
    try:
        dyn = check_dynamic(bitstream, res.routing.dynamic, coll)
    except RoutingError as exc:
        raise VerificationError(str(exc)) from None
    t4 = time.perf_counter()
    static = {n: p for n, p in nets.items() if p}
    sinks = sum(len(p) for p in static.values())
    return VerifyReport(len(static), len(want), sinks, proof.nodes, proof.select_vars,
                        {"expected": t1 - t0, "build": proof.build_seconds,
                         "solve": proof.solve_seconds, "ready_valid": t4 - t3,
                         "total": t4 - t0}, rv_nets, rv_segs, dyn)


def verify_handshake(bitstream: list[tuple[int, int]], nets: dict[str, list[list[str]]],
                     coll: Collateral, timeout_ms: int = 20_000) -> tuple[int, int]:
    """On a ready-valid design (routing graphs marked by :mod:`canal.ready_valid`), prove
    for every net routed on a ready-valid graph that each segment between enabled FIFO sites
    carries the start's data and valid to every endpoint and that the start's ready is the
    AND of the endpoints' readies (:func:`canal.rv_smt.prove_rv_net`, z3; Cascade §V-D).
    ``nets``: net -> its paths. Returns (nets proved, segments); (0, 0) on a static design.
    Raises :class:`VerificationError` naming the net and the first failing property (e.g.
    ``valid at <cb> fails``: a connection box whose valid enable the bitstream does not
    set), :class:`~cgra.errors.ConfigError` when z3 does not answer within ``timeout_ms``."""
    rv = {w for w, rg in coll.graphs.items() if graph_kind(rg.ig) != "static"}
    if not rv:
        return 0, 0
    graphs = {w: rg.ig for w, rg in coll.graphs.items()}
    configs = tile_configs(graphs)
    rows = config_map_rows(configs)
    n_nets = n_segs = 0
    for net, paths in sorted(nets.items()):
        if not paths or parse_id(paths[0][0]).width not in rv:
            continue
        pr = prove_rv_net(graphs, configs, bitstream, net, paths, timeout_ms, rows)
        if not pr.ok:
            more = f" (and {len(pr.violations) - 1} more)" if len(pr.violations) > 1 else ""
            raise VerificationError(f"net {net}: ready-valid handshake not proved: "
                                    f"{pr.violations[0].removeprefix(f'net {net}: ')}{more}; the bitstream must set the "
                                    f"valid enable (feature rv<w>, field <mux>_en) of every "
                                    f"switch-box output and connection box on the route")
        n_nets += 1
        n_segs += len(pr.segments)
    return n_nets, n_segs


def _explain(model: InterconnectModel, proof: ProofResult, selects: BitstreamSelects,
             want: dict[str, NodeValue], owner: dict[str, str],
             nets: dict[str, list[list[str]]]) -> str:
    bad = {v.node: v for v in proof.violations}
    src_owner = {paths[0][0]: net for net, paths in nets.items()
                 if paths and model.is_source(paths[0][0])}
    first = None
    for net, paths in nets.items():
        for path in paths:
            for a, b in pairwise(path):
                if b in bad:
                    first = (net, a, b)
                    break
            if first:
                break
        if first:
            break
    if first is None:
        v = proof.violations[0]
        return (f"bitstream does not realise net {owner.get(v.node)}: node {v.node} carries "
                f"{_describe(model, v.actual, src_owner)}, expected "
                f"{_describe(model, v.expected, src_owner)}")
    net, pred, node = first
    v = bad[node]
    fi = model.fanin[node]
    need = fi.index(pred)
    more = f" ({len(bad)} routed node(s) wrong in all)" if len(bad) > 1 else ""
    if len(fi) > 1:
        got = selects.get(node, 0)
        chosen = fi[got] if got < len(fi) else "constant 0"
        kind = ""
        if model.kind[node] is NodeKind.RMUX:
            kind = (" (pipeline register enabled where the route bypasses it)" if got == 1
                    else " (pipeline register bypassed where the route uses it)")
        elif v.actual.source is not None and v.actual.source != v.expected.source \
                and v.actual.source in src_owner:
            kind = f" (a second driver: net {src_owner[v.actual.source]})"
        return (f"bitstream does not realise net {net}: node {node} has select field "
                f"{model.field_name(node)} = {got} (fan-in {chosen}){kind}, the route needs "
                f"{need} (fan-in {pred}); the node carries "
                f"{_describe(model, v.actual, src_owner)} instead of "
                f"{_describe(model, v.expected, src_owner)}{more}")
    return (f"bitstream does not realise net {net}: node {node} carries "
            f"{_describe(model, v.actual, src_owner)} instead of "
            f"{_describe(model, v.expected, src_owner)}{more}")


def read_bitstream_file(path) -> BitstreamWords:
    """``[(addr, data)]`` of a ``.bs`` file (:func:`mapper.backend.bitstream.read_text_file`:
    :class:`CollateralError` when it cannot be read, :class:`~cgra.errors.ConfigError`
    naming the file and the line when a line is malformed); :func:`verify` names the file in
    its messages."""
    return read_text_file(path)


__all__ = ["VerificationError", "VerifyReport", "check_lut_contents", "check_report",
           "check_structure", "expected_values",
           "model_of", "read_bitstream_file", "verify"]
