"""CoreIR import (issue 14 item 7): only the design's namespace is read, every unsupported op of
a file is listed in one MappingError, ``coreir.udiv`` by a constant becomes an exact
multiply-shift, ``commonlib.opn`` a balanced tree of its binary op. The CoreIR documents are
built here (small, hand-written, in the layout of mapper/data/coreir/*.json)."""
from __future__ import annotations

import copy
import json
import random

import numpy as np
import pytest

from cgra.errors import MappingError
from mapper import ir
from mapper.frontend.coreir import (
    EXPANDED_OPS,
    example_path,
    import_coreir,
    import_coreir_dict,
    import_module,
    udiv_by_constant,
)
from mapper.interp import eval_kernel


def _word(w: int, direction: str = "BitIn") -> list:
    return ["Array", w, direction]


def _const(value: int, w: int = 16) -> dict:
    return {"genref": "coreir.const", "genargs": {"width": ["Int", w]},
            "modargs": {"value": [["BitVector", w], f"{w}'h{value:x}"]}}


def _op(op: str, w: int = 16, **genargs) -> dict:
    return {"genref": op, "genargs": {"width": ["Int", w], **genargs}}


def _module(n_in: int, instances: dict, connections: list, w: int = 16) -> dict:
    """A kernel with input window ``in`` of ``n_in`` words and one output word ``out``."""
    return {"type": ["Record", [["out", _word(w, "Bit")],
                                ["in", ["Array", n_in, _word(w)]]]],
            "instances": instances, "connections": connections}


def _doc(modules: dict, **namespaces) -> dict:
    return {"namespaces": {"global": {"modules": modules}, **namespaces}}


def _div_module(d: int, w: int = 16) -> dict:
    """out = in[0] / d (coreir.udiv, in1 driven by a coreir.const)."""
    return _module(1, {"c_d": _const(d, w), "div": _op("coreir.udiv", w)},
                   [["self.in.0", "div.in0"], ["c_d.out", "div.in1"], ["self.out", "div.out"]],
                   w)


def _div_kernel(d: int, w: int = 16) -> ir.Kernel:
    return import_coreir_dict(_doc({"hcompute_div": _div_module(d, w)}), "div.json")[
        "hcompute_div"]


def _all_quotients(k: ir.Kernel, w: int) -> np.ndarray:
    n = np.arange(1 << w, dtype=np.int64)
    return np.broadcast_to(eval_kernel(k, {"in": [n]})["out"], n.shape)


# ------------------------------------------------------------------ item 1: namespaces
#: what a CoreIR file saved with its libraries holds besides the design: generator and module
#: definitions (including a module named like a kernel, with ops the importer does not know)
LIBRARIES = {
    "coreir": {"generators": {"add": {"typegen": "coreir.binary",
                                      "genparams": {"width": "Int"}}}},
    "commonlib": {
        "generators": {"opn": {"typegen": "commonlib.opN_type",
                               "genparams": {"width": "Int", "N": "Int", "operator": "String"}}},
        "modules": {"hcompute_lib_helper": _module(1, {"r": {"genref": "memory.rom2"}},
                                                   [["self.out", "r.rdata"]]),
                    "muxn_U1": {"type": "not a record"}}},
    "memory": {"generators": {"rom2": {"typegen": "memory.rom2_type"}}},
    "float_DW": {"generators": {"fp_add": {}}},
    "mantle": [1, 2, 3],                        # not even an object: still never read
}


def test_library_namespaces_are_ignored_and_the_kernels_import_unchanged():
    plain = json.loads(example_path("gaussian").read_text())
    with_libs = copy.deepcopy(plain)
    with_libs["namespaces"].update(copy.deepcopy(LIBRARIES))
    a = import_coreir_dict(plain, "g.json")
    b = import_coreir_dict(with_libs, "g.json")
    assert sorted(b) == sorted(a) == sorted(plain["namespaces"]["global"]["modules"])
    assert "hcompute_lib_helper" not in b
    assert {n: k.to_dict() for n, k in b.items()} == {n: k.to_dict() for n, k in a.items()}


def test_top_names_the_design_namespace_and_global_is_then_a_stranger():
    doc = {"top": "mydesign.DesignTop", "namespaces": {
        "mydesign": {"modules": {"hcompute_div": _div_module(10)}},
        "global": {"modules": {"hcompute_other": {"instances": 7}}},   # never read
        **copy.deepcopy(LIBRARIES)}}
    kernels = import_coreir_dict(doc, "t.json")
    assert list(kernels) == ["hcompute_div"]
    assert kernels["hcompute_div"].evaluate({"in": [12345]}) == {"out": 1234}


@pytest.mark.parametrize("edit, parts", [
    (lambda d: d.__setitem__("top", "commonlib.opn"),
     ["t.json: field top \"commonlib.opn\" names library namespace commonlib",
      "\"global.DesignTop\""]),
    (lambda d: d.__setitem__("top", 3), ["t.json: field top is 3; write \"<namespace>.<module>\""]),
    (lambda d: d.__setitem__("top", "design.Top"),
     ["no namespace 'design' (named by field top \"design.Top\") in field namespaces (found: "
      "global, coreir, commonlib, memory, float_DW, mantle); commonlib, coreir, float_DW, "
      "mantle, memory are libraries; the kernels must be in namespaces.design.modules"]),
    (lambda d: d["namespaces"].pop("global"),
     ["no namespace 'global' in field namespaces (found: coreir, commonlib, memory, float_DW, "
      "mantle); commonlib, coreir, float_DW, mantle, memory are libraries"]),
])
def test_design_namespace_errors(edit, parts):
    doc = _doc({"hcompute_div": _div_module(10)}, **copy.deepcopy(LIBRARIES))
    edit(doc)
    with pytest.raises(MappingError) as e:
        import_coreir_dict(doc, "t.json")
    msg = str(e.value)
    assert msg.startswith("t.json: ") and "\n" not in msg
    for part in parts:
        assert part in msg


# ------------------------------------------------------------------ item 2: one error, all ops
def _rom(i: int) -> tuple[dict, list]:
    return {f"rom{i}": {"genref": "memory.ram2", "genargs": {"width": ["Int", 16],
                                                             "depth": ["Int", 256]}}}, []


def _unsupported_doc() -> dict:
    """Two kernels: hcompute_a divides by an input twice, writes a RAM and uses coreir.sdiv;
    hcompute_b writes two RAMs and reduces with an opn of a comparison; also supported ops
    (add, udiv by a constant) that must not be listed."""
    a = _module(2, {
        "add": _op("coreir.add"), "q1": _op("coreir.udiv"), "q2": _op("coreir.udiv"),
        "lut": {"genref": "memory.ram2", "genargs": {"width": ["Int", 16]}},
        "sdiv": _op("coreir.sdiv"), "c3": _const(3), "qc": _op("coreir.udiv")}, [
        ["self.in.0", "q1.in0"], ["self.in.1", "q1.in1"],
        ["q1.out", "q2.in0"], ["add.out", "q2.in1"],
        ["self.in.0", "qc.in0"], ["c3.out", "qc.in1"], ["self.out", "q2.out"]])
    b = _module(1, {
        "rom_x": {"modref": "memory.ram2"}, "rom_y": {"modref": "memory.ram2"},
        "eqn": _op("commonlib.opn", N=["Int", 3], operator=["String", "coreir.eq"])},
        [["self.out", "rom_x.rdata"]])
    return _doc({"hcompute_a": a, "hcompute_b": b, "DesignTop": {"instances": {
        "unknown_in_top": {"genref": "cgralib.Mem"}}}}, **copy.deepcopy(LIBRARIES))


UNSUPPORTED_MESSAGE = (
    "4 unsupported ops in the kernels: "
    "coreir.udiv with a non-constant divisor (2 instances; first: module hcompute_a instance q1), "
    "memory.ram2 (3 instances; first: module hcompute_a instance lut), "
    "coreir.sdiv (1 instance; first: module hcompute_a instance sdiv), "
    "commonlib.opn of operator coreir.eq (1 instance; first: module hcompute_b instance eqn); "
    "the importer supports the ops of mapper.ir.OPS (memory.rom2 among them), coreir.udiv by "
    "a constant and "
    "commonlib.opn of a binary op: add each op to mapper.ir.OPS with its semantics and a "
    "rewrite rule, or change the source program so its kernels do not use it")


def test_every_unsupported_op_of_the_file_in_one_line(tmp_path):
    path = tmp_path / "app_compute.json"
    path.write_text(json.dumps(_unsupported_doc()))
    with pytest.raises(MappingError) as e:
        import_coreir(path)
    assert str(e.value) == f"{path}: {UNSUPPORTED_MESSAGE}"
    # the supported ops of the same kernels are not listed (coreir.udiv by a constant is qc)
    assert " qc" not in str(e.value) and "coreir.add" not in str(e.value)


def test_unsupported_ops_come_before_other_errors_of_any_kernel():
    doc = _unsupported_doc()
    mods = doc["namespaces"]["global"]["modules"]
    mods["hcompute_0_broken"] = {"type": "no record"}      # first kernel, malformed
    mods["hcompute_a"]["connections"].append(["nobody.out", "add.in0"])
    with pytest.raises(MappingError) as e:
        import_coreir_dict(doc, "x.json")
    assert str(e.value) == f"x.json: {UNSUPPORTED_MESSAGE}"


def test_import_module_alone_lists_its_unsupported_ops():
    mod = _unsupported_doc()["namespaces"]["global"]["modules"]["hcompute_b"]
    with pytest.raises(MappingError) as e:
        import_module("hcompute_b", mod, "b.json")
    assert str(e.value).startswith(
        "b.json: 2 unsupported ops in the kernels: memory.ram2 (2 instances; first: module "
        "hcompute_b instance rom_x), commonlib.opn of operator coreir.eq (1 instance; first: "
        "module hcompute_b instance eqn); ")


def test_missing_op_name_is_a_structural_error_not_an_unsupported_op():
    doc = _doc({"hcompute_div": _div_module(3)})
    doc["namespaces"]["global"]["modules"]["hcompute_div"]["instances"]["div"]["genref"] = 5
    with pytest.raises(MappingError, match=r"^x\.json: module hcompute_div: instance div names "
                                           r"no op: field genref/modref is 5; write"):
        import_coreir_dict(doc, "x.json")


# ------------------------------------------------------------------ item 3: udiv by a constant
_RANDOM_DIVISORS = sorted(random.Random(20261125).sample(range(301, 1 << 16), 200))


@pytest.mark.parametrize("d", list(range(1, 301)) + _RANDOM_DIVISORS)
def test_udiv_by_constant_is_exact_for_every_16bit_dividend(d):
    k = _div_kernel(d)
    n = np.arange(1 << 16, dtype=np.int64)
    assert np.array_equal(_all_quotients(k, 16), n // d)
    # only existing IR ops, at most 18 of them, no node wider than 16 bits
    assert set(k.op_counts()) <= set(ir.OPS) and k.num_ops() <= 18
    assert all(nd.width in (1, 16) for nd in k.nodes)


def test_udiv_scalar_reference_semantics_agree():
    """:meth:`Kernel.evaluate` (``ir.eval_op``) on the edges of every divisor class."""
    for d in (3, 7, 10, 641, 1000, 32767, 32769, 65535):
        k = _div_kernel(d)
        edges = {0, 1, d - 1, d, d + 1, 2 * d - 1, 65535 - 65535 % d - 1, 65535 - 65535 % d,
                 65534, 65535}
        for n in sorted(e for e in edges if e < 1 << 16):
            assert k.evaluate({"in": [n]}) == {"out": n // d}, (d, n)


@pytest.mark.parametrize("d, counts", [
    (1, {}),
    (8, {"coreir.lshr": 1}),
    (32768, {"coreir.lshr": 1}),
    (40000, {"coreir.uge": 1, "coreir.mux": 1}),
    (32769, {"coreir.uge": 1, "coreir.mux": 1}),
    # 3: m = 43691 (16 bits), q = mulhu(n, m) >> 1: 4 half-word products, no correction
    (3, {"coreir.and": 2, "coreir.lshr": 5, "coreir.mul": 4, "coreir.add": 4}),
    # 7: the 17-bit magic: mulhu + the t + ((n - t) >> 1) correction (18 ops, the most)
    (7, {"coreir.and": 2, "coreir.lshr": 6, "coreir.mul": 4, "coreir.add": 5, "coreir.sub": 1}),
    # 10 = 5 * 2: the dividend is pre-shifted by one, then mulhu and a final shift
    (10, {"coreir.and": 2, "coreir.lshr": 6, "coreir.mul": 4, "coreir.add": 4}),
])
def test_udiv_decomposition_shape(d, counts):
    k = _div_kernel(d)
    assert dict(k.op_counts()) == counts
    if d == 1:
        assert k.nodes[k.outputs["out"]].op == ir.INPUT       # the identity: no op at all
    else:
        assert k.nodes[k.outputs["out"]].name == "div"


@pytest.mark.parametrize("w", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
def test_udiv_every_divisor_every_dividend_small_widths(w):
    n = np.arange(1 << w, dtype=np.int64)
    for d in range(1, 1 << w):
        assert np.array_equal(_all_quotients(_div_kernel(d, w), w), n // d), (w, d)


@pytest.mark.parametrize("w", [31, 32, 33])
def test_udiv_wide_words(w):
    rng = random.Random(w)
    for d in [3, 7, 10, 12345, 641, 6700417, (1 << (w - 1)) - 1, (1 << (w - 1)) + 1, 1 << 20,
              rng.randrange(2, 1 << w), rng.randrange(2, 1 << 16)]:
        k = _div_kernel(d, w)
        top = (1 << w) - 1
        ns = [0, 1, d - 1, d, top, top - 1, top - top % d, top - top % d - 1] + [
            rng.randrange(1 << w) for _ in range(200)]
        for n in ns:
            assert k.evaluate({"in": [n]}) == {"out": n // d}, (d, n)


def test_udiv_odd_width_splits_off_the_low_bit():
    """15-bit words (odd: no even half-word split): every dividend, a sample of divisors."""
    n = np.arange(1 << 15, dtype=np.int64)
    for d in [1, 2, 3, 5, 7, 9, 11, 100, 255, 1000, 1024, 4095, 16383, 16384, 16385, 32767] + \
            random.Random(15).sample(range(3, 1 << 14), 40):
        assert np.array_equal(_all_quotients(_div_kernel(d, 15), 15), n // d), d
    k = _div_kernel(7, 15)
    assert dict(k.op_counts()) == {"coreir.lshr": 6, "coreir.and": 3, "coreir.mul": 5,
                                   "coreir.add": 8, "coreir.sub": 1, "coreir.uge": 1,
                                   "coreir.mux": 1}


def test_udiv_by_zero_is_an_error_naming_the_instance(tmp_path):
    path = tmp_path / "zero_compute.json"
    path.write_text(json.dumps(_doc({"hcompute_div": _div_module(0)})))
    with pytest.raises(MappingError) as e:
        import_coreir(path)
    assert str(e.value) == (
        f"{path}: module hcompute_div: instance div (coreir.udiv) divides by the constant 0; "
        f"CoreIR leaves division by 0 undefined: use a divisor 1..65535 or remove the "
        f"division (divisor: c_d.out)")


def test_udiv_by_a_constant_of_another_width_is_a_width_error():
    mod = _div_module(3)
    mod["instances"]["c_d"] = _const(3, 8)
    with pytest.raises(MappingError, match="instance div \\(coreir.udiv\\) port in1 takes 16 "
                                           "bit\\(s\\) but is driven by c_d.out with 8"):
        import_coreir_dict(_doc({"hcompute_div": mod}), "x.json")


def test_udiv_by_an_input_is_listed_as_unsupported():
    mod = _div_module(3)
    mod["connections"][1] = ["self.in.0", "div.in1"]
    with pytest.raises(MappingError) as e:
        import_coreir_dict(_doc({"hcompute_div": mod}), "x.json")
    assert str(e.value).startswith("x.json: 1 unsupported op in the kernels: coreir.udiv with a "
                                   "non-constant divisor (1 instance; first: module "
                                   "hcompute_div instance div); ")


def test_udiv_by_constant_builder_refuses_zero_directly():
    k = ir.Kernel("k")
    k.declare_input("x", 1)
    with pytest.raises(MappingError, match="instance q \\(coreir.udiv\\) divides by the "
                                           "constant 0"):
        udiv_by_constant(k, k.input("x"), 0, 16, "q")
    assert EXPANDED_OPS == {"coreir.udiv", "commonlib.opn", "float.div", "float.exp"}


def test_udiv_feeds_other_ops_in_a_real_kernel():
    """gaussian's normalisation written as CoreIR emits it: (sum + 8) / 16 and / 10."""
    mod = _module(2, {"add": _op("coreir.add"), "c8": _const(8), "c16": _const(16),
                      "c10": _const(10), "q16": _op("coreir.udiv"), "q10": _op("coreir.udiv"),
                      "sum": _op("coreir.add")}, [
        ["self.in.0", "add.in0"], ["self.in.1", "add.in1"],
        ["add.out", "sum.in0"], ["c8.out", "sum.in1"],
        ["sum.out", "q16.in0"], ["c16.out", "q16.in1"],
        ["q16.out", "q10.in0"], ["c10.out", "q10.in1"], ["self.out", "q10.out"]])
    k = import_coreir_dict(_doc({"hcompute_g": mod}), "g.json")["hcompute_g"]
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 1 << 16, 5000), rng.integers(0, 1 << 16, 5000)
    want = (((a + b) & 0xFFFF) + 8) % (1 << 16) // 16 // 10
    assert np.array_equal(eval_kernel(k, {"in": [a, b]})["out"], want)
    assert k.evaluate({"in": [1000, 599]}) == {"out": (1599 + 8) // 16 // 10}   # = 10


# ------------------------------------------------------------------ item 4: commonlib.opn
def _opn_module(n: int, operator: str, w: int = 16) -> dict:
    return _module(n, {"red": _op("commonlib.opn", w, N=["Int", n],
                                  operator=["String", operator])},
                   [[f"self.in.{i}", f"red.in.{i}"] for i in range(n)] + [
                       ["self.out", "red.out"]], w)


def _opn_kernel(n: int, operator: str) -> ir.Kernel:
    return import_coreir_dict(_doc({"hcompute_r": _opn_module(n, operator)}), "r.json")[
        "hcompute_r"]


def _depth(k: ir.Kernel) -> int:
    depth: dict[int, int] = {}
    for nd in k.nodes:
        depth[nd.id] = 0 if not nd.args else 1 + max(depth[a] for a in nd.args)
    return depth[k.outputs["out"]]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 9, 16, 25])
def test_opn_add_is_a_balanced_tree_summing_every_operand(n):
    k = _opn_kernel(n, "coreir.add")
    assert dict(k.op_counts()) == ({"coreir.add": n - 1} if n > 1 else {})
    assert _depth(k) == (n - 1).bit_length()            # ceil(log2 n)
    rng = np.random.default_rng(n)
    xs = [rng.integers(0, 1 << 16, 1000) for _ in range(n)]
    assert np.array_equal(np.broadcast_to(eval_kernel(k, {"in": xs})["out"], (1000,)),
                          sum(xs) % (1 << 16))
    assert k.evaluate({"in": list(range(1, n + 1))}) == {"out": n * (n + 1) // 2}


def test_opn_sub_associates_as_coreir_does():
    """CoreIR's opN puts the largest power of two below N on the left: for 5 operands
    ((a0 - a1) - (a2 - a3)) - a4."""
    k = _opn_kernel(5, "coreir.sub")
    assert k.evaluate({"in": [100, 30, 20, 5, 1]}) == {"out": ((100 - 30) - (20 - 5)) - 1}  # 54
    assert k.evaluate({"in": [0, 1, 0, 0, 0]}) == {"out": 0xFFFF}
    k3 = _opn_kernel(3, "coreir.sub")                   # (a0 - a1) - a2
    assert k3.evaluate({"in": [10, 3, 2]}) == {"out": 5}


def test_opn_smax_reads_signed_words():
    k = _opn_kernel(4, "commonlib.smax")
    assert k.evaluate({"in": [0xFFFF, 0x8000, 3, 0x7FFF]}) == {"out": 0x7FFF}
    assert k.evaluate({"in": [0xFFFF, 0x8000, 0xFFFE, 0x8001]}) == {"out": 0xFFFF}


def test_opn_errors():
    mod = _opn_module(4, "coreir.add")
    mod["connections"][3] = ["self.in.3", "red.in.9"]
    with pytest.raises(MappingError, match="connection self.in.3 <-> red.in.9 names port "
                                           "'in.9' of instance red, but commonlib.opn has ports "
                                           "in.0 .. in.3 \\(one per operand\\), out"):
        import_coreir_dict(_doc({"hcompute_r": mod}), "r.json")
    mod = _opn_module(4, "coreir.add")
    mod["connections"].pop(2)
    with pytest.raises(MappingError, match="port red.in.2 of op commonlib.opn is not connected"):
        import_coreir_dict(_doc({"hcompute_r": mod}), "r.json")
    mod = _opn_module(4, "coreir.add")
    del mod["instances"]["red"]["genargs"]["N"]
    with pytest.raises(MappingError, match="^r.json: module hcompute_r: instance red: field "
                                           "genargs.N of commonlib.opn is null; write"):
        import_coreir_dict(_doc({"hcompute_r": mod}), "r.json")
    mod = _opn_module(4, "coreir.add")
    mod["instances"]["red"]["genargs"]["operator"] = "coreir.add"
    with pytest.raises(MappingError, match="field genargs.operator of commonlib.opn is "
                                           "\"coreir.add\"; write .*\\[\"String\", "
                                           "\"coreir.add\"\\]"):
        import_coreir_dict(_doc({"hcompute_r": mod}), "r.json")
    with pytest.raises(MappingError, match="unsupported op in the kernels: commonlib.opn of "
                                           "operator float.add \\(1 instance"):
        _opn_kernel(2, "float.add")
