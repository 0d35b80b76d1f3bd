"""Multi-row circular addressed buffers (mapper.mapping.memory.circular_rows, mapper.mapping.polyhedral.linearize
``rows`` / ``overrun``): a read whose distance varies and spans more than one producer row
keeps ``R`` rows, addresses ``(x - x0) + W * ((y - y0) mod R)``, instead of the whole image.
Checked against a known answer and, on random multi-rate programs, by simulating the
generated write and read programs on a buffer of ``R * W`` words: every read returns its word,
and the extra iterations a read program runs (to keep its counters a box) lie before its first
or after its last real read."""
from __future__ import annotations

import itertools

import islpy as isl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgra.errors import MappingError
from mapper.mapping.memory import circular_rows
from mapper.mapping.polyhedral import Program, Read, Stage, linearize, schedule


def _up_rows(w: int, h: int, f: int, rows: tuple[int, ...]) -> Program:
    """``b(x, y) = sum_c input(x / f, y / f + c)``: an upsample by ``f`` reading input rows
    ``y / f + c`` for each ``c`` in ``rows``."""
    reads = tuple(Read("input", (f"floor(x/{f})" if f > 1 else "x",
                                 (f"floor(y/{f})" if f > 1 else "y") + f" + {c}"))
                  for c in rows)
    return Program("up_rows", (Stage("input", (w, h)),
                               Stage("b", (w * f, (h - max(rows)) * f), reads)))


def _ports(prog: Program):
    s = schedule(prog)
    buf = s.buffers["input"]
    return s, buf.write, list(buf.reads)


def test_two_row_buffer_known_answer():
    """64x64 upsampled by 2 reading rows y/2 and y/2 + 1: 128 words live, so 2 rows (128
    words) instead of the 4096-word image; the second read's 126 output rows run as 128
    (2 x 2 x 32 counters), the last two iterations past its domain."""
    s, write, reads = _ports(_up_rows(64, 64, 2, (0, 1)))
    need = max(p.capacity for p in reads)
    assert need == 128
    rows, progs = circular_rows(write, reads, (64, 64), (0, 0), need, 2048, "t", "m")
    assert rows == 2
    w, r0, r1 = progs
    assert (w.extents, w.strides, w.offset) == ((64, 2, 32), (1, 64, 0), 0)
    assert w.schedule_strides == (2, 256, 512)
    assert (r0.extents, r0.strides, r0.offset) == ((2, 64, 2, 2, 32), (0, 1, 0, 64, 0), 0)
    assert (r1.extents, r1.strides, r1.offset) == ((2, 64, 2, 2, 32), (0, 1, 0, -64, 0), 64)
    assert r1.schedule_strides == (1, 2, 128, 256, 512)


def test_row_count_rounds_up_to_a_divisor_of_the_height():
    """The write's row counter is split by R, so H must be a multiple of R: 3 live rows of a
    10-row image take 5 rows; a prime height takes the whole image (no modulus)."""
    for h, want in ((10, 5), (12, 3), (7, 7)):
        s, write, reads = _ports(_up_rows(8, h, 1, (0, 1, 2)))
        need = max(p.capacity for p in reads)
        assert -(-need // 8) == 3
        rows, progs = circular_rows(write, reads, (8, h), (0, 0), need, 2048, "t", "m")
        assert rows == want, h
        if rows == h:           # the whole image: plain row-major addresses
            assert progs[0].strides == (1, 8)


def test_too_big_is_a_one_line_error_naming_the_size():
    s, write, reads = _ports(_up_rows(1100, 8, 2, (0, 1)))
    need = max(p.capacity for p in reads)
    with pytest.raises(MappingError, match=r"^w: needs a circular buffer of 2200 words or more "
                                           r"\(2 row\(s\) of 1100, \d+ words live\) .* MEM m "
                                           r"holds 2048; use a narrower image$"):
        circular_rows(write, reads, (1100, 8), (0, 0), need, 2048, "w", "m")


def test_linearize_refuses_rows_on_a_bad_layout():
    s, write, reads = _ports(_up_rows(8, 8, 2, (0, 1)))
    with pytest.raises(MappingError, match=r"rows = 9 needs a 2-D layout kept whole and "
                                           r"1 <= rows <= 8"):
        linearize(write, (8, 8), None, 2, 9)
    # without overrun, a read counter that is not a multiple of its divisor is refused
    with pytest.raises(MappingError, match=r"counter y \(extent 14, from 0\) is divided by 4"):
        linearize(reads[1], (8, 8), None, 2, 2)


def _iterate(prog):
    """(cycle, address) of every iteration of an address program, in counter order."""
    for it in itertools.product(*[range(e) for e in reversed(prog.extents)]):
        it = tuple(reversed(it))
        yield (prog.schedule_offset + sum(a * i for a, i in zip(prog.schedule_strides, it, strict=False)),
               prog.offset + sum(a * i for a, i in zip(prog.strides, it, strict=False)))


@settings(max_examples=40, deadline=None)
@given(w=st.integers(2, 9), h=st.integers(3, 12), f=st.sampled_from([1, 2, 3]),
       rows=st.sets(st.integers(0, 2), min_size=1, max_size=3))
def test_random_programs_simulate_exactly(w, h, f, rows):
    rows = tuple(sorted(rows))
    if h - max(rows) < 1:
        return
    prog = _up_rows(w, h, f, rows)
    s, write, reads = _ports(prog)
    need = max(p.capacity for p in reads)
    r, progs = circular_rows(write, reads, (w, h), (0, 0), need, 10 ** 6, "t", "m")
    first = -(-need // w)
    want = next(k for k in range(first, h + 1) if h % k == 0 or k == h)
    assert r == want and r * w >= need
    words = r * w
    # the write: iteration k stores word k of the raster at (x + w * (y mod r))
    events = []
    for k, (cyc, addr) in enumerate(_iterate(progs[0])):
        x, y = k % w, k // w
        assert addr == x + w * (y % r) and 0 <= addr < words
        events.append((cyc, 0, addr, (x, y)))
    b = prog.stage("b")
    its = [tuple(reversed(t)) for t in itertools.product(
        *[range(e) for e in reversed(b.extents)])]
    for port, read in zip(reads, b.reads, strict=False):
        at = {s.cycle("b", j): j for j in its}
        lo, hi = min(at), max(at)
        seen = set()
        for cyc, addr in _iterate(progs[1 + reads.index(port)]):
            assert 0 <= addr < words
            if cyc not in at:                   # an iteration past the domain
                assert cyc < lo or cyc > hi
                continue
            x, y = at[cyc]
            wx = x // f
            wy = y // f + rows[b.reads.index(read)]
            events.append((cyc, 1, addr, (wx, wy)))
            seen.add(cyc)
        assert seen == set(at)                  # every real read issued exactly once
    mem: dict[int, tuple[int, int]] = {}
    for cyc, kind, addr, word in sorted(events, key=lambda e: (e[0], e[1])):
        if kind == 0:
            mem[addr] = word
        else:
            assert mem.get(addr) == word, (cyc, addr, word, mem.get(addr))


# ----------------------------------------------------------------------------- banking
def _points(m) -> list[list[int]]:
    pts: list[list[int]] = []
    n = m.dim(isl.dim_type.in_) + m.dim(isl.dim_type.out)
    m.wrap().foreach_point(lambda p: pts.append(
        [p.get_coordinate_val(isl.dim_type.set, i).to_python() for i in range(n)]))
    return pts


def _dsl_up_rows(w: int, h: int, f: int, rows: tuple[int, ...]):
    from mapper.frontend.dsl import Func, Input, Pipeline, UInt16, Var
    x, y = Var("x"), Var("y")
    inp = Input("input", UInt16, (w, h))
    b = Func("b")
    expr = None
    for c in rows:
        t = inp[x / f if f > 1 else x, (y / f if f > 1 else y) + c]
        expr = t if expr is None else expr + t
    b[x, y] = expr
    return Pipeline(b, "banks").lower()


def _program_events(prog: dict):
    ext = prog["extents"]
    for it in itertools.product(*[range(e) for e in reversed(ext)]):
        it = tuple(reversed(it))
        yield (prog["schedule"]["offset"] + sum(a * i for a, i in zip(
            prog["schedule"]["strides"], it, strict=False)),
            prog["address"]["offset"] + sum(a * i for a, i in zip(
                prog["address"]["strides"], it, strict=False)))


@settings(max_examples=30, deadline=None)
@given(w=st.integers(3, 12), h=st.integers(3, 9), f=st.sampled_from([1, 2]),
       rows=st.sets(st.integers(0, 2), min_size=2, max_size=3), frac=st.floats(0.05, 0.95))
def test_banks_by_columns_simulate_exactly(w, h, f, rows, frac):
    """A buffer whose ``R`` rows exceed one MEM is split into column banks: simulating every
    tile's write and read programs, each real read is served by exactly one bank (the one
    holding its column, so exactly one ``valid_out`` is high) with the right word; banks
    never exceed the MEM; an extra (overrun) iteration only fires outside the reads."""
    import dataclasses

    from mapper.mapping.memory import DUAL_PORT_SRAM, MemSpec, addressed_tiles
    from mapper.mapping.schedule import schedule_pipeline

    rows = tuple(sorted(rows))
    if h - max(rows) < 2:
        return
    pl = _dsl_up_rows(w, h, f, rows)
    spec0 = MemSpec.from_dict(DUAL_PORT_SRAM)
    sched = schedule_pipeline(pl, None, spec0.read_latency)
    key = ("input", 0)
    reads = [p for p in sched.buffers[key] if p.kind == "read" and p.addressed]
    if not reads:
        return
    need = max(p.poly.capacity for p in reads)
    r, _ = circular_rows(sched.poly.buffers["input"].write, [p.poly for p in reads],
                         (w, h), (0, 0), need, 1 << 40, "t", "m")
    cap = max(r, int(frac * r * w))             # at least one column per bank
    spec = dataclasses.replace(spec0, capacity=cap)
    tiles, served = addressed_tiles(key, reads, sched, spec, 0)
    cols = cap // r if r * w > cap else w
    banks = -(-w // cols)
    # every read covers every column, so each is served by every bank, in column order
    assert all(len(srcs) == banks for _, srcs in served)
    assert len(tiles) == banks * len(reads)         # one read port per dual-port MEM
    assert all(s.words <= cap for t in tiles for s in t.segments)
    by_name = {t.name: t for t in tiles}
    rl = spec.read_latency
    for port, srcs in served:
        at = {p[-1]: tuple(p[:2]) for p in _points(port.poly.schedule)}   # cycle -> (x, y)
        word = {tuple(p[:2]): tuple(p[2:]) for p in _points(port.poly.access)}
        fired: dict[int, int] = {}
        for j, (tname, q) in enumerate(srcs):
            t = by_name[tname]
            x_first = j * cols
            events = [(c, 0, a, k) for k, (c, a) in enumerate(_program_events(
                t.programs["data_in_0"]))]
            wcols = min(cols, w - x_first)
            for c, a in _program_events(t.programs[f"data_out_{q}"]):
                events.append((c + rl, 1, a, None))
            mem: dict[int, int] = {}
            for c, kind, a, k in sorted(events, key=lambda e: (e[0], e[1])):
                assert 0 <= a < t.segments[0].words
                if kind == 0:
                    mem[a] = k
                    continue
                if c not in at:                       # an overrun iteration
                    assert c < min(at) or c > max(at)
                    continue
                fired[c] = fired.get(c, 0) + 1
                wx, wy = word[at[c]]
                # the bank's k-th write is word (x_first + k % wcols, k // wcols)
                assert (x_first + mem[a] % wcols, mem[a] // wcols) == (wx, wy), (c, a)
        assert set(fired) == set(at) and set(fired.values()) == {1}
