"""Lowering to the virtual-unit dataflow graph (mapper.dataflow.lower), SARA §III-A: the
Fig. 2a known answers (VCUs C..G, VMUs m1..m4, DRAM interfaces d1..d5, counter chains), the
request/response split, the write-then-read split, control VCUs and the DFG format."""
from __future__ import annotations

import networkx as nx
from fixtures_sara import fig2a

from mapper.dataflow.lower import control_tree, lower, segments
from mapper.dataflow.partition import NODE_KINDS, best_traversal
from mapper.dataflow.program import Program
from mapper.dataflow.units import SARA_PCU


def _streams(v, kind=None):
    return {(s.src, s.dst, s.kind, s.site) for s in v.streams if kind is None or s.kind == kind}


def test_fig2a_units():
    p, _ = fig2a()
    v = lower(p)
    compute = {u.name for u in v.compute_vcus()}
    assert compute == {"C", "D", "E", "F", "G"}
    assert {n: u.chain for n, u in v.vcus.items() if u.role == "compute"} == {
        "C": ("A", "B", "C"), "D": ("A", "B", "D"), "E": ("A", "B", "E"),
        "F": ("A", "F"), "G": ("A", "G")}
    requests = {u.name for u in v.vcus.values() if u.role == "request"}
    responses = {u.name for u in v.vcus.values() if u.role == "response"}
    assert requests == {"C'R_d1", "D'R_d2", "D'R_d3", "E'R1", "E'R2", "F'R_d4", "G'R3", "G'R4"}
    assert responses == {"C'W1", "D'W2", "E'W31", "F'W4", "F'W32", "G'W5"}
    assert len(v.vcus) == 5 + 8 + 6
    assert all(u.chain == v.vcus[u.name.split("'")[0]].chain
               for u in v.vcus.values() if u.site)
    # one VMU per on-chip array, one DRAM interface per DRAM; m1, m2 declared inside B
    assert {n: m.kind for n, m in v.vmus.items()} == {
        "m1": "sram", "m2": "sram", "m3": "sram", "m4": "sram",
        "d1": "dram", "d2": "dram", "d3": "dram", "d4": "dram", "d5": "dram"}
    assert p.memories["m1"].scope.label == "B" and p.memories["m2"].scope.label == "B"
    assert p.memories["m3"].scope is None


def test_fig2a_request_response_streams():
    p, _ = fig2a()
    v = lower(p)
    s = _streams(v)
    # read R4 in G: request VCU G' -> VMU m4 -> data back to G; ack to G'
    assert ("G'R4", "m4", "addr", "R4") in s
    assert ("m4", "G", "data", "R4") in s
    assert ("m4", "G'R4", "ack", "R4") in s
    # write W4 in F: F streams address + data through F'W4 to m4, which acknowledges to F'W4
    assert ("F", "F'W4", "data", "W4") in s
    assert ("F'W4", "m4", "data", "W4") in s
    assert ("m4", "F'W4", "ack", "W4") in s
    # static addresses: the request VCU generates them, the compute VCU sends none
    assert not any(k == "addr" and dst == "G'R4" for _, dst, k, _ in s)
    g = v.graph()
    assert isinstance(g, nx.MultiDiGraph)
    assert set(g.predecessors("m3")) == {"E'W31", "F'W32", "G'R3"}
    assert set(g.successors("m3")) == {"E'W31", "F'W32", "G'R3", "G"}


def test_dfg_format_and_local_register_lcd():
    p = Program("dot")
    a = p.dram("a", (8,))
    out = p.dram("out", (1,))
    acc = p.reg("acc")
    with p.foreach(8, par=4, label="L"):
        pass
    with p.foreach(8, par=4, label="M") as i:
        acc.value = acc.value + a[i] * a[i]
    v = lower(p)
    assert v.local_regs == frozenset({"acc"})
    assert "acc" not in v.vmus
    g = v.vcus["M"].dfg
    parts = best_traversal(g, SARA_PCU)               # the partitioner accepts it
    assert sorted(n for part in parts.parts for n in part) == sorted(
        n for n, a in g.nodes(data=True) if a["kind"] == "op")
    assert {a["kind"] for _, a in g.nodes(data=True)} <= set(NODE_KINDS)
    ops = sorted(a["op"] for _, a in g.nodes(data=True) if a["kind"] == "op")
    assert ops == ["add", "mul"]
    assert all(a["width"] == "vector" for _, a in g.nodes(data=True) if a["kind"] == "op")
    lcd = [(u, w) for u, w, d in g.edges(data="lcd") if d]
    assert len(lcd) == 1
    u, w = lcd[0]
    assert g.nodes[u]["op"] == "add" and g.nodes[w]["kind"] == "mem_read"
    assert v.vcus["M"].par == 4
    del out


def test_write_then_read_splits_the_block():
    p = Program("split")
    d = p.dram("d", (6,))
    out = p.dram("out", (6,))
    m = p.sram("m", (6,))
    with p.foreach(6, label="L") as i:
        m[i] = d[i] * 2
        t = p.let(m[(i + 5) % 6] + 1)
        out[i] = t
    blk = p.blocks()[0]
    assert segments(blk) == [(0,), (1, 2)]
    v = lower(p)
    assert {u.name for u in v.compute_vcus()} == {"L.0", "L.1"}
    assert ("L.0", "L.1", "data", blk.label) in _streams(v)


def test_control_vcus_for_bounds_branches_and_do_while():
    p = Program("ctl")
    n = p.dram("n", (1,))
    acc = p.reg("acc")
    cnt = p.reg("cnt")
    out = p.dram("out", (2,))
    with p.foreach(n[0], label="L") as i:
        with p.if_((i % 2).eq(0), label="I"):
            acc.value = acc.value + i
    with p.do_while(label="DW"):
        cnt.value = cnt.value + 1
        p.loop_while(cnt.value < 3)
    out[0] = acc.value
    out[1] = cnt.value
    tree = control_tree(p)
    assert list(tree.successors("P"))[:4] == ["L.bound", "L", "DW", p.blocks()[-1].label]
    assert list(tree.successors("L")) == ["I.cond", "I"]
    assert list(tree.successors("DW"))[-1] == "DW.cond"
    v = lower(p)
    roles = {n: u.role for n, u in v.vcus.items() if u.role == "control"}
    assert roles == {"L.bound": "control", "I.cond": "control", "DW.cond": "control"}
    inner = [u.name for u in v.vcus.values() if "L" in u.path and u.name != "L.bound"]
    bound_dst = {dst for _, dst, _, site in _streams(v, "bound") if site == "L"}
    assert bound_dst == set(inner) and inner
    cond_dst = {dst for _, dst, _, site in _streams(v, "cond") if site == "DW"}
    assert cond_dst == {u.name for u in v.vcus.values()
                        if "DW" in u.path and u.name != "DW.cond"}
    assert v.vcus["L.bound"].chain == ()
    assert v.vcus["DW.cond"].chain == ("DW",)


def test_reduce_accumulator_is_read_and_written_once_per_loop_run():
    p = Program("dot")
    a = p.dram("a", (8,))
    out = p.dram("out", (1,))
    acc = p.reg("acc")
    with p.reduce(acc, 8, par=2, label="L") as (i, add):
        add(a[i] * 3)
    out[0] = acc.value
    v = lower(p)
    assert "acc" in v.vmus                       # three blocks touch it: a VMU
    (rd,) = [u for u in v.vcus.values() if u.memory == "acc" and u.role == "request"
             and u.path[-1] == "L"]
    (wr,) = [u for u in v.vcus.values() if u.memory == "acc" and u.role == "response"
             and u.path[-1] == "L"]
    assert v.promoted == {rd.site: "L", wr.site: "L"}
    assert rd.chain == wr.chain == () and v.vcus["L"].chain == ("L",)
    g = v.vcus["L"].dfg
    assert any(d for _, _, d in g.edges(data="lcd"))   # the accumulation is an LCD
