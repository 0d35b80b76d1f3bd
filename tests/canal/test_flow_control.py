"""Ready-valid primitives of canal.flow_control: known-answer cycle sequences on the Python
models, the RTL of each primitive isolated inside a channel top (Verilator) against its
model, the split-FIFO pair against the skid FIFO, generation once per parameter set, lint,
and the config checks. Sources: Cascade (Melchert et al.) §V-D; Zhang, thesis ch. 3."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest
from rv_testutil import SKID, SPLIT, config, first_mismatch, run_both, run_rtl

from cgra.errors import ConfigError, SpecError
from cgra.hdl import m

from canal.flow_control import (ChannelConfig, ChannelParams, magma_circuit, rv_channel,
                                rv_fork, rv_mux, skid_fifo, split_fifo_half, switch_box)
from canal.flow_model import (ChannelModel, RvForkModel, RvMuxModel, SkidFifoModel,
                              SplitFifoHalfModel)
from canal.flow_sim import TRACE_COLUMNS, random_stimulus, received, sent

V0, O0 = TRACE_COLUMNS.index("valid_out0"), TRACE_COLUMNS.index("O0")


def drive(stage, rows):
    """Run one FIFO model: rows of (valid_in, I, ready_in); per cycle (ready_out, valid_out, O)."""
    out = []
    for v, d, r in rows:
        vo, o = stage.forward(v, d, 1)
        ro = stage.backward(r, 1)
        out.append((ro, vo, o))
        stage.step(v, d, r, 1)
    return out


def test_skid_fifo_fills_to_two_and_drains_in_order():
    # cycles 0-2: the sink stalls; the FIFO takes A and B, then ready_out drops (2 entries);
    # cycles 3-5: the sink takes A, B, C one per cycle (C enters in cycle 4)
    rows = [(1, 0xA, 0), (1, 0xB, 0), (1, 0xC, 0), (1, 0xC, 1), (1, 0xC, 1), (0, 0, 1)]
    got = drive(SkidFifoModel(16), rows)
    assert [g[0] for g in got] == [1, 1, 0, 0, 1, 1]
    assert [(g[1], g[2]) for g in got] == [(0, 0), (1, 0xA), (1, 0xA), (1, 0xA), (1, 0xB),
                                           (1, 0xC)]


def test_skid_fifo_latency_one_and_full_rate():
    rows = [(1, 100 + t, 1) for t in range(10)]
    got = drive(SkidFifoModel(16), rows)
    assert all(g[0] == 1 for g in got)
    assert [g[2] for g in got if g[1]] == [100 + t for t in range(9)]  # word t out in t + 1
    assert got[0][1] == 0


def test_split_start_half_bypasses_when_empty_and_end_half_registers():
    start = SplitFifoHalfModel(16, fifo_end=0)
    assert start.forward(1, 7, 1) == (1, 7)      # 0 cycles: valid and data pass through
    assert start.backward(0, 1) == 1             # ready = not full (a register)
    start.step(1, 7, 0, 1)                       # downstream stalled: the word is stored
    assert (start.full, start.value) == (1, 7)
    assert start.backward(1, 1) == 0 and start.forward(1, 9, 1) == (1, 7)
    end = SplitFifoHalfModel(16, fifo_end=1)
    assert end.forward(1, 5, 1) == (0, 0)        # no pass-through: 1 cycle
    assert end.backward(0, 1) == 1
    end.step(1, 5, 0, 1)
    assert end.forward(0, 0, 1) == (1, 5)
    assert end.backward(0, 1) == 0 and end.backward(1, 1) == 1  # full: ready = ready_in


def test_split_pair_equals_skid_fifo_model():
    """Start half + end half = one 2-entry FIFO: equal to the skid FIFO at the ports every
    cycle (data compared when valid) under random valid / ready / clk_en."""
    rng = np.random.default_rng(7)
    skid = SkidFifoModel(16)
    start, end = SplitFifoHalfModel(16, fifo_end=0), SplitFifoHalfModel(16, fifo_end=1)
    for _ in range(5000):
        v, d, r, ce = (int(rng.random() < 0.7), int(rng.integers(1 << 16)),
                       int(rng.random() < 0.6), int(rng.random() < 0.9))
        sv, so = skid.forward(v, d, ce)
        sr = skid.backward(r, ce)
        v1, d1 = start.forward(v, d, ce)
        v2, d2 = end.forward(v1, d1, ce)
        r1 = end.backward(r, ce)
        r0 = start.backward(r1, ce)
        assert (sv, sr) == (v2, r0)
        if sv:
            assert so == d2
        skid.step(v, d, r, ce)
        start.step(v, d, r1, ce)
        end.step(v1, d1, r, ce)
        assert skid.occupancy == start.full + end.full


def test_mux_routes_ready_to_selected_input_only():
    m = RvMuxModel(4, sel=2)
    assert m.forward([1, 0, 0, 1], [10, 11, 12, 13]) == (0, 12)
    assert m.backward(1) == [0, 0, 1, 0]
    assert RvMuxModel(3, sel=3).forward([1, 1, 1], [1, 2, 3]) == (0, 0)
    assert RvMuxModel(3, sel=3).backward(1) == [0, 0, 0]


def test_fork_is_eager_and_gives_no_sink_a_word_twice():
    f = RvForkModel(2)
    # cycle 0: sink 0 takes X, sink 1 stalls: the source must hold X
    assert f.forward(1, 1) == [1, 1] and f.backward((1, 0), 1) == 0
    f.step(1, (1, 0), 1)
    # cycle 1: X is offered to sink 1 only; when it takes it, the source sees ready
    assert f.forward(1, 1) == [0, 1] and f.backward((1, 1), 1) == 1
    f.step(1, (1, 1), 1)
    assert f.taken == [0, 0]
    # a disabled sink does not hold the word back
    g = RvForkModel(2, en=(1, 0))
    assert g.forward(1, 1) == [1, 0] and g.backward((1, 0), 1) == 1


def test_each_module_generated_once_and_named_by_parameters():
    assert skid_fifo(16) is skid_fifo(16)
    assert rv_mux(4, 16) is rv_mux(4, 16)
    assert [m.name for m in rv_channel(SKID).modules()] == [
        "RvMux_h4_w16", "RvSkidFifo_w16", "RvFork_n2_w16", "RvChannel_skid_n4_h4_w16_fork"]
    src = rv_channel(SPLIT).source()
    assert src.count("module RvSplitFifoHalf_w16 (") == 1
    assert src.count("RvSplitFifoHalf_w16 fifo") == 4
    assert split_fifo_half(1).name == "RvSplitFifoHalf_w1"
    assert rv_fork(3, 8).name == "RvFork_n3_w8"


def _lint(tmp_path, mod) -> str:
    path = tmp_path / f"{mod.name}.v"
    path.write_text(mod.source())
    res = subprocess.run(["verilator", "--lint-only", "-Wall", "-Wno-DECLFILENAME",
                          "--top-module", mod.name, str(path)],
                         capture_output=True, text=True, timeout=60)
    return res.stdout + res.stderr + f"exit {res.returncode}"


@pytest.mark.parametrize("mod", [
    skid_fifo(16), split_fifo_half(16), split_fifo_half(1), rv_mux(1, 16), rv_mux(5, 16),
    rv_fork(2, 16), rv_fork(3, 1), rv_channel(SKID), rv_channel(SPLIT),
    rv_channel(ChannelParams(hops=3, fifo="skid", mux_height=2, fork=False)),
    switch_box(2, 16, "static"), switch_box(2, 16, "skid"), switch_box(2, 16, "split")],
    ids=lambda m: m.name)
def test_generated_verilog_is_lint_clean(tmp_path, mod):
    assert _lint(tmp_path, mod) == "exit 0"


def test_config_checks():
    with pytest.raises(ConfigError, match="fork enable mask 0x0"):
        config(SKID, fork_en=(0, 0)).check(SKID)
    with pytest.raises(ConfigError, match="alternate start"):
        config(SPLIT, fifo_end=(1, 0, 1, 0)).check(SPLIT)
    with pytest.raises(ConfigError, match="needs an end half"):
        config(SPLIT, fifo_en=(1, 1, 1, 0)).check(SPLIT)
    with pytest.raises(ConfigError, match="sel"):
        config(SKID, sel=(0, 1, 2)).check(SKID)
    with pytest.raises(SpecError, match="fifo = 'credit'"):
        rv_channel(ChannelParams(fifo="credit"))
    with pytest.raises(SpecError, match="hops = 0"):
        ChannelParams(hops=0).check()
    with pytest.raises(SpecError, match="width 0"):
        skid_fifo(0)
    with pytest.raises(SpecError, match="flow 'credit'"):
        switch_box(1, 16, "credit")
    assert ChannelConfig.default(SPLIT).fifo_end == (0, 1, 0, 1)


# --- RTL of each primitive, isolated by configuration, against its model -------------------

STALLS = dict(p_src_stall=0.3, p_sink_stall=(0.3, 0.4), p_clk_stall=0.1)


@pytest.mark.parametrize("name,p,fields", [
    ("one skid FIFO", SKID, dict(fifo_en=(1, 0, 0, 0), fork_en=(1, 0))),
    ("one split pair", SPLIT, dict(fifo_en=(0, 1, 1, 0), fifo_end=(0, 0, 1, 0),
                                   fork_en=(1, 0))),
    ("fork alone", SKID, dict(fifo_en=(0, 0, 0, 0))),
    ("muxes alone", SPLIT, dict(fifo_en=(0, 0, 0, 0), fork_en=(0, 1))),
])
@pytest.mark.parametrize("seed", [1, 2])
def test_primitive_rtl_equals_model(tmp_path, name, p, fields, seed):
    stim = random_stimulus(p, 600, seed, 2000, config=config(p, **fields), **STALLS)
    rtl, model = run_both(p, stim, tmp_path)
    assert first_mismatch(rtl, model) == "", name
    sinks = [k for k in (0, 1) if stim.config.fork_en[k]]
    for k in sinks:
        assert received(rtl, k).tolist() == stim.words.tolist(), (name, k)
    assert rtl[:, TRACE_COLUMNS.index("alt_ready")].sum() == 0


def test_mux_with_wrong_select_never_readies_the_source(tmp_path):
    """Hop 0 selects the distractor input: the source never sees ready, the distractor's ready
    follows the channel; the RTL equals the model."""
    p = SKID
    stim = random_stimulus(p, 50, 3, 500, config=config(p, sel=(1, 1, 2, 3)), **STALLS)
    rtl, model = run_both(p, stim, tmp_path)
    assert first_mismatch(rtl, model) == ""
    assert rtl[:, TRACE_COLUMNS.index("ready_out")].sum() == 0
    assert rtl[:, TRACE_COLUMNS.index("alt_ready")].sum() > 100
    assert sent(rtl).size == 0


def test_split_pair_rtl_equals_skid_fifo_rtl(tmp_path):
    """Two split halves in a chain behave as one skid FIFO in RTL: same ports in every cycle
    (data compared when valid) under random stalls, with clk_en stalls."""
    stim_skid = random_stimulus(SKID, 1000, 11, 3000,
                                config=config(SKID, fifo_en=(1, 0, 0, 0), fork_en=(1, 0)),
                                **STALLS)
    stim_split = random_stimulus(SPLIT, 1000, 11, 3000,
                                 config=config(SPLIT, fifo_en=(1, 1, 0, 0),
                                               fifo_end=(0, 1, 0, 0), fork_en=(1, 0)), **STALLS)
    assert np.array_equal(stim_skid.rows, stim_split.rows)
    a = run_rtl(SKID, stim_skid, tmp_path / "skid")
    b = run_rtl(SPLIT, stim_split, tmp_path / "split")
    data = [TRACE_COLUMNS.index("O0"), TRACE_COLUMNS.index("O1")]
    ctrl = [i for i in range(len(TRACE_COLUMNS)) if i not in data]
    assert np.array_equal(a[:, ctrl], b[:, ctrl])
    v = a[:, V0] == 1
    assert np.array_equal(a[v, O0], b[v, O0])
    assert received(a, 0).tolist() == stim_skid.words.tolist()


def test_channel_model_rejects_bad_config():
    with pytest.raises(ConfigError):
        ChannelModel(SPLIT, config(SPLIT, fifo_end=(0, 0, 0, 0)))


def test_magma_declaration_instantiates_in_a_magma_tile(tmp_path):
    """A magma circuit instantiates the skid FIFO through its declaration; the emitted Verilog
    plus the primitive's source is a complete, lint-clean design."""
    mod = skid_fifo(16)
    decl = magma_circuit(mod)
    assert decl is magma_circuit(skid_fifo(16))
    assert decl.name == "RvSkidFifo_w16"
    assert [p[0] for p in mod.ports] == ["CLK", "RESET", "clk_en", "fifo_en", "I", "valid_in",
                                         "ready_out", "O", "valid_out", "ready_in"]
    assert dict((p[0], p[2]) for p in mod.ports)["I"] == 16

    class RvHop(m.Circuit):
        io = m.IO(I=m.In(m.Bits[16]), valid_in=m.In(m.Bit), ready_out=m.Out(m.Bit),
                  O=m.Out(m.Bits[16]), valid_out=m.Out(m.Bit), ready_in=m.In(m.Bit),
                  RESET=m.In(m.Bit)) + m.ClockIO()
        f = decl(name="fifo0")
        f.CLK @= io.CLK
        f.RESET @= io.RESET
        f.clk_en @= 1
        f.fifo_en @= 1
        f.I @= io.I
        f.valid_in @= io.valid_in
        io.ready_out @= f.ready_out
        io.O @= f.O
        io.valid_out @= f.valid_out
        f.ready_in @= io.ready_in

    m.compile(str(tmp_path / "hop"), RvHop, output="mlir-verilog")
    text = (tmp_path / "hop.v").read_text()
    assert "RvSkidFifo_w16 fifo0 (" in text
    (tmp_path / "hop.v").write_text(text + "\n" + mod.source())
    res = subprocess.run(["verilator", "--lint-only", "-Wall", "-Wno-DECLFILENAME",
                          "--top-module", "RvHop", str(tmp_path / "hop.v")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr


def test_no_combinational_path_through_a_skid_hop():
    """In every reachable state the skid FIFO's ready_out ignores ready_in and its valid_out /
    O ignore valid_in / I (registered both ways); the split pair's outer ports likewise."""
    rng = np.random.default_rng(12)
    skid = SkidFifoModel(16)
    start, end = SplitFifoHalfModel(16, fifo_end=0), SplitFifoHalfModel(16, fifo_end=1)
    for _ in range(2000):
        assert skid.backward(0, 1) == skid.backward(1, 1)
        assert skid.forward(0, 0, 1) == skid.forward(1, 0xFFFF, 1)
        assert start.backward(0, 1) == start.backward(1, 1)      # pair's ready_out
        assert end.forward(0, 0, 1) == end.forward(1, 0xFFFF, 1)  # pair's valid_out, O
        v, d, r = int(rng.random() < 0.7), int(rng.integers(1 << 16)), int(rng.random() < 0.5)
        v1, d1 = start.forward(v, d, 1)
        r1 = end.backward(r, 1)
        skid.step(v, d, r, 1)
        start.step(v, d, r1, 1)
        end.step(v1, d1, r, 1)
