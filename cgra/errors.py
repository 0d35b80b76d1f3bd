"""The project's exception hierarchy.

Every error raised on bad input is a :class:`CgraError` subclass whose message names the
object at fault, where it is (spec file and line, tile x/y, net id, config field) and what
would fix it. The command line prints the message on one line and exits with status 2;
it never shows a traceback for a ``CgraError``.

A bug in this project's own code is not bad input: it is :class:`InternalError` (or any other
exception), deliberately *outside* the ``CgraError`` tree, so that no ``except CgraError``
turns it into a user error. The command line prints its traceback and a "please report" line
and exits with status 70 (``EX_SOFTWARE`` of BSD's sysexits.h); a DSE sweep records it as a
transient failure and never caches it.
"""
from __future__ import annotations


class CgraError(Exception):
    """Base class of every error this project raises on bad input or an infeasible task."""


class SpecError(CgraError):
    """A hardware spec (PEak PE, Lake memory, Canal interconnect) is malformed.

    ``file`` and ``line`` locate the offending construct in the user's spec when known.
    """

    def __init__(self, message: str, file: str | None = None, line: int | None = None,
                 construct: str | None = None):
        self.file = file
        self.line = line
        self.construct = construct
        where = ""
        if file is not None:
            where = f"{file}:{line}: " if line is not None else f"{file}: "
        super().__init__(f"{where}{message}")


class ConfigError(CgraError):
    """A configuration value (parameter file, port program, config register) is invalid."""


class RuleError(CgraError):
    """Rewrite-rule synthesis, loading or verification failed."""


class MappingError(CgraError):
    """An application cannot be mapped onto the PEs / MEMs described by the collateral."""


class PlacementError(CgraError):
    """Placement is infeasible (for example: more instances of a tile type than sites)."""


class RoutingError(CgraError):
    """A route is illegal or the router could not resolve congestion."""


class SimulationError(CgraError):
    """A simulation run failed or its output differs from the golden model."""


class ProgramError(CgraError):
    """A dataflow program (:mod:`mapper.dataflow.program`) is malformed or cannot run: an
    access outside a memory, a temporary read outside its block, a FIFO read when empty."""


class CollateralError(CgraError):
    """A collateral directory is missing, stale (spec hash mismatch) or malformed."""


class OutputError(CgraError):
    """An output path cannot be written: it is a file where a directory is needed, lies
    under a file, or is not writable (:mod:`cgra.outputs`; raised before any work)."""


class LockError(OutputError):
    """An output directory is being written by another live process (:mod:`cgra.lock`).

    ``directory`` is the directory, ``pid`` and ``command`` the holder's (``None`` when the
    holder had not recorded itself yet)."""

    def __init__(self, message: str, directory: str | None = None, pid: int | None = None,
                 command: str | None = None):
        self.directory = directory
        self.pid = pid
        self.command = command
        super().__init__(message)


#: exit status of a bug in this project's code (BSD sysexits.h ``EX_SOFTWARE``)
EXIT_INTERNAL = 70

#: exit status of bad input (a :class:`CgraError`)
EXIT_USER = 2


class InternalError(Exception):
    """A compiler pass broke an invariant it must keep (a bug, not bad input): the message
    names the pass and the violation, so the failure is caught where it happens and never
    surfaces later as a bitstream or simulation error.

    Not a :class:`CgraError` (module docstring): the CLI shows its traceback and exits
    :data:`EXIT_INTERNAL`."""
