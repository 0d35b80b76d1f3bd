"""Helpers shared by the Lake tests (plain functions, no fixtures)."""
from __future__ import annotations

from lake.config import configure
from lake.golden import simulate
from lake.model import make_stimulus


def assert_streams_match(golden: dict, got: dict, ports=None) -> None:
    """Same (cycle) events per port; values equal wherever the golden value is defined."""
    for q in ports or golden:
        g, h = golden[q], got[q]
        assert [c for c, _ in h] == [c for c, _ in g], (
            f"port {q}: cycles differ; golden {g[:6]}..., got {h[:6]}...")
        bad = [(c, gv, hv) for (c, gv), (_, hv) in zip(g, h, strict=True) if gv is not None and gv != hv]
        assert not bad, f"port {q}: values differ at (cycle, golden, got) {bad[:5]}"


def run_three(preset, programs, inputs, run, stall=None, seed=0):
    """Configure ``preset`` for ``programs``; return (golden streams, backend streams)."""
    config = configure(preset, programs)
    golden = simulate(programs, inputs, read_latency=1)
    stim = make_stimulus(preset, programs, inputs, stall=stall, seed=seed)
    return golden, run(preset, config, stim)
