"""Issue 37 (b) on the 8x8 with a GLB (configs/small_glb.toml): two apps placed in disjoint column
ranges (FlowParams.columns) run at once on the system top (the array and its GLB in one
Verilator model), driven only through the GLB's host and control ports, every register
written by the GLB's config streamers over the array's column config paths; in the same run
the first range is stalled, reconfigured through the GLB and its column paths, flushed and
restarted with another app while the second range's app keeps streaming."""
from __future__ import annotations

import numpy as np
import pytest

from canal.config import column_ports
from cgra.errors import ConfigError, SimulationError
from garnet.glb.confignet import simulate
from mapper import ir
from mapper.apps import build_app, lower_app
from mapper.flow import run_stages
from mapper.interp import run_outputs
from mapper.params import AppParams, FlowParams, RunParams
from mapper.sim.glb import GlbArray, design_glb, reconfiguration
from mapper.sim.run import glb_app
from mapper.sim.verilator import SimParams, build_harness, run_harness

#: app -> (column range, image width x height) compiled here: the first half's two apps,
#: the second half's one, whose taller image keeps it streaming while the first half is
#: reconfigured
RANGES = {"gaussian": (0, 4, 32, 32), "gaussian_edge": (0, 4, 16, 16),
          "brighten_blur": (4, 8, 64, 48)}


def _golden(app: str, images: dict[str, np.ndarray]) -> np.ndarray:
    _lo, _hi, width, height = RANGES[app]
    pipe = lower_app(app, width, height, 1)
    return np.asarray(run_outputs(ir.narrow_pipeline(pipe, 16), images)[pipe.output])


@pytest.fixture(scope="module")
def apps(small_glb_design, tmp_path_factory):
    """app -> :class:`GlbApp` of each app of :data:`RANGES`, compiled to its bitstream on
    its column range, with a random 64x64 input (seeded by the app's range)."""
    root = tmp_path_factory.mktemp("ranges")
    out = {}
    for k, (app, (lo, hi, width, height)) in enumerate(RANGES.items()):
        run = root / app
        run_stages(RunParams(AppParams(app, width, height), small_glb_design, run,
                             FlowParams(columns=(lo, hi))), "bitstream")
        img = np.random.default_rng(k).integers(0, 256, size=(height, width))
        out[app] = glb_app(run, app, width, height,
                           {build_app(app, width, height).inputs[0].name: img})
    return out


def _columns(pairs) -> set[int]:
    return {(a >> 8) & 0xFF for a, _d in pairs}


def test_column_range_confines_the_bitstream(apps, small_glb_design):
    for app, (lo, hi, _w, _h) in RANGES.items():
        cols = _columns(apps[app].flow.bitstream.pairs())
        assert cols and lo <= min(cols) and max(cols) < hi, (app, cols)
    with pytest.raises(ConfigError, match=r"column range \[6, 9\): use 0 <= lo < hi <= 8"):
        run_stages(RunParams(AppParams("pointwise"), small_glb_design, None,
                             FlowParams(columns=(6, 9))), "map")


def test_two_apps_at_once_and_reconfiguring_one_half_while_the_other_runs(apps,
                                                                         small_glb_design,
                                                                         tmp_path):
    p = design_glb(small_glb_design)
    params = SimParams(system=True)
    harness = build_harness(small_glb_design, params)
    assert "cfg_word_X00" not in harness.inputs     # the GLB drives the column paths
    runs = []

    def run_system(inputs, ports, cycles):
        runs.append(([], inputs, cycles))
        return run_harness(harness, [], inputs, ports, cycles, tmp_path, params).outputs

    g, b, pw = apps["gaussian"], apps["brighten_blur"], apps["gaussian_edge"]
    # reconfiguring columns 0-3 to gaussian_edge through the GLB: multicast from GLB tile 0 to
    # columns 0..3 accepts the words; one of columns 4-7 would be refused
    words = reconfiguration(g.flow.bitstream.pairs(), pw.flow.bitstream.pairs())
    assert _columns(words) <= {0, 1, 2, 3}
    multi = simulate(p, words, 8, "multicast", source=0, columns=(0, 3))
    assert multi.writes == len(words)
    with pytest.raises(ConfigError, match="the bitstream configures column 4"):
        simulate(p, words + b.flow.bitstream.pairs()[:1], 8, "multicast", source=0,
                 columns=(0, 3))
    arr = GlbArray(p, 8)
    live = arr.run_live([g, b], g, pw, run_system, 8, harness.flush_wait, harness.outputs)
    # one simulation, no write through the shared config port: the column paths did them all
    assert len(runs) == 1 and runs[0][0] == [] and runs[0][2] == live.cycles
    assert live.columns == [0, 1, 2, 3]
    # brighten_blur streamed from before the reconfiguration to after gaussian_edge's restart
    s_b, s_pw = live.start["brighten_blur"], live.start["gaussian_edge"]
    assert live.start["gaussian"] == s_b < live.reconfigure < s_pw
    assert s_pw + pw.plan.cycles <= s_b + b.plan.cycles
    inputs = runs[0][1]
    stall0, stall4 = inputs[column_ports(0)[3]], inputs[column_ports(4)[3]]
    assert stall0[live.reconfigure:s_pw].all() and not stall0[s_pw:].any()
    assert not stall4[s_b:].any()               # columns 4-7 never stall after their start
    # the GLB's config streamers start again for GLB tiles 0-1 only (columns 0-3), and
    # only tiles 0-1 start their DMAs again
    go = inputs["glb_cfg_go"][s_b:]
    assert set(go[go != 0].tolist()) == {0b0011}
    st = inputs["glb_start"][s_b:]
    assert set(st[st != 0].tolist()) == {0b0011}
    # every app bit-exact: the two first ones, gaussian_edge after the reconfiguration, and
    # brighten_blur across it
    assert np.array_equal(live.outputs["gaussian"]["blur"], _golden("gaussian", g.images))
    assert np.array_equal(live.outputs["gaussian_edge"][pw.plan.stage_of[pw.plan.outputs[0][0]]],
                          _golden("gaussian_edge", pw.images))
    assert np.array_equal(live.outputs["brighten_blur"][b.plan.stage_of[b.plan.outputs[0][0]]],
                          _golden("brighten_blur", b.images))
    # the GLB kept the registers the array holds: columns 0-3 exactly gaussian_edge's
    assert {a: d for a, d in arr.state.items() if (a >> 8) & 0xFF < 4 and d} == \
        {a: d for a, d in pw.flow.bitstream.pairs() if d}
    with pytest.raises(SimulationError, match="meets brighten_blur's columns"):
        arr.run_live([g, b], g, b, run_system, 8, harness.flush_wait, harness.outputs)
