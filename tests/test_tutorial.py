"""docs/tutorial.md runs as written: its ```sh blocks are executed in order, each in a fresh
``bash -euo pipefail`` in one scratch working directory (``REPO`` = the project root, the
project's ``.venv/bin`` first on ``PATH``), and its ```diff block is applied to the PE file
by text replacement of each hunk (context and ``-`` lines -> context and ``+`` lines), as a
reader editing by hand would. ```text blocks are illustrations and are not run.

Every output stays under ``tmp_path``. The shared rule cache of the repository
(``build/rules``, as tests/e2e/conftest.py uses it) is only read: the cache entry of the
stock PE, if there is one, is copied into the scratch directory's ``build/rules`` (under
its lock) so that the tutorial's first ``cgra rules`` finds it cached; without it the
tutorial synthesises the table itself (about 16 s more on 2 cores).

What the test asserts, per step: the stock PE has no ``pattern.muladd`` rule and gaussian
needs 18 PEs; after the tutorial's edit (a third data input and a ``MulAdd`` op) the rule
table has ``pattern.muladd`` and gaussian needs 10 PEs, eight of them multiply-adds; after
the interconnect and memory change the rules are reused, gaussian needs one MEM instead of
two, and it runs on the generated RTL bit-exactly against numpy and Halide."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial.md"
_FENCE = re.compile(r"^(```+)\s*([\w+-]*)\s*$")


def fenced_blocks(path: Path) -> list[tuple[str, int, str]]:
    """``(language, line of the opening fence, body)`` of every fenced block of a Markdown
    file, in order (unindented fences only)."""
    out: list[tuple[str, int, str]] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2).lower(), i + 1
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i])
            i += 1
        i += 1
        out.append((lang, start, "\n".join(body) + "\n"))
    return out


def diff_hunks(diff: str) -> tuple[str, list[tuple[str, str]]]:
    """The file a unified diff edits (its ``+++`` name) and ``(old, new)`` text per hunk."""
    target = None
    hunks: list[tuple[list[str], list[str]]] = []
    for line in diff.splitlines():
        if not hunks and line.startswith("+++ "):
            target = line[4:].split("\t")[0].strip()
        elif not hunks and line.startswith("--- "):
            continue
        elif line.startswith("@@"):
            hunks.append(([], []))
        elif hunks:
            tag, text = (line[0], line[1:]) if line else (" ", "")
            if tag in " -":
                hunks[-1][0].append(text)
            if tag in " +":
                hunks[-1][1].append(text)
    assert target and hunks, "the tutorial's ```diff block has no file name or no hunk"
    return target, [("\n".join(o) + "\n", "\n".join(n) + "\n") for o, n in hunks]


def apply_diff(workdir: Path, diff: str, line: int) -> None:
    target, hunks = diff_hunks(diff)
    path = workdir / target
    text = path.read_text()
    for k, (old, new) in enumerate(hunks, 1):
        assert text.count(old) == 1, (
            f"hunk {k} of the ```diff block at docs/tutorial.md:{line} matches "
            f"{text.count(old)} times in {target} (a copy of peak/examples/cgra_pe.py): "
            "regenerate the diff against the current file")
        text = text.replace(old, new)
    path.write_text(text)


def _seed_rules(workdir: Path) -> None:
    """Copy the repository's cache entry of the stock PE (if any) into workdir/build/rules."""
    from peak import load_spec, spec_hash
    from peak.rules.format import CACHE_DIR, cached_tables, locked

    shared = ROOT / "build" / "rules"
    h = spec_hash(load_spec("peak.examples.cgra_pe:PE"))
    for table in cached_tables(shared, "PE", spec_hash=h):
        entry = table.parent
        with locked(entry):
            shutil.copytree(entry, workdir / "build" / "rules" / CACHE_DIR / entry.name)


def _flat(text: str) -> str:
    """Output with every run of whitespace one space (rich wraps long lines)."""
    return " ".join(text.split())


def test_tutorial_runs(tmp_path):
    blocks = [(lang, line, body) for lang, line, body in fenced_blocks(TUTORIAL)
              if lang in ("sh", "diff")]
    assert [lang for lang, _, _ in blocks] == ["sh", "sh", "diff", "sh", "sh"], \
        "docs/tutorial.md changed its executable blocks: update tests/test_tutorial.py"
    _seed_rules(tmp_path)
    env = {**os.environ, "REPO": str(ROOT),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    outputs: list[str] = []
    seconds: list[float] = []
    for lang, line, body in blocks:
        if lang == "diff":
            apply_diff(tmp_path, body, line)
            outputs.append("")
            continue
        t0 = time.perf_counter()
        r = subprocess.run(["bash", "-euo", "pipefail", "-c", body], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=900)
        seconds.append(time.perf_counter() - t0)
        out = r.stdout + r.stderr
        assert r.returncode == 0, (f"the ```sh block at docs/tutorial.md:{line} failed "
                                   f"(exit {r.returncode}):\n{out[-4000:]}")
        outputs.append(_flat(out))
    print("seconds per block:", [round(s, 1) for s in seconds])
    _, step1, _, step2, step3 = outputs

    # step 1: the stock PE (a copy of cgra_pe.py): no multiply-add rule, gaussian = 18 PEs
    assert re.search(r"pattern\.muladd\[in1=const\]\W+none", step1), step1[-3000:]
    assert "gaussian: 18 PEs" in step1
    stock = json.loads((tmp_path / "runs/gaussian_stock/app.json").read_text())
    assert stock["counts"]["pe"] == 18 and stock["counts"]["mem"] == 2

    # step 2: the MulAdd edit: a new port (interconnect rebuilt), a new rule, 10 PEs
    assert "rules regenerated" in step2 and "interconnect regenerated" in step2
    assert re.search(r"pattern\.muladd\[in1=const\]\W+found", step2), step2[-3000:]
    table = json.loads((tmp_path / "build/my/rules/PE.rules.json").read_text())
    status = {e["target"]: e["status"] for e in table["entries"]}
    assert status["pattern.muladd[in1=const]"] == "found"
    assert "gaussian: 10 PEs" in step2
    app = json.loads((tmp_path / "runs/gaussian_muladd/app.json").read_text())
    assert app["counts"]["pe"] == 10
    netlist = json.loads((tmp_path / "runs/gaussian_muladd/netlist.json").read_text())
    rules = [i["config"]["rule"] for i in netlist["instances"].values() if i["kind"] == "pe"]
    assert rules.count("pattern.muladd[in1=const]") == 8, rules

    # step 3: another interconnect and memory: rules reused, 1 MEM, bit-exact on the RTL
    assert "rules reused" in step3 and "interconnect regenerated" in step3
    assert "matches numpy and Halide bit-exactly" in step3, step3[-3000:]
    run = tmp_path / "runs/gaussian_pub"
    report = json.loads((run / "run_report.json").read_text())
    assert report["match"] == {"numpy": True, "halide": True}
    assert report["resources"]["used"]["m"] == 1 and report["resources"]["used"]["p"] == 10
    for png in ("pnr.png", "timing.png", "compare.png", "gaussian.png"):
        assert (run / png).stat().st_size > 1000, png
