"""Execution of a sweep on Dask ``distributed`` (docs/dse.md).

Task graph: one :func:`design_task` per design (``garnet.build.generate`` into
``<cache>/designs/<key>`` with the rule table from the shared ``<cache>/rules`` (or the
sweep's ``rules``), then the
area proxy, :mod:`dse.area`), and one :func:`app_task` per (design, app) depending on
it (map .. pipeline with :func:`mapper.flow.run_stages`, metrics). Every finished point is
cached as ``<cache>/results/<design key>/<app>-<flow key>.json``, failures included (an app
that does not fit raises ``MappingError`` / ``PlacementError`` / ``RoutingError``: the point
is recorded with its error); the client submits only the points without a cached result,
and a design task only for a design with such a point: a second run submits nothing.
:class:`Executor` does that bookkeeping for the grid (:func:`run_sweep`) and for the search
(:func:`dse.search.run_search`), which share the cache.
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import socket
import time
import traceback
from pathlib import Path
from typing import Any

from dse.area import AREA_DIR_NAME, design_nand2
from dse.sweep import Point, Sweep
from cgra.errors import CgraError
from cgra.errors import ConfigError
from dse.area import design_area
from dse.plots import plot_all
from garnet.params import from_dict
from mapper.backend.pipeline import PipelineParams
from mapper.backend.place import PlaceParams
import multiprocessing

#: version 2: ``cycles`` = the ideal stream cycles + the pipelining's extra output latency
#: (version 1 added the ideal first-output cycle a second time: 843 for gaussian 32x24 where
#: Verilator streams 777); a cached result of another version is computed again
#: version 3: the row names the timing model its Fmax comes from (``timing_model``)
RESULT_SCHEMA = "dse.point/3"
#: the CSV columns, in order (grid fields are inserted after ``design``)
COLUMNS = ["design", "app", "unroll", "status", "error", "pe_count", "mem_count", "io_count",
           "reg_count", "pipeline_registers", "tracks", "wirelength", "fmax_mhz", "timing_model",
           "period_ps", "latency_cycles", "cycles", "runtime_us", "energy_proxy", "area_cells", "area_nand2",
           "sram_bits",
           "design_seconds", "area_seconds", "map_s", "pack_s", "place_s", "route_s",
           "pipeline_s", "compile_s", "sim_cycles", "sim_s"]
#: the Arrow type of each column of ``results.parquet`` ("int64" / "float64" / "string"; a
#: grid column's type is inferred from its values, :func:`write_parquet`)
COLUMN_TYPES = {"design": "string", "app": "string", "unroll": "int64", "status": "string",
                "error": "string", "pe_count": "int64", "mem_count": "int64",
                "io_count": "int64", "reg_count": "int64", "pipeline_registers": "int64",
                "tracks": "int64", "wirelength": "int64", "fmax_mhz": "float64",
                "timing_model": "string", "period_ps": "float64", "latency_cycles": "int64", "cycles": "int64",
                "runtime_us": "float64", "energy_proxy": "int64", "area_cells": "int64",
                "area_nand2": "float64", "sram_bits": "int64", "design_seconds": "float64",
                "area_seconds": "float64", "map_s": "float64", "pack_s": "float64",
                "place_s": "float64", "route_s": "float64", "pipeline_s": "float64",
                "compile_s": "float64", "sim_cycles": "int64", "sim_s": "float64"}
STAGES = ("collateral", "map", "pack", "place", "route", "pipeline")


def _write_json(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    tmp.replace(path)


# ----------------------------------------------------------------------------- tasks
def design_task(params_doc: dict, key: str, cache: str, rules: str) -> dict:
    """Generate one design (rules included, the rule tables cached in ``rules``) and its
    area proxy; cached by ``key`` in ``<cache>/designs/<key>.dse.json``. The tiles' yosys
    cell counts are cached in ``area`` beside ``rules`` (:data:`AREA_DIR_NAME`; like the
    tile timing measurements beside them, keyed by tile Verilog: sweeps that share a rules
    directory synthesise a tile once). Returns ``{key, dir, area, seconds}`` or
    ``{key, error}``."""
    from garnet.build import generate  # deferred: loads psutil only when called

    root = Path(cache)
    out = root / "designs" / key
    marker = root / "designs" / f"{key}.dse.json"     # beside the design: not in its manifest
    if marker.is_file():
        doc = json.loads(marker.read_text())
        if doc.get("key") == key:
            return {**doc, "cached": True}
    t = time.perf_counter()
    try:
        params = from_dict(params_doc)
        generate(params, out, rules=True, rules_dir=Path(rules), jobs=1)
        gen_s = time.perf_counter() - t
        t2 = time.perf_counter()
        area = design_area(out, Path(rules).parent / AREA_DIR_NAME)
        doc = {"key": key, "dir": str(out), "params": params_doc, "area": area,
               "seconds": round(gen_s, 3), "area_seconds": round(time.perf_counter() - t2, 3)}
    except CgraError as exc:
        return {"key": key, "error": f"{type(exc).__name__}: {exc}", "cached": False}
    _write_json(marker, doc)
    return {**doc, "cached": False}


def result_path(cache: Path, design_key: str, app_label: str, flow_key: str) -> Path:
    return Path(cache) / "results" / design_key / f"{app_label}-{flow_key}.json"


def flow_key(sweep: Sweep, app: str, unroll: int) -> str:
    doc = [app, unroll, list(sweep.image), sweep.seed, sweep.fmax_mhz]
    if sweep.simulate:             # a simulated point is another result (keys without stay)
        doc.append("simulate")
    return hashlib.sha256(json.dumps(doc).encode()).hexdigest()[:16]


def app_task(design: dict, app: str, unroll: int, image: tuple[int, int], seed: int,
             fmax_mhz: float, result_file: str, simulate: bool = False) -> dict:
    """Map .. pipeline one app on one design (``design``: the result of
    :func:`design_task`) and write its metrics to ``result_file``; with ``simulate`` also
    the bitstream, its proof and the Verilator run on the design's RTL, checked bit for bit
    against both golden models (``sim_cycles``: the simulated stream cycles, ``sim_s``: the
    seconds from bitstream to comparison, Verilator build included; the harness is built once
    per design, under a file lock). A project error (``CgraError``: the app does not fit,
    routing fails, the output differs from a golden model ...) is a recorded failure."""
    from mapper.params import AppParams, FlowParams, RunParams  # deferred: loads islpy only when called
    from mapper.flow import run_stages  # deferred: loads z3, islpy, pysmt, 2 more only when called

    row: dict[str, Any] = {"schema": RESULT_SCHEMA, "design": design["key"], "app": app,
                           "unroll": unroll}
    if "error" in design:
        row.update(status="failed", error=f"design: {design['error']}")
        _write_json(Path(result_file), row)     # deterministic: cached like any failure
        return {**row, "cached": False}
    area = design["area"]
    row.update(area_cells=area["cells"], sram_bits=area["sram_bits"],
               area_nand2=area["nand2"] if "nand2" in area else design_nand2(
                   Path(design["dir"]).parent.parent, design["key"]),
               design_seconds=design["seconds"], area_seconds=design["area_seconds"],
               tracks=design["params"]["tracks"])
    run_dir = Path(design["dir"]).parent.parent / "runs" / design["key"] / Path(result_file).stem
    marks: list[tuple[str, float]] = []
    t0 = time.perf_counter()
    target = 1e6 / fmax_mhz if fmax_mhz > 0 else None
    fp = FlowParams(place=PlaceParams(seed=seed),
                    pipeline=PipelineParams(target_period_ps=target))
    try:
        run_stages(RunParams(AppParams(app, image[0], image[1], unroll=unroll), design["dir"],
                             run_dir, fp), "sim" if simulate else "pipeline",
                   step=lambda m: marks.append((m, time.perf_counter())))
        end = time.perf_counter()
        status, error = "ok", ""
    except CgraError as exc:
        end = time.perf_counter()
        status, error = "failed", f"{type(exc).__name__}: {exc}"
    except Exception as exc:        # a bug: reported, not cached (a re-run retries)
        tb = traceback.format_exc(limit=3).replace("\n", " | ")
        row.update(status="failed", error=f"internal {type(exc).__name__}: {exc} ({tb})")
        return {**row, "cached": False, "transient": True}
    secs = {s: 0.0 for s in (*STAGES, "sim")}
    after = False                                     # past the pipeline: simulation steps
    for i, (m, t) in enumerate(marks):
        word = m.split()[0]
        after = after or word == "bitstream"
        # "pipeline failed ...: placing again" is placement time
        stage = "sim" if after else word if word in secs else "place"
        secs[stage] += (marks[i + 1][1] if i + 1 < len(marks) else end) - t
    row.update({f"{s}_s": round(v, 3) for s, v in secs.items()
                if s != "collateral" and (s != "sim" or simulate)})
    row["compile_s"] = round(end - t0, 3)
    row.update(status=status, error=error)
    if status == "ok":
        rep = json.loads((run_dir / "pnr_report.json").read_text())
        appdoc = json.loads((run_dir / "app.json").read_text())
        used = rep["resources"]["used"]
        regs = rep["registers"]
        ideal = appdoc.get("ideal") or {}
        lat = max(rep["extra_output_latency_cycles"].values(), default=0)
        first = int(ideal.get("first_output_cycle", 0)) + lat
        cycles = int(ideal.get("cycles") or 0) + lat       # the ideal stream counts from 0
        fmax = rep["timing"]["fmax_mhz"]
        row.update(pe_count=used.get("p", 0), mem_count=used.get("m", 0),
                   io_count=used.get("I", 0) + used.get("i", 0), reg_count=used.get("r", 0),
                   pipeline_registers=regs["balancing"] + regs["compute_pipelining"]
                   + regs["pe_input_balancing"],
                   wirelength=rep["wirelength_total"], fmax_mhz=fmax,
                   timing_model=rep["timing"].get("model", ""),
                   period_ps=rep["timing"]["period_ps"], latency_cycles=first, cycles=cycles,
                   runtime_us=round(cycles / fmax, 3) if fmax else None,
                   wirelength_segments=rep["wirelength_segments"])
        if simulate:
            sim = json.loads((run_dir / "run_report.json").read_text())
            row.update(sim_cycles=int(sim["cycles"]["stream"]))
    _write_json(Path(result_file), row)
    return {**row, "cached": False}


# ----------------------------------------------------------------------------- metrics
def energy_proxy(row: dict) -> int | None:
    """Energy proxy of a mapped point, in *switched element-cycles*: (PE tiles + MEM tiles
    used + routed track segments, all widths) x cycles, i.e. every used tile and every
    routed segment is assumed to switch once per cycle of the run. A proxy, not an energy:
    no activity factor, no per-element weight (a MEM tile, a PE tile and a 1-bit segment
    count 1 each), no IO tiles, pipeline registers, clock tree, leakage or SRAM accesses
    (docs/dse.md). ``None`` for a failed point."""
    if row.get("status") != "ok":
        return None
    try:
        return (int(row["pe_count"]) + int(row["mem_count"])
                + int(row["wirelength"])) * int(row["cycles"])
    except (KeyError, TypeError, ValueError):
        return None


def with_metrics(row: dict) -> dict:
    """``row`` plus the metrics derived from the cached ones (``energy_proxy``): derived
    when the rows are assembled, so results cached before a metric existed get it too."""
    return {**row, "energy_proxy": energy_proxy(row)}


# ----------------------------------------------------------------------------- driver
def _daemonic() -> bool:
    """Whether the calling (worker) process is daemonic (run on each worker)."""

    return bool(multiprocessing.current_process().daemon)


def _external_client(client_cls, address: str):
    """A client of the existing cluster at ``address`` whose workers can run the tasks.

    ``dask worker`` starts its worker processes daemonic by default, and a daemonic process
    may not start children, but :func:`garnet.build.generate` starts its CIRCT worker
    process: every design task would fail. Raises :class:`~cgra.errors.ConfigError` (exit 2)
    when the scheduler is unreachable, has no worker, or has a daemonic worker. A TCP
    address nobody listens on is refused at once (a plain connect), not after the client's
    10 s of retries."""
    from distributed.comm.addressing import parse_address, parse_host_port  # deferred: as distributed

    try:
        scheme, loc = parse_address(address)
        if scheme in ("tcp", "tls"):
            socket.create_connection(parse_host_port(loc), timeout=10).close()
    except ValueError as exc:
        raise ConfigError(f"--scheduler {address}: not a Dask scheduler address ({exc}); give "
                          f"tcp://<host>:<port>") from None
    except ConnectionRefusedError as exc:
        raise ConfigError(f"--scheduler {address}: cannot connect to a Dask scheduler there "
                          f"({exc.strerror}: nothing listens on that port); start one with "
                          f"`dask scheduler` or leave --scheduler out for a LocalCluster") from None
    except OSError:
        pass            # unresolved, filtered, slow: the client's own connect says why
    try:
        client = client_cls(address, timeout="10s")
    except (OSError, TimeoutError) as exc:
        raise ConfigError(f"--scheduler {address}: cannot connect to a Dask scheduler there "
                          f"({' '.join(str(exc).split())[:120]}); start one with `dask "
                          f"scheduler` or leave --scheduler out for a LocalCluster") from None
    workers = client.scheduler_info().get("workers", {})
    if not workers:
        client.close()
        raise ConfigError(f"--scheduler {address}: the scheduler has no workers; start them "
                          f"with `dask worker {address}`")
    daemonic = sorted(w for w, d in client.run(_daemonic).items() if d)
    if daemonic:
        client.close()
        raise ConfigError(f"--scheduler {address}: {len(daemonic)} of {len(workers)} workers "
                          f"(first {daemonic[0]}) run as daemonic processes, which cannot "
                          f"start the CIRCT process a design needs; start them with "
                          f"`dask worker --no-nanny`, or with dask config "
                          f"distributed.worker.daemon: false "
                          f"(DASK_DISTRIBUTED__WORKER__DAEMON=False)")
    return client


def _client(sweep: Sweep, scheduler: str | None, workers: int | None):
    import dask  # deferred: loads dask, cloudpickle, cython_runtime, 11 more only when called
    from distributed import Client, LocalCluster  # deferred: loads distributed, dask, click, 18 more only when called

    address = scheduler or sweep.scheduler
    if address:
        return _external_client(Client, address), None
    # generate() forks a CIRCT worker: worker processes must not be daemonic
    dask.config.set({"distributed.worker.daemon": False})
    n = workers or sweep.workers or os.cpu_count() or 1
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                           dashboard_address=None, silence_logs=40)
    return Client(cluster), cluster


class Executor:
    """Evaluates (design, app) points of a sweep: a point with a cached result file is read,
    the others are submitted to Dask (a design task per design, once per executor, and an
    app task per point depending on it). The Dask client (a LocalCluster unless a scheduler
    address is given) is started at the first submission, so a fully cached run starts
    none. Counters: ``designs`` / ``apps`` submitted, ``cached`` points read from the cache.
    Use as a context manager (closes the client and cluster)."""

    def __init__(self, sweep: Sweep, scheduler: str | None = None, workers: int | None = None):
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                    or not 1 <= workers <= 1024):
            # before any work: a LocalCluster of -1 workers waits forever for them
            raise ConfigError(f"--workers = {workers!r} is out of range: give an integer in "
                              f"[1, 1024] (LocalCluster worker processes; default the sweep "
                              f"file's, else one per core)")
        self.sweep, self.scheduler, self.workers = sweep, scheduler, workers
        self.client = self.cluster = None
        self._design_futs: dict[str, Any] = {}
        self.apps = 0
        self.cached = 0

    @property
    def designs(self) -> int:
        return len(self._design_futs)

    def result_file(self, pt: Point, a) -> str:
        s = self.sweep
        return str(result_path(s.cache, pt.key, a.label, flow_key(s, a.app, a.unroll)))

    def run(self, pairs: list[tuple[Point, Any]], progress: bool = False) -> dict[str, dict]:
        """Evaluate ``(point, app spec)`` pairs (duplicates evaluated once); returns
        ``{result file: row}`` (rows of :func:`app_task`, ``cached`` True when read from
        the cache)."""
        rows: dict[str, dict] = {}
        todo: dict[str, tuple[Point, Any]] = {}
        for pt, a in pairs:
            f = self.result_file(pt, a)
            if f in rows or f in todo:
                continue
            r = json.loads(Path(f).read_text()) if Path(f).is_file() else {}
            if r.get("schema") == RESULT_SCHEMA:
                if "area_cells" in r and r.get("area_nand2") is None:   # cached before it
                    r["area_nand2"] = design_nand2(self.sweep.cache, pt.key)
                rows[f] = {**r, "cached": True}
                self.cached += 1
            else:
                todo[f] = (pt, a)
        if not todo:
            return rows
        if self.client is None:
            self.client, self.cluster = _client(self.sweep, self.scheduler, self.workers)
        s, futs = self.sweep, {}
        for f, (pt, a) in todo.items():
            if pt.key not in self._design_futs:
                self._design_futs[pt.key] = self.client.submit(
                    design_task, pt.params.to_dict(), pt.key, str(s.cache), str(s.rules_dir),
                    key=f"design-{pt.key}", pure=False)
            fut = self.client.submit(app_task, self._design_futs[pt.key], a.app, a.unroll,
                                     s.image, s.seed, s.fmax_mhz, f, s.simulate,
                                     key=f"app-{pt.key}-{Path(f).stem}", pure=False)
            futs[fut] = f
        self.apps += len(futs)
        _gather(self.client, futs, rows, progress)
        return rows

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        self.client = self.cluster = None

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def point_row(pt: Point, a, r: dict) -> dict:
    """One CSV row: the design key, its grid values, the cached/computed result of app
    ``a`` and the derived metrics."""
    return with_metrics({"design": pt.key, **dict(pt.values),
                         **{k: v for k, v in r.items() if k not in ("schema", "design")},
                         "app": a.label})


def run_sweep(sweep: Sweep, scheduler: str | None = None, workers: int | None = None,
              progress: bool = True) -> dict:
    """Run every point of ``sweep`` not already in the cache; write ``results.csv`` and the
    plots to ``sweep.out``. Returns ``{rows, submitted: {designs, apps}, failed, csv,
    parquet, plots, seconds}`` (``results.parquet``: the CSV's rows, typed columns)."""
    t0 = time.perf_counter()
    order = [(pt, a) for pt in sweep.points for a in sweep.apps]
    with Executor(sweep, scheduler, workers) as ex:
        by_file = ex.run(order, progress)
    rows = [point_row(pt, a, by_file[ex.result_file(pt, a)]) for pt, a in order]
    sweep.out.mkdir(parents=True, exist_ok=True)
    csv_path = write_csv(rows, list(sweep.grid), sweep.out / "results.csv")
    parquet_path = write_parquet(rows, list(sweep.grid), sweep.out / "results.parquet")
    plots = plot_all(rows, list(sweep.grid), sweep.out)
    return {"rows": rows, "submitted": {"designs": ex.designs, "apps": ex.apps},
            "failed": sum(r.get("status") != "ok" for r in rows), "csv": csv_path,
            "parquet": parquet_path,
            "plots": plots, "seconds": round(time.perf_counter() - t0, 2)}


def _gather(client, futs: dict, rows_by_file: dict, progress: bool) -> None:
    from distributed import as_completed  # deferred: loads distributed, dask, click, 18 more only when called

    bar = None
    if progress:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn  # deferred: loads rich only when called
        bar = Progress(TextColumn("dse"), BarColumn(), TextColumn("{task.completed}/{task.total}"
                       " points"), TimeElapsedColumn(), transient=False)
        bar.start()
        tid = bar.add_task("points", total=len(futs))
    try:
        for fut in as_completed(list(futs)):
            f = futs[fut]
            try:
                rows_by_file[f] = fut.result()
            except Exception as exc:     # a worker died, ...: the point is a failure
                rows_by_file[f] = {"status": "failed", "error": f"task {type(exc).__name__}: "
                                   f"{exc}", "cached": False}
            if bar is not None:
                bar.advance(tid)
    finally:
        if bar is not None:
            bar.stop()


def result_columns(grid: list[str]) -> list[str]:
    """The columns of ``results.csv`` / ``results.parquet``: ``design``, the grid fields,
    then :data:`COLUMNS`."""
    return ["design"] + grid + [c for c in COLUMNS[1:] if c not in grid]


def write_csv(rows: list[dict], grid: list[str], path: Path) -> Path:
    """Write ``rows`` (one dict per (design, app) point) to the CSV ``path`` with the columns
    of :func:`result_columns` (a missing or ``None`` value is an empty cell). Returns
    ``path``."""
    cols = result_columns(grid)
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, cols, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({c: ("" if r.get(c) is None else r.get(c, "")) for c in cols})
    return path


def write_parquet(rows: list[dict], grid: list[str], path: Path) -> Path:
    """Write ``rows`` to the Parquet file ``path`` (pyarrow): the rows and columns of
    :func:`write_csv`, typed: :data:`COLUMN_TYPES` for the metric columns (64-bit ints,
    doubles, strings; a missing or ``None`` value is null, ``error`` is ``""`` when empty
    as in the CSV), a grid column's Arrow type inferred from its values (e.g. ``pe``
    string, ``tracks`` int64). Returns ``path``. Raises :class:`~cgra.errors.ConfigError`
    naming the column and the row when a value does not convert to its column's type."""
    import pyarrow as pa  # deferred: loads pyarrow, cloudpickle, cython_runtime only when called
    import pyarrow.parquet as pq  # deferred: loads pyarrow, cloudpickle, cython_runtime only when called


    cast = {"int64": int, "float64": float, "string": str}
    arrays, fields = [], []
    for col in result_columns(grid):
        vals = [r.get(col) for r in rows]
        if col == "error":
            vals = ["" if v is None else v for v in vals]
        if col in COLUMN_TYPES and col not in grid:
            kind = COLUMN_TYPES[col]
            conv = []
            for k, v in enumerate(vals):
                try:
                    conv.append(None if v is None or v == "" else cast[kind](v))
                except (TypeError, ValueError):
                    raise ConfigError(f"{path}: column {col!r} of row {k} (design "
                                      f"{rows[k].get('design')}, app {rows[k].get('app')}) "
                                      f"is {v!r}, not a {kind} value") from None
            arr = pa.array(conv, type=getattr(pa, kind)())
        else:
            arr = pa.array(vals)
        arrays.append(arr)
        fields.append(pa.field(col, arr.type))
    pq.write_table(pa.Table.from_arrays(arrays, schema=pa.schema(fields)), path)
    return path
