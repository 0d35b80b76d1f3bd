"""SMT proof of valid / ready connectivity of a ready-valid net, together with its data
(issue 33, item 1; the ready-valid hardware is described in :mod:`canal.ready_valid`).

A routed net is cut into *segments* at its enabled FIFO sites: a segment starts at the
net's source (a core output) or at the output of an enabled site on the route, and ends at
the enabled sites and sink connection boxes the route reaches from there without crossing
another enabled site (its *endpoints*). Between cuts every signal is combinational wiring
(Cascade §V-D: "a valid signal will be routed in the exact same way [as the data] ... a ready
signal will be routed in the same way but in the opposite direction"), and the FIFOs
themselves are checked against their models by the primitive tests
(tests/canal/test_flow_control.py). For every segment the proof shows, for all values of the
free signals, under the configuration decoded from the bitstream:

* **data**: every endpoint's input carries the segment start's data (``dsrc(e) = id(start)``);
* **valid**: every endpoint's input valid is the segment start's valid (``vsrc(e) = id(start)``);
* **ready**: the start's ready is the AND of its endpoints' readies
  (``rdy(start) <-> AND_e R(e)``, ``R(e)`` free booleans: a socket's ready, a site's ready
  out) -- the multicast join.

Model (z3; one variable per config field of a node in the cone: the select ``sel(n)`` as in
:mod:`canal.smt`, the valid enable ``en(n)`` of each SB_OUT / connection box, constrained to
the values the bitstream writes). For a mux ``n`` with fan-in ``f_0 .. f_{k-1}``:
``dsrc(n) = dsrc(f_i)`` when ``sel(n) = i`` (0 when ``sel(n) >= k``), ``vsrc(n)`` = the
same gated by ``en(n)`` (ZERO when off); an SB_IN copies its source; a site copies its SB_OUT
when its FIFO is off (RMUX select 0) and is a segment start when on. The ready of a node with
one sink in its tile is ``match(t) and rdy(t)``, with several (an eager fork, its ``taken`` bits
clear) ``AND_t (not match(t) or rdy(t))``, where ``match(t) = en(t) and sel(t) = index`` for
a mux sink and true for a site or the tile's output port; an exported node's ready is the
ready of the neighbour's SB_IN (false at the array edge), a connection box's the free ready of
its socket, an enabled site's input ready the free ``R`` of the site. The cone: nodes reached
from a segment start along edges the configuration selects (nodes outside keep free terms,
so, as in :mod:`canal.smt`, slicing is sound; a mux is in the cone when its select picks the
cone, whatever its valid enable, so a cleared enable shows as a valid / ready violation).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

import z3

from cgra.errors import ConfigError, RoutingError

from canal.config import RV_FEATURE, TileConfig, config_map_rows
from canal.graph import IO, InterconnectGraph, Node, NodeKind, parse_id, rmux_id
from canal.ready_valid import graph_kind, site_rmux
from canal.smt import BitstreamSelects, field_spots

#: id of "no source" (constant 0 / valid forced low)
ZERO = 0


@dataclass
class RvProof:
    """Result of :func:`prove_rv_net`: ``ok``; ``segments`` (start node, endpoint nodes);
    ``violations`` (one line per property that does not hold, each checked on its own:
    the segment, the signal and the endpoint); ``seconds`` (solver wall time)."""

    ok: bool
    segments: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _rv_words(bitstream: Iterable[tuple[int, int]], rows: Iterable[Mapping]
              ) -> dict[str, int]:
    """Node id -> its valid enable (0/1) written by ``bitstream`` (reset 0), from the
    config-map rows of the ``rv<w>`` features."""
    words = {int(a): int(d) for a, d in bitstream}
    out: dict[str, int] = {}
    for r in rows:
        fname = str(r.get("feature_name", ""))
        if not (fname.startswith(RV_FEATURE) and fname[len(RV_FEATURE):].isdigit()):
            continue
        if not str(r["field"]).endswith("_en") or r.get("node") is None:
            continue
        out[r["node"]] = (words.get(int(r["addr"]), 0) >> int(r["lo"])) & 1
    return out


def _segments(g: InterconnectGraph, paths: Sequence[Sequence[str]], net: str
              ) -> dict[str, list[str]]:
    """Expected segments of one net: start node -> endpoint nodes (the node whose value
    enters the endpoint: a sink connection box, or the SB_OUT feeding an enabled site). A
    path may start at a REG (a net leaving a register placed at a site starts at the site's
    RMUX) and end at one (a net into a placed register: its last segment ends at the SB_OUT
    before the site)."""
    segs: dict[str, list[str]] = {}
    for path in paths:
        if not path or g.nodes.get(path[0]) is None:
            raise RoutingError(f"net {net}: path {list(path)[:3]}... does not start at a node "
                               f"of the {g.width}-bit graph")
        start = path[0]
        for i, nid in enumerate(path):
            n = g.nodes[nid]
            if n.kind is NodeKind.REG:
                if i:                   # (a path of a register-rooted net starts at its site)
                    ends = segs.setdefault(start, [])
                    if path[i - 1] not in ends:
                        ends.append(path[i - 1])
                start = site_rmux(g, n)
        if g.nodes[path[-1]].kind is NodeKind.REG:
            continue                    # a path into a placed register ends at its site
        ends = segs.setdefault(start, [])
        if path[-1] not in ends:
            ends.append(path[-1])
    return segs


def prove_rv_net(graphs: Mapping[int, InterconnectGraph],
                 configs: Mapping[tuple[int, int], TileConfig],
                 bitstream: Iterable[tuple[int, int]], net: str,
                 paths: Sequence[Sequence[str]], timeout_ms: int = 10_000,
                 rows: Sequence[Mapping] | None = None) -> RvProof:
    """Prove the data, valid and ready connectivity of net ``net`` (its ``paths``: node ids
    from the source to each sink, the REG of every enabled FIFO site included, as
    :func:`canal.ready_valid.rv_bitstream` takes them) under ``bitstream`` (``[(addr,
    data)]``) on a ready-valid graph (module docstring). Raises :class:`ConfigError` for a
    static graph or when z3 does not answer within ``timeout_ms``, :class:`RoutingError`
    for a path off the graph. ``rows``: the config-map rows of ``configs``
    (:func:`canal.config.config_map_rows`, or config_map.json's ``fields``), when the caller
    proves many nets (computed from ``configs`` otherwise)."""
    bitstream = list(bitstream)
    if not paths or not paths[0]:
        raise RoutingError(f"net {net}: no paths to prove")
    w = parse_id(paths[0][0]).width
    g = graphs.get(w)
    if g is None or graph_kind(g) == "static":
        raise ConfigError(f"net {net}: the {w}-bit graph is not ready-valid; mark it with "
                          f"canal.ready_valid.mark_graphs (flow_control = \"ready_valid\")")
    rows = config_map_rows(dict(configs)) if rows is None else rows
    sel_val = BitstreamSelects(bitstream, field_spots(rows))
    en_val = _rv_words(bitstream, rows)
    segs = _segments(g, paths, net)
    fo = g.fanout()
    ids = {nid: i + 1 for i, nid in enumerate(g.nodes)}
    sel_var: dict[str, z3.BitVecRef] = {}
    en_var: dict[str, z3.BoolRef] = {}
    cons: list = []

    def sel(n: str) -> z3.BitVecRef:
        v = sel_var.get(n)
        if v is None:
            bits = max(1, (len(g.fanin[n]) - 1).bit_length())
            v = sel_var[n] = z3.BitVec(f"sel[{n}]", bits)
            cons.append(v == sel_val.get(n, 0))
        return v

    def en(n: str) -> z3.BoolRef:
        v = en_var.get(n)
        if v is None:
            v = en_var[n] = z3.Bool(f"en[{n}]")
            cons.append(v == bool(en_val.get(n, 0)))
        return v

    def is_mux(n: Node) -> bool:
        return (n.kind is NodeKind.SB and n.io is IO.SB_OUT) or (
            n.kind is NodeKind.PORT and n.direction == "in")

    def site_on(rm: str) -> z3.BoolRef:
        fi = g.fanin[rm]
        reg = next(s for s in fi if g.nodes[s].kind is NodeKind.REG)
        return z3.BoolVal(True) if len(fi) == 1 else sel(rm) == fi.index(reg)

    def concrete_on(rm: str) -> bool:
        fi = g.fanin[rm]
        reg = next(s for s in fi if g.nodes[s].kind is NodeKind.REG)
        return len(fi) == 1 or sel_val.get(rm, 0) == fi.index(reg)

    def sinks_of(n: Node) -> list[str]:
        """The rv sinks of ``n`` in its tile (REG replaced by its site), plus "<port>" for
        an exported node."""
        out: list[str] = []
        for t in fo[n.id]:
            tn = g.nodes[t]
            if tn.kind is NodeKind.REG:
                t = site_rmux(g, tn)
                tn = g.nodes[t]
            if (tn.x, tn.y) == (n.x, n.y) and t not in out:
                out.append(t)
        if n.kind is NodeKind.RMUX or (n.kind is NodeKind.SB and n.io is IO.SB_OUT and
                                       rmux_id(w, n.x, n.y, n.side, n.track) not in g.nodes):
            out.append("<port>")
        return out

    dsrc: dict[str, z3.ArithRef] = {}
    vsrc: dict[str, z3.ArithRef] = {}
    rdy: dict[str, z3.BoolRef] = {}
    free_r: dict[str, z3.BoolRef] = {}
    results = RvProof(True)
    goals = []
    t0 = time.perf_counter()
    for start, ends in segs.items():
        # forward cone of the segment along selected edges, stopping at enabled sites
        cone = [start]
        seen = {start}
        k = 0
        while k < len(cone):
            n = g.nodes[cone[k]]
            k += 1
            if n.kind is NodeKind.PORT and n.direction == "in":
                continue
            for t in sinks_of(n):
                if t == "<port>":
                    nxt = fo[n.id]
                    for s in nxt:
                        if g.nodes[s].kind is NodeKind.SB and g.nodes[s].io is IO.SB_IN \
                                and s not in seen:
                            seen.add(s)
                            cone.append(s)
                    continue
                tn = g.nodes[t]
                if tn.kind is NodeKind.RMUX and t != start:
                    if concrete_on(t) or t in seen:
                        continue
                elif is_mux(tn):
                    fi = g.fanin[t]
                    if sel_val.get(t, 0) != fi.index(n.id):
                        continue
                if t not in seen:
                    seen.add(t)
                    cone.append(t)
        # forward value terms, in cone order (sources precede their selected sinks)
        for nid in cone:
            n = g.nodes[nid]
            if nid == start:
                dsrc[nid] = vsrc[nid] = z3.IntVal(ids[start])
                continue
            fi = g.fanin[nid]
            if n.kind is NodeKind.SB and n.io is IO.SB_IN:
                s = fi[0]
                dsrc[nid] = dsrc.get(s, z3.Int(f"d[{s}]"))
                vsrc[nid] = vsrc.get(s, z3.Int(f"v[{s}]"))
            elif n.kind is NodeKind.RMUX:
                s = next(f for f in fi if g.nodes[f].kind is not NodeKind.REG)
                on = site_on(nid)
                dsrc[nid] = z3.If(on, z3.Int(f"d[{nid}]"), dsrc.get(s, z3.Int(f"d[{s}]")))
                vsrc[nid] = z3.If(on, z3.Int(f"v[{nid}]"), vsrc.get(s, z3.Int(f"v[{s}]")))
            else:
                d = v = z3.IntVal(ZERO)
                for i in reversed(range(len(fi))):
                    s = fi[i]
                    d = z3.If(sel(nid) == i, dsrc.get(s, z3.Int(f"d[{s}]")), d) \
                        if len(fi) > 1 else dsrc.get(s, z3.Int(f"d[{s}]"))
                    v = z3.If(sel(nid) == i, vsrc.get(s, z3.Int(f"v[{s}]")), v) \
                        if len(fi) > 1 else vsrc.get(s, z3.Int(f"v[{s}]"))
                dsrc[nid] = d
                vsrc[nid] = z3.If(en(nid), v, z3.IntVal(ZERO))
        # ready terms, sinks before sources (reverse cone order)
        for nid in reversed(cone):
            n = g.nodes[nid]
            if n.kind is NodeKind.PORT and n.direction == "in":
                rdy[nid] = z3.And(en(nid), free_r.setdefault(nid, z3.Bool(f"R[{nid}]")))
                continue
            terms = []
            snk = sinks_of(n)
            for t in snk:
                if t == "<port>":
                    nb = [s for s in fo[nid] if g.nodes[s].kind is NodeKind.SB
                          and g.nodes[s].io is IO.SB_IN]
                    r_t = rdy.get(nb[0], z3.Bool(f"r[{nb[0]}]")) if nb else z3.BoolVal(False)
                    terms.append((z3.BoolVal(True), r_t))
                    continue
                tn = g.nodes[t]
                if tn.kind is NodeKind.RMUX and t != nid:
                    r_site = free_r.setdefault(t, z3.Bool(f"R[{t}]"))
                    r_t = z3.If(site_on(t), r_site, rdy.get(t, z3.Bool(f"r[{t}]")))
                    terms.append((z3.BoolVal(True), r_t))
                    continue
                fi = g.fanin[t]
                match = en(t) if len(fi) == 1 else z3.And(en(t), sel(t) == fi.index(nid))
                terms.append((match, rdy.get(t, z3.Bool(f"r[{t}]"))))
            if not terms:
                rdy[nid] = z3.BoolVal(False)
            elif len(terms) == 1:
                rdy[nid] = z3.And(*terms[0])
            else:
                rdy[nid] = z3.And(*[z3.Or(z3.Not(m), r) for m, r in terms])
        sid = ids[start]
        endpoints = []
        for e in ends:
            en_node = g.nodes[e]
            goals.append((f"segment {start}: data at {e}", dsrc.get(e, z3.Int(f"d[{e}]"))
                          == sid))
            goals.append((f"segment {start}: valid at {e}", vsrc.get(e, z3.Int(f"v[{e}]"))
                          == sid))
            if en_node.kind is NodeKind.PORT:
                endpoints.append(free_r.setdefault(e, z3.Bool(f"R[{e}]")))
            else:
                site = next(s for s in sinks_of(en_node) if s != "<port>")
                endpoints.append(free_r.setdefault(site, z3.Bool(f"R[{site}]")))
        goals.append((f"segment {start}: ready = AND of {len(ends)} endpoint(s)",
                      rdy[start] == z3.And(*endpoints)))
        results.segments.append((start, tuple(ends)))
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(*cons)
    solver.add(z3.Not(z3.And(*[gl for _, gl in goals])))
    res = solver.check()
    results.seconds = time.perf_counter() - t0
    if res == z3.unknown:
        raise ConfigError(f"net {net}: z3 gave no answer within {timeout_ms} ms "
                          f"({solver.reason_unknown()}); raise timeout_ms")
    if res == z3.sat:
        results.ok = False
        solver = z3.Solver()             # each goal on its own: every failing one is named
        solver.set("timeout", timeout_ms)
        solver.add(*cons)
        for what, gl in goals:
            solver.push()
            solver.add(z3.Not(gl))
            if solver.check() != z3.unsat:
                results.violations.append(f"net {net}: {what} fails")
            solver.pop()
        results.seconds = time.perf_counter() - t0
    return results


__all__ = ["RvProof", "prove_rv_net", "ZERO"]
