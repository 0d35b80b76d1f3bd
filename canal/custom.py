"""Custom interconnects: graph passes a design applies to the built-in routing graphs, and the
loader of the design's build function (field ``interconnect`` of a design TOML,
:mod:`garnet.params`).

A design names a function ``build(graphs, params)`` (``interconnect = "ic.py:build"``, a
path relative to the TOML file, or ``"package.module:build"``). It receives the built-in
graphs (bit width -> :class:`~canal.graph.InterconnectGraph`: switch boxes, connection
boxes and pipeline registers as the other fields describe them; its own copies, free to
edit) and the :class:`garnet.params.GarnetParams`, and returns the transformed graphs, the
same widths over the same tiles. :func:`garnet.array.build_interconnect` calls it
(:func:`apply_build`), re-times every edge from the delay model and
:func:`garnet.array.check_interconnect` refuses a result that is disconnected or has a
combinational cycle.

What the RTL can express (:mod:`canal.rtl`: the tile modules are derived from each tile's
nodes and fan-in; the top only wires tile outputs to SB_INs): inside a tile anything goes
(new switch-box edges change the tile's mux sizes and config bits); between tiles, an SB_IN
is a wire with at most one source, and that source is the node a tile exports on one of
its sides and tracks (the RMUX of that track when it has a pipeline register, else the
SB_OUT: :func:`exported`) of *any other* tile. :func:`check_wiring` checks exactly this
and names the node and the fix.

The passes (each edits ``graph`` in place and returns what it changed):

* :func:`rewire` -- feed one SB_IN from another tile's exported node (the SB_IN loses its
  old source; the old source keeps its other sinks);
* :func:`add_diagonal_links` -- **diagonal tracks**: on the given tracks, the wire leaving
  a tile by ``side`` lands in the tile diagonally ahead (one step on ``side``, one step on
  ``turn``), entering it by the opposite side, as the diagonal connections of an
  8-neighbour ("mesh-plus") CGRA (ADRES, MorphoSys; Bouwens et al., "Architecture
  enhancements for the ADRES coarse-grained reconfigurable array", HiPEAC 2008, the
  diagonal neighbours of the mesh) made on a track-based island interconnect: a route
  covers one step in x *and* y per switch-box hop. Applied to every tile, the track is
  sheared: SB_IN(x+1, y+1, WEST, t) is fed from (x, y)'s EAST output instead of
  (x, y+1)'s, the SB_INs on the array edge the shear leaves without a source read 0 and
  the outputs whose diagonal neighbour is off the array drive nothing. The tiles keep their
  modules (only the wiring of the top changes); the wire is timed as a straight one (the
  delay table's hop figure includes the wire; a diagonal wire is sqrt(2) tile pitches);
* :func:`cut_wires` -- remove the wires leaving by a side on some tracks (fewer tracks on
  one side: per-side track counts).

:func:`wires` lists every tile-to-tile wire with its (dx, dy) and :func:`diagonal_links`
the diagonal ones (the check of a routed design: ``mapper`` route paths).

Errors: :func:`load_build` raises :class:`~cgra.errors.SpecError` (one line, naming the
field and the fix; ``file:line`` for a file that does not import); :func:`apply_build`
raises :class:`~cgra.errors.SpecError` with ``file`` and ``line`` of the build function
when it raises (the line of the raise in the user's file), returns something other than
``{width: InterconnectGraph}`` for the same widths and tiles, or wires the graphs in a way
the RTL cannot express (:func:`check_wiring`).
"""
from __future__ import annotations

import hashlib
import importlib.util
import inspect
from pathlib import Path
from typing import Any, Callable, Iterable

from cgra.errors import SpecError
from cgra.load import resolve

from canal.graph import IO, InterconnectGraph, NodeKind, Side, rmux_id, sb_id

Wire = tuple[str, str]

_FORM = ("give it as path/to/ic.py:build (relative to the TOML file) or package.module:build, "
         "a function build(graphs, params) -> graphs (e.g. configs/ic_diagonal.py:build)")


# ---------------------------------------------------------------------- loading


def _split(ref: str) -> tuple[str, str]:
    mod, _, attr = ref.partition(":")
    return mod.strip(), attr.strip()


def _is_file(mod: str) -> bool:
    return mod.endswith(".py") or "/" in mod or "\\" in mod


def load_build(ref: str, where: str | None = None,
               base: str | Path | None = None) -> Callable[..., Any]:
    """The build function named by ``ref`` (``path/to/ic.py:build`` or
    ``package.module:build``; ``base``: the folder a relative file is resolved against).
    ``where`` leads the messages (``"configs/x.toml: field 'interconnect'"``). Raises
    :class:`SpecError` (one line, the fix last) when the reference is malformed, the file
    or module does not exist or import (``file:line`` of the failure), the name is missing
    or the object is not callable."""
    prefix = f"{where} = {ref!r}" if where else f"interconnect {ref!r}"
    obj, module, attr = resolve(
        ref, prefix, base, form=_FORM, noun="functions", module_prefix="_cgra_ic_",
        candidates=lambda m: [n for n, v in vars(m).items()
                              if not n.startswith("_") and inspect.isfunction(v)
                              and v.__module__ == m.__name__])
    if not callable(obj) or isinstance(obj, type):
        file = getattr(module, "__file__", None)
        raise SpecError(f"{prefix}: {attr} is a {type(obj).__name__}, not a function"
                        f"{' (in ' + file + ')' if file else ''}; name a function "
                        f"build(graphs, params) returning the graphs")
    return obj


def source_hash(ref: str, base: str | Path | None = None) -> str:
    """sha256 of the source of the build function's file (a file reference) or module (its
    ``.py`` file): what the build key of the graphs hashes, so an edit rebuilds them. Only
    that file is hashed (a helper module it imports is not). Raises :class:`SpecError` when
    the file or module cannot be found."""
    mod, _ = _split(ref)
    if _is_file(mod):
        path = Path(mod).expanduser()
        if not path.is_absolute():
            path = Path(base or ".") / path
        if not path.is_file():
            raise SpecError(f"interconnect {ref!r}: file {path} does not exist; give the path "
                            f"of an existing Python file")
        return hashlib.sha256(path.read_bytes()).hexdigest()
    try:
        spec = importlib.util.find_spec(mod)
    except (ImportError, ValueError) as e:
        spec = None
        why = f" ({type(e).__name__}: {e})"
    else:
        why = ""
    if spec is None or not spec.origin or not Path(spec.origin).is_file():
        raise SpecError(f"interconnect {ref!r}: module {mod} not found{why}; check the module "
                        f"path (or give path/to/ic.py:build)")
    return hashlib.sha256(Path(spec.origin).read_bytes()).hexdigest()


def _def_site(fn: Callable[..., Any]) -> tuple[str | None, int | None]:
    try:
        file = inspect.getsourcefile(fn)
        line = inspect.getsourcelines(fn)[1]
    except (TypeError, OSError):
        return None, None
    return file, line


def _raise_site(e: BaseException, file: str | None) -> int | None:
    """The last line of ``file`` in the traceback of ``e`` (where the build function, or a
    helper in its file, raised)."""
    line = None
    tb = e.__traceback__
    while tb is not None:
        if file is not None and Path(tb.tb_frame.f_code.co_filename) == Path(file):
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def apply_build(fn: Callable[..., Any], graphs: dict[int, InterconnectGraph], params: Any,
                ref: str) -> dict[int, InterconnectGraph]:
    """``fn(copies of graphs, params)``, checked: the result must be a dict with the same
    widths (bits) as ``graphs``, each value an :class:`InterconnectGraph` of that width over
    the same tiles, wired as the RTL can express (:func:`check_wiring`). Raises
    :class:`SpecError` with ``file`` / ``line`` (the raise in the build function's file, else
    its ``def`` line) naming ``ref`` and the fix."""
    file, def_line = _def_site(fn)
    name = getattr(fn, "__qualname__", repr(fn))
    copies = {w: g.copy() for w, g in graphs.items()}
    try:
        out = fn(copies, params)
    except Exception as e:  # noqa: BLE001 - any failure of the user's function is one line
        line = _raise_site(e, file)
        text = str(e).strip().splitlines()
        raise SpecError(f"{type(e).__name__}: {text[0] if text else ''} (interconnect "
                        f"{ref!r}: {name}(graphs, params) raised); fix the build function",
                        file=file, line=line or def_line) from None

    def bad(what: str) -> SpecError:
        return SpecError(f"interconnect {ref!r}: {name}(graphs, params) returned {what}; "
                         f"return the dict width -> InterconnectGraph it received "
                         f"(widths {sorted(graphs)}), transformed", file=file, line=def_line)

    if not isinstance(out, dict):
        raise bad(f"a {type(out).__name__}, not a dict")
    if sorted(out, key=repr) != sorted(graphs, key=repr):
        raise bad(f"widths {sorted(out, key=repr)}")
    for w, g in out.items():
        if not isinstance(g, InterconnectGraph):
            raise bad(f"a {type(g).__name__} for width {w}")
        if g.width != w:
            raise bad(f"a {g.width}-bit graph for width {w}")
        if g.tiles != graphs[w].tiles:
            raise bad(f"a {w}-bit graph over other tiles or cores")
    for w in sorted(out, reverse=True):
        try:
            check_wiring(out[w])
        except SpecError as e:
            raise SpecError(f"interconnect {ref!r}: {e}", file=file, line=def_line) from None
    return {w: out[w] for w in graphs}


# ---------------------------------------------------------------------- the RTL's rules


def exported(graph: InterconnectGraph, x: int, y: int, side: Side | str, track: int) -> str:
    """Id of the node tile (x, y) exports on ``side`` / ``track`` (the source an SB_IN of
    another tile may read): the RMUX of that track when it has a pipeline register, else
    the SB_OUT. Raises :class:`SpecError` when the tile has no such output."""
    side = _side(side)
    w = graph.width
    rm = rmux_id(w, x, y, side, track)
    if rm in graph.nodes:
        return rm
    out = sb_id(w, x, y, side, track, IO.SB_OUT)
    if out not in graph.nodes:
        raise SpecError(f"tile ({x}, {y}) has no {side.name} output on track {track} in the "
                        f"{w}-bit graph; use a tile of the array and a track < the track count")
    return out


def check_wiring(graph: InterconnectGraph) -> None:
    """Refuse a graph the RTL cannot express (module docstring): an edge whose source is
    not a node of the graph, an SB_IN with more than one source or fed from its own tile or
    by a node that is not an exported node (:func:`exported`) of its tile, an edge between
    tiles into anything but an SB_IN, a register without exactly one source, a core output
    with a source. Raises :class:`SpecError` (one line) naming the node and the fix."""
    nodes, fanin = graph.nodes, graph.fanin
    for nid, srcs in fanin.items():
        if not srcs:
            continue
        n = nodes.get(nid)
        if n is None:
            raise SpecError(f"the {graph.width}-bit graph has a fan-in list for {nid}, which is "
                            f"not a node; add the node or remove the list")
        for s in srcs:
            if s not in nodes:
                raise SpecError(f"edge {s} -> {nid}: {s} is not a node of the {graph.width}-bit "
                                f"graph; feed it from an existing node")
        if n.kind is NodeKind.SB and n.io is IO.SB_IN:
            if len(srcs) > 1:
                raise SpecError(f"{nid} has {len(srcs)} sources {srcs}; an SB_IN is a wire "
                                f"with at most one source (use canal.custom.rewire to replace "
                                f"it)")
            s = nodes[srcs[0]]
            if (s.x, s.y) == (n.x, n.y):
                raise SpecError(f"{nid} is fed from its own tile ({s.id}); an SB_IN is fed by "
                                f"another tile's output")
            ok = s.side is not None and s.track is not None and \
                (s.kind is NodeKind.RMUX or (s.kind is NodeKind.SB and s.io is IO.SB_OUT)) \
                and exported(graph, s.x, s.y, s.side, s.track) == s.id
            if not ok:
                raise SpecError(f"edge {s.id} -> {nid}: an SB_IN reads the node a tile exports "
                                f"on a side and track (its RMUX when it has a pipeline "
                                f"register, else its SB_OUT), not {s.id}; use "
                                f"canal.custom.exported(graph, x, y, side, track)")
            continue
        for s in srcs:
            sn = nodes[s]
            if (sn.x, sn.y) != (n.x, n.y):
                raise SpecError(f"edge {s} -> {nid} crosses tiles but does not end at an SB_IN; "
                                f"route tile-to-tile wires into SB_INs")
        if n.kind is NodeKind.REG and len(srcs) != 1:
            raise SpecError(f"pipeline register {nid} has {len(srcs)} sources; a register has "
                            f"exactly one")
        if n.kind is NodeKind.PORT and n.direction == "out":
            raise SpecError(f"core output {nid} has sources {srcs}; a core output is driven "
                            f"by its core only")
    for nid, n in nodes.items():
        if n.kind is NodeKind.REG and not fanin.get(nid):
            raise SpecError(f"pipeline register {nid} has no source; a register has exactly "
                            f"one (its SB_OUT)")


# ---------------------------------------------------------------------- passes


def _side(side: Side | str) -> Side:
    if isinstance(side, Side):
        return side
    try:
        return Side[str(side).upper()]
    except KeyError:
        raise SpecError(f"side {side!r}: use one of NORTH, SOUTH, EAST, WEST") from None


def rewire(graph: InterconnectGraph, src: str, dst: str) -> Wire:
    """Feed SB_IN ``dst`` from ``src`` (a node another tile exports: :func:`exported`)
    instead of its current source; the old edge and its delay are removed, the new edge
    has delay 0 ps (a wire; :func:`garnet.array.build_interconnect` re-times every edge).
    Returns ``(src, dst)``. Raises :class:`SpecError` when ``dst`` is not an SB_IN or
    ``src`` is not an exported node of another tile."""
    n = graph.node(dst)
    s = graph.node(src)
    if not (n.kind is NodeKind.SB and n.io is IO.SB_IN):
        raise SpecError(f"rewire: {dst} is not an SB_IN; tile-to-tile wires end at SB_INs")
    if (s.x, s.y) == (n.x, n.y) or s.side is None or s.track is None \
            or exported(graph, s.x, s.y, s.side, s.track) != src:
        raise SpecError(f"rewire: {src} -> {dst}: the source must be the node another tile "
                        f"exports on a side and track (canal.custom.exported)")
    for old in graph.fanin[dst]:
        graph.delay.pop((old, dst), None)
    graph.fanin[dst] = [src]            # a new list: never edit a list another graph shares
    graph.delay[(src, dst)] = 0.0
    return src, dst


def cut_wires(graph: InterconnectGraph, side: Side | str, tracks: Iterable[int]
              ) -> list[Wire]:
    """Remove every wire leaving a tile by ``side`` on ``tracks`` (the SB_INs they fed read
    0; the routers never use them): fewer tracks on one side of the array. Returns the
    removed ``(src, dst)`` edges."""
    side = _side(side)
    tracks = set(tracks)
    removed: list[Wire] = []
    for dst, srcs in list(graph.fanin.items()):
        n = graph.nodes[dst]
        if n.kind is not NodeKind.SB or n.io is not IO.SB_IN or not srcs:
            continue
        s = graph.nodes[srcs[0]]
        if s.side is side and s.track in tracks and (s.x, s.y) != (n.x, n.y):
            graph.delay.pop((srcs[0], dst), None)
            graph.fanin[dst] = []
            removed.append((srcs[0], dst))
    return removed


def add_diagonal_links(graph: InterconnectGraph, side: Side | str, turn: Side | str,
                       tracks: Iterable[int],
                       tiles: Iterable[tuple[int, int]] | None = None) -> list[Wire]:
    """Diagonal tracks (module docstring): on each of ``tracks``, the wire leaving tile
    (x, y) by ``side`` enters tile (x, y) + step(side) + step(turn) by the opposite side
    (``side`` = EAST, ``turn`` = SOUTH: SB_OUT(x, y, EAST, t) -> SB_IN(x+1, y+1, WEST, t)).
    ``turn`` is perpendicular to ``side``. ``tiles``: the destination tiles whose SB_IN is
    rewired (default: every tile; an SB_IN whose diagonal source is off the array loses its
    source). Returns the diagonal ``(src, dst)`` edges added, in node order. Raises
    :class:`SpecError` for a ``turn`` parallel to ``side`` or a track the graph lacks."""
    side, turn = _side(side), _side(turn)
    if turn in (side, side.opposite):
        raise SpecError(f"add_diagonal_links: turn {turn.name} is parallel to side "
                        f"{side.name}; turn NORTH/SOUTH for EAST/WEST wires and EAST/WEST for "
                        f"NORTH/SOUTH wires")
    tracks = sorted(set(tracks))
    w = graph.width
    dx, dy = side.step()
    tx, ty = turn.step()
    want = None if tiles is None else set(tiles)
    entry = side.opposite
    # every existing (x, y, entry, t) SB_IN, in node order
    targets = [n for n in graph.nodes.values()
               if n.kind is NodeKind.SB and n.io is IO.SB_IN and n.side is entry
               and n.track in tracks and (want is None or (n.x, n.y) in want)]
    have = {n.track for n in graph.nodes.values() if n.kind is NodeKind.SB}
    missing = [t for t in tracks if t not in have]
    if missing:
        raise SpecError(f"add_diagonal_links: tracks {missing} are not in the {w}-bit graph "
                        f"(tracks {sorted(have)})")
    added: list[Wire] = []
    plan: list[tuple[str, str | None]] = []
    for n in targets:
        sx, sy = n.x - dx - tx, n.y - dy - ty
        src = None
        if (sx, sy) in graph.tiles:
            rm = rmux_id(w, sx, sy, side, n.track)
            out = sb_id(w, sx, sy, side, n.track, IO.SB_OUT)
            src = rm if rm in graph.nodes else out if out in graph.nodes else None
        plan.append((n.id, src))
    for dst, src in plan:               # decided on the original wiring, then applied
        for old in graph.fanin[dst]:
            graph.delay.pop((old, dst), None)
        if src is None:
            graph.fanin[dst] = []
        else:
            graph.fanin[dst] = [src]
            graph.delay[(src, dst)] = 0.0
            added.append((src, dst))
    notes = list(graph.params.get("diagonal_tracks", []))
    notes.append({"side": side.name, "turn": turn.name, "tracks": tracks,
                  "links": len(added)})
    graph.params = {**graph.params, "diagonal_tracks": notes}
    return added


def wires(graph: InterconnectGraph) -> list[tuple[str, str, tuple[int, int]]]:
    """Every tile-to-tile wire ``(src, dst SB_IN, (dx, dy))`` of ``graph`` (dx, dy: the
    destination tile minus the source tile, in tiles; y grows southwards), in node order."""
    out = []
    nodes = graph.nodes
    for dst, srcs in graph.fanin.items():
        n = nodes[dst]
        if n.kind is NodeKind.SB and n.io is IO.SB_IN:
            for s in srcs:
                sn = nodes[s]
                out.append((s, dst, (n.x - sn.x, n.y - sn.y)))
    return out


def diagonal_links(graph: InterconnectGraph) -> set[Wire]:
    """The ``(src, dst)`` wires of ``graph`` that step in x and in y at once."""
    return {(s, d) for s, d, (dx, dy) in wires(graph) if dx and dy}


__all__ = ["load_build", "source_hash", "apply_build", "exported", "check_wiring", "rewire",
           "cut_wires", "add_diagonal_links", "wires", "diagonal_links"]
