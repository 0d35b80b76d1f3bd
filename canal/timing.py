"""Edge delays (picoseconds) of the interconnect graph.

The default model is ``/work/shared/timing/delays_ps.json`` (worst-case delays of an
Amber-class CGRA as published with the Cascade pipelining toolkit and the AHA paper, Fig. 22).
Edge classes:

* SB_IN(side a) -> SB_OUT(side b) inside a tile: ``switch_box_hop[class][width]["a->b"]``;
* SB_OUT/RMUX -> neighbour SB_IN (the wire): 0 (the hop figure includes the wire);
* SB_OUT -> REG: 0; REG -> RMUX: ``register_mux`` (clk->Q plus the register mux);
  SB_OUT -> RMUX (bypass): 0;
* any -> core input PORT (connection box): ``connection_box[class]``;
* core output PORT -> SB_OUT: 0 (the core's own delay is ``core[class]``, a tile attribute).

Classes the table lacks (the IO tile's switch box and connection box) fall back to the ``pe``
class; every such substitution is recorded in ``InterconnectGraph.timing_notes`` so it is
never silent.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from cgra.errors import ConfigError

DEFAULT_DELAYS = Path("/work/shared/timing/delays_ps.json")

#: the delay table shipped with the package (same content as the shared default)
_BUILTIN = {
    "core": {"pe": 700, "mem": 1000, "io": 1000},
    "register_mux": 230,
    "connection_box": {"pe": 240, "mem": 400},
    "switch_box_hop": {
        "pe": {"16": {"N->S": 184.89, "N->E": 179.5, "N->W": 164.1, "S->N": 151.0, "S->E": 148.5,
                      "S->W": 146.39, "E->N": 171.3, "E->S": 178.7, "E->W": 151.7, "W->N": 153.3,
                      "W->S": 139.5, "W->E": 149.0},
               "1": {"N->S": 185.2, "N->E": 208.2, "N->W": 203.2, "S->N": 198.2, "S->E": 203.6,
                     "S->W": 205.89, "E->N": 208.89, "E->S": 195.2, "E->W": 208.2, "W->N": 205.5,
                     "W->S": 162.1, "W->E": 204.39}},
        "mem": {"16": {"N->S": 282.5, "N->E": 261.1, "N->W": 221.1, "S->N": 181.7, "S->E": 236.8,
                       "S->W": 197.7, "E->N": 219.2, "E->S": 280.4, "E->W": 218.8,
                       "W->N": 210.39, "W->S": 261.0, "W->E": 255.8},
                "1": {"N->S": 197.0, "N->E": 188.3, "N->W": 181.2, "S->N": 152.89, "S->E": 153.2,
                      "S->W": 151.7, "E->N": 182.7, "E->S": 185.5, "E->W": 171.1, "W->N": 186.6,
                      "W->S": 182.0, "W->E": 181.7}},
    },
}


@dataclass
class TimingModel:
    """Delay table (ps). ``fallback_class`` is used for a tile class the table lacks."""

    table: dict
    fallback_class: str = "pe"
    notes: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, path: str | Path | None = None) -> "TimingModel":
        """Read a delay table JSON (default: the shared table, else the built-in copy).
        Raises :class:`ConfigError` when the file is unreadable or lacks a section."""
        if path is None:
            path = DEFAULT_DELAYS if DEFAULT_DELAYS.exists() else None
        if path is None:
            return cls(_BUILTIN)
        try:
            table = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"timing model {path}: cannot read ({exc}); give a JSON delay "
                              f"table like {DEFAULT_DELAYS}") from None
        for key in ("register_mux", "connection_box", "switch_box_hop"):
            if key not in table:
                raise ConfigError(f"timing model {path}: missing section '{key}'")
        return cls(table)

    def _note(self, msg: str) -> None:
        if msg not in self.notes:
            self.notes.append(msg)

    def sb_hop(self, tclass: str, width: int, side_in: str, side_out: str) -> float:
        hops = self.table["switch_box_hop"]
        if tclass not in hops:
            self._note(f"switch_box_hop has no class '{tclass}'; used '{self.fallback_class}'")
            tclass = self.fallback_class
        by_w = hops[tclass]
        if str(width) not in by_w:
            raise ConfigError(f"timing model: switch_box_hop['{tclass}'] has no width {width}; "
                              f"add a '{width}' entry to the delay table")
        return float(by_w[str(width)][f"{side_in[0]}->{side_out[0]}"])

    def connection_box(self, tclass: str) -> float:
        cb = self.table["connection_box"]
        if tclass not in cb:
            self._note(f"connection_box has no class '{tclass}'; used '{self.fallback_class}'")
            tclass = self.fallback_class
        return float(cb[tclass])

    def register_mux(self) -> float:
        return float(self.table["register_mux"])

    def core(self, tclass: str) -> float | None:
        value = self.table.get("core", {}).get(tclass)
        return None if value is None else float(value)
