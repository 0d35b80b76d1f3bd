"""``cgra lint``: Verilator lint of a generated design.

Runs ``verilator --lint-only -Wall --top-module <top> -f rtl/filelist.f`` in ``rtl/`` of the
design and counts diagnostics: a line starting ``%Error`` is an error, ``%Warning-<CODE>``
a warning of that code. Returns a :class:`LintReport`; the command exits non-zero on errors.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from cgra.errors import CollateralError
from garnet.collateral import read_design

_WARN = re.compile(r"^%Warning-([A-Z0-9_]+):")
_ERR = re.compile(r"^%Error")


@dataclass
class LintReport:
    """Counts of Verilator diagnostics. ``warnings``: code -> count; ``errors``: the error
    lines (without Verilator's own 'Exiting due to' summary)."""

    top: str
    errors: list[str] = field(default_factory=list)
    warnings: Counter = field(default_factory=Counter)
    returncode: int = 0
    command: list[str] = field(default_factory=list)

    @property
    def num_warnings(self) -> int:
        return sum(self.warnings.values())

    def summary(self) -> str:
        codes = ", ".join(f"{c} {n}" for c, n in self.warnings.most_common())
        return (f"lint {self.top}: {len(self.errors)} errors, {self.num_warnings} warnings"
                + (f" ({codes})" if codes else ""))


def lint(design_dir: str | Path, extra_flags: list[str] | None = None,
         timeout_s: float = 1200.0) -> LintReport:
    """Lint the RTL of a design directory (see module docstring). Raises
    :class:`CollateralError` when the design or verilator is missing."""
    d = Path(design_dir)
    doc = read_design(d)
    exe = shutil.which("verilator")
    if exe is None:
        raise CollateralError("verilator is not on PATH; install it (apt-get install "
                              "verilator) to lint the RTL")
    rtl = d / "rtl"
    cmd = [exe, "--lint-only", "-Wall", "--top-module", doc["top"], "-f", "filelist.f",
           *(extra_flags or [])]
    proc = subprocess.run(cmd, cwd=rtl, capture_output=True, text=True, timeout=timeout_s)
    rep = LintReport(doc["top"], returncode=proc.returncode, command=cmd)
    for line in (proc.stderr + proc.stdout).splitlines():
        mw = _WARN.match(line)
        if mw:
            rep.warnings[mw.group(1)] += 1
        elif _ERR.match(line) and "Exiting due to" not in line:
            rep.errors.append(line)
    return rep
