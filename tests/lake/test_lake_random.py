"""Random legal port programs (up to 4 dimensions, random stall patterns) agree across the
golden model, the cycle-accurate Python model and the RTL (one Verilator build per preset,
reconfigured for every example)."""
from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cgra.errors import ConfigError
from lake.affine import affine_range, strides_from_deltas
from lake.config import configure, decode
from lake.golden import simulate
from lake.model import make_stimulus
from lake.program import PortProgram, delay_line, program
from lake_helpers import assert_streams_match

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.filter_too_much,
                                                      HealthCheck.too_slow])
stalls = st.lists(st.integers(0, 1), min_size=1, max_size=6).filter(any)


@st.composite
def affine_program(draw, region: int, max_dims: int = 4, start: tuple[int, int] = (0, 20),
                   inner_unit: int = 0, align: int = 1):
    """A legal program whose addresses lie in [0, region). ``inner_unit`` > 0 forces a
    vectorisable shape: innermost extent ``align * k``, stride 1, outer strides and offset
    multiples of ``align``."""
    d = draw(st.integers(1, max_dims))
    ext = [draw(st.integers(1, 4)) for _ in range(d)]
    astr = [draw(st.integers(-6, 6)) for _ in range(d)]
    if inner_unit:
        ext[0] = align * draw(st.integers(1, 3))
        astr = [1] + [align * draw(st.integers(-4, 4)) for _ in range(d - 1)]
    sdel = [draw(st.integers(1, 4)) for _ in range(d)]
    sstr = strides_from_deltas(ext, sdel)
    lo, hi = affine_range(ext, astr, 0)
    assume(hi - lo < region - align)
    slack = region - 1 - (hi - lo)
    off = -lo + draw(st.integers(0, slack))
    if inner_unit:
        off = off - off % align
        if off + lo < 0:
            off += align
        assume(off + hi < region)
    return program(ext, astr, off, sstr, draw(st.integers(*start)))


@st.composite
def simple_case(draw, region: int):
    """(programs, inputs, stall) for a 1-in / 1-out memory with ``region`` words."""
    linear = draw(st.booleans())
    if linear:
        n = draw(st.integers(1, region))
        w = program([n], [1], 0, [draw(st.integers(1, 2))], draw(st.integers(0, 5)))
    else:
        w = draw(affine_program(region))
    r = draw(affine_program(region, start=(0, w.last_cycle() + 8)))
    seed = draw(st.integers(0, 2 ** 16))
    rng = random.Random(seed)
    ins = {"data_in_0": [rng.randrange(65536) for _ in range(w.size)]}
    return {"data_in_0": w, "data_out_0": r}, ins, draw(stalls), seed


@st.composite
def pub_case(draw):
    """(programs, inputs, stall) for the PUB: either delay lines (concurrent write and
    read streams) or vectorisable affine programs read after the writes."""
    rng = random.Random(draw(st.integers(0, 2 ** 16)))
    progs: dict[str, PortProgram] = {}
    if draw(st.booleans()):
        n = 4 * draw(st.integers(4, 40))
        d0 = draw(st.integers(8, 80))
        w, r0 = delay_line(d0, n, 1024, start=draw(st.integers(0, 6)), align=4)
        progs = {"data_in_0": w, "data_out_0": r0}
        if draw(st.booleans()):
            d1 = draw(st.integers(8, 80))
            _, r1 = delay_line(d1, n, 1024, start=w.schedule.offset, align=4)
            if r1.extents == w.extents:
                progs["data_out_1"] = r1
    else:
        n_in = draw(st.integers(1, 2))
        last = 0
        for i in range(n_in):
            w = draw(affine_program(512, inner_unit=1, align=4, start=(0, 12)))
            d = w.to_dict()
            d["address"]["offset"] += 1024 * i
            progs[f"data_in_{i}"] = PortProgram.from_dict(d)
            last = max(last, w.last_cycle())
        for q in range(draw(st.integers(1, 2))):
            src = draw(st.integers(0, n_in - 1))
            r = draw(affine_program(512, inner_unit=1, align=4,
                                    start=(last + 12, last + 30)))
            d = r.to_dict()
            d["address"]["offset"] += 1024 * src
            progs[f"data_out_{q}"] = PortProgram.from_dict(d)
    try:
        configure("pub_512x64", progs)
    except ConfigError as exc:
        assume("conflict" not in str(exc))
        raise
    ins = {p: [rng.randrange(65536) for _ in range(v.size)] for p, v in progs.items()
           if p.startswith("data_in")}
    return progs, ins, draw(stalls), rng.randrange(1000)


def _check(preset, case, run):
    progs, ins, stall, seed = case
    cfg = configure(preset, progs)
    assert decode(preset, cfg) == {p: v.to_dict() for p, v in progs.items()}
    golden = simulate(progs, ins, read_latency=1)
    stim = make_stimulus(preset, progs, ins, stall=stall, seed=seed)
    assert_streams_match(golden, run(preset, cfg, stim))


@pytest.mark.parametrize("backend,n", [("model", 60), ("multiplier", 20), ("rtl", 25)])
def test_random_dual_port(backend, n, lake_backend):
    run = lake_backend(backend)

    @settings(max_examples=n, **SETTINGS)
    @given(simple_case(64))
    def check(case):
        _check("dualport_2048x16", case, run)

    check()


@pytest.mark.parametrize("backend,n", [("model", 60), ("multiplier", 20), ("rtl", 25)])
def test_random_pond(backend, n, lake_backend):
    run = lake_backend(backend)

    @settings(max_examples=n, **SETTINGS)
    @given(simple_case(32))
    def check(case):
        _check("pond_32x16", case, run)

    check()


@pytest.mark.parametrize("backend,n", [("model", 40), ("multiplier", 15), ("rtl", 20)])
def test_random_pub(backend, n, lake_backend):
    run = lake_backend(backend)

    @settings(max_examples=n, **SETTINGS)
    @given(pub_case())
    def check(case):
        _check("pub_512x64", case, run)

    check()
