"""Acceptance tests of issue 5: each on the golden model, the Python model and Verilator."""
from __future__ import annotations

import random

import numpy as np
import pytest

from lake.config import configure, decode
from lake.golden import simulate
from lake.model import make_stimulus
from lake.program import delay_line, delay_taps, program
from lake_helpers import assert_streams_match, run_three

BACKENDS = ["model", "rtl"]


# ---------------------------------------------------------------------------------------
# Linear delay: write 64 words at cycles 0..63, read with schedule offset 16
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("preset", ["dualport_2048x16", "pub_512x64", "pond_32x16"])
def test_linear_delay(preset, backend, lake_backend):
    if preset == "pond_32x16":  # 32 words: circular buffer of the same stream
        w, r = delay_line(16, 64, 32)
    else:
        w, r = program([64], [1], 0, [1], 0), program([64], [1], 0, [1], 16)
    progs = {"data_in_0": w, "data_out_0": r}
    vals = [(7919 * k + 13) % 65536 for k in range(64)]
    golden, got = run_three(preset, progs, {"data_in_0": vals}, lake_backend(backend),
                            stall=[1, 1, 0, 1, 0, 0, 1])
    # known answer: output k at cycle 16 + k + read latency 1
    assert golden["data_out_0"] == [(17 + k, vals[k]) for k in range(64)]
    assert_streams_match(golden, got)


# ---------------------------------------------------------------------------------------
# 3x3 line buffer on a 6x6 image
# ---------------------------------------------------------------------------------------
def _line_buffer_golden(img):
    """The abstract unified buffer: 1 input, 9 outputs (one per window position), read
    when the window is complete (cycle i + 6j + 14), read latency 0."""
    progs = {"in": program([36], [1], 0, [1], 0)}
    for dy in range(3):
        for dx in range(3):
            progs[f"w{dx}{dy}"] = program([4, 4], [1, 6], dx + 6 * dy, [1, 6], 14)
    return simulate(progs, {"in": img.flatten().tolist()}, read_latency=0)


def test_line_buffer_golden_known_answer():
    img = np.arange(36).reshape(6, 6) * 3 + 1
    out = _line_buffer_golden(img)
    for dy in range(3):
        for dx in range(3):
            exp = [(i + 6 * j + 14, int(img[j + dy, i + dx])) for j in range(4) for i in range(4)]
            assert out[f"w{dx}{dy}"] == exp


@pytest.mark.parametrize("backend", BACKENDS)
def test_line_buffer_two_dual_port_tiles(backend, lake_backend):
    """Hardware realisation: two dual-port tiles delay the raster by one row each; the
    window columns come from 2 registers per row (6 registers, as in the UB paper)."""
    run = lake_backend(backend)
    rng = random.Random(5)
    img = np.array([rng.randrange(65536) for _ in range(36)]).reshape(6, 6)
    golden = _line_buffer_golden(img)
    pre = "dualport_2048x16"
    # tile A: write pixel t at t, read at t + 5 -> out at t + 6
    pa = {"data_in_0": program([36], [1], 0, [1], 0), "data_out_0": program([36], [1], 0, [1], 5)}
    sa = make_stimulus(pre, pa, {"data_in_0": img.flatten().tolist()}, stall=[1, 0, 1], seed=1)
    row1 = run(pre, configure(pre, pa), sa)["data_out_0"]
    assert [c for c, _ in row1] == list(range(6, 42))
    # tile B: its input is tile A's output stream (pixel t at t + 6)
    pb = {"data_in_0": program([36], [1], 0, [1], 6), "data_out_0": program([36], [1], 0, [1], 11)}
    sb = make_stimulus(pre, pb, {"data_in_0": [v for _, v in row1]}, stall=[1, 1, 0], seed=2)
    row0 = run(pre, configure(pre, pb), sb)["data_out_0"]
    taps = {2: {t: int(v) for t, v in enumerate(img.flatten())}, 1: dict(row1), 0: dict(row0)}
    for dy in range(3):
        for dx in range(3):
            got = [(c, taps[dy][c - (2 - dx)]) for c, _ in golden[f"w{dx}{dy}"]]
            assert got == golden[f"w{dx}{dy}"], f"window ({dx},{dy})"


# ---------------------------------------------------------------------------------------
# Brighten-blur buffer (64x64): distances 0, 1, 64, 65; first blur window at cycle 65
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_brighten_blur_buffer(backend, lake_backend):
    rng = random.Random(11)
    img = np.array([rng.randrange(30000) for _ in range(64 * 64)], dtype=np.int64).reshape(64, 64)
    bright = img * 2
    stream = bright.flatten().tolist()
    # abstract buffer: 4 read ports over the 63x63 blur domain
    ub = {"in": program([64, 64], [1, 64], 0, [1, 64], 0)}
    dists = (0, 1, 64, 65)
    for d in dists:
        ub[f"d{d}"] = program([63, 63], [1, 64], 65 - d, [1, 64], 65)
    gold = simulate(ub, {"in": stream}, read_latency=1)
    for d in dists:
        assert gold[f"d{d}"][0][0] == 65 + 1  # first window read at cycle 65, out at 66
    blur = sum(np.array([v for _, v in gold[f"d{d}"]]) for d in dists).reshape(63, 63)
    expect = bright[1:, 1:] + bright[1:, :-1] + bright[:-1, 1:] + bright[:-1, :-1]
    assert (blur == expect).all()
    # one physical unified buffer: out0 = distance 64, out1 = distance 65 (delay lines);
    # distances 0 and 1 are the input stream and one register
    pre = "pub_512x64"
    w, (r64, r65) = delay_taps([64, 65], 4096, 2048, align=4)
    progs = {"data_in_0": w, "data_out_0": r64, "data_out_1": r65}
    stim = make_stimulus(pre, progs, {"data_in_0": stream}, stall=[1, 1, 1, 0])
    got = lake_backend(backend)(pre, configure(pre, progs), stim)
    tap = {0: {t + 1: v for t, v in enumerate(stream)},      # one register after the input
           1: {t + 2: v for t, v in enumerate(stream)},      # two registers
           64: dict(got["data_out_0"]), 65: dict(got["data_out_1"])}
    for d in dists:
        hw = [(c, tap[d][c]) for c, _ in gold[f"d{d}"]]
        assert hw == gold[f"d{d}"], f"distance {d}"


# ---------------------------------------------------------------------------------------
# Downsample: extents [4,4], strides [2,16]
# ---------------------------------------------------------------------------------------
def test_downsample_known_answer():
    p = program([4, 4], [2, 16], 0, [1, 4], 70)
    assert p.addresses().tolist()[:9] == [0, 2, 4, 6, 16, 18, 20, 22, 32]
    assert p.address_deltas() == [2, 10]


@pytest.mark.parametrize("backend", BACKENDS)
def test_downsample(backend, lake_backend):
    pre = "dualport_2048x16"
    progs = {"data_in_0": program([64], [1], 0, [1], 0),
             "data_out_0": program([4, 4], [2, 16], 0, [1, 4], 64)}
    vals = [1000 + k for k in range(64)]
    golden, got = run_three(pre, progs, {"data_in_0": vals}, lake_backend(backend),
                            stall=[1, 0])
    assert [v for _, v in golden["data_out_0"]] == [1000 + a for a in
                                                    [0, 2, 4, 6, 16, 18, 20, 22, 32, 34, 36, 38,
                                                     48, 50, 52, 54]]
    assert_streams_match(golden, got)


# ---------------------------------------------------------------------------------------
# PUB: one word per cycle per port on 2 inputs and 2 outputs; config round trip
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_pub_full_bandwidth(backend, lake_backend):
    pre = "pub_512x64"
    n = 512
    w0, r0 = delay_line(40, n, 1024, align=4)
    w1, r1 = delay_line(52, n, 1024, align=4)

    def shift(p, words):
        d = p.to_dict()
        d["address"]["offset"] += words
        return d

    progs = {"data_in_0": w0.to_dict(), "data_out_0": r0.to_dict(),
             "data_in_1": shift(w1, 1024), "data_out_1": shift(r1, 1024)}
    cfg = configure(pre, progs)
    assert decode(pre, cfg) == progs
    rng = random.Random(3)
    ins = {"data_in_0": [rng.randrange(65536) for _ in range(n)],
           "data_in_1": [rng.randrange(65536) for _ in range(n)]}
    golden, got = run_three(pre, progs, ins, lake_backend(backend))
    assert_streams_match(golden, got)
    # sustained rate: every port moves one word in every cycle of its window
    assert [c for c, _ in got["data_out_0"]] == list(range(41, 41 + n))
    assert [c for c, _ in got["data_out_1"]] == list(range(53, 53 + n))
    assert [v for _, v in got["data_out_0"]] == ins["data_in_0"]
    assert [v for _, v in got["data_out_1"]] == ins["data_in_1"]
