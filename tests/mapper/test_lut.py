"""Lookup tables in the compiler: the IR op ``memory.rom2`` (semantics, kernel checks,
rewrites keep the table), the DSL ``LUT`` (numpy == Halide), the CoreIR import of
``memory.rom2``, the compute cut (a MEM instance in lookup-table mode between the PEs, the
index clamp where the mapper cannot bound the index) and the camera pipeline's gamma curve."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from cgra.errors import MappingError
from mapper import interp, ir
from mapper.apps import app_images, build_app, lower_app
from mapper.apps.camera_pipeline import GAMMA
from mapper.collateral import load_collateral
from mapper.mapping.compute import (LUT_LATENCY, check_equivalence, check_luts, cover_kernel,
                            index_bound, kernel_netlist, map_compute, split_luts)
from mapper.frontend import dsl
from mapper.frontend.coreir import import_coreir_dict
from mapper.frontend.dsl import LUT, Func, Input, Int16, Pipeline, UInt16, Var, cast
from mapper.mapping.memory import map_memory

pytest_plugins = ["mapper_support"]

SQUARES = tuple((i * i) >> 4 for i in range(64))      # 0 .. 248, 64 entries


def _lut_kernel(table=SQUARES, index_op: str | None = None) -> ir.Kernel:
    k = ir.Kernel("k")
    k.declare_input("a", 2)
    i = k.add("coreir.add", k.input("a", 0), k.input("a", 1))
    if index_op == "and":
        i = k.add("coreir.and", i, k.const(len(table) - 1))
    r = k.add(ir.LUT_OP, i, table=table, name="sq")
    k.set_output("out", k.add("coreir.add", r, k.const(1)))
    return k


# ---------------------------------------------------------------------------- the IR op
def test_lookup_reads_the_entry_and_the_last_one_past_the_end():
    assert ir.eval_op(ir.LUT_OP, [5], 16, table=SQUARES) == 25 >> 4
    assert ir.eval_op(ir.LUT_OP, [63], 16, table=SQUARES) == SQUARES[63] == 248
    assert ir.eval_op(ir.LUT_OP, [64], 16, table=SQUARES) == 248
    assert ir.eval_op(ir.LUT_OP, [0xFFFF], 16, table=SQUARES) == 248
    k = _lut_kernel()
    assert k.evaluate({"a": [3, 4]}) == {"out": SQUARES[7] + 1}
    assert k.evaluate({"a": [60, 60]}) == {"out": 249}
    with pytest.raises(MappingError, match="memory.rom2 needs its table"):
        ir.eval_op(ir.LUT_OP, [1], 16)


@pytest.mark.parametrize("table, op, match", [
    (None, ir.LUT_OP, "memory.rom2 needs a table"),
    ((1, 2), "coreir.not", "only memory.rom2 takes a table, not coreir.not"),
    ((), ir.LUT_OP, "has 0 entries; give 1..65536"),
    ((1, 1 << 16), ir.LUT_OP, "entry 65536 does not fit 16 bits"),
    ((-1,), ir.LUT_OP, "entry -1 does not fit 16 bits"),
])
def test_bad_tables_are_refused(table, op, match):
    k = ir.Kernel("k")
    k.declare_input("a", 1)
    with pytest.raises(MappingError, match=match):
        k.add(op, k.input("a"), table=table)


def test_rewrites_keep_tables_and_do_not_merge_different_ones():
    k = ir.Kernel("k")
    k.declare_input("a", 1)
    a = k.input("a")
    t1, t2 = k.add(ir.LUT_OP, a, table=(1, 2, 3)), k.add(ir.LUT_OP, a, table=(7, 8, 9))
    t3 = k.add(ir.LUT_OP, a, table=(1, 2, 3))
    k.set_output("out", k.add("coreir.add", k.add("coreir.add", t1, t2), t3))
    s = ir.canonicalize(k)
    luts = [n for n in s.live_nodes() if n.op == ir.LUT_OP]
    assert sorted(n.table for n in luts) == [(1, 2, 3), (7, 8, 9)]      # t1, t3 merged
    for v in (0, 1, 2, 9):
        assert s.evaluate({"a": [v]}) == k.evaluate({"a": [v]})
    back = ir.Kernel.from_dict(json.loads(json.dumps(s.to_dict())))
    assert [n.table for n in back.nodes] == [n.table for n in s.nodes]
    # a constant index folds to the entry
    c = ir.Kernel("c")
    c.set_output("out", c.add(ir.LUT_OP, c.const(1), table=(4, 5, 6)))
    folded = ir.simplify(c)
    assert [(n.op, n.value) for n in folded.live_nodes()] == [("coreir.const", 5)]


def test_numpy_interpreter_agrees_with_eval_op():
    k = _lut_kernel()
    rng = np.random.default_rng(0)
    a0, a1 = rng.integers(0, 1 << 16, 500), rng.integers(0, 60, 500)
    got = interp.eval_kernel(k, {"a": [a0, a1]})["out"]
    want = [k.evaluate({"a": [int(x), int(y)]})["out"] for x, y in zip(a0, a1, strict=True)]
    assert got.tolist() == want


# ---------------------------------------------------------------------------- DSL
def test_dsl_lookup_is_halide_bit_exact_with_signed_and_out_of_range_indices():
    from mapper.sim.halide import run_halide

    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (24, 12))
    lut = LUT("signed", [(-7 * v) % 200 - 100 for v in range(50)], Int16)
    f = Func("f")
    # an Int16 index from -60 to 195: below 0 reads entry 0, past 49 reads entry 49
    f[x, y] = lut[cast(Int16, inp[x, y]) - 60] + lut[3]
    p = Pipeline(f, "lut_signed")
    img = np.random.default_rng(1).integers(0, 256, (12, 24)).astype(np.uint16)
    got = interp.run_pipeline(p.lower(), {"input": img})
    want = run_halide(p, {"input": img})
    assert np.array_equal(got.astype(np.int64), want.astype(np.int64))
    idx = np.clip(img.astype(np.int64) - 60, 0, 49)
    vals = np.array(lut.values, dtype=np.int64)
    assert np.array_equal(got.astype(np.int16).astype(np.int64), vals[idx] + vals[3])
    k = p.lower().stages[0].kernel
    assert [n.op for n in k.live_nodes()].count("commonlib.smax") == 1   # the Int16 floor


@pytest.mark.parametrize("args, match", [
    (("t", []), "LUT t: needs 1..65536 entries, got 0"),
    (("t", [70000]), "LUT t: constant 70000 does not fit UInt16"),
    (("t", [1], dsl.Bool), "LUT t: type must be"),
])
def test_dsl_lut_errors(args, match):
    with pytest.raises(MappingError, match=match):
        LUT(*args)


def test_dsl_lut_index_must_be_an_integer_expression():
    x, y = Var("x"), Var("y")
    inp = Input("i", UInt16, (8, 8))
    lut = LUT("g", range(4))
    with pytest.raises(MappingError, match="LUT g: the index must be a UInt16 or Int16 "
                                           "expression, got Bool"):
        lut[inp[x, y] > 3]
    with pytest.raises(MappingError, match="LUT g: takes one index expression, got 2"):
        lut[x, y]
    assert lut[9].value == 3 and lut[-2].value == 0


# ---------------------------------------------------------------------------- CoreIR
def _rom_doc(init=None, ren="one", depth=8) -> dict:
    init = list(range(10, 10 + 8 * 3, 3)) if init is None else init
    inst = {"add": {"genref": "coreir.add", "genargs": {"width": ["Int", 16]}},
            "rom": {"genref": "memory.rom2", "genargs": {"width": ["Int", 16],
                                                         "depth": ["Int", depth]},
                    "modargs": {"init": ["Json", {"init": init}]}},
            "one": {"modref": "corebit.const", "modargs": {"value": ["Bool", True]}},
            "zero": {"modref": "corebit.const", "modargs": {"value": ["Bool", False]}}}
    conns = [["self.in0", "rom.raddr"], ["rom.rdata", "add.in0"], ["self.in1", "add.in1"],
             ["add.out", "self.out"]]
    if ren:
        conns.append([f"{ren}.out", "rom.ren"])
    mod = {"type": ["Record", [["in0", ["Array", 16, "BitIn"]], ["in1", ["Array", 16, "BitIn"]],
                               ["out", ["Array", 16, "Bit"]]]],
           "instances": inst, "connections": conns}
    return {"namespaces": {"global": {"modules": {"hcompute_rom": mod}}}}


def test_coreir_rom2_imports_as_a_lookup():
    k = import_coreir_dict(_rom_doc(), "r.json")["hcompute_rom"]
    luts = [n for n in k.live_nodes() if n.op == ir.LUT_OP]
    assert len(luts) == 1 and luts[0].table == (10, 13, 16, 19, 22, 25, 28, 31)
    assert k.evaluate({"in0": [2], "in1": [100]}) == {"out": 116}
    assert k.evaluate({"in0": [40], "in1": [0]}) == {"out": 31}
    # a plain list and no ren connection import the same
    doc = _rom_doc(ren=None)
    doc["namespaces"]["global"]["modules"]["hcompute_rom"]["instances"]["rom"]["modargs"] = {
        "init": ["Json", [10, 13, 16, 19, 22, 25, 28, 31]]}
    assert import_coreir_dict(doc, "r.json")["hcompute_rom"].to_dict() == k.to_dict()


@pytest.mark.parametrize("doc, match", [
    (_rom_doc(ren="zero"), "instance rom \\(memory.rom2\\): ren is driven by zero.out; .* tie "
                           "ren to a corebit.const 1"),
    (_rom_doc(depth=9), "memory.rom2 genargs.depth is 9 but modargs.init has 8 entries"),
    (_rom_doc(init=[1, 2, 70000, 4, 5, 6, 7, 8]), "memory.rom2 entry 70000 does not fit 16 "
                                                  "bits"),
    (_rom_doc(init=[]), "memory.rom2 field modargs.init is \\[\\]"),
])
def test_coreir_rom2_errors(doc, match):
    with pytest.raises(MappingError, match=match) as e:
        import_coreir_dict(doc, "r.json")
    assert str(e.value).startswith("r.json: ") and "\n" not in str(e.value)


def test_coreir_rom2_port_names_in_the_error():
    doc = _rom_doc()
    doc["namespaces"]["global"]["modules"]["hcompute_rom"]["connections"].append(
        ["self.in1", "rom.waddr"])
    with pytest.raises(MappingError, match="memory.rom2 has ports raddr, ren, clk, rdata"):
        import_coreir_dict(doc, "r.json")


# ---------------------------------------------------------------------------- compute cut
def test_index_bound_and_the_clamp_the_cut_inserts():
    k = _lut_kernel()
    cut, cuts = split_luts(k)
    assert [(c[0], c[3]) for c in cuts] == [("__lut0", True)]     # a + b: unbounded
    assert cut.nodes[cut.outputs["__lut0_raddr"]].op == "commonlib.umin"
    cut2, cuts2 = split_luts(_lut_kernel(index_op="and"))           # & 63: in range
    assert [c[3] for c in cuts2] == [False]
    assert cut2.nodes[cut2.outputs["__lut0_raddr"]].op == "coreir.and"
    # bounds of the index shapes
    b = ir.Kernel("b")
    b.declare_input("v", 1)
    v = b.input("v")
    clampd = b.add("commonlib.smin", b.add("commonlib.smax", v, b.const(0)), b.const(255))
    assert index_bound(b, clampd) == 255
    assert index_bound(b, b.add("coreir.lshr", v, b.const(8))) == 255
    assert index_bound(b, b.add("commonlib.umin", v, b.const(9))) == 9
    assert index_bound(b, b.add("commonlib.smin", v, b.const(9))) == 0xFFFF   # negative
    neg = b.add("commonlib.smin", b.add("commonlib.smax", v, b.const(0xFFFE)), b.const(5))
    assert index_bound(b, neg) == 0xFFFF                                   # lo = -2


def test_lookup_maps_to_a_mem_between_pes_and_simulates_equal(default_design):
    c = load_collateral(default_design)
    for k, clamped in ((_lut_kernel(), True), (_lut_kernel(index_op="and"), False)):
        m = cover_kernel(k, c.rules, c.pe)
        assert [(lt.table, lt.clamped) for lt in m.luts] == [(SQUARES, clamped)]
        assert m.luts[0].raddr[0] == "pe"
        ops = sorted(op for pe in m.pes for op in [m.prepared.nodes[i].op for i in pe.nodes])
        assert ("commonlib.umin" in ops) == clamped
        check_equivalence(m, c.pe, vectors=400)
        nl = kernel_netlist(m, c.pe, preset="dualport_2048x16")
        lut = nl.instances[m.luts[0].name]
        assert (lut.kind, lut.tag) == ("mem", "m")
        assert lut.config["lut"] == list(SQUARES) and lut.config["latency"] == LUT_LATENCY
        assert lut.config["preset"] == "dualport_2048x16"
        srcs = {n.source: n.sinks for n in nl.nets}
        assert len(srcs[(m.luts[0].name, "out0")]) == 1
        assert any((m.luts[0].name, "in0") in s for s in srcs.values())


def test_check_luts_names_the_missing_mode_and_the_capacity(default_design):
    c = load_collateral(default_design)
    m = cover_kernel(_lut_kernel(), c.rules, c.pe)
    mem = c.mem
    check_luts(m, mem)
    assert mem.supports("lookup_table") and mem.lookup_table.words == 2048
    mem = dataclasses.replace(mem, capacity_words=32)
    with pytest.raises(MappingError, match="lookup k_lut0 has 64 entries; the MEM tile holds "
                                           "32 words"):
        check_luts(m, mem)
    mem = dataclasses.replace(mem, supported_modes=("delay_line",))
    with pytest.raises(MappingError, match="needs a MEM tile with lookup-table mode; preset "
                                           "'dualport_2048x16' has none"):
        check_luts(m, mem)
    with pytest.raises(MappingError, match="the design has no MEM tiles"):
        check_luts(m, None)


# ---------------------------------------------------------------------------- camera pipeline
def test_gamma_curve_known_values():
    assert len(GAMMA) == 256 and GAMMA[0] == 0 and GAMMA[255] == 255
    assert GAMMA[1] == 21 and GAMMA[64] == 136 and GAMMA[128] == 186
    assert all(a <= b for a, b in zip(GAMMA, GAMMA[1:], strict=False))


def test_camera_pipeline_numpy_equals_halide_on_astronaut():
    from mapper.apps import load_app_image
    from mapper.sim.halide import run_halide_outputs

    p = build_app("camera_pipeline", 48, 36)
    ims = app_images(p, load_app_image(p, "astronaut", (36, 48)))
    got = interp.run_outputs(p.lower(), ims)
    want = run_halide_outputs(p, ims)
    assert list(got) == ["red", "green", "blue"]
    for name in got:
        assert got[name].shape == (16, 22)
        assert np.array_equal(got[name].astype(np.int64), want[name].astype(np.int64))
        assert set(np.unique(got[name])) <= set(GAMMA)
        assert len(np.unique(got[name])) > 20
    # hot-pixel suppression: a single bright pixel in a flat mosaic disappears
    flat = np.full((36, 48), 40, dtype=np.uint16)
    flat[10, 10] = 255
    out = interp.run_outputs(p.lower(), {"mosaic": flat})
    assert all(len(np.unique(a)) == 1 for a in out.values())


def test_camera_pipeline_maps_with_three_lookups(default_design):
    c = load_collateral(default_design)
    pipe = lower_app("camera_pipeline", 48, 36)
    mm = map_memory(pipe, c.mem)
    cm = map_compute(mm.netlist, c.rules, c.pe, mem=c.mem)
    luts = {n: i for n, i in cm.netlist.instances.items() if "lut" in i.config}
    assert len(luts) == 3
    assert all(i.config["lut"] == list(GAMMA) and not i.config["clamped"]
               for i in luts.values())
    for m in cm.kernels.values():
        check_equivalence(m, c.pe, vectors=200)



def test_coreir_kernel_with_rom2_maps_through_the_flow(default_design, tmp_path):
    """Acceptance (issue 14): a CoreIR kernel with ``memory.rom2`` maps: the file goes through
    ``map_app`` (import, cover, equivalence check on random vectors, netlist) and the lookup is
    a MEM instance of the design's preset in lookup-table mode."""
    from mapper.params import AppParams
    from mapper.flow import map_app

    path = tmp_path / "rom_compute.json"
    path.write_text(json.dumps(_rom_doc()))
    c = load_collateral(default_design)
    am = map_app(AppParams(str(path), vectors=300), c)
    mems = {n: i for n, i in am.netlist.instances.items() if i.tag == "m"}
    assert list(mems) == ["hcompute_rom_lut0"]
    cfg = mems["hcompute_rom_lut0"].config
    assert cfg["lut"] == [10, 13, 16, 19, 22, 25, 28, 31] and cfg["clamped"]
    assert cfg["preset"] == c.mem.preset == "dualport_2048x16"
    assert am.kernels["hcompute_rom"].luts[0].raddr[0] == "pe"      # the umin clamp
