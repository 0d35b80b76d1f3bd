"""PUB rows whose length is not a multiple of the fetch width (partial chunks, lake.config
module docstring): rows of ``W`` words stored at a padded pitch ``P`` (a multiple of 4),
the last chunk of every row committed as a "virtual" full chunk and served to the reads
as a shorter transpose-buffer run.

Known answers on the golden model, the cycle-accurate Python model and Verilator."""
from __future__ import annotations

import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cgra.errors import ConfigError
from lake.config import configure, controller_programs, decode, output_run_length
from lake.model import run_model
from lake.program import AffineMap, program
from lake_helpers import assert_decoded_and_golden, assert_known_answer, assert_rtl_equals_model
from lake_helpers import assert_streams_match, flat, image, run_three

PUB = "pub_512x64"
FW = 4


def raster(w: int, h: int, pitch: int, row_cycles: int, start: int) -> dict:
    """Write rows of ``w`` words at pitch ``pitch`` (one word per cycle, a row every
    ``row_cycles`` cycles) and read them back in the same order from cycle ``start``."""
    return {"data_in_0": program([w, h], [1, pitch], 0, [1, row_cycles], 0),
            "data_out_0": program([w, h], [1, pitch], 0, [1, row_cycles], start)}


def upsample(w: int, h: int, pitch: int, start: int) -> dict:
    """Upsample x2 of a ``w`` x ``h`` image written at half rate: every output row reads
    its input row with each word twice (0,0,1,1,...); ``pitch`` 0 is the one-row circular
    buffer of mapper.mapping.memory.addressed_tiles, else the whole image at that row pitch."""
    if pitch == 0:
        return {"data_in_0": program([w, h], [1, 0], 0, [2, 4 * w], 0),
                "data_out_0": program([2, w, 2 * h], [0, 1, 0], 0, [1, 2, 2 * w], start)}
    return {"data_in_0": program([w, h], [1, pitch], 0, [2, 4 * w], 0),
            "data_out_0": program([2, w, 2, h], [0, 1, 0, pitch], 0, [1, 2, 2 * w, 4 * w],
                                  start)}


def test_output_run_length_partial_rows():
    # a full run is 4 reads (8 when each word is read twice); the last run of a 31-word row
    # is shorter (3 reads / 6 reads), output_run_length reports the full run
    assert output_run_length(FW, "q", program([31, 8], [1, 32], 0, [1, 31], 7)) == 4
    assert output_run_length(FW, "q", upsample(31, 8, 0, 13)["data_out_0"]) == 8
    assert output_run_length(FW, "q", upsample(5, 4, 8, 20)["data_out_0"].to_dict()) == 8
    # a 2-word read at stride 4 keeps the run form of lake.config (2 reads per wide word)
    assert output_run_length(FW, "q", program([2, 8], [1, 4], 0, [1, 2], 2)) == 2


def test_raster_31_controller_programs_known_values():
    progs = raster(31, 8, 32, 31, 7)
    cps = controller_programs(PUB, progs)
    agg, inp, tb, out = cps["agg0"], cps["in0"], cps["tb0"], cps["out0"]
    assert agg.extents == (8, 8)                          # ceil(31 / 4) chunks per row
    assert agg.schedule.strides == (4, 31)                # one commit per 4 word cycles
    # chunk 0 commits at cycle 4 (after word 3) plus the phase; chunk 7 of row 0 holds
    # words 28..30 and is committed at cycle 4 + 7 * 4 = 32 as if word 31 had come
    assert agg.schedule.offset == 4                       # phase 0
    assert agg.addresses["addr"] == AffineMap((1, 8), 0)  # pitch 32
    assert [s % 2 for s in agg.addresses["half"].strides] == [1, 0]   # 8 chunks: even
    assert inp.extents == (31, 8)
    assert [s % 8 for s in inp.addresses["addr"].strides] == [1, 0]   # slot = i + 32 row
    assert tb.extents == (8, 8)
    assert tb.schedule.strides == (4, 31)
    assert tb.schedule.offset == 7 - 2                    # 2 cycles before the first read
    assert out.extents == (31, 8)
    assert [s % 8 for s in out.addresses["addr"].strides] == [1, 0]
    assert decode(PUB, configure(PUB, progs)) == {p: v.to_dict() for p, v in progs.items()}


def test_odd_chunk_count_known_values():
    # rows of 9 words at pitch 12: 3 chunks per row, so row r starts in half r mod 2 and
    # its slots are i + 12 r mod 8
    progs = raster(9, 4, 12, 9, 8)
    cps = controller_programs(PUB, progs)
    assert cps["agg0"].extents == (3, 4)
    assert [s % 2 for s in cps["agg0"].addresses["half"].strides] == [1, 1]
    assert [s % 8 for s in cps["in0"].addresses["addr"].strides] == [1, 4]
    assert [s % 8 for s in cps["out0"].addresses["addr"].strides] == [1, 4]
    assert decode(PUB, configure(PUB, progs)) == {p: v.to_dict() for p, v in progs.items()}


MODEL_CASES = {
    # name: (programs, image width, height)
    "raster31_back_to_back": (raster(31, 8, 32, 31, 7), 31, 8),
    "raster31_gaps": (raster(31, 8, 32, 40, 7), 31, 8),
    "raster31_pitch40": (raster(31, 4, 40, 31, 7), 31, 4),
    "raster5": (raster(5, 8, 8, 5, 8), 5, 8),
    "raster3": (raster(3, 8, 4, 3, 7), 3, 8),
}


@pytest.mark.parametrize("backend", ["model", "multiplier"])
@pytest.mark.parametrize("case", sorted(MODEL_CASES))
def test_raster_partial_rows_known_answer(case, backend, lake_backend):
    progs, w, h = MODEL_CASES[case]
    img = image(w, h, 31)
    # known answer: word x of row y appears one cycle after its read
    t = progs["data_out_0"].schedule
    expect = [(t.offset + t.strides[1] * y + x + 1, img[y][x]) for y in range(h)
              for x in range(w)]
    assert_known_answer(PUB, progs, {"data_in_0": flat(img)}, lake_backend(backend), expect,
                        stall=[1, 1, 0, 1], seed=7)


UPSAMPLE_CASES = {
    # name: (programs, width, height)
    "up31_row_buffer": (upsample(31, 4, 0, 13), 31, 4),
    "up5_image_pitch8": (upsample(5, 4, 8, 20), 5, 4),
}


@pytest.mark.parametrize("backend", ["model", "multiplier"])
@pytest.mark.parametrize("case", sorted(UPSAMPLE_CASES))
def test_upsample_partial_rows_known_answer(case, backend, lake_backend):
    progs, w, h = UPSAMPLE_CASES[case]
    img = image(w, h, 5)
    off = progs["data_out_0"].schedule.offset
    expect = [(off + 1 + 2 * w * y + x, img[y // 2][x // 2]) for y in range(2 * h)
              for x in range(2 * w)]
    assert_known_answer(PUB, progs, {"data_in_0": flat(img)}, lake_backend(backend), expect,
                        stall=[1, 0, 1, 1, 1], seed=9)


def test_two_outputs_share_the_sram_known_answer(lake_backend):
    """A raster read and an upsample read of the same 31-word rows (pitch 32) through both
    transpose buffers and the single SRAM port."""
    w, h = 31, 4
    img = image(w, h, 11)
    progs = {"data_in_0": program([w, h], [1, 32], 0, [2, 4 * w], 0),
             "data_out_0": program([w, h], [1, 32], 0, [2, 4 * w], 12),
             "data_out_1": program([2, w, 2, h], [0, 1, 0, 32], 0, [1, 2, 2 * w, 4 * w], 13)}
    golden, got = run_three(PUB, progs, {"data_in_0": flat(img)},
                            lake_backend("model"), stall=[1, 1, 0], seed=4)
    assert golden["data_out_0"] == [(13 + 4 * w * y + 2 * x, img[y][x]) for y in range(h)
                                    for x in range(w)]
    assert golden["data_out_1"] == [(14 + 2 * w * y + x, img[y // 2][x // 2])
                                    for y in range(2 * h) for x in range(2 * w)]
    assert_streams_match(golden, got)


RTL_CASES = {**MODEL_CASES, **UPSAMPLE_CASES}


@pytest.mark.parametrize("case", ["raster31_back_to_back", "raster31_gaps", "raster5",
                                  "up31_row_buffer", "up5_image_pitch8"])
def test_partial_rows_rtl_equals_model(case, lake_backend):
    """One Verilator build of the PUB (shared by the session): RTL == Python model ==
    golden on the partial-chunk programs."""
    progs, w, h = RTL_CASES[case]
    img = image(w, h, 13)
    rtl = assert_rtl_equals_model(PUB, progs, {"data_in_0": flat(img)}, lake_backend("rtl"))
    assert len(rtl["data_out_0"]) == progs["data_out_0"].size


def test_rules():
    # innermost write stride must be 1
    with pytest.raises(ConfigError, match=r"port data_in_0: rule 'vectorization'.*stride is "
                                          r"2.*address stride 1"):
        configure(PUB, {"data_in_0": program([31, 8], [2, 64], 0, [1, 31], 0)})
    # rows of 31 words at pitch 31: the pitch rule names the padded pitch 32
    with pytest.raises(ConfigError, match=r"port data_in_0: rule 'pitch' broken.*strides "
                                          r"\[31\].*multiples of 4.*pitch of 32 words"):
        configure(PUB, raster(31, 8, 31, 31, 7))
    # an unaligned offset breaks it too
    with pytest.raises(ConfigError, match=r"port data_in_0: rule 'pitch' broken: address "
                                          r"offset 2"):
        configure(PUB, {"data_in_0": program([31, 8], [1, 32], 2, [1, 31], 0)})
    # a read at an unaligned pitch has no transpose-buffer pattern
    with pytest.raises(ConfigError, match=r"port data_out_0: rule 'vectorization'.*pitch rule"):
        configure(PUB, {"data_out_0": program([31, 8], [1, 31], 0, [1, 31], 7)})
    # 2-word rows written every other cycle, 3 cycles apart: the partial chunk of row r
    # (commit at 3 r + 7, as if words 2, 3 had come at cycles 4, 6) would be read after
    # row r + 2 starts refilling its aggregator half at cycle 3 r + 6
    with pytest.raises(ConfigError, match=r"port data_in_0: rule 'partial-chunk' broken: "
                                          r"chunk 0 .* at cycle 7.*cycle 6.*1 cycles"):
        configure(PUB, {"data_in_0": program([2, 4], [1, 4], 0, [2, 3], 0)})
    configure(PUB, {"data_in_0": program([2, 4], [1, 4], 0, [2, 4], 0)})   # 1 cycle later
    # the partial chunk 28..30 of row 0 (last word at cycle 30) is committed at cycle 32 as
    # if word 31 had come at cycle 31: a read of it at cycle 34 (fetch <= 32) is too soon,
    # at cycle 35 it is fine
    w = program([31, 8], [1, 32], 0, [1, 31], 0)
    with pytest.raises(ConfigError, match=r"port data_out_0: rule 'dependence'.*address 28 "
                                          r"at cycle 34.*cycle 31 when the SRAM holds nothing"):
        configure(PUB, {"data_in_0": w, "data_out_0": program([3], [1], 28, [1], 34)})
    configure(PUB, {"data_in_0": w, "data_out_0": program([3], [1], 28, [1], 35)})


def test_padding_words_never_serve_another_write():
    """data_in_1 writes words 28..31; data_in_0's 31-word row 0 (pitch 32) later commits
    the partial chunk 28..31 with a padding word at 31, so a read of address 31 that must
    return data_in_1's write is refused by name."""
    progs = {"data_in_1": program([4], [1], 28, [1], 0),
             "data_in_0": program([31], [1], 0, [1], 10),
             "data_out_0": program([1], [1], 31, [1], 60)}
    with pytest.raises(ConfigError, match=r"port data_out_0: rule 'dependence'.*address 31.*"
                                          r"write #3 of data_in_1.*padding word"):
        configure(PUB, progs)
    # reading it before the partial commit (cycle >= 42) is fine: fetch at cycle 20
    progs["data_out_0"] = program([1], [1], 31, [1], 22)
    vals = {"data_in_1": [1, 2, 3, 4], "data_in_0": list(range(100, 131))}
    golden, got = run_three(PUB, progs, vals, run_model)
    assert golden["data_out_0"] == [(23, 4)] == got["data_out_0"]


@settings(max_examples=30, deadline=None)
@given(w=st.integers(1, 23), h=st.integers(1, 3), extra=st.integers(0, 1),
       gap=st.integers(0, 5), start=st.integers(2, 30), seed=st.integers(0, 999))
@example(w=1, h=3, extra=0, gap=0, start=3, seed=0)     # one-word rows: 'conflict'
def test_accepted_means_golden(w, h, extra, gap, start, seed):
    """Rows of any width at pitch ``4 * ceil(w / 4)`` (+ 4): whenever configure accepts a
    raster write and read, decode inverts it and the Python model equals the golden model;
    otherwise the refusal names the 'dependence', 'partial-chunk' or 'conflict' rule (the
    example, found by a clean-clone CI run: one-word rows read 3 cycles after their write,
    where the write and the read need the single SRAM port at cycle 1 for every phase)."""
    pitch = FW * (-(-w // FW) + extra)
    progs = raster(w, h, pitch, w + gap, start)
    rng = random.Random(seed)
    vals = [rng.randrange(65536) for _ in range(w * h)]
    try:
        cfg = configure(PUB, progs)
    except ConfigError as exc:
        assert any(f"rule '{r}'" in str(exc) for r in ("dependence", "partial-chunk",
                                                          "conflict")), str(exc)
        return
    assert_decoded_and_golden(PUB, progs, cfg, {"data_in_0": vals}, seed)
