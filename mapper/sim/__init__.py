"""Simulation and golden models: running a compiled app on the generated RTL.

Public modules: :mod:`~mapper.sim.run` (the stream plan, the bitstream proof, the run and the
comparison with the golden models, ``run_report.json``), :mod:`~mapper.sim.verilator` (the
generated C++ harness, built once per design and cached) and :mod:`~mapper.sim.halide`
(golden model 2: the same program in real Halide). Golden model 1, the numpy interpreter of
the IR, is :mod:`mapper.interp`.
"""
