"""Helpers of the ready-valid array tests (test_rv_array.py): a 3x2 array (IO row on top,
pass-through cores below), a breadth-first multicast route through FIFO sites, and the
Verilator models, cached by content under the system temporary directory."""
from __future__ import annotations

import functools
import tempfile
from collections import deque
from pathlib import Path

from canal.cores import io_core, passthru_core
from canal.graph import InterconnectGraph, NodeKind
from canal.interconnect import Interconnect
from canal.passes import InterconnectParams, io_on_edges, uniform_graphs
from canal.ready_valid import mark_graphs, parse_flow_control, site_rmux
from canal.rv_rtl import core_verilog, rv_array, socket_name
from garnet.array import build_interconnect
from garnet.params import from_dict
from canal.rv_array_sim import ArrayHarness, build_array_harness

#: shared with the channel tests (rv_testutil.CACHE): the Verilator runtime objects are reused
CACHE = Path(tempfile.gettempdir()) / "cgra-canal-flow-control"
IO, PT = io_core(), passthru_core()
#: source: the IO core output of tile (0, 0); sinks: the IO input of (2, 0), the PE input
#: of (1, 1) (a multicast of one net to two sinks); IDLE: a socket no route reaches
SOURCE = ("io2f_16", 0, 0)
SINKS = (("f2io_16", 2, 0), ("data_in", 1, 1))
IDLE = ("f2io_16", 1, 0)
#: the sinks of the multicast net on garnet's array (:func:`pe_array`): two IO inputs
IO_SINKS = (("f2io_16", 2, 0), ("f2io_16", 1, 0))


def static_graphs() -> dict[int, InterconnectGraph]:
    """The graphs of :func:`array` without the ready-valid marks."""
    graphs, *_ = uniform_graphs(InterconnectParams(3, 2, tracks=2, widths=(16, 1)),
                                io_on_edges(lambda x, y: PT, IO, 3, 2))
    return graphs


@functools.lru_cache(maxsize=None)
def array(fifo_kind: str, static_1bit: bool = True) -> Interconnect:
    """A 3x2 interconnect, 2 tracks, widths 16 (ready-valid, ``fifo_kind``) and 1 (static
    when ``static_1bit``, else ready-valid too)."""
    graphs, *rest = uniform_graphs(InterconnectParams(3, 2, tracks=2, widths=(16, 1)),
                                   io_on_edges(lambda x, y: PT, IO, 3, 2))
    modes = {"16": "ready_valid"} if static_1bit else "ready_valid"
    mark_graphs(graphs, parse_flow_control(modes, fifo_kind, [16, 1]))
    return Interconnect(graphs, *rest)


def port(g: InterconnectGraph, name: str, x: int, y: int) -> str:
    return next(n.id for n in g.nodes.values()
                if n.kind is NodeKind.PORT and n.name == name and (n.x, n.y) == (x, y))


def _bfs(g: InterconnectGraph, starts: list[str], dst: str, avoid: set[str]) -> list[str]:
    fo = g.fanout()
    prev: dict[str, str | None] = {s: None for s in starts}
    q = deque(starts)
    while q:
        u = q.popleft()
        if u == dst:
            break
        for v in fo[u]:
            if v not in prev and v not in avoid and not (
                    g.nodes[v].kind is NodeKind.REG and u in g.fanin[site_rmux(g, g.nodes[v])]):
                # a REG only where its RMUX has no bypass (a mandatory register)
                prev[v] = u
                q.append(v)
    path = [dst]
    while prev[path[-1]] is not None:
        path.append(prev[path[-1]])
    return path[::-1]


def with_fifos(g: InterconnectGraph, path: list[str], use) -> list[str]:
    """``path`` with the REG of every SB_OUT -> RMUX step where ``use(i)`` (i counts the
    sites along the path, mandatory ones included) inserted: the route enters the FIFO
    site."""
    out, k = [], 0
    for a, b in zip(path, path[1:] + [None], strict=True):
        out.append(a)
        if b is not None and g.nodes[b].kind is NodeKind.RMUX:
            if g.nodes[a].kind is not NodeKind.REG:      # (a mandatory site is on the path)
                reg = next(s for s in g.fanin[b] if g.nodes[s].kind is NodeKind.REG)
                if use(k):
                    out.append(reg)
            k += 1
    return out


def multicast_route(g: InterconnectGraph, sinks=SINKS) -> list[list[str]]:
    """Paths (:data:`SOURCE` -> each of the two ``sinks``) of one net sharing their prefix,
    every FIFO site on them enabled."""
    src = port(g, *SOURCE)
    first = _bfs(g, [src], port(g, *sinks[0]), set())
    second_tail = _bfs(g, first[:-1], port(g, *sinks[1]), set())
    branch = first.index(second_tail[0])
    second = first[:branch] + second_tail
    return [with_fifos(g, first, lambda k: True), with_fifos(g, second, lambda k: True)]


def mc_array(fifo_kind: str) -> Interconnect:
    """The array the multicast simulation of ``fifo_kind`` runs on: skid = garnet's
    :func:`pe_array` (one model also serves the PE tests), split = :func:`array`."""
    return pe_array() if fifo_kind == "skid" else array("split")


def mc_sinks(fifo_kind: str) -> tuple:
    return IO_SINKS if fifo_kind == "skid" else SINKS


@functools.lru_cache(maxsize=None)
def harness(fifo_kind: str) -> ArrayHarness:
    """The model of :func:`mc_array`: skid = :func:`core_harness` (sinks :data:`IO_SINKS`),
    split = the pass-through array with its cores as sockets (sinks :data:`SINKS`, then
    :data:`IDLE`)."""
    if fifo_kind == "skid":
        return core_harness()
    return build_array_harness(rv_array(array(fifo_kind)), socket_name(*SOURCE),
                               tuple(socket_name(*s) for s in (*SINKS, IDLE)), CACHE)


@functools.lru_cache(maxsize=None)
def pe_array() -> Interconnect:
    """garnet's 3x2 array (IO row, PEak PE row, no MEM), 2 tracks, the 16-bit tracks
    ready-valid with skid FIFOs (TOML fields flow_control / fifo_kind through
    garnet.params and garnet.array.build_interconnect), the 1-bit tracks static."""
    p = from_dict({"width": 3, "height": 2, "tracks": 2, "mem_ratio": 0,
                   "flow_control": {"16": "ready_valid"}, "fifo_kind": "skid",
                   "timing": "cascade-table"})
    return build_interconnect(p)


def core_routes(g: InterconnectGraph) -> dict[str, list[list[str]]]:
    """Two nets through the wrapped PE of tile (1, 1): IO (0, 0) -> its ``data0``, its
    ``res`` -> IO (2, 0); every FIFO site on them enabled."""
    a = _bfs(g, [port(g, "io2f_16", 0, 0)], port(g, "data0", 1, 1), set())
    b = _bfs(g, [port(g, "res", 1, 1)], port(g, "f2io_16", 2, 0), set(a))
    return {"in": [with_fifos(g, a, lambda k: True)], "out": [with_fifos(g, b, lambda k: True)]}


def wrapped_harness(ic: Interconnect, sinks=IO_SINKS, fifo_tokens: int = 0) -> ArrayHarness:
    """The model of ``ic`` with the PE of tile (1, 1) (and every PE like it) wrapped
    (canal.rv_rtl.rv_array cores=), every FIFO site starting with ``fifo_tokens`` words;
    source IO (0, 0), ``sinks``."""
    pe = ic.cores[ic.tiles[(1, 1)].core]
    with tempfile.TemporaryDirectory(prefix="rv-core-") as tmp:
        arr = rv_array(ic, cores={pe.name: core_verilog(pe, tmp)}, fifo_tokens=fifo_tokens)
    return build_array_harness(arr, socket_name(*SOURCE),
                               tuple(socket_name(*s) for s in sinks), CACHE)


@functools.lru_cache(maxsize=None)
def core_harness(fifo_tokens: int = 0) -> ArrayHarness:
    """:func:`pe_array` with its PEs wrapped (:func:`wrapped_harness`), every FIFO site
    starting with ``fifo_tokens`` words; source IO (0, 0), sinks :data:`IO_SINKS`."""
    return wrapped_harness(pe_array(), IO_SINKS, fifo_tokens)


@functools.lru_cache(maxsize=None)
def pe_array_all_rv() -> Interconnect:
    """:func:`pe_array` with the 1-bit tracks ready-valid too, so a PE's ``res`` and
    ``res_p`` are two handshaken outputs of one wrapped core."""
    p = from_dict({"width": 3, "height": 2, "tracks": 2, "mem_ratio": 0,
                   "flow_control": "ready_valid", "fifo_kind": "skid",
                   "timing": "cascade-table"})
    return build_interconnect(p)


#: the sinks of :func:`two_output_routes`: ``res`` at IO (2, 0), ``res_p`` at IO (1, 0)
TWO_OUTPUT_SINKS = (("f2io_16", 2, 0), ("f2io_1", 1, 0))


def two_output_routes(ic: Interconnect) -> dict[str, list[list[str]]]:
    """IO (0, 0) -> the ``data0`` of the PE of (1, 1); its ``res`` -> IO (2, 0) and its
    ``res_p`` -> IO (1, 0) (the 1-bit graph); every FIFO site on them enabled."""
    g16, g1 = ic.graphs[16], ic.graphs[1]
    routes = core_routes(g16)
    b = _bfs(g1, [port(g1, "res_p", 1, 1)], port(g1, *TWO_OUTPUT_SINKS[1]), set())
    routes["flag"] = [with_fifos(g1, b, lambda k: True)]
    return routes


@functools.lru_cache(maxsize=None)
def two_output_harness() -> ArrayHarness:
    """:func:`pe_array_all_rv` with its PEs wrapped; source IO (0, 0), sinks
    :data:`TWO_OUTPUT_SINKS`."""
    return wrapped_harness(pe_array_all_rv(), TWO_OUTPUT_SINKS)
