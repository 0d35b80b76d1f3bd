"""Yosys cell counts of a design's tile modules: the per-module synthesis and its cache.

Each tile module (``Tile_*`` in a design's ``rtl/``) is synthesised on its own with yosys
(``synth -flatten -top <tile>; abc -fast; stat``, see :data:`SCRIPT`) and its cell count per
yosys internal cell type is cached under ``<cache>/<module>-<sha256 of the module's Verilog
and its sub-modules>.json``, so a tile shared by several designs is synthesised once. The
SRAM macro (``Memory``) is a black box (a behavioural 2048 x 16 array would become 32 K
flip-flops). :data:`CELL_WEIGHTS` gives each yosys cell type a relative area in NAND2
equivalents (NanGate 45 nm X1 areas, :mod:`garnet.sta.liberty`).

A reader of a generated design's RTL (collateral), with no hardware generator behind it: the
area proxy (:mod:`dse.area`) and the mapper's energy estimate (:mod:`mapper.sim.energy`) use
it.
"""
from __future__ import annotations

import hashlib
import json
import re
import subprocess
import tempfile
import time
from itertools import product
from pathlib import Path

from cgra.errors import CollateralError
from cgra.lock import cache_entry_lock, write_entry
from cgra.procs import pdeathsig_preexec
from garnet.sta import liberty
from garnet.sta.verilog import closure, flatten_packed, hoist_automatic, modules


def tile_sites(design: Path) -> dict[tuple[int, int], str]:
    """(x, y) -> the module of tile instance ``Tile_X<xx>_Y<yy>`` in the top module of
    ``design`` (``design.json`` ``top`` in ``rtl/``; :func:`canal.rtl.tile_instance_name`).
    Raises :class:`CollateralError` when the top module has no tile instance."""
    design = Path(design)
    doc = json.loads((design / "design.json").read_text())
    top = modules(design / "rtl")[doc["top"]]
    out = {(int(m[2], 16), int(m[3], 16)): m[1] for m in re.finditer(
        r"^\s*(Tile_[\w$]+)\s+Tile_X([0-9A-F]{2})_Y([0-9A-F]{2})\s*\(", top, re.M)}
    if not out:
        raise CollateralError(f"{design}/rtl: top module {doc['top']} has no tile instance "
                              f"Tile_X<xx>_Y<yy>; regenerate the design with `cgra rtl`")
    return out


def tile_modules(design: Path) -> dict[str, int]:
    """Tile module name -> number of instances in the top module of ``design`` (its
    ``design.json`` ``top`` in ``rtl/``)."""
    design = Path(design)
    doc = json.loads((design / "design.json").read_text())
    top = modules(design / "rtl")[doc["top"]]
    counts: dict[str, int] = {}
    for m in re.finditer(r"^\s*(Tile_[\w$]+)\s+[A-Za-z_][\w$]*\s*\(", top, re.M):
        counts[m[1]] = counts.get(m[1], 0) + 1
    return counts


class UnknownCellError(CollateralError):
    """A yosys ``stat`` of a tile lists a cell type with no weight in :data:`CELL_WEIGHTS`
    (a yosys version or a synthesis script emitting cells this table does not know)."""

#: yosys script per tile (``{files}``, ``{top}``): a generic gate-level synthesis with the
#: fast ABC mapping; ``stat`` counts the cells
SCRIPT = ("read_verilog -sv {files}; hierarchy -top {top}; blackbox Memory; "
          "synth -flatten -noabc -top {top}; abc -fast; opt_clean; tee -o stat.txt stat")
AREA_SCHEMA = "dse.area/1"
#: revision of the Verilog rewriting for yosys (:func:`flatten_packed`,
#: :func:`hoist_automatic`), part of every cache key: revision 2 rewrites element selects
#: whose index holds a bit range (``x[a[3:2] == 2'h1]``, read as a bit range by revision 1)
#: and nested element selects (``y[x[s][0]]``, rejected by yosys in revision 1), so counts
#: cached by revision 1 are not reused
REWRITE_REVISION = 2


# ----------------------------------------------------------------------------- cell weights
#: Cell areas (um^2) of the NanGate 45 nm X1 cells, owned by :mod:`garnet.sta.liberty`
#: (provenance there), used to weigh the yosys cells.
NANGATE45_X1_UM2 = liberty.NANGATE45_X1_UM2


#: Leakage power (nW) of the same NanGate 45 nm X1 cells: the liberty ``cell_leakage_power``
#: (the state-averaged leakage; ``leakage_power_unit : "1nW"``) of
#: ``NangateOpenCellLibrary_typical.lib`` (NanGate FreePDK45 Open Cell Library, release
#: PDKv1.3_v2010_12, characterization corner "typical": TypTyp process, 1.10 V, 25 C), quoted
#: per cell, not read from a file. A published library's figures used as the leakage of the
#: project's cells: a model (the project's liberty is a 65 nm logical-effort model at 1.0 V,
#: :mod:`garnet.sta.liberty`; these are 45 nm figures at 1.1 V, not rescaled).
NANGATE45_X1_LEAKAGE_NW: dict[str, float] = {
    "INV": 14.353185, "BUF": 21.438247, "NAND2": 17.39336, "NOR2": 21.199545,
    "AND2": 25.066064, "OR2": 22.694975, "XOR2": 36.163718, "XNOR2": 36.441009,
    "AOI21": 27.858395, "OAI21": 22.619394, "AOI22": 32.611944, "OAI22": 34.026125,
    "MUX2": 35.92839, "TBUF": 32.749437, "DLH": 40.86324, "DFF": 79.112308,
    "DFFR": 86.21278, "DFFS": 84.395957, "DFFRS": 100.161505, "NAND3": 18.104768,
    "NOR3": 26.831667,
}
#: the source of :data:`NANGATE45_X1_LEAKAGE_NW`, as the energy table cites it
LEAKAGE_SOURCE = ("NanGate FreePDK45 Open Cell Library (PDKv1.3_v2010_12), "
                  "NangateOpenCellLibrary_typical.lib, cell_leakage_power of the X1 cells "
                  "(typical corner: TypTyp, 1.10 V, 25 C; unit 1 nW)")


def _eq(*cells: str) -> float:
    """Area of a composition of NanGate X1 cells, in NAND2_X1 equivalents (3 decimals)."""
    return round(sum(NANGATE45_X1_UM2[c] for c in cells) / NANGATE45_X1_UM2["NAND2"], 3)


def _leak(*cells: str) -> float:
    """Leakage of a composition of NanGate X1 cells, nW (3 decimals)."""
    return round(sum(NANGATE45_X1_LEAKAGE_NW[c] for c in cells), 3)


def _family(prefix: str, slots: str, comp: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Every ``$_<prefix>_<letters>_`` name of a flip-flop / latch family: ``slots`` has a
    ``p`` per polarity letter (N/P) and a ``v`` per reset-value letter (0/1); each maps to
    the NanGate composition ``comp``."""
    names = [""]
    for slot in slots:
        names = [n + c for n, c in product(names, "NP" if slot == "p" else "01")]
    return {f"$_{prefix}_{n}_": comp for n in names}


#: The NanGate 45 nm X1 realisation of every yosys internal (``simcells``) cell type. A cell
#: without a NanGate counterpart is its cheapest composition of NanGate cells: ANDNOT = INV +
#: NOR2, ORNOT = INV + NAND2, NMUX = MUX2 + INV, MUX4/8/16 = trees of 3/7/15 MUX2, an enable =
#: a MUX2 feeding D back, a synchronous reset/set = an AND2/OR2 on D, an async load = DFFRS + 2
#: NAND2 + INV (set/reset from AD). Signal *polarities* (``N``/``P`` letters, reset value
#: 0/1) cost nothing: the inverter of a clock, enable or reset net is shared by every cell on
#: that net. Covers every ``$_*_`` cell of yosys 0.23's ``simcells.v`` (all that ``synth
#: -noabc; abc`` can leave), plus the black-boxed SRAM macro ``Memory`` as no cell (its bits
#: are ``sram_bits``).
CELL_COMPOSITION: dict[str, tuple[str, ...]] = {
    "$_BUF_": ("BUF",), "$_NOT_": ("INV",),
    "$_AND_": ("AND2",), "$_NAND_": ("NAND2",), "$_OR_": ("OR2",), "$_NOR_": ("NOR2",),
    "$_XOR_": ("XOR2",), "$_XNOR_": ("XNOR2",),
    "$_ANDNOT_": ("INV", "NOR2"), "$_ORNOT_": ("INV", "NAND2"),
    "$_MUX_": ("MUX2",), "$_NMUX_": ("MUX2", "INV"),
    "$_MUX4_": ("MUX2",) * 3, "$_MUX8_": ("MUX2",) * 7, "$_MUX16_": ("MUX2",) * 15,
    "$_AOI3_": ("AOI21",), "$_OAI3_": ("OAI21",),
    "$_AOI4_": ("AOI22",), "$_OAI4_": ("OAI22",),
    "$_TBUF_": ("TBUF",),
    **_family("SR", "pp", ("NOR2", "NOR2")),
    "$_FF_": ("DFF",),
    **_family("DFF", "p", ("DFF",)),
    **_family("DFF", "ppv", ("DFFR",)),
    **_family("DFFE", "pp", ("DFF", "MUX2")),
    **_family("DFFE", "ppvp", ("DFFR", "MUX2")),
    **_family("ALDFF", "pp", ("DFFRS", "NAND2", "NAND2", "INV")),
    **_family("ALDFFE", "ppp", ("DFFRS", "NAND2", "NAND2", "INV", "MUX2")),
    **_family("DFFSR", "ppp", ("DFFRS",)),
    **_family("DFFSRE", "pppp", ("DFFRS", "MUX2")),
    **_family("SDFF", "ppv", ("DFF", "AND2")),
    **_family("SDFFE", "ppvp", ("DFF", "AND2", "MUX2")),
    **_family("SDFFCE", "ppvp", ("DFF", "AND2", "MUX2")),
    **_family("DLATCH", "p", ("DLH",)),
    **_family("DLATCH", "ppv", ("DLH", "AND2")),
    **_family("DLATCHSR", "ppp", ("DLH", "AND2", "OR2")),
    "Memory": (),
}
#: Relative area per yosys cell type, in NAND2 equivalents (NAND2 = 1.0): its NanGate
#: composition (:data:`CELL_COMPOSITION`, areas :data:`NANGATE45_X1_UM2`) divided by NAND2_X1
#: (0.798 um^2).
CELL_WEIGHTS: dict[str, float] = {c: _eq(*comp) for c, comp in CELL_COMPOSITION.items()}
#: Leakage per yosys cell type, nW: the sum of its NanGate composition's cell leakage
#: (:data:`NANGATE45_X1_LEAKAGE_NW`, a model; source :data:`LEAKAGE_SOURCE`).
CELL_LEAKAGE_NW: dict[str, float] = {c: _leak(*comp) for c, comp in CELL_COMPOSITION.items()}


def leakage_nw(cell_types: dict[str, int], module: str = "?") -> float:
    """Leakage of a synthesised module, nW: the sum over its cell types of count x
    :data:`CELL_LEAKAGE_NW` (``cell_types`` as :func:`tile_cells` returns; rounded to 0.001;
    a model, :data:`LEAKAGE_SOURCE`). Raises :class:`UnknownCellError` naming the cell and
    ``module`` for a type without a figure."""
    total = 0.0
    for cell, n in sorted(cell_types.items()):
        w = CELL_LEAKAGE_NW.get(cell)
        if w is None:
            raise UnknownCellError(
                f"tile {module}: yosys cell type {cell} ({n}x) has no leakage figure in "
                "garnet.cells.CELL_COMPOSITION; add its NanGate composition there")
        total += n * w
    return round(total, 3)


def nand2_area(cell_types: dict[str, int], module: str = "?") -> float:
    """Area of a synthesised module in NAND2 equivalents: the sum over its cell types of
    count x :data:`CELL_WEIGHTS` weight (``cell_types``: yosys ``stat`` type -> count, as
    :func:`tile_cells` returns; rounded to 0.001). Raises :class:`UnknownCellError` naming
    the cell and ``module`` for a type without a weight (never counted as 0)."""
    total = 0.0
    for cell, n in sorted(cell_types.items()):
        w = CELL_WEIGHTS.get(cell)
        if w is None:
            raise UnknownCellError(
                f"tile {module}: yosys cell type {cell} ({n}x) has no area weight in "
                "dse.area.CELL_WEIGHTS; add its NAND2-equivalent weight there")
        total += n * w
    return round(total, 3)

def tile_cells(design: Path, module: str, cache: Path, timeout: float = 1800) -> dict:
    """``{module, cells, cell_types, nand2, key, seconds, cached}`` of one tile module of
    ``design`` (module docstring): ``cells`` the yosys cell count, ``cell_types`` the count
    per cell type, ``nand2`` the area in NAND2 equivalents (:func:`nand2_area`, derived from
    ``cell_types`` on every call, so cache entries written before it existed get it too);
    cached under ``cache`` by Verilog hash. Raises :class:`UnknownCellError` for a cell type
    without a weight, ``CollateralError`` when yosys fails."""
    mods = modules(Path(design) / "rtl")
    if module not in mods:
        raise CollateralError(f"{design}/rtl: no module {module}")
    return synth_cells(mods, module, cache, str(design), timeout)


def synth_cells(mods: dict[str, str], module: str, cache: Path, where: str = "?",
                timeout: float = 1800) -> dict:
    """:func:`tile_cells` of module ``module`` of the Verilog texts ``mods`` (module name ->
    text, as :func:`garnet.sta.verilog.modules` reads them; ``where`` names them in
    errors): yosys with :data:`SCRIPT` over ``module`` and the modules it instantiates, the
    SRAM macro ``Memory`` a black box; cached under ``cache`` by the hash of those texts."""
    deps = closure(module, mods)
    key = hashlib.sha256(json.dumps([SCRIPT, REWRITE_REVISION] + [mods[d] for d in deps])
                         .encode()).hexdigest()
    cache = Path(cache)
    hit = cache / f"{module}-{key[:20]}.json"
    doc = _cached_cells(hit, key)
    if doc is not None:
        return {**doc, "nand2": nand2_area(doc["cell_types"], module), "cached": True}
    # one synthesis per tile across processes (sweeps and test workers share the cache): a
    # second process waits on the entry's lock and reads what the first wrote (the kernel
    # releases the lock if the holder dies)
    with cache_entry_lock(hit):
        doc = _cached_cells(hit, key)
        if doc is not None:
            return {**doc, "nand2": nand2_area(doc["cell_types"], module), "cached": True}
        doc = _synth_cells(mods, module, deps, key, where, timeout)
        # the counts are cached even when a cell type has no weight
        write_entry(hit, json.dumps(doc, indent=1) + "\n")
    return {**doc, "nand2": nand2_area(doc["cell_types"], module), "cached": False}


def _cached_cells(hit: Path, key: str) -> dict | None:
    """The cached cell counts at ``hit`` when they are of ``key``."""
    try:
        doc = json.loads(hit.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return doc if doc.get("key") == key and "cell_types" in doc else None


def _synth_cells(mods: dict[str, str], module: str, deps: list[str], key: str, where: str,
                 timeout: float) -> dict:
    """One yosys run of :func:`synth_cells` (its document, without ``nand2`` / ``cached``)."""
    t = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dse-area-") as tmp:
        files = []
        for d in deps:
            if d == "Memory":
                continue
            p = Path(tmp) / f"{d}.v"
            p.write_text(flatten_packed(hoist_automatic(mods[d])))
            files.append(p.name)
        stub = Path(tmp) / "Memory_stub.v"
        if "Memory" in deps:
            m = re.search(r"module\s+Memory\s*\((.*?)\);", mods["Memory"], re.S)
            stub.write_text(f"(* blackbox *) module Memory({m[1] if m else ''});\nendmodule\n")
            files.append(stub.name)
        script = SCRIPT.format(files=" ".join(files), top=module)
        res = subprocess.run(["yosys", "-q", "-p", script], cwd=tmp, capture_output=True,
                             text=True, timeout=timeout,
                             preexec_fn=pdeathsig_preexec())    # dies with the worker
        stat = (Path(tmp) / "stat.txt").read_text() if res.returncode == 0 else ""
    if res.returncode != 0:
        err = (res.stderr or res.stdout).strip().splitlines()
        raise CollateralError(f"yosys failed on tile {module} of {where}: "
                              f"{err[-1] if err else res.returncode}")
    cells, types = _parse_stat(stat)
    return {"schema": AREA_SCHEMA, "module": module, "cells": cells, "cell_types": types,
            "key": key, "seconds": round(time.perf_counter() - t, 3)}


# ----------------------------------------------------------------- boundary isolation (AHA)
#: ports of a tile that are no data input of its power domain: the clock, reset, run
#: enable and flush nets and the config bus belong to the always-on part (canal.rtl)
ALWAYS_ON_PORTS = frozenset({"CLK", "RESET", "clk_en", "flush", "config_addr", "config_data",
                             "config_write", "config_read", "tile_id"})
#: the isolation signal the variants add to a tile (1 = the neighbouring domains are off)
ISO = "iso_in"
_PORT_LINE = re.compile(r"^\s*(input|output|inout)?\s*(\[(\d+):(\d+)\])?\s*(\w+)\s*,?\s*$")
_MUX_INST = re.compile(r"^(\s*)CanalMux_h(\d+)_w\d+\s+\w+\s*\((.*?)\);", re.S | re.M)
_CLAMP = re.compile(r"^module\s+(CanalClamp_w(\d+))\s*\(")


def data_inputs(text: str) -> dict[str, int]:
    """Input port -> bits of a module's header (the CIRCT style of the generated RTL: one
    port per line, a line without direction or range continuing the previous one), except
    :data:`ALWAYS_ON_PORTS`: the data inputs of the tile's power domain."""
    head = text[text.index("(") + 1:text.index(");")]
    out: dict[str, int] = {}
    dirn, bits = "", 1
    for line in head.splitlines():
        m = _PORT_LINE.match(line)
        if m is None:
            continue
        if m[1]:
            dirn, bits = m[1], 1
        if m[2]:
            bits = abs(int(m[3]) - int(m[4])) + 1
        if dirn == "input" and m[5] not in ALWAYS_ON_PORTS:
            out[m[5]] = bits
    return out


def _with_iso_port(text: str, module: str, name: str) -> str:
    """``text`` of ``module`` renamed ``name`` with a 1-bit input :data:`ISO` first."""
    return re.sub(rf"^module\s+{re.escape(module)}\s*\(", f"module {name}(\n  input {ISO},",
                  text, count=1, flags=re.M)


def _isolate(text: str, ports: dict[str, int]) -> str:
    """``text`` (a module with the :data:`ISO` input) with each of ``ports`` (name -> bits)
    renamed ``<port>__raw`` in the header and ANDed with ``~iso_in`` under its own name."""
    head_end = text.index(");") + 2
    head, body = text[:head_end], text[head_end:]
    for p in ports:
        head = re.sub(rf"\b{p}\b", f"{p}__raw", head)
    decl = "".join(f"\n  wire [{b - 1}:0] {p} = {p}__raw & {{{b}{{~{ISO}}}}};"
                   for p, b in ports.items())
    return head + decl + body


def explicit_isolation(text: str, module: str, name: str) -> str:
    """Module ``name``: ``module`` with an isolation cell on every bit of every data input
    (:func:`data_inputs`): the input ANDed with ``~iso_in`` (the AND-type isolation cell
    of a power-gated domain's inputs) before any use."""
    return _isolate(_with_iso_port(text, module, name), data_inputs(text))


def mux_isolation(text: str, module: str, name: str) -> tuple[str, int, int]:
    """Module ``name``: ``module`` whose every ``CanalMux`` with a fan-in from a data input
    (a switch- or connection-box mux at the domain boundary) has its select forced to all
    ones by ``iso_in`` (``S | {n{iso_in}}``: an out-of-range select, 0, for a fan-in that is
    not a power of two, the highest input otherwise): AHA §4.3's isolation through the
    existing muxes; data inputs that feed no mux get an explicit AND cell. Returns
    ``(text, muxes forced, inputs isolated explicitly)``."""
    ins = data_inputs(text)
    fed: set[str] = set()
    forced = 0

    def force(m: re.Match) -> str:
        nonlocal forced
        conns = dict(re.findall(r"\.(\w+)\s*\(([^()]*(?:\([^()]*\))?[^()]*)\)", m[3]))
        srcs = {v.strip() for k, v in conns.items() if re.fullmatch(r"I\d+", k)}
        hit = srcs & set(ins)
        if not hit or "S" not in conns:
            return m[0]
        fed.update(hit)
        forced += 1
        sw = (int(m[2]) - 1).bit_length()
        sel = conns["S"].strip()
        return m[0].replace(f"({sel})", f"(({sel}) | {{{sw}{{{ISO}}}}})", 1)

    body = _MUX_INST.sub(force, text)
    rest = {p: b for p, b in ins.items() if p not in fed}
    return _isolate(_with_iso_port(body, module, name), rest), forced, len(rest)


def isolation_overhead(mods: dict[str, str], module: str, cache: Path, where: str = "?"
                       ) -> dict:
    """Boundary-isolation cost of tile ``module`` (AHA paper §4.3: isolation cells at every
    input of a power domain cost 9 % of the tile, isolation through the existing switch- and
    connection-box muxes 1 %), from yosys cell counts (:func:`synth_cells`) of four variants:

    * ``none``: the tile with its output clamps (``CanalClamp_w*``) bypassed: no isolation;
    * ``clamp``: the tile as generated: its outputs clamped to 0 while gated (this project's
      scheme, :mod:`canal.rtl`);
    * ``explicit``: ``none`` plus an isolation cell on every data input bit
      (:func:`explicit_isolation`);
    * ``mux``: ``none`` with the select of every boundary mux forced by ``iso_in``
      (:func:`mux_isolation`).

    Returns ``{module, data_input_bits, muxes_forced, inputs_explicit, variants: {name:
    {cells, nand2}}, overhead_pct: {clamp, explicit, mux: {cells, nand2}}}`` with overhead =
    (variant - none) / none x 100."""
    base = dict(mods)
    for m_name, text in mods.items():
        c = _CLAMP.match(text)
        if c:                   # the clamp as a wire: O = I
            w = int(c[2])
            base[m_name] = (f"module {m_name}(input [{w - 1}:0] I, input gate, "
                            f"output [{w - 1}:0] O);\n  assign O = I;\nendmodule\n")
    text = mods[module]
    variants = {"none": (base, module), "clamp": (mods, module)}
    exp = explicit_isolation(text, module, f"{module}__iso_explicit")
    mux, forced, rest = mux_isolation(text, module, f"{module}__iso_mux")
    variants["explicit"] = ({**base, f"{module}__iso_explicit": exp}, f"{module}__iso_explicit")
    variants["mux"] = ({**base, f"{module}__iso_mux": mux}, f"{module}__iso_mux")
    counts = {}
    for v, (ms, top) in variants.items():
        r = synth_cells(ms, top, cache, where)
        counts[v] = {"cells": r["cells"], "nand2": r["nand2"]}
    none = counts["none"]
    return {"module": module, "data_input_bits": sum(data_inputs(text).values()),
            "muxes_forced": forced, "inputs_explicit": rest, "variants": counts,
            "overhead_pct": {v: {k: round(100 * (counts[v][k] - none[k]) / none[k], 3)
                                 for k in ("cells", "nand2")}
                             for v in ("clamp", "explicit", "mux")}}


def _parse_stat(log: str) -> tuple[int, dict[str, int]]:
    """Cell count and cells by type of the last ``stat`` block of a yosys log."""
    block = log[log.rfind("Number of cells:"):]
    m = re.match(r"Number of cells:\s+(\d+)", block)
    if m is None:
        raise CollateralError("yosys stat printed no cell count")
    types: dict[str, int] = {}
    for line in block.splitlines()[1:]:
        tm = re.match(r"\s+(\S+)\s+(\d+)\s*$", line)
        if tm:
            types[tm[1]] = int(tm[2])
        elif line.strip() and not line.startswith(" "):
            break
    return int(m[1]), types


__all__ = ["AREA_SCHEMA", "CELL_COMPOSITION", "CELL_LEAKAGE_NW", "CELL_WEIGHTS",
           "LEAKAGE_SOURCE", "NANGATE45_X1_LEAKAGE_NW", "REWRITE_REVISION", "SCRIPT",
           "UnknownCellError", "data_inputs", "explicit_isolation", "isolation_overhead",
           "leakage_nw", "mux_isolation", "nand2_area", "synth_cells", "tile_cells",
           "tile_modules", "tile_sites"]
