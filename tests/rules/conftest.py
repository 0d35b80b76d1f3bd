"""Session fixtures of the rule-synthesis tests.

The full default-PE rule table is synthesised ONCE per test session (per xdist worker) into
a session directory and shared by every test that needs it. The project root goes first on
``sys.path`` so ``tests/peak`` never shadows the ``peak`` package."""
from __future__ import annotations

import pathlib
import sys

_ROOT = str(pathlib.Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def default_table(tmp_path_factory):
    """(table, out_dir) of the default 16-bit CGRA PE, synthesised once (one process)."""
    from peak.examples.cgra_pe import PE
    from peak.rules import build_table
    out = tmp_path_factory.mktemp("rules_default")
    table = build_table(PE, out, jobs=1)
    return table, out
