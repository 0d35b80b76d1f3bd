"""The layering rule of CONVENTIONS.md as a whitelist (cgra.layering): the mapper reaches only
cgra, its own modules and the collateral readers / config encoders / Python models named in
pyproject.toml, never a hardware generator or magma/fault."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_linter_contract_is_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    res = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1 kept, 0 broken" in res.stdout


def test_whitelist_contract_catches_a_new_generator_import(tmp_path):
    """A module the whitelist does not name (here garnet.build, through a copy of the project
    where one mapper module imports it) breaks the contract, with the chain."""
    import shutil
    lint = Path(sys.executable).with_name("lint-imports")
    for pkg in ("cgra", "peak", "lake", "canal", "garnet", "mapper"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg,
                        ignore=shutil.ignore_patterns("__pycache__", "data"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    img = tmp_path / "mapper" / "images.py"
    img.write_text(img.read_text() + "\nimport garnet.build  # noqa: E402,F401\n")
    res = subprocess.run([str(lint), "--no-cache"], cwd=tmp_path, capture_output=True,
                         text=True, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert res.returncode != 0
    assert "0 kept, 1 broken" in res.stdout
    assert "mapper reaches garnet.build (not in allowed_modules)" in res.stdout
    assert "mapper.images -> garnet.build -> garnet.cores -> peak.rtl" in res.stdout
    assert "mapper reaches magma (a forbidden external package)" in res.stdout


def test_mapper_commands_load_without_magma():
    code = ("import sys, mapper.cli, mapper.flow, mapper.compute, mapper.report, "
            "mapper.simulate, mapper.stages; bad = sorted(m for m in sys.modules if "
            "m.split('.')[0] in ('magma', 'fault') or m in ('peak.rtl', 'lake.rtl', "
            "'canal.rtl', 'garnet.build', 'garnet.cores', 'peak.rules.synth', 'canal.check')); "
            "print(bad)")
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"
