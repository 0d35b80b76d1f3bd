"""The layering rule of CONVENTIONS.md: the mapper reads collateral only and never imports
the hardware generators (peak.rtl, lake.rtl, canal.rtl, garnet) or magma/fault."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_linter_contract_is_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    res = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1 kept, 0 broken" in res.stdout


def test_mapper_commands_load_without_magma():
    code = ("import sys, mapper.cli, mapper.run, mapper.compute, mapper.report, "
            "mapper.simulate; bad = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('magma', 'fault', 'garnet') or m in ('peak.rtl', 'lake.rtl', 'canal.rtl')); "
            "print(bad)")
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"
