"""`cgra dataflow` (issue 34): program -> interpreter -> VUDFG -> CMMC -> units -> token-level
simulation, bit for bit; and the resource mapping onto SARA's units."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cgra.cli import cli
from cgra.errors import MappingError
from mapper.dataflow.apps import APPS
from mapper.dataflow.cmmc import cmmc
from mapper.dataflow.lower import lower
from mapper.dataflow.resource_map import SARA_PMU_WORDS, map_units
from mapper.dataflow.sim import simulate
from mapper.dataflow.units import SARA_PCU, PUConstraints


def _run(*args):
    return CliRunner().invoke(cli, ["dataflow", *args], catch_exceptions=False)


def test_cli_runs_bit_exact_and_reports_what_the_simulator_measured(tmp_path):
    res = _run("fig2a", "--par", "2", "--sim-seed", "3", "--latency", "1,3",
               "--out", str(tmp_path))
    assert res.exit_code == 0, res.output
    assert "fig2a (par 2): bit-exact with the interpreter and numpy" in res.output
    rep = json.loads((tmp_path / "dataflow_report.json").read_text())
    program, inputs, _ = APPS["fig2a"](par=2, seed=0)
    v = lower(program)
    sim = simulate(v, cmmc(v), inputs, seed=3, latency=(1, 3))
    assert rep["bit_exact"] is True and rep["cycles"] == sim.cycles
    assert (rep["vcus"], rep["vmus"]) == (19, 9)
    assert rep["tokens"] == {"after_reduction": 9, "before_reduction": 12, "control": 0}
    assert rep["sequential"] is False and rep["control_tokens"] == []
    assert rep["mapping"]["units"]["dram"] == 5 and rep["mapping"]["units"]["mem"] == 4
    assert rep["target"] == "SARA Plasticine units"


def test_cli_bad_inputs_exit_2_with_one_line(tmp_path):
    res = CliRunner().invoke(cli, ["dataflow", "gemm", "--latency", "3,1",
                                   "--out", str(tmp_path)])
    assert res.exit_code != 0
    bad = CliRunner().invoke(cli, ["dataflow", "no_such_program"])
    assert bad.exit_code == 2 and "no_such_program" in bad.output


def test_list_names_every_program():
    res = _run("--list")
    assert res.exit_code == 0
    assert [line.split()[0] for line in res.output.splitlines()] == list(APPS)


def test_par_duplicates_units_on_a_one_lane_unit():
    # SARA: outer parallelisation unrolls the body across units; the PE has one lane, so
    # gemm's multiply-accumulate VCU is copied per lane
    pe = PUConstraints("pe", stages=2, inputs={"scalar": 2, "bit": 3},
                       outputs={"scalar": 1, "bit": 1}, registers=2,
                       ops=frozenset({"add", "sub", "mul", "lt", "select", "min", "max"}),
                       count=64)
    counts = {}
    for par in (1, 2, 4):
        program, _, _ = APPS["gemm"](par=par)
        counts[par] = map_units(lower(program), {"pe": pe}).units["pe"]
    assert counts[2] == 2 * counts[1] and counts[4] == 4 * counts[1]
    # the PCU's 16 lanes hold par 4 in one unit
    program, _, _ = APPS["gemm"](par=4)
    assert map_units(lower(program), {"pcu": SARA_PCU}).units["pcu"] == 1


def test_units_and_memories_that_run_out_are_named():
    program, _, _ = APPS["gemm"](par=4)
    tiny = PUConstraints("pe", stages=2, inputs={"scalar": 2, "bit": 3},
                         outputs={"scalar": 1, "bit": 1}, registers=2,
                         ops=frozenset({"add", "mul"}), count=3)
    with pytest.raises(MappingError, match=r"needs \d+ pe units, the array has 3"):
        map_units(lower(program), {"pe": tiny})
    mem = PUConstraints("mem", stages=0, inputs={"scalar": 1}, outputs={"scalar": 1},
                        registers=0, ops=frozenset(), count=2)
    with pytest.raises(MappingError, match="memories need 3 mem units, the array has 2"):
        map_units(lower(program), {"pcu": SARA_PCU, "mem": mem})
    # capacity: an 8x8 SRAM in 16-word units takes 4 of them
    m = map_units(lower(program), {"pcu": SARA_PCU}, mem_capacity=16)
    assert max(m.memory_units.values()) == 4
    assert map_units(lower(program), {"pcu": SARA_PCU}).memory_units == \
        {k: 1 for k in m.memory_units}
    assert SARA_PMU_WORDS == 65536


def test_float_ops_are_refused_on_an_integer_unit():
    program, _, _ = APPS["black_scholes"]()
    pe = PUConstraints("pe", stages=2, inputs={"scalar": 2}, outputs={"scalar": 1},
                       registers=2, ops=frozenset({"add", "mul", "sub"}), count=64)
    with pytest.raises(MappingError, match=r"ops \[.*'fadd'.*\] are not supported by any "
                                           r"compute unit \(pe\)"):
        map_units(lower(program), {"pe": pe})
    # the PCU executes them
    assert map_units(lower(program), {"pcu": SARA_PCU}).units["pcu"] >= 1
