"""Session fixtures of the runtime tests: gaussian compiled onto the 8x8 (the root conftest's
``small_design``) up to the bitstream (`cgra run` artifacts; no Verilator build), and the
8x8 with a GLB (configs/small_glb.toml)."""
from __future__ import annotations

import fcntl
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402

from garnet.build import generate  # noqa: E402
from garnet.glb.params import load_table  # noqa: E402
from garnet.params import load_toml  # noqa: E402
from mapper.flow import run_stages  # noqa: E402
from mapper.params import AppParams, RunParams  # noqa: E402


@pytest.fixture(scope="session")
def gaussian_run(small_design, tmp_path_factory) -> pathlib.Path:
    """A run directory of gaussian (64x64) on the 8x8, stages map .. bitstream."""
    out = tmp_path_factory.mktemp("rt") / "gaussian"
    run_stages(RunParams(AppParams("gaussian"), small_design, out), "bitstream")
    return out


@pytest.fixture(scope="session")
def small_glb_design(small_design) -> pathlib.Path:
    """Collateral directory of configs/small_glb.toml (the 8x8 of ``small_design`` plus its
    ``[glb]`` table: ``glb/glb.v``, ``glb/glb.json``), generated once per session beside it
    with its build cache (every module reused: ~4 s) and the shared rule tables."""
    out = small_design.parent / "small_glb"
    with open(small_design.parent / "small_glb.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (out / "design.json").is_file():
                cfg = ROOT / "configs" / "small_glb.toml"
                generate(load_toml(cfg), out, rules=True, rules_dir=ROOT / "build" / "rules",
                         jobs=2, config_file="configs/small_glb.toml",
                         cache_dir=small_design / ".cache", glb=load_table(cfg))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return out
