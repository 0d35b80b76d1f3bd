"""Parameters of a generated CGRA: one dataclass, loaded from TOML, validated before any
generation.

TOML keys (all top level; every key is optional and takes the default below)::

    name = "small"                  # design name (informative; the output dir is --out)
    width = 8                       # columns (x), 1..256
    height = 8                      # rows (y) including the IO row, 2..256
    tracks = 5                      # routing tracks per side per bit width, >= 1
    topology = "imran"              # switch box: "imran" | "wilton" | "disjoint"
    track_length = 1                # tiles spanned by one track segment, 1..tracks; L > 1:
                                    # staggered long wires (canal.passes.segment_tracks)
    data_width = 16                 # bits of a data word: the PE's data ports, the MEM's
                                    # words, the IO core (glb2io_<w>) and one routing graph
    widths = [16, 1]                # interconnect bit widths (one routing graph each); must
                                    # hold data_width and 1
    mem_ratio = 4                   # every mem_ratio-th column is MEM (x % r == r - 1); 0 = none
    pe = "peak.examples.cgra_pe:PE" # PEak spec: "module:Class" or "path/to/my_pe.py:Class"
                                    # (a file path is relative to the TOML file) or
                                    # "module:factory(args)"; its data ports (every port
                                    # wider than 1 bit) must be data_width bits, e.g.
                                    # "peak.examples.cgra_pe:make_pe(32)" for data_width = 32
    mem_preset = "dualport_2048x16" # Lake preset ("dualport_2048x16", "dualport_1024x32",
                                    # "pub_512x64", ...) with data_width-bit data ports
    mem = ""                        # or the architect's own Lake memory instead of a preset:
                                    # "path/to/mem.py:MEM" (relative to the TOML file),
                                    # "module:MEM" or "module:factory(args)" naming a
                                    # lake.spec.MemorySpec (configs/mem_wide8.py); give
                                    # either mem or mem_preset, not both
    pond = ""                       # the PE register file ("pond", AHA paper Sec. 4.2): ""
                                    # = none; a Lake preset name ("pond_32x16") or the
                                    # architect's own memory ("path/to/pond.py:POND",
                                    # "module:NAME") added to every PE tile as a second core
                                    # with its own connection-box inputs and switch-box
                                    # outputs (garnet.cores.pe_pond_core); buffer mapping
                                    # puts short-reuse delay lines in it
    io_sides = ["NORTH"]            # array edges holding IO tiles
    pipeline_register_sides = ["NORTH", "SOUTH", "EAST", "WEST"]  # SB_OUT sides with registers
    pipeline_register_tracks = []   # tracks with registers; empty = all tracks
    register_bypass_sides = ["SOUTH", "WEST"]  # registers that a route may bypass; on the
                                    # other sides every route passes the register (1 cycle)
    cb_sides = ["NORTH", "SOUTH", "EAST", "WEST"]  # connection-box sides (all tracks)
    flush_interval = 4              # rows per flush-spine register stage; 0 = no spine
    timing = "measured"             # the delay model: "measured" (the default) = every
                                    # tile synthesised (yosys) and timed (OpenSTA) on the
                                    # project's liberty (garnet.sta.measure);
                                    # "cascade-table" = the published table
                                    # (canal/data/delays_ps.json); else a delay table JSON
                                    # (ps), relative to the TOML file
    flow_control = "static"         # "static" | "ready_valid", or a table per track class
                                    # (bit width), e.g. {16 = "ready_valid", 1 = "static"}:
                                    # ready-valid tracks carry valid and ready beside the data
                                    # and put a FIFO at each pipeline register site
                                    # (canal.ready_valid; Cascade §V-D)
    fifo_kind = "skid"              # FIFO of the ready-valid tracks: "skid" (2 entries per
                                    # site, full throughput) | "split" (Cascade's split FIFO:
                                    # 1 entry per site, two sites per FIFO), or a table per width
    fifo_tokens = 1                 # words an enabled FIFO site holds after reset: 1 = the
                                    # token of the static register it replaces (a stencil app
                                    # runs as on the static array), 0 = empty (dataflow
                                    # programs, whose streams carry only the program's values:
                                    # mapper.dataflow.array; configs/small_df.toml)
    dynamic = {}                    # the dynamic layer of a hybrid network (canal.dynamic):
                                    # {} = none; a table {vcs = 2, buffers = 3, ids = 16,
                                    # token_bits = 6, width = 16} (every key optional) puts a
                                    # VC router in every tile beside the ready-valid tracks of
                                    # that width (thesis ch. 3.3); needs flow_control
                                    # "ready_valid" on that width
    interconnect = ""               # custom interconnect: "" = the built-in graphs, else
                                    # "path/to/ic.py:build" (relative to the TOML file) or
                                    # "module:build": build(graphs, params) receives the
                                    # built-in graphs (width -> InterconnectGraph) and returns
                                    # the transformed ones (canal.custom: helpers, e.g.
                                    # diagonal links; configs/ic_diagonal.py)

A ``[glb]`` table gives the global buffer's parameters (:mod:`garnet.glb.params`; checked
here, read by :func:`garnet.glb.params.load_toml`; the array's parameters do not change).

Default layout: IO tiles on the ``io_sides`` edges (top row by default), elsewhere a MEM in
column x when ``mem_ratio > 0 and x % mem_ratio == mem_ratio - 1``, else a PE.
:func:`validate` raises :class:`ConfigError` naming the field and the fix; it runs before
any hardware is generated.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cgra.errors import ConfigError, SpecError
from cgra.tomlfile import read_toml
from garnet.glb.params import from_dict as glb_from_dict
from canal.custom import load_build
from canal.dynamic import parse_dynamic
from canal.ready_valid import parse_flow_control
from canal.timing import TimingModel
from lake.spec import PRESETS, dual_port_name, is_preset, load_memory, preset

SIDES = ("NORTH", "SOUTH", "EAST", "WEST")
#: widest data word (``data_width``): the Verilator stream harness drives ports of <= 64 bits
MAX_DATA_WIDTH = 64
TOPOLOGIES = ("imran", "wilton", "disjoint")

#: the fields the interconnect graphs depend on (besides the cores' ports): a change of one
#: of them rebuilds the graphs; the others (``name``, ``pe``, ``mem_preset``, ``mem``,
#: ``pond``, ``flush_interval``) only touch the cores, the RTL or design.json
#: (:mod:`garnet.build`; a core whose ports change, as a PE tile given a pond, changes the
#: interconnect key through the cores' interfaces)
INTERCONNECT_FIELDS = ("width", "height", "tracks", "topology", "track_length", "widths",
                       "mem_ratio", "io_sides", "pipeline_register_sides",
                       "pipeline_register_tracks", "register_bypass_sides", "cb_sides",
                       "timing", "interconnect", "flow_control", "fifo_kind", "dynamic")


@dataclass
class GarnetParams:
    """All parameters of one CGRA (see the module docstring for units and meaning)."""

    name: str = "default"
    width: int = 32
    height: int = 16
    tracks: int = 5
    topology: str = "imran"
    track_length: int = 1
    data_width: int = 16
    widths: list[int] = field(default_factory=lambda: [16, 1])
    mem_ratio: int = 4
    pe: str = "peak.examples.cgra_pe:PE"
    mem_preset: str = "dualport_2048x16"
    mem: str = ""
    pond: str = ""
    io_sides: list[str] = field(default_factory=lambda: ["NORTH"])
    pipeline_register_sides: list[str] = field(default_factory=lambda: list(SIDES))
    pipeline_register_tracks: list[int] = field(default_factory=list)
    register_bypass_sides: list[str] = field(default_factory=lambda: ["SOUTH", "WEST"])
    cb_sides: list[str] = field(default_factory=lambda: list(SIDES))
    flush_interval: int = 4
    timing: str = "measured"
    interconnect: str = ""
    flow_control: str | dict[str, str] = "static"
    fifo_kind: str | dict[str, str] = "skid"
    fifo_tokens: int = 1
    dynamic: dict[str, int] = field(default_factory=dict)

    @property
    def measured_timing(self) -> bool:
        """Whether the delay model is measured from the generated tiles."""
        return self.timing == "measured"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def subset(self, fields: tuple[str, ...]) -> dict[str, Any]:
        """``{field: value}`` of the named fields (for build keys)."""
        d = self.to_dict()
        return {k: d[k] for k in fields}

    def tile_kind(self, x: int, y: int) -> str:
        """``"io"``, ``"mem"`` or ``"pe"`` of tile (x, y) in the default layout."""
        if (("NORTH" in self.io_sides and y == 0)
                or ("SOUTH" in self.io_sides and y == self.height - 1)
                or ("WEST" in self.io_sides and x == 0)
                or ("EAST" in self.io_sides and x == self.width - 1)):
            return "io"
        if self.mem_ratio and x % self.mem_ratio == self.mem_ratio - 1:
            return "mem"
        return "pe"


_FIELDS = {f.name: f for f in dataclasses.fields(GarnetParams)}
#: fields that take a string or a TOML table width -> string
_TABLE_OR_STRING = ("flow_control", "fifo_kind")


def _where(source: str | None, key: str) -> str:
    return f"{source}: field '{key}'" if source else f"field '{key}'"


def from_dict(doc: dict[str, Any], source: str | None = None) -> GarnetParams:
    """Build and validate parameters from a dict (TOML document). Unknown keys and values
    of the wrong type raise :class:`ConfigError` naming the key."""
    kwargs: dict[str, Any] = {}
    for key, value in doc.items():
        if key == "glb":
            # the [glb] table: the global buffer's parameters, checked here and read by
            # garnet.glb.params.load_toml (not part of the array's parameters)
            glb_from_dict(value, source)
            continue
        if key not in _FIELDS:
            raise ConfigError(f"{_where(source, key)}: unknown parameter; known parameters: "
                              f"{sorted(_FIELDS)}")
        default = getattr(GarnetParams(), key)
        if key in _TABLE_OR_STRING:
            if not isinstance(value, (str, dict)):
                raise ConfigError(f"{_where(source, key)} = {value!r}: expected a string or a "
                                  f"table per width (e.g. {{16 = \"...\"}})")
            value = value if isinstance(value, str) else {str(k): v for k, v in value.items()}
        elif isinstance(default, dict):
            if not isinstance(value, dict):
                raise ConfigError(f"{_where(source, key)} = {value!r}: expected a table "
                                  "(e.g. {vcs = 2, buffers = 3})")
            value = dict(value)
        elif isinstance(default, bool) or isinstance(default, int):
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError(f"{_where(source, key)} = {value!r}: expected an integer")
        elif isinstance(default, str):
            if not isinstance(value, str):
                raise ConfigError(f"{_where(source, key)} = {value!r}: expected a string")
        elif isinstance(default, list):
            if not isinstance(value, list):
                raise ConfigError(f"{_where(source, key)} = {value!r}: expected a list")
            value = list(value)
        kwargs[key] = value
    if doc.get("mem") and "mem_preset" in doc:
        raise ConfigError(f"{_where(source, 'mem')} = {doc['mem']!r}: the configuration also "
                          f"sets mem_preset = {doc['mem_preset']!r}; give one of them (mem "
                          "for a memory spec of your own, mem_preset for a Lake preset)")
    params = GarnetParams(**kwargs)
    validate(params, source)
    return params


def load_toml(path: str | Path) -> GarnetParams:
    """Read and validate a TOML parameter file. Raises :class:`ConfigError` for a missing
    file, a TOML syntax error (with its line) or an invalid field."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file {p} does not exist; pass an existing TOML file "
                          f"(e.g. configs/small.toml)")
    doc = read_toml(p)
    # file paths in the TOML are relative to the TOML file
    if isinstance(doc.get("timing"), str) and doc["timing"] \
            and doc["timing"] not in TIMING_MODELS:
        doc["timing"] = str(p.parent / doc["timing"])
    pe = doc.get("pe")
    if isinstance(pe, str) and pe.count(":") == 1 and pe.split(":")[0].endswith(".py") \
            and not Path(pe.split(":")[0]).is_absolute():
        file = p.parent / pe.split(":")[0]
        if not file.is_file():
            raise ConfigError(f"{p}: field 'pe' = {pe!r}: file {pe.split(':')[0]} does not "
                              f"exist relative to the TOML file (looked for {file}); give the "
                              "path of the PE spec relative to the TOML file's folder, or "
                              "module:Class")
        doc["pe"] = f"{file}:{pe.split(':')[1]}"
    ic = doc.get("interconnect")
    if isinstance(ic, str) and ic.count(":") == 1 and ic.split(":")[0].endswith(".py") \
            and not Path(ic.split(":")[0]).is_absolute():
        doc["interconnect"] = f"{p.parent / ic.split(':')[0]}:{ic.split(':')[1]}"
    mem = doc.get("mem")
    if isinstance(mem, str) and mem.count(":") == 1 and mem.split(":")[0].endswith(".py") \
            and not Path(mem.split(":")[0]).is_absolute():
        doc["mem"] = f"{p.parent / mem.split(':')[0]}:{mem.split(':')[1]}"
    pond = doc.get("pond")
    if isinstance(pond, str) and pond.count(":") == 1 and pond.split(":")[0].endswith(".py") \
            and not Path(pond.split(":")[0]).is_absolute():
        doc["pond"] = f"{p.parent / pond.split(':')[0]}:{pond.split(':')[1]}"
    return from_dict(doc, str(p))


def mem_spec(p: GarnetParams, source: str | None = None):
    """The :class:`lake.spec.MemorySpec` of the MEM tiles: the architect's memory of field
    ``mem`` (:func:`lake.spec.load_memory`: checked and registered under its name) or the
    Lake preset ``mem_preset``. Raises :class:`SpecError` (``file:line`` of the spec's
    definition) for a memory spec that does not load or check, :class:`ConfigError` for an
    unknown preset."""
    if p.mem:
        return load_memory(p.mem, _where(source, "mem"))
    try:
        return preset(p.mem_preset)
    except SpecError as exc:
        raise ConfigError(f"{_where(source, 'mem_preset')} = {p.mem_preset!r}: {exc}") from None


def pond_spec(p: GarnetParams, source: str | None = None):
    """The :class:`lake.spec.MemorySpec` of the PE tiles' register file (field ``pond``;
    ``None`` when empty): a Lake preset by name (``"pond_32x16"``, the AHA PE's 32 x 16-bit
    register file, AHA paper Sec. 4.2) or the architect's memory ``path/to/pond.py:NAME`` /
    ``module:NAME`` (:func:`lake.spec.load_memory`, checked and registered). Raises
    :class:`SpecError` (``file:line``) for a spec that does not load or check and
    :class:`ConfigError` naming field ``pond`` for an unknown preset or a memory that cannot
    be a pond (a lookup-table memory: the PE tile has no config-bus memory)."""
    if not p.pond:
        return None
    if ":" in p.pond:
        spec = load_memory(p.pond, _where(source, "pond"))
    else:
        try:
            spec = preset(p.pond)
        except SpecError as exc:
            raise ConfigError(f"{_where(source, 'pond')} = {p.pond!r}: {exc}") from None
    if spec.lut:
        raise ConfigError(f"{_where(source, 'pond')} = {p.pond!r}: memory '{spec.name}' has a "
                          "lookup-table mode, which needs a config-bus memory a PE tile does "
                          "not have; use a memory with lut=False (e.g. \"pond_32x16\")")
    return spec


def pe_spec(ref: str, where: str = "field 'pe'") -> type:
    """The PEak spec class named by ``ref`` (see :func:`garnet.cores.load_pe_spec`, which
    this mirrors without importing the hardware generators: checking a configuration
    stays fast), normalised and type-checked. Raises :class:`ConfigError` when ``ref``
    does not resolve to a PEak spec and ``SpecError`` for a malformed spec."""
    from peak import normal_form  # deferred: loads z3, pysmt, hwtypes, 1 more only when called
    from peak.load import load_spec  # deferred: loads z3, pysmt, hwtypes, 1 more only when called

    try:
        spec = load_spec(ref, where=where)
    except SpecError as exc:
        raise ConfigError(str(exc)) from None
    normal_form(spec)
    return spec


#: the named delay models of the ``timing`` field (anything else is a delay table file)
TIMING_MODELS = ("measured", "cascade-table")


def table_path(p: GarnetParams) -> str | None:
    """The delay table file of ``p.timing``: ``None`` for the published table
    (``cascade-table``) and for ``measured``, the default, whose graphs are first built on
    the published table, then re-timed from the measurement (:func:`garnet.build.generate`)."""
    return None if not p.timing or p.timing in TIMING_MODELS else p.timing


def check_hop_widths(p: GarnetParams, source: str | None = None) -> None:
    """Refuse a delay table (``timing``: ``cascade-table`` or a file) without switch-box hop figures
    for a width of ``widths`` in a tile class of the layout: the default table has 16- and
    1-bit figures only, and another width is never given 16-bit numbers silently (see
    :mod:`canal.timing`). One-line :class:`ConfigError` on field ``timing`` listing, per
    width, the first tile class without figures and the first class the table does not
    know (``io`` in a copy of the default table without ``class_aliases``), "; "-separated."""

    kinds = {p.tile_kind(x, y) for x in range(p.width) for y in range(p.height)}
    tm = TimingModel.load(table_path(p))
    if p.timing == "measured":
        return                          # every width and class is measured
    problems: list[str] = []
    for w in p.widths:
        kinds_seen: set[str] = set()        # one class error and one width error per width
        for tclass in ("pe", "mem", "io"):
            if tclass not in kinds:
                continue
            try:
                tm.sb_hop(tclass, w, "NORTH", "SOUTH")
            except ConfigError as exc:
                kind = "class" if "has no class" in str(exc) else "width"
                if kind not in kinds_seen and str(exc) not in problems:
                    problems.append(str(exc))
                kinds_seen.add(kind)
    if problems:
        raise ConfigError(f"{_where(source, 'timing')} = {p.timing!r}: {'; '.join(problems)}; "
                          f"or set timing = \"measured\" (every width timed on the generated "
                          f"tiles)")


def check_pe_width(spec: type, p: GarnetParams, source: str | None = None) -> None:
    """Refuse a PE spec whose data ports (every port wider than 1 bit) are not
    ``p.data_width`` bits: one-line :class:`ConfigError` naming the field, both widths, the
    ports and the fix."""
    from peak import normal_form  # deferred: loads z3, pysmt, hwtypes, 1 more only when called
    from peak.assembler import is_bv_type  # deferred: loads z3, pysmt, hwtypes, 1 more only when called

    nf = normal_form(spec)
    ports = {n: int(T.size) for n, T in (*nf.inputs, *nf.outputs)
             if is_bv_type(T) and int(T.size) > 1}
    bad = {n: w for n, w in ports.items() if w != p.data_width}
    if bad:
        widths = "/".join(str(w) for w in sorted(set(bad.values())))
        hint = (f"peak.examples.cgra_pe:make_pe({p.data_width})"
                if p.data_width >= 4 and not p.data_width & (p.data_width - 1)
                else f"a {p.data_width}-bit PE")
        raise ConfigError(f"{_where(source, 'pe')} = {p.pe!r}: the PE's data ports "
                          f"{', '.join(bad)} are {widths} bits but data_width = "
                          f"{p.data_width}; use a PE with {p.data_width}-bit data ports "
                          f"(e.g. {hint}) or set data_width = {min(bad.values())}")


def validate(p: GarnetParams, source: str | None = None) -> None:
    """Check every field; raises :class:`ConfigError` naming the field and a fix. Also
    imports the PE spec (``pe``) and checks the Lake preset (``mem_preset``).

    The structural fields are checked first, each refused on its own (one line). Then the
    data-width group -- ``data_width``, ``widths``, ``timing`` (hop figures of every width),
    ``pe`` (port widths) and ``mem_preset`` (word width) -- is checked as a whole, and all of
    its errors come in one :class:`ConfigError` (:func:`width_errors`): one line when one
    field is wrong, else a header line and one line per field, each naming the field and
    its fix (a configuration copied from a 16-bit one and set to ``data_width = 32`` is
    corrected in one round)."""
    def err(key: str, msg: str) -> ConfigError:
        return ConfigError(f"{_where(source, key)} = {getattr(p, key)!r}: {msg}")

    if not 1 <= p.width <= 256:
        raise err("width", "the array needs 1..256 columns (8-bit x in the config address)")
    if not 2 <= p.height <= 256:
        raise err("height", "the array needs 2..256 rows (the IO row plus at least one row "
                            "of cores; 8-bit y in the config address)")
    if p.tracks < 1:
        raise err("tracks", "use at least 1 routing track per side (default 5)")
    if p.topology not in TOPOLOGIES:
        raise err("topology", f"choose one of {list(TOPOLOGIES)}")
    if p.track_length < 1:
        raise err("track_length", "a track spans at least 1 tile")
    if p.track_length > p.tracks:
        raise err("track_length", f"long tracks are staggered (canal.passes.segment_tracks): "
                                  f"track t breaks in the tiles where (x + t) % L == 0, so "
                                  f"with tracks = {p.tracks} < L = {p.track_length} some tiles "
                                  f"have no breaking track on a side and their cores cannot "
                                  f"drive it; use tracks >= {p.track_length} or "
                                  f"track_length <= {p.tracks}")
    if not p.widths or any(not isinstance(w, int) or w < 1 for w in p.widths) \
            or len(set(p.widths)) != len(p.widths):
        raise err("widths", "give distinct positive bit widths, e.g. [16, 1]")
    if p.mem_ratio < 0 or p.mem_ratio > p.width:
        raise err("mem_ratio", f"use 0 (no MEM columns) or 1..width ({p.width}); every "
                               f"mem_ratio-th column becomes MEM")
    for key in ("io_sides", "pipeline_register_sides", "cb_sides", "register_bypass_sides"):
        vals = getattr(p, key)
        bad = [s for s in vals if s not in SIDES]
        if bad or len(set(vals)) != len(vals):
            raise err(key, f"list distinct sides from {list(SIDES)}")
    extra = [s for s in p.register_bypass_sides if s not in p.pipeline_register_sides]
    if extra:
        raise err("register_bypass_sides", f"sides {extra} have no pipeline registers; list "
                                           f"only sides of pipeline_register_sides")
    if not p.io_sides:
        raise err("io_sides", "the array needs IO tiles on at least one edge, e.g. ['NORTH']")
    if not p.cb_sides:
        raise err("cb_sides", "core inputs need at least one connection-box side")
    for t in p.pipeline_register_tracks:
        if not isinstance(t, int) or not 0 <= t < p.tracks:
            raise err("pipeline_register_tracks", f"tracks are 0..{p.tracks - 1}; [] = all")
    if not p.timing:
        raise err("timing", "empty; give \"measured\" (the default: the tiles timed by "
                            "yosys + OpenSTA), \"cascade-table\" (the published table) or a "
                            "delay table JSON file")
    if p.timing not in TIMING_MODELS:
        from canal.timing import TimingModel  # deferred: loads  only when called
        if not Path(p.timing).is_file():
            raise err("timing", "no such delay table file; give a JSON table like "
                                "canal/data/delays_ps.json (path relative to the TOML file), "
                                "or \"measured\" / \"cascade-table\" for a model")
        try:
            TimingModel.load(p.timing)
        except ConfigError as exc:
            raise err("timing", str(exc)) from None
    if p.interconnect:
        try:
            load_build(p.interconnect, _where(source, "interconnect"))
        except SpecError as exc:
            raise ConfigError(str(exc)) from None
    flow = parse_flow_control(p.flow_control, p.fifo_kind, p.widths, source)
    layer = parse_dynamic(p.dynamic or None, p.widths, source)
    if layer is not None and flow.kind(layer.width) == "static":
        raise err("dynamic", f"the dynamic layer's {layer.width}-bit tracks are static; set "
                             f"flow_control = \"ready_valid\" (a hybrid network is "
                             "ready-valid tracks plus routers)")
    if p.fifo_tokens not in (0, 1):
        raise err("fifo_tokens", f"{p.fifo_tokens!r}: use 1 (each FIFO site starts with the "
                                 f"token of the register it replaces) or 0 (empty)")
    if p.fifo_tokens != 1 and not flow.ready_valid:
        raise err("fifo_tokens", "only ready-valid tracks have FIFO sites; set flow_control = "
                                 "\"ready_valid\" or drop the field")
    if p.flush_interval < 0:
        raise err("flush_interval", "use 0 (flush wired directly) or N >= 1 rows per spine "
                                    "register stage")
    if p.mem_ratio and not p.mem and not is_preset(p.mem_preset):
        w = p.data_width if 2 <= p.data_width <= MAX_DATA_WIDTH else 16
        raise err("mem_preset", f"unknown Lake preset; known presets: {sorted(PRESETS)} and "
                                f"dualport_<capacity>x<data_width> for any data_width "
                                f"(e.g. {dual_port_name(w)})")
    kinds = {p.tile_kind(x, y) for x in range(p.width) for y in range(p.height)}
    if "pe" not in kinds:
        raise err("mem_ratio", "this layout has no PE tile; lower mem_ratio or enlarge the "
                               "array")
    spec = pe_spec(p.pe, _where(source, "pe"))
    errors = width_errors(p, spec, source)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ConfigError("\n".join(
            [f"{source + ': ' if source else ''}{len(errors)} data-width errors "
             f"(data_width = {p.data_width}); fix each:"] + [f"  {e}" for e in errors]))


def width_errors(p: GarnetParams, spec: type, source: str | None = None) -> list[ConfigError]:
    """Every data-width error of ``p`` (the fields of the data-width group, see
    :func:`validate`), each a one-line :class:`ConfigError` naming the field and its fix,
    in field order ``data_width``, ``widths``, ``timing``, ``pe``, ``pond``, ``mem_preset``; ``[]``
    when they agree. ``spec`` is the PE spec of ``p.pe`` (:func:`pe_spec`)."""
    def err(key: str, msg: str) -> ConfigError:
        return ConfigError(f"{_where(source, key)} = {getattr(p, key)!r}: {msg}")

    if not 2 <= p.data_width <= MAX_DATA_WIDTH:
        # the other fields are checked against data_width: nothing to compare them with
        return [err("data_width", f"a data word has 2..{MAX_DATA_WIDTH} bits (1 is the bit "
                                  f"width; the simulation harness drives top ports of up to "
                                  f"{MAX_DATA_WIDTH} bits), e.g. 16 or 32")]
    errors: list[ConfigError] = []
    if not {p.data_width, 1} <= set(p.widths):
        errors.append(err("widths", f"the PE, MEM and IO cores have {p.data_width}-bit "
                                    f"(data_width) and 1-bit ports; include both "
                                    f"{p.data_width} and 1, e.g. {[p.data_width, 1]}"))
        hop = dataclasses.replace(p, widths=[p.data_width, 1])   # the widths of the fix
    else:
        hop = p
    for check in (lambda: check_hop_widths(hop, source), lambda: check_pe_width(spec, p, source)):
        try:
            check()
        except ConfigError as exc:
            errors.append(exc)
    if p.pond:
        words = {e.width for e in pond_spec(p, source).external_ports}
        if words != {p.data_width}:
            errors.append(err("pond", f"the pond's data ports are "
                                      f"{'/'.join(map(str, sorted(words)))} bits but "
                                      f"data_width = {p.data_width}; use a pond with "
                                      f"{p.data_width}-bit words or pond = \"\""))
    if p.mem_ratio:
        field_ = "mem" if p.mem else "mem_preset"
        words = {e.width for e in mem_spec(p, source).external_ports if e.width > 1}
        if words != {p.data_width}:
            errors.append(err(field_, f"the memory's data ports are "
                                            f"{'/'.join(map(str, sorted(words)))} bits but "
                                            f"data_width = {p.data_width}; use a preset with "
                                            f"{p.data_width}-bit words (e.g. "
                                            f"{dual_port_name(p.data_width)}) or set "
                                            f"data_width = {min(words)}"))
    return errors
