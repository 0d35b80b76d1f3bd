"""A ready-valid (latency-insensitive) static interconnect: the choice per track class, the
FIFO sites of the routing graph, the bitstream bits of split FIFOs, and the Verilog of the
array (issue 33, item 1).

Choice (typed TOML, :mod:`garnet.params`): ``flow_control = "static" | "ready_valid"`` for
the whole interconnect, or a table per track class -- a track class is one bit width, i.e.
one routing graph (``flow_control = {16 = "ready_valid", 1 = "static"}``); ``fifo_kind =
"skid" | "split"`` (or a table per width) picks the FIFO of the ready-valid classes.
:func:`parse_flow_control` validates both into a :class:`FlowControl` (width -> ``static``,
``skid`` or ``split``).

FIFO sites (routing-graph collateral). Every pipeline register site of a ready-valid graph
(a ``REG`` node and the ``RMUX`` after it) becomes a FIFO site: a 2-entry skid FIFO
(:func:`canal.flow_control.skid_fifo`, depth 2 per site; Zhang, thesis ch. 3, per-hop
skid-buffered backpressure) or half of Cascade's split FIFO
(:func:`canal.flow_control.split_fifo_half`, depth 1 per site, two neighbouring sites form
one 2-entry FIFO; Cascade, Melchert et al., §V-D and §VI-E). :func:`mark_graphs` records the
choice in ``InterconnectGraph.params["flow_control"]`` = ``{"mode": "ready_valid", "fifo":
kind, "site_depth": 1 | 2}`` (written to and read back from both routing-graph formats by
:mod:`canal.collateral`); a static graph gets no entry, so its collateral is unchanged.
:func:`fifo_sites` lists the sites (REG id, RMUX id, kind, depth in words, bypassable).

Config map and bitstream. The RMUX select of a site is its FIFO enable (``fifo_en``: 0 = the
site is a wire, 1 = FIFO), so every select sits where the static map puts it. A ready-valid
width adds, per tile, the feature ``rv<w>`` (:func:`canal.config.tile_configs`): a 1-bit
valid enable ``<mux local name>_en`` per SB_OUT and connection box (:func:`en_field`), then,
for split FIFOs, a 1-bit ``<REG local name>_end`` per site (0 = start half, 1 = end half,
:func:`end_field`); :func:`rv_field` finds them. :func:`split_fifo_ends` assigns the ends
along each route (enabled sites alternate start, end, ... from the source) and
:func:`rv_bitstream` adds the enables of every mux on a route and the ends to
:func:`canal.config.route_bitstream`. A site whose RMUX has no bypass input
(``register_bypass_sides``) is always a FIFO (``fifo_en`` tied to 1).

RTL (:func:`canal.rv_rtl.rv_array`, Verilog text; a module is generated once per
distinct text). Per ready-valid width each routing node carries data ``d``, a valid ``v``
beside it through the same mux selects, and a ready ``r`` routed back: every SB_OUT and
connection box is an :func:`canal.flow_control.rv_mux` (select from the same config field
as the static mux; valid out and ready in gated by the mux's ``_en`` field, so an unused mux
with its reset select cannot join a route as a ghost sink), every site a FIFO; a node with
more than one sink in its tile (an SB_IN feeding SB_OUTs and connection boxes, a core output
feeding SB_OUTs) drives them through an eager :func:`canal.flow_control.rv_fork` whose
enable bit ``i`` is "sink ``i`` is enabled and selects this node", so a multicast route's
ready is the AND of the readies of its sinks and each sink takes each word exactly once. A
static width in a mixed array keeps plain muxes and registers. A routed core port is a
*socket* at the array top, ``<port>_X<xx>_Y<yy>`` (+ ``_valid``, ``_ready`` on ready-valid
widths), or, for the cores given to ``rv_array(cores=...)``, the core sits in the tile inside
a generated handshake wrapper (issue 33, item 2). Config bus and power gate as in
:mod:`canal.rtl` (``gate`` holds the tile's FIFOs and forks in
reset and clamps its outputs, valids and readies to 0).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from cgra.config import config_address
from cgra.errors import ConfigError, RoutingError, SpecError

from canal.config import RV_FEATURE, Routes, TileConfig
from canal.graph import IO, InterconnectGraph, Node, NodeKind, parse_id, rmux_id
from canal.interconnect import Interconnect

#: values of ``flow_control`` (per interconnect or per track class)
FLOW_CONTROLS = ("static", "ready_valid")
#: values of ``fifo_kind``
RV_FIFO_KINDS = ("skid", "split")
#: words one FIFO site holds, per kind (a split pair of two sites holds 2)
SITE_DEPTH = {"skid": 2, "split": 1}
#: key of ``InterconnectGraph.params`` marking a ready-valid graph
PARAMS_KEY = "flow_control"


@dataclass(frozen=True)
class FlowControl:
    """The flow control of each track class: ``kinds`` = ((width, ``static`` | ``skid`` |
    ``split``), ...) in descending width."""

    kinds: tuple[tuple[int, str], ...]

    def kind(self, width: int) -> str:
        """``static``, ``skid`` or ``split`` for the ``width``-bit tracks."""
        return dict(self.kinds)[width]

    @property
    def ready_valid(self) -> bool:
        """True when at least one track class is ready-valid."""
        return any(k != "static" for _, k in self.kinds)


def _per_width(value: Any, widths: Sequence[int], key: str, allowed: Sequence[str],
               where: str) -> dict[int, str]:
    """``value`` (a string, or a TOML table width -> string) as width -> string."""
    if isinstance(value, str):
        if value not in allowed:
            raise ConfigError(f"{where}field '{key}' = {value!r}: expected one of "
                              f"{list(allowed)} or a table per width, e.g. "
                              f"{{{widths[0]} = \"{allowed[-1]}\"}}")
        return {w: value for w in widths}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}field '{key}' = {value!r}: expected a string from "
                          f"{list(allowed)} or a table per width")
    out: dict[int, str] = {}
    for k, v in value.items():
        try:
            w = int(k)
        except (TypeError, ValueError):
            w = None
        if w not in widths:
            raise ConfigError(f"{where}field '{key}' key {k!r}: not a width of the "
                              f"interconnect; use one of {list(widths)}")
        if v not in allowed:
            raise ConfigError(f"{where}field '{key}' [{k}] = {v!r}: expected one of "
                              f"{list(allowed)}")
        out[w] = v
    return out


def parse_flow_control(flow_control: Any, fifo_kind: Any, widths: Sequence[int],
                       source: str | None = None) -> FlowControl:
    """Validate the TOML fields ``flow_control`` (``"static"`` | ``"ready_valid"`` or a table
    width -> one of them; widths not in the table are static) and ``fifo_kind`` (``"skid"``
    | ``"split"`` or a table width -> one of them; widths not in the table take ``skid``).
    Raises :class:`ConfigError` naming ``source``, the field and the fix."""
    where = f"{source}: " if source else ""
    widths = list(widths)
    if not widths:
        raise ConfigError(f"{where}field 'widths' is empty; give the interconnect widths")
    modes = {w: "static" for w in widths}
    modes.update(_per_width(flow_control, widths, "flow_control", FLOW_CONTROLS, where))
    fifos = {w: "skid" for w in widths}
    fifos.update(_per_width(fifo_kind, widths, "fifo_kind", RV_FIFO_KINDS, where))
    return FlowControl(tuple((w, "static" if modes[w] == "static" else fifos[w])
                             for w in sorted(widths, reverse=True)))


def graph_kind(graph: InterconnectGraph) -> str:
    """``static``, ``skid`` or ``split``: the flow control recorded in ``graph.params``
    (:func:`mark_graphs`). Raises :class:`ConfigError` for a malformed entry."""
    entry = graph.params.get(PARAMS_KEY)
    if entry is None:
        return "static"
    if not isinstance(entry, Mapping) or entry.get("mode") != "ready_valid" \
            or entry.get("fifo") not in RV_FIFO_KINDS:
        raise ConfigError(f"{graph.width}-bit routing graph: params.{PARAMS_KEY} = {entry!r}; "
                          f"expected {{'mode': 'ready_valid', 'fifo': 'skid' | 'split', "
                          f"'site_depth': 2 | 1}}; regenerate the routing graph")
    return entry["fifo"]


def mark_graphs(graphs: Mapping[int, InterconnectGraph], flow: FlowControl) -> None:
    """Record ``flow`` in each ready-valid graph's ``params`` (module docstring); static
    graphs are left untouched. Raises :class:`ConfigError` when ``flow`` names a width
    without a graph."""
    for w, kind in flow.kinds:
        if w not in graphs:
            raise ConfigError(f"flow control for {w}-bit tracks but the interconnect has "
                              f"widths {sorted(graphs)}")
        if kind != "static":
            graphs[w].params[PARAMS_KEY] = {"mode": "ready_valid", "fifo": kind,
                                            "site_depth": SITE_DEPTH[kind]}


def flow_of(graphs: Mapping[int, InterconnectGraph]) -> FlowControl:
    """The :class:`FlowControl` recorded in ``graphs`` (:func:`graph_kind` per width)."""
    return FlowControl(tuple((w, graph_kind(graphs[w])) for w in sorted(graphs, reverse=True)))


@dataclass(frozen=True)
class FifoSite:
    """One FIFO site: ``reg`` (REG node id), ``rmux`` (the RMUX after it), ``kind`` (``skid``
    | ``split``), ``depth`` (words held by the site: 2 skid, 1 split half), ``bypassable``
    (the RMUX can select the SB_OUT: ``fifo_en`` is a config bit, else tied to 1)."""

    reg: str
    rmux: str
    kind: str
    depth: int
    bypassable: bool


def site_rmux(graph: InterconnectGraph, reg: Node) -> str:
    rm = rmux_id(graph.width, reg.x, reg.y, reg.side, reg.track)
    if rm not in graph.nodes or reg.id not in graph.fanin[rm]:
        raise SpecError(f"pipeline register {reg.id} does not feed the RMUX {rm} of its track; "
                        f"a ready-valid FIFO site is a REG followed by its RMUX")
    return rm


def fifo_sites(graph: InterconnectGraph) -> list[FifoSite]:
    """The FIFO sites of a ready-valid ``graph`` in graph order (empty for a static graph).
    Raises :class:`SpecError` for a REG that does not feed its RMUX."""
    kind = graph_kind(graph)
    if kind == "static":
        return []
    out = []
    for n in graph.nodes.values():
        if n.kind is NodeKind.REG:
            rm = site_rmux(graph, n)
            out.append(FifoSite(n.id, rm, kind, SITE_DEPTH[kind], len(graph.fanin[rm]) > 1))
    return out


def end_field(reg_local_name: str) -> str:
    """Config field name of a split site's start/end bit (feature ``rv<w>``)."""
    return f"{reg_local_name}_end"


def en_field(mux_local_name: str) -> str:
    """Config field name of an SB_OUT's or connection box's valid enable (feature
    ``rv<w>``)."""
    return f"{mux_local_name}_en"


def rv_field(tc: TileConfig, node: Node, name: str) -> tuple[int, str]:
    """(feature index, field name) of field ``name`` of ``node`` in the ``rv<w>`` feature of
    tile config ``tc``. Raises :class:`ConfigError` when the map has no such field (the
    graph is not ready-valid, or the node has no such field)."""
    feat = f"{RV_FEATURE}{node.width}"
    for f in tc.features:
        if f.name == feat and f.nodes.get(name) == node.id:
            return f.index, name
    raise ConfigError(f"tile ({tc.x}, {tc.y}): no ready-valid field {name} of {node.id} in "
                      f"feature {feat}; mark the graph ready-valid (mark_graphs) before "
                      f"computing the config map")


def _find(graphs: Mapping[int, InterconnectGraph], nid: str) -> InterconnectGraph:
    try:
        w = parse_id(nid).width
    except Exception as exc:            # CollateralError: re-raised as a routing error
        raise RoutingError(f"node '{nid}' is not a routing node id ({exc})") from None
    g = graphs.get(w)
    if g is None or nid not in g.nodes:
        raise RoutingError(f"node '{nid}' is not in the interconnect graphs (widths "
                           f"{sorted(graphs)}); use node ids from the routing graph")
    return g


def split_fifo_ends(graphs: Mapping[int, InterconnectGraph], routes: Routes
                    ) -> dict[str, int]:
    """REG id -> 0 (start half) / 1 (end half) for every enabled split site on ``routes``
    (net -> paths, as :func:`canal.config.route_selects`): along each path from the source
    the enabled sites (the path enters the REG) alternate start, end, start, ... Raises
    :class:`RoutingError` naming the net and sink when a path crosses an odd number of
    enabled split sites (a start half without its end half), or when two paths of a net
    disagree on a shared site."""
    items = routes.items() if isinstance(routes, Mapping) else \
        ((str(i), paths) for i, paths in enumerate(routes))
    ends: dict[str, int] = {}
    for net, paths in items:
        for path in paths:
            k = 0
            for nid in path:
                g = _find(graphs, nid)
                if g.nodes[nid].kind is not NodeKind.REG or graph_kind(g) != "split":
                    continue
                prev = ends.get(nid)
                if prev is not None and prev != k % 2:
                    raise RoutingError(f"net {net}: split FIFO site {nid} is an "
                                       f"{'end' if prev else 'start'} half on one path and "
                                       f"not on another; route the sinks' paths so they "
                                       f"share whole start/end pairs")
                ends[nid] = k % 2
                k += 1
            if k % 2:
                raise RoutingError(f"net {net}: the path to {path[-1]} crosses {k} enabled "
                                   f"split FIFO sites; split halves pair up (start, end): "
                                   f"enable or bypass one more register on that path")
    return ends


def rv_bitstream(ic: Interconnect, routes: Routes) -> list[tuple[int, int]]:
    """The bitstream (sorted ``[(addr, data)]``) of ``routes`` on a ready-valid (or mixed)
    interconnect: :meth:`Interconnect.route_bitstream` (selects; an RMUX select of 1 enables
    its FIFO), plus on ready-valid widths the valid enable ``_en`` of every SB_OUT and
    connection box on a route and the ``_end`` bits of split sites
    (:func:`split_fifo_ends`), OR-merged into the registers they share. Raises
    :class:`RoutingError` as :func:`split_fifo_ends` and
    :func:`canal.config.route_bitstream`."""
    regs = dict(ic.route_bitstream(routes))
    ends = split_fifo_ends(ic.graphs, routes)
    configs = ic.configs
    items = routes.items() if isinstance(routes, Mapping) else \
        ((str(i), paths) for i, paths in enumerate(routes))
    bits: dict[str, str] = {}
    for _net, paths in items:
        for path in paths:
            for nid in path:
                g = _find(ic.graphs, nid)
                n = g.nodes[nid]
                if graph_kind(g) != "static" and ((n.kind is NodeKind.SB and n.io is IO.SB_OUT)
                                                  or (n.kind is NodeKind.PORT
                                                      and n.direction == "in")):
                    bits[nid] = en_field(n.local_name)
    for reg_id, end in ends.items():
        if end:
            bits[reg_id] = end_field(_find(ic.graphs, reg_id).nodes[reg_id].local_name)
    for nid, name in bits.items():
        n = _find(ic.graphs, nid).nodes[nid]
        tc = configs[(n.x, n.y)]
        fidx, fname = rv_field(tc, n, name)
        for s in tc.features[fidx].slices:
            if s.name == fname:
                addr = config_address(s.reg, fidx, n.x, n.y)
                regs[addr] = regs.get(addr, 0) | 1 << s.lo
    return sorted(regs.items())
