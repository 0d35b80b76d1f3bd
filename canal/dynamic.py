"""The dynamic (packet-switched) layer inside a ready-valid array: a hybrid static/dynamic
network (issue 33, item 3).

Source: Y. Zhang, PhD thesis (Stanford 2020), ch. 3.3: a hybrid network keeps the static
switch-box tracks and adds a router per tile ("the static network carries the high-bandwidth
links; the dynamic network is the safety net for the links the static network cannot
place"). The routers are :mod:`canal.router`'s (input-queued VCs, separable input-first
allocation, table-based routing and VC assignment), one per tile, linked N/E/S/W to the
neighbouring tiles' routers; each tile's local port connects to its core:

* **Injection.** One core output of the layer's width per tile can be injected
  (``inj_en``, ``inj_sel``: which output, in the tile record's port order, ``inj_vc``,
  ``inj_id``: the flow id). The output's eager fork gets the injection as one more sink,
  so a net can go static and dynamic at once; the router's local input is on/off
  (``in_ready[inj_vc]``).
* **Ejection.** The router's local output is credit-controlled
  (:attr:`canal.router.RouterParams.eject_credits`): per VC an ejection buffer of
  ``buffers`` words returns a credit when a word leaves it. Each core input of the layer's
  width can take its word from the buffer of VC ``<port>_dvc`` instead of its connection box
  (``<port>_dyn``; the connection box is then disabled). Several inputs of one tile that take
  the same VC get each word once through an eager fork (a multicast ending in one tile).
  Since every logical route has its own VC on every link it shares (:mod:`canal.vc_alloc`),
  the ejection VC names the net.
* **Initial tokens.** Ejection buffer ``v`` first delivers ``ej<v>_tok`` words of value 0
  (counted, not stored), then the flits. A static route with ``k`` pipeline registers is ``k``
  initial tokens in the ready-valid array (:mod:`canal.rv_rtl`, ``fifo_tokens``); a dynamic
  route holding ``k`` tokens is therefore transfer-equivalent to it, which is what lets the
  statically scheduled mapper move a net to the dynamic layer without changing any stream.
  The count is reloaded on every config write of its register.

Config (feature order of a hybrid tile, :func:`canal.config.tile_configs`): feature 0 the
core, features 1..5 the routing tables of input ports N, E, S, W, L (``ids`` registers each,
held by the router; :data:`TABLE_FEATURE_BASE`), feature 6 ``dyn`` (the fields above), then
the switch and connection boxes as in a static tile.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from cgra.config import ConfigField, config_address, encode_fields
from cgra.errors import ConfigError, RoutingError

from canal.graph import InterconnectGraph, TileInfo
from canal.router import MeshParams, Port, RouterParams
from canal.vc_alloc import Allocation, Flow, Link, allocate, check_deadlock

#: params key of the graph of the layer's width
PARAMS_KEY = "dynamic"
#: feature of the routing table of router input port 0 (N) in a hybrid tile
TABLE_FEATURE_BASE = 1
#: name of the injection / ejection feature
DYN_FEATURE = "dyn"
#: name prefix of the routing-table features (``rt0`` .. ``rt4``)
TABLE_FEATURE = "rt"


@dataclass(frozen=True)
class DynamicLayer:
    """A router per tile carrying the ``width``-bit track class: ``vcs`` VCs, ``buffers``
    flits per VC (default 3, the thesis's), ``ids`` flow ids (routing-table entries per
    input port), ``token_bits`` bits of an ejection buffer's initial-token count (0 ..
    2**token_bits - 1 tokens), ``flit_width`` bits per flit (0 = ``width``: a word is one
    flit; narrower: a word is ``ceil(width / flit_width)`` flits, LSB part first, sent one
    per cycle and reassembled at the ejection; thesis Table 3.2 ``f#``). Raises
    :class:`ConfigError` naming the field when a value is out of range."""

    width: int = 16
    vcs: int = 2
    buffers: int = 3
    ids: int = 16
    token_bits: int = 6
    flit_width: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.token_bits <= 16:
            raise ConfigError(f"dynamic.token_bits={self.token_bits} must be in 1..16")
        if not 0 <= self.flit_width <= self.width:
            raise ConfigError(f"dynamic.flit_width={self.flit_width} must be in "
                              f"1..{self.width} (the layer's width), or 0 for the width")
        _ = self.router                   # RouterParams checks vcs, buffers and ids

    @property
    def flit(self) -> int:
        """Bits per flit."""
        return self.flit_width or self.width

    @property
    def flits(self) -> int:
        """Flits per word (per packet)."""
        return self.router.flits_per_packet

    @property
    def router(self) -> RouterParams:
        """The routers' parameters (tables at :data:`TABLE_FEATURE_BASE`, eject credits)."""
        return RouterParams(vcs=self.vcs, buffers=self.buffers, flit_width=self.flit,
                            data_width=self.width, ids=self.ids,
                            feature_base=TABLE_FEATURE_BASE, eject_credits=True)

    @property
    def max_tokens(self) -> int:
        return (1 << self.token_bits) - 1

    def to_params(self) -> dict[str, int]:
        return {"vcs": self.vcs, "buffers": self.buffers, "ids": self.ids,
                "token_bits": self.token_bits} | (
            {"flit_width": self.flit_width} if self.flit_width else {})


def parse_dynamic(value: Any, widths: Sequence[int], source: str = "") -> DynamicLayer | None:
    """The ``dynamic`` TOML table (``{vcs, buffers, ids, token_bits, width}``, every key
    optional) or None when absent / ``false``. Raises :class:`ConfigError` naming ``source``
    and the field for an unknown key, a non-integer or out-of-range value, or a width that is
    not a track class."""
    where = f"{source}: " if source else ""
    if value is None or value is False:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}field 'dynamic' = {value!r}: give a table, e.g. "
                          "dynamic = {vcs = 2, buffers = 3}")
    allowed = ("width", "vcs", "buffers", "ids", "token_bits", "flit_width")
    for k, v in value.items():
        if k not in allowed:
            raise ConfigError(f"{where}field 'dynamic.{k}' is unknown; allowed: {list(allowed)}")
        if not isinstance(v, int) or isinstance(v, bool):
            raise ConfigError(f"{where}field 'dynamic.{k}' = {v!r} must be an integer")
    width = value.get("width", 16 if 16 in widths else max(widths))
    if width not in widths:
        raise ConfigError(f"{where}field 'dynamic.width' = {width} is not a track class; "
                          f"widths are {list(widths)}")
    try:
        return DynamicLayer(**{k: value[k] for k in allowed if k in value} | {"width": width})
    except ConfigError as e:
        raise ConfigError(f"{where}field 'dynamic' = {dict(value)!r}: {e}") from None


def mark_dynamic(graphs: Mapping[int, InterconnectGraph], layer: DynamicLayer) -> None:
    """Record ``layer`` in the params of the graph of its width (carried by the routing
    graph collateral). Raises :class:`ConfigError` when that width is not ready-valid."""
    g = graphs.get(layer.width)
    if g is None:
        raise ConfigError(f"dynamic layer width {layer.width} is not a track class")
    if not isinstance(g.params.get("flow_control"), Mapping):
        raise ConfigError(f"the dynamic layer needs ready-valid {layer.width}-bit tracks; "
                          f"set flow_control = \"ready_valid\" (or {{{layer.width} = "
                          f"\"ready_valid\"}})")
    g.params[PARAMS_KEY] = layer.to_params()


def dynamic_of(graphs: Mapping[int, InterconnectGraph]) -> DynamicLayer | None:
    """The layer recorded by :func:`mark_dynamic`, or None (a network without routers)."""
    for w, g in graphs.items():
        d = g.params.get(PARAMS_KEY)
        if isinstance(d, Mapping):
            return DynamicLayer(width=w, **{k: int(v) for k, v in d.items()})
    return None


def dyn_ports(info: TileInfo, width: int) -> tuple[list[str], list[str]]:
    """(outputs, inputs): the tile's core ports of ``width`` bits that the router can inject
    from / eject to, in the tile record's port order (external ports excluded)."""
    ports = [p for p in info.ports if p.width == width and p.name not in info.external]
    return ([p.name for p in ports if p.direction == "out"],
            [p.name for p in ports if p.direction == "in"])


def dyn_fields(info: TileInfo, layer: DynamicLayer) -> tuple[ConfigField, ...]:
    """The fields of the ``dyn`` feature of a tile with record ``info`` (module docstring);
    empty for a tile with no core port of the layer's width."""
    outs, ins = dyn_ports(info, layer.width)
    rp = layer.router
    fields: list[ConfigField] = []
    if outs:
        # the select width of canal.config.select_width (which imports this module)
        fields += [ConfigField("inj_en", 1),
                   ConfigField("inj_sel", max(1, (len(outs) - 1).bit_length())),
                   ConfigField("inj_vc", rp.vc_bits), ConfigField("inj_id", rp.id_bits)]
    for p in ins:
        fields += [ConfigField(f"{p}_dyn", 1), ConfigField(f"{p}_dvc", rp.vc_bits)]
    if ins:
        fields += [ConfigField(f"ej{v}_tok", layer.token_bits) for v in range(layer.vcs)]
    return tuple(fields)


@dataclass(frozen=True)
class DynamicNet:
    """A net on the dynamic layer: flow ``id``, source ``(x, y, core output port)``, sinks
    ``(x, y, core input port, initial tokens)``."""

    id: int
    source: tuple[int, int, str]
    sinks: tuple[tuple[int, int, str, int], ...]

    def flow(self) -> Flow:
        dsts = list(dict.fromkeys((x, y) for x, y, _, _ in self.sinks))
        return Flow(self.id, self.source[:2], tuple(dsts))


def allocate_nets(size: tuple[int, int], layer: DynamicLayer,
                  nets: Sequence[DynamicNet]) -> Allocation:
    """XY routes and VCs of ``nets`` on the array's mesh (:func:`canal.vc_alloc.allocate`),
    checked for deadlock. Raises :class:`RoutingError` naming the link when more nets share
    it than the router has VCs, or naming the tile when two nets inject at one tile (its
    local port injects one)."""
    seen: dict[tuple[int, int], int] = {}
    for n in nets:
        xy = n.source[:2]
        if xy in seen:
            raise RoutingError(f"tile {xy} injects dynamic nets {seen[xy]} and {n.id}; a "
                               "tile's router injects one net; route one of them on the "
                               "static tracks or place its source elsewhere")
        seen[xy] = n.id
    alloc = allocate(MeshParams(size[0], size[1], layer.router), [n.flow() for n in nets])
    check_deadlock(alloc)
    return alloc


def dynamic_bitstream(configs: Mapping[tuple[int, int], Any], tiles: Mapping[tuple[int, int],
                      TileInfo], size: tuple[int, int], layer: DynamicLayer,
                      nets: Sequence[DynamicNet]) -> list[tuple[int, int]]:
    """Config (addr, data) words of ``nets``: the routing tables of every router on them and
    the ``dyn`` fields of the source and sink tiles (``configs``: the tile configs,
    :func:`canal.config.tile_configs`). Raises :class:`RoutingError` as
    :func:`allocate_nets`, and :class:`ConfigError` naming the net for a port that is not a
    core port of the layer's width, a token count above ``2**token_bits - 1``, or two nets
    into one input."""
    alloc = allocate_nets(size, layer, nets)
    writes = dict(alloc.config_writes())
    values: dict[tuple[int, int], dict[str, int]] = {}
    for n in nets:
        x, y, port = n.source
        outs, _ = dyn_ports(tiles[(x, y)], layer.width)
        if port not in outs:
            raise ConfigError(f"dynamic net {n.id}: {port!r} of tile ({x}, {y}) is not a "
                              f"{layer.width}-bit core output; choose one of {outs}")
        values.setdefault((x, y), {}).update(inj_en=1, inj_sel=outs.index(port),
                                             inj_vc=alloc.inject_vc(n.id), inj_id=n.id)
        for sx, sy, sport, tokens in n.sinks:
            _, ins = dyn_ports(tiles[(sx, sy)], layer.width)
            if sport not in ins:
                raise ConfigError(f"dynamic net {n.id}: {sport!r} of tile ({sx}, {sy}) is not "
                                  f"a {layer.width}-bit core input; choose one of {ins}")
            if not 0 <= tokens <= layer.max_tokens:
                raise ConfigError(f"dynamic net {n.id}: {tokens} initial tokens at "
                                  f"({sx}, {sy}).{sport}; at most {layer.max_tokens} "
                                  f"(dynamic.token_bits = {layer.token_bits})")
            vc = alloc.vcs[n.id][Link(sx, sy, Port.L)]
            v = values.setdefault((sx, sy), {})
            if v.get(f"{sport}_dyn"):
                raise ConfigError(f"dynamic net {n.id}: input ({sx}, {sy}).{sport} already "
                                  "takes another dynamic net")
            old = v.get(f"ej{vc}_tok")
            if old is not None and old != tokens:
                raise ConfigError(f"dynamic net {n.id}: its sinks in tile ({sx}, {sy}) ask "
                                  f"for {old} and {tokens} initial tokens; they share one "
                                  "ejection buffer")
            v.update({f"{sport}_dyn": 1, f"{sport}_dvc": vc, f"ej{vc}_tok": tokens})
    for xy, vals in values.items():
        feat = configs[xy].feature(DYN_FEATURE)
        for reg, data in encode_fields(feat.fields, vals).items():
            writes[config_address(reg, feat.index, *xy)] = data
    return sorted(writes.items())


__all__ = ["DYN_FEATURE", "DynamicLayer", "DynamicNet", "PARAMS_KEY",
           "TABLE_FEATURE", "TABLE_FEATURE_BASE", "allocate_nets", "dyn_fields", "dyn_ports",
           "dynamic_bitstream", "dynamic_of", "mark_dynamic", "parse_dynamic"]
