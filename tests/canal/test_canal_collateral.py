"""Routing-graph collateral: JSON and text dumps, delays, round trips."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from canal import collateral
from canal.collateral import (dump_json, dump_text, from_text, load_json, load_text, to_json,
                              to_text)
from cgra.errors import CollateralError


@pytest.mark.parametrize("width", [16, 1])
def test_json_and_text_round_trips_are_lossless(ic4, tmp_path, width):
    g = ic4.graphs[width]
    dump_json(g, tmp_path / "g.json")
    dump_text(g, tmp_path / "g.txt")
    gj, gt = load_json(tmp_path / "g.json"), load_text(tmp_path / "g.txt")
    assert gj == g and gt == g
    for h in (gj, gt):
        assert all(h.fanin[n] == g.fanin[n] for n in g.nodes)      # select order kept
    assert to_text(gt) == to_text(g)


def test_json_node_fields_and_delays(ic4):
    doc = json.loads(json.dumps(to_json(ic4.graphs[16])))
    nodes = {n["id"]: n for n in doc["nodes"]}
    sb = nodes["SB:16:1:1:EAST:0:OUT"]
    assert {k: sb[k] for k in ("kind", "x", "y", "width", "side", "track", "io")} == {
        "kind": "SB", "x": 1, "y": 1, "width": 16, "side": "EAST", "track": 0, "io": "SB_OUT"}
    assert sb["fanin"] == ["SB:16:1:1:NORTH:4:IN", "SB:16:1:1:SOUTH:3:IN",
                           "SB:16:1:1:WEST:0:IN", "PORT:16:1:1:data_out"]
    # pe switch-box hops N->E, S->E, W->E of the 16-bit table; core output 0 ps
    assert sb["delay_ps"] == [179.5, 148.5, 149.0, 0.0]
    port = nodes["PORT:16:1:1:data_in"]
    assert port["port"] == "data_in" and port["direction"] == "in"
    assert set(port["delay_ps"]) == {240.0}
    assert nodes["RMUX:16:1:1:EAST:0"]["delay_ps"] == [0.0, 230.0]
    assert nodes["SB:16:2:1:WEST:0:IN"]["fanin"] == ["RMUX:16:1:1:EAST:0"]
    assert doc["layout"] == ["IppI"] * 4
    tiles = {(t["x"], t["y"]): t for t in doc["tiles"]}
    assert tiles[(1, 1)]["core"] == "passthru" and tiles[(1, 1)]["core_delay_ps"] == 700.0
    assert tiles[(0, 0)]["timing_class"] == "io"
    # the IO class is missing from the switch-box and connection-box tables: recorded
    assert "switch_box_hop has no class 'io'; used 'pe'" in doc["timing_notes"]
    assert "connection_box has no class 'io'; used 'pe'" in doc["timing_notes"]


def test_text_format_blocks(ic2):
    text = to_text(ic2.graphs[16])
    lines = text.splitlines()
    assert lines[1] == "SWITCH 16 imran 5"
    assert "TILE 1 0 passthru p pe" in lines
    i = lines.index("  SB (0, 1, 1, 0, 1, 16)")           # SB_OUT NORTH track 0 of (1,1)
    assert lines[i + 1:i + 5] == ["    <- SB (0, 1, 1, 1, 0, 16) @ 151.0",
                                  "    <- SB (1, 1, 1, 2, 0, 16) @ 171.3",
                                  "    <- SB (0, 1, 1, 3, 0, 16) @ 153.3",
                                  "    <- PORT data_out (1, 1, 16) out @ 0.0"]


def test_malformed_dumps_raise_collateral_error(ic2, tmp_path):
    text = to_text(ic2.graphs[1]).replace("SB (0, 1, 1, 0, 1, 1)", "SB (0, 1, 1, 9, 1, 1)", 1)
    with pytest.raises(CollateralError, match=r"<text>:\d+: cannot parse"):
        from_text(text)
    doc = to_json(ic2.graphs[1])
    doc["schema"] = "other/0"
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(CollateralError, match="bad.json: schema 'other/0'"):
        load_json(tmp_path / "bad.json")


def _irregular(g):
    """A copy of ``g`` with irregular tiles: an extra switch-box edge in (2, 2), odd delays
    (a long fraction, -0.0 where the other tiles have 0.0), a fan-in source swapped for
    another of the same side and delay in (4, 2), and a node outside the tiles."""
    from canal.graph import Node, NodeKind

    g = g.copy()
    w = g.width
    dst = f"SB:{w}:2:2:NORTH:1:OUT"
    src = next(f"SB:{w}:2:2:{s}:{t}:IN" for s in ("WEST", "EAST", "SOUTH") for t in range(4)
               if f"SB:{w}:2:2:{s}:{t}:IN" not in g.fanin[dst])
    g.add_edge(src, dst, 10.0)
    e1, e2 = [(s, d) for d, ss in g.fanin.items() if d.startswith(f"SB:{w}:3:3:")
              for s in ss][:2]
    g.delay[e1] = 123.456789012345
    zero = next((s, d) for (s, d), v in g.delay.items() if v == 0.0 and ":1:3:" in d)
    g.delay[zero] = -0.0
    # a fan-in source swapped for another track of the same side: same offset and delay
    dst2 = f"SB:{w}:4:2:EAST:0:OUT"
    was = next(s for s in g.fanin[dst2] if s.endswith(":IN"))
    side = was.split(":")[4]
    now = next(f"SB:{w}:4:2:{side}:{t}:IN" for t in range(4)
               if f"SB:{w}:4:2:{side}:{t}:IN" not in g.fanin[dst2])
    g.fanin[dst2][g.fanin[dst2].index(was)] = now
    g.delay[(now, dst2)] = g.delay.pop((was, dst2))
    g.add_node(Node(NodeKind.PORT, 9, 9, w, name="stray", direction="out"))
    g.add_edge(f"PORT:{w}:9:9:stray", dst, 1.0)
    return g


def _reference_text(g):
    """The text dump written node by node (the general path)."""
    c = collateral
    lines = c._text_lines(g)
    cut = lines.index(next(x for x in lines if x.startswith("TILE ")))
    return "\n".join(lines[:cut] + c._tiles_text(g, g.by_tile())) + "\n"


def test_stamped_dumps_equal_the_reference_writers(tmp_path, odd_interconnect):
    """The stamped JSON and text writers give the text of ``json.dumps`` of the document
    built node by node and of the node-by-node text writer, on a non-uniform array, on a
    copy with irregular tiles, and (declining) on graphs with values they do not stamp."""
    ic = odd_interconnect
    for g in [*ic.graphs.values(), *(_irregular(g) for g in ic.graphs.values())]:
        assert collateral._nodes_json_stamped(g) is not None          # the fast path runs
        assert collateral._tiles_text_stamped(g) is not None
        ref = json.dumps(to_json(g, ic.timing), separators=(",", ":"))
        assert collateral.json_text(g, ic.timing) == ref
        assert to_text(g) == _reference_text(g)
        dump_json(g, tmp_path / "g.json", ic.timing)
        dump_text(g, tmp_path / "g.txt")
        assert (tmp_path / "g.json").read_text() == ref
        assert load_json(tmp_path / "g.json") == g
        if "PORT:16:9:9:stray" not in g.nodes and "PORT:1:9:9:stray" not in g.nodes:
            assert load_text(tmp_path / "g.txt") == g      # (the text has tiles' nodes only)
    # values the stamped writers do not reproduce: they decline, the dumps stay exact
    g = _irregular(ic.graphs[16])
    edge = next(iter(g.delay))
    for value in (5, float("inf")):                   # json: 5 and Infinity; text: 5, inf
        g.delay[edge] = value
        assert collateral._nodes_json_stamped(g) is None
        assert collateral.json_text(g, ic.timing) == json.dumps(to_json(g, ic.timing),
                                                                separators=(",", ":"))
        assert to_text(g) == _reference_text(g)
    g.delay[edge] = 5.0
    g.tiles[(2, 2)] = replace(g.tiles[(2, 2)], x=7)   # the TILE line has the key's (x, y)
    assert to_text(g) == _reference_text(g) and "TILE 2 2 " in to_text(g)
    g.nodes["PORT:16:9:9:stray"] = replace(g.nodes["PORT:16:9:9:stray"], name='a"b')
    assert collateral._nodes_json_stamped(g) is None                   # id != node id
    assert collateral.json_text(g, ic.timing) == json.dumps(to_json(g, ic.timing),
                                                            separators=(",", ":"))


def test_dump_graph_equals_the_two_dumps(tmp_path, odd_interconnect):
    """``dump_graph`` (the text writer permuting the JSON writer's columns into tile order)
    writes the bytes of ``dump_json`` and ``dump_text``: on a non-uniform array, on irregular
    copies (extra edge, swapped source, a node off the tiles) and on a graph the stamped
    writers decline (an int delay)."""
    from canal.collateral import dump_graph

    ic = odd_interconnect
    graphs = [*ic.graphs.values(), *(_irregular(g) for g in ic.graphs.values())]
    declined = _irregular(ic.graphs[16])
    declined.delay[next(iter(declined.delay))] = 5
    for g in [*graphs, declined]:
        dump_json(g, tmp_path / "a.json", ic.timing)
        dump_text(g, tmp_path / "a.txt")
        dump_graph(g, tmp_path / "b.json", tmp_path / "b.txt", ic.timing)
        assert (tmp_path / "b.json").read_bytes() == (tmp_path / "a.json").read_bytes()
        assert (tmp_path / "b.txt").read_bytes() == (tmp_path / "a.txt").read_bytes()
    # the shared columns are really used: the by-tile segments come from the base
    g = graphs[0]
    base = collateral._Segments(g)
    seg = collateral._Segments(g, by_tile=True, base=base)
    ref = collateral._Segments(g, by_tile=True)
    assert seg.code is base.code
    for f in ("pos", "counts", "src", "delays", "edges", "tile_counts"):
        assert (getattr(seg, f) == getattr(ref, f)).all(), f
    assert seg.eoff == ref.eoff and seg.fanin == ref.fanin


def test_from_json_nodes_equal_constructed_nodes_and_bad_nodes_are_refused(odd_interconnect):
    """``from_json`` makes each node's instance dict directly: the nodes equal (and hash
    as) ``Node(...)`` with its id read, the id cached; a node whose id does not match its
    fields is a CollateralError naming both, one of another width the graph's SpecError."""
    import copy

    from canal.collateral import from_json
    from cgra.errors import SpecError

    g = odd_interconnect.graphs[16]
    doc = to_json(g, odd_interconnect.timing)
    back = from_json(doc, "g.json")
    assert back == g and list(back.nodes) == list(g.nodes)
    for nid, n in back.nodes.items():
        ref = g.nodes[nid]
        assert n.__dict__ == {**{k: getattr(ref, k) for k in ref.__dataclass_fields__},
                              "id": nid}
        assert hash(n) == hash(ref)
    bad = copy.deepcopy(doc)
    entry = next(d for d in bad["nodes"] if d["kind"] == "SB")
    entry["track"] += 1
    with pytest.raises(CollateralError, match=rf"g.json: node id {entry['id']} does not match"):
        from_json(bad, "g.json")
    wide = copy.deepcopy(doc)
    entry = next(d for d in wide["nodes"] if d["kind"] == "PORT")
    entry["width"], entry["id"] = 1, entry["id"].replace("PORT:16:", "PORT:1:")
    with pytest.raises(SpecError, match="has width 1 but graph is 16-bit"):
        from_json(wide, "g.json")
