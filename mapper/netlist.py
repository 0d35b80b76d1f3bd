"""The mapped netlist: instances (kind, PnR tag, config) and nets (one source, many sinks, width).

JSON format (``Netlist.to_dict`` / ``Netlist.from_dict``, ``schema`` = 1)::

    {"schema": 1, "name": "gaussian",
     "instances": {"<name>": {"kind": "mem", "tag": "m", "config": {...}}, ...},
     "nets": [{"name": "n0", "source": ["<inst>", "<port>"],
               "sinks": [["<inst>", "<port>"], ...], "width": 16}, ...]}

PnR tags (one letter, as in the Garnet/cgra_pnr flow): ``p`` PE, ``m`` MEM, ``I`` data IO
(the design's data width, 16 bits by default), ``i`` 1-bit IO, ``r`` register (an
interconnect register). Net widths are the design's: the data width (16 or e.g. 32) or 1.  Instances of kind ``kernel`` are
placeholders produced by memory mapping for a stage's compute kernel before compute mapping
(tag ``None``); they cannot be written to the placer formats.

``.packed`` text format (the cgra_pnr / Garnet placer input; :meth:`Netlist.to_packed`,
:func:`parse_packed`)::

    Netlists:
    e0: (I0, out)\t(p1, in0)\t(r2, in)
    ...
    <blank line>
    ID to Names:
    I0: io_in_input_l0
    ...
    <blank line>
    Netlist Bus:
    e0: 16

Block ids are the tag letter followed by a running number; the first tuple of a net line is
its source, the rest are sinks (tab separated); ``Netlist Bus`` gives each net's width in bits.
Port names and instance names must not contain ``(``, ``)``, ``,``, ``:`` or whitespace.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cgra.errors import MappingError

TAGS = {"p": "PE", "m": "MEM", "o": "pond", "I": "16-bit IO", "i": "1-bit IO", "r": "register"}
_BAD = re.compile(r"[(),:\s]")


@dataclass
class Instance:
    """One netlist instance: ``kind`` (pe, mem, io_in, io_out, reg, kernel, ...), PnR ``tag``
    (see :data:`TAGS`; ``None`` only for ``kernel`` placeholders) and its ``config`` dict."""

    name: str
    kind: str
    tag: str | None
    config: dict[str, Any] = field(default_factory=dict)


@dataclass
class Net:
    """A net: ``source`` and ``sinks`` are ``(instance, port)``; ``width`` in bits (the
    design's data width, e.g. 16, or 1)."""

    name: str
    source: tuple[str, str]
    sinks: list[tuple[str, str]]
    width: int = 16


@dataclass
class Netlist:
    """Instances by name plus nets; see the module docstring for the file formats."""

    name: str
    instances: dict[str, Instance] = field(default_factory=dict)
    nets: list[Net] = field(default_factory=list)

    def add_instance(self, name: str, kind: str, tag: str | None,
                     config: dict[str, Any] | None = None) -> Instance:
        """Add an instance; raises MappingError on a duplicate name or a bad tag/name."""
        if name in self.instances:
            raise MappingError(f"netlist {self.name}: duplicate instance name '{name}'")
        if _BAD.search(name):
            raise MappingError(f"netlist {self.name}: instance name '{name}' contains one of "
                               f"'(),:' or whitespace")
        if tag is not None and tag not in TAGS:
            raise MappingError(f"netlist {self.name}: instance {name} has unknown PnR tag '{tag}' "
                               f"(use one of {', '.join(TAGS)})")
        inst = Instance(name, kind, tag, dict(config or {}))
        self.instances[name] = inst
        return inst

    def add_net(self, source: tuple[str, str], sinks: list[tuple[str, str]], width: int = 16,
                name: str | None = None) -> Net:
        """Add a net from ``source`` to ``sinks``; endpoints must name existing instances."""
        net = Net(name or f"n{len(self.nets)}", (source[0], source[1]),
                  [(s[0], s[1]) for s in sinks], int(width))
        for inst, port in [net.source, *net.sinks]:
            if inst not in self.instances:
                raise MappingError(f"netlist {self.name}: net {net.name} refers to unknown "
                                   f"instance '{inst}'")
            if _BAD.search(port):
                raise MappingError(f"netlist {self.name}: net {net.name} port '{port}' contains "
                                   f"one of '(),:' or whitespace")
        self.nets.append(net)
        return net

    def validate(self) -> None:
        """Every net has >= 1 sink and a width >= 1 bit (whether the design has a routing
        graph of that width is checked when routing); no sink port is driven twice."""
        driven: dict[tuple[str, str], str] = {}
        names = set()
        for n in self.nets:
            if n.name in names:
                raise MappingError(f"netlist {self.name}: duplicate net name {n.name}")
            names.add(n.name)
            if not n.sinks:
                raise MappingError(f"netlist {self.name}: net {n.name} from {n.source} has no sinks")
            if n.width < 1:
                raise MappingError(f"netlist {self.name}: net {n.name} width {n.width} (a net "
                                   f"has >= 1 bit: the design's data width or 1)")
            for s in n.sinks:
                if s in driven:
                    raise MappingError(f"netlist {self.name}: port {s[0]}.{s[1]} driven by nets "
                                       f"{driven[s]} and {n.name}")
                driven[s] = n.name

    def counts(self) -> dict[str, int]:
        """Number of instances per kind."""
        c: dict[str, int] = {}
        for i in self.instances.values():
            c[i.kind] = c.get(i.kind, 0) + 1
        return c

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": 1,
            "name": self.name,
            "instances": {n: {"kind": i.kind, "tag": i.tag, "config": i.config}
                          for n, i in self.instances.items()},
            "nets": [{"name": n.name, "source": list(n.source),
                      "sinks": [list(s) for s in n.sinks], "width": n.width} for n in self.nets],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Netlist:
        """Inverse of :meth:`to_dict`; raises MappingError on a wrong schema or bad content."""
        if d.get("schema") != 1:
            raise MappingError(f"netlist JSON: schema {d.get('schema')!r} is not supported (want 1)")
        nl = cls(d["name"])
        for name, i in d["instances"].items():
            nl.add_instance(name, i["kind"], i["tag"], i.get("config", {}))
        for n in d["nets"]:
            nl.add_net(tuple(n["source"]), [tuple(s) for s in n["sinks"]], n["width"], n["name"])
        nl.validate()
        return nl

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1, sort_keys=False) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Netlist:
        try:
            return cls.from_dict(json.loads(Path(path).read_text()))
        except (OSError, json.JSONDecodeError, KeyError) as exc:
            raise MappingError(f"{path}: cannot read netlist JSON ({exc!r})") from None

    # ------------------------------------------------------------------ .packed
    def block_ids(self) -> dict[str, str]:
        """Instance name -> packed block id (tag + running number in instance order)."""
        ids = {}
        for k, (name, inst) in enumerate(self.instances.items()):
            if inst.tag is None:
                raise MappingError(f"netlist {self.name}: instance {name} (kind {inst.kind}) has no "
                                   f"PnR tag; compute-map kernel placeholders before writing .packed")
            ids[name] = f"{inst.tag}{k}"
        return ids

    def to_packed(self) -> str:
        """The cgra_pnr ``.packed`` text (see the module docstring)."""
        self.validate()
        ids = self.block_ids()
        lines = ["Netlists:"]
        for k, n in enumerate(self.nets):
            ends = [n.source, *n.sinks]
            lines.append(f"e{k}: " + "\t".join(f"({ids[i]}, {p})" for i, p in ends))
        lines += ["", "ID to Names:"]
        for name, bid in ids.items():
            lines.append(f"{bid}: {name}")
        lines += ["", "Netlist Bus:"]
        for k, n in enumerate(self.nets):
            lines.append(f"e{k}: {n.width}")
        return "\n".join(lines) + "\n"

    @classmethod
    def from_packed(cls, text: str, name: str = "packed", base: Netlist | None = None) -> Netlist:
        """Build a netlist from ``.packed`` text.  Kinds/configs come from ``base`` when given
        (matched by instance name), else the kind is the tag's long name.  Net names are the
        packed edge ids."""
        p = parse_packed(text)
        nl = cls(name)
        for bid, iname in p.id_to_name.items():
            tag = bid[0]
            if base is not None and iname in base.instances:
                b = base.instances[iname]
                nl.add_instance(iname, b.kind, tag, b.config)
            else:
                nl.add_instance(iname, TAGS.get(tag, tag), tag)
        for eid, ends in p.nets.items():
            for bid, _ in ends:
                if bid not in p.id_to_name:
                    raise MappingError(f".packed: net {eid} uses block {bid} missing from 'ID to Names'")
            (sb, sp), *sinks = ends
            nl.add_net((p.id_to_name[sb], sp), [(p.id_to_name[b], q) for b, q in sinks],
                       p.bus[eid], eid)
        nl.validate()
        return nl


@dataclass
class Packed:
    """Parsed ``.packed`` sections: nets (edge id -> [(block id, port)]), names, widths."""

    nets: dict[str, list[tuple[str, str]]]
    id_to_name: dict[str, str]
    bus: dict[str, int]


def parse_packed(text: str) -> Packed:
    """Parse the three sections of a ``.packed`` file; raises MappingError with the line number."""
    section = None
    nets: dict[str, list[tuple[str, str]]] = {}
    names: dict[str, str] = {}
    bus: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line in ("Netlists:", "ID to Names:", "Netlist Bus:"):
            section = line
            continue
        if not line:
            continue
        if ":" not in line or section is None:
            raise MappingError(f".packed line {lineno}: expected '<id>: ...' inside a section, "
                               f"got {raw!r}")
        key, rest = (s.strip() for s in line.split(":", 1))
        if section == "Netlists:":
            ends = re.findall(r"\(\s*([^,()\s]+)\s*,\s*([^()\s]+)\s*\)", rest)
            if len(ends) < 2:
                raise MappingError(f".packed line {lineno}: net {key} needs a source and >= 1 sink")
            nets[key] = [(b, p) for b, p in ends]
        elif section == "ID to Names:":
            names[key] = rest
        else:
            try:
                bus[key] = int(rest)
            except ValueError:
                raise MappingError(f".packed line {lineno}: bus width of {key} is not an integer") from None
    missing = set(nets) ^ set(bus)
    if missing:
        raise MappingError(f".packed: nets and 'Netlist Bus' entries differ: {sorted(missing)}")
    return Packed(nets, names, bus)
