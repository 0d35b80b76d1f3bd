"""The project's one entry to magma.

magma elaborates circuits and emits MLIR/CIRCT by recursion over the circuit structure; a
32x16 array nests deeper than Python's default recursion limit (1000). Importing this module
raises the limit once, for the whole process: every hardware generator imports magma as
``from cgra.hdl import m``, so no caller (command, test, benchmark) has to remember it.
"""
from __future__ import annotations

import sys

#: Python recursion limit while generating hardware (frames)
RECURSION_LIMIT = 100_000

sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))

import magma as m  # noqa: E402  (after the limit)

__all__ = ["RECURSION_LIMIT", "m"]
