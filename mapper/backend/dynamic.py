"""The hybrid routing policy: static tracks first, overflow to the dynamic layer (issue 33,
item 4).

Source: Y. Zhang, PhD thesis (Stanford 2020), ch. 3.3.3: "the compiler ranks logical links
by activation x fanout ... high-bandwidth links are placed on the static network first, and
the remaining links overflow to the dynamic network"; VC allocation gives every logical
route its own VC on every physical link it shares (:mod:`canal.vc_alloc`).

* **Activity** (:func:`stream_activity`): the words a net carries per cycle of its schedule.
  A stream with a port program (an IO stream, a MEM read port) moves ``prod(extents)`` words
  over ``1 + sum((extent_i - 1) * stride_i)`` cycles; a PE or register output runs at the
  highest activity of its inputs; anything else (a constant, a program-less source) at 1.
* **Rank** (:func:`overflow_rank`): activity x fanout (the flits the net puts on the
  network per cycle when duplicated at the sinks).
* **Overflow** (:func:`mapper.backend.route.route_design`): route everything statically;
  when PathFinder does not converge on the layer's width, the net using an overused node
  with the *lowest* rank that the layer can carry (:func:`overflow_pick`: its source and
  sinks are core ports of the layer's width, its source tile does not inject another net,
  and the layer has a flow id left) moves to the dynamic layer, and routing starts again.
  Ties go to the net named first. When none of the congested nets can move, the congestion
  error names why, net by net.
* **Dynamic routes** (:func:`dynamic_routes`): the nets' flows routed XY on the mesh, VCs
  allocated and checked for deadlock (:func:`canal.dynamic.allocate_nets`); their initial
  tokens come from branch-delay matching (:mod:`mapper.backend.pipeline`).
* **Bitstream** (:func:`dynamic_words`): routing tables and injection / ejection fields
  (:func:`canal.dynamic.dynamic_bitstream`).
"""
from __future__ import annotations

from math import prod
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import networkx as nx

from canal.config import TileConfig, tile_configs
from canal.dynamic import (DYN_FEATURE, TABLE_FEATURE_BASE, DynamicLayer, DynamicNet,
                           allocate_nets, dyn_ports, dynamic_bitstream, dynamic_of)
from canal.router import NUM_PORTS, Port, TableEntry
from canal.rv_netsim import DynamicFlow, DynamicModel
from canal.vc_alloc import Link
from cgra.config import config_address, decode_fields, split_address
from cgra.errors import RoutingError
from mapper.backend.nets import DynamicRoute, Terminal
from mapper.collateral import Collateral

if TYPE_CHECKING:
    # annotations only: mapper.backend.pack imports mapper.backend.route, which imports this
    # module (the overflow policy), so a module-level import would be a circle
    from mapper.backend.pack import PackedDesign
    from mapper.backend.place import Placement


def layer_of(coll: Collateral) -> DynamicLayer | None:
    """The dynamic layer of the design of ``coll`` (its routing graphs' params), or None."""
    return dynamic_of({w: rg.ig for w, rg in coll.graphs.items()})


def _program_activity(prog: Any) -> float | None:
    if not isinstance(prog, Mapping):
        return None
    ext, sched = prog.get("extents"), prog.get("schedule")
    if not ext or not isinstance(sched, Mapping) or not sched.get("strides"):
        return None
    span = 1 + sum((int(e) - 1) * int(s) for e, s in zip(ext, sched["strides"], strict=False))
    return min(1.0, prod(int(e) for e in ext) / max(1, span))


def stream_activity(packed: PackedDesign) -> dict[str, float]:
    """Net name -> words per cycle (module docstring), in 0..1."""
    by_source: dict[str, dict[str, list]] = {}          # instance -> port -> its nets
    for n in packed.nets:
        by_source.setdefault(n.source[0], {}).setdefault(n.source[1], []).append(n)
    dag = nx.DiGraph()
    dag.add_nodes_from(packed.instances)
    dag.add_edges_from((n.source[0], s[0]) for n in packed.nets for s in n.sinks
                       if s[0] != n.source[0])
    order = list(nx.topological_sort(dag)) if nx.is_directed_acyclic_graph(dag) \
        else list(packed.instances)
    into: dict[str, float] = {}
    out: dict[str, float] = {}
    for inst in order:
        pi = packed.instances[inst]
        for port, nets in by_source.get(inst, {}).items():
            ports = pi.config.get("ports")
            prog = ports.get(port) if isinstance(ports, Mapping) else pi.config.get("program")
            act = _program_activity(prog)
            if act is None:
                act = into.get(inst, 1.0)
            for n in nets:
                out[n.name] = act
                for s, _ in n.sinks:
                    into[s] = max(into.get(s, 0.0), act)
    return out


def overflow_rank(packed: PackedDesign, activity: Mapping[str, float]) -> dict[str, float]:
    """Net name -> activity x fanout (module docstring)."""
    return {n.name: activity.get(n.name, 1.0) * len(n.sinks) for n in packed.nets}


def overflow_pick(packed: PackedDesign, placement: Placement, coll: Collateral,
                  layer: DynamicLayer, congested: Iterable[str], moved: list[str]
                  ) -> tuple[str | None, str]:
    """The congested net to move to the dynamic layer (lowest rank that the layer can carry,
    and whose move leaves the flows allocatable), or None and, net by net, why none can."""
    rank = overflow_rank(packed, stream_activity(packed))
    why: dict[str, str] = {}
    for name in sorted(congested, key=lambda n: (rank.get(n, 0.0), n)):
        if name in moved:
            why[name] = "already dynamic"
        elif len(moved) >= layer.ids:
            why[name] = f"all {layer.ids} flow ids are in use (dynamic.ids)"
        else:
            # the net's width, its terminals (no netlist register), one injection per
            # tile and the VCs: dynamic_routes checks them all
            try:
                dynamic_routes(packed, placement, coll, [*moved, name])
                return name, ""
            except RoutingError as exc:
                why[name] = str(exc)
    return None, "; ".join(f"{n}: {r}" for n, r in why.items())


def dynamic_routes(packed: PackedDesign, placement: Placement, coll: Collateral,
                   names: Iterable[str]) -> dict[str, DynamicRoute]:
    """The :class:`DynamicRoute` of each net of ``names`` (flow ids in that order, tokens 0),
    its flows allocated on the mesh (:func:`canal.dynamic.allocate_nets`). Raises
    :class:`RoutingError` on a static array, for a net that is not a core-to-core net of the
    layer's width, or when the flows cannot be allocated (naming the link or tile)."""
    layer = layer_of(coll)
    names = list(names)
    if layer is None:
        raise RoutingError(f"nets {names} are to go on the dynamic layer but design "
                           f"{coll.name} has none; add a dynamic = {{...}} table to its TOML")
    nets = {n.name: n for n in packed.nets}
    out: dict[str, DynamicRoute] = {}
    for fid, name in enumerate(names):
        net = nets.get(name)
        if net is None:
            raise RoutingError(f"dynamic net {name} is not a net of {packed.name}")
        rg = coll.graphs.get(net.width)
        if net.width != layer.width or rg is None:
            raise RoutingError(f"net {name} is {net.width}-bit; the dynamic layer carries "
                               f"{layer.width}-bit nets")
        for inst, _ in (net.source, *net.sinks):
            if packed.instances[inst].tag == "r":
                raise RoutingError(f"net {name} connects netlist register {inst}; registers "
                                   "sit on the static tracks' register sites")
        out[name] = DynamicRoute(name, fid, _at(packed, placement, rg, net.source, "out"),
                                 {s: _at(packed, placement, rg, s, "in") for s in net.sinks})
    allocate_nets(coll.size, layer, [_net(r) for r in out.values()])
    return out


def _at(packed: PackedDesign, placement: Placement, rg: Any, term: Terminal,
        direction: str) -> tuple[int, int, str]:
    """(x, y, core port) of netlist terminal ``term``."""
    inst, port = term
    x, y = placement.sites[inst]
    return x, y, packed.core_port(inst, port, x, y, rg, direction)


def _net(r: DynamicRoute) -> DynamicNet:
    return DynamicNet(r.id, r.source, tuple((*xyp, r.tokens.get(t, 0))
                                            for t, xyp in r.sinks.items()))


def tile_config_map(coll: Collateral) -> dict[tuple[int, int], TileConfig]:
    """The tile configs of a hybrid design (:func:`canal.config.tile_configs` of its graphs;
    computed once per collateral object and kept on it)."""
    cached = coll.__dict__.get("_dynamic_tile_configs")
    if cached is None:
        cached = tile_configs({w: rg.ig for w, rg in coll.graphs.items()})
        coll.__dict__["_dynamic_tile_configs"] = cached
    return cached


def dynamic_words(coll: Collateral, routes: Mapping[str, DynamicRoute]
                  ) -> list[tuple[int, int]]:
    """Config (addr, data) words of the dynamic routes (:func:`canal.dynamic.dynamic_bitstream`)."""
    layer = layer_of(coll)
    if layer is None or not routes:
        return []
    rs = sorted(routes.values(), key=lambda r: r.id)
    tiles = next(iter(coll.graphs.values())).tiles
    return dynamic_bitstream(tile_config_map(coll), tiles, coll.size, layer,
                             [_net(r) for r in rs])


def dynamic_masks(coll: Collateral, addrs: set[int]) -> dict[int, int]:
    """Address -> the bits config fields occupy, for the addresses of ``addrs`` that are
    routing-table entries or ``dyn`` fields of a hybrid design (empty on other designs)."""
    layer = layer_of(coll)
    if layer is None:
        return {}
    entry = (1 << layer.router.entry_width) - 1
    configs = tile_config_map(coll)
    out: dict[int, int] = {}
    for a in addrs:
        reg, feat, x, y = split_address(a)
        tc = configs.get((x, y))
        if tc is None:
            continue
        if TABLE_FEATURE_BASE <= feat < TABLE_FEATURE_BASE + NUM_PORTS and reg < layer.ids:
            out[a] = entry
            continue
        f = next((f for f in tc.features if f.index == feat and f.name == DYN_FEATURE), None)
        if f is not None:
            m = 0
            for s in f.slices:
                if s.reg == reg:
                    m |= ((1 << s.width) - 1) << s.lo
            if m:
                out[a] = m
    return out


def dynamic_model(coll: Collateral, routes: Mapping[str, DynamicRoute]
                  ) -> DynamicModel | None:
    """The dynamic nets of a run for the cycle-level model
    (:func:`canal.rv_netsim.simulate_streams` ``dynamic``): their allocation, tables, ports
    and tokens; None without dynamic nets."""
    layer = layer_of(coll)
    if layer is None or not routes:
        return None
    rs = sorted(routes.values(), key=lambda r: r.id)
    alloc = allocate_nets(coll.size, layer, [_net(r) for r in rs])
    rg = coll.graphs[layer.width]
    flows = []
    for r in rs:
        tok = {(x, y): r.tokens.get(t, 0) for t, (x, y, _) in r.sinks.items()}
        flows.append(DynamicFlow(
            r.id, rg.port_node(*r.source), tuple(r.source[:2]),
            {rg.port_node(*at): tuple(at[:2]) for at in r.sinks.values()}, tok,
            alloc.inject_vc(r.id),
            {xy: alloc.vcs[r.id][Link(*xy, Port.L)] for xy in tok}))
    return DynamicModel(layer, coll.size, alloc.tables(), flows)


def check_dynamic(bitstream: Iterable[tuple[int, int]], routes: Mapping[str, DynamicRoute],
                  coll: Collateral) -> int:
    """Decode the dynamic layer of ``bitstream`` and check it carries every net of ``routes``
    (``cgra verify``): the source tile injects the net's core output with its flow id; walking
    the routing tables from there (entry ``id`` of each input port, the VC of each hop) ejects
    at exactly the sink tiles; each sink input takes the ejection buffer of the VC the walk
    arrives on, with the net's initial tokens; no two flows share a VC on a link (the
    deadlock rule). Returns the number of nets checked; raises :class:`RoutingError` naming
    the net, the tile and the field."""
    if not routes:
        return 0
    layer = layer_of(coll)
    if layer is None:
        raise RoutingError(f"the routing has dynamic nets {sorted(routes)} but design "
                           f"{coll.name} has no dynamic layer")
    words = dict(bitstream)
    configs = tile_config_map(coll)
    tiles = next(iter(coll.graphs.values())).tiles
    rp = layer.router
    cols, rows = coll.size
    holder: dict[tuple, str] = {}

    decoded: dict[tuple[int, int], dict[str, int]] = {}

    def field(xy: tuple[int, int], name: str) -> int:
        if xy not in decoded:
            feat = configs[xy].feature(DYN_FEATURE)
            decoded[xy] = decode_fields(feat.fields, {
                r: words.get(config_address(r, feat.index, *xy), 0)
                for r in range(feat.num_regs)})
        return decoded[xy][name]

    def claim(link: tuple, vc: int, name: str) -> None:
        other = holder.setdefault((*link, vc), name)
        if other != name:
            raise RoutingError(f"dynamic nets {other} and {name} share VC {vc} on link {link}: "
                               "each logical route needs its own VC on a shared link")

    for r in sorted(routes.values(), key=lambda r: r.id):
        name = f"dynamic net {r.name} (flow {r.id})"
        x, y, port = r.source
        outs, _ = dyn_ports(tiles[(x, y)], layer.width)
        got = {f: field((x, y), f) for f in ("inj_en", "inj_sel", "inj_id", "inj_vc")}
        want = {"inj_en": 1, "inj_sel": outs.index(port) if port in outs else -1,
                "inj_id": r.id}
        bad = [f"{f} = {got[f]} (needs {v})" for f, v in want.items() if got[f] != v]
        if bad:
            raise RoutingError(f"{name}: tile ({x}, {y}) does not inject it: {'; '.join(bad)}")
        claim(("inject", x, y), got["inj_vc"], r.name)
        todo = [((x, y), int(Port.L), got["inj_vc"])]
        ejected: dict[tuple[int, int], int] = {}
        hops = 0
        while todo:
            xy, inp, vc = todo.pop()
            hops += 1
            if hops > 4 * cols * rows:
                raise RoutingError(f"{name}: its table route loops (through {xy})")
            word = words.get(config_address(r.id, TABLE_FEATURE_BASE + inp, *xy), 0)
            e = TableEntry.decode(word, rp)
            if not e.ports:
                raise RoutingError(f"{name}: router {xy} has no table entry for it on input "
                                   f"{Port(inp).name} (feature {TABLE_FEATURE_BASE + inp}, "
                                   f"register {r.id})")
            for o in e.ports:
                nv = e.next_vc[o]
                if o is Port.L:
                    ejected[xy] = nv
                    claim(("eject", *xy), nv, r.name)
                    continue
                dx, dy = o.delta
                nb = (xy[0] + dx, xy[1] + dy)
                if not (0 <= nb[0] < cols and 0 <= nb[1] < rows):
                    raise RoutingError(f"{name}: router {xy} sends it {o.name}, off the array")
                claim((*xy, o.name), nv, r.name)
                todo.append((nb, int(o.opposite), nv))
        sink_tiles = {(sx, sy) for sx, sy, _ in r.sinks.values()}
        if set(ejected) != sink_tiles:
            raise RoutingError(f"{name}: the tables eject it at {sorted(ejected)}, its sinks "
                               f"are in {sorted(sink_tiles)}")
        for t, (sx, sy, sport) in r.sinks.items():
            vc = ejected[(sx, sy)]
            got = {f"{sport}_dyn": field((sx, sy), f"{sport}_dyn"),
                   f"{sport}_dvc": field((sx, sy), f"{sport}_dvc"),
                   f"ej{vc}_tok": field((sx, sy), f"ej{vc}_tok")}
            want = {f"{sport}_dyn": 1, f"{sport}_dvc": vc, f"ej{vc}_tok": r.tokens.get(t, 0)}
            bad = [f"{f} = {got[f]} (needs {v})" for f, v in want.items() if got[f] != v]
            if bad:
                raise RoutingError(f"{name}: sink {t[0]}.{t[1]} at tile ({sx}, {sy}) does not "
                                   f"take it: {'; '.join(bad)}")
    return len(routes)


__all__ = ["check_dynamic", "dynamic_masks", "dynamic_model", "dynamic_routes", "dynamic_words", "layer_of",
           "overflow_pick", "overflow_rank", "stream_activity", "tile_config_map"]
