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

**Rates** (:func:`simulate_streams` ``rates``; issue 35): a core whose ``deq_<in>``,
``emit_<out>`` or ``need_<in>`` port is 0 on a fire (:class:`FireRates`, from its
:data:`RateModel`: the fire's number -> its rates) does not take that input's word (its
ready is 0; the word stays for the next fire), does not offer that output (the fire does
not wait for its ready) or fires without that input's word, as the wrapper does.

Tokens are numbered: the source's k-th word is token k, a core's k-th fire produces token k
on each output (its state advances only on fires). ``fifo_tokens = 1`` starts every FIFO
site with one token, numbered -1 (the reset word 0 of ``RvSkidFifo_w<w>_t1``).

**Dynamic nets** (a hybrid array, :mod:`canal.dynamic`; :func:`simulate_streams` ``dynamic``):
a net's source port gets one more fork branch, its injection, which sends a flit whenever
its word is valid and the router's local input has room on the flow's VC (``in_ready``,
registered), and takes the word with its last flit; the routers are :class:`canal.netsim.
MeshModel` (cycle-exact with :func:`canal.router.router_verilog`), their local output
credit-controlled; each sink tile's ejection buffer of the flow's VC (its initial tokens
first, numbered -1; several flits assembled into a word) is the root of a tree whose leaves
are the sink ports (an eager fork when several), and returns a registered credit per flit
that leaves it, as ``DynEject`` does.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from collections import deque

from cgra.errors import ConfigError, SimulationError

from canal.dynamic import DynamicLayer
from canal.graph import InterconnectGraph, NodeKind
from canal.netsim import MeshModel
from canal.router import MeshParams, Port, RouterTables

#: a socket or core port: (port name, x, y)
PortRef = tuple[str, int, int]
#: the harness's xorshift64 (canal.rv_array_sim.harness_source)
_MASK = (1 << 64) - 1


class _Rng:
    """xorshift64 (13, 7, 17); ``seed`` as given (the callers apply their harness's
    seeding)."""

    def __init__(self, state: int):
        self.s = (state & _MASK) or 1

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


@dataclass(frozen=True)
class DynamicFlow:
    """A net on the dynamic layer, for :func:`simulate_streams`: flow ``id``, ``source`` (its
    core-output PORT node id) in tile ``source_xy``, ``sinks``: core-input PORT node id -> its tile, ``tokens``:
    tile -> initial tokens of the ejection buffer, ``inject_vc`` and ``eject_vc`` (tile ->
    the VC it arrives on): the allocation of :func:`canal.dynamic.allocate_nets`."""

    id: int
    source: str
    source_xy: tuple[int, int]
    sinks: Mapping[str, tuple[int, int]]
    tokens: Mapping[tuple[int, int], int]
    inject_vc: int
    eject_vc: Mapping[tuple[int, int], int]


@dataclass(frozen=True)
class DynamicModel:
    """The dynamic layer of a run: its parameters, the array's size, the routers' tables
    ((x, y) -> input port -> id -> entry) and the flows."""

    layer: DynamicLayer
    size: tuple[int, int]
    tables: Mapping[tuple[int, int], RouterTables]
    flows: Sequence[DynamicFlow]


class _Pseudo:
    """A model node that is not a routing-graph node (an injection or an ejection buffer)."""

    kind = None
    direction = None

    def __init__(self, x: int, y: int):
        self.x, self.y = x, y


class _Eject:
    """One ejection buffer (``DynEject``): flits, the assembly of a word, tokens used."""

    def __init__(self, tokens: int):
        self.q: deque = deque()
        self.tokens, self.used = tokens, 0
        self.have: list[int] = []


class _Dyn:
    """State of the dynamic layer inside :class:`_Net`."""

    def __init__(self, model: DynamicModel):
        lay = model.layer
        self.flits, self.buffers = lay.flits, lay.buffers
        self.mesh = MeshModel(MeshParams(*model.size, lay.router), model.tables)
        self.inj = {f"INJ:{f.id}": f for f in model.flows}
        self._src_xy = {f"INJ:{f.id}": tuple(f.source_xy) for f in model.flows}
        self.k = {nid: 0 for nid in self.inj}
        self.ej: dict[str, _Eject] = {}
        #: (x, y, VC) of an ejection buffer -> its node, and back
        self.ej_at: dict[tuple[int, int, int], str] = {}
        for f in model.flows:
            for (x, y), vc in f.eject_vc.items():
                nid = f"EJ:{x}:{y}:{vc}"
                self.ej[nid] = _Eject(f.tokens.get((x, y), 0))
                self.ej_at[(x, y, vc)] = nid
        self.ej_of = {nid: key for key, nid in self.ej_at.items()}
        self.credits: dict[tuple[int, int], int] = {}

    def out(self, nid: str) -> tuple[bool, int]:
        e = self.ej[nid]
        if e.used < e.tokens:
            return True, -1
        if self.flits == 1:
            return (True, e.q[0]) if e.q else (False, 0)
        return (True, e.have[0]) if len(e.have) == self.flits else (False, 0)

    def ready(self, nid: str) -> bool:
        """in_ready of the flow's VC at its source router."""
        f = self.inj[nid]
        return self.mesh.inj_ready(*self._src_xy[nid])[f.inject_vc]

    def accept(self, nid: str) -> bool:
        """The injection takes the word: room for its last flit."""
        return self.ready(nid) and self.k[nid] == self.flits - 1

    def edge(self, vin, moved: Mapping[str, bool]) -> None:
        """The clock edge: flits injected where valid and in_ready, ejection pops, the routers
        (with last cycle's registered credits), then the flits on the eject links enter
        their buffers."""
        inject = {}
        for nid, f in self.inj.items():
            v, tok = vin(nid)
            if v and self.ready(nid):
                inject[self._src_xy[nid]] = (f.inject_vc, f.id, tok)
                self.k[nid] = (self.k[nid] + 1) % self.flits
        arriving = [(xy, r.out[Port.L]) for xy, r in self.mesh.routers.items()
                    if r.out[Port.L] is not None]
        credits: dict[tuple[int, int], int] = {}
        takes = {}
        for nid, e in self.ej.items():
            x, y, vc = self.ej_of[nid]
            popped = moved.get(nid, False)
            if self.flits == 1:
                take = popped and e.used >= e.tokens
            else:
                full = len(e.have) == self.flits
                done = popped and e.used >= e.tokens
                take = bool(e.q) and (not full or done)
                if done:
                    e.have = []
            if popped and e.used < e.tokens:
                e.used += 1
            takes[nid] = take
            if take:
                credits[(x, y)] = credits.get((x, y), 0) | 1 << vc
        for nid, take in takes.items():
            if take:
                fl = self.ej[nid].q.popleft()
                if self.flits > 1:
                    self.ej[nid].have.append(fl)
        self.mesh.step(inject, self.credits)
        self.credits = credits
        for (x, y), (vc, _fid, fl) in arriving:
            nid = self.ej_at.get((x, y, vc))
            if nid is None:
                raise SimulationError(f"router ({x}, {y}) ejects a flit on VC {vc}, which no "
                                      f"dynamic net takes there")
            if len(self.ej[nid].q) >= self.buffers:
                raise SimulationError(f"ejection buffer VC {vc} of tile ({x}, {y}) overflows "
                                      "(a credit protocol error)")
            self.ej[nid].q.append(fl)


@dataclass
class _Fifo:
    head_v: bool = False
    tail_v: bool = False
    head: int = 0
    tail: int = 0


@dataclass(frozen=True)
class FireRates:
    """The rate ports of a wrapped core for one fire (:func:`canal.rv_rtl.rv_array`,
    "rates"): the port names whose ``deq_<in>``, ``emit_<out>`` or ``need_<in>`` is 0 on
    this fire (every other port takes, emits or needs its word)."""

    no_deq: frozenset = frozenset()
    no_emit: frozenset = frozenset()
    no_need: frozenset = frozenset()


#: a core's rates: fire number (0, 1, ... in order; the same number may be asked again) ->
#: its :class:`FireRates`
RateModel = Callable[[int], FireRates]


class _Net:
    """The route trees of one run and their state (module docstring); :meth:`cycle` is one
    clock cycle."""

    def __init__(self, nodes, parent, children, srcs: list[str], sink_ids: list[str],
                 core_in, core_out, fifo_tokens: int, dyn: _Dyn | None = None,
                 rates: Mapping[tuple[int, int], RateModel] | None = None):
        self.nodes, self.parent, self.children = nodes, parent, children
        self.dyn = dyn
        self.rates = dict(rates or {})
        self.srcs, self.sink_ids = srcs, sink_ids
        self.core_in, self.core_out = core_in, core_out
        self.fifos = {nid: _Fifo(head_v=bool(fifo_tokens), head=-1)
                      for nid, n in nodes.items() if n.kind is NodeKind.REG}
        self.taken = {nid: {c: False for c in ch} for nid, ch in children.items()
                      if len(ch) > 1}
        self.sent = {nid: False for outs in core_out.values() for nid in outs}
        self.fires = {t: 0 for t in set(core_in) | set(core_out)}
        #: this cycle: the sources' valid and token, the sinks' ready, the valid/token
        #: leaving and the ready offered to each node (filled on demand), the transfers
        self._presenting: dict[str, bool] = {}
        self._idx: dict[str, int] = {}
        self._rdy: list[bool] = []
        self._vo: dict[str, tuple[bool, int]] = {}
        self._ro: dict[str, bool] = {}
        self.moved: dict[str, bool] = {}

    def _tile(self, nid: str) -> tuple[int, int]:
        n = self.nodes[nid]
        return n.x, n.y

    def _rates(self, tile: tuple[int, int]) -> FireRates | None:
        model = self.rates.get(tile)
        return None if model is None else model(self.fires[tile])

    def join(self, tile: tuple[int, int]) -> bool:
        ins = self.core_in.get(tile, [])
        r = self._rates(tile)
        if r is None:
            ok = all(self.vin(i)[0] for i in ins)
        else:
            ok = all(self.nodes[i].name in r.no_need or self.vin(i)[0] for i in ins)
        return ok and bool(ins or self.core_out.get(tile))

    def _emits(self, nid: str) -> bool:
        r = self._rates(self._tile(nid))
        return r is None or self.nodes[nid].name not in r.no_emit

    def _deqs(self, nid: str) -> bool:
        r = self._rates(self._tile(nid))
        return r is None or self.nodes[nid].name not in r.no_deq

    def vout(self, nid: str) -> tuple[bool, int]:
        """(valid, token) leaving ``nid``."""
        if nid not in self._vo:
            if nid in self._presenting:
                self._vo[nid] = (self._presenting[nid], self._idx[nid])
            elif self.dyn is not None and nid in self.dyn.ej:
                self._vo[nid] = self.dyn.out(nid)
            elif nid in self.fifos:
                self._vo[nid] = (self.fifos[nid].head_v, self.fifos[nid].head)
            elif nid in self.sent:
                tile = self._tile(nid)
                self._vo[nid] = (self.join(tile) and self._emits(nid) and not self.sent[nid],
                                 self.fires[tile])
            else:
                self._vo[nid] = self.vin(nid)
        return self._vo[nid]

    def vin(self, nid: str) -> tuple[bool, int]:
        """(valid, token) arriving at ``nid`` (an eager fork masks the taken branches)."""
        up = self.parent[nid]
        v, tok = self.vout(up)
        return (v and not self.taken[up][nid], tok) if up in self.taken else (v, tok)

    def fire(self, tile: tuple[int, int]) -> bool:
        return self.join(tile) and all(self.sent[o] or not self._emits(o) or self.rout(o)
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
        if self.dyn is not None and nid in self.dyn.inj:
            return self.dyn.accept(nid)
        if nid in self.sink_ids:
            return self._rdy[self.sink_ids.index(nid)]
        n = self.nodes[nid]
        if n.kind is NodeKind.PORT and n.direction == "in":
            return self.fire(self._tile(nid)) and self._deqs(nid)   # a wrapped core's input
        return self.rout(nid)

    def cycle(self, presenting: dict[str, bool], idx: dict[str, int], rdy: list[bool],
              t: int, out: RvTransfers | None) -> tuple[list[str], list[int]]:
        """One cycle: the transfers (recorded in ``out`` unless None), then the clock edge.
        ``presenting`` / ``idx``: per source node, whether it presents a word and its
        token. Returns the sources whose word was taken and the sinks that took one."""
        self._presenting, self._idx, self._rdy = presenting, idx, rdy
        self._vo, self._ro = {}, {}
        # a word moves into each node whose input is valid and ready; out of each root (a
        # source socket, a core output) when it is valid and taken
        moved = {nid: (self.vout(nid)[0] and self.rout(nid)) if self.parent[nid] is None
                 else (self.vin(nid)[0] and self.accept(nid)) for nid in self.nodes}
        self.moved = moved
        gone = [s for s in self.srcs if moved[s]]
        took = [k for k, s in enumerate(self.sink_ids) if moved.get(s)]
        if out is not None:
            self._record(out, moved, gone, took, t)
        if self.dyn is not None:
            self.dyn.edge(self.vin, moved)
        self._edge()
        return gone, took

    def _record(self, out: RvTransfers, moved, gone, took, t: int) -> None:
        for s in gone:
            out.sent.append((t, self._idx[s]))
        for k in took:
            out.received[k].append((t, self.vin(self.sink_ids[k])[1]))
        for nid, m in moved.items():
            out.link_words[nid] += m

    def _edge(self) -> None:
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


def _trees(graphs: Mapping[int, InterconnectGraph],
           routes: Mapping[str, Sequence[Sequence[str]]]):
    """The route trees: node id -> node, parent (None at a root), children."""
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
                # a path may start where another ends (the mapper splits a net at each
                # pipeline register: the register's net starts at its REG node)
                up = path[i - 1] if i else None
                if parent.get(nid) is None:
                    parent[nid] = up
                elif up is not None and parent[nid] != up:
                    raise ConfigError(f"net {net}: node {nid} has two parents "
                                      f"({parent[nid]} and {up})")
                children.setdefault(nid, [])
                if up is not None and nid not in children[up]:
                    children[up].append(nid)

    return nodes, parent, children


def _add_dynamic(graphs: Mapping[int, InterconnectGraph], model: DynamicModel, nodes,
                 parent, children) -> None:
    """Add the dynamic nets to the trees: an injection leaf under each source port, an
    ejection-buffer root above each sink tile's ports (module docstring)."""
    def node(nid: str):
        g = next((g for g in graphs.values() if nid in g.nodes), None)
        if g is None:
            raise ConfigError(f"dynamic net port {nid} is in no routing graph")
        return g.nodes[nid]

    for f in model.flows:
        if f.source not in nodes:
            nodes[f.source], parent[f.source], children[f.source] = node(f.source), None, []
        inj = f"INJ:{f.id}"
        nodes[inj], parent[inj], children[inj] = _Pseudo(*f.source_xy), f.source, []
        children[f.source].append(inj)
        for sink, (x, y) in f.sinks.items():
            ej = f"EJ:{x}:{y}:{f.eject_vc[(x, y)]}"
            if ej not in nodes:
                nodes[ej], parent[ej], children[ej] = _Pseudo(x, y), None, []
            if sink in nodes:
                raise ConfigError(f"port {sink} is a sink of dynamic flow {f.id} and of a "
                                  "static route")
            nodes[sink], parent[sink], children[sink] = node(sink), ej, []
            children[ej].append(sink)


def _cores(nodes, ends: set[str]):
    """Wrapped cores: tile -> used input / output port nodes (every route port not in
    ``ends``, the sockets)."""
    core_in: dict[tuple[int, int], list[str]] = {}
    core_out: dict[tuple[int, int], list[str]] = {}
    for nid, n in nodes.items():
        if n.kind is NodeKind.PORT and nid not in ends:
            (core_in if n.direction == "in" else core_out).setdefault((n.x, n.y), []).append(nid)
    return core_in, core_out


def _port(nodes, ref: PortRef, direction: str) -> str | None:
    name, x, y = ref
    return next((nid for nid, n in nodes.items() if n.kind is NodeKind.PORT and n.name == name
                 and (n.x, n.y) == (x, y) and n.direction == direction), None)


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
    nodes, parent, children = _trees(graphs, routes)
    src = _port(nodes, source, "out")
    if src is None:
        raise ConfigError(f"socket {source[0]} of tile ({source[1]}, {source[2]}) is on no "
                          f"route")
    # a sink on no route is an idle socket (never valid); it still draws its ready
    sink_ids = [_port(nodes, s, "in") or f"idle:{k}" for k, s in enumerate(sinks)]
    core_in, core_out = _cores(nodes, {src, *sink_ids})
    net = _Net(nodes, parent, children, [src], sink_ids, core_in, core_out, fifo_tokens)
    rng = _Rng(seed * 2654435761 + 88172645463325252)
    psrc, psink = round(p_src * 1000), round(p_sink * 1000)
    out = RvTransfers([], tuple([] for _ in sinks), {nid: 0 for nid in nodes})
    idx, presenting = 0, False
    for t in range(cycles):
        if not presenting and idx < n_words and rng.draw() % 1000 >= psrc:
            presenting = True
        rdy = [rng.draw() % 1000 >= psink for _ in sinks]
        gone, _took = net.cycle({src: presenting}, {src: idx}, rdy, t, out)
        if gone:
            idx += 1
            presenting = False
    return out


@dataclass
class StreamRun:
    """A run of :func:`simulate_streams`: ``cycles`` of the stream phase, the input stall
    and output backpressure cycles (summed over sockets), input tokens taken, tokens per
    output, and the words that crossed each route node."""

    cycles: int
    input_stall_cycles: int
    output_backpressure_cycles: int
    taken: int
    tokens: list[int]
    link_words: dict[str, int]


def simulate_streams(graphs: Mapping[int, InterconnectGraph],
                     routes: Mapping[str, Sequence[Sequence[str]]], inputs: Sequence[PortRef],
                     outputs: Sequence[PortRef], tokens: int, seed: int, p_in: int, p_out: int,
                     fifo_tokens: int = 1, dynamic: DynamicModel | None = None,
                     counts: tuple[Sequence[int], Sequence[int]] | None = None,
                     rates: Mapping[tuple[int, int], RateModel] | None = None) -> StreamRun:
    """The stream phase of :mod:`mapper.sim.rv_harness`'s testbench on these routes: every
    input socket presents tokens without end (its stimulus, then 0), drawing a stall with
    probability ``p_in`` (per mille) each cycle it presents nothing; every output's ready is
    0 with probability ``p_out`` (per mille) each cycle; draws in that order from the
    harness's xorshift64 seeded with ``seed``; the run ends when every output took
    ``tokens`` tokens. Every FIFO site starts with ``fifo_tokens`` words (1 in `cgra rtl`'s
    ready-valid arrays). ``dynamic``: the nets on the dynamic layer of a hybrid array (module
    docstring). ``counts``: (per input, per output) token counts, the harness's ``tokens``
    line (a dataflow program's streams): input ``i`` presents its first ``counts[0][i]``
    tokens and then nothing (no draw), output ``j`` is done at ``counts[1][j]``.
    ``rates``: tile -> the :data:`RateModel` of its wrapped core (a dataflow PE's
    ``deq_`` / ``emit_`` / ``need_`` ports; a core without one takes, emits and needs every
    port on every fire). Raises :class:`SimulationError` naming the first output short of
    tokens after ``64 * tokens + 10000`` cycles (the harness's deadlock bound), and
    :class:`ConfigError` as :func:`simulate` or for counts that do not match the sockets."""
    nodes, parent, children = _trees(graphs, routes)
    dyn = None
    if dynamic is not None and dynamic.flows:
        _add_dynamic(graphs, dynamic, nodes, parent, children)
        dyn = _Dyn(dynamic)
    srcs = [_port(nodes, r, "out") for r in inputs]
    sink_ids = [_port(nodes, r, "in") or f"idle:{k}" for k, r in enumerate(outputs)]
    core_in, core_out = _cores(nodes, {*filter(None, srcs), *sink_ids})
    net = _Net(nodes, parent, children, [s for s in srcs if s], sink_ids, core_in, core_out,
               fifo_tokens, dyn, rates)
    if counts is None:
        in_cnt, out_cnt = None, [tokens] * len(outputs)
    else:
        in_cnt, out_cnt = list(counts[0]), list(counts[1])
        if len(in_cnt) != len(inputs) or len(out_cnt) != len(outputs):
            raise ConfigError(f"counts: {len(in_cnt)} input and {len(out_cnt)} output counts "
                              f"for {len(inputs)} inputs and {len(outputs)} outputs")
    rng = _Rng(seed * 0x9E3779B97F4A7C15 + 0x2545F4914F6CDD1D)
    presenting = [False] * len(inputs)
    sent = [0] * len(inputs)
    got = [0] * len(outputs)
    run = StreamRun(0, 0, 0, 0, got, {nid: 0 for nid in nodes})
    limit = 64 * tokens + 10000
    t = 0
    while any(g < c for g, c in zip(got, out_cnt, strict=True)):
        if t >= limit:
            j = next(j for j, g in enumerate(got) if g < out_cnt[j])
            name, x, y = outputs[j]
            raise SimulationError(f"ready-valid model stalled for good: output {name} of tile "
                                  f"({x}, {y}) has {got[j]} of {out_cnt[j]} tokens after {t} "
                                  f"cycles")
        for i in range(len(inputs)):
            if in_cnt is not None and sent[i] >= in_cnt[i]:
                presenting[i] = False
                continue
            if not presenting[i]:
                if rng.draw() % 1000 < p_in:
                    run.input_stall_cycles += 1
                else:
                    presenting[i] = True
        rdy = [rng.draw() % 1000 >= p_out for _ in outputs]
        run.output_backpressure_cycles += rdy.count(False)
        pres = {s: presenting[i] for i, s in enumerate(srcs) if s}
        gone, took = net.cycle(pres, {s: sent[i] for i, s in enumerate(srcs) if s}, rdy, t,
                               None)
        for i, s in enumerate(srcs):
            if s in gone:
                sent[i] += 1
                presenting[i] = False
                run.taken += 1
        for k in took:
            got[k] += 1
        for nid, m in net.moved.items():
            run.link_words[nid] += m
        t += 1
    run.cycles = t
    return run


__all__ = ["DynamicFlow", "DynamicModel", "FireRates", "PortRef", "RateModel", "RvTransfers",
           "StreamRun", "simulate", "simulate_streams"]
