"""The ``cgra`` command line.

Sub-commands live next to the code they drive and are loaded lazily, so ``cgra --help``
stays fast and one broken package does not take the others down. Each entry of
:data:`COMMANDS` maps a command name to ``"module:attribute"`` of a click command.
A :class:`~cgra.errors.CgraError` is printed as one line ``error: <message>`` and exits 2;
any other exception (:class:`~cgra.errors.InternalError` included) is a bug of ours: its
traceback, then a "please report" line, exit 70.
"""
from __future__ import annotations

import importlib
import os
import signal
import sys
import traceback
import warnings

import click

from cgra import interrupt
from cgra.errors import EXIT_INTERNAL, EXIT_USER, CgraError
from cgra.interrupt import Terminated

#: command name -> "module:attribute" of a click.Command
COMMANDS: dict[str, str] = {
    "rules": "peak.rules.cli:rules",
    "rtl": "garnet.cli:rtl",
    "lint": "garnet.cli:lint",
    "glb": "garnet.glb.cli:glb",
    "map": "mapper.cli:map_cmd",
    "pack": "mapper.cli:pack_cmd",
    "place": "mapper.cli:place_cmd",
    "route": "mapper.cli:route_cmd",
    "pipeline": "mapper.cli:pipeline_cmd",
    "bitstream": "mapper.cli:bitstream_cmd",
    "sim": "mapper.cli:sim_cmd",
    "run": "mapper.cli:run_cmd",
    "verify": "mapper.cli:verify_cmd",
    "layer": "mapper.cli:layer_cmd",
    "dse": "dse.cli:dse",
    "dataflow": "mapper.dataflow.cli:dataflow_cmd",
}


#: True while :func:`main` (the console entry point) runs a command; False under a test's
#: ``CliRunner``, where the process must go on
_ENTRY_POINT = False


def end_process() -> None:
    """End the process now with exit status 0, skipping the interpreter's teardown, when
    the command runs from the console entry point (else do nothing). For a command that
    has written, closed and joined everything and holds a large heap: freeing the ~10^6
    routing-graph objects of a 64x32 ``cgra rtl`` one by one takes ~0.25 s (the RTL worker
    ends the same way)."""
    if _ENTRY_POINT:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


class LazyGroup(click.Group):
    """A click group whose sub-commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            raise click.ClickException(
                f"command '{cmd_name}' is not available: module {module_name} is missing ({exc})"
            ) from None
        return getattr(module, attr)


@click.group(cls=LazyGroup)
def cli() -> None:
    """Agile CGRA generator: generate RTL and compiler collateral, map applications."""


def _interrupted(exc: BaseException) -> int:
    """Exit status of an interrupt: 143 (128 + SIGTERM) for :class:`Terminated`, else 130
    (128 + SIGINT, Ctrl-C)."""
    while exc is not None:
        if isinstance(exc, Terminated):
            return 128 + signal.SIGTERM
        exc = exc.__cause__ or exc.__context__
    return 128 + signal.SIGINT


def report_bug(exc: BaseException) -> None:
    """Print ``exc``'s traceback and the "please report" line to stderr (a bug of ours, not
    bad input: :mod:`cgra.errors`)."""
    traceback.print_exception(exc, file=sys.stderr)
    argv = " ".join(["cgra", *sys.argv[1:]])
    click.echo(f"internal error ({type(exc).__name__}): this is a bug in cgra-gen, not in "
               f"your input; please report it with the traceback above and the command "
               f"`{argv}`", err=True)


def main() -> None:
    """Console entry point: run the CLI, turning project errors into one-line messages.

    Ctrl-C and SIGTERM unwind the command normally (cleanup code runs: temporary directories
    are removed, child process groups killed), print ``aborted`` and exit with 130 (Ctrl-C)
    or 143 (SIGTERM)."""
    # ast_tools (a magma dependency) warns that its generated tables were made for
    # Python 3.9; they work on 3.11 and the warning only clutters every command's output.
    warnings.filterwarnings("ignore", message=r".*generated for \(3, 9\)")
    warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"magma\..*")
    global _ENTRY_POINT
    interrupt.reset()
    previous = signal.signal(signal.SIGTERM, interrupt.raise_terminated)
    previous_int = signal.signal(signal.SIGINT, interrupt.raise_interrupted)
    _ENTRY_POINT = True
    try:
        cli.main(standalone_mode=False)
        interrupt.raise_if_terminated()
    except CgraError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_USER)
    except (click.exceptions.Abort, KeyboardInterrupt) as exc:
        # click turns KeyboardInterrupt (and so Terminated) into Abort, chained
        click.echo("aborted", err=True)
        sys.exit(_interrupted(exc))
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except Exception as exc:  # noqa: BLE001 - a bug of ours: shown whole, then exit 70
        report_bug(exc)
        sys.exit(EXIT_INTERNAL)
    finally:
        _ENTRY_POINT = False
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
