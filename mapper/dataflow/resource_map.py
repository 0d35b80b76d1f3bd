"""Abstract resource mapping of a lowered program onto the units a design offers (SARA §III-B:
compute partitioning, then global merging; the project's SARA notes §2.7).

Input: the :class:`~mapper.dataflow.lower.VUDFG` of a program and the physical units as
:class:`~mapper.dataflow.units.PUConstraints` by kind (from a design's ``resources.json``
through :func:`mapper.dataflow.resources.load_units`, or SARA's Plasticine PCU/PMU).

1. **Compute partitioning**: every VCU whose datapath has ops is split to fit a compute kind
   (a kind with ``stages`` > 0 whose op set covers the VCU's ops; the first such kind of
   ``units`` that fits all of them, else the kind covering the most) with
   :func:`~mapper.dataflow.partition.best_traversal` (``partitioner="traversal"``, SARA's
   default) or :func:`~mapper.dataflow.partition.solver_partition` (``"solver"``, its
   quality reference). Each part is a virtual unit (VU) with its cost vector. A VCU with
   more lanes (``par``) than the unit's SIMD width is duplicated ``ceil(par / lanes)``
   times (SARA: outer parallelisation unrolls the body spatially across units); on a unit
   of one lane its vector streams become scalar ones.
2. **Global merging**: the VUs are merged into physical units of the compute kinds with
   :func:`~mapper.dataflow.merge.best_traversal_merge` (or
   :func:`~mapper.dataflow.merge.solver_merge`). The VU graph carries no edges: every input of
   a VU counts as external, so two VUs fed by the same stream are not credited for the
   broadcast (conservative).
3. **Memories**: each on-chip memory (SRAM, FIFO, a Reg shared between units) needs
   ``ceil(words / capacity)`` memory units (``mem_capacity`` words per unit: the design's
   ``capacity_words``, SARA's PMU 64 Ki words by default), times its multi-buffer depth; the
   request and response VCUs with no ops run on the address generators of the memory unit
   that holds their memory (SARA: "typically mapped onto the same PMU"), DRAM ones on the
   DRAM interface. DRAM interfaces are counted, not limited here (the IO tiles are issue
   35's mapping).

Errors: :class:`cgra.errors.MappingError` naming the VCU and the ops no unit supports, or
the kind whose units run out and by how many.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import networkx as nx

from cgra.errors import MappingError
from mapper.dataflow.lower import VUDFG
from mapper.dataflow.merge import Merge, VUCost, best_traversal_merge, solver_merge
from mapper.dataflow.partition import Partition, best_traversal, solver_partition
from mapper.dataflow.units import PUConstraints

#: words of one Plasticine PMU scratchpad (pir's ``pmu-sram-size``; SARA notes §1.3)
SARA_PMU_WORDS = 64 * 1024


@dataclass(frozen=True)
class UnitMapping:
    """Where the program's virtual units go.

    ``partitions``: compute VCU -> its :class:`~mapper.dataflow.partition.Partition` and the
    kind it was partitioned for; ``vus``: virtual units after partitioning (compute parts);
    ``merge``: the :class:`~mapper.dataflow.merge.Merge` of the VUs into compute units;
    ``memory_units``: on-chip memory -> memory units it takes; ``units``: units used per
    kind (compute kinds from the merge, the memory kind from ``memory_units``, ``dram``
    interfaces); ``available``: units the design has per kind (``None``: unbounded)."""

    partitions: Mapping[str, tuple[str, Partition]]
    vus: int
    merge: Merge | None
    memory_units: Mapping[str, int]
    units: Mapping[str, int]
    available: Mapping[str, int | None] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"vus": self.vus,
                "partitions": {v: {"kind": k, "parts": len(p), "method": p.method,
                                   "retiming": len(p.retiming)}
                               for v, (k, p) in sorted(self.partitions.items())},
                "merge_method": self.merge.method if self.merge else None,
                "memory_units": dict(sorted(self.memory_units.items())),
                "units": dict(sorted(self.units.items())),
                "available": dict(sorted(self.available.items()))}


def _ops(dfg: nx.DiGraph) -> set[str]:
    return {d["op"] for _, d in dfg.nodes(data=True) if d.get("kind") == "op"}


def _compute_kind(name: str, ops: set[str], kinds: list[PUConstraints]) -> PUConstraints:
    fits = [k for k in kinds if ops <= k.ops]
    if fits:
        return fits[0]
    best = max(kinds, key=lambda k: len(ops & k.ops))
    missing = sorted(ops - best.ops)
    raise MappingError(f"unit {name}: ops {missing} are not supported by any compute unit "
                       f"({', '.join(k.kind for k in kinds)}); use a PE with those ops or "
                       f"rewrite the program without them")


def map_units(vudfg: VUDFG, units: Mapping[str, PUConstraints], *,
              mem_kind: str | None = "mem", mem_capacity: int | None = None,
              partitioner: str = "traversal", time_limit_s: float = 10.0) -> UnitMapping:
    """Partition and merge ``vudfg`` onto ``units`` (module docstring). ``mem_kind``: the
    kind of ``units`` holding on-chip memories (``None`` or missing: memories are counted
    under ``"mem"`` with no limit); ``mem_capacity``: words per memory unit (default
    :data:`SARA_PMU_WORDS`); ``partitioner`` / merger: ``"traversal"`` or ``"solver"``."""
    if partitioner not in ("traversal", "solver"):
        raise MappingError(f"partitioner {partitioner!r} is not 'traversal' or 'solver'")
    compute = [u for u in units.values() if u.stages > 0 and u.ops]
    if not compute:
        raise MappingError(f"no compute unit among {sorted(units)}: every kind has 0 stages "
                           f"or no ops")
    parts: dict[str, tuple[str, Partition]] = {}
    g = nx.DiGraph()
    for name, vcu in sorted(vudfg.vcus.items()):
        ops = _ops(vcu.dfg)
        if not ops:
            continue
        pu = _compute_kind(name, ops, compute)
        dfg, copies = vcu.dfg, 1
        if vcu.par > pu.lanes:
            # SARA: lanes beyond the unit's SIMD width are spatial copies of the unit, each
            # taking scalar (or narrower vector) streams
            copies = math.ceil(vcu.par / pu.lanes)
            if pu.lanes == 1:
                dfg = vcu.dfg.copy()
                for _, d in dfg.nodes(data=True):
                    if d.get("width") == "vector":
                        d["width"] = "scalar"
        if partitioner == "solver":
            part = solver_partition(dfg, pu, time_limit_s=time_limit_s)
        else:
            part = best_traversal(dfg, pu)
        parts[name] = (pu.kind, part)
        costs = [VUCost.of(c, lanes=min(vcu.par, pu.lanes)) for c in part.costs(dfg)]
        for c in range(copies):
            for k, cost in enumerate(costs):
                g.add_node(f"{name}#{k}" + (f"@{c}" if copies > 1 else ""), cost=cost)
    merge = None
    used: dict[str, int] = {u.kind: 0 for u in compute}
    if g.number_of_nodes():
        merge = (solver_merge(g, compute, time_limit_s) if partitioner == "solver"
                 else best_traversal_merge(g, compute))
        used.update(merge.units)
    # memories
    mem = units.get(mem_kind) if mem_kind else None
    cap = int(mem_capacity or SARA_PMU_WORDS)
    memory_units: dict[str, int] = {}
    dram = 0
    for name, vmu in sorted(vudfg.vmus.items()):
        if vmu.kind == "dram":
            dram += 1
            continue
        words = math.prod(vmu.shape) if vmu.shape else 1
        memory_units[name] = math.ceil(words / cap) * max(1, vmu.buffers)
    kind = mem.kind if mem is not None else "mem"
    used[kind] = sum(memory_units.values())
    used["dram"] = dram
    available: dict[str, int | None] = {u.kind: u.count for u in units.values()}
    if mem is not None and mem.count is not None and used[kind] > mem.count:
        big = max(memory_units, key=memory_units.get)
        raise MappingError(f"the program's memories need {used[kind]} {kind} units, the "
                           f"array has {mem.count} (short by {used[kind] - mem.count}; the "
                           f"largest, {big!r}, takes {memory_units[big]} of {cap} words "
                           f"each); use a larger array or smaller memories")
    return UnitMapping(parts, g.number_of_nodes(), merge, memory_units, used, available)
