"""Polyhedral unified buffers and the multi-rate scheduler (mapper.mapping.polyhedral): the
unified-buffer paper's worked examples, the stencil schedule as the special case (checked
against its closed form), and random multi-rate programs checked against enumeration
(causality, one iteration per cycle, minimal starts, and a circular buffer of exactly the
reported capacity)."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgra.errors import MappingError
from mapper.apps import APPS, lower_app
from mapper.mapping.polyhedral import Program, Read, Stage, from_pipeline, linearize, schedule
from mapper.mapping.schedule import schedule_pipeline
from mapper import ir


def brighten_blur(w: int = 64, h: int = 64) -> Program:
    taps = [("x", "y"), ("x + 1", "y"), ("x", "y + 1"), ("x + 1", "y + 1")]
    return Program("bb", (Stage("input", (w, h)),
                          Stage("brighten", (w, h), (Read("input", ("x", "y")),)),
                          Stage("blur", (w - 1, h - 1),
                                tuple(Read("brighten", t) for t in taps))))


def test_brighten_blur_paper_example():
    s = schedule(brighten_blur())
    b = s.buffers["brighten"]
    assert b.distances() == [0, 1, 64, 65]
    assert s.first["blur"] == 65               # first output at cycle 65 (paper section 3)
    assert s.coefficients == {"input": (1, 64), "brighten": (1, 64), "blur": (1, 64)}
    assert b.latency == 65 and b.capacity == 66
    assert s.buffers["input"].distances() == [0] and s.buffers["input"].capacity == 1
    # the DSL app lowers to the same schedule
    prog, coef = from_pipeline(lower_app("brighten_blur", 64, 64))
    s2 = schedule(prog, coef)
    assert s2.buffers["brighten"].distances() == [0, 1, 64, 65] and s2.first["blur"] == 65


def test_downsample_address_linearisation_paper_example():
    """Downsample by 2 of an 8x8 image: address 2x + 16y, strides [2, 16], deltas [2, 10]."""
    prog = Program("ds", (Stage("input", (8, 8)),
                          Stage("down", (4, 4), (Read("input", ("2*x", "2*y")),))))
    s = schedule(prog)
    port = s.buffers["input"].reads[0]
    a = linearize(port, (8, 8))
    assert a.extents == (4, 4) and a.strides == (2, 16) and a.deltas == (2, 10)
    assert a.offset == 0
    assert s.coefficients["down"] == (2, 16)          # one output every 2nd cycle, row 16
    assert a.schedule_strides == (2, 16) and a.schedule_offset == 0
    w = linearize(s.buffers["input"].write, (8, 8))
    assert w.strides == (1, 8) and w.deltas == (1, 1)


def test_upsample_rates_and_split_counters():
    prog = Program("us", (Stage("input", (8, 8)),
                          Stage("up", (16, 16), (Read("input", ("floor(x/2)", "floor(y/2)")),))))
    s = schedule(prog)
    # the output runs one pixel per cycle; the input is read every 2nd cycle and idles
    # during the repeated output row
    assert s.coefficients == {"input": (2, 32), "up": (1, 16)}
    b = s.buffers["input"]
    assert b.reads[0].distance == (0, 17) and b.capacity == 8    # one input row
    a = linearize(b.reads[0], (8, 8))
    assert a.extents == (2, 8, 2, 8) and a.strides == (0, 1, 0, 8)
    assert a.schedule_strides == (1, 2, 16, 32)


def test_multi_rate_pyramid_consistent_rates():
    """blur -> downsample -> upsample -> difference with blur (one Laplacian level): the
    two paths into ``diff`` agree on rates; every read is causal and minimal."""
    n = 16
    box = [("x", "y"), ("x + 1", "y"), ("x", "y + 1"), ("x + 1", "y + 1")]
    prog = Program("lap", (
        Stage("input", (n, n)),
        Stage("blur", (n - 2, n - 2), tuple(Read("input", t) for t in box)),
        Stage("down", (7, 7), (Read("blur", ("2*x", "2*y")),)),
        Stage("up", (14, 14), (Read("down", ("floor(x/2)", "floor(y/2)")),)),
        Stage("diff", (14, 14), (Read("blur", ("x", "y")), Read("up", ("x", "y")))),
    ))
    s = schedule(prog)
    assert s.coefficients["diff"] == s.coefficients["blur"] == s.coefficients["up"]
    assert s.coefficients["down"] == tuple(2 * c for c in s.coefficients["blur"])
    _check_by_enumeration(prog, s)


def test_stencil_schedule_is_the_special_case():
    """For every app, unroll 1/2/4 and odd widths, the ISL starts and distances equal the
    closed form of mapper.mapping.schedule's docstring, computed here independently."""
    single_rate = [n for n in sorted(APPS) if not lower_app(n, 16, 16).multi_rate]
    assert len(single_rate) >= 6
    for name in single_rate:
        for u, w in ((1, 64), (2, 61), (4, 64), (4, 37)):
            pl = lower_app(name, w, 24, unroll=u)
            lat = {s.name: (i * 7) % 4 for i, s in enumerate(pl.stages)}
            width = next(iter(pl.inputs.values())).shape[0]     # streamed (padded) width
            pitch = -(-width // u)
            start = {n: 0 for n in pl.inputs}
            want = set()
            for st_ in pl.stages:
                us = ir.unroll_stage(st_, u)
                taps = []
                for iname, idx in us.kernel.live_inputs():
                    dx, dy = us.windows[iname].offsets[idx]
                    p = us.windows[iname].producer
                    taps.append((p, dx, dy))
                start[st_.name] = max(start[p] + lat.get(p, 0) + dy * pitch + dx // u
                                      for p, dx, dy in taps)
                for p, dx, dy in taps:
                    want.add((st_.name, p, start[st_.name] - start[p] - lat.get(p, 0)
                              - dy * pitch - dx // u))
            sched = schedule_pipeline(pl, lat)
            assert {n: v.start for n, v in sched.stages.items()} == start, (name, u, w)
            got = {(p.stage, p.buffer, p.distance) for ports in sched.buffers.values()
                   for p in ports if p.kind == "read"}
            assert got == want, (name, u, w)


def _check_by_enumeration(prog: Program, s) -> None:
    """Causality, one iteration per cycle, minimal offsets, and a circular buffer of the
    reported capacity (and not one word less) holds every word until its last read."""
    env = {}
    for st_ in prog.stages:
        its = list(itertools.product(*[range(lo, lo + e) for lo, e in
                                       zip(reversed(st_.lo), reversed(st_.extents), strict=False)]))
        its = [tuple(reversed(t)) for t in its]          # lexicographic, innermost first
        cycles = [s.cycle(st_.name, i) for i in its]
        assert len(set(cycles)) == len(cycles)           # one iteration per cycle
        assert cycles == sorted(cycles)                  # in lexicographic order
        env[st_.name] = {"its": its}
    for st_ in prog.stages:
        if not st_.reads:
            continue
        slack = []
        for r in st_.reads:
            p = prog.stage(r.producer)
            wt = {i: s.cycle(p.name, i) + p.latency for i in env[p.name]["its"]}
            rank = {i: k for k, i in enumerate(env[p.name]["its"])}
            order = sorted(wt.items(), key=lambda kv: kv[1])
            need = 0
            dmin, dmax = None, None
            for j in env[st_.name]["its"]:
                e = tuple(eval(a, {}, dict(zip("xyzwvu", j, strict=False))) for a in _pyexpr(r.access))
                t = s.cycle(st_.name, j)
                assert wt[e] <= t                        # causal
                d = t - wt[e]
                dmin = d if dmin is None else min(dmin, d)
                dmax = d if dmax is None else max(dmax, d)
                newest = max(rank[i] for i, tw in order if tw <= t)
                need = max(need, newest - rank[e] + 1)
            port = next(pt for pt in s.buffers[p.name].reads
                        if pt.stage == st_.name and pt.index == st_.reads.index(r))
            assert port.distance == (dmin, dmax)
            assert need <= s.buffers[p.name].capacity
            slack.append(dmin)
        assert min(slack) == 0                           # no stage starts later than needed
    for name, b in s.buffers.items():
        # the capacity is tight: some read needs every word of it
        p = prog.stage(name)
        rank = {i: k for k, i in enumerate(env[name]["its"])}
        wt = {i: s.cycle(name, i) + p.latency for i in env[name]["its"]}
        best = 0
        for c in prog.stages:
            for r in c.reads:
                if r.producer != name:
                    continue
                for j in env[c.name]["its"]:
                    e = tuple(eval(a, {}, dict(zip("xyzwvu", j, strict=False))) for a in _pyexpr(r.access))
                    t = s.cycle(c.name, j)
                    best = max(best, max(rank[i] for i in wt if wt[i] <= t) - rank[e] + 1)
        assert best == b.capacity, name


def _pyexpr(access: tuple[str, ...]) -> list[str]:
    """ISL expressions -> Python (floor(a/b) -> (a)//(b))."""
    out = []
    for a in access:
        if a.startswith("floor(") and a.endswith(")"):
            num, den = a[6:-1].split("/")
            a = f"({num})//({den})"
        out.append(a)
    return out


@settings(max_examples=30, deadline=None)
@given(n=st.integers(4, 9), f=st.sampled_from([1, 2, 3]), up=st.booleans(),
       dx=st.integers(0, 2), dy=st.integers(0, 1), lat=st.integers(0, 3))
def test_random_multi_rate_programs_by_enumeration(n, f, up, dx, dy, lat):
    """A stencil stage, then a stride-f downsample or a repeat-f upsample, then a
    stencil on the result; every figure checked by enumerating iterations."""
    m = n - dx
    stages = [Stage("input", (n, n)),
              Stage("a", (m, n - dy), (Read("input", ("x", "y")),
                                       Read("input", (f"x + {dx}", f"y + {dy}"))), lat)]
    if up:
        stages.append(Stage("b", (m * f, (n - dy) * f),
                            (Read("a", (f"floor(x/{f})", f"floor(y/{f})")),), 1))
    else:
        stages.append(Stage("b", (max(1, m // f), max(1, (n - dy) // f)), (Read("a", (f"{f}*x", f"{f}*y")),)))
    bx, by = stages[-1].extents
    if bx > 1 and by > 1:
        stages.append(Stage("c", (bx - 1, by - 1),
                            (Read("b", ("x + 1", "y + 1")), Read("b", ("x", "y")))))
    prog = Program("rand", tuple(stages))
    _check_by_enumeration(prog, schedule(prog))


def test_errors_are_typed_one_line():
    inp = Stage("input", (8, 8))
    cases = [
        (Program("e", (inp, Stage("s", (8, 8), (Read("input", ("x + 1", "y")),)))),
         r"stage 's' reads 'input' at \[8, 0\], outside its domain; shrink 's'"),
        (Program("e", (inp, Stage("s", (4, 8), (Read("input", ("x", "y")),
                                               Read("input", ("2*x", "y")))))),
         r"inconsistent rates: two reads or paths give counter x of 's' a schedule coefficient "
         r"of 1 and 2 times that of x of 'input'"),
        (Program("e", (inp, Stage("s", (4, 4), (Read("input", ("x + y", "y")),)))),
         r"couples counters \['x', 'y'\]"),
        (Program("e", (inp, Stage("s", (8, 8), (Read("input", ("y", "x")),)))),
         r"different loop levels \(a transposed or flattened access\)"),
        (Program("e", (inp, Stage("s", (8, 8), (Read("input", ("x ** 2", "y")),)))),
         r"is not a quasi-affine expression in x, y"),
        (Program("e", (inp, Stage("s", (8, 8), (Read("nope", ("x", "y")),)))),
         r"reads 'nope', which is not defined before it"),
        (Program("e", (inp, Stage("s", (8, 8), (Read("input", ("x",)),)))),
         r"gives 1 coordinates; 'input' has 2"),
        (Program("e", (inp, Stage("s-1", (8, 8), (Read("input", ("x", "y")),)))),
         r"the name must be an identifier"),
        (Program("e", (inp, Stage("s", (8, 8), (Read("input", ("7 - x", "y")),)))),
         r"reads 'input' backwards along x"),
    ]
    for prog, msg in cases:
        with pytest.raises(MappingError, match=msg) as ei:
            schedule(prog)
        assert "\n" not in str(ei.value)
    prog = Program("e", (inp, Stage("s", (8, 8), (Read("input", ("x", "y")),))))
    with pytest.raises(MappingError, match=r"coefficients \[1, 4\] do not run one iteration"):
        schedule(prog, {"input": (1, 8), "s": (1, 4)})
    with pytest.raises(MappingError, match=r"coefficients missing for \['s'\]"):
        schedule(prog, {"input": (1, 8)})
    odd = Program("o", (Stage("input", (5, 4)),
                        Stage("up", (9, 8), (Read("input", ("floor(x/2)", "floor(y/2)")),))))
    with pytest.raises(MappingError, match=r"counter x \(extent 9, from 0\) is divided by 2"):
        linearize(schedule(odd).buffers["input"].reads[0], (5, 4))


def test_report_per_buffer():
    rep = schedule(brighten_blur(16, 16)).report()
    assert rep == [
        {"buffer": "buf_input", "capacity": 1, "latency": 0, "reads": [["brighten", 0, 0]]},
        {"buffer": "buf_brighten", "capacity": 18, "latency": 17,
         "reads": [["blur", 17, 17], ["blur", 16, 16], ["blur", 1, 1], ["blur", 0, 0]]},
    ]
