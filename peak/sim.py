"""Run one list of (instruction, inputs) vectors through the Python model and the RTL.

:class:`RTLSim` / :func:`run_rtl` drive :func:`peak.rtl.pe_circuit` under Verilator with
a data-driven fault test bench (ONE build; vectors are read from a file, so the build does
not grow with the vector count): reset, then one clock cycle per vector with ``clk_en``
= 1 unless the vector says otherwise; the outputs are sampled before each clock edge. :func:`check_vectors` runs the same list through the Python model
(``Spec()`` stepped once per vector with ``clk_en`` = 1; a vector with ``clk_en`` = 0
leaves the model's state unchanged) and raises :class:`~cgra.errors.SimulationError`
naming the first mismatching vector (index, instruction, inputs, expected, got).

A vector is ``(inst, inputs)`` or ``(inst, inputs, clk_en)``; ``inst`` is an ISA value or
its flat int encoding; ``inputs`` a sequence of ints / hwtypes values in input order.
"""
from __future__ import annotations

import os
import subprocess
from typing import Any, Sequence

import fault

from cgra.errors import SimulationError
from peak.assembler import assembler
from peak.coerce import coerce as _coerce
from peak.normalize import normal_form
from peak.rtl import pe_circuit
import hwtypes as ht


def _unpack(v: Sequence) -> tuple[Any, Sequence, int]:
    if len(v) == 2:
        return v[0], v[1], 1
    if len(v) == 3:
        return v[0], v[1], int(v[2])
    raise SimulationError(f"vector {v!r} must be (inst, inputs) or (inst, inputs, clk_en)")


def _scan_format(width: int) -> str:
    return "%hhx" if width <= 8 else "%hx" if width <= 16 else "%x" if width <= 32 else "%lx"


class RTLSim:
    """A Verilator model of ``pe_circuit(spec)`` with a data-driven fault test bench, built
    ONCE in ``directory`` (the first :meth:`run` builds; later runs reuse the executable).

    The bench reads ``vectors.txt`` (first line: vector count; then per vector, in hex:
    ``inst clk_en input...``), resets the PE for one cycle, and per vector pokes the
    inputs, samples every output into ``out_<name>.bin`` (little endian,
    ``ceil(width/8)`` bytes) and clocks once. Build cost does not grow with the vector
    count."""

    def __init__(self, spec: type, directory: str):
        self.spec = spec
        self.directory = os.path.abspath(directory)
        self.nf = normal_form(spec)
        self.asm = assembler(self.nf.isa)
        self.circ = pe_circuit(spec)
        self.built = False
        if self.asm.width > 64 or any(T.size > 64 for _, T in self.nf.inputs
                                      if hasattr(T, "size")):
            raise SimulationError(f"{spec.__name__}: RTLSim supports instructions and inputs "
                                  "up to 64 bits")

    def _bytes(self, T: Any) -> int:
        return max(1, (getattr(T, "size", 1) + 7) // 8)

    def _tester(self) -> Any:
        circ, nf = self.circ, self.nf
        t = fault.Tester(circ, circ.CLK)
        vec = t.file_open("vectors.txt", "r")
        outs = {n: t.file_open(f"out_{n}.bin", "w", chunk_size=self._bytes(T))
                for n, T in nf.outputs}
        nvec = t.Var("nvec", ht.BitVector[32])
        t.file_scanf(vec, "%x", nvec)
        inst = t.Var("v_inst", ht.BitVector[self.asm.width])
        en = t.Var("v_clk_en", ht.BitVector[1])
        ins = [t.Var(f"v_in_{n}", ht.BitVector[getattr(T, "size", 1)]) for n, T in nf.inputs]
        t.circuit.RESET = 1
        t.circuit.clk_en = 1
        t.circuit.inst = 0
        for n, _ in nf.inputs:
            t.poke(getattr(circ, n), 0)
        t.step(2)
        t.circuit.RESET = 0
        loop = t.loop("nvec")
        fmt = " ".join([_scan_format(self.asm.width), "%hhx"] +
                       [_scan_format(getattr(T, "size", 1)) for _, T in nf.inputs])
        loop.file_scanf(vec, fmt, inst, en, *ins)
        loop.poke(circ.inst, inst)
        loop.poke(circ.clk_en, en)
        for (n, _), v in zip(nf.inputs, ins, strict=True):
            loop.poke(getattr(circ, n), v)
        loop.eval()
        for n, _ in nf.outputs:
            loop.file_write(outs[n], getattr(circ, n))
        loop.step(2)
        t.file_close(vec)
        for f in outs.values():
            t.file_close(f)
        return t

    def _write_vectors(self, vectors: Sequence[Sequence]) -> None:
        lines = [f"{len(vectors):x}"]
        for v in vectors:
            inst, inputs, en = _unpack(v)
            flat = inst if isinstance(inst, int) else self.asm.encode(inst)
            vals = [int(_coerce(T, x, f"input {n}"))
                    for (n, T), x in zip(self.nf.inputs, inputs, strict=True)]
            lines.append(" ".join(f"{x:x}" for x in [flat, en, *vals]))
        with open(os.path.join(self.directory, "vectors.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")

    def run(self, vectors: Sequence[Sequence]) -> list[tuple[int, ...]]:
        """Outputs (ints, in output order) for each vector, sampled before its clock edge.
        Raises :class:`SimulationError` if the build or the run fails."""
        os.makedirs(self.directory, exist_ok=True)
        self._write_vectors(vectors)
        try:
            if not self.built:
                self._tester().compile_and_run(
                    "verilator", directory=self.directory, flags=["-Wno-fatal"],
                    magma_output="mlir-verilog", disp_type="on_error")
                self.built = True
            else:
                subprocess.run([f"./obj_dir/V{self.circ.name}"], cwd=self.directory,
                               check=True, capture_output=True, timeout=600)
        except Exception as e:  # noqa: BLE001 - reported with the build directory
            raise SimulationError(f"Verilator build/run of {self.circ.name} in "
                                  f"{self.directory} failed: {type(e).__name__}: {e}") from e
        cols = []
        for n, T in self.nf.outputs:
            k = self._bytes(T)
            with open(os.path.join(self.directory, f"out_{n}.bin"), "rb") as f:
                data = f.read()
            if len(data) != k * len(vectors):
                raise SimulationError(f"{self.circ.name}: expected {len(vectors)} values of "
                                      f"output {n}, the simulation wrote {len(data) // k}")
            cols.append([int.from_bytes(data[i * k:(i + 1) * k], "little")
                         for i in range(len(vectors))])
        return [tuple(c[i] for c in cols) for i in range(len(vectors))]


def run_rtl(spec: type, vectors: Sequence[Sequence], directory: str) -> list[tuple[int, ...]]:
    """Outputs (ints, in output order) of the RTL for each vector: ``RTLSim(spec,
    directory).run(vectors)`` (one Verilator build)."""
    return RTLSim(spec, directory).run(vectors)


def model_outputs(spec: type, vectors: Sequence[Sequence]) -> list[tuple[int, ...]]:
    """Outputs of the Python model (reset first) for each vector, as ints."""
    model = spec()
    out = []
    for v in vectors:
        inst, inputs, en = _unpack(v)
        saved = model.state()
        r = model(inst, *inputs)
        if not en:
            model.set_state(saved)
        r = r if isinstance(r, tuple) else (r,)
        out.append(tuple(int(x) for x in r))
    return out


def check_vectors(spec: type, vectors: Sequence[Sequence], directory: str) -> int:
    """Compare the Python model with the RTL on ``vectors`` (one Verilator build).
    Returns the number of vectors checked; raises :class:`SimulationError` naming the first
    mismatch."""
    nf = normal_form(spec)
    expected = model_outputs(spec, vectors)
    got = run_rtl(spec, vectors, directory)
    names = [n for n, _ in nf.outputs]
    for i, (e, g) in enumerate(zip(expected, got, strict=True)):
        if e != g:
            inst, inputs, en = _unpack(vectors[i])
            raise SimulationError(
                f"{spec.__name__}: RTL differs from the Python model at vector {i}: "
                f"inst={inst!r}, inputs={list(map(int, inputs))}, clk_en={en}; expected "
                f"{dict(zip(names, e, strict=True))}, got {dict(zip(names, g, strict=True))}")
    return len(vectors)


__all__ = ["RTLSim", "run_rtl", "model_outputs", "check_vectors"]
