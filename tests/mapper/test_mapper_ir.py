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


BINARY = [op for op, s in ir.OPS.items() if s.operands == ("d", "d") and op not in ir.FLOAT_OPS]
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


# ---------------------------------------------------------------------------- rewrites
def _equivalent(a: ir.Kernel, b: ir.Kernel, seed: int = 0, vectors: int = 300) -> None:
    """a and b agree (eval_op semantics) on random input vectors with corner values."""
    import random
    rng = random.Random(seed)
    corners = [0, 1, 2, 15, 16, 0x7FFF, 0x8000, 0xFFFF]
    for _ in range(vectors):
        ins = {n: [rng.choice(corners) if rng.random() < 0.3 else rng.getrandbits(w)
                   for _ in range(s)]
               for (n, s), w in zip(a.inputs.items(), a.input_widths.values(), strict=True)}
        ins = {n: [v & ((1 << a.input_widths[n]) - 1) for v in vs] for n, vs in ins.items()}
        assert a.evaluate(ins) == b.evaluate(ins), ins


def test_canonical_order_constant_second_and_cse():
    k = ir.Kernel("c")
    k.declare_input("a", 2)
    a, b = k.input("a", 0), k.input("a", 1)
    x = k.add("coreir.add", k.const(3), a)             # -> add(a, 3)
    y = k.add("coreir.mul", b, a)                      # mul(b, a) == mul(a, b): one node
    z = k.add("coreir.mul", a, b)
    k.set_output("o", k.add("coreir.sub", x, k.add("coreir.sub", y, z)))
    s = ir.canonicalize(k)
    assert s.op_counts() == {"coreir.add": 1}
    add = next(n for n in s.live_nodes() if n.op == "coreir.add")
    assert s.nodes[add.args[0]].op == ir.INPUT and s.nodes[add.args[1]].value == 3
    _equivalent(k, s)
    # the commutative table is peak.ir's (bit ops included), not a copy
    from peak.ir import COMMUTATIVE
    assert {"coreir.add", "corebit.and"} <= COMMUTATIVE and ir.ASSOCIATIVE <= COMMUTATIVE


@pytest.mark.parametrize("op", sorted(ir.ASSOCIATIVE))
def test_reassociate_constants(op):
    """f(f(x, c1), c2) -> f(x, f(c1, c2)): one op fewer, same values (all 16-bit and 1-bit
    associative ops, random constants)."""
    import random
    rng = random.Random(sorted(ir.ASSOCIATIVE).index(op))
    w = 1 if op.startswith("corebit.") else 16
    for _ in range(20):
        k = ir.Kernel("r")
        k.declare_input("a", 1, w)
        inner = k.add(op, k.const(rng.getrandbits(w), w), k.input("a"))
        k.set_output("o", k.add(op, inner, k.const(rng.getrandbits(w), w)))
        s = ir.canonicalize(k)
        assert s.num_ops() <= 1
        _equivalent(k, s, vectors=50)


@pytest.mark.parametrize("op", [o for o, s in ir.OPS.items()
                                if len(s.operands) == 2 and s.operands[0] == "d"])
def test_self_operand_rewrites(op):
    """op(x, x) rewrites (identity, 0, 1) agree with eval_op; the others are left alone."""
    k = ir.Kernel("s")
    k.declare_input("a", 1)
    a = k.input("a")
    k.set_output("o", k.add(op, a, a))
    s = ir.canonicalize(k)
    assert s.num_ops() <= 1
    if op in ("coreir.sub", "coreir.xor", "coreir.and", "coreir.eq", "commonlib.smax"):
        assert s.num_ops() == 0
    _equivalent(k, s, vectors=200)


def _random_kernel(rng, n_ops: int) -> ir.Kernel:
    """A random DAG over every data/bit op with small and corner constants."""
    data_ops = [o for o, s in ir.OPS.items() if o not in ir.CONST_OPS]
    k = ir.Kernel(f"rand{n_ops}")
    k.declare_input("a", 3)
    k.declare_input("p", 1, 1)
    data = [k.input("a", i) for i in range(3)]
    bits = [k.input("p")]
    for _ in range(n_ops):
        op = rng.choice(data_ops)
        spec = ir.OPS[op]
        args = []
        for kind in spec.operands:
            if kind == "d":
                r = rng.random()
                args.append(k.const(rng.choice([0, 1, 2, 4, 3, 16, 20, 0xFFFF, rng.getrandbits(16)]))
                            if r < 0.3 else rng.choice(data))
            else:
                args.append(rng.choice(bits) if rng.random() < 0.8 else k.const(rng.getrandbits(1), 1))
        table = tuple(rng.getrandbits(16) for _ in range(rng.randint(1, 40))) \
            if op == ir.LUT_OP else None            # lookups: random tables
        nid = k.add(op, *args, table=table)
        (bits if k.nodes[nid].width == 1 else data).append(nid)
    k.set_output("o", data[-1])
    k.set_output("b", bits[-1])
    k.set_output("m", data[len(data) // 2])
    return k


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_ops=st.integers(1, 25))
def test_canonicalize_preserves_semantics(seed, n_ops):
    """Property: canonicalize (simplify + every target-independent rewrite) computes the
    same function on random vectors and never adds ops."""
    import random
    k = _random_kernel(random.Random(seed), n_ops)
    s = ir.canonicalize(k)
    assert s.num_ops() <= ir.simplify(k).num_ops() <= k.num_ops()
    _equivalent(k, s, seed=seed, vectors=60)
    assert ir.canonicalize(s).to_dict() == s.to_dict()      # a fixpoint
