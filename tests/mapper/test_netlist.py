"""Netlist JSON and the cgra_pnr ``.packed`` format: round trips and errors."""
from __future__ import annotations

import pytest

from cgra.errors import MappingError
from mapper.apps import lower_app
from mapper.mapping.memory import PHYSICAL_UNIFIED_BUFFER, map_memory
from mapper.netlist import Netlist, parse_packed


def _tagged(nl: Netlist) -> Netlist:
    """The memory-mapped netlist with each kernel placeholder standing in as one PE."""
    out = Netlist(nl.name)
    for name, i in nl.instances.items():
        if i.kind == "kernel":
            out.add_instance(name, "pe", "p", {"stage": i.config["stage"]})
        else:
            out.add_instance(name, i.kind, i.tag, i.config)
    for n in nl.nets:
        out.add_net(n.source, n.sinks, n.width, n.name)
    return out


@pytest.fixture(scope="module")
def gaussian_netlist():
    return map_memory(lower_app("gaussian", 64, 64), PHYSICAL_UNIFIED_BUFFER).netlist


def test_json_round_trip(gaussian_netlist, tmp_path):
    path = tmp_path / "g.json"
    gaussian_netlist.save(path)
    back = Netlist.load(path)
    assert back.to_dict() == gaussian_netlist.to_dict()
    assert back.counts() == {"io_in": 1, "kernel": 2, "io_out": 1, "reg": 6, "mem": 1}


def test_packed_round_trip(gaussian_netlist):
    nl = _tagged(gaussian_netlist)
    text = nl.to_packed()
    assert text.startswith("Netlists:\n")
    assert "\nID to Names:\n" in text and "\nNetlist Bus:\n" in text
    p = parse_packed(text)
    assert len(p.nets) == len(nl.nets) and set(p.bus.values()) == {16}
    assert sorted(b[0] for b in p.id_to_name) == sorted(i.tag for i in nl.instances.values())
    back = Netlist.from_packed(text, nl.name, base=nl)
    assert [(n.source, n.sinks, n.width) for n in back.nets] == \
        [(n.source, n.sinks, n.width) for n in nl.nets]
    assert {k: (i.kind, i.tag, i.config) for k, i in back.instances.items()} == \
        {k: (i.kind, i.tag, i.config) for k, i in nl.instances.items()}
    assert back.to_packed() == text


def test_parse_cgra_pnr_style_text():
    text = ("Netlists:\ne1: (r1, reg)\t(I0, f2io_16)\ne2: (p2, out)\t(r1, reg)\t(m3, data_in)\n\n"
            "ID to Names:\nI0: io16_out\nr1: reg_0\np2: add_pe\nm3: lb\n\n"
            "Netlist Bus:\ne1: 16\ne2: 16\n")
    p = parse_packed(text)
    assert p.nets["e2"] == [("p2", "out"), ("r1", "reg"), ("m3", "data_in")]
    nl = Netlist.from_packed(text)
    assert nl.instances["lb"].kind == "MEM" and nl.instances["lb"].tag == "m"
    assert nl.nets[1].sinks == [("reg_0", "reg"), ("lb", "data_in")]


def test_errors(gaussian_netlist):
    with pytest.raises(MappingError, match="no PnR tag"):
        gaussian_netlist.to_packed()
    with pytest.raises(MappingError, match="nets and 'Netlist Bus' entries differ"):
        parse_packed("Netlists:\ne0: (p0, out)\t(p1, in0)\n\nID to Names:\np0: a\np1: b\n")
    with pytest.raises(MappingError, match="line 2"):
        parse_packed("Netlists:\nthis is not a net\n")
    nl = Netlist("t")
    nl.add_instance("a", "pe", "p")
    with pytest.raises(MappingError, match="unknown PnR tag 'q'"):
        nl.add_instance("b", "pe", "q")
    with pytest.raises(MappingError, match="unknown instance 'zz'"):
        nl.add_net(("a", "out"), [("zz", "in0")])
    nl.add_instance("b", "pe", "p")
    nl.add_net(("a", "out"), [("b", "in0")])
    nl.add_net(("b", "out"), [("b", "in0")])
    with pytest.raises(MappingError, match="driven by nets"):
        nl.validate()
    with pytest.raises(MappingError, match="schema"):
        Netlist.from_dict({"schema": 2})
