"""Run docs/tutorial.md as written and check or regenerate the outputs it shows.

The tutorial's ```sh blocks run in order, each in a fresh ``bash -euo pipefail`` in one
scratch working directory (``REPO`` = the project root, the project's ``.venv/bin`` first on
``PATH``, ``COLUMNS`` wide enough that no line wraps), and its ```diff block is applied to
the PE file by text replacement of each hunk (context and ``-`` lines -> context and ``+``
lines), as a reader editing by hand would.

A shown output is a ```text block preceded by a marker line ``<!-- output: REGEX -->``: it
holds the lines of the previous ```sh block's output (stdout, then stderr) that
``re.search(REGEX, line)`` selects, in order, with the scratch directory written ``/…``.
:func:`normalise` blanks what varies from run to run or machine to machine (seconds and
other decimals, MHz, ps, cycle counts, wirelength, registers placed, whether a rule was
cached or synthesised, the Verilator build); PE, MEM and IO counts, rule counts, design
names and spec hashes stay exact. ``python docs/tutorial_outputs.py`` regenerates every
shown block from a run (after a change of the PE, the rules or the summary lines);
``--check`` only compares (exit 1 naming the block); ``tests/test_tutorial.py`` runs the
same comparison.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial.md"
_FENCE = re.compile(r"^(```+)\s*([\w+-]*)\s*$")
_MARK = re.compile(r"^<!-- output: (?P<rx>.+) -->\s*$")
#: the scratch directory as a shown output writes it
ELLIPSIS = "/…"
#: terminal width of the runs (rich wraps lines and tables at the terminal's width)
COLUMNS = 400


@dataclass
class Block:
    """A fenced block of the tutorial: ``lang``, the line of its opening fence (1-based),
    its ``body``, and for a shown output the marker's regex (``None`` otherwise)."""

    lang: str
    line: int
    body: str
    select: str | None = None


def fenced_blocks(path: Path = TUTORIAL) -> list[Block]:
    """Every unindented fenced block of the Markdown file ``path``, in order."""
    out: list[Block] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2).lower(), i + 1
        mark = _MARK.match(lines[i - 1]) if i > 0 else None
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i])
            i += 1
        i += 1
        out.append(Block(lang, start, "\n".join(body) + "\n" if body else "",
                         mark.group("rx") if mark and lang == "text" else None))
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
    if not target or not hunks:
        raise ValueError("the tutorial's ```diff block has no file name or no hunk")
    return target, [("\n".join(o) + "\n", "\n".join(n) + "\n") for o, n in hunks]


def apply_diff(workdir: Path, diff: str, line: int) -> None:
    """Apply the ```diff block (at tutorial line ``line``) by replacing each hunk's text."""
    target, hunks = diff_hunks(diff)
    path = workdir / target
    text = path.read_text()
    for k, (old, new) in enumerate(hunks, 1):
        if text.count(old) != 1:
            raise ValueError(f"hunk {k} of the ```diff block at docs/tutorial.md:{line} "
                             f"matches {text.count(old)} times in {target} (a copy of "
                             f"peak/examples/cgra_pe.py): regenerate the diff against the "
                             f"current file")
        text = text.replace(old, new)
    path.write_text(text)


def seed_caches(workdir: Path) -> None:
    """Copy the repository's rule-cache entry of the stock PE into ``workdir/build/rules``
    (under its lock), so the tutorial's first ``cgra rules`` finds it cached; the entry is
    synthesised into the repository's cache first if it is not there (~20 s on 2 cores),
    where every later design of the stock PE finds it too. The
    tile timing measurements are shared, not copied: ``workdir/build/timing`` is a link to
    the repository's ``build/timing`` (entries keyed by tile RTL, written atomically, one
    measurement per tile across processes: :func:`garnet.sta.measure.measure_tile`), so the
    stock design's tiles are measured once for the tutorial and every other user of the
    cache (~15 s on 2 cores each time)."""
    from peak import load_spec  # deferred: loads z3, pysmt, hwtypes only when called
    from peak.rules import build_table  # deferred: as above
    from peak.rules.format import CACHE_DIR, locked  # deferred: as above

    entry = build_table(load_spec("peak.examples.cgra_pe:PE"), ROOT / "build" / "rules",
                        jobs=2).path.parent
    with locked(entry):
        shutil.copytree(entry, workdir / "build" / "rules" / CACHE_DIR / entry.name,
                        dirs_exist_ok=True)
    timing = ROOT / "build" / "timing"
    timing.mkdir(parents=True, exist_ok=True)
    (workdir / "build").mkdir(parents=True, exist_ok=True)
    (workdir / "build" / "timing").symlink_to(timing, target_is_directory=True)


def run(workdir: Path, blocks: list[Block], timeout: float = 900) -> dict[int, str]:
    """Run the ```sh blocks and apply the ```diff block in ``workdir``; returns the line of
    each ```sh block -> its output (stdout then stderr, ``workdir`` written ``/…``). Raises
    ``RuntimeError`` naming the block that failed."""
    env = {**os.environ, "REPO": str(ROOT), "COLUMNS": str(COLUMNS),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    outputs: dict[int, str] = {}
    for b in blocks:
        if b.lang == "diff":
            apply_diff(workdir, b.body, b.line)
        elif b.lang == "sh":
            r = subprocess.run(["bash", "-euo", "pipefail", "-c", b.body], cwd=workdir,
                               env=env, capture_output=True, text=True, timeout=timeout)
            out = (r.stdout + r.stderr).replace(str(workdir.resolve()), ELLIPSIS)
            out = out.replace(str(workdir), ELLIPSIS)
            if r.returncode != 0:
                raise RuntimeError(f"the ```sh block at docs/tutorial.md:{b.line} failed "
                                   f"(exit {r.returncode}):\n{out[-4000:]}")
            outputs[b.line] = out
    return outputs


def shown(blocks: list[Block]) -> list[tuple[Block, int]]:
    """Each shown output block with the line of the ```sh block whose output it shows."""
    out: list[tuple[Block, int]] = []
    last = None
    for b in blocks:
        if b.lang == "sh":
            last = b.line
        elif b.select is not None:
            if last is None:
                raise ValueError(f"docs/tutorial.md:{b.line}: an output block before any "
                                 f"```sh block")
            out.append((b, last))
    return out


def selected(output: str, select: str) -> list[str]:
    """The lines of ``output`` that ``select`` (a regex) finds, trailing spaces removed."""
    rx = re.compile(select)
    return [ln.rstrip() for ln in output.splitlines() if rx.search(ln)]


#: (pattern, replacement) of :func:`normalise`, in order
_VARIES = [
    (re.compile(r"\b\d+\.\d+\b"), "<n>"),                       # seconds, MB, ms columns
    (re.compile(r"\b\d+ (MHz|ps|cycles)\b"), r"<n> \1"),
    (re.compile(r"first output at \d+ \(ideal \d+\)"), "first output at <n> (ideal <n>)"),
    (re.compile(r"wirelength \d+"), "wirelength <n>"),
    (re.compile(r"\b\d+ r;"), "<n> r;"),                       # registers placed
    (re.compile(r"timed out \([^)]*\)"), "timed out (<actions>)"),
    (re.compile(r"\b(cached|synthesised|decomposed)\b"), "<action>"),
    (re.compile(r"; Verilator model [^;]*;"), "; Verilator model <build>;"),
    (re.compile(r"\s+"), " "),                                 # rich table layout
]


def normalise(line: str) -> str:
    """``line`` with what varies between runs blanked (module docstring)."""
    for rx, rep in _VARIES:
        line = rx.sub(rep, line)
    return line.strip()


def compare(blocks: list[Block], outputs: dict[int, str]) -> list[str]:
    """One message per shown block that differs from its run's output (normalised)."""
    bad = []
    for b, sh_line in shown(blocks):
        got = [normalise(ln) for ln in selected(outputs[sh_line], b.select or "")]
        want = [normalise(ln) for ln in b.body.splitlines()]
        if got != want:
            bad.append(f"docs/tutorial.md:{b.line}: the shown output differs from the run of "
                       f"the ```sh block at line {sh_line}; run `python docs/tutorial_outputs.py`"
                       f"\n  shown: {want}\n  run:   {got}")
    return bad


def regenerate(path: Path, blocks: list[Block], outputs: dict[int, str]) -> int:
    """Rewrite every shown block of ``path`` with its run's selected lines; returns how many
    changed."""
    lines = path.read_text().splitlines()
    changed = 0
    for b, sh_line in reversed(shown(blocks)):
        new = selected(outputs[sh_line], b.select or "")
        start = b.line                 # 1-based fence line: body = lines[start:end]
        end = start + len(b.body.splitlines())
        if lines[start:end] != new:
            lines[start:end] = new
            changed += 1
    path.write_text("\n".join(lines) + "\n")
    return changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="compare only (exit 1 naming each block that differs)")
    args = ap.parse_args(argv)
    blocks = fenced_blocks(TUTORIAL)
    with tempfile.TemporaryDirectory(prefix="tutorial-") as tmp:
        work = Path(tmp)
        seed_caches(work)
        outputs = run(work, blocks)
    if args.check:
        bad = compare(blocks, outputs)
        for msg in bad:
            print(msg)
        return 1 if bad else 0
    n = regenerate(TUTORIAL, blocks, outputs)
    print(f"docs/tutorial.md: {n} shown output block(s) regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
