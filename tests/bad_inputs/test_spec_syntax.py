"""Syntax errors in specs (issue 41, item 6): a PE spec file with a Python syntax error (on
`cgra rules --pe` and through a TOML's ``pe``), a design TOML or a DSE sweep TOML with a TOML
syntax error, and a TOML that is not UTF-8 are each refused as one line ``path:line:
message`` with exit status 2, like every other spec error, and nothing is written."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bad_support import SMALL, cgra, error_line
from peak.load import load_spec

ROOT = Path(__file__).resolve().parents[2]
STOCK_PE = ROOT / "peak" / "examples" / "cgra_pe.py"


def _broken_pe(tmp_path: Path) -> tuple[Path, int]:
    """A copy of the default PE with an unclosed bracket appended; its line."""
    pe = tmp_path / "my_pe.py"
    text = STOCK_PE.read_text()
    pe.write_text(text + "\nbroken = (1,\n")
    return pe, len(text.splitlines()) + 2


@pytest.mark.bad_refused
def test_pe_spec_syntax_error_names_file_and_line(tmp_path):
    pe, line = _broken_pe(tmp_path)
    r = cgra(["rules", "--pe", "my_pe.py:PE", "--out", tmp_path / "rules"], tmp_path)
    assert r.returncode == 2, r.stderr
    err = error_line(r)
    assert err.startswith(f"error: {pe}:{line}: SyntaxError: "), err
    assert "PE spec 'my_pe.py:PE'" in err and f"`python {pe}` runs" in err
    assert len([ln for ln in r.stderr.splitlines() if ln.strip()]) == 1
    assert not (tmp_path / "rules").exists()


@pytest.mark.bad_refused
def test_pe_spec_syntax_error_through_a_toml(tmp_path):
    pe, line = _broken_pe(tmp_path)
    toml = tmp_path / "my.toml"
    toml.write_text("\n".join('pe = "my_pe.py:PE"' if ln.startswith("pe = ") else ln
                              for ln in SMALL.read_text().splitlines()) + "\n")
    r = cgra(["rtl", "--config", toml, "--out", tmp_path / "out"], tmp_path)
    assert r.returncode == 2, r.stderr
    err = error_line(r)
    assert err.startswith(f"error: {pe}:{line}: SyntaxError: "), err
    assert f"{toml}: field 'pe' = '{pe}:PE': the file does not import" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.bad_refused
@pytest.mark.parametrize("command", ["rtl", "dse"])
def test_toml_syntax_error_names_file_line_and_column(tmp_path, command):
    head = '# a design\nname = "x"\nwidth = 8\n' if command == "rtl" else \
        '# a sweep\n[sweep]\nname = "x"\n'
    bad = tmp_path / "bad.toml"
    bad.write_text(head + "tracks = = 5\n")
    args = ["rtl", "--config", bad, "--out", tmp_path / "out"] if command == "rtl" \
        else ["dse", bad, "--out", tmp_path / "out"]
    r = cgra(args, tmp_path)
    assert r.returncode == 2, r.stderr
    assert error_line(r) == (f"error: {bad}:4: TOML syntax error: Invalid value (column 10); "
                             f"correct the TOML syntax")
    assert not (tmp_path / "out").exists()


@pytest.mark.bad_traceback
def test_toml_that_is_not_utf8_names_the_line(tmp_path):
    """Before: ``UnicodeDecodeError`` from ``Path.read_text`` (a traceback)."""
    bad = tmp_path / "latin1.toml"
    bad.write_bytes(SMALL.read_bytes().replace(b'name = "small"', b'name = "sm\xe4ll"'))
    r = cgra(["rtl", "--config", bad, "--out", tmp_path / "out"], tmp_path)
    assert r.returncode == 2, r.stderr
    line = next(k for k, ln in enumerate(SMALL.read_text().splitlines(), 1)
                if ln.startswith("name = "))
    assert error_line(r).startswith(f"error: {bad}:{line}: not UTF-8 text (byte ")
    assert "Traceback" not in r.stderr


@pytest.mark.good_input
def test_the_stock_pe_copy_loads(tmp_path):
    """Control: the same copy without the broken line is a valid spec."""
    shutil.copy(STOCK_PE, tmp_path / "my_pe.py")
    assert load_spec(f"{tmp_path / 'my_pe.py'}:PE").__name__ == "PE"
