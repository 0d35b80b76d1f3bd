"""End to end on the delay-chain PE (configs/d2_small.toml, peak/examples/cgra_pe_d2.py):
gaussian mapped onto the 8x8 array balances its adder tree with the PE's 2..4-cycle input
delays (DELAY2..DELAY4 in the bitstream) and runs bit-exactly on the RTL in Verilator."""
from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="session")
def gaussian_d2_run(d2_small_design, tmp_path_factory):
    from mapper.params import AppParams, RunParams
    from mapper.flow import run_app

    out = tmp_path_factory.mktemp("d2_apps") / "gaussian"
    return run_app(RunParams(AppParams("gaussian", 64, 64), d2_small_design, out))


def test_gaussian_on_d2_is_bit_exact_on_verilator(gaussian_d2_run):
    from mapper.images import camera_crop

    r = gaussian_d2_run
    assert np.array_equal(r.image, camera_crop(64, 64))
    assert r.output.shape == r.golden_numpy.shape == r.golden_halide.shape == (62, 62)
    assert np.array_equal(r.output.astype(np.int64), r.golden_numpy.astype(np.int64))
    assert np.array_equal(r.output.astype(np.int64), r.golden_halide.astype(np.int64))
    assert r.report["match"] == {"numpy": True, "halide": True}
    assert r.sim.readback_mismatches == []
    assert len(np.unique(r.output)) > 20


def test_gaussian_on_d2_uses_multi_cycle_input_delays(gaussian_d2_run, d2_small_design):
    """At least one PE input is delayed by 2..4 cycles in the PE (a mode the default PE does
    not have), set through the DELAY<k> codes of pe.json in the pipelined design."""
    from mapper.collateral import load_collateral
    from mapper.stages import load_flow
    from mapper.backend.pack import delay_codes, input_delay

    coll = load_collateral(d2_small_design)
    assert delay_codes(coll.pe, "data0_mode") == {0: 0, 1: 1, 2: 3, 3: 4, 4: 5}
    flow = load_flow(gaussian_d2_run.out_dir, coll)
    pr = flow.pipelined
    depths = [input_delay(coll.pe, pi.config, cp)
              for pi in pr.packed.instances.values() if pi.tag == "p"
              for cp in ("data0", "data1")]
    assert max(d for d in depths if d is not None) >= 2
    assert max(pr.pe_input_delay.values()) >= 2
    print(f"\ngaussian on d2_small: balancing regs {len(pr.enabled_regs)}, PE input delays "
          f"{sorted(pr.pe_input_delay.values())}, report {gaussian_d2_run.report['latency']}")


def test_alap_moves_latency_into_the_pes_bit_exact(d2_small_design, tmp_path):
    """With compute pipelining at 900 MHz on the D2 PE (inputs can wait up to 4 cycles),
    the ALAP pass schedules PEs later where that takes balancing registers off their output
    routes: fewer registers at the same Fmax, still balanced, bit-exact on Verilator; and
    with ALAP off the passes end at register insertion with those registers."""
    from mapper.params import AppParams, FlowParams, RunParams
    from mapper.flow import run_app
    from mapper.backend.pipeline import PipelineParams
    from mapper.backend.place import PlaceParams

    def run(alap: bool, out):
        pp = PipelineParams(register_pe_inputs=True, target_period_ps=1e6 / 900, alap=alap)
        return run_app(RunParams(AppParams("gaussian", 64, 64), d2_small_design, out,
                                 FlowParams(place=PlaceParams(seed=1), pipeline=pp)))

    on = run(True, tmp_path / "on")
    assert on.report["match"] == {"numpy": True, "halide": True}
    names = [p.name for p in on.flow.pipelined.passes]
    assert names == ["balance", "compute pipelining", "register insertion", "ALAP"]
    ins, alap = on.flow.pipelined.passes[2:]
    assert alap.registers < ins.registers and alap.fmax_mhz >= 900
    assert alap.fmax_mhz == pytest.approx(on.report["timing"]["fmax_mhz"], abs=0.01)
    off = run(False, tmp_path / "off")
    assert [p.name for p in off.flow.pipelined.passes] == names[:3]
    assert off.flow.pipelined.passes[-1].registers == ins.registers
    # the cycles ALAP moved into the PEs: more input delay there, fewer route registers
    assert sum(on.flow.pipelined.pe_input_delay.values()) > \
        sum(off.flow.pipelined.pe_input_delay.values())
    assert len(on.flow.pipelined.enabled_regs) < len(off.flow.pipelined.enabled_regs)
