"""Issue 11's acceptance on the default 32x16 array: every shipped app closes on every seed of
0..4 at 900 MHz in the timing model (compute pipelining and register insertion) and runs
bit-exact against both golden models on the generated RTL in Verilator."""
from __future__ import annotations

import pytest

APPS = ("pointwise", "brighten_blur", "gaussian", "unsharp", "harris")
#: the critical path and latency each pass reports
PASSES = ["balance", "compute pipelining", "register insertion"]


@pytest.fixture(scope="module")
def default_harness(default_design):
    from mapper.simulate import build_harness

    return build_harness(default_design)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("app", APPS)
def test_app_closes_at_900_mhz_and_matches_golden(default_design, default_harness, tmp_path,
                                                   app, seed):
    from mapper.flow import AppParams, FlowParams, RunParams, run_app
    from mapper.pipeline import PipelineParams
    from mapper.place import PlaceParams

    run = run_app(RunParams(AppParams(app, 64, 64), default_design, tmp_path,
                            FlowParams(place=PlaceParams(seed=seed),
                                       pipeline=PipelineParams(register_pe_inputs=True,
                                                               target_period_ps=1e6 / 900))))
    rep = run.report                       # run_app raised unless bit-exact vs both goldens
    assert rep["match"] == {"numpy": True, "halide": True}
    assert rep["timing"]["fmax_mhz"] >= 900.0
    passes = run.flow.pipelined.passes
    assert [p.name for p in passes] == PASSES
    assert passes[-1].fmax_mhz == pytest.approx(rep["timing"]["fmax_mhz"], abs=0.01)
    assert passes[-1].fmax_mhz >= passes[0].fmax_mhz
    # the output stream starts exactly the reported pipelining latency after the ideal one
    assert rep["latency"]["extra_cycles"] == max(run.flow.pipelined.output_latency.values())
    assert (tmp_path / "timing.png").stat().st_size > 10_000
    # the bitstream was proved (Canal SMT model) before simulation (times: bench_verify.py)
    proof = rep["bitstream_proof"]
    assert proof["proved"] is True and proof["nets"] == len(run.flow.pipelined.routing.nets)
