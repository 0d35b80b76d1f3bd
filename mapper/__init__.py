"""The thin application compiler ("mapper").

Part 1 (this package so far): the op-DAG IR (:mod:`mapper.ir`), two front ends (the embedded
Halide-like DSL :mod:`mapper.frontend.dsl` and the CoreIR JSON importer
:mod:`mapper.frontend.coreir`), two golden models (the numpy interpreter :mod:`mapper.interp`
and the real-Halide exporter :mod:`mapper.halide_export`), memory mapping for stencil pipelines
(:mod:`mapper.schedule`, :mod:`mapper.memory`) and the netlist formats (:mod:`mapper.netlist`).
"""
