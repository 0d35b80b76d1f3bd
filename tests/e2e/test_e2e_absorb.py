"""Register-chain absorption on the generated RTL: a kernel whose short branch (the input
pixel) meets the end of a 12-PE chain needs ~10 balancing registers once every PE input is
registered (`--fmax 900`); `--absorb 4` replaces them by a MEM delay line and the design
still matches numpy and Halide bit for bit on Verilator, with the latency it reports."""
from __future__ import annotations

import json

import pytest

from mapper.frontend.dsl import Func, Input, Pipeline, UInt16, Var


def _chain(width: int = 16, height: int = 16, unroll: int = 1) -> Pipeline:
    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (width, height))
    f = Func("chain")
    a = inp[x, y]
    t = a
    for k in range(6):
        t = (t * 3) ^ (k + 1)
    f[x, y] = t + a
    return Pipeline(f, "chain", unroll)


def _params(design, out, seed: int, absorb: int, resume: str = "map"):
    from mapper.params import AppParams, FlowParams, RunParams
    from mapper.backend.pipeline import PipelineParams
    from mapper.backend.place import PlaceParams

    return RunParams(AppParams("chain", 16, 16), design, out, FlowParams(
        place=PlaceParams(seed=seed), absorb_chains=absorb,
        pipeline=PipelineParams(register_pe_inputs=True, target_period_ps=1e6 / 900)),
        resume_from=resume)


def test_delay_line_replaces_a_register_chain_bit_exact(small_design, harness, tmp_path,
                                                        monkeypatch):
    from mapper import apps
    from mapper.backend.absorb import balancing_chains
    from mapper.stages import load_flow
    from mapper.flow import run_app
    from mapper.collateral import load_collateral

    monkeypatch.setitem(apps.APPS, "chain", _chain)
    for seed in (0, 3):
        out = tmp_path / f"s{seed}"
        r = run_app(_params(small_design, out, seed, 4))
        assert r.report["match"] == {"numpy": True, "halide": True}
        rep = json.loads((out / "pnr_report.json").read_text())
        ab = rep["absorption"]
        assert ab["kept"] and ab["rounds"][0]["kept"] and ab["min_chain"] == 4
        names = [p["pass"] for p in rep["passes"]]
        assert names == ["balance", "compute pipelining", "register insertion", "ALAP",
                         "register absorption"]
        before, after = rep["passes"][3], rep["passes"][4]
        assert after["registers"] < before["registers"] == ab["registers_before"]
        assert after["fmax_mhz"] >= 900 and after["registers"] == ab["registers_after"]
        lines = rep["delay_lines"]
        # the input pixel's branch into the final add is the one cut
        assert lines and any(d["net"].startswith("input") for d in lines)
        pr = r.flow.pipelined
        for d in lines:
            # the shortest delay plus what branch-delay matching read it later by
            assert d["cycles"] == pr.packed.instances[d["mem"]].config["balance_delay"] + \
                pr.mem_absorbed[(d["mem"], "data_out_0")]
            assert d["cycles"] >= 4
        # no PE sink keeps a chain as long as the one absorbed
        chains = balancing_chains(r.flow.pipelined)
        assert max((k for _n, k in chains.values()), default=0) < max(
            d["cycles"] for d in lines)
        # the files on disk are the kept design's: resuming at the bitstream runs it again
        flow = load_flow(out, load_collateral(small_design))
        # the unpipelined baseline is the design's before absorption, kept in the files
        assert flow.pipelined.unpipelined.period_ps == pytest.approx(pr.unpipelined.period_ps)
        assert rep["timing_unpipelined"]["fmax_mhz"] * 3 <= after["fmax_mhz"]
        assert set(flow.packed.instances) == set(pr.packed.instances)
        assert set(flow.placement.sites) == set(pr.packed.instances)
        again = run_app(_params(small_design, out, seed, 4, "bitstream"))
        assert again.report["match"] == {"numpy": True, "halide": True}
        assert again.report["cycles"] == r.report["cycles"]


def test_absorb_below_the_memory_minimum_is_refused_before_mapping(small_design, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    res = subprocess.run([str(Path(sys.executable).with_name("cgra")), "run", "pointwise",
                          "--design", str(small_design), "--out", str(tmp_path / "run"),
                          "--fmax", "900", "--absorb", "3"], capture_output=True, text=True)
    assert res.returncode == 2
    assert "use --absorb 4 or more" in res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_back_end_in_memory_keeps_or_reports(small_design, monkeypatch):
    """`back_end` (no files) with `absorb_chains`: the kept design's packed netlist,
    placement and bitstream include the delay line; with a threshold no chain reaches, the
    design is unchanged and the report says why."""
    from mapper import apps
    from mapper.collateral import load_collateral
    from mapper.params import AppParams, FlowParams
    from mapper.closure import back_end
    from mapper.flow import map_app
    from mapper.backend.pipeline import PipelineParams
    from mapper.backend.place import PlaceParams

    monkeypatch.setitem(apps.APPS, "chain", _chain)
    coll = load_collateral(small_design)
    nl = map_app(AppParams("chain", 16, 16), coll).netlist
    pp = PipelineParams(register_pe_inputs=True, target_period_ps=1e6 / 900)
    fr = back_end(nl, coll, FlowParams(place=PlaceParams(seed=1), pipeline=pp,
                                       absorb_chains=4))
    assert fr.absorption["kept"]
    dly = [n for n in fr.packed.instances if n.startswith("dly_")]
    assert dly and all(n in fr.placement.sites for n in dly)
    assert all(n in fr.pipelined.packed.instances for n in dly)
    assert all(any(f"mem {d} (core)" in e.what for e in fr.bitstream.entries) for d in dly)
    assert fr.pipelined.passes[-1].name == "register absorption"
    assert "register_absorption" in fr.seconds

    fr = back_end(nl, coll, FlowParams(place=PlaceParams(seed=1), pipeline=pp,
                                       absorb_chains=50))
    assert not fr.absorption["kept"] and fr.absorption["delay_lines"] == 0
    assert fr.absorption["rounds"] == [{"delay_lines": 0, "kept": False, "reason":
                                        "no net carries 50 or more balancing registers"}]
    assert [p.name for p in fr.pipelined.passes] == ["balance", "compute pipelining",
                                                     "register insertion", "ALAP"]
    assert not any(n.startswith("dly_") for n in fr.packed.instances)
