"""Compute mapping (mapper.mapping.compute): covering kernel DAGs with synthesised rewrite rules,
folding constants, replacing memory-mapping placeholders, and the equivalence check of every
mapped kernel against the original with the PE Python model."""
from __future__ import annotations

from pathlib import Path

import pytest

from cgra.errors import MappingError
from mapper import ir
from mapper.apps import lower_app
from mapper.collateral import load_collateral
from mapper.mapping.compute import check_equivalence, cover_kernel, kernel_netlist, map_compute
from mapper.frontend.coreir import example_kernels, example_path, import_coreir
from mapper.mapping.memory import DUAL_PORT_SRAM, map_memory
from peak.collateral import disassemble_fields

#: the shipped example kernels (mapper/data/coreir, package data), sorted by name
COREIR = list(example_kernels().values())

#: session fixtures default_design / nomul_design (rule tables shared across workers)
pytest_plugins = ["mapper_support"]


def _tag(pe, field, name):
    return pe.field(field).tags[name]


def test_coreir_files_found():
    assert len(COREIR) == 10


def test_every_coreir_kernel_maps_and_matches(default_design):
    """Acceptance: every shipped CoreIR kernel (mapper/data/coreir) imports, maps onto the
    default PE and matches the original on 1000 random input vectors. Kernels with an identical DAG
    (e.g. the nine conv_3_3 stages) map to identical PEs, so each distinct DAG is simulated
    once; the mapped netlists of the copies are compared with it."""
    c = load_collateral(default_design)
    seen: dict[str, tuple] = {}
    per_file: dict[str, int] = {}
    kernels = 0
    for path in COREIR:
        total = 0
        for _name, k in import_coreir(path).items():
            m = cover_kernel(k, c.rules, c.pe)
            kernels += 1
            total += m.pe_count()
            assert m.pe_count() <= max(1, m.prepared.num_ops())
            d = k.to_dict()
            d.pop("name")
            sig = repr(d)
            cfg = [(p.rule, p.inst, sorted(p.inputs.items())) for p in m.pes]
            if sig in seen:
                assert [(r, i) for r, i, _ in seen[sig]] == [(r, i) for r, i, _ in cfg]
                continue
            seen[sig] = cfg
            rep = check_equivalence(m, c.pe, vectors=1000, seed=7)
            assert rep.vectors == 1000
        per_file[Path(path).stem] = total
    assert kernels == 98
    # gaussian: 9 multiplies by constant weights (one PE each, weight folded) + 9 adds,
    # the reduction's initial value 0 (a constant PE) and the final shift (constant folded)
    assert per_file["gaussian_compute"] == 9 + 9 + 1 + 1
    assert per_file["pointwise_compute"] == 1
    # harris: one PE per IR op except the folded constants, plus 5 reduction init constants
    harris = import_coreir(example_path("harris"))
    assert per_file["harris_compute"] == sum(k.num_ops() for k in harris.values()) + 5


def test_constant_folded_into_instruction(default_design):
    c = load_collateral(default_design)
    k = import_coreir(example_path("pointwise"))["hcompute_mult_stencil"]  # x * 2
    m = cover_kernel(k, c.rules, c.pe)
    assert m.pe_count() == 1
    pe = m.pes[0]
    assert pe.rule == "coreir.mul[in1=const]"
    fields = disassemble_fields(c.pe, pe.inst)
    mode_field = next(f for f, v in pe.fields.items() if f.endswith("_mode")
                      and v == _tag(c.pe, f, "CONST"))
    const_field = mode_field.replace("_mode", "_const")
    assert fields[const_field] == 2
    assert fields["alu"] == _tag(c.pe, "alu", "MULT0")
    assert check_equivalence(m, c.pe, vectors=200).vectors == 200


def test_multi_op_rule_before_single_ops(default_design):
    """in0 <s in1 ? in0 : in1 is two IR ops (slt, mux) but one PE (pattern.select_slt)."""
    c = load_collateral(default_design)
    k = ir.Kernel("sel")
    k.declare_input("a", 2)
    a, b = k.input("a", 0), k.input("a", 1)
    lt = k.add("coreir.slt", a, b)
    k.set_output("out", k.add("coreir.mux", b, a, lt))
    m = cover_kernel(k, c.rules, c.pe)
    assert [p.rule for p in m.pes] == ["pattern.select_slt"]
    check_equivalence(m, c.pe, vectors=300)
    # with a second use of the comparison the pattern cannot absorb it: two PEs
    k.set_output("flag", lt)
    m2 = cover_kernel(k, c.rules, c.pe)
    assert sorted(p.rule for p in m2.pes) == ["coreir.mux", "coreir.slt"]
    check_equivalence(m2, c.pe, vectors=300)


def test_large_constant_shifts_and_shared_constants(default_design):
    c = load_collateral(default_design)
    k = ir.Kernel("shifts")
    k.declare_input("x", 2)
    x, y = k.input("x", 0), k.input("x", 1)
    big = k.const(20)
    k.set_output("l", k.add("coreir.lshr", x, big))          # 0
    k.set_output("a", k.add("coreir.ashr", x, big))          # ashr by 15
    k.set_output("m", k.add("coreir.mux", x, y, k.add("coreir.slt", x, k.const(5))))
    m = cover_kernel(k, c.rules, c.pe)
    rules = sorted(p.rule for p in m.pes)
    assert "coreir.const" in rules and "coreir.ashr[in1=const]" in rules
    ash = next(p for p in m.pes if p.rule == "coreir.ashr[in1=const]")
    assert 15 in ash.fields.values()
    check_equivalence(m, c.pe, vectors=500)


def test_pass_through_kernel_has_no_pe(default_design):
    c = load_collateral(default_design)
    k = import_coreir(example_path("pointwise"))["hcompute_hw_input_global_wrapper_stencil"]
    m = cover_kernel(k, c.rules, c.pe)
    assert m.pe_count() == 0
    nl = kernel_netlist(m, c.pe)
    assert nl.counts() == {"io_in": 1, "io_out": 1}
    assert len(nl.nets) == 1 and nl.nets[0].source[0].startswith("io_in")


def test_equivalence_check_catches_a_wrong_instruction(default_design):
    c = load_collateral(default_design)
    k = import_coreir(example_path("conv_layer"))["hcompute_dw_conv_stencil_1"]  # 9 adds
    m = cover_kernel(k, c.rules, c.pe)
    pe = m.pes[-1]
    from peak.collateral import assemble_fields
    bad = dict(pe.fields, alu=_tag(c.pe, "alu", "Sub"))
    pe.inst = assemble_fields(c.pe, bad)
    with pytest.raises(MappingError, match="hcompute_dw_conv_stencil_1.*differ"):
        check_equivalence(m, c.pe, vectors=50)


def test_pe_without_multiplier_fails_naming_op_and_kernel(nomul_design):
    c = load_collateral(nomul_design)
    assert c.rules.status["coreir.mul"] == "none"
    add_only = import_coreir(example_path("conv_layer"))["hcompute_dw_conv_stencil_1"]
    m = cover_kernel(add_only, c.rules, c.pe)
    check_equivalence(m, c.pe, vectors=200)
    k = import_coreir(example_path("gaussian"))["hcompute_blur_unnormalized_stencil_1"]
    with pytest.raises(MappingError) as e:
        cover_kernel(k, c.rules, c.pe)
    msg = str(e.value)
    assert "coreir.mul" in msg and "hcompute_blur_unnormalized_stencil_1" in msg
    assert "mapper_pe_nomul" in msg


@pytest.mark.parametrize("app, pes", [("brighten_blur", 5), ("gaussian", 18)])
def test_map_compute_replaces_placeholders(default_design, app, pes):
    c = load_collateral(default_design)
    p = lower_app(app, 64, 64)
    mm = map_memory(p, DUAL_PORT_SRAM)
    cm = map_compute(mm.netlist, c.rules, c.pe)
    nl = cm.netlist
    counts = nl.counts()
    assert "kernel" not in counts
    assert counts["pe"] == pes == sum(cm.pe_counts().values())
    assert counts["mem"] == mm.counts()["mem"] and counts.get("reg", 0) == mm.counts()["reg"]
    nl.validate()
    # every net that read a kernel port now reaches PE inputs; the output IO is driven by a PE
    out_io = next(n for n in nl.instances if n.startswith("io_out"))
    drv = next(n for n in nl.nets if (out_io, "in") in n.sinks)
    assert nl.instances[drv.source[0]].kind == "pe"
    for n in nl.nets:
        for s in n.sinks:
            assert nl.instances[s[0]].kind != "kernel"
    assert nl.to_packed().count("\np") >= pes
    for m in cm.kernels.values():
        check_equivalence(m, c.pe, vectors=200)
