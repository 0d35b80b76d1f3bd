"""Multi-cycle PE input delays (the delay-chain PE, peak/examples/cgra_pe_d2.py, "D2"):
the delay codes come from the tags of pe.json, packing absorbs a chain of up to four
netlist registers into one PE input, branch-delay matching adds up to four cycles at a PE
input, and on gaussian and harris that needs fewer routed register sites than the default
PE (same PE count: same ISA)."""
from __future__ import annotations

import pytest

from cgra.errors import MappingError
from mapper.netlist import Netlist
from peak.collateral import InstrField, PEInfo, PortInfo
from mapper.backend.pack import (delay_codes, input_delay, input_register, max_input_delay, pack,
                         set_input_register)

pytest_plugins = ["mapper_support"]

D2_TAGS = {"BYPASS": 0, "DELAY": 1, "CONST": 2, "DELAY2": 3, "DELAY3": 4, "DELAY4": 5}
D1_TAGS = {"BYPASS": 0, "DELAY": 1, "CONST": 2}


def _doc(tags: dict[str, int]) -> PEInfo:
    """A PE whose only instruction field is ``data0_mode`` with ``tags`` (3 bits)."""
    return PEInfo("x:PE", "PE", "0" * 64, 3,
                  (InstrField("data0_mode", 0, 3, "enum", False, tags),),
                  (PortInfo("data0", 16),), (PortInfo("res", 16),))


def _cfg(code: int) -> dict:
    return {"instruction": {"data0_mode": code}}


def test_delay_codes_from_tags():
    assert delay_codes(_doc(D2_TAGS), "data0_mode") == {0: 0, 1: 1, 2: 3, 3: 4, 4: 5}
    assert delay_codes(_doc(D1_TAGS), "data0_mode") == {0: 0, 1: 1}
    assert delay_codes(_doc({"BYPASS": 0, "CONST": 2}), "data0_mode") == {}
    assert delay_codes(_doc(D2_TAGS), "data1_mode") == {}
    assert delay_codes(None, "data0_mode") == {}
    assert max_input_delay(_doc(D2_TAGS), "data0") == 4
    assert max_input_delay(_doc(D1_TAGS), "data0") == 1
    with pytest.raises(MappingError, match="data0_mode: tags give two codes for a 1-cycle"):
        delay_codes(_doc({"BYPASS": 0, "DELAY": 1, "DELAY1": 3}), "data0_mode")


def test_input_register_steps_through_the_tags():
    d2, d1 = _doc(D2_TAGS), _doc(D1_TAGS)
    assert input_delay(d2, _cfg(0), "data0") == 0
    assert input_delay(d2, _cfg(4), "data0") == 3
    assert input_delay(d2, _cfg(2), "data0") is None              # CONST
    assert input_register(d2, _cfg(0), "data0") == ("data0_mode", 1)
    assert input_register(d2, _cfg(1), "data0") == ("data0_mode", 3)
    assert input_register(d2, _cfg(3), "data0", cycles=2) == ("data0_mode", 5)
    assert input_register(d2, _cfg(0), "data0", cycles=4) == ("data0_mode", 5)
    assert input_register(d2, _cfg(5), "data0") is None           # already 4 cycles
    assert input_register(d2, _cfg(0), "data0", cycles=5) is None
    assert input_register(d2, _cfg(2), "data0") is None           # a constant input
    # the default PE: BYPASS -> DELAY only, exactly as before chains were absorbed
    assert input_register(d1, _cfg(0), "data0") == ("data0_mode", 1)
    assert input_register(d1, _cfg(1), "data0") is None
    assert input_register(d1, _cfg(0), "data0", cycles=2) is None
    assert input_register(d1, {}, "data0") is None                 # no instruction


def _chain(n_regs: int, pe) -> Netlist:
    """in -> r1 -> ... -> r<n> -> pe.data0, in -> pe.data1; pe.res -> out (an Add)."""
    from peak.collateral import assemble_fields

    instr = {f.name: 0 for f in pe.fields}
    nl = Netlist("chain")
    nl.add_instance("in", "io_in", "I")
    nl.add_instance("out", "io_out", "I")
    for k in range(1, n_regs + 1):
        nl.add_instance(f"r{k}", "reg", "r", {"delay": 1})
    nl.add_instance("pe", "pe", "p", {"instruction": instr,
                                      "inst": assemble_fields(pe, instr)})
    nl.add_net(("in", "out"), [("r1", "in"), ("pe", "data1")], 16, "n0")
    for k in range(1, n_regs):
        nl.add_net((f"r{k}", "out"), [(f"r{k + 1}", "in")], 16, f"n{k}")
    nl.add_net((f"r{n_regs}", "out"), [("pe", "data0")], 16, f"n{n_regs}")
    nl.add_net(("pe", "res"), [("out", "in")], 16, "res")
    return nl


def test_register_chain_absorbed_up_to_four(d2_design, default_design):
    """A chain of 5 registers: D2 absorbs the 4 nearest the PE (data0_mode = DELAY4 = 5,
    the input net of the chain's 2nd register drives the PE), the default PE 1 (DELAY);
    a chain of 2 on D2 becomes DELAY2 (code 3) with no register left."""
    from mapper.collateral import load_collateral

    d2 = load_collateral(d2_design)
    packed = pack(_chain(5, d2.pe), d2)
    pe = packed.instances["pe"]
    assert pe.config["instruction"]["data0_mode"] == 5
    assert pe.input_regs == {"data0": ["r5", "r4", "r3", "r2"]}
    assert set(packed.absorbed_regs) == {"r2", "r3", "r4", "r5"}
    assert packed.counts() == {"I": 2, "r": 1, "p": 1}
    n1 = next(n for n in packed.nets if n.source == ("r1", "out"))
    assert n1.sinks == [("pe", "data0")]
    from peak.collateral import assemble_fields
    assert pe.config["inst"] == assemble_fields(d2.pe, pe.config["instruction"])

    packed = pack(_chain(2, d2.pe), d2)
    assert packed.instances["pe"].config["instruction"]["data0_mode"] == 3
    assert packed.counts() == {"I": 2, "p": 1}

    d1 = load_collateral(default_design)
    packed = pack(_chain(5, d1.pe), d1)
    assert packed.instances["pe"].config["instruction"]["data0_mode"] == 1
    assert packed.instances["pe"].input_regs == {"data0": ["r5"]}
    assert packed.counts() == {"I": 2, "r": 4, "p": 1}


def test_set_input_register_rewrites_the_flat_instruction(d2_design):
    from mapper.collateral import load_collateral

    d2 = load_collateral(d2_design)
    cfg = _chain(1, d2.pe).instances["pe"].config
    cfg = {"instruction": dict(cfg["instruction"]), "inst": cfg["inst"]}
    set_input_register(d2.pe, cfg, *input_register(d2.pe, cfg, "data1", cycles=3))
    assert cfg["instruction"]["data1_mode"] == 4                 # DELAY3
    f = d2.pe.field("data1_mode")
    assert (cfg["inst"] >> f.lo) & 7 == 4


def _routed_regs(coll, app: str):
    from mapper.params import AppParams, FlowParams
    from mapper.closure import back_end
    from mapper.flow import map_app
    from mapper.backend.checks import check_balanced

    m = map_app(AppParams(app, 64, 64), coll)
    f = back_end(m.netlist, coll, FlowParams())
    pr = f.pipelined
    check_balanced(pr)
    sites = len(pr.routing.reg_sites) + len(pr.enabled_regs) + len(pr.forced_regs)
    return f, sites


@pytest.mark.parametrize("app", ["gaussian", "harris"])
def test_d2_needs_fewer_routed_registers(default_design, d2_design, app):
    """Same app, same 16x16 array, same seed: the delay-chain PE balances with its input
    delays (some input delayed 2..4 cycles) and leaves fewer switch-box register sites in
    use (netlist registers on sites + balancing + timing registers) than the default PE
    (measured: gaussian 11 -> 6, harris 49 -> 20); the PE count is the same."""
    from mapper.collateral import load_collateral
    from mapper.backend.pack import input_delay

    c1, c2 = load_collateral(default_design), load_collateral(d2_design)
    f1, regs1 = _routed_regs(c1, app)
    f2, regs2 = _routed_regs(c2, app)
    assert f1.packed.counts()["p"] == f2.packed.counts()["p"]
    assert regs2 < regs1, (regs1, regs2)
    assert set(f1.pipelined.pe_input_delay.values()) <= {1}
    assert max(f2.pipelined.pe_input_delay.values()) >= 2
    depths = [input_delay(c2.pe, pi.config, cp)
              for pi in f2.pipelined.packed.instances.values() if pi.tag == "p"
              for cp in ("data0", "data1")]
    assert max(d for d in depths if d is not None) >= 2
    print(f"\n{app}: routed register sites D1 {regs1}, D2 {regs2}")
