"""The application compiler ("mapper"): an app onto a generated array, stage by stage.

The rooms, in pipeline order (each sub-package's docstring names its public modules):

* the IR and its semantics, at the top: :mod:`mapper.ir` (the op-DAG IR), :mod:`mapper.interp`
  (golden model 1: the numpy interpreter), :mod:`mapper.netlist` (the netlist format),
  :mod:`mapper.images` (image I/O and the shipped samples);
* front ends, :mod:`mapper.frontend`: the embedded Halide-like DSL, the CoreIR importer, the
  tensor programs of DNN layers; the shipped apps are :mod:`mapper.apps`;
* mapping, :mod:`mapper.mapping`: memory mapping (unified buffers) and compute mapping
  (instruction selection with the rewrite rules);
* the back end, :mod:`mapper.backend`: pack, place, route, pipeline, register absorption,
  bitstream and its proof, the pass invariants and the PnR report;
* DNN layers, :mod:`mapper.dnn`: plans, coarse-grained schedules, memory systems and netlists;
* simulation, :mod:`mapper.sim`: the Verilator harness, running on the RTL, the Halide golden.

Driving them: :mod:`mapper.collateral` (a design's collateral, read once),
:mod:`mapper.params` (every flow parameter), :mod:`mapper.stages` (every stage file's reader
and writer), :mod:`mapper.closure` (placement attempts and the exponent sweep),
:mod:`mapper.flow` (the stages in order, file to file) and :mod:`mapper.cli` (the commands).
Imports go down this list and never in a circle (``make lint``).
"""
