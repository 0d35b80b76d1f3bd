"""Session fixtures for the mapper tests: DSL pipelines and their Halide builds are created
once per session (Halide JIT compilation costs ~0.1-1 s per pipeline)."""
from __future__ import annotations

import pytest

from mapper.apps import APPS, build_app
from mapper.images import camera_crop

APP_NAMES = sorted(APPS)


@pytest.fixture(scope="session")
def dsl_apps():
    """name -> DSL pipeline on a 64x64 image (unroll 1)."""
    return {name: build_app(name, 64, 64) for name in APP_NAMES}


@pytest.fixture(scope="session")
def camera64():
    """The 64x64 camera() crop used for golden-model agreement."""
    return camera_crop(64, 64)
