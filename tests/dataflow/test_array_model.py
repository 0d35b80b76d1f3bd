"""The model of a dataflow program on the array (mapper.dataflow.array_model): each PE's
rates against the dataflow PE's own Python model, fire by fire, on every PE of compiled
programs; the counter chain's known answer; the stream model's counts and its errors.
tests/dataflow/test_array_run.py checks the model's cycles against Verilator on every run."""
from __future__ import annotations

import numpy as np
import pytest
from hwtypes import Bit, BitVector

from canal.rv_netsim import FireRates, simulate_streams
from cgra.errors import CollateralError, ConfigError, MappingError
from mapper.backend.pack import pack
from mapper.backend.place import PlaceParams, place
from mapper.backend.route import route_design
from mapper.collateral import load_collateral
from mapper.dataflow.apps import APPS, ARRAY_PROGRAMS
from mapper.dataflow.array import compile_program
from mapper.dataflow.array_model import pe_rates, predict_run
from peak.assembler import assembler
from peak.control import counter_chain_trips
from peak.examples.dataflow_pe import dataflow_inst

from test_array_run import DF_PE as MEM_PE  # configs/small_df.toml's PE
from test_array_run import scale_rows, windows


def _python_rates(spec: type, inst, fires: int) -> list[FireRates]:
    """The rate ports of the PE's Python model over ``fires`` fires (zero data)."""
    pe = spec()
    zero = BitVector[spec.width](0)
    got = []
    for _ in range(fires):
        _res, _res_p, emit, emit_p, da, db, dp, na, nb, npp = pe(inst, zero, zero, Bit(0))
        assert int(npp) == 1
        got.append(FireRates(
            no_deq=frozenset(p for p, v in (("a", da), ("b", db), ("p", dp)) if not int(v)),
            no_emit=frozenset(p for p, v in (("res", emit), ("res_p", emit_p))
                              if not int(v)),
            no_need=frozenset(p for p, v in (("a", na), ("b", nb)) if not int(v))))
    return got


PROGRAMS = [
    ("dot_product", lambda: APPS["dot_product"](n=12, par=2)[:2]),
    ("gemm_tile", lambda: ARRAY_PROGRAMS["gemm_tile"](m=2, n=3, k=4, par=2)[:2]),
    ("branch", lambda: ARRAY_PROGRAMS["branch"](par=2)[:2]),
    ("scale_rows", lambda: scale_rows()[:2]),
    ("windows", lambda: windows()[:2]),
    ("kmeans_step", lambda: ARRAY_PROGRAMS["kmeans_step"](n=8, par=2)[:2]),
]


@pytest.mark.parametrize("name, make", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_rates_equal_the_pe_python_model_on_every_pe(name, make):
    """Every PE of the compiled program, over a whole period of its counter chain (the
    levels' trips multiplied; at most 80 fires): the same deq, emit and need on every fire."""
    program, inputs = make()
    ap = compile_program(program, inputs, MEM_PE)
    asm = assembler(MEM_PE.Inst)
    kinds = set()
    for pe_name, inst_rec in ap.netlist.instances.items():
        if inst_rec.kind != "pe":
            continue
        inst = asm.decode(inst_rec.config["inst"])
        levels = [tuple(int(v) >> 16 * k & 0xFFFF for v in (inst.ctr.min, inst.ctr.stride,
                                                              inst.ctr.max)) for k in range(3)]
        fires = min(80, int(np.prod(counter_chain_trips(levels))) + 1)
        want = _python_rates(MEM_PE, inst, fires)
        model = pe_rates(MEM_PE, inst)
        got = [model(k) for k in range(fires)]
        assert got == want, (name, pe_name)
        assert model(fires - 1) == want[-1]                 # asked again: the same fire
        kinds |= ({("need", r.no_need) for r in got} | {("deq", r.no_deq) for r in got}
                  | {("emit", r.no_emit) for r in got})
    # every program holds an operand over an inner loop (a word not dequeued on every
    # fire) or reduces over one (a result not emitted on every fire) ...
    assert any(k in ("deq", "emit") and v for k, v in kinds)
    if name in ("gemm_tile", "branch"):                     # ... these the memory PE's phases
        assert {("need", frozenset({"a"})), ("need", frozenset({"b"}))} <= kinds
    if name == "kmeans_step":                 # a scatter-add's reads need no input
        assert ("need", frozenset({"a", "b"})) in kinds


def test_known_answer_of_the_counter_chain():
    """peak.control's known answer: levels 3 (inner) x 2 (outer), one fire per cycle: done
    bit 0 on fires 2 and 5, bit 1 on fire 5, then again from fire 6. A PE emitting at level 1
    and dequeueing ``b`` at level 2 (a value held over both loops) follows it."""
    inst = dataflow_inst(MEM_PE, [(0, 1, 3), (0, 1, 2), (0, 1, 1)], "Add", emit_level=1,
                         deq_b_level=2)
    model = pe_rates(MEM_PE, inst)
    rates = [model(k) for k in range(12)]
    assert [k for k, r in enumerate(rates) if "res" not in r.no_emit] == [2, 5, 8, 11]
    assert [k for k, r in enumerate(rates) if "b" not in r.no_deq] == [5, 11]
    assert all("a" not in r.no_deq and not r.no_need for r in rates)
    with pytest.raises(ValueError, match="fire 3 asked after fire 11"):
        model(3)


def test_emit_on_p_is_refused():
    inst = dataflow_inst(MEM_PE, [(0, 1, 3), (0, 1, 1), (0, 1, 1)], "PassA", emit_on_p=1)
    with pytest.raises(MappingError, match="emit_on_p = 1 emits on data"):
        pe_rates(MEM_PE, inst)


def test_stream_counts_must_match_the_sockets():
    with pytest.raises(ConfigError, match="counts: 1 input and 0 output counts for 0 inputs "
                                          "and 0 outputs"):
        simulate_streams({}, {}, [], [], 1, 0, 0, 0, counts=([3], []))


def test_a_run_without_its_stimulus_is_refused(design_dir, tmp_path):
    """The model takes the streams' token counts and the stalls from the run's sim.stim."""
    coll = load_collateral(design_dir("small_df", only=["coreir.add"]))
    program, inputs = APPS["dot_product"](n=12, par=1)[:2]
    packed = pack(compile_program(program, inputs, MEM_PE).netlist, coll)
    pl = place(packed, coll, PlaceParams(seed=0))
    rr = route_design(packed, pl, coll)
    with pytest.raises(CollateralError, match="sim.stim is missing"):
        predict_run(coll, MEM_PE, packed, pl.sites, rr, tmp_path)
