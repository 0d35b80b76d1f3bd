"""The array top in column blocks (canal.rtl.column_verilog): the same netlist as the flat
top, one level deeper, with alike blocks sharing one module (issue 41, item 8)."""
from __future__ import annotations

import re

import pytest

from canal.rtl import ArrayNetlist, array_verilog, column_verilog
from cgra.errors import SpecError

SHARED = ("CLK", "RESET", "clk_en", "config_addr", "config_data", "config_write",
          "config_read")
PORTS = [("CLK", "in", 1), ("RESET", "in", 1), ("clk_en", "in", 1), ("flush", "in", 1),
         ("config_addr", "in", 32), ("config_data", "in", 32), ("config_write", "in", 1),
         ("config_read", "in", 1), ("tile_id", "in", 16), ("w_in", "in", 16),
         ("n_in", "in", 16), ("din", "in", 16), ("e_out", "out", 16), ("s_out", "out", 16),
         ("dout", "out", 16), ("read_data", "out", 32)]
TILE_PORTS = {m: [{"name": n, "direction": d, "width": w} for n, d, w in PORTS]
              for m in ("IOT", "PET")}


def netlist(width: int, height: int = 2) -> tuple[ArrayNetlist, dict]:
    """A width x height array: IO tiles (module IOT) in row 0, PE tiles (PET) below; each
    tile reads its west neighbour's ``e_out`` and its north neighbour's ``s_out`` (0 at the
    edge), tile (0, 0) the top port ``din_X00_Y00``; tile (width-1, 0) drives the top port
    ``dout``; rows below 0 see ``flush`` through one spine register per column."""
    ports = [("clk_en", "in", 1), ("flush", "in", 1), ("config_addr", "in", 32),
             ("config_data", "in", 32), ("config_write", "in", 1), ("config_read", "in", 1),
             ("read_data", "out", 32), ("din_X00_Y00", "in", 16),
             (f"dout_X{width - 1:02X}_Y00", "out", 16)]
    tiles = tuple((x, y) for x in range(width) for y in range(height))
    regs = tuple((f"flush_X{x:02X}_S1", ("port", "flush")) for x in range(width))
    inputs, outputs = {}, {}
    for x, y in tiles:
        c = [(n, ("port", n)) for n in SHARED]
        c.append(("flush", ("port", "flush") if y == 0 else ("flush", f"flush_X{x:02X}_S1")))
        c.append(("tile_id", ("const", x << 8 | y, 16)))
        c.append(("w_in", ("out", x - 1, y, "e_out", 16) if x else ("const", 0, 16)))
        c.append(("n_in", ("out", x, y - 1, "s_out", 16) if y else ("const", 0, 16)))
        c.append(("din", ("port", "din_X00_Y00") if (x, y) == (0, 0) else ("const", 0, 16)))
        inputs[(x, y)] = tuple(c)
        outputs[(x, y)] = ((("dout", f"dout_X{x:02X}_Y00"),) if (x, y) == (width - 1, 0)
                           else ())
    modules = {(x, y): "IOT" if y == 0 else "PET" for x, y in tiles}
    return ArrayNetlist(tuple(ports), tiles, regs, inputs, outputs), modules


_MODULE = re.compile(r"^module (\w+)\(.*?^endmodule", re.S | re.M)
_INST = re.compile(r"^  (\w+) (\w+) \(\n(.*?)\n  \);", re.S | re.M)
_CONN = re.compile(r"\.(\w+)\s+\(([^)]*)\)")
_ASSIGN = re.compile(r"^  assign (\w+) = ([^;]*);", re.M)


def parse(text: str) -> tuple[dict, dict]:
    """(instances {name: (module, {port: expression})}, assigns {lhs: rhs}) of a module."""
    insts = {inst: (mod, dict(_CONN.findall(body))) for mod, inst, body in _INST.findall(text)}
    return insts, dict(_ASSIGN.findall(text))


def flatten(texts: dict[str, str], top: str, k: int) -> dict:
    """Every tile input of the blocked top traced to its source in the flat terms of
    :class:`ArrayNetlist`: {(x, y): {port: canonical signal}}."""
    mods = {m: parse(t) for m, t in texts.items()}
    top_insts, top_assigns = mods[top]

    def block_output(b: int, port: str):
        mod = top_insts[f"Col_{b:02X}"][0]
        insts, assigns = mods[mod]
        inner = assigns.get(port)
        for inst, (_, conns) in insts.items():
            for pn, v in conns.items():
                if v == port or v == inner:
                    dx, y = (int(g, 16) for g in re.match(r"Tile_X(\w\w)_Y(\w\w)", inst).groups())
                    return ("out", b * k + dx, y, pn)
        raise AssertionError(f"block {b} output {port} has no driver")

    def top_value(expr: str):
        if m := re.fullmatch(r"(\d+)'h([0-9A-F]+)", expr):
            return ("const", int(m.group(2), 16), int(m.group(1)))
        if m := re.fullmatch(r"_Col_(\w\w)_(\w+)", expr):
            return block_output(int(m.group(1), 16), m.group(2))
        if expr.startswith("flush_X"):
            return ("flush", expr)
        return ("port", expr)

    out: dict = {}
    for cinst, (mod, cconns) in top_insts.items():
        b = int(cinst[4:], 16)
        insts, _ = mods[mod]
        for inst, (tmod, conns) in insts.items():
            dx, y = (int(g, 16) for g in re.match(r"Tile_X(\w\w)_Y(\w\w)", inst).groups())
            got = {}
            for pn, v in conns.items():
                if not dict((n, d) for n, d, _ in PORTS)[pn] == "in":
                    continue
                if m := re.fullmatch(r"_Tile_X(\w\w)_Y(\w\w)_(\w+)", v):
                    got[pn] = ("out", b * k + int(m.group(1), 16), int(m.group(2), 16),
                               m.group(3))
                else:
                    got[pn] = top_value(cconns[v])
            out[(b * k + dx, y)] = (tmod, got)
    return out


def canonical(s: tuple) -> tuple:
    return s[:4] if s[0] == "out" else s


@pytest.mark.parametrize("width,k,n_modules", [(4, 2, 1), (4, 1, 1), (5, 2, 2), (6, 4, 2)])
def test_blocks_are_the_flat_netlist(width, k, n_modules):
    net, modules = netlist(width)
    texts, blocks = column_verilog(net, "Top", modules, TILE_PORTS, k)
    assert list(texts)[-1] == "Top" and len(blocks) == n_modules
    assert all("/*verilator hier_block*/" in texts[b] for b in blocks)
    got = flatten(texts, "Top", k)
    assert set(got) == set(net.tiles)
    for xy in net.tiles:
        mod, conns = got[xy]
        assert mod == modules[xy]
        assert conns == {pn: canonical(s) for pn, s in net.inputs[xy]}, xy
    # the external output and read_data (the OR of every tile, through the blocks)
    insts, assigns = parse(texts["Top"])
    dout = f"dout_X{width - 1:02X}_Y00"
    assert re.fullmatch(r"_Col_\w\w_dout_X\w\w_Y00", assigns[dout])
    read = set()
    for cinst, (mod, _) in insts.items():
        b = int(cinst[4:], 16)
        assert f"_Col_{b:02X}_read_data" in assigns["read_data"]
        read |= {(b * k + int(x, 16), int(y, 16))
                 for x, y in re.findall(r"_Tile_X(\w\w)_Y(\w\w)_read_data",
                                        parse(texts[mod])[1]["read_data"])}
    assert read == set(net.tiles)


def test_ports_and_flush_spine_as_the_flat_top():
    net, modules = netlist(4)
    flat = array_verilog(net, "Top", modules, TILE_PORTS)
    texts, _ = column_verilog(net, "Top", modules, TILE_PORTS, 2)

    def header(t: str) -> str:
        return t[t.index("module Top("):t.index(");")]

    def spine(t: str) -> list[str]:
        return [ln for ln in t.splitlines() if "flush_X" in ln and "Tile" not in ln
                and "Col" not in ln and not ln.lstrip().startswith(".")]

    assert header(texts["Top"]) == header(flat)
    assert spine(texts["Top"]) == spine(flat) and len(spine(flat)) == 16   # 4 x (reg, reset, next, initial)


def test_bad_inputs_are_refused():
    net, modules = netlist(4)
    with pytest.raises(SpecError, match="columns=0 per block"):
        column_verilog(net, "Top", modules, TILE_PORTS, 0)
    undriven = dict(net.inputs)
    undriven[(1, 1)] = tuple(c for c in net.inputs[(1, 1)] if c[0] != "n_in")
    with pytest.raises(SpecError, match="input n_in of tile Tile_X01_Y01 .PET. is not driven"):
        column_verilog(ArrayNetlist(net.ports, net.tiles, net.flush_regs, undriven,
                                    net.outputs), "Top", modules, TILE_PORTS, 2)
    wrong = dict(net.inputs)
    wrong[(2, 0)] = tuple((pn, ("const", 0, 8)) if pn == "din" else (pn, s)
                          for pn, s in net.inputs[(2, 0)])
    with pytest.raises(SpecError, match="input din of tile Tile_X02_Y00 .IOT. is 16 bits but "
                                        "is driven by 8 bits"):
        column_verilog(ArrayNetlist(net.ports, net.tiles, net.flush_regs, wrong,
                                    net.outputs), "Top", modules, TILE_PORTS, 2)
