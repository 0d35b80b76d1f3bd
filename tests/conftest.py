"""Project-wide pytest fixtures.

magma keeps global state (the circuit registry used for name uniquification). All RTL
generation in a test process goes through generators that cache each distinct module by
its parameters, so a module is defined once per process; ``magma_out`` gives each test
session one scratch directory for Verilog and Verilator builds.
"""
from __future__ import annotations

import fcntl
import functools
import pathlib

import pytest

from garnet.build import generate
from garnet.params import load_toml
from peak.rules import build_table

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def magma_out(tmp_path_factory):
    """A per-session (per xdist worker) directory for generated Verilog and Verilator builds."""
    return tmp_path_factory.mktemp("rtl")


def _shared_root(tmp_path_factory) -> pathlib.Path:
    base = tmp_path_factory.getbasetemp()
    # under xdist each worker's base is <root>/popen-gw<N>; the parent is common to all
    return base.parent if base.name.startswith("popen-gw") else base


def _design(tmp_path_factory, name: str, only: list[str] | None = None) -> pathlib.Path:
    """Collateral directory of configs/<name>.toml (RTL, routing graphs, rules), generated
    once per session and shared by xdist workers (a file lock per design). ``only``: the
    rule targets to synthesise (a partial table; default: every target of the PE)."""
    root = _shared_root(tmp_path_factory) / "e2e"
    root.mkdir(exist_ok=True)
    out = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (out / "design.json").is_file():
                params = load_toml(ROOT / "configs" / f"{name}.toml")
                generate(params, out, rules=True, rules_dir=ROOT / "build" / "rules", jobs=2,
                         config_file=f"configs/{name}.toml",
                         builder=None if only is None else _partial_builder(only))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return out


def _partial_builder(only: list[str]):
    """A :data:`garnet.rules.Builder` synthesising the targets ``only`` (PEak's cache in
    the shared directory keeps every entry already there)."""
    def build(spec, shared, jobs):
        table = build_table(spec, shared, jobs=jobs, only=only)
        return table.path, {e.target: e.action for e in table.entries}
    return build


@pytest.fixture(scope="session")
def design_dir(tmp_path_factory):
    """``design_dir(name, only=None)``: the collateral directory of configs/<name>.toml,
    generated once per test session and shared by every xdist worker (:func:`_design`)."""
    return functools.partial(_design, tmp_path_factory)


@pytest.fixture(scope="session")
def small_design(design_dir) -> pathlib.Path:
    """Collateral directory of configs/small.toml (8x8, default PE, dual-port MEM, rules):
    one for the e2e, bad-input and runtime tests."""
    return design_dir("small")


#: the "odd" array of the fast-path tests: wilton, 4 tracks, IO north and south, MEM every
#: 3rd column, register bypass on two sides, connection boxes on three
ODD_ARRAY = {"width": 6, "height": 5, "tracks": 4, "topology": "wilton", "mem_ratio": 3,
             "io_sides": ["NORTH", "SOUTH"], "register_bypass_sides": ["SOUTH", "WEST"],
             "cb_sides": ["NORTH", "EAST", "WEST"]}


@pytest.fixture
def odd_interconnect():
    """A fresh :class:`canal.Interconnect` of :data:`ODD_ARRAY` (the stamped and templated
    writers are checked against their per-node references on it)."""
    from garnet.array import build_interconnect
    from garnet.params import GarnetParams

    return build_interconnect(GarnetParams(**ODD_ARRAY))


@pytest.fixture
def extra_sb_edge():
    """``add(g, dst)``: give the SB_OUT ``dst`` (``SB:<w>:x:y:SIDE:t:OUT``) one more fan-in,
    the first SB_IN of its tile (sides W, E, S; every track) it does not read yet, delay
    10 ps: an irregular tile. Returns the new source's id."""
    def add(g, dst: str) -> str:
        w, x, y = dst.split(":")[1:4]
        tracks = g.params["tracks"]
        src = next(f"SB:{w}:{x}:{y}:{s}:{t}:IN" for s in ("WEST", "EAST", "SOUTH")
                   for t in range(tracks) if f"SB:{w}:{x}:{y}:{s}:{t}:IN" not in g.fanin[dst])
        g.add_edge(src, dst, 10.0)
        return src
    return add
