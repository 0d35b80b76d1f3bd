"""What every benchmark script shares: one figure as a JSON line (CONVENTIONS "Benchmarks":
``{"bench", "figure", "value", "unit", "params"}``, the machine's core count added to the
params) and the rows appended to ``bench/results/<name>.csv`` (columns ``time`` (UTC),
``bench``, ``figure``, ``value``, ``unit``, ``params`` as JSON)."""
from __future__ import annotations

import csv
import json
import os
import time
from pathlib import Path

from garnet.build import generate
from garnet.params import load_toml
from garnet.rules import partial_builder

RESULTS = Path(__file__).resolve().parent / "results"


def row(bench: str, figure: str, value, unit: str, params: dict) -> dict:
    """The figure's row (params + ``cores``), printed as one JSON line."""
    r = {"bench": bench, "figure": figure, "value": value, "unit": unit,
         "params": {**params, "cores": os.cpu_count()}}
    print(json.dumps(r), flush=True)
    return r


def save_rows(name: str, rows: list[dict]) -> Path:
    """Append ``rows`` to ``bench/results/<name>.csv`` (header written once); the path."""
    path = RESULTS / f"{name}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with path.open("a", newline="") as f:
        wr = csv.writer(f)
        if new:
            wr.writerow(["time", "bench", "figure", "value", "unit", "params"])
        for r in rows:
            wr.writerow([stamp, r["bench"], r["figure"], r["value"], r["unit"],
                         json.dumps(r["params"], sort_keys=True)])
    return path


def default_design(name: str = "default", only: list[str] | None = None):
    """``build/<name>`` (``configs/<name>.toml`` with its rules; default the default 32x16
    array), brought up to date first: generated when missing, regenerated where the
    generators or the config changed (``garnet.build.generate``'s keys; well under a second
    when nothing did), so a bench never measures a stale design. ``only``: the rule targets
    to synthesise (a partial table, for a bench that maps no application through the rules,
    such as the dataflow programs); default every target of the PE."""
    root = Path(__file__).resolve().parents[1]
    d = root / "build" / name
    generate(load_toml(root / "configs" / f"{name}.toml"), d, rules=True,
             rules_dir=root / "build" / "rules", jobs=2, config_file=f"configs/{name}.toml",
             builder=None if only is None else partial_builder(only))
    return d
