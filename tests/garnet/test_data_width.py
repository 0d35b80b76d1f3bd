"""The data width is one parameter (``data_width``): validated against the interconnect
widths, the PE spec, the MEM preset and the delay table before anything is generated (every
mistake of that group reported in one error), and passed to the IO core."""
from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from cgra.errors import ConfigError, SpecError
from garnet.params import from_dict, load_toml
from lake.spec import dual_port, dual_port_name, is_preset, preset

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
    32-bit figures: refused, never given the 16-bit ones silently. A copy of it needs the
    ``io`` class alias the default table takes implicitly: the error says so."""
    msg = _refused({**W32, "timing": "cascade-table"})
    assert msg.startswith("cfg.toml: field 'timing' = 'cascade-table': delay table default: "
                          "switch_box_hop['pe'] has no width 32")
    assert "width_aliases" in msg and "configs/delays_32.json" in msg
    assert 'a copy of the default table canal/data/delays_ps.json also needs ' \
           '"class_aliases": {"io": "pe"}' in msg
    # configs/delays_32.json has its own io alias: no such hint on a missing width there
    msg = _refused({**W32, "data_width": 8, "widths": [8, 1], "mem_preset": "dualport_4096x8",
                    "pe": "peak.examples.cgra_pe:make_pe(8)"})
    assert "has no width 8" in msg and "class_aliases" not in msg


def test_copied_default_table_reports_the_width_and_the_io_alias(tmp_path):
    """A copy of the default table with a width alias but no class alias: the missing
    ``io`` class is reported (it was the second round of the 32-bit story)."""
    table = json.loads((ROOT / "canal" / "data" / "delays_ps.json").read_text())
    path = tmp_path / "delays.json"
    path.write_text(json.dumps({**table, "width_aliases": {"32": "16"}}))
    msg = _refused({**W32, "timing": str(path)})
    assert msg.startswith(f"cfg.toml: field 'timing' = '{path}': delay table {path}: "
                          f"switch_box_hop has no class 'io'")
    assert '"class_aliases": {"io": "pe"}' in msg


def _several() -> dict:
    """configs/small.toml's 16-bit fields under data_width = 32 on the published table:
    four mistakes (the measured default times every width: three)."""
    return {"width": 8, "height": 8, "data_width": 32, "timing": "cascade-table"}


def test_every_data_width_mistake_is_reported_at_once():
    with pytest.raises(ConfigError) as exc:
        from_dict(_several(), "cfg.toml")
    lines = str(exc.value).split("\n")
    assert lines[0] == "cfg.toml: 4 data-width errors (data_width = 32); fix each:"
    assert [ln.split(":")[1].strip() for ln in lines[1:]] == [
        "field 'widths' = [16, 1]", "field 'timing' = 'cascade-table'", "field 'pe' = "
        "'peak.examples.cgra_pe", "field 'mem_preset' = 'dualport_2048x16'"]
    widths, timing, pe, mem = lines[1:]
    assert "include both 32 and 1, e.g. [32, 1]" in widths
    assert "switch_box_hop['pe'] has no width 32" in timing and "configs/delays_32.json" in \
        timing and '"class_aliases": {"io": "pe"}' in timing
    assert "use a PE with 32-bit data ports (e.g. peak.examples.cgra_pe:make_pe(32))" in pe
    assert "use a preset with 32-bit words (e.g. dualport_1024x32)" in mem
    # the fixes named in the error make a valid configuration
    from_dict({**_several(), "widths": [32, 1], "timing": W32["timing"],
               "pe": "peak.examples.cgra_pe:make_pe(32)", "mem_preset": "dualport_1024x32"})
    # on the measured model (the default) the timing field is no mistake: three errors
    with pytest.raises(ConfigError) as exc:
        from_dict({"width": 8, "height": 8, "data_width": 32}, "cfg.toml")
    lines = str(exc.value).split("\n")
    assert lines[0] == "cfg.toml: 3 data-width errors (data_width = 32); fix each:"
    assert [ln.split(":")[1].strip().split(" ")[1] for ln in lines[1:]] == [
        "'widths'", "'pe'", "'mem_preset'"]


def test_every_data_width_mistake_exits_2_from_the_command_line(tmp_path):
    cfg = tmp_path / "w32.toml"
    cfg.write_text("width = 8\nheight = 8\ndata_width = 32\nmem_preset = \"dualport_4096x8\"\n"
                   "timing = \"cascade-table\"\n")
    cgra = str(pathlib.Path(sys.executable).parent / "cgra")
    proc = subprocess.run([cgra, "rtl", "--config", str(cfg), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip().split("\n")
    assert err[0] == f"error: {cfg}: 4 data-width errors (data_width = 32); fix each:"
    assert [e.split(": field ")[1].split(" ")[0] for e in err[1:]] == [
        "'widths'", "'timing'", "'pe'", "'mem_preset'"]
    assert "are 8 bits but data_width = 32" in err[4] and "Traceback" not in proc.stderr
    assert not (tmp_path / "o").exists()


def test_width8_config_is_valid_with_the_width_parameterised_dual_port():
    p = load_toml(ROOT / "configs" / "width8.toml")
    assert (p.data_width, p.widths, p.mem_preset) == (8, [8, 1], "dualport_4096x8")
    assert p.pe == "peak.examples.cgra_pe:make_pe(8)" and p.timing.endswith("delays_8.json")
    assert _refused({**W32, "data_width": 8, "widths": [8, 1], "timing": "measured",
                     "pe": "peak.examples.cgra_pe:make_pe(8)"}).startswith(
        "cfg.toml: field 'mem_preset' = 'dualport_1024x32': the memory's data ports are "
        "32 bits but data_width = 8; use a preset with 8-bit words (e.g. dualport_4096x8)")


def test_dual_port_is_width_parameterised():
    """``dualport_<capacity>x<w>``: the 32 Kbit macro at any word width; the named presets
    are the same specs."""
    assert [dual_port_name(w) for w in (8, 16, 32, 24, 64)] == [
        "dualport_4096x8", "dualport_2048x16", "dualport_1024x32", "dualport_1024x24",
        "dualport_512x64"]
    m8 = preset("dualport_4096x8")
    assert (m8.storage.capacity, m8.storage.data_width, m8.lut, m8.address_bits) == \
        (4096, 8, True, 12)
    assert {e.name: e.width for e in m8.external_ports} == {"data_in_0": 8, "data_out_0": 8}
    assert preset("dualport_1024x32") == dual_port(32) and preset("dualport_2048x16") == \
        dual_port() == dual_port(16, 2048)
    assert preset("dualport_256x8").storage.capacity == 256
    assert is_preset("dualport_4096x8") and is_preset("pond_32x16") and not is_preset("dp8")
    with pytest.raises(SpecError, match="capacity 1000 must be a power of two >= 2, e.g. "
                                        "dualport_4096x8"):
        preset("dualport_1000x8")
    with pytest.raises(SpecError, match="data_width 65 must be 2..64 bits"):
        preset("dualport_512x65")
    msg = _refused({**W32, "mem_preset": "dp8"})
    assert msg.startswith("cfg.toml: field 'mem_preset' = 'dp8': unknown Lake preset")
    assert "dualport_<capacity>x<data_width> for any data_width (e.g. dualport_1024x32)" in msg


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
