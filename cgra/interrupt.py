"""SIGTERM as an exception, for the ``cgra`` commands (:func:`cgra.cli.main` installs
:func:`raise_terminated` as the handler).

Python's default SIGTERM action ends the process without running ``finally`` / ``except``
blocks, which would leave temporary build directories and compiler processes behind; the
handler raises :class:`Terminated` in the main thread instead, so the cleanup code runs.

That exception is lost when the signal arrives inside code whose exceptions Python ignores:
an ``os.register_at_fork`` hook (logging's ``_releaseLock`` right after ``os.fork``, seen in
CI when ``cgra rtl`` forked its Verilog worker: the command then ran to the end and exited 0)
or a finalizer. The handler therefore also sets a flag, and :func:`raise_if_terminated`,
called by every command's progress step before each stage, raises it again. Ctrl-C
(SIGINT) gets the same treatment (:func:`raise_interrupted`): its ``KeyboardInterrupt``,
raised inside a weakref callback, was seen printed as "Exception ignored" while `cgra rtl`
ran on to exit 0.
"""
from __future__ import annotations

import signal

_terminated = False
_interrupted = False


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when ``cgra`` receives SIGTERM."""


def raise_terminated(signum, frame) -> None:
    """The SIGTERM handler: remember it, and raise :class:`Terminated`. A second SIGTERM
    during the cleanup ends the process at once (the default action)."""
    global _terminated
    _terminated = True
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise Terminated()


def raise_interrupted(signum, frame) -> None:
    """The SIGINT handler: remember it, and raise ``KeyboardInterrupt`` (what Python's own
    handler raises)."""
    global _interrupted
    _interrupted = True
    raise KeyboardInterrupt()


def raise_if_terminated() -> None:
    """Raise :class:`Terminated` when SIGTERM, ``KeyboardInterrupt`` when SIGINT arrived
    during this command (its first raise may have been swallowed, module docstring)."""
    if _terminated:
        raise Terminated()
    if _interrupted:
        raise KeyboardInterrupt()


def reset() -> None:
    """Forget an earlier SIGTERM or SIGINT (a new command starts)."""
    global _terminated, _interrupted
    _terminated = _interrupted = False


__all__ = ["Terminated", "raise_if_terminated", "raise_interrupted", "raise_terminated",
           "reset"]
