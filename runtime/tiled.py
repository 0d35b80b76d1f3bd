"""The tiled executor: stream an image larger than the GLB through a program in GLB-sized
tiles, with double buffering (AHA paper §6: the control processor uses the loop nest to
schedule DMA between system memory and the GLB and to prefetch).

Loop nest: the output image is cut into tiles of the program's output size (``out_w`` x
``out_h``: the input size minus the stencil halo, measured by running the program once);
tile ``(i, j)`` reads the input window at ``(j * out_w, i * out_h)`` clamped into the image
(the last row / column of tiles overlaps its neighbour; the overlap is recomputed, the same
values). An image smaller than the program's input is refused (map the app for that size).

Double buffering: two input and two output buffers in the GLB; while tile k runs from one
pair, the host writes tile k + 1 into the other input buffer and reads tile k - 1 from the
other output buffer. Cycles (the platform's model: a host transfer moves ``lanes`` words per
cycle, a run streams one pixel per cycle): ``sequential = sum_k (write_k + run_k + read_k)``;
``double_buffered = write_0 + sum_k max(run_k, write_{k+1} + read_{k-1}) + read_last``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runtime.api import CommandQueue, Context, Program
from runtime.errors import DeviceError


@dataclass(frozen=True)
class TiledResult:
    """The output image (uint16 ``[rows, columns]``), the tile count and the cycles with
    and without double buffering; ``pixels_per_cycle`` = input pixels / double-buffered
    cycles (the array alone streams 1 pixel per cycle)."""

    output: np.ndarray
    tiles: int
    cycles_sequential: int
    cycles_double_buffered: int
    input_pixels: int

    @property
    def pixels_per_cycle(self) -> float:
        return self.input_pixels / self.cycles_double_buffered

    @property
    def pixels_per_cycle_sequential(self) -> float:
        return self.input_pixels / self.cycles_sequential


def _starts(total: int, step: int, size: int) -> list[int]:
    """Window origins covering ``total`` output positions in steps of ``step``; a window of
    input ``size`` must fit, so the last one is clamped."""
    out, s = [], 0
    limit = total - step  # the last output tile origin
    while True:
        out.append(min(s, max(limit, 0)))
        if s >= limit:
            return sorted(set(out))
        s += step


class TiledExecutor:
    """Run a single-input, single-output stencil program over a large image (module
    docstring) on the device of ``context``."""

    def __init__(self, context: Context, program: Program):
        self.context = context
        self.program = program
        plat = context.device.platform
        names = plat.input_names(program)
        if len(names) != 1:
            raise DeviceError(f"tiled executor: {program.app} has inputs {names}; it runs "
                              f"single-input programs")
        self.input = names[0]
        probe, _c = plat.execute(program, {self.input: np.zeros((program.height, program.width),
                                                                dtype=np.int64)})
        self.out_h, self.out_w = probe.shape
        self.halo_y, self.halo_x = program.height - self.out_h, program.width - self.out_w
        if self.out_h < 1 or self.out_w < 1 or self.halo_x < 0 or self.halo_y < 0:
            raise DeviceError(f"tiled executor: {program.app} maps {program.width}x"
                              f"{program.height} to {self.out_w}x{self.out_h}; only stencils "
                              f"(output = input minus a halo) are tiled")
        self.queue = CommandQueue(context)
        shape_in = (program.height, program.width)
        self.ins = [context.buffer(shape_in), context.buffer(shape_in)]
        self.outs = [context.buffer((self.out_h, self.out_w)),
                     context.buffer((self.out_h, self.out_w))]

    def run(self, image: np.ndarray) -> TiledResult:
        """The program's output over all of ``image`` (``[rows, columns]``, unsigned
        words). Raises :class:`DeviceError` for an image smaller than the program's input."""
        img = np.asarray(image)
        h, w = img.shape
        ph, pw = self.program.height, self.program.width
        if h < ph or w < pw:
            raise DeviceError(f"tiled executor: image {w}x{h} is smaller than the program's "
                              f"{pw}x{ph} input; map {self.program.app} for this size "
                              f"(`cgra run {self.program.app} --width {w} --height {h}`)")
        oh, ow = h - self.halo_y, w - self.halo_x
        out = np.zeros((oh, ow), dtype=np.uint16)
        ys = _starts(oh, self.out_h, ph)
        xs = _starts(ow, self.out_w, pw)
        tiles = [(y, x) for y in ys for x in xs]
        writes, runs, reads = [], [], []
        q = self.queue
        for k, (y, x) in enumerate(tiles):
            slot = k % 2
            ew = q.write(self.ins[slot], img[y:y + ph, x:x + pw])
            er = q.run(self.program, {self.input: self.ins[slot]}, self.outs[slot])
            ed = q.read(self.outs[slot])
            ed.wait()
            out[y:y + self.out_h, x:x + self.out_w] = ed.result
            writes.append(ew.cycles)
            runs.append(er.cycles)
            reads.append(ed.cycles)
        n = len(tiles)
        seq = sum(writes) + sum(runs) + sum(reads)
        dbl = writes[0] + reads[-1] + sum(
            max(runs[k], (writes[k + 1] if k + 1 < n else 0) + (reads[k - 1] if k > 0 else 0))
            for k in range(n))
        return TiledResult(out, n, seq, dbl, h * w)
