"""The cycles of a dataflow program on the array, predicted from the mapped program (issue 35,
item 3: "cycles compared with the token-level simulator's prediction"): the units as they were
placed (one dataflow PE per operator, :mod:`mapper.dataflow.array`), the streams on their
routes (every FIFO site and pipeline register of the pipelined routing) and the IO harness's
random stalls, in the cycle-level model of the ready-valid network
(:func:`canal.rv_netsim.simulate_streams`, which draws the harness's xorshift64 stalls in the
harness's order), with each PE's *rates* -- which inputs a fire dequeues and needs and which
outputs it emits -- from its configured instruction (:func:`pe_rates`).

:func:`mapper.dataflow.sim.simulate` predicts the program's cycles on SARA's virtual units
before it is mapped (VMUs for every Reg and SRAM, request and response units, link latency
1). The array does not run those units: a Reg is a wire there, a reduction stays in the PE's
register, an SRAM is a memory PE per read site. This model times what the array runs, so
:func:`mapper.dataflow.array_run.run_program` reports both next to the RTL's cycles.

**Rates** (:func:`pe_rates`, the semantics of :func:`peak.examples.dataflow_pe.
make_dataflow_pe` for one fire, from the counter chain's state only): ``emit_res`` at
``emit_level``, ``emit_res_p`` at ``emit_p_level``, ``deq_<in>`` at ``deq_<in>_level`` (level
0: every fire; level ``k``: the fires where counter ``k - 1`` saturates with every inner
one); a ``Mem`` PE with a scratchpad writes while its inner counter is below ``b_const``
(needs and dequeues ``b`` only, emits nothing) and reads after (needs and dequeues ``a``
only); a ``MemAcc`` PE updates while below (needs and dequeues ``a`` and ``b``, emits
nothing) and emits after, needing nothing. tests/dataflow/test_array_model.py checks it against the PE's own Python model.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from canal.rv_netsim import FireRates, RateModel, StreamRun
from cgra.errors import MappingError
from garnet.collateral import read_design_info
from mapper.backend.pack import PackedDesign
from mapper.backend.route import RoutingResult
from mapper.collateral import Collateral
from mapper.sim.rv_harness import rv_harness_source
from mapper.sim.rv_predict import predict
from peak.assembler import assembler

_ALL = FireRates()


class _PeRates:
    """The rates of one dataflow PE, fire by fire (module docstring)."""

    def __init__(self, spec: type, inst: Any):
        if int(inst.emit_on_p):
            # emit_on_p makes emit_res depend on p's word: the model has no data
            raise MappingError("pe_rates: emit_on_p = 1 emits on data, which the rate model "
                               "does not see")
        self.L = spec.levels
        cw = spec.Chain._control_["width"]
        self.cw_mask = (1 << cw) - 1
        mins, strides, maxes = (int(getattr(inst.ctr, f)) for f in ("min", "stride", "max"))
        self.lv = [((mins >> k * cw) & self.cw_mask, (strides >> k * cw) & self.cw_mask,
                    (maxes >> k * cw) & self.cw_mask) for k in range(self.L)]
        self.offs = [0] * self.L
        ops = type(inst.op)                                            # DfOp, from the spec
        self.mem = inst.op == ops.Mem and spec.words > 0
        self.acc = inst.op == ops.MemAcc and spec.words > 0
        self.wn = int(inst.b_const)
        self.codes = {f: int(getattr(inst, f)) for f in (
            "emit_level", "emit_p_level", "deq_a_level", "deq_b_level", "deq_p_level")}
        self.k = -1
        self.cur = _ALL

    def _fire(self) -> FireRates:
        done, carry = [], True
        v0 = 0
        nxt = list(self.offs)
        for k, (lo, st, hi) in enumerate(self.lv):
            o = self.offs[k]
            v = (lo + o) & self.cw_mask
            if k == 0:
                v0 = v
            sat = v + st >= hi
            d = carry and sat
            if carry:
                nxt[k] = 0 if sat else (o + st) & self.cw_mask
            done.append(d)
            carry = d
        self.offs = nxt

        def at(code: int) -> bool:
            return done[code - 1] if 1 <= code <= self.L else True
        emit, emit_p = at(self.codes["emit_level"]), at(self.codes["emit_p_level"])
        da, db, dp = (at(self.codes[f"deq_{p}_level"]) for p in "abp")
        need_a = need_b = True
        if self.mem:
            reading = v0 >= self.wn
            emit, da, db = emit and reading, da and reading, db and not reading
            need_a, need_b = reading, not reading
        elif self.acc:
            reading = v0 >= self.wn
            emit, da, db = emit and reading, da and not reading, db and not reading
            need_a = need_b = not reading
        return FireRates(
            no_deq=frozenset(p for p, on in (("a", da), ("b", db), ("p", dp)) if not on),
            no_emit=frozenset(p for p, on in (("res", emit), ("res_p", emit_p)) if not on),
            no_need=frozenset(p for p, on in (("a", need_a), ("b", need_b)) if not on))

    def __call__(self, k: int) -> FireRates:
        if k < self.k:
            raise ValueError(f"pe_rates: fire {k} asked after fire {self.k}")
        while self.k < k:
            self.cur = self._fire()
            self.k += 1
        return self.cur


def pe_rates(spec: type, inst: Any) -> RateModel:
    """The :data:`canal.rv_netsim.RateModel` of a dataflow PE of class ``spec``
    (:func:`peak.examples.dataflow_pe.make_dataflow_pe`) configured with ``inst`` (its
    ``Inst``): fire number (asked in order, 0 first) -> the ports it does not dequeue, emit
    or need on that fire (module docstring). Raises :class:`MappingError` for an
    instruction with ``emit_on_p`` (its emits depend on data)."""
    return _PeRates(spec, inst)


def array_rates(spec: type, packed: PackedDesign,
                sites: Mapping[str, tuple[int, int]]) -> dict[tuple[int, int], RateModel]:
    """Tile -> the :func:`pe_rates` of the dataflow PE placed there: every ``pe`` instance of
    the ``packed`` design (its ``inst`` config word, decoded with ``spec``'s assembler) at
    its site in ``sites`` (the placement's)."""
    asm = assembler(spec.Inst)
    return {sites[name]: pe_rates(spec, asm.decode(inst.config["inst"]))
            for name, inst in packed.instances.items() if inst.kind == "pe"}


def predict_run(coll: Collateral, spec: type, packed: PackedDesign,
                sites: Mapping[str, tuple[int, int]], routing: RoutingResult,
                run_dir: str | Path) -> StreamRun:
    """The model's run of the stream phase of ``run_dir``, a dataflow program's run on the
    design of ``coll`` whose PE class is ``spec``: the ``packed`` netlist placed at
    ``sites`` and routed as ``routing`` (the pipelined routes, their dynamic nets), the
    tokens per stream and the stalls from the run's ``sim.stim``; cycles, stall and
    backpressure cycles. Raises :class:`cgra.errors.CollateralError` for a missing or malformed
    ``sim.stim`` and :class:`cgra.errors.SimulationError` when the model never finishes
    (the harness's deadlock bound)."""
    info = read_design_info(coll.root)
    _src, ins, outs = rv_harness_source(info.top, info.ports)
    return predict(coll, routing.routes(), ins, outs, run_dir, routing.dynamic,
                   array_rates(spec, packed, sites))


__all__ = ["array_rates", "pe_rates", "predict_run"]
