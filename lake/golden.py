"""Golden model: unified-buffer semantics computed directly from the port programs.

Source: Liu et al., "Unified Buffer: Compiling Image Processing and Machine Learning
Applications to Push-Memory Accelerators", ACM TACO 2023, Sec. 3. A unified buffer is a
set of ports over one address space; port ``p`` accesses address ``A_p(i)`` at cycle
``S_p(i)`` for every point ``i`` of its iteration domain. In one cycle all writes happen
before all reads; a read at cycle ``c`` appears on the output at ``c + read_latency``.
Any number of ports is allowed here (the abstract buffer, e.g. 1 input and 9 outputs for a
3x3 line buffer); the presets realise subsets of it.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from cgra.errors import SimulationError
from lake.program import PortProgram

Stream = list[tuple[int, int | None]]
"""(cycle, value) events of one output port in order; value None = never-written word."""


def simulate(programs: Mapping[str, PortProgram | dict], inputs: Mapping[str, Sequence[int]],
             read_latency: int = 1) -> dict[str, Stream]:
    """Output streams of every read port.

    ``programs``: port name -> program (dict or :class:`PortProgram`). Ports named in
    ``inputs`` are write ports and ``inputs[p][k]`` is the value of their k-th write (in
    iteration order); every other port is a read port. Returns port -> list of
    ``(cycle, value)`` with ``cycle = S(i) + read_latency``.
    Raises :class:`SimulationError` when an input stream is shorter than its domain.
    """
    progs = {p: PortProgram.from_dict(v, p) for p, v in programs.items()}
    # (cycle, kind 0=write 1=read, port order, port, write index or address, address)
    events: list[tuple[int, int, int, str, int, int]] = []
    for order, (port, prog) in enumerate(progs.items()):
        cyc = prog.cycles().tolist()
        adr = prog.addresses().tolist()
        kind = 0 if port in inputs else 1
        if kind == 0 and len(inputs[port]) < len(cyc):
            raise SimulationError(f"golden model: input port {port} has {len(inputs[port])} "
                                  f"values but its domain has {len(cyc)} points")
        for k, (c, a) in enumerate(zip(cyc, adr, strict=True)):
            events.append((c, kind, order, port, k if kind == 0 else a, a))
    events.sort(key=lambda e: (e[0], e[1], e[2]))
    mem: dict[int, int] = {}
    out: dict[str, Stream] = {p: [] for p in progs if p not in inputs}
    for c, kind, _order, port, k, a in events:
        if kind == 0:
            mem[a] = int(inputs[port][k])
        else:
            out[port].append((c + read_latency, mem.get(a)))
    return out


def sources(programs: Mapping[str, PortProgram | dict], writers: Sequence[str]
            ) -> dict[str, list[tuple[str, int] | None]]:
    """For every read port, per access: ``(write port, write index)`` of the value it
    returns under unified-buffer semantics, or None if the word was never written."""
    progs = {p: PortProgram.from_dict(v, p) for p, v in programs.items()}
    sizes = {w: progs[w].size for w in writers}
    # encode (writer index, k) into one integer so the value-level model can be reused
    base = max(list(sizes.values()) + [1])
    enc = {w: [i * base + k for k in range(sizes[w])] for i, w in enumerate(writers)}
    res = simulate(progs, enc, read_latency=0)
    out: dict[str, list[tuple[str, int] | None]] = {}
    for p, stream in res.items():
        out[p] = [None if v is None else (writers[v // base], v % base) for _c, v in stream]
    return out
