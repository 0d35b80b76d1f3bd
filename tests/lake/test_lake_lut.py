"""ROM / lookup-table mode and config-memory port of the dual-port Lake memory: spec,
config fields, helpers, and the Python model against Verilator on the same records."""
from __future__ import annotations

import dataclasses
import random

import pytest

from cgra.errors import ConfigError, SpecError
from lake.collateral import collateral, spec_hash
from lake.config import config_fields, configure
from lake.lut import LUT_LATENCY, check_table, lut_fields
from lake.model import make_model
from lake.program import program
from lake.spec import preset, simple

PRE = "dualport_2048x16"
BACKENDS = ["model", "rtl"]


def _runner(backend, lake_verilator):
    """run(config, records) -> per-record outputs, on the model or on Verilator."""
    if backend == "rtl":
        return lambda config, records: lake_verilator(PRE).run_records(config, records)

    def run(config, records):
        model = make_model(PRE)
        model.configure(config)
        return [model.step(r) for r in records]
    return run


def _rec(**kw):
    base = {"RESET": 0, "clk_en": 1, "flush": 0, "data_in_0": 0, "config_mem_addr": 0,
            "config_mem_data": 0, "config_mem_write": 0, "config_mem_read": 0}
    return dict(base, **kw)


def _table(n=256, seed=3):
    rng = random.Random(seed)
    return [rng.randrange(1 << 16) for _ in range(n)]


# ------------------------------------------------------------------ spec / fields / helpers
def test_presets_and_lut_field_appended_last():
    assert preset("dualport_2048x16").lut and preset("dualport_1024x32").lut
    assert not preset("pond_32x16").lut and not preset("pub_512x64").lut
    plain = simple("dualport_2048x16", 2048, 16, "sram")          # the spec before LUT
    names = [f.name for f in config_fields(PRE)]
    assert names[:-1] == [f.name for f in config_fields(plain)]
    last = config_fields(PRE)[-1]
    assert (last.name, last.width, last.reset) == ("lut_mode", 1, 0)
    assert "lut_mode" not in {f.name for f in config_fields("pond_32x16")}
    assert "lut_mode" not in {f.name for f in config_fields("pub_512x64")}
    # the encoder leaves LUT mode off; the spec hash covers the flag
    assert configure(PRE, {})["lut_mode"] == 0
    assert spec_hash(preset(PRE)) != spec_hash(dataclasses.replace(preset(PRE), lut=False))


def test_collateral_names_the_lookup_table_mode():
    doc = collateral(PRE)
    assert "lookup_table" in doc["supported_modes"]
    assert doc["lookup_table"] == {"field": "lut_mode", "latency": 1, "words": 2048,
                                   "width": 16, "index_bits": 11, "index_port": "data_in_0",
                                   "output_port": "data_out_0"}
    assert collateral("dualport_1024x32")["lookup_table"]["index_bits"] == 10
    for name in ("pond_32x16", "pub_512x64"):
        assert "lookup_table" not in collateral(name)["supported_modes"]
        assert collateral(name)["lookup_table"] is None


@pytest.mark.parametrize("name", ["pond_32x16", "pub_512x64"])
def test_lut_on_register_or_wide_storage_is_a_spec_error(name):
    with pytest.raises(SpecError, match=f"memory '{name[:4]}.*lut=True needs a non-wide SRAM"):
        dataclasses.replace(preset(name), lut=True).check()


def test_lut_fields_put_both_controllers_idle():
    vals = lut_fields(PRE)
    assert set(vals) == {f.name for f in config_fields(PRE)}
    assert vals["lut_mode"] == 1
    assert vals["in0_enable"] == vals["out0_enable"] == vals["chain_enable"] == 0
    assert LUT_LATENCY == 1
    # in the model: the write controller never writes, data_out_0 follows data_in_0
    model = make_model(PRE)
    model.configure(vals)
    model.preload({5: 111, 6: 222})
    outs = [model.step(_rec(RESET=1, clk_en=0))]
    outs += [model.step(_rec(data_in_0=i)) for i in (5, 6, 7, 5)]
    outs.append(model.step(_rec()))
    assert [(o["valid_out_0"], o["data_out_0"]) for o in outs[1 + LUT_LATENCY:]] == [
        (1, 111), (1, 222), (1, 0), (1, 111)]
    assert model.mem == {5: 111, 6: 222}


def test_check_table_and_lut_fields_errors():
    check_table(PRE, [0, 65535] + [1] * 2046)
    with pytest.raises(ConfigError, match="2049 entries but the storage holds 2048 words"):
        check_table(PRE, [0] * 2049)
    with pytest.raises(ConfigError, match="LUT entry 1 = 65536 does not fit 16 bits"):
        check_table(PRE, [0, 65536])
    with pytest.raises(ConfigError, match="LUT entry 0 = -1 does not fit 16 bits"):
        check_table(PRE, [-1])
    check_table("dualport_1024x32", [(1 << 32) - 1])
    with pytest.raises(ConfigError, match="pond_32x16 has no lookup-table mode"):
        lut_fields("pond_32x16")
    with pytest.raises(ConfigError, match="pub_512x64 has no lookup-table mode"):
        check_table("pub_512x64", [1])


# ------------------------------------------------------------------ model vs Verilator
def _lut_records(table, seed=5):
    """Reset; load ``table`` through the config-memory port (some writes stalled, one
    during reset); read every word back; then LUT lookups with stalls and a flush."""
    rng = random.Random(seed)
    recs = [_rec(RESET=1, clk_en=0, config_mem_write=1, config_mem_addr=0,
                 config_mem_data=table[0])]
    for w in range(1, len(table)):
        recs.append(_rec(clk_en=w % 3 != 0, config_mem_write=1, config_mem_addr=w,
                         config_mem_data=table[w], data_in_0=rng.randrange(1 << 16)))
    for w in range(len(table)):
        recs.append(_rec(clk_en=0, config_mem_read=1, config_mem_addr=w))
    lookups = []
    for k in range(300):
        idx = rng.randrange(len(table)) | (rng.randrange(32) << 11)   # high bits ignored
        en = int(rng.random() > 0.2)
        lookups.append(len(recs))
        recs.append(_rec(clk_en=en, data_in_0=idx))
        if k == 150:
            recs.append(_rec(flush=1, data_in_0=rng.randrange(1 << 16)))
    recs.append(_rec())
    return recs, lookups


def _expected(recs):
    """What the tile shows during each record, from the documented LUT-mode behaviour
    (lut_mode = 1, storage initially 0)."""
    mem: dict[int, int] = {}
    out, valid, data = [], 0, 0
    for r in recs:
        rdata = mem.get(r["config_mem_addr"], 0) if r["config_mem_read"] else 0
        out.append({"data_out_0": data, "valid_out_0": valid, "config_mem_rdata": rdata})
        if r["RESET"] or r["flush"]:
            valid = 0
        elif r["clk_en"]:
            valid, data = 1, mem.get(r["data_in_0"] % 2048, 0)
        if r["config_mem_write"]:
            mem[r["config_mem_addr"]] = r["config_mem_data"]
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_lut_mode_random_table_stalls_and_flush(backend, lake_verilator):
    table = _table()
    recs, lookups = _lut_records(table)
    got = _runner(backend, lake_verilator)(lut_fields(PRE), recs)
    want = _expected(recs)
    keys = ("data_out_0", "valid_out_0", "config_mem_rdata")
    assert [{k: g[k] for k in keys} for g in got] == want
    # read-back of every word through the config-memory port
    first_read = len(table)
    assert [g["config_mem_rdata"] for g in got[first_read:first_read + 256]] == table
    # known answers: every enabled lookup shows table[index] LUT_LATENCY cycle later
    done = [k for k in lookups if recs[k]["clk_en"]]
    assert len(done) > 200
    for k in done:
        assert got[k + LUT_LATENCY]["data_out_0"] == table[recs[k]["data_in_0"] % 2048]
        assert got[k + LUT_LATENCY]["valid_out_0"] == 1
    # after the flush record valid_out_0 is 0 until the next enabled cycle
    fl = next(i for i, r in enumerate(recs) if r["flush"])
    assert got[fl + 1]["valid_out_0"] == 0
    # a stall holds data_out_0
    st = next(i for i in lookups if not recs[i]["clk_en"] and recs[i - 1]["clk_en"]
              and not recs[i - 1]["flush"])
    assert got[st + 1]["data_out_0"] == got[st]["data_out_0"] == table[
        recs[st - 1]["data_in_0"] % 2048]


@pytest.mark.parametrize("backend", BACKENDS)
def test_config_memory_feeds_normal_mode_reads(backend, lake_verilator):
    """lut_mode = 0: words written through the config-memory port are what a read program
    streams out; the write controller and the config write share the port (config wins)."""
    table = _table(16, seed=11)
    progs = {"data_out_0": program([16], [1], 0, [1], 4)}       # read 0..15, cycles 4..19
    config = configure(PRE, progs)
    recs = [_rec(RESET=1, clk_en=0)]
    recs += [_rec(clk_en=0, config_mem_write=1, config_mem_addr=w, config_mem_data=v)
             for w, v in enumerate(table)]
    recs.append(_rec(flush=1, clk_en=0))
    recs += [_rec(data_in_0=0xBEEF) for _ in range(24)]
    got = _runner(backend, lake_verilator)(config, recs)
    start = len(table) + 2
    stream = [(i - start, g["data_out_0"]) for i, g in enumerate(got)
              if i >= start and g["valid_out_0"]]
    assert stream == [(5 + k, v) for k, v in enumerate(table)]
    assert all(g["config_mem_rdata"] == 0 for g in got)       # no config read strobe


@pytest.mark.parametrize("backend", BACKENDS)
def test_config_write_has_priority_over_write_controller(backend, lake_verilator):
    progs = {"data_in_0": program([4], [1], 0, [1], 0)}        # writes 0..3 at cycles 0..3
    config = configure(PRE, progs)
    recs = [_rec(RESET=1, clk_en=0)]
    # cycle 1: the controller writes word 1 = 0x1111, the config port writes word 9
    recs += [_rec(data_in_0=0x1000 + 0x111 * c, config_mem_write=int(c == 1),
                  config_mem_addr=9, config_mem_data=0x9999) for c in range(4)]
    recs += [_rec(clk_en=0, config_mem_read=1, config_mem_addr=w) for w in (0, 1, 2, 3, 9)]
    got = _runner(backend, lake_verilator)(config, recs)
    assert [g["config_mem_rdata"] for g in got[-5:]] == [0x1000, 0, 0x1222, 0x1333, 0x9999]
