"""Child processes that die with their parent.

A ``cgra`` command killed outright (``kill -9``, the OOM killer) runs no cleanup code, so a
worker it forked (the RTL worker of ``cgra rtl``, the rule-synthesis pool of ``cgra rules``,
the HiGHS workers of :func:`call_in_worker`) or a tool it started (Verilator, make, the simulation
harness, yosys) would be left running, or blocked forever on a pipe to the dead parent.

:func:`die_with_parent`, called in the child right after the fork (a ``multiprocessing``
target's first line, a pool's initializer, or ``subprocess.Popen(preexec_fn=...)`` through
:func:`pdeathsig_preexec`), asks Linux to send it SIGKILL when its parent dies
(``prctl(PR_SET_PDEATHSIG)``, prctl(2)), then checks that the parent did not die before the
call took effect (``os.getppid()`` changed: the child kills itself). The setting survives
``execve``, so a tool started through ``preexec_fn`` gets it too (its own children, e.g. the
compilers make starts, do not: they are short-lived and end by themselves).

Linux sends the signal when the *thread* that forked the child exits: fork from a thread
that outlives the child (the command's main thread, a worker thread waiting for the
result). On a system without ``prctl`` the call does nothing and the callers' other guard
applies: the child holds no copy of its parent's end of their pipe, so it sees EOF or
EPIPE instead of blocking forever.
"""
from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
from typing import Callable

from cgra.errors import InternalError

#: prctl(2) option (linux/prctl.h)
PR_SET_PDEATHSIG = 1


def _load_prctl():
    """libc's ``prctl`` (looked up once, in the parent: nothing is loaded in a forked
    child), or None where there is none."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                   ctypes.c_ulong]
    return fn


_PRCTL = _load_prctl()


def die_with_parent(parent_pid: int, sig: int = signal.SIGKILL) -> bool:
    """In a child process: be sent ``sig`` (default SIGKILL) when the parent dies (module
    docstring); ``parent_pid`` is the parent's pid, read *before* the fork. If the parent
    is already gone, the child sends itself ``sig`` now. Returns whether the kernel
    accepted the request (False without ``prctl``)."""
    ok = _PRCTL is not None and _PRCTL(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    if os.getppid() != parent_pid:
        os.kill(os.getpid(), sig)
    return ok


def pdeathsig_preexec(sig: int = signal.SIGKILL) -> Callable[[], None]:
    """A ``preexec_fn`` for :class:`subprocess.Popen` that makes the started program die
    with this process (call it in the parent: it captures this process's pid). The child
    runs only a libc call and two system calls before ``exec``."""
    parent = os.getpid()

    def preexec() -> None:
        die_with_parent(parent, sig)
    return preexec


__all__ = ["die_with_parent", "pdeathsig_preexec"]


def _worker_main(conn, parent_end, parent_pid: int, fn: Callable, payload) -> None:
    """Body of a :func:`call_in_worker` process: dies with its parent, closes its inherited
    copy of the parent's end of the pipe (so a send to a dead parent fails instead of
    blocking) and sends ``fn(payload)``."""
    die_with_parent(parent_pid)
    parent_end.close()
    conn.send(fn(payload))
    conn.close()


def call_in_worker(fn: Callable, payload, timeout_s: float, what: str):
    """``(True, fn(payload))`` computed in a forked worker process, or ``(False, None)`` when
    it did not answer within ``timeout_s`` seconds (it is then killed). For a solver that does
    not always respect its own time limit (HiGHS inside some heuristics): the caller's limit
    becomes a hard one. ``fork``: the worker starts in milliseconds with the solver already
    imported and re-runs no ``__main__``; nothing is pickled but the answer.

    Raises :class:`cgra.errors.InternalError` naming ``what`` when the worker died of
    anything but the kill (an exception inside ``fn`` is a bug of ours)."""
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_worker_main, args=(send, recv, os.getpid(), fn, payload),
                       daemon=True)
    proc.start()
    send.close()
    try:
        got = recv.poll(timeout_s)
        answer = recv.recv() if got else None
    except EOFError:
        got, answer = False, None
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        recv.close()
    if not got:
        if proc.exitcode not in (0, -signal.SIGKILL, None):
            raise InternalError(f"{what}: the worker process died (exit code "
                                f"{proc.exitcode})")
        return False, None
    return True, answer
