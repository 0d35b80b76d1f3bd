"""Tile cores of the array: PE (a PEak spec), MEM (a Lake preset) and IO (the array edge).

Every core follows :mod:`cgra.core`: ``CLK``, ``RESET`` (sync, active high), ``clk_en``
(1 = run), ``flush``, its data ports by name (``Bits[w]``; ``Bit`` for 1-bit ports) and one
``config_<field>`` input per config field. The tile owns the 32-bit config registers of
feature 0 and packs the fields with :func:`cgra.config.pack_fields`.

* PE (tag ``p``): the PEak PE circuit (:func:`peak.rtl.pe_circuit`) behind a thin wrapper
  module ``PECore_<Spec>_<hash8>``: one config field ``inst`` of the assembler width (bits; the
  default PE has 62 bits = config registers 0 and 1 of feature 0, LSB part first);
  ``flush`` is accepted and ignored (a PE has no controllers). Outputs are combinational in
  the inputs and the PE's state (0 cycles through the core; input ``DELAY`` modes add 1,
  ``DELAY<k>`` modes of a deeper PE such as ``cgra_pe_d2`` add ``k``).
* MEM (tag ``m``): the Lake preset circuit (:func:`lake.rtl.memory_circuit`), config fields
  :func:`lake.config.config_fields`; every data, valid and chain port is routable.
* PE with a pond (tag ``p``, field ``pond`` of the design, :func:`pe_pond_core`): the PE
  core and a Lake memory (the PE register file, AHA paper Sec. 4.2) side by side in one
  module ``PEPond_<Spec>_<hash8>_<pond hash8>``; the pond's data ports and config fields
  carry the prefix :data:`POND_PREFIX` (``pond_data_in_0``, ``pond_in0_enable``, ...), its
  chain inputs are tied to 0 and its valid outputs left open. The interconnect gives the
  pond ports their own connection boxes and switch-box outputs like any core port.
* IO (tag ``I``): :func:`canal.cores.io_core` of the design's data width ``W``
  (``data_width``, default 16): ``glb2io_W -> io2f_W``, ``glb2io_1 -> io2f_1`` (edge ->
  fabric) and ``f2io_W -> io2glb_W``, ``f2io_1 -> io2glb_1`` (fabric -> edge), all
  combinational; the ``glb2io_*``/``io2glb_*`` ports become top-level ports
  ``<port>_X<xx>_Y<yy>`` (``glb2io_16_X03_Y00`` at 16 bits). One IO tile carries both the
  data-width and the 1-bit IO, so a netlist instance tagged ``I`` (data IO) or ``i`` (1-bit
  IO) is placed on an ``I`` tile.
"""
from __future__ import annotations

import functools
import re
from typing import Any

from cgra.hdl import m

from cgra.config import ConfigField, pack_fields
from cgra.core import CoreSpec, PortSpec, shell_ports
from cgra.errors import ConfigError, SpecError
from canal.cores import io_core as canal_io
from lake.collateral import collateral
from lake.spec import PRESETS, MemorySpec, dual_port_name, is_preset, preset, register
from garnet.collateral import CoreSlice, TileCore, mem_doc, pe_doc
from peak import normal_form
from peak.collateral import pe_json
from peak.assembler import assembler
from peak.assembler import is_bit_type, is_bv_type
from peak.load import load_spec
from peak.rtl import pe_circuit
import lake


def tags(data_width: int = 16) -> dict[str, str]:
    """PnR tags (one letter) and what they stand for, in a design of ``data_width`` bits."""
    return {"p": "PE", "m": "MEM",
            "I": f"IO ({data_width}-bit, the tile also holds the 1-bit IO)",
            "i": "1-bit IO (placed on an 'I' tile)"}


#: PnR tags of a 16-bit design (:func:`tags`)
TAGS = tags(16)


def load_pe_spec(path: str, field: str = "field 'pe'", base: str | None = None) -> type:
    """The PEak spec class named by ``path`` (any reference :func:`peak.load_spec` accepts:
    ``module:Class``, ``file.py:Class`` relative to ``base`` or the current directory,
    ``module:factory(8)``), normalised and type-checked.

    Raises :class:`ConfigError` (one line starting with ``field``, e.g. ``"configs/x.toml:
    field 'pe' = 'my_pe.py:PE': ..."``) when the reference does not resolve to a PEak spec,
    and :class:`SpecError` (``file:line: ...``, the same error ``cgra rules`` reports) when
    the spec itself is malformed."""

    try:
        spec = load_spec(path, where=field, base=base)
    except SpecError as exc:
        raise ConfigError(str(exc)) from None
    normal_form(spec)
    return spec


def _mtype(width: int) -> Any:
    return m.Bit if width == 1 else m.Bits[width]


def _sanitize(s: str) -> str:
    return re.sub(r"\W", "_", s)


@functools.lru_cache(maxsize=None)
def _pe_core_circuit(spec: type, circuit_name: str) -> Any:

    pe = pe_circuit(spec)
    core = pe_core(spec)
    ports: dict[str, Any] = {"clk_en": m.In(m.Bit), "flush": m.In(m.Bit)}
    for p in core.ports:
        ports[p.name] = (m.In if p.direction == "in" else m.Out)(_mtype(p.width))
    inst_width = core.config_fields[0].width
    ports["config_inst"] = m.In(m.Bits[inst_width])

    class PECore(m.Circuit):
        name = circuit_name
        io = m.IO(**ports) + m.ClockIO(has_reset=True)
        inst = pe(name="pe")
        inst.CLK @= io.CLK
        inst.RESET @= io.RESET
        inst.clk_en @= io.clk_en
        inst.inst @= io.config_inst
        for p in core.ports:
            if p.direction == "in":
                m.wire(getattr(io, p.name), getattr(inst, p.name))
            else:
                m.wire(getattr(inst, p.name), getattr(io, p.name))
    return PECore


@functools.lru_cache(maxsize=None)
def pe_core(spec: type) -> CoreSpec:
    """The PE core of a PEak spec (tag ``p``): ports = the spec's inputs and outputs (bits),
    one config field ``inst`` (assembler width, reset 0). Rate ports (``emit_<out>``,
    ``deq_<in>``, ``need_<in>``: :func:`cgra.core.shell_ports`) are external (not routed). Module
    ``PECore_<Spec>_<hash8>``.
    Raises :class:`SpecError` from PEak for a malformed spec."""
    from peak import normal_form, spec_hash, spec_ref  # deferred: loads  only when called

    nf = normal_form(spec)
    asm = assembler(nf.isa)
    ports = []
    for n, T in nf.inputs:
        ports.append(PortSpec(n, _width(T), "in"))
    for n, T in nf.outputs:
        ports.append(PortSpec(n, _width(T), "out"))
    if any(p.name == "inst" for p in ports):
        raise SpecError(f"PE {spec.__name__}: a data port is named 'inst', which clashes with "
                        f"the instruction; rename the port")
    name = f"PECore_{_sanitize(spec.__name__)}_{spec_hash(spec)[:8]}"
    info = {"timing_class": "pe", "spec": spec_ref(spec), "spec_hash": spec_hash(spec),
            "inst_width": asm.width}
    rates = shell_ports(ports)
    if rates:      # the handshake wrapper reads them; they are not routed
        info["external"] = tuple(sorted(rates))
    return CoreSpec(name, "p", tuple(ports), (ConfigField("inst", asm.width, 0),),
                    lambda: _pe_core_circuit(spec, name), info)


def _width(T: Any) -> int:
    """Width in bits of a port type (``Bit`` = 1, sized ``BitVector[n]`` = n); a type
    :func:`peak.normal_form` accepted. :class:`SpecError` for anything else."""

    if is_bit_type(T):
        return 1
    if is_bv_type(T):
        return int(T.size)
    raise SpecError(f"port type {T!r} is neither Bit nor a sized BitVector; annotate ports "
                    "with Bit or BitVector[n]")


def mem_core(mem: "MemorySpec | str") -> CoreSpec:
    """The MEM core (tag ``m``) of a Lake memory -- a preset by name or a
    :class:`lake.spec.MemorySpec` (the architect's, ``mem`` of the TOML):
    :func:`lake.core_spec` with the timing class recorded. Raises :class:`ConfigError` for
    an unknown preset name."""
    if isinstance(mem, str):
        if not is_preset(mem):
            raise ConfigError(f"field 'mem_preset' = {mem!r}: unknown Lake preset; "
                              f"known presets: {sorted(PRESETS)} and "
                              f"dualport_<capacity>x<data_width> (e.g. {dual_port_name(8)})")
        mem = preset(mem)
    return _mem_core(register(mem))


@functools.lru_cache(maxsize=None)
def _mem_core(spec: MemorySpec) -> CoreSpec:
    core = lake.core_spec(spec)
    return CoreSpec(core.name, "m", core.ports, core.config_fields, core.build,
                    {**core.info, "timing_class": "mem", "preset": spec.name},
                    core.config_memory)


#: prefix of the pond's data ports and config fields inside a PE tile (:func:`pe_pond_core`)
POND_PREFIX = "pond_"


def pe_pond_core(spec: type, pond: "MemorySpec | str") -> CoreSpec:
    """The PE core of ``spec`` (:func:`pe_core`) with a register file ("pond", a Lake memory:
    a preset name or a :class:`lake.spec.MemorySpec`) beside it, tag ``p`` (module
    docstring). Ports: the PE's, then ``pond_data_in_<i>`` / ``pond_data_out_<q>`` (the
    pond's word width, bits); config fields: ``inst``, then ``pond_<field>`` for each field
    of :func:`lake.config.config_fields` (widths in bits). ``info`` is the PE core's plus
    ``pond`` (the pond's name) and ``pond_spec_hash``. Latency: the PE's (0 cycles); the
    pond's read latency is its own (mem.json-style collateral in pe.json). Raises
    :class:`SpecError` when a pond field or port name collides with the PE's, or for a pond
    with a lookup-table mode (no config-bus memory in a PE tile)."""
    if isinstance(pond, str):
        pond = preset(pond)
    pond = register(pond)
    if pond.lut:
        raise SpecError(f"pond '{pond.name}': lut=True needs a config-bus memory, which a PE "
                        "tile does not have; use a memory with lut=False")
    return _pe_pond_core(spec, pond)


@functools.lru_cache(maxsize=None)
def _pe_pond_core(spec: type, pond: MemorySpec) -> CoreSpec:
    pe = pe_core(spec)
    mem = _mem_core(pond)
    data = [q for q in mem.ports if q.name.startswith(("data_in_", "data_out_"))]
    ports = pe.ports + tuple(PortSpec(POND_PREFIX + q.name, q.width, q.direction)
                             for q in data)
    fields = pe.config_fields + tuple(ConfigField(POND_PREFIX + f.name, f.width, f.reset)
                                      for f in mem.config_fields)
    for what, names in (("port", [q.name for q in ports]), ("config field",
                                                            [f.name for f in fields])):
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise SpecError(f"PE {spec.__name__} with pond '{pond.name}': {what}s {dup} of the "
                            f"pond (prefix {POND_PREFIX!r}) collide with the PE's; rename "
                            f"the PE's {what}s")
    phash = mem.info.get("spec_hash", "")[:8]
    name = f"PEPond_{pe.name.removeprefix('PECore_')}_{phash}"
    return CoreSpec(name, "p", ports, fields,
                    lambda: _pe_pond_circuit(spec, pond, name, pe.name),
                    {**pe.info, "pond": pond.name, "pond_spec_hash": mem.info.get("spec_hash")})


@functools.lru_cache(maxsize=None)
def _pe_pond_circuit(spec: type, pond: MemorySpec, circuit_name: str, pe_name: str) -> Any:
    core = _pe_pond_core(spec, pond)
    pe = pe_core(spec)
    mem = _mem_core(pond)
    pe_c = _pe_core_circuit(spec, pe_name)
    mem_c = mem.build()
    ports: dict[str, Any] = {"clk_en": m.In(m.Bit), "flush": m.In(m.Bit)}
    for q in core.ports:
        ports[q.name] = (m.In if q.direction == "in" else m.Out)(_mtype(q.width))
    for f in core.config_fields:
        ports[f"config_{f.name}"] = m.In(m.Bits[f.width])
    pe_ports = {q.name for q in pe.ports}

    class PEPond(m.Circuit):
        name = circuit_name
        io = m.IO(**ports) + m.ClockIO(has_reset=True)
        pe_i = pe_c(name="pe_core")
        pond_i = mem_c(name="pond")
        for inst in (pe_i, pond_i):
            inst.CLK @= io.CLK
            inst.RESET @= io.RESET
            inst.clk_en @= io.clk_en
            inst.flush @= io.flush
        for f in pe.config_fields:
            m.wire(getattr(io, f"config_{f.name}"), getattr(pe_i, f"config_{f.name}"))
        for f in mem.config_fields:
            m.wire(getattr(io, f"config_{POND_PREFIX}{f.name}"),
                   getattr(pond_i, f"config_{f.name}"))
        for q in core.ports:
            inner, local = (pe_i, q.name) if q.name in pe_ports else \
                (pond_i, q.name.removeprefix(POND_PREFIX))
            if q.direction == "in":
                m.wire(getattr(io, q.name), getattr(inner, local))
            else:
                m.wire(getattr(inner, local), getattr(io, q.name))
        for q in mem.ports:
            if q.name.startswith("chain_"):        # a pond is never chained: inputs 0
                m.wire(m.bits(0, q.width) if q.width > 1 else m.bit(0),
                       getattr(pond_i, q.name))
    return PEPond


def pond_collateral(pond: "MemorySpec | str") -> dict:
    """The ``pond`` object of ``pe.json`` in a design with a pond (:func:`pe_pond_core`):
    Lake's collateral of the pond memory (:func:`lake.collateral.collateral`, as in
    mem.json) under ``lake`` and the prefix of its ports and config fields in the PE tile
    under ``prefix``. Read by :func:`garnet.collateral.read_pond`."""
    spec = register(preset(pond) if isinstance(pond, str) else pond)
    return {"lake": collateral(spec.name), "prefix": POND_PREFIX}


def io_core(width: int = 16) -> CoreSpec:
    """The IO core (tag ``I``) of data width ``width`` (the design's ``data_width``), see the
    module docstring. Module ``io_core`` at 16 bits, ``io_core_<width>`` otherwise."""
    return _io(width)


@functools.lru_cache(maxsize=None)
def _io(width: int) -> CoreSpec:

    return canal_io("io_core" if width == 16 else f"io_core_{width}", "I", width)


#: the PE core's latency as pe.json states it
PE_LATENCY_NOTE = ("outputs are combinational in the inputs and the PE state; an input in "
                   "DELAY mode adds 1 cycle, DELAY<k> k cycles")


def core_tile(core: CoreSpec, latency_cycles: int | None = None, note: str = "") -> TileCore:
    """What the array adds to a core's collateral (:class:`garnet.collateral.TileCore`): its
    tag, module, routable ports and where its config fields live in feature 0
    (:func:`cgra.config.pack_fields`)."""
    slices = pack_fields(tuple(core.config_fields))
    return TileCore(core.tag, core.name, (max(c.reg for c in slices) + 1) if slices else 0,
                    tuple(CoreSlice(c.name, c.reg, c.lo, c.width, c.field_lo) for c in slices),
                    tuple((q.name, q.direction, q.width) for q in core.ports),
                    latency_cycles, note)


def mem_collateral(mem: "MemorySpec | str") -> dict:
    """The ``mem.json`` document of a design whose MEM tiles are Lake memory ``mem`` (a
    preset name or a spec; schema ``garnet.mem/2``): Lake's collateral as Lake writes it
    (:func:`lake.collateral.collateral`, with the spec itself) under ``lake``, the tile's
    additions (:func:`core_tile`) under ``tile``. Raises :class:`ConfigError` for an
    unknown preset."""
    core = mem_core(mem)
    return mem_doc(collateral(core.info["preset"]), core_tile(core))


def pe_collateral(spec: type, pe: CoreSpec) -> dict:
    """The ``pe.json`` document of PE spec ``spec`` whose core is ``pe`` (schema
    ``garnet.pe/2``): PEak's document (:func:`peak.collateral.pe_json`, whose ``spec`` is a
    reference :func:`peak.load_spec` resolves in any process) under ``peak``, the tile's
    additions (tag, module, ports, config slices, latency 0 cycles) under ``tile``; for a
    PE tile with a pond (:func:`pe_pond_core`) also the pond's collateral under ``pond``
    (:func:`pond_collateral`)."""
    doc = pe_doc(pe_json(spec), core_tile(pe, 0, PE_LATENCY_NOTE))
    if pe.info.get("pond"):             # a PE tile with a register file (pe_pond_core)
        doc["pond"] = pond_collateral(pe.info["pond"])
    return doc
