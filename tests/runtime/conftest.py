"""Session fixtures of the runtime tests: the 8x8 design (configs/small.toml) in the same
shared directory and under the same lock as tests/e2e/conftest.py (a full run generates it
once), and gaussian compiled onto it up to the bitstream (`cgra run` artifacts; no
Verilator build)."""
from __future__ import annotations

import fcntl
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402

from garnet.build import generate  # noqa: E402
from garnet.params import load_toml  # noqa: E402
from mapper.flow import run_stages  # noqa: E402
from mapper.params import AppParams, RunParams  # noqa: E402


def _shared_root(tmp_path_factory) -> pathlib.Path:
    base = tmp_path_factory.getbasetemp()
    return base.parent if base.name.startswith("popen-gw") else base


@pytest.fixture(scope="session")
def small_design_rt(tmp_path_factory) -> pathlib.Path:
    """Collateral directory of configs/small.toml (shared with tests/e2e)."""
    root = _shared_root(tmp_path_factory) / "e2e"
    root.mkdir(exist_ok=True)
    out = root / "small"
    with open(root / "small.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (out / "design.json").is_file():
                generate(load_toml(ROOT / "configs" / "small.toml"), out, rules=True,
                         rules_dir=ROOT / "build" / "rules", jobs=2,
                         config_file="configs/small.toml")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return out


@pytest.fixture(scope="session")
def gaussian_run(small_design_rt, tmp_path_factory) -> pathlib.Path:
    """A run directory of gaussian (64x64) on the 8x8, stages map .. bitstream."""
    out = tmp_path_factory.mktemp("rt") / "gaussian"
    run_stages(RunParams(AppParams("gaussian"), small_design_rt, out), "bitstream")
    return out
