"""pytest plugin of bench/bench_bad_inputs.py: ``--bad-inputs-report FILE`` appends one JSON
line per test of ``tests/bad_inputs`` (node id, its class marker, outcome, seconds), written
by the controlling process only (pytest-xdist workers send their reports to it)."""
from __future__ import annotations

import json

CLASSES = ("bad_traceback", "bad_silent", "bad_hang", "bad_state", "bad_refused",
           "good_input")
_out: str | None = None


def pytest_addoption(parser) -> None:
    parser.addoption("--bad-inputs-report", default=None,
                     help="append one JSON line per bad-input test to this file")


def pytest_configure(config) -> None:
    global _out
    worker = hasattr(config, "workerinput")
    _out = None if worker else config.getoption("--bad-inputs-report")


def pytest_runtest_logreport(report) -> None:
    if _out is None:
        return
    if report.when != "call" and not (report.when == "setup" and report.outcome != "passed"):
        return
    kind = next((c for c in CLASSES if c in report.keywords), "unmarked")
    with open(_out, "a") as f:
        f.write(json.dumps({"test": report.nodeid, "class": kind, "outcome": report.outcome,
                            "seconds": round(report.duration, 2)}) + "\n")
