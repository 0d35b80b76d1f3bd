"""PEak: a PE is one Python spec with three interpretations (Python, SMT, Verilog).

Write a spec (see ``peak/examples/toy_pe.py``)::

    class ToyPE(Peak):
        def __init__(self):
            self.o_reg = Register(Data, 0)           # state: Register / RegisterFile / sub-PE
        @name_outputs(res=Data, flag=Bit)
        def __call__(self, inst: Inst, A: Data, B: Data, C: Data, c_in: Bit):
            ...plain if/elif/else and return over hwtypes values...

Public API (for the rules synthesiser, the array generator and the mapper):

Loading a spec (``peak.load``)
  ``load_spec("module:Class" | "path/file.py:Class" | "module:factory(8)", where=None,
  base=None) -> type``: the one resolver of the command line, garnet's ``pe`` field and the
  mapper; a relative file is resolved against ``base`` (a TOML passes its directory) or the
  current directory. Raises ``SpecError`` (one line naming ``where``/the reference and the
  fix). ``spec_ref(spec) -> str`` gives a reference that resolves back to ``spec``.

Spec and normal form
  ``Peak``, ``Register(T, init)``, ``RegisterFile(depth, T, init)``, ``name_outputs(**types)``
  ``normal_form(spec_cls) -> NormalForm`` (cached once per class): ``.isa`` (instruction
  type), ``.inputs`` / ``.outputs`` (``[(name, hwtypes type)]``), ``.state``
  (``[StateLeaf(name, T, init)]``), ``.source`` (the SSA function), ``.function(family)``.
  Bad specs raise ``cgra.errors.SpecError`` with ``file``/``line`` (message
  ``file:line: ...``): unsupported constructs, and type errors found by evaluating the
  normal form once symbolically (unsized or non-hwtypes annotations, operands of mismatched
  widths, a register fed a value of another width, branches of different types, a return
  value that is not the declared output type, an int constant that does not fit its
  operand's width).
  ``spec_hash(spec_cls) -> str``: sha256 (hex) of the source of the spec's module, the
  modules of its ISA and sub-PEs (at any depth), and the class name; stable across processes.

Assembler (``peak.assembler``)
  ``assembler(isa) -> Assembler``; ``Assembler.width`` (bits), ``.fields``
  (``[FieldInfo(name, lo, width, kind, signed, tags, variant_of)]``), ``.layout()`` (JSON for
  ``pe.json``), ``.encode(value) -> int``, ``.encode_bv(value) -> BitVector[width]``,
  ``.decode(int | BitVector) -> value`` (``ConfigError`` on an invalid encoding),
  ``.is_valid(flat)`` on an int / ``BitVector`` / ``SMTBitVector`` / z3 bit vector,
  ``.enumerate_tags()``, ``.field(name)``.

Python model (``peak.model``)
  ``model = Spec(); outs = model(inst, *inputs)`` — one call = one clock cycle; ``inst`` an
  ISA value, flat ``BitVector`` or int; inputs hwtypes values or ints; returns a tuple
  (or the single output). ``model.reset()``, ``model.state()``, ``model.set_state(values)``.
  ``evaluate(spec, inst, inputs, state) -> (outputs, next_state)`` (pure).

SMT model (``peak.smt``)
  ``evaluate_smt(spec, inst, inputs, state=None) -> (outputs, next_state)`` with ``inst`` a
  flat ``SMTBitVector[width]`` or a dict field name -> SMT value/int; ``symbolic(spec,
  fields=False, prefix=None) -> SymbolicPE`` elaborated once (``.outputs``, ``.next_state``,
  ``.valid``, ``.variables()``, ``.substitute(values)``, ``.z3()``);
  ``field_valid(spec, fields)``; ``to_z3(x)``.

Hardware (``peak.rtl``)
  ``pe_circuit(spec) -> magma circuit`` (cached; module ``<Spec>_<hash8>``; ports CLK,
  RESET (sync, active high), clk_en (0 = every register holds), inst[width], inputs,
  outputs); ``write_verilog(spec, out_dir) -> path``; ``pe_core_circuit(spec)`` /
  ``pe_core_spec(spec) -> cgra.core.CoreSpec`` (the tile-core wrapper: ``flush`` and
  ``config_inst`` ports, tag ``p``, one config field ``inst`` of ``width`` bits).

Collateral (``peak.collateral``, no hardware imports)
  ``pe_json(spec) -> dict`` (schema ``peak.pe/1``: spec hash, instruction width, field
  layout with enum tags, ports, state); ``load_pe_json(path)``;
  ``assemble_fields(doc, {field: value | tag name}) -> int``; ``disassemble_fields``.

Test helper (``peak.sim``)
  ``RTLSim(spec, directory)``: data-driven fault/Verilator bench built once;
  ``.run([(inst, inputs[, clk_en])]) -> [outputs]``; ``run_rtl(spec, vectors, dir)``;
  ``model_outputs(spec, vectors)``; ``check_vectors(spec, vectors, dir)`` compares model
  and RTL and raises ``SimulationError`` naming the first mismatching vector.

Control hardware (``peak.control``, docs/control_hw.md)
  ``make_counter_chain(levels, width)``, ``make_token_fifo(depth)``,
  ``make_credit_counter(max_credits)``, ``make_input_fifo(depth, width, levels)``: sub-PE
  classes (SARA §III-A) with ``*_inst`` configuration helpers; ``pe.json`` lists them
  (``control``) and ``peak.resources`` counts them. Example: ``peak.examples.control_pe``.

Examples: ``peak.examples.toy_pe`` (``make_toy_pe(width)``, ``ToyPE`` = 16 bits, ``Inst``,
``Opcode``) and ``peak.examples.cgra_pe`` (``PE``, ``Inst``, ``ALU``, ``Cond``, ``Mode``).
Spec modules whose types are closure variables must not use
``from __future__ import annotations``.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import linecache
import sys

from cgra.errors import SpecError
from peak.assembler import assembler
from peak.load import load_spec, spec_ref
from peak.normalize import NormalForm, StateLeaf, normal_form
from peak.spec import Peak, Register, RegisterFile, name_outputs


@functools.lru_cache(maxsize=None)
def spec_hash(spec: type) -> str:
    """sha256 hex digest (64 hex characters) over the source text of the modules defining
    ``spec`` and its ``__call__`` (a factory's class may be given another module), its ISA
    type (and their ADT field types) and its sub-PEs (theirs too, at any depth: a PE built
    from shared units is stale when a unit's module changes), the class name, and
    the normal form's interface (input, output and state types with reset values) and the
    plain constants it reads (a factory's parameters, e.g. ``WIDTH = 32``). Module *names*
    are not hashed: a byte-identical copy of a spec file elsewhere has the same hash. Raises
    :class:`SpecError` if a source file cannot be read."""
    nf = normal_form(spec)
    mods: set[str] = set()

    def add(obj: object) -> None:
        mod = getattr(obj, "__module__", None)
        if mod and mod in sys.modules and not mod.startswith(("hwtypes", "builtins")):
            mods.add(mod)

    def add_spec(form: NormalForm) -> None:     # the spec, its ISA and, at any depth, its sub-PEs
        add(form.spec)
        add(getattr(form.spec, "_spec_call_", None))
        add(form.isa)
        for f in getattr(form.isa, "field_dict", {}).values():
            add(f)
        for sub in form.subs.values():
            add_spec(sub)

    add_spec(nf)
    h = hashlib.sha256()
    h.update(spec.__qualname__.encode())
    h.update(spec.__name__.encode())
    sources: list[str] = []
    for mod in mods:
        module = sys.modules[mod]
        src = getattr(module, "__peak_source__", None)   # a spec file: the text executed
        if src is None:
            try:
                linecache.checkcache(getattr(module, "__file__", None) or "")
                src = inspect.getsource(module).encode()
            except (OSError, TypeError) as e:
                raise SpecError(f"cannot read the source of module {mod} to hash spec "
                                f"{spec.__name__}: {e}") from e
        sources.append(hashlib.sha256(src).hexdigest())
    for digest in sorted(set(sources)):      # a copy of a module adds nothing new
        h.update(digest.encode())
    h.update(repr(_interface(nf)).encode())
    return h.hexdigest()


def _interface(nf: NormalForm) -> tuple:
    """What a factory's arguments change and the module text does not show: port and state
    types, reset values, and the int/bool/str constants and bit-vector types the body reads
    (nested sub-PEs included)."""
    def plain(v: object) -> str | None:
        if isinstance(v, (bool, int, str, float)):
            return repr(v)
        if isinstance(v, type) and hasattr(v, "size") and isinstance(v.size, int):
            return f"{v.__name__}[{v.size}]"
        return None

    refs = tuple(sorted((k, r) for k, v in nf.refs.items() if (r := plain(v)) is not None))
    return (tuple((n, str(T)) for n, T in nf.inputs), tuple((n, str(T)) for n, T in nf.outputs),
            tuple((leaf.name, str(leaf.T), leaf.init) for leaf in nf.state), refs,
            tuple((k, _interface(sub)) for k, sub in sorted(nf.subs.items())))


__all__ = ["Peak", "Register", "RegisterFile", "name_outputs", "normal_form", "NormalForm",
           "StateLeaf", "assembler", "load_spec", "spec_hash", "spec_ref"]
