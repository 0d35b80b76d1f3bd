"""Parameters of the compiler flow, in one module: what to compile (:class:`AppParams`), the
back end (:class:`FlowParams`, grouping each stage's own parameters), the simulation
(:class:`SimOptions`) and one end-to-end run (:class:`RunParams`); and the run directory default.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from mapper.mapping.memory import DEFAULT_SR_THRESHOLD
from mapper.backend.pack import PackParams
from mapper.backend.pipeline import PipelineParams
from mapper.backend.place import PlaceParams
from mapper.backend.route import RouterParams

Step = Callable[[str], None]


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


@dataclass
class FlowParams:
    """Parameters of every back-end stage; ``place_attempts``: placements tried when routing
    or pipelining fails on one (attempt ``k`` uses seed ``place.seed + 1000 k``; each
    failure is reported, see :func:`mapper.closure.attempts`); ``timing_attempts``: of those, how many may
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


def attempt_seeds(p: FlowParams) -> list[int]:
    """Placement seeds of the attempts (:attr:`FlowParams.place_attempts`)."""
    return [p.place.seed + 1000 * k for k in range(max(1, p.place_attempts))]


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


__all__ = ["AppParams", "FlowParams", "RunParams", "SimOptions", "Step",
           "attempt_seeds", "default_run_dir"]
