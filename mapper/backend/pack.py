"""Packing: fold what a PE tile can hold into the PE, and resolve netlist ports to core ports.

Input: a mapped :class:`mapper.netlist.Netlist` (instances of kind ``pe``/``mem``/``io_in``/
``io_out``/``reg``/``const`` with PnR tags ``p``/``m``/``I``/``i``/``r``) and the collateral
(:class:`mapper.collateral.Collateral`: its tiles give the cores' ports and config fields).

* **PE input registers.** A chain of ``k`` registers (tag ``r``), each with exactly one sink,
  in front of a PE data input ``port`` is absorbed into that PE when the PE can delay that
  input by ``k`` cycles (:func:`input_register`: an instruction field ``<port>_mode`` whose
  tags in ``pe.json`` include ``BYPASS`` and ``DELAY`` (1 cycle) and optionally ``DELAY<j>``
  (``j`` cycles, e.g. ``DELAY2``..``DELAY4`` of ``peak/examples/cgra_pe_d2.py``); the default
  PE has ``DELAY`` only, so ``k`` <= 1), or a core config field
  ``PackParams.input_reg_field.format(port=<core port>)``, 1 = registered, ``k`` <= 1): each
  register instance and its output net disappear and the input net of the chain drives the
  PE port directly. The absorbed registers keep their cycles of latency (recorded in
  ``PackedInstance.input_regs``, one name per cycle, for the pipelining pass).
* **Constants.** An instance of kind ``const`` (config ``value``) whose sinks are all PE inputs
  is folded into each PE as the field ``PackParams.const_field.format(port=<core port>)`` =
  value (and ``const_enable_field`` = 1 when the core has it); an unfoldable constant is a
  :class:`~cgra.errors.MappingError`.
* **Ponds** (tag ``o``, the PE tiles' register file, :mod:`mapper.mapping.memory` step 5):
  their Lake ports (``data_in_0``) resolve to the PE tile's prefixed core ports
  (``pond_data_in_0``, pe.json's ``pond``) through ``port_map["o"]``.
* **Other registers** stay as instances of tag ``r``; placement puts them in a tile and routing
  maps each onto one switch-box pipeline-register node (``REG``) of that tile.

Netlist port -> core port (:func:`resolve_core_port`), first rule that applies: an explicit
``PackParams.port_map[tag][port]``; a routable core port of the same name and width; a netlist
name ``in<k>``/``out<k>`` -> the k-th routable core input/output of the net's width (core port
order); the only routable core port of that direction and width.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from canal.routing import RoutingGraph
from cgra.errors import MappingError, RoutingError
from mapper.netlist import Netlist
from mapper.backend.nets import Terminal
from mapper.backend.route import TileSite

if TYPE_CHECKING:
    from peak.collateral import PEInfo
    from mapper.collateral import Collateral

PLACEABLE_TAGS = ("p", "m", "o", "I", "i", "r")


@dataclass
class PackParams:
    """Packing options. Field-name templates take ``{port}`` = the PE core port name.
    ``port_map``: tag -> netlist port -> core port (overrides the naming rules)."""

    absorb_input_regs: bool = True
    input_reg_field: str = "{port}_reg_en"
    fold_constants: bool = True
    const_field: str = "{port}_const"
    const_enable_field: str = "{port}_const_en"
    port_map: dict[str, dict[str, str]] = field(default_factory=dict)


_DELAY_TAG = re.compile(r"^DELAY(\d*)$")
#: the instruction field that sets a PE core input's mode (``{port}`` = the core port name)
MODE_FIELD = "{port}_mode"


def delay_codes(pe: PEInfo | None, field_name: str) -> dict[int, int]:
    """Delay depth (cycles) -> code of the instruction field ``field_name`` of ``pe.json``
    (``pe``), from the field's tags: ``DELAY`` (or ``DELAY1``) = 1 cycle, ``DELAY<k>`` =
    ``k`` cycles, and ``BYPASS`` = 0 cycles. Empty when the field is missing or lacks
    ``BYPASS`` or ``DELAY`` (the input cannot be registered through its mode). Raises
    :class:`MappingError` when two tags give the same depth."""
    if pe is None:
        return {}
    f = pe.field(field_name)
    tags = (f.tags if f is not None else None) or {}
    if "DELAY" not in tags or "BYPASS" not in tags:
        return {}
    out = {0: int(tags["BYPASS"])}
    for tag, code in tags.items():
        m = _DELAY_TAG.match(tag)
        if m is None:
            continue
        k = int(m.group(1) or 1)
        if k in out:
            raise MappingError(f"pe.json field {field_name}: tags give two codes for a "
                               f"{k}-cycle delay ({out[k]} and {code}); name each depth once")
        out[k] = int(code)
    return out


def mode_field_name(pe: PEInfo | None, config: dict[str, Any], port: str,
                    mode_field: str = MODE_FIELD) -> str:
    """The instruction field that sets the mode of PE core input ``port`` for an instance
    with ``config``: ``mode_field.format(port=port)`` when ``pe.json`` has that field; for an
    instruction that is a ``Sum`` of formats (fields ``<format>.<port>_mode``, e.g.
    ``peak/examples/cgra_pe_sum.py``), the field of the format the instance's tag selects
    (``config["instruction"]["<sum>._tag"]``), when that format has one. Otherwise the plain
    name (which :func:`delay_codes` then finds no tags for: no delay through the mode)."""
    name = mode_field.format(port=port)
    if pe is None or pe.field(name) is not None:
        return name
    values = config.get("instruction") or {}
    for f in pe.fields:
        if f.kind != "sum_tag" or not f.tags or f.name not in values:
            continue
        code = int(values[f.name])
        variant = next((v for v, c in f.tags.items() if int(c) == code), None)
        prefix = f.name[:-len("_tag")]               # "" or "<path>."
        cand = pe.field(f"{prefix}{variant}.{name}") if variant is not None else None
        if cand is not None and cand.variant_of == f.name:
            return cand.name
    return name


def input_delay(pe: PEInfo | None, config: dict[str, Any], port: str,
                mode_field: str = MODE_FIELD) -> int | None:
    """Cycles by which PE core input ``port`` of an instance with ``config`` (its
    ``instruction`` field values) is delayed by its mode field (0 = ``BYPASS``;
    :func:`mode_field_name`: a Sum instruction's selected format), or ``None`` when the
    input cannot be delayed through its mode (no such field or tags, no ``instruction``,
    or the input is a constant / another non-delay mode)."""
    if pe is None or "instruction" not in config:
        return None
    name = mode_field_name(pe, config, port, mode_field)
    codes = delay_codes(pe, name)
    if not codes:
        return None
    depth = {c: k for k, c in codes.items()}
    return depth.get(int(config["instruction"].get(name, codes[0])))


def max_input_delay(pe: PEInfo | None, port: str,
                    mode_field: str = MODE_FIELD) -> int:
    """The longest delay (cycles) the mode field of PE core input ``port`` offers (1 for the
    default PE, 4 for ``cgra_pe_d2``; 0 without a delay mode)."""
    return max(delay_codes(pe, mode_field.format(port=port)), default=0)


def input_register(pe: PEInfo | None, config: dict[str, Any], port: str,
                   mode_field: str = MODE_FIELD, cycles: int = 1) -> tuple[str, int] | None:
    """``(instruction field, code)`` that delays PE core input ``port`` of an instance with
    ``config`` (its ``instruction`` field values) by ``cycles`` more cycles than now: the
    instruction field ``mode_field`` switches from ``BYPASS`` / ``DELAY<j>`` to the tag of
    ``j + cycles`` cycles (tags from ``pe.json``, :func:`delay_codes`), else ``None`` (no
    such field, the input is a constant, or the PE has no ``j + cycles``-cycle mode: the
    default PE goes from ``BYPASS`` to ``DELAY`` only)."""
    now = input_delay(pe, config, port, mode_field)
    if now is None or cycles < 1:
        return None
    name = mode_field_name(pe, config, port, mode_field)
    code = delay_codes(pe, name).get(now + cycles)
    return None if code is None else (name, code)


def set_input_register(pe: PEInfo, config: dict[str, Any], field_name: str,
                       code: int) -> None:
    """Switch instruction field ``field_name`` to ``code`` in ``config`` (its ``instruction``
    values and the flat ``inst``, re-assembled with the ``pe.json`` layout)."""
    from peak.collateral import assemble_fields  # deferred: loads z3, pysmt, hwtypes, 1 more only when called

    instr = dict(config["instruction"])
    instr[field_name] = code
    config["instruction"] = instr
    config["inst"] = assemble_fields(pe, instr)


@dataclass
class PackedInstance:
    """An instance after packing: ``fields`` = core config field values set by packing
    (absorbed registers / constants); ``input_regs`` = PE core port -> the absorbed registers
    in front of it, nearest the PE first (one register = one cycle of intended latency: the
    chain's length is the input's delay); ``consts`` = PE core port -> folded constant value
    (16-bit)."""

    name: str
    kind: str
    tag: str
    config: dict[str, Any]
    fields: dict[str, int] = field(default_factory=dict)
    input_regs: dict[str, list[str]] = field(default_factory=dict)
    consts: dict[str, int] = field(default_factory=dict)


@dataclass
class PackedNet:
    """A net after packing: ``source``/``sinks`` are ``(instance, netlist port)``; width bits."""

    name: str
    width: int
    source: Terminal
    sinks: list[Terminal]


_IDX = re.compile(r"^(in|out)(\d+)$")


def resolve_core_port(site: TileSite, port: str, width: int, direction: str,
                      port_map: dict[str, str] | None = None, inst: str = "?") -> str:
    """The routable core port of ``site`` that netlist port ``port`` (``width`` bits,
    ``direction`` ``in``/``out`` seen from the core) maps to (rules in the module docstring).
    Raises :class:`RoutingError` naming the instance, the tile and the candidate ports."""
    cands = site.routable(width, direction)
    if port_map and port in port_map:
        name = port_map[port]
        if any(p.name == name for p in cands):
            return name
        raise RoutingError(f"instance {inst}: port_map sends '{port}' to core port '{name}' "
                           f"which is not a routable {width}-bit {direction}put of core "
                           f"'{site.core}' at tile ({site.x}, {site.y}); candidates: "
                           f"{[p.name for p in cands]}")
    for p in cands:
        if p.name == port:
            return p.name
    m = _IDX.match(port)
    if m and m.group(1) == direction and int(m.group(2)) < len(cands):
        return cands[int(m.group(2))].name
    if len(cands) == 1:
        return cands[0].name
    raise RoutingError(f"instance {inst}: netlist port '{port}' ({width}-bit {direction}put) "
                       f"matches no core port of '{site.core}' at tile ({site.x}, {site.y}); "
                       f"routable {width}-bit {direction}puts: {[p.name for p in cands]}; name "
                       f"the port like the core, use in<k>/out<k>, or give PackParams.port_map")


@dataclass
class PackedDesign:
    """The packed netlist: instances by name (netlist order), nets, the routing graphs'
    tiles (for port resolution), ``absorbed_regs`` (register -> (PE, core port)) and
    ``folded_consts`` (const instance -> [(PE, core port)])."""

    name: str
    instances: dict[str, PackedInstance]
    nets: list[PackedNet]
    port_map: dict[str, dict[str, str]]
    absorbed_regs: dict[str, tuple[str, str]] = field(default_factory=dict)
    folded_consts: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def core_port(self, inst: str, port: str, x: int, y: int, rg: RoutingGraph,
                  direction: str) -> str:
        """Core port name of netlist terminal ``(inst, port)`` placed in tile (x, y)."""
        site = rg.tiles[(x, y)]
        tag = self.instances[inst].tag
        return resolve_core_port(site, port, rg.width, direction, self.port_map.get(tag), inst)

    def counts(self) -> dict[str, int]:
        """Instances per PnR tag."""
        c: dict[str, int] = {}
        for i in self.instances.values():
            c[i.tag] = c.get(i.tag, 0) + 1
        return c

    def nets_of(self) -> dict[str, list[PackedNet]]:
        """instance -> nets touching it (source or sink)."""
        out: dict[str, list[PackedNet]] = {n: [] for n in self.instances}
        for n in self.nets:
            for inst in {n.source[0], *(s[0] for s in n.sinks)}:
                out[inst].append(n)
        return out


def _tile_of_tag(coll: Collateral, tag: str) -> TileSite | None:
    for t in coll.tiles.values():
        if t.tag == tag:
            return t
    return None


def pack(netlist: Netlist, coll: Collateral, params: PackParams | None = None) -> PackedDesign:
    """Pack ``netlist`` for the array of ``coll``.

    Raises :class:`MappingError` for an instance without a placeable tag (e.g. an unmapped
    ``kernel`` placeholder), a register with no or several input nets, or a constant that
    cannot be folded; :class:`RoutingError` for a PE port that matches no core port.
    """
    p = params or PackParams()
    netlist.validate()
    insts: dict[str, PackedInstance] = {}
    for name, i in netlist.instances.items():
        if i.tag not in PLACEABLE_TAGS:
            raise MappingError(f"netlist {netlist.name}: instance {name} (kind {i.kind}) has PnR "
                               f"tag {i.tag!r}; only {PLACEABLE_TAGS} can be placed (map "
                               f"compute kernels onto PEs before packing)")
        insts[name] = PackedInstance(name, i.kind, i.tag, dict(i.config))
    nets = [PackedNet(n.name, n.width, n.source, list(n.sinks)) for n in netlist.nets]
    packed = PackedDesign(netlist.name, insts, nets, {k: dict(v) for k, v in p.port_map.items()})
    if coll.pond is not None:
        # a pond (tag o) sits on a PE tile: its Lake ports are the tile's prefixed core ports
        packed.port_map["o"] = {**{q: coll.pond.port(q) for q in (*coll.pond.mem.in_ports,
                                                                  *coll.pond.mem.out_ports)},
                                **packed.port_map.get("o", {})}
    pe_site = _tile_of_tag(coll, "p")
    pe_fields = {f.name: f for f in pe_site.config_fields} if pe_site else {}

    def pe_core_port(inst: str, port: str, width: int) -> str | None:
        if pe_site is None or width not in coll.graphs:
            return None
        return resolve_core_port(pe_site, port, width, "in", packed.port_map.get("p"), inst)

    if p.fold_constants:
        for name, inst in list(insts.items()):
            if inst.kind != "const":
                continue
            outs = [n for n in nets if n.source[0] == name]
            if "value" not in inst.config:
                raise MappingError(f"constant {name} has no 'value' in its config")
            value = int(inst.config["value"])
            done: list[tuple[str, str]] = []
            for n in outs:
                for s_inst, s_port in n.sinks:
                    tgt = insts[s_inst]
                    cp = pe_core_port(s_inst, s_port, n.width) if tgt.tag == "p" else None
                    fname = p.const_field.format(port=cp) if cp else None
                    if fname is None or fname not in pe_fields:
                        raise MappingError(
                            f"constant {name} (value {value}) drives {s_inst}.{s_port}, which "
                            f"cannot hold a constant (needs a PE input with config field "
                            f"'{p.const_field.format(port=cp or s_port)}'); map the constant "
                            f"into the PE instruction or use a PE with constant inputs")
                    width = pe_fields[fname].width
                    enc = value + (1 << width) if value < 0 else value
                    if not 0 <= enc < 1 << width:
                        raise MappingError(f"constant {name} = {value} does not fit the "
                                           f"{width}-bit field {fname} of PE {s_inst}")
                    tgt.fields[fname] = enc
                    en = p.const_enable_field.format(port=cp)
                    if en in pe_fields:
                        tgt.fields[en] = 1
                    tgt.consts[cp] = value
                    done.append((s_inst, cp))
            nets = [n for n in nets if n.source[0] != name]
            del insts[name]
            packed.folded_consts[name] = done
    if p.absorb_input_regs and pe_site is not None:
        changed = True
        while changed:
            changed = False
            for name, inst in list(insts.items()):
                if inst.tag != "r":
                    continue
                ins = [n for n in nets if any(s[0] == name for s in n.sinks)]
                outs = [n for n in nets if n.source[0] == name]
                if len(ins) != 1:
                    raise MappingError(f"register {name} has {len(ins)} input nets; a register "
                                       f"needs exactly one driver")
                if len(outs) != 1 or len(outs[0].sinks) != 1:
                    continue
                s_inst, s_port = outs[0].sinks[0]
                if insts[s_inst].tag != "p":
                    continue
                cp = pe_core_port(s_inst, s_port, outs[0].width)
                fname = p.input_reg_field.format(port=cp)
                if cp in insts[s_inst].consts:
                    continue
                # one more cycle of the input's mode (BYPASS -> DELAY -> DELAY2 ...): a chain
                # of registers is absorbed one register per round, nearest the PE first
                mode = input_register(coll.pe, insts[s_inst].config, cp)
                if mode is not None:
                    set_input_register(coll.pe, insts[s_inst].config, *mode)
                elif fname in pe_fields and cp not in insts[s_inst].input_regs:
                    insts[s_inst].fields[fname] = 1
                else:
                    continue
                insts[s_inst].input_regs.setdefault(cp, []).append(name)
                ins[0].sinks = [(s_inst, s_port) if s == (name, "in") or s[0] == name else s
                                for s in ins[0].sinks]
                nets = [n for n in nets if n is not outs[0]]
                del insts[name]
                packed.absorbed_regs[name] = (s_inst, cp)
                changed = True
    for name, inst in insts.items():
        if inst.tag == "r":
            ins = [n for n in nets if any(s[0] == name for s in n.sinks)]
            if len(ins) != 1:
                raise MappingError(f"register {name} has {len(ins)} input nets; a register "
                                   f"needs exactly one driver")
    packed.instances = insts
    packed.nets = nets
    return packed


def stencil_netlist(name: str = "stencil", kh: int = 3, kw: int = 3, image_width: int = 64,
                    mem_preset: str = "dual_port_sram", extra_words: int = 0) -> Netlist:
    """A synthetic stencil netlist with the structure memory and compute mapping produce, for
    benchmarks and tests of the back end: one 16-bit input stream (``io_in``), ``kh - 1``
    line-buffer MEMs (one delay line of ``image_width`` words each, plus ``extra_words``),
    ``kw - 1`` registers per row, one multiply PE per tap (``data0``; instruction
    ``config['inst']``), a balanced-as-possible add tree of PEs (``data0``/``data1`` ->
    ``res``) and an output stream (``io_out``). Instance count: ``kh*kw + (kh*kw - 1)`` PEs,
    ``kh - 1`` MEMs, ``kh*(kw - 1)`` registers, 2 IOs."""
    nl = Netlist(name)
    nl.add_instance("io_in", "io_in", "I", {"program": {"dimensionality": 2, "extents": [
        image_width, image_width], "schedule": {"strides": [1, image_width], "offset": 0}}})
    sinks: dict[Terminal, list[Terminal]] = {}
    taps: list[Terminal] = []
    prev: Terminal = ("io_in", "out")
    for row in range(kh):
        if row:
            m = f"mem{row}"
            words = image_width + extra_words
            base = (row - 1) * image_width
            nl.add_instance(m, "mem", "m", {
                "preset": mem_preset,
                "ports": {"in0": {"dimensionality": 2, "extents": [words, image_width],
                                  "address": {"strides": [1, 0], "offset": 0},
                                  "schedule": {"strides": [1, words], "offset": base}},
                          "out0": {"dimensionality": 2, "extents": [words, image_width],
                                   "address": {"strides": [1, 0], "offset": 0},
                                   "schedule": {"strides": [1, words],
                                                "offset": base + image_width - 1}}},
                "segments": [{"buffer": "in", "lane": 0, "base": base,
                              "taps": [base + image_width], "words": words, "address": 0,
                              "passthrough": False}]})
            sinks.setdefault(prev, []).append((m, "in0"))
            prev = (m, "out0")
        sig = prev
        taps.append(sig)
        for col in range(1, kw):
            r = f"reg_r{row}_c{col}"
            nl.add_instance(r, "reg", "r", {"delay": 1})
            sinks.setdefault(sig, []).append((r, "in"))
            sig = (r, "out")
            taps.append(sig)
    level: list[Terminal] = []
    for k, s in enumerate(taps):
        p = f"mul{k}"
        nl.add_instance(p, "pe", "p", {"inst": 0x100 + k})
        sinks.setdefault(s, []).append((p, "data0"))
        level.append((p, "res"))
    j = 0
    while len(level) > 1:
        nxt = []
        for a in range(0, len(level) - 1, 2):
            p = f"add{j}"
            j += 1
            nl.add_instance(p, "pe", "p", {"inst": 0x200 + j})
            sinks.setdefault(level[a], []).append((p, "data0"))
            sinks.setdefault(level[a + 1], []).append((p, "data1"))
            nxt.append((p, "res"))
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    nl.add_instance("io_out", "io_out", "I", {"program": {
        "dimensionality": 2, "extents": [image_width, image_width],
        "schedule": {"strides": [1, image_width], "offset": (kh - 1) * image_width + kw - 1}}})
    sinks.setdefault(level[0], []).append(("io_out", "in"))
    for k, (src, ss) in enumerate(sinks.items()):
        nl.add_net(src, ss, 16, f"n{k}")
    nl.validate()
    return nl
