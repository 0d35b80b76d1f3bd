"""Options validated in one place (issue 42, item 3) and capacity refused before the work:
every numeric parameter is finite and in range with the range in the message
(mapper.params.RANGES), a run over the simulated-cycle budget is refused before anything
runs, an unroll far beyond the array is refused before memory and compute mapping, and
``--from`` refuses a run directory made for another app or other mapping options."""
from __future__ import annotations

import dataclasses
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cgra.errors import ConfigError, MappingError
from dse.run import Executor
from dse.sweep import load_sweep
from mapper import flow, ir
from mapper.apps import lower_app
from mapper.mapping.compute import min_pe_count
from mapper.backend.place import PlaceParams
from mapper.backend.pipeline import PipelineParams
from mapper.collateral import load_collateral
from mapper.params import (DEFAULT_MAX_SIM_CYCLES, AppParams, FlowParams, RunParams,
                           SimOptions)
from mapper.sim.verilator import SimParams


# ---------------------------------------------------------------------------- ranges
@pytest.mark.bad_refused
@pytest.mark.parametrize("params, words", [
    (AppParams("gaussian", unroll=0), ["--unroll = 0", "an integer in [1, 4096]"]),
    (AppParams("gaussian", width=-5), ["--width = -5", "[1, 4096]"]),
    (AppParams("gaussian", height=5000), ["--height = 5000", "[1, 4096]"]),
    (AppParams("gaussian", seed=-1), ["--seed = -1", "an integer >= 0"]),
    (AppParams("gaussian", vectors=-3), ["--vectors = -3", "[0, 1e+07]"]),
    (AppParams("gaussian", threshold=2.5), ["--threshold = 2.5", "an integer"]),
    (AppParams("resnet_layer", channels=0), ["--channels = 0", "[1, 4096]"]),
    (AppParams("gaussian", unroll=True), ["--unroll = True"]),
    (FlowParams(place=PlaceParams(seed=-2)), ["--seed = -2", ">= 0"]),
    (FlowParams(place=PlaceParams(alpha=math.nan)), ["--alpha = nan", "[0, 16]"]),
    (FlowParams(pipeline=PipelineParams(target_period_ps=math.inf)), ["--fmax", "inf"]),
    (FlowParams(pipeline=PipelineParams(target_period_ps=0.0)), ["--fmax", ">= 1"]),
    (FlowParams(place_attempts=0), ["FlowParams.place_attempts = 0", "[1, 1000]"]),
    (FlowParams(absorb_chains=-1), ["--absorb = -1", ">= 0"]),
    (FlowParams(alphas=(1.0, -2.0)), ["--alpha-sweep value -2.0", "(0, 16]"]),
    (SimOptions(tensor_seed=-1), ["--tensor-seed = -1"]),
    (SimOptions(max_cycles=0), ["--max-cycles = 0", ">= 1"]),
    (SimOptions(sim=SimParams(jobs=0)), ["SimParams.jobs = 0", "[1, 1024]"]),
    (SimOptions(sim=SimParams(run_timeout_s=-1.0)), ["SimParams.run_timeout_s = -1.0"]),
    (SimOptions(sim=SimParams(build_timeout_s=math.nan)), ["SimParams.build_timeout_s"]),
])
def test_params_out_of_range(params, words):
    """AppParams, FlowParams (and each stage's params), SimOptions (and SimParams): the
    option, the value and the range in one line."""
    with pytest.raises(ConfigError) as exc:
        params.validate()
    for w in words:
        assert w in str(exc.value)


@pytest.mark.bad_refused
def test_defaults_are_valid():
    RunParams(AppParams("gaussian"), "build/small").validate()
    RunParams(AppParams("resnet_layer", 18, 18, channels=16, block=8), "d",
              flow=FlowParams(alphas=(1.0, 1.5)), sim=SimOptions(sim=SimParams())).validate()


# ---------------------------------------------------------------------------- budgets
@pytest.mark.bad_hang
def test_a_run_over_the_cycle_budget_is_refused_before_any_work(tmp_path):
    """4000 x 4000 at unroll 1 is 16M cycles, over the documented 2048^2 budget: refused
    by run_stages before the design is even read (the design path does not exist)."""
    p = RunParams(AppParams("gaussian", 4000, 4000), tmp_path / "no_such_design",
                  tmp_path / "run")
    with pytest.raises(ConfigError, match=r"streams at least 16000000 cycles, over the "
                                          r"simulation budget of 4194304.*--max-cycles"):
        flow.run_stages(p)
    assert not (tmp_path / "run").exists()
    assert DEFAULT_MAX_SIM_CYCLES == 2048 * 2048
    # unroll 4 brings it to 4M cycles: under the budget (then the missing design is reported)
    ok = dataclasses.replace(p, app=AppParams("gaussian", 4000, 4000, unroll=4))
    with pytest.raises(Exception) as exc:
        flow.run_stages(ok)
    assert "budget" not in str(exc.value) and "no_such_design" in str(exc.value)
    # a raised budget accepts the image
    big = dataclasses.replace(p, sim=SimOptions(max_cycles=16_000_000))
    with pytest.raises(Exception) as exc:
        flow.run_stages(big)
    assert "budget" not in str(exc.value)


@pytest.mark.bad_hang
def test_an_unroll_beyond_the_array_is_refused_before_mapping(small_design, monkeypatch):
    """gaussian at unroll 1000 needs thousands of PEs; the 8x8 design has 42. The bound is
    checked right after the front end: memory mapping (12 s at this unroll) and compute
    mapping (minutes) never start."""
    coll = load_collateral(small_design)

    def never(*_a, **_k):
        raise AssertionError("memory mapping ran before the capacity check")

    monkeypatch.setattr(flow, "map_memory", never)
    with pytest.raises(MappingError, match=r"gaussian at unroll 1000 needs at least \d{4,} "
                                           r"PE tiles .* design small \(8x8\) has 42; use a "
                                           r"smaller unroll"):
        flow.map_app(AppParams("gaussian", 64, 64, unroll=1000, vectors=1000), coll)


@pytest.mark.bad_hang
def test_the_pe_bound_is_a_lower_bound(small_design):
    """On apps that fit, the bound never exceeds the PEs compute mapping uses."""

    coll = load_collateral(small_design)
    for app, unroll in (("gaussian", 1), ("gaussian", 2), ("unsharp", 1), ("pointwise", 4)):
        p = lower_app(app, 32, 32, unroll)
        bound = sum(min_pe_count(ir.unroll_stage(s, unroll).kernel, coll.rules)
                    for s in p.stages)
        used = flow.map_app(AppParams(app, 32, 32, unroll), coll).counts()["pe"]
        assert 1 <= bound <= used, (app, unroll, bound, used)


@pytest.mark.bad_hang
def test_capacity_is_checked_before_the_equivalence_vectors(small_design, monkeypatch):
    """A netlist that needs more MEM/PE tiles than the design has is refused before any
    equivalence vector runs."""
    coll = load_collateral(small_design)
    monkeypatch.setattr(flow, "check_pe_bound", lambda *a: None)   # let it reach mapping

    def never(*_a, **_k):
        raise AssertionError("equivalence vectors ran before the capacity check")

    monkeypatch.setattr(flow, "check_equivalence", never)
    with pytest.raises(MappingError, match=r"needs \d+ PE tiles but design small"):
        flow.map_app(AppParams("harris", 64, 64, unroll=4, vectors=1000), coll)


# ---------------------------------------------------------------------------- --from
@pytest.mark.bad_silent
def test_from_refuses_a_run_directory_of_another_app(small_design, tmp_path):
    run = tmp_path / "run"
    flow.run_stages(RunParams(AppParams("gaussian", 32, 32), small_design, run), until="pack")
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    for app, words in ((AppParams("pointwise", 32, 32), "app 'gaussian' (now 'pointwise')"),
                       (AppParams("gaussian", 64, 64), "width 32 (now 64)"),
                       (AppParams("gaussian", 32, 32, unroll=2), "unroll 1 (now 2)")):
        with pytest.raises(MappingError) as exc:
            flow.run_stages(RunParams(app, small_design, run, resume_from="pack"),
                            until="pack")
        msg = str(exc.value)
        assert msg.startswith(f"--from pack: run directory {run} was mapped with")
        assert words in msg and "drop --from" in msg
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before
    # the same app and options resume (vectors and seed only checked the mapping)
    flow.run_stages(RunParams(AppParams("gaussian", 32, 32, vectors=7, seed=3), small_design,
                              run, resume_from="pack"), until="pack")
    shutil.rmtree(run)


# ---------------------------------------------------------------------------- dse
def _sweep(tmp_path: Path, extra: str) -> Path:
    base = Path(__file__).resolve().parents[2] / "configs" / "small.toml"
    p = tmp_path / "sweep.toml"
    p.write_text(f'[sweep]\nbase = "{base.as_posix()}"\ncache = "cache"\napps = ["gaussian"]\n'
                 f'{extra}\n[grid]\ntracks = [4]\n')
    return p


@pytest.mark.bad_refused
@pytest.mark.parametrize("extra, words", [
    ("workers = -1", ["sweep.workers", "-1 is out of range", "[0, 1024]", "one worker per core"]),
    ("seed = -3", ["sweep.seed", "-3 is out of range", ">= 0"]),
    ("fmax_mhz = nan", ["sweep.fmax_mhz", "nan is out of range"]),
    ("fmax_mhz = inf", ["sweep.fmax_mhz", "inf is out of range"]),
])
def test_sweep_file_numbers_out_of_range(tmp_path, extra, words):

    with pytest.raises(ConfigError) as exc:
        load_sweep(_sweep(tmp_path, extra))
    for w in words:
        assert w in str(exc.value)


@pytest.mark.bad_hang
@pytest.mark.parametrize("workers", [-1, 0, 5000])
def test_dse_workers_out_of_range_is_refused_before_a_cluster(tmp_path, workers):
    """`cgra dse --workers -1` waited forever for a LocalCluster of -1 workers."""

    sweep = load_sweep(_sweep(tmp_path, ""))
    with pytest.raises(ConfigError, match=rf"--workers = {workers} is out of range: give an "
                                          rf"integer in \[1, 1024\]"):
        Executor(sweep, None, workers)
    assert not (tmp_path / "cache").exists()


# ---------------------------------------------------------------------------- the command line
def _cgra(*args, cwd: Path) -> tuple[int, str]:

    exe = Path(sys.executable).with_name("cgra")
    res = subprocess.run([str(exe), *map(str, args)], cwd=cwd, capture_output=True, text=True,
                         timeout=300)
    return res.returncode, res.stderr


@pytest.mark.bad_traceback
@pytest.mark.parametrize("cmd", ["run", "map"])
def test_a_missing_design_is_a_usage_error(tmp_path, cmd):
    """`cgra run gaussian` without --design was a traceback (click >= 8.3 took the option's
    explicit default=None as given)."""
    code, err = _cgra(cmd, "gaussian", cwd=tmp_path)
    assert code == 2 and "Missing option '--design'" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.bad_refused
def test_cli_options_out_of_range(small_design, tmp_path):
    for args, words in ((("map", "gaussian", "--unroll", "-1"), "--unroll = -1"),
                        (("map", "gaussian", "--seed", "-4"), "--seed = -4"),
                        (("map", "gaussian", "--vectors", "-1"), "--vectors = -1"),
                        (("run", "gaussian", "--size", "4000"), "over the simulation budget"),
                        (("run", "gaussian", "--seed", "-1"), "--seed = -1")):
        code, err = _cgra(*args, "--design", small_design, "--out", tmp_path / "run",
                          cwd=tmp_path)
        assert code == 2 and words in err and "Traceback" not in err, (args, err)
        assert not (tmp_path / "run" / "app.json").exists()


@pytest.mark.bad_silent
def test_layer_image_that_would_be_ignored_is_refused(tmp_path):
    """`cgra layer gemm --image x.png` accepted an image gemm never uses."""
    code, err = _cgra("layer", "gemm", "--size", "8", "--channels", "6", "--block", "2",
                      "--image", "/no/such.png", cwd=tmp_path)
    assert code == 2 and "--image /no/such.png: layer gemm's first input" in err
    assert "would be ignored; drop --image" in err
    code, err = _cgra("layer", "resnet_layer", "--image", "/no/such.png", cwd=tmp_path)
    assert code == 2 and "/no/such.png" in err and "Traceback" not in err
