"""The stream phase of a `cgra run` on a ready-valid design predicted by the cycle-level model
of the network (:func:`canal.rv_netsim.simulate_streams`; issue 33, item 5), from the run's
own files: the routes of ``pipelined.json`` (every pipeline register a FIFO site holding its
initial token), the stimulus header of ``sim.stim`` (tokens per stream, the driven inputs
and sampled outputs, the stall seed and probabilities) and the design's top ports (the
harness's socket order, :func:`mapper.sim.rv_harness.rv_harness_source`). The model draws the
harness's random stalls in the harness's order, so its cycles, stall and backpressure
cycles are the RTL's (tests/e2e/test_ready_valid.py checks them against Verilator), in
seconds of Python instead of a Verilator build.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping, Sequence

from canal.rv_netsim import PortRef, RateModel, StreamRun, simulate_streams
from cgra.errors import CollateralError
from garnet.collateral import RV_IO_SOCKETS, read_design_info, read_json
from mapper.backend.dynamic import dynamic_model
from mapper.backend.nets import DynamicRoute
from mapper.collateral import Collateral, load_collateral
from mapper.stages import routing_from_json
from mapper.sim.rv_harness import is_handshake_design, rv_harness_source

_SOCKET = re.compile(r"(.+)_X([0-9A-F]{2})_Y([0-9A-F]{2})")


def socket_port(socket: str, width_ports: dict[str, str]) -> PortRef:
    """The IO core port behind a top socket ``<name>_X<xx>_Y<yy>`` (hex): (port, x, y), the
    socket prefix mapped back through ``width_ports`` (socket prefix -> core port)."""
    m = _SOCKET.fullmatch(socket)
    if m is None or m[1] not in width_ports:
        raise CollateralError(f"top port {socket} is not an IO socket of a ready-valid array "
                              f"(<{'|'.join(sorted(width_ports))}>_X<xx>_Y<yy>)")
    return width_ports[m[1]], int(m[2], 16), int(m[3], 16)


def _stim_header(stim: Path, design: Path) -> dict[str, str]:
    """The header lines of ``sim.stim`` (up to ``data``; the stimulus rows are not read)."""
    if not stim.is_file():
        raise CollateralError(f"{stim} is missing; run `cgra run` on {design} first")
    head = {}
    with open(stim) as f:
        for line in f:
            if line.strip() == "data":
                break
            key, _, value = line.strip().partition(" ")
            head[key] = value
    return head


def predict(coll: Collateral, routes: Mapping[str, Sequence[Sequence[str]]],
            inputs: Sequence[str], outputs: Sequence[str], run_dir: str | Path,
            dynamic: Mapping[str, DynamicRoute] | None = None,
            rates: Mapping[tuple[int, int], RateModel] | None = None) -> StreamRun:
    """The model's run of the stream phase of ``run_dir``, whose ``sim.stim`` header gives
    the tokens per stream (``cycles``, or one count per driven input and sampled output on
    its ``tokens`` line), the driven inputs and sampled outputs (indices into ``inputs`` /
    ``outputs``, the harness's top sockets) and the stall seed and probabilities; ``routes``:
    net -> node-id paths of the run (its pipelined routing); ``dynamic``: its nets on the
    dynamic layer of a hybrid array (:mod:`canal.dynamic`); ``rates``: tile -> the rate
    model of its core (a dataflow PE's, :func:`mapper.dataflow.array_model.pe_rates`). The
    FIFO sites start with the design's ``fifo_tokens``. Raises as
    :func:`predict_handshake`."""
    stim = Path(run_dir) / "sim.stim"
    head = _stim_header(stim, coll.root)
    try:
        tokens = int(head["cycles"])
        seed, p_in, p_out = (int(v) for v in head["stalls"].split())
        driven = [int(k) for k in head["in"].split()]
        sampled = [int(k) for k in head["out"].split()]
        listed = [int(v) for v in head.get("tokens", "0").split()]
        if listed[0] not in (0, len(driven) + len(sampled)) or len(listed) != 1 + listed[0]:
            raise ValueError(f"'tokens {head.get('tokens')}' does not give one count per "
                             f"stream")
    except (KeyError, ValueError) as exc:
        raise CollateralError(f"{stim}: malformed stimulus header ({exc}); run `cgra run` "
                              f"again") from None
    counts = None
    if listed[0]:
        counts = (listed[1:1 + len(driven)], listed[1 + len(driven):])
    width_ports = {b.format(w=w): a.format(w=w) for w in coll.graphs
                   for a, b in RV_IO_SOCKETS.items()}
    fifo_tokens = 1 if coll.design is None else coll.design.fifo_tokens
    return simulate_streams({w: g.ig for w, g in coll.graphs.items()}, routes,
                            [socket_port(inputs[k], width_ports) for k in driven],
                            [socket_port(outputs[k], width_ports) for k in sampled],
                            tokens, seed, p_in, p_out, fifo_tokens=fifo_tokens,
                            dynamic=dynamic_model(coll, dynamic or {}), counts=counts,
                            rates=rates)


def predict_handshake(design: str | Path, run_dir: str | Path) -> StreamRun:
    """The model's run of the stream phase of ``run_dir`` (a `cgra run` on the ready-valid
    ``design``) from its files: cycles, input stall and output backpressure cycles, tokens,
    per-node words. Raises :class:`CollateralError` when the design is not ready-valid or a
    file is missing or malformed, :class:`cgra.errors.SimulationError` when the model never
    finishes (the harness's deadlock bound)."""
    d, run = Path(design), Path(run_dir)
    info = read_design_info(d)
    if not is_handshake_design(info.ports):
        raise CollateralError(f"{d}: not a ready-valid design (its top has no handshake "
                              f"sockets); the cycle model predicts ready-valid runs only")
    _src, ins, outs = rv_harness_source(info.top, info.ports)
    pipe = read_json(run / "pipelined.json", f"run `cgra run` on {d} first")
    routes = {n["name"]: [p["nodes"] for p in n["paths"]] for n in pipe["routing"]["nets"]}
    dyn = routing_from_json(pipe["routing"], str(run / "pipelined.json")).dynamic
    return predict(load_collateral(d), routes, ins, outs, run, dyn)


__all__ = ["predict", "predict_handshake", "socket_port"]
