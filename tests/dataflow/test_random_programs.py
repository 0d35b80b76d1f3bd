"""Random nested-loop programs (mapper.dataflow.random_programs)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgra.errors import ProgramError
from mapper.dataflow.interp import interpret, interpret_stats
from mapper.dataflow.program import Branch, DoWhile, Loop, Reg
from mapper.dataflow.random_programs import random_program


def programs(*, max_depth: int = 3, max_loops: int = 4, max_statements: int = 24):
    """A hypothesis strategy of ``(Program, inputs)`` pairs from :func:`random_program`
    (shrinking towards seed 0)."""
    return st.integers(min_value=0, max_value=2**32 - 1).map(
        lambda s: random_program(s, max_depth=max_depth, max_loops=max_loops,
                                 max_statements=max_statements))

SEEDS = range(300)


def _shape(p):
    """A structural fingerprint: controller kinds and labels, access labels."""
    return [(type(c).__name__, c.label,
             tuple(s.label for s in getattr(c, "statements", []) if hasattr(s, "label")))
            for c in p.controllers()]


@pytest.fixture(scope="module")
def runs():
    out = []
    for seed in SEEDS:
        p, inputs = random_program(seed)
        out.append((p, inputs, *interpret_stats(p, inputs, max_steps=100_000)))
    return out


def test_every_seed_interprets(runs):
    assert len(runs) == 300
    for p, _, result, stats in runs:
        assert set(result) == set(p.memories)
        assert stats.steps > 0


def test_out_holds_the_final_registers(runs):
    for p, _, result, _ in runs:
        regs = [m for m in p.memories.values() if isinstance(m, Reg) and m.name.startswith("r")]
        tail = result["out"][len(result["out"]) - len(regs):]
        assert tail.tolist() == [int(result[m.name]) for m in regs], p.name


def test_generated_programs_cover_the_control_constructs(runs):
    def count(pred):
        return sum(any(pred(p, c) for c in p.controllers()) for p, *_ in runs)
    assert count(lambda p, c: isinstance(c, DoWhile)) >= 30
    assert count(lambda p, c: isinstance(c, Branch)) >= 150
    assert count(lambda p, c: isinstance(c, Branch) and bool(c.orelse.body)) >= 100
    assert count(lambda p, c: isinstance(c, Loop) and c.par == 2) >= 100
    assert sum(bool(p.bound_loads()) for p, *_ in runs) >= 100      # data-dependent bounds


def test_memories_are_shared_across_blocks(runs):
    """A memory written in one block and read in another (RAW/WAR/WAW for CMMC)."""
    shared = 0
    for p, *_ in runs:
        writers, readers = {}, {}
        for b in p.blocks():
            for s in b.stores():
                writers.setdefault(s.mem.name, set()).add(b.label)
            for ld in b.loads():
                readers.setdefault(ld.mem.name, set()).add(b.label)
        if any(len(writers[m]) > 1 or readers.get(m, set()) - writers[m]
               for m in writers if m != "out"):
            shared += 1
    assert shared >= 290


def test_same_seed_same_program_and_result():
    p1, x1 = random_program(17)
    p2, x2 = random_program(17)
    assert _shape(p1) == _shape(p2)
    assert x1.keys() == x2.keys() and all(np.array_equal(x1[k], x2[k]) for k in x1)
    r1, r2 = interpret(p1, x1), interpret(p2, x2)
    assert all(np.array_equal(r1[k], r2[k]) for k in r1)
    assert _shape(random_program(18)[0]) != _shape(p1)


def test_depth_zero_has_only_the_copy_loops():
    for seed in range(20):
        p, inputs = random_program(seed, max_depth=0)
        loops = [c for c in p.controllers() if isinstance(c, Loop)]
        srams = [m for m in p.memories.values() if m.kind == "sram"]
        assert len(loops) == len(srams)
        assert not any(isinstance(c, (Branch, DoWhile)) for c in p.controllers())
        interpret(p, inputs)


def test_inputs_are_small_int32():
    _, x = random_program(5)
    for a in x.values():
        assert a.dtype == np.int32 and a.min() >= -8 and a.max() <= 8


def test_negative_parameters_are_rejected():
    with pytest.raises(ProgramError, match="max_depth=-1"):
        random_program(0, max_depth=-1)


@settings(max_examples=30, deadline=None)
@given(programs(max_depth=2))
def test_hypothesis_strategy_programs_interpret(case):
    p, inputs = case
    result = interpret(p, inputs, max_steps=100_000)
    assert result["out"].dtype == np.int32
