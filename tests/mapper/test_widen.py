"""Kernels of 16-bit words on a wider PE (a ``data_width = 32`` design): widening keeps the
low 16 bits of add/mul chains for every input, sign-extends the constants of signed stages,
refuses ``mult_middle``, and memory mapping builds nets of the MEM's word width."""
from __future__ import annotations

import random

import pytest

from cgra.errors import MappingError
from mapper import ir
from mapper.apps import lower_app
from mapper.compute import pe_data_width, widen_kernel
from mapper.memory import DUAL_PORT_SRAM, map_memory


def test_pointwise_widened_keeps_the_low_16_bits_for_every_input():
    k = lower_app("pointwise", 8, 8).stages[0].kernel
    w = widen_kernel(k, 32)
    assert set(w.input_widths.values()) == {32}
    assert {n.width for n in w.nodes} == {32}
    assert widen_kernel(k, 16) is k and widen_kernel(w, 32) is w
    rng = random.Random(1)
    for _ in range(200):
        x = rng.getrandbits(16)
        name = next(iter(k.inputs))
        ins = {name: [x] * k.inputs[name]}
        assert w.evaluate(ins)["out"] & 0xFFFF == k.evaluate(ins)["out"]


def test_signed_stage_constants_are_sign_extended():
    k = ir.Kernel("clampish")
    k.declare_input("a", 1, 16)
    c = k.const(0xFF4C, 16)                                   # -180 as Int16
    k.set_output("out", k.add("commonlib.smax", k.input("a"), c))
    signed, unsigned = widen_kernel(k, 32, signed=True), widen_kernel(k, 32)
    assert signed.nodes[c].value == 0xFFFFFF4C and unsigned.nodes[c].value == 0xFF4C
    assert signed.evaluate({"a": [5]})["out"] == 5                      # max(5, -180)
    assert signed.evaluate({"a": [0xFFFFFF00]})["out"] == 0xFFFFFF4C    # max(-256, -180)


def test_mult_middle_is_refused():
    k = ir.Kernel("mm")
    k.declare_input("a", 2, 16)
    k.set_output("out", k.add("commonlib.mult_middle", k.input("a", 0), k.input("a", 1)))
    with pytest.raises(MappingError, match=r"commonlib.mult_middle.*32-bit PE.*data_width = 16"):
        widen_kernel(k, 32)


def test_memory_nets_have_the_mem_word_width():
    p = lower_app("gaussian", 16, 16)
    mem32 = {**DUAL_PORT_SRAM, "name": "dualport_1024x32", "capacity": 1024, "word_width": 32}
    assert {n.width for n in map_memory(p, mem32).netlist.nets} == {32}
    assert {n.width for n in map_memory(p, DUAL_PORT_SRAM).netlist.nets} == {16}
    kernels = [i for i in map_memory(p, mem32).netlist.instances.values() if i.kind == "kernel"]
    assert all("signed" in i.config for i in kernels)


def test_pe_data_width():
    doc = {"inputs": [{"name": "data0", "width": 32}, {"name": "bit0", "width": 1}]}
    assert pe_data_width(doc) == 32
