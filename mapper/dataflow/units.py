"""Physical-unit (PU) resource vectors for SARA's abstract resource mapping.

A physical unit offers a resource vector; a partition of a virtual unit (VU) or a group of
merged VUs has a cost vector, and it fits the unit iff every cost fits its resource under
the reduction rule of SARA Table I (Zhang et al., "SARA: Scaling a Reconfigurable Dataflow
Accelerator", ISCA 2021, §III-B1): ops sum against ``stages``, unique external sources per
width class sum against ``inputs``, values leaving per width class sum against ``outputs``,
live values across a stage boundary take the max against ``registers``, lanes the max
against ``lanes`` and the op set the union, which must be a subset of ``ops``.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

#: The width classes of a value: a scalar word, a ``lanes``-wide vector of words, or a
#: one-bit predicate (a comparison's result; Plasticine's 1-bit control network, a PE's
#: bit ports).
WIDTH_CLASSES: tuple[str, ...] = ("scalar", "vector", "bit")


@dataclass(frozen=True)
class PUConstraints:
    """What one physical unit offers (SARA §III-B1 / Table I).

    ``stages`` is the maximum number of ops in one partition (one op per pipeline stage,
    reduced by sum); ``inputs`` / ``outputs`` map a width class (``"scalar"``, ``"vector"``)
    to the maximum number of unique external sources entering / values leaving a partition
    (a class missing from the mapping offers 0 ports); ``registers`` is the maximum number
    of values live across any stage boundary (reduced by max); ``ops`` the op names the unit
    supports (the union of a partition's ops must be a subset); ``lanes`` the SIMD width in
    words (reduced by max); ``count`` how many such units the array has (``None``:
    unbounded).
    """

    kind: str                      # "pcu", "pmu", "pe", "mem", ... free text
    stages: int                    # max ops per partition (sum)
    inputs: Mapping[str, int]      # per width class ("scalar", "vector"): max unique external sources
    outputs: Mapping[str, int]     # per width class: max values leaving the partition
    registers: int                 # max live values across any stage boundary (max)
    ops: frozenset[str]            # supported op names; union of a partition's ops must be a subset
    lanes: int = 1                 # SIMD lanes (max)
    count: int | None = None       # how many such units the array has (None: unbounded)


#: A broad op set for a Plasticine PCU ("Ops: all" in pir's CUParams): integer and
#: floating-point arithmetic, comparisons, bit operations, selection and transcendentals.
PCU_OPS: frozenset[str] = frozenset({
    "add", "sub", "mul", "div", "mod", "neg", "abs", "min", "max", "mac", "fma",
    "lt", "le", "gt", "ge", "eq", "ne",
    "and", "or", "xor", "not", "shl", "shr", "ashr", "shl_const", "shr_const",
    "select", "mux", "mov", "pass",
    "fadd", "fsub", "fmul", "fdiv", "fmin", "fmax", "flt", "fle", "fgt", "fge", "feq",
    "fne", "fneg", "fabs",
    "exp", "log", "sqrt", "rsqrt", "recip", "sigmoid", "tanh", "relu",
    "to_float", "to_int", "reduce_add", "reduce_max", "reduce_min",
})

#: The Plasticine pattern compute unit as configured in SARA's code base (pir,
#: ``spade/src/param/routable/CUParams.scala``, summarised in the project's SARA notes
#: §1.3): 6 SIMD stages, 16 pipeline registers, 4 scalar and 4 vector outputs, 6 scalar
#: input FIFOs, 4 vector input FIFOs per terminal, 16 lanes (``vec`` in SpadeConfig); its
#: 4 control FIFOs are the ``bit`` inputs (the ``bit`` outputs, not listed there, are taken
#: equal).
#: These are plausible defaults from the code, not figures stated in the paper.
SARA_PCU = PUConstraints(
    kind="pcu",
    stages=6,
    inputs={"scalar": 6, "vector": 4, "bit": 4},
    outputs={"scalar": 4, "vector": 4, "bit": 4},
    registers=16,
    ops=PCU_OPS,
    lanes=16,
)
