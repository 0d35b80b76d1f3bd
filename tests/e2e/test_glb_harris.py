"""Issue 37 acceptance 4 on the 32x16 with AHA's GLB (configs/default_glb.toml): harris's
bitstream configured through the GLB (host-written image, config streamers, the column
paths' bundles) takes >= 10x fewer cycles than through the single config port (AHA Fig. 12:
20.7x), and the bundles each column path takes are exactly the bitstream's writes. (harris
through `cgra run` and the host API on the 32x16's system model -- the array and its GLB in
RTL -- is `make bench`'s bench/bench_glb_harris.py: a cold 32x16 model build; CI runs the
same flow on the 8x8 in tests/runtime.)"""
from __future__ import annotations

from garnet.glb.confignet import ALL_ROWS, MASK_FEATURE, simulate
from garnet.glb.stream import GlbSession
from mapper.flow import run_stages
from mapper.params import AppParams, RunParams
from mapper.sim.glb import design_glb


def test_harris_configures_through_the_glb_in_a_tenth_of_the_cycles(default_glb_design,
                                                                     tmp_path):
    res = run_stages(RunParams(AppParams("harris", 64, 64), default_glb_design, tmp_path / "h"),
                     "bitstream")
    pairs = res.pairs()
    p = design_glb(default_glb_design)
    assert p.tiles == 16
    cfg = GlbSession(p, 16).configure(pairs)
    assert sorted(cfg.writes) == sorted(pairs)
    assert cfg.cycles == simulate(p, pairs, 16, "unicast", row_multicast=True).cycles
    assert 10 * cfg.cycles <= len(pairs)
    # what the column paths take: each column's bundles decode to that column's writes
    # (a row-mask word, then row 0xFF bundles for every row of the mask, or one row)
    for x, stream in cfg.streams.items():
        mask, got = 0, set()
        for _c, w in stream:
            addr, data = w >> 32, w & 0xFFFFFFFF
            assert (addr >> 8) & 0xFF == x
            if (addr >> 16) & 0xFF == MASK_FEATURE:
                mask = data
                continue
            rows = [r for r in range(16) if mask >> r & 1] if addr & 0xFF == ALL_ROWS \
                else [addr & 0xFF]
            got |= {((addr & ~0xFF) | r, data) for r in rows}
        assert got == {(a, d) for a, d in pairs if (a >> 8) & 0xFF == x}
    assert set(cfg.streams) == {(a >> 8) & 0xFF for a, _d in pairs}
