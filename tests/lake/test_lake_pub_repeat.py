"""PUB output ports that repeat or reorder the words of a wide word (issue 14, paper Table 6
"upsample"): the transpose buffer serves each fetched wide word to one run of consecutive
reads; the ``out<q>`` slot generator wraps modulo ``2 * fetch_width``.

Known answers on the golden model, the cycle-accurate Python model and Verilator."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgra.errors import ConfigError
from lake.config import configure, controller_programs, decode, output_run_length
from lake.golden import simulate
from lake.model import make_stimulus, run_model
from lake.program import program
from lake_helpers import assert_streams_match, run_three

PUB = "pub_512x64"
BACKENDS = ["model", "multiplier", "rtl"]
W, H = 16, 4        # input image; the output is 2W x 2H


def upsample_programs(offset: int = 13) -> dict:
    """The shape memory mapping gives upsample x2 (mapper.mapping.memory.addressed_tiles): the
    input row is written at half rate into a W-word circular row buffer, every output row
    reads it with each word twice (addresses 0,0,1,1,...), each input row serves 2 output
    rows."""
    return {"data_in_0": program([W, H], [1, 0], 0, [2, 4 * W], 0),
            "data_out_0": program([2, W, 2 * H], [0, 1, 0], 0, [1, 2, 2 * W], offset)}


def image() -> list[list[int]]:
    rng = random.Random(14)
    return [[rng.randrange(65536) for _ in range(W)] for _ in range(H)]


def test_output_run_length():
    assert output_run_length(4, "q", program([64], [1], 0, [1], 0)) == 4
    assert output_run_length(4, "q", upsample_programs()["data_out_0"]) == 8
    # upsample x4: each word 4 times -> one fetch per 16 reads
    assert output_run_length(4, "q", program([4, 8], [0, 1], 0, [1, 4], 2)) == 16
    # every wide word read backwards (3, 2, 1, 0, 7, 6, ...): run form
    assert output_run_length(4, "q", program([4, 8], [-1, 4], 3, [1, 4], 2)) == 4
    # one word of each wide word (stride 4): a run of one read
    assert output_run_length(4, "q", program([8], [4], 1, [1], 2)) == 1
    assert output_run_length(4, "q", upsample_programs()["data_out_0"].to_dict()) == 8


def test_upsample_controller_programs_known_values():
    progs = upsample_programs()
    cps = controller_programs(PUB, progs)
    tb, out = cps["tb0"], cps["out0"]
    assert tb.extents == (W // 4, 2 * H)                   # one fetch per 4 input words
    assert tb.schedule.strides == (8, 2 * W)               # every 8 output cycles
    assert tb.schedule.offset == 13 - 2                    # 2 cycles before the first read
    assert tb.addresses["addr"].strides == (1, 0)
    assert [s % 2 for s in tb.addresses["half"].strides] == [1, 0]   # runs alternate halves
    assert out.extents == (2, W, 2 * H)
    assert [s % 8 for s in out.addresses["addr"].strides] == [0, 1, 0]  # slot = word addr mod 8
    assert out.addresses["addr"].offset == 0
    cfg = configure(PUB, progs)
    assert decode(PUB, cfg) == {p: v.to_dict() for p, v in progs.items()}


@pytest.mark.parametrize("backend", BACKENDS)
def test_upsample_known_answer(backend, lake_backend):
    img = image()
    progs = upsample_programs()
    stream = [v for row in img for v in row]
    golden, got = run_three(PUB, progs, {"data_in_0": stream}, lake_backend(backend),
                            stall=[1, 1, 0, 1, 1, 1, 0], seed=3)
    # known answer: output pixel (x, y) = img[y // 2][x // 2] at cycle 13 + 32 y + x + 1
    expect = [(14 + 2 * W * y + x, img[y // 2][x // 2]) for y in range(2 * H)
              for x in range(2 * W)]
    assert golden["data_out_0"] == expect
    assert_streams_match(golden, got)
    assert got["data_out_0"] == expect


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_reordering_outputs_known_answer(backend, lake_backend):
    """data_out_0: each word 4 times (a run of 16 reads per wide word); data_out_1: every
    wide word read backwards (3, 2, 1, 0, 7, ...). Both share the single SRAM port with the
    aggregator commits of data_in_0."""
    n = 32
    vals = [(7919 * k + 11) % 65536 for k in range(n)]
    progs = {"data_in_0": program([n], [1], 0, [1], 0),
             "data_out_0": program([4, n], [0, 1], 0, [1, 4], 40),
             "data_out_1": program([4, n // 4], [-1, 4], 3, [1, 4], 50)}
    golden, got = run_three(PUB, progs, {"data_in_0": vals}, lake_backend(backend),
                            stall=[1, 0, 1, 1], seed=5)
    assert golden["data_out_0"] == [(41 + k, vals[k // 4]) for k in range(4 * n)]
    rev = [4 * (k // 4) + 3 - k % 4 for k in range(n)]
    assert golden["data_out_1"] == [(51 + k, vals[rev[k]]) for k in range(n)]
    assert_streams_match(golden, got)


def test_rules():
    # stride 3 (not a divisor of the fetch width) with a run crossing wide words: refused
    # by name (stride 2 is served since test_lake_pub_strided.py)
    with pytest.raises(ConfigError, match=r"port data_out_0: rule 'vectorization'.*words 0\.\.21"):
        configure(PUB, {"data_out_0": program([2, 8], [0, 3], 0, [1, 2], 4)})
    # the fetch of the first run must happen 2 cycles before its first read
    with pytest.raises(ConfigError, match=r"port data_out_0: rule 'prefetch'.*cycle 1"):
        configure(PUB, {"data_out_0": upsample_programs(offset=1)["data_out_0"]})
    # read too soon after the write: chunk 0 (written at cycles 0, 2, 4, 6) is committed at
    # cycle 7, the run reading it from cycle 5 would be fetched at cycle 3
    with pytest.raises(ConfigError, match=r"port data_out_0: rule 'dependence'.*address 0 "
                                          r"at cycle 5"):
        configure(PUB, upsample_programs(offset=5))
    # a wide word whose reads are not one run (0,1,2,3 then 0 again after word 4) is
    # fine as two runs: runs may revisit a wide word
    configure(PUB, {"data_out_0": program([4, 2, 2], [1, 4, 0], 0, [1, 4, 8], 2)})


@settings(max_examples=40, deadline=None)
@given(rep=st.integers(1, 3), wide=st.integers(1, 4), rows=st.integers(1, 3),
       row_rep=st.integers(1, 2), start=st.integers(2, 40), seed=st.integers(0, 999))
def test_accepted_means_golden(rep, wide, rows, row_rep, start, seed):
    """Whenever configure accepts an upsample-style read (each word ``rep`` times, each row
    ``row_rep`` times) of a raster written at full rate, the Python model equals the golden
    model; otherwise the refusal names the 'dependence' rule."""
    w = 4 * wide
    progs = {"data_in_0": program([w, rows], [1, w], 0, [1, w], 0),
             "data_out_0": program([rep, w, row_rep, rows], [0, 1, 0, w], 0,
                                   [1, rep, rep * w, rep * w * row_rep], start)}
    rng = random.Random(seed)
    vals = [rng.randrange(65536) for _ in range(w * rows)]
    try:
        cfg = configure(PUB, progs)
    except ConfigError as exc:
        assert "port data_out_0: rule 'dependence'" in str(exc)
        return
    assert decode(PUB, cfg) == {p: v.to_dict() for p, v in progs.items()}
    golden = simulate(progs, {"data_in_0": vals})
    stim = make_stimulus(PUB, progs, {"data_in_0": vals}, stall=[1, 1, 0], seed=seed)
    assert_streams_match(golden, run_model(PUB, cfg, stim))
