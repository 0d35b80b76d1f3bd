"""PUB output ports whose reads start in the middle of a wide word (unaligned offset,
lake.config module docstring "Unaligned output runs"): the transpose-buffer runs follow the
aligned wide words, the slot generator gives ``shift + i + 8 k mod 8``, and the first wide
word of every row is fetched ``t_j * shift`` cycles early (a virtual full run).

Known answers on the golden model, the cycle-accurate Python model and Verilator."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgra.errors import ConfigError
from lake.config import configure, controller_programs, decode, output_run_length
from lake.model import run_model
from lake.program import AffineMap, program
from lake_helpers import assert_decoded_and_golden, assert_known_answer, assert_rtl_equals_model
from lake_helpers import assert_streams_match, flat, image, run_three

PUB = "pub_512x64"
FW = 4
W, H = 32, 16          # the input image: rows of 32 words at pitch 32


def write_half_rate() -> dict:
    """Rows of 32 words, one word every 2nd cycle, a row every 128 cycles (the compiler's
    upsample input rate)."""
    return program([W, H], [1, W], 0, [2, 4 * W], 0)


def upsample_shifted(shift: int, start: int) -> dict:
    """out(x, y) = in(x // 2 + shift, y // 2) for x < 2 * (32 - shift): each word twice,
    each row twice (extents [2, 32 - shift, 2, 16]); ``shift`` 1 reads 31 words."""
    n = W - shift
    return {"data_in_0": write_half_rate(),
            "data_out_0": program([2, n, 2, H], [0, 1, 0, W], shift, [1, 2, 2 * W, 4 * W],
                                  start)}


def raster_shifted(shift: int, start: int, full_rate: bool = False) -> dict:
    """Words shift..31 of every row, read at the write rate."""
    n = W - shift
    if full_rate:
        return {"data_in_0": program([W, H], [1, W], 0, [1, W], 0),
                "data_out_0": program([n, H], [1, W], shift, [1, W], start)}
    return {"data_in_0": write_half_rate(),
            "data_out_0": program([n, H], [1, W], shift, [2, 4 * W], start)}


def minimal_start(make, lo: int = 2, hi: int = 60) -> int:
    """Smallest read schedule offset configure accepts."""
    for s in range(lo, hi):
        try:
            configure(PUB, make(s))
            return s
        except ConfigError:
            continue
    raise AssertionError("no legal start")


def expect_upsample(img, shift: int, start: int) -> list[tuple[int, int]]:
    n = W - shift
    return [(start + 1 + 2 * W * y + x, img[y // 2][x // 2 + shift]) for y in range(2 * H)
            for x in range(2 * n)]


def expect_raster(img, shift: int, start: int, period: int, rate: int):
    return [(start + 1 + period * y + rate * x, img[y][x + shift]) for y in range(H)
            for x in range(W - shift)]


def test_output_run_length_unaligned():
    # the runs follow the aligned wide words: full runs of 4 (raster) / 8 (upsample) reads
    assert output_run_length(FW, "q", raster_shifted(1, 12)["data_out_0"]) == 4
    assert output_run_length(FW, "q", upsample_shifted(1, 12)["data_out_0"]) == 8
    assert output_run_length(FW, "q", upsample_shifted(3, 16)["data_out_0"].to_dict()) == 8
    # reads inside one wide word keep the run form (words 1, 2 of every wide word)
    assert output_run_length(FW, "q", program([2, 8], [1, 4], 1, [1, 2], 2)) == 2


def test_upsample_shifted_controller_programs_known_values():
    progs = upsample_shifted(1, 12)
    cps = controller_programs(PUB, progs)
    tb, out, agg = cps["tb0"], cps["out0"], cps["agg0"]
    assert agg.schedule == AffineMap((8, 128), 7)           # chunk 0 committed at cycle 7
    assert tb.extents == (8, 2, H)                          # 8 wide words per row, 2 passes
    assert tb.schedule.strides == (8, 2 * W, 4 * W)
    # the first wide word (words 0..3, word 0 never read) is fetched as if word 0 were read
    # at cycle 12 - 2: at 12 - 2 - 2 = 8, one cycle after its commit
    assert tb.schedule.offset == 8
    assert tb.addresses["addr"] == AffineMap((1, 0, 8), 0)
    assert [s % 2 for s in tb.addresses["half"].strides] == [1, 0, 0]
    assert out.extents == (2, W - 1, 2, H)
    # slot = 1 + i + 32 * pass mod 8: words 1..31 -> slots 1..7, 0..7, 0..7, 0..7
    assert out.addresses["addr"].offset == 1
    assert [s % 8 for s in out.addresses["addr"].strides] == [0, 1, 0, 0]
    assert decode(PUB, configure(PUB, progs)) == {p: v.to_dict() for p, v in progs.items()}


def test_raster_shifted_controller_programs_known_values():
    cps = controller_programs(PUB, raster_shifted(1, 12))
    assert cps["tb0"].extents == (8, H)
    assert cps["tb0"].schedule == AffineMap((8, 4 * W), 8)
    assert cps["out0"].addresses["addr"].offset == 1
    progs = raster_shifted(3, 16)
    cps = controller_programs(PUB, progs)
    assert cps["tb0"].schedule == AffineMap((8, 4 * W), 8)  # 16 - 2 - 2 * 3
    assert cps["out0"].addresses["addr"].offset == 3
    assert decode(PUB, configure(PUB, progs)) == {p: v.to_dict() for p, v in progs.items()}


@pytest.mark.parametrize("shift,raster_half,upsample,raster_full", [
    (1, 12, 12, 8), (2, 14, 14, 9), (3, 16, 16, 10)])
def test_minimal_read_start(shift, raster_half, upsample, raster_full):
    """The first read of a row comes t_w * 3 + 4 + t_j * shift cycles after the write of
    the row's word 0 at the earliest (t_w, t_j: write / read cycles per word): the same
    latency as an aligned read (10 at half rate, 7 at full rate) measured from the write
    of the word it reads first."""
    assert minimal_start(lambda s: raster_shifted(0, s)) == 10
    assert minimal_start(lambda s: raster_shifted(0, s, full_rate=True)) == 7
    assert minimal_start(lambda s: raster_shifted(shift, s)) == raster_half == 10 + 2 * shift
    assert minimal_start(lambda s: upsample_shifted(shift, s)) == upsample == 10 + 2 * shift
    assert minimal_start(lambda s: raster_shifted(shift, s, full_rate=True)) == raster_full
    assert raster_full == 7 + shift


CASES = {
    # name: (programs, expected stream builder)
    "upsample_shift1": (upsample_shifted(1, 12), lambda img: expect_upsample(img, 1, 12)),
    "raster_shift1": (raster_shifted(1, 12),
                      lambda img: expect_raster(img, 1, 12, 4 * W, 2)),
    "upsample_shift2": (upsample_shifted(2, 14), lambda img: expect_upsample(img, 2, 14)),
    "upsample_shift3": (upsample_shifted(3, 16), lambda img: expect_upsample(img, 3, 16)),
    "raster_shift2": (raster_shifted(2, 14), lambda img: expect_raster(img, 2, 14, 4 * W, 2)),
    "raster_shift3_full_rate": (raster_shifted(3, 10, full_rate=True),
                                lambda img: expect_raster(img, 3, 10, W, 1)),
}


@pytest.mark.parametrize("backend", ["model", "multiplier"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_unaligned_known_answer(case, backend, lake_backend):
    progs, expect = CASES[case]
    img = image(W, H, 41)
    assert_known_answer(PUB, progs, {"data_in_0": flat(img)}, lake_backend(backend),
                        expect(img), stall=[1, 1, 0, 1, 1, 1, 0], seed=3)


@pytest.mark.parametrize("case", ["upsample_shift1", "raster_shift1", "upsample_shift3"])
def test_unaligned_rtl_equals_model(case, lake_backend):
    """One Verilator build of the PUB (shared by the session): RTL == Python model ==
    golden on the unaligned reads (the RTL is unchanged: only the configuration)."""
    progs, expect = CASES[case]
    img = image(W, H, 43)
    rtl = assert_rtl_equals_model(PUB, progs, {"data_in_0": flat(img)}, lake_backend("rtl"))
    assert rtl["data_out_0"] == expect(img)


def test_rules():
    # one cycle too soon: word 1 is read at cycle 11, its wide word is committed at cycle
    # 7 and would be fetched at cycle 11 - 2 - 2 = 7 (the SRAM port is taken) or, one phase
    # earlier, at cycle 6 before the commit
    with pytest.raises(ConfigError, match=r"port data_out_0: rule 'dependence'.*address 1 "
                                          r"at cycle 11.*fetches its 4-word chunk at cycle 6 "
                                          r"when the SRAM holds nothing"):
        configure(PUB, upsample_shifted(1, 11))
    # the first wide word of an unaligned read is fetched t_j * shift + 2 cycles early
    with pytest.raises(ConfigError, match=r"port data_out_0: rule 'prefetch'.*cycle 2.*1 "
                                          r"words into.*at cycle >= 3"):
        configure(PUB, {"data_out_0": program([6], [1], 1, [1], 2)})
    configure(PUB, {"data_out_0": program([6], [1], 1, [1], 3)})
    with pytest.raises(ConfigError, match=r"rule 'prefetch'.*at cycle >= 8"):
        configure(PUB, {"data_out_0": program([2, 6], [0, 1], 3, [1, 2], 7)})
    # 31 words from word 2, each twice, one pass every 64 cycles: the last wide word of a
    # pass (word 32 alone) and the early first wide word of the next pass would be fetched
    # in the same cycle
    bad = {"data_in_0": write_half_rate(),
           "data_out_0": program([2, 31, 2, H], [0, 1, 0, W], 2, [1, 2, 2 * W, 4 * W], 20)}
    with pytest.raises(ConfigError, match=r"port data_out_0: rule 'unaligned-run' broken: "
                                          r"the reads start 2 words into a 4-word wide word.*"
                                          r"fetched 4 cycles earlier.*run 9 at cycle 78.*run 8 "
                                          r"at cycle 78.*at least 1 cycles.*multiple of 4"):
        configure(PUB, bad)
    # back-to-back passes of 3 words from word 3 (wide words 0 and 1): the early fetch of
    # the next pass would overtake the fetch of the last wide word
    with pytest.raises(ConfigError, match=r"rule 'unaligned-run'.*at least 3 cycles"):
        configure(PUB, {"data_out_0": program([2, 8], [1, 4], 3, [1, 2], 20)})
    configure(PUB, {"data_out_0": program([2, 8], [1, 4], 3, [1, 5], 20)})
    # the pitch rule still holds for the outer strides
    with pytest.raises(ConfigError, match=r"port data_out_0: rule 'vectorization'.*pitch "
                                          r"rule; the offset may be unaligned"):
        configure(PUB, {"data_out_0": program([31, 8], [1, 31], 1, [1, 31], 7)})


REFUSALS = ("'dependence'", "'unaligned-run'", "'conflict'", "'prefetch'")


@settings(max_examples=60, deadline=None)
@given(shift=st.integers(0, 3), w=st.integers(1, 14), rep=st.integers(1, 2),
       extra=st.integers(0, 1), h=st.integers(1, 3), gap=st.integers(0, 6),
       late=st.integers(-4, 12), seed=st.integers(0, 999))
def test_accepted_means_golden(shift, w, rep, extra, h, gap, late, seed):
    """Rows written at full rate at a pitch of whole wide words (``extra`` more than
    needed), read from word ``shift`` for ``w`` words, each word ``rep`` times, one row
    every ``rep * w + gap`` cycles, starting ``late`` cycles after the earliest start the
    latency rule suggests: whenever configure accepts, decode inverts it and the Python
    model equals the golden model; otherwise the refusal names one of the timing rules."""
    pitch = FW * (-(-(shift + w) // FW) + extra)
    period = max(rep * w + gap, pitch)
    start = max(0, 7 + rep * shift + late)
    progs = {"data_in_0": program([pitch, h], [1, pitch], 0, [1, period], 0),
             "data_out_0": program([rep, w, h], [0, 1, pitch], shift, [1, rep, period],
                                   start)}
    rng = random.Random(seed)
    vals = [rng.randrange(65536) for _ in range(pitch * h)]
    try:
        cfg = configure(PUB, progs)
    except ConfigError as exc:
        assert any(f"port data_out_0: rule {r}" in str(exc) for r in REFUSALS) or (
            "ports data_in_0 and data_out_0: rule 'conflict'" in str(exc)), str(exc)
        return
    golden = assert_decoded_and_golden(PUB, progs, cfg, {"data_in_0": vals}, seed)
    assert all(v is not None for _, v in golden["data_out_0"])


def test_grid_of_unaligned_shapes():
    """The property above is not vacuous: on a grid of its shapes (two 13-or-fewer-word
    rows, shift 1..3, rep 1..2) at the start the latency rule gives (7 + rep * shift),
    every read with ``rep * shift + 2`` idle cycles between rows is accepted and equals
    golden on the model; with only 2 idle cycles exactly the two 3-word upsampled rows
    from word 2 or 3 (wide words 0 and 1, the last one partial) are refused by
    'unaligned-run'."""
    refused = {}
    for loose in (True, False):
        for shift in (1, 2, 3):
            for w in (1, 3, 5, 8, 13):
                for rep in (1, 2):
                    pitch = FW * -(-(shift + w) // FW)
                    idle = rep * shift + 2 if loose else 2
                    period = max(rep * w + idle, pitch)
                    progs = {"data_in_0": program([pitch, 2], [1, pitch], 0, [1, period], 0),
                             "data_out_0": program([rep, w, 2], [0, 1, pitch], shift,
                                                   [1, rep, period], 7 + rep * shift)}
                    try:
                        configure(PUB, progs)
                    except ConfigError as exc:
                        refused[(loose, shift, w, rep)] = str(exc).split("'")[1]
                        continue
                    vals = list(range(1000, 1000 + 2 * pitch))
                    golden, got = run_three(PUB, progs, {"data_in_0": vals}, run_model)
                    assert_streams_match(golden, got)
                    assert len(got["data_out_0"]) == 2 * rep * w
    assert refused == {(False, 2, 3, 2): "unaligned-run", (False, 3, 3, 2): "unaligned-run"}
