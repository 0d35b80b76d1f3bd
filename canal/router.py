"""The dynamic (packet-switched) layer of Canal: an input-queued virtual-channel router and
an N x M mesh of them, emitted as Verilog text (issue 33, items 3-5).

Source: Y. Zhang, *Scaling a Reconfigurable Dataflow Accelerator*, PhD thesis, Stanford
2020, ch. 3.3.2 "Design Space for Network Architectures" (the ISCA 2019 paper "Scalable
Interconnects for Reconfigurable Spatial Architectures"): "a dynamic NoC using per-hop
virtual channel flow control. Routing and Virtual Channel (VC) assignment are table-based:
the compiler performs static routing and VC allocation, and results are loaded as a part of
the routers' configurations at runtime. The router has a separable, input-first VC and switch
allocator ... Input buffers are sized just large enough (3 entries) to avoid credit stalls at
full throughput. Broadcasts are handled in the network with duplication occurring at the last
router possible ... each router sends broadcasts to output ports sequentially and in a fixed
order ... a smaller bus taking multiple cycles to transmit a packet." and ch. 3.3.3: "each
packet carries a unique ID that is used to look up the output port and next VC in a
statically generated routing table".

Micro-architecture (the Python model :mod:`canal.netsim` matches it cycle for cycle):

* Ports ``0..4`` = N, E, S, W, L (:class:`Port`; L = local inject/eject). Coordinates as in
  :mod:`canal.graph`: x the column (0 = west), y the row (0 = north); N of (x, y) is (x, y-1).
* A flit on a link: ``valid``, ``vc`` (``vc_bits``), ``id`` (``id_bits``, the flow id) and
  ``flit`` (``flit_width`` payload bits). Every flit carries the id (there is no head/body
  split): a packet of ``data_width`` bits is ``ceil(data_width / flit_width)`` flits, LSB part
  first, all on the same VC; a VC of a link carries one logical route only (the thesis's
  deadlock rule, enforced by :mod:`canal.vc_alloc`), so its flits stay in order.
* Input port ``p`` has ``vcs`` FIFOs of ``buffers`` flits. A link flit is written into FIFO
  ``vc`` at the clock edge of the cycle it is on the link.
* Routing table per input port: ``ids`` entries of :meth:`RouterParams.entry_width` bits,
  indexed by the head flit's id: ``mask`` (bits ``[0, 5)``, the output-port set) and, per
  output port ``o``, the next VC (bits ``[5 + o*vc_bits, 5 + (o+1)*vc_bits)``). VC
  allocation is therefore static (table lookup, as in the thesis); the VC allocator of the
  router reduces to that lookup and no speculation is needed.
* Broadcast: the head flit of an input VC is sent to the ports of ``mask`` one per cycle in
  ascending port order (N, E, S, W, L); a per-VC ``sent`` mask records the ports served and
  the flit is popped with its last copy.
* Switch allocation, separable input-first, one iteration, in the cycle the flit is at the
  FIFO head: an input VC *requests* when its FIFO is not empty, its pending mask
  ``mask & ~sent`` is not empty and the target ``o`` (lowest pending port) has a credit for
  the next VC (output L always has). Stage 1: per input port a round-robin arbiter over its
  VCs picks one requester (pointer ``rri[p]``: the first requesting VC in the order
  ``rri, rri+1, ... mod vcs``). Stage 2: per output port a round-robin arbiter over the 5
  input ports whose stage-1 winner targets it (pointer ``rro[o]``, same rule mod 5). On a
  grant, ``rro[o] := p + 1 mod 5`` and ``rri[p] := v + 1 mod vcs``; no grant, no change.
* Switch traversal in the same cycle: the granted flit is written into the output register
  of ``o`` (``out_valid``, ``out_vc`` = the table's next VC, ``out_id``, ``out_flit``), which
  drives the link during the next cycle. So a hop costs 2 cycles (allocation + link) and a
  flit injected in cycle t (written into the local FIFO at that edge) leaves the eject
  register of a router h hops away in cycle ``t + 1 + 2 h`` at zero load (``t + 1`` at the
  source router); a broadcast copy waits one more cycle per lower-numbered port of its
  divergence router.
* Credit-based flow control between routers: output ``o`` < 4 holds a credit counter per VC
  (reset ``buffers``), decremented when a flit is sent on that VC and incremented by the
  registered credit ``cin_valid/cin_vc`` returned by the downstream input port when it pops
  a flit; an incoming credit counts in the same cycle (``credit != 0 or cin for this VC``).
  Credit round trip = 3 cycles, so 3 buffers sustain one flit per cycle per VC (thesis: "3
  entries ... to avoid credit stalls"). The local input port is on/off instead:
  ``in_ready[v] = count[v] < buffers`` (registered state only). The local output (eject) is
  always accepted (the PB sink is not modelled).

Config (the tile config bus of docs/interfaces.md): address ``reg << 24 | feature << 16 | x
<< 8 | y``; routing-table entry ``id`` of input port ``p`` is register ``reg = id`` of feature
``feature_base + p``, data = the entry (low :meth:`RouterParams.entry_width` bits). Written
when ``config_write`` and ``config_addr[15:0] == tile_id``; ``read_data`` returns the addressed
entry when ``config_read``, else 0. Reset (``RESET``, sync, active high) clears the tables.
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from cgra.config import CONFIG_DATA_WIDTH, config_address
from cgra.errors import ConfigError

#: number of router ports: N, E, S, W and the local inject/eject port
NUM_PORTS = 5


class Port(enum.IntEnum):
    """Router port; the integer is the port index in RTL names, tables and masks."""

    N = 0
    E = 1
    S = 2
    W = 3
    L = 4

    @property
    def opposite(self) -> Port:
        """The port of the neighbour that faces this one (L has none: ConfigError)."""
        if self is Port.L:
            raise ConfigError("the local port L has no opposite port")
        return Port((self + 2) % 4)

    @property
    def delta(self) -> tuple[int, int]:
        """(dx, dy) to the neighbour behind this port (x east, y south)."""
        return {Port.N: (0, -1), Port.E: (1, 0), Port.S: (0, 1), Port.W: (-1, 0),
                Port.L: (0, 0)}[self]


def clog2(n: int) -> int:
    """ceil(log2(n)) for n >= 1 (0 for n = 1)."""
    return max(0, (n - 1).bit_length())


@dataclass(frozen=True)
class RouterParams:
    """Parameters of one router (thesis Table 3.2: ``v#`` VCs, ``b#`` buffers per VC, ``f#``
    flit width).

    ``ports`` must be 5 (N, E, S, W, local); ``vcs`` >= 1; ``buffers`` >= 1 flits per VC
    FIFO (default 3, the thesis's); ``flit_width`` payload bits per flit; ``data_width`` bits
    per packet (a packet is :attr:`flits_per_packet` flits); ``ids`` routing-table entries per
    input port (flow ids ``0 .. ids-1``, at most 256: the 8-bit ``reg`` of the config
    address); ``feature_base`` the config feature of input port 0.
    Raises :class:`ConfigError` naming the field when a value is out of range.
    """

    ports: int = NUM_PORTS
    vcs: int = 2
    buffers: int = 3
    flit_width: int = 16
    data_width: int = 16
    ids: int = 16
    feature_base: int = 0
    eject_credits: bool = False

    def __post_init__(self) -> None:
        if self.ports != NUM_PORTS:
            raise ConfigError(f"RouterParams.ports={self.ports}: only 5-port mesh routers "
                              "(N, E, S, W, local) are supported")
        for name, lo in (("vcs", 1), ("buffers", 1), ("flit_width", 1), ("data_width", 1),
                         ("ids", 1)):
            if getattr(self, name) < lo:
                raise ConfigError(f"RouterParams.{name}={getattr(self, name)} must be >= {lo}")
        if self.ids > 256:
            raise ConfigError(f"RouterParams.ids={self.ids} must be <= 256 (the config "
                              "address's 8-bit reg field indexes the table)")
        if not 0 <= self.feature_base <= 256 - NUM_PORTS:
            raise ConfigError(f"RouterParams.feature_base={self.feature_base} must be in "
                              f"0..{256 - NUM_PORTS}")
        if self.entry_width > CONFIG_DATA_WIDTH:
            raise ConfigError(f"RouterParams.vcs={self.vcs}: a routing-table entry of "
                              f"{self.entry_width} bits exceeds the 32-bit config register; "
                              "use at most 32 VCs")

    @property
    def vc_bits(self) -> int:
        """Bits of a VC number on a link and in a table entry (>= 1)."""
        return max(1, clog2(self.vcs))

    @property
    def id_bits(self) -> int:
        """Bits of the flow id carried by every flit (>= 1)."""
        return max(1, clog2(self.ids))

    @property
    def count_bits(self) -> int:
        """Bits of a FIFO occupancy / credit counter (holds 0..buffers)."""
        return max(1, clog2(self.buffers + 1))

    @property
    def ptr_bits(self) -> int:
        """Bits of a FIFO read/write pointer (0..buffers-1)."""
        return max(1, clog2(self.buffers))

    @property
    def entry_width(self) -> int:
        """Bits of a routing-table entry: 5-bit port mask + 5 next-VC fields."""
        return NUM_PORTS + NUM_PORTS * self.vc_bits

    @property
    def flits_per_packet(self) -> int:
        """ceil(data_width / flit_width): cycles a packet occupies a link."""
        return math.ceil(self.data_width / self.flit_width)

    @property
    def module_name(self) -> str:
        return (f"canal_router_v{self.vcs}_b{self.buffers}_f{self.flit_width}"
                f"_i{self.ids}_fb{self.feature_base}" + ("_ec" if self.eject_credits else ""))


@dataclass(frozen=True)
class TableEntry:
    """One routing-table entry: ``ports`` the output-port set (broadcast when > 1 port) and
    ``next_vc`` the VC on each of them (port -> VC)."""

    ports: frozenset[Port]
    next_vc: Mapping[Port, int]

    def encode(self, p: RouterParams) -> int:
        """The entry as :meth:`RouterParams.entry_width` bits (see the module docstring).
        Raises ConfigError for a VC outside ``0 .. vcs-1`` or a port without a VC."""
        word = 0
        for port in self.ports:
            if port not in self.next_vc:
                raise ConfigError(f"table entry: output port {port.name} has no next VC")
            vc = self.next_vc[port]
            if not 0 <= vc < p.vcs:
                raise ConfigError(f"table entry: next VC {vc} on port {port.name} is outside "
                                  f"0..{p.vcs - 1}")
            word |= 1 << port
            word |= vc << (NUM_PORTS + port * p.vc_bits)
        return word

    @staticmethod
    def decode(word: int, p: RouterParams) -> TableEntry:
        """Inverse of :meth:`encode`."""
        ports = frozenset(Port(o) for o in range(NUM_PORTS) if word >> o & 1)
        mask = (1 << p.vc_bits) - 1
        return TableEntry(ports, {o: word >> (NUM_PORTS + o * p.vc_bits) & mask for o in ports})


#: tables of one router: input port -> flow id -> entry
RouterTables = Mapping[Port, Mapping[int, TableEntry]]


def table_config_writes(tables: Mapping[tuple[int, int], RouterTables],
                        p: RouterParams) -> list[tuple[int, int]]:
    """Config (addr, data) pairs that load ``tables`` ((x, y) -> input port -> id -> entry):
    register ``id`` of feature ``feature_base + port`` of tile (x, y), sorted by address.
    Raises ConfigError for an id outside ``0 .. ids-1``."""
    writes = []
    for (x, y), per_port in tables.items():
        for port, entries in per_port.items():
            for fid, entry in entries.items():
                if not 0 <= fid < p.ids:
                    raise ConfigError(f"router ({x}, {y}) port {Port(port).name}: flow id "
                                      f"{fid} is outside the table 0..{p.ids - 1}")
                writes.append((config_address(fid, p.feature_base + port, x, y),
                               entry.encode(p)))
    return sorted(writes)


# ---------------------------------------------------------------- Verilog of one router

def _rr_arbiter(reqs: Sequence[str], ptr: str, grants: Sequence[str]) -> list[str]:
    """Round-robin arbiter as assigns: grant j = req j and no request before j in the cyclic
    order starting at ``ptr``."""
    n = len(reqs)
    lines = []
    for j in range(n):
        terms = []
        for k in range(n):
            before = [reqs[(k + d) % n] for d in range((j - k) % n)]
            blocked = f" & ~({' | '.join(before)})" if before else ""
            terms.append(f"({ptr} == {k}){blocked}")
        lines.append(f"  assign {grants[j]} = {reqs[j]} & ({' | '.join(terms)});")
    return lines


def router_verilog(p: RouterParams) -> str:
    """Verilog text of one router module (:attr:`RouterParams.module_name`); ports as in the
    module docstring: ``CLK``, ``RESET``, the config bus, and per port ``p`` in 0..4 the link
    input ``in_valid_p/in_vc_p/in_id_p/in_flit_p``, ``in_ready_p`` (vcs bits), the credit
    output ``cr_valid_p/cr_vc_p``, the registered link output
    ``out_valid_p/out_vc_p/out_id_p/out_flit_p`` and the credit input ``cin_valid_p/cin_vc_p``."""
    P, V, B = NUM_PORTS, p.vcs, p.buffers
    VB, IB, CB, PB, E, F = p.vc_bits, p.id_bits, p.count_bits, p.ptr_bits, p.entry_width, \
        p.flit_width
    FW = F + IB
    L: list[str] = []
    a = L.append
    ports = ["  input CLK", "  input RESET", "  input [31:0] config_addr",
             "  input [31:0] config_data", "  input config_write", "  input config_read",
             "  input [15:0] tile_id", "  output [31:0] read_data"]
    for q in range(P):
        ports += [f"  input in_valid_{q}", f"  input [{VB - 1}:0] in_vc_{q}",
                  f"  input [{IB - 1}:0] in_id_{q}", f"  input [{F - 1}:0] in_flit_{q}",
                  f"  output [{V - 1}:0] in_ready_{q}",
                  f"  output reg cr_valid_{q}", f"  output reg [{VB - 1}:0] cr_vc_{q}",
                  f"  output reg out_valid_{q}", f"  output reg [{VB - 1}:0] out_vc_{q}",
                  f"  output reg [{IB - 1}:0] out_id_{q}",
                  f"  output reg [{F - 1}:0] out_flit_{q}",
                  f"  input cin_valid_{q}", f"  input [{VB - 1}:0] cin_vc_{q}"]
    if p.eject_credits:
        ports.append(f"  input [{V - 1}:0] ej_credit")
    credited = range(P if p.eject_credits else P - 1)
    a(f"// generated by canal.router ({p}); do not edit")
    a(f"module {p.module_name} (")
    a(",\n".join(ports))
    a(");")
    a("  integer k;")
    # config
    a("  wire cfg_hit = config_addr[15:0] == tile_id;")
    a("  wire [7:0] cfg_feat = config_addr[23:16];")
    a("  wire [7:0] cfg_reg = config_addr[31:24];")
    a(f"  wire cfg_reg_ok = cfg_reg < {p.ids};")
    rd_terms = []
    for q in range(P):
        a(f"  reg [{E - 1}:0] tbl{q} [0:{p.ids - 1}];")
        a(f"  wire cfg_sel{q} = cfg_hit & cfg_reg_ok & (cfg_feat == {p.feature_base + q});")
        rd_terms.append(f"(cfg_sel{q} ? tbl{q}[cfg_reg[{IB - 1}:0]] : {E}'d0)")
    pad = f"{{{32 - E}'d0}}, " if E < 32 else ""
    a(f"  wire [{E - 1}:0] rd_entry = {' | '.join(rd_terms)};")
    a(f"  assign read_data = config_read ? {{{pad}rd_entry}} : 32'd0;")
    # credits of outputs 0..3 (and L with eject_credits) and their availability
    for o in credited:
        for u in range(V):
            cin = (f"ej_credit[{u}]" if o == Port.L
                   else f"(cin_valid_{o} & (cin_vc_{o} == {u}))")
            a(f"  reg [{CB - 1}:0] cred{o}_{u};")
            a(f"  wire cok{o}_{u} = (cred{o}_{u} != 0) | {cin};")
    # input VCs
    for q in range(P):
        for v in range(V):
            n = f"q{q}_{v}"
            for k in range(B):
                a(f"  reg [{FW - 1}:0] {n}_m{k};")
            a(f"  reg [{PB - 1}:0] {n}_rd, {n}_wr;")
            a(f"  reg [{CB - 1}:0] {n}_cnt;")
            a(f"  reg [{P - 1}:0] {n}_sent;")
            head = f"{n}_m{B - 1}"
            for k in reversed(range(B - 1)):
                head = f"({n}_rd == {k}) ? {n}_m{k} : {head}"
            a(f"  wire [{FW - 1}:0] {n}_head = {head};")
            a(f"  wire [{IB - 1}:0] {n}_id = {n}_head[{IB - 1}:0];")
            a(f"  wire [{F - 1}:0] {n}_flit = {n}_head[{FW - 1}:{IB}];")
            a(f"  wire [{E - 1}:0] {n}_ent = tbl{q}[{n}_id];")
            a(f"  wire [{P - 1}:0] {n}_pend = {n}_ent[{P - 1}:0] & ~{n}_sent;")
            a(f"  wire [{P - 1}:0] {n}_tgt = {n}_pend & (~{n}_pend + {P}'d1);")
            oks = []
            for o in range(P):
                a(f"  wire [{VB - 1}:0] {n}_nv{o} = {n}_ent[{P + o * VB + VB - 1}:{P + o * VB}];")
                if o == Port.L and not p.eject_credits:
                    oks.append(f"{n}_tgt[{o}]")
                else:
                    cv = " | ".join(f"(({n}_nv{o} == {u}) & cok{o}_{u})" for u in range(V))
                    oks.append(f"({n}_tgt[{o}] & ({cv}))")
            a(f"  wire {n}_req = ({n}_cnt != 0) & (|{n}_pend) & ({' | '.join(oks)});")
            a(f"  wire {n}_we = in_valid_{q} & (in_vc_{q} == {v});")
        a(f"  assign in_ready_{q} = {{" + ", ".join(
            f"q{q}_{v}_cnt < {B}" for v in reversed(range(V))) + "};")
        # stage 1: per input port over its VCs
        a(f"  reg [{VB - 1}:0] rri{q};")
        for v in range(V):
            a(f"  wire w{q}_{v};")
        L.extend(_rr_arbiter([f"q{q}_{v}_req" for v in range(V)], f"rri{q}",
                             [f"w{q}_{v}" for v in range(V)]))
        a(f"  wire [{P - 1}:0] t{q} = " + " | ".join(
            f"({{{P}{{w{q}_{v}}}}} & q{q}_{v}_tgt)" for v in range(V)) + ";")
    # stage 2: per output port over the input ports
    for o in range(P):
        a(f"  reg [2:0] rro{o};")
        for q in range(P):
            a(f"  wire g{o}_{q};")
        L.extend(_rr_arbiter([f"t{q}[{o}]" for q in range(P)], f"rro{o}",
                             [f"g{o}_{q}" for q in range(P)]))
    for q in range(P):
        a(f"  wire ig{q} = " + " | ".join(f"g{o}_{q}" for o in range(P)) + ";")
        for v in range(V):
            n = f"q{q}_{v}"
            a(f"  wire gv{q}_{v} = w{q}_{v} & ig{q};")
            a(f"  wire {n}_pop = gv{q}_{v} & (({n}_pend & ~{n}_tgt) == {P}'d0);")
    # output muxes
    for o in range(P):
        sels = [(q, v) for q in range(P) for v in range(V)]
        for q, v in sels:
            a(f"  wire s{o}_{q}_{v} = g{o}_{q} & w{q}_{v};")
        a(f"  wire ov{o} = " + " | ".join(f"g{o}_{q}" for q in range(P)) + ";")
        a(f"  wire [{VB - 1}:0] onv{o} = " + " | ".join(
            f"({{{VB}{{s{o}_{q}_{v}}}}} & q{q}_{v}_nv{o})" for q, v in sels) + ";")
        a(f"  wire [{IB - 1}:0] oid{o} = " + " | ".join(
            f"({{{IB}{{s{o}_{q}_{v}}}}} & q{q}_{v}_id)" for q, v in sels) + ";")
        a(f"  wire [{F - 1}:0] ofl{o} = " + " | ".join(
            f"({{{F}{{s{o}_{q}_{v}}}}} & q{q}_{v}_flit)" for q, v in sels) + ";")
    # sequential
    a("  always @(posedge CLK) begin")
    a("    if (RESET) begin")
    for q in range(P):
        a(f"      for (k = 0; k < {p.ids}; k = k + 1) tbl{q}[k] <= {E}'d0;")
        a(f"      rri{q} <= 0; rro{q} <= 0;")
        a(f"      cr_valid_{q} <= 0; cr_vc_{q} <= 0;")
        a(f"      out_valid_{q} <= 0; out_vc_{q} <= 0; out_id_{q} <= 0; out_flit_{q} <= 0;")
        for v in range(V):
            n = f"q{q}_{v}"
            a(f"      {n}_rd <= 0; {n}_wr <= 0; {n}_cnt <= 0; {n}_sent <= 0;")
            a("      " + " ".join(f"{n}_m{k} <= 0;" for k in range(B)))
    for o in credited:
        for u in range(V):
            a(f"      cred{o}_{u} <= {B};")
    a("    end else begin")
    for q in range(P):
        a(f"      if (config_write & cfg_sel{q}) tbl{q}[cfg_reg[{IB - 1}:0]] <= "
          f"config_data[{E - 1}:0];")
        for v in range(V):
            n = f"q{q}_{v}"
            for k in range(B):
                a(f"      if ({n}_we & ({n}_wr == {k})) {n}_m{k} <= {{in_flit_{q}, in_id_{q}}};")
            a(f"      if ({n}_we) {n}_wr <= ({n}_wr == {B - 1}) ? 0 : {n}_wr + 1;")
            a(f"      if ({n}_pop) {n}_rd <= ({n}_rd == {B - 1}) ? 0 : {n}_rd + 1;")
            a(f"      {n}_cnt <= {n}_cnt + {{{{{CB - 1}{{1'b0}}}}, {n}_we}} - "
              f"{{{{{CB - 1}{{1'b0}}}}, {n}_pop}};" if CB > 1 else
              f"      {n}_cnt <= {n}_cnt + {n}_we - {n}_pop;")
            a(f"      {n}_sent <= {n}_pop ? {P}'d0 : (gv{q}_{v} ? ({n}_sent | {n}_tgt) : "
              f"{n}_sent);")
            a(f"      if (gv{q}_{v}) rri{q} <= {(v + 1) % V};")
        a(f"      cr_valid_{q} <= " + " | ".join(f"q{q}_{v}_pop" for v in range(V)) + ";")
        a(f"      cr_vc_{q} <= " + " | ".join(
            f"({{{VB}{{q{q}_{v}_pop}}}} & {VB}'d{v})" for v in range(V)) + ";")
    for o in range(P):
        for q in range(P):
            a(f"      if (g{o}_{q}) rro{o} <= {(q + 1) % P};")
        a(f"      out_valid_{o} <= ov{o}; out_vc_{o} <= onv{o}; out_id_{o} <= oid{o}; "
          f"out_flit_{o} <= ofl{o};")
    for o in credited:
        for u in range(V):
            cin = (f"ej_credit[{u}]" if o == Port.L
                   else f"(cin_valid_{o} & (cin_vc_{o} == {u}))")
            a(f"      cred{o}_{u} <= cred{o}_{u} - ((ov{o} & (onv{o} == {u})) ? 1 : 0) + "
              f"({cin} ? 1 : 0);")
    a("    end")
    a("  end")
    a("endmodule")
    return "\n".join(L) + "\n"


# ---------------------------------------------------------------- the mesh

@dataclass(frozen=True)
class MeshParams:
    """A ``width`` x ``height`` mesh of identical routers (x = column, y = row).
    Raises ConfigError when a dimension is < 1 or > 256 (8-bit x/y of the config address)."""

    width: int = 4
    height: int = 4
    router: RouterParams = RouterParams()

    def __post_init__(self) -> None:
        for name in ("width", "height"):
            if not 1 <= getattr(self, name) <= 256:
                raise ConfigError(f"MeshParams.{name}={getattr(self, name)} must be in 1..256")

    @property
    def module_name(self) -> str:
        return f"canal_mesh_{self.width}x{self.height}_{self.router.module_name}"

    def nodes(self) -> Iterable[tuple[int, int]]:
        """Routers in row-major order (y outer, x inner)."""
        return ((x, y) for y in range(self.height) for x in range(self.width))

    def neighbour(self, x: int, y: int, port: Port) -> tuple[int, int] | None:
        """The router behind ``port`` of (x, y), or None at the mesh edge / for L."""
        if port is Port.L:
            return None
        dx, dy = port.delta
        nx, ny = x + dx, y + dy
        if 0 <= nx < self.width and 0 <= ny < self.height:
            return nx, ny
        return None


def mesh_port_names(x: int, y: int) -> dict[str, str]:
    """Top-level port names of node (x, y) of the mesh: inject ``inj_valid/inj_vc/inj_id/
    inj_flit`` (inputs), ``inj_ready`` (vcs bits) and eject ``ej_valid/ej_vc/ej_id/ej_flit``."""
    return {k: f"{k}_{x}_{y}" for k in ("inj_valid", "inj_vc", "inj_id", "inj_flit",
                                         "inj_ready", "ej_valid", "ej_vc", "ej_id", "ej_flit")}


def mesh_verilog(mp: MeshParams) -> str:
    """Verilog text of the router module and the mesh top :attr:`MeshParams.module_name`:
    ``CLK``, ``RESET``, the config bus (``read_data`` = OR of the routers'), per node the
    ports of :func:`mesh_port_names`; router (x, y) has ``tile_id = x << 8 | y``; links and
    credits between neighbours, 0 at the mesh edge."""
    p = mp.router
    VB, IB, F, V = p.vc_bits, p.id_bits, p.flit_width, p.vcs
    L = [router_verilog(p)]
    a = L.append
    ports = ["  input CLK", "  input RESET", "  input [31:0] config_addr",
             "  input [31:0] config_data", "  input config_write", "  input config_read",
             "  output [31:0] read_data"]
    for x, y in mp.nodes():
        n = mesh_port_names(x, y)
        ports += [f"  input {n['inj_valid']}", f"  input [{VB - 1}:0] {n['inj_vc']}",
                  f"  input [{IB - 1}:0] {n['inj_id']}", f"  input [{F - 1}:0] {n['inj_flit']}",
                  f"  output [{V - 1}:0] {n['inj_ready']}",
                  f"  output {n['ej_valid']}", f"  output [{VB - 1}:0] {n['ej_vc']}",
                  f"  output [{IB - 1}:0] {n['ej_id']}", f"  output [{F - 1}:0] {n['ej_flit']}"]
    a(f"module {mp.module_name} (")
    a(",\n".join(ports))
    a(");")
    for x, y in mp.nodes():
        for o in range(NUM_PORTS):
            s = f"l_{x}_{y}_{o}"
            a(f"  wire {s}_valid; wire [{VB - 1}:0] {s}_vc; wire [{IB - 1}:0] {s}_id; "
              f"wire [{F - 1}:0] {s}_flit; wire {s}_crv; wire [{VB - 1}:0] {s}_crvc;")
        a(f"  wire [31:0] rd_{x}_{y};")
    for x, y in mp.nodes():
        n = mesh_port_names(x, y)
        conns = [".CLK(CLK)", ".RESET(RESET)", ".config_addr(config_addr)",
                 ".config_data(config_data)", ".config_write(config_write)",
                 ".config_read(config_read)", f".tile_id(16'd{x << 8 | y})",
                 f".read_data(rd_{x}_{y})"]
        for o in Port:
            s = f"l_{x}_{y}_{o.value}"
            if o is Port.L:
                conns += [f".in_valid_4({n['inj_valid']})", f".in_vc_4({n['inj_vc']})",
                          f".in_id_4({n['inj_id']})", f".in_flit_4({n['inj_flit']})",
                          f".in_ready_4({n['inj_ready']})", ".cin_valid_4(1'b0)",
                          f".cin_vc_4({VB}'d0)"]
            else:
                nb = mp.neighbour(x, y, o)
                conns.append(f".in_ready_{o.value}()")
                if nb is None:
                    conns += [f".in_valid_{o.value}(1'b0)", f".in_vc_{o.value}({VB}'d0)",
                              f".in_id_{o.value}({IB}'d0)", f".in_flit_{o.value}({F}'d0)",
                              f".cin_valid_{o.value}(1'b0)", f".cin_vc_{o.value}({VB}'d0)"]
                else:
                    t = f"l_{nb[0]}_{nb[1]}_{o.opposite.value}"
                    conns += [f".in_valid_{o.value}({t}_valid)", f".in_vc_{o.value}({t}_vc)",
                              f".in_id_{o.value}({t}_id)", f".in_flit_{o.value}({t}_flit)",
                              f".cin_valid_{o.value}({t}_crv)", f".cin_vc_{o.value}({t}_crvc)"]
            conns += [f".out_valid_{o.value}({s}_valid)", f".out_vc_{o.value}({s}_vc)",
                      f".out_id_{o.value}({s}_id)", f".out_flit_{o.value}({s}_flit)",
                      f".cr_valid_{o.value}({s}_crv)", f".cr_vc_{o.value}({s}_crvc)"]
        a(f"  {p.module_name} r_{x}_{y} (\n    " + ",\n    ".join(conns) + "\n  );")
        s = f"l_{x}_{y}_4"
        a(f"  assign {n['ej_valid']} = {s}_valid; assign {n['ej_vc']} = {s}_vc; "
          f"assign {n['ej_id']} = {s}_id; assign {n['ej_flit']} = {s}_flit;")
    a("  assign read_data = " + " | ".join(f"rd_{x}_{y}" for x, y in mp.nodes()) + ";")
    a("endmodule")
    return "\n".join(L) + "\n"
