"""Multi-objective search over a sweep's space with Optuna NSGA-II (docs/dse.md).

The space is the sweep's ``[grid]``: every field a categorical choice among its values (the
values themselves when they are all distinct scalars, else their indices). A trial is one
design evaluated on every app of the sweep; it minimises

* ``runtime_us`` = the sum over the sweep's apps of cycles / Fmax (microseconds: the time to
  run each app once, one after the other), and
* ``area_cells`` = the design's area proxy (yosys cells, :mod:`dse.area`).

A trial whose design fails on any app (a recorded ``MappingError``, ``RoutingError``, ...,
or an unexpected task error) is told to Optuna as ``FAIL``, recorded with its errors, and
the search goes on (NSGA-II selects among completed trials only).

Ask-and-tell (Optuna's ``Study.ask`` / ``Study.tell``): ``population`` trials are asked, their
(design, app) points are evaluated together on the Dask client through
:class:`dse.run.Executor` (the grid's tasks and cache: a point already computed by a
grid run or a previous search is read, not recomputed; a design suggested twice is computed
once), then told in trial order. Same sweep + seed = same trials (the told values are
deterministic: the placement is seeded).

Source: K. Deb et al., "A fast and elitist multiobjective genetic algorithm: NSGA-II",
IEEE TEC 6(2), 2002, as implemented by ``optuna.samplers.NSGAIISampler``.
"""
from __future__ import annotations

import csv
import itertools
import time
from pathlib import Path
from typing import Any

from dse.run import Executor, point_row, write_csv, write_parquet
from dse.sweep import Point, Sweep
from dse.plots import plot_all, plot_search

#: the objectives, both minimised: (trial CSV column, unit)
OBJECTIVES = (("runtime_us", "us, summed over the apps"), ("area_cells", "yosys cells"))


def dominates(a: dict, b: dict, keys: tuple[str, ...] = ("runtime_us", "area_cells")) -> bool:
    """Whether trial ``a`` dominates ``b`` (all ``keys`` minimised): no worse in every key,
    strictly better in one."""
    return (all(a[k] <= b[k] for k in keys)
            and any(a[k] < b[k] for k in keys))


def pareto_front(trials: list[dict], keys: tuple[str, ...] = ("runtime_us", "area_cells")
                 ) -> list[dict]:
    """The completed trials (``status == "ok"``) no other completed trial dominates, in
    trial order. Two trials of the same design (equal objectives) are both on the front."""
    ok = [t for t in trials if t["status"] == "ok"]
    return [t for t in ok if not any(dominates(o, t, keys) for o in ok if o is not t)]


def _choices(vals: list[Any]) -> list[Any]:
    scalar = all(v is None or isinstance(v, (bool, int, float, str)) for v in vals)
    distinct = len({(type(v), v) for v in vals} if scalar else ()) == len(vals)
    return list(vals) if scalar and distinct else list(range(len(vals)))


def run_search(sweep: Sweep, scheduler: str | None = None, workers: int | None = None,
               progress: bool = True) -> dict:
    """Run the ``[search]`` of ``sweep`` (module docstring); write to ``sweep.out``:
    ``trials.csv`` (one row per trial: number, status, error, design key, grid values, the
    objectives, ``energy_proxy`` summed over the apps, per-app runtimes, ``pareto``),
    ``pareto.csv`` (the front's rows), ``results.csv`` (one row per evaluated (design, app),
    the grid's columns), ``results.parquet`` (the same rows, typed columns,
    :func:`dse.run.write_parquet`) and the plots (:func:`dse.plots.plot_all`
    on the evaluated designs plus ``search_pareto.png``). Returns ``{trials, front,
    submitted: {designs, apps}, cached, failed, csv, pareto_csv, results_csv,
    results_parquet, plots, seconds}``.

    Raises ``ValueError`` if the sweep has no ``[search]``, ``ImportError`` if Optuna is
    not installed."""
    import optuna  # deferred: loads optuna, numpy, colorlog, 2 more only when called
    from optuna.trial import TrialState  # deferred: loads optuna, numpy, colorlog, 2 more only when called

    if sweep.search is None:
        raise ValueError(f"{sweep.path}: no [search] table; run_sweep runs the grid")
    t0 = time.perf_counter()
    s = sweep.search
    fields = list(sweep.grid)
    choices = {k: _choices(v) for k, v in sweep.grid.items()}
    # sweep.points is the grid's product in order: one Point per tuple of value indices
    by_index: dict[tuple[int, ...], Point] = dict(zip(
        itertools.product(*(range(len(sweep.grid[k])) for k in fields)), sweep.points,
        strict=True))
    sampler = optuna.samplers.NSGAIISampler(population_size=s.population, seed=s.seed)
    study = optuna.create_study(directions=["minimize", "minimize"], sampler=sampler,
                                study_name=sweep.name)
    labels = [a.label for a in sweep.apps]
    trials: list[dict] = []
    results: dict[str, dict] = {}          # result file -> CSV row, first evaluation order
    bar = None
    if progress:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn  # deferred: loads rich only when called
        bar = Progress(TextColumn(f"dse {s.method}"), BarColumn(),
                       TextColumn("{task.completed}/{task.total} trials"), TimeElapsedColumn())
        bar.start()
        tid = bar.add_task("trials", total=s.trials)
    try:
        with Executor(sweep, scheduler, workers) as ex:
            while len(trials) < s.trials:
                batch = [study.ask() for _ in range(min(s.population, s.trials - len(trials)))]
                points = [by_index[tuple(_index(sweep.grid[k], tr.suggest_categorical(
                    k, choices[k]), choices[k]) for k in fields)] for tr in batch]
                by_file = ex.run([(pt, a) for pt in points for a in sweep.apps])
                for tr, pt in zip(batch, points, strict=True):
                    rows = []
                    for a in sweep.apps:
                        f = ex.result_file(pt, a)
                        row = point_row(pt, a, by_file[f])
                        results.setdefault(f, row)
                        rows.append(row)
                    trials.append(_tell(study, tr, pt, rows, labels, TrialState))
                if bar is not None:
                    bar.advance(tid, len(batch))
    finally:
        if bar is not None:
            bar.stop()
    front = pareto_front(trials)
    on_front = {t["trial"] for t in front}
    for t in trials:
        t["pareto"] = int(t["trial"] in on_front)
    out = sweep.out
    out.mkdir(parents=True, exist_ok=True)
    cols = (["trial", "status", "error", "design"] + fields
            + ["runtime_us", "area_cells", "energy_proxy"]
            + [f"runtime_us:{lb}" for lb in labels] + ["pareto"])
    trials_csv = _write(out / "trials.csv", cols, trials)
    pareto_csv = _write(out / "pareto.csv", cols, front)
    rows = list(results.values())
    results_csv = write_csv(rows, fields, out / "results.csv")
    results_parquet = write_parquet(rows, fields, out / "results.parquet")
    plots = plot_all(rows, fields, out) + [plot_search(trials, fields, out)]
    return {"trials": trials, "front": front,
            "submitted": {"designs": ex.designs, "apps": ex.apps}, "cached": ex.cached,
            "failed": sum(t["status"] != "ok" for t in trials), "csv": trials_csv,
            "pareto_csv": pareto_csv, "results_csv": results_csv,
            "results_parquet": results_parquet, "plots": plots,
            "seconds": round(time.perf_counter() - t0, 2)}


def _index(vals: list[Any], v: Any, choices: list[Any]) -> int:
    """Index in ``vals`` of the suggested choice ``v``: ``v`` itself when the choices are
    indices, else the first value equal to ``v`` of the same type (``1`` is not ``True``)."""
    if choices != list(vals):
        return int(v)
    return next(i for i, x in enumerate(vals) if x == v and type(x) is type(v))


def _tell(study, tr, pt: Point, rows: list[dict], labels: list[str], TrialState) -> dict:
    """Tell Optuna the trial's objectives (or FAIL) and return its trials.csv row."""
    rec: dict[str, Any] = {"trial": tr.number, "design": pt.key, **dict(pt.values)}
    bad = [r for r in rows if r.get("status") != "ok" or not r.get("runtime_us")]
    tr.set_user_attr("design", pt.key)
    if bad:
        err = "; ".join(f"{r['app']}: {r.get('error') or 'no Fmax (runtime undefined)'}"
                        for r in bad)
        tr.set_user_attr("error", err)
        study.tell(tr, state=TrialState.FAIL)
        return {**rec, "status": "failed", "error": err}
    runtime = round(sum(float(r["runtime_us"]) for r in rows), 3)
    area = int(rows[0]["area_cells"])
    study.tell(tr, [runtime, area])
    return {**rec, "status": "ok", "error": "", "runtime_us": runtime, "area_cells": area,
            "energy_proxy": sum(r["energy_proxy"] for r in rows),
            **{f"runtime_us:{lb}": r["runtime_us"] for lb, r in zip(labels, rows,
                                                                  strict=True)}}


def _write(path: Path, cols: list[str], rows: list[dict]) -> Path:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, cols, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({c: ("" if r.get(c) is None else r.get(c, "")) for c in cols})
    return path
