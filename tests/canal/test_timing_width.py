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
