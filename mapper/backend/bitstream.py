"""Bitstream: the (address, data) pairs that configure a placed, routed and pipelined design.

Config address ``reg << 24 | feature << 16 | x << 8 | y`` (:func:`cgra.config.config_address`),
32-bit data. Entries, all sorted by address (so the same app + seed gives the same bitstream):

* **cores** (feature 0 of every used tile): the core config fields of the tile (the routing
  graph's ``config_fields`` of that tile) packed with :func:`cgra.config.encode_fields`, values
  from the instance: its packing fields (absorbed registers, constants, balancing input
  registers), every ``config`` entry whose key names a core field, ``config['fields']``, and for
  a MEM with port programs (``config['ports']``) the fields returned by the MEM encoder
  (default :func:`lake_mem_encoder`: ``lake.config.configure(config['preset'], ports)``);
  every register of feature 0 is written, fields not given keep their reset value (a PE
  tile holding a PE and a pond, tag ``o``, writes the fields of both: the pond's are
  Lake's encoder's under the tile's prefix, pe.json's ``pond``); a MEM
  in lookup-table mode (``config['lut']``, :func:`mapper.mapping.compute.lut_config`) gets the
  fields of :func:`lake.lut.lut_fields`;
* **lookup tables and pattern ROMs**: entry ``i`` of a lookup MEM's table (or word ``i`` of
  a coordinate-pattern ROM, :func:`mapper.mapping.memory.pattern_rom`) written to word ``i`` of its
  SRAM through the tile's config-memory features (:func:`canal.config.config_memory_writes`);
* **interconnect** (switch-box, connection-box and register-mux selects): the select of every
  mux a routed tree passes, from :func:`canal.config.route_selects` (the one definition: the
  select of ``b`` for tree edge ``a -> b`` is the index of ``a`` in ``b``'s fan-in list; a
  register mux selecting its ``REG`` is an enabled pipeline register). Field locations come
  from the config map (:class:`garnet.collateral.ConfigMap`); fields sharing a 32-bit register
  are OR-merged, other fields of such a register are 0;
* **ready-valid enables** (a design whose routing graphs are ready-valid, issue 33): the valid
  enable ``<mux>_en`` of every SB_OUT and connection box on a route (:func:`rv_words`; feature
  ``rv<w>`` of the config map, :attr:`garnet.collateral.ConfigMap.rv_fields`), OR-merged
  likewise; a register mux selecting its ``REG`` enables that site's FIFO.

Unused tiles get no entry (they stay in their reset configuration, powered on), unless
power gating is on (``power_gate``, ``cgra run --power-gate``): then each tile that holds no
placed instance and no routed node (:func:`mapper.backend.power.gated_tiles`) gets one word
setting its power-gate field (``pg`` feature, ``gate`` = 1; :mod:`canal.config`), and every
other entry is unchanged.

With ``quiet_unused`` (``cgra run --quiet-unused``; AHA §5.5) every mux that no routed net
uses, in a tile that is on (every tile not gated), gets a select whose input does not switch
(:func:`mapper.backend.quiet.quiet_selects`: a gated neighbour's clamped output, a constant,
another quiet unused node); the selects other than 0 are OR-merged into the words of their
registers (new words where no route wrote one, ``configures`` :data:`QUIET_WHAT`); every
routed select is unchanged. Off by default: existing bitstreams stay as they were.

Files (:meth:`Bitstream.save`): ``<name>.bs`` with one ``AAAAAAAA DDDDDDDD`` line (hex) per
entry, and ``<name>.bs.json`` (schema ``mapper.bitstream/1``) listing each entry with the tile,
feature, register and the fields it sets and what they configure. A ``.bs`` file is read by
:func:`read_text_file` (a malformed line is refused naming the file and the line) and its
words checked against the config map by :func:`check_words`.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from canal.config import route_selects
from canal.dynamic import DYN_FEATURE, TABLE_FEATURE_BASE
from canal.graph import IO, NodeKind, parse_id
from canal.router import NUM_PORTS
from canal.ready_valid import en_field, graph_kind
from cgra.config import config_address, encode_fields, pack_fields, split_address
from cgra.errors import CgraError, CollateralError, ConfigError
from garnet.collateral import PondInfo
from mapper.collateral import Collateral
from mapper.backend.dynamic import dynamic_masks, dynamic_words
from mapper.backend.pack import PackedDesign
from mapper.backend.place import Placement
from mapper.backend.power import gate_words, gated_tiles
from mapper.backend.quiet import QuietResult, quiet_selects, quiet_words
from mapper.backend.route import RoutingResult
from canal.config import config_memory_writes
from lake.config import configure
from lake.lut import check_table, lut_fields
from lake.spec import preset as lake_preset

SCHEMA = "mapper.bitstream/1"
#: the ``configures`` text of a power-gate word (an unused tile gated)
GATE_WHAT = "power gate (unused tile)"
#: the ``configures`` text of the select of a quieted unused mux (``quiet_unused``)
QUIET_WHAT = "quiet (unused mux)"

MemEncoder = Callable[[str, dict[str, Any], dict[str, Any]], dict[str, int]]
"""``(instance name, instance config, port programs) -> core field values``."""


def lake_mem_encoder(inst: str, config: dict[str, Any], ports: dict[str, Any]) -> dict[str, int]:
    """MEM field values from Lake port programs: ``lake.config.configure(config['preset'],
    ports, chain_index, chain_length)`` (a pure config encoder). Port names ``in<k>`` /
    ``out<k>`` (memory mapping's names) are the preset's k-th input / output port. Raises
    :class:`ConfigError` naming the instance when the preset is unknown or a program does not
    fit."""

    preset = config.get("preset")
    if preset is None:
        raise ConfigError(f"MEM {inst}: config has port programs but no 'preset'; name the Lake "
                          f"preset the programs are for")
    try:
        spec = lake_preset(preset)
        named: dict[str, Any] = {}
        for port, prog in ports.items():
            m = re.fullmatch(r"(in|out)(\d+)", port)
            names = list(spec.inputs if m and m.group(1) == "in" else spec.outputs)
            if m and port not in names:
                k = int(m.group(2))
                if k >= len(names):
                    raise ConfigError(f"port {port}: the preset has {len(names)} "
                                      f"{m.group(1)}put port(s) {names}")
                port = names[k]
            named[port] = prog
        return configure(preset, named, int(config.get("chain_index", 0)),
                         int(config.get("chain_length", 1)))
    except CgraError as exc:  # lake raises SpecError/ConfigError: re-raise with the instance
        raise ConfigError(f"MEM {inst}: cannot encode port programs for preset {preset!r}: "
                          f"{exc}") from None


@dataclass(frozen=True)
class Entry:
    """One bitstream word: ``addr``/``data`` (32 bits each) and what it configures:
    ``fields`` name -> value and ``what`` (instance or nets)."""

    addr: int
    data: int
    fields: tuple[tuple[str, int], ...]
    what: str

    def to_dict(self) -> dict[str, Any]:
        reg, feat, x, y = split_address(self.addr)
        return {"addr": f"{self.addr:08X}", "data": f"{self.data:08X}", "x": x, "y": y,
                "feature": feat, "reg": reg, "fields": dict(self.fields),
                "configures": self.what}


@dataclass
class Bitstream:
    """Sorted entries; ``pairs()`` gives ``[(addr, data)]``."""

    name: str
    entries: list[Entry]
    #: the quiet configuration of the unused muxes when ``generate(quiet_unused=True)``
    #: made it (:class:`mapper.backend.quiet.QuietResult`; not saved in the files)
    quiet: QuietResult | None = None

    def pairs(self) -> list[tuple[int, int]]:
        return [(e.addr, e.data) for e in self.entries]

    def to_text(self) -> str:
        return "".join(f"{e.addr:08X} {e.data:08X}\n" for e in self.entries)

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "design": self.name, "count": len(self.entries),
                "entries": [e.to_dict() for e in self.entries]}

    @classmethod
    def from_json(cls, doc: dict[str, Any], where: str = "<bitstream>") -> "Bitstream":
        """Inverse of :meth:`to_json`; :class:`CollateralError` naming ``where`` when the
        document is malformed."""
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            raise CollateralError(f"{where}: not a {SCHEMA} document; run `cgra bitstream` "
                                  f"again")
        try:
            entries = [Entry(int(e["addr"], 16), int(e["data"], 16),
                             tuple((str(k), int(v)) for k, v in e["fields"].items()),
                             str(e["configures"])) for e in doc["entries"]]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CollateralError(f"{where}: malformed bitstream entry ({exc}); run `cgra "
                                  f"bitstream` again") from None
        return cls(str(doc.get("design", "")), entries)

    def save_text(self, out_dir: str | Path) -> Path:
        """Write ``<name>.bs`` (:meth:`to_text`) into ``out_dir``, the one writer of the text
        form (a run directory's through :func:`mapper.stages.save_bitstream`); its path."""
        d = Path(out_dir)
        d.mkdir(parents=True, exist_ok=True)
        txt = d / f"{self.name}.bs"
        txt.write_text(self.to_text())
        return txt

    def save(self, out_dir: str | Path) -> tuple[Path, Path]:
        """Write ``<name>.bs`` (:meth:`save_text`) and ``<name>.bs.json`` into ``out_dir``
        (a bitstream outside a run directory); returns both paths."""
        txt = self.save_text(out_dir)
        js = Path(out_dir) / f"{self.name}.bs.json"
        js.write_text(json.dumps(self.to_json(), indent=1) + "\n")
        return txt, js


_LINE = re.compile(r"\s*([0-9A-Fa-f]{8})\s+([0-9A-Fa-f]{8})\s*")


class BitstreamWords(list):
    """``[(addr, data)]`` read from a ``.bs`` file (:func:`read_text_file`), word ``k - 1``
    from line ``k``; ``source`` names the file in error messages (:func:`check_words`)."""

    def __init__(self, pairs: list[tuple[int, int]], source: str):
        super().__init__(pairs)
        self.source = source


#: what fixes a bad bitstream file
REGENERATE = "regenerate the bitstream (`cgra bitstream`)"


def parse_text(text: str, where: str = "bitstream",
               fix: str = REGENERATE) -> list[tuple[int, int]]:
    """Inverse of :meth:`Bitstream.to_text`: one ``AAAAAAAA DDDDDDDD`` line (8 hexadecimal
    digits each) per word. Raises :class:`ConfigError` naming ``where`` and the line, ending
    with ``fix``."""
    out = []
    for k, line in enumerate(text.splitlines(), 1):
        m = _LINE.fullmatch(line)
        if m is None:
            raise ConfigError(f"{where} line {k}: expected 'AAAAAAAA DDDDDDDD' (address and "
                              f"data, 8 hexadecimal digits each), got {line!r}; {fix}")
        out.append((int(m.group(1), 16), int(m.group(2), 16)))
    return out


def read_text_file(path: str | Path, fix: str = REGENERATE) -> BitstreamWords:
    """The words of a ``.bs`` file (:func:`parse_text`). Raises :class:`CollateralError`
    when it cannot be read, :class:`ConfigError` naming the file and the line when a line is
    malformed; both end with ``fix``."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not text"
        raise CollateralError(f"{path}: cannot read bitstream ({why}); {fix}") from None
    return BitstreamWords(parse_text(text, str(path), fix), str(path))


def register_masks(coll: Collateral, addrs: set[int]) -> dict[int, int]:
    """Address -> the bits of its 32-bit data word that config fields occupy, for those of
    ``addrs`` that are config registers of the design: feature 0 of a tile with core config
    fields (:func:`cgra.config.pack_fields`), a mux select field of the config map
    (:attr:`garnet.collateral.ConfigMap.nodes`), a word of a tile's config memory
    (:func:`canal.config.config_memory_writes`) or a tile's power-gate field
    (:attr:`garnet.collateral.ConfigMap.power_gates`) or a ready-valid field
    (:attr:`garnet.collateral.ConfigMap.rv_fields`) or, on a hybrid array, a routing-table
    entry or injection / ejection field (:func:`mapper.backend.dynamic.dynamic_masks`). One
    pass over the config map."""
    tiles = coll.tiles
    wanted = {(a >> 8 & 0xFF, a & 0xFF) for a in addrs}
    masks: dict[int, int] = {}
    for xy in wanted:
        t = tiles.get(xy)
        if t is None:
            continue
        for sl in pack_fields(t.config_fields) if t.config_fields else ():
            a = sl.reg << 24 | xy[0] << 8 | xy[1]
            masks[a] = masks.get(a, 0) | ((1 << sl.width) - 1) << sl.lo
    for a in addrs:
        reg, feat, x, y = split_address(a)
        t = tiles.get((x, y))
        cm = t.config_memory if t is not None else None
        if cm is not None and cm.feature is not None and 0 <= feat - cm.feature < cm.features \
                and (feat - cm.feature) * 256 + reg < cm.words:
            masks[a] = masks.get(a, 0) | ((1 << cm.width) - 1)
    for xy, loc in coll.config_map.power_gates.items():
        if xy in wanted:
            a = loc.reg << 24 | loc.feature << 16 | xy[0] << 8 | xy[1]
            if a in addrs:
                masks[a] = masks.get(a, 0) | ((1 << loc.width) - 1) << loc.lo
    for x, y, locs in (*coll.config_map.nodes.values(), *coll.config_map.rv_fields.values()):
        if (x, y) not in wanted:
            continue
        for loc in locs:
            a = loc.reg << 24 | loc.feature << 16 | x << 8 | y
            if a in addrs:
                masks[a] = masks.get(a, 0) | ((1 << loc.width) - 1) << loc.lo
    for a, m in dynamic_masks(coll, addrs).items():
        masks[a] = masks.get(a, 0) | m
    return masks


def check_words(words: list[tuple[int, int]], coll: Collateral,
                where: str | None = None) -> None:
    """Every ``(addr, data)`` of ``words`` writes a config register of the design of
    ``coll`` (:func:`register_masks`: a tile of the array, and a core field, mux select
    field or config-memory word of that tile), each address once, and sets no data bit
    outside that register's fields. ``where`` (default: the ``source`` of
    :class:`BitstreamWords`, else ``bitstream``) and the line (word ``k - 1`` is line ``k``)
    are named. Raises :class:`ConfigError`. Linear in the words and the config map."""
    where = where or getattr(words, "source", "bitstream")
    fix = (f"the bitstream was not made for design {coll.name} or was changed; regenerate it "
           f"(`cgra bitstream`)")
    first: dict[int, int] = {}
    for k, (a, _d) in enumerate(words, 1):
        if a in first:
            raise ConfigError(f"{where} line {k}: address {a:08X} is written a second time "
                              f"(first on line {first[a]}); {fix}")
        first[a] = k
    masks = register_masks(coll, set(first))
    cols, rows = coll.size
    for k, (a, d) in enumerate(words, 1):
        reg, feat, x, y = split_address(a)
        at = f"address {a:08X} (tile ({x}, {y}), feature {feat}, register {reg})"
        m = masks.get(a)
        if m is None:
            t = coll.tiles.get((x, y))
            if not (x < cols and y < rows):
                why = f"tile ({x}, {y}) is off the {cols}x{rows} array"
            elif t is None or not t.tag:
                why = f"tile ({x}, {y}) has no core and no such register"
            else:
                why = (f"tile ({x}, {y}) (tag '{t.tag}', core {t.core}) has no config "
                       f"register {reg} in feature {feat}")
            raise ConfigError(f"{where} line {k}: {at} belongs to no config field of the "
                              f"config map: {why}; {fix}")
        if d & ~m:
            raise ConfigError(f"{where} line {k}: data {d:08X} at {at} sets bits "
                              f"{d & ~m:08X} that no config field of the register holds "
                              f"(its fields: {m:08X}); {fix}")


def core_values(packed: PackedDesign, inst: str, field_names: set[str],
                mem_encoder: MemEncoder | None, pond: PondInfo | None = None) -> dict[str, int]:
    """Core config field values of instance ``inst`` (rules in the module docstring); a
    pond (tag ``o``) gets Lake's fields with the prefix of ``pond`` (pe.json's
    :class:`~garnet.collateral.PondInfo`)."""
    pi = packed.instances[inst]
    vals: dict[str, int] = {}
    for k, v in pi.config.items():
        if k in field_names and isinstance(v, int) and not isinstance(v, bool):
            vals[k] = v
    vals.update({k: int(v) for k, v in pi.config.get("fields", {}).items()})
    if pi.tag == "m" and "ports" in pi.config:
        enc = mem_encoder or lake_mem_encoder
        vals.update(enc(inst, pi.config, pi.config["ports"]))
    if pi.tag == "o" and "ports" in pi.config:
        # a pond: Lake's fields under the PE tile's prefix (pe.json's pond)
        if pond is None:
            raise ConfigError(f"pond {inst}: the design's PE tiles have no pond (pe.json has "
                              f"no 'pond'); map the app without ponds or use a design with "
                              f"pond = \"pond_32x16\"")
        vals.update(pond.fields(lake_mem_encoder(inst, pi.config, pi.config["ports"])))
    if pi.tag == "m" and "lut" in pi.config:
        vals.update(lut_mem_fields(inst, pi.config))
    vals.update(pi.fields)
    return vals


def lut_mem_fields(inst: str, config: dict[str, Any]) -> dict[str, int]:
    """Core fields of a MEM in lookup-table mode (:func:`lake.lut.lut_fields` of
    ``config['preset']``), after checking its table fits the preset
    (:func:`lake.lut.check_table`). Raises :class:`ConfigError` naming the instance."""

    preset = config.get("preset")
    try:
        check_table(preset, config["lut"])
        return lut_fields(preset)
    except CgraError as exc:  # lake raises SpecError/ConfigError: re-raise with the instance
        raise ConfigError(f"MEM {inst}: cannot configure lookup-table mode for preset "
                          f"{preset!r}: {exc}") from None


def rom_contents(config: dict[str, Any]) -> list[int] | None:
    """The SRAM contents a MEM instance loads with the bitstream: a lookup table's entries
    (``config['lut']``) or a coordinate-pattern ROM's words (``config['rom']``,
    :func:`mapper.mapping.memory.pattern_rom`); ``None`` for other MEMs."""
    got = config.get("lut", config.get("rom"))
    return None if got is None else list(got)


def contents_writes(inst: str, xy: tuple[int, int], tile: Any, table: list[int]
                    ) -> list[tuple[int, int]]:
    """``(addr, data)`` writing ``table`` (a lookup table or a pattern ROM's words,
    :func:`rom_contents`) into the SRAM of the MEM at ``xy`` (word ``i`` = entry ``i``).
    Raises :class:`ConfigError` when the tile has no config memory or the table does not
    fit it."""

    cm = getattr(tile, "config_memory", None)
    if cm is None:
        raise ConfigError(f"MEM {inst} at tile {xy}: lookup-table contents need a MEM core "
                          f"with a config-bus memory; this design's core has none (regenerate "
                          f"the design with a dual-port Lake preset)")
    try:
        return config_memory_writes(xy[0], xy[1], cm, list(enumerate(table)))
    except ConfigError as exc:
        raise ConfigError(f"MEM {inst}: {exc}") from None


def rv_words(coll: Collateral, routes: dict[str, list[list[str]]]
             ) -> list[tuple[int, int, str, str]]:
    """The ready-valid bits of ``routes`` (net -> paths) on the fabric of ``coll``: the valid
    enable ``<mux>_en`` (feature ``rv<w>``, :func:`canal.ready_valid.en_field`) of every
    SB_OUT and connection box on a route of a ready-valid graph, as ``(address, bits, field,
    net)``; empty on static graphs. Split FIFOs (``_end`` bits) are not generated by
    ``cgra rtl`` and not handled here. Raises :class:`CollateralError` when a mux on a route
    has no enable in the config map."""
    out = []
    rv = {w for w, rg in coll.graphs.items() if graph_kind(rg.ig) != "static"}
    for net, paths in routes.items():
        seen: set[str] = set()
        for path in paths:
            for nid in path:
                if nid in seen:
                    continue
                seen.add(nid)
                w = parse_id(nid).width
                if w not in rv:
                    continue
                n = coll.graphs[w].ig.nodes[nid]
                if not ((n.kind is NodeKind.SB and n.io is IO.SB_OUT) or (
                        n.kind is NodeKind.PORT and n.direction == "in")):
                    continue
                name = en_field(n.local_name)
                x, y, locs = coll.config_map.rv_fields.get(nid, (0, 0, []))
                loc = next((lc for lc in locs if lc.name == name), None)
                if loc is None:
                    raise CollateralError(f"net {net}: ready-valid mux {nid} has no valid enable "
                                          f"{name} in the config map; {coll.regen_hint()}")
                out.append((config_address(loc.reg, loc.feature, x, y), 1 << loc.lo, name, net))
    return out


def generate(packed: PackedDesign, placement: Placement, routing: RoutingResult,
             coll: Collateral, mem_encoder: MemEncoder | None = None,
             power_gate: bool = False, quiet_unused: bool = False) -> Bitstream:
    """The bitstream of a design (module docstring) on the fabric of ``coll``. ``packed`` and
    ``routing`` should be the pipelined ones (:class:`mapper.backend.pipeline.PipelineResult`).
    ``power_gate``: also gate every unused tile (module docstring; a design without
    power-gate fields raises :class:`ConfigError`, :func:`mapper.backend.power.gate_words`).
    ``quiet_unused``: also give every unused mux of an on tile a quiet select (module
    docstring); the result is in :attr:`Bitstream.quiet`.
    Raises :class:`ConfigError` for a value that does not fit its field or an unknown field,
    :class:`~cgra.errors.RoutingError` for select conflicts, :class:`CollateralError` when a
    used mux is missing from the config map."""
    regs: dict[int, int] = {}
    fields: dict[int, list[tuple[str, int]]] = {}
    what: dict[int, list[str]] = {}
    # a PE tile with a pond holds two instances (a PE and a pond): their fields share the
    # tile's registers, so the values of every instance of a tile are merged first
    by_tile: dict[tuple[int, int], list[str]] = {}
    for inst, pi in packed.instances.items():
        if pi.tag != "r":
            by_tile.setdefault(tuple(placement.sites[inst]), []).append(inst)
    tile_vals: dict[tuple[int, int], dict[str, int]] = {}
    for xy, insts in by_tile.items():
        names = {f.name for f in coll.tiles[xy].config_fields}
        tile_vals[xy] = {}
        for inst in insts:
            tile_vals[xy].update(core_values(packed, inst, names, mem_encoder, coll.pond))
    for inst, pi in packed.instances.items():
        if pi.tag == "r":
            continue
        x, y = placement.sites[inst]
        flds = coll.tiles[(x, y)].config_fields
        vals = tile_vals[(x, y)]
        try:
            words = encode_fields(flds, vals)
        except ConfigError as exc:
            raise ConfigError(f"{pi.kind} {inst} at tile ({x}, {y}) core config: {exc}") from None
        full = {f.name: vals.get(f.name, f.reset) for f in flds}
        slices = pack_fields(flds)
        for reg, data in sorted(words.items()):
            addr = config_address(reg, 0, x, y)
            regs[addr] = data
            fields[addr] = [(s.name, (full[s.name] >> s.field_lo) & ((1 << s.width) - 1))
                            for s in slices if s.reg == reg]
            what[addr] = [f"{packed.instances[i].kind} {i} (core)" for i in by_tile[(x, y)]]
        contents = rom_contents(pi.config) if pi.tag == "m" else None
        if contents is not None:
            kind = "lookup table" if "lut" in pi.config else "pattern ROM"
            for addr, data in contents_writes(inst, (x, y), coll.tiles[(x, y)], contents):
                regs[addr] = data
                fields[addr] = [("lut_entry" if "lut" in pi.config else "rom_word", data)]
                what[addr] = [f"{pi.kind} {inst} ({kind})"]
    selects = route_selects({w: rg.ig for w, rg in coll.graphs.items()}, routing.routes())
    for node, (sel, net) in selects.items():
        if node not in coll.config_map.nodes:
            raise CollateralError(f"routing node {node} (net {net}) has several fan-ins but no "
                                  f"select field in the config map; {coll.regen_hint()}")
        x, y, locs = coll.config_map.nodes[node]
        for loc in locs:
            part = (sel >> loc.field_lo) & ((1 << loc.width) - 1)
            addr = config_address(loc.reg, loc.feature, x, y)
            regs[addr] = regs.get(addr, 0) | part << loc.lo
            fields.setdefault(addr, []).append((loc.name, part))
            what.setdefault(addr, []).append(f"net {net}")
    for addr, part, fname, net in rv_words(coll, routing.routes()):
        regs[addr] = regs.get(addr, 0) | part
        fields.setdefault(addr, []).append((fname, 1))
        what.setdefault(addr, []).append(f"net {net}")
    if routing.dynamic:
        dyn_nets = ", ".join(sorted(routing.dynamic))
        for addr, data in dynamic_words(coll, routing.dynamic):
            reg, feat, _x, _y = split_address(addr)
            regs[addr] = data
            fields[addr] = [(f"rt{feat - TABLE_FEATURE_BASE}[{reg}]"
                             if feat < TABLE_FEATURE_BASE + NUM_PORTS else DYN_FEATURE, data)]
            what[addr] = [f"dynamic layer (nets {dyn_nets})"]
    gated = gated_tiles(coll, placement, routing) if power_gate else []
    for addr, data, fname, value in gate_words(coll, gated):
        regs[addr] = data
        fields[addr] = [(fname, value)]
        what[addr] = [GATE_WHAT]
    quiet = quiet_selects(coll, routing, gated) if quiet_unused else None
    for addr, part, fname, value in quiet_words(coll, quiet.selects) if quiet else ():
        regs[addr] = regs.get(addr, 0) | part
        fields.setdefault(addr, []).append((fname, value))
        what.setdefault(addr, []).append(QUIET_WHAT)
    entries = [Entry(a, regs[a], tuple(fields[a]), ", ".join(dict.fromkeys(what[a])))
               for a in sorted(regs)]
    return Bitstream(packed.name, entries, quiet)
