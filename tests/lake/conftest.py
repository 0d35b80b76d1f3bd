"""Fixtures of the Lake tests.

``lake_backend(name)`` returns a runner ``run(preset, config, stimulus) -> streams`` for
``"model"`` (the cycle-accurate Python model), ``"multiplier"`` (the same model with
multiplier-form generators) or ``"rtl"`` (Verilator through fault).
Verilator builds: one per preset per test session, shared by all pytest-xdist workers
through a lock in the session's common temporary root (each worker runs the executable
in its own directory).
"""
from __future__ import annotations


import pytest

from lake.model import run_model


def _shared_root(tmp_path_factory, config):
    base = tmp_path_factory.getbasetemp()
    # under xdist every worker has its own basetemp below one common root
    return base.parent if hasattr(config, "workerinput") else base


@pytest.fixture(scope="session")
def lake_verilator(tmp_path_factory, request):
    """preset name -> :class:`lake.sim.VerilatorMemory` (built at most once per session)."""
    from lake.sim import VerilatorMemory

    root = _shared_root(tmp_path_factory, request.config) / "lake_verilator"
    work = tmp_path_factory.mktemp("lake_work")
    cache: dict[str, VerilatorMemory] = {}

    def get(preset: str) -> VerilatorMemory:
        if preset not in cache:
            cache[preset] = VerilatorMemory(preset, root / preset, workdir=work / preset)
        return cache[preset]

    return get


@pytest.fixture(scope="session")
def lake_backend(lake_verilator):
    def get(name: str):
        if name == "model":
            return run_model
        if name == "multiplier":  # Python model with multiplier-form generators
            return lambda preset, config, stim: run_model(preset, config, stim, "multiplier")
        if name == "rtl":
            return lambda preset, config, stim: lake_verilator(preset).run(config, stim)
        raise ValueError(f"unknown backend {name}")

    return get
