"""RTL of the interconnect (magma): tiles and the array.

Tile module (one per distinct *tile shape* = core + the tile's local interconnect nodes and
fan-ins + config layout; named ``Tile_<core>_<hash>``, generated once per process):

* ports ``CLK``, ``RESET`` (sync, active high), ``clk_en`` (1 = run; gates pipeline registers
  and the core), ``flush`` (to the core); the tile config bus of ``docs/interfaces.md``:
  ``config_addr`` (32), ``config_data`` (32), ``config_write``, ``config_read``, ``tile_id``
  (16 = x << 8 | y) and ``read_data`` (32, 0 unless ``config_read`` and the address matches);
* per width ``w``, side and track ``t``: input ``SB_T<t>_<SIDE>_SB_IN_B<w>`` (the SB_IN node) and
  output ``SB_T<t>_<SIDE>_SB_OUT_B<w>`` (driven by the RMUX of that track if it has a pipeline
  register, else by the SB_OUT mux); ``Bit`` for w = 1, ``Bits[w]`` otherwise;
* the core's external ports (``CoreSpec.info["external"]``) under their own names.

Inside: one ``CanalMux_h<n>_w<w>`` instance ``mux_<local name>`` per SB_OUT, RMUX and
connection box (core input), its select from the tile's config registers
(:mod:`canal.config`); one register ``REG_T<t>_<SIDE>_B<w>`` per pipeline register (enabled by
``clk_en``, reset 0); the core instance ``core``; config registers ``cfg_f<feature>_r<reg>``
(32 bits, reset = the fields' reset values, written when ``config_write`` and the address
matches, independent of ``clk_en``).

Power domain (AHA paper §4.3, Fig. 10): each tile is one domain, switched by its ``pg``
feature's ``gate`` field (:mod:`canal.config`; reset 0 = on). While ``gate`` = 1 the tile
behaves as an unpowered one would: its pipeline registers and its core are held in reset
(``RESET | gate``; the core's ``clk_en`` is also low), so their state is lost, and every
output of the tile -- each ``SB_T*_SB_OUT_B*`` port and each external core output -- is
clamped to 0. The config registers (``pg`` among them) and ``read_data`` are the always-on
part of the tile, so a gated tile can be read back and switched on again. Isolation: an on
tile's inputs are the SB_IN ports of its neighbours' outputs, which are clamped to 0 when the
neighbour is gated, so the on tile's switch-box and connection-box muxes see a defined 0 on
every fan-in from a gated domain; the clamp at the output of the gated tile (one AND per
output bit, a 2:1 mux in the RTL) is the only isolation logic and no isolation cell is added
at the inputs of on domains (the AHA paper instead isolates with the existing muxes of the
*receiving* domain, which holds for a real power switch whose gated outputs float; here a
gated tile is modelled by its clamp, so the receiving mux selecting a clamped 0 is the
isolation). When the core has a config memory
(:class:`cgra.core.ConfigMemory`, features ``mem<i>`` of :mod:`canal.config`), an address
of those features drives the core's ``config_mem_addr`` (word ``(feature - base) * 256 +
reg``), ``config_mem_data`` (low ``width`` bits of ``config_data``), ``config_mem_write``
and ``config_mem_read``; ``read_data`` ORs in ``config_mem_rdata`` zero-extended.

Array module: one description, :func:`array_netlist` (:class:`ArrayNetlist`), from which
both the magma circuit (:func:`array_circuit`) and the Verilog text (:func:`array_verilog`,
what garnet writes: no magma/CIRCT run over the whole array) are built. Tiles
``Tile_X<xx>_Y<yy>`` (hex), tile_id constants, SB_IN of a tile driven by the neighbour's
output named in the graph (0 at the array edge), ``read_data`` = OR of all tiles, external
core ports as ``<port>_X<xx>_Y<yy>``. Top ports:
``CLK``, ``RESET``, ``clk_en``, ``flush`` and the config bus (``config_addr``, ``config_data``,
``config_write``, ``config_read``, ``read_data``). Flush: with ``flush_interval = N > 0`` each
column carries a pipelined flush spine with a register every N rows (row y sees ``flush``
delayed by ``y // N`` cycles; the spine registers are not stalled by ``clk_en``); with
``N = 0`` every tile gets ``flush`` directly. A wrapper (garnet) can instead instantiate
the array and drive ``flush`` itself.
"""
from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from cgra.hdl import m

from cgra.config import encode_fields
from cgra.core import CoreSpec
from cgra.errors import SpecError

from canal.config import column_ports
from canal.config import (POWER_GATE_FEATURE, POWER_GATE_FIELD, Feature, TileConfig,
                          select_width)
from canal.graph import (IO, InterconnectGraph, NodeKind, Side, iter_sides, no_gc, parse_id,
                         rmux_id, sb_id)
from canal.interconnect import Interconnect

def _t(width: int):
    return m.Bit if width == 1 else m.Bits[width]


def _zero(width: int):
    return m.Bit(0) if width == 1 else m.Bits[width](0)


@functools.lru_cache(maxsize=None)
def mux_circuit(height: int, width: int):
    """``CanalMux_h<height>_w<width>``: inputs ``I0..I<height-1>`` (``Bit`` for width 1),
    select ``S`` of ``max(1, ceil(log2 height))`` bits (absent for height 1), output ``O`` =
    ``I[S]`` (0 for S >= height)."""
    ports = {f"I{i}": m.In(_t(width)) for i in range(height)}
    sw = select_width(height)
    if height > 1:
        ports["S"] = m.In(m.Bits[sw])
    ports["O"] = m.Out(_t(width))
    circuit_name = f"CanalMux_h{height}_w{width}"

    class CanalMux(m.Circuit):
        name = circuit_name
        io = m.IO(**ports)
        _mux_body(io, height, width)
    return CanalMux


def _mux_body(io, height: int, width: int) -> None:
    if height == 1:
        io.O @= io.I0
        return
    ins = [getattr(io, f"I{i}") for i in range(height)]
    ins += [_zero(width)] * ((1 << select_width(height)) - height)
    io.O @= m.mux(ins, io.S)


@functools.lru_cache(maxsize=None)
def clamp_circuit(width: int):
    """``CanalClamp_w<width>``: the power-domain output clamp of a tile (module docstring):
    input ``I``, ``gate``; output ``O`` = ``I`` when ``gate`` = 0, else 0. One instance
    ``pg_clamp_<port>`` per tile output port; the structural check (:mod:`canal.check`) reads
    through it (the clamp is no node of the interconnect graph)."""
    circuit_name = f"CanalClamp_w{width}"

    class CanalClamp(m.Circuit):
        name = circuit_name
        io = m.IO(I=m.In(_t(width)), gate=m.In(m.Bit), O=m.Out(_t(width)))
        io.O @= m.mux([io.I, _zero(width)], io.gate)
    return CanalClamp


@dataclass(frozen=True)
class LocalNode:
    """A node of a tile shape: ``name`` = :attr:`Node.local_name`."""

    name: str
    kind: NodeKind
    width: int
    side: Side | None
    track: int | None
    io: IO | None
    port: str | None
    direction: str | None


@dataclass(frozen=True)
class TileShape:
    """Everything the tile RTL depends on. ``fanin``: (local dst, (local src, ...)); an SB_IN
    has no fan-in here (its source is in another tile; the array wires it).
    ``drop``: (src, dst) local names of one edge left out (test hook for the structural check).
    """

    core: str | None
    ports: tuple
    config_fields: tuple
    external: tuple[str, ...]
    nodes: tuple[LocalNode, ...]
    fanin: tuple[tuple[str, tuple[str, ...]], ...]
    drop: tuple[str, str] | None = None
    #: (first feature, words, width) of the core's config memory, or None
    config_memory: tuple[int, int, int] | None = field(default=None, repr=False)

    @functools.cached_property
    def module_name(self) -> str:
        key = repr(self) + (f" config_memory={self.config_memory}"
                            if self.config_memory is not None else "")
        digest = hashlib.sha1(key.encode()).hexdigest()[:10]
        core = re.sub(r"\W", "_", self.core) if self.core else "empty"
        return f"Tile_{core}_{digest}"


def exported_node(graph: InterconnectGraph, x: int, y: int, side: Side, track: int) -> str:
    """Id of the node that drives tile (x, y)'s output ``SB_T<track>_<side>_SB_OUT_B<w>``:
    the RMUX of that track if it exists, else the SB_OUT."""
    w = graph.width
    rm = rmux_id(w, x, y, side, track)
    return rm if rm in graph.nodes else sb_id(w, x, y, side, track, IO.SB_OUT)


def tile_shape(ic: Interconnect, x: int, y: int, drop: tuple[str, str] | None = None
               ) -> TileShape:
    """The shape of tile (x, y). ``drop`` = (src id, dst id) of a graph edge to leave out of
    the RTL (test hook). Raises :class:`SpecError` for graph structures the tile RTL cannot
    express (an edge from another tile into anything but an SB_IN, an SB_IN fed from inside
    its tile, a register with fan-in other than 1)."""
    return _tile_shape(ic, x, y, drop, _ShapeMemo())


def tile_shapes(ic: Interconnect) -> dict[tuple[int, int], TileShape]:
    """(x, y) -> :func:`tile_shape` of every tile (``ic.tiles`` order): equal results and
    the same first :class:`SpecError`. Tiles whose shapes are equal share one
    :class:`TileShape` object (so its ``module_name`` hash is computed once per distinct
    module), and equal :class:`LocalNode` s are one object (:class:`_ShapeMemo`)."""
    memo = _ShapeMemo()
    with no_gc():
        return {xy: _tile_shape(ic, xy[0], xy[1], None, memo) for xy in ic.tiles}


class _ShapeMemo:
    """Shared state of :func:`_tile_shape` calls on one interconnect. ``local_nodes``: the
    :class:`LocalNode` of every distinct (kind, width, side, track, io, name, direction) --
    every field of a node but its position, so equal keys give equal local nodes and equal
    local nodes come from equal keys; ``shapes``: (local-node identities, fan-in, drop) ->
    the TileShapes built with that structure (the tile records are compared on reuse)."""

    def __init__(self) -> None:
        self.local_nodes: dict[tuple, LocalNode] = {}
        self.shapes: dict[tuple, list[TileShape]] = {}


def _tile_shape(ic: Interconnect, x: int, y: int, drop: tuple[str, str] | None,
                memo: _ShapeMemo) -> TileShape:
    """:func:`tile_shape`, written for speed (a 64x32 array has 340 k nodes): the local
    node of a graph node comes from ``memo.local_nodes``; the local name of a fan-in source
    in the same tile is read from a map of the tile's own nodes (a source missing there is
    looked up in the graph and checked by position, as before); the checks and their order
    are those of the per-edge loop (first error raised is the same). The result is an
    earlier equal TileShape of ``memo`` when there is one: the key holds the tile's whole
    local structure, and the core fields and config memory are compared with ``==``."""
    info = ic.tiles[(x, y)]
    local_nodes = memo.local_nodes
    nodes: list[LocalNode] = []
    fanin: list[tuple[str, tuple[str, ...]]] = []
    drop_local = None
    sb, reg, port, sb_in = NodeKind.SB, NodeKind.REG, NodeKind.PORT, IO.SB_IN
    nbt = ic.nodes_by_tile
    for w in sorted(ic.graphs, reverse=True):
        g = ic.graphs[w]
        gnodes, gfanin = g.nodes, g.fanin
        here = nbt[w].get((x, y), [])
        names: dict[str, str] = {}           # id -> local name of this tile's nodes
        locals_: list[LocalNode] = []
        for n in here:
            key = (n.kind, n.width, n.side, n.track, n.io, n.name, n.direction)
            ln = local_nodes.get(key)
            if ln is None:
                ln = local_nodes[key] = LocalNode(n.local_name, *key[:5], n.name, n.direction)
            locals_.append(ln)
            names[n.id] = ln.name
        nodes += locals_
        for n, ln in zip(here, locals_, strict=True):
            nid = n.id
            kind = n.kind
            fi = gfanin[nid]
            if kind is sb and n.io is sb_in:
                if fi:
                    s = fi[0]
                    sn = gnodes[s]
                    if (sn.x, sn.y) == (x, y):
                        raise SpecError(f"{nid} at tile ({x}, {y}) is fed from inside its tile "
                                        f"({s}); an SB_IN can only be fed by a neighbour")
                    if len(fi) > 1:
                        raise SpecError(f"{nid} has {len(fi)} fan-ins; an SB_IN is a "
                                        f"wire with at most one source")
                fanin.append((ln.name, ()))   # the array wires it; not part of the shape
                continue
            srcs = []
            for s in fi:
                nm = names.get(s)
                if nm is None:
                    sn = gnodes[s]
                    if (sn.x, sn.y) != (x, y):
                        raise SpecError(f"edge {s} -> {nid} crosses tiles but does not end at "
                                        f"an SB_IN; route inter-tile wires through switch boxes")
                    nm = sn.local_name
                srcs.append(nm)
                if drop is not None and drop == (s, nid):
                    drop_local = (nm, ln.name)
            if kind is reg and len(srcs) != 1:
                raise SpecError(f"pipeline register {nid} has fan-in {fi}; a "
                                f"register has exactly one source")
            if kind is port and n.direction == "out" and srcs:
                raise SpecError(f"core output {nid} has fan-in {fi}; a core output "
                                f"is driven by the core only")
            fanin.append((ln.name, tuple(srcs)))
    cm = ic.configs[(x, y)].config_memory
    cm_key = None if cm is None else (cm.feature, cm.words, cm.width)
    fanin_t = tuple(fanin)
    key = (tuple(map(id, nodes)), fanin_t, drop_local)
    ports, fields, external = tuple(info.ports), tuple(info.config_fields), tuple(info.external)
    same = memo.shapes.setdefault(key, [])
    for shape in same:
        if (shape.core == info.core and shape.ports == ports and shape.config_fields == fields
                and shape.external == external and shape.config_memory == cm_key):
            return shape
    shape = TileShape(info.core, ports, fields, external, tuple(nodes), fanin_t, drop_local,
                      cm_key)
    same.append(shape)
    return shape


_TILE_CACHE: dict[str, object] = {}
_CORE_CACHE: dict[str, object] = {}


def core_circuit_of(core: CoreSpec):
    """``core.build()``, called once per core name per process (the :mod:`cgra.core`
    contract: the caller caches the core circuit)."""
    if core.name not in _CORE_CACHE:
        _CORE_CACHE[core.name] = core.build()
    return _CORE_CACHE[core.name]


def tile_circuit(shape: TileShape, config: TileConfig, core: CoreSpec | None):
    """The magma tile circuit of ``shape`` (cached by module name; see module docstring)."""
    name = shape.module_name
    if name in _TILE_CACHE:
        return _TILE_CACHE[name]
    if (core is None) != (shape.core is None):
        raise SpecError(f"tile module {name}: core {shape.core!r} but CoreSpec "
                        f"{getattr(core, 'name', None)!r}")
    ports: dict = {"clk_en": m.In(m.Bit), "flush": m.In(m.Bit),
                   "config_addr": m.In(m.Bits[32]), "config_data": m.In(m.Bits[32]),
                   "config_write": m.In(m.Bit), "config_read": m.In(m.Bit),
                   "tile_id": m.In(m.Bits[16]), "read_data": m.Out(m.Bits[32])}
    outs: dict[str, str] = {}      # output port -> local node driving it
    by_name = {n.name: n for n in shape.nodes}
    for n in shape.nodes:
        if n.kind is NodeKind.SB and n.io is IO.SB_IN:
            ports[n.name] = m.In(_t(n.width))
    for n in shape.nodes:
        if n.kind is NodeKind.SB and n.io is IO.SB_OUT:
            rm = f"RMUX_T{n.track}_{n.side.name}_B{n.width}"
            outs[n.name] = rm if rm in by_name else n.name
            ports[n.name] = m.Out(_t(n.width))
    ext_ports = [p for p in shape.ports if p.name in shape.external]
    for p in ext_ports:
        if p.name in ports:
            raise SpecError(f"core '{shape.core}' external port '{p.name}' clashes with a tile "
                            f"port name; rename the core port")
        ports[p.name] = m.In(_t(p.width)) if p.direction == "in" else m.Out(_t(p.width))

    fanin = dict(shape.fanin)
    # define every sub-module before opening the tile definition
    for n in shape.nodes:
        if n.name in fanin and n.kind is not NodeKind.REG and not (
                n.kind is NodeKind.SB and n.io is IO.SB_IN) and not (
                n.kind is NodeKind.PORT and n.direction == "out"):
            mux_circuit(max(1, len(fanin[n.name])), n.width)
    for w in {n.width for n in shape.nodes} | {p.width for p in ext_ports}:
        clamp_circuit(w)
    core_circuit = core_circuit_of(core) if core is not None else None

    class Tile(m.Circuit):
        name = shape.module_name
        io = m.IO(**ports) + m.ClockIO(has_reset=True)
        _tile_body(io, shape, fanin, by_name, outs, config, core_circuit, ext_ports)

    _TILE_CACHE[name] = Tile
    return Tile


def _wire_adapt(value, port) -> None:
    """Wire ``value`` to ``port``, adapting ``Bit`` <-> ``Bits[1]`` (cores may declare 1-bit
    ports either way)."""
    if isinstance(port, m.Bits) and len(port) == 1 and not isinstance(value, m.Bits):
        value = m.bits(value, 1)
    elif not isinstance(port, m.Bits) and isinstance(value, m.Bits) and len(value) == 1:
        value = value[0]
    m.wire(value, port)


def _field_value(regs: dict[tuple[int, int], object], feat: Feature, field_name: str):
    parts = [regs[(feat.index, s.reg)][s.lo:s.lo + s.width] for s in feat.slices
             if s.name == field_name]
    return parts[0] if len(parts) == 1 else m.concat(*parts)


def _tile_body(io, shape: TileShape, fanin, by_name, outs, config: TileConfig,
               core_circuit, ext_ports) -> None:
    # --- config registers and read-back ---
    tile_match = io.config_addr[0:16] == io.tile_id
    feat_bits, reg_bits = io.config_addr[16:24], io.config_addr[24:32]
    regs: dict[tuple[int, int], object] = {}
    reads = []
    for feat in config.features:
        resets = encode_fields(feat.fields, {})
        for r in range(feat.num_regs):
            sel = tile_match & (feat_bits == m.Bits[8](feat.index)) & (reg_bits == m.Bits[8](r))
            reg = m.Register(m.Bits[32], has_enable=True, reset_type=m.Reset,
                             init=m.Bits[32](resets.get(r, 0)))(name=f"cfg_f{feat.index}_r{r}")
            reg.I @= io.config_data
            reg.CE @= sel & io.config_write
            regs[(feat.index, r)] = reg.O
            reads.append(m.mux([m.Bits[32](0), reg.O], sel))
    cm = config.config_memory
    mem_bus = None
    if cm is not None:
        # config memory: word (feature - base) * 256 + reg of the core's storage
        off = m.uint(feat_bits) - m.UInt[8](cm.feature)
        idx = m.uint(m.concat(reg_bits, off))            # 16-bit word index
        mem_sel = tile_match & (m.uint(feat_bits) >= m.UInt[8](cm.feature)) & (
            idx < m.UInt[16](cm.words))
        mem_bus = (m.bits(idx[:cm.addr_bits]), mem_sel)

    # --- power domain (module docstring): gate = 1 holds the state in reset and clamps
    # every output to 0
    pg = next((f for f in reversed(config.features) if f.name == POWER_GATE_FEATURE), None)
    if pg is None:
        raise SpecError(f"tile module {shape.module_name}: the tile config has no "
                        f"'{POWER_GATE_FEATURE}' feature")
    gate = _field_value(regs, pg, POWER_GATE_FIELD.name)[0]
    state_reset = m.reset(m.bit(io.RESET) | gate)
    run = io.clk_en & ~gate

    def clamp(value, width: int, port: str):
        inst = clamp_circuit(width)(name=f"pg_clamp_{port}")
        inst.I @= value
        inst.gate @= gate
        return inst.O

    # local name -> (feature, field)
    local_field: dict[str, tuple[Feature, str]] = {}
    for feat in config.features:
        for fname in feat.nodes:
            local_field[fname[:-len("_sel")] if fname.endswith("_sel") else fname] = (feat, fname)

    # --- core ---
    core_inst = None
    if core_circuit is not None:
        core_inst = core_circuit(name="core")
        core_inst.CLK @= io.CLK
        core_inst.RESET @= state_reset
        core_inst.clk_en @= run
        core_inst.flush @= io.flush
        for feat in config.features[:1]:
            for f in feat.fields:
                _wire_adapt(_field_value(regs, feat, f.name), getattr(core_inst, f"config_{f.name}"))
        for p in ext_ports:
            if p.direction == "in":
                _wire_adapt(getattr(io, p.name), getattr(core_inst, p.name))
            else:
                out = getattr(core_inst, p.name)
                if isinstance(out, m.Bits) and len(out) == 1:
                    out = out[0]
                _wire_adapt(clamp(out, p.width, p.name), getattr(io, p.name))
        if mem_bus is not None:
            addr, mem_sel = mem_bus
            core_inst.config_mem_addr @= addr
            core_inst.config_mem_data @= io.config_data[:cm.width]
            core_inst.config_mem_write @= io.config_write & mem_sel
            core_inst.config_mem_read @= io.config_read & mem_sel
            rdata = core_inst.config_mem_rdata
            if cm.width < 32:
                rdata = m.zext_to(rdata, 32)
            reads.append(m.mux([m.Bits[32](0), m.bits(rdata)], mem_sel))
    elif mem_bus is not None:
        raise SpecError(f"tile module {shape.module_name}: a config memory without a core")
    if reads:
        acc = reads[0]
        for r in reads[1:]:
            acc = acc | r
        io.read_data @= m.mux([m.Bits[32](0), acc], io.config_read)
    else:
        io.read_data @= m.Bits[32](0)

    # --- node instances ---
    values: dict[str, object] = {}
    muxes: dict[str, object] = {}
    reg_insts: dict[str, object] = {}
    for n in shape.nodes:
        if n.kind is NodeKind.SB and n.io is IO.SB_IN:
            values[n.name] = getattr(io, n.name)
        elif n.kind is NodeKind.REG:
            inst = m.Register(_t(n.width), has_enable=True, reset_type=m.Reset)(name=n.name)
            inst.CE @= io.clk_en
            inst.RESET @= state_reset
            reg_insts[n.name] = inst
            values[n.name] = inst.O
        elif n.kind is NodeKind.PORT and n.direction == "out":
            if core_inst is None:
                raise SpecError(f"tile module {shape.module_name}: port node {n.name} without "
                                f"a core")
            out = getattr(core_inst, n.port)
            if n.width == 1 and isinstance(out, m.Bits):
                out = out[0]
            values[n.name] = out
        else:
            h = max(1, len(fanin[n.name]))
            inst = mux_circuit(h, n.width)(name=f"mux_{n.name}")
            muxes[n.name] = inst
            values[n.name] = inst.O

    # --- wiring ---
    for name, inst in muxes.items():
        n = by_name[name]
        srcs = fanin[name]
        if not srcs:
            inst.I0 @= _zero(n.width)
        for k, src in enumerate(srcs):
            port = getattr(inst, f"I{k}")
            if shape.drop == (src, name):
                port @= _zero(n.width)
            else:
                port @= values[src]
        if len(srcs) > 1:
            key = name[len("PORT_"):] if n.kind is NodeKind.PORT else name
            feat, fname = local_field[key]
            inst.S @= _field_value(regs, feat, fname)
        if n.kind is NodeKind.PORT:
            _wire_adapt(inst.O, getattr(core_inst, n.port))
    for name, inst in reg_insts.items():
        src = fanin[name][0]
        inst.I @= _zero(by_name[name].width) if shape.drop == (src, name) else values[src]
    for port, local in outs.items():
        m.wire(clamp(values[local], by_name[local].width, port), getattr(io, port))
    if core_inst is not None:
        routed = {n.port for n in shape.nodes if n.kind is NodeKind.PORT}
        for p in shape.ports:
            if p.direction == "in" and p.name not in routed and p.name not in shape.external:
                _wire_adapt(_zero(p.width), getattr(core_inst, p.name))


def _hex(x: int) -> str:
    return f"{x:02X}"


def tile_instance_name(x: int, y: int) -> str:
    return f"Tile_X{_hex(x)}_Y{_hex(y)}"


def top_port_name(port: str, x: int, y: int) -> str:
    """Top-level name of external core port ``port`` of tile (x, y)."""
    return f"{port}_X{_hex(x)}_Y{_hex(y)}"


_ARRAY_CACHE: dict[str, object] = {}




def array_circuit(ic: Interconnect, name: str = "CanalArray", flush_interval: int = 0,
                  drop_edge: tuple[str, str] | None = None):
    """The magma array circuit of ``ic`` (see module docstring). The module name is
    ``<name>_<W>x<H>_<hash>`` (hash of the tile modules, their positions, the inter-tile
    wiring, ``flush_interval`` and ``drop_edge``), cached per process. ``drop_edge`` = (src id, dst id): leave that graph
    edge out of the RTL (test hook for :func:`canal.check.check_rtl`). Raises
    :class:`SpecError` for graphs the RTL cannot express or an unknown ``drop_edge``."""
    with no_gc():
        return _array_circuit(ic, name, flush_interval, drop_edge)


def _array_circuit(ic: Interconnect, name: str, flush_interval: int,
                   drop_edge: tuple[str, str] | None):
    if flush_interval < 0:
        raise SpecError(f"flush_interval={flush_interval}; use 0 (no spine) or rows per stage")
    if drop_edge is not None:
        g = next((gr for gr in ic.graphs.values() if drop_edge[1] in gr.nodes), None)
        if g is None or not g.has_edge(*drop_edge):
            raise SpecError(f"drop_edge {drop_edge} is not an edge of the interconnect graphs")
    cols, rows = ic.size
    shapes = {}
    memo = _ShapeMemo()
    for (x, y) in ic.tiles:
        dst_here = drop_edge is not None and _xy(drop_edge[1]) == (x, y) and \
            not _is_sb_in(drop_edge[1])
        shapes[(x, y)] = _tile_shape(ic, x, y, drop_edge if dst_here else None, memo)
    wiring = [(nid, tuple(g.fanin[nid])) for w, g in sorted(ic.graphs.items())
              for nid, n in g.nodes.items() if n.kind is NodeKind.SB and n.io is IO.SB_IN]
    key = repr((sorted((xy, s.module_name) for xy, s in shapes.items()), flush_interval,
                drop_edge, sorted(ic.graphs), wiring))
    full = f"{name}_{cols}x{rows}_{hashlib.sha1(key.encode()).hexdigest()[:10]}"
    if full in _ARRAY_CACHE:
        return _ARRAY_CACHE[full]
    circuits = {}
    configs = ic.configs
    for xy, s in shapes.items():
        circuits[xy] = tile_circuit(s, configs[xy], ic.core(*xy))

    net = array_netlist(ic, flush_interval, drop_edge)
    ports = {pname: (m.In if d == "in" else m.Out)(_t(w)) for pname, d, w in net.ports}

    class Array(m.Circuit):
        name = full
        io = m.IO(**ports) + m.ClockIO(has_reset=True)
        _array_body(io, net, circuits)

    _ARRAY_CACHE[full] = Array
    return Array


def _xy(nid: str) -> tuple[int, int]:
    return parse_id(nid).xy


def _is_sb_in(nid: str) -> bool:
    return parse_id(nid).io is IO.SB_IN


#: a signal of the array netlist: ``("port", name)`` (a top port), ``("const", value, width)``,
#: ``("out", x, y, port, width)`` (an output of tile (x, y)), ``("flush", register name)`` or
#: ``("wire", name, width)`` (a wire of the column config paths, :class:`ConfigColumns`)
Signal = tuple


@dataclass(frozen=True)
class ConfigColumns:
    """Per-column configuration paths in the array top (AHA paper §4.4: the global buffer
    configures each column over its own pipelined path). ``module``: the Verilog module of
    one column's path (``garnet.glb.rtl.column_verilog``: ports ``clk``, ``rst``,
    ``in_valid``, ``in_word`` [64] = ``addr << 32 | data``, outputs ``wr`` [rows] and
    ``addr_<y>`` / ``data_<y>`` [32] per row; written by the caller); ``rows``: the array's
    rows (the module's height).

    With them, column ``x`` of the top gets the inputs of :func:`column_ports`: its config
    bundles (``cfg_valid_X<xx>``, ``cfg_word_X<xx>``), a flush of its own OR-ed into its
    flush spine (``flush_X<xx>``) and a stall (``stall_X<xx>``: its tiles' ``clk_en`` is
    ``clk_en & ~stall``). Tile (x, y) takes a config write from its column's path when the
    path writes row y, else from the shared bus (``config_write`` OR the path's ``wr[y]``),
    so both paths configure the array, and a column can be stalled, configured, flushed
    and restarted while the other columns run (partial reconfiguration)."""

    module: str
    rows: int


@dataclass
class ArrayNetlist:
    """The top level of the array as data: the one description both the magma body
    (:func:`_array_body`) and the Verilog text emitter (:func:`array_verilog`) are built
    from, so the two cannot drift.

    ``ports``: the top ports besides ``CLK`` / ``RESET`` as (name, ``"in"``/``"out"``, width
    in bits), in port order; ``tiles``: tile positions (x, y) in instance order (instance
    ``Tile_X<xx>_Y<yy>``, :func:`tile_instance_name`); ``flush_regs``: the flush-spine
    registers (name, 1-bit source :data:`Signal`) in order; ``inputs``: (x, y) -> ((tile
    input port, :data:`Signal`), ...) for every tile input (clock, reset, config bus,
    ``tile_id``, every SB_IN, external inputs); ``outputs``: (x, y) -> ((tile output port,
    top port), ...) for the external outputs; ``read_data`` (32 bits) = OR over the tiles'
    ``read_data`` in ``tiles`` order."""

    ports: tuple[tuple[str, str, int], ...]
    tiles: tuple[tuple[int, int], ...]
    flush_regs: tuple[tuple[str, Signal], ...]
    inputs: dict[tuple[int, int], tuple[tuple[str, Signal], ...]]
    outputs: dict[tuple[int, int], tuple[tuple[str, str], ...]]
    #: the per-column configuration paths (None: the shared config bus only)
    columns: ConfigColumns | None = None


def array_netlist(ic: Interconnect, flush_interval: int = 0,
                  drop_edge: tuple[str, str] | None = None,
                  columns: ConfigColumns | None = None) -> ArrayNetlist:
    """The :class:`ArrayNetlist` of ``ic`` (module docstring: tile ids, SB_IN wiring from
    the graph with 0 at the array edge, flush spine with a register every ``flush_interval``
    rows, external core ports as ``<port>_X<xx>_Y<yy>``; with ``columns``, the per-column
    configuration paths, stalls and flushes of :class:`ConfigColumns`). Raises
    :class:`SpecError` when an SB_IN is fed by a node that is not the one its tile exports
    on that side and track, for a negative ``flush_interval``, or for column paths of
    another height than the array."""
    if flush_interval < 0:
        raise SpecError(f"flush_interval={flush_interval}; use 0 (no spine) or rows per stage")
    rows = ic.size[1]
    if columns is not None and columns.rows != rows:
        raise SpecError(f"column config paths of {columns.rows} rows for an array of {rows}")
    ports: list[tuple[str, str, int]] = [
        ("clk_en", "in", 1), ("flush", "in", 1), ("config_addr", "in", 32),
        ("config_data", "in", 32), ("config_write", "in", 1), ("config_read", "in", 1),
        ("read_data", "out", 32)]
    xs = sorted({x for x, _ in ic.tiles})
    if columns is not None:
        for x in xs:
            ports += [(n, "in", w) for n, w in zip(column_ports(x), (1, 64, 1, 1), strict=True)]
    for (x, y), info in ic.tiles.items():
        for p in info.ports:
            if p.name in info.external:
                ports.append((top_port_name(p.name, x, y), p.direction, p.width))
    # flush spine per column
    flush_regs: list[tuple[str, Signal]] = []
    flush_at: dict[tuple[int, int], Signal] = {}
    for x in xs:
        sig: Signal = ("port", "flush") if columns is None else \
            ("wire", f"flush_in_X{_hex(x)}", 1)
        stage = 0
        for y in range(rows):
            if flush_interval and y // flush_interval > stage:
                stage = y // flush_interval
                reg = f"flush_X{_hex(x)}_S{stage}"
                flush_regs.append((reg, sig))
                sig = ("flush", reg)
            flush_at[(x, y)] = sig
    inputs: dict[tuple[int, int], list[tuple[str, Signal]]] = {}
    outputs: dict[tuple[int, int], tuple[tuple[str, str], ...]] = {}
    for (x, y), info in ic.tiles.items():
        conns: list[tuple[str, Signal]] = [
            ("CLK", ("port", "CLK")), ("RESET", ("port", "RESET")),
            ("clk_en", ("port", "clk_en") if columns is None else
             ("wire", f"clk_en_X{_hex(x)}", 1)), ("flush", flush_at[(x, y)])]
        if columns is None:
            conns += [(n, ("port", n)) for n in ("config_addr", "config_data", "config_write",
                                                 "config_read")]
        else:
            conns += [(n, ("wire", f"{n}_X{_hex(x)}_Y{_hex(y)}", w)) for n, w in
                      (("config_addr", 32), ("config_data", 32), ("config_write", 1))]
            conns.append(("config_read", ("port", "config_read")))
        conns.append(("tile_id", ("const", x << 8 | y, 16)))
        conns += [(p.name, ("port", top_port_name(p.name, x, y))) for p in info.ports
                  if p.name in info.external and p.direction == "in"]
        inputs[(x, y)] = conns
        outputs[(x, y)] = tuple((p.name, top_port_name(p.name, x, y)) for p in info.ports
                                if p.name in info.external and p.direction != "in")
    # SB_IN wiring from the graph. Written for speed (82 k SB_INs at 64x32): port names are
    # formatted once per (track, side, width), and "the source is the exported node" is
    # decided on the source's fields: its id is the RMUX / SB_OUT id of its own position,
    # side and track exactly when its width is the graph's (and, for an SB, it is an SB_OUT
    # and no RMUX exists on its track) -- what comparing with exported_node() tests.
    sb, rmux, sb_in, sb_out = NodeKind.SB, NodeKind.RMUX, IO.SB_IN, IO.SB_OUT
    for w, g in ic.graphs.items():
        gnodes, gfanin, gw = g.nodes, g.fanin, g.width
        names_of: dict[tuple, tuple[str, str]] = {}
        for nid, n in [(nid, n) for nid, n in gnodes.items()
                       if n.io is sb_in and n.kind is sb]:
            srcs = gfanin[nid]
            if not srcs or (drop_edge is not None and drop_edge == (srcs[0], nid)):
                inputs[(n.x, n.y)].append((n.local_name, ("const", 0, w)))
                continue
            src = gnodes[srcs[0]]
            kind = src.kind
            if kind is rmux:
                ok = src.width == gw and src.id in gnodes
            elif kind is sb:
                ok = src.io is sb_out and src.width == gw and \
                    rmux_id(gw, src.x, src.y, src.side, src.track) not in gnodes
            else:
                ok = False
            if not ok:
                raise SpecError(f"edge {src.id} -> {nid}: the source is not the node exported "
                                f"on its tile's side {src.side} track {src.track}")
            key = (n.track, n.side, n.width, src.track, src.side)
            names = names_of.get(key)            # (n.local_name, the source's tile port)
            if names is None:
                names = names_of[key] = (n.local_name,
                                         f"SB_T{src.track}_{src.side.name}_SB_OUT_B{w}")
            inputs[(n.x, n.y)].append((names[0], ("out", src.x, src.y, names[1], w)))
    return ArrayNetlist(tuple(ports), tuple(ic.tiles), tuple(flush_regs),
                        {xy: tuple(c) for xy, c in inputs.items()}, outputs, columns)


def _column_paths(net: ArrayNetlist) -> list[str]:
    """The Verilog of :class:`ConfigColumns` in the top (after the port list): per column
    its path instance ``ColumnConfig_X<xx>``, stalled ``clk_en``, flush-spine source and
    per tile the config bus taken from the path when it writes that row."""
    cc = net.columns
    if cc is None:
        return []
    body: list[str] = []
    for x in sorted({x for x, _ in net.tiles}):
        h = _hex(x)
        valid, word, flush, stall = column_ports(x)
        col = f"_ColumnConfig_X{h}"
        body += [f"  wire        clk_en_X{h} = clk_en & ~{stall};",
                 f"  wire        flush_in_X{h} = flush | {flush};",
                 f"  wire {_vrange(cc.rows):6} {col}_wr;"]
        body += [f"  wire [31:0] {col}_{k}_{y};" for y in range(cc.rows)
                 for k in ("addr", "data")]
        conns = [".clk    (CLK)", ".rst    (RESET)", f".in_valid ({valid})",
                 f".in_word ({word})", f".wr     ({col}_wr)"]
        conns += [f".{k}_{y} ({col}_{k}_{y})" for y in range(cc.rows) for k in ("addr", "data")]
        body.append(f"  {cc.module} ColumnConfig_X{h} (")
        body.append(",\n".join(f"    {c}" for c in conns))
        body.append("  );")
        for y in range(cc.rows):
            t = f"X{h}_Y{_hex(y)}"
            wr = f"{col}_wr[{y}]" if cc.rows > 1 else f"{col}_wr"
            body += [f"  wire        config_write_{t} = config_write | {wr};",
                     f"  wire [31:0] config_addr_{t} = {wr} ? {col}_addr_{y} : config_addr;",
                     f"  wire [31:0] config_data_{t} = {wr} ? {col}_data_{y} : config_data;"]
    return body


def _array_body(io, net: ArrayNetlist, circuits) -> None:
    """The magma body of the array top from ``net`` (``circuits``: (x, y) -> tile
    circuit or declaration)."""
    if net.columns is not None:
        raise SpecError("the magma array body has no column config paths; write the top "
                        "with array_verilog")
    insts = {xy: circuits[xy](name=tile_instance_name(*xy)) for xy in net.tiles}
    regs: dict[str, object] = {}

    def value(s: Signal):
        if s[0] == "port":
            return getattr(io, s[1])
        if s[0] == "const":
            return m.Bit(s[1]) if s[2] == 1 else m.Bits[s[2]](s[1])
        if s[0] == "out":
            return getattr(insts[(s[1], s[2])], s[3])
        return regs[s[1]]

    for name, src in net.flush_regs:
        r = m.Register(m.Bit, reset_type=m.Reset)(name=name)
        r.I @= value(src)
        regs[name] = r.O
    for xy in net.tiles:
        inst = insts[xy]
        for port, src in net.inputs[xy]:
            m.wire(value(src), getattr(inst, port))
        for port, top in net.outputs[xy]:
            m.wire(getattr(inst, port), getattr(io, top))
    # read-back: OR tree
    reads = [insts[xy].read_data for xy in net.tiles]
    while len(reads) > 1:
        nxt = [a | b for a, b in zip(reads[::2], reads[1::2], strict=False)]
        if len(reads) % 2:
            nxt.append(reads[-1])
        reads = nxt
    io.read_data @= reads[0]


def _vrange(width: int) -> str:
    return "" if width == 1 else f"[{width - 1}:0]"


def _signal_verilog(s: Signal, out: Callable[[int, int, str], str]) -> str:
    """A :data:`Signal` as a Verilog expression: a top port or flush register by name, a
    constant as ``<width>'h<hex>``, tile (x, y)'s output ``port`` as ``out(x, y, port)``."""
    if s[0] == "const":
        return f"{s[2]}'h{s[1]:X}"
    if s[0] == "out":
        return out(s[1], s[2], s[3])
    return s[1]


def _flush_spine(net: ArrayNetlist, value: Callable[[Signal], str]) -> list[str]:
    """The flush-spine registers' ``always_ff`` (synchronous reset to 0, each loading its
    source ``value(signal)``) and ``initial`` blocks, as CIRCT writes them; [] without a
    spine."""
    if not net.flush_regs:
        return []
    regs = net.flush_regs
    return ["  always_ff @(posedge CLK) begin", "    if (RESET) begin",
            *[f"      {reg} <= 1'h0;" for reg, _ in regs], "    end", "    else begin",
            *[f"      {reg} <= {value(src)};" for reg, src in regs], "    end",
            "  end // always_ff @(posedge)", "  initial begin",
            *[f"    {reg} = 1'h0;" for reg, _ in regs], "  end // initial"]


def array_verilog(net: ArrayNetlist, name: str, modules: dict[tuple[int, int], str],
                  tile_ports: dict[str, list[dict]]) -> str:
    """The top module ``name`` of the array as Verilog text (SystemVerilog ``always_ff``, as
    CIRCT writes it), from ``net``, without magma or CIRCT: the same ports, tile instances,
    connections, flush spine and ``read_data`` OR as :func:`_array_body`. ``modules``: (x,
    y) -> tile module name; ``tile_ports``: module name -> its ports (``[{name, direction
    in/out, width, ...}]``, e.g. :func:`garnet.array.port_list`). Wires ``_Tile_X<xx>_Y<yy>_<port>``
    carry tile outputs; unused outputs are left open. Text size grows linearly with the
    tile count. Raises :class:`SpecError` when a tile input is left undriven, a connection
    names a port the tile module lacks, or a width differs."""
    lines = [f"// {name}: top level of the array (canal.rtl.array_verilog: tile instances "
             f"and inter-tile wiring)", f"module {name}("]
    decl = [f"  input  {'':6} CLK", f"  input  {'':6} RESET"]
    for pname, d, w in net.ports:
        decl.append(f"  {'input ' if d == 'in' else 'output'} {_vrange(w):6} {pname}")
    lines.append(",\n".join(decl))
    lines.append(");")
    widths = {p: w for p, _, w in net.ports}
    widths.update(CLK=1, RESET=1)
    # instance names once per tile; per module its port list as (name, is input, width,
    # ".name<pad> (" prefix of its connection line): the text is stamped from these
    inst_of = {xy: tile_instance_name(*xy) for xy in net.tiles}   # (wire() also others)
    specs: dict[str, list[tuple[str, bool, bool, int, str]]] = {}
    for mod in dict.fromkeys(modules[xy] for xy in net.tiles):
        pad = max((len(p["name"]) for p in tile_ports[mod]), default=0)
        specs[mod] = [(p["name"], p["direction"] == "in", p["direction"] == "out", p["width"],
                       f"    .{p['name']:<{pad}} (") for p in tile_ports[mod]]
    used: dict[tuple[int, int], dict[str, int]] = {}    # (x, y) -> {read output: width}
    for xy in net.tiles:
        for _, s in net.inputs[xy]:
            if s[0] == "out":
                here = used.get((s[1], s[2]))
                if here is None:
                    here = used[(s[1], s[2])] = {}
                here[s[3]] = s[4]
    for xy in net.tiles:
        used.setdefault(xy, {})["read_data"] = 32

    def wire(x: int, y: int, port: str) -> str:
        return f"_{inst_of.get((x, y)) or tile_instance_name(x, y)}_{port}"

    # per module its output ports as (name, width, "  wire <range> " declaration prefix)
    out_specs = {mod: [(pn, pw, f"  wire {_vrange(pw):6} _") for pn, _, is_out, pw, _ in spec
                       if is_out] for mod, spec in specs.items()}
    body: list[str] = []
    for xy in net.tiles:
        mod = modules[xy]
        x, y = xy
        inst = inst_of[xy]
        here = used[xy]
        for pn, pw, decl_prefix in out_specs[mod]:
            uw = here.get(pn)
            if uw is not None:
                if uw != pw:
                    raise SpecError(f"array {name}: {wire(x, y, pn)} is {uw} bits but "
                                    f"port {pn} of {mod} is {pw} bits")
                body.append(f"{decl_prefix}{inst}_{pn};")
    for reg, _ in net.flush_regs:
        body.append(f"  reg         {reg};")
    body += _column_paths(net)

    def value(s: Signal) -> str:
        return _signal_verilog(s, wire)

    body += _flush_spine(net, value)
    known_of = {mod: {sp[0] for sp in spec} for mod, spec in specs.items()}
    for xy in net.tiles:
        mod = modules[xy]
        inst = inst_of[xy]
        ins = dict(net.inputs[xy])
        outs = dict(net.outputs[xy])
        known = known_of[mod]
        here = used[xy]
        if not known.issuperset(ins) or not known.issuperset(outs):
            extra = sorted((set(ins) | set(outs)) - known)
            raise SpecError(f"array {name}: tile {inst} ({mod}) has no port(s) {extra}")
        conns = []
        for pn, is_in, _, pw, prefix in specs[mod]:
            if is_in:
                s = ins.get(pn)
                if s is None:
                    raise SpecError(f"array {name}: input {pn} of tile {inst} ({mod}) is not "
                                    f"driven")
                tag = s[0]
                if tag == "out":
                    w = s[4]
                    v = f"_{inst_of.get((s[1], s[2])) or tile_instance_name(s[1], s[2])}_{s[3]}"
                elif tag == "const":
                    w, v = s[2], f"{s[2]}'h{s[1]:X}"
                elif tag == "wire":            # a wire of the column config paths
                    w, v = s[2], s[1]
                else:                          # a top port or a flush-spine register
                    w, v = widths.get(s[1], 1), s[1]
                if w != pw:
                    raise SpecError(f"array {name}: input {pn} of tile {inst} ({mod}) is "
                                    f"{pw} bits but is driven by {w} bits")
                conns.append(prefix + v + ")")
            elif pn in outs:
                conns.append(prefix + outs[pn] + ")")
            elif pn in here:
                conns.append(f"{prefix}_{inst}_{pn})")
            else:
                conns.append(prefix + ")")
        body.append(f"  {mod} {inst} (")
        body.append(",\n".join(conns))
        body.append("  );")
    reads = [wire(x, y, "read_data") for x, y in net.tiles]
    if not reads:
        raise SpecError(f"array {name}: no tiles")
    body.append("  assign read_data =")
    body.append("\n".join(f"    {'  ' if i == 0 else '| '}{' | '.join(reads[i:i + 4])}"
                           for i in range(0, len(reads), 4)) + ";")
    lines += body
    lines.append("endmodule")
    return "\n".join(lines) + "\n"


def compile_array(circuit, out_dir: str | Path, basename: str | None = None) -> Path:
    """Write the Verilog of ``circuit`` (all modules in one file) to
    ``out_dir/<basename>.v`` with magma's CIRCT backend; returns the path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    base = out / (basename or circuit.name)
    with no_gc():
        m.compile(str(base), circuit, output="mlir-verilog")
    return base.with_suffix(".v")


_MODULE_RE = re.compile(r"^module\s+(\w+)[\s\S]*?^endmodule\s*$", re.M)


def split_verilog(verilog: str | Path, out_dir: str | Path) -> list[Path]:
    """Split a Verilog file written by :func:`compile_array` into one file per module,
    ``out_dir/<module>.v``; returns the paths in the order of the input (top last).
    Raises :class:`SpecError` when the file holds no module."""
    text = Path(verilog).read_text()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for mt in _MODULE_RE.finditer(text):
        path = out / f"{mt[1]}.v"
        path.write_text(mt[0] + "\n")
        paths.append(path)
    if not paths:
        raise SpecError(f"{verilog}: no Verilog module found to split")
    return paths


__all__ = ["ConfigColumns", "split_verilog", "mux_circuit", "TileShape", "tile_shape", "tile_shapes", "tile_circuit", "array_circuit",
           "ArrayNetlist", "array_netlist", "array_verilog", "compile_array", "exported_node",
           "tile_instance_name", "top_port_name", "iter_sides"]


#: the tile inputs every tile takes from the top port of the same name; a column module
#: passes them through under that name (:func:`column_verilog`)
_SHARED = ("CLK", "RESET", "clk_en", "config_addr", "config_data", "config_write",
           "config_read")


def _column_port(port: str, dx: int, y: int) -> str:
    return f"{port}_X{_hex(dx)}_Y{_hex(y)}"


def column_verilog(net: ArrayNetlist, name: str, modules: dict[tuple[int, int], str],
                   tile_ports: dict[str, list[dict]], columns: int = 1
                   ) -> tuple[dict[str, str], list[str]]:
    """The array top ``name`` of :func:`array_verilog` again, with the tiles grouped in
    blocks of ``columns`` adjacent columns (block ``b`` holds columns ``b * columns`` ..
    ``b * columns + columns - 1``): the same tile instances, connections, flush spine and
    ``read_data`` OR (32 bits), one level deeper. Blocks wired alike (the same tile modules
    at the same places and the same connections between them) share one module,
    ``<name>_col<k>``, so a tool that compiles each distinct module once (Verilator's
    ``--hierarchical`` with ``/*verilator hier_block*/``) compiles a 32x16 array as two
    or three blocks and a top of a few instances. In a block module the tiles are
    ``Tile_X<dx>_Y<yy>`` (``dx`` = column within the block); every tile input not driven
    from within the block (other blocks, top ports, constants such as ``tile_id``,
    flush-spine registers) is a block input ``<port>_X<dx>_Y<yy>``, and the config bus,
    clock and reset pass through under their own names; the tile outputs read outside
    their block (in any block of that module) are outputs ``<port>_X<dx>_Y<yy>``;
    ``read_data`` is the OR of the block's tiles.

    Returns ({module name: Verilog text}, the top ``name`` last; the block module names in
    first-use order). Raises :class:`SpecError` for ``columns < 1`` and as
    :func:`array_verilog` does (an undriven or unknown tile input, a width mismatch)."""
    if columns < 1:
        raise SpecError(f"array {name}: columns={columns} per block; use 1 or more")
    if net.columns is not None:
        raise SpecError(f"array {name}: column blocks of an array with column config paths "
                        f"are not built; write the flat top (array_verilog)")
    blocks: dict[int, list[tuple[int, int]]] = {}        # block -> its tiles (x, y)
    for x, y in net.tiles:
        blocks.setdefault(x // columns, []).append((x, y))
    widths = {p: w for p, _, w in net.ports}
    widths.update(CLK=1, RESET=1)
    pspec = {mod: {p["name"]: (p["direction"] == "in", p["width"]) for p in tile_ports[mod]}
             for mod in dict.fromkeys(modules[xy] for xy in net.tiles)}

    def width_of(s: Signal) -> int:
        if s[0] == "out":
            return s[4]
        if s[0] == "const":
            return s[2]
        return widths.get(s[1], 1)

    def local(x: int, y: int) -> tuple[int, int]:
        return x % columns, y

    # per block: its signature (tile modules and internal wiring) and its external inputs
    sig_of: dict[int, tuple] = {}
    ext_in: dict[int, dict[str, Signal]] = {}
    for b, tiles in blocks.items():
        sig: list[tuple] = []
        ext: dict[str, Signal] = {}
        for x, y in tiles:
            mod = modules[(x, y)]
            spec = pspec[mod]
            inst = tile_instance_name(x, y)
            conns = []
            for pn, s in net.inputs[(x, y)]:
                if pn not in spec or not spec[pn][0]:
                    raise SpecError(f"array {name}: tile {inst} ({mod}) has no input {pn}")
                if width_of(s) != spec[pn][1]:
                    raise SpecError(f"array {name}: input {pn} of tile {inst} ({mod}) is "
                                    f"{spec[pn][1]} bits but is driven by {width_of(s)} bits")
                if s[0] == "out" and s[1] // columns == b:
                    conns.append((pn, "tile", local(s[1], s[2]), s[3]))
                elif s[0] == "port" and s[1] == pn and pn in _SHARED:
                    conns.append((pn, "shared"))
                else:
                    conns.append((pn, "in"))
                    ext[_column_port(pn, *local(x, y))] = s
            driven = {c[0] for c in conns}
            missing = [pn for pn, (is_in, _) in spec.items() if is_in and pn not in driven]
            if missing:
                raise SpecError(f"array {name}: input {missing[0]} of tile {inst} ({mod}) is "
                                f"not driven")
            sig.append((local(x, y), mod, tuple(conns)))
        sig_of[b] = tuple(sig)
        ext_in[b] = ext
    # the tile outputs read outside their block, and the external outputs
    read_out: dict[int, set[tuple[tuple[int, int], str]]] = {b: set() for b in blocks}
    for x, y in net.tiles:
        for _, s in net.inputs[(x, y)]:
            if s[0] == "out" and s[1] // columns != x // columns:
                read_out[s[1] // columns].add((local(s[1], s[2]), s[3]))
        for pn, _ in net.outputs[(x, y)]:
            read_out[x // columns].add((local(x, y), pn))
    groups: dict[tuple, list[int]] = {}
    for b in blocks:
        groups.setdefault(sig_of[b], []).append(b)
    texts: dict[str, str] = {}
    block_mod: dict[int, str] = {}
    shared_of: dict[str, list[str]] = {}
    ins_of: dict[str, list[str]] = {}
    outs_of: dict[str, list[tuple[tuple[int, int], str, int]]] = {}
    for k, (sig, bs) in enumerate(groups.items()):
        cname = f"{name}_col{k}"
        for b in bs:
            block_mod[b] = cname
        mod_at = {xy: mod for xy, mod, _ in sig}
        outs = [(xy, pn, pspec[mod_at[xy]][pn][1])
                for xy, pn in sorted(set().union(*(read_out[b] for b in bs)))]
        shared = [n for n in _SHARED if any(c[1] == "shared" and c[0] == n
                                            for _, _, cs in sig for c in cs)]
        ins = [(cp, width_of(s)) for cp, s in ext_in[bs[0]].items()]
        shared_of[cname], ins_of[cname], outs_of[cname] = shared, [cp for cp, _ in ins], outs
        decl = [f"  input  {_vrange(widths[n]):6} {n}" for n in shared]
        decl += [f"  input  {_vrange(w):6} {cp}" for cp, w in ins]
        decl += [f"  output {_vrange(w):6} {_column_port(pn, *xy)}" for xy, pn, w in outs]
        decl.append(f"  output {_vrange(32):6} read_data")
        body = [f"// {cname}: {columns} column(s) of the array {name} "
                f"(canal.rtl.column_verilog)",
                f"module {cname}(", ",\n".join(decl), ");  /*verilator hier_block*/"]
        inner: dict[tuple[tuple[int, int], str], int] = {}
        for _, _, conns in sig:
            for c in conns:
                if c[1] == "tile":
                    inner[(c[2], c[3])] = pspec[mod_at[c[2]]][c[3]][1]
        for xy, _, _ in sig:
            inner[(xy, "read_data")] = 32

        def tw(xy: tuple[int, int], pn: str) -> str:
            return f"_Tile_X{_hex(xy[0])}_Y{_hex(xy[1])}_{pn}"

        body += [f"  wire {_vrange(w):6} {tw(xy, pn)};" for (xy, pn), w in sorted(inner.items())]
        exported = {(xy, pn) for xy, pn, _ in outs}
        for xy, mod, conns in sig:
            pad = max(len(p) for p in pspec[mod])
            cs = []
            for c in conns:
                v = c[0] if c[1] == "shared" else _column_port(c[0], *xy) if c[1] == "in" \
                    else tw(c[2], c[3])
                cs.append(f"    .{c[0]:<{pad}} ({v})")
            for pn, (is_in, _) in pspec[mod].items():
                if not is_in:
                    v = tw(xy, pn) if (xy, pn) in inner else \
                        _column_port(pn, *xy) if (xy, pn) in exported else ""
                    cs.append(f"    .{pn:<{pad}} ({v})")
            body += [f"  {mod} Tile_X{_hex(xy[0])}_Y{_hex(xy[1])} (", ",\n".join(cs), "  );"]
        body += [f"  assign {_column_port(pn, *xy)} = {tw(xy, pn)};" for xy, pn, _ in outs
                 if (xy, pn) in inner]
        body.append("  assign read_data = " + " | ".join(tw(xy, "read_data")
                                                         for xy, _, _ in sig) + ";")
        body.append("endmodule")
        texts[cname] = "\n".join(body) + "\n"
    # the top: block instances, the flush spine, read_data and the external outputs
    lines = [f"// {name}: top level of the array, {columns} column(s) per instance "
             f"(canal.rtl.column_verilog)", f"module {name}("]
    decl = [f"  input  {'':6} CLK", f"  input  {'':6} RESET"]
    decl += [f"  {'input ' if d == 'in' else 'output'} {_vrange(w):6} {pn}"
             for pn, d, w in net.ports]
    lines += [",\n".join(decl), ");"]

    def bw(x: int, y: int, pn: str) -> str:
        return f"_Col_{_hex(x // columns)}_{_column_port(pn, *local(x, y))}"

    for b in blocks:
        lines += [f"  wire {_vrange(w):6} _Col_{_hex(b)}_{_column_port(pn, *xy)};"
                  for xy, pn, w in outs_of[block_mod[b]]]
        lines.append(f"  wire {_vrange(32):6} _Col_{_hex(b)}_read_data;")
    lines += [f"  reg         {reg};" for reg, _ in net.flush_regs]

    def value(s: Signal) -> str:
        return _signal_verilog(s, bw)

    lines += _flush_spine(net, value)
    for b in blocks:
        cname = block_mod[b]
        cs = [f"    .{n} ({n})" for n in shared_of[cname]]
        cs += [f"    .{cp} ({value(ext_in[b][cp])})" for cp in ins_of[cname]]
        cs += [f"    .{_column_port(pn, *xy)} (_Col_{_hex(b)}_{_column_port(pn, *xy)})"
               for xy, pn, _ in outs_of[cname]]
        cs.append(f"    .read_data (_Col_{_hex(b)}_read_data)")
        lines += [f"  {cname} Col_{_hex(b)} (", ",\n".join(cs), "  );"]
    lines += [f"  assign {top} = {bw(x, y, pn)};" for x, y in net.tiles
              for pn, top in net.outputs[(x, y)]]
    lines.append("  assign read_data = " + " | ".join(f"_Col_{_hex(b)}_read_data"
                                                     for b in blocks) + ";")
    lines.append("endmodule")
    texts[name] = "\n".join(lines) + "\n"
    return texts, list(dict.fromkeys(block_mod.values()))
