"""The cycle-level Python model of the ready-valid static network (canal.rv_netsim; issue 33,
item 5) against the Verilator model of the same array, bitstream and stall draws: every
transfer at the source and at every sink in the same cycle with the same word, for a
multicast net (an eager fork in a switch box), a wrapped PE (combinational and through its
input register), a PE with two outputs (the wrapper's own eager fork) and FIFO sites that
start with a token; and the per-link word counters."""
from __future__ import annotations

import numpy as np
import pytest
from hwtypes import Bit
from hwtypes import BitVector as BV

from canal.ready_valid import rv_bitstream
from canal.rv_array_sim import run_array_harness
from canal.rv_netsim import simulate
from cgra.errors import ConfigError
from peak.assembler import assembler
from peak.examples.cgra_pe import ALU, Cond, Inst, Mode

from rv_array_testutil import (IO_SINKS, SOURCE, TWO_OUTPUT_SINKS, core_harness, core_routes,
                               multicast_route, pe_array, pe_array_all_rv, two_output_harness,
                               two_output_routes)

WORDS = np.random.default_rng(11).integers(0, 1 << 16, 400)
CYCLES = 2000


def _inst(mode: Mode, cond: Cond = Cond.Z) -> int:
    """The PE of (1, 1) adds the constant 7 to ``data0`` (through ``mode``)."""
    return assembler(Inst).encode(Inst(
        alu=ALU.Add, signed=Bit(0), cond=cond, lut=BV[8](0), data0_mode=mode,
        data0_const=BV[16](0), data1_mode=Mode.CONST, data1_const=BV[16](7),
        bit0_mode=Mode.BYPASS, bit0_const=Bit(0), bit1_mode=Mode.BYPASS, bit1_const=Bit(0),
        bit2_mode=Mode.BYPASS, bit2_const=Bit(0)))


def _plus7(k):
    return (WORDS[k] + 7) & 0xFFFF


def _word(t):
    """The word of token ``t`` through a plain route (-1: a FIFO's initial word, 0)."""
    return np.where(t < 0, 0, WORDS[np.maximum(t, 0)])


def _delayed_plus7(t):
    """Through the PE's input register: the k-th fire outputs word k-1 (0 first) + 7."""
    return (np.concatenate([[0], WORDS])[t] + 7) & 0xFFFF


#: case -> (interconnect, routes, harness, sinks, PE instruction or None, FIFO tokens,
#: the word sink k gets for token t (None: an idle sink))
def _case(name):
    if name in ("multicast", "multicast_t1"):
        ic = pe_array()
        tokens = int(name.endswith("_t1"))
        return (ic, {"n": multicast_route(ic.graphs[16], IO_SINKS)}, core_harness(tokens),
                IO_SINKS, None, tokens, (_word, _word))
    if name in ("pe_bypass", "pe_delay"):
        ic = pe_array()
        mode = Mode.BYPASS if name == "pe_bypass" else Mode.DELAY
        word = _plus7 if mode == Mode.BYPASS else _delayed_plus7
        return (ic, core_routes(ic.graphs[16]), core_harness(), IO_SINKS, _inst(mode), 0,
                (word, None))
    ic = pe_array_all_rv()
    return (ic, two_output_routes(ic), two_output_harness(), TWO_OUTPUT_SINKS,
            _inst(Mode.BYPASS, Cond.N), 0, (_plus7, lambda t: _plus7(t) >> 15))


@pytest.mark.parametrize("name", ["multicast", "multicast_t1", "pe_bypass", "pe_delay",
                                  "two_outputs"])
def test_model_matches_verilator_cycle_for_cycle(name, tmp_path):
    ic, routes, h, sinks, inst, tokens, word = _case(name)
    bits = rv_bitstream(ic, routes)
    if inst is not None:
        bits += ic.core_bitstream(1, 1, {"inst": inst})
    for p, seed in ((0.0, 1), (0.3, 2), (0.3, 3), (0.6, 4)):
        tr = run_array_harness(h, bits, WORDS, seed, p, p, CYCLES, tmp_path / f"{p}_{seed}")
        m = simulate(ic.graphs, routes, SOURCE, sinks, len(WORDS), seed, p, p, CYCLES,
                     fifo_tokens=tokens)
        sent = np.array(m.sent, dtype=np.int64).reshape(-1, 2)
        assert np.array_equal(tr.sent[:, 0], sent[:, 0]), (p, seed)
        assert np.array_equal(tr.sent[:, 1], WORDS[sent[:, 1]])
        for k, (rtl, model) in enumerate(zip(tr.received, m.received, strict=True)):
            got = np.array(model, dtype=np.int64).reshape(-1, 2)
            assert np.array_equal(rtl[:, 0], got[:, 0]), (name, p, seed, k)
            if word[k] is None:
                assert len(got) == 0
            else:
                assert np.array_equal(rtl[:, 1], word[k](got[:, 1]))
                # the initial tokens first (one per FIFO site on the path, with tokens),
                # then every word once, in order
                first = len(got) - len(WORDS)
                assert (first > 0) == bool(tokens)
                assert got[:first, 1].tolist() == [-1] * first
                assert got[first:, 1].tolist() == list(range(len(WORDS)))


def test_link_counters_count_each_word_once_per_node():
    """The multicast net without stalls: every node of the tree passed all 400 words once
    (the shared prefix too, not once per sink); no node off the route is counted."""
    ic = pe_array()
    routes = {"n": multicast_route(ic.graphs[16], IO_SINKS)}
    m = simulate(ic.graphs, routes, SOURCE, IO_SINKS, len(WORDS), 1, 0.0, 0.0, 600)
    on_route = {nid for path in routes["n"] for nid in path}
    assert set(m.link_words) == on_route
    assert set(m.link_words.values()) == {len(WORDS)}
    assert [len(r) for r in m.received] == [len(WORDS)] * 2


def test_unknown_node_and_missing_source_are_config_errors():
    ic = pe_array()
    with pytest.raises(ConfigError, match="node SB:16:9:9:NORTH:0:OUT is in no routing graph"):
        simulate(ic.graphs, {"n": [["SB:16:9:9:NORTH:0:OUT"]]}, SOURCE, IO_SINKS, 1, 1, 0, 0, 1)
    routes = {"n": multicast_route(ic.graphs[16], IO_SINKS)}
    with pytest.raises(ConfigError, match=r"socket io2f_16 of tile \(2, 0\) is on no route"):
        simulate(ic.graphs, routes, ("io2f_16", 2, 0), IO_SINKS, 1, 1, 0, 0, 1)
