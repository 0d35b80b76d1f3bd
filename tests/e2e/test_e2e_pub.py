"""The physical unified buffer (wide-fetch PUB MEM tiles, configs/small_pub.toml) on the
generated RTL: rows that are not whole wide words (the Laplacian pyramid's 31- and 15-word
levels, stored at a padded pitch), reads that start inside a wide word (upsample shifted by
one pixel; a multi-row circular buffer on the PUB: tests/e2e/test_e2e_circular_rows.py),
and two buffers sharing one tile's two write ports
(each port's program shifted by its own input latency). Each runs bit-exact against numpy
and Halide on Verilator."""
from __future__ import annotations

import pytest

from mapper.frontend.dsl import Func, Input, Pipeline, UInt16, Var


def _up_shift(width: int = 32, height: int = 16, unroll: int = 1) -> Pipeline:
    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (width, height))
    up = Func("up")
    up[x, y] = inp[x / 2, y / 2] * 3 + inp[x / 2 + 1, y / 2]
    return Pipeline(up, "up_shift", unroll)


def _two_buffers(width: int = 32, height: int = 32, unroll: int = 1) -> Pipeline:
    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (width, height))
    a = Func("a")
    a[x, y] = inp[x, y] * 3
    b = Func("b")
    b[x, y] = inp[x, y] + 7
    out = Func("o")
    out[x, y] = a[x, y] + a[x, y + 2] + b[x, y] + b[x, y + 2]
    return Pipeline(out, "two_buffers", unroll)


@pytest.fixture(scope="module")
def pub_run(pub_small_design, tmp_path_factory):
    from mapper.params import AppParams, RunParams
    from mapper.flow import run_app
    from mapper.sim.verilator import build_harness

    build_harness(pub_small_design)
    out = tmp_path_factory.mktemp("pub_apps")

    def run(app: str, w: int, h: int):
        return run_app(RunParams(AppParams(app, w, h), pub_small_design, out / app))

    return run


def _mems(r) -> dict[str, dict]:
    return {n: i.config for n, i in r.flow.pipelined.packed.instances.items()
            if i.kind == "mem"}


def test_laplacian_pyramid_rows_at_a_padded_pitch(pub_run):
    r = pub_run("laplacian_pyramid", 64, 64)
    assert r.report["match"] == {"numpy": True, "halide": True}
    mems = _mems(r)
    assert len(mems) == 7                       # 9 on the dual-port MEM
    # the addressed one-row buffers of the 31-, 30- and 15-word levels: whole wide words
    rows = sorted((c["ports"]["data_in_0"]["extents"][0], c["segments"][0]["words"])
                  for c in mems.values() if c["segments"][0].get("kind") == "addressed")
    assert rows == [(15, 16), (30, 32), (31, 32)]


def test_unaligned_reads(pub_run, monkeypatch):
    from mapper import apps

    monkeypatch.setitem(apps.APPS, "up_shift", _up_shift)
    r = pub_run("up_shift", 32, 16)
    assert r.report["match"] == {"numpy": True, "halide": True}
    (cfg,) = _mems(r).values()                  # both reads on one PUB
    assert cfg["ports"]["data_out_1"]["address"]["offset"] % 4 == 1


def test_upsample_bilinear_on_the_pub(pub_run):
    """(x + 1)/2 reads on the PUB: each read program starts one x early, in the row's idle
    cycle, so it reads 0,0,1,1,... (transpose-buffer runs): 2 PUB tiles, bit-exact."""
    r = pub_run("upsample_bilinear", 64, 64)
    assert r.report["match"] == {"numpy": True, "halide": True}
    mems = _mems(r)
    assert len(mems) == 2 and all(len(c["ports"]) == 3 for c in mems.values())


def test_two_buffers_share_a_tile_with_their_own_input_latency(pub_run, monkeypatch):
    """Buffers a and b on one PUB (write ports data_in_0 / data_in_1): the pipelining pass
    shifts each write port by its own input's latency and each read port by its segment's
    (before the fix both followed the latest input, and the RTL was wrong)."""
    from mapper import apps

    monkeypatch.setitem(apps.APPS, "two_buffers", _two_buffers)
    r = pub_run("two_buffers", 32, 32)
    assert r.report["match"] == {"numpy": True, "halide": True}
    (name, cfg), = _mems(r).items()
    before = r.flow.packed.instances[name].config["ports"]
    sigma = r.flow.pipelined.sigma_in
    shift = {p: cfg["ports"][p]["schedule"]["offset"] - before[p]["schedule"]["offset"]
             for p in cfg["ports"]}
    for seg in cfg["segments"]:
        k = seg["in_port"]
        assert shift[f"data_in_{k}"] == sigma[(name, f"data_in_{k}")]
        assert all(shift[f"data_out_{q}"] == shift[f"data_in_{k}"] for q in seg["out_ports"])
    assert len(cfg["segments"]) == 2
