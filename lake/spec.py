"""Lake memory specs: a memory is a graph of components.

Components (all frozen dataclasses):

* :class:`Storage` — the storage unit: ``capacity`` wide words of ``fetch_width`` x
  ``data_width`` bits, an SRAM-macro behavioural model (read latency 1) or registers;
* :class:`MemPort` — a port of the storage (``R``, ``W`` or ``RW``) with its latency;
* :class:`ExternalPort` — a data port of the memory tile (direction, width in bits);
* :class:`Controller` — an iteration domain (nested counters, up to ``dims`` levels), one
  schedule generator and one or more address generators, all affine functions of the
  counters in recurrence form;
* :class:`Aggregator` (serial-in / parallel-out, wide fetch on the write side) and
  :class:`TransposeBuffer` (parallel-in / serial-out, read side), each double-buffered
  (2 x ``fetch_width`` words);
* :class:`PortSelect` — the mux that lets several controllers share one storage port.

``edges`` records the data-flow graph between component names. The three presets of the
unified-buffer paper (Liu et al., ACM TACO 2023, Sec. 6) are :func:`dual_port`,
:func:`physical_unified_buffer` and :func:`pond`; :data:`PRESETS` maps their names. The dual
port is width-parameterised (:func:`dual_port`): ``dualport_<capacity>x<data_width>`` names
it at any word width (``dualport_4096x8``, ``dualport_2048x16``, ``dualport_1024x32``: the
same 32 Kbit), and :func:`preset` accepts every such name.
"""
from __future__ import annotations

import ast
import dataclasses
import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache

from cgra.errors import SpecError
from cgra.load import resolve


@dataclass(frozen=True)
class Storage:
    """Storage unit. ``capacity`` in wide words; a wide word is ``fetch_width`` words of
    ``data_width`` bits. ``kind`` is ``"sram"`` or ``"registers"``; ``read_latency`` in
    cycles (the SRAM macro model has 1)."""

    name: str
    capacity: int
    data_width: int
    fetch_width: int
    kind: str
    read_latency: int = 1

    @property
    def word_width(self) -> int:
        """Width of one wide word in bits."""
        return self.fetch_width * self.data_width

    @property
    def words(self) -> int:
        """Capacity in data words."""
        return self.capacity * self.fetch_width


@dataclass(frozen=True)
class MemPort:
    """A storage port: ``kind`` in {"R", "W", "RW"}; ``latency`` in cycles."""

    name: str
    kind: str
    latency: int


@dataclass(frozen=True)
class ExternalPort:
    """A data port of the tile: ``direction`` "in" or "out", ``width`` in bits."""

    name: str
    direction: str
    width: int


@dataclass(frozen=True)
class AddressGenerator:
    """An address generator of a controller; ``width`` in bits (register width; the
    recurrence wraps modulo ``2**width``)."""

    name: str
    width: int


@dataclass(frozen=True)
class Controller:
    """Iteration domain + schedule generator + address generators of one access stream.

    ``role`` names what firing does: ``"write"`` (external port -> storage),
    ``"read"`` (storage -> external port), ``"agg_in"`` (external port -> aggregator),
    ``"agg_to_sram"`` (aggregator -> storage, shared AGG-read / SRAM-write schedule),
    ``"sram_to_tb"`` (storage -> transpose buffer, shared SRAM-read / TB-write schedule),
    ``"tb_out"`` (transpose buffer -> external port). ``port`` is the external port served.
    """

    name: str
    role: str
    port: str
    dims: int
    address_generators: tuple[AddressGenerator, ...]


@dataclass(frozen=True)
class Aggregator:
    """Serial-in / parallel-out buffer of ``2 * fetch_width`` words fed by ``port``."""

    name: str
    port: str
    fetch_width: int


@dataclass(frozen=True)
class TransposeBuffer:
    """Parallel-in / serial-out buffer of ``2 * fetch_width`` words feeding ``port``."""

    name: str
    port: str
    fetch_width: int


@dataclass(frozen=True)
class PortSelect:
    """Several controllers share storage port ``mem_port``; at most one fires per cycle
    (checked by the validator); priority is the tuple order."""

    mem_port: str
    controllers: tuple[str, ...]


@dataclass(frozen=True)
class MemorySpec:
    """A memory tile. Register widths in bits: ``extent_width`` (holds extent - 1),
    ``schedule_width`` (cycle counter, schedule offsets and deltas), ``chain_bits``
    (tile index within a chain; address generators of storage addresses are
    ``log2(capacity) + chain_bits`` wide). ``lut``: the memory has a ROM / lookup-table
    mode (config field ``lut_mode``, :mod:`lake.lut`) and a config-memory port through
    which the tile loads and reads back the storage words with the bitstream (only for
    a non-wide SRAM storage)."""

    name: str
    storage: Storage
    mem_ports: tuple[MemPort, ...]
    external_ports: tuple[ExternalPort, ...]
    controllers: tuple[Controller, ...]
    aggregators: tuple[Aggregator, ...] = ()
    transpose_buffers: tuple[TransposeBuffer, ...] = ()
    port_selects: tuple[PortSelect, ...] = ()
    edges: tuple[tuple[str, str], ...] = ()
    extent_width: int = 16
    schedule_width: int = 24
    chain_bits: int = 4
    max_dims: int = 6
    lut: bool = False
    info: dict = field(default_factory=dict, compare=False, hash=False)

    # -- derived ------------------------------------------------------------------------
    @property
    def inputs(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.external_ports if p.direction == "in")

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.external_ports if p.direction == "out")

    @property
    def address_bits(self) -> int:
        """Bits of a local storage address (wide-word address)."""
        return max(1, (self.storage.capacity - 1).bit_length())

    @property
    def global_address_bits(self) -> int:
        """Bits of a storage address including the chain tile index."""
        return self.address_bits + self.chain_bits

    @property
    def wide(self) -> bool:
        """True when the storage is fetched through aggregators / transpose buffers."""
        return self.storage.fetch_width > 1

    def controller(self, name: str) -> Controller:
        for c in self.controllers:
            if c.name == name:
                return c
        raise SpecError(f"memory '{self.name}' has no controller '{name}'; "
                        f"known: {[c.name for c in self.controllers]}")

    def check(self) -> None:
        """Structural checks; raises :class:`SpecError` naming the component."""
        names = [p.name for p in self.external_ports]
        if len(set(names)) != len(names):
            raise SpecError(f"memory '{self.name}': duplicate external port names {names}")
        if self.storage.capacity < 2 or self.storage.capacity & (self.storage.capacity - 1):
            raise SpecError(f"memory '{self.name}': storage capacity {self.storage.capacity} "
                            "must be a power of two >= 2")
        if not 1 <= self.max_dims <= 6:
            raise SpecError(f"memory '{self.name}': max_dims {self.max_dims} must be 1..6")
        if self.storage.kind not in ("sram", "registers"):
            raise SpecError(f"memory '{self.name}': storage kind '{self.storage.kind}' is not "
                            "'sram' or 'registers'")
        for i, p in enumerate(self.external_ports):
            want = f"data_{p.direction}_{sum(q.direction == p.direction for q in self.external_ports[:i])}"
            if p.direction not in ("in", "out") or p.name != want:
                raise SpecError(f"memory '{self.name}': external port '{p.name}' "
                                f"({p.direction}); name the data ports data_in_0, data_in_1, "
                                f"... and data_out_0, ... in order (here: {want}) with "
                                "direction 'in' or 'out'")
        roles = {"write", "read"} if not self.wide else {"agg_in", "agg_to_sram",
                                                          "sram_to_tb", "tb_out"}
        for p in self.external_ports:
            served = {c.role for c in self.controllers if c.port == p.name}
            need = ({"write"} if p.direction == "in" else {"read"}) if not self.wide else \
                ({"agg_in", "agg_to_sram"} if p.direction == "in" else {"sram_to_tb", "tb_out"})
            if served != need:
                raise SpecError(f"memory '{self.name}': port '{p.name}' is served by "
                                f"controllers of roles {sorted(served) or 'none'}; a "
                                f"{'wide-fetch' if self.wide else 'fetch-width-1'} memory "
                                f"needs one controller of each role {sorted(need)} per port")
        if self.wide and (len(self.aggregators) != len(self.inputs)
                          or len(self.transpose_buffers) != len(self.outputs)):
            raise SpecError(f"memory '{self.name}': fetch_width {self.storage.fetch_width} needs "
                            f"one aggregator per input ({len(self.inputs)}) and one transpose "
                            f"buffer per output ({len(self.outputs)}); it has "
                            f"{len(self.aggregators)} and {len(self.transpose_buffers)}")
        for c in self.controllers:
            if c.role not in roles:
                raise SpecError(f"memory '{self.name}': controller '{c.name}' has role "
                                f"'{c.role}'; this memory's controllers take roles "
                                f"{sorted(roles)}")
            if c.port not in names:
                raise SpecError(f"memory '{self.name}': controller '{c.name}' serves unknown "
                                f"port '{c.port}'")
            if c.dims != self.max_dims:
                raise SpecError(f"memory '{self.name}': controller '{c.name}' has {c.dims} "
                                f"levels, expected {self.max_dims}")
        if self.lut and (self.wide or self.storage.kind != "sram"):
            raise SpecError(f"memory '{self.name}': lut=True needs a non-wide SRAM storage "
                            f"(this one is {self.storage.kind}, fetch_width "
                            f"{self.storage.fetch_width}); set lut=False")
        for a, b in self.edges:
            known = set(names) | {c.name for c in self.controllers} | {self.storage.name} | {
                x.name for x in self.aggregators + self.transpose_buffers}
            if a not in known or b not in known:
                raise SpecError(f"memory '{self.name}': edge {a} -> {b} names an unknown "
                                "component")


def _storage_ag(spec_bits: int) -> AddressGenerator:
    return AddressGenerator("addr", spec_bits)


def simple(name: str, capacity: int, data_width: int, kind: str, n_in: int = 1,
           n_out: int = 1, chain_bits: int = 4, schedule_width: int = 24,
           extent_width: int = 16, lut: bool = False) -> MemorySpec:
    """A memory whose external ports access the storage directly (one controller per
    port, a W port per input and an R port per output): the dual-port SRAM and the pond.
    ``lut``: add the lookup-table mode and config-memory port (SRAM only)."""
    abits = max(1, (capacity - 1).bit_length()) + chain_bits
    ports = tuple(ExternalPort(f"data_in_{i}", "in", data_width) for i in range(n_in)) + tuple(
        ExternalPort(f"data_out_{i}", "out", data_width) for i in range(n_out))
    ctrls = tuple(Controller(f"in{i}", "write", f"data_in_{i}", 6, (_storage_ag(abits),))
                  for i in range(n_in)) + tuple(
        Controller(f"out{i}", "read", f"data_out_{i}", 6, (_storage_ag(abits),))
        for i in range(n_out))
    mem_ports = tuple(MemPort(f"w{i}", "W", 0) for i in range(n_in)) + tuple(
        MemPort(f"r{i}", "R", 1) for i in range(n_out))
    edges = tuple((f"data_in_{i}", "storage") for i in range(n_in)) + tuple(
        ("storage", f"data_out_{i}") for i in range(n_out))
    spec = MemorySpec(name, Storage("storage", capacity, data_width, 1, kind, 1), mem_ports,
                      ports, ctrls, edges=edges, chain_bits=chain_bits,
                      schedule_width=schedule_width, extent_width=extent_width, lut=lut)
    spec.check()
    return spec


#: bits of the dual-port SRAM macro (``dualport_2048x16``: 2048 words of 16 bits); the
#: width-parameterised dual port keeps them at any word width (:func:`dual_port`)
DUAL_PORT_BITS = 32768
#: name pattern of the width-parameterised dual port: ``dualport_<capacity>x<data_width>``
DUAL_PORT_NAME = re.compile(r"dualport_([0-9]{1,7})x([0-9]{1,2})")
#: data widths of the dual port (bits): the range of ``data_width`` (garnet.params)
DUAL_PORT_WIDTHS = range(2, 65)


def dual_port_name(data_width: int, capacity: int | None = None) -> str:
    """Preset name of the dual port of ``data_width``-bit words: ``dualport_<capacity>x<w>``;
    ``capacity`` (words) defaults to the largest power of two with ``capacity * data_width
    <= DUAL_PORT_BITS`` (the same 32 Kbit macro: 4096 x 8, 2048 x 16, 1024 x 32)."""
    if capacity is None:
        capacity = 1 << (max(DUAL_PORT_BITS // max(data_width, 1), 2).bit_length() - 1)
    return f"dualport_{capacity}x{data_width}"


def dual_port(data_width: int = 16, capacity: int | None = None) -> MemorySpec:
    """Preset (a): a dual-port SRAM of ``capacity`` words of ``data_width`` bits (default:
    the 32 Kbit macro, :func:`dual_port_name`; ``dual_port()`` is ``dualport_2048x16``), one
    write and one read port, each with its own iteration domain, address generator and
    schedule generator; with the lookup-table mode (``lut=True``, :mod:`lake.lut`). Named
    ``dualport_<capacity>x<data_width>`` (:func:`preset` parses any such name). Raises
    :class:`SpecError` for a width outside 2..64 bits or a capacity that is not a power of
    two >= 2."""
    if data_width not in DUAL_PORT_WIDTHS:
        raise SpecError(f"dual port: data_width {data_width} must be "
                        f"{DUAL_PORT_WIDTHS.start}..{DUAL_PORT_WIDTHS.stop - 1} bits")
    name = dual_port_name(data_width, capacity)
    capacity = int(DUAL_PORT_NAME.fullmatch(name).group(1))
    return simple(name, capacity, data_width, "sram", lut=True)


def dual_port_32() -> MemorySpec:
    """Preset (a) for 32-bit arrays: dual-port SRAM 1024 x 32 (the same 32 Kbit as
    ``dualport_2048x16``): ``dual_port(32)``."""
    return dual_port(32)


def pond() -> MemorySpec:
    """Preset (c): the PE register file ("pond"), 32 x 16 registers, 1 in + 1 out."""
    return simple("pond_32x16", 32, 16, "registers")


def physical_unified_buffer(capacity: int = 512, data_width: int = 16, fetch_width: int = 4,
                            chain_bits: int = 4) -> MemorySpec:
    """Preset (b): the physical unified buffer — a single-port SRAM of ``capacity`` wide
    words (``fetch_width`` x ``data_width`` bits), 2 inputs through aggregators and 2
    outputs through transpose buffers. As in the unified-buffer paper (Sec. 6.1), the
    SRAM-side schedules are shared: one controller drives both the aggregator read and the
    SRAM write (``agg<i>``), one drives both the SRAM read and the transpose-buffer write
    (``tb<i>``); the four share the single SRAM port through a port-select mux."""
    if fetch_width & (fetch_width - 1) or fetch_width < 2:
        raise SpecError(f"physical unified buffer: fetch_width {fetch_width} must be a power "
                        "of two >= 2")
    abits = max(1, (capacity - 1).bit_length()) + chain_bits
    slot_bits = (2 * fetch_width - 1).bit_length()
    ports = (ExternalPort("data_in_0", "in", data_width), ExternalPort("data_in_1", "in", data_width),
             ExternalPort("data_out_0", "out", data_width),
             ExternalPort("data_out_1", "out", data_width))
    ctrls = []
    for i in range(2):
        ctrls.append(Controller(f"in{i}", "agg_in", f"data_in_{i}", 6,
                                (AddressGenerator("addr", slot_bits),)))
    for i in range(2):
        ctrls.append(Controller(f"agg{i}", "agg_to_sram", f"data_in_{i}", 6,
                                (AddressGenerator("addr", abits), AddressGenerator("half", 1))))
    for i in range(2):
        ctrls.append(Controller(f"tb{i}", "sram_to_tb", f"data_out_{i}", 6,
                                (AddressGenerator("addr", abits), AddressGenerator("half", 1))))
    for i in range(2):
        ctrls.append(Controller(f"out{i}", "tb_out", f"data_out_{i}", 6,
                                (AddressGenerator("addr", slot_bits),)))
    edges = []
    for i in range(2):
        edges += [(f"data_in_{i}", f"aggregator{i}"), (f"aggregator{i}", "storage"),
                  ("storage", f"transpose{i}"), (f"transpose{i}", f"data_out_{i}")]
    spec = MemorySpec(
        f"pub_{capacity}x{fetch_width * data_width}",
        Storage("storage", capacity, data_width, fetch_width, "sram", 1),
        (MemPort("rw", "RW", 1),), ports, tuple(ctrls),
        aggregators=tuple(Aggregator(f"aggregator{i}", f"data_in_{i}", fetch_width)
                          for i in range(2)),
        transpose_buffers=tuple(TransposeBuffer(f"transpose{i}", f"data_out_{i}", fetch_width)
                                for i in range(2)),
        port_selects=(PortSelect("rw", ("agg0", "agg1", "tb0", "tb1")),),
        edges=tuple(edges), chain_bits=chain_bits)
    spec.check()
    return spec


PRESETS = {
    "dualport_2048x16": dual_port,
    "dualport_1024x32": dual_port_32,
    "pub_512x64": physical_unified_buffer,
    "pond_32x16": pond,
}
"""Preset name -> spec constructor."""


def is_preset(name: str) -> bool:
    """Whether ``name`` names a preset: a key of :data:`PRESETS` or a width-parameterised
    dual port ``dualport_<capacity>x<data_width>`` (:data:`DUAL_PORT_NAME`)."""
    return name in PRESETS or DUAL_PORT_NAME.fullmatch(name) is not None


@lru_cache(maxsize=None)
def preset(name: str) -> MemorySpec:
    """The :class:`MemorySpec` of a preset by name: a key of :data:`PRESETS` or any
    ``dualport_<capacity>x<data_width>`` (:func:`dual_port`, e.g. ``dualport_4096x8`` for an
    8-bit array). Raises :class:`SpecError` if unknown or out of range."""
    if name in PRESETS:
        return PRESETS[name]()
    m = DUAL_PORT_NAME.fullmatch(name)
    if m is None and name in _REGISTERED:
        return _REGISTERED[name]
    if m is None:
        raise SpecError(f"unknown Lake preset '{name}'; known presets: {sorted(PRESETS)} "
                        f"and dualport_<capacity>x<data_width> for any width 2..64 "
                        f"(e.g. {dual_port_name(8)})")
    capacity, width = int(m.group(1)), int(m.group(2))
    if capacity < 2 or capacity & (capacity - 1):
        raise SpecError(f"Lake preset '{name}': capacity {capacity} must be a power of two "
                        f">= 2, e.g. {dual_port_name(width)}")
    return dual_port(width, capacity)


def as_spec(spec: "MemorySpec | str") -> MemorySpec:
    """Accept a preset name (or a registered memory's: :func:`register`) or a spec."""
    return spec if isinstance(spec, MemorySpec) else preset(spec)


def circuit_name(spec: MemorySpec, form: str = "recurrence") -> str:
    """Verilog module name of a memory: ``lake_<name>`` for a preset, ``lake_<name>_<hash8>``
    (sha256 of the spec's repr) for an architect's memory (:func:`register`), then the
    generator form unless ``recurrence``."""
    name = f"lake_{spec.name}"
    if not is_preset(spec.name):
        name += "_" + hashlib.sha256(repr(spec).encode()).hexdigest()[:8]
    return name + ("" if form == "recurrence" else f"_{form}")


# -- the architect's own memories: serialisation, registry, loading ---------------------

def spec_to_dict(spec: MemorySpec) -> dict:
    """``spec`` as JSON data (every component field; ``info`` left out): what ``mem.json``
    carries under ``spec`` so the compiler rebuilds the very spec (:func:`spec_from_dict`)
    without importing the architect's file."""
    d = dataclasses.asdict(spec)
    d.pop("info", None)
    return d


def spec_from_dict(d: dict) -> MemorySpec:
    """Inverse of :func:`spec_to_dict`. Raises :class:`SpecError` for a malformed document
    and for a spec that fails :meth:`MemorySpec.check`."""
    try:
        ctrls = tuple(Controller(c["name"], c["role"], c["port"], int(c["dims"]),
                                 tuple(AddressGenerator(g["name"], int(g["width"]))
                                       for g in c["address_generators"]))
                      for c in d["controllers"])
        spec = MemorySpec(
            d["name"], Storage(**d["storage"]), tuple(MemPort(**p) for p in d["mem_ports"]),
            tuple(ExternalPort(**p) for p in d["external_ports"]), ctrls,
            tuple(Aggregator(**a) for a in d["aggregators"]),
            tuple(TransposeBuffer(**t) for t in d["transpose_buffers"]),
            tuple(PortSelect(p["mem_port"], tuple(p["controllers"])) for p in d["port_selects"]),
            tuple((a, b) for a, b in d["edges"]), int(d["extent_width"]),
            int(d["schedule_width"]), int(d["chain_bits"]), int(d["max_dims"]), bool(d["lut"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise SpecError(f"malformed memory spec document ({exc!r}); regenerate the design "
                        "with `cgra rtl`") from None
    spec.check()
    return spec


#: the architect's memories known to this process by name (:func:`register`)
_REGISTERED: dict[str, MemorySpec] = {}


def register(spec: MemorySpec) -> MemorySpec:
    """Make ``spec`` known by its name to every function that takes a preset name
    (:func:`preset`, :func:`as_spec`, hence the config encoder, the collateral, the RTL and
    the models), so a memory of the architect's flows through the same names as a preset.
    Garnet registers the design's memory when it loads the spec; the mapper when it reads
    ``mem.json``. A spec registered under a name already taken replaces the earlier one
    (an edited spec file loaded again); its Verilog module name carries a content hash
    (:func:`circuit_name`), so the two never share a module. Raises :class:`SpecError`
    when the name is a preset's with different contents: give the memory a name of its
    own."""
    if is_preset(spec.name):
        if preset(spec.name) != spec:
            raise SpecError(f"memory '{spec.name}': the name is a Lake preset's but the spec "
                            "differs from it; give your memory a name of its own (the "
                            "MemorySpec name field)")
        return spec
    if _REGISTERED.get(spec.name) != spec:
        _REGISTERED[spec.name] = spec
        preset.cache_clear()
    return spec


def is_known(name: str) -> bool:
    """Whether :func:`preset` resolves ``name``: a preset (:func:`is_preset`) or a memory
    registered in this process (:func:`register`, e.g. by reading a design's ``mem.json``)."""
    return is_preset(name) or name in _REGISTERED


def _assignment_line(file: str, name: str) -> int | None:
    """Line of the top-level assignment (or ``def``) of ``name`` in Python file ``file``."""
    try:
        tree = ast.parse(open(file, encoding="utf-8").read())
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return node.lineno
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return node.lineno
    return None


def _definition_site(module, attr: str) -> dict:
    """``{"file", "line"}`` of the definition of ``attr`` in ``module``'s file (read only when
    an error is raised), ``{}`` when unknown."""
    file = getattr(module, "__file__", None)
    line = _assignment_line(file, attr.split(".")[0]) if file else None
    return {"file": file, "line": line} if file and line else {}


def load_memory(ref: str, where: str = "field 'mem'", base=None) -> MemorySpec:
    """The architect's memory named by ``ref`` (``path/to/mem.py:MEM``,
    ``module:MEM`` or ``module:factory(args)``: :func:`cgra.load.resolve`), checked
    (:meth:`MemorySpec.check`) and registered (:func:`register`). ``base``: the folder a
    relative file is resolved against (the TOML file's). Raises :class:`SpecError` with
    ``file:line`` of the spec's definition when the object is not a :class:`MemorySpec`
    or fails its checks, and as :func:`cgra.load.resolve` does for a reference that does
    not resolve."""
    prefix = f"{where} = {ref!r}"
    obj, module, attr = resolve(
        ref, prefix, base, noun="memory specs", module_prefix="_lake_spec_",
        form="give it as path/to/mem.py:NAME, module:NAME or module:factory(args) naming "
             "a lake.spec.MemorySpec (e.g. lake.spec:dual_port(16, 4096))",
        candidates=lambda mod: [n for n, v in vars(mod).items()
                                if isinstance(v, MemorySpec) and not n.startswith("_")])
    if not isinstance(obj, MemorySpec):
        what = "a function (call it: NAME(...))" if callable(obj) else type(obj).__name__
        raise SpecError(f"{prefix}: {attr} is not a lake.spec.MemorySpec (got {what}); "
                        "name a MemorySpec or call a factory that returns one",
                        **_definition_site(module, attr))
    try:
        obj.check()
        return register(obj)
    except SpecError as exc:
        if exc.file is not None:
            raise
        loc = _definition_site(module, attr)
        raise SpecError(f"{prefix}: {exc}", **loc) from None
