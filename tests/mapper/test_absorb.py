"""Register-chain absorption (mapper.backend.absorb): the delay-line MEM programs delay every word by
exactly D cycles (Lake's golden model), the MEM encoders accept them, the netlist edit
moves only the planned sinks, and a too-short chain is refused before any placement."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from cgra.errors import MappingError
from lake.golden import simulate
from mapper.backend.absorb import (DelayLine, check_min_chain, delay_line_config, delay_lines_of,
                           insert_delay_lines, last_cycle)
from mapper.mapping.memory import PRESETS, MemSpec
from mapper.backend.pack import PackedDesign, PackedInstance, PackedNet

DUAL = MemSpec.from_dict(PRESETS["dualport_2048x16"])
PUB = MemSpec.from_dict(PRESETS["pub_512x64"])


def _line(chain: int, spec: MemSpec, span: int) -> dict:
    return delay_line_config(DelayLine("n", (("p", "data0"),), chain), spec, spec.name, span)


def _slack(cfg: dict, spec: MemSpec) -> int:
    """Cycles pipelining may read the line later (mapper.backend.pipeline's MEM read absorption)."""
    from mapper.backend.pipeline import _mem_slack

    d = PackedDesign("t", {"dly_n": PackedInstance("dly_n", "mem", "m", cfg)}, [], {})
    return _mem_slack(d, "dly_n", "data_out_0", spec.read_latency)


def _delayed(cfg: dict, spec: MemSpec, later: int) -> dict[int, int | None]:
    """Output cycle -> value of the line's read port on Lake's golden model, its read
    ``later`` cycles later, when the k-th write carries 1000 + k (written at cycle k)."""
    progs = {p: {**v, "schedule": dict(v["schedule"])} for p, v in cfg["ports"].items()}
    progs["data_out_0"]["schedule"]["offset"] += later
    size = math.prod(progs["data_in_0"]["extents"])
    out = simulate(progs, {"data_in_0": [1000 + k for k in range(size)]}, spec.read_latency)
    return dict(out["data_out_0"])


def test_known_answer_programs_of_a_line_for_an_8_register_chain():
    cfg = _line(8, DUAL, 100)
    w, r = cfg["ports"]["data_in_0"], cfg["ports"]["data_out_0"]
    # words for up to 2 * 8 + 8 = 24 cycles; the shortest delay is 2 (read 1 cycle later)
    assert w == {"dimensionality": 2, "extents": [24, 5],
                 "address": {"strides": [1, 0], "offset": 0},
                 "schedule": {"strides": [1, 24], "offset": 0}}
    assert r == {**w, "schedule": {"strides": [1, 24], "offset": 1}}
    assert cfg["balance_delay"] == 2 and cfg["segments"][0]["words"] == 24
    assert _slack(cfg, DUAL) == 22
    pub = _line(11, PUB, 500)
    assert (pub["balance_delay"], pub["segments"][0]["words"]) == (8, 32)   # 30 -> wide words
    assert _slack(pub, PUB) == 24


@settings(max_examples=60, deadline=None)
@given(chain=hs.integers(4, 70), span=hs.integers(1, 300), frac=hs.floats(0, 1))
def test_every_word_comes_out_exactly_d0_plus_e_cycles_later(chain, span, frac):
    """Within the slack pipelining sees, a read ``e`` cycles later returns every word exactly
    ``D0 + e`` cycles after its write; one cycle past the slack loses words."""
    cfg = _line(chain, DUAL, span)
    d0, slack = cfg["balance_delay"], _slack(cfg, DUAL)
    assert slack >= 2 * chain + 8 - d0                     # room for twice the chain
    e = round(frac * slack)
    got = _delayed(cfg, DUAL, e)
    for t in range(span):
        assert got[t + d0 + e] == 1000 + t
    if span > slack + d0 + 2:
        over = _delayed(cfg, DUAL, slack + 1)
        assert any(over[t + d0 + slack + 1] != 1000 + t for t in range(span))


@pytest.mark.parametrize("chain", [8, 11, 20, 33])
def test_the_lake_encoders_accept_the_programs(chain):
    from lake.config import configure

    for spec in (DUAL, PUB):
        cfg = _line(chain, spec, 500)
        for later in (0, _slack(cfg, spec)):
            progs = {p: {**v, "schedule": dict(v["schedule"])} for p, v in cfg["ports"].items()}
            progs["data_out_0"]["schedule"]["offset"] += later
            assert configure(spec.name, progs), (spec.name, later)


def test_too_short_chains_are_refused_naming_the_fix():
    check_min_chain(4, DUAL)
    check_min_chain(8, PUB)
    with pytest.raises(MappingError, match="use --absorb 4 or more"):
        check_min_chain(3, DUAL)
    with pytest.raises(MappingError, match="use --absorb 8 or more"):
        check_min_chain(7, PUB)


def test_a_long_chain_gets_at_most_the_whole_memory():
    cfg = _line(3000, DUAL, 5000)
    assert cfg["segments"][0]["words"] == 2048 and _slack(cfg, DUAL) == 2046


def _design() -> PackedDesign:
    prog = {"dimensionality": 2, "extents": [16, 16],
            "schedule": {"strides": [1, 16], "offset": 3}}
    inst = {"io": PackedInstance("io", "io_in", "I", {"program": prog}),
            "a": PackedInstance("a", "pe", "p", {}), "b": PackedInstance("b", "pe", "p", {}),
            "c": PackedInstance("c", "pe", "p", {}),
            "out": PackedInstance("out", "io_out", "I", {"program": {
                **prog, "schedule": {"strides": [1, 16], "offset": 9}}})}
    nets = [PackedNet("n0", 16, ("io", "out"), [("a", "data0"), ("b", "data0"), ("c", "data1")]),
            PackedNet("n1", 16, ("c", "res"), [("out", "in")])]
    return PackedDesign("t", inst, nets, {})


def test_insert_moves_only_the_planned_sinks():
    d = _design()
    assert last_cycle(d) == 9 + 15 * 1 + 15 * 16
    new = insert_delay_lines(d, [DelayLine("n0", (("b", "data0"), ("c", "data1")), 6)],
                             DUAL, "dualport_2048x16")
    nets = {n.name: n for n in new.nets}
    assert nets["n0"].sinks == [("a", "data0"), ("dly_n0", "data_in_0")]
    assert nets["n0_dly"].source == ("dly_n0", "data_out_0")
    assert nets["n0_dly"].sinks == [("b", "data0"), ("c", "data1")]
    cfg = new.instances["dly_n0"].config
    assert (new.instances["dly_n0"].tag, cfg["balance_delay"]) == ("m", 2)
    # the programs cover every scheduled cycle of the design
    w = cfg["ports"]["data_in_0"]
    assert w["extents"][0] * w["extents"][1] >= last_cycle(d) + 1
    assert delay_lines_of(new, {("dly_n0", "data_out_0"): 5}) == [
        {"mem": "dly_n0", "net": "n0", "cycles": 7, "sinks": [["b", "data0"], ["c", "data1"]]}]
    assert [n.name for n in d.nets] == ["n0", "n1"] and "dly_n0" not in d.instances
    with pytest.raises(MappingError, match="already exist"):
        insert_delay_lines(new, [DelayLine("n0", (("a", "data0"),), 6)], DUAL, "x")
