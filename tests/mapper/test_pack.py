"""Packing: PE input registers and constants into the PE, port resolution."""
from __future__ import annotations

import pytest

from canal.collateral import dump_json
from canal.passes import InterconnectParams, build_uniform, io_on_edges
from cgra.config import ConfigField
from cgra.core import CoreSpec, PortSpec
from cgra.errors import MappingError, RoutingError
from mapper.collateral import load_fabric
from mapper.netlist import Netlist
from mapper.backend.pack import PackParams, pack, resolve_core_port, stencil_netlist


def _no_rtl():
    raise AssertionError("PnR tests never build RTL")


PE = CoreSpec("t_pe", "p", (PortSpec("data0", 16, "in"), PortSpec("data1", 16, "in"),
                            PortSpec("bit0", 1, "in"), PortSpec("res", 16, "out")),
              (ConfigField("inst", 20), ConfigField("data0_reg_en", 1),
               ConfigField("data1_reg_en", 1), ConfigField("data0_const", 16),
               ConfigField("data0_const_en", 1), ConfigField("data1_const", 16)), _no_rtl,
              {"timing_class": "pe"})
MEM = CoreSpec("t_mem", "m", (PortSpec("data_in_0", 16, "in"), PortSpec("data_in_1", 16, "in"),
                              PortSpec("data_out_0", 16, "out"),
                              PortSpec("data_out_1", 16, "out")),
               (ConfigField("depth", 12),), _no_rtl, {"timing_class": "mem"})
IO = CoreSpec("t_io", "I", (PortSpec("f2io_16", 16, "in"), PortSpec("io2f_16", 16, "out"),
                            PortSpec("glb2io_16", 16, "in")),
              (), _no_rtl, {"external": ("glb2io_16",), "timing_class": "io"})


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("k4")
    core = io_on_edges(lambda x, y: MEM if x % 4 == 3 else PE, IO, 4, 4)
    ic = build_uniform(InterconnectParams(4, 4, tracks=2, widths=(16, 1)), core)
    for w, g in ic.graphs.items():
        dump_json(g, tmp / f"routing_{w}.json")
    return load_fabric(sorted(tmp.glob("*.json")))


def _chain() -> Netlist:
    nl = Netlist("chain")
    nl.add_instance("in", "io_in", "I")
    nl.add_instance("r1", "reg", "r")
    nl.add_instance("r2", "reg", "r")
    nl.add_instance("r3", "reg", "r")
    nl.add_instance("pe", "pe", "p", {"inst": 5})
    nl.add_instance("m", "mem", "m")
    nl.add_net(("in", "out"), [("r1", "in"), ("pe", "data1")], 16, "a")
    nl.add_net(("r1", "out"), [("r2", "in"), ("r3", "in")], 16, "b")   # fan-out 2: stays
    nl.add_net(("r2", "out"), [("pe", "data0")], 16, "c")              # absorbed
    nl.add_net(("r3", "out"), [("m", "in0")], 16, "d")                 # feeds a MEM: stays
    nl.add_net(("pe", "res"), [("m", "in1")], 16, "e")
    return nl


def test_input_register_absorbed_into_pe(graphs):
    packed = pack(_chain(), graphs)
    assert packed.absorbed_regs == {"r2": ("pe", "data0")}
    assert set(packed.instances) == {"in", "r1", "r3", "pe", "m"}
    pe = packed.instances["pe"]
    assert pe.fields == {"data0_reg_en": 1} and pe.input_regs == {"data0": ["r2"]}
    b = next(n for n in packed.nets if n.name == "b")
    assert b.sinks == [("pe", "data0"), ("r3", "in")]
    assert "c" not in {n.name for n in packed.nets}
    assert packed.counts() == {"I": 1, "r": 2, "p": 1, "m": 1}


def test_no_absorption_without_the_field_or_when_disabled(graphs):
    packed = pack(_chain(), graphs, PackParams(input_reg_field="{port}_pipeline"))
    assert packed.absorbed_regs == {} and packed.counts()["r"] == 3
    packed = pack(_chain(), graphs, PackParams(absorb_input_regs=False))
    assert packed.absorbed_regs == {}


def test_constant_folded_into_pe(graphs):
    nl = Netlist("k")
    nl.add_instance("in", "io_in", "I")
    nl.add_instance("c", "const", "p", {"value": -13})
    nl.add_instance("pe", "pe", "p", {"inst": 1})
    nl.add_instance("out", "io_out", "I")
    nl.add_net(("in", "out"), [("pe", "data1")], 16)
    nl.add_net(("c", "out"), [("pe", "data0")], 16)
    nl.add_net(("pe", "res"), [("out", "in")], 16)
    packed = pack(nl, graphs)
    assert "c" not in packed.instances
    assert packed.instances["pe"].fields == {"data0_const": 0xFFF3, "data0_const_en": 1}
    assert packed.instances["pe"].consts == {"data0": -13}
    assert packed.folded_consts == {"c": [("pe", "data0")]}
    assert len(packed.nets) == 2


def test_constant_too_wide_is_an_error(graphs):
    nl = Netlist("k")
    nl.add_instance("c", "const", "p", {"value": 1 << 16})
    nl.add_instance("pe", "pe", "p", {"inst": 1})
    nl.add_net(("c", "out"), [("pe", "data0")], 16)
    with pytest.raises(MappingError, match="65536 does not fit the 16-bit field data0_const"):
        pack(nl, graphs)


def test_constant_into_memory_is_an_error(graphs):
    nl = Netlist("k")
    nl.add_instance("c", "const", "p", {"value": 3})
    nl.add_instance("m", "mem", "m")
    nl.add_net(("c", "out"), [("m", "in0")], 16)
    with pytest.raises(MappingError, match="constant c .* drives m.in0"):
        pack(nl, graphs)


def test_kernel_placeholder_rejected(graphs):
    nl = Netlist("k")
    nl.add_instance("kernel_blur", "kernel", None)
    with pytest.raises(MappingError, match="kernel_blur .* compute kernels onto PEs"):
        pack(nl, graphs)


def test_port_resolution_rules(graphs):
    g16 = graphs.graphs[16]
    pe = next(t for t in g16.tiles.values() if t.tag == "p")
    mem = next(t for t in g16.tiles.values() if t.tag == "m")
    io = next(t for t in g16.tiles.values() if t.tag == "I")
    assert resolve_core_port(pe, "data1", 16, "in") == "data1"          # same name
    assert resolve_core_port(mem, "in1", 16, "in") == "data_in_1"       # in<k>
    assert resolve_core_port(mem, "out0", 16, "out") == "data_out_0"    # out<k>
    assert resolve_core_port(io, "out", 16, "out") == "io2f_16"         # only candidate
    assert resolve_core_port(io, "in", 16, "in") == "f2io_16"           # external not routable
    assert resolve_core_port(pe, "a", 16, "in", {"a": "data0"}) == "data0"
    with pytest.raises(RoutingError, match="'x' .* matches no core port .*data0"):
        resolve_core_port(pe, "x", 16, "in", inst="pe7")
    with pytest.raises(RoutingError, match="port_map sends 'a' to core port 'res'"):
        resolve_core_port(pe, "a", 16, "in", {"a": "res"})


def test_stencil_netlist_shape():
    nl = stencil_netlist("g", kh=3, kw=3, image_width=32)
    c = nl.counts()
    assert c == {"io_in": 1, "mem": 2, "reg": 6, "pe": 17, "io_out": 1}
    nl5 = stencil_netlist("g5", kh=5, kw=5)
    assert nl5.counts()["pe"] == 49 and nl5.counts()["mem"] == 4
