"""Session fixtures of the garnet tests: ONE generation of the 8x8 design (configs/small.toml)
per session/worker, shared by the collateral checks, the lint test and the Verilator test.

``tests/`` is on ``sys.path`` for the root conftest, where ``tests/garnet`` would shadow the
``garnet`` package; the project root goes first so the real package is imported."""
from __future__ import annotations

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def small_design(tmp_path_factory):
    """(BuildResult, design dir) of configs/small.toml, generated RTL-only (rules are
    exercised by the CLI tests on a 4x4 array)."""
    from garnet.build import generate
    from garnet.params import load_toml

    params = load_toml(ROOT / "configs" / "small.toml")
    out = tmp_path_factory.mktemp("garnet") / "small"
    result = generate(params, out, rules=False)
    return result, out
