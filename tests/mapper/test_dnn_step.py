"""Step kernels of DNN layers (mapper/dnn/step.py): the array's per-cycle compute of each
reduction, run step by step in the blocked loop order, reproduces mapper.frontend.tensor bit for bit;
its operand streams are the plan's MEM read ports; compute mapping covers it with PEs (the
three-input PE fuses multiply-adds); non-reorderable updates are refused."""
from __future__ import annotations

import numpy as np
import pytest

from cgra.errors import MappingError
from mapper.dnn import plan as dnn_plan, step as dnn_step
from mapper.frontend import tensor
from mapper.apps import dnn
from mapper.collateral import load_collateral
from mapper.mapping.compute import check_equivalence, cover_kernel
from mapper.frontend.dsl import Func, Input, Int16, Pipeline, RDom, UInt16, Var, cast

pytest_plugins = ["mapper_support"]


@pytest.mark.parametrize("layer,kw", [
    ("resnet_layer", {}), ("resnet_layer", {"width": 9, "height": 7, "c_in": 8, "c_out": 4,
                                             "block_in": 2, "block_out": 4}),
    ("resnet_stride2", {}), ("mobilenet_layer", {}), ("gemm", {}),
    ("gemm", {"m": 8, "n": 16, "k": 12, "tile": 4})])
@pytest.mark.parametrize("seed", [0, 5])
def test_steps_reproduce_the_golden_model(layer, kw, seed):
    pipe = dnn.LAYERS[layer](**kw)
    ins = dnn.layer_inputs(pipe, seed)
    got = dnn_step.run_steps(pipe, ins)
    ref = tensor.evaluate(pipe, ins, all_funcs=True)
    assert set(got) == set(ref)
    for name in ref:
        np.testing.assert_array_equal(got[name], ref[name])


def test_resnet_step_kernel_is_the_plans_datapath():
    pipe = dnn.resnet_layer()
    sk = dnn_step.step_kernel(pipe, "conv")
    assert dnn_step.lane_count(sk) == (8, 8)
    assert dict(sk.kernel.op_counts()) == {"coreir.mul": 64, "coreir.add": 64}
    assert sorted(sk.kernel.outputs) == sorted(f"out{o}" for o in range(8))
    # operand streams = MEM read ports of the plan: 8 input lanes, 8 x 8 weights
    assert {p: len(s) for p, s in sk.streams.items()} == {"input": 8, "weights": 64}
    assert sorted(st.lanes for st in sk.streams["input"]) == [(("r.z", i),) for i in range(8)]
    plan = dnn_plan.plan_layer(pipe)
    streams = {b.name: b.streams for b in plan.buffers}
    assert streams["input"] == 8 and streams["weights"] == 64 and streams["acc_conv"] == 8
    assert plan.pes["conv: coreir.mul"] + plan.pes["conv: coreir.add"] == sk.kernel.num_ops()
    # with the restart on the first pass: a mux per output lane and one compare
    init = dnn_step.step_kernel(pipe, "conv", init=True)
    assert dict(init.kernel.op_counts()) == {"coreir.mul": 64, "coreir.add": 64,
                                             "coreir.mux": 8, "coreir.neq": 1}


def test_compute_mapping_of_the_step_kernel(default_design, d3_design):
    """Small lanes (2 x 2) so the exact cover stays quick: 4 products, 4 accumulating adds."""
    sk = dnn_step.step_kernel(dnn.resnet_layer(8, 8, 4, 4, 2, 2), "conv")
    c = load_collateral(default_design)
    mk = cover_kernel(sk.kernel, c.rules, c.pe)
    assert mk.pe_count() == 8
    check_equivalence(mk, c.pe, vectors=200)
    d3 = load_collateral(d3_design)
    md = cover_kernel(sk.kernel, d3.rules, d3.pe)
    assert md.pe_count() == 4                      # one multiply-add per product
    check_equivalence(md, d3.pe, vectors=200)


def test_non_reorderable_updates_are_refused():
    x, y = Var("x"), Var("y")
    a = Input("a", Int16, (4, 8))
    r = RDom([(0, 8)], "r")
    f = Func("horner")
    f[x, y] = cast(Int16, 0)
    f[x, y] = f[x, y] * 2 + a[x, r.x]              # order matters: not an accumulation
    pipe = Pipeline(f, "p")
    with pytest.raises(MappingError, match="not f\\[p\\] = f\\[p\\] OP e"):
        dnn_step.step_kernel(pipe, "horner")
    with pytest.raises(MappingError, match="'a' is not a reduction"):
        dnn_step.step_kernel(pipe, "a")
    i = Input("i", UInt16, (4, 4, 8))
    with pytest.raises(MappingError, match="accesses must have 3 indices"):
        _ = i[x, y]
