"""The timing model: edge delays (picoseconds) of the interconnect graph, and its file formats.

This module owns two formats (readers, writers and validation live only here):

* the **delay table** (input, editable by an architect): a JSON object with the sections
  ``core`` (class -> ps), ``register_mux`` (ps: register clock-to-Q plus the register mux),
  ``connection_box`` (class -> ps), ``switch_box_hop`` (class -> width -> ``"N->S"`` ... ps) and
  optionally ``clock_skew``, ``pe_op_ns``, ``class_aliases`` and ``width_aliases`` (below). The project's default is the package data file
  ``canal/data/delays_ps.json`` (provenance in ``canal/data/README.md``); a design names another
  one with ``timing = "file.json"`` in its TOML.
* **timing.json** (collateral, schema :data:`SCHEMA`), written by ``cgra rtl`` next to the
  routing graphs; the mapper's static timing analysis reads delays only from it::

      {"schema": "canal.timing/2", "source": "default" | "<path of the user table>",
       "table": {...the delay table...},
       "aliases": {"io": "pe"},           # class substitutions, each explicit (see below)
       "classes": {"core:pe": 700, "sb:pe:16:N->S": 184.89, "cb:mem": 400, "reg": 230,
                   "wire": 0, ..., "skew:mem_to_pe": -70, ...},   # every class used, ps
       "pe_ops": {"coreir.add": 520.0, ...},   # PE core delay by IR op, ps
       "notes": [substitutions made, never silent]}

Path classes (``edge_class``) of the routing graph and their delays:

* ``sb:<class>:<width>:<a>-><b>``: SB_IN(side a) -> SB_OUT(side b) inside a tile of timing
  class ``class``: ``switch_box_hop[class][width]["a->b"]``;
* ``pass:<class>:<width>:<a>-><b>``: SB_IN(side a) -> SB_OUT(side b) where that SB_OUT has
  no other fan-in: a long track passing through a tile (:func:`canal.passes.segment_tracks`;
  a 1-input mux is a wire in the RTL): one tile of wire, :meth:`TimingModel.pass_through`
  (a *model* derived from the table, see there);
* ``wire``: SB_OUT/RMUX -> neighbour SB_IN: 0 (the hop figure includes the wire);
* ``reg_in``: SB_OUT -> REG: 0 (register setup; the table has none); ``reg``: REG -> RMUX:
  ``register_mux`` (clk->Q plus the register mux); ``bypass``: SB_OUT -> RMUX: 0;
* ``cb:<class>``: any -> core input PORT (connection box): ``connection_box[class]``;
* ``core_out``: core output PORT -> SB_OUT: 0;
* ``core:<class>``: through a core of that class: ``core[class]``; for a PE the delay of
  its op when known (``pe_ops``: the table's ``pe_op_ns`` through :data:`PE_OP_CLASSES`, or
  a measured model's figure for the PE's rule, multi-op patterns included); a PE covering
  several ops with no figure for its rule, or an op without one, takes ``core["pe"]``, the
  PE's worst case;
* ``skew:<term>``: clock skew (``clock_skew``): the terms are differences of a clock-arrival
  potential over the tiles (:meth:`TimingModel.clock_offset`: ``enter_from_north`` per row
  southward, ``pe_to_mem`` into a MEM column; ``enter_from_south`` and ``mem_to_pe`` must be
  their negatives); as the table says, skew is *subtracted* from a register-to-register
  path: its delay is the raw delay minus ``clock_offset(end) - clock_offset(start)``.

A class with no delay in the table is a :class:`~cgra.errors.ConfigError` naming it, unless the
table maps the tile class to another with ``class_aliases`` (``{"io": "pe"}``: the IO tile's
switch box and connection box are the PE tile's). The project's default table (an exact copy
of the published one, which has no ``io`` switch-box or connection-box figures) takes
:data:`DEFAULT_ALIASES`; every substitution is recorded in :attr:`TimingModel.notes`.

Bit widths: ``switch_box_hop`` is keyed by width (``"16"``, ``"1"``: the published figures).
A graph of another width (a ``data_width = 32`` design) has no figures in the default table
and is refused (:class:`~cgra.errors.ConfigError` naming the class and width): 16-bit
figures are never reused silently. A user table either gives the width its own figures
(``configs/delays_32.json``: 32-bit hops derived from the 16-bit ones, the derivation in its
``_about``), or maps it explicitly with ``width_aliases`` (``{"32": "16"}``: a 32-bit hop
takes the 16-bit figure of the same class and sides), which is recorded in the notes like a
class alias. A width that has figures of its own never takes an alias.
"""
from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Iterator

from cgra.errors import CollateralError, ConfigError

SCHEMA = "canal.timing/2"
SIDES = ("N", "S", "E", "W")
#: class substitutions of the project's default table (its source has no IO switch-box or
#: connection-box figures; the IO tile uses the PE tile's switch box design)
DEFAULT_ALIASES = {"io": "pe"}
#: IR op -> key of the table's ``pe_op_ns`` (ns) for the PE delay of a single-op instruction
#: (``coreir.mul`` keeps the low product bits: ``umult0``; ``mult_middle`` the middle bits of
#: the signed product: ``smult1``; a compare is a subtraction)
PE_OP_CLASSES = {
    "coreir.add": "add", "coreir.sub": "sub", "commonlib.abs": "abs", "commonlib.absd": "abs",
    "coreir.mul": "umult0", "commonlib.mult_middle": "smult1",
    "coreir.and": "and", "coreir.or": "or", "coreir.xor": "or",
    "coreir.eq": "sub", "coreir.neq": "sub", "coreir.ult": "sub", "coreir.ule": "sub",
    "coreir.ugt": "sub", "coreir.uge": "sub", "coreir.slt": "sub", "coreir.sle": "sub",
    "coreir.sgt": "sub", "coreir.sge": "sub",
}
_SKEW_TERMS = ("mem_to_pe", "pe_to_mem", "enter_from_north", "enter_from_south")


def default_table_text() -> str:
    """The text of the project's default delay table (package data ``canal/data``)."""
    return resources.files("canal").joinpath("data", "delays_ps.json").read_text()


def validate_table(table: Any, source: str) -> dict[str, Any]:
    """Check the sections of a delay table; returns it. Raises :class:`ConfigError` naming
    ``source``, the section and the fix."""
    if not isinstance(table, dict):
        raise ConfigError(f"delay table {source}: expected a JSON object with the sections "
                          f"core, register_mux, connection_box, switch_box_hop")
    for key, kind in (("core", dict), ("register_mux", (int, float)),
                      ("connection_box", dict), ("switch_box_hop", dict)):
        if key not in table:
            raise ConfigError(f"delay table {source}: missing section '{key}'; copy it from "
                              f"the default table canal/data/delays_ps.json")
        if not isinstance(table[key], kind) or isinstance(table[key], bool):
            raise ConfigError(f"delay table {source}: section '{key}' has the wrong type "
                              f"({type(table[key]).__name__})")
    for sec in ("core", "connection_box"):
        for cls, v in table[sec].items():
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
                raise ConfigError(f"delay table {source}: {sec}['{cls}'] = {v!r} is not a "
                                  f"delay in ps (a number >= 0)")
    sk = table.get("clock_skew", {})
    for a, b in (("pe_to_mem", "mem_to_pe"), ("enter_from_north", "enter_from_south")):
        if a in sk and b in sk and float(sk[a]) != -float(sk[b]):
            raise ConfigError(f"delay table {source}: clock_skew['{b}'] = {sk[b]} must be the "
                              f"negative of clock_skew['{a}'] = {sk[a]} (skew is a difference "
                              f"of clock arrival times between tiles)")
    wa = table.get("width_aliases", {})
    if not isinstance(wa, dict) or not all(
            isinstance(k, str) and k.isdigit() and isinstance(v, str) and v.isdigit() and k != v
            for k, v in wa.items()):
        raise ConfigError(f"delay table {source}: width_aliases must map a bit width to another "
                          f"as strings, e.g. {{\"32\": \"16\"}} (a 32-bit switch-box hop takes "
                          f"the 16-bit figure)")
    chained = sorted(k for k, v in wa.items() if v in wa)
    if chained:
        raise ConfigError(f"delay table {source}: width_aliases maps width {chained[0]} to "
                          f"{wa[chained[0]]}, which is itself an alias; map it to a width with "
                          f"figures")
    for cls, by_w in table["switch_box_hop"].items():
        if not isinstance(by_w, dict):
            raise ConfigError(f"delay table {source}: switch_box_hop['{cls}'] must map bit "
                              f"widths to hop delays")
        for w, hops in by_w.items():
            for a in SIDES:
                for b in SIDES:
                    if a == b:
                        continue
                    v = hops.get(f"{a}->{b}") if isinstance(hops, dict) else None
                    if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
                        raise ConfigError(f"delay table {source}: switch_box_hop['{cls}']"
                                          f"['{w}']['{a}->{b}'] is missing or not a delay "
                                          f"in ps")
    return table


@dataclass(frozen=True)
class TimingModel:
    """A delay table (ps), where it came from, the class aliases in force, and (after
    :meth:`resolve`, which returns a new model) the delay of every path class a design uses
    (module docstring). Frozen: the only thing that grows is :attr:`notes`, the record of
    aliases the queries fell back on."""

    table: dict[str, Any]
    source: str = "default"
    aliases: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    classes: dict[str, float] = field(default_factory=dict)
    pe_ops: dict[str, float] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path | None = None) -> "TimingModel":
        """Read a delay table JSON (``None``: the project's default table, with
        :data:`DEFAULT_ALIASES`). A user table gives its aliases as ``class_aliases``. Raises
        :class:`ConfigError` when the file is unreadable or malformed."""
        if path is None:
            table = validate_table(json.loads(default_table_text()), "default")
            return cls(table, "default", dict(DEFAULT_ALIASES))
        try:
            table = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"delay table {path}: cannot read ({exc}); give a JSON delay "
                              f"table like canal/data/delays_ps.json") from None
        table = validate_table(table, str(path))
        aliases = table.get("class_aliases", {})
        if not isinstance(aliases, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                    for k, v in aliases.items()):
            raise ConfigError(f"delay table {path}: class_aliases must map a tile class to "
                              f"another, e.g. {{\"io\": \"pe\"}}")
        return cls(table, str(path), dict(aliases))

    @classmethod
    def from_table(cls, table: dict[str, Any], source: str) -> "TimingModel":
        """A model of a delay table held in memory (a measured one:
        :mod:`garnet.sta.measure`), validated like a file; no class aliases."""
        return cls(validate_table(table, source), source, {})

    def describe(self) -> str:
        """The model in a few words, for reports: ``measured (OpenSTA ..., liberty
        <name> <corner>)``, ``cascade-table`` (the published table) or the table's path."""
        meas = self.table.get("_measured")
        if isinstance(meas, dict):
            corner = (meas.get("corner") or {}).get("name", "?")
            return f"measured ({meas.get('tool', 'OpenSTA')}, liberty {meas.get('liberty')} " \
                   f"{corner})"
        return "cascade-table" if self.source == "default" else f"table {self.source}"

    # -- timing.json -------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The ``timing.json`` document (module docstring)."""
        return {"schema": SCHEMA, "source": self.source, "table": copy.deepcopy(self.table),
                "aliases": dict(self.aliases), "classes": dict(sorted(self.classes.items())),
                "pe_ops": dict(sorted(self.pe_ops.items())), "notes": sorted(self.notes)}

    @classmethod
    def from_json(cls, doc: Any, where: str = "timing.json") -> "TimingModel":
        """Inverse of :meth:`to_json`. Raises :class:`CollateralError` naming ``where``."""
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
            raise CollateralError(f"{where}: schema {got!r} is not {SCHEMA!r}; regenerate "
                                  f"the design with `cgra rtl`")
        try:
            table = validate_table(doc["table"], where)
            return cls(table, str(doc.get("source", "default")), dict(doc["aliases"]),
                       list(doc.get("notes", [])),
                       {str(k): float(v) for k, v in doc["classes"].items()},
                       {str(k): float(v) for k, v in doc["pe_ops"].items()})
        except (KeyError, TypeError, ValueError, AttributeError, ConfigError) as exc:
            raise CollateralError(f"{where}: malformed timing model ({exc}); regenerate the "
                                  f"design with `cgra rtl`") from None

    def save(self, path: str | Path) -> Path:
        p = Path(path)
        p.write_text(json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n")
        return p

    @classmethod
    def read(cls, path: str | Path) -> "TimingModel":
        """Read ``timing.json``; :class:`CollateralError` when missing or malformed."""
        try:
            doc = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise CollateralError(f"{path}: cannot read the timing model ({exc}); regenerate "
                                  f"the design with `cgra rtl`") from None
        return cls.from_json(doc, str(path))

    # -- the table, by class -----------------------------------------------------------
    def _section_class(self, section: str, tclass: str) -> str:
        """``tclass`` or its alias when the ``section`` has no entry for it (noted); raises
        :class:`ConfigError` naming the class when neither has one."""
        sec = self.table[section]
        if tclass in sec:
            return tclass
        alias = self.aliases.get(tclass)
        if alias is not None and alias in sec:
            self._note(f"{section} has no class '{tclass}'; used '{alias}'")
            return alias
        raise ConfigError(f"delay table {self.source}: {section} has no class '{tclass}' "
                          f"(classes: {sorted(sec)}); add it, or map the class to another "
                          f"with \"class_aliases\": {{\"{tclass}\": \"pe\"}}")

    def _note(self, msg: str) -> None:
        if msg not in self.notes:
            self.notes.append(msg)

    def sb_hop(self, tclass: str, width: int, side_in: str, side_out: str) -> float:
        """SB_IN (``side_in``) -> SB_OUT (``side_out``) of a tile of ``tclass``, ps: the
        figure of ``width``, or of the width the table's ``width_aliases`` maps it to (noted;
        module docstring). Raises :class:`ConfigError` naming the class and the width when
        the table has neither."""
        cls = self._section_class("switch_box_hop", tclass)
        by_w = self.table["switch_box_hop"][cls]
        key = str(width)
        if key not in by_w:
            alias = (self.table.get("width_aliases") or {}).get(key)
            if alias is None or alias not in by_w:
                via = f" (width_aliases maps it to {alias}, which has none either)" \
                    if alias is not None else ""
                io = "" if "io" in self.table["switch_box_hop"] or "io" in (
                    self.table.get("class_aliases") or {}) else (
                    "; a copy of the default table canal/data/delays_ps.json also needs "
                    "\"class_aliases\": {\"io\": \"pe\"} (it has no io figures; the default "
                    "table takes that alias implicitly)")
                raise ConfigError(
                    f"delay table {self.source}: switch_box_hop['{cls}'] has no width "
                    f"{width}{via}, only {sorted(by_w, key=int)}; give a delay table with "
                    f"{width}-bit hop figures (timing = \"file.json\" in the TOML, e.g. "
                    f"configs/delays_32.json) or map the width explicitly with "
                    f"\"width_aliases\": {{\"{width}\": \"16\"}}{io}")
            self._note(f"switch_box_hop['{cls}'] has no width {width}; used the {alias}-bit "
                       f"figures (width_aliases)")
            key = alias
        return float(by_w[key][f"{side_in[0]}->{side_out[0]}"])

    def pass_through(self, tclass: str, width: int, side_in: str, side_out: str) -> float:
        """SB_IN (``side_in``) -> SB_OUT (``side_out``) of a tile of ``tclass`` where a long
        track passes through (no mux: a wire spanning the tile), ps.

        The table's optional section ``track_wire`` (class -> width -> ``"a->b"`` -> ps)
        gives it directly. Otherwise it is a *model* derived from the table: the published
        switch-box hop figures include the wire to the next tile (module docstring), and
        the table's ``pe_op_ns["switch_box"]`` (0.14 ns: the switch-box traversal of the
        AHA paper, Fig. 22) is the mux part of a hop, so one tile of wire is the hop of the
        same class, width and sides minus that traversal, floored at 0 ps. With the
        published table: 9.0 ps for a 16-bit PE tile west -> east (149.0 - 140), 44.89 ps
        north -> south, 115.8 ps for a 16-bit MEM tile west -> east. The derivation is
        noted (:attr:`notes`). A measured table (:mod:`garnet.sta.measure`) has its own
        ``track_wire``, timed port to port on the tile netlists: 0 ps, as that flow has no
        wire parasitics (its inter-tile ``wire`` class is 0 as well). Raises
        :class:`ConfigError` when the table has neither
        ``track_wire`` nor ``pe_op_ns["switch_box"]``."""
        a, b = side_in[0], side_out[0]
        direct = (self.table.get("track_wire") or {}).get(tclass, {}).get(str(width), {})
        if f"{a}->{b}" in direct:
            return float(direct[f"{a}->{b}"])
        mux_ns = (self.table.get("pe_op_ns") or {}).get("switch_box")
        if mux_ns is None:
            raise ConfigError(f"delay table {self.source}: no wire delay for a long track "
                              f"passing through a {tclass} tile ({width} bits, {a}->{b}); "
                              f"add 'track_wire': {{'{tclass}': {{'{width}': "
                              f"{{'{a}->{b}': <ps>}}}}}} or 'pe_op_ns': {{'switch_box': "
                              f"<ns>}} (the mux part of a switch-box hop)")
        hop = self.sb_hop(tclass, width, side_in, side_out)
        self._note("track_wire: a long track passing a tile is modelled as the straight "
                   "switch-box hop minus pe_op_ns['switch_box'] (the mux), floored at 0")
        return max(0.0, round(hop - float(mux_ns) * 1000.0, 4))

    def connection_box(self, tclass: str) -> float:
        """Track -> core input of a tile of ``tclass``, ps."""
        return float(self.table["connection_box"][self._section_class("connection_box",
                                                                      tclass)])

    def register_mux(self) -> float:
        """Register clock-to-Q plus the register mux, ps."""
        return float(self.table["register_mux"])

    def router(self, tclass: str) -> float | None:
        """The clock period (ps) the router of a hybrid tile of ``tclass`` needs on its own
        (the ``router`` section of a measured table, :mod:`garnet.sta.measure`: register to
        register inside it, or across a mesh link into the next router); ``None`` when the
        table has none (the published table has no router figure)."""
        value = (self.table.get("router") or {}).get(tclass)
        return None if value is None else float(value)

    def ready_hop(self, tclass: str, width: int) -> float | None:
        """One tile of a ready chain on a ready-valid track of ``width`` bits in a tile of
        ``tclass`` (ps): the ``ready_hop`` section of a measured table; ``None`` without one
        (the published table has no ready figures)."""
        value = ((self.table.get("ready_hop") or {}).get(tclass) or {}).get(str(width))
        return None if value is None else float(value)

    def ready_through_core(self, tclass: str) -> float | None:
        """A ready chain crossing a wrapped core of ``tclass`` (ps: from its tile's SB_OUT
        ready inputs through the core's join and fire logic to its SB_IN ready outputs), the
        ``ready_through_core`` section of a measured table; ``None`` without one."""
        value = (self.table.get("ready_through_core") or {}).get(tclass)
        return None if value is None else float(value)

    def core(self, tclass: str) -> float | None:
        """Core delay of ``tclass`` (ps), ``None`` when the table has none."""
        value = self.table.get("core", {}).get(tclass)
        return None if value is None else float(value)

    def core_delay(self, tclass: str) -> float:
        """Core delay of ``tclass`` (ps); :class:`ConfigError` naming the class when the
        table has none."""
        d = self.classes.get(f"core:{tclass}")
        if d is None:
            d = self.core(tclass)
        if d is None:
            raise ConfigError(f"delay table {self.source}: no core delay for class "
                              f"'{tclass}'; add it to the 'core' section")
        return d

    def pe_delay(self, ops: list[str] | tuple[str, ...] = (), rule_op: str | None = None
                 ) -> float:
        """Delay of a PE (ps) configured for the IR ``ops`` it covers (module docstring).
        ``rule_op`` is the rule-table op of the PE's rule (the netlist config's ``op``): a
        model that timed that rule's instruction (a measured one times every single-PE rule,
        multi-op patterns such as ``pattern.select_slt`` included) gives its figure."""
        if rule_op is not None and rule_op in self.pe_ops:
            return self.pe_ops[rule_op]
        ops = [o for o in ops if o not in ("coreir.const", "corebit.const")]
        if len(ops) == 1 and ops[0] in self.pe_ops:
            return self.pe_ops[ops[0]]
        if len(ops) == 1 and ops[0] in PE_OP_CLASSES:
            ns = self.table.get("pe_op_ns", {}).get(PE_OP_CLASSES[ops[0]])
            if ns is not None:
                return float(ns) * 1000.0
        return self.core_delay("pe")

    def clock_offset(self, tclass: str, y: int) -> float:
        """Clock arrival offset (ps) of a tile of ``tclass`` in row ``y``: the table's
        ``clock_skew`` terms are differences of this potential (``enter_from_north`` per row
        southward, ``pe_to_mem`` into a MEM column; ``enter_from_south`` and ``mem_to_pe`` are
        their negatives). A register-to-register path from tile s to tile e is
        ``clock_offset(e) - clock_offset(s)`` ps shorter (the table subtracts skew from a
        path); 0 when the table has no ``clock_skew``."""
        sk = self.table.get("clock_skew") or {}
        return y * float(sk.get("enter_from_north", 0.0)) + \
            (float(sk.get("pe_to_mem", 0.0)) if tclass == "mem" else 0.0)

    # -- path classes of a graph -------------------------------------------------------
    def edge_class(self, graph: Any, src: str, dst: str) -> str:
        """The path class (module docstring) of edge ``src -> dst`` of an
        :class:`~canal.graph.InterconnectGraph`."""
        a, b = graph.nodes[src], graph.nodes[dst]
        ka, kb = a.kind.value, b.kind.value
        if kb == "PORT":
            return f"cb:{graph.tiles[(b.x, b.y)].timing_class}"
        if ka == "PORT":
            return "core_out"
        if kb == "REG":
            return "reg_in"
        if ka == "REG":
            return "reg"
        if kb == "RMUX":
            return "bypass"
        if kb == "SB" and b.io.name == "SB_OUT" and ka == "SB":
            tclass = graph.tiles[(b.x, b.y)].timing_class
            kind = "pass" if len(graph.fanin[dst]) == 1 else "sb"
            return f"{kind}:{tclass}:{graph.width}:{a.side.name[0]}->{b.side.name[0]}"
        return "wire"

    def _new_edge_classes(self, graph: Any, seen: dict[str, float],
                          edges: list[tuple[str, str]] | None = None) -> Iterator[str]:
        """The path classes of ``graph``'s edges (fan-in order) not in ``seen``, each once,
        in order of first occurrence; ``seen`` is read as the caller adds to it.

        :meth:`edge_class` reads only the kinds of the two nodes, their sides, the sink's
        ``io``, whether the sink has a single fan-in (a pass-through), the timing class of
        the sink's tile and the graph's width, so the class is
        memoised on those: :meth:`edge_class` runs once per combination, not per edge (the
        sink's part of the key is taken once per sink). A class first occurs at an edge
        whose combination is new, so the order (and the first class the table lacks) is
        the per-edge one. ``edges``: only these edges, in this order (one per combination:
        :func:`canal.collateral.class_representatives`)."""
        if edges is not None:
            for src, dst in edges:
                key = self.edge_class(graph, src, dst)
                if key not in seen:
                    yield key
            return
        nodes, tiles = graph.nodes, graph.tiles
        memo: dict[tuple, dict[tuple, str]] = {}
        for dst, srcs in graph.fanin.items():
            if not srcs:
                continue
            b = nodes[dst]
            t = tiles.get((b.x, b.y))
            by_src = memo.setdefault((b.kind, b.io, b.side, t and t.timing_class,
                                      len(srcs) == 1), {})
            for src in srcs:
                a = nodes[src]
                k = (a.kind, a.side)
                if k not in by_src:
                    key = by_src[k] = self.edge_class(graph, src, dst)
                    if key not in seen:
                        yield key

    def class_delay(self, key: str) -> float:
        """Delay of a path class key (ps), from the resolved classes or the table."""
        if key in self.classes:
            return self.classes[key]
        kind, _, rest = key.partition(":")
        if kind == "sb" or kind == "pass":
            tclass, width, hop = rest.split(":")
            a, b = hop.split("->")
            return (self.sb_hop if kind == "sb" else self.pass_through)(tclass, int(width),
                                                                        a, b)
        if kind == "cb":
            return self.connection_box(rest)
        if kind == "core":
            return self.core_delay(rest)
        if kind == "reg":
            return self.register_mux()
        if kind == "skew":
            return float((self.table.get("clock_skew") or {}).get(rest, 0.0))
        return 0.0

    def edge_delay(self, graph: Any, src: str, dst: str) -> float:
        """Delay (ps) of edge ``src -> dst`` of an :class:`~canal.graph.InterconnectGraph`."""
        return self.class_delay(self.edge_class(graph, src, dst))

    def resolve(self, graphs: Any, tile_classes: set[str] | None = None,
                edges: dict[int, list[tuple[str, str]] | None] | None = None
                ) -> "TimingModel":
        """Fill :attr:`classes` with the delay of every path class the ``graphs`` (width ->
        InterconnectGraph) produce, the core of every tile class, the clock-skew terms and
        :attr:`pe_ops`; returns a new model (with the same :attr:`notes` list). Raises :class:`ConfigError` naming the first class
        the table has no delay for. ``edges``: width -> the representative edges of that
        graph (:func:`canal.collateral.class_representatives`; ``None`` or absent: every
        edge is read), the same classes in the same order from a few hundred edges."""
        edges = edges or {}
        classes: dict[str, float] = {"reg": self.register_mux(), "reg_in": 0.0,
                                     "bypass": 0.0, "wire": 0.0, "core_out": 0.0}
        tclasses = set(tile_classes or ())
        for g in graphs.values():
            tclasses |= {t.timing_class for t in g.tiles.values() if t.core is not None}
            for key in self._new_edge_classes(g, classes, edges.get(g.width)):
                classes[key] = self.class_delay(key)
        for tc in sorted(tclasses):
            classes[f"core:{tc}"] = self.core_delay(tc)
        for term in _SKEW_TERMS:
            classes[f"skew:{term}"] = float((self.table.get("clock_skew") or {}).get(term, 0.0))
        pe_ops = {op: float(self.table["pe_op_ns"][k]) * 1000.0
                  for op, k in PE_OP_CLASSES.items()
                  if k in (self.table.get("pe_op_ns") or {})}
        # a measured table gives each IR op's PE delay directly (ps)
        pe_ops.update({str(op): float(v) for op, v in (self.table.get("pe_op_ps") or {}).items()})
        return dataclasses.replace(self, classes=classes, pe_ops=pe_ops)


def retime(graphs: Any, tm: TimingModel) -> int:
    """Set the delay of every edge of ``graphs`` (width -> InterconnectGraph) to the delay of
    its path class under ``tm`` (:meth:`TimingModel.edge_class`, memoised like
    :meth:`TimingModel._new_edge_classes`); returns the number of edges. The graphs are
    built on a delay table; a measured model (:mod:`garnet.sta.measure`) exists only once
    their RTL does, and re-times them with this."""
    n = 0
    for g in graphs.values():
        nodes, tiles, delay, fanin = g.nodes, g.tiles, g.delay, g.fanin
        memo: dict[tuple, float] = {}
        for (src, dst) in delay:
            a, b = nodes[src], nodes[dst]
            t = tiles.get((b.x, b.y))
            key = (a.kind, a.side, b.kind, b.io, b.side, t and t.timing_class,
                   len(fanin[dst]) == 1)
            d = memo.get(key)
            if d is None:
                d = memo[key] = tm.class_delay(tm.edge_class(g, src, dst))
            delay[(src, dst)] = d
            n += 1
    return n
