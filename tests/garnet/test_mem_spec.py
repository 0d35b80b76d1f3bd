"""The architect's own memory (issue 39 item 1): ``mem = "path/to/mem.py:MEM"`` in a design
TOML names any Lake :class:`~lake.spec.MemorySpec`; ``cgra rtl`` builds it into the MEM
tiles, ``mem.json`` carries its capabilities and the spec itself, and the compiler reads
only that (no preset name): the config encoder finds the memory by the name mem.json
registers. A broken spec is refused with the spec file's line, exit code 2."""
from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cgra.errors import ConfigError, SpecError
from garnet.params import load_toml, mem_spec
from lake.collateral import MemInfo, collateral
from lake.config import configure
from lake.program import delay_line
from lake.spec import (_REGISTERED, as_spec, circuit_name, dual_port, load_memory,
                       physical_unified_buffer, register, spec_from_dict, spec_to_dict)

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"
CGRA = Path(sys.executable).with_name("cgra")


def _rtl(config: Path, out: Path) -> tuple[int, str]:
    """``cgra rtl`` in a process of its own: (exit code, stdout + stderr)."""
    res = subprocess.run([str(CGRA), "rtl", "--config", str(config), "--out", str(out),
                          "--no-rules"], capture_output=True, text=True, timeout=600)
    return res.returncode, res.stderr + res.stdout


def test_shipped_specs_load_with_their_capabilities():
    dp = mem_spec(load_toml(CONFIGS / "small_dp4096.toml"))
    assert (dp.name, dp.storage.words, dp.storage.fetch_width, dp.inputs, dp.outputs, dp.lut) \
        == ("dp4096x16", 4096, 1, ("data_in_0",), ("data_out_0",), True)
    # the same hardware as the width-parameterised dual port at 4096 words, under its own name
    assert spec_to_dict(dp) | {"name": "x"} == spec_to_dict(dual_port(16, 4096)) | {"name": "x"}
    w8 = mem_spec(load_toml(CONFIGS / "small_wide8.toml"))
    assert (w8.name, w8.storage.capacity, w8.storage.fetch_width, w8.storage.words,
            len(w8.inputs), len(w8.outputs)) == ("wide8_256x128", 256, 8, 2048, 2, 2)
    # an architect's memory gets a content-hashed module name; a preset keeps its own
    assert circuit_name(w8).startswith("lake_wide8_256x128_") and len(circuit_name(w8)) == 27
    assert circuit_name(dual_port()) == "lake_dualport_2048x16"


def test_spec_round_trips_through_json_and_registers():
    spec = physical_unified_buffer(capacity=128, fetch_width=8)
    doc = json.loads(json.dumps(spec_to_dict(spec)))
    assert spec_from_dict(doc) == spec
    mine = dataclasses.replace(spec, name="rt_test_128x128")
    info = MemInfo.from_json(json.loads(json.dumps(collateral(mine))))
    assert info.spec == mine and info.preset == "rt_test_128x128"
    # reading the collateral made the name usable by the config encoder
    assert as_spec("rt_test_128x128") is _REGISTERED["rt_test_128x128"]
    w, r = delay_line(20, 64, 1024, start=0, align=8)
    fields = configure("rt_test_128x128", {"data_in_0": w, "data_out_0": r})
    assert fields == configure(mine, {"data_in_0": w, "data_out_0": r})


def test_preset_name_with_other_contents_is_refused():
    fake = dataclasses.replace(dual_port(16, 4096), name="dualport_2048x16")
    with pytest.raises(SpecError, match="the name is a Lake preset's but the spec differs"):
        register(fake)


def test_both_mem_and_mem_preset_is_refused(tmp_path):
    cfg = tmp_path / "both.toml"
    cfg.write_text((CONFIGS / "small_dp4096.toml").read_text()
                   .replace('mem = "mem_dp4096.py:MEM"',
                            f'mem = "{CONFIGS / "mem_dp4096.py"}:MEM"\n'
                            'mem_preset = "pub_512x64"'))
    with pytest.raises(ConfigError, match="also sets mem_preset = 'pub_512x64'; give one"):
        load_toml(cfg)


BROKEN = '''from lake.spec import (AddressGenerator, Controller, ExternalPort, MemorySpec, MemPort,
                       Storage)

AG = (AddressGenerator("addr", 16),)
MEM = MemorySpec(
    name="broken3000",
    storage=Storage("storage", capacity=4096, data_width=16, fetch_width=1, kind="sram"),
    mem_ports=(MemPort("w0", "W", 0), MemPort("r0", "R", 1)),
    external_ports=(ExternalPort("data_in_0", "in", 16), ExternalPort("data_out_0", "out", 16)),
    controllers=(Controller("in0", "write", "data_in_0", 6, AG),
                 Controller("out0", "read", "data_out_0", 6, AG)),
)
'''


@pytest.mark.parametrize("edit,words", [
    (("capacity=4096", "capacity=3000"), ["storage capacity 3000 must be a power of two"]),
    (("Controller(\"out0\", \"read\"", "Controller(\"out0\", \"write\""),
     ["port 'data_out_0' is served by controllers of roles ['write']", "['read']"]),
    (("ExternalPort(\"data_out_0\", \"out\", 16)", "ExternalPort(\"q\", \"out\", 16)"),
     ["external port 'q' (out)", "name the data ports data_in_0"]),
])
def test_broken_spec_names_file_and_line(tmp_path, edit, words):
    """Through `cgra rtl`: exit code 2, one line that starts with the spec file and the line
    of its ``MEM = ...`` definition, names the TOML field and says what to fix."""
    (tmp_path / "my_mem.py").write_text(BROKEN.replace(*edit))
    cfg = tmp_path / "my.toml"
    cfg.write_text((CONFIGS / "small_dp4096.toml").read_text()
                   .replace("mem_dp4096.py", "my_mem.py"))
    code, out = _rtl(cfg, tmp_path / "out")
    line = out.strip().splitlines()[-1]
    assert code == 2
    assert line.startswith(f"error: {tmp_path / 'my_mem.py'}:5: ")
    assert "my.toml: field 'mem' = '" in line and "my_mem.py:MEM': " in line
    assert all(w in line for w in words)
    assert not (tmp_path / "out" / "design.json").exists()


def test_file_that_does_not_import_and_wrong_object(tmp_path):
    (tmp_path / "m.py").write_text("import dataclasses\n\nMEM = 3\nX = undefined_name\n")
    with pytest.raises(SpecError) as info:
        load_memory(f"{tmp_path / 'm.py'}:MEM")
    assert (info.value.file, info.value.line) == (str(tmp_path / "m.py"), 4)
    assert "NameError" in str(info.value)
    (tmp_path / "n.py").write_text("import dataclasses\n\nMEM = 3\n")
    with pytest.raises(SpecError) as info:
        load_memory(f"{tmp_path / 'n.py'}:MEM")
    assert info.value.line == 3 and "MEM is not a lake.spec.MemorySpec (got int)" in str(info.value)
    with pytest.raises(SpecError, match="has no attribute 'MEMS'; memory specs there: "
                                        r"\['MEM'\]"):
        load_memory(f"{CONFIGS / 'mem_dp4096.py'}:MEMS")


def test_edit_of_the_spec_file_rebuilds_the_memory(tmp_path):
    """An edit of the architect's file (4096 -> 8192 words) changes mem.json and the MEM
    module; an unchanged file rebuilds nothing."""
    shutil.copy(CONFIGS / "mem_dp4096.py", tmp_path / "mem_dp4096.py")
    cfg = tmp_path / "dp.toml"           # on the published table: nothing measured
    cfg.write_text((CONFIGS / "small_dp4096.toml").read_text() + 'timing = "cascade-table"\n')
    out = tmp_path / "out"
    code, first = _rtl(cfg, out)
    assert code == 0, first
    mem = json.loads((out / "mem.json").read_text())["lake"]
    assert (mem["preset"], mem["capacity_words"], mem["spec"]["storage"]["capacity"]) == \
        ("dp4096x16", 4096, 4096)
    code, again = _rtl(cfg, out)
    assert code == 0 and "nothing rebuilt" in again.strip().splitlines()[-1], again
    src = (tmp_path / "mem_dp4096.py").read_text().replace("WORDS = 4096", "WORDS = 8192")
    (tmp_path / "mem_dp4096.py").write_text(src)
    code, edited = _rtl(cfg, out)
    assert code == 0, edited
    mem2 = json.loads((out / "mem.json").read_text())["lake"]
    assert (mem2["capacity_words"], mem2["register_widths"]["address"]) == (8192, 17)
    assert mem2["module"] != mem["module"] and mem2["spec_hash"] != mem["spec_hash"]
    assert [p.name for p in out.rglob("*.v") if f"module {mem2['module']}" in p.read_text()]
