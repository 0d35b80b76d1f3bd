"""`cgra rtl` / `cgra lint` end to end: tracks 5 -> 3 regenerates routing and RTL and reuses
the rules (summary line); lint of the 8x8 design has no errors.

The rules tests use the toy PE of the PEak paper (rule synthesis in seconds) on a 4x3 array;
the default PE's table is exercised by the rules package's own tests and the bench."""
from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from cgra.cli import cli

TOY = "peak.examples.toy_pe:ToyPE"


def _cfg(tmp: Path, tracks: int) -> Path:
    p = tmp / f"tiny_t{tracks}.toml"
    p.write_text(f'name = "tiny"\nwidth = 4\nheight = 3\ntracks = {tracks}\npe = "{TOY}"\n'
                 'timing = "cascade-table"\n')      # nothing measured: a CLI test
    return p


def _run(args: list[str]) -> str:
    res = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output.strip().splitlines()[-1]


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_tracks_change_regenerates_rtl_and_reuses_rules(tmp_path):
    out, shared = tmp_path / "tiny", tmp_path / "rules"
    s5 = _run(["rtl", "--config", str(_cfg(tmp_path, 5)), "--out", str(out),
               "--rules-dir", str(shared)])
    assert "rules regenerated" in s5
    d5 = json.loads((out / "design.json").read_text())
    rules5 = _files(out / "rules")
    assert "ToyPE16.rules.json" in rules5 and "garnet_rules.json" in rules5
    g5 = json.loads((out / "routing" / "graph_16.json").read_text())
    rtl5 = _files(out / "rtl")

    s3 = _run(["rtl", "--config", str(_cfg(tmp_path, 3)), "--out", str(out),
               "--rules-dir", str(shared)])
    m = re.search(r"rules reused from previous design \(PE hash ([0-9a-f]{8}) unchanged", s3)
    assert m and d5["spec_hashes"]["pe"].startswith(m.group(1)), s3
    d3 = json.loads((out / "design.json").read_text())
    assert d3["params"]["tracks"] == 3 and d5["params"]["tracks"] == 5
    g3 = json.loads((out / "routing" / "graph_16.json").read_text())
    assert g3["params"]["tracks"] == 3 and g5["params"]["tracks"] == 5
    sb_out = [n for n in g3["nodes"] if n["kind"] == "SB" and n["io"] == "SB_OUT"]
    assert len(sb_out) == 4 * 3 * 4 * 3                  # tiles x sides x tracks
    assert len(g3["nodes"]) < len(g5["nodes"])
    assert d3["top"] != d5["top"] and d3["files"]["routing/graph_16.json"] != \
        d5["files"]["routing/graph_16.json"]
    assert d3["files"]["rules/garnet_rules.json"] == d5["files"]["rules/garnet_rules.json"]
    assert _files(out / "rtl") != rtl5
    assert _files(out / "rules") == rules5                 # byte-identical rule table
    assert d3["rules"]["source"] == "previous design"

    # a new design with the same PE takes the table from the shared rules directory
    s_new = _run(["rtl", "--config", str(_cfg(tmp_path, 3)), "--out", str(tmp_path / "b"),
                  "--rules-dir", str(shared)])
    assert "rules reused from cache" in s_new
    assert _files(tmp_path / "b" / "rules") == rules5     # copied, no solver call


def test_lint_small_design_has_no_errors(small_design):
    _, d = small_design
    res = CliRunner().invoke(cli, ["lint", str(d)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    line = res.output.strip().splitlines()[-1]
    m = re.match(r"lint Garnet_8x8_\w+: (\d+) errors, (\d+) warnings", line)
    assert m, line
    assert int(m.group(1)) == 0
    assert "UNOPTFLAT" not in line                         # no combinational cycles


def test_lint_reports_errors(tmp_path, small_design):
    import shutil

    from garnet.lint import lint
    _, d = small_design
    bad = tmp_path / "bad"
    shutil.copytree(d, bad, ignore=shutil.ignore_patterns("routing", "config_map.json"))
    top = json.loads((bad / "design.json").read_text())["top"]
    v = bad / "rtl" / f"{top}.v"
    v.write_text(v.read_text().replace("endmodule", "no_such_module u_bad ();\nendmodule"))
    rep = lint(bad)
    assert rep.errors and any("no_such_module" in e for e in rep.errors)
    res = CliRunner().invoke(cli, ["lint", str(bad)], catch_exceptions=False)
    assert res.exit_code == 1 and "no_such_module" in res.output
