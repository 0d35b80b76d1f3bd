"""Validation of the measured timing model against gate-level simulation (Cascade §VI-A).

For a few configured paths through one tile of a generated design, the tile's netlist
(:mod:`garnet.sta.measure`: the same synthesis and the same context) is written by OpenSTA
with its delays (``write_verilog`` after the output drivers are sized, ``write_sdf``) and
simulated by Icarus Verilog with SDF back-annotation (``$sdf_annotate``; cell models with
``specify`` paths from :func:`cell_models`). The testbench configures the tile through its
config bus (the words :mod:`canal.config` writes for the route), then for decreasing
periods ``T`` launches a transition (all bits 0 -> 1 and 1 -> 0) and samples the path's end
``T`` later: the **failing period** is the largest ``T`` at which a sample is wrong, and the
path passes from the next step up. The model is pessimistic when its figure for the path is
at least that period; :func:`validate` reports both and the error.

Paths (tile ``(x, y)`` a PE tile):

* ``sb``: SB_IN -> SB_OUT through the switch box and the register bypass (model: the
  ``sb:<class>:<w>:<a>-><b>`` hop);
* ``cb_add``: SB_IN -> connection box -> PE configured as ``coreir.add`` (other operand held
  at 0) -> SB_OUT (model: ``cb:pe`` + the PE's ``coreir.add`` delay);
* ``reg``: a pipeline register's clock -> register mux -> SB_OUT (model: ``reg``), the
  transition launched by the clock edge.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cgra.errors import CollateralError
from cgra.procs import pdeathsig_preexec

from canal.rtl import tile_shape
from canal.timing import TimingModel
from garnet.array import build_interconnect
from garnet.params import from_dict
from garnet.sta import liberty, measure

#: sweep step of the clock period (ps): the resolution of the failing period
STEP_PS = 0.5
#: coarse step of the first sweep (ps); the failing period is then refined in
#: :data:`STEP_PS` steps inside the last passing coarse interval
COARSE_PS = 8.0


def cell_models() -> str:
    """Verilog models of the liberty's cells (:mod:`garnet.sta.liberty`) with one
    ``specify`` path per timing arc, so SDF ``IOPATH`` delays annotate them."""
    out = ["`timescale 1ps/1ps"]
    for c in liberty.CELLS:
        expr = c["function"].replace("!", "~")
        for d in liberty.DRIVES:
            ins = ", ".join(c["inputs"])
            paths = " ".join(f"({i} => Y) = 0;" for i in c["inputs"])
            if c["sense"] == "non_unate":
                paths = " ".join(f"({i} *> Y) = 0;" for i in c["inputs"])
            out.append(f"module {c['name']}_X{d}({ins}, Y);\n  input {ins};\n  output Y;\n"
                       f"  assign Y = {expr};\n  specify {paths} endspecify\nendmodule")
    for d in liberty.DRIVES:
        out.append(f"module DFF_X{d}(CK, D, Q);\n  input CK, D;\n  output Q;\n  reg IQ;\n"
                   f"  assign Q = IQ;\n  always @(posedge CK) IQ <= D;\n"
                   f"  specify (posedge CK => (Q +: D)) = 0; endspecify\nendmodule")
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class PathCase:
    """One validated path: ``name``, the tile input ``start`` (port), the observed output
    ``end`` (port), its ``width``, the config words ``[(addr, data)]``, the model's delay
    ``model_ps`` and what it sums (``classes``), an input ``hold`` at a constant and the
    ``expect`` ed output as a Verilog expression of the launched value ``x``."""

    name: str
    start: str | None
    end: str
    width: int
    words: tuple[tuple[int, int], ...]
    model_ps: float
    classes: tuple[str, ...]
    #: another input held at a value during the sweep, and the expected output of ``x``
    hold: tuple[str, int] | None = None
    expect: str = "x"


def path_cases(ic: Any, tm: Any, xy: tuple[int, int], add_bits: int | None,
               tracks: int) -> list[PathCase]:
    """The :data:`module docstring <garnet.sta.sdf>` paths of tile ``xy`` of the
    interconnect ``ic`` under the timing model ``tm`` (``add_bits``: the PE instruction of
    ``coreir.add``; ``None`` leaves ``cb_add`` out)."""
    x, y = xy
    g = ic.graphs[max(ic.graphs)]
    w = g.width
    fan = g.fanout()
    tclass = ic.tiles[xy].timing_class

    def sb_in(side: str, t: int) -> str:
        return f"SB:{w}:{x}:{y}:{side}:{t}:IN"

    def port_name(nid: str) -> str:
        n = g.nodes[nid]
        return f"SB_T{n.track}_{n.side.name}_SB_{'IN' if n.io.name == 'SB_IN' else 'OUT'}_B{w}"

    cases = []
    # sb: NORTH track -> a SOUTH SB_OUT (a bypassable side) that is a switch-box mux (not
    # a long track passing through: canal.passes.segment_tracks)
    hop = next(((sb_in("NORTH", t), o) for t in range(tracks) for o in fan.get(
        sb_in("NORTH", t), ()) if g.nodes[o].kind.value == "SB"
        and g.nodes[o].side.name == "SOUTH" and len(g.fanin[o]) > 1), None)
    sb = None
    if hop is not None:
        src, out = hop
        t = g.nodes[out].track
        rm, reg = f"RMUX:{w}:{x}:{y}:SOUTH:{t}", f"REG:{w}:{x}:{y}:SOUTH:{t}"
        if rm in g.nodes and reg in g.nodes:
            key = f"sb:{tclass}:{w}:N->S"
            sb = PathCase("sb", port_name(src), port_name(out), w,
                          tuple(ic.route_bitstream([[[src, out, rm]]])), tm.classes[key],
                          (key,))
            cases.append(sb)
            # reg: the same SB_OUT through its pipeline register
            cases.append(PathCase("reg", sb.start, sb.end, w,
                                  tuple(ic.route_bitstream([[[src, out, reg, rm]]])),
                                  tm.classes["reg"], ("reg",)))
    # cb_add: NORTH track -> data0; WEST track -> data1 (held 0); res -> SOUTH SB_OUT
    if add_bits is not None and sb is not None:
        d0 = f"PORT:{w}:{x}:{y}:data0"
        d1 = f"PORT:{w}:{x}:{y}:data1"
        res = f"PORT:{w}:{x}:{y}:res"
        src0 = next((s for s in g.fanin.get(d0, ()) if ":NORTH:" in s), None)
        src1 = next((s for s in g.fanin.get(d1, ()) if ":WEST:" in s), None)
        out = next((o for o in fan.get(res, ()) if g.nodes[o].kind.value == "SB"
                    and g.nodes[o].side.name == "SOUTH"), None)
        if src0 and src1 and out:
            rm = f"RMUX:{w}:{x}:{y}:SOUTH:{g.nodes[out].track}"
            words = ic.route_bitstream([[[src0, d0]], [[src1, d1]], [[res, out, rm]]])
            words = list(words) + ic.core_bitstream(x, y, {"inst": add_bits})
            model = tm.classes[f"cb:{tclass}"] + tm.pe_ops["coreir.add"]
            # the other operand is 1: 0 -> all ones and back ripples the whole carry chain
            cases.append(PathCase("cb_add", port_name(src0), port_name(out), w,
                                  tuple(sorted(words)), model, (f"cb:{tclass}",
                                                                "pe_op:coreir.add"),
                                  (port_name(src1), 1), "x + 1"))
    return cases


def _testbench(module: str, widths: dict[str, int], directions: dict[str, str],
               case: PathCase, tile_id: int, periods: list[int]) -> str:
    decl, conn = [], []
    for p, wd in widths.items():
        rng = f"[{wd - 1}:0] " if wd > 1 else ""
        if directions[p] == "input":
            decl.append(f"  reg {rng}{p} = 0;")
        else:
            decl.append(f"  wire {rng}{p};")
        conn.append(f".{p}({p})")
    ones = f"{{{case.width}{{1'b1}}}}"
    cfg = "".join(f"    config_addr = 32'h{a:08x}; config_data = 32'h{d:08x}; "
                  f"config_write = 1; #1000 CLK = 1; #1000 CLK = 0; config_write = 0;\n"
                  for a, d in case.words)
    want = case.expect.replace("x", "(~v)")
    if case.name == "reg":
        launch = (f"      {case.start} = v; #4000 CLK = 1; #400 CLK = 0; #400;\n"
                  f"      {case.start} = ~v; #4000; CLK = 1; #(T); w = {want}; "
                  f"ok = ok & ({case.end} === w); #400 CLK = 0;\n")
    else:
        launch = (f"      {case.start} = v; #4000;\n"
                  f"      {case.start} = ~v; #(T); w = {want}; ok = ok & ({case.end} === w);\n")
    hold = f"    {case.hold[0]} = {case.hold[1]};\n" if case.hold else ""
    # one trial at period T: both launch directions (all zeros -> ones, ones -> zeros)
    trial = f"      ok = 1;\n      v = 0;\n{launch}      v = {ones};\n{launch}"
    return f"""`timescale 1ps/10fs
module tb;
{chr(10).join(decl)}
  {module} dut({", ".join(conn)});
  integer ok;
  real T, failing, fine, t_hi;
  reg [{case.width - 1}:0] v, w;
  initial begin
    $sdf_annotate("tile.sdf", dut);
    tile_id = 16'h{tile_id:04x}; clk_en = 1; RESET = 1;
    // two slow reset edges: RESET fans out to every register of the tile without a buffer
    // tree, so its annotated delay exceeds 1 ns; a register the test never writes (the
    // power-gate field, which clamps the tile's outputs) must still leave reset at 0
    #5000 CLK = 1; #5000 CLK = 0; #5000 CLK = 1; #5000 CLK = 0; RESET = 0;
{cfg}{hold}    failing = 0; fine = 0;
    // coarse sweep down from the top period to the first wrong sample, then the
    // STEP_PS sweep inside the coarse interval above it
    for (T = {periods[0]}; T > 0 && failing == 0; T = T - {COARSE_PS}) begin
{trial}      if (!ok) failing = T;
    end
    if (failing > 0) begin
      t_hi = failing + {COARSE_PS} - {STEP_PS};
      if (t_hi > {periods[0]}) t_hi = {periods[0]};
      for (T = t_hi; T > failing && fine == 0; T = T - {STEP_PS}) begin
{trial}        if (!ok) fine = T;
      end
      if (fine > 0) failing = fine;
    end
    $display("FAILING %0.2f", failing);
    $finish;
  end
endmodule
"""


def validate(design: Path, work: Path, xy: tuple[int, int] = (1, 1)) -> list[dict]:
    """Gate-level SDF simulation of :func:`path_cases` of tile ``xy`` of the generated
    ``design`` (a design directory built with the measured model), in ``work``. Returns per
    path ``{path, classes, model_ps, failing_ps, pessimistic, error_pct}``: ``failing_ps``
    the largest swept period (step :data:`STEP_PS`, found by a :data:`COARSE_PS` sweep
    down from the top and a :data:`STEP_PS` sweep inside the coarse interval above the
    first failure) with a wrong sample, ``pessimistic``
    whether ``model_ps >= failing_ps``, ``error_pct`` = (model - failing) / failing * 100.
    Raises
    :class:`CollateralError` when a tool is missing or fails."""
    for exe in ("iverilog", "vvp"):
        if shutil.which(exe) is None:
            raise CollateralError(f"the SDF validation needs `{exe}` (Debian package "
                                  f"iverilog): install it")
    design = Path(design)
    doc = json.loads((design / "design.json").read_text())
    params = from_dict(doc["params"], str(design / "design.json"))
    ic = build_interconnect(params)
    tm = TimingModel.read(design / "timing.json")
    if "_measured" not in tm.table:
        raise CollateralError(f"{design}: the SDF validation checks a measured timing model; "
                              f"this design's is {tm.describe()}")
    # the plain add rule (both operands from the array): <rules>/<PE>/coreir.add.json
    rule = next(iter(sorted((design / "rules").glob("*/coreir.add.json"))), None)
    add = int(json.loads(rule.read_text())["instances"][0]["inst_bits"], 16) if rule else None
    mods = measure.modules(design / "rtl")
    jobs = {j.module: j for j in measure.tile_jobs(ic, {})}
    module = tile_shape(ic, *xy).module_name
    job = jobs[module]
    work.mkdir(parents=True, exist_ok=True)
    macros = measure.memory_macros(mods)
    lib = work / f"{liberty.NAME}.lib"
    lib.write_text(liberty.liberty_text(tuple(sorted(macros.values()))))
    area, *_ = measure.tile_netlist(mods, job, lib, work, macros)
    widths = measure._port_widths((work / "netlist.v").read_text(), module)
    script = [f"read_liberty {lib.name}", "read_verilog netlist.v", f"link_design {module}"]
    script += measure._sdc(job, area ** 0.5, widths)
    script += ["write_sdf -divider / tile.sdf"]
    measure._run_sta(work, script, "sdf")
    # OpenSTA writes (min::max) triples; Icarus reads the typical (middle) value: use max
    sdf = (work / "tile.sdf").read_text()
    (work / "tile.sdf").write_text(re.sub(r"\((-?[\d.]+)::(-?[\d.]+)\)", r"(\2:\2:\2)", sdf))
    (work / "cells.v").write_text(cell_models())
    # the yosys netlist: the SDF gives each instance its delay (the output drivers the STA
    # sized have their sized delays there; their function is the same)
    sized = (work / "netlist.v").read_text()
    dirs = {m[2]: m[1] for m in re.finditer(r"^\s*(input|output)\s*(?:\[\d+:\d+\])?\s*([\w$]+)"
                                           r"\s*;", _module_body(sized, module), re.M)}
    results = []
    for case in path_cases(ic, tm, xy, add, params.tracks):
        top = int(case.model_ps * 1.5) + 50
        periods = [top]
        (work / "tb.v").write_text(_testbench(module, widths, dirs, case,
                                              xy[0] << 8 | xy[1], periods))
        comp = subprocess.run(["iverilog", "-gspecify", "-g2012", "-o", "sim.vvp", "-s", "tb",
                               "tb.v", "netlist.v", "cells.v"], cwd=work, capture_output=True,
                              text=True, timeout=1800, preexec_fn=pdeathsig_preexec())
        if comp.returncode != 0:
            raise CollateralError(f"iverilog failed: {(comp.stderr or comp.stdout)[-300:]}")
        run = subprocess.run(["vvp", "-n", "sim.vvp"], cwd=work, capture_output=True,
                             text=True, timeout=3600, preexec_fn=pdeathsig_preexec())
        m = re.search(r"FAILING ([\d.]+)", run.stdout)
        if run.returncode != 0 or m is None:
            raise CollateralError(f"vvp failed on path {case.name}: {run.stdout[-300:]}"
                                  f"{run.stderr[-300:]}")
        failing = float(m[1])
        if failing >= top or failing <= 0:
            raise CollateralError(f"path {case.name}: failing period {failing} ps (swept "
                                  f"{top} ps down to {STEP_PS}): the testbench did not "
                                  f"configure or delay it")
        results.append({"path": case.name, "classes": list(case.classes),
                        "model_ps": round(case.model_ps, 2), "failing_ps": failing,
                        "pessimistic": case.model_ps >= failing,
                        "error_pct": round((case.model_ps - failing) / failing * 100, 1)})
    return results


def _module_body(netlist: str, module: str) -> str:
    m = re.search(rf"^module\s+{re.escape(module)}\b.*?^endmodule", netlist, re.S | re.M)
    if m is None:
        raise CollateralError(f"netlist: no module {module}")
    return m[0]


__all__ = ["validate", "cell_models", "path_cases", "PathCase", "STEP_PS", "COARSE_PS"]
