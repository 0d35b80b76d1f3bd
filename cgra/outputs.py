"""Output paths checked before any work: the one helper every ``cgra`` command uses.

:func:`check_output_dir` refuses, with a :class:`~cgra.errors.OutputError` naming the
option, the path and the fix, an output directory that

* exists as a file,
* lies below a file (``--out somefile/sub``: the directory can never be created), or
* cannot be written (the directory itself if it exists, else the nearest existing parent;
  ``os.access``, which also reports a read-only file system).

:func:`claim_output_dir` checks the same, creates the directory (or, for a directory that is
installed by renaming a finished temporary sibling over it, ``create=False``: only its
parent) and holds its write lock (:class:`cgra.lock.DirLock`) for the ``with`` block. The
directories it created are removed again on the way out when they are still empty (a
command refused before writing anything leaves the tree as it was).
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

from cgra.errors import OutputError
from cgra.lock import DirLock


def _existing_ancestor(p: Path) -> Path:
    """``p`` or its nearest ancestor that exists (as anything: file or directory)."""
    a = Path(os.path.abspath(p))
    while not os.path.lexists(a) and a != a.parent:
        a = a.parent
    return a


def check_output_dir(path: str | Path, option: str) -> Path:
    """Check that ``path`` can be (created and) written as a directory (module docstring);
    returns it as a :class:`Path`. ``option`` names it in messages (``--out``,
    ``RUN_DIR``). Raises :class:`OutputError`."""
    p = Path(path)
    where = f"{option} {path}"
    if os.path.lexists(p) and not p.is_dir():
        raise OutputError(f"{where}: exists and is a file, not a directory; remove it or "
                          f"give another {option}")
    anc = _existing_ancestor(p)
    if not anc.is_dir():
        raise OutputError(f"{where}: {anc} is a file, so no directory can be created below "
                          f"it; give another {option}")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise OutputError(f"{where}: {anc} is not writable; give another {option} or make "
                          f"it writable")
    if anc == Path(os.path.abspath(p)):        # exists: the lock file goes beside it
        parent = anc.parent
        if not os.access(parent, os.W_OK | os.X_OK):
            raise OutputError(f"{where}: its parent {parent} is not writable (the lock file "
                              f"and temporary files go there); give another {option}")
    return p


def _make_dirs(p: Path, option: str, path: str | Path) -> list[Path]:
    """``mkdir -p p``; returns the directories created, outermost first."""
    made: list[Path] = []
    missing = []
    a = Path(os.path.abspath(p))
    while not os.path.lexists(a) and a != a.parent:
        missing.append(a)
        a = a.parent
    for d in reversed(missing):
        try:
            d.mkdir()
        except FileExistsError:
            if not d.is_dir():
                raise OutputError(f"{option} {path}: {d} is a file, so no directory can be "
                                  f"created below it; give another {option}") from None
            continue
        except OSError as exc:
            raise OutputError(f"{option} {path}: cannot create {d} ({exc.strerror}); give "
                              f"another {option}") from None
        made.append(d)
    return made


@contextlib.contextmanager
def claim_output_dir(path: str | Path, option: str = "--out", *,
                     create: bool = True) -> Iterator[Path]:
    """Check ``path`` (:func:`check_output_dir`), create it (``create=False``: only its
    parent, for a directory the command installs by renaming) and hold its write lock for
    the ``with`` block; yields ``path`` as a :class:`Path`. Raises :class:`OutputError` /
    :class:`~cgra.errors.LockError` (another live process writes it: its pid and command
    in the message) before anything is written. The lock is released and the directories
    created here are removed if still empty when the block ends, however it ends."""
    p = check_output_dir(path, option)
    made = _make_dirs(p if create else p.parent, option, path)
    try:
        with DirLock(p, option):
            yield p
    finally:
        for d in reversed(made):
            try:
                d.rmdir()
            except OSError:
                break               # not empty: the command wrote into it


__all__ = ["check_output_dir", "claim_output_dir"]
