"""The project stands alone: nothing it runs or tests reads outside the repository."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: strings that name places outside a user's clone (built so this file does not match itself)
OUTSIDE = ("/" + "work" + "/", ".." + "/shared", "shared" + "/timing", "shared" + "/apps",
           '] / "' + 'shared"', "] / '" + "shared'")


def test_sources_do_not_read_outside_the_repository():
    """No source, build, CI or documentation file names the development machine's work tree
    or the sibling shared folder: a user's clone has neither."""
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--",
         "*.py", "*.toml", "*.md", "Makefile", ".ci/*"],
        cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    assert "mapper/frontend/coreir.py" in files and "README.md" in files
    hits = []
    for name in sorted(set(files)):
        path = REPO / name
        if not path.is_file() or name.endswith(("canal/data/README.md",
                                                "mapper/data/coreir/README.md")):
            continue        # the provenance notes say where the shipped copies came from
        for no, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if any(s in line for s in OUTSIDE):
                hits.append(f"{name}:{no}: {line.strip()}")
    if hits:
        pytest.fail("paths outside the repository (a user's clone has neither):\n"
                    + "\n".join(hits), pytrace=False)


def test_shipped_data_is_package_data():
    """The default delay table and the CoreIR example kernels are installed with the
    packages (pyproject package-data) and found through importlib.resources."""
    import tomllib

    from canal.timing import default_table_text
    from mapper.frontend.coreir import example_kernels

    pkg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]
    assert "data/delays_ps.json" in pkg["canal"]
    assert "data/coreir/*.json" in pkg["mapper"]
    assert '"register_mux": 230' in default_table_text()
    assert len(example_kernels()) == 10
