"""Session fixtures of the rule-synthesis tests.

The full default-PE rule table comes from the suite's shared rule cache
(tests/shared_rules.py: synthesised once per session) and is shared by every test that needs
it. The project root goes first on ``sys.path`` so ``tests/peak`` never shadows the ``peak``
package."""
from __future__ import annotations

import pathlib
import sys

_ROOT = str(pathlib.Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import pytest  # noqa: E402

from shared_rules import shared_table  # noqa: E402


@pytest.fixture(scope="session")
def default_table(tmp_path_factory):
    """(table, out_dir) of the default 16-bit CGRA PE, through the suite's shared rule cache
    (tests/shared_rules.py: synthesised once per session, whichever of these tests and the e2e
    designs asks first; before, each xdist worker synthesised the whole table again, in one
    process). ``out_dir`` holds this PE's cache entry only."""
    from peak.examples.cgra_pe import PE

    out = tmp_path_factory.mktemp("rules_default") / "rules"
    return shared_table(PE, out), out
