"""Front end B: every shipped CoreIR JSON kernel imports; semantics and error messages;
the repository stands alone (no test or source file reads outside the checkout)."""
from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mapper
from cgra.errors import MappingError
from mapper.apps import lower_app
from mapper.frontend.coreir import (
    EXAMPLES_DIR,
    example_kernels,
    example_path,
    import_coreir,
    import_coreir_dict,
)
from mapper.interp import eval_kernel

#: session fixture default_design (a collateral directory with rules, for the CLI test)
pytest_plugins = ["mapper_support"]

FILES = sorted(example_kernels().values())
REPO = Path(__file__).resolve().parents[2]

# compute ops (no constants, no inputs) per file, counted from the JSON instances
EXPECTED_OPS = {"cascade": 30, "conv_3_3": 18, "conv_layer": 64, "down_sample": 5,
                "gaussian": 19, "harris": 85, "mobilenet": 20, "pointwise": 1,
                "resnet_layer_gen": 32, "up_sample": 0}


def test_all_files_present():
    assert set(example_kernels()) == set(EXPECTED_OPS)
    assert all(p.name == f"{n}_compute.json" for n, p in example_kernels().items())


def test_examples_are_package_data():
    assert EXAMPLES_DIR == Path(mapper.__file__).resolve().parent / "data" / "coreir"
    assert example_path("gaussian") == EXAMPLES_DIR / "gaussian_compute.json"
    readme = (EXAMPLES_DIR / "README.md").read_text()
    assert "Halide-to-CGRA" in readme and "MetaMapper" in readme
    with pytest.raises(MappingError, match="unknown example CoreIR kernel 'gausian'.*"
                                           "cascade, conv_3_3, .*harris.*up_sample"):
        example_path("gausian")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_kernel_imports_and_evaluates_consistently(path):
    kernels = import_coreir(path)
    data = json.loads(path.read_text())
    assert set(kernels) == set(data["namespaces"]["global"]["modules"])
    assert all(name.startswith("hcompute_") for name in kernels)
    assert sum(k.num_ops() for k in kernels.values()) == EXPECTED_OPS[path.stem.replace("_compute", "")]
    rng = np.random.default_rng(11)
    for k in kernels.values():
        # scalar reference semantics == vectorised interpreter on 200 random vectors
        ins = {n: [rng.integers(0, 1 << k.input_widths[n], 200) for _ in range(size)]
               for n, size in k.inputs.items()}
        vec = eval_kernel(k, ins)
        for t in range(0, 200, 37):
            scalar = k.evaluate({n: [int(v[t]) for v in vs] for n, vs in ins.items()})
            for o in k.outputs:
                assert int(np.broadcast_to(vec[o], (200,))[t]) == scalar[o]


def test_gaussian_known_answer_and_dsl_equivalence():
    k = import_coreir(example_path("gaussian"))["hcompute_blur_unnormalized_stencil_1"]
    assert k.inputs == {"in0_blur_unnormalized_stencil": 1, "in1_hw_input_CGRA_stencil": 9}
    out = k.evaluate({"in0_blur_unnormalized_stencil": [5],
                      "in1_hw_input_CGRA_stencil": list(range(1, 10))})
    # JSON weights by stencil index: 24,30,24,30,37,30,24,24,30
    assert out == {"out_blur_unnormalized_stencil": 5 + 24 * (1 + 3 + 7 + 8) + 30 * (2 + 4 + 6 + 9) + 37 * 5}
    # the DSL gaussian computes the same function (CoreIR index 7/8 = raster 8/7)
    dsl_k = lower_app("gaussian", 8, 8).stage("blur_unnormalized").kernel
    rng = np.random.default_rng(5)
    for _ in range(50):
        win = [int(v) for v in rng.integers(0, 1 << 16, 9)]
        perm = win[:7] + [win[8], win[7]]
        assert dsl_k.evaluate({"input": win})["out"] == k.evaluate(
            {"in0_blur_unnormalized_stencil": [0], "in1_hw_input_CGRA_stencil": perm})[
            "out_blur_unnormalized_stencil"]


def test_harris_nonmax_kernel():
    k = import_coreir(example_path("harris"))["hcompute_cim_output_stencil"]
    assert k.op_counts() == {"coreir.slt": 8, "corebit.and": 8, "coreir.sle": 1, "coreir.mux": 1}
    win = [3] * 9
    win[1] = 10  # index 1 is the centre compared against all others
    assert k.evaluate({"in0_cim_stencil": win}) == {"out_cim_output_stencil": 255}
    win[5] = 10
    assert k.evaluate({"in0_cim_stencil": win}) == {"out_cim_output_stencil": 0}


def test_unknown_genref_names_op_module_and_file(tmp_path):
    data = json.loads(example_path("pointwise").read_text())
    bad = copy.deepcopy(data)
    inst = bad["namespaces"]["global"]["modules"]["hcompute_mult_stencil"]["instances"]
    inst["mul_hw_input_global_wrapper_stencil_1_259_260"]["genref"] = "coreir.sdiv"
    path = tmp_path / "bad_compute.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(MappingError) as e:
        import_coreir(path)
    msg = str(e.value)
    assert "coreir.sdiv" in msg and "hcompute_mult_stencil" in msg and "bad_compute.json" in msg


def test_structural_errors():
    data = json.loads(example_path("pointwise").read_text())
    m = data["namespaces"]["global"]["modules"]["hcompute_mult_stencil"]
    bad = copy.deepcopy(data)
    bad["namespaces"]["global"]["modules"]["hcompute_mult_stencil"]["connections"] = [
        c for c in m["connections"] if "in1" not in c[0]]
    with pytest.raises(MappingError, match="in1 of op coreir.mul is not connected"):
        import_coreir_dict(bad, "x.json")
    bad = copy.deepcopy(data)
    bad["namespaces"]["global"]["modules"]["hcompute_mult_stencil"]["connections"].append(
        ["self.in0_hw_input_global_wrapper_stencil.0", "mul_hw_input_global_wrapper_stencil_1_259_260.in1"])
    with pytest.raises(MappingError, match="driven twice"):
        import_coreir_dict(bad, "x.json")
    with pytest.raises(MappingError, match="cannot read CoreIR JSON"):
        import_coreir("/nonexistent/file.json")


# ---------------------------------------------------------------- malformed input
KERNEL = "hcompute_mult_stencil"                            # of pointwise_compute.json
MUL = "mul_hw_input_global_wrapper_stencil_1_259_260"
CONST = "const_p2__259"


def _pointwise() -> dict:
    return json.loads(example_path("pointwise").read_text())


def _edit(fn):
    """A file text: the pointwise kernel after ``fn(doc, module)`` edited it in place."""
    doc = _pointwise()
    fn(doc, doc["namespaces"]["global"]["modules"][KERNEL])
    return json.dumps(doc, indent=1)


def _set_const(value):
    return lambda d, m: m["instances"][CONST]["modargs"].__setitem__("value", value)


def _rename_kernels(d, m):
    mods = d["namespaces"]["global"]["modules"]
    d["namespaces"]["global"]["modules"] = {k.replace("hcompute_", "stage_"): v
                                            for k, v in mods.items()}


def _set_conn(i, j, ep):
    return lambda d, m: m["connections"][i].__setitem__(j, ep)


def _add_cycle(d, m):
    m["instances"]["add_loop"] = {"genref": "coreir.add", "genargs": {"width": ["Int", 16]}}
    m["connections"] = [c for c in m["connections"] if not c[0].endswith(".in1")] + [
        [f"{MUL}.in1", "add_loop.out"], [f"{MUL}.out", "add_loop.in0"],
        ["add_loop.in1", f"{CONST}.out"]]


def _bit_into_data(d, m):
    m["instances"]["lt"] = {"genref": "coreir.slt", "genargs": {"width": ["Int", 16]}}
    m["connections"] = [c for c in m["connections"] if not c[0].endswith(".in1")] + [
        [f"{MUL}.in1", "lt.out"], ["lt.in0", f"{CONST}.out"], ["lt.in1", f"{CONST}.out"]]


#: (case id, file text, distinctive parts of the message)
BAD_FILES = [
    ("top-level-list", "[1, 2]", ["top level is a JSON array, not an object", '"namespaces"']),
    ("not-json", '{\n "namespaces": {\n  "global": {,\n', [":3: not a JSON file", "line 3 column"]),
    ("empty", "", [":1: not a JSON file", "Expecting value"]),
    ("not-utf8", b'{"namespaces": "\xff"}', ["byte 16 is not UTF-8 text"]),
    ("xz-constant", _edit(_set_const([["BitVector", 16], "16'hzz08"])),
     [f"module {KERNEL}: instance {CONST}: field modargs.value", "\"16'hzz08\" has x/z digits",
      "\"16'h0008\""]),
    ("too-wide-constant", _edit(_set_const([["BitVector", 16], "16'h1FFFF"])),
     [f"instance {CONST}", "\"16'h1FFFF\" does not fit in its declared width of 16 bits"]),
    ("literal-size", _edit(_set_const([["BitVector", 16], "8'h08"])),
     ["\"8'h08\" is a 8-bit literal but the instance is 16 bits wide"]),
    ("bad-digits", _edit(_set_const([["BitVector", 16], "16'b102"])),
     ["'102' are not base-2 digits"]),
    ("const-type", _edit(_set_const([["BitVector", 8], "8'h02"])),
     ["value type BitVector 8 differs from the instance width 16 bits"]),
    ("no-value", _edit(lambda d, m: m["instances"][CONST].pop("modargs")),
     [f"instance {CONST}: coreir.const has no field modargs.value"]),
    ("no-namespaces", _edit(lambda d, m: d.pop("namespaces")),
     ["no field 'namespaces' at the top level", "not a CoreIR JSON file"]),
    ("no-global", _edit(lambda d, m: d["namespaces"].__setitem__(
        "glob", d["namespaces"].pop("global"))),
     ["no namespace 'global' in field namespaces (found: glob)"]),
    ("no-modules", _edit(lambda d, m: d["namespaces"]["global"].pop("modules")),
     ["no field 'modules' in namespaces.global"]),
    ("modules-list", _edit(lambda d, m: d["namespaces"]["global"].__setitem__("modules", [])),
     ["field namespaces.global.modules is a JSON array, not an object"]),
    ("no-kernel", _edit(_rename_kernels),
     ["has no hcompute_* module (found: stage_hw_input_global_wrapper_stencil",
      "rename the kernel modules"]),
    ("unknown-op", _edit(lambda d, m: m["instances"][MUL].__setitem__("genref", "coreir.sdiv")),
     [f"1 unsupported op in the kernels: coreir.sdiv (1 instance; first: module {KERNEL} "
      f"instance {MUL})", "add each op to mapper.ir.OPS"]),
    ("unknown-instance", _edit(_set_conn(0, 1, "const_p3__259.out")),
     ["names unknown instance 'const_p3__259'; declare it under 'instances'"]),
    ("unknown-port", _edit(_set_conn(0, 0, f"{MUL}.in2")),
     [f"names port 'in2' of instance {MUL}, but coreir.mul has ports in0, in1, out"]),
    ("bit-select", _edit(_set_conn(0, 1, f"{CONST}.out.3")),
     ["names port 'out.3'", "bit selects are not supported"]),
    ("unknown-module-port", _edit(_set_conn(1, 0, "self.in0_hw_input_stencil.0")),
     ["the module has no port 'in0_hw_input_stencil' (ports: out_mult_stencil, "
      "in0_hw_input_global_wrapper_stencil)"]),
    ("element-out-of-range", _edit(_set_conn(1, 0, "self.in0_hw_input_global_wrapper_stencil.1")),
     ["is not an element of input in0_hw_input_global_wrapper_stencil",
      "self.in0_hw_input_global_wrapper_stencil.<0..0>"]),
    ("two-drivers", _edit(_set_conn(1, 1, f"{CONST}.out")), ["must join exactly one driver"]),
    ("bad-width", _edit(lambda d, m: m["instances"][MUL]["genargs"].__setitem__("width", 16)),
     [f"instance {MUL}: field genargs.width is 16", '["Int", w]']),
    ("instances-list", _edit(lambda d, m: m.__setitem__("instances", [])),
     ["field instances is a JSON array"]),
    ("connection-triple", _edit(lambda d, m: m["connections"].append(["a.out", "b.in0", "c"])),
     ['entry ["a.out", "b.in0", "c"] is not a pair']),
    ("port-type", _edit(lambda d, m: m["type"][1][1].__setitem__(1, ["Array", 1, "Foo"])),
     ["port in0_hw_input_global_wrapper_stencil has unsupported type [\"Array\", 1, \"Foo\"]"]),
    ("no-output", _edit(lambda d, m: m["type"][1].pop(0)), ["the module has no output port"]),
    ("cycle", _edit(_add_cycle), ["combinational cycle through instance"]),
    ("width-mismatch", _edit(_bit_into_data),
     [f"instance {MUL} (coreir.mul) port in1 takes 16 bit(s) but is driven by lt.out with 1"]),
    ("undriven-output", _edit(lambda d, m: m["connections"].pop()),
     ["output port out_mult_stencil is not driven"]),
]


@pytest.mark.parametrize("text, parts", [c[1:] for c in BAD_FILES], ids=[c[0] for c in BAD_FILES])
def test_malformed_file_gives_one_line_mapping_error(tmp_path, text, parts):
    path = tmp_path / "bad_compute.json"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    with pytest.raises(MappingError) as e:
        import_coreir(path)
    msg = str(e.value)
    assert msg.startswith(str(path)) and "\n" not in msg
    for part in parts:
        assert part in msg


def test_module_name_with_line_break_stays_on_one_line():
    doc = _pointwise()
    mods = doc["namespaces"]["global"]["modules"]
    mods["hcompute_a\nb"] = mods.pop(KERNEL)
    mods["hcompute_a\nb"]["connections"].pop()
    with pytest.raises(MappingError) as e:
        import_coreir_dict(doc, "x.json")
    assert str(e.value).startswith("x.json: module hcompute_a b: output port") and \
        "\n" not in str(e.value)


# every path of a real kernel, mutated: only MappingError (or success) may come out
_DOCS = {n: json.loads(p.read_text()) for n, p in example_kernels().items()
         if n in ("pointwise", "harris", "gaussian", "down_sample")}
_ODD = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(),
                 st.text(max_size=8), st.just({}), st.just([]), st.lists(st.integers(-2, 70), max_size=3),
                 st.sampled_from(["self", "self.x", ".", "out", "in0", "16'hzz08", "16'h1FFFF",
                                  "BitIn", "Bit", "Array", "Record", "Int", "BitVector", "Bool",
                                  "coreir.const", "corebit.and", "coreir.mux", "hcompute_x",
                                  ["Array", 16, "Bit"], ["Int", 0], ["Bool", True]]))


def _paths(node, pre=()):
    yield pre
    if isinstance(node, dict):
        for key, v in node.items():
            yield from _paths(v, pre + (key,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, pre + (i,))


def _at(doc, path):
    for key in path:
        doc = doc[key]
    return doc


@st.composite
def _mutated_kernel(draw):
    doc = copy.deepcopy(_DOCS[draw(st.sampled_from(sorted(_DOCS)))])
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(doc))[1:]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent, key = _at(doc, path[:-1]), path[-1]
        action = draw(st.sampled_from(["delete", "replace", "graft", "edit"]))
        if action == "delete":
            del parent[key]
        elif action == "replace":
            parent[key] = draw(_ODD)
        elif action == "graft":                     # a subtree of another place: type confusion
            parent[key] = copy.deepcopy(_at(doc, draw(st.sampled_from(paths))))
        elif isinstance(parent[key], str):
            v = parent[key]
            parent[key] = draw(st.sampled_from([v + ".1", v[:-1], v.upper(), v + "\n",
                                                "self." + v, v.split(".")[0], v.replace("h", "b")]))
        elif isinstance(parent[key], int):
            parent[key] = draw(st.sampled_from([0, -1, parent[key] + 1, 2**64, 65]))
        elif isinstance(parent[key], dict) and parent[key]:
            old = draw(st.sampled_from(sorted(parent[key])))
            parent[key][draw(st.sampled_from([old + ".a", "self", "", old + "_"]))] = \
                parent[key].pop(old)
    return doc


@settings(max_examples=300, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(_mutated_kernel())
def test_mutated_kernels_raise_only_one_line_mapping_errors(doc):
    try:
        kernels = import_coreir_dict(doc, "m.json")
    except MappingError as exc:
        assert str(exc).startswith("m.json: ") and "\n" not in str(exc)
    else:
        assert kernels and all(name.startswith("hcompute_") for name in kernels)


# ---------------------------------------------------------------- command line
def test_cli_map_bad_coreir_exits_2_with_one_error_line(tmp_path, default_design):
    """``cgra map`` reads the collateral before the CoreIR file (mapper/cli.py:map_app), so
    this needs a design directory with rules: the session's default_design."""
    bad = tmp_path / "bad_compute.json"
    bad.write_text(_edit(_set_const([["BitVector", 16], "16'hzz08"])))
    cgra = Path(sys.executable).parent / "cgra"
    res = subprocess.run([str(cgra), "map", str(bad), "--design", str(default_design),
                          "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {bad}: module {KERNEL}: "
                                                   f"instance {CONST}: field modargs.value")
    assert "x/z digits" in lines[0] and "Traceback" not in res.stderr
    assert not (tmp_path / "out").exists()
