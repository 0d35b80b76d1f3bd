"""Delay-table widths: the default table has no 32-bit switch-box figures and refuses such
a graph; a user table maps a width explicitly (``width_aliases``, noted) or gives its own
figures (configs/delays_32.json, derived from the 16-bit ones)."""
from __future__ import annotations

import json
import pathlib

import pytest

from canal.timing import TimingModel, default_table_text
from cgra.errors import ConfigError

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_default_table_refuses_a_32_bit_hop():
    tm = TimingModel.load()
    assert tm.sb_hop("pe", 16, "NORTH", "SOUTH") == 184.89
    with pytest.raises(ConfigError, match=r"switch_box_hop\['pe'\] has no width 32, only "
                                          r"\['1', '16'\].*width_aliases"):
        tm.sb_hop("pe", 32, "NORTH", "SOUTH")


def test_width_alias_is_explicit_and_noted(tmp_path):
    table = json.loads(default_table_text())
    table["class_aliases"] = {"io": "pe"}
    table["width_aliases"] = {"32": "16"}
    path = tmp_path / "alias.json"
    path.write_text(json.dumps(table))
    tm = TimingModel.load(path)
    assert tm.sb_hop("mem", 32, "EAST", "WEST") == table["switch_box_hop"]["mem"]["16"]["E->W"]
    assert "switch_box_hop['mem'] has no width 32; used the 16-bit figures (width_aliases)" \
        in tm.notes
    assert tm.sb_hop("pe", 1, "NORTH", "SOUTH") == 185.2        # own figures: no alias
    with pytest.raises(ConfigError, match="has no width 8"):
        tm.sb_hop("pe", 8, "NORTH", "SOUTH")


@pytest.mark.parametrize("aliases,words", [({"32": 16}, "as strings"),
                                           ({"32": "8", "8": "16"}, "itself an alias")])
def test_bad_width_aliases(tmp_path, aliases, words):
    table = json.loads(default_table_text())
    table["width_aliases"] = aliases
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(table))
    with pytest.raises(ConfigError, match=words):
        TimingModel.load(path)


def test_delays_32_are_derived_from_the_16_bit_figures():
    d16 = json.loads(default_table_text())
    path = ROOT / "configs" / "delays_32.json"
    d32 = json.loads(path.read_text())
    assert "x 1.15" in d32["_about"] and "x 1.25" in d32["_about"]
    for cls, by_w in d16["switch_box_hop"].items():
        assert set(d32["switch_box_hop"][cls]) == {"32", "1"}
        assert d32["switch_box_hop"][cls]["1"] == by_w["1"]
        for hop, v in by_w["16"].items():
            assert d32["switch_box_hop"][cls]["32"][hop] == round(v * 1.15, 2)
    assert d32["core"]["pe"] == d16["core"]["pe"] * 1.25
    tm = TimingModel.load(path)
    assert tm.sb_hop("io", 32, "NORTH", "SOUTH") == round(184.89 * 1.15, 2)   # io -> pe alias
    with pytest.raises(ConfigError, match="has no width 16"):
        tm.sb_hop("pe", 16, "NORTH", "SOUTH")


def _resolve_per_edge(tm, graphs):
    """Reference of :meth:`TimingModel.resolve`'s edge classes: ``edge_class`` per edge."""
    classes = {"reg": tm.register_mux(), "reg_in": 0.0, "bypass": 0.0, "wire": 0.0,
               "core_out": 0.0}
    for g in graphs.values():
        for dst, srcs in g.fanin.items():
            for src in srcs:
                key = tm.edge_class(g, src, dst)
                if key not in classes:
                    classes[key] = tm.class_delay(key)
    return classes


def test_memoised_resolve_equals_edge_by_edge(odd_interconnect):
    """``resolve`` memoises the path class on what ``edge_class`` reads: the same classes
    in the same order, the same notes and the same first missing class as edge by edge, on
    a 6x5 array with the odd settings and a copy with edges of other kinds added."""
    ic = odd_interconnect
    graphs = {w: g.copy() for w, g in ic.graphs.items()}
    g = graphs[16]
    port = next(n for n, v in g.nodes.items() if v.kind.value == "PORT" and v.x == 2
                and v.y == 2 and v.direction == "in")
    g.add_edge("SB:16:2:2:NORTH:0:OUT", port, 5.0)        # SB_OUT -> PORT: cb class
    g.add_edge("SB:16:1:2:WEST:0:IN", "SB:16:2:2:WEST:3:IN", 1.0)   # SB_IN -> SB_IN: wire
    for table_edit in (None, "mem"):
        table = json.loads(default_table_text())
        if table_edit:
            del table["switch_box_hop"][table_edit]
        fast, slow = TimingModel(table, "t", {"io": "pe"}), TimingModel(table, "t", {"io": "pe"})
        try:
            ref = _resolve_per_edge(slow, graphs)
        except ConfigError as exc:
            with pytest.raises(ConfigError) as got:
                fast.resolve(graphs)
            assert str(got.value) == str(exc) and table_edit
            continue
        fast = fast.resolve(graphs)
        assert list(fast.classes.items())[:len(ref)] == list(ref.items())
        assert fast.notes == slow.notes and fast.notes


def test_resolve_from_representative_edges_equals_every_edge(odd_interconnect):
    """``resolve(edges=class_representatives)`` reads one edge per combination of source
    fields, sink fields and sink tile class: the same classes in the same order, the same
    notes and the same first missing class as reading every edge, on the odd 6x5 array, a
    copy with edges of other kinds added and a node off the tiles; the representatives are
    few, and a graph whose fan-in dict is not in node order gets none (every edge read)."""
    from canal.collateral import class_representatives

    ic = odd_interconnect
    plain = {w: g.copy() for w, g in ic.graphs.items()}
    edited = {w: g.copy() for w, g in ic.graphs.items()}
    g = edited[16]
    port = next(n for n, v in g.nodes.items() if v.kind.value == "PORT" and v.x == 2
                and v.y == 2 and v.direction == "in")
    g.add_edge("SB:16:2:2:NORTH:0:OUT", port, 5.0)
    g.add_edge("SB:16:1:2:WEST:0:IN", "SB:16:2:2:WEST:3:IN", 1.0)
    for graphs in (plain, edited):
        reps = {w: class_representatives(g) for w, g in graphs.items()}
        assert all(r is not None for r in reps.values())
        assert sum(map(len, reps.values())) < sum(g.num_edges() for g in graphs.values()) / 5
        for table_edit in (None, "mem", "pe"):
            table = json.loads(default_table_text())
            if table_edit:
                del table["switch_box_hop"][table_edit]
            fast, slow = (TimingModel(table, "t", {"io": "pe"}) for _ in range(2))
            try:
                slow = slow.resolve(graphs)
            except ConfigError as exc:
                with pytest.raises(ConfigError) as got:
                    fast.resolve(graphs, edges=reps)
                assert str(got.value) == str(exc) and table_edit
                continue
            fast = fast.resolve(graphs, edges=reps)
            assert list(fast.classes.items()) == list(slow.classes.items())
            assert fast.notes == slow.notes
    shuffled = plain[1].copy()
    shuffled.fanin = dict(reversed(list(shuffled.fanin.items())))
    assert class_representatives(shuffled) is None
