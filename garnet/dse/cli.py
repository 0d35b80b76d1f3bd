"""``cgra dse SWEEP.toml``: a design-space exploration sweep (docs/dse.md)."""
from __future__ import annotations

import click


@click.command("dse")
@click.argument("sweep_file", type=click.Path(dir_okay=False))
@click.option("--scheduler", default=None,
              help="address of a Dask scheduler (tcp://host:port); default: a LocalCluster")
@click.option("--workers", type=int, default=None,
              help="LocalCluster worker processes (default: the sweep file's, else one per core)")
@click.option("--cache", "cache", default=None, type=click.Path(file_okay=False),
              help="shared cache directory (overrides the sweep file's)")
@click.option("--out", "out", default=None, type=click.Path(file_okay=False),
              help="where results.csv and the plots go (default <cache>/results/<sweep>)")
@click.option("--no-progress", is_flag=True, help="no progress bar")
def dse(sweep_file: str, scheduler: str | None, workers: int | None, cache: str | None,
        out: str | None, no_progress: bool) -> None:
    """Sweep the designs x apps of SWEEP_FILE (TOML) on Dask; write results.csv and plots."""
    from garnet.dse.run import run_sweep
    from garnet.dse.sweep import load_sweep

    sweep = load_sweep(sweep_file, cache=cache, out=out)
    res = run_sweep(sweep, scheduler=scheduler, workers=workers, progress=not no_progress)
    n = len(res["rows"])
    click.echo(f"{sweep.name}: {len(sweep.points)} designs x {len(sweep.apps)} apps = {n} "
               f"points; computed {res['submitted']['apps']} points "
               f"({res['submitted']['designs']} designs), {n - res['submitted']['apps']} from "
               f"the cache; {res['failed']} failed; {res['csv']}; "
               f"plots: {', '.join(p.name for p in res['plots'])}; {res['seconds']} s")
