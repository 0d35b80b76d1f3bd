"""Session fixtures of the bad-input tests: configs/small.toml's design (RTL, routing
graphs, rules), generated once per test session in the directory and under the file lock
the end-to-end tests' ``small_design`` uses (tests/e2e/conftest.py), and shared by every
pytest-xdist worker."""
from __future__ import annotations

import fcntl
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:          # the real `mapper` package before tests/mapper
    sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402

from garnet.build import generate  # noqa: E402
from garnet.params import load_toml  # noqa: E402


@pytest.fixture(scope="session")
def small_design(tmp_path_factory) -> Path:
    """configs/small.toml's design directory (8x8, default PE, dual-port MEM, rules)."""

    base = tmp_path_factory.getbasetemp()
    root = (base.parent if base.name.startswith("popen-gw") else base) / "e2e"
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
