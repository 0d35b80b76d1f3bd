"""Issue 17: `cgra dse` on a LocalCluster of 2 workers (tmp cache) over tests/dse/ci_sweep.toml,
the CI sample of the shipped example configs/dse/small.toml (its apps and options, tracks 4
of its grid; the whole example, every point mapping, is in `make bench`:
bench/bench_dse_trends.py --sweep configs/dse/small.toml): CSV rows, plots, every point
mapping (issue 41), a point that does not fit recorded as a failure, the D3 / PUB / unroll
trends, and a second run computing nothing. The sweep's checks run in `make bench` (marked
``bench``); the checks of the sweep file and of a bad sweep run in `make test`."""
from __future__ import annotations

import csv
import json
import pathlib
import subprocess
import sys

import pytest
from dse.run import app_task
from dse.sweep import load_sweep

ROOT = pathlib.Path(__file__).resolve().parents[2]
#: the rule tables of the whole suite (content-keyed: shared with the e2e designs; the tile
#: areas are cached beside them, build/area)
RULES = str(ROOT / "build" / "rules")
CGRA = pathlib.Path(sys.executable).parent / "cgra"
SWEEP = "tests/dse/ci_sweep.toml"
EXAMPLE = "configs/dse/small.toml"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(CGRA), "dse", *args, "--rules", RULES], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)


#: the CI sweep itself (~170 s: 4 designs at 16x8, 12 points, run twice) and the checks of its
#: rows are marked ``bench``: `make bench` runs them, `make test` does not. `make test` keeps
#: DSE end to end in tests/dse/test_dse_search.py (a 2 x 2 grid searched, its Pareto front,
#: a second run computing nothing), test_dse_simulate.py (points simulated in Verilator),
#: test_dse_scheduler.py (a real Dask cluster) and test_dse_area_bf16.py (tile areas).
@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    cache = tmp_path_factory.mktemp("dse")
    first = _run(SWEEP, "--cache", str(cache), "--workers", "2", "--no-progress")
    assert first.returncode == 0, first.stderr[-3000:]
    second = _run(SWEEP, "--cache", str(cache), "--workers", "2", "--no-progress")
    assert second.returncode == 0, second.stderr[-3000:]
    out = cache / "results" / "ci_sweep"
    rows = list(csv.DictReader(open(out / "results.csv")))
    return first.stdout, second.stdout, out, rows


def _get(rows, **kw):
    got = [r for r in rows if all(r[k] == str(v) for k, v in kw.items())]
    assert len(got) == 1, (kw, got)
    return got[0]


@pytest.mark.bench
def test_rows_and_plots(sweep):
    first, _second, out, rows = sweep
    assert len(rows) == 4 * 3
    assert "computed 12 points (4 designs)" in first
    for name in ("pareto.png", "pe_count.png", "mem_count.png", "fmax_tracks.png"):
        assert (out / name).stat().st_size > 1000
    ok = [r for r in rows if r["status"] == "ok"]
    for r in ok:
        assert int(r["pe_count"]) > 0 and float(r["fmax_mhz"]) > 0
        assert int(r["area_cells"]) > 0 and float(r["runtime_us"]) > 0
        switched = int(r["pe_count"]) + int(r["mem_count"]) + int(r["wirelength"])
        assert int(r["energy_proxy"]) == switched * int(r["cycles"])
    assert all(r["energy_proxy"] == "" for r in rows if r["status"] != "ok")
    # results.parquet beside the CSV: the same rows, typed (tests/dse/test_dse_parquet.py)
    import pyarrow.parquet as pq
    table = pq.read_table(out / "results.parquet")
    assert table.num_rows == len(rows) and table.column_names == list(rows[0])
    assert [r["pe_count"] for r in table.to_pylist()] == \
        [int(r["pe_count"]) if r["pe_count"] else None for r in rows]


@pytest.mark.bench
def test_tile_areas_are_cached_beside_the_rules(sweep):
    """The tiles' yosys cell counts are cached beside the sweep's rules directory (here the
    suite's build/rules: build/area), as the tile timing measurements are (build/timing),
    so sweeps with other caches synthesise no tile again; nothing under the sweep's cache."""
    _first, _second, out, _rows = sweep
    cache = out.parents[1]
    assert not (cache / "area").exists()
    designs = [json.loads(p.read_text()) for p in (cache / "designs").glob("*.dse.json")]
    assert len(designs) == 4
    for d in designs:
        for mod in d["area"]["by_tile"]:
            assert list((ROOT / "build" / "area").glob(f"{mod}-*.json")), mod


def test_ci_sweep_samples_the_shipped_example():
    """The CI sweep is the shipped example with fewer grid values: the same apps, image,
    seed and options, each grid axis a subset of the example's (24 points there, 12 here),
    plus one axis: the published delay table instead of the measured default."""
    ci, ex = load_sweep(ROOT / SWEEP), load_sweep(ROOT / EXAMPLE)
    assert (ci.apps, ci.image, ci.seed, ci.fmax_mhz, ci.simulate) == \
        (ex.apps, ex.image, ex.seed, ex.fmax_mhz, ex.simulate)
    assert ci.base == ex.base
    assert ci.grid["timing"] == ["cascade-table"] and "timing" not in ex.grid
    assert all(p.params.measured_timing for p in ex.points)
    for axis, values in ci.grid.items():
        if axis != "timing":
            assert set(values) <= set(ex.grid[axis]), axis
    assert (len(ci.points), len(ex.points)) == (4, 8)        # designs (x 3 apps)


@pytest.mark.bench
def test_every_point_maps(sweep):
    """The example shows the tool working: all 12 points (4 designs x gaussian, gaussian
    unrolled twice, harris) map, place, route and pipeline, so each app's Pareto plot has
    all 4 designs."""
    rows = sweep[3]
    assert sorted({r["app"] for r in rows}) == ["gaussian", "gaussian_u2", "harris"]
    assert [(r["app"], r["error"]) for r in rows if r["status"] != "ok"] == []
    assert {a: sum(r["app"] == a for r in rows) for a in ("gaussian", "gaussian_u2",
                                                          "harris")} == \
        {"gaussian": 4, "gaussian_u2": 4, "harris": 4}


@pytest.mark.bench
def test_unroll_trades_pes_for_cycles(sweep):
    """Unrolled twice, gaussian computes 2 pixels a cycle: more PEs, fewer cycles, on
    every design."""
    rows = sweep[3]
    for r in (r for r in rows if r["app"] == "gaussian"):
        u2 = _get(rows, app="gaussian_u2", pe=r["pe"], tracks=r["tracks"],
                  mem_preset=r["mem_preset"])
        assert int(u2["pe_count"]) > int(r["pe_count"])
        assert int(u2["cycles"]) < int(r["cycles"])


@pytest.mark.bench
def test_too_big_is_a_recorded_failure(sweep, tmp_path):
    """A point that does not fit (harris unrolled twice: more PEs than the 16x8 array's 84)
    is a recorded MappingError, its result file written like any point's (it is cached)."""

    out, rows = sweep[2], sweep[3]
    cache = out.parent.parent
    key = _get(rows, app="harris", pe="D1", tracks=4, mem_preset="DP")["design"]
    design = json.loads((cache / "designs" / f"{key}.dse.json").read_text())
    result = tmp_path / "harris_u2.json"
    row = app_task(design, "harris", 2, (64, 64), 0, 0.0, str(result))
    assert row["status"] == "failed" and row["app"] == "harris" and row["unroll"] == 2
    assert row["error"].startswith("MappingError") and "PE tiles" in row["error"]
    assert json.loads(result.read_text())["error"] == row["error"]


@pytest.mark.bench
def test_d3_fewer_pes_and_pub_fewer_mems(sweep):
    rows = sweep[3]
    for tracks in (4,):
        for mem in ("DP", "PUB"):
            d1 = _get(rows, app="gaussian", pe="D1", tracks=tracks, mem_preset=mem)
            d3 = _get(rows, app="gaussian", pe="D3", tracks=tracks, mem_preset=mem)
            assert int(d3["pe_count"]) < int(d1["pe_count"])
        for pe in ("D1", "D3"):
            dp = _get(rows, app="harris", pe=pe, tracks=tracks, mem_preset="DP")
            pub = _get(rows, app="harris", pe=pe, tracks=tracks, mem_preset="PUB")
            assert 2 * int(pub["mem_count"]) <= int(dp["mem_count"])


@pytest.mark.bench
def test_second_run_recomputes_nothing(sweep):
    _first, second, _out, _rows = sweep
    assert "computed 0 points (0 designs), 12 from the cache" in second


def test_bad_sweep_is_one_line_config_error(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(f'[sweep]\nbase = "{ROOT}/configs/small.toml"\napps = ["gaussian"]\n'
                   '[grid]\ntracks = [4, "five"]\n')
    res = _run(str(bad), "--cache", str(tmp_path / "c"))
    assert res.returncode == 2
    line = res.stderr.strip().splitlines()[-1]
    assert line.startswith("error: ") and "bad.toml" in line and "'tracks'" in line
    bad.write_text(f'[sweep]\nbase = "{ROOT}/configs/small.toml"\napps = ["gaussian"]\n'
                   '[grid]\nwidht = [4]\n')
    res = _run(str(bad), "--cache", str(tmp_path / "c"))
    assert res.returncode == 2 and "grid.widht" in res.stderr


def test_pareto_front():
    from dse.plots import pareto
    assert pareto([(3, 1), (1, 3), (2, 2), (2, 4), (4, 1)]) == [(1, 3), (2, 2), (3, 1)]
