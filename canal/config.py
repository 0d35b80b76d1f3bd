"""Config register map of a tile and the bitstream of a routing result.

Features of the tile at (x, y) (the 8-bit ``feature`` of the config address
``reg << 24 | feature << 16 | x << 8 | y``, :func:`cgra.config.config_address`):

* feature 0 — the core: its :class:`~cgra.config.ConfigField` list, packed with
  :func:`cgra.config.pack_fields` (present even when the core has no fields);
* then, for each bit width in descending order (16 before 1):
  - ``sb<w>``: one select field per switch-box output (SB_OUT) and per register mux (RMUX) of
    that width that has more than one fan-in, SB_OUTs first, each ordered by side
    (NORTH, SOUTH, EAST, WEST) then track; an RMUX select is the pipeline-register enable
    (0 = bypass, 1 = register);
  - ``cb_<port>``: one feature per core input of that width whose connection box has more than
    one fan-in (core port order), holding the field ``<port>_sel``;
  - ``rv<w>`` (only when the ``w``-bit graph is ready-valid, :mod:`canal.ready_valid`):
    a 1-bit valid enable ``<local name>_en`` per SB_OUT (ordered as the selects) and per
    connection box (core port order) -- 0 = the mux is unused: no valid out, no ready back
    -- then, with split FIFOs, a 1-bit ``<REG local name>_end`` per pipeline register site
    (0 = start half, 1 = end half), ordered as the RMUXes. These fields are not in
    ``TileConfig.node_field`` (which maps a node to its select); find them by name;
  features with no field are not numbered, so numbers stay dense;
* last, when the core has a config memory (:class:`~cgra.core.ConfigMemory` of ``words``
  words of ``width`` bits, e.g. a Lake memory with ``lut=True``): ``P = ceil(words / 256)``
  features ``mem0`` .. ``mem<P-1>`` numbered from ``base`` = the number of features above.
  Storage word ``w`` is at address ``config_address(w % 256, base + w // 256, x, y)``; its
  value is the low ``width`` bits of the 32-bit data word (:func:`config_memory_writes`). A
  config write there writes the word into the core's storage; a config read returns it
  zero-extended to 32 bits (``read_data``, OR-ed with the other registers of the tile);
* last of all, ``pg`` (:data:`POWER_GATE_FEATURE`): the tile's power-gate field ``gate``
  (:data:`POWER_GATE_FIELD`, 1 bit, reset 0 = on, 1 = gated). Every tile is one power domain
  (AHA paper §4.3: tile-level power gating). Numbered after every other feature so that the
  addresses of the features above are the same as in a map without it; an existing bitstream,
  which never writes ``pg``, leaves every tile on. The field lives in the always-on config
  domain (the config registers are not reset by gating); what gating does to the tile is in
  :mod:`canal.rtl`.

A select field is ``max(1, ceil(log2(fan-in)))`` bits wide and named ``<node local name>_sel``
(see :attr:`canal.graph.Node.local_name`); its value is the index of the chosen source in the
node's fan-in list. Fields of one feature are packed in the order above; fields sharing a
32-bit register are OR-merged by :func:`route_bitstream`.

The map is a pure function of the graphs, so the mapper can compute a bitstream from the
routing-graph collateral alone.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import groupby, pairwise
from operator import attrgetter
from typing import Mapping, Sequence

from cgra.config import ConfigField, FieldSlice, config_address, encode_fields, pack_fields
from cgra.core import ConfigMemory
from cgra.errors import CollateralError, ConfigError, RoutingError

from canal.dynamic import DYN_FEATURE, TABLE_FEATURE, TABLE_FEATURE_BASE, dyn_fields, dynamic_of
from canal.graph import IO, InterconnectGraph, Node, NodeKind, Side, TileInfo, parse_id
from canal.router import NUM_PORTS

_SIDE_ORDER = {Side.NORTH: 0, Side.SOUTH: 1, Side.EAST: 2, Side.WEST: 3}
_XY = attrgetter("x", "y")


#: name prefix of the ready-valid feature of a width (module docstring)
RV_FEATURE = "rv"
#: name of the power-gate feature of every tile (module docstring)
POWER_GATE_FEATURE = "pg"
#: the power-gate field of that feature: 1 bit, reset 0 (tile on); 1 gates the tile
POWER_GATE_FIELD = ConfigField("gate", 1, 0)


def select_width(fanin: int) -> int:
    """Bits of the select of a mux with ``fanin`` inputs (>= 1 bit)."""
    return max(1, (fanin - 1).bit_length())


@dataclass
class Feature:
    """One configurable block of a tile: ``index`` (the address feature), ``name``,
    ``fields`` in packing order, ``nodes``: field name -> graph node id (mux fields only).
    A config-memory feature (``mem<i>``) has no fields and ``words`` > 0: registers
    ``0 .. words-1`` are the core memory words ``256 * i + reg``."""

    index: int
    name: str
    fields: tuple[ConfigField, ...]
    nodes: dict[str, str] = field(default_factory=dict)
    words: int = 0

    def __post_init__(self) -> None:
        self.slices: list[FieldSlice] = pack_fields(self.fields)
        self.num_regs = (max(s.reg for s in self.slices) + 1) if self.slices else 0


@dataclass
class TileConfig:
    """The config space of tile (x, y): its features, node id -> (feature, field name), and
    the core's config memory (with ``feature`` = its first feature) or ``None``."""

    x: int
    y: int
    features: list[Feature]
    node_field: dict[str, tuple[int, str]] = field(default_factory=dict)
    config_memory: ConfigMemory | None = None

    def feature(self, name: str) -> Feature:
        for f in self.features:
            if f.name == name:
                return f
        raise ConfigError(f"tile ({self.x}, {self.y}) has no feature '{name}'; features: "
                          f"{[f.name for f in self.features]}")

    def registers(self) -> list[tuple[int, int]]:
        """All (feature, reg) pairs of the tile."""
        return [(f.index, r) for f in self.features for r in range(f.num_regs)]


def _mux_sort_key(n: Node) -> tuple:
    return (_SIDE_ORDER.get(n.side, 9) if n.side is not None else 9, n.track or 0)


def _tile_config(x: int, y: int, info: TileInfo, graphs: Mapping[int, InterconnectGraph],
                 widths: list[int], muxes: dict[int, list[Node]],
                 rv: Mapping[int, tuple[list[Node], list[Node]]] | None = None
                 ) -> TileConfig:
    """The config map of tile (x, y) (record ``info``); ``muxes``: width -> the tile's nodes
    with more than one fan-in, in graph order; ``rv``: width -> (the tile's SB_OUT and
    connection-box nodes, its split-FIFO sites) for the widths whose graph is ready-valid
    (:func:`_rv_nodes`), else absent."""
    features = [Feature(0, "core", tuple(info.config_fields))]
    node_field: dict[str, tuple[int, str]] = {}
    layer = dynamic_of(graphs)
    if layer is not None:
        # the hybrid tile's router (canal.dynamic): its routing tables, then injection /
        # ejection, right after the core so that the tables sit at the same features in
        # every tile (one router module)
        features += [Feature(TABLE_FEATURE_BASE + p, f"{TABLE_FEATURE}{p}", (), words=layer.ids)
                     for p in range(NUM_PORTS)]
        features.append(Feature(len(features), DYN_FEATURE, dyn_fields(info, layer)))
    for w in widths:
        g = graphs[w]
        mx = muxes[w]
        sbs = sorted((n for n in mx if n.kind is NodeKind.SB and n.io is IO.SB_OUT),
                     key=_mux_sort_key)
        rmuxes = sorted((n for n in mx if n.kind is NodeKind.RMUX), key=_mux_sort_key)
        others = [n for n in mx if n.kind not in (NodeKind.SB, NodeKind.RMUX, NodeKind.PORT)]
        if others:
            raise ConfigError(f"tile ({x}, {y}): node {others[0].id} has several fan-ins "
                              f"but is not a switch-box, register or connection-box mux")
        sb_feat = sbs + rmuxes
        if sb_feat:
            fields = tuple(ConfigField(f"{n.local_name}_sel",
                                       select_width(len(g.fanin[n.id]))) for n in sb_feat)
            feat = Feature(len(features), f"sb{w}", fields,
                           {f.name: n.id for f, n in zip(fields, sb_feat, strict=True)})
            features.append(feat)
        order = {p.name: i for i, p in enumerate(info.ports)}
        cbs = sorted((n for n in mx if n.kind is NodeKind.PORT),
                     key=lambda n: order.get(n.name, 1 << 30))
        for n in cbs:
            fld = ConfigField(f"{n.name}_sel", select_width(len(g.fanin[n.id])))
            features.append(Feature(len(features), f"cb_{n.name}", (fld,), {fld.name: n.id}))
        if rv is not None and w in rv:
            # ready-valid (canal.ready_valid): a valid enable per SB_OUT and connection
            # box, then a start/end bit per split-FIFO site
            rv_muxes, rv_regs = rv[w]
            order = {p.name: i for i, p in enumerate(info.ports)}
            ens = sorted((n for n in rv_muxes if n.kind is NodeKind.SB), key=_mux_sort_key) + \
                sorted((n for n in rv_muxes if n.kind is NodeKind.PORT),
                       key=lambda n: order.get(n.name, 1 << 30))
            sites = sorted(rv_regs, key=_mux_sort_key)
            fields = tuple([ConfigField(f"{n.local_name}_en", 1) for n in ens]
                           + [ConfigField(f"{n.local_name}_end", 1) for n in sites])
            if fields:
                features.append(Feature(len(features), f"{RV_FEATURE}{w}", fields,
                                        {f.name: n.id for f, n in zip(fields, ens + sites,
                                                                      strict=True)}))
    cm = info.config_memory
    if cm is not None:
        base = len(features)
        if cm.feature is not None and cm.feature != base:
            raise ConfigError(f"tile ({x}, {y}): the tile record puts the config memory "
                              f"at feature {cm.feature} but the graphs give {base}; "
                              f"regenerate the routing graphs")
        if cm.words < 1 or not 1 <= cm.width <= 32:
            raise ConfigError(f"tile ({x}, {y}): config memory of {cm.words} words of "
                              f"{cm.width} bits; need >= 1 word of 1..32 bits")
        cm = replace(cm, feature=base)
        for i in range(cm.features):
            features.append(Feature(base + i, f"mem{i}", (),
                                    words=min(256, cm.words - 256 * i)))
    features.append(Feature(len(features), POWER_GATE_FEATURE, (POWER_GATE_FIELD,)))
    if len(features) > 256:
        extra = (f" ({cm.features} of them for the {cm.words}-word config memory)"
                 if cm is not None else "")
        raise ConfigError(f"tile ({x}, {y}) needs {len(features)} features{extra}; the "
                          f"config address has 8 feature bits (256); use fewer tracks "
                          f"or a smaller config memory")
    for f in features:
        if f.name.startswith(RV_FEATURE) and f.name[len(RV_FEATURE):].isdigit():
            continue                    # second fields of mux nodes: found by name
        for fname, nid in f.nodes.items():
            node_field[nid] = (f.index, fname)
    return TileConfig(x, y, features, node_field, cm)


def _rv_nodes(graphs: Mapping[int, InterconnectGraph], widths: list[int]
              ) -> dict[int, dict[tuple[int, int], tuple[list[Node], list[Node]]]]:
    """width -> (x, y) -> (SB_OUT and connection-box nodes, split-FIFO sites) for the widths
    whose graph is marked ready-valid (``params["flow_control"]``, :mod:`canal.ready_valid`;
    sites only with ``fifo = "split"``). Empty for static graphs, whose config map is
    unchanged."""
    out: dict[int, dict[tuple[int, int], tuple[list[Node], list[Node]]]] = {}
    for w in widths:
        entry = graphs[w].params.get("flow_control")
        if not isinstance(entry, Mapping):
            continue
        split = entry.get("fifo") == "split"
        per: dict[tuple[int, int], tuple[list[Node], list[Node]]] = {}
        for n in graphs[w].nodes.values():
            if (n.kind is NodeKind.SB and n.io is IO.SB_OUT) or (
                    n.kind is NodeKind.PORT and n.direction == "in"):
                per.setdefault((n.x, n.y), ([], []))[0].append(n)
            elif split and n.kind is NodeKind.REG:
                per.setdefault((n.x, n.y), ([], []))[1].append(n)
        out[w] = per
    return out


def _tile_muxes(graphs: Mapping[int, InterconnectGraph], widths: list[int],
                tiles: Mapping[tuple[int, int], TileInfo]
                ) -> dict[int, dict[tuple[int, int], list[Node]]]:
    """width -> (x, y) -> the nodes of that tile with more than one fan-in (graph order);
    one pass over each graph (nodes outside the tile set are not needed)."""
    out: dict[int, dict[tuple[int, int], list[Node]]] = {}
    for w in widths:
        g = graphs[w]
        if list(g.nodes) == list(g.fanin):      # the usual case: same insertion order
            muxes = [n for n, fl in zip(g.nodes.values(), g.fanin.values(), strict=True)
                     if len(fl) > 1]
        else:
            muxes = [n for n in g.nodes.values() if len(g.fanin[n.id]) > 1]
        per: dict[tuple[int, int], list[Node]] = {xy: [] for xy in tiles}
        for xy, run in groupby(muxes, _XY):     # runs of one tile's nodes
            lst = per.get(xy)
            if lst is not None:
                lst.extend(run)
        out[w] = per
    return out


def _general_tile_configs(graphs: Mapping[int, InterconnectGraph]
                          ) -> dict[tuple[int, int], TileConfig]:
    """:func:`tile_configs` computed tile by tile, without sharing (the reference the
    template path of :func:`tile_configs` is tested against)."""
    widths = sorted(graphs, reverse=True)
    tiles = next(iter(graphs.values())).tiles if graphs else {}
    muxes = _tile_muxes(graphs, widths, tiles)
    rv = _rv_nodes(graphs, widths)
    return {(x, y): _tile_config(x, y, info, graphs, widths, {w: muxes[w][(x, y)]
                                                              for w in widths},
                                 {w: per.get((x, y), ([], [])) for w, per in rv.items()})
            for (x, y), info in tiles.items()}


@dataclass
class _Template:
    """A tile's config map with the coordinate-dependent parts factored out: per feature
    the positions (in the tile's mux list, all widths, graph order) of its nodes, and per
    ``node_field`` entry the position of its node."""

    config: TileConfig
    feature_nodes: list[tuple[Feature, tuple[str, ...], tuple[int, ...]]]
    node_field: list[tuple[int, tuple[int, str]]]

    @classmethod
    def of(cls, tc: TileConfig, ids: list[str]) -> "_Template":
        pos = {nid: i for i, nid in enumerate(ids)}
        feats = [(f, tuple(f.nodes), tuple(pos[nid] for nid in f.nodes.values()))
                 for f in tc.features]
        return cls(tc, feats, [(pos[nid], v) for nid, v in tc.node_field.items()])

    def stamp(self, x: int, y: int, ids: list[str]) -> TileConfig:
        """The config of tile (x, y) with the same signature, whose mux ids are ``ids``."""
        features = []
        for f, names, pos in self.feature_nodes:
            new = object.__new__(Feature)
            new.__dict__.update(f.__dict__)       # fields, slices, num_regs ... (shared)
            new.nodes = dict(zip(names, [ids[i] for i in pos], strict=True))
            features.append(new)
        return TileConfig(x, y, features, {ids[i]: v for i, v in self.node_field},
                          self.config.config_memory)


def tile_configs(graphs: Mapping[int, InterconnectGraph]) -> dict[tuple[int, int], TileConfig]:
    """The config map of every tile, from the graphs (all graphs share the tile set).

    Tiles with the same local structure have the same config up to the coordinates in
    their node ids, so the map is computed once per distinct tile *signature* and stamped
    for the other tiles. The signature is the tile record without (x, y) plus, per width,
    the (kind, side, track, io, name, width, fan-in count) of each node with more than one
    fan-in, in graph order: everything the config of a tile is a function of (nodes with one
    fan-in have no field), so stamping is exact on any graph, regular or not. A stamped
    tile's features share their ``fields`` and ``slices`` with the first tile of its
    signature (treat them as read-only); ``nodes`` and ``node_field`` are its own, with the
    ids of its own nodes. Errors are raised for the first tile (in tile order) that has
    them, as tile-by-tile computation would. Ready-valid graphs (:func:`_rv_nodes`) are
    computed tile by tile (:func:`_general_tile_configs`)."""
    widths = sorted(graphs, reverse=True)
    if _rv_nodes(graphs, widths):
        return _general_tile_configs(graphs)
    tiles = next(iter(graphs.values())).tiles if graphs else {}
    muxes = _tile_muxes(graphs, widths, tiles)
    fanins = {w: graphs[w].fanin for w in widths}
    attrs = attrgetter("kind", "side", "track", "io", "name", "width")
    get_id = attrgetter("id")
    templates: dict[tuple, _Template] = {}
    out: dict[tuple[int, int], TileConfig] = {}
    for xy, info in tiles.items():
        mx = {w: muxes[w][xy] for w in widths}
        ids: list[str] = []
        parts = []
        for w in widths:
            wids = list(map(get_id, mx[w]))
            ids += wids
            parts.append((tuple(map(attrs, mx[w])),
                          tuple(map(len, map(fanins[w].__getitem__, wids)))))
        sig = (info.core, info.tag, info.ports, info.config_fields, info.external,
               info.timing_class, info.config_memory, tuple(parts))
        tmpl = templates.get(sig)
        if tmpl is None:
            tc = _tile_config(xy[0], xy[1], info, graphs, widths, mx)
            templates[sig] = _Template.of(tc, ids)
        else:
            tc = tmpl.stamp(xy[0], xy[1], ids)
        out[xy] = tc
    return out


def config_memory_writes(x: int, y: int, cm: ConfigMemory,
                         words: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``[(addr, data)]`` (32 bits each, in the order given) writing core-memory words of
    tile (x, y): word index ``w`` (0 .. ``cm.words`` - 1) with value ``v`` (0 ..
    ``2**cm.width`` - 1) goes to ``config_address(w % 256, cm.feature + w // 256, x, y)``
    with data ``v``. ``cm`` is the tile record's config memory
    (``TileInfo.config_memory``, ``feature`` set). Raises :class:`ConfigError` naming the
    tile, the index or value and the limit."""
    if cm.feature is None:
        raise ConfigError(f"tile ({x}, {y}): config memory has no feature number; take it "
                          f"from the tile record of the routing graph (TileInfo.config_memory)")
    out = []
    for w, v in words:
        if not 0 <= w < cm.words:
            raise ConfigError(f"tile ({x}, {y}): config memory word index {w} is outside "
                              f"0..{cm.words - 1} ({cm.words} words); use a smaller index")
        if not 0 <= v < 1 << cm.width:
            raise ConfigError(f"tile ({x}, {y}): config memory word {w} = {v} does not fit "
                              f"{cm.width} bits (0..{(1 << cm.width) - 1}); reduce the value")
        out.append((config_address(w % 256, cm.feature + w // 256, x, y), int(v)))
    return out


Routes = Mapping[str, Sequence[Sequence[str]]] | Sequence[Sequence[Sequence[str]]]


def _find_graph(graphs: Mapping[int, InterconnectGraph], nid: str) -> InterconnectGraph | None:
    try:
        w = parse_id(nid).width
    except CollateralError:
        return None
    if w in graphs:
        g = graphs[w]
        if nid in g.nodes:
            return g
    return None


def route_selects(graphs: Mapping[int, InterconnectGraph], routes: Routes
                  ) -> dict[str, tuple[int, str]]:
    """Mux node id -> (select value, net) for a routing result.

    ``routes``: net id -> list of paths, each path a list of node ids from the source to one
    sink (or a list of nets, named by index). Raises :class:`RoutingError` for an unknown node,
    an edge not in the graph (naming the net and the two nodes), or a mux that two routes
    drive with different selects."""
    items = routes.items() if isinstance(routes, Mapping) else \
        ((str(i), paths) for i, paths in enumerate(routes))
    chosen: dict[str, tuple[int, str]] = {}
    for net, paths in items:
        if isinstance(paths, (str, bytes)) or (paths and isinstance(paths[0], str)):
            raise RoutingError(f"net {net}: give a list of paths (each a list of node ids), "
                               f"not a single path")
        for path in paths:
            for nid in path:
                if _find_graph(graphs, nid) is None:
                    raise RoutingError(f"net {net}: node '{nid}' is not in the interconnect "
                                       f"graphs (widths {sorted(graphs)}); use node ids from "
                                       f"the routing graph")
            for src, dst in pairwise(path):
                g = _find_graph(graphs, dst)
                fanin = g.fanin[dst]
                if src not in fanin:
                    raise RoutingError(f"net {net}: edge {src} -> {dst} is not in the "
                                       f"{g.width}-bit interconnect graph (fan-in of {dst}: "
                                       f"{fanin}); route only along graph edges")
                if len(fanin) > 1:
                    sel = fanin.index(src)
                    prev = chosen.get(dst)
                    if prev is not None and prev[0] != sel:
                        raise RoutingError(
                            f"net {net}: node {dst} is driven by {src} (select {sel}) but net "
                            f"{prev[1]} already selects {fanin[prev[0]]} (select {prev[0]}); "
                            f"a routing node carries one signal — reroute one of the nets")
                    chosen[dst] = (sel, net)
    return chosen


def route_bitstream(graphs: Mapping[int, InterconnectGraph], routes: Routes,
                    configs: dict[tuple[int, int], TileConfig] | None = None
                    ) -> list[tuple[int, int]]:
    """The bitstream of a routing result: sorted ``[(addr, data)]``, 32-bit each, one entry
    per config register holding at least one select used by the routes (other fields of that
    register are 0 = select fan-in 0 / register bypassed). Address
    ``reg << 24 | feature << 16 | x << 8 | y``; fields sharing a register are OR-merged.
    Raises :class:`RoutingError` as :func:`route_selects`."""
    configs = configs if configs is not None else tile_configs(graphs)
    selects = route_selects(graphs, routes)
    regs: dict[int, int] = {}
    for nid, (sel, _net) in selects.items():
        g = _find_graph(graphs, nid)
        n = g.nodes[nid]
        tc = configs[(n.x, n.y)]
        fidx, fname = tc.node_field[nid]
        feat = tc.features[fidx]
        for s in feat.slices:
            if s.name == fname:
                part = (sel >> s.field_lo) & ((1 << s.width) - 1)
                addr = config_address(s.reg, fidx, n.x, n.y)
                regs[addr] = regs.get(addr, 0) | part << s.lo
    return sorted(regs.items())


def core_bitstream(configs: dict[tuple[int, int], TileConfig], x: int, y: int,
                   values: dict[str, int]) -> list[tuple[int, int]]:
    """``[(addr, data)]`` writing the core (feature 0) config fields of tile (x, y); fields
    not in ``values`` take their reset value. Raises :class:`ConfigError` for an unknown tile
    or field."""
    if (x, y) not in configs:
        raise ConfigError(f"core config: no tile at ({x}, {y})")
    feat = configs[(x, y)].features[0]
    try:
        regs = encode_fields(feat.fields, values)
    except ConfigError as exc:
        raise ConfigError(f"tile ({x}, {y}) core: {exc}") from None
    return [(config_address(r, 0, x, y), d) for r, d in sorted(regs.items())]


def power_gate_feature(tc: TileConfig) -> Feature:
    """The ``pg`` feature of tile config ``tc`` (module docstring). Raises
    :class:`ConfigError` naming the tile when the map has none (a config map written before
    power domains: regenerate the design with ``cgra rtl``)."""
    for f in reversed(tc.features):
        if f.name == POWER_GATE_FEATURE:
            return f
    raise ConfigError(f"tile ({tc.x}, {tc.y}) has no power-gate feature "
                      f"'{POWER_GATE_FEATURE}'; regenerate the design with `cgra rtl`")


def power_gate_bitstream(configs: Mapping[tuple[int, int], TileConfig],
                         gated: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``[(addr, data)]`` (sorted, 32 bits each) setting the ``gate`` field of every tile of
    ``gated`` to 1 (tile off): one word per tile, register 0 of its ``pg`` feature, data 1.
    Raises :class:`ConfigError` for a tile not in ``configs`` or without the feature."""
    out = []
    for x, y in gated:
        tc = configs.get((x, y))
        if tc is None:
            raise ConfigError(f"power gate: no tile at ({x}, {y}) in the config map")
        f = power_gate_feature(tc)
        s = f.slices[0]
        out.append((config_address(s.reg, f.index, x, y), 1 << s.lo))
    return sorted(out)


def _tile_rows(x: int, y: int, tc: TileConfig) -> list[dict]:
    return [{"x": x, "y": y, "feature": f.index, "feature_name": f.name, "field": s.name,
             "node": f.nodes.get(s.name), "reg": s.reg, "lo": s.lo, "width": s.width,
             "field_lo": s.field_lo, "addr": config_address(s.reg, f.index, x, y)}
            for f in tc.features for s in f.slices]


def config_map_rows(configs: dict[tuple[int, int], TileConfig]) -> list[dict]:
    """Every config field as a row: x, y, feature, feature_name, field, node (graph node id or
    null for core fields), reg, lo, width (bits), field_lo, addr (of its register).

    Tiles whose features have the same index, name, ``slices`` list *object* and ``nodes``
    keys (the tiles :func:`tile_configs` stamps from one template) share a row template:
    the same list object holds the same slices, so only x, y, the node ids and the tile
    bits of ``addr`` differ, and they are filled in per tile. Configs built otherwise get a
    template per tile (the same rows, computed tile by tile). Address parts out of range
    raise :class:`ConfigError` from :func:`cgra.config.config_address` as before."""
    rows: list[dict] = []
    templates: dict[tuple, list[tuple]] = {}
    for (x, y), tc in configs.items():
        feats = tc.features
        key = tuple((f.index, f.name, id(f.slices), tuple(f.nodes)) for f in feats)
        tmpl = templates.get(key)
        if tmpl is None or not (0 <= x < 256 and 0 <= y < 256):
            rows += _tile_rows(x, y, tc)          # checks every address part
            templates[key] = [(j, f.index, f.name, s.name, s.name in f.nodes, s.reg, s.lo,
                               s.width, s.field_lo, s.reg << 24 | f.index << 16)
                              for j, f in enumerate(feats) for s in f.slices]
            continue
        xy = x << 8 | y
        rows += [{"x": x, "y": y, "feature": fi, "feature_name": fname, "field": sname,
                  "node": feats[j].nodes[sname] if has_node else None, "reg": reg, "lo": lo,
                  "width": width, "field_lo": field_lo, "addr": base | xy}
                 for j, fi, fname, sname, has_node, reg, lo, width, field_lo, base in tmpl]
    return rows


def column_ports(x: int) -> tuple[str, str, str, str]:
    """The top inputs of column ``x``'s configuration path in an array with per-column
    config paths (:class:`canal.rtl.ConfigColumns`; a design with a ``[glb]`` table):
    ``(cfg_valid_X<xx>, cfg_word_X<xx>, flush_X<xx>, stall_X<xx>)`` of 1, 64, 1 and 1 bits
    (``xx``: two hex digits). ``cfg_word`` is a config bundle ``addr << 32 | data`` taken
    when ``cfg_valid`` is 1; ``flush`` is OR-ed into the column's flush spine; ``stall``
    holds the column's tiles as ``clk_en = 0`` does (config writes still work)."""
    h = f"{x:02X}"
    return f"cfg_valid_X{h}", f"cfg_word_X{h}", f"flush_X{h}", f"stall_X{h}"
