"""The layering of the whole project, three import-linter contracts (pyproject.toml):

* layers: ``dse | runtime`` (independent) > ``mapper`` > ``garnet`` > ``peak | lake | canal``
  (independent) > ``cgra``;
  nothing imports a package above its own (garnet never imports the mapper);
* no import circle: inside every package, sibling modules and sub-packages import each other
  one way only (``acyclic_siblings``; imports under ``if TYPE_CHECKING:`` never run and are
  not counted);
* the mapper as a whitelist (cgra.layering): it reaches only cgra, its own modules and the
  collateral readers / config encoders / Python models named in pyproject.toml, never a
  hardware generator or magma/fault.

Each contract is shown to fail on a copy of the project with one offending import added."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_linter_contract_is_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    res = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "3 kept, 0 broken" in res.stdout


PACKAGES = ("cgra", "peak", "lake", "canal", "garnet", "mapper", "dse", "runtime")


def _lint_copy(tmp_path: Path, module: str, line: str) -> subprocess.CompletedProcess:
    """``lint-imports`` on a copy of the project where ``module`` (a path under the root) gets
    ``line`` appended."""
    import shutil
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, tmp_path / pkg,
                        ignore=shutil.ignore_patterns("__pycache__", "data"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    f = tmp_path / module
    f.write_text(f.read_text() + f"\n{line}  # noqa: E402,F401\n")
    lint = Path(sys.executable).with_name("lint-imports")
    return subprocess.run([str(lint), "--no-cache"], cwd=tmp_path, capture_output=True,
                          text=True, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})


def test_whitelist_contract_catches_a_new_generator_import(tmp_path):
    """A module the whitelist does not name (here garnet.build, through a copy of the project
    where one mapper module imports it) breaks the contract, with the chain."""
    res = _lint_copy(tmp_path, "mapper/images.py", "import garnet.build")
    assert res.returncode != 0
    assert "2 kept, 1 broken" in res.stdout
    assert "mapper reaches garnet.build (not in allowed_modules)" in res.stdout
    assert "mapper.images -> garnet.build -> garnet.cores -> peak.rtl" in res.stdout
    assert "mapper reaches magma (a forbidden external package)" in res.stdout


def test_mapper_commands_load_without_magma():
    code = ("import sys, mapper.cli, mapper.flow, mapper.mapping.compute, mapper.backend.report, "
            "mapper.sim.verilator, mapper.stages; bad = sorted(m for m in sys.modules if "
            "m.split('.')[0] in ('magma', 'fault') or m in ('peak.rtl', 'lake.rtl', "
            "'canal.rtl', 'garnet.build', 'garnet.cores', 'peak.rules.synth', 'canal.check')); "
            "print(bad)")
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


def test_layers_contract_catches_garnet_importing_the_mapper(tmp_path):
    """garnet is below the mapper: one garnet module importing a mapper module breaks the
    layers contract (and only it), naming the import."""
    res = _lint_copy(tmp_path, "garnet/params.py", "import mapper.backend.place")
    assert res.returncode != 0
    assert "2 kept, 1 broken" in res.stdout
    assert "layers: dse drives mapper and garnet" in res.stdout
    assert "garnet.params -> mapper.backend.place" in res.stdout


def test_layers_contract_keeps_the_three_dsls_independent(tmp_path):
    res = _lint_copy(tmp_path, "lake/spec.py", "import canal.graph")
    assert res.returncode != 0
    assert "lake.spec -> canal.graph" in res.stdout


def test_acyclic_contract_catches_a_new_import_circle(tmp_path):
    """mapper.backend.pack is imported by mapper.backend.place; pack importing place closes a circle, which
    the acyclic contract refuses, naming the dependency to remove."""
    res = _lint_copy(tmp_path, "mapper/backend/pack.py", "import mapper.backend.place")
    assert res.returncode != 0
    assert "2 kept, 1 broken" in res.stdout
    assert "No cycles are allowed in mapper." in res.stdout
    assert ".pack -> .place" in res.stdout or ".place -> .pack" in res.stdout


def test_acyclic_contract_ignores_type_checking_imports(tmp_path):
    """An annotation-only import (under ``if TYPE_CHECKING:``) never runs: not a circle."""
    res = _lint_copy(tmp_path, "mapper/backend/pack.py",
                     "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                     "    import mapper.backend.place")
    assert res.returncode == 0, res.stdout
    assert "3 kept, 0 broken" in res.stdout


def test_no_import_circle_among_modules():
    """The whole module graph (not just siblings) has no strongly connected component."""
    import grimp
    import networkx as nx
    g = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True)
    dg = nx.DiGraph((m, i) for m in g.modules for i in g.find_modules_directly_imported_by(m))
    circles = [sorted(c) for c in nx.strongly_connected_components(dg) if len(c) > 1]
    assert circles == []


def test_mapper_rooms_have_a_narrow_top():
    """The mapper's stages live in sub-packages (issue 38, item 3): at most a dozen top-level
    modules, flow.py at most 500 lines, every sub-package documented."""
    import ast
    top = sorted(p.name for p in (ROOT / "mapper").glob("*.py"))
    assert len(top) <= 12, top
    assert len((ROOT / "mapper" / "flow.py").read_text().splitlines()) <= 500
    for pkg in ("frontend", "mapping", "backend", "dnn", "sim"):
        init = ROOT / "mapper" / pkg / "__init__.py"
        assert ast.get_docstring(ast.parse(init.read_text())), pkg


def test_every_in_function_import_says_why():
    """An import inside a function is a deliberate deferral (a heavy package, a circle it would
    close): each carries a comment on its line or the line before."""
    import ast
    missing = []
    for pkg in PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            lines = f.read_text().splitlines()
            for fn in ast.walk(ast.parse("\n".join(lines))):
                if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for n in ast.walk(fn):
                    if isinstance(n, (ast.Import, ast.ImportFrom)):
                        here = lines[n.end_lineno - 1]
                        before = lines[n.lineno - 2].strip() if n.lineno > 1 else ""
                        if "#" not in here and not before.startswith("#"):
                            missing.append(f"{f.relative_to(ROOT)}:{n.lineno}")
    assert missing == []
