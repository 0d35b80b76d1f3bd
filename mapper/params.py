"""Parameters of the compiler flow, in one module: what to compile (:class:`AppParams`), the
back end (:class:`FlowParams`, grouping each stage's own parameters), the simulation
(:class:`SimOptions`) and one end-to-end run (:class:`RunParams`); and the run directory default.

**Validated in one place.** Each class's ``validate()`` checks every numeric field before
any work (:func:`mapper.flow.map_app` and :func:`mapper.flow.run_stages` call it first):
finite and inside the range in :data:`RANGES`, else a :class:`~cgra.errors.ConfigError`
naming the command-line option, the value and the range. The simulated-cycle budget
(:data:`DEFAULT_MAX_SIM_CYCLES`) is checked against the image before anything runs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable

from cgra.errors import ConfigError

from mapper.mapping.memory import DEFAULT_SR_THRESHOLD
from mapper.backend.pack import PackParams
from mapper.backend.pipeline import PipelineParams
from mapper.backend.place import PlaceParams
from mapper.backend.route import RouterParams

Step = Callable[[str], None]

#: the simulated-cycle budget of one run (cycles): a 2048 x 2048 image at one pixel per
#: cycle. The stream harness runs the 8 x 8 array at roughly 10^5 cycles/s, the 32 x 16 one
#: at a few 10^4 (bench/results/e2e.csv), so the budget is minutes of Verilator; a larger
#: image or layer is refused before anything runs unless ``SimOptions.max_cycles`` (``cgra
#: run --max-cycles``) raises it
DEFAULT_MAX_SIM_CYCLES = 2048 * 2048

#: (class, field) -> (command-line option, lowest, highest, integer?) of every numeric
#: parameter (``None``: unbounded on that side)
RANGES: dict[tuple[str, str], tuple[str, float | None, float | None, bool]] = {
    ("AppParams", "width"): ("--width", 1, 4096, True),
    ("AppParams", "height"): ("--height", 1, 4096, True),
    ("AppParams", "unroll"): ("--unroll", 1, 4096, True),
    ("AppParams", "threshold"): ("--threshold", 0, 1 << 20, True),
    ("AppParams", "vectors"): ("--vectors", 0, 10 ** 7, True),
    ("AppParams", "seed"): ("--seed", 0, None, True),
    ("AppParams", "channels"): ("--channels", 1, 4096, True),
    ("AppParams", "block"): ("--block", 1, 64, True),
    ("AppParams", "loop_cycles"): ("--loop-cycles", 1, 4096, True),
    ("PlaceParams", "seed"): ("--seed", 0, None, True),
    ("PlaceParams", "alpha"): ("--alpha", 0.0, 16.0, False),
    ("PlaceParams", "inner"): ("PlaceParams.inner", 1e-6, None, False),
    ("PlaceParams", "max_temperatures"): ("PlaceParams.max_temperatures", 1, None, True),
    ("PlaceParams", "anchor"): ("PlaceParams.anchor", 0.0, None, False),
    ("PlaceParams", "mem_potential"): ("PlaceParams.mem_potential", 0.0, None, False),
    ("PlaceParams", "density"): ("PlaceParams.density", 0.0, None, False),
    ("PlaceParams", "t_scale"): ("PlaceParams.t_scale", 1e-6, None, False),
    ("PlaceParams", "window"): ("PlaceParams.window", 1.0, None, False),
    ("PlaceParams", "gamma"): ("--gamma", 0.0, None, False),
    ("RouterParams", "max_iterations"): ("--max-iterations", 1, 100_000, True),
    ("RouterParams", "max_exact_states"): ("RouterParams.max_exact_states", 1, None, True),
    ("RouterParams", "power_cost"): ("--power-aware", 1.0, 1000.0, False),
    ("RouterParams", "pres_fac"): ("RouterParams.pres_fac", 0.0, None, False),
    ("RouterParams", "pres_mult"): ("RouterParams.pres_mult", 1.0, None, False),
    ("RouterParams", "hist_fac"): ("RouterParams.hist_fac", 0.0, None, False),
    ("RouterParams", "base_cost"): ("RouterParams.base_cost", 1e-9, None, False),
    ("PipelineParams", "target_period_ps"): ("--fmax (as a period in ps)", 1.0, None, False),
    ("PipelineParams", "max_pipeline_steps"): ("PipelineParams.max_pipeline_steps", 0, None,
                                               True),
    ("PipelineParams", "max_reroutes"): ("PipelineParams.max_reroutes", 0, None, True),
    ("PipelineParams", "broadcast_fanout"): ("PipelineParams.broadcast_fanout", 0, None, True),
    ("PipelineParams", "broadcast_on_miss"): ("PipelineParams.broadcast_on_miss", 0, None,
                                              True),
    ("PipelineParams", "broadcast_leaves"): ("PipelineParams.broadcast_leaves", 2, None, True),
    ("PipelineParams", "max_rejected"): ("PipelineParams.max_rejected", 0, None, True),
    ("FlowParams", "place_attempts"): ("FlowParams.place_attempts", 1, 1000, True),
    ("FlowParams", "timing_attempts"): ("FlowParams.timing_attempts", 0, 1000, True),
    ("FlowParams", "absorb_chains"): ("--absorb", 0, None, True),
    ("SimOptions", "tensor_seed"): ("--tensor-seed", 0, None, True),
    ("SimOptions", "max_cycles"): ("--max-cycles", 1, None, True),
    ("SimParams", "jobs"): ("SimParams.jobs", 1, 1024, True),
    ("SimOptions", "stall_in"): ("--stall-in", 0.0, 0.95, False),
    ("SimOptions", "stall_out"): ("--stall-out", 0.0, 0.95, False),
    ("SimOptions", "stall_seed"): ("--stall-seed", 0, 2 ** 63 - 1, True),
    ("SimParams", "stall_in"): ("SimParams.stall_in", 0.0, 0.95, False),
    ("SimParams", "stall_out"): ("SimParams.stall_out", 0.0, 0.95, False),
    ("SimParams", "stall_seed"): ("SimParams.stall_seed", 0, 2 ** 63 - 1, True),
    ("SimParams", "build_timeout_s"): ("SimParams.build_timeout_s", 1e-3, None, False),
    ("SimParams", "run_timeout_s"): ("SimParams.run_timeout_s", 1e-3, None, False),
    ("SimParams", "flush_wait"): ("SimParams.flush_wait", 0, None, True),
    ("SimParams", "cache_models"): ("SimParams.cache_models", 1, 100_000, True),
    ("DuplicateParams", "columns"): ("--sub-array", 1, 4096, True),
    ("DuplicateParams", "unroll"): ("--copy-unroll", 1, 4096, True),
}


def _range_text(lo: float | None, hi: float | None, integer: bool) -> str:
    kind = "an integer" if integer else "a number"
    if lo is not None and hi is not None:
        return f"{kind} in [{lo:g}, {hi:g}]"
    if lo is not None:
        return f"{kind} >= {lo:g}"
    return f"{kind} <= {hi:g}" if hi is not None else f"{kind}"


def check_fields(obj: Any) -> None:
    """Check every field of dataclass ``obj`` that :data:`RANGES` lists (``None`` values
    are skipped: "not given"). Raises :class:`ConfigError` naming the option, the value and
    the range."""
    cls = type(obj).__name__
    for f in fields(obj):
        spec = RANGES.get((cls, f.name))
        if spec is None:
            continue
        value = getattr(obj, f.name)
        if value is None:
            continue
        flag, lo, hi, integer = spec
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok and integer:
            ok = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        if ok:
            ok = math.isfinite(value) and (lo is None or value >= lo) \
                and (hi is None or value <= hi)
        if not ok:
            raise ConfigError(f"{flag} = {value!r} is out of range: give "
                              f"{_range_text(lo, hi, integer)} ({cls}.{f.name})")


def default_run_dir(app: str) -> Path:
    """``build/apps/<app>`` (``<app>`` = the file stem for a CoreIR file)."""
    return Path("build/apps") / (Path(app).stem if app.endswith(".json") else app)


@dataclass
class AppParams:
    """What to compile: ``app`` (a shipped DSL app, :data:`mapper.apps.APPS`, or a CoreIR
    JSON path), image ``width`` x ``height`` (pixels, DSL apps), ``unroll`` (lanes),
    ``threshold`` (shift-register threshold of memory mapping, cycles), ``vectors`` (random
    vectors per kernel for the compute-mapping equivalence check; 0 = none) and their
    ``seed``."""

    app: str
    width: int = 64
    height: int = 64
    unroll: int = 1
    threshold: int = DEFAULT_SR_THRESHOLD
    vectors: int = 0
    seed: int = 0
    #: DNN layers (:data:`mapper.apps.dnn.LAYERS`; ``width`` is the input side): channels
    #: (c_in = c_out; gemm: k) and block (channels in parallel; gemm: the tile side),
    #: ``None`` = the layer's default; the accumulation loop's cycle budget
    #: (:mod:`mapper.dnn.array`), whether host-loaded operand MEMs double-buffer their
    #: shares (:mod:`mapper.dnn.memory`, "Double buffers"; else each holds its whole box) and
    #: whether a stalling reduction runs its tiles inside (loop perfection)
    channels: int | None = None
    block: int | None = None
    loop_cycles: int = 12
    double_buffer: bool = True
    flatten: bool = True
    #: put short-reuse delay lines in the PE tiles' ponds when the design has them
    #: (:mod:`mapper.mapping.memory` step 5); False: registers and MEM tiles only (the
    #: comparison of bench/bench_pond.py)
    pond: bool = True

    def validate(self) -> None:
        """Every numeric field in range (:data:`RANGES`); an app name is given. Raises
        :class:`ConfigError`."""
        if not isinstance(self.app, str) or not self.app.strip():
            raise ConfigError("APP is empty: give a shipped app (cgra run --help), a DNN "
                              "layer or a CoreIR JSON path")
        check_fields(self)

    def min_cycles(self) -> int:
        """A lower bound of the cycles one run streams: one output pixel per lane per cycle
        over the ``width`` x ``height`` image (DSL apps and CoreIR kernels; DNN layers
        stream fewer words than pixels per channel and have their own estimate)."""
        return math.ceil(self.width * self.height / max(1, self.unroll))


@dataclass
class FlowParams:
    """Parameters of every back-end stage; ``place_attempts``: placements tried when routing
    or pipelining fails on one (:func:`attempt_plan`: the analytical placement, then
    annealing alone from seeds ``place.seed + 1000 k``; each failure is reported, see
    :func:`mapper.closure.attempts`); ``timing_attempts``: of those, how many may
    miss the target clock (``pipeline.target_period_ps``) before the best one is kept."""

    pack: PackParams = field(default_factory=PackParams)
    place: PlaceParams = field(default_factory=PlaceParams)
    route: RouterParams = field(default_factory=RouterParams)
    pipeline: PipelineParams = field(default_factory=PipelineParams)
    place_attempts: int = 8
    timing_attempts: int = 3
    #: placement exponent sweep (Cascade): place, route and pipeline once per HPWL exponent
    #: and keep the result with the highest Fmax (ties: fewer registers, then the earlier
    #: exponent); ``()`` = only ``place.alpha``
    alphas: tuple[float, ...] = ()
    #: register-chain absorption (:func:`mapper.backend.absorb.absorb_chains`): a net whose
    #: PE sinks carry this many balancing registers or more gets a MEM delay line, placed
    #: around the kept placement, and the design is routed and pipelined again (kept only
    #: when it needs fewer registers); 0 = off. Runs with the place, route and pipeline
    #: stages (not on a resume from a later stage)
    absorb_chains: int = 0
    #: power gating (AHA paper §4.3, §5.5): the bitstream gates every tile that holds no
    #: placed instance and no routed node (:mod:`mapper.backend.power`); off by default, so
    #: every existing bitstream is unchanged (``cgra run --power-gate``)
    power_gate: bool = False
    #: quiet unused muxes (AHA paper §5.5): the bitstream gives every switch-box, register and
    #: connection-box mux that no routed net uses, in a tile that is on, a select whose
    #: input does not switch (:mod:`mapper.backend.quiet`); with ``power_gate`` the gated
    #: neighbours' clamped outputs are such inputs too. Off by default (every existing
    #: bitstream unchanged; ``cgra run --quiet-unused``)
    quiet_unused: bool = False
    #: map, place, route and pipeline inside the array columns ``[lo, hi)`` only
    #: (:func:`mapper.duplicate.column_collateral`): the bitstream then configures only
    #: those columns, and two apps in disjoint ranges run at once (AHA paper §4.4); ``None``
    #: = the whole array
    columns: tuple[int, int] | None = None

    def pipeline_params(self) -> PipelineParams:
        """``pipeline``, with the router parameters of its re-routes set to ``route`` when
        routing is power-aware (``route.power_cost`` != 1) and ``pipeline.router`` is unset:
        branch-delay matching re-routes with the same costs."""
        if self.route.power_cost != 1.0 and self.pipeline.router is None:
            return replace(self.pipeline, router=self.route)
        return self.pipeline

    def validate(self) -> None:
        """Every numeric field of the flow and of each stage's parameters in range
        (:data:`RANGES`); the exponents of the sweep finite and positive. Raises
        :class:`ConfigError`."""
        check_fields(self)
        for part in (self.place, self.route, self.pipeline):
            check_fields(part)
        for a in self.alphas:
            if not isinstance(a, (int, float)) or not math.isfinite(a) or not 0 < a <= 16:
                raise ConfigError(f"--alpha-sweep value {a!r} is out of range: give numbers "
                                  f"in (0, 16], e.g. 1,1.5,2")


def attempt_plan(p: FlowParams) -> list[PlaceParams]:
    """The placement parameters of the attempts, in order (:attr:`FlowParams.place_attempts`
    of them). Annealing alone (``analytical`` off): seeds ``seed + 1000 k``. With analytical
    placement (the default) the first attempt is analytical and the others anneal alone
    from seed ``seed + 1000 (k - 1)``: the analytical placement hardly depends on the seed
    (the global placement is deterministic, the annealer after it cold), so a retry after a
    failed branch-delay matching or a missed clock would find the same placement, while
    annealing explores others (and its longer routes offer more pipeline-register sites to
    balance a branch)."""
    n = max(1, p.place_attempts)
    base = p.place.seed
    if not p.place.analytical:
        return [replace(p.place, seed=base + 1000 * k) for k in range(n)]
    return [p.place] + [replace(p.place, seed=base + 1000 * k, analytical=False)
                        for k in range(n - 1)]


def attempt_name(pp: PlaceParams) -> str:
    """``"analytical seed 4"`` / ``"annealing seed 1004"``: one attempt, in messages."""
    return f"{'analytical' if pp.analytical else 'annealing'} seed {pp.seed}"


@dataclass
class SimOptions:
    """Options of the sim stage: ``image`` (a shipped scikit-image sample,
    :func:`mapper.images.shipped_samples`, or an image file path; read grey or colour by the
    app's input convention, :func:`mapper.apps.load_app_image`) and the Verilator build/run
    options. A DNN layer takes ``image`` as its first input's channels (``"random"``: a seeded
    random tensor, as every other input) and ``tensor_seed`` for its random tensors
    (:func:`mapper.apps.dnn.layer_inputs`)."""

    image: str = "camera"
    sim: Any = None
    tensor_seed: int = 0
    #: the simulated-cycle budget (:data:`DEFAULT_MAX_SIM_CYCLES`)
    max_cycles: int = DEFAULT_MAX_SIM_CYCLES
    #: energy estimate (:mod:`mapper.sim.energy`) in run_report.json and pnr_report.json;
    #: off by default (its yosys synthesis of the tile modules takes ~30 s once per design,
    #: then cached) (``cgra run --energy``)
    energy: bool = False
    #: a ready-valid design (:mod:`mapper.sim.rv_harness`): probability per cycle of an input
    #: stall and of output backpressure, and the seed of the draws (``cgra run --stall-in /
    #: --stall-out / --stall-seed``; ``None``: :class:`mapper.sim.verilator.SimParams`'
    #: defaults 0.3, 0.3, 1); ignored on a static design
    stall_in: float | None = None
    stall_out: float | None = None
    stall_seed: int | None = None
    #: how the Verilator model is built: "auto", "flat" or "blocks"
    #: (:attr:`mapper.sim.verilator.SimParams.hierarchy`; ``cgra run --model-hierarchy``;
    #: ``None``: SimParams' default, "auto")
    hierarchy: str | None = None

    def validate(self) -> None:
        """Every numeric field (and the Verilator options') in range. Raises
        :class:`ConfigError`."""
        check_fields(self)
        if self.sim is not None:
            check_fields(self.sim)


@dataclass
class DuplicateParams:
    """Low-unroll duplication (Cascade §V-C4, :mod:`mapper.duplicate`): the app is compiled at
    unroll 1 for a strip of the image, placed and routed on a sub-array of ``columns``
    columns (``None``: the array's columns divided by the unroll, a multiple of the tile
    pattern's period) and its configuration copied across the array; each copy is compiled at
    ``unroll`` (default 1; the copies are the app's unroll / ``unroll``)
    (``cgra run APP --unroll U --duplicate [--sub-array N] [--copy-unroll K]``)."""

    columns: int | None = None
    unroll: int = 1

    def validate(self) -> None:
        """``columns`` in range (:data:`RANGES`). Raises :class:`ConfigError`."""
        check_fields(self)


@dataclass
class RunParams:
    """One end-to-end run: the app and its mapping options (:class:`AppParams`), the design
    directory, the run directory ``out`` (``None`` = ``build/apps/<app>``), the back-end
    parameters (placement ``seed`` is ``flow.place.seed``), the sim options, and
    ``resume_from``: the first stage to run (earlier stages' files are reused, checked)."""

    app: AppParams
    design: str | Path
    out: str | Path | None = None
    flow: FlowParams = field(default_factory=FlowParams)
    sim: SimOptions = field(default_factory=SimOptions)
    resume_from: str = "map"
    #: low-unroll duplication (:class:`DuplicateParams`); ``None`` = off
    duplicate: DuplicateParams | None = None

    def validate(self) -> None:
        """All parameters in range (:meth:`AppParams.validate`, :meth:`FlowParams.validate`,
        :meth:`SimOptions.validate`) and the run within the simulated-cycle budget: raises
        :class:`ConfigError` before any work."""
        self.app.validate()
        self.flow.validate()
        self.sim.validate()
        if self.duplicate is not None:
            self.duplicate.validate()
        need = self.app.min_cycles()
        if need > self.sim.max_cycles:
            raise ConfigError(f"{self.app.app} on a {self.app.width}x{self.app.height} image "
                              f"at unroll {self.app.unroll} streams at least {need} cycles, "
                              f"over the simulation budget of {self.sim.max_cycles} "
                              f"(SimOptions.max_cycles); use a smaller image (--size), a "
                              f"larger unroll, or raise the budget with --max-cycles")


__all__ = ["AppParams", "DEFAULT_MAX_SIM_CYCLES", "DuplicateParams", "FlowParams", "RANGES", "RunParams",
           "SimOptions", "Step", "attempt_name", "attempt_plan", "check_fields",
           "default_run_dir"]
