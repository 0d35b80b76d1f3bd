"""The ``rules/`` directory of the collateral: the rewrite-rule table of the PE.

Rules depend only on the PE spec and the IR op library, so they are keyed by
``rules_key = sha256(spec_hash(PE) + ":" + peak.ir.library_hash())`` and regenerated only when
it changes. ``rules/`` holds PEak's table (``<PE>.rules.json``, ``<PE>/<target>.json``,
``<PE>.timing.json``; format in :mod:`peak.rules.format`) plus the stamp
``garnet_rules.json`` (:func:`garnet.collateral.write_stamp`)::

    {"schema": "garnet.rules_stamp/1", "pe": "module:Class", "spec_hash": "<sha256 hex>",
     "ir_hash": "<sha256 hex>", "key": "<rules_key>", "files": [relative paths]}

:func:`provide_rules`, first hit wins:

1. ``rules/`` of the previous design in the output directory with the same key: copied
   as is (no solver call) -> source ``"previous design"``;
2. the cache entry of this PE in the shared rules directory (default ``build/rules``, the
   directory ``make rules`` writes; layout in :mod:`peak.rules.format`:
   ``cache/<spec_hash[:16]>-<variant>/<PE>.rules.json``), found by key: same spec hash and
   IR library hash, the PE's data width, the default binding policy, an entry for every
   target of the IR library and all its rule files present: copied without a solver call
   (PEak verified every rule when it wrote it) -> source ``"cache"``. An entry filled only
   in part (``cgra rules --only``) does not qualify;
3. otherwise :func:`peak.rules.build_table` on the shared directory (PEak's own cache: the
   entries already there are kept, after a spec edit old rules are re-verified and only
   broken or possibly-cheaper ones re-synthesised), then the entry's files are copied ->
   source ``"synthesised"`` (``"cache"`` if every entry was cached).

A table with another key is never reused; the view ``<PE>.rules.json`` of the shared
directory (the last ``cgra rules`` run for any PE class of that name) is never read.
"""
from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from cgra.errors import CgraError, CollateralError, RuleError
from garnet import collateral as gc
from peak.rules.format import TableFile, cached_tables, copy_table, read_table
from peak.ir import library_hash
from peak.ir import targets, wants_float
from peak.normalize import normal_form


@dataclass
class RulesResult:
    """Where the rules came from (``source``: ``"previous design"``, ``"cache"`` or
    ``"synthesised"``), their key and files (relative to ``rules/``), and the counts of
    table entries by status (found / none / timeout)."""

    key: str
    source: str
    files: list[str]
    counts: dict[str, int]

    @property
    def reused(self) -> bool:
        return self.source != "synthesised"


def ir_hash() -> str:
    """Hash of PEak's IR op library (part of the rules key)."""
    return library_hash()


def rules_key(spec_hash: str, ir: str) -> str:
    return hashlib.sha256(f"{spec_hash}:{ir}".encode()).hexdigest()


def _valid(directory: Path, key: str) -> bool:
    stamp = gc.read_stamp(directory)
    if stamp is None or stamp.get("key") != key:
        return False
    return all((Path(directory) / f).is_file() for f in stamp.get("files", []))


def _counts(table: TableFile) -> dict[str, int]:
    counts: dict[str, int] = {}
    for e in table.entries:
        counts[e.status] = counts.get(e.status, 0) + 1
    return counts


#: ``fn(spec, shared_dir, jobs) -> (table file, {target: action})``
Builder = Callable[[type, Path, int], tuple[Path, dict[str, str]]]


def peak_builder(spec: type, shared: Path, jobs: int,
                 only: list[str] | None = None) -> tuple[Path, dict[str, str]]:
    """Run :func:`peak.rules.build_table` into ``shared`` (``only``: just those targets, a
    partial table); returns the table file and the action of every entry (synthesised /
    cached / reused / decomposed)."""
    try:
        from peak.rules import build_table  # deferred: loads peak.rules, peak.smt only when called
    except ImportError as exc:
        raise CollateralError(f"rules/: the rule synthesiser peak.rules cannot be imported "
                              f"({exc}); generate RTL only with --no-rules") from None
    table = build_table(spec, shared, jobs=jobs, only=only)
    assert table.path is not None
    return table.path, {e.target: e.action for e in table.entries}


def partial_builder(only: list[str]) -> Builder:
    """A :data:`Builder` synthesising the targets ``only`` (PEak's cache in the shared
    directory keeps every entry already there): a design whose flow maps no application
    through the rules, such as a dataflow program's."""
    return lambda spec, shared, jobs: peak_builder(spec, shared, jobs, only)


def provide_rules(spec: type, pe_path: str, spec_hash: str, dest: Path,
                  previous: Path | None, shared: Path, jobs: int = 1,
                  builder: Builder | None = None) -> RulesResult:
    """Fill ``dest`` (a path that does not exist yet) with the rule table of ``spec``; see the
    module docstring. Raises :class:`RuleError` from PEak when synthesis fails and
    :class:`CollateralError` when PEak's rules package is missing."""
    dest = Path(dest)
    ih = ir_hash()
    key = rules_key(spec_hash, ih)
    if previous is not None and _valid(previous, key):
        shutil.copytree(previous, dest)
        stamp = gc.read_stamp(dest)
        return RulesResult(key, "previous design", stamp["files"],
                           _counts(read_table(dest / stamp["files"][0])))
    shared = Path(shared)
    cached = _matching_table(shared, spec, spec_hash, ih)
    if builder is None and cached is not None:
        table = cached
        source = "cache"
    else:
        table_file, actions = (builder or peak_builder)(spec, shared, jobs)
        table = read_table(table_file)
        if table.spec_hash != spec_hash:
            raise RuleError(f"rules/: {table_file} has spec hash {table.spec_hash[:12]}, "
                            f"expected {spec_hash[:12]} for {pe_path}")
        from_cache = bool(actions) and all(a == "cached" for a in actions.values())
        source = "cache" if from_cache else "synthesised"
    files = _copy_table(table, dest)
    gc.write_stamp(dest, pe_path, spec_hash, ih, key, files)
    return RulesResult(key, source, files, _counts(table))


def _data_width(spec: type) -> int:
    """The PE's widest input in bits (the IR width PEak synthesises for by default)."""
    return max(getattr(T, "size", 1) for _, T in normal_form(spec).inputs)


def _matching_table(shared: Path, spec: type, spec_hash: str, ih: str) -> TableFile | None:
    """The complete cache entry of ``spec`` in the shared rules directory (module
    docstring, step 2; PEak verified every rule when it wrote it, so no solver call is
    needed), else ``None``."""
    width = _data_width(spec)
    want = {t.key for t in targets(width, floats=wants_float(spec))}
    for path in cached_tables(shared, spec.__name__, spec_hash):
        try:
            table = read_table(path, spec_hash)
        except CgraError:
            continue
        if table.ir_hash == ih and table.width == width \
                and table.policy == {"ties": "auto"} \
                and want <= {e.target for e in table.entries}:
            return table
    return None


def _copy_table(table: TableFile, dest: Path) -> list[str]:
    """Copy a PEak table, its timing file and its rule files into ``dest`` (a new
    directory); returns the relative paths (table first)."""
    dest.mkdir(parents=True)
    return copy_table(table, dest, prune=False)
