"""Session fixtures of the end-to-end tests: ONE 8x8 design (configs/small.toml, with its
rule table) and ONE Verilator build of its stream harness for the whole test session, shared
by every pytest-xdist worker.

Workers share the directory above their base temp directory; the first worker to take the
file lock generates the design there, the others wait and reuse it. The Verilator build is
cached inside the design directory by :func:`mapper.sim.verilator.build_harness` (its own lock).

``tests/`` is on ``sys.path`` for the root conftest, where ``tests/mapper`` would shadow the
``mapper`` package; the project root goes first so the real package is imported."""
from __future__ import annotations

import fcntl
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402

from mapper.backend.power import gated_by_bitstream, gated_tiles, used_tiles  # noqa: E402


def _shared_root(tmp_path_factory) -> pathlib.Path:
    base = tmp_path_factory.getbasetemp()
    # under xdist each worker's base is <root>/popen-gw<N>; the parent is common to all
    return base.parent if base.name.startswith("popen-gw") else base


def _design(tmp_path_factory, name: str, only: list[str] | None = None) -> pathlib.Path:
    """Collateral directory of configs/<name>.toml (RTL, routing graphs, rules), generated
    once per session and shared by xdist workers (a file lock per design). ``only``: the
    rule targets to synthesise (a partial table; default: every target of the PE)."""
    root = _shared_root(tmp_path_factory) / "e2e"
    root.mkdir(exist_ok=True)
    out = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (out / "design.json").is_file():
                from garnet.build import generate
                from garnet.params import load_toml

                params = load_toml(ROOT / "configs" / f"{name}.toml")
                generate(params, out, rules=True, rules_dir=ROOT / "build" / "rules", jobs=2,
                         config_file=f"configs/{name}.toml",
                         builder=None if only is None else _partial_builder(only))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return out


def _partial_builder(only: list[str]):
    """A :data:`garnet.rules.Builder` synthesising the targets ``only`` (PEak's cache in
    the shared directory keeps every entry already there)."""
    def build(spec, shared, jobs):
        from peak.rules import build_table

        table = build_table(spec, shared, jobs=jobs, only=only)
        return table.path, {e.target: e.action for e in table.entries}
    return build


@pytest.fixture(scope="session")
def small_design(tmp_path_factory) -> pathlib.Path:
    """Collateral directory of configs/small.toml (8x8)."""
    return _design(tmp_path_factory, "small")


@pytest.fixture(scope="session")
def measured_small_design(tmp_path_factory) -> pathlib.Path:
    """Collateral directory of configs/small_measured.toml (the 8x8 with the measured
    timing model)."""
    return _design(tmp_path_factory, "small_measured")


@pytest.fixture(scope="session")
def pub_small_design(tmp_path_factory) -> pathlib.Path:
    """Collateral directory of configs/small_pub.toml (8x8 with the wide-fetch PUB MEM)."""
    return _design(tmp_path_factory, "small_pub")


@pytest.fixture(scope="session")
def default_design(tmp_path_factory) -> pathlib.Path:
    """Collateral directory of configs/default.toml (32x16)."""
    return _design(tmp_path_factory, "default")


@pytest.fixture(scope="session")
def default_harness(default_design):
    """The Verilator model of :func:`default_design`'s stream harness (built once; the model
    cache is content-keyed and locked, so every worker and test file shares it)."""
    from mapper.sim.verilator import build_harness

    return build_harness(default_design)


@pytest.fixture(scope="session")
def bf16_small_design(tmp_path_factory) -> pathlib.Path:
    """Collateral directory of configs/bf16_small.toml (8x8, the BFloat16 PE) with the
    rules of every integer target, of float add/sub/mul (with a constant operand too) and of
    the unsigned int <-> bf16 conversions:
    ~17 s cold on 2 cores, where the full table (float compares with a constant operand:
    tests/rules/test_rules_bf16.py, `make app APP=gaussian_bf16`) takes ~250 s."""
    from peak.ir import targets

    floats = ["float.add", "float.sub", "float.mul", "float.add[in1=const]",
              "float.mul[in1=const]", "float.sub[in0=const]", "float.sub[in1=const]",
              "float.from_u16", "float.to_u16"]
    return _design(tmp_path_factory, "bf16_small", [t.key for t in targets(16)] + floats)


@pytest.fixture(scope="session")
def width8_design(tmp_path_factory) -> pathlib.Path:
    """Collateral directory of configs/width8.toml (8x8, 8-bit PE, MEM and IO; its rule
    table ~35 s cold on 2 cores, its measured timing model ~2 min, both cached in build/)."""
    return _design(tmp_path_factory, "width8")


@pytest.fixture(scope="session")
def d2_small_design(tmp_path_factory) -> pathlib.Path:
    """Collateral directory of configs/d2_small.toml (8x8, the delay-chain PE of
    peak/examples/cgra_pe_d2.py) with the rules of every integer target."""
    from peak.ir import targets

    return _design(tmp_path_factory, "d2_small", [t.key for t in targets(16)])


@pytest.fixture(scope="session")
def small_nomax_design(tmp_path_factory) -> pathlib.Path:
    """Collateral directory of configs/small_nomax.toml (8x8, the PE without GTE of
    peak/examples/cgra_pe_nomax.py; issue 41) with the rules of every integer target."""
    return _design(tmp_path_factory, "small_nomax")


@pytest.fixture(scope="session")
def small_nomul_design(tmp_path_factory) -> pathlib.Path:
    """Collateral directory of configs/small_nomul.toml (8x8, the PE without a multiplier
    of peak/examples/cgra_pe_nomul.py; issue 41) with the rules of every integer target."""
    return _design(tmp_path_factory, "small_nomul")


@pytest.fixture(scope="session")
def harness(small_design):
    """The compiled Verilator stream harness of the 8x8 design (built once, cached)."""
    from mapper.sim.verilator import build_harness

    return build_harness(small_design)


@pytest.fixture(scope="session")
def app_run(small_design, harness, tmp_path_factory):
    """``app_run(name)`` -> :class:`mapper.sim.run.AppRun` of ``name`` on the 64x64 camera crop
    (seed 0); each app runs at most once per worker and is shared by all checks."""
    from mapper.params import AppParams, FlowParams, RunParams
    from mapper.flow import run_app

    out = tmp_path_factory.mktemp("apps")
    done: dict[str, object] = {}

    def get(name: str):
        if name not in done:     # every unused tile gated (issue 36: config only, no cost)
            done[name] = run_app(RunParams(AppParams(name, 64, 64), small_design, out / name,
                                           FlowParams(power_gate=True)))
        return done[name]

    return get


@pytest.fixture(scope="session")
def small_diagonal_design(tmp_path_factory) -> pathlib.Path:
    """Collateral directory of configs/small_diagonal.toml (the 8x8 with diagonal tracks 3
    and 4 built by configs/ic_diagonal.py, field ``interconnect``)."""
    return _design(tmp_path_factory, "small_diagonal")


@pytest.fixture(scope="session")
def small_sum_design(tmp_path_factory) -> pathlib.Path:
    """Collateral directory of configs/small_sum.toml (8x8, the PE whose instruction is a
    Sum of ALU / compare / LUT formats, peak/examples/cgra_pe_sum.py; issue 39) with its whole
    rule table (~30 s cold on the shared 2-core machine, the default PE's ~18 s; cached in
    build/rules)."""
    return _design(tmp_path_factory, "small_sum")


@pytest.fixture(scope="session")
def small_l2_design(tmp_path_factory) -> pathlib.Path:
    """Collateral directory of configs/small_L2.toml (8x8, staggered tracks of 2 tiles)."""
    return _design(tmp_path_factory, "small_L2")


@pytest.fixture(scope="session")
def small_l4_design(tmp_path_factory) -> pathlib.Path:
    """Collateral directory of configs/small_L4.toml (8x8, staggered tracks of 4 tiles)."""
    return _design(tmp_path_factory, "small_L4")


@pytest.fixture(scope="session")
def small_wide8_design(tmp_path_factory) -> pathlib.Path:
    """Collateral directory of configs/small_wide8.toml (8x8, the architect's fetch-width-8
    unified buffer of configs/mem_wide8.py; issue 39)."""
    return _design(tmp_path_factory, "small_wide8")


#: the rule targets pointwise and camera_pipeline map to on the 32-bit PE (the same as on the
#: 16-bit one: `cgra map` on build/small, netlist.json's ``rule`` of every PE)
WIDTH32_TARGETS = ["coreir.add", "coreir.add[in1=const]", "coreir.mul[in1=const]",
                   "coreir.ashr[in1=const]", "coreir.lshr[in1=const]", "commonlib.umax",
                   "commonlib.umin", "commonlib.smax[in1=const]", "commonlib.smin[in1=const]"]


@pytest.fixture(scope="session")
def width32_design(tmp_path_factory) -> pathlib.Path:
    """Collateral directory of configs/width32.toml (8x8, 32-bit data, the measured timing
    model) with the rules of :data:`WIDTH32_TARGETS` (tests/e2e/test_width32.py)."""
    return _design(tmp_path_factory, "width32", only=WIDTH32_TARGETS)


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
