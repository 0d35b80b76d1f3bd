"""``cgra dse SWEEP.toml``: a design-space exploration sweep, or a search when the file has
a ``[search]`` table (docs/dse.md)."""
from __future__ import annotations

import click

from cgra.outputs import check_output_dir, claim_output_dir


@click.command("dse")
@click.argument("sweep_file", type=click.Path(dir_okay=False))
@click.option("--scheduler", default=None,
              help="address of a Dask scheduler (tcp://host:port); default: a LocalCluster")
@click.option("--workers", type=int, default=None,
              help="LocalCluster worker processes (default: the sweep file's, else one per core)")
@click.option("--cache", "cache", default=None, type=click.Path(file_okay=False),
              help="shared cache directory (overrides the sweep file's)")
@click.option("--rules", "rules", default=None, type=click.Path(file_okay=False),
              help="rule-table cache (overrides the sweep file's; default <cache>/rules)")
@click.option("--out", "out", default=None, type=click.Path(file_okay=False),
              help="where results.csv/.parquet and the plots go (default "
              "<cache>/results/<sweep>)")
@click.option("--no-progress", is_flag=True, help="no progress bar")
def dse(sweep_file: str, scheduler: str | None, workers: int | None, cache: str | None,
        rules: str | None, out: str | None, no_progress: bool) -> None:
    """Sweep the designs x apps of SWEEP_FILE (TOML) on Dask; write results.csv,
    results.parquet and plots. With a [search] table: an NSGA-II search over the grid's
    values instead (trials.csv, pareto.csv)."""
    from dse.sweep import load_sweep  # deferred: loads networkx, numpy only when called

    sweep = load_sweep(sweep_file, cache=cache, out=out, rules=rules)
    # the cache is shared by sweeps and written by the Dask workers (designs, runs, results):
    # checked, not locked; the output directory is this command's alone. The workers write
    # only below the cache and take no lock, so none waits for a lock held here.
    check_output_dir(sweep.cache, "--cache")
    check_output_dir(sweep.rules_dir, "--rules")
    with claim_output_dir(sweep.out, "--out"):
        if sweep.search is not None:
            _search(sweep, scheduler, workers, not no_progress)
            return
        from dse.run import run_sweep  # deferred: loads networkx, numpy only when called

        res = run_sweep(sweep, scheduler=scheduler, workers=workers, progress=not no_progress)
    n = len(res["rows"])
    click.echo(f"{sweep.name}: {len(sweep.points)} designs x {len(sweep.apps)} apps = {n} "
               f"points; computed {res['submitted']['apps']} points "
               f"({res['submitted']['designs']} designs), {n - res['submitted']['apps']} from "
               f"the cache; {res['failed']} failed; {res['csv']}; "
               f"plots: {', '.join(p.name for p in res['plots'])}; {res['seconds']} s")


def _search(sweep, scheduler: str | None, workers: int | None, progress: bool) -> None:
    try:
        import optuna  # deferred: loads optuna, numpy, colorlog, 2 more only when called
    except ImportError:
        from cgra.errors import ConfigError  # deferred: loads cgra, cgra.errors only when called
        raise ConfigError(f"{sweep.path}: table [search] needs Optuna, which is not "
                          "installed: pip install 'optuna>=4', or remove [search] to run "
                          "the grid") from None

    from dse.search import run_search  # deferred: loads networkx, numpy only when called

    # this process's choice: the progress bar and the summary line replace Optuna's
    # per-trial INFO log lines
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    s = sweep.search
    res = run_search(sweep, scheduler=scheduler, workers=workers, progress=progress)
    designs = len({t["design"] for t in res["trials"]})
    front = len({t["design"] for t in res["front"]})
    click.echo(f"{sweep.name}: {s.method} search (seed {s.seed}, population {s.population}) "
               f"over {len(sweep.points)} designs x {len(sweep.apps)} apps: "
               f"{len(res['trials'])} trials ({designs} distinct designs), {res['failed']} "
               f"failed, Pareto front {len(res['front'])} trials ({front} designs); computed "
               f"{res['submitted']['apps']} points ({res['submitted']['designs']} designs), "
               f"{res['cached']} from the cache; {res['csv']}, {res['pareto_csv'].name}; "
               f"plots: {', '.join(p.name for p in res['plots'])}; {res['seconds']} s")
