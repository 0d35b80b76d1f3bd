"""The stream plan of a run (:func:`mapper.sim.run.stream_plan`): what each top port of the
array is driven with and when each output port is sampled, and the assembly of the sampled
words (or the GLB's output buffers, :mod:`mapper.sim.glb`) into the output images."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from cgra.errors import SimulationError


@dataclass
class StreamPlan:
    """Top-port stimulus and sampling for one run: ``inputs`` port -> values ``[T]``,
    ``outputs``: [(io_out instance, port, cycles ``[n]``, y ``[n]``, x ``[n]``)] (only events
    inside the output box), ``cycles``: ``T`` (last sampled cycle + 1), ``first_output``:
    the first sampled cycle, ``box``: the (first) output's domain ``(x0, x1, y0, y1)``;
    ``stage_of``: io_out instance -> the output stage it streams, ``boxes``: output stage ->
    its domain (several outputs)."""

    inputs: dict[str, np.ndarray]
    outputs: list[tuple[str, str, np.ndarray, np.ndarray, np.ndarray]]
    cycles: int
    first_output: int
    box: tuple[int, int, int, int]
    stage_of: dict[str, str] = field(default_factory=dict)
    boxes: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)

    def assemble(self, samples: dict[str, np.ndarray], app: str = "") -> dict[str, np.ndarray]:
        """Output stage -> its image (int64 ``[y, x]`` over its box) from ``samples`` (top
        port -> values per cycle). Raises :class:`SimulationError` when a pixel is never
        sampled."""
        return self.gather(lambda _name, port, cyc, _ys, _xs: samples[port][cyc], app,
                           "were never sampled (the output programs do not cover the "
                           "domain {box})")

    def gather(self, value: Callable[[str, str, np.ndarray, np.ndarray, np.ndarray],
                                     np.ndarray],
               app: str, missing: str) -> dict[str, np.ndarray]:
        """Output stage -> its image (int64 ``[y, x]`` over its box), each output event's
        pixel from ``value(io_out instance, port, cycles, ys, xs)``. Raises
        :class:`SimulationError` ``"<app>: <n> pixels of output <o> " + missing`` (``{box}``:
        the output's domain) when a pixel of a box is not covered."""
        res, seen = {}, {}
        for o, (x0, x1, y0, y1) in self.boxes.items():
            res[o] = np.zeros((y1 - y0, x1 - x0), np.int64)
            seen[o] = np.zeros(res[o].shape, bool)
        for (name, port, cyc, ys, xs) in self.outputs:
            o = self.stage_of[name]
            x0, _, y0, _ = self.boxes[o]
            res[o][ys - y0, xs - x0] = value(name, port, cyc, ys, xs)
            seen[o][ys - y0, xs - x0] = True
        for o, ok in seen.items():
            if not ok.all():
                raise SimulationError(f"{app}: {int((~ok).sum())} pixels of output {o} "
                                      + missing.format(box=self.boxes[o]))
        return res


__all__ = ["StreamPlan"]
