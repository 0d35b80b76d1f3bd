"""The documentation's code runs: every ```python block of README.md and docs/*.md is
executed as a script (its own file, project root as the working directory, a fresh
interpreter) and must exit 0. A block that is only illustrative belongs in a plain or
```text fence."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """``(line of the opening fence, code)`` of every ```python (or ```py) block of a
    Markdown file, in order."""
    blocks: list[tuple[int, str]] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            line = lines[i]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            i += 1
        i += 1
        if lang in ("python", "py"):
            blocks.append((start + 1, "\n".join(body) + "\n"))
    return blocks


BLOCKS = [(doc, line, code) for doc in DOCS for line, code in python_blocks(doc)]


def test_the_readme_has_the_pe_example():
    readme = [code for doc, _, code in BLOCKS if doc.name == "README.md"]
    assert any("assert ToyPE()(inst, 2, 3, 5, 0) == (17, 0)" in code for code in readme)


def test_fence_parser(tmp_path):
    md = tmp_path / "x.md"
    md.write_text("text\n```python\na = 1\n```\n```sh\nls\n```\n  ```py\n  b = 2\n  ```\n"
                  "```\nplain\n```\n")
    assert python_blocks(md) == [(2, "a = 1\n"), (8, "b = 2\n")]


@pytest.mark.parametrize("doc,line,code", BLOCKS,
                         ids=[f"{d.relative_to(ROOT)}:{n}" for d, n, _ in BLOCKS])
def test_python_block_runs(tmp_path, doc, line, code):
    script = tmp_path / f"{doc.stem.lower()}_block_{line}.py"
    script.write_text(code)
    r = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, (f"the ```python block at {doc.relative_to(ROOT)}:{line} "
                               f"fails:\n{r.stderr[-3000:]}")
