"""Issue 37 (b) on the 8x8 with a GLB (configs/small_glb.toml): two apps placed in disjoint column
ranges (FlowParams.columns) run at once through the GLB on the array RTL (Verilator);
reconfiguring the first range through the GLB's config network leaves the second range's
registers and output unchanged."""
from __future__ import annotations

import numpy as np
import pytest

from cgra.errors import ConfigError
from garnet.glb.confignet import simulate
from mapper import ir
from mapper.apps import build_app, lower_app
from mapper.flow import run_stages
from mapper.interp import run_outputs
from mapper.params import AppParams, FlowParams, RunParams
from mapper.sim.glb import GlbArray, design_glb, reconfiguration
from mapper.sim.run import glb_app
from mapper.sim.verilator import SimParams, build_harness, run_harness

#: (app, column range) compiled here: the first half's two apps, the second half's one
RANGES = {"gaussian": (0, 4), "pointwise": (0, 4), "brighten_blur": (4, 8)}


def _golden(app: str, images: dict[str, np.ndarray]) -> np.ndarray:
    pipe = lower_app(app, 64, 64, 1)
    return np.asarray(run_outputs(ir.narrow_pipeline(pipe, 16), images)[pipe.output])


@pytest.fixture(scope="module")
def apps(small_glb_design, tmp_path_factory):
    """app -> :class:`GlbApp` of each app of :data:`RANGES`, compiled to its bitstream on
    its column range, with a random 64x64 input (seeded by the app's range)."""
    root = tmp_path_factory.mktemp("ranges")
    out = {}
    for k, (app, cols) in enumerate(RANGES.items()):
        run = root / app
        run_stages(RunParams(AppParams(app), small_glb_design, run, FlowParams(columns=cols)),
                   "bitstream")
        img = np.random.default_rng(k).integers(0, 256, size=(64, 64))
        out[app] = glb_app(run, app, 64, 64, {build_app(app, 64, 64).inputs[0].name: img})
    return out


def _columns(pairs) -> set[int]:
    return {(a >> 8) & 0xFF for a, _d in pairs}


def test_column_range_confines_the_bitstream(apps, small_glb_design):
    for app, (lo, hi) in RANGES.items():
        cols = _columns(apps[app].flow.bitstream.pairs())
        assert cols and lo <= min(cols) and max(cols) < hi, (app, cols)
    with pytest.raises(ConfigError, match=r"column range \[6, 9\): use 0 <= lo < hi <= 8"):
        run_stages(RunParams(AppParams("pointwise"), small_glb_design, None,
                             FlowParams(columns=(6, 9))), "map")


def test_two_apps_at_once_and_reconfiguring_one_half(apps, small_glb_design, tmp_path):
    p = design_glb(small_glb_design)
    harness = build_harness(small_glb_design)       # the 8x8's model (byte-identical RTL)

    def run_array(pairs, inputs, ports, cycles):
        return run_harness(harness, pairs, inputs, ports, cycles, tmp_path, SimParams()).outputs

    g, b, pw = apps["gaussian"], apps["brighten_blur"], apps["pointwise"]
    arr = GlbArray(p, 8)
    first = g.flow.bitstream.pairs() + b.flow.bitstream.pairs()
    cfg = arr.configure(first)
    assert cfg.cycles == simulate(p, first, 8, "unicast", row_multicast=True).cycles
    out1 = arr.run([g, b], run_array)
    assert np.array_equal(out1["gaussian"]["blur"], _golden("gaussian", g.images))
    bb = out1["brighten_blur"][b.plan.stage_of[b.plan.outputs[0][0]]]
    assert np.array_equal(bb, _golden("brighten_blur", b.images))
    # reconfigure columns 0-3 to pointwise through the GLB: multicast from GLB tile 0 to
    # columns 0..3 accepts the words; one of columns 4-7 would be refused
    words = reconfiguration(g.flow.bitstream.pairs(), pw.flow.bitstream.pairs())
    assert _columns(words) <= {0, 1, 2, 3}
    multi = simulate(p, words, 8, "multicast", source=0, columns=(0, 3))
    assert multi.writes == len(words)
    with pytest.raises(ConfigError, match="the bitstream configures column 4"):
        simulate(p, words + b.flow.bitstream.pairs()[:1], 8, "multicast", source=0,
                 columns=(0, 3))
    before = {a: d for a, d in arr.state.items() if (a >> 8) & 0xFF >= 4}
    arr.configure(words)
    assert {a: d for a, d in arr.state.items() if (a >> 8) & 0xFF >= 4} == before
    # the first half holds exactly pointwise's registers (the rest back at reset)
    assert {a: d for a, d in arr.state.items() if (a >> 8) & 0xFF < 4 and d} == \
        {a: d for a, d in pw.flow.bitstream.pairs() if d}
    out2 = arr.run([pw, b], run_array)
    assert np.array_equal(out2["pointwise"][pw.plan.stage_of[pw.plan.outputs[0][0]]],
                          _golden("pointwise", pw.images))
    # brighten_blur's output is unchanged by the reconfiguration of the other half
    assert np.array_equal(out2["brighten_blur"][b.plan.stage_of[b.plan.outputs[0][0]]], bb)
    assert set(arr.session.phases) == {"configure", "load", "store"}
