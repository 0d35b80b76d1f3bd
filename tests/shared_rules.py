"""Rule tables of the test suite through its one shared rule cache.

``build/rules`` (the repository's shared rules directory) is the cache every e2e design of
the suite synthesises into (tests/conftest.py ``_design``). :func:`shared_table` gives the
tests that want a whole rule table of their own (a directory holding only that PE's entry)
the same cache, so the table is synthesised once per test session whichever test asks
first; PEak locks a cache entry while a run updates it, so xdist workers wait for each other
instead of synthesising twice."""
from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / "build" / "rules"


def shared_table(spec: type, out: Path, jobs: int = 2):
    """The whole :class:`peak.rules.RuleTable` of ``spec`` written in ``out`` (a directory
    that does not exist yet): synthesised in (or found in) the shared cache with ``jobs``
    processes, that cache entry copied into ``out``'s cache, then the table run in ``out``,
    which finds every target cached (every entry's action ``cached``) and writes the view
    ``out/<PE>.rules.json``. Whole tables only: a view is a copy of its cache entry, so a
    table of some targets (``build_table(only=...)``) taken from a fuller shared entry
    would hold every target of that entry."""
    from peak.rules import build_table  # deferred: loads z3 and pysmt only when called
    from peak.rules.format import CACHE_DIR, locked  # deferred: as above

    entry = build_table(spec, SHARED, jobs=jobs).path.parent
    with locked(entry):
        shutil.copytree(entry, Path(out) / CACHE_DIR / entry.name)
    table = build_table(spec, out, jobs=1)
    assert {e.action for e in table.entries} == {"cached"}, out
    return table
