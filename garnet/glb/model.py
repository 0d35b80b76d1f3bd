"""Cycle-level Python model of the GLB (AHA paper §4.4, Fig. 11), register for register the
behaviour of the generated RTL (:mod:`garnet.glb.rtl`), and its functional (golden) form.

Per GLB tile: two SRAM banks of ``bank_words`` x ``word_width`` bits (synchronous read: a
word read at one edge is in the bank's output register ``q`` during the next cycle; a read
and a write of one word at the same edge read the old word), a load DMA and a store DMA
(Lake controllers, :mod:`garnet.glb.dma`), a cycle counter, a load ring slot and a store
ring slot (the ring chains tile ``t`` to ``t + 1 mod tiles``), the config registers.

Ports (per cycle, sampled before the rising edge; :class:`Cycle`):

* ``RESET`` (sync, active high): every register to 0 (config too); memories keep contents;
* ``start[t]``: restarts tile t's DMAs and cycle counter (no DMA fires in that cycle);
* ``cfg_go[t]``: starts tile t's config streamers: bank ``b`` reads ``cs_count_<b>`` words
  from word ``cs_base_<b>`` on, one per cycle from the next cycle, each shown on
  ``cfg_valid[t][b]`` / ``cfg_word[t][b]`` (``word_width`` bits) one cycle after its read:
  the stream of bundles into column ``t * columns_per_tile + b`` (:mod:`garnet.glb.confignet`);
* ``io_in[t]`` (``data_width`` bits): the word a store DMA of tile t writes when it fires;
* ``cfg_wr``, ``cfg_addr`` (``tile << 8 | register``), ``cfg_data`` (32 bits);
* host port: ``host_wr``, ``host_waddr`` (global GLB-word address), ``host_wdata``
  (``word_width`` bits), ``host_rd``, ``host_raddr``.

Outputs (:class:`Outputs`, combinational from the registers): ``io_out_valid[t]``,
``io_out[t]`` (a load's word, 1 cycle after a local fire, ``tiles + 1`` after a chained one),
``host_rd_valid`` / ``host_rdata`` (1 cycle after ``host_rd``), ``ld_done[t]`` /
``st_done[t]``.

Per edge, with no RESET: a DMA *fires* when enabled, not done and its schedule value equals
the tile's cycle counter; it then advances in recurrence form (lowest level not at its
maximum increments, lower levels clear, the address and schedule add that level's delta).
A load fire reads its bank (local) or injects a request into the tile's load ring slot
(chained); a ring request is read by the tile owning its address when it passes and
returns to its source after ``tiles`` hops. A store fire writes ``io_in[t]`` into its lane
(local or owned by the tile) or injects it into the store ring slot. Bank read and write
ports are single: two requests for one port in one cycle (host, ring, DMA) are a
programming error the model refuses with :class:`~cgra.errors.SimulationError` naming the
tile, bank and cycle (the RTL gives the host priority, then the ring).

:func:`run_functional` is the golden semantics of a DMA program (every load word read from
the address of its iteration point, every store word written to its address), computed
directly from the Lake port programs (:meth:`lake.program.PortProgram.addresses`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from cgra.errors import ConfigError, SimulationError
from garnet.glb.dma import DMAS, DmaProgram, check_dma, config_words, encode, register_fields
from garnet.glb.params import GlbParams


@dataclass
class Cycle:
    """The inputs of one cycle (module docstring); lists are per tile (``None`` = all 0)."""

    RESET: int = 0
    start: list[int] | None = None
    cfg_go: list[int] | None = None
    io_in: list[int] | None = None
    cfg_wr: int = 0
    cfg_addr: int = 0
    cfg_data: int = 0
    host_wr: int = 0
    host_waddr: int = 0
    host_wdata: int = 0
    host_rd: int = 0
    host_raddr: int = 0


@dataclass
class Outputs:
    """The outputs of one cycle (module docstring)."""

    io_out_valid: list[int]
    io_out: list[int]
    host_rd_valid: int
    host_rdata: int
    ld_done: list[int]
    st_done: list[int]
    cfg_valid: list[list[int]]
    cfg_word: list[list[int]]

    def flat(self) -> list[int]:
        """The values in the order the RTL testbench prints them: per tile
        ``io_out_valid, io_out, ld_done, st_done``, then ``host_rd_valid, host_rdata``, then
        per tile and bank ``cfg_valid, cfg_word``."""
        out: list[int] = []
        for t in range(len(self.io_out)):
            out += [self.io_out_valid[t], self.io_out[t], self.ld_done[t], self.st_done[t]]
        out += [self.host_rd_valid, self.host_rdata]
        for t in range(len(self.io_out)):
            for v, w in zip(self.cfg_valid[t], self.cfg_word[t], strict=True):
                out += [v, w]
        return out


@dataclass
class _Ctrl:
    cnt: list[int]
    addr: int = 0
    sched: int = 0
    done: int = 0


@dataclass
class _Slot:
    valid: int = 0
    addr: int = 0
    src: int = 0
    hit: int = 0
    data: int = 0


@dataclass
class _Tile:
    cfg: dict[str, int]
    ctrl: dict[str, _Ctrl]
    mem: list[list[int]]
    cycle: int = 0
    q: list[int] = field(default_factory=lambda: [0, 0])
    ld_d: tuple[int, int, int] = (0, 0, 0)      # valid, bank, lane
    host_d: tuple[int, int] = (0, 0)            # valid, bank
    rl: _Slot = field(default_factory=_Slot)    # load ring slot
    ro: tuple[int, int] = (0, 0)                # delivered ring load: valid, data
    rs: _Slot = field(default_factory=_Slot)    # store ring slot
    cs: list[list[int]] = field(default_factory=lambda: [[0, 0], [0, 0]])  # streamer addr, left
    cs_d: list[int] = field(default_factory=lambda: [0, 0])   # streamer word in q (valid)


class GlbModel:
    """The cycle-level model of a whole GLB (module docstring)."""

    def __init__(self, p: GlbParams):
        self.p = p
        self.fields = register_fields(p)
        self.eb = (p.tile_elements - 1).bit_length()      # bits of a local element address
        self.lb = (p.lanes - 1).bit_length()
        self.wb = (p.bank_words - 1).bit_length()
        self.tiles = [_Tile(cfg={n: 0 for n, _w in self.fields},
                            ctrl={d: _Ctrl([0] * p.dma_dims) for d in DMAS},
                            mem=[[0] * p.bank_words for _b in range(p.banks)])
                      for _t in range(p.tiles)]
        self.now = 0

    # ---- helpers -------------------------------------------------------------------------
    def split(self, addr: int) -> tuple[int, int, int, int]:
        """(owner tile, bank, word, lane) of a global element address."""
        la = addr & ((1 << self.eb) - 1)
        return (addr >> self.eb, la >> (self.wb + self.lb), (la >> self.lb) & (self.p.bank_words - 1),
                la & (self.p.lanes - 1))

    def _lane(self, word: int, lane: int) -> int:
        return (word >> (lane * self.p.data_width)) & ((1 << self.p.data_width) - 1)

    def load_word(self, tile: int, bank: int, word: int, value: int) -> None:
        """Back-door write of one GLB word (tests and image loading)."""
        self.tiles[tile].mem[bank][word] = value

    def word(self, tile: int, bank: int, word: int) -> int:
        """Back-door read of one GLB word."""
        return self.tiles[tile].mem[bank][word]

    # ---- one clock -----------------------------------------------------------------------
    def outputs(self) -> Outputs:
        """The outputs during the current cycle."""
        p = self.p
        v, d, ld, sd = [], [], [], []
        hv, hd = 0, 0
        for t in self.tiles:
            lv, lb, ll = t.ld_d
            if lv:
                v.append(1)
                d.append(self._lane(t.q[lb], ll))
            else:
                v.append(t.ro[0])
                d.append(t.ro[1] if t.ro[0] else 0)
            ld.append(t.ctrl["ld"].done)
            sd.append(t.ctrl["st"].done)
            if t.host_d[0]:
                hv, hd = 1, hd | t.q[t.host_d[1]]
        cv = [[t.cs_d[b] for b in range(p.banks)] for t in self.tiles]
        cw = [[t.q[b] if t.cs_d[b] else 0 for b in range(p.banks)] for t in self.tiles]
        return Outputs(v, d, hv, hd, ld, sd, cv, cw)

    def step(self, c: Cycle) -> Outputs:
        """Drive one cycle: return the outputs before the edge, then clock once."""
        out = self.outputs()
        p = self.p
        n = p.tiles
        if c.RESET:
            for t in self.tiles:
                for k in t.cfg:
                    t.cfg[k] = 0
                for d in DMAS:
                    t.ctrl[d] = _Ctrl([0] * p.dma_dims)
                t.cycle, t.q, t.ld_d, t.host_d = 0, [0, 0], (0, 0, 0), (0, 0)
                t.rl, t.ro, t.rs = _Slot(), (0, 0), _Slot()
                t.cs, t.cs_d = [[0, 0], [0, 0]], [0, 0]
            self.now += 1
            return out
        start = c.start or [0] * n
        go = c.cfg_go or [0] * n
        io_in = c.io_in or [0] * n
        htile = c.host_raddr // p.tile_words
        hwtile = c.host_waddr // p.tile_words
        nxt: list[dict] = []
        for ti, t in enumerate(self.tiles):
            fire = {d: (not start[ti] and t.cfg[f"{d}_enable"] and not t.ctrl[d].done
                        and t.ctrl[d].sched == t.cycle) for d in DMAS}
            reads: dict[int, tuple[str, int]] = {}
            writes: dict[int, list[tuple[str, int, int | None, int]]] = {}

            def read(bank: int, word: int, who: str, ti: int = ti, reads=reads) -> None:
                if bank in reads:
                    raise SimulationError(f"GLB tile {ti} bank {bank} cycle {self.now}: read "
                                          f"port taken by {reads[bank][0]} and {who}; "
                                          f"schedule the accesses in different cycles")
                reads[bank] = (who, word)

            def write(bank: int, word: int, lane: int | None, value: int, who: str,
                      ti: int = ti, writes=writes) -> None:
                if bank in writes:
                    raise SimulationError(f"GLB tile {ti} bank {bank} cycle {self.now}: write "
                                          f"port taken by {writes[bank][0][0]} and {who}; "
                                          f"schedule the accesses in different cycles")
                writes[bank] = [(who, word, lane, value)]

            # host port
            host_d = (0, 0)
            if c.host_rd and htile == ti:
                hl = c.host_raddr % p.tile_words
                read(hl // p.bank_words, hl % p.bank_words, "the host")
                host_d = (1, hl // p.bank_words)
            if c.host_wr and hwtile == ti:
                hl = c.host_waddr % p.tile_words
                write(hl // p.bank_words, hl % p.bank_words, None, c.host_wdata, "the host")
            # load ring
            prev = self.tiles[(ti - 1) % n]
            inc = prev.rl
            inc_data = self._lane(prev.q[self.split(inc.addr)[1]], self.split(inc.addr)[3]) \
                if inc.hit else inc.data
            ro = (0, 0)
            rl = _Slot()
            if inc.valid and inc.src == ti:
                ro = (1, inc_data)
            elif inc.valid:
                own, b, w, _l = self.split(inc.addr)
                hit = int(own == ti)
                if hit:
                    read(b, w, "the load ring")
                rl = _Slot(1, inc.addr, inc.src, hit, inc_data)
            ld = t.ctrl["ld"]
            ld_d = (0, 0, 0)
            if fire["ld"]:
                own, b, w, lane = self.split(ld.addr)
                if t.cfg["ld_chain"]:
                    if rl.valid:
                        raise SimulationError(f"GLB tile {ti} cycle {self.now}: the load ring "
                                              f"slot is taken by tile {rl.src}'s request; "
                                              f"chain one load DMA at a time")
                    hit = int(own == ti)
                    if hit:
                        read(b, w, "the load DMA")
                    rl = _Slot(1, ld.addr, ti, hit, 0)
                else:
                    read(b, w, "the load DMA")
                    ld_d = (1, b, lane)
            # store ring
            ins = prev.rs
            rs = _Slot()
            if ins.valid and ins.src != ti:
                own, b, w, lane = self.split(ins.addr)
                if own == ti:
                    write(b, w, lane, ins.data, "the store ring")
                else:
                    rs = _Slot(1, ins.addr, ins.src, 0, ins.data)
            st = t.ctrl["st"]
            if fire["st"]:
                own, b, w, lane = self.split(st.addr)
                if t.cfg["st_chain"] and own != ti:
                    if rs.valid:
                        raise SimulationError(f"GLB tile {ti} cycle {self.now}: the store ring "
                                              f"slot is taken by tile {rs.src}'s write; chain "
                                              f"one store DMA at a time")
                    rs = _Slot(1, st.addr, ti, 0, io_in[ti] & ((1 << p.data_width) - 1))
                else:
                    write(b, w, lane, io_in[ti], "the store DMA")
            # config streamers (lowest priority: a conflict is refused like any other)
            cs_d = [0] * p.banks
            for b in range(p.banks):
                if t.cs[b][1]:
                    read(b, t.cs[b][0], f"config streamer {b}")
                    cs_d[b] = 1
            nxt.append(dict(fire=fire, reads=reads, writes=writes, host_d=host_d, ro=ro, rl=rl,
                            ld_d=ld_d, rs=rs, cs_d=cs_d))
        # commit: reads see the old memory, then writes, then the registers
        for ti, t in enumerate(self.tiles):
            x = nxt[ti]
            for b, (_who, w) in x["reads"].items():
                t.q[b] = t.mem[b][w]
            for b, [(_who, w, lane, value)] in x["writes"].items():
                if lane is None:
                    t.mem[b][w] = value & ((1 << p.word_width) - 1)
                else:
                    sh = lane * p.data_width
                    m = ((1 << p.data_width) - 1) << sh
                    t.mem[b][w] = (t.mem[b][w] & ~m) | ((value << sh) & m)
            t.host_d, t.ro, t.rl, t.ld_d, t.rs = x["host_d"], x["ro"], x["rl"], x["ld_d"], x["rs"]
            t.cs_d = x["cs_d"]
            for b in range(p.banks):
                if go[ti]:
                    t.cs[b] = [t.cfg[f"cs_base_{b}"], t.cfg[f"cs_count_{b}"]]
                elif t.cs[b][1]:
                    t.cs[b] = [(t.cs[b][0] + 1) % p.bank_words, t.cs[b][1] - 1]
            if start[ti]:
                t.cycle = 0
                for d in DMAS:
                    self._restart(t, d)
            else:
                t.cycle = (t.cycle + 1) % (1 << p.schedule_width)
                for d in DMAS:
                    if x["fire"][d]:
                        self._advance(t, d)
        if c.cfg_wr:
            tile, reg = c.cfg_addr >> 8, c.cfg_addr & 0xFF
            if tile >= n or reg >= len(self.fields):
                raise ConfigError(f"GLB config address {c.cfg_addr:#x}: tile {tile} register "
                                  f"{reg} does not exist (tiles 0..{n - 1}, registers "
                                  f"0..{len(self.fields) - 1})")
            name, w = self.fields[reg]
            self.tiles[tile].cfg[name] = c.cfg_data & ((1 << w) - 1)
        self.now += 1
        return out

    def _restart(self, t: _Tile, d: str) -> None:
        t.ctrl[d] = _Ctrl([0] * self.p.dma_dims, t.cfg[f"{d}_addr_offset"],
                          t.cfg[f"{d}_sched_offset"], 0)

    def _advance(self, t: _Tile, d: str) -> None:
        p = self.p
        c = t.ctrl[d]
        level = None
        for k in range(p.dma_dims):
            if k < t.cfg[f"{d}_dim"] and c.cnt[k] != t.cfg[f"{d}_range_{k}"]:
                level = k
                break
        if level is None:
            c.done = 1
            return
        for j in range(level):
            c.cnt[j] = 0
        c.cnt[level] += 1
        c.addr = (c.addr + t.cfg[f"{d}_addr_delta_{level}"]) % (1 << p.address_width)
        c.sched = (c.sched + t.cfg[f"{d}_sched_delta_{level}"]) % (1 << p.schedule_width)


def config_cycles(p: GlbParams, programs: Mapping[tuple[int, str], DmaProgram | None]
                  ) -> list[Cycle]:
    """The cycles writing the config registers of the given DMAs ((tile, dma) -> program;
    ``None`` disables), one register per cycle, every register of each DMA."""
    out: list[Cycle] = []
    for (tile, dma), prog in programs.items():
        for addr, data in config_words(p, tile, encode(p, tile, dma, prog)):
            out.append(Cycle(cfg_wr=1, cfg_addr=addr, cfg_data=data))
    return out


def run_functional(p: GlbParams, memory: np.ndarray, loads: Mapping[int, DmaProgram],
                   stores: Mapping[int, tuple[DmaProgram, Sequence[int]]]
                   ) -> tuple[dict[int, np.ndarray], np.ndarray]:
    """Golden semantics: ``memory`` is the GLB as a flat array of element words
    (``tiles * tile_elements``, global element addresses); every store (tile -> (program,
    values in iteration order)) writes first, in tile order, then every load (tile ->
    program) reads. A local program's addresses are offset by ``tile * tile_elements``.
    Returns (tile -> loaded words in iteration order, the memory after the stores).
    Raises :class:`ConfigError` for a program breaking a rule of
    :func:`garnet.glb.dma.check_dma`."""
    mem = np.array(memory, dtype=np.int64, copy=True)
    for tile, (prog, values) in sorted(stores.items()):
        check_dma(p, tile, "st", prog)
        a = prog.program.addresses() + (0 if prog.chain else tile * p.tile_elements)
        vals = np.asarray(values, dtype=np.int64)
        if len(vals) != len(a):
            raise ConfigError(f"GLB tile {tile} store: {len(vals)} values for a domain of "
                              f"{len(a)} points")
        mem[a] = vals & ((1 << p.data_width) - 1)
    out: dict[int, np.ndarray] = {}
    for tile, prog in sorted(loads.items()):
        check_dma(p, tile, "ld", prog)
        a = prog.program.addresses() + (0 if prog.chain else tile * p.tile_elements)
        out[tile] = mem[a]
    return out, mem
