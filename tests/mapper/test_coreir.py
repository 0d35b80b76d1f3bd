"""Front end B: every shipped CoreIR JSON kernel imports; semantics and error messages."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from cgra.errors import MappingError
from mapper.apps import lower_app
from mapper.frontend.coreir import import_coreir, import_coreir_dict
from mapper.interp import eval_kernel

COREIR_DIR = Path("/work/shared/apps/coreir")
FILES = sorted(COREIR_DIR.glob("*.json"))

# compute ops (no constants, no inputs) per file, counted from the JSON instances
EXPECTED_OPS = {"cascade": 30, "conv_3_3": 18, "conv_layer": 64, "down_sample": 5,
                "gaussian": 19, "harris": 85, "mobilenet": 20, "pointwise": 1,
                "resnet_layer_gen": 32, "up_sample": 0}


def test_all_files_present():
    assert {f.name.replace("_compute.json", "") for f in FILES} == set(EXPECTED_OPS)


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
    k = import_coreir(COREIR_DIR / "gaussian_compute.json")["hcompute_blur_unnormalized_stencil_1"]
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
    k = import_coreir(COREIR_DIR / "harris_compute.json")["hcompute_cim_output_stencil"]
    assert k.op_counts() == {"coreir.slt": 8, "corebit.and": 8, "coreir.sle": 1, "coreir.mux": 1}
    win = [3] * 9
    win[1] = 10  # index 1 is the centre compared against all others
    assert k.evaluate({"in0_cim_stencil": win}) == {"out_cim_output_stencil": 255}
    win[5] = 10
    assert k.evaluate({"in0_cim_stencil": win}) == {"out_cim_output_stencil": 0}


def test_unknown_genref_names_op_module_and_file(tmp_path):
    data = json.loads((COREIR_DIR / "pointwise_compute.json").read_text())
    bad = copy.deepcopy(data)
    inst = bad["namespaces"]["global"]["modules"]["hcompute_mult_stencil"]["instances"]
    inst["mul_hw_input_global_wrapper_stencil_1_259_260"]["genref"] = "coreir.udiv"
    path = tmp_path / "bad_compute.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(MappingError) as e:
        import_coreir(path)
    msg = str(e.value)
    assert "coreir.udiv" in msg and "hcompute_mult_stencil" in msg and "bad_compute.json" in msg


def test_structural_errors():
    data = json.loads((COREIR_DIR / "pointwise_compute.json").read_text())
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
