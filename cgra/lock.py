"""Advisory write locks of output directories: one writer per design, run or DSE directory.

A command that writes a directory (``cgra rtl`` its design directory, ``cgra run`` and the
stage commands their run directory, ``cgra dse`` its output directory) holds a
:class:`DirLock` on it while it runs (through :func:`cgra.outputs.claim_output_dir`). A
second writer fails at once with a :class:`~cgra.errors.LockError` naming the directory, the
holder's pid and command line, and the fix; it never waits and never writes.

**Where the lock file lives.** Beside the directory, not in it: ``<parent>/.<name>.lock``
for ``<parent>/<name>``. ``cgra rtl`` writes a design into a temporary sibling and renames
it over ``<name>`` when complete (:mod:`garnet.build`): a lock file inside would move away
with the old design, and a second writer arriving after the rename would find a fresh
directory without it. Beside the directory, the lock file is also outside the design's
file manifest (:func:`garnet.collateral.verify_files`), which stays exact: no file of the
design directory is exempted from the check on account of locking. The parent directory is
resolved (symlinks), so two spellings of one directory share one lock; the name itself is
not (a symlinked ``<name>`` is what the writer renames).

**Mechanism.** The kernel's ``flock(2)`` on the lock file (no polling of pids): the lock
belongs to the open file description, so it is released by the kernel when the holder
exits in any way, ``kill -9`` included. A lock file left behind by a dead holder is
therefore *stale* by construction: the next writer locks it and overwrites the record. The
file records only the holder's pid and command line (one JSON line, ``{"pid", "command"}``),
written right after the lock is taken; a writer that finds the lock held reads it to name
the holder.

On release the holder removes the file *while still holding the lock*, then unlocks. A
writer that opened the file just before can then win the lock on the unlinked file; after
locking, every writer checks that the path still names the file it locked (same device and
inode) and starts over when not, so two writers can never both hold "the" lock.

**Forked children.** A process forked while a lock is held (the RTL worker of ``cgra rtl``,
the HiGHS worker of the exact router) would share the locked file description and keep the
lock alive if it outlived its parent. The child closes its copies at once (an
:func:`os.register_at_fork` hook): only the process that took a lock holds it. Processes
started by ``exec`` do not inherit the descriptor (``O_CLOEXEC``).

Locks are released by :meth:`DirLock.release` on normal exit, on errors and on Ctrl-C /
SIGTERM (both unwind as exceptions, :mod:`cgra.interrupt`), by the context manager.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shlex
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from cgra.errors import LockError, OutputError

#: how long a writer that finds the lock held waits for the holder's record to appear (the
#: holder writes it right after locking), seconds
RECORD_WAIT_S = 1.0

#: descriptors of the locks this process holds: lock fd -> lock file (closed in forked
#: children, module docstring)
_HELD: dict[int, Path] = {}


def _close_inherited() -> None:
    """``os.register_at_fork(after_in_child=...)``: a forked child drops its copies of the
    parent's lock descriptors (closing a copy leaves the parent's lock in place)."""
    for fd in list(_HELD):
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD.clear()


os.register_at_fork(after_in_child=_close_inherited)


def lock_path(directory: str | Path) -> Path:
    """The lock file of ``directory``: ``<resolved parent>/.<name>.lock`` (module
    docstring). Raises :class:`OutputError` for a path without a name (``/``)."""
    d = Path(os.path.abspath(directory))
    if not d.name:
        raise OutputError(f"{directory}: cannot lock the root directory as an output "
                          f"directory; give a directory below it")
    return d.parent.resolve() / f".{d.name}.lock"


def command_line() -> str:
    """This process's command line as a shell would show it (``cgra rtl --config ...``)."""
    argv = list(sys.argv) or ["?"]
    return shlex.join([Path(argv[0]).name, *argv[1:]])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_record(fd: int) -> tuple[int | None, str | None]:
    """``(pid, command)`` of the holder of the lock file ``fd``, waiting up to
    :data:`RECORD_WAIT_S` for the holder to write it (right after locking it, the file may
    still be empty or hold the record of a dead earlier holder); ``(None, None)`` when it
    does not."""
    deadline = time.monotonic() + RECORD_WAIT_S
    while True:
        try:
            doc = json.loads(os.pread(fd, 1 << 16, 0).decode())
            pid = doc["pid"]
            if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 \
                    and _alive(pid):
                return pid, str(doc.get("command", "?"))
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
            pass
        if time.monotonic() >= deadline:
            return None, None
        time.sleep(0.02)


class DirLock:
    """An exclusive advisory lock on the output directory ``directory`` (module docstring).

    ``option`` names where the directory came from in messages (``--out``, ``RUN_DIR``).
    Use as a context manager, or :meth:`acquire` / :meth:`release`. Raises
    :class:`~cgra.errors.LockError` when another process holds it and
    :class:`~cgra.errors.OutputError` when the lock file cannot be created."""

    def __init__(self, directory: str | Path, option: str = "--out"):
        self.directory = Path(directory)
        self.option = option
        self.path = lock_path(directory)
        self.fd: int | None = None

    def _open(self) -> int:
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise OutputError(f"{self.option} {self.directory}: cannot create its lock file "
                              f"{self.path} ({exc.strerror}); choose a directory in a "
                              f"writable place") from None

    def acquire(self) -> DirLock:
        """Take the lock now or raise :class:`LockError` naming the holder."""
        if self.fd is not None:
            return self
        for _ in range(100):            # only a release racing with us makes it loop
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    os.close(fd)
                    raise OutputError(f"{self.option} {self.directory}: cannot lock its lock "
                                      f"file {self.path} ({exc.strerror}; a file system "
                                      f"without flock?); choose a directory on a local file "
                                      f"system") from None
                pid, command = _read_record(fd)
                os.close(fd)
                raise self._held_by(pid, command) from None
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if not same:                # the holder released (and removed) it meanwhile
                os.close(fd)
                continue
            record = json.dumps({"pid": os.getpid(), "command": command_line()}) + "\n"
            os.ftruncate(fd, 0)
            os.pwrite(fd, record.encode(), 0)
            self.fd = fd
            _HELD[fd] = self.path
            return self
        raise OutputError(f"{self.option} {self.directory}: its lock file {self.path} kept "
                          f"being replaced while locking it; run the command again")

    def _held_by(self, pid: int | None, command: str | None) -> LockError:
        fix = f"wait for it to finish or use another {self.option}"
        if pid is None:
            who = "another process (it has not recorded its pid yet)"
        else:
            who = f"pid {pid} (`{command}`)"
        return LockError(f"{self.option} {self.directory}: locked by {who}, which is writing "
                         f"it (lock file {self.path}); {fix}",
                         str(self.directory), pid, command)

    def release(self) -> None:
        """Remove the lock file and unlock (module docstring); idempotent."""
        fd, self.fd = self.fd, None
        if fd is None:
            return
        _HELD.pop(fd, None)
        try:
            try:
                if os.path.samestat(os.fstat(fd), os.stat(self.path)):
                    os.unlink(self.path)
            except FileNotFoundError:
                pass
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> DirLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


__all__ = ["DirLock", "command_line", "lock_path"]


@contextlib.contextmanager
def cache_entry_lock(entry: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``.<entry stem>.lock`` beside the cache entry ``entry``
    (its directory created if missing) for the ``with`` block, *waiting* for another holder
    (unlike :class:`DirLock`): one process computes an entry (a tile measurement, a tile's
    cell counts) while the others wait and then read it. Released by the kernel if the holder
    dies."""
    entry = Path(entry)
    entry.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(entry.with_name(f".{entry.stem}.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def write_entry(entry: Path, text: str) -> None:
    """Write a cache entry through a temporary sibling named by process and thread and a
    rename, so a reader never sees it half-written."""
    tmp = entry.with_name(f".{entry.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    tmp.write_text(text)
    tmp.replace(entry)
