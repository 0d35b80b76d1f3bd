"""The data width is one parameter (``data_width``): validated against the interconnect
widths, the PE spec, the MEM preset and the delay table before anything is generated, and
passed to the IO core."""
from __future__ import annotations

import pathlib

import pytest

from cgra.errors import ConfigError
from garnet.params import from_dict, load_toml

ROOT = pathlib.Path(__file__).resolve().parents[2]
W32 = {"width": 8, "height": 8, "data_width": 32, "widths": [32, 1],
       "pe": "peak.examples.cgra_pe:make_pe(32)", "mem_preset": "dualport_1024x32",
       "timing": str(ROOT / "configs" / "delays_32.json")}


def _refused(doc: dict) -> str:
    with pytest.raises(ConfigError) as exc:
        from_dict(doc, "cfg.toml")
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def test_width32_config_is_valid():
    p = load_toml(ROOT / "configs" / "width32.toml")
    assert (p.data_width, p.widths, p.mem_preset) == (32, [32, 1], "dualport_1024x32")
    assert p.pe == "peak.examples.cgra_pe:make_pe(32)"
    assert p.timing == "measured"                    # a keyword, not a path
    from_dict(W32)                                   # the derived 32-bit table, from a dict


def test_default_data_width_is_16():
    assert from_dict({"width": 4, "height": 4}).data_width == 16


def test_pe_of_another_width_is_refused_naming_both():
    msg = _refused({**W32, "pe": "peak.examples.cgra_pe:PE"})
    assert msg.startswith("cfg.toml: field 'pe' = 'peak.examples.cgra_pe:PE':")
    assert "data ports data0, data1, res are 16 bits but data_width = 32" in msg
    assert "peak.examples.cgra_pe:make_pe(32)" in msg
    msg = _refused({"width": 8, "height": 8, "pe": "peak.examples.cgra_pe:make_pe(32)"})
    assert "are 32 bits but data_width = 16" in msg and "set data_width = 32" in msg


@pytest.mark.parametrize("widths", [[16, 1], [32], [1]])
def test_widths_must_hold_data_width_and_1(widths):
    msg = _refused({**W32, "widths": widths})
    assert msg.startswith(f"cfg.toml: field 'widths' = {widths!r}:")
    assert "include both 32 and 1" in msg


def test_mem_preset_of_another_word_width_is_refused():
    msg = _refused({**W32, "mem_preset": "dualport_2048x16"})
    assert msg.startswith("cfg.toml: field 'mem_preset' = 'dualport_2048x16':")
    assert "16 bits but data_width = 32" in msg and "dualport_1024x32" in msg


def test_delay_table_without_the_width_is_refused():
    """The published table (an option since the measured model is the default) has no
    32-bit figures: refused, never given the 16-bit ones silently."""
    msg = _refused({**W32, "timing": "cascade-table"})
    assert msg.startswith("cfg.toml: field 'timing' = 'cascade-table': delay table default: "
                          "switch_box_hop['pe'] has no width 32")
    assert "width_aliases" in msg and "configs/delays_32.json" in msg


@pytest.mark.parametrize("bad", [1, 0, 65])
def test_data_width_range(bad):
    assert _refused({**W32, "data_width": bad}).startswith(
        f"cfg.toml: field 'data_width' = {bad}:")


def test_io_core_has_data_width_ports():
    from garnet.cores import io_core

    io16, io32 = io_core(), io_core(32)
    assert io16.name == "io_core" and io32.name == "io_core_32"
    assert {p.name: p.width for p in io32.ports} == {
        "f2io_32": 32, "io2f_32": 32, "glb2io_32": 32, "io2glb_32": 32,
        "f2io_1": 1, "io2f_1": 1, "glb2io_1": 1, "io2glb_1": 1}
    assert io32.info["external"] == ("glb2io_32", "io2glb_32", "glb2io_1", "io2glb_1")
    assert {p.name for p in io16.ports} >= {"glb2io_16", "io2f_16"}
