"""Assembler: a flat bit-vector encoding of any ISA type (hwtypes ADT or bit type).

Layout rules (LSB first, bit offsets are absolute in the flat instruction):

* ``Bit`` -> 1 bit; ``BitVector[n]`` / ``UIntVector[n]`` / ``SIntVector[n]`` -> n bits
  (two's complement for signed).
* ``Enum`` -> a tag of ``max(1, max_code.bit_length())`` bits. A member declared with an
  int has that code; members declared with ``new_instruction()`` take the smallest unused
  codes in declaration order.
* ``Product`` / ``Tuple`` -> the fields in declaration order, first field at the lowest bits.
* ``Sum`` / ``TaggedUnion`` -> payload (width of the widest variant) at the low bits, then a
  tag of ``max(1, (n-1).bit_length())`` bits. Variant order: ``TaggedUnion`` in declaration
  order; ``Sum`` (an unordered set in hwtypes) sorted by the variant type's name.

An encoding is *valid* when every Enum tag holds a declared code and every Sum tag names a
variant (checked only inside the selected variant). Payload bits above the selected
variant's width are ignored by :meth:`Assembler.decode`.

Public API: :func:`assembler(isa) -> Assembler` (cached per type), with ``width``,
``fields`` (one :class:`FieldInfo` per leaf, for ``pe.json``), ``encode``, ``decode``,
``is_valid`` (works on ``BitVector``, ``SMTBitVector`` and ``z3`` bit vectors),
``enumerate_tags`` and ``view`` (structured access used by the normal form).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable

import hwtypes as ht
from hwtypes import Bit, BitVector
from hwtypes.adt import Enum, Product, Sum, Tuple
from hwtypes.adt_meta import EnumMeta, ProductMeta, SumMeta, TaggedUnionMeta, TupleMeta

from cgra.errors import ConfigError, SpecError


def is_bit_type(T: Any) -> bool:
    """True for hwtypes ``Bit`` (concrete or SMT) types."""
    return isinstance(T, type) and issubclass(T, ht.AbstractBit)


def is_bv_type(T: Any) -> bool:
    """True for a *sized* hwtypes bit-vector type (``BitVector[n]``, ``SIntVector[n]`` ...)."""
    return isinstance(T, type) and issubclass(T, ht.AbstractBitVector) and T.is_sized


def is_signed_type(T: Any) -> bool:
    return isinstance(T, type) and (issubclass(T, ht.SIntVector) or issubclass(T, ht.SMTSIntVector))


def _sum_variants(T: Any) -> list[tuple[str, Any]]:
    if isinstance(T, TaggedUnionMeta):
        return [(name, t) for name, t in T.field_dict.items()]
    return sorted(((_type_name(t), t) for t in T.fields), key=lambda p: p[0])


def _type_name(t: Any) -> str:
    return getattr(t, "__name__", None) or repr(t)


@dataclass
class Node:
    """One node of the layout tree. ``lo``/``width`` in bits of the flat instruction."""

    kind: str                 # bit | bits | enum | product | tuple | sum
    T: Any
    path: str
    lo: int
    width: int
    signed: bool = False
    codes: dict[str, int] = field(default_factory=dict)       # enum: member -> code
    children: list[tuple[str, "Node"]] = field(default_factory=list)
    tag_lo: int = 0           # sum: position of the tag
    tag_width: int = 0


@dataclass(frozen=True)
class FieldInfo:
    """A leaf field of the flat instruction (for ``pe.json`` and rule files).

    ``name`` is a dotted path (``"alu_op"``, ``"data0.mode"``); Sum payload leaves carry the
    variant in the path and ``variant_of`` names the tag field they depend on. ``lo`` and
    ``width`` are in bits; ``tags`` maps Enum member / Sum variant names to codes.
    """

    name: str
    lo: int
    width: int
    kind: str
    signed: bool = False
    tags: dict[str, int] | None = None
    variant_of: str | None = None


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _build(T: Any, path: str, lo: int) -> Node:
    if is_bit_type(T):
        return Node("bit", T, path, lo, 1)
    if is_bv_type(T):
        return Node("bits", T, path, lo, T.size, signed=is_signed_type(T))
    if isinstance(T, EnumMeta):
        codes: dict[str, int] = {}
        for name, member in T.field_dict.items():
            if isinstance(member._value_, int):
                codes[name] = member._value_
        used = set(codes.values())
        nxt = 0
        for name in T.field_dict:
            if name not in codes:
                while nxt in used:
                    nxt += 1
                codes[name] = nxt
                used.add(nxt)
        if len(set(codes.values())) != len(codes):
            raise SpecError(f"Enum {T.__name__} has two members with the same code: {codes}")
        width = max(1, max(codes.values()).bit_length()) if codes else 1
        return Node("enum", T, path, lo, width, codes=codes)
    if isinstance(T, (ProductMeta, TupleMeta)):
        kind = "product" if isinstance(T, ProductMeta) else "tuple"
        children = []
        off = lo
        for name, t in T.field_dict.items():
            child = _build(t, _join(path, str(name)), off)
            children.append((str(name), child))
            off += child.width
        return Node(kind, T, path, lo, off - lo, children=children)
    if isinstance(T, SumMeta):
        variants = _sum_variants(T)
        children = [(name, _build(t, _join(path, name), lo)) for name, t in variants]
        payload = max((c.width for _, c in children), default=0)
        tag_width = max(1, (len(variants) - 1).bit_length())
        node = Node("sum", T, path, lo, payload + tag_width, children=children,
                    tag_lo=lo + payload, tag_width=tag_width,
                    codes={name: i for i, (name, _) in enumerate(variants)})
        return node
    raise SpecError(f"type {T!r} at instruction field '{path or '<root>'}' is not an ISA type; "
                    "use Bit, BitVector[n], SIntVector[n], UIntVector[n], Enum, Product, "
                    "Tuple, Sum or TaggedUnion")


def _slice(flat: Any, lo: int, width: int) -> Any:
    """Bits [lo, lo+width) of a flat vector of any family (hwtypes, SMT, z3, magma adapter)."""
    if _is_z3(flat):
        import z3  # deferred: the import would close an import circle or shadow a name
        return z3.Extract(lo + width - 1, lo, flat)
    return flat[lo:lo + width]


def _is_z3(x: Any) -> bool:
    return type(x).__module__.startswith("z3")


class Assembler:
    """Flat encoding of one ISA type. Build with :func:`assembler` (cached)."""

    def __init__(self, isa: Any):
        self.isa = isa
        self.root = _build(isa, "", 0)
        self.width: int = self.root.width
        """Width of the flat instruction in bits."""
        self.fields: list[FieldInfo] = []
        self._collect(self.root, None)

    # ----------------------------------------------------------------- layout
    def _collect(self, node: Node, variant_of: str | None) -> None:
        if node.kind in ("bit", "bits"):
            self.fields.append(FieldInfo(node.path, node.lo, node.width, node.kind,
                                         node.signed, None, variant_of))
        elif node.kind == "enum":
            self.fields.append(FieldInfo(node.path, node.lo, node.width, "enum", False,
                                         dict(node.codes), variant_of))
        elif node.kind in ("product", "tuple"):
            for _, c in node.children:
                self._collect(c, variant_of)
        else:
            tag_name = _join(node.path, "_tag")
            self.fields.append(FieldInfo(tag_name, node.tag_lo, node.tag_width, "sum_tag",
                                         False, dict(node.codes), variant_of))
            for _, c in node.children:
                self._collect(c, tag_name)

    def field(self, name: str) -> FieldInfo:
        """The leaf field called ``name``; :class:`ConfigError` if there is none."""
        for f in self.fields:
            if f.name == name:
                return f
        raise ConfigError(f"instruction of {_type_name(self.isa)} has no field '{name}'; "
                          f"fields: {[f.name for f in self.fields]}")

    def live_fields(self, values: dict[str, int]) -> list[FieldInfo]:
        """The fields that take part in the instruction whose field values (ints, keyed by
        :attr:`FieldInfo.name`) are ``values``: every field outside a Sum, and inside a Sum
        the fields of the variant its tag selects (a tag missing from ``values`` counts as
        0, a tag naming no variant selects none). In layout order."""
        live: list[FieldInfo] = []
        alive: set[str | None] = {None}
        for f in self.fields:                    # a tag comes before its variants' fields
            if f.variant_of not in alive:
                continue
            if f.variant_of is not None:
                tag = self.field(f.variant_of)
                prefix = f.variant_of[:-len("_tag")]
                code = int(values.get(f.variant_of, 0))
                chosen = [n for n, c in (tag.tags or {}).items() if c == code]
                if not chosen or not f.name.startswith(f"{prefix}{chosen[0]}."):
                    continue
            live.append(f)
            if f.kind == "sum_tag":
                alive.add(f.name)
        return live

    def layout(self) -> list[dict]:
        """JSON-ready field list: name, lo (bit offset), width (bits), kind, signed, tags."""
        return [dict(name=f.name, lo=f.lo, width=f.width, kind=f.kind, signed=f.signed,
                     tags=f.tags, variant_of=f.variant_of) for f in self.fields]

    def enumerate_tags(self) -> dict[str, list[str]]:
        """For every Enum field and Sum tag: the list of member / variant names."""
        return {f.name: list(f.tags) for f in self.fields if f.tags is not None}

    # ----------------------------------------------------------------- encode
    def encode(self, value: Any) -> int:
        """The flat encoding (an int of :attr:`width` bits) of an ISA value.

        Raises :class:`ConfigError` if ``value`` is not of the ISA type."""
        if not isinstance(value, self.isa) and not (
                is_bit_type(self.isa) and isinstance(value, (bool, int))):
            raise ConfigError(f"cannot encode {value!r}: expected an instance of "
                              f"{_type_name(self.isa)}")
        return self._enc(self.root, value)

    def _enc(self, node: Node, v: Any) -> int:
        if node.kind == "bit":
            return int(bool(v)) << node.lo
        if node.kind == "bits":
            return (int(v) & ((1 << node.width) - 1)) << node.lo
        if node.kind == "enum":
            return node.codes[v.name] << node.lo
        if node.kind == "product":
            return sum(self._enc(c, getattr(v, name)) for name, c in node.children)
        if node.kind == "tuple":
            return sum(self._enc(c, v[int(name)]) for name, c in node.children)
        for i, (name, c) in enumerate(node.children):
            m = v[c.T]
            if m.match and (not isinstance(node.T, TaggedUnionMeta) or getattr(v, name).match):
                return (i << node.tag_lo) | self._enc(c, m.value)
        raise ConfigError(f"value {v!r} matches no variant of {_type_name(node.T)}")

    def encode_bv(self, value: Any) -> BitVector:
        """:meth:`encode` as a ``BitVector[width]``."""
        return BitVector[self.width](self.encode(value))

    # ----------------------------------------------------------------- decode
    def decode(self, bits: Any) -> Any:
        """The ISA value of a flat encoding (int or ``BitVector``).

        Raises :class:`ConfigError` naming the field and the bad code for an invalid
        encoding, or when ``bits`` does not fit :attr:`width` bits."""
        x = int(bits)
        if not 0 <= x < (1 << self.width):
            raise ConfigError(f"instruction encoding {x:#x} does not fit {self.width} bits "
                              f"of {_type_name(self.isa)}")
        return self._dec(self.root, x)

    def _dec(self, node: Node, x: int) -> Any:
        raw = (x >> node.lo) & ((1 << node.width) - 1)
        if node.kind == "bit":
            return node.T(raw)
        if node.kind == "bits":
            return node.T(raw)
        if node.kind == "enum":
            for name, code in node.codes.items():
                if code == raw:
                    return node.T.field_dict[name]
            raise ConfigError(
                f"invalid encoding of field '{node.path}' ({_type_name(node.T)}): code {raw} "
                f"is not one of {node.codes}; re-encode the instruction with the assembler")
        if node.kind == "product":
            return node.T(**{name: self._dec(c, x) for name, c in node.children})
        if node.kind == "tuple":
            return node.T(*[self._dec(c, x) for _, c in node.children])
        tag = (x >> node.tag_lo) & ((1 << node.tag_width) - 1)
        if tag >= len(node.children):
            raise ConfigError(
                f"invalid encoding of field '{_join(node.path, '_tag')}' "
                f"({_type_name(node.T)}): tag {tag} names no variant "
                f"(variants {node.codes}); re-encode the instruction with the assembler")
        name, c = node.children[tag]
        val = self._dec(c, x)
        if isinstance(node.T, TaggedUnionMeta):
            return node.T(**{name: val})
        return node.T(val)

    # ----------------------------------------------------------------- validity
    def is_valid(self, flat: Any) -> Any:
        """Validity predicate of a flat encoding.

        ``flat`` may be an int / ``BitVector[width]`` (returns ``Bit``), an
        ``SMTBitVector[width]`` (returns ``SMTBit``: use ``.value`` as a pysmt constraint)
        or a z3 bit vector (returns a z3 Bool)."""
        if isinstance(flat, int):
            flat = BitVector[self.width](flat)
        return self._valid(self.root, flat)

    def _valid(self, node: Node, flat: Any) -> Any:
        if node.kind in ("bit", "bits"):
            return _true(flat)
        if node.kind == "enum":
            leaf = _slice(flat, node.lo, node.width)
            codes = sorted(set(node.codes.values()))
            if len(codes) == 1 << node.width:
                return _true(flat)
            return _or([_eq_const(leaf, c, node.width) for c in codes], flat)
        if node.kind in ("product", "tuple"):
            return _and([self._valid(c, flat) for _, c in node.children], flat)
        tag = _slice(flat, node.tag_lo, node.tag_width)
        terms = []
        for i, (_, c) in enumerate(node.children):
            terms.append(_and([_eq_const(tag, i, node.tag_width), self._valid(c, flat)], flat))
        return _or(terms, flat)

    def random_encoding(self, rng: Any) -> int:
        """A uniformly chosen *valid* flat encoding (each field independently; for a Sum,
        a variant is chosen first). ``rng`` is a ``random.Random`` (seeded by the caller)."""
        return self._rand(self.root, rng)

    def _rand(self, node: Node, rng: Any) -> int:
        if node.kind in ("bit", "bits"):
            return rng.getrandbits(node.width) << node.lo
        if node.kind == "enum":
            return rng.choice(sorted(node.codes.values())) << node.lo
        if node.kind in ("product", "tuple"):
            return sum(self._rand(c, rng) for _, c in node.children)
        i = rng.randrange(len(node.children))
        return (i << node.tag_lo) | self._rand(node.children[i][1], rng)

    # ----------------------------------------------------------------- views
    def view(self, leaf: Callable[[Node], Any], family: Any) -> Any:
        """Structured access to an instruction for the normal form.

        ``leaf(node)`` returns the family value of a leaf node (``Bit``/bit vector; for Enum
        and Sum tags a bit vector of the tag width). Product fields are attributes, Tuple
        fields are indices, an Enum compares with ``==`` / ``!=`` against its members
        (giving a family ``Bit``), a Sum gives ``view[T].match`` / ``view[T].value``."""
        return _make_view(self.root, leaf, family)

    def flat_view(self, flat: Any, family: Any) -> Any:
        """:meth:`view` over a flat family bit vector of :attr:`width` bits."""
        def leaf(node: Node) -> Any:
            lo, w = (node.tag_lo, node.tag_width) if node.kind == "sum" else (node.lo, node.width)
            return family.cast_leaf(_slice(flat, lo, w), node)
        return self.view(leaf, family)

    def leaf_nodes(self) -> list[Node]:
        """Every leaf node (bit, bits, enum, sum tag) with its path; sum tags use the
        path ``<sum>._tag``."""
        out: list[Node] = []

        def walk(n: Node) -> None:
            if n.kind in ("bit", "bits", "enum"):
                out.append(n)
            elif n.kind in ("product", "tuple"):
                for _, c in n.children:
                    walk(c)
            else:
                out.append(n)
                for _, c in n.children:
                    walk(c)
        walk(self.root)
        return out


def leaf_name(node: Node) -> str:
    """The field name of a leaf node as used in :attr:`Assembler.fields`."""
    return _join(node.path, "_tag") if node.kind == "sum" else node.path


def _true(flat: Any) -> Any:
    if _is_z3(flat):
        import z3  # deferred: the import would close an import circle or shadow a name
        return z3.BoolVal(True)
    return type(flat[0])(1)


def _eq_const(x: Any, c: int, w: int) -> Any:
    if _is_z3(x):
        import z3  # deferred: the import would close an import circle or shadow a name
        return x == z3.BitVecVal(c, w)
    return x == type(x)(c)


def _and(xs: list, flat: Any) -> Any:
    if _is_z3(flat):
        import z3  # deferred: the import would close an import circle or shadow a name
        return z3.And(*xs) if xs else z3.BoolVal(True)
    r = _true(flat)
    for x in xs:
        r = r & x
    return r


def _or(xs: list, flat: Any) -> Any:
    if _is_z3(flat):
        import z3  # deferred: the import would close an import circle or shadow a name
        return z3.Or(*xs) if xs else z3.BoolVal(False)
    r = ~_true(flat)
    for x in xs:
        r = r | x
    return r


class EnumView:
    """An Enum field seen through a family: ``==``/``!=`` with a member gives a family Bit."""

    __slots__ = ("_node", "_leaf", "_family")

    def __init__(self, node: Node, leaf: Any, family: Any):
        self._node, self._leaf, self._family = node, leaf, family

    def _code(self, other: Any) -> int:
        if isinstance(other, Enum) and type(other) is self._node.T:
            return self._node.codes[other.name]
        raise SpecError(f"cannot compare enum field '{self._node.path}' of type "
                        f"{_type_name(self._node.T)} with {other!r}; compare with a member "
                        f"such as {_type_name(self._node.T)}.{next(iter(self._node.codes))}")

    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        return self._leaf == self._family.constant(self._node.width, self._code(other))

    def __ne__(self, other: Any) -> Any:  # type: ignore[override]
        return self._leaf != self._family.constant(self._node.width, self._code(other))

    __hash__ = None  # type: ignore[assignment]

    @property
    def code(self) -> Any:
        """The raw tag bits (family bit vector of the tag width)."""
        return self._leaf


class _Match:
    __slots__ = ("match", "value")

    def __init__(self, match: Any, value: Any):
        self.match, self.value = match, value


class SumView:
    """A Sum field: ``view[T]`` -> object with ``.match`` (family Bit) and ``.value``."""

    def __init__(self, node: Node, tag: Any, children: dict, family: Any):
        self._node, self._tag, self._children, self._family = node, tag, children, family

    def __getitem__(self, T: Any) -> _Match:
        for i, (name, c) in enumerate(self._node.children):
            if c.T is T or name == T:
                match = self._tag == self._family.constant(self._node.tag_width, i)
                return _Match(match, self._children[name])
        raise SpecError(f"{T!r} is not a variant of Sum field '{self._node.path}' "
                        f"({_type_name(self._node.T)}); variants: {list(self._node.codes)}")

    def __getattr__(self, name: str) -> _Match:
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]


class ProductView:
    """A Product (attributes) or Tuple (indices) field."""

    def __init__(self, node: Node, children: dict):
        self._node, self._children = node, children

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._children[name]
        except KeyError:
            raise SpecError(f"instruction field '{self._node.path or '<root>'}' "
                            f"({_type_name(self._node.T)}) has no field '{name}'; fields: "
                            f"{list(self._children)}") from None

    def __getitem__(self, idx: Any) -> Any:
        return self.__getattr__(str(idx))


def _make_view(node: Node, leaf: Callable[[Node], Any], family: Any) -> Any:
    if node.kind in ("bit", "bits"):
        return leaf(node)
    if node.kind == "enum":
        return EnumView(node, leaf(node), family)
    if node.kind in ("product", "tuple"):
        return ProductView(node, {name: _make_view(c, leaf, family) for name, c in node.children})
    return SumView(node, leaf(node), {name: _make_view(c, leaf, family)
                                      for name, c in node.children}, family)


@functools.lru_cache(maxsize=None)
def assembler(isa: Any) -> Assembler:
    """The (cached) :class:`Assembler` of an ISA type. Raises :class:`SpecError` for a type
    that is not an ISA type."""
    return Assembler(isa)


__all__ = ["Assembler", "FieldInfo", "Node", "assembler", "leaf_name", "EnumView", "SumView",
           "ProductView", "Bit", "BitVector", "Enum", "Product", "Sum", "Tuple"]
