"""Ready-valid flow-control hardware for Canal's statically routed tracks (Verilog text).

A ready-valid track carries, beside its ``w``-bit data, a 1-bit *valid* routed with the data
through the same switch boxes (SB) and connection boxes (CB), and a 1-bit *ready* routed the
same way in the opposite direction (Cascade, Melchert et al., §V-D). A word moves across a
link in the cycle where both valid and ready are 1 (a *transfer*). Pipelining such a track
needs FIFOs, not plain registers: a register on data and valid alone breaks the single-cycle
ready handshake (Cascade §V-D), and a FIFO of two entries is the least that keeps one word
per cycle when its ready output is registered, since the upstream stage learns of a stall
one cycle late (Zhang, PhD thesis, ch. 3 "static network", per-hop skid-buffered flow
control with a 2-entry queue per switch input).

Primitives (one generator each; a module is generated once per parameter set,
:func:`functools.lru_cache`; each returns a :class:`VerilogModule`: module name, its text
and the modules it instantiates):

=======================  ==========================================================  =======
generator                behaviour                                                   latency
=======================  ==========================================================  =======
:func:`skid_fifo`        2-entry FIFO at one SB register site: registered ready       1 cycle
                         (``ready_out = not tail full``) and registered valid/data
                         (the head register); one word per cycle with no stalls.
:func:`split_fifo_half`  one entry at one SB register site; a *start* half (the      start 0,
                         upstream site) and an *end* half (the downstream site)       end 1,
                         together form one 2-entry FIFO equal to :func:`skid_fifo`    pair 1
                         at the ports in every cycle, data when valid (Cascade
                         §V-D, §VI-E: "a size two FIFO is constructed using two
                         adjacent switchbox registers").
:func:`rv_mux`           the SB / CB mux: data and valid of input ``S`` forwarded,    0
                         ready routed back to input ``S`` only.
:func:`rv_fork`          multicast: eager fork with a per-sink "taken" bit.           0
:func:`plain_mux`        a static track's mux inside a ready-valid tile (data only,   0
                         the ports of :func:`canal.rtl.mux_circuit`).
:func:`rv_channel`       a test/benchmark top: ``hops`` x (mux + FIFO) and an         see
                         optional fork to 2 sinks.                                    below
:func:`switch_box`       one SB, ``tracks`` x 4 sides, static / skid / split.         --
=======================  ==========================================================  =======

A tile generator written in magma (like :mod:`canal.rtl`) instantiates a primitive through
:func:`magma_circuit` (a declaration with the module's ports; magma emits it as an external
module) and adds :meth:`VerilogModule.source` to the RTL files it writes; a Verilog-text
generator (like :func:`canal.rtl.array_verilog`) uses ``name`` and ``text`` directly.

Port convention (Canal's ``FifoRegWrapper``): data in ``I``, data out ``O``; ``valid_in``
(from upstream), ``ready_out`` (to upstream), ``valid_out`` (to downstream), ``ready_in``
(from downstream). Every stateful module has ``CLK``, ``RESET`` (synchronous, active high:
all state including data registers cleared to 0) and ``clk_en`` (the array's stall, as in
:mod:`canal.rtl`: with ``clk_en = 0`` the module's state holds and an enabled FIFO or a fork
shows ``ready_out = 0`` and ``valid_out = 0``, so no transfer happens through it).
Configuration arrives on input ports (``S``, ``fifo_en``, ``fifo_end``, ``en``), the way
:func:`canal.rtl.mux_circuit` takes its select: a tile generator drives them from its config
registers.

Split FIFO detail. A half holds one word ``value`` and a ``full`` bit. The *start* half
(``fifo_end = 0``) shows ``ready_out = not full`` (a register) and passes data and valid
through combinationally while it is empty (``O = I``, ``valid_out = valid_in``); it stores
the word only when the downstream stage does not take it. The *end* half (``fifo_end = 1``)
shows ``valid_out = full`` and ``O = value`` (registers) and ``ready_out = not full or
ready_in``. So between the two sites valid and data run forward and ready runs backward
combinationally, each ending in a register of the other half: the pair cuts the forward path
at the end site and the ready path at the start site, with one register per site instead of
two (:func:`skid_fifo`'s ``tail`` is the start half's ``value``, its ``head`` the end half's).
This is the behaviour of Canal's ``SplitFifo`` (``start_fifo``/``end_fifo`` config bits),
re-derived here; Cascade's pipelining pass enables the two SB registers of the pattern
``SB, RMUX, SB, SB, RMUX`` together. A chain ``start, end, start, end, ...`` sustains one word
per cycle with a latency of one cycle per pair.

Fork policy: *eager* (Cortadella et al.'s eager fork, the Chisel ``EagerFork`` style): sink
``i`` sees ``valid_out_i = valid_in and en_i and not taken_i`` whatever the other sinks do; it
takes the word when ``valid_out_i and ready_in_i`` and then ``taken_i`` is set; the source
sees ``ready_out = AND_i (not en_i or taken_i or ready_in_i)``, so the word leaves when every
enabled sink has taken it (in the same cycle as the last take), and all ``taken`` bits clear.
No sink gets a word twice, and a slow sink does not stop a fast one from taking the current
word. (A lazy fork, ``valid_out_i = valid_in and AND_{j != i} ready_in_j``, needs no state but
puts a combinational path from every sink's ready to every other sink's valid; broadcasting
valid and ANDing readies without the taken bits, as Canal's ``InclusiveNodeFanout`` does for
the ready alone, would give a ready sink the same word again in every cycle another sink
stalls.) ``en`` all 0 is not a legal configuration (the fork would drop words):
:func:`check_fork_enable` raises.

Latency of :func:`rv_channel` from a transfer into ``I`` to ``valid_out`` of the last stage,
with no stalls: skid hops 1 cycle each (``hops`` cycles); split hops ``hops / 2`` cycles
(one per start/end pair); hops with their FIFO disabled (``fifo_en = 0``) 0 cycles.
"""
from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from cgra.errors import ConfigError, SpecError
from cgra.hdl import m

from canal.config import select_width

#: FIFO kinds of a ready-valid hop: ``skid`` (2-entry FIFO per site), ``split`` (one half of
#: a 2-entry FIFO per site, alternating start/end), ``none`` (mux only, combinational)
FIFO_KINDS = ("skid", "split", "none")
#: switch-box flavours of :func:`switch_box`
SB_FLOWS = ("static", "skid", "split")
#: SB sides in canal's order (canal.graph.Side: NORTH, SOUTH, EAST, WEST)
SIDES = ("NORTH", "SOUTH", "EAST", "WEST")


@dataclass(frozen=True)
class VerilogModule:
    """One generated Verilog module: ``name``, ``text`` (this module only) and ``deps``, the
    modules it instantiates (each a :class:`VerilogModule`)."""

    name: str
    text: str
    deps: tuple["VerilogModule", ...] = ()

    def modules(self) -> list["VerilogModule"]:
        """This module and every module below it, each once, dependencies first."""
        out: list[VerilogModule] = []
        seen: set[str] = set()

        def visit(mod: VerilogModule) -> None:
            if mod.name in seen:
                return
            for d in mod.deps:
                visit(d)
            seen.add(mod.name)
            out.append(mod)
        visit(self)
        return out

    def source(self) -> str:
        """The Verilog text of :meth:`modules`, ready for a tool (Verilator, yosys)."""
        return "\n".join(mod.text for mod in self.modules())

    def digest(self) -> str:
        """16 hex digits of the sha256 of :meth:`source` (a content key for caches)."""
        return hashlib.sha256(self.source().encode()).hexdigest()[:16]

    @property
    def ports(self) -> tuple[tuple[str, str, int], ...]:
        """``(name, "in" | "out", width in bits)`` of each port, in declaration order."""
        head = self.text[self.text.index(f"module {self.name} ("):self.text.index(");")]
        return tuple((g[3], "in" if g[1] == "input" else "out",
                      int(g[2]) + 1 if g[2] is not None else 1)
                     for g in _PORT.finditer(head))


_PORT = re.compile(r"^\s*(input|output)\s+(?:\[(\d+):0\]\s*)?(\w+)", re.M)


def magma_circuit(mod: VerilogModule):
    """A magma declaration of ``mod`` (same name and ports; ``CLK`` is ``m.Clock``, 1-bit ports
    ``m.Bit``, wider ``m.Bits[w]``) for instantiation in a magma tile (:mod:`canal.rtl`
    style). magma emits it as an external module: the caller adds :meth:`VerilogModule.source`
    to the RTL files it writes. One declaration per module name (cached)."""
    return _magma_decl(mod.name, mod.ports)


@functools.lru_cache(maxsize=None)
def _magma_decl(name: str, ports: tuple[tuple[str, str, int], ...]):
    fields = {}
    for pname, direction, width in ports:
        t = m.Clock if pname == "CLK" else (m.Bit if width == 1 else m.Bits[width])
        fields[pname] = m.In(t) if direction == "in" else m.Out(t)
    decl_name = name

    class Declaration(m.Circuit):
        name = decl_name
        io = m.IO(**fields)
    return Declaration


def _vr(width: int) -> str:
    return f"[{width - 1}:0] " if width > 1 else ""


def _check_width(width: int, what: str) -> None:
    if not isinstance(width, int) or width < 1:
        raise SpecError(f"{what}: data width {width!r} must be an integer >= 1 (bits)",
                        construct=what)


def _check_count(count: int, what: str, noun: str) -> None:
    """:class:`SpecError` unless ``count`` (a fan-in, a sink count) is an integer >= 1."""
    if not isinstance(count, int) or count < 1:
        raise SpecError(f"{what}: {noun} {count!r} must be an integer >= 1", construct=what)


_HEADER = "// generated by canal.flow_control; do not edit\n"


@functools.lru_cache(maxsize=None)
def skid_fifo(width: int, tokens: int = 0) -> VerilogModule:
    """``RvSkidFifo_w<width>``: a 2-entry skid FIFO for a ``width``-bit ready-valid channel.

    Ports: ``CLK``, ``RESET``, ``clk_en``, ``fifo_en`` (config: 1 = FIFO, 0 = the site is a
    wire: ``O = I``, ``valid_out = valid_in``, ``ready_out = ready_in``), ``I[width]``,
    ``valid_in``, ``ready_out``, ``O[width]``, ``valid_out``, ``ready_in``.

    State: ``head``/``head_v`` (the output register: ``O = head``, ``valid_out = head_v``) and
    ``tail``/``tail_v`` (the skid register: ``ready_out = not tail_v``). Both outputs toward
    neighbours come from registers: no combinational path crosses the hop. Each cycle
    (``clk_en = 1``): if the head is free or leaving (``not head_v or ready_in``), it loads the
    tail if full (which empties), else ``I`` (``head_v = valid_in``); otherwise an incoming word
    goes to the tail. Capacity 2 words, latency 1 cycle, throughput 1 word per cycle with no
    stalls; after a downstream stall the upstream stage stops one cycle later and the tail
    catches the word in flight (Zhang, thesis ch. 3: "two entries are needed to cover the
    1-cycle delay of stalling the upstream switch").

    ``tokens = 1`` (module ``RvSkidFifo_w<width>_t1``): reset leaves one word, 0, in the head
    (``head_v = 1``): the elastic buffer of a register with reset value 0 (Cortadella et al.,
    "Synthesis of synchronous elastic architectures", DAC 2006: each flip-flop of a
    synchronous circuit becomes an elastic buffer holding its initial token, and the elastic
    circuit is transfer-equivalent to the synchronous one). With ``fifo_en = 0`` the token is
    not visible (the site is a wire).

    Raises :class:`SpecError` for ``width < 1`` or ``tokens`` not 0 or 1.
    """
    _check_width(width, "skid_fifo")
    if tokens not in (0, 1):
        raise SpecError(f"skid_fifo: tokens = {tokens!r}; a site holds 0 or 1 initial token")
    name = f"RvSkidFifo_w{width}" + ("_t1" if tokens else "")
    r = _vr(width)
    text = f"""{_HEADER}module {name} (
  input CLK,
  input RESET,
  input clk_en,
  input fifo_en,
  input {r}I,
  input valid_in,
  output ready_out,
  output {r}O,
  output valid_out,
  input ready_in
);
  reg {r}head;
  reg {r}tail;
  reg head_v;
  reg tail_v;
  assign ready_out = fifo_en ? (clk_en & ~tail_v) : ready_in;
  assign valid_out = fifo_en ? (clk_en & head_v) : valid_in;
  assign O = fifo_en ? head : I;
  always @(posedge CLK) begin
    if (RESET) begin
      head <= 0;
      tail <= 0;
      head_v <= 1'b{int(bool(tokens))};
      tail_v <= 1'b0;
    end else if (clk_en & fifo_en) begin
      if (~head_v | ready_in) begin
        if (tail_v) begin
          head <= tail;
          head_v <= 1'b1;
          tail_v <= 1'b0;
        end else begin
          head <= I;
          head_v <= valid_in;
        end
      end else if (valid_in & ~tail_v) begin
        tail <= I;
        tail_v <= 1'b1;
      end
    end
  end
endmodule
"""
    return VerilogModule(name, text)


@functools.lru_cache(maxsize=None)
def split_fifo_half(width: int) -> VerilogModule:
    """``RvSplitFifoHalf_w<width>``: one half of Cascade's split FIFO (one entry).

    Ports: as :func:`skid_fifo` plus ``fifo_end`` (config: 0 = *start* half, the upstream SB
    register site; 1 = *end* half, the downstream site). A start half followed (through any
    combinational muxes) by an end half behaves as one 2-entry FIFO, equal to
    :func:`skid_fifo` at the pair's ports in every cycle (``O`` when ``valid_out = 1``: an
    idle skid head reloads ``I``, an idle end half keeps its last word; see the module
    docstring).

    ======  =====================  =====================  ==========================
    half    ready_out              valid_out              O
    ======  =====================  =====================  ==========================
    start   ``not full``           ``full or valid_in``   ``value if full else I``
    end     ``not full or          ``full``               ``value``
            ready_in``
    ======  =====================  =====================  ==========================

    (each AND ``clk_en``; ``fifo_en = 0``: a wire). Update (``clk_en = 1``): with
    ``push = valid_in and ready_out`` and ``pop = valid_out and ready_in``, the half stores
    ``I`` and becomes full on a push that does not pass straight through (start half empty and
    popping in the same cycle), else empties on a pop. Latency: start 0 cycles (bypass when
    empty), end 1 cycle, a start/end pair 1 cycle; a pair moves one word per cycle.

    Raises :class:`SpecError` for ``width < 1``.
    """
    _check_width(width, "split_fifo_half")
    name = f"RvSplitFifoHalf_w{width}"
    r = _vr(width)
    text = f"""{_HEADER}module {name} (
  input CLK,
  input RESET,
  input clk_en,
  input fifo_en,
  input fifo_end,
  input {r}I,
  input valid_in,
  output ready_out,
  output {r}O,
  output valid_out,
  input ready_in
);
  reg {r}value;
  reg full;
  wire bypass = ~fifo_end & ~full;
  wire push = valid_in & ready_out;
  wire pop = valid_out & ready_in;
  assign ready_out = fifo_en ? (clk_en & (~full | (fifo_end & ready_in))) : ready_in;
  assign valid_out = fifo_en ? (clk_en & (full | (~fifo_end & valid_in))) : valid_in;
  assign O = (~fifo_en | bypass) ? I : value;
  always @(posedge CLK) begin
    if (RESET) begin
      value <= 0;
      full <= 1'b0;
    end else if (clk_en & fifo_en) begin
      if (push & ~(bypass & pop)) begin
        value <= I;
        full <= 1'b1;
      end else if (pop) begin
        full <= 1'b0;
      end
    end
  end
endmodule
"""
    return VerilogModule(name, text)


@functools.lru_cache(maxsize=None)
def rv_mux(height: int, width: int) -> VerilogModule:
    """``RvMux_h<height>_w<width>``: the ready-valid SB / CB mux (combinational, 0 cycles).

    Ports: ``I0..I<height-1>`` (``width`` bits), ``valid_in0..``, ``ready_out0..``; select
    ``S`` of :func:`canal.config.select_width` bits (absent for ``height = 1``; the select
    value is the index in the fan-in list, as in :func:`canal.rtl.mux_circuit`); ``O``,
    ``valid_out``, ``ready_in``. ``O = I[S]``, ``valid_out = valid_in[S]`` (0 for
    ``S >= height``), ``ready_out<i> = ready_in and S == i``: the ready goes back to the
    selected input only, so an unselected source never sees a transfer.

    Raises :class:`SpecError` for ``height < 1`` or ``width < 1``.
    """
    _check_width(width, "rv_mux")
    _check_count(height, "rv_mux", "fan-in")
    name = f"RvMux_h{height}_w{width}"
    r = _vr(width)
    sw = select_width(height)
    ports = []
    for i in range(height):
        ports += [f"  input {r}I{i}", f"  input valid_in{i}", f"  output ready_out{i}"]
    if height > 1:
        ports.append(f"  input {_vr(sw)}S")
    ports += [f"  output {r}O", "  output valid_out", "  input ready_in"]
    body = []
    if height == 1:
        body += ["  assign O = I0;", "  assign valid_out = valid_in0;",
                 "  assign ready_out0 = ready_in;"]
    else:
        o = "0"
        v = "1'b0"
        for i in reversed(range(height)):
            o = f"(S == {sw}'d{i}) ? I{i} : {o}"
            v = f"(S == {sw}'d{i}) ? valid_in{i} : {v}"
        body += [f"  assign O = {o};", f"  assign valid_out = {v};"]
        body += [f"  assign ready_out{i} = ready_in & (S == {sw}'d{i});" for i in range(height)]
    text = (f"{_HEADER}module {name} (\n" + ",\n".join(ports) + "\n);\n"
            + "\n".join(body) + "\nendmodule\n")
    return VerilogModule(name, text)


@functools.lru_cache(maxsize=None)
def plain_mux(height: int, width: int) -> VerilogModule:
    """``RvPlainMux_h<height>_w<width>``: the mux of a static track in a ready-valid tile
    (a per-width ``flow_control`` table), ports as :func:`canal.rtl.mux_circuit`'s:
    ``I0..I<height-1>`` (``width`` bits), select ``S`` (absent for ``height = 1``), ``O`` =
    ``I[S]`` (0 for ``S >= height``). An instance per mux, like the static tile's
    ``CanalMux``, so the measured timing model (:mod:`canal.timing_paths`) times it through
    its pins. Raises :class:`SpecError` for ``height < 1`` or ``width < 1``."""
    _check_width(width, "plain_mux")
    _check_count(height, "plain_mux", "fan-in")
    name = f"RvPlainMux_h{height}_w{width}"
    r = _vr(width)
    sw = select_width(height)
    ports = [f"  input {r}I{i}" for i in range(height)]
    if height > 1:
        ports.append(f"  input {_vr(sw)}S")
    ports.append(f"  output {r}O")
    o = "I0"
    if height > 1:
        o = f"{width}'d0"
        for i in reversed(range(height)):
            o = f"(S == {sw}'d{i}) ? I{i} : {o}"
    text = (f"{_HEADER}module {name} (\n" + ",\n".join(ports) + "\n);\n"
            + f"  assign O = {o};\nendmodule\n")
    return VerilogModule(name, text)


def check_fork_enable(en: Sequence[int] | int, sinks: int, where: str = "fork") -> None:
    """Raise :class:`ConfigError` unless ``en`` (a sequence of ``sinks`` bits, or an int mask)
    enables at least one sink: a fork with no enabled sink would drop every word."""
    mask = en if isinstance(en, int) else sum(int(b) << i for i, b in enumerate(en))
    if not 0 < mask < (1 << sinks):
        raise ConfigError(f"{where}: fork enable mask {mask:#x} must enable 1..{sinks} sinks "
                          f"(bits 0..{sinks - 1}); 0 would drop every word")


@functools.lru_cache(maxsize=None)
def rv_fork(sinks: int, width: int) -> VerilogModule:
    """``RvFork_n<sinks>_w<width>``: eager multicast fork of one ready-valid channel.

    Ports: ``CLK``, ``RESET``, ``clk_en``, ``en[sinks]`` (config: bit ``i`` = sink ``i`` is a
    destination of the net), ``I``, ``valid_in``, ``ready_out``, and per sink ``O<i>``
    (= ``I``), ``valid_out<i>``, ``ready_in<i>``. State: ``taken[sinks]`` (reset 0).
    ``valid_out<i> = clk_en and valid_in and en[i] and not taken[i]``;
    ``ready_out = clk_en and AND_i (not en[i] or taken[i] or ready_in<i>)``. Update
    (``clk_en = 1``): on a transfer at the input all ``taken`` clear; otherwise
    ``taken[i] |= valid_out<i> and ready_in<i>``. Latency 0 cycles; one word per cycle when
    every enabled sink is ready. See the module docstring for the policy (eager).

    Raises :class:`SpecError` for ``sinks < 1`` or ``width < 1``.
    """
    _check_width(width, "rv_fork")
    _check_count(sinks, "rv_fork", "sink count")
    name = f"RvFork_n{sinks}_w{width}"
    r = _vr(width)
    n = sinks
    ports = ["  input CLK", "  input RESET", "  input clk_en", f"  input {_vr(n)}en",
             f"  input {r}I", "  input valid_in", "  output ready_out"]
    for i in range(n):
        ports += [f"  output {r}O{i}", f"  output valid_out{i}", f"  input ready_in{i}"]
    ready_in = "{" + ", ".join(f"ready_in{i}" for i in reversed(range(n))) + "}"
    body = [f"  reg {_vr(n)}taken;",
            f"  wire {_vr(n)}rdy = {ready_in};",
            f"  wire {_vr(n)}done = ~en | taken | rdy;",
            f"  wire {_vr(n)}vout = (clk_en & valid_in) ? (en & ~taken) : {n}'d0;",
            "  assign ready_out = clk_en & (&done);"]
    body += [f"  assign O{i} = I;\n  assign valid_out{i} = vout[{i}];" for i in range(n)]
    body += ["  always @(posedge CLK) begin",
             "    if (RESET) taken <= 0;",
             "    else if (clk_en) begin",
             "      if (valid_in & ready_out) taken <= 0;",
             "      else taken <= taken | (vout & rdy);",
             "    end",
             "  end"]
    text = (f"{_HEADER}module {name} (\n" + ",\n".join(ports) + "\n);\n"
            + "\n".join(body) + "\nendmodule\n")
    return VerilogModule(name, text)


@dataclass(frozen=True)
class ChannelParams:
    """A ready-valid channel top (:func:`rv_channel`): ``hops`` stages, each a mux of fan-in
    ``mux_height`` and a FIFO site of kind ``fifo`` (:data:`FIFO_KINDS`), ``width``-bit data,
    and with ``fork`` a 2-sink eager fork after the last hop."""

    hops: int = 4
    fifo: str = "skid"
    width: int = 16
    mux_height: int = 4
    fork: bool = False

    def check(self) -> None:
        """Raise :class:`SpecError` when a field is out of range."""
        if self.fifo not in FIFO_KINDS:
            raise SpecError(f"ChannelParams.fifo = {self.fifo!r}: expected one of {FIFO_KINDS}",
                            construct="ChannelParams")
        if not isinstance(self.hops, int) or self.hops < 1:
            raise SpecError(f"ChannelParams.hops = {self.hops!r}: expected an integer >= 1",
                            construct="ChannelParams")
        if not isinstance(self.mux_height, int) or self.mux_height < 1:
            raise SpecError(f"ChannelParams.mux_height = {self.mux_height!r}: expected an "
                            "integer >= 1", construct="ChannelParams")
        _check_width(self.width, "ChannelParams")

    @property
    def sinks(self) -> int:
        """Sinks at the end of the channel (2 with a fork, else 1)."""
        return 2 if self.fork else 1

    @property
    def select_width(self) -> int:
        """Bits of one hop's mux select (:func:`canal.config.select_width`)."""
        return select_width(self.mux_height)

    def chain_input(self, hop: int) -> int:
        """Index of the channel's own input in hop ``hop``'s mux (``hop mod mux_height``); the
        other inputs carry the distractor ``alt`` channel."""
        return hop % self.mux_height

    @property
    def module_name(self) -> str:
        """``RvChannel_<fifo>_n<hops>_h<mux_height>_w<width>[_fork]``."""
        return (f"RvChannel_{self.fifo}_n{self.hops}_h{self.mux_height}_w{self.width}"
                + ("_fork" if self.fork else ""))


@dataclass(frozen=True)
class ChannelConfig:
    """Configuration of a :func:`rv_channel` top (one value per hop / sink, bits 0/1 or a select
    value): ``sel`` mux selects, ``fifo_en``, ``fifo_end`` (split only: 0 start, 1 end half),
    ``fork_en`` (fork only). :meth:`default` is the working configuration."""

    sel: tuple[int, ...]
    fifo_en: tuple[int, ...]
    fifo_end: tuple[int, ...]
    fork_en: tuple[int, ...]

    @staticmethod
    def default(p: ChannelParams) -> "ChannelConfig":
        """Every hop selects the channel, every FIFO enabled, split halves alternate start/end
        (hop ``i`` is an end half when ``i`` is odd), every sink of the fork enabled."""
        return ChannelConfig(sel=tuple(p.chain_input(i) for i in range(p.hops)),
                             fifo_en=tuple(0 if p.fifo == "none" else 1 for _ in range(p.hops)),
                             fifo_end=tuple(i % 2 for i in range(p.hops)),
                             fork_en=tuple(1 for _ in range(p.sinks)))

    def check(self, p: ChannelParams) -> None:
        """Raise :class:`ConfigError` if a tuple has the wrong length or a value out of range,
        if the fork enables no sink, or if enabled split halves do not alternate start/end
        (a start half must be followed by an end half before the next start half)."""
        for field_name, n, hi in (("sel", p.hops, (1 << p.select_width) - 1),
                                  ("fifo_en", p.hops, 1), ("fifo_end", p.hops, 1),
                                  ("fork_en", p.sinks, 1)):
            vals = getattr(self, field_name)
            if len(vals) != n or any(not 0 <= int(v) <= hi for v in vals):
                raise ConfigError(f"{p.module_name}: config {field_name} = {vals}: expected "
                                  f"{n} values in 0..{hi}")
        check_fork_enable(self.fork_en, p.sinks, p.module_name)
        if p.fifo == "split":
            ends = [e for en, e in zip(self.fifo_en, self.fifo_end, strict=True) if en]
            if ends != [i % 2 for i in range(len(ends))]:
                raise ConfigError(f"{p.module_name}: enabled split halves have fifo_end = "
                                  f"{ends}; they must alternate start (0), end (1), ... and "
                                  "end with an end half")
            if len(ends) % 2:
                raise ConfigError(f"{p.module_name}: {len(ends)} split halves enabled: a "
                                  "start half needs an end half after it")

    def mask(self, field_name: str) -> int:
        """A bit tuple (``fifo_en``, ``fifo_end``, ``fork_en``) as an int, element ``i`` at
        bit ``i``: the value of the top port of that name."""
        return sum(int(b) << i for i, b in enumerate(getattr(self, field_name)))

    def sel_word(self, p: ChannelParams) -> int:
        """The ``sel`` port value: hop ``i``'s select at bits ``[i*sw, (i+1)*sw)``."""
        return sum(int(s) << (i * p.select_width) for i, s in enumerate(self.sel))


def _fifo_module(p: ChannelParams) -> VerilogModule | None:
    if p.fifo == "skid":
        return skid_fifo(p.width)
    if p.fifo == "split":
        return split_fifo_half(p.width)
    return None


@functools.lru_cache(maxsize=None)
def rv_channel(p: ChannelParams) -> VerilogModule:
    """The channel top :attr:`ChannelParams.module_name` (tests and benchmarks).

    Ports: ``CLK``, ``RESET``, ``clk_en``; the source ``I``, ``valid_in``, ``ready_out``; a
    distractor ``alt_I``, ``alt_valid`` driving every mux input other than the channel's
    (:meth:`ChannelParams.chain_input`) and ``alt_ready`` (OR of the readies the muxes give
    those inputs: 0 in every cycle when the selects are right); config ``sel``
    (``hops * select_width`` bits, present when ``mux_height > 1``), ``fifo_en`` (``hops``
    bits, absent for ``fifo = none``), ``fifo_end`` (``hops`` bits, split only), ``fork_en``
    (2 bits, fork only); the sinks ``O<k>``, ``valid_out<k>``, ``ready_in<k>`` for
    ``k < sinks``. Hop ``i``: ``mux<i>`` (:func:`rv_mux`) then ``fifo<i>``
    (:func:`skid_fifo` / :func:`split_fifo_half`); then ``fork0`` (:func:`rv_fork`, 2 sinks).

    Raises :class:`SpecError` for bad parameters (:meth:`ChannelParams.check`).
    """
    p.check()
    w, n, h = p.width, p.hops, p.mux_height
    r = _vr(w)
    sw = p.select_width
    mux = rv_mux(h, w)
    fifo = _fifo_module(p)
    fork = rv_fork(2, w) if p.fork else None
    deps = tuple(d for d in (mux, fifo, fork) if d is not None)
    ports = ["  input CLK", "  input RESET", "  input clk_en",
             f"  input {r}I", "  input valid_in", "  output ready_out",
             f"  input {r}alt_I", "  input alt_valid", "  output alt_ready"]
    if h > 1:
        ports.append(f"  input {_vr(n * sw)}sel")
    if fifo is not None:
        ports.append(f"  input {_vr(n)}fifo_en")
    if p.fifo == "split":
        ports.append(f"  input {_vr(n)}fifo_end")
    if fork is not None:
        ports.append("  input [1:0] fork_en")
    for k in range(p.sinks):
        ports += [f"  output {r}O{k}", f"  output valid_out{k}", f"  input ready_in{k}"]
    body = []
    for i in range(n + 1):
        body += [f"  wire {r}d{i};", f"  wire v{i};", f"  wire r{i};"]
    body += [f"  wire {_vr(n * h)}alt_r;",
             "  assign d0 = I;", "  assign v0 = valid_in;", "  assign ready_out = r0;"]
    for i in range(n):
        k = p.chain_input(i)
        mx = [f"  {mux.name} mux{i} ("]
        for j in range(h):
            src = (f"d{i}", f"v{i}") if j == k else ("alt_I", "alt_valid")
            rdy = f"r{i}" if j == k else f"alt_r[{i * h + j}]"
            mx += [f"    .I{j}({src[0]}),", f"    .valid_in{j}({src[1]}),",
                   f"    .ready_out{j}({rdy}),"]
        if h > 1:
            mx.append(f"    .S(sel[{i * sw + sw - 1}:{i * sw}]),")
        if fifo is None:
            mx += [f"    .O(d{i + 1}),", f"    .valid_out(v{i + 1}),", f"    .ready_in(r{i + 1})",
                   "  );"]
            body += mx
            continue
        mx += [f"    .O(m{i}_d),", f"    .valid_out(m{i}_v),", f"    .ready_in(m{i}_r)", "  );"]
        body += [f"  wire {r}m{i}_d;", f"  wire m{i}_v;", f"  wire m{i}_r;"] + mx
        body += [f"  {fifo.name} fifo{i} (", "    .CLK(CLK),", "    .RESET(RESET),",
                 "    .clk_en(clk_en),", f"    .fifo_en(fifo_en[{i}]),"]
        if p.fifo == "split":
            body.append(f"    .fifo_end(fifo_end[{i}]),")
        body += [f"    .I(m{i}_d),", f"    .valid_in(m{i}_v),", f"    .ready_out(m{i}_r),",
                 f"    .O(d{i + 1}),", f"    .valid_out(v{i + 1}),", f"    .ready_in(r{i + 1})",
                 "  );"]
    # unselected mux inputs' readies (the chain's own bits are left undriven in alt_r: tie 0)
    own = {i * h + p.chain_input(i) for i in range(n)}
    for b in sorted(own):
        body.append(f"  assign alt_r[{b}] = 1'b0;")
    body.append("  assign alt_ready = |alt_r;")
    if fork is None:
        body += [f"  assign O0 = d{n};", f"  assign valid_out0 = v{n};",
                 f"  assign r{n} = ready_in0;"]
    else:
        body += [f"  {fork.name} fork0 (", "    .CLK(CLK),", "    .RESET(RESET),",
                 "    .clk_en(clk_en),", "    .en(fork_en),", f"    .I(d{n}),",
                 f"    .valid_in(v{n}),", f"    .ready_out(r{n}),",
                 "    .O0(O0),", "    .valid_out0(valid_out0),", "    .ready_in0(ready_in0),",
                 "    .O1(O1),", "    .valid_out1(valid_out1),", "    .ready_in1(ready_in1)",
                 "  );"]
    text = (f"{_HEADER}module {p.module_name} (\n" + ",\n".join(ports) + "\n);\n"
            + "\n".join(body) + "\nendmodule\n")
    return VerilogModule(p.module_name, text, deps)


def _sb_port(side: str, track: int, suffix: str) -> str:
    return f"T{track}_{side}_{suffix}"


def _sb_fanin(side: str, sides: Iterable[str] = SIDES) -> list[str]:
    """Disjoint topology: SB_OUT on ``side`` takes the SB_IN of the same track on the other
    three sides, in :data:`SIDES` order (the select value is the index in this list)."""
    return [s for s in sides if s != side]


@functools.lru_cache(maxsize=None)
def switch_box(tracks: int, width: int, flow: str) -> VerilogModule:
    """``SB_<flow>_t<tracks>_w<width>``: one switch box with ``tracks`` tracks on each of the
    4 sides, disjoint topology (SB_OUT ``(side, t)`` <- SB_IN ``(other side, t)``, fan-in 3),
    one pipeline site per SB_OUT; for benchmarks (area), not yet the tile's SB.

    ``flow`` (:data:`SB_FLOWS`):

    * ``static``: per SB_OUT a 3:1 mux, a ``width``-bit pipeline register enabled by
      ``clk_en`` (reset 0) and the register mux (RMUX) choosing register or mux (config
      ``reg_en``), the structure :mod:`canal.rtl` emits; ports ``T<t>_<SIDE>_SB_IN`` /
      ``_SB_OUT``, config ``T<t>_<SIDE>_sel[2]``, ``T<t>_<SIDE>_reg_en``.
    * ``skid`` / ``split``: per SB_OUT an :func:`rv_mux` of fan-in 3 and a :func:`skid_fifo`
      / :func:`split_fifo_half` (config ``_fifo_en``, and ``_fifo_end`` for split); each SB_IN
      gets ``_SB_IN_valid`` and ``_SB_IN_ready`` (OR of the readies of the 3 muxes it feeds:
      a unicast fan-out, at most one selects it), each SB_OUT ``_SB_OUT_valid`` and
      ``_SB_OUT_ready``.

    Config arrives on ports in every flavour, so cell counts compare datapath and flow
    control only. Raises :class:`SpecError` for an unknown ``flow`` or ``tracks < 1``.
    """
    if flow not in SB_FLOWS:
        raise SpecError(f"switch_box: flow {flow!r}: expected one of {SB_FLOWS}",
                        construct="switch_box")
    if not isinstance(tracks, int) or tracks < 1:
        raise SpecError(f"switch_box: tracks = {tracks!r}: expected an integer >= 1",
                        construct="switch_box")
    _check_width(width, "switch_box")
    name = f"SB_{flow}_t{tracks}_w{width}"
    r = _vr(width)
    ports = ["  input CLK", "  input RESET", "  input clk_en"]
    body: list[str] = []
    deps: tuple[VerilogModule, ...] = ()
    if flow == "static":
        for t in range(tracks):
            for s in SIDES:
                ports += [f"  input {r}{_sb_port(s, t, 'SB_IN')}",
                          f"  output {r}{_sb_port(s, t, 'SB_OUT')}",
                          f"  input [1:0] {_sb_port(s, t, 'sel')}",
                          f"  input {_sb_port(s, t, 'reg_en')}"]
                fan = [_sb_port(x, t, "SB_IN") for x in _sb_fanin(s)]
                sel = _sb_port(s, t, "sel")
                mname = f"m_T{t}_{s}"
                q = f"q_T{t}_{s}"
                body += [f"  wire {r}{mname} = ({sel} == 2'd0) ? {fan[0]} : ({sel} == 2'd1) ? "
                         f"{fan[1]} : ({sel} == 2'd2) ? {fan[2]} : {width}'d0;",
                         f"  reg {r}{q};",
                         f"  always @(posedge CLK) if (RESET) {q} <= 0; "
                         f"else if (clk_en) {q} <= {mname};",
                         f"  assign {_sb_port(s, t, 'SB_OUT')} = "
                         f"{_sb_port(s, t, 'reg_en')} ? {q} : {mname};"]
    else:
        mux = rv_mux(3, width)
        fifo = skid_fifo(width) if flow == "skid" else split_fifo_half(width)
        deps = (mux, fifo)
        for t in range(tracks):
            for s in SIDES:
                ports += [f"  input {r}{_sb_port(s, t, 'SB_IN')}",
                          f"  input {_sb_port(s, t, 'SB_IN_valid')}",
                          f"  output {_sb_port(s, t, 'SB_IN_ready')}",
                          f"  output {r}{_sb_port(s, t, 'SB_OUT')}",
                          f"  output {_sb_port(s, t, 'SB_OUT_valid')}",
                          f"  input {_sb_port(s, t, 'SB_OUT_ready')}",
                          f"  input [1:0] {_sb_port(s, t, 'sel')}",
                          f"  input {_sb_port(s, t, 'fifo_en')}"]
                if flow == "split":
                    ports.append(f"  input {_sb_port(s, t, 'fifo_end')}")
            for s in SIDES:
                md, mv, mr = f"md_T{t}_{s}", f"mv_T{t}_{s}", f"mr_T{t}_{s}"
                body += [f"  wire {r}{md};", f"  wire {mv};", f"  wire {mr};"]
                inst = [f"  {mux.name} mux_T{t}_{s} ("]
                for j, x in enumerate(_sb_fanin(s)):
                    inst += [f"    .I{j}({_sb_port(x, t, 'SB_IN')}),",
                             f"    .valid_in{j}({_sb_port(x, t, 'SB_IN_valid')}),",
                             f"    .ready_out{j}(rdy_T{t}_{x}_to_{s}),"]
                inst += [f"    .S({_sb_port(s, t, 'sel')}),", f"    .O({md}),",
                         f"    .valid_out({mv}),", f"    .ready_in({mr})", "  );"]
                for x in _sb_fanin(s):
                    body.append(f"  wire rdy_T{t}_{x}_to_{s};")
                body += inst
                body += [f"  {fifo.name} fifo_T{t}_{s} (", "    .CLK(CLK),", "    .RESET(RESET),",
                         "    .clk_en(clk_en),", f"    .fifo_en({_sb_port(s, t, 'fifo_en')}),"]
                if flow == "split":
                    body.append(f"    .fifo_end({_sb_port(s, t, 'fifo_end')}),")
                body += [f"    .I({md}),", f"    .valid_in({mv}),", f"    .ready_out({mr}),",
                         f"    .O({_sb_port(s, t, 'SB_OUT')}),",
                         f"    .valid_out({_sb_port(s, t, 'SB_OUT_valid')}),",
                         f"    .ready_in({_sb_port(s, t, 'SB_OUT_ready')})", "  );"]
            for x in SIDES:
                terms = " | ".join(f"rdy_T{t}_{x}_to_{s}" for s in SIDES if s != x)
                body.append(f"  assign {_sb_port(x, t, 'SB_IN_ready')} = {terms};")
    text = (f"{_HEADER}module {name} (\n" + ",\n".join(ports) + "\n);\n"
            + "\n".join(body) + "\nendmodule\n")
    return VerilogModule(name, text, deps)
