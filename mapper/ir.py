"""The mapper's op-DAG IR: kernels (one DAG per ``hcompute_*`` stage) and stencil pipelines.

Ops are CoreIR / commonlib / corebit primitives, named exactly as in CoreIR JSON
(``coreir.add``, ``commonlib.smax``, ``corebit.and`` ...), because the rewrite-rule table of
the compute mapper is keyed by these names.  Two pseudo-ops complete a DAG: ``input`` (one
element of a kernel input; stencil windows are *indexed* inputs ``name[i]``) and the constants
``coreir.const`` / ``corebit.const``.

Value model: every data value is a ``width``-bit word (16 bits for all shipped apps) stored as
an unsigned integer in ``[0, 2**width)``; bit values are 0/1.  Signedness lives in the op
(``slt`` vs ``ult``, ``ashr`` vs ``lshr``, ``smax`` vs ``umax``), never in the value.
:func:`eval_op` is the reference semantics of every op (the numpy interpreter and the Halide
exporter are checked against each other; rule synthesis must use the same definitions):

- ``add sub mul shl``: result modulo ``2**width``.  ``mul`` keeps the low ``width`` bits.
- ``lshr a b`` / ``shl a b``: shift by the unsigned amount ``b``; ``b >= width`` gives 0.
- ``ashr a b``: arithmetic shift of ``a`` read as two's complement; ``b >= width`` gives the
  sign fill (0 or all ones).  (This is SMT-LIB ``bvashr``/``bvlshr``/``bvshl``.)
- ``eq neq ult ule ugt uge slt sle sgt sge``: 1-bit results.
- ``coreir.mux(in0, in1, sel)``: ``in1 if sel else in0`` (CoreIR's port order).
- ``smax smin umax umin``: signed / unsigned max and min.
- ``commonlib.abs a``: ``|a|`` of ``a`` read as signed, modulo ``2**width`` (abs(-32768) = 0x8000).
- ``commonlib.absd a b``: ``abs((a - b) mod 2**width)`` (the wrapped difference read as signed).
- ``commonlib.mult_middle a b``: bits ``[width*3/2-1 : width/2]`` of the ``2*width``-bit
  product of ``a`` and ``b`` both sign-extended (bits 23..8 for 16-bit words).
- ``corebit.and/or/xor/not/mux/const``: 1-bit logic; ``corebit.mux(in0, in1, sel)`` as above.
- ``float.add sub mul max min`` (16-bit results), ``float.lt le gt ge eq`` (1 bit): BFloat16
  on 16-bit encodings; ``float.from_s16 / from_u16 (a)``: the 16-bit integer ``a`` (signed /
  unsigned) rounded to bf16 (nearest even), ``float.to_s16 / to_u16 (a)``: the bf16 ``a``
  truncated toward zero and saturated to the 16-bit range, NaN -> 0; the policies of :mod:`peak.bf16` (round to nearest even, subnormals
  flushed, NaN ``0x7FC0``; reference :mod:`peak.ir.floatref`). CoreIR's DesignWare names
  ``float_DW.fp_add`` / ``fp_mul`` are imported as ``float.add`` / ``float.mul``
  (:data:`COREIR_ALIASES`). Never constant-folded with an identity operand.
- ``memory.rom2 (raddr)``: a lookup table, ``table[min(raddr, len(table) - 1)]`` with
  ``raddr`` unsigned (the node's :attr:`Node.table`, 1..65536 entries of ``width`` bits;
  an index past the end reads the last entry, so the MEM tile's LUT mode, which reads
  ``raddr`` modulo its capacity, is given an index the mapper has clamped). CoreIR's
  ``memory.rom2`` (a synchronous ROM) imports as this op; its one-cycle read latency is the
  MEM tile's and is balanced like any core latency.

Pipelines: a :class:`Pipeline` is a list of :class:`Stage` in topological order; each stage has
one kernel whose indexed inputs are bound to :class:`Window` s (the producer — a pipeline input
or an earlier stage — and one ``(dx, dy)`` offset per index: element ``i`` of the window for
output pixel ``(x, y)`` is ``producer(x + dx_i, y + dy_i)``).  Boundary handling: a stage's
output exists only where every window element lies inside its producer's domain, so the domain
of each stage is the intersection of its producers' domains shifted by the negated offsets
(output images shrink). An input may be *padded* (:attr:`PipelineInput.pad`, repeat-edge
values made on the host, :func:`pad_image`) and the outputs *cropped* (:attr:`Pipeline.crop`):
that is how the DSL's ``repeat_edge`` keeps the output the size of the input.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from cgra.errors import MappingError
import numpy as np

DATA = "d"
BIT = "b"


@dataclass(frozen=True)
class OpSpec:
    """Signature of an IR op: operand kinds (``'d'`` data word, ``'b'`` bit), result kind."""

    name: str
    operands: tuple[str, ...]
    result: str
    ports: tuple[str, ...]


def _spec(name: str, operands: str, result: str, ports: tuple[str, ...] | None = None) -> OpSpec:
    if ports is None:
        ports = tuple(f"in{i}" for i in range(len(operands))) if len(operands) > 1 else (
            ("in",) if len(operands) == 1 else ())
    return OpSpec(name, tuple(operands), result, ports)


#: Every op of the IR by its CoreIR name.
OPS: dict[str, OpSpec] = {}
for _n in ("add", "sub", "mul", "lshr", "ashr", "shl", "and", "or", "xor"):
    OPS[f"coreir.{_n}"] = _spec(f"coreir.{_n}", "dd", DATA)
OPS["coreir.not"] = _spec("coreir.not", "d", DATA)
for _n in ("eq", "neq", "ult", "ule", "ugt", "uge", "slt", "sle", "sgt", "sge"):
    OPS[f"coreir.{_n}"] = _spec(f"coreir.{_n}", "dd", BIT)
OPS["coreir.mux"] = _spec("coreir.mux", "ddb", DATA, ("in0", "in1", "sel"))
OPS["coreir.const"] = _spec("coreir.const", "", DATA)
for _n in ("smax", "smin", "umax", "umin", "absd", "mult_middle"):
    OPS[f"commonlib.{_n}"] = _spec(f"commonlib.{_n}", "dd", DATA)
OPS["commonlib.abs"] = _spec("commonlib.abs", "d", DATA)
for _n in ("and", "or", "xor"):
    OPS[f"corebit.{_n}"] = _spec(f"corebit.{_n}", "bb", BIT)
OPS["corebit.not"] = _spec("corebit.not", "b", BIT)
OPS["corebit.mux"] = _spec("corebit.mux", "bbb", BIT, ("in0", "in1", "sel"))
OPS["corebit.const"] = _spec("corebit.const", "", BIT)
for _n in ("add", "sub", "mul", "max", "min"):
    OPS[f"float.{_n}"] = _spec(f"float.{_n}", "dd", DATA)
for _n in ("lt", "le", "gt", "ge", "eq"):
    OPS[f"float.{_n}"] = _spec(f"float.{_n}", "dd", BIT)
for _n in ("from_s16", "from_u16", "to_s16", "to_u16"):
    OPS[f"float.{_n}"] = _spec(f"float.{_n}", "d", DATA)
#: A lookup table (CoreIR ``memory.rom2``): the node's :attr:`Node.table` read at ``raddr``.
LUT_OP = "memory.rom2"
OPS[LUT_OP] = _spec(LUT_OP, "d", DATA, ("raddr",))
#: Most entries of a lookup table (the MEM tile's LUT mode reads a 16-bit index; a table
#: must also fit the MEM tile, which :mod:`lake.lut` checks when the design is known).
LUT_MAX_ENTRIES = 1 << 16

#: BFloat16 ops (``float.*``): 16-bit operands and results (bf16 encodings).
FLOAT_OPS = frozenset(k for k in OPS if k.startswith("float."))
FLOAT_WIDTH = 16
#: CoreIR genref/modref names of float ops whose IR name differs (the Halide-to-CGRA flow
#: emits DesignWare ``float_DW.fp_add`` / ``fp_mul``; the rest of CoreIR's ``float``
#: library is named as the IR: ``float.sub``, ``float.max``, ``float.lt`` ...).
COREIR_ALIASES: dict[str, str] = {
    "float_DW.fp_add": "float.add", "float_DW.fp_mul": "float.mul",
    "float_DW.fp_sub": "float.sub",
}

INPUT = "input"
CONST_OPS = frozenset({"coreir.const", "corebit.const"})


def to_signed(v: int, width: int) -> int:
    """Read the ``width``-bit pattern ``v`` as a two's-complement integer."""
    v &= (1 << width) - 1
    return v - (1 << width) if v >> (width - 1) else v


def eval_op(op: str, args: list[int], width: int, value: int | None = None,
            table: tuple[int, ...] | None = None) -> int:
    """Reference semantics of one IR op on Python ints (see the module docstring).

    ``args`` are unsigned bit patterns; data operands/results are ``width`` bits, bit operands
    and results are 0/1; ``table`` is the lookup table of :data:`LUT_OP`.  Raises
    :class:`MappingError` for an unknown op or a lookup without a table.
    """
    m = (1 << width) - 1
    if op == LUT_OP:
        if not table:
            raise MappingError(f"eval_op: {LUT_OP} needs its table (1..{LUT_MAX_ENTRIES} "
                               f"entries)")
        return int(table[min(args[0] & m, len(table) - 1)]) & m
    s = [to_signed(a, width) for a in args] if op not in CONST_OPS else []
    if op == "coreir.const":
        return int(value) & m
    if op == "corebit.const":
        return int(value) & 1
    if op in FLOAT_OPS:
        if width != FLOAT_WIDTH:
            raise MappingError(f"eval_op: {op} is a BFloat16 op on 16-bit encodings, not "
                               f"{width}-bit values")
        from peak.ir.floatref import REFERENCES  # deferred: loads z3, pysmt, hwtypes, 1 more only when called
        return REFERENCES[op](*(a & 0xFFFF for a in args))
    name = op.split(".", 1)[1]
    if op.startswith("corebit."):
        a = args
        if name == "and":
            return a[0] & a[1]
        if name == "or":
            return a[0] | a[1]
        if name == "xor":
            return a[0] ^ a[1]
        if name == "not":
            return 1 - a[0]
        if name == "mux":
            return a[1] if a[2] else a[0]
    a = args
    table = {
        "add": lambda: (a[0] + a[1]) & m,
        "sub": lambda: (a[0] - a[1]) & m,
        "mul": lambda: (a[0] * a[1]) & m,
        "lshr": lambda: 0 if a[1] >= width else a[0] >> a[1],
        "shl": lambda: 0 if a[1] >= width else (a[0] << a[1]) & m,
        "ashr": lambda: (s[0] >> min(a[1], width - 1)) & m,
        "and": lambda: a[0] & a[1],
        "or": lambda: a[0] | a[1],
        "xor": lambda: a[0] ^ a[1],
        "not": lambda: ~a[0] & m,
        "eq": lambda: int(a[0] == a[1]),
        "neq": lambda: int(a[0] != a[1]),
        "ult": lambda: int(a[0] < a[1]),
        "ule": lambda: int(a[0] <= a[1]),
        "ugt": lambda: int(a[0] > a[1]),
        "uge": lambda: int(a[0] >= a[1]),
        "slt": lambda: int(s[0] < s[1]),
        "sle": lambda: int(s[0] <= s[1]),
        "sgt": lambda: int(s[0] > s[1]),
        "sge": lambda: int(s[0] >= s[1]),
        "mux": lambda: a[1] if a[2] else a[0],
        "smax": lambda: a[0] if s[0] >= s[1] else a[1],
        "smin": lambda: a[0] if s[0] <= s[1] else a[1],
        "umax": lambda: max(a[0], a[1]),
        "umin": lambda: min(a[0], a[1]),
        "abs": lambda: abs(s[0]) & m,
        "absd": lambda: abs(to_signed(a[0] - a[1], width)) & m,
        "mult_middle": lambda: ((s[0] * s[1]) >> (width // 2)) & m,
    }
    if op.startswith(("coreir.", "commonlib.")) and name in table and op in OPS:
        return table[name]()
    raise MappingError(f"eval_op: unknown IR op '{op}'; known ops: {', '.join(sorted(OPS))}")


@dataclass(frozen=True)
class Node:
    """One DAG node.  ``args`` are ids of earlier nodes (operand order = the op's ports).

    ``width`` is the result width in bits (1 for bit results).  ``value`` is set for constants;
    ``input`` = ``(input name, element index)`` for ``op == 'input'``; ``table`` (entries of
    ``width`` bits) for a lookup (:data:`LUT_OP`).
    """

    id: int
    op: str
    args: tuple[int, ...]
    width: int
    value: int | None = None
    input: tuple[str, int] | None = None
    name: str | None = None
    table: tuple[int, ...] | None = None


@dataclass
class Kernel:
    """One compute kernel: a DAG of :class:`Node` (ids are list positions, topological order).

    ``inputs`` maps an input name to its element count (a stencil window of n words is one
    input with n indexed elements; a scalar input has 1); ``input_widths`` its element width
    in bits.  ``outputs`` maps output names to node ids.
    """

    name: str
    nodes: list[Node] = field(default_factory=list)
    inputs: dict[str, int] = field(default_factory=dict)
    input_widths: dict[str, int] = field(default_factory=dict)
    outputs: dict[str, int] = field(default_factory=dict)
    _input_nodes: dict[tuple[str, int], int] = field(default_factory=dict, repr=False)

    def declare_input(self, name: str, size: int, width: int = 16) -> None:
        """Declare input ``name`` with ``size`` elements of ``width`` bits."""
        if size < 1:
            raise MappingError(f"kernel {self.name}: input '{name}' must have >= 1 element")
        self.inputs[name] = max(size, self.inputs.get(name, 0))
        self.input_widths[name] = width

    def input(self, name: str, index: int = 0) -> int:
        """Node id of element ``index`` of input ``name`` (created on first use)."""
        if name not in self.inputs:
            raise MappingError(f"kernel {self.name}: input '{name}' is not declared")
        if not 0 <= index < self.inputs[name]:
            raise MappingError(f"kernel {self.name}: input '{name}' has {self.inputs[name]} "
                               f"elements; index {index} is out of range")
        key = (name, index)
        if key not in self._input_nodes:
            nid = len(self.nodes)
            self.nodes.append(Node(nid, INPUT, (), self.input_widths[name], input=key))
            self._input_nodes[key] = nid
        return self._input_nodes[key]

    def const(self, value: int, width: int = 16) -> int:
        """A new constant node (``corebit.const`` when ``width == 1``)."""
        op = "corebit.const" if width == 1 else "coreir.const"
        nid = len(self.nodes)
        self.nodes.append(Node(nid, op, (), width, value=int(value) & ((1 << width) - 1)))
        return nid

    def add(self, op: str, *args: int, width: int | None = None, name: str | None = None,
            table: "tuple[int, ...] | list[int] | None" = None) -> int:
        """Append op ``op`` applied to node ids ``args``; returns the new node id.

        The result width is 1 for bit results, else ``width`` or the first data operand's width.
        ``table``: the entries of a lookup (:data:`LUT_OP`, required there, refused elsewhere).
        Raises :class:`MappingError` on an unknown op, wrong arity or operand kind, or a
        lookup table that is empty, longer than :data:`LUT_MAX_ENTRIES` or has an entry that
        does not fit the result width.
        """
        spec = OPS.get(op)
        if spec is None or op in CONST_OPS:
            raise MappingError(f"kernel {self.name}: unknown op '{op}' (node {name or len(self.nodes)})")
        if len(args) != len(spec.operands):
            raise MappingError(f"kernel {self.name}: op {op} takes {len(spec.operands)} operands, "
                               f"got {len(args)} (node {name or len(self.nodes)})")
        for port, kind, a in zip(spec.ports, spec.operands, args, strict=True):
            if not 0 <= a < len(self.nodes):
                raise MappingError(f"kernel {self.name}: op {op} port {port} refers to missing node {a}")
            aw = self.nodes[a].width
            if (kind == BIT) != (aw == 1):
                raise MappingError(f"kernel {self.name}: op {op} port {port} expects a "
                                   f"{'bit' if kind == BIT else 'data word'}, got a {aw}-bit value "
                                   f"(node {name or len(self.nodes)})")
        if spec.result == BIT:
            w = 1
        else:
            data_ws = [self.nodes[a].width for a, k in zip(args, spec.operands, strict=True) if k == DATA]
            w = width if width is not None else (data_ws[0] if data_ws else 16)
            if any(dw != w for dw in data_ws):
                raise MappingError(f"kernel {self.name}: op {op} mixes operand widths {data_ws} "
                                   f"(node {name or len(self.nodes)})")
        nid = len(self.nodes)
        if (op == LUT_OP) != (table is not None):
            raise MappingError(f"kernel {self.name}: node {name or nid}: "
                               + (f"{op} needs a table" if op == LUT_OP
                                  else f"only {LUT_OP} takes a table, not {op}"))
        if table is not None:
            table = tuple(int(v) for v in table)
            if not 1 <= len(table) <= LUT_MAX_ENTRIES:
                raise MappingError(f"kernel {self.name}: lookup table of node {name or nid} "
                                   f"has {len(table)} entries; give 1..{LUT_MAX_ENTRIES}")
            bad = [v for v in table if not 0 <= v < 1 << w]
            if bad:
                raise MappingError(f"kernel {self.name}: lookup table of node {name or nid}: "
                                   f"entry {bad[0]} does not fit {w} bits (store entries as "
                                   f"unsigned {w}-bit patterns)")
        self.nodes.append(Node(nid, op, tuple(args), w, name=name, table=table))
        return nid

    def copy_op(self, n: Node, args: "list[int] | tuple[int, ...]", name: str | None = None
                ) -> int:
        """Append a copy of op node ``n`` (op, width, table) on new operand ids ``args``;
        ``name`` defaults to ``n.name``."""
        return self.add(n.op, *args, width=n.width, name=n.name if name is None else name,
                        table=n.table)

    def set_output(self, name: str, nid: int) -> None:
        """Make node ``nid`` the kernel output ``name``."""
        if not 0 <= nid < len(self.nodes):
            raise MappingError(f"kernel {self.name}: output '{name}' refers to missing node {nid}")
        self.outputs[name] = nid

    # ------------------------------------------------------------------ queries
    def live_nodes(self) -> list[Node]:
        """Nodes reachable from the outputs, in topological order."""
        live: set[int] = set()
        stack = list(self.outputs.values())
        while stack:
            n = stack.pop()
            if n in live:
                continue
            live.add(n)
            stack.extend(self.nodes[n].args)
        return [n for n in self.nodes if n.id in live]

    def live_inputs(self) -> list[tuple[str, int]]:
        """Input elements ``(name, index)`` reachable from the outputs, in topological order
        (the order of a stage's reads in :mod:`mapper.mapping.schedule` and :mod:`mapper.mapping.polyhedral`)."""
        return [n.input for n in self.live_nodes() if n.op == INPUT]

    def op_counts(self) -> Counter:
        """Count of each compute op reachable from the outputs (no inputs, no constants)."""
        return Counter(n.op for n in self.live_nodes() if n.op != INPUT and n.op not in CONST_OPS)

    def num_ops(self) -> int:
        """Number of compute ops (the PE count when every op takes one PE)."""
        return sum(self.op_counts().values())

    def evaluate(self, inputs: dict[str, list[int]]) -> dict[str, int]:
        """Evaluate on Python ints with :func:`eval_op`; ``inputs[name][i]`` = element i."""
        vals: list[int] = []
        for n in self.nodes:
            if n.op == INPUT:
                name, idx = n.input
                if name not in inputs or len(inputs[name]) <= idx:
                    raise MappingError(f"kernel {self.name}: no value given for input {name}[{idx}]")
                vals.append(int(inputs[name][idx]) & ((1 << n.width) - 1))
            else:
                w = self.nodes[n.args[0]].width if n.args and OPS[n.op].result == BIT \
                    and OPS[n.op].operands[0] == DATA else n.width
                vals.append(eval_op(n.op, [vals[a] for a in n.args], w, n.value, n.table))
        return {k: vals[v] for k, v in self.outputs.items()}

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (round trip with :meth:`from_dict`)."""
        return {
            "name": self.name,
            "inputs": {k: [v, self.input_widths[k]] for k, v in self.inputs.items()},
            "outputs": dict(self.outputs),
            "nodes": [{"id": n.id, "op": n.op, "args": list(n.args), "width": n.width,
                       **({"value": n.value} if n.value is not None else {}),
                       **({"input": list(n.input)} if n.input is not None else {}),
                       **({"name": n.name} if n.name is not None else {}),
                       **({"table": list(n.table)} if n.table is not None else {})}
                      for n in self.nodes],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Kernel:
        """Inverse of :meth:`to_dict`; validates every node."""
        k = cls(d["name"])
        for name, (size, width) in d["inputs"].items():
            k.declare_input(name, size, width)
        for nd in d["nodes"]:
            if nd["op"] == INPUT:
                got = k.input(nd["input"][0], nd["input"][1])
            elif nd["op"] in CONST_OPS:
                got = k.const(nd["value"], nd["width"])
            else:
                got = k.add(nd["op"], *nd["args"], width=nd["width"], name=nd.get("name"),
                            table=nd.get("table"))
            if got != nd["id"]:
                raise MappingError(f"kernel {k.name}: node ids must be consecutive (node {nd['id']})")
        for name, nid in d["outputs"].items():
            k.set_output(name, nid)
        return k


# ---------------------------------------------------------------------------- pipelines
@dataclass(frozen=True)
class Box:
    """A half-open 2-D domain ``[x0, x1) x [y0, y1)`` in the pipeline's pixel coordinates."""

    x0: int
    x1: int
    y0: int
    y1: int

    @property
    def width(self) -> int:
        return self.x1 - self.x0

    @property
    def height(self) -> int:
        return self.y1 - self.y0

    def empty(self) -> bool:
        return self.width <= 0 or self.height <= 0


#: The unit rate of a window: ``((a_x, b_x), (a_y, b_y)) = ((1, 1), (1, 1))``.
UNIT_RATE = ((1, 1), (1, 1))


@dataclass(frozen=True)
class Window:
    """Binding of one indexed kernel input: element ``i`` for output pixel ``(x, y)`` reads
    ``producer(floor((a_x * x + dx_i) / b_x), floor((a_y * y + dy_i) / b_y))`` with
    ``rate = ((a_x, b_x), (a_y, b_y))`` (positive integers; ``((1, 1), (1, 1))`` = a stencil,
    ``((2, 1), (2, 1))`` = stride 2 (downsample), ``((1, 2), (1, 2))`` = each pixel twice
    (upsample)). The offsets are inside the floor (in units of ``1 / b``): ``x/2 + 1`` is
    offset 2, ``(x + 1)/2`` offset 1; at unit ``b`` they are plain pixel offsets."""

    producer: str
    offsets: tuple[tuple[int, int], ...]
    rate: tuple[tuple[int, int], tuple[int, int]] = UNIT_RATE

    def coord(self, v: Any, dim: int, d: int) -> Any:
        """Producer coordinate along ``dim`` (0 = x) for output coordinate(s) ``v`` (int or
        integer numpy array) and window offset ``d``."""
        a, b = self.rate[dim]
        return (a * v + d) // b


@dataclass
class Stage:
    """One pipeline stage: a kernel with one output ``out`` and its input windows.

    ``signed`` says how the stage's 16-bit output words are read (for images and Halide types).
    """

    name: str
    kernel: Kernel
    windows: dict[str, Window]
    signed: bool = False


#: No padding: ``(left, right, top, bottom)`` pixels added around an input image.
NO_PAD = (0, 0, 0, 0)


#: Coordinate patterns an input may be (:attr:`PipelineInput.pattern`): dimension ``x`` or ``y``.
PATTERN_DIMS = ("x", "y")


@dataclass(frozen=True)
class PipelineInput:
    """An input image: ``shape = (width, height)`` in pixels of the streamed image, words of
    ``width_bits`` bits. ``pad = (left, right, top, bottom)``: the streamed image is the
    source image (:attr:`source_shape`) extended by that many pixels on each side with
    Halide's ``BoundaryConditions.repeat_edge`` values (:func:`pad_image`; the DSL's
    ``repeat_edge``).

    ``pattern = (dim, modulus, offset)``: not an image the user gives but the pixel's own
    coordinate, ``(x + offset) % modulus`` (``dim`` ``"x"``) or ``(y + offset) % modulus``
    (:meth:`pattern_image`; the DSL's ``x % 2``). On the array it is read from a MEM tile
    holding one row (or column) of the pattern, loaded with the bitstream
    (:func:`mapper.mapping.memory.pattern_rom`), not streamed in."""

    name: str
    shape: tuple[int, int]
    signed: bool = False
    width_bits: int = 16
    pad: tuple[int, int, int, int] = NO_PAD
    pattern: tuple[str, int, int] | None = None

    def pattern_image(self) -> Any:
        """The ``[y, x]`` image (uint16, :attr:`shape`) of a :attr:`pattern` input."""

        dim, m, off = self.pattern
        w, h = self.shape
        if dim == "x":
            row = (np.arange(w) + off) % m
            return np.broadcast_to(row, (h, w)).astype(np.uint16)
        col = (np.arange(h) + off) % m
        return np.broadcast_to(col[:, None], (h, w)).astype(np.uint16)

    @property
    def source_shape(self) -> tuple[int, int]:
        """``(width, height)`` of the image the user gives (before padding)."""
        left, right, top, bottom = self.pad
        return (self.shape[0] - left - right, self.shape[1] - top - bottom)

    def prepare(self, img: Any, who: str = "pipeline") -> Any:
        """The streamed image of this input from the user's array ``img`` (``[y, x]``, shape
        ``(height, width)`` of :attr:`source_shape`): padded with repeat-edge values when
        :attr:`pad` is set. Raises :class:`MappingError` for a wrong shape."""

        a = np.asarray(img)
        w, h = self.source_shape
        if a.shape != (h, w):
            raise MappingError(f"{who}: input '{self.name}' must have shape (height, width) = "
                               f"{(h, w)}, got {a.shape}")
        return pad_image(a, self.pad)


def pad_image(img: Any, pad: tuple[int, int, int, int]) -> Any:
    """``img`` (``[y, x]``) extended by ``pad = (left, right, top, bottom)`` pixels, each new
    pixel a copy of the nearest edge pixel (Halide ``BoundaryConditions.repeat_edge``,
    numpy ``pad(mode="edge")``); the array itself when ``pad`` is all zeros."""

    left, right, top, bottom = pad
    if not any(pad):
        return img
    return np.pad(np.asarray(img), ((top, bottom), (left, right)), mode="edge")


@dataclass
class Pipeline:
    """A stencil pipeline; ``output`` is the (first) output stage, ``more_outputs`` further
    output stages (each streams out on its own IO tiles; :attr:`outputs` lists them all);
    ``unroll`` = output pixels per cycle along x. ``crop``: output stage name -> the box of its
    valid domain it computes (a clamped-edge pipeline, whose padded inputs make the valid
    domain larger than the image the user asked for: :meth:`domains`)."""

    name: str
    inputs: dict[str, PipelineInput]
    stages: list[Stage]
    output: str
    unroll: int = 1
    crop: dict[str, Box] = field(default_factory=dict)
    more_outputs: tuple[str, ...] = ()

    @property
    def outputs(self) -> tuple[str, ...]:
        """Every output stage: :attr:`output` first, then :attr:`more_outputs`."""
        return (self.output, *self.more_outputs)

    def stage(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        raise MappingError(f"pipeline {self.name}: no stage named '{name}'")

    def validate(self) -> None:
        """Check names, topological order, window sizes and offsets, and that coordinate
        patterns (:attr:`PipelineInput.pattern`) are read at the reader's own pixel in a
        single-rate pipeline without padding; raises MappingError."""
        seen = set(self.inputs)
        if self.unroll < 1:
            raise MappingError(f"pipeline {self.name}: unroll must be >= 1, got {self.unroll}")
        for pin in self.inputs.values():
            if pin.pattern is None:
                continue
            dim, m, off = pin.pattern
            if dim not in PATTERN_DIMS or int(m) < 1 or not 0 <= int(off) < int(m):
                raise MappingError(f"pipeline {self.name}: input {pin.name}: pattern {pin.pattern} "
                                   f"must be (x|y, modulus >= 1, 0 <= offset < modulus)")
            if any(pin.pad) or self.multi_rate:
                raise MappingError(f"pipeline {self.name}: coordinate {dim} % {m} needs a "
                                   f"single-rate pipeline without repeat_edge (the pattern "
                                   f"runs at the input's rate and size)")
            for s, iname in self.consumers(pin.name):
                if tuple(s.windows[iname].offsets) != ((0, 0),):
                    raise MappingError(f"pipeline {self.name}: stage {s.name} reads coordinate "
                                       f"pattern {pin.name} at offsets "
                                       f"{list(s.windows[iname].offsets)}; read it at (0, 0)")
        for s in self.stages:
            if s.name in seen:
                raise MappingError(f"pipeline {self.name}: duplicate stage/input name '{s.name}'")
            if set(s.kernel.outputs) != {"out"}:
                raise MappingError(f"pipeline {self.name}: stage {s.name} kernel must have exactly "
                                   f"one output 'out', has {sorted(s.kernel.outputs)}")
            for iname, size in s.kernel.inputs.items():
                w = s.windows.get(iname)
                if w is None:
                    raise MappingError(f"pipeline {self.name}: stage {s.name} input '{iname}' has "
                                       f"no window binding")
                if w.producer not in seen:
                    raise MappingError(f"pipeline {self.name}: stage {s.name} reads '{w.producer}' "
                                       f"which is not an input or an earlier stage")
                if len(w.offsets) != size:
                    raise MappingError(f"pipeline {self.name}: stage {s.name} input '{iname}' has "
                                       f"{size} elements but {len(w.offsets)} offsets")
                if any(len(r) != 2 or int(r[0]) < 1 or int(r[1]) < 1 for r in w.rate) or \
                        len(w.rate) != 2:
                    raise MappingError(f"pipeline {self.name}: stage {s.name} input '{iname}': "
                                       f"rate {w.rate} must be two (a, b) pairs of positive "
                                       f"integers")
                if w.rate != UNIT_RATE and self.unroll != 1:
                    raise MappingError(f"pipeline {self.name}: stage {s.name} reads "
                                       f"'{w.producer}' at rate {w.rate} (strided or repeated "
                                       f"access) and unroll is {self.unroll}; multi-rate "
                                       f"pipelines run with unroll 1")
            seen.add(s.name)
        names = {s.name for s in self.stages}
        for o in self.outputs:
            if o not in names:
                raise MappingError(f"pipeline {self.name}: output '{o}' is not a stage")
        if len(set(self.outputs)) != len(self.outputs):
            raise MappingError(f"pipeline {self.name}: outputs {list(self.outputs)} name a "
                               f"stage twice")
        if set(self.crop) - set(self.outputs):
            raise MappingError(f"pipeline {self.name}: crop names "
                               f"{sorted(set(self.crop) - set(self.outputs))}, not outputs")
        shapes = {(i.shape, i.pad) for i in self.inputs.values()}
        if len(shapes) > 1:
            raise MappingError(f"pipeline {self.name}: all inputs must share one shape and "
                               f"padding, got {sorted(shapes)} ((width, height), pad)")
        for i in self.inputs.values():
            if any(p < 0 for p in i.pad) or min(i.source_shape) < 1:
                raise MappingError(f"pipeline {self.name}: input {i.name}: pad {i.pad} must be "
                                   f">= 0 and leave a source image >= 1x1 of shape {i.shape}")

    def domains(self) -> dict[str, Box]:
        """Valid output domain of every input and stage (see the module docstring)."""
        self.validate()
        dom: dict[str, Box] = {}
        for i in self.inputs.values():
            dom[i.name] = Box(0, i.shape[0], 0, i.shape[1])
        for s in self.stages:
            x0, x1, y0, y1 = -(1 << 30), 1 << 30, -(1 << 30), 1 << 30
            for w in s.windows.values():
                p = dom[w.producer]
                for dx, dy in w.offsets:
                    (ax, bx), (ay, by) = w.rate
                    # floor((a*v + d)/b) in [lo, hi)  <=>  ceil((lo*b - d)/a) <= v <= ...
                    x0 = max(x0, -(-(p.x0 * bx - dx) // ax))
                    x1 = min(x1, (p.x1 * bx - dx - 1) // ax + 1)
                    y0 = max(y0, -(-(p.y0 * by - dy) // ay))
                    y1 = min(y1, (p.y1 * by - dy - 1) // ay + 1)
            if not s.windows:
                raise MappingError(f"pipeline {self.name}: stage {s.name} reads no input; "
                                   f"a constant stage has no domain")
            b = Box(x0, x1, y0, y1)
            if b.empty():
                raise MappingError(f"pipeline {self.name}: stage {s.name} has an empty domain "
                                   f"{b} (the image is smaller than its stencil)")
            if s.name in self.crop:
                c = self.crop[s.name]
                if not (b.x0 <= c.x0 < c.x1 <= b.x1 and b.y0 <= c.y0 < c.y1 <= b.y1):
                    raise MappingError(f"pipeline {self.name}: crop {c} of output {s.name} is "
                                       f"not inside its valid domain {b}")
                b = c
            dom[s.name] = b
        return dom

    @property
    def multi_rate(self) -> bool:
        """True when some window reads its producer at a non-unit rate."""
        return any(w.rate != UNIT_RATE for s in self.stages for w in s.windows.values())

    def consumers(self, producer: str) -> list[tuple[Stage, str]]:
        """``(stage, kernel input name)`` pairs reading ``producer``."""
        return [(s, i) for s in self.stages for i, w in s.windows.items() if w.producer == producer]

    def op_counts(self) -> Counter:
        """Total compute-op counts over all stages (one lane)."""
        c: Counter = Counter()
        for s in self.stages:
            c.update(s.kernel.op_counts())
        return c

    def kernels(self) -> dict[str, Kernel]:
        """Stage name -> kernel (one lane)."""
        return {s.name: s.kernel for s in self.stages}

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (round trip with :meth:`from_dict`)."""
        return {
            "name": self.name, "output": self.output, "unroll": self.unroll,
            **({"more_outputs": list(self.more_outputs)} if self.more_outputs else {}),
            **({"crop": {k: [c.x0, c.x1, c.y0, c.y1] for k, c in self.crop.items()}}
               if self.crop else {}),
            "inputs": [{"name": i.name, "shape": list(i.shape), "signed": i.signed,
                        "width_bits": i.width_bits,
                        **({"pad": list(i.pad)} if any(i.pad) else {}),
                        **({"pattern": list(i.pattern)} if i.pattern else {})}
                       for i in self.inputs.values()],
            "stages": [{"name": s.name, "signed": s.signed, "kernel": s.kernel.to_dict(),
                        "windows": {k: {"producer": w.producer,
                                        "offsets": [list(o) for o in w.offsets],
                                        **({"rate": [list(r) for r in w.rate]}
                                           if w.rate != UNIT_RATE else {})}
                                    for k, w in s.windows.items()}} for s in self.stages],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Pipeline:
        """Inverse of :meth:`to_dict`; validates the result."""
        try:
            p = cls(d["name"],
                    {i["name"]: PipelineInput(i["name"], tuple(i["shape"]), i["signed"],
                                              i["width_bits"],
                                              tuple(int(v) for v in i.get("pad", NO_PAD)),
                                              (str(i["pattern"][0]), int(i["pattern"][1]),
                                               int(i["pattern"][2])) if i.get("pattern")
                                              else None)
                     for i in d["inputs"]},
                    [Stage(s["name"], Kernel.from_dict(s["kernel"]),
                           {k: Window(w["producer"], tuple(tuple(o) for o in w["offsets"]),
                                      tuple(tuple(r) for r in w.get("rate", UNIT_RATE)))
                            for k, w in s["windows"].items()}, s["signed"])
                     for s in d["stages"]],
                    d["output"], d["unroll"],
                    {k: Box(*(int(v) for v in c)) for k, c in d.get("crop", {}).items()},
                    tuple(d.get("more_outputs", ())))
        except (KeyError, TypeError) as exc:
            raise MappingError(f"pipeline JSON: missing or malformed field ({exc!r})") from None
        p.validate()
        return p


def unroll_stage(stage: Stage, unroll: int) -> Stage:
    """The ``unroll``-lane version of a stage: lane ``l`` computes pixel ``(U*xo + l, y)``.

    Each input window becomes the union of the lanes' windows (offset ``(dx + l, dy)``), so
    lanes share window elements; outputs are ``out_0 .. out_{U-1}``.  The returned stage has
    the same ``windows`` keys with merged offsets.  Source: the Halide-to-CGRA flow's
    ``unroll`` of the innermost output loop.
    """
    k = stage.kernel
    merged: dict[str, list[tuple[int, int]]] = {}
    for iname, w in stage.windows.items():
        offs = sorted({(dx + lane, dy) for lane in range(unroll) for dx, dy in w.offsets},
                      key=lambda o: (o[1], o[0]))
        merged[iname] = offs
    nk = Kernel(k.name if unroll == 1 else f"{k.name}_u{unroll}")
    for iname, offs in merged.items():
        nk.declare_input(iname, len(offs), k.input_widths[iname])
    for lane in range(unroll):
        remap: dict[int, int] = {}
        for n in k.nodes:
            if n.op == INPUT:
                iname, idx = n.input
                dx, dy = stage.windows[iname].offsets[idx]
                remap[n.id] = nk.input(iname, merged[iname].index((dx + lane, dy)))
            elif n.op in CONST_OPS:
                remap[n.id] = nk.const(n.value, n.width)
            else:
                remap[n.id] = nk.copy_op(n, [remap[a] for a in n.args],
                                         name=f"{n.name}_l{lane}" if n.name else None)
        nk.set_output(f"out_{lane}", remap[k.outputs["out"]])
    return Stage(stage.name, nk, {i: Window(stage.windows[i].producer, tuple(o),
                                         stage.windows[i].rate)
                                  for i, o in merged.items()}, stage.signed)


#: ops a kernel narrowed to fewer bits cannot keep (:func:`narrow_kernel`): BFloat16 words
#: have 16 bits, ``mult_middle`` takes bits ``[w/2, 3w/2)`` of the product (another function
#: at every width), a lookup table's entries and index range are those of its own width
NOT_NARROWABLE = frozenset({*FLOAT_OPS, "commonlib.mult_middle", LUT_OP})


def narrow_kernel(kernel: Kernel, width: int) -> Kernel:
    """``kernel`` with every data word wider than ``width`` bits made ``width`` bits wide:
    the same algorithm in ``width``-bit wrap-around arithmetic (an app of ``UInt16`` words
    run on a ``data_width = 8`` design computes as if its types were ``UInt8``); every op
    keeps its own semantics at the new width (module docstring: a shift by ``>= width``
    gives 0 or the sign fill), a constant keeps its low ``width`` bits, bits stay bits.
    Returns ``kernel`` itself when no word is wider. Raises :class:`MappingError` naming the
    node for an op of :data:`NOT_NARROWABLE`."""
    data = {n.width for n in kernel.nodes} | set(kernel.input_widths.values())
    if max(data, default=0) <= width:
        return kernel
    bad = [n for n in kernel.live_nodes() if n.op in NOT_NARROWABLE]
    if bad:
        raise MappingError(f"kernel {kernel.name}: node {bad[0].name or bad[0].id} "
                           f"({bad[0].op}) of {bad[0].width}-bit words cannot run in "
                           f"{width}-bit words; use a design with data_width = {bad[0].width}")
    new = Kernel(kernel.name)
    for name, size in kernel.inputs.items():
        new.declare_input(name, size, min(kernel.input_widths[name], width))
    remap: dict[int, int] = {}
    for n in kernel.live_nodes():
        w = min(n.width, width)
        if n.op == INPUT:
            remap[n.id] = new.input(*n.input)
        elif n.op in CONST_OPS:
            remap[n.id] = new.const(int(n.value), w)
        else:
            remap[n.id] = new.add(n.op, *[remap[a] for a in n.args],
                                  width=None if OPS[n.op].result == BIT else w, name=n.name)
    for name, nid in kernel.outputs.items():
        new.set_output(name, remap[nid])
    return new


def narrow_pipeline(p: "Pipeline", width: int) -> "Pipeline":
    """``p`` with every data word wider than ``width`` bits narrowed to ``width`` bits: its
    inputs' ``width_bits`` and every stage's kernel (:func:`narrow_kernel`), so the numpy
    interpreter of the result is the golden model of the app on a ``data_width = width``
    design (Halide's: :class:`mapper.sim.halide.HalidePipeline` with ``word_bits``).
    Returns ``p`` itself when nothing is wider. Raises :class:`MappingError` like
    :func:`narrow_kernel`."""
    stages = [replace(s, kernel=narrow_kernel(s.kernel, width)) for s in p.stages]
    if all(a.kernel is b.kernel for a, b in zip(stages, p.stages, strict=True)) and all(
            i.width_bits <= width for i in p.inputs.values()):
        return p
    inputs = {n: replace(i, width_bits=min(i.width_bits, width)) for n, i in p.inputs.items()}
    return replace(p, inputs=inputs, stages=stages)


def simplify(kernel: Kernel) -> Kernel:
    """Constant folding, algebraic identities and common-subexpression elimination.

    Folds ops whose operands are all constants (with :func:`eval_op`), removes ``x + 0``,
    ``x - 0``, ``x * 1``, ``x | 0``, ``x ^ 0``, shifts by 0, ``x * 0 -> 0``, merges equal
    constants and structurally equal ops, and drops nodes not reachable from the outputs.
    The result computes the same function (same inputs and outputs).
    """
    new = Kernel(kernel.name)
    for name, size in kernel.inputs.items():
        new.declare_input(name, size, kernel.input_widths[name])
    remap: dict[int, int] = {}
    cval: dict[int, int] = {}
    consts: dict[tuple[int, int], int] = {}
    cse: dict[tuple, int] = {}

    def const(v: int, w: int) -> int:
        key = (v, w)
        if key not in consts:
            consts[key] = new.const(v, w)
            cval[consts[key]] = new.nodes[consts[key]].value
        return consts[key]

    for n in kernel.live_nodes():
        if n.op == INPUT:
            remap[n.id] = new.input(*n.input)
            continue
        if n.op in CONST_OPS:
            remap[n.id] = const(n.value, n.width)
            continue
        args = [remap[a] for a in n.args]
        spec = OPS[n.op]
        if all(a in cval for a in args):
            w = new.nodes[args[0]].width if spec.result == BIT and spec.operands[0] == DATA else n.width
            remap[n.id] = const(eval_op(n.op, [cval[a] for a in args], w, table=n.table),
                                n.width)
            continue
        # float ops are never folded with their operands (x - 0, x * 1 are not x: NaN
        # payloads, flushed subnormals; 0 * inf is NaN)
        short = "" if n.op in FLOAT_OPS else n.op.split(".", 1)[1]
        c = [cval.get(a) for a in args]
        if short in ("add", "or", "xor") and n.op.startswith("coreir.") and 0 in c:
            remap[n.id] = args[1 - c.index(0)]
            continue
        if short in ("sub", "lshr", "ashr", "shl") and c[1] == 0:
            remap[n.id] = args[0]
            continue
        if short == "mul" and 1 in c:
            remap[n.id] = args[1 - c.index(1)]
            continue
        if short == "mul" and 0 in c:
            remap[n.id] = const(0, n.width)
            continue
        if short == "mux" and c[2] is not None:
            remap[n.id] = args[1] if c[2] else args[0]
            continue
        key = (n.op, tuple(args), n.width, n.table)
        if key not in cse:
            cse[key] = new.copy_op(n, args)
        remap[n.id] = cse[key]
    for name, nid in kernel.outputs.items():
        new.set_output(name, remap[nid])
    return new


# ---------------------------------------------------------------------------- rewrites
#: A local rewrite (see :func:`rewrite`): ``(new kernel, original node, operand ids in the
#: new kernel) -> id of an equivalent node in the new kernel, or None`` (no change).
Rewrite = Callable[["Kernel", Node, list[int]], "int | None"]

#: Associative ops of the IR (each also commutative, :data:`peak.ir.COMMUTATIVE`): ``f(f(x,
#: a), b) == f(x, f(a, b))`` for every ``x, a, b`` (``smax``/``smin``/``umax``/``umin`` are
#: max/min of a total order).
ASSOCIATIVE = frozenset({
    "coreir.add", "coreir.mul", "coreir.and", "coreir.or", "coreir.xor",
    "commonlib.smax", "commonlib.smin", "commonlib.umax", "commonlib.umin",
    "corebit.and", "corebit.or", "corebit.xor"})

#: Ops with ``f(x, x) == x`` / ``f(x, x) == 0`` / ``f(x, x) == 1`` (bit results 0/1).
_SELF_IDENTITY = frozenset({"coreir.and", "coreir.or", "commonlib.smax", "commonlib.smin",
                            "commonlib.umax", "commonlib.umin", "corebit.and", "corebit.or"})
_SELF_ZERO = frozenset({"coreir.sub", "coreir.xor", "corebit.xor", "commonlib.absd",
                        "coreir.neq", "coreir.ult", "coreir.ugt", "coreir.slt", "coreir.sgt"})
_SELF_ONE = frozenset({"coreir.eq", "coreir.ule", "coreir.uge", "coreir.sle", "coreir.sge"})


def const_value(k: Kernel, nid: int) -> int | None:
    """The value of node ``nid`` of ``k`` if it is a constant, else ``None``."""
    n = k.nodes[nid]
    return n.value if n.op in CONST_OPS else None


def rewrite(kernel: Kernel, *rules: Rewrite,
            inputs: Callable[[Kernel, Node], int | None] | None = None) -> Kernel:
    """Rebuild ``kernel`` (live nodes, topological order) through local rewrite ``rules``.

    Each op node is offered to the rules in order with its operands already rebuilt: a rule
    gets the new kernel, the original :class:`Node` and the operand ids in the new kernel,
    and returns the id of a node of the new kernel computing the same value (it may add
    nodes first), or ``None``; the first rule that answers wins, otherwise the node is
    copied. Inputs, constants and outputs keep their names and widths. Each rule must
    preserve :func:`eval_op` semantics (the tests check every rule on random vectors), so
    the result computes the same function. Dead nodes the rules leave behind are dropped by
    the next :func:`simplify`. ``inputs`` (optional) is offered every input node first, with
    the new kernel, and may return the id of a node that replaces it (declaring new inputs
    as it needs them), e.g. a read merged from memory banks
    (:func:`mapper.mapping.memory.merge_banks`)."""
    new = Kernel(kernel.name)
    for name, size in kernel.inputs.items():
        new.declare_input(name, size, kernel.input_widths[name])
    remap: dict[int, int] = {}
    for n in kernel.live_nodes():
        if n.op == INPUT:
            got = inputs(new, n) if inputs is not None else None
            remap[n.id] = got if got is not None else new.input(*n.input)
            continue
        if n.op in CONST_OPS:
            remap[n.id] = new.const(n.value, n.width)
            continue
        args = [remap[a] for a in n.args]
        got = None
        for rule in rules:
            got = rule(new, n, args)
            if got is not None:
                break
        remap[n.id] = got if got is not None else new.copy_op(n, args)
    for name, nid in kernel.outputs.items():
        new.set_output(name, remap[nid])
    return new


def canonical_order(new: Kernel, n: Node, args: list[int]) -> int | None:
    """Rewrite: a commutative op (:data:`peak.ir.COMMUTATIVE`, the one table) gets its
    operands in canonical order, a constant second, else the lower node id first, so
    ``add(3, x)`` becomes ``add(x, 3)`` and ``add(b, a)`` / ``add(a, b)`` become one node
    under common-subexpression elimination."""
    from peak.ir import COMMUTATIVE  # deferred: loads z3, pysmt, hwtypes, 1 more only when called
    if n.op not in COMMUTATIVE or len(args) != 2:
        return None
    a, b = args
    ka = (const_value(new, a) is not None, a)
    kb = (const_value(new, b) is not None, b)
    if ka <= kb:
        return None
    return new.add(n.op, b, a, width=n.width, name=n.name)


def reassociate_constants(new: Kernel, n: Node, args: list[int]) -> int | None:
    """Rewrite: ``f(f(x, c1), c2) -> f(x, f(c1, c2))`` for an associative op ``f``
    (:data:`ASSOCIATIVE`; after :func:`canonical_order` the constants are second), e.g.
    ``(x + 3) + 4 -> x + 7``. The inner node stays if it has other uses: never more ops."""
    if n.op not in ASSOCIATIVE or len(args) != 2:
        return None
    c2 = const_value(new, args[1])
    inner = new.nodes[args[0]]
    if c2 is None or inner.op != n.op or const_value(new, args[0]) is not None:
        return None
    c1 = const_value(new, inner.args[1])
    if c1 is None:
        return None
    c = new.const(eval_op(n.op, [c1, c2], n.width), n.width)
    return new.add(n.op, inner.args[0], c, width=n.width, name=n.name)


def self_operand(new: Kernel, n: Node, args: list[int]) -> int | None:
    """Rewrite: an op applied to one node twice: ``and/or/smax/smin/umax/umin(x, x) -> x``,
    ``sub/xor/absd(x, x) -> 0``, ``eq/ule/uge/sle/sge(x, x) -> 1``, ``neq/ult/ugt/slt/sgt(x,
    x) -> 0``, ``mux(a, a, s) -> a``."""
    if n.op in ("coreir.mux", "corebit.mux"):
        return args[0] if args[0] == args[1] else None
    if len(args) != 2 or args[0] != args[1]:
        return None
    if n.op in _SELF_IDENTITY:
        return args[0]
    if n.op in _SELF_ZERO:
        return new.const(0, n.width)
    if n.op in _SELF_ONE:
        return new.const(1, n.width)
    return None


def balance_trees(kernel: Kernel) -> Kernel:
    """Reassociate chains of one associative op (:data:`ASSOCIATIVE`) into balanced trees:
    a maximal tree of the op whose interior nodes have no other use, with leaves
    ``l0 .. ln`` in order, becomes a tree of depth ``ceil(log2(n + 1))`` over the same
    leaves in the same order (pairing neighbours). The op count is unchanged; the value is
    the same (associativity, wrap-around arithmetic). Why: a reduction written as a chain
    (an ``RDom`` update ``f += g(r)``) makes the operands arrive at very different depths,
    and every level of a chain on the array costs interconnect latency that the other
    operands must then be delayed by (branch-delay matching)."""
    uses: Counter = Counter()
    live = kernel.live_nodes()
    for n in live:
        for a in n.args:
            uses[a] += 1
    for nid in kernel.outputs.values():
        uses[nid] += 1
    by_id = {n.id: n for n in live}

    def leaves(n: Node, top: bool) -> list[int]:
        if not top and (n.op not in ASSOCIATIVE or uses[n.id] != 1):
            return [n.id]
        out: list[int] = []
        for a in n.args:
            c = by_id[a]
            if c.op == n.op and c.width == n.width and uses[c.id] == 1:
                out += leaves(c, True)
            else:
                out.append(a)
        return out

    def rule(new: Kernel, n: Node, args: list[int]) -> int | None:
        if n.op not in ASSOCIATIVE or len(n.args) != 2:
            return None
        # only at the root of a chain (a node not consumed by the same op alone)
        parent_same = [p for p in live if n.id in p.args and p.op == n.op]
        if uses[n.id] == 1 and parent_same:
            return None
        flat = leaves(n, True)
        if len(flat) <= 2:
            return None
        mapped = [remap_of[f] for f in flat]
        while len(mapped) > 1:
            nxt = [new.add(n.op, mapped[i], mapped[i + 1], width=n.width)
                   for i in range(0, len(mapped) - 1, 2)]
            if len(mapped) % 2:
                nxt.append(mapped[-1])
            mapped = nxt
        return mapped[0]

    # rewrite() hands rules the new operand ids only; leaves deeper than the operands need
    # the full old -> new map, kept here as the rebuild progresses
    remap_of: dict[int, int] = {}

    def record(new: Kernel, n: Node, args: list[int]) -> int | None:
        for old_id, new_id in zip(n.args, args, strict=True):
            remap_of[old_id] = new_id
        got = rule(new, n, args)
        if got is None:
            got = new.copy_op(n, args)
        remap_of[n.id] = got
        return got

    return simplify(rewrite(kernel, record))


def canonicalize(kernel: Kernel, max_rounds: int = 8) -> Kernel:
    """:func:`simplify` plus the target-independent rewrites :func:`canonical_order`,
    :func:`reassociate_constants` and :func:`self_operand`, repeated until the kernel stops
    changing (at most ``max_rounds`` rounds; no rewrite adds a live op, so the live op
    count never grows). Same function as ``kernel``."""
    k = simplify(kernel)
    for _ in range(max_rounds):
        nxt = simplify(rewrite(k, self_operand, canonical_order, reassociate_constants))
        if nxt.to_dict() == k.to_dict():
            break
        k = nxt
    return k
