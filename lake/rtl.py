"""RTL of Lake memories via magma (one circuit per preset, cached by spec name).

Tile interface (``cgra.core`` conventions): ``CLK``, ``RESET`` (sync, active high),
``clk_en`` (0 = stall: every counter and register holds), ``flush`` (restart all
controllers, like RESET but keeps storage), data inputs ``data_in_<i>`` (16 bits), outputs
``data_out_<q>`` (16 bits) and ``valid_out_<q>`` (1 bit), chain inputs
``chain_data_in_<q>`` (16 bits) / ``chain_valid_in_<q>`` (1 bit), and one
``config_<field>`` input (``Bits[width]``) per field of :func:`lake.config.config_fields`.

Every controller is generated in recurrence form (:func:`controller`): counters
``cnt_k`` (extent_width bits), a running schedule value compared with the tile's cycle
counter (schedule_width bits), one running value per address generator, and a ``done``
flag; when the controller fires, the lowest level not at its maximum increments, the lower
levels clear and each running value adds that level's delta (config). The multiplier form
(:func:`controller` with ``form="multiplier"``) computes ``offset + sum stride_k * cnt_k``
from strides instead, for checking. The behaviour is identical to :mod:`lake.model`.

Lookup-table mode and config-memory port (specs with ``lut=True``, :mod:`lake.lut`):
extra ports ``config_mem_addr`` (``address_bits`` bits, a word index), ``config_mem_data``
(data width), ``config_mem_write``, ``config_mem_read`` (1 bit each) and
``config_mem_rdata`` (data width). ``config_mem_write`` = 1 writes
``storage[config_mem_addr] = config_mem_data`` at the clock edge whatever ``clk_en``,
``RESET`` and ``flush`` are, with priority over the write controller (whose write is lost
that cycle); while ``config_mem_read`` = 1 the storage read address is ``config_mem_addr``
and ``config_mem_rdata`` = ``storage[config_mem_addr]`` (combinational; 0 while
``config_mem_read`` = 0). Config field ``lut_mode`` = 1: the read address is
``data_in_0[:address_bits]`` (unsigned), ``data_out_0`` is registered (``LUT_LATENCY`` = 1
cycle: ``data_out_0`` at cycle t+1 = storage[``data_in_0`` at t]) and loads on every
cycle with ``clk_en`` = 1 (and no RESET / flush); ``valid_out_0`` = 1 after every such
cycle (0 after reset / flush); the write controller never writes; chaining is off.
With ``lut_mode`` = 0 and the config-memory inputs at 0 the tile behaves as without LUT.
"""
from __future__ import annotations

from functools import lru_cache

from cgra.hdl import m

from cgra.errors import SpecError
from lake.config import config_fields
from lake.spec import Controller, MemorySpec, as_spec, circuit_name


def _mux(pair, sel):
    """``pair[1] if sel else pair[0]`` as AND-OR logic.

    Written out instead of ``m.mux``: with ``m.mux`` CIRCT emits each 2-way mux as an
    index into a packed array (e.g. ``arr[~s]``), and the first version of this generator
    simulated wrongly under Verilator 5.006 (next-state muxes of the schedule registers
    selected 0); the AND-OR form is plain gate logic every tool reads the same way."""
    a, b = pair
    if isinstance(a, int) or isinstance(b, int):
        raise SpecError("internal: _mux needs magma values")
    T = type(a)
    if issubclass(T, m.Digital):
        return (a & ~sel) | (b & sel)
    w = len(a)
    rep = m.bits([sel] * w)
    if issubclass(T, m.UInt):
        rep = m.uint(rep)
    return (a & ~rep) | (b & rep)


def _mux_tree(values, sel):
    """``values[sel]`` as a binary tree of :func:`_mux` over the bits of ``sel`` (LSB
    first); ``len(values)`` must be ``2 ** len(sel)``."""
    level = list(values)
    for b in range(len(sel)):
        level = [_mux([level[2 * i], level[2 * i + 1]], sel[b]) for i in range(len(level) // 2)]
    return level[0]


def _reg(T, nxt, ce, name: str | None = None):
    """A register of type T with clock enable ``ce`` (no implicit reset; reset values are
    muxed into ``nxt`` so they can come from config)."""
    r = m.Register(T, has_enable=True)(name=name) if name else m.Register(T, has_enable=True)()
    r.I @= nxt
    r.CE @= ce
    return r.O


def _const(w: int, v: int):
    return m.UInt[w](v)


def _select(pairs, default):
    """Priority mux: the first (cond, value) whose cond is 1, else default."""
    out = default
    for cond, val in reversed(pairs):
        out = _mux([out, val], cond)
    return out


class _Regs:
    """Registers whose next value is assigned after creation (feedback)."""

    def __init__(self, T, ce, name: str):
        self.inst = m.Register(T, has_enable=True)(name=name)
        self.inst.CE @= ce
        self.O = self.inst.O

    def set(self, nxt) -> None:
        self.inst.I @= nxt


def controller(spec: MemorySpec, ctrl: Controller, cfg, cycle, run, restart,
               form: str = "recurrence"):
    """Instantiate one controller inside the current definition.

    ``cfg(name)`` returns the config input of field ``name`` as UInt; ``cycle`` is the
    schedule-width cycle counter; ``run`` = clk_en & ~restart; ``restart`` = RESET | flush.
    Returns ``(fire, {generator name: address UInt})``. ``form`` = "recurrence" (default
    hardware) or "multiplier" (address and schedule computed as offset + sum stride*cnt,
    where the strides are rebuilt from the deltas with a chain of adders).
    """
    c = ctrl.name
    n = ctrl.dims
    ew, sw = spec.extent_width, spec.schedule_width
    ce = run | restart
    enable = cfg(f"{c}_enable")[0]
    dim = cfg(f"{c}_dim")
    ranges = [cfg(f"{c}_range_{k}") for k in range(n)]
    cnt = [_Regs(m.UInt[ew], ce, f"{c}_cnt_{k}") for k in range(n)]
    done = _Regs(m.Bit, ce, f"{c}_done")
    at_max = [(cnt[k].O == ranges[k]) | (dim <= _const(3, k)) for k in range(n)]
    all_max = at_max[0]
    for k in range(1, n):
        all_max = all_max & at_max[k]
    inc = []
    below = m.Bit(1)
    for k in range(n):
        inc.append(below & ~at_max[k])
        below = below & at_max[k]
    generators = [("sched", sw, f"{c}_sched")] + [
        (g.name, g.width, f"{c}_{g.name}") for g in ctrl.address_generators]
    values = {}
    if form == "recurrence":
        running = {}
        for gname, w, _prefix in generators:
            running[gname] = _Regs(m.UInt[w], ce, f"{c}_{gname}_value")
        sched = running["sched"].O
        fire = enable & ~done.O & (sched == cycle)
        step = fire & ~all_max
        for gname, w, prefix in generators:
            deltas = [cfg(f"{prefix}_delta_{k}") for k in range(n)]
            d = _select(list(zip(inc, deltas, strict=True)), _const(w, 0))
            cur = running[gname].O
            nxt = _mux([_mux([cur, cur + d], step), cfg(f"{prefix}_offset")], restart)
            running[gname].set(nxt)
            values[gname] = cur
    elif form == "multiplier":
        for gname, w, prefix in generators:
            deltas = [cfg(f"{prefix}_delta_{k}") for k in range(n)]
            # stride_k = delta_k + sum_{j<k} range_j * stride_j   (modulo 2**w)
            strides = []
            wrap = _const(w, 0)
            for k in range(n):
                s = deltas[k] + wrap
                strides.append(s)
                rk = ranges[k]
                rk_w = rk[:w] if ew >= w else m.zext_to(rk, w)
                wrap = wrap + m.uint(rk_w) * s
            total = cfg(f"{prefix}_offset")
            for k in range(n):
                ck = cnt[k].O[:w] if ew >= w else m.zext_to(cnt[k].O, w)
                total = total + m.uint(ck) * strides[k]
            values[gname] = total
        sched = values["sched"]
        fire = enable & ~done.O & (sched == cycle)
        step = fire & ~all_max
    else:
        raise SpecError(f"controller {c}: unknown generator form '{form}' "
                        "(use 'recurrence' or 'multiplier')")
    for k in range(n):
        clear = m.Bit(0)
        for j in range(k + 1, n):
            clear = clear | inc[j]
        nxt_k = _mux([_mux([cnt[k].O, cnt[k].O + _const(ew, 1)], inc[k]), _const(ew, 0)],
                      clear)
        nxt_k = _mux([cnt[k].O, nxt_k], step)
        cnt[k].set(_mux([nxt_k, _const(ew, 0)], restart))
    done.set(_mux([done.O | (fire & all_max), m.Bit(0)], restart))
    return fire, {g.name: values[g.name] for g in ctrl.address_generators}


def _io(spec: MemorySpec):
    ports = dict(clk_en=m.In(m.Bit), flush=m.In(m.Bit))
    for p in spec.inputs:
        ports[p] = m.In(m.Bits[spec.storage.data_width])
    for i, q in enumerate(spec.outputs):
        ports[q] = m.Out(m.Bits[spec.storage.data_width])
        ports[f"valid_out_{i}"] = m.Out(m.Bit)
        ports[f"chain_data_in_{i}"] = m.In(m.Bits[spec.storage.data_width])
        ports[f"chain_valid_in_{i}"] = m.In(m.Bit)
    for f in config_fields(spec):
        ports[f"config_{f.name}"] = m.In(m.Bits[f.width])
    if spec.lut:
        ports["config_mem_addr"] = m.In(m.Bits[spec.address_bits])
        ports["config_mem_data"] = m.In(m.Bits[spec.storage.data_width])
        ports["config_mem_write"] = m.In(m.Bit)
        ports["config_mem_read"] = m.In(m.Bit)
        ports["config_mem_rdata"] = m.Out(m.Bits[spec.storage.data_width])
    return m.IO(**ports) + m.ClockIO(has_reset=True)


def _body(spec: MemorySpec, io, form: str) -> None:
    dw = spec.storage.data_width
    sw = spec.schedule_width
    ab = spec.address_bits

    def cfg(fname):
        return m.uint(getattr(io, f"config_{fname}"))

    restart = m.bit(io.RESET) | io.flush
    run = io.clk_en & ~restart
    ce = io.clk_en | restart
    cycle = _Regs(m.UInt[sw], ce, "cycle")
    cycle.set(_mux([cycle.O + _const(sw, 1), _const(sw, 0)], restart))
    chain_en = cfg("chain_enable")[0]
    chain_id = cfg("chain_id")
    lut = cfg("lut_mode")[0] if spec.lut else None
    if lut is not None:
        chain_en = chain_en & ~lut      # chaining is off in lookup-table mode

    def match(addr):
        return ~chain_en | (addr[ab:] == chain_id)

    ctl = {}
    for c in spec.controllers:
        ctl[c.name] = controller(spec, c, cfg, cycle.O, run, restart, form)

    outs = []  # (local valid, local data) per output
    if not spec.wide:
        cap = spec.storage.capacity
        (fw_, aw), = [ctl[f"in{i}"] for i in range(len(spec.inputs))]
        (fr_, ar), = [ctl[f"out{i}"] for i in range(len(spec.outputs))]
        waddr, raddr = aw["addr"], ar["addr"]
        we = fw_ & match(waddr) & run
        data_in = getattr(io, spec.inputs[0])
        rsel = raddr[:ab]               # the address the storage read port sees
        if lut is not None:
            we = we & ~lut              # the write controller never writes in LUT mode
        if spec.storage.kind == "sram":
            mem = m.Memory(cap, m.Bits[dw], read_latency=0)(name="storage")
            if lut is None:
                mem.RADDR @= m.bits(raddr[:ab])
                mem.WADDR @= m.bits(waddr[:ab])
                mem.WDATA @= data_in
                mem.WE @= we
            else:
                # read address: config read > LUT index (data_in_0) > read controller
                index = data_in[:ab] if dw >= ab else m.zext_to(data_in, ab)
                ra = _mux([m.bits(raddr[:ab]), m.bits(index)], lut)
                ra = _mux([ra, io.config_mem_addr], io.config_mem_read)
                mem.RADDR @= ra
                # write port: config write (any clk_en, even in reset) > write controller
                cw = io.config_mem_write
                mem.WADDR @= _mux([m.bits(waddr[:ab]), io.config_mem_addr], cw)
                mem.WDATA @= _mux([data_in, io.config_mem_data], cw)
                mem.WE @= we | cw
                we = we & ~cw
                rd_any = m.bits([io.config_mem_read] * dw)
                io.config_mem_rdata @= mem.RDATA & rd_any
                rsel = m.uint(ra)
            rdata = mem.RDATA
        else:
            regs = []
            for k in range(cap):
                regs.append(_reg(m.Bits[dw], data_in, we & (waddr[:ab] == _const(ab, k)),
                                 name=f"storage_{k}"))
            rdata = _mux_tree(regs, raddr[:ab])
        bypass = we & (waddr[:ab] == rsel)
        rd = _mux([rdata, data_in], bypass)
        rmatch = fr_ & match(raddr)
        if lut is None:
            odata = _reg(m.Bits[dw], rd, run & rmatch, name="out_data_0")
            ovalid = _reg(m.Bit, _mux([rmatch, m.Bit(0)], restart), ce, name="out_valid_0")
        else:
            # LUT mode: data_out_0 = storage[data_in_0] one cycle later, valid every cycle
            odata = _reg(m.Bits[dw], rd, run & (rmatch | lut), name="out_data_0")
            ovalid = _reg(m.Bit, _mux([rmatch | lut, m.Bit(0)], restart), ce,
                          name="out_valid_0")
        outs.append((ovalid, odata))
    else:
        fw = spec.storage.fetch_width
        cap = spec.storage.capacity
        n_in, n_out = len(spec.inputs), len(spec.outputs)
        slot_w = (2 * fw - 1).bit_length()
        aggs = []
        for p in range(n_in):
            fire, a = ctl[f"in{p}"]
            din = getattr(io, spec.inputs[p])
            aggs.append([_reg(m.Bits[dw], din, run & fire & (a["addr"] == _const(slot_w, s)),
                              name=f"agg{p}_{s}") for s in range(2 * fw)])
        # single SRAM port, port select by priority
        order = list(spec.port_selects[0].controllers)
        sel = []
        for name in order:
            fire, a = ctl[name]
            sel.append((fire & match(a["addr"]), name))
        taken = m.Bit(0)
        onehot = {}
        for cond, name in sel:
            onehot[name] = cond & ~taken
            taken = taken | cond
        sram_addr = _select([(onehot[nm], ctl[nm][1]["addr"][:ab]) for nm in order],
                            _const(ab, 0))
        wdata = m.Bits[fw * dw](0)
        wr = m.Bit(0)
        for p in range(n_in):
            nm = f"agg{p}"
            half = ctl[nm][1]["half"][0]
            words = [_mux([aggs[p][i], aggs[p][fw + i]], half) for i in range(fw)]
            wdata = _mux([wdata, m.concat(*words)], onehot[nm])
            wr = wr | onehot[nm]
        rd_any = m.Bit(0)
        for q in range(n_out):
            rd_any = rd_any | onehot[f"tb{q}"]
        mem = m.Memory(cap, m.Bits[fw * dw], read_latency=0)(name="storage")
        mem.RADDR @= m.bits(sram_addr)
        mem.WADDR @= m.bits(sram_addr)
        mem.WDATA @= wdata
        mem.WE @= wr & run
        sram_rdata = _reg(m.Bits[fw * dw], mem.RDATA, rd_any & run, name="sram_rdata")
        for q in range(n_out):
            fire_tb, a_tb = ctl[f"tb{q}"]
            pend = _reg(m.Bit, _mux([fire_tb, m.Bit(0)], restart), ce, name=f"pend{q}")
            pend_half = _reg(m.Bit, a_tb["half"][0], run, name=f"pend_half{q}")
            pend_own = _reg(m.Bit, match(a_tb["addr"]), run, name=f"pend_own{q}")
            tb = []
            own = []
            for h in range(2):
                hit = pend & (pend_half if h else ~pend_half)
                for i in range(fw):
                    tb.append(_reg(m.Bits[dw], sram_rdata[i * dw:(i + 1) * dw],
                                   run & hit, name=f"tb{q}_{h * fw + i}"))
                own.append(_reg(m.Bit, _mux([pend_own, m.Bit(0)], restart),
                                (run & hit) | restart, name=f"own{q}_{h}"))
            fire_o, a_o = ctl[f"out{q}"]
            slot = a_o["addr"]
            odata = _reg(m.Bits[dw], _mux_tree(tb, slot), run & fire_o, name=f"out_data_{q}")
            vnext = fire_o & _mux(own, slot[slot_w - 1])
            ovalid = _reg(m.Bit, _mux([vnext, m.Bit(0)], restart), ce,
                          name=f"out_valid_{q}")
            outs.append((ovalid, odata))
    for q, (v, d) in enumerate(outs):
        cv = getattr(io, f"chain_valid_in_{q}") & chain_en
        use_chain = chain_en & ~v
        out_port = getattr(io, spec.outputs[q])
        out_port @= _mux([d, getattr(io, f"chain_data_in_{q}")], use_chain)
        valid_port = getattr(io, f"valid_out_{q}")
        valid_port @= v | cv


@lru_cache(maxsize=None)
def _build(spec: MemorySpec, form: str):

    class Mem(m.Circuit):
        name = circuit_name(spec, form)
        io = _io(spec)
        _body(spec, io, form)

    return Mem


def memory_circuit(preset: MemorySpec | str, form: str = "recurrence"):
    """The magma circuit of a memory (built once per process per spec and form)."""
    return _build(as_spec(preset), form)


def compile_verilog(preset: MemorySpec | str, basename: str, form: str = "recurrence",
                    **opts) -> str:
    """Write ``<basename>.v`` (mlir-verilog; ``opts`` are passed to ``m.compile``, e.g.
    ``disallow_local_variables=True`` for tools without SystemVerilog ``automatic``
    support) and return its path."""
    circ = memory_circuit(preset, form)
    m.compile(basename, circ, output="mlir-verilog", **opts)
    return basename + ".v"
