"""Names of network configurations, after Table 3.2 of Y. Zhang's PhD thesis (Stanford 2020,
ch. 3.3.4 "Network architecture exploration"): ``[S,H,D]`` static / hybrid / dynamic, ``x#``
static bandwidth (links between adjacent switches per direction), ``v#`` VCs per router,
``b#`` buffers per VC, ``f#`` router flit width (or switch vector width), ``[db,cd]``
skid-buffered (2-entry) or credit-based (end-to-end) flow control of the switches.

Grammar (fields in this order, separated by ``-``)::

    S-x<n>[-f<n>][-db|-cd]            static: n >= 1; no v/b
    H-x<n>-v<n>[-b<n>]-f<n>[-db|-cd]  hybrid: static x >= 1 and a router
    D-x0-v<n>[-b<n>]-f<n>             dynamic only: x = 0, no db/cd

Examples: ``S-x2-db``, ``H-x3-v2-b3-f16``, ``D-x0-v4-f16``, ``D-x0-v4-f512`` (the thesis's
pure dynamic network). An omitted ``b`` means the thesis's default of 3 buffers
(:attr:`FabricName.buffers_per_vc`) and is not printed back, so ``format(parse(s)) == s`` for
every valid name.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from cgra.errors import ConfigError

from canal.router import RouterParams

#: default buffers per VC (thesis 3.3.2: "Input buffers are sized ... (3 entries)")
DEFAULT_BUFFERS = 3

_FIELD = re.compile(r"^([xvbf])(\d+)$")
_FIELD_NAMES = {"x": "x (static links)", "v": "v (VCs)", "b": "b (buffers per VC)",
                "f": "f (flit width)"}


@dataclass(frozen=True)
class FabricName:
    """A parsed network name. ``kind`` is ``"S"``, ``"H"`` or ``"D"``; ``static_links`` the
    ``x`` value; ``vcs``, ``buffers``, ``flit_width`` the router's (None when absent);
    ``flow_control`` ``"db"``, ``"cd"`` or None. Raises ConfigError naming the field when the
    combination is invalid (:func:`parse_fabric_name` rules)."""

    kind: str
    static_links: int
    vcs: int | None = None
    buffers: int | None = None
    flit_width: int | None = None
    flow_control: str | None = None

    def __post_init__(self) -> None:
        name = self.format_unchecked()
        if self.kind not in ("S", "H", "D"):
            raise ConfigError(f"fabric name '{name}': kind '{self.kind}' must be S, H or D")
        for f, v in (("x", self.static_links), ("v", self.vcs), ("b", self.buffers),
                     ("f", self.flit_width)):
            if v is not None and v < (0 if f == "x" else 1):
                raise ConfigError(f"fabric name '{name}': field {_FIELD_NAMES[f]} = {v} is "
                                  "out of range")
        if self.flow_control not in (None, "db", "cd"):
            raise ConfigError(f"fabric name '{name}': flow control '{self.flow_control}' "
                              "must be db or cd")
        if self.kind == "D":
            if self.static_links != 0:
                raise ConfigError(f"fabric name '{name}': field {_FIELD_NAMES['x']} must be 0 "
                                  "for a dynamic-only network (use H for static + routers)")
            if self.flow_control is not None:
                raise ConfigError(f"fabric name '{name}': field db/cd (switch flow control) "
                                  "is meaningless without static links")
        elif self.static_links < 1:
            raise ConfigError(f"fabric name '{name}': field {_FIELD_NAMES['x']} must be >= 1 "
                              f"for kind {self.kind} (x0 means dynamic only: D)")
        if self.kind == "S":
            for f, v in (("v", self.vcs), ("b", self.buffers)):
                if v is not None:
                    raise ConfigError(f"fabric name '{name}': field {_FIELD_NAMES[f]} is "
                                      "given but a static network has no router")
        else:
            for f, v in (("v", self.vcs), ("f", self.flit_width)):
                if v is None:
                    raise ConfigError(f"fabric name '{name}': field {_FIELD_NAMES[f]} is "
                                      f"missing; kind {self.kind} has routers")

    @property
    def has_router(self) -> bool:
        return self.kind in ("H", "D")

    @property
    def buffers_per_vc(self) -> int:
        """``b``, or the default 3 when it was omitted."""
        return DEFAULT_BUFFERS if self.buffers is None else self.buffers

    def format_unchecked(self) -> str:
        parts = [self.kind, f"x{self.static_links}"]
        parts += [f"{k}{v}" for k, v in (("v", self.vcs), ("b", self.buffers),
                                          ("f", self.flit_width)) if v is not None]
        if self.flow_control:
            parts.append(self.flow_control)
        return "-".join(parts)

    def __str__(self) -> str:
        return self.format_unchecked()

    def router_params(self, data_width: int | None = None, ids: int = 16) -> RouterParams:
        """The :class:`RouterParams` of a hybrid / dynamic name (``data_width`` defaults to
        the flit width). Raises ConfigError for a static name."""
        if not self.has_router:
            raise ConfigError(f"fabric name '{self}': a static network has no router")
        assert self.vcs is not None and self.flit_width is not None
        return RouterParams(vcs=self.vcs, buffers=self.buffers_per_vc,
                            flit_width=self.flit_width,
                            data_width=data_width or self.flit_width, ids=ids)


def parse_fabric_name(name: str) -> FabricName:
    """Parse a name of the module grammar. Raises ConfigError naming the offending field
    (unknown token, repeated or out-of-order field, missing or forbidden field)."""
    toks = name.strip().split("-")
    if not toks or toks[0] not in ("S", "H", "D"):
        raise ConfigError(f"fabric name '{name}': kind '{toks[0] if toks else ''}' must be "
                          "S (static), H (hybrid) or D (dynamic)")
    vals: dict[str, int] = {}
    fc = None
    order = "xvbf"
    last = -1
    for tok in toks[1:]:
        if tok in ("db", "cd"):
            if fc is not None:
                raise ConfigError(f"fabric name '{name}': field db/cd is given twice")
            fc = tok
            last = len(order)
            continue
        m = _FIELD.match(tok)
        if not m:
            raise ConfigError(f"fabric name '{name}': token '{tok}' is not a field (x#, v#, b#,"
                              " f#, db, cd)")
        f, v = m.group(1), int(m.group(2))
        if f in vals:
            raise ConfigError(f"fabric name '{name}': field {_FIELD_NAMES[f]} is given twice")
        if order.index(f) < last:
            raise ConfigError(f"fabric name '{name}': field {_FIELD_NAMES[f]} is out of order "
                              "(x, v, b, f, then db/cd)")
        last = order.index(f)
        vals[f] = v
    if "x" not in vals:
        raise ConfigError(f"fabric name '{name}': field {_FIELD_NAMES['x']} is missing")
    return FabricName(toks[0], vals["x"], vals.get("v"), vals.get("b"), vals.get("f"), fc)


def format_fabric_name(fn: FabricName) -> str:
    """The canonical text of ``fn`` (inverse of :func:`parse_fabric_name`)."""
    return str(fn)
