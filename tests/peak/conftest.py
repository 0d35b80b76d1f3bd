"""Session fixtures of the PEak tests: one Verilator build per PE per session.

pytest puts ``tests/`` on ``sys.path`` (for the root conftest), where ``tests/peak`` would
shadow the ``peak`` package as a namespace package; the project root is put first so the
real package is imported (the shared fix is ``pythonpath = ["."]`` in pyproject's pytest
options)."""
from __future__ import annotations

import pathlib
import sys

_ROOT = str(pathlib.Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def rtl_dir(magma_out):
    """Scratch directory for the PE Verilog and Verilator builds of this session/worker."""
    return magma_out
