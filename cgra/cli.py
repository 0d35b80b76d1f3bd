"""The ``cgra`` command line.

Sub-commands live next to the code they drive and are loaded lazily, so ``cgra --help``
stays fast and one broken package does not take the others down. Each entry of
:data:`COMMANDS` maps a command name to ``"module:attribute"`` of a click command.
A :class:`~cgra.errors.CgraError` is printed as one line ``error: <message>`` and exits 2.
"""
from __future__ import annotations

import importlib
import sys
import warnings

import click

from cgra.errors import CgraError

#: command name -> "module:attribute" of a click.Command
COMMANDS: dict[str, str] = {
    "rules": "peak.rules.cli:rules",
    "rtl": "garnet.cli:rtl",
    "lint": "garnet.cli:lint",
    "map": "mapper.cli:map_cmd",
    "run": "mapper.run:run_cmd",
}


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


def main() -> None:
    """Console entry point: run the CLI, turning project errors into one-line messages."""
    # ast_tools (a magma dependency) warns that its generated tables were made for
    # Python 3.9; they work on 3.11 and the warning only clutters every command's output.
    warnings.filterwarnings("ignore", message=r".*generated for \(3, 9\)")
    warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"magma\..*")
    try:
        cli.main(standalone_mode=False)
    except CgraError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
