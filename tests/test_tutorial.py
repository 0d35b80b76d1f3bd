"""docs/tutorial.md runs as written (docs/tutorial_outputs.py: its ```sh blocks in order,
each in a fresh ``bash -euo pipefail`` in one scratch working directory, its ```diff block
applied to the PE file by text replacement of each hunk), and every output it shows (a
```text block marked ``<!-- output: REGEX -->``) is what the run printed: the lines the
regex selects, compared after blanking what varies between runs (seconds, MHz, ps, cycles,
wirelength, registers placed, cached vs synthesised rules); PE / MEM / IO counts, rule counts,
design names and spec hashes exactly. After a change of those, ``python
docs/tutorial_outputs.py`` regenerates the shown blocks.

Every output but the tile timing measurements and the stock PE's rules stays under
``tmp_path``. The stock PE's cache entry in the shared rule cache of the repository
(``build/rules``, as tests/e2e/conftest.py uses it; synthesised there first if missing, once
for the whole suite) is copied into the scratch directory's ``build/rules`` (under its
lock) so that the tutorial's first ``cgra rules`` finds it cached. The tile timing
measurements are the repository's shared cache ``build/timing`` (the measured model is the
default; the scratch directory's ``build/timing`` links to it, so each tile is measured once
for the whole suite, and each new tile the tutorial's edits make lands there too).

Beyond the shown outputs, per step: the stock PE has no ``pattern.muladd`` rule and gaussian
needs 18 PEs; mapping after the edit and before regenerating is refused (stale design);
after regenerating the rule table has ``pattern.muladd`` and gaussian needs 10 PEs, eight
of them multiply-adds; after the interconnect and memory change the rules are reused,
gaussian needs one MEM instead of two, and it runs on the generated RTL bit-exactly against
numpy and Halide; harris is refused on the 8x8 array naming the PE count."""
from __future__ import annotations

import json
import re
import sys
import time
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))

import tutorial_outputs as tut  # noqa: E402

from canal.collateral import load_json  # noqa: E402
from canal.custom import diagonal_links  # noqa: E402


def test_shown_outputs_select_and_normalise():
    """The comparison itself: a shown block equals its run's selected lines up to the
    figures that vary, and a changed PE count or hash is a difference."""
    out = ("noise\nGarnet_8x8_ab12: 8 IO, 14 MEM, 42 PE; 0.61 MB; rules regenerated (PE hash "
           "062a00d6: 76 found); 5.7 s -> build/my\ngaussian on design small (b, 8x8): 2 I, 1 m, "
           "10 p, 3 r; wirelength 39; 300 MHz (critical path 3330 ps); 4106 cycles, first "
           "output at 140 (ideal 130); 32.4 s -> runs/x\n")
    same = ("Garnet_8x8_ab12: 8 IO, 14 MEM, 42 PE; 0.59 MB; rules regenerated (PE hash "
            "062a00d6: 76 found); 18.6 s -> build/my\ngaussian on design small (b, 8x8): 2 I, 1 m, "
            "10 p, 5 r; wirelength 41; 458 MHz (critical path 2182 ps); 4110 cycles, first "
            "output at 141 (ideal 130); 12.0 s -> runs/x\n")
    blocks = [tut.Block("sh", 1, "true\n"),
              tut.Block("text", 5, same, r"^Garnet_|^gaussian on")]
    assert tut.compare(blocks, {1: out}) == []
    for wrong in (same.replace("42 PE", "40 PE"), same.replace("062a00d6", "062a00d7"),
                  same.replace("10 p", "11 p")):
        blocks[1].body = wrong
        [msg] = tut.compare(blocks, {1: out})
        assert msg.startswith("docs/tutorial.md:5: the shown output differs")


def test_tutorial_runs(tmp_path):
    blocks = tut.fenced_blocks(tut.TUTORIAL)
    assert [b.lang for b in blocks if b.lang in ("sh", "diff")] == \
        ["sh", "sh", "diff", "sh", "sh", "sh", "sh", "sh", "sh"], \
        "docs/tutorial.md changed its executable blocks: update tests/test_tutorial.py"
    assert len(tut.shown(blocks)) == 9
    tut.seed_caches(tmp_path)
    t0 = time.perf_counter()
    outputs = tut.run(tmp_path, blocks)
    print(f"tutorial ran in {time.perf_counter() - t0:.1f} s")
    assert tut.compare(blocks, outputs) == []
    step = [" ".join(o.split()) for o in outputs.values()]
    _, step1, stale, step2, step3, mymem, myic, harris = step

    # step 1: the stock PE (a copy of cgra_pe.py): no multiply-add rule, gaussian = 18 PEs
    assert re.search(r"pattern\.muladd\[in1=const\]\W+none", step1), step1[-3000:]
    stock = json.loads((tmp_path / "runs/gaussian_stock/app.json").read_text())
    assert stock["counts"]["pe"] == 18 and stock["counts"]["mem"] == 2

    # the edit without regenerating: the stale design is refused, nothing is mapped
    assert "build/my/pe.json is stale" in stale
    assert not (tmp_path / "runs/gaussian_stale").exists()

    # step 2: the MulAdd edit: a new port (interconnect rebuilt), a new rule, 10 PEs
    assert "rules regenerated" in step2 and "interconnect regenerated" in step2
    table = json.loads((tmp_path / "build/my/rules/PE.rules.json").read_text())
    status = {e["target"]: e["status"] for e in table["entries"]}
    assert status["pattern.muladd[in1=const]"] == "found"
    app = json.loads((tmp_path / "runs/gaussian_muladd/app.json").read_text())
    assert app["counts"]["pe"] == 10
    netlist = json.loads((tmp_path / "runs/gaussian_muladd/netlist.json").read_text())
    rules = [i["config"]["rule"] for i in netlist["instances"].values() if i["kind"] == "pe"]
    assert rules.count("pattern.muladd[in1=const]") == 8, rules

    # step 3: another interconnect and memory: rules reused, 1 MEM, bit-exact on the RTL
    assert "rules reused" in step3 and "interconnect regenerated" in step3
    run = tmp_path / "runs/gaussian_pub"
    report = json.loads((run / "run_report.json").read_text())
    assert report["match"] == {"numpy": True, "halide": True}
    assert report["resources"]["used"]["m"] == 1 and report["resources"]["used"]["p"] == 10
    for png in ("pnr.png", "timing.png", "compare.png", "gaussian.png"):
        assert (run / png).stat().st_size > 1000, png

    # step 4: the architect's own memory (my_mem.py): the MEM tile and mem.json follow it,
    # two 1-in/1-out MEMs for gaussian's line buffers, bit-exact on the RTL
    assert "rules reused" in mymem and "MEM spec changed" in mymem, mymem
    mem = json.loads((tmp_path / "build/my/mem.json").read_text())["lake"]
    assert (mem["preset"], mem["capacity_words"], mem["fetch_width"]) == ("my_dp4096", 4096, 1)
    assert mem["module"].startswith("lake_my_dp4096_")
    report = json.loads((tmp_path / "runs/gaussian_mymem/run_report.json").read_text())
    assert report["match"] == {"numpy": True, "halide": True}
    assert report["resources"]["used"]["m"] == 2 and report["resources"]["used"]["p"] == 10

    # step 5: the architect's own interconnect (my_ic.py): diagonal wires in the routing
    # graph, and gaussian routed over at least one of them, bit-exact on the RTL
    assert "interconnect regenerated" in myic and "rules reused" in myic, myic
    diagonal = diagonal_links(load_json(tmp_path / "build/my/routing/graph_16.json"))
    # tracks 2 and 3, two directions each, onto the 7 x 7 tiles that have such a neighbour
    assert len(diagonal) == 4 * 7 * 7
    report = json.loads((tmp_path / "runs/gaussian_diag/run_report.json").read_text())
    assert report["match"] == {"numpy": True, "halide": True}
    routes = json.loads((tmp_path / "runs/gaussian_diag/routing.json").read_text())
    hops = {(a, b) for net in routes["nets"] if net["width"] == 16 for path in net["paths"]
            for a, b in pairwise(path["nodes"])}
    assert hops & diagonal, "no route uses a diagonal wire"

    # an app too large: refused after mapping, naming the PE tiles
    assert re.search(r"error: harris needs \d+ PE tiles but design small \(8x8\) has 42", harris)
    assert not (tmp_path / "runs/harris/placement.json").exists()
