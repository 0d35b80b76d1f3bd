"""Parameter loading and validation: bad values fail before any generation, naming the field."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cgra.errors import ConfigError
from garnet.params import GarnetParams, from_dict, load_toml, validate

ROOT = Path(__file__).resolve().parents[2]


def test_shipped_configs_load():
    default = load_toml(ROOT / "configs" / "default.toml")
    small = load_toml(ROOT / "configs" / "small.toml")
    assert (default.width, default.height, default.tracks) == (32, 16, 5)
    assert (small.width, small.height, small.name) == (8, 8, "small")
    assert small.pe == "peak.examples.cgra_pe:PE"
    assert small.mem_preset == "dualport_2048x16"
    assert small.flush_interval == 4
    assert small.topology == "imran"


def test_the_delay_model_is_measured_by_default():
    """Issue 40 item 3: a design without a ``timing`` field, the shipped default and small
    included, takes the model measured from its tiles; the published table is the option
    ``timing = "cascade-table"``. configs/small_measured.toml (the design of the measured
    end-to-end tests) is configs/small.toml with the default written out."""
    assert GarnetParams().timing == "measured" and GarnetParams().measured_timing
    for name in ("default", "small"):
        assert load_toml(ROOT / "configs" / f"{name}.toml").measured_timing
    assert not GarnetParams(timing="cascade-table").measured_timing
    small = load_toml(ROOT / "configs" / "small.toml").to_dict()
    measured = load_toml(ROOT / "configs" / "small_measured.toml").to_dict()
    assert {k for k in small if small[k] != measured[k]} == {"name"}


def test_default_layout():
    p = GarnetParams(width=8, height=3)
    rows = ["".join({"io": "I", "mem": "m", "pe": "p"}[p.tile_kind(x, y)] for x in range(8))
            for y in range(3)]
    assert rows == ["IIIIIIII", "pppmpppm", "pppmpppm"]


@pytest.mark.parametrize("key,value,words", [
    ("width", 0, ["'width'", "1..256"]),
    ("height", 1, ["'height'", "IO row"]),
    ("tracks", 0, ["'tracks'", "at least 1"]),
    ("mem_ratio", 9, ["'mem_ratio'", "1..width (8)"]),
    ("pe", "peak.examples.no_such_pe:PE", ["'pe'", "no_such_pe"]),
    ("pe", "peak.examples.cgra_pe:Nope", ["'pe'", "no attribute 'Nope'"]),
    ("pe", "peak.examples.cgra_pe:ALU", ["'pe'", "not a PEak spec"]),
    ("mem_preset", "sram_1x1", ["'mem_preset'", "dualport_2048x16"]),
    ("topology", "crossbar", ["'topology'", "imran"]),
    ("widths", [16], ["'widths'", "16 and 1"]),
    ("pipeline_register_sides", ["UP"], ["'pipeline_register_sides'", "NORTH"]),
    ("flush_interval", -1, ["'flush_interval'"]),
    ("colour", "red", ["'colour'", "unknown parameter"]),
    ("width", "8", ["'width'", "integer"]),
    ("timing", "", ["'timing'", "empty", "\"measured\" (the default", "cascade-table"]),
])
def test_bad_field_is_named(key, value, words):
    doc = {"width": 8, "height": 8, key: value}
    with pytest.raises(ConfigError) as exc:
        from_dict(doc, "cfg.toml")
    msg = str(exc.value)
    assert msg.startswith(f"cfg.toml: field '{key}'")
    for w in words:
        assert w in msg


def test_validate_dataclass_directly():
    with pytest.raises(ConfigError, match="field 'tracks'"):
        validate(GarnetParams(tracks=0))
    validate(GarnetParams(width=4, height=4))


def test_toml_syntax_error_names_file(tmp_path):
    f = tmp_path / "broken.toml"
    f.write_text("width = = 3\n")
    with pytest.raises(ConfigError, match=r"broken.toml:1: TOML syntax error: Invalid value \(column 9\)"):
        load_toml(f)
    with pytest.raises(ConfigError, match="does not exist"):
        load_toml(tmp_path / "missing.toml")


def test_missing_pe_file_is_named_relative_to_the_toml(tmp_path):
    (tmp_path / "cfg").mkdir()
    f = tmp_path / "cfg" / "mine.toml"
    f.write_text('width = 4\nheight = 4\npe = "specs/my_pe.py:PE"\n')
    with pytest.raises(ConfigError) as info:
        load_toml(f)
    msg = str(info.value)
    assert "field 'pe' = 'specs/my_pe.py:PE'" in msg
    assert "does not exist relative to the TOML file" in msg
    assert str(tmp_path / "cfg" / "specs" / "my_pe.py") in msg and "\n" not in msg


def test_cli_bad_config_fails_before_generation(tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text("width = 0\nheight = 8\n")
    out = tmp_path / "design"
    cgra = str(Path(sys.executable).parent / "cgra")
    proc = subprocess.run([cgra, "rtl", "--config", str(cfg),
                           "--out", str(out)], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(f"error: {cfg}: field 'width' = 0")
    assert "Traceback" not in proc.stderr
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [cfg]
