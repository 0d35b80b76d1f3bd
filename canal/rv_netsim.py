"""Cycle-level Python model of the ready-valid static network (issue 33, item 5, the static
layer; :mod:`canal.netsim` is the dynamic one): the routes of a configured ready-valid array
(:func:`canal.rv_rtl.rv_array`, skid FIFOs, cores in the generated handshake wrapper), one
source socket and several sink sockets driven as :mod:`canal.rv_array_sim`'s Verilator
testbench drives them (the same xorshift64 draws in the same order), so every transfer
happens in the same cycle as in the RTL (tests/canal/test_rv_netsim.py checks every
transfer's cycle against Verilator). Per-link activity counters: the words that crossed each
route node.

The model is built from the routes alone (the bitstream :func:`canal.ready_valid.rv_bitstream`
writes for them: every node on a route has its valid enable set, a ``REG`` node on a path is
an enabled FIFO site, no other FIFO is). Per cycle, as in the RTL:

* valid travels forward: a source socket's valid is the harness's, a FIFO site's is its head
  register (``head_v``), a node with one child in the route tree passes it, a node with
  several children is an eager fork (:func:`canal.flow_control.rv_fork`: child ``i`` sees
  ``valid and not taken[i]``), a wrapped core's output is ``join and not sent[port]`` (the
  join: every used input valid; :func:`canal.rv_rtl.rv_array`);
* ready travels back: a sink socket's ready is the harness's draw, a FIFO site's is ``not
  tail_v``, a fork's is the AND over its children of ``taken or ready``, a wrapped core's
  input's is its ``fire`` (the join and every used output taken now or before);
* at the clock edge the FIFOs (:func:`canal.flow_control.skid_fifo`), the forks' ``taken``
  and the cores' ``sent`` flags update.

Tokens are numbered: the source's k-th word is token k, a core's k-th fire produces token k
on each output (its state advances only on fires). ``fifo_tokens = 1`` starts every FIFO
site with one token, numbered -1 (the reset word 0 of ``RvSkidFifo_w<w>_t1``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from cgra.errors import ConfigError

from canal.graph import InterconnectGraph, NodeKind

#: a socket or core port: (port name, x, y)
PortRef = tuple[str, int, int]
#: the harness's xorshift64 (canal.rv_array_sim.harness_source)
_MASK = (1 << 64) - 1


class _Rng:
    def __init__(self, seed: int):
        self.s = (seed * 2654435761 + 88172645463325252) & _MASK

    def draw(self) -> int:
        s = self.s
        s ^= (s << 13) & _MASK
        s ^= s >> 7
        s ^= (s << 17) & _MASK
        self.s = s
        return s


@dataclass
class RvTransfers:
    """One run of the model: ``sent`` (cycle, token) at the source, ``received`` per sink
    (cycle, token), and ``link_words``: route node id -> words that crossed it."""

    sent: list[tuple[int, int]]
    received: tuple[list[tuple[int, int]], ...]
    link_words: dict[str, int] = field(default_factory=dict)


@dataclass
class _Fifo:
    head_v: bool = False
    tail_v: bool = False
    head: int = 0
    tail: int = 0


class _Net:
    """The route trees of one run and their state (module docstring); :meth:`cycle` is one
    clock cycle."""

    def __init__(self, nodes, parent, children, src, sink_ids, core_in, core_out,
                 fifo_tokens: int):
        self.nodes, self.parent, self.children = nodes, parent, children
        self.src, self.sink_ids = src, sink_ids
        self.core_in, self.core_out = core_in, core_out
        self.fifos = {nid: _Fifo(head_v=bool(fifo_tokens), head=-1)
                      for nid, n in nodes.items() if n.kind is NodeKind.REG}
        self.taken = {nid: {c: False for c in ch} for nid, ch in children.items()
                      if len(ch) > 1}
        self.sent = {nid: False for outs in core_out.values() for nid in outs}
        self.fires = {t: 0 for t in set(core_in) | set(core_out)}

    def _tile(self, nid: str) -> tuple[int, int]:
        n = self.nodes[nid]
        return n.x, n.y

    def join(self, tile: tuple[int, int]) -> bool:
        ins = self.core_in.get(tile, [])
        return all(self.vin(i)[0] for i in ins) and bool(ins or self.core_out.get(tile))

    def vout(self, nid: str) -> tuple[bool, int]:
        """(valid, token) leaving ``nid``."""
        if nid not in self._vo:
            if nid == self.src:
                self._vo[nid] = (self._presenting, self._idx)
            elif nid in self.fifos:
                self._vo[nid] = (self.fifos[nid].head_v, self.fifos[nid].head)
            elif nid in self.sent:
                tile = self._tile(nid)
                self._vo[nid] = (self.join(tile) and not self.sent[nid], self.fires[tile])
            else:
                self._vo[nid] = self.vin(nid)
        return self._vo[nid]

    def vin(self, nid: str) -> tuple[bool, int]:
        """(valid, token) arriving at ``nid`` (an eager fork masks the taken branches)."""
        up = self.parent[nid]
        v, tok = self.vout(up)
        return (v and not self.taken[up][nid], tok) if up in self.taken else (v, tok)

    def fire(self, tile: tuple[int, int]) -> bool:
        return self.join(tile) and all(self.sent[o] or self.rout(o)
                                       for o in self.core_out.get(tile, []))

    def rout(self, nid: str) -> bool:
        """ready offered to ``nid``'s output by its children."""
        if nid not in self._ro:
            ch = self.children[nid]
            if nid in self.taken:
                self._ro[nid] = all(self.taken[nid][c] or self.accept(c) for c in ch)
            else:
                self._ro[nid] = self.accept(ch[0]) if ch else False
        return self._ro[nid]

    def accept(self, nid: str) -> bool:
        """ready at ``nid``'s input."""
        if nid in self.fifos:
            return not self.fifos[nid].tail_v
        if nid in self.sink_ids:
            return self._rdy[self.sink_ids.index(nid)]
        n = self.nodes[nid]
        if n.kind is NodeKind.PORT and n.direction == "in":
            return self.fire(self._tile(nid))               # a wrapped core's input
        return self.rout(nid)

    def cycle(self, presenting: bool, idx: int, rdy: list[bool], t: int,
              out: RvTransfers) -> bool:
        """One cycle: record the transfers in ``out``, then the clock edge. Returns whether
        the source's word was taken."""
        self._presenting, self._idx, self._rdy = presenting, idx, rdy
        self._vo: dict[str, tuple[bool, int]] = {}
        self._ro: dict[str, bool] = {}
        # a word moves into each node whose input is valid and ready; out of each root (the
        # source socket, a core output) when it is valid and taken
        moved = {nid: (self.vout(nid)[0] and self.rout(nid)) if self.parent[nid] is None
                 else (self.vin(nid)[0] and self.accept(nid)) for nid in self.nodes}
        src_go = moved[self.src]
        if src_go:
            out.sent.append((t, idx))
        for k, s in enumerate(self.sink_ids):
            if moved.get(s):
                out.received[k].append((t, self.vin(s)[1]))
        for nid, m in moved.items():
            out.link_words[nid] += m
        # the clock edge: every next state from this cycle's values, then all at once
        fired = {tile: self.fire(tile) for tile in self.fires}
        fifos = {}
        for nid, ff in self.fifos.items():
            v_in, tok_in = self.vin(nid)
            if not ff.head_v or self.rout(nid):
                fifos[nid] = (_Fifo(True, False, ff.tail, ff.tail) if ff.tail_v
                              else _Fifo(v_in, False, tok_in, ff.tail))
            elif v_in and not ff.tail_v:
                fifos[nid] = _Fifo(True, True, ff.head, tok_in)
        taken = {}
        for nid, tk in self.taken.items():
            if self.vout(nid)[0] and self.rout(nid):
                taken[nid] = {c: False for c in tk}
            else:
                taken[nid] = {c: tk[c] or (self.vin(c)[0] and self.accept(c)) for c in tk}
        sent = {o: (not fired[self._tile(o)]) and (self.sent[o] or (self.vout(o)[0]
                                                                    and self.rout(o)))
                for o in self.sent}
        self.fifos.update(fifos)
        self.taken.update(taken)
        self.sent.update(sent)
        for tile, f in fired.items():
            self.fires[tile] += f
        return src_go


def simulate(graphs: Mapping[int, InterconnectGraph], routes: Mapping[str, Sequence[Sequence[str]]],
             source: PortRef, sinks: Sequence[PortRef], n_words: int, seed: int,
             p_src: float, p_sink: float, cycles: int, fifo_tokens: int = 0) -> RvTransfers:
    """Run ``cycles`` cycles of the routes (net -> node-id paths, REG nodes where a FIFO site
    is enabled) moving ``n_words`` tokens from the ``source`` socket (a core output of an
    IO tile) to the ``sinks`` (core inputs of IO tiles), with the harness's stall
    probabilities (per mille resolution, as :func:`canal.rv_array_sim.run_array_harness`)
    and ``seed``; a sink on no route never sees a valid (its ready is drawn all the same,
    as the harness does). Every other port on a route is a wrapped core's, grouped by tile.
    Raises :class:`ConfigError` when a route node is not in ``graphs``, two paths disagree on
    a node's parent, or the source is on no route."""
    nodes: dict[str, object] = {}
    parent: dict[str, str | None] = {}
    children: dict[str, list[str]] = {}
    for net, paths in routes.items():
        for path in paths:
            for i, nid in enumerate(path):
                g = next((g for g in graphs.values() if nid in g.nodes), None)
                if g is None:
                    raise ConfigError(f"net {net}: node {nid} is in no routing graph")
                nodes[nid] = g.nodes[nid]
                up = path[i - 1] if i else None
                if parent.setdefault(nid, up) != up:
                    raise ConfigError(f"net {net}: node {nid} has two parents "
                                      f"({parent[nid]} and {up})")
                children.setdefault(nid, [])
                if up is not None and nid not in children[up]:
                    children[up].append(nid)

    def port_node(ref: PortRef, direction: str) -> str:
        name, x, y = ref
        hit = [nid for nid, n in nodes.items() if n.kind is NodeKind.PORT and n.name == name
               and (n.x, n.y) == (x, y) and n.direction == direction]
        if not hit:
            raise ConfigError(f"socket {name} of tile ({x}, {y}) is on no route")
        return hit[0]

    src = port_node(source, "out")
    # a sink on no route is an idle socket (never valid); it still draws its ready
    sink_ids = [port_node(s, "in") if any(
        n.kind is NodeKind.PORT and (n.name, n.x, n.y) == tuple(s) for n in nodes.values())
        else f"idle:{k}" for k, s in enumerate(sinks)]
    # wrapped cores: tile -> used input ports, used output ports
    core_in: dict[tuple[int, int], list[str]] = {}
    core_out: dict[tuple[int, int], list[str]] = {}
    for nid, n in nodes.items():
        if n.kind is not NodeKind.PORT or nid == src or nid in sink_ids:
            continue
        (core_in if n.direction == "in" else core_out).setdefault((n.x, n.y), []).append(nid)
    net = _Net(nodes, parent, children, src, sink_ids, core_in, core_out, fifo_tokens)
    rng = _Rng(seed)
    psrc, psink = round(p_src * 1000), round(p_sink * 1000)
    out = RvTransfers([], tuple([] for _ in sinks), {nid: 0 for nid in nodes})
    idx, presenting = 0, False
    for t in range(cycles):
        if not presenting and idx < n_words and rng.draw() % 1000 >= psrc:
            presenting = True
        rdy = [rng.draw() % 1000 >= psink for _ in sinks]
        if net.cycle(presenting, idx, rdy, t, out):
            idx += 1
            presenting = False
    return out


__all__ = ["PortRef", "RvTransfers", "simulate"]
