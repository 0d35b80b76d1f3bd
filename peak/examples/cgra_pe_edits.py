"""Known edits of the stock PE (``peak/examples/cgra_pe.py``) as text replacements, the one
copy shared by the rule-cache tests and ``bench/bench_rules.py`` (incremental == cold after
an edit). Each edit is a list of ``(old, new)`` pairs applied to the spec's source; they edit
the units the stock PE is built from (``make_arith``, ``make_int_alu``), as a user editing a
copy of the file would.

* :data:`ADD_ABSD`: a 1-PE ``Absd`` ALU op, ``res = |a - b|`` of the wrapped difference;
* :data:`REMOVE_ABS`: the ``Abs`` op removed;
* :data:`NO_MUL`: the three multiplier ops and the multiplier unit removed.
"""
from __future__ import annotations

from pathlib import Path

from cgra.errors import SpecError

ADD_ABSD = [
    ("    XOR = 13\n", "    XOR = 13\n    Absd = 14\n"),
    ("            elif op == ops.Abs:\n                res = (-a) if a[WIDTH - 1] else a\n",
     "            elif op == ops.Abs:\n                res = (-a) if a[WIDTH - 1] else a\n"
     "            elif op == ops.Absd:\n"
     "                res = (-(a - b)) if (a - b)[WIDTH - 1] else a - b\n"),
]
REMOVE_ABS = [
    ("    Abs = 2\n", ""),
    ("            elif op == ops.Abs:\n                res = (-a) if a[WIDTH - 1] else a\n", ""),
]
NO_MUL = [
    ("    MULT0 = 8\n    MULT1 = 9\n    MULT2 = 10\n    And = 11\n    Or = 12\n    XOR = 13\n",
     "    And = 8\n    Or = 9\n    XOR = 10\n"),
    ("    Multiplier = make_multiplier(width, ops)\n", ""),
    ("            self.mul = Multiplier()\n", ""),
    ("            res, C = self.mul(op, signed, a, b, res, C)               # MULT0 .. MULT2\n",
     ""),
]


def write_edited(path: str | Path, edits: list[tuple[str, str]]) -> Path:
    """Write the stock PE's source with ``edits`` applied to ``path`` (a ``.py`` file; its
    class ``PE`` is the edited spec). Raises :class:`SpecError` naming the first ``old`` text
    the source no longer contains (the stock PE changed: update the edit)."""
    from peak.examples import cgra_pe  # deferred: loads peak.examples only when called

    src = Path(cgra_pe.__file__).read_text()
    for old, new in edits:
        if old not in src:
            raise SpecError(f"edit of {cgra_pe.__file__}: text {old.strip()[:60]!r} not found; "
                            "update peak/examples/cgra_pe_edits.py to the current source")
        src = src.replace(old, new)
    path = Path(path)
    path.write_text(src)
    return path
