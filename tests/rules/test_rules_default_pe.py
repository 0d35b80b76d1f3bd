"""Acceptance on the default 16-bit CGRA PE: the full table (synthesised once per session),
rule files, caching, the abs edit, the optimised-PE check."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from peak.examples import cgra_pe
from peak.examples.cgra_pe import PE
from peak.examples.cgra_pe_edits import REMOVE_ABS, write_edited
from peak.ir import DECOMPOSITIONS
from peak.rules import build_table, check_against, load_spec, load_table, read_rule
from peak.rules.rule import verify_rule
from peak.rules.table import rule_filename, table_path

APPS = Path(__file__).resolve().parents[2] / "mapper" / "data" / "coreir"


def _app_ops():
    """op -> list of (file, instance, {port: source instance op})."""
    uses: dict[str, list] = {}
    for f in sorted(APPS.glob("*.json")):
        d = json.loads(f.read_text())
        for ns in d["namespaces"].values():
            for m in ns.get("modules", {}).values():
                insts = m.get("instances", {})
                srcs: dict[tuple[str, str], str] = {}
                for a, b in m.get("connections", []):
                    for x, y in ((a, b), (b, a)):
                        parts = x.split(".")
                        if len(parts) == 2 and parts[0] in insts:
                            srcs[(parts[0], parts[1])] = y.split(".")[0]
                for name, inst in insts.items():
                    op = inst.get("genref") or inst.get("modref")
                    ports = {p: insts.get(s, {}).get("genref") for (i, p), s in srcs.items()
                             if i == name}
                    uses.setdefault(op, []).append((f.name, name, ports))
    return uses


def test_every_app_op_has_a_rule(default_table):
    table, out = default_table
    uses = _app_ops()
    assert {"coreir.add", "coreir.mul", "coreir.const", "commonlib.smax", "corebit.and",
            "coreir.lshr", "coreir.ashr", "coreir.mux", "coreir.slt"} <= set(uses)
    for op, sites in uses.items():
        e = table.entry(op)
        if e.status == "found":
            assert e.rule.cost == 1, op
            continue
        # documented decomposition: the PE shifts by b[3:0], the kernels shift by constants
        assert op in ("coreir.lshr", "coreir.ashr"), (op, e.status)
        ce = table.entry(f"{op}[in1=const]")
        assert ce.status == "found"
        assert [p.to_json() for p in ce.rule.preconditions] == \
            [{"port": "in1", "op": "ult", "value": 16}]
        for fname, inst, ports in sites:
            assert ports.get("in1") == "coreir.const", (fname, inst)


def test_expected_instructions(default_table):
    table, _ = default_table
    tags = {k: table.rule(k).instances[0].inst for k in
            ("coreir.add", "coreir.sub", "coreir.mul", "commonlib.smax", "commonlib.umin",
             "commonlib.abs", "commonlib.mult_middle", "coreir.mux")}
    A = cgra_pe.ALU
    code = {m.name: i for i, m in ((m._value_, m) for m in A.field_dict.values())}
    assert tags["coreir.add"]["alu"] == code["Add"]
    assert tags["coreir.sub"]["alu"] == code["Sub"]
    assert tags["coreir.mul"]["alu"] == code["MULT0"]
    assert (tags["commonlib.smax"]["alu"], tags["commonlib.smax"]["signed"]) == (code["GTE"], 1)
    assert (tags["commonlib.umin"]["alu"], tags["commonlib.umin"]["signed"]) == (code["LTE"], 0)
    assert tags["commonlib.abs"]["alu"] == code["Abs"]
    assert (tags["commonlib.mult_middle"]["alu"], tags["commonlib.mult_middle"]["signed"]) == \
        (code["MULT1"], 1)
    assert tags["coreir.mux"]["alu"] == code["Sel"]
    mux = table.rule("coreir.mux").instances[0].inputs
    assert (mux["data0"].port, mux["data1"].port, mux["bit0"].port) == ("in1", "in0", "sel")
    # add-with-constant folds the constant into a PE constant field
    r = table.rule("coreir.add[in1=const]")
    ins = r.instances[0]
    assert len(ins.const_fields) == 1 and list(ins.const_fields.values()) == ["in1"]
    assert r.priority == 2 and r.cost == 1
    # multi-op patterns: compare-and-select found, the others need more than one PE
    assert table.entry("pattern.select_sgt").status == "found"
    for k in ("pattern.muladd", "pattern.add3", "pattern.add_lshr"):
        assert table.entry(k).status == "none"
    absd = table.rule("commonlib.absd")
    assert absd.cost == 2 and absd.pattern == DECOMPOSITIONS["commonlib.absd"]


def test_files_schema_and_verify_on_load(default_table):
    table, out = default_table
    doc = json.loads(table_path(out, "PE").read_text())
    assert doc["schema"] == "peak-rule-table" and doc["version"] == 1
    found = [e for e in doc["entries"] if e["status"] == "found"]
    assert len(found) == len(table.rules())
    for e in found:
        r = read_rule(out / e["rule"])
        assert r.spec_hash == doc["spec_hash"]
    loaded = load_table(table_path(out, "PE"), spec=PE)       # ∀ check of every rule
    assert [e.target for e in loaded.entries] == [e.target for e in table.entries]
    rj = json.loads((out / "PE" / rule_filename("coreir.add[in1=const]")).read_text())
    inst = rj["instances"][0]
    (field, info), = inst["const_fields"].items()
    assert info["port"] == "in1" and info["width"] == 16
    assert int(inst["inst_bits"], 16) >> info["lo"] & 0xFFFF == 0


def test_warm_run_reuses_everything(default_table, tmp_path):
    table, out = default_table
    copy = tmp_path / "warm"
    shutil.copytree(out, copy)
    before = {p.name: p.read_text() for p in (copy / "PE").glob("*.json")}
    warm = build_table(PE, copy)
    assert {e.action for e in warm.entries} == {"cached"}
    after = {p.name: p.read_text() for p in (copy / "PE").glob("*.json")}
    assert after == before                     # stable rule files


def test_abs_edit_reuses_all_other_rules(default_table, tmp_path):
    table, out = default_table
    noabs = load_spec(f"{write_edited(tmp_path / 'cgra_pe_noabs.py', REMOVE_ABS)}:PE")
    work = tmp_path / "edit"
    shutil.copytree(out, work)
    edited = build_table(noabs, work)
    for e in edited.entries:
        old = table.entry(e.target)
        if e.target in ("commonlib.abs", "commonlib.absd"):
            assert e.status == "none" and e.action == "synthesised", e
        elif old.status == "found":
            assert e.status == "found" and e.action == "reused", e
            assert e.rule.instances[0].inst == old.rule.instances[0].inst
        else:       # targets without a rule are re-checked on the edited PE
            assert e.status == old.status and e.action == "synthesised", e
    assert "commonlib.abs" in edited.entry("commonlib.absd").reason


def test_optimised_pe_check_finds_wrong_sub(default_table, tmp_path):
    table, _ = default_table
    same = check_against(table, PE)
    assert same and all(r.ok for r in same)
    badsub = [("sum_, carry = a.adc(b_add, is_sub)", "sum_, carry = a.adc(b_add, Bit(0))")]
    bad = load_spec(f"{write_edited(tmp_path / 'cgra_pe_badsub.py', badsub)}:PE")
    results = {r.target: r for r in check_against(table, bad)}
    sub = results["coreir.sub"]
    assert not sub.ok
    cex = sub.result.counterexample
    x, y = cex.inputs["in0"], cex.inputs["in1"]
    assert cex.expected["out"] == (x - y) & 0xFFFF
    assert cex.got["out"] == (x - y - 1) & 0xFFFF
    assert results["coreir.add"].ok and results["coreir.mul"].ok
    assert verify_rule(table.rule("coreir.and"), bad).ok


def test_rules_do_not_depend_on_solver_history(default_table, tmp_path):
    """The same targets synthesised in another process, in another order, after other
    queries, give byte-identical rule files (what makes --jobs 1 and --jobs 2 agree)."""
    import subprocess
    import sys
    table, out = default_table
    keys = ["coreir.ult[in0=const]", "corebit.not", "corebit.const", "coreir.mux"]
    script = (
        "import sys\n"
        "from peak.examples.cgra_pe import PE\n"
        "from peak.rules import build_table\n"
        "from peak.rules.synth import synthesize\n"
        "from peak.ir import Target\n"
        "synthesize(PE, Target('coreir.sle'), 16)\n"
        "build_table(PE, sys.argv[1], only=sys.argv[2:])\n")
    r = subprocess.run([sys.executable, "-c", script, str(tmp_path / "o"), *keys[::-1]],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    for k in keys:
        name = rule_filename(k)
        assert (tmp_path / "o" / "PE" / name).read_text() == (out / "PE" / name).read_text(), k
