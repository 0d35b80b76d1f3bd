"""The ``rules/`` directory of the collateral: the rewrite-rule table of the PE.

Rules depend only on the PE spec and the IR op library, so they are keyed by
``rules_key = sha256(spec_hash(PE) + ":" + peak.ir.library_hash())`` and regenerated only when
it changes. ``rules/`` holds PEak's table (``<PE>.rules.json``, ``<PE>/<target>.json``,
``<PE>.timing.json``; formats in :mod:`peak.rules.table`) plus ``garnet_rules.json``::

    {"schema": "garnet.rules_stamp/1", "pe": "module:Class", "spec_hash": "<sha256 hex>",
     "ir_hash": "<sha256 hex>", "key": "<rules_key>", "files": [relative paths]}

:func:`provide_rules`, first hit wins:

1. ``rules/`` of the previous design in the output directory with the same key: copied
   as is (no solver call) -> source ``"previous design"``;
2. the table ``<PE>.rules.json`` of the shared rules directory (default ``build/rules``,
   the directory ``make rules`` writes) when its ``spec_hash`` and ``ir_hash`` match and all
   its rule files exist: copied without a solver call (PEak verified every rule when it
   wrote it) -> source ``"cache"``;
3. otherwise :func:`peak.rules.build_table` on the shared directory (PEak's own cache: after
   a spec edit old rules are re-verified and only broken ones re-synthesised), then this
   PE's files are copied -> source ``"synthesised"`` (``"cache"`` if every entry was
   cached).

A table with another key is never reused.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from cgra.errors import CollateralError, RuleError

STAMP = "garnet_rules.json"
STAMP_SCHEMA = "garnet.rules_stamp/1"


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
    try:
        from peak.ir import library_hash
    except ImportError as exc:
        raise CollateralError(f"rules/: cannot import peak.ir.library_hash ({exc})") from None
    return library_hash()


def rules_key(spec_hash: str, ir: str) -> str:
    return hashlib.sha256(f"{spec_hash}:{ir}".encode()).hexdigest()


def read_stamp(directory: Path) -> dict | None:
    """The stamp of a rules directory, or None when absent or unreadable."""
    p = Path(directory) / STAMP
    if not p.is_file():
        return None
    try:
        doc = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return doc if isinstance(doc, dict) and doc.get("schema") == STAMP_SCHEMA else None


def _valid(directory: Path, key: str) -> bool:
    stamp = read_stamp(directory)
    if stamp is None or stamp.get("key") != key:
        return False
    return all((Path(directory) / f).is_file() for f in stamp.get("files", []))


def _counts(table_file: Path) -> dict[str, int]:
    doc = json.loads(table_file.read_text())
    counts: dict[str, int] = {}
    for e in doc.get("entries", []):
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    return counts


#: ``fn(spec, shared_dir, jobs) -> (table file, {target: action})``
Builder = Callable[[type, Path, int], tuple[Path, dict[str, str]]]


def peak_builder(spec: type, shared: Path, jobs: int) -> tuple[Path, dict[str, str]]:
    """Run :func:`peak.rules.build_table` into ``shared``; returns the table file and the
    action of every entry (synthesised / cached / reused / decomposed)."""
    try:
        from peak.rules import build_table
        from peak.rules.table import table_path
    except ImportError as exc:
        raise CollateralError(f"rules/: the rule synthesiser peak.rules cannot be imported "
                              f"({exc}); generate RTL only with --no-rules") from None
    table = build_table(spec, shared, jobs=jobs)
    return table_path(shared, table.pe), {e.target: e.action for e in table.entries}


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
        stamp = read_stamp(dest)
        return RulesResult(key, "previous design", stamp["files"],
                           _counts(dest / stamp["files"][0]))
    shared = Path(shared)
    cached = shared / f"{spec.__name__}.rules.json"
    if builder is None and _table_matches(cached, spec_hash, ih):
        files = _copy_table(cached, shared, dest, pe_path)
        source = "cache"
    else:
        table_file, actions = (builder or peak_builder)(spec, shared, jobs)
        doc = json.loads(table_file.read_text())
        if doc.get("spec_hash") != spec_hash:
            raise RuleError(f"rules/: {table_file} has spec hash "
                            f"{str(doc.get('spec_hash'))[:12]}, expected {spec_hash[:12]} for "
                            f"{pe_path}")
        files = _copy_table(table_file, shared, dest, pe_path)
        from_cache = bool(actions) and all(a == "cached" for a in actions.values())
        source = "cache" if from_cache else "synthesised"
    stamp: dict[str, Any] = {"schema": STAMP_SCHEMA, "pe": pe_path, "spec_hash": spec_hash,
                             "ir_hash": ih, "key": key, "files": files}
    (dest / STAMP).write_text(json.dumps(stamp, indent=1) + "\n")
    return RulesResult(key, source, files, _counts(dest / files[0]))


def _table_matches(table_file: Path, spec_hash: str, ih: str) -> bool:
    """True when ``table_file`` is a complete PEak table for this spec and IR library (it
    was verified when PEak wrote it), so no solver call is needed."""
    if not table_file.is_file():
        return False
    try:
        doc = json.loads(table_file.read_text())
    except (OSError, json.JSONDecodeError):
        return False
    if doc.get("spec_hash") != spec_hash or doc.get("ir_hash") != ih:
        return False
    return all((table_file.parent / e["rule"]).is_file() for e in doc.get("entries", [])
               if e.get("rule"))


def _copy_table(table_file: Path, shared: Path, dest: Path, pe_path: str) -> list[str]:
    """Copy a PEak table, its timing file and its rule files into ``dest``; returns the
    relative paths (table first)."""
    doc = json.loads(table_file.read_text())
    dest.mkdir(parents=True)
    files = [table_file.name]
    shutil.copy2(table_file, dest / table_file.name)
    timing = table_file.with_name(table_file.name.replace(".rules.json", ".timing.json"))
    if timing.is_file():
        shutil.copy2(timing, dest / timing.name)
        files.append(timing.name)
    for e in doc.get("entries", []):
        rel = e.get("rule")
        if rel:
            src = shared / rel
            if not src.is_file():
                raise RuleError(f"rules/: the table {table_file} names rule file {rel}, "
                                f"which does not exist; re-run `cgra rules --pe {pe_path}`")
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
            files.append(rel)
    return files
