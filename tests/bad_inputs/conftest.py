"""The bad-input tests run with the project root first on ``sys.path`` (the real ``mapper``
package before ``tests/mapper``); their 8x8 design is the root conftest's ``small_design``
(tests/conftest.py), shared with the e2e and runtime tests."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:          # the real `mapper` package before tests/mapper
    sys.path.insert(0, str(ROOT))
