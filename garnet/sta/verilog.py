"""Verilog text helpers for yosys 0.23 (Debian's): the per-module split of a design's
``rtl/`` and the rewrites CIRCT's output needs before yosys reads it.

yosys 0.23 does not read the multi-dimensional packed arrays CIRCT writes
(``wire [1:0][15:0] _GEN = {{a}, {b}}; ... _GEN[s]``): :func:`flatten_packed` rewrites
them as flat vectors (``wire [31:0] _GEN``, ``_GEN[(s)*16 +: 16]``), bit for bit the same
(a packed array is laid out element N-1 first, like a concatenation); nor procedural
``automatic`` declarations (:func:`hoist_automatic`). Used by the area proxy
(:mod:`dse.area`) and the timing measurement (:mod:`garnet.sta.measure`).
"""
from __future__ import annotations

import re
from pathlib import Path

from cgra.errors import CollateralError

_DECL = re.compile(r"\b(wire|reg|logic)\s*\[(\d+):(\d+)\]\s*\[(\d+):(\d+)\]\s*([A-Za-z_][\w$]*)")


def _index_end(text: str, start: int) -> int:
    """Index just past the ``]`` matching the ``[`` at ``start``."""
    depth = 0
    for i in range(start, len(text)):
        c = text[i]
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return i + 1
    raise CollateralError(f"unbalanced [ at offset {start} in a Verilog module")


_AUTO = re.compile(r"^(\s*)automatic\s+logic\s*((?:\[[^\]]*\]\s*)*)([A-Za-z_][\w$]*)\s*(=)?\s*;?",
                   re.M)


def hoist_automatic(text: str) -> str:
    """Move ``automatic logic [w] x = e;`` declarations of procedural blocks (which yosys
    0.23 does not parse) to module level: ``reg [w] x;`` after the port list, ``x = e;`` in
    place; a 2-D packed one (``[n][w]``, CIRCT writes them for the dataflow PE's muxes of
    vectors) keeps both ranges for :func:`flatten_packed`."""
    decls: list[str] = []

    def sub(m: re.Match) -> str:
        decls.append(f"  reg {(m[2] or '').replace(' ', '')} {m[3]};")
        return f"{m[1]}{m[3]} =" if m[4] else m[1]

    text = _AUTO.sub(sub, text)
    if not decls:
        return text
    head = text.index(");", text.index("module")) + 2
    return text[:head] + "\n" + "\n".join(decls) + text[head:]


def flatten_packed(text: str) -> str:
    """Rewrite 2-D packed arrays (``wire [H:L][h:l] x``) as flat vectors and their element
    selects ``x[i]`` as part selects (module docstring). Element selects nested in an index
    (``y[x[s][0]]``: CIRCT writes a bit of a mux of vectors that way) are rewritten too, at
    every depth: yosys 0.23 rejects a select of a 2-D name inside an index with
    ``Unsupported expression on dynamic range select``."""
    widths: dict[str, int] = {}

    def decl(m: re.Match) -> str:
        n = abs(int(m[2]) - int(m[3])) + 1
        w = abs(int(m[4]) - int(m[5])) + 1
        widths[m[6]] = w
        return f"{m[1]} [{n * w - 1}:0] {m[6]}"

    text = _DECL.sub(decl, text)
    if not widths:
        return text
    use = re.compile(r"\b(" + "|".join(map(re.escape, sorted(widths, key=len, reverse=True)))
                     + r")\s*\[")
    return _flatten_uses(text, use, widths)


def _depth0(expr: str) -> str:
    """``expr`` without the contents of its bracketed sub-expressions (``a[b:c] ? d`` ->
    ``a[] ? d``): what an index expression is at its own level."""
    out: list[str] = []
    depth = 0
    for c in expr:
        if c == "]":
            depth -= 1
        if depth == 0:
            out.append(c)
        if c == "[":
            depth += 1
    return "".join(out)


def _flatten_uses(text: str, use: re.Pattern, widths: dict[str, int]) -> str:
    """The element selects of the 2-D names ``widths`` (name -> element width, bits) in
    ``text`` as part selects of the flat vectors, index expressions rewritten first."""
    out: list[str] = []
    pos = 0
    while True:
        m = use.search(text, pos)
        if m is None:
            break
        # a declaration ('wire [N:0] x' never matches: the name precedes no '[' there)
        name, br = m[1], m.end() - 1
        end = _index_end(text, br)
        inner = text[br + 1:end - 1]
        out.append(text[pos:m.start()])
        w = widths[name]
        top = _depth0(inner)
        if ":" in top and "+:" not in top and "?" not in top:
            out.append(text[m.start():end])       # already a bit range of the flat vector
        else:
            base = f"({_flatten_uses(inner, use, widths)})*{w}"
            if end < len(text) and text[end] == "[":      # x[i][b] / x[i][h:l]
                end2 = _index_end(text, end)
                sub = text[end + 1:end2 - 1]
                rng = re.fullmatch(r"\s*(\d+)\s*:\s*(\d+)\s*", sub)
                if rng:
                    hi, lo = int(rng[1]), int(rng[2])
                    out.append(f"{name}[{base} + {lo} +: {hi - lo + 1}]")
                else:
                    out.append(f"{name}[{base} + ({_flatten_uses(sub, use, widths)})]")
                end = end2
            else:
                out.append(f"{name}[{base} +: {w}]")
        pos = end
    out.append(text[pos:])
    return "".join(out)


_MODULE = re.compile(r"^\s*module\s+([A-Za-z_][\w$]*)", re.M)
_INST = re.compile(r"^\s*([A-Za-z_][\w$]*)\s+(?:#\s*\(.*?\)\s*)?[A-Za-z_][\w$]*\s*\(", re.M | re.S)


def modules_of(text: str) -> dict[str, str]:
    """module name -> Verilog text of every module in the Verilog ``text``."""
    mods: dict[str, str] = {}
    starts = [m for m in _MODULE.finditer(text)]
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        mods[m[1]] = text[m.start():end]
    return mods


def modules(rtl: Path) -> dict[str, str]:
    """module name -> Verilog text of every module in ``rtl/`` (one file may hold several)."""
    mods: dict[str, str] = {}
    for f in sorted(rtl.glob("*.v")):
        mods.update(modules_of(f.read_text()))
    return mods


def instances(text: str, mods: dict[str, str]) -> list[str]:
    """The module of every instance in the Verilog ``text`` (one module's body), in order and
    with repeats, keeping only modules of ``mods``."""
    return [i[1] for i in _INST.finditer(text) if i[1] in mods]


def closure(top: str, mods: dict[str, str], stop: tuple[str, ...] = ()) -> list[str]:
    """The sorted module names ``top`` instantiates, transitively, ``top`` included; a
    module of ``stop`` is included but not descended into (a black box)."""
    seen: list[str] = []
    todo = [top]
    while todo:
        m = todo.pop()
        if m in seen or m not in mods:
            continue
        seen.append(m)
        if m in stop:
            continue
        todo.extend(i for i in instances(mods[m], mods) if i != m)
    return sorted(seen)


__all__ = ["flatten_packed", "hoist_automatic", "modules", "modules_of", "instances",
           "closure"]
