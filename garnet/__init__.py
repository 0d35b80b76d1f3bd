"""Garnet: compose the CGRA (PE, MEM and IO cores on a Canal interconnect) and write the
array RTL plus every piece of compiler collateral into one directory.

Public API
  ``garnet.params``: :class:`GarnetParams` (one dataclass), ``load_toml(path)``,
  ``from_dict(doc, source)``, ``validate(params)`` — :class:`cgra.errors.ConfigError` names
  the bad field before anything is generated.
  ``garnet.array``: ``build_interconnect(params, core_fn=None) -> canal.Interconnect``,
  ``array_top(ic, params, shapes, tile_ports, name) -> (Verilog text, ports)`` (the top
  written by ``cgra rtl``), ``array_circuit(ic, params)`` (the whole array as one magma
  circuit: both from ``canal.rtl.array_netlist``), ``default_core_fn(params)``.
  ``garnet.cores``: ``pe_core(spec)``, ``mem_core(preset)``, ``io_core(width)`` (CoreSpecs,
  tags ``p``/``m``/``I``), ``load_pe_spec("module:Class")``, ``mem_collateral(preset)``.
  ``garnet.build``: ``generate(params, out, rules=True, rules_dir=None, jobs=1,
  step=None) -> BuildResult`` (``.summary()``, ``.top``, ``.circuit`` = a magma declaration of the top,
  ``.interconnect``),
  ``split_verilog(text)``.
  ``garnet.lint``: ``lint(design_dir) -> LintReport``, ``load_design(design_dir)``.
  ``garnet.rules``: ``provide_rules(...)`` (reuse by PE spec hash).
  Commands: ``cgra rtl --config FILE --out DIR`` and ``cgra lint DIR`` (:mod:`garnet.cli`).

The collateral layout and the testbench protocol are in ``docs/garnet.md``.
"""
