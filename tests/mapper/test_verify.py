"""Bitstream proofs (issue 19): Canal's SMT model proves that a bitstream realises the routed,
pipelined design, and rejects a flipped select, a second driver and a toggled register with
the net, the node and the config field named."""
from __future__ import annotations

import random
import re
from itertools import pairwise

import pytest

from canal.graph import NodeKind
from canal.passes import InterconnectParams, build_uniform, io_on_edges
from canal.smt import BitstreamSelects, NodeValue, decode_selects, encode_selects
from cgra.config import ConfigField
from cgra.core import CoreSpec, PortSpec
from cgra.errors import ConfigError
from mapper.backend.bitstream import generate
from mapper.collateral import Collateral
from mapper.backend.pack import pack, stencil_netlist
from mapper.backend.pipeline import PipelineParams, pipeline
from mapper.backend.place import PlaceParams, place
from mapper.backend.route import route_design
from mapper.backend.verify import VerificationError, expected_values, model_of, verify


def _no_rtl():
    raise AssertionError("verification tests never build RTL")


PE = CoreSpec("v_pe", "p", (PortSpec("data0", 16, "in"), PortSpec("data1", 16, "in"),
                            PortSpec("res", 16, "out")),
              (ConfigField("inst", 20), ConfigField("data0_reg_en", 1),
               ConfigField("data1_reg_en", 1)), _no_rtl, {"timing_class": "pe"})
MEM = CoreSpec("v_mem", "m", (PortSpec("data_in_0", 16, "in"),
                              PortSpec("data_out_0", 16, "out")),
               (ConfigField("depth", 12),), _no_rtl, {"timing_class": "mem"})
IO = CoreSpec("v_io", "I", (PortSpec("f2io_16", 16, "in"), PortSpec("io2f_16", 16, "out")),
              (), _no_rtl, {"timing_class": "io"})


@pytest.fixture(scope="module")
def design():
    """A 3x3 stencil placed, routed and pipelined to 900 MHz on an 8x8 fabric (IO row on top,
    every 4th column MEM, a bypassable register on every switch-box output), its bitstream and
    the model."""
    core = io_on_edges(lambda x, y: MEM if x % 4 == 3 else PE, IO, 8, 8)
    coll = Collateral.from_graphs(build_uniform(InterconnectParams(8, 8, tracks=5,
                                                                   widths=(16,)), core))
    packed = pack(stencil_netlist("s", image_width=16), coll)
    pl = place(packed, coll, PlaceParams(seed=1))
    rr = route_design(packed, pl, coll)
    res = pipeline(packed, pl, rr, coll, PipelineParams(register_pe_inputs=True,
                                                        target_period_ps=1e6 / 900))
    # the test MEM core has only a depth field: no Lake port programs to encode
    bs = generate(res.packed, pl, res.routing, coll, mem_encoder=lambda i, c, p: {}).pairs()
    return coll, res, bs, model_of(coll)


def _route_muxes(res, model, kind=None):
    """(net, predecessor, mux node) for every mux on a route (of ``kind`` if given)."""
    out = []
    for name, r in res.routing.nets.items():
        for p in r.paths.values():
            for a, b in pairwise(p):
                if len(model.fanin[b]) > 1 and (kind is None or model.kind[b] is kind):
                    out.append((name, a, b))
    return sorted(set(out))


def test_the_generated_bitstream_is_proved(design):
    coll, res, bs, model = design
    rep = verify(bs, res, coll, model)
    assert rep.nets == len(res.routing.nets) == 23      # the packed stencil's nets
    assert rep.sinks == sum(len(r.paths) for r in res.routing.nets.values())
    want, owner, _ = expected_values(model, res)
    assert rep.nodes == len(want)
    # every sink carries its net's root core output; latency = the path's pipeline registers
    for r in res.routing.nets.values():
        for path in r.paths.values():
            regs = sum(1 for n in path[1:] if model.kind[n] is NodeKind.REG)
            root = want.get(path[0], NodeValue(path[0], 0))
            assert want[path[-1]] == NodeValue(root.source, root.latency + regs)
            assert model.is_source(root.source)
    assert sum(1 for n in want if model.kind[n] is NodeKind.REG) >= len(res.forced_regs) > 0
    assert rep.cone_nodes >= rep.nodes and rep.select_vars > 0


def test_decode_is_the_inverse_of_the_bitstream_encoding(design):
    coll, res, bs, model = design
    sel = decode_selects(bs, model.spots)
    for _net, pred, node in _route_muxes(res, model):
        assert sel[node] == model.fanin[node].index(pred)
    assert sorted(encode_selects({}, model.spots, bs)) == sorted(bs)
    node = _route_muxes(res, model)[0][2]
    again = encode_selects({node: sel[node]}, model.spots, bs)
    assert sorted(again) == sorted(bs)
    with pytest.raises(ConfigError, match="does not fit"):
        encode_selects({node: 1 << 12}, model.spots, bs)


@pytest.mark.parametrize("trial", range(4))
def test_a_flipped_select_is_rejected_naming_net_node_and_field(design, trial):
    coll, res, bs, model = design
    rng = random.Random(trial)
    net, pred, node = rng.choice([m for m in _route_muxes(res, model)
                                  if model.kind[m[2]] is not NodeKind.RMUX])
    right = model.fanin[node].index(pred)
    wrong = rng.choice([k for k in range(len(model.fanin[node])) if k != right])
    bad = encode_selects({node: wrong}, model.spots, bs)
    with pytest.raises(VerificationError) as exc:
        verify(bad, res, coll, model)
    msg = str(exc.value)
    assert f"node {node} has select field {model.field_name(node)} = {wrong}" in msg
    assert f"the route needs {right} (fan-in {pred})" in msg
    # the first wrong node from the source is reported, on a net whose route passes it
    assert re.search(r"realise net (\S+):", msg)[1] in {net} | {
        n for n, r in res.routing.nets.items() for p in r.paths.values() if node in p}


def test_a_second_driver_is_rejected_naming_the_other_net(design):
    """A mux of net A's route made to select a node that carries net B: A's node is then
    driven by B, and the proof names both."""
    coll, res, bs, model = design
    want, owner, _ = expected_values(model, res)
    found = None
    for net, pred, node in _route_muxes(res, model):
        for k, f in enumerate(model.fanin[node]):
            if f != pred and f in want and owner[f] != net \
                    and want[f].source != want[node].source:
                found = (net, node, k, owner[f])
                break
        if found:
            break
    assert found is not None
    net, node, k, other = found
    with pytest.raises(VerificationError, match=rf"node {re.escape(node)} has select field .* "
                                                rf"= {k} .*\(a second driver: net "):
        verify(encode_selects({node: k}, model.spots, bs), res, coll, model)


@pytest.mark.parametrize("enable", [True, False])
def test_a_toggled_register_is_rejected(design, enable):
    """A pipeline register enabled where the route bypasses it (one cycle too many), or
    bypassed where the pipelining put it (one too few)."""
    coll, res, bs, model = design
    sel = BitstreamSelects(bs, model.spots)
    muxes = [(n, p, m) for n, p, m in _route_muxes(res, model, NodeKind.RMUX)
             if sel.get(m) == (0 if enable else 1)]
    assert muxes
    net, pred, node = muxes[0]
    with pytest.raises(VerificationError) as exc:
        verify(encode_selects({node: 1 if enable else 0}, model.spots, bs), res, coll, model)
    msg = str(exc.value)
    assert f"node {node} has select field {model.field_name(node)}" in msg
    assert ("pipeline register enabled where the route bypasses it" if enable else
            "pipeline register bypassed where the route uses it") in msg


def test_an_unconfigured_sink_is_an_unrouted_signal(design):
    """Dropping every word of one connection box leaves its core input on fan-in 0: the proof
    names the sink's net and what the input carries instead."""
    coll, res, bs, model = design
    net, pred, node = next(m for m in _route_muxes(res, model)
                           if model.kind[m[2]] is NodeKind.PORT
                           and model.fanin[m[2]].index(m[1]) != 0)
    addrs = {s.addr for s in model.spots[node]}
    with pytest.raises(VerificationError, match=rf"realise net {re.escape(net)}: node "
                                                rf"{re.escape(node)} has select field .* = 0"):
        verify([(a, d) for a, d in bs if a not in addrs], res, coll, model)


def test_prove_gives_the_counterexample_values(design):
    coll, res, bs, model = design
    want, owner, nets = expected_values(model, res)
    sink = next(iter(nets.values()))[0][-1]
    lie = {sink: NodeValue(want[sink].source, want[sink].latency + 1)}
    proof = model.prove(lie, BitstreamSelects(bs, model.spots))
    assert not proof.proved
    [v] = proof.violations
    assert v.node == sink and v.actual == want[sink] and v.expected == lie[sink]
    assert model.prove({sink: want[sink]}, BitstreamSelects(bs, model.spots)).proved


def test_a_report_register_off_the_routes_is_rejected(design):
    coll, res, bs, model = design
    import copy
    bad = copy.copy(res)
    reg = next(n for n, k in model.kind.items() if k is NodeKind.REG
               and not any(n in p for r in res.routing.nets.values() for p in r.paths.values()))
    bad.forced_regs = [*res.forced_regs, reg]
    with pytest.raises(VerificationError, match=rf"register {re.escape(reg)} enabled but no "
                                                r"route passes it"):
        verify(bs, bad, coll, model)
