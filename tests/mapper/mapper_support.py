"""Test support for the compute-mapping tests: rule tables and collateral directories.

Rule tables are built with :func:`peak.rules.build_table` (z3) once per test
session and shared by all pytest-xdist workers through a cache directory next to the
workers' base temp directories, guarded by an ``fcntl`` file lock; the cache key is the PE
spec hash, the IR library hash and the list of targets.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from mapper.memory import DUAL_PORT_SRAM

#: IR ops of ../shared/apps/coreir/*.json and of the shipped DSL apps (plus constants).
KERNEL_OPS = ("coreir.add", "coreir.sub", "coreir.mul", "coreir.lshr", "coreir.ashr",
              "coreir.slt", "coreir.sle", "coreir.sge", "coreir.mux", "commonlib.smax",
              "commonlib.smin", "corebit.and", "coreir.const", "corebit.const")


def target_keys(ops: tuple[str, ...], patterns: bool = True) -> list[str]:
    """Target keys of the IR library for ``ops`` (with their constant variants) and, with
    ``patterns``, every multi-op pattern."""
    from peak.ir import PATTERNS, targets
    return [t.key for t in targets(16) if t.op in ops or (patterns and t.op in PATTERNS)]


def cached_rules(cache_root: Path, spec_path: str, keys: list[str]) -> Path:
    """The directory of a rule table for ``keys`` on PE ``spec_path`` built with
    :func:`peak.rules.build_table`, through a file cache shared by xdist workers (keyed by
    the spec hash, the IR library hash and the targets). Returns the table directory."""
    from peak import spec_hash
    from peak.ir import library_hash
    from peak.rules import build_table, load_spec

    spec = load_spec(spec_path)
    key = hashlib.sha256(json.dumps([spec_hash(spec), library_hash(), sorted(keys)]).encode()
                         ).hexdigest()[:16]
    cache_root.mkdir(parents=True, exist_ok=True)
    path = cache_root / f"rules_{key}"
    with open(cache_root / f"rules_{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (path / "done").is_file():
                tmp = cache_root / f"rules_{key}.partial"
                if tmp.exists():
                    shutil.rmtree(tmp)
                build_table(spec, tmp, only=keys)
                (tmp / "done").write_text("ok\n")
                if path.exists():
                    shutil.rmtree(path)
                tmp.rename(path)
            return path
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def write_collateral(root: Path, spec_path: str, rules: Path, mem: dict | None = None) -> Path:
    """A collateral directory with the files and schemas garnet writes (design.json,
    pe.json from :func:`peak.collateral.pe_json`, mem.json, rules/ with its stamp,
    config_map.json, routing graphs) holding what the compute mapper reads; the routing
    graphs and config map are empty (place and route is not exercised here)."""
    from peak.collateral import pe_json
    from peak.rules import load_spec

    pe = pe_json(load_spec(spec_path))
    pe["latency"] = {"cycles": 0}
    mem_doc = {"schema": "garnet.mem/1", **(mem or DUAL_PORT_SRAM), "spec_hash": "m" * 64}
    routing_hashes = {}
    root.mkdir(parents=True, exist_ok=True)
    (root / "routing").mkdir(exist_ok=True)
    for w in (16, 1):
        g = {"schema": "canal.routing_graph/1", "width": w, "nodes": []}
        (root / "routing" / f"graph_{w}.json").write_text(json.dumps(g))
        routing_hashes[str(w)] = hashlib.sha256(json.dumps(g, sort_keys=True).encode()
                                                ).hexdigest()
    design = {"schema": "garnet.design/1", "name": root.name,
              "params": {"name": root.name, "widths": [16, 1], "pe": spec_path},
              "spec_hashes": {"pe": pe["spec_hash"], "mem": mem_doc["spec_hash"],
                              "routing_graphs": routing_hashes}}
    (root / "design.json").write_text(json.dumps(design, indent=1))
    (root / "pe.json").write_text(json.dumps(pe, indent=1))
    (root / "mem.json").write_text(json.dumps(mem_doc, indent=1))
    (root / "config_map.json").write_text(json.dumps({"schema": "garnet.config_map/1",
                                                      "fields": []}))
    dst = root / "rules"
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(rules, dst, ignore=shutil.ignore_patterns("done"))
    files = sorted(str(p.relative_to(dst)) for p in dst.rglob("*") if p.is_file())
    (dst / "garnet_rules.json").write_text(json.dumps({
        "schema": "garnet.rules_stamp/1", "pe": spec_path, "spec_hash": pe["spec_hash"],
        "files": files}))
    return root


DEFAULT_PE = "peak.examples.cgra_pe:PE"
NOMUL_PE = "mapper_pe_nomul:PE"
#: targets synthesised for the PE without multipliers (what the no-multiplier test needs)
NOMUL_KEYS = ["coreir.add", "coreir.mul", "coreir.const", "coreir.add[in1=const]",
              "coreir.mul[in1=const]"]


def rules_cache_root(tmp_path_factory) -> Path:
    """The rule cache shared by all xdist workers of a session (next to their base temp
    directories)."""
    return tmp_path_factory.getbasetemp().parent / "mapper_rules_cache"


@pytest.fixture(scope="session")
def default_design(tmp_path_factory) -> Path:
    """A collateral directory for the default PE with the rules of every op the CoreIR
    kernels and the DSL apps use (constant variants and multi-op patterns included)."""
    rules = cached_rules(rules_cache_root(tmp_path_factory), DEFAULT_PE,
                         target_keys(KERNEL_OPS))
    return write_collateral(tmp_path_factory.mktemp("design") / "default", DEFAULT_PE, rules)


@pytest.fixture(scope="session")
def nomul_design(tmp_path_factory) -> Path:
    """A collateral directory for the PE without multipliers (tests/mapper/mapper_pe_nomul.py)."""
    rules = cached_rules(rules_cache_root(tmp_path_factory), NOMUL_PE, NOMUL_KEYS)
    return write_collateral(tmp_path_factory.mktemp("design") / "nomul", NOMUL_PE, rules)
