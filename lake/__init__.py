"""Lake: memories described by iteration domain, access map and schedule.

Public API (see each module's docstring for formats, widths and errors):

* specs and presets — :mod:`lake.spec`: ``preset(name)``, ``PRESETS``
  (``dualport_2048x16``, ``dualport_1024x32``, ``pub_512x64``, ``pond_32x16``; and the
  width-parameterised dual port ``dualport_<capacity>x<w>``, e.g. ``dualport_4096x8``);
* port programs — :mod:`lake.program`: ``PortProgram``, ``program``, ``check_program``,
  ``delay_line``, ``delay_taps``;
* config encoder — :mod:`lake.config`: ``configure(preset, port_programs, chain_index=0,
  chain_length=1) -> {field: int}``, ``decode(preset, config) -> {port: program dict}``,
  ``config_fields(preset)``;
* golden model — :mod:`lake.golden`: ``simulate(programs, inputs, read_latency)``;
* cycle-accurate model — :mod:`lake.model`: ``make_model``, ``make_stimulus``,
  ``run_model``;
* RTL — :mod:`lake.rtl`: ``memory_circuit``, ``compile_verilog``; Verilator runs —
  :mod:`lake.sim`: ``VerilatorMemory``;
* SMT — :mod:`lake.smt`: ``prove_recurrence_equals_affine``, ``synthesize``;
* collateral — :mod:`lake.collateral`: ``collateral(preset) -> dict``, ``write_collateral``,
  ``all_collateral``;
* lookup-table mode — :mod:`lake.lut`: ``LUT_LATENCY``, ``lut_fields(preset)``,
  ``check_table(preset, values)``;
* tile core — :mod:`lake.core`: ``core_spec(preset_name) -> cgra.core.CoreSpec``.

Hardware-generating modules (rtl, sim, core) import magma lazily through these
submodules; ``import lake`` itself only loads the pure parts.
"""
from lake.config import config_fields, configure, decode
from lake.golden import simulate
from lake.program import (AffineMap, PortProgram, check_program, delay_line, delay_taps,
                          program)
from lake.spec import PRESETS, MemorySpec, preset


def core_spec(preset_name: str):
    """See :func:`lake.core.core_spec` (imported lazily: it loads magma)."""
    from lake.core import core_spec as _core_spec  # deferred: loads magma, z3, pysmt, 15 more only when called

    return _core_spec(preset_name)


__all__ = ["AffineMap", "PortProgram", "PRESETS", "MemorySpec", "check_program",
           "config_fields", "configure", "core_spec", "decode", "delay_line", "delay_taps",
           "preset", "program", "simulate"]
