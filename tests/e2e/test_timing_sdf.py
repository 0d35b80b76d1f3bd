"""Issue 40 item 4: the measured timing model against SDF-annotated gate-level simulation
(Cascade §VI-A) on the shipped 8x8 design with the measured model
(configs/small_measured.toml).

Three paths of PE tile (1, 1) -- a switch-box hop through the register bypass, a
connection box into the PE configured as ``coreir.add`` (the other operand 1, so the carry
chain ripples) and a pipeline register through its register mux -- are configured through
the tile's config bus and simulated by Icarus Verilog on the yosys netlist with OpenSTA's
SDF, at periods decreasing by 0.5 ps. The model must never be faster than the simulation
(its figure >= the failing period) on any path, and the error is reported."""
from __future__ import annotations

import json

from garnet.sta import sdf


def test_the_measured_model_is_pessimistic_against_sdf_simulation(measured_small_design,
                                                                  tmp_path):
    timing = json.loads((measured_small_design / "timing.json").read_text())
    assert timing["source"] == "measured"
    results = sdf.validate(measured_small_design, tmp_path / "sdf", (1, 1))
    by = {r["path"]: r for r in results}
    assert set(by) == {"sb", "reg", "cb_add"}
    for r in results:
        # pessimistic to the sweep's resolution: the SDF gives each arc its delay at its
        # pin's worst slew, which can exceed the STA's path figure by a fraction of a ps
        assert r["model_ps"] >= r["failing_ps"] - sdf.STEP_PS > 0, r
        assert -0.5 <= r["error_pct"] < 100.0, r
    # the hop is timed on this very netlist: the model and the simulation agree closely
    assert by["sb"]["error_pct"] < 2.0
    assert by["sb"]["classes"] == ["sb:pe:16:N->S"]
    assert by["sb"]["model_ps"] == timing["classes"]["sb:pe:16:N->S"]
    assert by["cb_add"]["model_ps"] == round(timing["classes"]["cb:pe"]
                                             + timing["pe_ops"]["coreir.add"], 2)
    # a PE add is most of a 16-bit carry chain: far longer than one switch-box hop
    assert by["cb_add"]["failing_ps"] > 3 * by["sb"]["failing_ps"]
