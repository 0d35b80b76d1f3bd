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

from canal.rv_netsim import PortRef, StreamRun, simulate_streams
from cgra.errors import CollateralError
from garnet.collateral import RV_IO_SOCKETS, read_design_info, read_json
from mapper.collateral import Collateral, load_collateral
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


def predict_handshake(design: str | Path, run_dir: str | Path,
                      coll: Collateral | None = None) -> StreamRun:
    """The model's run of the stream phase of ``run_dir`` (a `cgra run` on the ready-valid
    ``design``, whose collateral ``coll`` is read when not given): cycles, input stall and
    output backpressure cycles, tokens, per-node words.
    Raises :class:`CollateralError` when the design is not ready-valid or a file is missing
    or malformed, :class:`cgra.errors.SimulationError` when the model never finishes (the
    harness's deadlock bound)."""
    d, run = Path(design), Path(run_dir)
    info = read_design_info(d)
    if not is_handshake_design(info.ports):
        raise CollateralError(f"{d}: not a ready-valid design (its top has no handshake "
                              f"sockets); the cycle model predicts ready-valid runs only")
    _src, ins, outs = rv_harness_source(info.top, info.ports)
    stim = run / "sim.stim"
    if not stim.is_file():
        raise CollateralError(f"{stim} is missing; run `cgra run` on {d} first")
    head = dict(line.split(" ", 1) for line in
                stim.read_text().split("data\n", 1)[0].strip().splitlines())
    try:
        tokens = int(head["cycles"])
        seed, p_in, p_out = (int(v) for v in head["stalls"].split())
        inputs = [int(k) for k in head["in"].split()]
        outputs = [int(k) for k in head["out"].split()]
    except (KeyError, ValueError) as exc:
        raise CollateralError(f"{stim}: malformed stimulus header ({exc}); run `cgra run` "
                              f"again") from None
    coll = coll if coll is not None else load_collateral(d)
    width_ports = {b.format(w=w): a.format(w=w) for w in coll.graphs
                   for a, b in RV_IO_SOCKETS.items()}
    pipe = read_json(run / "pipelined.json", f"run `cgra run` on {d} first")
    routes = {n["name"]: [p["nodes"] for p in n["paths"]] for n in pipe["routing"]["nets"]}
    return simulate_streams({w: g.ig for w, g in coll.graphs.items()}, routes,
                            [socket_port(ins[k], width_ports) for k in inputs],
                            [socket_port(outs[k], width_ports) for k in outputs],
                            tokens, seed, p_in, p_out)


__all__ = ["predict_handshake", "socket_port"]
