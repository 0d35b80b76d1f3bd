"""Run a dataflow program on a generated ready-valid array of dataflow PEs (issue 35, item 3):
:func:`mapper.dataflow.array.compile_program`, then the back end (pack, place, route,
pipeline, bitstream: :mod:`mapper.backend`), the bitstream proof of ``cgra verify`` (z3: every
routed net's selects, and valid and ready on every ready-valid segment,
:func:`mapper.backend.verify.verify`), then the design's Verilator model with the
ready-valid stream harness (:mod:`mapper.sim.rv_harness`) under random input stalls and
output backpressure, each IO socket moving exactly its stream's tokens. The final DRAM
contents (the host writes each output token at its address) must equal the sequential
interpreter's bit for bit; the RTL's cycles are reported next to the token-level
simulator's (:func:`mapper.dataflow.sim.simulate`, SARA's virtual units with link latency 1,
before mapping) and the model's of the mapped program on its routes under the same stall
draws (:func:`mapper.dataflow.array_model.predict_run`, ``cycles.array_model``), and
the clock the routed program closes at (``timing``: period, Fmax and the delay model that
times it, as ``pipelined.json`` holds them).

:func:`run_program` returns a :class:`ProgramRun` and writes ``dataflow_run.json``
(schema ``mapper.dataflow_run/1``) to its ``out`` directory, with the stage files of a
mapped app (``netlist.json``, ``app.json`` of kind ``dataflow``, ``packed.json`` ...
``pipelined.json``, ``bitstream.json``, ``<program>.bs``: ``cgra verify DESIGN
<out>/<program>.bs`` proves the bitstream as for any run) and the harness's files
(``sim.bs``, ``sim.stim``, ``sim.out``).

Errors: :class:`~cgra.errors.MappingError` for a program the array does not run (the
compiler's refusals) or does not hold (naming the tile kind and the shortfall), a design
whose PE is not a dataflow PE; :class:`~cgra.errors.PlacementError` /
:class:`~cgra.errors.RoutingError` from the back end; :class:`~cgra.errors.SimulationError`
for a deadlock (the harness's bound) or a result that differs from the interpreter (naming
the DRAM, the first index, the expected and the received word).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from cgra.errors import MappingError, SimulationError
from mapper.backend.bitstream import generate
from mapper.backend.pack import pack
from mapper.backend.pipeline import pipeline
from mapper.backend.place import PlaceParams, place, site_capacity
from mapper.backend.route import route_design
from mapper.backend.verify import verify
from mapper.collateral import Collateral, load_pe_model
from mapper.dataflow.array import ArrayProgram, compile_program
from mapper.dataflow.array_model import predict_run
from mapper.dataflow.cmmc import cmmc
from mapper.dataflow.lower import lower
from mapper.dataflow.program import Program
from mapper.dataflow.sim import simulate
from mapper import stages as st
from garnet.collateral import file_sha256
from mapper.sim.run import io_port
from mapper.sim.verilator import SimParams, build_harness, run_harness

RUN_SCHEMA = "mapper.dataflow_run/1"


@dataclass
class ProgramRun:
    """One run: the compiled program, the RTL's stream cycles (``cycles``: from the first
    stream cycle to the last output token), the token-level simulator's (``sim_cycles``),
    the cycles the model of the mapped program predicts (``model_cycles``), input stall and
    output backpressure cycles, the DRAMs after the run (``memories``),
    stage seconds and the report written."""
    program: ArrayProgram
    cycles: int
    sim_cycles: int
    #: the mapped program's predicted cycles (:func:`mapper.dataflow.array_model.predict_run`)
    model_cycles: int
    stalls: tuple[int, int]
    memories: dict[str, np.ndarray]
    seconds: dict[str, float]
    report: dict[str, Any]


def dataflow_pe(coll: Collateral) -> type:
    """The PE class of ``coll`` when it is a dataflow PE (a
    :func:`peak.examples.dataflow_pe.make_dataflow_pe` class); :class:`MappingError`
    otherwise."""
    spec = load_pe_model(coll.pe)
    if not (hasattr(spec, "Chain") and hasattr(spec, "levels") and
            getattr(spec, "__qualname__", "").startswith("DataflowPE")):
        raise MappingError(f"design {coll.name}: its PE ({coll.pe.spec}) is not a dataflow PE; "
                           f"dataflow programs run on a ready-valid array of "
                           f"peak.examples.dataflow_pe PEs (configs/small_df.toml)")
    return spec


def check_fits(ap: ArrayProgram, coll: Collateral) -> None:
    """:class:`MappingError` naming each tile kind the program needs more of than the array
    has, and by how much."""
    caps = site_capacity(coll)
    need: dict[str, int] = {}
    for inst in ap.netlist.instances.values():
        need[inst.tag] = need.get(inst.tag, 0) + 1
    names = {"p": "PE", "I": "IO"}
    short = [f"{need[t] - len(caps.get((t,), {}))} more {names.get(t, t)} tiles ({need[t]} "
             f"needed, {len(caps.get((t,), {}))} on the array)"
             for t in sorted(need) if need[t] > len(caps.get((t,), {}))]
    if short:
        raise MappingError(f"dataflow program {ap.name!r} does not fit design {coll.name}: "
                           f"it needs {'; '.join(short)}; use a larger array or a lower par")


def _save_stages(run_dir: Path, coll: Collateral, ap: ArrayProgram, packed, pl, rr, pr, bs,
                 params: dict[str, Any]) -> None:
    """The run directory's stage files, as a mapped app's (:mod:`mapper.stages`):
    ``netlist.json``, ``app.json`` (kind ``dataflow``), ``packed.json``,
    ``placement.json`` (and ``<program>.place``), ``routing.json`` (and
    ``<program>.route``), ``pipelined.json``, ``bitstream.json`` and ``<program>.bs``, so
    ``cgra verify DESIGN <run>/<program>.bs`` proves the bitstream as for any run; files of
    an earlier run in ``run_dir`` are removed first."""
    st.clear_run_dir(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    net = st.stage_file(run_dir, "map")
    ap.netlist.save(net)
    st.write_doc(run_dir / "app.json", {
        "schema": st.APP_SCHEMA, "name": ap.name, "params": params,
        "design": str(coll.root) if coll.root else coll.name, "design_name": coll.name,
        "design_id": coll.design_id, "kind": "dataflow",
        "units": {u: len(p) for u, p in sorted(ap.units.items())},
        "netlist_sha256": file_sha256(net)})
    st.save_packed(run_dir, coll, packed)
    st.save_placement(run_dir, coll, pl)
    st.save_routing(run_dir, coll, rr)
    st.save_pipelined_design(run_dir, coll, pr)
    st.save_bitstream(run_dir, coll, bs)


def run_program(program: Program, inputs: dict[str, np.ndarray], coll: Collateral,
                out: str | Path, *, stall_in: float = 0.0, stall_out: float = 0.0,
                stall_seed: int = 0, place_seed: int = 0,
                credits: Mapping[str, int] | None = None,
                hierarchy: str = "auto") -> ProgramRun:
    """Simulate ``program`` with the token-level simulator, then compile, place, route and
    run it on the design of ``coll`` (module docstring); harness files and
    ``dataflow_run.json`` go to ``out``. Stall probabilities are per cycle and socket
    (0..1). ``credits``: initial credits overriding CMMC's (as
    :func:`mapper.dataflow.sim.simulate`): a program that deadlocks by construction (a credit
    removed) is refused by the simulator before anything is placed or built.
    ``hierarchy``: how the Verilator model is built (:attr:`SimParams.hierarchy`; "auto"
    takes tile blocks on arrays of big tiles such as configs/small_df.toml's)."""
    secs: dict[str, float] = {}
    t = time.perf_counter()
    vudfg = lower(program)
    try:
        ref = simulate(vudfg, cmmc(vudfg), inputs, seed=0, latency=(1, 1), credits=credits)
    except SimulationError as exc:
        raise SimulationError(f"{program.name}: the token-level simulator stops before any "
                              f"RTL is built: {exc}") from None
    secs["token_simulator"] = time.perf_counter() - t
    t = time.perf_counter()
    spec = dataflow_pe(coll)
    width = max(coll.graphs)
    ap = compile_program(program, inputs, spec, width, vudfg)
    check_fits(ap, coll)
    if coll.design is None or coll.design.fifo_tokens != 0:
        raise MappingError(f"design {coll.name}: its ready-valid FIFO sites start with a token "
                           f"(fifo_tokens = 1, the stencil flow's streams); a dataflow "
                           f"program's streams need them empty: set fifo_tokens = 0 "
                           f"(configs/small_df.toml) and regenerate")
    secs["compile"] = time.perf_counter() - t
    t = time.perf_counter()
    packed = pack(ap.netlist, coll)
    pl = place(packed, coll, PlaceParams(seed=place_seed))
    rr = route_design(packed, pl, coll)
    pr = pipeline(packed, pl, rr, coll)
    bs = generate(pr.packed, pl, pr.routing, coll)
    secs["place_and_route"] = time.perf_counter() - t
    t = time.perf_counter()
    proof = verify(bs.pairs(), pr, coll)       # as `cgra verify`: selects, valid and ready
    secs["verify"] = time.perf_counter() - t
    run_dir = Path(out)
    _save_stages(run_dir, coll, ap, packed, pl, rr, pr, bs,
                 {"stall_in": stall_in, "stall_out": stall_out, "stall_seed": stall_seed,
                  "place_seed": place_seed})
    t = time.perf_counter()
    params = SimParams(stall_in=stall_in, stall_out=stall_out, stall_seed=stall_seed,
                       hierarchy=hierarchy)
    harness = build_harness(coll.root, params)
    secs["verilator_build"] = harness.build_seconds
    socket = {n: io_port("I", "in" if n in ap.inputs else "out", pl.sites[n], width=width)
              for n in (*ap.inputs, *ap.outputs)}
    counts = {socket[n]: len(w) for n, w in ap.inputs.items()}
    counts |= {socket[n]: c for n, c in ap.counts().items()}
    rows = max(counts.values())
    stim = {socket[n]: np.pad(w, (0, rows - len(w)))
            for n, w in ap.inputs.items()}
    outs = [socket[n] for n in sorted(ap.outputs)]
    sim = run_harness(harness, bs.pairs(), stim, outs, rows, run_dir, params, tokens=counts)
    secs["simulation"] = sim.seconds
    tokens = {n: sim.outputs[socket[n]][:c] for n, c in ap.counts().items()}
    got = ap.scatter(tokens)
    for dram, arr in sorted(got.items()):
        want = ap.golden[dram]
        bad = np.argwhere(arr != want)
        if len(bad):
            i = tuple(int(v) for v in bad[0])
            raise SimulationError(f"{program.name} on {coll.name}: DRAM {dram!r} differs from "
                                  f"the sequential interpreter at {len(bad)} index(es); first "
                                  f"{i}: expected {int(want[i])}, the array wrote "
                                  f"{int(arr[i])} (stall seed {stall_seed}, p_in {stall_in}, "
                                  f"p_out {stall_out}); files in {run_dir}")
    cycles = int(sim.handshake["cycles"])
    t = time.perf_counter()
    model = predict_run(coll, spec, pr.packed, pl.sites, pr.routing, run_dir)
    secs["array_model"] = time.perf_counter() - t
    routes = pr.routing.routes()
    report = {
        "schema": RUN_SCHEMA, "program": program.name, "design": coll.name,
        "bit_exact": True,
        "units": {u: len(p) for u, p in sorted(ap.units.items())},
        "pes": len(ap.pes), "io": {"in": len(ap.inputs), "out": len(ap.outputs)},
        "routes": {"static": len(routes) - len(pr.routing.dynamic or {}),
                   "dynamic": len(pr.routing.dynamic or {})},
        "bitstream_proof": proof.to_dict(),
        "tokens": {"in": int(sum(len(w) for w in ap.inputs.values())),
                   "out": int(sum(ap.counts().values()))},
        "stalls": {"seed": stall_seed, "p_in": stall_in, "p_out": stall_out,
                   "input_stall_cycles": int(sim.handshake["input_stall_cycles"]),
                   "backpressure_cycles": int(sim.handshake["output_backpressure_cycles"])},
        "timing": {"period_ps": round(pr.timing.period_ps, 2),
                   "fmax_mhz": round(pr.timing.fmax_mhz, 2), "model": pr.timing.model,
                   "critical_path": [n for n, _ in pr.timing.path]},
        "cycles": {"rtl": cycles, "token_simulator": int(ref.cycles),
                   "ratio": round(cycles / max(1, ref.cycles), 4),
                   "simulator": "mapper.dataflow.sim, link latency 1",
                   "array_model": model.cycles,
                   "array_model_ratio": round(cycles / max(1, model.cycles), 4),
                   "array_model_stalls": [model.input_stall_cycles,
                                          model.output_backpressure_cycles]},
        "verilator": {"key": harness.key, "cached": harness.cached,
                      "build_seconds": round(harness.build_seconds, 3),
                      "hier_tiles": list(harness.hier_tiles)},
        "seconds": {k: round(v, 4) for k, v in secs.items()}}
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "dataflow_run.json").write_text(json.dumps(report, indent=1) + "\n")
    return ProgramRun(ap, cycles, int(ref.cycles), model.cycles,
                      (report["stalls"]["input_stall_cycles"],
                       report["stalls"]["backpressure_cycles"]), got, secs, report)
