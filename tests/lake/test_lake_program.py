"""Affine math, port-program validation and the config encoder / decoder."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgra.config import CONFIG_DATA_WIDTH, encode_fields, decode_fields, pack_fields
from cgra.errors import ConfigError, SpecError
from lake.affine import (affine_values, deltas_from_strides, recurrence_values,
                         strides_from_deltas)
from lake.config import config_fields, configure, controller_programs, decode
from lake.program import PortProgram, delay_line, program
from lake.spec import PRESETS, preset


# --- affine ----------------------------------------------------------------------------
def test_delta_formula_known_answers():
    assert deltas_from_strides([4, 4], [2, 16]) == [2, 10]
    # 3 levels: delta_2 = s_2 - (e_0-1)s_0 - (e_1-1)s_1
    assert deltas_from_strides([3, 5, 2], [1, 10, 100]) == [1, 8, 100 - 2 - 40]
    # unit extents contribute nothing to the wrap
    assert deltas_from_strides([1, 4], [7, 3]) == [7, 3]


dims = st.integers(1, 5)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_recurrence_equals_multiplier_form(data):
    d = data.draw(dims)
    ext = data.draw(st.lists(st.integers(1, 5), min_size=d, max_size=d))
    strides = data.draw(st.lists(st.integers(-50, 50), min_size=d, max_size=d))
    off = data.draw(st.integers(-100, 100))
    deltas = deltas_from_strides(ext, strides)
    assert strides_from_deltas(ext, deltas) == strides
    assert list(recurrence_values(ext, deltas, off)) == affine_values(ext, strides, off).tolist()
    # the same in a 12-bit register (hardware wraps)
    assert list(recurrence_values(ext, deltas, off, 1 << 12)) == [
        v % 4096 for v in affine_values(ext, strides, off).tolist()]


# --- validation ------------------------------------------------------------------------
GOOD_W = program([64], [1], 0, [1], 0)
GOOD_R = program([64], [1], 0, [1], 16)


def _cfg(pre, **ports):
    return configure(pre, {k: v for k, v in ports.items()})


@pytest.mark.parametrize("pre", list(PRESETS))
def test_non_increasing_schedule_names_port_and_rule(pre):
    bad = program([4, 4], [1, 4], 0, [1, 2], 40)  # level-1 delta 2 - 3 = -1
    with pytest.raises(ConfigError, match=r"port data_out_0: rule 'schedule-increasing'.*level 1"):
        _cfg(pre, data_in_0=program([32], [1], 0, [1], 0), data_out_0=bad)


@pytest.mark.parametrize("pre", list(PRESETS))
def test_extent_zero(pre):
    bad = {"dimensionality": 2, "extents": [4, 0], "address": {"strides": [1, 4], "offset": 0},
           "schedule": {"strides": [1, 4], "offset": 0}}
    with pytest.raises(ConfigError, match=r"port data_in_0: rule 'extent' broken: extents\[1\] = 0"):
        _cfg(pre, data_in_0=bad)


@pytest.mark.parametrize("pre,words", [("dualport_2048x16", 2048), ("pub_512x64", 2048),
                                       ("pond_32x16", 32)])
def test_out_of_range_offset(pre, words):
    bad = program([4], [1], words - 2, [1], 0)
    with pytest.raises(ConfigError, match=rf"port data_out_0: rule 'address-range'.*\[0, {words - 1}\]"):
        _cfg(pre, data_out_0=bad)
    # chaining two tiles doubles the address space
    configure(pre, {"data_out_0": program([4], [1], words, [1], 4)}, chain_index=1,
              chain_length=2)


def test_same_cycle_conflict_on_single_port():
    # in0 commits a chunk every 4 cycles, in1 every 5: their SRAM writes must collide
    w0 = program([4, 16], [1, 4], 0, [1, 4], 0)
    w1 = program([4, 16], [1, 4], 1024, [1, 5], 0)
    with pytest.raises(ConfigError, match=r"ports data_in_0 and data_in_1: rule 'conflict'.*"
                                          r"single SRAM port.*at cycle \d+"):
        configure("pub_512x64", {"data_in_0": w0, "data_in_1": w1})
    # either one alone is fine
    configure("pub_512x64", {"data_in_0": w0})
    configure("pub_512x64", {"data_in_1": w1})


def test_pub_vectorization_and_dependence_rules():
    with pytest.raises(ConfigError, match=r"port data_in_0: rule 'vectorization'.*stride is 2"):
        configure("pub_512x64", {"data_in_0": program([8], [2], 0, [1], 0)})
    # a 6-word write is two chunks, the last partial (test_lake_pub_partial.py); rows of 6
    # words at a pitch of 6 break the pitch rule (outer strides multiples of 4)
    configure("pub_512x64", {"data_in_0": program([6], [1], 0, [1], 0)})
    with pytest.raises(ConfigError, match=r"port data_in_0: rule 'pitch'.*strides \[6\].*"
                                          r"pitch of 8 words"):
        configure("pub_512x64", {"data_in_0": program([6, 2], [1, 6], 0, [1, 6], 0)})
    # reading 3 cycles after the write: the aggregator has not committed the chunk yet
    w, r = program([64], [1], 0, [1], 0), program([64], [1], 0, [1], 3)
    with pytest.raises(ConfigError, match=r"port data_out_0: rule 'dependence'.*address 0"):
        configure("pub_512x64", {"data_in_0": w, "data_out_0": r})
    with pytest.raises(ConfigError, match=r"port data_out_0: rule 'prefetch'"):
        configure("pub_512x64", {"data_out_0": program([4], [1], 0, [1], 1)})


def test_other_rules():
    with pytest.raises(ConfigError, match=r"port data_in_0: rule 'dimensionality'.*1\.\.6"):
        configure("dualport_2048x16", {"data_in_0": program([1] * 7, [0] * 7, 0, [1] * 7, 0)})
    with pytest.raises(ConfigError, match=r"port data_in_0: rule 'dimensionality'.*2 extents"):
        configure("dualport_2048x16", {"data_in_0": {
            "dimensionality": 1, "extents": [2, 2], "address": {"strides": [1], "offset": 0},
            "schedule": {"strides": [1], "offset": 0}}})
    with pytest.raises(ConfigError, match=r"port data_in_0: malformed"):
        configure("dualport_2048x16", {"data_in_0": {"extents": [2]}})
    with pytest.raises(ConfigError, match=r"unknown port 'data_in_1'.*data_in_0"):
        configure("dualport_2048x16", {"data_in_1": GOOD_W})
    with pytest.raises(ConfigError, match=r"rule 'schedule-range'.*24-bit"):
        configure("dualport_2048x16", {"data_in_0": program([4], [1], 0, [1], 1 << 24)})
    with pytest.raises(ConfigError, match=r"rule 'extent'.*16-bit"):
        configure("dualport_2048x16", {"data_in_0": program([70000], [0], 0, [1], 0)})
    with pytest.raises(ConfigError, match="chain_index 2"):
        configure("dualport_2048x16", {}, chain_index=2, chain_length=2)
    with pytest.raises(SpecError, match="unknown Lake preset 'nope'"):
        preset("nope")


# --- config fields, round trips ----------------------------------------------------------
@pytest.mark.parametrize("pre", list(PRESETS))
def test_config_fields_fit_registers_and_pack(pre):
    fields = config_fields(pre)
    assert all(1 <= f.width <= CONFIG_DATA_WIDTH for f in fields)
    cfg = configure(pre, {"data_out_0": program([4, 4], [1, 8], 0, [1, 4], 10)})
    assert set(cfg) == {f.name for f in fields}
    regs = encode_fields(fields, cfg)
    assert decode_fields(fields, regs) == cfg
    assert len(pack_fields(fields)) == len(fields)  # no field straddles a register


def test_dual_port_config_known_values():
    cfg = configure("dualport_2048x16", {"data_out_0": program([4, 4], [2, 16], 5, [1, 4], 64)})
    assert cfg["out0_enable"] == 1 and cfg["in0_enable"] == 0
    assert cfg["out0_dim"] == 2
    assert [cfg[f"out0_range_{k}"] for k in range(6)] == [3, 3, 0, 0, 0, 0]
    assert [cfg[f"out0_addr_delta_{k}"] for k in range(2)] == [2, 10]
    assert [cfg[f"out0_sched_delta_{k}"] for k in range(2)] == [1, 1]
    assert cfg["out0_addr_offset"] == 5 and cfg["out0_sched_offset"] == 64
    # a negative delta is stored in two's complement of the 15-bit address register
    cfg = configure("dualport_2048x16", {"data_out_0": program([4, 2], [1, 0], 0, [1, 4], 0)})
    assert cfg["out0_addr_delta_1"] == (1 << 15) - 3


def test_pub_vectorisation_known_values():
    w, r = delay_line(64, 4096, 2048, align=4)
    cps = controller_programs("pub_512x64", {"data_in_0": w, "data_out_0": r})
    agg, tb = cps["agg0"], cps["tb0"]
    assert w.extents == (128, 32) and agg.extents == (32, 32)
    assert agg.addresses["addr"].strides == (1, 0)
    assert agg.schedule.strides == (4, 128)
    assert agg.schedule.offset == 3 + 1  # last word of chunk 0 at cycle 3, commit after
    assert tb.schedule.offset == 64 - 2  # fetch 2 cycles before the first read (phase 0)
    assert [s % 2 for s in tb.addresses["half"].strides] == [1, 0]  # chunk parity
    assert [s % 8 for s in cps["in0"].addresses["addr"].strides] == [1, 0]  # slot = i0 mod 8


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_decode_round_trip(data):
    pre = data.draw(st.sampled_from(["dualport_2048x16", "pond_32x16"]))
    words = preset(pre).storage.words
    d = data.draw(st.integers(1, 6))
    ext = data.draw(st.lists(st.integers(1, 3), min_size=d, max_size=d))
    sdel = data.draw(st.lists(st.integers(1, 9), min_size=d, max_size=d))
    astr = data.draw(st.lists(st.integers(-3, 3), min_size=d, max_size=d))
    lo = sum(min(0, s * (e - 1)) for s, e in zip(astr, ext, strict=True))
    hi = sum(max(0, s * (e - 1)) for s, e in zip(astr, ext, strict=True))
    if hi - lo >= words:
        return
    p = program(ext, astr, -lo, strides_from_deltas(ext, sdel), data.draw(st.integers(0, 99)))
    cfg = configure(pre, {"data_in_0": p})
    assert decode(pre, cfg) == {"data_in_0": p.to_dict()}
    assert PortProgram.from_dict(decode(pre, cfg)["data_in_0"]) == p


def test_delay_of_the_full_capacity_fits_one_tile():
    from lake.golden import simulate
    from lake.model import make_stimulus, run_model

    # output appears 2048 cycles after the write: read delay 2047 on 2048 words
    w, r = delay_line(2047, 4096, 2048)
    assert w.extents == (2048, 2)
    progs = {"data_in_0": w, "data_out_0": r}
    vals = [(k * 37) % 65536 for k in range(4096)]
    out = simulate(progs, {"data_in_0": vals})["data_out_0"]
    assert out == [(k + 2048, vals[k]) for k in range(4096)]
    cfg = configure("dualport_2048x16", progs)
    stim = make_stimulus("dualport_2048x16", progs, {"data_in_0": vals})
    assert run_model("dualport_2048x16", cfg, stim)["data_out_0"] == out


def test_delay_line_shapes():
    w, r = delay_line(65, 4096, 2048, align=4)
    assert w.extents == (128, 32) and r.schedule.offset == 65
    w, r = delay_line(10, 100, 32)
    assert w.extents == (20, 5)  # 20 divides 100 and exceeds the delay
    w, r = delay_line(0, 16, 2048)
    assert w.extents == (16,)
    with pytest.raises(ConfigError, match="delay 32 needs more than 32 words"):
        delay_line(32, 100, 32)
