"""The measured timing model (Cascade §V-A, step 2): each distinct tile module synthesised
with yosys onto the project's liberty (:mod:`garnet.sta.liberty`) and every path class
Canal enumerates for it (:mod:`canal.timing_paths`) timed with OpenSTA.

Per tile module (cached as ``<cache>/<module>-<key>.json``, ``key`` = sha256 of
the module's Verilog with its sub-modules, the liberty text, the scripts and
:data:`REVISION`: a no-change ``cgra rtl`` measures nothing):

1. **Synthesis** (:data:`SYNTH`): yosys ``synth`` keeping the hierarchy (each ``CanalMux``
   and the core stay instances, so the Canal edges are pins of the netlist), ``dfflibmap``
   and ``abc`` onto the liberty: the interconnect's muxes (``CanalMux_*``; on a ready-valid
   array its muxes, forks and FIFOs, ``RvMux_*``, ``RvPlainMux_*`` (a static width's),
   ``RvFork_*``, ``RvSkidFifo_*``, ``RvSplitFifoHalf_*``; on a hybrid one its routers and ejection buffers,
   ``canal_router_*``, ``DynEject_*``: the router's allocators take 1890 ps this way against
   2730 ps with ``-fast`` on configs/tiny_hybrid.toml, in 9 s) with ABC's default liberty
   script, everything else (the core, the config logic) with ``abc -fast``
   (the default script spent over 9 minutes on the 32-bit PE's multiplier in SAT sweeping,
   ``-D`` over 6 on the D3 PE; ``-fast`` maps the 32-bit PE tile in 15 s, but its mux trees
   vary in depth from one size to the next); the SRAM ``Memory`` black box becomes the
   liberty's ``SRAM<words>x<width>`` macro. ``stat`` gives the tile's cell area (um^2).
   The core is synthesised alone, once per core Verilog (cached under ``<cache>/core/``,
   :func:`_core_synthesis`), and the rest of the tile with the core as a black box; the
   two netlists are joined (:func:`tile_netlist`). An interconnect edit thus synthesises
   only the interconnect, and the core's mapping no longer moves with the tile around it:
   ABC's result depends on the order it reads the design in (the 16-bit PE inside its
   whole tile: 11851 um^2 with the files in name order, 12598 um^2 in reverse).
2. **Context** (SDC): ideal clock; the SB_IN ports driven with the transition of an X4 driver
   into the wire that crosses the tile (``WIRE_FF_PER_UM * sqrt(area)``); each SB_OUT port
   loaded with that wire plus the pins the track feeds in the next tile (the largest SB_IN
   fan-out of this tile times a mux input); the cell driving each SB_OUT port upsized to X4
   (an output driver, as a layout flow would size it).
3. **Timing** of every class: the worst ``report_checks`` path from its start points
   through its Canal edges (``-through`` the mux input pins); ``sb`` and ``reg`` classes end
   at the path's endpoint (the SB_OUT port, or a mandatory register's D pin), ``cb`` at the
   exit of the connection-box mux, ``core_out`` is the part after the core's last cell.
   Every cell and net delay is derated by :data:`DERATE_LATE` (here and in step 4).
4. **Core** (``link_design`` of the core's netlist alone; cached under ``<cache>/core/``
   by its synthesis, routed ports, load and rule instructions): the worst path from the core's
   routed inputs, or from a register inside it, to its routed outputs (config inputs are
   quasi-static: excluded), loaded like in the tile. For a PE with rules, each single-PE
   rule's instruction (``inst_bits``) is applied with ``set_case_analysis`` on the
   instruction input: the delay of that op (``pe_op_ps``, keyed by the rule table's op, so a
   multi-op pattern such as ``pattern.select_slt`` has its own figure).

**Ready-valid tiles** (``RvTile_…``, :mod:`canal.rv_rtl`; :func:`rv_tile_modules` maps
them to the array's tiles): the classes of :mod:`canal.timing_paths` follow the valid bit
beside the data, the ``reg`` class starts at a FIFO site's own registers, and each tile adds
``ready:<class>:<w>`` (one hop of a ready chain, from the SB_OUT ``_ready`` inputs to the
SB_IN ``_ready`` outputs) and, around a wrapped core, ``ready_through_core``. A tile with a
router (a hybrid array, :mod:`canal.dynamic`) adds ``router:<class>``: the worse of the
router's register-to-register paths and a mesh link (its registers to the tile's ``rt_*``
outputs plus the ``rt_*`` inputs to the next router's registers; every router register is a
start point, its routing-table registers included: pessimistic).

:func:`measured_table` assembles the delay table of :mod:`canal.timing` from the tiles: a
side pair no tile of a class wires (never routed) takes the class's slowest hop, noted. The
ready figures of a ready-valid array are the sections ``ready_hop`` and
``ready_through_core``, which the mapper's STA times along every route backwards
(:func:`mapper.backend.pipeline._ready_chains`), the router's ``router``, which it adds to
every net on the dynamic layer.
Raises :class:`~cgra.errors.CollateralError` when yosys or OpenSTA fails or a class has no
path (a naming mismatch between Canal and the netlist: a bug, named).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from cgra.errors import CollateralError
from cgra.lock import cache_entry_lock, write_entry
from cgra.procs import pdeathsig_preexec

from canal.ready_valid import flow_of
from canal.rtl import tile_shapes
from canal.timing_paths import PathClass, tile_path_classes
from garnet.sta import liberty
from garnet.sta.verilog import closure, flatten_packed, hoist_automatic, modules

SCHEMA = "garnet.tile_timing/1"
#: revision of the measurement method (part of every cache key)
REVISION = 8
SYNTH = ("read_verilog -sv {files}; hierarchy -top {top}; synth -top {top}; "
         "dfflibmap -liberty {lib}; "
         "abc -liberty {lib} CanalMux_* RvMux_* RvPlainMux_* RvFork_* RvSkidFifo_* "
         "RvSplitFifoHalf_* canal_router_* DynEject_*; "
         "abc -fast -liberty {lib}; "
         "opt_clean; "
         "setundef -zero; write_verilog -noattr -noexpr -nohex -nodec -simple-lhs netlist.v; "
         "tee -q -o stat.txt stat -liberty {lib}")
#: the clock period given to the STA (ps); paths are read as arrival times, so it only has
#: to exceed every path
PERIOD_PS = 20000
#: setup of the liberty's flip-flop (ps)
SETUP_PS = liberty.DFF_SETUP_FO4 * liberty.FO4_PS
#: late derate of every cell and net delay (OpenSTA ``set_timing_derate -late``), as a
#: sign-off flow applies for on-chip variation; here it covers the gap between the STA's
#: path figure (each arc at its propagated slew) and the SDF OpenSTA writes (each arc at its
#: pin's worst slew), which made a switch-box hop simulate 0.41 ps slower than its 228.59 ps
#: model (issue 40 item 4): the model must never be faster than SDF simulation
DERATE_LATE = 1.01
_POINT = re.compile(r"^\s*(-?[\d.]+)\s+(-?[\d.]+)\s+[\^v]\s+(\S+)\s+\((\S+)\)")
_ARRIVAL = re.compile(r"^\s*(-?[\d.]+)\s+data arrival time")


def tool_versions() -> dict[str, str]:
    """``{"synthesis": "yosys <version>", "sta": "OpenSTA <version>"}``; raises
    :class:`CollateralError` naming the missing tool (Debian packages ``yosys``,
    ``opensta``)."""
    out = {}
    for key, exe, args in (("synthesis", "yosys", ["-V"]), ("sta", "sta", ["-version"])):
        if shutil.which(exe) is None:
            raise CollateralError(f"the measured timing model needs `{exe}` (Debian package "
                                  f"{'opensta' if exe == 'sta' else exe}): install it, or "
                                  f"set timing = \"cascade-table\" in the design's TOML")
        res = subprocess.run([exe, *args], capture_output=True, text=True, timeout=60)
        text = (res.stdout or res.stderr).strip().splitlines()
        ver = text[0] if text else "?"
        out[key] = ver if key == "synthesis" else f"OpenSTA {ver}"
    return out


@dataclass(frozen=True)
class TileJob:
    """What one tile's measurement needs: the tile ``module``, its timing ``tclass``, the
    Canal path classes, the core's routed input and output port names, the largest SB_IN
    fan-out, and the PE rules' ``(op, inst_bits, free mask)`` (empty for other cores)."""

    module: str
    tclass: str
    classes: tuple[PathClass, ...]
    core_inputs: tuple[str, ...]
    core_outputs: tuple[str, ...]
    sb_in_fanout: int
    core_out_fanout: int
    ops: tuple[tuple[str, int, int], ...] = ()


def tile_jobs(ic: Any, rule_insts: dict[str, list[tuple[int, int]]] | None = None,
              rv_tiles: dict[tuple[int, int], tuple[str, bool, bool]] | None = None
              ) -> list[TileJob]:
    """One :class:`TileJob` per distinct tile module of the interconnect ``ic`` (cores
    present), in module-name order. ``rule_insts``: IR op -> PE instruction bits of the
    single-PE rules (:func:`rule_instructions`: each with its free mask). ``rv_tiles``: for a
    ready-valid array, (x, y) -> (its ``RvTile_…`` module, whether the core is wrapped in
    it, whether it holds a router), :func:`rv_tile_modules`; a tile with a router also
    gets the class ``router:<class>`` (:func:`_tile_sta`)."""
    jobs: dict[str, TileJob] = {}
    flow = flow_of(ic.graphs)
    rv_widths = frozenset(w for w in ic.graphs if flow.kind(w) != "static") \
        if rv_tiles is not None else frozenset()
    for xy, shape in tile_shapes(ic).items():
        info = ic.tiles[xy]
        module, wrapped, router = rv_tiles[xy] if rv_tiles is not None \
            else (shape.module_name, True, False)
        if shape.core is None or module in jobs:
            continue
        tclass = info.timing_class
        fan: dict[str, int] = {}
        for _, srcs in shape.fanin:
            for s in srcs:
                fan[s] = fan.get(s, 0) + 1
        ports = [n for n in shape.nodes if n.kind.value == "PORT"]
        ins = tuple(sorted({n.name[len("PORT_"):] for n in ports if n.direction == "in"}))
        outs = tuple(sorted({n.name[len("PORT_"):] for n in ports if n.direction == "out"}))
        sb_fan = max((fan.get(n.name, 0) for n in shape.nodes
                      if n.kind.value == "SB" and n.io.name == "SB_IN"), default=1)
        out_fan = max((fan.get(n.name, 0) for n in ports if n.direction == "out"), default=1)
        ops = tuple((op, bits, mask) for op, v in sorted((rule_insts or {}).items())
                    for bits, mask in v) if tclass == "pe" else ()
        classes = tile_path_classes(shape, tclass, rv_widths, wrapped)
        if router:
            classes.append(PathClass(f"router:{tclass}", "router", (), ("router",), None, 0))
        jobs[module] = TileJob(module, tclass, tuple(classes), ins, outs, max(sb_fan, 1),
                               max(out_fan, 1), ops)
    return [jobs[k] for k in sorted(jobs)]


_RV_TILE = re.compile(r"^\s*(RvTile_\w+)\s+Tile_X([0-9A-F]+)_Y([0-9A-F]+)\s*\(", re.M)


_ROUTER = re.compile(r"^\s*[A-Za-z_][\w$]*\s+router\s*\(", re.M)


def rv_tile_modules(mods: dict[str, str]) -> dict[tuple[int, int], tuple[str, bool, bool]]:
    """(x, y) -> (``RvTile_…`` module, core wrapped in it, router in it) of a ready-valid
    array's Verilog ``mods`` (module -> text): its top's ``Tile_X<xx>_Y<yy>`` instances
    (:func:`canal.rv_rtl.rv_array`); a tile holds its core when it instantiates ``core``,
    a hybrid tile its router (:mod:`canal.dynamic`) as ``router``."""
    out: dict[tuple[int, int], tuple[str, bool, bool]] = {}
    for text in mods.values():
        for m in _RV_TILE.finditer(text):
            body = mods.get(m[1], "")
            out[(int(m[2], 16), int(m[3], 16))] = (m[1], _core_module(body) is not None,
                                                   _ROUTER.search(body) is not None)
    return out


def rule_instructions(rules_dir: Path, pe_json: Path | None = None
                      ) -> dict[str, list[tuple[int, int]]]:
    """IR op -> ``[(instruction bits, free mask)]`` of every found single-PE rule under
    ``rules_dir`` (the design's ``rules/``: ``<PE>.rules.json`` and the rule files it names),
    plain targets and patterns alike (``coreir.lshr[in1=const]`` is the only way to shift on
    the default PE); the free mask has the bits of the instruction's ``*_const`` fields
    (an operand constant: its value is the app's, so the timing leaves it free), from the
    PE document ``pe_json`` (the design's ``pe.json``). ``{}`` without rules."""
    free = 0
    if pe_json is not None and Path(pe_json).is_file():
        doc = json.loads(Path(pe_json).read_text())
        for f in (doc.get("peak") or doc).get("fields", []):
            if f["name"].endswith("_const"):
                free |= ((1 << f["width"]) - 1) << f["lo"]
    out: dict[str, list[tuple[int, int]]] = {}
    for table in sorted(Path(rules_dir).glob("*.rules.json")):
        doc = json.loads(table.read_text())
        for e in doc.get("entries", []):
            if e.get("status") != "found" or not e.get("rule"):
                continue
            rule = json.loads((Path(rules_dir) / e["rule"]).read_text())
            insts = rule.get("instances", [])
            if len(insts) == 1 and "inst_bits" in insts[0]:
                entry = (int(insts[0]["inst_bits"], 16) & ~free, free)
                if entry not in out.setdefault(e["op"], []):
                    out[e["op"]].append(entry)
    return out


# --------------------------------------------------------------------------- synthesis
@contextlib.contextmanager
def _scratch(lib_text: str, prefix: str):
    """A temporary working directory holding the liberty ``lib_text``: ``(work, lib)``."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        work = Path(tmp)
        lib = work / f"{liberty.NAME}.lib"
        lib.write_text(lib_text)
        yield work, lib


def _stub(mods: dict[str, str], name: str) -> str:
    """A yosys black box of module ``name``: its ANSI port list, no body."""
    m = re.search(rf"module\s+{re.escape(name)}\s*\((.*?)\);", mods[name], re.S)
    if m is None:
        raise CollateralError(f"no ANSI port list in the Verilog of module {name}")
    return f"(* blackbox *) module {name}({m[1]});\nendmodule\n"


def _synthesise(mods: dict[str, str], job: TileJob, lib: Path, work: Path,
                macros: dict[str, tuple[int, int]], top: str | None = None,
                black: tuple[str, ...] = ()) -> float:
    """Write the netlist of module ``top`` (default the tile's) into ``work/netlist.v``,
    the modules ``black`` (and the SRAM ``Memory``) left as black boxes; returns its cell
    area (um^2) without them."""
    top = top or job.module
    files = []
    for d in closure(top, mods, stop=black):
        if d == "Memory" or d in black:
            (work / f"{d}.v").write_text(_stub(mods, d))
        else:
            (work / f"{d}.v").write_text(flatten_packed(hoist_automatic(mods[d])))
        files.append(f"{d}.v")
    script = SYNTH.format(files=" ".join(files), top=top, lib=lib)
    res = subprocess.run(["yosys", "-q", "-p", script], cwd=work, capture_output=True,
                         text=True, timeout=3600, preexec_fn=pdeathsig_preexec())
    if res.returncode != 0:
        err = (res.stderr or res.stdout).strip().splitlines()
        raise CollateralError(f"yosys failed on tile {job.module}: "
                              f"{err[-1] if err else res.returncode}; the measured timing "
                              f"model needs a synthesisable tile (timing = \"cascade-table\" "
                              f"in the TOML takes the published table instead)")
    net = (work / "netlist.v").read_text()
    for name, (words, width) in macros.items():
        net = re.sub(rf"^(\s*){name}(\s+\S+\s*\()", rf"\1SRAM{words}x{width}\2", net,
                     flags=re.M)
    (work / "netlist.v").write_text(net)
    stat = (work / "stat.txt").read_text()
    # a module without sub-modules has no "top module" line (yosys prints its own area)
    m = re.search(rf"Chip area for top module '\\{re.escape(top)}':\s*([\d.]+)", stat) \
        or re.search(rf"Chip area for module '\\{re.escape(top)}':\s*([\d.]+)", stat)
    if m is None and re.search(r"Number of cells:\s+0\s*$", stat, re.M):
        m = ["", "0"]           # a module of wires only (the IO core): no area line
    if m is None:
        raise CollateralError(f"yosys stat printed no area for module {top} of tile "
                              f"{job.module}")
    area = float(m[1])
    for words, width in macros.values():
        if re.search(rf"^\s*SRAM{words}x{width}\s", net, re.M):
            area += 0.5 * words * width
    return area


#: sub-directory of the measurement cache holding each core's synthesis and core timing
CORE_DIR = "core"


def _core_synthesis(mods: dict[str, str], job: TileJob, core: str, lib_text: str,
                    macros: dict[str, tuple[int, int]], cache: Path | None
                    ) -> tuple[str, float, str]:
    """The gate netlist (Verilog text), the cell area (um^2) and the key of the core module
    ``core`` synthesised alone (:data:`SYNTH`, its module closure): cached under
    ``<cache>/core/`` by that closure, the liberty and the script, so a tile whose
    interconnect changed re-synthesises only the rest (:func:`_measure_tile`). Alone, the
    core's mapping does not depend on the tile around it: ABC's result depends on the order
    it reads the design in (the 16-bit PE's area moved by 6 % with the file order of the
    whole tile), so an interconnect edit no longer moves the core's figures."""
    key = hashlib.sha256(json.dumps(
        [SCHEMA, REVISION, SYNTH, lib_text, [mods[d] for d in closure(core, mods)]]
    ).encode()).hexdigest()

    def synth() -> dict:
        with _scratch(lib_text, "cgra-sta-core-") as (work, lib):
            area = _synthesise(mods, job, lib, work, macros, top=core)
            return {"schema": SCHEMA, "module": core, "key": key, "area_um2": area,
                    "netlist": (work / "netlist.v").read_text()}

    doc = _core_entry(cache, f"{core}-{key[:24]}.json", key, synth)
    return doc["netlist"], doc["area_um2"], key


def _core_entry(cache: Path | None, name: str, key: str, make) -> dict:
    """The document of ``<cache>/core/<name>`` (:func:`_entry`); ``make()`` uncached when
    ``cache`` is ``None``."""
    if cache is None:
        return make()
    return _entry(Path(cache) / CORE_DIR / name, key, make)[0]


def _entry(entry: Path, key: str, make, indent: int | None = None) -> tuple[dict, bool]:
    """``(document, cached)`` of the cache entry ``entry`` when it is one of ``key``, else
    ``make()``'s, written there: one maker per entry across processes (the others wait on
    :func:`cgra.lock.cache_entry_lock` and read it; the kernel releases the lock if the
    holder dies)."""
    doc = _cached(entry, key)
    if doc is not None:
        return doc, True
    with cache_entry_lock(entry):
        doc = _cached(entry, key)
        if doc is not None:
            return doc, True
        doc = make()
        write_entry(entry, json.dumps(doc, indent=indent, sort_keys=True) + "\n")
        return doc, False


def memory_macros(mods: dict[str, str]) -> dict[str, tuple[int, int]]:
    """``{"Memory": (words, width)}`` when the design has the SRAM black box (read from its
    ``RADDR`` and ``RDATA`` port widths)."""
    text = mods.get("Memory")
    if text is None:
        return {}
    a = re.search(r"input\s*\[(\d+):0\]\s*RADDR", text)
    d = re.search(r"output\s*\[(\d+):0\]\s*RDATA", text)
    if a is None or d is None:
        raise CollateralError("rtl/Memory.v: no RADDR / RDATA ports to size the SRAM macro")
    return {"Memory": (1 << (int(a[1]) + 1), int(d[1]) + 1)}


# --------------------------------------------------------------------------------- STA
def _bits(name: str, width: int) -> str:
    return f"{name}[*]" if width > 1 else name


def _sdc(job: TileJob, side_um: float, widths: dict[str, int]) -> list[str]:
    wire = liberty.WIRE_FF_PER_UM * side_um
    load = wire + job.sb_in_fanout * 2 * liberty.C_UNIT_FF
    slew = liberty.output_slew_ps(4, load)
    # a ready-valid tile's _ready ports run backwards: an SB_OUT's is an input, an SB_IN's
    # an output (driven and loaded like the track's data)
    sb_in = [p for p in widths if ("_SB_IN_B" in p) != p.endswith("_ready")
             and ("_SB_IN_B" in p or "_SB_OUT_B" in p)]
    sb_out = [p for p in widths if ("_SB_OUT_B" in p) != p.endswith("_ready")
              and ("_SB_IN_B" in p or "_SB_OUT_B" in p)]
    ins = " ".join(_bits(p, widths[p]) for p in sb_in)
    outs = " ".join(_bits(p, widths[p]) for p in sb_out)
    lines = [f"create_clock -name clk -period {PERIOD_PS} [get_ports CLK]",
             f"set_timing_derate -late {DERATE_LATE}",
             "set_input_delay 0 -clock clk [delete_from_list [all_inputs] [get_ports CLK]]",
             # outputs constrained like a register's D pin: the worst path of a class is
             # the one of the largest arrival, whichever of the two it ends at
             f"set_output_delay {SETUP_PS} -clock clk [all_outputs]"]
    if sb_in:
        lines.append(f"set_input_transition {slew:.2f} [get_ports {{{ins}}}]")
    if sb_out:
        lines += [f"set_load {load:.3f} [get_ports {{{outs}}}]",
                  f"foreach p [get_ports {{{outs}}}] {{",
                  "  foreach c [get_fanin -to $p -flat -only_cells -levels 1] {",
                  "    set r [get_property $c ref_name]",
                  "    if {[regexp {^(.*)_X[12]$} $r -> base]} { replace_cell $c ${base}_X4 }",
                  "  }", "}"]
    return lines


def _port_widths(netlist: str, module: str) -> dict[str, int]:
    """port -> bit width of ``module`` in a yosys netlist."""
    m = re.search(rf"^module\s+{re.escape(module)}\s*\(.*?\);(.*?)^endmodule", netlist,
                  re.S | re.M)
    if m is None:
        raise CollateralError(f"netlist: no module {module}")
    out = {}
    for d in re.finditer(r"^\s*(input|output)\s*(?:\[(\d+):(\d+)\])?\s*([\w$]+)\s*;",
                         m[1], re.M):
        out[d[4]] = abs(int(d[2]) - int(d[3])) + 1 if d[2] else 1
    return out


def _port_directions(netlist: str, module: str) -> dict[str, str]:
    """port -> ``input`` / ``output`` of ``module`` in a yosys netlist."""
    m = re.search(rf"^module\s+{re.escape(module)}\s*\(.*?\);(.*?)^endmodule", netlist,
                  re.S | re.M)
    if m is None:
        raise CollateralError(f"netlist: no module {module}")
    return {d[3]: d[1] for d in re.finditer(
        r"^\s*(input|output)\s*(\[\d+:\d+\])?\s*([\w$]+)\s*;", m[1], re.M)}


def _run_sta(work: Path, script: list[str], what: str) -> str:
    (work / f"{what}.tcl").write_text("\n".join(script) + "\n")
    res = subprocess.run(["sta", "-no_splash", "-exit", f"{what}.tcl"], cwd=work,
                         capture_output=True, text=True, timeout=3600,
                         preexec_fn=pdeathsig_preexec())
    if res.returncode != 0 or "Error" in res.stderr:
        err = (res.stderr or res.stdout).strip().splitlines()
        raise CollateralError(f"OpenSTA failed on {what}: {err[-1] if err else res.returncode}")
    return res.stdout


def _sections(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for block in text.split("@@CLASS ")[1:]:
        key, _, body = block.partition("\n")
        out[key.strip()] = body
    return out


def _arrival(body: str) -> float | None:
    for line in body.splitlines():
        m = _ARRIVAL.match(line)
        if m:
            return float(m[1])
    return None


def _points(body: str) -> list[tuple[float, str]]:
    pts = []
    for line in body.split("data arrival time")[0].splitlines():
        m = _POINT.match(line)
        if m:
            pts.append((float(m[2]), m[3]))
    return pts


def _pin_width(through: str, core_widths: dict[str, int]) -> int:
    """Bit width of a mux input pin ``mux_<node>/I<k>`` (or a FIFO site's output
    ``fifo_<REG>/O``): the node's ``_B<w>`` suffix, or for a connection box
    (``mux_PORT_<port>``) the core port's width; a handshake pin (``valid_…``, ``ready_…``)
    is one bit."""
    inst, _, pin = through.partition("/")
    if pin.startswith(("valid", "ready")):
        return 1
    if inst.startswith("mux_PORT_"):
        return core_widths.get(inst[len("mux_PORT_"):], 1)
    m = re.search(r"_B(\d+)$", inst)
    return int(m[1]) if m else 1


def _tile_sta(job: TileJob, work: Path, lib: Path, side_um: float,
              core_widths: dict[str, int]) -> dict[str, float]:
    net = (work / "netlist.v").read_text()
    widths = _port_widths(net, job.module)
    dirs = _port_directions(net, job.module)
    script = [f"read_liberty {lib}", "read_verilog netlist.v", f"link_design {job.module}"]
    script += _sdc(job, side_um, widths)
    for pc in job.classes:
        throughs = " ".join(_bits(t, _pin_width(t, core_widths)) for t in pc.throughs)
        if pc.kind == "pass":
            # a long track passing through: a wire from an SB_IN port to an SB_OUT port
            # (no cell, so no pin to pass through: canal.timing_paths)
            starts = " ".join(_bits(s, widths.get(s, 1)) for s in pc.starts)
            ends = " ".join(_bits(t, widths.get(t, 1)) for t in pc.throughs)
            script.append(f'puts "@@CLASS {pc.key}"')
            script.append(f"report_checks -from [get_ports {{{starts}}}] -to [get_ports "
                          f"{{{ends}}}] -digits 2 -path_delay max")
            continue
        if pc.kind == "router":
            # the router's own clock period: register to register inside it, or out of it
            # onto a mesh link and into the next tile's router (both halves of a link)
            ck = f"[get_pins {{router/*/{liberty.CLOCK_PIN}}}]"
            rt_in = " ".join(_bits(p, widths[p]) for p in widths
                             if p.startswith("rt_") and dirs.get(p) == "input")
            rt_out = " ".join(_bits(p, widths[p]) for p in widths
                              if p.startswith("rt_") and dirs.get(p) == "output")
            script += [f'puts "@@CLASS {pc.key}#internal"',
                       f"report_checks -from {ck} -to [get_pins {{router/*/D}}] -digits 2",
                       f'puts "@@CLASS {pc.key}#out"',
                       f"report_checks -from {ck} -to [get_ports {{{rt_out}}}] -digits 2",
                       f'puts "@@CLASS {pc.key}#in"',
                       f"report_checks -from [get_ports {{{rt_in}}}] -to "
                       f"[all_registers -data_pins] -digits 2"]
            continue
        if pc.kind in ("ready", "ready_core"):
            # backwards: from the SB_OUT ready inputs to the SB_IN ready outputs
            w = pc.key.split(":")[2] if pc.kind == "ready" else None
            ends = " ".join(p for p in widths if p.endswith("_ready") and "_SB_IN_B" in p
                            and (w is None or p.endswith(f"_B{w}_ready")))
            starts = " ".join(pc.starts)
            script.append(f'puts "@@CLASS {pc.key}"')
            script.append(f"report_checks -from [get_ports {{{starts}}}] -through [get_pins "
                          f"{{{throughs}}}] -to [get_ports {{{ends}}}] -digits 2 "
                          f"-path_delay max")
            continue
        if pc.kind == "core_out":
            frm = ""      # the mux inputs are on the core's output nets
        elif pc.kind == "reg" and pc.starts:
            # a ready-valid FIFO site: from the clock pins of its own registers
            ck = " ".join(f"{s}/*/{liberty.CLOCK_PIN}" for s in pc.starts)
            frm = f"-from [get_pins {{{ck}}}]"
        elif pc.starts:
            starts = " ".join(_bits(s, widths.get(s, 1)) for s in pc.starts)
            frm = f"-from [get_ports {{{starts}}}]"
        else:
            frm = "-from [all_registers -clock_pins]"
        script.append(f'puts "@@CLASS {pc.key}"')
        script.append(f"report_checks {frm} -through [get_pins {{{throughs}}}] "
                      f"-digits 2 -path_delay max")
    out = _sections(_run_sta(work, script, "tile"))
    res: dict[str, float] = {}
    for pc in job.classes:
        if pc.kind == "router":
            part = {h: _arrival(out.get(f"{pc.key}#{h}", "")) for h in ("internal", "out", "in")}
            if None in part.values():
                raise CollateralError(f"OpenSTA found no {[h for h, v in part.items() if v is None][0]} "
                                      f"path of the router of tile {job.module}")
            res[pc.key] = round(max(part["internal"], part["out"] + part["in"]), 2)
            continue
        body = out.get(pc.key, "")
        end = _arrival(body)
        if end is None:
            raise CollateralError(f"OpenSTA found no path for class {pc.key} of tile "
                                  f"{job.module} (through {pc.throughs[0]}): the netlist and "
                                  f"the Canal enumeration disagree")
        if pc.kind == "cb":
            pts = [t for t, p in _points(body) if p.startswith(f"{pc.exit}")]
            end = max(pts) if pts else end
        elif pc.kind == "core_out":
            pts = _points(body)[:-1]          # without the endpoint
            i = len(pts)
            while i > 0 and pts[i - 1][1].startswith(("mux_SB_", "mux_RMUX_")):
                i -= 1
            end = end - (pts[i - 1][0] if i > 0 else 0.0)
        res[pc.key] = round(max(res.get(pc.key, 0.0), end), 2)
    return res


def _core_sta(job: TileJob, work: Path, lib: Path, core_module: str) -> tuple[float, dict]:
    """Worst core path (ps) and ``{op: ps}`` under each rule's instruction."""
    net = (work / "netlist.v").read_text()
    widths = _port_widths(net, core_module)
    ins = [p for p in job.core_inputs if p in widths]
    outs = [p for p in job.core_outputs if p in widths]
    if not outs:
        return 0.0, {}
    load = job.core_out_fanout * 2 * liberty.C_UNIT_FF
    slew = liberty.output_slew_ps(1, 2 * liberty.C_UNIT_FF * 4)
    routed = set(ins) | set(outs) | {"CLK"}
    static = [p for p in widths if p not in routed and p not in ("RESET", "clk_en", "flush")]
    fin = " ".join(_bits(p, widths[p]) for p in ins)
    fout = " ".join(_bits(p, widths[p]) for p in outs)
    base = [f"read_liberty {lib}", "read_verilog netlist.v", f"link_design {core_module}",
            f"create_clock -name clk -period {PERIOD_PS} [get_ports CLK]",
            f"set_timing_derate -late {DERATE_LATE}",
            "set_input_delay 0 -clock clk [delete_from_list [all_inputs] [get_ports CLK]]",
            f"set_output_delay {SETUP_PS} -clock clk [all_outputs]",
            f"set_load {load:.3f} [get_ports {{{fout}}}]"]
    if ins:
        base.append(f"set_input_transition {slew:.2f} [get_ports {{{fin}}}]")
    for p in static:
        base.append(f"set_false_path -from [get_ports {{{_bits(p, widths[p])}}}]")
    script = list(base)
    if ins:
        script += ['puts "@@CLASS comb"',
                   f"report_checks -from [get_ports {{{fin}}}] -to [get_ports {{{fout}}}] "
                   f"-digits 2"]
    script += ['puts "@@CLASS reg"',
               f"report_checks -from [all_registers -clock_pins] -to [get_ports {{{fout}}}] "
               f"-digits 2"]
    inst_port = next((p for p in widths if p.endswith("inst") or p == "config_inst"), None)
    op_keys = []
    if job.ops and inst_port is not None and ins:
        n = widths[inst_port]
        for i, (op, bits, free) in enumerate(job.ops):
            for b in range(n):          # every bit set again: the previous op's are replaced
                pin = f"{inst_port}[{b}]" if n > 1 else inst_port
                if (free >> b) & 1:
                    script.append(f"unset_case_analysis [get_ports {{{pin}}}]")
                else:
                    script.append(f"set_case_analysis {(bits >> b) & 1} [get_ports {{{pin}}}]")
            script.append(f'puts "@@CLASS op:{i}"')
            script.append(f"report_checks -from [get_ports {{{fin}}}] "
                          f"-to [get_ports {{{fout}}}] -digits 2")
            op_keys.append((i, op))
    out = _sections(_run_sta(work, script, "core"))
    worst = max((a for k in ("comb", "reg") if (a := _arrival(out.get(k, ""))) is not None),
                default=0.0)
    ops = {}
    for i, op in op_keys:              # an op with several rules: the slowest
        a = _arrival(out.get(f"op:{i}", ""))
        if a is not None:
            ops[op] = max(ops.get(op, 0.0), round(a, 2))
    return round(worst, 2), ops


def _core_module(tile_text: str) -> str | None:
    m = re.search(r"^\s*([A-Za-z_][\w$]*)\s+core\s*\(", tile_text, re.M)
    return m[1] if m else None


# ----------------------------------------------------------------------------- per tile
def tile_key(job: TileJob, mods: dict[str, str], lib_text: str, ops: bool = True,
             deps: list[str] | None = None) -> str:
    """sha256 of what the measurement of ``job`` depends on (module docstring); with
    ``ops=False`` without the PE rules' instructions (the tile's base key: the synthesis,
    the path classes and the core's worst path depend on nothing else). ``deps``: the
    tile's module closure when the caller has it."""
    body = [mods[d] for d in (deps if deps is not None else closure(job.module, mods))]
    return hashlib.sha256(json.dumps(
        [SCHEMA, REVISION, SYNTH, lib_text, job.tclass, body,
         [(c.key, c.starts, c.throughs) for c in job.classes], job.core_inputs,
         job.core_outputs, job.sb_in_fanout, job.core_out_fanout,
         *([job.ops] if ops else [])]).encode()
    ).hexdigest()


def measure_tile(job: TileJob, mods: dict[str, str], cache: Path | None) -> dict:
    """The measurement of one tile (module docstring): ``{schema, module, tclass, key,
    area_um2, side_um, classes: {key: ps}, core_ps, core_out_ps, pe_op_ps: {op: ps},
    seconds, cached}``; cached by :func:`tile_key` under ``cache`` (``None``: no cache),
    one measurement per tile: a process that needs a tile another is measuring waits for
    it (a ``flock`` on ``.<module>-<key>.lock`` beside the entry) and reads its entry; a
    tile without per-op figures to take (no rules) reuses an entry measured with them
    (``base``: :func:`tile_key` without the instructions)."""
    # the SRAM macro only in the liberty of a tile that holds it: a PE or IO tile measured
    # in designs of different memories is one entry
    deps = closure(job.module, mods)
    macros = memory_macros(mods) if "Memory" in deps else {}
    lib_text = liberty.liberty_text(tuple(sorted(macros.values())))
    key = tile_key(job, mods, lib_text, deps=deps)
    base = tile_key(job, mods, lib_text, ops=False, deps=deps)
    hit = Path(cache) / f"{job.module}-{key[:24]}.json" if cache else None
    if hit is None:
        return {**_measure_tile(job, mods, key, lib_text, macros, None), "base": base,
                "cached": False}
    doc = _cached(hit, key)
    if doc is not None:
        return doc
    if not job.ops:
        # a design without rules (no per-op figures) takes any entry of the same tile
        # measured with rules: its other figures are the same measurement
        for other in sorted(hit.parent.glob(f"{job.module}-*.json")):
            try:
                d = json.loads(other.read_text())
            except (OSError, json.JSONDecodeError):
                continue
            if d.get("schema") == SCHEMA and d.get("base") == base:
                return {**d, "key": key, "pe_op_ps": {}, "cached": True}
    # one measurement per tile across processes: a second `cgra rtl` (or test worker) that
    # needs the same tile waits for the first and reads its result
    doc, cached = _entry(hit, key, lambda: {**_measure_tile(job, mods, key, lib_text, macros,
                                                            cache), "base": base}, indent=1)
    return doc if cached else {**doc, "cached": False}


def _cached(hit: Path, key: str) -> dict | None:
    """The cached measurement at ``hit`` when it is one of ``key``."""
    try:
        doc = json.loads(hit.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return {**doc, "cached": True} if doc.get("schema") == SCHEMA and doc.get("key") == key \
        else None


def tile_netlist(mods: dict[str, str], job: TileJob, lib: Path, work: Path,
                 macros: dict[str, tuple[int, int]], cache: Path | None = None
                 ) -> tuple[float, str | None, str, str]:
    """Write the gate netlist of ``job``'s tile into ``work/netlist.v`` (the liberty ``lib``
    beside it): its core synthesised alone (:func:`_core_synthesis`, cached under
    ``cache``), the rest with the core a black box, the two joined. Returns the tile's cell
    area (um^2), the core module, the core's netlist text and its synthesis key (``None``,
    ``""``, ``""`` for a tile without a core). The measurement and the SDF validation (:mod:`garnet.sta.sdf`) time this one
    netlist. Raises :class:`CollateralError` when yosys fails."""
    core_mod = _core_module(mods[job.module])
    if core_mod is None:
        return _synthesise(mods, job, lib, work, macros), None, "", ""
    core_net, core_area, core_key = _core_synthesis(mods, job, core_mod, lib.read_text(),
                                                    macros, cache)
    area = _synthesise(mods, job, lib, work, macros, black=(core_mod,)) + core_area
    with (work / "netlist.v").open("a") as f:
        f.write("\n" + core_net)
    return area, core_mod, core_net, core_key


def _measure_tile(job: TileJob, mods: dict[str, str], key: str, lib_text: str,
                  macros: dict[str, tuple[int, int]], cache: Path | None = None) -> dict:
    """Synthesise and time one tile (:func:`measure_tile`'s document, without ``cached``):
    its core synthesised alone (:func:`_core_synthesis`, cached under ``cache``), the rest
    of the tile with the core as a black box, the two netlists joined for the tile's STA;
    the core's own timing cached likewise (:func:`_core_timing`)."""
    t = time.perf_counter()
    with _scratch(lib_text, "cgra-sta-") as (work, lib):
        area, core_mod, core_net, core_key = tile_netlist(mods, job, lib, work, macros, cache)
        side = math.sqrt(area)
        net = (work / "netlist.v").read_text()
        core_widths = _port_widths(net, core_mod) if core_mod is not None else {}
        classes = _tile_sta(job, work, lib, side, core_widths)
    core_ps, ops = (_core_timing(job, core_mod, core_net, core_key, lib_text, cache)
                    if core_mod is not None else (0.0, {}))
    core_out = max((v for k, v in classes.items() if k.startswith("core_out:")), default=0.0)
    doc = {"schema": SCHEMA, "module": job.module, "tclass": job.tclass, "key": key,
           "area_um2": round(area, 1), "side_um": round(side, 1),
           "classes": {k: v for k, v in classes.items() if not k.startswith("core_out:")},
           "core_ps": core_ps, "core_out_ps": core_out, "pe_op_ps": ops,
           "seconds": round(time.perf_counter() - t, 2)}
    return doc


def _core_timing(job: TileJob, core: str, core_net: str, core_key: str, lib_text: str,
                 cache: Path | None) -> tuple[float, dict]:
    """:func:`_core_sta` of the core netlist ``core_net``, cached under ``<cache>/core/``
    by the core's synthesis key, its routed ports, their load and the rules' instructions
    (a tile of another interconnect around the same core times nothing again)."""
    key = hashlib.sha256(json.dumps(
        [core_key, job.core_inputs, job.core_outputs, job.core_out_fanout, job.ops]
    ).encode()).hexdigest()

    def sta() -> dict:
        with _scratch(lib_text, "cgra-sta-core-") as (work, lib):
            (work / "netlist.v").write_text(core_net)
            worst, ops = _core_sta(job, work, lib, core)
        return {"schema": SCHEMA, "module": core, "key": key, "core_ps": worst,
                "pe_op_ps": ops}

    doc = _core_entry(cache, f"{core}-sta-{key[:24]}.json", key, sta)
    return doc["core_ps"], doc["pe_op_ps"]


# ------------------------------------------------------------------------------ table
def measured_table(results: Iterable[dict], versions: dict[str, str]) -> dict[str, Any]:
    """The delay table (:mod:`canal.timing` format) of the tile measurements ``results``
    (every width they measured), with ``_measured`` recording the tools, the liberty, its
    corner and each tile (module docstring)."""
    results = list(results)
    core: dict[str, float] = {}
    cb: dict[str, float] = {}
    hops: dict[str, dict[str, dict[str, float]]] = {}
    wires: dict[str, dict[str, dict[str, float]]] = {}      # long tracks passing a tile
    reg = 0.0
    ops: dict[str, float] = {}
    notes: list[str] = []
    ready: dict[str, dict[str, float]] = {}     # ready-valid tiles: one hop of a ready chain
    ready_core: dict[str, float] = {}           # ... and a ready chain through a wrapped core
    router: dict[str, float] = {}               # hybrid tiles: the router's clock period
    for r in results:
        tc = r["tclass"]
        core[tc] = max(core.get(tc, 0.0), round(r["core_ps"] + r["core_out_ps"], 2))
        for k, v in r["classes"].items():
            kind, _, rest = k.partition(":")
            if kind == "cb":
                cb[tc] = max(cb.get(tc, 0.0), v)
            elif kind == "reg":
                reg = max(reg, v)
            elif kind == "ready":
                _, w = rest.split(":")
                d = ready.setdefault(tc, {})
                d[w] = max(d.get(w, 0.0), v)
            elif kind == "ready_core":
                ready_core[tc] = max(ready_core.get(tc, 0.0), v)
            elif kind == "router":
                router[tc] = max(router.get(tc, 0.0), v)
            elif kind == "sb" or kind == "pass":
                _, w, pair = rest.split(":")
                d = (hops if kind == "sb" else wires).setdefault(tc, {}).setdefault(w, {})
                d[pair] = max(d.get(pair, 0.0), v)
        if tc == "pe":
            for op, v in r["pe_op_ps"].items():
                ops[op] = max(ops.get(op, 0.0), round(v + r["core_out_ps"], 2))
    sides = ("N", "S", "E", "W")
    for tc, by_w in hops.items():
        for w, d in by_w.items():
            worst = max(d.values())
            for a in sides:
                for b in sides:
                    if a != b and f"{a}->{b}" not in d:
                        d[f"{a}->{b}"] = worst
                        notes.append(f"switch_box_hop[{tc}][{w}][{a}->{b}]: no tile wires "
                                     f"it; took the class's slowest hop ({worst} ps)")
    extra = {"track_wire": {tc: {w: dict(sorted(d.items())) for w, d in sorted(by_w.items())}
                            for tc, by_w in sorted(wires.items())}} if wires else {}
    if ready:
        extra["ready_hop"] = {tc: dict(sorted(d.items())) for tc, d in sorted(ready.items())}
    if ready_core:
        extra["ready_through_core"] = dict(sorted(ready_core.items()))
    if router:
        extra["router"] = dict(sorted(router.items()))
    table = {
        "_about": "Measured: each tile synthesised with yosys onto the project's liberty "
                  f"({liberty.NAME}) and its Canal path classes timed with OpenSTA "
                  "(garnet.sta.measure).",
        "core": dict(sorted(core.items())), "register_mux": reg,
        "connection_box": dict(sorted(cb.items())),
        "switch_box_hop": {tc: {w: dict(sorted(d.items())) for w, d in sorted(by_w.items())}
                           for tc, by_w in sorted(hops.items())},
        "clock_skew": {"mem_to_pe": 0.0, "pe_to_mem": 0.0, "enter_from_north": 0.0,
                       "enter_from_south": 0.0, "pe_to_pe_west_east": 0.0},
        "pe_op_ps": dict(sorted(ops.items())),
        "_measured": {
            "tool": versions.get("sta", "OpenSTA"), "synthesis": versions.get("synthesis", ""),
            "liberty": liberty.NAME, "liberty_source": liberty.CITATION,
            "synthesis_script": SYNTH.split("; write_verilog")[0],
            "corner": dict(liberty.CORNER), "macro": liberty.MACRO_NOTE,
            "derate_late": DERATE_LATE,
            "clock_skew": "0: the generated array has no clock tree in its RTL (ideal clock)",
            "notes": sorted(set(notes)),
            # (no seconds or cache hits here: timing.json is the same bytes cold or warm)
            "tiles": {r["module"]: {"tclass": r["tclass"], "area_um2": r["area_um2"],
                                    "side_um": r["side_um"], "key": r["key"][:16]}
                      for r in sorted(results, key=lambda r: r["module"])},
        },
    }
    # measured wires of long tracks (pass-throughs), when the design has any
    return {**table, **extra}


def measure_design(ic: Any, rtl_dir: Path, cache: Path | None,
                   rules_dir: Path | None = None, jobs: int = 1) -> dict[str, Any]:
    """The measured delay table of a generated design: the interconnect ``ic``, its
    ``rtl/`` and (for per-op PE delays) its ``rules/``; tiles in ``jobs`` threads (each
    runs yosys and OpenSTA as subprocesses)."""
    versions = tool_versions()
    mods = modules(Path(rtl_dir))
    insts = rule_instructions(rules_dir, Path(rtl_dir).parent / "pe.json") \
        if rules_dir is not None and Path(rules_dir).is_dir() else {}
    rv = rv_tile_modules(mods) if flow_of(ic.graphs).ready_valid else None
    todo = tile_jobs(ic, insts, rv)
    missing = [j.module for j in todo if j.module not in mods]
    if missing:
        raise CollateralError(f"{rtl_dir}: no Verilog for tile module {missing[0]}")
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        results = list(pool.map(lambda j: measure_tile(j, mods, cache), todo))
    return measured_table(results, versions)


__all__ = ["measure_design", "measure_tile", "measured_table", "tile_jobs", "TileJob",
           "tile_netlist",
           "rule_instructions", "tool_versions", "SCHEMA"]


def model_hash() -> str:
    """sha256 of what a measured model depends on besides the RTL: the source of the
    measurement, the path enumeration and the liberty writer (part of the interconnect key
    of a ``timing = "measured"`` design, :func:`garnet.build.spec_hashes`)."""
    here = Path(__file__).resolve().parent
    parts = [(here / n).read_bytes() for n in ("measure.py", "liberty.py", "verilog.py")]
    parts.append((here.parents[1] / "canal" / "timing_paths.py").read_bytes())
    return hashlib.sha256(b"measured\0" + b"\0".join(parts)).hexdigest()
