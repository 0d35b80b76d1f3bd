"""Session fixtures of the end-to-end tests: ONE 8x8 design (configs/small.toml, with its
rule table) and ONE Verilator build of its stream harness for the whole test session, shared
by every pytest-xdist worker.

Workers share the directory above their base temp directory; the first worker to take the
file lock generates the design there, the others wait and reuse it. The Verilator build is
cached inside the design directory by :func:`mapper.sim.verilator.build_harness` (its own lock).

``tests/`` is on ``sys.path`` for the root conftest, where ``tests/mapper`` would shadow the
``mapper`` package; the project root goes first so the real package is imported."""
from __future__ import annotations

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402

from mapper.backend.power import gated_by_bitstream, gated_tiles, used_tiles  # noqa: E402
from mapper.flow import run_app  # noqa: E402
from mapper.params import AppParams, FlowParams, RunParams  # noqa: E402
from mapper.sim.verilator import build_harness  # noqa: E402
from peak.ir import targets  # noqa: E402


@pytest.fixture(scope="session")
def measured_small_design(design_dir) -> pathlib.Path:
    """Collateral directory of configs/small_measured.toml (the 8x8 with the measured
    timing model)."""
    return design_dir("small_measured")


@pytest.fixture(scope="session")
def pub_small_design(design_dir) -> pathlib.Path:
    """Collateral directory of configs/small_pub.toml (8x8 with the wide-fetch PUB MEM)."""
    return design_dir("small_pub")


@pytest.fixture(scope="session")
def default_design(design_dir) -> pathlib.Path:
    """Collateral directory of configs/default.toml (32x16)."""
    return design_dir("default")


@pytest.fixture(scope="session")
def default_glb_design(default_design, glb_design) -> pathlib.Path:
    """Collateral directory of configs/default_glb.toml (the 32x16 with AHA's 16 GLB tiles),
    beside :func:`default_design`, sharing its modules and Verilator model."""
    return glb_design(default_design, "default_glb")


@pytest.fixture(scope="session")
def default_harness(default_design):
    """The Verilator model of :func:`default_design`'s stream harness (built once; the model
    cache is content-keyed and locked, so every worker and test file shares it)."""
    return build_harness(default_design)


@pytest.fixture(scope="session")
def bf16_small_design(design_dir) -> pathlib.Path:
    """Collateral directory of configs/bf16_small.toml (8x8, the BFloat16 PE) with the
    rules of every integer target, of float add/sub/mul (with a constant operand too) and of
    the unsigned int <-> bf16 conversions:
    ~17 s cold on 2 cores, where the full table (float compares with a constant operand:
    tests/rules/test_rules_bf16.py, `make app APP=gaussian_bf16`) takes ~250 s."""
    floats = ["float.add", "float.sub", "float.mul", "float.add[in1=const]",
              "float.mul[in1=const]", "float.sub[in0=const]", "float.sub[in1=const]",
              "float.from_u16", "float.to_u16"]
    return design_dir("bf16_small", [t.key for t in targets(16)] + floats)


@pytest.fixture(scope="session")
def width8_design(design_dir) -> pathlib.Path:
    """Collateral directory of configs/width8.toml (8x8, 8-bit PE, MEM and IO; its rule
    table ~35 s cold on 2 cores, its measured timing model ~2 min, both cached in build/)."""
    return design_dir("width8")


@pytest.fixture(scope="session")
def d2_small_design(design_dir) -> pathlib.Path:
    """Collateral directory of configs/d2_small.toml (8x8, the delay-chain PE of
    peak/examples/cgra_pe_d2.py) with the rules of every integer target."""
    return design_dir("d2_small", [t.key for t in targets(16)])


@pytest.fixture(scope="session")
def small_nomax_design(design_dir) -> pathlib.Path:
    """Collateral directory of configs/small_nomax.toml (8x8, the PE without GTE of
    peak/examples/cgra_pe_nomax.py; issue 41) with the rules of every integer target."""
    return design_dir("small_nomax")


@pytest.fixture(scope="session")
def small_nomul_design(design_dir) -> pathlib.Path:
    """Collateral directory of configs/small_nomul.toml (8x8, the PE without a multiplier
    of peak/examples/cgra_pe_nomul.py; issue 41) with the rules of every integer target."""
    return design_dir("small_nomul")


@pytest.fixture(scope="session")
def harness(small_design):
    """The compiled Verilator stream harness of the 8x8 design (built once, cached)."""
    return build_harness(small_design)


@pytest.fixture(scope="session")
def app_run(small_design, harness, tmp_path_factory):
    """``app_run(name)`` -> :class:`mapper.sim.run.AppRun` of ``name`` on the 64x64 camera crop
    (seed 0); each app runs at most once per worker and is shared by all checks."""
    out = tmp_path_factory.mktemp("apps")
    done: dict[str, object] = {}

    def get(name: str):
        if name not in done:     # every unused tile gated (issue 36: config only, no cost)
            done[name] = run_app(RunParams(AppParams(name, 64, 64), small_design, out / name,
                                           FlowParams(power_gate=True)))
        return done[name]

    return get


@pytest.fixture(scope="session")
def small_diagonal_design(design_dir) -> pathlib.Path:
    """Collateral directory of configs/small_diagonal.toml (the 8x8 with diagonal tracks 3
    and 4 built by configs/ic_diagonal.py, field ``interconnect``)."""
    return design_dir("small_diagonal")


@pytest.fixture(scope="session")
def small_sum_design(design_dir) -> pathlib.Path:
    """Collateral directory of configs/small_sum.toml (8x8, the PE whose instruction is a
    Sum of ALU / compare / LUT formats, peak/examples/cgra_pe_sum.py; issue 39) with its whole
    rule table (~30 s cold on the shared 2-core machine, the default PE's ~18 s; cached in
    build/rules)."""
    return design_dir("small_sum")


@pytest.fixture(scope="session")
def small_l4_design(design_dir) -> pathlib.Path:
    """Collateral directory of configs/small_L4.toml (8x8, staggered tracks of 4 tiles)."""
    return design_dir("small_L4")


@pytest.fixture(scope="session")
def small_wide8_design(design_dir) -> pathlib.Path:
    """Collateral directory of configs/small_wide8.toml (8x8, the architect's fetch-width-8
    unified buffer of configs/mem_wide8.py; issue 39)."""
    return design_dir("small_wide8")


#: the rule targets pointwise and camera_pipeline map to on the 32-bit PE (the same as on the
#: 16-bit one: `cgra map` on build/small, netlist.json's ``rule`` of every PE)
WIDTH32_TARGETS = ["coreir.add", "coreir.add[in1=const]", "coreir.mul[in1=const]",
                   "coreir.ashr[in1=const]", "coreir.lshr[in1=const]", "commonlib.umax",
                   "commonlib.umin", "commonlib.smax[in1=const]", "commonlib.smin[in1=const]"]


@pytest.fixture(scope="session")
def width32_design(design_dir) -> pathlib.Path:
    """Collateral directory of configs/width32.toml (8x8, 32-bit data, the measured timing
    model) with the rules of :data:`WIDTH32_TARGETS` (tests/e2e/test_width32.py)."""
    return design_dir("width32", only=WIDTH32_TARGETS)


def check_gated(run, at_least: int) -> int:
    """Issue 36's acceptance on a finished run (an app's :class:`mapper.sim.run.AppRun` or a
    layer's :class:`mapper.dnn.array.LayerRun`, flown with ``FlowParams(power_gate=True)``):
    it matched both golden models, and its bitstream gates exactly the tiles that hold no
    placed instance and no routed node (the domains minus the used tiles, at least
    ``at_least`` of them), so it ran bit-exact with every unused tile gated. Returns the
    number of tiles gated."""
    coll, flow = run.coll, run.flow
    assert run.report["match"] == {"numpy": True, "halide": True}
    used = used_tiles(flow.placement, flow.pipelined.routing)
    unused = set(gated_tiles(coll, flow.placement, flow.pipelined.routing))
    gated = gated_by_bitstream(coll, flow.bitstream.pairs())
    assert gated == unused and not gated & used
    assert len(gated) == len(coll.tiles) - len(used) >= at_least, (len(gated), len(used))
    pw = run.report.get("power")
    if pw is not None:                   # run_report.json's power section says the same
        assert (pw["tiles_gated"], pw["tiles_on"], pw["gated_used"]) == (
            len(gated), len(coll.tiles) - len(gated), 0)
    return len(gated)


@pytest.fixture(scope="session")
def assert_gated():
    """:func:`check_gated` for the tests of this directory."""
    return check_gated
