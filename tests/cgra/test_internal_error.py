"""A bug looks like a bug (issue 38, item 4): ``InternalError`` is outside the ``CgraError``
tree, the console entry point prints its traceback and a "please report" line and exits 70,
and the DSE records it as a transient failure it never caches."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cgra.errors import EXIT_INTERNAL, CgraError, InternalError, MappingError

ROOT = Path(__file__).resolve().parents[2]

_SCRIPT = textwrap.dedent("""
    import sys, click
    import cgra.cli as cli
    from cgra.errors import InternalError, MappingError

    @click.command()
    def boom():
        raise {exc}("pass 'balance' broke an invariant (deliberately)")

    cli.COMMANDS["boom"] = "__main__:boom"     # beside the lazily loaded commands
    sys.argv = ["cgra", "boom"]
    cli.main()
""")


def _run(exc: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _SCRIPT.format(exc=exc)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_internal_error_is_not_a_user_error():
    assert not issubclass(InternalError, CgraError)
    with pytest.raises(InternalError):
        try:
            raise InternalError("x")
        except CgraError:          # the handler every command uses for bad input
            pytest.fail("an InternalError was caught as bad input")


def test_cli_internal_error_prints_traceback_and_exits_70():
    res = _run("InternalError")
    assert res.returncode == EXIT_INTERNAL == 70
    assert "Traceback (most recent call last)" in res.stderr
    assert "cgra.errors.InternalError: pass 'balance' broke an invariant" in res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("internal error (InternalError): this is a bug in cgra-gen")
    assert "please report" in last and "`cgra boom`" in last


def test_cli_any_other_exception_is_a_bug_too():
    res = _run("KeyError")
    assert res.returncode == 70
    assert "KeyError: \"pass 'balance'" in res.stderr
    assert res.stderr.strip().splitlines()[-1].startswith("internal error (KeyError)")


def test_cli_user_error_is_still_one_line_exit_2():
    res = _run("MappingError")
    assert res.returncode == 2
    assert res.stderr.strip() == ("error: pass 'balance' broke an invariant (deliberately)")


def test_dse_never_caches_an_internal_error(tmp_path, monkeypatch):
    from dse import run as dse_run
    import mapper.flow

    def bug(*a, **k):
        raise InternalError("pass 'route' broke an invariant (deliberately)")

    monkeypatch.setattr(mapper.flow, "run_stages", bug)
    design = {"key": "k", "dir": str(tmp_path / "designs" / "k" / "design"),
              "params": {"tracks": 5},
              "area": {"cells": 1, "sram_bits": 0, "nand2": 1.0}, "seconds": 0.0,
              "area_seconds": 0.0}
    result = tmp_path / "results" / "k" / "gaussian-x.json"
    row = dse_run.app_task(design, "gaussian", 1, (16, 16), 0, 0.0, str(result))
    assert row["status"] == "failed" and row["transient"] is True
    assert "internal InternalError" in row["error"]
    assert not result.exists()          # a re-run retries the point

    def user(*a, **k):
        raise MappingError("app 'gaussian' needs 18 PEs, the array has 4")

    monkeypatch.setattr(mapper.flow, "run_stages", user)
    row = dse_run.app_task(design, "gaussian", 1, (16, 16), 0, 0.0, str(result))
    assert row["status"] == "failed" and "transient" not in row
    assert json.loads(result.read_text())["error"].startswith("MappingError: app 'gaussian'")
