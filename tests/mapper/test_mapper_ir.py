"""IR: op semantics (checked against hwtypes/SMT-LIB bit-vector semantics), kernels, simplify,
unrolling, pipeline domains."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hwtypes import BitVector

from cgra.errors import MappingError
from mapper import ir
from mapper.interp import eval_kernel, np_op

BV = BitVector[16]


def _hw(op: str, a: int, b: int) -> int:
    """Reference semantics from hwtypes (the PE model's bit-vector library)."""
    x, y = BV(a), BV(b)
    sx, sy = x.as_sint(), y.as_sint()
    name = op.split(".")[1]
    ref = {
        "add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y,
        "lshr": lambda: x.bvlshr(y), "ashr": lambda: x.bvashr(y), "shl": lambda: x.bvshl(y),
        "and": lambda: x & y, "or": lambda: x | y, "xor": lambda: x ^ y,
        "eq": lambda: x == y, "neq": lambda: x != y,
        "ult": lambda: x.bvult(y), "ule": lambda: x.bvule(y), "ugt": lambda: x.bvugt(y),
        "uge": lambda: x.bvuge(y), "slt": lambda: x.bvslt(y), "sle": lambda: x.bvsle(y),
        "sgt": lambda: x.bvsgt(y), "sge": lambda: x.bvsge(y),
        "smax": lambda: x if sx >= sy else y, "smin": lambda: x if sx <= sy else y,
        "umax": lambda: x if a >= b else y, "umin": lambda: x if a <= b else y,
        "absd": lambda: BV(abs((x - y).as_sint())),
        "mult_middle": lambda: BV((sx * sy) >> 8),
    }[name]()
    return int(ref)


BINARY = [op for op, s in ir.OPS.items() if s.operands == ("d", "d")]
words = st.one_of(st.integers(0, 0xFFFF), st.sampled_from([0, 1, 15, 16, 17, 0x7FFF, 0x8000, 0xFFFF]))


@settings(max_examples=60, deadline=None)
@given(a=words, b=words)
def test_binary_ops_match_hwtypes(a, b):
    for op in BINARY:
        want = _hw(op, a, b)
        assert ir.eval_op(op, [a, b], 16) == want, op
        got = np_op(op, [np.array([a], np.int64), np.array([b], np.int64)], 16)
        assert int(got[0]) == want, op


def test_unary_and_bit_ops_known_values():
    assert ir.eval_op("commonlib.abs", [0xFFFD], 16) == 3
    assert ir.eval_op("commonlib.abs", [0x8000], 16) == 0x8000
    assert ir.eval_op("coreir.not", [0x00FF], 16) == 0xFF00
    assert ir.eval_op("coreir.mux", [5, 9, 1], 16) == 9
    assert ir.eval_op("coreir.mux", [5, 9, 0], 16) == 5
    assert ir.eval_op("corebit.mux", [0, 1, 1], 1) == 1
    assert ir.eval_op("corebit.not", [1], 1) == 0
    assert ir.eval_op("corebit.xor", [1, 1], 1) == 0
    assert ir.eval_op("coreir.const", [], 16, 0x12345) == 0x2345
    with pytest.raises(MappingError, match="coreir.frobnicate"):
        ir.eval_op("coreir.frobnicate", [1, 2], 16)


def _mac_kernel() -> ir.Kernel:
    k = ir.Kernel("mac")
    k.declare_input("a", 2)
    k.declare_input("c", 1)
    m = k.add("coreir.mul", k.input("a", 0), k.input("a", 1))
    s = k.add("coreir.add", m, k.input("c"))
    lt = k.add("coreir.slt", s, k.const(0))
    k.set_output("out", k.add("coreir.mux", s, k.const(0), lt))
    return k


def test_kernel_evaluate_and_json_round_trip():
    k = _mac_kernel()
    # 2 + 3 * 5 = 17 (the PEak paper's example), then relu
    assert k.evaluate({"a": [3, 5], "c": [2]}) == {"out": 17}
    assert k.evaluate({"a": [0xFFFF, 5], "c": [2]}) == {"out": 0}  # -5 + 2 < 0
    k2 = ir.Kernel.from_dict(k.to_dict())
    assert k2.to_dict() == k.to_dict()
    assert k.op_counts() == {"coreir.mul": 1, "coreir.add": 1, "coreir.slt": 1, "coreir.mux": 1}


def test_kernel_rejects_bad_nodes():
    k = ir.Kernel("bad")
    k.declare_input("a", 1)
    a = k.input("a")
    with pytest.raises(MappingError, match="unknown op 'coreir.div'"):
        k.add("coreir.div", a, a)
    with pytest.raises(MappingError, match="takes 2 operands"):
        k.add("coreir.add", a)
    with pytest.raises(MappingError, match="expects a bit"):
        k.add("corebit.and", a, a)
    with pytest.raises(MappingError, match="index 3 is out of range"):
        k.input("a", 3)


def test_simplify_folds_constants_and_identities():
    k = ir.Kernel("s")
    k.declare_input("a", 1)
    a = k.input("a")
    zero, one, two = k.const(0), k.const(1), k.const(2)
    x = k.add("coreir.add", a, zero)           # a
    y = k.add("coreir.mul", x, one)            # a
    z = k.add("coreir.mul", two, k.const(3))   # 6
    w = k.add("coreir.add", y, z)              # a + 6
    w2 = k.add("coreir.add", y, z)             # CSE
    k.set_output("out", k.add("coreir.sub", w, w2))
    s = ir.simplify(k)
    assert s.op_counts() == {"coreir.add": 1, "coreir.sub": 1}
    for v in (0, 7, 0xFFFF):
        assert s.evaluate({"a": [v]}) == k.evaluate({"a": [v]}) == {"out": 0}


def test_unroll_stage_merges_windows():
    k = ir.Kernel("blur")
    k.declare_input("in", 2)
    k.set_output("out", k.add("coreir.add", k.input("in", 0), k.input("in", 1)))
    st = ir.Stage("blur", k, {"in": ir.Window("input", ((0, 0), (1, 0)))})
    u = ir.unroll_stage(st, 3)
    assert u.windows["in"].offsets == ((0, 0), (1, 0), (2, 0), (3, 0))
    assert set(u.kernel.outputs) == {"out_0", "out_1", "out_2"}
    vals = [10, 20, 30, 40]
    assert u.kernel.evaluate({"in": vals}) == {"out_0": 30, "out_1": 50, "out_2": 70}
    arr = eval_kernel(u.kernel, {"in": [np.array(v) for v in vals]})
    assert int(arr["out_2"]) == 70


def test_pipeline_domains_shrink_and_errors():
    k = ir.Kernel("f")
    k.declare_input("in", 2)
    k.set_output("out", k.add("coreir.add", k.input("in", 0), k.input("in", 1)))
    p = ir.Pipeline("p", {"input": ir.PipelineInput("input", (10, 6))},
                    [ir.Stage("f", k, {"in": ir.Window("input", ((-1, 0), (2, 3)))})], "f")
    assert p.domains()["f"] == ir.Box(1, 8, 0, 3)
    small = ir.Pipeline("p", {"input": ir.PipelineInput("input", (2, 2))},
                        [ir.Stage("f", k, {"in": ir.Window("input", ((0, 0), (2, 3)))})], "f")
    with pytest.raises(MappingError, match="empty domain"):
        small.domains()
    bad = ir.Pipeline("p", {"input": ir.PipelineInput("input", (8, 8))},
                      [ir.Stage("f", k, {"in": ir.Window("nothere", ((0, 0), (1, 0)))})], "f")
    with pytest.raises(MappingError, match="reads 'nothere'"):
        bad.validate()


def test_pipeline_json_round_trip():
    import json

    from mapper.apps import lower_app
    from mapper.interp import run_pipeline

    p = lower_app("harris", 20, 16, unroll=2)
    q = ir.Pipeline.from_dict(json.loads(json.dumps(p.to_dict())))
    assert q.to_dict() == p.to_dict()
    img = np.random.default_rng(0).integers(0, 256, (16, 20)).astype(np.uint16)
    assert np.array_equal(run_pipeline(p, {"input": img}), run_pipeline(q, {"input": img}))
    with pytest.raises(MappingError, match="pipeline JSON"):
        ir.Pipeline.from_dict({"name": "x"})
