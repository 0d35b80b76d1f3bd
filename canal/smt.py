"""Canal's SMT model of the interconnect: which source drives every routing node, with how many
cycles of latency, as a function of the configuration fields.

**Variables** are exactly the mux select fields of the config map (:mod:`canal.config`): one
bit-vector ``sel(n)`` of the field's width per node ``n`` with more than one fan-in (switch-box
outputs, register muxes, connection boxes), named ``"<x>,<y>:<feature name>.<field>"``. A
register mux's select is the pipeline-register enable (0 = bypass, 1 = register).

**Value of a node** (each node ``n`` has two integer terms, ``src(n)`` and ``lat(n)``):

* a core output (a ``PORT`` with no fan-in): ``src`` = the node's own id number (1, 2, ...),
  ``lat`` = 0;
* a mux with fan-in ``f_0 .. f_{k-1}``: ``src(n), lat(n) = src(f_i), lat(f_i)`` when
  ``sel(n) == i``; for ``sel(n) >= k`` the mux drives constant 0 (``src`` = :data:`ZERO`,
  ``lat`` = 0), as the RTL's ``CanalMux`` does (:func:`canal.rtl.mux_circuit`);
* a node with one fan-in (switch-box input, ``REG``) copies it; a ``REG`` adds one cycle
  (``lat(f) + 1``, except after :data:`ZERO`: a register of a constant is the constant);
* a node with no fan-in that is not a core output (an unconnected mux) drives :data:`ZERO`.

This is the bit-level meaning of the RTL read as connectivity: every node carries exactly the
value of one source delayed by ``lat`` clock cycles (``clk_en`` high), or constant 0. A select
field's encoding into 32-bit config words is :func:`canal.config.config_map_rows` (the same
layout :func:`canal.config.route_bitstream` and the mapper's bitstream writer use), and
:func:`decode_selects` is its inverse on a bitstream.

**Slicing.** A model over every node of a 32x16 array has ~10^5 nodes per width. Under a given
configuration only the cone of influence of the checked nodes matters: :func:`cone` follows
each node's *selected* fan-in backwards. Nodes outside the cone stay unconstrained (free
``src``/``lat`` terms), so a property proved on the sliced model holds whatever those nodes
carry: slicing is sound. The formula is emitted as SMT-LIB 2 text and parsed by z3 in one call:
for harris on 32x16 (a 2 450-node cone) text + parse take 0.06 s, the same formula built term
by term through z3's Python API 0.57 s.

**Queries** (z3, each bounded by ``timeout_ms``):

* :meth:`InterconnectModel.prove` — the expected ``(source, latency)`` of a set of nodes holds
  under a configuration (unsat of the negated conjunction), else a counterexample: the nodes
  whose value differs, with the value the configuration gives them;
* :meth:`InterconnectModel.derive` — the value the configuration forces on each node, or
  ``None`` where it is not determined (a combinational loop with no source).

Source of the construction: the Canal paper (Melchert et al., "Canal: A Flexible Interconnect
Generator for Coarse-Grained Reconfigurable Arrays", IEEE CAL 2023) states that the
interconnect graph yields hardware, a bitstream encoder and a formal model from one
description; the connectivity encoding (mux = ite over its select) is the standard bounded
model of a multiplexer network.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable, Mapping

import z3

from cgra.config import config_address
from cgra.errors import ConfigError

from canal.config import RV_FEATURE, TileConfig, config_map_rows
from canal.graph import InterconnectGraph, NodeKind

ZERO = 0
"""``src`` of a node that carries constant 0 (an out-of-range select or an unconnected mux)."""


@dataclass(frozen=True)
class FieldSpot:
    """Where (part of) a select field lives: bits ``[lo, lo + width)`` of the config word at
    ``addr`` hold bits ``[field_lo, field_lo + width)`` of the field ``name`` of tile (x, y),
    feature ``feature`` (``feature_name``)."""

    name: str
    x: int
    y: int
    feature: int
    feature_name: str
    addr: int
    lo: int
    width: int
    field_lo: int


def _is_rv_feature(name: str) -> bool:
    return name.startswith(RV_FEATURE) and name[len(RV_FEATURE):].isdigit()


def field_spots(rows: Iterable[Mapping]) -> dict[str, list[FieldSpot]]:
    """Node id -> the pieces of its select field, from config-map rows
    (:func:`canal.config.config_map_rows` or the ``fields`` of ``config_map.json``); rows
    without a node (core fields) and the ready-valid fields (feature ``rv<w>``: valid
    enables and split-FIFO ends, :mod:`canal.rv_smt`) are skipped."""
    out: dict[str, list[FieldSpot]] = {}
    for r in rows:
        node = r.get("node")
        if node is None or _is_rv_feature(str(r.get("feature_name", ""))):
            continue
        addr = r.get("addr")
        if addr is None:
            addr = config_address(int(r["reg"]), int(r["feature"]), int(r["x"]), int(r["y"]))
        out.setdefault(node, []).append(FieldSpot(
            r["field"], int(r["x"]), int(r["y"]), int(r["feature"]),
            str(r.get("feature_name", "")), int(addr), int(r["lo"]), int(r["width"]),
            int(r.get("field_lo", 0))))
    return out


def spots_from_configs(configs: Mapping[tuple[int, int], TileConfig]
                       ) -> dict[str, list[FieldSpot]]:
    """:func:`field_spots` of a config map computed by :func:`canal.config.tile_configs`."""
    return field_spots(config_map_rows(dict(configs)))


def decode_selects(bitstream: Iterable[tuple[int, int]], spots: Mapping[str, list[FieldSpot]]
                   ) -> dict[str, int]:
    """Node id -> select value written by ``bitstream`` (``[(addr, data)]``, 32-bit each; a
    later write to the same address wins, as in hardware). Registers the bitstream does not
    write keep their reset value, 0. Inverse of the packing of :func:`canal.config.route_bitstream`.
    """
    sel = BitstreamSelects(bitstream, spots)
    return {node: sel.get(node) for node in spots}


def encode_selects(selects: Mapping[str, int], spots: Mapping[str, list[FieldSpot]],
                   base: Iterable[tuple[int, int]] = ()) -> list[tuple[int, int]]:
    """The bitstream ``base`` (``[(addr, data)]``) with the select field of every node of
    ``selects`` set to its value (other bits of each word kept), sorted by address: the
    inverse of :func:`decode_selects`. Raises :class:`ConfigError` for a node without a select
    field or a value that does not fit it."""
    words = {int(a): int(d) for a, d in base}
    for node, value in selects.items():
        parts = spots.get(node)
        if not parts:
            raise ConfigError(f"node {node} has no select field in the config map")
        if not 0 <= value < (1 << sum(s.width for s in parts)):
            raise ConfigError(f"node {node}: select {value} does not fit "
                              f"{sum(s.width for s in parts)} bits")
        for s in parts:
            mask = ((1 << s.width) - 1) << s.lo
            part = (value >> s.field_lo) & ((1 << s.width) - 1)
            words[s.addr] = (words.get(s.addr, 0) & ~mask) | part << s.lo
    return sorted(words.items())


class BitstreamSelects(dict):
    """Node id -> select value of a bitstream, decoded on first access (a mapping for
    :meth:`InterconnectModel.cone`/:meth:`~InterconnectModel.prove`, which read only the nodes
    they reach: at 32x16 decoding every field would cost more than the proof).
    ``get(node, default)`` gives ``default`` for a node without a select field."""

    def __init__(self, bitstream: Iterable[tuple[int, int]],
                 spots: Mapping[str, list[FieldSpot]]):
        super().__init__()
        self.spots = spots
        self.words = {int(a): int(d) for a, d in bitstream}

    def get(self, node: str, default: int = 0) -> int:
        if node in self:
            return self[node]
        parts = self.spots.get(node)
        if not parts:
            return default
        v = 0
        for s in parts:
            v |= ((self.words.get(s.addr, 0) >> s.lo) & ((1 << s.width) - 1)) << s.field_lo
        self[node] = v
        return v


@dataclass(frozen=True)
class NodeValue:
    """What a node carries: ``source`` (the core-output node id, or ``None`` for constant 0)
    delayed by ``latency`` clock cycles."""

    source: str | None
    latency: int


@dataclass
class Violation:
    """A checked node whose value differs from the expected one under the configuration:
    ``node``, ``expected`` and ``actual`` :class:`NodeValue` (``actual`` from the solver's
    counterexample)."""

    node: str
    expected: NodeValue
    actual: NodeValue


@dataclass
class ProofResult:
    """Outcome of :meth:`InterconnectModel.prove`: ``proved``; ``violations`` (empty when
    proved); the sliced model's size (``nodes``, ``select_vars``) and the times (seconds) to
    build the formula and to solve it."""

    proved: bool
    violations: list[Violation] = field(default_factory=list)
    nodes: int = 0
    select_vars: int = 0
    build_seconds: float = 0.0
    solve_seconds: float = 0.0


def _sym(kind: str, k: int) -> str:
    return f"{kind}{k}"


class InterconnectModel:
    """The SMT model of the interconnect graphs of one array (all bit widths).

    ``graphs``: width (bits) -> :class:`InterconnectGraph`; ``spots``: node id -> its select
    field (:func:`field_spots`; every node with more than one fan-in must have one, else
    :class:`ConfigError` naming the node). Node ids are global across widths (the width is
    part of the id)."""

    def __init__(self, graphs: Mapping[int, InterconnectGraph],
                 spots: Mapping[str, list[FieldSpot]]):
        self.graphs = dict(graphs)
        self.spots = spots
        self.fanin: dict[str, list[str]] = {}
        self.kind: dict[str, NodeKind] = {}
        for g in self.graphs.values():
            for nid, n in g.nodes.items():
                self.fanin[nid] = g.fanin[nid]
                self.kind[nid] = n.kind
        self._num: dict[str, int] = {}
        for nid in self.fanin:
            self._num[nid] = len(self._num) + 1      # 0 is ZERO
        self._name = {v: k for k, v in self._num.items()}
        for nid, fi in self.fanin.items():
            if len(fi) > 1 and nid not in spots:
                raise ConfigError(f"node {nid} has {len(fi)} fan-ins but no select field in "
                                  f"the config map; regenerate the config map from these graphs")

    # -- structure ------------------------------------------------------------------------
    def is_source(self, nid: str) -> bool:
        """A core output: a ``PORT`` node without fan-in."""
        return self.kind[nid] is NodeKind.PORT and not self.fanin[nid]

    def select_width(self, nid: str) -> int:
        return sum(s.width for s in self.spots[nid])

    def field_name(self, nid: str) -> str:
        """``"<x>,<y>:<feature>.<field>"`` of a mux node's select."""
        s = self.spots[nid][0]
        return f"{s.x},{s.y}:{s.feature_name}.{s.name}"

    def selected(self, nid: str, selects: Mapping[str, int]) -> str | None:
        """The fan-in node ``nid`` passes under ``selects`` (``None`` = constant 0)."""
        fi = self.fanin[nid]
        if len(fi) == 1:
            return fi[0]
        if not fi:
            return None
        k = selects.get(nid, 0)
        return fi[k] if k < len(fi) else None

    def cone(self, roots: Iterable[str], selects: Mapping[str, int]) -> list[str]:
        """The cone of influence of ``roots`` under ``selects``: every node reachable backwards
        through selected fan-ins (roots included), in discovery order."""
        seen: dict[str, None] = {}
        stack = [r for r in roots if r in self.fanin]
        missing = [r for r in roots if r not in self.fanin]
        if missing:
            raise ConfigError(f"node {missing[0]} is not in the interconnect graphs")
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen[n] = None
            if self.is_source(n):
                continue
            s = self.selected(n, selects)
            if s is not None and s not in seen:
                stack.append(s)
        return list(seen)

    # -- formula --------------------------------------------------------------------------
    def smtlib(self, nodes: list[str], selects: Mapping[str, int] | None) -> tuple[str, int]:
        """SMT-LIB 2 declarations and assertions defining ``src``/``lat`` of ``nodes`` (the
        value equations of the module docstring over ALL their fan-ins; fan-ins outside
        ``nodes`` are free) and, when ``selects`` is given, fixing every select variable of
        ``nodes`` to its value. Returns (text, number of select variables)."""
        num = self._num
        declared: set[int] = set()
        decl: list[str] = []
        body: list[str] = []

        def var(nid: str) -> int:
            k = num[nid]
            if k not in declared:
                declared.add(k)
                decl.append(f"(declare-const s{k} Int)(declare-const l{k} Int)")
            return k

        nsel = 0
        for nid in nodes:
            k = var(nid)
            fi = self.fanin[nid]
            kind = self.kind[nid]
            if self.is_source(nid):
                body.append(f"(assert (= s{k} {k}))(assert (= l{k} 0))")
            elif not fi:
                body.append(f"(assert (= s{k} {ZERO}))(assert (= l{k} 0))")
            elif len(fi) == 1:
                j = var(fi[0])
                if kind is NodeKind.REG:
                    body.append(f"(assert (= s{k} s{j}))(assert (= l{k} (ite (= s{j} {ZERO}) 0 "
                                f"(+ l{j} 1))))")
                else:
                    body.append(f"(assert (= s{k} s{j}))(assert (= l{k} l{j}))")
            else:
                w = self.select_width(nid)
                decl.append(f"(declare-const q{k} (_ BitVec {w}))")
                nsel += 1
                src, lat = str(ZERO), "0"
                for i in range(len(fi) - 1, -1, -1):
                    j = var(fi[i])
                    cond = f"(= q{k} (_ bv{i} {w}))"
                    src = f"(ite {cond} s{j} {src})"
                    lat = f"(ite {cond} l{j} {lat})"
                body.append(f"(assert (= s{k} {src}))(assert (= l{k} {lat}))")
                if selects is not None:
                    v = selects.get(nid, 0)
                    if not 0 <= v < (1 << w):
                        raise ConfigError(f"{self.field_name(nid)} = {v} does not fit {w} bits")
                    body.append(f"(assert (= q{k} (_ bv{v} {w})))")
        return "".join(decl) + "".join(body), nsel

    def select_var(self, nid: str) -> str:
        """The SMT-LIB name of ``nid``'s select variable (for callers adding constraints)."""
        return f"q{self._num[nid]}"

    def _value(self, model: z3.ModelRef, nid: str) -> NodeValue:
        k = self._num[nid]
        s = model.eval(z3.Int(f"s{k}"), model_completion=True).as_long()
        lat = model.eval(z3.Int(f"l{k}"), model_completion=True).as_long()
        return NodeValue(self._name.get(s) if s != ZERO else None, lat)

    def prove(self, expected: Mapping[str, NodeValue], selects: Mapping[str, int],
              timeout_ms: int = 10_000) -> ProofResult:
        """Prove that under ``selects`` (node -> select value; absent = 0, the reset value)
        every node of ``expected`` carries its expected source with its expected latency.
        Returns a :class:`ProofResult`; on failure ``violations`` lists every checked node the
        counterexample gets wrong. Raises :class:`ConfigError` when the solver does not answer
        within ``timeout_ms`` or a node is unknown."""
        t0 = time.perf_counter()
        nodes = self.cone(expected, selects)
        text, nsel = self.smtlib(nodes, selects)
        checks = []
        for nid, want in expected.items():
            k = self._num[nid]
            s = ZERO if want.source is None else self._num[want.source]
            checks.append(f"(and (= s{k} {s}) (= l{k} {want.latency}))" if want.source
                          else f"(= s{k} {ZERO})")
        text += "(assert (not (and true " + " ".join(checks) + ")))"
        solver = z3.Solver()
        solver.set("timeout", int(timeout_ms))
        solver.from_string(text)
        t1 = time.perf_counter()
        res = solver.check()
        t2 = time.perf_counter()
        out = ProofResult(res == z3.unsat, [], len(nodes), nsel, t1 - t0, t2 - t1)
        if res == z3.unknown:
            raise ConfigError(f"interconnect proof: z3 gave no answer within {timeout_ms} ms "
                              f"({solver.reason_unknown()}) on {len(nodes)} nodes")
        if res == z3.sat:
            model = solver.model()
            for nid, want in expected.items():
                got = self._value(model, nid)
                if (got.source != want.source
                        or (want.source is not None and got.latency != want.latency)):
                    out.violations.append(Violation(nid, want, got))
        return out

    def derive(self, nodes: Iterable[str], selects: Mapping[str, int],
               timeout_ms: int = 10_000) -> dict[str, NodeValue | None]:
        """The value ``selects`` forces on each of ``nodes``: z3 finds one model, then each
        node's value is checked unique (the negation is unsat). ``None`` for a node whose value
        the configuration does not determine (it depends on a combinational loop with no
        source). Raises :class:`ConfigError` on a solver timeout."""
        nodes = list(nodes)
        cone = self.cone(nodes, selects)
        text, _ = self.smtlib(cone, selects)
        solver = z3.Solver()
        solver.set("timeout", int(timeout_ms))
        solver.from_string(text)
        if solver.check() != z3.sat:
            raise ConfigError("interconnect model: the value equations have no solution "
                              "(internal error: the model is always satisfiable)")
        model = solver.model()
        first = {n: self._value(model, n) for n in nodes}
        out: dict[str, NodeValue | None] = {}
        for n in nodes:
            v = first[n]
            k = self._num[n]
            s = ZERO if v.source is None else self._num[v.source]
            cond = z3.Int(f"s{k}") != s
            if v.source is not None:
                cond = z3.Or(cond, z3.Int(f"l{k}") != v.latency)
            r = solver.check(cond)
            if r == z3.unknown:
                raise ConfigError(f"interconnect model: z3 gave no answer within {timeout_ms} "
                                  f"ms for node {n}")
            out[n] = v if r == z3.unsat else None
        return out


__all__ = ["BitstreamSelects", "FieldSpot", "InterconnectModel", "NodeValue", "ProofResult", "Violation", "ZERO",
           "decode_selects", "encode_selects", "field_spots", "spots_from_configs"]
