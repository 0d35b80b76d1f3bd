"""The measured timing model (issue 40; Cascade §V-A and §VI-A).

* :mod:`garnet.sta.liberty` -- the project's standard-cell library ``cgra_le65``, written
  from the logical-effort delay model and cited process figures;
* :mod:`garnet.sta.verilog` -- the per-module split of a design's ``rtl/`` and the
  rewrites yosys 0.23 needs;
* :mod:`garnet.sta.measure` -- each distinct tile synthesised with yosys and every Canal
  path class (:mod:`canal.timing_paths`) timed with OpenSTA: the delay table of a
  ``timing = "measured"`` design (the default);
* :mod:`garnet.sta.sdf` -- validation of the model against SDF-annotated gate-level
  simulation (Icarus Verilog).
"""
