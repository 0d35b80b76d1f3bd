"""Issue 33 end to end: `cgra rtl` of a ready-valid configuration, `cgra run` on it under
seeded random input stalls and output backpressure (bit-exact with numpy and Halide, the
stalls in the run summary), `cgra verify` proving valid and ready with the data.

The tiny 4x3 (configs/tiny_rv.toml: model ~15 s) takes the seed sweep, the no-stall
throughput, the proof and the bad inputs; gaussian runs on the shipped 8x8
(configs/small_rv.toml) under stalls in `make bench` (marked ``bench``)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cgra.errors import CollateralError, SimulationError
from mapper.sim.rv_predict import predict_handshake
from mapper.sim.verilator import SimParams, build_harness, run_harness

CGRA = Path(sys.executable).with_name("cgra")


def _cgra(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(CGRA), *map(str, args)], capture_output=True, text=True)


@pytest.fixture(scope="module")
def tiny_rv(design_dir) -> Path:
    return design_dir("tiny_rv")


def _pointwise(design: Path, out: Path, *stalls) -> tuple[subprocess.CompletedProcess, dict]:
    r = _cgra("run", "pointwise", "--design", design, "--size", 16, "--out", out, *stalls)
    assert r.returncode == 0, r.stderr
    return r, json.loads((out / "run_report.json").read_text())


def test_ready_valid_design_collateral(tiny_rv):
    doc = json.loads((tiny_rv / "design.json").read_text())
    assert doc["flow_control"]["tracks"] == {"16": "skid", "1": "skid"}   # FIFO kind per width
    names = {p["name"] for p in doc["ports"]}
    # IO sockets named like the static array's IO ports, each with valid and ready
    for s in ("glb2io_16_X00_Y00", "io2glb_16_X00_Y00"):
        assert {s, f"{s}_valid", f"{s}_ready"} <= names
    rtl = "".join(f.read_text() for f in (tiny_rv / "rtl").glob("*.v"))
    # every FIFO site holds the initial token of the register it replaces
    assert "module RvSkidFifo_w16_t1" in rtl and "head_v <= 1'b1;" in rtl
    assert "module RvSkidFifo_w16 (" not in rtl


def test_stall_seed_sweep_is_bit_exact(tiny_rv, tmp_path):
    """Three stall seeds: three different stall patterns, the same output, bit-exact; every
    run's summary names its seed and probabilities; a seed replays its run."""
    cycles, outs = {}, {}
    for seed in (1, 2, 3):
        r, rep = _pointwise(tiny_rv, tmp_path / f"s{seed}", "--stall-seed", seed)
        assert "16x16 output matches numpy and Halide bit-exactly" in r.stdout
        assert f"ready-valid: random stalls (seed {seed}, input p = 0.3, output p = 0.3)" \
            in r.stdout
        hs = rep["handshake"]
        assert (hs["seed"], hs["p_in"], hs["p_out"], hs["tokens"]) == (seed, 0.3, 0.3, 261)
        assert hs["input_stall_cycles"] > 0 and hs["output_backpressure_cycles"] > 0
        assert hs["cycles"] > hs["tokens"] + 50       # stalls cost cycles
        cycles[seed] = (hs["cycles"], hs["input_stall_cycles"],
                        hs["output_backpressure_cycles"])
        # the cycle-level model of the network (canal.rv_netsim) predicts the run exactly,
        # in every run's report and summary, and from the run's files
        assert hs["model_cycles"] == hs["cycles"]
        assert f"the cycle model of the network predicts {hs['cycles']})" in r.stdout
        model = predict_handshake(tiny_rv, tmp_path / f"s{seed}")
        assert (model.cycles, model.input_stall_cycles, model.output_backpressure_cycles) == \
            cycles[seed]
        outs[seed] = (tmp_path / f"s{seed}" / "sim.out").read_text().split(
            "data", 1)[1].split("edges", 1)[0]
    assert len(set(cycles.values())) == 3
    # token k of every output stream is the same word whatever the stalls
    assert outs[1] == outs[2] == outs[3] and outs[1].count("\n") > 261
    # the same seed replays the same run, also on the model verilated in tile blocks (each
    # tile module once; "auto" keeps this 4x3 flat): the same cycles and the same words
    assert rep["verilator"]["hier_tiles"] == []
    _r, rep = _pointwise(tiny_rv, tmp_path / "again", "--stall-seed", 2,
                         "--model-hierarchy", "tiles")
    hs = rep["handshake"]
    assert (hs["cycles"], hs["input_stall_cycles"], hs["output_backpressure_cycles"]) == \
        cycles[2]
    assert rep["verilator"]["hier_tiles"] == sorted(
        p.stem for p in (tiny_rv / "rtl").glob("RvTile_*.v"))
    assert len(rep["verilator"]["hier_tiles"]) == 3
    assert (tmp_path / "again" / "sim.out").read_bytes() == \
        (tmp_path / "s2" / "sim.out").read_bytes()


def test_no_stalls_sustain_one_word_per_cycle(tiny_rv, tmp_path):
    r, rep = _pointwise(tiny_rv, tmp_path / "free", "--stall-in", 0, "--stall-out", 0)
    hs = rep["handshake"]
    assert hs["input_stall_cycles"] == hs["output_backpressure_cycles"] == 0
    # 261 tokens in 261 cycles: one per cycle from the first; the route's pipeline registers
    # are FIFOs holding their initial tokens, and the wrapped PEs add no cycle
    assert (hs["tokens"], hs["cycles"]) == (261, 261)
    assert rep["match"] == {"numpy": True, "halide": True}


def test_verify_proves_valid_and_ready_and_catches_a_cleared_enable(tiny_rv, tmp_path):
    run = tmp_path / "v"
    _pointwise(tiny_rv, run)
    bs = run / "pointwise.bs"
    r = _cgra("verify", tiny_rv, bs)
    assert r.returncode == 0, r.stderr
    assert "valid/ready proved with the data on 3 ready-valid nets (6 segments between " \
           "FIFOs)" in r.stdout
    # clear the valid enable of the output IO tile's connection box
    doc = json.loads((run / "bitstream.json").read_text())
    e = next(e for e in doc["entries"] if "PORT_f2io_16_en" in e["fields"])
    words = [ln.split() for ln in bs.read_text().splitlines()]
    bad = run / "bad.bs"
    bad.write_text("".join(f"{a} {'00000000' if a == e['addr'] else d}\n" for a, d in words))
    r = _cgra("verify", tiny_rv, bad, "--netlist", run / "pipelined.json")
    assert r.returncode == 2
    err = r.stderr.strip()
    assert "\n" not in err and err.startswith(
        "error: net pointwise_l0_d0: ready-valid handshake not proved: segment RMUX:")
    assert ": valid at PORT:16:2:0:f2io_16 fails (and 1 more); " in err
    assert "the bitstream must set the valid enable" in err
    # the same bitstream on the RTL: the output never sees a valid; the harness stops after
    # 64 T + 10000 cycles and the run names the output instead of hanging
    h = build_harness(tiny_rv)
    assert h.handshake and h.cached
    words = [(int(a, 16), int(d, 16)) for a, d in (ln.split() for ln in
                                                   bad.read_text().splitlines())]
    head, data = (run / "sim.stim").read_text().split("data\n", 1)
    lines = dict(ln.split(" ", 1) for ln in head.splitlines())
    src, port = h.inputs[int(lines["in"])], h.outputs[int(lines["out"])]
    assert (src, port) == ("glb2io_16_X01_Y00", "io2glb_16_X02_Y00")
    with pytest.raises(SimulationError) as exc:
        run_harness(h, words, {src: np.array(data.split()[:261], dtype=np.int64)}, [port],
                    261, tmp_path / "dead", SimParams(stall_in=0, stall_out=0))
    assert str(exc.value) == (f"ready-valid run stalled for good: output {port} has 0 of 261 "
                              f"tokens after {64 * 261 + 10000} cycles (a route's valid or "
                              f"ready is not connected: prove the bitstream with `cgra "
                              f"verify`)")


def test_cycle_model_refuses_a_static_design(small_design, tmp_path):
    with pytest.raises(CollateralError, match="not a ready-valid design"):
        predict_handshake(small_design, tmp_path)


def test_bad_stall_option_is_one_line(tiny_rv, tmp_path):
    r = _cgra("run", "pointwise", "--design", tiny_rv, "--size", 16, "--out", tmp_path / "o",
              "--stall-in", 1.5)
    assert r.returncode == 2
    assert r.stderr.strip() == ("error: --stall-in = 1.5 is out of range: give a number in "
                                "[0, 0.95] (SimOptions.stall_in)")
    assert not (tmp_path / "o").exists()


#: the shipped 8x8's model build and run (~160 s): `make bench` runs it, `make test` does not;
#: CI's ready-valid runs are tiny_rv's above and the hybrid designs' (test_hybrid.py)
@pytest.mark.bench
def test_gaussian_on_the_ready_valid_8x8_under_stalls(design_dir, tmp_path):
    """The shipped ready-valid 8x8: gaussian on a 32x32 camera crop under the default
    stall probabilities, bit-exact against numpy and Halide; every net's handshake proved."""
    design = design_dir("small_rv")
    out = tmp_path / "g"
    r = _cgra("run", "gaussian", "--design", design, "--size", 32, "--out", out,
              "--stall-seed", 7)
    assert r.returncode == 0, r.stderr
    assert "30x30 output matches numpy and Halide bit-exactly" in r.stdout
    assert "ready-valid: random stalls (seed 7, input p = 0.3, output p = 0.3)" in r.stdout
    rep = json.loads((out / "run_report.json").read_text())
    hs = rep["handshake"]
    assert hs["input_stall_cycles"] > 0 and hs["cycles"] > hs["tokens"]
    assert rep["match"] == {"numpy": True, "halide": True}
    assert rep["bitstream_proof"]["ready_valid"]["nets"] == rep["bitstream_proof"]["nets"]
    # the cycle-level model of the network predicts the RTL's cycles and stalls exactly
    # (MEM line buffers, reconvergent adder trees, 1043 tokens under p = 0.3 stalls)
    model = predict_handshake(design, out)
    assert (model.cycles, model.input_stall_cycles, model.output_backpressure_cycles) == \
        (hs["cycles"], hs["input_stall_cycles"], hs["output_backpressure_cycles"])
    assert model.tokens == [1043]
    # without stalls one token per cycle, MEM line buffers and reconvergent adder-tree paths
    # included: the wrapped cores add no cycle, so no branch waits for a slower sibling
    free = tmp_path / "free"
    r = _cgra("run", "gaussian", "--design", design, "--size", 32, "--out", free,
              "--stall-in", 0, "--stall-out", 0)
    assert r.returncode == 0, r.stderr
    hs = json.loads((free / "run_report.json").read_text())["handshake"]
    assert (hs["tokens"], hs["cycles"], hs["tokens_per_cycle"]) == (1043, 1043, 1.0)
    assert predict_handshake(design, free).cycles == 1043
    assert (free / "sim.out").read_text().split("data", 1)[1].split("edges", 1)[0] == \
        (out / "sim.out").read_text().split("data", 1)[1].split("edges", 1)[0]
