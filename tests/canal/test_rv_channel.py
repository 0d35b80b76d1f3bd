"""A 4-hop ready-valid channel (canal.flow_control.rv_channel) in Verilator: 10^5 words with
no loss, duplication or reordering under random source stalls and sink backpressure, one word
per cycle without stalls (skid and split FIFOs), capacity, the fork's delivery to two sinks,
and the Python model equal to the RTL cycle for cycle on 10 seeds per FIFO kind.
Sources: Cascade (Melchert et al.) §V-D, §VI-E; Zhang, thesis ch. 3. (The split channel comes
first so that, under pytest-xdist, this file builds it while test_flow_control.py builds the
skid one.)"""
from __future__ import annotations

import numpy as np
import pytest
from rv_testutil import ODD, SKID, SPLIT, config, first_mismatch, run_both, run_rtl

from canal.flow_sim import TRACE_COLUMNS, random_stimulus, received, sent, simulate_model

RESET = 2  # reset rows of random_stimulus
WORDS = 100_000
#: cycles from a word's transfer into the channel to valid at the sink, no stalls
LATENCY = {"skid": 4, "split": 2}
COL = {c: i for i, c in enumerate(TRACE_COLUMNS)}


def fire_cycles(trace: np.ndarray, sink: int | None) -> np.ndarray:
    """Cycles of the source's (``sink=None``) or sink ``sink``'s transfers."""
    if sink is None:
        v, r = COL["valid_in"], COL["ready_out"]
    else:
        v, r = COL[f"valid_out{sink}"], COL[f"ready_in{sink}"]
    return np.nonzero((trace[:, v] == 1) & (trace[:, r] == 1))[0]


@pytest.mark.parametrize("p,rate", [(SPLIT, 0.616), (SKID, 0.643)], ids=["split", "skid"])
def test_1e5_words_random_stalls_no_loss_duplication_or_reordering(tmp_path, p, rate):
    stim = random_stimulus(p, WORDS, 2024, 260_000, p_src_stall=0.3, p_sink_stall=(0.3, 0.0),
                           config=config(p, fork_en=(1, 0)))
    trace = run_rtl(p, stim, tmp_path)
    got = received(trace, 0)
    assert got.size == WORDS
    assert np.array_equal(got, stim.words)
    assert np.array_equal(sent(trace), stim.words)
    assert trace[:, COL["alt_ready"]].sum() == 0
    assert trace[:, COL["valid_out1"]].sum() == 0          # the disabled fork sink
    # words per cycle (first transfer in .. last out): 0.7 x 0.7 = 0.49 if no stall were
    # absorbed, 0.7 at most; 8 words of skid buffering absorb more than 4 of split halves
    measured = WORDS / (fire_cycles(trace, 0)[-1] - fire_cycles(trace, None)[0] + 1)
    assert round(measured, 3) == rate


@pytest.mark.parametrize("p", [SKID, SPLIT], ids=["skid", "split"])
def test_no_stalls_one_word_per_cycle(tmp_path, p):
    """cycles (first transfer in .. last transfer out) = words + latency: 4 skid hops 4 cycles,
    4 split halves (2 pairs) 2 cycles."""
    n = 5000
    stim = random_stimulus(p, n, 5, n + 20, config=config(p, fork_en=(1, 0)))
    trace, model = run_both(p, stim, tmp_path)
    assert first_mismatch(trace, model) == ""
    lat = LATENCY[p.fifo]
    src, snk = fire_cycles(trace, None), fire_cycles(trace, 0)
    assert np.array_equal(src, np.arange(RESET, RESET + n))
    assert np.array_equal(snk, np.arange(RESET + lat, RESET + lat + n))
    assert snk[-1] - src[0] + 1 == n + lat
    assert np.array_equal(received(trace, 0), stim.words)


@pytest.mark.parametrize("p,capacity", [(SKID, 8), (SPLIT, 4)], ids=["skid", "split"])
def test_capacity_when_the_sinks_never_take(tmp_path, p, capacity):
    """2 words per skid FIFO, 2 per split pair; the fork stores none."""
    stim = random_stimulus(p, 50, 6, 100, p_sink_stall=(1.0, 1.0))
    trace, model = run_both(p, stim, tmp_path)
    assert first_mismatch(trace, model) == ""
    assert sent(trace).size == capacity
    assert trace[-50:, COL["ready_out"]].sum() == 0


@pytest.mark.parametrize("p,rate", [(SKID, 0.369), (SPLIT, 0.369)], ids=["skid", "split"])
def test_fork_delivers_every_word_to_both_sinks_once(tmp_path, p, rate):
    stim = random_stimulus(p, WORDS, 77, 320_000, p_src_stall=0.2, p_sink_stall=(0.3, 0.6))
    trace = run_rtl(p, stim, tmp_path)
    for k in (0, 1):
        assert np.array_equal(received(trace, k), stim.words), k
    # the slower sink (takes with p = 0.4) sets the rate: 0.369 words per cycle
    last = max(fire_cycles(trace, 0)[-1], fire_cycles(trace, 1)[-1])
    assert round(WORDS / (last - fire_cycles(trace, None)[0] + 1), 3) == rate
    # eager fork: a sink takes the current word before the other does (lead of 1 word, in
    # both directions), never more (no storage after the fork)
    c0 = np.cumsum(trace[:, COL["valid_out0"]] & trace[:, COL["ready_in0"]])
    c1 = np.cumsum(trace[:, COL["valid_out1"]] & trace[:, COL["ready_in1"]])
    assert (c0 - c1).max() == 1 and (c0 - c1).min() == -1


@pytest.mark.parametrize("p", [SKID, SPLIT], ids=["skid", "split"])
def test_fork_without_stalls_one_word_per_cycle(tmp_path, p):
    n = 3000
    stim = random_stimulus(p, n, 8, n + 20)
    trace = run_rtl(p, stim, tmp_path)
    lat = LATENCY[p.fifo]
    for k in (0, 1):
        assert np.array_equal(fire_cycles(trace, k), np.arange(RESET + lat, RESET + lat + n))


@pytest.mark.parametrize("p", [SKID, SPLIT], ids=["skid", "split"])
@pytest.mark.parametrize("seed", range(10))
def test_model_equals_rtl_cycle_for_cycle(tmp_path, p, seed):
    """All ports, every cycle, random source / sink / clk_en stalls and distractor traffic."""
    stim = random_stimulus(p, 800, 1000 + seed, 2500, p_src_stall=0.25,
                           p_sink_stall=(0.35, 0.5), p_clk_stall=0.1)
    trace, model = run_both(p, stim, tmp_path)
    assert first_mismatch(trace, model) == ""
    for k in (0, 1):
        assert np.array_equal(received(trace, k), stim.words)


def test_model_alone_moves_words_in_order():
    """The Python model by itself (no RTL) on a split channel, seed 3."""
    stim = random_stimulus(SPLIT, 300, 3, 1500, p_src_stall=0.4, p_sink_stall=(0.2, 0.7))
    trace = simulate_model(SPLIT, stim)
    assert np.array_equal(received(trace, 1), stim.words)
    assert np.array_equal(received(trace, 0), stim.words)


@pytest.mark.parametrize("seed", [1, 2])
def test_three_hops_without_fork_model_equals_rtl(tmp_path, seed):
    """Another hop count and mux fan-in, one sink (no fork): equal on every port and cycle."""
    stim = random_stimulus(ODD, 800, seed, 2500, p_src_stall=0.3, p_sink_stall=(0.4, 0.0),
                           p_clk_stall=0.1)
    trace, model = run_both(ODD, stim, tmp_path)
    assert first_mismatch(trace, model) == ""
    assert np.array_equal(received(trace, 0), stim.words)
    assert trace[:, COL["valid_out1"]].sum() == 0


def test_three_hops_without_fork_one_word_per_cycle(tmp_path):
    n = 2000
    stim = random_stimulus(ODD, n, 4, n + 10)
    trace = run_rtl(ODD, stim, tmp_path)
    assert np.array_equal(fire_cycles(trace, 0), np.arange(RESET + 3, RESET + 3 + n))
