"""DNN layers (the unified-buffer paper's tensor workloads) on the array.

Public modules: :mod:`~mapper.dnn.plan` (the mapping plan of a layer: PEs, MEMs, cycles,
occupancy) over :mod:`~mapper.dnn.coarse` (coarse-grained, double-buffered tile pipelines)
and :mod:`~mapper.dnn.step` (the per-step kernel), :mod:`~mapper.dnn.memory` (a layer's
memory system on Lake's cycle-accurate MEM models) and :mod:`~mapper.dnn.array` (a layer as
a netlist on the array, its streams and its run on the RTL). Tensor programs are
:mod:`mapper.frontend.tensor`.
"""
