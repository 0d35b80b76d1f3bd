"""``cgra map``: an application in, a mapped netlist out (front end, memory and compute mapping).

``cgra map <app> --design build/<design> --out build/apps/<app>``: ``<app>`` is a shipped DSL
app (:data:`mapper.apps.APPS`) or the path of a CoreIR JSON file (one kernel per
``hcompute_*`` module). Steps, each timed: read and validate the collateral
(:func:`mapper.collateral.load_collateral`), front end, memory mapping (DSL apps:
:func:`mapper.memory.map_memory` with ``mem.json``), compute mapping
(:func:`mapper.compute.map_compute` / :func:`mapper.compute.cover_kernel` with the rule
table), the equivalence check of every mapped kernel (``--vectors`` random vectors through
the PE Python model; 0 skips it) and writing ``<out>/<app>.json`` (netlist JSON) and
``<out>/<app>.packed``. Prints a table of per-stage time and the PE / MEM / register / IO
counts. The library entry point is :func:`map_app`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from cgra.errors import MappingError
from mapper import ir
from mapper.collateral import Collateral, load_collateral
from mapper.compute import (ComputeMapping, MappedKernel, check_equivalence, cover_kernel,
                            kernel_netlist, map_compute)
from mapper.memory import DEFAULT_SR_THRESHOLD, MemoryMapping, map_memory
from mapper.netlist import Netlist


@dataclass
class AppMapping:
    """Result of :func:`map_app`: the mapped ``netlist`` (PEs, MEMs, registers, IOs), the
    cover of every kernel, the memory mapping (DSL apps; ``None`` for CoreIR files),
    ``times`` = step -> seconds and ``vectors`` checked per kernel."""

    name: str
    netlist: Netlist
    kernels: dict[str, MappedKernel]
    memory: MemoryMapping | None
    compute: ComputeMapping | None
    times: dict[str, float] = field(default_factory=dict)
    vectors: int = 0

    def counts(self) -> dict[str, int]:
        """``pe``, ``mem``, ``reg``, ``io`` instance counts of the netlist."""
        c = self.netlist.counts()
        return {"pe": c.get("pe", 0), "mem": c.get("mem", 0), "reg": c.get("reg", 0),
                "io": c.get("io_in", 0) + c.get("io_out", 0)}

    def write(self, out: str | Path) -> tuple[Path, Path]:
        """Write ``<out>/<name>.json`` (netlist JSON) and ``<out>/<name>.packed``."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        js, packed = out / f"{self.name}.json", out / f"{self.name}.packed"
        self.netlist.save(js)
        packed.write_text(self.netlist.to_packed())
        return js, packed


def _is_coreir(app: str) -> bool:
    return app.endswith(".json") or Path(app).is_file()


def map_app(app: str, design: str | Path | Collateral, *, width: int = 64, height: int = 64,
            unroll: int = 1, threshold: int = DEFAULT_SR_THRESHOLD, vectors: int = 1000,
            seed: int = 0, check_spec: bool = True) -> AppMapping:
    """Map ``app`` (a shipped DSL app name or a CoreIR JSON path) onto the design whose
    collateral is ``design`` (a directory or a loaded :class:`Collateral`).

    DSL apps are lowered on a ``width`` x ``height`` image (pixels) with ``unroll`` lanes,
    memory-mapped with the design's MEM (shift-register ``threshold`` in cycles) and
    compute-mapped with its rule table; a CoreIR file maps each kernel stand-alone with IO
    instances for its inputs and outputs. Every mapped kernel is checked against the
    original on ``vectors`` random input vectors (``seed``). Raises
    :class:`~cgra.errors.CollateralError` for bad collateral, :class:`MappingError` for an
    unknown app, an op without a rule or a failed equivalence check.
    """
    times: dict[str, float] = {}
    t = time.perf_counter()
    coll = design if isinstance(design, Collateral) else load_collateral(design, check_spec)
    times["collateral"] = time.perf_counter() - t
    memory = None
    compute = None
    if _is_coreir(app):
        from mapper.frontend.coreir import import_coreir
        p = Path(app)
        if not p.is_file():
            raise MappingError(f"CoreIR file {p} does not exist; pass a shipped app name "
                               f"or an existing CoreIR JSON path")
        name = p.stem
        t = time.perf_counter()
        kernels_ir = import_coreir(p)
        times["front end"] = time.perf_counter() - t
        t = time.perf_counter()
        nl = Netlist(name)
        kernels: dict[str, MappedKernel] = {}
        for kname, k in kernels_ir.items():
            m = cover_kernel(k, coll.rules, coll.pe)
            kernels[kname] = m
            kernel_netlist(m, coll.pe, nl)
        times["compute mapping"] = time.perf_counter() - t
    else:
        from mapper.apps import lower_app
        name = app
        t = time.perf_counter()
        pipeline: ir.Pipeline = lower_app(app, width, height, unroll)
        times["front end"] = time.perf_counter() - t
        t = time.perf_counter()
        if coll.mem is None:
            raise MappingError(f"design {coll.root} has no MEM tiles (mem.json names none); "
                               f"app {app} needs line buffers: use a design with mem_ratio > 0")
        memory = map_memory(pipeline, coll.mem, threshold)
        times["memory mapping"] = time.perf_counter() - t
        t = time.perf_counter()
        compute = map_compute(memory.netlist, coll.rules, coll.pe)
        nl = compute.netlist
        kernels = compute.kernels
        times["compute mapping"] = time.perf_counter() - t
    if vectors > 0:
        t = time.perf_counter()
        from mapper.collateral import load_pe_model
        spec = load_pe_model(coll.pe)
        for m in kernels.values():
            check_equivalence(m, coll.pe, spec, vectors, seed)
        times["equivalence check"] = time.perf_counter() - t
    return AppMapping(name, nl, kernels, memory, compute, times, vectors)


def _print_summary(res: AppMapping, paths: tuple[Path, Path], design: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    c = res.counts()
    table = Table(title=f"cgra map {res.name} onto {design}")
    table.add_column("stage")
    table.add_column("time (ms)", justify="right")
    table.add_column("result")
    for step, sec in res.times.items():
        what = ""
        if step == "memory mapping" and res.memory is not None:
            mc = res.memory.counts()
            what = f"{mc['mem']} MEM, {mc['reg']} registers, {mc['io']} IO"
        elif step == "compute mapping":
            ops = sum(m.prepared.num_ops() for m in res.kernels.values())
            what = f"{c['pe']} PE for {ops} IR ops in {len(res.kernels)} kernels"
        elif step == "equivalence check":
            what = f"{len(res.kernels)} kernels x {res.vectors} vectors match"
        elif step == "front end":
            what = f"{len(res.kernels)} kernels"
        table.add_row(step, f"{sec * 1e3:.1f}", what)
    console.print(table)
    console.print(f"{res.name}: {c['pe']} PEs, {c['mem']} MEMs, {c['reg']} registers, "
                  f"{c['io']} IOs, {len(res.netlist.nets)} nets -> {paths[0]}, {paths[1]}")


@click.command("map")
@click.argument("app")
@click.option("--design", "design", required=True, type=click.Path(path_type=Path),
              help="collateral directory written by `cgra rtl` (build/<design>)")
@click.option("--out", "out", type=click.Path(path_type=Path), default=None,
              help="output directory (default build/apps/<app>)")
@click.option("--width", default=64, show_default=True, help="image width (pixels, DSL apps)")
@click.option("--height", default=64, show_default=True, help="image height (pixels, DSL apps)")
@click.option("--unroll", default=1, show_default=True, help="output pixels per cycle")
@click.option("--threshold", default=DEFAULT_SR_THRESHOLD, show_default=True,
              help="shift-register threshold (cycles)")
@click.option("--vectors", default=1000, show_default=True,
              help="random vectors per kernel for the equivalence check (0 = skip)")
@click.option("--seed", default=0, show_default=True, help="seed of the random vectors")
def map_cmd(app: str, design: Path, out: Path | None, width: int, height: int, unroll: int,
            threshold: int, vectors: int, seed: int) -> None:
    """Map APP (a shipped app name or a CoreIR JSON file) onto a generated design."""
    res = map_app(app, design, width=width, height=height, unroll=unroll,
                  threshold=threshold, vectors=vectors, seed=seed)
    t = time.perf_counter()
    paths = res.write(out if out is not None else Path("build/apps") / res.name)
    res.times["write"] = time.perf_counter() - t
    _print_summary(res, paths, design)


__all__: list[Any] = ["AppMapping", "map_app", "map_cmd"]
