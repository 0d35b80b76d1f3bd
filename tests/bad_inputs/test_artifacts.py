"""(issue 42, item 2) Every artifact is checked where it is read: a corrupted placement,
routing or bitstream of a real run is refused by every command that reads it with exit 2 and
one line naming the file, the item (instance, site and tile tag; net, sink and node; line and
address) and the fix, and changes no file; the good artifact still passes.

* placement.json (`cgra route`): sites on the array, on a tile whose tag takes the instance,
  one instance per site that holds one;
* routing.json (`cgra pipeline`): every net present, every node in the routing graph of its
  width, every path connected from its net's source to its sink;
* ``<app>.bs`` (`cgra verify`): every word writes a config field of the config map, each
  instance's core config goes to a tile of its kind;
* `cgra sim` runs the ``<app>.bs`` itself, refusing one that differs from bitstream.json or
  does not parse, and removes the previous simulation's outputs before running a harness.

One gaussian run (32x32, the smallest app with PEs, MEMs, IOs and registers) on the 8x8
design of configs/small.toml, shared with the end-to-end tests; the commands run in-process
through :func:`cgra.cli.main` (the console entry point's wrapper), no Verilator build."""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from bad_support import snapshot
from cgra.errors import CgraError
from mapper import stages as st
from mapper.backend.bitstream import generate, register_masks
from mapper.backend.pipeline import pipeline
from mapper.backend.route import route_design
from mapper.collateral import load_collateral
from mapper.flow import run_stages
from mapper.params import AppParams, RunParams
from mapper.sim import verilator
from mapper.sim.run import SIM_FILES, proved_flow

APP = "gaussian"


# ---------------------------------------------------------------------------- fixtures
# small_design: tests/bad_inputs/conftest.py (configs/small.toml, shared with the e2e tests)
@pytest.fixture(scope="module")
def good_run(small_design, tmp_path_factory) -> Path:
    """The run directory of gaussian (32x32) through the bitstream stage."""
    out = tmp_path_factory.mktemp("artifacts") / APP
    run_stages(RunParams(AppParams(APP, 32, 32, vectors=10), small_design, out),
               until="bitstream")
    return out


@pytest.fixture(scope="module")
def coll(small_design):
    return load_collateral(small_design)


@pytest.fixture
def run(good_run, tmp_path) -> Path:
    """A copy of the good run directory to corrupt."""
    d = tmp_path / "run"
    shutil.copytree(good_run, d)
    return d


@pytest.fixture
def cgra(cgra):
    """``cgra(*args) -> (exit status, last stderr line, stderr)``: the command line in-process
    (the shared ``cgra`` fixture of tests/conftest.py)."""
    def call(*args) -> tuple[int, str, str]:
        code, _out, err = cgra(*args)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        return code, (lines[-1] if lines else ""), err
    return call


def refused(cgra, run: Path, args: list, words: list[str]) -> str:
    """Run ``args``: exit 2, one ``error:`` line holding every one of ``words``, no traceback,
    no file of ``run`` added, removed or changed. Returns the line."""
    before = snapshot(run)
    code, line, err = cgra(*args)
    assert code == 2, err
    assert "Traceback" not in err
    assert line.startswith("error: "), err
    for w in words:
        assert w in line, (w, line)
    assert snapshot(run) == before
    return line


def _edit_json(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc, indent=1) + "\n")


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("".join(f"{ln}\n" for ln in lines))


# ---------------------------------------------------------------------------- good
@pytest.mark.good_input
@pytest.mark.parametrize("command", ["route", "pipeline", "bitstream", "verify"])
def test_the_good_artifacts_pass(cgra, run, small_design, command):
    args = [command, small_design, run / f"{APP}.bs"] if command == "verify" else [command, run]
    code, _line, err = cgra(*args)
    assert code == 0, err


@pytest.mark.good_input
def test_the_good_run_passes_the_checks_before_simulation(run, coll):
    """What `cgra sim` checks before the harness: placement, routing, the .bs against
    bitstream.json and the config map, the proof."""
    flow, proof = proved_flow(run, coll, lambda _m: None, {})
    assert flow.bitstream.to_text() == (run / f"{APP}.bs").read_text()
    assert proof.nets == len(flow.pipelined.routing.nets)


# ---------------------------------------------------------------------------- placement
def _sites(run: Path) -> tuple[dict[str, list[int]], dict[str, str]]:
    doc = json.loads((run / "placement.json").read_text())
    tags = {n: i["tag"] for n, i in json.loads((run / "packed.json").read_text())
            ["instances"].items()}
    return doc["sites"], tags


def _free(coll, sites, tag: str) -> tuple[int, int]:
    used = {tuple(xy) for xy in sites.values()}
    return next(xy for xy, t in sorted(coll.tiles.items()) if t.tag == tag and xy not in used)


@pytest.mark.parametrize("case", [
    pytest.param("PE on an IO tile", marks=pytest.mark.bad_silent),
    pytest.param("MEM on a PE tile", marks=pytest.mark.bad_silent),
    pytest.param("two PEs on one site", marks=pytest.mark.bad_silent),
    pytest.param("PE off the array", marks=pytest.mark.bad_traceback)])
def test_a_bad_placement_is_refused(cgra, run, coll, case):
    sites, tags = _sites(run)
    pes = [n for n in sites if tags[n] == "p"]
    if case == "PE on an IO tile":
        inst, site, words = pes[0], _free(coll, sites, "I"), ["tag 'I'", "holds no PE"]
    elif case == "MEM on a PE tile":
        inst = next(n for n in sites if tags[n] == "m")
        site, words = _free(coll, sites, "p"), ["(MEM, tag 'm')", "tag 'p'", "holds no MEM"]
    elif case == "two PEs on one site":
        inst, site = pes[1], tuple(sites[pes[0]])
        words = [pes[0], "(PE, tag 'p') are both placed", "holds 1 PE"]
    else:
        inst, site, words = pes[0], (8, 3), ["off the 8x8 array (x 0..7, y 0..7)"]
    _edit_json(run / "placement.json", lambda d: d["sites"].__setitem__(inst, list(site)))
    refused(cgra, run, ["route", run], [f"{run / 'placement.json'}: ", inst,
                                        f"site ({site[0]}, {site[1]})", *words,
                                        f"run `cgra place {run}` again"])


# ---------------------------------------------------------------------------- routing
def _long_path(doc, rg) -> tuple[dict, dict, int]:
    """A net of a routing document, one of its paths from a core port to a core port, and a
    step ``k`` of it whose neighbours are not joined by an edge of the graph ``rg``."""
    return next((n, p, k) for n in doc["nets"] for p in n["paths"]
                if p["nodes"][0].startswith("PORT:") and p["nodes"][-1].startswith("PORT:")
                for k in range(1, len(p["nodes"]) - 1)
                if not rg.has_edge(p["nodes"][k - 1], p["nodes"][k + 1]))


ROUTING_CASES = {
    "unknown node": (lambda n, p, k: p["nodes"].__setitem__(k, "SB:16:9:9:NORTH:0:OUT"),
                     ["node SB:16:9:9:NORTH:0:OUT (step {k} of the path to sink",
                      "is not a node of the 16-bit routing graph"]),
    "missing net": (None, ["of the packed design", "is not routed"]),
    "path not connected": (lambda n, p, k: p["nodes"].pop(k),
                           ["is not connected: no edge", "(steps {j} and {k})"]),
    "path off its source": (lambda n, p, k: p["nodes"].pop(0),
                            ["starts at", "not at the net's source"]),
    "path short of its sink": (lambda n, p, k: p["nodes"].pop(),
                               ["ends at", "not at the sink's node PORT:"]),
    "sink without a path": (lambda n, p, k: n["paths"].remove(p),
                            ["has no path to its sink"]),
}


@pytest.mark.parametrize("case", [
    pytest.param(c, marks=pytest.mark.bad_traceback if c in ("unknown node", "missing net")
                 else pytest.mark.bad_silent) for c in ROUTING_CASES])
def test_a_bad_routing_is_refused(cgra, run, coll, case):
    change, words = ROUTING_CASES[case]
    doc = json.loads((run / "routing.json").read_text())
    net, path, k = _long_path(doc, coll.graphs[16])
    if change is None:
        doc["nets"].remove(net)
    else:
        change(net, path, k)
    (run / "routing.json").write_text(json.dumps(doc, indent=1) + "\n")
    refused(cgra, run, ["pipeline", run],
            [f"{run / 'routing.json'}: net {net['name']}",
             *(w.format(j=k - 1, k=k) for w in words), f"run `cgra route {run}` again"])


# ---------------------------------------------------------------------------- bitstream
def _pe_tile(coll, run: Path) -> tuple[int, int]:
    sites, tags = _sites(run)
    return tuple(next(xy for n, xy in sites.items() if tags[n] == "p"))


@pytest.mark.bad_silent
def test_a_word_for_an_address_no_tile_has_is_refused(cgra, run, small_design):
    bs = run / f"{APP}.bs"
    lines = _lines(bs)
    _write_lines(bs, [*lines, "00000909 00000001"])
    refused(cgra, run, ["verify", small_design, bs],
            [f"{bs} line {len(lines) + 1}: address 00000909 (tile (9, 9), feature 0, register 0)",
             "belongs to no config field of the config map: tile (9, 9) is off the 8x8 array",
             "regenerate it (`cgra bitstream`)"])


@pytest.mark.bad_silent
def test_a_word_for_a_register_the_tile_lacks_is_refused(cgra, run, coll, small_design):
    x, y = _pe_tile(coll, run)
    bs = run / f"{APP}.bs"
    lines = _lines(bs)
    _write_lines(bs, [*lines, f"0500{x:02X}{y:02X} 00000000"])
    refused(cgra, run, ["verify", small_design, bs],
            [f"{bs} line {len(lines) + 1}: address 0500{x:02X}{y:02X}",
             f"tile ({x}, {y}) (tag 'p', core ", "has no config register 5 in feature 0"])


@pytest.mark.bad_silent
def test_data_outside_the_fields_of_its_register_is_refused(cgra, run, coll, small_design):
    bs = run / f"{APP}.bs"
    lines = _lines(bs)
    words = [(int(a, 16), int(d, 16)) for a, d in (ln.split() for ln in lines)]
    masks = register_masks(coll, {a for a, _ in words})
    k, (a, d) = next((k, w) for k, w in enumerate(words) if masks[w[0]] != 0xFFFFFFFF)
    extra = (~masks[a] & 0xFFFFFFFF) & -(~masks[a] & 0xFFFFFFFF)     # its lowest free bit
    lines[k] = f"{a:08X} {d | extra:08X}"
    _write_lines(bs, lines)
    refused(cgra, run, ["verify", small_design, bs],
            [f"{bs} line {k + 1}: data {d | extra:08X} at address {a:08X}",
             f"sets bits {extra:08X} that no config field of the register holds"])


@pytest.mark.bad_silent
def test_a_missing_core_config_is_refused(cgra, run, coll, small_design):
    """The interconnect proof does not see cores: the structure check does."""
    x, y = _pe_tile(coll, run)
    bs = run / f"{APP}.bs"
    _write_lines(bs, [ln for ln in _lines(bs) if not ln.startswith(f"0000{x:02X}{y:02X} ")])
    refused(cgra, run, ["verify", small_design, bs],
            [f"{bs}: PE ", f"at tile ({x}, {y}): its core config register 0 (address "
             f"0000{x:02X}{y:02X}) is not written"])


@pytest.mark.bad_silent
def test_a_pe_configured_on_an_io_tile_is_refused(cgra, run, coll, small_design):
    """The issue's case: a PE placed on an IO tile, routed, pipelined and its bitstream
    written by the library functions (the commands refuse its placement now) was proved."""
    packed = st.load_packed(run, coll)
    pl = st.load_placement(run, coll, packed)
    io = _free(coll, pl.sites, "I")
    nets_of = packed.nets_of()
    for inst in (n for n, i in packed.instances.items() if i.tag == "p"
                 and sum(1 for net in nets_of[n] if net.source[0] != n) == 1):
        bad = dataclasses.replace(pl, sites={**pl.sites, inst: io})
        try:
            pr = pipeline(packed, bad, route_design(packed, bad, coll), coll)
        except CgraError:       # this PE's ports do not route from an IO tile
            continue
        break
    else:
        pytest.fail("no one-input PE routes from an IO tile")
    bs = run / f"{APP}.bs"
    bs.write_text(generate(pr.packed, bad, pr.routing, coll).to_text())
    st.write_doc(run / "pipelined.json", {**st.header(st.PIPELINED_SCHEMA, coll, run,
                                                      "pipeline"), **st.pipelined_to_json(pr)})
    refused(cgra, run, ["verify", small_design, bs],
            [f"{bs}: PE {inst} (tag 'p') is routed at tile ({io[0]}, {io[1]})",
             "a tile of tag 'I': its core config cannot be written to a tile of that kind"])


# ---------------------------------------------------------------------------- simulation
@pytest.mark.bad_traceback
def test_sim_refuses_a_bs_line_that_does_not_parse(cgra, run, small_design):
    bs = run / f"{APP}.bs"
    lines = _lines(bs)
    lines[2] = lines[2][:7] + "G" + lines[2][8:]
    _write_lines(bs, lines)
    words = [f"{bs} line 3: expected 'AAAAAAAA DDDDDDDD'", repr(lines[2])]
    refused(cgra, run, ["sim", run], [*words, f"run `cgra bitstream {run}` again"])
    refused(cgra, run, ["verify", small_design, bs], words)


@pytest.mark.bad_silent
@pytest.mark.parametrize("case", ["changed word", "missing line"])
def test_sim_runs_the_bs_file_and_refuses_one_bitstream_json_does_not_have(cgra, run, case):
    """The .bs is what a user deploys: sim no longer runs bitstream.json's words instead."""
    bs = run / f"{APP}.bs"
    lines = _lines(bs)
    k = len(lines) // 2
    if case == "changed word":
        a, d = lines[k].split()
        new = f"{a} {int(d, 16) ^ 1:08X}"
        words = [f"{bs} line {k + 1} is '{new}'", f"bitstream.json, written with it by `cgra "
                 f"bitstream`, has '{lines[k]}'"]
        lines[k] = new
    else:
        words = [f"{bs} line {len(lines)} is missing", f"has '{lines[-1]}'"]
        lines.pop()
    _write_lines(bs, lines)
    refused(cgra, run, ["sim", run], [*words, f"run `cgra bitstream {run}` again"])


@pytest.mark.bad_state
def test_sim_removes_the_previous_outputs_before_the_harness_runs(cgra, run, small_design,
                                                                  monkeypatch, tmp_path):
    """A harness that writes nothing cannot let the previous run's sim.out "match": it is
    removed (with the other outputs of a simulation) before the harness runs, and the
    missing output is a typed error."""
    exe = tmp_path / "harness"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    ports = [f"{d}_{w}_X{x:02X}_Y00" for d in ("glb2io", "io2glb") for w in (16, 1)
             for x in range(8)]
    ins, outs = [p for p in ports if p.startswith("glb2io")], \
        [p for p in ports if p.startswith("io2glb")]
    fake = verilator.Harness(small_design, "Top", exe, ins, outs,
                             {p: int(p.split("_")[1]) for p in ports}, "fake", True, 0.0, 4)
    monkeypatch.setattr(verilator, "build_harness", lambda *a, **k: fake)
    stale = [*SIM_FILES, f"{APP}.png", f"{APP}.npy", f"{APP}_extra.png"]
    for f in stale:
        (run / f).write_text("from the previous simulation\n")
    before = {k: v for k, v in snapshot(run).items() if k not in stale}
    code, line, err = cgra("sim", run)
    assert code == 2, err
    assert "Traceback" not in err
    assert line == (f"error: {APP}: the simulation harness {exe} exited without writing "
                    f"{run / 'sim.out'}; rebuild it (remove {tmp_path}) and run `cgra sim` "
                    f"again"), line
    after = snapshot(run)
    assert sorted(f for f in stale if f in after) == ["sim.bs", "sim.stim"]  # this run's input
    assert (run / "sim.bs").read_text() == (run / f"{APP}.bs").read_text()   # the .bs's words
    assert "from the previous simulation" not in (run / "sim.stim").read_text()
    assert {k: v for k, v in after.items() if k not in stale} == before
