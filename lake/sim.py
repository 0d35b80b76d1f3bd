"""Verilator runs of the generated memories through fault, built once and run many times.

:class:`VerilatorMemory` builds ONE Verilator executable per memory (``fault.Tester`` +
``compile_and_run("verilator")``) whose testbench reads a command file, so any number of
programs can be run on the same build by reconfiguring between runs:

* ``1 v_0 v_1 ...`` — load every ``config_<field>`` input (order of
  :func:`lake.config.config_fields`), hex values;
* ``2 RESET clk_en flush <inputs>`` — drive one cycle (inputs in the order of
  :func:`lake.model.input_names`), print the outputs (order of
  :func:`lake.model.output_names`) before the rising edge, then clock once;
* ``0`` — end.

The response is one line of hex output values per ``2`` command on stdout.
"""
from __future__ import annotations

import fcntl
import subprocess
import time
from pathlib import Path
from typing import Mapping, Sequence

import fault
from hwtypes import BitVector

from cgra.errors import SimulationError
from lake.config import config_fields
from lake.model import Stimulus, collect, input_names, output_names
from lake.rtl import memory_circuit
from lake.spec import MemorySpec, as_spec

STIM_FILE = "lake_stim.txt"


class VerilatorMemory:
    """A Verilator build of one memory, reusable for many configurations and streams.

    The build in ``directory`` happens under an exclusive file lock and is marked done
    by a ``BUILT`` file, so processes sharing ``directory`` (pytest-xdist workers) build
    it once and reuse it. Each process runs the executable in its own ``workdir``
    (default: ``directory``), where the command file is written. Building costs one
    Verilator compile (seconds); :meth:`run` costs only the simulation.
    """

    def __init__(self, preset: MemorySpec | str, directory: str | Path,
                 form: str = "recurrence", workdir: str | Path | None = None):
        self.spec = as_spec(preset)
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.workdir = Path(workdir) if workdir is not None else self.directory
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.circuit = memory_circuit(self.spec, form)
        self.fields = config_fields(self.spec)
        self.inputs = input_names(self.spec)
        self.outputs = output_names(self.spec)
        self.exe = self.directory / "obj_dir" / f"V{self.circuit.name}"
        t0 = time.perf_counter()
        self.built_here = False
        with open(self.directory / ".build.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                marker = self.directory / "BUILT"
                if not (marker.exists() and self.exe.exists()):
                    self._build()
                    marker.write_text(self.circuit.name + "\n")
                    self.built_here = True
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        self.build_seconds = time.perf_counter() - t0
        if not self.exe.exists():
            raise SimulationError(f"Verilator build of {self.circuit.name} produced no "
                                  f"executable at {self.exe}")

    def _build(self) -> None:
        circ = self.circuit
        t = fault.Tester(circ, circ.CLK)
        f = t.file_open(STIM_FILE, "r")
        op = t.Var("op", BitVector[32])
        v = t.Var("v", BitVector[32])
        t.poke(circ.CLK, 0)
        t.file_scanf(f, "%x", op)
        loop = t._while(op != 0)
        cfg = loop._if(op == 1)
        for fld in self.fields:
            cfg.file_scanf(f, "%x", v)
            cfg.poke(getattr(circ, f"config_{fld.name}"), v)
        cyc = loop._if(op == 2)
        for name in ["RESET", "clk_en", "flush"] + self.inputs:
            cyc.file_scanf(f, "%x", v)
            cyc.poke(getattr(circ, name), v)
        cyc.eval()
        cyc.print(" ".join(["%x"] * len(self.outputs)) + "\n",
                  *[getattr(circ, o) for o in self.outputs])
        cyc.step(2)
        loop.file_scanf(f, "%x", op)
        (self.directory / STIM_FILE).write_text("0\n")
        t.compile_and_run("verilator", directory=str(self.directory),
                          flags=["-Wno-fatal"], magma_output="mlir-verilog",
                          disp_type="on_error")

    def run_records(self, config: Mapping[str, int], records: Sequence[Mapping[str, int]]
                    ) -> list[dict[str, int]]:
        """Load ``config``, drive the records, return the per-cycle outputs.
        ``last_run_seconds`` is set to the wall time of the Verilator executable alone."""
        lines = ["1 " + " ".join(f"{int(config[f.name]):x}" for f in self.fields)]
        keys = ["RESET", "clk_en", "flush"] + self.inputs
        for r in records:
            lines.append("2 " + " ".join(f"{int(r.get(k, 0)):x}" for k in keys))
        lines.append("0")
        (self.workdir / STIM_FILE).write_text("\n".join(lines) + "\n")
        t0 = time.perf_counter()
        proc = subprocess.run([str(self.exe)], cwd=self.workdir, capture_output=True,
                              text=True)
        self.last_run_seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SimulationError(f"Verilator run of {self.circuit.name} failed "
                                  f"(exit {proc.returncode}): {proc.stderr[-500:]}")
        rows = [ln.split() for ln in proc.stdout.splitlines()
                if ln.strip() and all(_is_hex(x) for x in ln.split())
                and len(ln.split()) == len(self.outputs)]
        if len(rows) != len(records):
            raise SimulationError(f"Verilator run of {self.circuit.name}: expected "
                                  f"{len(records)} output lines, got {len(rows)}")
        return [{o: int(x, 16) for o, x in zip(self.outputs, row, strict=True)} for row in rows]

    def run(self, config: Mapping[str, int], stim: Stimulus) -> dict[str, list[tuple[int, int]]]:
        """(cycle, value) per output port for a stimulus (see :func:`lake.model.collect`)."""
        return collect(self.spec, stim.records, self.run_records(config, stim.records))


def _is_hex(s: str) -> bool:
    try:
        int(s, 16)
        return True
    except ValueError:
        return False
