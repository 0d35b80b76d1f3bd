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
  features with no field are not numbered, so numbers stay dense;
* last, when the core has a config memory (:class:`~cgra.core.ConfigMemory` of ``words``
  words of ``width`` bits, e.g. a Lake memory with ``lut=True``): ``P = ceil(words / 256)``
  features ``mem0`` .. ``mem<P-1>`` numbered from ``base`` = the number of features above.
  Storage word ``w`` is at address ``config_address(w % 256, base + w // 256, x, y)``; its
  value is the low ``width`` bits of the 32-bit data word (:func:`config_memory_writes`). A
  config write there writes the word into the core's storage; a config read returns it
  zero-extended to 32 bits (``read_data``, OR-ed with the other registers of the tile).

A select field is ``max(1, ceil(log2(fan-in)))`` bits wide and named ``<node local name>_sel``
(see :attr:`canal.graph.Node.local_name`); its value is the index of the chosen source in the
node's fan-in list. Fields of one feature are packed in the order above; fields sharing a
32-bit register are OR-merged by :func:`route_bitstream`.

The map is a pure function of the graphs, so the mapper can compute a bitstream from the
routing-graph collateral alone.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Mapping, Sequence

from cgra.config import ConfigField, FieldSlice, config_address, encode_fields, pack_fields
from cgra.core import ConfigMemory
from cgra.errors import ConfigError, RoutingError

from canal.graph import IO, InterconnectGraph, Node, NodeKind, Side

_SIDE_ORDER = {Side.NORTH: 0, Side.SOUTH: 1, Side.EAST: 2, Side.WEST: 3}


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


def tile_configs(graphs: Mapping[int, InterconnectGraph]) -> dict[tuple[int, int], TileConfig]:
    """The config map of every tile, from the graphs (all graphs share the tile set)."""
    widths = sorted(graphs, reverse=True)
    tiles = next(iter(graphs.values())).tiles if graphs else {}
    per_tile: dict[int, dict[tuple[int, int], list[Node]]] = {w: graphs[w].by_tile()
                                                              for w in widths}
    out: dict[tuple[int, int], TileConfig] = {}
    for (x, y), info in tiles.items():
        features = [Feature(0, "core", tuple(info.config_fields))]
        node_field: dict[str, tuple[int, str]] = {}
        for w in widths:
            g = graphs[w]
            nodes = per_tile[w].get((x, y), [])
            muxes = [n for n in nodes if len(g.fanin[n.id]) > 1]
            sbs = sorted((n for n in muxes if n.kind is NodeKind.SB and n.io is IO.SB_OUT),
                         key=_mux_sort_key)
            rmuxes = sorted((n for n in muxes if n.kind is NodeKind.RMUX), key=_mux_sort_key)
            others = [n for n in muxes if n.kind not in (NodeKind.SB, NodeKind.RMUX,
                                                         NodeKind.PORT)]
            if others:
                raise ConfigError(f"tile ({x}, {y}): node {others[0].id} has several fan-ins "
                                  f"but is not a switch-box, register or connection-box mux")
            sb_feat = [n for n in sbs + rmuxes]
            if sb_feat:
                fields = tuple(ConfigField(f"{n.local_name}_sel",
                                           select_width(len(g.fanin[n.id]))) for n in sb_feat)
                feat = Feature(len(features), f"sb{w}", fields,
                               {f.name: n.id for f, n in zip(fields, sb_feat, strict=True)})
                features.append(feat)
            order = {p.name: i for i, p in enumerate(info.ports)}
            cbs = sorted((n for n in muxes if n.kind is NodeKind.PORT),
                         key=lambda n: order.get(n.name, 1 << 30))
            for n in cbs:
                fld = ConfigField(f"{n.name}_sel", select_width(len(g.fanin[n.id])))
                features.append(Feature(len(features), f"cb_{n.name}", (fld,), {fld.name: n.id}))
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
        if len(features) > 256:
            extra = (f" ({cm.features} of them for the {cm.words}-word config memory)"
                     if cm is not None else "")
            raise ConfigError(f"tile ({x}, {y}) needs {len(features)} features{extra}; the "
                              f"config address has 8 feature bits (256); use fewer tracks "
                              f"or a smaller config memory")
        for f in features:
            for fname, nid in f.nodes.items():
                node_field[nid] = (f.index, fname)
        out[(x, y)] = TileConfig(x, y, features, node_field, cm)
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
    parts = nid.split(":")
    if len(parts) > 2 and parts[1].isdigit() and int(parts[1]) in graphs:
        g = graphs[int(parts[1])]
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


def config_map_rows(configs: dict[tuple[int, int], TileConfig]) -> list[dict]:
    """Every config field as a row: x, y, feature, feature_name, field, node (graph node id or
    null for core fields), reg, lo, width (bits), field_lo, addr (of its register)."""
    rows = []
    for (x, y), tc in configs.items():
        for f in tc.features:
            for s in f.slices:
                rows.append({"x": x, "y": y, "feature": f.index, "feature_name": f.name,
                             "field": s.name, "node": f.nodes.get(s.name), "reg": s.reg,
                             "lo": s.lo, "width": s.width, "field_lo": s.field_lo,
                             "addr": config_address(s.reg, f.index, x, y)})
    return rows
