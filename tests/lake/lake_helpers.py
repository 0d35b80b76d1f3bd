"""Helpers shared by the Lake tests (plain functions, no fixtures)."""
from __future__ import annotations

import random

from lake.config import configure, decode
from lake.golden import simulate
from lake.model import make_stimulus, run_model


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


def image(w: int, h: int, seed: int) -> list[list[int]]:
    """A ``h`` x ``w`` image of random 16-bit words drawn from ``random.Random(seed)``."""
    rng = random.Random(seed)
    return [[rng.randrange(65536) for _ in range(w)] for _ in range(h)]


def flat(img: list[list[int]]) -> list[int]:
    """The words of ``img`` row by row."""
    return [v for row in img for v in row]


def observable(prog: dict) -> dict:
    """A program dict with the strides of its extent-1 levels set to 0."""
    def zero(strides):
        return [s if e > 1 else 0 for s, e in zip(strides, prog["extents"], strict=True)]
    return dict(prog, address=dict(prog["address"], strides=zero(prog["address"]["strides"])),
                schedule=dict(prog["schedule"], strides=zero(prog["schedule"]["strides"])))


def assert_rtl_equals_model(preset, programs, inputs, run_rtl) -> dict:
    """Configure ``preset`` for ``programs`` and drive the same stimulus (stall
    [1, 1, 0, 1, 1], seed 21) through the Python model and ``run_rtl`` (the Verilator
    backend). Asserts RTL streams == model streams and that they match the golden model;
    returns the RTL streams."""
    cfg = configure(preset, programs)
    stim = make_stimulus(preset, programs, inputs, stall=[1, 1, 0, 1, 1], seed=21)
    model = run_model(preset, cfg, stim)
    rtl = run_rtl(preset, cfg, stim)
    assert rtl == model
    assert_streams_match(simulate(programs, inputs), rtl)
    return rtl


def assert_decoded_and_golden(preset, programs, cfg, inputs, seed) -> dict:
    """For a configuration ``cfg`` that configure accepted for ``programs``: asserts decode
    inverts configure up to the strides of extent-1 levels (never applied), and that the
    Python model (stall [1, 0, 1], ``seed``) matches the golden model. Returns the golden
    streams."""
    assert {p: observable(v) for p, v in decode(preset, cfg).items()} == {
        p: observable(v.to_dict()) for p, v in programs.items()}
    golden = simulate(programs, inputs)
    stim = make_stimulus(preset, programs, inputs, stall=[1, 0, 1], seed=seed)
    assert_streams_match(golden, run_model(preset, cfg, stim))
    return golden


def assert_known_answer(preset, programs, inputs, run, expect: list, stall, seed: int):
    """:func:`run_three` with ``stall`` and ``seed``; asserts the golden ``data_out_0`` stream
    is ``expect`` (a list of (cycle, value)), the backend matches golden on every port, and
    the backend ``data_out_0`` stream is ``expect``. Returns (golden streams, backend
    streams)."""
    golden, got = run_three(preset, programs, inputs, run, stall=stall, seed=seed)
    assert golden["data_out_0"] == expect
    assert_streams_match(golden, got)
    assert got["data_out_0"] == expect
    return golden, got
