"""Cycle models (Python) of the ready-valid primitives of :mod:`canal.flow_control`.

Each model holds the registers of its RTL module and splits a cycle the way the hardware
does: combinational outputs first, then the clock edge. A stage of a channel has

* ``forward(valid_in, I, clk_en) -> (valid_out, O)``: valid and data toward the sink,
* ``backward(ready_in, clk_en) -> ready_out``: ready toward the source,
* ``step(valid_in, I, ready_in, clk_en, reset)``: the rising edge (``reset`` synchronous,
  active high, clears every register including data).

``forward`` reads only the inputs travelling forward and ``backward`` only the ready, so a
channel is evaluated by one forward pass from the source and one backward pass from the
sinks, with no combinational loop (the mux and the fork split the same way: valid and data
forward, ready backward).
Data values are ints of ``width`` bits; valid / ready / enable bits are ints 0/1.
The semantics (ports, latencies, the eager fork policy, the split-FIFO halves) are those
documented in :mod:`canal.flow_control`; :class:`ChannelModel` equals the Verilator model
of :func:`canal.flow_control.rv_channel` cycle for cycle (tests/canal/test_rv_channel.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence


@dataclass
class SkidFifoModel:
    """:func:`canal.flow_control.skid_fifo`: 2-entry FIFO, registered ready and valid,
    latency 1 cycle. ``fifo_en = 0``: a wire."""

    width: int
    fifo_en: int = 1
    head: int = 0
    tail: int = 0
    head_v: int = 0
    tail_v: int = 0

    def forward(self, valid_in: int, data: int, clk_en: int) -> tuple[int, int]:
        """``(valid_out, O)``."""
        if not self.fifo_en:
            return valid_in, data
        return clk_en & self.head_v, self.head

    def backward(self, ready_in: int, clk_en: int) -> int:
        """``ready_out``."""
        if not self.fifo_en:
            return ready_in
        return clk_en & (1 - self.tail_v)

    def step(self, valid_in: int, data: int, ready_in: int, clk_en: int, reset: int = 0) -> None:
        """The rising edge."""
        if reset:
            self.head = self.tail = self.head_v = self.tail_v = 0
            return
        if not (clk_en and self.fifo_en):
            return
        if not self.head_v or ready_in:
            if self.tail_v:
                self.head, self.head_v, self.tail_v = self.tail, 1, 0
            else:
                self.head, self.head_v = data, valid_in
        elif valid_in and not self.tail_v:
            self.tail, self.tail_v = data, 1

    @property
    def occupancy(self) -> int:
        """Words held (0..2)."""
        return self.head_v + self.tail_v


@dataclass
class SplitFifoHalfModel:
    """:func:`canal.flow_control.split_fifo_half`: one entry; ``fifo_end = 0`` start half
    (bypass when empty, registered ready), 1 end half (registered valid, ready pass-through).
    A start half followed by an end half equals :class:`SkidFifoModel` at the pair's ports."""

    width: int
    fifo_en: int = 1
    fifo_end: int = 0
    value: int = 0
    full: int = 0

    def _bypass(self) -> int:
        return (1 - self.fifo_end) & (1 - self.full)

    def forward(self, valid_in: int, data: int, clk_en: int) -> tuple[int, int]:
        """``(valid_out, O)``."""
        if not self.fifo_en:
            return valid_in, data
        v = clk_en & (self.full | ((1 - self.fifo_end) & valid_in))
        return v, (data if self._bypass() else self.value)

    def backward(self, ready_in: int, clk_en: int) -> int:
        """``ready_out``."""
        if not self.fifo_en:
            return ready_in
        return clk_en & ((1 - self.full) | (self.fifo_end & ready_in))

    def step(self, valid_in: int, data: int, ready_in: int, clk_en: int, reset: int = 0) -> None:
        """The rising edge."""
        if reset:
            self.value = self.full = 0
            return
        if not (clk_en and self.fifo_en):
            return
        push = valid_in & self.backward(ready_in, clk_en)
        pop = self.forward(valid_in, data, clk_en)[0] & ready_in
        if push and not (self._bypass() and pop):
            self.value, self.full = data, 1
        elif pop:
            self.full = 0


@dataclass
class RvMuxModel:
    """:func:`canal.flow_control.rv_mux` (combinational): ``sel`` picks the input; a select
    at or beyond ``height`` gives valid 0, data 0 and no ready."""

    height: int
    sel: int = 0

    def forward(self, valids: Sequence[int], datas: Sequence[int]) -> tuple[int, int]:
        """``(valid_out, O)`` from the ``height`` inputs."""
        if self.sel >= self.height:
            return 0, 0
        return valids[self.sel], datas[self.sel]

    def backward(self, ready_in: int) -> list[int]:
        """``ready_out<i>`` for each input."""
        return [ready_in if i == self.sel else 0 for i in range(self.height)]


@dataclass
class RvForkModel:
    """:func:`canal.flow_control.rv_fork`: eager fork, ``taken`` bit per sink, latency 0."""

    sinks: int
    en: tuple[int, ...] = ()
    taken: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.en:
            self.en = tuple(1 for _ in range(self.sinks))
        if not self.taken:
            self.taken = [0] * self.sinks

    def forward(self, valid_in: int, clk_en: int) -> list[int]:
        """``valid_out<i>`` per sink (the data ``O<i>`` is ``I``)."""
        return [clk_en & valid_in & self.en[i] & (1 - self.taken[i]) for i in range(self.sinks)]

    def backward(self, ready_ins: Sequence[int], clk_en: int) -> int:
        """``ready_out``: every enabled sink has taken the word or takes it now."""
        done = all((not self.en[i]) or self.taken[i] or ready_ins[i] for i in range(self.sinks))
        return clk_en & int(done)

    def step(self, valid_in: int, ready_ins: Sequence[int], clk_en: int, reset: int = 0) -> None:
        """The rising edge."""
        if reset:
            self.taken = [0] * self.sinks
            return
        if not clk_en:
            return
        if valid_in and self.backward(ready_ins, clk_en):
            self.taken = [0] * self.sinks
            return
        vout = self.forward(valid_in, clk_en)
        self.taken = [t | (v & r) for t, v, r in zip(self.taken, vout, ready_ins, strict=True)]


#: the output ports of a channel, in :meth:`ChannelModel.cycle`'s result order
CHANNEL_OUTPUTS = ("ready_out", "alt_ready", "valid_out0", "O0", "valid_out1", "O1")


class ChannelModel:
    """:func:`canal.flow_control.rv_channel` of ``params`` (a
    :class:`canal.flow_control.ChannelParams`) configured by ``config`` (a
    :class:`canal.flow_control.ChannelConfig`; checked)."""

    def __init__(self, params, config) -> None:
        params.check()
        config.check(params)
        self.p = params
        self.config = config
        h = params.mux_height
        self.muxes = [RvMuxModel(h, int(s)) for s in config.sel]
        self.fifos: list = []
        for i in range(params.hops):
            if params.fifo == "skid":
                self.fifos.append(SkidFifoModel(params.width, int(config.fifo_en[i])))
            elif params.fifo == "split":
                self.fifos.append(SplitFifoHalfModel(params.width, int(config.fifo_en[i]),
                                                     int(config.fifo_end[i])))
            else:
                self.fifos.append(None)
        self.fork = RvForkModel(2, tuple(int(b) for b in config.fork_en)) if params.fork else None

    def cycle(self, reset: int, clk_en: int, valid_in: int, data: int, alt_valid: int,
              alt_data: int, ready_in0: int, ready_in1: int = 0) -> tuple[int, ...]:
        """One clock cycle: the outputs before the edge (:data:`CHANNEL_OUTPUTS` order; sink 1
        values 0 without a fork), then the edge."""
        p = self.p
        h = p.mux_height
        mux_in: list[tuple[int, int]] = []
        v, d = valid_in, data
        for i in range(p.hops):
            k = p.chain_input(i)
            valids = [v if j == k else alt_valid for j in range(h)]
            datas = [d if j == k else alt_data for j in range(h)]
            v, d = self.muxes[i].forward(valids, datas)
            mux_in.append((v, d))
            if self.fifos[i] is not None:
                v, d = self.fifos[i].forward(v, d, clk_en)
        if self.fork is not None:
            vouts = self.fork.forward(v, clk_en)
            outs = [vouts[0], d, vouts[1], d]
            r = self.fork.backward((ready_in0, ready_in1), clk_en)
        else:
            outs = [v, d, 0, 0]
            r = ready_in0
        last_v = v
        fifo_ready_in: list[int] = [0] * p.hops
        alt_ready = 0
        for i in reversed(range(p.hops)):
            fifo_ready_in[i] = r
            if self.fifos[i] is not None:
                r = self.fifos[i].backward(r, clk_en)
            readies = self.muxes[i].backward(r)
            k = p.chain_input(i)
            alt_ready |= int(any(rr for j, rr in enumerate(readies) if j != k))
            r = readies[k]
        result = (r, alt_ready, *outs)
        for i in range(p.hops):
            if self.fifos[i] is not None:
                self.fifos[i].step(mux_in[i][0], mux_in[i][1], fifo_ready_in[i], clk_en, reset)
        if self.fork is not None:
            self.fork.step(last_v, (ready_in0, ready_in1), clk_en, reset)
        return result
