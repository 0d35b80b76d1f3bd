"""The Sum-instruction PE end to end (issue 39 item 5): pointwise and gaussian mapped onto the
8x8 array with the PE of peak/examples/cgra_pe_sum.py (configs/small_sum.toml), run on the
generated RTL in Verilator and compared bit for bit with numpy and Halide. Every PE runs an
ALU-format instruction (tag 0 at bits [45:44]); the PE counts equal the stock PE's
(tests/mapper/test_covering.py: pointwise 2, gaussian 18), and the registers in front of PE
inputs (packed, or added by branch-delay matching) go into the ALU format's DELAY modes
(``AluInst.data<k>_mode``, :func:`mapper.backend.pack.mode_field_name`), as the stock PE's
``data<k>_mode``."""
from __future__ import annotations

import collections
import json

from mapper.flow import run_app
from mapper.params import AppParams, RunParams
from mapper.stages import read_app
from mapper.collateral import load_collateral


def _configs(run_dir):
    net = json.loads((run_dir / "netlist.json").read_text())
    return [i["config"] for i in net["instances"].values() if i["kind"] == "pe"]


def test_pointwise_on_sum_pe(small_sum_design, tmp_path):
    r = run_app(RunParams(AppParams("pointwise", 64, 64), small_sum_design, tmp_path))
    assert r.report["match"] == {"numpy": True, "halide": True}
    pe = load_collateral(small_sum_design).pe
    assert pe.instruction_width == 46 and pe.field("_tag").lo == 44
    cfgs = _configs(tmp_path)
    assert collections.Counter(c["rule"] for c in cfgs) == {
        "coreir.mul[in1=const]": 1, "coreir.add[in1=const]": 1}
    # x * 2 + 1: both constants in the ALU format's data1_const, the tag 0 (AluInst)
    consts = sorted(c["instruction"]["AluInst.data1_const"] for c in cfgs)
    assert consts == [1, 2]
    assert all(c["inst"] >> 44 == 0 for c in cfgs)
    assert read_app(tmp_path)["counts"]["pe"] == 2


def test_gaussian_on_sum_pe(small_sum_design, tmp_path):
    r = run_app(RunParams(AppParams("gaussian", 64, 64), small_sum_design, tmp_path))
    assert r.report["match"] == {"numpy": True, "halide": True}
    cfgs = _configs(tmp_path)
    assert collections.Counter(c["rule"] for c in cfgs) == {
        "coreir.mul[in1=const]": 9, "coreir.add": 8, "coreir.lshr[in1=const]": 1}
    assert all(c["inst"] >> 44 == 0 for c in cfgs)
    assert read_app(tmp_path)["counts"]["pe"] == 18
    # registers in front of PE inputs (absorbed by pack, added by branch-delay matching) go
    # into the ALU format's DELAY modes: every delayed input is one of them
    packed = json.loads((tmp_path / "packed.json").read_text())
    absorbed = sum(len(v) for i in packed["instances"].values()
                   for v in (i.get("input_regs") or {}).values())
    piped = json.loads((tmp_path / "pipelined.json").read_text())
    balancing = sum(k for _, _, k in piped["pe_input_delay"])
    assert absorbed >= 1 and balancing >= 1
    delayed = sum(i["config"]["instruction"][f"AluInst.data{k}_mode"] == 1
                  for i in piped["packed"]["instances"].values() if i["tag"] == "p"
                  for k in (0, 1))
    assert delayed == absorbed + balancing
