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


#: IR ops of the shipped CoreIR kernels (mapper/data/coreir/*.json) and DSL apps (plus constants).
KERNEL_OPS = ("coreir.add", "coreir.sub", "coreir.mul", "coreir.lshr", "coreir.ashr",
              "coreir.slt", "coreir.sle", "coreir.sge", "coreir.mux", "commonlib.smax",
              "commonlib.smin", "corebit.and", "coreir.const", "corebit.const",
              # camera_pipeline (umax) and a lookup's index, clamped with umin or bounded by a
              # mask (tests/mapper/test_lut.py); bayer_demosaic's parity tests (eq)
              "commonlib.umin", "commonlib.umax", "coreir.and", "coreir.eq")


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


def write_collateral(root: Path, spec_path: str, rules: Path, width: int = 16,
                     height: int = 16) -> Path:
    """A design directory for PE ``spec_path`` written by the same code as ``cgra rtl``
    (:func:`garnet.build.write_fabric`: routing graphs, timing, pe.json, mem.json, config map;
    the rules stamp and design.json with its manifest through :mod:`garnet.collateral`) with
    the rule table ``rules`` (a subset of targets) and no RTL: what the mapper reads."""
    from garnet import collateral as gc
    from garnet.array import build_interconnect
    from garnet.build import write_fabric
    from garnet.cores import pe_core
    from garnet.params import GarnetParams, validate
    from garnet.rules import ir_hash, rules_key
    from peak.load import load_spec
    from peak.rules.format import read_table

    params = GarnetParams(name=root.name, width=width, height=height, pe=spec_path,
                          timing="cascade-table")     # the table: no RTL here to measure
    validate(params)
    spec = load_spec(spec_path)
    pe = pe_core(spec)
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    write_fabric(root, params, build_interconnect(params), spec, pe)
    dst = root / "rules"
    shutil.copytree(rules, dst, ignore=shutil.ignore_patterns("done"))
    table = read_table(dst)
    files = [table.path.name] + table.rule_files()
    h = pe.info["spec_hash"]
    gc.write_stamp(dst, spec_path, h, ir_hash(), rules_key(h, ir_hash()), files)
    gc.write_design(root, {"name": root.name, "params": params.to_dict(),
                           "spec_hashes": {"pe": h, "mem": json.loads(
                               (root / "mem.json").read_text())["lake"]["spec_hash"]}})
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


D3_PE = "peak.examples.cgra_pe_d3:PE"


@pytest.fixture(scope="session")
def d3_design(tmp_path_factory) -> Path:
    """A collateral directory for the three-input PE (peak/examples/cgra_pe_d3.py: the
    default PE plus ``Add3`` / ``MulAdd``) with the same targets as ``default_design``."""
    rules = cached_rules(rules_cache_root(tmp_path_factory), D3_PE, target_keys(KERNEL_OPS))
    return write_collateral(tmp_path_factory.mktemp("design") / "d3", D3_PE, rules)


D2_PE = "peak.examples.cgra_pe_d2:PE"


@pytest.fixture(scope="session")
def d2_design(tmp_path_factory) -> Path:
    """A collateral directory for the delay-chain PE (peak/examples/cgra_pe_d2.py: the
    default PE with 1..4-cycle data-input delays) with the same targets as
    ``default_design`` (~20 s of rule synthesis on 2 cores, cached for the session)."""
    rules = cached_rules(rules_cache_root(tmp_path_factory), D2_PE, target_keys(KERNEL_OPS))
    return write_collateral(tmp_path_factory.mktemp("design") / "d2", D2_PE, rules)


#: default-PE targets of the strength-reduction test (multiply and shift by a constant)
SHL_KEYS = ["coreir.add", "coreir.add[in1=const]", "coreir.shl[in1=const]", "coreir.mul",
            "coreir.mul[in1=const]", "coreir.const"]


@pytest.fixture(scope="session")
def shl_design(tmp_path_factory) -> Path:
    """A collateral directory for the default PE with add, multiply and shift-by-constant
    rules only."""
    rules = cached_rules(rules_cache_root(tmp_path_factory), DEFAULT_PE, SHL_KEYS)
    return write_collateral(tmp_path_factory.mktemp("design") / "shl", DEFAULT_PE, rules)
