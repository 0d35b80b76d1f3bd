"""``cgra rules``: synthesise (or reuse) the rewrite-rule table of a PE spec.

    cgra rules --pe peak.examples.cgra_pe:PE --out build/rules [--jobs 2]
               [--check-against my_pe.py:FastPE] [--method auto|cegis|direct]
               [--timeout 30] [--ties auto|bits|none] [--only coreir.add ...] [--force]

``--out`` is the shared rules directory: the table goes to its cache entry
``<out>/cache/<spec_hash[:16]>-<variant>/`` (one per spec hash, IR library, width and
policy) and is copied to the view ``<out>/<PE>.rules.json`` + ``<out>/<PE>/``
(:mod:`peak.rules.format`; what :mod:`peak.rules.table` reuses is documented there).
``--only T`` (repeatable) updates those entries in place and keeps every other one;
``--force`` re-synthesises, ignoring the cache.

Shows a progress bar over the targets and prints a summary table (target, status, action,
time). With ``--check-against`` every rule of the table is proved on the second PE; each
failure prints its counterexample (inputs, expected, got) and the command ends with an
error naming the failing rules. Ctrl-C / SIGTERM stop the worker processes at once; the
rules finished so far stay in the cache (the ``cgra`` entry point prints ``aborted`` and
exits 130 / 143).

A malformed spec (``--pe`` or ``--check-against``) is a :class:`~cgra.errors.SpecError`
reported before anything is written (``file:line: ...``, exit status 2); ``--out`` is not
created, and if a spec error surfaces later the directory is removed when this run created
it. An ``--out`` that is a file, lies below a file or is not writable is an
:class:`~cgra.errors.OutputError` (exit status 2), also before anything is done.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.markup import escape
from rich.table import Table

from cgra.errors import RuleError, SpecError
from cgra.outputs import check_output_dir
from peak.load import load_spec
from peak.normalize import normal_form
from peak.rules.synth import BindingPolicy
from peak.rules.table import Entry, RuleTable, build_table, check_against


@click.command(name="rules")
@click.option("--pe", "pe_ref", required=True,
              help="PE spec: module:Class, file.py:Class or module:factory(args).")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False),
              help="Shared rules directory: cache entries in cache/, the view "
                   "<PE>.rules.json + <PE>/ of this PE.")
@click.option("--jobs", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Worker processes for synthesis.")
@click.option("--check-against", "check_ref", default=None,
              help="Second PE spec with the same ISA: prove every rule on it.")
@click.option("--method", default="auto", show_default=True,
              type=click.Choice(["auto", "cegis", "direct"]),
              help="Solver of the ∃∀ query (auto = CEGIS, direct query on a timeout).")
@click.option("--timeout", "timeout_s", default=30.0, show_default=True, type=float,
              help="z3 timeout per query, seconds.")
@click.option("--ties", default="auto", show_default=True,
              type=click.Choice(["auto", "bits", "none"]),
              help="Which unbound PE inputs may be tied to constants.")
@click.option("--only", multiple=True,
              help="Update only these targets (repeatable); the other entries are kept.")
@click.option("--force", is_flag=True,
              help="Re-synthesise every target (of --only), ignoring the cache.")
def rules(pe_ref: str, out: str, jobs: int, check_ref: str | None, method: str,
          timeout_s: float, ties: str, only: tuple[str, ...], force: bool) -> None:
    """Synthesise the rewrite rules of a PE (cached by spec hash)."""
    console = Console(stderr=False)
    # the shared rules directory: checked here, not locked (its cache entries have their
    # own locks, and a second `cgra rules` waits for the entry it needs: peak.rules.table)
    check_output_dir(out, "--out")
    spec = load_spec(pe_ref)
    other = load_spec(check_ref) if check_ref else None
    normal_form(spec)                   # SpecError (file:line) before anything is written
    if other is not None:
        normal_form(other)
    timeout_ms = int(timeout_s * 1000)
    out_dir = Path(out)
    created = not out_dir.exists()
    try:
        table = _build(console, spec, out_dir, jobs, BindingPolicy(ties), method, timeout_ms,
                       list(only) if only else None, force)
    except SpecError:
        if created and out_dir.exists():
            shutil.rmtree(out_dir)
        raise
    summary = Table(title=f"rewrite rules of {table.pe} ({table.width} bits)")
    for col in ("target", "status", "action", "cost", "time (s)"):
        summary.add_column(col)
    for e in table.entries:
        style = {"found": "green", "none": "yellow", "timeout": "red"}[e.status]
        summary.add_row(escape(e.target), f"[{style}]{e.status}[/]", e.action,
                        str(e.rule.cost) if e.rule else "-", f"{e.seconds:.2f}")
    console.print(summary)
    n_found = sum(e.status == "found" for e in table.entries)
    n_to = sum(e.status == "timeout" for e in table.entries)
    actions: dict[str, int] = {}
    for e in table.entries:
        actions[e.action] = actions.get(e.action, 0) + 1
    done = ", ".join(f"{n} {a}" for a, n in sorted(actions.items()))
    console.print(f"{table.pe}: {n_found} rules, {len(table.entries) - n_found - n_to} "
                  f"without a rule, {n_to} timed out ({done}), {table.seconds:.1f} s -> "
                  f"{table.view} (cache {table.path.parent if table.path else out})",
                  soft_wrap=True)
    if other is not None:
        results = check_against(table, other, timeout_ms)
        bad = [r for r in results if not r.ok]
        for r in results:
            if r.ok:
                console.print(f"[green]proved[/] {r.target} on {other.__name__}")
            else:
                console.print(f"[red]FAILS[/] {r.target} on {other.__name__}: "
                              f"{r.result.reason}")
        if bad:
            raise RuleError(f"{len(bad)} of {len(results)} rules of {table.pe} do not hold on "
                            f"{other.__name__}: {', '.join(r.target for r in bad)}")
        console.print(f"all {len(results)} rules of {table.pe} hold on {other.__name__}")


def _build(console: Console, spec: type, out: Path, jobs: int, policy: BindingPolicy,
           method: str, timeout_ms: int, only: list[str] | None, force: bool) -> RuleTable:
    with Progress(TextColumn("[bold]rules[/] {task.description:<28}"), BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), console=console,
                  transient=False) as bar:
        task = bar.add_task(spec.__name__, total=None)

        def progress(e: Entry, done: int, total: int) -> None:
            bar.update(task, completed=done, total=total, description=escape(e.target))

        def waiting(directory: Path) -> None:
            bar.console.print(f"waiting for {directory} (another `cgra rules` is writing it)")

        table = build_table(spec, out, jobs=jobs, policy=policy, method=method,
                            timeout_ms=timeout_ms, only=only, progress=progress, force=force,
                            on_wait=waiting)
        bar.update(task, description=f"{spec.__name__} done")
    return table
