"""Rates in the ready-valid tile's handshake wrapper (issue 35, item 2): a core's
``emit_<out>`` / ``deq_<in>`` ports (cgra.core.shell_ports) decide per fire which outputs it
emits and which input words it takes; the dataflow PE (peak.examples.dataflow_pe) wrapped
in garnet's 3x2 ready-valid array, in Verilator, under random source and sink stalls."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from canal.rv_array_sim import run_array_harness
from canal.ready_valid import rv_bitstream
from cgra.core import shell_ports
from cgra.errors import ConfigError
from garnet.array import build_interconnect
from garnet.params import from_dict
from peak.assembler import assembler
from peak.examples.dataflow_pe import dataflow_inst, make_dataflow_pe
from rv_array_testutil import _bfs, port, with_fifos, wrapped_harness


PE16 = make_dataflow_pe(16)
MASK = 0xFFFF


@functools.lru_cache(maxsize=None)
def df_array():
    """garnet's 3x2 array (IO row, a row of 16-bit dataflow PEs), 2 tracks, 16-bit tracks
    ready-valid with skid FIFOs."""
    p = from_dict({"width": 3, "height": 2, "tracks": 2, "mem_ratio": 0,
                   "flow_control": {"16": "ready_valid"}, "fifo_kind": "skid",
                   "timing": "cascade-table",
                   "pe": "peak.examples.dataflow_pe:make_dataflow_pe(16)"})
    return build_interconnect(p)


@functools.lru_cache(maxsize=None)
def df_harness():
    return wrapped_harness(df_array())


def routes(ic, inputs=("a",)):
    """IO (0, 0) -> the PE of (1, 1) at each of ``inputs`` (one net), its ``res`` -> IO
    (2, 0); every FIFO site on them enabled."""
    g = ic.graphs[16]
    first = _bfs(g, [port(g, "io2f_16", 0, 0)], port(g, inputs[0], 1, 1), set())
    paths = [with_fifos(g, first, lambda k: True)]
    for name in inputs[1:]:
        tail = _bfs(g, first[:-1], port(g, name, 1, 1), set())
        paths.append(with_fifos(g, first[:first.index(tail[0])] + tail, lambda k: True))
    used = {n for p in paths for n in p}
    out = _bfs(g, [port(g, "res", 1, 1)], port(g, "f2io_16", 2, 0), used)
    return {"in": paths, "out": [with_fifos(g, out, lambda k: True)]}


def bits_for(inst, inputs=("a",)):
    ic = df_array()
    word = assembler(PE16.Inst).encode(inst)
    return rv_bitstream(ic, routes(ic, inputs)) + ic.core_bitstream(1, 1, {"inst": word})


def test_rate_ports_are_external_and_not_routed():
    ic = df_array()
    core = ic.cores[ic.tiles[(1, 1)].core]
    assert shell_ports(core.ports) == {
        "emit_res": "res", "emit_res_p": "res_p", "deq_a": "a", "deq_b": "b", "deq_p": "p",
        "need_a": "a", "need_b": "b", "need_p": "p"}
    assert sorted(core.info["external"]) == ["deq_a", "deq_b", "deq_p", "emit_res",
                                             "emit_res_p", "need_a", "need_b", "need_p"]
    routed = {n.name for n in ic.graphs[16].nodes.values() if (n.x, n.y) == (1, 1)}
    assert "a" in routed and "res" in routed
    assert not routed & set(core.info["external"])


@pytest.mark.parametrize("p_stall, seed", [(0.0, 1), (0.3, 5)])
def test_emit_rate_reduces_a_window_to_one_token(p_stall, seed, tmp_path):
    """MAC over windows of 8: ``res = sum_i a[8m + i] * i`` (``b`` = the counter index),
    emitted once per window: 2000 words in, 250 sums out, in order; without stalls the PE
    takes one word per cycle."""
    inst = dataflow_inst(PE16, [(0, 1, 8)], "Mul", b_src="INDEX", red="ADD", red_level=1,
                         emit_level=1)
    words = np.random.default_rng(seed).integers(0, 1 << 16, 2000)
    want = (words.reshape(-1, 8) * np.arange(8)).sum(axis=1) & MASK
    tr = run_array_harness(df_harness(), bits_for(inst), words, seed, p_stall, p_stall,
                           12000, tmp_path)
    got = tr.received[0]
    assert np.array_equal(got[:, 1], want)
    assert len(tr.sent) == 2000
    if p_stall == 0.0:
        assert tr.sent[-1, 0] - tr.sent[0, 0] == 1999
        assert np.all(np.diff(got[:, 0]) == 8)
    assert tr.received[1].shape == (0, 2)


@pytest.mark.parametrize("p_stall, seed", [(0.0, 2), (0.3, 6)])
def test_deq_rate_holds_an_operand_for_a_window(p_stall, seed, tmp_path):
    """``a`` dequeued once per window of 4 (``deq_a_level = 1``), ``res = a + index`` every
    fire: each word gives 4 tokens, a, a+1, a+2, a+3."""
    inst = dataflow_inst(PE16, [(0, 1, 4)], "Add", b_src="INDEX", deq_a_level=1)
    words = np.random.default_rng(seed).integers(0, 1 << 16, 500)
    want = ((words[:, None] + np.arange(4)) & MASK).ravel()
    tr = run_array_harness(df_harness(), bits_for(inst), words, seed, p_stall, p_stall,
                           12000, tmp_path)
    assert np.array_equal(tr.received[0][:, 1], want)
    assert np.array_equal(tr.sent[:, 1], words)
    if p_stall == 0.0:
        assert tr.received[0][-1, 0] - tr.received[0][0, 0] == 1999


def test_two_inputs_with_predicated_emit(tmp_path):
    """One net into ``a`` and ``b``; ``res_p``-free filter: ``emit_on_p`` with ``p``
    unrouted (0) emits nothing, the PE still takes every word (a sink that never emits);
    then a max-reduction over windows of 5 of ``a * b`` = the square."""
    words = np.random.default_rng(4).integers(0, 256, 1000)
    none = dataflow_inst(PE16, [(0, 1, 5)], "Mul", emit_on_p=1)
    tr = run_array_harness(df_harness(), bits_for(none, ("a", "b")), words, 4, 0.2, 0.2,
                           6000, tmp_path / "none")
    assert tr.received[0].shape == (0, 2) and len(tr.sent) == 1000
    mx = dataflow_inst(PE16, [(0, 1, 5)], "Mul", red="MAX", red_level=1, emit_level=1)
    tr = run_array_harness(df_harness(), bits_for(mx, ("a", "b")), words, 4, 0.2, 0.2,
                           6000, tmp_path / "max")
    assert np.array_equal(tr.received[0][:, 1], (words ** 2).reshape(-1, 5).max(axis=1))


def test_dataflow_inst_refuses_out_of_range():
    with pytest.raises(ConfigError, match="emit_level = 4 must be in 0..3"):
        dataflow_inst(PE16, [(0, 1, 8)], emit_level=4)
    with pytest.raises(ConfigError, match="op = 'Div' needs a divider; build the PE with "
                                          r"make_dataflow_pe\(..., div=True\)"):
        dataflow_inst(PE16, [(0, 1, 8)], "Div")
    with pytest.raises(ConfigError, match="op = 'Sqrt'; choose one of"):
        dataflow_inst(PE16, [(0, 1, 8)], "Sqrt")
    with pytest.raises(ConfigError, match="4 counter levels given; the chain has 3"):
        dataflow_inst(PE16, [(0, 1, 2)] * 4)
