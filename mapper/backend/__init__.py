"""The back end: a mapped netlist onto the array and into a bitstream.

Public modules, in stage order: :mod:`~mapper.backend.pack` (netlist -> packed design),
:mod:`~mapper.backend.place` (simulated annealing / analytical placement),
:mod:`~mapper.backend.route` (PathFinder; the nets are :mod:`~mapper.backend.nets`, the exact
router :mod:`~mapper.backend.exact_route`), :mod:`~mapper.backend.pipeline` (branch-delay
matching, compute pipelining, register insertion, static timing),
:mod:`~mapper.backend.absorb` (register chains into MEM delay lines),
:mod:`~mapper.backend.bitstream` (config words; the power domains it gates are
:mod:`~mapper.backend.power`, the quiet selects of unused muxes :mod:`~mapper.backend.quiet`)
and :mod:`~mapper.backend.verify` (its SMT proof); :mod:`~mapper.backend.checks` holds the invariants every pass keeps and
:mod:`~mapper.backend.report` ``pnr_report.json`` and its pictures. The placement attempts and
the exponent sweep that drive these stages until a design closes are :mod:`mapper.closure`.
"""
