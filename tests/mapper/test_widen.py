"""Kernels of 16-bit words on a wider PE (a ``data_width = 32`` design): widening keeps the
low 16 bits of add/mul chains for every input, extends each constant as it is read (signed
or unsigned), refuses ``mult_middle``, and memory mapping builds nets of the MEM's word
width."""
from __future__ import annotations

import random

import pytest

from cgra.errors import MappingError
from mapper import ir
from mapper.apps import lower_app
from mapper.mapping.compute import pe_data_width, widen_kernel
from peak.collateral import PEInfo, PortInfo
from mapper.mapping.memory import DUAL_PORT_SRAM, map_memory


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


def _consts(k: ir.Kernel) -> list[int]:
    return sorted(n.value for n in k.live_nodes() if n.op == "coreir.const")


def test_constants_are_extended_as_they_are_read():
    """A constant read by a signed op is sign-extended, whatever the stage's type; one read
    by an unsigned op zero-extended; through add / mul / logic, as the result is read."""
    k = ir.Kernel("clampish")
    k.declare_input("a", 1, 16)
    c = k.const(0xFF4C, 16)                                   # -180 as Int16
    k.set_output("out", k.add("commonlib.smax", k.input("a"), c))
    for stage_signed in (True, False):
        w = widen_kernel(k, 32, signed=stage_signed)
        assert _consts(w) == [0xFFFFFF4C]
        assert w.evaluate({"a": [5]})["out"] == 5                      # max(5, -180)
        assert w.evaluate({"a": [0xFFFFFF00]})["out"] == 0xFFFFFF4C    # max(-256, -180)
    # color_correct's shape: (r * 56 + g * -16) >> 5 arithmetic, clamped, in a UInt16 stage
    cc = ir.Kernel("cc")
    cc.declare_input("p", 2, 16)
    acc = cc.add("coreir.add", cc.add("coreir.mul", cc.input("p", 0), cc.const(56)),
                 cc.add("coreir.mul", cc.input("p", 1), cc.const(0xFFF0)))
    sh = cc.add("coreir.ashr", acc, cc.const(5))
    cc.set_output("out", cc.add("commonlib.smin", cc.add("commonlib.smax", sh, cc.const(0)),
                                cc.const(255)))
    w = widen_kernel(cc, 32)
    assert 0xFFFFFFF0 in _consts(w) and 0xFFF0 not in _consts(w)
    for r, g in ((10, 200), (200, 10), (255, 255), (0, 0), (100, 150)):
        want = cc.evaluate({"p": [r, g]})["out"]
        assert want == min(max((r * 56 - g * 16) >> 5, 0), 255)
        assert w.evaluate({"p": [r, g]})["out"] == want
    # read both ways: one constant becomes two
    both = ir.Kernel("both")
    both.declare_input("a", 1, 16)
    m = both.const(0x8000, 16)
    both.set_output("out", both.add("coreir.add",
                                    both.add("commonlib.umax", both.input("a"), m),
                                    both.add("commonlib.smax", both.input("a"), m)))
    assert _consts(widen_kernel(both, 32)) == [0x8000, 0xFFFF8000]


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

    pe = PEInfo("x:PE", "PE", "0" * 64, 8, (), (PortInfo("data0", 32), PortInfo("bit0", 1)),
                (PortInfo("res", 32),))
    assert pe_data_width(pe) == 32
