"""results.parquet (dse.run.write_parquet): the rows of results.csv with typed
columns, read back with pyarrow."""
from __future__ import annotations

import csv

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cgra.errors import ConfigError
from dse.run import COLUMN_TYPES, point_row, result_columns, write_csv, write_parquet
from dse.sweep import Point

OK = {"schema": "dse.point/1", "design": "k1", "app": "gaussian", "unroll": 1,
      "status": "ok", "error": "", "pe_count": 18, "mem_count": 2, "io_count": 2,
      "reg_count": 3, "pipeline_registers": 14, "tracks": 5, "wirelength": 120,
      "fmax_mhz": 512.25, "period_ps": 1952.1, "latency_cycles": 139, "cycles": 4235,
      "runtime_us": 8.267, "area_cells": 91234, "area_nand2": 123456.5, "sram_bits": 65536,
      "design_seconds": 12.5, "area_seconds": 0.0, "map_s": 0.4, "pack_s": 0.01,
      "place_s": 0.7, "route_s": 0.3, "pipeline_s": 0.2, "compile_s": 1.61}
FAILED = {"schema": "dse.point/1", "design": "k2", "app": "harris_u2", "unroll": 2,
          "status": "failed", "error": "MappingError: harris_u2 needs 160 PE tiles",
          "area_cells": 80000, "sram_bits": 65536, "tracks": 4}


class _App:
    label = "gaussian"


def _rows():
    a = point_row(Point({"pe": "D2", "tracks": 5}, None, "k1"), _App(), OK)
    b = point_row(Point({"pe": "D1", "tracks": 4}, None, "k2"), _App(), FAILED)
    b["app"] = "harris_u2"
    return [a, b]


def test_parquet_has_the_csv_rows_with_typed_columns(tmp_path):
    rows, grid = _rows(), ["pe", "tracks"]
    write_csv(rows, grid, tmp_path / "results.csv")
    assert write_parquet(rows, grid, tmp_path / "results.parquet") == \
        tmp_path / "results.parquet"
    table = pq.read_table(tmp_path / "results.parquet")
    assert table.column_names == result_columns(grid)
    assert table.num_rows == 2
    types = {f.name: f.type for f in table.schema}
    assert types["pe"] == pa.string() and types["tracks"] == pa.int64()
    assert types["pe_count"] == pa.int64() and types["fmax_mhz"] == pa.float64()
    assert types["energy_proxy"] == pa.int64() and types["error"] == pa.string()
    for col, kind in COLUMN_TYPES.items():
        if col not in grid:
            assert str(types[col]) == {"string": "string", "int64": "int64",
                                       "float64": "double"}[kind], col
    got = table.to_pylist()
    assert got[0]["pe"] == "D2" and got[1]["tracks"] == 4
    assert got[0]["pe_count"] == 18 and got[0]["fmax_mhz"] == 512.25
    assert got[0]["energy_proxy"] == (18 + 2 + 120) * 4235
    assert got[1]["pe_count"] is None and got[1]["energy_proxy"] is None
    assert got[1]["error"] == "MappingError: harris_u2 needs 160 PE tiles"
    # every cell equals the CSV's (an empty CSV cell is a null, except the error string)
    with open(tmp_path / "results.csv", newline="") as fh:
        csv_rows = list(csv.DictReader(fh))
    assert len(csv_rows) == len(got)
    for c, p in zip(csv_rows, got, strict=True):
        assert list(c) == list(p)
        for col, text in c.items():
            v = p[col]
            assert ("" if v is None else str(v)) == text, (col, text, v)


def test_a_bad_value_is_one_config_error(tmp_path):
    rows = _rows()
    rows[0]["pe_count"] = "eighteen"
    with pytest.raises(ConfigError, match=r"column 'pe_count' of row 0 \(design k1, app "
                                          r"gaussian\) is 'eighteen', not a int64 value"):
        write_parquet(rows, ["pe", "tracks"], tmp_path / "results.parquet")
