"""Project-wide pytest fixtures.

magma keeps global state (the circuit registry used for name uniquification). All RTL
generation in a test process goes through generators that cache each distinct module by
its parameters, so a module is defined once per process; ``magma_out`` gives each test
session one scratch directory for Verilog and Verilator builds.
"""
from __future__ import annotations


import pytest


@pytest.fixture(scope="session")
def magma_out(tmp_path_factory):
    """A per-session (per xdist worker) directory for generated Verilog and Verilator builds."""
    return tmp_path_factory.mktemp("rtl")
