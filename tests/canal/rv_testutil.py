"""Shared helpers of the ready-valid tests (test_flow_control.py, test_rv_channel.py): the two
channel tops simulated in Verilator and their models, built once per process and cached by
content under the system temporary directory (reused by later sessions)."""
from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import numpy as np

from canal.flow_control import ChannelConfig, ChannelParams
from canal.flow_sim import (ChannelStimulus, Harness, build_harness, run_harness,
                            simulate_model)

#: 4 hops of mux (fan-in 4) + 2-entry skid FIFO, then a 2-sink fork
SKID = ChannelParams(hops=4, fifo="skid", width=16, mux_height=4, fork=True)
#: 4 hops of mux + split-FIFO half (start, end, start, end), then a 2-sink fork
SPLIT = ChannelParams(hops=4, fifo="split", width=16, mux_height=4, fork=True)
#: 3 hops of mux (fan-in 2) + skid FIFO, one sink, no fork
ODD = ChannelParams(hops=3, fifo="skid", width=16, mux_height=2, fork=False)
#: the models' cache (content-keyed: a changed generator builds a new model)
CACHE = Path(tempfile.gettempdir()) / "cgra-canal-flow-control"


@functools.lru_cache(maxsize=None)
def harness(p: ChannelParams) -> Harness:
    """The built model of ``p`` (built once per process, reused across sessions)."""
    return build_harness(p, CACHE)


def run_rtl(p: ChannelParams, stim: ChannelStimulus, work_dir: Path) -> np.ndarray:
    """The Verilator trace of ``p`` under ``stim``."""
    return run_harness(harness(p), stim, work_dir)


def run_both(p: ChannelParams, stim: ChannelStimulus, work_dir: Path
             ) -> tuple[np.ndarray, np.ndarray]:
    """(Verilator trace, Python model trace) of ``p`` under ``stim``."""
    return run_rtl(p, stim, work_dir), simulate_model(p, stim)


def config(p: ChannelParams, **fields) -> ChannelConfig:
    """:meth:`ChannelConfig.default` of ``p`` with ``fields`` replaced (tuples)."""
    d = ChannelConfig.default(p)
    return ChannelConfig(**{**d.__dict__, **fields})


def first_mismatch(a: np.ndarray, b: np.ndarray) -> str:
    """'' when the traces are equal, else the first differing cycle and rows (a message)."""
    if a.shape != b.shape:
        return f"shapes differ: {a.shape} vs {b.shape}"
    bad = np.nonzero((a != b).any(axis=1))[0]
    if bad.size == 0:
        return ""
    t = int(bad[0])
    return f"{bad.size} cycles differ; first at cycle {t}: rtl {a[t].tolist()} model {b[t].tolist()}"
