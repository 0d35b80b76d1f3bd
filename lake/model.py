"""Cycle-accurate Python models of the generated memories, and the stream driver shared
with the RTL testbench.

The models mirror :mod:`lake.rtl` register by register. Per clock edge, in priority order:
``RESET`` (synchronous, active high) or ``flush`` restarts every controller and the cycle
counter and clears the output/pending registers (storage, aggregator and transpose-buffer
contents are kept); else, when ``clk_en`` is 1, every controller whose schedule equals the
cycle counter *fires* and then advances (recurrence form), and the cycle counter
increments; with ``clk_en`` 0 nothing changes. Outputs are registered: a read that fires at
cycle ``c`` shows ``valid_out_q = 1`` and its data during cycle ``c + 1``.

Chaining: with ``chain_enable``, a storage access fires only when the high address bits
(``address >> log2(capacity)``) equal ``chain_id``; ``data_out_q`` shows the local read if
it is valid, else ``chain_data_in_q``, and ``valid_out_q = local | chain_valid_in_q``.

LUT mode (specs with ``lut=True``, config field ``lut_mode`` = 1): on every enabled edge
``data_out_0`` loads ``storage[data_in_0 mod words]`` and ``valid_out_0`` becomes 1; the
write controller does not write. The config-memory port (record entries
``config_mem_*``) writes a word at any edge (priority over the write controller) and reads
one combinationally (output ``config_mem_rdata``), see :mod:`lake.rtl`.

A *stimulus* is a list of per-cycle records (dicts: ``RESET``, ``clk_en``, ``flush`` and one
entry per data / chain input); :func:`make_stimulus` builds one from port programs, input
values and a stall pattern, :func:`collect` turns per-cycle outputs back into (cycle, value)
streams counted in unstalled cycles since the last reset/flush.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from cgra.errors import SimulationError
from lake.affine import strides_from_deltas
from lake.program import PortProgram
from lake.spec import Controller, MemorySpec, as_spec


class ControllerModel:
    """Iteration domain + schedule generator + address generators.

    ``form="recurrence"`` (the hardware default) keeps running values and adds the delta
    of the incrementing level; ``form="multiplier"`` recomputes every value as
    ``offset + sum_k stride_k * cnt_k`` (strides rebuilt from the config deltas, modulo the
    register width), the checking variant of :func:`lake.rtl.controller`.
    """

    def __init__(self, spec: MemorySpec, ctrl: Controller, config: Mapping[str, int],
                 form: str = "recurrence"):
        if form not in ("recurrence", "multiplier"):
            raise SimulationError(f"controller {ctrl.name}: unknown form '{form}'")
        self.form = form
        self.sw = spec.schedule_width
        c = ctrl.name
        self.name = c
        self.dims = ctrl.dims
        self.sw_mask = (1 << spec.schedule_width) - 1
        self.enable = config[f"{c}_enable"]
        self.dim = config[f"{c}_dim"]
        self.ranges = [config[f"{c}_range_{k}"] for k in range(ctrl.dims)]
        self.sched_offset = config[f"{c}_sched_offset"]
        self.sched_deltas = [config[f"{c}_sched_delta_{k}"] for k in range(ctrl.dims)]
        self.ags = {g.name: (g.width, config[f"{c}_{g.name}_offset"],
                             [config[f"{c}_{g.name}_delta_{k}"] for k in range(ctrl.dims)])
                    for g in ctrl.address_generators}
        self.reset()

    def reset(self) -> None:
        self.cnt = [0] * self.dims
        self.sched = self.sched_offset
        self.addr = {n: off for n, (_w, off, _d) in self.ags.items()}
        self.done = 0

    def fires(self, cycle: int) -> bool:
        return bool(self.enable and not self.done and self.sched == cycle)

    def advance(self) -> None:
        level = None
        for k in range(self.dims):
            if k < self.dim and self.cnt[k] != self.ranges[k]:
                level = k
                break
        if level is None:
            self.done = 1
            return
        for j in range(level):
            self.cnt[j] = 0
        self.cnt[level] += 1
        if self.form == "multiplier":
            self.sched = self._affine(self.sched_offset, self.sched_deltas, self.sw)
            for n, (w, off, deltas) in self.ags.items():
                self.addr[n] = self._affine(off, deltas, w)
            return
        self.sched = (self.sched + self.sched_deltas[level]) & self.sw_mask
        for n, (w, _off, deltas) in self.ags.items():
            self.addr[n] = (self.addr[n] + deltas[level]) & ((1 << w) - 1)

    def _affine(self, offset: int, deltas: list[int], width: int) -> int:
        ext = [r + 1 for r in self.ranges]
        strides = strides_from_deltas(ext, deltas)
        return (offset + sum(s * i for s, i in zip(strides, self.cnt, strict=True))) % (1 << width)


class _Base:
    def __init__(self, spec: MemorySpec, form: str = "recurrence"):
        self.spec = spec
        self.form = form
        self.mask = (1 << spec.storage.data_width) - 1
        self.abits = spec.address_bits
        self.configured = False

    def configure(self, config: Mapping[str, int]) -> None:
        """Load config values (as the ``config_*`` inputs would); then call reset."""
        self.config = dict(config)
        self.ctrls = {c.name: ControllerModel(self.spec, c, config, self.form)
                      for c in self.spec.controllers}
        # chaining is off in LUT mode (lake.rtl)
        self.chain_enable = int(bool(config["chain_enable"]) and not config.get("lut_mode", 0))
        self.chain_id = config["chain_id"]
        self.configured = True
        self._restart()

    def _match(self, addr: int) -> bool:
        return (not self.chain_enable) or (addr >> self.abits) == self.chain_id

    def _chain(self, out: dict[str, int], inputs: Mapping[str, int]) -> dict[str, int]:
        res = {}
        for i, q in enumerate(self.spec.outputs):
            v, d = out[f"valid_out_{i}"], out[q]
            cv = inputs.get(f"chain_valid_in_{i}", 0) & self.chain_enable
            if self.chain_enable and not v:
                d = inputs.get(f"chain_data_in_{i}", 0) & self.mask
            res[q] = d
            res[f"valid_out_{i}"] = int(v or cv)
        return res

    def step(self, record: Mapping[str, int]) -> dict[str, int]:
        """One clock cycle: returns the outputs during the cycle, then applies the edge."""
        if not self.configured:
            raise SimulationError(f"{self.spec.name} model: configure() before step()")
        out = self._chain(self._outputs(), record)
        if record.get("RESET", 0) or record.get("flush", 0):
            self._restart()
        elif record.get("clk_en", 1):
            self._edge(record)
            self.cycle = (self.cycle + 1) & ((1 << self.spec.schedule_width) - 1)
        return out


class SimpleModel(_Base):
    """Dual-port SRAM / pond: controllers access the storage directly.

    For a spec with ``lut=True`` the model also has the lookup-table mode (config field
    ``lut_mode``) and the config-memory port of :mod:`lake.rtl`: record entries
    ``config_mem_addr`` / ``config_mem_data`` / ``config_mem_write`` / ``config_mem_read``
    and the output ``config_mem_rdata``; :meth:`preload` fills the storage directly."""

    def __init__(self, spec: MemorySpec, form: str = "recurrence"):
        super().__init__(spec, form)
        self.mem: dict[int, int] = {}

    def preload(self, words: Sequence[int] | Mapping[int, int]) -> None:
        """Set storage words (a list: word w = ``words[w]``; a mapping: word index ->
        value) as a config-memory load would; values are masked to the data width.
        Raises :class:`SimulationError` for an index outside the storage."""
        items = words.items() if isinstance(words, Mapping) else enumerate(words)
        for w, v in items:
            if not 0 <= w < self.spec.storage.words:
                raise SimulationError(f"{self.spec.name} model: preload word index {w} is "
                                      f"outside the storage (0..{self.spec.storage.words - 1})")
            self.mem[w] = int(v) & self.mask

    def step(self, record: Mapping[str, int]) -> dict[str, int]:
        if not self.spec.lut:
            return super().step(record)
        cfg_read = record.get("config_mem_read", 0)
        caddr = record.get("config_mem_addr", 0) & (self.spec.storage.capacity - 1)
        rdata = self.mem.get(caddr, 0) if cfg_read else 0
        out = super().step(record)
        if record.get("config_mem_write", 0):   # any clk_en / RESET / flush; priority
            self.mem[caddr] = record.get("config_mem_data", 0) & self.mask
        out["config_mem_rdata"] = rdata
        return out

    def _restart(self) -> None:
        for c in self.ctrls.values():
            c.reset()
        self.cycle = 0
        n = len(self.spec.outputs)
        self.out_valid = [0] * n
        self.out_data = getattr(self, "out_data", [0] * n)

    def _outputs(self) -> dict[str, int]:
        out = {}
        for i, q in enumerate(self.spec.outputs):
            out[q] = self.out_data[i]
            out[f"valid_out_{i}"] = self.out_valid[i]
        return out

    @property
    def lut_mode(self) -> int:
        return self.config.get("lut_mode", 0) if self.spec.lut else 0

    def _edge(self, rec: Mapping[str, int]) -> None:
        cyc = self.cycle
        lo_mask = self.spec.storage.capacity - 1
        lut = self.lut_mode
        cfg_read, cfg_write = rec.get("config_mem_read", 0), rec.get("config_mem_write", 0)
        caddr = rec.get("config_mem_addr", 0) & lo_mask
        fired = []
        for i, p in enumerate(self.spec.inputs):
            c = self.ctrls[f"in{i}"]
            if c.fires(cyc):
                a = c.addr["addr"]
                # LUT mode: never written by the controller; a config write has priority
                if self._match(a) and not lut and not cfg_write:
                    self.mem[a & lo_mask] = rec.get(p, 0) & self.mask
                fired.append(c)
        for i, _q in enumerate(self.spec.outputs):
            c = self.ctrls[f"out{i}"]
            self.out_valid[i] = 0
            fires = c.fires(cyc)
            if fires or lut:
                if cfg_read:
                    a = caddr
                elif lut:
                    a = rec.get(self.spec.inputs[0], 0) & lo_mask
                else:
                    a = c.addr["addr"]
                if lut or self._match(c.addr["addr"]):
                    self.out_data[i] = self.mem.get(a & lo_mask, 0)
                    self.out_valid[i] = 1
            if fires:
                fired.append(c)
        for c in fired:
            c.advance()


class PUBModel(_Base):
    """Physical unified buffer: aggregators, single-port wide SRAM, transpose buffers."""

    def __init__(self, spec: MemorySpec, form: str = "recurrence"):
        super().__init__(spec, form)
        fw = spec.storage.fetch_width
        self.fw = fw
        self.mem: dict[int, list[int]] = {}
        self.agg = [[0] * (2 * fw) for _ in spec.inputs]
        self.tb = [[0] * (2 * fw) for _ in spec.outputs]
        self.sram_rdata = [0] * fw

    def _restart(self) -> None:
        for c in self.ctrls.values():
            c.reset()
        self.cycle = 0
        n = len(self.spec.outputs)
        self.out_valid = [0] * n
        self.out_data = getattr(self, "out_data", [0] * n)
        self.pend = [0] * n
        self.pend_half = [0] * n
        self.pend_own = [0] * n
        self.own = [[0, 0] for _ in range(n)]

    def _outputs(self) -> dict[str, int]:
        out = {}
        for i, q in enumerate(self.spec.outputs):
            out[q] = self.out_data[i]
            out[f"valid_out_{i}"] = self.out_valid[i]
        return out

    def _edge(self, rec: Mapping[str, int]) -> None:
        cyc, fw = self.cycle, self.fw
        lo_mask = self.spec.storage.capacity - 1
        fires = {n: c.fires(cyc) for n, c in self.ctrls.items()}
        # transpose-buffer writes from the previous cycle's SRAM read (register values)
        rdata = list(self.sram_rdata)
        tb_next = [list(t) for t in self.tb]
        own_next = [list(o) for o in self.own]
        for q in range(len(self.spec.outputs)):
            if self.pend[q]:
                h = self.pend_half[q]
                tb_next[q][h * fw:(h + 1) * fw] = rdata
                own_next[q][h] = self.pend_own[q]
        # output port reads the transpose buffer (current contents)
        for q in range(len(self.spec.outputs)):
            c = self.ctrls[f"out{q}"]
            self.out_valid[q] = 0
            if fires[c.name]:
                slot = c.addr["addr"]
                self.out_data[q] = self.tb[q][slot]
                self.out_valid[q] = self.own[q][slot // fw]
        # single SRAM port, port-select priority agg0, agg1, tb0, tb1
        agg_now = [list(a) for a in self.agg]
        selected = None
        for name in self.spec.port_selects[0].controllers:
            c = self.ctrls[name]
            if fires[name] and self._match(c.addr["addr"]):
                selected = name
                break
        if selected is not None:
            c = self.ctrls[selected]
            a, h = c.addr["addr"] & lo_mask, c.addr["half"]
            i = int(selected[-1])
            if selected.startswith("agg"):
                self.mem[a] = agg_now[i][h * fw:(h + 1) * fw]
            else:
                self.sram_rdata = list(self.mem.get(a, [0] * fw))
        for q in range(len(self.spec.outputs)):
            c = self.ctrls[f"tb{q}"]
            self.pend[q] = int(fires[c.name])
            self.pend_half[q] = c.addr["half"]
            self.pend_own[q] = int(self._match(c.addr["addr"]))
        # aggregator writes
        for p, port in enumerate(self.spec.inputs):
            c = self.ctrls[f"in{p}"]
            if fires[c.name]:
                self.agg[p][c.addr["addr"]] = rec.get(port, 0) & self.mask
        self.tb = tb_next
        self.own = own_next
        for n, c in self.ctrls.items():
            if fires[n]:
                c.advance()


def make_model(preset: MemorySpec | str, form: str = "recurrence") -> _Base:
    """A fresh cycle-accurate model of a preset (configure it before stepping); ``form``
    selects the generator form of every controller (see :class:`ControllerModel`)."""
    spec = as_spec(preset)
    return PUBModel(spec, form) if spec.wide else SimpleModel(spec, form)


# ---------------------------------------------------------------------------------------
# Stimulus / response, shared with the Verilator testbench (lake.sim)
# ---------------------------------------------------------------------------------------
@dataclass
class Stimulus:
    """Per-cycle input records plus the number of enabled cycles after reset."""

    records: list[dict[str, int]]
    enabled_cycles: int
    meta: dict = field(default_factory=dict)


#: the config-memory inputs of a spec with ``lut=True`` (testbench order)
CONFIG_MEM_INPUTS = ("config_mem_addr", "config_mem_data", "config_mem_write",
                     "config_mem_read")


def input_names(spec: MemorySpec) -> list[str]:
    """Data-carrying inputs of the tile (data and chain inputs, then the config-memory
    inputs when ``spec.lut``), testbench order."""
    names = list(spec.inputs)
    for i in range(len(spec.outputs)):
        names += [f"chain_data_in_{i}", f"chain_valid_in_{i}"]
    if spec.lut:
        names += list(CONFIG_MEM_INPUTS)
    return names


def output_names(spec: MemorySpec) -> list[str]:
    """Outputs of the tile in testbench order (``config_mem_rdata`` last when
    ``spec.lut``)."""
    names = []
    for i, q in enumerate(spec.outputs):
        names += [q, f"valid_out_{i}"]
    if spec.lut:
        names.append("config_mem_rdata")
    return names


def make_stimulus(preset: MemorySpec | str, programs: Mapping[str, object],
                  inputs: Mapping[str, Sequence[int]], stall: Sequence[int] | None = None,
                  seed: int = 0, extra_cycles: int = 3,
                  chain_streams: Mapping[str, Mapping[int, int]] | None = None) -> Stimulus:
    """Records that reset the tile and stream ``inputs`` (port -> values in write order)
    at the cycles given by the input programs.

    ``stall``: clk_en per physical cycle after reset (repeated cyclically; 1 = run).
    Stalled cycles and unscheduled cycles carry random data (seeded) so that a model that
    samples at the wrong time fails. ``chain_streams``: output index as ``"0"``/``"1"`` ->
    {enabled cycle: value} driven on ``chain_data_in`` with ``chain_valid_in`` = 1.
    """
    spec = as_spec(preset)
    rng = random.Random(seed)
    progs = {p: PortProgram.from_dict(v, p) for p, v in programs.items()}
    drive: dict[str, dict[int, int]] = {}
    last = 0
    for p, prog in progs.items():
        cyc = prog.cycles().tolist()
        last = max(last, max(cyc))
        if p in spec.inputs:
            vals = inputs.get(p, [])
            if len(vals) < len(cyc):
                raise SimulationError(f"stimulus: port {p} needs {len(cyc)} values, got "
                                      f"{len(vals)}")
            drive[p] = dict(zip(cyc, (int(v) for v in vals), strict=False))
    for m in (chain_streams or {}).values():
        if m:
            last = max(last, max(m))
    total = last + spec.storage.read_latency + extra_cycles
    mask = (1 << spec.storage.data_width) - 1
    stall = list(stall) if stall else [1]
    if not any(stall):
        raise SimulationError("stimulus: the stall pattern never enables the clock")
    recs: list[dict[str, int]] = []
    base = {n: 0 for n in input_names(spec)}
    recs.append(dict(base, RESET=1, clk_en=0, flush=0))
    c = 0
    phys = 0
    while c < total:
        en = int(stall[phys % len(stall)])
        phys += 1
        r = dict(base, RESET=0, clk_en=en, flush=0)
        for p in spec.inputs:
            r[p] = drive.get(p, {}).get(c, rng.randrange(mask + 1)) if en else rng.randrange(
                mask + 1)
        for i in range(len(spec.outputs)):
            cs = (chain_streams or {}).get(str(i), {})
            if en and c in cs:
                r[f"chain_data_in_{i}"], r[f"chain_valid_in_{i}"] = cs[c] & mask, 1
            else:
                r[f"chain_data_in_{i}"] = rng.randrange(mask + 1)
                r[f"chain_valid_in_{i}"] = 0
        recs.append(r)
        c += en
    return Stimulus(recs, total)


def collect(preset: MemorySpec | str, records: Sequence[Mapping[str, int]],
            outputs: Sequence[Mapping[str, int]]) -> dict[str, list[tuple[int, int]]]:
    """(cycle, value) per output port from per-cycle outputs; cycles count enabled cycles
    since the last reset/flush record, and events before it are dropped; only enabled
    cycles are sampled."""
    spec = as_spec(preset)
    res: dict[str, list[tuple[int, int]]] = {q: [] for q in spec.outputs}
    c = None
    for rec, out in zip(records, outputs, strict=True):
        if rec.get("RESET", 0) or rec.get("flush", 0):
            c = 0
            res = {q: [] for q in spec.outputs}
            continue
        if c is None or not rec.get("clk_en", 1):
            continue
        for i, q in enumerate(spec.outputs):
            if out[f"valid_out_{i}"]:
                res[q].append((c, out[q]))
        c += 1
    return res


def run_model(preset: MemorySpec | str, config: Mapping[str, int], stim: Stimulus,
              form: str = "recurrence") -> dict[str, list[tuple[int, int]]]:
    """Run the cycle-accurate Python model on a stimulus; (cycle, value) per output."""
    model = make_model(preset, form)
    model.configure(config)
    outs = [model.step(r) for r in stim.records]
    return collect(preset, stim.records, outs)
