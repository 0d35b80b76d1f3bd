"""SIGTERM as an exception, for the ``cgra`` commands (:func:`cgra.cli.main` installs
:func:`raise_terminated` as the handler).

Python's default SIGTERM action ends the process without running ``finally`` / ``except``
blocks, which would leave temporary build directories and compiler processes behind; the
handler raises :class:`Terminated` in the main thread instead, so the cleanup code runs.

That exception is lost when the signal arrives inside code whose exceptions Python ignores:
an ``os.register_at_fork`` hook (logging's ``_releaseLock`` right after ``os.fork``, seen in
CI when ``cgra rtl`` forked its Verilog worker: the command then ran to the end and exited 0)
or a finalizer. The handler therefore also sets a flag, and :func:`raise_if_terminated`,
called by every command's progress step before each stage, raises it again.
"""
from __future__ import annotations

import signal

_terminated = False


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when ``cgra`` receives SIGTERM."""


def raise_terminated(signum, frame) -> None:
    """The SIGTERM handler: remember it, and raise :class:`Terminated`. A second SIGTERM
    during the cleanup ends the process at once (the default action)."""
    global _terminated
    _terminated = True
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise Terminated()


def raise_if_terminated() -> None:
    """Raise :class:`Terminated` when SIGTERM arrived during this command (its first raise
    may have been swallowed, module docstring)."""
    if _terminated:
        raise Terminated()


def reset() -> None:
    """Forget an earlier SIGTERM (a new command starts)."""
    global _terminated
    _terminated = False


__all__ = ["Terminated", "raise_if_terminated", "raise_terminated", "reset"]
