"""The sequential interpreter (mapper.dataflow.interp): known answers and every error path."""
from __future__ import annotations

import numpy as np
import pytest

from cgra.errors import ProgramError
from mapper.dataflow.interp import initial_state, interpret, interpret_stats
from mapper.dataflow.program import Program, exp, log, sqrt, to_f32, to_i32


def test_nested_loops_with_start_and_step():
    p = Program("loops")
    acc, cnt = p.reg("acc"), p.reg("cnt")
    with p.foreach(1, 10, 3, label="L") as i:          # 1, 4, 7
        acc.value = acc.value + i
        with p.foreach(4, label="M"):
            cnt.value = cnt.value + 1
    r, st = interpret_stats(p)
    assert int(r["acc"]) == 12
    assert int(r["cnt"]) == 12
    assert st.loop_iterations == {"L": 3, "M": 12}
    assert st.controller_runs["M"] == 3
    assert sorted(st.block_runs.values()) == [3, 12]


def test_loop_bounds_are_evaluated_once_at_loop_start():
    p = Program("bounds_once")
    n = p.reg("n", init=3)
    with p.foreach(n.value):
        n.value = n.value + 1
    assert int(interpret(p)["n"]) == 6


def test_branch_counts_and_values():
    p = Program("branch")
    a, b = p.reg("a"), p.reg("b")
    with p.foreach(6) as i:
        with p.if_((i % 3).eq(0), label="I"):
            a.value = a.value + i
        with p.else_():
            b.value = b.value + 1
    r, st = interpret_stats(p)
    assert (int(r["a"]), int(r["b"])) == (3, 4)
    assert st.branch_taken == {"I": (2, 4)}
    assert st.controller_runs["I.then"] == 2 and st.controller_runs["I.else"] == 4


def test_do_while_repeats_until_condition_is_zero_and_runs_at_least_once():
    p = Program("dw")
    c, d = p.reg("c"), p.reg("d", init=10)
    with p.do_while(label="W"):
        c.value = c.value + 1
        p.loop_while(c.value < 5)
    with p.do_while(label="V"):
        d.value = d.value + 1
        p.loop_while(d.value < 5)
    r, st = interpret_stats(p)
    assert (int(r["c"]), int(r["d"])) == (5, 11)
    assert st.do_while_passes == {"W": 5, "V": 1}
    assert st.steps == 5 + 5 + 1 + 1          # statements plus condition evaluations


def test_fifo_order_and_remaining_contents():
    p = Program("fifo")
    q = p.fifo("q", depth=4)
    out = p.dram("out", (2,))
    with p.foreach(3) as i:
        q.enq(i * 10 + 10)
    out[0] = q.deq()
    out[1] = q.deq()
    r = interpret(p)
    assert r["out"].tolist() == [10, 20]
    assert r["q"].tolist() == [30]
    assert r["q"].dtype == np.int32


def test_one_load_node_dequeues_once_and_distinct_nodes_dequeue_left_to_right():
    p = Program("memo")
    q = p.fifo("q", depth=4)
    out = p.dram("out", (2,))
    q.enq(3)
    q.enq(4)
    q.enq(5)
    v = q.deq()
    out[0] = v * 10 + v                    # one node: one dequeue (3)
    out[1] = q.deq() * 10 + q.deq()        # two nodes: 4 then 5
    r, st = interpret_stats(p)
    assert r["out"].tolist() == [33, 45]
    assert r["q"].tolist() == []
    assert st.accesses[v.label] == 1


def test_initial_values_and_result_dtypes():
    p = Program("init")
    p.reg("ri", init=7)
    p.reg("rf", "f32", init=1.5)
    p.sram("s", (2, 3), "f32")
    p.dram("d", (3,))
    r = interpret(p)
    assert r["ri"].shape == () and r["ri"].dtype == np.int32 and int(r["ri"]) == 7
    assert r["rf"].dtype == np.float32 and float(r["rf"]) == 1.5
    assert r["s"].dtype == np.float32 and r["s"].shape == (2, 3) and not r["s"].any()
    assert r["d"].tolist() == [0, 0, 0]                # a DRAM not given starts at zero


def test_inputs_are_copied_not_mutated():
    p = Program("copy")
    d = p.dram("d", (2,))
    d[0] = 99
    a = np.array([1, 2], np.int64)
    r = interpret(p, {"d": a})
    assert r["d"].tolist() == [99, 2] and r["d"].dtype == np.int32
    assert a.tolist() == [1, 2]


def test_data_dependent_loop_bounds():
    p = Program("csr")
    rp, x = p.dram("rp", (4,)), p.dram("x", (5,))
    out = p.dram("out", (3,))
    with p.foreach(3) as v:
        with p.foreach(rp[v], rp[v + 1], label="E") as e:
            out[v] = out[v] + x[e]
    r, st = interpret_stats(p, {"rp": np.array([0, 2, 2, 5]), "x": np.arange(1, 6)})
    assert r["out"].tolist() == [3, 0, 12]
    assert st.loop_iterations["E"] == 5
    assert st.controller_runs["E"] == 3


def test_f32_transcendentals_follow_numpy_float32():
    p = Program("f32")
    x = p.dram("x", (3,), "f32")
    y = p.dram("y", (3,), "f32")
    y[0] = exp(x[0])
    y[1] = log(x[1])
    y[2] = sqrt(x[2]) / 2
    r = interpret(p, {"x": np.array([1.0, 10.0, 2.0])})
    assert r["y"].dtype == np.float32
    assert r["y"][0] == np.exp(np.float32(1.0))
    assert abs(float(r["y"][0]) - 2.718281828) < 3e-7       # within one float32 ulp of e
    assert r["y"][1] == np.log(np.float32(10.0))
    assert r["y"][2] == np.float32(0.70710677)


def test_i32_wraps_and_division_floors():
    p = Program("ints")
    o = p.dram("o", (6,))
    big = p.reg("big", init=2**31 - 1)
    o[0] = big.value + 1
    o[1] = p.let(big.value * 0 - 7) // 2
    o[2] = (big.value * 0 - 7) % 2
    o[3] = big.value // (big.value * 0)           # division by zero gives 0
    o[4] = to_i32(to_f32(big.value * 0 + 5) * 2.5)  # 12.5 truncates to 12
    o[5] = 100 // (big.value * 0 + 7)            # reflected division
    assert interpret(p)["o"].tolist() == [-(2**31), -4, 1, 0, 12, 14]


def test_let_binds_for_the_rest_of_the_block():
    p = Program("let")
    a = p.dram("a", (1,))
    out = p.dram("out", (2,))
    t = p.let(a[0] + 1)
    out[0] = t * t
    out[1] = t - 1
    assert interpret(p, {"a": np.array([4])})["out"].tolist() == [25, 4]


def test_memories_declared_in_a_loop_are_not_reinitialised():
    p = Program("scoped")
    out = p.dram("out", (1,))
    with p.foreach(3):
        s = p.sram("s", (1,))
        s[0] = s[0] + 2
    out[0] = s[0]
    assert interpret(p)["out"].tolist() == [6]


def test_initial_state_holds_fifos_as_empty_queues():
    p = Program("state")
    p.fifo("q", depth=2)
    p.reg("r", init=-1)
    st = initial_state(p, {})
    assert len(st["q"]) == 0 and int(st["r"]) == -1


# ---------------------------------------------------------------------------- errors
def _one_line(e: pytest.ExceptionInfo) -> str:
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_load_out_of_bounds_names_label_memory_index_and_iteration():
    p = Program("oob")
    a = p.dram("a", (5,))
    out = p.dram("out", (5,))
    with p.foreach(5, label="L") as i:
        out[i] = p.load(a, i + 1, label="Rbad")
    with pytest.raises(ProgramError) as e:
        interpret(p)
    msg = _one_line(e)
    assert msg.startswith("Rbad: dram 'a' index [5] is outside its shape (5,)")
    assert msg.endswith("at L=4")


def test_store_out_of_bounds_in_two_dimensions():
    p = Program("oob2")
    s = p.sram("s", (2, 3))
    with p.foreach(2, label="I") as i, p.foreach(3, label="J") as j:
        p.store(s, (i, j + i), 1, label="Wbad")
    with pytest.raises(ProgramError) as e:
        interpret(p)
    msg = _one_line(e)
    assert "Wbad: sram 's' index [1, 3] is outside its shape (2, 3)" in msg
    assert msg.endswith("at I=1, J=2")


def test_negative_index_is_out_of_bounds():
    p = Program("neg")
    a = p.sram("a", (4,))
    a[a[0] - 1] = 1
    with pytest.raises(ProgramError, match=r"sram 'a' index \[-1\]"):
        interpret(p)


def test_fifo_read_when_empty():
    p = Program("empty")
    q = p.fifo("q", depth=2)
    out = p.dram("out", (3,))
    q.enq(1)
    with p.foreach(3, label="L") as i:
        p.store(out, i, p.load(q, (), label="Rq"))
    with pytest.raises(ProgramError) as e:
        interpret(p)
    assert _one_line(e).startswith("Rq: fifo 'q' is read when empty in block")
    assert str(e.value).endswith("at L=1")


def test_fifo_write_when_full():
    p = Program("full")
    q = p.fifo("q", depth=2)
    with p.foreach(3, label="L") as i:
        p.store(q, (), i, label="Wq")
    with pytest.raises(ProgramError) as e:
        interpret(p)
    msg = _one_line(e)
    assert msg.startswith("Wq: fifo 'q' is written when full (depth 2)")
    assert "at L=2" in msg


def test_non_terminating_do_while_stops_at_max_steps():
    p = Program("forever")
    c = p.reg("c")
    with p.do_while(label="W"):
        c.value = c.value + 1
        p.loop_while(c.value > 0)
    with pytest.raises(ProgramError) as e:
        interpret(p, max_steps=100)
    msg = _one_line(e)
    assert "do_while W does not terminate within max_steps=100" in msg
    # 100 steps = 50 passes x (statement + condition): stopped in pass 50 (0-based)
    assert msg.endswith("(stopped in block B0 (W1) at W=50); raise max_steps or fix its "
                        "condition")


def test_non_positive_step_at_run_time():
    p = Program("step")
    s = p.reg("s", init=0)
    with p.foreach(0, 4, s.value, label="L"):
        s.value = 1
    with pytest.raises(ProgramError, match=r"^loop L: step evaluates to 0, must be positive$"):
        interpret(p)


def test_index_read_outside_its_loop():
    p = Program("escaped")
    out = p.dram("out", (4,))
    with p.foreach(4, label="L") as i:
        out[i] = 1
    out[0] = i
    with pytest.raises(ProgramError, match="the index of loop L is read outside that loop"):
        interpret(p)


def test_temporary_in_a_branch_condition_is_rejected_when_built():
    p = Program("tempcond")
    t = p.let(p.reg("r").value + 1)
    with pytest.raises(ProgramError, match="branch I1: the condition reads temporary 't0'"):
        with p.if_(t > 0):
            pass


@pytest.mark.parametrize("inputs, message", [
    ({"nope": np.zeros(2)}, "input 'nope' names no memory; its DRAMs are: a"),
    ({"s": np.zeros(2)}, "input 's' names a sram, not a DRAM"),
    ({"a": np.zeros(3)}, "input 'a' has shape (3,), DRAM 'a' is declared (2,)"),
    ({"a": np.array([0.5, 1.0])}, "input 'a' for i32 DRAM has non-integer values"),
    ({"a": np.array([2**31, 0])}, "input 'a' has values outside the i32 range"),
])
def test_bad_inputs(inputs, message):
    p = Program("inputs")
    p.dram("a", (2,))
    p.sram("s", (2,))
    with pytest.raises(ProgramError) as e:
        interpret(p, inputs)
    assert message in _one_line(e)


def test_integral_float_input_is_accepted_for_i32():
    p = Program("intfloat")
    p.dram("a", (2,))
    assert interpret(p, {"a": np.array([3.0, -2.0])})["a"].tolist() == [3, -2]
