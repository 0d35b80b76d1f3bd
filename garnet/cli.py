"""Click commands ``cgra rtl`` and ``cgra lint`` (loaded lazily by :mod:`cgra.cli`)."""
from __future__ import annotations

import sys

import click
import time

from cgra.outputs import check_output_dir, claim_output_dir
from garnet.glb.params import load_table


@click.command("rtl")
@click.option("--config", "config", required=True, type=click.Path(dir_okay=False),
              help="TOML parameter file (e.g. configs/small.toml)")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False),
              help="output design directory (e.g. build/small)")
@click.option("--rules-dir", default=None, type=click.Path(file_okay=False),
              help="shared rule-table directory PEak caches in (default build/rules)")
@click.option("--no-rules", is_flag=True, help="skip the rule table (RTL-only iteration)")
@click.option("--jobs", default=None, type=click.IntRange(min=1),
              help="processes for rule synthesis  [default: every core]")
@click.option("--cache-dir", default=None, type=click.Path(file_okay=False),
              help="build cache (interconnect graphs, Verilog per module)  "
                   "[default: OUT/.cache]")
@click.option("--timings", is_flag=True,
              help="print the wall time of every stage (the RTL worker's run beside the "
                   "stages after 'Verilog (CIRCT)')")
def rtl(config: str, out: str, rules_dir: str | None, no_rules: bool, jobs: int | None,
        cache_dir: str | None, timings: bool) -> None:
    """Generate the array RTL and the compiler collateral into OUT, incrementally: what did
    not change since the design in OUT was generated is reused (summary line)."""

    from rich.console import Console  # deferred: loads rich only when called
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn  # deferred: loads rich only when called

    from cgra.cli import end_process  # deferred: loads cgra, cgra.cli, cgra.errors, 1 more only when called
    from cgra.interrupt import raise_if_terminated  # deferred: loads cgra, cgra.interrupt only when called
    from garnet.build import DEFAULT_RULES_DIR, generate  # deferred: loads networkx, numpy, psutil only when called
    from garnet.params import load_toml  # deferred: loads networkx, numpy only when called

    t0 = time.perf_counter()
    params = load_toml(config)          # validated before any generation
    glb = load_table(config)            # the [glb] table: DESIGN/glb/ (garnet.glb)
    if not no_rules:                    # the shared rule tables are written there
        check_output_dir(rules_dir if rules_dir is not None else DEFAULT_RULES_DIR,
                         "--rules-dir")
    if cache_dir is not None:
        check_output_dir(cache_dir, "--cache-dir")
    console = Console(stderr=True)
    # the design directory is installed by renaming a finished temporary sibling over it
    # (garnet.build): only its parent is created here; the lock is held until it is in place
    with claim_output_dir(out, "--out", create=False), \
            Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                     console=console, transient=True) as progress:
        task = progress.add_task(f"{params.name}: start", total=None)

        def step(msg: str) -> None:
            raise_if_terminated()
            progress.update(task, description=f"{params.name}: {msg}")
            console.log(f"{params.name}: {msg}")

        result = generate(params, out, rules=not no_rules, rules_dir=rules_dir,
                          jobs=jobs, step=step, config_file=config, cache_dir=cache_dir,
                          glb=glb)
    result.seconds = time.perf_counter() - t0       # the whole command, TOML included
    if timings:
        for name, seconds in result.stages:
            click.echo(f"{seconds:8.2f} s  {name}")
        click.echo(f"{result.seconds:8.2f} s  total (cgra rtl, wall)")
    click.echo(result.summary())
    if glb is not None:
        click.echo(f"GLB: {glb.tiles} tiles x {glb.banks} banks x {glb.bank_words} x "
                   f"{glb.word_width} bits -> {out}/glb/glb.v, glb.json (`cgra run` "
                   f"on this design goes through the GLB)")
    raise_if_terminated()
    end_process()           # from the console: no teardown of the graphs (cgra.cli)


@click.command("lint")
@click.argument("design", type=click.Path(file_okay=False))
def lint(design: str) -> None:
    """Run `verilator --lint-only -Wall` on the RTL of DESIGN (exit 1 on lint errors)."""
    from garnet.lint import lint as run_lint  # deferred: loads cgra, cgra.config, cgra.core, 3 more only when called

    rep = run_lint(design)
    for e in rep.errors[:20]:
        click.echo(e, err=True)
    click.echo(rep.summary())
    if rep.errors:
        sys.exit(1)
