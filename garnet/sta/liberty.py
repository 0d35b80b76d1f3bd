"""The project's standard-cell library: a liberty written from the logical-effort delay model.

No open PDK's liberty is installable here (Debian's ``opensta`` ships none), so the project
writes its own, ``cgra_le65``, from published figures (the issue allows "one the project
writes from published cell delay and area figures, cited"):

* **Delay** of a gate of logical effort ``g`` and parasitic delay ``p`` (units of the
  inverter's), drive strength ``s`` (X1, X2, X4) driving ``C_load``:
  ``d = tau * (p + C_load / (s * C_UNIT))`` -- the logical-effort model (I. Sutherland,
  R. Sproull, D. Harris, *Logical Effort: Designing Fast CMOS Circuits*, 1999, ch. 1, Table
  1.1 for ``g``, Table 1.3 for ``p``), its input capacitance ``g * s * C_UNIT``. Two-stage
  cells (AND, OR, BUF, XOR from a NAND/NOR and an inverter) add the stages.
* **Process**: ``tau = 3 ps`` (the FO4 inverter delay ``5 tau = 15 ps`` of the 65 nm process in
  N. Weste, D. Harris, *CMOS VLSI Design*, 4th ed., 2011, §4.4), ``C_UNIT`` = 0.3 fF (a unit
  inverter's gate: 1 fF/um of gate width, ibid. §2.3, over 0.3 um of total width).
* **Slew**: output transition ``2 * d_effort + 10 ps``; a slow input adds ``SLEW_FACTOR`` (15 %)
  of its transition to the delay (a modelling assumption, stated: logical effort has no slew
  term).
* **Flip-flop**: clock-to-Q ``= 2.5 FO4 + load term``, setup ``= 1.5 FO4`` (a flip-flop's
  sequencing overhead of about 4 FO4: D. Harris, *Skew-Tolerant Circuit Design*, 2001, ch. 1).
* **Area** (um^2): the NanGate 45 nm Open Cell Library X1 areas (the project's area weights,
  NANGATE45_X1_UM2) scaled to 65 nm by ``(65/45)^2``,
  times the drive strength for X2/X4.
* **SRAM macro** ``SRAM<words>x<width>`` (for the black-box ``Memory`` of the MEM tile):
  read access ``= FO4 * (6 + 1.5 * log2(words))`` (decoder depth grows with log2 of the rows,
  bit line and sense amplifier a constant: the FO4 scaling of M. Amrutur, M. Horowitz, "Speed
  and power scaling of SRAMs", JSSC 35(2), 2000), write setup ``2 FO4``; area 0.5 um^2 per bit
  (a 65 nm 6T cell, ibid. 4th ed. §12.2, with periphery). This is a model of a macro, not a
  measurement: :data:`MACRO_NOTE` says so in every ``timing.json``.

Everything is typical corner: :data:`CORNER`. The text is deterministic (the same bytes for
the same parameters), so a measured model cached by its hash stays valid.
"""
from __future__ import annotations

import math

NAME = "cgra_le65"
#: logical-effort time unit, ps (FO4 = 5 tau)
TAU_PS = 3.0
FO4_PS = 5 * TAU_PS
#: input capacitance of a unit inverter, fF
C_UNIT_FF = 0.3
SLEW_FACTOR = 0.15
CORNER = {"name": "typical", "process": 1.0, "voltage_v": 1.0, "temperature_c": 25.0}
#: wire capacitance per um of an intermediate-layer routing track, fF (Weste & Harris 4th ed.
#: §6.2: about 0.2 fF/um)
WIRE_FF_PER_UM = 0.2
MACRO_NOTE = ("the SRAM macro of the MEM tile is a black box timed by an analytical model "
              "(read access = FO4 * (6 + 1.5 log2 words)), not by synthesis")
CITATION = ("logical effort (Sutherland, Sproull, Harris 1999); tau = 3 ps, FO4 = 15 ps "
            "(Weste & Harris, CMOS VLSI Design 4th ed., 65 nm); areas: NanGate 45 nm X1 "
            "scaled to 65 nm")

_SCALE = (65 / 45) ** 2
#: Cell areas (um^2, the liberty ``area`` of the X1 drive strength) of the NanGate FreePDK45
#: Open Cell Library (NanGate 45 nm Open Cell Library, release PDKv1.3_v2010_12, the
#: library of OpenROAD's ``nangate45`` platform; quoted from its
#: ``NangateOpenCellLibrary_typical.lib``, not read from a file). Also the area weights of
#: :mod:`dse.area`.
NANGATE45_X1_UM2: dict[str, float] = {
    "INV": 0.532, "BUF": 0.798, "NAND2": 0.798, "NOR2": 0.798, "AND2": 1.064, "OR2": 1.064,
    "XOR2": 1.596, "XNOR2": 1.596, "AOI21": 1.064, "OAI21": 1.064, "AOI22": 1.330,
    "OAI22": 1.330, "MUX2": 1.862, "TBUF": 1.596, "DLH": 2.394, "DFF": 4.522, "DFFR": 5.320,
    "DFFS": 5.320, "DFFRS": 6.384, "NAND3": 1.064, "NOR3": 1.064,
}
#: index of the tables: input transition (ps) x output load (fF)
SLEWS_PS = (5.0, 20.0, 60.0, 150.0, 400.0)
LOADS_FF = (0.3, 1.0, 3.0, 10.0, 30.0, 100.0)


def _gate(name: str, inputs: tuple[str, ...], function: str, g: float, p: float,
          sense: str, area_key: str, stages: float = 0.0) -> dict:
    """A combinational cell: ``g`` logical effort of each input, ``p`` the parasitic delay of
    the output stage plus ``stages`` (the effort and parasitic delay of internal stages)."""
    return {"name": name, "inputs": inputs, "function": function, "g": g, "p": p + stages,
            "sense": sense, "area": NANGATE45_X1_UM2[area_key] * _SCALE}


#: the cells (X1 figures; X2/X4 are generated). Two-stage cells: the first stage drives an
#: inverter of the same size (effort 1 + its parasitic) and the output stage is that
#: inverter (p = 1).
CELLS = (
    _gate("INV", ("A",), "!A", 1.0, 1.0, "negative_unate", "INV"),
    _gate("BUF", ("A",), "A", 1.0, 1.0, "positive_unate", "BUF", stages=2.0),
    _gate("NAND2", ("A", "B"), "!(A&B)", 4 / 3, 2.0, "negative_unate", "NAND2"),
    _gate("NAND3", ("A", "B", "C"), "!(A&B&C)", 5 / 3, 3.0, "negative_unate", "NAND3"),
    _gate("NOR2", ("A", "B"), "!(A|B)", 5 / 3, 2.0, "negative_unate", "NOR2"),
    _gate("NOR3", ("A", "B", "C"), "!(A|B|C)", 7 / 3, 3.0, "negative_unate", "NOR3"),
    _gate("AND2", ("A", "B"), "(A&B)", 4 / 3, 1.0, "positive_unate", "AND2", stages=3.0),
    _gate("OR2", ("A", "B"), "(A|B)", 5 / 3, 1.0, "positive_unate", "OR2", stages=3.0),
    _gate("AOI21", ("A", "B", "C"), "!((A&B)|C)", 2.0, 7 / 3, "negative_unate", "AOI21"),
    _gate("OAI21", ("A", "B", "C"), "!((A|B)&C)", 2.0, 7 / 3, "negative_unate", "OAI21"),
    _gate("XOR2", ("A", "B"), "(A^B)", 4.0, 4.0, "non_unate", "XOR2"),
    _gate("XNOR2", ("A", "B"), "!(A^B)", 4.0, 4.0, "non_unate", "XNOR2"),
    _gate("MUX2", ("A", "B", "S"), "((A&!S)|(B&S))", 2.0, 4.0, "non_unate", "MUX2",
          stages=2.0),
)
DRIVES = (1, 2, 4)
#: flip-flop: clock-to-Q intrinsic and setup, in FO4
DFF_CLK_Q_FO4 = 2.5
DFF_SETUP_FO4 = 1.5
#: the flip-flop cells' clock pin
CLOCK_PIN = "CK"


def gate_delay_ps(g: float, p: float, drive: int, load_ff: float, slew_ps: float) -> float:
    """Propagation delay (ps) of a cell (module docstring formula)."""
    return TAU_PS * (p + load_ff / (drive * C_UNIT_FF)) + SLEW_FACTOR * slew_ps


def output_slew_ps(drive: int, load_ff: float) -> float:
    """Output transition (ps) of a cell of drive ``drive`` into ``load_ff``."""
    return 2 * TAU_PS * load_ff / (drive * C_UNIT_FF) + 10.0


def sram_access_ps(words: int) -> float:
    """Read access time (ps) of the SRAM macro model (module docstring)."""
    return FO4_PS * (6 + 1.5 * math.log2(max(words, 2)))


def _table(fn) -> str:
    rows = ", \\\n".join('"' + ", ".join(f"{fn(s, c):.3f}" for c in LOADS_FF) + '"'
                         for s in SLEWS_PS)
    return f"values ( \\\n{rows} );"


def _arc(related: str, sense: str, delay, slew, timing_type: str | None = None) -> str:
    tt = f"        timing_type : {timing_type};\n" if timing_type else ""
    return (f"      timing () {{\n        related_pin : \"{related}\";\n{tt}"
            f"        timing_sense : {sense};\n"
            f"        cell_rise (delay_t) {{ {_table(delay)} }}\n"
            f"        cell_fall (delay_t) {{ {_table(delay)} }}\n"
            f"        rise_transition (delay_t) {{ {_table(slew)} }}\n"
            f"        fall_transition (delay_t) {{ {_table(slew)} }}\n      }}\n")


def _comb_cell(c: dict, drive: int) -> str:
    cap = c["g"] * drive * C_UNIT_FF
    pins = "".join(f"    pin ({i}) {{ direction : input; capacitance : {cap:.4f}; }}\n"
                   for i in c["inputs"])
    arcs = "".join(_arc(i, c["sense"],
                        lambda s, load: gate_delay_ps(c["g"], c["p"], drive, load, s),
                        lambda s, load: output_slew_ps(drive, load))
                   for i in c["inputs"])
    return (f"  cell ({c['name']}_X{drive}) {{\n    area : {c['area'] * drive:.4f};\n{pins}"
            f"    pin (Y) {{\n      direction : output;\n      function : \"{c['function']}\";\n"
            f"      max_capacitance : {LOADS_FF[-1]};\n{arcs}    }}\n  }}\n")


def _dff_cell(drive: int) -> str:
    cap = drive * C_UNIT_FF
    setup = DFF_SETUP_FO4 * FO4_PS
    clk_q = lambda s, load: DFF_CLK_Q_FO4 * FO4_PS + TAU_PS * load / (drive * C_UNIT_FF) \
        + SLEW_FACTOR * s    # noqa: E731
    ck = CLOCK_PIN
    cons = (f"      timing () {{\n        related_pin : \"{ck}\";\n"
            f"        timing_type : setup_rising;\n"
            f"        rise_constraint (scalar) {{ values (\"{setup:.3f}\"); }}\n"
            f"        fall_constraint (scalar) {{ values (\"{setup:.3f}\"); }}\n      }}\n"
            f"      timing () {{\n        related_pin : \"{ck}\";\n"
            f"        timing_type : hold_rising;\n"
            f"        rise_constraint (scalar) {{ values (\"0.000\"); }}\n"
            f"        fall_constraint (scalar) {{ values (\"0.000\"); }}\n      }}\n")
    return (f"  cell (DFF_X{drive}) {{\n    area : {NANGATE45_X1_UM2['DFF'] * _SCALE * drive:.4f};\n"
            f"    ff (IQ, IQN) {{ next_state : \"D\"; clocked_on : \"{ck}\"; }}\n"
            f"    pin ({ck}) {{ direction : input; clock : true; capacitance : {cap:.4f}; }}\n"
            f"    pin (D) {{\n      direction : input;\n      capacitance : {cap:.4f};\n{cons}"
            f"    }}\n    pin (Q) {{\n      direction : output;\n      function : \"IQ\";\n"
            f"      max_capacitance : {LOADS_FF[-1]};\n"
            f"{_arc(ck, 'non_unate', clk_q, lambda s, load: output_slew_ps(drive, load), 'rising_edge')}"
            f"    }}\n  }}\n")


def sram_cell(words: int, width: int) -> str:
    """The liberty cell ``SRAM<words>x<width>`` with the ports of the MEM tile's ``Memory``
    (``RADDR``, ``WADDR``: log2(words) bits, ``WDATA``/``RDATA``: ``width`` bits, ``WE``,
    ``CLK``): a combinational read arc ``RADDR -> RDATA`` of :func:`sram_access_ps`, write
    inputs with a setup of 2 FO4 to ``CLK``."""
    abits = max(1, (words - 1).bit_length())
    access = sram_access_ps(words)
    setup = 2 * FO4_PS
    cap = 2 * C_UNIT_FF
    name = f"SRAM{words}x{width}"

    def bus(pin: str, n: int, body: str) -> str:
        return (f"    bus ({pin}) {{\n      bus_type : bus{n};\n{body}    }}\n")

    cons = (f"      timing () {{\n        related_pin : \"CLK\";\n"
            f"        timing_type : setup_rising;\n"
            f"        rise_constraint (scalar) {{ values (\"{setup:.3f}\"); }}\n"
            f"        fall_constraint (scalar) {{ values (\"{setup:.3f}\"); }}\n      }}\n")
    read = _arc("RADDR", "non_unate",
                lambda s, load: access + TAU_PS * load / (4 * C_UNIT_FF) + SLEW_FACTOR * s,
                lambda s, load: output_slew_ps(4, load))
    inp = f"      direction : input;\n      capacitance : {cap:.4f};\n"
    return (f"  cell ({name}) {{\n    area : {0.5 * words * width:.1f};\n"
            f"    dont_use : true;\n"
            + bus("RADDR", abits, inp)
            + bus("WADDR", abits, inp + cons)
            + bus("WDATA", width, inp + cons)
            + f"    pin (WE) {{\n{inp}{cons}    }}\n"
            + f"    pin (CLK) {{ direction : input; clock : true; capacitance : {cap:.4f}; }}\n"
            + bus("RDATA", width, "      direction : output;\n"
                  f"      max_capacitance : {LOADS_FF[-1]};\n"
                  + "".join(f"      pin (RDATA[{i}]) {{\n{read}      }}\n"
                            for i in range(width)))
            + "  }\n")


def liberty_text(macros: tuple[tuple[int, int], ...] = ()) -> str:
    """The liberty of :data:`NAME` (module docstring), with an SRAM macro cell per
    ``(words, width)`` of ``macros``."""
    idx1 = ", ".join(f"{s}" for s in SLEWS_PS)
    idx2 = ", ".join(f"{c}" for c in LOADS_FF)
    widths = sorted({max(1, (w - 1).bit_length()) for w, _ in macros} | {d for _, d in macros})
    bus_types = "".join(
        f"  type (bus{n}) {{ base_type : array; data_type : bit; bit_width : {n}; "
        f"bit_from : {n - 1}; bit_to : 0; downto : true; }}\n" for n in widths)
    head = (f"/* {NAME}: written by garnet.sta.liberty from {CITATION}. Typical corner. */\n"
            f"library ({NAME}) {{\n  delay_model : table_lookup;\n"
            f"  time_unit : \"1ps\";\n  voltage_unit : \"1V\";\n  current_unit : \"1mA\";\n"
            f"  pulling_resistance_unit : \"1kohm\";\n  leakage_power_unit : \"1nW\";\n"
            f"  capacitive_load_unit (1, ff);\n"
            f"  nom_process : {CORNER['process']};\n  nom_voltage : {CORNER['voltage_v']};\n"
            f"  nom_temperature : {CORNER['temperature_c']};\n"
            f"  operating_conditions ({CORNER['name']}) {{ process : {CORNER['process']}; "
            f"voltage : {CORNER['voltage_v']}; temperature : {CORNER['temperature_c']}; }}\n"
            f"  default_operating_conditions : {CORNER['name']};\n"
            "  input_threshold_pct_rise : 50;\n  input_threshold_pct_fall : 50;\n"
            "  output_threshold_pct_rise : 50;\n  output_threshold_pct_fall : 50;\n"
            "  slew_lower_threshold_pct_rise : 20;\n  slew_lower_threshold_pct_fall : 20;\n"
            "  slew_upper_threshold_pct_rise : 80;\n  slew_upper_threshold_pct_fall : 80;\n"
            "  slew_derate_from_library : 1.0;\n  default_max_transition : 500;\n"
            "  default_fanout_load : 1;\n  default_inout_pin_cap : 1;\n"
            "  default_input_pin_cap : 1;\n  default_output_pin_cap : 0;\n"
            "  default_cell_leakage_power : 0;\n  default_leakage_power_density : 0;\n"
            f"  lu_table_template (delay_t) {{\n    variable_1 : input_net_transition;\n"
            f"    variable_2 : total_output_net_capacitance;\n"
            f"    index_1 (\"{idx1}\");\n    index_2 (\"{idx2}\");\n  }}\n" + bus_types)
    cells = "".join(_comb_cell(c, d) for c in CELLS for d in DRIVES)
    cells += "".join(_dff_cell(d) for d in DRIVES)
    cells += "".join(sram_cell(w, d) for w, d in macros)
    return head + cells + "}\n"
