"""The timing model: edge delays (picoseconds) of the interconnect graph, and its file formats.

This module owns two formats (readers, writers and validation live only here):

* the **delay table** (input, editable by an architect): a JSON object with the sections
  ``core`` (class -> ps), ``register_mux`` (ps: register clock-to-Q plus the register mux),
  ``connection_box`` (class -> ps), ``switch_box_hop`` (class -> width -> ``"N->S"`` ... ps) and
  optionally ``clock_skew`` and ``pe_op_ns``. The project's default is the package data file
  ``canal/data/delays_ps.json`` (provenance in ``canal/data/README.md``); a design names another
  one with ``timing = "file.json"`` in its TOML.
* **timing.json** (collateral, schema :data:`SCHEMA`), written by ``cgra rtl`` next to the
  routing graphs and read by the mapper's static timing analysis::

      {"schema": "canal.timing/1", "source": "default" | "<path of the user table>",
       "table": {...the delay table...}, "notes": [substitutions made, never silent]}

Edge classes of the routing graph:

* SB_IN(side a) -> SB_OUT(side b) inside a tile: ``switch_box_hop[class][width]["a->b"]``;
* SB_OUT/RMUX -> neighbour SB_IN (the wire): 0 (the hop figure includes the wire);
* SB_OUT -> REG: 0; REG -> RMUX: ``register_mux`` (clk->Q plus the register mux);
  SB_OUT -> RMUX (bypass): 0;
* any -> core input PORT (connection box): ``connection_box[class]``;
* core output PORT -> SB_OUT: 0 (the core's own delay is ``core[class]``, a tile attribute).

Classes the table lacks (the IO tile's switch box and connection box) fall back to the ``pe``
class; every such substitution is recorded in :attr:`TimingModel.notes` (and from there in
the routing graph's ``timing_notes``) so it is never silent.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from cgra.errors import CollateralError, ConfigError

SCHEMA = "canal.timing/1"
SIDES = ("N", "S", "E", "W")


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


@dataclass
class TimingModel:
    """A delay table (ps) and where it came from. ``fallback_class`` is used for a tile
    class the table lacks (recorded in ``notes``)."""

    table: dict[str, Any]
    source: str = "default"
    fallback_class: str = "pe"
    notes: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, path: str | Path | None = None) -> "TimingModel":
        """Read a delay table JSON (``None``: the project's default table). Raises
        :class:`ConfigError` when the file is unreadable or malformed."""
        if path is None:
            return cls(validate_table(json.loads(default_table_text()), "default"), "default")
        try:
            table = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"delay table {path}: cannot read ({exc}); give a JSON delay "
                              f"table like canal/data/delays_ps.json") from None
        return cls(validate_table(table, str(path)), str(path))

    # -- timing.json -------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The ``timing.json`` document (module docstring)."""
        return {"schema": SCHEMA, "source": self.source, "table": copy.deepcopy(self.table),
                "notes": sorted(self.notes)}

    @classmethod
    def from_json(cls, doc: Any, where: str = "timing.json") -> "TimingModel":
        """Inverse of :meth:`to_json`. Raises :class:`CollateralError` naming ``where``."""
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
            raise CollateralError(f"{where}: schema {got!r} is not {SCHEMA!r}; regenerate "
                                  f"the design with `cgra rtl`")
        try:
            table = validate_table(doc["table"], where)
            return cls(table, str(doc.get("source", "default")),
                       notes=list(doc.get("notes", [])))
        except (KeyError, ConfigError) as exc:
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

    # -- queries -----------------------------------------------------------------------
    def _note(self, msg: str) -> None:
        if msg not in self.notes:
            self.notes.append(msg)

    def sb_hop(self, tclass: str, width: int, side_in: str, side_out: str) -> float:
        """SB_IN (``side_in``) -> SB_OUT (``side_out``) of a tile of ``tclass``, ps."""
        hops = self.table["switch_box_hop"]
        if tclass not in hops:
            self._note(f"switch_box_hop has no class '{tclass}'; used '{self.fallback_class}'")
            tclass = self.fallback_class
        by_w = hops[tclass]
        if str(width) not in by_w:
            raise ConfigError(f"timing model {self.source}: switch_box_hop['{tclass}'] has no "
                              f"width {width}; add a '{width}' entry to the delay table")
        return float(by_w[str(width)][f"{side_in[0]}->{side_out[0]}"])

    def connection_box(self, tclass: str) -> float:
        """Track -> core input of a tile of ``tclass``, ps."""
        cb = self.table["connection_box"]
        if tclass not in cb:
            self._note(f"connection_box has no class '{tclass}'; used '{self.fallback_class}'")
            tclass = self.fallback_class
        return float(cb[tclass])

    def register_mux(self) -> float:
        """Register clock-to-Q plus the register mux, ps."""
        return float(self.table["register_mux"])

    def core(self, tclass: str) -> float | None:
        """Core delay of ``tclass`` (ps), ``None`` when the table has none."""
        value = self.table.get("core", {}).get(tclass)
        return None if value is None else float(value)
