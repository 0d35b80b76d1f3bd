"""Session fixtures of the runtime tests: gaussian compiled onto the 8x8 (the root conftest's
``small_design``) up to the bitstream (`cgra run` artifacts; no Verilator build), and the
8x8 with a GLB (configs/small_glb.toml)."""
from __future__ import annotations

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402

from mapper.flow import run_stages  # noqa: E402
from mapper.params import AppParams, RunParams  # noqa: E402


@pytest.fixture(scope="session")
def gaussian_run(small_design, tmp_path_factory) -> pathlib.Path:
    """A run directory of gaussian (64x64) on the 8x8, stages map .. bitstream."""
    out = tmp_path_factory.mktemp("rt") / "gaussian"
    run_stages(RunParams(AppParams("gaussian"), small_design, out), "bitstream")
    return out


@pytest.fixture(scope="session")
def small_glb_design(small_design, glb_design) -> pathlib.Path:
    """Collateral directory of configs/small_glb.toml (the 8x8 of ``small_design`` plus its
    ``[glb]`` table), generated once per session beside it (~4 s: every module reused)."""
    return glb_design(small_design, "small_glb")
